#pragma once
// The broker's composition (Kafka's BrokerServer): which parts exist, in construction order, how
// they are wired, how they start (start_up.cc) and stop (broker.cc). broker_impl (broker_impl.h)
// is the broker API's facade over it; docs/architecture.md's broker section says which part holds
// what. The host interfaces the parts reach the broker through are answered here, each by one
// call into another part. Private to the broker module.

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "active_controller.h"
#include "admin_manager.h"
#include "broker_lifecycle.h"
#include "cluster_requests.h"
#include "constants.h"
#include "coordinator_partitions.h"
#include "delay_host.h"
#include "fetch_service.h"
#include "group_service.h"
#include "leader_forwarder.h"
#include "metadata.h"
#include "metadata_barrier.h"
#include "metadata_publisher.h"
#include "partition.h"
#include "partition_transactions.h"
#include "produce_pipeline.h"
#include "producer_ids.h"
#include "quota_managers.h"
#include "record_deletion.h"
#include "replica_manager.h"
#include "security_manager.h"
#include "txn_service.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"
#include "ringlog/storage/meta_properties.h"
#include "ringlog/broker/broker.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/partition/partition_manager.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::broker::detail {

class broker_impl;

class broker_parts final : public metadata_publisher_host {
 public:
  /// `api`: the broker API over these parts (broker_impl), which the group and transaction
  /// services call; not used before start.
  broker_parts(broker& api, broker_config config, broker_dependencies deps)
      : api_(api),
        config_(std::move(config)),
        deps_(std::move(deps)),
        compaction_({.enabled = config_.log_cleaner_enable,
                     .dedupe_buffer_size = config_.log_cleaner_dedupe_buffer_size,
                     .io_max_bytes_per_second = config_.log_cleaner_io_max_bytes_per_second},
                    deps_.runtime.shard_count()) {
    const partition_manager::maintenance_settings maintenance{
        .tick_ms = std::min({constants::maintenance_interval_ms, config_.log_retention_check_interval_ms,
                             config_.log_cleaner_backoff_ms}),
        .retention_check_interval_ms = config_.log_retention_check_interval_ms};
    const auto services =
        replication_.services(lifecycle_.leadership_lease_end(), fetch_.next_read_id(), partition_txns_.next_txn_verification());
    for (size_t shard = 0; shard < deps_.runtime.shard_count(); ++shard) {
      partition_managers_.push_back(std::make_unique<partition_manager>(
          shard, deps_.runtime, deps_.clock, stopping_, compaction_, maintenance, services,
          log_directory{.fs = deps_.fs, .path = config_.log_dir, .log = deps_.log, .failures = deps_.log_dir_failures,
                        .segment_budget = deps_.segment_budget}));
    }
  }
  broker_parts(const broker_parts&) = delete;
  broker_parts& operator=(const broker_parts&) = delete;
  /// Dropped without shutdown() (a crash in tests, a failed start): the quorum still stops first.
  ~broker_parts() override {
    if (quorum_) quorum_->stop();
  }

  /// Starts the broker (Kafka's BrokerServer.startup): a chain of continuations on the controller
  /// shard, each step's completion posting the next (start_up.cc); `done` runs once, on the
  /// controller shard, with the first step's error or ok once the broker serves. Nothing blocks.
  void start_async(std::function<void(result<void>)> done);
  /// After a failed start: stops the quorum (it must stop before it is destroyed).
  void abandon() {
    stopping_ = true;
    if (quorum_) quorum_->stop();
  }
  /// broker::begin_shutdown and broker::shutdown (broker.cc).
  void begin_shutdown();
  void shutdown(std::function<void()> done);

 private:
  friend class broker_impl;   // the facade calls into the parts

  /// The metadata this thread may read: its shard's view, or the latest outside the shards.
  std::shared_ptr<const metadata_view> view() const { return publisher_.view(); }
  /// The broker config of `v` with its dynamic broker configs applied (the static one before start).
  const broker_config& live(const metadata_view& v) const { return live_config(v, config_); }

