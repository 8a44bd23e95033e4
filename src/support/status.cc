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

namespace {
// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if the bytes there are not one.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  return n;
}
}  // namespace

std::string printable_one_line(std::string s) {
  bool clean = true;
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f) clean = false;
  if (clean) return s;
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_sequence_length(s, i);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (n == 0 || c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);  // control byte or not valid UTF-8: escape it
    } else {
      out.append(s, i, n);
      i += n;
      continue;
    }
    ++i;
  }
  return out;
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
