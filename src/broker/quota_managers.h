#pragma once
// What the broker measures to bound traffic (Kafka's QuotaManagers): its clients' quotas (issue
// 31: the rate sensors and KIP-599 buckets of security::client_quota_sensors; quotas.cc) and the
// two replication throttles (issue 33: leader.replication.throttled.rate and
// follower.replication.throttled.rate, Kafka's ReplicationQuotaManager; the partition module takes
// the leader's through partition_context, the follower's through replica_fetcher_host). Any
// thread: each under its own mutex, held for the few arithmetic steps of one call.

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "ringlog/broker/broker.h"
#include "ringlog/replication/throttle.h"
#include "ringlog/security/client_quota_sensors.h"

namespace ringlog::broker::detail {

/// Live quota sensors a broker measures (one per client under a quota and per key). Past it,
/// sensors idle for client_quota_sensor_idle_ms go; clients beyond that share one sensor per
/// matched entity (stricter, never looser).
inline constexpr size_t client_quota_sensors_max = 100'000;
/// A sensor idle this long is forgotten (Kafka's quota sensors expire after an hour).
inline constexpr int64_t client_quota_sensor_idle_ms = 3'600'000;

/// What this broker measures of its clients' quotas; any thread, under the mutex.
struct client_quota_state {
  std::mutex mutex;
  security::client_quota_sensors sensors{client_quota_sensors_max, client_quota_sensor_idle_ms};
};

/// The broker-wide buckets of replication throttling, one per side (replication/throttle.h has
/// the rule). The rate comes with every call (the live broker config, which dynamic broker configs
/// change at any time); an unbounded rate returns at once without taking a lock.
class replication_throttles {
 public:
  enum class side : uint8_t {
    leader = 0,     // bytes this broker, leading, serves to followers outside the ISR
    follower = 1,   // bytes this broker fetches for partitions whose ISR it is not in
  };
  /// 0: a throttled transfer of `s` may go at `now_ms` under `rate` (bytes/s); else the ms to wait
  /// (at most constants::replication_throttle_wait_max_ms), counted as throttle time.
  int64_t acquire(side s, int64_t rate, int64_t now_ms);
  /// Takes the `bytes` a throttled transfer of `s` moved.
  void record(side s, int64_t bytes, int64_t rate, int64_t now_ms);
  /// Both sides' totals since start (for /metrics).
  [[nodiscard]] replication_throttle_figures figures() const;

 private:
  struct bucket {
    mutable std::mutex mutex;
    replication::throttle_bucket state;
  };
  std::array<bucket, 2> sides_;
};

}  // namespace ringlog::broker::detail
