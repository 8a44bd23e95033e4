// Tier-0 kernels: MatMul (numpy semantics), Gemm, MatMulInteger, QLinearMatMul.
// float32 (and float16/bfloat16 through float32) runs on oneDNN (matmul primitives, sgemm for
// Gemm's transA/alpha/full-C forms); other dtypes on plain loops.
// Source: ONNX operator spec, MatMul 1/9/13, Gemm 1/6/7/9/11/13, MatMulInteger 10, QLinearMatMul 10.
#include <algorithm>

#include "interp/kernels/dnnl_util.h"
#include "interp/kernels/nn_common.h"
#include "interp/kernels/nn_kernels.h"
#include "kernels/packed_gemm.h"

namespace tierjit::interp::nn {
namespace {

// Batched matrix product layout after numpy promotion: out = batch x [M, N]; a_off/b_off hold
// the element offset of each batch's A [M, K] and B [K, N] matrix.
struct MatMulPlan {
  Shape out;
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> a_off, b_off;
  bool fold_batch = false;  // B is shared and A's batches are contiguous: one [batch*M, K] GEMM
};

Expected<MatMulPlan> plan_matmul(const KernelContext& ctx, const Shape& sa, const Shape& sb) {
  if (sa.empty() || sb.empty())
    return ctx.fail("MatMul operands must have rank >= 1, got {} and {}", shape_to_string(sa),
                    shape_to_string(sb));
  const size_t ra = sa.size(), rb = sb.size();
  if (ra >= 2 && (rb == 2 || (rb == ra && std::equal(sa.begin(), sa.end() - 2, sb.begin())))) {
    // B a matrix (weights), or A and B with equal batch dims (attention): the plan the general
    // path below builds, without its broadcasting temporaries.
    MatMulPlan p;
    p.m = sa[ra - 2];
    p.k = sa[ra - 1];
    p.n = sb[rb - 1];
    if (sb[rb - 2] != p.k)
      return ctx.fail("inner dims do not match: A {} and B {}", shape_to_string(sa),
                      shape_to_string(sb));
    p.out = sa;
    p.out.back() = p.n;
    int64_t nb = 1;
    for (size_t d = 0; d + 2 < ra; ++d) nb *= sa[d];
    p.a_off.resize(static_cast<size_t>(nb));
    p.b_off.resize(static_cast<size_t>(nb));
    for (int64_t t = 0; t < nb; ++t) {
      p.a_off[t] = t * p.m * p.k;
      p.b_off[t] = rb == 2 ? 0 : t * p.k * p.n;
    }
    p.fold_batch = nb > 1 && rb == 2;
    return p;
  }
  Shape a = sa, b = sb;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  if (b[b.size() - 2] != p.k)
    return ctx.fail("inner dims do not match: A {} and B {}", shape_to_string(sa), shape_to_string(sb));
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  auto batch = broadcast_shapes(ba, bb);
  if (!batch)
    return ctx.fail("batch dims of A {} and B {} do not broadcast", shape_to_string(sa),
                    shape_to_string(sb));
  p.out = *batch;
  if (!a_vec) p.out.push_back(p.m);
  if (!b_vec) p.out.push_back(p.n);
  const int64_t nb = shape_numel(*batch);
  std::vector<int64_t> as = broadcast_strides(ba, *batch), bs = broadcast_strides(bb, *batch);
  p.a_off.resize(static_cast<size_t>(nb));
  p.b_off.resize(static_cast<size_t>(nb));
  std::vector<int64_t> idx(batch->size(), 0);
  for (int64_t t = 0; t < nb; ++t) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < idx.size(); ++d) { ao += idx[d] * as[d]; bo += idx[d] * bs[d]; }
    p.a_off[t] = ao * p.m * p.k;
    p.b_off[t] = bo * p.k * p.n;
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < (*batch)[d]) break;
      idx[d] = 0;
    }
  }
  p.fold_batch = nb > 1 && shape_numel(bb) == 1 && shape_numel(ba) == nb;
  return p;
}

