// Tier-0 kernels: signal processing (opset 17). DFT and STFT (radix-2 FFT for power-of-two
// lengths >= 16, else a direct O(n^2) transform; double precision, exact twiddle table), the
// Hann/Hamming/Blackman windows and MelWeightMatrix, following the ONNX spec and onnx.reference.
// Complex values are a trailing dim of 2 (real, imaginary); real signals a trailing dim of 1.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/misc_internal.h"

namespace tierjit::interp {

namespace {

// Stores doubles into a float tensor of any float dtype.
Status store_floats(const KernelContext& ctx, const std::vector<double>& v, Tensor& out) {
  switch (out.dtype()) {
    case DType::kFloat32:
      for (size_t i = 0; i < v.size(); ++i) out.data<float>()[i] = static_cast<float>(v[i]);
      break;
    case DType::kFloat64:
      for (size_t i = 0; i < v.size(); ++i) out.data<double>()[i] = v[i];
      break;
    case DType::kFloat16:
      for (size_t i = 0; i < v.size(); ++i)
        out.data<uint16_t>()[i] = support::float_to_half(static_cast<float>(v[i]));
      break;
    case DType::kBFloat16:
      for (size_t i = 0; i < v.size(); ++i)
        out.data<uint16_t>()[i] = support::float_to_bfloat16(static_cast<float>(v[i]));
      break;
    default:
      return dispatch_all(ctx, out.dtype(), [&](auto tag) -> Status {
        using T = decltype(tag);
        if constexpr (std::is_arithmetic_v<T>)
          for (size_t i = 0; i < v.size(); ++i) out.data<T>()[i] = static_cast<T>(v[i]);
        return Status();
      });
  }
  return Status();
}

// Direct DFT of one signal: `len` complex samples at stride `stride` (re/im interleaved when
// complex), zero-padded or truncated to n, `bins` output bins. sign = -1 forward, +1 inverse.
struct Twiddles {
  std::vector<double> c, s;
  explicit Twiddles(int64_t n) : c(static_cast<size_t>(n)), s(static_cast<size_t>(n)) {
    for (int64_t k = 0; k < n; ++k) {
      const double a = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
      c[k] = std::cos(a);
      s[k] = std::sin(a);
    }
  }
};

// In-place iterative radix-2 FFT of n = a power of two (n == tw size).
void fft_pow2(std::vector<double>& re, std::vector<double>& im, double sign, const Twiddles& tw) {
  const int64_t n = static_cast<int64_t>(re.size());
  for (int64_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      std::swap(re[i], re[j]);
      std::swap(im[i], im[j]);
    }
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    const int64_t half = len / 2, step = n / len;
    for (int64_t i = 0; i < n; i += len) {
      for (int64_t k = 0; k < half; ++k) {
        const double wr = tw.c[k * step], wi = sign * tw.s[k * step];
        const int64_t a = i + k, b = a + half;
        const double vr = re[b] * wr - im[b] * wi, vi = re[b] * wi + im[b] * wr;
        re[b] = re[a] - vr;
        im[b] = im[a] - vi;
        re[a] += vr;
        im[a] += vi;
      }
    }
  }
}

void dft_1d(const std::vector<double>& re, const std::vector<double>& im, int64_t n, int64_t bins,
            double sign, const Twiddles& tw, double* out_re, double* out_im) {
  if (n >= 16 && (n & (n - 1)) == 0) {  // power of two: O(n log n)
    std::vector<double> fr(static_cast<size_t>(n), 0.0), fi(static_cast<size_t>(n), 0.0);
    const size_t take = std::min(re.size(), static_cast<size_t>(n));
    std::copy(re.begin(), re.begin() + take, fr.begin());
    std::copy(im.begin(), im.begin() + take, fi.begin());
    fft_pow2(fr, fi, sign, tw);
    std::copy(fr.begin(), fr.begin() + bins, out_re);
    std::copy(fi.begin(), fi.begin() + bins, out_im);
    return;
  }
  const int64_t len = std::min<int64_t>(static_cast<int64_t>(re.size()), n);
  for (int64_t k = 0; k < bins; ++k) {
    double sr = 0, si = 0;
    int64_t idx = 0;  // (k * t) mod n
    for (int64_t t = 0; t < len; ++t) {
      const double c = tw.c[idx], s = sign * tw.s[idx];
      sr += re[t] * c - im[t] * s;
      si += re[t] * s + im[t] * c;
      idx += k;
      if (idx >= n) idx %= n;
    }
    out_re[k] = sr;
    out_im[k] = si;
  }
}

Expected<int64_t> scalar_int(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.numel() != 1)
    return ctx.fail("{} must hold one element, got shape {}", what, shape_to_string(t.shape()));
  if (!dtype_is_integer(t.dtype()))
    return ctx.fail("{} must be an integer, got {}", what, dtype_name(t.dtype()));
  return t.value_as_int64(0);
}

