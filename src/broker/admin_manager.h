#pragma once
// The broker's administration facet (admin.h; issue 28), Kafka's admin manager beside KafkaApis:
// topics created, deleted, grown and reconfigured (topics_admin.cc), the cluster described and
// the broker configs changed (cluster_admin.cc), and the active controller's placement calls
// (elections, reassignments, rebalance, decommission: active_controller.h) passed on. Every change
// is a metadata-log entry checked against the controller shard's view and committed through the
// quorum (metadata_writer), planned after the metadata barrier. It reaches the broker through
// the parts it is built with only. Private to the broker module.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "active_controller.h"
#include "constants.h"
#include "metadata.h"
#include "metadata_publisher.h"
#include "ringlog/base/assert.h"
#include "ringlog/broker/admin.h"
#include "ringlog/broker/broker.h"
#include "ringlog/controller/metadata_quorum.h"

namespace ringlog::broker::detail {

class broker_lifecycle;
class metadata_barrier;
class metadata_writer;

class admin_manager final : public admin_api {
 public:
  /// `quorum`: the metadata quorum (null before start); `lifecycle`: the leadership lease;
  /// `writer`: commit_records; `barrier`: post_caught_up (changes are planned against an image no
  /// older than the active controller's); `config`: the static broker config (a view's dynamic one
  /// replaces it where it has one); `stopping`: the broker's stop flag. Every reference outlives
  /// this object.
  admin_manager(const std::unique_ptr<controller::metadata_quorum>& quorum, const broker_lifecycle& lifecycle,
                metadata_writer& writer, metadata_barrier& barrier, const metadata_publisher& metadata,
                const broker_config& config, const broker_dependencies& deps, active_controller& controller,
                const std::atomic<bool>& stopping)
      : quorum_(quorum),
        lifecycle_(lifecycle),
        writer_(writer),
        barrier_(barrier),
        metadata_(metadata),
        config_(config),
        deps_(deps),
        controller_(controller),
        stopping_(stopping) {}

  // topics_admin.cc
  void create_topic(create_topic_request request, std::function<void(result<topic_description>)> done) override;
  void delete_topic(std::string topic, std::function<void(result<void>)> done) override;
  void delete_topic_of_id(std::string topic, controller::uuid topic_id, std::function<void(result<void>)> done) override;
  void create_partitions(std::string topic, int32_t partitions_count, std::string_view count_field,
                         std::function<void(result<topic_description>)> done) override;
  void alter_topic_configs(std::string topic, std::map<std::string, std::optional<std::string>> changes,
                           bool validate_only, std::function<void(result<topic_description>)> done) override;
  [[nodiscard]] std::vector<std::string> list_topics(bool include_internal) const override;
  [[nodiscard]] bool topic_exists(const std::string& name) const override { return find_topic(name) != nullptr; }
  [[nodiscard]] std::vector<std::optional<std::string>> topic_names_of_ids(
      const std::vector<controller::uuid>& topic_ids) const override;
  [[nodiscard]] result<void> check_partition_exists(const model::topic_partition& tp) const override;
  void describe_topic(std::string topic, std::function<void(result<topic_description>)> done) override;
  // cluster_admin.cc
  [[nodiscard]] std::vector<broker_description> list_brokers() const override;
  [[nodiscard]] int32_t controller_id() const override { return quorum_ ? quorum_->leader_id() : -1; }
  [[nodiscard]] quorum_status describe_quorum() const override;
  [[nodiscard]] result<std::vector<broker_config_entry>> describe_broker_configs(int32_t node_id) const override;
  void alter_broker_configs(int32_t node_id, std::map<std::string, std::optional<std::string>> changes,
                            bool validate_only, std::function<void(result<void>)> done) override;
  // The active controller's calls (active_controller.h): elections, reassignments, rebalance and
  // decommission (issue 33).
  void elect_preferred_leaders(std::vector<std::pair<std::string, int32_t>> partitions,
                               std::function<void(result<std::vector<leader_election_result>>)> done) override {
    controller_.elect_preferred_leaders(std::move(partitions), std::move(done));
  }
  void alter_partition_reassignments(
      std::vector<partition_reassignment_target> targets,
      std::function<void(result<std::vector<partition_reassignment_result>>)> done) override {
    controller_.alter_partition_reassignments(std::move(targets), std::move(done));
  }
  [[nodiscard]] std::vector<partition_reassignment> list_partition_reassignments(const std::string& topic) const override {
    return reassignments_in(*metadata_.view()->image, topic);
  }
  void rebalance(rebalance_request request, std::function<void(result<rebalance_result>)> done) override {
    controller_.rebalance(std::move(request), std::move(done));
  }
  void cancel_reassignments(std::function<void(result<int32_t>)> done) override {
    controller_.cancel_reassignments(std::move(done));
  }
  void decommission_broker(int32_t node_id, bool cancel, std::function<void(result<broker_decommission>)> done) override {
    controller_.decommission_broker(node_id, cancel, std::move(done));
  }
  [[nodiscard]] std::vector<broker_decommission> list_decommissions() const override {
    return decommissions_in(*metadata_.view()->image);
  }

 private:
  /// The topic `name` as of the calling thread's view, or null.
  [[nodiscard]] std::shared_ptr<const topic_state> find_topic(const std::string& name) const {
    const auto v = metadata_.view();
    auto it = v->topics.find(name);
    return it == v->topics.end() ? nullptr : it->second;
  }
  /// Controller shard: the topic as of the last applied metadata entry.
  [[nodiscard]] std::shared_ptr<const topic_state> controller_find_topic(const std::string& name) const {
    RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
    const auto& v = metadata_.controller_view();
    auto it = v->topics.find(name);
    return it == v->topics.end() ? nullptr : it->second;
  }
  /// delete_topic and delete_topic_of_id: deletes `topic` when it exists and its id is `topic_id`
  /// (nullopt: any id).
  void delete_topic_if(std::string topic, std::optional<controller::uuid> topic_id, std::function<void(result<void>)> done);
  /// The broker config of `v` with its dynamic broker configs applied (the static one before start).
  [[nodiscard]] const broker_config& live(const metadata_view& v) const { return live_config(v, config_); }
  /// broker.partitions.max: `adding` more partitions fit beside those of the calling thread's view.
  [[nodiscard]] result<void> check_partition_budget(int64_t adding) const;
  /// The description of `t` (its partitions' figures from this node's replicas and the lease).
  [[nodiscard]] topic_description describe(const topic_state& t) const;

  const std::unique_ptr<controller::metadata_quorum>& quorum_;
  const broker_lifecycle& lifecycle_;
  metadata_writer& writer_;
  metadata_barrier& barrier_;
  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  const broker_config& config_;
  const broker_dependencies& deps_;
  active_controller& controller_;
  const std::atomic<bool>& stopping_;
};

}  // namespace ringlog::broker::detail
