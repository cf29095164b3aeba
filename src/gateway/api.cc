#include "api.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>

#include "base64.h"
#include "console_files.h"
#include "errors.h"
#include "http_util.h"
#include "json_fields.h"
#include "record_json.h"
#include "stream_limits.h"
#include "ringlog/group/limits.h"

namespace ringlog::gateway {

using json = nlohmann::json;
namespace ec = error_codes;

namespace {

constexpr const char* v2_type = "application/vnd.kafka.v2+json";
constexpr const char* v2_binary_type = "application/vnd.kafka.binary.v2+json";
constexpr const char* v2_json_type = "application/vnd.kafka.json.v2+json";
constexpr int64_t fetch_max_bytes_default = 1024 * 1024;

const std::vector<std::string> v2_offers = {v2_type, "application/vnd.kafka+json", "application/json"};
const std::vector<std::string> v3_offers = {"application/json"};
const std::vector<std::string> records_offers = {v2_binary_type, v2_json_type, v2_type, "application/json"};
constexpr const char* ndjson_type = "application/x-ndjson";
constexpr const char* sse_type = "text/event-stream";
const std::vector<std::string> stream_offers = {ndjson_type, sse_type};
const std::vector<std::string> metrics_offers = {"text/plain"};   // Prometheus text format 0.0.4

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

size_t record_bytes(const model::record& r) {
  size_t n = (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0);
  for (const auto& h : r.headers) n += h.key.size() + (h.value ? h.value->size() : 0);
  return n;
}

size_t record_bytes(const broker::produce_record& r) {
  size_t n = (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0);
  for (const auto& h : r.headers) n += h.key.size() + (h.value ? h.value->size() : 0);
  return n;
}

}  // namespace

// ---- one request ------------------------------------------------------------------------------

/// A request being answered: its parsed parts, the sink, and the metrics/CORS bookkeeping.
struct api::call : std::enable_shared_from_this<api::call> {
  api* self = nullptr;
  http_request request;
  std::shared_ptr<response_sink> sink;
  std::string route = "unmatched";   // metrics label: "METHOD /template"
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> query;
  std::string base_url;              // "http://host:port" for v3 metadata.self links
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  unsigned stream_status = 0;

  broker::broker& broker() { return self->broker_; }

  /// CORS (Fetch standard): an allowed Origin is echoed (with Vary: Origin); one not in
  /// http.cors.allowed.origins gets no Access-Control-Allow-Origin, so the browser hides the answer.
  /// Without an Origin (not a browser's cross-origin call) "*" when any origin is allowed.
  void add_cors(http_response& r) const {
    const std::vector<std::string>& allowed = self->options_.cors_allowed_origins;
    if (request.origin.empty()) {
      if (origin_allowed(allowed, "")) r.headers.emplace_back("Access-Control-Allow-Origin", "*");
    } else if (origin_allowed(allowed, request.origin)) {
      r.headers.emplace_back("Access-Control-Allow-Origin", request.origin);
    }
    if (!request.origin.empty()) r.headers.emplace_back("Vary", "Origin");
    r.headers.emplace_back("Access-Control-Expose-Headers", "Content-Type");
  }

  void observe(unsigned status) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    self->metrics_.observe_request(route, status, seconds);
  }

  void respond(http_response r) {
    add_cors(r);
    observe(r.status);
    sink->respond(std::move(r));
  }
  void respond_json(unsigned status, const json& body, const std::string& content_type = "application/json") {
    http_response r;
    r.status = status;
    r.content_type = content_type;
    r.body = dump(body);
    respond(std::move(r));
  }
  /// 204 No Content (deletes, subscriptions, commits, config changes).
  void respond_no_content() {
    http_response r;
    r.status = 204;
    r.content_type.clear();
    respond(std::move(r));
  }
  void fail(const api_error& e) { respond(error_response(e)); }
  void fail(unsigned status, int code, std::string message) { fail(api_error{status, code, std::move(message)}); }

  void begin_stream(http_response head) {
    add_cors(head);
    stream_status = head.status;
    sink->begin_stream(std::move(head));
  }
  void end_stream() {
    observe(stream_status);
    sink->end_stream();
  }

  /// Runs `fn` on the connection thread with this call kept alive (for broker callbacks).
  template <typename F>
  void later(F fn) {
    sink->post([c = shared_from_this(), fn = std::move(fn)]() mutable { fn(*c); });
  }

  /// Checks Accept against `offers`; answers 406 and returns nullopt when nothing fits.
  std::optional<std::string> accept(const std::vector<std::string>& offers) {
    auto chosen = negotiate(request.accept, offers);
    if (!chosen) {
      std::string list;
      for (const auto& o : offers) list += (list.empty() ? "" : ", ") + o;
      fail(406, ec::not_acceptable, "cannot produce a response for Accept \"" + request.accept + "\"; this route serves " + list);
    }
    return chosen;
  }

  /// Checks Content-Type is one of `types`; answers 415 and returns nullopt otherwise.
  std::optional<std::string> content_type_in(const std::vector<std::string>& types) {
    std::string t = media_type_of(request.content_type);
    if (std::find(types.begin(), types.end(), t) != types.end()) return t;
    std::string list;
    for (const auto& o : types) list += (list.empty() ? "" : ", ") + o;
    fail(415, ec::unsupported_media_type,
         "cannot read a request body of Content-Type \"" + request.content_type + "\"; this route reads " + list);
    return std::nullopt;
  }

  /// The {cluster_id} path parameter must name this cluster.
  bool check_cluster() {
    if (params["cluster_id"] == broker().config().cluster_id) return true;
    fail(404, ec::not_found, "cluster \"" + params["cluster_id"] + "\" not found; this is cluster \"" +
                                 broker().config().cluster_id + "\"");
    return false;
  }

  /// A query parameter as an integer in [min, max]; `fallback` when absent. Answers 422 naming it.
  std::optional<int64_t> query_int(const std::string& name, std::optional<int64_t> fallback, int64_t min, int64_t max,
                                   std::string_view limit_name = {}) {
    auto it = query.find(name);
    if (it == query.end()) {
      if (!fallback) fail(422, ec::unprocessable, "query parameter " + name + " is required");
      return fallback;
    }
    auto v = parse_int(it->second, min, max);
    if (!v) {
      std::string msg = "query parameter " + name + " must be an integer in [" + std::to_string(min) + ", " +
                        std::to_string(max) + "]";
      if (!limit_name.empty()) msg += " (limit " + std::string(limit_name) + ")";
      fail(422, ec::unprocessable, msg + ", got \"" + it->second + "\"");
    }
    return v;
  }

  /// The {partition} path parameter. Answers 404 (40402) when it is not a partition number.
  std::optional<int32_t> path_partition(const std::string& name) {
    auto v = parse_int(params[name], 0, std::numeric_limits<int32_t>::max());
    if (!v) {
      fail(404, ec::partition_not_found,
           "partition \"" + params[name] + "\" not found: a partition is an integer in [0, 2147483647]");
      return std::nullopt;
    }
    return static_cast<int32_t>(*v);
  }

  /// acks=0|1|all|-1 (default all).
  std::optional<broker::acks_mode> query_acks() {
    auto it = query.find("acks");
    if (it == query.end() || it->second == "all" || it->second == "-1") return broker::acks_mode::all;
    if (it->second == "1") return broker::acks_mode::leader;
    if (it->second == "0") return broker::acks_mode::none;
    fail(422, ec::unprocessable, "query parameter acks must be 0, 1, all or -1, got \"" + it->second + "\"");
    return std::nullopt;
  }

  bool topic_exists(const std::string& topic) { return broker().topic_exists(topic); }

  void fail_broker(const broker::error& e, error_scope scope, const std::string& topic) {
    bool exists = scope == error_scope::partition && e.code == broker::errc::unknown_topic_or_partition &&
                  topic_exists(topic);
    fail(to_api_error(e, scope, exists));
  }
};

// ---- JSON shapes ------------------------------------------------------------------------------

namespace {

json related(const std::string& url) { return json{{"related", url}}; }

json cluster_json(const std::string& base, const broker::broker& b) {
  const std::string& id = b.config().cluster_id;
  std::string self = base + "/v3/clusters/" + id;
  return json{{"kind", "KafkaCluster"},
              {"metadata", {{"self", self}, {"resource_name", "crn:///kafka=" + id}}},
              {"cluster_id", id},
              {"controller", related(self + "/brokers/" + std::to_string(b.config().node_id))},
              {"brokers", related(self + "/brokers")},
              {"topics", related(self + "/topics")}};
}

json topic_json(const std::string& base, const std::string& cluster, const broker::topic_description& t) {
  std::string self = base + "/v3/clusters/" + cluster + "/topics/" + t.name;
  return json{{"kind", "KafkaTopic"},
              {"metadata", {{"self", self}, {"resource_name", "crn:///kafka=" + cluster + "/topic=" + t.name}}},
              {"cluster_id", cluster},
              {"topic_name", t.name},
              {"topic_id", t.topic_id},
              {"is_internal", t.is_internal},
              {"replication_factor", t.replication_factor},
              {"partitions_count", t.partitions.size()},
              {"partitions", related(self + "/partitions")},
              {"configs", related(self + "/configs")},
              {"authorized_operations", json::array()}};
}

json partition_json(const std::string& base, const std::string& cluster, const std::string& topic,
                    const broker::partition_description& p) {
  std::string self = base + "/v3/clusters/" + cluster + "/topics/" + topic + "/partitions/" +
                     std::to_string(p.partition.value());
  return json{{"kind", "KafkaPartition"},
              {"metadata", {{"self", self},
                            {"resource_name", "crn:///kafka=" + cluster + "/topic=" + topic + "/partition=" +
                                                  std::to_string(p.partition.value())}}},
              {"cluster_id", cluster},
              {"topic_name", topic},
              {"partition_id", p.partition.value()},
              {"leader", related(self + "/replicas/" + std::to_string(p.leader))},
              {"replicas", related(self + "/replicas")},
              {"leader_epoch", p.leader_epoch.value()},
              {"log_start_offset", p.log_start_offset.value()},
              {"high_watermark", p.high_watermark.value()},
              {"log_end_offset", p.log_end_offset.value()},
              {"size_bytes", p.size_bytes}};
}

json config_json(const std::string& base, const std::string& cluster, const std::string& topic,
                 const broker::topic_config_entry& c) {
  std::string self = base + "/v3/clusters/" + cluster + "/topics/" + topic + "/configs/" + c.name;
  return json{{"kind", "KafkaTopicConfig"},
              {"metadata", {{"self", self},
                            {"resource_name", "crn:///kafka=" + cluster + "/topic=" + topic + "/config=" + c.name}}},
              {"cluster_id", cluster},
              {"topic_name", topic},
              {"name", c.name},
              {"value", c.value},
              {"is_default", c.is_default},
              {"is_read_only", c.read_only},
              {"is_sensitive", false},
              {"source", c.is_default ? "DEFAULT_CONFIG" : "DYNAMIC_TOPIC_CONFIG"},
              {"synonyms", json::array()}};
}

json list_json(const std::string& kind, const std::string& self, json data) {
  return json{{"kind", kind}, {"metadata", {{"self", self}, {"next", nullptr}}}, {"data", std::move(data)}};
}

json broker_json(const std::string& base, const std::string& cluster, const broker::broker_description& b) {
  const std::string id = std::to_string(b.node_id);
  return json{{"kind", "KafkaBroker"},
              {"metadata", {{"self", base + "/v3/clusters/" + cluster + "/brokers/" + id},
                            {"resource_name", "crn:///kafka=" + cluster + "/broker=" + id}}},
              {"cluster_id", cluster},
              {"broker_id", b.node_id},
              {"host", b.host},
              {"port", b.port},
              {"rack", nullptr}};
}

/// The replica of partition `p` on broker `broker_id` (Confluent's KafkaReplica).
json replica_json(const std::string& base, const std::string& cluster, const std::string& topic,
                  const broker::partition_description& p, int32_t broker_id) {
  const std::string partition = std::to_string(p.partition.value());
  const std::string id = std::to_string(broker_id);
  const bool in_sync = std::find(p.in_sync_replicas.begin(), p.in_sync_replicas.end(), broker_id) != p.in_sync_replicas.end();
  return json{{"kind", "KafkaReplica"},
              {"metadata", {{"self", base + "/v3/clusters/" + cluster + "/topics/" + topic + "/partitions/" + partition +
                                         "/replicas/" + id},
                            {"resource_name", "crn:///kafka=" + cluster + "/topic=" + topic + "/partition=" + partition +
                                                  "/replica=" + id}}},
              {"cluster_id", cluster},
              {"topic_name", topic},
              {"partition_id", p.partition.value()},
              {"broker_id", broker_id},
              {"is_leader", broker_id == p.leader},
              {"is_in_sync", in_sync},
              {"broker", related(base + "/v3/clusters/" + cluster + "/brokers/" + id)}};
}

json v2_partition_json(const broker::partition_description& p) {
  json replicas = json::array();
  for (int32_t r : p.replicas) {
    bool in_sync = std::find(p.in_sync_replicas.begin(), p.in_sync_replicas.end(), r) != p.in_sync_replicas.end();
    replicas.push_back({{"broker", r}, {"leader", r == p.leader}, {"in_sync", in_sync}});
  }
  return json{{"partition", p.partition.value()}, {"leader", p.leader}, {"replicas", replicas}};
}

json v2_topic_json(const broker::topic_description& t) {
  json configs = json::object();
  for (const auto& c : t.configs) configs[c.name] = c.value;
  json partitions = json::array();
  for (const auto& p : t.partitions) partitions.push_back(v2_partition_json(p));
  return json{{"name", t.name}, {"configs", configs}, {"partitions", partitions}};
}

const broker::partition_description* find_partition(const broker::topic_description& t, int32_t p) {
  for (const auto& d : t.partitions) {
    if (d.partition.value() == p) return &d;
  }
  return nullptr;
}

/// {"error_code":200,...} delivery report of one v3 record.
json v3_report(const std::string& cluster, const std::string& topic, const v3_record& r,
               const broker::produce_record_result& result) {
  auto typed = [](const std::string& type, size_t size) -> json {
    if (type.empty()) return nullptr;
    return json{{"type", type}, {"size", size}};
  };
  json j = {{"error_code", 200},
            {"cluster_id", cluster},
            {"topic_name", topic},
            {"partition_id", result.partition.value()},
            {"offset", result.record_offset.value()},
            {"key", typed(r.key_type, r.key_size)},
            {"value", typed(r.value_type, r.value_size)}};
  j["timestamp"] = result.timestamp >= 0 ? json(format_iso8601_ms(result.timestamp)) : json(nullptr);
  return j;
}

std::string error_json(const api_error& e) { return error_body(e.error_code, e.message); }

}  // namespace