// DFT-17. Input [..., signal ..., 1|2]; input 1 dft_length (optional scalar); attributes axis
// (default 1), inverse, onesided. Output [..., bins ..., 2] (real [..., n, 1] for a onesided
// inverse, which reconstructs the full spectrum by Hermitian symmetry).
Status dft_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  if (!dtype_is_float(x->dtype()))
    return ctx.fail("input 0 must be a float tensor, got {}", dtype_name(x->dtype()));
  const int64_t rank = x->rank();
  if (rank < 2 || (x->dim(rank - 1) != 1 && x->dim(rank - 1) != 2))
    return ctx.fail("input 0 must end in a dim of 1 (real) or 2 (complex), got {}",
                    shape_to_string(x->shape()));
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return ctx.fail("attribute 'axis' {} is out of range for rank {}",
                    ctx.node().attr_int("axis", 1), rank);
  const bool inverse = ctx.node().attr_int("inverse", 0) != 0;
  const bool onesided = ctx.node().attr_int("onesided", 0) != 0;
  const int64_t len = x->dim(axis);
  int64_t n = inverse && onesided ? 2 * (len - 1) : len;
  if (const Tensor* d = ctx.input(1)) {
    TJ_ASSIGN_OR_RETURN(n, scalar_int(ctx, *d, "input 1 'dft_length'"));
    if (n < 1) return ctx.fail("input 1 'dft_length' must be positive, got {}", n);
  }
  if (n < 1) return ctx.fail("DFT length must be positive (signal length {})", len);
  const bool cplx = x->dim(rank - 1) == 2;
  const bool real_out = inverse && onesided;
  const int64_t bins = !inverse && onesided ? n / 2 + 1 : n;
  Shape out_shape = x->shape();
  out_shape[axis] = bins;
  out_shape[rank - 1] = real_out ? 1 : 2;
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, x->dtype(), out_shape));
  TJ_RETURN_IF_ERROR(ctx.check_size(DType::kFloat64, out_shape));  // double results
  TJ_RETURN_IF_ERROR(ctx.check_size(DType::kFloat64, {2, n}));     // twiddle table
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x->dim(d);
  const std::vector<double> xd = read_doubles(*x);
  const int64_t c_in = cplx ? 2 : 1, c_out = real_out ? 1 : 2;
  std::vector<double> res(static_cast<size_t>(out->numel()));
  const Twiddles tw(n);
  std::vector<double> re, im, ore(static_cast<size_t>(bins)), oim(static_cast<size_t>(bins));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t take = std::min(len, n);
      re.assign(static_cast<size_t>(take), 0.0);
      im.assign(static_cast<size_t>(take), 0.0);
      for (int64_t t = 0; t < take; ++t) {
        const int64_t base = ((o * len + t) * inner + i) * c_in;
        re[t] = xd[base];
        im[t] = cplx ? xd[base + 1] : 0.0;
      }
      if (real_out) {  // Hermitian extension of the one-sided spectrum
        re.resize(static_cast<size_t>(n), 0.0);
        im.resize(static_cast<size_t>(n), 0.0);
        for (int64_t k = take; k < n; ++k)
          if (n - k < take) {
            re[k] = re[n - k];
            im[k] = -im[n - k];
          }
      }
      dft_1d(re, im, n, bins, inverse ? 1.0 : -1.0, tw, ore.data(), oim.data());
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t base = ((o * bins + k) * inner + i) * c_out;
        const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
        res[base] = ore[k] * scale;
        if (!real_out) res[base + 1] = oim[k] * scale;
      }
    }
  }
  return store_floats(ctx, res, *out);
}

