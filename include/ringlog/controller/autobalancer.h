#pragma once
// The partition autobalancer's decisions (issue 33; Redpanda's partition_autobalancing_mode,
// with its names): pure functions of the metadata image, the times brokers were first seen
// unavailable and the clock value given, so the broker's tick only carries them out.
//
// Modes (partition.autobalancer.mode):
// - off: nothing moves by itself (Kafka's behaviour, and the default here; Redpanda's default is
//   node_add).
// - node_add: a broker that is registered, unfenced and holds no replica (a new broker) gets its
//   share: a rebalance plan is started for it without a command.
// - continuous: node_add, plus: a broker unavailable (fenced, in controlled shutdown, or listed by
//   a partition without being registered) for longer than
//   partition.autobalancer.node.availability.timeout.ms has its replicas moved to the others (a
//   drain like a decommission's, but it is not unregistered: back, it holds nothing and node_add
//   gives it replicas again); and every partition.autobalancer.tick.interval.ms a rebalance plan
//   is started when it moves something.
// In every mode nothing starts while a partition is being reassigned or a broker decommissioned
// (one set of moves at a time), and the planner leaves partitions under min.insync.replicas alone.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "ringlog/controller/metadata_image.h"

namespace ringlog::controller {

enum class autobalancer_mode : int8_t { off, node_add, continuous };

/// "off", "node_add", "continuous"; nullopt for anything else (case-sensitive, as Redpanda's).
std::optional<autobalancer_mode> parse_autobalancer_mode(std::string_view text);
std::string_view to_string(autobalancer_mode mode);
/// The accepted values, for refusals: "off, node_add, continuous".
inline constexpr std::string_view autobalancer_modes_text = "off, node_add, continuous";

/// Why the autobalancer starts moves; also the label of ringlog_autobalancer_moves_started_total.
enum class autobalance_reason : int8_t { none, node_add, unavailable, balance };
std::string_view to_string(autobalance_reason reason);

/// Brokers unavailable in `image`: registered and fenced or in controlled shutdown, or listed as a
/// partition's replica without a registration; brokers being decommissioned or decommissioned are
/// not (their decommission handles them). By id.
std::set<int32_t> unavailable_brokers(const metadata_image& image);

/// `since` (node id -> wall ms first seen unavailable) brought up to `image` at `now_ms`: brokers
/// unavailable now keep their time or get now_ms, the others are dropped.
std::map<int32_t, int64_t> track_unavailable(const metadata_image& image, const std::map<int32_t, int64_t>& since,
                                             int64_t now_ms);

struct autobalancer_inputs {
  autobalancer_mode mode = autobalancer_mode::off;
  int64_t now_ms = 0;
  /// partition.autobalancer.node.availability.timeout.ms: unavailable longer than this (ms,
  /// exclusive) and a broker's replicas move off (continuous only).
  int64_t node_availability_timeout_ms = 900'000;
  /// partition.autobalancer.tick.interval.ms: continuous mode plans a balance this often, ms.
  int64_t tick_interval_ms = 30'000;
  /// When a node_add or unavailable plan was last made (ms; < 0: never): retried at most every
  /// constants::autobalancer_retry_interval_ms.
  int64_t last_attempt_ms = -1;
  /// When continuous mode last planned a balance (ms; < 0: never).
  int64_t last_balance_ms = -1;
};

struct autobalancer_decision {
  /// What to plan now; none: nothing (`waiting` may say why).
  autobalance_reason reason = autobalance_reason::none;
  /// Continuous mode: brokers unavailable longer than the timeout that still hold a replica (their
  /// replicas move off; they take none). Filled whatever `reason` is. By id.
  std::set<int32_t> unavailable_brokers_draining;
  /// Registered, unfenced brokers that hold no replica (node_add's new brokers). By id.
  std::vector<int32_t> new_brokers;
  /// Why nothing starts although something is due ("" when nothing is due or it starts).
  std::string_view waiting;
};

/// What the autobalancer does now (see the modes above). Priority: unavailable brokers' drain,
/// then node_add, then continuous mode's periodic balance; none while a partition is being
/// reassigned or a broker decommissioned. Continuous mode does not balance while a broker is
/// unavailable for less than the timeout (it may come back: moving its share now would move it
/// twice). Retries of node_add and drains wait autobalancer_retry_interval_ms after the last.
autobalancer_decision decide_autobalance(const metadata_image& image, const std::map<int32_t, int64_t>& unavailable_since,
                                         const autobalancer_inputs& inputs);

}  // namespace ringlog::controller
