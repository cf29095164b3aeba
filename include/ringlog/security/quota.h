#pragma once
// Client quotas (issue 31): who a quota names, which quota bounds a client, and the windows that
// measure it. Kafka's semantics are the reference:
//   - entities (KIP-55, KIP-257, KIP-612): a user and/or a client-id, each a name or `<default>`
//     (Kafka's null entity name); or an ip (a name or `<default>`) alone, for connection rates.
//   - precedence (Kafka's DefaultQuotaCallback; the most specific entity that sets the key wins):
//       1 user=U,client-id=C   2 user=U,client-id=<default>   3 user=U
//       4 user=<default>,client-id=C   5 user=<default>,client-id=<default>   6 user=<default>
//       7 client-id=C   8 client-id=<default>
//   - a client is measured under the entity that matched, with its own user and client-id in
//     place of `<default>` (Kafka's quota metric tags): a `<default>` quota bounds each user or
//     client-id separately, never their sum.
//   - rates are Kafka's Rate over quota.window.num samples of quota.window.size.seconds; over the
//     bound a client is throttled (KIP-219) until its sensor's own rate is back at the bound
//     (quota_throttle.h says why not KIP-219's X = (O - T) / T * W, which assumes the window grows
//     while the client waits).
//   - controller mutations (KIP-599) are a token bucket: `controller_mutation_rate` tokens per
//     second, a burst of rate x samples x window, refused (THROTTLING_QUOTA_EXCEEDED) while the
//     bucket is empty or below.
// Pure: no clocks, no threads; callers pass now_ms and own each object on one thread.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringlog/security/errc.h"

namespace ringlog::security {

/// Kafka's quota config keys (QuotaConfigs), with their units.
enum class quota_key : int8_t {
  producer_byte_rate,         // bytes/s a user/client-id may produce (Kafka: LONG)
  consumer_byte_rate,         // bytes/s a user/client-id may fetch (Kafka: LONG)
  request_percentage,         // % of one request-handling thread's time over the window (Kafka: DOUBLE)
  controller_mutation_rate,   // topic partitions created/deleted per second (KIP-599; Kafka: DOUBLE)
  connection_creation_rate,   // new connections per second from one ip (KIP-612; Kafka: INT)
};

/// Kafka's key text ("producer_byte_rate", ...).
std::string_view to_string(quota_key key);
/// Parses Kafka's key text (exact, lower case as Kafka writes it); nullopt when unknown.
std::optional<quota_key> parse_quota_key(std::string_view text);

/// Kafka's entity type names, as DescribeClientQuotas and kafka-configs.sh write them.
inline constexpr std::string_view quota_entity_user = "user";
inline constexpr std::string_view quota_entity_client_id = "client-id";
inline constexpr std::string_view quota_entity_ip = "ip";
/// How `<default>` prints (kafka-configs.sh --entity-default, Kafka's ConfigEntityName.Default).
inline constexpr std::string_view quota_default_name = "<default>";
/// Longest user, client-id or ip name a quota entity may hold, bytes (Kafka bounds none; this
/// bounds what the index keys and what metrics label).
inline constexpr size_t quota_entity_name_bytes_max = 1024;

/// One part of an entity: a name, or `<default>` (every user / client-id / ip without its own).
struct quota_entity_name {
  bool is_default = false;
  std::string name;   // empty when is_default

  static quota_entity_name named(std::string n) { return {false, std::move(n)}; }
  static quota_entity_name default_name() { return {true, {}}; }
  /// The name, or `<default>`.
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const quota_entity_name&, const quota_entity_name&) = default;
  friend auto operator<=>(const quota_entity_name&, const quota_entity_name&) = default;
};

/// Kafka's ClientQuotaEntity: which clients a quota names. Absent parts name nothing.
struct client_quota_entity {
  std::optional<quota_entity_name> user;
  std::optional<quota_entity_name> client_id;
  std::optional<quota_entity_name> ip;

  /// `user=alice,client-id=<default>` / `ip=10.0.0.1` (user first, as kafka-configs prints).
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const client_quota_entity&, const client_quota_entity&) = default;
  friend auto operator<=>(const client_quota_entity&, const client_quota_entity&) = default;
};

/// Checks an entity, key and value to be stored (AlterClientQuotas, the HTTP and CLI set), as
/// Kafka's ClientQuotaControlManager does: at least one part; ip never combined with user or
/// client-id; names non-empty and within quota_entity_name_bytes_max; connection_creation_rate
/// only on ip entities and the other keys only on user/client-id ones; a value finite and > 0,
/// a whole number for producer_byte_rate, consumer_byte_rate (Kafka LONG) and
/// connection_creation_rate (Kafka INT, <= 2^31-1). Errors: invalid_config naming the entity,
/// the key and the value.
result<void> validate_client_quota(const client_quota_entity& entity, quota_key key, double value);

/// One component of Kafka's ClientQuotaFilter (DescribeClientQuotas, KIP-546).
struct client_quota_filter_component {
  enum class match : int8_t {
    exact = 0,       // the entity names `name` for this type
    default_name = 1,   // the entity holds this type's `<default>`
    specified = 2,   // the entity holds this type, any name or `<default>`
  };
  std::string entity_type;   // "user", "client-id" or "ip"
  match match_type = match::specified;
  std::string name;          // for exact only
};

/// Kafka's ClientQuotaFilter: an entity matches when it satisfies every component and, when
/// `strict`, holds no entity type the components do not name (Kafka's ClientQuotasImage).
struct client_quota_filter {
  std::vector<client_quota_filter_component> components;
  bool strict = false;
  [[nodiscard]] bool matches(const client_quota_entity& entity) const;
};

