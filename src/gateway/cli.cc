// `ringlog topics|produce|consume`: thin clients of the REST API (the same routes curl uses).

#include "ringlog/gateway/cli.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base64.h"
#include "http_util.h"
#include "ringlog/gateway/http_client.h"

namespace ringlog::gateway {

using json = nlohmann::json;

namespace {

constexpr const char* default_bootstrap = "http://127.0.0.1:8082";
/// Lines per produce request: one HTTP round trip and one broker batch each.
constexpr size_t produce_batch_lines_default = 500;
constexpr const char* binary_type = "application/vnd.kafka.binary.v2+json";

/// Flags of one subcommand: "--name value", "--name=value" and bare "--flag".
struct args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;
  std::vector<std::string> flags;

  [[nodiscard]] std::optional<std::string> get(const std::string& name) const {
    auto range = options.equal_range(name);
    if (range.first == range.second) return std::nullopt;
    return std::prev(range.second)->second;   // the last one wins
  }
  [[nodiscard]] std::vector<std::string> all(const std::string& name) const {
    std::vector<std::string> out;
    for (auto [it, end] = options.equal_range(name); it != end; ++it) out.push_back(it->second);
    return out;
  }
  [[nodiscard]] bool has(const std::string& flag) const {
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
  }
};

/// `valued` lists the options that take a value; anything else starting with "--" is a flag.
std::optional<args> parse_args(int argc, char** argv, int first, const std::vector<std::string>& valued,
                               const std::vector<std::string>& known_flags) {
  args out;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      out.positional.push_back(a);
      continue;
    }
    std::string name = a;
    std::optional<std::string> value;
    if (size_t eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (std::find(valued.begin(), valued.end(), name) != valued.end()) {
      if (!value) {
        if (i + 1 >= argc) {
          std::cerr << name << " needs a value\n";
          return std::nullopt;
        }
        value = argv[++i];
      }
      out.options.emplace(name, *value);
    } else if (std::find(known_flags.begin(), known_flags.end(), name) != known_flags.end() && !value) {
      out.flags.push_back(name);
    } else {
      std::cerr << "unknown option " << a << " (see --help)\n";
      return std::nullopt;
    }
  }
  return out;
}

std::string path_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::unique_ptr<http_client> connect(const args& a) {
  auto c = http_client::create(a.get("--bootstrap-server").value_or(default_bootstrap));
  if (!c.ok()) {
    std::cerr << c.error() << "\n";
    return nullptr;
  }
  return std::move(c).value();
}

/// Prints the broker's refusal ({"error_code","message"}) or the transport error; returns 1.
int report_failure(const http_client::reply_result& r, std::string_view what) {
  if (!r.ok()) {
    std::cerr << what << ": " << r.error() << "\n";
    return 1;
  }
  auto j = json::parse(r->body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("message")) {
    std::cerr << what << ": " << j["message"].get<std::string>() << " (HTTP " << r->status << ", error_code "
              << j.value("error_code", 0) << ")\n";
  } else {
    std::cerr << what << ": HTTP " << r->status << " " << r->body << "\n";
  }
  return 1;
}

bool ok_status(const http_client::reply_result& r) { return r.ok() && r->status >= 200 && r->status < 300; }

std::optional<std::string> cluster_id(http_client& client) {
  auto r = client.get("/v3/clusters");
  if (!ok_status(r)) {
    report_failure(r, "list clusters");
    return std::nullopt;
  }
  auto j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || j["data"].empty()) {
    std::cerr << "list clusters: unexpected answer " << r->body << "\n";
    return std::nullopt;
  }
  return j["data"][0]["cluster_id"].get<std::string>();
}

std::optional<int64_t> int_option(const args& a, const std::string& name, int64_t min, int64_t max) {
  auto v = a.get(name);
  if (!v) return std::nullopt;
  auto n = parse_int(*v, min, max);
  if (!n) {
    std::cerr << name << " must be an integer in [" << min << ", " << max << "], got \"" << *v << "\"\n";
    std::exit(2);
  }
  return n;
}

