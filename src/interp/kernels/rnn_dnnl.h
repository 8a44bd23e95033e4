// Tier-0 LSTM and GRU through oneDNN's RNN primitives (dnnl::lstm_forward, vanilla LSTM with
// optional peepholes; dnnl::gru_forward / lbr_gru_forward): the fast path of
// interp/kernels/rnn.cc for the float32 cells oneDNN computes exactly as the ONNX spec writes
// them. No oneDNN type leaks out of this header.
// Source: ONNX operator spec, LSTM 7/14, GRU 7/14; oneDNN 2.6 "RNN" primitive documentation.
#pragma once

#include <cstdint>

#include "interp/kernel.h"

namespace tierjit::interp::nn {

/// The cell: LSTM (gates i, o, f, c), GRU with linear_before_reset = 0 or 1 (gates z, r, h).
enum class RnnCell { kLstm, kGru, kLbrGru };

/// One float32 ONNX LSTM or GRU for dnnl_rnn_f32. Shapes as the ONNX spec (D = 1 or 2
/// directions, G = 4 gates for LSTM, 3 for GRU): x [S, N, I] (layout 0) or [N, S, I] (layout 1);
/// w [D, G*H, I]; r [D, G*H, H]; b [D, 2*G*H] or null; p [D, 3H] or null (LSTM only);
/// h0 / c0 (c0: LSTM only) [D, N, H] (layout 0) or [N, D, H] (layout 1) or null (zeros).
/// Outputs in the same layouts: y [S, D, N, H] / [N, S, D, H], yh / yc [D, N, H] / [N, D, H];
/// each may be null (not wanted). Default activations only (LSTM Sigmoid, Tanh, Tanh; GRU
/// Sigmoid, Tanh); no clip, no input_forget, every sequence of length S. constant_* (nullable)
/// are the tensors holding w / r / b / p when they are graph constants: their oneDNN copies are
/// then kept across calls.
struct RnnDnnlArgs {
  RnnCell cell = RnnCell::kLstm;
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

/// Runs the cell of `a` with a oneDNN primitive cached per geometry and thread count.
/// Requires seq, batch, input, hidden >= 1. Errors: oneDNN failures as kInternal (the caller
/// may fall back to the reference path).
Status dnnl_rnn_f32(const RnnDnnlArgs& a);

/// Whether rnn.cc may use dnnl_rnn_f32 (default true). Tests turn it off to run tier 0's
/// reference LSTM / GRU on the same inputs; process-wide, not meant to change while kernels run.
void set_rnn_dnnl_enabled(bool enabled);
bool rnn_dnnl_enabled();

/// Number of LSTMs / GRUs dnnl_rnn_f32 has run in this process (tests check which path ran).
uint64_t rnn_dnnl_runs();

/// Batch-1 calls run oneDNN's brgemm RNN implementation until `calls` batch-1 calls have run in
/// the process (default 512), then its GEMM-based one (faster per call, 22 ms to generate its
/// kernels on the first call; rnn_dnnl.cc). Tests pin either: 0 = GEMM-based from the first
/// call, UINT64_MAX = brgemm always.
void set_rnn_gemm_after_batch1_calls(uint64_t calls);

}  // namespace tierjit::interp::nn
