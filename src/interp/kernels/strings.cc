// Tier-0 kernels: string and text-feature ops. StringNormalizer (opset 10): stop-word removal and
// case change on a [C] or [1, C] UTF-8 string tensor (simple case mapping of the Latin, Greek
// and Cyrillic alphabets). TfIdfVectorizer (opset 9):
// counts the pool's n-grams (with skips) in each row of a string or integer tensor and weighs
// them (TF, IDF, TFIDF), as onnx.reference / ONNX Runtime do.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "interp/kernels/common.h"
#include "interp/kernels/misc_internal.h"

namespace tierjit::interp {

namespace {

// Simple case mapping of one code point: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic
// (the alphabets whose case pairs are plain offsets); others map to themselves.
char32_t map_case(char32_t c, bool upper) {
  auto shift = [&](char32_t lo_first, char32_t lo_last, char32_t delta) -> std::optional<char32_t> {
    if (upper && c >= lo_first && c <= lo_last) return c - delta;
    if (!upper && c >= lo_first - delta && c <= lo_last - delta) return c + delta;
    return std::nullopt;
  };
  if (c < 0x80) {
    if (upper && c >= 'a' && c <= 'z') return c - 32;
    if (!upper && c >= 'A' && c <= 'Z') return c + 32;
    return c;
  }
  if (c == 0xD7 || c == 0xF7) return c;             // multiplication and division signs
  if (auto r = shift(0xE0, 0xFE, 0x20)) return *r;  // Latin-1 letters
  if (auto r = shift(0x3B1, 0x3C9, 0x20)) return c == 0x3C2 ? c : *r;  // Greek (final sigma stays)
  if (auto r = shift(0x430, 0x44F, 0x20)) return *r;                   // Cyrillic basic
  if (auto r = shift(0x450, 0x45F, 0x50)) return *r;                   // Cyrillic with diacritics
  // Latin Extended-A: alternating upper/lower pairs.
  const bool even_upper = (c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
  const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
  if (even_upper || odd_upper) {
    const bool is_upper = (c % 2 == 0) == even_upper;
    if (upper && !is_upper) return c - 1;
    if (!upper && is_upper) return c + 1;
  }
  return c;
}

// Case-maps UTF-8 text; invalid UTF-8 bytes are copied unchanged.
std::string change_case(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    char32_t c = len == 1 ? b : len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
    for (size_t k = 1; valid && k < len; ++k) {
      const unsigned char cb = static_cast<unsigned char>(s[i + k]);
      valid = (cb & 0xC0) == 0x80;
      c = (c << 6) | (cb & 0x3F);
    }
    if (!valid) {
      out.push_back(s[i++]);
      continue;
    }
    c = map_case(c, upper);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
    i += len;
  }
  return out;
}
std::string to_lower(const std::string& s) {
  return change_case(s, false);
}
std::string to_upper(const std::string& s) {
  return change_case(s, true);
}

// Input X string [C] or [1, C]. Attributes: case_change_action (NONE | LOWER | UPPER),
// is_case_sensitive (default 0), stopwords, locale (ignored: one built-in mapping). Output: the
// kept strings, case-changed, shape [C'] or [1, C']; when nothing is kept, [1] or [1, 1] holding
// "".
Status string_normalizer_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  if (x->dtype() != DType::kString)
    return ctx.fail("input 0 must be a string tensor, got {}", dtype_name(x->dtype()));
  if (!(x->rank() == 1 || (x->rank() == 2 && x->dim(0) == 1)))
    return ctx.fail("input 0 must have shape [C] or [1, C], got {}", shape_to_string(x->shape()));
  const std::string action = ctx.node().attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    return ctx.fail("attribute 'case_change_action': unknown value '{}'", action);
  const bool sensitive = ctx.node().attr_int("is_case_sensitive", 0) != 0;
  std::set<std::string> stops;
  for (const std::string& s : ctx.node().attr_strings("stopwords"))
    stops.insert(sensitive ? s : to_lower(s));
  std::vector<std::string> kept;
  const std::string* in = x->data<std::string>();
  for (int64_t i = 0; i < x->numel(); ++i) {
    if (!stops.empty() && stops.count(sensitive ? in[i] : to_lower(in[i]))) continue;
    kept.push_back(action == "LOWER"   ? to_lower(in[i])
                   : action == "UPPER" ? to_upper(in[i])
                                       : in[i]);
  }
  if (kept.empty()) kept.push_back("");
  Shape shape{static_cast<int64_t>(kept.size())};
  if (x->rank() == 2) shape.insert(shape.begin(), 1);
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, DType::kString, shape));
  for (size_t i = 0; i < kept.size(); ++i) out->data<std::string>()[i] = std::move(kept[i]);
  return Status();
}

// The pool's n-grams of sizes [min_n, max_n] -> output column (ngram_indexes).
template <class K>
Expected<std::map<std::vector<K>, int64_t>> build_pool(const KernelContext& ctx,
                                                       const std::vector<K>& pool,
                                                       const std::vector<int64_t>& counts,
                                                       const std::vector<int64_t>& indexes,
                                                       int64_t min_n, int64_t max_n) {
  std::map<std::vector<K>, int64_t> grams;
  size_t id = 0;
  const int64_t total = static_cast<int64_t>(pool.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i) + 1;
    const int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : total;
    if (begin < 0 || end > total || begin > end)
      return ctx.fail("attribute 'ngram_counts' is inconsistent with the pool size {}", total);
    for (int64_t s = begin; s + n <= end; s += n, ++id) {
      if (n < min_n || n > max_n) continue;
      if (id >= indexes.size()) return ctx.fail("attribute 'ngram_indexes' has too few entries");
      grams.emplace(std::vector<K>(pool.begin() + s, pool.begin() + s + n), indexes[id]);
    }
  }
  return grams;
}