// Multiply-adds from which a product with equal batch dims that packed panels do not take (they
// are disabled, or the AVX2 code would run too many rows) runs as one batched oneDNN primitive
// rather than a product per batch (sgemm below kPrimitiveMinMacs each).
constexpr int64_t kBatchedMinMacs = int64_t{1} << 16;

// float32 product over the plan (inputs contiguous float buffers) through oneDNN matmul
// primitives; `constant_b` is B when it is a graph constant (kept packed across calls).
Status run_f32(const KernelContext& ctx, const MatMulPlan& p, const float* a, const float* b,
               const Tensor* constant_b, float* y) {
  const int threads = ctx.options().intra_op_threads;
  if (p.k == 0) {  // an empty sum: zeros (oneDNN's matmul rejects K = 0; sgemm fills them)
    set_dnnl_threads(threads);
    return sgemm(false, false, p.m * static_cast<int64_t>(p.a_off.size()), p.n, 0, 1.f, a, 1, b,
                 p.n, 0.f, y, p.n);
  }
  if (p.fold_batch || p.a_off.size() == 1) {
    const int64_t rows = p.m * static_cast<int64_t>(p.a_off.size());
    return dnnl_matmul_f32({rows, p.n, p.k, false}, a, b, constant_b, nullptr, y, threads);
  }
  const int64_t nb = static_cast<int64_t>(p.a_off.size());
  const int64_t macs = nb * p.m * p.n * p.k;
  bool regular = true;
  for (int64_t t = 0; regular && t < nb; ++t)
    regular = p.a_off[t] == t * p.m * p.k && p.b_off[t] == t * p.k * p.n;
  if (regular) {  // equal batch dims (attention): all the products in one call
    // Packed panels first (packed_gemm.h: no kernel generated per shape; oneDNN's batched
    // primitive cost bert_tiny ~18 ms on its first call and more on each new shape).
    if (kernels::packed_batched_matmul_f32(nb, p.m, p.n, p.k, a, b, y, parallel_threads(macs, threads)))
      return Status();
    if (macs >= kBatchedMinMacs) return dnnl_batched_matmul_f32(nb, {p.m, p.n, p.k, false}, a, b, y, threads);
  }
  for (size_t t = 0; t < p.a_off.size(); ++t) {
    // Per-batch B slices are not cached as constants (each slice would be its own entry).
    TJ_RETURN_IF_ERROR(dnnl_matmul_f32({p.m, p.n, p.k, false}, a + p.a_off[t], b + p.b_off[t],
                                       nullptr, nullptr, y + static_cast<int64_t>(t) * p.m * p.n,
                                       threads));
  }
  return Status();
}

template <class T>
void run_ref(const MatMulPlan& p, const T* a, const T* b, T* y) {
  for (size_t t = 0; t < p.a_off.size(); ++t)
    ref_gemm<T>(p.m, p.n, p.k, a + p.a_off[t], p.k, b + p.b_off[t], p.n,
                y + static_cast<int64_t>(t) * p.m * p.n, p.n);
}

