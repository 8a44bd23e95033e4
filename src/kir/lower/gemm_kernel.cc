// The GEMM generator of gemm_kernel.h: Goto/BLIS loop nest with packing and a register-blocked
// vector microkernel (tier 2), or a plain i-k-j nest (tier 1). Sizes that are constants fold as
// the IR is built (trip-count-1 loops vanish, min() of constants is computed), so exact shapes
// get constant loop bounds and no dead edge code.
#include "kir/lower/gemm_kernel.h"

#include <algorithm>

#include "kir/builder.h"

namespace tierjit::kir::gemm {

namespace {

bool const_of(const Expr& e, int64_t* v) {
  if (const auto* i = e->as<IntImm>()) {
    *v = i->value;
    return true;
  }
  return false;
}
bool is_const(const Expr& e, int64_t v) {
  int64_t x = 0;
  return const_of(e, &x) && x == v;
}

// Constant-folding int64 arithmetic.
Expr c_add(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (const_of(a, &x) && const_of(b, &y)) return imm(x + y);
  if (is_const(a, 0)) return b;
  if (is_const(b, 0)) return a;
  return add(a, b);
}
Expr c_sub(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (const_of(a, &x) && const_of(b, &y)) return imm(x - y);
  if (is_const(b, 0)) return a;
  return sub(a, b);
}
Expr c_mul(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (const_of(a, &x) && const_of(b, &y)) return imm(x * y);
  if (is_const(a, 0) || is_const(b, 0)) return imm(0);
  if (is_const(a, 1)) return b;
  if (is_const(b, 1)) return a;
  return mul(a, b);
}
Expr c_min(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (const_of(a, &x) && const_of(b, &y)) return imm(std::min(x, y));
  return min(a, b);
}
Expr c_ceil_div(const Expr& a, int64_t d) {
  int64_t x = 0;
  if (const_of(a, &x)) return imm((x + d - 1) / d);
  if (d == 1) return a;
  return div(add(a, imm(d - 1)), imm(d));
}
Expr ci(int64_t v) { return imm(v); }
Expr bool_const(bool v) { return imm(v ? 1 : 0, boolean()); }
bool is_true(const Expr& e) { return is_const(e, 1) && e->type.is_bool(); }
bool is_false(const Expr& e) { return is_const(e, 0) && e->type.is_bool(); }
// a <= b, folded; a && b, folded.
Expr c_le(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (const_of(a, &x) && const_of(b, &y)) return bool_const(x <= y);
  return compare(CmpOp::kLe, a, b);
}
Expr c_and(const Expr& a, const Expr& b) {
  if (is_false(a) || is_false(b)) return bool_const(false);
  if (is_true(a)) return b;
  if (is_true(b)) return a;
  return binary(BinaryOp::kAnd, a, b);
}
Stmt c_if(const Expr& cond, const Stmt& t, const Stmt& f) {
  if (is_true(cond)) return t;
  if (is_false(cond)) return f ? f : block({});
  return if_then_else(cond, t, f);
}
int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

Expr vramp(const Expr& base, int lanes) { return ramp(base, imm(1), lanes); }

// GEMMs with at most this many rows read B in place instead of packing it.
constexpr int64_t kDirectMaxM = 16;
// GEMMs with B transposed and at most this many rows are computed as dot products: kDotR rows x
// kDotRJ columns at a time (16 vector accumulators), leftover rows kDotJ columns at a time.
constexpr int64_t kDotMaxM = 16;
constexpr int64_t kDotR = 4;
constexpr int64_t kDotRJ = 4;
constexpr int64_t kDotJ = 8;
// Minimum M * N * K (multiply-adds) for a parallel loop (which runs on one thread while the
// spare cores are busy, see ForKind::kParallel): on an idle second core two threads made mlp's
// 1x256 / 8x256 / 16x256 calls 0.018 / 0.034 / 0.073 -> 0.011 / 0.024 / 0.037 ms at tier 2. The
// same bound as tier 0's oneDNN calls (kPrimitiveMinMacs in interp/kernels/dnnl_util.h).
constexpr double kParallelMinWork = 1 << 16;

// Where the microkernel reads its B panel: row q of the panel starts at base + q * stride.
struct BSrc {
  std::string buffer;
  Expr base;
  Expr stride;
};

// Builds the statements of one GEMM; names are prefixed with spec.prefix.
class Gen {
 public:
  explicit Gen(const GemmSpec& s) : s_(s), t_(effective_tiles(s)), L_(s.lanes) {
    ap_ = s.workspace_offset;
    bp_ = c_add(s.workspace_offset, ci(a_floats()));
    int64_t m = 0, n = 0;
    full_m_ = const_of(s.m, &m) && m % t_.mr == 0;
    full_n_ = const_of(s.n, &n) && n % t_.nr == 0;
    // Threads: the loop over N panels (or dot-product output blocks, or rows at tier 1) runs in
    // parallel; packing stays serial (the workspace is shared). Only for enough work: a run-time
    // size counts as large.
    double work = 1;
    for (const Expr& d : {s.m, s.n, s.k}) {
      int64_t v = 0;
      work *= const_of(d, &v) ? static_cast<double>(v) : 1e3;
    }
    par_ = s.threads > 1 && work >= kParallelMinWork ? ForKind::kParallel : ForKind::kSerial;
    // A run-time size: see packed() (only the blocked body of many rows runs in parallel).
    bool all_const = true;
    for (const Expr& d : {s.m, s.n, s.k}) all_const = all_const && d->as<IntImm>() != nullptr;
    par_dynamic_ = par_ == ForKind::kParallel && !all_const;
  }

