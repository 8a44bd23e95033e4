// Shape rules for linear algebra and convolutional ops: MatMul (1-D promotion, batch
// broadcasting), Gemm, MatMulInteger, QLinearMatMul, Conv, ConvTranspose, ConvInteger,
// QLinearConv, Max/Average/Lp pools (pads, strides, dilations, auto_pad, ceil_mode), global
// pools, MaxRoiPool, MaxUnpool, and the quantize ops. Source: ONNX operator specs, opsets 1..17.
#include <algorithm>

#include "passes/shape_rules.h"

namespace tierjit::passes::shapes {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
/// A size computed in 128 bits fits in [-2^62, 2^62] (room for the int64 sums that follow).
bool fits_size(__int128 v) { return v <= (__int128{1} << 62) && v >= -(__int128{1} << 62); }

// MatMul shape of a [.., M, K] x b [.., K, N] with numpy 1-D promotion.
Status matmul_shape(RuleContext& c, size_t ia, size_t ib, DType out_dtype) {
  const auto& as = c.shape(ia);
  const auto& bs = c.shape(ib);
  if (!as || !bs) {
    c.set_output(0, out_dtype, std::nullopt);
    return Status();
  }
  if (as->empty() || bs->empty()) return c.fail("MatMul inputs must have rank >= 1");
  SymShape a = *as, b = *bs;
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), Dim::constant(1));
  if (b1) b.push_back(Dim::constant(1));
  const Dim& ka = a[a.size() - 1];
  const Dim& kb = b[b.size() - 2];
  if (ka.is_constant() && kb.is_constant() && ka.value != kb.value)
    return c.fail("inner dims differ: {} x {}", ir::sym_shape_to_string(*as), ir::sym_shape_to_string(*bs));
  SymShape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  std::string err;
  auto batch = broadcast_shapes({&ab, &bb}, &err);
  if (!err.empty()) return c.fail("batch dims: {}", err);
  SymShape out = *batch;
  if (!a1) out.push_back(a[a.size() - 2]);
  if (!b1) out.push_back(b[b.size() - 1]);
  c.set_output(0, out_dtype, std::move(out));
  return Status();
}

Status matmul(RuleContext& c) {
  TJ_RETURN_IF_ERROR(c.same_dtype(0, 1));
  return matmul_shape(c, 0, 1, c.dtype(0));
}
Status matmul_integer(RuleContext& c) { return matmul_shape(c, 0, 1, DType::kInt32); }
Status qlinear_matmul(RuleContext& c) { return matmul_shape(c, 0, 3, c.dtype(7)); }

Status gemm(RuleContext& c) {
  TJ_RETURN_IF_ERROR(c.same_dtype(0, 1));
  const auto& a = c.shape(0);
  const auto& b = c.shape(1);
  if (a && a->size() != 2) return c.fail("input 0 'A' has rank {}, expected 2", a->size());
  if (b && b->size() != 2) return c.fail("input 1 'B' has rank {}, expected 2", b->size());
  bool ta = c.node().attr_int("transA", 0) != 0, tb = c.node().attr_int("transB", 0) != 0;
  Dim m = a ? (*a)[ta ? 1 : 0] : Dim::unknown();
  Dim n = b ? (*b)[tb ? 0 : 1] : Dim::unknown();
  if (a && b) {
    const Dim& ka = (*a)[ta ? 0 : 1];
    const Dim& kb = (*b)[tb ? 1 : 0];
    if (ka.is_constant() && kb.is_constant() && ka.value != kb.value)
      return c.fail("inner dims differ: A {} (transA={}) and B {} (transB={})", ir::sym_shape_to_string(*a), ta,
                    ir::sym_shape_to_string(*b), tb);
  }
  c.set_output(0, c.dtype(0), SymShape{m, n});
  return Status();
}

