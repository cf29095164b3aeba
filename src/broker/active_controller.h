#pragma once
// The broker's side of the active controller (issue 28 stage E; Kafka's QuorumController as the
// driver of its control managers). The decisions are src/controller's, pure and with time as an
// argument (membership.h, replication_control.h, reassignment.h, rebalance_planner.h,
// autobalancer.h, producer_ids.h, internal_topics.h); this class carries them out: the RPCs other
// brokers send the controller (BrokerHeartbeat, AlterPartition, AllocateProducerIds), the commits
// of the records the decisions return, the probes of brokers that may be gone, the ticks, and the
// in-flight flags and timers of those small state machines. Its files:
//   membership.cc          heartbeats answered, fencing, probes, duplicate registrations (KIP-631)
//   replication_control.cc AlterPartition (KIP-497/841), preferred elections, the leader rebalance
//                          tick, this broker's stale leaderships renewed
//   reassignments.cc       partition reassignments (KIP-455) planned, committed and completed
//   cluster_balance.cc     rebalance, cancel, decommission (issue 33)
//   autobalancer.cc        the partition autobalancer's tick
//   producer_id_blocks.cc  AllocateProducerIds (KIP-730)
//   internal_topics.cc     __consumer_offsets and __transaction_state created; the forwarding secret
// It reaches the broker through the parts it is built with only (active_controller::parts).
// Everything here runs on the controller shard unless a function says otherwise. Private to the
// broker module.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autobalancer.h"
#include "metadata.h"
#include "ringlog/base/clock.h"
#include "ringlog/base/random.h"
#include "ringlog/broker/broker.h"
#include "ringlog/controller/membership.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/controller/reassignment.h"
#include "ringlog/controller/replication_control.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::broker::detail {

class broker_lifecycle;
class metadata_barrier;
class metadata_writer;
class replica_manager;

/// The reassignments under way in `image`, of `topic` or of every topic (empty).
std::vector<partition_reassignment> reassignments_in(const controller::metadata_image& image, const std::string& topic);
/// Every decommission `image` records, with the partitions that still list each broker.
std::vector<broker_decommission> decommissions_in(const controller::metadata_image& image);
/// The cluster's forwarding secret in `image` (broker/users.h's reserved record), empty when it
/// has none yet.
security::bytes forwarding_secret_in(const controller::metadata_image& image);

class active_controller {
 public:
  /// The broker's parts the active controller reaches, each outliving it (some are constructed
  /// after it: none is used before the broker starts).
  struct parts {
    /// The metadata quorum (null until start_quorum made it): its leader is the active controller.
    const std::unique_ptr<controller::metadata_quorum>& quorum;
    const broker_lifecycle& lifecycle;   ///< this process's incarnation and registration
    const replica_manager& replicas;     ///< min.insync.replicas of a topic
    metadata_writer& writer;             ///< commit_records: the decisions' records through the quorum
    metadata_barrier& barrier;           ///< post_caught_up: changes planned against a fresh image
    /// Start-up's waits on the metadata look again (an internal topic's creation ended).
    std::function<void()> recheck_start_up;
  };
  /// `config`: the static broker config (a view's dynamic one replaces it where it has one);
  /// `cluster_transport` null: a single node (no probes, no RPC handlers); `quorum_voters`:
  /// controller.quorum.voters (empty: this node is the only voter). Every reference outlives
  /// this object.
  active_controller(parts reached, const metadata_publisher& metadata, broker_log log,
                    const broker_config& config, const base::clock& clock, runtime::shard_runtime& runtime,
                    rpc::transport* cluster_transport, base::random_source& random,
                    const std::map<int32_t, rpc::peer_address>& quorum_voters, const std::atomic<bool>& stopping);

