#pragma once
// Dynamic broker configs (KIP-226): which broker configs may be changed while the broker runs,
// how a value set for one broker or cluster-wide (ConfigRecords of resource type BROKER in the
// metadata log) overrides the node's static settings, and how DescribeConfigs shows them.
//
// Precedence, highest first (Kafka's): the broker's own dynamic value, the cluster-wide dynamic
// default (node id -1 in the image), the static value (properties file, --set), the built-in
// default. The dynamic configs are the broker-level defaults of topic configs (log.retention.ms
// for retention.ms, ...): a topic without its own override follows them at once; besides them,
// the replication throttles (leader/follower.replication.throttled.rate, KIP-73).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/broker/broker.h"
#include "ringlog/controller/metadata_image.h"

namespace ringlog::broker {

/// Whether `name` is a broker config this broker reports (dynamic or read-only).
bool is_broker_config(const std::string& name);

/// The dynamic broker config that is the default of topic config `topic_config`
/// (retention.ms -> log.retention.ms); "" when it has none here.
std::string broker_config_of_topic_config(const std::string& topic_config);

/// Checks one dynamic change: the name must be a broker config, not read-only, and a value must be
/// in the bounds of the topic config it is the default of (a throttle rate: an integer >= 0).
/// Errors: invalid_config naming the name and why (unknown; read-only: "cannot be updated
/// dynamically"; a bad value).
result<void> validate_broker_config_change(const std::string& name, const std::optional<std::string>& value);

/// Why broker `self` does not read or change broker `node_id`'s own configs: as in Kafka, a
/// broker's dynamic configs go through that broker (the cluster-wide default through any).
std::string broker_configs_elsewhere(int32_t node_id, int32_t self);

/// `static_config` with the dynamic values of `image` for node `static_config.node_id` applied
/// (cluster-wide first, then the node's own). A stored value that no longer parses is skipped.
std::shared_ptr<const broker_config> apply_dynamic_configs(const broker_config& static_config,
                                                           const controller::metadata_image& image);

/// DescribeConfigs: node_id = a broker: every broker config with its effective value, source and
/// synonyms; cluster_default_broker: the cluster-wide dynamic defaults that are set.
std::vector<broker_config_entry> describe_broker_configs(const broker_config& static_config,
                                                         const controller::metadata_image& image, int32_t node_id);

}  // namespace ringlog::broker
