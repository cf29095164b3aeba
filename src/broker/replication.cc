// The broker's side of partition replication (replica_manager.h; design.md section 6; the fetch
// loops, the leader's side of followers' fetches and the ISR proposals are the partition
// module's, ringlog/partition/replica_fetcher.h):
//   - what applying a partition's image to its replica (partition_manager::apply_partition_state)
//     reaches here: the leadership_observer that moves the coordinators and delay schedulers with
//     the leaderships (on_leadership_change) and the replica_host (registration, fetch loops);
//   - the controller client of the leader's ISR changes (send_alter_partition: AlterPartition to
//     the active controller, this node's own or a peer's; KIP-497);
//   - replica_fetcher_host: what the fetcher and the leader's side reach in the broker.
//   - services: what every shard's replicas reach in the broker (partition_manager.h: the
//     throttles, the leadership lease, the read and verification ids, min.insync.replicas).

#include <algorithm>

#include "replica_manager.h"
#include "active_controller.h"
#include "broker_lifecycle.h"
#include "constants.h"
#include "delay_host.h"
#include "group_service.h"
#include "rpc_messages.h"
#include "txn_service.h"
#include "ringlog/controller/reassignment.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"
#include "ringlog/controller/placement.h"
#include "ringlog/protocol/error_codes.h"

