#include "ringlog/config/server_config.h"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <optional>

namespace ringlog::config {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\f' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\f' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

error invalid(std::string_view key, std::string_view value, std::string_view why) {
  return {errc::invalid_value, std::string(key) + "=" + std::string(value) + ": " + std::string(why)};
}

using setter = std::function<std::optional<std::string>(server_config&, std::string_view)>;

struct key_spec {
  std::string name;
  std::string doc;
  setter apply;                                         // nullopt: ok; else why the value is refused
  std::function<std::string(const server_config&)> show;   // current value, for --help defaults
};

template <typename Int>
key_spec int_key(std::string name, Int server_config::*field, int64_t min, int64_t max, std::string doc) {
  std::string range = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return key_spec{
      std::move(name), doc + " (" + range + ")",
      [field, min, max, range](server_config& c, std::string_view v) -> std::optional<std::string> {
        int64_t x = 0;
        auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || x < min || x > max) {
          return "must be " + range;
        }
        c.*field = static_cast<Int>(x);
        return std::nullopt;
      },
      [field](const server_config& c) { return std::to_string(c.*field); }};
}

key_spec bool_key(std::string name, bool server_config::*field, std::string doc) {
  return key_spec{std::move(name), doc + " (true or false)",
                  [field](server_config& c, std::string_view v) -> std::optional<std::string> {
                    if (v == "true") c.*field = true;
                    else if (v == "false") c.*field = false;
                    else return "must be true or false";
                    return std::nullopt;
                  },
                  [field](const server_config& c) { return std::string(c.*field ? "true" : "false"); }};
}

key_spec choice_key(std::string name, std::string server_config::*field, std::vector<std::string> choices, std::string doc) {
  std::string list;
  for (const auto& ch : choices) list += (list.empty() ? "" : " | ") + ch;
  return key_spec{std::move(name), doc + " (" + list + ")",
                  [field, choices, list](server_config& c, std::string_view v) -> std::optional<std::string> {
                    for (const auto& ch : choices) {
                      if (v == ch) {
                        c.*field = ch;
                        return std::nullopt;
                      }
                    }
                    return "must be one of " + list;
                  },
                  [field](const server_config& c) { return c.*field; }};
}

/// A number in [min, max] (a double), shown in its shortest form ("0.5", "2").
key_spec fraction_key(std::string name, double server_config::*field, double min, double max, std::string doc) {
  auto shortest = [](double x) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
    return std::string(buf, ec == std::errc() ? end : buf);
  };
  std::string range = "a number in [" + shortest(min) + ", " + shortest(max) + "]";
  return key_spec{std::move(name), doc + " (" + range + ")",
                  [field, min, max, range](server_config& c, std::string_view v) -> std::optional<std::string> {
                    double x = 0;
                    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || !(x >= min && x <= max)) {
                      return "must be " + range;
                    }
                    c.*field = x;
                    return std::nullopt;
                  },
                  [field, shortest](const server_config& c) { return shortest(c.*field); }};
}

/// A topic name template of the retries (issue 18). Only its size is checked here: the rules
/// (placeholders, characters) are delay::validate_topic_template's, which `serve` applies at start.
key_spec template_key(std::string name, std::string server_config::*field, std::string doc) {
  return key_spec{std::move(name),
                  doc + " (a template holding <topic> and <group> once each, otherwise ASCII letters, digits, "
                        "'.', '_' and '-'; at most 200 characters)",
                  [field](server_config& c, std::string_view v) -> std::optional<std::string> {
                    if (v.empty() || v.size() > 200) return "must be 1 to 200 characters";
                    c.*field = std::string(v);
                    return std::nullopt;
                  },
                  [field](const server_config& c) { return c.*field; }};
}

/// Voters in controller.quorum.voters: a commit waits for a majority of them, and Kafka's
/// guidance is 3 or 5; past 9 every commit pays for more round trips than it gains in safety.
constexpr size_t quorum_voters_max = 9;

