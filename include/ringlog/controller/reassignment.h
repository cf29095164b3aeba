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
//   3. complete, once every replica of T is in the ISR, in two steps:
//      a. when the leader is being removed, the leadership moves first to the first replica of T
//         (in T's order) that is in the ISR and usable, in a new leader epoch; the old leader stays
//         a replica and in the ISR, so the new leader's high watermark passes nothing the old one
//         has not fetched as its follower;
//      b. once the leader is in T and every removing replica has applied the metadata the
//         completion is computed from (its heartbeat's CurrentMetadataOffset reaches it, or it is
//         fenced: completion_barrier), one PartitionChangeRecord sets replicas = T, ISR = ISR & T
//         and clears adding and removing. The removed replicas see they are no longer replicas and
//         delete their local log.
//      Without 3b's wait, a removed leader that applied the change late still answered end
//      offsets and fetches as leader below what the new leader had acknowledged (issue 33's
//      fault bed). Kafka completes and moves the leader in one record; this is stricter.
//      Either step rides on the leader's ISR expansion (AlterPartition) when it can, else on the
//      active controller's heartbeat tick (complete_reassignments_tick).
// A cancel (no target) puts back O: replicas = O, ISR = ISR & O. When an adding replica leads
// (after 3a), it stays a removing replica and leaves by step 3 like any removed leader (hands
// over first, goes once it has applied that); a new target that leaves the leader out does the
// same. (A second cancel during that hand-over keeps it as a replica: it then counts as original.) Every record names the partition epoch it
// was computed at (RinglogExpectedPartitionEpoch): a plan made from a stale image is refused
// where it is applied, and its caller plans again.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/controller/errc.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/protocol/wire.h"

namespace ringlog::controller {

/// Whether broker `broker_id` has applied the metadata a reassignment's completion is computed
/// from (step 3b above): a removing replica leaves only once this holds for it.
using metadata_caught_up = std::function<bool(int32_t broker_id)>;

/// The active controller's record of how far each broker has applied the metadata (the
/// CurrentMetadataOffset of its heartbeats), and the point each ready partition waits for.
/// In memory only: a new active controller starts empty and learns again from heartbeats within
/// one interval (a completion waits at most that much longer).
class completion_barrier {
 public:
  /// A heartbeat of `broker_id` in `broker_epoch` says it has applied and reconciled the metadata
  /// up to `metadata_offset` (inclusive; -1: nothing).
  void heard(int32_t broker_id, int64_t broker_epoch, int64_t metadata_offset);
  /// The rule for partition `partition` of `topic` (state `p`) in `image`: a broker has caught up
  /// when it is fenced or unregistered (its leadership lease has lapsed: it serves nothing as
  /// leader) or its last heartbeat in its current epoch reported an offset at or past the image
  /// offset at which this partition, at its current partition epoch, was first seen ready.
  metadata_caught_up rule(const controller::metadata_image& image, const std::string& topic, int32_t partition,
                          const controller::partition_image& p);
  /// Drops the waits of partitions no longer being reassigned (bounds the map by the partitions
  /// under reassignment).
  void forget_finished(const controller::metadata_image& image);
  bool in_flight = false;   // complete_reassignments_tick: a commit under way

 private:
  struct report {
    int64_t broker_epoch = -1;
    int64_t metadata_offset = -1;
  };
  struct wait {
    int32_t partition_epoch = -1;
    int64_t metadata_offset = -1;
  };
  std::map<int32_t, report> reports_;
  std::map<std::pair<std::string, int32_t>, wait> waits_;
};

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
/// A reassignment whose target is already in sync takes step 3 at once where `caught_up` allows.
std::vector<reassignment_plan> plan_reassignments(const controller::metadata_image& image,
                                                  const std::vector<reassignment_target>& targets,
                                                  const metadata_caught_up& caught_up);

/// Takes step 3 of the reassignment of partition `current` in `change` (a change of that
/// partition about to be committed, with its ISR in change.isr or unchanged when null) once every
/// target replica is in the resulting ISR: 3a sets change.leader when the leader is being removed
/// and a target replica in the ISR is usable to lead; else 3b, when every removing replica has
/// `caught_up`, sets replicas, ISR and adding/removing (both empty). Returns whether it changed
/// `change`. Nothing changes when no reassignment is under way.
bool complete_reassignment_if_ready(const controller::metadata_image& image, const controller::partition_image& current,
                                    protocol::partition_change_record& change, const metadata_caught_up& caught_up);

}  // namespace ringlog::controller