  // Start-up steps on the controller shard, retried on runtime timers up to `deadline_ms` (clock
  // ms; stage F: no thread sleeps); `done` once, there. Errors: not_controller (timed out).
  /// The quorum has a leader and this node applied and published every entry below its HW.
  void catch_up_with_metadata(int64_t deadline_ms, std::function<void(result<void>)> done);
  /// __consumer_offsets, __transaction_state and the cluster's forwarding secret are in this node's image.
  void await_internal_topics(int64_t deadline_ms, std::function<void(result<void>)> done);
  /// Runs `again` once: on the next applied entry or leader change, or after start_up_poll_ms,
  /// whichever is first (a simulated clock may stand still while the quorum commits).
  void recheck_on_metadata(std::function<void()> again);
  void run_metadata_rechecks() override;
  std::vector<std::shared_ptr<std::function<void()>>> metadata_rechecks_;   // controller shard; empty = ran
  // start_async's steps, in order, each on the controller shard.
  /// The log directory checked, the metadata quorum started, the cluster transport serving.
  result<void> start_quorum();
  /// start_quorum's check of meta.properties: the file it writes once caught up (a directory
  /// without one where other voters exist), nullopt when it is there or was written now (a lone
  /// voter). Errors: invalid_config when the file names another cluster.id or node.id.
  result<std::optional<storage::meta_properties>> check_data_directory();
  bool meta_properties_pending_ = false;   // controller shard: check_data_directory set one
  using waiting_step = std::function<void(int64_t, std::function<void(result<void>)>)>;
  /// Runs a waiting step given metadata_catch_up_timeout_ms from now.
  void run_start_step(waiting_step step, std::function<void(result<void>)> done);
  void start_opening_partitions(std::function<void(result<void>)> done);
  void start_registering(std::function<void(result<void>)> done);
  void start_coordinators(std::function<void(result<void>)> done);
  /// Handlers of requests from other nodes (on the cluster listener), before it serves.
  void register_cluster_handlers();
  // metadata_publisher_host: the broker's view, records and configs (metadata_publisher.cc), and
  // the observers.
  [[nodiscard]] std::shared_ptr<const metadata_view> make_view(
      const metadata_view& previous, std::shared_ptr<const controller::metadata_image> image) const override;
  [[nodiscard]] result<std::vector<protocol::metadata_record>> metadata_records(
      const controller::metadata_image& image, const model::record& record) const override;
  [[nodiscard]] result<storage::log_config> log_config(const metadata_view& view,
                                                       const controller::topic_image& topic) const override;
  [[nodiscard]] bool topic_defaults_changed(const metadata_view& before, const metadata_view& after) const override;
  [[nodiscard]] bool acls_changed(const metadata_view& before, const metadata_view& after) const override;
  void on_metadata_leader_change(int32_t leader_id) override { controller_.on_leader_change(leader_id); }
  void on_view_published(const metadata_view& view) override { forwarder_.fail_moved_forwards(view); }
  void on_topic_deleted(const std::string& topic) override {
    if (groups_) groups_->topic_deleted(topic);   // none on a dedicated controller
  }
  void on_topics_changed() override {
    if (groups_) groups_->topics_changed();
  }

