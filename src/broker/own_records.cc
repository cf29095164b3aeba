// The broker's own records (coordinator state, delay checkpoints): the one way they reach a log,
// beside produce_batches_from for client data and the follower's replicated append; and the
// internal topics the delay host creates (create_internal_topic); and the
// coordinators' internal topics (__consumer_offsets, __transaction_state) appended and read on
// the partition's shard, and who leads their partitions (the active controller creates them:
// internal_topics.cc). Kafka's counterpart: the coordinators' log reads.

#include "constants.h"
#include "cluster_requests.h"
#include "coordinator_partitions.h"
#include "metadata_publisher.h"
#include "ringlog/base/assert.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::broker::detail {

namespace {

/// Said of a coordinator registered without an HTTP endpoint (listeners without http:// or
/// https://): HTTP calls of its groups cannot be passed on to it, so they stay refused here.
constexpr std::string_view no_http_listener_text =
    " (a Kafka-only broker: no HTTP listener, so its groups serve Kafka clients only)";

}  // namespace

result<void> coordinator_partitions::append_own_records(size_t shard, const std::shared_ptr<partition_runtime>& rt,
                                                        std::vector<model::record> records,
                                                        std::function<void(result<void>)> replicated) {
  (void)shard;   // rt's own (partition_runtime asserts it)
  return rt->append_own_records(std::move(records), std::move(replicated));
}

void coordinator_partitions::create_internal_topic(
    std::string name, int32_t partitions_count, std::map<std::string, std::string> configs,
    std::function<void(result<std::shared_ptr<const topic_state>>)> done) {
  runtime_.post(controller_shard, [this, name = std::move(name), partitions_count, configs = std::move(configs),
                                   done = std::move(done)]() mutable {
    if (auto t = metadata_.controller_find_topic(name)) return done(t);
    const auto& image = *metadata_.controller_view()->image;
    auto records = new_topic_records(image, name, new_topic_id(random_), partitions_count,
                                     automatic_replication_factor(image), configs);
    if (!records.ok()) return done(from_controller(records.error()));
    writer_.commit_records(std::move(records).value(), [this, name, done = std::move(done)](result<void> r) {
      // A concurrent creation (another produce, another broker) may have won: that one is used.
      if (auto t = metadata_.controller_find_topic(name)) return done(t);
      done(r.ok() ? error{errc::unknown_topic_or_partition, unknown_topic_message(name)} : r.error());
    });
  });
}

int32_t coordinator_partitions::partitions_count(const std::string& topic) const {
  auto t = metadata_.find_topic(topic);
  return t ? t->partitions_count() : -1;
}

int32_t coordinator_partitions::leader_epoch_of(const std::string& topic, int32_t partition) const {
  auto t = metadata_.find_topic(topic);
  if (!t || partition < 0 || partition >= t->partitions_count()) return -1;
  return t->image->partitions[static_cast<size_t>(partition)].leader_epoch;
}

group_coordinator_route coordinator_partitions::offsets_leader_route(int32_t partition) const {
  return internal_leader_route(consumer_offsets_topic, partition);
}

bool coordinator_partitions::leads_offsets_partition(int32_t partition) const {
  auto t = metadata_.find_topic(consumer_offsets_topic);
  return t && partition >= 0 && partition < t->partitions_count() &&
         t->image->partitions[static_cast<size_t>(partition)].leader == node_id_;
}

void coordinator_partitions::append_internal_to(const std::string& topic, size_t shard, int32_t partition,
                                                std::vector<model::record> records,
                                                std::function<void(result<void>)> done) {
  auto rt = partition_managers_[shard]->find(topic, partition);
  if (!rt) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
  if (auto appended = append_own_records(shard, rt, std::move(records), done); !appended.ok()) done(appended.error());
}

group_coordinator_route coordinator_partitions::internal_leader_route(const std::string& topic,
                                                                      int32_t partition) const {
  group_coordinator_route route;
  route.offsets_partition = partition;
  auto t = metadata_.find_topic(topic);
  const int32_t leader = t && partition >= 0 && partition < t->partitions_count()
                             ? t->image->partitions[static_cast<size_t>(partition)].leader
                             : -1;
  const std::string led = " (the leader of " + topic + "-" + std::to_string(partition) + ")";
  if (leader < 0) {
    route.description = "no broker now" + led + ": the partition has no leader";
    return route;
  }
  route.where = leader == node_id_ ? group_coordinator_route::place::here : group_coordinator_route::place::peer;
  route.node_id = leader;
  route.description = "broker " + std::to_string(leader);
  if (const auto* b = metadata_.view()->image->find_broker(leader); b != nullptr) {
    if (const auto* http = b->http_endpoint(); http != nullptr) {
      route.http_host = http->host;
      route.http_port = static_cast<uint16_t>(http->port);
      route.http_tls = http->name == "https";
      route.description += " at " + http->name + "://" + http->host + ":" + std::to_string(http->port);
    } else {
      route.description += no_http_listener_text;
    }
  }
  route.description += led;
  return route;
}

result<std::vector<model::record>> coordinator_partitions::read_internal_from(const std::string& topic, size_t shard,
                                                                              int32_t partition) {
  auto rt = partition_managers_[shard]->find(topic, partition);
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
