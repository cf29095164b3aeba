// The HTTP side of client quotas (issue 31, http_quotas.h): which routes count bytes under which
// quota and Retry-After's rounding (the throttle itself is the broker's sensor's: quota_test.cc).
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
