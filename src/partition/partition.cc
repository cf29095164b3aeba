// A partition's behaviour on its shard (partition.h): the high watermark and the acks=all
// waiters, consumers' parked fetches and their reads, and the leader's reads for followers.
// Kafka's counterparts: Partition.maybeIncrementLeaderHW, DelayedProduce, DelayedFetch,
// Partition.fetchRecords. The appends are in partition_append.cc.

#include <algorithm>
#include <chrono>
#include <utility>

#include "ringlog/partition/constants.h"
#include "ringlog/partition/partition.h"
#include "ringlog/protocol/error_codes.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"

namespace ringlog::partition {
namespace {

using protocol::error_codes::code_not_leader_or_follower;
using protocol::error_codes::code_offset_out_of_range;

/// A consumer's read failing at stored damage (partition_log::read), as each door answers it:
/// Kafka's clients (raw batches) hear CORRUPT_MESSAGE, as Kafka's brokers answer a batch header
/// that does not decode (their consumers report the offset to the application); decoded reads
/// (HTTP) hear kafka_storage_error, 503 50301 (docs/configuration.md): the server's damage, not
/// the client's request (a 422).
error read_error(const storage::error& e, bool raw_batches) {
  if (e.code == storage::errc::corrupt_message && !raw_batches) {
    return {errc::kafka_storage_error, "the stored log is damaged: " + e.message};
  }
  return from_storage(e);
}

}  // namespace

std::string partition_key(const std::string& topic, int32_t partition) {
  return topic + "-" + std::to_string(partition);
}

void partition_runtime::assert_on_shard() const {
  RINGLOG_ASSERT_OP(context_->current_shard(), ==, context_->shard);
}

void partition_runtime::publish() {
  stats->log_start_offset.store(log->log_start_offset().value(), std::memory_order_relaxed);
  stats->high_watermark.store(log->high_watermark().value(), std::memory_order_relaxed);
  stats->log_end_offset.store(log->log_end_offset().value(), std::memory_order_relaxed);
  stats->high_watermark_established.store(!leader || log->high_watermark() >= epoch_start_offset,
                                          std::memory_order_relaxed);
  stats->size_bytes.store(log->size_bytes(), std::memory_order_relaxed);
}

// ---------------------------------------------------------------- serving and appending checks

result<void> partition_runtime::check_serving(std::optional<model::offset> reading_at) const {
  // Reads below the high watermark are served: those records are committed. A reader at the high
  // watermark (or asking for the latest offset) learns the partition's end, which only a leader
  // that knows it may tell (replication/offsets_gate.h: KIP-207, KAFKA-2334).
  if (leader && reading_at && *reading_at < log->high_watermark()) return base::ok_v;
  return check_answer([&](model::offset hw, bool lease_holds) {
    return replication::answer_end_offset(hw, epoch_start_offset, replicas.size(), lease_holds);
  });
}

result<void> check_current_leader_epoch(int32_t current_leader_epoch, model::leader_epoch known, const std::string& name) {
  if (current_leader_epoch == -1 || current_leader_epoch == known.value()) return base::ok_v;
  const std::string what = "the request names leader epoch " + std::to_string(current_leader_epoch) + " of " + name +
                           ", this broker knows epoch " + std::to_string(known.value());
  if (current_leader_epoch < known.value()) return error{errc::fenced_leader_epoch, what + ": refresh the metadata"};
  return error{errc::unknown_leader_epoch, what + " (not yet the newer one): retry"};
}

model::leader_epoch epoch_of_offset(const std::map<int32_t, model::offset>& epochs, model::offset offset) {
  // Start offsets grow with the epochs (storage keeps them so): the last entry starting at or
  // below `offset` is its epoch.
  model::leader_epoch out{-1};
  for (const auto& [e, start] : epochs) {
    if (start > offset) break;
    out = model::leader_epoch{e};
  }
  return out;
}

result<epoch_end_offset> partition_runtime::end_offset_for_leader_epoch(int32_t current_leader_epoch,
                                                                        model::leader_epoch asked) const {
  if (auto fenced = check_current_leader_epoch(current_leader_epoch, epoch, name()); !fenced.ok()) return fenced.error();
  if (!leader) {
    return error{errc::not_leader_or_follower, "this broker does not lead " + name() + " now: ask its leader"};
  }
  const model::offset log_end = log->log_end_offset();
  // Kafka's leader puts its epoch in the cache when elected; this log learns an epoch from its
  // first batch, so the current epoch, asked before its first append, is answered here.
  if (asked.value() < 0 || asked > epoch) return epoch_end_offset{};
  if (asked == epoch) return epoch_end_offset{asked, log_end};
  if (auto found = log->end_offset_for_epoch(asked)) return epoch_end_offset{found->first, found->second};
  // Older than every cached epoch (their records went below the log start): KIP-279 answers the
  // asked epoch ending where the first cached one starts. An empty cache: nothing was appended
  // since this leadership began.
  const auto& epochs = log->leader_epochs();
  return epoch_end_offset{asked, epochs.empty() ? epoch_start_offset : epochs.begin()->second};
}

result<void> partition_runtime::check_fetch_serving(model::offset fetch_offset) const {
  // Every Fetch answer carries the high watermark: an establishing leader's is refused at any
  // offset, a lapsed lease only at the end (replication::answer_fetch).
  return check_answer([&](model::offset hw, bool lease_holds) {
    return replication::answer_fetch(hw, epoch_start_offset, replicas.size(), lease_holds, fetch_offset);
  });
}

result<void> partition_runtime::check_answer(
    const std::function<replication::end_offset_answer(model::offset, bool)>& rule) const {
  if (!leader) {
    return error{errc::not_leader_or_follower, "this broker does not lead " + name() + " now: retry"};
  }
  const model::offset hw = log->high_watermark();
#ifdef RINGLOG_PARTITION_BREAK_LEASE_ON_WALL_CLOCK
  const int64_t now = context_->clock.now_ms();   // negative control: a wall clock stepped back stretches the lease
#else
  const int64_t now = context_->clock.monotonic_ms();   // the lease's clock (renew_leadership_lease)
#endif
  const int64_t lease_until = context_->leadership_lease_until_ms.load(std::memory_order_relaxed);
  switch (rule(hw, now < lease_until)) {
    case replication::end_offset_answer::available:
      return base::ok_v;
    case replication::end_offset_answer::lease_lapsed:
      return error{errc::not_leader_or_follower,
                   "this broker has not heard from the active controller since " +
                       (lease_until < 0 ? std::string("it started")
                                        : std::to_string(now - lease_until) + " ms past its leadership lease") +
                       ": it may have been fenced and " + name() + " led by another broker meanwhile; retry"};
    case replication::end_offset_answer::offset_not_available:
      break;
  }
  return error{errc::offset_not_available,
               "the new leader of " + name() + " is still establishing its high watermark (at " +
                   std::to_string(hw.value()) + ", its leader epoch " + std::to_string(epoch.value()) +
                   " began at offset " + std::to_string(epoch_start_offset.value()) +
                   "): the partition's end is not known yet; retry"};
}

result<void> partition_runtime::check_append(acks_mode acks) const {
  if (!leader) {
    return error{errc::not_leader_or_follower, "this broker does not lead " + name() + " now (its leadership moved: the leader is " +
                                                   (leader_id >= 0 ? "broker " + std::to_string(leader_id)
                                                                   : std::string("not elected yet")) +
                                                   "): retry"};
  }
  if (acks == acks_mode::all) {
    const int32_t needed = context_->min_insync_replicas(topic);
    if (static_cast<int32_t>(isr.size()) < needed) {
      return error{errc::not_enough_replicas, "min.insync.replicas of '" + topic + "' is " +
                                                  std::to_string(needed) + " but only " +
                                                  std::to_string(isr.size()) + " replica(s) of partition " +
                                                  std::to_string(partition) + " are in sync; nothing was written"};
    }
  }
  return base::ok_v;
}

// ---------------------------------------------------------------- the high watermark and acks

void partition_runtime::update_high_watermark() {
  assert_on_shard();
  if (!leader || deleted) return;
  // Under the fsync policy only what is on the leader's disk counts for it too.
  const model::offset leader_end =
      context_->config.log_flush_policy == "fsync" ? log->durable_offset() : log->log_end_offset();
  const model::offset before = log->high_watermark();
  const model::offset next = leader->high_watermark(leader_end, before, context_->min_insync_replicas(topic));
  if (next > before) {
    log->set_high_watermark(next);
    RINGLOG_ASSERT_OP(log->high_watermark().value(), <=, log->log_end_offset().value());
    publish();
    wake_waiters();
    wake_replica_waiters();   // followers learn the new high watermark now
  }
  const model::offset hw = log->high_watermark();
  while (!ack_waiters.empty() && ack_waiters.begin()->first <= hw) {
    auto done = std::move(ack_waiters.begin()->second.done);
    base::observe_latency_since(base::latency_stage::produce_replication_wait, ack_waiters.begin()->second.durable_ns);
    ack_waiters.erase(ack_waiters.begin());
    done(base::ok_v);
  }
}

void partition_runtime::complete_append(acks_mode acks, model::offset required, int64_t timeout_ms,
                                        std::function<void(result<void>)> done) {
  assert_on_shard();
  publish();
  wake_replica_waiters();   // followers fetch it now, in parallel with the fsync here
  if (acks == acks_mode::none) {
    done(base::ok_v);
    done = nullptr;
  }
  const bool fsync_policy = context_->config.log_flush_policy == "fsync";
  const int64_t appended_ns = base::monotonic_ns();
  auto after_flush = [self = shared_from_this(), acks, required, timeout_ms, fsync_policy, appended_ns,
                      appended_epoch = epoch, done = std::move(done)](storage::result<void> r) {
    const int64_t durable_ns = base::monotonic_ns();
    if (fsync_policy && r.ok()) {
      // Runs inside the disk executor's completion: it knows when the covering sync was submitted.
      const int64_t submitted_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       self->context_->disk.running_submitted_at().time_since_epoch())
                                       .count();
      base::observe_latency(base::latency_stage::produce_fsync_wait, submitted_ns - appended_ns);
      base::observe_latency(base::latency_stage::produce_fsync, durable_ns - submitted_ns);
    }
    if (r.ok() && !self->deleted) {
      self->publish();
      self->update_high_watermark();
    }
    if (!done) return;
    if (!r.ok()) return done(from_storage(r.error()));
    if (acks == acks_mode::all && self->epoch != appended_epoch && !self->deleted) {
      // The leadership ended (its waiters were answered) and may have begun again during the
      // flush: offset `required` of the new epoch may hold other records (KIP-101 truncation).
      return done(error{errc::not_leader_or_follower, "leadership of " + self->name() +
                                                          " changed before the write was replicated; it may or may "
                                                          "not be stored: retry"});
    }
    if (acks == acks_mode::all) return self->await_replication(required, timeout_ms, done, durable_ns);
    done(base::ok_v);
  };
  if (!fsync_policy) return after_flush(base::ok_v);
  log->flush_async(context_->disk, std::move(after_flush));
}

