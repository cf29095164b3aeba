#pragma once
// The metadata publisher (issue 28 stage D; Kafka's MetadataLoader + BrokerMetadataPublisher, the
// replica side of ReplicaManager.applyDelta): the metadata quorum's state machine on this node.
// Each committed entry is checked and applied to the controller shard's view, then, one entry at
// a time in offset order (metadata_apply_queue), the new view is published to every shard
// (shard_views) and this node's replicas follow it: opened, dropped, reconfigured, their leader,
// ISR and epoch applied (partition_manager::apply_partition_state).
//
// A template over the view, as shard_views is: the partition module publishes what the broker
// reads (the broker's metadata_view, with its dynamic configs, ACL and quota indexes) without
// seeing those fields, and never includes ringlog/broker, group, txn or delay (tests/layering).
// `View` is default-constructible (the empty metadata before the first entry) and has
//   std::shared_ptr<const controller::metadata_image> image;
//   a map `topics`: topic name -> std::shared_ptr<const topic_state> (topic_state.h), ordered.
// What only the broker knows (building its view, reading a metadata-log record, a topic's log
// config over the broker's defaults) it answers through metadata_publisher_host<View>.
// The member definitions are metadata_publisher_impl.h's; the broker instantiates the class once
// for its view (src/broker/metadata_publisher.cc). Everything here runs on the controller shard
// unless a function says otherwise.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/base/assert.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/model/record.h"
#include "ringlog/partition/constants.h"
#include "ringlog/partition/errc.h"
#include "ringlog/partition/metadata_apply_queue.h"
#include "ringlog/partition/partition_manager.h"
#include "ringlog/partition/shard_views.h"
#include "ringlog/partition/topic_state.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/storage/log_config.h"

namespace ringlog::partition {

/// What the metadata publisher reaches above the partition module (the broker implements it,
/// broker_parts): the views it builds and the records and configs it reads, and the observers
/// of what it applied.
template <class View>
class metadata_publisher_host {
 public:
  virtual ~metadata_publisher_host() = default;
  /// The view after `image`: shares every topic_state of `previous` whose topic image is unchanged
  /// (topic_state.h: the partitions' stats stay), the rest as the view's owner builds it.
  [[nodiscard]] virtual std::shared_ptr<const View> make_view(
      const View& previous, std::shared_ptr<const controller::metadata_image> image) const = 0;
  /// The metadata records one record of the metadata log stands for, read against `image` (the
  /// image before it). Errors: invalid_request naming the bad field or record.
  [[nodiscard]] virtual result<std::vector<protocol::metadata_record>> metadata_records(
      const controller::metadata_image& image, const model::record& record) const = 0;
  /// The log config of `topic`'s partitions as of `view`: its configs over the topic defaults
  /// `view` has. Errors: invalid_config naming a config out of its bounds.
  [[nodiscard]] virtual result<storage::log_config> log_config(const View& view,
                                                               const controller::topic_image& topic) const = 0;
  /// The topic defaults differ from `before` to `after` (KIP-226 dynamic broker configs): every
  /// topic's replicas take their new log config.
  [[nodiscard]] virtual bool topic_defaults_changed(const View& before, const View& after) const = 0;
  /// The ACLs differ from `before` to `after` (issue 30: they change what patterns may match, so
  /// on_topics_changed runs).
  [[nodiscard]] virtual bool acls_changed(const View& before, const View& after) const = 0;
  /// An entry applied or the quorum's leader changed: start-up steps waiting on the metadata
  /// look again.
  virtual void run_metadata_rechecks() = 0;
  /// The quorum's known leader changed (-1: none known now): the active controller's side follows.
  virtual void on_metadata_leader_change(int32_t leader_id) = 0;
  /// `view` is on every shard, before the replicas follow it (calls forwarded to a leader that
  /// `view` no longer names may fail now).
  virtual void on_view_published(const View& view) = 0;
  /// `topic` was deleted (the group service's committed offsets go with it); the set of topics or
  /// the ACLs changed (pattern subscriptions match again). Run in order with the replicas' steps.
  virtual void on_topic_deleted(const std::string& topic) = 0;
  virtual void on_topics_changed() = 0;
};

template <class View>
class metadata_publisher final : public controller::quorum_state_machine {
 public:
  using topic_ptr = std::shared_ptr<const topic_state>;
  /// `node_id`: this node (a replica of the partitions that list it); `managers[i]`: shard i's
  /// replicas (touched only on shard i); `dir`: log.dirs, for the stray replicas removed at
  /// start-up; `log`: info or error lines (may be empty); `cluster_transport` (null in a single
  /// process) learns the brokers' "cluster" endpoints unless `is_voter(id)` (a voter's address is
  /// controller.quorum.voters'). Every reference outlives this.
  metadata_publisher(metadata_publisher_host<View>& host, std::function<void(bool info, const std::string&)> log,
                     runtime::shard_runtime& runtime, int32_t node_id,
                     const std::vector<std::unique_ptr<partition_manager>>& managers, log_directory dir,
                     rpc::transport* cluster_transport, std::function<bool(int32_t)> is_voter)
      : host_(host),
        log_(std::move(log)),
        runtime_(runtime),
        node_id_(node_id),
        managers_(managers),
        dir_(std::move(dir)),
        cluster_transport_(cluster_transport),
        is_voter_(std::move(is_voter)) {}

