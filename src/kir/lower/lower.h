// Lowering: a graph Region (passes/region.h) -> a kir::Function, at one of the three
// specialization levels of DESIGN.md "Specialization" (exact / shape class / generic), followed by
// the loop transforms of the requested tier. The runtime compiles the result with codegen/ and
// calls it through the one kernel ABI described below. A region with an op that has no lowering
// returns kUnsupported, and the runtime keeps that region on tier 0.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kir/kir.h"
#include "passes/region.h"
#include "support/status.h"
#include "tierjit/tensor.h"

namespace tierjit::kir {

/// How much of a call's shapes the code may assume (DESIGN.md "Specialization").
enum class ShapeLevel : uint8_t {
  kExact,       ///< every dim a constant of the code
  kShapeClass,  ///< dynamic dims read at run time, known to lie in their bucket (bounds[])
  kGeneric,     ///< dynamic dims read at run time; one version serves every size, 0 and 1 included
};
const char* shape_level_name(ShapeLevel level);

/// What the code may assume about one region input or output tensor.
struct TensorSpec {
  DType dtype = DType::kUndefined;
  /// Per dim: the size when the code may use it as a constant (exact level, or a dim the graph
  /// fixes), else -1: read from the kernel's dims[] at run time.
  std::vector<int64_t> dims;
  /// Per dim: with kShapeClass and dims[d] == -1, the bucket (upper bound, >= 2) the size lies in
  /// (its class is [bucket/2 + 1, bucket]); else -1. Sizes 0 and 1 are always given as constants.
  std::vector<int64_t> bounds;
};

struct LowerOptions {
  ShapeLevel level = ShapeLevel::kGeneric;
  std::vector<TensorSpec> inputs;   ///< one per Region::inputs, same order
  std::vector<TensorSpec> outputs;  ///< one per Region::outputs, same order
  /// Tier: 1 = plain loop nests with vectorize hints (cheap to compile); 2 = tiling, explicit
  /// vectorization to vector_lanes, unrolling, invariant hoisting; 3 = as 2 with `tuning`.
  int tier = 2;
  int vector_lanes = 8;  ///< float32 lanes of the host vector registers (8 AVX2, 16 AVX-512)
  int threads = 1;       ///< intra-op threads: outer loops go parallel when > 1 and work is large
  /// Tier-3 knobs chosen by kernel selection, e.g. {"mr", 6}, {"nr", 32}, {"kc", 256}. A knob the
  /// lowering does not know is an error (kInvalidArgument); missing knobs take defaults.
  std::map<std::string, int64_t> tuning;
  /// The caller honours LoweredRegion::input_layouts: a constant input (a graph initializer, the
  /// same data for the life of the code) may be asked for in a prepared layout, computed once per
  /// compiled version with prepare_input() (e.g. Gemm's transposed weights as [K, N], so that
  /// small batches read them in place instead of packing 1 MB per call).
  bool prepare_constant_inputs = false;
  /// Value specialization (exact level): per region input, its values when the code may take
  /// them as constants (a small int64 input the runtime saw constant), else an undefined Tensor;
  /// empty = none. A one-element input given here becomes an immediate like a constant scalar.
  std::vector<Tensor> input_values;
};

/// The layout in which the kernel reads a region input.
enum class InputLayout {
  kAsIs,        ///< the input's own contiguous row-major data
  kTransposed,  ///< a 2-D input [R, C] given as its transpose [C, R], row-major
  /// a 2-D float32 weight [K, N] packed into the kernel layer's GEMM panels
  /// (kernels::gemm_pack_b_f32: ceil(N / width) panels of K x width floats), 1-D
  kGemmPanels,
  /// the same for a weight given as [N, K] (Gemm's transB), or as [N, K1, K2, ...] read as
  /// [N, K1 K2 ...] (a 1x1 convolution's [M, C, 1, 1])
  kGemmPanelsTransposed,
  /// a 3-D float32 weight [D, N, K] (an LSTM's or GRU's W or R: per direction [G*H, I] or
  /// [G*H, H]) packed per direction as kGemmPanelsTransposed packs [N, K]: D blocks of
  /// kernels::gemm_packed_floats(N, K) floats one after another, 1-D
  kGemmPanelsPerDirection,
};

/// A lowered region. The kernel ABI (codegen::KernelFn `void fn(void* const* buffers, const
/// int64_t* dims)`):
///  - buffers: Region::inputs in order (constants included, contiguous row-major), then
///    Region::outputs in order (contiguous, allocated by the caller with the shapes the caller
///    knows from its plan), then, when workspace_bytes > 0, one scratch buffer of that many bytes
///    (64-byte aligned, owned by the caller, contents undefined on entry).
///  - dims: every dim of every input (input 0's dims first), then every dim of every output, as
///    int64 — the same order for every level; exact code simply does not read them.
/// Function::dims names them "in<i>_d<k>" and "out<j>_d<k>"; buffers are named "in<i>",
/// "out<j>" and "workspace".
struct LoweredRegion {
  Function fn;
  int64_t workspace_bytes = 0;
  /// One line per decision the lowering made ("vectorized out0 inner loop by 16", "gemm mr=6
  /// nr=32 kc=256"), for `tierjit explain` and the decision log.
  std::vector<std::string> notes;
  /// One per Region::inputs: kAsIs unless options.prepare_constant_inputs let the lowering ask
  /// for a prepared layout of a constant input (then buffers[i] must hold prepare_input()'s data;
  /// dims still give the input's own shape).
  std::vector<InputLayout> input_layouts;
};

/// The data of a constant region input `t` in `layout`, as a new contiguous tensor (kAsIs: a
/// copy). Errors: kInvalidArgument when `t` does not fit the layout (kTransposed and
/// kGemmPanels need 2-D, kGemmPanelsTransposed at least 2-D, kGemmPanelsPerDirection 3-D
/// float32).
Expected<Tensor> prepare_input(InputLayout layout, const Tensor& t);

/// Lowers `region` (every node of it) under `options`. Errors: kUnsupported when a node, dtype or
/// attribute has no lowering (message names the node and op; the runtime keeps the region on
/// tier 0), kInvalidArgument when `options` does not match the region (count or rank of specs).
/// Never aborts.
Expected<LoweredRegion> lower_region(const passes::Region& region, const LowerOptions& options);

/// Tier-3 candidates: the `tuning` maps worth measuring for `region` under `options` (the first
/// is the default, an empty map). Matmul regions get register tiles (mr x nr) and K blocks (kc)
/// that fit the vector registers of options.vector_lanes (a Conv only as a 1x1, stride-1,
/// unpadded product or with K = C x KH x KW <= 32: other convolutions run the kernel layer's
/// tiles); other kinds have no knobs
/// yet and get only the default. A candidate the lowering rejects (kInvalidArgument) is simply
/// skipped.
std::vector<std::map<std::string, int64_t>> tuning_candidates(const passes::Region& region,
                                                              const LowerOptions& options);

/// Dims the region's lowering needs as constants at every level, the generic one included: per
/// region input, then per region output, one flag per dim (empty vectors: none). A Conv
/// region's channels and spatial sizes (every dim but the batch, of every input and output):
/// its code is built for one C/H/W, so its "generic" versions are generic over the batch only
/// and their guards check the rest (DESIGN.md "Specialization"; docs/lowering.md).
struct ConstantDims {
  std::vector<std::vector<bool>> inputs, outputs;
};
ConstantDims constant_dims_required(const passes::Region& region);

/// Why `region` cannot be compiled, in one line ("LSTM 'lstm_0' has no lowering"), or empty
/// when has_lowering(region). Shape-only regions: "shape-only: evaluated when a plan is made".
std::string lowering_gap(const passes::Region& region);

/// True when every node of `region` has a lowering for the dtypes the graph gives it (a cheap
/// check for the tier policy; lower_region may still fail, e.g. on an attribute).
bool has_lowering(const passes::Region& region);

}  // namespace tierjit::kir