// STFT-17. Inputs: signal [batch, length, 1|2], frame_step (int scalar), window (optional
// [frame_length]), frame_length (optional int scalar). Attribute onesided (default 1).
// Output [batch, frames, bins, 2] with frames = 1 + (length - frame_length) / frame_step.
Status stft_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(const Tensor* step_t, ctx.required_input(1));
  if (!dtype_is_float(x->dtype())) return ctx.fail("input 0 'signal' must be a float tensor");
  if (x->rank() != 3 || (x->dim(2) != 1 && x->dim(2) != 2))
    return ctx.fail("input 0 'signal' must have shape [batch, length, 1 or 2], got {}",
                    shape_to_string(x->shape()));
  TJ_ASSIGN_OR_RETURN(int64_t step, scalar_int(ctx, *step_t, "input 1 'frame_step'"));
  if (step < 1) return ctx.fail("input 1 'frame_step' must be positive, got {}", step);
  const Tensor* window = ctx.input(2);
  int64_t fl = -1;
  if (const Tensor* f = ctx.input(3)) {
    TJ_ASSIGN_OR_RETURN(fl, scalar_int(ctx, *f, "input 3 'frame_length'"));
  }
  if (window) {
    if (window->rank() != 1)
      return ctx.fail("input 2 'window' must be 1-D, got {}", shape_to_string(window->shape()));
    if (fl >= 0 && fl != window->dim(0))
      return ctx.fail("input 3 'frame_length' {} differs from the window length {}", fl,
                      window->dim(0));
    fl = window->dim(0);
  }
  if (fl < 0) fl = x->dim(1);
  const int64_t batch = x->dim(0), len = x->dim(1);
  if (fl < 1 || fl > len) return ctx.fail("frame length {} is out of range [1, {}]", fl, len);
  const bool onesided = ctx.node().attr_int("onesided", 1) != 0;
  const int64_t frames = 1 + (len - fl) / step, bins = onesided ? fl / 2 + 1 : fl;
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, x->dtype(), {batch, frames, bins, 2}));
  const bool cplx = x->dim(2) == 2;
  const std::vector<double> xd = read_doubles(*x);
  std::vector<double> w =
      window ? read_doubles(*window) : std::vector<double>(static_cast<size_t>(fl), 1.0);
  std::vector<double> res(static_cast<size_t>(out->numel()));
  const Twiddles tw(fl);
  std::vector<double> re(static_cast<size_t>(fl)), im(static_cast<size_t>(fl));
  std::vector<double> ore(static_cast<size_t>(bins)), oim(static_cast<size_t>(bins));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < fl; ++t) {
        const int64_t base = (b * len + f * step + t) * (cplx ? 2 : 1);
        re[t] = xd[base] * w[t];
        im[t] = cplx ? xd[base + 1] * w[t] : 0.0;
      }
      dft_1d(re, im, fl, bins, -1.0, tw, ore.data(), oim.data());
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t base = ((b * frames + f) * bins + k) * 2;
        res[base] = ore[k];
        res[base + 1] = oim[k];
      }
    }
  }
  return store_floats(ctx, res, *out);
}

Expected<DType> output_dtype(const KernelContext& ctx) {
  const int64_t code = ctx.node().attr_int("output_datatype", 1);
  if (!dtype_is_valid(static_cast<int32_t>(code)) || code == static_cast<int64_t>(DType::kString) ||
      code == static_cast<int64_t>(DType::kBool))
    return ctx.fail("attribute 'output_datatype' {} is not a numeric dtype", code);
  return static_cast<DType>(code);
}

