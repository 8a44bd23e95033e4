// Tier-0 kernels: control family. If runs one of its two branch subgraphs; Loop and Scan live in
// control_loop.cc and control_scan.cc. Subgraphs run through KernelContext::run_subgraph, which
// binds outer-scope reads (captures) against the calling frame. Also the slicing/stacking helpers
// of control_internal.h.
#include <cstring>
#include <string>

#include "interp/kernels/common.h"
#include "interp/kernels/control_internal.h"
#include "interp/registry.h"

namespace tierjit::interp {

void copy_elements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == DType::kString) {
    const std::string* s = src.data<std::string>() + src_off;
    std::string* d = dst.data<std::string>() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + static_cast<size_t>(dst_off) * es,
              static_cast<const char*>(src.raw_data()) + static_cast<size_t>(src_off) * es,
              static_cast<size_t>(n) * es);
}

Tensor slice_along(const Tensor& t, int64_t axis, int64_t index) {
  Shape out_shape = t.shape();
  out_shape.erase(out_shape.begin() + axis);
  if (axis == 0) return t.slice_rows(index, index + 1).reshaped(out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const int64_t len = t.dim(axis);
  Tensor out = Tensor::empty(t.dtype(), out_shape);
  for (int64_t o = 0; o < outer; ++o)
    copy_elements(t, (o * len + index) * inner, out, o * inner, inner);
  return out;
}

Tensor stack_along(const std::vector<Tensor>& parts, int64_t axis, bool reverse) {
  const Shape& s = parts.front().shape();
  const int64_t n = static_cast<int64_t>(parts.size());
  Shape out_shape = s;
  out_shape.insert(out_shape.begin() + axis, n);
  Tensor out = Tensor::empty(parts.front().dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (int64_t d = axis; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
  for (int64_t k = 0; k < n; ++k) {
    const Tensor& p = parts[reverse ? n - 1 - k : k];
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(p, o * inner, out, (o * n + k) * inner, inner);
  }
  return out;
}

namespace {

// ONNX If (opsets 1-16): input 0 `cond` is a one-element bool tensor; runs then_branch or
// else_branch (no inputs, reading outer values) and forwards its outputs. The branches may give
// outputs of different shapes (opset 11+).
Status if_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* cond, ctx.required_input(0));
  if (cond->numel() != 1)
    return ctx.fail("input 0 'cond' must hold one element, got shape {}",
                    shape_to_string(cond->shape()));
  if (cond->dtype() == DType::kString) return ctx.fail("input 0 'cond' must be bool, got string");
  const bool take_then = cond->value_as_double(0) != 0.0;
  const char* branch_name = take_then ? "then_branch" : "else_branch";
  const ir::Graph* branch = ctx.node().attr_graph(branch_name);
  if (!branch) return ctx.fail("attribute '{}' (a graph) is missing", branch_name);
  TJ_ASSIGN_OR_RETURN(std::vector<Tensor> outs, ctx.run_subgraph(*branch, {}));
  if (outs.size() != ctx.num_outputs())
    return ctx.fail("{} returned {} outputs, the node has {}", branch_name, outs.size(),
                    ctx.num_outputs());
  for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(i, std::move(outs[i]));
  return Status();
}

}  // namespace

void register_control_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::If, if_kernel);
  r.add(ir::OpKind::Loop, loop_kernel);
  r.add(ir::OpKind::Scan, scan_kernel);
}

}  // namespace tierjit::interp
