#include "ringlog/partition/compaction.h"

#include <algorithm>

#include "ringlog/base/clock.h"

namespace ringlog::partition {

compaction::compaction(const settings& config, size_t shard_count)
    : enabled_(config.enabled),
      dedupe_bytes_per_shard_(static_cast<size_t>(config.dedupe_buffer_size) / std::max<size_t>(1, shard_count)),
      io_bytes_per_second_(static_cast<double>(config.io_max_bytes_per_second)),
      shards_(shard_count) {
  for (auto& s : shards_) s.throttle = storage::cleaner_throttle(io_bytes_per_second_);
}

bool compaction::begin(size_t shard, storage::partition_log& log, partition_stats& stats, int64_t now_ms,
                       io::disk_executor& disk, std::function<void()> resume) {
  if (!enabled_ || !log.config().compacted()) return false;
  shard_cleaner& s = shards_.at(shard);
  if (!s.cleaner) s.cleaner = std::make_unique<storage::log_cleaner>(storage::cleaner_config{dedupe_bytes_per_shard_});
  if (s.cleaner->in_progress()) return false;   // one pass at a time per shard; this log waits its turn
  auto state = s.cleaner->inspect(log);
  if (state.ok()) {
    stats.cleaner_dirty_ratio_ppm.store(static_cast<int64_t>(state->dirty_ratio * 1e6), std::memory_order_relaxed);
  }
  // A log this cleaner has not read the delete horizons of yet (after a restart) starts a pass
  // that reads them first: tombstones_due is unknown until then.
  const bool due = state.ok() && (state->due || !s.cleaner->horizons_known(log));
  if (!due || !s.throttle.may_start(now_ms)) return false;
  const base::stopwatch started;
  auto begun = s.cleaner->begin(log, storage::force_clean::no, storage::cleaner_io{&disk, std::move(resume)});
  s.pass_time = started.elapsed();
  s.step_time.observe(s.pass_time);
  return begun.ok() && begun.value();
}

compaction::step_outcome compaction::step(size_t shard, storage::partition_log& log, partition_stats& stats,
                                          int64_t now_ms) {
  shard_cleaner& s = shards_.at(shard);
  step_outcome out;
  if (!s.cleaner || !s.cleaner->in_progress() || s.cleaner->cleaning() != &log) return out;
  const base::stopwatch started;
  auto stepped = s.cleaner->step(log);
  const auto took = started.elapsed();
  s.pass_time += took;
  s.step_time.observe(took);
  if (!stepped.ok()) return out;
  s.throttle.record(now_ms, stepped->bytes_read);
  out.records_changed = stepped->records_changed;
  out.done = stepped->done;
  out.waiting_for_io = stepped->waiting_for_io;
  if (!out.done) {
    // Paced per step (Kafka's Throttler checks after each read and write of a pass).
    out.wait_ms = s.throttle.wait_ms(now_ms);
    return out;
  }
  const storage::clean_stats& pass = s.cleaner->stats();
  if (stepped->abandoned || !pass.cleaned) return out;
  auto after = s.cleaner->inspect(log);
  stats.cleaner_dirty_ratio_ppm.store(after.ok() ? static_cast<int64_t>(after->dirty_ratio * 1e6) : 0,
                                      std::memory_order_relaxed);
  stats.cleaner_bytes_read_total.fetch_add(pass.bytes_read, std::memory_order_relaxed);
  stats.cleaner_bytes_written_total.fetch_add(pass.bytes_written, std::memory_order_relaxed);
  stats.cleaner_passes_total.fetch_add(1, std::memory_order_relaxed);
  stats.cleaner_tombstones_removed_total.fetch_add(pass.tombstones_removed, std::memory_order_relaxed);
  stats.cleaner_time_ms_total.fetch_add(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(s.pass_time).count()),
      std::memory_order_relaxed);
  stats.cleaner_last_clean_ms.store(now_ms, std::memory_order_relaxed);
  return out;
}

void compaction::forget(size_t shard, const storage::partition_log& log) {
  shard_cleaner& s = shards_.at(shard);
  if (s.cleaner) s.cleaner->forget(log);
}

io::latency_histogram::snapshot compaction::step_time() const {
  io::latency_histogram::snapshot all;
  for (const auto& s : shards_) all += s.step_time.read();
  return all;
}

int64_t compaction::wait_ms(size_t shard, int64_t now_ms) const { return shards_.at(shard).throttle.wait_ms(now_ms); }

bool compaction::in_progress(size_t shard) const {
  const shard_cleaner& s = shards_.at(shard);
  return s.cleaner && s.cleaner->in_progress();
}

void compaction::abandon(size_t shard) {
  shard_cleaner& s = shards_.at(shard);
  if (s.cleaner) s.cleaner->abandon();
}

}  // namespace ringlog::partition
