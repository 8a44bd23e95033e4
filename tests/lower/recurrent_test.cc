// Differential tests of recurrent regions (kir/lower/lower_recurrent.cc, recurrent_cell.cc)
// against tier 0 (src/interp/kernels/rnn.cc: oneDNN's RNN primitives, or its reference path for
// sequence_lens, clip, input_forget and other activations): LSTM and GRU (linear_before_reset 0
// and 1), forward / reverse / bidirectional, batch 0, 1, odd and past one tile (16 rows), one and
// many steps, initial states, sequence_lens, peepholes, NaN inputs, one and two threads, weights
// as constants (packed once) and as run-time inputs (packed per call).
// Tolerance: each gate is a float32 sum of I + H products in another order than oneDNN's, and the
// transcendentals are codegen's polynomials (a few ulp); the gates contract, so differences stay
// at the size tier 0's two paths show between themselves (rnn.cc: at most 2.5e-6 at I + H = 192):
// atol 2e-5, rtol 1e-4.
#include "lower_test_util.h"

namespace tierjit::lower_testing {
namespace {

using ir::OpKind;
using passes::testing::attr_float;
using passes::testing::attr_int;
using passes::testing::Attrs;
using passes::testing::C;
using passes::testing::dims;
using passes::testing::S;

ir::Attribute attr_string(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}
ir::Attribute attr_floats(std::vector<float> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}
ir::Attribute attr_strings(std::vector<std::string> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kStrings;
  a.strings = std::move(v);
  return a;
}

struct Rnn {
  bool lstm = true;
  int64_t seq = 5, batch = 3, input = 10, hidden = 20;
  std::string direction = "forward";
  bool bias = true;
  bool initial = false;    // initial_h (and initial_c) as feeds
  bool lens = false;       // sequence_lens as a feed
  bool peepholes = false;  // LSTM P
  bool weights_as_feeds = false;
  bool nan = false;                  // one NaN in X
  int64_t lbr = 0;                   // GRU linear_before_reset
  Attrs extra;                       // clip, activations, input_forget, layout
  std::vector<int32_t> lens_values;  // default: varied lengths in [0, seq]
};

struct Built {
  GraphBuilder b;
  std::vector<Tensor> feeds;
};

int64_t dirs(const Rnn& r) { return r.direction == "bidirectional" ? 2 : 1; }

std::unique_ptr<Built> build(const Rnn& r) {
  auto out = std::make_unique<Built>();
  GraphBuilder& b = out->b;
  const int64_t D = dirs(r), G = r.lstm ? 4 : 3, H = r.hidden, I = r.input, N = r.batch;
  Tensor x = random_f32({r.seq, N, I}, 1);
  if (r.nan && x.numel() > 0) x.data<float>()[x.numel() / 2] = std::nanf("");
  ir::Value* xv = b.input("X", DType::kFloat32, dims({S("S"), S("N"), C(I)}));
  out->feeds.push_back(x);
  auto weight = [&](const std::string& name, Tensor t) -> ir::Value* {
    if (!r.weights_as_feeds) return b.constant(name, std::move(t));
    ir::SymShape s;
    for (int64_t d : t.shape()) s.push_back(C(d));
    out->feeds.push_back(t);
    return b.input(name, DType::kFloat32, s);
  };
  ir::Value* w = weight("W", random_f32({D, G * H, I}, 2, -0.4f, 0.4f));
  ir::Value* rr = weight("R", random_f32({D, G * H, H}, 3, -0.4f, 0.4f));
  std::vector<ir::Value*> ins = {xv, w, rr, nullptr, nullptr, nullptr, nullptr, nullptr};
  if (r.bias) ins[3] = b.constant("B", random_f32({D, 2 * G * H}, 4, -0.5f, 0.5f));
  if (r.lens) {
    std::vector<int32_t> v = r.lens_values;
    for (int64_t n = static_cast<int64_t>(v.size()); n < N; ++n)
      v.push_back(static_cast<int32_t>((n * 7 + 3) % (r.seq + 1)));
    if (N > 0) v[0] = static_cast<int32_t>(r.seq);
    ins[4] = b.input("sequence_lens", DType::kInt32, dims({S("N")}));
    out->feeds.push_back(Tensor::from_vector<int32_t>({N}, v));
  }
  if (r.initial) {
    ins[5] = b.input("initial_h", DType::kFloat32, dims({C(D), S("N"), C(H)}));
    out->feeds.push_back(random_f32({D, N, H}, 5));
    if (r.lstm) {
      ins[6] = b.input("initial_c", DType::kFloat32, dims({C(D), S("N"), C(H)}));
      out->feeds.push_back(random_f32({D, N, H}, 6, -2.f, 2.f));
    }
  }
  if (r.peepholes) ins[7] = b.constant("P", random_f32({D, 3 * H}, 7, -0.5f, 0.5f));
  if (!r.lstm) ins.resize(6);
  while (!ins.empty() && !ins.back()) ins.pop_back();
  Attrs attrs = {{"hidden_size", attr_int(H)}, {"direction", attr_string(r.direction)}};
  if (!r.lstm) attrs.push_back({"linear_before_reset", attr_int(r.lbr)});
  for (auto& a : r.extra) attrs.push_back(a);
  ir::Node* n = b.node_n(r.lstm ? OpKind::LSTM : OpKind::GRU, ins, "rnn", r.lstm ? 3 : 2, attrs);
  for (ir::Value* v : n->outputs()) b.output(v);
  b.infer();
  return out;
}

DiffOptions rnn_opts(int threads = 1) {
  DiffOptions o;
  o.kinds = {passes::RegionKind::kRecurrent};
  o.tol.rtol = 1e-4;
  o.tol.atol = 2e-5;
  o.threads = threads;
  return o;
}

std::string describe(const Rnn& r) {
  return std::string(r.lstm ? "LSTM" : "GRU") + " S=" + std::to_string(r.seq) +
         " N=" + std::to_string(r.batch) + " I=" + std::to_string(r.input) +
         " H=" + std::to_string(r.hidden) + " " + r.direction + (r.lens ? " lens" : "") +
         (r.initial ? " initial" : "") + (r.weights_as_feeds ? " weights-as-feeds" : "") +
         (r.lbr ? " lbr" : "");
}

void check_all_levels(const Rnn& r, int threads = 1) {
  SCOPED_TRACE(describe(r));
  auto m = build(r);
  expect_all_levels_match(m->b.g, m->feeds, rnn_opts(threads));
}

void check(const Rnn& r, int threads = 1, kir::ShapeLevel level = kir::ShapeLevel::kGeneric,
           int tier = 2) {
  SCOPED_TRACE(describe(r));
  auto m = build(r);
  DiffOptions o = rnn_opts(threads);
  o.level = level;
  o.tier = tier;
  EXPECT_EQ(expect_regions_match_tier0(m->b.g, m->feeds, o), 1);
}

TEST(LowerRecurrent, PartitionMakesARecurrentRegion) {
  auto m = build(Rnn{});
  auto part = passes::partition_graph(m->b.g, {});
  ASSERT_TRUE(part.ok());
  ASSERT_EQ(part->regions.size(), 1u);
  EXPECT_EQ(part->regions[0].kind, passes::RegionKind::kRecurrent);
  EXPECT_EQ(part->regions[0].name, "lstm_0");
  EXPECT_TRUE(kir::has_lowering(part->regions[0]));
}

TEST(LowerRecurrent, LstmEveryLevelAndTier) {
  check_all_levels(Rnn{});
  Rnn r;
  r.direction = "bidirectional";
  r.initial = true;
  check_all_levels(r);
}

TEST(LowerRecurrent, GruEveryLevelAndTier) {
  for (int64_t lbr : {0, 1}) {
    Rnn r;
    r.lstm = false;
    r.lbr = lbr;
    r.direction = "bidirectional";
    r.initial = true;
    check_all_levels(r);
  }
}

TEST(LowerRecurrent, BatchAndSequenceSizes) {
  for (bool lstm : {true, false})
    for (int64_t n : {0, 1, 3, 17, 40})
      for (int64_t s : {0, 1, 37}) {
        Rnn r;
        r.lstm = lstm;
        r.lbr = lstm ? 0 : 1;
        r.batch = n;
        r.seq = s;
        check(r);
      }
}

TEST(LowerRecurrent, Directions) {
  for (bool lstm : {true, false})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int64_t n : {1, 19}) {
        Rnn r;
        r.lstm = lstm;
        r.direction = dir;
        r.batch = n;
        r.seq = 9;
        r.initial = n > 1;
        check(r);
      }
}

TEST(LowerRecurrent, SequenceLengths) {
  for (bool lstm : {true, false})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int64_t n : {1, 5, 21}) {
        Rnn r;
        r.lstm = lstm;
        r.direction = dir;
        r.batch = n;
        r.seq = 11;
        r.lens = true;
        r.initial = true;
        check(r);
        check(r, 1, kir::ShapeLevel::kExact);
      }
}

