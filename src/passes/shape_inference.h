// Shape inference pass: gives every value of a graph (and of its If/Loop/Scan bodies) its static
// type — dtype and, where derivable, a symbolic shape — from input types, attributes and constant
// inputs. First pass of the tier-0 pipeline; later passes, the partitioner and the Plan read the
// types it leaves. Requires a topologically sorted graph (the loader guarantees it).
//
// Symbolic dims keep their names ("N", "S"). Dims the pass derives from several symbols are
// written as expressions: "N*S" (product, factors sorted, constant factor first: "2*N"),
// "min(S,512)" (a Slice end read from a shape, clamped to a constant extent) and, for conv and
// pool windows, "(H-2)" and "((H-1)//2+1)" (floor division, canonical spelling so that the two
// paths of a residual block agree). Equal strings always denote equal run-time values. Dims that depend on data (NonZero, Unique, a Reshape
// target that is computed at run time) are Dim::unknown(), never a guess.
#pragma once

#include "ir/graph.h"
#include "passes/pipeline.h"
#include "support/status.h"

namespace tierjit::passes {

/// Infers ValueTypes for every node output of `graph` in topological order, and recursively for
/// subgraph bodies (their inputs are declared by the model; their captures take the types of the
/// outer values they read). Where the model declared a type for a value (value_info, graph
/// outputs) the result keeps, per field, the more precise of declared and inferred: a constant
/// dim beats a symbol, a symbol beats unknown; a known rank beats an unknown one.
///
/// Shape-tensor arithmetic (Shape -> Gather/Slice/Concat/Unsqueeze/Squeeze/Cast/Mul/... ->
/// Reshape/Expand/ConstantOfShape/Tile/Slice inputs) is tracked inside the pass, so a Reshape
/// target built from Shape ops still gives a symbolic output shape.
///
/// Follows the ONNX operator specs of opsets 1..17 (attribute-vs-input forms per opset).
/// Errors (kInvalidModel), naming the node: dtype contradictions between inputs ("node 'x' (Add):
/// input 1 has dtype int64, expected float32 like input 0") or between the declared and the
/// inferred type of an output; shapes that can never broadcast or multiply ("[2, 3] and [4, 3]");
/// ranks or axes out of range. Never fails on a dim it cannot decide: that dim becomes unknown.
Status infer_shapes(ir::Graph& graph, const PassContext& ctx);

}  // namespace tierjit::passes
