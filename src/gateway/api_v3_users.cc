// v3 SCRAM users (ours, in the v3 style; Kafka's DescribeUserScramCredentials and
// AlterUserScramCredentials, KIP-554): list, show, set and delete a user's SCRAM credentials.
// The password is turned into a credential here (salt, PBKDF2) and never stored or returned;
// answers name mechanisms and iteration counts only.

#include <spdlog/spdlog.h>

#include <algorithm>

#include "api_routes.h"
#include "request_parsing.h"
#include "ringlog/security/user_admin.h"
#include "json_fields.h"

namespace ringlog::gateway::routes {
namespace {

json user_json(const std::string& base, const std::string& cluster, const broker::user_description& d) {
  json credentials = json::array();
  for (const auto& c : d.credentials) {
    credentials.push_back({{"mechanism", std::string(security::mechanism_name(c.mechanism))}, {"iterations", c.iterations}});
  }
  return json{{"kind", "KafkaUser"},
              {"metadata", {{"self", base + "/v3/clusters/" + percent_encode_segment(cluster) + "/users/" +
                                         percent_encode_segment(d.user)}}},
              {"cluster_id", cluster},
              {"user_name", d.user},
              {"credentials", credentials}};
}

}  // namespace

void v3_list_users(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  const std::string& cluster = c->params["cluster_id"];
  json data = json::array();
  for (const auto& d : c->broker().security().describe_users({})) data.push_back(user_json(c->base_url, cluster, d));
  c->respond_json(200, list_json("KafkaUserList", c->base_url + "/v3/clusters/" + percent_encode_segment(cluster) + "/users", data));
}

void v3_get_user(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster()) return;
  const std::string& name = c->params["name"];
  auto users = c->broker().security().describe_users({name});
  if (users.empty() || users[0].credentials.empty()) return c->fail(404, ec::not_found, "user \"" + name + "\" not found");
  c->respond_json(200, user_json(c->base_url, c->params["cluster_id"], users[0]));
}

/// Who may change users over HTTP (issue 29; a session's breaker reset another user's password
/// as an ordinary user): with HTTP authentication on, only super.users; with it off
/// (http.authentication.method=NONE, every caller User:ANONYMOUS) the routes are as open as every
/// other route, as docs/security.md says. With an authorizer (issue 30) the ACLs decide instead:
/// the route table asks ALTER on the cluster (Kafka's AlterUserScramCredentials). Answers 403
/// (40301) and returns false otherwise.
bool may_change_users(const call_ptr& c) {
  const security::kafka_principal& who = c->principal();
  // With an authorizer the route table's ALTER on the cluster decided. Without one: not asked where
  // HTTP authentication is off (every caller is User:ANONYMOUS there), asked by the listener's
  // setting, never by the principal's name (a token could name "ANONYMOUS").
  if (c->broker().security().authorizer_enabled()) return true;
  const auto& auth = c->self->options().auth;
  if (!auth || !auth->enabled()) return true;
  auto refusal = security::users_change_refusal(c->broker().config().super_users, who, /*logged_in=*/true);
  if (!refusal) return true;
  c->fail(403, ec::forbidden, *refusal);
  return false;
}

