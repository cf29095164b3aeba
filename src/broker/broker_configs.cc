#include "broker_configs.h"

#include <charconv>
#include <functional>

#include "ringlog/base/constants.h"
#include "ringlog/controller/autobalancer.h"
#include "ringlog/controller/placement.h"
#include "topic_config.h"

namespace ringlog::broker {
namespace {

/// One broker config: its Kafka name, how to read it from a broker_config, and for a dynamic one
/// the topic config it is the default of (its bounds) and how to set it.
struct broker_config_spec {
  const char* name;
  std::function<std::string(const broker_config&)> get;
  const char* topic_config = nullptr;   // nullptr: read-only, or dynamic with a check of its own
  std::function<void(broker_config&, const std::string&)> set = nullptr;   // with a validated value
  /// For a dynamic config that is no topic config's default: checks a value (else the topic
  /// config's bounds do).
  std::function<result<void>(const std::string&)> check = nullptr;
  /// For a config read from broker_config::static_config_values: its built-in default there (else
  /// `get` of a default broker_config is the default).
  std::function<std::string(const broker_config&)> get_default = nullptr;
};

std::string text(bool b) { return b ? "true" : "false"; }

/// A value validate_topic_config accepted as an integer.
int64_t number(const std::string& value) {
  int64_t v = 0;
  std::from_chars(value.data(), value.data() + value.size(), v);
  return v;
}

/// Kafka's LONG with atLeast(0): the replication throttle rates (0 stops throttled replication;
/// the default, Long.MAX_VALUE, bounds nothing).
result<void> check_throttled_rate(const std::string& value) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc{} || p != value.data() + value.size() || v < 0) {
    return error{errc::invalid_config, "must be an integer in [0, " +
                                           std::to_string(constants::replication_throttled_rate_unbounded) +
                                           "], bytes per second"};
  }
  return base::ok_v;
}

/// partition.autobalancer.mode: Redpanda's names (controller/autobalancer.h).
result<void> check_autobalancer_mode(const std::string& value) {
  if (controller::parse_autobalancer_mode(value)) return base::ok_v;
  return error{errc::invalid_config, "must be one of " + std::string(controller::autobalancer_modes_text)};
}

/// An integer in [min, max] of `unit` (the autobalancer's times, bounds: base/constants.h; message.max.bytes).
std::function<result<void>(const std::string&)> check_integer_within(int64_t min, int64_t max, std::string unit) {
  return [min, max, unit](const std::string& value) -> result<void> {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc{} || p != value.data() + value.size() || v < min || v > max) {
      return error{errc::invalid_config,
                   "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], " + unit};
    }
    return base::ok_v;
  };
}

/// A dynamic value within its bounds (its own check, else the topic config's it is the default of).
result<void> check_value(const broker_config_spec& spec, const std::string& value) {
  if (spec.check) return spec.check(value);
  return validate_topic_config(spec.topic_config, value);
}

/// Kafka broker configs (KafkaConfig's names, and the StandardAuthorizer's super.users and
/// allow.everyone.if.no.acl.found) that ringlog takes in its properties file and that no field of
/// broker_config carries for DescribeConfigs: shown read-only from
/// broker_config::static_config_values, as Kafka's DescribeConfigs shows every config it defines
/// (session 33: auto.leader.rebalance.enable answered 404 on REST v3). Secrets (ssl.key.password,
/// the inline PEM keys and certificates) are left out; ringlog's own keys (http.*, num.shards, ...)
/// stay in `ringlog serve --help`.
constexpr const char* kafka_static_configs[] = {
    "process.roles", "controller.quorum.voters", "listeners", "advertised.listeners", "listener.security.protocol.map",
    "broker.rack", "broker.heartbeat.interval.ms", "broker.session.timeout.ms", "initial.broker.registration.timeout.ms",
    "controller.quorum.election.timeout.ms", "controller.quorum.election.backoff.max.ms",
    "controller.quorum.fetch.timeout.ms", "auto.leader.rebalance.enable", "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage", "unclean.leader.election.enable", "replica.lag.time.max.ms",
    "replica.fetch.max.bytes", "replica.fetch.wait.max.ms", "replica.fetch.backoff.ms",
    "group.initial.rebalance.delay.ms", "producer.id.expiration.ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms", "authorizer.class.name", "super.users",
    "allow.everyone.if.no.acl.found", "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
    "max.connection.creation.rate", "connections.max.idle.ms", "connections.max.reauth.ms",
    "connection.failed.authentication.delay.ms", "socket.request.max.bytes", "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes", "queued.max.request.bytes", "quota.window.num",
    "quota.window.size.seconds", "sasl.enabled.mechanisms", "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms", "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.clock.skew.seconds",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.truststore.type", "ssl.truststore.location", "ssl.client.auth",
    "ssl.enabled.protocols",
};

