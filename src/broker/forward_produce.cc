// This node's produces for partitions another broker leads (leader_forwarder.h, forwarding.cc):
// each partition's batches in one order line, sent in the order this node took them, also across
// a leader change (session 29: a batch the old leader refused unread was sent to the new one after
// later batches, and one WebSocket's acked offsets went backwards). http-api/ws-protocol.md
// "Order across a leader change" says what a client gets.

#include <algorithm>
#include <map>

#include "constants.h"
#include "forwarding_answers.h"
#include "leader_forwarder.h"
#include "metadata_publisher.h"
#include "produce_pipeline.h"
#include "rpc_messages.h"
#include "ringlog/base/assert.h"

namespace ringlog::broker::detail {
using namespace forwarding;   // forwarding_answers.h

void leader_forwarder::forward_produce(int32_t leader, const model::topic_partition& tp, model::bytes batch,
                                       acks_mode acks, int64_t timeout_ms,
                                       std::function<void(result<produce_batches_response>)> done) {
  if (cluster_transport_ == nullptr) return done(unreachable(leader, tp, "this node has no cluster listener"));
  // Counted before anything is posted: a later produce of `tp` on this thread finds it taken.
  std::pair<std::string, int32_t> key{tp.topic, tp.partition.value()};
  {
    std::lock_guard lock(taken_->mutex);
    ++taken_->by_partition[key];
    ++taken_->count;
  }
  auto counted_done = [taken = taken_, key = std::move(key), done = std::move(done)](result<produce_batches_response> r) {
    {
      std::lock_guard lock(taken->mutex);
      auto it = taken->by_partition.find(key);
      if (--it->second == 0) taken->by_partition.erase(it);
      --taken->count;
    }
    done(std::move(r));
  };
  // The leader is chosen when the batch's turn comes (pump_produces): the newest view's.
  held_batch held{std::move(batch), acks, clock_.now_ms() + timeout_ms, std::move(counted_done)};
  if (runtime_.current_shard() == controller_shard) return hold_produce(tp, std::move(held));
  std::weak_ptr<int> alive = lifetime_;
  runtime_.post(controller_shard, [this, alive, tp, held = std::move(held)]() mutable {
    if (alive.expired()) return held.done(error{errc::broker_not_available, "the broker is shutting down"});
    hold_produce(tp, std::move(held));
  });
}

bool leader_forwarder::holds_produces_of(const model::topic_partition& tp) const {
  if (taken_->count.load() == 0) return false;
  std::lock_guard lock(taken_->mutex);
  return taken_->by_partition.contains({tp.topic, tp.partition.value()});
}

void leader_forwarder::hold_produce(const model::topic_partition& tp, held_batch batch) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  if (produces_held_ >= forward_produces_held_max ||
      produce_bytes_held_ + batch.batch.size() > forward_produce_bytes_held_max) {
    return batch.done(error{errc::throttling_quota_exceeded,
                            std::to_string(produces_held_) + " forwarded produces (" +
                                std::to_string(produce_bytes_held_) +
                                " bytes) already wait on this broker for their partition's leader "
                                "(forward_produces_held_max " +
                                std::to_string(forward_produces_held_max) + ", forward_produce_bytes_held_max " +
                                std::to_string(forward_produce_bytes_held_max) + "); nothing was sent: retry"});
  }
  auto& line = produce_order_[{tp.topic, tp.partition.value()}];
  ++produces_held_;
  produce_bytes_held_ += batch.batch.size();
  line.held.emplace(line.next_sequence++, std::move(batch));
  pump_produces(tp);
}

void leader_forwarder::pump_produces(const model::topic_partition& tp) {
  auto it = produce_order_.find({tp.topic, tp.partition.value()});
  if (it == produce_order_.end() || it->second.pumping) return;   // the pump on the stack goes on
  auto& line = it->second;
  line.pumping = true;
  while (!line.waiting && !line.held.empty()) {
    auto head = line.held.begin();
    const uint64_t sequence = head->first;
    held_batch& first = head->second;
    const bool expired = clock_.now_ms() >= first.deadline_ms;
    if (!expired && first.target < 0 && first.refused_by < 0) first.target = newest_leader_of(metadata_, tp);
    if (!expired && first.target < 0) {
      // Refused unread, never sent, or no leader named: wait for the next one.
      line.waiting = true;
      when_leader_moves(tp, first.refused_by, first.refused_epoch, first.deadline_ms,
                        [this, alive = std::weak_ptr<int>(lifetime_), tp, sequence](int32_t now_leader) {
                          if (alive.expired()) return;
                          leader_found(tp, sequence, now_leader);
                        });
      break;
    }
    // An earlier batch unanswered at another broker may yet be refused unread and go first.
    if (!expired && std::any_of(line.sent.begin(), line.sent.lower_bound(sequence),
                                [&](const auto& s) { return s.second != first.target; })) {
      break;
    }
    held_batch next = std::move(first);
    line.held.erase(head);
    --produces_held_;
    produce_bytes_held_ -= next.batch.size();
    if (expired) {
      next.done(error{errc::request_timed_out,
                      "the produce to " + tp.topic + "-" + std::to_string(tp.partition.value()) +
                          " waited its timeout for the partition's leader, or for an earlier produce of the "
                          "partition to be sent to it first; nothing was sent: retry"});
      continue;
    }
    line.sent.emplace(sequence, next.target);
    send_in_order(tp, sequence, std::move(next));
  }
  line.pumping = false;
  if (line.held.empty() && line.sent.empty() && !line.waiting) produce_order_.erase(it);
}