// ---- topics -----------------------------------------------------------------------------------

constexpr const char* topics_usage = R"(usage: ringlog topics COMMAND [options]

Commands:
  list                                   topic names, one per line
  create NAME [--partitions N] [--replication-factor N] [--config KEY=VALUE]...
  describe NAME                          partitions, leaders, offsets and configs
  delete NAME
  alter NAME [--partitions N] [--config KEY=VALUE]... [--delete-config KEY]...

Options:
  --bootstrap-server URL   broker REST listener (default http://127.0.0.1:8082)
  --help                   this text
)";

std::optional<json> config_list(const std::vector<std::string>& assignments) {
  json configs = json::array();
  for (const auto& kv : assignments) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "--config \"" << kv << "\" is not KEY=VALUE\n";
      return std::nullopt;
    }
    configs.push_back({{"name", kv.substr(0, eq)}, {"value", kv.substr(eq + 1)}});
  }
  return configs;
}

int topics_describe(http_client& client, const std::string& cluster, const std::string& name) {
  std::string base = "/v3/clusters/" + path_escape(cluster) + "/topics/" + path_escape(name);
  auto topic = client.get(base);
  if (!ok_status(topic)) return report_failure(topic, "describe " + name);
  auto configs = client.get(base + "/configs");
  if (!ok_status(configs)) return report_failure(configs, "describe " + name);
  auto partitions = client.get(base + "/partitions");
  if (!ok_status(partitions)) return report_failure(partitions, "describe " + name);
  json t = json::parse(topic->body);
  std::string overrides;
  // Parsed into locals: a range-for over a member of a temporary dangles in C++20.
  const json config_list_json = json::parse(configs->body);
  for (const auto& c : config_list_json["data"]) {
    if (c.value("is_default", true)) continue;
    overrides += (overrides.empty() ? "" : ",") + c["name"].get<std::string>() + "=" +
                 (c["value"].is_null() ? std::string() : c["value"].get<std::string>());
  }
  std::cout << "Topic: " << name << "\tTopicId: " << t.value("topic_id", "") << "\tPartitionCount: "
            << t["partitions_count"] << "\tReplicationFactor: " << t["replication_factor"] << "\tConfigs: " << overrides
            << "\n";
  const json partition_list_json = json::parse(partitions->body);
  for (const auto& p : partition_list_json["data"]) {
    std::string leader = p["leader"]["related"].get<std::string>();
    leader = leader.substr(leader.rfind('/') + 1);
    std::cout << "\tPartition: " << p["partition_id"] << "\tLeader: " << leader << "\tLeaderEpoch: "
              << p.value("leader_epoch", 0) << "\tLogStartOffset: " << p.value("log_start_offset", 0)
              << "\tHighWatermark: " << p.value("high_watermark", 0) << "\tLogEndOffset: " << p.value("log_end_offset", 0)
              << "\tSizeBytes: " << p.value("size_bytes", 0) << "\n";
  }
  return 0;
}

}  // namespace

