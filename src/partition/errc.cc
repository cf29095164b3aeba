#include "ringlog/partition/errc.h"

namespace ringlog::partition {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::unknown_topic_or_partition: return "unknown_topic_or_partition";
    case errc::topic_already_exists: return "topic_already_exists";
    case errc::invalid_topic_exception: return "invalid_topic_exception";
    case errc::invalid_partitions: return "invalid_partitions";
    case errc::invalid_replication_factor: return "invalid_replication_factor";
    case errc::invalid_config: return "invalid_config";
    case errc::invalid_request: return "invalid_request";
    case errc::offset_out_of_range: return "offset_out_of_range";
    case errc::corrupt_message: return "corrupt_message";
    case errc::invalid_record: return "invalid_record";
    case errc::message_too_large: return "message_too_large";
    case errc::record_list_too_large: return "record_list_too_large";
    case errc::invalid_timestamp: return "invalid_timestamp";
    case errc::not_enough_replicas: return "not_enough_replicas";
    case errc::not_enough_replicas_after_append: return "not_enough_replicas_after_append";
    case errc::fenced_leader_epoch: return "fenced_leader_epoch";
    case errc::unknown_leader_epoch: return "unknown_leader_epoch";
    case errc::request_timed_out: return "request_timed_out";
    case errc::kafka_storage_error: return "kafka_storage_error";
    case errc::topic_authorization_failed: return "topic_authorization_failed";
    case errc::throttling_quota_exceeded: return "throttling_quota_exceeded";
    case errc::broker_not_available: return "broker_not_available";
    case errc::unknown_server_error: return "unknown_server_error";
    case errc::invalid_group_id: return "invalid_group_id";
    case errc::group_id_not_found: return "group_id_not_found";
    case errc::unknown_member_id: return "unknown_member_id";
    case errc::illegal_generation: return "illegal_generation";
    case errc::partition_not_owned: return "partition_not_owned";
    case errc::inconsistent_subscription: return "inconsistent_subscription";
    case errc::inconsistent_group_protocol: return "inconsistent_group_protocol";
    case errc::invalid_regular_expression: return "invalid_regular_expression";
    case errc::invalid_session_timeout: return "invalid_session_timeout";
    case errc::offset_metadata_too_large: return "offset_metadata_too_large";
    case errc::group_max_size_reached: return "group_max_size_reached";
    case errc::group_not_empty: return "group_not_empty";
    case errc::duplicate_consumer_instance: return "duplicate_consumer_instance";
    case errc::no_offset_for_partition: return "no_offset_for_partition";
    case errc::rebalance_in_progress: return "rebalance_in_progress";
    case errc::member_id_required: return "member_id_required";
    case errc::fenced_instance_id: return "fenced_instance_id";
    case errc::group_subscribed_to_topic: return "group_subscribed_to_topic";
    case errc::not_controller: return "not_controller";
    case errc::not_leader_or_follower: return "not_leader_or_follower";
    case errc::not_coordinator: return "not_coordinator";
    case errc::election_not_needed: return "election_not_needed";
    case errc::preferred_leader_not_available: return "preferred_leader_not_available";
    case errc::invalid_replica_assignment: return "invalid_replica_assignment";
    case errc::no_reassignment_in_progress: return "no_reassignment_in_progress";
    case errc::reassignment_in_progress: return "reassignment_in_progress";
    case errc::stale_broker_epoch: return "stale_broker_epoch";
    case errc::duplicate_broker_registration: return "duplicate_broker_registration";
    case errc::out_of_order_sequence_number: return "out_of_order_sequence_number";
    case errc::invalid_producer_epoch: return "invalid_producer_epoch";
    case errc::invalid_txn_state: return "invalid_txn_state";
    case errc::transaction_coordinator_fenced: return "transaction_coordinator_fenced";
    case errc::unknown_producer_id: return "unknown_producer_id";
    case errc::producer_fenced: return "producer_fenced";
    case errc::invalid_producer_id_mapping: return "invalid_producer_id_mapping";
    case errc::concurrent_transactions: return "concurrent_transactions";
    case errc::invalid_transaction_timeout: return "invalid_transaction_timeout";
    case errc::transactional_id_not_found: return "transactional_id_not_found";
    case errc::resource_not_found: return "resource_not_found";
    case errc::duplicate_resource: return "duplicate_resource";
    case errc::unacceptable_credential: return "unacceptable_credential";
    case errc::unsupported_sasl_mechanism: return "unsupported_sasl_mechanism";
    case errc::offset_not_available: return "offset_not_available";
    case errc::policy_violation: return "policy_violation";
    case errc::security_disabled: return "security_disabled";
    case errc::coordinator_load_in_progress: return "coordinator_load_in_progress";
    case errc::group_authorization_failed: return "group_authorization_failed";
    case errc::cluster_authorization_failed: return "cluster_authorization_failed";
    case errc::transactional_id_authorization_failed: return "transactional_id_authorization_failed";
  }
  return "unknown_server_error";
}

