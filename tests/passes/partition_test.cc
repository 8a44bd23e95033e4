// Tests of the partitioning pass: the MLP Gemm+GELU chain in one region, attention-style Softmax
// and LayerNorm prologues, Conv+Add+Relu, a diamond that must not become a non-convex region,
// shape-only subgraphs, ops without a lowering as kOpaque, and the coverage/order invariants.
#include "passes/partition.h"

#include <memory>
#include <set>
#include <tuple>

#include "pass_test_util.h"

namespace tierjit::passes {
namespace {

using namespace testing;
using ir::OpKind;

// Every node in exactly one region; every cross-region edge goes to a later region (so the region
// graph is acyclic and each region convex); region ids are positions.
void check_invariants(const ir::Graph& g, const Partition& p) {
  std::set<const ir::Node*> seen;
  for (size_t i = 0; i < p.regions.size(); ++i) {
    EXPECT_EQ(p.regions[i].id, static_cast<int>(i));
    for (const ir::Node* n : p.regions[i].nodes) {
      EXPECT_TRUE(seen.insert(n).second) << n->describe() << " in two regions";
      EXPECT_EQ(p.region_of.at(n), static_cast<int>(i));
    }
  }
  EXPECT_EQ(seen.size(), g.nodes().size());
  for (const auto& n : g.nodes())
    for (const ir::Value* v : n->inputs())
      if (v && v->producer()) {
        int from = p.region_of.at(v->producer()), to = p.region_of.at(n.get());
        EXPECT_LE(from, to) << v->name();
      }
}

// "Op Op Op" of a region's nodes.
std::string ops(const Region& r) {
  std::string s;
  for (const ir::Node* n : r.nodes) s += (s.empty() ? "" : " ") + std::string(ir::op_name(n->op()));
  return s;
}

const Region& region_with(const Partition& p, const ir::Value* v) {
  return p.regions[p.region_of.at(v->producer())];
}

Partition partition(const ir::Graph& g, PartitionOptions o = {}) {
  auto p = partition_graph(g, o);
  EXPECT_TRUE(p.ok()) << p.status().message();
  check_invariants(g, *p);
  return std::move(p).value();
}

TEST(Partition, MlpGemmWithGeluChainIsOneRegionPerLayer) {
  GraphBuilder b;
  ir::Value* h = b.input("x", DType::kFloat32, dims({S("N"), C(8)}));
  for (int layer = 0; layer < 2; ++layer) {
    std::string p = "l" + std::to_string(layer) + "_";
    ir::Value* w = b.constant(p + "w", Tensor::zeros(DType::kFloat32, {8, 8}));
    ir::Value* bias = b.constant(p + "b", Tensor::zeros(DType::kFloat32, {8}));
    ir::Value* gemm = b.node(OpKind::Gemm, {h, w, bias}, p + "gemm", {{"transB", attr_int(1)}});
    // GELU: x * 0.5 * (1 + erf(x / sqrt 2))
    ir::Value* div = b.node(OpKind::Div, {gemm, b.fconst(p + "sqrt2", {1.41421f})}, p + "div");
    ir::Value* erf = b.node(OpKind::Erf, {div}, p + "erf");
    ir::Value* add = b.node(OpKind::Add, {erf, b.fconst(p + "one", {1})}, p + "add");
    ir::Value* mul = b.node(OpKind::Mul, {gemm, add}, p + "mul");
    h = b.node(OpKind::Mul, {mul, b.fconst(p + "half", {0.5f})}, p + "mul2");
  }
  b.output(h);
  b.infer();
  Partition p = partition(b.g);
  ASSERT_EQ(p.regions.size(), 2u);
  for (const Region& r : p.regions) {
    EXPECT_EQ(r.kind, RegionKind::kMatMulEpilogue);
    EXPECT_EQ(ops(r), "Gemm Div Erf Add Mul Mul");
    EXPECT_EQ(r.anchor->op(), OpKind::Gemm);
    ASSERT_EQ(r.outputs.size(), 1u);  // only the layer result leaves the region
  }
  EXPECT_EQ(p.regions[0].name, "gemm_0");
  EXPECT_EQ(p.regions[1].inputs[0], p.regions[0].outputs[0]);
}

TEST(Partition, AttentionSoftmaxTakesScaleAndMaskPrologue) {
  GraphBuilder b;
  ir::Value* q = b.input("q", DType::kFloat32, dims({S("B"), S("S"), C(4)}));
  ir::Value* kt = b.input("kt", DType::kFloat32, dims({S("B"), C(4), S("S")}));
  ir::Value* mask = b.input("mask", DType::kFloat32, dims({S("B"), C(1), S("S")}));
  ir::Value* v = b.input("v", DType::kFloat32, dims({S("B"), S("S"), C(4)}));
  ir::Value* qk = b.node(OpKind::MatMul, {q, kt}, "qk");
  ir::Value* scaled = b.node(OpKind::Div, {qk, b.fconst("scale", {2})}, "scaled");
  ir::Value* masked = b.node(OpKind::Add, {scaled, mask}, "masked");
  ir::Value* probs = b.node(OpKind::Softmax, {masked}, "probs", {{"axis", attr_int(-1)}});
  b.output(b.node(OpKind::MatMul, {probs, v}, "ctx"));
  b.infer();
  Partition p = partition(b.g);
  EXPECT_EQ(ops(region_with(p, qk)), "MatMul");
  const Region& sm = region_with(p, probs);
  EXPECT_EQ(sm.kind, RegionKind::kReduction);
  EXPECT_EQ(ops(sm), "Div Add Softmax");
  EXPECT_EQ(sm.name, "softmax_" + std::to_string(sm.id));
}

TEST(Partition, LayerNormTakesResidualAddMatMulKeepsBias) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("B"), S("S"), C(4)}));
  ir::Value* mm = b.node(OpKind::MatMul, {x, b.constant("w", Tensor::zeros(DType::kFloat32, {4, 4}))}, "mm");
  ir::Value* biased = b.node(OpKind::Add, {b.fconst("bias", {0, 0, 0, 0}), mm}, "biased");
  ir::Value* res = b.node(OpKind::Add, {x, biased}, "res");
  ir::Value* ln = b.node(OpKind::LayerNormalization, {res, b.fconst("gamma", {1, 1, 1, 1}), b.fconst("beta", {0, 0, 0, 0})},
                         "ln", {{"axis", attr_int(-1)}});
  b.output(ln);
  b.infer();
  Partition p = partition(b.g);
  ASSERT_EQ(p.regions.size(), 2u);
  EXPECT_EQ(ops(p.regions[0]), "MatMul Add");
  EXPECT_EQ(p.regions[0].kind, RegionKind::kMatMulEpilogue);
  EXPECT_EQ(ops(p.regions[1]), "Add LayerNormalization");
  EXPECT_EQ(p.regions[1].kind, RegionKind::kReduction);
}

