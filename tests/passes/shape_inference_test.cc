// Tests of the shape inference pass on small hand-built graphs: symbolic broadcasting, MatMul
// batch dims, Conv/pool size arithmetic, Reshape (0, -1, Shape-derived targets), Squeeze forms,
// data-dependent dims, declared-vs-inferred merging and the dtype-contradiction error.
#include "passes/shape_inference.h"
#include "passes/shape_rules.h"

#include <gtest/gtest.h>

namespace tierjit::passes {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;

Dim C(int64_t v) { return Dim::constant(v); }
Dim S(const char* s) { return Dim::named(s); }
Dim U() { return Dim::unknown(); }

ir::Attribute ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
ir::Attribute int1(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
ir::Attribute str(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}

// Builds graphs tersely: inputs with types, int64 initializers, nodes with one or more outputs.
struct Builder {
  ir::Graph g{"test"};
  int opset = 17;
  ir::Value* input(const char* name, DType t, std::optional<SymShape> s) {
    ir::Value* v = g.add_value(name, {t, std::move(s)});
    g.inputs().push_back(v);
    return v;
  }
  ir::Value* ints_const(std::vector<int64_t> v, bool scalar = false) {
    Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(v.size())};
    ir::Value* c = g.add_value("c" + std::to_string(g.num_value_ids()));
    c->set_constant(Tensor::from_vector<int64_t>(shape, v));
    g.inputs().push_back(c);
    return c;
  }
  ir::Node* node(OpKind op, std::vector<ir::Value*> ins, size_t nout = 1,
                 std::vector<std::pair<std::string, ir::Attribute>> attrs = {}, const char* name = "n") {
    std::vector<ir::Value*> outs;
    for (size_t i = 0; i < nout; ++i) outs.push_back(g.add_value(std::string(name) + "_out" + std::to_string(i)));
    ir::Node* n = g.add_node(op, std::move(ins), outs, name);
    n->set_opset(opset);
    for (auto& [k, a] : attrs) n->set_attr(k, a);
    return n;
  }
  ir::Value* op(OpKind o, std::vector<ir::Value*> ins, std::vector<std::pair<std::string, ir::Attribute>> attrs = {}) {
    return node(o, std::move(ins), 1, std::move(attrs))->output(0);
  }
  Status run() { return infer_shapes(g, PassContext{}); }
};

std::string str_of(const ir::Value* v) {
  return v->type().shape ? ir::sym_shape_to_string(*v->type().shape) : std::string("<rank unknown>");
}

TEST(ShapeInference, SymbolicBroadcast) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), C(1), C(3)});
  auto* y = b.input("y", DType::kFloat32, SymShape{S("S"), C(1)});
  auto* z = b.input("z", DType::kFloat32, SymShape{C(1), C(3)});
  auto* w = b.input("w", DType::kFloat32, SymShape{S("M")});
  auto* a = b.op(OpKind::Add, {x, y});    // [N,1,3] + [S,1] -> [N,S,3]
  auto* m = b.op(OpKind::Mul, {x, z});    // [N,1,3] * [1,3] -> [N,1,3]
  auto* d = b.op(OpKind::Sub, {y, w});    // [S,1] - [M] -> [S,M]
  auto* e = b.op(OpKind::Div, {w, w});    // same symbol -> [M]
  auto* f = b.op(OpKind::Add, {w, b.input("v", DType::kFloat32, SymShape{S("K")})});  // M vs K: unknown
  auto* g = b.op(OpKind::Equal, {x, z});  // bool
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(a), "[N, S, 3]");
  EXPECT_EQ(str_of(m), "[N, 1, 3]");
  EXPECT_EQ(str_of(d), "[S, M]");
  EXPECT_EQ(str_of(e), "[M]");
  EXPECT_EQ(str_of(f), "[?]");
  EXPECT_EQ(g->type().dtype, DType::kBool);
  EXPECT_EQ(a->type().dtype, DType::kFloat32);
}

TEST(ShapeInference, BroadcastMismatchIsAnError) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{C(2), C(3)});
  auto* y = b.input("y", DType::kFloat32, SymShape{C(4), C(3)});
  b.op(OpKind::Add, {x, y});
  Status s = b.run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidModel);
  EXPECT_NE(s.message().find("node 'n' (Add)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[2, 3] and [4, 3]"), std::string::npos) << s.message();
}

TEST(ShapeInference, DtypeContradiction) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N")});
  auto* y = b.input("y", DType::kInt64, SymShape{S("N")});
  b.node(OpKind::Add, {x, y}, 1, {}, "x");
  Status s = b.run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidModel);
  EXPECT_EQ(s.message(), "node 'x' (Add): input 1 has dtype int64, expected float32 like input 0");
}