/// Read-only specs of kafka_static_configs, read from broker_config::static_config_values.
std::vector<broker_config_spec> kafka_static_specs() {
  std::vector<broker_config_spec> out;
  for (const char* name : kafka_static_configs) {
    auto field = [name](std::string static_config_value::*part) {
      return [name, part](const broker_config& c) {
        auto it = c.static_config_values.find(name);
        return it == c.static_config_values.end() ? std::string() : it->second.*part;
      };
    };
    out.push_back({name, field(&static_config_value::value), nullptr, nullptr, nullptr,
                   field(&static_config_value::default_value)});
  }
  return out;
}

/// The read-only broker configs: shown by DescribeConfigs, as Kafka shows its static configs;
/// AlterConfigs refuses them.
std::vector<broker_config_spec> read_only_specs() {
  std::vector<broker_config_spec> out = {
      {"node.id", [](const broker_config& c) { return std::to_string(c.node_id); }},
      {"log.dirs", [](const broker_config& c) { return c.log_dir; }},
      {"num.partitions", [](const broker_config& c) { return std::to_string(c.num_partitions); }},
      {"default.replication.factor", [](const broker_config& c) { return std::to_string(c.default_replication_factor); }},
      {"auto.create.topics.enable", [](const broker_config& c) { return text(c.auto_create_topics_enable); }},
      {"log.flush.policy", [](const broker_config& c) { return c.log_flush_policy; }},
      {"log.direct.io", [](const broker_config& c) { return text(c.log_direct_io); }},
      {"log.cleaner.enable", [](const broker_config& c) { return text(c.log_cleaner_enable); }},
      {"log.cleaner.dedupe.buffer.size",
       [](const broker_config& c) { return std::to_string(c.log_cleaner_dedupe_buffer_size); }},
      {"log.cleaner.io.max.bytes.per.second",
       [](const broker_config& c) { return std::to_string(c.log_cleaner_io_max_bytes_per_second); }},
      {"log.cleaner.backoff.ms", [](const broker_config& c) { return std::to_string(c.log_cleaner_backoff_ms); }},
      {"log.retention.check.interval.ms",
       [](const broker_config& c) { return std::to_string(c.log_retention_check_interval_ms); }},
      {"offsets.topic.num.partitions", [](const broker_config& c) { return std::to_string(c.offsets_topic_num_partitions); }},
      // Read-only, as in Kafka (neither is in its DynamicBrokerConfig): set them in the file and restart.
      {"offsets.retention.minutes", [](const broker_config& c) { return std::to_string(c.offsets_retention_minutes); }},
      {"offsets.retention.check.interval.ms",
       [](const broker_config& c) { return std::to_string(c.offsets_retention_check_interval_ms); }},
      {"transaction.state.log.num.partitions",
       [](const broker_config& c) { return std::to_string(c.transaction_state_log_num_partitions); }},
      {"transaction.max.timeout.ms", [](const broker_config& c) { return std::to_string(c.transaction_max_timeout_ms); }},
      {"transactional.id.expiration.ms",
       [](const broker_config& c) { return std::to_string(c.transactional_id_expiration_ms); }},
      {"delay.max.ms", [](const broker_config& c) { return std::to_string(c.delay_max_ms); }},
      {"max.delivery.attempts", [](const broker_config& c) { return std::to_string(c.max_delivery_attempts); }},
      {"retry.backoff.ms", [](const broker_config& c) { return std::to_string(c.retry_backoff_ms); }},
      {"retry.backoff.multiplier", [](const broker_config& c) { return std::to_string(c.retry_backoff_multiplier); }},
      {"retry.backoff.max.ms", [](const broker_config& c) { return std::to_string(c.retry_backoff_max_ms); }},
      {"retry.topic.template", [](const broker_config& c) { return c.retry_topic_template; }},
      {"dead.letter.topic.template", [](const broker_config& c) { return c.dead_letter_topic_template; }},
      {"broker.partitions.max", [](const broker_config& c) { return std::to_string(c.partitions_max); }},
  };
  for (auto& s : kafka_static_specs()) out.push_back(std::move(s));
  return out;
}