TEST(Partition, ConvTakesResidualAddAndRelu) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), C(2), C(5), C(5)}));
  ir::Value* w = b.constant("w", Tensor::zeros(DType::kFloat32, {2, 2, 3, 3}));
  Attrs pads = {{"pads", attr_ints({1, 1, 1, 1})}};
  ir::Value* c1 = b.node(OpKind::Conv, {x, w}, "c1", pads);
  ir::Value* r1 = b.node(OpKind::Relu, {c1}, "r1");
  ir::Value* c2 = b.node(OpKind::Conv, {r1, w}, "c2", pads);
  ir::Value* add = b.node(OpKind::Add, {c2, x}, "add");
  b.output(b.node(OpKind::Relu, {add}, "y"));
  b.infer();
  Partition p = partition(b.g);
  ASSERT_EQ(p.regions.size(), 2u);
  EXPECT_EQ(ops(p.regions[0]), "Conv Relu");
  EXPECT_EQ(ops(p.regions[1]), "Conv Add Relu");
  EXPECT_EQ(p.regions[1].inputs.size(), 3u);  // r1, w, x
}

// Rule 4b: a MaxPool or AveragePool right after a Conv region's epilogue is the region's last
// node (Region::pool); not when the epilogue's value has another reader, the Conv is grouped, the
// pool's window is dilated or uses ceil_mode, or the pool's Indices are asked for.
TEST(Partition, ConvRegionTakesItsPool) {
  auto build = [](const Attrs& pool_attrs, bool second_reader, int64_t group, bool indices) {
    auto b = std::make_unique<GraphBuilder>();
    ir::Value* x = b->input("x", DType::kFloat32, dims({S("N"), C(4), C(8), C(8)}));
    ir::Value* w = b->constant("w", Tensor::zeros(DType::kFloat32, {4, 4 / group, 3, 3}));
    ir::Value* c = b->node(OpKind::Conv, {x, w}, "c",
                           {{"pads", attr_ints({1, 1, 1, 1})}, {"group", attr_int(group)}});
    ir::Value* r = b->node(OpKind::Relu, {c}, "r");
    Attrs a = {{"kernel_shape", attr_ints({2, 2})}, {"strides", attr_ints({2, 2})}};
    a.insert(a.end(), pool_attrs.begin(), pool_attrs.end());
    ir::Node* pool = b->node_n(OpKind::MaxPool, {r}, "pool", indices ? 2 : 1, a);
    b->output(pool->output(0));
    if (indices) b->output(pool->output(1));
    if (second_reader) b->output(b->node(OpKind::Sigmoid, {r}, "other"));
    b->infer();
    return b;
  };
  {
    auto b = build({}, false, 1, false);
    Partition p = partition(b->g);
    ASSERT_EQ(p.regions.size(), 1u);
    EXPECT_EQ(ops(p.regions[0]), "Conv Relu MaxPool");
    EXPECT_EQ(p.regions[0].kind, RegionKind::kMatMulEpilogue);
    ASSERT_NE(p.regions[0].pool, nullptr);
    EXPECT_EQ(p.regions[0].pool->op(), OpKind::MaxPool);
    ASSERT_EQ(p.regions[0].outputs.size(), 1u);
    EXPECT_EQ(p.regions[0].outputs[0], p.regions[0].pool->output(0));
  }
  const Attrs dilated = {{"dilations", attr_ints({2, 2})}};
  const Attrs ceil = {{"ceil_mode", attr_int(1)}};
  for (auto [attrs, reader, group, indices] :
       {std::tuple{Attrs{}, true, int64_t{1}, false}, std::tuple{Attrs{}, false, int64_t{2}, false},
        std::tuple{dilated, false, int64_t{1}, false}, std::tuple{ceil, false, int64_t{1}, false},
        std::tuple{Attrs{}, false, int64_t{1}, true}}) {
    auto b = build(attrs, reader, group, indices);
    Partition p = partition(b->g);
    for (const Region& r : p.regions) {
      EXPECT_EQ(r.pool, nullptr) << r.name;
      if (r.kind == RegionKind::kMatMulEpilogue)
        EXPECT_EQ(ops(r).find("MaxPool"), std::string::npos) << ops(r);
    }
  }
}

