// The metadata barrier of admin calls: an admin change is planned against this node's image, and
// on a node that is not the active controller that image can lag the quorum by a fetch round
// trip (a broker registration committed a moment ago, a topic just created elsewhere). Before
// planning, such a node asks the active controller for the quorum's high watermark
// (DescribeQuorum, KIP-595) and waits until it applied every entry below it: the change is then
// planned against everything committed before the call arrived (Raft's read index, Ongaro's
// thesis section 6.4). Kafka reaches the same by forwarding admin requests to the controller.

#include "metadata_barrier.h"

#include <algorithm>
#include <utility>

#include "constants.h"
#include "fetch_service.h"
#include "metadata_publisher.h"
#include "produce_pipeline.h"
#include "rpc_messages.h"
#include "ringlog/base/assert.h"
#include "ringlog/protocol/error_codes.h"

namespace ringlog::broker::detail {

namespace {

constexpr int16_t describe_quorum_version = 0;

}  // namespace

metadata_barrier::metadata_barrier(const std::unique_ptr<controller::metadata_quorum>& quorum,
                                   metadata_publisher& metadata, produce_pipeline& produce, fetch_service& fetch,
                                   runtime::shard_runtime& runtime, rpc::transport* cluster_transport, int32_t node_id)
    : quorum_(quorum),
      metadata_(metadata),
      produce_(produce),
      fetch_(fetch),
      runtime_(runtime),
      cluster_transport_(cluster_transport),
      node_id_(node_id) {}

void metadata_barrier::register_cluster_handlers() {
  // The body is copied (it is valid during the transport's call only) and answered on the
  // controller shard, where the quorum lives.
  cluster_transport_->set_handler(
      protocol::describe_quorum_request_data::api_key,
      [this](const protocol::request_header_data& header, std::span<const std::byte> body, rpc::respond_fn respond) {
        runtime_.post(controller_shard, [this, header, b = std::vector<std::byte>(body.begin(), body.end()),
                                         respond = std::move(respond)]() mutable {
          handle_describe_quorum(header, std::move(b), std::move(respond));
        });
      });
}

int32_t metadata_barrier::leader_to_ask() const {
  const int32_t leader = quorum_ ? quorum_->leader_id() : -1;
  // The active controller's own image holds every committed entry it proposed; with no known
  // leader or no transport, plan against this image (as before): the commit checks the
  // partition epochs it names, and the refusal says to retry when there is no leader.
  return leader < 0 || leader == node_id_ || cluster_transport_ == nullptr ? -1 : leader;
}

void metadata_barrier::post_caught_up(std::function<void()> then) {
  runtime_.post(controller_shard, [this, then = std::move(then)]() mutable {
    if (leader_to_ask() < 0) return then();
    next_round_.push_back(std::move(then));
    if (!asking_) ask_quorum_leader();
  });
}

// One DescribeQuorum in flight at a time, on the controller shard: the callers that arrive while
// one is out wait for the next, which is sent after they arrived, so its high watermark covers
// everything committed when each of them called. A burst of calls (a WebSocket pipelining
// produces to thousands of unknown topics) costs two requests, not one each: one each filled the
// cluster connection that Raft, heartbeats and replica fetches share (1,024 waiting requests) and
// got a node fenced (breaker, session 28).
void metadata_barrier::ask_quorum_leader() {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  std::vector<std::function<void()>> round;
  round.swap(next_round_);
  const int32_t leader = leader_to_ask();
  if (leader < 0) {   // the leader went away (or is now this node) since they queued
    for (auto& then : round) then();
    return;
  }
  asking_ = true;
  protocol::describe_quorum_request_data request;
  protocol::describe_quorum_request_data::topic_data topic;
  topic.topic_name = "__cluster_metadata";
  topic.partitions.emplace_back().partition_index = 0;
  request.topics.push_back(std::move(topic));
  auto waiting = std::make_shared<std::vector<std::function<void()>>>(std::move(round));
  cluster_transport_->send(
      leader, protocol::describe_quorum_request_data::api_key, describe_quorum_version,
      encode_body(request, describe_quorum_version), metadata_barrier_timeout_ms,
      [this, waiting, alive = std::weak_ptr<int>(lifetime_)](rpc::result<protocol::bytes> r) mutable {
        if (!alive.lock()) return;
        int64_t high_watermark = -1;
        if (r.ok()) {
          protocol::reader rd(r.value());
          auto decoded = protocol::describe_quorum_response_data::decode(rd, describe_quorum_version);
          if (decoded.ok() && decoded->error_code == 0 && decoded->topics.size() == 1 &&
              decoded->topics[0].partitions.size() == 1 && decoded->topics[0].partitions[0].error_code == 0) {
            high_watermark = decoded->topics[0].partitions[0].high_watermark;
          }
        }
        runtime_.post(controller_shard, [this, high_watermark, waiting]() mutable {
          asking_ = false;
          if (!next_round_.empty()) ask_quorum_leader();
          const auto run_all = [waiting] {
            for (auto& then : *waiting) then();
          };
          // The leader did not answer (moved, unreachable): plan against this image, as before.
          if (high_watermark <= 0) return run_all();
          // A reader's wait (await_applied_through): the entry at high_watermark - 1 is not this
          // barrier's, and await_applied would take the reason of a refused one from the writer
          // that proposed it, who then waited metadata_write_timeout_ms for it.
          metadata_.apply_queue().await_applied_through(high_watermark - 1, metadata_write_timeout_ms,
                                                        [run_all](bool) { run_all(); });
        });
      });
}

// ---------------------------------------------------------------- a topic this node has not learned of

// A topic created a moment ago through another node (its 201 answered) may not be in this node's
// image yet: a produce, fetch or offsets query naming it answered "topic ... does not exist" (and
// an auto-create was planned from that) for a topic that exists (the breaker's p7, session 18).
// A call naming a topic this node does not know first passes the metadata barrier, then is served
// from the image as it is then (Kafka's producer likewise waits for metadata, max.block.ms).

// Partitions added a moment ago through another node likewise (the new user of session 36: for
// about 200 ms after CreatePartitions answered, the other nodes answered a produce or offsets
// query naming a new partition with a definitive 404 40402): a call naming a partition index
// this node's image does not have passes the barrier too. Only a miss waits.

/// Whether `topic` is unknown here, or has no partition `partition` (>= 0) yet.
bool metadata_barrier::unknown_here(const std::string& topic, int32_t partition) const {
  auto t = metadata_.find_topic(topic);
  return !t || partition >= t->partitions_count();
}

void metadata_barrier::produce(produce_request request, std::function<void(result<produce_response>)> done) {
  const auto unknown = [&] {
    int32_t highest = -1;   // the highest partition a record names
    for (const auto& r : request.records) {
      if (r.partition) highest = std::max(highest, r.partition->value());
    }
    return unknown_here(request.topic, highest);
  };
  switch (waiting_produces_.join_or_open(request.topic, request, done, unknown)) {
    case produce_lines::placed::joined: return;   // behind earlier produces of this topic on the barrier
    case produce_lines::placed::none: return produce_.produce_known(std::move(request), std::move(done));
    case produce_lines::placed::opened: break;
  }
  std::string topic = request.topic;
  auto first = std::make_shared<held_produce>(held_produce{std::move(request), std::move(done)});
  post_caught_up([this, topic = std::move(topic), first] {
    produce_.produce_known(std::move(first->request), std::move(first->done));
    waiting_produces_.drain(topic, [this](held_produce&& h) {
      produce_.produce_known(std::move(h.request), std::move(h.done));
    });
  });
}

void metadata_barrier::fetch(fetch_request request, std::function<void(result<fetch_response>)> done) {
  if (!unknown_here(request.partition.topic, request.partition.partition.value())) {
    return fetch_.fetch_known(std::move(request), std::move(done));
  }
  auto held = std::make_shared<fetch_request>(std::move(request));
  post_caught_up([this, held, done = std::move(done)]() mutable {
    fetch_.fetch_known(std::move(*held), std::move(done));
  });
}

void metadata_barrier::list_offsets(list_offsets_request request,
                                    std::function<void(result<list_offsets_response>)> done) {
  if (!unknown_here(request.partition.topic, request.partition.partition.value())) {
    return fetch_.list_offsets_known(std::move(request), std::move(done));
  }
  auto held = std::make_shared<list_offsets_request>(std::move(request));
  post_caught_up([this, held, done = std::move(done)]() mutable {
    fetch_.list_offsets_known(std::move(*held), std::move(done));
  });
}

void metadata_barrier::handle_describe_quorum(const protocol::request_header_data& header,
                                              std::vector<std::byte> body, rpc::respond_fn respond) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  auto request = decode_or_close<protocol::describe_quorum_request_data>(header, body, respond);
  if (!request) return;
  protocol::describe_quorum_response_data response;
  auto& partition = response.topics.emplace_back();
  partition.topic_name = "__cluster_metadata";
  auto& p = partition.partitions.emplace_back();
  p.partition_index = 0;
  const controller::quorum_description q = quorum_->describe();
  p.leader_id = q.leader_id;
  p.leader_epoch = q.leader_epoch;
  // Only the leader knows the quorum's high watermark for sure (KIP-595: DescribeQuorum is
  // answered by the leader; others say NOT_LEADER_OR_FOLLOWER).
  if (q.leader_id != node_id_) {
    p.error_code = protocol::error_codes::code_not_leader_or_follower;
  } else {
    p.high_watermark = q.high_watermark;
  }
  respond_with(header, response, respond);
}

}  // namespace ringlog::broker::detail
