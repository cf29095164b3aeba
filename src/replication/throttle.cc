#include "ringlog/replication/throttle.h"

#include <algorithm>
#include <cmath>

#include "ringlog/base/assert.h"

namespace ringlog::replication {

double throttle_bucket::capacity() const {
  return static_cast<double>(rate_) * static_cast<double>(constants::replication_throttle_burst_ms) / 1000.0;
}

void throttle_bucket::refill(int64_t now_ms) {
  if (now_ms <= refilled_at_ms_) return;   // an earlier time counts as the last one
  const double gained = static_cast<double>(now_ms - refilled_at_ms_) * static_cast<double>(rate_) / 1000.0;
  available_ = std::min(capacity(), available_ + gained);
  refilled_at_ms_ = now_ms;
}

void throttle_bucket::set_rate(int64_t rate_bytes_per_second, int64_t now_ms) {
  RINGLOG_ASSERT_OP(rate_bytes_per_second, >=, 0);
  if (rate_bytes_per_second == rate_) return;
  if (unbounded()) {
    rate_ = rate_bytes_per_second;
    available_ = capacity();
    refilled_at_ms_ = now_ms;
    held_until_ms_ = now_ms;
    return;
  }
  refill(now_ms);
  // The waits handed out under the old rate end now: the new rate decides the next ones.
  if (held_until_ms_ > now_ms) {
    throttle_time_ms_total_ -= held_until_ms_ - now_ms;
    held_until_ms_ = now_ms;
  }
  rate_ = rate_bytes_per_second;
  available_ = std::min(available_, capacity());
}

int64_t throttle_bucket::acquire(int64_t now_ms) {
  if (unbounded()) return 0;
  refill(now_ms);
  if (available_ > 0) return 0;
  int64_t wait_ms = constants::replication_throttle_wait_max_ms;
  if (rate_ > 0) {
    // Strictly above zero after the wait: one ms more than the debt takes to repay.
    const double repay_ms = std::floor(-available_ * 1000.0 / static_cast<double>(rate_)) + 1;
    wait_ms = static_cast<int64_t>(std::min(repay_ms, static_cast<double>(wait_ms)));
  }
  RINGLOG_ASSERT_OP(wait_ms, >=, 1);
  const int64_t until = now_ms + wait_ms;
  throttle_time_ms_total_ += std::max<int64_t>(0, until - std::max(now_ms, held_until_ms_));
  held_until_ms_ = std::max(held_until_ms_, until);
  return wait_ms;
}

void throttle_bucket::record(int64_t bytes, int64_t now_ms) {
  RINGLOG_ASSERT_OP(bytes, >=, 0);
  if (unbounded()) return;
  refill(now_ms);
  available_ -= static_cast<double>(bytes);
  throttled_bytes_total_ += bytes;
}

}  // namespace ringlog::replication
