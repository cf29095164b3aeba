// HTTP authentication's routes and checks (issue 29, http_auth.h): POST /v1/login, /v1/logout,
// /v1/tokens, GET /v1/whoami; which routes need credentials; the ownership of v2 consumer
// instances; the audit line of each admin write.

#include "api_routes.h"
#include "json_fields.h"

namespace ringlog::gateway::routes {

namespace {

/// Routes that answer without credentials: load balancers' health, the console's files and its
/// login/logout, and /metrics unless http.metrics.authentication=true.
bool open_route(std::string_view pattern, const http_auth_options& options) {
  return pattern == "/v1/health" || pattern == "/v1/login" || pattern == "/v1/logout" ||
         pattern.starts_with("/console") || (pattern == "/metrics" && !options.metrics_authenticated);
}

}  // namespace

/// A GET that changes state: a v2 consumer instance's read moves its position (and, with
/// auto.commit.enable, commits), so a page of another site must not make it either (the breaker
/// of session 31 emptied another client's instance with a foreign page's GET, which a browser
/// sends without a preflight).
bool read_moves_a_consumer(std::string_view pattern) { return pattern == "/consumers/{group}/instances/{instance}/records"; }

bool authenticate_call(const call_ptr& c, std::string_view pattern) {
  // A page of another site may not change anything here unless http.cors.allowed.origins names
  // it: CORS only hides answers from it, and a request a browser sends without a preflight
  // (a form's POST) would still act (the new user of session 30: any page could delete topics
  // of a broker on 127.0.0.1 while the default allowed every origin).
  if (!c->request.origin.empty() && (state_changing(c->request.method) || read_moves_a_consumer(pattern)) &&
      !origin_permitted(c->self->options().cors_allowed_origins, c->request.origin, c->request.host,
                                         c->request.https)) {
    c->fail(403, ec::forbidden, "origin " + c->request.origin + " is not in http.cors.allowed.origins (empty "
                                "by default: only this server's own pages may change anything)");
    return false;
  }
  const auto& auth = c->self->options().auth;
  if (!auth || !auth->enabled() || open_route(pattern, auth->options())) return true;
  // A call a broker of this cluster proved it passed on (identify_client), naming the caller it
  // authenticated: that broker checked the credentials, which may be its own access token or
  // console session (unknown here). Never from an unsigned call. The user's credential as this
  // node's image has it goes with the caller, so what it is given here (the access token of a
  // redirected stream) ends with that credential as the caller's own login does.
  if (c->passed_on_by_broker && c->forwarded_principal) {
    c->who = auth_outcome{*c->forwarded_principal, auth_via::none, {}, auth->fingerprint_of(c->forwarded_principal->name)};
    return true;
  }
  std::string token;
  if (auto it = c->query.find("access_token"); it != c->query.end()) token = it->second;
  auto who = auth->authenticate(c->request, token);
  if (auto* refusal = std::get_if<http_response>(&who)) {
    c->respond(std::move(*refusal));
    return false;
  }
  c->who = std::get<auth_outcome>(std::move(who));
  return true;
}

namespace {

/// The resource name `need` names for call `c` (the cluster's, or its path parameter's).
std::string need_name(const call_ptr& c, const route_need& need) {
  return need.from == route_need::source::cluster ? std::string(security::cluster_resource_name) : c->params[need.param];
}

/// Whether a requirement is checked before the handler runs: every need of it named by the path
/// or the cluster (one named in the body or a listed one is the handler's, once it has read it).
bool checked_by_route(const route_requirement& requirement) {
  return std::all_of(requirement.any_of.begin(), requirement.any_of.end(), [](const route_need& need) {
    return need.from == route_need::source::cluster || need.from == route_need::source::path;
  });
}

/// Whether the caller has any one of `requirement`'s needs.
bool met(const call_ptr& c, const route_requirement& requirement) {
  return std::any_of(requirement.any_of.begin(), requirement.any_of.end(), [&](const route_need& need) {
    return c->authorized(need.resource, need_name(c, need), need.operation);
  });
}

/// DELETE /v3/clusters/{c}/topics/{t} refused its DELETE: Kafka's DeleteTopics asks DESCRIBE,
/// then whether the topic exists, then DELETE (ControllerApis.deleteTopics,
/// broker::topic_deletion_rights_of, as the Kafka door does), so a missing topic the caller may
/// DESCRIBE is unknown, not refused: answers the 404 40401 of a missing topic and returns true.
/// False (nothing answered) on other routes, and for a topic that exists or that the caller may
/// not DESCRIBE (refused whether it exists or not: never revealed).
bool answered_missing_topic_to_delete(const call_ptr& c, std::string_view pattern) {
  if (c->request.method != "DELETE" || pattern != "/v3/clusters/{cluster_id}/topics/{topic_name}") return false;
  const std::string topic = c->params["topic_name"];
  if (c->topic_exists(topic)) return false;
  if (!broker::topic_deletion_rights_of(c->broker().security(), c->principal(), c->peer_ip(), topic).describe) {
    return false;
  }
  c->fail_broker(broker::error{broker::errc::unknown_topic_or_partition, partition::unknown_topic_message(topic)},
                 error_scope::topic, topic);
  return true;
}

/// Answers the 403 of `requirement` and returns true when the caller has none of its needs: the
/// first need's refusal (logged as every refusal), and what else would do.
bool refused(const call_ptr& c, const route_requirement& requirement) {
  if (met(c, requirement)) return false;
  const route_need& first = requirement.any_of.front();
  auto refusal = acl_refusal(c->broker(), c->principal(), c->peer_ip(), first.resource, need_name(c, first),
                             first.operation, "http", c->route);
  if (!refusal) return false;   // granted a moment ago
  for (size_t i = 1; i < requirement.any_of.size(); ++i) {
    const route_need& other = requirement.any_of[i];
    refusal->message += "; or else " + std::string(security::to_string(other.operation)) + " on the " +
                        std::string(security::to_string(other.resource)) +
                        (other.from == route_need::source::cluster ? " " + need_name(c, other) : std::string());
  }
  c->fail(*refusal);
  return true;
}

}  // namespace

bool authorize_call(const call_ptr& c, std::string_view pattern, const std::vector<route_requirement>& requirements) {
  if (!c->broker().security().authorizer_enabled()) return true;
  // /metrics served without credentials (authentication off, or http.metrics.authentication
  // false) stays open to every caller: Prometheus scrapes it as before. Authenticated, it needs
  // DESCRIBE on the cluster (it names every topic, as Kafka's DescribeCluster and Metadata would).
  const auto& auth = c->self->options().auth;
  if (pattern == "/metrics" && !(auth && auth->enabled() && auth->options().metrics_authenticated)) return true;
  return std::none_of(requirements.begin(), requirements.end(), [&](const route_requirement& requirement) {
    if (!checked_by_route(requirement) || met(c, requirement)) return false;
    return answered_missing_topic_to_delete(c, pattern) || refused(c, requirement);
  });
}

bool is_admin_write(std::string_view method, std::string_view pattern) {
  if (!state_changing(method) || !pattern.starts_with("/v3/clusters/")) return false;
  for (std::string_view data_plane : {"/records", "/producers", "/transactions"}) {
    if (pattern.find(data_plane) != std::string_view::npos) return false;
  }
  return true;
}

void check_instance_owner(const call_ptr& c, handler next) {
  if (!c->self->options().auth || !c->self->options().auth->enabled()) return next(c);
  c->broker().groups().describe_consumer(
      c->params["group"], c->params["instance"], [c, next](broker::result<broker::consumer_instance> r) {
        c->later([r = std::move(r), next](api::call& call) {
          // Missing or expired: the route itself answers (its 40403 says why).
          if (!r.ok()) return next(call.shared_from_this());
          const std::string owner = r->owner.empty() ? security::kafka_principal{}.to_string() : r->owner;
          if (owner != call.principal().to_string()) {
            // As if it did not exist: another principal learns nothing of it (issue 29).
            return call.fail(404, ec::consumer_instance_not_found,
                             "consumer instance '" + call.params["instance"] + "' not found in group '" +
                                 call.params["group"] + "'");
          }
          next(call.shared_from_this());
        });
      });
}

void auth_login(const call_ptr& c) {
  const auto& auth = c->self->options().auth;
  if (!auth) return c->fail(409, ec::illegal_state, "authentication is off (http.authentication.method=NONE)");
  if (!c->content_type_in({"application/json"})) return;
  api_error refusal;
  json body = parse_json(c->request.body, "request body", refusal);
  if (body.is_discarded()) return c->fail(refusal);
  if (!body.is_object() || !body.contains("user") || !body["user"].is_string() ||
      !body.contains("password") || !body["password"].is_string()) {
    return c->fail(422, ec::unprocessable, "the body must be {\"user\": string, \"password\": string}");
  }
  c->respond(auth->login(c->request, body["user"].get<std::string>(), body["password"].get<std::string>()));
}

void auth_logout(const call_ptr& c) {
  const auto& auth = c->self->options().auth;
  if (!auth) return c->respond_no_content();
  c->respond(auth->logout(c->request));
}

void auth_tokens(const call_ptr& c) {
  const auto& auth = c->self->options().auth;
  if (!auth || !auth->enabled()) {
    return c->fail(409, ec::illegal_state, "authentication is off (http.authentication.method=NONE): no token is needed");
  }
  c->respond(auth->issue_token(c->who));
}

void auth_whoami(const call_ptr& c) {
  const auto& auth = c->self->options().auth;
  const bool enabled = auth && auth->enabled();
  json methods = json::array();
  if (enabled && auth->options().methods.basic) methods.push_back("BASIC");
  if (enabled && auth->options().methods.bearer) methods.push_back("BEARER");
  static constexpr const char* via_names[] = {"none", "basic", "bearer", "session_cookie", "access_token"};
  c->respond_json(200, {{"principal", c->principal().to_string()},
                        {"authentication", enabled ? auth->options().methods.to_string() : "NONE"},
                        {"methods", methods},
                        {"via", via_names[static_cast<size_t>(c->who.via)]}});
}

}  // namespace ringlog::gateway::routes
