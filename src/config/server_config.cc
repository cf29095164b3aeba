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
      int_key("default.replication.factor", &server_config::default_replication_factor, 1, 1,
              "replicas of new topics (one node for now)"),
      bool_key("auto.create.topics.enable", &server_config::auto_create_topics_enable,
               "create a topic on first produce to it"),
      int_key("message.max.bytes", &server_config::message_max_bytes, 1024, 64 * 1024 * 1024,
              "largest record batch, bytes (also the largest record over HTTP)"),
      int_key("log.segment.bytes", &server_config::log_segment_bytes, 1024, (int64_t{1} << 31) - 1, "segment size, bytes"),
      int_key("log.roll.ms", &server_config::log_roll_ms, 1, i64, "roll a segment this old, ms"),
      int_key("log.retention.ms", &server_config::log_retention_ms, -1, i64, "delete segments older than this, ms; -1 keeps all"),
      int_key("log.retention.bytes", &server_config::log_retention_bytes, -1, i64,
              "delete old segments past this size per partition; -1 keeps all"),
      int_key("log.retention.check.interval.ms", &server_config::log_retention_check_interval_ms, 1000, i64,
              "how often retention runs, ms"),
      int_key("log.index.interval.bytes", &server_config::log_index_interval_bytes, 1, 64 * 1024 * 1024,
              "bytes between offset index entries"),
      choice_key("log.flush.policy", &server_config::log_flush_policy, {"fsync", "replication"},
                 "fsync before acknowledging, or rely on replication (Kafka's default)"),
      bool_key("log.direct.io", &server_config::log_direct_io,
               "append to segments with O_DIRECT (aligned block writes, no page cache; see docs/benchmarks.md)"),
      int_key("min.insync.replicas", &server_config::min_insync_replicas, 1, 1, "ISR size acks=all needs (one node for now)"),
      int_key("produce.records.max", &server_config::produce_records_max, 1, 1000000, "records per produce request"),
      int_key("fetch.wait.max.ms", &server_config::fetch_wait_max_ms, 0, 3600000, "longest long-poll of a fetch, ms"),
      int_key("fetch.waiters.per.partition.max", &server_config::fetch_waiters_per_partition_max, 1, 1000000,
              "long-polls parked on one partition"),
      int_key("offsets.topic.num.partitions", &server_config::offsets_topic_num_partitions, 1, 1000,
              "partitions of __consumer_offsets when it is created (later changes do not move groups)"),
      int_key("group.expiry.interval.ms", &server_config::group_expiry_interval_ms, 100, 60000,
              "how often consumer sessions past their timeout are swept, ms"),
      key_spec{"listeners", "where HTTP listens: http://HOST:PORT (one listener, IP address host)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 constexpr std::string_view scheme = "http://";
                 if (v.substr(0, scheme.size()) != scheme) return "must look like http://HOST:PORT";
                 std::string_view rest = v.substr(scheme.size());
                 if (rest.find(',') != std::string_view::npos) return "only one listener is supported";
                 size_t colon = rest.rfind(':');
                 if (colon == std::string_view::npos || colon == 0) return "must look like http://HOST:PORT";
                 std::string_view host = rest.substr(0, colon);
                 if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
                 std::string_view port = rest.substr(colon + 1);
                 int64_t p = -1;
                 auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
                 if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 0 || p > 65535) {
                   return "port must be an integer in [0, 65535]";
                 }
                 // An IP address (the listener binds it as given; no name lookups at start).
                 std::string host_text(host);
                 in_addr v4{};
                 in6_addr v6{};
                 if (inet_pton(AF_INET, host_text.c_str(), &v4) != 1 && inet_pton(AF_INET6, host_text.c_str(), &v6) != 1) {
                   return "host '" + host_text + "' is not an IP address (use 127.0.0.1, 0.0.0.0 or ::)";
                 }
                 c.listener_host = std::string(host);
                 c.listener_port = static_cast<int32_t>(p);
                 return std::nullopt;
               },
               [](const server_config& c) { return "http://" + c.listener_host + ":" + std::to_string(c.listener_port); }},
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
  return c;
}

std::vector<key_description> describe_keys() {
  server_config defaults;
  std::vector<key_description> out;
  for (const auto& k : key_table()) out.push_back({k.name, k.show(defaults), k.doc});
  return out;
}

}  // namespace ringlog::config