void leader_forwarder::leader_found(const model::topic_partition& tp, uint64_t sequence, int32_t now_leader) {
  auto it = produce_order_.find({tp.topic, tp.partition.value()});
  RINGLOG_ASSERT(it != produce_order_.end(), "a line that waits for a leader stays open");
  auto& line = it->second;
  line.waiting = false;
  auto waited = line.held.find(sequence);
  RINGLOG_ASSERT(waited != line.held.end(), "only pump_produces sends a held batch, and not while it waits");
  if (now_leader >= 0) {
    waited->second.target = now_leader;
    return pump_produces(tp);
  }
  held_batch failed = std::move(waited->second);
  line.held.erase(waited);
  --produces_held_;
  produce_bytes_held_ -= failed.batch.size();
  if (topic_gone(metadata_, tp)) {
    failed.done(topic_deleted_in_flight(tp));
  } else {
    failed.done(failed.refused_by >= 0 ? leadership_moving(failed.refused_by, tp) : no_leader(tp));
  }
  pump_produces(tp);
}

void leader_forwarder::wait_for_view_here(const model::topic_partition& tp, uint64_t sequence, held_batch batch) {
  batch.waited_for_view = true;
  batch.target = -1;   // chosen again after the wait: the leadership may have moved on meanwhile
  back_in_line(tp, sequence, std::move(batch)).waiting = true;
  when_topic_known(
      [this, tp] {
        const int32_t here = leader_in(*metadata_.view(), tp);
        return here == config_.node_id || newest_leader_of(metadata_, tp) != config_.node_id;
      },
      [this, alive = std::weak_ptr<int>(lifetime_), tp] {
        if (alive.expired()) return;
        auto waited = produce_order_.find({tp.topic, tp.partition.value()});
        RINGLOG_ASSERT(waited != produce_order_.end(), "a line that waits for a view stays open");
        waited->second.waiting = false;
        pump_produces(tp);
      });
}

void leader_forwarder::send_in_order(const model::topic_partition& tp, uint64_t sequence, held_batch batch) {
  const int64_t remaining_ms = std::max<int64_t>(batch.deadline_ms - clock_.now_ms(), 1);
  if (batch.target == config_.node_id && !batch.waited_for_view &&
      leader_in(*metadata_.view(), tp) != config_.node_id) {
    // The target came from the newest view; the append below checks this shard's, which may not
    // have it yet: its refusal ("led by broker 3, not by this broker") reached an HTTP client
    // during a move to this node (fresh-clone CI, session 32).
    return wait_for_view_here(tp, sequence, std::move(batch));
  }
  auto held = std::make_shared<held_batch>(std::move(batch));
  std::weak_ptr<int> alive = lifetime_;
  if (held->target == config_.node_id) {
    // This node leads now: appended here, as this node's own HTTP records (forward_produce comes
    // from produce_appending).
    produce_batches_request here;
    here.partition = tp;
    here.batches.push_back(std::move(held->batch));
    here.acks = held->acks;
    here.timeout_ms = remaining_ms;
    auto appended = [this, alive, tp, sequence, held](result<produce_batches_response> r) {
      runtime_.post(controller_shard, [this, alive, tp, sequence, held, r = std::move(r)]() mutable {
        if (alive.expired()) return held->done(std::move(r));
        settle_produce(tp, sequence, held->done, std::move(r));
      });
    };
    return produce_.produce_batches_from(std::move(here), std::move(appended), produce_pipeline::batch_origin::local_records);
  }
  protocol::produce_request_data request;
  // acks=0 is forwarded as acks=1: this node answers its client at once, and the leader's answer
  // only ends the forwarding call.
  request.acks = held->acks == acks_mode::all ? int16_t{-1} : int16_t{1};
  request.timeout_ms = static_cast<int32_t>(std::min<int64_t>(remaining_ms, INT32_MAX));
  protocol::produce_request_data::topic_produce_data topic;
  topic.name = tp.topic;
  protocol::produce_request_data::partition_produce_data part;
  part.index = tp.partition.value();
  part.records = held->batch;   // kept: a leader that refuses it unread gets it sent on to the new one
  topic.partition_data.push_back(std::move(part));
  request.topic_data.push_back(std::move(topic));
  send_forward(held->target, tp, protocol::produce_request_data::api_key, forward_produce_version,
               encode_body(request, forward_produce_version), remaining_ms + forward_timeout_slack_ms,
               [this, alive, tp, sequence, held](rpc::result<protocol::bytes> r) mutable {
                 if (alive.expired()) return held->done(unreachable_write(held->target, tp, "this broker is stopping"));
                 forwarded_produce_answered(tp, sequence, held, std::move(r));
               });
}

