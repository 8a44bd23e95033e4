// Vectorized float32 helpers of the tier-0 kernels: exp and tanh over arrays (SLEEF's 1.0-ulp
// AVX2 functions), erf (the compiled tiers' rational approximation, src/codegen/math_emit.cc:
// measured 3.98 ulp on [-1, 1], 6.4 ulp on [-10, 10], under 4.5e-7 absolute), 8 lanes at a
// time; and the row steps Softmax needs (max with NaN propagation; exp of the shifted row with
// its sum in double).
// Errors are measured in tests/interp/vec_math_test.cc. Special values as libm: NaN in -> NaN
// out; exp(-inf) = 0, exp(inf) = inf; erf(+-inf) = +-1; tanh(+-inf) = +-1; erf and tanh keep the
// sign of zero.
#pragma once

#include <cstdint>

namespace tierjit::kernels {

/// y[i] = exp(x[i]) for i < n (n >= 0); y may equal x (in place), other overlaps are not allowed.
void exp_f32(const float* x, float* y, int64_t n);
/// y[i] = exp(x[i] - shift), the Softmax step (x[i] - shift rounded to float first, as the
/// scalar code it replaces); returns the sum of the y[i] accumulated in double. y may equal x.
double exp_shifted_sum_f32(const float* x, float shift, float* y, int64_t n);
/// y[i] = erf(x[i]) (ONNX Erf, opset 9/13), error bounds above; y may equal x. 16 lanes at a
/// time on CPUs with AVX-512F (checked once; bert_tiny's GELU erf ~1.5x faster), else 8: the
/// same operations per lane, so both give the same bits (erf_f32_avx2 is the 8-lane path).
void erf_f32(const float* x, float* y, int64_t n);
void erf_f32_avx2(const float* x, float* y, int64_t n);
/// y[i] = tanh(x[i]) (ONNX Tanh, opset 6/13); y may equal x.
void tanh_f32(const float* x, float* y, int64_t n);
/// y[i] = 1 / (1 + exp(-x[i])) (ONNX Sigmoid, the RNN/LSTM/GRU gate activation), in the
/// overflow-free form: e = exp(-|x|), x >= 0 ? 1 / (1 + e) : e / (1 + e); sigmoid(+-inf) = 1, 0;
/// measured error in tests/interp/vec_math_test.cc. y may equal x.
void sigmoid_f32(const float* x, float* y, int64_t n);

/// y[i] = exp(x[i]) bit for bit exp_f32 (SLEEF 3.5's Sleef_expf8_u10 /
/// Sleef_finz_expf16_u10avx512f, operation for operation, inlined: the three agree on all 2^32
/// inputs, NaN payloads included, checked exhaustively against the installed libsleef; the test
/// samples every 61st); 16 lanes on CPUs with AVX-512F, else 8 (exp_f32_inline_avx2). y may
/// equal x.
void exp_f32_inline(const float* x, float* y, int64_t n);
void exp_f32_inline_avx2(const float* x, float* y, int64_t n);
/// Softmax of `rows` contiguous rows of n >= 1 floats: y = exp(x - max) / sum, bit for bit what
/// the 8-lane row steps give (m = max_f32(row), sum = exp_shifted_sum_f32(row, m, y_row),
/// y_row[i] *= float(1.0 / sum); tests/interp/softmax_fast_test.cc): the same inlined exp, the
/// same double partial sums (element i into sum i % 8) combined in the same order, the last n % 8
/// added one by one. 16 lanes on AVX-512F CPUs, else 8 (softmax_rows_f32_avx2). y may equal x.
void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t n);
void softmax_rows_f32_avx2(const float* x, float* y, int64_t rows, int64_t n);

/// Largest element of x[0..n) (n >= 1), or NaN when any element is NaN. Zeros of either sign
/// compare equal, so the sign of a zero maximum is unspecified.
float max_f32(const float* x, int64_t n);

}  // namespace tierjit::kernels
