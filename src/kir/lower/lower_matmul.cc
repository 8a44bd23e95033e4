// Lowering of matmul-epilogue regions anchored on MatMul or Gemm (Conv: lower_conv.cc) into the
// generated GEMM of gemm_kernel.h, with the region's elementwise epilogue applied as C tiles are
// stored (matmul_common.h). Batched MatMul loops over the broadcast batch dims, or folds them
// into M when B has none. Source: ONNX MatMul-13 (numpy matmul), Gemm-13.
#include <algorithm>
#include <memory>

#include "kir/lower/gemm_kernel.h"
#include "kir/lower/gemm_panels.h"
#include "kir/lower/lower_internal.h"
#include "kir/lower/matmul_common.h"

namespace tierjit::kir::lowering {

Expected<LoweredRegion> lower_conv(const passes::Region& region, const LowerOptions& options);
bool conv_supported(const passes::Region& region);

namespace {

bool is_f32(const ir::Value* v) { return v && v->type().dtype == DType::kFloat32; }
bool is_const_one(const Expr& e) {
  int64_t v = 0;
  return const_value(e, &v) && v == 1;
}
bool known_rank(const ir::Value* v) { return v && v->type().shape.has_value(); }
size_t rank(const ir::Value* v) { return v->type().shape->size(); }

std::vector<Expr> input_dims(const RegionIo& io, int i) {
  std::vector<Expr> d;
  for (int64_t k = 0; k < io.rank_of_input(i); ++k) d.push_back(io.input_dim(i, k));
  return d;
}

// Broadcast of two dims (numpy): constant when both are, else a run-time select.
Expr broadcast_dim(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  bool ca = const_value(a, &x), cb = const_value(b, &y);
  if (ca && x == 1) return b;
  if (cb && y == 1) return a;
  if (ca && cb) return imm(std::max(x, y));
  if (ca) return a;  // b is x or 1
  if (cb) return b;
  return select(compare(CmpOp::kEq, a, imm(1)), b, a);
}

// Element offset of the matrix of batch `t` (flat over `out` batch dims) in an operand whose
// batch dims `in` (right-aligned, broadcasting) precede matrices of `matrix` elements.
Expr batch_offset(const Expr& t, const std::vector<Expr>& in, const std::vector<Expr>& out,
                  const Expr& matrix) {
  Expr off = imm(0), stride = matrix, after = imm(1);
  for (size_t k = 0; k < out.size(); ++k) {
    size_t od = out.size() - 1 - k;
    Expr coord = od == 0 ? div(t, after) : mod(div(t, after), out[od]);
    if (k < in.size()) {
      const Expr& d = in[in.size() - 1 - k];
      int64_t c = 0;
      Expr s = const_value(d, &c) ? (c == 1 ? imm(0) : stride)
                                  : select(compare(CmpOp::kEq, d, imm(1)), imm(0), stride);
      int64_t sv = 0;
      if (!(const_value(s, &sv) && sv == 0)) off = fold_add(off, fold_mul(coord, s));
      stride = fold_mul(stride, d);
    }
    after = fold_mul(after, out[od]);
  }
  return off;
}

Status check_anchor(const passes::Region& region) {
  const ir::Node* n = region.anchor;
  if (!n) return unsupported("region '{}': no anchor", region.name);
  for (size_t i = 0; i < n->num_inputs(); ++i) {
    const ir::Value* v = n->input(i);
    if (!v) continue;
    if (!is_f32(v) || !known_rank(v))
      return unsupported("region '{}': {} '{}' input {} is not float32 of known rank", region.name,
                         ir::op_name(n->op()), n->name(), i);
  }
  if (!is_f32(n->output(0)))
    return unsupported("region '{}': {} '{}' output is not float32", region.name,
                       ir::op_name(n->op()), n->name());
  if (n->op() == ir::OpKind::Gemm) {
    if (rank(n->input(0)) != 2 || rank(n->input(1)) != 2 ||
        (n->input(2) && rank(n->input(2)) > 2))
      return unsupported("region '{}': Gemm '{}' needs 2-D A and B", region.name, n->name());
  } else if (n->op() == ir::OpKind::MatMul) {
    if (rank(n->input(0)) == 0 || rank(n->input(1)) == 0)
      return unsupported("region '{}': MatMul '{}' of a scalar", region.name, n->name());
    bool vec = rank(n->input(0)) == 1 || rank(n->input(1)) == 1;
    if (vec && region.nodes.size() > 1)
      return unsupported("region '{}': MatMul '{}' of a 1-D operand with an epilogue",
                         region.name, n->name());
  } else {
    return unsupported("region '{}': anchor {} has no lowering", region.name, ir::op_name(n->op()));
  }
  if (!Epilogue::supported(region))
    return unsupported("region '{}': an epilogue node has no lowering", region.name);
  return Status();
}

// One GEMM call in the region: the spec without its tiles, plus the batch loop around it.
// Tier-3 candidates set tile knobs of the generated GEMM; the panel path has none.
bool has_tuning_knobs(const LowerOptions& options) { return !options.tuning.empty(); }

struct Problem {
  gemm::GemmSpec spec;
  Expr batches = imm(1);  // > 1: loop "t" over batches; spec offsets use var("t")
  std::vector<Expr> out_dims;  // of the anchor's output, as the epilogue sees it ([.., M, N])
};

}  // namespace

Expected<LoweredRegion> lower_matmul(const passes::Region& region, const LowerOptions& options) {
  const ir::Node* n = region.anchor;
  if (n && n->op() == ir::OpKind::Conv) return lower_conv(region, options);
  TJ_RETURN_IF_ERROR(check_anchor(region));
  RegionIo io(region, options);
  const int ia = io.input_index(n->input(0)), ib = io.input_index(n->input(1));
  if (ia < 0 || ib < 0)
    return unsupported("region '{}': operands of '{}' are not region inputs", region.name, n->name());
  const int lanes = std::clamp(options.vector_lanes, 1, 16);
  TJ_ASSIGN_OR_RETURN(gemm::Tiles tiles, gemm::tiles_from_tuning(options.tuning, lanes));

  Problem p;
  gemm::GemmSpec& s = p.spec;
  std::vector<Expr> a = input_dims(io, ia), b = input_dims(io, ib);
  Expr t = var("t");
  float alpha = 1.f, beta = 0.f;
  int ic = -1, transposed_b = -1;
  // A constant weight B (its only reader the anchor) may be packed once into the microkernel's
  // panels (gemm_panels.h): panel_b is its region input, panel_trans whether it is [N, K].
  int panel_b = -1;
  bool panel_trans = false;
  if (n->op() == ir::OpKind::MatMul) {
    const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
    s.m = a_vec ? imm(1) : a[a.size() - 2];
    s.k = a.back();
    s.n = b_vec ? imm(1) : b.back();
    std::vector<Expr> ba(a.begin(), a.end() - (a_vec ? 1 : 2));
    std::vector<Expr> bb(b.begin(), b.end() - (b_vec ? 1 : 2));
    std::vector<Expr> batch(std::max(ba.size(), bb.size()));
    for (size_t k = 0; k < batch.size(); ++k) {
      Expr da = k < ba.size() ? ba[ba.size() - 1 - k] : imm(1);
      Expr db = k < bb.size() ? bb[bb.size() - 1 - k] : imm(1);
      batch[batch.size() - 1 - k] = broadcast_dim(da, db);
    }
    s.a = {"in" + std::to_string(ia), imm(0), s.k, imm(1)};
    s.b = {"in" + std::to_string(ib), imm(0), b_vec ? imm(1) : s.n, imm(1)};
    Expr nb = imm(1);
    for (const Expr& d : batch) nb = fold_mul(nb, d);
    if (bb.empty() && !a_vec) {  // B shared: one [batch * M, K] x [K, N] product
      s.m = fold_mul(nb, s.m);
    } else if (!is_const_one(nb)) {
      p.batches = nb;
      s.a.offset = batch_offset(t, ba, batch, fold_mul(s.m, s.k));
      s.b.offset = batch_offset(t, bb, batch, fold_mul(s.k, s.n));
    }
    if (b.size() == 2 && options.prepare_constant_inputs && only_reader(region, n, 1))
      panel_b = ib;
    p.out_dims = batch;
    p.out_dims.push_back(a_vec ? imm(1) : s.m);
    if (bb.empty() && !a_vec) p.out_dims.back() = a[a.size() - 2];
    p.out_dims.push_back(s.n);
  } else {  // Gemm
    const bool ta = n->attr_int("transA", 0) != 0, tb = n->attr_int("transB", 0) != 0;
    alpha = n->attr_float("alpha", 1.f);
    beta = n->attr_float("beta", 1.f);
    s.m = ta ? a[1] : a[0];
    s.k = ta ? a[0] : a[1];
    s.n = tb ? b[0] : b[1];
    s.a = {"in" + std::to_string(ia), imm(0), ta ? imm(1) : a[1], ta ? a[1] : imm(1)};
    s.b = {"in" + std::to_string(ib), imm(0), tb ? imm(1) : b[1], tb ? b[1] : imm(1)};
    // Constant transposed weights (a Linear layer's [N, K]) are asked for as [K, N] once per
    // version: small batches then read B in place, large ones pack it with unit stride.
    // (One row known at compile time stays a dot product over B's rows: faster there.)
    const auto* rows = s.m->as<IntImm>();
    const bool few_rows = rows && rows->value <= 1;
    if (!ta && options.prepare_constant_inputs && only_reader(region, n, 1)) {
      panel_b = ib;
      panel_trans = tb;
    }
    if (tb && !few_rows && options.tier >= 2 && options.prepare_constant_inputs &&
        only_reader(region, n, 1)) {
      s.b = {"in" + std::to_string(ib), imm(0), b[0], imm(1)};
      transposed_b = ib;
    }
    if (n->input(2) && beta != 0.f) {
      ic = io.input_index(n->input(2));
      if (ic < 0) return unsupported("region '{}': Gemm C is not a region input", region.name);
    }
    p.out_dims = {s.m, s.n};
  }

  TJ_ASSIGN_OR_RETURN(Epilogue epi, Epilogue::make(region, io, p.out_dims));
  const bool batched = !is_const_one(p.batches);
  Expr row_base = batched ? fold_mul(t, s.m) : imm(0);
  std::optional<BroadcastIndex> c_index;
  if (ic >= 0) c_index = BroadcastIndex(input_dims(io, ic), {s.m, s.n});
  const std::string c_buf = "in" + std::to_string(ic);
  auto error = std::make_shared<Status>();  // first epilogue error, checked after generation
  s.store = [epi, row_base, alpha, beta, c_index, c_buf, error](const Expr& x, const Expr& row,
                                                                const Expr& col, int l) -> Stmt {
    Expr v = x;
    auto splat = [l](float f) { return l > 1 ? broadcast(fimm(f), l) : fimm(f); };
    if (alpha != 1.f) v = mul(v, splat(alpha));
    if (c_index) {
      Expr c = c_index->load(c_buf, DType::kFloat32, row, col, l);
      v = add(v, beta == 1.f ? c : mul(c, splat(beta)));
    }
    auto st = epi.store(v, fold_add(row_base, row), col, l);
    if (st.ok()) return *st;
    if (error->ok()) *error = st.status();
    return block({});
  };
  s.c = epi.accumulator();
  s.c_offset = batched ? fold_mul(row_base, s.n) : imm(0);
  s.workspace = "workspace";
  s.workspace_offset = imm(0);
  s.prefix = "g_";
  s.tiles = tiles;
  s.lanes = lanes;
  s.threads = options.threads;

  LoweredRegion out;
  Stmt body;
  int64_t ws = 0;
  const bool plain_store = region.nodes.size() == 1 && alpha == 1.f && ic < 0;
  int64_t weight_n = 0;
  if (panel_b >= 0 && !batched && gemm::panels_apply(s) && !has_tuning_knobs(options) &&
      const_value(s.n, &weight_n) && weight_n >= 1) {
    // The weight packed once into panels and the epilogue on L1 tiles, at every tier: the
    // microkernel's speed does not depend on the tier's LLVM pipeline.
    if (plain_store) s.store = nullptr;
    body = gemm::gemm_panels(s, {"in" + std::to_string(panel_b), imm(0)});
    TJ_RETURN_IF_ERROR(*error);
    out.input_layouts.assign(region.inputs.size(), InputLayout::kAsIs);
    out.input_layouts[panel_b] =
        panel_trans ? InputLayout::kGemmPanelsTransposed : InputLayout::kGemmPanels;
    out.notes.push_back(gemm::describe_panels(s));
    out.fn = io.function(body, 0);
    return out;
  }
  int64_t n_const = 0, k_const = 0, b_cs = 0;
  if (panel_b < 0 && n->op() == ir::OpKind::MatMul && gemm::panels_apply(s) &&
      !has_tuning_knobs(options) && const_value(s.n, &n_const) && const_value(s.k, &k_const) &&
      n_const >= 1 && const_value(s.b.col_stride, &b_cs) && b_cs == 1 &&
      structural_equal(s.b.row_stride, s.n)) {
    // B computed by the model (attention's K^T and V): packed per call (per batch) into the
    // workspace, then the same panel GEMM.
    if (plain_store) s.store = nullptr;
    body = gemm::gemm_panels_packing_b(s, p.batches, "t", &ws);
    TJ_RETURN_IF_ERROR(*error);
    out.notes.push_back(gemm::describe_panels(s) + ", B packed per call");
    out.fn = io.function(body, ws);
    out.workspace_bytes = ws * 4;
    return out;
  }
  if (options.tier >= 2) {
    body = gemm::gemm_packed(s);
    ws = gemm::workspace_floats(s);
    out.notes.push_back(gemm::describe(gemm::effective_tiles(s), lanes) + " (packed microkernel)");
  } else {
    body = gemm::gemm_loops(s);
    out.notes.push_back("gemm i-k-j loops, j vectorized by hint");
  }
  TJ_RETURN_IF_ERROR(*error);
  if (batched) body = for_loop("t", imm(0), p.batches, body);
  if (transposed_b >= 0) {
    out.input_layouts.assign(region.inputs.size(), InputLayout::kAsIs);
    out.input_layouts[transposed_b] = InputLayout::kTransposed;
    out.notes.push_back("constant B (in" + std::to_string(transposed_b) + ") prepared transposed as [K, N]");
  }
  out.fn = io.function(body, ws);
  out.workspace_bytes = ws * 4;
  return out;
}

bool matmul_supported(const passes::Region& region) {
  if (region.anchor && region.anchor->op() == ir::OpKind::Conv) return conv_supported(region);
  return check_anchor(region).ok();
}

}  // namespace tierjit::kir::lowering
