// Differential tests of the elementwise lowering (kir/lower/lower_elementwise.cc, lower_ops.cc)
// against tier 0: every lowered op at exact / shape-class / generic level and tiers 1 and 2, on
// size-0, size-1 and odd sizes, broadcasting on every axis, NaN/inf/-0 inputs and int dtypes.
// Tolerances: exact ops (arithmetic, comparisons, selects, casts) are compared bit for bit via
// rtol = atol = 0; transcendentals carry codegen's polynomial error (docs/codegen.md: <= 8 ulp),
// checked with rtol 2e-6 plus an atol for results near 0.
#include <limits>

#include "kir/lower/lower_ops.h"
#include "lower_test_util.h"

namespace tierjit::lower_testing {
namespace {

using ir::OpKind;
using passes::testing::Attrs;
using passes::testing::attr_float;
using passes::testing::attr_int;
using passes::testing::C;
using passes::testing::dims;
using passes::testing::S;

constexpr Tolerance kExact{0, 0};
constexpr Tolerance kMath{2e-6, 1e-7};

/// One graph input: dtype, symbolic shape in the graph, concrete shape of the feed.
struct In {
  DType dtype = DType::kFloat32;
  ir::SymShape sym;
  Shape shape;
};

/// Random feed: floats uniform in [lo, hi) with NaN, +-inf, -0 and 0 at fixed positions (when
/// `specials`); integers in [-20, 20] with zeros; bools half true.
Tensor feed(const In& in, uint32_t seed, float lo, float hi, bool specials) {
  Tensor t = Tensor::empty(in.dtype, in.shape);
  std::mt19937 rng(seed);
  const int64_t n = t.numel();
  switch (in.dtype) {
    case DType::kFloat32: {
      std::uniform_real_distribution<float> u(lo, hi);
      auto s = t.span<float>();
      for (float& v : s) v = u(rng);
      if (specials) {
        const float sp[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), -0.0f, 0.0f, 1.0f};
        for (int64_t k = 0; k < 6 && k * 7 < n; ++k) s[k * 7] = sp[k];
      }
      break;
    }
    case DType::kFloat64: {
      std::uniform_real_distribution<double> u(lo, hi);
      for (double& v : t.span<double>()) v = u(rng);
      break;
    }
    case DType::kBool: {
      for (bool& v : t.span<bool>()) v = (rng() & 1) != 0;
      break;
    }
    default: {
      std::uniform_int_distribution<int> u(-20, 20);
      for (int64_t k = 0; k < n; ++k) {
        const int v = k % 5 == 3 ? 0 : u(rng);
        switch (in.dtype) {
          case DType::kInt32: t.data<int32_t>()[k] = v; break;
          case DType::kInt64: t.data<int64_t>()[k] = v; break;
          case DType::kInt8: t.data<int8_t>()[k] = static_cast<int8_t>(v); break;
          case DType::kUInt8: t.data<uint8_t>()[k] = static_cast<uint8_t>(v < 0 ? -v : v); break;
          default: ADD_FAILURE() << "no feed for " << dtype_name(in.dtype);
        }
      }
    }
  }
  return t;
}

struct Case {
  OpKind op;
  std::vector<In> ins;
  Attrs attrs = {};
  Tolerance tol = kExact;
  float lo = -3, hi = 3;
  bool specials = true;
  int opset = 17;
};

/// A graph of one `op` node on fresh inputs, checked at every level and tier against tier 0.
void check(const Case& c) {
  SCOPED_TRACE(std::string(ir::op_name(c.op)) + " on " + std::string(dtype_name(c.ins.at(0).dtype)));
  GraphBuilder b;
  b.opset = c.opset;
  std::vector<ir::Value*> vs;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < c.ins.size(); ++i) {
    vs.push_back(b.input("x" + std::to_string(i), c.ins[i].dtype, c.ins[i].sym));
    feeds.push_back(feed(c.ins[i], 17 + static_cast<uint32_t>(i), c.lo, c.hi, c.specials));
  }
  b.output(b.node(c.op, vs, "y", c.attrs));
  b.infer();
  DiffOptions o;
  o.tol = c.tol;
  o.kinds = {passes::RegionKind::kElementwise};
  expect_all_levels_match(b.g, feeds, o);
}

