#pragma once
// The partition autobalancer's state on a node (issue 33): when each broker was first seen
// unavailable, when it last planned, and the moves it started. The decisions are
// controller::decide_autobalance's (ringlog/controller/autobalancer.h); active_controller::autobalancer_tick
// (autobalancer.cc) carries them out on the active controller. Every node tracks unavailability
// on its own clock, so a newly elected controller's timers already run.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "ringlog/broker/broker.h"
#include "ringlog/controller/autobalancer.h"

namespace ringlog::broker::detail {

struct autobalancer {
  // ---- controller shard only
  /// Node id -> wall ms this node first saw it unavailable (controller::track_unavailable).
  std::map<int32_t, int64_t> unavailable_since_ms;
  int64_t last_attempt_ms = -1;   // the last node_add or unavailable plan (-1: never)
  int64_t last_balance_ms = -1;   // continuous mode's last balance plan (-1: never)
  bool in_flight = false;         // moves it started are being committed
  std::string_view waiting;       // the last decision's `waiting`, logged when it changes
  /// The last decision's unavailable_brokers_draining (the rebalance answer shows it; a manual
  /// rebalance drains them too).
  std::set<int32_t> draining;

  // ---- any thread
  /// Reassignments started, by reason: node_add, balance, unavailable (relaxed counters for /metrics).
  std::array<std::atomic<int64_t>, 3> moves_started{};

  void count(controller::autobalance_reason reason, int64_t moves) {
    const size_t i = reason == controller::autobalance_reason::node_add ? 0
                     : reason == controller::autobalance_reason::balance ? 1
                                                                          : 2;
    moves_started[i].fetch_add(moves, std::memory_order_relaxed);
  }
  [[nodiscard]] autobalancer_figures figures() const {
    return {moves_started[0].load(std::memory_order_relaxed), moves_started[1].load(std::memory_order_relaxed),
            moves_started[2].load(std::memory_order_relaxed)};
  }
};

/// The reassignment targets of a plan's moves (cluster_balance.cc).
std::vector<partition_reassignment_target> reassignment_targets_of(const controller::rebalance_plan& plan);
/// How many reassignments of an answer were accepted (cluster_balance.cc).
int32_t reassignments_accepted(const std::vector<partition_reassignment_result>& results);

}  // namespace ringlog::broker::detail
