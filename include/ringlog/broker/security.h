#pragma once
// The security calls of the broker (issues 29 to 31): SCRAM users (KIP-554), the authorizer and
// its ACLs (issue 30, Kafka's StandardAuthorizer), client quotas (issue 31, Kafka's quota
// managers). A facet of the broker API like groups.h and transactions.h: broker::security()
// returns it. Users, ACLs and quotas are records of the metadata log, so every node holds them
// and answers the reads from its own image; changes go through the active controller.
//
// Calls are asynchronous like broker.h: `done` runs exactly once on some shard thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/broker/errc.h"
#include "ringlog/broker/quotas.h"
#include "ringlog/broker/users.h"
#include "ringlog/security/acl.h"
#include "ringlog/security/principal.h"
#include "ringlog/security/quota.h"
#include "ringlog/security/scram.h"

namespace ringlog::broker {

class security_api {
 public:
  virtual ~security_api() = default;

  // ---- SCRAM users (KIP-554; users.h)
  /// Users with SCRAM credentials, by name; `users` empty = all of them. A named user without any
  /// credential is listed with none (the Kafka handler answers RESOURCE_NOT_FOUND for it).
  [[nodiscard]] virtual std::vector<user_description> describe_users(const std::vector<std::string>& users) const = 0;
  /// Sets or deletes SCRAM credentials, all valid ones in one metadata entry (applied on every
  /// node). One result per change, in order. Errors per change: unacceptable_credential (empty
  /// user name, iterations outside 4096..16384, an empty salt or key), duplicate_resource (the user
  /// appears twice in `changes`), resource_not_found (deleting a credential that does not exist);
  /// of the whole commit (each valid change gets it): not_controller, request_timed_out,
  /// broker_not_available.
  virtual void alter_user_scram_credentials(std::vector<scram_credential_alteration> changes,
                                            std::function<void(std::vector<result<void>>)> done) = 0;
  /// The SCRAM store of the image the calling thread sees (its shard's), for the SASL mechanisms.
  [[nodiscard]] virtual security::scram_lookup scram_lookup() const = 0;

  // ---- authorization (issue 30): the one rule set every door asks (Kafka's StandardAuthorizer)
  /// Whether authorizer.class.name names an authorizer: ACLs are then kept and enforced.
  [[nodiscard]] virtual bool authorizer_enabled() const = 0;
  /// May `principal`, connected from `host` (the peer's IP address as ACL hosts name it,
  /// e.g. "127.0.0.1" or "::1"), do `action`? Without an authorizer: always allowed (by
  /// no_acl_default). Else super.users, then the ACLs of this node's metadata view (DENY wins,
  /// implied DESCRIBE/DESCRIBE_CONFIGS, allow.everyone.if.no.acl.found): see security/acl.h.
  /// Reads the shard's view: no lock, costs O(matching ACLs); callable on any shard.
  [[nodiscard]] virtual security::authorization_decision authorize(const security::kafka_principal& principal,
                                                                  std::string_view host,
                                                                  const security::acl_action& action) const = 0;

  // ---- ACLs (issue 30; Kafka's CreateAcls, DescribeAcls, DeleteAcls; security/acl.h has the model)
  // Kept as AccessControlEntryRecords in the metadata log, so every node holds them. Errors of a
  // whole call: security_disabled (no authorizer.class.name), not_controller (no quorum leader:
  // retry), request_timed_out, broker_not_available (stopping).
  /// Stores `acls`; one result per ACL, in order: nullopt = stored (one stored already counts,
  /// unchanged, as in Kafka), else why not (invalid_request naming the field: see
  /// security::validate_acl).
  virtual void create_acls(std::vector<security::acl_binding> acls,
                           std::function<void(result<std::vector<std::optional<error>>>)> done) = 0;
  /// The stored ACLs `filter` selects, from this node's image (sorted by resource type, name,
  /// pattern, principal, host, operation, permission). Errors: security_disabled,
  /// invalid_request (the filter: see security::validate_acl_filter).
  [[nodiscard]] virtual result<std::vector<security::acl_binding>> describe_acls(
      const security::acl_filter& filter) const = 0;
  /// Deletes every ACL any of `filters` selects; one result per filter, in order: the ACLs it
  /// selected (all deleted), or invalid_request for a bad filter (the others still apply).
  virtual void delete_acls(std::vector<security::acl_filter> filters,
                           std::function<void(result<std::vector<result<std::vector<security::acl_binding>>>>)> done) = 0;

