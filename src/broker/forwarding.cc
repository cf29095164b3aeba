// Any broker serves any partition (design.md section 6): HTTP and WebSocket clients have no
// client-side routing, so a produce, fetch or offsets query for a partition led by another broker
// is sent to that leader over the cluster listener, in Kafka's own requests (Produce, Fetch with
// no replica id, ListOffsets), and answered as if it had been served here. The leader serves them
// like any other client of that partition (its own checks, its own long-poll); a leader that moved
// meanwhile answers NOT_LEADER_OR_FOLLOWER, which the client sees as a retriable 503.
// leader_forwarder (leader_forwarder.h) does both sides; it serves a call through the produce
// pipeline (produce_pipeline.h) or the fetch service (fetch_service.h).

#include <algorithm>
#include <deque>
#include <map>

#include "leader_forwarder.h"
#include "forwarding_answers.h"
#include "constants.h"
#include "fetch_service.h"
#include "metadata_publisher.h"
#include "produce_pipeline.h"
#include "rpc_messages.h"
#include "ringlog/base/assert.h"
#include "ringlog/codec/record_batch.h"

namespace ringlog::broker::detail {
using namespace forwarding;   // forwarding_answers.h

leader_forwarder::leader_forwarder(const metadata_publisher& metadata, produce_pipeline& produce,
                                   fetch_service& fetch, const broker_config& config, const base::clock& clock,
                                   runtime::shard_runtime& runtime, rpc::transport* cluster_transport,
                                   const std::atomic<bool>& stopping)
    : metadata_(metadata),
      produce_(produce),
      fetch_(fetch),
      config_(config),
      clock_(clock),
      runtime_(runtime),
      cluster_transport_(cluster_transport),
      stopping_(stopping) {}

void leader_forwarder::register_cluster_handlers() {
  // Produce and ListOffsets forwarded by brokers that do not lead the partition.
  cluster_transport_->set_handler(protocol::produce_request_data::api_key,
                                  [this](const protocol::request_header_data& header, std::span<const std::byte> body,
                                         rpc::respond_fn respond) {
                                    handle_forwarded_produce(header, body, std::move(respond));
                                  });
  cluster_transport_->set_handler(protocol::list_offsets_request_data::api_key,
                                  [this](const protocol::request_header_data& header, std::span<const std::byte> body,
                                         rpc::respond_fn respond) {
                                    handle_forwarded_list_offsets(header, body, std::move(respond));
                                  });
}

std::shared_ptr<const topic_state> leader_forwarder::find_topic(const std::string& name) const {
  auto v = metadata_.view();
  auto it = v->topics.find(name);
  return it == v->topics.end() ? nullptr : it->second;
}

std::optional<controller::partition_image> leader_forwarder::refusal_before_serving(const std::string& name,
                                                                                   int32_t partition) const {
  auto t = find_topic(name);
  if (!t || partition < 0 || partition >= t->partitions_count()) return std::nullopt;   // answered as such
  const auto& image = t->image->partitions[static_cast<size_t>(partition)];
  // A stopping leader refuses too: in its controlled shutdown its leaderships move (KIP-631), and
  // the forwarder holds the batch for the next leader (a new user's HTTP writes through another
  // node were answered "the broker is shutting down" in every SIGTERM of a leader).
  if (image.leader == config_.node_id && !stopping_) return std::nullopt;
  return image;
}

void leader_forwarder::when_leader_moves(const model::topic_partition& tp, int32_t refused_by, int32_t refused_epoch,
                                         int64_t deadline_ms, std::function<void(int32_t)> then, bool waited) {
  std::weak_ptr<int> alive = lifetime_;
  runtime_.post(controller_shard, [this, alive, tp, refused_by, refused_epoch, deadline_ms, waited,
                                   then = std::move(then)]() mutable {
    if (alive.expired()) return;
    const auto* now = partition_in(*metadata_.view(), tp);
    if (now != nullptr && now->leader >= 0 && now->leader != refused_by) return then(now->leader);
    // The refuser's own metadata lags: it leads in an epoch newer than the one it knows. Asked
    // again once a poll interval passed (it applies the change meanwhile), never in a tight loop.
    if (now != nullptr && now->leader == refused_by && now->leader_epoch > refused_epoch && waited) {
      return then(now->leader);
    }
    // A deleted topic gets no next leader: answered now, not at the call's deadline.
    if (stopping_ || clock_.now_ms() + forward_metadata_poll_ms > deadline_ms || topic_gone(metadata_, tp)) {
      return then(-1);
    }
    runtime_.post_after(controller_shard, forward_metadata_poll_ms,
                        [this, alive, tp, refused_by, refused_epoch, deadline_ms, then = std::move(then)]() mutable {
                          if (alive.expired()) return;
                          when_leader_moves(tp, refused_by, refused_epoch, deadline_ms, std::move(then), true);
                        });
  });
}

bool leader_forwarder::ready_for_forwarded(const std::string& name, int32_t partition) const {
  auto t = find_topic(name);
  if (!t) return false;
  if (partition < 0) return true;   // answered as such
  // A peer forwards only partitions its own metadata names: one past this node's count was just
  // added and this node has not applied it yet (CI of session 36: a ListOffsets forwarded 2 ms
  // after the partition's creation was answered not-leader by its leader). Partition counts only
  // grow (KIP-195 has no decrease), so waiting for it is bounded by forward_metadata_wait_ms.
  if (partition >= t->partitions_count()) return false;
  const auto& replicas = t->image->partitions[static_cast<size_t>(partition)].replicas;
  if (std::find(replicas.begin(), replicas.end(), config_.node_id) == replicas.end()) return true;   // not ours: not-leader
  // A replica whose files did not open is not waited for: it is offline (no_replica_here says why).
  const auto& stats = *t->partitions[static_cast<size_t>(partition)];
  return stats.open_here.load(std::memory_order_acquire) || !stats.open_failure().empty();
}

void leader_forwarder::when_topic_known(std::function<bool()> known, std::function<void()> then, int64_t waited_ms) {
  if (known() || waited_ms >= forward_metadata_wait_ms || stopping_) return then();
  std::weak_ptr<int> alive = lifetime_;
  runtime_.post_after(controller_shard, forward_metadata_poll_ms,
                      [this, alive, known = std::move(known), then = std::move(then), waited_ms]() mutable {
                        if (alive.expired()) return;
                        when_topic_known(std::move(known), std::move(then), waited_ms + forward_metadata_poll_ms);
                      });
}

void leader_forwarder::when_replica_open(const model::topic_partition& tp, std::function<void()> serve) {
  // This node's view names it the leader of a topic it has just learned of before it has opened
  // that replica (the view is published before the reconcile step that opens new partitions):
  // an HTTP or WebSocket call served in between found no replica and answered
  // unknown_topic_or_partition for a topic that exists. It waits for the open, at most
  // forward_metadata_wait_ms, as a call a peer forwarded does (handle_forwarded_produce). Fetches
  // and offset queries of every door wait so; a Kafka client's Produce is refused at once
  // (not_leader_or_follower) and the client retries on its own.
  if (ready_for_forwarded(tp.topic, tp.partition.value())) return serve();
  when_topic_known([this, tp] { return ready_for_forwarded(tp.topic, tp.partition.value()); }, std::move(serve));
}

void leader_forwarder::when_replicas_open(
    const std::string& topic, std::map<int32_t, std::shared_ptr<std::vector<std::function<void()>>>> sends) {
  // One wait per partition, its batches then sent in their order.
  for (auto& [p, in_order] : sends) {
    when_replica_open(model::topic_partition{topic, model::partition_id{p}}, [in_order = std::move(in_order)] {
      for (auto& send : *in_order) send();
    });
  }
}

result<int32_t> leader_route(const topic_state& topic, int32_t partition) {
  const int32_t leader = topic.image->partitions[static_cast<size_t>(partition)].leader;
  if (leader >= 0) return leader;
  return error{errc::not_leader_or_follower, "partition " + std::to_string(partition) + " of topic '" + topic.name() +
                                                 "' has no leader now (its in-sync replicas are all unavailable); retry"};
}

result<void> check_leader(const topic_state& topic, int32_t partition, int32_t node_id) {
  if (partition < 0 || partition >= topic.partitions_count()) return base::ok_v;   // the caller's range check names it
  auto leader = leader_route(topic, partition);
  if (!leader.ok()) return leader.error();
  if (*leader == node_id) return base::ok_v;
  // Kafka clients route themselves on NOT_LEADER_OR_FOLLOWER; HTTP and WebSocket calls are
  // forwarded (leader_forwarder) and never see this text as an instruction to go elsewhere.
  return error{errc::not_leader_or_follower, "partition " + std::to_string(partition) + " of topic '" + topic.name() +
                                                 "' is led by broker " + std::to_string(*leader) +
                                                 ", not by this broker (" + std::to_string(node_id) + ")"};
}

// ---------------------------------------------------------------- in-flight calls

void leader_forwarder::send_forward(int32_t leader, const model::topic_partition& tp, int16_t api_key,
                                    int16_t api_version, protocol::bytes body, int64_t timeout_ms,
                                    rpc::response_callback on_answer) {
  if (runtime_.current_shard() != controller_shard) {
    std::weak_ptr<int> alive = lifetime_;
    runtime_.post(controller_shard, [this, alive, leader, tp, api_key, api_version, body = std::move(body),
                                     timeout_ms, on_answer = std::move(on_answer)]() mutable {
      if (alive.expired()) return on_answer(rpc::error{rpc::errc::shutting_down, "this broker is stopping"});
      send_forward(leader, tp, api_key, api_version, std::move(body), timeout_ms, std::move(on_answer));
    });
    return;
  }
  auto answer = std::make_shared<rpc::response_callback>(std::move(on_answer));
  // The caller chose `leader` from its shard's view; the latest may be newer already: nothing was sent.
  if (const int32_t now_leader = newest_leader_of(metadata_, tp); now_leader != leader) {
    return (*answer)(not_sent_moved(now_leader));
  }
  waiting_call call{tp, api_key, api_version, std::move(body), timeout_ms,
                    clock_.now_ms() + std::min(timeout_ms, forward_room_wait_max_ms), answer};
  auto& gate = gates_[leader];
  if (gate.waiting.empty() && gate.in_flight < forward_calls_in_flight_per_leader_max) {
    return transmit(leader, std::move(call));
  }
  // No room: the call waits its turn (a burst of pipelined WebSocket produces through this node
  // was refused past the transport's 1024 although the leader was healthy: breaker, session 28).
  if (gate.waiting.size() >= forward_calls_waiting_per_leader_max ||
      gate.waiting_bytes + call.body.size() > forward_call_bytes_waiting_per_leader_max) {
    return (*answer)(rpc::error{rpc::errc::too_many_in_flight,
                                std::to_string(gate.waiting.size()) + " calls (" + std::to_string(gate.waiting_bytes) +
                                    " bytes) already wait for room on the connection to broker " +
                                    std::to_string(leader) + " (forward_calls_waiting_per_leader_max " +
                                    std::to_string(forward_calls_waiting_per_leader_max) +
                                    ", forward_call_bytes_waiting_per_leader_max " +
                                    std::to_string(forward_call_bytes_waiting_per_leader_max) + ")"});
  }
  gate.waiting_bytes += call.body.size();
  gate.waiting.push_back(std::move(call));
  if (!gate.sweeping) {
    gate.sweeping = true;
    std::weak_ptr<int> alive = lifetime_;
    runtime_.post_after(controller_shard, forward_room_sweep_ms, [this, alive, leader] {
      if (!alive.expired()) sweep_waiting(leader);
    });
  }
}

void leader_forwarder::transmit(int32_t leader, waiting_call call) {
  // The transport answers every call once (an answer, an error or its timeout); a leadership
  // that moves first answers it here instead, and the transport's later answer is dropped.
  const uint64_t id = next_forward_id_++;
  ++gates_[leader].in_flight;
  forwards_in_flight_.emplace(id, forward_in_flight{call.partition, leader, call.answer});
  std::weak_ptr<int> alive = lifetime_;
  cluster_transport_->send_forwarded(leader, call.api_key, call.api_version, std::move(call.body), call.timeout_ms,
                                     [this, alive, id, leader, answer = call.answer](rpc::result<protocol::bytes> r) {
                                       if (alive.expired()) return (*answer)(std::move(r));
                                       if (forwards_in_flight_.erase(id) != 0) (*answer)(std::move(r));
                                       release_room(leader);
                                     });
}

void leader_forwarder::release_room(int32_t leader) {
  auto& gate = gates_[leader];
  RINGLOG_ASSERT_OP(gate.in_flight, >, size_t{0});
  --gate.in_flight;
  // A transport that answers at once (stopping) would recurse once per waiting call: the loop
  // on the stack goes on instead.
  if (gate.releasing) return;
  gate.releasing = true;
  while (!gate.waiting.empty() && gate.in_flight < forward_calls_in_flight_per_leader_max) {
    waiting_call call = std::move(gate.waiting.front());
    gate.waiting.pop_front();
    gate.waiting_bytes -= call.body.size();
    if (const int32_t now_leader = newest_leader_of(metadata_, call.partition); now_leader != leader) {
      (*call.answer)(not_sent_moved(now_leader));
    } else if (clock_.now_ms() >= call.deadline_ms) {
      (*call.answer)(room_wait_expired(leader));
    } else {
      transmit(leader, std::move(call));
    }
  }
  gate.releasing = false;
}

void leader_forwarder::sweep_waiting(int32_t leader) {
  auto& gate = gates_[leader];
  const int64_t now = clock_.now_ms();
  std::vector<std::shared_ptr<rpc::response_callback>> expired;
  std::deque<waiting_call> kept;
  for (auto& call : gate.waiting) {
    if (now < call.deadline_ms) {
      kept.push_back(std::move(call));
    } else {
      gate.waiting_bytes -= call.body.size();
      expired.push_back(call.answer);
    }
  }
  gate.waiting.swap(kept);
  gate.sweeping = !gate.waiting.empty();
  if (gate.sweeping) {
    std::weak_ptr<int> alive = lifetime_;
    runtime_.post_after(controller_shard, forward_room_sweep_ms, [this, alive, leader] {
      if (!alive.expired()) sweep_waiting(leader);
    });
  }
  // Last: an answer may send again (a produce to the leader named next).
  for (auto& answer : expired) (*answer)(room_wait_expired(leader));
}

void leader_forwarder::fail_moved_forwards(const metadata_view& view) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  // Old leader -> a partition whose call to it was given up on.
  std::map<int32_t, model::topic_partition> abandoned;
  for (auto it = forwards_in_flight_.begin(); it != forwards_in_flight_.end();) {
    const int32_t now_leader = leader_in(view, it->second.partition);
    if (now_leader == it->second.leader) {
      ++it;
      continue;
    }
    auto answer = it->second.answer;
    abandoned.emplace(it->second.leader, it->second.partition);
    it = forwards_in_flight_.erase(it);
    (*answer)(leadership_moved(now_leader));
  }
  // Calls still waiting for room were never sent: they go to the leader named next.
  std::vector<std::pair<std::shared_ptr<rpc::response_callback>, int32_t>> unsent;
  for (auto& [leader, gate] : gates_) {
    std::deque<waiting_call> kept;
    for (auto& call : gate.waiting) {
      const int32_t now_leader = leader_in(view, call.partition);
      if (now_leader == leader) {
        kept.push_back(std::move(call));
      } else {
        gate.waiting_bytes -= call.body.size();
        unsent.emplace_back(call.answer, now_leader);
      }
    }
    gate.waiting.swap(kept);
  }
  for (auto& [answer, now_leader] : unsent) (*answer)(not_sent_moved(now_leader));
  // Those clients hear "outcome unknown" and retry: the given-up calls must never reach the old
  // leader later (bytes held in this node's send queue during a network cut would be delivered
  // once the path heals, and appended if that node leads again by then, behind newer records).
  // After the loop: aborting a connection answers its other calls, which erase their entries.
  for (const auto& [old_leader, tp] : abandoned) {
    cluster_transport_->abandon_calls(old_leader, "the leadership of " + tp.topic + "-" +
                                                      std::to_string(tp.partition.value()) +
                                                      " moved while a call forwarded to it was in flight");
  }
}

