#pragma once
// result<T, E>: a value or an expected error (style.md "Errors"). Each module defines its own
// `enum class errc` and an alias `template <class T> using result = base::result<T, error>`.

#include <string>
#include <utility>
#include <variant>

#include "ringlog/base/assert.h"

namespace ringlog::base {

/// An error value: a module's errc plus a human message that names the offending field/limit.
template <typename Errc>
struct error {
  Errc code;
  std::string message;
};

template <typename T, typename E>
class [[nodiscard]] result {
 public:
  result(T v) : v_(std::in_place_index<0>, std::move(v)) {}  // NOLINT(implicit)
  result(E e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT(implicit)
  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & {
    RINGLOG_ASSERT(ok(), "value() on an error result");
    return std::get<0>(v_);
  }
  const T& value() const& {
    RINGLOG_ASSERT(ok(), "value() on an error result");
    return std::get<0>(v_);
  }
  T&& value() && {
    RINGLOG_ASSERT(ok(), "value() on an error result");
    return std::get<0>(std::move(v_));
  }
  const E& error() const {
    RINGLOG_ASSERT(!ok(), "error() on an ok result");
    return std::get<1>(v_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, E> v_;
};

/// result<void, E>
struct ok_t {};
inline constexpr ok_t ok_v{};

template <typename E>
class [[nodiscard]] result<void, E> {
 public:
  result() = default;
  result(ok_t) {}  // NOLINT(implicit)
  result(E e) : err_(std::move(e)), has_error_(true) {}  // NOLINT(implicit)
  [[nodiscard]] bool ok() const { return !has_error_; }
  explicit operator bool() const { return ok(); }
  const E& error() const {
    RINGLOG_ASSERT(has_error_, "error() on an ok result");
    return err_;
  }

 private:
  E err_{};
  bool has_error_ = false;
};

}  // namespace ringlog::base

/// Propagate an error of the same error type: RINGLOG_TRY(expr) returns expr's error if any.
#define RINGLOG_TRY(expr)                     \
  do {                                        \
    auto&& ringlog_try_ = (expr);             \
    if (!ringlog_try_.ok()) {                 \
      return ringlog_try_.error();            \
    }                                         \
  } while (false)