void partition_runtime::await_replication(model::offset required, int64_t timeout_ms,
                                          std::function<void(result<void>)> done, int64_t durable_ns) {
#ifdef RINGLOG_BROKER_BREAK_ACK_BEFORE_REPLICATION
  // Negative control of tests/sim/cluster_sim (meson: cluster_sim_break_*): acks=all answered
  // once the leader's own log has the write, before the ISR does.
  return done(base::ok_v);
#endif
  // Removed while its flush ran: nothing ticks it or moves its high watermark any more.
  if (deleted) return done(*removal_reason);
  if (log->high_watermark() >= required) {
    base::observe_latency_since(base::latency_stage::produce_replication_wait, durable_ns);
    return done(base::ok_v);
  }
  if (!leader) {
    return done(error{errc::not_leader_or_follower, "leadership of " + name() +
                                                        " moved before the write was replicated; it may or may not "
                                                        "be stored: retry"});
  }
  const int64_t deadline = context_->clock.now_ms() + std::max<int64_t>(timeout_ms, 1);
  ack_waiters.emplace(required, ack_waiter{deadline, std::move(done), durable_ns});
}

void partition_runtime::fail_ack_waiters(const error& why) {
  auto waiting = std::move(ack_waiters);
  ack_waiters.clear();
  for (auto& [offset, w] : waiting) w.done(why);
}

