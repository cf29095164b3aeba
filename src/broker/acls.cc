// ACLs (issue 30): Kafka's CreateAcls, DescribeAcls and DeleteAcls over the metadata log. Each
// ACL is an AccessControlEntryRecord with a UUID of its own (Kafka's StandardAuthorizer keeps
// them so); every node applies them into its image and the view's authorizer index
// (security::acl_index), which answers checks without locks.

#include <set>

#include "constants.h"
#include "cluster_requests.h"
#include "metadata_barrier.h"
#include "metadata_publisher.h"
#include "security_manager.h"
#include "ringlog/model/types.h"
#include "ringlog/security/acl_host.h"

namespace ringlog::broker {

security::acl_binding acl_of(const protocol::access_control_entry_record& r) {
  return security::acl_binding{static_cast<security::resource_type>(r.resource_type),
                               r.resource_name,
                               static_cast<security::pattern_type>(r.pattern_type),
                               r.principal,
                               r.host,
                               static_cast<security::acl_operation>(r.operation),
                               static_cast<security::acl_permission_type>(r.permission_type)};
}

protocol::access_control_entry_record acl_record(const security::acl_binding& acl, const controller::uuid& id) {
  protocol::access_control_entry_record r;
  r.id = id;
  r.resource_type = static_cast<int8_t>(acl.resource);
  r.resource_name = acl.resource_name;
  r.pattern_type = static_cast<int8_t>(acl.pattern);
  r.principal = acl.principal;
  r.host = acl.host;
  r.operation = static_cast<int8_t>(acl.operation);
  r.permission_type = static_cast<int8_t>(acl.permission);
  return r;
}

std::shared_ptr<const security::acl_index> acl_index_of(const controller::metadata_image& image) {
  std::vector<security::acl_binding> acls;
  acls.reserve(image.acls().size());
  for (const auto& [id, record] : image.acls()) acls.push_back(acl_of(record));
  return std::make_shared<const security::acl_index>(std::move(acls));
}

}  // namespace ringlog::broker

