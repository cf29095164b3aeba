// What one broker measures of its clients' quotas (issue 31). See the header for the rules.

#include "ringlog/security/client_quota_sensors.h"

#include "ringlog/security/quota_throttle.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ringlog::security {

client_quota_sensors::client_quota_sensors(size_t sensors_max, int64_t idle_ms)
    : sensors_max_(sensors_max), idle_ms_(idle_ms) {}

client_quota_sensors::sensor& client_quota_sensors::sensor_for(quota_key key, const quota_match& match,
                                                               quota_window_config window, int64_t now_ms) {
  const auto found = sensors_.find({key, match.sensor_key});
  if (found != sensors_.end()) return found->second;
  if (sensors_.size() >= sensors_max_) {
    // A sensor idle past its whole window holds no rate any more (every sample expired): dropping
    // it loses no throttling, only its totals (the breaker's q_flood.py: 100,000 client ids in
    // 10 s made every newcomer share one sensor for the next hour).
    const int64_t idle_ms = std::min<int64_t>(idle_ms_, window.sample_ms * window.samples);
    std::erase_if(sensors_, [idle_ms, now_ms](const auto& entry) {
      return now_ms - entry.second.rate.last_record_ms() > idle_ms && entry.second.throttled_until_ms <= now_ms;
    });
  }
  // Still full: the client shares one sensor with every other newcomer of its entity.
  std::string chosen = sensors_.size() >= sensors_max_ ? match.entity.to_string() : match.sensor_key;
  auto made = sensors_.try_emplace({key, chosen}, sensor{quota_rate(window), usage{}}).first;
  made->second.seen.key = key;
  made->second.seen.sensor_key = std::move(chosen);
  return made->second;
}

int64_t client_quota_sensors::throttle_of(quota_key key, const sensor& s, double bound, quota_window_config window,
                                          int64_t now_ms) {
  // Kafka bounds a request-time throttle by one sample window (ClientRequestQuotaManager) and
  // leaves a byte-rate one unbounded (ClientQuotaManager.throttleTime: KIP-219's formula); the
  // throttle_time_ms field is an int32.
  constexpr int64_t byte_rate_throttle_ms_max = quota_throttle_ms_max;
  if (key == quota_key::request_percentage) return quota_throttle_time_ms(s.rate, bound, now_ms, window.sample_ms);
  const int64_t back_at_bound = quota_throttle_time_ms(s.rate, bound, now_ms, window.sample_ms * window.samples);
  const int64_t kip_219 = quota_throttle_time_ms(s.rate.rate_per_second(now_ms), bound, s.rate.window_ms(now_ms),
                                                 byte_rate_throttle_ms_max);
  return std::max({back_at_bound, kip_219, s.throttled_until_ms - now_ms, paid_throttle_ms(s, window, now_ms)});
}

int64_t client_quota_sensors::paid_throttle_ms(const sensor& s, quota_window_config window, int64_t now_ms) {
  // The burst Kafka's young window admits at once (Rate.windowSize pads it to samples - 1 whole
  // samples), so a client within its bound is never throttled by this sooner than by the rate.
  const int64_t burst_ms = static_cast<int64_t>(std::max(window.samples, 2) - 1) * std::max<int64_t>(window.sample_ms, 1);
  const double unpaid_ms = s.paid_until_ms - static_cast<double>(now_ms) - static_cast<double>(burst_ms);
  if (!(unpaid_ms > 0)) return 0;
  return static_cast<int64_t>(std::min(std::ceil(unpaid_ms), static_cast<double>(quota_throttle_ms_max)));
}

void client_quota_sensors::rebase(quota_key key, sensor& s, double bound, quota_window_config window, int64_t now_ms) {
  const double old_bound = s.seen.bound;
  s.seen.bound = bound;
  if (old_bound == bound || !(old_bound > 0) || !(bound > 0)) return;
  // The bytes still owed at the old bound, paid at the new one (Kafka recomputes the throttle
  // from the sensor's rate against the quota in force at each request: a raised quota lifts it).
  const auto now = static_cast<double>(now_ms);
  if (s.paid_until_ms > now) s.paid_until_ms = now + (s.paid_until_ms - now) * (old_bound / bound);
  // The throttle handed out under the old bound is recomputed under the new one.
  s.throttled_until_ms = now_ms;
  s.throttled_until_ms = now_ms + throttle_of(key, s, bound, window, now_ms);
}

int64_t client_quota_sensors::record(quota_key key, const quota_match& match, double value, quota_window_config window,
                                     int64_t now_ms) {
  sensor& s = sensor_for(key, match, window, now_ms);
  rebase(key, s, match.bound, window, now_ms);
  s.seen.entity = match.entity;
  s.rate.record(value, now_ms);
  s.seen.total += value;
  if (key != quota_key::request_percentage && match.bound > 0) {
    s.paid_until_ms = std::max(s.paid_until_ms, static_cast<double>(now_ms)) + value * 1000.0 / match.bound;
  }
  const int64_t throttle_ms = throttle_of(key, s, match.bound, window, now_ms);
  s.throttled_until_ms = std::max(s.throttled_until_ms, now_ms + throttle_ms);
  if (throttle_ms > 0) {
    s.seen.throttle_time_ms_total += throttle_ms;
    ++s.seen.throttled_total;
  }
  return throttle_ms;
}

int64_t client_quota_sensors::charge_mutations(const quota_match& match, double partitions, bool strict,
                                               quota_window_config window, int64_t now_ms) {
  // Bounded like the rate sensors: past sensors_max buckets a newcomer shares its entity's.
  const bool room = mutation_buckets_.size() < sensors_max_ || mutation_buckets_.contains(match.sensor_key);
  auto [bucket, made] = mutation_buckets_.try_emplace(room ? match.sensor_key : match.entity.to_string(), match.bound,
                                                      window, now_ms);
  if (!made) bucket->second.set_rate(match.bound);
  if (strict && !bucket->second.admits(now_ms)) return bucket->second.throttle_time_ms(now_ms);
  bucket->second.record(partitions, now_ms);
  return strict ? 0 : bucket->second.throttle_time_ms(now_ms);
}

int64_t client_quota_sensors::throttle_ms(quota_key key, const quota_match& match, quota_window_config window,
                                          int64_t now_ms) const {
  auto found = sensors_.find({key, match.sensor_key});
  // A newcomer while the sensors were full shares its entity's (sensor_for).
  if (found == sensors_.end()) found = sensors_.find({key, match.entity.to_string()});
  if (found == sensors_.end()) return 0;
  if (found->second.seen.bound == match.bound) return throttle_of(key, found->second, match.bound, window, now_ms);
  sensor changed = found->second;   // the quota changed since its last record: as record() will see it
  rebase(key, changed, match.bound, window, now_ms);
  return throttle_of(key, changed, match.bound, window, now_ms);
}

std::vector<client_quota_sensors::usage> client_quota_sensors::usages() const {
  std::vector<usage> out;
  out.reserve(sensors_.size());
  for (const auto& [id, s] : sensors_) out.push_back(s.seen);
  return out;
}

}  // namespace ringlog::security
