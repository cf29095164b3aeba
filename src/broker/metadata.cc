#include "metadata.h"

#include <charconv>
#include <sstream>

#include "broker_configs.h"
#include "ringlog/controller/metadata_entry.h"
#include "ringlog/model/types.h"

namespace ringlog::broker {
namespace {

std::string to_text(const std::optional<model::bytes>& b) { return b ? model::to_string(*b) : std::string{}; }

template <typename T>
result<T> parse_int(const std::map<std::string, std::string>& fields, const std::string& name) {
  auto it = fields.find(name);
  if (it == fields.end()) return error{errc::invalid_request, "metadata record lacks field '" + name + "'"};
  T v{};
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc{} || p != it->second.data() + it->second.size()) {
    return error{errc::invalid_request, "metadata record field '" + name + "' is not a number: " + it->second};
  }
  return v;
}

}  // namespace

namespace {

/// A legacy text record ("topic" upsert or "remove_topic") as metadata records.
result<std::vector<protocol::metadata_record>> legacy_records(const controller::metadata_image& image,
                                                              const model::record& record, int32_t node_id) {
  const std::string type = to_text(record.key);
  std::map<std::string, std::string> fields;
  std::istringstream in(to_text(record.value));
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) return error{errc::invalid_request, "metadata record line without '=': " + line};
    fields[line.substr(0, eq)] = line.substr(eq + 1);
  }
  std::vector<protocol::metadata_record> out;
  const std::string name = fields["name"];
  const controller::topic_image* existing = image.find_topic(name);
  if (type == "remove_topic") {
    if (existing == nullptr) return out;   // nothing to remove
    protocol::remove_topic_record r;
    r.topic_id = existing->topic_id;
    out.push_back(r);
    return out;
  }
  if (type != "topic") return error{errc::invalid_request, "unknown metadata record type '" + type + "'"};
  auto id = controller::uuid_from_string(fields["topic_id"]);
  if (!id.ok()) return error{errc::invalid_request, "metadata record of topic '" + name + "': " + id.error().message};
  auto partitions = parse_int<int32_t>(fields, "partitions");
  if (!partitions.ok()) return partitions.error();
  auto epoch = parse_int<int32_t>(fields, "leader_epoch");
  if (!epoch.ok()) return epoch.error();
  // Legacy topics had one replica, this node; the field is checked but the replicas say it now.
  if (auto rf = parse_int<int16_t>(fields, "replication_factor"); !rf.ok()) return rf.error();
  std::map<std::string, std::string> configs;
  for (const auto& [k, v] : fields) {
    if (k.starts_with("config.")) configs[k.substr(7)] = v;
  }
  int32_t from = 0;
  if (existing != nullptr && existing->topic_id == *id) {
    from = static_cast<int32_t>(existing->partitions.size());
    for (const auto& [k, v] : existing->configs) {
      if (!configs.contains(k)) out.push_back(topic_config(name, k, std::nullopt));
    }
  } else {
    if (existing != nullptr) {   // re-created under a new id
      protocol::remove_topic_record r;
      r.topic_id = existing->topic_id;
      out.push_back(r);
      existing = nullptr;
    }
    protocol::topic_record t;
    t.name = name;
    t.topic_id = *id;
    out.push_back(t);
  }
  for (int32_t p = from; p < *partitions; ++p) {
    protocol::partition_record r;
    r.topic_id = *id;
    r.partition_id = p;
    r.replicas = {node_id};
    r.isr = {node_id};
    r.leader = node_id;
    r.leader_epoch = *epoch;
    r.partition_epoch = 0;
    out.push_back(r);
  }
  for (const auto& [k, v] : configs) {
    if (existing == nullptr || !existing->configs.contains(k) || existing->configs.at(k) != v) {
      out.push_back(topic_config(name, k, v));
    }
  }
  return out;
}

}  // namespace

std::shared_ptr<const metadata_view> make_view(const metadata_view& previous,
                                               std::shared_ptr<const controller::metadata_image> image,
                                               const broker_config* static_config) {
  auto view = std::make_shared<metadata_view>();
  view->image = image;
  view->config = previous.config;
  view->acls = &previous.image->acls() == &image->acls() ? previous.acls : acl_index_of(*image);
  view->client_quotas = &previous.image->client_quotas() == &image->client_quotas() ? previous.client_quotas
                                                                                     : client_quota_index_of(*image);
  if (static_config != nullptr && (!previous.config || previous.image->broker_configs() != image->broker_configs())) {
    view->config = apply_dynamic_configs(*static_config, *image);
  }
  for (const auto& [name, topic] : image->topics()) {
    auto old = previous.topics.find(name);
    const bool same_topic = old != previous.topics.end() && old->second->image->topic_id == topic->topic_id;
    if (same_topic && old->second->image == topic) {
      view->topics.emplace(name, old->second);
      continue;
    }
    auto state = std::make_shared<topic_state>();
    state->image = topic;
    state->is_internal = model::is_internal_topic(name);
    if (same_topic) {
      state->partitions = old->second->partitions;
      state->next_keyless_partition = old->second->next_keyless_partition;
    } else {
      state->next_keyless_partition = std::make_shared<std::atomic<uint32_t>>(0);
    }
    state->partitions.resize(topic->partitions.size());
    for (auto& p : state->partitions) {
      if (!p) p = std::make_shared<partition_stats>();
    }
    view->topics.emplace(name, std::move(state));
  }
  return view;
}

result<std::vector<protocol::metadata_record>> metadata_log_records(const controller::metadata_image& image,
                                                                    const model::record& record, int32_t node_id) {
  if (record.key) return legacy_records(image, record, node_id);
  if (!record.value) return error{errc::invalid_request, "metadata log record without a value"};
  auto records = controller::decode_metadata_entry(*record.value);
  if (!records.ok()) return error{errc::invalid_request, records.error().message};
  return std::move(records).value();
}

model::record metadata_log_record(std::span<const protocol::metadata_record> records) {
  model::record r;
  r.value = controller::encode_metadata_entry(records);
  return r;
}

error from_controller(const controller::error& e) {
  switch (e.code) {
    case controller::errc::not_leader_or_follower: return error{errc::not_controller, e.message};
    case controller::errc::request_timed_out: return error{errc::request_timed_out, e.message};
    case controller::errc::record_too_large: return error{errc::message_too_large, e.message};
    case controller::errc::uncommitted_limit_reached: return error{errc::throttling_quota_exceeded, e.message};
    case controller::errc::kafka_storage_error: return error{errc::kafka_storage_error, e.message};
    case controller::errc::shutting_down: return error{errc::broker_not_available, e.message};
    case controller::errc::unknown_topic_or_partition: return error{errc::unknown_topic_or_partition, e.message};
    case controller::errc::invalid_replication_factor: return error{errc::invalid_replication_factor, e.message};
    case controller::errc::invalid_replica_assignment: return error{errc::invalid_replica_assignment, e.message};
    case controller::errc::no_reassignment_in_progress: return error{errc::no_reassignment_in_progress, e.message};
    case controller::errc::election_not_needed: return error{errc::election_not_needed, e.message};
    case controller::errc::preferred_leader_not_available: return error{errc::preferred_leader_not_available, e.message};
    case controller::errc::stale_broker_epoch: return error{errc::stale_broker_epoch, e.message};
    case controller::errc::duplicate_broker_registration: return error{errc::duplicate_broker_registration, e.message};
    case controller::errc::unknown_server_error: return error{errc::unknown_server_error, e.message};
    default: break;
  }
  return error{errc::invalid_request, e.message};
}

}  // namespace ringlog::broker
