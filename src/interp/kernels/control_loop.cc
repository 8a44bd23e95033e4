// Tier-0 kernel: ONNX Loop (opsets 1-16, tensor-typed loop-carried values only). Runs the body
// subgraph until the trip count M is reached or the condition turns false, threading the
// loop-carried values and stacking each iteration's scan outputs along a new axis 0.
#include <string>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/control_internal.h"

namespace tierjit::interp {

namespace {

// Reads a one-element input as int64 (M) or bool (cond).
Expected<int64_t> read_scalar(const KernelContext& ctx, const Tensor& t, size_t index,
                              const char* name) {
  if (t.numel() != 1)
    return ctx.fail("input {} '{}' must hold one element, got shape {}", index, name,
                    shape_to_string(t.shape()));
  if (t.dtype() == DType::kString) return ctx.fail("input {} '{}' must be numeric", index, name);
  return t.value_as_int64(0);
}

// Output for a scan output of a loop that ran zero times: [0] followed by the body output's
// declared dims when they are all constant, else [0]. An undeclared output that is (through
// Identity nodes) a loop-carried body input takes that carried value's dtype and shape.
Expected<Tensor> empty_scan_output(KernelContext& ctx, const ir::Graph& body,
                                   const ir::Value* body_out, size_t k) {
  const ir::Value* v = body_out;
  while (v->producer() && v->producer()->op() == ir::OpKind::Identity && v->producer()->input(0))
    v = v->producer()->input(0);
  const std::vector<ir::Value*> ins = body.feed_inputs();
  for (size_t j = 2; j < ins.size(); ++j) {
    if (ins[j] != v || !ctx.input(j)) continue;
    Shape shape = ctx.input(j)->shape();
    shape.insert(shape.begin(), 0);
    return Tensor::empty(ctx.input(j)->dtype(), shape);
  }
  const ir::ValueType& ty = body_out->type();
  if (ty.dtype == DType::kUndefined)
    return ctx.fail("scan output {} ran zero iterations and the body declares no dtype for it", k);
  Shape shape{0};
  if (ty.shape) {
    bool all_const = true;
    for (const ir::Dim& d : *ty.shape) all_const = all_const && d.is_constant();
    if (all_const)
      for (const ir::Dim& d : *ty.shape) shape.push_back(d.value);
  }
  return Tensor::empty(ty.dtype, shape);
}

}  // namespace

// ONNX Loop. Inputs: 0 `M` (optional int64 scalar, max trip count), 1 `cond` (optional bool
// scalar), 2.. N loop-carried initial values. Body: (iteration_num int64 scalar, cond bool
// scalar, carried...) -> (cond, carried..., K scan outputs). Outputs: N final carried values,
// then K scan outputs of shape [iterations, S...]. The body's cond output always decides whether
// the loop goes on, also when the `cond` input is omitted (treated as true): the spec text calls
// it ignored there, but ONNX Runtime and onnx.reference both honour it, and so does tierjit.
// Without M the loop runs until the body's cond turns false (no iteration cap). Every scan output
// keeps its shape across iterations; accumulated scan outputs are checked against the memory
// limit each iteration.
Status loop_kernel(KernelContext& ctx) {
  const ir::Graph* body = ctx.node().attr_graph("body");
  if (!body) return ctx.fail("attribute 'body' (a graph) is missing");
  const size_t n_carried = ctx.num_inputs() >= 2 ? ctx.num_inputs() - 2 : 0;
  if (ctx.num_outputs() < n_carried)
    return ctx.fail("{} loop-carried inputs but only {} outputs", n_carried, ctx.num_outputs());
  const size_t n_scan = ctx.num_outputs() - n_carried;
  const size_t body_in = body->feed_inputs().size();
  if (body_in != 2 + n_carried)
    return ctx.fail("body takes {} inputs, expected {} (iteration_num, cond, {} carried)", body_in,
                    2 + n_carried, n_carried);
  if (body->outputs().size() != 1 + n_carried + n_scan)
    return ctx.fail("body returns {} outputs, expected {} (cond, {} carried, {} scan)",
                    body->outputs().size(), 1 + n_carried + n_scan, n_carried, n_scan);

  bool has_m = false;
  int64_t max_trips = 0;
  bool cond = true;
  if (const Tensor* m = ctx.input(0)) {
    TJ_ASSIGN_OR_RETURN(max_trips, read_scalar(ctx, *m, 0, "M"));
    has_m = true;
  }
  if (const Tensor* c = ctx.input(1)) {
    TJ_ASSIGN_OR_RETURN(int64_t cv, read_scalar(ctx, *c, 1, "cond"));
    cond = cv != 0;
  }
  std::vector<Tensor> carried(n_carried);
  for (size_t i = 0; i < n_carried; ++i) {
    const Tensor* t = ctx.input(2 + i);
    if (!t) return ctx.fail("input {} (loop-carried value {}) is missing", 2 + i, i);
    carried[i] = *t;
  }

  std::vector<std::vector<Tensor>> scans(n_scan);
  int64_t iter = 0;
  while ((!has_m || iter < max_trips) && cond) {
    std::vector<Tensor> in;
    in.reserve(2 + n_carried);
    in.push_back(Tensor::scalar<int64_t>(iter));
    in.push_back(Tensor::scalar<bool>(cond));
    for (Tensor& t : carried) in.push_back(std::move(t));
    TJ_ASSIGN_OR_RETURN(std::vector<Tensor> out, ctx.run_subgraph(*body, std::move(in)));
    if (out.size() != 1 + n_carried + n_scan)
      return ctx.fail("body returned {} outputs, expected {}", out.size(), 1 + n_carried + n_scan);
    if (out[0].numel() != 1 || out[0].dtype() == DType::kString)
      return ctx.fail("body output 0 'cond' must be a one-element bool, got shape {}",
                      shape_to_string(out[0].shape()));
    cond = out[0].value_as_double(0) != 0.0;
    for (size_t i = 0; i < n_carried; ++i) carried[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < n_scan; ++k) {
      Tensor& t = out[1 + n_carried + k];
      std::vector<Tensor>& acc = scans[k];
      if (!acc.empty() && (t.shape() != acc.front().shape() || t.dtype() != acc.front().dtype()))
        return ctx.fail("scan output {} changed from {} {} to {} {} at iteration {}", k,
                        dtype_name(acc.front().dtype()), shape_to_string(acc.front().shape()),
                        dtype_name(t.dtype()), shape_to_string(t.shape()), iter);
      Shape total = t.shape();
      total.insert(total.begin(), static_cast<int64_t>(acc.size()) + 1);
      TJ_RETURN_IF_ERROR(ctx.check_size(t.dtype(), total));
      acc.push_back(std::move(t));
    }
    ++iter;
  }

  for (size_t i = 0; i < n_carried; ++i) ctx.set_output(i, std::move(carried[i]));
  for (size_t k = 0; k < n_scan; ++k) {
    if (scans[k].empty()) {
      TJ_ASSIGN_OR_RETURN(Tensor e,
                          empty_scan_output(ctx, *body, body->outputs()[1 + n_carried + k], k));
      ctx.set_output(n_carried + k, std::move(e));
    } else {
      ctx.set_output(n_carried + k, stack_along(scans[k], 0, false));
    }
  }
  return Status();
}

}  // namespace tierjit::interp
