// Topic administration (admin_manager, admin_manager.h): create (the records are
// controller/replication_control.h's) and delete topics, add partitions, alter topic configs,
// list and describe topics.
// Kafka's counterpart: ControllerApis' CreateTopics, DeleteTopics, CreatePartitions and
// IncrementalAlterConfigs, with ReplicationControlManager and ConfigurationControlManager.

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <utility>

#include "admin_manager.h"
#include "broker_lifecycle.h"
#include "cluster_requests.h"
#include "metadata_barrier.h"
#include "broker_configs.h"
#include "ringlog/base/constants.h"
#include "ringlog/controller/internal_topics.h"
#include "ringlog/model/types.h"
#include "metadata_publisher.h"
#include "topic_config.h"

namespace ringlog::broker::detail {

topic_description admin_manager::describe(const topic_state& t) const {
  topic_description d;
  d.name = t.name();
  d.topic_id = controller::uuid_to_string(t.image->topic_id);
  d.is_internal = t.is_internal;
  // Partition 0's replicas without those a reassignment is adding (Kafka's TopicCommand: a 3 -> 3
  // move shows 3, not the 4 the replica set holds while it runs).
  d.replication_factor = t.image->partitions.empty()
                             ? int16_t{0}
                             : static_cast<int16_t>(t.image->partitions[0].replicas.size() -
                                                    t.image->partitions[0].adding_replicas.size());
  for (int32_t p = 0; p < t.partitions_count(); ++p) {
    const auto& s = *t.partitions[static_cast<size_t>(p)];
    const controller::partition_image& image = t.image->partitions[static_cast<size_t>(p)];
    partition_description pd;
    pd.partition = model::partition_id{p};
    pd.leader = image.leader;
    pd.replicas = image.replicas;
    pd.in_sync_replicas = image.in_sync_replicas;
    pd.leader_epoch = model::leader_epoch{image.leader_epoch};
    pd.log_start_offset = model::offset{s.log_start_offset.load(std::memory_order_relaxed)};
    pd.high_watermark = model::offset{s.high_watermark.load(std::memory_order_relaxed)};
    pd.log_end_offset = model::offset{s.log_end_offset.load(std::memory_order_relaxed)};
    pd.high_watermark_established = s.high_watermark_established.load(std::memory_order_relaxed);
    // Only a leader's figures are the partition's end (a follower's lag one fetch round behind),
    // and only while its leadership lease holds (another broker may lead meanwhile: check_serving).
    if (image.leader != config_.node_id ||
        (image.replicas.size() > 1 && deps_.clock.monotonic_ms() >= lifecycle_.leadership_lease_until_ms())) {
      pd.high_watermark_established = false;
    }
    pd.size_bytes = s.size_bytes.load(std::memory_order_relaxed);
    pd.replica_here = s.open_here.load(std::memory_order_acquire);
    pd.offline_reason = s.open_failure();
    if (!pd.offline_reason.empty() && image.leader == config_.node_id) {
      // Led here by a replica that cannot serve: no leader, as Kafka's controller leaves a
      // partition whose leader's log directory failed (the breaker of session 40 saw it healthy).
      pd.leader = -1;
      pd.high_watermark_established = false;
    }
    pd.cleaner.dirty_ratio = static_cast<double>(s.cleaner_dirty_ratio_ppm.load(std::memory_order_relaxed)) / 1e6;
    pd.cleaner.bytes_read_total = s.cleaner_bytes_read_total.load(std::memory_order_relaxed);
    pd.cleaner.bytes_written_total = s.cleaner_bytes_written_total.load(std::memory_order_relaxed);
    pd.cleaner.passes_total = s.cleaner_passes_total.load(std::memory_order_relaxed);
    pd.cleaner.tombstones_removed_total = s.cleaner_tombstones_removed_total.load(std::memory_order_relaxed);
    pd.cleaner.time_ms_total = s.cleaner_time_ms_total.load(std::memory_order_relaxed);
    pd.cleaner.last_clean_ms = s.cleaner_last_clean_ms.load(std::memory_order_relaxed);
    d.partitions.push_back(pd);
  }
  const auto current = metadata_.view();
  d.configs = describe_topic_configs(live(*current), t.image->configs,
                                     ringlog::broker::describe_broker_configs(config_, *current->image, config_.node_id));
  return d;
}

/// The state topic `name` would have after `records` (validate_only previews: never published).
/// `existing` lends its partition figures. Null when the records do not apply.
std::shared_ptr<const topic_state> preview_state(const std::vector<protocol::metadata_record>& records,
                                                 const controller::metadata_image& base, const std::string& name,
                                                 const std::shared_ptr<const topic_state>& existing) {
  controller::metadata_delta delta{base};
  for (const auto& r : records) {
    if (!delta.apply(r, base.offset() + 1).ok()) return nullptr;
  }
  metadata_view before;
  if (existing) before.topics.emplace(name, existing);
  auto view = make_view(before, std::move(delta).image());
  auto it = view->topics.find(name);
  return it == view->topics.end() ? nullptr : it->second;
}

void admin_manager::create_topic(create_topic_request request, std::function<void(result<topic_description>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  barrier_.post_caught_up([this, request = std::move(request), done = std::move(done)]() mutable {
    if (auto valid = validate_topic_name(request.name); !valid.ok()) return done(valid.error());
    if (model::is_internal_topic(request.name)) {
      return done(error{errc::invalid_topic_exception,
                        "topic names starting with '__' are reserved for internal topics: " + request.name});
    }
    const int32_t partitions = request.partitions_count.value_or(config_.num_partitions);
    if (partitions < 1 || partitions > constants::topic_partitions_max) {
      return done(error{errc::invalid_partitions, std::string(request.partitions_field) + " " +
                                                      std::to_string(partitions) + " is out of range [1, " +
                                                      std::to_string(constants::topic_partitions_max) + "]"});
    }
    const int16_t rf = request.replication_factor.value_or(
        config_.default_replication_factor > 0 ? config_.default_replication_factor
                                               : automatic_replication_factor(*metadata_.controller_view()->image));
    for (const auto& [k, v] : request.configs) {
      if (auto valid = validate_topic_config(k, v); !valid.ok()) return done(valid.error());
    }
    auto cfg = make_log_config(live(*metadata_.controller_view()), request.configs);
    if (!cfg.ok()) return done(cfg.error());
    if (auto valid = validate_topic_config_conflicts(*cfg); !valid.ok()) return done(valid.error());
    auto current = metadata_.controller_view();
    if (current->topics.contains(request.name)) {
      return done(error{errc::topic_already_exists, "topic '" + request.name + "' already exists"});
    }
    // Kafka refuses names that collide once '.' and '_' are treated alike (metric names).
    auto folded = [](std::string s) {
      std::replace(s.begin(), s.end(), '.', '_');
      return s;
    };
    for (const auto& [name, t] : current->topics) {
      if (folded(name) == folded(request.name)) {
        return done(error{errc::invalid_topic_exception, "topic '" + request.name + "' collides with existing topic '" +
                                                             name + "' ('.' and '_' are treated alike)"});
      }
    }
    if (current->topics.size() >= constants::topics_max) {
      return done(error{errc::invalid_request,
                        "the broker holds " + std::to_string(current->topics.size()) + " topics, the limit topics_max"});
    }
    if (auto budget = check_partition_budget(partitions); !budget.ok()) return done(budget.error());
    auto made = new_topic_records(*current->image, request.name, new_topic_id(deps_.random), partitions, rf,
                                  request.configs);
    if (!made.ok()) return done(from_controller(made.error()));
    auto records = std::move(made).value();
    if (request.validate_only) {
      auto preview = preview_state(records, *current->image, request.name, nullptr);
      RINGLOG_ASSERT(preview != nullptr, "a new topic's records apply to the image it was checked against");
      return done(describe(*preview));
    }
    writer_.commit_records(std::move(records), [this, name = request.name, done = std::move(done)](result<void> r) mutable {
      if (!r.ok()) {
        // An entry applies whole or not at all, so nothing of this create is left behind. When
        // it failed because the name exists now, another node created it first (a race of two
        // creates, or of an auto-create with a create): that topic is someone else's and stays.
        if (controller_find_topic(name)) {
          return done(error{errc::topic_already_exists, "topic '" + name + "' already exists"});
        }
        return done(r.error());
      }
      auto t = controller_find_topic(name);
      if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(name) + " (deleted meanwhile)"});
      done(describe(*t));
    });
  });
}