// ---- handlers ---------------------------------------------------------------------------------

namespace {

using call_ptr = std::shared_ptr<api::call>;
using handler = void (*)(const call_ptr&);

/// Describes every topic (internal ones when asked), then calls `done` on the connection thread.
void describe_all(const call_ptr& c, bool include_internal,
                  std::function<void(api::call&, std::vector<broker::topic_description>)> done) {
  auto names = c->broker().list_topics(include_internal);
  struct gather {
    std::vector<broker::topic_description> topics;
    size_t remaining = 0;
    std::function<void(api::call&, std::vector<broker::topic_description>)> done;
  };
  auto g = std::make_shared<gather>();
  g->remaining = names.size();
  g->done = std::move(done);
  if (names.empty()) {
    g->done(*c, {});
    return;
  }
  for (const auto& name : names) {
    c->broker().describe_topic(name, [c, g](broker::result<broker::topic_description> r) {
      c->later([g, r = std::move(r)](api::call& call) mutable {
        if (r.ok()) g->topics.push_back(std::move(r).value());   // a topic deleted meanwhile is skipped
        if (--g->remaining == 0) {
          std::sort(g->topics.begin(), g->topics.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
          g->done(call, std::move(g->topics));
        }
      });
    });
  }
}

/// describe_topic(params[key]) then `done` on the connection thread; errors answered here.
/// 404/40402 for partition `p` of `t`, naming how many partitions the topic has.
void fail_partition_not_found(api::call& call, const broker::topic_description& t, int32_t p) {
  call.fail(404, ec::partition_not_found, "partition " + std::to_string(p) + " of topic \"" + t.name +
                                              "\" not found (it has " + std::to_string(t.partitions.size()) +
                                              " partitions)");
}

void with_topic(const call_ptr& c, const std::string& key, error_scope scope,
                std::function<void(api::call&, broker::topic_description)> done) {
  std::string topic = c->params[key];
  c->broker().describe_topic(topic, [c, topic, scope, done = std::move(done)](broker::result<broker::topic_description> r) {
    c->later([r = std::move(r), topic, scope, done](api::call& call) mutable {
      if (!r.ok()) return call.fail_broker(r.error(), scope, topic);
      done(call, std::move(r).value());
    });
  });
}

void health(const call_ptr& c) {
  if (c->self->stopping_flag()) {
    return c->respond_json(503, {{"status", "stopping"}});
  }
  c->respond_json(200, {{"status", "ok"}});
}

void get_metrics(const call_ptr& c) {
  auto type = c->accept(metrics_offers);
  if (!type) return;
  describe_all(c, false, [](api::call& call, std::vector<broker::topic_description> topics) {
    http_response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    const auto& latency = call.self->options().fsync_latency;
    r.body = call.self->metrics_registry().render(topics, latency ? latency() : io::latency_histogram::snapshot{});
    call.respond(std::move(r));
  });
}

// -- v3 admin

void v3_list_clusters(const call_ptr& c) {
  if (!c->accept(v3_offers)) return;
  json data = json::array({cluster_json(c->base_url, c->broker())});
  c->respond_json(200, list_json("KafkaClusterList", c->base_url + "/v3/clusters", data));
}

void v3_get_cluster(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  c->respond_json(200, cluster_json(c->base_url, c->broker()));
}

void v3_list_topics(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  // As Confluent's v3 list: internal topics too, marked is_internal (v2's list leaves them out).
  describe_all(c, true, [](api::call& call, std::vector<broker::topic_description> topics) {
    const std::string& cluster = call.params["cluster_id"];
    json data = json::array();
    for (const auto& t : topics) data.push_back(topic_json(call.base_url, cluster, t));
    call.respond_json(200, list_json("KafkaTopicList", call.base_url + "/v3/clusters/" + cluster + "/topics", data));
  });
}

void v3_create_topic(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto req = parse_create_topic(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  std::string name = req->name;
  c->broker().create_topic(std::move(req).value(), [c, name](broker::result<broker::topic_description> r) {
    c->later([r = std::move(r), name](api::call& call) mutable {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, name);
      call.respond_json(201, topic_json(call.base_url, call.params["cluster_id"], r.value()));
    });
  });
}

void v3_get_topic(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    call.respond_json(200, topic_json(call.base_url, call.params["cluster_id"], t));
  });
}

void v3_patch_topic(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto count = parse_patch_topic(c->request.body);
  if (!count.ok()) return c->fail(count.error());
  std::string topic = c->params["topic_name"];
  c->broker().create_partitions(topic, *count, [c, topic](broker::result<broker::topic_description> r) {
    c->later([r = std::move(r), topic](api::call& call) mutable {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, topic);
      call.respond_json(200, topic_json(call.base_url, call.params["cluster_id"], r.value()));
    });
  });
}

void v3_delete_topic(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  std::string topic = c->params["topic_name"];
  c->broker().delete_topic(topic, [c, topic](broker::result<void> r) {
    c->later([r = std::move(r), topic](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, topic);
      call.respond_no_content();
    });
  });
}

void v3_list_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    const std::string& cluster = call.params["cluster_id"];
    json data = json::array();
    for (const auto& e : t.configs) data.push_back(config_json(call.base_url, cluster, t.name, e));
    call.respond_json(200, list_json("KafkaTopicConfigList",
                                     call.base_url + "/v3/clusters/" + cluster + "/topics/" + t.name + "/configs", data));
  });
}

void v3_get_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    const std::string& name = call.params["name"];
    for (const auto& e : t.configs) {
      if (e.name == name) return call.respond_json(200, config_json(call.base_url, call.params["cluster_id"], t.name, e));
    }
    call.fail(404, ec::not_found, "topic config \"" + name + "\" not found");
  });
}

/// Applies `changes` (a value to set, or nullopt to reset to the default) to {topic_name}'s
/// configs and answers 204.
void change_configs(const call_ptr& c, std::map<std::string, std::optional<std::string>> changes, bool validate_only) {
  std::string topic = c->params["topic_name"];
  c->broker().alter_topic_configs(topic, std::move(changes), validate_only,
                                  [c, topic](broker::result<broker::topic_description> r) {
                                    c->later([r = std::move(r), topic](api::call& call) {
                                      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, topic);
                                      call.respond_no_content();
                                    });
                                  });
}

void v3_alter_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto req = parse_alter_configs(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  change_configs(c, std::move(req->changes), req->validate_only);
}

/// PUT .../configs/{name} with {"value": "..."} (Confluent's single-config update).
void v3_set_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  json body = json::parse(c->request.body, nullptr, false);
  if (body.is_discarded()) return c->fail(400, ec::bad_request, "malformed JSON request body");
  if (!body.is_object() || !body.contains("value") || !body["value"].is_string()) {
    return c->fail(422, ec::unprocessable, "the body must be {\"value\": \"...\"} with a string value");
  }
  for (const auto& [name, unused] : body.items()) {
    if (name != "value") return c->fail(422, ec::unprocessable, "unknown field \"" + name + "\"; the body takes value");
  }
  change_configs(c, {{c->params["name"], body["value"].get<std::string>()}}, false);
}

/// DELETE .../configs/{name}: back to the default (Confluent's single-config reset).
void v3_reset_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  change_configs(c, {{c->params["name"], std::nullopt}}, false);
}

void v3_list_partitions(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  with_topic(c, "topic_name", error_scope::topic, [](api::call& call, broker::topic_description t) {
    const std::string& cluster = call.params["cluster_id"];
    json data = json::array();
    for (const auto& p : t.partitions) data.push_back(partition_json(call.base_url, cluster, t.name, p));
    call.respond_json(200, list_json("KafkaPartitionList",
                                     call.base_url + "/v3/clusters/" + cluster + "/topics/" + t.name + "/partitions", data));
  });
}

/// Answers for partition {partition_id} of {topic_name}: `done` with the topic and the partition,
/// or 404 (40401 / 40402) naming what is missing.
void with_partition(const call_ptr& c,
                    std::function<void(api::call&, const broker::topic_description&, const broker::partition_description&)> done) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto p = c->path_partition("partition_id");
  if (!p) return;
  with_topic(c, "topic_name", error_scope::partition, [p = *p, done = std::move(done)](api::call& call, broker::topic_description t) {
    const auto* d = find_partition(t, p);
    if (!d) return fail_partition_not_found(call, t, p);
    done(call, t, *d);
  });
}