/// The items of a comma-separated list, blanks around each trimmed (an empty list has none).
std::vector<std::string_view> split_list(std::string_view v) {
  std::vector<std::string_view> out;
  if (trim(v).empty()) return out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string_view::npos) comma = v.size();
    out.push_back(trim(v.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

struct host_port {
  std::string host;
  int32_t port = 0;
};

/// "HOST:PORT" with an IP address host (IPv6 in brackets) and a port in [0, 65535]; the error
/// says what is wrong.
base::result<host_port, std::string> parse_host_port(std::string_view rest) {
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::string("must look like HOST:PORT");
  std::string_view host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string_view port = rest.substr(colon + 1);
  int64_t p = -1;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 0 || p > 65535) {
    return std::string("port must be an integer in [0, 65535]");
  }
  // An IP address (listeners bind it as given; no name lookups at start).
  std::string host_text(host);
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host_text.c_str(), &v4) != 1 && inet_pton(AF_INET6, host_text.c_str(), &v6) != 1) {
    return "host '" + host_text + "' is not an IP address (use 127.0.0.1, 0.0.0.0 or ::)";
  }
  return host_port{host_text, static_cast<int32_t>(p)};
}

struct listener_set {
  std::optional<host_port> http;
  std::optional<host_port> cluster;
  std::optional<host_port> kafka;
};

/// "http://H:P,kafka://H:P,cluster://H:P": at most one listener of each kind.
base::result<listener_set, std::string> parse_listeners(std::string_view v) {
  listener_set out;
  for (std::string_view item : split_list(v)) {
    size_t scheme_end = item.find("://");
    if (scheme_end == std::string_view::npos) return "each listener must look like SCHEME://HOST:PORT, got '" + std::string(item) + "'";
    std::string_view scheme = item.substr(0, scheme_end);
    std::optional<host_port>* slot = nullptr;
    if (scheme == "http") {
      slot = &out.http;
    } else if (scheme == "cluster") {
      slot = &out.cluster;
    } else if (scheme == "kafka") {
      slot = &out.kafka;
    } else {
      return "unknown listener kind '" + std::string(scheme) + "' (http, kafka or cluster)";
    }
    if (slot->has_value()) return "only one " + std::string(scheme) + ":// listener is supported";
    auto address = parse_host_port(item.substr(scheme_end + 3));
    if (!address.ok()) return std::string(scheme) + "://" + std::string(item.substr(scheme_end + 3)) + ": " + address.error();
    *slot = address.value();
  }
  return out;
}

