#include "ringlog/base/clock.h"

#include <chrono>

namespace ringlog::base {

int64_t system_clock::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t system_clock::monotonic_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace ringlog::base
