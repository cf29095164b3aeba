// DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554: SCRAM users in
// the metadata log (broker/users.h). Answers name mechanisms and iteration counts, never secrets.

#include <algorithm>
#include <map>

#include "handlers.h"
#include "ringlog/security/user_admin.h"

namespace ringlog::kafka::detail {

namespace {

/// Kafka's ScramMechanism type number (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
int8_t type_of(security::scram_mechanism m) { return static_cast<int8_t>(m); }

}  // namespace

void handle_describe_user_scram_credentials(const request_context& ctx,
                                            protocol::describe_user_scram_credentials_request_data request) {
  // DESCRIBE on the cluster (KafkaApis.handleDescribeUserScramCredentialsRequest).
  if (!ctx.authorized_cluster(security::acl_operation::describe)) {
    protocol::describe_user_scram_credentials_response_data out;
    out.error_code = error_code::cluster_authorization_failed;
    out.error_message = "DESCRIBE on the cluster is not allowed for " + ctx.principal.to_string();
    return ctx.answer(out);
  }
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  if (request.users) {
    for (const auto& u : *request.users) {
      if (seen[u.name]++ == 0) names.push_back(u.name);
    }
  }
  protocol::describe_user_scram_credentials_response_data out;
  for (const auto& d : ctx.broker_api().security().describe_users(names)) {
    protocol::describe_user_scram_credentials_response_data::describe_user_scram_credentials_result r;
    r.user = d.user;
    if (seen[d.user] > 1) {
      r.error_code = static_cast<int16_t>(broker::kafka_error_code(broker::errc::duplicate_resource));
      r.error_message = "Cannot describe SCRAM credentials for the same user twice in a single request: " + d.user;
    } else if (d.credentials.empty()) {
      r.error_code = static_cast<int16_t>(broker::kafka_error_code(broker::errc::resource_not_found));
      r.error_message = "Attempt to describe nonexistent user: " + d.user;
    }
    for (const auto& c : d.credentials) {
      if (r.error_code != error_code::none) break;
      protocol::describe_user_scram_credentials_response_data::credential_info i;
      i.mechanism = type_of(c.mechanism);
      i.iterations = c.iterations;
      r.credential_infos.push_back(i);
    }
    out.results.push_back(std::move(r));
  }
  ctx.answer(out);
}

void handle_alter_user_scram_credentials(const request_context& ctx,
                                         protocol::alter_user_scram_credentials_request_data request) {
  // Changes the broker is asked to make, and refusals found here; both keyed by the user's place
  // in the answer (users in the order they first appear, Kafka's one result per user).
  std::vector<std::string> users;
  std::map<std::string, std::optional<broker::error>> refused;
  std::vector<broker::scram_credential_alteration> changes;
  auto note_user = [&](const std::string& name) {
    if (!refused.contains(name)) {
      users.push_back(name);
      refused[name] = std::nullopt;
    }
  };
  auto refuse = [&](const std::string& name, broker::errc code, std::string message) {
    if (!refused[name]) refused[name] = broker::error{code, std::move(message)};
  };
  // ALTER on the cluster (KafkaApis.handleAlterUserScramCredentialsRequest): every user refused.
  // Without an authorizer, the rule of the HTTP users routes (issue 29): a caller that logged in
  // (SASL, or a mapped client certificate) changes users only as one of super.users, so a
  // password of one door cannot be turned into another user's; a caller that did not log in (a
  // PLAINTEXT listener, like an HTTP listener without authentication) is not asked.
  const bool logged_in = ctx.options().sasl_required() ||
                         (ctx.options().security_protocol == "SSL" && !ctx.principal.anonymous());
  const bool authorizer = ctx.broker_api().security().authorizer_enabled();
  std::optional<std::string> refusal =
      authorizer ? (ctx.authorized_cluster(security::acl_operation::alter)
                        ? std::nullopt
                        : std::optional<std::string>("ALTER on the cluster is not allowed for " + ctx.principal.to_string()))
                 : security::users_change_refusal(ctx.broker_api().config().super_users, ctx.principal, logged_in);
  for (const auto& d : request.deletions) note_user(d.name);
  for (const auto& u : request.upsertions) note_user(u.name);
  if (refusal) {
    for (const auto& name : users) refuse(name, broker::errc::cluster_authorization_failed, *refusal);
  }
  for (const auto& d : request.deletions) {
    note_user(d.name);
    auto m = security::scram_mechanism_from_type(d.mechanism);
    if (!m) {
      refuse(d.name, broker::errc::unsupported_sasl_mechanism, "Unknown SCRAM mechanism " + std::to_string(d.mechanism));
      continue;
    }
    changes.push_back({d.name, *m, std::nullopt});
  }
  for (const auto& u : request.upsertions) {
    note_user(u.name);
    auto m = security::scram_mechanism_from_type(u.mechanism);
    if (!m) {
      refuse(u.name, broker::errc::unsupported_sasl_mechanism, "Unknown SCRAM mechanism " + std::to_string(u.mechanism));
      continue;
    }
    auto credential = security::credential_from_salted_password(*m, u.salted_password, u.salt, u.iterations);
    if (!credential.ok()) {
      refuse(u.name, broker::errc::unacceptable_credential, credential.error().message);
      continue;
    }
    changes.push_back({u.name, *m, std::move(credential).value()});
  }
  // A user refused here is not changed at all (Kafka refuses a user's changes together).
  std::vector<broker::scram_credential_alteration> allowed;
  std::vector<std::string> allowed_users;   // allowed[i].user
  for (auto& c : changes) {
    if (refused[c.user]) continue;
    allowed_users.push_back(c.user);
    allowed.push_back(std::move(c));
  }
  auto answer = [ctx, users, refused, allowed_users](std::vector<broker::result<void>> results) mutable {
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].ok() && !refused[allowed_users[i]]) refused[allowed_users[i]] = results[i].error();
    }
    protocol::alter_user_scram_credentials_response_data out;
    for (const auto& name : users) {
      protocol::alter_user_scram_credentials_response_data::alter_user_scram_credentials_result r;
      r.user = name;
      if (const auto& e = refused[name]) {
        r.error_code = code_of(*e);
        r.error_message = e->message;
      }
      out.results.push_back(std::move(r));
    }
    ctx.answer(out);
  };
  if (allowed.empty()) return answer({});
  ctx.broker_api().security().alter_user_scram_credentials(std::move(allowed), std::move(answer));
}

}  // namespace ringlog::kafka::detail