void v3_get_partition(const call_ptr& c) {
  with_partition(c, [](api::call& call, const broker::topic_description& t, const broker::partition_description& d) {
    call.respond_json(200, partition_json(call.base_url, call.params["cluster_id"], t.name, d));
  });
}

/// The {broker_id} path parameter as a number; nullopt when it is not one.
std::optional<int32_t> path_broker_id(api::call& call) {
  const std::string& text = call.params["broker_id"];
  int32_t id = -1;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (err != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

/// The {broker_id} path parameter as a broker; nullopt (404 answered) when it is none of them.
std::optional<broker::broker_description> path_broker(api::call& call) {
  const std::string& text = call.params["broker_id"];
  const auto id = path_broker_id(call);
  std::string known;
  for (const auto& b : call.broker().list_brokers()) {
    if (id == b.node_id) return b;
    known += (known.empty() ? "" : ", ") + std::to_string(b.node_id);
  }
  call.fail(404, ec::not_found, "broker \"" + text + "\" does not exist; this cluster's brokers: " + known);
  return std::nullopt;
}

void v3_list_brokers(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  const std::string& cluster = c->params["cluster_id"];
  json data = json::array();
  for (const auto& b : c->broker().list_brokers()) data.push_back(broker_json(c->base_url, cluster, b));
  c->respond_json(200, list_json("KafkaBrokerList", c->base_url + "/v3/clusters/" + cluster + "/brokers", data));
}

void v3_get_broker(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  if (auto b = path_broker(*c)) c->respond_json(200, broker_json(c->base_url, c->params["cluster_id"], *b));
}

void v3_list_replicas(const call_ptr& c) {
  with_partition(c, [](api::call& call, const broker::topic_description& t, const broker::partition_description& d) {
    const std::string& cluster = call.params["cluster_id"];
    json data = json::array();
    for (int32_t r : d.replicas) data.push_back(replica_json(call.base_url, cluster, t.name, d, r));
    call.respond_json(200, list_json("KafkaReplicaList", call.base_url + "/v3/clusters/" + cluster + "/topics/" + t.name +
                                                             "/partitions/" + std::to_string(d.partition.value()) + "/replicas",
                                     data));
  });
}

void v3_get_replica(const call_ptr& c) {
  with_partition(c, [](api::call& call, const broker::topic_description& t, const broker::partition_description& d) {
    const auto id = path_broker_id(call);
    for (int32_t r : d.replicas) {
      if (id == r) return call.respond_json(200, replica_json(call.base_url, call.params["cluster_id"], t.name, d, r));
    }
    call.fail(404, ec::not_found, "partition " + std::to_string(d.partition.value()) + " of topic \"" + t.name +
                                      "\" has no replica on broker \"" + call.params["broker_id"] + "\"");
  });
}

// -- v3 produce

/// Writes the reports of a v3 stream in request order as their batches complete.
struct v3_stream : std::enable_shared_from_this<v3_stream> {
  std::vector<std::optional<std::string>> reports;
  size_t next_to_write = 0;
  /// Reports handed to the connection and not yet on the socket: a client that does not read its
  /// answers holds them here, so they count as unanswered (the reader pauses, the client's
  /// records wait in TCP) instead of growing the connection's write queue without bound.
  size_t reports_unsent = 0;
  bool body_open = false;    // a produce stream still reading its body: more reports may come
  std::function<void()> on_written;   // runs after reports were written (a paused reader resumes)
  std::shared_ptr<void> paused_reader;   // the produce stream's reader while it waits for reports

  void flush(api::call& call) {
    while (next_to_write < reports.size() && reports[next_to_write]) {
      ++reports_unsent;
      call.sink->write_chunk_then(std::move(*reports[next_to_write]) + "\n", [self = shared_from_this()](bool) {
        --self->reports_unsent;
        if (self->on_written) self->on_written();
      });
      reports[next_to_write].reset();
      ++next_to_write;
    }
    if (next_to_write == reports.size() && !body_open) return call.end_stream();
    if (on_written) on_written();
  }
  [[nodiscard]] size_t unanswered() const { return reports.size() - next_to_write + reports_unsent; }
};

/// Sends `items` (parsed records, or refusals) in batches of at most stream_batch_records_max;
/// the report of items[i] goes to stream->reports[first + i], written in order as they complete.
void produce_v3_items(const call_ptr& c, const std::shared_ptr<v3_stream>& stream, const std::string& topic,
                      const std::string& cluster, broker::acks_mode acks, std::vector<v3_item>& items, size_t first) {
  struct batch {
    std::vector<size_t> indexes;
    std::vector<v3_record> records;
  };
  std::vector<batch> batches(1);
  for (size_t i = 0; i < items.size(); ++i) {
    v3_item& item = items[i];
    if (item.failure) {
      stream->reports[first + i] = error_json(*item.failure);
      continue;
    }
    if (batches.back().records.size() >= c->self->options().stream_batch_records_max) batches.emplace_back();
    batches.back().indexes.push_back(first + i);
    batches.back().records.push_back(std::move(*item.record));
  }
  for (batch& b : batches) {
    if (b.records.empty()) continue;
    broker::produce_request req{topic, {}, acks, 30000};
    uint64_t bytes = 0;
    for (const auto& r : b.records) {
      req.records.push_back(r.record);
      bytes += record_bytes(r.record);
    }
    c->broker().produce(std::move(req), [c, stream, topic, cluster, b = std::move(b), bytes](
                                            broker::result<broker::produce_response> r) mutable {
      c->later([r = std::move(r), stream, topic, cluster, b = std::move(b), bytes](api::call& call) {
        bool exists = !r.ok() && r.error().code == broker::errc::unknown_topic_or_partition && call.topic_exists(topic);
        uint64_t ok_records = 0;
        for (size_t k = 0; k < b.indexes.size(); ++k) {
          std::string report;
          if (!r.ok()) {
            report = error_json(to_api_error(r.error(), error_scope::topic, exists));
          } else if (const auto& result = r->results.at(k); result.failure) {
            report = error_json(to_api_error(*result.failure, error_scope::partition, call.topic_exists(topic)));
          } else {
            ++ok_records;
            report = dump(v3_report(cluster, topic, b.records[k], result));
          }
          stream->reports[b.indexes[k]] = std::move(report);
        }
        if (ok_records > 0) call.self->metrics_registry().add_bytes_in(topic, ok_records, bytes);
        stream->flush(call);
      });
    });
  }
}

/// Records of a produce stream not yet answered, at most: past it the stream stops reading until
/// reports go out (a client that sends faster than the log appends waits in TCP, not in memory).
constexpr size_t produce_stream_unanswered_max = 10'000;

/// Reads a produce stream's body as it arrives (Confluent's streaming mode): each complete
/// top-level JSON object is a record, produced and answered in order while the client is still
/// sending. Whitespace separates records; anything else between them ends the stream with a
/// malformed-record report. Unparsed text is bounded by twice the record size limit plus 64 KiB.
struct v3_produce_stream : std::enable_shared_from_this<v3_produce_stream> {
  call_ptr c;
  std::shared_ptr<v3_stream> stream = std::make_shared<v3_stream>();
  std::string topic, cluster;
  broker::acks_mode acks = broker::acks_mode::all;
  std::string pending;        // body text not yet split into records
  size_t scanned = 0;         // pending[0, scanned) holds no complete record past value_start
  size_t value_start = std::string::npos;   // where the record being scanned starts
  int depth = 0;              // nesting depth inside the current record
  bool in_string = false, escaped = false;
  bool reading = false, paused = false, ended = false;

  void start() {
    stream->body_open = true;
    stream->on_written = [weak = weak_from_this()] {
      if (auto self = weak.lock(); self && self->paused && self->stream->unanswered() < produce_stream_unanswered_max) {
        self->paused = false;
        self->stream->paused_reader.reset();
        self->read();
      }
    };
    http_response head;
    head.content_type = "application/json";
    c->begin_stream(std::move(head));
    read();
  }

  void read() {
    if (ended || reading) return;
    if (stream->unanswered() >= produce_stream_unanswered_max) {
      // No read is pending now to hold this object (and through it the connection): the
      // stream's in-flight produces hold it until their reports resume reading. Without this the
      // connection was dropped mid-body (the client saw a reset, the request never finished).
      paused = true;
      stream->paused_reader = shared_from_this();
      return;
    }
    reading = true;
    c->sink->read_body_piece([self = shared_from_this()](std::string piece, bool done, bool ok) {
      self->reading = false;
      self->on_piece(std::move(piece), done, ok);
    });
  }

  void on_piece(std::string piece, bool done, bool ok) {
    pending += piece;
    std::vector<std::string> records;   // complete records of this piece, as JSON text
    std::optional<api_error> refusal;
    scan(records, refusal);
    const size_t bound = 2 * static_cast<size_t>(c->self->options().limits.record_bytes_max) + 65536;
    if (!refusal && pending.size() > bound) {
      refusal = api_error{413, error_codes::record_too_large,
                          "a record of the stream is larger than " + std::to_string(bound) +
                              " bytes of JSON text (twice message.max.bytes plus 64 KiB)"};
    }
    if (!refusal && (done || !ok) && !pending_is_blank()) {
      refusal = api_error{400, error_codes::bad_request, "the stream ended inside a record"};
    }
    if (!records.empty()) {
      // Each record alone: a malformed one is answered alone and the stream goes on at the next
      // object, whose framing the scan has already found.
      const size_t first = stream->reports.size();
      std::vector<v3_item> items;
      for (const std::string& text : records) {
        auto parsed = parse_v3_records(text, c->self->options().limits, first + items.size());
        if (parsed.ok() && parsed->size() == 1) {
          items.push_back(std::move(parsed->front()));
        } else {
          items.push_back(v3_item{std::nullopt, parsed.ok() ? api_error{400, error_codes::bad_request, "not one record"}
                                                            : parsed.error()});
        }
      }
      stream->reports.resize(first + items.size());
      produce_v3_items(c, stream, topic, cluster, acks, items, first);
    }
    if (refusal) stream->reports.push_back(error_json(*refusal));
    if (done || !ok || refusal) {
      ended = true;
      stream->body_open = false;
    }
    stream->flush(*c);
    read();
  }

  [[nodiscard]] bool pending_is_blank() const {
    return pending.find_first_not_of(" \t\r\n") == std::string::npos;
  }

  /// Moves every complete top-level object of `pending` to `out`; stops with `refusal` at text
  /// that cannot start a record.
  void scan(std::vector<std::string>& out, std::optional<api_error>& refusal) {
    size_t i = scanned;
    for (; i < pending.size(); ++i) {
      const char ch = pending[i];
      if (value_start == std::string::npos) {
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') continue;
        if (ch != '{') {
          refusal = api_error{400, error_codes::bad_request,
                              std::string("malformed stream: a record must be a JSON object, found '") + ch + "'"};
          break;
        }
        value_start = i;
        depth = 0;
      }
      if (in_string) {
        if (escaped) escaped = false;
        else if (ch == '\\') escaped = true;
        else if (ch == '"') in_string = false;
        continue;
      }
      if (ch == '"') in_string = true;
      else if (ch == '{' || ch == '[') ++depth;
      else if ((ch == '}' || ch == ']') && --depth == 0) {
        out.push_back(pending.substr(value_start, i + 1 - value_start));
        value_start = std::string::npos;
      }
    }
    // Keep only the record in progress.
    const size_t keep_from = value_start == std::string::npos ? i : value_start;
    pending.erase(0, keep_from);
    if (value_start != std::string::npos) value_start = 0;
    scanned = pending.size();
    if (refusal) pending.clear();
  }
};

void v3_produce(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto acks = c->query_acks();
  if (!acks) return;
  if (c->request.body_stream) {
    auto s = std::make_shared<v3_produce_stream>();
    s->c = c;
    s->topic = c->params["topic_name"];
    s->cluster = c->params["cluster_id"];
    s->acks = *acks;
    return s->start();
  }
  auto items = parse_v3_records(c->request.body, c->self->options().limits);
  if (!items.ok()) return c->fail(items.error());
  std::string topic = c->params["topic_name"];
  std::string cluster = c->params["cluster_id"];

  if (items->size() == 1 && !c->request.chunked) {
    v3_item& item = items->front();
    if (item.failure) return c->fail(*item.failure);
    broker::produce_request req{topic, {item.record->record}, *acks, 30000};
    uint64_t bytes = record_bytes(item.record->record);
    c->broker().produce(std::move(req), [c, topic, cluster, rec = std::move(*item.record), bytes](
                                            broker::result<broker::produce_response> r) mutable {
      c->later([r = std::move(r), topic, cluster, rec = std::move(rec), bytes](api::call& call) {
        if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, topic);
        const auto& result = r->results.at(0);
        if (result.failure) return call.fail_broker(*result.failure, error_scope::partition, topic);
        call.self->metrics_registry().add_bytes_in(topic, 1, bytes);
        call.respond_json(200, v3_report(cluster, topic, rec, result));
      });
    });
    return;
  }

  // Several records in one body: one report per record, in order, each written as soon as it and
  // all before it are done.
  auto stream = std::make_shared<v3_stream>();
  stream->reports.resize(items->size());
  http_response head;
  head.content_type = "application/json";
  c->begin_stream(std::move(head));
  produce_v3_items(c, stream, topic, cluster, *acks, *items, 0);
  stream->flush(*c);   // reports of refused records at the front, or all of them
}

// -- v2

void v2_list_topics(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  auto names = c->broker().list_topics(false);
  std::sort(names.begin(), names.end());
  c->respond_json(200, json(names), v2_type);
}

void v2_get_topic(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  with_topic(c, "topic", error_scope::topic, [](api::call& call, broker::topic_description t) {
    call.respond_json(200, v2_topic_json(t), v2_type);
  });
}

void v2_list_partitions(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  with_topic(c, "topic", error_scope::topic, [](api::call& call, broker::topic_description t) {
    json out = json::array();
    for (const auto& p : t.partitions) out.push_back(v2_partition_json(p));
    call.respond_json(200, out, v2_type);
  });
}

void v2_get_partition(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  auto p = c->path_partition("partition");
  if (!p) return;
  with_topic(c, "topic", error_scope::partition, [p = *p](api::call& call, broker::topic_description t) {
    const auto* d = find_partition(t, p);
    if (!d) return fail_partition_not_found(call, t, p);
    call.respond_json(200, v2_partition_json(*d), v2_type);
  });
}

void v2_brokers(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  json ids = json::array();
  for (const auto& b : c->broker().list_brokers()) ids.push_back(b.node_id);
  c->respond_json(200, {{"brokers", ids}}, v2_type);
}

void v2_produce_to(const call_ptr& c, std::optional<int32_t> partition) {
  auto type = c->content_type_in({v2_binary_type, v2_json_type, "application/json"});
  if (!type) return;
  if (!c->accept(v2_offers)) return;
  auto acks = c->query_acks();
  if (!acks) return;
  embedded_format format = *type == v2_binary_type ? embedded_format::binary : embedded_format::json;
  auto records = parse_v2_produce(c->request.body, format, partition.has_value(), c->self->options().limits);
  if (!records.ok()) return c->fail(records.error());
  std::string topic = c->params["topic"];
  uint64_t bytes = 0;
  for (auto& r : *records) {
    if (partition) r.partition = model::partition_id(*partition);
    bytes += record_bytes(r);
  }
  broker::produce_request req{topic, std::move(records).value(), *acks, 30000};
  error_scope scope = partition ? error_scope::partition : error_scope::topic;
  c->broker().produce(std::move(req), [c, topic, scope, bytes](broker::result<broker::produce_response> r) {
    c->later([r = std::move(r), topic, scope, bytes](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), scope, topic);
      // Built as text (same shape and key order nlohmann would give): this answer is written
      // once per produce request with one entry per record, and a json tree per entry showed
      // up in profiles of the produce path.
      std::string body = "{\"key_schema_id\":null,\"offsets\":[";
      body.reserve(body.size() + r->results.size() * 72);
      uint64_t ok_records = 0;
      bool first = true;
      for (const auto& result : r->results) {
        if (!first) body += ',';
        first = false;
        if (result.failure) {
          // v2 per-record codes: 1 = non-retriable Kafka error, 2 = retriable (REST Proxy v2 reference).
          body += "{\"error\":" + dump(json(result.failure->message)) +
                  ",\"error_code\":" + (is_retriable(result.failure->code) ? "2" : "1") +
                  ",\"offset\":null,\"partition\":" +
                  (result.partition.value() >= 0 ? std::to_string(result.partition.value()) : std::string("null")) + "}";
        } else {
          ++ok_records;
          body += "{\"error\":null,\"error_code\":null,\"offset\":" + std::to_string(result.record_offset.value()) +
                  ",\"partition\":" + std::to_string(result.partition.value()) + "}";
        }
      }
      body += "],\"value_schema_id\":null}";
      if (ok_records > 0) call.self->metrics_registry().add_bytes_in(topic, ok_records, bytes);
      http_response response;
      response.status = 200;
      response.content_type = v2_type;
      response.body = std::move(body);
      call.respond(std::move(response));
    });
  });
}

