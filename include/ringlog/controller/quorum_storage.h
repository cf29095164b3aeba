#pragma once
// What the metadata quorum keeps on disk, in Kafka's layout, inside <log.dirs>/__cluster_metadata-0/:
//   quorum-state                  KRaft's QuorumStateData as JSON (below); written with
//                                 io::write_file_atomic (temp, fdatasync, rename, directory sync)
//                                 before anything that depends on it is sent (KIP-595)
//   00000000000000000000.log ...  the metadata log: storage::partition_log segments of record batch
//                                 v2, one batch of one record per raft entry (quorum_wire.h: a
//                                 data record or a LEADER_CHANGE control record), partition
//                                 leader epoch = raft epoch. One batch per entry because raft
//                                 truncates at any offset and the log cuts at batch boundaries
//   <end offset, 20 digits>-<epoch, 10 digits>.checkpoint
//                                 a snapshot of the state machine covering offsets < end offset
//                                 (KIP-630's name); contents: record batches v2 whose records'
//                                 values, concatenated in offset order, are the snapshot payload
//                                 (each record holds at most snapshot_record_bytes_max bytes)
//
// quorum-state (Kafka's QuorumStateData v0, one line):
//   {"clusterId":"<id>","leaderId":<int>,"leaderEpoch":<int>,"votedId":<int>,"appliedOffset":0,
//    "currentVoters":[{"voterId":<int>},...],"data_version":0}
//
// Restart rebuilds raft::persisted_state from these files: quorum-state (none: epoch 0, no leader,
// no vote), the newest snapshot whose batches decode, and the log's entries from the snapshot's
// end offset on. All methods run on the quorum's shard and block on the disk except flush_async.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/controller/errc.h"
#include "ringlog/io/disk_executor.h"
#include "ringlog/io/file.h"
#include "ringlog/model/record.h"
#include "ringlog/raft/node.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::controller {

/// Kafka's metadata log directory name inside a log directory.
inline constexpr std::string_view metadata_log_directory = "__cluster_metadata-0";
/// Kafka's quorum state file name inside the metadata log directory.
inline constexpr std::string_view quorum_state_file = "quorum-state";

/// The file name of a snapshot: "<end offset, 20 digits>-<epoch, 10 digits>.checkpoint".
std::string snapshot_file_name(raft::offset_and_epoch snapshot_id);
/// The snapshot id a file name encodes, or nullopt for any other name.
std::optional<raft::offset_and_epoch> parse_snapshot_file_name(std::string_view name);

/// quorum-state's JSON text for `state` (layout above).
std::string quorum_state_json(const raft::quorum_state& state, std::string_view cluster_id,
                              const std::vector<raft::node_id>& voters);
/// Reads leaderEpoch, leaderId and votedId back. Errors: kafka_storage_error naming the missing
/// or malformed field.
result<raft::quorum_state> parse_quorum_state_json(std::string_view text);

/// What open() found durable.
struct loaded_quorum {
  raft::persisted_state state;
  /// Whether a quorum-state file existed (a directory of the single-node broker before raft has none).
  bool had_quorum_state_file = false;
  /// Record keys of entries written by the pre-raft broker ("topic"/"remove_topic"), by offset.
  std::map<int64_t, model::bytes> legacy_keys;
};

class quorum_storage {
 public:
  /// Bytes of snapshot payload per record of a .checkpoint file: far below the record batch
  /// bound (base::constants::batch_bytes_max) and the storage max.message.bytes used here.
  static constexpr size_t snapshot_record_bytes_max = 1024 * 1024;

  /// Opens (creating) <log_dir>/__cluster_metadata-0 and loads what is durable. `cluster_id` and
  /// `voters` are written into quorum-state. Errors: kafka_storage_error naming the file.
  static result<std::unique_ptr<quorum_storage>> open(io::file_system& fs, const std::string& log_dir,
                                                      const base::clock& clock, std::string cluster_id,
                                                      std::vector<raft::node_id> voters);
  ~quorum_storage();

  [[nodiscard]] const loaded_quorum& loaded() const { return loaded_; }
  [[nodiscard]] const std::string& directory() const { return directory_; }

  /// Writes quorum-state atomically and durably (fdatasync + rename + directory sync).
  result<void> write_quorum_state(const raft::quorum_state& state);
  /// Appends entries (consecutive, starting at the log end) to the log's page cache.
  result<void> append(std::span<const raft::entry> entries, int64_t now_ms);
  /// Group commit: `done` runs from the executor's poll once every append so far is durable.
  void flush_async(io::disk_executor& executor, std::function<void(result<void>)> done);
  /// Blocking flush (tests, shutdown).
  result<void> flush();
  /// Drops entries at offset >= end (durable when it returns).
  result<void> truncate_suffix(raft::offset end);
  /// Writes a snapshot file durably (it becomes the newest).
  result<void> save_snapshot(raft::offset_and_epoch snapshot_id, const raft::bytes& payload);
  /// A snapshot downloaded from the leader: saved, then the log restarts empty at its end offset.
  result<void> install_snapshot(raft::offset_and_epoch snapshot_id, const raft::bytes& payload);
  /// Moves the log start to `log_start_offset` (a snapshot covers everything below) and deletes
  /// segments and snapshot files wholly below it.
  result<void> delete_prefix(raft::offset log_start_offset);
  /// Reads the snapshot file of `snapshot_id`. Errors: kafka_storage_error.
  result<raft::bytes> read_snapshot(raft::offset_and_epoch snapshot_id);
  /// Flushes and closes the log (clean shutdown marker).
  result<void> close();

  [[nodiscard]] raft::offset log_end_offset() const { return log_->log_end_offset(); }
  [[nodiscard]] raft::offset log_start_offset() const { return log_->log_start_offset(); }

 private:
  quorum_storage(io::file_system& fs, std::string directory, std::string cluster_id, std::vector<raft::node_id> voters)
      : fs_(fs), directory_(std::move(directory)), cluster_id_(std::move(cluster_id)), voters_(std::move(voters)) {}
  result<void> load(const base::clock& clock);

  io::file_system& fs_;
  std::string directory_;
  std::string cluster_id_;
  std::vector<raft::node_id> voters_;
  std::unique_ptr<storage::partition_log> log_;
  loaded_quorum loaded_;
};

}  // namespace ringlog::controller
