// Loop transforms (transforms.h): simplify (integer constant folding and identities) and split,
// plus the shared helpers of transforms_internal.h. vectorize lives in transforms_vectorize.cc,
// the other loop transforms in transforms_loops.cc.
#include "kir/transforms.h"

#include <limits>

#include "kir/builder.h"
#include "kir/transforms_internal.h"

namespace tierjit::kir {

namespace transforms_detail {

namespace {

class Substituter : public Mutator {
 public:
  explicit Substituter(const std::map<std::string, Expr>& m) : m_(m) {}
  using Mutator::mutate;

 protected:
  Expr visit(const Var& node, const Expr& self) override {
    auto it = m_.find(node.name);
    return it == m_.end() ? self : it->second;
  }

 private:
  const std::map<std::string, Expr>& m_;
};

class UseFinder : public Visitor {
 public:
  explicit UseFinder(const std::set<std::string>& names) : names_(names) {}
  using Visitor::visit;
  void visit(const Var& node) override { found |= names_.count(node.name) > 0; }
  bool found = false;

 private:
  const std::set<std::string>& names_;
};

class StoreFinder : public Visitor {
 public:
  using Visitor::visit;
  void visit(const Store& node) override {
    buffers.insert(node.buffer);
    Visitor::visit(node);
  }
  // A microkernel may write any buffer it is given.
  void visit(const CallKernel& node) override {
    buffers.insert(node.buffers.begin(), node.buffers.end());
    Visitor::visit(node);
  }
  std::set<std::string> buffers;
};

class LoopRewriter : public Mutator {
 public:
  LoopRewriter(const std::string& v, const std::function<Expected<Stmt>(const For&)>& fn)
      : v_(v), fn_(fn) {}
  using Mutator::mutate;
  bool found = false;
  Status status;

 protected:
  Stmt visit(const For& node, const Stmt& self) override {
    if (found) return self;
    if (node.var != v_) return Mutator::visit(node, self);
    found = true;
    Expected<Stmt> r = fn_(node);
    if (!r.ok()) {
      status = r.status();
      return self;
    }
    return std::move(r).value();
  }

