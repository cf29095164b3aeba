#include "ringlog/runtime/connection_limits.h"

#include <algorithm>
#include <cmath>

namespace ringlog::runtime {

namespace {

/// Whether a listener's connections count in the broker-wide max.connections.
bool counts_broker_wide(const listener_connection_limits& l) { return !l.inter_broker && !l.own_total; }

}  // namespace

namespace {
/// The longest a connection over max.connection.creation.rate is held before it is closed, ms:
/// Kafka's quota window (1 s). Longer holds only keep the storm's descriptors.
constexpr int64_t connection_creation_delay_ms_max = 1000;
/// Addresses whose connection_creation_rate buckets are kept at once: a storm from many
/// addresses costs at most this many small entries (those idle a second are dropped first).
constexpr size_t ip_creation_buckets_max = 10'000;
}  // namespace

std::string_view connection_refusal_name(connection_refusal r) {
  switch (r) {
    case connection_refusal::max_connections: return "max.connections";
    case connection_refusal::max_connections_per_ip: return "max.connections.per.ip";
    case connection_refusal::max_connection_creation_rate: return "max.connection.creation.rate";
    case connection_refusal::authentication_timeout: return "connection.authentication.timeout.ms";
    case connection_refusal::connection_creation_rate: return "connection_creation_rate";
  }
  return "unknown";
}

connection_slot& connection_slot::operator=(connection_slot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::move(other.owner_);
    listener_ = std::move(other.listener_);
    address_ = std::move(other.address_);
    other.owner_.reset();
  }
  return *this;
}

void connection_slot::release() {
  if (auto owner = std::move(owner_)) owner->release(listener_, address_);
  owner_.reset();
}

std::optional<int64_t> connection_limits::creation_bucket::take(int64_t rate, int64_t now_ms) {
  const auto capacity = static_cast<double>(rate);
  if (tokens < 0) {
    tokens = capacity;
    last_ms = now_ms;
  }
  const int64_t elapsed_ms = std::max<int64_t>(0, now_ms - last_ms);
  tokens = std::min(capacity, tokens + capacity * static_cast<double>(elapsed_ms) / 1000.0);
  last_ms = now_ms;
  if (tokens >= 1.0) {
    tokens -= 1.0;
    return std::nullopt;
  }
  const auto wait_ms = static_cast<int64_t>(std::ceil((1.0 - tokens) * 1000.0 / std::max(capacity, 1.0)));
  return std::clamp<int64_t>(wait_ms, 1, connection_creation_delay_ms_max);
}

void connection_limits::add_listener(const std::string& name, listener_connection_limits limits) {
  std::lock_guard lock(mutex_);
  listeners_[name].limits = limits;
}

connection_limits::listener_state& connection_limits::state_of(const std::string& listener) {
  return listeners_[listener];
}

int64_t connection_limits::per_ip_limit(const std::string& address) const {
  auto it = config_.max_connections_per_ip_overrides.find(address);
  return it == config_.max_connections_per_ip_overrides.end() ? config_.max_connections_per_ip : it->second;
}

void connection_limits::set_ip_creation_rate(ip_rate_lookup lookup) {
  std::lock_guard lock(mutex_);
  ip_rate_ = std::move(lookup);
}

