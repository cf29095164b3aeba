#include "topic_config.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "broker_configs.h"
#include "ringlog/base/constants.h"
#include "ringlog/base/text.h"
#include "ringlog/codec/compression.h"

namespace ringlog::broker {
namespace {

struct config_spec {
  const char* name;
  int64_t min;
  int64_t max;
  bool is_number;
};

constexpr int64_t i64_max = std::numeric_limits<int64_t>::max();
constexpr int64_t i32_max = std::numeric_limits<int32_t>::max();

const std::vector<config_spec>& specs() {
  static const std::vector<config_spec> all = {
      {"cleanup.policy", 0, 0, false},
      {"retention.ms", -1, i64_max, true},
      {"retention.bytes", -1, i64_max, true},
      {"segment.bytes", constants::segment_bytes_min, constants::segment_bytes_max - 1, true},
      {"segment.ms", 1, i64_max, true},
      {"segment.index.bytes", 4, i32_max, true},
      {"index.interval.bytes", 0, i32_max, true},
      {"max.message.bytes", 0, constants::batch_bytes_max, true},
      {"min.insync.replicas", 1, i32_max, true},
      {"message.timestamp.type", 0, 0, false},
      {"compression.type", 0, 0, false},
      // KIP-390 (codec/compression.h): gzip's -1 is zlib's default, 0 is refused below.
      {"compression.gzip.level", codec::gzip_level_default, codec::gzip_level_max, true},
      {"compression.lz4.level", codec::lz4_level_min, codec::lz4_level_max, true},
      {"compression.zstd.level", codec::zstd_level_min, codec::zstd_level_max, true},
      // Log compaction (storage/log_cleaner.h), Kafka's names and defaults.
      {"min.cleanable.dirty.ratio", 0, 0, false},
      {"min.compaction.lag.ms", 0, i64_max, true},
      {"max.compaction.lag.ms", 1, i64_max, true},
      {"delete.retention.ms", 0, i64_max, true},
  };
  return all;
}

/// Kafka's topic configs (TopicConfig's names, Kafka 3.x) that ringlog does not implement as
/// settable: DescribeConfigs shows each read-only with the value that describes what ringlog does
/// (Kafka's default where ringlog behaves so), so a tool comparing with Kafka finds every key;
/// CreateTopics and (Incremental)AlterConfigs refuse setting one with INVALID_CONFIG naming it
/// and `why`. `broker`: the broker config the value follows (its source and synonyms are shown),
/// or nullptr (the built-in default, DEFAULT_CONFIG).
struct fixed_topic_config {
  const char* name;
  std::string (*value)(const broker_config&);
  const char* broker;
  const char* why;
};

constexpr const char* long_max_text = "9223372036854775807";

const std::vector<fixed_topic_config>& fixed_configs() {
  static const std::vector<fixed_topic_config> all = {
      {"file.delete.delay.ms", [](const broker_config&) { return std::string("0"); }, nullptr,
       "a segment past retention is deleted at once (open readers keep their file)"},
      {"flush.messages",
       [](const broker_config& c) { return std::string(c.log_flush_policy == "fsync" ? "1" : long_max_text); },
       "log.flush.policy", "log.flush.policy decides (fsync: every append is fsynced before it is acknowledged)"},
      {"flush.ms",
       [](const broker_config& c) { return std::string(c.log_flush_policy == "fsync" ? "0" : long_max_text); },
       "log.flush.policy", "log.flush.policy decides (fsync: every append is fsynced before it is acknowledged)"},
      {"follower.replication.throttled.replicas", [](const broker_config&) { return std::string(); }, nullptr,
       "replication throttles apply to reassignment moves (leader/follower.replication.throttled.rate)"},
      {"leader.replication.throttled.replicas", [](const broker_config&) { return std::string(); }, nullptr,
       "replication throttles apply to reassignment moves (leader/follower.replication.throttled.rate)"},
      {"local.retention.bytes", [](const broker_config&) { return std::string("-2"); }, nullptr,
       "there is no tiered storage: every segment is local (-2: retention.bytes)"},
      {"local.retention.ms", [](const broker_config&) { return std::string("-2"); }, nullptr,
       "there is no tiered storage: every segment is local (-2: retention.ms)"},
      {"message.downconversion.enable", [](const broker_config&) { return std::string("false"); }, nullptr,
       "records are kept and served as record batch v2 only (Fetch before v4 is refused)"},
      {"message.format.version", [](const broker_config&) { return std::string("3.0-IV1"); }, nullptr,
       "records are kept as record batch v2 (magic 2) only"},
      {"message.timestamp.after.max.ms", [](const broker_config&) { return std::string(long_max_text); }, nullptr,
       "record timestamps are not bounded against the broker's clock"},
      {"message.timestamp.before.max.ms", [](const broker_config&) { return std::string(long_max_text); }, nullptr,
       "record timestamps are not bounded against the broker's clock"},
      {"message.timestamp.difference.max.ms", [](const broker_config&) { return std::string(long_max_text); }, nullptr,
       "record timestamps are not bounded against the broker's clock"},
      {"preallocate", [](const broker_config&) { return std::string("false"); }, nullptr,
       "segment files grow as they are written"},
      {"remote.storage.enable", [](const broker_config&) { return std::string("false"); }, nullptr,
       "there is no tiered storage"},
      {"segment.jitter.ms", [](const broker_config&) { return std::string("0"); }, nullptr,
       "segments roll at segment.ms exactly"},
      {"unclean.leader.election.enable",
       [](const broker_config& c) { return std::string(c.unclean_leader_election_enable ? "true" : "false"); },
       "unclean.leader.election.enable", "it is the brokers' unclean.leader.election.enable, for every topic"},
  };
  return all;
}

const fixed_topic_config* find_fixed(const std::string& name) {
  for (const auto& f : fixed_configs()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

const config_spec* find_spec(const std::string& name) {
  for (const auto& s : specs()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

result<int64_t> parse_number(const std::string& name, const std::string& value) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec == std::errc::result_out_of_range && p == value.data() + value.size()) {
    return error{errc::invalid_config, "config " + name + "='" + value + "' is out of range (a 64-bit integer)"};
  }
  if (ec != std::errc{} || p != value.data() + value.size() || value.empty()) {
    return error{errc::invalid_config, "config " + name + "='" + value + "' is not an integer"};
  }
  return v;
}

/// A ratio in [0, 1] ("0.5", "1", "0"), or nullopt.
std::optional<double> parse_ratio(const std::string& value) {
  double v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc{} || p != value.data() + value.size() || value.empty() || !(v >= 0.0 && v <= 1.0)) {
    return std::nullopt;
  }
  return v;
}

/// cleanup.policy as a list (Kafka's LIST type: items split on ',' and trimmed, "compact, delete"),
/// each item delete or compact -> "delete", "compact" or "compact,delete"; nullopt if not such a list.
std::optional<std::string> parse_cleanup_policy(const std::string& value) {
  bool compact = false;
  bool del = false;
  const auto items = base::split_list(value);
  if (items.empty()) return std::nullopt;   // a blank value
  for (std::string_view item : items) {
    if (item == "compact") {
      compact = true;
    } else if (item == "delete") {
      del = true;
    } else {
      return std::nullopt;   // an unknown or empty item
    }
  }
  if (compact && del) return "compact,delete";
  return compact ? "compact" : "delete";
}

}  // namespace

std::string ratio_text(double ratio) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, ratio);
  return std::string(buf, ec == std::errc() ? end : buf);
}

