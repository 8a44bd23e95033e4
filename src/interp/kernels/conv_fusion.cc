// The table of activations tier 0 fuses into a preceding Conv (see conv_fusion.h).
#include "interp/kernels/conv_fusion.h"

#include <cmath>
#include <limits>

namespace tierjit::interp {

std::optional<ConvFusion> conv_fusion_for(const ir::Node& act) {
  using ir::OpKind;
  using Kind = nn::ConvPostOp::Kind;
  if (act.num_outputs() != 1 || !act.output(0) || act.num_inputs() < 1) return std::nullopt;
  for (size_t i = 1; i < act.num_inputs(); ++i)
    if (act.input(i) && !act.input(i)->is_constant()) return std::nullopt;
  ConvFusion f;
  switch (act.op()) {
    case OpKind::Relu:
      // Tier 0's Relu is x > 0 ? x : +0 (NaN and -0 give +0). oneDNN's clip, max(x, 0) then
      // min(., +inf), gives the same; its relu with alpha 0 keeps NaN in the reference path.
      f.mode = ConvFusion::Mode::kPostOp;
      f.post = {Kind::kClip, 0.0f, std::numeric_limits<float>::infinity()};
      return f;
    case OpKind::LeakyRelu: {
      // Tier 0: x < 0 ? alpha * x : x. oneDNN: x > 0 ? x : alpha * x; equal for alpha > 0
      // (NaN -> NaN * alpha = NaN; +-0 -> alpha * (+-0) = +-0). oneDNN runs alpha == 0 as
      // max(x, 0) (NaN -> 0), and alpha < 0 flips the sign of zeros: those run in place.
      const float alpha = act.attr_float("alpha", 0.01f);
      if (alpha > 0 && std::isfinite(alpha)) {
        f.mode = ConvFusion::Mode::kPostOp;
        f.post = {Kind::kLeakyRelu, alpha, 0.0f};
      }
      return f;
    }
    case OpKind::Clip:
    case OpKind::Sigmoid:
    case OpKind::Tanh:
      return f;  // in place
    default:
      return std::nullopt;
  }
}

}  // namespace tierjit::interp
