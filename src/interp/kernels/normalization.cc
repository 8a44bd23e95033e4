// Tier-0 kernels: LayerNormalization (opset 17), BatchNormalization (opsets 1..15, inference and
// training mode), InstanceNormalization (opsets 1, 6). Statistics (mean, population variance)
// are computed in double, two-pass; the affine step runs in float (double for float64) over
// contiguous rows so it vectorizes.
#include <algorithm>
#include <cmath>
#include <vector>

#include <immintrin.h>

#include "kernels/layer_norm_rows.h"
#include "interp/kernels/reduce_util.h"

namespace tierjit::interp {
namespace {

/// One thread's time per element of LayerNormalization (float32, statistics and affine step):
/// 10.4 us for 64x512 on AVX2 (tierjit_micro_bench
/// --benchmark_filter=reduction.layernorm_64x512/tier0, Zen 3).
constexpr double kLayerNormNsPerElement = 0.32;

/// Mean and population variance of the `rows` rows x[k * row_stride .. + len), two-pass in double.
template <class T>
void row_stats(const T* x, int64_t rows, int64_t row_stride, int64_t len, double& mean,
               double& var) {
  // 4 partial sums per pass: independent dependency chains (and a 4-wide vector) per row.
  auto sum_rows = [&](auto term) {
    double p[4] = {0, 0, 0, 0};
    for (int64_t k = 0; k < rows; ++k) {
      const T* row = x + k * row_stride;
      int64_t i = 0;
      for (; i + 4 <= len; i += 4)
        for (int u = 0; u < 4; ++u) p[u] += term(load_as<double>(row[i + u]));
      for (; i < len; ++i) p[0] += term(load_as<double>(row[i]));
    }
    return (p[0] + p[1]) + (p[2] + p[3]);
  };
  const double n = static_cast<double>(rows * len);
  mean = sum_rows([](double v) { return v; }) / n;
  const double mu = mean;
  var = sum_rows([mu](double v) { return (v - mu) * (v - mu); }) / n;
}

/// a * b + c as row_stats' second pass computes it: one fused multiply-add where the target has
/// FMA (GCC contracts that expression there), else a product and a sum.
inline double mul_add(double a, double b, double c) {
#ifdef __FMA__
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

/// Mean and population variance of each of the K contiguous rows x[k * len .. + len), each
/// bit-identical to row_stats(x + k * len, 1, 0, len, ...): every row keeps its own 4 partial
/// sums in the same order; interleaving K independent rows only hides the add latency.
template <int K, class T>
void rows_stats(const T* x, int64_t len, double* mean, double* var) {
  const double n = static_cast<double>(len);
  double p[K][4] = {};
  int64_t i = 0;
  for (; i + 4 <= len; i += 4)
    for (int k = 0; k < K; ++k)
      for (int u = 0; u < 4; ++u) p[k][u] += load_as<double>(x[k * len + i + u]);
  for (; i < len; ++i)
    for (int k = 0; k < K; ++k) p[k][0] += load_as<double>(x[k * len + i]);
  double mu[K];
  for (int k = 0; k < K; ++k) {
    mu[k] = ((p[k][0] + p[k][1]) + (p[k][2] + p[k][3])) / n;
    mean[k] = mu[k];
    for (int u = 0; u < 4; ++u) p[k][u] = 0;
  }
  for (i = 0; i + 4 <= len; i += 4)
    for (int k = 0; k < K; ++k)
      for (int u = 0; u < 4; ++u) {
        const double d = load_as<double>(x[k * len + i + u]) - mu[k];
        p[k][u] = mul_add(d, d, p[k][u]);
      }
  for (; i < len; ++i)
    for (int k = 0; k < K; ++k) {
      const double d = load_as<double>(x[k * len + i]) - mu[k];
      p[k][0] = mul_add(d, d, p[k][0]);
    }
  for (int k = 0; k < K; ++k) var[k] = ((p[k][0] + p[k][1]) + (p[k][2] + p[k][3])) / n;
}

#if defined(__AVX2__) && defined(__FMA__)
/// rows_stats<K, float> with the 4 partial sums of a row as the lanes of one AVX register (lane
/// u is p[u]: the same additions, in the same order).
template <int K>
void rows_stats_f32(const float* x, int64_t len, double* mean, double* var) {
  const double n = static_cast<double>(len);
  const int64_t body = len / 4 * 4;
  __m256d acc[K];
  double tail[K];
  auto finish = [&](int k) {
    alignas(32) double p[4];
    _mm256_store_pd(p, acc[k]);
    p[0] = tail[k];
    return ((p[0] + p[1]) + (p[2] + p[3])) / n;
  };
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) acc[k] = _mm256_setzero_pd();
  for (int64_t i = 0; i < body; i += 4)
#pragma GCC unroll 4
    for (int k = 0; k < K; ++k)
      acc[k] = _mm256_add_pd(acc[k], _mm256_cvtps_pd(_mm_loadu_ps(x + k * len + i)));
  __m256d mu[K];
  for (int k = 0; k < K; ++k) {
    alignas(32) double p[4];
    _mm256_store_pd(p, acc[k]);
    tail[k] = p[0];
    for (int64_t i = body; i < len; ++i) tail[k] += static_cast<double>(x[k * len + i]);
    mean[k] = finish(k);
    mu[k] = _mm256_set1_pd(mean[k]);
    acc[k] = _mm256_setzero_pd();
  }
  for (int64_t i = 0; i < body; i += 4)
#pragma GCC unroll 4
    for (int k = 0; k < K; ++k) {
      const __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + k * len + i)), mu[k]);
      acc[k] = _mm256_fmadd_pd(d, d, acc[k]);
    }
  for (int k = 0; k < K; ++k) {
    alignas(32) double p[4];
    _mm256_store_pd(p, acc[k]);
    tail[k] = p[0];
    for (int64_t i = body; i < len; ++i) {
      const double d = static_cast<double>(x[k * len + i]) - mean[k];
      tail[k] = std::fma(d, d, tail[k]);
    }
    var[k] = finish(k);
  }
}
#endif

