#pragma once
// The order in which committed metadata entries reach this node's shards and replicas (issue 28
// stage D; Kafka's MetadataLoader, which hands one delta at a time to its publishers): one job
// per applied entry (the broker's: publish the view to every shard, reconcile the replicas), run
// one at a time in offset order on the controller shard, and the writers that wait until the
// entry they committed is applied and reconciled here.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>

#include "ringlog/partition/errc.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::partition {

class metadata_apply_queue {
 public:
  /// One entry's work: calls `done` once, on the queue's shard, with its outcome.
  using job = std::function<void(std::function<void(result<void>)> done)>;

  /// Every call, job and answer runs on `shard` of `runtime` (the controller shard); `node_id`
  /// is named in the timeout's message. `runtime` outlives this.
  metadata_apply_queue(runtime::shard_runtime& runtime, size_t shard, int32_t node_id)
      : runtime_(runtime), shard_(shard), node_id_(node_id) {}

  /// Queues `work` for the entry at `offset` (offsets ascend; a record-less control entry's
  /// job too, so the end moves past it) and runs it now when no job runs. `then`, when set,
  /// hears the job's own outcome once it is done, before any later job runs (start-up's job,
  /// whose offset may be a refused entry's: a wait by offset could take that entry's reason).
  void push(int64_t offset, job work, std::function<void(result<void>)> then = {});
  /// Every entry below this offset is applied and its job done here (0: none).
  [[nodiscard]] int64_t applied_end() const { return applied_end_; }
  /// `done` once the entry at `offset` is applied here: ok (also when its job failed for
  /// another entry's waiters), the job's error for the waiters of its own offset, the reason
  /// entry_failed gave, or request_timed_out after metadata_write_timeout_ms.
  void await_applied(int64_t offset, std::function<void(result<void>)> done);
  /// A reader's wait (read-your-writes of a peer's image, broker::await_metadata_applied):
  /// `done(true)` once every entry up to `offset` (inclusive) is applied here (or the entry at
  /// `offset` failed, which it does on every node: it never will be), `done(false)` after
  /// `timeout_ms`. Unlike await_applied it takes no entry's failure: that stays for its writer.
  void await_applied_through(int64_t offset, int64_t timeout_ms, std::function<void(bool applied)> done);
  /// The entry at `offset` did not apply (a refused write, the same on every node): its waiters
  /// get `why`, or the first to come does (at most entry_failures_max kept, oldest dropped).
  /// The entry is settled here all the same: applied_end() moves past it once the entries
  /// before it are applied (a job that changes nothing), so a wait through it (the metadata
  /// barrier's, when it is the log's last entry) does not last until a later entry comes.
  void entry_failed(int64_t offset, error why);

 private:
  struct queued {
    int64_t offset = 0;
    job work;
    std::function<void(result<void>)> then;   // push's: the job's own outcome
  };
  struct waiter {
    uint64_t id = 0;
    std::function<void(result<void>)> done;
    std::function<void()> timed_out;   // unset: done hears request_timed_out
  };
  void run_next();
  /// The job of `offset` ended with `outcome`: its waiters and every earlier one are answered,
  /// then its `then`.
  void finish(int64_t offset, result<void> outcome, const std::function<void(result<void>)>& then);
  struct waiter;
  /// Adds `w` as a waiter of `offset`; after `timeout_ms`, if still waiting, it hears
  /// `timed_out()`, or without one request_timed_out through `done`.
  void add_waiter(int64_t offset, waiter w, int64_t timeout_ms);

  runtime::shard_runtime& runtime_;
  const size_t shard_;
  const int32_t node_id_;
  std::deque<queued> jobs_;   // bounded by the entries the quorum commits ahead of the shards
  bool running_ = false;
  int64_t applied_end_ = 0;
  std::multimap<int64_t, waiter> waiters_;   // by the offset awaited
  uint64_t next_waiter_id_ = 1;
  std::map<int64_t, error> failures_;   // entry_failed with no waiter yet, <= entry_failures_max
  /// Timers hold a weak reference: one that fires after the queue is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
};

}  // namespace ringlog::partition