template <class K>
void count_row(const std::vector<K>& row, const std::map<std::vector<K>, int64_t>& grams,
               int64_t min_n, int64_t max_n, int64_t max_skip, int64_t* freq) {
  const int64_t c = static_cast<int64_t>(row.size());
  int64_t start_n = min_n;
  std::vector<K> key;
  for (int64_t skip = 1; skip <= max_skip + 1; ++skip) {
    for (int64_t s = 0; s < c; ++s) {
      if (s + skip * (start_n - 1) >= c) break;
      key.clear();
      for (int64_t n = 1, pos = s; n <= max_n && pos < c; ++n, pos += skip) {
        key.push_back(row[pos]);
        if (n < start_n) continue;
        auto it = grams.find(key);
        if (it != grams.end()) ++freq[it->second];
      }
    }
    if (start_n == 1) {  // unigrams are counted once, not per skip distance
      ++start_n;
      if (start_n > max_n) break;
    }
  }
}

// Input X: string, int32 or int64 of shape [C] or [B, C]. Output float [max(ngram_indexes)+1]
// or [B, that].
Status tfidf_kernel(KernelContext& ctx) {
  TJ_ASSIGN_OR_RETURN(const Tensor* x, ctx.required_input(0));
  const ir::Node& node = ctx.node();
  const int64_t min_n = node.attr_int("min_gram_length", 1),
                max_n = node.attr_int("max_gram_length", 1);
  const int64_t max_skip = node.attr_int("max_skip_count", 0);
  const std::string mode = node.attr_string("mode", "TF");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return ctx.fail("attribute 'mode': unknown value '{}'", mode);
  if (min_n < 1 || max_n < min_n || max_skip < 0)
    return ctx.fail("invalid gram lengths [{}, {}] or max_skip_count {}", min_n, max_n, max_skip);
  const std::vector<int64_t> counts = node.attr_ints("ngram_counts");
  const std::vector<int64_t> indexes = node.attr_ints("ngram_indexes");
  const std::vector<float> weights = node.attr_floats("weights");
  if (indexes.empty()) return ctx.fail("attribute 'ngram_indexes' is required");
  int64_t out_size = 0;
  for (int64_t v : indexes) {
    if (v < 0) return ctx.fail("attribute 'ngram_indexes' has a negative entry {}", v);
    out_size = std::max(out_size, v + 1);
  }
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < out_size)
    return ctx.fail("attribute 'weights' has {} entries, expected {}", weights.size(), out_size);
  if (x->rank() > 2)
    return ctx.fail("input 0 must have shape [C] or [B, C], got {}", shape_to_string(x->shape()));
  const int64_t rows = x->rank() == 2 ? x->dim(0) : 1;
  const int64_t cols = x->rank() == 0 ? 1 : x->dim(x->rank() - 1);
  Shape shape{out_size};
  if (x->rank() == 2) shape.insert(shape.begin(), rows);
  TJ_ASSIGN_OR_RETURN(Tensor * out, ctx.output(0, DType::kFloat32, shape));
  std::vector<int64_t> freq(static_cast<size_t>(rows * out_size), 0);

  if (x->dtype() == DType::kString) {
    const std::vector<std::string> pool = node.attr_strings("pool_strings");
    TJ_ASSIGN_OR_RETURN(auto grams, build_pool(ctx, pool, counts, indexes, min_n, max_n));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<std::string> row(x->data<std::string>() + r * cols,
                                   x->data<std::string>() + (r + 1) * cols);
      count_row(row, grams, min_n, max_n, max_skip, freq.data() + r * out_size);
    }
  } else if (x->dtype() == DType::kInt32 || x->dtype() == DType::kInt64) {
    const std::vector<int64_t> pool = node.attr_ints("pool_int64s");
    TJ_ASSIGN_OR_RETURN(auto grams, build_pool(ctx, pool, counts, indexes, min_n, max_n));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> row(static_cast<size_t>(cols));
      for (int64_t j = 0; j < cols; ++j) row[j] = x->value_as_int64(r * cols + j);
      count_row(row, grams, min_n, max_n, max_skip, freq.data() + r * out_size);
    }
  } else {
    return ctx.fail("input 0 must be string, int32 or int64, got {}", dtype_name(x->dtype()));
  }
  float* y = out->data<float>();
  for (int64_t p = 0; p < rows * out_size; ++p) {
    const int64_t col = p % out_size;
    const double f = static_cast<double>(freq[p]);
    double v;
    if (mode == "TF")
      v = f;
    else if (mode == "IDF")
      v = freq[p] > 0 ? (weights.empty() ? 1.0 : weights[col]) : 0.0;
    else
      v = weights.empty() ? f : weights[col] * f;
    y[p] = static_cast<float>(v);
  }
  return Status();
}

}  // namespace

void register_string_kernels(KernelRegistry& r) {
  r.add(ir::OpKind::StringNormalizer, string_normalizer_kernel);
  r.add(ir::OpKind::TfIdfVectorizer, tfidf_kernel);
}

}  // namespace tierjit::interp
