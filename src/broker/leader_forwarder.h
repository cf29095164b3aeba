#pragma once
// Calls passed on to a partition's leader (design.md section 6: any broker serves any partition;
// a class of its own since issue 28). HTTP and WebSocket clients have no client-side routing, so
// a produce, fetch or offsets query for a partition another broker leads is sent to that leader
// over the cluster listener in Kafka's own requests (Produce v10, Fetch v15 with replica id -1,
// ListOffsets v7) and answered as if it had been served here; the leader serves the calls peers
// send it like any client's. leader_forwarder owns the calls in flight (failed as soon as the
// metadata names another leader) and the waits for metadata a call needs (a topic or replica not
// known or opened yet, the next leader after a refusal); forwarding.cc has the rules. It serves
// the calls it takes through the produce pipeline and the fetch service. Private to the broker
// module.
//
// Shards: the calls in flight live on the controller shard (send_forward posts there); the
// metadata waits poll there too.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "metadata.h"
#include "ringlog/base/clock.h"
#include "ringlog/broker/broker.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class fetch_service;
class produce_pipeline;

/// The partition's leader (this node or another), or not_leader_or_follower when it has none.
/// `partition` is in [0, topic.partitions_count()).
result<int32_t> leader_route(const topic_state& topic, int32_t partition);
/// Whether node `node_id` leads `partition` of `topic`: ok, or not_leader_or_follower naming who
/// leads it (or that none does). A partition outside [0, topic.partitions_count()) is ok: the
/// caller's range check names it.
result<void> check_leader(const topic_state& topic, int32_t partition, int32_t node_id);

class leader_forwarder {
 public:
  /// `metadata`: the views; `produce`: the append pipeline of client data (produce_batches_from,
  /// for batches a peer forwarded and this node's own HTTP records a former leader refused);
  /// `fetch`: fetch and list_offsets of a partition this node leads (fetch_here,
  /// list_offsets_here); `config`: the static broker config (node.id, fetch.max.wait.ms); `cluster_transport` null: a
  /// single node (every forward fails as unreachable); `stopping`: the broker's stop flag (a set
  /// flag ends the metadata waits). Every reference outlives this object.
  leader_forwarder(const metadata_publisher& metadata, produce_pipeline& produce, fetch_service& fetch,
                   const broker_config& config,
                   const base::clock& clock, runtime::shard_runtime& runtime, rpc::transport* cluster_transport,
                   const std::atomic<bool>& stopping);

  /// Before the transport serves: the handlers of Produce and ListOffsets that peers forward
  /// (Fetch is shared with followers and the quorum: the broker routes it to serve_forwarded_fetch).
  void register_cluster_handlers();

