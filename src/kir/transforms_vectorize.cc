// vectorize (transforms.h): a scalar loop -> a loop over `lanes`-wide vectors plus a scalar tail.
// One walk over the loop body widens expressions that depend on the loop variable (tracking which
// lets stay scalar and affine, which become vectors) and records every buffer access; the
// dependence check on those accesses then decides whether the result may be used.
#include <optional>
#include <vector>

#include "kir/builder.h"
#include "kir/transforms.h"
#include "kir/transforms_internal.h"

namespace tierjit::kir {

using namespace transforms_detail;  // NOLINT: the shared transform helpers

namespace {

class Vectorizer {
 public:
  Vectorizer(const std::string& v, int lanes, const VectorizeOptions& options)
      : v_(v), lanes_(lanes), options_(options) {
    affine_[v] = imm(1);
  }

  Expected<Stmt> run(const For& f) {
    Stmt body = stmt(f.body);
    if (!status_.ok()) return status_;
    TJ_RETURN_IF_ERROR(check_dependences());
    std::string vv = v_ + ".v";
    Expr L = imm(lanes_);
    Expr vec_ext = simplify(div(f.extent, L));
    Stmt vec_body = let(v_, simplify(add(mul(var(vv), L), f.min)), body);
    ForKind kind = f.for_kind == ForKind::kVectorized ? ForKind::kSerial : f.for_kind;
    Stmt vec_loop = for_loop(vv, imm(0), vec_ext, vec_body, kind);
    Stmt tail = for_loop(v_, simplify(add(f.min, mul(vec_ext, L))), simplify(mod(f.extent, L)),
                         f.body);
    return sequence({vec_loop, tail});
  }

 private:
  struct Access {
    std::string buffer;
    Expr resolved_index;  ///< with the loop's lets substituted
    bool store;
  };

  template <class... Args>
  Expr fail_expr(fmt::format_string<Args...> f, Args&&... args) {
    fail(f, std::forward<Args>(args)...);
    return nullptr;
  }
  template <class... Args>
  void fail(fmt::format_string<Args...> f, Args&&... args) {
    if (status_.ok()) {
      status_ = unsupported("kir vectorize '{}' by {}: {}", v_, lanes_,
                            fmt::format(f, std::forward<Args>(args)...));
    }
  }

  bool is_vec(const Expr& e) const { return e && e->type.lanes == lanes_; }
  Expr as_vec(const Expr& e) const { return is_vec(e) ? e : broadcast(e, lanes_); }

  // Stride of scalar integer `e` per step of v: nullopt when not affine in v, IntImm 0 when
  // invariant. `e` itself (v and affine lets hold lane 0) is the lane-0 value.
  std::optional<Expr> stride(const Expr& e) {
    Type t = e->type;
    auto zero = [&] { return imm(0, t); };
    switch (e->kind) {
      case NodeKind::kIntImm:
        return zero();
      case NodeKind::kVar: {
        const std::string& n = e->as<Var>()->name;
        if (auto it = affine_.find(n); it != affine_.end()) {
          if (!(it->second->type == t)) return std::nullopt;
          return it->second;
        }
        if (vector_vars_.count(n)) return std::nullopt;
        return zero();
      }
      case NodeKind::kBinary: {
        const auto* b = e->as<Binary>();
        if (t.is_int() &&
            (b->op == BinaryOp::kAdd || b->op == BinaryOp::kSub || b->op == BinaryOp::kMul)) {
          std::optional<Expr> sa = stride(b->a), sb = stride(b->b);
          if (!sa || !sb) return std::nullopt;
          bool za = is_zero(*sa), zb = is_zero(*sb);
          if (b->op == BinaryOp::kAdd) return simplify(add(*sa, *sb));
          if (b->op == BinaryOp::kSub) return simplify(sub(*sa, *sb));
          if (za && zb) return zero();
          if (za) return simplify(mul(b->a, *sb));
          if (zb) return simplify(mul(*sa, b->b));
          return std::nullopt;
        }
        break;
      }
      default:
        break;
    }
    return varies(e) ? std::nullopt : std::optional<Expr>(zero());
  }
  static bool is_zero(const Expr& e) {
    const auto* c = e->as<IntImm>();
    return c && c->value == 0;
  }
  bool varies(const Expr& e) {
    std::set<std::string> names = vector_vars_;
    for (const auto& [n, s] : affine_) names.insert(n);
    return uses_any(e, names);
  }