  /// Only the few-rows body (the caller guarantees M <= 16 at run time), or only the blocked
  /// body (the caller serves M <= 16 otherwise).
  bool few_rows_only = false, many_rows_only = false;

  int64_t a_floats() const { return round_up(t_.mc * t_.kc, 16); }
  int64_t b_floats() const { return t_.nc * t_.kc; }

  Stmt packed() {
    // Few rows: B is read in place (packing it would cost as much as the product); only a
    // partial last panel is packed. Needs unit column stride (B not transposed).
    // With M known only at run time, the few-rows bodies run serially (at most 16 rows: about
    // the parallel bound's work or less) and only the blocked body gets the parallel loop, so
    // generic code serving batch 1 does not start an OpenMP team on every call.
    Stmt body = few_rows_only ? Stmt() : n_blocks(false);
    const ForKind big = par_;
    if (par_dynamic_) par_ = ForKind::kSerial;
    auto few = [&](const Expr& small, Stmt few_body) {
      if (many_rows_only && !is_true(small)) return;
      if (is_true(small) || few_rows_only) body = std::move(few_body);
      else if (!is_false(small)) body = if_then_else(small, few_body, body);
    };
    if (is_const(s_.b.row_stride, 1) && is_const(s_.a.col_stride, 1) && !is_const(s_.n, 1)) {
      // B transposed (rows of B^T contiguous in k): few rows are dot products, no packing.
      few(c_le(s_.m, ci(kDotMaxM)), dot());
    } else if (is_const(s_.b.col_stride, 1)) {
      few(c_le(s_.m, ci(kDirectMaxM)), n_blocks(true));
    }
    if (!body) body = n_blocks(false);  // no few-rows form for this B layout
    par_ = big;
    if (is_const(s_.k, 0)) return zero_k();
    int64_t k = 0;
    if (const_of(s_.k, &k)) return body;
    return if_then_else(compare(CmpOp::kEq, s_.k, ci(0)), zero_k(), body);
  }

  Stmt loops() {
    return loop("i", s_.m, [&](const Expr& i) {
      return bind("crow", c_add(s_.c_offset, c_mul(i, s_.n)), [&](const Expr& crow) {
        Stmt zero = loop("j0", s_.n, [&](const Expr& j) {
          return store(s_.c, c_add(crow, j), fimm(0));
        }, ForKind::kVectorized);
        Stmt update = loop("q", s_.k, [&](const Expr& q) {
          Expr a = load(f32(), s_.a.buffer,
                        c_add(s_.a.offset, c_add(c_mul(i, s_.a.row_stride), c_mul(q, s_.a.col_stride))));
          return bind_expr("aiq", a, f32(), [&](const Expr& av) {
            return loop("j1", s_.n, [&](const Expr& j) {
              Expr b = load(f32(), s_.b.buffer,
                            c_add(s_.b.offset, c_add(c_mul(q, s_.b.row_stride),
                                                     c_mul(j, s_.b.col_stride))));
              Expr ci_ = c_add(crow, j);
              return store(s_.c, ci_, call(Intrinsic::kFma, {av, b, load(f32(), s_.c, ci_)}));
            }, ForKind::kVectorized);
          });
        });
        Stmt fin = loop("j2", s_.n, [&](const Expr& j) {
          return final_store(load(f32(), s_.c, c_add(crow, j)), i, j, 1);
        }, ForKind::kVectorized);
        return block({zero, update, fin});
      });
    }, par_);
  }

 private:
  // ---- helpers ----
  std::string nm(const std::string& n) const { return s_.prefix + n; }

  // for (name in [0, extent)) body; folded away for extents 0 and 1.
  template <class F>
  Stmt loop(const std::string& name, const Expr& extent, F body, ForKind kind = ForKind::kSerial) {
    if (is_const(extent, 0)) return block({});
    if (is_const(extent, 1)) return body(ci(0));
    return for_loop(nm(name), ci(0), extent, body(var(nm(name))), kind);
  }
  // let name = value in body (constants and variables are substituted instead).
  template <class F>
  Stmt bind(const std::string& name, const Expr& value, F body) {
    return bind_expr(name, value, i64(), body);
  }
  template <class F>
  Stmt bind_expr(const std::string& name, const Expr& value, Type t, F body) {
    if (value->as<IntImm>() || value->as<Var>()) return body(value);
    return let(nm(name), value, body(var(nm(name), t)));
  }