TEST(ShapeInference, DeclaredTypesMergeAndContradict) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), U()});
  auto* y = b.op(OpKind::Relu, {x});
  y->mutable_type() = {DType::kUndefined, SymShape{U(), C(10)}};  // declared [?, 10]
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(y), "[N, 10]");  // symbol from inference, constant from the declaration
  EXPECT_EQ(y->type().dtype, DType::kFloat32);

  Builder b2;
  auto* x2 = b2.input("x", DType::kFloat32, SymShape{C(2)});
  auto* y2 = b2.op(OpKind::Relu, {x2});
  y2->mutable_type().dtype = DType::kInt32;
  Status s = b2.run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("declared int32 but computes float32"), std::string::npos) << s.message();
}

TEST(ShapeInference, MatMulBatchAndVectors) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), S("S"), C(128)});
  auto* w = b.input("w", DType::kFloat32, SymShape{C(128), C(64)});
  auto* p = b.input("p", DType::kFloat32, SymShape{S("B"), C(1), S("M"), C(5)});
  auto* q = b.input("q", DType::kFloat32, SymShape{C(3), C(5), C(7)});
  auto* v = b.input("v", DType::kFloat32, SymShape{C(5)});
  auto* r1 = b.op(OpKind::MatMul, {x, w});  // [N,S,128]x[128,64] -> [N,S,64]
  auto* r2 = b.op(OpKind::MatMul, {p, q});  // batch [B,1] with [3] -> [B,3]; -> [B,3,M,7]
  auto* r3 = b.op(OpKind::MatMul, {v, q});  // [5] x [3,5,7] -> [3,7]
  auto* r4 = b.op(OpKind::MatMul, {p, v});  // [B,1,M,5] x [5] -> [B,1,M]
  auto* r5 = b.op(OpKind::MatMul, {v, v});  // [5] x [5] -> []
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(r1), "[N, S, 64]");
  EXPECT_EQ(str_of(r2), "[B, 3, M, 7]");
  EXPECT_EQ(str_of(r3), "[3, 7]");
  EXPECT_EQ(str_of(r4), "[B, 1, M]");
  EXPECT_EQ(str_of(r5), "[]");

  Builder bad;
  bad.op(OpKind::MatMul, {bad.input("a", DType::kFloat32, SymShape{C(2), C(3)}),
                          bad.input("b", DType::kFloat32, SymShape{C(4), C(5)})});
  EXPECT_FALSE(bad.run().ok());
}

TEST(ShapeInference, GemmTransposes) {
  Builder b;
  auto* a = b.input("a", DType::kFloat32, SymShape{C(256), S("N")});
  auto* w = b.input("w", DType::kFloat32, SymShape{C(10), C(256)});
  auto* y = b.op(OpKind::Gemm, {a, w}, {{"transA", int1(1)}, {"transB", int1(1)}});
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(y), "[N, 10]");
}

TEST(ShapeInference, ConvAndPoolArithmetic) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), C(3), C(224), S("W")});
  auto* w = b.input("w", DType::kFloat32, SymShape{C(64), C(3), C(7), C(7)});
  // H: floor((224 + 3 + 3 - 7) / 2) + 1 = floor(223 / 2) + 1 = 112; W: floor((W - 1) / 2) + 1.
  auto* c1 = b.op(OpKind::Conv, {x, w}, {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}});
  // Dilation 2 on 3x3: effective 5; H = 224 - 5 + 1 = 220; W: stride 1, pads 2+2 = 5-1: stays W.
  auto* w3 = b.input("w3", DType::kFloat32, SymShape{C(8), C(3), C(3), C(3)});
  auto* c2 = b.op(OpKind::Conv, {x, w3}, {{"dilations", ints({2, 2})}, {"pads", ints({0, 2, 0, 2})}});
  // SAME_UPPER, stride 3: ceil(224 / 3) = 75.
  auto* c3 = b.op(OpKind::Conv, {x, w3}, {{"auto_pad", str("SAME_UPPER")}, {"strides", ints({3, 1})}});
  auto* p = b.input("p", DType::kFloat32, SymShape{C(1), C(1), C(5), C(6)});
  // kernel 2, stride 2: floor((5 - 2) / 2) + 1 = 2 and ceil((5 - 2) / 2) + 1 = 3; 6 -> 3 either way.
  auto* mp = b.node(OpKind::MaxPool, {p}, 2, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  auto* mpc = b.op(OpKind::MaxPool, {p}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}, {"ceil_mode", int1(1)}});
  // ConvTranspose: 2 * (5 - 1) + 0 + 3 - 0 = 11, channels W[1] * group = 4 * 2.
  auto* wt = b.input("wt", DType::kFloat32, SymShape{C(1), C(4), C(3), C(3)});
  auto* ct = b.op(OpKind::ConvTranspose, {p, wt}, {{"strides", ints({2, 2})}, {"group", int1(2)}});
  auto* gp = b.op(OpKind::GlobalAveragePool, {x});
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(c1), "[N, 64, 112, ((W-1)//2+1)]");
  EXPECT_EQ(str_of(c2), "[N, 8, 220, W]");
  EXPECT_EQ(str_of(c3), "[N, 8, 75, W]");
  EXPECT_EQ(str_of(mp->output(0)), "[1, 1, 2, 3]");
  EXPECT_EQ(mp->output(1)->type().dtype, DType::kInt64);
  EXPECT_EQ(str_of(mpc), "[1, 1, 3, 3]");
  EXPECT_EQ(str_of(ct), "[1, 8, 11, 13]");  // 6: 2 * 5 + 3 = 13
  EXPECT_EQ(str_of(gp), "[N, 3, 1, 1]");
}

