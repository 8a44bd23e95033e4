// Tier-0 conv chains with Clips run as oneDNN post-ops where a per-call proof allows it
// (interp/kernels/conv_chain_bounds.h). Each chain runs three ways: with the proof (the default),
// with every Clip as its tier-0 kernel (kNever: the path before the proof existed) and node by
// node; the first two must agree BIT FOR BIT (same oneDNN convolutions, the Clip applied by
// oneDNN or by tier 0), the node-by-node reference within 1e-5 (1x1 and depthwise layers run
// other oneDNN kernels alone, see conv_chain_test.cc). mobilenet-like blocks (1x1 expand, Clip,
// depthwise 3x3 stride 1 and 2, Clip, 1x1 project, residual Add); inputs random, with NaN, +-inf,
// -0, values near FLT_MAX; zero bias entries, no bias, Clips with only min or max, Clip-6
// attributes, size-1 dims, odd channel counts; the scan on every vector-tail length.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "interp/executor.h"
#include "interp/kernels/conv_chain.h"
#include "interp/kernels/conv_chain_bounds.h"
#include "node_runner.h"
#include "ref_graph_builder.h"

namespace tierjit::testing {
namespace {

using interp::ClipProofMode;
using ir::OpKind;
using Attrs = RefGraphBuilder::Attrs;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor scalar(float v) { return Tensor::from_vector<float>({}, {v}); }

// The graph and its reference values (ref_graph_builder.h), with mobilenet-like blocks.
class Builder : public RefGraphBuilder {
 public:
  Builder() : RefGraphBuilder("clip_chain") {}
  bool zero_bias_entry = false;  ///< the next conv's bias gets a 0 in its middle channel
  bool no_bias = false;          ///< the next conv has no bias

  ir::Value* conv(ir::Value* x, int64_t cin, int64_t cout, int64_t k, int64_t stride = 1,
                  int64_t group = 1) {
    std::vector<ir::Value*> in{x, constant(random_f32({cout, cin / group, k, k}, seed_++, 0, 0.5f))};
    if (!no_bias) {
      Tensor b = random_f32({cout}, seed_++);
      for (float& v : b.span<float>())
        if (v == 0.0f) v = 0.25f;  // nonzero unless asked
      if (zero_bias_entry) b.data<float>()[cout / 2] = 0.0f;
      in.push_back(constant(b));
    }
    zero_bias_entry = no_bias = false;
    Attrs attrs{{"pads", attr_ints({k / 2, k / 2, k / 2, k / 2})},
                {"strides", attr_ints({stride, stride})}};
    if (group != 1) attrs.push_back({"group", attr_int(group)});
    return node(OpKind::Conv, in, attrs);
  }
  ir::Value* relu6(ir::Value* v) {
    return node(OpKind::Clip, {v, constant(scalar(0.0f)), constant(scalar(6.0f))});
  }
  // x [n, c, h, w] -> 1x1 c -> e, Clip, depthwise 3x3 `stride`, Clip, 1x1 e -> out, + x if it fits.
  ir::Value* block(ir::Value* x, int64_t c, int64_t e, int64_t out, int64_t stride) {
    ir::Value* h = relu6(conv(x, c, e, 1));
    h = relu6(conv(h, e, e, 3, stride, e));
    ir::Value* p = conv(h, e, out, 1);
    return stride == 1 && c == out ? node(OpKind::Add, {p, x}) : p;
  }

 private:
  uint32_t seed_ = 300;
};

std::vector<const ir::Node*> node_list(const ir::Graph& g) {
  std::vector<const ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  return nodes;
}

std::vector<Tensor> run(const Builder& b, ClipProofMode mode, int threads) {
  interp::set_clip_proof_mode_for_testing(mode);
  interp::ExecOptions opt;
  opt.intra_op_threads = threads;
  auto out = interp::run_graph(b.g, b.feeds, opt);
  interp::set_clip_proof_mode_for_testing(ClipProofMode::kProve);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : std::vector<Tensor>();
}

bool bit_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].shape() != b[i].shape() ||
        std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()) != 0)
      return false;
  return true;
}

struct Proof {
  size_t chains = 0;
  int planned = 0;  ///< Clips planned as possible post-ops
  int fused = 0;    ///< of those, proven for b's feeds
};

