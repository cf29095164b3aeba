// A REST consumer instance's records: poll (each round a heartbeat, then a read of every owned
// partition, waiting on their appends until there are records, fetch.min.bytes or the timeout),
// commit and committed.
// Kafka's counterpart: KafkaConsumer.poll over the Fetcher and the broker's DelayedFetch,
// commitSync and committed (OffsetCommit, OffsetFetch); the REST Proxy's KafkaConsumerReadTask.

#include "group_service_impl.h"

namespace ringlog::broker::group_service_internal {
namespace {

/// How soon a records poll with nothing to watch (no partition owned yet) or whose watch failed
/// looks again before its timeout: short enough that a new assignment is read quickly, long
/// enough to cost nothing when idle. A poll with partitions waits on their appends instead.
constexpr int64_t poll_retry_interval_ms = 10;

/// How long a read_committed instance's committed read waits while an open transaction holds
/// offsets of its partitions pending (KIP-447: the Java consumer's committed() behind Confluent's
/// REST proxy asks with require_stable and retries UNSTABLE_OFFSET_COMMIT until its timeout).
/// A transaction that is ending turns them into committed offsets as soon as its markers are
/// written (retried every 100 ms); one still open may take up to its transaction.timeout.ms, so
/// past this bound the read answers 408 instead of the older, soon outdated offset.
constexpr int64_t committed_stable_wait_ms_max = 5'000;
/// How often such a read looks again meanwhile.
constexpr int64_t committed_stable_retry_ms = 10;

/// The partitions of `wanted` (empty: all) whose offsets an open transaction holds pending.
group::partition_set unstable_of(const group::group_coordinator& coordinator, const std::string& group_id,
                                 const group::partition_set& wanted) {
  group::partition_set out = coordinator.pending_txn_partitions(group_id);
  if (!wanted.empty()) std::erase_if(out, [&](const auto& tp) { return !wanted.contains(tp); });
  return out;
}

/// Where each partition of a poll round is watched for appends: past what its read saw (the
/// records below were read already; a wake-up there would only read them again).
std::vector<std::pair<model::topic_partition, model::offset>> watch_points(const std::vector<poll_slot>& slots) {
  std::vector<std::pair<model::topic_partition, model::offset>> out;
  for (const auto& slot : slots) {
    model::offset from = slot.fetch_offset;
    if (slot.fetched && slot.fetched->ok()) from = std::max(from, slot.fetched->value().next_fetch_offset);
    out.emplace_back(slot.partition, from);
  }
  return out;
}

/// Moves `records` of `partition` into `out` while the answer has room (`bytes` so far, of
/// request.max_bytes; at least one record) and the caller accepts them, setting the partition's
/// next position in `next_offsets`. True when the answer is full: no room left, or a record the
/// caller refuses ends it, marked, with the position left at it (poll_request::accepts).
bool take_records(const model::topic_partition& partition, std::vector<model::record>& records,
                  const poll_request& request, std::vector<consumed_record>& out,
                  group::partition_map<model::offset>& next_offsets, size_t& bytes) {
  for (auto& rec : records) {
    size_t size = (rec.key ? rec.key->size() : 0) + (rec.value ? rec.value->size() : 0);
    for (const auto& h : rec.headers) size += h.key.size() + (h.value ? h.value->size() : 0);
    if (!out.empty() && bytes + size > static_cast<size_t>(request.max_bytes)) return true;
    if (request.accepts && !request.accepts(rec)) {
      next_offsets[partition] = rec.record_offset;
      out.push_back({partition, std::move(rec), true});
      return true;
    }
    bytes += size;
    next_offsets[partition] = model::offset{rec.record_offset.value() + 1};
    out.push_back({partition, std::move(rec)});
  }
  return false;
}

/// The poll's requester is gone (poll_request::requester_connected): nothing may be taken for it.
bool requester_gone(const poll_request& request) {
  return request.requester_connected && !request.requester_connected();
}

/// What a poll whose requester is gone ends with: nobody reads it; the positions did not move.
error requester_gone_error() {
  return error{errc::unknown_server_error,
               "the connection this poll came on closed before its answer: nothing was taken, the consumer "
               "instance's positions stay where they were"};
}

}  // namespace

void group_service_impl::poll(std::string group_id, std::string instance_id, poll_request request,
                              std::function<void(result<std::vector<consumed_record>>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  const int64_t deadline = clock_.now_ms() + std::max<int64_t>(request.timeout_ms, 0);
  const size_t shard = shard_of_group(group_id);
  runtime_.post(shard, [this, shard, group_id, instance_id, request, deadline, done = std::move(done)]() mutable {
    poll_heartbeat(shard, group_id, instance_id, request, deadline, std::move(done));
  });
}

void group_service_impl::poll_heartbeat(size_t shard, std::string group_id, std::string instance_id,
                                        poll_request request, int64_t deadline_ms,
                                        std::function<void(result<std::vector<consumed_record>>)> done) {
  // Every round is a heartbeat: it keeps the lease and, with cooperative assignment, is when this
  // member drops revoked partitions and picks up the ones another member released meanwhile.
  if (requester_gone(request)) return done(requester_gone_error());   // no round (nor heartbeat) for nobody
  auto& st = *shards_[shard];
  group::record_list records;
  auto s = prepared(shard, st, group_id, instance_id, records, done);
  if (!s) return;
  if (*s && !(*s)->joined) {
    // Neither subscribed nor assigned: there is nothing to read (Kafka's poll would refuse).
    persist(shard, std::move(records), [](result<void>) {});
    return done(std::vector<consumed_record>{});
  }
  auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
  if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
  records.insert(records.end(), hb->records.begin(), hb->records.end());
  persist(shard, std::move(records),
          [this, shard, group_id, instance_id, request, deadline_ms, done = std::move(done)](result<void> r) mutable {
            if (!r.ok()) return done(r.error());
            poll_round(shard, group_id, instance_id, request, deadline_ms, std::move(done));
          });
}

void group_service_impl::poll_later(size_t shard, std::string group_id, std::string instance_id, poll_request request,
                                    int64_t deadline_ms,
                                    std::function<void(result<std::vector<consumed_record>>)> done,
                                    std::vector<std::pair<model::topic_partition, model::offset>> watched) {
  const int64_t now = clock_.now_ms();
  if (now >= deadline_ms || stopping_) return done(std::vector<consumed_record>{});
  auto next_round = [this, shard, group_id, instance_id, request, deadline_ms, done = std::move(done)](int64_t after_ms) mutable {
    runtime_.post_after(shard, after_ms, [this, shard, group_id, instance_id, request, deadline_ms, done = std::move(done)]() mutable {
      poll_heartbeat(shard, group_id, instance_id, request, deadline_ms, std::move(done));
    });
  };
  if (watched.empty()) return next_round(poll_retry_interval_ms);
  // The first watch to answer starts the next round; the others answer later, to nobody (their
  // waits end at the next append or the deadline, as the Kafka door's long-poll leaves them).
  auto fired = std::make_shared<std::atomic<bool>>(false);
  auto start = std::make_shared<decltype(next_round)>(std::move(next_round));
  auto& st = *shards_[shard];
  auto settings_it = st.instances.find(instance_key(group_id, instance_id));
  const bool read_committed = settings_it != st.instances.end() && settings_it->second.read_committed;
  for (const auto& [tp, from] : watched) {
    fetch_request req;
    req.partition = tp;
    req.fetch_offset = from;
    req.max_bytes = 1;
    req.max_wait_ms = deadline_ms - now;
    req.isolation = read_committed ? isolation_level::read_committed : isolation_level::read_uncommitted;
    broker_.fetch(std::move(req), [this, shard, fired, start](result<fetch_response> r) {
      if (fired->exchange(true, std::memory_order_acq_rel)) return;
      // A failed watch (moved, throttled, deleted) must not spin: the next round after the interval.
      const int64_t after_ms = r.ok() ? 0 : poll_retry_interval_ms;
      runtime_.post(shard, [start, after_ms] { (*start)(after_ms); });
    });
  }
}

void group_service_impl::poll_round(size_t shard, std::string group_id, std::string instance_id, poll_request request,
                                    int64_t deadline_ms,
                                    std::function<void(result<std::vector<consumed_record>>)> done, bool edges_asked) {
  auto& st = *shards_[shard];
  auto positions = st.coordinator.positions_for_fetch(group_id, instance_id);
  if (!positions.ok()) {
    return done(member_error(st, group_id, instance_id, positions.error()));
  }
  auto is_reset = [](const group::fetch_position& fp) {
    return fp.source == group::fetch_source::reset_earliest || fp.source == group::fetch_source::reset_latest;
  };
  if (!edges_asked) {
    std::vector<model::topic_partition> resets;
    for (const auto& fp : positions.value()) {
      if (is_reset(fp)) resets.push_back(fp.partition);
    }
    if (!resets.empty()) {
      return reset_to_leader_edges(shard, group_id, instance_id, resets,
                                   [this, shard, group_id, instance_id, request, deadline_ms, done = std::move(done)]() mutable {
                                     poll_round(shard, group_id, instance_id, request, deadline_ms, std::move(done), true);
                                   });
    }
  }
  auto slots = std::make_shared<std::vector<poll_slot>>();
  for (const auto& fp : positions.value()) {
    std::optional<model::offset> at = fp.fetch_offset;
    if (is_reset(fp)) {
      continue;   // its leader did not tell its edges (reset_to_leader_edges): asked again next poll
    } else if (fp.source == group::fetch_source::no_offset) {
      return done(error{errc::no_offset_for_partition,
                        "no committed offset for " + fp.partition.directory_name() +
                            " and auto.offset.reset is none: seek the instance first"});
    }
    if (!at) continue;
    slots->push_back({fp.partition, *at, std::nullopt});
  }
  if (slots->empty()) {
    return poll_later(shard, group_id, instance_id, request, deadline_ms, std::move(done));
  }
  auto remaining = std::make_shared<std::atomic<size_t>>(slots->size());
  auto finish = [this, shard, group_id, instance_id, request, deadline_ms, slots, done = std::move(done)]() mutable {
    runtime_.post(shard, [this, shard, group_id, instance_id, request, deadline_ms, slots, done = std::move(done)]() mutable {
      poll_finish(shard, group_id, instance_id, request, deadline_ms, slots, std::move(done));
    });
  };
  auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
  const int32_t max_bytes = static_cast<int32_t>(std::clamp<int64_t>(request.max_bytes, 1, INT32_MAX));
  auto settings_it = st.instances.find(instance_key(group_id, instance_id));
  const bool read_committed = settings_it != st.instances.end() && settings_it->second.read_committed;
  for (size_t i = 0; i < slots->size(); ++i) {
    fetch_request req;
    req.partition = (*slots)[i].partition;
    req.fetch_offset = (*slots)[i].fetch_offset;
    req.max_bytes = max_bytes;
    req.max_wait_ms = 0;
    req.isolation = read_committed ? isolation_level::read_committed : isolation_level::read_uncommitted;
    broker_.fetch(std::move(req), [slots, i, remaining, shared_finish](result<fetch_response> r) {
      (*slots)[i].fetched = std::move(r);   // each slot is written by one callback only
      if (remaining->fetch_sub(1, std::memory_order_acq_rel) == 1) (*shared_finish)();
    });
  }
}

void group_service_impl::poll_finish(size_t shard, std::string group_id, std::string instance_id, poll_request request,
                                     int64_t deadline_ms, std::shared_ptr<std::vector<poll_slot>> slots,
                                     std::function<void(result<std::vector<consumed_record>>)> done) {
  // The last moment before the positions move: an answer nobody can read takes nothing (the
  // records stay at the instance's positions for its next poll).
  if (requester_gone(request)) return done(requester_gone_error());
  auto& st = *shards_[shard];
  auto settings_it = st.instances.find(instance_key(group_id, instance_id));
  // Positions now: a record is handed out only if the member still owns its partition and no
  // other call (seek, another poll) moved the position while the fetch was in flight.
  auto positions = st.coordinator.positions_for_fetch(group_id, instance_id);
  if (!positions.ok()) {
    return done(member_error(st, group_id, instance_id, positions.error()));
  }
  group::partition_map<model::offset> current;
  for (const auto& fp : positions.value()) {
    if (fp.fetch_offset) current[fp.partition] = *fp.fetch_offset;
  }
  const size_t n = slots->size();
  const size_t first = settings_it == st.instances.end() ? 0 : settings_it->second.rotation++ % n;
  std::vector<consumed_record> out;
  group::partition_map<model::offset> next_offsets;
  size_t bytes = 0;
  bool full = false;
  bool cut = false;   // a partition's read stopped at max_bytes
  bool moved = false;   // a seek moved a position while its read was in flight: read again soon
  group::partition_map<model::offset> out_of_range;   // partition -> the offset its read was out of range at
  auto out_of_range_reset = group::offset_reset::latest;
  for (size_t k = 0; k < n && !full; ++k) {
    auto& slot = (*slots)[(first + k) % n];
    auto at = current.find(slot.partition);
    if (at == current.end() || at->second != slot.fetch_offset || !slot.fetched) {
      moved = moved || (at != current.end() && at->second != slot.fetch_offset);
      continue;
    }
    auto& fetched = *slot.fetched;
    if (!fetched.ok()) {
      if (fetched.error().code != errc::offset_out_of_range) continue;  // deleted meanwhile, ...: skip this round
      auto reset = settings_it == st.instances.end() ? group::offset_reset::latest : settings_it->second.auto_offset_reset;
      if (reset == group::offset_reset::none) {
        return done(error{errc::offset_out_of_range, fetched.error().message + " (auto.offset.reset is none)"});
      }
      out_of_range[slot.partition] = slot.fetch_offset;
      out_of_range_reset = reset;
      continue;
    }
    full = take_records(slot.partition, fetched->records, request, out, next_offsets, bytes);
    // The read stopped at max_bytes with more records behind: the answer is as full as it gets.
    const bool committed_only = settings_it != st.instances.end() && settings_it->second.read_committed;
    cut = cut || fetched->next_fetch_offset < (committed_only ? fetched->last_stable_offset : fetched->high_watermark);
    // Every record of the answer was taken: the position moves past the batches that held none
    // for this reader too (transaction markers, aborted records), or it would stop in front of them.
    if (!full && fetched->next_fetch_offset > slot.fetch_offset) {
      auto& next = next_offsets[slot.partition];
      next = std::max(next, fetched->next_fetch_offset);
    }
  }
  // Out of range (retention, a recreated topic): auto.offset.reset decides, never stuck.
  if (!out_of_range.empty()) reset_out_of_range(shard, group_id, instance_id, out_of_range_reset, std::move(out_of_range));
  // fetch.min.bytes (the instance's): fewer bytes than that, and the answer neither full nor due,
  // waits for more (Confluent's read task ends at min bytes, max bytes or the timeout). Nothing
  // was taken: the next round reads again from the same positions.
  const int32_t min_bytes = settings_it == st.instances.end() ? 1 : settings_it->second.fetch_min_bytes;
  if (!out.empty() && !full && !cut && bytes < static_cast<size_t>(std::max(min_bytes, 1)) && clock_.now_ms() < deadline_ms) {
    return poll_later(shard, group_id, instance_id, request, deadline_ms, std::move(done), watch_points(*slots));
  }
  if (out.empty()) {
    for (const auto& [tp, next] : next_offsets) {
      auto r = st.coordinator.record_fetched(group_id, instance_id, tp, next);
      RINGLOG_ASSERT(r.ok(), "record_fetched of an owned partition at its position failed");
    }
    if (moved) return poll_later(shard, group_id, instance_id, request, deadline_ms, std::move(done));
    return poll_later(shard, group_id, instance_id, request, deadline_ms, std::move(done), watch_points(*slots));
  }
  for (const auto& [tp, next] : next_offsets) {
    auto r = st.coordinator.record_fetched(group_id, instance_id, tp, next);
    RINGLOG_ASSERT(r.ok(), "record_fetched of an owned partition at its position failed");
  }
  const bool auto_commit = settings_it != st.instances.end() && settings_it->second.info.auto_commit_enable;
  if (!auto_commit) return done(std::move(out));
  // at-most-once: the positions are committed (durably) before the records are handed over.
  auto committed = st.coordinator.commit_returned(group_id, instance_id, std::nullopt, clock_.now_ms());
  if (!committed.ok()) return done(from_group(committed.error()));
  persist(shard, std::move(committed->records),
          [done = std::move(done), out = std::move(out)](result<void> r) mutable {
            if (!r.ok()) return done(r.error());
            done(std::move(out));
          });
}

void group_service_impl::commit(std::string group_id, std::string instance_id,
                                std::optional<std::vector<group::processed_offset>> offsets,
                                std::function<void(result<group::partition_map<group::committed_offset>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, instance_id, offsets = std::move(offsets), done = std::move(done)](
                               size_t shard, shard_state& st) {
    const int64_t now = clock_.now_ms();
    group::record_list records;
    auto s = prepared(shard, st, group_id, instance_id, records, done);
    if (!s) return;
    if (*s && !(*s)->joined) {
      persist(shard, std::move(records), [](result<void>) {});
      // Nothing was returned to it, and it owns nothing to commit.
      if (!offsets || offsets->empty()) return done(group::partition_map<group::committed_offset>{});
      return done(error{errc::partition_not_owned, "commit refused: consumer instance '" + instance_id +
                                                       "' does not own partition " +
                                                       offsets->front().partition.directory_name() +
                                                       ": it has not subscribed or been assigned partitions"});
    }
    auto r = offsets ? st.coordinator.commit_processed(group_id, instance_id, std::nullopt, *offsets, now)
                     : st.coordinator.commit_returned(group_id, instance_id, std::nullopt, now);
    if (!r.ok()) {
      return done(member_error(st, group_id, instance_id, r.error()));
    }
    records.insert(records.end(), r->records.begin(), r->records.end());
    persist(shard, std::move(records), [done, stored = r->committed](result<void> p) {
      if (!p.ok()) return done(p.error());
      done(stored);
    });
  });
}

void group_service_impl::committed(std::string group_id, std::string instance_id, group::partition_set partitions,
                                   std::function<void(result<group::partition_map<group::committed_offset>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  const int64_t deadline_ms = clock_.now_ms() + committed_stable_wait_ms_max;
  on_coordinator(group_id, [this, group_id, instance_id, partitions = std::move(partitions), deadline_ms,
                            done = std::move(done)](size_t shard, shard_state&) mutable {
    committed_when_stable(shard, std::move(group_id), std::move(instance_id), std::move(partitions), deadline_ms,
                          std::move(done));
  });
}

void group_service_impl::committed_when_stable(
    size_t shard, std::string group_id, std::string instance_id, group::partition_set partitions, int64_t deadline_ms,
    std::function<void(result<group::partition_map<group::committed_offset>>)> done) {
  auto& st = *shards_[shard];
  if (auto moved = moved_away(group_id)) return done(*moved);
  auto settings = st.instances.find(instance_key(group_id, instance_id));
  const bool read_committed = settings != st.instances.end() && settings->second.read_committed;
  if (read_committed) {
    if (auto unstable = unstable_of(st.coordinator, group_id, partitions); !unstable.empty()) {
      if (clock_.now_ms() >= deadline_ms) {
        return done(error{errc::request_timed_out,
                          "the offsets of " + unstable.begin()->directory_name() + " in group '" + group_id +
                              "' are still pending in an open transaction after " +
                              std::to_string(committed_stable_wait_ms_max) +
                              " ms (a read_committed instance reads only stable offsets, KIP-447): retry"});
      }
      runtime_.post_after(shard, committed_stable_retry_ms,
                          [this, shard, group_id = std::move(group_id), instance_id = std::move(instance_id),
                           partitions = std::move(partitions), deadline_ms, done = std::move(done)]() mutable {
                            committed_when_stable(shard, std::move(group_id), std::move(instance_id),
                                                  std::move(partitions), deadline_ms, std::move(done));
                          });
      return;
    }
  }
  committed_now(shard, st, group_id, instance_id, partitions, std::move(done));
}

void group_service_impl::committed_now(size_t shard, shard_state& st, const std::string& group_id,
                                       const std::string& instance_id, const group::partition_set& partitions,
                                       std::function<void(result<group::partition_map<group::committed_offset>>)> done) {
  group::record_list records;
  auto s = prepared(shard, st, group_id, instance_id, records, done);
  if (!s) return;
  if (!*s || (*s)->joined) {
    auto hb = st.coordinator.heartbeat(group_id, instance_id, clock_.now_ms());
    if (!hb.ok()) return done(member_error(st, group_id, instance_id, hb.error()));
    records.insert(records.end(), hb->records.begin(), hb->records.end());
  }
  group::partition_map<group::committed_offset> out;
  auto all = st.coordinator.committed_offsets(group_id);
  if (all.ok()) {
    for (auto& [tp, c] : all.value()) {
      // A negative committed offset (a Kafka client's -1/-2) is no committed offset here, as
      // the Java consumer's committed() that Confluent's REST proxy answers with says (null).
      if ((partitions.empty() || partitions.contains(tp)) && c.committed.value() >= 0) out[tp] = c;
    }
  }
  persist(shard, std::move(records), [done, out = std::move(out)](result<void> r) {
    if (!r.ok()) return done(r.error());
    done(out);
  });
}

void group_service_impl::reset_to_leader_edges(size_t shard, const std::string& group_id, const std::string& instance_id,
                                               const std::vector<model::topic_partition>& partitions,
                                               std::function<void()> then) {
  leader_bounds_of(shard, partitions, std::nullopt,
                   [this, shard, group_id, instance_id, then = std::move(then)](leader_bounds found) {
    auto& st = *shards_[shard];
    auto positions = st.coordinator.positions_for_fetch(group_id, instance_id);
    if (positions.ok()) {
      auto instance = st.instances.find(instance_key(group_id, instance_id));
      const delay::retry_policy policy = policy_of(instance != st.instances.end() ? &instance->second : nullptr);
      for (const auto& fp : positions.value()) {
        auto b = found.bounds.find(fp.partition);
        const bool earliest = fp.source == group::fetch_source::reset_earliest;
        if (b == found.bounds.end() || (!earliest && fp.source != group::fetch_source::reset_latest)) continue;
        // The group's retry topic is read from its start whatever auto.offset.reset says: every
        // record in it was nacked by this group and is due to come back to it.
        const bool retry_topic = delay::original_topic_of(policy, fp.partition.topic, group_id, false).has_value();
        const model::offset at = earliest || retry_topic ? b->second.log_start_offset : b->second.high_watermark;
        (void)st.coordinator.seek(group_id, instance_id, fp.partition, at);   // a lost partition: nothing to do
      }
    }
    then();   // a member gone meanwhile: the round answers that
  });
}

void group_service_impl::reset_out_of_range(size_t shard, const std::string& group_id, const std::string& instance_id,
                                            group::offset_reset reset, group::partition_map<model::offset> out_of_range) {
  std::vector<model::topic_partition> partitions;
  for (const auto& [tp, at] : out_of_range) partitions.push_back(tp);
  leader_bounds_of(shard, partitions, std::nullopt,
                   [this, shard, group_id, instance_id, reset, out_of_range = std::move(out_of_range)](leader_bounds found) {
    auto& st = *shards_[shard];
    auto positions = st.coordinator.positions_for_fetch(group_id, instance_id);
    if (!positions.ok()) return;
    for (const auto& fp : positions.value()) {
      auto read_at = out_of_range.find(fp.partition);
      auto b = found.bounds.find(fp.partition);
      // Only a position nothing moved since the read that was out of range (a seek meanwhile wins).
      if (read_at == out_of_range.end() || b == found.bounds.end() || fp.fetch_offset != read_at->second) continue;
      const model::offset to = reset == group::offset_reset::earliest ? b->second.log_start_offset : b->second.high_watermark;
      (void)st.coordinator.seek(group_id, instance_id, fp.partition, to);
    }
  });
}

}  // namespace ringlog::broker::group_service_internal