TEST(Partition, DiamondThroughOpaqueOpIsNotFusedAcross) {
  // e = Exp(x); h = Hardmax(e) (no lowering); y = Add(e, h). Fusing Add into Exp's region would
  // give a region that a path leaves (to Hardmax) and re-enters: it must not happen.
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(2), C(3)}));
  ir::Value* e = b.node(OpKind::Exp, {x}, "e");
  ir::Value* h = b.node(OpKind::Hardmax, {e}, "h");
  ir::Value* y = b.node(OpKind::Add, {e, h}, "y");
  b.output(y);
  b.infer();
  Partition p = partition(b.g);
  ASSERT_EQ(p.regions.size(), 3u);
  EXPECT_NE(p.region_of.at(e->producer()), p.region_of.at(y->producer()));
  EXPECT_EQ(region_with(p, h).kind, RegionKind::kOpaque);
  EXPECT_EQ(region_with(p, h).name, "hardmax_1");
  EXPECT_EQ(region_with(p, e).outputs.size(), 1u);
}

TEST(Partition, DiamondOfElementwiseOpsFusesWhole) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(2), C(3)}));
  ir::Value* e = b.node(OpKind::Exp, {x}, "e");
  ir::Value* l = b.node(OpKind::Neg, {e}, "l");
  ir::Value* r = b.node(OpKind::Sigmoid, {e}, "r");
  b.output(b.node(OpKind::Mul, {l, r}, "y"));
  b.infer();
  Partition p = partition(b.g);
  ASSERT_EQ(p.regions.size(), 1u);
  EXPECT_EQ(p.regions[0].kind, RegionKind::kElementwise);
  EXPECT_EQ(p.regions[0].name, "elementwise_0");
}

