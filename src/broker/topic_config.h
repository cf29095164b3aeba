#pragma once
// Topic-level configs with Kafka's names, their broker-level defaults, and their bounds.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/broker/broker.h"
#include "ringlog/storage/log_config.h"

namespace ringlog::broker {

/// The topic configs ringlog supports, in a stable order (Kafka's names).
const std::vector<std::string>& supported_topic_configs();

/// A ratio as text in its shortest form that reads back the same ("0.5", "1").
std::string ratio_text(double ratio);

/// The broker-level default of a topic config, as text.
std::string topic_config_default(const broker_config& config, const std::string& name);

/// Checks one override: the key must be supported and the value in range. Message names both.
result<void> validate_topic_config(const std::string& name, const std::string& value);

/// Overrides on top of broker defaults -> the storage config of each partition.
result<storage::log_config> make_log_config(const broker_config& config,
                                            const std::map<std::string, std::string>& overrides);

/// Checks the configs that bound each other in one effective config (overrides on top of the
/// broker defaults), as Kafka's LogConfig.validateValues does when a topic is created or its
/// configs are altered: min.compaction.lag.ms <= max.compaction.lag.ms. The message names both
/// keys and values. Not checked when opening a log, so a topic stored before this check opens.
result<void> validate_topic_config_conflicts(const storage::log_config& config);

/// Every supported config, set (is_default = false) or inherited, with its source and synonyms,
/// then Kafka's topic configs ringlog does not implement, read-only with the value ringlog's
/// behaviour has (about 30 in all, as Kafka lists them);
/// `broker_configs` is the broker's describe_broker_configs (where each broker-level default
/// comes from; a topic config without one in it is the built-in default).
std::vector<topic_config_entry> describe_topic_configs(const broker_config& config,
                                                       const std::map<std::string, std::string>& overrides,
                                                       const std::vector<broker_config_entry>& broker_configs);

/// The codec a topic stores batches with: its own compression.type, else the broker's
/// (`config.compression_type`: dynamic per broker, cluster-wide, static, "producer"), as Kafka's
/// LogValidator reads the topic's effective LogConfig. nullopt for "producer" (each batch as its
/// producer compressed it; Kafka's default), none for "uncompressed" (Kafka's name for none: the
/// value "none" is refused, as Kafka's BrokerCompressionType refuses it). The level is the
/// codec's compression.{gzip,lz4,zstd}.level, found the same way (KIP-390); nullopt for snappy
/// and none.
struct stored_codec {
  model::compression compression;
  std::optional<int32_t> level;
};
/// `internal`: the broker's own topics ("__" names: __consumer_offsets, __transaction_state, the
/// delay topics) keep the writer's compression whatever the broker's compression.type says, as
/// Kafka creates its internal topics with compression.type=producer; only a compression.type
/// set on the topic itself applies to them. (A group's retry and dead-letter topics are created
/// with compression.type=producer: retries.cc.)
enum class internal_topic : bool { no, yes };
template <typename Topic>
[[nodiscard]] internal_topic internal_topic_of(const Topic& topic) {
  return topic.is_internal ? internal_topic::yes : internal_topic::no;
}
std::optional<stored_codec> stored_compression(const broker_config& config,
                                               const std::map<std::string, std::string>& overrides,
                                               internal_topic internal);

}  // namespace ringlog::broker
