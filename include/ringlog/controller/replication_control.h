#pragma once
// Replication control on the active controller as pure decisions (Kafka's
// ReplicationControlManager): AlterPartition's ISR changes (KIP-497, KIP-841), preferred leader
// elections on request and automatic ones (KIP-183, KIP-460, auto.leader.rebalance.enable),
// leaderships the image names for a broker from before its registration, and a new topic's
// records (CreateTopics, CreatePartitions). Each returns the metadata records to commit or the
// refusal, as Kafka's error names; the leader and ISR rules these build on (fencing, controlled
// shutdown, rejoin, which replica may lead) are placement.h's. Nothing here sends, commits or
// logs: the broker answers the RPCs, commits the records and logs (src/broker/replication_control.cc,
// topics_admin.cc, internal_topics.cc).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/controller/errc.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/controller/reassignment.h"
#include "ringlog/protocol/wire.h"

namespace ringlog::controller {

/// Partition `partition` of the topic with id `topic_id` in `image`, or null when either is unknown.
const partition_image* find_partition(const metadata_image& image, const uuid& topic_id, int32_t partition);

/// An AlterPartition the controller accepts: the change to commit.
struct isr_change {
  std::string topic;   // the partition's topic name
  /// The new ISR, at the partition epoch it was checked against (RinglogExpectedPartitionEpoch):
  /// a change that raced with this one (a fencing, a leader move) makes it fail where it applies.
  protocol::partition_change_record change;
  /// The change also takes step 3 of the partition's reassignment (reassignment.h): it sets the
  /// leader (3a) or the final replicas (3b) as well.
  bool completes_reassignment = false;
};

/// AlterPartition (KIP-497) of one partition of topic `topic_id`, sent by broker `broker_id`
/// (Kafka's ReplicationControlManager.alterPartition and validateIsr). Refusals, checked in this
/// order against `image`:
///   - unknown_topic_or_partition: no such topic id or partition;
///   - fenced_leader_epoch: `broker_id` does not lead the partition, or `request.leader_epoch` is
///     not the partition's leader epoch (a deposed leader's proposal);
///   - invalid_update_version: `request.partition_epoch` is not the partition's (the proposal was
///     made from a state that changed since: the leader learns the new one and proposes again);
///   - invalid_request: the new ISR leaves out the leader, or names a broker that is no replica;
///   - ineligible_replica (KIP-841): it adds a broker that is fenced or in controlled shutdown
///     (one already in the ISR may stay: only joining is refused).
/// When the new ISR brings in the last target replica of a reassignment, the same change
/// completes it (KIP-455; Kafka's PartitionChangeBuilder.completeReassignmentIfNeeded) as far as
/// `barrier`'s rule allows (complete_reassignment_if_ready; the rule is asked for only then).
result<isr_change> alter_partition(const metadata_image& image, int32_t broker_id, const uuid& topic_id,
                                   const protocol::alter_partition_request_data::partition_data& request,
                                   completion_barrier& barrier);

/// One partition's outcome in a preferred leader election.
struct election_outcome {
  std::string topic;
  int32_t partition = 0;
  int32_t leader = -1;   // its leader once the records commit: the preferred replica, or the current one (-1: none)
  /// election_not_needed (the preferred replica leads), preferred_leader_not_available (fenced,
  /// shutting down or out of the ISR), unknown_topic_or_partition; the message names the
  /// partition and why.
  std::optional<error> refused;
};

/// A preferred leader election: the PartitionChangeRecords to commit (one per partition that
/// elects) and every partition's outcome, in plan_preferred_elections's order.
struct leader_election {
  std::vector<protocol::metadata_record> records;
  std::vector<election_outcome> outcomes;
};

/// ElectLeaders with PREFERRED (KIP-460; the rule is KIP-183's, plan_preferred_elections) over
/// `wanted` (topic, partition) pairs; empty = every partition, then only those that elect.
leader_election elect_preferred_leaders(const metadata_image& image,
                                        const std::vector<std::pair<std::string, int32_t>>& wanted);

/// auto.leader.rebalance.enable's check (Kafka's QuorumController.maybeBalancePartitionLeaders,
/// KafkaController.checkAndTriggerAutoLeaderRebalance): the preferred leader elections of the
/// partitions whose preferred replica is an imbalanced broker (imbalanced_brokers with
/// leader.imbalance.per.broker.percentage `imbalance_percentage`), at most
/// constants::leader_rebalance_changes_max; empty when no broker is imbalanced. A preferred
/// replica out of the ISR, fenced or shutting down never gets its leadership back.
std::vector<protocol::metadata_record> balance_partition_leaders(const metadata_image& image,
                                                                 int32_t imbalance_percentage);

/// (topic, partition) -> the leader epoch in which the image named a broker leader while that
/// broker was not registered in its current incarnation (the broker notes them as it applies
/// partition states).
using stale_leadership_map = std::map<std::pair<std::string, int32_t>, int32_t>;

/// renew_stale_leadership's PartitionChangeRecord for each of `stale` (broker `broker_id`'s):
/// the leadership moves to the first other usable in-sync replica, or is renewed in a new leader
/// epoch. An entry the image no longer names `broker_id` leader in that epoch for is erased
/// (it moved meanwhile: nothing to repair); the others stay until a later call finds them moved.
std::vector<protocol::metadata_record> renew_stale_leaderships(const metadata_image& image, int32_t broker_id,
                                                               stale_leadership_map& stale);

/// A topic's ConfigRecord: `name` set to `value`, or removed (nullopt).
protocol::config_record topic_config(const std::string& topic, const std::string& name, std::optional<std::string> value);

/// PartitionRecords for partitions [from, to) of topic `topic_id`, appended to `out`, placed by
/// place_replicas over `image`'s usable brokers; the first replica leads, every replica is in
/// sync (a new partition holds no records), leader and partition epochs 0. Errors:
/// invalid_replication_factor (more replicas than usable brokers, or below 1).
result<void> append_partition_records(std::vector<protocol::metadata_record>& out, const metadata_image& image,
                                      const uuid& topic_id, int32_t from, int32_t to, int32_t replication_factor);

/// A new topic's TopicRecord (name, `topic_id`), PartitionRecords for `partitions` partitions of
/// `replication_factor` replicas (append_partition_records) and a ConfigRecord per entry of
/// `configs` (Kafka's ReplicationControlManager.createTopic). Errors: invalid_replication_factor.
result<std::vector<protocol::metadata_record>> new_topic_records(const metadata_image& image, const std::string& name,
                                                                 const uuid& topic_id, int32_t partitions,
                                                                 int32_t replication_factor,
                                                                 const std::map<std::string, std::string>& configs);

}  // namespace ringlog::controller
