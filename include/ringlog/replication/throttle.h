#pragma once
// Replication throttling (Kafka's leader.replication.throttled.rate and
// follower.replication.throttled.rate, KIP-73): one broker-wide bucket per side bounds the bytes
// of replication that is not keeping an in-sync replica in sync (a reassignment's adding replica,
// a follower catching up after it fell out of the ISR). In-sync replicas never touch it.
//
// The rule (a token bucket with debt; Kafka measures a Rate over quota.window.num samples
// instead, to the same effect):
//   - the bucket fills at `rate` bytes per second up to one second's worth
//     (constants::replication_throttle_burst_ms) and starts full;
//   - a throttled transfer may go while the bucket holds more than zero bytes; the bytes it
//     moved are taken afterwards, so one transfer larger than the bucket drives it below zero
//     (a debt, repaid at the rate before the next transfer goes). Over any span T the bytes
//     moved are at most rate x T + one second's worth + one transfer;
//   - while it is empty, a transfer waits the ms until it holds a byte again (at most
//     constants::replication_throttle_wait_max_ms; rate 0 never refills: nothing throttled moves);
//   - throttle time is the wall time during which a transfer was waiting on the bucket: the union
//     of the waits handed out, so two partitions held back for the same 300 ms count 300 ms.
// Pure: no clock, no lock; the caller passes now_ms (non-decreasing) and owns it on one thread.

#include <cstdint>

#include "ringlog/base/constants.h"

namespace ringlog::replication {

class throttle_bucket {
 public:
  /// Applies the configured rate (bytes/s, >= 0) at `now_ms`. A rate that changed keeps the
  /// bytes held, cut to the new capacity; from unbounded, the bucket starts full. Throttle time
  /// already counted past `now_ms` under the old rate is taken back.
  void set_rate(int64_t rate_bytes_per_second, int64_t now_ms);
  /// constants::replication_throttled_rate_unbounded: nothing is held back or counted.
  [[nodiscard]] bool unbounded() const { return rate_ == constants::replication_throttled_rate_unbounded; }

  /// 0 when a throttled transfer may go now; else the ms to wait (>= 1, at most
  /// replication_throttle_wait_max_ms), counted as throttle time.
  int64_t acquire(int64_t now_ms);
  /// Takes `bytes` (>= 0) a throttled transfer moved at `now_ms` from the bucket.
  void record(int64_t bytes, int64_t now_ms);

  /// Bytes held now (negative: a debt); for tests.
  [[nodiscard]] double available_bytes() const { return available_; }
  /// Bytes of throttled transfers since start (record's sum while bounded).
  [[nodiscard]] int64_t throttled_bytes_total() const { return throttled_bytes_total_; }
  /// Wall time transfers waited on the bucket since start, ms (the union of acquire's waits).
  [[nodiscard]] int64_t throttle_time_ms_total() const { return throttle_time_ms_total_; }

 private:
  void refill(int64_t now_ms);
  [[nodiscard]] double capacity() const;

  int64_t rate_ = constants::replication_throttled_rate_unbounded;
  double available_ = 0;
  int64_t refilled_at_ms_ = 0;
  int64_t held_until_ms_ = 0;   // end of the latest wait handed out
  int64_t throttled_bytes_total_ = 0;
  int64_t throttle_time_ms_total_ = 0;
};

}  // namespace ringlog::replication
