// AVX-512F steps of tier 0's float32 LayerNormalization over contiguous rows (normalization.cc):
// the row statistics and the affine step, each the same IEEE operations in the
// same order as the AVX2 / scalar code beside them in normalization.cc, so the results are equal
// bit for bit (tests/interp/layer_norm_fast_test.cc), with twice the lanes. Callers check
// ln_rows::has_avx512() first; on other CPUs these functions must not run.
#pragma once

#include <cstdint>

namespace tierjit::kernels::ln_rows {

/// Rows per stats8 call.
inline constexpr int kRows = 8;

/// Whether the CPU has AVX-512F (checked once) and the AVX2 path is not forced.
bool has_avx512();
/// Tests: makes has_avx512() false (true) or restores the CPU check (false).
void force_avx2_for_testing(bool force);

/// Mean and population variance, in double, of the 8 contiguous rows x[k * len .. + len)
/// (len >= 1): per row 4 partial sums (element i into sum i % 4 for i below len / 4 * 4, the
/// rest into sum 0 one by one), combined (s0 + s1) + (s2 + s3), divided by len; two passes, the
/// second accumulating fma(d, d, s) with d = x - mean. Two rows share one 8-double register.
void stats8(const float* x, int64_t len, double* mean, double* var);

/// y[i] = fma((x[i] - mean) * inv, s[i], b[i]) in float for i < len. y may equal x.
void normalize_row(const float* x, float* y, int64_t len, float mean, float inv, const float* s,
                   const float* b);

}  // namespace tierjit::kernels::ln_rows
