#pragma once
// What the active controller decides from the metadata image alone (pure functions, no I/O):
// where new partitions' replicas go, the default replication factor, and which partitions change
// leader when a broker is fenced, unfenced or shuts down (design.md section 6; Kafka's
// StripedReplicaPlacer and PartitionChangeBuilder are the models). Every PartitionChangeRecord
// made here names the partition epoch it was computed at (RinglogExpectedPartitionEpoch), so one
// worked out from a stale image is refused where it is applied, and its caller retries.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/controller/errc.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/protocol/wire.h"

namespace ringlog::controller {

/// Brokers that may take new replicas and leaderships: registered, unfenced, not shutting down.
std::vector<int32_t> usable_brokers(const controller::metadata_image& image);

/// default.replication.factor when it is not set (-1): 3 when at least 3 brokers are usable,
/// else the number of usable brokers (at least 1).
int16_t automatic_replication_factor(const controller::metadata_image& image);

/// Replica lists for `count` new partitions of topic `topic_id` (new, or growing) with
/// `replication_factor` replicas each. The first replica is the preferred leader. Balanced per
/// topic first, then over the cluster: each partition's leader is the usable broker with the
/// fewest preferred leaderships of this topic, then of all topics (then replicas, then lowest
/// id), counting the image and the partitions placed so far; the other replicas are the brokers
/// with the fewest replicas of this topic, then of all, preferring racks (broker.rack) the
/// partition does not use yet. So a topic spreads over every broker even when earlier topics
/// left the cluster uneven (Kafka's placer stripes each topic too). Errors: invalid_replication_factor when it is
/// below 1 or above the number of usable brokers (the message names both numbers).
result<std::vector<std::vector<int32_t>>> place_replicas(const controller::metadata_image& image, int32_t count,
                                                         int32_t replication_factor, const controller::uuid& topic_id);

/// PartitionChangeRecords for a broker that is fenced or shuts down (Kafka's
/// ReplicationControlManager.generateLeaderAndIsrUpdates): it leaves the ISR of every partition
/// (except as its last member: that one keeps every acknowledged record and may lead again), and
/// each of its leaderships moves to the first usable in-sync replica in replica order, or to no
/// leader (-1) when none is. With `unclean_election` (unclean.leader.election.enable) a usable
/// replica outside the ISR may lead then, in an ISR of itself, and acknowledged records may be
/// lost. A leader change bumps the leader epoch (KIP-101); every change bumps the partition epoch.
std::vector<protocol::metadata_record> remove_broker_from_partitions(const controller::metadata_image& image,
                                                                     int32_t broker_id, bool unclean_election);

/// Controlled shutdown (KIP-631): a BrokerRegistrationChangeRecord marking broker `b`, then
/// remove_broker_from_partitions's records (its leaderships move to other in-sync replicas).
std::vector<protocol::metadata_record> controlled_shutdown_records(const controller::metadata_image& image,
                                                                   const controller::broker_registration& b);

/// PartitionChangeRecords for a broker that registers anew (a process start), in the entry of
/// its RegisterBrokerRecord. Every leadership it held moves to the first usable in-sync replica
/// in replica order, or stays with it in a new leader epoch when none is: a restarted process
/// never leads in the epoch of its previous life (its followers may hold records it lost
/// unsynced, and only a new epoch makes them truncate, KIP-101). It leaves the ISR of the
/// partitions it follows (it rejoins once caught up), and leads, in a new epoch, the partitions
/// that have no leader and list it in their ISR (the last in-sync replica coming back).
std::vector<protocol::metadata_record> rejoin_partitions(const controller::metadata_image& image, int32_t broker_id);

/// One partition in a preferred leader election (Kafka's ElectLeaders with PREFERRED, KIP-460;
/// the rule is KIP-183's): its preferred replica is the first in replica order.
struct preferred_election {
  std::string topic;
  int32_t partition = 0;
  int32_t preferred = -1;
  /// Set when nothing changes: election_not_needed (the preferred replica leads),
  /// preferred_leader_not_available (fenced, stopping, or not in the ISR: it may lack
  /// acknowledged records), unknown_topic_or_partition.
  std::optional<errc> refused;
  /// Set when it elects: the preferred replica leads in a new leader epoch. The record names the
  /// partition epoch it was computed at, so a change that raced with this one makes it fail where
  /// it is applied instead of undoing the other.
  std::optional<protocol::partition_change_record> change;
};

/// A preferred leader election over `wanted` (topic, partition) pairs; empty = every partition
/// of every topic, then only those that change are listed.
std::vector<preferred_election> plan_preferred_elections(const controller::metadata_image& image,
                                                         const std::vector<std::pair<std::string, int32_t>>& wanted);

/// Kafka's auto.leader.rebalance.enable check (KafkaController.checkAndTriggerAutoLeaderRebalance):
/// the brokers for which more than `percentage` % of the partitions they are preferred leader of
/// are led by another broker (leader.imbalance.per.broker.percentage).
std::vector<int32_t> imbalanced_brokers(const controller::metadata_image& image, int32_t percentage);

/// The PartitionChangeRecord for a partition that names `broker_id` leader in an epoch given
/// before its current registration (its registration was worked out from an image where it did
/// not lead there): the leadership moves to the first other usable in-sync replica, or is renewed
/// in a new epoch - the rule of rejoin_partitions, for one partition. nullopt when the image no
/// longer names it leader in `leader_epoch`.
std::optional<protocol::partition_change_record> renew_stale_leadership(const controller::metadata_image& image,
                                                                        int32_t broker_id, const std::string& topic,
                                                                        int32_t partition, int32_t leader_epoch);

/// PartitionChangeRecords that make `broker_id` the leader of every partition that has no
/// leader and lists it in its ISR (a broker coming back after it was fenced).
std::vector<protocol::metadata_record> elect_leaderless(const controller::metadata_image& image, int32_t broker_id);

}  // namespace ringlog::controller
