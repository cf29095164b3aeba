#include "errors.h"

#include <nlohmann/json.hpp>

namespace ringlog::gateway {

api_error to_api_error(const broker::error& e, error_scope scope, bool topic_exists) {
  using broker::errc;
  namespace ec = error_codes;
  switch (e.code) {
    case errc::unknown_topic_or_partition:
      if (scope == error_scope::partition && topic_exists) return {404, ec::partition_not_found, e.message};
      return {404, ec::topic_not_found, e.message};
    case errc::topic_already_exists:
    case errc::invalid_topic_exception:
    case errc::invalid_partitions:
    case errc::invalid_replication_factor:
    case errc::invalid_replica_assignment:
    case errc::invalid_config:
    case errc::duplicate_resource:
    case errc::security_disabled: case errc::policy_violation:   // the ACL calls; DeleteRecords (Kafka door only)
      return {400, ec::kafka_bad_request, e.message};
    case errc::invalid_request:
    case errc::corrupt_message:
    case errc::invalid_record:
    case errc::invalid_timestamp:
    case errc::offset_metadata_too_large:
    case errc::invalid_transaction_timeout:
    case errc::unacceptable_credential:
    case errc::unsupported_sasl_mechanism:
      return {422, ec::unprocessable, e.message};
    case errc::offset_out_of_range:
    case errc::no_offset_for_partition:
      return {422, ec::invalid_offset_or_partition, e.message};
    case errc::message_too_large:
    case errc::record_list_too_large:
      return {422, ec::record_too_large, e.message};
    case errc::topic_authorization_failed:
    case errc::group_authorization_failed:
    case errc::cluster_authorization_failed:
    case errc::transactional_id_authorization_failed:
      return {403, ec::forbidden, e.message};
    case errc::throttling_quota_exceeded:
    case errc::group_max_size_reached:
      return {429, ec::too_many_requests, e.message};
    case errc::request_timed_out:
      return {408, ec::request_timeout, e.message};
    case errc::not_enough_replicas:
    case errc::not_enough_replicas_after_append:
      return {500, ec::kafka_retriable_error, e.message};
    case errc::broker_not_available:
    case errc::not_controller:
    case errc::not_leader_or_follower:
    case errc::stale_broker_epoch: case errc::duplicate_broker_registration:   // registrations: never a client's call
    case errc::fenced_leader_epoch:
    case errc::unknown_leader_epoch:
    case errc::not_coordinator:
    case errc::preferred_leader_not_available:
    case errc::coordinator_load_in_progress:
      return {503, ec::unavailable, e.message};
    case errc::kafka_storage_error: return {503, ec::unavailable, e.message};   // retriable: is_retriable
    case errc::unknown_server_error:
      return {500, ec::kafka_error, e.message};
    case errc::unknown_member_id:
      return {404, ec::consumer_instance_not_found, e.message};
    case errc::group_id_not_found:
      return {404, ec::group_not_found, e.message};
    case errc::inconsistent_subscription:
    case errc::illegal_generation:
    case errc::partition_not_owned:
    case errc::rebalance_in_progress:
    case errc::member_id_required:
    case errc::fenced_instance_id:
    case errc::group_subscribed_to_topic:
    case errc::invalid_txn_state:
    case errc::invalid_producer_id_mapping:
    case errc::election_not_needed:
    case errc::no_reassignment_in_progress: case errc::reassignment_in_progress:   // KIP-455; a rebalance (issue 33)
      return {409, ec::illegal_state, e.message};
    case errc::group_not_empty:
      return {409, ec::group_not_empty, e.message};
    case errc::duplicate_consumer_instance:
      return {409, ec::consumer_already_exists, e.message};
    case errc::invalid_group_id:
    case errc::invalid_session_timeout:
    case errc::inconsistent_group_protocol:
    case errc::invalid_regular_expression:
      return {422, ec::invalid_consumer_config, e.message};
    case errc::out_of_order_sequence_number:
      return {409, ec::out_of_order_sequence, e.message};
    case errc::invalid_producer_epoch:
    case errc::transaction_coordinator_fenced:
    case errc::producer_fenced:
      return {409, ec::producer_fenced, e.message};
    case errc::unknown_producer_id:
      return {404, ec::producer_not_found, e.message};
    case errc::concurrent_transactions:
      return {409, ec::concurrent_transactions, e.message};
    case errc::transactional_id_not_found:
      return {404, ec::transaction_not_found, e.message};
    case errc::resource_not_found:
      return {404, ec::not_found, e.message};
    case errc::offset_not_available:
      return {503, ec::offset_not_available, e.message};
  }
  return {500, ec::kafka_error, e.message};
}

bool is_retriable(broker::errc code) {
  using broker::errc;
  switch (code) {
    case errc::not_enough_replicas:
    case errc::not_enough_replicas_after_append:
    case errc::fenced_leader_epoch:
    case errc::unknown_leader_epoch:
    case errc::not_coordinator:
    case errc::coordinator_load_in_progress:
    case errc::offset_not_available:
    case errc::concurrent_transactions:
    case errc::preferred_leader_not_available:
    case errc::request_timed_out:
    case errc::throttling_quota_exceeded:
    case errc::broker_not_available:
    case errc::not_controller:
    case errc::not_leader_or_follower:
    case errc::corrupt_message:
    // Kafka's KafkaStorageException is a RetriableException (clients refresh metadata and retry):
    // here the used-up segment file budget, descriptors run out, an unreadable batch; nothing was
    // written and the partition serves on, so HTTP answers it 503 (to_api_error), not a fault's 500.
    case errc::kafka_storage_error:
    case errc::unknown_topic_or_partition:  // Kafka marks it retriable (metadata may lag)
      return true;
    default:
      return false;
  }
}

std::string error_body(int error_code, std::string_view message) {
  nlohmann::json j = {{"error_code", error_code}, {"message", std::string(message)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

http_response error_response(const api_error& e) {
  http_response r;
  r.status = e.status;
  r.content_type = "application/json";
  r.body = error_body(e.error_code, e.message);
  // A retriable unavailability (no active controller during an election, a stopping broker):
  // tell clients when to come back (RFC 9110 section 10.2.3).
  if (e.status == 503) r.headers.emplace_back("Retry-After", "1");
  return r;
}

}  // namespace ringlog::gateway