void admin_manager::delete_topic(std::string topic, std::function<void(result<void>)> done) {
  delete_topic_if(std::move(topic), std::nullopt, std::move(done));
}

void admin_manager::delete_topic_of_id(std::string topic, controller::uuid topic_id,
                                       std::function<void(result<void>)> done) {
  delete_topic_if(std::move(topic), topic_id, std::move(done));
}

void admin_manager::delete_topic_if(std::string topic, std::optional<controller::uuid> topic_id,
                                    std::function<void(result<void>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  barrier_.post_caught_up([this, topic = std::move(topic), topic_id, done = std::move(done)]() mutable {
    auto t = controller_find_topic(topic);
    if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
    if (topic_id && t->image->topic_id != *topic_id) {
      return done(error{errc::unknown_topic_or_partition, "topic '" + topic + "' no longer has id " +
                                                              controller::uuid_to_string(*topic_id)});
    }
    if (t->is_internal) return done(error{errc::topic_authorization_failed, "internal topic '" + topic + "' cannot be deleted"});
    protocol::remove_topic_record remove;
    remove.topic_id = t->image->topic_id;
    writer_.commit_records({remove}, std::move(done));
  });
}

void admin_manager::create_partitions(std::string topic, int32_t partitions_count, std::string_view count_field,
                                    std::function<void(result<topic_description>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  barrier_.post_caught_up([this, topic = std::move(topic), partitions_count, count_field,
                           done = std::move(done)]() mutable {
    auto t = controller_find_topic(topic);
    if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
    const int32_t current = t->partitions_count();
    // A coordinator topic's partition of a group or transactional id is the hash of the id modulo
    // the count (Kafka's offsets.topic.num.partitions and transaction.state.log.num.partitions,
    // which its docs say never to change): a new count moves half the ids to partitions that do
    // not hold their state (the breaker of session 31: 16 of 30 groups lost their offsets).
    if (topic == controller::consumer_offsets_topic_name || topic == controller::transaction_state_topic_name) {
      return done(error{errc::invalid_partitions, "the partition count of internal topic '" + topic + "' cannot change: "
                        "each group's or transactional id's coordinator is the hash of the id modulo that count"});
    }
    if (partitions_count <= current) {
      return done(error{errc::invalid_partitions, "topic '" + topic + "' has " + std::to_string(current) +
                                                      " partitions; " + std::string(count_field) +
                                                      " must be larger (got " +
                                                      std::to_string(partitions_count) + ")"});
    }
    if (partitions_count > constants::topic_partitions_max) {
      return done(error{errc::invalid_partitions, std::string(count_field) + " " + std::to_string(partitions_count) +
                                                      " is above the limit " +
                                                      std::to_string(constants::topic_partitions_max)});
    }
    if (auto budget = check_partition_budget(partitions_count - current); !budget.ok()) return done(budget.error());
    std::vector<protocol::metadata_record> records;
    const int32_t rf = t->image->partitions.empty() ? 1 : static_cast<int32_t>(t->image->partitions[0].replicas.size());
    if (auto placed = append_partition_records(records, *metadata_.controller_view()->image, t->image->topic_id,
                                               current, partitions_count, rf);
        !placed.ok()) {
      return done(from_controller(placed.error()));
    }
    writer_.commit_records(std::move(records), [this, topic, done = std::move(done)](result<void> r) {
      if (!r.ok()) return done(r.error());
      auto now = controller_find_topic(topic);
      if (!now) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic) + " (deleted meanwhile)"});
      done(describe(*now));
    });
  });
}