int topics_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1, {"--bootstrap-server", "--partitions", "--replication-factor", "--config", "--delete-config"},
                      {"--help"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << topics_usage;
    return 0;
  }
  if (a->positional.empty()) {
    std::cerr << topics_usage;
    return 2;
  }
  const std::string command = a->positional[0];
  auto client = connect(*a);
  if (!client) return 2;
  if (command == "list") {
    auto r = client->get("/topics", "application/vnd.kafka.v2+json");
    if (!ok_status(r)) return report_failure(r, "list topics");
    for (const auto& name : json::parse(r->body)) std::cout << name.get<std::string>() << "\n";
    return 0;
  }
  if (a->positional.size() != 2) {
    std::cerr << "topics " << command << " needs one topic name\n" << topics_usage;
    return 2;
  }
  const std::string name = a->positional[1];
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  std::string topics_path = "/v3/clusters/" + path_escape(*cluster) + "/topics";
  if (command == "create") {
    json body = {{"topic_name", name}};
    if (auto n = int_option(*a, "--partitions", 1, INT32_MAX)) body["partitions_count"] = *n;
    if (auto n = int_option(*a, "--replication-factor", 1, INT16_MAX)) body["replication_factor"] = *n;
    auto configs = config_list(a->all("--config"));
    if (!configs) return 2;
    body["configs"] = *configs;
    auto r = client->post(topics_path, body.dump(), "application/json");
    if (!ok_status(r)) return report_failure(r, "create " + name);
    std::cout << "Created topic " << name << ".\n";
    return 0;
  }
  if (command == "describe") return topics_describe(*client, *cluster, name);
  if (command == "delete") {
    auto r = client->del(topics_path + "/" + path_escape(name));
    if (!ok_status(r)) return report_failure(r, "delete " + name);
    std::cout << "Deleted topic " << name << ".\n";
    return 0;
  }
  if (command == "alter") {
    bool changed = false;
    if (auto n = int_option(*a, "--partitions", 1, INT32_MAX)) {
      auto r = client->patch(topics_path + "/" + path_escape(name), json{{"partitions_count", *n}}.dump());
      if (!ok_status(r)) return report_failure(r, "alter " + name);
      changed = true;
    }
    auto configs = config_list(a->all("--config"));
    if (!configs) return 2;
    json data = *configs;
    for (const auto& key : a->all("--delete-config")) data.push_back({{"name", key}, {"operation", "DELETE"}});
    if (!data.empty()) {
      auto r = client->post(topics_path + "/" + path_escape(name) + "/configs:alter", json{{"data", data}}.dump(),
                            "application/json");
      if (!ok_status(r)) return report_failure(r, "alter " + name);
      changed = true;
    }
    if (!changed) {
      std::cerr << "topics alter needs --partitions, --config or --delete-config\n";
      return 2;
    }
    std::cout << "Altered topic " << name << ".\n";
    return 0;
  }
  std::cerr << "unknown topics command \"" << command << "\"\n" << topics_usage;
  return 2;
}

// ---- produce ----------------------------------------------------------------------------------

namespace {

constexpr const char* produce_usage = R"(usage: ringlog produce TOPIC [options] < lines

Sends each line of standard input as one record (v3 records API, in batches).

Options:
  --key-separator SEP      split each line at the first SEP into key and value (no SEP: no key)
  --header KEY=VALUE       add a header to every record (repeatable)
  --partition N            send every record to partition N (default: murmur2 of the key, or spread)
  --acks 0|1|all           acknowledgement level (default all)
  --batch-size N           lines per request (default 500)
  --bootstrap-server URL   broker REST listener (default http://127.0.0.1:8082)
  --help                   this text
)";

json binary(std::string_view s) { return {{"type", "BINARY"}, {"data", base64_encode(s)}}; }

/// Sends one batch; returns the number of refused records (each reported on stderr), or -1 on a
/// whole-request failure.
int64_t send_batch(http_client& client, const std::string& path, const std::vector<std::string>& lines, const args& a,
                   const json& headers) {
  std::string body;
  auto separator = a.get("--key-separator");
  auto partition = int_option(a, "--partition", 0, INT32_MAX);
  for (const auto& line : lines) {
    json record = json::object();
    size_t sep = separator && !separator->empty() ? line.find(*separator) : std::string::npos;
    if (sep != std::string::npos) {
      record["key"] = binary(std::string_view(line).substr(0, sep));
      record["value"] = binary(std::string_view(line).substr(sep + separator->size()));
    } else {
      record["value"] = binary(line);
    }
    if (!headers.empty()) record["headers"] = headers;
    if (partition) record["partition_id"] = *partition;
    body += record.dump();
    body += '\n';
  }
  auto r = client.post(path, body, "application/json");
  if (!ok_status(r)) {
    report_failure(r, "produce");
    return -1;
  }
  int64_t refused = 0;
  size_t pos = 0;
  while (pos < r->body.size()) {
    size_t end = r->body.find('\n', pos);
    if (end == std::string::npos) end = r->body.size();
    auto report = json::parse(r->body.substr(pos, end - pos), nullptr, false);
    pos = end + 1;
    if (report.is_discarded() || !report.is_object()) continue;
    if (report.value("error_code", 200) != 200) {
      ++refused;
      std::cerr << "record refused: " << report.value("message", std::string("?")) << "\n";
    }
  }
  return refused;
}

}  // namespace

