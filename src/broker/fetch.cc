// Fetch and list offsets: reads from a partition's log, long-poll fetches parked until records
// arrive or their deadline (one timer per shard), and offsets by time or position.
// Kafka's counterpart: ReplicaManager.fetchMessages with DelayedFetch, and handleListOffsetRequest.

#include <algorithm>
#include <utility>

#include "broker_impl.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"

namespace ringlog::broker::detail {

void broker_impl::wake_waiters(size_t shard, const std::shared_ptr<partition_runtime>& rt) {
  if (rt->waiters.empty()) return;
  auto waiting = std::move(rt->waiters);
  rt->waiters.clear();
  rt->many_readers = waiting.size() > 1;
  const int64_t woken_ns = base::monotonic_ns();
  for (auto& w : waiting) {
    if (w->completed) continue;
    w->woken_ns = woken_ns;
    try_fetch(shard, rt, w);
  }
}

void broker_impl::try_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                            const std::shared_ptr<fetch_waiter>& w) {
  const base::cpu_scope cpu(base::cpu_activity::fetch);   // the read, and the answer when it is made here
  // At every try, wake-ups included: the answer carries the high watermark (answer_fetch).
  auto serving = check_fetch_serving(*rt, w->request.fetch_offset);
  if (serving.ok()) return answer_or_park(shard, rt, w, read_for_fetch(shard, *rt, w->request));
  const bool wait = serving.error().code == errc::offset_not_available && w->request.wait_while_end_unknown &&
                    w->request.max_wait_ms > 0;
  if (!wait) {
    w->completed = true;
    return w->done(serving.error());
  }
  // A long-poll of a partition whose end is not known yet parks until the high watermark moves.
  fetch_response nothing;
  nothing.next_fetch_offset = w->request.fetch_offset;
  answer_or_park(shard, rt, w, std::move(nothing));
}

result<std::optional<fetch_response>> broker_impl::read_file_ranges_for_fetch(const partition_runtime& rt,
                                                                             const fetch_request& req,
                                                                             model::offset hw) {
  auto read = rt.log->read_file_ranges(req.fetch_offset, static_cast<size_t>(req.max_bytes), hw);
  if (!read.ok()) return from_storage(read.error());
  // A simulated file system has no descriptors to send from: the caller reads bytes instead.
  if (!read->batches.empty() && read->batches.front().source->native_handle() < 0) return std::optional<fetch_response>{};
  fetch_response response;
  response.high_watermark = rt.log->high_watermark();
  response.log_start_offset = rt.log->log_start_offset();
  response.log_end_offset = rt.log->log_end_offset();
  response.last_stable_offset = rt.log->last_stable_offset();
  response.next_fetch_offset = req.fetch_offset;
  if (req.fetch_offset >= hw || read->batches.empty()) return std::optional<fetch_response>{std::move(response)};
  response.next_fetch_offset = std::max(req.fetch_offset, read->next_offset);
  if (req.isolation == isolation_level::read_committed) {
    for (const auto& e : rt.log->aborted_transactions(req.fetch_offset, read->next_offset)) {
      response.aborted_transactions.push_back({e.producer_id, e.first_offset});
    }
  }
  response.file_ranges = std::move(read->batches);
  response.file_ranges_bytes = read->size_bytes;
  response.read_id = next_read_id_.fetch_add(1, std::memory_order_relaxed);
  return std::optional<fetch_response>{std::move(response)};
}

