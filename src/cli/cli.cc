// `ringlog topics|produce|consume`: thin clients of the REST API (the same routes curl uses).

#include "ringlog/cli/cli.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <chrono>
#include <thread>
#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <simdjson.h>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "ringlog/codec/base64.h"
#include "bench.h"
#include "ringlog/base/text.h"
#include "ringlog/gateway/ws_limits.h"
#include "ringlog/cli/http_client.h"

namespace ringlog::cli {

using base::parse_int;
using base::percent_encode_segment;
using codec::base64_decode;
using codec::base64_encode;
using codec::base64_encode_append;

using json = nlohmann::json;

namespace {

/// How long `cluster status` waits for the quorum leader it re-asks, ms: a leader that does not
/// answer within it (paused, cut off) leaves the asked node's view in place.
constexpr int64_t cluster_status_reask_timeout_ms = 5000;
/// Lines per produce request: one HTTP round trip and one broker batch each.
constexpr size_t produce_batch_lines_default = 500;
/// `ringlog bench`: the longest wait for one of the load's requests, ms (a broker under
/// saturation may take long; the default request timeout is for interactive commands).
constexpr int64_t bench_request_timeout_ms = 120000;
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
  // Every command that talks to --bootstrap-server takes --request-timeout-ms with it.
  std::vector<std::string> valued_options = valued;
  if (std::find(valued.begin(), valued.end(), "--bootstrap-server") != valued.end()) {
    valued_options.push_back("--request-timeout-ms");
  }
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
    // kafka-console-consumer.sh's name for it (session 32's new user typed it).
    if (name == "--max-messages") name = "--max-records";
    if (std::find(valued_options.begin(), valued_options.end(), name) != valued_options.end()) {
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

std::unique_ptr<http_client> connect(const args& a) {
  int64_t timeout_ms = default_request_timeout_ms;
  if (auto v = a.get("--request-timeout-ms")) {
    char* end = nullptr;
    errno = 0;
    const long long ms = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno != 0 || ms < 1 || ms > 86400000) {
      std::cerr << "--request-timeout-ms must be a number of milliseconds from 1 to 86400000\n";
      return nullptr;
    }
    timeout_ms = ms;
  }
  auto c = http_client::create(a.get("--bootstrap-server").value_or(default_bootstrap_server()));
  if (!c.ok()) {
    std::cerr << c.error() << "\n";
    return nullptr;
  }
  c.value()->set_timeout_ms(timeout_ms);
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
    if (r->status == 401) {
      // A new user locked out by their own http.authentication.method: say how the CLI logs in.
      std::cerr << "  the CLI logs in with RINGLOG_USER and RINGLOG_PASSWORD (a SCRAM user; the first one comes from "
                   "`ringlog serve --add-scram 'SCRAM-SHA-512=[name=admin,password=...]'`) or RINGLOG_TOKEN (a JWT)"
                << (std::getenv("RINGLOG_USER") || std::getenv("RINGLOG_TOKEN") ? ": the ones set were refused" : ": none is set")
                << "\n";
    }
  } else {
    std::cerr << what << ": HTTP " << r->status << " " << r->body << "\n";
  }
  return 1;
}

bool ok_status(const http_client::reply_result& r) { return r.ok() && r->status >= 200 && r->status < 300; }

/// A JSON value as a table cell: "-" for null or an empty string, strings unquoted.
std::string cell(const json& v) {
  if (v.is_null() || (v.is_string() && v.get_ref<const std::string&>().empty())) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

/// Broker ids as "1,2,3" ("-" for none).
std::string ids_cell(const json& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ",") + cell(id);
  return out.empty() ? "-" : out;
}

std::optional<std::string> cluster_id(http_client& client) {
  auto r = client.get("/v3/clusters");
  if (!ok_status(r)) {
    report_failure(r, "find the cluster");
    return std::nullopt;
  }
  auto j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || j["data"].empty()) {
    std::cerr << "find the cluster: unexpected answer to GET /v3/clusters: " << r->body << "\n";
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

// The options of every command that talks to the brokers' HTTP listeners, written once for
// every usage text (tests/integration/test_cluster_newcomer.py reads them).
constexpr std::string_view bootstrap_server_help =
    R"(  --bootstrap-server URL   broker HTTP listener (default $RINGLOG_BOOTSTRAP_SERVER when set,
                           else http://127.0.0.1:8082); several URLs separated by commas
                           are tried in turn, as Kafka's tools do
)";
/// The end of a usage text: --bootstrap-server, --request-timeout-ms and --help.
const std::string connection_options_help = std::string(bootstrap_server_help) +
                                            R"(  --request-timeout-ms MS  longest wait to connect, then for each answer (default 10000; a
                           long poll adds its own wait); a read not answered in time is
                           retried on the next --bootstrap-server URL (Kafka's
                           request.timeout.ms)
  --help                   this text

Environment: RINGLOG_USER and RINGLOG_PASSWORD (HTTP Basic) or RINGLOG_TOKEN (a JWT, Bearer) when
the broker asks for credentials; RINGLOG_CA_FILE, the CA of an https:// broker's certificate (else
the system's CAs); RINGLOG_TLS_INSECURE=1 skips that check (docs/security.md).
)";

const std::string topics_usage = std::string(R"(usage: ringlog topics COMMAND [options]

Commands:
  list                                   topic names, one per line
  create NAME [--partitions N] [--replication-factor N] [--config KEY=VALUE]...
  describe [NAME] [--under-replicated-partitions] [--unavailable-partitions]
                                         partitions with leader, replicas, ISR, offsets, and
                                         configs (every topic when NAME is left out)
  delete NAME
  alter NAME [--partitions N] [--config KEY=VALUE]... [--delete-config KEY]...

describe prints one line per partition, as kafka-topics.sh --describe: Leader (none: its in-sync
replicas are all unavailable), Replicas (the first is the preferred leader), Isr, and Adding and
Removing while a reassignment moves it. --under-replicated-partitions prints only the partitions
with fewer in-sync replicas than replicas, --unavailable-partitions only those with no leader
(both: either); then no topic line is printed.

Options:
)") + connection_options_help;

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

/// Which partitions `topics describe` prints (kafka-topics.sh --describe's filters).
struct describe_filter {
  bool under_replicated = false;   // --under-replicated-partitions: fewer in sync than replicas
  bool unavailable = false;        // --unavailable-partitions: no leader
  [[nodiscard]] bool any() const { return under_replicated || unavailable; }
};

/// One partition of `topics describe`: replicas in their order (the first is the preferred
/// leader), the in-sync ones in that order, and the replicas a reassignment adds and removes.
struct partition_replicas {
  std::string replicas;
  std::string isr;
  size_t replica_count = 0;
  size_t isr_count = 0;
};

std::optional<partition_replicas> replicas_of(http_client& client, const std::string& partition_path,
                                              const std::string& what) {
  auto r = client.get(partition_path + "/replicas");
  if (!ok_status(r)) {
    report_failure(r, what);
    return std::nullopt;
  }
  partition_replicas out;
  const json list = json::parse(r->body);
  for (const auto& replica : list["data"]) {
    const std::string id = cell(replica["broker_id"]);
    out.replicas += (out.replicas.empty() ? "" : ",") + id;
    ++out.replica_count;
    if (replica.value("is_in_sync", false)) {
      out.isr += (out.isr.empty() ? "" : ",") + id;
      ++out.isr_count;
    }
  }
  return out;
}

/// Prints topic `name` as kafka-topics.sh --describe does: a topic line, then one line per
/// partition (only the matching ones, and no topic line, when `filter` names any). 0, or 1 when
/// the broker refused a call.
int topics_describe(http_client& client, const std::string& cluster, const std::string& name,
                    const describe_filter& filter) {
  std::string base = "/v3/clusters/" + percent_encode_segment(cluster) + "/topics/" + percent_encode_segment(name);
  auto topic = client.get(base);
  if (!ok_status(topic)) return report_failure(topic, "describe " + name);
  auto partitions = client.get(base + "/partitions");
  if (!ok_status(partitions)) return report_failure(partitions, "describe " + name);
  auto moves = client.get(base + "/partitions/-/reassignment");
  // Listing reassignments needs DESCRIBE on the cluster: without it the partitions are printed
  // without their moves, as kafka-topics.sh goes on past a ClusterAuthorizationException of
  // listPartitionReassignments (session 32's new user got only the refusal).
  const bool moves_refused = moves.ok() && moves->status == 403;
  if (!ok_status(moves) && !moves_refused) return report_failure(moves, "describe " + name);
  std::map<int64_t, json> moving;
  const json move_list = moves_refused ? json{{"data", json::array()}} : json::parse(moves->body);
  for (const auto& m : move_list["data"]) moving[m["partition_id"].get<int64_t>()] = m;
  if (!filter.any()) {
    auto configs = client.get(base + "/configs");
    // Without DESCRIBE_CONFIGS on the topic the topic line says so instead of refusing it all.
    const bool configs_refused = configs.ok() && configs->status == 403;
    if (!ok_status(configs) && !configs_refused) return report_failure(configs, "describe " + name);
    json t = json::parse(topic->body);
    std::string overrides = configs_refused ? "(not shown: needs DESCRIBE_CONFIGS on the topic)" : "";
    // Parsed into locals: a range-for over a member of a temporary dangles in C++20.
    const json config_list_json = configs_refused ? json{{"data", json::array()}} : json::parse(configs->body);
    for (const auto& c : config_list_json["data"]) {
      // Only the topic's own overrides, as kafka-topics.sh --describe: a value inherited from the
      // brokers (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG) is
      // not the topic's and is the same for every topic.
      if (c.value("source", "") != "DYNAMIC_TOPIC_CONFIG") continue;
      overrides += (overrides.empty() ? "" : ",") + c["name"].get<std::string>() + "=" +
                   (c["value"].is_null() ? std::string() : c["value"].get<std::string>());
    }
    std::cout << "Topic: " << name << "\tTopicId: " << t.value("topic_id", "") << "\tPartitionCount: "
              << t["partitions_count"] << "\tReplicationFactor: " << t["replication_factor"] << "\tConfigs: " << overrides
              << "\n";
  }
  const json partition_list_json = json::parse(partitions->body);
  for (const auto& p : partition_list_json["data"]) {
    std::string leader = "none";   // no leader: its in-sync replicas are all unavailable
    if (p["leader"].is_object()) {
      leader = p["leader"]["related"].get<std::string>();
      leader = leader.substr(leader.rfind('/') + 1);
    }
    const int64_t id = p["partition_id"].get<int64_t>();
    const std::string what = "describe partition " + std::to_string(id) + " of " + name;
    auto replicas = replicas_of(client, base + "/partitions/" + std::to_string(id), what);
    if (!replicas) return 1;
    const bool under_replicated = replicas->isr_count < replicas->replica_count;
    const bool unavailable = leader == "none";
    if (filter.any() && !(filter.under_replicated && under_replicated) && !(filter.unavailable && unavailable)) continue;
    std::cout << "\tTopic: " << name << "\tPartition: " << id << "\tLeader: " << leader << "\tReplicas: "
              << replicas->replicas << "\tIsr: " << (replicas->isr.empty() ? "-" : replicas->isr);
    if (auto m = moving.find(id); m != moving.end()) {
      std::cout << "\tAdding: " << ids_cell(m->second["adding_replicas"]) << "\tRemoving: "
                << ids_cell(m->second["removing_replicas"]);
    }
    std::cout << "\tLeaderEpoch: " << p.value("leader_epoch", 0) << "\tLogStartOffset: " << p.value("log_start_offset", 0)
              << "\tHighWatermark: " << p.value("high_watermark", 0) << "\tLogEndOffset: " << p.value("log_end_offset", 0)
              << "\tSizeBytes: " << p.value("size_bytes", 0);
    // Figures the leader did not vouch for (it did not answer, or is still establishing its high
    // watermark, KIP-207) are marked, as the JSON's high_watermark_established says.
    if (p.contains("high_watermark_established") && p["high_watermark_established"].is_boolean() &&
        !p["high_watermark_established"].get<bool>()) std::cout << "\t(figures not established by the leader)";
    std::cout << "\n";
  }
  if (const auto& meta = partition_list_json.value("metadata", json::object()); meta.contains("unanswered_brokers")) {
    std::cerr << "note: broker(s) " << meta["unanswered_brokers"].dump()
              << " did not answer; their partitions show this node's figures\n";
  }
  return 0;
}

/// Where a topic config's value comes from when the topic does not override it, from its v3
/// JSON: "the broker config log.roll.ms=86400000 (DYNAMIC_DEFAULT_BROKER_CONFIG)", or "the default".
std::string inherited_from(const json& config) {
  const std::string source = config.value("source", "");
  if (source == "DEFAULT_CONFIG" || !config.contains("synonyms") || config["synonyms"].empty()) return "the default";
  const json& first = config["synonyms"][0];
  const std::string value = first["value"].is_string() ? first["value"].get<std::string>() : std::string();
  return "the broker config " + first.value("name", "") + "=" + value + " (" + source + ")";
}

/// Refuses `topics alter --delete-config KEY` of a key the topic does not override, before any
/// change (kafka-configs.sh --delete-config answers "Invalid config(s)"): removing no override
/// changes nothing, and "Altered topic" would say it did. 0 when every key is an override of the
/// topic (source DYNAMIC_TOPIC_CONFIG); 1 with each other key named on stderr.
int check_overrides(http_client& client, const std::string& topic_path, const std::string& name,
                    const std::vector<std::string>& keys) {
  int refused = 0;
  for (const auto& key : keys) {
    auto r = client.get(topic_path + "/configs/" + percent_encode_segment(key));
    if (!ok_status(r)) return report_failure(r, "alter " + name);
    const json config = json::parse(r->body);
    if (config.value("source", "") == "DYNAMIC_TOPIC_CONFIG") continue;
    std::cerr << name << " has no override of " << key << " (it comes from " << inherited_from(config)
              << "); nothing to delete\n";
    refused = 1;
  }
  if (refused != 0) std::cerr << "Topic " << name << " not altered.\n";
  return refused;
}

/// `topics describe` of every topic (no NAME given): the filters' use after a failure, as
/// `kafka-topics.sh --describe --under-replicated-partitions` without --topic.
int topics_describe_all(http_client& client, const std::string& cluster, const describe_filter& filter) {
  auto r = client.get("/v3/clusters/" + percent_encode_segment(cluster) + "/topics");
  if (!ok_status(r)) return report_failure(r, "list topics");
  const json list = json::parse(r->body);
  for (const auto& t : list["data"]) {
    if (int failed = topics_describe(client, cluster, t["topic_name"].get<std::string>(), filter); failed != 0) {
      return failed;
    }
  }
  return 0;
}

}  // namespace

