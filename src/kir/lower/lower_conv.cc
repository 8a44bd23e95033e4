// Lowering of Conv-anchored matmul-epilogue regions: 2-D NCHW convolution (any group, so also
// depthwise; pads, auto_pad, strides, dilations) as im2col into the workspace plus the generated
// GEMM of gemm_kernel.h per (image, group): Y[n, g] (Mg x OH*OW) = W[g] (Mg x Cg*KH*KW) x col.
// 1x1 kernels with stride 1 and no padding read X in place (no im2col). Channel, kernel and
// spatial sizes must be constants (exact level, or fixed by the graph); the batch may be dynamic.
// Bias and the elementwise epilogue are applied as C tiles are stored. Source: ONNX Conv-11.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "kir/lower/gemm_kernel.h"
#include "kir/lower/lower_conv_internal.h"
#include "kir/lower/lower_internal.h"
#include "kir/lower/lower_ops.h"
#include "kir/lower/matmul_common.h"

namespace tierjit::kir::lowering {

namespace {

using Geometry = ConvGeometry;

// The largest K of a 1x1 product, and of another ungrouped conv (im2col), that defaults to the
// generated GEMM (above: the tiles). Measured crossovers: 1x1 products gain down to K = 112;
// a 3x3 conv gains at K = 9 and loses at K = 27 (8%) and K = 144 (1.4x).
constexpr int64_t kPointwiseGeneratedMaxK = 128;
constexpr int64_t kIm2colGeneratedMaxK = 16;

std::vector<int64_t> ints_attr(const ir::Node& n, const char* name, std::vector<int64_t> dflt) {
  const ir::Attribute* a = n.attr(name);
  return a ? a->ints : dflt;
}

// The Conv's geometry from constant dims; kUnsupported for anything but a plain 2-D case.
Expected<Geometry> geometry(const passes::Region& region, const RegionIo& io, int ix, int iw) {
  const ir::Node& n = *region.anchor;
  auto fail = [&](const std::string& why) {
    return unsupported("region '{}': Conv '{}': {}", region.name, n.name(), why);
  };
  if (io.rank_of_input(ix) != 4 || io.rank_of_input(iw) != 4) return fail("only 2-D (NCHW) is lowered");
  int64_t v[8];
  for (int d = 1; d < 4; ++d)
    if (!const_value(io.input_dim(ix, d), &v[d])) return fail("channels and spatial dims must be constants");
  for (int d = 0; d < 4; ++d)
    if (!const_value(io.input_dim(iw, d), &v[4 + d])) return fail("weight dims must be constants");
  Geometry g;
  g.c = v[1], g.h = v[2], g.w = v[3], g.m = v[4], g.kh = v[6], g.kw = v[7];
  g.group = n.attr_int("group", 1);
  if (g.group <= 0 || g.c % g.group != 0 || g.m % g.group != 0 || v[5] * g.group != g.c)
    return fail("channels do not match group");
  if (g.h <= 0 || g.w <= 0 || g.c <= 0 || g.kh <= 0 || g.kw <= 0) return fail("empty image or kernel");
  auto strides = ints_attr(n, "strides", {1, 1}), dil = ints_attr(n, "dilations", {1, 1});
  auto pads = ints_attr(n, "pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4) return fail("bad attribute rank");
  g.sh = strides[0], g.sw = strides[1], g.dh = dil[0], g.dw = dil[1];
  if (g.sh <= 0 || g.sw <= 0 || g.dh <= 0 || g.dw <= 0) return fail("non-positive stride or dilation");
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  const int64_t in[2] = {g.h, g.w}, k[2] = {g.kh, g.kw}, s[2] = {g.sh, g.sw}, dl[2] = {g.dh, g.dw};
  int64_t pb[2], out[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t eff = (k[i] - 1) * dl[i] + 1;
    int64_t pe = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + s[i] - 1) / s[i];
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + eff - in[i]);
      pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      continue;
    }
    if (auto_pad == "VALID") {
      pb[i] = 0;
    } else if (auto_pad == "NOTSET") {
      pb[i] = pads[i];
      pe = pads[i + 2];
    } else {
      return fail("unknown auto_pad");
    }
    if (pb[i] < 0 || pe < 0 || in[i] + pb[i] + pe < eff) return fail("bad padding");
    out[i] = (in[i] + pb[i] + pe - eff) / s[i] + 1;
  }
  g.ph = pb[0], g.pw = pb[1], g.oh = out[0], g.ow = out[1];
  return g;
}

