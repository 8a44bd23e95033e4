// The Clip post-op proof of tier-0 conv chains (see conv_chain_bounds.h): plan-time bound
// factors from the constant weights, the per-call input scan (max |x| over the bits: the
// magnitude bits of a float order as unsigned integers, NaN and infinity above all finite
// values) and the bound carried through the steps.
#include "interp/kernels/conv_chain_bounds.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "interp/executor.h"
#include "interp/kernels/conv_chain.h"
#include "kernels/parallel_for.h"

namespace tierjit::interp {
namespace {

using Transfer = ChainClipProof::Transfer;

constexpr double kInf = std::numeric_limits<double>::infinity();
// One float32 rounding, relative, doubled for safety (2^-24 is the unit roundoff).
constexpr double kUlp = 1.0 / (1 << 23);

std::atomic<ClipProofMode> g_mode{ClipProofMode::kProve};

// ---- the input scan ---------------------------------------------------------------------------

constexpr uint32_t kMagnitude = 0x7fffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;

uint32_t max_bits_scalar(const float* x, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, sizeof u);
    m = std::max(m, u & kMagnitude);
  }
  return m;
}

__attribute__((target("avx2"))) uint32_t max_bits_avx2(const float* x, int64_t n) {
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(kMagnitude));
  __m256i m0 = _mm256_setzero_si256(), m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_epu32(
        m0, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), mask));
    m1 = _mm256_max_epu32(
        m1,
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8)), mask));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_max_epu32(m0, m1));
  uint32_t m = max_bits_scalar(x + i, n - i);
  for (uint32_t l : lanes) m = std::max(m, l);
  return m;
}

__attribute__((target("avx512f"))) uint32_t max_bits_avx512(const float* x, int64_t n) {
  // The masked forms: GCC 12 warns about the unmasked ones' undefined pass-through operand.
  const __m512i mask = _mm512_set1_epi32(static_cast<int>(kMagnitude));
  const __mmask16 all = 0xffff;
  __m512i m0 = _mm512_setzero_si512(), m1 = m0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_mask_max_epu32(m0, all, m0, _mm512_and_si512(_mm512_loadu_si512(x + i), mask));
    m1 = _mm512_mask_max_epu32(m1, all, m1, _mm512_and_si512(_mm512_loadu_si512(x + i + 16), mask));
  }
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, _mm512_mask_max_epu32(m0, all, m0, m1));
  uint32_t m = max_bits_scalar(x + i, n - i);
  for (uint32_t l : lanes) m = std::max(m, l);
  return m;
}

// 2: AVX-512F, 1: AVX2, 0: neither (checked once).
const int kIsa = [] {
  __builtin_cpu_init();  // static initializers may run before libgcc's own
  if (__builtin_cpu_supports("avx512f")) return 2;
  return __builtin_cpu_supports("avx2") ? 1 : 0;
}();

uint32_t max_bits(const float* x, int64_t n, int isa) {
  if (isa == 2) return max_bits_avx512(x, n);
  if (isa == 1) return max_bits_avx2(x, n);
  return max_bits_scalar(x, n);
}

// Elements from which the scan splits over the threads: one thread scans 150k floats (a
// 1x3x224x224 image, in L2) in 2.3 us, two in 3.3 us; 1.2M floats (8 images) in 47 / 26 us.
constexpr int64_t kScanParallel = int64_t{1} << 19;

// ---- planning ---------------------------------------------------------------------------------

bool is_f32_scalar(const Tensor& t) {
  return t.defined() && t.dtype() == DType::kFloat32 && t.numel() == 1;
}

