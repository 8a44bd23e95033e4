// Kernel-IR text printer: C-like, one statement per line, two-space indent. Types appear where
// they are not obvious (constants other than int64/float32, vectors, casts, loads).
#include <fmt/format.h>

#include "kir/kir.h"

namespace tierjit::kir {

namespace {

std::string type_name(Type t) {
  std::string s(dtype_name(t.dtype));
  if (t.lanes != 1) s += fmt::format("x{}", t.lanes);
  return s;
}

std::string print(const Expr& e) {
  if (!e) return "<null>";
  switch (e->kind) {
    case NodeKind::kIntImm: {
      int64_t v = e->as<IntImm>()->value;
      return e->type == i64() ? fmt::format("{}", v) : fmt::format("({}){}", type_name(e->type), v);
    }
    case NodeKind::kFloatImm: {
      double v = e->as<FloatImm>()->value;
      return e->type == f32() ? fmt::format("{}f", v)
                              : fmt::format("({}){}", type_name(e->type), v);
    }
    case NodeKind::kVar:
      return e->as<Var>()->name;
    case NodeKind::kBinary: {
      const auto* b = e->as<Binary>();
      if (b->op == BinaryOp::kMin || b->op == BinaryOp::kMax) {
        return fmt::format("{}({}, {})", binary_op_name(b->op), print(b->a), print(b->b));
      }
      return fmt::format("({} {} {})", print(b->a), binary_op_name(b->op), print(b->b));
    }
    case NodeKind::kCompare: {
      const auto* c = e->as<Compare>();
      return fmt::format("({} {} {})", print(c->a), cmp_op_name(c->op), print(c->b));
    }
    case NodeKind::kSelect: {
      const auto* s = e->as<Select>();
      return fmt::format("select({}, {}, {})", print(s->cond), print(s->t), print(s->f));
    }
    case NodeKind::kCast:
      return fmt::format("({}){}", type_name(e->type), print(e->as<Cast>()->value));
    case NodeKind::kLoad: {
      const auto* l = e->as<Load>();
      return fmt::format("{}[{}]", l->buffer, print(l->index));
    }
    case NodeKind::kBroadcast:
      return fmt::format("broadcast({}, {})", print(e->as<Broadcast>()->value), e->type.lanes);
    case NodeKind::kRamp: {
      const auto* r = e->as<Ramp>();
      return fmt::format("ramp({}, {}, {})", print(r->base), print(r->stride), e->type.lanes);
    }
    case NodeKind::kCall: {
      const auto* c = e->as<Call>();
      std::string s = fmt::format("{}(", intrinsic_name(c->op));
      for (size_t i = 0; i < c->args.size(); ++i) s += (i ? ", " : "") + print(c->args[i]);
      return s + ")";
    }
    case NodeKind::kShuffle: {
      const auto* sh = e->as<Shuffle>();
      std::string s = fmt::format("shuffle({}, [", print(sh->vector));
      for (size_t i = 0; i < sh->indices.size(); ++i) s += (i ? ", " : "") + std::to_string(sh->indices[i]);
      return s + "])";
    }
    default:
      return "<?>";
  }
}

void print(std::string& out, const Stmt& s, int indent) {
  std::string pad(indent * 2, ' ');
  if (!s) {
    out += pad + "<null>;\n";
    return;
  }
  switch (s->kind) {
    case NodeKind::kFor: {
      const auto* f = s->as<For>();
      std::string kind =
          f->for_kind == ForKind::kSerial ? "" : fmt::format("{} ", for_kind_name(f->for_kind));
      out += fmt::format("{}{}for ({}, {}, {}) {{\n", pad, kind, f->var, print(f->min),
                         print(f->extent));
      print(out, f->body, indent + 1);
      out += pad + "}\n";
      return;
    }
    case NodeKind::kStore: {
      const auto* st = s->as<Store>();
      out += fmt::format("{}{}[{}] = {};\n", pad, st->buffer, print(st->index), print(st->value));
      return;
    }
    case NodeKind::kLetStmt: {
      const auto* l = s->as<LetStmt>();
      out += fmt::format("{}let {} = {};\n", pad, l->var, print(l->value));
      print(out, l->body, indent);
      return;
    }
    case NodeKind::kIfThenElse: {
      const auto* i = s->as<IfThenElse>();
      out += fmt::format("{}if ({}) {{\n", pad, print(i->cond));
      print(out, i->then_case, indent + 1);
      if (i->else_case) {
        out += pad + "} else {\n";
        print(out, i->else_case, indent + 1);
      }
      out += pad + "}\n";
      return;
    }
    case NodeKind::kBlock:
      for (const Stmt& c : s->as<Block>()->stmts) print(out, c, indent);
      return;
    case NodeKind::kAllocate: {
      const auto* a = s->as<Allocate>();
      out +=
          fmt::format("{}allocate {}[{} * {}];\n", pad, a->buffer, dtype_name(a->dtype), a->size);
      print(out, a->body, indent);
      return;
    }
    case NodeKind::kCallKernel: {
      const auto* c = s->as<CallKernel>();
      std::string args;
      for (size_t i = 0; i < c->args.size(); ++i) {
        if (i) args += ", ";
        args += i < c->buffers.size() ? fmt::format("&{}[{}]", c->buffers[i], print(c->args[i]))
                                      : print(c->args[i]);
      }
      out += fmt::format("{}{}({});\n", pad, kernels::microkernel_info(c->kernel).name, args);
      return;
    }
    default:
      out += pad + "<?>;\n";
  }
}

}  // namespace

std::string to_string(const Expr& e) { return print(e); }
std::string to_string(const Stmt& s, int indent) {
  std::string out;
  print(out, s, indent);
  return out;
}
std::string to_string(const Function& f) {
  std::string out = fmt::format("kernel {}(", f.name);
  for (size_t i = 0; i < f.buffers.size(); ++i) {
    out +=
        fmt::format("{}{}* {}", i ? ", " : "", dtype_name(f.buffers[i].dtype), f.buffers[i].name);
  }
  for (const std::string& d : f.dims) out += fmt::format(", int64 {}", d);
  out += ") {\n";
  print(out, f.body, 1);
  return out + "}\n";
}

}  // namespace tierjit::kir
