#pragma once
// The broker's side of partition replication (a class of its own since issue 28; replication.cc;
// design.md section 6; Kafka's ReplicaManager where it drives followers and ISR changes). The
// fetch loops, the leader's side of followers' fetches and the ISR proposals are the partition
// module's (ringlog/partition/replica_fetcher.h); replica_manager is what they and the rest of
// the partition module reach above them:
//   - leadership_observer: the group and transaction coordinators and the delay schedulers move
//     with the leaderships (on_leadership_change);
//   - replica_host: what applying a partition's image to its replica reaches (registration,
//     controlled shutdown; the fetch loops it reaches directly: replica_services::fetcher);
//   - replica_fetcher_host: the replicas on each shard, the image, the follower throttle, and the
//     controller client of the leader's ISR changes (send_alter_partition: AlterPartition to the
//     active controller, this node's own or a peer's; KIP-497);
//   - replica_services: what every shard's replicas reach (partition_manager.h).
// It reaches the other parts (the lifecycle and the quorum among them) through the references it
// is given; never through the broker's composition. Private to the broker module.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "metadata_publisher.h"
#include "partition.h"
#include "quota_managers.h"
#include "ringlog/broker/broker.h"
#include "ringlog/partition/partition_manager.h"

namespace ringlog::broker {
class group_service;
class txn_service;
}  // namespace ringlog::broker

namespace ringlog::broker::detail {

class active_controller;
class broker_lifecycle;
class delay_host;

class replica_manager final : public leadership_observer, public replica_host, public replica_fetcher_host {
 public:
  /// The broker's parts replication reaches, each outliving this object (some are constructed
  /// after it: none is used before the broker is built).
  struct parts {
    const metadata_publisher& publisher;   ///< the metadata views
    /// Each shard's replicas; partition_managers[i] is touched only on shard i's thread.
    const std::vector<std::unique_ptr<partition_manager>>& partition_managers;
    /// KIP-73's buckets: the leader's for the replicas (services), the follower's for the fetcher.
    replication_throttles& throttles;
    active_controller& controller;      ///< AlterPartition on this node, stale leaderships
    replica_fetcher& fetcher;           ///< the follower's fetch loops
    delay_host& delays;                 ///< the delay schedulers, on their partition's leader
    /// The coordinators once started (null before, and on a dedicated controller).
    const std::atomic<group_service*>& groups_started;
    const std::atomic<txn_service*>& txns_started;
    /// This process's incarnation and its controlled shutdown (broker_lifecycle.h).
    const broker_lifecycle& lifecycle;
    /// The metadata quorum (null until start_quorum made it): its leader, the active controller.
    const std::unique_ptr<controller::metadata_quorum>& quorum;
  };
  /// `config`: the static broker config (node.id, min.insync.replicas and the throttles before
  /// the dynamic ones apply); `deps`: the runtime, cluster transport (null on a single node) and log.
  replica_manager(const broker_config& config, const broker_dependencies& deps, parts reached);

  /// The settings of the replica fetcher and the leader's side from the static config.
  static replica_fetch_settings replica_fetch_settings_of(const broker_config& config);
  /// What every shard's partitions reach in the broker (partition_manager.h): the throttles,
  /// `leadership_lease_until_ms` (the lease's end, clock ms), the read and verification ids,
  /// min.insync.replicas, and this object as their observer and host.
  replica_services services(const std::atomic<int64_t>& leadership_lease_until_ms, std::atomic<uint64_t>& next_read_id,
                            std::atomic<uint64_t>& next_txn_verification);
  /// min.insync.replicas of `topic` (its config, else the broker's) as of the calling thread's view.
  [[nodiscard]] int32_t min_insync_replicas(const std::string& topic) const;

  /// leadership_observer: the groups of __consumer_offsets, the transaction coordinators of
  /// __transaction_state and the delay schedulers follow the partition's leader.
  void on_leadership_change(size_t shard, const std::shared_ptr<partition_runtime>& rt, bool leads) override;
  // replica_host: what partition_manager::apply_partition_state reaches here
  [[nodiscard]] bool registered_in_this_incarnation() const override;
  void note_stale_leadership(const partition_runtime& rt, int32_t leader_epoch) override;
  [[nodiscard]] bool controlled_shutdown_done() const override;
  // replica_fetcher_host: what the replica fetcher and the leader's side reach here
  std::shared_ptr<partition_runtime> replica_on_shard(size_t shard, const std::string& topic,
                                                      int32_t partition) override;
  void for_each_replica(size_t shard, const std::function<void(const std::shared_ptr<partition_runtime>&)>& f) override;
  [[nodiscard]] size_t replica_shard(const std::string& topic, int32_t partition) const override;
  [[nodiscard]] std::shared_ptr<const controller::metadata_image> replication_image() const override;
  [[nodiscard]] int64_t follower_replication_throttled_rate() const override;
  int64_t acquire_follower_throttle(int64_t rate, int64_t now_ms) override;
  void record_follower_throttle(int64_t bytes, int64_t rate, int64_t now_ms) override;
  void send_alter_partition(protocol::alter_partition_request_data request,
                            std::function<void(int16_t code, std::string why)> on_answer) override;
  void log_info(const std::string& message) const override;
  void log_error(const std::string& message) const override;

 private:
  /// The metadata this thread may read: its shard's view, or the latest outside the shards.
  [[nodiscard]] std::shared_ptr<const metadata_view> view() const { return parts_.publisher.view(); }
  /// The broker config of `v` with its dynamic broker configs applied (the static one before start).
  [[nodiscard]] const broker_config& live(const metadata_view& v) const { return live_config(v, config_); }

  const broker_config& config_;
  const broker_dependencies& deps_;
  const parts parts_;
};

}  // namespace ringlog::broker::detail