void partition_runtime::close_for_removal(const error& why) {
  assert_on_shard();
  deleted = true;
  removal_reason = why;
  fail_ack_waiters(why);
  auto fetches = std::move(waiters);
  waiters.clear();
  for (auto& w : fetches) {
    if (w->completed) continue;
    w->completed = true;
    w->done(why);
  }
  auto replica_fetches = std::move(replica_waiters);
  replica_waiters.clear();
  for (auto& w : replica_fetches) {
    if (w->completed) continue;
    w->completed = true;
    protocol::fetch_response_data::partition_data out;
    out.partition_index = partition;
    out.error_code = static_cast<int16_t>(kafka_error_code(why.code));
    w->done(std::move(out));
  }
}

// ---------------------------------------------------------------- consumers' fetches

void partition_runtime::wake_waiters() {
  if (waiters.empty()) return;
  assert_on_shard();
  auto waiting = std::move(waiters);
  waiters.clear();
  many_readers = waiting.size() > 1;
  const int64_t woken_ns = base::monotonic_ns();
  for (auto& w : waiting) {
    if (w->completed) continue;
    w->woken_ns = woken_ns;
    try_fetch(w);
  }
}

void partition_runtime::try_fetch(const std::shared_ptr<fetch_waiter>& w) {
  assert_on_shard();
  const base::cpu_scope cpu(base::cpu_activity::fetch);   // the read, and the answer when it is made here
  // At every try, wake-ups included: the answer carries the high watermark (answer_fetch).
  auto serving = check_fetch_serving(w->request.fetch_offset);
  if (serving.ok()) return answer_or_park(w, read_for_fetch(w->request));
  const bool wait = serving.error().code == errc::offset_not_available && w->request.wait_while_end_unknown &&
                    w->request.max_wait_ms > 0;
  if (!wait) {
    w->completed = true;
    return w->done(serving.error());
  }
  // A long-poll of a partition whose end is not known yet parks until the high watermark moves.
  fetch_response nothing;
  nothing.next_fetch_offset = w->request.fetch_offset;
  answer_or_park(w, std::move(nothing));
}

