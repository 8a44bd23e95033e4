// Kernel IR: names, the generated Visitor/Mutator dispatch, structural hash and equality.
// Everything walks the fields each node lists once in TJ_KIR_FIELDS (kir.h).
#include "kir/kir.h"

#include <cstring>
#include <utility>

#include "support/hash.h"

namespace tierjit::kir {

std::string_view node_kind_name(NodeKind k) {
  switch (k) {
#define TJ_KIR_EXPR(n) \
  case NodeKind::k##n: \
    return #n;
#define TJ_KIR_STMT(n) \
  case NodeKind::k##n: \
    return #n;
#include "kir/nodes.def"
  }
  return "?";
}

std::string_view binary_op_name(BinaryOp op) {
  static constexpr std::string_view kNames[] = {"+", "-", "*", "/", "%", "min", "max", "&&", "||"};
  return kNames[static_cast<int>(op)];
}
std::string_view cmp_op_name(CmpOp op) {
  static constexpr std::string_view kNames[] = {"==", "!=", "<", "<=", ">", ">="};
  return kNames[static_cast<int>(op)];
}
std::string_view intrinsic_name(Intrinsic op) {
  static constexpr std::string_view kNames[] = {"exp", "log",   "tanh", "erf",   "sigmoid", "sqrt",
                                                "abs", "floor", "ceil", "round", "fma",     "pow"};
  return kNames[static_cast<int>(op)];
}
int intrinsic_arity(Intrinsic op) {
  switch (op) {
    case Intrinsic::kFma:
      return 3;
    case Intrinsic::kPow:
      return 2;
    default:
      return 1;
  }
}
std::string_view for_kind_name(ForKind k) {
  static constexpr std::string_view kNames[] = {"serial", "parallel", "vectorized", "unrolled"};
  return kNames[static_cast<int>(k)];
}

// ---- Visitor ----

void Visitor::visit(const Expr& e) {
  if (!e) return;
  switch (e->kind) {
#define TJ_KIR_EXPR(n)                \
  case NodeKind::k##n:                \
    visit(static_cast<const n&>(*e)); \
    return;
#include "kir/nodes.def"
    default:
      return;
  }
}
void Visitor::visit(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
#define TJ_KIR_STMT(n)                \
  case NodeKind::k##n:                \
    visit(static_cast<const n&>(*s)); \
    return;
#include "kir/nodes.def"
    default:
      return;
  }
}

template <class T>
void Visitor::visit_children(const T& node) {
  std::apply(
      [this](const auto&... field) {
        auto one = [this](const auto& f) {
          using F = std::decay_t<decltype(f)>;
          if constexpr (std::is_same_v<F, Expr> || std::is_same_v<F, Stmt>) {
            visit(f);
          } else if constexpr (std::is_same_v<F, std::vector<Expr>> ||
                               std::is_same_v<F, std::vector<Stmt>>) {
            for (const auto& c : f) visit(c);
          }
        };
        (one(field), ...);
      },
      node.tie());
}

#define TJ_KIR_EXPR(n) \
  void Visitor::visit(const n& node) { visit_children(node); }
#define TJ_KIR_STMT(n) \
  void Visitor::visit(const n& node) { visit_children(node); }
#include "kir/nodes.def"

// ---- Mutator ----

Expr Mutator::mutate(const Expr& e) {
  if (!e) return e;
  switch (e->kind) {
#define TJ_KIR_EXPR(n) \
  case NodeKind::k##n: \
    return visit(static_cast<const n&>(*e), e);
#include "kir/nodes.def"
    default:
      return e;
  }
}
Stmt Mutator::mutate(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
#define TJ_KIR_STMT(n) \
  case NodeKind::k##n: \
    return visit(static_cast<const n&>(*s), s);
#include "kir/nodes.def"
    default:
      return s;
  }
}

template <class T, class Handle>
Handle Mutator::mutate_children(const T& node, const Handle& self) {
  auto copy = std::make_shared<T>(node);
  bool changed = false;
  std::apply(
      [&](auto&... field) {
        auto one = [&](auto& f) {
          using F = std::decay_t<decltype(f)>;
          if constexpr (std::is_same_v<F, Expr> || std::is_same_v<F, Stmt>) {
            auto m = mutate(f);
            changed |= m != f;
            f = std::move(m);
          } else if constexpr (std::is_same_v<F, std::vector<Expr>> ||
                               std::is_same_v<F, std::vector<Stmt>>) {
            for (auto& c : f) {
              auto m = mutate(c);
              changed |= m != c;
              c = std::move(m);
            }
          }
        };
        (one(field), ...);
      },
      copy->tie());
  if (!changed) return self;
  return copy;
}

#define TJ_KIR_EXPR(n) \
  Expr Mutator::visit(const n& node, const Expr& self) { return mutate_children(node, self); }
#define TJ_KIR_STMT(n) \
  Stmt Mutator::visit(const n& node, const Stmt& self) { return mutate_children(node, self); }
#include "kir/nodes.def"

// ---- Structural hash ----

