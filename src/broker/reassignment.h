#pragma once
// Partition reassignment as the active controller decides it from the metadata image alone (pure
// functions, no I/O): KIP-455's AlterPartitionReassignments, with Kafka's KRaft rules
// (ReplicationControlManager.changePartitionReassignment, PartitionReassignmentReplicas,
// PartitionChangeBuilder.completeReassignmentIfNeeded) as the model.
//
// A reassignment of a partition from its original replicas O to target replicas T goes:
//   1. start: one PartitionChangeRecord sets replicas = T followed by O - T (in their order),
//      adding_replicas = T - O, removing_replicas = O - T. The adding replicas open the
//      partition and fetch from the leader like any follower.
//   2. each adding replica joins the ISR once caught up (the leader's AlterPartition).
//   3. complete: as soon as every replica of T is in the ISR, the same PartitionChangeRecord
//      that changes the ISR also sets replicas = T, ISR = ISR & T, clears adding and removing,
//      and - when the leader is being removed - gives the leadership to the first replica of T
//      (in T's order) that is in the ISR and usable, in a new leader epoch. The removed replicas
//      see they are no longer replicas and delete their local log.
// A cancel (no target) puts back O: replicas = O, ISR = ISR & O, the leadership moves to an
// in-sync replica of O when an adding replica led. Every record names the partition epoch it
// was computed at (RinglogExpectedPartitionEpoch): a plan made from a stale image is refused
// where it is applied, and its caller plans again.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/broker/errc.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/protocol/wire.h"

namespace ringlog::broker {

/// One partition of an AlterPartitionReassignments call.
struct reassignment_target {
  std::string topic;
  int32_t partition = 0;
  /// The target replicas, the first the preferred leader; nullopt cancels the partition's
  /// ongoing reassignment.
  std::optional<std::vector<int32_t>> replicas;
};

/// The plan for one target: a refusal, a change to commit, or neither (nothing to do).
struct reassignment_plan {
  std::string topic;
  int32_t partition = 0;
  /// unknown_topic_or_partition; invalid_replica_assignment (empty, repeated ids, a broker not
  /// registered, a cancel whose original replicas are all out of the ISR);
  /// no_reassignment_in_progress (a cancel of a partition not being reassigned). The message
  /// names the partition and what is wrong.
  std::optional<error> refused;
  std::optional<protocol::partition_change_record> change;
};

/// The replicas a partition is moving to: its replicas without the removing ones (all of them
/// when no reassignment is under way).
std::vector<int32_t> target_replicas(const controller::partition_image& p);
/// The replicas a partition had when its reassignment began: its replicas without the adding ones.
std::vector<int32_t> original_replicas(const controller::partition_image& p);

/// Plans each target against `image`, in order; a partition named again after its first target
/// is refused (invalid_replica_assignment). A target equal to the current replicas with no
/// reassignment under way is nothing to do (no change, no refusal).
std::vector<reassignment_plan> plan_reassignments(const controller::metadata_image& image,
                                                  const std::vector<reassignment_target>& targets);

/// Completes the reassignment of partition `current` in `change` (a change of that partition
/// about to be committed, with its ISR in change.isr or unchanged when null) when every target
/// replica is in the resulting ISR and a target replica in it is usable to lead if the leader
/// is being removed: sets replicas, ISR, adding/removing (both empty) and the leader as in step
/// 3 above. Returns whether it completed. Nothing changes when no reassignment is under way.
bool complete_reassignment_if_ready(const controller::metadata_image& image, const controller::partition_image& current,
                                    protocol::partition_change_record& change);

}  // namespace ringlog::broker
