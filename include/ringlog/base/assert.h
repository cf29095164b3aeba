#pragma once
// Always-on assertions for impossible states (style.md "Errors"): they stay in release builds
// and print file:line plus the failed condition and both values before aborting.

#include <cstdio>
#include <cstdlib>

namespace ringlog::base::detail {
[[noreturn]] void assert_failed(const char* file, int line, const char* condition, const char* detail) noexcept;
[[noreturn]] void assert_failed_values(const char* file, int line, const char* condition, long long lhs,
                                       long long rhs) noexcept;
}  // namespace ringlog::base::detail

/// RINGLOG_ASSERT(cond, "why"): aborts with file:line, the condition and the message when false.
#define RINGLOG_ASSERT(cond, msg)                                                        \
  do {                                                                                   \
    if (!(cond)) [[unlikely]] {                                                          \
      ::ringlog::base::detail::assert_failed(__FILE__, __LINE__, #cond, (msg));          \
    }                                                                                    \
  } while (false)

/// RINGLOG_ASSERT_OP(a, op, b): like RINGLOG_ASSERT(a op b) but prints both integer values.
#define RINGLOG_ASSERT_OP(a, op, b)                                                      \
  do {                                                                                   \
    const auto ringlog_lhs_ = (a);                                                       \
    const auto ringlog_rhs_ = (b);                                                       \
    if (!(ringlog_lhs_ op ringlog_rhs_)) [[unlikely]] {                                  \
      ::ringlog::base::detail::assert_failed_values(__FILE__, __LINE__, #a " " #op " " #b, \
                                                    static_cast<long long>(ringlog_lhs_),  \
                                                    static_cast<long long>(ringlog_rhs_)); \
    }                                                                                    \
  } while (false)
