// The coordinators' internal topics: __consumer_offsets and __transaction_state created once
// enough brokers are registered (the decisions are controller/internal_topics.h's; here the
// commit), and their records appended and read on the partition's shard.
// Kafka's counterpart: AutoTopicCreationManager's internal topics and the coordinators' log reads.

#include <utility>

#include "broker_impl.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/controller/internal_topics.h"

namespace ringlog::broker::detail {

// The broker's names of the internal topics are the controller's (which creates them).
static_assert(std::string_view(consumer_offsets_topic) == controller::consumer_offsets_topic_name);
static_assert(std::string_view(transaction_state_topic) == controller::transaction_state_topic_name);

void broker_impl::ensure_offsets_topic_async(std::function<void(result<bool>)> done) {
  // Both internal topics of the coordinators: __consumer_offsets, then __transaction_state (one
  // metadata entry each; `done(true)` once both exist). Which, when and their records:
  // controller/internal_topics.h.
  const auto& image = *controller_view_->image;
  const auto missing = controller::missing_internal_topic(image);
  if (!missing) return done(true);
  const controller::internal_topic_rules rules{config_.offsets_topic_num_partitions,
                                               config_.transaction_state_log_num_partitions,
                                               deps_.controller_quorum_voters.size(), config_.broker_session_timeout_ms};
  if (offsets_topic_pending_ || quorum_->leader_id() != config_.node_id ||
      !controller::internal_topics_due(image, rules, deps_.clock.now_ms(), controller_active_since_ms_)) {
    return done(false);
  }
  auto records = controller::internal_topic_records(image, rules, *missing, new_topic_id(deps_.random));
  if (!records.ok()) return done(from_controller(records.error()));
  offsets_topic_pending_ = true;
  commit_records(std::move(records).value(),
                 [this, creating = std::string(*missing), done = std::move(done)](result<void> r) {
    offsets_topic_pending_ = false;
    run_metadata_rechecks();   // a start-up wait refused while this was pending asks again
    if (!r.ok() && !controller_view_->topics.contains(creating)) return done(r.error());
    ensure_offsets_topic_async(std::move(done));   // the other one next (at most two rounds)
  });
}

void broker_impl::append_internal_to(const std::string& topic, size_t shard, int32_t partition,
                                     std::vector<model::record> records, std::function<void(result<void>)> done) {
  auto rt = runtime_of(shard, topic, partition);
  if (!rt) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
  if (auto appended = append_own_records(shard, rt, std::move(records), done); !appended.ok()) done(appended.error());
}

std::string broker_impl::offsets_leader_text(int32_t partition) const {
  auto t = find_topic(consumer_offsets_topic);
  const int32_t leader = t && partition >= 0 && partition < t->partitions_count()
                             ? t->image->partitions[static_cast<size_t>(partition)].leader
                             : -1;
  if (leader < 0) return "no broker now (the partition has no leader; retry)";
  std::string out = "broker " + std::to_string(leader);
  if (const auto* b = view()->image->find_broker(leader); b != nullptr) {
    if (const auto* http = b->endpoint("http"); http != nullptr) {
      out += " at http://" + http->host + ":" + std::to_string(http->port);
    }
  }
  return out;
}

group_coordinator_route broker_impl::internal_leader_route(const std::string& topic, int32_t partition) const {
  group_coordinator_route route;
  route.offsets_partition = partition;
  auto t = find_topic(topic);
  const int32_t leader = t && partition >= 0 && partition < t->partitions_count()
                             ? t->image->partitions[static_cast<size_t>(partition)].leader
                             : -1;
  const std::string led = " (the leader of " + topic + "-" + std::to_string(partition) + ")";
  if (leader < 0) {
    route.description = "no broker now" + led + ": the partition has no leader";
    return route;
  }
  route.where = leader == config_.node_id ? group_coordinator_route::place::here : group_coordinator_route::place::peer;
  route.node_id = leader;
  route.description = "broker " + std::to_string(leader);
  if (const auto* b = view()->image->find_broker(leader); b != nullptr) {
    if (const auto* http = b->endpoint("http"); http != nullptr) {
      route.http_host = http->host;
      route.http_port = static_cast<uint16_t>(http->port);
      route.description += " at http://" + http->host + ":" + std::to_string(http->port);
    }
  }
  route.description += led;
  return route;
}

result<std::vector<model::record>> broker_impl::read_internal_from(const std::string& topic, size_t shard,
                                                                   int32_t partition) {
  auto rt = runtime_of(shard, topic, partition);
  if (!rt) return error{errc::unknown_topic_or_partition, unknown_topic_message(topic)};
  std::vector<model::record> out;
  model::offset at = rt->log->log_start_offset();
  // The whole log, past the high watermark too: a coordinator reads its partition when it has
  // just become the leader, whose log is the partition's from then on (records its high
  // watermark has not reached yet were acknowledged by the previous leader, or will be kept).
  const model::offset end = rt->log->log_end_offset();
  while (at < end) {
    auto read = rt->log->read(at, 1 << 20, end);
    if (!read.ok()) return from_storage(read.error());
    if (read->batches.empty()) break;
    size_t pos = 0;
    while (pos < read->batches.size()) {
      auto header = codec::decode_header(std::span(read->batches).subspan(pos));
      RINGLOG_ASSERT(header.ok(), "batches of an internal topic were validated on recovery");
      if (!header->is_control()) {
        auto records = codec::decode_records(std::span(read->batches).subspan(pos, header->size_bytes()));
        if (!records.ok()) return error{errc::kafka_storage_error, topic + ": " + records.error().message};
        for (auto& r : records.value()) {
          if (r.record_offset >= at && r.record_offset < end) out.push_back(std::move(r));
        }
      }
      pos += header->size_bytes();
    }
    if (read->next_offset <= at) break;
    at = read->next_offset;
  }
  return out;
}

}  // namespace ringlog::broker::detail