/// Kafka's dynamic log configs (DynamicLogConfig: the broker-level defaults of topic configs) and
/// the other dynamic ones, then the read-only ones.
std::vector<broker_config_spec> dynamic_and_read_only_specs() {
  std::vector<broker_config_spec> all = {
      {"log.retention.ms", [](const broker_config& c) { return std::to_string(c.log_retention_ms); }, "retention.ms",
       [](broker_config& c, const std::string& v) { c.log_retention_ms = number(v); }},
      {"log.retention.bytes", [](const broker_config& c) { return std::to_string(c.log_retention_bytes); },
       "retention.bytes", [](broker_config& c, const std::string& v) { c.log_retention_bytes = number(v); }},
      {"log.segment.bytes", [](const broker_config& c) { return std::to_string(c.log_segment_bytes); }, "segment.bytes",
       [](broker_config& c, const std::string& v) { c.log_segment_bytes = number(v); }},
      {"log.roll.ms", [](const broker_config& c) { return std::to_string(c.log_roll_ms); }, "segment.ms",
       [](broker_config& c, const std::string& v) { c.log_roll_ms = number(v); }},
      {"log.index.interval.bytes", [](const broker_config& c) { return std::to_string(c.log_index_interval_bytes); },
       "index.interval.bytes", [](broker_config& c, const std::string& v) { c.log_index_interval_bytes = static_cast<int32_t>(number(v)); }},
      // The static key's bounds (server_config.cc), not the topic key's [0, ...]: a dynamic 0 was
      // taken and every produce failed after it (the breaker of session 36).
      {"message.max.bytes", [](const broker_config& c) { return std::to_string(c.message_max_bytes); },
       "max.message.bytes", [](broker_config& c, const std::string& v) { c.message_max_bytes = static_cast<int32_t>(number(v)); },
       check_integer_within(1024, 64 * 1024 * 1024, "bytes")},
      {"min.insync.replicas", [](const broker_config& c) { return std::to_string(c.min_insync_replicas); },
       "min.insync.replicas", [](broker_config& c, const std::string& v) { c.min_insync_replicas = static_cast<int32_t>(number(v)); }},
      // The compaction configs' broker-level defaults (Kafka's names; dynamic in Kafka too).
      {"log.cleanup.policy", [](const broker_config& c) { return c.log_cleanup_policy; }, "cleanup.policy",
       [](broker_config& c, const std::string& v) { c.log_cleanup_policy = v; }},
      // Kafka's broker compression.type: the codec of stored batches (same name as the topic's).
      {"compression.type", [](const broker_config& c) { return c.compression_type; }, "compression.type",
       [](broker_config& c, const std::string& v) { c.compression_type = v; }},
      {"compression.gzip.level", [](const broker_config& c) { return std::to_string(c.compression_gzip_level); },
       "compression.gzip.level",
       [](broker_config& c, const std::string& v) { c.compression_gzip_level = static_cast<int32_t>(number(v)); }},
      {"compression.lz4.level", [](const broker_config& c) { return std::to_string(c.compression_lz4_level); },
       "compression.lz4.level",
       [](broker_config& c, const std::string& v) { c.compression_lz4_level = static_cast<int32_t>(number(v)); }},
      {"compression.zstd.level", [](const broker_config& c) { return std::to_string(c.compression_zstd_level); },
       "compression.zstd.level",
       [](broker_config& c, const std::string& v) { c.compression_zstd_level = static_cast<int32_t>(number(v)); }},
      {"log.cleaner.min.cleanable.ratio", [](const broker_config& c) { return ratio_text(c.log_cleaner_min_cleanable_ratio); },
       "min.cleanable.dirty.ratio",
       [](broker_config& c, const std::string& v) { std::from_chars(v.data(), v.data() + v.size(), c.log_cleaner_min_cleanable_ratio); }},
      {"log.cleaner.delete.retention.ms", [](const broker_config& c) { return std::to_string(c.log_cleaner_delete_retention_ms); },
       "delete.retention.ms", [](broker_config& c, const std::string& v) { c.log_cleaner_delete_retention_ms = number(v); }},
      {"log.cleaner.min.compaction.lag.ms",
       [](const broker_config& c) { return std::to_string(c.log_cleaner_min_compaction_lag_ms); }, "min.compaction.lag.ms",
       [](broker_config& c, const std::string& v) { c.log_cleaner_min_compaction_lag_ms = number(v); }},
      {"log.cleaner.max.compaction.lag.ms",
       [](const broker_config& c) { return std::to_string(c.log_cleaner_max_compaction_lag_ms); }, "max.compaction.lag.ms",
       [](broker_config& c, const std::string& v) { c.log_cleaner_max_compaction_lag_ms = number(v); }},
      // KIP-73's replication throttles (Kafka's DynamicConfig.Broker; replication/throttle.h).
      {"leader.replication.throttled.rate",
       [](const broker_config& c) { return std::to_string(c.leader_replication_throttled_rate); }, nullptr,
       [](broker_config& c, const std::string& v) { c.leader_replication_throttled_rate = number(v); },
       check_throttled_rate},
      {"follower.replication.throttled.rate",
       [](const broker_config& c) { return std::to_string(c.follower_replication_throttled_rate); }, nullptr,
       [](broker_config& c, const std::string& v) { c.follower_replication_throttled_rate = number(v); },
       check_throttled_rate},
      // The partition autobalancer (issue 33; Redpanda's names): the active controller's values count.
      {"partition.autobalancer.mode", [](const broker_config& c) { return c.partition_autobalancer_mode; }, nullptr,
       [](broker_config& c, const std::string& v) { c.partition_autobalancer_mode = v; }, check_autobalancer_mode},
      {"partition.autobalancer.node.availability.timeout.ms",
       [](const broker_config& c) { return std::to_string(c.partition_autobalancer_node_availability_timeout_ms); },
       nullptr, [](broker_config& c, const std::string& v) { c.partition_autobalancer_node_availability_timeout_ms = number(v); },
       check_integer_within(constants::autobalancer_node_availability_timeout_ms_min,
                            constants::autobalancer_node_availability_timeout_ms_max, "ms")},
      {"partition.autobalancer.tick.interval.ms",
       [](const broker_config& c) { return std::to_string(c.partition_autobalancer_tick_interval_ms); }, nullptr,
       [](broker_config& c, const std::string& v) { c.partition_autobalancer_tick_interval_ms = number(v); },
       check_integer_within(constants::autobalancer_tick_interval_ms_min, constants::autobalancer_tick_interval_ms_max,
                            "ms")},
  };
  for (auto& s : read_only_specs()) all.push_back(std::move(s));
  return all;
}

