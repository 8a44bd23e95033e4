// Shared pieces of the matmul-epilogue lowerings (lower_matmul.cc, lower_conv.cc): the region's
// buffers and dims as kir expressions, numpy-broadcast indexing of epilogue inputs, and the
// epilogue chain applied to C values as they are stored.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kir/builder.h"
#include "kir/lower/gemm_kernel.h"
#include "kir/lower/lower.h"

namespace tierjit::kir::lowering {

class LetScope;  // lower_ops.h

/// The kernel ABI of lower.h seen from inside one lowering: buffer names "in<i>"/"out<j>" and dim
/// expressions (constants where the spec fixes them, else the Vars "in<i>_d<k>"/"out<j>_d<k>").
class RegionIo {
 public:
  RegionIo(const passes::Region& region, const LowerOptions& options);

  /// Region input index of `v`, or -1.
  int input_index(const ir::Value* v) const;
  /// Region output index of `v`, or -1.
  int output_index(const ir::Value* v) const;
  int64_t rank_of_input(int i) const { return static_cast<int64_t>(options_.inputs[i].dims.size()); }
  Expr input_dim(int i, int64_t d) const;
  Expr output_dim(int j, int64_t d) const;
  /// The Function with the ABI's buffers (float32 "workspace" last when workspace_floats > 0),
  /// dims and `body`.
  Function function(Stmt body, int64_t workspace_floats) const;

 private:
  const passes::Region& region_;
  const LowerOptions& options_;
};

/// Index expressions of an input broadcast (numpy, right-aligned) to an output of shape
/// [rows..., N] flattened to [R, N]: element (row, col .. col + lanes) of the output.
class BroadcastIndex {
 public:
  /// `in_dims`: the input's dims; `out_dims`: the output's dims (rank >= 1, last = N).
  BroadcastIndex(std::vector<Expr> in_dims, std::vector<Expr> out_dims);
  /// Load of the input `buffer` (of `dtype`) at output element (row, col) (`lanes` lanes: a vector
  /// load when the input is contiguous along N, a broadcast when it is constant along N, else a
  /// gather).
  Expr load(const std::string& buffer, DType dtype, const Expr& row, const Expr& col,
            int lanes) const;

 private:
  std::vector<Expr> out_dims_;
  std::vector<Expr> strides_;  // per output dim, 0 on broadcast dims
};

/// Applies the region's epilogue nodes (every node but the anchor, in order) to the anchor's
/// value and stores every region output. Built with the anchor output's dims.
class Epilogue {
 public:
  /// Errors: kUnsupported naming the node whose op or input has no epilogue lowering.
  /// `view` (optional) maps an epilogue input's dims to dims broadcasting against `out_dims`
  /// (e.g. Conv merges the spatial dims); nullopt: that input is unsupported.
  using DimsView = std::function<std::optional<std::vector<Expr>>(const std::vector<Expr>&)>;
  static Expected<Epilogue> make(const passes::Region& region, const RegionIo& io,
                                 std::vector<Expr> out_dims, const DimsView& view = nullptr);
  /// True if `region`'s epilogue nodes can be lowered (op and dtypes), ignoring shapes.
  static bool supported(const passes::Region& region);

  /// Stores at output element (row, col .. col + lanes) of the [R, N]-flattened output (row
  /// counts every leading dim) every region output, computed from the anchor's `value`.
  /// Errors: kUnsupported / kInvalidArgument from lower_elementwise_op.
  Expected<Stmt> store(const Expr& value, const Expr& row, const Expr& col, int lanes) const;
  /// The output buffer that can hold C partial sums ("out<j>" whose value has the anchor shape);
  /// empty for a region with a pool (Region::pool).
  const std::string& accumulator() const { return acc_; }
  /// Regions with a pool: the pool's input element (the epilogue's last value) at (row, col ..
  /// col + lanes), its intermediates bound in `lets`; nothing is stored.
  Expected<Expr> pool_input(const Expr& value, const Expr& row, const Expr& col, int lanes,
                            LetScope* lets) const;
  /// True if an operand of the epilogue varies along the output's columns (a residual input),
  /// so a column past the output's last reads past that input.
  bool reads_columns() const { return reads_columns_; }

 private:
  struct Operand {
    int node = -1;  // >= 0: value of epilogue node `node`; -1 anchor; -2 region input; -3 none
    std::string buffer;
    DType dtype = DType::kFloat32;
    std::optional<BroadcastIndex> index;
  };
  Expected<std::vector<Expr>> values(const Expr& value, const Expr& row, const Expr& col,
                                     int lanes, LetScope* lets) const;

  const passes::Region* region_ = nullptr;
  int pool_input_ = -1;  // node feeding Region::pool (-1: the anchor)
  bool reads_columns_ = false;
  std::vector<const ir::Node*> nodes_;
  std::vector<std::vector<Operand>> operands_;
  std::vector<std::pair<int, std::string>> stores_;  // (node, buffer): -1 = anchor
  std::vector<Expr> out_dims_;
  std::string acc_;
};

/// Constant-folding int64 helpers (IntImm operands fold).
/// True when node input `index` of `n` is a constant that nothing else in the region reads and
/// the region does not output (its buffer may then hold a prepared layout, LoweredRegion::
/// input_layouts).
bool only_reader(const passes::Region& region, const ir::Node* n, size_t index);

Expr fold_add(const Expr& a, const Expr& b);
Expr fold_mul(const Expr& a, const Expr& b);
bool const_value(const Expr& e, int64_t* v);

}  // namespace tierjit::kir::lowering
