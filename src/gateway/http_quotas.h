#pragma once
// Client quotas at the HTTP doors (issue 31). The broker measures every client's bytes against
// its quota (security_api::record_client_quota, Kafka's ClientQuotaManager); the gateway only decides
// what an HTTP client feels of a throttle. As Kafka does, the request that goes over is answered
// normally and the throttle applies afterwards (KIP-219): the client's later requests of the same
// kind are refused with 429, Retry-After (whole seconds, rounded up) and Confluent's 42901 body
// while the broker's sensor asks a throttle (security_api::client_quota_throttle_ms). That answer
// follows the quota in force at each request: raised, the throttle shrinks to what the new bound
// asks; deleted, there is none (the gateway keeps no throttle of its own: a per-client record
// kept 429-ing a client after its quota was deleted, the breaker of session 38). Streams (NDJSON,
// SSE, WebSocket, a chunked produce) are slowed by the throttle time instead of closed.
//
// Who a client is: user = the HTTP principal's name ("ANONYMOUS" with authentication off);
// client-id = the X-Client-Id header, else the peer's IP address (so clients without the header
// are told apart by address, and a `client-id=<default>` quota bounds each address alone).

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "ringlog/security/quota.h"

namespace ringlog::gateway {

/// The header a client names its client id with (Kafka's client.id; documented in the README
/// and http-api/openapi.yaml).
inline constexpr const char* client_id_header = "X-Client-Id";

/// The byte quota a route's traffic counts under: producer_byte_rate for the produce routes
/// (v2 POST /topics/..., v3 .../records and .../records:batch: the request body), consumer_byte_rate
/// for the record reads (v2 partition and consumer-instance records, v3 dead-letter records: the
/// response body); nullopt for every other route.
std::optional<security::quota_key> route_byte_quota(std::string_view method, std::string_view pattern);

/// Seconds for Retry-After: `ms` rounded up, at least 1 (RFC 9110 section 10.2.3 counts whole seconds).
int64_t retry_after_seconds(int64_t ms);

/// Seconds a client whose sensor asks `left_ms` now is told to wait: the first whole second S
/// (from retry_after_seconds(left_ms) on) such that `throttle_at(ms from now)` is 0 at S and
/// through the second after it, when a client that waited S seconds arrives. Not simply left_ms
/// rounded up: a young sensor's window is padded to samples - 1 whole samples and the padding
/// shrinks at each sample boundary (Kafka's Rate.windowSize), so its rate falls under the bound
/// within a sample and climbs back over it at the next boundary; told "1 s" each time, a client
/// arrived in that phase again, 11 times in a row (session 41's new user: consumer_byte_rate=20480,
/// one 215 KB read). Looks at most retry_after_probes_max times; past them, the last second tried.
int64_t retry_after_seconds_admitted(int64_t left_ms, const std::function<int64_t(int64_t)>& throttle_at);
/// Bound on retry_after_seconds_admitted's look-ahead: each probe evaluates a sensor twice, and
/// a throttle outlasting the whole quota window (11 s by default) ends by its own figure.
inline constexpr int retry_after_probes_max = 16;

}  // namespace ringlog::gateway
