// Checks of the lowering entry point itself: option validation and the kinds that never compile.
#include "lower_test_util.h"

namespace tierjit::lower_testing {
namespace {

using ir::OpKind;
using passes::testing::C;
using passes::testing::dims;
using passes::testing::S;

TEST(LowerRegion, ShapeOnlyAndOpaqueRegionsAreUnsupported) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(4)}));
  ir::Value* nz = b.node(OpKind::NonZero, {x}, "nz");
  b.output(nz);
  b.infer();
  auto part = passes::partition_graph(b.g, {});
  ASSERT_TRUE(part.ok());
  ASSERT_EQ(part->regions.size(), 1u);
  EXPECT_FALSE(kir::has_lowering(part->regions[0]));
  kir::LowerOptions o;
  o.inputs.push_back({DType::kFloat32, {-1, 4}, {-1, -1}});
  o.outputs.push_back({DType::kInt64, {2, -1}, {-1, -1}});
  auto r = kir::lower_region(part->regions[0], o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("not compiled"), std::string::npos) << r.status().message();
}

TEST(LowerRegion, SpecCountAndRankMismatchAreInvalidArgument) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(4)}));
  b.output(b.node(OpKind::Relu, {x}, "r"));
  b.infer();
  auto part = passes::partition_graph(b.g, {});
  ASSERT_TRUE(part.ok());
  kir::LowerOptions o;  // no specs at all
  auto r = kir::lower_region(part->regions[0], o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  o.inputs.push_back({DType::kFloat32, {-1}, {-1}});  // rank 1 for a rank-2 input
  o.outputs.push_back({DType::kFloat32, {-1, 4}, {-1, -1}});
  r = kir::lower_region(part->regions[0], o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("rank 2"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tierjit::lower_testing