  Stmt partial_store(const Expr& x, const Expr& row, const Expr& col, int lanes) {
    Expr idx = c_add(s_.c_offset, c_add(c_mul(row, s_.n), col));
    return store(s_.c, lanes > 1 ? vramp(idx, lanes) : idx, x);
  }
  Stmt final_store(const Expr& x, const Expr& row, const Expr& col, int lanes) {
    return s_.store ? s_.store(x, row, col, lanes) : partial_store(x, row, col, lanes);
  }
  // C[row, col..] = x (+ C[row, col..] unless first), final (epilogue) when `last`.
  Stmt write(const Expr& x0, const Expr& row, const Expr& col, int lanes, const Expr& first,
             const Expr& last) {
    Expr x = x0;
    if (!is_true(first)) {
      Expr idx = c_add(s_.c_offset, c_add(c_mul(row, s_.n), col));
      Expr old = load(f32(lanes), s_.c, lanes > 1 ? vramp(idx, lanes) : idx);
      Expr zero = lanes > 1 ? broadcast(fimm(0), lanes) : fimm(0);
      x = add(x, is_false(first) ? old : select(lanes > 1 ? broadcast(first, lanes) : first, zero, old));
    }
    return c_if(last, final_store(x, row, col, lanes), partial_store(x, row, col, lanes));
  }

  // K == 0: C = epilogue(0).
  Stmt zero_k() {
    return loop("zi", s_.m, [&](const Expr& i) {
      return loop("zj", s_.n, [&](const Expr& j) { return final_store(fimm(0), i, j, 1); });
    });
  }

  // ---- dot-product form (B transposed, few rows) ----
  // C[i, j0 .. j0+J) = A row i . B^T rows j0 .. j0+J: J vector accumulators over K / L steps,
  // reduced through a scratch buffer, plus a scalar K tail.
  // Few rows with B transposed: output blocks of R rows x J columns, each output a dot product
  // along K (contiguous in A's rows and B^T's rows), R x J vector accumulators; B is read once
  // per R rows, in place. Rows in blocks of kDotR, the rest one at a time (J = kDotJ).
  Stmt dot() {
    int64_t m = 0;
    const bool m_const = const_of(s_.m, &m);
    Expr mfull = m_const ? ci(m / kDotR) : div(s_.m, ci(kDotR));
    Stmt blocks = loop("dio", mfull, [&](const Expr& io) {
      return bind("di0", c_mul(io, ci(kDotR)), [&](const Expr& i0) {
        return dot_rows(i0, kDotR, kDotRJ);
      });
    });
    Expr mdone = c_mul(mfull, ci(kDotR));
    Stmt rest = loop("dir", c_sub(s_.m, mdone), [&](const Expr& ir) {
      return bind("di", c_add(mdone, ir), [&](const Expr& i) { return dot_rows(i, 1, kDotJ); });
    });
    if (m_const && m % kDotR == 0) return blocks;
    if (m_const && m < kDotR) return rest;
    return block({blocks, rest});
  }
  // Rows i0 .. i0+R-1: every column, J at a time in parallel blocks, then the column tail.
  Stmt dot_rows(const Expr& i0, int64_t R, int64_t J) {
    int64_t n = 0;
    Expr jfull = const_of(s_.n, &n) ? ci(n / J) : div(s_.n, ci(J));
    Stmt main = loop("djo" + std::to_string(R), jfull, [&](const Expr& jo) {
      return dot_block(i0, R, c_mul(jo, ci(J)), J);
    }, par_);
    Expr jdone = c_mul(jfull, ci(J));
    Stmt tail = loop("djt" + std::to_string(R), c_sub(s_.n, jdone), [&](const Expr& jt) {
      return dot_block(i0, R, c_add(jdone, jt), 1);
    });
    return block({main, tail});
  }
  Stmt dot_block(const Expr& i0, int64_t R, const Expr& j0, int64_t J) {
    const std::string tag = std::to_string(R) + "x" + std::to_string(J);
    const std::string acc = nm("dacc" + tag), red = nm("dred" + tag), sum = nm("dsum" + tag);
    const int64_t RJ = R * J;
    auto at = [&](int64_t rj) { return vramp(ci(rj * L_), L_); };
    auto brow = [&](int64_t jj) {
      return c_add(s_.b.offset, c_mul(c_add(j0, ci(jj)), s_.b.col_stride));
    };
    auto arow = [&](int64_t r) {
      return c_add(s_.a.offset, c_mul(c_add(i0, ci(r)), s_.a.row_stride));
    };
    int64_t k = 0;
    Expr kv = const_of(s_.k, &k) ? ci(k / L_) : div(s_.k, ci(L_));
    Expr kdone = c_mul(kv, ci(L_));
    std::vector<Stmt> st;
    for (int64_t rj = 0; rj < RJ; ++rj) st.push_back(store(acc, at(rj), broadcast(fimm(0), L_)));
    st.push_back(loop("dk" + tag, kv, [&](const Expr& q) {
      std::vector<Stmt> fmas;
      for (int64_t jj = 0; jj < J; ++jj) {
        Expr b = load(f32(L_), s_.b.buffer, vramp(c_add(brow(jj), c_mul(q, ci(L_))), L_));
        for (int64_t r = 0; r < R; ++r) {
          Expr a = var(nm("da" + std::to_string(r)), f32(L_));
          const int64_t rj = r * J + jj;
          fmas.push_back(store(acc, at(rj), call(Intrinsic::kFma, {a, b, load(f32(L_), acc, at(rj))})));
        }
      }
      Stmt body = block(fmas);
      for (int64_t r = R - 1; r >= 0; --r)
        body = let(nm("da" + std::to_string(r)),
                   load(f32(L_), s_.a.buffer, vramp(c_add(arow(r), c_mul(q, ci(L_))), L_)), body);
      return body;
    }));
    std::vector<Stmt> reduce;
    for (int64_t rj = 0; rj < RJ; ++rj) {
      reduce.push_back(store(red, at(rj), load(f32(L_), acc, at(rj))));
      Expr x = load(f32(), red, ci(rj * L_));
      for (int64_t l = 1; l < L_; ++l) x = add(x, load(f32(), red, ci(rj * L_ + l)));
      reduce.push_back(store(sum, ci(rj), x));
    }
    Stmt ktail = loop("dkt" + tag, c_sub(s_.k, kdone), [&](const Expr& t) {
      std::vector<Stmt> upd;
      Expr kk = c_add(kdone, t);
      for (int64_t r = 0; r < R; ++r) {
        Expr a = load(f32(), s_.a.buffer, c_add(arow(r), kk));
        for (int64_t jj = 0; jj < J; ++jj)
          upd.push_back(store(sum, ci(r * J + jj),
                              call(Intrinsic::kFma, {a, load(f32(), s_.b.buffer, c_add(brow(jj), kk)),
                                                     load(f32(), sum, ci(r * J + jj))})));
      }
      return block(upd);
    });
    std::vector<Stmt> out;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t jj = 0; jj < J; ++jj)
        out.push_back(final_store(load(f32(), sum, ci(r * J + jj)), c_add(i0, ci(r)),
                                  c_add(j0, ci(jj)), 1));
    st.push_back(allocate(red, DType::kFloat32, RJ * L_,
                          allocate(sum, DType::kFloat32, RJ, block({block(reduce), ktail, block(out)}))));
    return allocate(acc, DType::kFloat32, RJ * L_, block(st));
  }