  /// Before the transport serves: the handlers of BrokerHeartbeat, AlterPartition and
  /// AllocateProducerIds (each posted to the controller shard), and the probe of a broker whose
  /// connection closed.
  void register_cluster_handlers();
  /// The quorum's leader changed: a new active controller gives every broker a full session and
  /// probes them all (the previous controller's process may have died with its broker).
  void on_leader_change(int32_t leader_id);
  /// The controller's part of every heartbeat tick: the autobalancer (every node tracks
  /// unavailable brokers); on the active controller also late brokers probed, lapsed ones fenced,
  /// the leader rebalance, reassignments completed and the internal topics created.
  void heartbeat_tick();

  // membership.cc
  /// The active controller's answer to a heartbeat (fencing, unfencing, controlled shutdown):
  /// not_controller when this node is not it, stale_broker_epoch from broker_heartbeats.
  protocol::broker_heartbeat_response_data controller_heartbeat(const protocol::broker_heartbeat_request_data& request);
  /// Before this node proposes `payload` (a metadata entry, local or forwarded in an envelope by
  /// a peer): it must decode (invalid_request otherwise), a TopicRecord's name must be a legal
  /// topic name (validate_topic_name: invalid_topic_exception), a RemoveTopicRecord must not
  /// remove an internal ("__") topic (invalid_request), and every RegisterBrokerRecord passes
  /// refuse_duplicate_registration.
  /// It also keeps broker.partitions.max across requests: the partitions the entry adds to
  /// topics not named "__..." (a PartitionRecord for an index its topic does not have yet), beside
  /// the image's and those of entries proposed here and not yet applied, must fit, or
  /// invalid_partitions naming the limit. This is the one place every create passes, in the
  /// order the controller proposes them, so a batch or concurrent creates cannot pass it together.
  /// On success: the partitions the entry adds, to pass to reserve_partitions.
  [[nodiscard]] result<int64_t> check_proposed_entry(std::span<const std::byte> payload);
  /// Before proposing an entry that adds `partitions` (check_proposed_entry): they count against
  /// broker.partitions.max until settle_partitions. Returns the reservation's id.
  uint64_t reserve_partitions(int64_t partitions);
  /// broker.partitions.max: `adding` partitions fit beside `image`'s and the reservations (those
  /// `image` has applied dropped first). Returns `adding`, or invalid_partitions naming the limit.
  [[nodiscard]] result<int64_t> check_partitions_max(const controller::metadata_image& image, int64_t adding);
  /// The proposal of reservation `id` ended: committed at metadata offset `offset` (kept until
  /// the image has applied it), or failed (-1: released now).
  void settle_partitions(uint64_t id, int64_t offset);
  /// Every RegisterBrokerRecord of `records` is checked by broker_heartbeats::check_registration
  /// (Kafka's ClusterControlManager.registerBroker). Errors: duplicate_broker_registration naming
  /// the broker id and the live incarnation; the live one is probed then (a kill -9'd process is
  /// fenced at once, so its restart is let in on its next try).
  [[nodiscard]] result<void> refuse_duplicate_registration(const std::vector<protocol::metadata_record>& records);

  // replication_control.cc
  /// One partition's AlterPartition (KIP-497), from a peer or this node's own leader; the answer
  /// carries Kafka's error codes (ringlog/protocol/error_codes.h), which the leader's maybe_change_isr reads.
  void alter_partition(protocol::alter_partition_request_data request,
                       std::function<void(protocol::alter_partition_response_data)> done);
  /// admin_api::elect_preferred_leaders (any thread).
  void elect_preferred_leaders(std::vector<std::pair<std::string, int32_t>> partitions,
                               std::function<void(result<std::vector<leader_election_result>>)> done);
  /// Any shard: the image named this node leader in `leader_epoch` while it was not registered
  /// in this incarnation (apply_partition_state); renew_stale_leaderships moves or renews it.
  void note_stale_leadership(std::string topic, int32_t partition, int32_t leader_epoch);
  /// On the heartbeat tick once this process is registered: partitions that named this node
  /// leader before its registration get that leadership moved or renewed in a new epoch
  /// (renew_stale_leadership) - it never leads in an epoch given to its previous life, and the
  /// partition does not stay leaderless.
  void renew_stale_leaderships();

