// Client quotas (issue 31): Kafka's entity precedence, Rate and KIP-219 throttle time, KIP-599's
// token bucket. See the header for the rules and their sources.

#include "ringlog/security/quota.h"
#include "ringlog/security/quota_throttle.h"

#include "ringlog/security/acl_host.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace ringlog::security {

namespace {

constexpr std::array<std::string_view, 5> quota_key_names = {
    "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate",
    "connection_creation_rate"};

uint32_t bit(quota_key key) { return 1u << static_cast<uint32_t>(key); }

bool whole_number_key(quota_key key) {
  return key == quota_key::producer_byte_rate || key == quota_key::consumer_byte_rate ||
         key == quota_key::connection_creation_rate;
}

error invalid(const client_quota_entity& entity, std::string why) {
  return error{errc::invalid_config, "client quota of " + entity.to_string() + ": " + std::move(why)};
}

result<void> validate_part(const client_quota_entity& entity, const std::optional<quota_entity_name>& part,
                           std::string_view type) {
  if (!part || part->is_default) return {};
  if (part->name.empty()) return invalid(entity, "the " + std::string(type) + " name is empty (use <default>)");
  if (part->name.size() > quota_entity_name_bytes_max) {
    return invalid(entity, "the " + std::string(type) + " name is " + std::to_string(part->name.size()) +
                               " bytes, over " + std::to_string(quota_entity_name_bytes_max));
  }
  // `<default>` is how the default entity prints and is looked up: a name spelled so would be
  // taken for every client's default (send the default as a null name, or --entity-default).
  if (part->name == quota_default_name) {
    return invalid(entity, "the " + std::string(type) + " name '<default>' is reserved for the default entity: "
                               "send a null name (kafka-configs.sh --entity-default)");
  }
  if (std::any_of(part->name.begin(), part->name.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20; })) {
    return invalid(entity, "the " + std::string(type) + " name holds a control character");
  }
  // Kafka refuses an ip entity that is no address; a host name or a range would never match.
  if (type == quota_entity_ip) {
    auto canonical = canonical_acl_host(part->name);
    if (!canonical || *canonical == "*") {
      return invalid(entity, "the ip name '" + part->name + "' is not an IPv4 or IPv6 address");
    }
  }
  return {};
}

}  // namespace

std::string_view to_string(quota_key key) { return quota_key_names.at(static_cast<size_t>(key)); }

std::optional<quota_key> parse_quota_key(std::string_view text) {
  for (size_t i = 0; i < quota_key_names.size(); ++i) {
    if (quota_key_names[i] == text) return static_cast<quota_key>(i);
  }
  return std::nullopt;
}

std::string quota_entity_name::to_string() const { return is_default ? std::string(quota_default_name) : name; }

std::string client_quota_entity::to_string() const {
  std::string out;
  auto add = [&out](std::string_view type, const std::optional<quota_entity_name>& part) {
    if (!part) return;
    if (!out.empty()) out += ',';
    out += type;
    out += '=';
    out += part->to_string();
  };
  add(quota_entity_user, user);
  add(quota_entity_client_id, client_id);
  add(quota_entity_ip, ip);
  return out;
}

result<void> validate_client_quota(const client_quota_entity& entity, quota_key key, double value) {
  if (!entity.user && !entity.client_id && !entity.ip) {
    return error{errc::invalid_config, "a client quota names no entity: give user, client-id or ip"};
  }
  if (entity.ip && (entity.user || entity.client_id)) {
    return invalid(entity, "an ip entity cannot be combined with user or client-id");
  }
  if (auto r = validate_part(entity, entity.user, quota_entity_user); !r.ok()) return r;
  if (auto r = validate_part(entity, entity.client_id, quota_entity_client_id); !r.ok()) return r;
  if (auto r = validate_part(entity, entity.ip, quota_entity_ip); !r.ok()) return r;
  const bool ip_key = key == quota_key::connection_creation_rate;
  if (ip_key != entity.ip.has_value()) {
    return invalid(entity, std::string(to_string(key)) +
                               (ip_key ? " applies to ip entities only" : " applies to user and client-id entities, not ip"));
  }
  const std::string shown = std::string(to_string(key)) + "=" + std::to_string(value);
  if (!std::isfinite(value) || value <= 0) return invalid(entity, shown + " must be a number above 0");
  if (whole_number_key(key) && std::floor(value) != value) return invalid(entity, shown + " must be a whole number");
  if (key == quota_key::connection_creation_rate && value > std::numeric_limits<int32_t>::max()) {
    return invalid(entity, shown + " must be at most 2147483647");
  }
  return {};
}