In f32(ir::SymShape sym, Shape shape) { return In{DType::kFloat32, std::move(sym), std::move(shape)}; }

In f64(ir::SymShape sym, Shape shape) { return In{DType::kFloat64, std::move(sym), std::move(shape)}; }
In typed(DType t, ir::SymShape sym, Shape shape) { return In{t, std::move(sym), std::move(shape)}; }
/// [N, C] with feed shape {n, c}: the common unary shape.
In f32nc(int64_t n, int64_t c) { return f32(dims({S("N"), S("C")}), {n, c}); }

// ---- shapes: broadcasting, size 0 and 1, odd sizes, rank 0 ----

TEST(Elementwise, AddBroadcastEveryAxis) {
  check({OpKind::Add, {f32(dims({S("N"), C(1), S("C")}), {3, 1, 37}),
                       f32(dims({C(1), S("H"), C(1)}), {1, 5, 1})}});
  check({OpKind::Mul, {f32(dims({S("H"), C(1)}), {7, 1}), f32(dims({S("N"), S("H"), S("W")}), {2, 7, 19})}});
  check({OpKind::Sub, {f32(dims({S("W")}), {19}), f32(dims({S("N"), S("H"), S("W")}), {2, 7, 19})}});
}

TEST(Elementwise, RunTimeOnesBroadcastAtGenericLevel) {
  // Different symbols: only the run time knows which input is 1 along each axis.
  check({OpKind::Add, {f32(dims({S("A"), S("B")}), {1, 37}), f32(dims({S("C"), S("D")}), {5, 1})}});
  check({OpKind::Add, {f32(dims({S("A"), S("B")}), {6, 37}), f32(dims({S("C"), S("D")}), {6, 37})}});
  check({OpKind::Div, {f32(dims({S("A")}), {1}), f32(dims({S("B")}), {1023})}});
}

TEST(Elementwise, SizeZeroSizeOneOddSizesRankZero) {
  check({OpKind::Add, {f32nc(0, 37), f32(dims({S("C")}), {37})}});
  check({OpKind::Add, {f32nc(4, 0), f32(dims({S("C")}), {0})}});
  check({OpKind::Mul, {f32nc(1, 1), f32nc(1, 1)}});
  check({OpKind::Mul, {f32nc(1, 1023), f32nc(1, 1023)}});
  check({OpKind::Sub, {f32nc(3, 17), f32nc(3, 17)}});
  check({OpKind::Add, {f32(dims({}), {}), f32(dims({}), {})}});
  check({OpKind::Add, {f32(dims({}), {}), f32(dims({S("N")}), {37})}});
}

TEST(Elementwise, LongVectorsAndParallelLoops) {
  Case c{OpKind::Mul, {f32nc(3, 33331), f32(dims({S("C")}), {33331})}};
  check(c);
  for (int threads : {2, 4}) {  // parallel outer loop (exact) or the run-time choice (others)
    GraphBuilder b;
    ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
    ir::Value* a = b.input("a", DType::kFloat32, dims({S("N")}));
    b.output(b.node(OpKind::Add, {b.node(OpKind::Mul, {x, a}, "m"), x}, "y"));
    b.infer();
    DiffOptions o;
    o.threads = threads;
    o.kinds = {passes::RegionKind::kElementwise};
    expect_all_levels_match(b.g, {random_f32({100003}, 1), random_f32({100003}, 2)}, o);
  }
}

// ---- arithmetic ----

TEST(Elementwise, FloatArithmetic) {
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
    check({op, {f32nc(3, 37), f32(dims({S("N"), C(1)}), {3, 1})}});
  check({OpKind::Div, {f64(dims({S("N")}), {37}), f64(dims({S("N")}), {37})}});
}

TEST(Elementwise, IntegerArithmeticWraps) {
  for (DType t : {DType::kInt32, DType::kInt64, DType::kInt8})
    for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul})
      check({op, {typed(t, dims({S("N"), S("C")}), {3, 37}), typed(t, dims({S("N"), S("C")}), {3, 37})}});
  check({OpKind::Mul, {typed(DType::kUInt8, dims({S("N")}), {37}), typed(DType::kUInt8, dims({S("N")}), {37})}});
}

