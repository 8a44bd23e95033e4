// tierjit::Session — the public C++ API: load an ONNX model once, then run it on feeds.
//   tierjit::Session session("model.onnx", options);
//   auto outputs = session.run({{"x", x}});
// Today every request runs on tier 0 (the interpreter); later tiers plug in behind run().
// Errors throw tierjit::Error with a one-line message (file, node, input and what is wrong).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tierjit/error.h"
#include "tierjit/tensor.h"

namespace tierjit {

struct SessionOptions {
  /// Threads one kernel may use (OpenMP / oneDNN); 0 = all cores.
  int intra_op_threads = 1;
  /// Largest single tensor accepted, from the model or computed at run time (bytes).
  int64_t memory_limit_bytes = int64_t{16} << 30;
};

/// Declared input or output: name, dtype and shape; symbolic dims are -1 with their name in
/// `dim_names` (empty string for a constant dim or an unnamed unknown dim).
struct TensorInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
  bool has_shape = false;  ///< false when the model declares no shape (rank unknown)
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Session {
 public:
  /// Loads `model_path` (ONNX, opset <= 17). Throws tierjit::Error: kNotFound (no file),
  /// kInvalidModel (not ONNX, truncated, inconsistent), kUnsupported (op/opset/dtype),
  /// kResourceExhausted (tensor over memory_limit_bytes).
  explicit Session(const std::string& model_path, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  /// Runs the model. `feeds` names every non-initializer input once; outputs come back in the
  /// model's output order with their names. Throws tierjit::Error(kInvalidArgument) for a
  /// missing, unknown or duplicated feed, or a wrong dtype, rank or constant dim; errors raised
  /// by a kernel name the node. Thread-safe: run may be called from many threads at once.
  NamedTensors run(const NamedTensors& feeds) const;

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  const std::string& model_path() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// "0.1.0 (git abc1234)"
std::string version_string();

}  // namespace tierjit