// A pooling window longer than the padded input: with ceil_mode and a shortfall under the stride
// one window (ceil((2 - 3) / 2) + 1 = 1, as ONNX and ONNX Runtime compute); in floor mode, or
// short by the stride or more, an error naming the window.
TEST(ShapeInference, CeilModeWindowLongerThanTheInput) {
  {
    Builder b;
    auto* p = b.input("p", DType::kFloat32, SymShape{C(1), C(8), C(2), C(2)});
    auto* mp = b.op(OpKind::MaxPool, {p}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"ceil_mode", int1(1)}});
    ASSERT_TRUE(b.run().ok());
    EXPECT_EQ(str_of(mp), "[1, 8, 1, 1]");
  }
  for (bool ceil : {false, true}) {
    Builder b;
    auto* p = b.input("p", DType::kFloat32, SymShape{C(1), C(8), C(ceil ? 1 : 2), C(2)});
    b.op(OpKind::MaxPool, {p}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"ceil_mode", int1(ceil ? 1 : 0)}});
    const Status st = b.run();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("larger than padded input"), std::string::npos) << st.message();
  }
}

// Negative pads are an error at load (as strides or dilations of 0), for Conv and the pools.
TEST(ShapeInference, NegativePadsAreRejected) {
  for (OpKind op : {OpKind::Conv, OpKind::MaxPool, OpKind::AveragePool}) {
    Builder b;
    auto* x = b.input("x", DType::kFloat32, SymShape{C(1), C(8), C(6), C(6)});
    std::vector<ir::Value*> ins{x};
    if (op == OpKind::Conv) ins.push_back(b.input("w", DType::kFloat32, SymShape{C(8), C(8), C(3), C(3)}));
    b.op(op, ins, {{"kernel_shape", ints({3, 3})}, {"pads", ints({0, -1, 0, 1})}});
    const Status st = b.run();
    ASSERT_FALSE(st.ok()) << ir::op_name(op);
    EXPECT_NE(st.message().find("pads must be non-negative, got -1 and 1 on spatial axis 1"), std::string::npos)
        << st.message();
  }
}

// A pooling kernel of size 0, or pads as large as the kernel (a window wholly in the padding), is
// an error at load whatever the input's shape (the pooling kernels refuse both at run time), for
// every pool; pads just under the kernel, or SAME padding, are accepted.
TEST(ShapeInference, PoolKernelAndPadsCheckedAtLoad) {
  struct Case {
    std::vector<int64_t> kernel, pads;
    const char* auto_pad;
    const char* error;  // nullptr: accepted
  };
  const Case cases[] = {
      {{0, 2}, {0, 0, 0, 0}, "NOTSET", "kernel_shape must be positive, got 0 on spatial axis 0"},
      {{2, -1}, {0, 0, 0, 0}, "NOTSET", "kernel_shape must be positive, got -1 on spatial axis 1"},
      {{2, 2}, {2, 0, 0, 0}, "NOTSET", "pads 2 and 0 on spatial axis 0 must be smaller than the kernel (2)"},
      {{3, 2}, {0, 0, 1, 2}, "NOTSET", "pads 0 and 2 on spatial axis 1 must be smaller than the kernel (2)"},
      {{3, 3}, {2, 2, 2, 2}, "NOTSET", nullptr},
      {{1, 1}, {0, 0, 0, 0}, "NOTSET", nullptr},
      {{2, 2}, {}, "SAME_UPPER", nullptr},
      {{2, 2}, {5, 5, 5, 5}, "SAME_UPPER", "pads 5 and 5 on spatial axis 0 must be smaller than the kernel (2)"},
      {{2, 2}, {5, 5, 5, 5}, "VALID", "pads 5 and 5 on spatial axis 0 must be smaller than the kernel (2)"},
  };
  for (OpKind op : {OpKind::MaxPool, OpKind::AveragePool, OpKind::LpPool}) {
    for (bool known : {true, false}) {
      for (const Case& c : cases) {
        Builder b;
        auto* x = known ? b.input("x", DType::kFloat32, SymShape{C(1), C(2), C(6), C(6)})
                        : b.input("x", DType::kFloat32, std::nullopt);
        std::vector<std::pair<std::string, ir::Attribute>> attrs{{"kernel_shape", ints(c.kernel)},
                                                                 {"auto_pad", str(c.auto_pad)}};
        if (!c.pads.empty()) attrs.push_back({"pads", ints(c.pads)});
        b.op(op, {x}, attrs);
        const Status st = b.run();
        SCOPED_TRACE(::testing::Message() << ir::op_name(op) << (known ? " [1,2,6,6]" : " unknown shape")
                                          << " kernel " << c.kernel[0] << "x" << c.kernel[1]);
        if (!c.error) {
          EXPECT_TRUE(st.ok()) << st.message();
        } else {
          ASSERT_FALSE(st.ok());
          EXPECT_NE(st.message().find(c.error), std::string::npos) << st.message();
        }
      }
    }
  }
}