TEST(Elementwise, IntegerDivAndModStayOnTierZero) {
  // A zero integer divisor must raise, which compiled code cannot (docs/lowering.md): an integer
  // Div or Mod gets a tier-0 region of its own, the ops around it still compile, and the lowering
  // refuses one that reaches a region. Float Div is compiled.
  for (OpKind op : {OpKind::Div, OpKind::Mod}) {
    GraphBuilder b;
    ir::Value* x = b.input("x", DType::kInt32, dims({S("N")}));
    ir::Value* y = b.input("y", DType::kInt32, dims({S("N")}));
    ir::Value* a = b.node(OpKind::Add, {x, y}, "a");
    b.output(b.node(OpKind::Mul, {b.node(op, {a, y}, "q"), x}, "z"));
    b.infer();
    auto part = passes::partition_graph(b.g, {});
    ASSERT_TRUE(part.ok());
    ASSERT_EQ(part->regions.size(), 3u) << ir::op_name(op);
    EXPECT_TRUE(kir::has_lowering(part->regions.at(0)));
    EXPECT_EQ(part->regions.at(1).kind, passes::RegionKind::kOpaque);
    EXPECT_EQ(part->regions.at(1).nodes.at(0)->op(), op);
    EXPECT_TRUE(kir::has_lowering(part->regions.at(2)));
    const ir::Node& n = *part->regions.at(1).nodes.at(0);
    EXPECT_FALSE(kir::lowering::elementwise_op_supported(n)) << ir::op_name(op);
  }
  GraphBuilder f;
  ir::Value* x = f.input("x", DType::kFloat32, dims({S("N")}));
  f.output(f.node(OpKind::Div, {f.node(OpKind::Relu, {x}, "r"), x}, "q"));
  f.infer();
  auto part = passes::partition_graph(f.g, {});
  ASSERT_TRUE(part.ok());
  ASSERT_EQ(part->regions.size(), 1u);
  EXPECT_TRUE(kir::has_lowering(part->regions.at(0)));
}

TEST(Elementwise, Pow) {
  check({OpKind::Pow, {f32nc(3, 37), f32nc(3, 37)}, {}, kMath, 0.f, 3.f});
  check({OpKind::Pow, {f32nc(3, 37), typed(DType::kInt64, dims({S("C")}), {37})}, {}, kMath});
  GraphBuilder b;  // a constant exponent 2 is x * x
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
  b.output(b.node(OpKind::Pow, {x, b.fconst("two", {2.f})}, "y"));
  b.output(b.node(OpKind::Pow, {x, b.fconst("half", {0.5f})}, "z"));
  b.infer();
  DiffOptions o;
  o.tol = Tolerance{1.2e-7, 0};  // x*x vs powf: correctly rounded vs < 1 ulp
  o.kinds = {passes::RegionKind::kElementwise};
  expect_all_levels_match(b.g, {random_f32({1023}, 3, 0.f, 4.f)}, o);
}

// ---- unary math and activations ----

TEST(Elementwise, ExactUnaryOps) {
  for (OpKind op : {OpKind::Relu, OpKind::Neg, OpKind::Abs, OpKind::Sign, OpKind::Reciprocal,
                    OpKind::Sqrt, OpKind::Floor, OpKind::Ceil, OpKind::Round, OpKind::Identity,
                    OpKind::Softsign, OpKind::HardSwish})
    check({op, {f32nc(3, 37)}});
  check({OpKind::Round, {f32nc(2, 21)}, {}, kExact, -4.f, 4.f, false});  // halves: to even
  check({OpKind::LeakyRelu, {f32nc(3, 37)}, {{"alpha", attr_float(0.3f)}}});
  check({OpKind::ThresholdedRelu, {f32nc(3, 37)}, {{"alpha", attr_float(0.5f)}}});
  check({OpKind::Shrink, {f32nc(3, 37)}, {{"lambd", attr_float(0.7f)}, {"bias", attr_float(0.2f)}}});
  for (DType t : {DType::kInt32, DType::kInt64, DType::kInt8})
    for (OpKind op : {OpKind::Relu, OpKind::Neg, OpKind::Abs, OpKind::Sign})
      check({op, {typed(t, dims({S("N")}), {37})}});
  check({OpKind::Shrink, {typed(DType::kInt32, dims({S("N")}), {37})}, {{"lambd", attr_float(3.f)}}});
  check({OpKind::Abs, {typed(DType::kUInt8, dims({S("N")}), {37})}});
}