namespace {

using support::Hasher;

void hash_node(Hasher& h, const Expr& e);
void hash_node(Hasher& h, const Stmt& s);

template <class F>
void hash_field(Hasher& h, const F& f) {
  if constexpr (std::is_same_v<F, Expr> || std::is_same_v<F, Stmt>) {
    hash_node(h, f);
  } else if constexpr (std::is_same_v<F, std::vector<Expr>> ||
                       std::is_same_v<F, std::vector<Stmt>>) {
    h.add_u64(f.size());
    for (const auto& c : f) hash_node(h, c);
  } else if constexpr (std::is_same_v<F, std::string>) {
    h.add(f);
  } else if constexpr (std::is_same_v<F, std::vector<std::string>>) {
    h.add_u64(f.size());
    for (const std::string& c : f) h.add(c);
  } else if constexpr (std::is_same_v<F, std::vector<int>>) {
    h.add_u64(f.size());
    for (int c : f) h.add_i64(c);
  } else if constexpr (std::is_same_v<F, double>) {
    h.add_f64(f);
  } else {
    h.add_i64(static_cast<int64_t>(f));  // integers and enums
  }
}

template <class T>
void hash_fields(Hasher& h, const T& node) {
  std::apply([&h](const auto&... field) { (hash_field(h, field), ...); }, node.tie());
}

void hash_node(Hasher& h, const Expr& e) {
  if (!e) {
    h.add_u64(0xffff);
    return;
  }
  h.add_u64(static_cast<uint64_t>(e->kind));
  h.add_i64(static_cast<int64_t>(e->type.dtype));
  h.add_i64(e->type.lanes);
  switch (e->kind) {
#define TJ_KIR_EXPR(n)                         \
  case NodeKind::k##n:                         \
    hash_fields(h, static_cast<const n&>(*e)); \
    return;
#include "kir/nodes.def"
    default:
      return;
  }
}
void hash_node(Hasher& h, const Stmt& s) {
  if (!s) {
    h.add_u64(0xffff);
    return;
  }
  h.add_u64(static_cast<uint64_t>(s->kind));
  switch (s->kind) {
#define TJ_KIR_STMT(n)                         \
  case NodeKind::k##n:                         \
    hash_fields(h, static_cast<const n&>(*s)); \
    return;
#include "kir/nodes.def"
    default:
      return;
  }
}

// ---- Structural equality ----

bool equal_node(const Expr& a, const Expr& b);
bool equal_node(const Stmt& a, const Stmt& b);

template <class F>
bool equal_field(const F& a, const F& b) {
  if constexpr (std::is_same_v<F, Expr> || std::is_same_v<F, Stmt>) {
    return equal_node(a, b);
  } else if constexpr (std::is_same_v<F, std::vector<Expr>> ||
                       std::is_same_v<F, std::vector<Stmt>>) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!equal_node(a[i], b[i])) return false;
    }
    return true;
  } else if constexpr (std::is_same_v<F, double>) {
    // Bitwise, so NaN constants compare equal to themselves and -0.0 differs from 0.0.
    return std::memcmp(&a, &b, sizeof a) == 0;
  } else {
    return a == b;
  }
}

template <class T>
bool equal_fields(const T& a, const T& b) {
  auto ta = a.tie();
  auto tb = b.tie();
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return (equal_field(std::get<I>(ta), std::get<I>(tb)) && ...);
  }
  (std::make_index_sequence<std::tuple_size_v<decltype(ta)>>{});
}

bool equal_node(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || !(a->type == b->type)) return false;
  switch (a->kind) {
#define TJ_KIR_EXPR(n) \
  case NodeKind::k##n: \
    return equal_fields(static_cast<const n&>(*a), static_cast<const n&>(*b));
#include "kir/nodes.def"
    default:
      return false;
  }
}
bool equal_node(const Stmt& a, const Stmt& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  switch (a->kind) {
#define TJ_KIR_STMT(n) \
  case NodeKind::k##n: \
    return equal_fields(static_cast<const n&>(*a), static_cast<const n&>(*b));
#include "kir/nodes.def"
    default:
      return false;
  }
}

}  // namespace

uint64_t structural_hash(const Expr& e) {
  Hasher h;
  hash_node(h, e);
  return h.digest();
}
uint64_t structural_hash(const Stmt& s) {
  Hasher h;
  hash_node(h, s);
  return h.digest();
}
uint64_t structural_hash(const Function& f) {
  Hasher h;
  h.add(f.name);
  h.add_u64(f.buffers.size());
  for (const BufferParam& b : f.buffers) {
    h.add(b.name);
    h.add_i64(static_cast<int64_t>(b.dtype));
  }
  h.add_u64(f.dims.size());
  for (const std::string& d : f.dims) h.add(d);
  hash_node(h, f.body);
  return h.digest();
}

bool structural_equal(const Expr& a, const Expr& b) { return equal_node(a, b); }
bool structural_equal(const Stmt& a, const Stmt& b) { return equal_node(a, b); }
bool structural_equal(const Function& a, const Function& b) {
  return a.name == b.name && a.buffers == b.buffers && a.dims == b.dims &&
         equal_node(a.body, b.body);
}

bool is_kernel_dtype(DType t) {
  switch (t) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

}  // namespace tierjit::kir