TEST(ShapeInference, SymbolicSpatialDimsStayComparable) {
  // ResNet block: 3x3 stride 2 pad 1 and the 1x1 stride 2 downsample both give
  // floor((H + 2 - 3) / 2) + 1 = floor((H - 1) / 2) + 1, so their sum keeps a symbolic dim.
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), C(8), S("H"), S("H")});
  auto* w3 = b.input("w3", DType::kFloat32, SymShape{C(16), C(8), C(3), C(3)});
  auto* w1 = b.input("w1", DType::kFloat32, SymShape{C(16), C(8), C(1), C(1)});
  auto* main = b.op(OpKind::Conv, {x, w3}, {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}});
  auto* down = b.op(OpKind::Conv, {x, w1}, {{"strides", ints({2, 2})}});
  auto* same = b.op(OpKind::Conv, {x, w3}, {{"strides", ints({2, 2})}, {"auto_pad", str("SAME_UPPER")}});
  auto* sum = b.op(OpKind::Add, {main, down});
  auto* valid = b.op(OpKind::Conv, {x, w3});  // floor((H - 3) / 1) + 1 = H - 2
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(main), "[N, 16, ((H-1)//2+1), ((H-1)//2+1)]");
  EXPECT_EQ(str_of(sum), str_of(main));
  EXPECT_EQ(str_of(same), str_of(main));  // ceil(H / 2)
  EXPECT_EQ(str_of(valid), "[N, 16, (H-2), (H-2)]");
}

TEST(ShapeInference, ReshapeZeroMinusOneAndFlatten) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), S("S"), C(128)});
  auto* r1 = b.op(OpKind::Reshape, {x, b.ints_const({0, 0, 2, 64})});
  auto* r2 = b.op(OpKind::Reshape, {r1, b.ints_const({0, 0, -1})});   // N*S*128 / (N*S) = 128
  auto* r3 = b.op(OpKind::Reshape, {x, b.ints_const({-1, 64})});      // N*S*128 / 64 = 2*N*S
  auto* r4 = b.op(OpKind::Reshape, {x, b.ints_const({0, -1})});       // S*128
  auto* f = b.op(OpKind::Flatten, {x}, {{"axis", int1(2)}});          // [N*S, 128]
  auto* z = b.input("z", DType::kFloat32, SymShape{C(0), C(3)});
  auto* r5 = b.op(OpKind::Reshape, {z, b.ints_const({0, 3})}, {{"allowzero", int1(1)}});  // literal 0
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(r1), "[N, S, 2, 64]");
  EXPECT_EQ(str_of(r2), "[N, S, 128]");
  EXPECT_EQ(str_of(r3), "[2*N*S, 64]");
  EXPECT_EQ(str_of(r4), "[N, 128*S]");
  EXPECT_EQ(str_of(f), "[N*S, 128]");
  EXPECT_EQ(str_of(r5), "[0, 3]");
}

// A shape or axes input declared with a huge length (a graph input [2^60]) gives an output of
// unknown rank, not 2^60 dims (tests/fuzz/regressions/loader/reshape_shape_input_of_huge_length.onnx
// made the load throw std::length_error). A length up to the bound still gives the rank.
TEST(ShapeInference, ShapeInputOfHugeDeclaredLengthLeavesTheRankUnknown) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{C(2), C(3)});
  auto* huge = b.input("huge", DType::kInt64, SymShape{C(int64_t{1} << 60)});
  auto* small = b.input("small", DType::kInt64, SymShape{C(3)});
  auto* r = b.op(OpKind::Reshape, {x, huge});
  auto* e = b.op(OpKind::Expand, {x, huge});
  auto* u = b.op(OpKind::Unsqueeze, {x, huge});
  auto* k = b.op(OpKind::ConstantOfShape, {huge});
  auto* r3 = b.op(OpKind::Reshape, {x, small});
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(r), "<rank unknown>");
  EXPECT_EQ(str_of(e), "<rank unknown>");
  EXPECT_EQ(str_of(u), "<rank unknown>");
  EXPECT_EQ(str_of(k), "<rank unknown>");
  EXPECT_EQ(str_of(r3), "[?, ?, ?]");
}

