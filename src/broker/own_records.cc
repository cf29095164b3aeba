// The broker's own records (coordinator state, delay checkpoints): the one way they reach a log,
// beside produce_batches_from for client data and the follower's replicated append; and the
// internal topics the delay host creates (delay_host_services::create_internal_topic).

#include "broker_impl.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::broker::detail {

result<void> broker_impl::append_own_records(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                             std::vector<model::record> records,
                                             std::function<void(result<void>)> replicated) {
  (void)shard;   // rt's own (partition_runtime asserts it)
  return rt->append_own_records(std::move(records), std::move(replicated));
}

void broker_impl::create_internal_topic(std::string name, int32_t partitions_count,
                                        std::map<std::string, std::string> configs,
                                        std::function<void(result<std::shared_ptr<const topic_state>>)> done) {
  deps_.runtime.post(controller_shard, [this, name = std::move(name), partitions_count, configs = std::move(configs),
                                        done = std::move(done)]() mutable {
    if (auto t = controller_find_topic(name)) return done(t);
    const auto& image = *controller_view_->image;
    auto records = new_topic_records(image, name, new_topic_id(deps_.random), partitions_count,
                                     automatic_replication_factor(image), configs);
    if (!records.ok()) return done(from_controller(records.error()));
    commit_records(std::move(records).value(), [this, name, done = std::move(done)](result<void> r) {
      // A concurrent creation (another produce, another broker) may have won: that one is used.
      if (auto t = controller_find_topic(name)) return done(t);
      done(r.ok() ? error{errc::unknown_topic_or_partition, unknown_topic_message(name)} : r.error());
    });
  });
}

int32_t broker_impl::partitions_count(const std::string& topic) const {
  auto t = find_topic(topic);
  return t ? t->partitions_count() : -1;
}

int32_t broker_impl::leader_epoch_of(const std::string& topic, int32_t partition) const {
  auto t = find_topic(topic);
  if (!t || partition < 0 || partition >= t->partitions_count()) return -1;
  return t->image->partitions[static_cast<size_t>(partition)].leader_epoch;
}

group_coordinator_route broker_impl::offsets_leader_route(int32_t partition) const {
  return internal_leader_route(consumer_offsets_topic, partition);
}

bool broker_impl::leads_offsets_partition(int32_t partition) const {
  auto t = find_topic(consumer_offsets_topic);
  return t && partition >= 0 && partition < t->partitions_count() &&
         t->image->partitions[static_cast<size_t>(partition)].leader == config_.node_id;
}

}  // namespace ringlog::broker::detail