namespace ringlog::broker::detail {

namespace {

/// `filter` with its host in the form ACLs are stored and indexed in (canonical_acl_host), so
/// "0:0:0:0:0:0:0:1" finds an ACL on "::1".
security::acl_filter canonical_hosts(security::acl_filter filter) {
  if (filter.host) {
    if (auto host = security::canonical_acl_host(*filter.host)) filter.host = std::move(*host);
  }
  return filter;
}

error security_disabled() {
  return error{errc::security_disabled,
               "no authorizer is configured on this broker: set authorizer.class.name="
               "org.apache.kafka.metadata.authorizer.StandardAuthorizer to keep ACLs"};
}

}  // namespace

security::authorization_decision security_manager::authorize(const security::kafka_principal& principal,
                                                        std::string_view host,
                                                        const security::acl_action& action) const {
  if (!config_.authorizer_enabled) {
    return security::authorization_decision{security::authorization_result::allowed,
                                            security::authorization_decision::rule::no_acl_default, std::nullopt};
  }
  return metadata_.view()->acls->authorize(principal, host, action, authorizer_settings_);
}

std::optional<error> security_manager::auto_create_refusal(const produce_request& request) const {
  if (!config_.auto_create_topics_enable || model::is_internal_topic(request.topic)) {
    return error{errc::unknown_topic_or_partition, unknown_topic_message(request.topic)};
  }
  if (may_create_topic(*this, request.principal, request.host, request.topic)) return std::nullopt;
  return error{errc::unknown_topic_or_partition, unknown_topic_message(request.topic) +
                                                     "; auto-creating it needs CREATE on the cluster or on the topic, "
                                                     "which " + request.principal.to_string() + " lacks"};
}

void security_manager::create_acls(std::vector<security::acl_binding> acls,
                              std::function<void(result<std::vector<std::optional<error>>>)> done) {
  if (!config_.authorizer_enabled) return done(security_disabled());
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  barrier_.post_caught_up([this, acls = std::move(acls), done = std::move(done)]() mutable {
    std::vector<std::optional<error>> results;
    std::vector<protocol::metadata_record> records;
    std::set<security::acl_binding> stored;
    for (const auto& [id, record] : metadata_.controller_view()->image->acls()) stored.insert(acl_of(record));
    for (auto& acl : acls) {
      if (auto valid = security::validate_acl(acl); !valid.ok()) {
        results.emplace_back(error{errc::invalid_request, valid.error().message});
        continue;
      }
      acl.host = *security::canonical_acl_host(acl.host);   // validate_acl checked it parses
      results.emplace_back(std::nullopt);
      if (stored.insert(acl).second) records.push_back(acl_record(acl, new_topic_id(random_)));
    }
    if (records.empty()) return done(std::move(results));
    if (records.size() > acl_changes_per_call_max) {
      return done(error{errc::invalid_request, "one call changes at most " +
                                                   std::to_string(acl_changes_per_call_max) + " ACLs, got " +
                                                   std::to_string(records.size())});
    }
    if (stored.size() > acls_max) {
      return done(error{errc::invalid_request, "the cluster keeps at most " + std::to_string(acls_max) +
                                                   " ACLs; these would make " + std::to_string(stored.size())});
    }
    log_.info("ACLs: " + std::to_string(records.size()) + " created");
    writer_.commit_records(std::move(records), [results = std::move(results), done = std::move(done)](result<void> r) mutable {
      if (!r.ok()) return done(r.error());
      done(std::move(results));
    });
  });
}

result<std::vector<security::acl_binding>> security_manager::describe_acls(const security::acl_filter& filter) const {
  if (!config_.authorizer_enabled) return security_disabled();
  if (auto valid = security::validate_acl_filter(filter); !valid.ok()) {
    return error{errc::invalid_request, valid.error().message};
  }
  return metadata_.view()->acls->select(canonical_hosts(filter));
}

void security_manager::delete_acls(
    std::vector<security::acl_filter> filters,
    std::function<void(result<std::vector<result<std::vector<security::acl_binding>>>>)> done) {
  if (!config_.authorizer_enabled) return done(security_disabled());
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  barrier_.post_caught_up([this, filters = std::move(filters), done = std::move(done)]() mutable {
    std::vector<result<std::vector<security::acl_binding>>> results;
    std::vector<protocol::metadata_record> records;
    std::set<std::array<uint8_t, 16>> removed;
    for (const auto& filter : filters) {
      if (auto valid = security::validate_acl_filter(filter); !valid.ok()) {
        results.emplace_back(error{errc::invalid_request, valid.error().message});
        continue;
      }
      std::vector<security::acl_binding> matched;
      const auto canonical = canonical_hosts(filter);
      for (const auto& [id, record] : metadata_.controller_view()->image->acls()) {
        auto acl = acl_of(record);
        if (auto host = security::canonical_acl_host(acl.host)) acl.host = std::move(*host);
        if (!canonical.matches(acl)) continue;
        matched.push_back(acl);
        if (removed.insert(id).second) {
          protocol::remove_access_control_entry_record remove;
          remove.id = record.id;
          records.push_back(remove);
        }
      }
      std::sort(matched.begin(), matched.end());
      results.emplace_back(std::move(matched));
    }
    if (records.empty()) return done(std::move(results));
    if (records.size() > acl_changes_per_call_max) {
      return done(error{errc::invalid_request, "one call changes at most " +
                                                   std::to_string(acl_changes_per_call_max) +
                                                   " ACLs; the filters select " + std::to_string(records.size())});
    }
    log_.info("ACLs: " + std::to_string(records.size()) + " deleted");
    writer_.commit_records(std::move(records), [results = std::move(results), done = std::move(done)](result<void> r) mutable {
      if (!r.ok()) return done(r.error());
      done(std::move(results));
    });
  });
}

}  // namespace ringlog::broker::detail