TEST(Elementwise, RoundHalfToEven) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
  b.output(b.node(OpKind::Round, {x}, "y"));
  b.infer();
  DiffOptions o;
  o.tol = kExact;
  o.kinds = {passes::RegionKind::kElementwise};
  expect_all_levels_match(
      b.g, {Tensor::from_vector<float>({9}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, -0.f, 3.5f})}, o);
}

TEST(Elementwise, TranscendentalOps) {
  for (OpKind op : {OpKind::Exp, OpKind::Tanh, OpKind::Sigmoid, OpKind::Erf})
    check({op, {f32nc(3, 37)}, {}, kMath, -8.f, 8.f});
  check({OpKind::Log, {f32nc(3, 37)}, {}, kMath, 0.f, 50.f});
  check({OpKind::Softplus, {f32nc(3, 37)}, {}, kMath, -30.f, 30.f});
  check({OpKind::Elu, {f32nc(3, 37)}, {{"alpha", attr_float(0.7f)}}, kMath});
  check({OpKind::Selu, {f32nc(3, 37)}, {}, kMath});
  check({OpKind::Celu, {f32nc(3, 37)}, {{"alpha", attr_float(2.f)}}, kMath});
  check({OpKind::Elu, {f32nc(3, 37)}, {}, kMath, -1e-3f, 1e-3f});  // expm1 near 0
  // alpha * x + beta: tier 0 may contract it into one fma (-mfma): 1 ulp.
  check({OpKind::HardSigmoid, {f32nc(3, 37)}, {}, Tolerance{1.2e-7, 1e-7}});
  for (OpKind op : {OpKind::Exp, OpKind::Tanh, OpKind::Sqrt, OpKind::Erf, OpKind::Sigmoid})
    check({op, {f64(dims({S("N")}), {37})}, {}, kExact});
  // Hyperbolic ops: float64 math rounded once vs glibc's float functions, which are not always
  // correctly rounded (coshf(1) is 1 ulp off): 1 ulp. Ranges reach the overflow edge of
  // cosh/sinh (|x| ~ 89.4) and the small-|x| branch.
  const Tolerance one_ulp{1.2e-7, 0};
  for (OpKind op : {OpKind::Sinh, OpKind::Cosh, OpKind::Asinh, OpKind::Atanh}) {
    check({op, {f32nc(3, 37)}, {}, one_ulp, -1.f, 1.f});
    check({op, {f32nc(3, 37)}, {}, one_ulp, -2e-4f, 2e-4f});
  }
  for (OpKind op : {OpKind::Sinh, OpKind::Cosh, OpKind::Asinh})
    check({op, {f32nc(3, 37)}, {}, one_ulp, -95.f, 95.f});
  check({OpKind::Acosh, {f32nc(3, 37)}, {}, one_ulp, 0.5f, 1e6f});
}

TEST(Elementwise, Predicates) {
  check({OpKind::IsNaN, {f32nc(3, 37)}});
  check({OpKind::IsInf, {f32nc(3, 37)}});
  check({OpKind::IsInf, {f32nc(3, 37)}, {{"detect_negative", attr_int(0)}}});
  check({OpKind::IsInf, {f32nc(3, 37)}, {{"detect_positive", attr_int(0)}}});
  check({OpKind::Not, {typed(DType::kBool, dims({S("N")}), {37})}});
  for (OpKind op : {OpKind::And, OpKind::Or, OpKind::Xor})
    check({op, {typed(DType::kBool, dims({S("N"), C(1)}), {3, 1}), typed(DType::kBool, dims({S("C")}), {37})}});
}

TEST(Elementwise, ComparisonsWithNaN) {
  for (OpKind op : {OpKind::Equal, OpKind::Greater, OpKind::GreaterOrEqual, OpKind::Less,
                    OpKind::LessOrEqual}) {
    check({op, {f32nc(3, 37), f32(dims({S("N"), C(1)}), {3, 1})}});
    check({op, {typed(DType::kInt64, dims({S("N")}), {37}), typed(DType::kInt64, dims({C(1)}), {1})}});
  }
  check({OpKind::Equal, {typed(DType::kBool, dims({S("N")}), {37}), typed(DType::kBool, dims({S("N")}), {37})}});
}

// ---- variadic, select, clip, cast ----