// Output extent of a window over a symbolic extent X: floor((X + c) / s) + 1, or ceil(..) + 1,
// written canonically ("X" when it cancels, "(X-1)", "((X-1)//2+1)") so that two branches that
// apply the same arithmetic to the same X (a ResNet block and its downsample path) get equal
// symbols (the SAME auto_pad form ceil(X / s) equals floor((X - 1) / s) + 1 for X >= 0).
bool fully_parenthesized(const std::string& e) {
  if (e.size() < 2 || e.front() != '(' || e.back() != ')') return false;
  int depth = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
    if (depth == 0) return i + 1 == e.size();
  }
  return false;
}

std::string wrap(const std::string& e) {
  return e.find_first_of("+-*/(") == std::string::npos || fully_parenthesized(e) ? e : "(" + e + ")";
}

// "(B+k)" / "(B-k)" with the offset at the top level -> B and k.
bool split_offset(const std::string& x, std::string* base, int64_t* k) {
  if (!fully_parenthesized(x)) return false;
  std::string inner = x.substr(1, x.size() - 2);
  int depth = 0;
  size_t pos = std::string::npos;
  for (size_t i = 0; i < inner.size(); ++i) {
    depth += inner[i] == '(' ? 1 : inner[i] == ')' ? -1 : 0;
    if (depth == 0 && i > 0 && (inner[i] == '+' || inner[i] == '-')) pos = i;
  }
  if (pos == std::string::npos || pos + 1 >= inner.size() || inner.size() - pos > 12) return false;
  for (size_t i = pos + 1; i < inner.size(); ++i)
    if (inner[i] < '0' || inner[i] > '9') return false;
  *k = std::stoll(inner.substr(pos + 1)) * (inner[pos] == '-' ? -1 : 1);
  *base = inner.substr(0, pos);
  return true;
}

bool has_top_level_sum(const std::string& e) {
  int depth = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
    if (depth == 0 && i > 0 && (e[i] == '+' || e[i] == '-')) return true;
  }
  return false;
}

// Canonical spelling of b + c: "b" or "(b+c)" / "(b-c)" (split_offset inverts it).
std::string offset_expr(const std::string& b, int64_t c) {
  if (c == 0) return wrap(b);
  std::string sign = c > 0 ? "+" : "-";
  return "(" + (has_top_level_sum(b) ? wrap(b) : b) + sign + std::to_string(c > 0 ? c : -c) + ")";
}

Dim window_expr(const std::string& x, int64_t c, int64_t s, bool ceil_mode) {
  if (ceil_mode) c += s - 1;
  std::string base = x;
  int64_t k = 0;
  if (split_offset(x, &base, &k)) c += k;
  if (s == 1) return derived_dim(offset_expr(base, c + 1));  // floor((X + c) / 1) + 1
  return derived_dim(offset_expr(wrap(offset_expr(base, c)) + "//" + std::to_string(s), 1));
}

