#include "api.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>

#include "base64.h"
#include "errors.h"
#include "http_util.h"

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
const std::vector<std::string> metrics_offers = {"text/plain", "application/openmetrics-text"};

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

  void add_cors(http_response& r) const {
    r.headers.emplace_back("Access-Control-Allow-Origin", request.origin.empty() ? "*" : request.origin);
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

  bool topic_exists(const std::string& topic) {
    auto topics = broker().list_topics(true);
    return std::find(topics.begin(), topics.end(), topic) != topics.end();
  }

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
    r.body = call.self->metrics_registry().render(topics);
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
  describe_all(c, false, [](api::call& call, std::vector<broker::topic_description> topics) {
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
      http_response resp;
      resp.status = 204;
      resp.content_type.clear();
      call.respond(std::move(resp));
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

void v3_alter_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto req = parse_alter_configs(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  std::string topic = c->params["topic_name"];
  c->broker().alter_topic_configs(topic, std::move(req->changes), req->validate_only,
                                  [c, topic](broker::result<broker::topic_description> r) {
                                    c->later([r = std::move(r), topic](api::call& call) {
                                      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, topic);
                                      http_response resp;
                                      resp.status = 204;
                                      resp.content_type.clear();
                                      call.respond(std::move(resp));
                                    });
                                  });
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

void v3_get_partition(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto p = c->path_partition("partition_id");
  if (!p) return;
  with_topic(c, "topic_name", error_scope::partition, [p = *p](api::call& call, broker::topic_description t) {
    const auto* d = find_partition(t, p);
    if (!d) return call.fail(404, ec::partition_not_found, "partition " + std::to_string(p) + " of topic \"" + t.name +
                                                                 "\" not found (it has " +
                                                                 std::to_string(t.partitions.size()) + " partitions)");
    call.respond_json(200, partition_json(call.base_url, call.params["cluster_id"], t.name, *d));
  });
}

// -- v3 produce

/// Writes the reports of a v3 stream in request order as their batches complete.
struct v3_stream {
  std::vector<std::optional<std::string>> reports;
  size_t next_to_write = 0;

  void flush(api::call& call) {
    while (next_to_write < reports.size() && reports[next_to_write]) {
      call.sink->write_chunk(std::move(*reports[next_to_write]) + "\n");
      reports[next_to_write].reset();
      ++next_to_write;
    }
    if (next_to_write == reports.size()) call.end_stream();
  }
};

void v3_produce(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto acks = c->query_acks();
  if (!acks) return;
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

  // Streaming: one report per record, in order, each written as soon as it and all before it are done.
  auto stream = std::make_shared<v3_stream>();
  stream->reports.resize(items->size());
  http_response head;
  head.content_type = "application/json";
  c->begin_stream(std::move(head));
  struct batch {
    std::vector<size_t> indexes;
    std::vector<v3_record> records;
  };
  std::vector<batch> batches(1);
  for (size_t i = 0; i < items->size(); ++i) {
    v3_item& item = (*items)[i];
    if (item.failure) {
      stream->reports[i] = error_json(*item.failure);
      continue;
    }
    if (batches.back().records.size() >= c->self->options().stream_batch_records_max) batches.emplace_back();
    batches.back().indexes.push_back(i);
    batches.back().records.push_back(std::move(*item.record));
  }
  for (batch& b : batches) {
    if (b.records.empty()) continue;
    broker::produce_request req{topic, {}, *acks, 30000};
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
    if (!d) return call.fail(404, ec::partition_not_found, "partition " + std::to_string(p) + " of topic \"" + t.name +
                                                                 "\" not found (it has " +
                                                                 std::to_string(t.partitions.size()) + " partitions)");
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
      json offsets = json::array();
      uint64_t ok_records = 0;
      for (const auto& result : r->results) {
        if (result.failure) {
          // v2 per-record codes: 1 = non-retriable Kafka error, 2 = retriable (REST Proxy v2 reference).
          offsets.push_back({{"partition", result.partition.value() >= 0 ? json(result.partition.value()) : json(nullptr)},
                             {"offset", nullptr},
                             {"error_code", is_retriable(result.failure->code) ? 2 : 1},
                             {"error", result.failure->message}});
        } else {
          ++ok_records;
          offsets.push_back({{"partition", result.partition.value()},
                             {"offset", result.record_offset.value()},
                             {"error_code", nullptr},
                             {"error", nullptr}});
        }
      }
      if (ok_records > 0) call.self->metrics_registry().add_bytes_in(topic, ok_records, bytes);
      call.respond_json(200, {{"offsets", offsets}, {"key_schema_id", nullptr}, {"value_schema_id", nullptr}}, v2_type);
    });
  });
}