// A Conv's bound factors (kConv) from constant W and B; kUnknown otherwise. Sets *bias_nonzero.
void plan_conv(const ir::Node& n, ChainClipProof::Step& s, bool* bias_nonzero) {
  *bias_nonzero = false;
  const ir::Value* wv = n.input(1);
  if (!wv || !wv->is_constant()) return;
  const Tensor& w = wv->constant();
  if (w.dtype() != DType::kFloat32 || w.rank() < 3 || w.shape()[0] <= 0) return;
  const int64_t cout = w.shape()[0], taps = w.numel() / cout;
  double factor = 0;
  for (int64_t o = 0; o < cout; ++o) {
    const float* p = w.data<float>() + o * taps;
    double sum = 0;
    for (int64_t k = 0; k < taps; ++k) sum += std::fabs(static_cast<double>(p[k]));
    if (!std::isfinite(sum)) return;  // NaN or infinity in W: no bound
    factor = std::max(factor, sum);
  }
  double bias_max = 0;
  bool nonzero = false;
  const ir::Value* bv = n.num_inputs() > 2 ? n.input(2) : nullptr;
  if (bv) {
    if (!bv->is_constant()) return;
    const Tensor& b = bv->constant();
    if (b.dtype() != DType::kFloat32 || b.numel() != cout) return;
    nonzero = true;
    for (float x : b.span<float>()) {
      if (!std::isfinite(x)) return;
      bias_max = std::max(bias_max, std::fabs(static_cast<double>(x)));
      nonzero = nonzero && x != 0.0f;
    }
  }
  // Rounding: a sum of taps + 1 float32 terms (any order, fused or not) is off by at most
  // (taps + 1) * 2^-24 of the sum of their magnitudes; kUlp doubles that.
  const double margin = 1.0 + static_cast<double>(taps + 2) * kUlp;
  s.transfer = Transfer::kConv;
  s.factor = factor * margin;
  s.bias_max = bias_max * margin;
  *bias_nonzero = nonzero;
}

// Tier 0's Clip bounds of `n` (clip_kernel, variadic.cc): inputs 1 and 2 from opset 11 (float32
// constant scalars here: the kernel's checks), attributes min and max before; absent: -inf / +inf.
bool clip_bounds(const ir::Node& n, float* lo, float* hi) {
  *lo = -std::numeric_limits<float>::infinity();
  *hi = std::numeric_limits<float>::infinity();
  if (n.opset() >= 11) {
    float* out[2] = {lo, hi};
    for (size_t k = 1; k <= 2; ++k) {
      const ir::Value* v = k < n.num_inputs() ? n.input(k) : nullptr;
      if (!v) continue;
      if (!v->is_constant() || !is_f32_scalar(v->constant())) return false;
      *out[k - 1] = v->constant().data<float>()[0];
    }
  } else {
    if (n.has_attr("min")) *lo = n.attr_float("min", 0);
    if (n.has_attr("max")) *hi = n.attr_float("max", 0);
  }
  return true;
}

// A bound oneDNN's clip treats as tier 0 does on finite inputs free of -0: not NaN (tier 0's
// comparisons then keep x) and not -0 (max(+0, -0) may give either zero). oneDNN also rejects
// min > max (tier 0 then gives max everywhere): the planner leaves those in place.
bool post_op_bound(float b) { return !std::isnan(b) && !(b == 0.0f && std::signbit(b)); }

// MaxPool's output bound is its input's when every window holds an in-bounds tap: floor mode,
// explicit pads smaller than the kernel, no dilation (tier 0 gives the lowest float otherwise).
void plan_max_pool(const ir::Node& n, ChainClipProof::Step& s) {
  if (n.attr_int("ceil_mode", 0) != 0) return;
  const std::string pad = n.has_attr("auto_pad") ? n.attr_string("auto_pad", "NOTSET") : "NOTSET";
  if (pad != "NOTSET" && pad != "VALID") return;
  const std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
  for (int64_t d : n.attr_ints("dilations"))
    if (d != 1) return;
  const std::vector<int64_t> pads = n.attr_ints("pads");
  for (size_t i = 0; i < pads.size(); ++i)
    if (kernel.empty() || pads[i] < 0 || pads[i] >= kernel[i % kernel.size()]) return;
  s.transfer = Transfer::kScale;
  s.factor = 1;
}

