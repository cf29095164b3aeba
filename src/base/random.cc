#include "ringlog/base/random.h"

#include <mutex>
#include <random>

namespace ringlog::base {

namespace {

class system_random final : public random_source {
 public:
  uint64_t next_u64() override {
    std::lock_guard lock(mutex_);
    // std::random_device yields 32 bits per call (its result_type is unsigned int).
    return (uint64_t{device_()} << 32) | uint64_t{device_()};
  }

 private:
  std::mutex mutex_;
  std::random_device device_;
};

}  // namespace

random_source& system_random_source() {
  static system_random source;
  return source;
}

uint64_t seeded_random::next_u64() {
  state_ += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace ringlog::base
