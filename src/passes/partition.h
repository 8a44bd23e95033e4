// Partitioning pass: splits the top-level graph into Regions (region.h), the units later tiers
// profile, compile, cache and dispatch. Runs after the tier-0 pipeline (it reads the inferred
// shapes; folding/CSE/DCE have removed what need not run). Does not change the graph. The ops
// that have (or will have) a lowering, and how each fuses, are declared once: fusion_class().
#pragma once

#include "ir/graph.h"
#include "passes/region.h"
#include "support/status.h"

namespace tierjit::passes {

/// How an op takes part in fusion — the single table kir/ lowering follows (partition.cc).
enum class FusionClass {
  kElementwiseUnary,   ///< one tensor in, same shape out (Relu, Erf, Cast, ...)
  kElementwiseBinary,  ///< several inputs, numpy broadcasting (Add, Mul, Where, Clip, ...)
  kAnchor,             ///< MatMul, Gemm, Conv: heavy op taking an elementwise epilogue
  kReduction,          ///< ReduceSum/Mean/Max/Min, Softmax, LogSoftmax, LayerNormalization
  kShapeSource,        ///< Shape, Size: read only a tensor's shape
  kRecurrent,          ///< LSTM, GRU: a one-node kRecurrent region (float32 outputs)
  kNone,               ///< no lowering: the node stays on tier 0 (kOpaque region)
};
FusionClass fusion_class(ir::OpKind op);

/// True if `op` may take part in plan-time shape arithmetic when all its inputs are constants or
/// shape-derived values (Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, Cast, Add, Mul, ...).
bool is_shape_arithmetic_op(ir::OpKind op);

struct PartitionOptions {
  bool fuse = true;            ///< false: one region per node (debugging, differential tests)
  size_t max_region_nodes = 64;  ///< a region never grows past this many nodes (compile time)
};

/// Partitions `graph` (its top level; nodes holding subgraphs are kOpaque regions of their own).
/// Rules, applied in this order (each merge keeps the region graph acyclic, hence every region
/// convex):
///  1. kShapeOnly: Shape/Size, and shape-arithmetic ops whose inputs are all constants or
///     shape-derived with at least one shape-derived, whose outputs have rank <= 1 (at most 64
///     elements when the dim is known); connected ones form one region.
///  2. An anchor (MatMul/Gemm/Conv, float output) takes the Add right after it that adds a
///     constant (bias) without changing the anchor's output shape.
///  3. A reduction takes its prologue: going backwards from its inputs, elementwise nodes not yet
///     placed whose every user is already in the region (scale Div, mask Add, residual Add).
///  4. Anchor and reduction regions take their epilogue: in topological order, an elementwise
///     node reading the region whose output shape equals the anchor's output shape (activation,
///     Clip, residual Add, a GELU chain).
///  4b. A Conv region (group 1) whose one output feeds only a MaxPool or AveragePool takes that
///     pool as its last node (Region::pool), when the pool is 2-D with a fixed window of at most
///     64 taps, no dilation, explicit or VALID padding, ceil_mode 0 and no Indices output: the
///     compiled tiers pool the conv's tile before it reaches memory (kir/lower/lower_conv_pool.cc).
///  5. Remaining elementwise nodes join an elementwise region of one of their producers; other
///     producer elementwise regions are merged in when possible.
///  6. An LSTM or GRU with float32 outputs is a one-node kRecurrent region.
///  7. Everything else (including string-typed elementwise ops) is a one-node kOpaque region.
/// Errors: kInvalidModel if the graph has a cycle (never for a graph the loader accepted).
Expected<Partition> partition_graph(const ir::Graph& graph, const PartitionOptions& options);

}  // namespace tierjit::passes
