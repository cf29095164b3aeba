#include "ringlog/controller/errc.h"

namespace ringlog::controller {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::invalid_record: return "invalid_record";
    case errc::unsupported_version: return "unsupported_version";
    case errc::not_leader_or_follower: return "not_leader_or_follower";
    case errc::request_timed_out: return "request_timed_out";
    case errc::record_too_large: return "record_too_large";
    case errc::uncommitted_limit_reached: return "uncommitted_limit_reached";
    case errc::kafka_storage_error: return "kafka_storage_error";
    case errc::shutting_down: return "shutting_down";
    case errc::unknown_topic_or_partition: return "unknown_topic_or_partition";
    case errc::invalid_replication_factor: return "invalid_replication_factor";
    case errc::invalid_replica_assignment: return "invalid_replica_assignment";
    case errc::no_reassignment_in_progress: return "no_reassignment_in_progress";
    case errc::election_not_needed: return "election_not_needed";
    case errc::preferred_leader_not_available: return "preferred_leader_not_available";
    case errc::stale_broker_epoch: return "stale_broker_epoch";
    case errc::duplicate_broker_registration: return "duplicate_broker_registration";
    case errc::unknown_server_error: return "unknown_server_error";
    case errc::fenced_leader_epoch: return "fenced_leader_epoch";
    case errc::invalid_update_version: return "invalid_update_version";
    case errc::invalid_request: return "invalid_request";
    case errc::ineligible_replica: return "ineligible_replica";
  }
  return "unknown";
}

}  // namespace ringlog::controller