TEST(LowerRecurrent, LstmSmallGeometry) {
  // lstm_small's cell (I 64, H 128) at batch 1, 8 and 64: the chunked projection, several tiles.
  for (int64_t n : {1, 8, 64}) {
    Rnn r;
    r.input = 64;
    r.hidden = 128;
    r.batch = n;
    r.seq = 12;
    check(r, 1, kir::ShapeLevel::kExact);
    check(r, 2, kir::ShapeLevel::kGeneric);
  }
}

TEST(LowerRecurrent, TwoThreads) {
  for (bool lstm : {true, false})
    for (const char* dir : {"forward", "bidirectional"})
      for (int64_t n : {1, 2, 7, 40}) {
        Rnn r;
        r.lstm = lstm;
        r.direction = dir;
        r.batch = n;
        r.seq = 30;
        r.input = 32;
        r.hidden = 64;
        check(r, 2);
      }
}

TEST(LowerRecurrent, WeightsAsInputsArePackedPerCall) {
  for (bool lstm : {true, false}) {
    Rnn r;
    r.lstm = lstm;
    r.weights_as_feeds = true;
    r.direction = "bidirectional";
    check(r);
    check(r, 1, kir::ShapeLevel::kExact, 1);
  }
}

TEST(LowerRecurrent, Attributes) {
  {
    Rnn r;  // peepholes, clip, input_forget
    r.peepholes = true;
    r.extra = {{"clip", attr_float(0.7f)}, {"input_forget", attr_int(1)}};
    r.initial = true;
    check(r);
  }
  {
    Rnn r;  // other activations, with alpha / beta
    r.extra = {{"activations", attr_strings({"HardSigmoid", "LeakyRelu", "Softsign"})},
               {"activation_alpha", attr_floats({0.3f, 0.2f})},
               {"activation_beta", attr_floats({0.4f})}};
    check(r);
  }
  {
    Rnn r;
    r.lstm = false;
    r.direction = "bidirectional";
    r.extra = {{"activations", attr_strings({"Relu", "Tanh", "Sigmoid", "Elu"})},
               {"clip", attr_float(1.5f)}};
    check(r);
  }
  {
    Rnn r;  // no bias
    r.bias = false;
    r.lstm = false;
    check(r);
  }
}