  // ---- blocked loops ----
  Stmt n_blocks(bool direct) {
    return loop("jc", c_ceil_div(s_.n, t_.nc), [&](const Expr& jc) {
      return bind("j0c", c_mul(jc, ci(t_.nc)), [&](const Expr& j0c) {
        return bind("ncur", c_min(ci(t_.nc), c_sub(s_.n, j0c)),
                    [&](const Expr& ncur) { return k_blocks(j0c, ncur, direct); });
      });
    });
  }

  Stmt k_blocks(const Expr& j0c, const Expr& ncur, bool direct) {
    Expr npc = c_ceil_div(s_.k, t_.kc);
    return loop("pc", npc, [&](const Expr& pc) {
      Expr first = pc->as<IntImm>() ? bool_const(is_const(pc, 0)) : compare(CmpOp::kEq, pc, ci(0));
      Expr last = is_const(npc, 1) ? bool_const(true)
                                   : compare(CmpOp::kEq, pc, c_sub(npc, ci(1)));
      return bind("p0", c_mul(pc, ci(t_.kc)), [&](const Expr& p0) {
        return bind("kcur", c_min(ci(t_.kc), c_sub(s_.k, p0)), [&](const Expr& kcur) {
          Stmt pb = direct && s_.b_padded ? block({}) : pack_b(j0c, ncur, p0, kcur, direct);
          Stmt mb = loop("ic", c_ceil_div(s_.m, t_.mc), [&](const Expr& ic) {
            return bind("i0c", c_mul(ic, ci(t_.mc)), [&](const Expr& i0c) {
              return bind("mcur", c_min(ci(t_.mc), c_sub(s_.m, i0c)), [&](const Expr& mcur) {
                Stmt pa = pack_a(i0c, mcur, p0, kcur);
                Stmt tiles = loop("jr", c_ceil_div(ncur, t_.nr), [&](const Expr& jr) {
                  return loop("ir", c_ceil_div(mcur, t_.mr), [&](const Expr& ir) {
                    Expr ib = c_add(i0c, c_mul(ir, ci(t_.mr)));
                    Expr jb = c_add(j0c, c_mul(jr, ci(t_.nr)));
                    Expr ap = c_add(ap_, c_mul(ir, ci(t_.kc * t_.mr)));
                    BSrc packed{s_.workspace, c_add(bp_, c_mul(jr, ci(t_.kc * t_.nr))), ci(t_.nr)};
                    return bind("ib", ib, [&](const Expr& ibv) {
                      return bind("jb", jb, [&](const Expr& jbv) {
                        if (!direct) return tile(ibv, jbv, ap, packed, kcur, first, last);
                        BSrc in_place{s_.b.buffer,
                                      c_add(s_.b.offset, c_add(c_mul(p0, s_.b.row_stride), jbv)),
                                      s_.b.row_stride};
                        Expr whole = full_n_ || s_.b_padded ? bool_const(true)
                                                            : c_le(c_add(jbv, ci(t_.nr)), s_.n);
                        if (is_true(whole)) return tile(ibv, jbv, ap, in_place, kcur, first, last);
                        return c_if(whole, tile(ibv, jbv, ap, in_place, kcur, first, last),
                                    tile(ibv, jbv, ap, packed, kcur, first, last));
                      });
                    });
                  });
                }, par_);
                return block({pa, tiles});
              });
            });
          });
          return block({pb, mb});
        });
      });
    });
  }

