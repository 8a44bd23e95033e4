// Status helpers and the public error-code names.
#include "support/status.h"

#include "support/check.h"

namespace tierjit {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kInvalidModel: return "InvalidModel";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kUnsupported: return "Unsupported";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kIoError: return "IoError";
  }
  return "Unknown";
}

Status Status::with_prefix(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, fmt::format("{}: {}", prefix, message_));
}

void Status::throw_if_error() const {
  if (!ok()) throw Error(code_, message_);
}

namespace support {
void check_failed(const char* file, int line, const char* cond, const char* msg) {
  std::fprintf(stderr, "tierjit internal error: %s:%d: CHECK(%s) failed %s\n", file, line, cond, msg);
  std::abort();
}
}  // namespace support

}  // namespace tierjit
