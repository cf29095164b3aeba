#include "ringlog/group/errc.h"

namespace ringlog::group {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::invalid_group_id: return "invalid_group_id";
    case errc::group_id_not_found: return "group_id_not_found";
    case errc::unknown_member_id: return "unknown_member_id";
    case errc::illegal_generation: return "illegal_generation";
    case errc::partition_not_owned: return "partition_not_owned";
    case errc::inconsistent_subscription: return "inconsistent_subscription";
    case errc::inconsistent_group_protocol: return "inconsistent_group_protocol";
    case errc::invalid_regular_expression: return "invalid_regular_expression";
    case errc::unknown_topic_or_partition: return "unknown_topic_or_partition";
    case errc::partition_assigned_elsewhere: return "partition_assigned_elsewhere";
    case errc::invalid_session_timeout: return "invalid_session_timeout";
    case errc::invalid_offset: return "invalid_offset";
    case errc::offset_metadata_too_large: return "offset_metadata_too_large";
    case errc::group_max_size_reached: return "group_max_size_reached";
    case errc::too_many_groups: return "too_many_groups";
    case errc::too_many_partitions: return "too_many_partitions";
    case errc::group_not_empty: return "group_not_empty";
    case errc::no_offset_for_partition: return "no_offset_for_partition";
    case errc::corrupt_message: return "corrupt_message";
    case errc::unsupported_version: return "unsupported_version";
    case errc::duplicate_member_id: return "duplicate_member_id";
    case errc::rebalance_in_progress: return "rebalance_in_progress";
    case errc::member_id_required: return "member_id_required";
    case errc::fenced_instance_id: return "fenced_instance_id";
    case errc::group_subscribed_to_topic: return "group_subscribed_to_topic";
  }
  return "unknown";
}

}  // namespace ringlog::group