// Spatial output dims of a conv or pool over x = [N, C, spatial...].
Status window_dims(RuleContext& c, const SymShape& x, const std::vector<int64_t>& kernel, bool ceil_mode,
                   SymShape* out) {
  const ir::Node& n = c.node();
  size_t ns = x.size() - 2;
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> dil = n.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (strides.size() != ns || dil.size() != ns || pads.size() != 2 * ns)
    return c.fail("strides, dilations or pads do not match {} spatial dims", ns);
  if (!kernel.empty() && kernel.size() != ns)
    return c.fail("kernel has {} dims for {} spatial dims", kernel.size(), ns);
  for (size_t i = 0; i < ns; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0) return c.fail("strides and dilations must be positive");
    if (!kernel.empty() && kernel[i] <= 0)
      return c.fail("kernel_shape must be positive, got {} on spatial axis {}", kernel[i], i);
    if (auto_pad == "NOTSET" && (pads[i] < 0 || pads[i + ns] < 0))
      return c.fail("pads must be non-negative, got {} and {} on spatial axis {}", pads[i], pads[i + ns], i);
    const Dim& in = x[i + 2];
    int64_t s = strides[i];
    Dim d = Dim::unknown();
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in.is_constant()) d = Dim::constant(ceil_div(in.value, s));
      else if (in.is_symbol()) d = window_expr(in.symbol, -1, s, false);  // ceil(X/s) = floor((X-1)/s)+1
    } else if (!kernel.empty()) {
      // Sizes from attributes in 128 bits: one that does not fit int64 is an error, not a wrap.
      const __int128 ek128 = static_cast<__int128>(kernel[i] - 1) * dil[i] + 1;
      const __int128 pad128 = auto_pad == "VALID" ? 0 : static_cast<__int128>(pads[i]) + pads[i + ns];
      if (!fits_size(ek128) || !fits_size(pad128) || (in.is_constant() && !fits_size(in.value + pad128)))
        return c.fail("kernel {}, dilation {} or pads on spatial axis {} are too large (sizes overflow "
                      "int64)", kernel[i], dil[i], i);
      const int64_t ek = static_cast<int64_t>(ek128);
      const int64_t total_pad = static_cast<int64_t>(pad128);
      if (in.is_constant()) {
        int64_t span = in.value + total_pad - ek;
        // ceil_mode: a shortfall under the stride leaves one window (nn_common.cc, resolve_window).
        if (span < 0 && !(ceil_mode && -span < s))
          return c.fail("window {} is larger than padded input {}", ek, in.value + total_pad);
        d = Dim::constant((ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1);
      } else if (in.is_symbol()) {
        d = window_expr(in.symbol, total_pad - ek, s, ceil_mode);
      }
    }
    out->push_back(d);
  }
  return Status();
}

std::vector<int64_t> kernel_from_weights(const std::optional<SymShape>& w) {
  std::vector<int64_t> k;
  if (!w || w->size() < 3) return k;
  for (size_t i = 2; i < w->size(); ++i) {
    if (!(*w)[i].is_constant()) return {};
    k.push_back((*w)[i].value);
  }
  return k;
}

// Conv-like: x input, w input, output dtype.
Status conv_shape(RuleContext& c, size_t ix, size_t iw, DType dtype) {
  const auto& x = c.shape(ix);
  const auto& w = c.shape(iw);
  if (!x) {
    c.set_output(0, dtype, w ? std::optional<SymShape>(unknown_dims(w->size())) : std::nullopt);
    return Status();
  }
  if (x->size() < 3) return c.fail("input X has rank {}, expected >= 3", x->size());
  if (w && w->size() != x->size()) return c.fail("weights rank {} differs from input rank {}", w->size(), x->size());
  std::vector<int64_t> kernel = c.node().attr_ints("kernel_shape");
  if (kernel.empty()) kernel = kernel_from_weights(w);
  SymShape out{(*x)[0], w ? (*w)[0] : Dim::unknown()};
  TJ_RETURN_IF_ERROR(window_dims(c, *x, kernel, false, &out));
  c.set_output(0, dtype, std::move(out));
  return Status();
}

Status conv(RuleContext& c) {
  TJ_RETURN_IF_ERROR(c.same_dtype(0, 1));
  return conv_shape(c, 0, 1, c.dtype(0));
}
Status conv_integer(RuleContext& c) { return conv_shape(c, 0, 1, DType::kInt32); }
Status qlinear_conv(RuleContext& c) { return conv_shape(c, 0, 3, c.dtype(7)); }