// ---------------------------------------------------------------- produce

void leader_forwarder::handle_forwarded_produce(const protocol::request_header_data& header,
                                                std::span<const std::byte> body, rpc::respond_fn respond) {
  auto decoded = decode_or_close<protocol::produce_request_data>(header, body, respond);
  if (!decoded) return;
  if (decoded->topic_data.size() != 1 || decoded->topic_data[0].partition_data.size() != 1) {
    // Our forwarder sends one partition per call (forward_produce); anything else is no peer's.
    return close_connection(header, protocol::produce_request_data::schema_name,
                            "a forwarded produce names one topic and one partition", respond);
  }
  auto& topic = decoded->topic_data[0];
  auto& part = topic.partition_data[0];
  protocol::produce_response_data response;
  protocol::produce_response_data::topic_produce_response t;
  t.name = topic.name;
  protocol::produce_response_data::partition_produce_response p;
  p.index = part.index;
  produce_batches_request request;
  request.partition = model::topic_partition{topic.name, model::partition_id{part.index}};
  request.acks = decoded->acks == -1 ? acks_mode::all : decoded->acks == 0 ? acks_mode::none : acks_mode::leader;
  request.timeout_ms = decoded->timeout_ms;
  // Split the record set into its batches (produce_batches checks each).
  const auto records = part.records ? std::span<const std::byte>(*part.records) : std::span<const std::byte>{};
  size_t pos = 0;
  while (pos < records.size()) {
    auto h = codec::decode_header(records.subspan(pos));
    if (!h.ok() || h->size_bytes() > records.size() - pos) break;
    request.batches.emplace_back(records.begin() + static_cast<std::ptrdiff_t>(pos),
                                 records.begin() + static_cast<std::ptrdiff_t>(pos + h->size_bytes()));
    pos += h->size_bytes();
  }
  auto answer = [header, respond, response, t, p](result<produce_batches_response> r,
                                                  std::optional<controller::partition_image> refused = {}) mutable {
    if (refused) {
      // Refused unread (see forward_produce_version): the forwarder sends it on itself.
      p.current_leader.leader_id = refused->leader;
      p.current_leader.leader_epoch = refused->leader_epoch;
    }
    if (!r.ok()) {
      p.error_code = static_cast<int16_t>(kafka_error_code(r.error().code));
      p.error_message = r.error().message;
    } else {
      p.base_offset = r->base_offset.value();
      p.log_append_time_ms = r->log_append_time;
      p.log_start_offset = r->log_start_offset.value();
    }
    t.partition_responses.push_back(p);
    response.responses.push_back(t);
    respond_with(header, response, respond);
  };
  if (pos != records.size()) {
    return answer(error{errc::corrupt_message, "the forwarded record set is cut short at byte " + std::to_string(pos)});
  }
  auto shared = std::make_shared<produce_batches_request>(std::move(request));
  const std::string name = shared->partition.topic;
  const int32_t index = shared->partition.partition.value();
  when_ready_in_order(name, index, [this, shared, answer = std::move(answer)]() mutable {
    const auto& tp = shared->partition;
    if (auto refused = refusal_before_serving(tp.topic, tp.partition.value())) {
      return answer(refused->leader == config_.node_id
                        ? shutting_down_refusal(tp, config_.node_id)
                        : error{errc::not_leader_or_follower, "broker " + std::to_string(config_.node_id) +
                                                                  " no longer leads " + tp.topic + "-" +
                                                                  std::to_string(tp.partition.value())},
                    refused);
    }
    produce_.produce_batches_from(
        std::move(*shared), [answer](result<produce_batches_response> r) mutable { answer(std::move(r)); },
        produce_pipeline::batch_origin::peer_broker);
  });
}

