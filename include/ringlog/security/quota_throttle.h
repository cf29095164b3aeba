#pragma once
// The throttle time a sensor asks (issue 31): how long a client over its quota waits before the
// next request of its connection is read. Apart from quota.h so a change here does not rebuild
// every module that includes the broker's API.

#include <cstdint>

#include "ringlog/security/quota.h"

namespace ringlog::security {

/// The longest throttle any quota asks, ms: Kafka's throttle_time_ms fields are int32 (24.8 days).
/// Byte rates (client_quota_sensors), controller mutations (quota_token_bucket::throttle_time_ms:
/// a tiny rate such as 1e-20/s would otherwise ask more ms than an int64 holds) and
/// request_percentage (one sample) are all clamped to it before they reach a wire or Retry-After.
/// (Here, not in quota.h, so that the broker's API does not rebuild for it.)
inline constexpr int64_t quota_throttle_ms_max = INT32_MAX;

/// The first ms from `now_ms` at which `rate`, with nothing more recorded, is at or under
/// `bound_per_second` (rate_per_second(now_ms + X) <= bound): 0 when it already is, capped at
/// `max_ms`; exact to the ms.
///
/// Why not KIP-219's X = (O - T) / T x W (quota_throttle_time_ms(observed, ...), Kafka's
/// ClientQuotaManager.throttleTime): that formula assumes the window W grows by X while the
/// client waits, which Kafka's own Rate does not do. (1) A young sensor's window is padded to
/// samples-1 whole windows (Rate.windowSize), and the padding shrinks by one window at each
/// sample boundary, so after X the rate is still over the bound; (2) a sample expiring in the
/// meantime lowers it sooner. A client that does not wait by itself (librdkafka: KIP-219 "not
/// supported") and pipelines 1 MB produce requests had its next request read the moment the
/// mute ended, still over the bound: 1.43 MiB/s over 10 s under producer_byte_rate=1 MiB/s
/// (the model in tests/security/quota_test.cc; bench/run-quota-bench.py measured 1.36-1.39
/// over 20 s). Waiting until the sensor's own rate is back at the bound keeps Kafka's Rate, its
/// samples and its young-window rule, and holds that client to +-20% over 10 s (issue 31).
///
/// Cost: at most max_ms / coarse step (sample_ms / 100) evaluations of the rate, plus 1 ms steps
/// inside each coarse step where the rate falls to the bound or an event (an expiry or a sample
/// boundary) happens; only called for a client over its quota.
[[nodiscard]] int64_t quota_throttle_time_ms(const quota_rate& rate, double bound_per_second, int64_t now_ms,
                                             int64_t max_ms);

}  // namespace ringlog::security
