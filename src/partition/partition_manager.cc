// A shard's replicas (partition_manager.h): the deadlines of long-poll fetches parked on them (one
// timer per shard; the reads and the parking are partition.cc's) and the maintenance tick
// (retention, checkpoints, compaction).
// Kafka's counterparts: ReplicaManager's DelayedFetch purgatory, LogManager's retention and
// cleaner scheduling.

#include "ringlog/partition/partition_manager.h"

#include <algorithm>
#include <set>
#include <utility>

namespace ringlog::partition {

// Parked fetches that finish early (most of them, under load) would leave a timer each behind,
// firing for nothing up to fetch.wait.max.ms later: one per fetch, thousands a second. Instead each
// shard keeps its deadlines in a heap and a timer only at the earliest one (deadlines of one client
// mostly grow, so that is usually the timer already set).
void partition_manager::add_fetch_deadline(int64_t at_ms, const std::shared_ptr<partition_runtime>& partition,
                                           const std::shared_ptr<fetch_waiter>& waiter) {
  deadlines_.push({at_ms, waiter, partition});
  arm_fetch_deadline_timer();
}

void partition_manager::arm_fetch_deadline_timer() {
  if (deadlines_.empty()) return;
  const int64_t next = deadlines_.top().at_ms;
  if (!timers_at_ms_.empty() && *timers_at_ms_.begin() <= next) return;   // one fires by then
  timers_at_ms_.insert(next);
  runtime_.post_after(shard_, std::max<int64_t>(0, next - clock_.now_ms()), [this, next] { expire_fetches(next); });
}

void partition_manager::expire_fetches(int64_t timer_at_ms) {
  timers_at_ms_.erase(timers_at_ms_.find(timer_at_ms));
  const int64_t now = std::max(clock_.now_ms(), timer_at_ms);
  std::vector<std::shared_ptr<partition_runtime>> expired_on;   // partitions whose waiters timed out
  while (!deadlines_.empty() && deadlines_.top().at_ms <= now) {
    fetch_deadline due = deadlines_.top();
    deadlines_.pop();
    auto w = due.waiter.lock();
    auto rt = due.partition.lock();
    if (!w || !rt || w->completed) continue;
    rt->answer_empty(*w);
    if (std::find(expired_on.begin(), expired_on.end(), rt) == expired_on.end()) expired_on.push_back(std::move(rt));
  }
  // A timed-out fetch leaves its partition's waiters now, not at the next append: on an idle
  // partition it counted toward fetch.waiters.per.partition.max forever (after that many timed-out
  // long-polls every new one was refused) and held its answer's callback until then.
  for (const auto& rt : expired_on) {
    std::erase_if(rt->waiters, [](const std::shared_ptr<fetch_waiter>& w) { return w->completed; });
  }
  arm_fetch_deadline_timer();
}

// ---------------------------------------------------------------- maintenance

void partition_manager::schedule_maintenance() {
  runtime_.post_after(shard_, maintenance_.tick_ms, [this] {
    if (stopping_) return;
    maintain();
    schedule_maintenance();
  });
}

void partition_manager::maintain() {
  // Retention runs every log.retention.check.interval.ms, the first time retention_first_check_delay_ms
  // after start (constants.h); checkpoints on every tick.
  const int64_t now = clock_.now_ms();
  const bool retention_due = now >= next_retention_ms_;
  if (retention_due) next_retention_ms_ = now + maintenance_.retention_check_interval_ms;
  // One task per partition: its retention and checkpoint writes (a few fsyncs) then hold up
  // the shard's other work for one partition's worth at a time, not all of them at once.
  for (auto& [key, rt] : partitions_) {
    runtime_.post(shard_, [this, rt = rt, retention_due] {
      if (stopping_ || rt->deleted) return;
      maintain_partition(*rt, retention_due);
    });
  }
  // Log compaction: every compacted partition of the shard is looked at once per tick, after its
  // maintenance task (which rolls an idle active segment), one pass at a time (clean_next).
  runtime_.post(shard_, [this] { queue_cleaning(); });
}

void partition_manager::queue_cleaning() {
  if (stopping_) return;
  auto& queue = clean_queue_;
  // A log already waiting keeps its place (no second entry). The chain is (re)started here
  // whenever no pass runs: one whose partition was dropped while it waited for a sync ends
  // without a step to go on from (compaction::forget).
  std::set<const partition_runtime*> queued;
  for (const auto& w : queue) {
    if (auto rt = w.lock()) queued.insert(rt.get());
  }
  for (auto& [key, rt] : partitions_) {
    if (!rt->deleted && rt->log->config().compacted() && !queued.contains(rt.get())) queue.push_back(rt);
  }
  clean_next();
}

void partition_manager::clean_next() {
  auto& queue = clean_queue_;
  if (stopping_ || cleaner_.in_progress(shard_)) return;
  // Pacing (log.cleaner.io.max.bytes.per.second) holds the next pass as it holds the next step.
  if (const int64_t wait = cleaner_.wait_ms(shard_, clock_.now_ms()); wait > 0 && !queue.empty()) {
    runtime_.post_after(shard_, wait, [this] { clean_next(); });
    return;
  }
  for (size_t looked = 0; !queue.empty(); ++looked) {
    if (looked == cleaner_looks_per_task) {
      runtime_.post(shard_, [this] { clean_next(); });
      return;
    }
    auto rt = queue.front().lock();
    queue.pop_front();
    if (!rt || rt->deleted) continue;
    auto resume = [this, weak = std::weak_ptr<partition_runtime>(rt)] {
      // From the disk executor's poll(): the next step is a task of its own, paced.
      auto rt = weak.lock();
      if (!rt) return runtime_.post(shard_, [this] { clean_next(); });
      const int64_t wait = cleaner_.wait_ms(shard_, clock_.now_ms());
      auto next = [this, rt] { clean_step(rt); };
      if (wait > 0) {
        runtime_.post_after(shard_, wait, std::move(next));
      } else {
        runtime_.post(shard_, std::move(next));
      }
    };
    if (cleaner_.begin(shard_, *rt->log, *rt->stats, clock_.now_ms(), runtime_.disk(shard_),
                          std::move(resume))) {
      clean_step(rt);
      return;
    }
  }
}

void partition_manager::clean_step(const std::shared_ptr<partition_runtime>& rt) {
  if (stopping_) {
    cleaner_.abandon(shard_);
    return;
  }
  if (rt->deleted) {
    // Its pass ended when the replica was dropped (compaction::forget): the chain goes on.
    runtime_.post(shard_, [this] { clean_next(); });
    return;
  }
  const auto outcome = cleaner_.step(shard_, *rt->log, *rt->stats, clock_.now_ms());
  if (outcome.records_changed) {
    // Records below the high watermark changed, so kept reads of the log go.
    auto& recent = recent_reads_;
    std::erase_if(recent, [&rt](const recent_read& r) { return r.partition_uid == rt->uid; });
    rt->publish();
  }
  if (outcome.waiting_for_io) return;   // the pass's resume queues the next step
  if (outcome.done) {
    // The next compacted log of this tick, as a task of its own behind the work that arrived.
    runtime_.post(shard_, [this] { clean_next(); });
    return;
  }
  // The next step queues behind the produce and fetch work that arrived during this one.
  auto next = [this, rt] { clean_step(rt); };
  if (outcome.wait_ms > 0) {
    runtime_.post_after(shard_, outcome.wait_ms, std::move(next));
  } else {
    runtime_.post(shard_, std::move(next));
  }
}

void partition_manager::maintain_partition(partition_runtime& rt, bool retention_due) {
  auto deleted = retention_due ? rt.log->apply_retention() : storage::result<size_t>(size_t{0});
  if (!deleted.ok()) return;  // the log reports kafka_storage_error to its next caller
  // A compacted log's idle active segment also rolls between retention checks, at this tick
  // (at most log.cleaner.backoff.ms apart), so the cleaner gets an idle log's last records within
  // segment.ms / max.compaction.lag.ms plus the backoff, not a retention check interval later.
  if (!retention_due && rt.log->config().compacted() && !rt.log->roll_if_idle().ok()) return;
  const int64_t hw = rt.log->high_watermark().value();
  if (deleted.value() > 0 || hw != rt.last_checkpointed_high_watermark) {
    if (rt.log->checkpoint().ok()) rt.last_checkpointed_high_watermark = hw;
  }
  rt.publish();
}

}  // namespace ringlog::partition
