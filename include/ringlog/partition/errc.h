#pragma once
// Kafka's error codes as the partition answers them and the broker API names them (the broker
// re-exports them as broker::errc, ringlog/broker/errc.h): Kafka's error names in snake_case
// (Kafka protocol "Error Codes"), translated once at each boundary (storage -> partition and
// broker -> HTTP). Here, below the broker, because a partition's appends and reads answer with
// them (issue 28 stage B: the partition module never includes ringlog/broker).

#include <string>
#include <string_view>

#include "ringlog/base/result.h"
#include "ringlog/storage/errc.h"

namespace ringlog::partition {

enum class errc {
  unknown_topic_or_partition,
  topic_already_exists,
  invalid_topic_exception,     // bad topic name (message says why)
  invalid_partitions,          // bad partition count / partition number
  invalid_replication_factor,
  invalid_config,              // unknown topic config key or bad value (message names it)
  invalid_request,             // malformed request (message names the field)
  offset_out_of_range,
  corrupt_message,
  invalid_record,              // a record the topic refuses: no key on a compacted topic (Kafka's INVALID_RECORD, 87)
  message_too_large,           // a record/batch over max.message.bytes
  record_list_too_large,       // too many records in one request
  invalid_timestamp,
  not_enough_replicas,          // acks=all and the ISR is below min.insync.replicas: nothing was appended
  not_enough_replicas_after_append,  // the ISR shrank below min.insync.replicas after the append: the record may exist
  fenced_leader_epoch,          // a fetch named an older leader epoch than the leader's (KIP-320)
  unknown_leader_epoch,         // a fetch named a newer leader epoch than this replica knows yet
  request_timed_out,
  kafka_storage_error,
  topic_authorization_failed,  // writes to internal topics from outside
  throttling_quota_exceeded,   // a named queue/limit is full: retry later (HTTP 429)
  broker_not_available,        // shutting down
  unknown_server_error,
  // consumer groups (group::errc, Kafka's names)
  invalid_group_id,
  group_id_not_found,
  unknown_member_id,           // consumer instance unknown, deleted or its lease expired
  illegal_generation,
  partition_not_owned,         // commit/seek of a partition the member does not own now
  inconsistent_subscription,   // mixing subscription and manual assignment
  inconsistent_group_protocol,
  invalid_regular_expression,
  invalid_session_timeout,
  offset_metadata_too_large,
  group_max_size_reached,
  group_not_empty,             // Kafka's NON_EMPTY_GROUP
  duplicate_consumer_instance, // a consumer instance of that name exists in the group (REST Proxy 40902)
  no_offset_for_partition,     // auto.offset.reset=none and nothing committed
  rebalance_in_progress,       // classic group protocol: rejoin (Kafka's REBALANCE_IN_PROGRESS)
  member_id_required,          // JoinGroup v4+ first join: the answer carries the member id to join with
  fenced_instance_id,          // a static member replaced by a newer one with its group.instance.id
  group_subscribed_to_topic,   // OffsetDelete of a topic the group's live members consume
  // cluster
  not_controller,              // no active controller is known now (no quorum leader): retry (HTTP 503)
  not_leader_or_follower,      // the partition is led by another broker, or has no leader now
  stale_broker_epoch,          // a heartbeat of an earlier registration of the broker
  duplicate_broker_registration,  // another live process holds this node.id's registration (Kafka's 101, KIP-631)
  not_coordinator,             // a group call reached a broker that does not coordinate the group (HTTP 503)
  election_not_needed,         // preferred leader election: the preferred replica leads already (Kafka's 84)
  preferred_leader_not_available,  // preferred leader election: it is fenced, stopping or not in the ISR (Kafka's 80)
  // partition reassignment (KIP-455)
  invalid_replica_assignment,  // target replicas empty, repeated or naming an unregistered broker (Kafka's 39, HTTP 400)
  no_reassignment_in_progress,  // a cancel of a partition that is not being reassigned (Kafka's 85, HTTP 409)
  reassignment_in_progress,     // a rebalance while partitions are being reassigned (Kafka's 60, HTTP 409)
  // idempotent producers (KIP-98)
  out_of_order_sequence_number,  // a batch's sequence does not continue its producer's last one (HTTP 409)
  invalid_producer_epoch,        // a batch or session of an older producer epoch: fenced (HTTP 409)
  // transactions (KIP-98)
  invalid_txn_state,             // a non-transactional batch inside an open transaction, or a transaction call that does not fit its state (Kafka's 48, HTTP 409)
  transaction_coordinator_fenced,  // a marker of a deposed transaction coordinator (Kafka's 52, HTTP 409)
  unknown_producer_id,           // a producer id this cluster never handed out (HTTP 404)
  // transactions (KIP-98, KIP-890): the transaction coordinator's answers
  producer_fenced,               // a newer producer (or the coordinator) bumped the epoch of this transactional.id (HTTP 409)
  invalid_producer_id_mapping,   // the producer id is not the one the transactional.id holds (HTTP 409)
  concurrent_transactions,       // the transaction is being ended or a state change is being written: retry (HTTP 409)
  invalid_transaction_timeout,   // transaction.timeout.ms outside 1..transaction.max.timeout.ms (HTTP 422)
  transactional_id_not_found,    // no such transactional.id at its coordinator (HTTP 404)
  // SCRAM users (KIP-554, issue 29)
  resource_not_found,            // a user or credential that does not exist (Kafka's 91, HTTP 404)
  duplicate_resource,            // one request names the same user twice (Kafka's 92, HTTP 400)
  unacceptable_credential,       // an empty user name, iterations outside 4096..16384, an empty password (Kafka's 93, HTTP 422)
  unsupported_sasl_mechanism,    // a SCRAM mechanism other than SCRAM-SHA-256/512 (Kafka's 33, HTTP 422)
  // KIP-207 (KAFKA-2334): a new leader whose high watermark has not reached its leader epoch's
  // start offset yet: the partition's end is not known here yet (Kafka's 78, HTTP 503/50302): retry
  offset_not_available,
  /// The topic's configs forbid the change: DeleteRecords of a topic whose cleanup.policy lacks
  /// delete (Kafka's 44, POLICY_VIOLATION; HTTP 400)
  policy_violation,
  security_disabled,             // an ACL call without an authorizer (authorizer.class.name empty; Kafka's 54, HTTP 400)
  coordinator_load_in_progress,  // the coordinator is loading its partition of the internal topic: retry (HTTP 503)
  // authorization (issue 30): the caller's principal lacks the operation on the resource (HTTP 403/40301)
  group_authorization_failed,           // Kafka's 30
  cluster_authorization_failed,         // Kafka's 31
  transactional_id_authorization_failed,  // Kafka's 53
  // transactional_id_authorization_failed is the last code: errc_of_kafka_code walks every code up to it.
};

/// Kafka's name of the code, e.g. "unknown_topic_or_partition".
std::string_view to_string(errc);
/// Kafka's numeric protocol error code (e.g. unknown_topic_or_partition = 3).
int kafka_error_code(errc);
/// The broker code of a Kafka protocol error code from another broker (its answer to a forwarded
/// call); unknown_server_error for a code without one here.
errc errc_of_kafka_code(int code);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

/// "topic 'NAME' does not exist": the text of unknown_topic_or_partition for a topic.
std::string unknown_topic_message(const std::string& topic);

/// A storage error as the partition and the broker answer it (storage -> partition boundary).
error from_storage(const storage::error& e);

}  // namespace ringlog::partition
