#pragma once
// Names and limits of delayed delivery (issue 18, design.md section 7). Every bound says why.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ringlog::delay {

// ---- headers (the wire contract; docs/delayed-delivery.md)
/// Set by a producer (decimal ms since the Unix epoch, as text): deliver the record at that time.
/// The gateway turns `deliver_at` / `delay_ms` into this header. Kept on the delivered record.
inline constexpr std::string_view deliver_at_header = "ringlog-deliver-at";
/// Set by a producer (decimal ms, as text): deliver the record this long after the broker
/// received it. The broker replaces it with deliver_at_header (broker time + delay).
inline constexpr std::string_view delay_ms_header = "ringlog-delay-ms";
/// On a delay record: the target topic and partition (decimal) chosen when it was produced.
inline constexpr std::string_view target_topic_header = "ringlog-delay-topic";
inline constexpr std::string_view target_partition_header = "ringlog-delay-partition";
/// On a delay record: the target topic's id (controller::uuid_to_string) when it was produced. A
/// topic deleted and created again under the same name has another id: the record is dropped,
/// never delivered into the new topic (Kafka's topic ids, KIP-516). Records stored before the
/// header existed lack it and are matched by name.
inline constexpr std::string_view target_topic_id_header = "ringlog-delay-topic-id";
/// On a delivered record: the broker time (decimal ms) at which it was produced.
inline constexpr std::string_view produced_at_header = "ringlog-produced-at";
/// On a delivered record: "<delay topic>/<partition>@<offset>", the delay record it came from.
/// Unique per delay record: the dedup key a restarted scheduler looks for in the target.
inline constexpr std::string_view source_header = "ringlog-delay-source";
/// Marks a scheduler checkpoint record in a delay partition (its value: checkpoint_codec.h).
inline constexpr std::string_view checkpoint_header = "ringlog-delay-checkpoint";

// ---- delay topics
/// One internal topic per delay range. A delay partition is read in log order, so a record can be
/// held back only by records of its own range ahead of it when the window is full; ranges keep
/// the due times of one partition within the range's width of each other's append order.
struct delay_tier {
  std::string_view topic;
  int64_t delay_below_ms;   // records with delay (due - produce time) < this, and >= the previous tier's
};
inline constexpr std::array<delay_tier, 5> tiers{{
    {"__delay-10s", 10'000},
    {"__delay-5m", 300'000},
    {"__delay-1h", 3'600'000},
    {"__delay-1d", 86'400'000},
    {"__delay-long", INT64_MAX},
}};

/// delay.max.ms default: 7 days, Kafka's default log.retention.ms (a delay topic keeps its
/// records until they are moved, whatever the retention, so the bound is the disk, not the log).
inline constexpr int64_t delay_max_ms_default = 7LL * 24 * 3600 * 1000;
/// delay.max.ms upper bound: 365 days (beyond that a deliver_at is almost surely a unit mistake).
inline constexpr int64_t delay_max_ms_limit = 365LL * 24 * 3600 * 1000;

// ---- the scheduler (scheduler.h)
/// Pending records a scheduler keeps in memory per delay partition: an (offset, due) index entry
/// each (about 64 bytes with the maps' nodes), so 20,000 cost about 1.3 MiB; a million pending
/// records cost disk, not RAM. Records past the window wait until the window slides.
inline constexpr size_t window_records_max = 20'000;
/// The window is refilled only once this many entries are free (at most a quarter of the window:
/// scheduler_limits may make it small): a read decodes whole batches (a REST produce of 500 records is
/// one batch), so refilling one slot at a time decoded a batch per moved record and, with the
/// window full at 10,000 records/s and 2 s delays, the scheduler fell seconds behind (profile:
/// docs/benchmarks.md). Records past the window are due no earlier than its head's range allows.
inline constexpr size_t window_read_records_min = 2'000;
/// Records moved per step (one intent checkpoint, one produce per target topic): large enough for
/// 10,000 records/s with a step per few milliseconds, small enough to keep a produce request
/// below produce.records.max (default 10,000).
inline constexpr size_t move_batch_records_max = 1'000;
/// How far ahead of their due time records are named in an intent checkpoint: the intent's
/// append and fsync happen while they wait, so a due record needs only its own produce. A
/// restarted scheduler looks up every named record in its target first, so the bound is also the
/// restart's extra lookups (intent_records_max at most).
inline constexpr int64_t intent_ahead_ms = 1'000;
/// Records named by intents and not yet moved, at most: 4,000 is 400 ms at 10,000 records/s
/// and about 8 KiB of checkpoint (a varint delta each).
inline constexpr size_t intent_records_max = 4'000;
/// Records moved out of log order whose offsets a checkpoint remembers (above the position):
/// 8 bytes or less each in the checkpoint record. When full, only the head of the window moves.
inline constexpr size_t moved_ahead_max = 4'096;
/// A move that failed (target leader away, timeout) is retried after this long.
inline constexpr int64_t move_retry_backoff_ms = 200;
/// How often a scheduler looks for new delay records and due ones when nothing else wakes it.
/// Bounds the lateness of a record due sooner than this after it was produced.
inline constexpr int64_t tick_ms = 10;
/// After a restart, a move that may or may not have reached its target is looked up there: at
/// most this many target records after the intent's time are scanned for the dedup key; past
/// that the record is moved again (at-least-once) and the broker logs it.
inline constexpr int64_t verify_scan_records_max = 100'000;

/// The tier of a delay (ms from now; >= 0).
inline constexpr size_t tier_for_delay(int64_t delay_ms) {
  for (size_t i = 0; i < tiers.size(); ++i) {
    if (delay_ms < tiers[i].delay_below_ms) return i;
  }
  return tiers.size() - 1;
}

/// Whether `topic` is one of the delay topics.
inline constexpr bool is_delay_topic(std::string_view topic) {
  for (const auto& t : tiers) {
    if (t.topic == topic) return true;
  }
  return false;
}

}  // namespace ringlog::delay
