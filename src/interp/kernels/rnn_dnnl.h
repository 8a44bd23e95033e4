// Tier-0 LSTM through oneDNN's LSTM primitive (dnnl::lstm_forward, vanilla LSTM with optional
// peepholes): the fast path of interp/kernels/rnn.cc for the float32 LSTMs oneDNN computes
// exactly as the ONNX spec writes them. No oneDNN type leaks out of this header.
// Source: ONNX operator spec, LSTM 7/14; oneDNN 2.6 "RNN" primitive documentation.
#pragma once

#include <cstdint>

#include "interp/kernel.h"

namespace tierjit::interp::nn {

/// One float32 ONNX LSTM for dnnl_lstm_f32. Shapes as the ONNX spec (D = 1 or 2 directions):
/// x [S, N, I] (layout 0) or [N, S, I] (layout 1); w [D, 4H, I]; r [D, 4H, H]; b [D, 8H] or
/// null; p [D, 3H] or null; h0 / c0 [D, N, H] (layout 0) or [N, D, H] (layout 1) or null
/// (zeros). Outputs in the same layouts: y [S, D, N, H] / [N, S, D, H], yh / yc [D, N, H] /
/// [N, D, H]; each may be null (not wanted). Gate order i, o, f, c; activations Sigmoid, Tanh,
/// Tanh; no clip, no input_forget, every sequence of length S. constant_* (nullable) are the
/// tensors holding w / r / b / p when they are graph constants: their oneDNN copies are then
/// kept across calls.
struct LstmDnnlArgs {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse = false;  // D = 1 only: direction "reverse"
  bool layout1 = false;
  const float *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *p = nullptr;
  const float *h0 = nullptr, *c0 = nullptr;
  const Tensor *constant_w = nullptr, *constant_r = nullptr, *constant_b = nullptr,
               *constant_p = nullptr;
  float *y = nullptr, *yh = nullptr, *yc = nullptr;
  int threads = 1;  // ExecOptions::intra_op_threads
};

/// Runs the LSTM of `a` with a oneDNN primitive cached per geometry and thread count.
/// Requires seq, batch, input, hidden >= 1. Errors: oneDNN failures as kInternal (the caller
/// may fall back to the reference path).
Status dnnl_lstm_f32(const LstmDnnlArgs& a);

/// Whether rnn.cc may use dnnl_lstm_f32 (default true). Tests turn it off to run tier 0's
/// reference LSTM on the same inputs; process-wide, not meant to change while kernels run.
void set_lstm_dnnl_enabled(bool enabled);
bool lstm_dnnl_enabled();

/// Number of LSTMs dnnl_lstm_f32 has run in this process (tests check which path ran).
uint64_t lstm_dnnl_runs();

}  // namespace tierjit::interp::nn