  // reassignments.cc and cluster_balance.cc: broker's calls of the same names (any thread)
  void alter_partition_reassignments(std::vector<partition_reassignment_target> targets,
                                     std::function<void(result<std::vector<partition_reassignment_result>>)> done);
  void rebalance(rebalance_request request, std::function<void(result<rebalance_result>)> done);
  void cancel_reassignments(std::function<void(result<int32_t>)> done);
  void decommission_broker(int32_t node_id, bool cancel, std::function<void(result<broker_decommission>)> done);

  // producer_id_blocks.cc
  /// AllocateProducerIds (KIP-730) from a broker, or this node's own: the next block committed
  /// as a ProducerIdsRecord; not_controller when this node is not the active controller.
  void allocate_producer_ids(const protocol::allocate_producer_ids_request_data& request,
                             std::function<void(protocol::allocate_producer_ids_response_data)> done);

  // internal_topics.cc
  /// Creates __consumer_offsets, then __transaction_state, when this node is the active
  /// controller, they are due and one is not already on its way (which, when and their records:
  /// controller/internal_topics.h). `done(true)` once both exist; false when one is not created
  /// now (not the controller, not due, pending); the creation's error otherwise.
  void ensure_offsets_topic_async(std::function<void(result<bool>)> done);
  /// Commits the cluster's forwarding secret (broker/users.h forwarding_secret_user, 64 random
  /// bytes) when this node is the active controller and the image has none; one commit at a
  /// time, tried again on the next heartbeat tick when it fails.
  void ensure_forwarding_secret();

  /// The metadata quorum's leader, the active controller (-1: none known).
  [[nodiscard]] int32_t controller_id() const { return parts_.quorum ? parts_.quorum->leader_id() : -1; }
  /// Reassignments the autobalancer started, by reason (any thread).
  [[nodiscard]] autobalancer_figures autobalancer_moves() const { return autobalancer_.figures(); }

 private:
  /// This node is the active controller and its image holds every committed record
  /// (metadata_quorum::leader_caught_up): a new quorum leader decides nothing (heartbeats,
  /// fencing, ISR changes, producer id blocks) from an image its predecessor's last records are
  /// still missing from; brokers hear NOT_CONTROLLER meanwhile and retry.
  [[nodiscard]] bool active() const {
    return controller_id() == config_.node_id && parts_.quorum->leader_caught_up();
  }
  /// The broker config of the controller's view (its dynamic broker configs applied).
  [[nodiscard]] const broker_config& live_config() const;
  void handle_broker_heartbeat(const protocol::request_header_data& header, std::vector<std::byte> body,
                               rpc::respond_fn respond);
  void handle_alter_partition(const protocol::request_header_data& header, std::vector<std::byte> body,
                              rpc::respond_fn respond);
  void handle_allocate_producer_ids(const protocol::request_header_data& header, std::vector<std::byte> body,
                                    rpc::respond_fn respond);
  /// The rules fencing and registrations follow (controller/membership.h).
  [[nodiscard]] controller::fencing_rules fencing_rules_now() const;
  /// Fences brokers whose session lapsed (no heartbeat for broker.session.timeout.ms) or whose
  /// process is known gone (probe_broker found its cluster listener refusing connections after
  /// its last heartbeat), one commit at a time.
  void fence_lapsed_brokers();
  /// Asks whether broker `id` still listens (an ApiVersions over a fresh connection,
  /// rpc::probe_listening). Started when a connection from `id` closes, when `id` is a heartbeat
  /// late, and for every broker when this node becomes the controller; a refusal fences `id` at
  /// once instead of after its session timeout (a kill -9 takes a round trip, not
  /// broker.session.timeout.ms). A timeout proves nothing (a paused or cut-off broker answers
  /// nothing either): such a broker keeps its session. One probe per broker at a time.
  void probe_broker(int32_t id);
  /// Every leader.imbalance.check.interval.seconds with auto.leader.rebalance.enable: gives the
  /// leaderships of imbalanced brokers back to them.
  void rebalance_leaders_tick();
  /// elect_preferred_leaders, planned anew from the newest image on each of `attempts_left` tries.
  void elect_preferred_leaders_attempt(std::vector<std::pair<std::string, int32_t>> partitions,
                                       std::function<void(result<std::vector<leader_election_result>>)> done,
                                       int attempts_left);
  /// alter_partition_reassignments, planned anew from the newest image on each of `attempts_left` tries.
  void alter_partition_reassignments_attempt(
      std::vector<partition_reassignment_target> targets,
      std::function<void(result<std::vector<partition_reassignment_result>>)> done, int attempts_left);
  /// Step 3 of reassignment.h for every reassignment whose completion barrier allows it.
  void complete_reassignments_tick();
  [[nodiscard]] controller::rebalance_options rebalance_options_for(double tolerance, bool drain_only) const;
  [[nodiscard]] std::optional<error> decommission_refusal(const controller::metadata_image& image, int32_t node_id) const;
  void cancel_decommission(int32_t node_id, std::function<void(result<broker_decommission>)> done);
  void drain_decommissioning(std::function<void()> then);   // plans and starts the drains
  void decommission_tick();   // finishes drained decommissions, drains again
  void autobalancer_tick();   // every node: unavailability; the active controller: decommissions, moves

