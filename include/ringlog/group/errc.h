#pragma once
// Group coordinator failures, named as Kafka's error codes where one exists (snake_case), so the
// broker and HTTP layers translate them once (style.md "Errors").

#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::group {

enum class errc {
  invalid_group_id,             // empty or longer than limits::group_id_bytes_max
  group_id_not_found,           // no such group (admin calls, member calls on an unknown group)
  unknown_member_id,            // member id not (or no longer) in the group: expired, left, never joined
  illegal_generation,           // a commit named a generation that is not the member's current one
  partition_not_owned,          // commit/seek/fetch-progress for a partition the member does not own now
  inconsistent_subscription,    // mixing subscribe() and assign() on one member (Kafka's IllegalStateException)
  inconsistent_group_protocol,  // a joining member asks for an assignor other than the group's
  invalid_regular_expression,   // subscription pattern does not compile or is too long (KIP-848 error name)
  unknown_topic_or_partition,   // manual assignment names a topic/partition the caller's topic list lacks
  partition_assigned_elsewhere, // manual assignment of a partition another member already assigned itself
  invalid_session_timeout,      // session/rebalance timeout outside [limits::session_timeout_ms_min, _max]
  invalid_offset,               // negative commit/seek offset
  offset_metadata_too_large,    // commit metadata over limits::offset_metadata_bytes_max
  group_max_size_reached,       // limits::group_members_max
  too_many_groups,              // limits::groups_per_coordinator_max
  too_many_partitions,          // limits::commit_partitions_max / subscription_topics_max
  group_not_empty,              // delete or reset-offsets of a group that still has members
  no_offset_for_partition,      // auto.offset.reset=none and nothing committed
  corrupt_message,              // an __consumer_offsets record failed to decode (message says where)
  unsupported_version,          // an __consumer_offsets record has a version this code does not know
  duplicate_member_id,          // a join asked for a member id (REST instance name) already in the group
  // Kafka's classic group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit)
  rebalance_in_progress,        // the group is rebalancing: the member must (re)join
  member_id_required,           // JoinGroup v4+ without a member id: here is one, join again with it (KIP-394)
  fenced_instance_id,           // a static member's group.instance.id is now held by another member id (KIP-345)
  group_subscribed_to_topic,    // OffsetDelete of a topic a live member of the group consumes (KIP-496)
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::group
