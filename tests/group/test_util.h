#pragma once
// Shared helpers of the group tests: build partition sets and drive heartbeats to a stable group
// while checking the invariants after every single operation.

#include <doctest.h>

#include <string>
#include <vector>

#include "ringlog/group/group_coordinator.h"

namespace ringlog::group::test {

inline topic_partition tp(const std::string& topic, int32_t p) { return topic_partition{topic, partition_id(p)}; }

inline void require_invariants(const group_coordinator& c) {
  const auto violation = c.check_invariants();
  if (violation) FAIL("invariant violated: " << *violation);
}

/// Heartbeats every member in turn (checking invariants after each) until the group is stable.
/// Returns the number of heartbeat rounds it took. Bounded: a cooperative rebalance needs 2.
inline int drive_until_stable(group_coordinator& c, const std::string& group, int64_t now_ms,
                              record_list* records = nullptr) {
  for (int round = 1; round <= 10; ++round) {
    const auto d = c.describe_group(group);
    if (d.state == group_state::stable || d.state == group_state::empty) return round - 1;
    for (const auto& m : d.members) {
      auto r = c.heartbeat(group, m.member_id, now_ms);
      REQUIRE(r.ok());
      if (records) records->insert(records->end(), r->records.begin(), r->records.end());
      require_invariants(c);
    }
  }
  FAIL("group " << group << " did not become stable in 10 heartbeat rounds");
  return -1;
}

/// partition -> owning member id, over the whole group.
inline partition_map<std::string> owners(const group_coordinator& c, const std::string& group) {
  partition_map<std::string> out;
  for (const auto& m : c.describe_group(group).members) {
    for (const auto& p : m.owned) out[p] = m.member_id;
  }
  return out;
}

}  // namespace ringlog::group::test