void v2_produce_topic(const call_ptr& c) { v2_produce_to(c, std::nullopt); }

void v2_produce_partition(const call_ptr& c) {
  auto p = c->path_partition("partition");
  if (!p) return;
  // The REST Proxy answers a missing partition with 404/40402 for the whole request.
  with_topic(c, "topic", error_scope::partition, [c, p = *p](api::call& call, broker::topic_description t) {
    if (!find_partition(t, p)) return fail_partition_not_found(call, t, p);
    v2_produce_to(c, p);
  });
}

void v2_offsets(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  auto p = c->path_partition("partition");
  if (!p) return;
  model::topic_partition tp{c->params["topic"], model::partition_id(*p)};
  if (c->query.count("timestamp")) {
    auto ts = c->query_int("timestamp", std::nullopt, 0, std::numeric_limits<int64_t>::max());
    if (!ts) return;
    broker::list_offsets_request req{tp, broker::offset_spec::timestamp, *ts};
    c->broker().list_offsets(std::move(req), [c, tp](broker::result<broker::list_offsets_response> r) {
      c->later([r = std::move(r), tp](api::call& call) {
        if (!r.ok()) return call.fail_broker(r.error(), error_scope::partition, tp.topic);
        json j = {{"offset", r->found_offset ? json(r->found_offset->value()) : json(nullptr)},
                  {"timestamp", r->found_offset ? json(r->timestamp) : json(nullptr)}};
        call.respond_json(200, j, v2_type);
      });
    });
    return;
  }
  broker::list_offsets_request earliest{tp, broker::offset_spec::earliest, 0};
  c->broker().list_offsets(std::move(earliest), [c, tp](broker::result<broker::list_offsets_response> first) {
    c->later([first = std::move(first), tp](api::call& call) {
      if (!first.ok()) return call.fail_broker(first.error(), error_scope::partition, tp.topic);
      int64_t beginning = first->found_offset ? first->found_offset->value() : 0;
      broker::list_offsets_request latest{tp, broker::offset_spec::latest, 0};
      call.broker().list_offsets(std::move(latest), [c = call.shared_from_this(), tp, beginning](
                                                       broker::result<broker::list_offsets_response> last) {
        c->later([last = std::move(last), tp, beginning](api::call& call2) {
          if (!last.ok()) return call2.fail_broker(last.error(), error_scope::partition, tp.topic);
          int64_t end = last->found_offset ? last->found_offset->value() : beginning;
          call2.respond_json(200, {{"beginning_offset", beginning}, {"end_offset", end}}, v2_type);
        });
      });
    });
  });
}

/// About how many bytes the records' JSON array takes (record_json_bytes_estimate per record).
size_t records_json_bytes_estimate(const std::vector<model::record>& records, size_t topic_json_bytes) {
  size_t total = 2;
  for (const auto& rec : records) total += record_json_bytes_estimate(rec, topic_json_bytes);
  return total;
}

// -- NDJSON / SSE streaming reads (issue 5) ------------------------------------------------------

enum class stream_format : uint8_t { ndjson, sse };

/// One long-lived read: fetch (long-poll), write the chunk, wait until it is on the wire, fetch
/// again; until the deadline, the client closing, a graceful stop or an error. The first fetch
/// happens before the response head so that an unknown topic still gets its plain 404.
/// Source: one partition from an offset (SSE id = offset, Last-Event-ID resumes after it), or
/// a REST v2 consumer instance (its positions; the instance remembers where it is).
struct record_stream : std::enable_shared_from_this<record_stream> {
  call_ptr c;
  stream_format format = stream_format::ndjson;
  bool as_json = false;
  std::chrono::steady_clock::time_point deadline;
  bool started = false;   // the response head is sent
  bool finished = false;
  // partition source
  std::string topic;
  int32_t partition = 0;
  int64_t next_offset = 0;
  // consumer instance source (when group is set)
  std::string group;
  std::string instance;

  [[nodiscard]] int64_t remaining_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max<int64_t>(0, left.count());
  }

  void step() {
    if (finished) return;
    if (started && (c->sink->disconnected() || c->self->stopping_flag() || remaining_ms() == 0)) return finish();
    int64_t wait = started ? std::min(remaining_ms(), stream_limits::http_stream_poll_wait_ms) : 0;
    auto self = shared_from_this();
    if (!group.empty()) {
      broker::poll_request req{wait, stream_limits::http_stream_chunk_bytes_max};
      c->broker().groups().poll(group, instance, req, [self](broker::result<std::vector<broker::consumed_record>> r) {
        self->c->sink->post([self, r = std::move(r)] { self->on_consumed(r); });
      });
      return;
    }
    broker::fetch_request req;
    req.partition = {topic, model::partition_id(partition)};
    req.fetch_offset = model::offset(next_offset);
    req.max_bytes = stream_limits::http_stream_chunk_bytes_max;
    req.max_wait_ms = wait;
    c->broker().fetch(std::move(req), [self](broker::result<broker::fetch_response> r) {
      self->c->sink->post([self, r = std::move(r)] { self->on_fetched(r); });
    });
  }

  void on_fetched(const broker::result<broker::fetch_response>& r) {
    if (!r.ok()) {
      bool exists = r.error().code == broker::errc::unknown_topic_or_partition && c->topic_exists(topic);
      return fail(to_api_error(r.error(), error_scope::partition, exists));
    }
    std::string out;
    const std::string topic_json_text = dump(json(topic));
    uint64_t bytes = 0;
    for (const model::record& rec : r->records) {
      append_event(out, topic_json_text, partition, rec, std::to_string(rec.record_offset.value()));
      bytes += record_bytes(rec);
      next_offset = rec.record_offset.value() + 1;
    }
    if (!r->records.empty()) c->self->metrics_registry().add_bytes_out(topic, r->records.size(), bytes);
    send(std::move(out));
  }

  void on_consumed(const broker::result<std::vector<broker::consumed_record>>& r) {
    if (!r.ok()) return fail(to_api_error(r.error()));
    std::string out;
    for (const auto& [tp, rec] : *r) {
      // No SSE id: the instance keeps its own position, a reconnect resumes from it.
      append_event(out, dump(json(tp.topic)), tp.partition.value(), rec, {});
      c->self->metrics_registry().add_bytes_out(tp.topic, 1, record_bytes(rec));
    }
    send(std::move(out));
  }

  /// One record as an NDJSON line or an SSE event. A key or value that is not JSON in a json
  /// stream arrives as a JSON string, as over WebSocket: a 406 here would stop a live reader at
  /// that record for good (the array answer keeps Confluent's 406).
  void append_event(std::string& out, const std::string& topic_json_text, int32_t p, const model::record& rec,
                    const std::string& id) {
    std::string line;
    append_record_json(line, "", topic_json_text, p, rec, as_json, non_json_payload::as_string);
    if (format == stream_format::ndjson) {
      out += line;
      out += '\n';
      return;
    }
    if (!id.empty()) out += "id: " + id + "\n";
    out += "event: record\ndata: " + line + "\n\n";
  }

  void begin() {
    started = true;
    c->sink->watch_disconnect();
    http_response head;
    head.content_type = format == stream_format::ndjson ? ndjson_type : sse_type;
    head.headers.emplace_back("Cache-Control", "no-cache");
    head.headers.emplace_back("X-Accel-Buffering", "no");   // proxies must not buffer a live stream
    c->begin_stream(std::move(head));
  }

  void send(std::string out) {
    if (!started) begin();
    if (c->sink->disconnected()) return finish();
    if (out.empty()) return step();   // asynchronous: the next fetch answers through post()
    c->sink->write_chunk_then(std::move(out), [self = shared_from_this()](bool written) {
      if (!written) return self->finish();
      self->step();
    });
  }

  /// Before the head: a plain error response. After it: an error line / event, then the end.
  void fail(const api_error& e) {
    if (finished) return;
    if (!started) {
      finished = true;
      return c->fail(e);
    }
    std::string body = error_body(e.error_code, e.message);
    c->sink->write_chunk(format == stream_format::ndjson ? body + "\n" : "event: error\ndata: " + body + "\n\n");
    finish();
  }

  void finish() {
    if (finished) return;
    finished = true;
    if (!started) begin();
    c->end_stream();
  }
};

