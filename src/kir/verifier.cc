// Kernel-IR verifier: scoping of names and buffers, operand types and lanes. Codegen runs it
// first, so a malformed kernel becomes a Status instead of bad machine code.
#include <unordered_map>

#include "kir/kir.h"

namespace tierjit::kir {

namespace {

class Verifier {
 public:
  Status function(const Function& f) {
    for (const BufferParam& b : f.buffers) {
      if (!dtype_is_float(b.dtype) && !dtype_is_integer(b.dtype) && b.dtype != DType::kBool) {
        return fail("buffer '{}' has unsupported dtype {}", b.name, dtype_name(b.dtype));
      }
      if (!buffers_.emplace(b.name, b.dtype).second)
        return fail("buffer '{}' declared twice", b.name);
    }
    for (const std::string& d : f.dims) {
      if (!vars_.emplace(d, i64()).second) return fail("dim '{}' declared twice", d);
    }
    if (!f.body) return fail("kernel '{}' has no body", f.name);
    return stmt(f.body);
  }

 private:
  template <class... Args>
  Status fail(fmt::format_string<Args...> fmt_str, Args&&... args) {
    return invalid_argument("kir verifier: {}", fmt::format(fmt_str, std::forward<Args>(args)...));
  }

  Status index(const Expr& idx, int lanes, std::string_view what) {
    TJ_RETURN_IF_ERROR(expr(idx));
    if (!idx->type.is_int()) return fail("{}: index {} is not an integer", what, to_string(idx));
    if (idx->type.lanes != lanes) {
      return fail("{}: index has {} lanes, value {}", what, idx->type.lanes, lanes);
    }
    return Status();
  }

  Status expr(const Expr& e) {
    if (!e) return fail("null expression");
    Type t = e->type;
    if (t.lanes < 1) return fail("{}: {} lanes", to_string(e), t.lanes);
    switch (e->kind) {
      case NodeKind::kIntImm:
        if (!t.is_int() && !t.is_bool())
          return fail("integer constant of type {}", dtype_name(t.dtype));
        return Status();
      case NodeKind::kFloatImm:
        if (!t.is_float()) return fail("float constant of type {}", dtype_name(t.dtype));
        return Status();
      case NodeKind::kVar: {
        auto it = vars_.find(e->as<Var>()->name);
        if (it == vars_.end()) return fail("unbound variable '{}'", e->as<Var>()->name);
        if (!(it->second == t)) return fail("variable '{}' used with another type", it->first);
        return Status();
      }
      case NodeKind::kBinary: {
        const auto* b = e->as<Binary>();
        TJ_RETURN_IF_ERROR(expr(b->a));
        TJ_RETURN_IF_ERROR(expr(b->b));
        if (!(b->a->type == t) || !(b->b->type == t)) {
          return fail("operand types differ in {}", to_string(e));
        }
        bool logical = b->op == BinaryOp::kAnd || b->op == BinaryOp::kOr;
        if (logical != t.is_bool()) return fail("operator on wrong type in {}", to_string(e));
        if (b->op == BinaryOp::kMod && t.is_float()) return fail("float % in {}", to_string(e));
        return Status();
      }
      case NodeKind::kCompare: {
        const auto* c = e->as<Compare>();
        TJ_RETURN_IF_ERROR(expr(c->a));
        TJ_RETURN_IF_ERROR(expr(c->b));
        if (!(c->a->type == c->b->type)) return fail("operand types differ in {}", to_string(e));
        if (!(t == boolean(c->a->type.lanes))) return fail("comparison result must be bool");
        return Status();
      }
      case NodeKind::kSelect: {
        const auto* s = e->as<Select>();
        TJ_RETURN_IF_ERROR(expr(s->cond));
        TJ_RETURN_IF_ERROR(expr(s->t));
        TJ_RETURN_IF_ERROR(expr(s->f));
        if (!s->cond->type.is_bool() ||
            (s->cond->type.lanes != 1 && s->cond->type.lanes != t.lanes)) {
          return fail("select condition must be bool in {}", to_string(e));
        }
        if (!(s->t->type == t) || !(s->f->type == t))
          return fail("select arms differ in {}", to_string(e));
        return Status();
      }
      case NodeKind::kShuffle: {
        const auto* sh = e->as<Shuffle>();
        TJ_RETURN_IF_ERROR(expr(sh->vector));
        const Type& vt = sh->vector->type;
        if (sh->indices.empty() || static_cast<int>(sh->indices.size()) != t.lanes ||
            !(vt.element() == t.element()))
          return fail("shuffle type does not match its indices in {}", to_string(e));
        for (int i : sh->indices)
          if (i < 0 || i >= vt.lanes) return fail("shuffle index {} out of range in {}", i, to_string(e));
        return Status();
      }
      case NodeKind::kCast: {
        const auto* c = e->as<Cast>();
        TJ_RETURN_IF_ERROR(expr(c->value));
        if (c->value->type.lanes != t.lanes) return fail("cast changes lanes in {}", to_string(e));
        return Status();
      }
      case NodeKind::kLoad: {
        const auto* l = e->as<Load>();
        auto it = buffers_.find(l->buffer);
        if (it == buffers_.end()) return fail("load from unknown buffer '{}'", l->buffer);
        if (it->second != t.dtype)
          return fail("load of {} from {} buffer '{}'", dtype_name(t.dtype), dtype_name(it->second),
                      l->buffer);
        return index(l->index, t.lanes, "load");
      }
      case NodeKind::kBroadcast: {
        const auto* b = e->as<Broadcast>();
        TJ_RETURN_IF_ERROR(expr(b->value));
        if (!(b->value->type == t.element()))
          return fail("broadcast of a non-scalar or other type");
        return Status();
      }
      case NodeKind::kRamp: {
        const auto* r = e->as<Ramp>();
        TJ_RETURN_IF_ERROR(expr(r->base));
        TJ_RETURN_IF_ERROR(expr(r->stride));
        if (!t.is_int() || !(r->base->type == t.element()) || !(r->stride->type == t.element())) {
          return fail("ramp needs integer scalar base and stride of its element type");
        }
        return Status();
      }
      case NodeKind::kCall: {
        const auto* c = e->as<Call>();
        if (static_cast<int>(c->args.size()) != intrinsic_arity(c->op)) {
          return fail("{} takes {} arguments, got {}", intrinsic_name(c->op),
                      intrinsic_arity(c->op), c->args.size());
        }
        for (const Expr& a : c->args) {
          TJ_RETURN_IF_ERROR(expr(a));
          if (!(a->type == t)) return fail("argument type differs in {}", to_string(e));
        }
        if (!t.is_float() && c->op != Intrinsic::kAbs)
          return fail("{} of non-float", intrinsic_name(c->op));
        return Status();
      }
      default:
        return fail("expression of kind {} where an expression is expected",
                    node_kind_name(e->kind));
    }
  }