void partition_runtime::answer_or_park(const std::shared_ptr<fetch_waiter>& w, result<fetch_response> response) {
  const partition_context::settings& config = context_->config;
  const int64_t wait_ms = std::min(w->request.max_wait_ms, config.fetch_wait_max_ms);
  // A decoded read that skipped batches holding nothing for this reader (markers, aborted
  // records) answers now, so the reader moves past them instead of waiting in front of them.
  const bool skipped = response.ok() && !w->request.raw_batches && response->next_fetch_offset > w->request.fetch_offset;
  if (!response.ok() || !response->records.empty() || !response->batches.empty() || !response->file_ranges.empty() ||
      skipped || wait_ms <= 0 || context_->stopping.load()) {
    w->completed = true;
    if (response.ok()) response->woken_ns = w->woken_ns;
    return w->done(std::move(response));
  }
  if (deleted) {
    // Removed meanwhile (close_for_removal answered the fetches parked then): none parks here again.
    w->completed = true;
    return w->done(*removal_reason);
  }
  if (waiters.size() >= static_cast<size_t>(config.fetch_waiters_per_partition_max)) {
    w->completed = true;
    return w->done(error{errc::throttling_quota_exceeded,
                         "too many waiting fetches on " + partition_key(topic, partition) +
                             ": the limit fetch.waiters.per.partition.max is " +
                             std::to_string(config.fetch_waiters_per_partition_max)});
  }
  waiters.push_back(w);
  // The deadline is set once, at the first park: a wake-up that finds nothing to return (the high
  // watermark moved but not past this fetch's offset) parks it again until that same deadline.
  if (!w->deadline_set) {
    w->deadline_set = true;
    context_->add_fetch_deadline(context_->clock.now_ms() + wait_ms, shared_from_this(), w);
  }
}

