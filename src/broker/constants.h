#pragma once
// The broker module's named bounds and protocol constants (style.md: every queue, map, retry and
// loop has a named bound with a line on why that value). Private to src/broker.

#include <cstddef>
#include <cstdint>

#include "ringlog/model/record.h"
#include "ringlog/partition/constants.h"

namespace ringlog::broker::detail {

using ::ringlog::partition::controller_shard;   // partition/constants.h
using ::ringlog::partition::entry_failures_max;   // partition/constants.h
/// ACLs one CreateAcls/DeleteAcls call may add or remove: one metadata entry holds them all
/// (metadata_entry_records_max is the hard bound); kafka-acls.sh sends a few per call.
inline constexpr size_t acl_changes_per_call_max = 1000;
/// ACLs the cluster keeps: every node holds them in its image and index (about 200 bytes each).
inline constexpr size_t acls_max = 100'000;
/// Quota keys one AlterClientQuotas call may change (one ClientQuotaRecord each; a metadata entry
/// holds metadata_entry_records_max).
inline constexpr size_t client_quota_changes_per_call_max = 1000;
/// Quota entities the cluster keeps: every node holds each in its image and its index.
inline constexpr size_t client_quota_entities_max = 100'000;
/// Sensors /metrics shows (bounded label cardinality), most throttled first.
inline constexpr size_t client_quota_metrics_sensors_max = 100;
/// How long an admin call waits for its entry to be committed and applied on this node.
using ::ringlog::partition::metadata_write_timeout_ms;   // partition/constants.h
/// How long an admin call on a node that is not the active controller waits for the controller's
/// high watermark (metadata_barrier.cc) before planning against its own image: about one fetch
/// round trip on a healthy cluster; a controller that does not answer costs the call this much.
inline constexpr int64_t metadata_barrier_timeout_ms = 2000;
using ::ringlog::partition::internal_append_timeout_ms;   // partition/constants.h
/// Kafka's api keys used between brokers here (the schemas are in src/protocol/schemas).
inline constexpr int16_t envelope_api_key = 58;            // KIP-590 forwarding to the active controller
inline constexpr int16_t broker_heartbeat_api_key = 63;    // KIP-631
/// At most one log line per this many ms says this node's registration was refused as a duplicate
/// (DUPLICATE_BROKER_REGISTRATION): start-up retries every second and a running broker
/// every heartbeat, for as long as the other process's session lives (up to
/// broker.session.timeout.ms after a kill -9, or forever beside a live twin); 10 s keeps that
/// visible without flooding the log.
inline constexpr int64_t duplicate_registration_log_interval_ms = 10'000;
/// The longest a DeleteRecords waits for its partition's replicas to raise their log start
/// offsets (record_deletion.h): its TimeoutMs is cut to this. Kafka has no bound; its admin
/// client sends its request timeout (30 s by default); 5 minutes bounds how long one pending
/// deletion keeps its timer without cutting any timeout a tool sends by default.
inline constexpr int64_t delete_records_wait_max_ms = 300'000;
/// How often a pending DeleteRecords looks at its partition's low watermark again (Kafka's
/// DelayedDeleteRecords is completed by each follower fetch instead): a follower reports its new
/// log start offset in the fetch after the one that told it (one round trip, the leader wakes its
/// parked fetch), so 20 ms adds little to that and costs one look per 20 ms per pending call.
inline constexpr int64_t delete_records_recheck_ms = 20;
/// init_producer_id calls that may wait for a block at once; more are refused (retry).
inline constexpr size_t producer_id_waiters_max = 10'000;
/// Tries of one elect-leaders request whose plan a concurrent change overtook (each re-plans from
/// the newer image; a partition changing this often under a request is not worth more).
inline constexpr int preferred_election_attempts_max = 3;
/// The same for a partition reassignment request (a concurrent ISR change bumps the partition
/// epoch its plan named).
inline constexpr int reassignment_attempts_max = 3;
/// Calls one node's forwarder has with the transport for one leader at once (forwarding.cc's
/// leader_gate): the forwarding connection's own bound (rpc client_pending_requests_max, 1024),
/// which only forwarded calls use (raft, heartbeats and replica fetches have their own
/// connection), so a burst never meets the transport's refusal; the rest wait for room.
inline constexpr size_t forward_calls_in_flight_per_leader_max = 1024;
/// Forwarded calls that may wait for room on one leader's connection. A healthy leader answers
/// a call in about a millisecond, so these drain fast; the bound is what its callers may have in
/// flight (a few WebSockets' ws_produce_in_flight_max of 10,000): past it a call is refused at
/// once (throttling_quota_exceeded, HTTP 429: nothing was sent).
inline constexpr size_t forward_calls_waiting_per_leader_max = 100'000;
/// Bytes of those waiting calls' bodies for one leader: a burst of large batches is refused
/// (429) before it holds more memory than this.
inline constexpr size_t forward_call_bytes_waiting_per_leader_max = size_t{256} << 20;
/// Longest wait for room of one forwarded call, ms (its own timeout when shorter); past it the
/// call is answered unsent. A leader that answers nothing frees its room as its calls time out
/// or when the leadership moves (fail_moved_forwards).
inline constexpr int64_t forward_room_wait_max_ms = 30'000;
/// How often the waiting calls of a leader are checked for their deadline, ms.
inline constexpr int64_t forward_room_sweep_ms = 100;
/// Forwarded produces held in their partition's order line at once (all partitions): batches a
/// leader refused unread, and the later batches of the partition that wait for them to go first
/// (about the produces the callers have in flight: ws_produce_in_flight_max per socket). Past it
/// a produce is refused at once (throttling_quota_exceeded: nothing was sent).
inline constexpr size_t forward_produces_held_max = 100'000;
/// Bytes of those held batches (all partitions), refused past it as above.
inline constexpr size_t forward_produce_bytes_held_max = size_t{256} << 20;
}  // namespace ringlog::broker::detail
