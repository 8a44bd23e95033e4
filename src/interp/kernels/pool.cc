// Tier-0 kernels: MaxPool (with Indices, storage_order, dilations, ceil_mode), AveragePool
// (count_include_pad, ceil_mode) and LpPool, any spatial rank >= 1 (Global*Pool live in reductions).
// Windows are precomputed per axis (the in-bounds input coordinates of each output position).
// Source: ONNX operator spec, MaxPool 1/8/10/11/12, AveragePool 1/7/10/11, LpPool 1/2/11.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "interp/kernels/nn_common.h"
#include "interp/kernels/nn_kernels.h"
#include "kernels/parallel_for.h"

namespace tierjit::interp::nn {
namespace {

// MaxPool's fold of tap v into the running maximum a: v when v > a or v is NaN, so a NaN
// anywhere in a window gives NaN (as ReduceMax / GlobalMaxPool here, numpy's max in the ONNX
// reference implementation, and PyTorch); with Indices, the first NaN's position.
template <class C>
bool takes_max(C v, C a) {
  if constexpr (std::is_floating_point_v<C>) return v > a || (std::isnan(v) && !std::isnan(a));
  else return v > a;
}
template <class C>
C fold_max(C v, C a) { return takes_max(v, a) ? v : a; }

// In-bounds input coordinates of the window of every output position along one axis.
struct AxisTaps {
  std::vector<int64_t> begin;   // [out + 1] offsets into coords
  std::vector<int64_t> coords;  // input coordinates
  std::vector<int64_t> padded;  // taps inside [-pad_begin, in + pad_end) (count_include_pad)
};

std::vector<AxisTaps> make_taps(const Window& w, const std::vector<int64_t>& in) {
  std::vector<AxisTaps> ax(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    AxisTaps& a = ax[d];
    a.begin.reserve(static_cast<size_t>(w.out[d] + 1));  // one allocation per vector
    a.coords.reserve(static_cast<size_t>(w.out[d] * w.kernel[d]));
    a.padded.reserve(static_cast<size_t>(w.out[d]));
    a.begin.push_back(0);
    for (int64_t o = 0; o < w.out[d]; ++o) {
      const int64_t start = o * w.strides[d] - w.pad_begin[d];
      int64_t padded = 0;
      for (int64_t k = 0; k < w.kernel[d]; ++k) {
        const int64_t c = start + k * w.dilations[d];
        if (c >= 0 && c < in[d]) a.coords.push_back(c);
        if (c < in[d] + w.pad_end[d]) ++padded;
      }
      a.begin.push_back(static_cast<int64_t>(a.coords.size()));
      a.padded.push_back(padded);
    }
  }
  return ax;
}

// Calls f(offset, axis_coords...) via f(offset) for every in-bounds tap of the window at oidx;
// offset is the row-major spatial offset; col (column-major offset) is tracked for Indices.
template <class F>
void visit_window(const std::vector<AxisTaps>& ax, const std::vector<int64_t>& oidx,
                  const std::vector<int64_t>& rs, const std::vector<int64_t>& cs, size_t d,
                  int64_t off, int64_t col, F& f) {
  const AxisTaps& a = ax[d];
  for (int64_t t = a.begin[oidx[d]]; t < a.begin[oidx[d] + 1]; ++t) {
    const int64_t o2 = off + a.coords[t] * rs[d], c2 = col + a.coords[t] * cs[d];
    if (d + 1 == ax.size()) f(o2, c2);
    else visit_window(ax, oidx, rs, cs, d + 1, o2, c2, f);
  }
}

enum class PoolKind { kMax, kAverage, kLp };

struct PoolSetup {
  Window win;
  std::vector<int64_t> in_spatial;
  int64_t planes = 0;  // N * C
  Shape out_shape;
};

Expected<PoolSetup> setup_pool(const KernelContext& ctx, const Tensor& x, bool ceil_ok,
                               bool dilations_ok) {
  if (x.rank() < 3)
    return ctx.fail("input X must have rank >= 3 [N, C, spatial...], got {}", shape_to_string(x.shape()));
  PoolSetup s;
  s.in_spatial.assign(x.shape().begin() + 2, x.shape().end());
  s.planes = x.dim(0) * x.dim(1);
  if (!ctx.node().has_attr("kernel_shape")) return ctx.fail("attribute kernel_shape is required");
  const bool ceil_mode = ceil_ok && ctx.node().attr_int("ceil_mode", 0) != 0;
  TJ_ASSIGN_OR_RETURN(s.win, resolve_window(ctx, s.in_spatial, ctx.node().attr_ints("kernel_shape"),
                                            ceil_mode, dilations_ok));
  TJ_RETURN_IF_ERROR(check_pool_pads(ctx, s.win));
  s.out_shape = {x.dim(0), x.dim(1)};
  s.out_shape.insert(s.out_shape.end(), s.win.out.begin(), s.win.out.end());
  return s;
}

// ---- float32 window rows of width 2 or 3, stride 1 or 2, no dilation (AVX2) ----------------------
// One output row's interior columns (whole window row in bounds) computed in registers: for each
// group of 8 (or 4) adjacent outputs, the taps of every window row are loaded as vectors and
// folded in the row-major tap order of the scalar loop (max: fold_max, a NaN tap anywhere in the
// window gives NaN; average: 0 + t0 + t1 + ... then / n), so results are bit for bit those of the
// per-column loop. A partial last group is redone as an overlapping full group
// (it rewrites equal values).

struct Lanes8 {
  using R = __m256;
  static constexpr int64_t kLanes = 8;
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  // fold_max lane by lane: _mm256_max_ps(v, a) is `v > a ? v : a` (a NaN `a` stays), and a NaN
  // `v` is taken by the blend.
  static R max(R v, R a) {
    return _mm256_blendv_ps(_mm256_max_ps(v, a), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R set1(float v) { return _mm256_set1_ps(v); }
  // p[0..15] -> even = p[0], p[2], ..., p[14]; odd = p[1], p[3], ..., p[15].
  static void deinterleave(const float* p, R& even, R& odd) {
    const R lo = load(p), hi = load(p + 8);
    auto order = [](R v) {  // [a0 a2 b0 b2 | a4 a6 b4 b6] -> [a0 a2 a4 a6 | b0 b2 b4 b6]
      return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
    };
    even = order(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
    odd = order(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
  }
};

struct Lanes4 {
  using R = __m128;
  static constexpr int64_t kLanes = 4;
  static R load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, R v) { _mm_storeu_ps(p, v); }
  static R max(R v, R a) { return _mm_blendv_ps(_mm_max_ps(v, a), v, _mm_cmpunord_ps(v, v)); }
  static R add(R a, R b) { return _mm_add_ps(a, b); }
  static R div(R a, R b) { return _mm_div_ps(a, b); }
  static R set1(float v) { return _mm_set1_ps(v); }
  static void deinterleave(const float* p, R& even, R& odd) {
    const R lo = load(p), hi = load(p + 4);
    even = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    odd = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
  }
};

// The kKw taps of outputs [j, j + lanes) in one window row (`base` = the row at column j * kSw);
// reads columns [0, (lanes - 1) * kSw + kKw) of base only.
template <class V, int kKw, int kSw>
[[gnu::always_inline]] inline void row_taps(const float* base, typename V::R& t0,
                                            typename V::R& t1, typename V::R& t2) {
  if constexpr (kSw == 1) {
    t0 = V::load(base);
    t1 = V::load(base + 1);
    if constexpr (kKw == 3) t2 = V::load(base + 2);
  } else {
    V::deinterleave(base, t0, t1);
    if constexpr (kKw == 3) {
      typename V::R skip;
      V::deinterleave(base + 1, skip, t2);  // odd lanes of base[1..]: base[2], base[4], ...
    }
  }
}

// Outputs [j, j + lanes) of one output row. rows[r] + c is input column c - pw of window row r.
// Taps fold in row-major order; the first is the start value (max) or added to +0 (average).
template <class V, int kKw, int kSw, bool kMax>
[[gnu::always_inline]] inline typename V::R window_group(const float* const* rows, int64_t nrows,
                                                         int64_t j) {
  using R = typename V::R;
  auto fold = [](R acc, R v) { return kMax ? V::max(v, acc) : V::add(acc, v); };
  R t0{}, t1{}, t2{};
  row_taps<V, kKw, kSw>(rows[0] + j * kSw, t0, t1, t2);
  R acc = kMax ? t0 : V::add(V::set1(0.0f), t0);
  acc = fold(acc, t1);
  if constexpr (kKw == 3) acc = fold(acc, t2);
  for (int64_t r = 1; r < nrows; ++r) {
    row_taps<V, kKw, kSw>(rows[r] + j * kSw, t0, t1, t2);
    acc = fold(acc, t0);
    acc = fold(acc, t1);
    if constexpr (kKw == 3) acc = fold(acc, t2);
  }
  return acc;
}

// Window rows at most (row pointers on the stack).
constexpr int64_t kMaxWindowRows = 16;

// Output rows [i0, i1) of one plane (x: input plane of width iw, left pad pw; y: output plane of
// width ow), columns [j0, j1) (j1 - j0 >= V::kLanes). Every row's window must have an input row
// (ah.begin[i] < ah.begin[i + 1]); average divides by the tap count (with include_pad, the taps
// inside the padded image).
template <class V, int kKw, int kSw, bool kMax>
void window_rows(const float* x, int64_t iw, int64_t pw, const AxisTaps& ah, bool include_pad,
                 int64_t i0, int64_t i1, int64_t ow, int64_t j0, int64_t j1, float* y) {
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t h0 = ah.begin[i], nrows = ah.begin[i + 1] - h0;
    const float* rows[kMaxWindowRows];
    for (int64_t r = 0; r < nrows; ++r) rows[r] = x + ah.coords[h0 + r] * iw - pw;
    const float n = static_cast<float>((include_pad ? ah.padded[i] : nrows) * kKw);
    float* yrow = y + i * ow;
    auto one = [&](int64_t j) {
      typename V::R v = window_group<V, kKw, kSw, kMax>(rows, nrows, j);
      if constexpr (!kMax) v = V::div(v, V::set1(n));
      V::store(yrow + j, v);
    };
    int64_t j = j0;
    for (; j + V::kLanes <= j1; j += V::kLanes) one(j);
    if (j < j1) one(j1 - V::kLanes);
  }
}

using WindowRowsFn = void (*)(const float*, int64_t, int64_t, const AxisTaps&, bool, int64_t,
                              int64_t, int64_t, int64_t, int64_t, float*);

template <class V, bool kMax>
WindowRowsFn pick_window_rows(int64_t kw, int64_t sw) {
  if (kw == 2) return sw == 1 ? window_rows<V, 2, 1, kMax> : window_rows<V, 2, 2, kMax>;
  return sw == 1 ? window_rows<V, 3, 1, kMax> : window_rows<V, 3, 2, kMax>;
}

// The vector function for this geometry and interior width, or nullptr.
WindowRowsFn window_rows_for(bool is_max, int64_t kw, int64_t sw, int64_t dw, int64_t width) {
  if (dw != 1 || (kw != 2 && kw != 3) || (sw != 1 && sw != 2) || width < 4) return nullptr;
  if (width >= 8)
    return is_max ? pick_window_rows<Lanes8, true>(kw, sw) : pick_window_rows<Lanes8, false>(kw, sw);
  return is_max ? pick_window_rows<Lanes4, true>(kw, sw) : pick_window_rows<Lanes4, false>(kw, sw);
}

// 2-D max / average pooling without the generic window walk (the common CNN case).
template <class T>
void run_pool_2d(const KernelContext& ctx, bool is_max, const PoolSetup& s, const T* x, T* y,
                 int64_t* indices, bool col_major, bool include_pad) {
  using C = compute_t<T>;
  const std::vector<AxisTaps> ax = make_taps(s.win, s.in_spatial);
  const AxisTaps& ah = ax[0];
  const AxisTaps& aw = ax[1];
  const int64_t ih = s.in_spatial[0], iw = s.in_spatial[1], oh = s.win.out[0], ow = s.win.out[1];
  const int64_t work = s.planes * oh * ow * shape_numel(s.win.kernel);
  // Interior columns [j_lo, j_hi): the whole kernel row is in bounds, so the taps of column j are
  // j * sw - pw + t * dw, t < kw, and a row is reduced for all of them at once (vectorizable).
  // Each output still folds its taps in row-major order, so results equal the per-column loop's.
  const int64_t kw = s.win.kernel[1], sw = s.win.strides[1], dw = s.win.dilations[1],
                pw = s.win.pad_begin[1];
  int64_t j_lo = 0, j_hi = 0;
  if (!indices) {
    j_lo = std::min(ow, (pw + sw - 1) / sw);
    const int64_t last = iw - 1 - (kw - 1) * dw + pw;  // largest j * sw with the window inside
    j_hi = last < 0 ? 0 : std::min(ow, last / sw + 1);
    if (j_hi < j_lo) j_hi = j_lo;
  }
  WindowRowsFn vec_row = nullptr;
  if constexpr (std::is_same_v<T, float>)
    if (s.win.kernel[0] <= kMaxWindowRows) vec_row = window_rows_for(is_max, kw, sw, dw, j_hi - j_lo);
  // The whole plane in one call when no column is on the border and every window has a row.
  bool whole_plane = vec_row && j_lo == 0 && j_hi == ow;
  for (int64_t i = 0; i < oh && whole_plane; ++i) whole_plane = ah.begin[i] < ah.begin[i + 1];
  kernels::parallel_for_if(work > (1 << 16), ctx.options().intra_op_threads, s.planes, [&](int64_t pl) {
    const T* xp = x + pl * ih * iw;
    T* yp = y + pl * oh * ow;
    if constexpr (std::is_same_v<T, float>) {
      if (whole_plane) {
        vec_row(xp, iw, pw, ah, include_pad, 0, oh, ow, 0, ow, yp);
        return;
      }
    }
    std::vector<C> acc(vec_row ? 0 : static_cast<size_t>(j_hi - j_lo));
    for (int64_t i = 0; i < oh; ++i) {
      const int64_t h0 = ah.begin[i], h1 = ah.begin[i + 1];
      const bool fast = j_hi > j_lo && h1 > h0;
      if constexpr (std::is_same_v<T, float>) {
        if (fast && vec_row) vec_row(xp, iw, pw, ah, include_pad, i, i + 1, ow, j_lo, j_hi, yp);
      }
      if (fast && !vec_row) {
        C* a = acc.data() - j_lo;  // a[j] for j in [j_lo, j_hi)
        bool first = true;
        for (int64_t th = h0; th < h1; ++th) {
          const T* row = xp + ah.coords[th] * iw - pw;
          for (int64_t t = 0; t < kw; ++t) {
            const T* r = row + t * dw;
            if (first) {
              for (int64_t j = j_lo; j < j_hi; ++j)  // C(0) + v: a sum of -0 is +0, as below
                a[j] = is_max ? load(r[j * sw]) : C(0) + load(r[j * sw]);
            } else if (is_max) {
              for (int64_t j = j_lo; j < j_hi; ++j) {
                const C v = load(r[j * sw]);
                a[j] = fold_max(v, a[j]);
              }
            } else {
              for (int64_t j = j_lo; j < j_hi; ++j) a[j] += load(r[j * sw]);
            }
            first = false;
          }
        }
        if (is_max) {
          for (int64_t j = j_lo; j < j_hi; ++j) yp[i * ow + j] = store<T>(a[j]);
        } else {
          for (int64_t j = j_lo; j < j_hi; ++j) {
            const int64_t n = include_pad ? ah.padded[i] * aw.padded[j] : (h1 - h0) * kw;
            yp[i * ow + j] = store<T>(n > 0 ? a[j] / static_cast<C>(n) : C(0));
          }
        }
      }
      for (int64_t j = 0; j < ow; ++j) {
        if (fast && j == j_lo) j = j_hi;  // interior done above
        if (j >= ow) break;
        const int64_t w0 = aw.begin[j], w1 = aw.begin[j + 1];
        if (is_max) {
          C best = std::numeric_limits<C>::lowest();
          int64_t bh = -1, bw = 0;
          for (int64_t th = h0; th < h1; ++th) {
            const T* row = xp + ah.coords[th] * iw;
            for (int64_t tw = w0; tw < w1; ++tw) {
              const C v = load(row[aw.coords[tw]]);
              if (bh < 0 || takes_max(v, best)) { best = v; bh = ah.coords[th]; bw = aw.coords[tw]; }
            }
          }
          yp[i * ow + j] = store<T>(best);
          if (indices)
            indices[(pl * oh + i) * ow + j] =
                pl * ih * iw + (bh < 0 ? 0 : col_major ? bh + bw * ih : bh * iw + bw);
        } else {
          C sum = 0;
          for (int64_t th = h0; th < h1; ++th) {
            const T* row = xp + ah.coords[th] * iw;
            for (int64_t tw = w0; tw < w1; ++tw) sum += load(row[aw.coords[tw]]);
          }
          const int64_t n = include_pad ? ah.padded[i] * aw.padded[j] : (h1 - h0) * (w1 - w0);
          yp[i * ow + j] = store<T>(n > 0 ? sum / static_cast<C>(n) : C(0));
        }
      }
    }
  });
}

template <class T>
void run_pool(const KernelContext& ctx, PoolKind kind, const PoolSetup& s, const T* x, T* y,
              int64_t* indices, bool col_major, bool include_pad, double p) {
  using C = compute_t<T>;
  const std::vector<AxisTaps> ax = make_taps(s.win, s.in_spatial);
  const std::vector<int64_t> rs = row_major_strides(s.in_spatial);
  std::vector<int64_t> cs(s.in_spatial.size(), 1);
  for (size_t d = 1; d < cs.size(); ++d) cs[d] = cs[d - 1] * s.in_spatial[d - 1];
  const int64_t is = shape_numel(s.in_spatial), os = shape_numel(s.win.out);
  const int64_t work = s.planes * os * shape_numel(s.win.kernel);
  kernels::parallel_for_if(work > (1 << 16), ctx.options().intra_op_threads, s.planes, [&](int64_t pl) {
    const T* xp = x + pl * is;
    std::vector<int64_t> oidx(s.in_spatial.size(), 0);
    for (int64_t o = 0; o < os; ++o) {
      for (int64_t d = static_cast<int64_t>(oidx.size()) - 1, rem = o; d >= 0; --d) {
        oidx[d] = rem % s.win.out[d];
        rem /= s.win.out[d];
      }
      C out;
      if (kind == PoolKind::kMax) {
        C best = std::numeric_limits<C>::lowest();
        int64_t best_i = -1, best_c = 0;
        auto f = [&](int64_t off, int64_t col) {
          const C v = load(xp[off]);
          if (best_i < 0 || takes_max(v, best)) { best = v; best_i = off; best_c = col; }
        };
        visit_window(ax, oidx, rs, cs, 0, 0, 0, f);
        out = best;
        if (indices) indices[pl * os + o] = pl * is + (col_major ? best_c : std::max<int64_t>(best_i, 0));
      } else if (kind == PoolKind::kAverage) {
        double sum = 0;
        int64_t n = 0;
        auto f = [&](int64_t off, int64_t) { sum += static_cast<double>(load(xp[off])); ++n; };
        visit_window(ax, oidx, rs, cs, 0, 0, 0, f);
        if (include_pad) {
          n = 1;
          for (size_t d = 0; d < oidx.size(); ++d) n *= ax[d].padded[oidx[d]];
        }
        out = static_cast<C>(n > 0 ? sum / static_cast<double>(n) : 0.0);
      } else {
        double sum = 0;
        auto f = [&](int64_t off, int64_t) {
          sum += std::pow(std::fabs(static_cast<double>(load(xp[off]))), p);
        };
        visit_window(ax, oidx, rs, cs, 0, 0, 0, f);
        out = static_cast<C>(std::pow(sum, 1.0 / p));
      }
      y[pl * os + o] = store<T>(out);
    }
  });
}

template <class T>
Status pool_typed(KernelContext& ctx, PoolKind kind, const PoolSetup& s, const Tensor& x) {
  const ir::Node& node = ctx.node();
  TJ_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, x.dtype(), s.out_shape));
  int64_t* indices = nullptr;
  if (kind == PoolKind::kMax && ctx.wants_output(1)) {
    TJ_ASSIGN_OR_RETURN(Tensor * it, ctx.output(1, DType::kInt64, s.out_shape));
    indices = it->data<int64_t>();
  }
  double p = 2;
  if (kind == PoolKind::kLp) {
    const ir::Attribute* pa = node.attr("p");
    if (pa) p = pa->kind == ir::Attribute::Kind::kFloat ? pa->f : static_cast<double>(pa->i);
    if (!(p > 0)) return ctx.fail("p must be positive, got {}", p);
  }
  if (y->numel() == 0) return Status();
  const bool col_major = node.attr_int("storage_order", 0) != 0;
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  if (kind != PoolKind::kLp && s.in_spatial.size() == 2) {
    run_pool_2d<T>(ctx, kind == PoolKind::kMax, s, x.data<T>(), y->data<T>(), indices, col_major, include_pad);
  } else {
    run_pool<T>(ctx, kind, s, x.data<T>(), y->data<T>(), indices, col_major, include_pad, p);
  }
  return Status();
}

Status pool_dispatch(KernelContext& ctx, PoolKind kind) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const bool is_max = kind == PoolKind::kMax;
  TJ_ASSIGN_OR_RETURN(PoolSetup s, setup_pool(ctx, *x, kind != PoolKind::kLp, is_max));
  switch (x->dtype()) {
    case DType::kFloat32: return pool_typed<float>(ctx, kind, s, *x);
    case DType::kFloat64: return pool_typed<double>(ctx, kind, s, *x);
    case DType::kFloat16: return pool_typed<Half>(ctx, kind, s, *x);
    case DType::kBFloat16: return pool_typed<BFloat16>(ctx, kind, s, *x);
    case DType::kInt8: if (is_max) return pool_typed<int8_t>(ctx, kind, s, *x); break;
    case DType::kUInt8: if (is_max) return pool_typed<uint8_t>(ctx, kind, s, *x); break;
    default: break;
  }
  return ctx.unsupported_here("{} on {} is not supported", ir::op_name(ctx.node().op()),
                              dtype_name(x->dtype()));
}

Status max_pool_kernel(KernelContext& ctx) { return pool_dispatch(ctx, PoolKind::kMax); }
Status average_pool_kernel(KernelContext& ctx) { return pool_dispatch(ctx, PoolKind::kAverage); }
Status lp_pool_kernel(KernelContext& ctx) { return pool_dispatch(ctx, PoolKind::kLp); }

}  // namespace

void register_pool_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::MaxPool, max_pool_kernel);
  r.add(ir::OpKind::AveragePool, average_pool_kernel);
  r.add(ir::OpKind::LpPool, lp_pool_kernel);
}

}  // namespace tierjit::interp::nn
