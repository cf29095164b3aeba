#pragma once
// Per-partition log settings with Kafka's topic-level names (design.md section 9).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "ringlog/storage/errc.h"

namespace ringlog::storage {

struct log_config {
  int64_t segment_bytes = 1024 * 1024 * 1024;      // segment.bytes, [1024, 2^31)
  int64_t segment_ms = 7LL * 24 * 3600 * 1000;     // segment.ms: roll an active segment older than this
  int64_t retention_ms = 7LL * 24 * 3600 * 1000;   // retention.ms, -1 = keep forever
  int64_t retention_bytes = -1;                    // retention.bytes per partition, -1 = no limit
  int32_t index_interval_bytes = 4096;             // index.interval.bytes: bytes between index entries
  int32_t segment_index_bytes = 10 * 1024 * 1024;  // segment.index.bytes: max index file size
  int32_t max_message_bytes = 1024 * 1024 + 12;    // max.message.bytes: largest batch accepted (Kafka 1048588)
  std::string cleanup_policy = "delete";           // cleanup.policy: delete | compact | compact,delete
  bool direct_io = false;                          // log.direct.io (ringlog): O_DIRECT appends
  // Log compaction (Kafka's log cleaner; storage/log_cleaner.h), read when cleanup_policy has compact.
  double min_cleanable_dirty_ratio = 0.5;          // min.cleanable.dirty.ratio, [0, 1]
  int64_t min_compaction_lag_ms = 0;               // min.compaction.lag.ms: newer records are not cleaned
  int64_t max_compaction_lag_ms = std::numeric_limits<int64_t>::max();  // max.compaction.lag.ms, >= 1
  int64_t delete_retention_ms = 24LL * 3600 * 1000;  // delete.retention.ms: how long tombstones stay readable
  /// producer.id.expiration.ms (broker-wide, Kafka's default one day): an idempotent producer
  /// whose last batch is older than this is forgotten (its retries are then new batches). >= 1.
  int64_t producer_id_expiration_ms = 86'400'000;

  /// cleanup.policy holds compact (compact, compact,delete): the cleaner keeps the latest value per key.
  [[nodiscard]] bool compacted() const { return cleanup_policy.find("compact") != std::string::npos; }
  /// cleanup.policy holds delete (delete, compact,delete): retention by time and size applies.
  [[nodiscard]] bool deletes() const { return cleanup_policy.find("delete") != std::string::npos; }

  /// The age at which the active segment rolls (Kafka's LogConfig.maxSegmentMs, KIP-354): on a
  /// compacted log min(segment.ms, max.compaction.lag.ms), since the cleaner never cleans the
  /// active segment and max.compaction.lag.ms is then a real bound; segment.ms otherwise.
  [[nodiscard]] int64_t max_segment_ms() const {
    return compacted() ? std::min(segment_ms, max_compaction_lag_ms) : segment_ms;
  }

  /// Checks every bound; the error message names the offending key and its allowed range.
  [[nodiscard]] result<void> validate() const;
};

}  // namespace ringlog::storage
