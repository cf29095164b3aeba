#pragma once
// The metadata image (KIP-631): what every node knows of the cluster, built by applying the
// committed records of the metadata log `__cluster_metadata-0` in offset order. An image is
// immutable once published: apply() returns a new image that shares every unchanged topic with
// the old one (copy-on-write), so a shard can hold one with a plain shared_ptr and read it
// without a lock while the next one is being built.
//
// Records and their rules (Kafka's metadata record kinds, protocol/schemas/*Record.json):
//   RegisterBrokerRecord        a broker (re)registers: replaces its registration, new broker epoch
//   FenceBrokerRecord / UnfenceBrokerRecord / BrokerRegistrationChangeRecord
//                               fenced and in-controlled-shutdown state, for the given broker epoch
//   TopicRecord                 a topic name and its UUID; its partitions follow as PartitionRecords
//   PartitionRecord             a partition's full state: replicas, ISR, leader, leader epoch,
//                               partition epoch
//   PartitionChangeRecord       a change of some of those: partition_epoch + 1 always; leader_epoch
//                               + 1 when the leader field is set (KIP-631)
//   ConfigRecord                a topic (resource type 2), broker (4, "" = cluster default) config;
//                               a null value removes it
//   RemoveTopicRecord           the topic and its partitions are gone
//   ProducerIdsRecord           the next producer id block starts at next_producer_id
//   FeatureLevelRecord          a feature's finalized level (metadata.version)
//   UserScramCredentialRecord   a user's SCRAM credential for one mechanism (salt, stored key,
//                               server key, iterations; never a password): replaces the old one
//   RemoveUserScramCredentialRecord
//                               removes a user's credential for one mechanism (an unknown one
//                               is refused)
//   AccessControlEntryRecord / RemoveAccessControlEntryRecord
//                               an ACL (issue 30) with its UUID, as Kafka's StandardAuthorizer
//                               stores them; the fields are checked by the proposer
//   ClientQuotaRecord           a client quota (issue 31): an entity (user / client-id / ip, each
//                               a name or null for the default), a key and a value; remove=true
//                               drops the key (an absent one is no error, as Kafka's
//                               ClientQuotasImage); the proposer checks entity, key and value

#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringlog/controller/errc.h"
#include "ringlog/protocol/messages.h"

