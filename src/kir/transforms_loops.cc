// unroll, hoist_invariants and parallelize (transforms.h): loop transforms that keep the loop
// body's scalar code and only copy, move or re-label it.
#include <algorithm>
#include <optional>
#include <vector>

#include "kir/builder.h"
#include "kir/transforms.h"
#include "kir/transforms_internal.h"

namespace tierjit::kir {

using namespace transforms_detail;  // NOLINT: the shared transform helpers

namespace {

// Names bound anywhere inside a statement (loop variables and lets) and buffers it allocates.
class BindingFinder : public Visitor {
 public:
  using Visitor::visit;
  void visit(const For& node) override {
    names.insert(node.var);
    if (node.for_kind == ForKind::kParallel) has_parallel = true;
    Visitor::visit(node);
  }
  void visit(const LetStmt& node) override {
    names.insert(node.var);
    Visitor::visit(node);
  }
  void visit(const Allocate& node) override {
    allocated.insert(node.buffer);
    Visitor::visit(node);
  }
  void visit(const CallKernel& node) override {
    has_call = true;
    Visitor::visit(node);
  }
  std::set<std::string> names;
  std::set<std::string> allocated;
  bool has_parallel = false;
  bool has_call = false;  ///< a microkernel call: its accesses are not known to the analysis
};

// Every buffer access with its index, lets substituted (the index as a function of the loop
// variables only).
class AccessFinder : public Visitor {
 public:
  using Visitor::visit;
  void visit(const Load& node) override {
    accesses.push_back({node.buffer, substitute(node.index, resolved_), false});
    Visitor::visit(node);
  }
  void visit(const Store& node) override {
    accesses.push_back({node.buffer, substitute(node.index, resolved_), true});
    Visitor::visit(node);
  }
  void visit(const LetStmt& node) override {
    visit(node.value);
    resolved_[node.var] = substitute(node.value, resolved_);
    visit(node.body);
    resolved_.erase(node.var);
  }
  struct Access {
    std::string buffer;
    Expr index;
    bool store;
  };
  std::vector<Access> accesses;

 private:
  std::map<std::string, Expr> resolved_;
};

class LoadFinder : public Visitor {
 public:
  using Visitor::visit;
  void visit(const Load& node) override {
    buffers.insert(node.buffer);
    Visitor::visit(node);
  }
  std::set<std::string> buffers;
};

bool loads_any(const Expr& e, const std::set<std::string>& buffers) {
  LoadFinder f;
  f.visit(e);
  for (const std::string& b : f.buffers) {
    if (buffers.count(b)) return true;
  }
  return false;
}

// Worth a let of its own outside the loop: memory, math or a splat of a non-constant.
bool costly(const Expr& e) {
  switch (e->kind) {
    case NodeKind::kLoad:
    case NodeKind::kCall:
      return true;
    case NodeKind::kBroadcast: {
      NodeKind k = e->as<Broadcast>()->value->kind;
      return k != NodeKind::kIntImm && k != NodeKind::kFloatImm;
    }
    default:
      return false;
  }
}

// Hoists out of one For: leading invariant lets of its body, then costly invariant expressions
// of the statements every iteration runs (not those under an if or an inner loop).
class LoopHoister {
 public:
  LoopHoister(const For& f, std::set<std::string>* taken) : f_(f), taken_(taken) {
    BindingFinder b;
    b.visit(f.body);
    variant_ = b.names;
    variant_.insert(f.var);
    written_ = stored_buffers(f.body);
    written_.insert(b.allocated.begin(), b.allocated.end());  // not in scope outside the loop
  }

  Stmt run(const Stmt& self) {
    Stmt body = f_.body;
    std::vector<Stmt> kept_lets;  // variant lets of the leading chain, in order
    while (const auto* l = body->as<LetStmt>()) {
      std::set<std::string> inner = variant_;
      inner.erase(l->var);
      if (invariant(l->value, inner)) {
        hoisted_.push_back({l->var, l->value});
        variant_.erase(l->var);
      } else {
        kept_lets.push_back(body);
      }
      body = l->body;
    }
    body = unconditional(body);
    if (hoisted_.empty()) return self;
    // Rebuild the kept leading lets around the rest of the body.
    for (auto it = kept_lets.rbegin(); it != kept_lets.rend(); ++it) {
      const auto* l = (*it)->as<LetStmt>();
      body = let(l->var, l->value, body);
    }
    Stmt out = for_loop(f_.var, f_.min, f_.extent, body, f_.for_kind);
    for (auto it = hoisted_.rbegin(); it != hoisted_.rend(); ++it) {
      out = let(it->first, it->second, out);
    }
    // The hoisted values now run even when the loop runs zero times: guard unless it runs.
    const auto* ext = f_.extent->as<IntImm>();
    if (!(ext && ext->value > 0)) out = if_then_else(compare(CmpOp::kGt, f_.extent, imm(0)), out);
    return out;
  }

