#pragma once
// The only way cores draw random numbers (design.md section 3; issue 28 stage F): a source handed
// in by the composition root, real or seeded, so a simulation replays the same ids from its seed.

#include <cstdint>

namespace ringlog::base {

class random_source {
 public:
  virtual ~random_source() = default;
  /// 64 random bits. Safe to call from any thread (sources say how).
  [[nodiscard]] virtual uint64_t next_u64() = 0;
};

/// The operating system's entropy (std::random_device), one per process, behind a lock: topic ids,
/// incarnation ids and ACL ids are drawn rarely, so the lock costs nothing that matters.
random_source& system_random_source();

/// A deterministic source for simulations and tests: splitmix64 (Steele, Lea and Flood, "Fast
/// splittable pseudorandom number generators", 2014) from `seed`. Not thread-safe: one per
/// single-threaded simulated run.
class seeded_random final : public random_source {
 public:
  explicit seeded_random(uint64_t seed) : state_(seed) {}
  [[nodiscard]] uint64_t next_u64() override;

 private:
  uint64_t state_;
};

}  // namespace ringlog::base