TEST(ShapeInference, ReshapeTargetBuiltFromShapeOps) {
  // bert-style: Shape(x) -> Gather(0), Gather(1) -> Unsqueeze -> Concat(.., [2], [64]) -> Reshape.
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), S("S"), C(128)});
  auto* shp = b.op(OpKind::Shape, {x});
  auto* n = b.op(OpKind::Gather, {shp, b.ints_const({0}, true)}, {{"axis", int1(0)}});
  auto* s = b.op(OpKind::Gather, {shp, b.ints_const({1}, true)}, {{"axis", int1(0)}});
  auto* nu = b.op(OpKind::Unsqueeze, {n, b.ints_const({0})});
  auto* su = b.op(OpKind::Unsqueeze, {s, b.ints_const({0})});
  // A Constant node (not an initializer) for one piece.
  ir::Attribute t;
  t.kind = ir::Attribute::Kind::kTensor;
  t.t = Tensor::from_vector<int64_t>({1}, {64});
  auto* c64 = b.op(OpKind::Constant, {}, {{"value", t}});
  auto* target = b.op(OpKind::Concat, {nu, su, b.ints_const({2}), c64}, {{"axis", int1(0)}});
  auto* r = b.op(OpKind::Reshape, {x, target});
  auto* sz = b.op(OpKind::Size, {x});
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(shp), "[3]");
  EXPECT_EQ(str_of(n), "[]");
  EXPECT_EQ(str_of(target), "[4]");
  EXPECT_EQ(str_of(r), "[N, S, 2, 64]");
  EXPECT_EQ(r->type().dtype, DType::kFloat32);
  EXPECT_EQ(sz->type().dtype, DType::kInt64);
  EXPECT_EQ(str_of(sz), "[]");
}

TEST(ShapeInference, ExpandTargetThroughEqualAndWhere) {
  // PyTorch's expand(-1, 4, -1) export: Where(Equal(t, -1), Shape(x), t) with t = [-1, 4, -1]
  // gives [N, 4, 5] (the symbol N never equals -1).
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), C(1), C(5)});
  auto* t = b.ints_const({-1, 4, -1});
  auto* eq = b.op(OpKind::Equal, {t, b.ints_const({-1})});
  auto* tgt = b.op(OpKind::Where, {eq, b.op(OpKind::Shape, {x}), t});
  auto* ex = b.op(OpKind::Expand, {x, tgt});
  auto* mx = b.op(OpKind::Max, {b.op(OpKind::Shape, {x}), b.ints_const({2, 0, 7})});  // [max(N,2)?, 1, 7]
  auto* mxr = b.op(OpKind::ConstantOfShape, {mx});
  auto* n = b.op(OpKind::Gather, {b.op(OpKind::Shape, {x}), b.ints_const({0}, true)});
  auto* ar = b.op(OpKind::Range, {b.ints_const({0}, true), n, b.ints_const({1}, true)});  // [N]
  auto* ar2 = b.op(OpKind::Range, {b.ints_const({1}, true), n, b.ints_const({1}, true)});  // N - 1: unknown
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(ex), "[N, 4, 5]");
  EXPECT_EQ(str_of(mxr), "[?, 1, 7]");
  EXPECT_EQ(str_of(ar), "[N]");
  EXPECT_EQ(str_of(ar2), "[?]");
  EXPECT_EQ(ar->type().dtype, DType::kInt64);
}

TEST(ShapeInference, SliceEndFromShapeGivesBoundedSymbol) {
  // Position ids [1, 512] sliced to S, gathered, then added to [N, S, 128]: result [N, S, 128].
  Builder b;
  auto* ids = b.input("ids", DType::kInt64, SymShape{S("N"), S("S")});
  auto* pos = b.input("pos", DType::kInt64, SymShape{C(1), C(512)});
  auto* table = b.input("table", DType::kFloat32, SymShape{C(512), C(128)});
  auto* words = b.input("words", DType::kFloat32, SymShape{S("N"), S("S"), C(128)});
  auto* seq = b.op(OpKind::Gather, {b.op(OpKind::Shape, {ids}), b.ints_const({1}, true)});
  auto* end = b.op(OpKind::Unsqueeze, {seq, b.ints_const({0})});
  auto* sl = b.op(OpKind::Slice, {pos, b.ints_const({0}), end, b.ints_const({1}), b.ints_const({1})});
  auto* emb = b.op(OpKind::Gather, {table, sl});
  auto* sum = b.op(OpKind::Add, {words, emb});
  auto* full = b.op(OpKind::Slice, {ids, b.ints_const({1}), b.ints_const({INT64_MAX}), b.ints_const({1})});
  auto* rev = b.op(OpKind::Slice, {pos, b.ints_const({-1}), b.ints_const({INT64_MIN}), b.ints_const({1}),
                                   b.ints_const({-3})});  // 511, 508, ..., 1: 171 elements
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(sl), "[1, min(S,512)]");
  EXPECT_EQ(str_of(emb), "[1, min(S,512), 128]");
  EXPECT_EQ(str_of(sum), "[N, S, 128]");
  EXPECT_EQ(str_of(full), "[N, ?]");  // S - 1 is not expressible: unknown, not a guess
  EXPECT_EQ(str_of(rev), "[1, 171]");
}