  void record(const std::string& buffer, const Expr& index, bool store) {
    accesses_.push_back({buffer, simplify(substitute(index, resolved_)), store});
  }

  Expr expr(const Expr& e) {
    if (!status_.ok()) return e;
    if (e->type.lanes != 1) return fail_expr("{} is already a vector", to_string(e));
    switch (e->kind) {
      case NodeKind::kIntImm:
      case NodeKind::kFloatImm:
        return e;
      case NodeKind::kVar: {
        const std::string& n = e->as<Var>()->name;
        if (auto it = affine_.find(n); it != affine_.end()) return ramp(e, it->second, lanes_);
        if (vector_vars_.count(n)) return var(n, e->type.with_lanes(lanes_));
        return e;
      }
      case NodeKind::kBinary: {
        const auto* b = e->as<Binary>();
        Expr x = expr(b->a), y = expr(b->b);
        if (!is_vec(x) && !is_vec(y)) return e;
        return std::make_shared<Binary>(e->type.with_lanes(lanes_), b->op, as_vec(x), as_vec(y));
      }
      case NodeKind::kCompare: {
        const auto* c = e->as<Compare>();
        Expr x = expr(c->a), y = expr(c->b);
        if (!is_vec(x) && !is_vec(y)) return e;
        return compare(c->op, as_vec(x), as_vec(y));
      }
      case NodeKind::kSelect: {
        const auto* s = e->as<Select>();
        Expr c = expr(s->cond), x = expr(s->t), y = expr(s->f);
        if (!is_vec(c) && !is_vec(x) && !is_vec(y)) return e;
        return select(c, as_vec(x), as_vec(y));
      }
      case NodeKind::kCast: {
        Expr x = expr(e->as<Cast>()->value);
        return is_vec(x) ? cast(e->type.with_lanes(lanes_), x) : e;
      }
      case NodeKind::kCall: {
        const auto* c = e->as<Call>();
        std::vector<Expr> args;
        bool any = false;
        for (const Expr& a : c->args) {
          args.push_back(expr(a));
          any |= is_vec(args.back());
        }
        if (!any) return e;
        for (Expr& a : args) a = as_vec(a);
        return call(c->op, std::move(args));
      }
      case NodeKind::kLoad: {
        const auto* l = e->as<Load>();
        record(l->buffer, l->index, false);
        std::optional<Expr> s = stride(l->index);
        if (s && is_zero(*s)) return e;  // the same element for every lane: broadcast later
        if (s) {
          const auto* c = (*s)->as<IntImm>();
          if (!(c && c->value == 1) && !options_.allow_gather) {
            return fail_expr("load {} has stride {} (gathers not allowed)", to_string(e),
                             to_string(*s));
          }
          return load(e->type.with_lanes(lanes_), l->buffer, ramp(l->index, *s, lanes_));
        }
        if (!options_.allow_gather) {
          return fail_expr("load index {} is not affine (gathers not allowed)", to_string(e));
        }
        return load(e->type.with_lanes(lanes_), l->buffer, as_vec(expr(l->index)));
      }
      default:
        return fail_expr("cannot widen {}", node_kind_name(e->kind));
    }
  }