  // ---- this node's calls for partitions it may not lead
  /// Runs `serve` once ready_for_forwarded(tp) holds (at once when it does; else on the controller
  /// shard within forward_metadata_wait_ms): this node's own HTTP and WebSocket produces, and every
  /// fetch and offset query of a partition it leads, wait for a replica not opened yet, as a peer's do.
  void when_replica_open(const model::topic_partition& tp, std::function<void()> serve);
  /// when_replica_open for each partition of `topic` in `sends` (partition -> its calls, in order).
  void when_replicas_open(const std::string& topic,
                          std::map<int32_t, std::shared_ptr<std::vector<std::function<void()>>>> sends);
  /// Sends `batch` (one v2 record batch) to the leader of `tp` (`leader`: the caller's view's; the
  /// newest view's wins); when that broker refuses it unread because it no longer leads `tp`, or
  /// it was never sent (connect failed, the leadership moved first), sends it on to the leader
  /// this node's metadata names next, within `timeout_ms` in all. acks=0 travels as acks=1.
  /// Order: the batches of one partition are given a sequence in the order this forwarder takes
  /// them (one caller's calls from one shard arrive in call order) and are appended in that order
  /// across a leader change: a batch sent again goes before every later batch, which waits
  /// (produce_order_), and no batch goes to a new leader while an earlier one is unanswered at
  /// another broker. Errors: not_leader_or_follower (unreachable, or the outcome unknown: retry),
  /// throttling_quota_exceeded (forward_produces_held_max or forward_produce_bytes_held_max
  /// reached: nothing sent), request_timed_out (waited `timeout_ms` behind earlier batches:
  /// nothing sent), the leader's own.
  void forward_produce(int32_t leader, const model::topic_partition& tp, model::bytes batch, acks_mode acks,
                       int64_t timeout_ms, std::function<void(result<produce_batches_response>)> done);
  /// Whether a produce of `tp` forward_produce took is not answered yet (any thread): this node's
  /// own appends to a partition it leads go through forward_produce meanwhile, behind them, so
  /// that a batch sent again to this node (the new leader) is not overtaken by later ones
  /// appended here directly.
  [[nodiscard]] bool holds_produces_of(const model::topic_partition& tp) const;
  /// A consumer's fetch of `topic` sent to `leader`; raw batches or decoded records as the request
  /// asks. `rerouted`: the call was refused once by a former leader and asked again of the new one
  /// (asked at most twice: forward_read_reroute_wait_ms bounds the wait in between). Errors:
  /// offset_out_of_range naming the log's bounds, not_leader_or_follower (retry), the leader's own.
  void forward_fetch(int32_t leader, const std::shared_ptr<const topic_state>& topic, fetch_request request,
                     std::function<void(result<fetch_response>)> done, bool rerouted = false);
  /// ListOffsets (earliest, latest or by timestamp) sent to `leader`; `rerouted` as forward_fetch.
  void forward_list_offsets(int32_t leader, list_offsets_request request,
                            std::function<void(result<list_offsets_response>)> done, bool rerouted = false);
  /// On the controller shard, after `view` is published: fails every forwarded call whose
  /// partition `view` no longer has led by the broker it was sent to (another leader, none, or
  /// the topic gone), and abandons the calls still queued to those brokers.
  void fail_moved_forwards(const metadata_view& view);

  // ---- calls peers forwarded to this node
  /// A consumer's Fetch a peer forwarded (one partition, by topic id), from the cluster listener.
  /// `waited`: the wait for the topic (ready_for_forwarded) is over; serve it as it is now.
  void serve_forwarded_fetch(const protocol::request_header_data& header, const protocol::fetch_request_data& request,
                             rpc::respond_fn respond, bool waited = false);

