// v3 broker configs (Confluent REST Proxy v3, Kafka's dynamic broker configs of KIP-226): one
// broker's configs (brokers/{broker_id}/configs), every broker's (brokers/-/configs), and the
// cluster-wide dynamic defaults (broker-configs). Values set here are ConfigRecords in the
// metadata log (broker::alter_broker_configs): they change the broker at once and survive restarts.

#include "api_routes.h"
#include "request_parsing.h"
#include "json_fields.h"

namespace ringlog::gateway::routes {
namespace {

json synonyms_json(const broker::broker_config_entry& e) {
  json out = json::array();
  for (const auto& s : e.synonyms) {
    out.push_back({{"name", s.name}, {"value", s.value}, {"source", std::string(broker::to_string(s.source))}});
  }
  return out;
}

/// Confluent's KafkaBrokerConfig.
json broker_config_json(const std::string& base, const std::string& cluster, int32_t broker_id,
                        const broker::broker_config_entry& e) {
  const std::string id = std::to_string(broker_id);
  return json{{"kind", "KafkaBrokerConfig"},
              {"metadata", {{"self", base + "/v3/clusters/" + percent_encode_segment(cluster) + "/brokers/" + id + "/configs/" +
                                         percent_encode_segment(e.name)},
                            {"resource_name", "crn:///kafka=" + cluster + "/broker=" + id + "/config=" + e.name}}},
              {"cluster_id", cluster},
              {"broker_id", broker_id},
              {"name", e.name},
              {"value", e.value},
              {"is_default", e.source == broker::config_source::default_config},
              {"is_read_only", e.is_read_only},
              {"is_sensitive", e.is_sensitive},
              {"source", std::string(broker::to_string(e.source))},
              {"synonyms", synonyms_json(e)}};
}

/// Confluent's KafkaClusterConfig (config_type BROKER): a cluster-wide dynamic default.
json cluster_config_json(const std::string& base, const std::string& cluster, const broker::broker_config_entry& e) {
  return json{{"kind", "KafkaClusterConfig"},
              {"metadata", {{"self", base + "/v3/clusters/" + percent_encode_segment(cluster) + "/broker-configs/" + percent_encode_segment(e.name)},
                            {"resource_name", "crn:///kafka=" + cluster + "/broker-config=" + e.name}}},
              {"cluster_id", cluster},
              {"config_type", "BROKER"},
              {"name", e.name},
              {"value", e.value},
              {"is_default", false},
              {"is_read_only", false},
              {"is_sensitive", e.is_sensitive},
              {"source", std::string(broker::to_string(e.source))},
              {"synonyms", synonyms_json(e)}};
}

/// The configs of `node` (a broker or cluster_default_broker); answers 404 for a node the broker
/// does not know and returns nullopt.
std::optional<std::vector<broker::broker_config_entry>> configs_of(api::call& call, int32_t node) {
  auto r = call.broker().admin().describe_broker_configs(node);
  if (!r.ok()) {
    call.fail(404, ec::not_found, r.error().message);
    return std::nullopt;
  }
  return std::move(r).value();
}

/// Applies `changes` to `node` (a broker or cluster_default_broker) and answers 204. A name that is
/// not a broker config is 404 for the whole request (as GET answers it) and nothing changes; a
/// read-only config or a bad value is 400 naming it.
void change_broker_configs(const call_ptr& c, int32_t node, std::map<std::string, std::optional<std::string>> changes,
                           bool validate_only) {
  auto known = c->broker().admin().describe_broker_configs(node == broker::cluster_default_broker ? c->broker().config().node_id : node);
  if (!known.ok()) return c->fail(404, ec::not_found, known.error().message);
  for (const auto& [name, unused] : changes) {
    const bool found = std::any_of(known->begin(), known->end(), [&name](const auto& e) { return e.name == name; });
    if (!found) return c->fail(404, ec::not_found, "broker config \"" + name + "\" not found");
  }
  c->broker().admin().alter_broker_configs(node, std::move(changes), validate_only, answer_no_content(c));
}

/// The body of a single-config PUT: {"value": "..."}. Answers 422/400 and returns nullopt when bad.
std::optional<std::string> put_value(const call_ptr& c) {
  if (is_blank(c->request.body)) {
    c->fail(empty_body_error("{\"value\": \"...\"}"));
    return std::nullopt;
  }
  api_error refusal;
  json body = parse_json(c->request.body, "request body", refusal);
  if (body.is_discarded()) {
    c->fail(refusal);
    return std::nullopt;
  }
  if (!body.is_object() || !body.contains("value") || !body["value"].is_string()) {
    c->fail(422, ec::unprocessable, "the body must be {\"value\": \"...\"} with a string value");
    return std::nullopt;
  }
  for (const auto& [name, unused] : body.items()) {
    if (name != "value") {
      c->fail(422, ec::unprocessable, "unknown field \"" + name + "\"; the body takes value");
      return std::nullopt;
    }
  }
  return body["value"].get<std::string>();
}

/// The {broker_id} of a per-broker route; 404 answered when it is no broker.
std::optional<int32_t> broker_node(const call_ptr& c) {
  auto b = path_broker(*c);
  if (!b) return std::nullopt;
  return b->node_id;
}

}  // namespace

void v3_list_broker_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto node = broker_node(c);
  if (!node) return;
  auto configs = configs_of(*c, *node);
  if (!configs) return;
  const std::string& cluster = c->params["cluster_id"];
  json data = json::array();
  for (const auto& e : *configs) data.push_back(broker_config_json(c->base_url, cluster, *node, e));
  c->respond_json(200, list_json("KafkaBrokerConfigList", c->base_url + "/v3/clusters/" + percent_encode_segment(cluster) +
                                                              "/brokers/" + std::to_string(*node) + "/configs",
                                 data));
}