void leader_forwarder::when_ready_in_order(const std::string& name, int32_t partition, std::function<void()> serve) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  std::pair<std::string, int32_t> key{name, partition};
  if (auto it = waiting_ready_.find(key); it != waiting_ready_.end()) return it->second.push_back(std::move(serve));
  if (ready_for_forwarded(name, partition)) return serve();
  // One wait per partition, its calls then served in arrival order: each polling on its own, a
  // later produce found the partition open first and was appended before an earlier one (a
  // burst of forwarded produces to a new topic, session 29).
  waiting_ready_[key].push_back(std::move(serve));
  when_topic_known([this, name, partition] { return ready_for_forwarded(name, partition); },
                   [this, alive = std::weak_ptr<int>(lifetime_), key]() {
                     if (alive.expired()) return;
                     auto it = waiting_ready_.find(key);
                     auto in_order = std::move(it->second);
                     waiting_ready_.erase(it);
                     for (auto& serve : in_order) serve();
                   });
}

// ---------------------------------------------------------------- fetch

void leader_forwarder::forward_fetch(int32_t leader, const std::shared_ptr<const topic_state>& topic,
                                     fetch_request request, std::function<void(result<fetch_response>)> done,
                                     bool rerouted) {
  const model::topic_partition tp = request.partition;
  if (cluster_transport_ == nullptr) return done(unreachable(leader, tp, "this node has no cluster listener"));
  protocol::fetch_request_data m;
  m.replica_state.replica_id = -1;
  m.max_wait_ms = static_cast<int32_t>(std::min<int64_t>(std::min(request.max_wait_ms, config_.fetch_wait_max_ms), INT32_MAX));
  m.min_bytes = request.min_bytes;
  m.max_bytes = request.max_bytes;
  m.isolation_level = static_cast<int8_t>(request.isolation);
  protocol::fetch_request_data::fetch_topic t;
  t.topic_id = topic->image->topic_id;
  protocol::fetch_request_data::fetch_partition p;
  p.partition = tp.partition.value();
  p.fetch_offset = request.fetch_offset.value();
  p.partition_max_bytes = request.max_bytes;
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  send_forward(
      leader, tp, protocol::fetch_request_data::api_key, forward_fetch_version, encode_body(m, forward_fetch_version),
      m.max_wait_ms + forward_timeout_slack_ms,
      [this, alive = std::weak_ptr<int>(lifetime_), leader, tp, topic, rerouted, request = std::move(request),
       done = std::move(done)](rpc::result<protocol::bytes> r) mutable {
        // Asked once more, of the leader named next: a read changes nothing, so unlike a write it
        // may be asked again after any failure (`otherwise`: the answer when no leader is named).
        auto ask_next_leader = [&](int32_t refused_epoch, error otherwise) {
          when_leader_moves(tp, leader, refused_epoch, clock_.now_ms() + forward_read_reroute_wait_ms,
                            [this, tp, topic, otherwise = std::move(otherwise), request = std::move(request),
                             done = std::move(done)](int32_t now_leader) mutable {
                              if (now_leader < 0) return done(std::move(otherwise));
                              if (now_leader == config_.node_id) {
                                return fetch_.fetch_here(std::move(request), std::move(done));
                              }
                              forward_fetch(now_leader, topic, std::move(request), std::move(done), true);
                            });
        };
        if (!r.ok()) {
          // Lost on the way (the leader paused or cut off, the leadership moved meanwhile).
          if (rerouted || alive.expired()) return done(unreachable(leader, tp, r.error().message));
          return ask_next_leader(leader_epoch_in(*metadata_.view(), tp), unreachable(leader, tp, r.error().message));
        }
        protocol::reader rd(r.value());
        auto decoded = protocol::fetch_response_data::decode(rd, forward_fetch_version);
        if (!decoded.ok() || decoded->responses.size() != 1 || decoded->responses[0].partitions.size() != 1) {
          return done(unreachable(leader, tp, "an unreadable answer"));
        }
        auto& p = decoded->responses[0].partitions[0];
        if (p.error_code == kafka_error_code(errc::offset_out_of_range)) {
          // The leader's refusal carries no bounds (its answer leaves them at -1 and 0): name the
          // leader rather than print those (breaker, session 28: "log_start_offset -1,
          // high_watermark 0" for a log holding 0-4).
          const std::string bounds = p.log_start_offset >= 0 ? ": log_start_offset " + std::to_string(p.log_start_offset) +
                                                                   ", high_watermark " + std::to_string(p.high_watermark)
                                                             : " on its leader, " + leader_name(leader, tp);
          return done(error{errc::offset_out_of_range,
                            "offset " + std::to_string(request.fetch_offset.value()) + " is outside the log" + bounds});
        }
        if (p.error_code == kafka_error_code(errc::not_leader_or_follower) && p.current_leader.leader_epoch >= 0 &&
            !rerouted && !alive.expired()) {
          // Refused by a broker that no longer leads.
          return ask_next_leader(p.current_leader.leader_epoch, leadership_moving(leader, tp));
        }
        if (p.error_code == kafka_error_code(errc::corrupt_message) && !request.raw_batches) {
          // The leader's stored log is damaged at this offset (it answers raw reads as Kafka
          // does); a decoded read hears the server's damage, as a read on the leader does.
          return done(error{errc::kafka_storage_error, leader_name(leader, tp) + " holds a damaged batch at offset " +
                                                           std::to_string(request.fetch_offset.value())});
        }
        if (p.error_code != 0) return done(answered(leader, tp, p.error_code, std::nullopt));
        fetch_response out;
        out.high_watermark = model::offset{p.high_watermark};
        out.log_start_offset = model::offset{p.log_start_offset};
        out.log_end_offset = out.high_watermark;   // the leader's own end is not sent to consumers
        out.last_stable_offset = p.last_stable_offset >= 0 ? model::offset{p.last_stable_offset} : out.high_watermark;
        if (p.aborted_transactions) {
          for (const auto& a : *p.aborted_transactions) {
            out.aborted_transactions.push_back({model::producer_id{a.producer_id}, model::offset{a.first_offset}});
          }
        }
        if (request.raw_batches) {
          if (p.records) out.batches = std::move(*p.records);
          out.next_fetch_offset = next_offset_after(out.batches, request.fetch_offset);
          return done(std::move(out));
        }
        out.next_fetch_offset = request.fetch_offset;
        if (p.records) {
          const bool committed = request.isolation == isolation_level::read_committed;
          auto decoded_records = decode_fetched_records(*p.records, request.fetch_offset,
                                                        committed ? out.last_stable_offset : out.high_watermark,
                                                        request.max_bytes, out.records,
                                                        committed ? &out.aborted_transactions : nullptr,
                                                        &out.next_fetch_offset);
          if (!decoded_records.ok()) return done(decoded_records.error());
          out.aborted_transactions.clear();   // applied here: decoded answers carry none
        }
        done(std::move(out));
      });
}