TEST(Elementwise, VariadicMaxMinSumMeanPropagateNaN) {
  for (OpKind op : {OpKind::Max, OpKind::Min, OpKind::Sum, OpKind::Mean}) {
    check({op, {f32nc(3, 37), f32(dims({S("C")}), {37}), f32(dims({S("N"), C(1)}), {3, 1})}});
    check({op, {f32nc(3, 37)}});
  }
  for (OpKind op : {OpKind::Max, OpKind::Min, OpKind::Sum})
    check({op, {typed(DType::kInt32, dims({S("N")}), {37}), typed(DType::kInt32, dims({S("N")}), {37})}});
}

TEST(Elementwise, WhereBroadcastsThreeWays) {
  check({OpKind::Where, {typed(DType::kBool, dims({S("N"), C(1)}), {3, 1}), f32(dims({S("C")}), {37}),
                         f32(dims({S("N"), S("C")}), {3, 37})}});
  check({OpKind::Where, {typed(DType::kBool, dims({S("N")}), {37}), typed(DType::kInt64, dims({S("N")}), {37}),
                         typed(DType::kInt64, dims({C(1)}), {1})}});
}

TEST(Elementwise, PRelu) {
  check({OpKind::PRelu, {f32(dims({S("N"), C(5), S("W")}), {2, 5, 7}), f32(dims({C(5), C(1)}), {5, 1})}});
  check({OpKind::PRelu, {typed(DType::kInt32, dims({S("N")}), {37}), typed(DType::kInt32, dims({C(1)}), {1})}});
}

TEST(Elementwise, ClipBoundsFromInputsAndAttributes) {
  for (bool with_min : {true, false})
    for (bool with_max : {true, false}) {
      GraphBuilder b;
      ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
      ir::Value* lo = with_min ? b.fconst("lo", {-0.5f}) : nullptr;
      ir::Value* hi = with_max ? b.fconst("hi", {0.75f}) : nullptr;
      b.output(b.node(OpKind::Clip, {x, lo, hi}, "y"));
      ir::Value* lo_in = b.input("lo_in", DType::kFloat32, dims({}));  // a bound read at run time
      b.output(b.node(OpKind::Clip, {x, lo_in}, "z"));
      b.infer();
      DiffOptions o;
      o.tol = kExact;
      o.kinds = {passes::RegionKind::kElementwise};
      In xin = f32(dims({S("N")}), {37});
      expect_all_levels_match(b.g, {feed(xin, 5, -2, 2, true), Tensor::from_vector<float>({}, {0.25f})}, o);
    }
  check({OpKind::Clip, {f32nc(3, 37)}, {{"min", attr_float(-1.f)}, {"max", attr_float(0.5f)}},
         kExact, -3, 3, true, 6});
  check({OpKind::Clip, {f32nc(3, 37)}, {{"max", attr_float(0.5f)}}, kExact, -3, 3, true, 6});
  GraphBuilder b;  // integers (Clip-12), bounds crossed (lo > hi gives hi everywhere)
  ir::Value* x = b.input("x", DType::kInt32, dims({S("N")}));
  ir::Value* lo = b.constant("lo", Tensor::from_vector<int32_t>({}, {-5}));
  ir::Value* hi = b.constant("hi", Tensor::from_vector<int32_t>({}, {7}));
  b.output(b.node(OpKind::Clip, {x, lo, hi}, "y"));
  b.output(b.node(OpKind::Clip, {x, hi, lo}, "crossed"));
  b.infer();
  DiffOptions o;
  o.kinds = {passes::RegionKind::kElementwise};
  expect_all_levels_match(b.g, {feed(typed(DType::kInt32, dims({S("N")}), {37}), 3, 0, 0, false)}, o);
}

TEST(Elementwise, Casts) {
  auto cast_to = [](DType t) { return Attrs{{"to", attr_int(static_cast<int64_t>(t))}}; };
  for (DType to : {DType::kInt32, DType::kInt64, DType::kUInt8, DType::kInt8, DType::kBool,
                   DType::kFloat64, DType::kUInt64})
    check({OpKind::Cast, {f32nc(3, 37)}, cast_to(to), kExact, -300.f, 300.f});
  // Saturation to the int64 range and NaN -> 0.
  check({OpKind::Cast, {f32nc(3, 37)}, cast_to(DType::kInt64), kExact, -3e19f, 3e19f});
  check({OpKind::Cast, {f32nc(3, 37)}, cast_to(DType::kInt32), kExact, -1e10f, 1e10f});
  check({OpKind::Cast, {f32nc(3, 37)}, cast_to(DType::kUInt64), kExact, -3e19f, 3e19f});
  for (DType from : {DType::kInt32, DType::kInt64, DType::kBool, DType::kUInt8})
    for (DType to : {DType::kFloat32, DType::kInt64, DType::kInt8, DType::kBool})
      if (from != to) check({OpKind::Cast, {typed(from, dims({S("N")}), {37})}, cast_to(to)});
}

