#pragma once
// The produce pipeline (a class of its own since issue 28): Kafka's ReplicaManager.appendRecords
// and the produce half of KafkaApis. HTTP/WebSocket records (produce_known: auto-creation of the
// topic, transactions, idempotence; produce_appending: partitions chosen and records encoded as
// v2 batches) and Kafka clients' and peers' batches (produce_batches_from) take one append
// pipeline: checked whole (validate_batches, produce_validation.cc), recompressed for
// compression.type and appended on the partition's shard with group commit, answered per acks
// (produce.cc). produce_pipeline owns the produces parked behind a topic's auto-creation and
// reaches the rest of the broker only through the parts it is given. Private to the broker
// module.
//
// Shards: produce_known and produce_batches_from run on any thread (the caller's); the append runs
// on the partition's shard (append_batches_on_shard), which alone touches its replica.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "admin_manager.h"
#include "delay_host.h"
#include "leader_forwarder.h"
#include "metadata.h"
#include "metadata_barrier.h"
#include "produce_lines.h"
#include "ringlog/base/clock.h"
#include "ringlog/broker/broker.h"
#include "ringlog/partition/partition_manager.h"
#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/storage/partition_log.h"
#include "security_manager.h"

namespace ringlog::broker {
class txn_service;
}  // namespace ringlog::broker

namespace ringlog::broker::detail {

class partition_transactions;
class producer_id_manager;

/// A batch of `tp` refused because broker `node_id` is stopping: nothing of it is stored.
/// NOT_LEADER_OR_FOLLOWER, not BROKER_NOT_AVAILABLE: during a controlled shutdown this broker's
/// leaderships are moving to other replicas (KIP-631), and that is the answer Kafka clients retry
/// after a metadata refresh and the forwarding broker of an HTTP write holds the batch for, to send
/// it to the next leader (a new user's HTTP producers through another node were told "the broker
/// is shutting down" for writes never stored, in every SIGTERM of a leader). produce.cc; also
/// what leader_forwarder answers a peer's forwarded produce while stopping.
error shutting_down_refusal(const model::topic_partition& tp, int32_t node_id);
/// invalid_record for a keyless record (`which` names it) of a compacted topic (produce_validation.cc).
error compacted_key_missing(const std::string& which, const std::string& topic, const storage::log_config& config);
/// Kafka's LogValidator: every record of a compacted topic has a key, else the whole request is refused.
result<void> check_keys_for_compaction(const std::string& topic, const storage::log_config& config,
                                       const std::vector<produce_record>& records);

class produce_pipeline {
 public:
  /// `config`: the static broker config (a view's dynamic one replaces it where it has one);
  /// `partition_managers`: each shard's replicas (partition_managers[i] touched only on shard i);
  /// `txn_partitions`: KIP-890 part 1's verification at a transactional id's coordinator;
  /// `producer_ids`: check_producer_id; `txns`: the transaction coordinators once started;
  /// `stopping`: the broker's stop flag. Every reference outlives this object. The parts may be
  /// constructed after it: it reaches none of them before it serves (and takes each by its own
  /// class, not a base, which a reference could not be converted to before its construction).
  produce_pipeline(const metadata_publisher& metadata, const broker_config& config, const base::clock& clock,
                   runtime::shard_runtime& runtime,
                   const std::vector<std::unique_ptr<partition_manager>>& partition_managers,
                   leader_forwarder& forwarder, metadata_barrier& barrier, delay_host& delays,
                   const security_manager& security, admin_manager& admin, partition_transactions& txn_partitions,
                   const producer_id_manager& producer_ids, const std::unique_ptr<txn_service>& txns,
                   const std::atomic<bool>& stopping)
      : metadata_(metadata),
        config_(config),
        clock_(clock),
        runtime_(runtime),
        partition_managers_(partition_managers),
        forwarder_(forwarder),
        barrier_(barrier),
        delay_host_(delays),
        security_(security),
        admin_(admin),
        txn_partitions_(txn_partitions),
        producer_ids_(producer_ids),
        txns_(txns),
        stopping_(stopping) {}

  /// Who made the batches of a produce_batches_from call, which decides the checks already made.
  enum class batch_origin {
    kafka_client,    ///< a Kafka producer's Produce: every check
    peer_broker,     ///< a peer's HTTP records (forwarding.cc): may be for a delay topic (the
                     ///< peer's produce_to diverted them there)
    local_records,   ///< this node's HTTP/WebSocket records, batched by produce_appending after
                     ///< the per-record checks (internal topics, delivery times, keys)
  };

