#pragma once
// What the broker reads of the cluster metadata, and how the metadata log's records become
// changes of the image (design.md section 6).
//
// The metadata log is the partition log `__cluster_metadata-0` in the log directory. Each of its
// records is one metadata entry (controller/metadata_entry.h): Kafka's metadata records of one
// change. Logs written by ringlog before the controller quorum hold text records instead, keyed
// "topic" (a full upsert: name, topic_id, partitions, replication_factor, leader_epoch,
// config.<name>=<value>, one "field=value" per line) or "remove_topic" (name, topic_id); they are
// read as the metadata records they stand for (legacy_records), so such a directory opens with
// every topic and config.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/base/random.h"
#include "ringlog/broker/broker.h"
#include "ringlog/controller/membership.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/controller/placement.h"
#include "ringlog/controller/producer_ids.h"
#include "ringlog/controller/reassignment.h"
#include "ringlog/controller/replication_control.h"
#include "ringlog/model/record.h"
#include "ringlog/partition/partition.h"
#include "ringlog/partition/topic_state.h"

namespace ringlog::partition {
template <class View>
class metadata_publisher;   // ringlog/partition/metadata_publisher.h
}  // namespace ringlog::partition

namespace ringlog::broker {

// The active controller's pure decisions (src/controller: placement, elections, reassignment,
// producer ids, membership, replication control), which the broker's controller duties commit as
// metadata records.
using controller::append_partition_records;
using controller::automatic_replication_factor;
using controller::broker_heartbeats;
using controller::complete_reassignment_if_ready;
using controller::completion_barrier;
using controller::controlled_shutdown_records;
using controller::elect_leaderless;
using controller::imbalanced_brokers;
using controller::metadata_caught_up;
using controller::new_topic_records;
using controller::place_replicas;
using controller::plan_preferred_elections;
using controller::plan_reassignments;
using controller::preferred_election;
using controller::producer_id_control;
using controller::reassignment_target;
using controller::rejoin_partitions;
using controller::remove_broker_from_partitions;
using controller::renew_stale_leadership;
using controller::topic_config;
using controller::usable_brokers;
using partition::partition_stats;
/// A topic as the data path sees it (ringlog/partition/topic_state.h).
using partition::topic_state;

/// The metadata a shard reads without a lock: one immutable value, replaced as a whole.
struct metadata_view {
  std::shared_ptr<const controller::metadata_image> image = std::make_shared<const controller::metadata_image>();
  std::map<std::string, std::shared_ptr<const topic_state>, std::less<>> topics;
  /// The broker config with the image's dynamic broker configs applied (broker_configs.h); null
  /// until the first view built with the static config.
  std::shared_ptr<const broker_config> config;
  /// The image's ACLs as the authorizer's index (security/acl.h), rebuilt only when they changed.
  std::shared_ptr<const security::acl_index> acls = std::make_shared<const security::acl_index>();
  /// The image's client quotas as the enforcement index (security/quota.h), rebuilt only when
  /// they changed.
  std::shared_ptr<const security::client_quota_index> client_quotas =
      std::make_shared<const security::client_quota_index>();
};

/// The client quotas of `image` as the enforcement index (quotas.cc); entity types or keys the
/// index does not know are skipped (the proposer refuses them).
std::shared_ptr<const security::client_quota_index> client_quota_index_of(const controller::metadata_image& image);

/// The ACLs of `image` as the authorizer's index (acls.cc).
std::shared_ptr<const security::acl_index> acl_index_of(const controller::metadata_image& image);
/// An ACL as its AccessControlEntryRecord holds it, and back.
security::acl_binding acl_of(const protocol::access_control_entry_record& record);
protocol::access_control_entry_record acl_record(const security::acl_binding& acl, const controller::uuid& id);

/// The view after `image`, sharing every topic_state of `previous` whose topic image is unchanged.
/// With `static_config`, its config is `static_config` with the image's dynamic broker configs
/// applied (rebuilt only when those changed); without, it keeps `previous`'s.
std::shared_ptr<const metadata_view> make_view(const metadata_view& previous,
                                               std::shared_ptr<const controller::metadata_image> image,
                                               const broker_config* static_config = nullptr);

/// The metadata records a metadata-log record stands for: a metadata entry, or a legacy text
/// record read against `image` (a legacy upsert of a topic that exists becomes the records of
/// what changed). `node_id` is this node (legacy topics had their only replica here). Errors:
/// invalid_request naming the bad field or record (the log is then refused at start).
result<std::vector<protocol::metadata_record>> metadata_log_records(const controller::metadata_image& image,
                                                                    const model::record& record, int32_t node_id);

/// The value of a metadata-log record for `records` (one metadata entry).
model::record metadata_log_record(std::span<const protocol::metadata_record> records);

/// A controller error as the broker API's (the same Kafka name where both have it; the quorum's
/// own failures as the codes a client retries on: not_controller, request_timed_out, ...).
error from_controller(const controller::error& e);

namespace detail {
/// The metadata publisher for the broker's view: the quorum's state machine, the views, the
/// replicas following them (src/broker/metadata_publisher.h; the class is the partition module's).
using metadata_publisher = ::ringlog::partition::metadata_publisher<metadata_view>;

/// The broker's log lines (broker_dependencies::log; none when it is empty), a value each part
/// keeps: info and error lines.
class broker_log {
 public:
  explicit broker_log(std::function<void(bool info, const std::string& message)> sink) : sink_(std::move(sink)) {}
  void info(const std::string& message) const {
    if (sink_) sink_(true, message);
  }
  void error(const std::string& message) const {
    if (sink_) sink_(false, message);
  }

 private:
  std::function<void(bool info, const std::string& message)> sink_;
};

/// The broker config as of `view`: its dynamic broker configs over the static ones, or
/// `static_config` itself for a view without them (before start).
inline const broker_config& live_config(const metadata_view& view, const broker_config& static_config) {
  return view.config ? *view.config : static_config;
}

/// "topic 'NAME' does not exist": the text of unknown_topic_or_partition for a topic.
using ::ringlog::partition::unknown_topic_message;
/// A random (version 4) UUID from `random`: topic, incarnation and ACL ids (broker.cc).
controller::uuid new_topic_id(base::random_source& random);
/// unknown_topic_or_partition naming the partition and the topic's partition count.
error partition_missing(const std::string& topic, int32_t partition, int32_t partitions_count);
/// The answer to new client work for a shard whose task queue is full (shard_runtime::admits).
error shard_busy(size_t shard);
/// Why a leader's shard holds no replica of `tp`: the topic is gone (`topic` null), its replica's
/// files did not open (kafka_storage_error naming why: offline here), or its replica is not
/// opened yet (retriable not_leader_or_follower).
error no_replica_here(const topic_state* topic, const model::topic_partition& tp);
/// A (re)registration (start_up.cc), and the leadership of every partition that lost its leader
/// while this broker was away and lists it in its ISR (KRaft elects them when it is unfenced).
std::vector<protocol::metadata_record> registration_records(const controller::metadata_image& image, int32_t node_id,
                                                            const controller::uuid& incarnation,
                                                            const broker_dependencies& deps, const std::string& rack);
}  // namespace detail

}  // namespace ringlog::broker
