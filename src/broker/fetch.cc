// Fetch and list offsets: the shard's deadlines of long-poll fetches parked on their partitions
// (one timer per shard; the reads and the parking are partition.cc's), and offsets by time or
// position.
// Kafka's counterpart: ReplicaManager.fetchMessages with DelayedFetch, and handleListOffsetRequest.

#include <algorithm>
#include <utility>

#include "broker_impl.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"

namespace ringlog::broker::detail {

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
    rt->answer_empty(*w);
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
      rt->try_fetch(w);
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
      if (auto serving = rt->check_serving(reading_at); !serving.ok()) return done(serving.error());
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
