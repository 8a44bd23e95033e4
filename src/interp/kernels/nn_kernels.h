// Registration entry points of the nn kernel files; nn.cc's register_nn_kernels calls each.
#pragma once

#include "interp/registry.h"

namespace tierjit::interp::nn {

void register_matmul_kernels(KernelRegistry& r);      // matmul.cc: MatMul, Gemm, (QLinear)MatMul(Integer)
void register_conv_kernels(KernelRegistry& r);        // conv.cc: Conv, ConvInteger, QLinearConv
void register_conv_transpose_kernels(KernelRegistry& r);  // conv_transpose.cc
void register_pool_kernels(KernelRegistry& r);        // pool.cc: Max/Average/Lp(Global)Pool
void register_roi_kernels(KernelRegistry& r);         // pool_roi.cc: MaxUnpool, MaxRoiPool, RoiAlign
void register_rnn_kernels(KernelRegistry& r);         // rnn.cc: LSTM, GRU, RNN
void register_quantize_kernels(KernelRegistry& r);    // quantize.cc: (De|Dynamic)QuantizeLinear

}  // namespace tierjit::interp::nn