void partition_runtime::answer_empty(fetch_waiter& w) const {
  if (w.completed) return;
  w.completed = true;
  fetch_response empty;
  empty.high_watermark = log->high_watermark();
  empty.log_start_offset = log->log_start_offset();
  empty.log_end_offset = log->log_end_offset();
  empty.last_stable_offset = log->last_stable_offset();
  empty.next_fetch_offset = w.request.fetch_offset;
  w.done(std::move(empty));
}

result<std::optional<fetch_response>> partition_runtime::read_file_ranges_for_fetch(const fetch_params& req,
                                                                                   model::offset hw) const {
  auto read = log->read_file_ranges(req.fetch_offset, static_cast<size_t>(req.max_bytes), hw);
  if (!read.ok()) return read_error(read.error(), req.raw_batches);
  // A simulated file system has no descriptors to send from: the caller reads bytes instead.
  if (!read->batches.empty() && read->batches.front().source->native_handle() < 0) return std::optional<fetch_response>{};
  fetch_response response;
  response.high_watermark = log->high_watermark();
  response.log_start_offset = log->log_start_offset();
  response.log_end_offset = log->log_end_offset();
  response.last_stable_offset = log->last_stable_offset();
  response.next_fetch_offset = req.fetch_offset;
  if (req.fetch_offset >= hw || read->batches.empty()) return std::optional<fetch_response>{std::move(response)};
  response.next_fetch_offset = std::max(req.fetch_offset, read->next_offset);
  if (req.isolation == isolation_level::read_committed) {
    for (const auto& e : log->aborted_transactions(req.fetch_offset, read->next_offset)) {
      response.aborted_transactions.push_back({e.producer_id, e.first_offset});
    }
  }
  response.file_ranges = std::move(read->batches);
  response.file_ranges_bytes = read->size_bytes;
  response.read_id = context_->next_read_id.fetch_add(1, std::memory_order_relaxed);
  return std::optional<fetch_response>{std::move(response)};
}

result<fetch_response> partition_runtime::read_for_fetch(const fetch_params& req) const {
  assert_on_shard();
  // read_committed reads below the last stable offset (KIP-98), read_uncommitted below the high watermark.
  const bool committed = req.isolation == isolation_level::read_committed;
#ifdef RINGLOG_PARTITION_BREAK_READ_COMMITTED_PAST_STABLE_OFFSET
  // Negative control of tests/sim/cluster_sim (cluster_sim_break_read_committed_past_stable_offset):
  // read_committed reads up to the high watermark, into the open transactions.
  const model::offset hw = log->high_watermark();
#else
  const model::offset hw = committed ? log->last_stable_offset() : log->high_watermark();
#endif
  const model::offset log_start = log->log_start_offset();
  auto& recent = context_->recent_reads;
  // A log that failed an fdatasync answers from no kept read: the read below names the failure.
  const bool usable = !recent.empty() && log->check_usable().ok();
  for (size_t i = 0; usable && !req.raw_batches && i < recent.size(); ++i) {
    const recent_read& r = recent[i];
    if (r.partition_uid == uid && r.fetch_offset == req.fetch_offset && r.max_bytes == req.max_bytes &&
        r.high_watermark == hw && r.log_start_offset == log_start && r.epoch == epoch && r.isolation == req.isolation) {
      fetch_response copy = r.response;   // each fetch owns its answer
      copy.log_end_offset = log->log_end_offset();
      return copy;
    }
  }
  if (req.raw_batches && req.file_ranges) {
    auto ranged = read_file_ranges_for_fetch(req, hw);
    if (!ranged.ok()) return ranged.error();
    if (ranged->has_value()) return std::move(**ranged);
  }
  auto read = log->read(req.fetch_offset, static_cast<size_t>(req.max_bytes), hw);
  if (!read.ok()) return read_error(read.error(), req.raw_batches);
  fetch_response response;
  response.high_watermark = log->high_watermark();
  response.log_start_offset = log_start;
  response.log_end_offset = log->log_end_offset();
  response.last_stable_offset = log->last_stable_offset();
  std::vector<aborted_transaction> aborted;
  if (committed && !read->batches.empty()) {
    for (const auto& e : log->aborted_transactions(req.fetch_offset, read->next_offset)) {
      aborted.push_back({e.producer_id, e.first_offset});
    }
  }
  if (req.raw_batches) {
    // Kafka clients read the batches themselves (they skip records below fetch_offset, and with
    // read_committed the records of the aborted transactions listed).
    if (req.fetch_offset < hw) response.batches = std::move(read->batches);
    response.next_fetch_offset = response.batches.empty() ? req.fetch_offset : std::max(req.fetch_offset, read->next_offset);
    if (!response.batches.empty()) {
      response.read_id = context_->next_read_id.fetch_add(1, std::memory_order_relaxed);
      response.aborted_transactions = std::move(aborted);
    }
    return response;
  }
  response.next_fetch_offset = req.fetch_offset;
  auto decoded = decode_fetched_records(read->batches, req.fetch_offset, hw, req.max_bytes, response.records,
                                        committed ? &aborted : nullptr, &response.next_fetch_offset);
  if (!decoded.ok()) return decoded.error();
  const size_t returned_bytes = decoded.value();
  if (response.records.empty()) return response;
  response.read_id = context_->next_read_id.fetch_add(1, std::memory_order_relaxed);
  if (many_readers && returned_bytes + response.records.size() * recent_read_record_bytes <= recent_read_bytes_max) {
    if (recent.size() == recent_reads_max) recent.pop_back();
    recent.push_front({uid, req.fetch_offset, req.max_bytes, hw, log_start, epoch, req.isolation, response});
  }
  return response;
}