  // B[p0 .. p0+kcur, j0c .. j0c+ncur) -> panels of nr columns: Bp[jp][q][0..nr), columns past N
  // clamped to N-1 (their results are never stored).
  // With `edge_only`, only a partial last panel is packed (the others are read in place).
  Stmt pack_b(const Expr& j0c, const Expr& ncur, const Expr& p0, const Expr& kcur,
              bool edge_only) {
    const MatrixRef& b = s_.b;
    return loop("jp", c_ceil_div(ncur, t_.nr), [&](const Expr& jp) {
      return bind("pjb", c_add(j0c, c_mul(jp, ci(t_.nr))), [&](const Expr& jb) {
        return loop("pq", kcur, [&](const Expr& q) {
          Expr dst = c_add(bp_, c_add(c_mul(jp, ci(t_.kc * t_.nr)), c_mul(q, ci(t_.nr))));
          Expr src = c_add(b.offset, c_mul(c_add(p0, q), b.row_stride));
          Stmt edge = loop("pc1", ci(t_.nr), [&](const Expr& c) {
            Expr col = c_min(c_add(jb, c), c_sub(s_.n, ci(1)));
            return store(s_.workspace, c_add(dst, c),
                         load(f32(), b.buffer, c_add(src, c_mul(col, b.col_stride))));
          });
          Expr is_full = full_n_ ? bool_const(true) : c_le(c_add(jb, ci(t_.nr)), s_.n);
          if (edge_only) return c_if(is_full, block({}), edge);
          // Whole panel: vector loads (a gather with stride K when B is transposed).
          std::vector<Stmt> full;
          for (int64_t v = 0; v < t_.nr / L_; ++v) {
            Expr col0 = c_mul(c_add(jb, ci(v * L_)), b.col_stride);
            full.push_back(store(s_.workspace, vramp(c_add(dst, ci(v * L_)), L_),
                                 load(f32(L_), b.buffer, ramp(c_add(src, col0), b.col_stride, L_))));
          }
          return c_if(is_full, block(full), edge);
        });
      });
    });
  }

  // A[i0c .. i0c+mcur, p0 .. p0+kcur) -> panels of mr rows: Ap[ip][q][0..mr), rows past M clamped
  // to M-1.
  Stmt pack_a(const Expr& i0c, const Expr& mcur, const Expr& p0, const Expr& kcur) {
    const MatrixRef& a = s_.a;
    return loop("ip", c_ceil_div(mcur, t_.mr), [&](const Expr& ip) {
      Expr ib = c_add(i0c, c_mul(ip, ci(t_.mr)));
      Expr dst0 = c_add(ap_, c_mul(ip, ci(t_.kc * t_.mr)));
      return bind("pib", ib, [&](const Expr& ibv) {
        return bind("pdst", dst0, [&](const Expr& dst) {
          return row_lets(0, ibv, [&](const std::vector<Expr>& rows) {
            return loop("aq", kcur, [&](const Expr& q) {
              std::vector<Stmt> st;
              Expr kk = c_mul(c_add(p0, q), a.col_stride);
              for (int64_t r = 0; r < t_.mr; ++r)
                st.push_back(store(s_.workspace, c_add(dst, c_add(c_mul(q, ci(t_.mr)), ci(r))),
                                   load(f32(), a.buffer, c_add(rows[r], kk))));
              return block(st);
            });
          });
        });
      });
    });
  }
  // let ar<r> = a.offset + min(ib + r, M - 1) * row_stride for r in [from, mr), then body(rows).
  template <class F>
  Stmt row_lets(int64_t from, const Expr& ib, F body, std::vector<Expr> rows = {}) {
    if (from == t_.mr) return body(rows);
    Expr row = c_add(ib, ci(from));
    if (!full_m_) row = c_min(row, c_sub(s_.m, ci(1)));
    Expr off = c_add(s_.a.offset, c_mul(row, s_.a.row_stride));
    return bind("ar" + std::to_string(from), off, [&](const Expr& o) {
      rows.push_back(o);
      return row_lets(from + 1, ib, body, rows);
    });
  }