int produce_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1,
                      {"--bootstrap-server", "--key-separator", "--header", "--partition", "--acks", "--batch-size"},
                      {"--help"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << produce_usage;
    return 0;
  }
  if (a->positional.size() != 1) {
    std::cerr << produce_usage;
    return 2;
  }
  const std::string topic = a->positional[0];
  json headers = json::array();
  for (const auto& kv : a->all("--header")) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "--header \"" << kv << "\" is not KEY=VALUE\n";
      return 2;
    }
    headers.push_back({{"name", kv.substr(0, eq)}, {"value", base64_encode(std::string_view(kv).substr(eq + 1))}});
  }
  std::string acks = a->get("--acks").value_or("all");
  if (acks != "0" && acks != "1" && acks != "all" && acks != "-1") {
    std::cerr << "--acks must be 0, 1 or all\n";
    return 2;
  }
  size_t batch_size = static_cast<size_t>(int_option(*a, "--batch-size", 1, 100000).value_or(produce_batch_lines_default));
  auto client = connect(*a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  std::string path = "/v3/clusters/" + path_escape(*cluster) + "/topics/" + path_escape(topic) + "/records?acks=" + acks;
  std::vector<std::string> lines;
  std::string line;
  int64_t refused = 0;
  int64_t sent = 0;
  auto flush = [&]() -> bool {
    if (lines.empty()) return true;
    int64_t n = send_batch(*client, path, lines, *a, headers);
    if (n < 0) return false;
    refused += n;
    sent += static_cast<int64_t>(lines.size()) - n;
    lines.clear();
    return true;
  };
  while (std::getline(std::cin, line)) {
    lines.push_back(line);
    if (lines.size() >= batch_size && !flush()) return 1;
  }
  if (!flush()) return 1;
  std::cerr << sent << " records sent to " << topic << (refused ? ", " + std::to_string(refused) + " refused" : "")
            << "\n";
  return refused ? 1 : 0;
}

// ---- consume ----------------------------------------------------------------------------------

namespace {

constexpr const char* consume_usage = R"(usage: ringlog consume TOPIC [options]

Prints record values, one per line, from each partition in turn.

Options:
  --partition N            read only partition N (default: every partition)
  --offset N|earliest|latest
                           where to start (default earliest)
  --from-timestamp MS      start at the first record with timestamp >= MS (ms since the epoch)
  --follow                 keep waiting for new records (long-poll) instead of stopping at the end
  --max-records N          stop after N records
  --print-key              print KEY<separator>VALUE
  --print-offset           prefix each line with partition:offset
  --key-separator SEP      separator for --print-key (default a tab)
  --bootstrap-server URL   broker REST listener (default http://127.0.0.1:8082)
  --help                   this text
)";

struct cursor {
  int32_t partition = 0;
  int64_t next_offset = 0;
  int64_t end_offset = 0;   // stop here unless --follow
};

std::string decode_or_empty(const json& v) {
  if (v.is_null()) return {};
  auto b = base64_decode(v.get<std::string>());
  return b ? model::to_string(*b) : std::string();
}

}  // namespace