/// POST .../users/{name} {"mechanism": "SCRAM-SHA-512", "iterations": 8192, "password": "..."}:
/// sets the user's credential of that mechanism (creating the user); answers the user.
void v3_set_user(const call_ptr& c) {
  if (!c->accept(v3_offers) || !c->check_cluster() || !c->content_type_in({"application/json"})) return;
  if (!may_change_users(c)) return;
  const std::string name = c->params["name"];
  if (is_blank(c->request.body)) {
    return c->fail(empty_body_error("{\"mechanism\": \"SCRAM-SHA-512\", \"iterations\": 8192, \"password\": \"...\"}"));
  }
  api_error refusal;
  json body = parse_json(c->request.body, "request body", refusal);
  if (body.is_discarded()) return c->fail(refusal);
  if (!body.is_object()) return c->fail(422, ec::unprocessable, "the body must be a JSON object");
  for (const auto& [field, unused] : body.items()) {
    if (field != "mechanism" && field != "iterations" && field != "password") {
      return c->fail(422, ec::unprocessable, "unknown field \"" + field + "\"; the body takes mechanism, iterations, password");
    }
  }
  if (!body.contains("password") || !body["password"].is_string() || body["password"].get<std::string>().empty()) {
    return c->fail(422, ec::unprocessable, "password: a non-empty string is required");
  }
  const std::string mechanism_text = body.value("mechanism", std::string("SCRAM-SHA-512"));
  auto mechanism = security::parse_scram_mechanism(mechanism_text);
  if (!mechanism) return c->fail(422, ec::unprocessable, "mechanism \"" + mechanism_text + "\": SCRAM-SHA-256 or SCRAM-SHA-512");
  if (body.contains("iterations") && !body["iterations"].is_number_integer()) {
    return c->fail(422, ec::unprocessable, "iterations: an integer in 4096..16384");
  }
  const int64_t iterations = body.value("iterations", int64_t{security::constants::scram_iterations_default});
  if (iterations < security::constants::scram_iterations_min || iterations > security::constants::scram_iterations_max) {
    return c->fail(422, ec::unprocessable, "iterations " + std::to_string(iterations) + " outside 4096..16384");
  }
  auto credential =
      security::new_scram_credential(*mechanism, body["password"].get<std::string>(), static_cast<int32_t>(iterations));
  if (!credential.ok()) return c->fail(422, ec::unprocessable, credential.error().message);
  spdlog::info("msg=\"admin write\" door=http route=\"POST /v3/clusters/{{cluster_id}}/users/{{name}}\" user={} mechanism={}",
               name, mechanism_text);
  c->broker().security().alter_user_scram_credentials(
      {{name, *mechanism, std::move(credential).value()}}, [c, name](std::vector<broker::result<void>> results) {
        c->later([results = std::move(results), name](api::call& call) {
          if (!results.at(0).ok()) return call.fail(to_api_error(results[0].error()));
          auto users = call.broker().security().describe_users({name});
          call.respond_json(200, user_json(call.base_url, call.params["cluster_id"], users.at(0)));
        });
      });
}

/// DELETE .../users/{name}[?mechanism=SCRAM-SHA-256]: removes the user's credentials (all of them,
/// or the named mechanism's). 404 when there is none.
void v3_delete_user(const call_ptr& c) {
  if (!c->check_cluster() || !may_change_users(c)) return;
  const std::string name = c->params["name"];
  auto users = c->broker().security().describe_users({name});
  std::vector<broker::scram_credential_alteration> deletions;
  std::optional<security::scram_mechanism> only;
  if (auto q = c->query.find("mechanism"); q != c->query.end()) {
    only = security::parse_scram_mechanism(q->second);
    if (!only) return c->fail(422, ec::unprocessable, "mechanism \"" + q->second + "\": SCRAM-SHA-256 or SCRAM-SHA-512");
  }
  for (const auto& cred : users.at(0).credentials) {
    if (!only || *only == cred.mechanism) deletions.push_back({name, cred.mechanism, std::nullopt});
  }
  if (deletions.empty()) return c->fail(404, ec::not_found, "user \"" + name + "\" has no such credential");
  spdlog::info("msg=\"admin write\" door=http route=\"DELETE /v3/clusters/{{cluster_id}}/users/{{name}}\" user={}", name);
  c->broker().security().alter_user_scram_credentials(std::move(deletions), [c](std::vector<broker::result<void>> results) {
    c->later([results = std::move(results)](api::call& call) {
      for (const auto& r : results) {
        if (!r.ok()) return call.fail(to_api_error(r.error()));
      }
      call.respond_no_content();
    });
  });
}

}  // namespace ringlog::gateway::routes