const std::vector<key_spec>& key_table() {
  constexpr int64_t i32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t i64 = std::numeric_limits<int64_t>::max();
  static const std::vector<key_spec> table = {
      int_key("node.id", &server_config::node_id, 0, i32, "this broker's id"),
      key_spec{"cluster.id", "cluster id reported by /v3/clusters ([A-Za-z0-9._-], 1..64 chars)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.empty() || v.size() > 64) return "must be 1..64 characters";
                 for (char ch : v) {
                   if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') {
                     return "may contain only letters, digits, '.', '_' and '-'";
                   }
                 }
                 c.cluster_id = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.cluster_id; }},
      key_spec{"log.dirs", "data directory (one path; a comma-separated list is refused)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.empty()) return "must name a directory";
                 if (v.find(',') != std::string_view::npos) return "only one log directory is supported";
                 c.log_dir = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.log_dir; }},
      int_key("num.partitions", &server_config::num_partitions, 1, 10000, "partitions of auto-created and default topics"),
      int_key("default.replication.factor", &server_config::default_replication_factor, -1, 32767,
              "replicas of new topics; -1: 3 when at least 3 brokers are registered, else the number of brokers"),
      bool_key("auto.create.topics.enable", &server_config::auto_create_topics_enable,
               "create a topic on first produce to it"),
      key_spec{"authorizer.class.name",
               "the authorizer: empty (none: every caller may do everything, the ACL APIs answer SECURITY_DISABLED) or "
               "org.apache.kafka.metadata.authorizer.StandardAuthorizer (ACLs in the metadata log; "
               "kafka.security.authorizer.AclAuthorizer is taken as the same, so ZooKeeper-era configs paste)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.empty() || v == "org.apache.kafka.metadata.authorizer.StandardAuthorizer" ||
                     v == "kafka.security.authorizer.AclAuthorizer") {
                   c.authorizer_class_name = std::string(v);
                   return std::nullopt;
                 }
                 return "must be empty or org.apache.kafka.metadata.authorizer.StandardAuthorizer, got '" +
                        std::string(v) + "'";
               },
               [](const server_config& c) { return c.authorizer_class_name; }},
      key_spec{"super.users",
               "principals allowed everything whatever the ACLs say, ';'-separated (User:admin;User:ops)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 size_t start = 0;
                 while (start <= v.size()) {
                   size_t end = v.find(';', start);
                   if (end == std::string_view::npos) end = v.size();
                   std::string_view item = v.substr(start, end - start);
                   while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
                   while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
                   const size_t colon = item.find(':');
                   if (!item.empty() && (colon == std::string_view::npos || colon == 0 || colon + 1 == item.size())) {
                     return "each entry must be a principal TYPE:NAME (User:admin), got '" + std::string(item) + "'";
                   }
                   start = end + 1;
                 }
                 c.super_users = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.super_users; }},
      bool_key("allow.everyone.if.no.acl.found", &server_config::allow_everyone_if_no_acl_found,
               "with an authorizer: allow a resource no ACL names (Kafka's default false)"),
      int_key("message.max.bytes", &server_config::message_max_bytes, 1024, 64 * 1024 * 1024,
              "largest record batch, bytes (also the largest record over HTTP)"),
      int_key("log.segment.bytes", &server_config::log_segment_bytes, 1024, (int64_t{1} << 31) - 1, "segment size, bytes"),
      int_key("log.roll.ms", &server_config::log_roll_ms, 1, i64, "roll a segment this old, ms"),
      int_key("log.retention.ms", &server_config::log_retention_ms, -1, i64, "delete segments older than this, ms; -1 keeps all"),
      int_key("log.retention.bytes", &server_config::log_retention_bytes, -1, i64,
              "delete old segments past this size per partition; -1 keeps all"),
      int_key("log.retention.check.interval.ms", &server_config::log_retention_check_interval_ms, 1000, i64,
              "how often retention runs (it also rolls an idle active segment older than segment.ms), ms"),
      int_key("log.index.interval.bytes", &server_config::log_index_interval_bytes, 1, 64 * 1024 * 1024,
              "bytes between offset index entries"),
      choice_key("log.flush.policy", &server_config::log_flush_policy, {"fsync", "replication"},
                 "fsync before acknowledging, or rely on replication (Kafka's default)"),
      bool_key("log.cleaner.enable", &server_config::log_cleaner_enable,
               "run the log cleaner on topics with cleanup.policy=compact (each shard cleans its partitions)"),
      int_key("log.cleaner.dedupe.buffer.size", &server_config::log_cleaner_dedupe_buffer_size, 64 * 1024,
              int64_t{1} << 40, "memory of the cleaner's offset maps, bytes, shared out over the shards (32 bytes per key)"),
      int_key("log.cleaner.io.max.bytes.per.second", &server_config::log_cleaner_io_max_bytes_per_second, 1, i64,
              "bytes the cleaner of one shard reads per second at most, paced after each step of a pass"),
      int_key("log.cleaner.backoff.ms", &server_config::log_cleaner_backoff_ms, 100, i64,
              "how often each shard looks for a compacted partition to clean (and rolls an idle compacted "
              "active segment older than segment.ms or max.compaction.lag.ms), ms"),
      // The broker-level defaults of the compaction topic configs (Kafka's names and defaults):
      // a topic that does not set its own follows these.
      key_spec{"log.cleanup.policy",
               "default cleanup.policy of topics: delete, compact, or the list compact,delete",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 auto items = split_list(v);
                 if (items.empty()) return "must be delete, compact or compact,delete";
                 for (std::string_view item : items) {
                   if (item != "delete" && item != "compact") {
                     return "must be delete, compact or compact,delete (got the item '" + std::string(item) + "')";
                   }
                 }
                 c.log_cleanup_policy = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.log_cleanup_policy; }},
      // Kafka's broker compression.type (BrokerCompressionType): the codec batches are stored
      // with, for every topic that does not set its own.
      choice_key("compression.type", &server_config::compression_type,
                 {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
                 "default compression.type of topics: the codec stored batches are recompressed to, or producer "
                 "to keep each batch as its producer sent it"),
      // KIP-390: the level each codec compresses at, Kafka's bounds and defaults (the codec's
      // compression.h holds the same).
      int_key("compression.gzip.level", &server_config::compression_gzip_level, -1, 9,
              "default compression.gzip.level of topics: zlib's level, -1 its default (not 0)"),
      int_key("compression.lz4.level", &server_config::compression_lz4_level, 1, 17,
              "default compression.lz4.level of topics: 9 the fast compressor, the others LZ4 HC's levels"),
      int_key("compression.zstd.level", &server_config::compression_zstd_level, -131072, 22,
              "default compression.zstd.level of topics: zstd's level, negative ones its fast modes"),
      fraction_key("log.cleaner.min.cleanable.ratio", &server_config::log_cleaner_min_cleanable_ratio, 0.0, 1.0,
                   "default min.cleanable.dirty.ratio of topics: clean a compacted log once dirty bytes / all bytes "
                   "reach this"),
      int_key("log.cleaner.delete.retention.ms", &server_config::log_cleaner_delete_retention_ms, 0, i64,
              "default delete.retention.ms of topics: how long a tombstone stays readable, ms"),
      int_key("log.cleaner.min.compaction.lag.ms", &server_config::log_cleaner_min_compaction_lag_ms, 0, i64,
              "default min.compaction.lag.ms of topics: newer records are not cleaned, ms"),
      int_key("log.cleaner.max.compaction.lag.ms", &server_config::log_cleaner_max_compaction_lag_ms, 1, i64,
              "default max.compaction.lag.ms of topics: an older record is cleaned whatever the ratio, ms (at least "
              "log.cleaner.min.compaction.lag.ms)"),
      bool_key("log.direct.io", &server_config::log_direct_io,
               "append to segments with O_DIRECT (aligned block writes, no page cache; see docs/benchmarks.md)"),
      int_key("min.insync.replicas", &server_config::min_insync_replicas, 1, 32767,
              "in-sync replicas an acks=all write needs (and the high watermark needs to advance)"),
      int_key("produce.records.max", &server_config::produce_records_max, 1, 1000000, "records per produce request"),
      int_key("fetch.wait.max.ms", &server_config::fetch_wait_max_ms, 0, 3600000, "longest long-poll of a fetch, ms"),
      int_key("fetch.waiters.per.partition.max", &server_config::fetch_waiters_per_partition_max, 1, 1000000,
              "long-polls parked on one partition"),
      int_key("offsets.topic.num.partitions", &server_config::offsets_topic_num_partitions, 1, 1000,
              "partitions of __consumer_offsets when it is created (later changes do not move groups)"),
      int_key("transaction.state.log.num.partitions", &server_config::transaction_state_log_num_partitions, 1, 1000,
              "partitions of __transaction_state when it is created (later changes do not move transactional ids)"),
      int_key("transaction.max.timeout.ms", &server_config::transaction_max_timeout_ms, 1, 7LL * 24 * 3600 * 1000,
              "the longest transaction.timeout.ms a transactional producer may ask, ms"),
      int_key("transactional.id.expiration.ms", &server_config::transactional_id_expiration_ms, 1,
              365LL * 24 * 3600 * 1000, "a transactional id without a transaction this long is forgotten, ms"),
      int_key("transaction.abort.timed.out.transaction.cleanup.interval.ms",
              &server_config::transaction_abort_timed_out_transaction_cleanup_interval_ms, 10, 3600000,
              "how often the transaction coordinator aborts transactions past their timeout, ms"),
      int_key("group.expiry.interval.ms", &server_config::group_expiry_interval_ms, 100, 60000,
              "how often consumer sessions past their timeout are swept, ms"),
      int_key("delay.max.ms", &server_config::delay_max_ms, 1, 365LL * 24 * 3600 * 1000,
              "longest delay of a delayed record (deliver_at, delay_ms, header ringlog-deliver-at), ms; longer ones are refused"),
      int_key("max.delivery.attempts", &server_config::max_delivery_attempts, 1, 100,
              "default deliveries of a record nacked by a consumer group member before it goes to the group's "
              "dead-letter topic (a consumer instance may set its own)"),
      int_key("retry.backoff.ms", &server_config::retry_backoff_ms, 0, 7LL * 24 * 3600 * 1000,
              "default wait before a nacked record is delivered again, ms"),
      fraction_key("retry.backoff.multiplier", &server_config::retry_backoff_multiplier, 1.0, 10.0,
                   "default factor of the wait per further retry"),
      int_key("retry.backoff.max.ms", &server_config::retry_backoff_max_ms, 0, 7LL * 24 * 3600 * 1000,
              "default cap of the growing wait between retries, ms (at least retry.backoff.ms)"),
      template_key("retry.topic.template", &server_config::retry_topic_template,
                   "default name of a consumer group's retry topic of each topic"),
      template_key("dead.letter.topic.template", &server_config::dead_letter_topic_template,
                   "default name of a consumer group's dead-letter topic of each topic"),
      int_key("group.initial.rebalance.delay.ms", &server_config::group_initial_rebalance_delay_ms, 0, 300000,
              "how long the first rebalance of an empty Kafka-client group waits for more members to join, ms"),
      key_spec{"listeners",
               "where this node listens, comma-separated, at most one of each kind: http://HOST:PORT (REST, "
               "WebSocket, console), kafka://HOST:PORT (Kafka clients: kcat, librdkafka, kafka-python, Java) and "
               "cluster://HOST:PORT (the inter-broker listener, Kafka's wire protocol, for ringlog nodes only: a Kafka "
               "client there is disconnected, with a log line naming the kafka:// listener); IP address hosts. Listing "
               "listeners replaces the default: leave kafka:// out to serve no Kafka clients",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 auto parsed = parse_listeners(v);
                 if (!parsed.ok()) return parsed.error();
                 if (!parsed->http) return "an http:// listener is required";
                 c.listener_host = parsed->http->host;
                 c.listener_port = parsed->http->port;
                 c.cluster_listener_host = parsed->cluster ? parsed->cluster->host : "127.0.0.1";
                 c.cluster_listener_port = parsed->cluster ? parsed->cluster->port : -1;
                 c.kafka_listener_host = parsed->kafka ? parsed->kafka->host : "127.0.0.1";
                 c.kafka_listener_port = parsed->kafka ? parsed->kafka->port : -1;
                 return std::nullopt;
               },
               [](const server_config& c) {
                 std::string out = "http://" + c.listener_host + ":" + std::to_string(c.listener_port);
                 if (c.kafka_listener_port >= 0) {
                   out += ",kafka://" + c.kafka_listener_host + ":" + std::to_string(c.kafka_listener_port);
                 }
                 if (c.cluster_listener_port >= 0) {
                   out += ",cluster://" + c.cluster_listener_host + ":" + std::to_string(c.cluster_listener_port);
                 }
                 return out;
               }},
      key_spec{"advertised.listeners",
               "what other nodes and clients are told to connect to, same form as listeners; empty = listeners",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.empty()) return std::nullopt;
                 auto parsed = parse_listeners(v);
                 if (!parsed.ok()) return parsed.error();
                 if (parsed->http) {
                   c.advertised_http_host = parsed->http->host;
                   c.advertised_http_port = parsed->http->port;
                 }
                 if (parsed->cluster) {
                   c.advertised_cluster_host = parsed->cluster->host;
                   c.advertised_cluster_port = parsed->cluster->port;
                 }
                 if (parsed->kafka) {
                   c.advertised_kafka_host = parsed->kafka->host;
                   c.advertised_kafka_port = parsed->kafka->port;
                 }
                 return std::nullopt;
               },
               [](const server_config& c) {
                 std::string out;
                 if (c.advertised_http_port >= 0) out = "http://" + c.advertised_http_host + ":" + std::to_string(c.advertised_http_port);
                 if (c.advertised_cluster_port >= 0) {
                   out += (out.empty() ? "" : ",") + std::string("cluster://") + c.advertised_cluster_host + ":" +
                          std::to_string(c.advertised_cluster_port);
                 }
                 if (c.advertised_kafka_port >= 0) {
                   out += (out.empty() ? "" : ",") + std::string("kafka://") + c.advertised_kafka_host + ":" +
                          std::to_string(c.advertised_kafka_port);
                 }
                 return out;
               }},
      key_spec{"process.roles", "what this node runs: broker,controller (combined mode: a voter of controller.quorum.voters and a broker), "
               "or broker (a broker that follows the metadata quorum without a vote: how a broker joins a running "
               "cluster without changing controller.quorum.voters), or controller (a dedicated controller, KIP-631: a voter "
               "that runs the metadata quorum and the active controller's duties but never registers as a broker, "
               "hosts no partitions and serves no records; it takes no kafka:// listener)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 bool broker = false;
                 bool controller = false;
                 for (std::string_view item : split_list(v)) {
                   if (item == "broker" && !broker) {
                     broker = true;
                   } else if (item == "controller" && !controller) {
                     controller = true;
                   } else {
                     return "each role must be broker or controller, at most once each; got '" + std::string(item) + "'";
                   }
                 }
                 if (!broker && !controller) return "must name at least one role (broker, controller)";
                 c.process_role_broker = broker;
                 c.process_role_controller = controller;
                 return std::nullopt;
               },
               [](const server_config& c) {
                 if (c.process_role_broker && c.process_role_controller) return std::string("broker,controller");
                 return std::string(c.process_role_broker ? "broker" : "controller");
               }},
      key_spec{"controller.quorum.voters",
               "the controller quorum: ID@HOST:PORT,... (each voter's cluster listener); empty = this node alone",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 c.controller_quorum_voters.clear();
                 if (v.empty()) return std::nullopt;
                 for (std::string_view item : split_list(v)) {
                   size_t at = item.find('@');
                   if (at == std::string_view::npos) return "each voter must look like ID@HOST:PORT, got '" + std::string(item) + "'";
                   int64_t id = -1;
                   std::string_view id_text = item.substr(0, at);
                   auto [ptr, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
                   if (id_text.empty() || ec != std::errc() || ptr != id_text.data() + id_text.size() || id < 0 ||
                       id > std::numeric_limits<int32_t>::max()) {
                     return "voter id '" + std::string(id_text) + "' must be an integer in [0, 2147483647]";
                   }
                   auto address = parse_host_port(item.substr(at + 1));
                   if (!address.ok()) return "voter '" + std::string(item) + "': " + address.error();
                   for (const auto& existing : c.controller_quorum_voters) {
                     if (existing.node_id == id) return "voter id " + std::to_string(id) + " appears twice";
                   }
                   c.controller_quorum_voters.push_back({static_cast<int32_t>(id), address->host, address->port});
                 }
                 if (c.controller_quorum_voters.size() > quorum_voters_max) {
                   return "at most " + std::to_string(quorum_voters_max) + " voters (each commit waits for a majority)";
                 }
                 return std::nullopt;
               },
               [](const server_config& c) {
                 std::string out;
                 for (const auto& v : c.controller_quorum_voters) {
                   out += (out.empty() ? "" : ",") + std::to_string(v.node_id) + "@" + v.host + ":" + std::to_string(v.port);
                 }
                 return out;
               }},
      int_key("controller.quorum.election.timeout.ms", &server_config::controller_quorum_election_timeout_ms, 10, 600000,
              "a voter that hears no leader this long starts an election (randomized up to twice this), ms"),
      int_key("controller.quorum.fetch.timeout.ms", &server_config::controller_quorum_fetch_timeout_ms, 10, 600000,
              "a follower without a fetch answer this long, or a leader without fetches from a majority, gives up "
              "the leader, ms"),
      int_key("controller.quorum.election.backoff.max.ms", &server_config::controller_quorum_election_backoff_max_ms, 1,
              600000, "longest random wait before retrying a failed election, ms"),
      int_key("broker.heartbeat.interval.ms", &server_config::broker_heartbeat_interval_ms, 10, 600000,
              "how often a broker heartbeats to the active controller, ms"),
      int_key("broker.session.timeout.ms", &server_config::broker_session_timeout_ms, 100, 3600000,
              "a broker without a heartbeat this long is fenced and its leaderships move, ms"),
      int_key("replica.lag.time.max.ms", &server_config::replica_lag_time_max_ms, 100, 3600000,
              "a follower not caught up with its leader this long leaves the ISR, ms"),
      int_key("producer.id.expiration.ms", &server_config::producer_id_expiration_ms, 1, 365LL * 24 * 3600 * 1000,
              "an idempotent producer with no batch in a partition for this long is forgotten there, ms "
              "(its late retries are then new batches; Kafka's default, one day)"),
      int_key("replica.fetch.wait.max.ms", &server_config::replica_fetch_wait_max_ms, 0, 60000,
              "longest wait of a follower's fetch at its leader when there is nothing new, ms"),
      int_key("replica.fetch.max.bytes", &server_config::replica_fetch_max_bytes, 1024, 1 << 30,
              "bytes of batches one follower fetch asks for (at least one batch is returned)"),
      int_key("replica.fetch.backoff.ms", &server_config::replica_fetch_backoff_ms, 0, 60000,
              "wait after a failed follower fetch before the next, ms"),
      bool_key("unclean.leader.election.enable", &server_config::unclean_leader_election_enable,
               "let a replica outside the ISR lead when the whole ISR is gone (acknowledged writes may be lost)"),
      bool_key("auto.leader.rebalance.enable", &server_config::auto_leader_rebalance_enable,
               "give leaderships back to preferred replicas (the first of each partition) once they are in the ISR"),
      int_key("leader.imbalance.check.interval.seconds", &server_config::leader_imbalance_check_interval_seconds, 1,
              86400, "how often the active controller checks for leaderships to give back to preferred replicas, s"),
      int_key("leader.imbalance.per.broker.percentage", &server_config::leader_imbalance_per_broker_percentage, 0, 100,
              "a broker's leaderships are given back once more than this share of the partitions it prefers are led "
              "elsewhere, %"),
      key_spec{"broker.rack", "this broker's rack, for rack-aware replica placement; empty = none",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.size() > 255) return "at most 255 characters";
                 c.broker_rack = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.broker_rack; }},
      int_key("num.shards", &server_config::num_shards, 0, 1024, "shard threads; 0 = one per core"),
      choice_key("io.backend", &server_config::io_backend, {"auto", "uring", "posix"}, "disk I/O backend"),
      int_key("http.request.body.max.bytes", &server_config::http_request_body_max_bytes, 1024, int64_t{1} << 32,
              "largest HTTP request body, bytes"),
      int_key("http.request.header.max.bytes", &server_config::http_request_header_max_bytes, 1024, 1024 * 1024,
              "largest HTTP request line + headers, bytes"),
      int_key("http.idle.timeout.ms", &server_config::http_idle_timeout_ms, 100, 3600000,
              "close keep-alive connections idle this long, ms"),
      int_key("fetch.response.bytes.max", &server_config::fetch_response_bytes_max, 1024, int64_t{1} << 30,
              "largest max_bytes a fetch may ask for"),
      int_key("socket.request.max.bytes", &server_config::socket_request_max_bytes, 1024, 104857600,
              "largest Kafka request frame, bytes: a larger one closes the connection (Kafka's default 100 MiB)"),
      bool_key("kafka.fetch.zero.copy", &server_config::kafka_fetch_zero_copy,
               "Kafka Fetch answers send record batches from the segment files with sendfile (no copy through "
               "the broker's memory); false = read them into the answer (see docs/kafka.md)"),
      key_spec{"http.cors.allowed.origins",
               "browser origins allowed by CORS and the WebSocket upgrade: * (any) or a comma-separated list "
               "of scheme://host[:port]",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 size_t start = 0;
                 while (start <= v.size()) {
                   size_t comma = v.find(',', start);
                   if (comma == std::string_view::npos) comma = v.size();
                   std::string_view item = v.substr(start, comma - start);
                   while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
                   while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
                   size_t scheme = item.find("://");
                   if (item != "*" && (scheme == std::string_view::npos || scheme == 0 || item.size() == scheme + 3 ||
                                       item.find('/', scheme + 3) != std::string_view::npos)) {
                     return "each origin must be * or scheme://host[:port] (no path), got '" + std::string(item) + "'";
                   }
                   start = comma + 1;
                 }
                 c.http_cors_allowed_origins = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.http_cors_allowed_origins; }},
      int_key("http.connections.max", &server_config::http_connections_max, 0, 1000000,
              "open HTTP connections at once; 0 = a quarter of the open-file limit, at most 10000"),
      int_key("broker.partitions.max", &server_config::broker_partitions_max, 0, 10000000,
              "partitions of all topics together; 0 = from the open-file limit (8 files per partition)"),
      int_key("shutdown.drain.timeout.ms", &server_config::shutdown_drain_timeout_ms, 0, 600000,
              "how long a graceful stop waits for in-flight requests, ms"),
  };
  return table;
}

}  // namespace

