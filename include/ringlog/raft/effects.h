#pragma once
// What a raft node asks its driver to do (the "ready" of a pure state machine). The driver takes
// them with node::take_effects() after every input and carries them out in this order:
//   1. write `quorum_state` (if set) and fsync it; then call node::on_quorum_state_persisted(version)
//   2. apply `log_writes` in order to the log files; fsync (group commit is fine); then call
//      node::on_append_fsynced(position) with the log end position the fsync covered
//   3. send `messages` (they are already safe to send: anything that depends on a quorum-state
//      write is held inside the node until that write is reported durable)
//   4. load `apply_snapshot` (if set) into the state machine, then apply `committed` in order.

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "ringlog/raft/messages.h"
#include "ringlog/raft/types.h"

namespace ringlog::raft {

/// Append entries at the log end (offsets are consecutive and start at the current end).
struct append_entries {
  std::vector<entry> entries;
};
/// Remove every entry at offset >= end_offset (a diverging suffix; never below the high watermark).
struct truncate_suffix {
  offset end_offset{0};
};
/// Replace the whole log by a snapshot downloaded from the leader: afterwards the log is empty and
/// starts at snapshot_id.end_offset. Store the payload durably with the log.
struct install_snapshot {
  offset_and_epoch snapshot_id;
  bytes payload;
};
/// Entries below log_start_offset are covered by a snapshot and may be deleted.
struct delete_prefix {
  offset log_start_offset{0};
};
using log_write = std::variant<append_entries, truncate_suffix, install_snapshot, delete_prefix>;

/// A quorum-state write; `version` counts writes of this node instance (1, 2, ...).
struct quorum_state_write {
  quorum_state state;
  uint64_t version = 0;
};

/// A snapshot the state machine must load before applying `committed`.
struct snapshot_to_apply {
  offset_and_epoch snapshot_id;
  bytes payload;
};

struct effects {
  std::optional<quorum_state_write> quorum_state_;
  std::vector<log_write> log_writes;
  std::vector<message> messages;
  std::optional<snapshot_to_apply> apply_snapshot;
  /// Newly committed entries in offset order, [previous high watermark, high_watermark).
  std::vector<entry> committed;
  /// The new high watermark, when it moved (it never moves backwards).
  std::optional<offset> high_watermark;
  /// The role after this input, when it changed.
  std::optional<role> role_changed;
  /// A node that was awaiting its first catch-up (persisted_state::awaiting_first_catch_up) has
  /// caught up with a leader: the driver records it durably (ringlog: writes meta.properties),
  /// so a restart does not start the wait again. Set once per node instance.
  bool caught_up_first_time = false;

  [[nodiscard]] bool empty() const {
    return !quorum_state_ && log_writes.empty() && messages.empty() && !apply_snapshot && committed.empty() &&
           !high_watermark && !role_changed && !caught_up_first_time;
  }
};

}  // namespace ringlog::raft
