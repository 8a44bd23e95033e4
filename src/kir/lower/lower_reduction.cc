// Lowering of reduction regions (passes/region.h, RegionKind::kReduction): one anchor
// (ReduceSum/Mean/Max/Min, Softmax, LogSoftmax, LayerNormalization) with an elementwise prologue
// feeding it and an elementwise epilogue after it, to one kir loop nest in float32.
//
// Scheme: the iteration space is the anchor's data input; each dim is reduced or kept. Every
// tensor the region reads or writes maps onto it by right-aligned broadcasting (prologue values in
// the input space, epilogue values and outputs in the output space, which for Reduce drops or
// zeroes the reduced dims). Adjacent dims that every tensor indexes alike are coalesced into
// groups. If the last group is reduced, each output row is a "row" reduction vectorized along it
// (vector accumulators plus a tail; tier 2: short rows in blocks of 4, docs/lowering.md
// "Reduction rows"); else the last kept group is split into vector "columns" that reduce in
// lock-step. Outer kept groups are flattened into one loop that runs in parallel when
// threads > 1 and the work is large. Prologue ops are inlined where the
// data is read; Softmax/LogSoftmax/LayerNorm keep the prologue result (or exp) in an output
// buffer between passes when one has the right shape and dtype, else recompute it.
//
// Accuracy (tier 0, src/interp/kernels/reduce.cc, softmax.cc, normalization.cc, is the
// reference): sums (ReduceSum/Mean, the softmax denominator, LayerNorm mean and variance) are
// accumulated in float64 like tier 0 (`lanes` partial sums added pairwise at the end), so
// the summation error is ~R * 2^-53 relative, far below float32 rounding even for R = 2^26;
// results differ from tier 0 only by the final float32 rounding and, for Softmax/LogSoftmax, by
// the vectorized float32 exp (<= 1 ulp, docs/codegen.md): a few ulp. Max/Min are exact and
// propagate NaN as tier 0 (a NaN sticks); an empty reduction gives 0 (sum), NaN (mean), -inf
// (max), +inf (min).
#include "kir/lower/lower_reduction_internal.h"

#include <algorithm>
#include <cctype>

#include "kir/lower/lower_ops.h"


