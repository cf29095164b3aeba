// Client quotas (issue 31): Kafka's DescribeClientQuotas and AlterClientQuotas over the metadata
// log (each key of an entity is a ClientQuotaRecord), and the measuring every broker does of its
// own clients (Kafka's ClientQuotaManager per broker: quotas bound a client's traffic at each
// broker, not its sum over the cluster). The model and its rules are in security/quota.h.

#include <algorithm>
#include <limits>
#include <set>

#include "constants.h"
#include "cluster_requests.h"
#include "metadata_barrier.h"
#include "metadata_publisher.h"
#include "security_manager.h"

namespace ringlog::broker {

namespace {

/// The security form of an image entity; nullopt for an entity type the index does not know.
std::optional<security::client_quota_entity> entity_of(const controller::metadata_image::client_quota_entity& parts) {
  security::client_quota_entity entity;
  for (const auto& [type, name] : parts) {
    auto part = name ? security::quota_entity_name::named(*name) : security::quota_entity_name::default_name();
    if (type == security::quota_entity_user) {
      entity.user = std::move(part);
    } else if (type == security::quota_entity_client_id) {
      entity.client_id = std::move(part);
    } else if (type == security::quota_entity_ip) {
      entity.ip = std::move(part);
    } else {
      return std::nullopt;
    }
  }
  return entity;
}

std::vector<protocol::client_quota_record::entity_data> record_entity(const security::client_quota_entity& entity) {
  std::vector<protocol::client_quota_record::entity_data> out;
  auto add = [&out](std::string_view type, const std::optional<security::quota_entity_name>& part) {
    if (!part) return;
    protocol::client_quota_record::entity_data d;
    d.entity_type = std::string(type);
    if (!part->is_default) d.entity_name = part->name; else d.entity_name = std::nullopt;
    out.push_back(std::move(d));
  };
  add(security::quota_entity_user, entity.user);
  add(security::quota_entity_client_id, entity.client_id);
  add(security::quota_entity_ip, entity.ip);
  return out;
}

/// The value a quota's rate counts: request_percentage counts percent-seconds of one thread
/// (Kafka's ClientRequestQuotaManager: 100 x seconds), so a rate per second is a percentage;
/// the others count what they are given.
double quota_unit_value(security::quota_key key, double value) {
  return key == security::quota_key::request_percentage ? value * 100.0 / 1000.0 : value;
}

}  // namespace

std::shared_ptr<const security::client_quota_index> client_quota_index_of(const controller::metadata_image& image) {
  std::vector<std::pair<security::client_quota_entity, security::client_quota_index::quota_values>> quotas;
  quotas.reserve(image.client_quotas().size());
  for (const auto& [parts, values] : image.client_quotas()) {
    auto entity = entity_of(parts);
    if (!entity) continue;
    security::client_quota_index::quota_values typed;
    for (const auto& [key_text, value] : values) {
      if (auto key = security::parse_quota_key(key_text)) typed[*key] = value;
    }
    if (!typed.empty()) quotas.emplace_back(std::move(*entity), std::move(typed));
  }
  return std::make_shared<const security::client_quota_index>(std::move(quotas));
}

}  // namespace ringlog::broker

