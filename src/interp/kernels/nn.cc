// Tier-0 kernels: nn family — linear algebra, convolution, pooling, recurrent and quantized ops.
// Each op group lives in its own file (see nn_kernels.h); this file registers them all.
#include "interp/kernels/nn_kernels.h"

namespace tierjit::interp {

void register_nn_kernels(KernelRegistry& r) {
  nn::register_matmul_kernels(r);
  nn::register_conv_kernels(r);
  nn::register_conv_transpose_kernels(r);
  nn::register_pool_kernels(r);
  nn::register_roi_kernels(r);
  nn::register_rnn_kernels(r);
  nn::register_quantize_kernels(r);
}

}  // namespace tierjit::interp
