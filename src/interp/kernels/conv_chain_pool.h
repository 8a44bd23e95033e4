// The conv chains' channels-last MaxPool (conv_chain_pool.cc; max_pool_channels_last in
// conv_chain.h) on a chosen instruction set, so tests check the AVX2 path on AVX-512 machines
// too.
#pragma once

#include "interp/kernels/conv_chain.h"

namespace tierjit::interp {

/// max_pool_channels_last (same arguments, same results bit for bit) on AVX-512F (16 lanes)
/// when `use_avx512` and the CPU has it, else on AVX2 (8 lanes). Returns whether AVX-512F ran.
bool max_pool_channels_last_isa(bool use_avx512, const nn::Window& w, const Shape& x_shape,
                                const float* x, float* y, int threads);

}  // namespace tierjit::interp
