// Internals of the reduction lowering (lower_reduction*.cc): the anchor's iteration space (the
// dims of its data input, each reduced or kept, adjacent dims coalesced into groups), how every
// tensor the region touches maps onto it (a stride per group: zero when broadcast, plain, or
// chosen at run time), and the kir builders of the loop nests. See lower_reduction.cc for the
// overall scheme and the accuracy notes.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kir/builder.h"
#include "kir/lower/lower_internal.h"

namespace tierjit::kir::lowering::reduction {

enum class AnchorOp { kSum, kMean, kMax, kMin, kSoftmax, kLogSoftmax, kLayerNorm };

/// Which index space a tensor is read or written in: the anchor's data input (prologue values,
/// LayerNorm's Scale/B and statistics) or its output 0 (epilogue values, region outputs).
enum class SpaceKind { kIn, kOut };

/// How one tensor is indexed along one dim (or group) of the space.
struct Stride {
  enum Kind { kZero, kPlain, kRuntime } kind = kZero;
  Expr value;         ///< kPlain: the tensor's own stride; kRuntime: select(dim == 1, 0, stride)
  bool unit = false;  ///< kPlain and the stride is the constant 1 (the tensor's last dim)
};

/// A point of the space: one index per group; when lanes > 1 the last group's index is the
/// first of `lanes` consecutive indices.
struct Point {
  std::vector<Expr> idx;
  int lanes = 1;
  int part = 0;  ///< which of the unrolled accumulator slices a vector point updates
};

/// One coalesced group of adjacent space dims (same reduced flag, compatible for every tensor).
struct Group {
  std::vector<int> dims;  ///< original dims of the space, in order
  Expr extent;            ///< product of their sizes
  bool reduced = false;
};

/// A reduction accumulator in a stack scratch of `size` elements (kir has no mutable scalars;
/// LLVM promotes the scratch to registers). Values used more than once (the new element in a
/// select, partial results of the final combine) are let-bound, so no expression tree repeats.
struct Acc {
  std::string buf;
  DType dt = DType::kFloat32;
  int size = 1;
  bool horizontal = false;  ///< row mode: lanes are partial results combined at the end
  double init = 0;          ///< the identity of `step` (0, -inf, +inf)
  std::function<Expr(Expr, Expr)> step;  ///< (accumulated, new) -> accumulated; also combines
  int part_lanes = 1;       ///< row mode: lanes of one slice (the vector width)
  mutable int names = 0;

  std::string temp() const { return buf + "_" + std::to_string(names++); }
  Stmt init_stmt() const;
  /// Folds x into the accumulator slice `part` (lanes of x starting at part * lanes). A vector
  /// narrower than a slice (a row's tail) is padded with the identity and folded into slice 0.
  Stmt update(const Expr& x, int part = 0) const;
  /// let out = (the accumulated value; in row mode its lanes combined) in body.
  Stmt finish(const std::string& out, Stmt body) const;
  /// allocate(buf) { init; loops; rest }
  Stmt wrap(Stmt loops, Stmt rest) const;
};

Expr add_step(Expr a, Expr x);
/// Tier 0's softmax max: x > a ? x : a (a NaN is skipped and reaches the sum through exp).
Expr gt_max_step(Expr a, Expr x);
/// Tier 0's NaN-sticky max/min: (x > a || x != x) ? x : a.
Expr nan_max_step(Expr a, Expr x);
Expr nan_min_step(Expr a, Expr x);
Expr widen(const Expr& e, int lanes);
Expr to_f64(const Expr& x);
Expr to_f32(const Expr& x);

/// Lowers one reduction region. Built once per lower_reduction() call.
class Lowering {
 public:
  Lowering(const passes::Region& region, const LowerOptions& options)
      : region_(region), opt_(options) {}

  Expected<LoweredRegion> run();

  /// ReduceSum/Mean/Max/Min: the output has the reduced dims removed or set to 1.
  bool reduces_dims() const {
    return op_ == AnchorOp::kSum || op_ == AnchorOp::kMean || op_ == AnchorOp::kMax ||
           op_ == AnchorOp::kMin;
  }

  // ---- analysis (lower_reduction.cc) ----
  Status analyze();

  // ---- dims, strides, groups, values (lower_reduction_space.cc) ----
  Status build_dims();
  /// Run-time dims of `v` (constants where the specs or the graph fix them).
  Expected<std::vector<Expr>> dims_of(const ir::Value* v);
  /// Strides of tensor `v` (shape `vdims`) over the original space dims, read in `space`.
  Expected<std::vector<Stride>> map_tensor(const ir::Value* v, const std::vector<Expr>& vdims,
                                           SpaceKind space);
  Status collect_accesses();
  Status build_groups();
  /// The value of `v` at `p` in `space` (prologue/epilogue ops inlined; anchor output 0 is
  /// `anchor_value`). Lanes of the result: p.lanes.
  Expected<Expr> value_at(const ir::Value* v, SpaceKind space, const Point& p,
                          const Expr& anchor_value);
  /// Flat element index of an access at p (ramp for lanes > 1), and whether it is contiguous.
  Expr flat_index(const std::vector<Stride>& strides, const Point& p, bool* broadcast_scalar);
  Expr load_at(const std::string& buffer, DType dtype, const std::vector<Stride>& strides,
               const Point& p);
  Stmt store_at(const std::string& buffer, const std::vector<Stride>& strides, const Point& p,
                Expr value);