/// The stream format `type` names (one of stream_offers).
stream_format stream_format_of(const std::string& type) {
  return type == sse_type ? stream_format::sse : stream_format::ndjson;
}

/// The `timeout` of a stream as its deadline; nullopt after answering 422.
std::optional<std::chrono::steady_clock::time_point> stream_deadline(const call_ptr& c) {
  auto timeout = c->query_int("timeout", stream_limits::http_stream_duration_ms_max, 0,
                              stream_limits::http_stream_duration_ms_max, "http_stream_duration_ms_max");
  if (!timeout) return std::nullopt;
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout);
}

/// GET /topics/{t}/partitions/{p}/records with Accept: application/x-ndjson or text/event-stream.
/// `offset` is where to start; an SSE Last-Event-ID (an offset) overrides it with the next one.
/// `format=json` embeds keys and values as JSON instead of base64.
void stream_partition(const call_ptr& c, const std::string& type, int32_t partition) {
  auto s = std::make_shared<record_stream>();
  s->c = c;
  s->format = stream_format_of(type);
  s->topic = c->params["topic"];
  s->partition = partition;
  if (auto f = c->query.find("format"); f != c->query.end()) {
    if (f->second != "json" && f->second != "binary") {
      return c->fail(422, ec::unprocessable, "query parameter format must be binary or json, got \"" + f->second + "\"");
    }
    s->as_json = f->second == "json";
  }
  if (!c->request.last_event_id.empty()) {
    auto last = parse_int(c->request.last_event_id, 0, std::numeric_limits<int64_t>::max() - 1);
    if (!last) {
      return c->fail(400, ec::bad_request, "Last-Event-ID must be an offset (an integer >= 0), got \"" +
                                               c->request.last_event_id + "\"");
    }
    s->next_offset = *last + 1;
  } else {
    auto offset = c->query_int("offset", std::nullopt, 0, std::numeric_limits<int64_t>::max());
    if (!offset) return;
    s->next_offset = *offset;
  }
  auto deadline = stream_deadline(c);
  if (!deadline) return;
  s->deadline = *deadline;
  s->step();
}

void fetch_records(const call_ptr& c) {
  std::vector<std::string> offers = records_offers;
  offers.insert(offers.end(), stream_offers.begin(), stream_offers.end());
  auto type = c->accept(offers);
  if (!type) return;
  auto p = c->path_partition("partition");
  if (!p) return;
  if (*type == ndjson_type || *type == sse_type) return stream_partition(c, *type, *p);
  const api_options& o = c->self->options();
  auto offset = c->query_int("offset", std::nullopt, 0, std::numeric_limits<int64_t>::max());
  if (!offset) return;
  auto timeout = c->query_int("timeout", 0, 0, o.fetch_wait_max_ms, "fetch.wait.max.ms");
  if (!timeout) return;
  auto max_bytes = c->query_int("max_bytes", fetch_max_bytes_default, 1, o.fetch_response_bytes_max,
                                "fetch.response.bytes.max");
  if (!max_bytes) return;
  bool as_json = *type == v2_json_type;
  std::string content_type = *type == v2_json_type ? v2_json_type : (*type == "application/json" ? "application/json" : v2_binary_type);
  broker::fetch_request req;
  req.partition = {c->params["topic"], model::partition_id(*p)};
  req.fetch_offset = model::offset(*offset);
  req.max_bytes = static_cast<int32_t>(*max_bytes);
  req.max_wait_ms = *timeout;
  std::string topic = c->params["topic"];
  int32_t partition = *p;
  c->broker().fetch(std::move(req), [c, topic, partition, as_json, content_type](broker::result<broker::fetch_response> r) {
    c->later([r = std::move(r), topic, partition, as_json, content_type](api::call& call) {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::partition, topic);
      std::string topic_json_text = json(topic).dump(-1, ' ', false, json::error_handler_t::replace);
      std::string out = "[";
      out.reserve(records_json_bytes_estimate(r->records, topic_json_text.size()));
      uint64_t bytes = 0;
      for (size_t i = 0; i < r->records.size(); ++i) {
        const model::record& rec = r->records[i];
        bytes += record_bytes(rec);
        if (i > 0) out += ',';
        if (!append_record_json(out, "", topic_json_text, partition, rec, as_json)) {
          return call.fail(406, ec::not_acceptable,
                           "record at offset " + std::to_string(rec.record_offset.value()) +
                               " is not JSON; read it with Accept: " + v2_binary_type);
        }
      }
      out += ']';
      call.self->metrics_registry().add_bytes_out(topic, r->records.size(), bytes);
      http_response resp;
      resp.content_type = content_type;
      resp.body = std::move(out);
      call.respond(std::move(resp));
    });
  });
}

// -- v2 consumers (issue 4): instances are leases held by the group coordinator, so any shard
// (and any broker, later) serves a base_uri; no consumer state lives in this process's connection.

/// The request body as JSON; null for an empty body. Answers 400/422 and returns nullopt when bad.
std::optional<json> consumer_body(const call_ptr& c) {
  if (c->request.body.find_first_not_of(" \t\r\n") == std::string::npos) return json(nullptr);
  // As the REST Proxy: a body must say it is JSON (415 otherwise); an empty one needs no type.
  if (!c->content_type_in(v2_offers)) return std::nullopt;
  try {
    json j = json::parse(c->request.body);
    if (!j.is_object()) {
      c->fail(422, ec::unprocessable, "the request body must be a JSON object");
      return std::nullopt;
    }
    return j;
  } catch (const json::exception& e) {
    c->fail(400, ec::bad_request, std::string("malformed JSON request body: ") + e.what());
    return std::nullopt;
  }
}

/// A consumer setting given as a JSON string or number/bool (the REST proxy takes strings).
std::optional<std::string> setting_text(const json& body, const std::string& name) {
  if (!body.is_object() || !body.contains(name) || body[name].is_null()) return std::nullopt;
  const json& v = body[name];
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

/// Reads {"partitions":[{"topic","partition"}]} or the same array under `field`. Answers 422.
std::optional<std::vector<model::topic_partition>> partitions_field(const call_ptr& c, const json& body,
                                                                    const std::string& field) {
  std::vector<model::topic_partition> out;
  if (!body.is_object() || !body.contains(field)) return out;
  if (!body[field].is_array()) {
    c->fail(422, ec::unprocessable, field + " must be an array");
    return std::nullopt;
  }
  size_t i = 0;
  for (const auto& item : body[field]) {
    std::string where = field + "[" + std::to_string(i++) + "]";
    if (!item.is_object() || !item.contains("topic") || !item["topic"].is_string() || !item.contains("partition")) {
      c->fail(422, ec::unprocessable, where + " must be {\"topic\": string, \"partition\": integer >= 0}");
      return std::nullopt;
    }
    auto partition = json_partition(item["partition"]);
    if (!partition) {
      c->fail(422, ec::unprocessable, where + ".partition must be " + json_partition_range);
      return std::nullopt;
    }
    out.push_back({item["topic"].get<std::string>(), model::partition_id(*partition)});
  }
  return out;
}

std::string group_param(api::call& c) { return c.params["group"]; }
std::string instance_param(api::call& c) { return c.params["instance"]; }

/// Answers a broker result of a consumer call with 204 (the value, if any, is not shown).
template <typename T = void>
std::function<void(broker::result<T>)> answer_no_content(const call_ptr& c) {
  return [c](broker::result<T> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      call.respond_no_content();
    });
  };
}

