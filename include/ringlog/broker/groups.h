#pragma once
// The consumer-group calls of the broker (issue 4, design.md section 7): the REST Proxy v2
// consumer API and the group admin calls, backed by one group::group_coordinator per shard.
//
// A group lives on the shard owning partition group::coordinator_partition_for(group, N) of the
// internal compacted topic __consumer_offsets (N = its partition count, offsets.topic.num.partitions
// when it was created). Every call runs there, so a consumer instance is a lease held by that
// coordinator and not by any connection: any shard (and later any broker) can serve its base_uri.
// Every change the coordinator returns as records is appended to that partition and the call is
// answered only once they are durable (log.flush.policy=fsync), like a produce with acks=all.
//
// Calls are asynchronous like broker.h: `done` runs exactly once on some shard thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/broker/errc.h"
#include "ringlog/delay/retry.h"
#include "ringlog/group/group_coordinator.h"
#include "ringlog/model/record.h"
#include "ringlog/security/principal.h"

namespace ringlog::broker {

inline constexpr const char* consumer_offsets_topic = "__consumer_offsets";

/// Lag history (GET .../consumer-groups/{g}/lag-history, the console's lag-over-time chart): each
/// shard samples the total lag of its groups every lag_history_interval_ms and keeps the last
/// lag_history_samples_max samples per group (one hour: what an operator looks back over during
/// an incident) for at most lag_history_groups_per_shard_max groups (the first by group id), so
/// it costs at most 256 x 720 x 16 bytes (about 3 MiB) per shard. Kept in memory only: it starts
/// empty when the broker starts (the committed offsets themselves are durable).
inline constexpr int64_t lag_history_interval_ms = 5'000;
inline constexpr size_t lag_history_samples_max = 720;
inline constexpr size_t lag_history_groups_per_shard_max = 256;

/// One sample of a group's total lag: the sum over its partitions of what GET .../lags reports
/// (records a read_committed reader still has to read up to the last stable offset; markers and
/// aborted records are not counted; partitions without a committed offset count 0, as in
/// lag-summary). `timestamp_ms` is when that group's figure came back.
struct lag_sample {
  int64_t timestamp_ms = 0;
  int64_t total_lag = 0;
};

/// Embedded format of a REST v2 consumer instance (application/vnd.kafka.{binary,json}.v2+json).
enum class consumer_format : uint8_t { binary, json };

/// POST /consumers/{group}.
struct consumer_instance_config {
  std::string group_id;
  std::optional<std::string> name;                 // the instance id (REST Proxy v2 "name"); generated when absent
  std::string client_name = "rest-consumer";        // a generated instance id is this, '-' and a UUID
  consumer_format format = consumer_format::binary;
  group::offset_reset auto_offset_reset = group::offset_reset::latest;
  bool auto_commit_enable = false;                  // true: commit before answering (at-most-once)
  /// consumer.instance.timeout.ms: the session timeout of the lease, in
  /// [group::limits::session_timeout_ms_min, group::limits::session_timeout_ms_max].
  int64_t session_timeout_ms = 300'000;
  int32_t fetch_min_bytes = 1;                      // a poll answers once its records hold this many bytes (key + value + headers), or is full, or at its timeout
  int64_t request_timeout_ms = 1'000;               // consumer.request.timeout.ms: default poll timeout
  /// group.instance.id (KIP-345 static membership): an instance created again with the same id
  /// within its session timeout gets its partitions back without a rebalance.
  std::optional<std::string> group_instance_id;
  /// partition.assignment.strategy: range | roundrobin | cooperative-sticky (the default); the
  /// group's first member chooses, later members must ask for the same one or none.
  std::optional<group::assignor_kind> assignor;
  /// isolation.level (KIP-98): read_committed polls read below the last stable offset and never
  /// return records of aborted transactions. Kept in the instance's record (survives restarts).
  bool read_committed = false;
  /// Retries and dead letters of this instance's nacks (issue 18; max.delivery.attempts,
  /// retry.backoff.ms, retry.backoff.multiplier, retry.backoff.max.ms, each defaulting to the
  /// broker's); validated (delay::validate) by the front end. nullopt: the broker's defaults.
  std::optional<delay::retry_policy> retry;
  /// The principal that creates it (`User:alice`, issue 29): only it may use the instance; the
  /// front end answers another principal as if the instance did not exist. Kept in the record.
  std::string owner;
};

struct consumer_instance {
  std::string group_id;
  std::string instance_id;  // the coordinator's member id
  consumer_format format = consumer_format::binary;
  bool auto_commit_enable = false;
  int64_t request_timeout_ms = 1'000;
  /// consumer_instance_config::owner; "" for an instance made before issue 29 (User:ANONYMOUS).
  std::string owner{};
};

/// POST .../positions{,/beginning,/end}, and by timestamp (ringlog's addition).
enum class seek_kind : uint8_t { offset, beginning, end, timestamp };
struct seek_request {
  model::topic_partition partition;
  seek_kind kind = seek_kind::offset;
  int64_t value = 0;  // offset: the next offset to read; timestamp: ms since the epoch
};

struct poll_request {
  int64_t timeout_ms = 0;      // wait up to this for the first record
  int64_t max_bytes = 1 << 20; // key + value + header bytes; at least one record is returned
  /// The records the caller can hand out (unset: every one). The poll stops in front of the first
  /// record this refuses: that record ends the answer marked `refused`, and its partition's
  /// position stays at it, not past it, so neither the poll nor an auto-commit moves past a record
  /// the caller could not give to its client (the REST json format and a key or value that is not
  /// JSON). The other partitions' records before it in the answer are handed out as usual.
  std::function<bool(const model::record&)> accepts;
  /// Whether whoever the answer goes to can still get it (unset: yes). Callable from any thread.
  /// The poll asks just before it takes records and moves the instance's positions past them, and
  /// at each round of its wait: false ends the poll with nothing taken, the positions where they
  /// were, so the next poll returns those records (a broker that passed the poll on and died
  /// meanwhile must not leave them consumed by nobody: at-least-once, group_proxy.h).
  std::function<bool()> requester_connected;
};
struct consumed_record {
  model::topic_partition partition;
  model::record record;
  bool refused = false;   // poll_request::accepts refused it: not to be handed out; its position stays at it
};

/// POST .../instances/{instance}/nacks: one record the member failed to process (issue 18).
struct nack_request {
  model::topic_partition partition;
  model::offset offset{0};
  std::string reason;   // kept per attempt, cut at delay::reason_bytes_max bytes
  /// Who nacks, from where (issue 30; the instance's owner, as the front end checked): with an
  /// authorizer, the copy's topic (the instance's retry or dead-letter topic) needs WRITE for
  /// them, and CREATE on the cluster or the topic when it does not exist yet, as a producer's
  /// would (Kafka's dead-letter producers are plain producers).
  security::kafka_principal principal{};
  std::string host{};   // ACL hosts' form ("127.0.0.1"); "" when unknown (only `*` host ACLs match)
};

/// A group's dead-letter topic (docs/retries.md).
struct dead_letter_topic_info {
  std::string topic;            // "<topic>.<group>.dlq"
  std::string original_topic;
  int32_t partitions_count = 0;
  int64_t dead_letters = 0;     // records that are dead letters (redrive markers not counted)
  int64_t redriven = 0;         // of those, redriven already
};
/// One dead letter as browsed, with what its headers say.
struct dead_letter {
  model::partition_id partition{0};
  model::record record;
  std::string original_topic;
  int32_t original_partition = -1;
  int64_t original_offset = -1;
  int32_t attempts = 0;
  std::vector<std::string> reasons;   // oldest first
  bool redriven = false;
};
struct dead_letters_request {
  std::string group_id;
  std::string topic;                    // the dead-letter topic
  std::optional<int32_t> partition;     // nullopt: every partition
  model::offset from_offset{0};         // per partition
  int32_t limit = 100;                  // records answered at most, in [1, dead_letters_browse_max]
  std::string filter;                   // only letters whose reasons, key or value contain it ("" all)
};
/// Records a browse answers at most, and records a redrive reads per dead-letter partition at
/// most (a dead-letter topic is small by nature; a larger one is redriven in ranges).
inline constexpr int32_t dead_letters_browse_max = 1'000;
inline constexpr int64_t dead_letters_scan_records_max = 100'000;

struct redrive_range {
  int32_t partition = 0;
  model::offset from_offset{0};   // inclusive
  model::offset to_offset{0};     // exclusive
};
/// What to redrive: chosen offsets, ranges, or (both empty) every dead letter not redriven yet.
struct redrive_request {
  std::string group_id;
  std::string topic;   // the dead-letter topic
  delay::redrive_target target = delay::redrive_target::original;
  std::vector<std::pair<int32_t, model::offset>> offsets;
  std::vector<redrive_range> ranges;
  /// Who redrives, from where (issue 30): with an authorizer each letter's copy needs WRITE on
  /// the topic it goes to (its original topic comes from the letter's own headers, which anyone
  /// who may write the dead-letter topic can set), and CREATE when the copy would create it; a
  /// letter refused so is a failure of the result, not redriven.
  security::kafka_principal principal{};
  std::string host{};
};
struct redrive_result {
  int64_t redriven = 0;           // produced to their target now
  int64_t already_redriven = 0;   // chosen but redriven before (once each)
  int64_t selected = 0;           // dead letters the request chose
  std::vector<std::string> failures;   // one line per dead letter that could not be redriven
};

struct group_coordinator_location {
  int32_t offsets_partition = 0;  // partition of __consumer_offsets
  size_t shard = 0;
};
struct group_details {
  group::group_description description;
  group_coordinator_location coordinator;
};

/// What reset_offsets applies to: every partition of `topics` and the single partitions of
/// `partitions` (Kafka's kafka-consumer-groups --topic T:0,1,2); all the group's committed topics
/// when both are empty. A named partition the topic does not have refuses the whole reset
/// (unknown_topic_or_partition naming it).
struct reset_offsets_request {
  std::string group_id;
  std::vector<std::string> topics;
  std::vector<model::topic_partition> partitions;
  group::reset_spec spec;
  int64_t timestamp_ms = 0;  // for reset_kind::to_timestamp
  group::dry_run mode = group::dry_run::yes;
};

/// A JoinGroup's answer: `failure` is data.failure translated to the broker's codes (Kafka's
/// numbers through kafka_error_code); data.member_id is set with member_id_required too.
struct join_group_answer {
  std::optional<error> failure;
  group::classic_join_response data;
};
struct sync_group_answer {
  std::optional<error> failure;
  group::classic_sync_response data;
};
/// An OffsetCommit or TxnOffsetCommit answered per partition, as Kafka's KafkaApis does: a
/// partition the metadata does not hold is refused (unknown_topic_or_partition) and not stored,
/// the others are committed (or held pending for the transaction).
struct offset_commit_answer {
  group::partition_map<group::committed_offset> committed;
  group::partition_map<error> refused;
};

/// A group's offsets as Kafka's OffsetFetch reads them (GroupMetadataManager.getOffsets): the
/// committed ones, and the partitions an open transaction's offsets name (`unstable`), which a
/// require_stable fetch (KIP-447) answers UNSTABLE_OFFSET_COMMIT instead of the older commit.
/// Both are read at one moment on the coordinator's shard.
struct group_offsets {
  group::partition_map<group::committed_offset> committed;
  group::partition_set unstable;
};

/// Where a group's calls are served now (design.md section 7: by the leader of the group's
/// __consumer_offsets partition), as the metadata image on this node says.
struct group_coordinator_route {
  enum class place : uint8_t {
    here,   // this node coordinates the group
    peer,   // another broker does: front ends pass the call on to its HTTP listener
    none,   // the partition has no leader now (or the topic is not there yet): retry later
  };
  place where = place::none;
  int32_t node_id = -1;        // the coordinator's node id (here and peer), -1 with none
  std::string http_host;       // the coordinator's advertised HTTP listener; "" when it has none
  uint16_t http_port = 0;
  bool http_tls = false;       // that listener is https://
  int32_t offsets_partition = -1;
  /// For messages: "broker 2 at http://127.0.0.1:8083 (the leader of __consumer_offsets-7)".
  std::string description;
};

/// The refusal of a call of group `group_id` that reached a broker not serving the group now, from
/// where `route` (read after the broker found it does not lead the group's __consumer_offsets
/// partition) says the group is served: peer, not_coordinator naming that broker ("send the
/// group's calls there"); none, not_coordinator saying the partition has no leader; here (the
/// metadata made this broker the leader since: its leadership is not applied yet),
/// coordinator_load_in_progress saying this broker is becoming the coordinator. Each is
/// retriable (HTTP 503 with Retry-After); none names this broker as another's coordinator.
[[nodiscard]] error not_coordinator_refusal(const std::string& group_id, const group_coordinator_route& route);

class group_api {
 public:
  virtual ~group_api() = default;

