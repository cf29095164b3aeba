// Client quotas over HTTP (issue 31), routes of ours in Confluent v3's style onto the broker's
// DescribeClientQuotas / AlterClientQuotas (Kafka's APIs 48 and 49, KIP-546):
//   GET /v3/clusters/{cluster_id}/client-quotas   KafkaClientQuotaList of the stored entities the
//       query selects: user, client-id, ip = a name (exact), `<default>` (the default entity), or
//       empty (any name or `<default>`: Kafka's "specified"); strict=true drops entities holding
//       a type the query does not name (Kafka's ClientQuotaFilter). No parameter: every entity.
//   PUT /v3/clusters/{cluster_id}/client-quotas   {"entity": {"user": .., "client-id": .., "ip": ..},
//       "quotas": {"producer_byte_rate": 1048576, "consumer_byte_rate": null}, "validate_only": false}:
//       sets each key, removes each null one; answers the entity as it is now stored (200).
// And the gate every byte-quota route passes (admit_quota_client, http_quotas.h).

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "api_routes.h"
#include "json_fields.h"

namespace ringlog::gateway::routes {

namespace {

constexpr std::array<std::string_view, 3> entity_types = {security::quota_entity_user, security::quota_entity_client_id,
                                                          security::quota_entity_ip};

/// The part of `e` (const or not) of entity `type`; nullptr for an unknown type.
template <typename Entity>
auto* part_of(Entity& e, std::string_view type) {
  decltype(&e.user) none = nullptr;
  if (type == security::quota_entity_user) return &e.user;
  if (type == security::quota_entity_client_id) return &e.client_id;
  if (type == security::quota_entity_ip) return &e.ip;
  return none;
}

/// A quota value as JSON: a whole number as an integer (1048576, not 1048576.0).
json quota_value_json(double v) {
  if (std::floor(v) == v && std::fabs(v) < 9.0e15) return json(static_cast<int64_t>(v));
  return json(v);
}

json entity_json(const security::client_quota_entity& e) {
  json out = json::object();
  if (e.user) out[std::string(security::quota_entity_user)] = e.user->to_string();
  if (e.client_id) out[std::string(security::quota_entity_client_id)] = e.client_id->to_string();
  if (e.ip) out[std::string(security::quota_entity_ip)] = e.ip->to_string();
  return out;
}

std::string self_url(const api::call& c, const std::string& cluster, const security::client_quota_entity& e) {
  std::string url = c.base_url + "/v3/clusters/" + cluster + "/client-quotas?";
  const json parts = entity_json(e);
  for (const auto& [type, value] : parts.items()) {
    url += type + "=" + base::percent_encode_segment(value.get<std::string>()) + "&";
  }
  return url + "strict=true";
}

json quota_json(const api::call& c, const std::string& cluster, const broker::client_quota_entry& entry) {
  json quotas = json::object();
  for (const auto& [key, value] : entry.values) quotas[std::string(security::to_string(key))] = quota_value_json(value);
  return json{{"kind", "KafkaClientQuota"},
              {"metadata", {{"self", self_url(c, cluster, entry.entity)}}},
              {"cluster_id", cluster},
              {"entity", entity_json(entry.entity)},
              {"quotas", std::move(quotas)}};
}

/// The query's filter; nullopt after answering 400 naming the bad parameter.
std::optional<security::client_quota_filter> query_filter(api::call& c) {
  security::client_quota_filter f;
  using match = security::client_quota_filter_component::match;
  for (std::string_view type : entity_types) {
    auto it = c.query.find(std::string(type));
    if (it == c.query.end()) continue;
    security::client_quota_filter_component one;
    one.entity_type = std::string(type);
    if (it->second.empty()) {
      one.match_type = match::specified;
    } else if (it->second == security::quota_default_name) {
      one.match_type = match::default_name;
    } else {
      one.match_type = match::exact;
      one.name = it->second;
    }
    f.components.push_back(std::move(one));
  }
  if (auto s = c.query.find("strict"); s != c.query.end()) {
    if (s->second != "true" && s->second != "false") {
      c.fail(400, ec::invalid_request, "query parameter strict must be true or false, got \"" + s->second + "\"");
      return std::nullopt;
    }
    f.strict = s->second == "true";
  }
  if (auto valid = security::validate_client_quota_filter(f); !valid.ok()) {
    c.fail(400, ec::invalid_request, "query: " + valid.error().message);
    return std::nullopt;
  }
  return f;
}

api_error bad_field(const std::string& field, const std::string& why) {
  return {400, ec::invalid_request, field + ": " + why};
}

/// The PUT body's entity.
parsed<security::client_quota_entity> entity_of(const json& body) {
  auto it = body.find("entity");
  if (it == body.end()) return bad_field("entity", "is required: {\"user\": .., \"client-id\": .., \"ip\": ..}");
  if (!it->is_object()) return bad_field("entity", "must be an object");
  security::client_quota_entity entity;
  for (const auto& [type, value] : it->items()) {
    auto* part = part_of(entity, type);
    if (part == nullptr) return bad_field("entity." + type, "unknown entity type (user, client-id or ip)");
    if (!value.is_string()) return bad_field("entity." + type, "must be a string: a name or <default>");
    const auto& name = value.get_ref<const std::string&>();
    *part = name == security::quota_default_name ? security::quota_entity_name::default_name()
                                                 : security::quota_entity_name::named(name);
  }
  return entity;
}

/// The PUT body as one alteration, each value checked as the broker will (validate_client_quota),
/// so that the 400 names the field.
parsed<broker::client_quota_alteration> alteration_of(const json& body) {
  for (const auto& [field, value] : body.items()) {
    if (field != "entity" && field != "quotas" && field != "validate_only") {
      return bad_field(field, "unknown field (entity, quotas, validate_only)");
    }
  }
  auto entity = entity_of(body);
  if (!entity.ok()) return entity.error();
  broker::client_quota_alteration alteration{std::move(entity).value(), {}};
  auto quotas = body.find("quotas");
  if (quotas == body.end()) return bad_field("quotas", "is required: {\"producer_byte_rate\": 1048576, ...}");
  if (!quotas->is_object()) return bad_field("quotas", "must be an object of key: number or null");
  for (const auto& [name, value] : quotas->items()) {
    auto key = security::parse_quota_key(name);
    const std::string field = "quotas." + name;
    if (!key) {
      return bad_field(field, "unknown quota key (producer_byte_rate, consumer_byte_rate, request_percentage, "
                              "controller_mutation_rate, connection_creation_rate)");
    }
    if (!value.is_null() && !value.is_number()) return bad_field(field, "must be a number, or null to remove it");
    std::optional<double> v = value.is_null() ? std::nullopt : std::optional<double>(value.get<double>());
    if (auto valid = security::validate_client_quota(alteration.entity, *key, v.value_or(1)); !valid.ok()) {
      return bad_field(field, valid.error().message);
    }
    alteration.ops[*key] = v;
  }
  return alteration;
}

/// The stored entry of `entity` on this node (empty values when none).
broker::client_quota_entry stored_entry(api::call& c, const security::client_quota_entity& entity) {
  security::client_quota_filter exact;
  exact.strict = true;
  for (std::string_view type : entity_types) {
    const auto* part = part_of(entity, type);
    if (!*part) continue;
    using match = security::client_quota_filter_component::match;
    exact.components.push_back({std::string(type), (*part)->is_default ? match::default_name : match::exact,
                                (*part)->is_default ? std::string() : (*part)->name});
  }
  auto found = c.broker().security().describe_client_quotas(exact);
  if (found.ok() && !found->empty()) return found->front();
  return broker::client_quota_entry{entity, {}};
}

}  // namespace

void v3_list_client_quotas(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto filter = query_filter(*c);
  if (!filter) return;
  auto found = c->broker().security().describe_client_quotas(*filter);
  if (!found.ok()) return c->fail(400, ec::invalid_request, found.error().message);
  const std::string& cluster = c->params.at("cluster_id");
  json data = json::array();
  for (const auto& entry : found.value()) data.push_back(quota_json(*c, cluster, entry));
  c->respond_json(200, list_json("KafkaClientQuotaList", c->base_url + "/v3/clusters/" + cluster + "/client-quotas",
                                 std::move(data)));
}

void v3_alter_client_quotas(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  if (is_blank(c->request.body)) {
    return c->fail(empty_body_error(R"({"entity": {"user": .., "client-id": ..}, "quotas": {"producer_byte_rate": ..}})"));
  }
  api_error refusal;
  const json body = parse_json(c->request.body, "request body", refusal);
  if (body.is_discarded()) return c->fail(refusal);
  if (!body.is_object()) {
    return c->fail(400, ec::bad_request, "the request body must be a JSON object");
  }
  auto alteration = alteration_of(body);
  if (!alteration.ok()) return c->fail(alteration.error());
  bool validate_only = false;
  if (auto v = body.find("validate_only"); v != body.end()) {
    if (!v->is_boolean()) return c->fail(bad_field("validate_only", "must be true or false"));
    validate_only = v->get<bool>();
  }
  auto change = std::move(alteration).value();
  c->audit_change = "client quota " + change.entity.to_string() + (validate_only ? " (validate_only)" : "");
  for (const auto& [key, value] : change.ops) {
    c->audit_change += " " + std::string(security::to_string(key)) + "=" +
                       (value ? fmt::format("{}", *value) : std::string("(removed)"));
  }
  c->broker().security().alter_client_quotas(
      {change}, validate_only,
      [c, change, validate_only](broker::result<std::vector<std::optional<broker::error>>> r) {
        c->later([r = std::move(r), change, validate_only](api::call& call) {
          if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
          if (const auto& one = r.value().at(0)) return call.fail(400, ec::invalid_request, one->message);
          // What is stored now: this node's image may not hold the change yet, so the change is
          // laid over what it holds (with validate_only: what would be stored).
          auto entry = stored_entry(call, change.entity);
          for (const auto& [key, value] : change.ops) {
            if (value) entry.values[key] = *value; else entry.values.erase(key);
          }
          json answer = quota_json(call, call.params.at("cluster_id"), entry);
          answer["validate_only"] = validate_only;
          call.respond_json(200, answer);
        });
      });
}

namespace {

/// Whether a read asks for a stream (NDJSON / SSE) as its route negotiates Accept: the records
/// types first, so a client that accepts anything is answered a plain read.
bool streamed_read(const api::call& c) {
  if (c.request.method != "GET") return false;
  std::vector<std::string> offers = records_offers;
  offers.insert(offers.end(), stream_offers.begin(), stream_offers.end());
  auto pick = negotiate(c.request.accept, offers);
  return pick && (*pick == ndjson_type || *pick == sse_type);
}

}  // namespace

bool admit_quota_client(const call_ptr& c, std::string_view method, std::string_view pattern) {
  // A call another broker passed on is counted here too: quotas are per broker (Kafka's), each
  // broker bounds the traffic it serves, and a passed-on call's headers could be forged by a
  // process on a broker's host (the breaker's t1_quota.py).
  if (c->request.client_id.size() > security::quota_entity_name_bytes_max) {
    c->fail(400, ec::invalid_request, std::string(client_id_header) + " is longer than " +
                                          std::to_string(security::quota_entity_name_bytes_max) + " bytes");
    return false;
  }
  c->client_id = c->request.client_id.empty() ? c->peer_ip() : c->request.client_id;
  c->byte_quota = route_byte_quota(method, pattern);
  if (!c->byte_quota) return true;
  // The sensor's own throttle (shared by every client of the matched entity: a user quota holds
  // whatever X-Client-Id a request names), against the quota in force now: none when no quota
  // matches any more, shorter when it was raised (http_quotas.h).
  const auto key = *c->byte_quota;
  const auto throttle_at = [c, key](int64_t after_ms) {
    return c->broker().security().client_quota_throttle_ms(key, c->principal().name, c->client_id, after_ms);
  };
  const int64_t left_ms = throttle_at(0);
  if (left_ms == 0) return true;
  // A stream read is slowed, never refused (an EventSource takes a 429 as the end): it starts,
  // and the throttle its first chunk counts pauses it (api_streams.cc), as an open stream is.
  if (*c->byte_quota == security::quota_key::consumer_byte_rate && streamed_read(*c)) return true;
  c->byte_quota.reset();   // a refused request counts nothing
  const int64_t wait_s = retry_after_seconds_admitted(left_ms, throttle_at);
  auto r = error_response(429, ec::too_many_requests,
                          "client user=" + c->principal().name + ", client-id=" + c->client_id + " is over its " +
                              std::string(security::to_string(key)) + " quota: throttled for another " +
                              std::to_string(left_ms) + " ms (KIP-219), admitted again in " + std::to_string(wait_s) +
                              " s; retry after Retry-After seconds");
  r.headers.emplace_back("Retry-After", std::to_string(wait_s));
  c->respond(std::move(r));
  return false;
}

}  // namespace ringlog::gateway::routes