  // The mr x nr tile whose top-left element is C[ib, jb]: the mr-row microkernel when all its
  // rows are valid, else the 1-row microkernel once per valid row.
  Stmt tile(const Expr& ib, const Expr& jb, const Expr& ap, const BSrc& bsrc, const Expr& kcur,
            const Expr& first, const Expr& last) {
    Expr rows_full = full_m_ ? bool_const(true) : c_le(c_add(ib, ci(t_.mr)), s_.m);
    if (is_true(rows_full) || t_.mr == 1) return kernel(ib, jb, ap, bsrc, kcur, first, last, t_.mr);
    Stmt rows = bind("mrow", c_sub(s_.m, ib), [&](const Expr& mrows) {
      return loop("r1", mrows, [&](const Expr& r) {
        return kernel(c_add(ib, r), jb, c_add(ap, r), bsrc, kcur, first, last, 1);
      });
    });
    if (is_false(rows_full)) return rows;
    return if_then_else(rows_full, kernel(ib, jb, ap, bsrc, kcur, first, last, t_.mr), rows);
  }

  // Microkernel: rows x nr accumulators over kcur steps of the A panel at ap (element (r, q) at
  // ap + q * mr + r) and the B panel bsrc, then the write-out of C[ib .. ib+rows, jb .. jb+nr).
  // With few accumulators, U sets of them take alternate k steps (independent FMA chains hide
  // the FMA latency) and are summed at the end.
  Stmt kernel(const Expr& ib, const Expr& jb, const Expr& ap, const BSrc& bsrc, const Expr& kcur,
              const Expr& first, const Expr& last, int64_t mr) {
    const int64_t nv = t_.nr / L_, nr = t_.nr, amr = t_.mr;
    const int64_t U = mr * nv >= 8 ? 1 : std::min<int64_t>(4, (8 + mr * nv - 1) / (mr * nv));
    const std::string acc = nm(mr == t_.mr ? "acc" : "acc1");
    auto acc_at = [&](int64_t r, int64_t v, int64_t u = 0) {
      return vramp(ci((u * mr + r) * nr + v * L_), L_);
    };
    std::vector<Stmt> init;
    for (int64_t u = 0; u < U; ++u)
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t v = 0; v < nv; ++v)
          init.push_back(store(acc, acc_at(r, v, u), broadcast(fimm(0), L_)));