  // ---- client quotas (issue 31; Kafka's DescribeClientQuotas, AlterClientQuotas; the model and
  // its rules are in security/quota.h). Kept as ClientQuotaRecords in the metadata log, so every
  // node holds them; each broker enforces them on its own traffic, as Kafka does.
  /// The stored quotas `filter` selects, from this node's image, sorted by entity. Errors:
  /// invalid_request naming the bad component (security::validate_client_quota_filter).
  [[nodiscard]] virtual result<std::vector<client_quota_entry>> describe_client_quotas(
      const security::client_quota_filter& filter) const = 0;
  /// Applies `alterations`; one result per alteration, in order: nullopt = applied (or, with
  /// `validate_only`, would be), else invalid_request naming the entity, key and value
  /// (security::validate_client_quota). Errors of the whole call: not_controller (no quorum
  /// leader: retry), request_timed_out, broker_not_available (stopping), invalid_request (more
  /// than client_quota_changes_per_call_max keys, or the cluster past client_quota_entities_max).
  virtual void alter_client_quotas(std::vector<client_quota_alteration> alterations, bool validate_only,
                                   std::function<void(result<std::vector<std::optional<error>>>)> done) = 0;
  /// Records `value` (bytes produced or fetched; for request_percentage, the request-handling time
  /// in ms, counted as Kafka's percent of one thread: 100 x ms / 1000) against the quota of `key` for a client of
  /// `user` (principal name, "ANONYMOUS" without authentication) and `client_id` ("" when none)
  /// on this broker, and answers the throttle time of KIP-219 in ms: 0 when no quota sets `key`
  /// for the client or the client is within it. Callable on any thread; costs one lookup in the
  /// view's quota index and, when a quota applies, a short lock.
  virtual int64_t record_client_quota(security::quota_key key, std::string_view user, std::string_view client_id,
                                      double value) = 0;
  /// The throttle time (KIP-219, ms) a client of `user`/`client_id` is in now for `key`: what its
  /// sensor's rate asks, the sensor every client of the matched quota entity shares (a user
  /// quota's sensor is the user's, whatever client id a request names), without recording
  /// anything; 0 when it is within its quota or none applies. The HTTP doors refuse (429) while
  /// it is not 0.
  [[nodiscard]] virtual int64_t client_quota_throttle_ms(security::quota_key key, std::string_view user,
                                                         std::string_view client_id) const = 0;
  /// The most a client of `user`/`client_id` may move in one quota window under `key`: the bound
  /// x (quota.window.num - 1) x quota.window.size.seconds, as Kafka caps a fetch's max bytes with
  /// it (KafkaApis.handleFetchRequest, ClientQuotaManager.getMaxValueInQuotaWindow), so one read
  /// cannot take many windows' worth; nullopt when no quota sets `key` for the client.
  [[nodiscard]] virtual std::optional<int64_t> client_quota_window_value_max(security::quota_key key,
                                                                             std::string_view user,
                                                                             std::string_view client_id) const = 0;
  /// KIP-599, controller_mutation_rate: the ms a client of `user`/`client_id` must wait before
  /// it may create or delete partitions again (0: it may now; `partitions` are then taken from
  /// its bucket). With `strict` (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) a
  /// non-zero answer means refuse with throttling_quota_exceeded and take nothing; without, the
  /// partitions are taken all the same and the answer is only the throttle time to report.
  virtual int64_t charge_controller_mutations(std::string_view user, std::string_view client_id, double partitions,
                                              bool strict) = 0;
  /// connection_creation_rate of the quota entity ip=`ip`, else ip=<default>; nullopt: none set
  /// (max.connection.creation.rate and its overrides apply alone).
  [[nodiscard]] virtual std::optional<double> connection_creation_rate_for(std::string_view ip) const = 0;
  /// What each live quota sensor has counted (at most client_quota_metrics_sensors_max, those
  /// with the most throttle time first), for /metrics.
  [[nodiscard]] virtual std::vector<client_quota_usage> client_quota_usages() const = 0;
};

/// KIP-679: may `principal` (from `host`) start an idempotent producer session (InitProducerId
/// without a transactional.id, or POST /v3/clusters/{c}/producers)? Yes with IDEMPOTENT_WRITE on
/// the cluster, or with an ALLOW of WRITE (or ALL) on some topic of any name or pattern (Kafka's
/// authorizeByResourceType; a DENY is not weighed: each produce is still checked). Always yes
/// without an authorizer. Logs nothing: a door that refuses logs its refusal as it logs others.
/// The one rule of every door (the HTTP route asked IDEMPOTENT_WRITE alone: session 32).
inline bool may_init_idempotent_producer(const security_api& security, const security::kafka_principal& principal,
                                         std::string_view host) {
  if (!security.authorizer_enabled()) return true;
  const security::acl_action cluster{security::resource_type::cluster, security::cluster_resource_name,
                                     security::acl_operation::idempotent_write};
  if (security.authorize(principal, host, cluster).allowed()) return true;
  security::acl_filter filter;
  filter.resource = security::resource_type::topic;
  filter.permission = security::acl_permission_type::allow;
  auto found = security.describe_acls(filter);
  if (!found.ok()) return false;
  const std::string name = principal.to_string();
  for (const auto& acl : *found) {
    const bool applies = (acl.principal == name || acl.principal == "User:*") &&
                         (acl.host == security::acl_wildcard || acl.host == host);
    if (applies && (acl.operation == security::acl_operation::write || acl.operation == security::acl_operation::all)) {
      return true;
    }
  }
  return false;
}

/// What `principal` (from `host`) may see and do when it asks to delete topic `topic`, the one
/// rule of every door (Kafka's ControllerApis.deleteTopics): DELETE on the cluster lets it
/// describe and delete every topic (hasClusterAuth); else DESCRIBE and DELETE on the topic itself
/// (DELETE implies DESCRIBE: security/acl.h). Everything without an authorizer. A door answers
/// TOPIC_AUTHORIZATION_FAILED (403) for a topic it may not describe, UNKNOWN_TOPIC_OR_PARTITION
/// (404) for a missing one it may describe, then TOPIC_AUTHORIZATION_FAILED for one it may not
/// delete. Logs nothing: a door that refuses logs its refusal as it logs others.
struct topic_deletion_rights {
  bool describe = false;
  bool delete_ = false;
};

inline topic_deletion_rights topic_deletion_rights_of(const security_api& security,
                                                      const security::kafka_principal& principal,
                                                      std::string_view host, std::string_view topic) {
  auto allowed = [&](security::resource_type resource, std::string_view name, security::acl_operation operation) {
    return security.authorize(principal, host, security::acl_action{resource, name, operation}).allowed();
  };
  if (allowed(security::resource_type::cluster, security::cluster_resource_name, security::acl_operation::delete_)) {
    return {true, true};
  }
  return {allowed(security::resource_type::topic, topic, security::acl_operation::describe),
          allowed(security::resource_type::topic, topic, security::acl_operation::delete_)};
}

/// May `principal` (from `host`) create topic `topic`? CREATE on the cluster allows every topic,
/// else CREATE on the topic itself (Kafka's ControllerApis.createTopics and its auto-creation on
/// Metadata and produce). The one rule of CreateTopics, Metadata, POST /v3/.../topics and the
/// copies of nacks and redrives. Always yes without an authorizer; logs nothing.
inline bool may_create_topic(const security_api& security, const security::kafka_principal& principal,
                             std::string_view host, std::string_view topic) {
  auto allowed = [&](security::resource_type resource, std::string_view name) {
    return security.authorize(principal, host, security::acl_action{resource, name, security::acl_operation::create})
        .allowed();
  };
  return allowed(security::resource_type::cluster, security::cluster_resource_name) ||
         allowed(security::resource_type::topic, topic);
}

}  // namespace ringlog::broker
