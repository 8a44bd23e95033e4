// Status and Expected<T>: the error values of tierjit's load and compile paths (no exceptions
// inside the library; the public API converts a failed Status into a thrown tierjit::Error).
// Messages are one line: "FILE: node NAME (Op): input 1 'x': what is wrong".
#pragma once

#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "tierjit/error.h"

namespace tierjit {

/// Replaces '\n', '\r', '\t' by spaces, and every other control byte and every byte that is not
/// part of valid UTF-8 by "\xNN" (valid UTF-8 such as "ü" is kept).
std::string printable_one_line(std::string s);

class [[nodiscard]] Status {
 public:
  Status() = default;  ///< OK
  /// `message` is kept on one printable line: newlines and tabs become spaces, other control
  /// bytes and invalid UTF-8 (as found in a quoted corrupt file) become "\xNN".
  Status(StatusCode code, std::string message)
      : code_(code), message_(printable_one_line(std::move(message))) {}
  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Returns a copy whose message is "prefix: message" (adds context while unwinding).
  Status with_prefix(std::string_view prefix) const;
  /// Throws tierjit::Error(code, message) unless ok().
  void throw_if_error() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <class... Args>
Status make_status(StatusCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}
#define TJ_ERROR_FACTORY(fn, code)                                         \
  template <class... Args>                                                 \
  Status fn(fmt::format_string<Args...> f, Args&&... args) {               \
    return Status(code, fmt::format(f, std::forward<Args>(args)...));      \
  }
TJ_ERROR_FACTORY(invalid_argument, StatusCode::kInvalidArgument)
TJ_ERROR_FACTORY(invalid_model, StatusCode::kInvalidModel)
TJ_ERROR_FACTORY(not_found, StatusCode::kNotFound)
TJ_ERROR_FACTORY(unsupported, StatusCode::kUnsupported)
TJ_ERROR_FACTORY(resource_exhausted, StatusCode::kResourceExhausted)
TJ_ERROR_FACTORY(internal_error, StatusCode::kInternal)
TJ_ERROR_FACTORY(io_error, StatusCode::kIoError)
#undef TJ_ERROR_FACTORY

/// A T or the Status explaining why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}                 // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) {}          // NOLINT: must not be ok()
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  /// Value or throws tierjit::Error.
  T value_or_throw() && {
    if (!ok()) std::get<Status>(v_).throw_if_error();
    return std::get<T>(std::move(v_));
  }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tierjit

#define TJ_CONCAT_INNER(a, b) a##b
#define TJ_CONCAT(a, b) TJ_CONCAT_INNER(a, b)

/// Returns the Status from the enclosing function if `expr` (a Status) is not ok.
#define TJ_RETURN_IF_ERROR(expr)                   \
  do {                                             \
    ::tierjit::Status tj_status_ = (expr);         \
    if (!tj_status_.ok()) return tj_status_;       \
  } while (0)

/// `TJ_ASSIGN_OR_RETURN(auto x, make_x());` — declares/assigns from an Expected or returns its Status.
#define TJ_ASSIGN_OR_RETURN(lhs, expr) \
  TJ_ASSIGN_OR_RETURN_IMPL(TJ_CONCAT(tj_expected_, __LINE__), lhs, expr)
#define TJ_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