/// Checks a filter as Kafka does: known entity types, each at most once, an exact match with a
/// non-empty name, ip not combined with user or client-id. Errors: invalid_config naming the
/// component.
result<void> validate_client_quota_filter(const client_quota_filter& filter);

/// The quota that bounds one client, and the sensor its usage is measured under.
struct quota_match {
  double bound = 0;                 // in the key's unit (bytes/s, %, mutations/s)
  client_quota_entity entity;       // the stored entity that set it (may hold <default>)
  /// `user=alice,client-id=app`, `user=alice`, `client-id=app`: the matched parts with the
  /// client's own names (Kafka's quota metric tags). Clients with one sensor key share one window.
  std::string sensor_key;
};

/// An immutable index of every stored quota: built when the metadata image changes, then read
/// by any thread without locks. A lookup costs at most 8 hash lookups (fewer when no entity of a
/// level exists).
class client_quota_index {
 public:
  using quota_values = std::map<quota_key, double>;

  client_quota_index() = default;
  explicit client_quota_index(std::vector<std::pair<client_quota_entity, quota_values>> quotas);

  /// The quota of `key` for a client of `user` (a principal's name; "ANONYMOUS" without
  /// authentication) and `client_id` (the Kafka request header's, "" when none), by Kafka's
  /// precedence; nullopt when no entity sets `key` for it (no bound). Not for
  /// connection_creation_rate (see connection_creation_rate_for).
  [[nodiscard]] std::optional<quota_match> quota_for(quota_key key, std::string_view user,
                                                     std::string_view client_id) const;
  /// connection_creation_rate for connections from `ip`: ip=<ip>, else ip=<default>.
  [[nodiscard]] std::optional<double> connection_creation_rate_for(std::string_view ip) const;
  /// Whether any entity sets `key` (nothing to account for otherwise: Kafka's quotasEnabled).
  [[nodiscard]] bool any(quota_key key) const;
  /// Every stored quota by entity (DescribeClientQuotas filters these).
  [[nodiscard]] const std::map<client_quota_entity, quota_values>& all() const { return quotas_; }

 private:
  [[nodiscard]] const double* find(const client_quota_entity& entity, quota_key key) const;

  std::map<client_quota_entity, quota_values> quotas_;
  std::unordered_map<std::string, const quota_values*> by_text_;   // entity.to_string() -> values
  uint32_t keys_present_ = 0;     // bit per quota_key
  bool has_user_entities_ = false;
  bool has_client_only_entities_ = false;
};

/// The window of a rate: quota.window.num samples of quota.window.size.seconds (Kafka's
/// defaults 11 and 1 s).
struct quota_window_config {
  int32_t samples = 11;        // >= 2
  int64_t sample_ms = 1000;    // >= 1
};

/// Kafka's Rate over a SampledStat: the sum of the values recorded in the last `samples` sample
/// windows, divided by the time they span (at least samples-1 whole windows, so a first burst is
/// spread over them rather than measured against a few milliseconds).
class quota_rate {
 public:
  explicit quota_rate(quota_window_config config = {});

  /// Adds `value` (bytes, %-ms, ...) at `now_ms` (non-decreasing across calls; an earlier time
  /// counts as now).
  void record(double value, int64_t now_ms);
  /// Per second over window_ms(now_ms).
  [[nodiscard]] double rate_per_second(int64_t now_ms) const;
  /// The span the rate divides by, ms: from the oldest live sample's start to now, at least
  /// (samples - 1) x sample_ms.
  [[nodiscard]] int64_t window_ms(int64_t now_ms) const;
  /// The last time anything was recorded, ms (for expiring idle sensors).
  [[nodiscard]] int64_t last_record_ms() const { return last_record_ms_; }

 private:
  struct sample {
    int64_t start_ms = 0;
    double value = 0;
    bool used = false;
  };
  [[nodiscard]] bool live(const sample& s, int64_t now_ms) const;

  quota_window_config config_;
  std::vector<sample> samples_;
  size_t current_ = 0;
  int64_t last_record_ms_ = 0;
};

/// KIP-219's throttle time: 0 when `observed_per_second` <= `bound_per_second`, else
/// (observed - bound) / bound x window_ms, rounded, capped at `max_ms`.
int64_t quota_throttle_time_ms(double observed_per_second, double bound_per_second, int64_t window_ms,
                               int64_t max_ms);

/// KIP-599's token bucket for controller mutations: `rate` tokens per second up to a burst of
/// rate x samples x sample seconds; a request is admitted while the bucket holds more than zero
/// tokens (it may then take it below zero), and the throttle time is how long the bucket needs
/// to climb back to zero.
class quota_token_bucket {
 public:
  quota_token_bucket(double rate_per_second, quota_window_config config, int64_t now_ms);

  /// Whether a request may mutate now (tokens > 0 after refilling to now_ms).
  [[nodiscard]] bool admits(int64_t now_ms);
  /// Takes `cost` tokens (partitions created or deleted) at now_ms.
  void record(double cost, int64_t now_ms);
  /// ms until the bucket is back above zero; 0 when it already is.
  [[nodiscard]] int64_t throttle_time_ms(int64_t now_ms);
  /// A new rate (a changed quota) keeps the tokens, clipped to the new burst.
  void set_rate(double rate_per_second);

 private:
  void refill(int64_t now_ms);

  double rate_per_second_;
  double burst_;
  double tokens_;
  int64_t last_ms_;
  quota_window_config config_;
};

}  // namespace ringlog::security