void leader_forwarder::serve_forwarded_fetch(const protocol::request_header_data& header,
                                             const protocol::fetch_request_data& request, rpc::respond_fn respond,
                                             bool waited) {
  protocol::fetch_response_data response;
  protocol::fetch_response_data::fetchable_topic_response t;
  protocol::fetch_response_data::partition_data out;
  auto answer = [header, respond, response, t, out](int16_t code) mutable {
    out.error_code = code;
    t.partitions.push_back(out);
    response.responses.push_back(t);
    respond_with(header, response, respond);
  };
  if (request.topics.size() != 1 || request.topics[0].partitions.size() != 1) {
    return answer(static_cast<int16_t>(kafka_error_code(errc::invalid_request)));
  }
  const auto& rt = request.topics[0];
  const auto& rp = rt.partitions[0];
  t.topic_id = rt.topic_id;
  out.partition_index = rp.partition;
  auto known = [this, id = rt.topic_id, index = rp.partition] {
    const controller::topic_image* image = metadata_.view()->image->find_topic(id);
    return image != nullptr && ready_for_forwarded(image->name, index);
  };
  if (!waited && !known()) {
    return when_topic_known(known, [this, header, request, respond = std::move(respond)]() mutable {
      if (metadata_.view()->image->find_topic(request.topics[0].topic_id) == nullptr) {
        protocol::fetch_response_data response;
        protocol::fetch_response_data::fetchable_topic_response t;
        t.topic_id = request.topics[0].topic_id;
        protocol::fetch_response_data::partition_data out;
        out.partition_index = request.topics[0].partitions[0].partition;
        out.error_code = static_cast<int16_t>(kafka_error_code(errc::unknown_topic_or_partition));
        t.partitions.push_back(out);
        response.responses.push_back(t);
        return respond_with(header, response, respond);
      }
      serve_forwarded_fetch(header, request, std::move(respond), true);
    });
  }
  const controller::topic_image* image = metadata_.view()->image->find_topic(rt.topic_id);
  if (auto refused = refusal_before_serving(image->name, rp.partition)) {
    out.current_leader.leader_id = refused->leader;   // the forwarder asks that leader next
    out.current_leader.leader_epoch = refused->leader_epoch;
    return answer(static_cast<int16_t>(kafka_error_code(errc::not_leader_or_follower)));
  }
  fetch_request f;
  f.partition = model::topic_partition{image->name, model::partition_id{rp.partition}};
  f.fetch_offset = model::offset{rp.fetch_offset};
  f.max_bytes = std::max(rp.partition_max_bytes, 1);
  f.max_wait_ms = request.max_wait_ms;
  f.min_bytes = request.min_bytes;
  f.raw_batches = true;
  f.isolation = request.isolation_level == 1 ? isolation_level::read_committed : isolation_level::read_uncommitted;
  fetch_.fetch_here(std::move(f), [header, respond, response, t, out](result<fetch_response> r) mutable {
    if (!r.ok()) {
      out.error_code = static_cast<int16_t>(kafka_error_code(r.error().code));
    } else {
      out.high_watermark = r->high_watermark.value();
      out.last_stable_offset = r->last_stable_offset.value();
      out.log_start_offset = r->log_start_offset.value();
      if (!r->batches.empty()) out.records = std::move(r->batches);
      if (!r->aborted_transactions.empty()) {
        out.aborted_transactions.emplace();
        for (const auto& a : r->aborted_transactions) {
          protocol::fetch_response_data::aborted_transaction x;
          x.producer_id = a.producer_id.value();
          x.first_offset = a.first_offset.value();
          out.aborted_transactions->push_back(x);
        }
      }
    }
    t.partitions.push_back(out);
    response.responses.push_back(t);
    respond_with(header, response, respond);
  });
}

