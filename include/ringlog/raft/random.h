#pragma once
// The only source of randomness of the raft module (design.md section 3: cores never call rand()).
// Election timeouts are drawn from it; the driver passes a seeded one, the simulator its own.

#include <cstdint>

#include "ringlog/base/assert.h"

namespace ringlog::raft {

class random_source {
 public:
  virtual ~random_source() = default;
  /// The next 64 random bits.
  virtual uint64_t next_u64() = 0;
  /// A uniform integer in [lo, hi] (inclusive both ends). Requires lo <= hi.
  int64_t uniform(int64_t lo, int64_t hi) {
    RINGLOG_ASSERT_OP(lo, <=, hi);
    const auto span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(next_u64() % span);
  }
};

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and the same sequence on every platform,
/// which is what a replayable simulation needs. Not for cryptography.
class seeded_random final : public random_source {
 public:
  explicit seeded_random(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() override {
    state_ += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

}  // namespace ringlog::raft
