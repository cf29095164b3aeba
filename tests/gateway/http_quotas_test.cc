// The HTTP side of client quotas (issue 31, http_quotas.h): which routes count bytes under which
// quota, Retry-After's rounding, and the throttled-clients map with its bound.
#include "http_quotas.h"

#include <doctest/doctest.h>

using namespace ringlog;
using namespace ringlog::gateway;
using security::quota_key;

TEST_CASE("route_byte_quota: produce routes count under producer_byte_rate, record reads under consumer_byte_rate") {
  CHECK(route_byte_quota("POST", "/topics/{topic}") == quota_key::producer_byte_rate);
  CHECK(route_byte_quota("POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch") ==
        quota_key::producer_byte_rate);
  CHECK(route_byte_quota("GET", "/topics/{topic}/partitions/{partition}/records") == quota_key::consumer_byte_rate);
  CHECK(route_byte_quota("GET", "/consumers/{group}/instances/{instance}/records") == quota_key::consumer_byte_rate);
  CHECK_FALSE(route_byte_quota("GET", "/topics/{topic}").has_value());
  CHECK_FALSE(route_byte_quota("PUT", "/v3/clusters/{cluster_id}/client-quotas").has_value());
}

TEST_CASE("retry_after_seconds rounds up and is at least 1") {
  CHECK(retry_after_seconds(1) == 1);
  CHECK(retry_after_seconds(1000) == 1);
  CHECK(retry_after_seconds(1001) == 2);
  CHECK(retry_after_seconds(10999) == 11);
  CHECK(retry_after_seconds(0) == 1);
}

TEST_CASE("http_throttles: a throttle runs until its end, per client and key; a later end wins") {
  http_throttles t;
  const auto now = http_throttles::clock::time_point{} + std::chrono::hours(1);
  CHECK(t.remaining_ms(quota_key::producer_byte_rate, "ANONYMOUS", "app", now) == 0);
  t.throttle(quota_key::producer_byte_rate, "ANONYMOUS", "app", 2500, now);
  CHECK(t.remaining_ms(quota_key::producer_byte_rate, "ANONYMOUS", "app", now) == 2500);
  CHECK(t.remaining_ms(quota_key::producer_byte_rate, "ANONYMOUS", "app", now + std::chrono::milliseconds(2000)) == 500);
  CHECK(t.remaining_ms(quota_key::producer_byte_rate, "ANONYMOUS", "app", now + std::chrono::milliseconds(2500)) == 0);
  // Another client id, user or key is not throttled by it.
  CHECK(t.remaining_ms(quota_key::producer_byte_rate, "ANONYMOUS", "other", now) == 0);
  CHECK(t.remaining_ms(quota_key::producer_byte_rate, "alice", "app", now) == 0);
  CHECK(t.remaining_ms(quota_key::consumer_byte_rate, "ANONYMOUS", "app", now) == 0);
  // A shorter throttle does not cut a running one short; 0 ms adds nothing.
  t.throttle(quota_key::producer_byte_rate, "ANONYMOUS", "app", 100, now);
  CHECK(t.remaining_ms(quota_key::producer_byte_rate, "ANONYMOUS", "app", now) == 2500);
  t.throttle(quota_key::producer_byte_rate, "ANONYMOUS", "zero", 0, now);
  CHECK(t.size() == 1);
}

TEST_CASE("http_throttles holds at most http_throttled_clients_max clients, dropping ended throttles first") {
  http_throttles t;
  const auto now = http_throttles::clock::time_point{} + std::chrono::hours(1);
  for (size_t i = 0; i < http_throttled_clients_max; ++i) {
    t.throttle(quota_key::consumer_byte_rate, "u", "c" + std::to_string(i), i % 2 == 0 ? 10 : 60'000, now);
  }
  CHECK(t.size() == http_throttled_clients_max);
  // Later, the even clients' throttles have ended: they make room.
  const auto later = now + std::chrono::seconds(1);
  t.throttle(quota_key::consumer_byte_rate, "u", "new", 1000, later);
  CHECK(t.size() == http_throttled_clients_max / 2 + 1);
  CHECK(t.remaining_ms(quota_key::consumer_byte_rate, "u", "new", later) == 1000);
  CHECK(t.remaining_ms(quota_key::consumer_byte_rate, "u", "c1", later) == 59'000);
  // Full of running throttles: one is forgotten, never more than the bound.
  for (size_t i = 0; i < http_throttled_clients_max; ++i) {
    t.throttle(quota_key::consumer_byte_rate, "v", "d" + std::to_string(i), 60'000, later);
  }
  CHECK(t.size() == http_throttled_clients_max);
}