void plan_unary(const ir::Node& n, ChainClipProof::Step& s) {
  switch (n.op()) {
    case ir::OpKind::Relu:
      s.transfer = Transfer::kScale;
      s.factor = 1;
      return;
    case ir::OpKind::LeakyRelu: {
      const double alpha = std::fabs(static_cast<double>(n.attr_float("alpha", 0.01f)));
      if (!std::isfinite(alpha)) return;
      s.transfer = Transfer::kScale;
      s.factor = std::max(1.0, alpha * (1.0 + kUlp));
      return;
    }
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Tanh:
      s.transfer = Transfer::kSaturate;
      return;
    case ir::OpKind::Clip:
      if (clip_bounds(n, &s.lo, &s.hi)) s.transfer = Transfer::kClamp;
      return;
    default:
      return;
  }
}

// ---- per call ---------------------------------------------------------------------------------

// True if frame's value of `v` (absent: true) is v's planned constant tensor itself.
bool planned_constant(const ir::Value* v, const Frame& frame) {
  if (!v) return true;
  const Tensor& t = frame.values[v->id()];
  return v->is_constant() && t.defined() && t.shares_storage_with(v->constant()) &&
         t.raw_data() == v->constant().raw_data() && t.numel() == v->constant().numel();
}

bool constants_planned(const ir::Node& n, const Frame& frame) {
  for (size_t k = 1; k < n.num_inputs(); ++k)
    if (!planned_constant(n.input(k), frame)) return false;
  return true;
}

// Tier 0's Clip of x into [lo, hi] (in double: exact for float bounds).
double clip_value(double x, double lo, double hi) {
  if (x < lo) x = lo;
  if (x > hi) x = hi;
  return x;
}

}  // namespace

FiniteScan scan_finite(const float* x, int64_t n, int threads, ScanIsa isa) {
  const int level = std::min(kIsa, isa == ScanIsa::kBest ? 2 : isa == ScanIsa::kAvx2 ? 1 : 0);
  uint32_t m = 0;
  if (n >= kScanParallel && threads > 1) {
    std::vector<uint32_t> part(static_cast<size_t>(threads), 0);
    const int64_t chunk = (n + threads - 1) / threads;
    kernels::parallel_for_if(true, threads, threads, [&](int64_t t) {
      const int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
      part[static_cast<size_t>(t)] = max_bits(x + begin, end - begin, level);
    });
    for (uint32_t p : part) m = std::max(m, p);
  } else {
    m = max_bits(x, n, level);
  }
  FiniteScan r;
  r.finite = m < kInfBits;
  std::memcpy(&r.max_abs, &m, sizeof m);
  return r;
}

std::shared_ptr<const ChainClipProof> plan_clip_proof(const ConvChain& c) {
  using Kind = ConvChain::Kind;
  auto p = std::make_shared<ChainClipProof>();
  p->steps.resize(c.steps.size());
  // No Clip in the chain: nothing to prove, and no weight to read (resnet18's 11M weights took
  // ~10 ms to scan).
  if (std::none_of(c.steps.begin(), c.steps.end(), [](const ConvChain::Step& st) {
        return st.kind == Kind::kUnary && st.node->op() == ir::OpKind::Clip;
      }))
    return p;
  std::vector<char> bias_nonzero(c.steps.size(), 0);
  for (size_t si = 0; si < c.steps.size(); ++si) {
    const ConvChain::Step& st = c.steps[si];
    ChainClipProof::Step& s = p->steps[si];
    switch (st.kind) {
      case Kind::kConv: {
        bool nonzero = false;
        plan_conv(*st.node, s, &nonzero);
        bias_nonzero[si] = nonzero;
        break;
      }
      case Kind::kAdd:
        s.transfer = Transfer::kAdd;
        break;
      case Kind::kMaxPool:
        plan_max_pool(*st.node, s);
        break;
      case Kind::kUnary:
        plan_unary(*st.node, s);
        break;
    }
  }
  // Candidates: a Conv (no post-op yet, nonzero B) whose output only a Clip of the chain reads.
  for (size_t si = 0; si < c.steps.size(); ++si) {
    const ConvChain::Step& st = c.steps[si];
    ChainClipProof::Step& s = p->steps[si];
    if (st.kind != Kind::kConv || s.transfer != Transfer::kConv || !bias_nonzero[si] ||
        st.post.kind != nn::ConvPostOp::Kind::kNone)
      continue;
    const ir::Value* v = c.values[static_cast<size_t>(st.out)];
    if (v->users().size() != 1) continue;
    for (size_t ai = si + 1; ai < c.steps.size(); ++ai) {
      const ConvChain::Step& a = c.steps[ai];
      const ChainClipProof::Step& as = p->steps[ai];
      if (a.node != v->users()[0]) continue;
      bool other_use = false;
      for (size_t k = 1; k < a.node->num_inputs(); ++k)
        other_use = other_use || a.node->input(k) == v;
      if (a.kind == Kind::kUnary && !a.aliased && a.node->op() == ir::OpKind::Clip &&
          as.transfer == Transfer::kClamp && post_op_bound(as.lo) && post_op_bound(as.hi) &&
          as.lo <= as.hi && !other_use && a.in[0] == st.out) {
        s.clip = static_cast<int>(ai);
        s.post = {nn::ConvPostOp::Kind::kClip, as.lo, as.hi};
        p->any_clip = true;
      }
      break;
    }
  }
  return p;
}