  // ---- loop nests (lower_reduction_kernel.cc) ----
  Expected<Stmt> build_body();
  std::string fresh(const std::string& base);
  using PointBody = std::function<Expected<Stmt>(const Point&)>;
  /// Loops over the reduced groups around `body`, at the kept indices of `row` (row mode: the
  /// last group vectorized, its tail in chunks of halving width L/2 ... 1 chosen by the bits of
  /// the extent; column mode: serial, lanes of `row`). `body` gets reduced indices only: map
  /// them onto a row with on_row().
  Expected<Stmt> reduce_loops(const Point& row, const PointBody& body);
  /// p with the kept-group indices of `row` (p's reduced indices, lanes and part unchanged).
  Point on_row(const Point& p, const Point& row) const;
  /// A block of output rows (row mode: lanes 1, each pass interleaved over the rows, so short
  /// rows overlap their latency chains) or one column chunk (column mode) of the anchor.
  Expected<Stmt> row_body(const std::vector<Point>& rows);
  Expected<Stmt> reduce_row(const std::vector<Point>& rows);
  Expected<Stmt> softmax_row(const std::vector<Point>& rows);
  Expected<Stmt> layernorm_row(const std::vector<Point>& rows);
  /// Stores every region output (except LayerNorm statistics) at p; y = anchor output 0 there.
  Expected<Stmt> store_outputs(const Point& p, const Expr& y);
  /// The outer loop nest (flattened kept groups, parallel or not) around row_body, rows in
  /// blocks of `rows_per_block` (row mode) and the remainder one at a time.
  Expected<Stmt> outer_loops(bool parallel, int rows_per_block);
  /// A new accumulator for the rows of this lowering (its size from the mode and lanes).
  Acc make_acc(const std::string& base, DType dt, double init, std::function<Expr(Expr, Expr)> step,
               int row_lanes);
  /// Index of a region output usable as float32 scratch over the whole space, or -1.
  int scratch_output() const;
  /// The scratch a multi-pass row (Softmax, LayerNormalization) keeps between its passes.
  struct RowScratch {
    int output = -1;         ///< region output used as float32 scratch, -1: none (recompute)
    bool store_x = false;    ///< the first pass stores x there (x is not a plain region input)
    std::string buffer;      ///< "out<output>"
    const std::vector<Stride>* access = nullptr;  ///< its strides over the space
  };
  RowScratch row_scratch(const ir::Value* data) const;
  /// The row's x at `p` as float32: loaded from the scratch, or computed from the region inputs.
  Expected<Expr> read_row_value(const RowScratch& rs, const ir::Value* data, const Point& p,
                                bool from_scratch);

  bool row_mode_ = false;

  const passes::Region& region_;
  const LowerOptions& opt_;
  const ir::Node* anchor_ = nullptr;
  AnchorOp op_ = AnchorOp::kSum;
  std::vector<std::string> notes_;

  // Anchor attributes.
  std::vector<bool> reduced_;  ///< per space dim
  std::vector<int> out_to_in_; ///< output dim -> space dim (Reduce keepdims=0 drops dims)
  double epsilon_ = 1e-5;
  bool stats_used_ = false;

  // Region bookkeeping.
  std::map<const ir::Value*, int> input_index_, output_index_;
  std::set<const ir::Node*> nodes_;  ///< non-anchor nodes of the region
  std::map<std::string, Expr> symbol_dim_;
  std::map<const ir::Value*, std::vector<Expr>> dims_memo_;

  // Space.
  int rank_ = 0;
  std::vector<Expr> space_dims_;  ///< dims of the anchor's data input
  std::vector<Group> groups_;
  std::vector<std::vector<Stride>> raw_;  ///< per access, over original dims (before grouping)
  std::map<std::pair<const ir::Value*, SpaceKind>, int> access_index_;
  std::vector<std::vector<Stride>> grouped_;  ///< per access, per group
  int vec_lanes_ = 1;   ///< lanes of the vectorized loops
  int unroll_ = 1;      ///< row mode: vector chunks per iteration, each with its accumulators
  int block_rows_ = 1;  ///< row mode: rows interleaved per block when rows are short
  bool vector_tails_ = false;  ///< row mode: the tail in vector chunks (else a scalar loop)
  int name_counter_ = 0;
};

/// Product of exprs with constant folding (1 for an empty list).
Expr product(const std::vector<Expr>& xs);
/// a * b, a + b with constant folding of IntImm operands.
Expr mul_fold(const Expr& a, const Expr& b);
Expr add_fold(const Expr& a, const Expr& b);
/// True when `e` is the integer constant `v`.
bool is_const(const Expr& e, int64_t v);

}  // namespace tierjit::kir::lowering::reduction