  /// Where the calls of `group_id` are served now; any thread, no I/O (reads the metadata image).
  [[nodiscard]] virtual group_coordinator_route coordinator_route(const std::string& group_id) const = 0;

  // ---- REST v2 consumer instances. Errors (besides the group errc mapped to broker::errc):
  // unknown_member_id for an instance that is unknown, deleted or whose lease expired.
  virtual void create_consumer(consumer_instance_config config, std::function<void(result<consumer_instance>)> done) = 0;
  virtual void describe_consumer(std::string group_id, std::string instance_id,
                                 std::function<void(result<consumer_instance>)> done) = 0;
  virtual void delete_consumer(std::string group_id, std::string instance_id, std::function<void(result<void>)> done) = 0;
  /// kind topics or pattern; errors: inconsistent_subscription (has a manual assignment),
  /// invalid_regular_expression.
  virtual void subscribe(std::string group_id, std::string instance_id, group::subscription sub,
                         std::function<void(result<void>)> done) = 0;
  virtual void subscription(std::string group_id, std::string instance_id,
                            std::function<void(result<group::subscription>)> done) = 0;
  virtual void unsubscribe(std::string group_id, std::string instance_id, std::function<void(result<void>)> done) = 0;
  /// Manual assignment; errors: inconsistent_subscription (subscribed), unknown_topic_or_partition.
  virtual void assign(std::string group_id, std::string instance_id, group::partition_set partitions,
                      std::function<void(result<void>)> done) = 0;
  /// The partitions the instance owns now.
  virtual void assignments(std::string group_id, std::string instance_id,
                           std::function<void(result<group::partition_set>)> done) = 0;
  /// All-or-nothing; errors: partition_not_owned, invalid_offset.
  virtual void seek(std::string group_id, std::string instance_id, std::vector<seek_request> seeks,
                    std::function<void(result<void>)> done) = 0;
  /// A heartbeat, then records of owned partitions from each position (resolving committed
  /// offsets and auto.offset.reset), at most request.max_bytes (at least one record when any).
  /// With auto.commit.enable the returned positions are committed before the answer.
  virtual void poll(std::string group_id, std::string instance_id, poll_request request,
                    std::function<void(result<std::vector<consumed_record>>)> done) = 0;
  /// REST v2 commit: `offsets` name the LAST PROCESSED offset N and store N + 1; nullopt (empty
  /// body) commits everything already returned to the instance. Returns what was stored.
  virtual void commit(std::string group_id, std::string instance_id, std::optional<std::vector<group::processed_offset>> offsets,
                      std::function<void(result<group::partition_map<group::committed_offset>>)> done) = 0;
  /// Retries and dead letters (issue 18, docs/retries.md): each nacked record is copied to the
  /// group's retry topic of its original topic, delayed by the instance's backoff, or after
  /// max.delivery.attempts deliveries to the group's dead-letter topic; answered once every copy
  /// is durable (acks=all). A nacked offset counts as processed: when it is the group's committed
  /// offset, the commit moves past it. Offsets below the committed offset were processed already:
  /// nothing is written for them (a repeated nack). Errors: unknown_member_id,
  /// partition_not_owned (the instance does not hold the partition), offset_out_of_range (an
  /// offset not handed to the instance yet), invalid_record (a dead letter; a retry record
  /// without its headers), invalid_topic_exception (a group whose retry topic name is illegal).
  virtual void nack(std::string group_id, std::string instance_id, std::vector<nack_request> nacks,
                    std::function<void(result<void>)> done) = 0;
  /// The group's dead-letter topics with their counts.
  virtual void dead_letter_topics(std::string group_id, std::function<void(result<std::vector<dead_letter_topic_info>>)> done) = 0;
  /// Dead letters of one of them. Errors: unknown_topic_or_partition (not a dead-letter topic of the group).
  virtual void dead_letters(dead_letters_request request, std::function<void(result<std::vector<dead_letter>>)> done) = 0;
  /// Moves dead letters back (delay::route_redrive), each at most once: a redriven letter is
  /// marked in its dead-letter partition once its copy is durable. Errors: as dead_letters.
  virtual void redrive(redrive_request request, std::function<void(result<redrive_result>)> done) = 0;
  /// Committed offsets of the instance's group (all of them when `partitions` is empty). A
  /// read_committed instance reads stable offsets only (KIP-447's require_stable, as the Java
  /// consumer behind Confluent's REST proxy does): while an open transaction holds offsets of
  /// those partitions pending it waits for the transaction's end, up to 5 s, then
  /// request_timed_out.
  virtual void committed(std::string group_id, std::string instance_id, group::partition_set partitions,
                         std::function<void(result<group::partition_map<group::committed_offset>>)> done) = 0;