 private:
  bool invariant(const Expr& e, const std::set<std::string>& variant) const {
    return !uses_any(e, variant) && !loads_any(e, written_);
  }

  // Replaces costly invariant subexpressions by hoisted lets, in statements run every iteration.
  Stmt unconditional(const Stmt& s) {
    switch (s->kind) {
      case NodeKind::kStore: {
        const auto* st = s->as<Store>();
        Expr i = expr(st->index), v = expr(st->value);
        if (i == st->index && v == st->value) return s;
        return store(st->buffer, i, v);
      }
      case NodeKind::kLetStmt: {
        const auto* l = s->as<LetStmt>();
        Expr v = expr(l->value);
        Stmt b = unconditional(l->body);
        if (v == l->value && b == l->body) return s;
        return let(l->var, v, b);
      }
      case NodeKind::kBlock: {
        std::vector<Stmt> out;
        bool changed = false;
        for (const Stmt& c : s->as<Block>()->stmts) {
          out.push_back(unconditional(c));
          changed |= out.back() != c;
        }
        return changed ? block(std::move(out)) : s;
      }
      default:
        return s;
    }
  }

  Expr expr(const Expr& e) {
    if (costly(e) && invariant(e, variant_)) {
      for (const auto& [name, value] : hoisted_) {
        if (structural_equal(value, e)) return var(name, e->type);
      }
      std::string name;
      for (int k = 0; name.empty() || taken_->count(name); ++k) {
        name = f_.var + ".inv" + std::to_string(k);
      }
      taken_->insert(name);
      hoisted_.push_back({name, e});
      return var(name, e->type);
    }
    return rebuild(e);
  }

  // `e` with each direct child replaced by expr(child).
  Expr rebuild(const Expr& e) {
    switch (e->kind) {
      case NodeKind::kBinary: {
        const auto* b = e->as<Binary>();
        Expr x = expr(b->a), y = expr(b->b);
        return x == b->a && y == b->b ? e : std::make_shared<Binary>(e->type, b->op, x, y);
      }
      case NodeKind::kCompare: {
        const auto* c = e->as<Compare>();
        Expr x = expr(c->a), y = expr(c->b);
        return x == c->a && y == c->b ? e : std::make_shared<Compare>(e->type, c->op, x, y);
      }
      case NodeKind::kSelect: {
        const auto* s = e->as<Select>();
        Expr c = expr(s->cond), x = expr(s->t), y = expr(s->f);
        return c == s->cond && x == s->t && y == s->f ? e
                                                      : std::make_shared<Select>(e->type, c, x, y);
      }
      case NodeKind::kCast: {
        Expr v = expr(e->as<Cast>()->value);
        return v == e->as<Cast>()->value ? e : std::make_shared<Cast>(e->type, v);
      }
      case NodeKind::kLoad: {
        const auto* l = e->as<Load>();
        Expr i = expr(l->index);
        return i == l->index ? e : std::make_shared<Load>(e->type, l->buffer, i);
      }
      case NodeKind::kBroadcast: {
        Expr v = expr(e->as<Broadcast>()->value);
        return v == e->as<Broadcast>()->value ? e : std::make_shared<Broadcast>(e->type, v);
      }
      case NodeKind::kRamp: {
        const auto* r = e->as<Ramp>();
        Expr b = expr(r->base), s = expr(r->stride);
        return b == r->base && s == r->stride ? e : std::make_shared<Ramp>(e->type, b, s);
      }
      case NodeKind::kCall: {
        const auto* c = e->as<Call>();
        std::vector<Expr> args;
        bool changed = false;
        for (const Expr& a : c->args) {
          args.push_back(expr(a));
          changed |= args.back() != a;
        }
        return changed ? std::make_shared<Call>(e->type, c->op, std::move(args)) : e;
      }
      case NodeKind::kShuffle: {
        const auto* sh = e->as<Shuffle>();
        Expr v = expr(sh->vector);
        return v == sh->vector ? e : std::make_shared<Shuffle>(e->type, v, sh->indices);
      }
      default:
        return e;
    }
  }