client_quota_index::client_quota_index(std::vector<std::pair<client_quota_entity, quota_values>> quotas) {
  for (auto& [entity, values] : quotas) {
    auto& stored = quotas_[entity];
    for (const auto& [key, value] : values) stored[key] = value;
  }
  for (const auto& [entity, values] : quotas_) {
    by_text_.emplace(entity.to_string(), &values);
    for (const auto& [key, value] : values) keys_present_ |= bit(key);
    if (entity.user) has_user_entities_ = true;
    if (!entity.user && entity.client_id) has_client_only_entities_ = true;
  }
}

const double* client_quota_index::find(const client_quota_entity& entity, quota_key key) const {
  const auto it = by_text_.find(entity.to_string());
  if (it == by_text_.end()) return nullptr;
  const auto value = it->second->find(key);
  return value == it->second->end() ? nullptr : &value->second;
}

std::optional<quota_match> client_quota_index::quota_for(quota_key key, std::string_view user,
                                                         std::string_view client_id) const {
  if (!any(key) || key == quota_key::connection_creation_rate) return std::nullopt;
  const auto u = quota_entity_name::named(std::string(user));
  const auto c = quota_entity_name::named(std::string(client_id));
  const auto d = quota_entity_name::default_name();
  // Kafka's 8 levels, most specific first; the sensor keeps the client's own names where the
  // matched entity has a part (user and/or client-id).
  struct level {
    client_quota_entity entity;
    bool user_tag;
    bool client_tag;
  };
  std::vector<level> levels;
  levels.reserve(8);
  if (has_user_entities_) {
    levels.push_back({{u, c, {}}, true, true});
    levels.push_back({{u, d, {}}, true, true});
    levels.push_back({{u, {}, {}}, true, false});
    levels.push_back({{d, c, {}}, true, true});
    levels.push_back({{d, d, {}}, true, true});
    levels.push_back({{d, {}, {}}, true, false});
  }
  if (has_client_only_entities_) {
    levels.push_back({{{}, c, {}}, false, true});
    levels.push_back({{{}, d, {}}, false, true});
  }
  for (auto& l : levels) {
    const double* bound = find(l.entity, key);
    if (bound == nullptr) continue;
    client_quota_entity tags;
    if (l.user_tag) tags.user = u;
    if (l.client_tag) tags.client_id = c;
    return quota_match{*bound, std::move(l.entity), tags.to_string()};
  }
  return std::nullopt;
}

std::optional<double> client_quota_index::connection_creation_rate_for(std::string_view ip) const {
  if (!any(quota_key::connection_creation_rate)) return std::nullopt;
  for (const auto& name : {quota_entity_name::named(std::string(ip)), quota_entity_name::default_name()}) {
    if (const double* rate = find(client_quota_entity{{}, {}, name}, quota_key::connection_creation_rate)) return *rate;
  }
  return std::nullopt;
}

bool client_quota_index::any(quota_key key) const { return (keys_present_ & bit(key)) != 0; }

quota_rate::quota_rate(quota_window_config config)
    : config_(config), samples_(static_cast<size_t>(std::max(config.samples, 2))) {
  config_.samples = static_cast<int32_t>(samples_.size());
  config_.sample_ms = std::max<int64_t>(config_.sample_ms, 1);
}

bool quota_rate::live(const sample& s, int64_t now_ms) const {
  return s.used && now_ms - s.start_ms < config_.samples * config_.sample_ms;
}

void quota_rate::record(double value, int64_t now_ms) {
  now_ms = std::max(now_ms, last_record_ms_);
  last_record_ms_ = now_ms;
  sample* s = &samples_[current_];
  if (s->used && now_ms - s->start_ms >= config_.sample_ms) {
    current_ = (current_ + 1) % samples_.size();
    s = &samples_[current_];
    s->used = false;
  }
  if (!s->used) *s = sample{now_ms, 0, true};
  s->value += value;
}