TEST(Partition, ShapeOnlySubgraphIsMarkedAndReshapeIsOpaque) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N"), S("S"), C(4)}));
  ir::Value* s = b.node(OpKind::Shape, {x}, "shape");
  ir::Value* n = b.node(OpKind::Gather, {s, b.iconst("i0", {0}, true)}, "gather");
  ir::Value* un = b.node(OpKind::Unsqueeze, {n, b.iconst("ax", {0})}, "unsq");
  ir::Value* tgt = b.node(OpKind::Concat, {un, b.iconst("m1", {-1})}, "concat", {{"axis", attr_int(0)}});
  ir::Value* y = b.node(OpKind::Reshape, {x, tgt}, "reshape");
  b.output(b.node(OpKind::Relu, {y}, "relu"));
  b.infer();
  Partition p = partition(b.g);
  ASSERT_EQ(p.regions.size(), 3u);
  EXPECT_EQ(p.regions[0].kind, RegionKind::kShapeOnly);
  EXPECT_EQ(ops(p.regions[0]), "Shape Gather Unsqueeze Concat");
  EXPECT_EQ(p.regions[0].name, "shape_0");
  ASSERT_EQ(p.regions[0].outputs.size(), 1u);
  EXPECT_EQ(p.regions[0].outputs[0], tgt);
  EXPECT_EQ(p.regions[1].kind, RegionKind::kOpaque);
  EXPECT_EQ(p.regions[2].kind, RegionKind::kElementwise);
  EXPECT_EQ(p.count(RegionKind::kShapeOnly), 1u);
}

TEST(Partition, DataInputsMakeArithmeticNotShapeOnly) {
  // Add(Shape(x), data) is data arithmetic, not plan-time shape arithmetic.
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(2), C(3)}));
  ir::Value* d = b.input("d", DType::kInt64, dims({C(2)}));
  ir::Value* s = b.node(OpKind::Shape, {x}, "shape");
  ir::Value* y = b.node(OpKind::Add, {s, d}, "y");
  b.output(y);
  b.infer();
  Partition p = partition(b.g);
  EXPECT_EQ(region_with(p, s).kind, RegionKind::kShapeOnly);
  EXPECT_EQ(region_with(p, y).kind, RegionKind::kElementwise);
}

TEST(Partition, OpsWithoutLoweringAreOpaqueOnePerRegion) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(4), C(4)}));
  ir::Value* t1 = b.node(OpKind::Transpose, {x}, "t1");
  ir::Value* t2 = b.node(OpKind::Transpose, {t1}, "t2");
  b.output(t2);
  b.infer();
  Partition p = partition(b.g);
  ASSERT_EQ(p.regions.size(), 2u);
  EXPECT_EQ(p.regions[0].kind, RegionKind::kOpaque);
  EXPECT_EQ(p.regions[0].name, "transpose_0");
  EXPECT_EQ(fusion_class(OpKind::Transpose), FusionClass::kNone);
  EXPECT_EQ(fusion_class(OpKind::Gemm), FusionClass::kAnchor);
  EXPECT_EQ(fusion_class(OpKind::Softmax), FusionClass::kReduction);
  EXPECT_EQ(fusion_class(OpKind::Erf), FusionClass::kElementwiseUnary);
  EXPECT_EQ(fusion_class(OpKind::Where), FusionClass::kElementwiseBinary);
}