  // quorum_state_machine (the apply side), on the controller shard.
  /// Each entry's records applied as a whole to the controller view, or refused as a whole
  /// (apply_queue().entry_failed: invalid_request naming the offset), the same on every node.
  void apply(std::span<const controller::committed_entry> entries) override;
  std::vector<uint8_t> snapshot() override;
  /// A snapshot that does not decode is a bug (the quorum checked its CRC): asserts.
  void load_snapshot(std::span<const uint8_t> payload, int64_t end_offset) override;
  void applied_through(int64_t end_offset) override;
  void on_leader_change(int32_t leader_id, int32_t epoch) override;

  /// Start-up, once this node caught up with the quorum: removes stray replica directories, opens
  /// every partition this node holds as of the controller view, one topic after another, and from
  /// then on reconciles every applied entry. `done` once that job ran: ok or the first failure
  /// (the topics after it are not opened); possibly on another shard.
  void open_all_partitions(std::function<void(result<void>)> done);

  /// The metadata the calling thread may read: its shard's view, or the latest outside the shards.
  [[nodiscard]] std::shared_ptr<const View> view() const { return views_.current(); }
  [[nodiscard]] const shard_views<View>& views() const { return views_; }
  /// Controller shard: the view as of the last applied entry, ahead of the shards' while a
  /// publish is on its way; replaced, never changed.
  [[nodiscard]] const std::shared_ptr<const View>& controller_view() const { return controller_view_; }
  /// The topic `name` as of the calling thread's view (view()), or null.
  [[nodiscard]] topic_ptr find_topic(const std::string& name) const {
    auto v = view();
    auto it = v->topics.find(name);
    return it == v->topics.end() ? nullptr : it->second;
  }
  /// Controller shard: the topic `name` as of the last applied entry, or null.
  [[nodiscard]] topic_ptr controller_find_topic(const std::string& name) const {
    RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
    auto it = controller_view_->topics.find(name);
    return it == controller_view_->topics.end() ? nullptr : it->second;
  }
  /// The applied entries' order and the writers waiting for theirs (await_applied).
  [[nodiscard]] metadata_apply_queue& apply_queue() { return apply_queue_; }