namespace tierjit::kir::lowering {

namespace reduction {
namespace {

bool anchor_op_of(ir::OpKind k, AnchorOp* op) {
  switch (k) {
    case ir::OpKind::ReduceSum: *op = AnchorOp::kSum; return true;
    case ir::OpKind::ReduceMean: *op = AnchorOp::kMean; return true;
    case ir::OpKind::ReduceMax: *op = AnchorOp::kMax; return true;
    case ir::OpKind::ReduceMin: *op = AnchorOp::kMin; return true;
    case ir::OpKind::Softmax: *op = AnchorOp::kSoftmax; return true;
    case ir::OpKind::LogSoftmax: *op = AnchorOp::kLogSoftmax; return true;
    case ir::OpKind::LayerNormalization: *op = AnchorOp::kLayerNorm; return true;
    default: return false;
  }
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out.empty() ? std::string("region") : out;
}

}  // namespace

Status Lowering::analyze() {
  const std::string where = "region '" + region_.name + "'";
  anchor_ = region_.anchor;
  if (!anchor_ || !anchor_op_of(anchor_->op(), &op_))
    return unsupported("{}: no reduction anchor with a lowering", where);
  const std::string aname = where + " node '" + anchor_->name() + "' (" +
                            std::string(ir::op_name(anchor_->op())) + ")";
  const ir::Value* x = anchor_->input(0);
  const ir::Value* y = anchor_->output(0);
  if (!x || !y || x->type().dtype != DType::kFloat32 || y->type().dtype != DType::kFloat32)
    return unsupported("{}: only float32 is lowered", aname);
  if (!x->type().shape) return unsupported("{}: input rank unknown", aname);
  rank_ = static_cast<int>(x->type().shape->size());
  for (size_t i = 0; i < region_.inputs.size(); ++i) input_index_[region_.inputs[i]] = static_cast<int>(i);
  for (size_t i = 0; i < region_.outputs.size(); ++i) output_index_[region_.outputs[i]] = static_cast<int>(i);
  for (const ir::Node* n : region_.nodes) {
    if (n == anchor_) continue;
    if (!elementwise_op_supported(*n))
      return unsupported("{}: node '{}' ({}) has no elementwise lowering", where, n->name(),
                         ir::op_name(n->op()));
    nodes_.insert(n);
  }
  for (size_t i = 0; i < opt_.inputs.size(); ++i) {
    const DType dt = opt_.inputs[i].dtype;
    if (!is_kernel_dtype(dt))
      return unsupported("{}: input {} has dtype {}", where, i, dtype_name(dt));
  }
  for (size_t i = 0; i < opt_.outputs.size(); ++i) {
    const DType dt = opt_.outputs[i].dtype;
    if (!is_kernel_dtype(dt))
      return unsupported("{}: output {} has dtype {}", where, i, dtype_name(dt));
  }

  const int n = rank_;
  reduced_.assign(static_cast<size_t>(n), false);
  auto norm_axis = [&](int64_t a, int64_t* out) -> Status {
    if (a < -n || a >= n) return unsupported("{}: axis {} out of range for rank {}", aname, a, n);
    *out = a < 0 ? a + n : a;
    return Status();
  };
  switch (op_) {
    case AnchorOp::kSum:
    case AnchorOp::kMean:
    case AnchorOp::kMax:
    case AnchorOp::kMin: {
      std::vector<int64_t> axes;
      if (const ir::Value* a = anchor_->input(1)) {
        if (!a->is_constant()) return unsupported("{}: axes input is not a constant", aname);
        const Tensor& t = a->constant();
        for (int64_t i = 0; i < t.numel(); ++i) axes.push_back(t.value_as_int64(i));
      } else {
        axes = anchor_->attr_ints("axes");
      }
      const bool keepdims = anchor_->attr_int("keepdims", 1) != 0;
      const bool noop = anchor_->attr_int("noop_with_empty_axes", 0) != 0;
      if (axes.empty() && !noop) reduced_.assign(static_cast<size_t>(n), true);
      for (int64_t a : axes) {
        if (n == 0 && (a == 0 || a == -1)) continue;
        int64_t ax = 0;
        TJ_RETURN_IF_ERROR(norm_axis(a, &ax));
        if (reduced_[static_cast<size_t>(ax)])
          return unsupported("{}: axis {} is repeated", aname, a);
        reduced_[static_cast<size_t>(ax)] = true;
      }
      if (axes.empty() && noop) reduced_.assign(static_cast<size_t>(n), false);
      for (int d = 0; d < n; ++d)
        if (keepdims || !reduced_[static_cast<size_t>(d)]) out_to_in_.push_back(d);
      break;
    }
    case AnchorOp::kSoftmax:
    case AnchorOp::kLogSoftmax: {
      const bool coerce = anchor_->opset() < 13;
      if (n > 0) {
        const int64_t a = anchor_->attr_int("axis", coerce ? 1 : -1);
        if (!(coerce && a == n)) {
          int64_t ax = 0;
          TJ_RETURN_IF_ERROR(norm_axis(a, &ax));
          for (int64_t d = ax; d < (coerce ? n : ax + 1); ++d) reduced_[static_cast<size_t>(d)] = true;
        }
      }
      for (int d = 0; d < n; ++d) out_to_in_.push_back(d);
      break;
    }
    case AnchorOp::kLayerNorm: {
      if (n == 0) return unsupported("{}: rank-0 input", aname);
      int64_t ax = 0;
      TJ_RETURN_IF_ERROR(norm_axis(anchor_->attr_int("axis", -1), &ax));
      for (int64_t d = ax; d < n; ++d) reduced_[static_cast<size_t>(d)] = true;
      epsilon_ = static_cast<double>(anchor_->attr_float("epsilon", 1e-5f));
      if (!anchor_->input(1)) return unsupported("{}: Scale is missing", aname);
      for (size_t k = 1; k <= 2; ++k) {
        const ir::Value* s = anchor_->output(k);
        if (!s) continue;
        for (const ir::Node* u : s->users())
          if (nodes_.count(u))
            return unsupported("{}: output {} is read inside the region", aname, k);
        if (output_index_.count(s)) {
          const size_t j = static_cast<size_t>(output_index_[s]);
          const DType dt = j < opt_.outputs.size() ? opt_.outputs[j].dtype : s->type().dtype;
          if (dt != DType::kFloat32 && dt != DType::kFloat64)
            return unsupported("{}: output {} has dtype {}", aname, k, dtype_name(dt));
          stats_used_ = true;
        }
      }
      for (int d = 0; d < n; ++d) out_to_in_.push_back(d);
      break;
    }
  }
  // Every region output must be anchor output 0..2 or an epilogue value.
  for (const ir::Value* v : region_.outputs) {
    const ir::Node* p = v->producer();
    if (p != anchor_ && !nodes_.count(p))
      return unsupported("{}: output '{}' is not produced in the region", where, v->name());
  }
  return Status();
}

Expected<LoweredRegion> Lowering::run() {
  TJ_RETURN_IF_ERROR(analyze());
  // Explicit vectors at tier 1 too: its pipeline does not vectorize the float64 and max
  // reductions of scalar loops (tier 1 was 4x slower than tier 0 on softmax 64x512).
  vec_lanes_ = std::max(1, opt_.vector_lanes);
  // Tier 2: two accumulator chains per row, short rows in blocks of 4 (their passes
  // interleaved), tails in vector chunks. Tier 1 keeps one of each (the code of a row block is
  // 4x larger, of vector tails 4 more chunks: generic softmax compiled in 20-60 ms that way).
  unroll_ = opt_.tier >= 2 && vec_lanes_ > 1 ? 2 : 1;
  block_rows_ = opt_.tier >= 2 && vec_lanes_ > 1 ? 4 : 1;
  vector_tails_ = opt_.tier >= 2;
  if (vec_lanes_ & (vec_lanes_ - 1))
    return invalid_argument("region '{}': vector_lanes {} is not a power of two", region_.name,
                            opt_.vector_lanes);
  if (!opt_.tuning.empty())
    return invalid_argument("region '{}': reduction lowering has no tuning knob '{}'", region_.name,
                            opt_.tuning.begin()->first);
  TJ_RETURN_IF_ERROR(build_dims());
  TJ_RETURN_IF_ERROR(collect_accesses());
  TJ_RETURN_IF_ERROR(build_groups());
  LoweredRegion out;
  out.fn.name = sanitize(region_.name);
  for (size_t i = 0; i < region_.inputs.size(); ++i) {
    out.fn.buffers.push_back({"in" + std::to_string(i), opt_.inputs[i].dtype});
    for (size_t k = 0; k < opt_.inputs[i].dims.size(); ++k)
      out.fn.dims.push_back("in" + std::to_string(i) + "_d" + std::to_string(k));
  }
  for (size_t i = 0; i < region_.outputs.size(); ++i) {
    out.fn.buffers.push_back({"out" + std::to_string(i), opt_.outputs[i].dtype});
    for (size_t k = 0; k < opt_.outputs[i].dims.size(); ++k)
      out.fn.dims.push_back("out" + std::to_string(i) + "_d" + std::to_string(k));
  }
  TJ_ASSIGN_OR_RETURN(out.fn.body, build_body());
  out.notes = std::move(notes_);
  TJ_RETURN_IF_ERROR(verify(out.fn).with_prefix("region '" + region_.name + "'"));
  return out;
}

}  // namespace reduction

Expected<LoweredRegion> lower_reduction(const passes::Region& region, const LowerOptions& options) {
  reduction::Lowering l(region, options);
  return l.run();
}

bool reduction_supported(const passes::Region& region) {
  const LowerOptions options;  // analyze() reads no spec when they are absent
  reduction::Lowering l(region, options);
  return l.analyze().ok();
}

}  // namespace tierjit::kir::lowering