 private:
  const std::string& v_;
  const std::function<Expected<Stmt>(const For&)>& fn_;
};

}  // namespace

Expr substitute(const Expr& e, const std::map<std::string, Expr>& m) {
  if (m.empty()) return e;
  return Substituter(m).mutate(e);
}
Stmt substitute(const Stmt& s, const std::map<std::string, Expr>& m) {
  if (m.empty()) return s;
  return Substituter(m).mutate(s);
}

bool uses_any(const Expr& e, const std::set<std::string>& names) {
  UseFinder u(names);
  u.visit(e);
  return u.found;
}
bool uses_any(const Stmt& s, const std::set<std::string>& names) {
  UseFinder u(names);
  u.visit(s);
  return u.found;
}

std::set<std::string> stored_buffers(const Stmt& s) {
  StoreFinder f;
  f.visit(s);
  return std::move(f.buffers);
}

Expected<Stmt> rewrite_loop(const Stmt& s, const std::string& loop_var,
                            const std::function<Expected<Stmt>(const For&)>& fn) {
  LoopRewriter r(loop_var, fn);
  Stmt out = r.mutate(s);
  if (!r.found) return unsupported("kir transforms: no loop over '{}'", loop_var);
  if (!r.status.ok()) return r.status;
  return out;
}

Stmt sequence(const std::vector<Stmt>& stmts) {
  std::vector<Stmt> kept;
  for (const Stmt& s : stmts) {
    if (const auto* f = s->as<For>()) {
      const auto* ext = f->extent->as<IntImm>();
      if (ext && ext->value <= 0) continue;
    }
    kept.push_back(s);
  }
  if (kept.size() == 1) return kept[0];
  return block(std::move(kept));
}

}  // namespace transforms_detail

using namespace transforms_detail;  // NOLINT: this file implements them

// ---- simplify ----

namespace {

bool is_unsigned(DType t) { return dtype_is_integer(t) && !dtype_is_signed(t); }

// `v` reduced to the width of `t` (sign- or zero-extended back to 64 bits, as IntImm stores it).
int64_t wrap(uint64_t v, DType t) {
  switch (t) {
    case DType::kInt8:
      return static_cast<int8_t>(v);
    case DType::kUInt8:
      return static_cast<uint8_t>(v);
    case DType::kInt16:
      return static_cast<int16_t>(v);
    case DType::kUInt16:
      return static_cast<uint16_t>(v);
    case DType::kInt32:
      return static_cast<int32_t>(v);
    case DType::kUInt32:
      return static_cast<uint32_t>(v);
    case DType::kBool:
      return v != 0;
    default:
      return static_cast<int64_t>(v);
  }
}

int64_t min_of(DType t) {
  switch (t) {
    case DType::kInt8:
      return std::numeric_limits<int8_t>::min();
    case DType::kInt16:
      return std::numeric_limits<int16_t>::min();
    case DType::kInt32:
      return std::numeric_limits<int32_t>::min();
    default:
      return std::numeric_limits<int64_t>::min();
  }
}

std::optional<int64_t> eval(BinaryOp op, int64_t a, int64_t b, DType t) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  bool u = is_unsigned(t);
  switch (op) {
    case BinaryOp::kAdd:
      return wrap(ua + ub, t);
    case BinaryOp::kSub:
      return wrap(ua - ub, t);
    case BinaryOp::kMul:
      return wrap(ua * ub, t);
    case BinaryOp::kDiv:
    case BinaryOp::kMod:
      if (b == 0 || (!u && b == -1 && a == min_of(t))) return std::nullopt;
      if (u) return wrap(op == BinaryOp::kDiv ? ua / ub : ua % ub, t);
      return wrap(static_cast<uint64_t>(op == BinaryOp::kDiv ? a / b : a % b), t);
    case BinaryOp::kMin:
      return u ? (ua < ub ? a : b) : std::min(a, b);
    case BinaryOp::kMax:
      return u ? (ua > ub ? a : b) : std::max(a, b);
    case BinaryOp::kAnd:
      return (a != 0) && (b != 0);
    case BinaryOp::kOr:
      return (a != 0) || (b != 0);
  }
  return std::nullopt;
}

bool eval_cmp(CmpOp op, int64_t a, int64_t b, bool u) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case CmpOp::kEq:
      return a == b;
    case CmpOp::kNe:
      return a != b;
    case CmpOp::kLt:
      return u ? ua < ub : a < b;
    case CmpOp::kLe:
      return u ? ua <= ub : a <= b;
    case CmpOp::kGt:
      return u ? ua > ub : a > b;
    case CmpOp::kGe:
      return u ? ua >= ub : a >= b;
  }
  return false;
}

const IntImm* int_const(const Expr& e) { return e ? e->as<IntImm>() : nullptr; }

Expr make_binary(Type t, BinaryOp op, Expr a, Expr b) {
  return std::make_shared<Binary>(t, op, std::move(a), std::move(b));
}

Expr fold_binary(Type t, BinaryOp op, const Expr& a, const Expr& b, const Expr& self);

Expr fold_binary_new(Type t, BinaryOp op, const Expr& a, const Expr& b) {
  return fold_binary(t, op, a, b, nullptr);
}

