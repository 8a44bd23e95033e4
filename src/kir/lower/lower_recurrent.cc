// Lowering of recurrent regions (one LSTM or GRU node, passes::RegionKind::kRecurrent) into
// generated code around the kernel layer's panel GEMM (kernels::gemm_panel_rows_f32).
//
// W [D, G*H, I] and R [D, G*H, H] are read packed into panels per direction
// (InputLayout::kGemmPanelsPerDirection: once per version for constants, per call into the
// workspace otherwise). The batch is cut into tiles of at most kTileRows rows; each (direction,
// tile) item is an independent recurrence (items run on the OpenMP team when threads > 1 and
// the call is large). Per item: the input projection x W^T of a chunk of time steps (about
// kChunkFloats of gates) as one product per panel, then per step the recurrent product h R^T
// (one microkernel call per panel) and, per batch row, the gate math in generated vector code
// (recurrent_cell.cc) updating h and c in place and storing Y; at the end Y_h and Y_c.
// S and N may be run-time dims; I, H and D must be constants of the code (W's and R's shapes).
// Source: ONNX operator spec, LSTM 7/14/22, GRU 7/14/22.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <tuple>

#include "kernels/packed_gemm.h"
#include "kir/lower/lower_internal.h"
#include "kir/lower/matmul_common.h"
#include "kir/lower/recurrent_internal.h"
#include "kir/transforms.h"

