#include "compaction.h"

#include <algorithm>

namespace ringlog::broker {

compaction::compaction(const broker_config& config, size_t shard_count)
    : enabled_(config.log_cleaner_enable),
      dedupe_bytes_per_shard_(static_cast<size_t>(config.log_cleaner_dedupe_buffer_size) / std::max<size_t>(1, shard_count)),
      io_bytes_per_second_(static_cast<double>(config.log_cleaner_io_max_bytes_per_second)),
      shards_(shard_count) {
  for (auto& s : shards_) s.throttle = storage::cleaner_throttle(io_bytes_per_second_);
}

bool compaction::maybe_clean(size_t shard, storage::partition_log& log, partition_stats& stats, int64_t now_ms) {
  if (!enabled_ || !log.config().compacted()) return false;
  shard_cleaner& s = shards_.at(shard);
  if (!s.cleaner) s.cleaner = std::make_unique<storage::log_cleaner>(storage::cleaner_config{dedupe_bytes_per_shard_});
  if (!s.throttle.may_start(now_ms)) return false;
  const auto started = std::chrono::steady_clock::now();
  auto pass = s.cleaner->clean(log);
  const auto took_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  if (!pass.ok()) return false;
  if (!pass->cleaned) {
    stats.cleaner_dirty_ratio_ppm.store(static_cast<int64_t>(pass->dirty_ratio * 1e6), std::memory_order_relaxed);
    return false;
  }
  s.throttle.record(now_ms, pass->bytes_read);
  auto after = s.cleaner->inspect(log);
  stats.cleaner_dirty_ratio_ppm.store(after.ok() ? static_cast<int64_t>(after->dirty_ratio * 1e6) : 0,
                                      std::memory_order_relaxed);
  stats.cleaner_bytes_read_total.fetch_add(pass->bytes_read, std::memory_order_relaxed);
  stats.cleaner_bytes_written_total.fetch_add(pass->bytes_written, std::memory_order_relaxed);
  stats.cleaner_passes_total.fetch_add(1, std::memory_order_relaxed);
  stats.cleaner_time_ms_total.fetch_add(static_cast<uint64_t>(took_ms), std::memory_order_relaxed);
  stats.cleaner_last_clean_ms.store(now_ms, std::memory_order_relaxed);
  return true;
}

}  // namespace ringlog::broker