// ---------------------------------------------------------------- followers' fetches, leader side

protocol::fetch_response_data::partition_data partition_runtime::read_for_replica(int32_t replica_id,
                                                                                  model::offset fetch_offset,
                                                                                  int32_t max_bytes) {
  assert_on_shard();
  protocol::fetch_response_data::partition_data out;
  out.partition_index = partition;
  out.high_watermark = log->high_watermark().value();
  out.log_start_offset = log->log_start_offset().value();
  out.last_stable_offset = out.high_watermark;
  // KIP-73 on the leader's side: a follower outside the ISR (a reassignment's new replica, one
  // catching up) is served from the broker-wide bucket of leader.replication.throttled.rate; while
  // it is empty the answer carries the offsets and no records. In-sync followers never wait.
  const bool throttled = std::find(isr.begin(), isr.end(), replica_id) == isr.end();
  const int64_t rate = throttled ? context_->leader_replication_throttled_rate() : 0;
  const int64_t now = context_->clock.now_ms();
  if (throttled && context_->acquire_leader_throttle(rate, now) > 0) return out;
  auto read = log->read(fetch_offset, static_cast<size_t>(std::max(max_bytes, 1)), log->log_end_offset());
  if (!read.ok()) {
    out.error_code = read.error().code == storage::errc::offset_out_of_range ? code_offset_out_of_range
                                                                              : code_not_leader_or_follower;
    return out;
  }
  if (!read->batches.empty()) {
    base::count_activity_bytes(base::cpu_activity::replicate_leader, read->batches.size());
    out.records = std::move(read->batches);
  }
  if (throttled && out.records) {
    context_->record_leader_throttle(static_cast<int64_t>(out.records->size()), rate, now);
  }
  return out;
}

int64_t partition_runtime::replica_held_back_ms(int32_t replica_id) {
  if (std::find(isr.begin(), isr.end(), replica_id) != isr.end()) return 0;
  return context_->acquire_leader_throttle(context_->leader_replication_throttled_rate(), context_->clock.now_ms());
}

void partition_runtime::wake_replica_waiters() {
  if (replica_waiters.empty()) return;
  assert_on_shard();
  const base::cpu_scope cpu(base::cpu_activity::replicate_leader);   // parked reads answered (inside a produce's scope)
  auto waiting = std::move(replica_waiters);
  replica_waiters.clear();
  for (auto& w : waiting) {
    if (w->completed) continue;
    if (replica_held_back_ms(w->replica_id) > 0) {
      replica_waiters.push_back(w);   // held back by the leader throttle: its timer answers it
      continue;
    }
    w->completed = true;
    w->done(read_for_replica(w->replica_id, w->fetch_offset, w->max_bytes));
  }
}

}  // namespace ringlog::partition