result<properties> parse_properties(std::string_view text, std::string_view source) {
  properties out;
  size_t line_number = 0;
  std::string logical;
  size_t logical_start = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    std::string_view t = trim(line);
    if (logical.empty()) {
      logical_start = line_number;
      if (t.empty() || t.front() == '#' || t.front() == '!') {
        if (end == text.size()) break;
        continue;
      }
    }
    // An odd number of trailing backslashes continues the line.
    size_t backslashes = 0;
    while (backslashes < t.size() && t[t.size() - 1 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 1) {
      logical += std::string(t.substr(0, t.size() - 1));
      if (end == text.size()) break;
      continue;
    }
    logical += std::string(t);
    size_t sep = logical.find_first_of("=:");
    if (sep == std::string::npos) {
      return error{errc::parse_error, std::string(source) + ":" + std::to_string(logical_start) + ": \"" + logical +
                                          "\" is not key=value"};
    }
    std::string key(trim(std::string_view(logical).substr(0, sep)));
    std::string value(trim(std::string_view(logical).substr(sep + 1)));
    if (key.empty()) {
      return error{errc::parse_error, std::string(source) + ":" + std::to_string(logical_start) + ": empty key"};
    }
    out[key] = value;
    logical.clear();
    if (end == text.size()) break;
  }
  if (!logical.empty()) {
    return error{errc::parse_error, std::string(source) + ":" + std::to_string(logical_start) + ": file ends inside a continued line"};
  }
  return out;
}

