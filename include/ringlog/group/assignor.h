#pragma once
// Server-side assignors (design.md section 7: the coordinator assigns, in the spirit of KIP-848,
// because HTTP clients should not run assignors). Pure functions: same input, same output.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ringlog/group/types.h"

namespace ringlog::group {

struct assignor_member {
  std::string member_id;
  /// Kafka's assignors order members by group.instance.id when present, else by member id, so a
  /// restarted static member lands in the same slot.
  std::optional<std::string> group_instance_id;
  /// Resolved subscription: the topics this member may receive partitions of.
  std::set<std::string> topics;
  /// The member's previous target (only cooperative_sticky reads it).
  partition_set current;
};

/// member id -> partitions. Every member of the input has an entry (possibly empty).
using assignment = std::map<std::string, partition_set>;

/// Postcondition of every assignor: each partition of `available` whose topic some member
/// subscribes to is in exactly one member's set, and only in the set of a subscriber of its topic.

/// Kafka's RangeAssignor: per topic, subscribers in order get consecutive ranges; the first
/// (partitions % subscribers) of them get one extra.
assignment assign_range(const std::vector<assignor_member>& members, const partition_set& available);

/// Kafka's RoundRobinAssignor: all partitions in (topic, partition) order dealt to members in
/// order, skipping members not subscribed to the partition's topic.
assignment assign_round_robin(const std::vector<assignor_member>& members, const partition_set& available);

/// Kafka's CooperativeStickyAssignor in spirit: every member keeps what it had (if still
/// available and subscribed), unowned partitions go to the least-loaded eligible member, then
/// single partitions move from the most to the least loaded eligible member while that narrows
/// the spread by 2 or more. With identical subscriptions the result is balanced (counts differ
/// by at most 1) and moves the fewest partitions that balance requires.
assignment assign_cooperative_sticky(const std::vector<assignor_member>& members, const partition_set& available);

assignment run_assignor(assignor_kind kind, const std::vector<assignor_member>& members,
                        const partition_set& available);

}  // namespace ringlog::group