/// Statistics of K contiguous rows (rows_stats), through the AVX2 path for float32.
template <int K, class T>
void block_stats(const T* x, int64_t len, double* mean, double* var) {
#if defined(__AVX2__) && defined(__FMA__)
  if constexpr (std::is_same_v<T, float>) {
    rows_stats_f32<K>(x, len, mean, var);
    return;
  }
#endif
  rows_stats<K>(x, len, mean, var);
}

/// y[i] = x[i] * a + b over one contiguous row.
template <class T>
void affine_row(const T* x, T* y, int64_t len, ComputeOf<T> a, ComputeOf<T> b) {
  using C = ComputeOf<T>;
  for (int64_t i = 0; i < len; ++i) y[i] = store_as<T>(load_as<C>(x[i]) * a + b);
}

/// Values of an operand that broadcasts unidirectionally to `shape`, as [outer or 1, R] compute
/// values where the normalized part is dims [axis, rank) (R elements): `values` points at them and
/// `outer_stride` is R, or 0 when the operand does not vary over dims [0, axis) (the common case).
/// An operand of dtype T == C that is already laid out that way ([1..1, shape[axis..]], e.g.
/// Scale [R] for normalization over the last axis) is used in place; otherwise it is expanded into
/// `storage` (same values: every element converted to C).
template <class T, class C>
Status operand_values(const KernelContext& ctx, const Tensor& t, const char* what,
                      const Shape& shape, int64_t axis, std::vector<C>& storage, const C*& values,
                      int64_t& outer_stride) {
  const int64_t rank = static_cast<int64_t>(shape.size()), tr = t.rank();
  if constexpr (std::is_same_v<T, C>) {
    bool in_place = t.dtype() == DTypeOf<T>::value && tr <= rank;
    for (int64_t d = 0; d < rank && in_place; ++d) {
      const int64_t td = d < rank - tr ? 1 : t.dim(d - (rank - tr));
      in_place = td == (d < axis ? 1 : shape[static_cast<size_t>(d)]);
    }
    if (in_place) {
      values = t.data<T>();
      outer_stride = 0;
      return Status();
    }
  }
  if (tr > rank || !broadcast_shapes(t.shape(), shape) ||
      *broadcast_shapes(t.shape(), shape) != shape)
    return ctx.fail("{} shape {} does not broadcast to input 0 shape {}", what,
                    shape_to_string(t.shape()), shape_to_string(shape));
  const std::vector<int64_t> st = broadcast_strides(t.shape(), shape);
  const std::vector<int64_t> od(shape.begin(), shape.begin() + axis),
      os(st.begin(), st.begin() + axis);
  const std::vector<int64_t> rd(shape.begin() + axis, shape.end()), rs(st.begin() + axis, st.end());
  std::vector<int64_t> ooff = offsets_of(od, os), roff = offsets_of(rd, rs);
  bool varies = false;
  for (int64_t v : ooff) varies |= v != 0;
  if (!varies) ooff.assign(1, 0);
  const std::vector<double> vals = read_doubles(t);
  const int64_t R = static_cast<int64_t>(roff.size());
  storage.resize(ooff.size() * roff.size());
  for (size_t o = 0; o < ooff.size(); ++o)
    for (int64_t r = 0; r < R; ++r) storage[o * R + r] = static_cast<C>(vals[ooff[o] + roff[r]]);
  values = storage.data();
  outer_stride = varies ? R : 0;
  return Status();
}

