// Confluent REST Proxy v3's ACL routes (issue 30) onto the broker's ACL calls:
//   GET    /v3/clusters/{cluster_id}/acls          KafkaAclList of the ACLs the query selects
//   POST   /v3/clusters/{cluster_id}/acls          one ACL (201)
//   POST   /v3/clusters/{cluster_id}/acls:batch    {"data": [ACLs]} (201)
//   DELETE /v3/clusters/{cluster_id}/acls          deletes what the query selects: KafkaAclList of them
// Query parameters (Kafka's AclBindingFilter): resource_type, resource_name, pattern_type
// (ANY, MATCH, LITERAL, PREFIXED), principal, host, operation, permission; absent = ANY. A DELETE
// must name resource_type, pattern_type, operation and permission (ANY allowed), as Confluent's.

#include "api_routes.h"
#include "request_parsing.h"

namespace ringlog::gateway::routes {

namespace {

json acl_json(const std::string& base_url, const std::string& cluster, const security::acl_binding& a) {
  const std::string self = base_url + "/v3/clusters/" + cluster + "/acls?resource_type=" +
                           std::string(security::to_string(a.resource)) +
                           "&resource_name=" + base::percent_encode_segment(a.resource_name) +
                           "&pattern_type=" + std::string(security::to_string(a.pattern)) +
                           "&principal=" + base::percent_encode_segment(a.principal) +
                           "&host=" + base::percent_encode_segment(a.host) +
                           "&operation=" + std::string(security::to_string(a.operation)) +
                           "&permission=" + std::string(security::to_string(a.permission));
  return json{{"kind", "KafkaAcl"},
              {"metadata", {{"self", self}}},
              {"cluster_id", cluster},
              {"resource_type", security::to_string(a.resource)},
              {"resource_name", a.resource_name},
              {"pattern_type", security::to_string(a.pattern)},
              {"principal", a.principal},
              {"host", a.host},
              {"operation", security::to_string(a.operation)},
              {"permission", security::to_string(a.permission)}};
}

json acl_list_json(const api::call& c, const std::vector<security::acl_binding>& acls) {
  const std::string& cluster = c.params.at("cluster_id");
  json data = json::array();
  for (const auto& a : acls) data.push_back(acl_json(c.base_url, cluster, a));
  return list_json("KafkaAclList", c.base_url + "/v3/clusters/" + cluster + "/acls", std::move(data));
}

/// The filter the query names; nullopt after answering 400 naming a bad parameter. With
/// `required`, resource_type, pattern_type, operation and permission must be present.
std::optional<security::acl_filter> query_filter(api::call& c, bool required) {
  security::acl_filter f;
  auto named = [&](const char* key, auto parse, auto& field, const char* choices) {
    auto it = c.query.find(key);
    if (it == c.query.end()) {
      if (!required) return true;
      c.fail(400, ec::invalid_request, std::string("query parameter ") + key + " is required (" + choices + ")");
      return false;
    }
    auto v = parse(it->second);
    if (!v) {
      c.fail(400, ec::invalid_request,
             std::string("query parameter ") + key + " must be one of " + choices + ", got \"" + it->second + "\"");
      return false;
    }
    field = *v;
    return true;
  };
  if (!named("resource_type", security::parse_resource_type, f.resource,
             "ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER") ||
      !named("pattern_type", security::parse_pattern_type, f.pattern, "ANY, MATCH, LITERAL, PREFIXED") ||
      !named("operation", security::parse_acl_operation, f.operation,
             "ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, "
             "ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS") ||
      !named("permission", security::parse_acl_permission_type, f.permission, "ANY, ALLOW, DENY")) {
    return std::nullopt;
  }
  auto text = [&](const char* key) -> std::optional<std::string> {
    auto it = c.query.find(key);
    return it == c.query.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  f.resource_name = text("resource_name");
  f.principal = text("principal");
  f.host = text("host");
  return f;
}

/// One ACL as the audit line names it (the Kafka door's words): `ACL TOPIC:orders LITERAL
/// User:alice READ ALLOW host=*`.
std::string audit_text(const security::acl_binding& a) {
  return "ACL " + std::string(security::to_string(a.resource)) + ":" + a.resource_name + " " +
         std::string(security::to_string(a.pattern)) + " " + a.principal + " " +
         std::string(security::to_string(a.operation)) + " " + std::string(security::to_string(a.permission)) +
         " host=" + a.host;
}

/// The audit line's change: every ACL named, "; " between them.
std::string audit_text(const std::vector<security::acl_binding>& acls) {
  std::string out;
  for (const auto& a : acls) out += (out.empty() ? "" : "; ") + audit_text(a);
  return out;
}

void create(const call_ptr& c, bool batch) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  if (!c->content_type_in({"application/json"})) return;
  auto acls = parse_acls(c->request.body, batch);
  if (!acls.ok()) return c->fail(acls.error());
  c->audit_change = "create " + audit_text(acls.value());
  c->broker().security().create_acls(std::move(acls).value(), [c](broker::result<std::vector<std::optional<broker::error>>> r) {
    c->later([r = std::move(r)](api::call& call) mutable {
      if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
      for (const auto& one : r.value()) {
        if (one) return call.fail_broker(*one, error_scope::topic, "");
      }
      http_response created;
      created.status = 201;
      created.content_type.clear();
      call.respond(std::move(created));
    });
  });
}

}  // namespace

void v3_list_acls(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto filter = query_filter(*c, false);
  if (!filter) return;
  auto found = c->broker().security().describe_acls(*filter);
  if (!found.ok()) return c->fail_broker(found.error(), error_scope::topic, "");
  c->respond_json(200, acl_list_json(*c, found.value()));
}

void v3_create_acl(const call_ptr& c) { create(c, false); }

void v3_create_acls_batch(const call_ptr& c) { create(c, true); }

void v3_delete_acls(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  auto filter = query_filter(*c, true);
  if (!filter) return;
  c->broker().security().delete_acls(
      {*filter}, [c](broker::result<std::vector<broker::result<std::vector<security::acl_binding>>>> r) {
        c->later([r = std::move(r)](api::call& call) mutable {
          if (!r.ok()) return call.fail_broker(r.error(), error_scope::topic, "");
          const auto& one = r.value().at(0);
          if (!one.ok()) return call.fail_broker(one.error(), error_scope::topic, "");
          call.audit_change = one.value().empty() ? "delete: no ACL matched" : "delete " + audit_text(one.value());
          call.respond_json(200, acl_list_json(call, one.value()));
        });
      });
}

}  // namespace ringlog::gateway::routes
