// Tier-0 kernel: Einsum (opset 12). Parses the equation (explicit "->" or implicit output,
// repeated labels within a term = diagonal, "..." broadcast dims) and evaluates it as one generic
// contraction: an odometer over all labels, output labels outermost, summing over the rest.
// Floats accumulate in double, integers in int64.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/misc_internal.h"

namespace tierjit::interp {

namespace {

constexpr int kNumLetters = 52;  // a-z, A-Z; ellipsis dims get ids from kNumLetters on

int letter_id(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  return -1;
}

// One term: label ids per dim (ellipsis expanded), or the raw form before expansion.
struct Term {
  std::vector<int> letters_before, letters_after;  // around "..."
  bool has_ellipsis = false;
};

Expected<Term> parse_term(const KernelContext& ctx, const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (t.has_ellipsis || s.compare(i, 3, "...") != 0)
        return ctx.fail("equation term '{}': malformed ellipsis", s);
      t.has_ellipsis = true;
      i += 2;
      continue;
    }
    int id = letter_id(s[i]);
    if (id < 0) return ctx.fail("equation term '{}': invalid character '{}'", s, s[i]);
    (t.has_ellipsis ? t.letters_after : t.letters_before).push_back(id);
  }
  return t;
}

std::vector<int> expand(const Term& t, int64_t n_ell, int64_t total_ell) {
  std::vector<int> r = t.letters_before;
  for (int64_t e = total_ell - n_ell; e < total_ell; ++e)
    r.push_back(kNumLetters + static_cast<int>(e));
  r.insert(r.end(), t.letters_after.begin(), t.letters_after.end());
  return r;
}

template <class T>
using Acc = std::conditional_t<std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                                   std::is_same_v<T, BFloat16>,
                               double, int64_t>;

template <class T>
Acc<T> load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return to_float(p[i]);
  else
    return static_cast<Acc<T>>(p[i]);
}

template <class T>
void store_value(T* p, int64_t i, Acc<T> v) {
  if constexpr (std::is_same_v<T, Half>)
    p[i] = Half{support::float_to_half(static_cast<float>(v))};
  else if constexpr (std::is_same_v<T, BFloat16>)
    p[i] = BFloat16{support::float_to_bfloat16(static_cast<float>(v))};
  else
    p[i] = static_cast<T>(v);
}

// Offsets of every index of `dims` (row-major order) under element strides `st`.
std::vector<int64_t> offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& st) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> r(static_cast<size_t>(total));
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t off = 0;
  for (int64_t q = 0; q < total; ++q) {
    r[q] = off;
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      ++idx[d];
      off += st[d];
      if (idx[d] < dims[d]) break;
      off -= st[d] * dims[d];
      idx[d] = 0;
    }
  }
  return r;
}

