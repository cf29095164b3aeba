#include "http_quotas.h"

#include <algorithm>
#include <array>

namespace ringlog::gateway {

namespace {

struct byte_quota_route {
  std::string_view method;
  std::string_view pattern;
  security::quota_key key;
};

constexpr std::array<byte_quota_route, 7> byte_quota_routes = {{
    {"POST", "/topics/{topic}", security::quota_key::producer_byte_rate},
    {"POST", "/topics/{topic}/partitions/{partition}", security::quota_key::producer_byte_rate},
    {"POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/records", security::quota_key::producer_byte_rate},
    {"POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch", security::quota_key::producer_byte_rate},
    {"GET", "/topics/{topic}/partitions/{partition}/records", security::quota_key::consumer_byte_rate},
    {"GET", "/consumers/{group}/instances/{instance}/records", security::quota_key::consumer_byte_rate},
    {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/dead-letters/{topic_name}/records",
     security::quota_key::consumer_byte_rate},
}};

}  // namespace

std::optional<security::quota_key> route_byte_quota(std::string_view method, std::string_view pattern) {
  for (const auto& r : byte_quota_routes) {
    if (r.method == method && r.pattern == pattern) return r.key;
  }
  return std::nullopt;
}

int64_t retry_after_seconds(int64_t ms) { return std::max<int64_t>(1, (ms + 999) / 1000); }

int64_t retry_after_seconds_admitted(int64_t left_ms, const std::function<int64_t(int64_t)>& throttle_at) {
  int64_t seconds = retry_after_seconds(left_ms);
  for (int probe = 0; probe < retry_after_probes_max; ++probe) {
    const int64_t at_ms = seconds * 1000;
    const int64_t left_then = std::max(throttle_at(at_ms), throttle_at(at_ms + 999));
    if (left_then == 0) return seconds;
    seconds += retry_after_seconds(left_then);
  }
  return seconds;
}

}  // namespace ringlog::gateway
