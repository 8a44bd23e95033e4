// Symbolic dim arithmetic for shape inference: products, exact quotients and broadcasting of dims
// that are constants, named symbols ("N") or derived expressions ("N*S", "2*N", "min(S,512)").
// A symbolic value is read as a monomial: an integer coefficient times sorted atoms, so that
// Reshape's -1 and Flatten can cancel symbols ("N*S*128" / "N" / "128" = "S").
#include <algorithm>
#include <limits>

#include "passes/shape_rules.h"

namespace tierjit::passes::shapes {

ir::Dim derived_dim(std::string expr) {
  if (expr.empty() || expr.size() > kMaxSymChars) return ir::Dim::unknown();
  return ir::Dim::named(std::move(expr));
}

SymInt SymInt::from_dim(const ir::Dim& d) {
  if (d.is_constant()) return constant(d.value);
  if (d.is_symbol()) return named(d.symbol);
  return unknown();
}

ir::Dim SymInt::to_dim() const {
  if (is_constant()) return value >= 0 ? ir::Dim::constant(value) : ir::Dim::unknown();
  if (is_symbol()) return ir::Dim::named(symbol);
  return ir::Dim::unknown();
}

namespace {

struct Monomial {
  int64_t coef = 1;
  std::vector<std::string> atoms;  // sorted
};

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

// Splits "2*N*S" at top-level '*' (parentheses protect "min(a*b,3)").
std::optional<Monomial> to_monomial(const SymInt& v) {
  if (!v.known) return std::nullopt;
  Monomial m;
  if (v.symbol.empty()) {
    m.coef = v.value;
    return m;
  }
  const std::string& s = v.symbol;
  if (s.find('*') == std::string::npos) {
    m.atoms.push_back(s);
    return m;
  }
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] == '(') ++depth;
    if (i < s.size() && s[i] == ')') --depth;
    if (i == s.size() || (s[i] == '*' && depth == 0)) {
      std::string tok = s.substr(start, i - start);
      if (all_digits(tok) && tok.size() < 18) {
        m.coef *= std::stoll(tok);
      } else {
        m.atoms.push_back(tok);
      }
      start = i + 1;
    }
  }
  std::sort(m.atoms.begin(), m.atoms.end());
  return m;
}

SymInt from_monomial(const Monomial& m) {
  if (m.atoms.empty() || m.coef == 0) return SymInt::constant(m.coef);
  if (m.coef < 0 || m.atoms.size() > kMaxSymAtoms) return SymInt::unknown();
  std::string s;
  if (m.coef != 1) s = std::to_string(m.coef);
  for (const std::string& a : m.atoms) {
    if (!s.empty()) s += '*';
    s += a;
    if (s.size() > kMaxSymChars) return SymInt::unknown();
  }
  return SymInt::named(std::move(s));
}

bool mul_overflows(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r);
}

}  // namespace

SymInt sym_mul(const SymInt& a, const SymInt& b) {
  auto ma = to_monomial(a), mb = to_monomial(b);
  if (ma && ma->coef == 0 && ma->atoms.empty()) return SymInt::constant(0);
  if (mb && mb->coef == 0 && mb->atoms.empty()) return SymInt::constant(0);
  if (!ma || !mb || mul_overflows(ma->coef, mb->coef)) return SymInt::unknown();
  Monomial r;
  r.coef = ma->coef * mb->coef;
  r.atoms = ma->atoms;
  r.atoms.insert(r.atoms.end(), mb->atoms.begin(), mb->atoms.end());
  std::sort(r.atoms.begin(), r.atoms.end());
  return from_monomial(r);
}

SymInt sym_div_exact(const SymInt& a, const SymInt& b) {
  auto ma = to_monomial(a), mb = to_monomial(b);
  if (!ma || !mb || mb->coef == 0) return SymInt::unknown();
  if (ma->coef % mb->coef != 0) return SymInt::unknown();
  Monomial r;
  r.coef = ma->coef / mb->coef;
  r.atoms = ma->atoms;
  for (const std::string& atom : mb->atoms) {
    auto it = std::find(r.atoms.begin(), r.atoms.end(), atom);
    if (it == r.atoms.end()) return SymInt::unknown();
    r.atoms.erase(it);
  }
  return from_monomial(r);
}

SymInt sym_div_trunc(const SymInt& a, const SymInt& b) {
  if (a.is_constant() && b.is_constant()) {
    if (b.value == 0) return SymInt::unknown();
    if (a.value == std::numeric_limits<int64_t>::min() && b.value == -1) return SymInt::unknown();
    return SymInt::constant(a.value / b.value);
  }
  return sym_div_exact(a, b);
}

