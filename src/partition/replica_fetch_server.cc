// The leader's side of replication (ringlog/partition/replica_fetcher.h; design.md section 6,
// KIP-101/320/497): the leader keeps its followers' state (replication/leader_state.h), moves the
// high watermark to the least log end offset over the ISR as their fetches report, answers
// acks=all appends once it passed them, and proposes ISR changes to the controller
// (AlterPartition, through replica_fetcher_host), which commits them as PartitionChangeRecords
// carrying the partition epoch they were computed at. A fetch naming an older leader epoch is fenced, a newer one
// unknown (KIP-320); a follower whose last epoch or offset is not on this log is told the
// diverging epoch and its end offset.

#include <algorithm>
#include <mutex>

#include "ringlog/partition/replica_fetcher.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/partition/errc.h"
#include "ringlog/protocol/error_codes.h"
#include "ringlog/rpc/requests.h"

namespace ringlog::partition {
namespace {

using namespace protocol::error_codes;   // Kafka's error codes on the wire between brokers

/// Kafka's names of the errors AlterPartition answers here.
std::string_view alter_partition_error_name(int16_t code) {
  switch (code) {
    case code_unknown_topic_or_partition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case code_not_controller: return "NOT_CONTROLLER (no active controller now)";
    case code_fenced_leader_epoch: return "FENCED_LEADER_EPOCH (no longer the leader in this epoch)";
    case code_invalid_update_version: return "INVALID_UPDATE_VERSION (a stale partition epoch)";
    case code_ineligible_replica: return "INELIGIBLE_REPLICA (a replica is fenced or stopping)";
    case code_invalid_request: return "INVALID_REQUEST";
    default: return "an unexpected error";
  }
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

protocol::fetch_response_data::partition_data partition_error(int32_t partition, int16_t code) {
  protocol::fetch_response_data::partition_data out;
  out.partition_index = partition;
  out.error_code = code;
  return out;
}

}  // namespace

replica_fetch_server::replica_fetch_server(replica_fetcher_host& host, replica_fetch_settings settings,
                                           const base::clock& clock, runtime::shard_runtime& runtime,
                                           const rpc::transport* cluster_transport, const std::atomic<bool>& stopping)
    : host_(host),
      settings_(settings),
      clock_(clock),
      runtime_(runtime),
      cluster_transport_(cluster_transport),
      stopping_(stopping) {}

// ---------------------------------------------------------------- a follower's fetch

void replica_fetch_server::handle_replica_fetch(const protocol::request_header_data& header,
                                                const protocol::fetch_request_data& request, int32_t replica_id,
                                                rpc::respond_fn respond) {
  const base::cpu_scope cpu(base::cpu_activity::replicate_leader);   // the fan-out to shards (the decode is small)
  struct gather {
    std::mutex mutex;
    protocol::fetch_response_data response;
    size_t remaining = 0;
    protocol::request_header_data header;
    rpc::respond_fn respond;
  };
  auto g = std::make_shared<gather>();
  g->header = header;
  g->respond = std::move(respond);
  size_t total = 0;
  for (const auto& t : request.topics) total += t.partitions.size();
  if (total == 0) return rpc::respond_with(g->header, g->response, g->respond);
  g->remaining = total;
  // Only a fetch of one partition waits for new records (followers here send one per partition).
  const int64_t wait_ms = total == 1 ? std::min<int64_t>(request.max_wait_ms, settings_.replica_fetch_wait_max_ms) : 0;
  const auto image = host_.replication_image();
  for (const auto& t : request.topics) {
    const controller::topic_image* topic = image->find_topic(t.topic_id);
    for (const auto& part : t.partitions) {
      auto finish = [g, topic_id = t.topic_id](protocol::fetch_response_data::partition_data out) {
        std::lock_guard lock(g->mutex);
        auto it = std::find_if(g->response.responses.begin(), g->response.responses.end(),
                               [&](const auto& r) { return r.topic_id == topic_id; });
        if (it == g->response.responses.end()) {
          protocol::fetch_response_data::fetchable_topic_response r;
          r.topic_id = topic_id;
          g->response.responses.push_back(std::move(r));
          it = std::prev(g->response.responses.end());
        }
        it->partitions.push_back(std::move(out));
        if (--g->remaining == 0) rpc::respond_with(g->header, g->response, g->respond);
      };
      if (topic == nullptr || part.partition < 0 || part.partition >= static_cast<int32_t>(topic->partitions.size())) {
        finish(partition_error(part.partition, code_unknown_topic_or_partition));
        continue;
      }
      const size_t shard = host_.replica_shard(topic->name, part.partition);
      runtime_.post(shard, [this, shard, name = topic->name, part, replica_id,
                            replica_epoch = request.replica_state.replica_epoch, wait_ms, finish]() mutable {
        auto rt = host_.replica_on_shard(shard, name, part.partition);
        if (!rt) return finish(partition_error(part.partition, code_not_leader_or_follower));
        serve_replica_fetch(shard, rt, replica_id, replica_epoch, part, wait_ms, std::move(finish));
      });
    }
  }
}

void replica_fetch_server::serve_replica_fetch(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                               int32_t replica_id, int64_t replica_epoch,
                                               const protocol::fetch_request_data::fetch_partition& request,
                                               int64_t wait_ms,
                                               std::function<void(protocol::fetch_response_data::partition_data)> done) {
  // The read and, answered at once, the answer's encoding and write (done); with the high
  // watermark moving, the acks=all produce answers it releases count here too.
  const base::cpu_scope cpu(base::cpu_activity::replicate_leader);
  protocol::fetch_response_data::partition_data out;
  out.partition_index = rt->partition;
  out.high_watermark = rt->log->high_watermark().value();
  out.log_start_offset = rt->log->log_start_offset().value();
  if (!rt->leader || rt->deleted) {
    out.error_code = code_not_leader_or_follower;
    out.current_leader.leader_id = rt->leader_id;
    out.current_leader.leader_epoch = rt->epoch.value();
    return done(std::move(out));
  }
  // KIP-320: the follower's view of the leader epoch must be this one.
  if (request.current_leader_epoch >= 0 && request.current_leader_epoch < rt->epoch.value()) {
    out.error_code = code_fenced_leader_epoch;
    return done(std::move(out));
  }
  if (request.current_leader_epoch > rt->epoch.value()) {
    out.error_code = code_unknown_leader_epoch;
    return done(std::move(out));
  }
  const model::offset fetch_offset{request.fetch_offset};
  // KIP-320 divergence: the follower's last epoch must end at or after its fetch offset here.
  if (request.last_fetched_epoch >= 0) {
    auto diverged = replication::check_divergence(
        request.last_fetched_epoch, fetch_offset,
        rt->log->end_offset_for_epoch(model::leader_epoch{request.last_fetched_epoch}), rt->log->log_start_offset());
    if (diverged) {
      out.diverging_epoch.epoch = diverged->epoch;
      out.diverging_epoch.end_offset = diverged->end_offset;
      return done(std::move(out));
    }
  }
  if (fetch_offset < rt->log->log_start_offset() || fetch_offset > rt->log->log_end_offset()) {
    out.error_code = code_offset_out_of_range;
    return done(std::move(out));
  }
  if (rt->leader->on_fetch(replica_id, fetch_offset, rt->log->log_end_offset(), clock_.monotonic_ms(), replica_epoch)) {
    rt->update_high_watermark();
    maybe_change_isr(shard, rt);
  }
  // The follower's log start offset: a DeleteRecords waits for it (the low watermark, KIP-107).
  rt->leader->on_follower_log_start(replica_id, model::offset{request.log_start_offset});
  auto answer = rt->read_for_replica(replica_id, fetch_offset, request.partition_max_bytes);
  if (answer.error_code != code_none || (answer.records && !answer.records->empty()) || wait_ms <= 0 || stopping_) {
    return done(std::move(answer));
  }
  // Nothing new, or held back by the leader throttle: park until an append (or the high watermark
  // moves) or the wait is over; held back, at most until the bucket holds bytes again.
  const int64_t held_ms = fetch_offset < rt->log->log_end_offset() ? rt->replica_held_back_ms(replica_id) : 0;
  if (held_ms > 0) wait_ms = std::min(wait_ms, held_ms);
  auto w = std::make_shared<replica_fetch_waiter>();
  w->replica_id = replica_id;
  w->fetch_offset = fetch_offset;
  w->max_bytes = request.partition_max_bytes;
  w->done = std::move(done);
  rt->replica_waiters.push_back(w);
  std::weak_ptr<partition_runtime> weak = rt;
  std::weak_ptr<replica_fetch_waiter> weak_waiter = w;
  runtime_.post_after(shard, wait_ms, [weak, weak_waiter] {
    auto w = weak_waiter.lock();
    auto rt = weak.lock();
    if (!w || w->completed) return;
    w->completed = true;
    if (rt) {
      std::erase_if(rt->replica_waiters, [&](const auto& x) { return x == w; });
      return w->done(rt->read_for_replica(w->replica_id, w->fetch_offset, w->max_bytes));
    }
    protocol::fetch_response_data::partition_data gone;
    gone.error_code = code_not_leader_or_follower;
    w->done(std::move(gone));
  });
}

// ---------------------------------------------------------------- the leader's tick and ISR changes

void replica_fetch_server::leader_tick(size_t shard, const std::shared_ptr<partition_runtime>& rt, int64_t now_ms) {
  maybe_change_isr(shard, rt);
  while (!rt->ack_waiters.empty()) {
    // Deadlines are not ordered by offset: look at each (few are waiting at once).
    auto late = std::find_if(rt->ack_waiters.begin(), rt->ack_waiters.end(),
                             [now_ms](const auto& entry) { return entry.second.deadline_ms <= now_ms; });
    if (late == rt->ack_waiters.end()) break;
    auto done = std::move(late->second.done);
    rt->ack_waiters.erase(late);
    done(error{errc::request_timed_out, "the write to " + rt->name() +
                                            " was not replicated to the in-sync replicas in time; it may or may "
                                            "not be stored (the outcome is unknown): retry"});
  }
}

void replica_fetch_server::maybe_change_isr(size_t shard, const std::shared_ptr<partition_runtime>& rt) {
  if (!rt->leader || rt->deleted || cluster_transport_ == nullptr) return;
  // KIP-841: a fenced or stopping broker is not proposed (the controller refuses it, and the
  // same refused proposal would hold back every other follower's joining, e.g. a move's new replica).
  // KIP-903: nor one whose fetches were not sent by its current registration - a broker that
  // restarted, maybe with an empty disk, while this leader still knew how far its previous
  // process had fetched (its registration took it out of the ISR, rejoin_partitions).
  const auto image = host_.replication_image();
  const auto& leader = *rt->leader;
  auto change = rt->leader->isr_change(clock_.monotonic_ms(), settings_.isr_lag_time_max_ms, rt->log->log_end_offset(),
                                       rt->log->high_watermark(), rt->epoch_start_offset, [&image, &leader](int32_t id) {
    const auto* b = image->find_broker(id);
    return b != nullptr && !b->fenced && !b->in_controlled_shutdown && leader.fetched_under(id, b->broker_epoch);
  });
  if (!change) return;
  rt->leader->proposal_sent(*change);
  protocol::alter_partition_request_data request;
  request.broker_id = settings_.node_id;
  protocol::alter_partition_request_data::topic_data topic;
  topic.topic_id = rt->topic_id;
  protocol::alter_partition_request_data::partition_data part;
  part.partition_index = rt->partition;
  part.leader_epoch = rt->epoch.value();
  part.new_isr = *change;
  part.partition_epoch = rt->partition_epoch;
  topic.partitions.push_back(part);
  request.topics.push_back(std::move(topic));
  const uint64_t generation = rt->follower_generation;
  std::weak_ptr<partition_runtime> weak = rt;
  auto on_answer = [this, shard, weak, generation, proposed = *change](int16_t code, std::string why) {
    runtime_.post(shard, [this, weak, generation, code, why = std::move(why), proposed] {
      auto rt = weak.lock();
      if (!rt || !rt->leader || rt->follower_generation != generation) return;
      if (code != code_none) {
        // Refused (a stale partition epoch, a replica still fenced, no controller now): a fresh
        // proposal at the next tick. Logged once per kind of refusal.
        rt->leader->proposal_failed();
        if (rt->last_isr_refusal != code) {
          host_.log_info("partition " + rt->name() + ": ISR change to [" + ids_text(proposed) + "] not made: " +
                         std::string(alter_partition_error_name(code)) + " (Kafka error " + std::to_string(code) +
                         ", " + why + "); proposing again");
        }
        rt->last_isr_refusal = code;
      } else {
        rt->last_isr_refusal = 0;
        host_.log_info("partition " + rt->name() + ": ISR is now [" + ids_text(proposed) + "]");
      }
      rt->update_high_watermark();
    });
  };
  host_.send_alter_partition(std::move(request), std::move(on_answer));
}

}  // namespace ringlog::partition