result<std::pair<std::string, std::string>> parse_assignment(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || trim(text.substr(0, eq)).empty()) {
    return error{errc::parse_error, "--set \"" + std::string(text) + "\" is not key=value"};
  }
  return std::pair{std::string(trim(text.substr(0, eq))), std::string(trim(text.substr(eq + 1)))};
}

namespace {

/// The cluster keys that depend on each other (KIP-631's rules for process.roles and voters).
result<void> check_cluster_settings(const server_config& c) {
  const std::string voters = key_value(c, "controller.quorum.voters");
  const bool dedicated_controller = c.process_role_controller && !c.process_role_broker;
  if (dedicated_controller && c.kafka_listener_port >= 0) {
    // Kafka's controllers have no client listener either: clients go to brokers.
    return invalid("listeners", key_value(c, "listeners"),
                   "process.roles=controller (a dedicated controller) serves no Kafka clients: list only "
                   "http:// and cluster:// listeners (kafka:// is on by default when listeners is not set)");
  }
  if (c.controller_quorum_voters.empty()) {
    if (!c.process_role_controller) {
      return invalid("process.roles", "broker",
                     "a broker-only node needs controller.quorum.voters to find the controllers");
    }
    if (dedicated_controller) {
      return invalid("process.roles", "controller",
                     "a dedicated controller needs controller.quorum.voters (with its own node.id) and brokers "
                     "(process.roles=broker) that join it; a single node runs broker,controller");
    }
    return base::ok_v;
  }
  bool listed = false;
  for (const auto& v : c.controller_quorum_voters) listed = listed || v.node_id == c.node_id;
  if (c.process_role_controller && !listed) {
    return invalid("controller.quorum.voters", voters,
                   "node.id=" + std::to_string(c.node_id) + " runs the controller role (process.roles=" +
                       key_value(c, "process.roles") + ") but is not one of the voters");
  }
  if (!c.process_role_controller && listed) {
    return invalid("controller.quorum.voters", voters,
                   "node.id=" + std::to_string(c.node_id) + " is a voter but process.roles has no controller");
  }
  if (c.cluster_listener_port < 0) {
    return invalid("listeners", key_value(c, "listeners"),
                   "a node of a multi-node cluster (controller.quorum.voters is set) needs a cluster://HOST:PORT listener");
  }
  if (c.broker_session_timeout_ms <= c.broker_heartbeat_interval_ms) {
    return invalid("broker.session.timeout.ms", std::to_string(c.broker_session_timeout_ms),
                   "must be longer than broker.heartbeat.interval.ms=" + std::to_string(c.broker_heartbeat_interval_ms));
  }
  return base::ok_v;
}

}  // namespace