// col[(c * KH + kh) * KW + kw][oh * OW + ow] = X[n, c0 + c, ih, iw] (0 in the padding), for the
// Cg channels from c0 of image n, into workspace[col0 ..] with rows of `os` (>= OH * OW) floats.
Stmt im2col(const Geometry& g, const std::string& x, const Expr& image_off, int64_t c_count,
            int64_t col0, int64_t os) {
  Expr c = var("ic_c"), kh = var("ic_kh"), kw = var("ic_kw"), oh = var("ic_oh"), ow = var("ic_ow");
  Expr ih = add(mul(oh, imm(g.sh)), imm(-g.ph + 0)), iw = add(mul(ow, imm(g.sw)), imm(-g.pw));
  ih = add(ih, mul(kh, imm(g.dh)));
  iw = add(iw, mul(kw, imm(g.dw)));
  Expr valid = binary(BinaryOp::kAnd,
                      binary(BinaryOp::kAnd, compare(CmpOp::kGe, ih, imm(0)), lt(ih, imm(g.h))),
                      binary(BinaryOp::kAnd, compare(CmpOp::kGe, iw, imm(0)), lt(iw, imm(g.w))));
  Expr ihc = min(max(ih, imm(0)), imm(g.h - 1)), iwc = min(max(iw, imm(0)), imm(g.w - 1));
  Expr src = add(image_off, add(mul(c, imm(g.h * g.w)), add(mul(ihc, imm(g.w)), iwc)));
  Expr row = add(mul(add(mul(c, imm(g.kh)), kh), imm(g.kw)), kw);
  Expr dst = add(imm(col0), add(mul(row, imm(os)), add(mul(oh, imm(g.ow)), ow)));
  Stmt body = store("workspace", dst, select(valid, load(f32(), x, src), fimm(0)));
  body = for_loop("ic_ow", imm(0), imm(g.ow), body, ForKind::kVectorized);
  body = for_loop("ic_oh", imm(0), imm(g.oh), body);
  body = for_loop("ic_kw", imm(0), imm(g.kw), body);
  body = for_loop("ic_kh", imm(0), imm(g.kh), body);
  return for_loop("ic_c", imm(0), imm(c_count), body);
}

// Stores the pool's input (bias and epilogue applied to `value`) at buffer[index ..].
Expected<Stmt> pool_input_store(const Epilogue& epi, const Expr& value, const Expr& row,
                                const Expr& col, int lanes, const std::string& buffer,
                                const Expr& index) {
  LetScope lets("e_");
  TJ_ASSIGN_OR_RETURN(Expr y, epi.pool_input(value, row, col, lanes, &lets));
  return lets.wrap(store(buffer, lanes > 1 ? ramp(index, imm(1), lanes) : index, y));
}

}  // namespace