Status matmul_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* a, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* b, ctx.required_input(1));
  if (a->dtype() != b->dtype())
    return ctx.fail("A is {} but B is {}", dtype_name(a->dtype()), dtype_name(b->dtype()));
  TJ_ASSIGN_OR_RETURN(MatMulPlan p, plan_matmul(ctx, a->shape(), b->shape()));
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, a->dtype(), p.out));
  if (y->numel() == 0) return Status();
  switch (a->dtype()) {
    case DType::kFloat32:
      return run_f32(ctx, p, a->data<float>(), b->data<float>(), graph_constant(ctx, 1, b),
                     y->data<float>());
    case DType::kFloat16:
    case DType::kBFloat16: {
      std::vector<float> fa = to_f32(*a), fb = to_f32(*b), fy(static_cast<size_t>(y->numel()));
      TJ_RETURN_IF_ERROR(run_f32(ctx, p, fa.data(), fb.data(), nullptr, fy.data()));
      from_f32(fy, *y);
      return Status();
    }
    case DType::kFloat64: run_ref(p, a->data<double>(), b->data<double>(), y->data<double>()); break;
    case DType::kInt32: run_ref(p, a->data<int32_t>(), b->data<int32_t>(), y->data<int32_t>()); break;
    case DType::kInt64: run_ref(p, a->data<int64_t>(), b->data<int64_t>(), y->data<int64_t>()); break;
    case DType::kUInt32: run_ref(p, a->data<uint32_t>(), b->data<uint32_t>(), y->data<uint32_t>()); break;
    case DType::kUInt64: run_ref(p, a->data<uint64_t>(), b->data<uint64_t>(), y->data<uint64_t>()); break;
    default: return ctx.unsupported_here("MatMul on {} is not supported", dtype_name(a->dtype()));
  }
  return Status();
}

// ---- Gemm ----

template <class T>
void gemm_ref_typed(int64_t m, int64_t n, int64_t k, bool ta, bool tb, double alpha, double beta,
                    const T* a, const T* b, const Tensor* c, T* y) {
  // Materialize op(A), op(B) row-major, then accumulate.
  std::vector<T> at, bt;
  if (ta) {
    at.resize(static_cast<size_t>(m * k));
    for (int64_t i = 0; i < m; ++i) for (int64_t p = 0; p < k; ++p) at[i * k + p] = a[p * m + i];
    a = at.data();
  }
  if (tb) {
    bt.resize(static_cast<size_t>(k * n));
    for (int64_t p = 0; p < k; ++p) for (int64_t j = 0; j < n; ++j) bt[p * n + j] = b[j * k + p];
    b = bt.data();
  }
  std::vector<T> acc(static_cast<size_t>(m * n));
  ref_gemm<T>(m, n, k, a, k, b, n, acc.data(), n);
  std::vector<int64_t> cs = c ? broadcast_strides(c->shape(), {m, n}) : std::vector<int64_t>{0, 0};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double v = alpha * static_cast<double>(acc[i * n + j]);
      if (c && beta != 0) v += beta * static_cast<double>(c->data<T>()[i * cs[0] + j * cs[1]]);
      y[i * n + j] = static_cast<T>(v);
    }
}

