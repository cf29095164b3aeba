#include "ringlog/controller/internal_topics.h"

#include <algorithm>
#include <map>
#include <string>

#include "ringlog/controller/constants.h"
#include "ringlog/controller/placement.h"
#include "ringlog/controller/replication_control.h"

namespace ringlog::controller {
namespace {

/// Both internal topics are compacted with Kafka's segment size for them.
std::map<std::string, std::string> compacted_configs() {
  return {{"cleanup.policy", "compact"}, {"segment.bytes", std::to_string(constants::internal_topic_segment_bytes)}};
}

}  // namespace

bool internal_topics_due(const metadata_image& image, const internal_topic_rules& rules, int64_t now_ms,
                         int64_t active_since_ms) {
  const size_t voters = std::max<size_t>(1, rules.quorum_voters);
  const size_t wanted = std::min<size_t>(3, voters);
  return usable_brokers(image).size() >= wanted || now_ms - active_since_ms >= rules.session_timeout_ms;
}

result<std::vector<protocol::metadata_record>> offsets_topic_records(const metadata_image& image,
                                                                     const internal_topic_rules& rules,
                                                                     const uuid& topic_id) {
  return new_topic_records(image, std::string(consumer_offsets_topic_name), topic_id, rules.offsets_topic_partitions,
                           automatic_replication_factor(image), compacted_configs());
}

result<std::vector<protocol::metadata_record>> transaction_state_topic_records(const metadata_image& image,
                                                                               const internal_topic_rules& rules,
                                                                               const uuid& topic_id) {
  return new_topic_records(image, std::string(transaction_state_topic_name), topic_id,
                           rules.transaction_state_partitions, automatic_replication_factor(image),
                           compacted_configs());
}

std::optional<std::string_view> missing_internal_topic(const metadata_image& image) {
  if (image.find_topic(consumer_offsets_topic_name) == nullptr) return consumer_offsets_topic_name;
  if (image.find_topic(transaction_state_topic_name) == nullptr) return transaction_state_topic_name;
  return std::nullopt;
}

result<std::vector<protocol::metadata_record>> internal_topic_records(const metadata_image& image,
                                                                      const internal_topic_rules& rules,
                                                                      std::string_view name, const uuid& topic_id) {
  return name == consumer_offsets_topic_name ? offsets_topic_records(image, rules, topic_id)
                                             : transaction_state_topic_records(image, rules, topic_id);
}

}  // namespace ringlog::controller