  // ---- Kafka's classic group protocol (the Kafka listener's JoinGroup, SyncGroup, Heartbeat,
  // LeaveGroup, OffsetCommit, OffsetDelete): group::group_coordinator's classic_* calls on the
  // group's coordinator shard. JoinGroup and SyncGroup answers may wait for other members (up
  // to the rebalance timeout); `done` runs once, after the records they caused are durable.
  virtual void join_group(std::string group_id, group::classic_join_request request,
                          std::function<void(join_group_answer)> done) = 0;
  virtual void sync_group(std::string group_id, group::classic_sync_request request,
                          std::function<void(sync_group_answer)> done) = 0;
  /// Errors: unknown_member_id, fenced_instance_id, illegal_generation, rebalance_in_progress.
  virtual void heartbeat_group(std::string group_id, std::string member_id,
                               std::optional<std::string> group_instance_id, int32_t generation,
                               std::function<void(result<void>)> done) = 0;
  /// Per member asked, in order: nullopt (left) or unknown_member_id / fenced_instance_id.
  virtual void leave_group(std::string group_id, std::vector<group::classic_member_identity> members,
                           std::function<void(result<std::vector<std::optional<error>>>)> done) = 0;
  /// Kafka's OffsetCommit (group::group_coordinator::commit_offsets_kafka): generation < 0 and
  /// no member for a group without members, else a classic member at the group's generation.
  /// Errors: those of commit_standalone, and unknown_member_id, illegal_generation,
  /// rebalance_in_progress, fenced_instance_id.
  /// Partitions the metadata does not hold are answered in `refused` and not stored; when no
  /// partition is left the group is not asked (KafkaApis.handleOffsetCommitRequest).
  virtual void commit_kafka(std::string group_id, std::string member_id, std::optional<std::string> group_instance_id,
                            int32_t generation, std::vector<group::offset_commit> offsets,
                            std::function<void(result<offset_commit_answer>)> done) = 0;
  /// Kafka's TxnOffsetCommit (group::group_coordinator::txn_commit_offsets): offsets held pending
  /// for `producer_id`'s transaction until its marker commits (or drops) them. The caller checked
  /// nothing of the transaction: the transaction coordinator's AddOffsetsToTxn put the group's
  /// partition in it. Unknown partitions as commit_kafka. Errors: not_coordinator, and those of commit_kafka.
  virtual void txn_commit(std::string group_id, std::string member_id, std::optional<std::string> group_instance_id,
                          int32_t generation, model::producer_id producer_id, std::vector<group::offset_commit> offsets,
                          std::function<void(result<offset_commit_answer>)> done) = 0;
  /// Kafka's OffsetDelete (KIP-496). Per partition: nullopt (deleted or nothing committed) or
  /// group_subscribed_to_topic. Errors: group_id_not_found, group_not_empty.
  virtual void delete_offsets(std::string group_id, group::partition_set partitions,
                              std::function<void(result<group::partition_map<std::optional<error>>>)> done) = 0;