// ---------------------------------------------------------------- list offsets

void leader_forwarder::forward_list_offsets(int32_t leader, list_offsets_request request,
                                            std::function<void(result<list_offsets_response>)> done, bool rerouted) {
  const model::topic_partition tp = request.partition;
  if (cluster_transport_ == nullptr) return done(unreachable(leader, tp, "this node has no cluster listener"));
  protocol::list_offsets_request_data m;
  m.replica_id = -1;
  m.isolation_level = static_cast<int8_t>(request.isolation);
  protocol::list_offsets_request_data::list_offsets_topic t;
  t.name = tp.topic;
  protocol::list_offsets_request_data::list_offsets_partition p;
  p.partition_index = tp.partition.value();
  p.timestamp = request.spec == offset_spec::earliest ? earliest_timestamp
                : request.spec == offset_spec::latest ? latest_timestamp
                                                      : request.timestamp;
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  send_forward(
      leader, tp, protocol::list_offsets_request_data::api_key, forward_list_offsets_version,
      encode_body(m, forward_list_offsets_version), forward_timeout_slack_ms,
      [this, alive = std::weak_ptr<int>(lifetime_), leader, tp, rerouted, request,
       done = std::move(done)](rpc::result<protocol::bytes> r) mutable {
        // Asked once more, of the leader named next (a read: after any failure, as forward_fetch).
        auto ask_next_leader = [&](int32_t refused_epoch, error otherwise) {
          when_leader_moves(tp, leader, refused_epoch, clock_.now_ms() + forward_read_reroute_wait_ms,
                            [this, tp, otherwise = std::move(otherwise), request = std::move(request),
                             done = std::move(done)](int32_t now_leader) mutable {
                              if (now_leader < 0) return done(std::move(otherwise));
                              if (now_leader == config_.node_id) {
                                return fetch_.list_offsets_here(std::move(request), std::move(done));
                              }
                              forward_list_offsets(now_leader, std::move(request), std::move(done), true);
                            });
        };
        if (!r.ok()) {
          if (rerouted || alive.expired()) return done(unreachable(leader, tp, r.error().message));
          return ask_next_leader(leader_epoch_in(*metadata_.view(), tp), unreachable(leader, tp, r.error().message));
        }
        protocol::reader rd(r.value());
        auto decoded = protocol::list_offsets_response_data::decode(rd, forward_list_offsets_version);
        if (!decoded.ok() || decoded->topics.size() != 1 || decoded->topics[0].partitions.size() != 1) {
          return done(unreachable(leader, tp, "an unreadable answer"));
        }
        const auto& p = decoded->topics[0].partitions[0];
        // ListOffsets has no CurrentLeader: a broker that no longer leads answers
        // not_leader_or_follower with its leader's epoch in LeaderEpoch (refusal_before_serving).
        if (p.error_code == kafka_error_code(errc::not_leader_or_follower) && p.leader_epoch >= 0 && !rerouted &&
            !alive.expired()) {
          return ask_next_leader(p.leader_epoch, leadership_moving(leader, tp));
        }
        if (p.error_code != 0) return done(answered(leader, tp, p.error_code, std::nullopt));
        list_offsets_response out;
        if (p.offset >= 0) out.found_offset = model::offset{p.offset};
        out.timestamp = p.timestamp;
        out.leader_epoch = model::leader_epoch{p.leader_epoch};
        done(out);
      });
}