  const For& f_;
  std::set<std::string>* taken_;  ///< names bound anywhere in the whole statement
  std::set<std::string> variant_;
  std::set<std::string> written_;
  std::vector<std::pair<std::string, Expr>> hoisted_;
};

class Hoister : public Mutator {
 public:
  explicit Hoister(const Stmt& root) {
    BindingFinder b;
    b.visit(root);
    taken_ = std::move(b.names);
  }
  using Mutator::mutate;

 protected:
  Stmt visit(const For& node, const Stmt& self) override {
    Stmt inner = Mutator::visit(node, self);  // inner loops first
    return LoopHoister(*inner->as<For>(), &taken_).run(inner);
  }

 private:
  std::set<std::string> taken_;
};

// Constant stride per step of `v` of scalar integer `e`; nullopt when `e` is not affine in v with
// a constant stride.
std::optional<int64_t> const_stride(const Expr& e, const std::string& v) {
  if (e->as<IntImm>()) return 0;
  if (const auto* x = e->as<Var>()) return x->name == v ? 1 : 0;
  const auto* b = e->as<Binary>();
  if (b && e->type.is_int() &&
      (b->op == BinaryOp::kAdd || b->op == BinaryOp::kSub || b->op == BinaryOp::kMul)) {
    std::optional<int64_t> sa = const_stride(b->a, v), sb = const_stride(b->b, v);
    if (!sa || !sb) return std::nullopt;
    if (b->op == BinaryOp::kAdd) return *sa + *sb;
    if (b->op == BinaryOp::kSub) return *sa - *sb;
    if (*sa == 0 && *sb == 0) return 0;
    if (*sa == 0 && b->a->as<IntImm>()) return b->a->as<IntImm>()->value * *sb;
    if (*sb == 0 && b->b->as<IntImm>()) return b->b->as<IntImm>()->value * *sa;
    return std::nullopt;
  }
  if (uses_any(e, {v})) return std::nullopt;
  return 0;
}

// An integer expression as constant + sum of coefficient * atom (atoms keyed by their text);
// nullopt for a non-integer expression.
struct LinearForm {
  int64_t constant = 0;
  std::map<std::string, int64_t> terms;
};
void add_linear(const Expr& e, int64_t scale, LinearForm& out) {
  if (const auto* c = e->as<IntImm>()) {
    out.constant += scale * c->value;
    return;
  }
  if (const auto* b = e->as<Binary>()) {
    if (b->op == BinaryOp::kAdd || b->op == BinaryOp::kSub) {
      add_linear(b->a, scale, out);
      add_linear(b->b, b->op == BinaryOp::kAdd ? scale : -scale, out);
      return;
    }
    if (b->op == BinaryOp::kMul) {
      if (const auto* c = b->b->as<IntImm>()) return add_linear(b->a, scale * c->value, out);
      if (const auto* c = b->a->as<IntImm>()) return add_linear(b->b, scale * c->value, out);
    }
  }
  out.terms[to_string(e)] += scale;
}
// a - b when it is a constant (every non-constant term cancels).
std::optional<int64_t> constant_difference(const Expr& a, const Expr& b) {
  LinearForm f;
  add_linear(simplify(a), 1, f);
  add_linear(simplify(b), -1, f);
  for (const auto& [atom, coef] : f.terms) {
    if (coef != 0) return std::nullopt;
  }
  return f.constant;
}

// The elements one access touches: base index plus [lo, hi] (a contiguous or strided vector).
struct Footprint {
  Expr base;
  int64_t lo = 0, hi = 0;
};
std::optional<Footprint> footprint(const Expr& index) {
  if (index->type.lanes == 1) return Footprint{index, 0, 0};
  const auto* r = index->as<Ramp>();
  const auto* rs = r ? r->stride->as<IntImm>() : nullptr;
  if (!rs) return std::nullopt;
  int64_t last = rs->value * (index->type.lanes - 1);
  return Footprint{r->base, std::min<int64_t>(0, last), std::max<int64_t>(0, last)};
}

// True when the accesses of one buffer (indices with lets resolved) from different iterations of
// `v` cannot touch the same element: one index only, or indices affine in v with one constant
// stride S whose footprints in one iteration span fewer than |S| elements.
bool iterations_disjoint(const std::vector<Expr>& indices, const std::string& v) {
  bool same = true;
  for (const Expr& i : indices) same &= structural_equal(simplify(i), simplify(indices[0]));
  if (same) return true;
  std::optional<int64_t> stride;
  int64_t lo = 0, hi = 0;
  Expr base0;
  for (const Expr& i : indices) {
    std::optional<Footprint> fp = footprint(i);
    if (!fp) return false;
    std::optional<int64_t> s = const_stride(fp->base, v);
    if (!s || *s == 0 || (stride && *s != *stride)) return false;
    stride = s;
    if (!base0) base0 = fp->base;
    std::optional<int64_t> d = constant_difference(fp->base, base0);
    if (!d) return false;
    lo = std::min(lo, *d + fp->lo);
    hi = std::max(hi, *d + fp->hi);
  }
  return hi - lo < (*stride < 0 ? -*stride : *stride);
}

Expected<Function> with_body(const Function& f, Expected<Stmt> body) {
  if (!body.ok()) return body.status();
  Function out = f;
  out.body = std::move(body).value();
  return out;
}

}  // namespace

// ---- unroll ----

Expected<Stmt> unroll(const Stmt& s, const std::string& loop_var, int64_t factor) {
  if (factor < 0) return invalid_argument("kir unroll of '{}': factor {} < 0", loop_var, factor);
  if (factor == 0) {
    return rewrite_loop(s, loop_var, [&](const For& f) -> Expected<Stmt> {
      Expr ext = simplify(f.extent);
      const auto* c = ext->as<IntImm>();
      if (!c) return unsupported("kir unroll of '{}': extent {} is not constant", loop_var,
                                 to_string(f.extent));
      if (c->value > kMaxFullUnroll) {
        return unsupported("kir unroll of '{}': extent {} > {}", loop_var, c->value,
                           kMaxFullUnroll);
      }
      std::vector<Stmt> copies;
      for (int64_t k = 0; k < c->value; ++k) {
        copies.push_back(simplify(substitute(f.body, {{loop_var, simplify(add(f.min, imm(k)))}})));
      }
      return sequence(copies);
    });
  }
  TJ_ASSIGN_OR_RETURN(Stmt st, split(s, loop_var, factor));
  std::string inner = loop_var + ".i";
  Expected<Stmt> r = unroll(st, inner, 0);
  // A constant extent below the factor leaves only the tail: nothing to unroll.
  if (!r.ok() && r.status().code() == StatusCode::kUnsupported && factor <= kMaxFullUnroll) {
    return st;
  }
  return r;
}

Expected<Function> unroll(const Function& f, const std::string& loop_var, int64_t factor) {
  return with_body(f, unroll(f.body, loop_var, factor));
}

// ---- hoist_invariants ----

Stmt hoist_invariants(const Stmt& s) { return Hoister(s).mutate(s); }
Function hoist_invariants(const Function& f) {
  Function out = f;
  out.body = hoist_invariants(f.body);
  return out;
}

// ---- parallelize ----

Expected<Stmt> parallelize(const Stmt& s, const std::string& loop_var) {
  return rewrite_loop(s, loop_var, [&](const For& f) -> Expected<Stmt> {
    BindingFinder b;
    b.visit(f.body);
    if (b.has_parallel) {
      return unsupported("kir parallelize '{}': a loop inside is already parallel", loop_var);
    }
    if (b.has_call)  // lowerings that call microkernels mark their parallel loops themselves
      return unsupported("kir parallelize '{}': the body calls a microkernel", loop_var);
    AccessFinder a;
    a.visit(f.body);
    for (const auto& acc : a.accesses) {
      if (!acc.store || b.allocated.count(acc.buffer)) continue;
      if (!uses_any(acc.index, {loop_var})) {
        return unsupported("kir parallelize '{}': every iteration stores to '{}'[{}] (a race)",
                           loop_var, acc.buffer, to_string(acc.index));
      }
    }
    std::map<std::string, std::vector<Expr>> indices;
    std::set<std::string> written = stored_buffers(f.body);
    for (const auto& acc : a.accesses) {
      if (written.count(acc.buffer) && !b.allocated.count(acc.buffer)) {
        indices[acc.buffer].push_back(acc.index);
      }
    }
    for (const auto& [buffer, idx] : indices) {
      if (!iterations_disjoint(idx, loop_var)) {
        return unsupported(
            "kir parallelize '{}': iterations may share elements of '{}' (e.g. [{}] and [{}])",
            loop_var, buffer, to_string(idx.front()), to_string(idx.back()));
      }
    }
    return for_loop(f.var, f.min, f.extent, f.body, ForKind::kParallel);
  });
}

Expected<Function> parallelize(const Function& f, const std::string& loop_var) {
  return with_body(f, parallelize(f.body, loop_var));
}

}  // namespace tierjit::kir
