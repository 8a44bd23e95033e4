// Shared pieces of the recurrent-region lowering (lower_recurrent.cc: the loops over directions,
// batch tiles, chunks of time steps and steps, the input projection and the recurrent product
// as kernels::gemm_panel_rows_f32 calls; recurrent_cell.cc: the gate activations and the state
// update of one step in generated vector code). Source: ONNX operator spec, LSTM 7/14/22,
// GRU 7/14/22.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kir/builder.h"
#include "kir/lower/lower.h"

namespace tierjit::kir::lowering {

/// One of the ONNX RNN activation functions (the `activations` attribute), with its
/// activation_alpha / activation_beta (defaults of the spec).
struct RnnActivation {
  enum Kind {
    kSigmoid,
    kTanh,
    kRelu,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  } kind = kSigmoid;
  float alpha = 0, beta = 0;
};

/// An LSTM or GRU node as the lowering reads it: attributes, and which region input / output
/// each ONNX operand is (-1: absent or not a region output).
struct RnnSpec {
  bool lstm = true;
  int64_t gates = 4;  ///< G: LSTM 4 (i, o, f, c), GRU 3 (z, r, h)
  int64_t dirs = 1, hidden = 0, input = 0;
  bool reverse = false;       ///< direction "reverse" (dirs == 1)
  bool lbr = false;           ///< GRU linear_before_reset
  bool input_forget = false;  ///< LSTM input_forget (f = 1 - i)
  bool has_clip = false;
  float clip = 0;
  std::vector<RnnActivation> acts;  ///< per direction: LSTM f, g, h; GRU f, g
  int x = -1, w = -1, r = -1, b = -1, lens = -1, h0 = -1, c0 = -1, p = -1;  // region inputs
  int y = -1, yh = -1, yc = -1;                                             // region outputs
  int per_dir() const { return lstm ? 3 : 2; }
};

/// Parses the region's LSTM/GRU (its anchor). Errors: kUnsupported naming the node and the
/// attribute or operand without a lowering (layout 1, an unknown activation, a non-float32
/// operand, W or R of a shape the graph does not fix, ...).
Expected<RnnSpec> parse_rnn(const passes::Region& region);

/// A float32 array inside a kernel buffer: element i is buffer[base + i].
struct Array {
  std::string buffer;
  Expr base;
};

/// Everything the gate math of one batch row at one step reads and writes (recurrent_cell.cc).
/// Offsets are element offsets of the row's first hidden unit.
struct RowStep {
  const RnnSpec* spec = nullptr;
  int64_t dir = 0;  ///< the direction (selects activations, biases, peepholes)
  Array proj;       ///< this row's input projection x W^T, G*H floats (gate order of ONNX)
  Array rec;        ///< its recurrent product h R^T (GRU without lbr: z and r only)
  Array rec_h;      ///< GRU without lbr: (r * h) R_h^T of the h gate, H floats
  Array h, c;       ///< its state (H floats each; c: LSTM only), updated in place
  Array rh;         ///< GRU without lbr: r * h, written by gru_reset_units
  Array y;          ///< Y's row at this step (buffer empty: Y not wanted)
  /// The direction's biases, G*H floats (buffer empty: no B): Wb + Rb summed once per call
  /// (GRU's h gate: Wb alone, Rb_h stays with the recurrent term).
  Array bias;
};

/// Statements for units [u, u + lanes) of one row (lanes: 1 or the vector width; u an int64
/// Expr). lstm_units: gates, c and h updated, h stored to Y. gru_reset_units (GRU without lbr,
/// before the h gate's product): z activated into rec's z slots, rh = r * h.
/// gru_units: h~ and h, stored to Y. Errors: kUnsupported for an activation without a lowering.
Expected<Stmt> lstm_units(const RowStep& row, const Expr& u, int lanes);
Expected<Stmt> gru_reset_units(const RowStep& row, const Expr& u, int lanes);
Expected<Stmt> gru_units(const RowStep& row, const Expr& u, int lanes);

/// `body(u, lanes)` over units [0, hidden): vectors of `lanes`, then a scalar tail; `name` is the
/// loop variable's prefix (unique in its scope).
Expected<Stmt> unit_loop(int64_t hidden, int lanes, const std::string& name,
                         const std::function<Expected<Stmt>(const Expr&, int)>& body);

/// Vector (lanes > 1) or scalar access to a float32 array.
Expr load_f32(const Array& a, const Expr& i, int lanes);
Stmt store_f32(const Array& a, const Expr& i, const Expr& value, int lanes);
Expr splat_f32(float v, int lanes);

}  // namespace tierjit::kir::lowering