// Folds `a op b` of type t; `self` is the node when it already exists (returned unchanged when
// nothing folds), else a new node is built.
Expr fold_binary(Type t, BinaryOp op, const Expr& a, const Expr& b, const Expr& self) {
  auto keep = [&] { return self ? self : make_binary(t, op, a, b); };
  if (!t.is_int() && !t.is_bool()) return keep();
  const IntImm* x = int_const(a);
  const IntImm* y = int_const(b);
  if (x && y) {
    std::optional<int64_t> v = eval(op, x->value, y->value, t.dtype);
    return v ? imm(*v, t) : keep();
  }
  bool commutative = op == BinaryOp::kAdd || op == BinaryOp::kMul || op == BinaryOp::kMin ||
                     op == BinaryOp::kMax || op == BinaryOp::kAnd || op == BinaryOp::kOr;
  if (x && commutative) return fold_binary_new(t, op, b, a);
  if (y) {
    int64_t c = y->value;
    const auto* inner = a->as<Binary>();
    const IntImm* ic = inner ? int_const(inner->b) : nullptr;
    switch (op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub: {
        if (c == 0) return a;
        // (x + c1) +- c2 -> x + (c1 +- c2)
        if (ic && inner->op == BinaryOp::kAdd) {
          int64_t s = *eval(op, ic->value, c, t.dtype);
          return fold_binary_new(t, BinaryOp::kAdd, inner->a, imm(s, t));
        }
        break;
      }
      case BinaryOp::kMul:
        if (c == 1) return a;
        if (c == 0 && t.is_int()) return imm(0, t);
        if (ic && inner->op == BinaryOp::kMul) {
          return fold_binary_new(t, BinaryOp::kMul, inner->a,
                                 imm(*eval(BinaryOp::kMul, ic->value, c, t.dtype), t));
        }
        break;
      case BinaryOp::kDiv:
        if (c == 1) return a;
        break;
      case BinaryOp::kMod:
        if (c == 1 || (c == -1 && !is_unsigned(t.dtype))) return imm(0, t);
        break;
      case BinaryOp::kAnd:
        return c ? a : imm(0, t);
      case BinaryOp::kOr:
        return c ? imm(1, t) : a;
      default:
        break;
    }
  }
  if (t.is_int() && op == BinaryOp::kSub) {
    // (x + c) - x -> c and x - (x + c) -> -c
    const auto* l = a->as<Binary>();
    const auto* r = b->as<Binary>();
    if (l && l->op == BinaryOp::kAdd && int_const(l->b) && structural_equal(l->a, b)) return l->b;
    if (r && r->op == BinaryOp::kAdd && int_const(r->b) && structural_equal(r->a, a)) {
      return imm(*eval(BinaryOp::kSub, 0, int_const(r->b)->value, t.dtype), t);
    }
  }
  if (t.is_int() && structural_equal(a, b)) {
    if (op == BinaryOp::kSub) return imm(0, t);
    if (op == BinaryOp::kMin || op == BinaryOp::kMax) return a;
  }
  return keep();
}

class Simplifier : public Mutator {
 public:
  using Mutator::mutate;

 protected:
  Expr visit(const Binary& node, const Expr& self) override {
    Expr m = mutate_children(node, self);
    const auto* b = m->as<Binary>();
    return fold_binary(b->type, b->op, b->a, b->b, m);
  }
  Expr visit(const Compare& node, const Expr& self) override {
    Expr m = mutate_children(node, self);
    const auto* c = m->as<Compare>();
    const IntImm* x = int_const(c->a);
    const IntImm* y = int_const(c->b);
    if (x && y) {
      return imm(eval_cmp(c->op, x->value, y->value, is_unsigned(c->a->type.dtype)), c->type);
    }
    return m;
  }
  Expr visit(const Select& node, const Expr& self) override {
    Expr m = mutate_children(node, self);
    const auto* s = m->as<Select>();
    if (const IntImm* c = int_const(s->cond)) return c->value ? s->t : s->f;
    return m;
  }
  Expr visit(const Cast& node, const Expr& self) override {
    Expr m = mutate_children(node, self);
    const auto* c = m->as<Cast>();
    const IntImm* x = int_const(c->value);
    if (x && (c->type.is_int() || c->type.is_bool())) {
      return imm(wrap(static_cast<uint64_t>(x->value), c->type.dtype), c->type);
    }
    if (c->value->type == c->type) return c->value;
    return m;
  }

