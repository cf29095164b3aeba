#pragma once
// Client quotas at the HTTP doors (issue 31). The broker measures every client's bytes against
// its quota (security_api::record_client_quota, Kafka's ClientQuotaManager); the gateway only decides
// what an HTTP client feels of a throttle. As Kafka does, the request that goes over is answered
// normally and the throttle applies afterwards (KIP-219): the client's later requests of the same
// kind are refused with 429, Retry-After (whole seconds, rounded up) and Confluent's 42901 body
// until the throttle time has passed. Streams (NDJSON, SSE, WebSocket, a chunked produce) are
// slowed by the throttle time instead of closed.
//
// Who a client is: user = the HTTP principal's name ("ANONYMOUS" with authentication off);
// client-id = the X-Client-Id header, else the peer's IP address (so clients without the header
// are told apart by address, and a `client-id=<default>` quota bounds each address alone).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ringlog/security/quota.h"

namespace ringlog::gateway {

/// The header a client names its client id with (Kafka's client.id; documented in the README
/// and http-api/openapi.yaml).
inline constexpr const char* client_id_header = "X-Client-Id";

/// Throttled HTTP clients remembered at once. Each entry is a few dozen bytes; a client forgotten
/// when the map is full loses nothing of its limit: the broker's sensor still measures it over
/// quota, so its next request is answered and throttled again (one request late).
inline constexpr size_t http_throttled_clients_max = 10'000;

/// The byte quota a route's traffic counts under: producer_byte_rate for the produce routes
/// (v2 POST /topics/..., v3 .../records and .../records:batch: the request body), consumer_byte_rate
/// for the record reads (v2 partition and consumer-instance records, v3 dead-letter records: the
/// response body); nullopt for every other route.
std::optional<security::quota_key> route_byte_quota(std::string_view method, std::string_view pattern);

/// Seconds for Retry-After: `ms` rounded up, at least 1 (RFC 9110 section 10.2.3 counts whole seconds).
int64_t retry_after_seconds(int64_t ms);

/// Which clients are throttled now, and until when. Shared by the connection threads of one HTTP
/// listener; at most http_throttled_clients_max entries.
class http_throttles {
 public:
  using clock = std::chrono::steady_clock;

  /// ms left of the throttle of (`key`, `user`, `client_id`) at `now`; 0 when none runs.
  [[nodiscard]] int64_t remaining_ms(security::quota_key key, std::string_view user, std::string_view client_id,
                                     clock::time_point now) const;
  /// Throttles the client for `throttle_ms` from `now` (a later end than one already running wins).
  void throttle(security::quota_key key, std::string_view user, std::string_view client_id, int64_t throttle_ms,
                clock::time_point now);
  /// Entries held (tests and bounds).
  [[nodiscard]] size_t size() const;

 private:
  static std::string entry_key(security::quota_key key, std::string_view user, std::string_view client_id);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, clock::time_point> until_;
};

}  // namespace ringlog::gateway