  // ---- Kafka clients outside membership (the Kafka listener's OffsetCommit / OffsetFetch)
  /// group::group_coordinator::commit_offsets_standalone, answered once durable. Errors:
  /// unknown_member_id (the group has members: classic or REST/WebSocket), invalid_group_id,
  /// offset_out_of_range (negative), offset_metadata_too_large, throttling_quota_exceeded.
  virtual void commit_standalone(std::string group_id, std::vector<group::offset_commit> offsets,
                                 std::function<void(result<group::partition_map<group::committed_offset>>)> done) = 0;
  /// Every committed offset of a group; empty when the group is unknown (Kafka's OffsetFetch).
  virtual void group_committed(std::string group_id,
                               std::function<void(result<group::partition_map<group::committed_offset>>)> done) = 0;
  /// Kafka's OffsetFetch: group_committed and, read with it, the partitions whose offsets an open
  /// transaction holds pending (group_offsets); empty when the group is unknown. Errors:
  /// not_coordinator, coordinator_load_in_progress.
  virtual void fetch_offsets(std::string group_id, std::function<void(result<group_offsets>)> done) = 0;

  // ---- admin
  virtual void list_groups(std::function<void(result<std::vector<group::group_listing>>)> done) = 0;
  /// state dead = no such group.
  virtual void describe_group(std::string group_id, std::function<void(result<group_details>)> done) = 0;
  /// Lag of every committed partition (and every owned one). Errors: group_id_not_found.
  virtual void group_lag(std::string group_id, std::function<void(result<std::vector<group::partition_lag>>)> done) = 0;
  /// The group's lag samples, oldest first (see lag_history_interval_ms); empty when none was
  /// taken yet. Errors: group_id_not_found.
  virtual void lag_history(std::string group_id, std::function<void(result<std::vector<lag_sample>>)> done) = 0;
  /// Errors: group_id_not_found, group_not_empty.
  virtual void delete_group(std::string group_id, std::function<void(result<void>)> done) = 0;
  /// Kafka's kafka-consumer-groups --reset-offsets. Errors: group_not_empty, unknown_topic_or_partition.
  virtual void reset_offsets(reset_offsets_request request,
                             std::function<void(result<group::partition_map<model::offset>>)> done) = 0;
};

}  // namespace ringlog::broker
