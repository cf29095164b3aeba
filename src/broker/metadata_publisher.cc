// The one instantiation of the partition module's metadata publisher (metadata_publisher.h), for
// the broker's metadata_view, and broker_parts' answers to its host calls that read the broker's
// own types: the view (metadata.cc's make_view over the static config), the metadata log's
// records (metadata_log_records) and a topic's log config (topic_config.h's make_log_config over
// the view's broker config).

#include "metadata_publisher.h"

#include "broker_parts.h"
#include "ringlog/partition/metadata_publisher_impl.h"
#include "topic_config.h"

template class ::ringlog::partition::metadata_publisher<::ringlog::broker::metadata_view>;

namespace ringlog::broker::detail {

std::shared_ptr<const metadata_view> broker_parts::make_view(
    const metadata_view& previous, std::shared_ptr<const controller::metadata_image> image) const {
  return ::ringlog::broker::make_view(previous, std::move(image), &config_);
}

result<std::vector<protocol::metadata_record>> broker_parts::metadata_records(const controller::metadata_image& image,
                                                                              const model::record& record) const {
  return metadata_log_records(image, record, config_.node_id);
}

result<storage::log_config> broker_parts::log_config(const metadata_view& view,
                                                     const controller::topic_image& topic) const {
  return make_log_config(live(view), topic.configs);
}

bool broker_parts::topic_defaults_changed(const metadata_view& before, const metadata_view& after) const {
  // Null before the first view built with the static config (the first entry applied).
  return before.config && after.config && before.config != after.config;
}

bool broker_parts::acls_changed(const metadata_view& before, const metadata_view& after) const {
  return before.acls != after.acls;   // acl_index_of rebuilds the index only when the ACLs changed
}

}  // namespace ringlog::broker::detail