void admin_manager::alter_topic_configs(std::string topic, std::map<std::string, std::optional<std::string>> changes,
                                      bool validate_only, std::function<void(result<topic_description>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  barrier_.post_caught_up([this, topic = std::move(topic), changes = std::move(changes), validate_only,
                                        done = std::move(done)]() mutable {
    auto t = controller_find_topic(topic);
    if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
    if (t->is_internal && !changes.empty()) {
      // __consumer_offsets is compacted with the configs it was created with (as Kafka's).
      return done(error{errc::topic_authorization_failed, "internal topic '" + topic + "' cannot be reconfigured"});
    }
    std::map<std::string, std::string> configs = t->image->configs;
    std::vector<protocol::metadata_record> records;
    for (const auto& [k, v] : changes) {
      if (v) {
        if (auto valid = validate_topic_config(k, *v); !valid.ok()) return done(valid.error());
        configs[k] = *v;
      } else {
        if (auto valid = validate_topic_config(k, topic_config_default(live(*metadata_.controller_view()), k));
            !valid.ok()) {
          return done(valid.error());
        }
        configs.erase(k);
      }
      records.push_back(topic_config(topic, k, v));
    }
    auto cfg = make_log_config(live(*metadata_.controller_view()), configs);
    if (!cfg.ok()) return done(cfg.error());
    if (auto valid = validate_topic_config_conflicts(*cfg); !valid.ok()) return done(valid.error());
    if (validate_only || records.empty()) {
      auto preview = preview_state(records, *metadata_.controller_view()->image, topic, t);
      RINGLOG_ASSERT(preview != nullptr, "config records of an existing topic apply");
      return done(describe(*preview));
    }
    writer_.commit_records(std::move(records), [this, topic, done = std::move(done)](result<void> r) {
      if (!r.ok()) return done(r.error());
      auto now = controller_find_topic(topic);
      if (!now) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic) + " (deleted meanwhile)"});
      done(describe(*now));
    });
  });
}

