#pragma once
// The raft module's vocabulary (KRaft, KIP-595). Raft's "term" is KRaft's leader epoch; offsets
// are the metadata log's record offsets. Both come from model so that the driver can hand them
// to storage unchanged.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/base/named_type.h"
#include "ringlog/model/types.h"

namespace ringlog::raft {

using model::leader_epoch;
using model::offset;

/// A node's id (Kafka's node.id / replica id); -1 means "none".
using node_id = base::named_type<int32_t, struct raft_node_id_tag>;
inline constexpr node_id no_node{-1};

/// Opaque bytes: an entry's payload or a snapshot's contents (owned by the state machine).
using bytes = std::vector<uint8_t>;

/// What an entry carries. KRaft writes a LeaderChangeMessage control record as the first entry of
/// every epoch so the new leader has an entry of its own epoch to commit (Raft paper §5.4.2, §8).
enum class entry_type : uint8_t { data = 0, leader_change = 1 };

/// One entry of the metadata log.
struct entry {
  offset offset_{0};
  leader_epoch epoch{0};
  entry_type type = entry_type::data;
  bytes payload;
  bool operator==(const entry&) const = default;
};

/// Kafka's OffsetAndEpoch: a log position named by an exclusive end offset and the epoch of the
/// entry just below it (a snapshot id, a diverging epoch, a fsync report). {0, 0} is the empty log.
struct offset_and_epoch {
  offset end_offset{0};
  leader_epoch epoch{0};
  auto operator<=>(const offset_and_epoch&) const = default;
};

/// KRaft's quorum-state file: what must be durable before a vote or a leadership is announced.
struct quorum_state {
  leader_epoch epoch{0};
  node_id leader_id = no_node;
  node_id voted_id = no_node;
  bool operator==(const quorum_state&) const = default;
};

/// The roles of a KRaft node (KIP-595; prospective is KIP-996's pre-vote state).
enum class role : uint8_t { unattached, prospective, candidate, leader, follower, resigned };

std::string to_string(role r);

}  // namespace ringlog::raft