    // One k step into accumulator set u.
    auto step = [&](const Expr& q, int64_t u) {
      const std::string sfx = "_" + std::to_string(u);
      std::vector<Stmt> fmas;
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t v = 0; v < nv; ++v) {
          Expr a = var(nm("a" + std::to_string(r) + sfx), f32(L_));
          Expr b = var(nm("b" + std::to_string(v) + sfx), f32(L_));
          fmas.push_back(store(acc, acc_at(r, v, u),
                               call(Intrinsic::kFma, {a, b, load(f32(L_), acc, acc_at(r, v, u))})));
        }
      Stmt body = block(fmas);
      for (int64_t r = mr - 1; r >= 0; --r)
        body = let(nm("a" + std::to_string(r) + sfx),
                   broadcast(load(f32(), s_.workspace, c_add(ap, c_add(c_mul(q, ci(amr)), ci(r)))), L_),
                   body);
      for (int64_t v = nv - 1; v >= 0; --v)
        body = let(nm("b" + std::to_string(v) + sfx),
                   load(f32(L_), bsrc.buffer,
                        vramp(c_add(bsrc.base, c_add(c_mul(q, bsrc.stride), ci(v * L_))), L_)),
                   body);
      return body;
    };
    std::vector<Stmt> compute = {block(init)};
    if (U == 1) {
      compute.push_back(loop("q", kcur, [&](const Expr& q) { return step(q, 0); }));
    } else {
      int64_t kc = 0;
      Expr main = const_of(kcur, &kc) ? ci(kc / U) : div(kcur, ci(U));
      compute.push_back(loop("qo", main, [&](const Expr& qo) {
        std::vector<Stmt> st;
        for (int64_t u = 0; u < U; ++u) st.push_back(step(c_add(c_mul(qo, ci(U)), ci(u)), u));
        return block(st);
      }));
      Expr done = c_mul(main, ci(U));
      compute.push_back(bind("qd", done, [&](const Expr& d) {
        return loop("qt", c_sub(kcur, d), [&](const Expr& qt) { return step(c_add(d, qt), 0); });
      }));
      std::vector<Stmt> sum;
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t v = 0; v < nv; ++v) {
          Expr x = load(f32(L_), acc, acc_at(r, v, 0));
          for (int64_t u = 1; u < U; ++u) x = add(x, load(f32(L_), acc, acc_at(r, v, u)));
          sum.push_back(store(acc, acc_at(r, v, 0), x));
        }
      compute.push_back(block(sum));
    }
    Stmt kloop = block(compute);

    // Full tile: vector stores straight from the accumulators.
    std::vector<Stmt> full;
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t v = 0; v < nv; ++v)
        full.push_back(write(load(f32(L_), acc, acc_at(r, v)), c_add(ib, ci(r)),
                             c_add(jb, ci(v * L_)), L_, first, last));

    // Edge tile: copy to a scratch tile (the accumulators keep constant indices so they stay in
    // registers), then store the valid mv x nv part: whole rows as vectors, else element-wise.
    const std::string et = nm(mr == t_.mr ? "edge" : "edge1");
    std::vector<Stmt> copy;
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t v = 0; v < nv; ++v)
        copy.push_back(store(et, acc_at(r, v), load(f32(L_), acc, acc_at(r, v))));
    Expr mv = c_min(ci(mr), c_sub(s_.m, ib));
    Expr nvalid = c_min(ci(nr), c_sub(s_.n, jb));
    Stmt rows = bind("mv", mv, [&](const Expr& mvv) {
      return bind("nv", nvalid, [&](const Expr& nvv) {
        return loop("er", mvv, [&](const Expr& r) {
          std::vector<Stmt> vec;
          for (int64_t v = 0; v < nv; ++v)
            vec.push_back(write(load(f32(L_), et, vramp(c_add(c_mul(r, ci(nr)), ci(v * L_)), L_)),
                                c_add(ib, r), c_add(jb, ci(v * L_)), L_, first, last));
          Stmt scalar = loop("ec", nvv, [&](const Expr& c) {
            return write(load(f32(), et, c_add(c_mul(r, ci(nr)), c)), c_add(ib, r), c_add(jb, c), 1,
                         first, last);
          });
          Expr whole_row = full_n_ ? bool_const(true) : c_le(ci(nr), nvv);
          return c_if(whole_row, block(vec), scalar);
        });
      });
    });
    copy.push_back(rows);
    Stmt edge = allocate(et, DType::kFloat32, mr * nr, block(copy));

    Expr is_full = c_and(full_m_ ? bool_const(true) : c_le(c_add(ib, ci(mr)), s_.m),
                         full_n_ ? bool_const(true) : c_le(c_add(jb, ci(nr)), s_.n));
    Stmt out = c_if(is_full, block(full), edge);
    return allocate(acc, DType::kFloat32, U * mr * nr, block({kloop, out}));
  }

  const GemmSpec& s_;
  Tiles t_;
  int L_;
  Expr ap_, bp_;
  bool full_m_ = false, full_n_ = false;
  ForKind par_ = ForKind::kSerial;
  bool par_dynamic_ = false;
};

}  // namespace

Expected<Tiles> tiles_from_tuning(const std::map<std::string, int64_t>& tuning, int lanes) {
  Tiles t;
  if (lanes < 1) lanes = 1;
  t.nr = 2 * lanes;
  if (lanes == 8) {
    t.mr = 6;  // AVX2: 6 x 2 accumulators + 2 B vectors + 1 broadcast of 16 registers
    t.nr = 16;
  }
  for (const auto& [name, value] : tuning) {
    int64_t* slot = name == "mr"   ? &t.mr
                    : name == "nr" ? &t.nr
                    : name == "kc" ? &t.kc
                    : name == "mc" ? &t.mc
                    : name == "nc" ? &t.nc
                                   : nullptr;
    if (!slot) return invalid_argument("gemm: unknown tuning knob '{}' (known: mr nr kc mc nc)", name);
    *slot = value;
    if (name == "mr" || name == "nr") t.small_m_shape = false;
  }
  if (t.mr < 1 || t.mr > 16) return invalid_argument("gemm: mr = {} is not in [1, 16]", t.mr);
  if (t.nr < lanes || t.nr % lanes != 0 || t.nr > 8 * lanes)
    return invalid_argument("gemm: nr = {} is not a multiple of {} lanes in [{}, {}]", t.nr, lanes,
                            lanes, 8 * lanes);
  if (t.kc < 1 || t.mc < 1 || t.nc < 1)
    return invalid_argument("gemm: kc, mc and nc must be >= 1, got {}, {}, {}", t.kc, t.mc, t.nc);
  if (t.kc > 65536 || t.mc > 65536 || t.nc > 65536)
    return invalid_argument("gemm: kc, mc and nc must be <= 65536, got {}, {}, {}", t.kc, t.mc, t.nc);
  return t;
}

