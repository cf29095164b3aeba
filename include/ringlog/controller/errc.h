#pragma once
// The controller module's error codes (Kafka's names in snake_case).

#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::controller {

enum class errc {
  invalid_record,        // a metadata record that does not fit the image (names the record and why)
  unsupported_version,   // a metadata record version this node cannot read
  // ---- the metadata quorum (metadata_quorum.h) ----
  not_leader_or_follower,      // propose on a node that is not the quorum leader (message names the leader, if known),
                               // or leadership moved before the entry committed
  request_timed_out,           // a proposal not committed within its timeout
  record_too_large,            // a proposal above raft::constants::entry_bytes_max
  uncommitted_limit_reached,   // raft::constants::uncommitted_entries_max proposals await commit
  kafka_storage_error,         // the metadata log directory failed (names the file); the quorum stops
  shutting_down,               // the quorum was stopped before the proposal committed
  // ---- the active controller's decisions (placement.h, reassignment.h): Kafka's error names ----
  unknown_topic_or_partition,
  invalid_replication_factor,       // more replicas than usable brokers, or out of range
  invalid_replica_assignment,       // a reassignment's target (empty, repeated, unknown broker, ...)
  no_reassignment_in_progress,      // a cancel of a partition not being reassigned
  election_not_needed,              // the preferred replica already leads
  preferred_leader_not_available,   // the preferred replica is fenced, stopping or out of the ISR
  stale_broker_epoch,               // a heartbeat from a broker not registered in that epoch (membership.h)
  duplicate_broker_registration,    // another incarnation of the broker id holds a live session (membership.h)
  unknown_server_error,             // producer ids exhausted (producer_ids.h; Kafka's name for it)
  // ---- AlterPartition (replication_control.h, KIP-497, KIP-841) ----
  fenced_leader_epoch,      // the sender does not lead the partition in the leader epoch it names
  invalid_update_version,   // the proposal names a partition epoch that is not the partition's
  invalid_request,          // the new ISR leaves out the leader or names a broker that is no replica
  ineligible_replica,       // the new ISR adds a fenced or shutting-down broker
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::controller