void leader_forwarder::forwarded_produce_answered(const model::topic_partition& tp, uint64_t sequence,
                                                  const std::shared_ptr<held_batch>& held,
                                                  rpc::result<protocol::bytes> r) {
  const int32_t leader = held->target;
  if (!r.ok() && topic_gone(metadata_, tp)) {
    // Deleted meanwhile (fail_moved_forwards abandoned the call): no next leader will take it.
    return settle_produce(tp, sequence, held->done, topic_deleted_in_flight(tp));
  }
  if (!r.ok() && never_sent(r.error().code)) {
    // Its connect failed (a killed leader refuses it), or the leadership moved before it went
    // out: nothing reached that broker, so the batch waits for the leader named next, as a
    // refusal unread does (a new user saw "may or may not be stored" for writes never sent).
    return resend_produce(tp, sequence, std::move(*held), leader, leader_epoch_in(*metadata_.view(), tp));
  }
  if (!r.ok() && r.error().code == rpc::errc::too_many_in_flight) {
    // Refused here before a byte was written: the write did not happen (the breaker of
    // session 28 saw "did not answer ... may or may not be stored" for these).
    return settle_produce(tp, sequence, held->done,
                          error{errc::not_leader_or_follower, "this broker did not pass the write on to " +
                                                                  leader_name(leader, tp) + ": " + r.error().message +
                                                                  "; nothing was sent or stored: retry"});
  }
  if (!r.ok()) return settle_produce(tp, sequence, held->done, unreachable_write(leader, tp, r.error().message));
  protocol::reader rd(r.value());
  auto decoded = protocol::produce_response_data::decode(rd, forward_produce_version);
  if (!decoded.ok() || decoded->responses.size() != 1 || decoded->responses[0].partition_responses.size() != 1) {
    return settle_produce(tp, sequence, held->done, unreachable(leader, tp, "an unreadable answer"));
  }
  const auto& p = decoded->responses[0].partition_responses[0];
  if (p.error_code == kafka_error_code(errc::not_leader_or_follower) && p.current_leader.leader_epoch >= 0) {
    // Refused unread by a leader that no longer leads: nothing was stored, so the batch goes to
    // the leader this node's metadata names next, before the partition's later batches
    // (design.md section 6: HTTP clients are promised forwarding, never "send it there").
    return resend_produce(tp, sequence, std::move(*held), leader, p.current_leader.leader_epoch);
  }
  if (p.error_code == kafka_error_code(errc::unknown_topic_or_partition) && topic_gone(metadata_, tp)) {
    // The leader removed the partition of the deleted topic (not a leader lagging behind a creation).
    return settle_produce(tp, sequence, held->done, topic_deleted_in_flight(tp));
  }
  if (p.error_code != 0) return settle_produce(tp, sequence, held->done, answered(leader, tp, p.error_code, p.error_message));
  produce_batches_response out;
  out.base_offset = model::offset{p.base_offset};
  out.log_append_time = p.log_append_time_ms;
  out.log_start_offset = model::offset{p.log_start_offset};
  settle_produce(tp, sequence, held->done, out);
}

void leader_forwarder::settle_produce(const model::topic_partition& tp, uint64_t sequence,
                                      std::function<void(result<produce_batches_response>)>& done,
                                      result<produce_batches_response> r) {
  auto it = produce_order_.find({tp.topic, tp.partition.value()});
  RINGLOG_ASSERT(it != produce_order_.end(), "a line with a batch sent stays open");
  it->second.sent.erase(sequence);
  done(std::move(r));
  pump_produces(tp);
}

void leader_forwarder::resend_produce(const model::topic_partition& tp, uint64_t sequence, held_batch batch,
                                      int32_t refused_by, int32_t refused_epoch) {
  batch.refused_by = refused_by;
  batch.refused_epoch = refused_epoch;
  batch.target = -1;
  back_in_line(tp, sequence, std::move(batch));
  pump_produces(tp);
}

leader_forwarder::produce_order_line& leader_forwarder::back_in_line(const model::topic_partition& tp,
                                                                     uint64_t sequence, held_batch batch) {
  auto it = produce_order_.find({tp.topic, tp.partition.value()});
  RINGLOG_ASSERT(it != produce_order_.end(), "a line with a batch sent stays open");
  it->second.sent.erase(sequence);
  ++produces_held_;
  produce_bytes_held_ += batch.batch.size();
  it->second.held.emplace(sequence, std::move(batch));
  return it->second;
}

}  // namespace ringlog::broker::detail
