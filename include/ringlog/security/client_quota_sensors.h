#pragma once
// What one broker measures of its clients' quotas (issue 31; Kafka's ClientQuotaManager,
// ClientRequestQuotaManager and ControllerMutationQuotaManager, each per broker: quotas bound a
// client's traffic at each broker, not its sum over the cluster). Pure: no clock, no lock; the
// caller passes now_ms and serializes the calls.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/security/quota.h"

namespace ringlog::security {

class client_quota_sensors {
 public:
  /// What a sensor has seen, for metrics and `ringlog quotas`.
  struct usage {
    quota_key key = quota_key::producer_byte_rate;
    std::string sensor_key;
    double bound = 0;                     // the quota at the last record, in the key's unit
    client_quota_entity entity;           // the stored entity whose quota that was (may hold <default>)
    double total = 0;                     // everything recorded (bytes, %-s, ...)
    int64_t throttle_time_ms_total = 0;   // throttle times handed out, ms
    int64_t throttled_total = 0;          // records that asked a throttle
  };

  /// At most `sensors_max` rate sensors; past it, sensors idle for `idle_ms` or for their whole
  /// window (every sample expired: no throttling is lost) go, and a newcomer that still finds no
  /// room shares one sensor per matched entity (`user=<default>`, ...), so a flood of client ids
  /// cannot grow the map nor escape its quota, and newcomers share only while the flood is recent.
  client_quota_sensors(size_t sensors_max, int64_t idle_ms);

  /// Records `value` (in the key's rate unit: bytes for byte rates, percent-seconds of one thread
  /// for request_percentage) for a client bounded by `match`, at `now_ms`, and answers the throttle
  /// time it asks, ms: until the sensor's rate is back at match.bound
  /// (quota_throttle_time_ms(rate, ...), quota_throttle.h), at most one sample for
  /// request_percentage (Kafka's ClientRequestQuotaManager bound). For byte rates also at least
  /// KIP-219's (O - T) / T x W, unbounded (Kafka's ClientQuotaManager): one request larger than
  /// the window's worth waits until the bound covers it, not only until its sample expires (a
  /// breaker's 20 KB records under producer_byte_rate=10000 got 9x the bound with the whole window
  /// as a cap). And for byte rates at least until the bytes recorded are paid for at match.bound
  /// beyond a young window's burst ((samples - 1) x sample_ms worth), however long ago their
  /// samples expired: without it a throttle that lasted until the burst's samples expired let the
  /// next burst in against an empty window, and a librdkafka producer of 1 MB requests under
  /// producer_byte_rate=102400 got 1.5-2x the bound (session 37). A sensor made here measures over
  /// `window`. Not for controller_mutation_rate (charge_mutations). Bounds: every answer is at
  /// most INT32_MAX ms (quota_throttle_ms_max: Kafka's int32 throttle_time_ms field, 24.8 days;
  /// Kafka itself bounds only request_percentage), and it follows the quota in force: a changed
  /// match.bound rescales what the old one earned (rebase), and a client no quota matches any
  /// more is not recorded nor throttled (security_manager answers 0 without asking a sensor).
  int64_t record(quota_key key, const quota_match& match, double value, quota_window_config window, int64_t now_ms);

  /// KIP-599: takes `partitions` from the token bucket of match.sensor_key (made full at
  /// match.bound; a changed bound keeps the tokens) and answers the ms the client must wait.
  /// With `strict` (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) a non-zero answer
  /// means refuse and nothing is taken; without, the partitions are taken all the same.
  int64_t charge_mutations(const quota_match& match, double partitions, bool strict, quota_window_config window,
                           int64_t now_ms);

  /// The throttle time the sensor of a client bounded by `match` asks at `now_ms` (as record()
  /// answers, without recording): 0 when it has no sensor or is within match.bound. A bound
  /// changed since the sensor's last record counts as record() will (rebase). Every client
  /// of a user quota shares the user's sensor, so this holds whatever client id it names.
  [[nodiscard]] int64_t throttle_ms(quota_key key, const quota_match& match, quota_window_config window,
                                    int64_t now_ms) const;
  /// Every rate sensor's usage, in (key, sensor key) order.
  [[nodiscard]] std::vector<usage> usages() const;
  /// Rate sensors held now.
  [[nodiscard]] size_t size() const { return sensors_.size(); }

 private:
  struct sensor {
    quota_rate rate;
    usage seen;
    /// The end of the last throttle record() answered, ms: throttle_ms() asks at least until then,
    /// after the samples that caused it may have expired (HTTP doors ask again at each request).
    int64_t throttled_until_ms = 0;
    /// Byte rates only: the time at which everything recorded is paid for at the bound, ms (a
    /// virtual clock, GCRA's theoretical arrival time): each record moves it from max(itself, now)
    /// by value / bound. The rate's samples forget a burst once they expire; this does not, so a
    /// throttle that outlasts the window still leaves the debt it did not cover (paid_throttle_ms).
    double paid_until_ms = 0;
  };
  /// The throttle that keeps a byte-rate sensor's long-run rate at `bound`: until paid_until_ms
  /// is at most (samples - 1) x sample_ms ahead of now, the burst a young window admits.
  [[nodiscard]] static int64_t paid_throttle_ms(const sensor& s, quota_window_config window, int64_t now_ms);
  /// Moves sensor `s`, last recorded under s.seen.bound, to `bound` (the quota in force at
  /// `now_ms`): the debt still unpaid (paid_until_ms - now) is rescaled by old / new bound and the
  /// running throttle (throttled_until_ms) recomputed at the new bound, so raising a quota lifts
  /// a throttle earned under the smaller one and lowering it lengthens the debt (the breaker of
  /// session 38: a 100 KB send under producer_byte_rate=1000 still asked 69 s of a new
  /// connection after the quota was raised to 1e9). The rate's samples stay: their rate is
  /// measured against the new bound at each call anyway.
  static void rebase(quota_key key, sensor& s, double bound, quota_window_config window, int64_t now_ms);
  /// What record() and throttle_ms() answer for sensor `s` at `now_ms`.
  [[nodiscard]] static int64_t throttle_of(quota_key key, const sensor& s, double bound, quota_window_config window,
                                           int64_t now_ms);
  sensor& sensor_for(quota_key key, const quota_match& match, quota_window_config window, int64_t now_ms);

  size_t sensors_max_;
  int64_t idle_ms_;
  std::map<std::pair<quota_key, std::string>, sensor> sensors_;
  std::map<std::string, quota_token_bucket> mutation_buckets_;
};

}  // namespace ringlog::security