// ---- fused regions ----

/// The benchmark chain Y = Mul(Tanh(Add(Mul(X, A), B)), C) and a region with a shared
/// subexpression and two outputs of different shapes.
TEST(Elementwise, FusedChains) {
  {
    GraphBuilder b;
    ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
    ir::Value* a = b.input("a", DType::kFloat32, dims({S("N")}));
    ir::Value* bb = b.input("b", DType::kFloat32, dims({S("N")}));
    ir::Value* c = b.input("c", DType::kFloat32, dims({S("N")}));
    ir::Value* t = b.node(OpKind::Tanh, {b.node(OpKind::Add, {b.node(OpKind::Mul, {x, a}, "m"), bb}, "s")}, "t");
    b.output(b.node(OpKind::Mul, {t, c}, "y"));
    b.infer();
    DiffOptions o;
    o.tol = kMath;
    o.kinds = {passes::RegionKind::kElementwise};
    expect_all_levels_match(b.g, {random_f32({1027}, 1), random_f32({1027}, 2), random_f32({1027}, 3),
                                  random_f32({1027}, 4)}, o);
  }
  {
    GraphBuilder b;
    ir::Value* x = b.input("x", DType::kFloat32, dims({S("C")}));
    ir::Value* z = b.input("z", DType::kFloat32, dims({S("N"), S("C")}));
    ir::Value* e = b.node(OpKind::Exp, {x}, "e");
    ir::Value* sq = b.node(OpKind::Add, {b.node(OpKind::Mul, {e, e}, "ee"), e}, "sq");
    b.output(sq);  // [C]
    b.output(b.node(OpKind::Mul, {sq, z}, "w"));  // [N, C]
    b.output(b.node(OpKind::Sub, {z, e}, "v"));   // [N, C], same loop nest as w
    b.infer();
    DiffOptions o;
    o.tol = kMath;
    o.kinds = {passes::RegionKind::kElementwise};
    expect_all_levels_match(b.g, {random_f32({37}, 1), random_f32({5, 37}, 2)}, o);
    expect_all_levels_match(b.g, {random_f32({0}, 1), random_f32({5, 0}, 2)}, o);
  }
}

// ---- structure and errors ----

Expected<kir::LoweredRegion> lower_one(const ir::Graph& g, const std::vector<Tensor>& feeds,
                                       kir::ShapeLevel level, int tier) {
  auto part = passes::partition_graph(g, {});
  if (!part.ok()) return part.status();
  const passes::Region& r = part->regions.at(0);
  auto vals = run_tier0(g, feeds);
  kir::LowerOptions lo;
  lo.level = level;
  lo.tier = tier;
  lo.vector_lanes = 16;
  for (const ir::Value* v : r.inputs) lo.inputs.push_back(spec_of(*v, vals.at(v), level));
  for (const ir::Value* v : r.outputs) lo.outputs.push_back(spec_of(*v, vals.at(v), level));
  return kir::lower_region(r, lo);
}

TEST(Elementwise, CollapsesContiguousAxesAndVectorizes) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), S("H"), C(16)}));
  ir::Value* y = b.input("y", DType::kFloat32, dims({S("N"), S("H"), C(16)}));
  b.output(b.node(OpKind::Add, {x, y}, "z"));
  b.infer();
  std::vector<Tensor> feeds = {random_f32({2, 3, 16}, 1), random_f32({2, 3, 16}, 2)};
  for (auto level : {kir::ShapeLevel::kExact, kir::ShapeLevel::kGeneric}) {
    auto r = lower_one(b.g, feeds, level, 2);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_FALSE(r->notes.empty());
    EXPECT_NE(r->notes[0].find("1 loop(s) over rank 3"), std::string::npos) << r->notes[0];
    const std::string text = kir::to_string(r->fn);
    EXPECT_NE(text.find("ramp"), std::string::npos) << text;
    for (const std::string& n : r->notes) EXPECT_EQ(n.find("not "), std::string::npos) << n;
  }
}