result<void> admin_manager::check_partition_budget(int64_t adding) const {
  const int64_t total = metadata_.view()->image->partition_count();
  if (total + adding <= config_.partitions_max) return base::ok_v;
  return error{errc::invalid_partitions,
               "the broker holds " + std::to_string(total) + " partitions; " + std::to_string(adding) +
                   " more would pass the limit broker.partitions.max=" + std::to_string(config_.partitions_max) +
                   " (each partition keeps files open; the limit follows the open-file limit)"};
}

result<void> admin_manager::check_partition_exists(const model::topic_partition& tp) const {
  auto t = find_topic(tp.topic);
  if (!t) return error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)};
  if (tp.partition.value() < 0 || tp.partition.value() >= t->partitions_count()) {
    return partition_missing(tp.topic, tp.partition.value(), t->partitions_count());
  }
  return base::ok_v;
}

std::vector<std::string> admin_manager::list_topics(bool include_internal) const {
  std::vector<std::string> out;
  const auto held = metadata_.view();   // kept for the loop (see list_brokers)
  for (const auto& [name, t] : held->topics) {
    if (include_internal || !t->is_internal) out.push_back(name);
  }
  return out;
}

std::vector<std::optional<std::string>> admin_manager::topic_names_of_ids(const std::vector<controller::uuid>& topic_ids) const {
  std::vector<std::optional<std::string>> out(topic_ids.size());
  std::map<std::array<uint8_t, 16>, std::vector<size_t>> asked;   // id -> its places in topic_ids
  for (size_t i = 0; i < topic_ids.size(); ++i) {
    if (!topic_ids[i].is_zero()) asked[topic_ids[i].value].push_back(i);
  }
  if (asked.empty()) return out;
  const auto held = metadata_.view();   // kept for the loop (see list_brokers)
  for (const auto& [name, t] : held->topics) {
    auto it = asked.find(t->image->topic_id.value);
    if (it == asked.end()) continue;
    for (size_t i : it->second) out[i] = name;
  }
  return out;
}

void admin_manager::describe_topic(std::string topic, std::function<void(result<topic_description>)> done) {
  auto t = find_topic(topic);
  if (!t) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(topic)});
  done(describe(*t));
}

}  // namespace ringlog::broker::detail
