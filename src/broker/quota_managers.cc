#include "quota_managers.h"

namespace ringlog::broker::detail {

int64_t replication_throttles::acquire(side s, int64_t rate, int64_t now_ms) {
  if (rate == constants::replication_throttled_rate_unbounded) return 0;
  auto& b = sides_[static_cast<size_t>(s)];
  std::lock_guard lock(b.mutex);
  b.state.set_rate(rate, now_ms);
  return b.state.acquire(now_ms);
}

void replication_throttles::record(side s, int64_t bytes, int64_t rate, int64_t now_ms) {
  if (rate == constants::replication_throttled_rate_unbounded) return;
  auto& b = sides_[static_cast<size_t>(s)];
  std::lock_guard lock(b.mutex);
  b.state.set_rate(rate, now_ms);
  b.state.record(bytes, now_ms);
}

replication_throttle_figures replication_throttles::figures() const {
  auto of = [this](side s) {
    const auto& b = sides_[static_cast<size_t>(s)];
    std::lock_guard lock(b.mutex);
    return replication_throttle_side_figures{b.state.throttled_bytes_total(), b.state.throttle_time_ms_total()};
  };
  return {of(side::leader), of(side::follower)};
}

}  // namespace ringlog::broker::detail
