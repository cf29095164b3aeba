#pragma once
// The broker API's implementation: a facade whose every call is one call into a part of the
// broker's composition (broker_parts.h: which parts exist, their wiring, start and shutdown).
// docs/architecture.md's broker section maps the parts to their files. Private to the broker
// module: other modules see broker.h only.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "broker_parts.h"
#include "ringlog/broker/broker.h"

namespace ringlog::broker::detail {

class broker_impl final : public broker {
 public:
  broker_impl(broker_config config, broker_dependencies deps)
      : parts_(*this, std::move(config), std::move(deps)) {}

  /// broker_parts::start_async (start_up.cc): `done` once, on the controller shard.
  void start_async(std::function<void(result<void>)> done) { parts_.start_async(std::move(done)); }
  /// After a failed start: stops the quorum (it must stop before it is destroyed).
  void abandon() { parts_.abandon(); }

  void await_metadata_barrier(std::function<void()> then) override { parts_.barrier_.post_caught_up(std::move(then)); }
  [[nodiscard]] int64_t applied_metadata_offset() const override { return parts_.view()->image->offset(); }
  void await_metadata_applied(int64_t offset, int64_t timeout_ms, std::function<void(bool applied)> then) override;
  void describe_delay_schedulers(std::function<void(std::vector<delay_scheduler_description>)> done) override {
    parts_.delay_host_.describe(std::move(done));
  }
  [[nodiscard]] const broker_config& config() const override { return parts_.config_; }
  [[nodiscard]] int32_t message_max_bytes() const override {
    return parts_.live(*parts_.view()).message_max_bytes;
  }
  [[nodiscard]] int32_t group_coordinator_id(const std::string& group_id) const override;
  /// The data calls: the topic lookup, then the metadata barrier for a topic this node has not
  /// learned of yet (metadata_barrier.h), then produce_known, fetch_known, list_offsets_known.
  void produce(produce_request request, std::function<void(result<produce_response>)> done) override {
    parts_.barrier_.produce(std::move(request), std::move(done));
  }
  void fetch(fetch_request request, std::function<void(result<fetch_response>)> done) override {
    parts_.barrier_.fetch(std::move(request), std::move(done));
  }
  void list_offsets(list_offsets_request request, std::function<void(result<list_offsets_response>)> done) override {
    parts_.barrier_.list_offsets(std::move(request), std::move(done));
  }
  void end_offset_for_leader_epoch(epoch_end_offset_request request,
                                   std::function<void(result<epoch_end_offset>)> done) override {
    parts_.fetch_.end_offset_for_leader_epoch(std::move(request), std::move(done));
  }
  void produce_batches(produce_batches_request request,
                       std::function<void(result<produce_batches_response>)> done) override {
    parts_.produce_.produce_batches_from(std::move(request), std::move(done),
                                         produce_pipeline::batch_origin::kafka_client);
  }
  void init_producer_id(std::function<void(result<producer_identity>)> done) override {
    parts_.producer_ids_.init_producer_id(std::move(done));
  }
  void write_txn_markers(std::vector<txn_marker> markers,
                         std::function<void(result<std::vector<txn_marker_result>>)> done) override {
    parts_.partition_txns_.write_txn_markers(std::move(markers), std::move(done));
  }
  [[nodiscard]] result<void> check_producer_id(model::producer_id id) const override {
    return parts_.produce_.check_producer_id(id);
  }
  [[nodiscard]] security::bytes forwarding_secret() const override {
    return forwarding_secret_in(*parts_.view()->image);
  }
  /// KIP-890 part 1 (partition_transactions::verify_txn_partition).
  void verify_txn_partition(const std::string& transactional_id, model::producer_id producer_id,
                            model::producer_epoch producer_epoch, const model::topic_partition& tp,
                            std::function<void(result<void>)> done) override {
    parts_.partition_txns_.verify_txn_partition(transactional_id, producer_id, producer_epoch, tp, std::move(done));
  }
  void describe_producers(model::topic_partition partition,
                          std::function<void(result<std::vector<producer_description>>)> done) override {
    parts_.partition_txns_.describe_producers(std::move(partition), std::move(done));
  }
  void delete_records(delete_records_request request,
                      std::function<void(result<delete_records_response>)> done) override {
    parts_.record_deletion_.delete_records(std::move(request), std::move(done));
  }
  void begin_shutdown() override { parts_.begin_shutdown(); }
  void shutdown(std::function<void()> done) override { parts_.shutdown(std::move(done)); }
  [[nodiscard]] io::latency_histogram::snapshot cleaner_step_time() const override {
    return parts_.compaction_.step_time();
  }
  [[nodiscard]] replication_throttle_figures replication_throttling() const override {
    return parts_.replication_throttles_.figures();
  }
  [[nodiscard]] autobalancer_figures autobalancer_moves() const override {
    return parts_.controller_.autobalancer_moves();
  }
  group_api& groups() override { return *parts_.groups_; }
  txn_api& transactions() override { return *parts_.txns_; }
  security_api& security() override { return parts_.security_; }
  const security_api& security() const override { return parts_.security_; }
  admin_api& admin() override { return parts_.admin_; }
  const admin_api& admin() const override { return parts_.admin_; }

 private:
  broker_parts parts_;
};

}  // namespace ringlog::broker::detail