/// LayerNormalization: X float [d0..dn], Scale and optional B broadcastable to X; attributes
/// axis (default -1), epsilon (default 1e-5), stash_type (ignored: statistics always in double).
/// Outputs Y (X's shape and dtype), optional Mean and InvStdDev of shape [d0..d(axis-1), 1..1]
/// (float32, or the dtype the model declares). Errors: axis out of range, Scale/B not
/// broadcastable.
Status layer_norm_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* scale, ctx.required_input(1));
  const Tensor* bias = ctx.input(2);
  const ir::Node& node = ctx.node();
  if (x->rank() == 0) return ctx.fail("input 0 'X' must have rank >= 1");
  TJ_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, node.attr_int("axis", -1), x->rank()));
  const double eps = node.attr_float("epsilon", 1e-5f);
  const OriView v = ori_view(x->shape(), axis, x->rank());
  return dispatch_float(ctx, x->dtype(), "input 0 'X'", [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = ComputeOf<T>;
    std::vector<C> sc_storage, bi_storage;
    const C* sc = nullptr;
    const C* bi = nullptr;
    int64_t sc_stride = 0, bi_stride = 0;
    TJ_RETURN_IF_ERROR(operand_values<T>(ctx, *scale, "input 1 'Scale'", x->shape(), axis,
                                         sc_storage, sc, sc_stride));
    if (bias) {
      TJ_RETURN_IF_ERROR(operand_values<T>(ctx, *bias, "input 2 'B'", x->shape(), axis,
                                           bi_storage, bi, bi_stride));
    } else {
      bi_storage.assign(static_cast<size_t>(v.reduce), C{0});
      bi = bi_storage.data();
    }
    TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), x->shape()));
    Tensor* mean_t = nullptr;
    Tensor* inv_t = nullptr;
    for (size_t k = 1; k <= 2; ++k) {
      if (!ctx.wants_output(k)) continue;
      DType dt = node.output(k)->type().dtype;
      if (!dtype_is_float(dt))
        dt = x->dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
      Shape stat_shape = x->shape();
      for (int64_t d = axis; d < x->rank(); ++d) stat_shape[d] = 1;
      TJ_ASSIGN_OR_RETURN(Tensor * t, ctx.output(k, dt, std::move(stat_shape)));
      (k == 1 ? mean_t : inv_t) = t;
    }
    const T* xp = x->data<T>();
    T* yp = y->data<T>();
    const int64_t R = v.reduce;
    const bool stats = mean_t || inv_t;
    std::vector<double> means(stats ? static_cast<size_t>(v.outer) : 0),
        invs(stats ? static_cast<size_t>(v.outer) : 0);
    // Rows in blocks of kRowBlock: 8 rows by kernels::ln_rows::stats8 where the CPU has AVX-512F (float32),
    // else 4 at a time by block_stats (it interleaves them), the rest one by one; the affine step
    // 16 lanes wide there too. Every path gives each row the same bits (layer_norm_rows.h).
    constexpr int kRowBlock = kernels::ln_rows::kRows;
    bool wide = false;
    if constexpr (std::is_same_v<T, float>) wide = kernels::ln_rows::has_avx512();
    auto block = [&](int64_t o0) {
      double mean[kRowBlock], var[kRowBlock];
      const int64_t nr = std::min<int64_t>(kRowBlock, v.outer - o0);
      int64_t k0 = 0;
      if constexpr (std::is_same_v<T, float>) {
        if (wide && nr == kRowBlock) {
          kernels::ln_rows::stats8(xp + o0 * R, R, mean, var);
          k0 = kRowBlock;
        }
      }
      for (; k0 + 4 <= nr; k0 += 4) block_stats<4>(xp + (o0 + k0) * R, R, mean + k0, var + k0);
      for (; k0 < nr; ++k0) block_stats<1>(xp + (o0 + k0) * R, R, mean + k0, var + k0);
      for (int64_t k = 0; k < nr; ++k) {
        const int64_t o = o0 + k;
        const double inv = 1.0 / std::sqrt(var[k] + eps);
        if (stats) {
          means[o] = mean[k];
          invs[o] = inv;
        }
        const C* s = sc + o * sc_stride;
        const C* b = bi + o * bi_stride;
        const T* xr = xp + o * R;
        T* yr = yp + o * R;
        const C cm = static_cast<C>(mean[k]), ci = static_cast<C>(inv);
        if constexpr (std::is_same_v<T, float>) {
          if (wide) {
            kernels::ln_rows::normalize_row(xr, yr, R, cm, ci, s, b);
            continue;
          }
        }
#pragma omp simd
        for (int64_t r = 0; r < R; ++r)
          yr[r] = store_as<T>((load_as<C>(xr[r]) - cm) * ci * s[r] + b[r]);
      }
    };
    const int64_t blocks = (v.outer + kRowBlock - 1) / kRowBlock;
    const int threads = ctx.options().intra_op_threads;
    const int team = kernels::worth_parallel(threads, v.outer * R, kLayerNormNsPerElement) ? threads : 1;
    kernels::parallel_for_stealing(team, blocks, [&](int64_t j) { block(j * kRowBlock); });
    auto write_stats = [](Tensor* t, const std::vector<double>& vals) {
      if (!t) return;
      for (size_t i = 0; i < vals.size(); ++i) {
        switch (t->dtype()) {
          case DType::kFloat64:
            t->data<double>()[i] = vals[i];
            break;
          case DType::kFloat16:
            t->data<Half>()[i] = store_as<Half>(vals[i]);
            break;
          case DType::kBFloat16:
            t->data<BFloat16>()[i] = store_as<BFloat16>(vals[i]);
            break;
          default:
            t->data<float>()[i] = static_cast<float>(vals[i]);
            break;
        }
      }
    };
    write_stats(mean_t, means);
    write_stats(inv_t, invs);
    return Status();
  });
}