void v2_create_consumer(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  auto body = consumer_body(c);
  if (!body) return;
  broker::consumer_instance_config cfg;
  cfg.group_id = c->params["group"];
  auto bad = [&](const std::string& why) { c->fail(422, ec::invalid_consumer_config, why); };
  if (auto name = setting_text(*body, "name")) {
    if (name->empty() || name->size() > 200) return bad("name must be 1..200 characters");
    cfg.name = *name;
  }
  if (auto format = setting_text(*body, "format")) {
    if (*format == "binary") cfg.format = broker::consumer_format::binary;
    else if (*format == "json") cfg.format = broker::consumer_format::json;
    else return bad("format must be binary or json, got \"" + *format + "\"");
  }
  if (auto reset = setting_text(*body, "auto.offset.reset")) {
    if (*reset == "earliest" || *reset == "smallest") cfg.auto_offset_reset = group::offset_reset::earliest;
    else if (*reset == "latest" || *reset == "largest") cfg.auto_offset_reset = group::offset_reset::latest;
    else if (*reset == "none") cfg.auto_offset_reset = group::offset_reset::none;
    else return bad("auto.offset.reset must be earliest, latest or none (smallest and largest are read as earliest and latest), got \"" + *reset + "\"");
  }
  if (auto commit = setting_text(*body, "auto.commit.enable")) {
    if (*commit == "true") cfg.auto_commit_enable = true;
    else if (*commit == "false") cfg.auto_commit_enable = false;
    else return bad("auto.commit.enable must be true or false, got \"" + *commit + "\"");
  }
  if (auto instance = setting_text(*body, "group.instance.id")) {
    if (instance->empty() || instance->size() > 249) return bad("group.instance.id must be 1..249 characters");
    cfg.group_instance_id = *instance;
  }
  if (auto strategy = setting_text(*body, "partition.assignment.strategy")) {
    // Kafka's class names are accepted too, for configs copied from Java clients.
    if (*strategy == "range" || *strategy == "org.apache.kafka.clients.consumer.RangeAssignor") {
      cfg.assignor = group::assignor_kind::range;
    } else if (*strategy == "roundrobin" || *strategy == "org.apache.kafka.clients.consumer.RoundRobinAssignor") {
      cfg.assignor = group::assignor_kind::round_robin;
    } else if (*strategy == "cooperative-sticky" ||
               *strategy == "org.apache.kafka.clients.consumer.CooperativeStickyAssignor") {
      cfg.assignor = group::assignor_kind::cooperative_sticky;
    } else {
      return bad("partition.assignment.strategy must be range, roundrobin or cooperative-sticky, got \"" + *strategy + "\"");
    }
  }
  auto int_setting = [&](const std::string& name, int64_t min, int64_t max) -> std::optional<std::optional<int64_t>> {
    auto text = setting_text(*body, name);
    if (!text) return std::optional<int64_t>{};
    auto v = parse_int(*text, min, max);
    if (!v) {
      bad(name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + *text);
      return std::nullopt;
    }
    return v;
  };
  auto min_bytes = int_setting("fetch.min.bytes", 1, std::numeric_limits<int32_t>::max());
  if (!min_bytes) return;
  if (*min_bytes) cfg.fetch_min_bytes = static_cast<int32_t>(**min_bytes);
  auto request_timeout = int_setting("consumer.request.timeout.ms", 0, c->self->options().fetch_wait_max_ms);
  if (!request_timeout) return;
  if (*request_timeout) cfg.request_timeout_ms = **request_timeout;
  for (const char* key : {"consumer.instance.timeout.ms", "session.timeout.ms"}) {
    auto timeout = int_setting(key, group::limits::session_timeout_ms_min, group::limits::session_timeout_ms_max);
    if (!timeout) return;
    if (*timeout) cfg.session_timeout_ms = **timeout;
  }
  c->broker().groups().create_consumer(std::move(cfg), [c](broker::result<broker::consumer_instance> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      std::string uri = call.base_url + "/consumers/" + percent_encode_segment(r->group_id) + "/instances/" +
                        percent_encode_segment(r->instance_id);
      call.respond_json(200, {{"instance_id", r->instance_id}, {"base_uri", uri}}, v2_type);
    });
  });
}

void v2_delete_consumer(const call_ptr& c) {
  c->broker().groups().delete_consumer(group_param(*c), instance_param(*c), answer_no_content(c));
}

void v2_subscribe(const call_ptr& c) {
  auto body = consumer_body(c);
  if (!body) return;
  const bool has_topics = body->is_object() && body->contains("topics");
  const bool has_pattern = body->is_object() && body->contains("topic_pattern");
  if (has_topics && has_pattern) {
    return c->fail(409, ec::illegal_state, "subscription to topics and to a pattern are mutually exclusive");
  }
  group::subscription sub;
  if (has_topics) {
    const json& topics = (*body)["topics"];
    if (!topics.is_array() || topics.empty()) return c->fail(422, ec::unprocessable, "topics must be a non-empty array of strings");
    sub.kind = group::subscription_kind::topics;
    for (const auto& t : topics) {
      if (!t.is_string()) return c->fail(422, ec::unprocessable, "topics must be a non-empty array of strings");
      sub.topics.push_back(t.get<std::string>());
    }
  } else if (has_pattern) {
    if (!(*body)["topic_pattern"].is_string()) return c->fail(422, ec::unprocessable, "topic_pattern must be a string");
    sub.kind = group::subscription_kind::pattern;
    sub.pattern = (*body)["topic_pattern"].get<std::string>();
  } else {
    return c->fail(422, ec::unprocessable, "a list of topics or a topic_pattern is required");
  }
  c->broker().groups().subscribe(group_param(*c), instance_param(*c), std::move(sub), answer_no_content(c));
}

void v2_get_subscription(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  c->broker().groups().subscription(group_param(*c), instance_param(*c), [c](broker::result<group::subscription> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      json out = {{"topics", r->topics}};
      if (r->kind == group::subscription_kind::pattern) out["topic_pattern"] = r->pattern;
      call.respond_json(200, out, v2_type);
    });
  });
}

void v2_unsubscribe(const call_ptr& c) {
  c->broker().groups().unsubscribe(group_param(*c), instance_param(*c), answer_no_content(c));
}

void v2_assign(const call_ptr& c) {
  auto body = consumer_body(c);
  if (!body) return;
  auto partitions = partitions_field(c, *body, "partitions");
  if (!partitions) return;
  group::partition_set set(partitions->begin(), partitions->end());
  c->broker().groups().assign(group_param(*c), instance_param(*c), std::move(set), answer_no_content(c));
}

json partitions_json(const group::partition_set& set) {
  json out = json::array();
  for (const auto& tp : set) out.push_back({{"topic", tp.topic}, {"partition", tp.partition.value()}});
  return out;
}

void v2_get_assignments(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  c->broker().groups().assignments(group_param(*c), instance_param(*c), [c](broker::result<group::partition_set> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      call.respond_json(200, {{"partitions", partitions_json(*r)}}, v2_type);
    });
  });
}

void v2_seek(const call_ptr& c) {
  auto body = consumer_body(c);
  if (!body) return;
  std::vector<broker::seek_request> seeks;
  if (!body->is_object() || !body->contains("offsets") || !(*body)["offsets"].is_array()) {
    return c->fail(422, ec::unprocessable, "offsets must be an array of {topic, partition, offset | timestamp}");
  }
  size_t i = 0;
  for (const auto& item : (*body)["offsets"]) {
    std::string where = "offsets[" + std::to_string(i++) + "]";
    if (!item.is_object() || !item.contains("topic") || !item["topic"].is_string() || !item.contains("partition")) {
      return c->fail(422, ec::unprocessable, where + " must name a topic and a partition");
    }
    auto partition = json_partition(item["partition"]);
    if (!partition) return c->fail(422, ec::unprocessable, where + ".partition must be " + json_partition_range);
    broker::seek_request s;
    s.partition = {item["topic"].get<std::string>(), model::partition_id(*partition)};
    if (item.contains("offset") && item["offset"].is_number_integer()) {
      s.kind = broker::seek_kind::offset;
      s.value = item["offset"].get<int64_t>();
    } else if (item.contains("timestamp")) {
      s.kind = broker::seek_kind::timestamp;
      if (item["timestamp"].is_number_integer()) {
        s.value = item["timestamp"].get<int64_t>();
      } else if (auto ms = item["timestamp"].is_string() ? parse_iso8601_ms(item["timestamp"].get<std::string>())
                                                          : std::nullopt) {
        s.value = *ms;
      } else {
        return c->fail(422, ec::unprocessable, where + ".timestamp must be ms since the epoch or an ISO-8601 date-time");
      }
    } else {
      return c->fail(422, ec::unprocessable, where + " needs an integer offset or a timestamp");
    }
    seeks.push_back(std::move(s));
  }
  c->broker().groups().seek(group_param(*c), instance_param(*c), std::move(seeks), answer_no_content(c));
}

void v2_seek_edge(const call_ptr& c, broker::seek_kind kind) {
  auto body = consumer_body(c);
  if (!body) return;
  auto partitions = partitions_field(c, *body, "partitions");
  if (!partitions) return;
  std::vector<broker::seek_request> seeks;
  for (const auto& tp : *partitions) seeks.push_back({tp, kind, 0});
  c->broker().groups().seek(group_param(*c), instance_param(*c), std::move(seeks), answer_no_content(c));
}
void v2_seek_beginning(const call_ptr& c) { v2_seek_edge(c, broker::seek_kind::beginning); }
void v2_seek_end(const call_ptr& c) { v2_seek_edge(c, broker::seek_kind::end); }

std::string consumed_records_json(const std::vector<broker::consumed_record>& records, bool as_json,
                                  std::optional<int64_t>& bad_offset) {
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& [tp, rec] = records[i];
    if (i > 0) out += ',';
    const bool ok = append_record_json(out, "", dump(json(tp.topic)), tp.partition.value(), rec, as_json);
    if (!ok && !bad_offset) bad_offset = rec.record_offset.value();
  }
  return out + "]";
}

void v2_consumer_records(const call_ptr& c) {
  const api_options& o = c->self->options();
  auto max_bytes = c->query_int("max_bytes", fetch_max_bytes_default, 1, o.fetch_response_bytes_max, "fetch.response.bytes.max");
  if (!max_bytes) return;
  std::optional<int64_t> timeout;
  auto pick = negotiate(c->request.accept, {v2_binary_type, v2_json_type, ndjson_type, sse_type});
  const bool wants_stream = pick && (*pick == ndjson_type || *pick == sse_type);   // its timeout is checked later
  if (c->query.count("timeout") && !wants_stream) {
    timeout = c->query_int("timeout", std::nullopt, 0, o.fetch_wait_max_ms, "fetch.wait.max.ms");
    if (!timeout) return;
  }
  // The instance's format decides what Accept may ask for (Confluent: 40601 otherwise).
  c->broker().groups().describe_consumer(group_param(*c), instance_param(*c), [c, max_bytes = *max_bytes, timeout](
                                                                                 broker::result<broker::consumer_instance> r) {
    c->later([r = std::move(r), max_bytes, timeout](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      const bool as_json = r->format == broker::consumer_format::json;
      const std::string type = as_json ? v2_json_type : v2_binary_type;
      auto chosen = negotiate(call.request.accept, {type, ndjson_type, sse_type});
      if (chosen && *chosen != type) {
        auto s = std::make_shared<record_stream>();
        s->c = call.shared_from_this();
        s->format = stream_format_of(*chosen);
        s->as_json = as_json;
        s->group = r->group_id;
        s->instance = r->instance_id;
        auto deadline = stream_deadline(s->c);
        if (!deadline) return;
        s->deadline = *deadline;
        return s->step();
      }
      if (!chosen) {
        return call.fail(406, ec::not_acceptable, "consumer instance format is " + std::string(as_json ? "json" : "binary") +
                                                      "; read its records with Accept: " + type + ", not \"" +
                                                      call.request.accept + "\"");
      }
      broker::poll_request req{timeout.value_or(std::min(r->request_timeout_ms, call.self->options().fetch_wait_max_ms)),
                               max_bytes};
      auto self = call.shared_from_this();
      call.broker().groups().poll(r->group_id, r->instance_id, req, [self, as_json, type](
                                                                        broker::result<std::vector<broker::consumed_record>> polled) {
        self->later([polled = std::move(polled), as_json, type](api::call& call2) {
          if (!polled.ok()) return call2.fail(to_api_error(polled.error()));
          std::optional<int64_t> bad_offset;
          std::string body = consumed_records_json(*polled, as_json, bad_offset);
          if (bad_offset) {
            return call2.fail(406, ec::not_acceptable, "record at offset " + std::to_string(*bad_offset) +
                                                           " is not JSON; use a binary consumer instance");
          }
          std::map<std::string, std::pair<uint64_t, uint64_t>> per_topic;
          for (const auto& cr : *polled) {
            auto& [n, b] = per_topic[cr.partition.topic];
            ++n;
            b += record_bytes(cr.record);
          }
          for (const auto& [t, nb] : per_topic) call2.self->metrics_registry().add_bytes_out(t, nb.first, nb.second);
          http_response resp;
          resp.content_type = type;
          resp.body = std::move(body);
          call2.respond(std::move(resp));
        });
      });
    });
  });
}

