#pragma once
// Authorization on the HTTP doors (issue 30): what each route, WebSocket frame and stream needs,
// in Kafka's operation x resource terms, and the one refusal every door answers. The decision
// itself is broker::security_api::authorize (Kafka's StandardAuthorizer rules, security/acl.h); this
// file only names the question and words the 403. No Beast here (ws_session.cc uses it too).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "errors.h"
#include "ringlog/broker/broker.h"
#include "ringlog/security/acl.h"

namespace ringlog::gateway {

/// One operation on one resource that a route needs, as its route table entry declares it.
struct route_need {
  security::acl_operation operation = security::acl_operation::unknown;
  security::resource_type resource = security::resource_type::unknown;
  /// Where the resource name comes from:
  ///   path:    the path parameter `param` (checked before the handler runs);
  ///   cluster: the one CLUSTER resource, kafka-cluster (checked before the handler runs);
  ///   body:    names in the body or query (checked by the handler, once it has read them);
  ///   listed:  a list the handler filters to the resources the caller may `operation`.
  enum class source : int8_t { path, cluster, body, listed } from = source::cluster;
  std::string param;
};

/// One requirement of a route, met by any one of its needs: most have one; Kafka's rules that
/// take a grant on the cluster for every resource have two, e.g. DeleteTopics' DELETE on the
/// topic or on the cluster (ControllerApis.deleteTopics' hasClusterAuth). A refusal names the
/// first need and the others as what would also do.
struct route_requirement {
  std::vector<route_need> any_of;   // at least one need
};

/// Parses a route's declared needs: "none" (no ACL: open routes, the caller's own session) or
/// requirements separated by "; ", each one need or several separated by " | " (any one of them
/// suffices), each need "OPERATION TYPE:NAME" in Kafka's names (kafka-acls.sh prints them), NAME
/// one of {param}, kafka-cluster, body, listed; e.g. "READ GROUP:{group}; READ TOPIC:body" (both
/// needed), "DELETE TOPIC:{topic_name} | DELETE CLUSTER:kafka-cluster" (either). A requirement
/// with a body or listed need is the handler's to check, every need of it; the others are
/// checked before the handler runs. nullopt when the text is malformed (the route table asserts
/// it is not).
std::optional<std::vector<route_requirement>> parse_route_needs(std::string_view spec);

/// The address part of a peer "ip:port" or "[v6]:port", as an ACL's host names it.
std::string peer_host(std::string_view peer);

/// Whether `principal` from `host` may do `operation` on `resource`/`name`: true without an
/// authorizer (authorizer.class.name unset), else broker::security_api::authorize's answer.
bool acl_allows(const broker::broker& b, const security::kafka_principal& principal, std::string_view host,
                security::resource_type resource, std::string_view name, security::acl_operation operation);

/// nullopt when allowed; else the 403 (error_code 40301) to answer, naming the principal, the
/// operation and the resource type, and the resource's name only when the principal may
/// DESCRIBE it (a name it may not see is never echoed: Kafka's rule that an undescribable topic
/// is never revealed). A refusal is logged as an audit line (security/audit.h, at most
/// audit_denial_lines_per_second_max a second) naming `door` ("http", "ws") and `request` (the
/// route or the WebSocket frame).
std::optional<api_error> acl_refusal(const broker::broker& b, const security::kafka_principal& principal,
                                     std::string_view host, security::resource_type resource, std::string_view name,
                                     security::acl_operation operation, std::string_view door = "http",
                                     std::string_view request = {});

}  // namespace ringlog::gateway