int64_t quota_rate::window_ms(int64_t now_ms) const {
  int64_t oldest = now_ms;
  for (const auto& s : samples_) {
    if (live(s, now_ms)) oldest = std::min(oldest, s.start_ms);
  }
  int64_t elapsed = std::max<int64_t>(now_ms - oldest, 0);
  const int64_t full_windows = elapsed / config_.sample_ms;
  const int64_t min_full_windows = config_.samples - 1;
  if (full_windows < min_full_windows) elapsed += (min_full_windows - full_windows) * config_.sample_ms;
  return elapsed;
}

double quota_rate::rate_per_second(int64_t now_ms) const {
  double total = 0;
  for (const auto& s : samples_) {
    if (live(s, now_ms)) total += s.value;
  }
  return total * 1000.0 / static_cast<double>(window_ms(now_ms));
}

int64_t quota_throttle_time_ms(double observed_per_second, double bound_per_second, int64_t window_ms,
                               int64_t max_ms) {
  if (!(bound_per_second > 0) || observed_per_second <= bound_per_second) return 0;
  const double ms = (observed_per_second - bound_per_second) / bound_per_second * static_cast<double>(window_ms);
  return std::clamp<int64_t>(std::llround(std::min(ms, static_cast<double>(max_ms))), 0, max_ms);
}

namespace {

/// Events (a sample expiring, a young window's padding dropping at a sample boundary) one
/// throttle-time search steps over before it settles for KIP-219's X from there: 2 per sample
/// of the default 11 and then some; a larger quota.window.num is the only way past it.
constexpr int quota_throttle_events_max = 64;

/// What the rate divides at `t`: the bytes (or %-ms) of its live samples and its window, ms.
struct rate_state {
  double total;
  int64_t window_ms;
};

rate_state state_at(const quota_rate& rate, int64_t t) {
  const int64_t w = rate.window_ms(t);
  return {rate.rate_per_second(t) * static_cast<double>(w) / 1000.0, w};
}

/// Whether the rate is no longer one straight segment between `a` and `b` (a < b): between
/// events the total stays and the window grows by exactly b - a; an expiry changes the total
/// (and the oldest sample), a boundary of a young window drops the window.
bool event_between(const quota_rate& rate, const rate_state& at_a, int64_t a, int64_t b) {
  const rate_state at_b = state_at(rate, b);
  const double slack = 1e-9 * std::max(1.0, at_a.total);
  return at_b.window_ms - at_a.window_ms != b - a || std::abs(at_b.total - at_a.total) > slack;
}

}  // namespace

int64_t quota_throttle_time_ms(const quota_rate& rate, double bound_per_second, int64_t now_ms, int64_t max_ms) {
  if (!(bound_per_second > 0) || max_ms <= 0) return 0;
  int64_t t = now_ms;
  for (int event = 0; event <= quota_throttle_events_max; ++event) {
    if (rate.rate_per_second(t) <= bound_per_second) return t - now_ms;
    if (t - now_ms >= max_ms) return max_ms;
    const rate_state at_t = state_at(rate, t);
    // Within one segment the rate is total / (window + d): at the bound after d = need.
    const double need = at_t.total * 1000.0 / bound_per_second - static_cast<double>(at_t.window_ms);
    const int64_t limit = std::min(t + std::max<int64_t>(1, static_cast<int64_t>(std::ceil(need))), now_ms + max_ms);
    if (event == quota_throttle_events_max) {
      return std::min(max_ms, t - now_ms + quota_throttle_time_ms(rate.rate_per_second(t), bound_per_second,
                                                                  at_t.window_ms, max_ms));
    }
    if (!event_between(rate, at_t, t, limit)) {
      t = limit;   // the bound is reached on this segment (or max_ms is)
      continue;
    }
    // The first event in (t, limit]: the smallest e with an event in (t, e].
    int64_t lo = t;
    int64_t hi = limit;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (event_between(rate, at_t, t, mid) ? hi : lo) = mid;
    }
    t = hi;
  }
  return max_ms;
}

