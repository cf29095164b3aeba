#include "ringlog/controller/metadata_image.h"

#include "ringlog/controller/rebalance_planner.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <variant>

#include "ringlog/base/assert.h"
#include "ringlog/controller/metadata_entry.h"

namespace ringlog::controller {
namespace {

constexpr char base64url_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/// Characters of a uuid in Kafka's text form: ceil(128 / 6).
constexpr size_t uuid_text_chars = 22;

std::string id_text(const uuid& id) { return uuid_to_string(id); }

error bad(std::string what) { return error{errc::invalid_record, std::move(what)}; }

}  // namespace

std::string uuid_to_string(const uuid& id) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (uint8_t byte : id.value) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(base64url_alphabet[(buffer >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(base64url_alphabet[(buffer << (6 - bits)) & 0x3f]);
  RINGLOG_ASSERT_OP(out.size(), ==, uuid_text_chars);
  return out;
}

result<uuid> uuid_from_string(std::string_view text) {
  if (text.size() != uuid_text_chars) {
    return bad("topic id '" + std::string(text) + "' is not 22 characters of URL-safe base64");
  }
  uuid out;
  uint32_t buffer = 0;
  int bits = 0;
  size_t at = 0;
  for (char c : text) {
    const char* found = std::find(base64url_alphabet, base64url_alphabet + 64, c);
    if (found == base64url_alphabet + 64) {
      return bad("topic id '" + std::string(text) + "' has a character outside URL-safe base64: '" + std::string(1, c) + "'");
    }
    buffer = (buffer << 6) | static_cast<uint32_t>(found - base64url_alphabet);
    bits += 6;
    if (bits >= 8 && at < out.value.size()) {
      bits -= 8;
      out.value[at++] = static_cast<uint8_t>((buffer >> bits) & 0xff);
    }
  }
  // The last character carries 2 bits of the 16th byte and 4 unused ones (ids written before
  // ringlog stored them as 16 bytes may have them set; they are dropped).
  return out;
}

const broker_endpoint* broker_registration::endpoint(std::string_view name) const {
  for (const auto& e : endpoints) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const broker_endpoint* broker_registration::http_endpoint() const {
  const broker_endpoint* e = endpoint("http");
  return e != nullptr ? e : endpoint("https");
}

const topic_image* metadata_image::find_topic(std::string_view name) const {
  auto it = topics_.find(name);
  return it == topics_.end() ? nullptr : it->second.get();
}

const topic_image* metadata_image::find_topic(const uuid& id) const {
  auto it = topic_names_by_id_.find(id.value);
  return it == topic_names_by_id_.end() ? nullptr : find_topic(it->second);
}

const broker_registration* metadata_image::find_broker(int32_t node_id) const {
  auto it = brokers_.find(node_id);
  return it == brokers_.end() ? nullptr : &it->second;
}

broker_decommission_state metadata_image::decommission_state(int32_t node_id) const {
  auto it = decommissions_.find(node_id);
  return it == decommissions_.end() ? broker_decommission_state::none : it->second;
}

bool metadata_image::operator==(const metadata_image& other) const {
  if (offset_ != other.offset_ || brokers_ != other.brokers_ || broker_configs_ != other.broker_configs_ ||
      next_producer_id_ != other.next_producer_id_ || features_ != other.features_ || *acls_ != *other.acls_ ||
      scram_credentials_ != other.scram_credentials_ || *client_quotas_ != *other.client_quotas_ ||
      decommissions_ != other.decommissions_ ||
      topics_.size() != other.topics_.size()) {
    return false;
  }
  for (const auto& [name, topic] : topics_) {
    const topic_image* theirs = other.find_topic(name);
    if (theirs == nullptr || !(*theirs == *topic)) return false;
  }
  return true;
}

topic_image* metadata_delta::mutable_topic(const uuid& id) {
  auto name = next_.topic_names_by_id_.find(id.value);
  if (name == next_.topic_names_by_id_.end()) return nullptr;
  auto copied = copied_.find(name->second);
  if (copied != copied_.end()) return copied->second.get();
  auto fresh = std::make_shared<topic_image>(*next_.topics_.at(name->second));
  copied_[name->second] = fresh;
  next_.topics_[name->second] = fresh;
  touched_topics_.push_back(name->second);
  return fresh.get();
}

result<void> metadata_delta::apply_record(const protocol::partition_change_record& r, int64_t) {
  topic_image* topic = mutable_topic(r.topic_id);
  if (topic == nullptr) return bad("PartitionChangeRecord for unknown topic id " + id_text(r.topic_id));
  if (r.partition_id < 0 || r.partition_id >= static_cast<int32_t>(topic->partitions.size())) {
    return bad("PartitionChangeRecord for partition " + std::to_string(r.partition_id) + " of topic '" + topic->name +
               "', which has " + std::to_string(topic->partitions.size()) + " partitions");
  }
  partition_image& p = topic->partitions[static_cast<size_t>(r.partition_id)];
  // An ISR change computed against another partition epoch is stale (Kafka's AlterPartition
  // refuses it with INVALID_UPDATE_VERSION); checked here, where every node applies the entry.
  if (r.ringlog_expected_partition_epoch >= 0 && r.ringlog_expected_partition_epoch != p.partition_epoch) {
    return bad("PartitionChangeRecord for partition " + std::to_string(r.partition_id) + " of topic '" + topic->name +
               "' was computed at partition epoch " + std::to_string(r.ringlog_expected_partition_epoch) +
               ", but the partition is at epoch " + std::to_string(p.partition_epoch) + " (a stale ISR change)");
  }
  if (r.replicas) p.replicas = *r.replicas;
  if (r.isr) p.in_sync_replicas = *r.isr;
  // null: unchanged; an empty list ends that side of a reassignment (KIP-455).
  if (r.adding_replicas) p.adding_replicas = *r.adding_replicas;
  if (r.removing_replicas) p.removing_replicas = *r.removing_replicas;
  // leader -2: unchanged; -1: no leader; else the new leader, in a new leader epoch (KIP-631).
  if (r.leader != -2) {
    p.leader = r.leader;
    ++p.leader_epoch;
  }
  ++p.partition_epoch;
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::register_broker_record& r, int64_t offset) {
  if (next_.decommission_state(r.broker_id) == broker_decommission_state::decommissioned) {
    return bad("RegisterBrokerRecord for broker " + std::to_string(r.broker_id) + ", which was decommissioned");
  }
  broker_registration b;
  b.node_id = r.broker_id;
  // Kafka's broker epoch is the offset of the registration; a registration proposed by the
  // broker itself says -1 and gets that offset here (snapshots carry the epoch explicitly).
  b.broker_epoch = r.broker_epoch >= 0 ? r.broker_epoch : offset;
  b.incarnation_id = r.incarnation_id;
  for (const auto& e : r.end_points) b.endpoints.push_back({e.name, e.host, e.port});
  b.rack = r.rack.value_or("");
  b.fenced = r.fenced;
  b.in_controlled_shutdown = r.in_controlled_shutdown;
  next_.brokers_[b.node_id] = std::move(b);
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::fence_broker_record& r, int64_t) {
  auto it = next_.brokers_.find(r.id);
  if (it == next_.brokers_.end() || it->second.broker_epoch != r.epoch) {
    return bad("FenceBrokerRecord for broker " + std::to_string(r.id) + " epoch " + std::to_string(r.epoch) +
               ", which is not registered in that epoch");
  }
  it->second.fenced = true;
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::unfence_broker_record& r, int64_t) {
  auto it = next_.brokers_.find(r.id);
  if (it == next_.brokers_.end() || it->second.broker_epoch != r.epoch) {
    return bad("UnfenceBrokerRecord for broker " + std::to_string(r.id) + " epoch " + std::to_string(r.epoch) +
               ", which is not registered in that epoch");
  }
  it->second.fenced = false;
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::broker_registration_change_record& r, int64_t) {
  auto it = next_.brokers_.find(r.broker_id);
  if (it == next_.brokers_.end() || it->second.broker_epoch != r.broker_epoch) {
    return bad("BrokerRegistrationChangeRecord for broker " + std::to_string(r.broker_id) + " epoch " +
               std::to_string(r.broker_epoch) + ", which is not registered in that epoch");
  }
  // Kafka's encoding: 0 = unchanged, 1 = true (fenced / in shutdown), 2 = false.
  if (r.fenced == 1) it->second.fenced = true;
  if (r.fenced == 2) it->second.fenced = false;
  if (r.in_controlled_shutdown == 1) it->second.in_controlled_shutdown = true;
  if (r.in_controlled_shutdown == 2) it->second.in_controlled_shutdown = false;
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::topic_record& r, int64_t) {
  if (next_.topics_.contains(r.name)) return bad("TopicRecord for '" + r.name + "', which exists");
  if (next_.topic_names_by_id_.contains(r.topic_id.value)) {
    return bad("TopicRecord for '" + r.name + "' with the id " + id_text(r.topic_id) + " of another topic");
  }
  auto t = std::make_shared<topic_image>();
  t->name = r.name;
  t->topic_id = r.topic_id;
  copied_[r.name] = t;
  next_.topics_[r.name] = t;
  next_.topic_names_by_id_[r.topic_id.value] = r.name;
  touched_topics_.push_back(r.name);
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::partition_record& r, int64_t) {
  topic_image* topic = mutable_topic(r.topic_id);
  if (topic == nullptr) return bad("PartitionRecord for unknown topic id " + id_text(r.topic_id));
  // Partitions arrive in order: a new one is the next index; an existing one is replaced.
  if (r.partition_id < 0 || r.partition_id > static_cast<int32_t>(topic->partitions.size())) {
    return bad("PartitionRecord for partition " + std::to_string(r.partition_id) + " of topic '" + topic->name +
               "', which has " + std::to_string(topic->partitions.size()) + " partitions");
  }
  partition_image p{r.replicas, r.isr, r.leader, std::max(r.leader_epoch, 0), std::max(r.partition_epoch, 0),
                    r.adding_replicas, r.removing_replicas};
  if (r.partition_id == static_cast<int32_t>(topic->partitions.size())) {
    topic->partitions.push_back(std::move(p));
    ++next_.partition_count_;
  } else {
    topic->partitions[static_cast<size_t>(r.partition_id)] = std::move(p);
  }
  return base::ok_v;
}


result<void> metadata_delta::apply_record(const protocol::config_record& r, int64_t) {
  if (r.resource_type == config_resource_topic) {
    auto name = next_.topics_.find(r.resource_name);
    if (name == next_.topics_.end()) return bad("ConfigRecord for unknown topic '" + r.resource_name + "'");
    topic_image* topic = mutable_topic(name->second->topic_id);
    if (r.value) {
      topic->configs[r.name] = *r.value;
    } else {
      topic->configs.erase(r.name);
    }
    return base::ok_v;
  }
  if (r.resource_type == config_resource_broker) {
    int32_t node = -1;
    if (!r.resource_name.empty()) {
      const std::string& text = r.resource_name;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), node);
      if (ec != std::errc() || ptr != text.data() + text.size() || node < 0) {
        return bad("ConfigRecord for broker '" + text + "', which is not a node id");
      }
    }
    if (r.value) {
      next_.broker_configs_[node][r.name] = *r.value;
    } else {
      next_.broker_configs_[node].erase(r.name);
      if (next_.broker_configs_[node].empty()) next_.broker_configs_.erase(node);
    }
    return base::ok_v;
  }
  return bad("ConfigRecord of resource type " + std::to_string(r.resource_type) + " (topic 2 or broker 4)");
}

result<void> metadata_delta::apply_record(const protocol::remove_topic_record& r, int64_t) {
  auto name = next_.topic_names_by_id_.find(r.topic_id.value);
  if (name == next_.topic_names_by_id_.end()) return bad("RemoveTopicRecord for unknown topic id " + id_text(r.topic_id));
  auto topic = next_.topics_.find(name->second);
  next_.partition_count_ -= static_cast<int64_t>(topic->second->partitions.size());
  touched_topics_.push_back(name->second);
  copied_.erase(name->second);
  next_.topics_.erase(topic);
  next_.topic_names_by_id_.erase(name);
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::producer_ids_record& r, int64_t) {
  if (r.next_producer_id < next_.next_producer_id_) {
    return bad("ProducerIdsRecord moves next_producer_id back from " + std::to_string(next_.next_producer_id_) + " to " +
               std::to_string(r.next_producer_id));
  }
  next_.next_producer_id_ = r.next_producer_id;
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::feature_level_record& r, int64_t) {
  next_.features_[r.name] = r.feature_level;
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::user_scram_credential_record& r, int64_t) {
  if (r.name.empty()) return bad("UserScramCredentialRecord with an empty user name");
  if (r.mechanism != 1 && r.mechanism != 2) {
    return bad("UserScramCredentialRecord for user '" + r.name + "' with mechanism " + std::to_string(r.mechanism) +
               " (1 SCRAM-SHA-256 or 2 SCRAM-SHA-512)");
  }
  auto& stored = next_.scram_credentials_[r.name];
  // `serve --add-scram` adds a user once, whichever node's entry comes first in the log; checked
  // here, where every node applies the entry (two nodes starting together both found no user).
  if (r.ringlog_create_only && stored.contains(r.mechanism)) {
    return bad("UserScramCredentialRecord (create only) for user '" + r.name + "' and mechanism " +
               std::to_string(r.mechanism) + ", which already has a credential: left unchanged");
  }
  stored[r.mechanism] = r;
  stored[r.mechanism].ringlog_create_only = false;   // a credential, not a request: snapshots keep no flag
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::remove_user_scram_credential_record& r, int64_t) {
  auto user = next_.scram_credentials_.find(r.name);
  if (user == next_.scram_credentials_.end() || user->second.erase(r.mechanism) == 0) {
    return bad("RemoveUserScramCredentialRecord for user '" + r.name + "' and mechanism " +
               std::to_string(r.mechanism) + ", which has no such credential");
  }
  if (user->second.empty()) next_.scram_credentials_.erase(user);
  return base::ok_v;
}

namespace {

/// The map behind `shared`, changeable by the delta that holds it: copied on the delta's first
/// change while an image shares it, then changed in place (a thousand records of one AlterClientQuotas
/// or CreateAcls, or a snapshot's replay, copied the whole map per record: quadratic, the
/// breaker's q_many.py). In place only when no one else holds it (use_count 1: the delta's own
/// copy, never published yet) and it is not empty (the one map made const, the image's default
/// empty one, is never changed in place; every other map is made here, not const).
template <typename Map>
Map& changeable(std::shared_ptr<const Map>& shared) {
  if (shared.use_count() != 1 || shared->empty()) shared = std::make_shared<Map>(*shared);
  return const_cast<Map&>(*shared);
}

}  // namespace

result<void> metadata_delta::apply_record(const protocol::access_control_entry_record& r, int64_t) {
  if (next_.acls_->contains(r.id.value)) return bad("AccessControlEntryRecord: ACL id " + id_text(r.id) + " exists");
  if (r.resource_name.empty() || r.principal.empty() || r.host.empty()) {
    return bad("AccessControlEntryRecord " + id_text(r.id) + ": empty resource name, principal or host");
  }
  changeable(next_.acls_).emplace(r.id.value, r);
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::remove_access_control_entry_record& r, int64_t) {
  if (!next_.acls_->contains(r.id.value)) return bad("RemoveAccessControlEntryRecord for unknown ACL id " + id_text(r.id));
  changeable(next_.acls_).erase(r.id.value);
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::client_quota_record& r, int64_t) {
  if (r.entity.empty() || r.key.empty()) return bad("ClientQuotaRecord with no entity or no key");
  metadata_image::client_quota_entity entity;
  for (const auto& part : r.entity) {
    if (!entity.emplace(part.entity_type, part.entity_name).second) {
      return bad("ClientQuotaRecord names entity type '" + part.entity_type + "' twice");
    }
  }
  if (r.remove) {
    auto present = next_.client_quotas_->find(entity);
    if (present == next_.client_quotas_->end()) return base::ok_v;   // removing an absent key is no error (Kafka)
    auto& quotas = changeable(next_.client_quotas_);
    auto found = quotas.find(entity);
    found->second.erase(r.key);
    if (found->second.empty()) quotas.erase(found);
  } else {
    changeable(next_.client_quotas_)[entity][r.key] = r.value;
  }
  return base::ok_v;
}

result<void> metadata_delta::apply_record(const protocol::broker_decommission_record& r, int64_t) {
  const auto state = static_cast<broker_decommission_state>(r.state);
  if (r.state < 0 || r.state > 2) {
    return bad("BrokerDecommissionRecord for broker " + std::to_string(r.broker_id) + " with state " +
               std::to_string(r.state) + " (0 cancelled, 1 decommissioning, 2 decommissioned)");
  }
  if (next_.decommission_state(r.broker_id) == broker_decommission_state::decommissioned) {
    return bad("BrokerDecommissionRecord for broker " + std::to_string(r.broker_id) + ", which is decommissioned already");
  }
  if (state == broker_decommission_state::none) {
    next_.decommissions_.erase(r.broker_id);
    return base::ok_v;
  }
  // Checked where it applies too: two decommissions that each fit alone cannot both start. (In a
  // snapshot these records come before the topics, so a replay never refuses one.)
  if (state == broker_decommission_state::decommissioning &&
      next_.decommission_state(r.broker_id) == broker_decommission_state::none) {
    if (auto refused = decommission_capacity_refusal(next_, r.broker_id)) return bad(*refused);
  }
  if (state == broker_decommission_state::decommissioned) next_.brokers_.erase(r.broker_id);
  next_.decommissions_[r.broker_id] = state;
  return base::ok_v;
}

result<void> metadata_delta::apply(const protocol::metadata_record& record, int64_t offset) {
  RINGLOG_ASSERT_OP(offset, >=, next_.offset_);   // the records of one entry share its offset
  next_.offset_ = offset;
  // One apply_record per record type: a new record type without one fails the build.
  return std::visit([this, offset](const auto& r) { return apply_record(r, offset); }, record);
}

std::shared_ptr<const metadata_image> metadata_delta::image() && {
  copied_.clear();
  return std::make_shared<const metadata_image>(std::move(next_));
}

}  // namespace ringlog::controller

namespace ringlog::controller {

std::vector<protocol::metadata_record> image_records(const metadata_image& image) {
  std::vector<protocol::metadata_record> out;
  for (const auto& [level_name, level] : image.features()) {
    protocol::feature_level_record f;
    f.name = level_name;
    f.feature_level = level;
    out.push_back(f);
  }
  for (const auto& [id, b] : image.brokers()) {
    protocol::register_broker_record r;
    r.broker_id = b.node_id;
    r.broker_epoch = b.broker_epoch;
    r.incarnation_id = b.incarnation_id;
    for (const auto& e : b.endpoints) r.end_points.push_back({e.name, e.host, e.port, 0, {}});
    r.rack = b.rack;
    r.fenced = b.fenced;
    r.in_controlled_shutdown = b.in_controlled_shutdown;
    out.push_back(r);
  }
  for (const auto& [id, state] : image.decommissions()) {
    protocol::broker_decommission_record d;
    d.broker_id = id;
    d.state = static_cast<int8_t>(state);
    out.push_back(d);
  }
  for (const auto& [node, configs] : image.broker_configs()) {
    for (const auto& [name, value] : configs) {
      protocol::config_record c;
      c.resource_type = config_resource_broker;
      c.resource_name = node < 0 ? "" : std::to_string(node);
      c.name = name;
      c.value = value;
      out.push_back(c);
    }
  }
  for (const auto& [name, topic] : image.topics()) {
    protocol::topic_record t;
    t.name = name;
    t.topic_id = topic->topic_id;
    out.push_back(t);
    for (size_t p = 0; p < topic->partitions.size(); ++p) {
      const partition_image& image_p = topic->partitions[p];
      protocol::partition_record r;
      r.topic_id = topic->topic_id;
      r.partition_id = static_cast<int32_t>(p);
      r.replicas = image_p.replicas;
      r.isr = image_p.in_sync_replicas;
      r.leader = image_p.leader;
      r.leader_epoch = image_p.leader_epoch;
      r.partition_epoch = image_p.partition_epoch;
      r.adding_replicas = image_p.adding_replicas;
      r.removing_replicas = image_p.removing_replicas;
      out.push_back(r);
    }
    for (const auto& [config_name, value] : topic->configs) {
      protocol::config_record c;
      c.resource_type = config_resource_topic;
      c.resource_name = name;
      c.name = config_name;
      c.value = value;
      out.push_back(c);
    }
  }
  for (const auto& [user, by_mechanism] : image.scram_credentials()) {
    for (const auto& [mechanism, credential] : by_mechanism) out.push_back(credential);
  }
  for (const auto& [id, acl] : image.acls()) out.push_back(acl);
  for (const auto& [entity, values] : image.client_quotas()) {
    for (const auto& [key, value] : values) {
      protocol::client_quota_record r;
      for (const auto& [type, name] : entity) {
        protocol::client_quota_record::entity_data part;
        part.entity_type = type;
        part.entity_name = name;
        r.entity.push_back(std::move(part));
      }
      r.key = key;
      r.value = value;
      out.push_back(r);
    }
  }
  if (image.next_producer_id() > 0) {
    protocol::producer_ids_record r;
    r.broker_id = -1;
    r.next_producer_id = image.next_producer_id();
    out.push_back(r);
  }
  return out;
}

std::vector<uint8_t> encode_snapshot(const metadata_image& image) {
  auto records = image_records(image);
  protocol::writer out;
  const size_t entries = (records.size() + metadata_entry_records_max - 1) / metadata_entry_records_max;
  out.write_unsigned_varint(static_cast<uint32_t>(entries));
  for (size_t i = 0; i < entries; ++i) {
    const size_t from = i * metadata_entry_records_max;
    const size_t count = std::min(metadata_entry_records_max, records.size() - from);
    auto entry = encode_metadata_entry(std::span(records).subspan(from, count));
    out.write_unsigned_varint(static_cast<uint32_t>(entry.size()));
    out.write_raw(entry);
  }
  auto bytes = std::move(out).take();
  std::vector<uint8_t> payload(bytes.size());
  std::memcpy(payload.data(), bytes.data(), bytes.size());
  return payload;
}

result<std::shared_ptr<const metadata_image>> decode_snapshot(std::span<const uint8_t> payload, int64_t offset) {
  protocol::reader in(std::as_bytes(payload));
  auto entries = in.read_unsigned_varint();
  if (!entries.ok()) return bad("snapshot: entry count: " + entries.error().message);
  metadata_delta delta{metadata_image{}};
  for (uint32_t i = 0; i < *entries; ++i) {
    auto length = in.read_unsigned_varint();
    if (!length.ok()) return bad("snapshot: entry " + std::to_string(i) + ": " + length.error().message);
    auto entry = in.read_raw(*length);
    if (!entry.ok()) return bad("snapshot: entry " + std::to_string(i) + ": " + entry.error().message);
    auto records = decode_metadata_entry(*entry);
    if (!records.ok()) return records.error();
    for (const auto& r : *records) RINGLOG_TRY(delta.apply(r, std::max<int64_t>(offset, 0)));
  }
  if (in.remaining() != 0) return bad("snapshot: " + std::to_string(in.remaining()) + " bytes after the last entry");
  return std::move(delta).image();
}

}  // namespace ringlog::controller
