#include "ringlog/controller/replication_control.h"

#include <algorithm>

#include "ringlog/controller/constants.h"
#include "ringlog/controller/placement.h"

namespace ringlog::controller {
namespace {

bool contains(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

/// The refusal of partition `partition` of `topic` in a preferred leader election, as its message says it.
error election_refusal(errc code, const std::string& topic, int32_t partition, int32_t preferred) {
  const std::string where = "partition " + std::to_string(partition) + " of topic '" + topic + "'";
  switch (code) {
    case errc::election_not_needed:
      return error{code, where + " is led by its preferred replica " + std::to_string(preferred) + " already"};
    case errc::preferred_leader_not_available:
      return error{code, where + ": its preferred replica " + std::to_string(preferred) +
                             " is fenced, shutting down or not in the ISR (it may lack acknowledged records)"};
    default:
      return error{errc::unknown_topic_or_partition, where + " does not exist"};
  }
}

}  // namespace

const partition_image* find_partition(const metadata_image& image, const uuid& topic_id, int32_t partition) {
  const topic_image* topic = image.find_topic(topic_id);
  if (topic == nullptr || partition < 0 || partition >= static_cast<int32_t>(topic->partitions.size())) return nullptr;
  return &topic->partitions[static_cast<size_t>(partition)];
}

result<isr_change> alter_partition(const metadata_image& image, int32_t broker_id, const uuid& topic_id,
                                   const protocol::alter_partition_request_data::partition_data& request,
                                   completion_barrier& barrier) {
  const partition_image* part = find_partition(image, topic_id, request.partition_index);
  const std::string where = "partition " + std::to_string(request.partition_index);
  if (part == nullptr) return error{errc::unknown_topic_or_partition, where + " of an unknown topic id or out of range"};
  if (part->leader != broker_id || request.leader_epoch != part->leader_epoch) {
    return error{errc::fenced_leader_epoch, where + " is led by broker " + std::to_string(part->leader) +
                                                " in leader epoch " + std::to_string(part->leader_epoch)};
  }
  if (request.partition_epoch != part->partition_epoch) {
    return error{errc::invalid_update_version, where + " is at partition epoch " + std::to_string(part->partition_epoch)};
  }
  if (!contains(request.new_isr, part->leader)) return error{errc::invalid_request, "the new ISR leaves out the leader"};
  const std::vector<int32_t> usable = usable_brokers(image);
  for (int32_t id : request.new_isr) {
    if (!contains(part->replicas, id)) {
      return error{errc::invalid_request, "broker " + std::to_string(id) + " is no replica of " + where};
    }
    // A fenced or stopping broker never joins the ISR (KIP-841's INELIGIBLE_REPLICA).
    if (!contains(part->in_sync_replicas, id) && !contains(usable, id)) {
      return error{errc::ineligible_replica, "broker " + std::to_string(id) + " is fenced or shutting down"};
    }
  }
  const topic_image& topic = *image.find_topic(topic_id);
  isr_change out;
  out.topic = topic.name;
  out.change.topic_id = topic.topic_id;
  out.change.partition_id = request.partition_index;
  out.change.isr = request.new_isr;
  out.change.ringlog_expected_partition_epoch = part->partition_epoch;
  // The ISR change that brings the last target replica in also completes a reassignment
  // (KIP-455; Kafka's PartitionChangeBuilder.completeReassignmentIfNeeded), in the same record.
  out.completes_reassignment = complete_reassignment_if_ready(
      image, *part, out.change, barrier.rule(image, topic.name, request.partition_index, *part));
  return out;
}

leader_election elect_preferred_leaders(const metadata_image& image,
                                        const std::vector<std::pair<std::string, int32_t>>& wanted) {
  leader_election out;
  for (const auto& e : plan_preferred_elections(image, wanted)) {
    election_outcome o;
    o.topic = e.topic;
    o.partition = e.partition;
    if (e.change) {
      out.records.push_back(*e.change);
      o.leader = e.preferred;
    } else {
      const auto* topic = image.find_topic(e.topic);
      if (topic != nullptr && e.partition >= 0 && static_cast<size_t>(e.partition) < topic->partitions.size()) {
        o.leader = topic->partitions[static_cast<size_t>(e.partition)].leader;
      }
      o.refused = election_refusal(*e.refused, e.topic, e.partition, e.preferred);
    }
    out.outcomes.push_back(std::move(o));
  }
  return out;
}

std::vector<protocol::metadata_record> balance_partition_leaders(const metadata_image& image,
                                                                 int32_t imbalance_percentage) {
  const auto imbalanced = imbalanced_brokers(image, imbalance_percentage);
  std::vector<protocol::metadata_record> records;
  if (imbalanced.empty()) return records;
  for (const auto& e : plan_preferred_elections(image, {})) {
    if (records.size() >= constants::leader_rebalance_changes_max) break;
    if (contains(imbalanced, e.preferred)) records.push_back(*e.change);
  }
  return records;
}

std::vector<protocol::metadata_record> renew_stale_leaderships(const metadata_image& image, int32_t broker_id,
                                                               stale_leadership_map& stale) {
  std::vector<protocol::metadata_record> records;
  for (auto it = stale.begin(); it != stale.end();) {
    auto change = renew_stale_leadership(image, broker_id, it->first.first, it->first.second, it->second);
    if (!change) {
      it = stale.erase(it);   // it moved meanwhile: nothing to repair
      continue;
    }
    records.push_back(*change);
    ++it;
  }
  return records;
}

protocol::config_record topic_config(const std::string& topic, const std::string& name, std::optional<std::string> value) {
  protocol::config_record c;
  c.resource_type = config_resource_topic;
  c.resource_name = topic;
  c.name = name;
  c.value = std::move(value);
  return c;
}

result<void> append_partition_records(std::vector<protocol::metadata_record>& out, const metadata_image& image,
                                      const uuid& topic_id, int32_t from, int32_t to, int32_t replication_factor) {
  auto placed = place_replicas(image, to - from, replication_factor, topic_id);
  if (!placed.ok()) return placed.error();
  for (int32_t p = from; p < to; ++p) {
    protocol::partition_record r;
    r.topic_id = topic_id;
    r.partition_id = p;
    r.replicas = placed.value()[static_cast<size_t>(p - from)];
    r.leader = r.replicas.front();
    // Every replica of a new partition holds all of its (no) records: all are in sync, as Kafka
    // creates them; a replica that does not keep up leaves the ISR (the leader's AlterPartition).
    r.isr = r.replicas;
    r.leader_epoch = 0;
    r.partition_epoch = 0;
    out.push_back(r);
  }
  return base::ok_v;
}

result<std::vector<protocol::metadata_record>> new_topic_records(const metadata_image& image, const std::string& name,
                                                                 const uuid& topic_id, int32_t partitions,
                                                                 int32_t replication_factor,
                                                                 const std::map<std::string, std::string>& configs) {
  std::vector<protocol::metadata_record> out;
  protocol::topic_record topic;
  topic.name = name;
  topic.topic_id = topic_id;
  out.push_back(topic);
  RINGLOG_TRY(append_partition_records(out, image, topic_id, 0, partitions, replication_factor));
  for (const auto& [k, v] : configs) out.push_back(topic_config(name, k, v));
  return out;
}

}  // namespace ringlog::controller
