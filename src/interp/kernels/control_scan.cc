// Tier-0 kernel: ONNX Scan. Opset 9+: scan inputs are sliced along scan_input_axes (optionally in
// reverse), the body runs once per slice threading the state values, and its per-iteration scan
// outputs are stacked along scan_output_axes (optionally reversed). Opset 8: the same loop run
// once per batch row (axis 0) with an optional per-row sequence_lens; rows shorter than the
// longest are zero-padded in the scan outputs.
#include <string>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/control_internal.h"

namespace tierjit::interp {

namespace {

struct ScanResult {
  std::vector<Tensor> states;
  std::vector<std::vector<Tensor>> steps;  // [k][t] per-iteration scan outputs
};

// Runs the body `length` times. scan_inputs[j] is sliced at axes[j] (already normalized) in
// iteration order, reversed when directions[j] != 0.
Expected<ScanResult> run_scan(KernelContext& ctx, const ir::Graph& body, std::vector<Tensor> states,
                              const std::vector<Tensor>& scan_inputs,
                              const std::vector<int64_t>& axes,
                              const std::vector<int64_t>& directions, int64_t length,
                              size_t n_scan_out) {
  const size_t n_state = states.size();
  ScanResult r;
  r.steps.resize(n_scan_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> in;
    in.reserve(n_state + scan_inputs.size());
    for (Tensor& s : states) in.push_back(std::move(s));
    for (size_t j = 0; j < scan_inputs.size(); ++j) {
      int64_t idx = directions[j] ? length - 1 - t : t;
      in.push_back(slice_along(scan_inputs[j], axes[j], idx));
    }
    TJ_ASSIGN_OR_RETURN(std::vector<Tensor> out, ctx.run_subgraph(body, std::move(in)));
    if (out.size() != n_state + n_scan_out)
      return ctx.fail("body returned {} outputs, expected {}", out.size(), n_state + n_scan_out);
    for (size_t i = 0; i < n_state; ++i) states[i] = std::move(out[i]);
    for (size_t k = 0; k < n_scan_out; ++k) {
      Tensor& o = out[n_state + k];
      std::vector<Tensor>& acc = r.steps[k];
      if (!acc.empty() && (o.shape() != acc.front().shape() || o.dtype() != acc.front().dtype()))
        return ctx.fail("scan output {} changed from {} to {} at iteration {}", k,
                        shape_to_string(acc.front().shape()), shape_to_string(o.shape()), t);
      Shape total = o.shape();
      total.insert(total.begin(), static_cast<int64_t>(acc.size()) + 1);
      TJ_RETURN_IF_ERROR(ctx.check_size(o.dtype(), total));
      acc.push_back(std::move(o));
    }
  }
  r.states = std::move(states);
  return r;
}

// Element shape of scan output k when no iteration produced it: the body's declared shape when
// fully constant, else a scalar; the dtype must be declared.
Expected<Tensor> declared_zero_step(KernelContext& ctx, const ir::Value* v, size_t k) {
  const ir::ValueType& ty = v->type();
  if (ty.dtype == DType::kUndefined)
    return ctx.fail("scan output {} ran zero iterations and the body declares no dtype", k);
  Shape shape;
  if (ty.shape)
    for (const ir::Dim& d : *ty.shape) shape.push_back(d.is_constant() ? d.value : 0);
  return Tensor::zeros(ty.dtype, shape);
}

Status check_body(KernelContext& ctx, const ir::Graph& body, size_t n_state, size_t n_scan_in,
                  size_t n_scan_out) {
  if (body.feed_inputs().size() != n_state + n_scan_in)
    return ctx.fail("body takes {} inputs, expected {} ({} state + {} scan)",
                    body.feed_inputs().size(), n_state + n_scan_in, n_state, n_scan_in);
  if (body.outputs().size() != n_state + n_scan_out)
    return ctx.fail("body returns {} outputs, expected {} ({} state + {} scan)",
                    body.outputs().size(), n_state + n_scan_out, n_state, n_scan_out);
  return Status();
}

Expected<std::vector<int64_t>> flags(KernelContext& ctx, const char* name, size_t n) {
  std::vector<int64_t> v = ctx.node().attr_ints(name, std::vector<int64_t>(n, 0));
  if (v.size() != n)
    return ctx.fail("attribute '{}' has {} entries, expected {}", name, v.size(), n);
  return v;
}

// Opset 9+: inputs = N states, M scan inputs.
Status scan9(KernelContext& ctx, const ir::Graph& body, int64_t m) {
  const size_t n_in = ctx.num_inputs();
  if (m < 1 || static_cast<size_t>(m) > n_in)
    return ctx.fail("num_scan_inputs {} is out of range for {} inputs", m, n_in);
  const size_t n_scan_in = static_cast<size_t>(m), n_state = n_in - n_scan_in;
  if (ctx.num_outputs() < n_state)
    return ctx.fail("{} state inputs but only {} outputs", n_state, ctx.num_outputs());
  const size_t n_scan_out = ctx.num_outputs() - n_state;
  TJ_RETURN_IF_ERROR(check_body(ctx, body, n_state, n_scan_in, n_scan_out));
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs, flags(ctx, "scan_input_directions", n_scan_in));
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> in_axes, flags(ctx, "scan_input_axes", n_scan_in));
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> out_dirs,
                      flags(ctx, "scan_output_directions", n_scan_out));
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes, flags(ctx, "scan_output_axes", n_scan_out));

  std::vector<Tensor> states(n_state), scan_inputs(n_scan_in);
  for (size_t i = 0; i < n_in; ++i) {
    const Tensor* t = ctx.input(i);
    if (!t) return ctx.fail("input {} is missing", i);
    (i < n_state ? states[i] : scan_inputs[i - n_state]) = *t;
  }
  int64_t length = -1;
  for (size_t j = 0; j < n_scan_in; ++j) {
    const Tensor& t = scan_inputs[j];
    if (t.rank() == 0) return ctx.fail("scan input {} is a scalar; it needs a scan axis", j);
    TJ_ASSIGN_OR_RETURN(in_axes[j], normalize_axis(ctx, in_axes[j], t.rank()));
    int64_t len = t.dim(in_axes[j]);
    if (length >= 0 && len != length)
      return ctx.fail("scan input {} has length {} along axis {}, expected {}", j, len, in_axes[j],
                      length);
    length = len;
  }
  TJ_ASSIGN_OR_RETURN(ScanResult r, run_scan(ctx, body, std::move(states), scan_inputs, in_axes,
                                             in_dirs, length, n_scan_out));
  for (size_t i = 0; i < n_state; ++i) ctx.set_output(i, std::move(r.states[i]));
  for (size_t k = 0; k < n_scan_out; ++k) {
    std::vector<Tensor>& steps = r.steps[k];
    Shape elem;
    if (steps.empty()) {
      TJ_ASSIGN_OR_RETURN(Tensor z, declared_zero_step(ctx, body.outputs()[n_state + k], k));
      elem = z.shape();
      TJ_ASSIGN_OR_RETURN(int64_t axis,
                          normalize_axis(ctx, out_axes[k], static_cast<int64_t>(elem.size()) + 1));
      elem.insert(elem.begin() + axis, 0);
      ctx.set_output(n_state + k, Tensor::empty(z.dtype(), elem));
      continue;
    }
    const int64_t out_rank = steps.front().rank() + 1;
    TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, out_axes[k], out_rank));
    ctx.set_output(n_state + k, stack_along(steps, axis, out_dirs[k] != 0));
  }
  return Status();
}