namespace ringlog::broker::detail {

result<std::vector<client_quota_entry>> security_manager::describe_client_quotas(
    const security::client_quota_filter& filter) const {
  if (auto valid = security::validate_client_quota_filter(filter); !valid.ok()) {
    return error{errc::invalid_request, valid.error().message};
  }
  std::vector<client_quota_entry> out;
  for (const auto& [entity, values] : metadata_.view()->client_quotas->all()) {
    if (filter.matches(entity)) out.push_back(client_quota_entry{entity, values});
  }
  return out;
}

void security_manager::alter_client_quotas(std::vector<client_quota_alteration> alterations, bool validate_only,
                                      std::function<void(result<std::vector<std::optional<error>>>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  barrier_.post_caught_up([this, alterations = std::move(alterations), validate_only, done = std::move(done)]() mutable {
    std::vector<std::optional<error>> results;
    std::vector<protocol::metadata_record> records;
    std::set<security::client_quota_entity> entities;
    for (const auto& [parts, values] : metadata_.controller_view()->image->client_quotas()) {
      if (auto entity = entity_of(parts)) entities.insert(*entity);
    }
    for (const auto& alteration : alterations) {
      std::optional<error> refused;
      std::vector<protocol::metadata_record> mine;
      for (const auto& [key, value] : alteration.ops) {
        // A removal is checked as a set of 1 would be: the entity and the key must fit together.
        if (auto valid = security::validate_client_quota(alteration.entity, key, value.value_or(1)); !valid.ok()) {
          refused = error{errc::invalid_request, valid.error().message};
          break;
        }
        protocol::client_quota_record r;
        r.entity = record_entity(alteration.entity);
        r.key = std::string(security::to_string(key));
        r.value = value.value_or(0);
        r.remove = !value.has_value();
        mine.push_back(std::move(r));
      }
      results.push_back(refused);
      if (refused) continue;
      entities.insert(alteration.entity);
      for (auto& r : mine) records.push_back(std::move(r));
    }
    if (records.size() > client_quota_changes_per_call_max) {
      return done(error{errc::invalid_request, "one call changes at most " +
                                                   std::to_string(client_quota_changes_per_call_max) +
                                                   " quota keys, got " + std::to_string(records.size())});
    }
    if (entities.size() > client_quota_entities_max) {
      return done(error{errc::invalid_request, "the cluster keeps at most " + std::to_string(client_quota_entities_max) +
                                                   " quota entities; these would make " +
                                                   std::to_string(entities.size())});
    }
    if (records.empty() || validate_only) return done(std::move(results));
    log_.info("client quotas: " + std::to_string(records.size()) + " keys changed");
    writer_.commit_records(std::move(records), [results = std::move(results), done = std::move(done)](result<void> r) mutable {
      if (!r.ok()) return done(r.error());
      done(std::move(results));
    });
  });
}

int64_t security_manager::record_client_quota(security::quota_key key, std::string_view user, std::string_view client_id,
                                         double value) {
  const auto v = metadata_.view();
  if (!v->client_quotas->any(key)) return 0;
  const auto match = v->client_quotas->quota_for(key, user, client_id);
  if (!match) return 0;
  const int64_t now_ms = clock_.now_ms();
  std::lock_guard lock(client_quota_state_.mutex);
  return client_quota_state_.sensors.record(key, *match, quota_unit_value(key, value), quota_window(*v), now_ms);
}

int64_t security_manager::charge_controller_mutations(std::string_view user, std::string_view client_id, double partitions,
                                                 bool strict) {
  constexpr auto key = security::quota_key::controller_mutation_rate;
  const auto v = metadata_.view();
  if (!v->client_quotas->any(key)) return 0;
  const auto match = v->client_quotas->quota_for(key, user, client_id);
  if (!match) return 0;
  const int64_t now_ms = clock_.now_ms();
  std::lock_guard lock(client_quota_state_.mutex);
  return client_quota_state_.sensors.charge_mutations(*match, partitions, strict, quota_window(*v), now_ms);
}

int64_t security_manager::client_quota_throttle_ms(security::quota_key key, std::string_view user,
                                              std::string_view client_id, int64_t after_ms) const {
  const auto v = metadata_.view();
  if (!v->client_quotas->any(key)) return 0;
  const auto match = v->client_quotas->quota_for(key, user, client_id);
  if (!match) return 0;
  const int64_t now_ms = clock_.now_ms() + std::max<int64_t>(after_ms, 0);
  std::lock_guard lock(client_quota_state_.mutex);
  return client_quota_state_.sensors.throttle_ms(key, *match, quota_window(*v), now_ms);
}

std::optional<int64_t> security_manager::client_quota_window_value_max(security::quota_key key, std::string_view user,
                                                                  std::string_view client_id) const {
  const auto v = metadata_.view();
  if (!v->client_quotas->any(key)) return std::nullopt;
  const auto match = v->client_quotas->quota_for(key, user, client_id);
  if (!match) return std::nullopt;
  const auto window = quota_window(*v);
  const double seconds = static_cast<double>(std::max<int64_t>(window.samples - 1, 1) * window.sample_ms) / 1000.0;
  const double value = match->bound * seconds;
  if (!(value < 9.0e18)) return std::numeric_limits<int64_t>::max();
  return std::max<int64_t>(1, static_cast<int64_t>(value));
}

std::optional<double> security_manager::connection_creation_rate_for(std::string_view ip) const {
  return metadata_.view()->client_quotas->connection_creation_rate_for(ip);
}

std::vector<client_quota_usage> security_manager::client_quota_usages() const {
  std::vector<client_quota_usage> out;
  const auto v = metadata_.view();
  const auto& stored = v->client_quotas->all();
  {
    std::lock_guard lock(client_quota_state_.mutex);
    for (auto& u : client_quota_state_.sensors.usages()) {
      std::optional<double> bound;
      if (auto entity = stored.find(u.entity); entity != stored.end()) {
        if (auto value = entity->second.find(u.key); value != entity->second.end()) bound = value->second;
      }
      out.push_back(client_quota_usage{u.key, std::move(u.sensor_key), bound, u.total, u.throttle_time_ms_total,
                                       u.throttled_total});
    }
  }
  std::sort(out.begin(), out.end(), [](const client_quota_usage& a, const client_quota_usage& b) {
    if (a.throttle_time_ms_total != b.throttle_time_ms_total) return a.throttle_time_ms_total > b.throttle_time_ms_total;
    return std::tie(a.key, a.sensor_key) < std::tie(b.key, b.sensor_key);
  });
  if (out.size() > client_quota_metrics_sensors_max) out.resize(client_quota_metrics_sensors_max);
  return out;
}

}  // namespace ringlog::broker::detail