TEST(Elementwise, BroadcastOperandsVectorizeAtEveryLevel) {
  GraphBuilder b;  // [N, 1, C] * [1, H, 1] + scalar, then Tanh: broadcast and contiguous operands
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(1), S("C")}));
  ir::Value* y = b.input("y", DType::kFloat32, dims({C(1), S("H"), C(1)}));
  ir::Value* m = b.node(OpKind::Mul, {x, y}, "m");
  b.output(b.node(OpKind::Tanh, {b.node(OpKind::Add, {m, b.fconst("k", {0.5f})}, "a")}, "t"));
  b.infer();
  std::vector<Tensor> feeds = {random_f32({3, 1, 37}, 1), random_f32({1, 5, 1}, 2)};
  for (auto level : {kir::ShapeLevel::kExact, kir::ShapeLevel::kShapeClass, kir::ShapeLevel::kGeneric}) {
    auto r = lower_one(b.g, feeds, level, 2);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const std::string text = kir::to_string(r->fn);
    EXPECT_NE(text.find("ramp"), std::string::npos) << text;
    for (const std::string& n : r->notes) EXPECT_EQ(n.find("not "), std::string::npos) << n << text;
  }
}

TEST(Elementwise, GenericLevelVersionsRunTimeBroadcast) {
  GraphBuilder b;  // symbols differ: only the call knows whether x or y broadcasts
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("A"), S("B")}));
  ir::Value* y = b.input("y", DType::kFloat32, dims({S("C"), S("D")}));
  b.output(b.node(OpKind::Add, {x, y}, "z"));
  b.infer();
  auto r = lower_one(b.g, {random_f32({6, 37}, 1), random_f32({6, 37}, 2)}, kir::ShapeLevel::kGeneric, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string notes;
  for (const std::string& n : r->notes) notes += n + "\n";
  EXPECT_NE(notes.find("4 run-time dim(s) may broadcast: a version for equal dims (1 loop(s))"),
            std::string::npos) << notes << kir::to_string(r->fn);
}

TEST(Elementwise, UnknownTuningKnobIsInvalidArgument) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
  b.output(b.node(OpKind::Relu, {x}, "r"));
  b.infer();
  auto part = passes::partition_graph(b.g, {});
  ASSERT_TRUE(part.ok());
  kir::LowerOptions o;
  o.tier = 3;
  o.tuning = {{"mr", 6}};
  o.inputs.push_back({DType::kFloat32, {-1}, {-1}});
  o.outputs.push_back({DType::kFloat32, {-1}, {-1}});
  auto r = kir::lower_region(part->regions.at(0), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'mr'"), std::string::npos) << r.status().message();
  o.tuning.clear();  // tier 3 without knobs is tier 2's code
  EXPECT_TRUE(kir::lower_region(part->regions.at(0), o).ok());
}

TEST(Elementwise, UnsupportedOpsNameNodeAndOp) {
  // An op kir cannot express at all (Sin: no intrinsic) is not in the fusion table: it is a
  // one-node opaque region and the Relu before it still lowers.
  GraphBuilder s;
  ir::Value* xs = s.input("x", DType::kFloat32, dims({S("N")}));
  s.output(s.node(OpKind::Sin, {s.node(OpKind::Relu, {xs}, "r")}, "sine"));
  s.infer();
  auto ps = passes::partition_graph(s.g, {});
  ASSERT_TRUE(ps.ok());
  ASSERT_EQ(ps->regions.size(), 2u);
  EXPECT_TRUE(kir::has_lowering(ps->regions.at(0)));
  EXPECT_EQ(ps->regions.at(1).kind, passes::RegionKind::kOpaque);

  // An op lowered only for some dtypes (Mod of floats, fmod = 1) keeps its whole region on tier
  // 0, and the lowering's error names the node and op.
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
  ir::Value* two = b.fconst("two", {2.f});
  b.output(b.node(OpKind::Mod, {b.node(OpKind::Relu, {x}, "r"), two}, "fmod", {{"fmod", attr_int(1)}}));
  b.infer();
  auto part = passes::partition_graph(b.g, {});
  ASSERT_TRUE(part.ok());
  EXPECT_FALSE(kir::has_lowering(part->regions.at(0)));
  auto r = lower_one(b.g, {random_f32({4}, 1)}, kir::ShapeLevel::kExact, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("'fmod' (Mod)"), std::string::npos) << r.status().message();

  GraphBuilder h;  // float16 stays on tier 0
  ir::Value* xh = h.input("x", DType::kFloat16, dims({S("N")}));
  h.output(h.node(OpKind::Relu, {xh}, "r"));
  h.infer();
  auto ph = passes::partition_graph(h.g, {});
  ASSERT_TRUE(ph.ok());
  EXPECT_FALSE(kir::has_lowering(ph->regions.at(0)));
}

}  // namespace
}  // namespace tierjit::lower_testing

