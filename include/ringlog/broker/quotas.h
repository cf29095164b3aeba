#pragma once
// Client quotas as the broker API shows them (issue 31; Kafka's DescribeClientQuotas (48) and
// AlterClientQuotas (49), KIP-546; the model and its rules are in security/quota.h).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/security/quota.h"

namespace ringlog::broker {

/// One stored entity and its quotas (key -> value in the key's unit).
struct client_quota_entry {
  security::client_quota_entity entity;
  std::map<security::quota_key, double> values;
};

/// A change of one entity's quotas: each key set to a value, or removed (nullopt).
struct client_quota_alteration {
  security::client_quota_entity entity;
  std::map<security::quota_key, std::optional<double>> ops;
};

/// Usage counted under one quota sensor since the broker started (for /metrics): the sensor key
/// names the client (`user=alice,client-id=app`; security::quota_match::sensor_key).
struct client_quota_usage {
  security::quota_key key = security::quota_key::producer_byte_rate;
  std::string sensor_key;
  /// The quota bounding the client now, in the key's unit: the value its entity holds in the
  /// image now; none once that quota was removed (the totals stay: they count since start).
  std::optional<double> bound;
  double total = 0;               // bytes, %-ms or mutations recorded
  int64_t throttle_time_ms_total = 0;   // throttle times handed out
  int64_t throttled_total = 0;          // requests throttled
};

}  // namespace ringlog::broker
