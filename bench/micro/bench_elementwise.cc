// Elementwise chain on 1M floats: Y = Mul(Tanh(Add(Mul(X, A), B)), C) with X [1024, 1024] fed
// and A, B, C [1024] initializers broadcast over the rows (a scale, shift and gain per column).
// Tier 0 runs it as 4 separate nodes, each a full pass over memory; the compiled tiers fuse it.
// Case: elementwise.chain4_1M/<system>.
#include "micro.h"

namespace tierjit::bench {
namespace {

constexpr int64_t kRows = 1024, kCols = 1024;

Tier0Program make_chain() {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {kRows, kCols});
  ir::Value* a = b.constant("A", random_tensor({kCols}, 2, 0.5f, 1.5f));
  ir::Value* bb = b.constant("B", random_tensor({kCols}, 3));
  ir::Value* c = b.constant("C", random_tensor({kCols}, 4, 0.5f, 1.5f));
  ir::Value* t = b.node(ir::OpKind::Mul, {x, a});
  t = b.node(ir::OpKind::Add, {t, bb});
  t = b.node(ir::OpKind::Tanh, {t});
  b.output(b.node(ir::OpKind::Mul, {t, c}));
  return Tier0Program(b.finish(), {random_tensor({kRows, kCols}, 1)});
}

const bool registered = [] {
  register_case("elementwise.chain4_1M", "tier0", tier0_case(make_chain));
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