// Opset 8: inputs = sequence_lens (optional), N states [B, ...], M scan inputs [B, T, ...].
Status scan8(KernelContext& ctx, const ir::Graph& body, int64_t m) {
  const size_t n_in = ctx.num_inputs();
  if (m < 1 || static_cast<size_t>(m) + 1 > n_in)
    return ctx.fail("num_scan_inputs {} is out of range for {} inputs", m, n_in);
  const size_t n_scan_in = static_cast<size_t>(m), n_state = n_in - 1 - n_scan_in;
  if (ctx.num_outputs() < n_state)
    return ctx.fail("{} state inputs but only {} outputs", n_state, ctx.num_outputs());
  const size_t n_scan_out = ctx.num_outputs() - n_state;
  TJ_RETURN_IF_ERROR(check_body(ctx, body, n_state, n_scan_in, n_scan_out));
  TJ_ASSIGN_OR_RETURN(std::vector<int64_t> dirs, flags(ctx, "directions", n_scan_in));
  std::vector<const Tensor*> ins(n_in - 1);
  for (size_t i = 1; i < n_in; ++i) {
    ins[i - 1] = ctx.input(i);
    if (!ins[i - 1]) return ctx.fail("input {} is missing", i);
  }
  const int64_t batch = ins[0]->rank() ? ins[0]->dim(0) : -1;
  int64_t max_len = -1;
  for (size_t i = 0; i < ins.size(); ++i) {
    const Tensor& t = *ins[i];
    const bool is_scan = i >= n_state;
    if (t.rank() < (is_scan ? 2 : 1) || t.dim(0) != batch)
      return ctx.fail("input {} of shape {} needs batch axis 0 of size {}{}", i + 1,
                      shape_to_string(t.shape()), batch, is_scan ? " and a sequence axis 1" : "");
    if (is_scan) {
      if (max_len >= 0 && t.dim(1) != max_len)
        return ctx.fail("scan input {} has sequence length {}, expected {}", i + 1, t.dim(1),
                        max_len);
      max_len = t.dim(1);
    }
  }
  std::vector<int64_t> lens(static_cast<size_t>(batch), max_len);
  if (const Tensor* sl = ctx.input(0)) {
    TJ_ASSIGN_OR_RETURN(lens, read_int64s(ctx, *sl, "input 0 'sequence_lens'"));
    if (static_cast<int64_t>(lens.size()) != batch)
      return ctx.fail("input 0 'sequence_lens' has {} entries, batch is {}", lens.size(), batch);
    for (int64_t l : lens)
      if (l < 0 || l > max_len)
        return ctx.fail("input 0 'sequence_lens': {} is out of range [0, {}]", l, max_len);
  }

  std::vector<std::vector<Tensor>> final_states(n_state), scan_rows(n_scan_out);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> states(n_state), scan_inputs(n_scan_in);
    for (size_t i = 0; i < n_state; ++i) states[i] = slice_along(*ins[i], 0, b);
    for (size_t j = 0; j < n_scan_in; ++j) {
      // Only the first lens[b] steps of this row are scanned.
      Tensor row = slice_along(*ins[n_state + j], 0, b);
      scan_inputs[j] = row.slice_rows(0, lens[b]);
    }
    TJ_ASSIGN_OR_RETURN(ScanResult r,
                        run_scan(ctx, body, std::move(states), scan_inputs,
                                 std::vector<int64_t>(n_scan_in, 0), dirs, lens[b], n_scan_out));
    for (size_t i = 0; i < n_state; ++i) final_states[i].push_back(std::move(r.states[i]));
    for (size_t k = 0; k < n_scan_out; ++k) {
      std::vector<Tensor>& steps = r.steps[k];
      Tensor zero;
      if (steps.empty()) {
        TJ_ASSIGN_OR_RETURN(zero, declared_zero_step(ctx, body.outputs()[n_state + k], k));
      } else if (static_cast<int64_t>(steps.size()) < max_len) {
        zero = Tensor::zeros(steps.front().dtype(), steps.front().shape());
      }
      while (static_cast<int64_t>(steps.size()) < max_len) steps.push_back(zero);
      if (max_len == 0) {
        Shape s = zero.shape();
        s.insert(s.begin(), 0);
        scan_rows[k].push_back(Tensor::empty(zero.dtype(), s));
      } else {
        scan_rows[k].push_back(stack_along(steps, 0, false));
      }
    }
  }
  for (size_t i = 0; i < n_state; ++i) {
    if (batch == 0) {
      ctx.set_output(i, *ins[i]);
      continue;
    }
    ctx.set_output(i, stack_along(final_states[i], 0, false));
  }
  for (size_t k = 0; k < n_scan_out; ++k) {
    if (batch == 0) {
      TJ_ASSIGN_OR_RETURN(Tensor z, declared_zero_step(ctx, body.outputs()[n_state + k], k));
      Shape s = z.shape();
      s.insert(s.begin(), {0, max_len});
      ctx.set_output(n_state + k, Tensor::empty(z.dtype(), s));
      continue;
    }
    for (const Tensor& row : scan_rows[k])
      if (row.shape() != scan_rows[k].front().shape())
        return ctx.fail("scan output {} has different shapes across batch rows", k);
    ctx.set_output(n_state + k, stack_along(scan_rows[k], 0, false));
  }
  return Status();
}

}  // namespace

// ONNX Scan (opsets 8, 9, 11, 16). Attributes: body (graph), num_scan_inputs (required),
// opset 8: directions; opset 9+: scan_input_axes/directions, scan_output_axes/directions.
Status scan_kernel(KernelContext& ctx) {
  const ir::Graph* body = ctx.node().attr_graph("body");
  if (!body) return ctx.fail("attribute 'body' (a graph) is missing");
  if (!ctx.node().has_attr("num_scan_inputs"))
    return ctx.fail("attribute 'num_scan_inputs' is required");
  const int64_t m = ctx.node().attr_int("num_scan_inputs", 0);
  return ctx.node().opset() < 9 ? scan8(ctx, *body, m) : scan9(ctx, *body, m);
}

}  // namespace tierjit::interp
