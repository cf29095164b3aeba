// v2 topic metadata, produce and partition offsets (Confluent REST Proxy v2).

#include "api_routes.h"

#include <limits>
#include "request_parsing.h"

namespace ringlog::gateway::routes {

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

// -- v2

void v2_list_topics(const call_ptr& c) {
  if (!c->accept(v2_offers)) return;
  auto names = c->broker().admin().list_topics(false);
  keep_authorized(*c, security::resource_type::topic, security::acl_operation::describe, names);
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
  for (const auto& b : c->broker().admin().list_brokers()) ids.push_back(b.node_id);
  c->respond_json(200, {{"brokers", ids}}, v2_type);
}

/// The body's Content-Type names its embedded format, as in Confluent's REST Proxy v2, whose
/// produce resources consume only the application/vnd.kafka.{format}.v2+json types: a bare
/// application/json names none and is 415 there (here it was read as the json format, so a
/// client that meant binary stored its base64 values as quoted JSON text). v3 produce takes
/// application/json.
void v2_produce_to(const call_ptr& c, std::optional<int32_t> partition) {
  auto type = c->content_type_in({v2_binary_type, v2_json_type});
  if (!type) return;
  if (!c->accept(v2_offers)) return;
  auto acks = c->query_acks();
  if (!acks) return;
  embedded_format format = *type == v2_binary_type ? embedded_format::binary : embedded_format::json;
  auto records = parse_v2_produce(c->request.body, format, partition.has_value(), c->limits());
  if (!records.ok()) return c->fail(records.error());
  std::string topic = c->params["topic"];
  uint64_t bytes = 0;
  for (auto& r : *records) {
    if (partition) r.partition = model::partition_id(*partition);
    bytes += record_bytes(r);
  }
  broker::produce_request req{topic, std::move(records).value(), *acks, 30000, std::nullopt, c->principal(), c->peer_ip()};
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
  // A partition this node's image holds is produced to at once: describing the whole topic (its
  // configs and their synonyms) for every request was a tenth of the produce path's CPU (issue 32).
  if (c->broker().admin().check_partition_exists({c->params["topic"], model::partition_id(*p)}).ok()) return v2_produce_to(c, *p);
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
  with_offset_bounds(c, tp, [](api::call& call, int64_t beginning, int64_t end) {
    call.respond_json(200, {{"beginning_offset", beginning}, {"end_offset", end}}, v2_type);
  });
}

}  // namespace ringlog::gateway::routes
