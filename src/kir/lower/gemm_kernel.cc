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

// Builds the statements of one GEMM; names are prefixed with spec.prefix.
class Gen {
 public:
  explicit Gen(const GemmSpec& s) : s_(s), t_(effective_tiles(s)), L_(s.lanes) {
    ap_ = s.workspace_offset;
    bp_ = c_add(s.workspace_offset, ci(a_floats()));
    int64_t m = 0, n = 0;
    full_m_ = const_of(s.m, &m) && m % t_.mr == 0;
    full_n_ = const_of(s.n, &n) && n % t_.nr == 0;
  }

  int64_t a_floats() const { return round_up(t_.mc * t_.kc, 16); }
  int64_t b_floats() const { return t_.nc * t_.kc; }

  Stmt packed() {
    Stmt body = loop("jc", c_ceil_div(s_.n, t_.nc), [&](const Expr& jc) {
      return bind("j0c", c_mul(jc, ci(t_.nc)), [&](const Expr& j0c) {
        return bind("ncur", c_min(ci(t_.nc), c_sub(s_.n, j0c)),
                    [&](const Expr& ncur) { return k_blocks(j0c, ncur); });
      });
    });
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
    });
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

  // ---- blocked loops ----
  Stmt k_blocks(const Expr& j0c, const Expr& ncur) {
    Expr npc = c_ceil_div(s_.k, t_.kc);
    return loop("pc", npc, [&](const Expr& pc) {
      Expr first = pc->as<IntImm>() ? bool_const(is_const(pc, 0)) : compare(CmpOp::kEq, pc, ci(0));
      Expr last = is_const(npc, 1) ? bool_const(true)
                                   : compare(CmpOp::kEq, pc, c_sub(npc, ci(1)));
      return bind("p0", c_mul(pc, ci(t_.kc)), [&](const Expr& p0) {
        return bind("kcur", c_min(ci(t_.kc), c_sub(s_.k, p0)), [&](const Expr& kcur) {
          Stmt pb = pack_b(j0c, ncur, p0, kcur);
          Stmt mb = loop("ic", c_ceil_div(s_.m, t_.mc), [&](const Expr& ic) {
            return bind("i0c", c_mul(ic, ci(t_.mc)), [&](const Expr& i0c) {
              return bind("mcur", c_min(ci(t_.mc), c_sub(s_.m, i0c)), [&](const Expr& mcur) {
                Stmt pa = pack_a(i0c, mcur, p0, kcur);
                Stmt tiles = loop("jr", c_ceil_div(ncur, t_.nr), [&](const Expr& jr) {
                  return loop("ir", c_ceil_div(mcur, t_.mr), [&](const Expr& ir) {
                    Expr ib = c_add(i0c, c_mul(ir, ci(t_.mr)));
                    Expr jb = c_add(j0c, c_mul(jr, ci(t_.nr)));
                    Expr ap = c_add(ap_, c_mul(ir, ci(t_.kc * t_.mr)));
                    Expr bp = c_add(bp_, c_mul(jr, ci(t_.kc * t_.nr)));
                    return bind("ib", ib, [&](const Expr& ibv) {
                      return bind("jb", jb, [&](const Expr& jbv) {
                        return tile(ibv, jbv, ap, bp, kcur, first, last);
                      });
                    });
                  });
                });
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
  Stmt pack_b(const Expr& j0c, const Expr& ncur, const Expr& p0, const Expr& kcur) {
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
          if (!is_const(b.col_stride, 1)) return edge;
          std::vector<Stmt> full;
          for (int64_t v = 0; v < t_.nr / L_; ++v)
            full.push_back(store(s_.workspace, vramp(c_add(dst, ci(v * L_)), L_),
                                 load(f32(L_), b.buffer, vramp(c_add(src, c_add(jb, ci(v * L_))), L_))));
          Expr is_full = full_n_ ? bool_const(true) : c_le(c_add(jb, ci(t_.nr)), s_.n);
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

  // The microkernel on panels at ap/bp over kcur steps, then the write-out of the mr x nr tile
  // whose top-left element is C[ib, jb].
  Stmt tile(const Expr& ib, const Expr& jb, const Expr& ap, const Expr& bp, const Expr& kcur,
            const Expr& first, const Expr& last) {
    const int64_t nv = t_.nr / L_, mr = t_.mr, nr = t_.nr;
    const std::string acc = nm("acc");
    auto acc_at = [&](int64_t r, int64_t v) { return vramp(ci(r * nr + v * L_), L_); };
    std::vector<Stmt> init;
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t v = 0; v < nv; ++v) init.push_back(store(acc, acc_at(r, v), broadcast(fimm(0), L_)));

    Stmt kloop = loop("q", kcur, [&](const Expr& q) {
      std::vector<Stmt> fmas;
      for (int64_t r = 0; r < mr; ++r)
        for (int64_t v = 0; v < nv; ++v) {
          Expr a = var(nm("a" + std::to_string(r)), f32(L_));
          Expr b = var(nm("b" + std::to_string(v)), f32(L_));
          fmas.push_back(store(acc, acc_at(r, v),
                               call(Intrinsic::kFma, {a, b, load(f32(L_), acc, acc_at(r, v))})));
        }
      Stmt body = block(fmas);
      for (int64_t r = mr - 1; r >= 0; --r)
        body = let(nm("a" + std::to_string(r)),
                   broadcast(load(f32(), s_.workspace, c_add(ap, c_add(c_mul(q, ci(mr)), ci(r)))), L_),
                   body);
      for (int64_t v = nv - 1; v >= 0; --v)
        body = let(nm("b" + std::to_string(v)),
                   load(f32(L_), s_.workspace, vramp(c_add(bp, c_add(c_mul(q, ci(nr)), ci(v * L_))), L_)),
                   body);
      return body;
    });

    // Full tile: vector stores straight from the accumulators.
    std::vector<Stmt> full;
    for (int64_t r = 0; r < mr; ++r)
      for (int64_t v = 0; v < nv; ++v)
        full.push_back(write(load(f32(L_), acc, acc_at(r, v)), c_add(ib, ci(r)),
                             c_add(jb, ci(v * L_)), L_, first, last));

    // Edge tile: copy to a scratch tile (the accumulators keep constant indices so they stay in
    // registers), then store the valid mv x nv part: whole rows as vectors, else element-wise.
    const std::string et = nm("edge");
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
    return allocate(acc, DType::kFloat32, mr * nr, block({block(init), kloop, out}));
  }

  const GemmSpec& s_;
  Tiles t_;
  int L_;
  Expr ap_, bp_;
  bool full_m_ = false, full_n_ = false;
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

int64_t workspace_floats(const GemmSpec& spec) {
  Gen g(spec);
  return g.a_floats() + g.b_floats();
}

Stmt gemm_packed(const GemmSpec& spec) { return Gen(spec).packed(); }

Stmt gemm_loops(const GemmSpec& spec) { return Gen(spec).loops(); }

std::string describe(const Tiles& t, int lanes) {
  return "gemm mr=" + std::to_string(t.mr) + " nr=" + std::to_string(t.nr) +
         " kc=" + std::to_string(t.kc) + " mc=" + std::to_string(t.mc) +
         " nc=" + std::to_string(t.nc) + " lanes=" + std::to_string(lanes);
}

}  // namespace tierjit::kir::gemm