const std::vector<std::string>& supported_topic_configs() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& s : specs()) out.emplace_back(s.name);
    return out;
  }();
  return names;
}


std::string topic_config_default(const broker_config& c, const std::string& name) {
  if (name == "cleanup.policy") return c.log_cleanup_policy;
  if (name == "retention.ms") return std::to_string(c.log_retention_ms);
  if (name == "retention.bytes") return std::to_string(c.log_retention_bytes);
  if (name == "segment.bytes") return std::to_string(c.log_segment_bytes);
  if (name == "segment.ms") return std::to_string(c.log_roll_ms);
  if (name == "segment.index.bytes") return std::to_string(10 * 1024 * 1024);
  if (name == "index.interval.bytes") return std::to_string(c.log_index_interval_bytes);
  if (name == "max.message.bytes") return std::to_string(c.message_max_bytes);
  if (name == "min.insync.replicas") return std::to_string(c.min_insync_replicas);
  if (name == "message.timestamp.type") return "CreateTime";
  if (name == "compression.type") return c.compression_type;
  if (name == "compression.gzip.level") return std::to_string(c.compression_gzip_level);
  if (name == "compression.lz4.level") return std::to_string(c.compression_lz4_level);
  if (name == "compression.zstd.level") return std::to_string(c.compression_zstd_level);
  if (name == "min.cleanable.dirty.ratio") return ratio_text(c.log_cleaner_min_cleanable_ratio);
  if (name == "min.compaction.lag.ms") return std::to_string(c.log_cleaner_min_compaction_lag_ms);
  if (name == "max.compaction.lag.ms") return std::to_string(c.log_cleaner_max_compaction_lag_ms);
  if (name == "delete.retention.ms") return std::to_string(c.log_cleaner_delete_retention_ms);
  return "";
}