  /// broker::produce once the topic is known or the metadata barrier passed (metadata_barrier.h):
  /// the request's checks, then produce_to, or the topic auto-created first (produces to a topic
  /// being auto-created wait behind the creating one, in call order).
  void produce_known(produce_request request, std::function<void(result<produce_response>)> done);
  /// The produce of records to `topic` (known, found by the caller) after the topic lookup:
  /// partitions, leaders, batches. `internal_write`: the broker's own writes to internal topics
  /// (delay records), refused otherwise (topic_authorization_failed).
  void produce_to(const std::shared_ptr<const topic_state>& topic, produce_request request,
                  std::function<void(result<produce_response>)> done, bool internal_write = false);
  /// This node's HTTP/WebSocket batch (one record batch) for a partition this node led when
  /// produce_appending routed it: produce_batches_from, or forward_produce when the calling
  /// thread's view names another leader by now (the send waited for the replica to open).
  void append_here_or_forward(produce_batches_request batch, std::function<void(result<produce_batches_response>)> done);
  /// The one append pipeline of client data (issue 28): the batches of one partition are
  /// checked (validate_batches), recompressed for compression.type, and appended on the
  /// partition's shard (append_batches_on_shard: KIP-890 guard, LogAppendTime, acks).
  void produce_batches_from(produce_batches_request request, std::function<void(result<produce_batches_response>)> done,
                            batch_origin origin);

  /// broker::check_producer_id: `id` was handed out by the active controller as this node knows
  /// it (produce.cc). Errors: unknown_producer_id.
  [[nodiscard]] result<void> check_producer_id(model::producer_id id) const;

 private:
  void produce_after_auto_create(const result<topic_description>& created, produce_request request,
                                 std::function<void(result<produce_response>)> done);
  /// produce_appending once this node caught up with the active controller, for an idempotent
  /// produce naming a producer id this node does not know yet: the id may be of a block another
  /// broker handed out a moment ago (a 404 told such a client not to retry: new user, session 24).
  /// Errors: unknown_producer_id when the id is still not known then.
  void produce_once_caught_up(const std::shared_ptr<const topic_state>& topic, produce_request request,
                              std::function<void(result<produce_response>)> done);
  /// produce_to after its checks; for a transactional produce once its partitions joined the
  /// transaction.
  void produce_appending(const std::shared_ptr<const topic_state>& topic, produce_request request,
                         std::function<void(result<produce_response>)> done);
  /// A transactional produce (producer_identity::transactional_id): every named, existing
  /// partition of the records joins the transaction at its coordinator (AddPartitionsToTxn),
  /// then produce_appending. A refusal of the coordinator (producer_fenced,
  /// invalid_producer_id_mapping, concurrent_transactions, ...) is the whole request's error and
  /// nothing is appended.
  void produce_in_transaction(const std::shared_ptr<const topic_state>& topic, produce_request request,
                              std::function<void(result<produce_response>)> done);
  /// Kafka's LogValidator for `request`'s batches, all before any is appended: size against
  /// max.message.bytes, CRC and layout, no control batch or KIP-534 delete-horizon bit, producer
  /// fields of transactional batches, record offsets 0..n-1, keys on compacted topics, no delivery
  /// time in a transaction, no ringlog-delay-source on a Kafka client's record delayed past
  /// `now_ms` (broker clock). Returns whether a record names a delivery time. The records of
  /// local_records are not decoded: produce_appending encoded them after checking them one by
  /// one (keys, delivery times). Errors: message_too_large, corrupt_message, invalid_request,
  /// invalid_record, each naming the batch.
  static result<bool> validate_batches(const produce_batches_request& request, const storage::log_config& config,
                                       batch_origin origin, int64_t now_ms);
  /// On the partition's shard. `verified_guard`: the guard (partition_runtime::
  /// txn_verifications) of the KIP-890 verification this request passed, 0 when none ran yet.
  void append_batches_on_shard(size_t shard, produce_batches_request request, bool log_append_time,
                               std::function<void(result<produce_batches_response>)> done,
                               uint64_t verified_guard = 0);
  /// The broker config of `v` with its dynamic broker configs applied (the static one before start).
  [[nodiscard]] const broker_config& live(const metadata_view& v) const { return live_config(v, config_); }
  [[nodiscard]] size_t owner(const std::string& topic, int32_t partition) const {
    return shard_of(topic, partition, partition_managers_.size());
  }

  const metadata_publisher& metadata_;   // the views (metadata_publisher.h)
  const broker_config& config_;
  const base::clock& clock_;
  runtime::shard_runtime& runtime_;
  const std::vector<std::unique_ptr<partition_manager>>& partition_managers_;
  leader_forwarder& forwarder_;
  metadata_barrier& barrier_;
  delay_host& delay_host_;
  const security_manager& security_;
  admin_manager& admin_;   // its create_topic: a topic auto-created by a produce
  partition_transactions& txn_partitions_;   // KIP-890 part 1: verify_txn_partition
  const producer_id_manager& producer_ids_;   // check_producer_id
  /// The transaction coordinators (null before start): AddPartitionsToTxn of a transactional produce.
  const std::unique_ptr<txn_service>& txns_;
  const std::atomic<bool>& stopping_;
  /// Produces to a topic that a produce is auto-creating wait here, in call order, until the
  /// creating produce went to the shards: none may overtake it (produce_lines.h).
  produce_lines auto_creating_;
};

}  // namespace ringlog::broker::detail