void v2_produce_topic(const call_ptr& c) { v2_produce_to(c, std::nullopt); }

void v2_produce_partition(const call_ptr& c) {
  auto p = c->path_partition("partition");
  if (!p) return;
  // The REST Proxy answers a missing partition with 404/40402 for the whole request.
  with_topic(c, "topic", error_scope::partition, [c, p = *p](api::call& call, broker::topic_description t) {
    if (!find_partition(t, p)) {
      return call.fail(404, ec::partition_not_found, "partition " + std::to_string(p) + " of topic \"" + t.name +
                                                         "\" not found (it has " + std::to_string(t.partitions.size()) +
                                                         " partitions)");
    }
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

/// Appends `bytes` as embedded JSON (json format) or base64 (binary); false when not JSON.
bool append_payload(std::string& out, const std::optional<model::bytes>& bytes, bool as_json) {
  if (!bytes) {
    out += "null";
    return true;
  }
  std::string text = model::to_string(*bytes);
  if (as_json) {
    if (!json::accept(text)) return false;
    out += text;
  } else {
    out += '"';
    out += base64_encode(*bytes);
    out += '"';
  }
  return true;
}

void fetch_records(const call_ptr& c) {
  auto type = c->accept(records_offers);
  if (!type) return;
  auto p = c->path_partition("partition");
  if (!p) return;
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
      std::string out = "[";
      std::string topic_json_text = json(topic).dump(-1, ' ', false, json::error_handler_t::replace);
      uint64_t bytes = 0;
      for (size_t i = 0; i < r->records.size(); ++i) {
        const model::record& rec = r->records[i];
        bytes += record_bytes(rec);
        if (i > 0) out += ',';
        out += "{\"topic\":" + topic_json_text + ",\"partition\":" + std::to_string(partition) +
               ",\"offset\":" + std::to_string(rec.record_offset.value()) +
               ",\"timestamp\":" + std::to_string(rec.timestamp) + ",\"key\":";
        bool ok = append_payload(out, rec.key, as_json);
        out += ",\"value\":";
        ok = ok && append_payload(out, rec.value, as_json);
        if (!ok) {
          return call.fail(406, ec::not_acceptable,
                           "record at offset " + std::to_string(rec.record_offset.value()) +
                               " is not JSON; read it with Accept: " + v2_binary_type);
        }
        out += ",\"headers\":[";
        for (size_t h = 0; h < rec.headers.size(); ++h) {
          if (h > 0) out += ',';
          out += "{\"key\":" + json(rec.headers[h].key).dump(-1, ' ', false, json::error_handler_t::replace) + ",\"value\":";
          append_payload(out, rec.headers[h].value, false);
          out += '}';
        }
        out += "]}";
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
      {"GET", "/v3/clusters/{cluster_id}/topics", v3_list_topics},
      {"POST", "/v3/clusters/{cluster_id}/topics", v3_create_topic},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_get_topic},
      {"PATCH", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_patch_topic},
      {"DELETE", "/v3/clusters/{cluster_id}/topics/{topic_name}", v3_delete_topic},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs", v3_list_configs},
      {"POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs:alter", v3_alter_configs},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/configs/{name}", v3_get_config},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions", v3_list_partitions},
      {"GET", "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}", v3_get_partition},
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