TEST(LowerRecurrent, NanInputPropagatesAsInTier0) {
  for (bool lstm : {true, false}) {
    Rnn r;
    r.lstm = lstm;
    r.nan = true;
    r.batch = 4;
    r.direction = "bidirectional";
    check(r);
  }
}

TEST(LowerRecurrent, LayoutOneIsUnsupportedNamingTheAttribute) {
  Rnn r;
  r.extra = {{"layout", attr_int(1)}};
  auto m = build(r);
  auto part = passes::partition_graph(m->b.g, {});
  ASSERT_TRUE(part.ok());
  EXPECT_FALSE(kir::has_lowering(part->regions[0]));
  kir::LowerOptions lo;
  for (const ir::Value* v : part->regions[0].inputs) {
    kir::TensorSpec s;
    s.dtype = v->type().dtype;
    s.dims.assign(v->type().shape->size(), -1);
    s.bounds.assign(s.dims.size(), -1);
    lo.inputs.push_back(s);
  }
  for (const ir::Value* v : part->regions[0].outputs) {
    kir::TensorSpec s;
    s.dtype = DType::kFloat32;
    s.dims.assign(v->type().shape ? v->type().shape->size() : 0, -1);
    s.bounds.assign(s.dims.size(), -1);
    lo.outputs.push_back(s);
  }
  auto lowered = kir::lower_region(part->regions[0], lo);
  ASSERT_FALSE(lowered.ok());
  EXPECT_EQ(lowered.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(lowered.status().message().find("layout"), std::string::npos)
      << lowered.status().message();
}

}  // namespace
}  // namespace tierjit::lower_testing
