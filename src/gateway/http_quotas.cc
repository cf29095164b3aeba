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

std::string http_throttles::entry_key(security::quota_key key, std::string_view user, std::string_view client_id) {
  std::string out(security::to_string(key));
  out += '\0';
  out += user;
  out += '\0';
  out += client_id;
  return out;
}

int64_t http_throttles::remaining_ms(security::quota_key key, std::string_view user, std::string_view client_id,
                                     clock::time_point now) const {
  const std::string k = entry_key(key, user, client_id);
  std::lock_guard lock(mutex_);
  auto it = until_.find(k);
  if (it == until_.end() || it->second <= now) return 0;
  // Rounded up: a client told "0 ms left" must not be refused.
  return std::chrono::ceil<std::chrono::milliseconds>(it->second - now).count();
}

void http_throttles::throttle(security::quota_key key, std::string_view user, std::string_view client_id,
                              int64_t throttle_ms, clock::time_point now) {
  if (throttle_ms <= 0) return;
  const auto end = now + std::chrono::milliseconds(throttle_ms);
  std::string k = entry_key(key, user, client_id);
  std::lock_guard lock(mutex_);
  if (until_.size() >= http_throttled_clients_max && !until_.contains(k)) {
    std::erase_if(until_, [now](const auto& e) { return e.second <= now; });
    // Still full of running throttles: forget one (see http_throttled_clients_max).
    if (until_.size() >= http_throttled_clients_max) until_.erase(until_.begin());
  }
  auto& held = until_[std::move(k)];
  held = std::max(held, end);
}

size_t http_throttles::size() const {
  std::lock_guard lock(mutex_);
  return until_.size();
}

}  // namespace ringlog::gateway