void prove_clip_post_ops(const ConvChain& c, const ChainClipProof& p, const Frame& frame,
                         int threads, std::vector<uint8_t>& fused) {
  fused.assign(c.steps.size(), 0);
  const ClipProofMode mode = g_mode.load(std::memory_order_relaxed);
  if (!p.any_clip || mode == ClipProofMode::kNever) return;
  if (mode == ClipProofMode::kAlways) {
    for (size_t si = 0; si < p.steps.size(); ++si)
      if (p.steps[si].clip >= 0) fused[si] = fused[static_cast<size_t>(p.steps[si].clip)] = 1;
    return;
  }
  std::vector<double> bound(c.values.size(), kInf);
  for (size_t i = 0; i < c.values.size(); ++i) {
    if (!c.external[i]) continue;
    const Tensor& t = frame.values[c.values[i]->id()];
    if (!t.defined() || t.dtype() != DType::kFloat32) continue;
    const FiniteScan s = scan_finite(t.data<float>(), t.numel(), threads);
    if (s.finite) bound[i] = s.max_abs;
  }
  for (size_t si = 0; si < c.steps.size(); ++si) {
    const ConvChain::Step& st = c.steps[si];
    const ChainClipProof::Step& s = p.steps[si];
    const double b0 = bound[static_cast<size_t>(st.in[0])];
    double out = kInf;
    switch (s.transfer) {
      case Transfer::kUnknown:
        break;
      case Transfer::kConv:
        if (constants_planned(*st.node, frame)) out = s.factor * b0 + s.bias_max;
        break;
      case Transfer::kScale:
        out = s.factor * b0;
        break;
      case Transfer::kSaturate:
        if (b0 < kInf) out = 1;
        break;
      case Transfer::kClamp:
        if (b0 < kInf && constants_planned(*st.node, frame))
          out = std::max(std::fabs(clip_value(-b0, s.lo, s.hi)),
                         std::fabs(clip_value(b0, s.lo, s.hi)));
        break;
      case Transfer::kAdd:
        out = (b0 + bound[static_cast<size_t>(st.in[1])]) * (1.0 + kUlp);
        break;
    }
    if (!(out < kProofLimit)) out = kInf;  // also NaN (0 * inf)
    bound[static_cast<size_t>(st.out)] = out;
    // The Conv's output is finite (hence no NaN) and, with a nonzero B, never -0; the Clip's
    // bounds must be the planned ones (checked with its step's transfer, so here too).
    if (s.clip >= 0 && out < kInf &&
        constants_planned(*c.steps[static_cast<size_t>(s.clip)].node, frame))
      fused[si] = fused[static_cast<size_t>(s.clip)] = 1;
  }
}

void set_clip_proof_mode_for_testing(ClipProofMode mode) {
  g_mode.store(mode, std::memory_order_relaxed);
}

}  // namespace tierjit::interp