// Two-input contraction as a batched GEMM: labels split into batch (output, both inputs),
// m (output, A only), n (output, B only) and k (summed). A and B are packed to [batch, M, K] and
// [batch, K, N] in the accumulator type through their label strides (which already encode
// diagonals and broadcasting), multiplied row by row, and scattered into the output layout.
template <class T>
bool contract2(const T* a, const T* b, T* out, const std::vector<int>& all,
               const std::vector<int64_t>& dims, const std::vector<std::vector<int64_t>>& strides,
               const std::vector<int>& out_labels, const std::vector<std::vector<int>>& labels,
               int threads, int64_t memory_limit) {
  using A = Acc<T>;
  auto has = [&](size_t i, int l) {
    return std::find(labels[i].begin(), labels[i].end(), l) != labels[i].end();
  };
  Shape out_shape;
  for (int l : out_labels)
    out_shape.push_back(dims[std::find(all.begin(), all.end(), l) - all.begin()]);
  const std::vector<int64_t> out_st_all = row_major_strides(out_shape);
  // Per group: dims, A strides, B strides, output strides.
  std::vector<int64_t> bd, bsa, bsb, bso, md, msa, mso, nd, nsb, nso, kd, ksa, ksb;
  for (size_t j = 0; j < all.size(); ++j) {
    const int l = all[j];
    const auto op = std::find(out_labels.begin(), out_labels.end(), l);
    if (op != out_labels.end()) {
      const int64_t os = out_st_all[op - out_labels.begin()];
      if (has(0, l) && has(1, l)) {
        bd.push_back(dims[j]);
        bsa.push_back(strides[0][j]);
        bsb.push_back(strides[1][j]);
        bso.push_back(os);
      } else if (has(0, l)) {
        md.push_back(dims[j]);
        msa.push_back(strides[0][j]);
        mso.push_back(os);
      } else {
        nd.push_back(dims[j]);
        nsb.push_back(strides[1][j]);
        nso.push_back(os);
      }
    } else {
      kd.push_back(dims[j]);
      ksa.push_back(strides[0][j]);
      ksb.push_back(strides[1][j]);
    }
  }
  const std::vector<int64_t> ba = offsets(bd, bsa), bb = offsets(bd, bsb), bo = offsets(bd, bso);
  const std::vector<int64_t> ma = offsets(md, msa), mo = offsets(md, mso);
  const std::vector<int64_t> nb = offsets(nd, nsb), no = offsets(nd, nso);
  const std::vector<int64_t> ka = offsets(kd, ksa), kb = offsets(kd, ksb);
  const int64_t nbatch = static_cast<int64_t>(ba.size()), m = static_cast<int64_t>(ma.size());
  const int64_t n = static_cast<int64_t>(nb.size()), kk = static_cast<int64_t>(ka.size());
  if (kk * n > memory_limit / static_cast<int64_t>(sizeof(A))) return false;  // packed B too big
  kernels::parallel_for_if(nbatch * m * n * kk > 65536, threads, nbatch, [&](int64_t bi) {
    std::vector<A> bp(static_cast<size_t>(kk * n)), acc(static_cast<size_t>(n));
    for (int64_t p = 0; p < kk; ++p)
      for (int64_t j = 0; j < n; ++j) bp[p * n + j] = load<T>(b, bb[bi] + kb[p] + nb[j]);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(acc.begin(), acc.end(), A{0});
      for (int64_t p = 0; p < kk; ++p) {
        const A av = load<T>(a, ba[bi] + ma[i] + ka[p]);
        const A* row = bp.data() + p * n;
        for (int64_t j = 0; j < n; ++j) acc[j] += av * row[j];
      }
      for (int64_t j = 0; j < n; ++j) store_value<T>(out, bo[bi] + mo[i] + no[j], acc[j]);
    }
  });
  return true;
}

