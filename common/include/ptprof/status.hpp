// The one way a fallible call reports failure (as Perfetto's Status and
// StatusOr): a Status is ok or carries a message for the user; a Result<T>
// holds a T or a failed Status. No exceptions, so the agent can use them.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ptprof/check.hpp"

namespace ptprof {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok

  static Status ok_status() { return {}; }
  static Status error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  // Empty when ok.
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : message_(std::move(message)), failed_(true) {}

  std::string message_;
  bool failed_ = false;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor): `return value;`
  Result(Status status)
      : status_(std::move(status)) {  // NOLINT(google-explicit-constructor): `return Status::error(...)`
    PTPROF_DCHECK(!status_.ok());
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }
  const std::string& error() const { return status_.message(); }

  T& value() & {
    PTPROF_DCHECK(ok());
    return *value_;
  }
  const T& value() const& {
    PTPROF_DCHECK(ok());
    return *value_;
  }
  T&& value() && {
    PTPROF_DCHECK(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

namespace status_detail {
inline const Status& status_of(const Status& s) { return s; }
template <class T>
const Status& status_of(const Result<T>& r) {
  return r.status();
}
}  // namespace status_detail

// Calls `each(std::string_view)` for every line of a message that reports
// several problems at once (the configuration: one line per bad variable).
template <class Each>
void for_each_line(std::string_view message, Each&& each) {
  while (!message.empty()) {
    const size_t end = message.find('\n');
    each(message.substr(0, end));
    if (end == std::string_view::npos) break;
    message.remove_prefix(end + 1);
  }
}

}  // namespace ptprof

// The early returns of a fallible function, in the manner of Perfetto's
// status_macros.h, so that a chain of fallible steps reads as the steps:
//
//   PTPROF_RETURN_IF_ERROR(check_header(h));          // a Status or a Result
//   PTPROF_ASSIGN_OR_RETURN(auto file, open(path));    // declares `file`
//   PTPROF_ASSIGN_OR_RETURN(size, file.size());        // assigns `size`
//
// Each evaluates its expression once and returns its Status when it failed;
// the enclosing function returns a Status or a Result<U>.
#define PTPROF_RETURN_IF_ERROR(...)                                                          \
  do {                                                                                       \
    const auto& ptprof_status_or_result_ = (__VA_ARGS__);                                    \
    if (!ptprof_status_or_result_.ok())                                                      \
      return ::ptprof::Status(::ptprof::status_detail::status_of(ptprof_status_or_result_)); \
  } while (false)

#define PTPROF_STATUS_CONCAT_INNER(a, b) a##b
#define PTPROF_STATUS_CONCAT(a, b) PTPROF_STATUS_CONCAT_INNER(a, b)
#define PTPROF_ASSIGN_OR_RETURN_IMPL(result, lhs, ...)        \
  auto result = (__VA_ARGS__);                                \
  if (!result.ok()) return ::ptprof::Status(result.status()); \
  lhs = std::move(result).value()
// `lhs` may declare (`auto x`, `const T& y`) or assign; the expression may hold commas.
#define PTPROF_ASSIGN_OR_RETURN(lhs, ...) \
  PTPROF_ASSIGN_OR_RETURN_IMPL(PTPROF_STATUS_CONCAT(ptprof_result_, __LINE__), lhs, __VA_ARGS__)