namespace ringlog::controller {

using protocol::uuid;

/// Kafka's ConfigResource types used by ConfigRecord.resource_type.
inline constexpr int8_t config_resource_topic = 2;
inline constexpr int8_t config_resource_broker = 4;

/// Text of a uuid as Kafka shows it: 22 characters of URL-safe base64 without padding.
std::string uuid_to_string(const uuid& id);
/// Parses Kafka's 22-character form. Errors: invalid_record naming the text.
result<uuid> uuid_from_string(std::string_view text);

struct broker_endpoint {
  std::string name;   // listener kind: "http", "cluster", later "kafka"
  std::string host;
  uint16_t port = 0;
  bool operator==(const broker_endpoint&) const = default;
};

struct broker_registration {
  int32_t node_id = 0;
  int64_t broker_epoch = 0;     // the metadata offset of its RegisterBrokerRecord (Kafka's rule)
  uuid incarnation_id;          // new on every process start
  std::vector<broker_endpoint> endpoints;
  std::string rack;             // empty: none
  bool fenced = true;
  bool in_controlled_shutdown = false;
  bool operator==(const broker_registration&) const = default;
  /// The endpoint named `name`, or nullptr.
  [[nodiscard]] const broker_endpoint* endpoint(std::string_view name) const;
  /// The HTTP door other brokers pass calls on to: "http", else "https" (a node whose only HTTP
  /// listener is https://, reached over TLS); nullptr when it registered neither.
  [[nodiscard]] const broker_endpoint* http_endpoint() const;
};

/// A broker's decommission (BrokerDecommissionRecord's State): none (never, or cancelled: the
/// record's 0), decommissioning (1: no new replicas go there, its replicas move off), decommissioned
/// (2: its registration is gone and its id may not register again).
enum class broker_decommission_state : int8_t { none = 0, decommissioning = 1, decommissioned = 2 };

struct partition_image {
  std::vector<int32_t> replicas;
  std::vector<int32_t> in_sync_replicas;
  int32_t leader = -1;           // -1: no leader
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;
  /// An ongoing reassignment (KIP-455): `replicas` is then the target replicas followed by the
  /// ones being removed; adding_replicas are in the target and not in the original replicas,
  /// removing_replicas in the original and not in the target. Both empty: none under way.
  std::vector<int32_t> adding_replicas;
  std::vector<int32_t> removing_replicas;
  bool operator==(const partition_image&) const = default;
  [[nodiscard]] bool reassigning() const { return !adding_replicas.empty() || !removing_replicas.empty(); }
};

struct topic_image {
  std::string name;
  uuid topic_id;
  std::vector<partition_image> partitions;       // index = partition id
  std::map<std::string, std::string> configs;    // topic-level overrides only
  bool operator==(const topic_image&) const = default;
};

class metadata_image {
 public:
  /// The metadata log offset this image includes (-1: nothing applied).
  [[nodiscard]] int64_t offset() const { return offset_; }
  [[nodiscard]] const topic_image* find_topic(std::string_view name) const;
  [[nodiscard]] const topic_image* find_topic(const uuid& id) const;
  /// Topics by name.
  [[nodiscard]] const std::map<std::string, std::shared_ptr<const topic_image>, std::less<>>& topics() const {
    return topics_;
  }
  [[nodiscard]] const broker_registration* find_broker(int32_t node_id) const;
  [[nodiscard]] const std::map<int32_t, broker_registration>& brokers() const { return brokers_; }
  /// Dynamic broker configs: node id -> name -> value; node id -1 holds the cluster-wide defaults.
  [[nodiscard]] const std::map<int32_t, std::map<std::string, std::string>>& broker_configs() const {
    return broker_configs_;
  }
  /// First producer id not yet handed out in a block (ProducerIdsRecord), 0 before any.
  [[nodiscard]] int64_t next_producer_id() const { return next_producer_id_; }
  [[nodiscard]] const std::map<std::string, int16_t>& features() const { return features_; }
  /// SCRAM credentials: user name -> Kafka's ScramMechanism type (1 SHA-256, 2 SHA-512) -> the
  /// record that set it (its salt, stored key, server key and iterations).
  using scram_credentials_map =
      std::map<std::string, std::map<int8_t, protocol::user_scram_credential_record>, std::less<>>;
  [[nodiscard]] const scram_credentials_map& scram_credentials() const { return scram_credentials_; }
  /// Partitions of all topics together.
  [[nodiscard]] int64_t partition_count() const { return partition_count_; }
  /// The ACLs by id (AccessControlEntryRecord), shared between images until one changes.
  using acl_map = std::map<std::array<uint8_t, 16>, protocol::access_control_entry_record>;
  [[nodiscard]] const acl_map& acls() const { return *acls_; }
  /// Client quotas (ClientQuotaRecord): entity -> quota key -> value. An entity maps Kafka's
  /// entity type ("user", "client-id", "ip") to a name, nullopt for the default entity.
  using client_quota_entity = std::map<std::string, std::optional<std::string>>;
  using client_quota_map = std::map<client_quota_entity, std::map<std::string, double>>;
  [[nodiscard]] const client_quota_map& client_quotas() const { return *client_quotas_; }
  /// Brokers being decommissioned or decommissioned (BrokerDecommissionRecord, issue 33): node id
  /// -> its state. A decommissioned broker has no registration and may not register again.
  [[nodiscard]] const std::map<int32_t, broker_decommission_state>& decommissions() const { return decommissions_; }
  /// The decommission state of `node_id`, none when it was never decommissioned (or cancelled).
  [[nodiscard]] broker_decommission_state decommission_state(int32_t node_id) const;

  bool operator==(const metadata_image& other) const;