// Hann/Hamming/Blackman (opset 17): input size (int scalar), attributes output_datatype
// (default float) and periodic (default 1: N = size, else N = size - 1). Output [size].
template <int kKind>
Status window_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* s, ctx.required_input(0));
  TJ_ASSIGN_OR_RETURN(int64_t size, scalar_int(ctx, *s, "input 0 'size'"));
  if (size < 0) return ctx.fail("input 0 'size' must be >= 0, got {}", size);
  TJ_ASSIGN_OR_RETURN(DType dt, output_dtype(ctx));
  const bool periodic = ctx.node().attr_int("periodic", 1) != 0;
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, dt, {size}));
  const double n = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double a = 2.0 * std::numbers::pi * static_cast<double>(i) / n;
    if constexpr (kKind == 0)
      v[i] = 0.5 - 0.5 * std::cos(a);
    else if constexpr (kKind == 1)
      v[i] = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a);
    else
      v[i] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
  }
  return store_floats(ctx, v, *out);
}

// MelWeightMatrix (opset 17): inputs num_mel_bins, dft_length, sample_rate (ints),
// lower_edge_hertz, upper_edge_hertz (floats). Output [dft_length / 2 + 1, num_mel_bins] of
// triangular filters, as onnx.reference computes them.
Status mel_kernel(KernelContext& ctx) {
  std::vector<double> in(5);
  for (size_t i = 0; i < 5; ++i) {
    TJ_ASSIGN_OR_RETURN(const Tensor* t, ctx.required_input(i));
    if (t->numel() != 1) return ctx.fail("input {} must hold one element", i);
    in[i] = t->value_as_double(0);
  }
  const int64_t mel_bins = static_cast<int64_t>(in[0]), dft_len = static_cast<int64_t>(in[1]);
  const int64_t rate = static_cast<int64_t>(in[2]);
  if (mel_bins < 0 || dft_len < 1 || rate <= 0)
    return ctx.fail("num_mel_bins {}, dft_length {} and sample_rate {} must be positive", mel_bins,
                    dft_len, rate);
  TJ_ASSIGN_OR_RETURN(DType dt, output_dtype(ctx));
  const int64_t spec_bins = dft_len / 2 + 1;
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, dt, {spec_bins, mel_bins}));
  const double low_mel = 2595 * std::log1p(in[3] / 700) / std::log(10.0);
  const double high_mel = 2595 * std::log1p(in[4] / 700) / std::log(10.0);
  const double step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> f(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    double hz = 700 * std::expm1((static_cast<double>(i) * step + low_mel) / 2595 * std::log(10.0));
    f[i] = static_cast<int64_t>(
        std::floor(static_cast<double>(dft_len + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> v(static_cast<size_t>(spec_bins * mel_bins), 0.0);
  auto set = [&](int64_t j, int64_t i, double val) -> Status {
    if (j < 0 || j >= spec_bins)
      return ctx.fail("filter edge {} falls outside [0, {})", j, spec_bins);
    v[j * mel_bins + i] = val;
    return Status();
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t lo = f[i], c = f[i + 1], hi = f[i + 2];
    if (c - lo == 0) {
      TJ_RETURN_IF_ERROR(set(c, i, 1.0));
    } else {
      for (int64_t j = lo; j <= c; ++j)
        TJ_RETURN_IF_ERROR(set(j, i, static_cast<double>(j - lo) / static_cast<double>(c - lo)));
    }
    if (hi - c > 0)
      for (int64_t j = c; j < hi; ++j)
        TJ_RETURN_IF_ERROR(set(j, i, static_cast<double>(hi - j) / static_cast<double>(hi - c)));
  }
  return store_floats(ctx, v, *out);
}

}  // namespace

void register_signal_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::DFT, dft_kernel);
  r.add(ir::OpKind::STFT, stft_kernel);
  r.add(ir::OpKind::HannWindow, window_kernel<0>);
  r.add(ir::OpKind::HammingWindow, window_kernel<1>);
  r.add(ir::OpKind::BlackmanWindow, window_kernel<2>);
  r.add(ir::OpKind::MelWeightMatrix, mel_kernel);
}

}  // namespace tierjit::interp