 private:
  /// The topic `name` as of the calling thread's view, or null.
  [[nodiscard]] std::shared_ptr<const topic_state> find_topic(const std::string& name) const;
  /// Runs `then` on the controller shard once `known()` holds or forward_metadata_wait_ms passed.
  void when_topic_known(std::function<bool()> known, std::function<void()> then, int64_t waited_ms = 0);
  /// A call a peer forwarded for partition `partition` of `name` may be served: the topic is in
  /// this node's view with the partition (one the peer named past this node's partition count
  /// was added and is not applied here yet) and, when this node holds a replica of the partition, that replica is open
  /// (the view is published before the reconcile step that opens new partitions, and a call served
  /// in between would find no partition and answer unknown_topic_or_partition).
  [[nodiscard]] bool ready_for_forwarded(const std::string& name, int32_t partition) const;
  /// Sends a call for `tp` to its leader `leader` over the cluster listener and answers
  /// `on_answer` exactly once, on the controller shard: with the leader's answer, or with an
  /// rpc error when the transport fails - or as soon as a metadata image names another leader for
  /// `tp` (fail_moved_forwards), so a call to a paused or cut-off leader ends when the leadership
  /// moves, not at its timeout (its outcome is then unknown to this node: the caller retries).
  void send_forward(int32_t leader, const model::topic_partition& tp, int16_t api_key, int16_t api_version,
                    protocol::bytes body, int64_t timeout_ms, rpc::response_callback on_answer);
  /// One forwarded produce not sent (or to be sent again), in its partition's order line.
  struct held_batch {
    model::bytes batch;
    acks_mode acks = acks_mode::all;
    int64_t deadline_ms = 0;   // clock ms: the caller's timeout
    std::function<void(result<produce_batches_response>)> done;
    int32_t refused_by = -1;      // the broker that refused it unread or was never reached; -1: not sent yet
    int32_t refused_epoch = -1;   // the leader epoch that refusal named (-1: none)
    int32_t target = -1;          // the leader chosen for it; -1: not chosen yet
    bool waited_for_view = false;   // waited once for the controller shard's view to name this node
  };
  /// The forwarded produces of one partition in their order (controller shard only): a sequence
  /// per batch at forward time; `sent`: sequence -> the broker it is with (this node's id: appended
  /// here), unanswered; `held`: not sent yet, released in sequence order.
  struct produce_order_line {
    uint64_t next_sequence = 0;
    std::map<uint64_t, int32_t> sent;
    std::map<uint64_t, held_batch> held;
    bool waiting = false;   // when_leader_moves runs for held's first batch
    bool pumping = false;   // pump_produces is on the stack (a send may answer at once)
  };
  /// On the controller shard: takes `batch` into `tp`'s order line with the next sequence.
  void hold_produce(const model::topic_partition& tp, held_batch batch);
  /// Sends `tp`'s held batches in sequence order while nothing earlier blocks them: the first
  /// waits for a leader when it needs one (when_leader_moves); a batch waits while an earlier
  /// one is unanswered at a broker other than its own target. Closes an empty line.
  void pump_produces(const model::topic_partition& tp);
  /// Sends batch `sequence` of `tp` to `batch.target` (or appends it here) and settles it.
  /// A batch sent (in `sent`) taken back into its line's `held` at its sequence, counted as held
  /// again: resend_produce and wait_for_view_here. Returns the line.
  produce_order_line& back_in_line(const model::topic_partition& tp, uint64_t sequence, held_batch batch);
  /// send_in_order's batch for this node, which the newest view names the leader of `tp` while
  /// the controller shard's view (the one the append checks) does not yet: back in its line, which
  /// waits for that view (forward_metadata_wait_ms at most) and then chooses its leader again.
  void wait_for_view_here(const model::topic_partition& tp, uint64_t sequence, held_batch batch);
  void send_in_order(const model::topic_partition& tp, uint64_t sequence, held_batch batch);
  /// The wait for a leader of `tp`'s first held batch `sequence` ended (`now_leader` -1: none by
  /// its deadline, answered so).
  void leader_found(const model::topic_partition& tp, uint64_t sequence, int32_t now_leader);
  /// The leader's answer `r` to batch `sequence` of `tp`: settled, or sent again when it was
  /// refused unread or never sent.
  void forwarded_produce_answered(const model::topic_partition& tp, uint64_t sequence,
                                  const std::shared_ptr<held_batch>& held, rpc::result<protocol::bytes> r);
  /// Batch `sequence` of `tp` was answered: `done` hears `r`, the line moves on.
  void settle_produce(const model::topic_partition& tp, uint64_t sequence,
                      std::function<void(result<produce_batches_response>)>& done, result<produce_batches_response> r);
  /// Batch `sequence` of `tp` was refused unread by (or never reached) `refused_by`: back into the
  /// line with its sequence, to go to the leader named next.
  void resend_produce(const model::topic_partition& tp, uint64_t sequence, held_batch batch, int32_t refused_by,
                      int32_t refused_epoch);
  /// A forwarded call waiting for room on the connection to its leader (leader_gate).
  struct waiting_call {
    model::topic_partition partition;
    int16_t api_key = 0;
    int16_t api_version = 0;
    protocol::bytes body;
    int64_t timeout_ms = 0;
    int64_t deadline_ms = 0;   // clock ms: past it the call is answered unsent
    std::shared_ptr<rpc::response_callback> answer;
  };
  /// The forwarded calls to one leader: those with the transport (at most
  /// forward_calls_in_flight_per_leader_max, below its client_pending_requests_max) and those
  /// waiting for room, in order (bounded by forward_calls_waiting_per_leader_max and
  /// forward_call_bytes_waiting_per_leader_max, each for at most its timeout).
  struct leader_gate {
    size_t in_flight = 0;
    std::deque<waiting_call> waiting;
    size_t waiting_bytes = 0;
    bool sweeping = false;    // a timer answers the expired waiting calls
    bool releasing = false;   // release_room is on the stack
  };
  /// Hands `call` to the transport (room was checked).
  void transmit(int32_t leader, waiting_call call);
  /// A call to `leader` was answered: the next waiting ones go out.
  void release_room(int32_t leader);
  /// Answers the waiting calls to `leader` whose deadline passed; re-arms while any wait.
  void sweep_waiting(int32_t leader);
  /// For a call a peer forwarded: this node's image of the partition when this node does not lead
  /// it (the peer's metadata or this node's lags behind a leadership move) or when this node is
  /// stopping (its leaderships are moving), so the call is refused before any of it is served;
  /// nullopt when this node leads it and is not stopping, or does not know the topic or partition
  /// (answered as such by the serving code).
  [[nodiscard]] std::optional<controller::partition_image> refusal_before_serving(const std::string& name,
                                                                                 int32_t partition) const;
  /// Runs `then(leader)` on the controller shard once this node's metadata names a leader of `tp`
  /// other than `refused_by` (which refused a call knowing the leader epoch `refused_epoch`), or
  /// `refused_by` itself in a newer epoch after one poll (the refuser's metadata lagged), polling
  /// every forward_metadata_poll_ms; `then(-1)` when none by `deadline_ms` (clock ms), when the
  /// topic was deleted, or when the broker stops. `waited`: a poll interval has passed.
  void when_leader_moves(const model::topic_partition& tp, int32_t refused_by, int32_t refused_epoch,
                         int64_t deadline_ms, std::function<void(int32_t)> then, bool waited = false);
  /// A peer's Produce of one partition's record set (Produce v10): split into its batches and
  /// appended once the partition is known here, or refused unread when this node does not lead it.
  void handle_forwarded_produce(const protocol::request_header_data& header, std::span<const std::byte> body,
                                rpc::respond_fn respond);
  /// On the controller shard: runs `serve` once ready_for_forwarded(name, partition) holds (or
  /// forward_metadata_wait_ms passed), after every call of that partition that waits already,
  /// in arrival order (waiting_ready_).
  void when_ready_in_order(const std::string& name, int32_t partition, std::function<void()> serve);
  /// A peer's ListOffsets of one partition (v7), answered as handle_forwarded_produce is.
  void handle_forwarded_list_offsets(const protocol::request_header_data& header, std::span<const std::byte> body,
                                     rpc::respond_fn respond);

  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  produce_pipeline& produce_;
  fetch_service& fetch_;
  const broker_config& config_;
  const base::clock& clock_;
  runtime::shard_runtime& runtime_;
  rpc::transport* const cluster_transport_;
  const std::atomic<bool>& stopping_;
  /// Calls forwarded to other leaders and not answered yet (controller shard only), by a
  /// sequence number; bounded by the transport's own per-peer limit
  /// (rpc::constants::client_pending_requests_max per leader).
  struct forward_in_flight {
    model::topic_partition partition;
    int32_t leader = -1;
    std::shared_ptr<rpc::response_callback> answer;
  };
  std::map<uint64_t, forward_in_flight> forwards_in_flight_;
  uint64_t next_forward_id_ = 0;
  std::map<int32_t, leader_gate> gates_;   // by leader (controller shard only)
  /// Peers' produces waiting for their partition to be ready here, by topic and partition, in
  /// arrival order (controller shard only); bounded by the cluster listener's
  /// connection_in_flight_requests_max per peer connection.
  std::map<std::pair<std::string, int32_t>, std::vector<std::function<void()>>> waiting_ready_;
  /// Order lines by topic, then partition (controller shard only); bounded by
  /// forward_produces_held_max and forward_produce_bytes_held_max over all lines.
  std::map<std::pair<std::string, int32_t>, produce_order_line> produce_order_;
  /// Produces forward_produce took and not answered yet, by topic and partition (any thread,
  /// under its mutex; its count lets holds_produces_of skip the lock).
  struct taken_produces {
    std::mutex mutex;
    std::map<std::pair<std::string, int32_t>, size_t> by_partition;
    std::atomic<size_t> count{0};
  };
  /// Shared with the answers, which may run after the forwarder is gone.
  std::shared_ptr<taken_produces> taken_ = std::make_shared<taken_produces>();
  size_t produces_held_ = 0;
  size_t produce_bytes_held_ = 0;
  /// Timers and posted answers hold a weak reference: one that runs after the forwarder is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
};

}  // namespace ringlog::broker::detail