int consume_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1,
                      {"--bootstrap-server", "--partition", "--offset", "--from-timestamp", "--max-records", "--key-separator"},
                      {"--help", "--follow", "--print-key", "--print-offset"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << consume_usage;
    return 0;
  }
  if (a->positional.size() != 1) {
    std::cerr << consume_usage;
    return 2;
  }
  const std::string topic = a->positional[0];
  const std::string topic_path = "/topics/" + path_escape(topic);
  auto client = connect(*a);
  if (!client) return 2;
  std::vector<int32_t> partitions;
  if (auto p = int_option(*a, "--partition", 0, INT32_MAX)) {
    partitions.push_back(static_cast<int32_t>(*p));
  } else {
    auto r = client->get(topic_path + "/partitions", "application/vnd.kafka.v2+json");
    if (!ok_status(r)) return report_failure(r, "consume " + topic);
    for (const auto& p : json::parse(r->body)) partitions.push_back(p["partition"].get<int32_t>());
  }
  std::string start = a->get("--offset").value_or("earliest");
  auto from_timestamp = int_option(*a, "--from-timestamp", 0, INT64_MAX);
  std::optional<int64_t> start_offset;
  if (start != "earliest" && start != "latest") {
    start_offset = parse_int(start, 0, INT64_MAX);
    if (!start_offset) {
      std::cerr << "--offset must be a non-negative integer, earliest or latest\n";
      return 2;
    }
  }
  std::vector<cursor> cursors;
  for (int32_t p : partitions) {
    std::string offsets_path = topic_path + "/partitions/" + std::to_string(p) + "/offsets";
    auto r = client->get(offsets_path, "application/vnd.kafka.v2+json");
    if (!ok_status(r)) return report_failure(r, "offsets of partition " + std::to_string(p));
    json o = json::parse(r->body);
    cursor c{p, o["beginning_offset"].get<int64_t>(), o["end_offset"].get<int64_t>()};
    if (from_timestamp) {
      auto t = client->get(offsets_path + "?timestamp=" + std::to_string(*from_timestamp), "application/vnd.kafka.v2+json");
      if (!ok_status(t)) return report_failure(t, "offset by timestamp");
      json tj = json::parse(t->body);
      c.next_offset = tj["offset"].is_null() ? c.end_offset : tj["offset"].get<int64_t>();
    } else if (start == "latest") {
      c.next_offset = c.end_offset;
    } else if (start_offset) {
      c.next_offset = *start_offset;
    }
    cursors.push_back(c);
  }
  const bool follow = a->has("--follow");
  const auto max_records = int_option(*a, "--max-records", 1, INT64_MAX);
  const std::string separator = a->get("--key-separator").value_or("\t");
  // One partition: wait long; several: short waits so no partition starves the others.
  const int64_t wait_ms = follow ? (cursors.size() == 1 ? 1000 : 100) : 0;
  int64_t printed = 0;
  while (true) {
    bool any_left = false;
    for (cursor& c : cursors) {
      if (!follow && c.next_offset >= c.end_offset) continue;
      any_left = true;
      std::string path = topic_path + "/partitions/" + std::to_string(c.partition) +
                         "/records?offset=" + std::to_string(c.next_offset) + "&timeout=" + std::to_string(wait_ms);
      auto r = client->get(path, binary_type);
      if (!ok_status(r)) return report_failure(r, "fetch partition " + std::to_string(c.partition));
      for (const auto& rec : json::parse(r->body)) {
        int64_t offset = rec["offset"].get<int64_t>();
        if (!follow && offset >= c.end_offset) break;
        if (a->has("--print-offset")) std::cout << c.partition << ":" << offset << "\t";
        if (a->has("--print-key")) std::cout << decode_or_empty(rec["key"]) << separator;
        std::cout << decode_or_empty(rec["value"]) << "\n";
        c.next_offset = offset + 1;
        if (max_records && ++printed >= *max_records) {
          std::cout.flush();
          return 0;
        }
      }
      std::cout.flush();
    }
    if (!any_left) return 0;
  }
}

}  // namespace ringlog::gateway