TEST(ShapeInference, SqueezeAttributeAndInputForms) {
  Builder b11;
  b11.opset = 11;
  auto* x = b11.input("x", DType::kFloat32, SymShape{S("N"), C(1), C(4), C(1)});
  auto* a = b11.op(OpKind::Squeeze, {x}, {{"axes", ints({1, -1})}});
  auto* u = b11.op(OpKind::Unsqueeze, {a}, {{"axes", ints({0, -1})}});
  auto* all = b11.op(OpKind::Squeeze, {x});  // N may be 1: rank unknown
  ASSERT_TRUE(b11.run().ok());
  EXPECT_EQ(str_of(a), "[N, 4]");
  EXPECT_EQ(str_of(u), "[1, N, 4, 1]");
  EXPECT_FALSE(all->type().shape.has_value());

  Builder b13;
  auto* y = b13.input("y", DType::kFloat32, SymShape{S("N"), C(1), C(4), C(1)});
  auto* s = b13.op(OpKind::Squeeze, {y, b13.ints_const({1})});
  auto* u2 = b13.op(OpKind::Unsqueeze, {s, b13.ints_const({-1, 1})});
  auto* k = b13.input("k", DType::kFloat32, SymShape{C(1), C(3), C(1)});
  auto* all2 = b13.op(OpKind::Squeeze, {k});
  ASSERT_TRUE(b13.run().ok());
  EXPECT_EQ(str_of(s), "[N, 4, 1]");
  EXPECT_EQ(str_of(u2), "[N, 1, 4, 1, 1]");
  EXPECT_EQ(str_of(all2), "[3]");

  Builder bad;
  bad.op(OpKind::Squeeze, {bad.input("x", DType::kFloat32, SymShape{C(2), C(3)}), bad.ints_const({1})});
  Status st = bad.run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot squeeze axis 1 of size 3"), std::string::npos) << st.message();
}

TEST(ShapeInference, DataDependentDimsAreUnknown) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), C(4)});
  auto* t = b.input("t", DType::kInt64, SymShape{C(3)});  // a run-time target
  auto* nz = b.op(OpKind::NonZero, {x});
  auto* r = b.op(OpKind::Reshape, {x, t});
  auto* cos = b.op(OpKind::ConstantOfShape, {t});
  auto* u = b.node(OpKind::Unique, {x}, 4);
  auto* k = b.input("k", DType::kInt64, SymShape{C(1)});
  auto* top = b.node(OpKind::TopK, {x, k}, 2);
  auto* sl = b.op(OpKind::Slice, {x, t, t});
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(nz), "[2, ?]");
  EXPECT_EQ(nz->type().dtype, DType::kInt64);
  EXPECT_EQ(str_of(r), "[?, ?, ?]");
  EXPECT_EQ(str_of(cos), "[?, ?, ?]");
  EXPECT_EQ(cos->type().dtype, DType::kFloat32);
  EXPECT_EQ(str_of(u->output(0)), "[?]");
  EXPECT_EQ(str_of(u->output(2)), "[4*N]");
  EXPECT_EQ(str_of(top->output(0)), "[N, ?]");
  EXPECT_EQ(top->output(1)->type().dtype, DType::kInt64);
  EXPECT_EQ(str_of(sl), "[?, ?]");
}

TEST(ShapeInference, TensorOps) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), C(6), C(5)});
  auto* tr = b.op(OpKind::Transpose, {x}, {{"perm", ints({2, 0, 1})}});
  auto* cat = b.op(OpKind::Concat, {x, x}, {{"axis", int1(1)}});
  auto* catn = b.op(OpKind::Concat, {x, x}, {{"axis", int1(0)}});
  auto* sp = b.node(OpKind::Split, {x, b.ints_const({2, 4})}, 2, {{"axis", int1(1)}});
  auto* sp3 = b.node(OpKind::Split, {x}, 3, {{"axis", int1(1)}});
  auto* ex = b.op(OpKind::Expand, {b.input("e", DType::kFloat32, SymShape{C(1), C(5)}), b.ints_const({3, 1, 1})});
  auto* ti = b.op(OpKind::Tile, {x, b.ints_const({2, 1, 3})});
  auto* pd = b.op(OpKind::Pad, {x, b.ints_const({0, 1, 2, 0, 3, 4})});  // 6+1+3, 5+2+4
  auto* rs = b.op(OpKind::ReduceSum, {x, b.ints_const({-1})}, {{"keepdims", int1(0)}});
  auto* rm = b.op(OpKind::ReduceMean, {x}, {{"axes", ints({1})}});
  auto* am = b.op(OpKind::ArgMax, {x}, {{"axis", int1(1)}, {"keepdims", int1(0)}});
  auto* ga = b.op(OpKind::Gather, {x, b.input("i", DType::kInt64, SymShape{S("K"), C(2)})}, {{"axis", int1(1)}});
  auto* oh = b.op(OpKind::OneHot, {b.input("oi", DType::kInt64, SymShape{S("N")}), b.ints_const({7}, true),
                                   b.input("ov", DType::kFloat32, SymShape{C(2)})});
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(tr), "[5, N, 6]");
  EXPECT_EQ(str_of(cat), "[N, 12, 5]");
  EXPECT_EQ(str_of(catn), "[?, 6, 5]");
  EXPECT_EQ(str_of(sp->output(0)), "[N, 2, 5]");
  EXPECT_EQ(str_of(sp->output(1)), "[N, 4, 5]");
  EXPECT_EQ(str_of(sp3->output(2)), "[N, 2, 5]");
  EXPECT_EQ(str_of(ex), "[3, 1, 5]");
  EXPECT_EQ(str_of(ti), "[2*N, 6, 15]");
  EXPECT_EQ(str_of(pd), "[N, 10, 11]");
  EXPECT_EQ(str_of(rs), "[N, 6]");
  EXPECT_EQ(str_of(rm), "[N, 1, 5]");
  EXPECT_EQ(str_of(am), "[N, 5]");
  EXPECT_EQ(am->type().dtype, DType::kInt64);
  EXPECT_EQ(str_of(ga), "[N, K, 2, 5]");
  EXPECT_EQ(str_of(oh), "[N, 7]");
}

