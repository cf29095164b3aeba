// The broker module's shared helpers (errors, topic ids), the facade's group coordinator lookup,
// the composition's shutdown (broker_parts.h; its start is start_up.cc's) and open_broker (each
// shard's maintenance tick is its partition_manager's). The parts are in a file per concept:
// produce.cc, fetch.cc, replication.cc, ... (docs/architecture.md's broker section says which).
// Kafka's counterpart: BrokerServer.

#include "ringlog/broker/broker.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <set>

#include "broker_impl.h"
#include "ringlog/group/coordinator_partition.h"
#include "ringlog/runtime/constants.h"

namespace ringlog::broker {
namespace detail {

error partition_missing(const std::string& topic, int32_t partition, int32_t partitions_count) {
  return error{errc::unknown_topic_or_partition, "partition " + std::to_string(partition) + " does not exist: topic '" +
                                                     topic + "' has " + std::to_string(partitions_count) + " partitions"};
}

/// A stable hash of topic-partition onto shards (FNV-1a), so a partition's shard never changes.
controller::uuid new_topic_id(base::random_source& random) {
  // Kafka's topic ids are random (version 4) UUIDs, shown as 22 characters of URL-safe base64.
  controller::uuid id;
  for (size_t i = 0; i < id.value.size(); i += 8) {
    const uint64_t bits = random.next_u64();
    for (size_t j = 0; j < 8 && i + j < id.value.size(); ++j) id.value[i + j] = static_cast<uint8_t>(bits >> (8 * j));
  }
  id.value[6] = static_cast<uint8_t>((id.value[6] & 0x0f) | 0x40);
  id.value[8] = static_cast<uint8_t>((id.value[8] & 0x3f) | 0x80);
  return id;
}


/// The answer to new client work for a shard whose task queue is full (shard_runtime::admits).
error shard_busy(size_t shard) {
  return error{errc::throttling_quota_exceeded,
               "shard " + std::to_string(shard) + " has cross_shard_queue_tasks_max=" +
                   std::to_string(runtime::constants::cross_shard_queue_tasks_max) +
                   " tasks queued; retry later"};
}

// ---------------------------------------------------------------- the facade

int32_t broker_impl::group_coordinator_id(const std::string& group_id) const {
  const auto t = parts_.publisher_.find_topic(consumer_offsets_topic);
  if (!t || t->partitions_count() <= 0) return -1;
  const int32_t p = group::coordinator_partition_for(group_id, t->partitions_count());
  return t->image->partitions[static_cast<size_t>(p)].leader;
}

void broker_impl::await_metadata_applied(int64_t offset, int64_t timeout_ms, std::function<void(bool applied)> then) {
  parts_.deps_.runtime.post(controller_shard, [this, offset, timeout_ms, then = std::move(then)]() mutable {
    parts_.publisher_.apply_queue().await_applied_through(offset, timeout_ms, std::move(then));
  });
}

// ---------------------------------------------------------------- shutdown

void broker_parts::begin_shutdown() {
  stopping_ = true;
  for (size_t shard = 0; shard < partition_managers_.size(); ++shard) {
    deps_.runtime.post(shard, [this, shard] {
      for (auto& [key, rt] : partition_managers_[shard]->partitions()) {
        auto parked = std::move(rt->waiters);
        rt->waiters.clear();
        for (auto& w : parked) rt->answer_empty(*w);
      }
    });
  }
}

void broker_parts::shutdown(std::function<void()> done) {
  // Controlled shutdown first (KIP-631): the active controller marks this broker and moves its
  // leaderships away before the logs close; bounded by the session timeout, so a broker that
  // cannot reach a controller still stops.
  if (lifecycle_.claim_controlled_shutdown() && quorum_) {
    stopping_ = true;
    return lifecycle_.controlled_shutdown([this, done = std::move(done)]() mutable { shutdown(std::move(done)); });
  }
  stopping_ = true;
  if (groups_) groups_->stop();
  if (txns_) txns_->stop();
  auto remaining = std::make_shared<std::atomic<size_t>>(partition_managers_.size());
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  for (size_t shard = 0; shard < partition_managers_.size(); ++shard) {
    deps_.runtime.post(shard, [this, shard, remaining, finish] {
      auto& disk = deps_.runtime.disk(shard);
      // Let every fdatasync in flight complete so their producers hear the outcome.
      for (int i = 0; i < 10'000 && disk.in_flight() > 0; ++i) disk.poll(std::chrono::milliseconds(10));
      for (auto& [key, rt] : partition_managers_[shard]->partitions()) {
        rt->wake_waiters();
        for (auto& w : rt->waiters) rt->answer_empty(*w);
        rt->waiters.clear();
        rt->fail_ack_waiters(error{errc::broker_not_available,
                                    "the broker is shutting down before the write was replicated; it may or may "
                                    "not be stored: retry"});
        rt->leader.reset();
        rt->wake_replica_waiters();
        (void)rt->log->close();
      }
      if (remaining->fetch_sub(1) == 1) {
        deps_.runtime.post(controller_shard, [this, finish] {
          if (quorum_) quorum_->stop();
          (*finish)();
        });
      }
    });
  }
}

}  // namespace detail

namespace {

/// The configuration open_broker refuses before it starts anything.
result<void> check_open(const broker_config& config, const broker_dependencies& deps) {
  if (deps.runtime.shard_count() == 0) return error{errc::invalid_config, "the runtime has no shards"};
  if (config.log_flush_policy != "fsync" && config.log_flush_policy != "replication") {
    return error{errc::invalid_config, "log.flush.policy='" + config.log_flush_policy + "' is not one of fsync, replication"};
  }
  return base::ok_v;
}

}  // namespace

result<std::unique_ptr<broker>> open_broker(broker_config config, broker_dependencies deps) {
  RINGLOG_TRY(check_open(config, deps));
  auto b = std::make_unique<detail::broker_impl>(std::move(config), std::move(deps));
  std::promise<result<void>> started;
  b->start_async([&started](result<void> r) { started.set_value(std::move(r)); });
  if (auto r = started.get_future().get(); !r.ok()) {
    b->abandon();
    return r.error();
  }
  return std::unique_ptr<broker>(std::move(b));
}

void open_broker_async(broker_config config, broker_dependencies deps,
                       std::function<void(result<std::unique_ptr<broker>>)> done) {
  if (auto checked = check_open(config, deps); !checked.ok()) return done(checked.error());
  auto* b = new detail::broker_impl(std::move(config), std::move(deps));
  b->start_async([b, done = std::move(done)](result<void> r) {
    std::unique_ptr<detail::broker_impl> owned(b);
    if (!r.ok()) {
      owned->abandon();   // on the controller shard: the quorum stops inline
      owned.reset();
      return done(r.error());
    }
    done(std::unique_ptr<broker>(std::move(owned)));
  });
}

result<void> validate_topic_name(std::string_view name) {
  // Kafka's org.apache.kafka.common.internals.Topic.validate.
  if (name.empty()) return error{errc::invalid_topic_exception, "topic name is empty"};
  if (name == "." || name == "..") return error{errc::invalid_topic_exception, "topic name cannot be '.' or '..'"};
  if (name.size() > 249) {
    return error{errc::invalid_topic_exception,
                 "topic name is " + std::to_string(name.size()) + " characters long; the limit is 249"};
  }
  for (char c : name) {
    const bool legal = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '-';
    if (!legal) {
      return error{errc::invalid_topic_exception, "topic name '" + std::string(name) +
                                                      "' contains a character other than ASCII letters, digits, "
                                                      "'.', '_' and '-'"};
    }
  }
  return base::ok_v;
}

}  // namespace ringlog::broker