  Status bind(const std::string& name, Type t) {
    if (vars_.count(name)) return fail("'{}' is bound twice (shadowing is not allowed)", name);
    vars_.emplace(name, t);
    return Status();
  }

  Status stmt(const Stmt& s) {
    if (!s) return fail("null statement");
    switch (s->kind) {
      case NodeKind::kFor: {
        const auto* f = s->as<For>();
        TJ_RETURN_IF_ERROR(expr(f->min));
        TJ_RETURN_IF_ERROR(expr(f->extent));
        if (!(f->min->type == i64()) || !(f->extent->type == i64())) {
          return fail("loop '{}' bounds must be scalar int64", f->var);
        }
        TJ_RETURN_IF_ERROR(bind(f->var, i64()));
        TJ_RETURN_IF_ERROR(stmt(f->body));
        vars_.erase(f->var);
        return Status();
      }
      case NodeKind::kStore: {
        const auto* st = s->as<Store>();
        auto it = buffers_.find(st->buffer);
        if (it == buffers_.end()) return fail("store to unknown buffer '{}'", st->buffer);
        TJ_RETURN_IF_ERROR(expr(st->value));
        if (st->value->type.dtype != it->second) {
          return fail("store of {} to {} buffer '{}'", dtype_name(st->value->type.dtype),
                      dtype_name(it->second), st->buffer);
        }
        return index(st->index, st->value->type.lanes, "store");
      }
      case NodeKind::kLetStmt: {
        const auto* l = s->as<LetStmt>();
        TJ_RETURN_IF_ERROR(expr(l->value));
        TJ_RETURN_IF_ERROR(bind(l->var, l->value->type));
        TJ_RETURN_IF_ERROR(stmt(l->body));
        vars_.erase(l->var);
        return Status();
      }
      case NodeKind::kIfThenElse: {
        const auto* i = s->as<IfThenElse>();
        TJ_RETURN_IF_ERROR(expr(i->cond));
        if (!(i->cond->type == boolean())) return fail("if condition must be a scalar bool");
        TJ_RETURN_IF_ERROR(stmt(i->then_case));
        if (i->else_case) TJ_RETURN_IF_ERROR(stmt(i->else_case));
        return Status();
      }
      case NodeKind::kBlock:
        for (const Stmt& c : s->as<Block>()->stmts) TJ_RETURN_IF_ERROR(stmt(c));
        return Status();
      case NodeKind::kAllocate: {
        const auto* a = s->as<Allocate>();
        if (a->size < 0 || a->size > (int64_t{1} << 20))
          return fail("allocate '{}' of {} elements", a->buffer, a->size);
        if (!buffers_.emplace(a->buffer, a->dtype).second)
          return fail("buffer '{}' declared twice", a->buffer);
        TJ_RETURN_IF_ERROR(stmt(a->body));
        buffers_.erase(a->buffer);
        return Status();
      }
      case NodeKind::kCallKernel: {
        const auto* c = s->as<CallKernel>();
        const kernels::MicrokernelInfo& info = kernels::microkernel_info(c->kernel);
        if (static_cast<int>(c->buffers.size()) != info.num_pointers() ||
            static_cast<int>(c->args.size()) != info.num_pointers() + info.ints)
          return fail("call of {} with {} buffers and {} arguments (wants {} and {})", info.name,
                      c->buffers.size(), c->args.size(), info.num_pointers(),
                      info.num_pointers() + info.ints);
        for (int i = 0; i < info.num_pointers(); ++i) {
          auto it = buffers_.find(c->buffers[i]);
          if (it == buffers_.end()) return fail("{}: unknown buffer '{}'", info.name, c->buffers[i]);
          if (it->second != info.pointer_dtype(i))
            return fail("{}: buffer '{}' is {}, argument {} wants {}", info.name, c->buffers[i],
                        dtype_name(it->second), i, dtype_name(info.pointer_dtype(i)));
        }
        for (const Expr& a : c->args) {
          TJ_RETURN_IF_ERROR(expr(a));
          if (!(a->type == i64())) return fail("{}: arguments must be scalar int64", info.name);
        }
        return Status();
      }
      default:
        return fail("node of kind {} where a statement is expected", node_kind_name(s->kind));
    }
  }

  std::unordered_map<std::string, Type> vars_;
  std::unordered_map<std::string, DType> buffers_;
};

}  // namespace

Status verify(const Function& f) { return Verifier().function(f); }

}  // namespace tierjit::kir