Status gemm_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* a, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* b, ctx.required_input(1));
  const Tensor* c = ctx.input(2);
  const ir::Node& node = ctx.node();
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.f), beta = node.attr_float("beta", 1.f);
  if (a->rank() != 2 || b->rank() != 2)
    return ctx.fail("A and B must be 2-D, got {} and {}", shape_to_string(a->shape()),
                    shape_to_string(b->shape()));
  if (a->dtype() != b->dtype() || (c && c->dtype() != a->dtype()))
    return ctx.fail("A, B and C must share one dtype, got {}, {}{}{}", dtype_name(a->dtype()),
                    dtype_name(b->dtype()), c ? " and " : "", c ? dtype_name(c->dtype()) : "");
  const int64_t m = ta ? a->dim(1) : a->dim(0), k = ta ? a->dim(0) : a->dim(1);
  const int64_t kb = tb ? b->dim(1) : b->dim(0), n = tb ? b->dim(0) : b->dim(1);
  if (k != kb)
    return ctx.fail("inner dims do not match: op(A) is [{}, {}], op(B) is [{}, {}]", m, k, kb, n);
  if (c) {
    if (c->rank() > 2 || !broadcast_shapes(c->shape(), {m, n}) ||
        *broadcast_shapes(c->shape(), {m, n}) != Shape{m, n})
      return ctx.fail("C of shape {} does not broadcast to [{}, {}]", shape_to_string(c->shape()), m, n);
  }
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, a->dtype(), {m, n}));
  if (m == 0 || n == 0) return Status();
  const bool use_c = c && beta != 0.f;
  // C as a bias row: absent (or scaled by 0), or [N] / [1, N] added once (beta = 1).
  const bool c_is_bias_row = !use_c || (beta == 1.f && c->numel() == n &&
                                        (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1)));
  auto run_float = [&](const float* fa, const float* fb, const float* fc, const Tensor* constant_b,
                       float* fy) -> Status {
    // The common layer shape (op(A) = A, alpha = 1, C a bias row) runs as one oneDNN matmul
    // primitive with the bias fused and constant weights kept packed; the rest through sgemm.
    if (!ta && alpha == 1.f && k > 0 && c_is_bias_row)
      return dnnl_matmul_f32({m, n, k, tb}, fa, fb, constant_b, use_c ? fc : nullptr, fy,
                             ctx.options().intra_op_threads);
    if (use_c) {
      std::vector<int64_t> cs = broadcast_strides(c->shape(), {m, n});
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) fy[i * n + j] = fc[i * cs[0] + j * cs[1]];
    }
    set_dnnl_threads(ctx.options().intra_op_threads);
    TJ_RETURN_IF_ERROR(sgemm(ta, tb, m, n, k, alpha, fa, a->dim(1), fb, b->dim(1),
                             use_c ? beta : 0.f, fy, n));
    return Status();
  };
  switch (a->dtype()) {
    case DType::kFloat32:
      return run_float(a->data<float>(), b->data<float>(), c ? c->data<float>() : nullptr,
                       graph_constant(ctx, 1, b), y->data<float>());
    case DType::kFloat16:
    case DType::kBFloat16: {
      std::vector<float> fa = to_f32(*a), fb = to_f32(*b), fc = c ? to_f32(*c) : std::vector<float>();
      std::vector<float> fy(static_cast<size_t>(m * n));
      TJ_RETURN_IF_ERROR(run_float(fa.data(), fb.data(), fc.data(), nullptr, fy.data()));
      from_f32(fy, *y);
      return Status();
    }
    case DType::kFloat64:
      gemm_ref_typed(m, n, k, ta, tb, alpha, beta, a->data<double>(), b->data<double>(), c, y->data<double>());
      break;
    case DType::kInt32:
      gemm_ref_typed(m, n, k, ta, tb, alpha, beta, a->data<int32_t>(), b->data<int32_t>(), c, y->data<int32_t>());
      break;
    case DType::kInt64:
      gemm_ref_typed(m, n, k, ta, tb, alpha, beta, a->data<int64_t>(), b->data<int64_t>(), c, y->data<int64_t>());
      break;
    case DType::kUInt32:
      gemm_ref_typed(m, n, k, ta, tb, alpha, beta, a->data<uint32_t>(), b->data<uint32_t>(), c, y->data<uint32_t>());
      break;
    case DType::kUInt64:
      gemm_ref_typed(m, n, k, ta, tb, alpha, beta, a->data<uint64_t>(), b->data<uint64_t>(), c, y->data<uint64_t>());
      break;
    default: return ctx.unsupported_here("Gemm on {} is not supported", dtype_name(a->dtype()));
  }
  return Status();
}

// ---- quantized ----

bool is_8bit(DType t) { return t == DType::kUInt8 || t == DType::kInt8; }