int kafka_error_code(errc e) {
  // Kafka protocol error codes (org.apache.kafka.common.protocol.Errors).
  switch (e) {
    case errc::unknown_server_error: return -1;
    case errc::offset_out_of_range: return 1;
    case errc::corrupt_message: return 2;
    case errc::invalid_record: return 87;
    case errc::unknown_topic_or_partition: return 3;
    case errc::request_timed_out: return 7;
    case errc::broker_not_available: return 8;
    case errc::message_too_large: return 10;
    case errc::record_list_too_large: return 18;
    case errc::not_enough_replicas: return 19;
    case errc::not_enough_replicas_after_append: return 20;
    case errc::fenced_leader_epoch: return 74;
    case errc::unknown_leader_epoch: return 75;
    case errc::invalid_topic_exception: return 17;
    case errc::invalid_timestamp: return 32;
    case errc::topic_authorization_failed: return 29;
    case errc::topic_already_exists: return 36;
    case errc::invalid_partitions: return 37;
    case errc::invalid_replication_factor: return 38;
    case errc::invalid_request: return 42;
    case errc::invalid_config: return 40;
    case errc::kafka_storage_error: return 56;
    case errc::throttling_quota_exceeded: return 89;
    case errc::invalid_group_id: return 24;
    case errc::group_id_not_found: return 69;
    case errc::unknown_member_id: return 25;
    case errc::illegal_generation: return 22;
    case errc::partition_not_owned: return -1;
    case errc::inconsistent_subscription: return -1;
    case errc::inconsistent_group_protocol: return 23;
    case errc::invalid_regular_expression: return -1;
    case errc::invalid_session_timeout: return 26;
    case errc::offset_metadata_too_large: return 12;
    case errc::group_max_size_reached: return 81;
    case errc::group_not_empty: return 68;
    case errc::duplicate_consumer_instance: return 79;  // Kafka's MEMBER_ID_REQUIRED is the nearest
    case errc::no_offset_for_partition: return -1;
    case errc::rebalance_in_progress: return 27;
    case errc::member_id_required: return 79;
    case errc::fenced_instance_id: return 82;
    case errc::group_subscribed_to_topic: return 86;
    case errc::not_controller: return 41;
    case errc::not_leader_or_follower: return 6;
    case errc::stale_broker_epoch: return 77;
    case errc::duplicate_broker_registration: return 101;
    case errc::not_coordinator: return 16;
    case errc::election_not_needed: return 84;
    case errc::preferred_leader_not_available: return 80;
    case errc::invalid_replica_assignment: return 39;
    case errc::no_reassignment_in_progress: return 85;
    case errc::reassignment_in_progress: return 60;
    case errc::out_of_order_sequence_number: return 45;
    case errc::invalid_producer_epoch: return 47;
    case errc::invalid_txn_state: return 48;
    case errc::transaction_coordinator_fenced: return 52;
    case errc::unknown_producer_id: return 59;
    case errc::producer_fenced: return 90;
    case errc::invalid_producer_id_mapping: return 49;
    case errc::concurrent_transactions: return 51;
    case errc::invalid_transaction_timeout: return 50;
    case errc::transactional_id_not_found: return 105;
    case errc::resource_not_found: return 91;
    case errc::duplicate_resource: return 92;
    case errc::unacceptable_credential: return 93;
    case errc::unsupported_sasl_mechanism: return 33;
    case errc::offset_not_available: return 78;
    case errc::policy_violation: return 44;
    case errc::security_disabled: return 54;
    case errc::coordinator_load_in_progress: return 14;
    case errc::group_authorization_failed: return 30;
    case errc::cluster_authorization_failed: return 31;
    case errc::transactional_id_authorization_failed: return 53;
  }
  return -1;
}

errc errc_of_kafka_code(int code) {
  // The inverse of kafka_error_code over every code it maps to one broker code.
  if (code < 0) return errc::unknown_server_error;
  for (int e = 0; e <= static_cast<int>(errc::transactional_id_authorization_failed); ++e) {
    const auto candidate = static_cast<errc>(e);
    if (candidate != errc::unknown_server_error && kafka_error_code(candidate) == code) return candidate;
  }
  return errc::unknown_server_error;
}

std::string unknown_topic_message(const std::string& topic) { return "topic '" + topic + "' does not exist"; }

error from_storage(const storage::error& e) {
  switch (e.code) {
    case storage::errc::offset_out_of_range: return {errc::offset_out_of_range, e.message};
    case storage::errc::corrupt_message: return {errc::corrupt_message, e.message};
    case storage::errc::message_too_large: return {errc::message_too_large, e.message};
    case storage::errc::invalid_timestamp: return {errc::invalid_timestamp, e.message};
    case storage::errc::invalid_config: return {errc::invalid_config, e.message};
    case storage::errc::kafka_storage_error:
    case storage::errc::too_many_segments:
    case storage::errc::too_many_open_files: return {errc::kafka_storage_error, e.message};
    case storage::errc::out_of_order_sequence_number: return {errc::out_of_order_sequence_number, e.message};
    case storage::errc::invalid_producer_epoch: return {errc::invalid_producer_epoch, e.message};
    // KIP-936 throttles new producer ids with THROTTLING_QUOTA_EXCEEDED; the message names the bound.
    case storage::errc::too_many_producers: return {errc::throttling_quota_exceeded, e.message};
    case storage::errc::corrupt_snapshot: return {errc::kafka_storage_error, e.message};
    case storage::errc::corrupt_txn_index:
    case storage::errc::corrupt_checkpoint: return {errc::kafka_storage_error, e.message};
    case storage::errc::invalid_txn_state: return {errc::invalid_txn_state, e.message};
    case storage::errc::transaction_coordinator_fenced: return {errc::transaction_coordinator_fenced, e.message};
  }
  return {errc::unknown_server_error, e.message};
}

}  // namespace ringlog::partition