Status conv_transpose(RuleContext& c) {
  TJ_RETURN_IF_ERROR(c.same_dtype(0, 1));
  const auto& x = c.shape(0);
  const auto& w = c.shape(1);
  const ir::Node& n = c.node();
  if (!x) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  if (x->size() < 3) return c.fail("input X has rank {}, expected >= 3", x->size());
  size_t ns = x->size() - 2;
  int64_t group = n.attr_int("group", 1);
  Dim channels = w && w->size() >= 2 ? dim_mul((*w)[1], Dim::constant(group)) : Dim::unknown();
  SymShape out{(*x)[0], channels};
  std::vector<int64_t> output_shape = n.attr_ints("output_shape");
  if (!output_shape.empty()) {
    if (output_shape.size() < ns) return c.fail("output_shape has {} entries for {} spatial dims", output_shape.size(), ns);
    for (size_t i = output_shape.size() - ns; i < output_shape.size(); ++i) out.push_back(Dim::constant(output_shape[i]));
    c.set_output(0, c.dtype(0), std::move(out));
    return Status();
  }
  std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  if (kernel.empty()) kernel = kernel_from_weights(w);
  std::vector<int64_t> strides = n.attr_ints("strides", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> dil = n.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  std::vector<int64_t> opad = n.attr_ints("output_padding", std::vector<int64_t>(ns, 0));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (strides.size() != ns || dil.size() != ns || pads.size() != 2 * ns || opad.size() != ns ||
      (!kernel.empty() && kernel.size() != ns))
    return c.fail("kernel, strides, dilations, pads or output_padding do not match {} spatial dims", ns);
  for (size_t i = 0; i < ns; ++i) {
    const Dim& in = (*x)[i + 2];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out.push_back(dim_mul(in, Dim::constant(strides[i])));
    } else if (in.is_constant() && !kernel.empty()) {
      const __int128 total_pad = auto_pad == "VALID" ? 0 : static_cast<__int128>(pads[i]) + pads[i + ns];
      const __int128 v = static_cast<__int128>(strides[i]) * (in.value - 1) + opad[i] +
                         static_cast<__int128>(kernel[i] - 1) * dil[i] + 1 - total_pad;
      if (v > 0 && !fits_size(v))
        return c.fail("strides, dilations, pads, output_padding or kernel on spatial axis {} are too "
                      "large (sizes overflow int64)", i);
      out.push_back(v >= 0 ? Dim::constant(static_cast<int64_t>(v)) : Dim::unknown());
    } else {
      out.push_back(Dim::unknown());
    }
  }
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status pool(RuleContext& c) {
  std::vector<int64_t> kernel = c.node().attr_ints("kernel_shape");
  if (kernel.empty()) return c.fail("attribute 'kernel_shape' is required");
  // Checked whatever the input's shape (the kernels check the same at run time; nn_common.h,
  // resolve_window and check_pool_pads; ONNX Runtime too): a window of size 0, or one wholly in
  // the padding, has no value. Explicit pads are checked beside an auto_pad too (which the ONNX
  // spec forbids with pads, and ONNX Runtime refuses the same way; the kernels would ignore them).
  const std::vector<int64_t> pads = c.node().attr_ints("pads");
  const size_t ns = kernel.size();
  for (size_t i = 0; i < ns; ++i) {
    if (kernel[i] <= 0)
      return c.fail("kernel_shape must be positive, got {} on spatial axis {}", kernel[i], i);
    if (pads.size() == 2 * ns && (pads[i] >= kernel[i] || pads[i + ns] >= kernel[i]))
      return c.fail("pads {} and {} on spatial axis {} must be smaller than the kernel ({}): a "
                    "window wholly in the padding has no value",
                    pads[i], pads[i + ns], i, kernel[i]);
  }
  const auto& x = c.shape(0);
  if (!x) {
    c.set_output(0, c.dtype(0), std::nullopt);
    c.set_output(1, DType::kInt64, std::nullopt);
    return Status();
  }
  if (x->size() < 3) return c.fail("input X has rank {}, expected >= 3", x->size());
  bool ceil_mode = c.node().attr_int("ceil_mode", 0) != 0;
  SymShape out{(*x)[0], (*x)[1]};
  TJ_RETURN_IF_ERROR(window_dims(c, *x, kernel, ceil_mode, &out));
  c.set_output(0, c.dtype(0), out);
  c.set_output(1, DType::kInt64, std::move(out));
  return Status();
}

Status global_pool(RuleContext& c) {
  const auto& x = c.shape(0);
  if (!x) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  if (x->size() < 2) return c.fail("input X has rank {}, expected >= 2", x->size());
  SymShape out(x->size(), Dim::constant(1));
  out[0] = (*x)[0];
  out[1] = (*x)[1];
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status max_roi_pool(RuleContext& c) {
  const auto& x = c.shape(0);
  const auto& rois = c.shape(1);
  std::vector<int64_t> ps = c.node().attr_ints("pooled_shape");
  if (ps.size() != 2) return c.fail("attribute 'pooled_shape' must have 2 entries");
  c.set_output(0, c.dtype(0),
               SymShape{rois && !rois->empty() ? (*rois)[0] : Dim::unknown(),
                        x && x->size() > 1 ? (*x)[1] : Dim::unknown(), Dim::constant(ps[0]), Dim::constant(ps[1])});
  return Status();
}

Status max_unpool(RuleContext& c) {
  const auto& x = c.shape(0);
  if (c.has_input(2)) {
    if (const SymInts* k = c.known(2)) {
      SymShape s;
      for (const SymInt& e : *k) s.push_back(e.to_dim());
      c.set_output(0, c.dtype(0), std::move(s));
    } else {
      c.set_output(0, c.dtype(0), x ? std::optional<SymShape>(unknown_dims(x->size())) : std::nullopt);
    }
    return Status();
  }
  if (!x) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  if (x->size() < 3) return c.fail("input X has rank {}, expected >= 3", x->size());
  size_t ns = x->size() - 2;
  std::vector<int64_t> kernel = c.node().attr_ints("kernel_shape");
  std::vector<int64_t> strides = c.node().attr_ints("strides", std::vector<int64_t>(ns, 1));
  std::vector<int64_t> pads = c.node().attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  if (kernel.size() != ns || strides.size() != ns || pads.size() != 2 * ns)
    return c.fail("kernel_shape, strides or pads do not match {} spatial dims", ns);
  SymShape out{(*x)[0], (*x)[1]};
  for (size_t i = 0; i < ns; ++i) {
    const Dim& in = (*x)[i + 2];
    out.push_back(in.is_constant()
                      ? SymInt::constant((in.value - 1) * strides[i] - pads[i] - pads[i + ns] + kernel[i]).to_dim()
                      : Dim::unknown());
  }
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status quantize(RuleContext& c) {
  same_as_input(c, 0, 0, c.has_input(2) && c.dtype(2) != DType::kUndefined ? c.dtype(2) : DType::kUInt8);
  return Status();
}

Status dequantize(RuleContext& c) {
  same_as_input(c, 0, 0, DType::kFloat32);
  return Status();
}

Status dynamic_quantize(RuleContext& c) {
  same_as_input(c, 0, 0, DType::kUInt8);
  c.set_output(1, DType::kFloat32, SymShape{});
  c.set_output(2, DType::kUInt8, SymShape{});
  return Status();
}

}  // namespace

void register_nn_rules(RuleTable& t) {
  add_rule(t, OpKind::MatMul, matmul);
  add_rule(t, OpKind::MatMulInteger, matmul_integer);
  add_rule(t, OpKind::QLinearMatMul, qlinear_matmul);
  add_rule(t, OpKind::Gemm, gemm);
  add_rule(t, OpKind::Conv, conv);
  add_rule(t, OpKind::ConvInteger, conv_integer);
  add_rule(t, OpKind::QLinearConv, qlinear_conv);
  add_rule(t, OpKind::ConvTranspose, conv_transpose);
  for (OpKind op : {OpKind::MaxPool, OpKind::AveragePool, OpKind::LpPool}) add_rule(t, op, pool);
  for (OpKind op : {OpKind::GlobalAveragePool, OpKind::GlobalMaxPool, OpKind::GlobalLpPool})
    add_rule(t, op, global_pool);
  add_rule(t, OpKind::MaxRoiPool, max_roi_pool);
  add_rule(t, OpKind::MaxUnpool, max_unpool);
  add_rule(t, OpKind::QuantizeLinear, quantize);
  add_rule(t, OpKind::DequantizeLinear, dequantize);
  add_rule(t, OpKind::DynamicQuantizeLinear, dynamic_quantize);
}

}  // namespace tierjit::passes::shapes
