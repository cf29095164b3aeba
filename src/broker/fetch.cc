// Fetch and list offsets (fetch_service.h): fetches routed to their partitions (the reads and the
// parking are partition.cc's, the deadlines of parked fetches partition_manager.cc's), and offsets
// by time or position.
// Kafka's counterpart: ReplicaManager.fetchMessages, and handleListOffsetRequest.

#include <algorithm>
#include <utility>

#include "fetch_service.h"
#include "admin_manager.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"

namespace ringlog::broker::detail {

fetch_service::fetch_service(const metadata_publisher& publisher, const admin_manager& admin,
                             leader_forwarder& forwarder, runtime::shard_runtime& runtime,
                             const std::vector<std::unique_ptr<partition_manager>>& partition_managers, int32_t node_id,
                             const std::atomic<bool>& stopping)
    : publisher_(publisher),
      admin_(admin),
      forwarder_(forwarder),
      runtime_(runtime),
      partition_managers_(partition_managers),
      node_id_(node_id),
      stopping_(stopping) {}

std::shared_ptr<const topic_state> fetch_service::find_topic(const std::string& name) const {
  auto v = publisher_.view();
  auto it = v->topics.find(name);
  return it == v->topics.end() ? nullptr : it->second;
}

namespace {

/// Why a broker's shard holds no replica of `tp` to answer OffsetForLeaderEpoch from (which is
/// never forwarded): the topic is gone (`topic` null); the partition's replicas do not include
/// `node_id`, so its client asked a broker that is neither the leader nor a follower (Kafka's
/// ReplicaManager.lastOffsetForLeaderEpoch answers NOT_LEADER_OR_FOLLOWER too); or this
/// broker's replica is not opened yet.
error no_epoch_cache_here(const topic_state* topic, int32_t node_id, const model::topic_partition& tp) {
  if (topic == nullptr) return no_replica_here(nullptr, tp);
  const auto& partitions = topic->image->partitions;
  const auto index = static_cast<size_t>(tp.partition.value());
  if (index < partitions.size() && std::ranges::find(partitions[index].replicas, node_id) == partitions[index].replicas.end()) {
    const int32_t leader = partitions[index].leader;
    return error{errc::not_leader_or_follower,
                 "broker " + std::to_string(node_id) + " holds no replica of " + tp.topic + "-" +
                     std::to_string(tp.partition.value()) +
                     (leader >= 0 ? ": ask its leader, broker " + std::to_string(leader) : ", which has no leader now")};
  }
  return no_replica_here(topic, tp);
}

}  // namespace

size_t fetch_service::owner(const std::string& topic, int32_t partition) const {
  return shard_of(topic, partition, partition_managers_.size());
}

result<void> fetch_service::check_readable(const model::topic_partition& tp, int32_t current_leader_epoch) const {
  if (stopping_) return error{errc::broker_not_available, "the broker is shutting down"};
  if (auto exists = admin_.check_partition_exists(tp); !exists.ok()) return exists;
  if (current_leader_epoch == -1) return base::ok_v;
  // KIP-320: against this broker's metadata, before a call is forwarded (Kafka checks the
  // partition's epoch, which its metadata sets).
  auto topic = find_topic(tp.topic);
  if (!topic) return error{errc::unknown_topic_or_partition, "topic '" + tp.topic + "' was deleted meanwhile"};
  const int32_t known = topic->image->partitions[static_cast<size_t>(tp.partition.value())].leader_epoch;
  return check_current_leader_epoch(current_leader_epoch, model::leader_epoch{known},
                                    tp.topic + "-" + std::to_string(tp.partition.value()));
}

void fetch_service::fetch_known(fetch_request request, std::function<void(result<fetch_response>)> done) {
  if (auto usable = check_readable(request.partition, request.current_leader_epoch); !usable.ok()) {
    return done(usable.error());
  }
  if (request.max_bytes <= 0) {
    return done(error{errc::invalid_request, "max_bytes must be positive, got " + std::to_string(request.max_bytes)});
  }
  auto topic = find_topic(request.partition.topic);
  auto leader = leader_route(*topic, request.partition.partition.value());
  if (!leader.ok()) return done(leader.error());
  if (leader.value() != node_id_) {
    return forwarder_.forward_fetch(leader.value(), topic, std::move(request), std::move(done));
  }
  fetch_here(std::move(request), std::move(done));
}

void fetch_service::fetch_here(fetch_request request, std::function<void(result<fetch_response>)> done) {
  auto held = std::make_shared<fetch_request>(std::move(request));
  forwarder_.when_replica_open(held->partition, [this, held, done = std::move(done)]() mutable {
    const auto& tp = held->partition;
    const size_t shard = owner(tp.topic, tp.partition.value());
    if (!runtime_.admits(shard)) return done(shard_busy(shard));
    runtime_.post(shard, [this, shard, request = std::move(*held), done = std::move(done)]() mutable {
      auto rt = partition_managers_[shard]->find(request.partition.topic, request.partition.partition.value());
      if (!rt) return done(no_replica_here(find_topic(request.partition.topic).get(), request.partition));
      auto w = std::make_shared<fetch_waiter>();
      w->request = std::move(request);
      w->done = std::move(done);
      rt->try_fetch(w);
    });
  });
}

void fetch_service::list_offsets_known(list_offsets_request request,
                                       std::function<void(result<list_offsets_response>)> done) {
  if (auto usable = check_readable(request.partition, request.current_leader_epoch); !usable.ok()) {
    return done(usable.error());
  }
  auto topic = find_topic(request.partition.topic);
  auto leader = leader_route(*topic, request.partition.partition.value());
  if (!leader.ok()) return done(leader.error());
  if (leader.value() != node_id_) {
    return forwarder_.forward_list_offsets(leader.value(), std::move(request), std::move(done));
  }
  list_offsets_here(std::move(request), std::move(done));
}

void fetch_service::list_offsets_here(list_offsets_request request,
                                      std::function<void(result<list_offsets_response>)> done) {
  auto held = std::make_shared<list_offsets_request>(std::move(request));
  forwarder_.when_replica_open(held->partition, [this, held, done = std::move(done)]() mutable {
    const auto& tp = held->partition;
    const size_t shard = owner(tp.topic, tp.partition.value());
    if (!runtime_.admits(shard)) return done(shard_busy(shard));
    runtime_.post(shard, [this, shard, request = std::move(*held), done = std::move(done)]() mutable {
      auto rt = partition_managers_[shard]->find(request.partition.topic, request.partition.partition.value());
      if (!rt) return done(no_replica_here(find_topic(request.partition.topic).get(), request.partition));
      const std::optional<model::offset> reading_at =
          request.spec == offset_spec::earliest ? std::optional<model::offset>{rt->log->log_start_offset()} : std::nullopt;
      if (auto serving = rt->check_serving(reading_at); !serving.ok()) return done(serving.error());
      list_offsets_response out;
      const model::offset upper = request.isolation == isolation_level::read_committed ? rt->log->last_stable_offset()
                                                                                      : rt->log->high_watermark();
      switch (request.spec) {
        case offset_spec::earliest:
          out.found_offset = rt->log->log_start_offset();
          out.leader_epoch = epoch_of_offset(rt->log->leader_epochs(), *out.found_offset);
          break;
        case offset_spec::latest:
          // KIP-98: a read_committed consumer's end of the log is the last stable offset.
          out.found_offset = upper;
          out.leader_epoch = rt->epoch;   // Kafka's Partition.fetchOffsetForTimestamp: the current epoch
          break;
        case offset_spec::timestamp: {
          auto found = rt->log->offset_for_timestamp(request.timestamp);
          if (!found.ok()) return done(from_storage(found.error()));
          if (found.value() && found.value()->found_offset < upper) {
            out.found_offset = found.value()->found_offset;
            out.timestamp = found.value()->timestamp;  // the record's own timestamp, as Kafka answers
            out.leader_epoch = epoch_of_offset(rt->log->leader_epochs(), *out.found_offset);
          }
          break;
        }
      }
      done(std::move(out));
    });
  });
}

void fetch_service::end_offset_for_leader_epoch(epoch_end_offset_request request,
                                                std::function<void(result<epoch_end_offset>)> done) {
  if (auto usable = check_readable(request.partition, -1); !usable.ok()) return done(usable.error());
  // Not when_replica_open: a Kafka client asks the leader it found in Metadata and retries on
  // not_leader_or_follower, as for Produce.
  const size_t shard = owner(request.partition.topic, request.partition.partition.value());
  if (!runtime_.admits(shard)) return done(shard_busy(shard));
  runtime_.post(shard, [this, shard, request = std::move(request), done = std::move(done)]() mutable {
    auto rt = partition_managers_[shard]->find(request.partition.topic, request.partition.partition.value());
    if (!rt) return done(no_epoch_cache_here(find_topic(request.partition.topic).get(), node_id_, request.partition));
    done(rt->end_offset_for_leader_epoch(request.current_leader_epoch, request.leader_epoch));
  });
}

}  // namespace ringlog::broker::detail
