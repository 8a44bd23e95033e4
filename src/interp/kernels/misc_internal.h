// Internal declarations of the misc kernel family: each file registers its own kernels through
// one function listed here, all called from register_misc_kernels (misc.cc).
#pragma once

#include "interp/registry.h"

namespace tierjit::interp {

void register_resize_kernels(KernelRegistry& r);     // resize.cc: Resize, Upsample
void register_einsum_kernels(KernelRegistry& r);     // einsum.cc: Einsum
void register_detection_kernels(KernelRegistry& r);  // detection.cc: NonMaxSuppression, GridSample
void register_signal_kernels(KernelRegistry& r);  // signal.cc: DFT, STFT, windows, MelWeightMatrix
void register_string_kernels(KernelRegistry& r);  // strings.cc: StringNormalizer, TfIdfVectorizer
void register_linalg_kernels(KernelRegistry& r);  // linalg.cc: Det
void register_random_kernels(
    KernelRegistry& r);  // random.cc: RandomNormal/Uniform(+Like), Bernoulli, Multinomial

}  // namespace tierjit::interp