int topics_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1, {"--bootstrap-server", "--partitions", "--replication-factor", "--config", "--delete-config"},
                      {"--help", "--under-replicated-partitions", "--unavailable-partitions"});
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
  if (command != "create" && command != "describe" && command != "delete" && command != "alter") {
    std::cerr << "unknown topics command \"" << command << "\"\n" << topics_usage;
    return 2;
  }
  describe_filter filter;
  filter.under_replicated = a->has("--under-replicated-partitions");
  filter.unavailable = a->has("--unavailable-partitions");
  if (filter.any() && command != "describe") {
    std::cerr << "--under-replicated-partitions and --unavailable-partitions are options of topics describe\n";
    return 2;
  }
  if (command == "describe" && a->positional.size() == 1) {
    auto cluster = cluster_id(*client);
    if (!cluster) return 1;
    return topics_describe_all(*client, *cluster, filter);
  }
  if (a->positional.size() != 2) {
    std::cerr << "topics " << command << " needs one topic name\n" << topics_usage;
    return 2;
  }
  const std::string name = a->positional[1];
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  std::string topics_path = "/v3/clusters/" + percent_encode_segment(*cluster) + "/topics";
  if (command == "create") {
    json body = {{"topic_name", name}};
    if (auto n = int_option(*a, "--partitions", 1, 10000)) body["partitions_count"] = *n;
    if (auto n = int_option(*a, "--replication-factor", 1, INT16_MAX)) body["replication_factor"] = *n;
    auto configs = config_list(a->all("--config"));
    if (!configs) return 2;
    body["configs"] = *configs;
    auto r = client->post(topics_path, body.dump(), "application/json");
    if (!ok_status(r)) return report_failure(r, "create " + name);
    std::cout << "Created topic " << name << ".\n";
    return 0;
  }
  if (command == "describe") return topics_describe(*client, *cluster, name, filter);
  if (command == "delete") {
    auto r = client->del(topics_path + "/" + percent_encode_segment(name));
    if (!ok_status(r)) return report_failure(r, "delete " + name);
    std::cout << "Deleted topic " << name << ".\n";
    return 0;
  }
  if (command == "alter") {
    const std::string topic_path = topics_path + "/" + percent_encode_segment(name);
    if (int refused = check_overrides(*client, topic_path, name, a->all("--delete-config")); refused != 0) return refused;
    bool changed = false;
    if (auto n = int_option(*a, "--partitions", 1, 10000)) {
      auto r = client->patch(topic_path, json{{"partitions_count", *n}}.dump());
      if (!ok_status(r)) return report_failure(r, "alter " + name);
      changed = true;
    }
    auto configs = config_list(a->all("--config"));
    if (!configs) return 2;
    json data = *configs;
    for (const auto& key : a->all("--delete-config")) data.push_back({{"name", key}, {"operation", "DELETE"}});
    if (!data.empty()) {
      auto r = client->post(topic_path + "/configs:alter", json{{"data", data}}.dump(),
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

const std::string produce_usage = std::string(R"(usage: ringlog produce TOPIC [options] < lines

Sends each line of standard input as one record (v3 records API, in batches). A refused
request stores none of its lines: the error is printed once, naming the input line, with the
lines that went unsent with it.

Options:
  --key-separator SEP      split each line at the first SEP into key and value (no SEP: no key)
  --null-empty-values      send an empty value as null (kcat's -Z): with --key-separator :,
                           the line "k:" is a tombstone for key k on a compacted topic
  --header KEY=VALUE       add a header to every record (repeatable)
  --partition N            send every record to partition N (default: murmur2 of the key, or spread)
  --acks 0|1|all           acknowledgement level (default all)
  --batch-size N           lines per request (default 500)
)") + connection_options_help;

json binary(std::string_view s) { return {{"type", "BINARY"}, {"data", base64_encode(s)}}; }

/// "line 3" or "lines 1-500" (1-based input line numbers, inclusive).
std::string line_range(int64_t first, int64_t last) {
  return first == last ? "line " + std::to_string(first) : "lines " + std::to_string(first) + "-" + std::to_string(last);
}

/// Reports one run of consecutive lines refused with the same message, once. A message naming
/// one record ("records[2] has no key, ...") refused the whole produce call it was in; its index
/// counts in that call, not the input, so a missing key is named by the input line the CLI sent
/// without one, and the other lines of the run are said to be unsent with it.
void report_refused_run(const std::string& message, int64_t first, int64_t last, const std::vector<int64_t>& keyless) {
  std::string text = message;
  const bool whole_request = text.rfind("records[", 0) == 0;
  const std::string no_key = "] has no key";
  const size_t at = text.find(no_key);
  auto culprit = std::find_if(keyless.begin(), keyless.end(), [&](int64_t n) { return n >= first && n <= last; });
  if (whole_request && at != std::string::npos && culprit != keyless.end()) {
    text = "line " + std::to_string(*culprit) + " has no key" + text.substr(at + no_key.size());
  } else {
    text = line_range(first, last) + ": " + text;
  }
  std::cerr << "record refused: " << text << "\n";
  if (whole_request && first != last) {
    std::cerr << line_range(first, last) << " not sent: refused with it (one produce request; none of it is stored)\n";
  }
}

/// Sends one batch, whose first line is input line `first_line` (1-based); returns the number of
/// refused records (each run of them reported once on stderr), or -1 on a whole-request failure.
int64_t send_batch(http_client& client, const std::string& path, const std::vector<std::string>& lines,
                   int64_t first_line, const args& a, const json& headers) {
  std::string body;
  auto separator = a.get("--key-separator");
  auto partition = int_option(a, "--partition", 0, INT32_MAX);
  const bool null_empty = a.has("--null-empty-values");
  std::vector<int64_t> keyless;   // input line numbers sent without a key
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    json record = json::object();
    size_t sep = separator && !separator->empty() ? line.find(*separator) : std::string::npos;
    std::string_view value = line;
    if (sep != std::string::npos) {
      record["key"] = binary(std::string_view(line).substr(0, sep));
      value = std::string_view(line).substr(sep + separator->size());
    } else {
      keyless.push_back(first_line + static_cast<int64_t>(i));
    }
    // v3: a record without "value" has a null one (a tombstone on a compacted topic).
    if (!(null_empty && value.empty())) record["value"] = binary(value);
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
  // One report per line, in order; consecutive refusals with one message are one run.
  int64_t refused = 0;
  int64_t line_number = first_line - 1;
  std::optional<std::pair<std::string, int64_t>> run;   // message, first line
  auto end_run = [&](int64_t last) {
    if (run) report_refused_run(run->first, run->second, last, keyless);
    run.reset();
  };
  size_t pos = 0;
  while (pos < r->body.size()) {
    size_t end = r->body.find('\n', pos);
    if (end == std::string::npos) end = r->body.size();
    auto report = json::parse(r->body.substr(pos, end - pos), nullptr, false);
    pos = end + 1;
    if (report.is_discarded() || !report.is_object()) continue;
    ++line_number;
    if (report.value("error_code", 200) == 200) {
      end_run(line_number - 1);
      continue;
    }
    ++refused;
    std::string message = report.value("message", std::string("?"));
    if (run && run->first != message) end_run(line_number - 1);
    if (!run) run.emplace(std::move(message), line_number);
  }
  end_run(line_number);
  return refused;
}

/// The first line of a refusal of `ringlog COMMAND` given `got` positional arguments where one
/// TOPIC belongs (a new user's `echo x | ringlog produce` printed the usage without saying why).
std::string one_topic_expected(std::string_view command, size_t got) {
  if (got == 0) return "ringlog " + std::string(command) + ": the TOPIC argument is missing\n\n";
  return "ringlog " + std::string(command) + ": one TOPIC argument expected, got " + std::to_string(got) + "\n\n";
}

}  // namespace

int produce_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1,
                      {"--bootstrap-server", "--key-separator", "--header", "--partition", "--acks", "--batch-size"},
                      {"--help", "--null-empty-values"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << produce_usage;
    return 0;
  }
  if (a->positional.size() != 1) {
    std::cerr << one_topic_expected("produce", a->positional.size()) << produce_usage;
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
  std::string path = "/v3/clusters/" + percent_encode_segment(*cluster) + "/topics/" + percent_encode_segment(topic) + "/records?acks=" + acks;
  std::vector<std::string> lines;
  std::string line;
  int64_t refused = 0;
  int64_t sent = 0;
  auto flush = [&]() -> bool {
    if (lines.empty()) return true;
    int64_t n = send_batch(*client, path, lines, sent + refused + 1, *a, headers);
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
  std::cerr << sent << (sent == 1 ? " record sent to " : " records sent to ") << topic << (refused ? ", " + std::to_string(refused) + " refused" : "")
            << "\n";
  return refused ? 1 : 0;
}

// ---- consume ----------------------------------------------------------------------------------

namespace {

const std::string consume_usage = std::string(R"(usage: ringlog consume TOPIC [options]

Prints record values, one per line, from each partition in turn; a null value (a tombstone)
prints as null.

Options:
  --partition N            read only partition N (default: every partition)
  --offset N|earliest|latest
                           where to start (default earliest)
  --from-timestamp MS      start at the first record with timestamp >= MS (ms since the epoch)
  --follow                 keep waiting for new records (long-poll) instead of stopping at the end
  --max-records N          stop after N records (--max-messages N, kafka-console-consumer's name)
  --print-key              print KEY<separator>VALUE
                           (a null key or value prints as null, as Kafka's console consumer
                           does: a tombstone is "k<TAB>null", an empty value "k<TAB>")
  --print-offset           prefix each line with partition:offset
  --key-separator SEP      separator for --print-key (default a tab)
  --group G                read as a member of consumer group G (REST v2 consumer): the group
                           shares the partitions and keeps committed offsets; --offset
                           earliest|latest is then auto.offset.reset, and each batch printed is
                           committed afterwards (at-least-once)
)") + connection_options_help;

struct cursor {
  int32_t partition = 0;
  int64_t next_offset = 0;
  int64_t end_offset = 0;   // stop here unless --follow
};

/// A record's key or value as printed: null (absent) as "null", as Kafka's console consumer.
std::string decode_or_null(const json& v) {
  if (v.is_null()) return "null";
  auto b = base64_decode(v.get<std::string>());
  return b ? model::to_string(*b) : std::string();
}

constexpr const char* v2_json = "application/vnd.kafka.v2+json";

/// Set by SIGINT / SIGTERM while `consume --group` runs: the loop ends after its current poll
/// (at most its 1 s timeout) and the instance leaves the group.
volatile std::sig_atomic_t consume_interrupted = 0;

extern "C" void on_consume_signal(int) { consume_interrupted = 1; }

/// This run's consumer instance name: "ringlog-cli-<pid>-<4 hex digits of the clock>", so two
/// CLI consumers share one group's partitions instead of the second hearing 409 (new user,
/// session 28: every run was named "ringlog-cli").
std::string cli_instance_name() {
  const auto ticks = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(ticks & 0xffff));
  return "ringlog-cli-" + std::to_string(::getpid()) + "-" + suffix;
}

/// `ringlog consume TOPIC --group G`: one REST v2 consumer instance, deleted at the end, also
/// after Ctrl-C or SIGTERM (a member left behind held its partitions until its lease ran out:
/// 5 minutes of 409s for the next run; new user, session 28).
int consume_group(http_client& client, const args& a, const std::string& topic, const std::string& group) {
  std::string reset = a.get("--offset").value_or("earliest");
  if (reset != "earliest" && reset != "latest") {
    std::cerr << "with --group, --offset is earliest or latest (auto.offset.reset)\n";
    return 2;
  }
  std::signal(SIGINT, on_consume_signal);
  std::signal(SIGTERM, on_consume_signal);
  json settings = {{"name", cli_instance_name()}, {"format", "binary"}, {"auto.offset.reset", reset}};
  auto created = client.post("/consumers/" + percent_encode_segment(group), settings.dump(), v2_json, v2_json);
  if (!ok_status(created)) return report_failure(created, "create consumer in group " + group);
  const json instance = json::parse(created->body);
  const std::string base = "/consumers/" + percent_encode_segment(group) + "/instances/" + percent_encode_segment(instance["instance_id"].get<std::string>());
  auto subscribed = client.post(base + "/subscription", json{{"topics", {topic}}}.dump(), v2_json);
  if (!ok_status(subscribed)) return report_failure(subscribed, "subscribe to " + topic);
  const bool follow = a.has("--follow");
  const auto max_records = int_option(a, "--max-records", 1, INT64_MAX);
  const std::string separator = a.get("--key-separator").value_or("\t");
  int64_t printed = 0;
  int empty_polls = 0;
  int code = 0;
  // Without --follow: stop after a few empty polls (the first ones may come before the
  // coordinator has handed this member its partitions).
  constexpr int empty_polls_max = 3;
  while (!consume_interrupted) {
    auto r = client.get(base + "/records?timeout=1000", binary_type);
    if (consume_interrupted) break;   // records of this poll are not printed, so not committed
    if (!ok_status(r)) {
      code = report_failure(r, "poll " + topic);
      break;
    }
    const json records = json::parse(r->body);
    if (records.empty()) {
      if (!follow && ++empty_polls >= empty_polls_max) break;
      continue;
    }
    empty_polls = 0;
    std::map<int64_t, int64_t> last_printed;   // partition -> its last offset printed
    bool done = false;
    for (const auto& rec : records) {
      if (a.has("--print-offset")) std::cout << rec["partition"] << ":" << rec["offset"] << "\t";
      if (a.has("--print-key")) std::cout << decode_or_null(rec["key"]) << separator;
      std::cout << decode_or_null(rec["value"]) << "\n";
      int64_t& last = last_printed[rec["partition"].get<int64_t>()];
      last = std::max(last, rec["offset"].get<int64_t>());
      if (max_records && ++printed >= *max_records) {
        done = true;
        break;
      }
    }
    std::cout.flush();
    // One entry per partition: a poll of thousands of records is still a commit of a few
    // partitions (one entry per record hit the commit's partition bound: new user, session 24).
    json offsets = json::array();
    for (const auto& [partition, offset] : last_printed) {
      offsets.push_back({{"topic", topic}, {"partition", partition}, {"offset", offset}});
    }
    // Commit what was printed (REST v2: the last processed offset of each partition).
    auto committed = client.post(base + "/offsets", json{{"offsets", offsets}}.dump(), v2_json);
    if (!ok_status(committed)) {
      code = report_failure(committed, "commit");
      break;
    }
    if (done) break;
  }
  (void)client.del(base);
  return code;
}

}  // namespace

int consume_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1,
                      {"--bootstrap-server", "--partition", "--offset", "--from-timestamp", "--max-records", "--key-separator",
                       "--group"},
                      {"--help", "--follow", "--print-key", "--print-offset"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << consume_usage;
    return 0;
  }
  if (a->positional.size() != 1) {
    std::cerr << one_topic_expected("consume", a->positional.size()) << consume_usage;
    return 2;
  }
  const std::string topic = a->positional[0];
  const std::string topic_path = "/topics/" + percent_encode_segment(topic);
  auto client = connect(*a);
  if (!client) return 2;
  if (auto group = a->get("--group")) return consume_group(*client, *a, topic, *group);
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
      const int64_t begin_offset = o["beginning_offset"].get<int64_t>();
      if (*start_offset < begin_offset || *start_offset > c.end_offset) {
        // The same refusal the HTTP API gives (42202), not a silent empty read.
        std::cerr << "offset " << *start_offset << " is outside partition " << p << ": log_start_offset "
                  << begin_offset << ", log_end_offset " << c.end_offset << "\n";
        return 1;
      }
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
        if (a->has("--print-key")) std::cout << decode_or_null(rec["key"]) << separator;
        std::cout << decode_or_null(rec["value"]) << "\n";
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

}  // namespace ringlog::cli

// ---- groups -----------------------------------------------------------------------------------

namespace ringlog::cli {
namespace {

const std::string groups_usage = std::string(R"(usage: ringlog groups COMMAND [options]

Commands:
  list                                   groups with state and member count
  describe GROUP                         state, generation, assignor, members and their partitions
  lag GROUP                              committed offset, high watermark and lag per partition
  reset GROUP --to earliest|latest|timestamp|offset|shift [--value N] [--timestamp MS]
              [--topic T[:P,P...]]... [--execute]
                                         Kafka's reset-offsets for a group without members:
                                         a dry run unless --execute; --topic T resets every
                                         partition of T, --topic T:0,2 only partitions 0 and 2
                                         (Kafka's topic:0,1,2); no --topic: every topic the
                                         group committed
  delete GROUP                           delete a group without members and its offsets
  dead-letters GROUP                     the group's dead-letter topics with their counts
                                         (docs/retries.md)
  redrive GROUP --topic DLQ [--to original|retry] [--offset P@O]...
                                         moves dead letters of DLQ (by default <topic>.GROUP.dlq;
                                         see dead.letter.topic.template) back to
                                         their original topic (default) or the retry path, each
                                         at most once; --offset chooses letters (partition@offset),
                                         none: every letter not redriven yet

Options:
)") + connection_options_help;

int groups_lag(http_client& client, const std::string& path) {
  auto r = client.get(path + "/lags");
  // 404 with error_code 404 (Confluent's answer): the group exists and has committed nothing yet,
  // which is a state to show, not a failure (an unknown group is 40404 and still fails).
  if (r.ok() && r->status == 404) {
    const json body = json::parse(r->body, nullptr, false);
    if (body.is_object() && body.value("error_code", 0) == 404) {
      std::cout << "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\n"
                << "(the group has committed no offsets yet: no lag to report)\n";
      return 0;
    }
  }
  if (!ok_status(r)) return report_failure(r, "lag");
  const json lags = json::parse(r->body);
  std::cout << "TOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\n";
  for (const auto& l : lags["data"]) {
    std::cout << cell(l["topic_name"]) << "\t" << cell(l["partition_id"]) << "\t" << cell(l["current_offset"]) << "\t"
              << cell(l["log_end_offset"]) << "\t" << cell(l["lag"]) << "\t" << cell(l["consumer_id"]) << "\n";
  }
  return 0;
}

int groups_describe(http_client& client, const std::string& path) {
  auto g = client.get(path);
  if (!ok_status(g)) return report_failure(g, "describe");
  auto members = client.get(path + "/consumers");
  if (!ok_status(members)) return report_failure(members, "describe");
  const json gj = json::parse(g->body);
  std::cout << "Group: " << cell(gj["consumer_group_id"]) << "\tState: " << cell(gj["state"])
            << "\tGeneration: " << cell(gj.value("generation", json())) << "\tAssignor: "
            << cell(gj.value("partition_assignor", json())) << "\tCoordinatorPartition: "
            << cell(gj.value("coordinator_partition", json())) << "\n";
  const json mj = json::parse(members->body);
  for (const auto& m : mj["data"]) {
    std::string parts;
    // `assignments` is a link (Confluent's KafkaConsumer); the inline list is assigned_partitions.
    for (const auto& a : m.value("assigned_partitions", json::array())) {
      parts += (parts.empty() ? "" : ",") + cell(a["topic_name"]) + "-" + cell(a["partition_id"]);
    }
    std::cout << "\tMember: " << cell(m["consumer_id"]) << "\tClient: " << cell(m["client_id"]) << "\tPartitions: " << parts
              << "\n";
  }
  return 0;
}

}  // namespace

constexpr const char* cluster_usage = R"(usage: ringlog cluster status [--bootstrap-server URL]
       ringlog cluster elect-leaders [--topic T [--partition P]] [--bootstrap-server URL]
       ringlog cluster reassign --topic T --partition P (--replicas ID,ID,... | --cancel) [--bootstrap-server URL]
       ringlog cluster reassignments [--topic T] [--bootstrap-server URL]
       ringlog cluster rebalance [--dry-run] [--tolerance F] [--cancel] [--bootstrap-server URL]
       ringlog cluster decommission NODE_ID [--cancel | --status] [--bootstrap-server URL]
       ringlog cluster decommission --status [--bootstrap-server URL]

status: prints the cluster: the active controller (Controller: node N, "dedicated" for a
process.roles=controller node), every registered broker with its state (unfenced, fenced,
controlled_shutdown) and HTTP address, and the metadata quorum (leader, epoch, high watermark,
each voter's log end offset and lag, as kafka-metadata-quorum describe --status shows them). Only
the quorum's leader knows the voters' offsets (a follower or an observer answers "-" there): when
the node asked is not the leader, the leader is asked again (at its broker address, or the
--bootstrap-server URL that answers as it) and AnsweredBy names the node asked first too. With no
quorum leader (LeaderId "-": an election, or no majority of voters running) the broker states are
as last known. A voter's ROLES is broker,controller, or controller for a dedicated controller,
which is never listed as a broker, or not reachable, never fetched from the leader, for a voter
the quorum leader never heard from (not started, or cut off: its roles are not known).
OBSERVER rows (on the leader) are the broker-only nodes (process.roles=broker), which fetch the
metadata log without a vote (KIP-595); AnsweredBy says observer when one of them answered.

elect-leaders: preferred leader election, as kafka-leader-election.sh --election-type preferred:
each partition (every partition of every topic; --topic: that topic's; --partition: one) whose
first replica is in the ISR but does not lead gets it back as leader. With --topic, prints one
line per partition of it: its leader after the call, or why nothing changed
(ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE); without, one line per partition that
changed. The broker does this by itself every
leader.imbalance.check.interval.seconds while auto.leader.rebalance.enable=true.

reassign: moves a partition onto other brokers while it serves (as kafka-reassign-partitions.sh
--execute; KIP-455): the new replicas copy the partition from its leader and join the ISR, the
leadership moves if its leader is removed, then the removed replicas delete their copy. The first
of --replicas is the preferred leader. --cancel stops a move and keeps the original replicas
(the same brokers; as in Kafka their order, and so the preferred leader, may differ).
Prints the move as it stands once started: the replicas being added and removed (none: done).

reassignments: the moves under way (as kafka-reassign-partitions.sh --list): each partition with
its replicas, the ones being added and the ones being removed.

rebalance: plans moves that spread replicas, preferred leaderships and bytes on disk evenly over
the brokers (each within --tolerance of the average, default 0.1; racks from broker.rack are kept;
the smallest partitions move first; a partition being reassigned, without a leader or under
min.insync.replicas is left alone and listed), prints the plan (each broker's replicas, leaders
and bytes before -> after, each move, the bytes to copy) and starts it as reassignments (the
new replicas catch up before the old ones go, so no partition drops below min.insync.replicas).
--dry-run prints the plan only. --cancel stops every reassignment under way but a
decommission's (cancel that with cluster decommission NODE_ID --cancel). Refused while
reassignments are under way. Bound the copying with leader.replication.throttled.rate and
follower.replication.throttled.rate. The plan ends with the autobalancer's mode
(partition.autobalancer.mode: off, node_add or continuous) and, in continuous mode, the
unavailable brokers whose replicas it is moving off.

decommission: moves every replica off broker NODE_ID (a rebalance with it excluded; it takes no
new replicas from then on), then the controller unregisters it and refuses its node id for good
(stop its process; a new broker needs another node.id). Refused, with the reason, for a controller
quorum voter or when the other brokers cannot hold a topic's replication factor. --status prints
the progress (partitions still on it; all decommissions without NODE_ID); --cancel stops it (the
moves under way go back; what moved stays).

--bootstrap-server takes several URLs separated by commas, tried in turn as Kafka's tools do;
--request-timeout-ms MS (default 10000) bounds the wait to connect and then for each answer: a
read not answered in time is asked of the next URL.
)";

namespace {

int elect_leaders(const args& a) {
  json body = json::object();
  body["election_type"] = "PREFERRED";
  if (a.get("--partition").has_value() && !a.get("--topic").has_value()) {
    std::cerr << "elect-leaders: --partition needs --topic\n";
    return 2;
  }
  auto client = connect(a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string base = "/v3/clusters/" + percent_encode_segment(*cluster);
  if (a.get("--topic").has_value()) {
    const std::string topic = *a.get("--topic");
    std::vector<int32_t> ids;
    if (a.get("--partition").has_value()) {
      auto p = int_option(a, "--partition", 0, INT32_MAX);
      if (!p) return 2;
      ids.push_back(static_cast<int32_t>(*p));
    } else {
      auto t = client->get(base + "/topics/" + percent_encode_segment(topic));
      if (!ok_status(t)) return report_failure(t, "describe topic " + topic);
      const auto count = json::parse(t->body).value("partitions_count", 0);
      for (int32_t p = 0; p < count; ++p) ids.push_back(p);
    }
    body["partitions"] = json::array();
    for (int32_t p : ids) body["partitions"].push_back({{"topic_name", topic}, {"partition_id", p}});
  }
  auto r = client->post(base + "/elect-leaders", body.dump(), "application/json");
  if (!ok_status(r)) return report_failure(r, "elect leaders");
  const json out = json::parse(r->body);
  std::cout << "TOPIC\tPARTITION\tLEADER\tRESULT\n";
  for (const auto& e : out["data"]) {
    std::string result = "elected";
    if (!e["error"].is_null()) {
      result = e["error"].get<std::string>();
      std::transform(result.begin(), result.end(), result.begin(), [](unsigned char ch) { return std::toupper(ch); });
    }
    std::cout << cell(e["topic_name"]) << "\t" << cell(e["partition_id"]) << "\t" << cell(e["leader_id"]) << "\t"
              << result << "\n";
  }
  if (out["data"].empty()) {
    std::cout << "(no partition changed: each is led by its preferred replica, or that replica is not available)\n";
  }
  return 0;
}

/// "1,2,3" as broker ids; nullopt (with a message) when it is not that.
std::optional<std::vector<int32_t>> broker_id_list(const std::string& text) {
  std::vector<int32_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int32_t id = -1;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || id < 0) {
      std::cerr << "--replicas must be broker ids separated by commas (e.g. 4,2,3), got \"" << text << "\"\n";
      return std::nullopt;
    }
    out.push_back(id);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int reassign(const args& a) {
  const auto topic = a.get("--topic");
  const auto replicas_text = a.get("--replicas");
  if (!topic || !a.get("--partition") || (replicas_text.has_value() == a.has("--cancel"))) {
    std::cerr << "reassign needs --topic, --partition and one of --replicas or --cancel\n" << cluster_usage;
    return 2;
  }
  auto partition = int_option(a, "--partition", 0, INT32_MAX);
  if (!partition) return 2;
  std::optional<std::vector<int32_t>> replicas;
  if (replicas_text) {
    replicas = broker_id_list(*replicas_text);
    if (!replicas) return 2;
  }
  auto client = connect(a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string path = "/v3/clusters/" + percent_encode_segment(*cluster) + "/topics/" +
                           percent_encode_segment(*topic) + "/partitions/" + std::to_string(*partition) + "/reassignment";
  const std::string what = "partition " + std::to_string(*partition) + " of " + *topic;
  if (!replicas) {
    auto r = client->del(path);
    if (!ok_status(r)) return report_failure(r, "cancel the reassignment of " + what);
    std::cout << "Cancelled the reassignment of " << what << ".\n";
    return 0;
  }
  auto r = client->patch(path, json{{"replicas", *replicas}}.dump());
  if (!ok_status(r)) return report_failure(r, "reassign " + what);
  const json out = json::parse(r->body);
  if (out["adding_replicas"].empty() && out["removing_replicas"].empty()) {
    std::cout << "Reassigned " << what << " to " << ids_cell(json(*replicas)) << ".\n";
  } else {
    std::cout << "Reassigning " << what << " to " << ids_cell(json(*replicas)) << ": adding "
              << ids_cell(out["adding_replicas"]) << ", removing " << ids_cell(out["removing_replicas"])
              << " (ringlog cluster reassignments shows it until it completes).\n";
  }
  return 0;
}

int list_reassignments(const args& a) {
  auto client = connect(a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string base = "/v3/clusters/" + percent_encode_segment(*cluster) + "/topics/";
  const std::string path = base + (a.get("--topic") ? percent_encode_segment(*a.get("--topic")) : "-") +
                           "/partitions/-/reassignment";
  auto r = client->get(path);
  if (!ok_status(r)) return report_failure(r, "list reassignments");
  const json out = json::parse(r->body);
  std::cout << "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING\n";
  for (const auto& e : out["data"]) {
    std::cout << cell(e["topic_name"]) << "\t" << cell(e["partition_id"]) << "\t" << ids_cell(e["replica_ids"]) << "\t"
              << ids_cell(e["adding_replicas"]) << "\t" << ids_cell(e["removing_replicas"]) << "\n";
  }
  if (out["data"].empty()) std::cout << "(no reassignment under way)\n";
  return 0;
}

/// "a -> b" of a before/after pair of the rebalance plan.
std::string before_after(const json& pair) { return cell(pair["before"]) + " -> " + cell(pair["after"]); }

/// " (excluded: fenced)" for a broker the plan gives no replicas (the reason when the answer has
/// one: older brokers answer without excluded_reason), "" for one it may.
std::string excluded_cell(const json& broker) {
  if (!broker.value("excluded", false)) return "";
  const auto reason = broker.find("excluded_reason");
  if (reason == broker.end() || !reason->is_string()) return " (excluded)";
  return " (excluded: " + reason->get<std::string>() + ")";
}

void print_rebalance_plan(const json& plan) {
  std::cout << "BROKER\tRACK\tREPLICAS\tLEADERS\tBYTES\n";
  for (const auto& b : plan["brokers"]) {
    std::cout << cell(b["broker_id"]) << excluded_cell(b) << "\t"
              << (b["rack"].is_null() ? "-" : cell(b["rack"])) << "\t" << before_after(b["replicas"]) << "\t"
              << before_after(b["leaders"]) << "\t" << before_after(b["size_bytes"]) << "\n";
  }
  if (!plan["moves"].empty()) std::cout << "\nTOPIC\tPARTITION\tREPLICAS\tTARGET\tBYTES\n";
  for (const auto& m : plan["moves"]) {
    std::cout << cell(m["topic_name"]) << "\t" << cell(m["partition_id"]) << "\t" << ids_cell(m["replicas"]) << "\t"
              << ids_cell(m["target_replicas"]) << "\t" << cell(m["size_bytes"]) << "\n";
  }
  for (const auto& k : plan["skipped"]) {
    std::cout << "skipped: " << cell(k["topic_name"]) << " partition " << cell(k["partition_id"]) << ": "
              << cell(k["reason"]) << "\n";
  }
  std::cout << "\n" << plan["moves"].size() << " partition(s) move, " << cell(plan["bytes_to_move"])
            << " bytes to copy; balanced after the plan: " << (plan["balanced"].get<bool>() ? "yes" : "no")
            << " (tolerance " << plan["tolerance"].dump() << ")\n";
  for (const auto& why : plan.value("imbalances", json::array())) std::cout << "  not balanced: " << cell(why) << "\n";
  if (const auto a = plan.find("autobalancer"); a != plan.end() && a->is_object()) {
    std::cout << "Autobalancer: partition.autobalancer.mode=" << cell((*a)["mode"]);
    if (!(*a)["unavailable_brokers_draining"].empty()) {
      std::cout << "; moving replicas off unavailable broker(s) " << ids_cell((*a)["unavailable_brokers_draining"]);
    }
    std::cout << "\n";
  }
}

int rebalance(const args& a) {
  auto client = connect(a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string path = "/v3/clusters/" + percent_encode_segment(*cluster) + "/rebalance";
  if (a.has("--cancel")) {
    auto r = client->del(path);
    if (!ok_status(r)) return report_failure(r, "cancel the reassignments");
    std::cout << "Cancelled " << cell(json::parse(r->body)["cancelled"]) << " reassignment(s).\n";
    return 0;
  }
  json body = {{"dry_run", a.has("--dry-run")}};
  if (auto t = a.get("--tolerance")) {
    char* end = nullptr;
    const double v = std::strtod(t->c_str(), &end);
    if (t->empty() || end != t->c_str() + t->size() || !(v >= 0.0 && v <= 1.0)) {
      std::cerr << "--tolerance must be a number from 0.0 to 1.0, got \"" << *t << "\"\n";
      return 2;
    }
    body["tolerance"] = v;
  }
  auto r = client->post(path, body.dump(), "application/json");
  if (!ok_status(r)) return report_failure(r, "rebalance");
  const json plan = json::parse(r->body);
  print_rebalance_plan(plan);
  if (!a.has("--dry-run") && plan["started"].get<int>() > 0) {
    std::cout << "Started " << cell(plan["started"])
              << " reassignment(s): ringlog cluster reassignments shows them until they complete, "
                 "ringlog cluster rebalance --cancel stops them.\n";
  }
  return 0;
}

void print_decommission(const json& task) {
  const std::string id = cell(task["broker_id"]);
  const std::string status = cell(task["task_status"]);
  if (status == "SUCCESS") {
    std::cout << "Broker " << id << " is decommissioned: it holds no replicas and is unregistered; stop its process.\n";
  } else if (status == "CANCELED") {
    std::cout << "Decommission of broker " << id << " cancelled: " << cell(task["partitions_remaining"])
              << " partition(s) keep a replica on it.\n";
  } else {
    std::cout << "Decommissioning broker " << id << ": " << cell(task["partitions_remaining"])
              << " partition(s) still on it, " << cell(task["reassignments_in_progress"]) << " being moved.\n";
  }
}

int decommission(const args& a) {
  if (a.positional.size() > 2 || (a.positional.size() == 1 && !a.has("--status")) || (a.has("--cancel") && a.has("--status"))) {
    std::cerr << "decommission needs a NODE_ID (and one of --cancel or --status at most), or --status alone\n" << cluster_usage;
    return 2;
  }
  std::optional<int64_t> node;
  if (a.positional.size() == 2) {
    const std::string& text = a.positional[1];
    // Canonical spelling only, as the HTTP routes: "04" names no broker.
    if (!(text.size() > 1 && text[0] == '0')) node = parse_int(text, 0, INT32_MAX);
    if (!node) {
      std::cerr << "NODE_ID must be a broker id (digits, no leading zero), got \"" << text << "\"\n";
      return 2;
    }
  }
  auto client = connect(a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string brokers = "/v3/clusters/" + percent_encode_segment(*cluster) + "/brokers/";
  const std::string task = node ? brokers + std::to_string(*node) + "/tasks/remove-broker" : "";
  if (a.has("--status")) {
    auto r = client->get(node ? brokers + std::to_string(*node) + "/tasks" : brokers + "-/tasks");
    if (!ok_status(r)) return report_failure(r, "list decommissions");
    const json out = json::parse(r->body);
    for (const auto& t : out["data"]) print_decommission(t);
    if (out["data"].empty()) std::cout << "(no decommission under way or done" << (node ? " for this broker" : "") << ")\n";
    return 0;
  }
  auto r = a.has("--cancel") ? client->del(task) : client->del(brokers + std::to_string(*node));
  if (!ok_status(r)) return report_failure(r, a.has("--cancel") ? "cancel the decommission" : "decommission");
  const json answer = json::parse(r->body);
  print_decommission(answer);
  if (!a.has("--cancel") && answer["task_status"] == "IN_PROGRESS") {
    std::cout << "ringlog cluster decommission " << *node << " --status shows the progress; --cancel stops it.\n";
  }
  return 0;
}

/// The brokers and the quorum as one node answers them (GET .../brokers and .../quorum).
struct cluster_view {
  json brokers;
  json quorum;
};

std::optional<cluster_view> cluster_view_of(http_client& client, const std::string& cluster, bool quiet) {
  const std::string base = "/v3/clusters/" + percent_encode_segment(cluster);
  auto brokers = client.get(base + "/brokers");
  if (!ok_status(brokers)) {
    if (!quiet) report_failure(brokers, "list brokers");
    return std::nullopt;
  }
  auto quorum = client.get(base + "/quorum");
  if (!ok_status(quorum)) {
    if (!quiet) report_failure(quorum, "describe the quorum");
    return std::nullopt;
  }
  return cluster_view{json::parse(brokers->body), json::parse(quorum->body)};
}

/// The view of the quorum's leader, when `asked` is not it: only the leader knows the voters' log
/// end offsets and lag, and its broker states are the newest. Its HTTP address is its broker
/// row's (a combined node) or one of the --bootstrap-server list (a dedicated controller has no
/// address in the metadata). nullopt when no leader is known or none of those answers as it.
std::optional<cluster_view> leader_view(const cluster_view& asked, const std::string& cluster,
                                        const std::string& bootstrap, const std::string& asked_url) {
  const json& leader = asked.quorum["leader_id"];
  if (!leader.is_number() || leader == asked.quorum["node_id"]) return std::nullopt;
  std::vector<std::string> urls;
  for (const auto& b : asked.brokers["data"]) {
    if (b["broker_id"] == leader && b["host"].is_string()) {
      urls.push_back(b.value("scheme", std::string("http")) + "://" + cell(b["host"]) + ":" + cell(b["port"]));
    }
  }
  if (auto listed = parse_bootstrap_servers(bootstrap); listed.ok()) {
    for (const auto& e : *listed) urls.push_back("http://" + e.host + ":" + e.port);
  }
  for (const auto& url : urls) {
    if (url == asked_url) continue;
    auto client = http_client::create(url);
    if (!client.ok()) continue;
    (*client)->set_timeout_ms(cluster_status_reask_timeout_ms);
    auto view = cluster_view_of(**client, cluster, true);
    if (view && view->quorum["node_id"] == leader) return view;
  }
  return std::nullopt;
}

/// "leader", "follower", ..., or "observer" for a broker-only node (KIP-595: it fetches the
/// metadata log without a vote; the quorum calls its role follower).
std::string quorum_role(const json& q) {
  return q.value("is_observer", false) ? std::string("observer") : cell(q["role"]);
}

/// A voter's ROLES cell: broker,controller for a registered broker; for another voter, the quorum
/// leader (`q` answered by it) tells a dedicated controller, which fetches from it, from a voter
/// it never heard from (not started, or cut off since the leader's election): that one is not
/// reachable, its roles unknown. Elsewhere (a follower's view) a voter not registered as a broker
/// reads as a controller.
std::string voter_roles(const json& q, const json& v, bool registered_broker) {
  if (registered_broker) return "broker,controller";
  const bool answered_by_leader = q["leader_id"].is_number() && q["leader_id"] == q["node_id"];
  if (answered_by_leader && v["replica_id"] != q["leader_id"] && !v["last_fetch_timestamp"].is_number()) {
    return "not reachable (never fetched from the leader)";
  }
  return "controller";
}

int cluster_status(const args& a) {
  auto client = connect(a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  auto asked = cluster_view_of(*client, *cluster, false);
  if (!asked) return 1;
  const std::string bootstrap = a.get("--bootstrap-server").value_or(default_bootstrap_server());
  const auto from_leader = leader_view(*asked, *cluster, bootstrap, client->base_url());
  const cluster_view& shown = from_leader ? *from_leader : *asked;
  const json& b = shown.brokers;
  const json& q = shown.quorum;
  auto is_broker = [&](const json& id) {
    return std::any_of(b["data"].begin(), b["data"].end(), [&](const json& broker) { return broker["broker_id"] == id; });
  };
  std::cout << "ClusterId:\t" << *cluster << "\n";
  if (q["leader_id"].is_number()) {
    std::cout << "Controller:\tnode " << cell(q["leader_id"]) << " ("
              << (is_broker(q["leader_id"]) ? "broker,controller" : "dedicated") << ")\n";
  } else {
    std::cout << "Controller:\tnone\n";
  }
  std::cout << "BROKER\tSTATE\tCONTROLLER\tEPOCH\tRACK\tADDRESS\n";
  for (const auto& broker : b["data"]) {
    std::cout << cell(broker["broker_id"]) << "\t" << cell(broker.value("state", json("unfenced"))) << "\t"
              << (broker.value("is_controller", false) ? "yes" : "no") << "\t" << cell(broker["broker_epoch"]) << "\t"
              << cell(broker["rack"]) << "\t" << broker.value("scheme", std::string("http")) << "://"
              << cell(broker["host"]) << ":" << cell(broker["port"]) << "\n";
  }
  if (!q["leader_id"].is_number()) {
    // No quorum leader (an election, or no majority of voters): nothing fences or unfences.
    std::cout << "(no active controller: broker states are as last known)\n";
  }
  std::cout << "\nLeaderId:\t" << cell(q["leader_id"]) << "\nLeaderEpoch:\t" << cell(q["leader_epoch"])
            << "\nHighWatermark:\t" << cell(q["high_watermark"]) << "\nAnsweredBy:\t" << cell(q["node_id"])
            << " (" << quorum_role(q) << ", applied offset " << cell(q["applied_offset"]);
  if (from_leader) {
    std::cout << "; asked first: node " << cell(asked->quorum["node_id"]) << " (" << quorum_role(asked->quorum)
              << "), which does not know the voters' offsets";
  }
  std::cout << ")\n";
  // ROLES: a voter that is not a registered broker is a dedicated controller (process.roles=controller).
  std::cout << "VOTER\tLOG_END_OFFSET\tLAG\tLAST_FETCH_MS_AGO\tROLES\n";
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  auto ago = [now_ms](const json& v) {
    return v["last_fetch_timestamp"].is_number() ? std::to_string(now_ms - v["last_fetch_timestamp"].get<int64_t>())
                                                 : std::string("-");
  };
  for (const auto& v : q["voters"]) {
    std::cout << cell(v["replica_id"]) << "\t" << cell(v["log_end_offset"]) << "\t" << cell(v["lag"]) << "\t" << ago(v)
              << "\t" << voter_roles(q, v, is_broker(v["replica_id"])) << "\n";
  }
  // Observers (KIP-595): broker-only nodes (process.roles=broker) that fetch the metadata log but
  // never vote; known with their offsets on the quorum leader.
  if (q.contains("observers") && !q["observers"].empty()) {
    std::cout << "OBSERVER\tLOG_END_OFFSET\tLAG\tLAST_FETCH_MS_AGO\n";
    for (const auto& v : q["observers"]) {
      std::cout << cell(v["replica_id"]) << "\t" << cell(v["log_end_offset"]) << "\t" << cell(v["lag"]) << "\t" << ago(v)
                << "\n";
    }
  }
  return 0;
}

}  // namespace

int cluster_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1, {"--bootstrap-server", "--topic", "--partition", "--replicas", "--tolerance"},
                      {"--help", "--cancel", "--dry-run", "--status"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << cluster_usage;
    return 0;
  }
  static const std::set<std::string> commands = {"status", "elect-leaders", "reassign", "reassignments", "rebalance",
                                                 "decommission"};
  if (a->positional.empty() || !commands.contains(a->positional[0]) ||
      (a->positional.size() != 1 && a->positional[0] != "decommission")) {
    std::cerr << cluster_usage;
    return 2;
  }
  if (a->positional[0] == "decommission") return decommission(*a);
  if (a->positional[0] == "rebalance") return rebalance(*a);
  if (a->get("--tolerance") || a->has("--dry-run") || a->has("--status")) {
    std::cerr << "--tolerance and --dry-run are options of cluster rebalance, --status of cluster decommission\n"
              << cluster_usage;
    return 2;
  }
  if (a->positional[0] == "reassign") return reassign(*a);
  if ((a->get("--replicas") || a->has("--cancel"))) {
    std::cerr << "--replicas and --cancel are options of cluster reassign\n" << cluster_usage;
    return 2;
  }
  if (a->positional[0] == "reassignments") {
    if (a->get("--partition")) {
      std::cerr << "cluster reassignments takes no --partition\n" << cluster_usage;
      return 2;
    }
    return list_reassignments(*a);
  }
  if (a->positional[0] == "elect-leaders") return elect_leaders(*a);
  if (a->get("--topic") || a->get("--partition")) {
    std::cerr << "cluster status takes no --topic or --partition\n" << cluster_usage;
    return 2;
  }
  return cluster_status(*a);
}

int groups_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1, {"--bootstrap-server", "--to", "--value", "--timestamp", "--topic", "--offset"},
                      {"--help", "--execute"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << groups_usage;
    return 0;
  }
  if (a->positional.empty()) {
    std::cerr << groups_usage;
    return 2;
  }
  const std::string command = a->positional[0];
  auto client = connect(*a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string groups_path = "/v3/clusters/" + percent_encode_segment(*cluster) + "/consumer-groups";
  if (command == "list") {
    auto r = client->get(groups_path);
    if (!ok_status(r)) return report_failure(r, "list groups");
    const json groups = json::parse(r->body);
    std::cout << "GROUP\tSTATE\tMEMBERS\n";
    for (const auto& g : groups["data"]) {
      std::cout << cell(g["consumer_group_id"]) << "\t" << cell(g["state"]) << "\t" << cell(g["member_count"]) << "\n";
    }
    return 0;
  }
  if (a->positional.size() != 2) {
    std::cerr << "groups " << command << " needs one group id\n" << groups_usage;
    return 2;
  }
  const std::string path = groups_path + "/" + percent_encode_segment(a->positional[1]);
  if (command == "describe") return groups_describe(*client, path);
  if (command == "lag") return groups_lag(*client, path);
  if (command == "delete") {
    auto r = client->del(path);
    if (!ok_status(r)) return report_failure(r, "delete group");
    std::cout << "Deleted group " << a->positional[1] << ".\n";
    return 0;
  }
  if (command == "reset") {
    auto to = a->get("--to");
    if (!to) {
      std::cerr << "groups reset needs --to\n" << groups_usage;
      return 2;
    }
    json body = {{"to", *to}, {"dry_run", !a->has("--execute")}};
    if (auto v = int_option(*a, "--value", INT64_MIN, INT64_MAX)) body["value"] = *v;
    if (auto t = int_option(*a, "--timestamp", 0, INT64_MAX)) body["timestamp"] = *t;
    auto topics = a->all("--topic");
    if (!topics.empty()) body["topics"] = topics;
    auto r = client->post(path + "/offsets:reset", body.dump(), "application/json");
    if (!ok_status(r)) return report_failure(r, "reset offsets");
    const json out = json::parse(r->body);
    std::cout << "TOPIC\tPARTITION\tNEW-OFFSET\n";
    for (const auto& o : out["offsets"]) {
      std::cout << cell(o["topic_name"]) << "\t" << cell(o["partition_id"]) << "\t" << cell(o["offset"]) << "\n";
    }
    if (out.value("dry_run", true)) std::cout << "(dry run: nothing changed; add --execute)\n";
    return 0;
  }
  if (command == "dead-letters") {
    auto r = client->get(path + "/dead-letters");
    if (!ok_status(r)) return report_failure(r, "dead letters");
    std::cout << "DEAD-LETTER-TOPIC\tORIGINAL-TOPIC\tDEAD-LETTERS\tREDRIVEN\tPENDING\n";
    const json topics = json::parse(r->body);   // kept alive for the loop (a temporary's member would dangle)
    for (const auto& t : topics["data"]) {
      std::cout << cell(t["topic_name"]) << "\t" << cell(t["original_topic_name"]) << "\t" << cell(t["dead_letters"])
                << "\t" << cell(t["redriven"]) << "\t" << cell(t["pending"]) << "\n";
    }
    return 0;
  }
  if (command == "redrive") {
    auto topic = a->get("--topic");
    if (!topic) {
      std::cerr << "groups redrive needs --topic (the dead-letter topic)\n" << groups_usage;
      return 2;
    }
    json body = {{"to", a->get("--to").value_or("original")}};
    json offsets = json::array();
    for (const auto& o : a->all("--offset")) {
      const auto at = o.find('@');
      int64_t p = -1;
      int64_t off = -1;
      const bool ok = at != std::string::npos &&
                      std::from_chars(o.data(), o.data() + at, p).ptr == o.data() + at &&
                      std::from_chars(o.data() + at + 1, o.data() + o.size(), off).ptr == o.data() + o.size() && p >= 0 &&
                      p <= INT32_MAX && off >= 0;
      if (!ok) {
        std::cerr << "--offset must be PARTITION@OFFSET, got \"" << o << "\"\n";
        return 2;
      }
      offsets.push_back({{"partition", p}, {"offset", off}});
    }
    if (!offsets.empty()) body["offsets"] = offsets;
    auto r = client->post(path + "/dead-letters/" + percent_encode_segment(*topic) + "/redrive", body.dump(),
                          "application/json");
    if (!ok_status(r)) return report_failure(r, "redrive");
    const json out = json::parse(r->body);
    std::cout << "Selected " << cell(out["selected"]) << ": redriven " << cell(out["redriven"]) << ", already redriven "
              << cell(out["already_redriven"]) << ", failed " << out["failures"].size() << ".\n";
    for (const auto& f : out["failures"]) std::cout << "  " << cell(f) << "\n";
    return out["failures"].empty() ? 0 : 1;
  }
  std::cerr << "unknown groups command \"" << command << "\"\n" << groups_usage;
  return 2;
}

// ---- transactions ------------------------------------------------------------------------------

namespace {

const std::string transactions_usage = std::string(R"(usage: ringlog transactions COMMAND [options]

Commands:
  list [--state STATE]         transactional ids the broker coordinates: producer id and state
                               (Kafka's names: Empty, Ongoing, PrepareCommit, PrepareAbort,
                               CompleteCommit, CompleteAbort); ask each broker of a cluster
  describe TRANSACTIONAL_ID    state, producer id and epoch, timeout, start, partitions
  abort TRANSACTIONAL_ID       abort its ongoing transaction (kafka-transactions.sh abort): its
                               producer is fenced and abort markers are written

Options:
)") + connection_options_help;

}  // namespace

int transactions_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1, {"--bootstrap-server", "--state"}, {"--help"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << transactions_usage;
    return 0;
  }
  if (a->positional.empty()) {
    std::cerr << transactions_usage;
    return 2;
  }
  const std::string command = a->positional[0];
  auto client = connect(*a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string base = "/v3/clusters/" + percent_encode_segment(*cluster) + "/transactions";
  if (command == "list") {
    std::string path = base;
    if (auto state = a->get("--state")) path += "?state=" + percent_encode_segment(*state);
    auto r = client->get(path);
    if (!ok_status(r)) return report_failure(r, "list transactions");
    const json out = json::parse(r->body);
    std::cout << "TRANSACTIONAL-ID\tPRODUCER-ID\tSTATE\tCOORDINATOR\n";
    for (const auto& t : out["data"]) {
      std::cout << cell(t["transactional_id"]) << "\t" << cell(t["producer_id"]) << "\t" << cell(t["state"]) << "\t"
                << cell(t["coordinator_id"]) << "\n";
    }
    return 0;
  }
  if (a->positional.size() != 2) {
    std::cerr << "transactions " << command << " needs one transactional id\n" << transactions_usage;
    return 2;
  }
  const std::string path = base + "/" + percent_encode_segment(a->positional[1]);
  if (command == "describe") {
    auto r = client->get(path);
    if (!ok_status(r)) return report_failure(r, "describe transaction");
    const json t = json::parse(r->body);
    std::cout << "transactional id: " << cell(t["transactional_id"]) << "\nstate: " << cell(t["state"])
              << "\nproducer id: " << cell(t["producer_id"]) << "\nproducer epoch: " << cell(t["producer_epoch"])
              << "\ntimeout ms: " << cell(t["transaction_timeout_ms"])
              << "\nstarted ms: " << cell(t["transaction_start_ms"]) << "\ncoordinator: " << cell(t["coordinator_id"])
              << "\nTOPIC\tPARTITION\n";
    for (const auto& p : t["partitions"]) std::cout << cell(p["topic"]) << "\t" << cell(p["partition"]) << "\n";
    return 0;
  }
  if (command == "abort") {
    auto r = client->post(path + "/abort", "", "application/json");
    if (!ok_status(r)) return report_failure(r, "abort transaction");
    std::cout << "Aborting the transaction of " << a->positional[1] << " (its producer is fenced).\n";
    return 0;
  }
  std::cerr << "unknown transactions command \"" << command << "\"\n" << transactions_usage;
  return 2;
}

}  // namespace ringlog::cli

// ---- bench ------------------------------------------------------------------------------------

namespace ringlog::cli {
namespace {

const std::string bench_usage = std::string(R"(usage: ringlog bench [options]

Load generator over HTTP keep-alive: producers post batches of records to partitions (v2 binary
API), consumers long-poll the same partitions right behind them. Every record carries the time
it was scheduled to be sent, so end-to-end latency (scheduled send -> consumed) includes any
queueing at the client: with --rate the schedule is fixed and a slow server cannot hide its
delay (no coordinated omission). Prints records/s, MB/s and latency percentiles.

Options:
  --topic NAME             topic to use (default ringlog-bench; created if missing)
  --partitions N           partitions of the topic when created (default 6)
  --producers N            producer connections/threads (default 4)
  --consumers N            consumer connections/threads, 0 = none (default 2); partitions are
                           split among them, and a thread with one partition long-polls it
  --batch-records N        records per produce request (default 100)
  --record-bytes N         value size, bytes, >= 16 (default 1024)
  --duration-ms N          how long producers run (default 10000)
  --rate N                 total records/s to schedule; 0 = as fast as acks allow (default 0)
  --acks 0|1|all           (default all)
  --json                   print one JSON object instead of text
)") + std::string(bootstrap_server_help) + R"(  --request-timeout-ms MS  longest wait to connect, then for each answer of the setup
                           requests (default 10000); the load's own requests wait up to 120000
  --transport http|ws|kafka http (default): the REST API as above; ws: producers send one
                           produce message per record over /v1/ws to partition 0, and
                           --subscribers connections subscribe to partition 0 with credit;
                           prints produce-to-deliver latency over every subscriber's records
                           kafka: producers send Produce requests (one uncompressed v2 batch of
                           --batch-records records each) to --kafka-bootstrap, consumers read
                           with Fetch; the topic is still created over --bootstrap-server
  --kafka-bootstrap HOST:PORT  the kafka:// listener (--transport kafka; default 127.0.0.1:9092)
  --kafka-in-flight N      unanswered Produce requests per producer connection (--transport
                           kafka; Kafka's max.in.flight.requests.per.connection, default 5)
  --subscribers N          WebSocket subscribers of partition 0 (--transport ws; default 1)
  --ws-batch               subscribers ask for "batch": true (one `records` message per fetch)
  --ws-produce-batch       producers send the records that are due at the same moment as one
                           produce message with "records" (at most --batch-records); nothing
                           waits for a batch to fill, so latency is not traded for it
  --ws-linger-us N         with --ws-produce-batch: send a record N microseconds after it is
                           due, with every record that came due meanwhile (Kafka's linger.ms;
                           the latency figures include the wait; default 0)
  --help                   this text
)";


}  // namespace

bench_thread_result merge_bench_results(std::vector<bench_thread_result>& parts) {
  bench_thread_result all;
  for (auto& p : parts) {
    all.latencies_us.insert(all.latencies_us.end(), p.latencies_us.begin(), p.latencies_us.end());
    all.records += p.records;
    all.value_bytes += p.value_bytes;
    all.errors += p.errors;
    if (all.first_error.empty()) all.first_error = p.first_error;
  }
  return all;
}

double percentile(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]) / 1000.0;
}

std::string bench_value(int64_t scheduled_us, size_t bytes) {
  char head[32];
  std::snprintf(head, sizeof head, "%012lld", static_cast<long long>(scheduled_us % 1'000'000'000'000LL));
  std::string v(head, 12);
  v.resize(bytes, 'r');
  return v;
}

std::optional<int64_t> bench_scheduled_us(std::string_view value_base64) {
  if (value_base64.size() < 16) return std::nullopt;
  auto head = base64_decode(value_base64.substr(0, 16));
  if (!head || head->size() != 12) return std::nullopt;
  const auto* digits = reinterpret_cast<const char*>(head->data());
  int64_t scheduled_us = 0;
  if (std::from_chars(digits, digits + 12, scheduled_us).ec != std::errc()) return std::nullopt;
  return scheduled_us;
}

namespace {

void bench_produce(const bench_settings& s, int64_t index, bench_clock::time_point epoch,
                   bench_thread_result& out) {
  auto client = http_client::create(s.bootstrap);
  if (!client.ok()) {
    out.errors++;
    out.first_error = client.error();
    return;
  }
  (*client)->set_timeout_ms(bench_request_timeout_ms);
  const int64_t partition = index % s.partitions;
  const std::string path = "/topics/" + percent_encode_segment(s.topic) + "/partitions/" + std::to_string(partition) +
                           "?acks=" + s.acks;
  const double per_thread_rate = s.rate > 0 ? static_cast<double>(s.rate) / static_cast<double>(s.producers) : 0;
  const auto interval = per_thread_rate > 0 ? std::chrono::duration<double>(static_cast<double>(s.batch_records) / per_thread_rate)
                                            : std::chrono::duration<double>(0);
  const std::string tail_base64 = base64_encode(bench_value(0, static_cast<size_t>(s.record_bytes)).substr(12));
  const auto start = bench_clock::now();
  const auto stop = start + std::chrono::milliseconds(s.duration_ms);
  // Producers' schedules are spread over one interval: with one phase for all, every producer
  // would send at the same instants and the measured latency would be that of bursts.
  const double phase = static_cast<double>(index) / static_cast<double>(s.producers);
  for (int64_t k = 0;; ++k) {
    auto scheduled = per_thread_rate > 0
                         ? start + std::chrono::duration_cast<bench_clock::duration>(
                                       interval * (static_cast<double>(k) + phase))
                         : bench_clock::now();
    if (scheduled >= stop) break;
    if (per_thread_rate > 0) std::this_thread::sleep_until(scheduled);  // a schedule, not a wait for a condition
    const int64_t scheduled_us = std::chrono::duration_cast<std::chrono::microseconds>(scheduled - epoch).count();
    // The 12-byte time prefix encodes to exactly 16 base64 characters, so only it changes per
    // batch; the rest of the value is encoded once (keeps the load generator's CPU off the server's).
    const std::string head = base64_encode(bench_value(scheduled_us, 12));
    std::string body = "{\"records\":[";
    body.reserve(static_cast<size_t>(s.batch_records) * (tail_base64.size() + 32));
    for (int64_t r = 0; r < s.batch_records; ++r) {
      if (r > 0) body += ',';
      body += "{\"value\":\"";
      body += head;
      body += tail_base64;
      body += "\"}";
    }
    body += "]}";
    const auto sent = bench_clock::now();
    auto reply = (*client)->post(path, body, binary_type, "application/vnd.kafka.v2+json");
    const auto acked = bench_clock::now();
    if (!reply.ok() || reply->status != 200 || reply->body.find("\"error_code\":1") != std::string::npos ||
        reply->body.find("\"error_code\":2") != std::string::npos) {
      out.errors++;
      if (out.first_error.empty()) out.first_error = reply.ok() ? reply->body.substr(0, 300) : reply.error();
      continue;
    }
    out.records += static_cast<uint64_t>(s.batch_records);
    out.value_bytes += static_cast<uint64_t>(s.batch_records * s.record_bytes);
    if (out.latencies_us.size() < bench_samples_max) {
      // Measured from the scheduled time when there is a schedule (includes client-side delay).
      out.latencies_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                                     acked - (per_thread_rate > 0 ? scheduled : sent)).count());
    }
  }
}

/// Log end offsets of every partition, read before any producer starts, so consumers begin
/// exactly where this run's records begin.
std::optional<std::map<int64_t, int64_t>> bench_end_offsets(const bench_settings& s, http_client& client) {
  std::map<int64_t, int64_t> out;
  for (int64_t p = 0; p < s.partitions; ++p) {
    auto r = client.get("/topics/" + percent_encode_segment(s.topic) + "/partitions/" + std::to_string(p) + "/offsets",
                        "application/vnd.kafka.v2+json");
    if (!ok_status(r)) {
      report_failure(r, "offsets of partition " + std::to_string(p));
      return std::nullopt;
    }
    out[p] = json::parse(r->body)["end_offset"].get<int64_t>();
  }
  return out;
}

void bench_consume(const bench_settings& s, int64_t index, bench_clock::time_point epoch,
                   const std::map<int64_t, int64_t>& start_offsets, const std::atomic<bool>& producers_done,
                   bench_thread_result& out) {
  auto client = http_client::create(s.bootstrap);
  if (!client.ok()) {
    out.errors++;
    out.first_error = client.error();
    return;
  }
  (*client)->set_timeout_ms(bench_request_timeout_ms);
  std::map<int64_t, int64_t> next;  // partition -> next offset
  for (int64_t p = index; p < s.partitions; p += s.consumers) next[p] = start_offsets.at(p);
  simdjson::dom::parser parser;
  auto idle_since = bench_clock::now();
  // Read each partition without waiting while data flows; long-poll (briefly) only after a
  // whole round found nothing, so one quiet partition never delays the others.
  bool last_round_empty = false;
  while (true) {
    bool got_any = false;
    // A thread with one partition always long-polls: the broker answers as soon as records
    // arrive, which is the latency a consumer sees (use --consumers = --partitions for that).
    const char* wait = next.size() == 1 ? "&timeout=500" : last_round_empty ? "&timeout=50" : "&timeout=0";
    for (auto& [p, offset] : next) {
      auto r = (*client)->get("/topics/" + percent_encode_segment(s.topic) + "/partitions/" + std::to_string(p) +
                                  "/records?offset=" + std::to_string(offset) + wait + "&max_bytes=4194304",
                              "application/vnd.kafka.binary.v2+json");
      const auto now = bench_clock::now();
      if (!ok_status(r)) {
        out.errors++;
        if (out.first_error.empty()) out.first_error = r.ok() ? r->body.substr(0, 300) : r.error();
        continue;
      }
      // simdjson here: the load generator shares the cores with the server it measures.
      simdjson::dom::array records;
      if (parser.parse(r->body).get_array().get(records) != simdjson::SUCCESS) continue;
      const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(now - epoch).count();
      for (simdjson::dom::element rec : records) {
        int64_t record_offset = 0;
        std::string_view value;
        if (rec["offset"].get_int64().get(record_offset) != simdjson::SUCCESS ||
            rec["value"].get_string().get(value) != simdjson::SUCCESS) {
          continue;
        }
        offset = record_offset + 1;
        auto scheduled_us = bench_scheduled_us(value);
        if (!scheduled_us) continue;
        if (out.latencies_us.size() < bench_samples_max) out.latencies_us.push_back(now_us - *scheduled_us);
        out.records++;
        out.value_bytes += static_cast<uint64_t>(s.record_bytes);
        got_any = true;
      }
    }
    last_round_empty = !got_any;
    if (got_any) {
      idle_since = bench_clock::now();
    } else if (producers_done && bench_clock::now() - idle_since > std::chrono::seconds(2)) {
      return;  // producers stopped and nothing new for 2 s: everything was read
    }
  }
}

void print_bench(const bench_settings& s, double seconds, bench_thread_result& produced, bench_thread_result& consumed,
                 bool as_json) {
  const double mb = static_cast<double>(produced.value_bytes) / 1e6;
  const double p50 = percentile(produced.latencies_us, 50), p99 = percentile(produced.latencies_us, 99),
               p999 = percentile(produced.latencies_us, 99.9);
  const double e50 = percentile(consumed.latencies_us, 50), e99 = percentile(consumed.latencies_us, 99),
               e999 = percentile(consumed.latencies_us, 99.9);
  const double delivered_per_s = s.deliver_seconds > 0 ? static_cast<double>(consumed.records) / s.deliver_seconds : 0.0;
  if (as_json) {
    json j = {{"producers", s.producers}, {"consumers", s.consumers}, {"partitions", s.partitions},
              {"batch_records", s.batch_records}, {"record_bytes", s.record_bytes}, {"acks", s.acks},
              {"rate", s.rate}, {"seconds", seconds}, {"records_produced", produced.records},
              {"records_per_s", static_cast<double>(produced.records) / seconds}, {"mb_per_s", mb / seconds},
              {"produce_ms", {{"p50", p50}, {"p99", p99}, {"p99.9", p999}}},
              {"records_consumed", consumed.records},
              {"end_to_end_ms", consumed.latencies_us.empty()
                                    ? json(nullptr)
                                    : json{{"p50", e50}, {"p99", e99}, {"p99.9", e999}}},
              {"errors", produced.errors + consumed.errors}, {"transport", s.transport}};
    if (s.transport == "ws") {
      j["subscribers"] = s.subscribers;
      j["out_of_order"] = s.out_of_order;
      j["deliver_seconds"] = s.deliver_seconds;
      j["delivered_per_s"] = delivered_per_s;
      j["ws_batch"] = s.ws_batch;
      j["ws_produce_batch"] = s.ws_produce_batch;
      j["ws_linger_us"] = s.ws_linger_us;
      j.erase("consumers");
      if (!s.ws_produce_batch) j.erase("batch_records");
    }
    std::cout << j.dump() << "\n";
    return;
  }
  std::printf("produced %llu records in %.2f s: %.0f records/s, %.1f MB/s of values (%s%lld x %lld B, acks=%s)\n",
              static_cast<unsigned long long>(produced.records), seconds,
              static_cast<double>(produced.records) / seconds, mb / seconds,
              s.transport == "ws" && s.ws_produce_batch ? "up to " : "", static_cast<long long>(s.batch_records),
              static_cast<long long>(s.record_bytes), s.acks.c_str());
  std::printf("produce latency ms: p50 %.2f  p99 %.2f  p99.9 %.2f\n", p50, p99, p999);
  if (s.transport == "ws") {
    std::printf("delivered %llu records to %lld subscribers over WebSocket in %.2f s (%.0f records/s, %llu out of "
                "order); produce-to-deliver latency ms: p50 %.2f  p99 %.2f  p99.9 %.2f\n",
                static_cast<unsigned long long>(consumed.records), static_cast<long long>(s.subscribers), s.deliver_seconds,
                delivered_per_s,
                static_cast<unsigned long long>(s.out_of_order), e50, e99, e999);
  } else if (s.consumers > 0) {
    std::printf("consumed %llu records; end-to-end latency ms: p50 %.2f  p99 %.2f  p99.9 %.2f\n",
                static_cast<unsigned long long>(consumed.records), e50, e99, e999);
  }
  if (produced.errors + consumed.errors > 0) {
    std::printf("errors: %llu (first: %s)\n", static_cast<unsigned long long>(produced.errors + consumed.errors),
                (produced.first_error.empty() ? consumed.first_error : produced.first_error).c_str());
  }
}

/// The WebSocket variant: producers and subscribers on partition 0 (see bench.h).
int bench_ws(bench_settings& s, int64_t start_offset, bool as_json) {
  auto endpoints = parse_bootstrap_servers(s.bootstrap);
  if (!endpoints.ok()) {
    std::cerr << endpoints.error() << "\n";
    return 2;
  }
  auto outcome = run_ws_bench(s, endpoints->front(), start_offset);   // the first: its sessions stay there
  s.out_of_order = outcome.out_of_order;
  s.deliver_seconds = outcome.deliver_seconds;
  print_bench(s, outcome.seconds, outcome.produced, outcome.delivered, as_json);
  return outcome.produced.errors + outcome.delivered.errors + outcome.out_of_order > 0 ? 1 : 0;
}

}  // namespace

int bench_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1,
                      {"--topic", "--partitions", "--producers", "--consumers", "--batch-records", "--record-bytes",
                       "--duration-ms", "--rate", "--acks", "--bootstrap-server", "--transport", "--subscribers",
                       "--ws-linger-us", "--kafka-bootstrap", "--kafka-in-flight"},
                      {"--json", "--help", "--ws-batch", "--ws-produce-batch"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << bench_usage;
    return 0;
  }
  bench_settings s;
  std::map<int64_t, int64_t> start_offsets;
  s.topic = a->get("--topic").value_or(s.topic);
  s.partitions = int_option(*a, "--partitions", 1, 10000).value_or(s.partitions);
  s.producers = int_option(*a, "--producers", 1, 1024).value_or(s.producers);
  s.consumers = int_option(*a, "--consumers", 0, 1024).value_or(s.consumers);
  s.batch_records = int_option(*a, "--batch-records", 1, 100000).value_or(s.batch_records);
  s.record_bytes = int_option(*a, "--record-bytes", 16, 16 * 1024 * 1024).value_or(s.record_bytes);
  s.duration_ms = int_option(*a, "--duration-ms", 100, 3600000).value_or(s.duration_ms);
  s.rate = int_option(*a, "--rate", 0, 100000000).value_or(s.rate);
  s.acks = a->get("--acks").value_or(s.acks);
  s.bootstrap = a->get("--bootstrap-server").value_or(s.bootstrap);
  s.transport = a->get("--transport").value_or(s.transport);
  s.kafka_bootstrap = a->get("--kafka-bootstrap").value_or(s.kafka_bootstrap);
  s.kafka_in_flight = int_option(*a, "--kafka-in-flight", 1, 1000).value_or(s.kafka_in_flight);
  s.subscribers = int_option(*a, "--subscribers", 0, 1000).value_or(s.subscribers);
  s.ws_batch = a->has("--ws-batch");
  s.ws_produce_batch = a->has("--ws-produce-batch");
  s.ws_linger_us = int_option(*a, "--ws-linger-us", 0, 1'000'000).value_or(0);
  if (s.ws_linger_us > 0 && !s.ws_produce_batch) {
    std::cerr << "--ws-linger-us needs --ws-produce-batch (without it every record is its own message)\n";
    return 2;
  }
  if (s.transport != "http" && s.transport != "ws" && s.transport != "kafka") {
    std::cerr << "--transport must be http, ws or kafka\n";
    return 2;
  }
  if (s.transport == "ws" && !s.ws_produce_batch) s.batch_records = 1;   // one record per produce message
  if (s.transport == "ws" && s.ws_produce_batch) {
    // A `records` message must fit the server's ws_message_bytes_max (2 MiB): base64 values plus
    // about 40 bytes of JSON per record.
    const int64_t message_bytes = s.batch_records * ((s.record_bytes + 2) / 3 * 4 + 40);
    if (message_bytes > static_cast<int64_t>(gateway::ws_message_bytes_max)) {
      std::cerr << "--batch-records " << s.batch_records << " x --record-bytes " << s.record_bytes
                << " makes produce messages of about " << message_bytes
                << " bytes, over the server's WebSocket message limit (2 MiB, ws_message_bytes_max)\n";
      return 2;
    }
  }
  if (s.acks != "0" && s.acks != "1" && s.acks != "all") {
    std::cerr << "--acks must be 0, 1 or all\n";
    return 2;
  }
  {
    auto client = connect(*a);
    if (!client) return 1;
    auto cluster = cluster_id(*client);
    if (!cluster) return 1;
    json body = {{"topic_name", s.topic}, {"partitions_count", s.partitions}};
    auto r = client->post("/v3/clusters/" + percent_encode_segment(*cluster) + "/topics", body.dump(), "application/json");
    if (!r.ok() || (r->status != 201 && r->status != 200 && r->body.find("already exists") == std::string::npos)) {
      return report_failure(r, "create topic " + s.topic);
    }
    // An existing topic keeps its partition count: the load spreads over what it has.
    auto described = client->get("/topics/" + percent_encode_segment(s.topic), "application/vnd.kafka.v2+json");
    if (!ok_status(described)) return report_failure(described, "describe topic " + s.topic);
    const auto existing = static_cast<int64_t>(json::parse(described->body)["partitions"].size());
    if (existing > 0 && existing != s.partitions) {
      std::cerr << "topic " << s.topic << " exists with " << existing << " partitions: using them (not --partitions "
                << s.partitions << ")\n";
      s.partitions = existing;
    }
    auto ends = bench_end_offsets(s, *client);
    if (!ends) return 1;
    start_offsets = std::move(*ends);
  }
  if (s.transport == "ws") return bench_ws(s, start_offsets.at(0), a->has("--json"));
  const auto epoch = bench_clock::now();
  std::vector<bench_thread_result> producer_results(static_cast<size_t>(s.producers));
  std::vector<bench_thread_result> consumer_results(static_cast<size_t>(s.consumers));
  std::atomic<bool> producers_done{false};
  std::vector<std::thread> consumers;
  for (int64_t i = 0; i < s.consumers; ++i) {
    consumers.emplace_back(s.transport == "kafka" ? bench_kafka_consume : bench_consume, std::cref(s), i, epoch,
                           std::cref(start_offsets), std::cref(producers_done),
                           std::ref(consumer_results[static_cast<size_t>(i)]));
  }
  const auto start = bench_clock::now();
  std::vector<std::thread> producers;
  for (int64_t i = 0; i < s.producers; ++i) {
    producers.emplace_back(s.transport == "kafka" ? bench_kafka_produce : bench_produce, std::cref(s), i, epoch,
                           std::ref(producer_results[static_cast<size_t>(i)]));
  }
  for (auto& t : producers) t.join();
  const double seconds = std::chrono::duration<double>(bench_clock::now() - start).count();
  producers_done = true;
  for (auto& t : consumers) t.join();
  auto produced = merge_bench_results(producer_results);
  auto consumed = merge_bench_results(consumer_results);
  print_bench(s, seconds, produced, consumed, a->has("--json"));
  return produced.errors + consumed.errors > 0 ? 1 : 0;
}

// ---- users -------------------------------------------------------------------------------------

const std::string users_usage = std::string(R"(usage: ringlog users COMMAND [options]

SCRAM users of the Kafka listener's SASL (docs/security.md). Credentials are metadata records:
a user made through any node logs in on every node. Passwords are never stored or shown.

Commands:
  list                                   users with their mechanisms and iteration counts
  create NAME --password PASSWORD [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N]
                                         sets NAME's credential of the mechanism (4096 iterations;
                                         4096..16384); creates the user (SCRAM-SHA-512 without
                                         --mechanism) or changes its password (of every credential
                                         it has without --mechanism)
  delete NAME [--mechanism M]            removes NAME's credentials (or only M's)

Options:
)") + connection_options_help;

/// The mechanisms of the user at `path` (GET .../users/NAME): empty when it has none (404), nullopt
/// when the broker could not be asked (the caller then cannot tell a creation from a replacement).
std::optional<std::vector<std::string>> user_mechanisms(http_client& client, const std::string& path) {
  auto existing = client.get(path);
  if (existing.ok() && existing->status == 404) return std::vector<std::string>{};
  if (!ok_status(existing)) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& c : json::parse(existing->body, nullptr, false).value("credentials", json::array())) {
    if (c.contains("mechanism") && c["mechanism"].is_string()) out.push_back(c["mechanism"].get<std::string>());
  }
  return out;
}

/// The line `users create` prints for one credential it set: created or replaced, as the broker's
/// answer before the write said (Kafka's kafka-configs.sh only says "Completed updating config for
/// user"; a user who meant to make a new account learns here that it existed).
std::string credential_set_line(const std::string& name, const std::string& mechanism,
                                const std::optional<std::vector<std::string>>& had) {
  if (!had) return "User " + name + " has a " + mechanism + " credential (whether it existed before is unknown).";
  if (std::find(had->begin(), had->end(), mechanism) == had->end()) {
    return "Created the " + mechanism + " credential of user " + name + (had->empty() ? " (a new user)." : ".");
  }
  return "Replaced the " + mechanism + " credential of user " + name + ": its old password no longer logs in.";
}

/// `users create`: sets the credential of --mechanism, or, without it, of every mechanism the user
/// has (SCRAM-SHA-512 for a new user): a password change through the CLI left the other
/// mechanism's credential with the old password, which still logged in (session 32's new user).
/// Each line says whether the credential was created or replaced (session 34's new user).
int users_create(http_client& client, const std::string& path, const std::string& name, const args& a) {
  const auto had = user_mechanisms(client, path);
  std::vector<std::string> others = had.value_or(std::vector<std::string>{});   // what --mechanism leaves
  std::vector<std::string> mechanisms;
  if (auto m = a.get("--mechanism")) {
    mechanisms = {*m};
    std::erase(others, *m);
  } else {
    mechanisms = others.empty() ? std::vector<std::string>{"SCRAM-SHA-512"} : others;
    others.clear();
  }
  for (const auto& mechanism : mechanisms) {
    json body = {{"password", *a.get("--password")}, {"mechanism", mechanism}};
    if (auto n = int_option(a, "--iterations", 1, INT32_MAX)) body["iterations"] = *n;
    auto r = client.post(path, body.dump(), "application/json");
    if (!ok_status(r)) return report_failure(r, "create user");
    std::cout << credential_set_line(name, mechanism, had) << "\n";
  }
  for (const auto& other : others) {
    std::cout << "Its " << other << " credential keeps its old password (without --mechanism every credential is set).\n";
  }
  return 0;
}

int users_main(int argc, char** argv) {
  auto a = parse_args(argc, argv, 1, {"--bootstrap-server", "--request-timeout-ms", "--password", "--mechanism", "--iterations"},
                      {"--help"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << users_usage;
    return 0;
  }
  if (a->positional.empty()) {
    std::cerr << users_usage;
    return 2;
  }
  const std::string command = a->positional[0];
  if (command == "describe") {   // kafka-configs.sh --describe --entity-type users (a new user typed it)
    std::cerr << "users describe is `ringlog users list` here (each user with its mechanisms and iterations)\n";
    return 2;
  }
  if (command != "list" && command != "create" && command != "delete") {
    std::cerr << "unknown users command \"" << command << "\"\n" << users_usage;
    return 2;
  }
  if (command != "list" && a->positional.size() != 2) {
    std::cerr << "users " << command << " needs one user name\n" << users_usage;
    return 2;
  }
  if (command == "create" && !a->get("--password")) {
    std::cerr << "users create needs --password\n" << users_usage;
    return 2;
  }
  auto client = connect(*a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string users_path = "/v3/clusters/" + percent_encode_segment(*cluster) + "/users";
  if (command == "list") {
    auto r = client->get(users_path);
    if (!ok_status(r)) return report_failure(r, "list users");
    const json users = json::parse(r->body);
    std::cout << "USER\tMECHANISM\tITERATIONS\n";
    for (const auto& u : users["data"]) {
      for (const auto& c : u["credentials"]) {
        std::cout << cell(u["user_name"]) << "\t" << cell(c["mechanism"]) << "\t" << cell(c["iterations"]) << "\n";
      }
    }
    return 0;
  }
  const std::string name = a->positional[1];
  const std::string path = users_path + "/" + percent_encode_segment(name);
  if (command == "create") return users_create(*client, path, name, *a);
  auto mechanism = a->get("--mechanism");
  auto r = client->del(mechanism ? path + "?mechanism=" + *mechanism : path);
  if (!ok_status(r)) return report_failure(r, "delete user");
  std::cout << "Deleted " << (mechanism ? *mechanism + " credential of user " : std::string("user ")) << name << ".\n";
  return 0;
}

}  // namespace ringlog::cli

// ---- acls --------------------------------------------------------------------------------------

namespace ringlog::cli {

namespace {

const std::string acls_usage = std::string(R"(usage: ringlog acls list|create|delete [options]

ACLs of the authorizer (issue 30; authorizer.class.name must be set on the brokers), over the v3
/acls routes, with kafka-acls.sh's words. An ACL allows or denies a principal (User:alice, or
User:* for everyone), connecting from a host (an IP address, or * for any), an operation on a
resource (a topic, a group, a transactional id or the cluster), named literally or by prefix.
DENY wins over ALLOW; READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
DESCRIBE_CONFIGS; ALL implies every operation. super.users may do everything.

Commands:
  list                 the ACLs the options select (every ACL without options)
  create               one ACL per principal x host x operation x resource given
  delete               the ACLs the options select (a resource is required), printed

Options:
  --allow-principal P      ALLOW for principal P (TYPE:NAME, e.g. User:alice, User:*); repeatable
  --deny-principal P       DENY for principal P; repeatable
  --allow-host H           the host the ALLOW principals connect from (default *); repeatable
  --deny-host H            the host the DENY principals connect from (default *); repeatable
  --principal P            list: only the ACLs of principal P
  --operation OP           Read, Write, Create, Delete, Alter, Describe, ClusterAction,
                           DescribeConfigs, AlterConfigs, IdempotentWrite, All (Kafka's names, any
                           case, or READ, DESCRIBE_CONFIGS, ...); repeatable (create needs one)
  --topic NAME             a topic resource (* for every topic); repeatable
  --group NAME             a consumer group resource; repeatable
  --transactional-id ID    a transactional id resource; repeatable
  --cluster                the cluster resource (kafka-cluster)
  --producer               create/delete: instead of --operation, what a producer needs (as
                           kafka-acls.sh): WRITE, DESCRIBE and CREATE on each --topic, WRITE and
                           DESCRIBE on each --transactional-id, IDEMPOTENT_WRITE on the cluster
                           with --idempotent
  --consumer               create/delete: instead of --operation, what a consumer needs: READ and
                           DESCRIBE on each --topic, READ on each --group (one is required)
  --idempotent             with --producer: IDEMPOTENT_WRITE on the cluster too
  --resource-pattern-type T  literal (default for create, delete), prefixed (the name is a prefix),
                           match (list, delete: every ACL that applies to the name), any (list
                           default: literal and prefixed); the cluster (--cluster, --idempotent)
                           is always literal under literal or prefixed, as kafka-acls.sh
  --force                  accepted for kafka-acls.sh's sake and does nothing: delete never asks
                           for confirmation (it prints what it deleted)
)") + connection_options_help + R"(
Authentication as every command: RINGLOG_USER and RINGLOG_PASSWORD (Basic) or RINGLOG_TOKEN
(Bearer). Example: ringlog acls create --allow-principal User:alice --operation Read
--operation Describe --topic orders- --resource-pattern-type prefixed
)";

/// Kafka's operation name from kafka-acls.sh's spelling: "DescribeConfigs", "describe_configs"
/// and "DESCRIBE_CONFIGS" are all DESCRIBE_CONFIGS.
std::string kafka_operation_name(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (i > 0 && std::isupper(static_cast<unsigned char>(ch)) && std::islower(static_cast<unsigned char>(text[i - 1]))) {
      out += '_';
    }
    out += ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  return out;
}

struct acl_resource {
  std::string type;   // TOPIC, GROUP, TRANSACTIONAL_ID, CLUSTER
  std::string name;
};

/// The pattern type of `pattern` for resource `r`: the cluster has one name, kafka-cluster, so
/// kafka-acls.sh (AclCommand's ClusterResourceFilter) names it LITERAL whatever
/// --resource-pattern-type says; a `--producer --idempotent --resource-pattern-type prefixed`
/// grant is PREFIXED for its topics and LITERAL for the cluster, and `delete --cluster` finds it.
/// ANY and MATCH filters already take the literal ACL and are kept.
std::string acl_pattern_for(const acl_resource& r, const std::string& pattern) {
  return r.type == "CLUSTER" && pattern == "PREFIXED" ? std::string("LITERAL") : pattern;
}

std::vector<acl_resource> acl_resources(const args& a) {
  std::vector<acl_resource> out;
  for (const auto& t : a.all("--topic")) out.push_back({"TOPIC", t});
  for (const auto& g : a.all("--group")) out.push_back({"GROUP", g});
  for (const auto& t : a.all("--transactional-id")) out.push_back({"TRANSACTIONAL_ID", t});
  if (a.has("--cluster")) out.push_back({"CLUSTER", "kafka-cluster"});
  return out;
}

/// The (resource, operation) pairs create and delete act on: every resource x --operation, or
/// kafka-acls.sh's --producer / --consumer sets (AclCommand.getProducerResourceFilterToAcls,
/// getConsumerResourceFilterToAcls). On a bad combination: empty, with `why` naming it.
std::vector<std::pair<acl_resource, std::string>> acl_grants(const args& a, std::string& why) {
  std::vector<std::pair<acl_resource, std::string>> out;
  const auto resources = acl_resources(a);
  const bool producer = a.has("--producer");
  const bool consumer = a.has("--consumer");
  if (!producer && !consumer) {
    for (const auto& r : resources) {
      for (const auto& op : a.all("--operation")) out.push_back({r, kafka_operation_name(op)});
    }
    return out;
  }
  if (!a.all("--operation").empty()) why = "--producer and --consumer take no --operation";
  if (a.all("--topic").empty()) why = "--producer and --consumer need a --topic";
  if (consumer && a.all("--group").empty()) why = "--consumer needs a --group";
  if (!why.empty()) return out;
  for (const auto& r : resources) {
    if (r.type == "TOPIC") {
      if (producer) {
        for (const char* op : {"WRITE", "DESCRIBE", "CREATE"}) out.push_back({r, op});
      }
      if (consumer) {
        for (const char* op : {"READ", "DESCRIBE"}) out.push_back({r, op});
      }
    } else if (r.type == "GROUP" && consumer) {
      out.push_back({r, "READ"});
    } else if (r.type == "TRANSACTIONAL_ID" && producer) {
      for (const char* op : {"WRITE", "DESCRIBE"}) out.push_back({r, op});
    }
  }
  if (producer && a.has("--idempotent")) out.push_back({acl_resource{"CLUSTER", "kafka-cluster"}, "IDEMPOTENT_WRITE"});
  return out;
}

/// (principal, host, permission) of every --allow-principal x --allow-host and --deny-principal
/// x --deny-host.
std::vector<std::array<std::string, 3>> acl_entries(const args& a) {
  std::vector<std::array<std::string, 3>> out;
  for (const auto& [flag, host_flag, permission] : {std::array<std::string, 3>{"--allow-principal", "--allow-host", "ALLOW"},
                                                    std::array<std::string, 3>{"--deny-principal", "--deny-host", "DENY"}}) {
    auto hosts = a.all(host_flag);
    if (hosts.empty()) hosts.push_back("*");
    for (const auto& principal : a.all(flag)) {
      for (const auto& host : hosts) out.push_back({principal, host, permission});
    }
  }
  return out;
}

std::string query_text(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [k, v] : params) out += (out.empty() ? "?" : "&") + k + "=" + percent_encode_segment(v);
  return out;
}

void print_acls(const json& list) {
  std::cout << "PRINCIPAL\tHOST\tOPERATION\tPERMISSION\tRESOURCE_TYPE\tRESOURCE_NAME\tPATTERN_TYPE\n";
  for (const auto& e : list["data"]) {
    std::cout << cell(e["principal"]) << "\t" << cell(e["host"]) << "\t" << cell(e["operation"]) << "\t"
              << cell(e["permission"]) << "\t" << cell(e["resource_type"]) << "\t" << cell(e["resource_name"]) << "\t"
              << cell(e["pattern_type"]) << "\n";
  }
}

int acls_create(http_client& client, const std::string& path, const args& a, const std::string& pattern) {
  const auto entries = acl_entries(a);
  std::string why;
  const auto grants = acl_grants(a, why);
  if (!why.empty()) {
    std::cerr << "acls create: " << why << "\n";
    return 2;
  }
  if (grants.empty() || entries.empty()) {
    std::cerr << "acls create needs a resource (--topic, --group, --transactional-id or --cluster), a principal "
                 "(--allow-principal or --deny-principal) and an --operation (or --producer / --consumer)\n";
    return 2;
  }
  json data = json::array();
  for (const auto& [r, op] : grants) {
    for (const auto& [principal, host, permission] : entries) {
      data.push_back({{"resource_type", r.type}, {"resource_name", r.name}, {"pattern_type", acl_pattern_for(r, pattern)},
                      {"principal", principal}, {"host", host}, {"operation", op}, {"permission", permission}});
    }
  }
  auto r = client.post(path + ":batch", json{{"data", data}}.dump(), "application/json");
  if (!ok_status(r)) return report_failure(r, "create ACLs");
  std::cout << "Created " << data.size() << " ACL" << (data.size() == 1 ? "" : "s") << ".\n";
  return 0;
}

/// DELETE of one filter per resource x operation (ANY without --operation) x principal (every
/// principal without one); prints what went.
int acls_delete(http_client& client, const std::string& path, const args& a, const std::string& pattern) {
  const auto resources = acl_resources(a);
  if (resources.empty()) {
    std::cerr << "acls delete needs a resource (--topic, --group, --transactional-id or --cluster)\n";
    return 2;
  }
  std::string why;
  auto grants = acl_grants(a, why);
  if (!why.empty()) {
    std::cerr << "acls delete: " << why << "\n";
    return 2;
  }
  if (grants.empty()) {   // no --operation: every operation of each resource
    for (const auto& r : resources) grants.push_back({r, "ANY"});
  }
  std::vector<std::array<std::string, 3>> entries = acl_entries(a);
  if (entries.empty()) entries.push_back({"", "", "ANY"});
  json deleted = {{"data", json::array()}};
  for (const auto& [r, op] : grants) {
    for (const auto& [principal, host, permission] : entries) {
      std::vector<std::pair<std::string, std::string>> q = {{"resource_type", r.type}, {"resource_name", r.name},
                                                            {"pattern_type", acl_pattern_for(r, pattern)},
                                                            {"operation", op},
                                                            {"permission", permission}};
      if (!principal.empty()) q.push_back({"principal", principal});
      if (!host.empty()) q.push_back({"host", host});
      auto reply = client.del(path + query_text(q));
      if (!ok_status(reply)) return report_failure(reply, "delete ACLs");
      json answer = json::parse(reply->body);
      for (auto& e : answer["data"]) deleted["data"].push_back(std::move(e));
    }
  }
  std::cout << "Deleted " << deleted["data"].size() << " ACL" << (deleted["data"].size() == 1 ? "" : "s") << ":\n";
  print_acls(deleted);
  return 0;
}

int acls_list(http_client& client, const std::string& path, const args& a, const std::string& pattern) {
  const auto resources = acl_resources(a);
  if (resources.size() > 1) {
    std::cerr << "acls list takes at most one resource\n";
    return 2;
  }
  std::vector<std::pair<std::string, std::string>> q = {
      {"pattern_type", resources.empty() ? pattern : acl_pattern_for(resources[0], pattern)}};
  if (!resources.empty()) {
    q.push_back({"resource_type", resources[0].type});
    q.push_back({"resource_name", resources[0].name});
  }
  if (auto p = a.get("--principal")) q.push_back({"principal", *p});
  const auto operations = a.all("--operation");
  if (operations.size() == 1) q.push_back({"operation", kafka_operation_name(operations[0])});
  auto r = client.get(path + query_text(q));
  if (!ok_status(r)) return report_failure(r, "list ACLs");
  print_acls(json::parse(r->body));
  return 0;
}

}  // namespace

int acls_main(int argc, char** argv) {
  // kafka-acls.sh's actions are flags; here they are commands (a new user typed --add).
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const char* command = arg == "--add" ? "create" : arg == "--list" ? "list" : arg == "--remove" ? "delete" : nullptr;
    if (command != nullptr) {
      std::cerr << "kafka-acls.sh's " << arg << " is `ringlog acls " << command
                << "` here (the other options are kafka-acls.sh's)\n";
      return 2;
    }
  }
  auto a = parse_args(argc, argv, 1,
                      {"--bootstrap-server", "--allow-principal", "--deny-principal", "--allow-host", "--deny-host",
                       "--principal", "--operation", "--topic", "--group", "--transactional-id", "--resource-pattern-type"},
                      {"--help", "--cluster", "--producer", "--consumer", "--idempotent", "--force"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << acls_usage;
    return 0;
  }
  const std::string command = a->positional.empty() ? "" : a->positional[0];
  if (a->positional.size() != 1 || (command != "list" && command != "create" && command != "delete")) {
    std::cerr << (command.empty() ? std::string() : "unknown acls command \"" + command + "\"\n") << acls_usage;
    return 2;
  }
  std::string pattern = kafka_operation_name(a->get("--resource-pattern-type").value_or(command == "list" ? "any" : "literal"));
  if (pattern != "LITERAL" && pattern != "PREFIXED" && pattern != "MATCH" && pattern != "ANY") {
    std::cerr << "--resource-pattern-type must be literal, prefixed, match or any, got \""
              << *a->get("--resource-pattern-type") << "\"\n";
    return 2;
  }
  if (command == "create" && pattern != "LITERAL" && pattern != "PREFIXED") {
    std::cerr << "acls create takes --resource-pattern-type literal or prefixed\n";
    return 2;
  }
  auto client = connect(*a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string path = "/v3/clusters/" + percent_encode_segment(*cluster) + "/acls";
  if (command == "create") return acls_create(*client, path, *a, pattern);
  if (command == "delete") return acls_delete(*client, path, *a, pattern);
  return acls_list(*client, path, *a, pattern);
}

}  // namespace ringlog::cli

// ---- quotas ------------------------------------------------------------------------------------

namespace ringlog::cli {

namespace {

const std::string quotas_usage = std::string(R"(usage: ringlog quotas list|set|remove [options]

Client quotas (issue 31), over the v3 /client-quotas routes, with kafka-configs.sh's words. A
quota bounds the clients of an entity: a user (the authenticated principal's name; ANONYMOUS
without authentication), a client id (Kafka's client.id; over HTTP the X-Client-Id header, else
the client's IP address), both together, or an IP address (connection_creation_rate only). A name
or the default (--entity-default: every user / client id / IP without its own). The most specific
entity that sets a key wins (Kafka's 8 levels, user and client-id first). Every broker enforces
them on its own traffic: over a byte rate a Kafka client is throttled (throttle_time_ms), an
HTTP client gets 429 with Retry-After and error_code 42901.

Commands:
  list (or describe)   the stored quotas the entity options select (every quota without any)
  set                  --add-config on one entity (keys not named keep their values)
  remove               --delete-config on one entity

Options:
  --entity-type T          users, clients or ips; give one or two (users with clients), each
                           followed by its --entity-name or --entity-default
  --entity-name NAME       the name of the --entity-type before it
  --entity-default         the default entity of the --entity-type before it (<default>)
  --add-config K=V[,K=V]   set: producer_byte_rate, consumer_byte_rate (bytes/s),
                           request_percentage (% of one request thread), controller_mutation_rate
                           (partitions/s), connection_creation_rate (ips: connections/s)
  --delete-config K[,K]    remove: the keys to remove
  --strict                 list: only entities of exactly the types given
)") + connection_options_help + R"(
Authentication as every command: RINGLOG_USER and RINGLOG_PASSWORD (Basic) or RINGLOG_TOKEN
(Bearer). Example: ringlog quotas set --entity-type users --entity-name alice --entity-type
clients --entity-default --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
)";

/// kafka-configs.sh's entity types -> the route's entity types.
std::optional<std::string> quota_entity_type(const std::string& text) {
  if (text == "users" || text == "user") return "user";
  if (text == "clients" || text == "client" || text == "client-id") return "client-id";
  if (text == "ips" || text == "ip") return "ip";
  return std::nullopt;
}

/// The entity the command line names, in order: each --entity-type takes the --entity-name or
/// --entity-default after it. nullopt after printing what is wrong.
std::optional<json> quota_entity(int argc, char** argv) {
  json entity = json::object();
  std::string last_type;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg.starts_with("--entity-")) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if ((arg == "--entity-type" || arg == "--entity-name") && i + 1 < argc) {
      value = argv[++i];
    }
    if (arg == "--entity-type") {
      auto type = quota_entity_type(value);
      if (!type) {
        std::cerr << "--entity-type must be users, clients or ips, got \"" << value << "\"\n";
        return std::nullopt;
      }
      if (entity.contains(*type)) {
        std::cerr << "--entity-type " << value << " is given twice\n";
        return std::nullopt;
      }
      last_type = *type;
      entity[last_type] = nullptr;
    } else if (arg == "--entity-name" || arg == "--entity-default") {
      if (last_type.empty() || !entity[last_type].is_null()) {
        std::cerr << arg << " must follow its --entity-type\n";
        return std::nullopt;
      }
      entity[last_type] = arg == "--entity-default" ? std::string("<default>") : value;
    }
  }
  return entity;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

void print_quotas(const json& list) {
  std::cout << "ENTITY\tQUOTA\tVALUE\n";
  for (const auto& q : list["data"]) {
    std::string entity;   // user first, as kafka-configs.sh prints an entity
    for (const char* type : {"user", "client-id", "ip"}) {
      if (q["entity"].contains(type)) entity += (entity.empty() ? "" : ",") + std::string(type) + "=" + cell(q["entity"][type]);
    }
    for (const auto& [key, value] : q["quotas"].items()) std::cout << entity << "\t" << key << "\t" << cell(value) << "\n";
  }
}

int quotas_list(http_client& client, const std::string& path, const json& entity, bool strict) {
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [type, name] : entity.items()) q.push_back({type, name.is_null() ? "" : name.get<std::string>()});
  if (strict) q.push_back({"strict", "true"});
  auto r = client.get(path + query_text(q));
  if (!ok_status(r)) return report_failure(r, "list quotas");
  print_quotas(json::parse(r->body));
  return 0;
}

/// The quotas object of set (--add-config k=v,...) or remove (--delete-config k,...; null values).
std::optional<json> quota_changes(const args& a, bool set) {
  json quotas = json::object();
  for (const auto& text : a.all(set ? "--add-config" : "--delete-config")) {
    for (const auto& item : split_commas(text)) {
      if (!set) {
        quotas[item] = nullptr;
        continue;
      }
      const size_t eq = item.find('=');
      char* end = nullptr;
      const double v = eq == std::string::npos ? 0 : std::strtod(item.c_str() + eq + 1, &end);
      // A non-finite number (inf, nan, 1e400) would go out as JSON null, which removes the quota
      // (the breaker of session 31: "Set 1 quota" while the old one was deleted).
      if (eq == std::string::npos || eq + 1 == item.size() || end == nullptr || *end != '\0' || !std::isfinite(v)) {
        std::cerr << "--add-config takes KEY=NUMBER[,KEY=NUMBER] with a finite number, got \"" << item << "\"\n";
        return std::nullopt;
      }
      if (std::floor(v) == v && std::fabs(v) < 9.0e15) quotas[item.substr(0, eq)] = static_cast<int64_t>(v);
      else quotas[item.substr(0, eq)] = v;
    }
  }
  if (quotas.empty()) {
    std::cerr << "quotas " << (set ? "set needs --add-config" : "remove needs --delete-config") << "\n";
    return std::nullopt;
  }
  return quotas;
}

int quotas_alter(http_client& client, const std::string& path, const json& entity, const args& a, bool set) {
  for (const auto& [type, name] : entity.items()) {
    if (name.is_null()) {
      std::cerr << "--entity-type " << type << " needs --entity-name or --entity-default\n";
      return 2;
    }
  }
  if (entity.empty()) {
    std::cerr << "quotas " << (set ? "set" : "remove") << " needs an entity (--entity-type with --entity-name or "
              << "--entity-default)\n";
    return 2;
  }
  auto quotas = quota_changes(a, set);
  if (!quotas) return 2;
  // What the entity held before: a remove says which of the keys it named were set at all.
  size_t held = quotas->size();
  if (!set) {
    std::vector<std::pair<std::string, std::string>> q;
    for (const auto& [type, name] : entity.items()) q.push_back({type, name.get<std::string>()});
    q.push_back({"strict", "true"});
    auto before = client.get(path + query_text(q));
    if (!ok_status(before)) return report_failure(before, "list quotas");
    held = 0;
    // Named: a range-for over a member of a temporary reads freed memory in C++20 (a new user's
    // "Removed 0 quotas" of session 23).
    const json listed = json::parse(before->body);
    for (const auto& e : listed["data"]) {
      for (const auto& [key, value] : quotas->items()) held += e["quotas"].contains(key) ? 1 : 0;
    }
  }
  auto r = client.request("PUT", path, json{{"entity", entity}, {"quotas", *quotas}}.dump(), "application/json");
  if (!ok_status(r)) return report_failure(r, set ? "set quotas" : "remove quotas");
  std::cout << (set ? "Set" : "Removed") << " " << held << " quota" << (held == 1 ? "" : "s");
  if (held < quotas->size()) std::cout << " (" << quotas->size() - held << " of the keys named were not set)";
  std::cout << "; the entity now holds:\n";
  print_quotas(json{{"data", json::array({json::parse(r->body)})}});
  return 0;
}

}  // namespace

int quotas_main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--alter" || arg == "--describe") {
      std::cerr << "kafka-configs.sh's " << arg << " is "
                << (arg == "--alter" ? "`ringlog quotas set --add-config K=V` or `ringlog quotas remove --delete-config K`"
                                     : "`ringlog quotas list`")
                << " here (the other options are kafka-configs.sh's)\n";
      return 2;
    }
  }
  auto a = parse_args(argc, argv, 1,
                      {"--bootstrap-server", "--entity-type", "--entity-name", "--add-config", "--delete-config"},
                      {"--help", "--entity-default", "--strict"});
  if (!a) return 2;
  if (a->has("--help")) {
    std::cout << quotas_usage;
    return 0;
  }
  // "describe" is kafka-configs.sh's word for list (a new user typed it).
  const std::string command = a->positional.empty() ? "" : a->positional[0] == "describe" ? "list" : a->positional[0];
  if (a->positional.size() != 1 || (command != "list" && command != "set" && command != "remove")) {
    std::cerr << (command.empty() ? std::string() : "unknown quotas command \"" + command + "\"\n") << quotas_usage;
    return 2;
  }
  auto entity = quota_entity(argc, argv);
  if (!entity) return 2;
  auto client = connect(*a);
  if (!client) return 2;
  auto cluster = cluster_id(*client);
  if (!cluster) return 1;
  const std::string path = "/v3/clusters/" + percent_encode_segment(*cluster) + "/client-quotas";
  if (command == "list") return quotas_list(*client, path, *entity, a->has("--strict"));
  return quotas_alter(*client, path, *entity, *a, command == "set");
}

}  // namespace ringlog::cli
