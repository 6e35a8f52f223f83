// Status and Result<T>: how every expected failure (bad file, bad request, out of blocks)
// travels. Exceptions never cross a library boundary; invariants use PAGODA_CHECK (check.h).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace pagoda {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input: a corrupt file, an invalid request field
  kNotFound,            // missing file, unknown model/route/key
  kOutOfRange,          // index or size beyond a limit (context length, token id)
  kResourceExhausted,   // out of KV blocks, queue full
  kFailedPrecondition,  // not ready, draining
  kUnimplemented,       // a known but unsupported feature (tensor type, architecture)
  kCancelled,           // aborted by the caller
  kUnavailable,         // temporarily cannot serve
  kDeadlineExceeded,    // timed out
  kIo,                  // the OS said no
  kInternal,            // a bug surfaced as an error rather than a crash
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: <message>"
  std::string to_string() const;

  // Prefixes the message with context: "while reading x: <message>".
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Builders: error<StatusCode::kInvalidArgument>("field {} is {}", a, b) or the named helpers.
template <typename... Args>
Status make_status(StatusCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status invalid_argument(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status not_found(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status out_of_range(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kOutOfRange, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status unimplemented(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kUnimplemented, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status resource_exhausted(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kResourceExhausted, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status failed_precondition(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kFailedPrecondition, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status io_error(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kIo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status internal_error(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
}

// Result<T>: a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cvref_t<T>, Status>, "use Status");

 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}         // NOLINT: implicit
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {}  // NOLINT
  template <typename U>
  requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::remove_cvref_t<U>, T> &&
           !std::is_same_v<std::remove_cvref_t<U>, Status> &&
           !std::is_same_v<std::remove_cvref_t<U>, Result<T>>) Result(U&& value)
      : v_(std::in_place_index<0>, T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  Status take_status() && { return ok() ? Status() : std::move(std::get<1>(v_)); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

namespace detail {
inline Status to_status(Status s) {
  return s;
}
template <typename T>
Status to_status(Result<T>&& r) {
  return std::move(r).take_status();
}
}  // namespace detail

}  // namespace pagoda

#define PAGODA_CONCAT_INNER_(a, b) a##b
#define PAGODA_CONCAT_(a, b) PAGODA_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` (a Status) is not ok.
#define PAGODA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::pagoda::Status pagoda_status_ = (expr);        \
    if (!pagoda_status_.ok()) return pagoda_status_; \
  } while (0)

// PAGODA_ASSIGN_OR_RETURN(auto x, make_x()); returns the error Status on failure.
#define PAGODA_ASSIGN_OR_RETURN(lhs, expr) \
  PAGODA_ASSIGN_OR_RETURN_IMPL_(PAGODA_CONCAT_(pagoda_result_, __LINE__), lhs, expr)
#define PAGODA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()