connection_limits::admission connection_limits::admit(const std::string& listener, const std::string& address,
                                                      int64_t now_ms) {
  ip_rate_lookup ip_rate;   // asked outside the lock; never for the cluster listener
  {
    std::lock_guard lock(mutex_);
    if (!state_of(listener).limits.inter_broker) ip_rate = ip_rate_;
  }
  const std::optional<double> address_rate = ip_rate ? ip_rate(address) : std::nullopt;
  std::lock_guard lock(mutex_);
  listener_state& l = state_of(listener);
  admission out;
  auto refuse = [&](connection_refusal why, int64_t delay_ms) {
    ++l.refused[why];
    out.refused = why;
    out.delay_ms = delay_ms;
    return std::move(out);
  };
  // The rate first (Kafka's order): a storm is slowed before it is counted. http:// and https://
  // (own_total) take max.connection.creation.rate from a bucket of their own, so an HTTP connect
  // storm cannot use up the rate Kafka clients need (the breaker's t4_storm.py).
  const auto own_rate = l.limits.max_connection_creation_rate
                            ? l.limits.max_connection_creation_rate
                            : (l.limits.own_total ? std::optional<int64_t>(config_.max_connection_creation_rate) : std::nullopt);
  if (own_rate) {
    if (auto wait = l.bucket.take(*own_rate, now_ms)) {
      return refuse(connection_refusal::max_connection_creation_rate, *wait);
    }
  }
  if (counts_broker_wide(l.limits)) {
    if (auto wait = broker_bucket_.take(config_.max_connection_creation_rate, now_ms)) {
      return refuse(connection_refusal::max_connection_creation_rate, *wait);
    }
  }
  if (address_rate) {
    if (ip_buckets_.size() >= ip_creation_buckets_max && !ip_buckets_.contains(address)) {
      std::erase_if(ip_buckets_, [now_ms](const auto& b) { return now_ms - b.second.last_ms >= 1000; });
    }
    if (ip_buckets_.size() < ip_creation_buckets_max || ip_buckets_.contains(address)) {
      const auto rate = std::max<int64_t>(static_cast<int64_t>(*address_rate), 1);
      if (auto wait = ip_buckets_[address].take(rate, now_ms)) {
        return refuse(connection_refusal::connection_creation_rate, *wait);
      }
    }
  }
  if (open_by_address_[address] >= per_ip_limit(address)) {
    if (open_by_address_[address] == 0) open_by_address_.erase(address);
    return refuse(connection_refusal::max_connections_per_ip, 0);
  }
  if ((l.limits.max_connections && l.open >= *l.limits.max_connections) ||
      (counts_broker_wide(l.limits) && open_broker_wide_ >= config_.max_connections)) {
    if (open_by_address_[address] == 0) open_by_address_.erase(address);
    return refuse(connection_refusal::max_connections, 0);
  }
  ++l.open;
  ++open_by_address_[address];
  if (counts_broker_wide(l.limits)) ++open_broker_wide_;
  out.slot.owner_ = shared_from_this();
  out.slot.listener_ = listener;
  out.slot.address_ = address;
  return out;
}

void connection_limits::release(const std::string& listener, const std::string& address) {
  std::lock_guard lock(mutex_);
  listener_state& l = state_of(listener);
  --l.open;
  if (counts_broker_wide(l.limits)) --open_broker_wide_;
  auto it = open_by_address_.find(address);
  if (it != open_by_address_.end() && --it->second <= 0) open_by_address_.erase(it);
}

void connection_limits::count_refusal(const std::string& listener, connection_refusal reason) {
  std::lock_guard lock(mutex_);
  ++state_of(listener).refused[reason];
}

std::string connection_limits::metrics_text() const {
  constexpr connection_refusal reasons[] = {
      connection_refusal::max_connections, connection_refusal::max_connections_per_ip,
      connection_refusal::max_connection_creation_rate, connection_refusal::authentication_timeout,
      connection_refusal::connection_creation_rate};
  std::lock_guard lock(mutex_);
  std::string out =
      "# HELP ringlog_connections_refused_total Connections refused or closed before they logged in, by listener "
      "and the key that refused them.\n# TYPE ringlog_connections_refused_total counter\n";
  for (const auto& [name, l] : listeners_) {
    for (auto reason : reasons) {
      auto it = l.refused.find(reason);
      out += "ringlog_connections_refused_total{listener=\"" + name + "\",reason=\"" +
             std::string(connection_refusal_name(reason)) + "\"} " +
             std::to_string(it == l.refused.end() ? 0 : it->second) + "\n";
    }
  }
  out += "# HELP ringlog_connections_open Open connections by listener (the counts max.connections limits).\n"
         "# TYPE ringlog_connections_open gauge\n";
  for (const auto& [name, l] : listeners_) {
    out += "ringlog_connections_open{listener=\"" + name + "\"} " + std::to_string(l.open) + "\n";
  }
  return out;
}

}  // namespace ringlog::runtime