// What the proof decides for b's feeds (the chains' plans, the per-call check).
Proof proof_of(const Builder& b, int threads) {
  const std::vector<const ir::Node*> nodes = node_list(b.g);
  const interp::FusionPlan plan = interp::plan_fusion(nodes, b.g);
  interp::Frame frame;
  interp::init_frame(frame, b.g);
  for (size_t i = 0; i < b.feeds.size(); ++i) frame.values[b.g.inputs()[i]->id()] = b.feeds[i];
  Proof r;
  r.chains = plan.conv_chains.size();
  for (const auto& c : plan.conv_chains) {
    std::shared_ptr<const interp::ChainClipProof> p = interp::plan_clip_proof(*c);
    std::vector<uint8_t> fused;
    interp::prove_clip_post_ops(*c, *p, frame, threads, fused);
    for (size_t si = 0; si < p->steps.size(); ++si) {
      r.planned += p->steps[si].clip >= 0;
      r.fused += p->steps[si].clip >= 0 && fused[si];
    }
  }
  return r;
}

// Runs b with the proof and without (bit for bit) and against the node-by-node reference
// (1e-5; NaN where the reference has NaN; skipped for `compare_ref` false: sums near FLT_MAX
// overflow or not by summation order), at 1 and 2 threads; returns the proof's decisions.
Proof check(const Builder& b, bool compare_ref = true) {
  Proof p;
  for (int threads : {1, 2}) {
    const std::vector<Tensor> proved = run(b, ClipProofMode::kProve, threads);
    const std::vector<Tensor> never = run(b, ClipProofMode::kNever, threads);
    EXPECT_TRUE(bit_equal(proved, never))
        << "Clip post-op differs from tier 0's Clip, threads " << threads;
    for (size_t i = 0; compare_ref && i < proved.size() && i < b.g.outputs().size(); ++i)
      expect_tensor_near(proved[i], b.ref.at(b.g.outputs()[i]), 1e-5, 1e-5);
    p = proof_of(b, threads);
    EXPECT_EQ(p.chains, 1u);
  }
  return p;
}

// Two inverted-residual blocks (stride 1 with residual, stride 2) after a 3x3 stem with Clip.
void mobilenet_like(Builder& b, const Tensor& x, int64_t c = 16, int64_t e = 48) {
  ir::Value* in = b.input(x);
  ir::Value* h = b.relu6(b.conv(in, x.dim(1), c, 3, 2));
  h = b.block(h, c, e, c, 1);
  h = b.block(h, c, e, c + 8, 2);
  b.output(h);
}

// Every instruction set (AVX-512F where the CPU has it, AVX2, scalar), 1 and 2 threads (2^19
// elements and more split over the threads), every tail length around the 16- and 32-lane loops.
TEST(ConvChainClip, ScanFindsEveryNonFiniteAndTheLargestMagnitude) {
  using interp::ScanIsa;
  const float specials[] = {kNaN, -kNaN, kInf, -kInf, FLT_MAX, -FLT_MAX, -0.0f, 1e-45f, -7.5f};
  auto largest = [](const float* x, int64_t n) {
    float m = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
    return m;
  };
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{31},
                    int64_t{32}, int64_t{33}, int64_t{100}, (int64_t{1} << 19) + 3}) {
    Tensor t = random_f32({n}, static_cast<uint32_t>(n), 0, 2.0f);
    float* x = t.data<float>();
    for (ScanIsa isa : {ScanIsa::kBest, ScanIsa::kAvx2, ScanIsa::kScalar})
      for (int threads : {1, 2}) {
        interp::FiniteScan s = interp::scan_finite(x, n, threads, isa);
        EXPECT_TRUE(s.finite);
        EXPECT_EQ(s.max_abs, largest(x, n)) << n;
      }
    for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
      for (float sp : specials) {
        const float keep = x[pos];
        x[pos] = sp;
        const float want = largest(x, n);
        for (ScanIsa isa : {ScanIsa::kBest, ScanIsa::kAvx2, ScanIsa::kScalar})
          for (int threads : {1, 2}) {
            interp::FiniteScan s = interp::scan_finite(x, n, threads, isa);
            EXPECT_EQ(s.finite, std::isfinite(sp)) << n << " " << pos << " " << sp;
            if (std::isfinite(sp)) {
              EXPECT_EQ(s.max_abs, want) << n << " " << pos << " " << sp;
            }
          }
        x[pos] = keep;
      }
    }
  }
  EXPECT_TRUE(interp::scan_finite(nullptr, 0, 2).finite);
}

TEST(ConvChainClip, RandomInputsFuseEveryClip) {
  for (int64_t n : {1, 2}) {
    Builder b;
    mobilenet_like(b, random_f32({n, 3, 20, 18}, 1, 0, 3.0f));
    const Proof p = check(b);
    EXPECT_EQ(p.planned, 5);
    EXPECT_EQ(p.fused, 5);
  }
}