result<server_config> load_server_config(const properties& values) {
  server_config c;
  const auto& table = key_table();
  for (const auto& [key, value] : values) {
    const key_spec* spec = nullptr;
    for (const auto& k : table) {
      if (k.name == key) spec = &k;
    }
    if (!spec) return error{errc::unknown_key, "unknown config key \"" + key + "\" (see ringlog serve --help)"};
    if (auto why = spec->apply(c, value)) return invalid(key, value, *why);
  }
  if (c.log_segment_bytes < c.message_max_bytes) {
    return invalid("log.segment.bytes", std::to_string(c.log_segment_bytes),
                   "must be at least message.max.bytes=" + std::to_string(c.message_max_bytes));
  }
  if (c.compression_gzip_level == 0) {
    // Kafka's gzip level validator: -1 (zlib's default) or [1, 9]; zlib's 0 would store.
    return invalid("compression.gzip.level", "0", "must be -1 or an integer in [1, 9]");
  }
  if (c.log_cleaner_min_compaction_lag_ms > c.log_cleaner_max_compaction_lag_ms) {
    // Kafka's conflict rule for the topic configs these default (LogConfig.validateValues).
    return invalid("log.cleaner.min.compaction.lag.ms", std::to_string(c.log_cleaner_min_compaction_lag_ms),
                   "must be at most log.cleaner.max.compaction.lag.ms=" +
                       std::to_string(c.log_cleaner_max_compaction_lag_ms));
  }
  RINGLOG_TRY(check_cluster_settings(c));
  return c;
}

std::string key_value(const server_config& c, std::string_view key) {
  for (const auto& k : key_table()) {
    if (k.name == key) return k.show(c);
  }
  return {};
}

std::vector<key_description> describe_keys() {
  server_config defaults;
  std::vector<key_description> out;
  for (const auto& k : key_table()) out.push_back({k.name, k.show(defaults), k.doc});
  return out;
}

}  // namespace ringlog::config