namespace tierjit::kir::lowering {

namespace {

constexpr int64_t kTileRows = 16;        // batch rows per item at most
constexpr int64_t kChunkFloats = 32768;  // gates projected at once per item (128 KiB)
constexpr int64_t kParallelMinMacs = int64_t{1} << 18;  // items on the team from this work (~8 us)
constexpr int64_t kAlign = 16;  // floats (64 bytes) between workspace arrays

int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
Expr cdiv(const Expr& a, const Expr& b) { return div(sub(add(a, b), imm(1)), b); }

bool fixed_shape(const ir::Value* v, size_t rank) {
  if (!v || !v->type().shape || v->type().shape->size() != rank) return false;
  for (const auto& d : *v->type().shape)
    if (!d.is_constant()) return false;
  return true;
}
int64_t fixed_dim(const ir::Value* v, size_t d) { return (*v->type().shape)[d].value; }

int input_index(const passes::Region& region, const ir::Value* v) {
  if (!v) return -1;
  auto it = std::find(region.inputs.begin(), region.inputs.end(), v);
  return it == region.inputs.end() ? -1 : static_cast<int>(it - region.inputs.begin());
}
int output_index(const passes::Region& region, const ir::Value* v) {
  if (!v) return -1;
  auto it = std::find(region.outputs.begin(), region.outputs.end(), v);
  return it == region.outputs.end() ? -1 : static_cast<int>(it - region.outputs.begin());
}

Expected<std::vector<RnnActivation>> parse_activations(
    const ir::Node& n, const RnnSpec& s, const std::function<Status(std::string)>& fail) {
  std::vector<std::string> names = n.attr_strings("activations");
  const size_t per_dir = static_cast<size_t>(s.per_dir()), dirs = static_cast<size_t>(s.dirs);
  if (names.empty()) {
    const std::vector<std::string> dflt = s.lstm
                                              ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                              : std::vector<std::string>{"Sigmoid", "Tanh"};
    for (size_t d = 0; d < dirs; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  } else if (names.size() == per_dir && dirs == 2) {
    std::vector<std::string> twice = names;
    names.insert(names.end(), twice.begin(), twice.end());
  }
  if (names.size() != per_dir * dirs)
    return fail("attribute activations has " + std::to_string(names.size()) + " entries");
  const std::vector<float> alphas = n.attr_floats("activation_alpha"),
                           betas = n.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  auto take = [](const std::vector<float>& v, size_t& i, float dflt) {
    return i < v.size() ? v[i++] : dflt;
  };
  std::vector<RnnActivation> out;
  for (const std::string& name : names) {
    std::string l;
    for (char ch : name)
      l.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    RnnActivation a;
    if (l == "sigmoid")
      a.kind = RnnActivation::kSigmoid;
    else if (l == "tanh")
      a.kind = RnnActivation::kTanh;
    else if (l == "relu")
      a.kind = RnnActivation::kRelu;
    else if (l == "affine") {
      a.kind = RnnActivation::kAffine;
      a.alpha = take(alphas, ai, 1.f);
      a.beta = take(betas, bi, 0.f);
    } else if (l == "leakyrelu") {
      a.kind = RnnActivation::kLeakyRelu;
      a.alpha = take(alphas, ai, 0.01f);
    } else if (l == "thresholdedrelu") {
      a.kind = RnnActivation::kThresholdedRelu;
      a.alpha = take(alphas, ai, 1.f);
    } else if (l == "scaledtanh") {
      a.kind = RnnActivation::kScaledTanh;
      a.alpha = take(alphas, ai, 1.f);
      a.beta = take(betas, bi, 1.f);
    } else if (l == "hardsigmoid") {
      a.kind = RnnActivation::kHardSigmoid;
      a.alpha = take(alphas, ai, 0.2f);
      a.beta = take(betas, bi, 0.5f);
    } else if (l == "elu") {
      a.kind = RnnActivation::kElu;
      a.alpha = take(alphas, ai, 1.f);
    } else if (l == "softsign")
      a.kind = RnnActivation::kSoftsign;
    else if (l == "softplus")
      a.kind = RnnActivation::kSoftplus;
    else
      return fail("activation '" + name + "' has no lowering");
    out.push_back(a);
  }
  return out;
}

}  // namespace

Expected<RnnSpec> parse_rnn(const passes::Region& region) {
  const ir::Node* n = region.anchor;
  if (!n || (n->op() != ir::OpKind::LSTM && n->op() != ir::OpKind::GRU))
    return unsupported("region '{}': no LSTM or GRU anchor", region.name);
  auto fail = [&](std::string why) -> Status {
    return unsupported("region '{}': {} '{}': {}", region.name, ir::op_name(n->op()), n->name(),
                       why);
  };
  RnnSpec s;
  s.lstm = n->op() == ir::OpKind::LSTM;
  s.gates = s.lstm ? 4 : 3;
  if (n->attr_int("layout", 0) != 0)
    return fail("attribute layout = 1 (batch-major) has no lowering");
  const std::string dir = n->attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return fail("direction '" + dir + "'");
  s.dirs = dir == "bidirectional" ? 2 : 1;
  s.reverse = dir == "reverse";
  auto in = [&](size_t i) { return i < n->num_inputs() ? n->input(i) : nullptr; };
  for (size_t i = 0; i < n->num_inputs(); ++i)
    if (in(i) && i != 4 && in(i)->type().dtype != DType::kFloat32)
      return fail("input " + std::to_string(i) + " is not float32");
  const ir::Value *x = in(0), *w = in(1), *r = in(2);
  if (!x || !x->type().shape || x->type().shape->size() != 3) return fail("X is not 3-D");
  if (!fixed_shape(w, 3) || !fixed_shape(r, 3))
    return fail("W or R has a shape the graph does not fix");
  const int64_t gh = fixed_dim(w, 1);
  s.input = fixed_dim(w, 2);
  s.hidden = fixed_dim(r, 2);
  if (fixed_dim(w, 0) != s.dirs || fixed_dim(r, 0) != s.dirs || gh != s.gates * s.hidden ||
      fixed_dim(r, 1) != gh || s.hidden < 1 || n->attr_int("hidden_size", s.hidden) != s.hidden)
    return fail("W, R and hidden_size do not agree");
  if (const ir::Value* lens = in(4)) {
    const DType t = lens->type().dtype;
    if (t != DType::kInt32 && t != DType::kInt64)
      return fail("sequence_lens is not int32 or int64");
  }
  s.has_clip = n->has_attr("clip");
  s.clip = n->attr_float("clip", 0.f);
  s.lbr = !s.lstm && n->attr_int("linear_before_reset", 0) != 0;
  s.input_forget = s.lstm && n->attr_int("input_forget", 0) != 0;
  TJ_ASSIGN_OR_RETURN(s.acts, parse_activations(*n, s, fail));
  s.x = input_index(region, x);
  s.w = input_index(region, w);
  s.r = input_index(region, r);
  s.b = input_index(region, in(3));
  s.lens = input_index(region, in(4));
  s.h0 = input_index(region, in(5));
  if (s.lstm) {
    s.c0 = input_index(region, in(6));
    s.p = input_index(region, in(7));
  }
  s.y = output_index(region, n->num_outputs() > 0 ? n->output(0) : nullptr);
  s.yh = output_index(region, n->num_outputs() > 1 ? n->output(1) : nullptr);
  if (s.lstm) s.yc = output_index(region, n->num_outputs() > 2 ? n->output(2) : nullptr);
  return s;
}

namespace {

// The layout of the generated code: workspace arrays and the constant sizes.
struct Plan {
  RnnSpec s;
  int64_t gh = 0, width = 0, panels = 0, wpf = 0, rpf = 0;
  int64_t rec_panels = 0;        // panels of the first recurrent product (GRU without lbr: z, r)
  int64_t h_first = 0, g2w = 0;  // GRU without lbr: first panel of the h gate, its G2 row floats
  int64_t rows_c = 0;            // projection rows per chunk
  Array wpk, rpk;                // packed W and R of direction 0
  int64_t per_worker = 0, p_off = 0, g_off = 0, g2_off = 0, h_off = 0, c_off = 0, rh_off = 0;
  int64_t shared = 0;     // workspace floats before the workers' areas
  int64_t bias_off = -1;  // the summed biases [D][G*H] in the workspace (-1: no B)
  int workers = 1;
  int lanes = 8;
  DType lens_dtype = DType::kInt32;
  Expr S, N;
};

// True when region input `i` is a constant nothing else in the region reads as another operand
// (its buffer may then hold a prepared layout).
bool preparable(const passes::Region& region, const RnnSpec& s, int i) {
  if (i < 0 || !region.inputs[i]->is_constant()) return false;
  for (int other : {s.x, s.b, s.lens, s.h0, s.c0, s.p})
    if (other == i) return false;
  return true;
}

// gemm_panel_rows_f32 over panels [p0, p1) of a packed weight: rows of A at `a` (lda apart), m
// of them, K = k; panel p's columns go to `y` + (p - p0) * width (rows ldy apart).
Stmt panel_product(const Plan& pl, const std::string& pv, const Array& packed, int64_t k,
                   int64_t p0, int64_t p1, const Array& a, const Expr& m, const Expr& lda,
                   const Array& y, const Expr& ldy) {
  const Expr p = var(pv);
  Stmt call = call_kernel(kernels::Microkernel::kGemmPanelRowsF32,
                          {{a.buffer, a.base},
                           {packed.buffer, add(packed.base, mul(p, imm(k * pl.width)))},
                           {y.buffer, add(y.base, mul(sub(p, imm(p0)), imm(pl.width)))}},
                          {m, imm(k), lda, imm(pl.width),
                           min(imm(pl.width), sub(imm(pl.gh), mul(p, imm(pl.width)))), ldy,
                           imm(0)});
  return for_loop(pv, imm(p0), imm(p1 - p0), call);
}

// One step's recurrent product over panels [p0, p1) of R (kernels/recurrent_gemm.h): rows of h
// (H floats apart), mb of them, into y (rows ldy apart).
Stmt recurrent_product(const Plan& pl, const Array& packed, int64_t p0, int64_t p1, const Array& h,
                       const Array& y, int64_t ldy) {
  return call_kernel(
      kernels::Microkernel::kRecurrentGatesF32,
      {{h.buffer, h.base}, {packed.buffer, packed.base}, {y.buffer, y.base}},
      {var("mb"), imm(pl.s.hidden), imm(pl.s.hidden), imm(pl.gh), imm(p0), imm(p1), imm(ldy)});
}

Array ws(const Expr& base, int64_t off) { return Array{"workspace", add(base, imm(off))}; }

// Statements over the rows r of a tile: `body` for the row when its step t is inside its
// sequence, else `past_end` (may be null). Binds n, len (row n's sequence length clamped to
// [0, S]: tier 0 refuses lengths outside it, compiled code cannot fail).
Stmt rows_loop(const Plan& pl, const std::string& rv, Stmt body, Stmt past_end) {
  const RnnSpec& s = pl.s;
  const Expr n = add(var("n0"), var(rv));
  Expr len = pl.S;
  if (s.lens >= 0)
    len =
        max(imm(0),
            min(pl.S, cast(i64(), load(Type{pl.lens_dtype, 1}, "in" + std::to_string(s.lens), n))));
  Stmt inner = body;
  if (s.lens >= 0) inner = if_then_else(compare(CmpOp::kLt, var("t"), var("len")), body, past_end);
  return for_loop(rv, imm(0), var("mb"), let("n", n, let("len", len, inner)));
}

// One direction of one tile (rows n0 .. n0 + mb - 1, both bound): the whole recurrence.
Expected<Stmt> direction_body(const Plan& pl, int64_t d, bool reverse, const Expr& wsb) {
  const RnnSpec& s = pl.s;
  const int64_t H = s.hidden, I = s.input, D = s.dirs, GH = pl.gh;
  const Expr &S = pl.S, &N = pl.N;
  const Expr n0 = var("n0"), mb = var("mb"), t0 = var("t0"), nt = var("nt"), ti = var("ti"),
             t = var("t"), len = var("len"), n = var("n");
  const std::string xb = "in" + std::to_string(s.x);
  const Array wpk{pl.wpk.buffer, add(pl.wpk.base, imm(d * pl.wpf))};
  const Array rpk{pl.rpk.buffer, add(pl.rpk.base, imm(d * pl.rpf))};
  const Array P = ws(wsb, pl.p_off), Gb = ws(wsb, pl.g_off), hb = ws(wsb, pl.h_off),
              cb = ws(wsb, pl.c_off), rhb = ws(wsb, pl.rh_off), G2 = ws(wsb, pl.g2_off);
  auto row_of = [](const Array& a, const std::string& rv, int64_t floats) {
    return Array{a.buffer, add(a.base, mul(var(rv), imm(floats)))};
  };
  std::vector<Stmt> out;

  // Initial state: initial_h / initial_c [D, N, H] or zeros.
  {
    auto init = [&](int input, const Array& state) -> Expected<Stmt> {
      return unit_loop(H, pl.lanes, "iu", [&](const Expr& u, int l) -> Expected<Stmt> {
        Expr v = splat_f32(0.f, l);
        if (input >= 0)
          v = load_f32(Array{"in" + std::to_string(input), mul(add(mul(imm(d), N), n), imm(H))}, u,
                       l);
        return store_f32(row_of(state, "ri", H), u, v, l);
      });
    };
    std::vector<Stmt> rows;
    TJ_ASSIGN_OR_RETURN(Stmt ih, init(s.h0, hb));
    rows.push_back(ih);
    if (s.lstm) {
      TJ_ASSIGN_OR_RETURN(Stmt ic, init(s.c0, cb));
      rows.push_back(ic);
    }
    out.push_back(for_loop("ri", imm(0), mb, let("n", add(n0, var("ri")), block(rows))));
  }

  // The input projection of steps t0 .. t0 + nt - 1 into P: row (tt * mb + r) for the tt-th
  // time of the chunk in time order (reverse: step ti reads tt = (its chunk length) - 1 - ti).
  Stmt projection;
  {
    const Expr ldy = imm(GH);
    if (reverse && s.lens >= 0) {
      // Each row's own times: len - t0 - cn .. len - t0 - 1 (cn of them), N * I floats apart.
      const Expr cn = var("cn");
      Stmt call = panel_product(pl, "pp", wpk, I, 0, pl.panels,
                                Array{xb, mul(add(mul(sub(sub(len, t0), cn), N), n), imm(I))}, cn,
                                mul(N, imm(I)), row_of(P, "rp", GH), mul(mb, imm(GH)));
      Expr cnv = max(imm(0), min(nt, sub(len, t0)));
      Expr lenv =
          max(imm(0),
              min(S, cast(i64(), load(Type{pl.lens_dtype, 1}, "in" + std::to_string(s.lens), n))));
      projection =
          for_loop("rp", imm(0), mb,
                   let("n", add(n0, var("rp")),
                       let("len", lenv,
                           let("cn", cnv, if_then_else(compare(CmpOp::kGt, cn, imm(0)), call)))));
    } else {
      const Expr xs = reverse ? sub(sub(S, t0), nt) : t0;  // first time of the chunk
      // One tile holds the whole batch: the chunk's rows are consecutive in X.
      Stmt whole = panel_product(pl, "pp", wpk, I, 0, pl.panels, Array{xb, mul(mul(xs, N), imm(I))},
                                 mul(nt, N), imm(I), P, ldy);
      Stmt per_time = for_loop(
          "tt", imm(0), nt,
          panel_product(pl, "pp", wpk, I, 0, pl.panels,
                        Array{xb, mul(add(mul(add(xs, var("tt")), N), n0), imm(I))}, mb, imm(I),
                        Array{P.buffer, add(P.base, mul(mul(var("tt"), mb), imm(GH)))}, ldy));
      projection = if_then_else(compare(CmpOp::kEq, mb, N), whole, per_time);
    }
  }

  // One step: the recurrent product(s) and the gate math per row.
  Stmt step;
  {
    std::vector<Stmt> parts;
    parts.push_back(recurrent_product(pl, rpk, 0, pl.rec_panels, hb, Gb, GH));
    // Where row r's values are at this step.
    auto row_step = [&](const std::string& rv) {
      RowStep rs;
      rs.spec = &s;
      rs.dir = d;
      const Expr tt = reverse ? sub(sub(min(nt, sub(len, t0)), imm(1)), ti) : ti;
      rs.proj = Array{P.buffer, add(P.base, mul(add(mul(tt, mb), var(rv)), imm(GH)))};
      rs.rec = row_of(Gb, rv, GH);
      rs.rec_h = Array{G2.buffer, add(add(G2.base, mul(var(rv), imm(pl.g2w))),
                                      imm(2 * H - pl.h_first * pl.width))};
      rs.h = row_of(hb, rv, H);
      rs.c = row_of(cb, rv, H);
      rs.rh = row_of(rhb, rv, H);
      if (pl.bias_off >= 0) rs.bias = Array{"workspace", imm(pl.bias_off + d * GH)};
      if (s.y >= 0) {
        const Expr time = reverse ? sub(sub(len, imm(1)), t) : t;
        rs.y = Array{"out" + std::to_string(s.y),
                     mul(add(mul(add(mul(time, imm(D)), imm(d)), N), n), imm(H))};
      }
      return rs;
    };
    // Y of a row past its sequence's end: zeros at time t.
    Stmt zero_y;
    if (s.y >= 0 && s.lens >= 0) {
      const Array yt{"out" + std::to_string(s.y),
                     mul(add(mul(add(mul(t, imm(D)), imm(d)), N), n), imm(H))};
      TJ_ASSIGN_OR_RETURN(zero_y,
                          unit_loop(H, pl.lanes, "zu", [&](const Expr& u, int l) -> Expected<Stmt> {
                            return store_f32(yt, u, splat_f32(0.f, l), l);
                          }));
    }
    if (s.lstm || s.lbr) {
      const RowStep rs = row_step("r");
      TJ_ASSIGN_OR_RETURN(Stmt units, unit_loop(H, pl.lanes, "u", [&](const Expr& u, int l) {
                            return s.lstm ? lstm_units(rs, u, l) : gru_units(rs, u, l);
                          }));
      parts.push_back(rows_loop(pl, "r", units, zero_y));
    } else {
      const RowStep rs1 = row_step("r1");
      TJ_ASSIGN_OR_RETURN(Stmt reset, unit_loop(H, pl.lanes, "u1", [&](const Expr& u, int l) {
                            return gru_reset_units(rs1, u, l);
                          }));
      TJ_ASSIGN_OR_RETURN(Stmt clear,
                          unit_loop(H, pl.lanes, "u0", [&](const Expr& u, int l) -> Expected<Stmt> {
                            return store_f32(rs1.rh, u, splat_f32(0.f, l), l);
                          }));
      parts.push_back(rows_loop(pl, "r1", reset, s.lens >= 0 ? clear : nullptr));
      const int64_t h_last = (3 * H + pl.width - 1) / pl.width;
      parts.push_back(recurrent_product(pl, rpk, pl.h_first, h_last, rhb, G2, pl.g2w));
      const RowStep rs2 = row_step("r");
      TJ_ASSIGN_OR_RETURN(Stmt units, unit_loop(H, pl.lanes, "u", [&](const Expr& u, int l) {
                            return gru_units(rs2, u, l);
                          }));
      parts.push_back(rows_loop(pl, "r", units, zero_y));
    }
    step = for_loop("ti", imm(0), nt, let("t", add(t0, ti), block(std::move(parts))));
  }
  // Chunks of Tc steps: about rows_c projected rows each.
  const Expr tc = var("tc");
  out.push_back(let("tc", max(imm(1), div(imm(pl.rows_c), mb)),
                    for_loop("ch", imm(0), cdiv(S, tc),
                             let("t0", mul(var("ch"), tc),
                                 let("nt", min(tc, sub(S, t0)), block({projection, step}))))));

  // Final states Y_h, Y_c [D, N, H].
  std::vector<Stmt> fin;
  for (const auto& final_state : {std::pair{s.yh, hb}, std::pair{s.yc, cb}}) {
    // Named members, not a structured binding: clang 14 (the sanitizer build) cannot capture one.
    const auto o = final_state.first;
    const auto& state = final_state.second;
    if (o < 0) continue;
    const Array dst{"out" + std::to_string(o), mul(add(mul(imm(d), N), n), imm(H))};
    TJ_ASSIGN_OR_RETURN(Stmt copy,
                        unit_loop(H, pl.lanes, "fu", [&](const Expr& u, int l) -> Expected<Stmt> {
                          return store_f32(dst, u, load_f32(row_of(state, "rf", H), u, l), l);
                        }));
    fin.push_back(copy);
  }
  if (!fin.empty())
    out.push_back(for_loop("rf", imm(0), mb, let("n", add(n0, var("rf")), block(fin))));
  return block(std::move(out));
}

}  // namespace

Expected<LoweredRegion> lower_recurrent(const passes::Region& region, const LowerOptions& options) {
  TJ_ASSIGN_OR_RETURN(RnnSpec s, parse_rnn(region));
  RegionIo io(region, options);
  for (int i : {s.w, s.r})
    for (int64_t dim : options.inputs[i].dims)
      if (dim < 0) return unsupported("region '{}': W and R must have constant dims", region.name);
  if (s.x < 0 || s.w < 0 || s.r < 0)
    return unsupported("region '{}': X, W or R is missing", region.name);
  Plan pl;
  pl.s = s;
  pl.lanes = std::clamp(options.vector_lanes, 1, 16);
  const int64_t H = s.hidden, I = s.input, D = s.dirs, G = s.gates;
  pl.gh = G * H;
  pl.width = kernels::gemm_panel_width(pl.gh);
  pl.panels = (pl.gh + pl.width - 1) / pl.width;
  pl.wpf = kernels::gemm_packed_floats(pl.gh, I);
  pl.rpf = kernels::gemm_packed_floats(pl.gh, H);
  const bool gru_split = !s.lstm && !s.lbr;  // the h gate's product after r is known
  pl.rec_panels = gru_split ? (2 * H + pl.width - 1) / pl.width : pl.panels;
  pl.h_first = gru_split ? 2 * H / pl.width : 0;
  pl.g2w = gru_split ? ((3 * H + pl.width - 1) / pl.width - pl.h_first) * pl.width : 0;
  pl.rows_c = std::max(kTileRows, kChunkFloats / pl.gh);
  if (s.lens >= 0) pl.lens_dtype = options.inputs[s.lens].dtype;
  pl.S = io.input_dim(s.x, 0);
  pl.N = io.input_dim(s.x, 1);

  LoweredRegion out;
  out.input_layouts.assign(region.inputs.size(), InputLayout::kAsIs);
  std::vector<Stmt> body;
  int64_t off = 0;
  for (auto [idx, k, arr] : {std::tuple{s.w, I, &pl.wpk}, std::tuple{s.r, H, &pl.rpk}}) {
    if (options.prepare_constant_inputs && preparable(region, s, idx)) {
      out.input_layouts[idx] = InputLayout::kGemmPanelsPerDirection;
      *arr = Array{"in" + std::to_string(idx), imm(0)};
      continue;
    }
    // Packed per call into the workspace (W or R a run-time input).
    *arr = Array{"workspace", imm(off)};
    const int64_t per = kernels::gemm_packed_floats(pl.gh, k);
    for (int64_t d = 0; d < D; ++d)
      body.push_back(call_kernel(
          kernels::Microkernel::kGemmPackBF32,
          {{"in" + std::to_string(idx), imm(d * pl.gh * k)}, {"workspace", imm(off + d * per)}},
          {imm(pl.gh), imm(k), imm(1)}));
    off += D * per;
  }
  if (s.b >= 0) {
    // Wb + Rb per gate once per call (GRU's h gate: Wb; its Rb stays with h R_h^T).
    off = round_up(off, kAlign);
    pl.bias_off = off;
    const std::string bb = "in" + std::to_string(s.b);
    for (int64_t d = 0; d < D; ++d)
      for (int64_t g = 0; g < G; ++g) {
        const bool with_r = s.lstm || g < 2;
        const Array wb{bb, imm(d * 2 * pl.gh + g * H)}, rb{bb, imm(d * 2 * pl.gh + pl.gh + g * H)};
        const Array dst{"workspace", imm(off + d * pl.gh + g * H)};
        TJ_ASSIGN_OR_RETURN(
            Stmt sum, unit_loop(H, pl.lanes, "bu", [&](const Expr& u, int l) -> Expected<Stmt> {
              Expr v = load_f32(wb, u, l);
              if (with_r) v = add(v, load_f32(rb, u, l));
              return store_f32(dst, u, v, l);
            }));
        body.push_back(sum);
      }
    off += D * pl.gh;
  }
  pl.shared = round_up(off, kAlign);
  int64_t w = 0;
  auto place = [&w](int64_t floats) {
    const int64_t at = w;
    w += round_up(floats, kAlign);
    return at;
  };
  pl.p_off = place(pl.rows_c * pl.gh);
  pl.g_off = place(kTileRows * pl.gh);
  pl.h_off = place(kTileRows * H);
  pl.c_off = s.lstm ? place(kTileRows * H) : 0;
  pl.g2_off = gru_split ? place(kTileRows * pl.g2w) : 0;
  pl.rh_off = gru_split ? place(kTileRows * H) : 0;
  pl.per_worker = w;
  pl.workers = std::max(1, options.threads);

  // Items: (direction, tile of at most kTileRows rows); with several workers, tiles small enough
  // that every worker gets one where the batch allows.
  const Expr N = pl.N, S = pl.S;
  const int64_t tiles_wanted = (pl.workers + D - 1) / D;
  const Expr tb = max(imm(1), min(imm(kTileRows), cdiv(N, imm(tiles_wanted))));
  const Expr items = mul(imm(D), cdiv(N, var("tb")));
  auto item_body = [&](const Expr& item, const Expr& wsb) -> Expected<Stmt> {
    Stmt dirs;
    if (D == 1) {
      TJ_ASSIGN_OR_RETURN(dirs, direction_body(pl, 0, s.reverse, wsb));
    } else {
      TJ_ASSIGN_OR_RETURN(Stmt fwd, direction_body(pl, 0, false, wsb));
      TJ_ASSIGN_OR_RETURN(Stmt bwd, direction_body(pl, 1, true, wsb));
      dirs = if_then_else(compare(CmpOp::kEq, mod(item, imm(D)), imm(0)), fwd, bwd);
    }
    return let("n0", mul(div(item, imm(D)), var("tb")),
               let("mb", min(var("tb"), sub(N, var("n0"))), dirs));
  };
  TJ_ASSIGN_OR_RETURN(Stmt serial_item, item_body(var("item"), imm(pl.shared)));
  Stmt serial = for_loop("item", imm(0), items, serial_item);
  Stmt loops = serial;
  if (pl.workers > 1) {
    // Worker k takes items k, k + W, ... with its own workspace area.
    const int64_t W = pl.workers;
    const Expr k = var("wk");
    TJ_ASSIGN_OR_RETURN(Stmt par_item,
                        item_body(var("item"), add(imm(pl.shared), mul(k, imm(pl.per_worker)))));
    Stmt par = for_loop("wk", imm(0), imm(W),
                        for_loop("j", imm(0), div(add(sub(items, k), imm(W - 1)), imm(W)),
                                 let("item", add(k, mul(var("j"), imm(W))), par_item)),
                        ForKind::kParallel);
    const Expr macs = mul(mul(S, N), imm(pl.gh * (I + H)));
    // On the team only with work for two workers (one item would leave the other idle).
    loops = if_then_else(binary(BinaryOp::kAnd, compare(CmpOp::kGe, macs, imm(kParallelMinMacs)),
                                compare(CmpOp::kGe, items, imm(2))),
                         par, serial);
  }
  body.push_back(let("tb", tb, loops));
  const int64_t ws_floats = pl.shared + pl.workers * pl.per_worker;
  out.fn = io.function(simplify(block(std::move(body))), ws_floats);
  out.workspace_bytes = ws_floats * 4;
  out.notes.push_back(fmt::format(
      "{} {}x{} hidden {}: weights packed into panels of {} columns{}, batch tiles of <= {} rows, "
      "{} projected rows per chunk, {} worker{}",
      s.lstm ? "lstm" : "gru", D, G, H, pl.width,
      out.input_layouts[s.w] == InputLayout::kAsIs ? " per call" : " once", kTileRows, pl.rows_c,
      pl.workers, pl.workers > 1 ? "s" : ""));
  return out;
}

bool recurrent_supported(const passes::Region& region) { return parse_rnn(region).ok(); }

}  // namespace tierjit::kir::lowering
