// Tier-0 conv chains (conv_chain.h): the per-call proof that lets a Clip run as its Conv's oneDNN
// post-op. oneDNN's clip is max(y, min) then min(., max): NaN becomes min and max(-0, 0) gives +0,
// where tier 0's Clip keeps both, so the post-op equals tier 0 only on outputs free of NaN and -0.
// Planned once per chain (bound factors of the constant weights, which biases have no zero
// entry); per call, a scan of the chain's external inputs and a magnitude bound through its steps.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "interp/kernels/dnnl_util.h"

namespace tierjit::interp {

struct ConvChain;
struct Frame;

/// What plan_clip_proof learns from a chain's constants, one entry per step (ConvChain::steps).
struct ChainClipProof {
  /// How a step's output bound follows from its inputs' bounds (B: an input's bound).
  enum class Transfer : uint8_t {
    kUnknown,   ///< anything: +inf
    kConv,      ///< factor * B + bias_max (constant W, and B if any)
    kScale,     ///< factor * B (Relu, LeakyRelu: max(1, |alpha|), MaxPool with a tap per window)
    kSaturate,  ///< 1 for a finite B (Sigmoid, Tanh), else unknown (NaN stays NaN)
    kClamp,     ///< tier 0's Clip of [-B, B] into [lo, hi]: max(|clip(-B)|, |clip(B)|)
    kAdd,       ///< B1 + B2
  };
  struct Step {
    Transfer transfer = Transfer::kUnknown;
    double factor = 0;     ///< kConv: max over output channels of the sum of |W| over its taps
    double bias_max = 0;   ///< kConv: max |B| (0 without B)
    float lo = 0, hi = 0;  ///< kClamp: the Clip's bounds (absent: -inf / +inf)
    /// kConv: the index of the Clip step that may run as this Conv's post-op (`post`), -1: none.
    /// Set only when every B entry is finite and nonzero (so no output is -0: b + s == 0 rounds
    /// to +0), the Clip's bounds are neither NaN nor -0, and the Conv has no post-op already.
    int clip = -1;
    nn::ConvPostOp post;
  };
  std::vector<Step> steps;
  bool any_clip = false;  ///< some step has clip >= 0 (else the per-call proof is skipped)
};

/// The proof plan of chain `c` (its steps, values and nodes; constants read from the IR values).
/// Pure; reads every constant weight once (|W| summed in double).
std::shared_ptr<const ChainClipProof> plan_clip_proof(const ConvChain& c);

/// Per call: fused[si] = 1 for each Conv step si whose Clip (step p.steps[si].clip, also marked 1)
/// is proven to equal oneDNN's clip post-op p.steps[si].post on this call's values, else 0;
/// resized to c.steps.size(). Proven when the chain's external inputs (frame.values, float32) hold
/// no NaN or infinity and the magnitude bound at the Conv's output, carried through the steps with
/// a rounding margin, stays below kProofLimit (so no step overflows: no NaN or infinity anywhere
/// before), and the Conv's W, B and the Clip's bounds in `frame` are the planned constants.
/// `threads`: OpenMP threads for the input scan of large inputs (scan_finite).
void prove_clip_post_ops(const ConvChain& c, const ChainClipProof& p, const Frame& frame,
                         int threads, std::vector<uint8_t>& fused);

/// Bounds at or above this count as unknown (far below FLT_MAX = 3.4e38).
inline constexpr double kProofLimit = 1e30;

/// Whether the float32 x[0, n) holds only finite values, and the largest magnitude there (0 for
/// n = 0; meaningless unless finite). AVX-512F or AVX2 by a run-time check, else scalar (`isa`
/// lowers the choice, for tests); `threads` OpenMP threads from 2^19 elements (below, one
/// thread: the data is in L2 or L3 and a team costs more than it saves).
struct FiniteScan {
  bool finite = true;
  float max_abs = 0;
};
enum class ScanIsa : uint8_t { kBest, kAvx2, kScalar };
FiniteScan scan_finite(const float* x, int64_t n, int threads, ScanIsa isa = ScanIsa::kBest);

/// Tests only: kProve (the default) decides per call as above; kNever runs every Clip as today
/// (its tier-0 kernel in place); kAlways fuses every planned Clip without a proof (results then
/// differ from tier 0 on NaN and -0: lets the tests show they can fail). Process-wide.
enum class ClipProofMode : uint8_t { kProve, kNever, kAlways };
void set_clip_proof_mode_for_testing(ClipProofMode mode);

}  // namespace tierjit::interp
