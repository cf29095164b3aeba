#pragma once
// The broker's security facet (security.h; issue 28): SCRAM users (users.cc), the authorizer and
// its ACLs (acls.cc) and client quotas (quotas.cc), Kafka's authorizer and quota managers beside
// KafkaApis. Users, ACLs and quotas are records of the metadata log: reads come from the calling
// thread's metadata view, changes are committed through the quorum (metadata_writer) after the
// metadata barrier. It reaches the broker through the parts it is built with only. Private to
// the broker module.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metadata.h"
#include "quota_managers.h"
#include "ringlog/base/clock.h"
#include "ringlog/base/random.h"
#include "ringlog/broker/broker.h"
#include "ringlog/broker/security.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class metadata_barrier;
class metadata_writer;

class security_manager final : public security_api {
 public:
  /// `writer`: commit_records; `barrier`: post_caught_up; `config`: the static broker config (a
  /// view's dynamic one replaces it where it has one); `stopping`: the broker's stop flag. Every
  /// reference outlives this object.
  security_manager(metadata_writer& writer, metadata_barrier& barrier, const metadata_publisher& metadata,
                   broker_log log, const broker_config& config, const base::clock& clock,
                   runtime::shard_runtime& runtime, base::random_source& random, const std::atomic<bool>& stopping)
      : writer_(writer),
        barrier_(barrier),
        metadata_(metadata),
        log_(std::move(log)),
        config_(config),
        clock_(clock),
        runtime_(runtime),
        random_(random),
        stopping_(stopping) {}

  // users.cc
  [[nodiscard]] std::vector<user_description> describe_users(const std::vector<std::string>& users) const override;
  void alter_user_scram_credentials(std::vector<scram_credential_alteration> changes,
                                    std::function<void(std::vector<result<void>>)> done) override;
  [[nodiscard]] security::scram_lookup scram_lookup() const override;
  // acls.cc
  [[nodiscard]] bool authorizer_enabled() const override { return config_.authorizer_enabled; }
  [[nodiscard]] security::authorization_decision authorize(const security::kafka_principal& principal, std::string_view host,
                                                          const security::acl_action& action) const override;
  void create_acls(std::vector<security::acl_binding> acls,
                   std::function<void(result<std::vector<std::optional<error>>>)> done) override;
  [[nodiscard]] result<std::vector<security::acl_binding>> describe_acls(const security::acl_filter& filter) const override;
  void delete_acls(std::vector<security::acl_filter> filters,
                   std::function<void(result<std::vector<result<std::vector<security::acl_binding>>>>)> done) override;
  /// Why a produce may not auto-create its missing topic: auto.create.topics.enable=false, an
  /// internal name (`__`), or, with an authorizer, a principal without CREATE on the cluster or
  /// on the topic (Kafka's rule, issue 30); nullopt: it may.
  [[nodiscard]] std::optional<error> auto_create_refusal(const produce_request& request) const;
  // quotas.cc
  [[nodiscard]] result<std::vector<client_quota_entry>> describe_client_quotas(
      const security::client_quota_filter& filter) const override;
  void alter_client_quotas(std::vector<client_quota_alteration> alterations, bool validate_only,
                           std::function<void(result<std::vector<std::optional<error>>>)> done) override;
  int64_t record_client_quota(security::quota_key key, std::string_view user, std::string_view client_id,
                              double value) override;
  int64_t charge_controller_mutations(std::string_view user, std::string_view client_id, double partitions,
                                      bool strict) override;
  [[nodiscard]] int64_t client_quota_throttle_ms(security::quota_key key, std::string_view user,
                                                 std::string_view client_id, int64_t after_ms) const override;
  [[nodiscard]] std::optional<int64_t> client_quota_window_value_max(security::quota_key key, std::string_view user,
                                                                     std::string_view client_id) const override;
  [[nodiscard]] std::optional<double> connection_creation_rate_for(std::string_view ip) const override;
  [[nodiscard]] std::vector<client_quota_usage> client_quota_usages() const override;

 private:
  /// The quota window of `v`'s broker config (quota.window.* are dynamic), the static one before start.
  [[nodiscard]] const security::quota_window_config& quota_window(const metadata_view& v) const {
    return v.config ? v.config->quota_window : config_.quota_window;
  }

  metadata_writer& writer_;   // commit_records
  metadata_barrier& barrier_;   // post_caught_up
  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  const broker_log log_;
  const broker_config& config_;
  const base::clock& clock_;
  runtime::shard_runtime& runtime_;
  base::random_source& random_;
  const std::atomic<bool>& stopping_;
  /// super.users and allow.everyone.if.no.acl.found as the ACL index takes them (static configs).
  security::authorizer_settings authorizer_settings_{config_.super_users, config_.allow_everyone_if_no_acl_found};
  mutable client_quota_state client_quota_state_;   // quota_managers.h: clients' quotas (quotas.cc)
};

}  // namespace ringlog::broker::detail