 private:
  friend class metadata_delta;
  int64_t offset_ = -1;
  std::map<std::string, std::shared_ptr<const topic_image>, std::less<>> topics_;
  std::map<std::array<uint8_t, 16>, std::string> topic_names_by_id_;
  std::map<int32_t, broker_registration> brokers_;
  std::map<int32_t, std::map<std::string, std::string>> broker_configs_;
  int64_t next_producer_id_ = 0;
  std::map<std::string, int16_t> features_;
  scram_credentials_map scram_credentials_;
  int64_t partition_count_ = 0;
  std::shared_ptr<const acl_map> acls_ = std::make_shared<const acl_map>();
  std::shared_ptr<const client_quota_map> client_quotas_ = std::make_shared<const client_quota_map>();
  std::map<int32_t, broker_decommission_state> decommissions_;
};

/// Changes to an image, record by record; then image() for the result. Copy-on-write: the base
/// image is never modified, and topics no record touched are shared with it.
class metadata_delta {
 public:
  explicit metadata_delta(const metadata_image& base) : next_(base) {}
  /// Applies one committed record at metadata offset `offset` (>= every earlier one; the records
  /// of one metadata entry share its offset). Errors:
  /// invalid_record naming the record and what does not fit (a partition of an unknown topic,
  /// a change of an unknown partition, ...); the delta is then unusable.
  result<void> apply(const protocol::metadata_record& record, int64_t offset);
  /// The new image (the delta may not be used afterwards).
  std::shared_ptr<const metadata_image> image() &&;
  /// Topic names created, changed (partitions, configs, ISR, leaders) or removed so far.
  [[nodiscard]] const std::vector<std::string>& touched_topics() const { return touched_topics_; }

 private:
  /// The topic to change, copied on first change; nullptr when no topic has that id.
  topic_image* mutable_topic(const uuid& id);
  // The change of one record type (apply() visits the record).
  result<void> apply_record(const protocol::register_broker_record& r, int64_t offset);
  result<void> apply_record(const protocol::fence_broker_record& r, int64_t offset);
  result<void> apply_record(const protocol::unfence_broker_record& r, int64_t offset);
  result<void> apply_record(const protocol::broker_registration_change_record& r, int64_t offset);
  result<void> apply_record(const protocol::topic_record& r, int64_t offset);
  result<void> apply_record(const protocol::partition_record& r, int64_t offset);
  result<void> apply_record(const protocol::partition_change_record& r, int64_t offset);
  result<void> apply_record(const protocol::config_record& r, int64_t offset);
  result<void> apply_record(const protocol::remove_topic_record& r, int64_t offset);
  result<void> apply_record(const protocol::producer_ids_record& r, int64_t offset);
  result<void> apply_record(const protocol::feature_level_record& r, int64_t offset);
  result<void> apply_record(const protocol::user_scram_credential_record& r, int64_t offset);
  result<void> apply_record(const protocol::remove_user_scram_credential_record& r, int64_t offset);
  result<void> apply_record(const protocol::access_control_entry_record& r, int64_t offset);
  result<void> apply_record(const protocol::remove_access_control_entry_record& r, int64_t offset);
  result<void> apply_record(const protocol::client_quota_record& r, int64_t offset);
  result<void> apply_record(const protocol::broker_decommission_record& r, int64_t offset);
  metadata_image next_;
  std::vector<std::string> touched_topics_;
  std::map<std::string, std::shared_ptr<topic_image>, std::less<>> copied_;   // topics copied in this delta
};

}  // namespace ringlog::controller

namespace ringlog::controller {

/// Records that rebuild `image` from an empty one (a snapshot's contents, KIP-630): brokers,
/// broker configs, topics with their partitions and configs, the producer id block, features,
/// SCRAM credentials, ACLs, client quotas.
std::vector<protocol::metadata_record> image_records(const metadata_image& image);
/// A snapshot payload: Kafka's unsigned varint count of metadata entries, then each as an
/// unsigned varint length and the entry (metadata_entry.h); entries of at most
/// metadata_entry_records_max records.
std::vector<uint8_t> encode_snapshot(const metadata_image& image);
/// The image a snapshot payload holds, at metadata offset `offset`. Errors: invalid_record
/// naming what does not decode or apply.
result<std::shared_ptr<const metadata_image>> decode_snapshot(std::span<const uint8_t> payload, int64_t offset);

}  // namespace ringlog::controller