SymInt sym_add(const SymInt& a, const SymInt& b) {
  if (a.is_constant() && b.is_constant()) {
    int64_t r;
    if (__builtin_add_overflow(a.value, b.value, &r)) return SymInt::unknown();
    return SymInt::constant(r);
  }
  if (b.is_constant() && b.value == 0) return a;
  if (a.is_constant() && a.value == 0) return b;
  return SymInt::unknown();
}

SymInt sym_sub(const SymInt& a, const SymInt& b) {
  if (a.is_constant() && b.is_constant()) {
    int64_t r;
    if (__builtin_sub_overflow(a.value, b.value, &r)) return SymInt::unknown();
    return SymInt::constant(r);
  }
  if (b.is_constant() && b.value == 0) return a;
  if (a.is_symbol() && a == b) return SymInt::constant(0);
  return SymInt::unknown();
}

ir::Dim dim_mul(const ir::Dim& a, const ir::Dim& b) {
  return sym_mul(SymInt::from_dim(a), SymInt::from_dim(b)).to_dim();
}

ir::Dim dim_div_exact(const ir::Dim& a, const ir::Dim& b) {
  return sym_div_exact(SymInt::from_dim(a), SymInt::from_dim(b)).to_dim();
}

ir::Dim dim_add(const ir::Dim& a, const ir::Dim& b) {
  return sym_add(SymInt::from_dim(a), SymInt::from_dim(b)).to_dim();
}

ir::Dim dim_product(const ir::SymShape& shape, size_t begin, size_t end) {
  SymInt p = SymInt::constant(1);
  for (size_t i = begin; i < end && i < shape.size(); ++i) p = sym_mul(p, SymInt::from_dim(shape[i]));
  return p.to_dim();
}

ir::Dim dim_min_const(const ir::Dim& d, int64_t c) {
  if (d.is_constant()) return ir::Dim::constant(std::min(d.value, c));
  if (d.is_symbol()) return derived_dim(fmt::format("min({},{})", d.symbol, c));
  return ir::Dim::unknown();
}

namespace {

// "min(X,c)" -> "X"; anything else -> "".
std::string min_operand(const std::string& s) {
  if (s.size() < 7 || s.rfind("min(", 0) != 0 || s.back() != ')') return {};
  size_t comma = s.rfind(',');
  if (comma == std::string::npos || comma < 5) return {};
  return s.substr(4, comma - 4);
}

}  // namespace

std::optional<ir::Dim> broadcast_dim(const std::vector<const ir::Dim*>& dims) {
  int64_t big = -1;  // a constant other than 1
  bool any_unknown = false;
  std::vector<const std::string*> symbols;
  for (const ir::Dim* d : dims) {
    if (d->is_constant()) {
      if (d->value == 1) continue;
      if (big >= 0 && big != d->value) return std::nullopt;
      big = d->value;
    } else if (d->is_symbol()) {
      if (std::find_if(symbols.begin(), symbols.end(), [&](const std::string* s) { return *s == d->symbol; }) ==
          symbols.end())
        symbols.push_back(&d->symbol);
    } else {
      any_unknown = true;
    }
  }
  if (big >= 0) return ir::Dim::constant(big);  // the others are 1 or equal, or the run fails
  if (any_unknown) return ir::Dim::unknown();
  if (symbols.empty()) return ir::Dim::constant(1);
  if (symbols.size() == 1) return ir::Dim::named(*symbols[0]);
  if (symbols.size() == 2) {
    // X with min(X,c): if X <= c both are X; if X > c, min = c and only c == 1 runs, giving X.
    if (min_operand(*symbols[0]) == *symbols[1]) return ir::Dim::named(*symbols[1]);
    if (min_operand(*symbols[1]) == *symbols[0]) return ir::Dim::named(*symbols[0]);
  }
  return ir::Dim::unknown();
}

std::optional<ir::SymShape> broadcast_shapes(const std::vector<const ir::SymShape*>& shapes,
                                             std::string* error) {
  size_t rank = 0;
  for (const ir::SymShape* s : shapes) {
    if (!s) return std::nullopt;
    rank = std::max(rank, s->size());
  }
  ir::SymShape out(rank);
  std::vector<const ir::Dim*> dims;
  for (size_t k = 0; k < rank; ++k) {
    dims.clear();
    for (const ir::SymShape* s : shapes)
      if (k + s->size() >= rank) dims.push_back(&(*s)[k + s->size() - rank]);
    auto d = broadcast_dim(dims);
    if (!d) {
      if (error) {
        *error = "shapes";
        for (size_t i = 0; i < shapes.size(); ++i)
          *error += (i ? " and " : " ") + ir::sym_shape_to_string(*shapes[i]);
        *error += " cannot broadcast";
      }
      return std::nullopt;
    }
    out[k] = std::move(*d);
  }
  return out;
}

}  // namespace tierjit::passes::shapes