TEST(Partition, LstmAndGruAreRecurrentRegionsOfOneNode) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("S"), S("N"), C(4)}));
  ir::Value* w = b.constant("w", Tensor::zeros(DType::kFloat32, {1, 12, 4}));
  ir::Value* r = b.constant("r", Tensor::zeros(DType::kFloat32, {1, 12, 4}));
  ir::Value* wl = b.constant("wl", Tensor::zeros(DType::kFloat32, {1, 16, 4}));
  ir::Value* rl = b.constant("rl", Tensor::zeros(DType::kFloat32, {1, 16, 4}));
  ir::Node* gru = b.node_n(OpKind::GRU, {x, w, r}, "gru", 2, {{"hidden_size", attr_int(4)}});
  ir::Value* relu = b.node(OpKind::Relu, {gru->output(0)}, "relu");  // not fused into the cell
  ir::Node* lstm = b.node_n(OpKind::LSTM, {x, wl, rl}, "lstm", 3, {{"hidden_size", attr_int(4)}});
  b.output(relu);
  b.output(lstm->output(1));  // Y unused: the region outputs Y_h alone
  b.infer();
  Partition p = partition(b.g);
  ASSERT_EQ(p.regions.size(), 3u);
  const Region& g = region_with(p, gru->output(0));
  EXPECT_EQ(g.kind, RegionKind::kRecurrent);
  EXPECT_EQ(g.anchor, gru);
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.name, "gru_0");
  const Region& l = region_with(p, lstm->output(1));
  EXPECT_EQ(l.kind, RegionKind::kRecurrent);
  EXPECT_EQ(l.outputs, std::vector<const ir::Value*>{lstm->output(1)});
  EXPECT_EQ(region_with(p, relu).kind, RegionKind::kElementwise);
  EXPECT_EQ(fusion_class(OpKind::LSTM), FusionClass::kRecurrent);
  EXPECT_EQ(region_kind_name(RegionKind::kRecurrent), "recurrent");
  EXPECT_NE(format_partition(p).find(", 2 recurrent\n"), std::string::npos) << format_partition(p);
}

TEST(Partition, NoFuseGivesOneRegionPerNode) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({C(3)}));
  b.output(b.node(OpKind::Neg, {b.node(OpKind::Exp, {x}, "e")}, "y"));
  b.infer();
  PartitionOptions o;
  o.fuse = false;
  Partition p = partition(b.g, o);
  EXPECT_EQ(p.regions.size(), 2u);
  o.fuse = true;
  o.max_region_nodes = 1;
  EXPECT_EQ(partition(b.g, o).regions.size(), 2u);
  EXPECT_EQ(partition(b.g).regions.size(), 1u);
}

TEST(Partition, EmptyGraphAndFormat) {
  GraphBuilder b;
  ir::Value* x = b.input("x", DType::kFloat32, dims({S("N")}));
  b.output(x);
  Partition p = partition(b.g);
  EXPECT_TRUE(p.regions.empty());
  EXPECT_EQ(format_partition(p),
            "summary: 0 nodes in 0 regions: 0 matmul_epilogue, 0 reduction, 0 elementwise, 0 shape_only, 0 opaque\n");
  GraphBuilder c;
  ir::Value* cx = c.input("x", DType::kFloat32, dims({S("N")}));
  c.output(c.node(OpKind::Relu, {cx}, "r"));
  c.infer();
  EXPECT_EQ(format_region(partition(c.g).regions[0]),
            "region 0 'elementwise_0': elementwise, 1 node\n"
            "  ops:     r (Relu)\n"
            "  inputs:  %x: float32[N]\n"
            "  outputs: %r: float32[N]\n");
}

}  // namespace
}  // namespace tierjit::passes
