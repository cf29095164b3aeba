#include "ringlog/base/assert.h"

namespace ringlog::base::detail {

void assert_failed(const char* file, int line, const char* condition, const char* detail) noexcept {
  std::fprintf(stderr, "ringlog: assertion failed at %s:%d: %s (%s)\n", file, line, condition, detail);
  std::fflush(stderr);
  std::abort();
}

void assert_failed_values(const char* file, int line, const char* condition, long long lhs,
                          long long rhs) noexcept {
  std::fprintf(stderr, "ringlog: assertion failed at %s:%d: %s (left %lld, right %lld)\n", file, line,
               condition, lhs, rhs);
  std::fflush(stderr);
  std::abort();
}

}  // namespace ringlog::base::detail
