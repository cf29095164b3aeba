#include "authorization.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "ringlog/security/acl_host.h"
#include "ringlog/security/audit.h"

namespace ringlog::gateway {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::optional<route_need> parse_need(std::string_view text) {
  text = trim(text);
  const size_t space = text.find(' ');
  const size_t colon = text.find(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) return std::nullopt;
  route_need need;
  auto operation = security::parse_acl_operation(text.substr(0, space));
  auto resource = security::parse_resource_type(text.substr(space + 1, colon - space - 1));
  if (!operation || !resource) return std::nullopt;
  need.operation = *operation;
  need.resource = *resource;
  std::string_view name = text.substr(colon + 1);
  if (name.size() > 2 && name.front() == '{' && name.back() == '}') {
    need.from = route_need::source::path;
    need.param = std::string(name.substr(1, name.size() - 2));
  } else if (name == security::cluster_resource_name && need.resource == security::resource_type::cluster) {
    need.from = route_need::source::cluster;
  } else if (name == "body") {
    need.from = route_need::source::body;
  } else if (name == "listed") {
    need.from = route_need::source::listed;
  } else {
    return std::nullopt;
  }
  return need;
}

/// One requirement: its needs separated by '|'.
std::optional<route_requirement> parse_requirement(std::string_view text) {
  route_requirement requirement;
  while (true) {   // bounded: each turn consumes a '|' of the text
    const size_t end = text.find('|');
    auto need = parse_need(text.substr(0, end));
    if (!need) return std::nullopt;
    requirement.any_of.push_back(std::move(*need));
    if (end == std::string_view::npos) return requirement;
    text.remove_prefix(end + 1);
  }
}

}  // namespace

std::optional<std::vector<route_requirement>> parse_route_needs(std::string_view spec) {
  std::vector<route_requirement> requirements;
  if (trim(spec) == "none") return requirements;
  // Each requirement between semicolons, the last one after the last: an empty one (an empty
  // text, a trailing ";" or "|") is malformed; a route that needs nothing says "none".
  while (true) {   // bounded: each turn consumes a ';' of the text
    const size_t end = spec.find(';');
    auto requirement = parse_requirement(spec.substr(0, end));
    if (!requirement) return std::nullopt;
    requirements.push_back(std::move(*requirement));
    if (end == std::string_view::npos) return requirements;
    spec.remove_prefix(end + 1);
  }
}

std::string peer_host(std::string_view peer) {
  if (peer.starts_with('[')) {
    const size_t close = peer.find(']');
    const std::string_view address = peer.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1);
    return security::canonical_acl_host(address).value_or(std::string(address));
  }
  // "ip:port", or an IPv6 address (printed by Asio without brackets) then ":port": the port is
  // after the last colon.
  const size_t colon = peer.rfind(':');
  const std::string_view address = colon == std::string_view::npos ? peer : peer.substr(0, colon);
  // As ACL hosts name it: an IPv4 client of a dual-stack listener is "127.0.0.1", not
  // "::ffff:127.0.0.1" (the Kafka listener does the same).
  return security::canonical_acl_host(address).value_or(std::string(address));
}

bool acl_allows(const broker::broker& b, const security::kafka_principal& principal, std::string_view host,
                security::resource_type resource, std::string_view name, security::acl_operation operation) {
  if (!b.security().authorizer_enabled()) return true;
  return b.security().authorize(principal, host, security::acl_action{resource, name, operation}).allowed();
}

/// Why a refusal happened, for its message: the DENY ACL that matched (which an ALLOW cannot
/// override, Kafka's rule; the new user of session 31 was told an ALLOW was needed while holding
/// one), else the ALLOW that is missing.
std::string deny_or_missing_allow(const broker::broker& b, const security::kafka_principal& principal,
                                  std::string_view host, security::resource_type resource, std::string_view name,
                                  security::acl_operation operation) {
  const auto decision = b.security().authorize(principal, host, security::acl_action{resource, name, operation});
  if (decision.by == security::authorization_decision::rule::matching_deny && decision.acl) {
    const auto& deny = *decision.acl;
    return " (denied by the ACL DENY " + std::string(security::to_string(deny.operation)) + " on " +
           std::string(security::to_string(deny.resource)) + " " + deny.resource_name + " (" +
           std::string(security::to_string(deny.pattern)) + ") for " + deny.principal + " from host " + deny.host +
           "; a DENY wins over every ALLOW)";
  }
  return " (an ACL ALLOW " + std::string(security::to_string(operation)) + " on the " +
         std::string(security::to_string(resource)) + " is needed)";
}

std::optional<api_error> acl_refusal(const broker::broker& b, const security::kafka_principal& principal,
                                     std::string_view host, security::resource_type resource, std::string_view name,
                                     security::acl_operation operation, std::string_view door,
                                     std::string_view request) {
  if (acl_allows(b, principal, host, resource, name, operation)) return std::nullopt;
  // One budget per door (the HTTP routes', the WebSocket frames'), as documented.
  static security::audit_denial_budget http_budget;
  static security::audit_denial_budget ws_budget;
  auto& budget = door == "ws" ? ws_budget : http_budget;
  const auto verdict = budget.admit(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
  if (verdict.suppressed > 0) spdlog::info("{}", security::audit_denials_suppressed_line(door, verdict.suppressed));
  if (verdict.log) {
    spdlog::info("{}", security::audit_authorization_denied_line(door, principal, host,
                                                                 security::acl_action{resource, name, operation}, request));
  }
  std::string message = principal.to_string() + " (host " + std::string(host) + ") is not authorized to " +
                        std::string(security::to_string(operation)) + " " +
                        std::string(security::to_string(resource));
  const bool named = acl_allows(b, principal, host, resource, name, security::acl_operation::describe);
  if (named || resource == security::resource_type::cluster) message += " \"" + std::string(name) + "\"";
  message += deny_or_missing_allow(b, principal, host, resource, name, operation);
  return api_error{403, error_codes::forbidden, std::move(message)};
}

}  // namespace ringlog::gateway