/// Reads a per-channel operand (numel must equal `channels`) as doubles.
Expected<std::vector<double>> channel_operand(const KernelContext& ctx, size_t i, const char* name,
                                              int64_t channels) {
  TJ_ASSIGN_OR_RETURN(const Tensor* t, ctx.required_input(i));
  if (t->numel() != channels || t->rank() == 0)
    return ctx.fail("input {} '{}' must have {} elements (one per channel), got shape {}", i, name,
                    channels, shape_to_string(t->shape()));
  if (!dtype_is_float(t->dtype()))
    return ctx.fail("input {} '{}' must be float, got {}", i, name, dtype_name(t->dtype()));
  return read_doubles(*t);
}

/// Writes doubles into output k (shape [n], dtype dt).
Status write_channel_output(KernelContext& ctx, size_t k, DType dt,
                            const std::vector<double>& vals) {
  TJ_ASSIGN_OR_RETURN(Tensor * t, ctx.output(k, dt, Shape{static_cast<int64_t>(vals.size())}));
  return dispatch_float(ctx, dt, "statistics output", [&](auto tag) -> Status {
    using U = decltype(tag);
    for (size_t i = 0; i < vals.size(); ++i) t->data<U>()[i] = store_as<U>(vals[i]);
    return Status();
  });
}