const std::vector<broker_config_spec>& specs() {
  static const std::vector<broker_config_spec> all = dynamic_and_read_only_specs();
  return all;
}

const broker_config_spec* find_spec(const std::string& name) {
  for (const auto& s : specs()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

/// The value DescribeConfigs shows for `value` of config `name`: default.replication.factor's -1
/// ("automatic") is shown as the factor a new topic gets now (controller::
/// automatic_replication_factor: 3 with at least 3 usable brokers, else their number), as Kafka
/// shows a number (its default, 1), never -1; every other value as it is.
std::string effective_value(const std::string& name, std::string value, const controller::metadata_image& image) {
  if (name != "default.replication.factor" || value != "-1") return value;
  return std::to_string(controller::automatic_replication_factor(image));
}

const std::map<std::string, std::string>* dynamic_of(const controller::metadata_image& image, int32_t node_id) {
  auto it = image.broker_configs().find(node_id);
  return it == image.broker_configs().end() ? nullptr : &it->second;
}

void apply(broker_config& out, const std::map<std::string, std::string>* values) {
  if (values == nullptr) return;
  for (const auto& [name, value] : *values) {
    const broker_config_spec* spec = find_spec(name);
    if (spec == nullptr || !spec->set || !check_value(*spec, value).ok()) continue;
    spec->set(out, value);
  }
}

}  // namespace

std::string_view to_string(config_source source) {
  switch (source) {
    case config_source::dynamic_topic_config: return "DYNAMIC_TOPIC_CONFIG";
    case config_source::dynamic_broker_config: return "DYNAMIC_BROKER_CONFIG";
    case config_source::dynamic_default_broker_config: return "DYNAMIC_DEFAULT_BROKER_CONFIG";
    case config_source::static_broker_config: return "STATIC_BROKER_CONFIG";
    case config_source::default_config: return "DEFAULT_CONFIG";
  }
  return "UNKNOWN";
}

bool is_broker_config(const std::string& name) { return find_spec(name) != nullptr; }

std::string broker_config_of_topic_config(const std::string& topic_config) {
  for (const auto& s : specs()) {
    if (s.topic_config != nullptr && topic_config == s.topic_config) return s.name;
  }
  return {};
}

result<void> validate_broker_config_change(const std::string& name, const std::optional<std::string>& value) {
  const broker_config_spec* spec = find_spec(name);
  if (spec == nullptr) {
    std::string known;
    for (const auto& s : specs()) {
      if (s.set) known += std::string(known.empty() ? "" : ", ") + s.name;
    }
    return error{errc::invalid_config, "unknown broker config '" + name + "' (dynamic ones: " + known + ")"};
  }
  if (!spec->set) {
    return error{errc::invalid_config, "broker config '" + name +
                                            "' is read-only: it cannot be updated dynamically (set it in the "
                                            "properties file and restart)"};
  }
  if (!value) return base::ok_v;
  if (auto valid = check_value(*spec, *value); !valid.ok()) {
    return error{errc::invalid_config, "broker config " + name + "='" + *value + "': " + valid.error().message};
  }
  return base::ok_v;
}

std::shared_ptr<const broker_config> apply_dynamic_configs(const broker_config& static_config,
                                                           const controller::metadata_image& image) {
  auto out = std::make_shared<broker_config>(static_config);
  apply(*out, dynamic_of(image, cluster_default_broker));
  apply(*out, dynamic_of(image, static_config.node_id));
  return out;
}

std::vector<broker_config_entry> describe_broker_configs(const broker_config& static_config,
                                                         const controller::metadata_image& image, int32_t node_id) {
  std::vector<broker_config_entry> out;
  const auto* cluster_wide = dynamic_of(image, cluster_default_broker);
  if (node_id == cluster_default_broker) {
    if (cluster_wide == nullptr) return out;
    for (const auto& s : specs()) {
      auto it = cluster_wide->find(s.name);
      if (it == cluster_wide->end()) continue;
      broker_config_entry e{s.name, it->second, config_source::dynamic_default_broker_config, false, false, {}};
      e.synonyms.push_back({s.name, it->second, e.source});
      out.push_back(std::move(e));
    }
    return out;
  }
  const auto* own = dynamic_of(image, node_id);
  const broker_config defaults;
  for (const auto& s : specs()) {
    if (s.get_default && !static_config.static_config_values.contains(s.name)) continue;   // not given (tests)
    broker_config_entry e;
    e.name = s.name;
    e.is_read_only = !s.set;
    auto add = [&](const std::map<std::string, std::string>* values, config_source source) {
      if (values == nullptr || !s.set) return;
      auto it = values->find(s.name);
      if (it != values->end()) e.synonyms.push_back({s.name, it->second, source});
    };
    add(own, config_source::dynamic_broker_config);
    add(cluster_wide, config_source::dynamic_default_broker_config);
    // A static value equal to the built-in default is reported as the default (the properties
    // file's keys are not remembered one by one).
    const std::string static_value = s.get(static_config);
    const std::string default_value = s.get_default ? s.get_default(static_config) : s.get(defaults);
    if (static_value != default_value) e.synonyms.push_back({s.name, static_value, config_source::static_broker_config});
    e.synonyms.push_back({s.name, default_value, config_source::default_config});
    for (auto& synonym : e.synonyms) synonym.value = effective_value(s.name, std::move(synonym.value), image);
    e.value = e.synonyms.front().value;
    e.source = e.synonyms.front().source;
    out.push_back(std::move(e));
  }
  return out;
}

std::string broker_configs_elsewhere(int32_t node_id, int32_t self) {
  return "broker " + std::to_string(node_id) + "'s configs are read and changed through broker " + std::to_string(node_id) +
         " itself (this is broker " + std::to_string(self) +
         "; as in Kafka); the cluster-wide default (/brokers/-/configs, /broker-configs) goes through any broker";
}

}  // namespace ringlog::broker