  Stmt visit(const For& node, const Stmt& self) override {
    Stmt m = mutate_children(node, self);
    const auto* f = m->as<For>();
    if (const IntImm* ext = int_const(f->extent)) {
      if (ext->value <= 0) return block({});
      if (ext->value == 1) return mutate(let(f->var, f->min, f->body));
    }
    return m;
  }
  Stmt visit(const LetStmt& node, const Stmt& self) override {
    Expr v = mutate(node.value);
    NodeKind k = v->kind;
    if (k == NodeKind::kIntImm || k == NodeKind::kFloatImm || k == NodeKind::kVar) {
      return mutate(substitute(node.body, {{node.var, v}}));  // propagate constants and copies
    }
    Stmt b = mutate(node.body);
    if (v == node.value && b == node.body) return self;
    return let(node.var, v, b);
  }
  Stmt visit(const IfThenElse& node, const Stmt& self) override {
    Stmt m = mutate_children(node, self);
    const auto* i = m->as<IfThenElse>();
    if (const IntImm* c = int_const(i->cond)) {
      if (c->value) return i->then_case;
      return i->else_case ? i->else_case : block({});
    }
    return m;
  }
  Stmt visit(const Block& node, const Stmt& self) override {
    Stmt m = mutate_children(node, self);
    const auto* b = m->as<Block>();
    bool flat = true;
    for (const Stmt& s : b->stmts) flat &= s->kind != NodeKind::kBlock;
    if (flat) return m;
    std::vector<Stmt> out;
    for (const Stmt& s : b->stmts) {
      if (const auto* inner = s->as<Block>()) {
        out.insert(out.end(), inner->stmts.begin(), inner->stmts.end());
      } else {
        out.push_back(s);
      }
    }
    if (out.size() == 1) return out[0];
    return block(std::move(out));
  }
};

}  // namespace

Expr simplify(const Expr& e) { return Simplifier().mutate(e); }
Stmt simplify(const Stmt& s) { return Simplifier().mutate(s); }
Function simplify(const Function& f) {
  Function out = f;
  out.body = simplify(f.body);
  return out;
}

// ---- split ----

Expected<Stmt> split(const Stmt& s, const std::string& loop_var, int64_t factor,
                     TailStrategy tail) {
  if (factor < 1) return invalid_argument("kir split of '{}': factor {} < 1", loop_var, factor);
  return rewrite_loop(s, loop_var, [&](const For& f) -> Expected<Stmt> {
    std::string vo = loop_var + ".o", vi = loop_var + ".i";
    Expr F = imm(factor);
    Expr rel = simplify(add(mul(var(vo), F), var(vi)));
    Stmt body = substitute(f.body, {{loop_var, simplify(add(rel, f.min))}});
    const IntImm* cext = int_const(f.extent);
    if (tail == TailStrategy::kGuard) {
      Expr outer_ext = simplify(div(add(f.extent, imm(factor - 1)), F));
      if (!(cext && cext->value % factor == 0)) body = if_then_else(lt(rel, f.extent), body);
      Stmt inner = for_loop(vi, imm(0), F, body);
      return sequence({for_loop(vo, imm(0), outer_ext, inner, f.for_kind)});
    }
    Expr outer_ext = simplify(div(f.extent, F));
    Stmt inner = for_loop(vi, imm(0), F, body);
    Stmt outer = for_loop(vo, imm(0), outer_ext, inner, f.for_kind);
    Stmt rest = for_loop(loop_var, simplify(add(f.min, mul(outer_ext, F))),
                         simplify(mod(f.extent, F)), f.body);
    return sequence({outer, rest});
  });
}

Expected<Function> split(const Function& f, const std::string& loop_var, int64_t factor,
                         TailStrategy tail) {
  TJ_ASSIGN_OR_RETURN(Stmt body, split(f.body, loop_var, factor, tail));
  Function out = f;
  out.body = std::move(body);
  return out;
}

}  // namespace tierjit::kir
