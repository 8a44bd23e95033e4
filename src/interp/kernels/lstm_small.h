// Tier-0 float32 LSTM for small batches (lstm_small's batch-1 requests): the input projection
// of all time steps at once, then per step the recurrent product and the gate math fused in
// vector registers (16 lanes on AVX-512, 8 on AVX2, chosen at run time), on weights packed once per set of
// constant weight tensors. rnn.cc runs it before oneDNN's RNN primitive (rnn_dnnl.h) for the
// LSTMs it covers (lstm_small_supports). Source: ONNX operator spec, LSTM 7/14.
#pragma once

#include <cstddef>
#include <cstdint>

#include "interp/kernels/rnn_dnnl.h"

namespace tierjit::interp::nn {

/// Largest batch N lstm_small_f32 takes: up to 16 it is as fast as oneDNN's RNN or faster per
/// call (one thread, 32x16x64: 486 vs 503 us) and never generates kernels (oneDNN's first call
/// of a new 16-row shape took 3-40 ms); docs/performance.md, "Small-batch LSTM (session 7)".
inline constexpr int64_t kLstmSmallMaxBatch = 16;
/// Largest hidden size it takes (R of H = 256 is 1 MiB packed, a core's L2).
inline constexpr int64_t kLstmSmallMaxHidden = 256;

/// Whether lstm_small_f32 computes `a`: an LSTM (a.cell == RnnCell::kLstm; the caller has
/// checked default activations, no clip, no input_forget, full sequence lengths), no peepholes,
/// 1 <= N <= kLstmSmallMaxBatch, 1 <= H <= kLstmSmallMaxHidden, S, I >= 1, any direction and
/// layout, and lstm_small_enabled().
bool lstm_small_supports(const RnnDnnlArgs& a);

/// Runs the LSTM of `a` (shapes and layouts as RnnDnnlArgs; a.p must be null):
/// i = sigmoid(x Wi + h Ri + Wbi + Rbi), o, f likewise, c~ = tanh(...), c = f * c + i * c~,
/// h = o * tanh(c). The bias Wb + Rb is summed once in float32 (as oneDNN does). sigmoid and
/// tanh are lstm_small.cc's vector functions: at most 2.6 ulp (sigmoid) and 2.5 ulp (tanh)
/// from double over [-20, 20] (tests/interp/lstm_small_test.cc bounds them at 3 and 4); NaN in
/// -> NaN out. Weights of constant tensors (a.constant_*) are packed once and cached (bounded, 64 MiB);
/// others are packed per call. Threads: with a.threads >= 2 and a spare core
/// (parallel_threads, dnnl_util.h), a bidirectional LSTM runs one direction per thread; one
/// direction of N >= 6 half of the batch rows per thread (no wait between them), and one of
/// smaller N whose step has >= 2^15 multiply-adds (N x 4H x H) half of the hidden units per
/// thread with a wait per step; results are the same bits on one or two threads.
/// Requires lstm_small_supports(a). Never fails.
Status lstm_small_f32(const RnnDnnlArgs& a);

/// Whether rnn.cc may use lstm_small_f32 (default true). Tests turn it off to test oneDNN's
/// RNN on the same LSTMs; process-wide, not meant to change while kernels run.
void set_lstm_small_enabled(bool enabled);
bool lstm_small_enabled();

/// Bytes of packed weights of constant tensors cached now (all LSTMs; tests).
size_t lstm_small_packed_bytes();

/// Number of LSTMs lstm_small_f32 has run in this process, and of those on two threads (tests
/// check which path ran).
uint64_t lstm_small_runs();
uint64_t lstm_small_two_thread_runs();

/// The gate activations on n >= 0 floats (y may equal x), as lstm_small_f32 computes them; for
/// tests and benchmarks. Always the baseline (AVX2) code when avx2 is true, else the CPU's best.
void lstm_small_sigmoid(const float* x, float* y, int64_t n, bool avx2 = false);
void lstm_small_tanh(const float* x, float* y, int64_t n, bool avx2 = false);

/// Forces the AVX2 code for lstm_small_f32 (tests: both versions on an AVX-512 machine).
void set_lstm_small_force_avx2(bool force);

}  // namespace tierjit::interp::nn
