#pragma once
// The log cleaner of each shard (storage/log_cleaner.h): every maintenance tick, a shard runs one
// pass over each of its compacted partitions that is due, paced by
// log.cleaner.io.max.bytes.per.second; log.cleaner.dedupe.buffer.size is shared out over the
// shards (Kafka shares it over log.cleaner.threads). Private to the broker.

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "metadata.h"
#include "ringlog/broker/broker.h"
#include "ringlog/storage/log_cleaner.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::broker {

class compaction {
 public:
  compaction(const broker_config& config, size_t shard_count);

  /// On `shard`'s thread. Cleans `log` once when it is compacted, due, and the shard's pacing
  /// allows, then publishes the cleaner figures into `stats`. Returns true when the log's
  /// records changed (a pass ran), so kept reads of it are stale. A pass that fails leaves the
  /// log to report kafka_storage_error to its next caller (as a failed append does).
  bool maybe_clean(size_t shard, storage::partition_log& log, partition_stats& stats, int64_t now_ms);

 private:
  struct shard_cleaner {
    std::unique_ptr<storage::log_cleaner> cleaner;   // created on the first compacted partition
    storage::cleaner_throttle throttle{0};
  };
  bool enabled_;
  size_t dedupe_bytes_per_shard_;
  double io_bytes_per_second_;
  std::vector<shard_cleaner> shards_;
};

}  // namespace ringlog::broker
