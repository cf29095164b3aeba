#pragma once
// The metadata quorum: the raft driver for the metadata log `__cluster_metadata-0` (KIP-500,
// KIP-595, KIP-630). It owns one raft::node on one shard, ticks it from shard timers, carries out
// its effects in the order effects.h gives (quorum-state fsynced before anything depending on it
// is sent; entries appended, then group-committed with flush_async on the shard's disk executor
// before on_append_fsynced), maps raft messages onto Kafka's Vote / BeginQuorumEpoch /
// EndQuorumEpoch / Fetch / FetchSnapshot requests on an rpc::transport (quorum_wire.h), and hands
// committed entries to a state machine. Files: quorum_storage.h.
//
// Threads: every public method may be called from any thread; the work runs on `shard`. The
// state machine's callbacks and every `done` run on `shard`.
//
// One voter: the same code path without a transport (pass nullptr): the node elects itself and
// commits after its own fsync.
//
// Upgrade from the single-node broker: a log directory whose __cluster_metadata-0 holds records
// written before raft (keyed "topic"/"remove_topic", leader epoch 0) and no quorum-state file,
// opened by a quorum whose only voter is this node, treats the whole existing log as committed:
// start() applies it before returning.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/controller/constants.h"
#include "ringlog/controller/errc.h"
#include "ringlog/io/file.h"
#include "ringlog/model/record.h"
#include "ringlog/raft/types.h"
#include "ringlog/rpc/cluster_transport.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"
#include "ringlog/storage/log_dir_failure.h"
#include "ringlog/storage/meta_properties.h"

namespace ringlog::controller {

/// One committed data entry of the metadata log.
struct committed_entry {
  int64_t offset = 0;
  /// The entry's payload (valid during the apply call only).
  std::span<const uint8_t> payload;
  /// The record key, only for records the single-node broker wrote before raft ("topic" /
  /// "remove_topic", text values); nullptr for every raft entry.
  const model::bytes* legacy_key = nullptr;
};

/// What the quorum drives: the metadata image builder (the broker implements it).
class quorum_state_machine {
 public:
  virtual ~quorum_state_machine() = default;
  /// Committed data entries, in offset order, each exactly once per process (leader-change
  /// control entries are not passed). Offsets may skip (control entries, snapshots).
  virtual void apply(std::span<const committed_entry> entries) = 0;
  /// Every entry below `end_offset` is committed and applied: called when control entries
  /// (leader changes, which apply() does not see) end a committed run, so that a wait for "applied
  /// up to the quorum's high watermark" (the broker's metadata barrier, start-up's catch-up) does
  /// not wait for a data entry that may never come (the breaker's 30-60 s stalls after an
  /// election that nothing followed, session 22). Offsets only grow.
  virtual void applied_through(int64_t end_offset) { (void)end_offset; }
  /// The state after every entry applied so far, as bytes (stored as a snapshot).
  virtual std::vector<uint8_t> snapshot() = 0;
  /// Replaces the state by a snapshot covering every offset below `end_offset`.
  virtual void load_snapshot(std::span<const uint8_t> payload, int64_t end_offset) = 0;
  /// The known leader or epoch changed (leader_id -1: no leader known now).
  virtual void on_leader_change(int32_t leader_id, int32_t epoch) = 0;
};

struct metadata_quorum_config {
  /// node.id
  int32_t node_id = -1;
  /// controller.quorum.voters: id -> cluster listener address (the transport uses the addresses;
  /// the quorum uses the ids). Must contain node_id.
  std::map<int32_t, rpc::peer_address> voters;
  /// cluster.id
  std::string cluster_id;
  /// controller.quorum.election.timeout.ms / fetch.timeout.ms / election.backoff.max.ms
  int64_t election_timeout_ms = 1000;
  int64_t fetch_timeout_ms = 1000;
  int64_t election_backoff_max_ms = 500;
  /// The log directory (log.dirs); the quorum's files go to <log_dir>/__cluster_metadata-0.
  std::string log_dir;
  /// Committed entries between snapshots.
  uint64_t snapshot_interval_entries = constants::snapshot_interval_entries_default;
  /// How long propose() waits for the commit.
  int64_t propose_timeout_ms = constants::propose_timeout_ms_default;
  /// Seed of the election timeout randomness; nullopt: derived from the node id and the clock.
  std::optional<uint64_t> random_seed;
  /// Where a failed write of the metadata log (it lives in log.dirs) is reported besides stopping
  /// the quorum (log_dir_failure.h); nullptr: not reported.
  storage::log_dir_failure_channel* log_dir_failures = nullptr;
  /// Set when log_dir has no meta.properties yet and other voters exist: the node awaits its first
  /// catch-up with a leader (raft::persisted_state::awaiting_first_catch_up: until then it votes
  /// only for candidates also awaiting theirs, and only they vote for it), then writes this
  /// meta.properties into log_dir, which both ends the wait for good and pins cluster.id once a
  /// leader of that cluster answered. A failed write is a log directory failure.
  std::optional<storage::meta_properties> meta_properties_once_caught_up;
};

/// What `kafka-metadata-quorum describe --status` shows (DescribeQuorumResponse's fields).
struct quorum_description {
  struct voter {
    int32_t replica_id = -1;
    /// The voter's log end offset as its last fetch reported (-1: not known; only the leader knows).
    int64_t log_end_offset = -1;
    /// Leader's log end offset minus this voter's (-1: not known).
    int64_t lag = -1;
    /// Wall-clock ms of the voter's last fetch seen by the leader (-1: never in this epoch).
    int64_t last_fetch_timestamp_ms = -1;
    /// The same instant on the leader's base::clock::monotonic_ms (-1: never): what the
    /// leadership lease measures from; only for this process.
    int64_t last_fetch_monotonic_ms = -1;
  };
  int32_t node_id = -1;
  int32_t leader_id = -1;
  int32_t leader_epoch = 0;
  int64_t high_watermark = 0;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  /// Every entry below this offset has been handed to the state machine (or is covered by the
  /// loaded snapshot): the node has caught up once it reaches the high watermark.
  int64_t applied_end_offset = 0;
  std::string role;  // raft::to_string(role): leader, follower, candidate, ...
  std::vector<voter> voters;
  /// Observers (KIP-595 non-voters: process.roles=broker nodes) that fetched in this epoch, as
  /// the leader saw them (empty elsewhere), by replica id (Kafka's CurrentObservers).
  std::vector<voter> observers;
  /// True when this node is not among the voters (an observer).
  bool observer = false;
  /// A node that refused this node's requests with INCONSISTENT_CLUSTER_ID (104): the two were
  /// given different cluster.id values (-1: none did).
  int32_t cluster_id_refused_by = -1;
  /// metadata_quorum_config::meta_properties_once_caught_up was set and the node has not yet
  /// caught up with a leader (nor written the file).
  bool awaiting_first_catch_up = false;
};

class metadata_quorum {
 public:
  /// `transport` may be nullptr only with a single voter. Every reference must outlive the
  /// quorum; the runtime must be running from start() until stop() returns.
  metadata_quorum(metadata_quorum_config config, io::file_system& fs, runtime::shard_runtime& runtime, size_t shard,
                  const base::clock& clock, rpc::transport* transport, quorum_state_machine& state_machine);
  ~metadata_quorum();
  metadata_quorum(const metadata_quorum&) = delete;
  metadata_quorum& operator=(const metadata_quorum&) = delete;

