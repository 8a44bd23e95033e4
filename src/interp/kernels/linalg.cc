// Tier-0 kernel: Det (opset 11): determinant of each trailing M x M matrix, by LU decomposition
// with partial pivoting in double precision.
#include <cmath>
#include <utility>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/misc_internal.h"

namespace tierjit::interp {

namespace {

double determinant(std::vector<double>& a, int64_t m) {
  double det = 1.0;
  for (int64_t c = 0; c < m; ++c) {
    int64_t piv = c;
    for (int64_t r = c + 1; r < m; ++r)
      if (std::fabs(a[r * m + c]) > std::fabs(a[piv * m + c])) piv = r;
    if (a[piv * m + c] == 0.0) return 0.0;
    if (piv != c) {
      for (int64_t k = 0; k < m; ++k) std::swap(a[c * m + k], a[piv * m + k]);
      det = -det;
    }
    const double d = a[c * m + c];
    det *= d;
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = a[r * m + c] / d;
      if (f == 0.0) continue;
      for (int64_t k = c + 1; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
    }
  }
  return det;
}

// Input X float [..., M, M]; output [...] of the same dtype. NaN inputs give NaN.
Status det_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  if (!dtype_is_float(x->dtype()))
    return ctx.fail("input 0 must be a float tensor, got {}", dtype_name(x->dtype()));
  const int64_t r = x->rank();
  if (r < 2 || x->dim(r - 1) != x->dim(r - 2))
    return ctx.fail("input 0 must have shape [..., M, M], got {}", shape_to_string(x->shape()));
  const int64_t m = x->dim(r - 1);
  Shape out_shape(x->shape().begin(), x->shape().end() - 2);
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, x->dtype(), out_shape));
  const int64_t batch = out->numel();
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < batch; ++b) {
    bool has_nan = false;
    for (int64_t i = 0; i < m * m; ++i) {
      a[i] = x->value_as_double(b * m * m + i);
      has_nan = has_nan || std::isnan(a[i]);
    }
    const double d = has_nan ? std::nan("") : determinant(a, m);
    switch (x->dtype()) {
      case DType::kFloat32:
        out->data<float>()[b] = static_cast<float>(d);
        break;
      case DType::kFloat64:
        out->data<double>()[b] = d;
        break;
      case DType::kFloat16:
        out->data<uint16_t>()[b] = support::float_to_half(static_cast<float>(d));
        break;
      default:
        out->data<uint16_t>()[b] = support::float_to_bfloat16(static_cast<float>(d));
        break;
    }
  }
  return Status();
}

}  // namespace

void register_linalg_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::Det, det_kernel);
}

}  // namespace tierjit::interp