  parts parts_;
  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  const broker_log log_;
  const broker_config& config_;
  const base::clock& clock_;
  runtime::shard_runtime& runtime_;
  rpc::transport* cluster_transport_;
  base::random_source& random_;
  const std::map<int32_t, rpc::peer_address>& quorum_voters_;
  const std::atomic<bool>& stopping_;

  // ---- controller shard only
  int32_t quorum_leader_id_ = -1;            // as on_leader_change last heard it
  int64_t controller_active_since_ms_ = 0;   // when this node last became the active controller (clock_.monotonic_ms)
  broker_heartbeats broker_heartbeats_;      // brokers' sessions (controller/membership.h)
  bool fencing_in_flight_ = false;
  std::set<int32_t> probes_in_flight_;       // probe_broker: brokers being asked now
  /// (topic, partition) -> the leader epoch in which the image named this node leader while it
  /// was not registered in this incarnation (renew_stale_leaderships).
  controller::stale_leadership_map stale_leaderships_;
  bool renewing_leaderships_ = false;
  int64_t leader_rebalance_checked_ms_ = 0;  // rebalance_leaders_tick: the last check
  bool leader_rebalance_in_flight_ = false;
  bool decommission_in_flight_ = false;      // decommission_tick: a commit or drain of it under way
  bool offsets_topic_pending_ = false;       // ensure_offsets_topic_async: a creation under way
  bool forwarding_secret_pending_ = false;   // ensure_forwarding_secret: a commit under way
  /// Partitions of entries proposed here and not yet in the controller shard's image (reserve_
  /// partitions): id -> (partitions, committed offset or -1 while in flight). One per proposal in
  /// flight or committed and not yet applied, so bounded by the quorum's uncommitted limit.
  struct partition_reservation {
    int64_t partitions = 0;
    int64_t offset = -1;
  };
  std::map<uint64_t, partition_reservation> partition_reservations_;
  uint64_t next_partition_reservation_ = 0;
  completion_barrier completion_barrier_;    // who applied which metadata (reassignment.h)
  producer_id_control producer_id_control_;  // the blocks proposed (controller/producer_ids.h)
  autobalancer autobalancer_;                // the partition autobalancer's state (autobalancer.h)
  /// Timers and transport answers hold a weak reference: one that comes after this object is
  /// gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
};

}  // namespace ringlog::broker::detail
