#pragma once
// The metadata quorum's messages on the wire: raft::message bodies <-> Kafka's Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot messages (KIP-595, KIP-630, KIP-996)
// for the one partition `__cluster_metadata`-0, with Kafka's field names; raft entries <-> record
// batch v2 (one record per entry, value = payload; partition leader epoch = raft epoch; a
// leader-change entry is a control batch whose record has Kafka's LEADER_CHANGE control key and a
// LeaderChangeMessage value). The same batches are what storage keeps in the log, so a fetch
// response carries log bytes in the format they have on disk.
//
// Versions we send (the newest our codec has): Vote v2 (pre_vote), BeginQuorumEpoch v1,
// EndQuorumEpoch v1, Fetch v17, FetchSnapshot v1. Requests of every version the codec reads are
// accepted and answered at their own version.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ringlog/controller/errc.h"
#include "ringlog/model/record.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/raft/messages.h"

namespace ringlog::controller::quorum_wire {

/// Kafka's metadata topic and its only partition.
inline constexpr std::string_view metadata_topic = "__cluster_metadata";
inline constexpr int32_t metadata_partition = 0;
/// Kafka's Uuid.METADATA_TOPIC_ID (0, 1): the topic id Fetch v13+ names the metadata topic by.
protocol::uuid metadata_topic_id();

inline constexpr int16_t vote_version = 2;
inline constexpr int16_t begin_quorum_epoch_version = 1;
inline constexpr int16_t end_quorum_epoch_version = 1;
inline constexpr int16_t fetch_version = 17;
inline constexpr int16_t fetch_snapshot_version = 1;

/// Kafka's ControlRecordType.LEADER_CHANGE: the key type of a leader-change control record.
inline constexpr int16_t leader_change_control_type = 2;

/// Kafka's error code for a raft error (NONE 0, NOT_LEADER_OR_FOLLOWER 6, FENCED_LEADER_EPOCH 74,
/// ...); uncommitted_limit_reached has no Kafka code and maps to UNKNOWN_SERVER_ERROR (-1).
int16_t kafka_error_code(raft::errc e);
/// The raft error of a Kafka error code; codes raft does not know map to invalid_request.
raft::errc raft_error(int16_t code);

/// A request ready for the transport: the api, the version, the encoded body.
struct encoded_request {
  int16_t api_key = 0;
  int16_t api_version = 0;
  protocol::bytes body;
};

/// Encodes a request body (vote_request, begin_quorum_epoch_request, end_quorum_epoch_request,
/// fetch_request, fetch_snapshot_request) at the version we send. `now_ms` stamps record
/// timestamps (none in requests; kept for symmetry with responses). Errors: invalid_record when
/// `body` is a response kind.
result<encoded_request> encode_request(const raft::message_body& body);

/// Decodes a request of `api_key` at `api_version` into its raft form. Errors: invalid_record
/// naming the message and field (not for the metadata partition, missing partition, a record
/// batch that does not decode), unsupported_version for an api raft does not speak.
result<raft::message_body> decode_request(int16_t api_key, int16_t api_version, std::span<const std::byte> body);

/// The node that sent a request (candidate_id, leader_id or replica_id).
raft::node_id sender_of(const raft::message_body& request);

/// Whether `body` is a request (as opposed to a response).
bool is_request(const raft::message_body& body);

/// Encodes a response body at `api_version` (the request's) as a whole response frame with
/// `correlation_id`. `now_ms`: the timestamp of records in a fetch response's batches.
/// Errors: invalid_record when `body` is a request kind or does not encode at that version.
result<protocol::bytes> encode_response_frame(const raft::message_body& body, int16_t api_version,
                                              int32_t correlation_id, int64_t now_ms);

/// Decodes a response body of `api_key` at `api_version`. Errors: invalid_record.
result<raft::message_body> decode_response(int16_t api_key, int16_t api_version, std::span<const std::byte> body);

/// The api key of a raft message kind (request or response).
int16_t api_key_of(const raft::message_body& body);

/// Encodes entries (consecutive offsets) as record batches v2: runs of data entries of one epoch
/// share a batch, each leader-change entry is its own control batch. Record timestamps are
/// `now_ms`. Errors: invalid_record (a leader-change payload that is not leader + voters).
result<model::bytes> encode_entries(std::span<const raft::entry> entries, int64_t now_ms);

/// One entry decoded from a batch, plus the record key when the record had one (only records
/// written by the single-node broker before raft: "topic"/"remove_topic").
struct decoded_entry {
  raft::entry entry;
  std::optional<model::bytes> legacy_key;
};
/// Decodes concatenated whole batches back into entries, in offset order. A data record's entry
/// payload is its value (a null value is an empty payload). Errors: invalid_record naming the
/// offset (bad CRC, a control record that is not LEADER_CHANGE, a LeaderChangeMessage that does
/// not decode).
result<std::vector<decoded_entry>> decode_entries(std::span<const std::byte> batches);

/// raft's leader-change payload (4-byte big-endian leader id, then the voter ids) as Kafka's
/// LeaderChangeMessage, and back.
result<protocol::leader_change_message> to_leader_change_message(const raft::bytes& payload);
raft::bytes from_leader_change_message(const protocol::leader_change_message& message);

}  // namespace ringlog::controller::quorum_wire