ir::Attribute floats(std::vector<float> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}

TEST(ShapeInference, OpsetAttributeVersusInputForms) {
  Builder old;  // attributes where later opsets take inputs
  old.opset = 9;
  auto* x = old.input("x", DType::kFloat32, SymShape{S("N"), C(10), C(6)});
  auto* sl = old.op(OpKind::Slice, {x}, {{"starts", ints({1, -4})}, {"ends", ints({8, 100})}, {"axes", ints({1, 2})}});
  auto* sp = old.node(OpKind::Split, {x}, 2, {{"axis", int1(1)}, {"split", ints({3, 7})}});
  auto* rs = old.op(OpKind::ReduceSum, {x}, {{"axes", ints({0, 2})}});
  auto* pd = old.op(OpKind::Pad, {x}, {{"pads", ints({0, 1, 0, 0, 1, 2})}});
  old.opset = 1;
  auto* tk = old.node(OpKind::TopK, {x}, 2, {{"k", int1(4)}});
  old.opset = 7;
  auto* up = old.op(OpKind::Upsample, {old.input("u", DType::kFloat32, SymShape{C(1), C(1), C(3), S("W")})},
                    {{"scales", floats({1, 1, 2.5f, 1})}});
  ASSERT_TRUE(old.run().ok());
  EXPECT_EQ(str_of(sl), "[N, 7, 4]");  // 1..8 -> 7; -4 -> 2..6 -> 4
  EXPECT_EQ(str_of(sp->output(0)), "[N, 3, 6]");
  EXPECT_EQ(str_of(sp->output(1)), "[N, 7, 6]");
  EXPECT_EQ(str_of(rs), "[1, 10, 1]");
  EXPECT_EQ(str_of(pd), "[N, 12, 8]");  // 10 + 1 + 1, 6 + 0 + 2
  EXPECT_EQ(str_of(tk->output(0)), "[N, 10, 4]");
  EXPECT_EQ(str_of(up), "[1, 1, 7, W]");  // floor(3 * 2.5) = 7; scale 1 keeps W

  Builder now;  // opset 13+: inputs
  auto* y = now.input("y", DType::kFloat32, SymShape{S("N"), C(10), C(6)});
  auto* noop = now.op(OpKind::ReduceSum, {y}, {{"noop_with_empty_axes", int1(1)}});
  auto* all = now.op(OpKind::ReduceSum, {y}, {{"keepdims", int1(0)}});
  auto* rsz = now.op(OpKind::Resize, {now.input("r", DType::kFloat32, SymShape{S("N"), C(3), C(4), C(4)}), nullptr,
                                      nullptr, now.ints_const({2, 3, 8, 2})});
  ASSERT_TRUE(now.run().ok());
  EXPECT_EQ(str_of(noop), "[N, 10, 6]");
  EXPECT_EQ(str_of(all), "[]");
  EXPECT_EQ(str_of(rsz), "[2, 3, 8, 2]");
}

TEST(ShapeInference, RecurrentAndNorms) {
  Builder b;
  auto* x = b.input("x", DType::kFloat32, SymShape{S("S"), S("N"), C(64)});
  auto* w = b.input("w", DType::kFloat32, SymShape{C(2), C(512), C(64)});
  auto* r = b.input("r", DType::kFloat32, SymShape{C(2), C(512), C(128)});
  auto* lstm = b.node(OpKind::LSTM, {x, w, r}, 3, {{"hidden_size", int1(128)}, {"direction", str("bidirectional")}});
  auto* ln = b.node(OpKind::LayerNormalization, {x, b.input("g", DType::kFloat32, SymShape{C(64)})}, 3,
                    {{"axis", int1(-1)}});
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(lstm->output(0)), "[S, 2, N, 128]");
  EXPECT_EQ(str_of(lstm->output(1)), "[2, N, 128]");
  EXPECT_EQ(str_of(lstm->output(2)), "[2, N, 128]");
  EXPECT_EQ(str_of(ln->output(0)), "[S, N, 64]");
  EXPECT_EQ(str_of(ln->output(1)), "[S, N, 1]");
}

