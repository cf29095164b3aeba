#pragma once
// Raft failures, named as Kafka's error codes in snake_case (KafkaRaftClient's responses), so the
// transport maps them onto wire error codes once.

#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::raft {

enum class errc {
  none,                      // only in a response's error_code field: success (Kafka's NONE, 0)
  not_leader_or_follower,    // propose/fetch on a node that is not the leader; the known leader is attached
  fenced_leader_epoch,       // the request's epoch is older than the receiver's
  unknown_leader_epoch,      // the request's epoch is newer than the receiver's (the receiver is stale)
  invalid_request,           // a malformed request or an input out of its documented range
  offset_out_of_range,       // snapshot/fsync offsets outside the log
  inconsistent_cluster_id,   // a request for another cluster.id
  inconsistent_voter_set,    // a vote or begin-epoch request from or to a node that is not a voter
  snapshot_not_found,        // FetchSnapshot names a snapshot the leader no longer has
  position_out_of_range,     // FetchSnapshot position past the snapshot's size
  record_too_large,          // a proposal larger than constants::entry_bytes_max
  uncommitted_limit_reached, // (ringlog's own) constants::uncommitted_entries_max entries await commit
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::raft