 private:
  /// One applied entry's publication and reconciliation, in offset order.
  struct apply_job {
    std::shared_ptr<const View> before;
    std::shared_ptr<const View> after;
    std::vector<std::string> touched;   // the topics the entry changed, added or removed
    int64_t offset = 0;
    bool reconcile = false;   // false before start-up opened the partitions (they are opened then)
    bool open_all = false;    // start-up: open every partition of `after` this node holds
  };
  // The apply side.
  /// Makes `after` (the view after entry `offset`, which touched `touched`) the controller view
  /// and queues its job.
  void advance(std::shared_ptr<const View> after, std::vector<std::string> touched, int64_t offset);
  /// Queues `job` in apply_queue_ (run_apply_job when its turn comes); `then`, when set, hears
  /// its outcome.
  void enqueue_apply_job(apply_job job, std::function<void(result<void>)> then = {});
  /// Publishes `job`'s view, then reconciles the replicas (or opens them all at start-up);
  /// `finish` on the controller shard.
  void run_apply_job(const std::shared_ptr<apply_job>& job, std::function<void(result<void>)> finish);
  /// Start-up's job: stray replicas removed, then every topic's partitions opened in order.
  void open_every_partition(const View& view, std::function<void(result<void>)> finish);
  /// Tells the cluster transport every registered broker's "cluster" endpoint (a broker-only node
  /// is in no config: its registration is the only place its address is known).
  void learn_peer_addresses(const controller::metadata_image& image);

  // The reconcile side.
  /// Brings the shards' replicas in line with the topics named in `touched` after `before`: one
  /// step per change, run in order; `done` with ok or the first failure after all ran.
  void reconcile(const View& before, const std::shared_ptr<const View>& after, const std::vector<std::string>& touched,
                 std::function<void(result<void>)> done);
  /// The steps for topic `name` (in neither, either or both views); sets `changed` when the set
  /// of topics changed (deleted, re-created, grown).
  void add_topic_steps(const View& before, const std::shared_ptr<const View>& after, const std::string& name,
                       std::vector<ordered_step>& steps, bool& changed);
  /// Partitions [0, count) of both states whose image changed: a reassignment (KIP-455) that
  /// removed this node drops its replica, a leader, ISR or epoch change applies to the replica
  /// here. Returns the partitions that now list this node and did not.
  std::vector<int32_t> apply_partition_changes(const topic_state& was, const topic_state& now, int32_t count);
  /// Sets the log config of `topic`'s partitions [0, count) here to its configs over the topic
  /// defaults of `as_of`.
  ordered_step reconfigure(topic_ptr topic, std::shared_ptr<const View> as_of, int32_t count);
  /// Closes the replicas of `topic`'s `count` partitions on their shards and deletes their logs.
  void remove_partitions(const std::string& topic, int32_t count, std::function<void(result<void>)> done);
  /// Opens `held` (partitions of `topic` that list this node as a replica) on their shards.
  void open_held_partitions(const topic_ptr& topic, std::vector<int32_t> held, bool fresh,
                            std::function<void(result<void>)> done);
  /// Opens partitions [from, count) of `topic` that list this node as a replica.
  void open_partitions(const topic_ptr& topic, int32_t from, bool fresh, std::function<void(result<void>)> done);
  [[nodiscard]] size_t owner(const std::string& topic, int32_t partition) const {
    return shard_of(topic, partition, managers_.size());
  }

  metadata_publisher_host<View>& host_;
  const std::function<void(bool info, const std::string&)> log_;
  runtime::shard_runtime& runtime_;
  const int32_t node_id_;
  const std::vector<std::unique_ptr<partition_manager>>& managers_;
  const log_directory dir_;
  rpc::transport* const cluster_transport_;
  const std::function<bool(int32_t)> is_voter_;
  /// The metadata as of the last applied entry, each shard's own copy (shard_views.h). Changed
  /// only here, which publishes to every shard before an admin call is answered, so a client that
  /// saw its change answered finds it on every shard.
  shard_views<View> views_{runtime_, controller_shard};
  /// The controller shard's own view: metadata changes are checked and applied against it, one
  /// after another.
  std::shared_ptr<const View> controller_view_ = std::make_shared<const View>();
  metadata_apply_queue apply_queue_{runtime_, controller_shard, node_id_};
  bool partitions_open_ = false;   // start-up opened the partitions: later entries reconcile
};

}  // namespace ringlog::partition
