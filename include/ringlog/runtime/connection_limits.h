#pragma once
// Connection limits of the listeners (issue 31), Kafka's keys and rules (KIP-308, KIP-402, KIP-612):
//   max.connections                    open connections of every listener but the cluster one
//                                      together; listener.name.<name>.max.connections per listener
//   max.connections.per.ip             open connections from one address, every listener
//   max.connections.per.ip.overrides   host:count,... (a count of 0 refuses that address)
//   max.connection.creation.rate       new connections per second of every listener but the
//                                      cluster one; listener.name.<name>.max.connection.creation.rate
//                                      per listener. Over the rate a connection is held open
//                                      unread for the time the rate needs, then closed (Kafka
//                                      delays it likewise rather than answering at once).
// The cluster listener (inter-broker) is outside the broker-wide max.connections and rate, as
// Kafka keeps its inter-broker listener outside them, and counts in max.connections.per.ip.
// The connection_creation_rate client quotas of ip entities (KIP-612, stored in the metadata log;
// set_ip_creation_rate) bound new connections per second from one address on every listener but
// the cluster one, held and closed like the key's.
// Refusals are counted by listener and reason for /metrics. Thread-safe: listeners accept on
// different shards. No Asio here: runtime/acceptor.h applies the decisions to sockets.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace ringlog::runtime {

/// Why a connection was refused or closed early; the names are the keys that refused it.
enum class connection_refusal {
  max_connections,                // max.connections (broker-wide or the listener's)
  max_connections_per_ip,         // max.connections.per.ip or its override for the address
  max_connection_creation_rate,   // max.connection.creation.rate (broker-wide or the listener's)
  authentication_timeout,         // connection.authentication.timeout.ms passed before a login
  connection_creation_rate,       // the client quota of an ip entity (KIP-612; AlterClientQuotas)
};

/// The key name of `r`, as /metrics and log lines write it.
std::string_view connection_refusal_name(connection_refusal r);

struct connection_limits_config {
  /// max.connections: every non-cluster listener together. A few thousand idle connections cost
  /// little; past this an accept storm starts to eat the open-file limit the logs need.
  int64_t max_connections = 10000;
  /// max.connections.per.ip: one client host may not hold more than this.
  int64_t max_connections_per_ip = 1000;
  /// max.connections.per.ip.overrides: address -> count.
  std::map<std::string, int64_t> max_connections_per_ip_overrides;
  /// max.connection.creation.rate, connections per second (a burst of one second's worth passes).
  int64_t max_connection_creation_rate = 1000;
};

/// A listener's own limits (listener.name.<name>.max.connections and
/// .max.connection.creation.rate); nullopt = only the broker-wide ones apply.
struct listener_connection_limits {
  std::optional<int64_t> max_connections;
  std::optional<int64_t> max_connection_creation_rate;
  /// The cluster listener: outside the broker-wide max.connections and rate.
  bool inter_broker = false;
  /// http:// and https://: outside the broker-wide max.connections (the HTTP server bounds its
  /// connections by http.connections.max) and the broker-wide creation rate (each takes
  /// max.connection.creation.rate from a bucket of its own), so HTTP clients cannot take the
  /// places or the rate Kafka clients need; max.connections.per.ip still counts them.
  bool own_total = false;
};

class connection_limits;

/// One admitted connection's place in the counts; gives it back when destroyed (on any thread).
class connection_slot {
 public:
  connection_slot() = default;
  connection_slot(connection_slot&& other) noexcept { *this = std::move(other); }
  connection_slot& operator=(connection_slot&& other) noexcept;
  connection_slot(const connection_slot&) = delete;
  connection_slot& operator=(const connection_slot&) = delete;
  ~connection_slot() { release(); }
  void release();

 private:
  friend class connection_limits;
  std::shared_ptr<connection_limits> owner_;
  std::string listener_;
  std::string address_;
};

class connection_limits : public std::enable_shared_from_this<connection_limits> {
 public:
  explicit connection_limits(connection_limits_config config) : config_(std::move(config)) {}

  /// Declares listener `name` with its own limits (before it accepts).
  void add_listener(const std::string& name, listener_connection_limits limits);

  struct admission {
    /// nullopt: admitted (`slot` holds its place); else why not.
    std::optional<connection_refusal> refused;
    /// max.connection.creation.rate: how long to hold the refused connection before closing it, ms.
    int64_t delay_ms = 0;
    connection_slot slot;
  };
  /// Counts a new connection from `address` on `listener` at `now_ms` (a steady clock) or refuses
  /// it (the refusal is counted). Order of checks: rate, then per-IP, then max.connections.
  admission admit(const std::string& listener, const std::string& address, int64_t now_ms);
  /// Counts a refusal decided elsewhere (connection_refusal::authentication_timeout).
  void count_refusal(const std::string& listener, connection_refusal reason);

  /// The connection_creation_rate quota of an address (connections per second), nullopt when
  /// none applies; called on every admission outside the lock (keep it cheap and thread-safe).
  using ip_rate_lookup = std::function<std::optional<double>(std::string_view address)>;
  /// Sets the lookup (broker::connection_creation_rate_for) before the listeners accept.
  void set_ip_creation_rate(ip_rate_lookup lookup);

  /// Prometheus text: ringlog_connections_refused_total{listener,reason} and
  /// ringlog_connections_open{listener}.
  [[nodiscard]] std::string metrics_text() const;
  [[nodiscard]] const connection_limits_config& config() const { return config_; }

 private:
  friend class connection_slot;
  /// A token bucket of one second's capacity, refilled at `rate` per second.
  struct creation_bucket {
    double tokens = -1;   // < 0: full at first use
    int64_t last_ms = 0;
    /// Takes a token at now_ms, or returns how long until one is there, ms.
    std::optional<int64_t> take(int64_t rate, int64_t now_ms);
  };
  struct listener_state {
    listener_connection_limits limits;
    int64_t open = 0;
    creation_bucket bucket;
    std::map<connection_refusal, uint64_t> refused;
  };
  listener_state& state_of(const std::string& listener);
  void release(const std::string& listener, const std::string& address);
  [[nodiscard]] int64_t per_ip_limit(const std::string& address) const;

  const connection_limits_config config_;
  mutable std::mutex mutex_;
  std::map<std::string, listener_state> listeners_;
  std::map<std::string, int64_t> open_by_address_;
  int64_t open_broker_wide_ = 0;   // non-cluster listeners
  creation_bucket broker_bucket_;
  ip_rate_lookup ip_rate_;
  /// One bucket per address under a connection_creation_rate quota, at most
  /// ip_creation_buckets_max (a bucket idle a second is full again, so those go first, losing nothing).
  std::map<std::string, creation_bucket, std::less<>> ip_buckets_;
};

}  // namespace ringlog::runtime