namespace ringlog::broker::detail {
namespace {

/// AlterPartition v2: topic ids, the new ISR as plain ids (v3's broker epochs are not needed here:
/// the controller checks that every member is registered and unfenced).
constexpr int16_t alter_partition_version = 2;
constexpr int16_t alter_partition_api_key = protocol::alter_partition_request_data::api_key;
/// AlterPartition's wait for the controller's answer (commit plus apply), ms.
constexpr int64_t alter_partition_timeout_ms = 10000;

using namespace protocol::error_codes;   // Kafka's error codes on the wire between brokers

/// Whether a follower fsyncs what it appended before its next fetch reports it (design.md
/// section 6: under log.flush.policy=fsync acks=all is on disk on every in-sync replica).
bool follower_fsyncs_before_fetch(const broker_config& config) {
#ifdef RINGLOG_BROKER_BREAK_NO_FSYNC_BEFORE_FETCH
  // Negative control of tests/sim/cluster_sim: a follower reports an offset it did not fsync.
  (void)config;
  return false;
#else
  return config.log_flush_policy == "fsync";
#endif
}

}  // namespace

replica_manager::replica_manager(const broker_config& config, const broker_dependencies& deps, parts reached)
    : config_(config), deps_(deps), parts_(reached) {}

// ---------------------------------------------------------------- partition state

int32_t replica_manager::min_insync_replicas(const std::string& topic) const {
  auto v = view();
  auto it = v->topics.find(topic);
  if (it != v->topics.end()) {
    auto found = it->second->image->configs.find("min.insync.replicas");
    if (found != it->second->image->configs.end()) return static_cast<int32_t>(std::stoll(found->second));
  }
  return live(*v).min_insync_replicas;
}

// ---------------------------------------------------------------- replica_host

bool replica_manager::registered_in_this_incarnation() const {
  const auto* me = view()->image->find_broker(config_.node_id);
  return me != nullptr && me->incarnation_id == parts_.lifecycle.incarnation_id();
}

void replica_manager::note_stale_leadership(const partition_runtime& rt, int32_t leader_epoch) {
  parts_.controller.note_stale_leadership(rt.topic, rt.partition, leader_epoch);
}

bool replica_manager::controlled_shutdown_done() const { return parts_.lifecycle.controlled_shutdown_done(); }

void replica_manager::on_leadership_change(size_t shard, const std::shared_ptr<partition_runtime>& rt, bool leads) {
  if (rt->topic == consumer_offsets_topic) {
    // The groups of this partition are coordinated here from now on, loaded from its log (or no longer).
    if (auto* groups = parts_.groups_started.load(std::memory_order_acquire)) {
      groups->offsets_partition_led(rt->partition, leads);
    }
  }
  if (rt->topic == transaction_state_topic) {
    // The transactional ids of this partition are coordinated here from now on, replayed (or no longer).
    if (auto* txns = parts_.txns_started.load(std::memory_order_acquire)) {
      txns->state_partition_led(rt->partition, leads);
    }
  }
  // A delay partition's scheduler runs where its leader is (issue 18).
  parts_.delays.on_leadership_change(shard, rt, leads);
}

// ---------------------------------------------------------------- the controller client of ISR changes

void replica_manager::send_alter_partition(protocol::alter_partition_request_data request,
                                           std::function<void(int16_t code, std::string why)> on_answer) {
  deps_.runtime.post(controller_shard, [this, request = std::move(request), on_answer = std::move(on_answer)]() mutable {
    const int32_t controller = parts_.quorum ? parts_.quorum->leader_id() : -1;
    if (controller == config_.node_id) {
      return parts_.controller.alter_partition(std::move(request), [on_answer](protocol::alter_partition_response_data r) {
        const auto& p = r.topics.empty() || r.topics[0].partitions.empty() ? nullptr : &r.topics[0].partitions[0];
        on_answer(r.error_code != code_none ? r.error_code : (p ? p->error_code : code_invalid_request),
                  "this node is the controller");
      });
    }
    if (controller < 0) return on_answer(code_not_controller, "no active controller now");
    deps_.cluster_transport->send(
        controller, alter_partition_api_key, alter_partition_version, encode_body(request, alter_partition_version),
        alter_partition_timeout_ms, [on_answer, controller](rpc::result<protocol::bytes> r) {
          if (!r.ok()) return on_answer(code_not_controller, r.error().message);
          protocol::reader rd(r.value());
          auto decoded = protocol::alter_partition_response_data::decode(rd, alter_partition_version);
          if (!decoded.ok()) return on_answer(code_invalid_request, decoded.error().message);
          const auto& resp = decoded.value();
          int16_t code = resp.error_code;
          if (code == code_none) {
            code = resp.topics.empty() || resp.topics[0].partitions.empty() ? code_invalid_request
                                                                            : resp.topics[0].partitions[0].error_code;
          }
          on_answer(code, "answered by controller " + std::to_string(controller));
        });
  });
}

// ---------------------------------------------------------------- replica_fetcher_host

replica_fetch_settings replica_manager::replica_fetch_settings_of(const broker_config& config) {
  return replica_fetch_settings{
      .node_id = config.node_id,
      .replica_fetch_wait_max_ms = config.replica_fetch_wait_max_ms,
      .replica_fetch_max_bytes = config.replica_fetch_max_bytes,
      .replica_fetch_backoff_ms = config.replica_fetch_backoff_ms,
      .isr_lag_time_max_ms = std::max(config.replica_lag_time_max_ms, config.broker_session_timeout_ms),
      .fsync_before_next_fetch = follower_fsyncs_before_fetch(config),
  };
}

std::shared_ptr<partition_runtime> replica_manager::replica_on_shard(size_t shard, const std::string& topic,
                                                                     int32_t partition) {
  return parts_.partition_managers[shard]->find(topic, partition);
}

void replica_manager::for_each_replica(size_t shard,
                                       const std::function<void(const std::shared_ptr<partition_runtime>&)>& f) {
  for (auto& [key, rt] : parts_.partition_managers[shard]->partitions()) f(rt);
}

size_t replica_manager::replica_shard(const std::string& topic, int32_t partition) const {
  return shard_of(topic, partition, parts_.partition_managers.size());
}

std::shared_ptr<const controller::metadata_image> replica_manager::replication_image() const { return view()->image; }

int64_t replica_manager::follower_replication_throttled_rate() const {
  return live(*view()).follower_replication_throttled_rate;
}

int64_t replica_manager::acquire_follower_throttle(int64_t rate, int64_t now_ms) {
  return parts_.throttles.acquire(replication_throttles::side::follower, rate, now_ms);
}

void replica_manager::record_follower_throttle(int64_t bytes, int64_t rate, int64_t now_ms) {
  parts_.throttles.record(replication_throttles::side::follower, bytes, rate, now_ms);
}

replica_services replica_manager::services(const std::atomic<int64_t>& leadership_lease_until_ms,
                                           std::atomic<uint64_t>& next_read_id,
                                           std::atomic<uint64_t>& next_txn_verification) {
  return replica_services{
      .current_shard = [this] { return deps_.runtime.current_shard(); },
      .config = {.log_flush_policy = config_.log_flush_policy,
                 .fetch_wait_max_ms = config_.fetch_wait_max_ms,
                 .fetch_waiters_per_partition_max = config_.fetch_waiters_per_partition_max},
      .min_insync_replicas = [this](const std::string& topic) { return min_insync_replicas(topic); },
      .leader_replication_throttled_rate = [this] { return live(*view()).leader_replication_throttled_rate; },
      .acquire_leader_throttle =
          [this](int64_t rate, int64_t now_ms) {
            return parts_.throttles.acquire(replication_throttles::side::leader, rate, now_ms);
          },
      .record_leader_throttle =
          [this](int64_t bytes, int64_t rate, int64_t now_ms) {
            parts_.throttles.record(replication_throttles::side::leader, bytes, rate, now_ms);
          },
      .leadership_lease_until_ms = leadership_lease_until_ms,
      .next_read_id = next_read_id,
      .next_txn_verification = next_txn_verification,
      .node_id = config_.node_id,
      .observer = *this,
      .host = *this,
      .fetcher = parts_.fetcher,
  };
}

void replica_manager::log_info(const std::string& message) const {
  if (deps_.log) deps_.log(true, message);
}

void replica_manager::log_error(const std::string& message) const {
  if (deps_.log) deps_.log(false, message);
}

}  // namespace ringlog::broker::detail