Expected<LoweredRegion> lower_conv(const passes::Region& region, const LowerOptions& options) {
  const ir::Node& n = *region.anchor;
  RegionIo io(region, options);
  const int ix = io.input_index(n.input(0)), iw = io.input_index(n.input(1));
  const int ib = n.input(2) ? io.input_index(n.input(2)) : -1;
  if (ix < 0 || iw < 0 || (n.input(2) && ib < 0))
    return unsupported("region '{}': Conv inputs are not region inputs", region.name);
  for (int i : {ix, iw, ib})
    if (i >= 0 && options.inputs[i].dtype != DType::kFloat32)
      return unsupported("region '{}': Conv '{}' is not float32", region.name, n.name());
  TJ_ASSIGN_OR_RETURN(Geometry g, geometry(region, io, ix, iw));
  std::optional<PoolGeometry> pool;
  if (region.pool) {
    TJ_ASSIGN_OR_RETURN(PoolGeometry pg, pool_geometry(*region.pool, g.oh, g.ow));
    pool = pg;
  }
  const int lanes = std::clamp(options.vector_lanes, 1, 16);
  const int64_t os = g.oh * g.ow, cg = g.c / g.group, mg = g.m / g.group;
  const int64_t kg = cg * g.kh * g.kw;
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 &&
                      g.oh == g.h && g.ow == g.w;
  // Few multiply-adds per output: a 1x1 product with K <= kPointwiseGeneratedMaxK, or an
  // ungrouped conv with K <= kIm2colGeneratedMaxK, defaults to the generated GEMM of 8 (AVX2: 6)
  // rows x 16 columns with the epilogue in registers: the panel tile's round trip through memory
  // costs more than its K steps (tier 3 chose this tiling over the tile for every 1x1 layer of
  // efficientnet_b0, 1.04-1.5x, and for a 3x3 conv of one channel, 1.4x; docs/lowering.md).
  std::map<std::string, int64_t> tuning = options.tuning;
  const bool small_k = direct ? kg <= kPointwiseGeneratedMaxK
                              : g.group == 1 && kg <= kIm2colGeneratedMaxK && !direct_conv_fits(g);
  if (tuning.empty() && small_k && options.tier >= 2)
    tuning = {{"mr", lanes >= 16 ? 8 : 6}, {"nr", 16}, {"kc", 512}};
  TJ_ASSIGN_OR_RETURN(gemm::Tiles tiles, gemm::tiles_from_tuning(tuning, lanes));
  Expr batch = io.input_dim(ix, 0);

  // The epilogue sees the output as [N, M, OH*OW]: inputs must broadcast over both spatial dims
  // alike (per-channel bias [M, 1, 1], a residual [N, M, OH, OW], a scalar).
  std::vector<Expr> out_dims = {batch, imm(g.m), imm(os)};
  auto view = [&](const std::vector<Expr>& d) -> std::optional<std::vector<Expr>> {
    std::vector<Expr> full(4, imm(1));
    if (d.size() > 4) return std::nullopt;
    for (size_t k = 0; k < d.size(); ++k) full[4 - d.size() + k] = d[k];
    int64_t a = 0, b = 0;
    if (!const_value(full[2], &a) || !const_value(full[3], &b)) return std::nullopt;
    Expr sp;
    if (a == 1 && b == 1) sp = imm(1);
    else if (a == g.oh && b == g.ow) sp = imm(os);
    else return std::nullopt;
    return std::vector<Expr>{full[0], full[1], sp};
  };
  TJ_ASSIGN_OR_RETURN(Epilogue epi, Epilogue::make(region, io, out_dims, view));

  std::optional<BroadcastIndex> bias;
  if (ib >= 0) bias = BroadcastIndex({imm(g.m), imm(1)}, out_dims);
  const std::string bias_buf = "in" + std::to_string(ib);
  auto error = std::make_shared<Status>();
  LoweredRegion out;
  // With a pool, the direct convolution pools its tiles (strided taps loaded as whole spans, the
  // epilogue applied to them: not when a window narrower than its stride leaves a span reading
  // past an input the epilogue reads along the columns); other convolutions take the generated
  // GEMM below, each image's output pooled from the workspace.
  const bool tile_pool = pool && direct_conv_fits(g) && !(pool->kw < pool->sw && epi.reads_columns());
  if (tuning.empty() && (!pool || tile_pool)) {
    // The kernel layer's tiles (lower_conv_tiles.cc); tier-3 tile candidates and small-K 1x1
    // products take the generated GEMM below.
    ConvIo cio;
    cio.x = "in" + std::to_string(ix);
    cio.w = "in" + std::to_string(iw);
    cio.batch = batch;
    cio.accumulator = epi.accumulator();
    // A 1x1 product on a map of few pixels runs its vectors over the output channels, on W
    // packed transposed once per version (lower_conv_tiles.cc).
    const bool w_panels = !pool && options.prepare_constant_inputs && only_reader(region, &n, 1) &&
                          pointwise_by_columns(g);
    if (w_panels) cio.w_panels = cio.w;
    cio.lanes = lanes;
    cio.threads = options.threads;
    cio.store = [epi, bias, bias_buf, error](const Expr& v, const Expr& row, const Expr& col,
                                            int l) -> Stmt {
      Expr y = bias ? add(v, bias->load(bias_buf, DType::kFloat32, row, col, l)) : v;
      auto st = epi.store(y, row, col, l);
      if (st.ok()) return *st;
      if (error->ok()) *error = st.status();
      return block({});
    };
    cio.pool = pool ? &*pool : nullptr;
    cio.pool_input = [epi, bias, bias_buf, error](const Expr& v, const Expr& row, const Expr& col,
                                                 int l, LetScope* lets) -> Expr {
      Expr y = bias ? add(v, bias->load(bias_buf, DType::kFloat32, row, col, l)) : v;
      auto e = epi.pool_input(y, row, col, l, lets);
      if (e.ok()) return *e;
      if (error->ok()) *error = e.status();
      return v;
    };
    int64_t ws = 0;
    std::string note;
    auto body = pool ? direct_pooled(g, cio, &note) : conv_tiles(g, cio, &ws, &note);
    if (body.ok()) {
      TJ_RETURN_IF_ERROR(*error);
      out.fn = io.function(*body, ws);
      out.workspace_bytes = ws * 4;
      out.notes.push_back(std::move(note));
      if (w_panels) {
        out.input_layouts.assign(region.inputs.size(), InputLayout::kAsIs);
        out.input_layouts[iw] = InputLayout::kGemmPanelsTransposed;
      }
      return out;
    }
    if (body.status().code() != StatusCode::kUnsupported) return body.status();
    out.notes.push_back(body.status().message() + "; generated GEMM instead");
  }

  Expr img = var("cv_n"), grp = var("cv_g");
  gemm::GemmSpec s;
  s.m = imm(mg);
  s.k = imm(kg);
  s.n = imm(os);
  s.a = {"in" + std::to_string(iw), fold_mul(grp, imm(mg * kg)), imm(kg), imm(1)};
  s.tiles = tiles;
  s.lanes = lanes;
  s.threads = options.threads;
  s.prefix = "g_";
  s.workspace = "workspace";
  s.workspace_offset = imm(0);
  const int64_t gemm_ws = options.tier >= 2 ? gemm::workspace_floats(s) : 0;
  const int64_t col0 = (gemm_ws + 15) / 16 * 16;
  // im2col rows padded to whole register panels: the GEMM reads B in place without edge code.
  const int64_t nr = gemm::effective_tiles(s).nr;
  const int64_t os_pad = options.tier >= 2 ? (os + nr - 1) / nr * nr : os;
  const std::string x = "in" + std::to_string(ix);
  Expr image_off = add(mul(img, imm(g.c * g.h * g.w)), mul(grp, imm(cg * g.h * g.w)));
  if (direct) {
    s.b = {x, image_off, imm(os), imm(1)};
  } else {
    s.b = {"workspace", imm(col0), imm(os_pad), imm(1)};
    s.b_padded = true;
  }
  Expr row_base = add(mul(img, imm(g.m)), mul(grp, imm(mg)));
  // With a pool: the image's conv output [M, OH * OW] in the workspace after the im2col rows.
  const int64_t image0 = direct ? (gemm_ws + 15) / 16 * 16 : col0 + kg * os_pad;
  s.c = pool ? "workspace" : epi.accumulator();
  s.c_offset = pool ? add(imm(image0), mul(grp, imm(mg * os))) : mul(row_base, imm(os));
  const bool pooled = pool.has_value();
  s.store = [epi, row_base, grp, image0, os, mg, pooled, bias, bias_buf, error](
                const Expr& v, const Expr& row, const Expr& col, int l) -> Stmt {
    Expr r = add(row_base, row);
    Expr y = bias ? add(v, bias->load(bias_buf, DType::kFloat32, r, col, l)) : v;
    auto st = pooled ? pool_input_store(epi, y, r, col, l, "workspace",
                                        add(imm(image0), add(mul(add(mul(grp, imm(mg)), row), imm(os)), col)))
                     : epi.store(y, r, col, l);
    if (st.ok()) return *st;
    if (error->ok()) *error = st.status();
    return block({});
  };

  Stmt gemm_stmt = options.tier >= 2 ? gemm::gemm_packed(s) : gemm::gemm_loops(s);
  TJ_RETURN_IF_ERROR(*error);
  Stmt body = direct ? gemm_stmt : block({im2col(g, x, image_off, cg, col0, os_pad), gemm_stmt});
  body = for_loop("cv_g", imm(0), imm(g.group), body);
  if (pool) {
    PoolRowsIo pio;
    pio.src = "workspace";
    pio.dst = "out0";
    pio.src_base = add(imm(image0), mul(var("cv_pc"), imm(os)));
    pio.src_row0 = imm(0);
    pio.dst_base = mul(add(mul(img, imm(g.m)), var("cv_pc")), imm(pool->oh * pool->ow));
    pio.lanes = lanes;
    pio.prefix = "cv_p";
    body = block({body, for_loop("cv_pc", imm(0), imm(g.m),
                                 pool_rows(*pool, pio, imm(0), imm(pool->oh)))});
  }
  body = for_loop("cv_n", imm(0), batch, body);
  const int64_t ws = pool ? image0 + g.m * os + kPoolSlack : direct ? gemm_ws : col0 + kg * os_pad;
  out.fn = io.function(body, ws);
  out.workspace_bytes = ws * 4;
  out.notes.push_back(std::string(direct ? "conv 1x1 as GEMM on X in place, " : "conv im2col + ") +
                      (options.tier >= 2 ? gemm::describe(gemm::effective_tiles(s), lanes)
                                         : std::string("gemm loops")) +
                      " per image and group (" + std::to_string(g.group) + ")" +
                      (pool ? std::string(pool->max ? ", MaxPool" : ", AveragePool") +
                                  " per image from the workspace"
                            : std::string()));
  return out;
}

bool conv_supported(const passes::Region& region) {
  const ir::Node* n = region.anchor;
  if (!n || n->op() != ir::OpKind::Conv) return false;
  for (size_t i = 0; i < n->num_inputs() && i < 3; ++i) {
    const ir::Value* v = n->input(i);
    if (!v) continue;
    if (v->type().dtype != DType::kFloat32 || !v->type().shape) return false;
  }
  // Channels and spatial sizes need not be fixed by the graph: the runtime compiles them as
  // constants of each version (constant_dims_required) and guards on them.
  const auto& xs = n->input(0)->type().shape, &ws = n->input(1)->type().shape;
  if (xs->size() != 4 || ws->size() != 4) return false;
  return Epilogue::supported(region);
}

}  // namespace tierjit::kir::lowering