void leader_forwarder::handle_forwarded_list_offsets(const protocol::request_header_data& header,
                                                     std::span<const std::byte> body, rpc::respond_fn respond) {
  auto decoded = decode_or_close<protocol::list_offsets_request_data>(header, body, respond);
  if (!decoded) return;
  if (decoded->topics.size() != 1 || decoded->topics[0].partitions.size() != 1) {
    // Our forwarder asks for one partition per call (forward_list_offsets); anything else is no peer's.
    return close_connection(header, protocol::list_offsets_request_data::schema_name,
                            "a forwarded ListOffsets names one topic and one partition", respond);
  }
  const auto& t = decoded->topics[0];
  const auto& p = t.partitions[0];
  list_offsets_request request;
  request.partition = model::topic_partition{t.name, model::partition_id{p.partition_index}};
  request.spec = p.timestamp == earliest_timestamp ? offset_spec::earliest
                 : p.timestamp == latest_timestamp ? offset_spec::latest
                                                   : offset_spec::timestamp;
  request.timestamp = p.timestamp;
  request.isolation = decoded->isolation_level == 1 ? isolation_level::read_committed : isolation_level::read_uncommitted;
  auto shared = std::make_shared<list_offsets_request>(std::move(request));
  auto serve = [this, shared, header, respond, name = t.name, index = p.partition_index]() mutable {
  if (auto refused = refusal_before_serving(name, index)) {
    protocol::list_offsets_response_data response;
    protocol::list_offsets_response_data::list_offsets_topic_response topic;
    topic.name = name;
    protocol::list_offsets_response_data::list_offsets_partition_response part;
    part.partition_index = index;
    part.error_code = static_cast<int16_t>(kafka_error_code(errc::not_leader_or_follower));
    part.leader_epoch = refused->leader_epoch;   // marks the refusal (forward_list_offsets)
    topic.partitions.push_back(part);
    response.topics.push_back(topic);
    return respond_with(header, response, respond);
  }
  fetch_.list_offsets_here(std::move(*shared), [header, respond, name,
                                         index](result<list_offsets_response> r) mutable {
    protocol::list_offsets_response_data response;
    protocol::list_offsets_response_data::list_offsets_topic_response topic;
    topic.name = name;
    protocol::list_offsets_response_data::list_offsets_partition_response part;
    part.partition_index = index;
    if (!r.ok()) {
      part.error_code = static_cast<int16_t>(kafka_error_code(r.error().code));
    } else {
      part.offset = r->found_offset ? r->found_offset->value() : -1;
      part.timestamp = r->timestamp;
      part.leader_epoch = r->leader_epoch.value();
    }
    topic.partitions.push_back(part);
    response.topics.push_back(topic);
    respond_with(header, response, respond);
  });
  };
  when_topic_known([this, name = t.name, index = p.partition_index] { return ready_for_forwarded(name, index); },
                   std::move(serve));
}

}  // namespace ringlog::broker::detail