namespace tierjit::lower_testing {
namespace {

// Value specialization (LowerOptions::input_values): a one-element input given by value is an
// immediate of the code. The kernel is called with another value in that input's buffer and must
// still use the given one; the kernel IR never loads from that input. A value of the wrong dtype or size is
// refused with kInvalidArgument.
TEST(Elementwise, ValueSpecializedScalarIsAnImmediate) {
  passes::testing::GraphBuilder b;
  ir::Value* x = b.input("x", DType::kInt64, passes::testing::dims({passes::testing::S("N")}));
  ir::Value* s = b.input("s", DType::kInt64, passes::testing::dims({passes::testing::C(1)}));
  b.output(b.node(ir::OpKind::Mul, {x, s}, "mul"));
  b.infer();
  auto part = passes::partition_graph(b.g, passes::PartitionOptions{});
  ASSERT_TRUE(part.ok()) << part.status().message();
  const passes::Region* region = nullptr;
  for (const passes::Region& r : part->regions)
    if (r.kind == passes::RegionKind::kElementwise) region = &r;
  ASSERT_NE(region, nullptr);
  ASSERT_EQ(region->inputs.size(), 2u);
  const size_t si = region->inputs[0] == s ? 0 : 1, xi = 1 - si;
  kir::LowerOptions lo;
  lo.level = kir::ShapeLevel::kExact;
  lo.vector_lanes = codegen::host_cpu().f32_lanes();
  lo.inputs.resize(2);
  lo.inputs[xi] = {DType::kInt64, {5}, {-1}};
  lo.inputs[si] = {DType::kInt64, {1}, {-1}};
  lo.outputs = {{DType::kInt64, {5}, {-1}}};
  lo.input_values.resize(2);
  lo.input_values[si] = Tensor::from_vector<int64_t>({1}, {7});
  auto lowered = kir::lower_region(*region, lo);
  ASSERT_TRUE(lowered.ok()) << lowered.status().message();
  const std::string text = kir::to_string(lowered->fn);
  EXPECT_EQ(text.find("in" + std::to_string(si) + "["), std::string::npos) << text;  // no load
  auto kernel = codegen::compile(lowered->fn, codegen::CompileOptions{});
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  Tensor xt = Tensor::from_vector<int64_t>({5}, {1, -2, 3, 0, 10});
  Tensor st = Tensor::from_vector<int64_t>({1}, {100});  // not the specialized value
  Tensor y = Tensor::empty(DType::kInt64, {5});
  std::vector<void*> buffers(3);
  buffers[xi] = xt.raw_data();
  buffers[si] = st.raw_data();
  buffers[2] = y.raw_data();
  std::vector<int64_t> dims(3);
  dims[xi == 0 ? 0 : 1] = 5;
  dims[si == 0 ? 0 : 1] = 1;
  dims[2] = 5;
  (*kernel)(buffers.data(), dims.data());
  EXPECT_EQ(std::vector<int64_t>(y.span<int64_t>().begin(), y.span<int64_t>().end()),
            (std::vector<int64_t>{7, -14, 21, 0, 70}));

  lo.input_values[si] = Tensor::from_vector<int64_t>({2}, {7, 8});
  auto wrong_size = kir::lower_region(*region, lo);
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_EQ(wrong_size.status().code(), StatusCode::kInvalidArgument);
  lo.input_values[si] = Tensor::from_vector<float>({1}, {7.f});
  EXPECT_EQ(kir::lower_region(*region, lo).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tierjit::lower_testing
