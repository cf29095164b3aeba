#pragma once
// Retries with backoff and dead letters for consumer groups (issue 18, design.md section 7): the
// pure routing rules. A group member that failed to process a record nacks it; the broker writes
// a copy to the group's retry topic for the record's original topic, delayed by the backoff
// (through delayed delivery: a ringlog-deliver-at header), or, once the record has had
// max.delivery.attempts deliveries, to the group's dead-letter topic. Never a log edit: the
// original stays where it is and the group's commits pass it.
//
// Conventions follow Spring Kafka's non-blocking retry topics (RetryTopicConfigurer): one retry
// topic per (topic, group) whose records carry the original coordinates and the attempt count in
// headers; a dead-letter topic with every failure reason. Names and headers: docs/retries.md.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/delay/errc.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"

namespace ringlog::delay {

// ---- headers on retry and dead-letter records (the wire contract; docs/retries.md)
inline constexpr std::string_view original_topic_header = "ringlog-original-topic";
inline constexpr std::string_view original_partition_header = "ringlog-original-partition";   // decimal
inline constexpr std::string_view original_offset_header = "ringlog-original-offset";         // decimal
inline constexpr std::string_view original_timestamp_header = "ringlog-original-timestamp";   // decimal ms
/// The delivery attempt this record is (decimal): the original's delivery is attempt 1, so the
/// first retry record says 2. On a dead letter: the deliveries that were made (all of them failed).
inline constexpr std::string_view attempt_header = "ringlog-delivery-attempt";
/// One per failed delivery, oldest first (Kafka headers may repeat a key): the nack's reason.
inline constexpr std::string_view reason_header = "ringlog-nack-reason";
/// The group whose nack wrote the record.
inline constexpr std::string_view group_header = "ringlog-group";
/// "<topic>/<partition>@<offset>" of the record that was nacked (unique per nack of a group).
inline constexpr std::string_view nacked_source_header = "ringlog-nacked-source";
/// On a redriven record: "<dead-letter topic>/<partition>@<offset>" it came from.
inline constexpr std::string_view redrive_source_header = "ringlog-redrive-source";
/// Marks a record of a dead-letter topic that says which dead letters were redriven (its value:
/// "<partition>@<offset>" entries, comma-separated); browse and counts skip these.
inline constexpr std::string_view redriven_marker_header = "ringlog-redriven";
/// On a redrive marker: the broker's proof that it wrote it (security::sign_broker_record over the
/// dead-letter topic, the marker's partition and its value). A marker without a valid one is
/// skipped, so a user with WRITE on the dead-letter topic (every member of the group has it, for
/// nacks) cannot mark letters redriven that were not (the breaker of session 31).
inline constexpr std::string_view redriven_proof_header = "ringlog-redriven-proof";
/// security::sign_broker_record's purpose for a redrive marker.
inline constexpr std::string_view redriven_proof_purpose = "redriven";

// ---- topic names: templates with the placeholders <topic> and <group>, each exactly once (so
// that every topic and group has its own retry and dead-letter topic), set per consumer instance
// (retry.topic.template, dead.letter.topic.template) with broker defaults. The defaults are
// Spring's "<topic>-retry" / "<topic>-dlt" per group, as the issue asks.
inline constexpr std::string_view topic_placeholder = "<topic>";
inline constexpr std::string_view group_placeholder = "<group>";
inline constexpr std::string_view retry_topic_template_default = "<topic>.<group>.retry";
inline constexpr std::string_view dead_letter_topic_template_default = "<topic>.<group>.dlq";
/// Characters of a template: a topic name's 249 less room for the topic and group names it holds
/// (the name a template makes is checked as a topic name again when a nack writes to it).
inline constexpr size_t topic_template_chars_max = 200;

// ---- settings: per consumer instance (its body or WebSocket join), broker defaults in
// conf/ringlog.properties. Each bound says why.
/// max.delivery.attempts: deliveries of one record, the first included. 1 = no retries (a nack
/// goes straight to the dead-letter topic). At most 100: past that a record is not failing by chance.
inline constexpr int32_t max_delivery_attempts_default = 5;
inline constexpr int32_t max_delivery_attempts_min = 1;
inline constexpr int32_t max_delivery_attempts_max = 100;
/// retry.backoff.ms: the wait after the first failed delivery (Spring's default 1 s); 0 = at once.
inline constexpr int64_t retry_backoff_ms_default = 1'000;
/// retry.backoff.max.ms: cap of the growing backoff (Spring's ExponentialBackOff default 30 s).
inline constexpr int64_t retry_backoff_max_ms_default = 30'000;
/// Both backoffs are at most 7 days: the default delay.max.ms (a retry is a delayed record, and
/// the broker refuses delays past delay.max.ms; a smaller delay.max.ms caps them further).
inline constexpr int64_t retry_backoff_ms_limit = 7LL * 24 * 3600 * 1000;
/// retry.backoff.multiplier: applied per further attempt (Spring's default 2.0), in [1, 10]: below
/// 1 the backoff would shrink, past 10 five attempts already span days.
inline constexpr double retry_backoff_multiplier_default = 2.0;
inline constexpr double retry_backoff_multiplier_min = 1.0;
inline constexpr double retry_backoff_multiplier_max = 10.0;
/// Reason text kept per failed attempt (bytes): a stack trace is cut, so that every reason of
/// max_delivery_attempts_max attempts fits in a record (100 x 1 KiB).
inline constexpr size_t reason_bytes_max = 1024;

struct retry_policy {
  int32_t max_delivery_attempts = max_delivery_attempts_default;
  int64_t retry_backoff_ms = retry_backoff_ms_default;
  double retry_backoff_multiplier = retry_backoff_multiplier_default;
  int64_t retry_backoff_max_ms = retry_backoff_max_ms_default;
  std::string retry_topic_template = std::string(retry_topic_template_default);              // retry.topic.template
  std::string dead_letter_topic_template = std::string(dead_letter_topic_template_default);  // dead.letter.topic.template
  bool operator==(const retry_policy&) const = default;
};

/// Errors: invalid_config naming the key and its bounds (retry.backoff.max.ms below
/// retry.backoff.ms is refused too; a template: see validate_topic_template; both templates
/// the same is refused naming dead.letter.topic.template).
result<void> validate(const retry_policy& policy);
/// A topic name template `value` of setting `key`: <topic> and <group> each exactly once, else
/// only ASCII letters, digits, '.', '_' and '-', at most topic_template_chars_max characters, not
/// starting with "__" (internal topics). Errors: invalid_config naming the key and the rule broken.
result<void> validate_topic_template(std::string_view key, std::string_view value);

/// The retry topic of `topic` for `group` under `policy`'s template ("orders.billing.retry" by default).
std::string retry_topic_name(const retry_policy& policy, std::string_view topic, std::string_view group);
/// The dead-letter topic likewise ("orders.billing.dlq" by default).
std::string dead_letter_topic_name(const retry_policy& policy, std::string_view topic, std::string_view group);
/// The original topic of `name` when it is `group`'s retry (or, with dead_letter, dead-letter)
/// topic of some topic under `policy`'s template; nullopt otherwise.
std::optional<std::string> original_topic_of(const retry_policy& policy, std::string_view name, std::string_view group,
                                             bool dead_letter);

/// The wait (ms) before delivery attempt `failed_attempt + 1`, after delivery `failed_attempt`
/// (>= 1) failed: retry.backoff.ms x multiplier^(failed_attempt - 1), capped by retry.backoff.max.ms.
int64_t backoff_ms(const retry_policy& policy, int32_t failed_attempt);

/// Where a nacked record goes.
struct nack_route {
  enum class kind : uint8_t { retry, dead_letter };
  kind destination = kind::retry;
  std::string topic;                  // the retry or dead-letter topic
  model::topic_partition original;    // where the record was first produced
  model::offset original_offset{0};
  int32_t failed_attempt = 1;         // the delivery that was nacked (1 = the original's)
  int64_t deliver_at_ms = -1;         // retry: when it comes back (broker time); -1 dead letter
  std::vector<model::record_header> headers;   // the copy's headers (user's first, then ours)
};

/// Routes a nack of record `record` (read from `from`) by member of `group` with `reason` at
/// broker time `now_ms`, to the topics `policy` names. A record of the group's retry topic takes its origin and attempt from
/// its headers; any other record is an original (attempt 1). Errors: invalid_record for a
/// record of the group's dead-letter topic (dead letters are redriven, not nacked) or a retry
/// record whose headers do not decode (names the header).
result<nack_route> route_nack(std::string_view group, const model::topic_partition& from, const model::record& record,
                              std::string_view reason, const retry_policy& policy, int64_t now_ms);

/// Where a dead letter is redriven to: its original topic-partition (a fresh record: the retry
/// headers are dropped, so it gets max.delivery.attempts again) or the group's retry topic
/// (attempt 1 again, delivered at once).
enum class redrive_target : uint8_t { original, retry };
struct redrive_route {
  std::string topic;
  int32_t partition = 0;
  std::vector<model::record_header> headers;
};
/// The retry topic is the one `policy` names (the policy whose dead-letter template made
/// `dead_letter_topic`). Errors: invalid_record naming the header a dead letter lacks.
result<redrive_route> route_redrive(const retry_policy& policy, std::string_view group, std::string_view dead_letter_topic,
                                    model::partition_id partition, const model::record& dead_letter,
                                    redrive_target target);

/// "<topic>/<partition>@<offset>".
std::string source_text(std::string_view topic, int32_t partition, model::offset offset);

/// A header's value as text, the last one of that key (nullopt: none or null).
std::optional<std::string> last_header(const std::vector<model::record_header>& headers, std::string_view key);
/// Every value of a header key, in order.
std::vector<std::string> all_headers(const std::vector<model::record_header>& headers, std::string_view key);

}  // namespace ringlog::delay