// A - a_zp (per tensor, or per row M for 2-D+ A), B - b_zp (per tensor, or per column N) as int32,
// then the batched integer product. Returns the int32 result of shape plan.out.
Expected<std::vector<int32_t>> integer_product(const KernelContext& ctx, const Tensor& a,
                                               const Tensor* a_zp, const Tensor& b,
                                               const Tensor* b_zp, MatMulPlan& plan) {
  if (!is_8bit(a.dtype()) || !is_8bit(b.dtype()))
    return ctx.fail("A and B must be uint8 or int8, got {} and {}", dtype_name(a.dtype()),
                    dtype_name(b.dtype()));
  if (a_zp && a_zp->dtype() != a.dtype())
    return ctx.fail("a_zero_point dtype {} differs from A's {}", dtype_name(a_zp->dtype()),
                    dtype_name(a.dtype()));
  if (b_zp && b_zp->dtype() != b.dtype())
    return ctx.fail("b_zero_point dtype {} differs from B's {}", dtype_name(b_zp->dtype()),
                    dtype_name(b.dtype()));
  TJ_ASSIGN_OR_RETURN(plan, plan_matmul(ctx, a.shape(), b.shape()));
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> azp, read_zero_point(ctx, a_zp, plan.m, "a_zero_point"));
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> bzp, read_zero_point(ctx, b_zp, plan.n, "b_zero_point"));
  std::vector<int32_t> ai = read_int32s(a), bi = read_int32s(b);
  const int64_t k = plan.k;
  for (size_t i = 0; i < ai.size(); ++i) ai[i] -= azp[(static_cast<int64_t>(i) / k) % plan.m];
  for (size_t i = 0; i < bi.size(); ++i) bi[i] -= bzp[static_cast<int64_t>(i) % plan.n];
  std::vector<int32_t> y(static_cast<size_t>(shape_numel(plan.out)));
  run_ref(plan, ai.data(), bi.data(), y.data());
  return y;
}

Status matmul_integer_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* a, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* b, ctx.required_input(1));
  MatMulPlan plan;
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> acc,
                      integer_product(ctx, *a, ctx.input(2), *b, ctx.input(3), plan));
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, DType::kInt32, plan.out));
  std::copy(acc.begin(), acc.end(), y->data<int32_t>());
  return Status();
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
// y = saturate(round(acc * a_scale[row] * b_scale[col] / y_scale) + y_zp).
Status qlinear_matmul_kernel(KernelContext& ctx) {
  for (size_t i = 0; i < 8; ++i)
    if (i != 2 && i != 5 && i != 7 && !ctx.input(i)) return ctx.fail("input {} is required", i);
  const Tensor& a = *ctx.input(0);
  const Tensor& b = *ctx.input(3);
  MatMulPlan plan;
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> acc,
                      integer_product(ctx, a, ctx.input(2), b, ctx.input(5), plan));
  TJ_ASSIGN_OR_RETURN(std::vector<float> as, read_scale(ctx, ctx.input(1), plan.m, "a_scale"));
  TJ_ASSIGN_OR_RETURN(std::vector<float> bs, read_scale(ctx, ctx.input(4), plan.n, "b_scale"));
  TJ_ASSIGN_OR_RETURN(std::vector<float> ys, read_scale(ctx, ctx.input(6), 1, "y_scale"));
  const Tensor* yzp_t = ctx.input(7);
  const DType out_t = yzp_t ? yzp_t->dtype() : a.dtype();
  if (!is_8bit(out_t)) return ctx.fail("y_zero_point must be uint8 or int8, got {}", dtype_name(out_t));
  TJ_ASSIGN_OR_RETURN(std::vector<int32_t> yzp, read_zero_point(ctx, yzp_t, 1, "y_zero_point"));
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, out_t, plan.out));
  int32_t lo, hi;
  quant_range(out_t, lo, hi);
  const int64_t mn = plan.m * plan.n;
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const int64_t row = (i % mn) / plan.n, col = i % plan.n;
    const float scale = as[row] * bs[col] / ys[0];
    const int32_t q = round_saturate(static_cast<float>(acc[i]) * scale + static_cast<float>(yzp[0]), lo, hi);
    if (out_t == DType::kUInt8) y->data<uint8_t>()[i] = static_cast<uint8_t>(q);
    else y->data<int8_t>()[i] = static_cast<int8_t>(q);
  }
  return Status();
}

}  // namespace

void register_matmul_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::MatMul, matmul_kernel);
  r.add(ir::OpKind::Gemm, gemm_kernel);
  r.add(ir::OpKind::MatMulInteger, matmul_integer_kernel);
  r.add(ir::OpKind::QLinearMatMul, qlinear_matmul_kernel);
}

}  // namespace tierjit::interp::nn