result<void> validate_topic_config(const std::string& name, const std::string& value) {
  const config_spec* spec = find_spec(name);
  if (name == "compression.type") {
    // Kafka's values: keep what the producer sent, or store every batch with one codec.
    for (const char* v : {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}) {
      if (value == v) return base::ok_v;
    }
    return error{errc::invalid_config, "compression.type='" + value +
                                           "' is not one of producer, uncompressed, gzip, snappy, lz4, zstd"};
  }
  if (const auto* fixed = find_fixed(name)) {
    return error{errc::invalid_config, "topic config '" + name + "' is read-only in ringlog (" + fixed->why +
                                           "): DescribeConfigs shows the value it has; it cannot be set"};
  }
  if (spec == nullptr) {
    std::string known;
    for (const auto& s : specs()) known += std::string(known.empty() ? "" : ", ") + s.name;
    return error{errc::invalid_config, "unknown topic config '" + name + "' (supported: " + known + ")"};
  }
  if (name == "cleanup.policy") {
    if (parse_cleanup_policy(value)) return base::ok_v;
    return error{errc::invalid_config, "cleanup.policy='" + value +
                                           "' is not delete, compact or a comma-separated list of both (compact,delete)"};
  }
  if (name == "min.cleanable.dirty.ratio") {
    auto ratio = parse_ratio(value);
    if (!ratio) return error{errc::invalid_config, "min.cleanable.dirty.ratio='" + value + "' is not a number in [0, 1]"};
    return base::ok_v;
  }
  if (name == "message.timestamp.type") {
    if (value == "CreateTime" || value == "LogAppendTime") return base::ok_v;
    return error{errc::invalid_config, "message.timestamp.type='" + value + "' is not one of CreateTime, LogAppendTime"};
  }
  auto v = parse_number(name, value);
  if (!v.ok()) return v.error();
  if (name == "compression.gzip.level" && v.value() == 0) {
    // Kafka's GzipCompression level validator: -1 (zlib's default) or [1, 9].
    return error{errc::invalid_config, "config compression.gzip.level=0 is not -1 or in [1, 9]"};
  }
  if (v.value() < spec->min || v.value() > spec->max) {
    return error{errc::invalid_config, "config " + name + "=" + value + " is out of range [" +
                                           std::to_string(spec->min) + ", " + std::to_string(spec->max) + "]"};
  }
  return base::ok_v;
}

result<storage::log_config> make_log_config(const broker_config& c, const std::map<std::string, std::string>& overrides) {
  auto value_of = [&](const std::string& name) {
    auto it = overrides.find(name);
    return it != overrides.end() ? it->second : topic_config_default(c, name);
  };
  auto number = [&](const std::string& name) -> int64_t {
    auto v = parse_number(name, value_of(name));
    return v.ok() ? v.value() : 0;
  };
  for (const auto& [k, v] : overrides) RINGLOG_TRY(validate_topic_config(k, v));
  storage::log_config out;
  out.cleanup_policy = parse_cleanup_policy(value_of("cleanup.policy")).value_or("delete");
  out.retention_ms = number("retention.ms");
  out.retention_bytes = number("retention.bytes");
  out.segment_bytes = number("segment.bytes");
  out.segment_ms = number("segment.ms");
  out.segment_index_bytes = static_cast<int32_t>(number("segment.index.bytes"));
  out.index_interval_bytes = static_cast<int32_t>(number("index.interval.bytes"));
  out.max_message_bytes = static_cast<int32_t>(number("max.message.bytes"));
  out.direct_io = c.log_direct_io;
  out.min_cleanable_dirty_ratio =
      parse_ratio(value_of("min.cleanable.dirty.ratio")).value_or(c.log_cleaner_min_cleanable_ratio);
  out.min_compaction_lag_ms = number("min.compaction.lag.ms");
  out.max_compaction_lag_ms = number("max.compaction.lag.ms");
  out.delete_retention_ms = number("delete.retention.ms");
  out.producer_id_expiration_ms = c.producer_id_expiration_ms;
  auto valid = out.validate();
  if (!valid.ok()) return error{errc::invalid_config, valid.error().message};
  return out;
}