// Equation: "ij,jk->ik". Inputs: one tensor per term, one dtype. Output: the contraction.
Status einsum_kernel(KernelContext& ctx) {
  std::string eq;
  for (char ch : ctx.node().attr_string("equation", ""))
    if (ch != ' ') eq += ch;
  if (eq.empty()) return ctx.fail("attribute 'equation' is required");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> term_strs;
  for (size_t b = 0;;) {
    size_t e = lhs.find(',', b);
    term_strs.push_back(lhs.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  const size_t n_in = ctx.num_inputs();
  if (term_strs.size() != n_in)
    return ctx.fail("equation '{}' has {} input terms but the node has {} inputs", eq,
                    term_strs.size(), n_in);
  std::vector<const Tensor*> ins(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    TJ_ASSIGN_OR_RETURN(ins[i], ctx.required_input(i));
    if (ins[i]->dtype() != ins[0]->dtype())
      return ctx.fail("input {} has dtype {}, input 0 has {}", i, dtype_name(ins[i]->dtype()),
                      dtype_name(ins[0]->dtype()));
  }
  // Terms, ellipsis ranks and label sizes.
  std::vector<Term> terms;
  std::vector<int64_t> n_ell(n_in, 0);
  int64_t total_ell = 0;
  for (size_t i = 0; i < n_in; ++i) {
    TJ_ASSIGN_OR_RETURN(Term t, parse_term(ctx, term_strs[i]));
    const int64_t named = static_cast<int64_t>(t.letters_before.size() + t.letters_after.size());
    if (t.has_ellipsis ? ins[i]->rank() < named : ins[i]->rank() != named)
      return ctx.fail("term '{}' does not match input {} of rank {}", term_strs[i], i,
                      ins[i]->rank());
    n_ell[i] = t.has_ellipsis ? ins[i]->rank() - named : 0;
    total_ell = std::max(total_ell, n_ell[i]);
    terms.push_back(std::move(t));
  }
  const int n_labels = kNumLetters + static_cast<int>(total_ell);
  std::vector<int64_t> size(static_cast<size_t>(n_labels), -1);
  std::vector<int> count(static_cast<size_t>(n_labels), 0);
  std::vector<std::vector<int>> labels(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    labels[i] = expand(terms[i], n_ell[i], total_ell);
    for (size_t d = 0; d < labels[i].size(); ++d) {
      const int l = labels[i][d];
      const int64_t dim = ins[i]->dim(static_cast<int64_t>(d));
      ++count[l];
      // Sizes must agree; a size of 1 broadcasts (numpy einsum semantics).
      if (size[l] < 0 || size[l] == 1) {
        if (size[l] < 0 || dim != 1) size[l] = dim;
      } else if (dim != size[l] && dim != 1) {
        return ctx.fail("label size mismatch in '{}': input {} dim {} is {}, expected {}", eq, i, d,
                        dim, size[l]);
      }
    }
  }
  // Output labels.
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    TJ_ASSIGN_OR_RETURN(Term ot, parse_term(ctx, eq.substr(arrow + 2)));
    // Ellipsis dims missing from an explicit output are summed over (numpy behaviour).
    out_labels = expand(ot, ot.has_ellipsis ? total_ell : 0, total_ell);
    std::vector<int> seen(static_cast<size_t>(n_labels), 0);
    for (int l : out_labels) {
      if (l < n_labels && count[l] == 0)
        return ctx.fail("equation '{}': output label '{}' does not appear in any input", eq,
                        l < 26 ? static_cast<char>('a' + l) : static_cast<char>('A' + l - 26));
      if (seen[l]++) return ctx.fail("equation '{}': output label repeated", eq);
    }
  } else {
    for (int64_t e = 0; e < total_ell; ++e) out_labels.push_back(kNumLetters + static_cast<int>(e));
    for (int l = 0; l < kNumLetters; ++l)
      if (count[l] == 1) out_labels.push_back(l);
  }
  std::vector<int> all = out_labels;
  for (int l = 0; l < n_labels; ++l)
    if (count[l] > 0 && std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end())
      all.push_back(l);
  Shape out_shape;
  for (int l : out_labels) out_shape.push_back(size[l]);
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, ins[0]->dtype(), out_shape));
  const size_t k = all.size();
  std::vector<int64_t> dims(k);
  for (size_t j = 0; j < k; ++j) dims[j] = size[all[j]];
  // strides[i][j]: element stride of input i along label all[j] (summed for repeated labels).
  std::vector<std::vector<int64_t>> strides(n_in, std::vector<int64_t>(k, 0));
  for (size_t i = 0; i < n_in; ++i) {
    std::vector<int64_t> rs = row_major_strides(ins[i]->shape());
    for (size_t d = 0; d < labels[i].size(); ++d) {
      if (ins[i]->dim(static_cast<int64_t>(d)) == 1) continue;  // broadcast
      const size_t j =
          static_cast<size_t>(std::find(all.begin(), all.end(), labels[i][d]) - all.begin());
      strides[i][j] += rs[d];
    }
  }
  int64_t reduce_total = 1;
  for (size_t j = out_labels.size(); j < k; ++j) reduce_total *= dims[j];
  const int64_t out_total = out->numel();

  return dispatch_all(ctx, ins[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return ctx.unsupported_here("dtype bool not supported");
    } else {
      using A = Acc<T>;
      T* o = out->data<T>();
      std::vector<const T*> src(n_in);
      for (size_t i = 0; i < n_in; ++i) src[i] = ins[i]->data<T>();
      if (out_total == 0) return Status();
      if (reduce_total == 0) {
        for (int64_t q = 0; q < out_total; ++q) store_value<T>(o, q, A{0});
        return Status();
      }
      if (n_in == 2 &&
          contract2<T>(src[0], src[1], o, all, dims, strides, out_labels, labels,
                       ctx.options().intra_op_threads, ctx.options().memory_limit_bytes))
        return Status();
      std::vector<int64_t> idx(k, 0), off(n_in, 0);
      const int64_t inner = k ? dims[k - 1] : 1;
      const int64_t total = out_total * reduce_total;
      A acc = 0;
      int64_t remaining = reduce_total, q = 0;
      for (int64_t t = 0; t < total; t += inner) {
        for (int64_t j = 0; j < inner; ++j) {
          A prod = 1;
          for (size_t i = 0; i < n_in; ++i)
            prod *= load<T>(src[i], off[i] + j * (k ? strides[i][k - 1] : 0));
          acc += prod;
          if (--remaining == 0) {  // every output element sums reduce_total consecutive steps
            store_value<T>(o, q++, acc);
            acc = 0;
            remaining = reduce_total;
          }
        }
        for (int64_t d = static_cast<int64_t>(k) - 2; d >= 0; --d) {
          ++idx[d];
          for (size_t i = 0; i < n_in; ++i) off[i] += strides[i][d];
          if (idx[d] < dims[d]) break;
          for (size_t i = 0; i < n_in; ++i) off[i] -= strides[i][d] * dims[d];
          idx[d] = 0;
        }
      }
      return Status();
    }
  });
}

}  // namespace

void register_einsum_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::Einsum, einsum_kernel);
}

}  // namespace tierjit::interp