void v2_commit_offsets(const call_ptr& c) {
  auto body = consumer_body(c);
  if (!body) return;
  std::optional<std::vector<group::processed_offset>> offsets;
  if (body->is_object() && body->contains("offsets")) {
    const json& items = (*body)["offsets"];
    if (!items.is_array()) return c->fail(422, ec::unprocessable, "offsets must be an array");
    offsets.emplace();
    size_t i = 0;
    for (const auto& item : items) {
      std::string where = "offsets[" + std::to_string(i++) + "]";
      if (!item.is_object() || !item.contains("topic") || !item["topic"].is_string() || !item.contains("partition") ||
          !item.contains("offset") || !item["offset"].is_number_integer()) {
        return c->fail(422, ec::unprocessable, where + " must be {\"topic\", \"partition\", \"offset\"}");
      }
      auto partition = json_partition(item["partition"]);
      if (!partition) return c->fail(422, ec::unprocessable, where + ".partition must be " + json_partition_range);
      group::processed_offset p;
      p.partition = {item["topic"].get<std::string>(), model::partition_id(*partition)};
      p.last_processed = model::offset(item["offset"].get<int64_t>());
      if (item.contains("metadata") && item["metadata"].is_string()) p.metadata = item["metadata"].get<std::string>();
      offsets->push_back(std::move(p));
    }
    if (offsets->empty()) offsets.reset();  // {"offsets":[]}: everything returned, like an empty body
  }
  c->broker().groups().commit(group_param(*c), instance_param(*c), std::move(offsets),
                              answer_no_content<group::partition_map<group::committed_offset>>(c));
}

void v2_committed_offsets(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  auto body = consumer_body(c);
  if (!body) return;
  auto partitions = partitions_field(c, *body, "partitions");
  if (!partitions) return;
  group::partition_set set(partitions->begin(), partitions->end());
  c->broker().groups().committed(group_param(*c), instance_param(*c), std::move(set),
                                 [c](broker::result<group::partition_map<group::committed_offset>> r) {
                                   c->later([r = std::move(r)](api::call& call) {
                                     if (!r.ok()) return call.fail(to_api_error(r.error()));
                                     json out = json::array();
                                     for (const auto& [tp, co] : *r) {
                                       out.push_back({{"topic", tp.topic},
                                                      {"partition", tp.partition.value()},
                                                      {"offset", co.committed.value()},
                                                      {"metadata", co.metadata}});
                                     }
                                     call.respond_json(200, {{"offsets", out}}, v2_type);
                                   });
                                 });
}

// -- v3 consumer groups (Confluent v3 shapes) and ringlog's native group admin

std::string state_name(group::group_state s) {
  std::string n(group::to_string(s));
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  return n;
}

json group_json(api::call& c, const group::group_listing& g, std::optional<broker::group_details> details) {
  const std::string& cluster = c.broker().config().cluster_id;
  std::string self = c.base_url + "/v3/clusters/" + cluster + "/consumer-groups/" + percent_encode_segment(g.group_id);
  json j = {{"kind", "KafkaConsumerGroup"},
            {"metadata", {{"self", self}, {"resource_name", "crn:///kafka=" + cluster + "/consumer-group=" + g.group_id}}},
            {"cluster_id", cluster},
            {"consumer_group_id", g.group_id},
            {"is_simple", false},
            {"state", state_name(g.state)},
            {"member_count", g.member_count},
            {"coordinator", related(c.base_url + "/v3/clusters/" + cluster + "/brokers/" + std::to_string(c.broker().config().node_id))},
            {"consumers", related(self + "/consumers")},
            {"lag_summary", related(self + "/lag-summary")}};
  if (details) {
    j["partition_assignor"] = std::string(group::to_string(details->description.assignor));
    j["generation"] = details->description.generation.value();
    j["coordinator_partition"] = details->coordinator.offsets_partition;
    j["coordinator_shard"] = details->coordinator.shard;
  }
  return j;
}

void v3_list_groups(const call_ptr& c) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  c->broker().groups().list_groups([c](broker::result<std::vector<group::group_listing>> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      json data = json::array();
      for (const auto& g : *r) data.push_back(group_json(call, g, std::nullopt));
      call.respond_json(200, list_json("KafkaConsumerGroupList", call.base_url + "/v3/clusters/" + call.params["cluster_id"] +
                                                                      "/consumer-groups", data));
    });
  });
}

/// describe_group, answering 404/40404 for a group that does not exist.
void with_group(const call_ptr& c, std::function<void(api::call&, broker::group_details)> done) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  std::string id = c->params["consumer_group_id"];
  c->broker().groups().describe_group(id, [c, id, done = std::move(done)](broker::result<broker::group_details> r) {
    c->later([r = std::move(r), id, done](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      if (r->description.state == group::group_state::dead) {
        return call.fail(404, ec::group_not_found, "consumer group '" + id + "' not found");
      }
      done(call, *r);
    });
  });
}

void v3_get_group(const call_ptr& c) {
  with_group(c, [](api::call& call, broker::group_details d) {
    group::group_listing g{d.description.group_id, d.description.state, d.description.members.size()};
    call.respond_json(200, group_json(call, g, d));
  });
}

/// The base URL of group `d`'s v3 resources.
std::string group_url(api::call& call, const broker::group_details& d) {
  return call.base_url + "/v3/clusters/" + call.broker().config().cluster_id + "/consumer-groups/" +
         percent_encode_segment(d.description.group_id);
}

json consumer_json(api::call& call, const broker::group_details& d, const group::member_description& m) {
  json assignments = json::array();
  for (const auto& tp : m.owned) assignments.push_back({{"topic_name", tp.topic}, {"partition_id", tp.partition.value()}});
  return json{{"kind", "KafkaConsumer"},
              {"metadata", {{"self", group_url(call, d) + "/consumers/" + percent_encode_segment(m.member_id)}}},
              {"cluster_id", call.broker().config().cluster_id},
              {"consumer_group_id", d.description.group_id},
              {"consumer_id", m.member_id},
              {"instance_id", m.group_instance_id ? json(*m.group_instance_id) : json(nullptr)},
              {"client_id", m.client_name},
              {"generation", m.generation.value()},
              {"assignments", assignments},
              {"pending_assignment", partitions_json(m.target)}};
}

void v3_group_consumers(const call_ptr& c) {
  with_group(c, [](api::call& call, broker::group_details d) {
    json data = json::array();
    for (const auto& m : d.description.members) data.push_back(consumer_json(call, d, m));
    call.respond_json(200, list_json("KafkaConsumerList", group_url(call, d) + "/consumers", data));
  });
}

void v3_group_consumer(const call_ptr& c) {
  with_group(c, [](api::call& call, broker::group_details d) {
    const std::string& id = call.params["consumer_id"];
    for (const auto& m : d.description.members) {
      if (m.member_id == id) return call.respond_json(200, consumer_json(call, d, m));
    }
    call.fail(404, ec::consumer_instance_not_found,
              "consumer '" + id + "' is not a member of group '" + d.description.group_id + "'");
  });
}

/// Lags of a group with the owner of each partition, then `done`.
void with_lags(const call_ptr& c, std::function<void(api::call&, broker::group_details, std::vector<group::partition_lag>)> done) {
  with_group(c, [done = std::move(done)](api::call& call, broker::group_details d) {
    auto self = call.shared_from_this();
    call.broker().groups().group_lag(d.description.group_id, [self, d, done](broker::result<std::vector<group::partition_lag>> r) {
      self->later([r = std::move(r), d, done](api::call& call2) {
        if (!r.ok() && r.error().code != broker::errc::group_id_not_found) return call2.fail(to_api_error(r.error()));
        done(call2, d, r.ok() ? *r : std::vector<group::partition_lag>{});
      });
    });
  });
}

std::string owner_of(const broker::group_details& d, const model::topic_partition& tp) {
  for (const auto& m : d.description.members) {
    if (m.owned.contains(tp)) return m.member_id;
  }
  return "";
}

json lag_json(api::call& call, const broker::group_details& d, const group::partition_lag& l) {
  std::string owner = owner_of(d, l.partition);
  return json{{"kind", "KafkaConsumerLag"},
              {"metadata", {{"self", group_url(call, d) + "/lags/" + percent_encode_segment(l.partition.topic) +
                                         "/partitions/" + std::to_string(l.partition.partition.value())}}},
              {"cluster_id", call.broker().config().cluster_id},
              {"consumer_group_id", d.description.group_id},
              {"topic_name", l.partition.topic},
              {"partition_id", l.partition.partition.value()},
              {"current_offset", l.committed ? json(l.committed->value()) : json(nullptr)},
              {"log_end_offset", l.high_watermark.value()},
              {"lag", l.lag ? json(*l.lag) : json(nullptr)},
              {"consumer_id", owner.empty() ? json(nullptr) : json(owner)}};
}

void v3_group_lags(const call_ptr& c) {
  with_lags(c, [](api::call& call, broker::group_details d, std::vector<group::partition_lag> lags) {
    json data = json::array();
    for (const auto& l : lags) data.push_back(lag_json(call, d, l));
    call.respond_json(200, list_json("KafkaConsumerLagList", group_url(call, d) + "/lags", data));
  });
}

void v3_group_partition_lag(const call_ptr& c) {
  auto p = c->path_partition("partition_id");
  if (!p) return;
  with_lags(c, [p = *p](api::call& call, broker::group_details d, std::vector<group::partition_lag> lags) {
    const std::string& topic = call.params["topic_name"];
    for (const auto& l : lags) {
      if (l.partition.topic == topic && l.partition.partition.value() == p) return call.respond_json(200, lag_json(call, d, l));
    }
    call.fail(404, ec::partition_not_found, "group '" + d.description.group_id + "' has no lag for partition " +
                                                std::to_string(p) + " of topic '" + topic + "' (nothing committed or owned there)");
  });
}

void v3_group_lag_summary(const call_ptr& c) {
  with_lags(c, [](api::call& call, broker::group_details d, std::vector<group::partition_lag> lags) {
    const std::string& cluster = call.broker().config().cluster_id;
    int64_t total = 0;
    const group::partition_lag* max = nullptr;
    for (const auto& l : lags) {
      total += l.lag.value_or(0);
      if (l.lag && (!max || *l.lag > *max->lag)) max = &l;
    }
    json j = {{"kind", "KafkaConsumerGroupLagSummary"},
              {"cluster_id", cluster},
              {"consumer_group_id", d.description.group_id},
              {"total_lag", total},
              {"max_lag", max ? *max->lag : 0},
              {"max_lag_topic_name", max ? json(max->partition.topic) : json(nullptr)},
              {"max_lag_partition_id", max ? json(max->partition.partition.value()) : json(nullptr)},
              {"max_lag_consumer_id", max && !owner_of(d, max->partition).empty() ? json(owner_of(d, max->partition)) : json(nullptr)}};
    call.respond_json(200, j);
  });
}

/// GET .../consumer-groups/{g}/lag-history: the total lag the broker sampled every
/// lag_history_interval_ms (broker/groups.h), oldest first; in memory, so empty after a restart.
void v3_group_lag_history(const call_ptr& c) {
  with_group(c, [](api::call& call, broker::group_details d) {
    std::string id = d.description.group_id;
    call.broker().groups().lag_history(id, [self = call.shared_from_this(), id](broker::result<std::vector<broker::lag_sample>> r) {
      self->later([r = std::move(r), id](api::call& call2) {
        if (!r.ok()) return call2.fail(to_api_error(r.error()));
        const std::string& cluster = call2.broker().config().cluster_id;
        json data = json::array();
        for (const auto& s : *r) data.push_back({{"timestamp", s.timestamp_ms}, {"total_lag", s.total_lag}});
        call2.respond_json(200, {{"kind", "KafkaConsumerGroupLagHistory"},
                                 {"metadata", {{"self", call2.base_url + "/v3/clusters/" + cluster + "/consumer-groups/" + percent_encode_segment(id) + "/lag-history"}}},
                                 {"cluster_id", cluster},
                                 {"consumer_group_id", id},
                                 {"interval_ms", broker::lag_history_interval_ms},
                                 {"samples_max", broker::lag_history_samples_max},
                                 {"data", data}});
      });
    });
  });
}

