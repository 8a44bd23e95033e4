// Shape rules for the remaining op families: recurrent nets (RNN/GRU/LSTM, both layouts),
// Resize/Upsample, GridSample, RoiAlign, NonMaxSuppression, Einsum, random generators, window
// functions, DFT/STFT/MelWeightMatrix, and the string ops. Source: ONNX operator specs, opsets 1..17.
#include <algorithm>
#include <cmath>
#include <map>

#include "passes/shape_rules.h"

namespace tierjit::passes::shapes {
namespace {

using ir::Dim;
using ir::OpKind;
using ir::SymShape;

DType dtype_attr(const RuleContext& c, const char* name, DType dflt) {
  if (!c.node().has_attr(name)) return dflt;
  int64_t code = c.node().attr_int(name, 0);
  return dtype_is_valid(static_cast<int32_t>(code)) ? static_cast<DType>(code) : DType::kUndefined;
}

// RNN/GRU/LSTM. layout 0: X [seq, batch, in] -> Y [seq, dirs, batch, H], Y_h/Y_c [dirs, batch, H];
// layout 1 (opset 14): X [batch, seq, in] -> Y [batch, seq, dirs, H], Y_h/Y_c [batch, dirs, H].
Status recurrent(RuleContext& c) {
  const auto& x = c.shape(0);
  const ir::Node& n = c.node();
  Dim dirs = Dim::constant(n.attr_string("direction", "forward") == "bidirectional" ? 2 : 1);
  Dim hidden = n.has_attr("hidden_size") ? Dim::constant(n.attr_int("hidden_size", 0)) : Dim::unknown();
  bool layout1 = c.opset() >= 14 && n.attr_int("layout", 0) != 0;
  Dim seq = Dim::unknown(), batch = Dim::unknown();
  if (x) {
    if (x->size() != 3) return c.fail("input X has rank {}, expected 3", x->size());
    seq = (*x)[layout1 ? 1 : 0];
    batch = (*x)[layout1 ? 0 : 1];
  }
  if (layout1) {
    c.set_output(0, c.dtype(0), SymShape{batch, seq, dirs, hidden});
    c.set_output(1, c.dtype(0), SymShape{batch, dirs, hidden});
    c.set_output(2, c.dtype(0), SymShape{batch, dirs, hidden});
  } else {
    c.set_output(0, c.dtype(0), SymShape{seq, dirs, batch, hidden});
    c.set_output(1, c.dtype(0), SymShape{dirs, batch, hidden});
    c.set_output(2, c.dtype(0), SymShape{dirs, batch, hidden});
  }
  return Status();
}

// Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample (scales attribute before
// opset 9, input after). Output dim = floor(dim * scale), or sizes when given.
Status resize(RuleContext& c) {
  const auto& x = c.shape(0);
  if (!x) {
    c.set_output(0, c.dtype(0), std::nullopt);
    return Status();
  }
  size_t r = x->size();
  bool is_upsample = c.node().op() == OpKind::Upsample;
  size_t scales_in = is_upsample || c.opset() < 11 ? 1 : 2;
  if (!is_upsample && c.opset() >= 11 && c.has_input(3)) {
    if (const SymInts* sizes = c.known(3); sizes && sizes->size() == r) {
      SymShape out;
      for (const SymInt& e : *sizes) out.push_back(e.to_dim());
      c.set_output(0, c.dtype(0), std::move(out));
      return Status();
    }
    const auto& ss = c.shape(3);
    if (!(ss && ss->size() == 1 && (*ss)[0].is_constant() && (*ss)[0].value == 0)) {
      c.set_output(0, c.dtype(0), unknown_dims(r));
      return Status();
    }
  }
  std::vector<double> scales;
  if (is_upsample && c.opset() < 9) {
    for (float f : c.node().attr_floats("scales")) scales.push_back(f);
  } else if (const Tensor* t = c.constant(scales_in)) {
    for (int64_t i = 0; i < t->numel(); ++i) scales.push_back(t->value_as_double(i));
  }
  bool crop = c.node().attr_string("coordinate_transformation_mode", "") == "tf_crop_and_resize";
  SymShape out = unknown_dims(r);
  if (scales.size() == r && !crop) {
    for (size_t i = 0; i < r; ++i) {
      const Dim& d = (*x)[i];
      if (d.is_constant()) {
        // ONNX Runtime computes in float: floor(float(dim) * scale).
        float v = static_cast<float>(d.value) * static_cast<float>(scales[i]);
        if (v >= 0 && v < 1e15f) out[i] = Dim::constant(static_cast<int64_t>(std::floor(v)));
      } else if (scales[i] == 1.0) {
        out[i] = d;
      }
    }
  }
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status grid_sample(RuleContext& c) {
  const auto& x = c.shape(0);
  const auto& g = c.shape(1);
  SymShape out = unknown_dims(4);
  if (x && x->size() == 4) {
    out[0] = (*x)[0];
    out[1] = (*x)[1];
  }
  if (g && g->size() == 4) {
    out[2] = (*g)[1];
    out[3] = (*g)[2];
  }
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

Status roi_align(RuleContext& c) {
  const auto& x = c.shape(0);
  const auto& rois = c.shape(1);
  c.set_output(0, c.dtype(0),
               SymShape{rois && !rois->empty() ? (*rois)[0] : Dim::unknown(),
                        x && x->size() == 4 ? (*x)[1] : Dim::unknown(),
                        Dim::constant(c.node().attr_int("output_height", 1)),
                        Dim::constant(c.node().attr_int("output_width", 1))});
  return Status();
}

Status nms(RuleContext& c) {
  c.set_output(0, DType::kInt64, SymShape{Dim::unknown(), Dim::constant(3)});
  return Status();
}

// Einsum: letters map to dims; "..." broadcasts; implicit output = ellipsis then letters seen
// once, in alphabetical order.
Status einsum(RuleContext& c) {
  std::string eq;
  for (char ch : c.node().attr_string("equation", "")) if (ch != ' ') eq += ch;
  DType dt = c.dtype(0);
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != c.num_inputs()) return c.fail("equation '{}' has {} operands for {} inputs", eq, terms.size(), c.num_inputs());
  std::map<char, Dim> letter;
  std::map<char, int> count;
  std::vector<SymShape> ellipses;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (i > 0) TJ_RETURN_IF_ERROR(c.same_dtype(0, i));
    const auto& s = c.shape(i);
    if (!s) {
      c.set_output(0, dt, std::nullopt);
      return Status();
    }
    std::string t = terms[i];
    size_t ell = t.find("...");
    size_t n_letters = t.size() - (ell == std::string::npos ? 0 : 3);
    if (n_letters > s->size() || (ell == std::string::npos && n_letters != s->size()))
      return c.fail("operand {} '{}' does not match rank {}", i, t, s->size());
    size_t ell_rank = s->size() - n_letters;
    size_t dim = 0;
    for (size_t k = 0; k < t.size(); ++k) {
      if (k == ell) {
        ellipses.emplace_back(s->begin() + static_cast<std::ptrdiff_t>(dim),
                              s->begin() + static_cast<std::ptrdiff_t>(dim + ell_rank));
        dim += ell_rank;
        k += 2;
        continue;
      }
      char ch = t[k];
      const Dim& d = (*s)[dim++];
      ++count[ch];
      auto it = letter.find(ch);
      if (it != letter.end() && it->second.is_constant() && d.is_constant() && it->second.value != d.value &&
          it->second.value != 1 && d.value != 1)
        return c.fail("label '{}' has sizes {} and {}", ch, it->second.value, d.value);
      if (it == letter.end() || (it->second.is_constant() && it->second.value == 1 && d.is_constant()) ||
          (!it->second.is_constant() && (d.is_constant() || !it->second.is_symbol())))
        letter[ch] = d;
    }
  }
  std::vector<const SymShape*> eps;
  for (const SymShape& e : ellipses) eps.push_back(&e);
  std::string err;
  auto ell_shape = broadcast_shapes(eps, &err);
  if (!err.empty()) return c.fail("ellipsis dims: {}", err);
  SymShape out;
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    for (size_t k = 0; k < rhs.size(); ++k) {
      if (rhs.compare(k, 3, "...") == 0) {
        if (ell_shape) out.insert(out.end(), ell_shape->begin(), ell_shape->end());
        k += 2;
      } else {
        auto it = letter.find(rhs[k]);
        if (it == letter.end()) return c.fail("output label '{}' is not in any operand", rhs[k]);
        out.push_back(it->second);
      }
    }
  } else {
    if (ell_shape) out = *ell_shape;
    for (const auto& [ch, d] : letter)
      if (count[ch] == 1) out.push_back(d);
  }
  c.set_output(0, dt, std::move(out));
  return Status();
}

Status random(RuleContext& c) {
  SymShape s;
  for (int64_t d : c.node().attr_ints("shape")) s.push_back(d >= 0 ? Dim::constant(d) : Dim::unknown());
  c.set_output(0, dtype_attr(c, "dtype", DType::kFloat32), std::move(s));
  return Status();
}

Status multinomial(RuleContext& c) {
  const auto& x = c.shape(0);
  c.set_output(0, dtype_attr(c, "dtype", DType::kInt32),
               SymShape{x && x->size() == 2 ? (*x)[0] : Dim::unknown(),
                        Dim::constant(c.node().attr_int("sample_size", 1))});
  return Status();
}

Status window(RuleContext& c) {
  Dim n = Dim::unknown();
  if (const SymInts* k = c.known(0); k && k->size() == 1) n = (*k)[0].to_dim();
  c.set_output(0, dtype_attr(c, "output_datatype", DType::kFloat32), SymShape{n});
  return Status();
}

Status mel_weight_matrix(RuleContext& c) {
  Dim bins = Dim::unknown(), mels = Dim::unknown();
  if (const SymInts* k = c.known(1); k && k->size() == 1 && (*k)[0].is_constant())
    bins = Dim::constant((*k)[0].value / 2 + 1);
  if (const SymInts* k = c.known(0); k && k->size() == 1) mels = (*k)[0].to_dim();
  c.set_output(0, dtype_attr(c, "output_datatype", DType::kFloat32), SymShape{bins, mels});
  return Status();
}

// DFT (opset 17): input [batch, ..., n, 1|2] -> [..., n' , 2]; n' = dft_length (input 1) or n,
// halved + 1 when onesided.
Status dft(RuleContext& c) {
  const auto& x = c.shape(0);
  if (!x || x->size() < 3) {
    c.set_output(0, c.dtype(0), x ? std::optional<SymShape>(unknown_dims(x->size())) : std::nullopt);
    return Status();
  }
  int64_t axis = c.node().attr_int("axis", 1);
  TJ_RETURN_IF_ERROR(c.normalize_axis(axis, static_cast<int64_t>(x->size()) - 1, "axis"));
  SymShape out = *x;
  out.back() = Dim::constant(2);
  Dim& d = out[static_cast<size_t>(axis)];
  if (c.has_input(1)) {
    const SymInts* k = c.known(1);
    d = k && k->size() == 1 ? (*k)[0].to_dim() : Dim::unknown();
  }
  if (c.node().attr_int("onesided", 0) != 0)
    d = d.is_constant() ? Dim::constant(d.value / 2 + 1) : Dim::unknown();
  c.set_output(0, c.dtype(0), std::move(out));
  return Status();
}

// STFT (opset 17): signal [batch, length, 1|2], frame_step, window [L]?, frame_length? ->
// [batch, (length - L) / frame_step + 1, onesided ? L / 2 + 1 : L, 2].
Status stft(RuleContext& c) {
  const auto& x = c.shape(0);
  Dim frames = Dim::unknown(), bins = Dim::unknown();
  int64_t len = -1;
  if (const SymInts* k = c.known(3); k && k->size() == 1 && (*k)[0].is_constant()) len = (*k)[0].value;
  else if (const auto& w = c.shape(2); w && w->size() == 1 && (*w)[0].is_constant()) len = (*w)[0].value;
  const SymInts* step = c.known(1);
  if (len > 0) {
    bins = Dim::constant(c.node().attr_int("onesided", 1) != 0 ? len / 2 + 1 : len);
    if (x && x->size() == 3 && (*x)[1].is_constant() && step && step->size() == 1 && (*step)[0].is_constant() &&
        (*step)[0].value > 0 && (*x)[1].value >= len)
      frames = Dim::constant(((*x)[1].value - len) / (*step)[0].value + 1);
  }
  c.set_output(0, c.dtype(0), SymShape{x && !x->empty() ? (*x)[0] : Dim::unknown(), frames, bins, Dim::constant(2)});
  return Status();
}

Status string_normalizer(RuleContext& c) {
  const auto& x = c.shape(0);
  std::optional<SymShape> s;
  if (x) {
    s = *x;
    if (!s->empty()) s->back() = Dim::unknown();
  }
  c.set_output(0, DType::kString, std::move(s));
  return Status();
}

Status tfidf(RuleContext& c) {
  const auto& x = c.shape(0);
  std::vector<int64_t> idx = c.node().attr_ints("ngram_indexes");
  Dim width = idx.empty() ? Dim::unknown() : Dim::constant(*std::max_element(idx.begin(), idx.end()) + 1);
  std::optional<SymShape> s;
  if (x && x->size() == 1) s = SymShape{width};
  else if (x && x->size() == 2) s = SymShape{(*x)[0], width};
  c.set_output(0, DType::kFloat32, std::move(s));
  return Status();
}

}  // namespace

