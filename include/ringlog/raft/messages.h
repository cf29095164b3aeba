#pragma once
// The messages a KRaft quorum exchanges, named after Kafka's message schemas (Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot; clients/src/main/resources/common/
// message/*.json). The single topic-partition (__cluster_metadata-0) is implied and omitted. The
// transport maps these one-to-one onto the wire; `correlation_id` is Kafka's request header
// field, echoed by the response so a node can ignore a late or duplicated response.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ringlog/raft/errc.h"
#include "ringlog/raft/types.h"

namespace ringlog::raft {

/// VoteRequest (KIP-595; pre_vote from KIP-996).
struct vote_request {
  std::string cluster_id;
  leader_epoch candidate_epoch{0};  // the epoch the candidate asks votes for (own epoch + 1 for a pre-vote)
  node_id candidate_id = no_node;
  leader_epoch last_offset_epoch{0};  // epoch of the candidate's last entry (snapshot epoch if none)
  offset last_offset{0};              // the candidate's log end offset (exclusive)
  bool pre_vote = false;
  /// ringlog's own: the candidate still awaits its first catch-up (node::awaiting_first_catch_up();
  /// a voter grants only to a candidate of its own kind, persisted_state::awaiting_first_catch_up).
  /// false, "past it", is what a peer that does not send it is read as.
  bool candidate_awaiting_first_catch_up = false;
};

/// VoteResponse.
struct vote_response {
  errc error_code = errc::none;
  node_id leader_id = no_node;      // the voter's known leader, if any
  leader_epoch leader_epoch_{0};    // the voter's epoch
  bool vote_granted = false;
};

/// BeginQuorumEpochRequest: a new leader announces itself to the voters.
struct begin_quorum_epoch_request {
  std::string cluster_id;
  node_id leader_id = no_node;
  leader_epoch leader_epoch_{0};
};

/// BeginQuorumEpochResponse.
struct begin_quorum_epoch_response {
  errc error_code = errc::none;
  node_id leader_id = no_node;
  leader_epoch leader_epoch_{0};
};

/// EndQuorumEpochRequest: a leader resigns gracefully; successors ordered best first (by log end
/// offset) so the most up-to-date voter starts its election first.
struct end_quorum_epoch_request {
  std::string cluster_id;
  node_id leader_id = no_node;
  leader_epoch leader_epoch_{0};
  std::vector<node_id> preferred_successors;
};

/// EndQuorumEpochResponse.
struct end_quorum_epoch_response {
  errc error_code = errc::none;
  node_id leader_id = no_node;
  leader_epoch leader_epoch_{0};
};

/// FetchRequest (the KRaft subset): a follower pulls entries from fetch_offset.
struct fetch_request {
  std::string cluster_id;
  node_id replica_id = no_node;
  leader_epoch current_leader_epoch{0};  // the follower's epoch; fences stale leaders and followers
  offset fetch_offset{0};                // the follower's log end offset, all of it fsynced
  leader_epoch last_fetched_epoch{0};    // epoch of the entry at fetch_offset - 1 (snapshot epoch if none)
  int64_t max_wait_ms = 0;               // how long the leader may park the fetch when there is no data
};

/// Who leads, as carried in responses (Kafka's CurrentLeader / LeaderIdAndEpoch).
struct leader_id_and_epoch {
  node_id leader_id = no_node;
  leader_epoch leader_epoch_{0};
};

/// FetchResponse. At most one of diverging_epoch / snapshot_id / records is meaningful: a
/// diverging epoch asks the follower to truncate, a snapshot id asks it to use FetchSnapshot.
struct fetch_response {
  errc error_code = errc::none;
  offset high_watermark{0};
  offset log_start_offset{0};
  bool has_diverging_epoch = false;
  offset_and_epoch diverging_epoch;  // {end_offset, epoch}: truncate to at most end_offset
  leader_id_and_epoch current_leader;
  bool has_snapshot_id = false;
  offset_and_epoch snapshot_id;      // {end_offset, epoch} of the leader's latest snapshot
  std::vector<entry> records;        // consecutive entries starting at the request's fetch_offset
};

/// FetchSnapshotRequest (KIP-630): one chunk of a snapshot, by byte position.
struct fetch_snapshot_request {
  std::string cluster_id;
  node_id replica_id = no_node;
  leader_epoch current_leader_epoch{0};
  offset_and_epoch snapshot_id;
  uint64_t position = 0;   // byte position inside the snapshot
  uint64_t max_bytes = 0;  // at most this many bytes in the response
};

/// FetchSnapshotResponse.
struct fetch_snapshot_response {
  errc error_code = errc::none;
  leader_id_and_epoch current_leader;
  offset_and_epoch snapshot_id;
  uint64_t size = 0;      // total snapshot size, bytes
  uint64_t position = 0;  // byte position of unaligned_records inside the snapshot
  bytes unaligned_records;
};

using message_body =
    std::variant<vote_request, vote_response, begin_quorum_epoch_request, begin_quorum_epoch_response,
                 end_quorum_epoch_request, end_quorum_epoch_response, fetch_request, fetch_response,
                 fetch_snapshot_request, fetch_snapshot_response>;

/// One message between two nodes. A response carries its request's correlation_id.
struct message {
  node_id from = no_node;
  node_id to = no_node;
  int64_t correlation_id = 0;
  message_body body;
};

/// "vote_request", "fetch_response", ...: for traces.
std::string_view message_name(const message_body& body);

}  // namespace ringlog::raft
