// Committed metadata entries applied here one job at a time, in offset order, and the writers
// waiting for theirs (metadata_apply_queue.h).
// Kafka's counterpart: MetadataLoader's one-at-a-time delta hand-off; QuorumController's
// appendRecords futures completed on replay.

#include "ringlog/partition/metadata_apply_queue.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/base/assert.h"
#include "ringlog/partition/constants.h"

namespace ringlog::partition {

void metadata_apply_queue::push(int64_t offset, job work, std::function<void(result<void>)> then) {
  jobs_.push_back({offset, std::move(work), std::move(then)});
  run_next();
}

void metadata_apply_queue::run_next() {
  if (running_ || jobs_.empty()) return;
  running_ = true;
  queued next = std::move(jobs_.front());
  jobs_.pop_front();
  next.work([this, offset = next.offset, then = std::move(next.then)](result<void> outcome) {
    finish(offset, std::move(outcome), then);
  });
}

void metadata_apply_queue::finish(int64_t offset, result<void> outcome, const std::function<void(result<void>)>& then) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, shard_);
  applied_end_ = std::max(applied_end_, offset + 1);
  running_ = false;
  std::vector<std::pair<int64_t, waiter>> ready;
  while (!waiters_.empty() && waiters_.begin()->first < applied_end_) {
    ready.emplace_back(waiters_.begin()->first, std::move(waiters_.begin()->second));
    waiters_.erase(waiters_.begin());
  }
  for (auto& [at, w] : ready) {
    if (at == offset && !outcome.ok()) {
      w.done(outcome.error());
    } else {
      w.done(base::ok_v);
    }
  }
  if (then) then(outcome);
  run_next();
}

void metadata_apply_queue::entry_failed(int64_t offset, error why) {
  auto [first, last] = waiters_.equal_range(offset);
  std::vector<waiter> waiting;
  for (auto it = first; it != last; ++it) waiting.push_back(std::move(it->second));
  waiters_.erase(first, last);
  // Readers (await_applied_through: they have timed_out) are released; the reason is kept for a
  // writer that has not asked yet unless one of the waiters is a writer.
  const bool writer_waits =
      std::any_of(waiting.begin(), waiting.end(), [](const waiter& w) { return !w.timed_out; });
  if (!writer_waits) {
    failures_[offset] = why;
    while (failures_.size() > entry_failures_max) failures_.erase(failures_.begin());
  }
  for (auto& w : waiting) w.done(why);
  // Settled in order behind the jobs queued before it, like a control entry. Before this the
  // end stayed below a refused entry until a later entry's job ran: the metadata barrier of a
  // node that is not the active controller (await_applied_through of the quorum's high
  // watermark - 1) waited metadata_write_timeout_ms when the refused entry was the log's last,
  // as after two plans of one partition at once (a forwarded reassignment refused for its
  // partition epoch, whose retry passes the barrier). The job completes on a later task, so a
  // run of refused entries does not recurse through run_next.
  push(offset, [this](std::function<void(result<void>)> done) {
    runtime_.post(shard_, [done = std::move(done), alive = std::weak_ptr<int>(lifetime_)] {
      if (alive.lock()) done(base::ok_v);
    });
  });
}

void metadata_apply_queue::await_applied(int64_t offset, std::function<void(result<void>)> done) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, shard_);
  if (auto f = failures_.find(offset); f != failures_.end()) {
    auto why = std::move(f->second);
    failures_.erase(f);
    return done(std::move(why));
  }
  if (offset < applied_end_) return done(base::ok_v);
  add_waiter(offset, waiter{0, std::move(done), {}}, metadata_write_timeout_ms);
}

void metadata_apply_queue::await_applied_through(int64_t offset, int64_t timeout_ms,
                                                 std::function<void(bool applied)> done) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, shard_);
  if (offset < applied_end_) return done(true);
  // A failed entry's reason (entry_failed) reaches this waiter too: that entry is settled.
  auto shared = std::make_shared<std::function<void(bool)>>(std::move(done));
  add_waiter(offset, waiter{0, [shared](result<void>) { (*shared)(true); }, [shared] { (*shared)(false); }}, timeout_ms);
}

void metadata_apply_queue::add_waiter(int64_t offset, waiter w, int64_t timeout_ms) {
  const uint64_t id = next_waiter_id_++;
  w.id = id;
  waiters_.emplace(offset, std::move(w));
  runtime_.post_after(shard_, timeout_ms, [this, offset, id, alive = std::weak_ptr<int>(lifetime_)] {
    if (!alive.lock()) return;
    auto [first, last] = waiters_.equal_range(offset);
    for (auto it = first; it != last; ++it) {
      if (it->second.id != id) continue;
      auto late = std::move(it->second);
      waiters_.erase(it);
      if (late.timed_out) return late.timed_out();
      return late.done(error{errc::request_timed_out, "the metadata entry at offset " + std::to_string(offset) +
                                                          " was committed but not applied on node " +
                                                          std::to_string(node_id_) + " within " +
                                                          std::to_string(metadata_write_timeout_ms) + " ms"});
    }
  });
}

}  // namespace ringlog::partition
