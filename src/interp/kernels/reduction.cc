// Tier-0 kernels: the reduction family's registration. The kernels live in reduce.cc (Reduce*,
// Global*Pool), argminmax.cc, softmax.cc (Softmax, LogSoftmax, Hardmax), normalization.cc and
// normalization_local.cc (LayerNorm, BatchNorm, InstanceNorm, LRN, MVN, LpNormalization),
// loss.cc (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) and cumsum.cc.
#include "interp/kernels/reduce_util.h"

namespace tierjit::interp {

void register_reduction_kernels(KernelRegistry& r) {
  register_reduce_ops(r);
  register_argminmax_ops(r);
  register_softmax_ops(r);
  register_cumsum_ops(r);
  register_normalization_ops(r);
  register_loss_ops(r);
}

}  // namespace tierjit::interp