TEST(ShapeInference, IfBranchesJoin) {
  Builder b;
  auto* cond = b.input("c", DType::kBool, SymShape{});
  auto* x = b.input("x", DType::kFloat32, SymShape{S("N"), C(4)});
  auto make_branch = [&](int64_t cols) {
    auto g = std::make_shared<ir::Graph>("branch", &b.g);
    ir::Value* cap = g->add_value("x_cap");
    g->captures().push_back(cap);
    g->capture_sources().push_back(x);
    ir::Value* o = g->add_value("o");
    ir::Node* n = g->add_node(OpKind::Reshape, {cap, nullptr}, {o}, "r");
    n->set_opset(17);
    ir::Value* tgt = g->add_value("t");
    tgt->set_constant(Tensor::from_vector<int64_t>({2}, {0, cols}));
    n->set_input(1, tgt);
    g->outputs().push_back(o);
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kGraph;
    a.g = g;
    return a;
  };
  auto* y = b.op(OpKind::If, {cond}, {{"then_branch", make_branch(4)}, {"else_branch", make_branch(-1)}});
  auto* y2 = b.op(OpKind::If, {cond}, {{"then_branch", make_branch(2)}, {"else_branch", make_branch(4)}});
  ASSERT_TRUE(b.run().ok());
  EXPECT_EQ(str_of(y), "[N, 4]");
  EXPECT_EQ(str_of(y2), "[N, ?]");
  EXPECT_EQ(y->type().dtype, DType::kFloat32);
}


// Symbolic expressions are bounded (kMaxSymAtoms atoms, kMaxSymChars characters): a chain that
// squares its length each step, x[N] -> Reshape(Unsqueeze(x, 0) * Unsqueeze(x, 1), [-1]), would
// build a dim of 2^k atoms; past the bound the dim is unknown and inference stays linear. The
// same through tracked shape values (Shape -> Mul -> ConstantOfShape).
TEST(ShapeInference, SymbolicExpressionsStayBounded) {
  Builder b;
  ir::Value* x = b.input("x", DType::kFloat32, SymShape{S("N")});
  std::vector<ir::Value*> steps;
  for (int k = 0; k < 28; ++k) {
    auto* u0 = b.op(OpKind::Unsqueeze, {x, b.ints_const({0})});
    auto* u1 = b.op(OpKind::Unsqueeze, {x, b.ints_const({1})});
    x = b.op(OpKind::Reshape, {b.op(OpKind::Mul, {u0, u1}), b.ints_const({-1})});
    steps.push_back(x);
  }
  ir::Value* t = b.input("t", DType::kFloat32, SymShape{S("N")});
  for (int k = 0; k < 28; ++k) {
    auto* s = b.op(OpKind::Shape, {t});
    t = b.op(OpKind::ConstantOfShape, {b.op(OpKind::Mul, {s, s})});
  }
  ASSERT_TRUE(b.run().ok());
  auto atoms = [](int n) {
    std::string s = "N";
    for (int i = 1; i < n; ++i) s += "*N";
    return "[" + s + "]";
  };
  EXPECT_EQ(str_of(steps[0]), atoms(2));
  EXPECT_EQ(str_of(steps[5]), atoms(64));  // 2^6 atoms: at the bound
  EXPECT_EQ(str_of(steps[6]), "[?]");      // 2^7: past it
  EXPECT_EQ(str_of(steps[27]), "[?]");
  EXPECT_EQ(str_of(t), "[?]");
}

TEST(ShapeSym, BoundsOnAtomsAndCharacters) {
  using shapes::SymInt;
  SymInt p = SymInt::constant(1);
  for (size_t i = 0; i < shapes::kMaxSymAtoms; ++i) p = shapes::sym_mul(p, SymInt::named("B"));
  ASSERT_TRUE(p.is_symbol());
  EXPECT_EQ(p.symbol.size(), 2 * shapes::kMaxSymAtoms - 1);
  EXPECT_EQ(shapes::sym_div_exact(p, SymInt::named("B")).symbol.size(), 2 * shapes::kMaxSymAtoms - 3);
  EXPECT_FALSE(shapes::sym_mul(p, SymInt::named("B")).known);   // one atom too many
  EXPECT_EQ(shapes::sym_mul(p, SymInt::constant(3)).symbol, "3*" + p.symbol);  // a coefficient is no atom
  // Characters: a long declared name stays as it is, expressions built from it do not grow past
  // the bound (min(X,c) nested, or a product).
  const std::string long_name(shapes::kMaxSymChars - 4, 'L');
  EXPECT_EQ(shapes::dim_min_const(Dim::named("L"), 8), S("min(L,8)"));
  EXPECT_TRUE(shapes::dim_min_const(Dim::named(long_name), 8) == U());
  EXPECT_TRUE(shapes::dim_mul(Dim::named(long_name), Dim::named("LLLLL")) == U());
  EXPECT_EQ(shapes::dim_mul(Dim::named(long_name), C(1)), Dim::named(long_name));
}

}  // namespace
}  // namespace tierjit::passes