/// BatchNormalization: X float [N, C, D1..Dk]; scale, B, input_mean, input_var [C] (or, before
/// opset 9 with spatial = 0, C*D1*..*Dk elements: per-activation statistics); epsilon (1e-5),
/// momentum (0.9). Inference: Y = (X - mean) / sqrt(var + eps) * scale + B. Training
/// (training_mode = 1 from opset 14; before 14 when more outputs are present and is_test is 0):
/// batch mean/population variance normalize Y; outputs running_mean = mean*m + batch*(1-m),
/// running_var likewise, and before opset 14 saved_mean, saved_var (the batch statistics).
/// is_test, spatial and consumed_inputs otherwise ignored. Errors: operand sizes, rank < 2.
Status batch_norm_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const int threads = ctx.options().intra_op_threads;
  const ir::Node& node = ctx.node();
  if (x->rank() < 2)
    return ctx.fail("input 0 'X' must have rank >= 2 ([N, C, ...]), got shape {}",
                    shape_to_string(x->shape()));
  const int opset = node.opset();
  const double eps = node.attr_float("epsilon", 1e-5f);
  const double momentum = node.attr_float("momentum", 0.9f);
  int64_t N = x->dim(0), C = x->dim(1), S = x->numel() / std::max<int64_t>(1, N * C);
  if (N * C == 0) S = 0;
  const Tensor* scale_t = ctx.input(1);
  if (opset < 9 && node.attr_int("spatial", 1) == 0 && scale_t && scale_t->numel() == C * S &&
      S > 1) {
    C *= S;  // per-activation statistics: view X as [N, C*D, 1]
    S = 1;
  }
  TJ_ASSIGN_OR_RETURN(auto scale, channel_operand(ctx, 1, "scale", C));
  TJ_ASSIGN_OR_RETURN(auto bias, channel_operand(ctx, 2, "B", C));
  TJ_ASSIGN_OR_RETURN(auto mean, channel_operand(ctx, 3, "input_mean", C));
  TJ_ASSIGN_OR_RETURN(auto var, channel_operand(ctx, 4, "input_var", C));
  bool extra_outputs = false;
  for (size_t k = 1; k < ctx.num_outputs(); ++k) extra_outputs |= ctx.wants_output(k);
  const bool training = opset >= 14
                            ? node.attr_int("training_mode", 0) != 0
                            : extra_outputs && (opset >= 7 || node.attr_int("is_test", 0) == 0);
  return dispatch_float(ctx, x->dtype(), "input 0 'X'", [&](auto tag) -> Status {
    using T = decltype(tag);
    using CT = ComputeOf<T>;
    const T* xp = x->data<T>();
    std::vector<double> bmean(mean), bvar(var);
    if (training && N * S > 0) {
      kernels::parallel_for_if(x->numel() > kParallelWork, threads, C, [&](int64_t c) {
        row_stats(xp + c * S, N, C * S, S, bmean[c], bvar[c]);
      });
    }
    TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), x->shape()));
    T* yp = y->data<T>();
    kernels::parallel_for_if(x->numel() > kParallelWork, threads, N * C, [&](int64_t nc) {
      const int64_t c = nc % C;
      const double a = scale[c] / std::sqrt(bvar[c] + eps);
      affine_row(xp + nc * S, yp + nc * S, S, static_cast<CT>(a),
                 static_cast<CT>(bias[c] - bmean[c] * a));
    });
    if (!extra_outputs) return Status();
    std::vector<double> rmean(mean), rvar(var);
    if (training) {
      for (int64_t c = 0; c < C; ++c) {
        rmean[c] = mean[c] * momentum + bmean[c] * (1 - momentum);
        rvar[c] = var[c] * momentum + bvar[c] * (1 - momentum);
      }
    }
    const DType stat_dt = ctx.input(3)->dtype();
    const std::vector<double>* outs[4] = {&rmean, &rvar, &bmean, &bvar};
    for (size_t k = 1; k < ctx.num_outputs() && k <= 4; ++k)
      if (ctx.wants_output(k))
        TJ_RETURN_IF_ERROR(write_channel_output(ctx, k, stat_dt, *outs[k - 1]));
    return Status();
  });
}

/// InstanceNormalization: X float [N, C, D1..Dk], scale and B [C], epsilon (default 1e-5).
/// Y = (X - mean_nc) / sqrt(var_nc + eps) * scale[c] + B[c], statistics over D1..Dk.
Status instance_norm_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const int threads = ctx.options().intra_op_threads;
  if (x->rank() < 2)
    return ctx.fail("input 0 'input' must have rank >= 2 ([N, C, ...]), got shape {}",
                    shape_to_string(x->shape()));
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  const int64_t N = x->dim(0), C = x->dim(1), S = ori_view(x->shape(), 0, 2).inner;
  TJ_ASSIGN_OR_RETURN(auto scale, channel_operand(ctx, 1, "scale", C));
  TJ_ASSIGN_OR_RETURN(auto bias, channel_operand(ctx, 2, "B", C));
  return dispatch_float(ctx, x->dtype(), "input 0 'input'", [&](auto tag) -> Status {
    using T = decltype(tag);
    using CT = ComputeOf<T>;
    TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x->dtype(), x->shape()));
    const T* xp = x->data<T>();
    T* yp = y->data<T>();
    if (S == 0) return Status();
    kernels::parallel_for_if(x->numel() > kParallelWork, threads, N * C, [&](int64_t nc) {
      const int64_t c = nc % C;
      double m, v;
      row_stats(xp + nc * S, 1, 0, S, m, v);
      const double a = scale[c] / std::sqrt(v + eps);
      affine_row(xp + nc * S, yp + nc * S, S, static_cast<CT>(a), static_cast<CT>(bias[c] - m * a));
    });
    return Status();
  });
}

}  // namespace

void register_normalization_ops(KernelRegistry& r) {
  r.add(ir::OpKind::LayerNormalization, layer_norm_kernel);
  r.add(ir::OpKind::BatchNormalization, batch_norm_kernel);
  r.add(ir::OpKind::InstanceNormalization, instance_norm_kernel);
  register_local_normalization_ops(r);
}

}  // namespace tierjit::interp