  /// Opens the files, loads the snapshot into the state machine (and, for an upgraded single-node
  /// directory, applies its committed history), registers the quorum apis on the transport and
  /// starts ticking. Blocks until that is done. Errors: kafka_storage_error, invalid_record (bad
  /// config: the message names the key).
  result<void> start();
  /// Appends `payload` as a new entry (leader only). `done` runs once on the quorum's shard:
  /// with the entry's offset once it is COMMITTED, or an error: not_leader_or_follower (message
  /// names the leader if known; also when leadership moved before the commit), request_timed_out,
  /// record_too_large, uncommitted_limit_reached, shutting_down.
  void propose(std::vector<uint8_t> payload, std::function<void(result<int64_t>)> done);
  /// The known leader (-1: none) and epoch; any thread.
  [[nodiscard]] int32_t leader_id() const;
  /// This node leads and has handed every entry committed before its epoch to the state machine
  /// (an entry of its own epoch is applied). A new leader's log holds those entries, but it learns
  /// they are committed only when its epoch's first entry commits (Raft section 5.4.2); until
  /// then its state machine may lack a fence or an election its predecessor committed. Kafka's
  /// QuorumController becomes active only then (KafkaRaftClient tells the leader's listener of
  /// its leadership once it read up to the epoch's start). Any thread.
  [[nodiscard]] bool leader_caught_up() const;
  /// While this node leads: the offset of the first entry of its epoch (its leader-change entry,
  /// raft::node::become_leader). Every entry committed in an earlier epoch lies below it, so a
  /// node that applied it holds every record the previous leaders committed. -1 while it does
  /// not lead. Published before the state machine hears of the new leadership
  /// (state_machine::on_leader_change); any thread.
  [[nodiscard]] int64_t leader_epoch_start_offset() const;
  [[nodiscard]] int32_t epoch() const;
  /// The quorum's status (as of the last event on the shard); any thread.
  [[nodiscard]] quorum_description describe() const;
  /// Controlled shutdown of a leader: EndQuorumEpoch to the others so one takes over at once.
  void resign();
  /// Stops ticking and answering, fails waiting proposals with shutting_down, flushes and closes
  /// the log. Blocks until done (inline when called on the shard). Idempotent.
  void stop();

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace ringlog::controller