  broker& api_;   // the facade: the group and transaction services' broker API
  broker_config config_;
  replication_throttles replication_throttles_;   // quota_managers.h: the replication throttles (KIP-73)
  broker_dependencies deps_;
  /// Leaderships, the replica host of every shard's partitions, the replica fetcher's host and the
  /// controller client of ISR changes (replica_manager.h); before the partition managers, which
  /// hold its services.
  replica_manager replication_{
      config_, deps_,
      {.publisher = publisher_, .partition_managers = partition_managers_, .throttles = replication_throttles_,
       .controller = controller_, .fetcher = replica_fetcher_, .delays = delay_host_, .groups_started = groups_started_,
       .txns_started = txns_started_, .lifecycle = lifecycle_, .quorum = quorum_}};
  /// Each shard's replicas, their directories, parked fetches' deadlines and kept reads
  /// (partition_manager.h); partition_managers_[i] is touched only on shard i's thread.
  std::vector<std::unique_ptr<partition_manager>> partition_managers_;
  compaction compaction_;                   // the log cleaner of each shard
  /// The metadata quorum's state machine: the views and the replicas following the applied
  /// entries (metadata_publisher.h).
  metadata_publisher publisher_{*this,
                                deps_.log,
                                deps_.runtime,
                                config_.node_id,
                                partition_managers_,
                                log_directory{.fs = deps_.fs, .path = config_.log_dir, .log = deps_.log},
                                deps_.cluster_transport,
                                [this](int32_t id) { return deps_.controller_quorum_voters.contains(id); }};
  std::unique_ptr<controller::metadata_quorum> quorum_;   // after start()
  /// Timers hold a weak reference: one that fires after the broker is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
  std::atomic<bool> stopping_{false};
  /// The partition side of transactions: markers, KIP-890 verification, DescribeProducers
  /// (partition_transactions.h). It holds references to groups_started_ and txns_started_ below
  /// and reads them only once they are set; before coordinator_partitions_, which passes it the
  /// coordinators' markers.
  partition_transactions partition_txns_{publisher_, broker_log(deps_.log), config_.node_id, deps_.runtime,
                                         deps_.cluster_transport, partition_managers_, stopping_, groups_started_,
                                         txns_started_};
  /// DeleteRecords on the partitions this node leads (record_deletion.h).
  record_deletion record_deletion_{publisher_, config_.node_id, deps_.clock, deps_.runtime, partition_managers_,
                                   stopping_};
  /// The group and transaction services' host: their internal topics' appends, reads and
  /// leaders (coordinator_partitions.h); before the services, so it outlives them.
  coordinator_partitions coordinator_partitions_{writer_, publisher_, broker_log(deps_.log),
                                                 partition_txns_, config_.node_id, deps_.runtime, deps_.random,
                                                 partition_managers_};
  /// Fetches and list offsets (fetch_service.h).
  fetch_service fetch_{publisher_, admin_, forwarder_, deps_.runtime, partition_managers_, config_.node_id, stopping_};
  std::unique_ptr<group_service> groups_;  // after start()
  /// groups_ once started, for the shards (a leadership of __consumer_offsets moves its groups).
  std::atomic<group_service*> groups_started_{nullptr};
  std::unique_ptr<txn_service> txns_;   // after start()
  /// txns_ once started, for the shards (a leadership of __transaction_state moves its coordinator).
  std::atomic<txn_service*> txns_started_{nullptr};
  /// The produce pipeline and the produces parked behind a topic's auto-creation
  /// (produce_pipeline.h); it reaches the parts declared after it only once serving.
  produce_pipeline produce_{publisher_, config_, deps_.clock, deps_.runtime, partition_managers_,
                            forwarder_, barrier_, delay_host_, security_, admin_,
                            partition_txns_, producer_ids_, txns_, stopping_};
  /// Replication (ringlog/partition/replica_fetcher.h): the leader's side of followers' fetches and
  /// its ISR changes, and the follower's fetch loops; last, so they go first.
  replica_fetch_server replica_fetch_server_{replication_, replica_manager::replica_fetch_settings_of(config_),
                                             deps_.clock, deps_.runtime, deps_.cluster_transport, stopping_};
  replica_fetcher replica_fetcher_{replication_, replica_manager::replica_fetch_settings_of(config_), deps_.clock,
                                   deps_.runtime, deps_.cluster_transport, stopping_, replica_fetch_server_};
  /// Calls passed on to partitions' leaders and peers' calls served here (leader_forwarder.h).
  leader_forwarder forwarder_{publisher_, produce_, fetch_, config_, deps_.clock, deps_.runtime,
                              deps_.cluster_transport, stopping_};
  /// The admin calls' wait for the quorum's committed metadata (metadata_barrier.h).
  metadata_barrier barrier_{quorum_, publisher_, produce_, fetch_, deps_.runtime, deps_.cluster_transport,
                            config_.node_id};
  /// The delayed-delivery host: the produce side's delay topics and the schedulers of the delay
  /// partitions this node leads (delay_host.h).
  delay_host delay_host_{publisher_, broker_log(deps_.log), barrier_, produce_,
                         coordinator_partitions_, replication_, config_, deps_.runtime, deps_.clock, config_.node_id,
                         stopping_};
  /// The active controller's RPCs, commits, ticks and in-flight state (active_controller.h).
  active_controller controller_{{.quorum = quorum_,
                                 .lifecycle = lifecycle_,
                                 .replicas = replication_,
                                 .writer = writer_,
                                 .barrier = barrier_,
                                 .recheck_start_up = [this] { run_metadata_rechecks(); }},
                                publisher_,
                                broker_log(deps_.log),
                                config_,
                                deps_.clock,
                                deps_.runtime,
                                deps_.cluster_transport,
                                deps_.random,
                                deps_.controller_quorum_voters,
                                stopping_};
  /// Users, ACLs and client quotas: the security facet (security_manager.h).
  security_manager security_{writer_, barrier_, publisher_, broker_log(deps_.log), config_, deps_.clock,
                             deps_.runtime, deps_.random, stopping_};
  /// Topics, the cluster, broker configs and placement calls: the admin facet (admin_manager.h).
  admin_manager admin_{quorum_, lifecycle_, writer_, barrier_, publisher_, config_, deps_, controller_, stopping_};
  /// This broker's block of producer ids from the active controller (producer_ids.h).
  producer_id_manager producer_ids_{config_.node_id, controller_, deps_.runtime, deps_.cluster_transport, stopping_};
  /// The metadata writes through the quorum, forwarded in an Envelope when another node leads
  /// it, and the Envelope handler of the active controller (cluster_requests.h).
  metadata_writer writer_{config_, deps_.runtime, deps_.cluster_transport, quorum_, publisher_, controller_};
  /// The cluster listener's Fetch, shared by the quorum, followers and forwarded fetches (cluster_requests.h).
  cluster_fetch_router fetch_router_{deps_.cluster_transport, forwarder_, replica_fetch_server_};
  /// Registration, heartbeats, the leadership lease and the controlled shutdown (broker_lifecycle.h).
  broker_lifecycle lifecycle_{[this](std::function<void()> again) { recheck_on_metadata(std::move(again)); },
                              broker_log(deps_.log),
                              config_,
                              deps_,
                              quorum_,
                              publisher_,
                              writer_,
                              controller_,
                              stopping_};
};

}  // namespace ringlog::broker::detail