Tiles effective_tiles(const GemmSpec& spec) {
  Tiles t = spec.tiles;
  int64_t m = 0, n = 0, k = 0;
  if (t.small_m_shape && const_of(spec.m, &m) && m > t.mr && m <= 64 && m % t.mr != 0) {
    // Small constant M (conv channels, heads): a register tile height that divides M avoids the
    // row-edge code (compile time) and its slower 1-row kernel.
    for (int64_t cand : {8, 4})
      if (m % cand == 0 && cand * (t.nr / spec.lanes) <= 24) {
        t.mr = cand;
        break;
      }
  }
  if (t.small_m_shape && const_of(spec.m, &m) && m >= 1 && m < t.mr) {
    // A few rows (batch-1 inference): B streams from memory once; wide rows of up to 8 vectors
    // keep 8+ independent FMA chains and read B in long contiguous runs.
    t.mr = m;
    t.nr = std::max(t.nr, std::max<int64_t>(1, 8 / m) * spec.lanes);
  }
  if (const_of(spec.n, &n) && n > 0)  // no wider than N needs: N = 10 takes one vector, not two
    t.nr = std::min(t.nr, round_up(n, spec.lanes));
  if (const_of(spec.k, &k) && k > 0) {  // balance the K blocks: 784 = 4 x 196, not 3 x 256 + 16
    int64_t blocks = (k + t.kc - 1) / t.kc;
    t.kc = (k + blocks - 1) / blocks;
  }
  if (const_of(spec.m, &m) && m > 0) {
    int64_t blocks = (m + t.mc - 1) / t.mc;
    t.mc = std::min(t.mc, (m + blocks - 1) / blocks);
  }
  t.mc = round_up(std::max<int64_t>(t.mc, 1), t.mr);
  if (const_of(spec.n, &n) && n > 0) t.nc = std::min(t.nc, round_up(n, t.nr));
  t.nc = round_up(t.nc, t.nr);
  return t;
}

namespace {

// The specs gemm_packed generates bodies for: `spec` itself, and with M known only at run time
// (generic code) also M = 1 .. kExactRowVariants as exact code would have them, and 5..16 rows
// with tiles of 8 rows; the general tile of mr rows would compute (and read B for) up to mr - M
// wasted rows through its edge code. Measured on the mlp's Gemm regions, generic vs exact p50
// before this: batch 1 0.029 vs 0.015 ms, batch 3 0.064 vs 0.030, batch 8 0.065 vs 0.034 ms.
constexpr int64_t kExactRowVariants = 4;
std::vector<GemmSpec> row_variants(const GemmSpec& spec) {
  std::vector<GemmSpec> out = {spec};
  if (spec.m->as<IntImm>() || !spec.tiles.small_m_shape) return out;
  for (int64_t rows = 1; rows <= kExactRowVariants; ++rows) {
    out.push_back(spec);
    out.back().m = imm(rows);
  }
  if (spec.tiles.mr != 8 && 8 * (spec.tiles.nr / spec.lanes) <= 24) {
    out.push_back(spec);  // 5..16 rows: tiles of 8 rows (8 and 16 without an edge tile)
    out.back().tiles.mr = 8;
  }
  return out;
}

}  // namespace

int64_t workspace_floats(const GemmSpec& spec) {
  int64_t floats = 0;
  for (const GemmSpec& v : row_variants(spec)) {
    Gen g(v);
    floats = std::max(floats, g.a_floats() + g.b_floats());
  }
  return floats;
}

Stmt gemm_packed(const GemmSpec& spec) {
  const std::vector<GemmSpec> variants = row_variants(spec);
  if (variants.size() == 1) return Gen(spec).packed();
  Gen general(spec);
  Stmt body;
  if (variants.size() > 1 + kExactRowVariants) {
    general.many_rows_only = true;
    Gen few(variants.back());
    few.few_rows_only = true;
    body = if_then_else(c_le(spec.m, ci(kDirectMaxM)), few.packed(), general.packed());
  } else {
    body = general.packed();
  }
  for (int64_t rows = kExactRowVariants; rows >= 1; --rows)
    body = if_then_else(compare(CmpOp::kEq, spec.m, ci(rows)),
                        Gen(variants[static_cast<size_t>(rows)]).packed(), body);
  return body;
}

Stmt gemm_loops(const GemmSpec& spec) { return Gen(spec).loops(); }

std::string describe(const Tiles& t, int lanes) {
  return "gemm mr=" + std::to_string(t.mr) + " nr=" + std::to_string(t.nr) +
         " kc=" + std::to_string(t.kc) + " mc=" + std::to_string(t.mc) +
         " nc=" + std::to_string(t.nc) + " lanes=" + std::to_string(lanes);
}

}  // namespace tierjit::kir::gemm
