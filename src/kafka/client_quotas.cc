// Client quotas on the Kafka door (issue 31): DescribeClientQuotas (48) and AlterClientQuotas
// (49) as Kafka serves them (KIP-546; core/src/main/scala/kafka/server/ControllerApis.scala and
// ClientQuotaControlManager), and the KIP-219 throttling every answer goes through: the
// request_percentage quota (KIP-124) and which request versions throttle themselves.

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>

#include "handlers.h"
#include "ringlog/base/latency_stages.h"

namespace ringlog::kafka::detail {

namespace {

/// Kafka's ClientQuotaFilterComponent match types (DescribeClientQuotasRequest).
constexpr int8_t match_type_exact = 0;
constexpr int8_t match_type_default = 1;
constexpr int8_t match_type_specified = 2;

/// KIP-219's version table: from which version a client of each api waits out the throttle time
/// itself (Kafka's shouldClientThrottle overrides). Apis not listed came after KIP-219 (Kafka
/// 2.0): their clients always do.
struct throttling_version {
  int16_t api_key;
  int16_t first_version;
};
constexpr std::array<throttling_version, 28> throttling_versions{{
    {0, 6},  {1, 8},  {2, 3},  {3, 6},  {8, 4},  {9, 4},  {10, 2}, {11, 3}, {12, 2}, {13, 2},
    {14, 2}, {15, 2}, {16, 2}, {18, 2}, {19, 3}, {20, 2}, {21, 1}, {22, 1}, {23, 2}, {24, 1},
    {25, 1}, {26, 1}, {28, 1}, {29, 1}, {30, 1}, {31, 1}, {32, 2}, {33, 1},
}};

/// One entity component of a request, as Kafka names it: type and name (nullopt = `<default>`).
template <typename Component>
std::optional<std::string> add_entity_part(security::client_quota_entity& entity, const Component& c) {
  auto part = c.entity_name ? security::quota_entity_name::named(*c.entity_name)
                            : security::quota_entity_name::default_name();
  std::optional<security::quota_entity_name>* slot = nullptr;
  if (c.entity_type == security::quota_entity_user) slot = &entity.user;
  if (c.entity_type == security::quota_entity_client_id) slot = &entity.client_id;
  if (c.entity_type == security::quota_entity_ip) slot = &entity.ip;
  if (slot == nullptr) {
    return "unknown quota entity type '" + c.entity_type + "' (user, client-id or ip)";
  }
  if (slot->has_value()) return "entity type '" + c.entity_type + "' named twice in one entity";
  *slot = std::move(part);
  return std::nullopt;
}

/// An AlterClientQuotas entry as the broker API takes it. Errors (INVALID_REQUEST): an unknown
/// entity type or key, a type or key named twice. The values are checked by the broker
/// (security::validate_client_quota: entity and key fit, finite, > 0, whole where Kafka's is).
base::result<broker::client_quota_alteration, std::string> parse_alteration(
    const protocol::alter_client_quotas_request_data::entry_data& entry) {
  broker::client_quota_alteration out;
  for (const auto& c : entry.entity) {
    if (auto refused = add_entity_part(out.entity, c)) return *refused;
  }
  for (const auto& op : entry.ops) {
    auto key = security::parse_quota_key(op.key);
    if (!key) {
      return "unknown quota key '" + op.key + "' for " + out.entity.to_string() +
             " (producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate, "
             "connection_creation_rate)";
    }
    if (out.ops.contains(*key)) return "quota key '" + op.key + "' named twice for " + out.entity.to_string();
    out.ops[*key] = op.remove ? std::nullopt : std::optional<double>(op.value);
  }
  return out;
}

/// Kafka's ClientQuotaFilter from DescribeClientQuotas. Errors (INVALID_REQUEST): an unknown
/// match type, an exact match without a name.
base::result<security::client_quota_filter, std::string> parse_filter(
    const protocol::describe_client_quotas_request_data& request) {
  security::client_quota_filter filter;
  filter.strict = request.strict;
  using match = security::client_quota_filter_component::match;
  for (const auto& c : request.components) {
    security::client_quota_filter_component component;
    component.entity_type = c.entity_type;
    switch (c.match_type) {
      case match_type_exact:
        if (!c.match) return "an exact match (match_type 0) of '" + c.entity_type + "' needs a name";
        component.match_type = match::exact;
        component.name = *c.match;
        break;
      case match_type_default: component.match_type = match::default_name; break;
      case match_type_specified: component.match_type = match::specified; break;
      default:
        return "unknown match_type " + std::to_string(c.match_type) + " of '" + c.entity_type +
               "' (0 exact, 1 default, 2 specified)";
    }
    filter.components.push_back(std::move(component));
  }
  return filter;
}

template <typename EntityData>
std::vector<EntityData> entity_data_of(const security::client_quota_entity& entity) {
  std::vector<EntityData> out;
  auto add = [&out](std::string_view type, const std::optional<security::quota_entity_name>& part) {
    if (!part) return;
    EntityData d;
    d.entity_type = std::string(type);
    d.entity_name = part->is_default ? std::nullopt : std::optional<std::string>(part->name);
    out.push_back(std::move(d));
  };
  add(security::quota_entity_user, entity.user);
  add(security::quota_entity_client_id, entity.client_id);
  add(security::quota_entity_ip, entity.ip);
  return out;
}

}  // namespace

bool client_throttles(int16_t api_key, int16_t api_version) {
  for (const auto& v : throttling_versions) {
    if (v.api_key == api_key) return api_version >= v.first_version;
  }
  return true;
}

int64_t request_context::request_throttle_time_ms() const {
  if (!timing) return 0;
  const int64_t dispatched_ns = timing->dispatch_ns.load(std::memory_order_acquire);
  const int64_t handling_ns = dispatched_ns != 0 ? dispatched_ns : base::monotonic_ns() - timing->received_ns;
  return broker_api().security().record_client_quota(security::quota_key::request_percentage, quota_user(*this), client_id,
                                          static_cast<double>(std::max<int64_t>(handling_ns, 0)) / 1e6);
}

void request_context::respond_throttled(response_frame frame, int64_t throttle_ms) const {
  if (throttle_ms > 0) {
    frame.throttle_time_ms = static_cast<int32_t>(std::min<int64_t>(throttle_ms, std::numeric_limits<int32_t>::max()));
    frame.client_throttles = client_throttles(api_key, api_version);
  }
  respond(std::move(frame));
}

void handle_describe_client_quotas(const request_context& ctx, protocol::describe_client_quotas_request_data request) {
  using response = protocol::describe_client_quotas_response_data;
  response out;
  auto refuse = [&](int16_t code, std::string message) {
    out.error_code = code;
    out.error_message = std::move(message);
    out.entries = std::nullopt;
    ctx.answer(out);
  };
  // DESCRIBE_CONFIGS on the cluster (KafkaApis.handleDescribeClientQuotasRequest).
  if (!ctx.authorized_cluster(security::acl_operation::describe_configs)) {
    return refuse(error_code::cluster_authorization_failed,
                  "DESCRIBE_CONFIGS on the cluster is not allowed for " + ctx.principal.to_string());
  }
  auto filter = parse_filter(request);
  if (!filter.ok()) return refuse(error_code::invalid_request, filter.error());
  auto described = ctx.broker_api().security().describe_client_quotas(filter.value());
  if (!described.ok()) return refuse(code_of(described.error()), described.error().message);
  out.error_message = std::nullopt;
  out.entries.emplace();
  for (const auto& entry : described.value()) {
    response::entry_data e;
    e.entity = entity_data_of<response::entity_data>(entry.entity);
    for (const auto& [key, value] : entry.values) {
      response::value_data v;
      v.key = std::string(security::to_string(key));
      v.value = value;
      e.values.push_back(std::move(v));
    }
    out.entries->push_back(std::move(e));
  }
  ctx.answer(out);
}

void handle_alter_client_quotas(const request_context& ctx, protocol::alter_client_quotas_request_data request) {
  using response = protocol::alter_client_quotas_response_data;
  response out;
  for (const auto& entry : request.entries) {
    response::entry_data r;
    r.error_message = std::nullopt;
    for (const auto& c : entry.entity) r.entity.push_back(response::entity_data{c.entity_type, c.entity_name, {}});
    out.entries.push_back(std::move(r));
  }
  auto refuse = [&out](size_t i, int16_t code, std::string message) {
    out.entries[i].error_code = code;
    out.entries[i].error_message = std::move(message);
  };
  // ALTER_CONFIGS on the cluster (KafkaApis.handleAlterClientQuotasRequest): every entry refused.
  if (!ctx.authorized_cluster(security::acl_operation::alter_configs)) {
    for (size_t i = 0; i < out.entries.size(); ++i) {
      refuse(i, error_code::cluster_authorization_failed,
             "ALTER_CONFIGS on the cluster is not allowed for " + ctx.principal.to_string());
    }
    return ctx.answer(out);
  }
  std::vector<std::optional<broker::client_quota_alteration>> parsed;
  std::map<security::client_quota_entity, size_t> times_named;
  for (size_t i = 0; i < request.entries.size(); ++i) {
    auto alteration = parse_alteration(request.entries[i]);
    if (!alteration.ok()) refuse(i, error_code::invalid_request, alteration.error());
    if (alteration.ok()) ++times_named[alteration->entity];
    parsed.push_back(alteration.ok() ? std::optional(std::move(alteration).value()) : std::nullopt);
  }
  // An entity named by two entries of one request is refused in both (which should win is not
  // Kafka's to guess either: its admin client refuses such a request before sending it).
  std::vector<broker::client_quota_alteration> alterations;
  std::vector<size_t> entry_of;   // alterations[k] answers out.entries[entry_of[k]]
  for (size_t i = 0; i < parsed.size(); ++i) {
    if (!parsed[i]) continue;
    if (times_named[parsed[i]->entity] > 1) {
      refuse(i, error_code::invalid_request, "entity " + parsed[i]->entity.to_string() + " named twice in one request");
      continue;
    }
    alterations.push_back(std::move(*parsed[i]));
    entry_of.push_back(i);
  }
  if (alterations.empty()) return ctx.answer(out);
  ctx.broker_api().security().alter_client_quotas(
      std::move(alterations), request.validate_only,
      [ctx, out = std::move(out), entry_of](broker::result<std::vector<std::optional<broker::error>>> r) mutable {
        for (size_t k = 0; k < entry_of.size(); ++k) {
          const broker::error* e = !r.ok() ? &r.error() : (k < r->size() && (*r)[k] ? &*(*r)[k] : nullptr);
          if (e == nullptr) continue;
          out.entries[entry_of[k]].error_code = code_of(*e);
          out.entries[entry_of[k]].error_message = e->message;
        }
        ctx.answer(out);
      });
}

}  // namespace ringlog::kafka::detail