void v3_delete_group(const call_ptr& c) {
  if (!c->check_cluster()) return;
  c->broker().groups().delete_group(c->params["consumer_group_id"], answer_no_content(c));
}

/// POST .../consumer-groups/{g}/offsets:reset {"to": earliest|latest|timestamp|offset|shift,
/// "value": N, "timestamp": ms or ISO-8601, "topics": [...], "dry_run": true (default)}.
void v3_reset_group_offsets(const call_ptr& c) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  auto body = consumer_body(c);
  if (!body) return;
  if (!body->is_object()) return c->fail(422, ec::unprocessable, "a body with \"to\" is required");
  broker::reset_offsets_request req;
  req.group_id = c->params["consumer_group_id"];
  auto to = setting_text(*body, "to").value_or("");
  // A 64-bit integer: nlohmann's get<int64_t>() would wrap 2^63 (parsed unsigned) to -2^63.
  auto value_of = [&](const char* name) -> std::optional<int64_t> {
    if (!body->contains(name) || !(*body)[name].is_number_integer()) return std::nullopt;
    const json& v = (*body)[name];
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) return std::nullopt;
    return v.get<int64_t>();
  };
  if (to == "earliest") {
    req.spec.kind = group::reset_kind::to_earliest;
  } else if (to == "latest") {
    req.spec.kind = group::reset_kind::to_latest;
  } else if (to == "offset" || to == "shift") {
    auto v = value_of("value");
    if (!v) return c->fail(422, ec::unprocessable, "value (a 64-bit integer) is required with to=" + to);
    req.spec.kind = to == "offset" ? group::reset_kind::to_offset : group::reset_kind::shift_by;
    req.spec.value = *v;
  } else if (to == "timestamp") {
    req.spec.kind = group::reset_kind::to_timestamp;
    if (auto ms = value_of("timestamp")) {
      req.timestamp_ms = *ms;
    } else if (auto text = setting_text(*body, "timestamp"); text && parse_iso8601_ms(*text)) {
      req.timestamp_ms = *parse_iso8601_ms(*text);
    } else {
      return c->fail(422, ec::unprocessable, "timestamp (ms since the epoch or ISO-8601) is required with to=timestamp");
    }
  } else {
    return c->fail(422, ec::unprocessable, "to must be earliest, latest, timestamp, offset or shift");
  }
  if (body->contains("topics")) {
    if (!(*body)["topics"].is_array()) return c->fail(422, ec::unprocessable, "topics must be an array of strings");
    for (const auto& t : (*body)["topics"]) {
      if (!t.is_string()) return c->fail(422, ec::unprocessable, "topics must be an array of strings");
      req.topics.push_back(t.get<std::string>());
    }
  }
  bool dry = !(body->contains("dry_run") && (*body)["dry_run"].is_boolean() && !(*body)["dry_run"].get<bool>());
  req.mode = dry ? group::dry_run::yes : group::dry_run::no;
  c->broker().groups().reset_offsets(std::move(req), [c, dry](broker::result<group::partition_map<model::offset>> r) {
    c->later([r = std::move(r), dry](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      json offsets = json::array();
      for (const auto& [tp, o] : *r) {
        offsets.push_back({{"topic_name", tp.topic}, {"partition_id", tp.partition.value()}, {"offset", o.value()}});
      }
      call.respond_json(200, {{"dry_run", dry}, {"offsets", offsets}});
    });
  });
}

// -- the browser console (issue 6)

/// Content-Security-Policy of the console's pages: its own scripts, styles and API only (the
/// WebSocket is same-origin, which 'self' covers), and no framing (clickjacking).
constexpr const char* console_csp =
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

/// GET|HEAD /console, /console/ and /console/{file}: the console's files, embedded at build time
/// (web-console/embed_console.py); /console is index.html, which loads the rest by absolute URL.
/// Cache-Control no-cache with a strong ETag: the browser revalidates every load and gets 304
/// while the bytes are unchanged, so a new binary's console shows at once. Unknown files: 404.
void console_get(const call_ptr& c) {
  auto it = c->params.find("file");
  std::string name = it == c->params.end() ? "index.html" : it->second;
  auto files = console_files();
  auto f = std::find_if(files.begin(), files.end(), [&](const console_file& e) { return e.name == name; });
  if (f == files.end()) {
    return c->fail(404, ec::not_found, "no console file \"" + name + "\"; the console starts at /console");
  }
  http_response r;
  r.headers.emplace_back("ETag", std::string(f->etag));
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (f->content_type.starts_with("text/html")) r.headers.emplace_back("Content-Security-Policy", console_csp);
  if (etag_matches(c->request.if_none_match, f->etag)) {
    r.status = 304;
    r.content_type.clear();
    return c->respond(std::move(r));
  }
  r.content_type = std::string(f->content_type);
  r.body = std::string(f->bytes);
  c->respond(std::move(r));
}

struct route {
  const char* method;
  const char* pattern;
  handler fn;
};

const std::vector<route>& route_table() {
  static const std::vector<route> table = {
      {"GET", "/v1/health", health},
      {"GET", "/metrics", get_metrics},
      {"GET", "/v3/clusters", v3_list_clusters},
      {"GET", "/v3/clusters/{cluster_id}", v3_get_cluster},
      {"GET", "/v3/clusters/{cluster_id}/brokers", v3_list_brokers},
      {"GET", "/v3/clusters/{cluster_id}/brokers/{broker_id}", v3_get_broker},
      {"GET", "/v3/clusters/{cluster_id}/topics", v3_list_topics},
      {"POST", "/v3/clusters/{cluster_id}/topics", v3_create_topic},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_get_topic},
      {"PATCH", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_patch_topic},
      {"DELETE", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_delete_topic},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs", v3_list_configs},
      {"POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs:alter", v3_alter_configs},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", v3_get_config},
      {"PUT", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", v3_set_config},
      {"DELETE", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", v3_reset_config},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions", v3_list_partitions},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}", v3_get_partition},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/replicas", v3_list_replicas},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/replicas/{broker_id}", v3_get_replica},
      {"POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/records", v3_produce},
      {"GET", "/topics", v2_list_topics},
      {"GET", "/topics/{topic}", v2_get_topic},
      {"POST", "/topics/{topic}", v2_produce_topic},
      {"GET", "/topics/{topic}/partitions", v2_list_partitions},
      {"GET", "/topics/{topic}/partitions/{partition}", v2_get_partition},
      {"POST", "/topics/{topic}/partitions/{partition}", v2_produce_partition},
      {"GET", "/topics/{topic}/partitions/{partition}/offsets", v2_offsets},
      {"GET", "/topics/{topic}/partitions/{partition}/records", fetch_records},
      {"GET", "/brokers", v2_brokers},
      {"POST", "/consumers/{group}", v2_create_consumer},
      {"DELETE", "/consumers/{group}/instances/{instance}", v2_delete_consumer},
      {"POST", "/consumers/{group}/instances/{instance}/subscription", v2_subscribe},
      {"GET", "/consumers/{group}/instances/{instance}/subscription", v2_get_subscription},
      {"DELETE", "/consumers/{group}/instances/{instance}/subscription", v2_unsubscribe},
      {"POST", "/consumers/{group}/instances/{instance}/assignments", v2_assign},
      {"GET", "/consumers/{group}/instances/{instance}/assignments", v2_get_assignments},
      {"POST", "/consumers/{group}/instances/{instance}/positions", v2_seek},
      {"POST", "/consumers/{group}/instances/{instance}/positions/beginning", v2_seek_beginning},
      {"POST", "/consumers/{group}/instances/{instance}/positions/end", v2_seek_end},
      {"GET", "/consumers/{group}/instances/{instance}/records", v2_consumer_records},
      {"POST", "/consumers/{group}/instances/{instance}/offsets", v2_commit_offsets},
      {"GET", "/consumers/{group}/instances/{instance}/offsets", v2_committed_offsets},
      {"GET", "/v3/clusters/{cluster_id}/consumer-groups", v3_list_groups},
      {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}", v3_get_group},
      {"DELETE", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}", v3_delete_group},
      {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/consumers", v3_group_consumers},
      {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lag-summary", v3_group_lag_summary},
      {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/consumers/{consumer_id}", v3_group_consumer},
      {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lags", v3_group_lags},
      {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lags/{topic_name}/partitions/{partition_id}", v3_group_partition_lag},
      {"GET", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lag-history", v3_group_lag_history},
      {"POST", "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/offsets:reset", v3_reset_group_offsets},
      {"GET", "/console", console_get},
      {"HEAD", "/console", console_get},
      {"GET", "/console/{file}", console_get},
      {"HEAD", "/console/{file}", console_get},
  };
  return table;
}

}  // namespace

api::api(broker::broker& broker, metrics& metrics, api_options options)
    : broker_(broker), metrics_(metrics), options_(std::move(options)) {}

std::vector<std::string> api::routes() {
  std::vector<std::string> out;
  for (const auto& r : route_table()) out.push_back(std::string(r.method) + " " + r.pattern);
  return out;
}

void api::handle(http_request request, std::shared_ptr<response_sink> sink) {
  auto c = std::make_shared<call>();
  c->self = this;
  c->sink = std::move(sink);
  c->request = std::move(request);
  c->base_url = "http://" + (c->request.host.empty() ? std::string("localhost") : c->request.host);
  auto [path, query_text] = split_target(c->request.target);
  if (!percent_decode(path, false)) {
    return c->fail(400, ec::bad_request, "malformed percent-escape in the path (RFC 3986 needs '%' and two hex digits)");
  }
  auto query = parse_query(query_text);
  if (!query) return c->fail(400, ec::bad_request, "malformed percent-escape in the query string");
  c->query = std::move(*query);

  std::vector<std::string> allowed;
  for (const auto& r : route_table()) {
    std::map<std::string, std::string> params;
    if (!match_path(r.pattern, path, params)) continue;
    allowed.emplace_back(r.method);
    if (c->request.method != r.method) continue;
    c->route = std::string(r.method) + " " + r.pattern;
    c->params = std::move(params);
    r.fn(c);
    return;
  }
  if (c->request.method == "OPTIONS") {
    // CORS preflight (Fetch standard): which methods and headers a browser may use here.
    c->route = "OPTIONS *";
    std::string methods = "OPTIONS";
    for (const auto& m : allowed) methods += ", " + m;
    if (allowed.empty()) methods = "GET, POST, PATCH, DELETE, OPTIONS";
    http_response r;
    r.status = 204;
    r.content_type.clear();
    r.headers.emplace_back("Access-Control-Allow-Methods", methods);
    r.headers.emplace_back("Access-Control-Allow-Headers", c->request.access_control_request_headers.empty()
                                                               ? "Content-Type, Accept"
                                                               : c->request.access_control_request_headers);
    r.headers.emplace_back("Access-Control-Max-Age", "600");
    return c->respond(std::move(r));
  }
  if (!allowed.empty()) {
    std::string allow;
    for (const auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    auto r = error_response(405, ec::method_not_allowed,
                            "method " + c->request.method + " is not allowed on " + std::string(path) + "; allowed: " + allow);
    r.headers.emplace_back("Allow", allow + ", OPTIONS");
    return c->respond(std::move(r));
  }
  c->fail(404, ec::not_found, "no route for " + c->request.method + " " + std::string(path));
}

}  // namespace ringlog::gateway