TEST(ConvChainClip, NaNOrInfinityInputsFuseNothing) {
  for (float special : {kNaN, kInf, -kInf}) {
    Tensor x = random_f32({2, 3, 20, 18}, 2);
    for (int64_t i = 5; i < x.numel(); i += 97) x.data<float>()[i] = special;
    Builder b;
    mobilenet_like(b, x);
    const Proof p = check(b);
    EXPECT_EQ(p.planned, 5);
    EXPECT_EQ(p.fused, 0) << special;
  }
}

// Without the proof the post-op would differ: NaN becomes the Clip's min (here the test can fail).
TEST(ConvChainClip, FusingWithoutTheProofDiffersOnNaN) {
  Tensor x = random_f32({1, 3, 20, 18}, 3);
  for (int64_t i = 1; i < x.numel(); i += 53) x.data<float>()[i] = kNaN;
  Builder b;
  mobilenet_like(b, x);
  const std::vector<Tensor> never = run(b, ClipProofMode::kNever, 1);
  const std::vector<Tensor> always = run(b, ClipProofMode::kAlways, 1);
  EXPECT_FALSE(bit_equal(always, never));
  bool nan_in_never = false, nan_in_always = false;
  for (float v : never[0].span<float>()) nan_in_never = nan_in_never || std::isnan(v);
  for (float v : always[0].span<float>()) nan_in_always = nan_in_always || std::isnan(v);
  EXPECT_TRUE(nan_in_never);
  EXPECT_FALSE(nan_in_always);  // the stem's Clip post-op mapped every NaN to 0
}

TEST(ConvChainClip, HugeInputsFailTheProofAndStillMatch) {
  // The stem's bound reaches kProofLimit (1e30): its Clip's output counts as unknown (it might
  // be NaN), so nothing after it is proven either.
  for (float big : {FLT_MAX, 3e38f, 1e36f, 5e29f}) {
    Tensor x = random_f32({1, 3, 20, 18}, 4);
    for (int64_t i = 0; i < x.numel(); i += 11) x.data<float>()[i] = (i % 2 ? -big : big);
    Builder b;
    mobilenet_like(b, x);
    const Proof p = check(b, big < 1e30f);
    EXPECT_EQ(p.planned, 5);
    EXPECT_EQ(p.fused, 0) << big;
  }
  // Large but provably safe: every Clip fused.
  Tensor x = random_f32({1, 3, 20, 18}, 5, 0, 1e20f);
  Builder b;
  mobilenet_like(b, x);
  EXPECT_EQ(check(b).fused, 5);
}

TEST(ConvChainClip, NegativeZeroInputs) {
  Tensor x = random_f32({2, 3, 9, 9}, 6);
  for (int64_t i = 0; i < x.numel(); i += 2) x.data<float>()[i] = -0.0f;
  Builder b;
  mobilenet_like(b, x);
  EXPECT_EQ(check(b).fused, 5);
  Tensor z = Tensor::empty(DType::kFloat32, {1, 3, 9, 9});
  for (float& v : z.span<float>()) v = -0.0f;
  Builder bz;
  mobilenet_like(bz, z);
  EXPECT_EQ(check(bz).fused, 5);
}

// A bias with a zero entry (or none) leaves -0 possible: that Conv's Clip is not fused.
TEST(ConvChainClip, ZeroBiasEntryOrNoBiasKeepsTheClip) {
  for (bool none : {false, true}) {
    Builder b;
    ir::Value* in = b.input(random_f32({1, 8, 10, 10}, 7));
    b.zero_bias_entry = !none;
    b.no_bias = none;
    ir::Value* h = b.relu6(b.conv(in, 8, 24, 1));
    h = b.relu6(b.conv(h, 24, 24, 3, 1, 24));
    b.output(b.conv(h, 24, 8, 1));
    const Proof p = check(b);
    EXPECT_EQ(p.planned, 1);
    EXPECT_EQ(p.fused, 1);
  }
  // All-zero input and no bias: every output is a zero (the one oneDNN and tier 0 agree on).
  Builder b;
  Tensor z = Tensor::empty(DType::kFloat32, {1, 4, 5, 5});
  for (float& v : z.span<float>()) v = -0.0f;
  ir::Value* in = b.input(z);
  b.no_bias = true;
  ir::Value* h = b.relu6(b.conv(in, 4, 12, 1));
  b.no_bias = true;
  h = b.relu6(b.conv(h, 12, 12, 3, 2, 12));
  b.output(b.conv(h, 12, 4, 1));
  EXPECT_EQ(check(b).planned, 0);
}

