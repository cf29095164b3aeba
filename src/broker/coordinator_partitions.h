#pragma once
// The coordinators' internal topics (a class of its own since issue 28; own_records.cc has the
// code): the host of the group and transaction services (group_host, txn_host), which append
// their records to and replay them from __consumer_offsets and __transaction_state on the
// partition's shard (produce from outside refuses internal topics), and ask who leads those
// partitions; and the internal topics the delay host creates (create_internal_topic). Kafka's
// counterpart: the coordinators' appends through ReplicaManager.appendRecords with the
// coordinator origin, and their loaders' log reads. It reaches the broker only through the
// references it is built with (metadata_writer for the topics it creates); the services get this object
// as their host, never the broker's implementation class. Private to the broker module.
//
// Shards: appends and reads run on the partition's shard (the services post them there); the
// leader questions read the calling thread's metadata view, any thread.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "group_service.h"
#include "metadata.h"
#include "partition.h"
#include "partition_transactions.h"
#include "ringlog/base/random.h"
#include "ringlog/broker/broker.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/runtime/shard_runtime.h"
#include "txn_service.h"

namespace ringlog::broker::detail {

class metadata_writer;

class coordinator_partitions final : public group_host, public txn_host {
 public:
  /// `writer`: the metadata writes through the quorum (the internal topics' creation); `markers`:
  /// the partition side of transactions, which writes the coordinator's markers;
  /// `node_id`: this node; `random`: new topic ids; `partition_managers`: each shard's replicas
  /// (partition_managers[i] touched only on shard i's thread). Every reference outlives this
  /// object, which outlives the services it hosts.
  coordinator_partitions(metadata_writer& writer, const metadata_publisher& metadata, broker_log log,
                         partition_transactions& markers, int32_t node_id, runtime::shard_runtime& runtime,
                         base::random_source& random,
                         const std::vector<std::unique_ptr<partition_manager>>& partition_managers)
      : writer_(writer),
        metadata_(metadata),
        log_(std::move(log)),
        markers_(markers),
        node_id_(node_id),
        runtime_(runtime),
        random_(random),
        partition_managers_(partition_managers) {}

  // group_host: the internal path to __consumer_offsets (produce from outside refuses it).
  [[nodiscard]] size_t owner_shard(const std::string& topic, int32_t partition) const override {
    return shard_of(topic, partition, partition_managers_.size());
  }
  void append_internal(size_t shard, int32_t partition, std::vector<model::record> records,
                       std::function<void(result<void>)> done) override {
    append_internal_to(consumer_offsets_topic, shard, partition, std::move(records), std::move(done));
  }
  result<std::vector<model::record>> read_internal(size_t shard, int32_t partition) override {
    return read_internal_from(consumer_offsets_topic, shard, partition);
  }
  [[nodiscard]] bool leads_offsets_partition(int32_t partition) const override;
  void report_error(const std::string& message) const override { log_.error(message); }
  void report_info(const std::string& message) const override { log_.info(message); }
  [[nodiscard]] group_coordinator_route offsets_leader_route(int32_t partition) const override;
  // txn_host (and the shared internal-topic path of group_host): __transaction_state.
  void append_internal_to(const std::string& topic, size_t shard, int32_t partition, std::vector<model::record> records,
                          std::function<void(result<void>)> done) override;
  result<std::vector<model::record>> read_internal_from(const std::string& topic, size_t shard,
                                                        int32_t partition) override;
  [[nodiscard]] group_coordinator_route internal_leader_route(const std::string& topic, int32_t partition) const override;
  [[nodiscard]] int32_t partitions_count(const std::string& topic) const override;
  void write_markers(const txn::marker_request& markers, int32_t coordinator_epoch,
                     std::function<void(result<txn::partition_set>)> done) override {
    markers_.write_markers(markers, coordinator_epoch, std::move(done));
  }
  [[nodiscard]] int32_t leader_epoch_of(const std::string& topic, int32_t partition) const override;

  /// The delay host's (and start-up's) creation of an internal topic: creates the internal topic `name` (on the
  /// controller shard, through the metadata quorum; no admin checks) with `partitions_count`
  /// partitions, the automatic replication factor and `configs`, unless it exists there already;
  /// `done` with the topic, also when a concurrent creation won. Errors: the commit's
  /// (not_controller, request_timed_out, invalid_request).
  void create_internal_topic(std::string name, int32_t partitions_count, std::map<std::string, std::string> configs,
                             std::function<void(result<std::shared_ptr<const topic_state>>)> done);

 private:
  /// rt->append_own_records (partition.h) for the coordinators.
  result<void> append_own_records(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                  std::vector<model::record> records, std::function<void(result<void>)> replicated);

  metadata_writer& writer_;
  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  const broker_log log_;
  partition_transactions& markers_;
  const int32_t node_id_;
  runtime::shard_runtime& runtime_;
  base::random_source& random_;
  const std::vector<std::unique_ptr<partition_manager>>& partition_managers_;
};

}  // namespace ringlog::broker::detail