void register_misc_rules(RuleTable& t) {
  for (OpKind op : {OpKind::RNN, OpKind::GRU, OpKind::LSTM}) add_rule(t, op, recurrent);
  add_rule(t, OpKind::Resize, resize);
  add_rule(t, OpKind::Upsample, resize);
  add_rule(t, OpKind::GridSample, grid_sample);
  add_rule(t, OpKind::RoiAlign, roi_align);
  add_rule(t, OpKind::NonMaxSuppression, nms);
  add_rule(t, OpKind::Einsum, einsum);
  add_rule(t, OpKind::RandomNormal, random);
  add_rule(t, OpKind::RandomUniform, random);
  add_rule(t, OpKind::Multinomial, multinomial);
  for (OpKind op : {OpKind::BlackmanWindow, OpKind::HammingWindow, OpKind::HannWindow}) add_rule(t, op, window);
  add_rule(t, OpKind::MelWeightMatrix, mel_weight_matrix);
  add_rule(t, OpKind::DFT, dft);
  add_rule(t, OpKind::STFT, stft);
  add_rule(t, OpKind::StringNormalizer, string_normalizer);
  add_rule(t, OpKind::TfIdfVectorizer, tfidf);
  register_control_rules(t);
}

}  // namespace tierjit::passes::shapes