result<void> validate_topic_config_conflicts(const storage::log_config& config) {
  // Kafka's LogConfig.validateValues: InvalidConfigurationException (INVALID_CONFIG).
  if (config.min_compaction_lag_ms > config.max_compaction_lag_ms) {
    return error{errc::invalid_config, "conflict topic config setting min.compaction.lag.ms (" +
                                           std::to_string(config.min_compaction_lag_ms) + ") > max.compaction.lag.ms (" +
                                           std::to_string(config.max_compaction_lag_ms) + ")"};
  }
  return base::ok_v;
}

std::vector<topic_config_entry> describe_topic_configs(const broker_config& c,
                                                       const std::map<std::string, std::string>& overrides,
                                                       const std::vector<broker_config_entry>& broker_configs) {
  std::vector<topic_config_entry> out;
  for (const auto& name : supported_topic_configs()) {
    topic_config_entry e{name, topic_config_default(c, name), true, false, config_source::default_config, {}};
    if (auto it = overrides.find(name); it != overrides.end()) {
      e.value = it->second;
      e.is_default = false;
      e.source = config_source::dynamic_topic_config;
      e.synonyms.push_back({name, it->second, config_source::dynamic_topic_config});
    }
    const std::string broker_name = broker_config_of_topic_config(name);
    auto b = std::find_if(broker_configs.begin(), broker_configs.end(),
                          [&broker_name](const broker_config_entry& x) { return x.name == broker_name; });
    if (!broker_name.empty() && b != broker_configs.end()) {
      if (e.is_default) e.source = b->source;
      e.synonyms.insert(e.synonyms.end(), b->synonyms.begin(), b->synonyms.end());
    } else if (e.is_default) {
      e.synonyms.push_back({name, e.value, config_source::default_config});
    }
    out.push_back(std::move(e));
  }
  for (const auto& f : fixed_configs()) {
    topic_config_entry e{f.name, f.value(c), true, true, config_source::default_config, {}};
    auto b = f.broker == nullptr ? broker_configs.end()
                                 : std::find_if(broker_configs.begin(), broker_configs.end(),
                                                [&f](const broker_config_entry& x) { return x.name == f.broker; });
    if (b != broker_configs.end()) {
      e.source = b->source;
      e.synonyms = b->synonyms;
    } else {
      e.synonyms.push_back({f.name, e.value, config_source::default_config});
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<stored_codec> stored_compression(const broker_config& c, const std::map<std::string, std::string>& overrides,
                                               internal_topic internal) {
  if (internal == internal_topic::yes && !overrides.contains("compression.type")) return std::nullopt;
  auto value_of = [&](const std::string& name) {
    auto it = overrides.find(name);
    return it != overrides.end() ? it->second : topic_config_default(c, name);
  };
  auto level_of = [&](const std::string& name) -> std::optional<int32_t> {
    auto v = parse_number(name, value_of(name));
    return v.ok() ? std::optional<int32_t>(static_cast<int32_t>(v.value())) : std::nullopt;
  };
  const std::string codec = value_of("compression.type");
  if (codec == "producer") return std::nullopt;
  if (codec == "gzip") return stored_codec{model::compression::gzip, level_of("compression.gzip.level")};
  if (codec == "snappy") return stored_codec{model::compression::snappy, std::nullopt};
  if (codec == "lz4") return stored_codec{model::compression::lz4, level_of("compression.lz4.level")};
  if (codec == "zstd") return stored_codec{model::compression::zstd, level_of("compression.zstd.level")};
  return stored_codec{model::compression::none, std::nullopt};   // uncompressed
}

}  // namespace ringlog::broker
