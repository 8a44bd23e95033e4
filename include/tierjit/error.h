// The error type of tierjit's public C++ API.
// Every failure of the library surfaces as a thrown tierjit::Error carrying a status code and a
// one-line message naming the file, node and input involved (as ONNX Runtime's C++ API does).
#pragma once

#include <stdexcept>
#include <string>

namespace tierjit {

/// Status codes, shared by the internal Status type and the public Error.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,   ///< bad feed: wrong dtype, rank, dims, missing input, bad CLI value
  kInvalidModel = 2,      ///< file is not a valid ONNX model, or inconsistent types
  kNotFound = 3,          ///< file or named input/output missing
  kUnsupported = 4,       ///< op, opset, dtype or attribute value tierjit does not implement
  kResourceExhausted = 5, ///< a tensor larger than the configured memory limit
  kInternal = 6,          ///< broken invariant inside tierjit (a bug)
  kIoError = 7,           ///< read or write failure
};

/// Name of a status code ("InvalidArgument", ...).
const char* status_code_name(StatusCode code);

/// Thrown by the public API. what() is the one-line message.
class Error : public std::runtime_error {
 public:
  Error(StatusCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  StatusCode code() const noexcept { return code_; }

 private:
  StatusCode code_;
};

}  // namespace tierjit