void v3_list_all_broker_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  const std::string& cluster = c->params["cluster_id"];
  json data = json::array();
  for (const auto& b : c->broker().admin().list_brokers()) {
    auto configs = c->broker().admin().describe_broker_configs(b.node_id);
    if (!configs.ok()) continue;   // a broker that left meanwhile
    for (const auto& e : *configs) data.push_back(broker_config_json(c->base_url, cluster, b.node_id, e));
  }
  c->respond_json(200, list_json("KafkaBrokerConfigList",
                                 c->base_url + "/v3/clusters/" + percent_encode_segment(cluster) + "/brokers/-/configs", data));
}

void v3_get_broker_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto node = broker_node(c);
  if (!node) return;
  auto configs = configs_of(*c, *node);
  if (!configs) return;
  const std::string& name = c->params["name"];
  for (const auto& e : *configs) {
    if (e.name == name) return c->respond_json(200, broker_config_json(c->base_url, c->params["cluster_id"], *node, e));
  }
  c->fail(404, ec::not_found, "broker config \"" + name + "\" not found for broker " + std::to_string(*node));
}

void v3_set_broker_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto node = broker_node(c);
  if (!node) return;
  auto value = put_value(c);
  if (!value) return;
  change_broker_configs(c, *node, {{c->params["name"], *value}}, false);
}

void v3_reset_broker_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto node = broker_node(c);
  if (!node) return;
  change_broker_configs(c, *node, {{c->params["name"], std::nullopt}}, false);
}

void v3_alter_broker_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto node = broker_node(c);
  if (!node) return;
  auto req = parse_alter_configs(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  change_broker_configs(c, *node, std::move(req->changes), req->validate_only);
}

void v3_list_cluster_broker_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto configs = configs_of(*c, broker::cluster_default_broker);
  if (!configs) return;
  const std::string& cluster = c->params["cluster_id"];
  json data = json::array();
  for (const auto& e : *configs) data.push_back(cluster_config_json(c->base_url, cluster, e));
  c->respond_json(200, list_json("KafkaClusterConfigList",
                                 c->base_url + "/v3/clusters/" + percent_encode_segment(cluster) + "/broker-configs", data));
}

/// GET .../broker-configs/{name}: 404 until a cluster-wide value is set (Confluent).
void v3_get_cluster_broker_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto configs = configs_of(*c, broker::cluster_default_broker);
  if (!configs) return;
  const std::string& name = c->params["name"];
  for (const auto& e : *configs) {
    if (e.name == name) return c->respond_json(200, cluster_config_json(c->base_url, c->params["cluster_id"], e));
  }
  c->fail(404, ec::not_found, "no cluster-wide value of broker config \"" + name + "\" is set");
}

void v3_set_cluster_broker_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto value = put_value(c);
  if (!value) return;
  change_broker_configs(c, broker::cluster_default_broker, {{c->params["name"], *value}}, false);
}

void v3_reset_cluster_broker_config(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  change_broker_configs(c, broker::cluster_default_broker, {{c->params["name"], std::nullopt}}, false);
}

void v3_alter_cluster_broker_configs(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  auto req = parse_alter_configs(c->request.body);
  if (!req.ok()) return c->fail(req.error());
  change_broker_configs(c, broker::cluster_default_broker, std::move(req->changes), req->validate_only);
}

}  // namespace ringlog::gateway::routes