quota_token_bucket::quota_token_bucket(double rate_per_second, quota_window_config config, int64_t now_ms)
    : rate_per_second_(rate_per_second),
      burst_(rate_per_second * config.samples * static_cast<double>(config.sample_ms) / 1000.0),
      tokens_(burst_),
      last_ms_(now_ms),
      config_(config) {}

void quota_token_bucket::refill(int64_t now_ms) {
  if (now_ms <= last_ms_) return;
  tokens_ = std::min(burst_, tokens_ + rate_per_second_ * static_cast<double>(now_ms - last_ms_) / 1000.0);
  last_ms_ = now_ms;
}

bool quota_token_bucket::admits(int64_t now_ms) {
  refill(now_ms);
  return tokens_ > 0;
}

void quota_token_bucket::record(double cost, int64_t now_ms) {
  refill(now_ms);
  tokens_ -= cost;
}

int64_t quota_token_bucket::throttle_time_ms(int64_t now_ms) {
  refill(now_ms);
  if (tokens_ > 0 || !(rate_per_second_ > 0)) return 0;
  // Back above zero: the deficit plus one token's worth of a millisecond, rounded up. Computed
  // in double and clamped before the cast: at controller_mutation_rate=1e-20 one partition is
  // 1e23 ms, which overflowed int64 (the breaker of session 38 saw "must wait
  // -9223372036854775807 ms" over HTTP and an int32 wrap or 0 over Kafka).
  const double ms = std::ceil(-tokens_ / rate_per_second_ * 1000.0) + 1;
  if (!(ms < static_cast<double>(quota_throttle_ms_max))) return quota_throttle_ms_max;
  return static_cast<int64_t>(ms);
}

void quota_token_bucket::set_rate(double rate_per_second) {
  rate_per_second_ = rate_per_second;
  burst_ = rate_per_second * config_.samples * static_cast<double>(config_.sample_ms) / 1000.0;
  tokens_ = std::min(tokens_, burst_);
}

namespace {

const std::optional<quota_entity_name>* entity_part(const client_quota_entity& entity, std::string_view type) {
  if (type == quota_entity_user) return &entity.user;
  if (type == quota_entity_client_id) return &entity.client_id;
  if (type == quota_entity_ip) return &entity.ip;
  return nullptr;
}

size_t entity_parts(const client_quota_entity& entity) {
  return (entity.user ? 1u : 0u) + (entity.client_id ? 1u : 0u) + (entity.ip ? 1u : 0u);
}

}  // namespace

bool client_quota_filter::matches(const client_quota_entity& entity) const {
  if (strict && entity_parts(entity) != components.size()) return false;
  for (const auto& c : components) {
    const auto* part = entity_part(entity, c.entity_type);
    if (part == nullptr || !part->has_value()) return false;
    switch (c.match_type) {
      case client_quota_filter_component::match::exact:
        if ((*part)->is_default || (*part)->name != c.name) return false;
        break;
      case client_quota_filter_component::match::default_name:
        if (!(*part)->is_default) return false;
        break;
      case client_quota_filter_component::match::specified: break;
    }
  }
  return true;
}

result<void> validate_client_quota_filter(const client_quota_filter& filter) {
  bool user_or_client = false;
  bool ip = false;
  std::vector<std::string_view> seen;
  for (const auto& c : filter.components) {
    const auto where = "quota filter component '" + c.entity_type + "'";
    if (entity_part(client_quota_entity{}, c.entity_type) == nullptr) {
      return error{errc::invalid_config, where + ": unknown entity type (user, client-id or ip)"};
    }
    if (std::find(seen.begin(), seen.end(), c.entity_type) != seen.end()) {
      return error{errc::invalid_config, where + " appears twice"};
    }
    seen.push_back(c.entity_type);
    if (c.match_type == client_quota_filter_component::match::exact && c.name.empty()) {
      return error{errc::invalid_config, where + ": an exact match needs a name"};
    }
    if (c.name.size() > quota_entity_name_bytes_max) {
      return error{errc::invalid_config, where + ": name longer than " + std::to_string(quota_entity_name_bytes_max) + " bytes"};
    }
    (c.entity_type == quota_entity_ip ? ip : user_or_client) = true;
  }
  if (ip && user_or_client) {
    return error{errc::invalid_config, "a quota filter may not combine ip with user or client-id"};
  }
  return base::ok_v;
}

}  // namespace ringlog::security