// Clip bounds: only min, only max (opset 13 inputs), Clip-6 attributes; min above max (oneDNN
// rejects it), -0 and NaN bounds are never fused.
TEST(ConvChainClip, ClipBoundForms) {
  struct Form {
    int opset;
    std::optional<float> lo, hi;
    bool fusible;
  };
  const Form forms[] = {{13, 0.0f, std::nullopt, true},
                        {13, std::nullopt, 2.0f, true},
                        {13, -1.5f, 0.75f, true},
                        {6, 0.0f, 6.0f, true},
                        {6, std::nullopt, 1.0f, true},
                        {13, 2.0f, 1.0f, false},
                        {13, -0.0f, 6.0f, false},
                        {13, 0.0f, kNaN, false},
                        {13, std::nullopt, std::nullopt, true}};
  for (const Form& f : forms) {
    SCOPED_TRACE(::testing::Message()
                 << f.opset << " " << f.lo.value_or(-1234) << " " << f.hi.value_or(-1234));
    Builder b;
    ir::Value* in = b.input(random_f32({2, 5, 7, 9}, 8, 0, 2.0f));
    auto clip = [&](ir::Value* v) {
      if (f.opset < 11) {
        Attrs a;
        if (f.lo) a.push_back({"min", attr_float(*f.lo)});
        if (f.hi) a.push_back({"max", attr_float(*f.hi)});
        return b.node(OpKind::Clip, {v}, a, f.opset);
      }
      std::vector<ir::Value*> ins{v, f.lo ? b.constant(scalar(*f.lo)) : nullptr};
      if (f.hi) ins.push_back(b.constant(scalar(*f.hi)));
      return b.node(OpKind::Clip, ins, {}, f.opset);
    };
    ir::Value* h = clip(b.conv(in, 5, 17, 1));
    h = clip(b.conv(h, 17, 17, 3, 2, 17));
    b.output(b.conv(h, 17, 3, 1));
    const Proof p = check(b);
    EXPECT_EQ(p.planned, f.fusible ? 2 : 0) << f.opset;
    EXPECT_EQ(p.fused, p.planned);
  }
}

// Size-1 dims, odd channel counts, one channel: chains still fuse and match.
TEST(ConvChainClip, SizeOneDimsAndOddChannels) {
  for (const Shape& s :
       {Shape{1, 1, 1, 1}, Shape{1, 3, 1, 7}, Shape{3, 5, 6, 1}, Shape{1, 7, 2, 2}}) {
    SCOPED_TRACE(shape_to_string(s));
    Builder b;
    ir::Value* in = b.input(random_f32(s, 9, 0, 4.0f));
    ir::Value* h = b.relu6(b.conv(in, s[1], 1, 1));
    h = b.relu6(b.conv(h, 1, 1, 3, 2, 1));
    h = b.relu6(b.conv(h, 1, 13, 1));
    h = b.block(h, 13, 39, 13, 1);
    b.output(h);
    const Proof p = check(b);
    EXPECT_EQ(p.planned, 5);
    EXPECT_EQ(p.fused, 5);
  }
}

// Other members between: Sigmoid and Tanh bound by 1, LeakyRelu, MaxPool; a residual Add of
// two branches; an external second Add input (scanned too).
TEST(ConvChainClip, BoundsThroughOtherMembers) {
  auto build = [](Builder& b, const Tensor& side_value) {
    ir::Value* in = b.input(random_f32({2, 4, 12, 12}, 10, 0, 100.0f));
    ir::Value* side = b.input(side_value);
    ir::Value* h = b.node(OpKind::Sigmoid, {b.conv(in, 4, 8, 3)});
    h = b.relu6(b.conv(h, 8, 8, 3));
    h = b.node(OpKind::MaxPool, {h},
               {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}});
    h = b.node(OpKind::LeakyRelu, {b.conv(h, 8, 8, 1)}, {{"alpha", attr_float(0.2f)}}, 16);
    ir::Value* t = b.node(OpKind::Tanh, {b.conv(h, 8, 8, 3)});
    h = b.node(OpKind::Add, {b.node(OpKind::Add, {t, h}), side});
    h = b.relu6(b.conv(h, 8, 16, 1));
    b.output(b.conv(h, 16, 4, 3));
  };
  Tensor side = random_f32({2, 8, 6, 6}, 11);
  Builder b1;
  build(b1, side);
  Proof p = check(b1);
  EXPECT_EQ(p.planned, 2);
  EXPECT_EQ(p.fused, 2);
  // NaN in the side input: the last Clip's proof fails, the first still holds.
  side.data<float>()[17] = kNaN;
  Builder b2;
  build(b2, side);
  p = check(b2);
  EXPECT_EQ(p.planned, 2);
  EXPECT_EQ(p.fused, 1);
}

}  // namespace
}  // namespace tierjit::testing