  Stmt stmt(const Stmt& s) {
    if (!status_.ok()) return s;
    switch (s->kind) {
      case NodeKind::kStore: {
        const auto* st = s->as<Store>();
        record(st->buffer, st->index, true);
        std::optional<Expr> str = stride(st->index);
        if (!str) {
          fail("store index {} of '{}' is not affine", to_string(st->index), st->buffer);
          return s;
        }
        const auto* c = (*str)->as<IntImm>();
        if (c && c->value == 0) {
          fail("scalar accumulation: '{}'[{}] is stored every iteration", st->buffer,
               to_string(st->index));
          return s;
        }
        if (!c) {
          fail("store stride {} of '{}' is not a constant", to_string(*str), st->buffer);
          return s;
        }
        if (c->value != 1 && !options_.allow_scatter) {
          fail("store to '{}' has stride {} (scatters not allowed)", st->buffer, c->value);
          return s;
        }
        Expr value = as_vec(expr(st->value));
        return store(st->buffer, ramp(st->index, *str, lanes_), value);
      }
      case NodeKind::kLetStmt: {
        const auto* l = s->as<LetStmt>();
        if (l->value->type.lanes != 1) {
          fail("let {} is already a vector", l->var);
          return s;
        }
        resolved_[l->var] = substitute(l->value, resolved_);
        std::optional<Expr> str;
        if (l->value->type.is_int()) str = stride(l->value);
        Expr value = l->value;
        if (str && !is_zero(*str)) {
          affine_[l->var] = *str;  // stays scalar: lane 0
        } else {
          value = expr(l->value);
          if (is_vec(value)) vector_vars_.insert(l->var);
        }
        Stmt body = stmt(l->body);
        affine_.erase(l->var);
        vector_vars_.erase(l->var);
        resolved_.erase(l->var);
        return let(l->var, value, body);
      }
      case NodeKind::kFor: {
        const auto* f = s->as<For>();
        if (is_vec(expr(f->min)) || is_vec(expr(f->extent))) {
          fail("bounds of inner loop '{}' depend on '{}'", f->var, v_);
          return s;
        }
        inner_vars_.insert(f->var);
        Stmt body = stmt(f->body);
        return for_loop(f->var, f->min, f->extent, body, f->for_kind);
      }
      case NodeKind::kIfThenElse: {
        const auto* i = s->as<IfThenElse>();
        if (is_vec(expr(i->cond))) {
          fail("if condition {} depends on '{}'", to_string(i->cond), v_);
          return s;
        }
        Stmt t = stmt(i->then_case);
        Stmt e = i->else_case ? stmt(i->else_case) : nullptr;
        return if_then_else(i->cond, t, e);
      }
      case NodeKind::kBlock: {
        std::vector<Stmt> out;
        for (const Stmt& c : s->as<Block>()->stmts) out.push_back(stmt(c));
        return block(std::move(out));
      }
      default:
        fail("cannot vectorize a loop containing {}", node_kind_name(s->kind));
        return s;
    }
  }

  // A buffer the loop stores to must be accessed at one index only, which must not depend on a
  // loop nested inside: then each element is touched by exactly one iteration of v (the stride is
  // a nonzero constant), and running the iterations lane by lane keeps every element's order.
  Status check_dependences() {
    std::set<std::string> written;
    for (const Access& a : accesses_) {
      if (a.store) written.insert(a.buffer);
    }
    std::map<std::string, Expr> index_of;
    for (const Access& a : accesses_) {
      if (!written.count(a.buffer)) continue;
      if (uses_any(a.resolved_index, inner_vars_)) {
        return unsupported("kir vectorize '{}' by {}: '{}'[{}] depends on an inner loop",
                           v_, lanes_, a.buffer, to_string(a.resolved_index));
      }
      auto [it, fresh] = index_of.emplace(a.buffer, a.resolved_index);
      if (!fresh && !structural_equal(it->second, a.resolved_index)) {
        return unsupported(
            "kir vectorize '{}' by {}: possible loop-carried dependence on '{}' ([{}] and [{}])",
            v_, lanes_, a.buffer, to_string(it->second), to_string(a.resolved_index));
      }
    }
    return Status();
  }

  std::string v_;
  int lanes_;
  VectorizeOptions options_;
  Status status_;
  std::map<std::string, Expr> affine_;  ///< scalar names holding lane 0 -> stride per lane
  std::set<std::string> vector_vars_;   ///< lets that became vectors
  std::set<std::string> inner_vars_;    ///< loops nested inside the vectorized one
  std::map<std::string, Expr> resolved_;
  std::vector<Access> accesses_;
};

}  // namespace

Expected<Stmt> vectorize(const Stmt& s, const std::string& loop_var, int lanes,
                         const VectorizeOptions& options) {
  if (lanes < 2) return invalid_argument("kir vectorize '{}': lanes {} < 2", loop_var, lanes);
  return rewrite_loop(s, loop_var, [&](const For& f) -> Expected<Stmt> {
    return Vectorizer(loop_var, lanes, options).run(f);
  });
}

Expected<Function> vectorize(const Function& f, const std::string& loop_var, int lanes,
                             const VectorizeOptions& options) {
  TJ_ASSIGN_OR_RETURN(Stmt body, vectorize(f.body, loop_var, lanes, options));
  Function out = f;
  out.body = std::move(body);
  return out;
}

}  // namespace tierjit::kir