result<fetch_response> broker_impl::read_for_fetch(size_t shard, const partition_runtime& rt, const fetch_request& req) {
  // read_committed reads below the last stable offset (KIP-98), read_uncommitted below the high watermark.
  const bool committed = req.isolation == isolation_level::read_committed;
  const model::offset hw = committed ? rt.log->last_stable_offset() : rt.log->high_watermark();
  const model::offset log_start = rt.log->log_start_offset();
  auto& recent = recent_reads_[shard];
  // A log that failed an fdatasync answers from no kept read: the read below names the failure.
  const bool usable = !recent.empty() && rt.log->check_usable().ok();
  for (size_t i = 0; usable && !req.raw_batches && i < recent.size(); ++i) {
    const recent_read& r = recent[i];
    if (r.partition_uid == rt.uid && r.fetch_offset == req.fetch_offset && r.max_bytes == req.max_bytes &&
        r.high_watermark == hw && r.log_start_offset == log_start && r.epoch == rt.epoch && r.isolation == req.isolation) {
      fetch_response copy = r.response;   // each fetch owns its answer
      copy.log_end_offset = rt.log->log_end_offset();
      return copy;
    }
  }
  if (req.raw_batches && req.file_ranges) {
    auto ranged = read_file_ranges_for_fetch(rt, req, hw);
    if (!ranged.ok()) return ranged.error();
    if (ranged->has_value()) return std::move(**ranged);
  }
  auto read = rt.log->read(req.fetch_offset, static_cast<size_t>(req.max_bytes), hw);
  if (!read.ok()) return from_storage(read.error());
  fetch_response response;
  response.high_watermark = rt.log->high_watermark();
  response.log_start_offset = log_start;
  response.log_end_offset = rt.log->log_end_offset();
  response.last_stable_offset = rt.log->last_stable_offset();
  std::vector<aborted_transaction> aborted;
  if (committed && !read->batches.empty()) {
    for (const auto& e : rt.log->aborted_transactions(req.fetch_offset, read->next_offset)) {
      aborted.push_back({e.producer_id, e.first_offset});
    }
  }
  if (req.raw_batches) {
    // Kafka clients read the batches themselves (they skip records below fetch_offset, and with
    // read_committed the records of the aborted transactions listed).
    if (req.fetch_offset < hw) response.batches = std::move(read->batches);
    response.next_fetch_offset = response.batches.empty() ? req.fetch_offset : std::max(req.fetch_offset, read->next_offset);
    if (!response.batches.empty()) {
      response.read_id = next_read_id_.fetch_add(1, std::memory_order_relaxed);
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
  response.read_id = next_read_id_.fetch_add(1, std::memory_order_relaxed);
  if (rt.many_readers && returned_bytes + response.records.size() * recent_read_record_bytes <= recent_read_bytes_max) {
    if (recent.size() == recent_reads_max) recent.pop_back();
    recent.push_front({rt.uid, req.fetch_offset, req.max_bytes, hw, log_start, rt.epoch, req.isolation, response});
  }
  return response;
}

void broker_impl::answer_or_park(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                 const std::shared_ptr<fetch_waiter>& w, result<fetch_response> response) {
  const int64_t wait_ms = std::min(w->request.max_wait_ms, config_.fetch_wait_max_ms);
  // A decoded read that skipped batches holding nothing for this reader (markers, aborted
  // records) answers now, so the reader moves past them instead of waiting in front of them.
  const bool skipped = response.ok() && !w->request.raw_batches && response->next_fetch_offset > w->request.fetch_offset;
  if (!response.ok() || !response->records.empty() || !response->batches.empty() || !response->file_ranges.empty() || skipped || wait_ms <= 0 || stopping_) {
    w->completed = true;
    if (response.ok()) response->woken_ns = w->woken_ns;
    return w->done(std::move(response));
  }
  if (rt->waiters.size() >= static_cast<size_t>(config_.fetch_waiters_per_partition_max)) {
    w->completed = true;
    return w->done(error{errc::throttling_quota_exceeded,
                         "too many waiting fetches on " + partition_key(rt->topic, rt->partition) +
                             ": the limit fetch.waiters.per.partition.max is " +
                             std::to_string(config_.fetch_waiters_per_partition_max)});
  }
  rt->waiters.push_back(w);
  // The deadline is set once, at the first park: a wake-up that finds nothing to return (the high
  // watermark moved but not past this fetch's offset) parks it again until that same deadline.
  if (!w->deadline_set) {
    w->deadline_set = true;
    add_fetch_deadline(shard, deps_.clock.now_ms() + wait_ms, rt, w);
  }
}

// Parked fetches that finish early (most of them, under load) would leave a timer each behind,
// firing for nothing up to fetch.wait.max.ms later: one per fetch, thousands a second. Instead each
// shard keeps its deadlines in a heap and a timer only at the earliest one (deadlines of one client
// mostly grow, so that is usually the timer already set).
void broker_impl::add_fetch_deadline(size_t shard, int64_t at_ms, const std::shared_ptr<partition_runtime>& rt,
                                     const std::shared_ptr<fetch_waiter>& w) {
  fetch_deadlines& d = deadlines_[shard];
  d.heap.push({at_ms, w, rt});
  arm_fetch_deadline_timer(shard);
}

void broker_impl::arm_fetch_deadline_timer(size_t shard) {
  fetch_deadlines& d = deadlines_[shard];
  if (d.heap.empty()) return;
  const int64_t next = d.heap.top().at_ms;
  if (!d.timers_at_ms.empty() && *d.timers_at_ms.begin() <= next) return;   // one fires by then
  d.timers_at_ms.insert(next);
  deps_.runtime.post_after(shard, std::max<int64_t>(0, next - deps_.clock.now_ms()), [this, shard, next] {
    expire_fetches(shard, next);
  });
}

void broker_impl::expire_fetches(size_t shard, int64_t timer_at_ms) {
  fetch_deadlines& d = deadlines_[shard];
  d.timers_at_ms.erase(d.timers_at_ms.find(timer_at_ms));
  const int64_t now = std::max(deps_.clock.now_ms(), timer_at_ms);
  std::vector<std::shared_ptr<partition_runtime>> expired_on;   // partitions whose waiters timed out
  while (!d.heap.empty() && d.heap.top().at_ms <= now) {
    fetch_deadline due = d.heap.top();
    d.heap.pop();
    auto w = due.waiter.lock();
    auto rt = due.partition.lock();
    if (!w || !rt || w->completed) continue;
    answer_empty(*rt, *w);
    if (std::find(expired_on.begin(), expired_on.end(), rt) == expired_on.end()) expired_on.push_back(std::move(rt));
  }
  // A timed-out fetch leaves its partition's waiters now, not at the next append: on an idle
  // partition it counted toward fetch.waiters.per.partition.max forever (after that many timed-out
  // long-polls every new one was refused) and held its answer's callback until then.
  for (const auto& rt : expired_on) {
    std::erase_if(rt->waiters, [](const std::shared_ptr<fetch_waiter>& w) { return w->completed; });
  }
  arm_fetch_deadline_timer(shard);
}

result<void> broker_impl::check_readable(const model::topic_partition& tp) const {
  if (stopping_) return error{errc::broker_not_available, "the broker is shutting down"};
  return check_partition_exists(tp);
}

void broker_impl::fetch_known(fetch_request request, std::function<void(result<fetch_response>)> done) {
  if (auto usable = check_readable(request.partition); !usable.ok()) return done(usable.error());
  if (request.max_bytes <= 0) {
    return done(error{errc::invalid_request, "max_bytes must be positive, got " + std::to_string(request.max_bytes)});
  }
  auto topic = find_topic(request.partition.topic);
  auto leader = leader_route(*topic, request.partition.partition.value());
  if (!leader.ok()) return done(leader.error());
  if (leader.value() != config_.node_id) return forward_fetch(leader.value(), topic, std::move(request), std::move(done));
  fetch_here(std::move(request), std::move(done));
}

void broker_impl::fetch_here(fetch_request request, std::function<void(result<fetch_response>)> done) {
  auto held = std::make_shared<fetch_request>(std::move(request));
  when_replica_open(held->partition, [this, held, done = std::move(done)]() mutable {
    const auto& tp = held->partition;
    const size_t shard = owner(tp.topic, tp.partition.value());
    if (!deps_.runtime.admits(shard)) return done(shard_busy(shard));
    deps_.runtime.post(shard, [this, shard, request = std::move(*held), done = std::move(done)]() mutable {
      auto rt = runtime_of(shard, request.partition.topic, request.partition.partition.value());
      if (!rt) return done(no_replica_here(find_topic(request.partition.topic) != nullptr, request.partition));
      auto w = std::make_shared<fetch_waiter>();
      w->request = std::move(request);
      w->done = std::move(done);
      try_fetch(shard, rt, w);
    });
  });
}

void broker_impl::list_offsets_known(list_offsets_request request, std::function<void(result<list_offsets_response>)> done) {
  if (auto usable = check_readable(request.partition); !usable.ok()) return done(usable.error());
  auto topic = find_topic(request.partition.topic);
  auto leader = leader_route(*topic, request.partition.partition.value());
  if (!leader.ok()) return done(leader.error());
  if (leader.value() != config_.node_id) return forward_list_offsets(leader.value(), std::move(request), std::move(done));
  list_offsets_here(std::move(request), std::move(done));
}

void broker_impl::list_offsets_here(list_offsets_request request,
                                    std::function<void(result<list_offsets_response>)> done) {
  auto held = std::make_shared<list_offsets_request>(std::move(request));
  when_replica_open(held->partition, [this, held, done = std::move(done)]() mutable {
    const auto& tp = held->partition;
    const size_t shard = owner(tp.topic, tp.partition.value());
    if (!deps_.runtime.admits(shard)) return done(shard_busy(shard));
    deps_.runtime.post(shard, [this, shard, request = std::move(*held), done = std::move(done)]() mutable {
      auto rt = runtime_of(shard, request.partition.topic, request.partition.partition.value());
      if (!rt) return done(no_replica_here(find_topic(request.partition.topic) != nullptr, request.partition));
      const std::optional<model::offset> reading_at =
          request.spec == offset_spec::earliest ? std::optional<model::offset>{rt->log->log_start_offset()} : std::nullopt;
      if (auto serving = check_serving(*rt, reading_at); !serving.ok()) return done(serving.error());
      list_offsets_response out;
      const model::offset upper = request.isolation == isolation_level::read_committed ? rt->log->last_stable_offset()
                                                                                      : rt->log->high_watermark();
      switch (request.spec) {
        case offset_spec::earliest:
          out.found_offset = rt->log->log_start_offset();
          break;
        case offset_spec::latest:
          // KIP-98: a read_committed consumer's end of the log is the last stable offset.
          out.found_offset = upper;
          break;
        case offset_spec::timestamp: {
          auto found = rt->log->offset_for_timestamp(request.timestamp);
          if (!found.ok()) return done(from_storage(found.error()));
          if (found.value() && found.value()->found_offset < upper) {
            out.found_offset = found.value()->found_offset;
            out.timestamp = found.value()->timestamp;  // the record's own timestamp, as Kafka answers
          }
          break;
        }
      }
      done(std::move(out));
    });
  });
}

}  // namespace ringlog::broker::detail
