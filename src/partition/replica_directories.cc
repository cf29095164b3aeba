// A shard's replicas opened and removed with their directories (partition_manager.h), the
// partition_context they reach, the stray directories of a restart, and the fan-out of one
// change over the shards.
// Kafka's counterparts: LogManager.getOrCreateLog, asyncDelete and its stray-log removal
// (KAFKA-14616), ReplicaManager's stopPartitions; PartitionMetadataFile.

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "ringlog/partition/constants.h"
#include "ringlog/partition/partition_manager.h"

namespace ringlog::partition {
namespace {

/// partition.metadata (version 0) is this line, the topic id and a newline.
constexpr std::string_view metadata_prefix = "version: 0\ntopic_id: ";

/// The contents of `path` as text, or nullopt when it cannot be read.
std::optional<std::string> read_text(io::file_system& fs, const std::string& path) {
  auto bytes = io::read_whole_file(fs, path);
  if (!bytes.ok()) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

/// Whether `text` is a partition.metadata as write_file_atomic left one: the version line, a topic
/// id of 22 base64url characters (controller::uuid_to_string) and a newline.
bool well_formed_metadata(const std::string& text) {
  constexpr size_t topic_id_chars = 22;
  if (!text.starts_with(metadata_prefix) || text.size() != metadata_prefix.size() + topic_id_chars + 1 ||
      !text.ends_with('\n')) {
    return false;
  }
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(metadata_prefix.size()), text.end() - 1, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

/// The partition of directory `name` when it is `topic`'s ("topic-partition"), else -1.
int32_t partition_of_directory(const std::string& name, const std::string& topic) {
  if (name.size() <= topic.size() + 1 || name.compare(0, topic.size(), topic) != 0 || name[topic.size()] != '-') {
    return -1;
  }
  const std::string digits = name.substr(topic.size() + 1);
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return static_cast<int32_t>(std::stol(digits));
}

/// The topic id a well-formed partition.metadata `text` names.
std::string topic_id_of(const std::string& text) {
  return text.substr(metadata_prefix.size(), text.size() - metadata_prefix.size() - 1);
}

/// What the start-up sweep does with a replica directory the image does not give this node.
enum class stray_action { delete_log, move_aside };

struct stray_verdict {
  stray_action action;
  std::string reason;   // the line logged (what the directory is, and what happens to it)
};

/// What to do with the directory `name` with partition.metadata `text` as of the image whose
/// topics by partition.metadata text are `by_metadata`, or nullopt when it is this node's or not
/// recognised (open_replica then keeps a damaged one offline).
std::optional<stray_verdict> stray_reason(const std::string& name, const std::string& text,
                                          const std::map<std::string, const controller::topic_image*>& by_metadata,
                                          int32_t node_id) {
  // Not one we wrote (damaged: open_replica keeps it offline, never deleted here).
  if (!well_formed_metadata(text)) return std::nullopt;
  auto it = by_metadata.find(text);
  if (it == by_metadata.end()) {
    // The image keeps no deleted topic ids, so an unknown id is a topic deleted while this
    // broker was down (re-created under the same name or not) or a damaged file: either way it
    // is moved aside, never deleted (the breaker of session 40: a flipped id deleted 6000
    // acknowledged records of the only copy), as Kafka's LogManager renames stray logs "-stray"
    // (KAFKA-15813); a partition of that name this node hosts then starts a new replica, which
    // its leader fills, so a topic re-created while this broker was down is served at once.
    return stray_verdict{stray_action::move_aside,
                         "log directory " + name + " belongs to topic id " + topic_id_of(text) +
                             ", which no longer exists (deleted while this broker was down, or before its "
                             "removal finished)"};
  }
  const controller::topic_image& topic = *it->second;
  const int32_t partition = partition_of_directory(name, topic.name);
  if (partition < 0 || partition >= static_cast<int32_t>(topic.partitions.size())) return std::nullopt;
  const auto& replicas = topic.partitions[static_cast<size_t>(partition)].replicas;
  if (std::find(replicas.begin(), replicas.end(), node_id) != replicas.end()) return std::nullopt;
  return stray_verdict{stray_action::delete_log,
                       "partition " + name + " was reassigned away from this broker while it was down: its log is deleted"};
}

/// Kafka's stray directory name (UnifiedLog.logStrayDirName): "<topic>-<partition>.<id>-stray".
constexpr std::string_view stray_suffix = "-stray";

/// Renames `name` aside as a stray log (a free name: a number is added when it is taken).
io::result<std::string> move_aside(const log_directory& dir, const std::string& name, const std::string& topic_id) {
  std::string aside = name + "." + topic_id + std::string(stray_suffix);
  for (int n = 1; dir.fs.exists(dir.path + "/" + aside) && n <= max_stray_copies; ++n) {
    aside = name + "." + topic_id + "." + std::to_string(n) + std::string(stray_suffix);
  }
  auto renamed = dir.fs.rename(dir.path + "/" + name, dir.path + "/" + aside);
  if (!renamed.ok()) return renamed.error();
  auto synced = dir.fs.sync_directory(dir.path);
  if (!synced.ok()) return synced.error();
  return aside;
}

/// Carries out `verdict` on directory `name`, with its line.
void settle_stray(const log_directory& dir, const std::string& name, const std::string& text,
                  const stray_verdict& verdict) {
  if (verdict.action == stray_action::delete_log) {
    auto removed = dir.fs.remove_all(dir.path + "/" + name);
    if (!dir.log) return;
    if (removed.ok()) return dir.log(true, verdict.reason);
    return dir.log(false, "stray log directory " + name + " (" + verdict.reason +
                              ") could not be deleted: " + removed.error().message);
  }
  auto aside = move_aside(dir, name, topic_id_of(text));
  if (!dir.log) return;
  if (aside.ok()) {
    return dir.log(false, verdict.reason + ": its files are kept, moved aside to " + dir.path + "/" + aside.value() +
                              " (delete that directory once its records are known to be unwanted)");
  }
  dir.log(false, "stray log directory " + name + " (" + verdict.reason + ") is left in place: moving it aside failed: " +
                     aside.error().message);
}

}  // namespace

error log_directory::failed(std::string_view operation, const io::error& e) const {
  const storage::error stored = storage::storage_error(e);
  // EMFILE / ENFILE is the open-file limit, not a failed disk: answered (retriable), never a halt.
  if (failures && stored.code == storage::errc::kafka_storage_error) failures->report(operation, stored);
  return error{errc::kafka_storage_error, stored.message};
}

std::string partition_metadata_text(const controller::uuid& topic_id) {
  return std::string(metadata_prefix) + controller::uuid_to_string(topic_id) + "\n";
}

void remove_stray_replicas(const log_directory& dir, const controller::metadata_image& image, int32_t node_id) {
  std::map<std::string, const controller::topic_image*> by_metadata;   // partition.metadata text -> its topic
  for (const auto& [name, topic] : image.topics()) by_metadata[partition_metadata_text(topic->topic_id)] = topic.get();
  auto names = dir.fs.list_directory(dir.path);
  if (!names.ok()) return;   // opening the replicas reports an unreadable log directory
  for (const auto& name : names.value()) {
    const std::string path = dir.path + "/" + name;
    if (!dir.fs.exists(path + "/partition.metadata")) continue;   // not a replica's directory (or none)
    auto text = read_text(dir.fs, path + "/partition.metadata");
    if (!text) continue;
    if (name.ends_with(stray_suffix)) continue;   // moved aside before: kept for the operator
    auto verdict = stray_reason(name, *text, by_metadata, node_id);
    if (verdict) settle_stray(dir, name, *text, *verdict);
  }
}

void run_on_shards(runtime::shard_runtime& runtime, size_t count, const std::function<size_t(size_t)>& shard_of,
                   std::function<result<void>(size_t)> task, size_t reply_shard,
                   std::function<void(result<void>)> done) {
  if (count == 0) return done(base::ok_v);
  struct gather {
    std::atomic<size_t> remaining;
    std::mutex mutex;
    std::optional<error> failure;
    std::function<result<void>(size_t)> task;
    std::function<void(result<void>)> done;
  };
  auto g = std::make_shared<gather>();
  g->remaining = count;
  g->task = std::move(task);
  g->done = std::move(done);
  for (size_t i = 0; i < count; ++i) {
    runtime.post(shard_of(i), [&runtime, g, i, reply_shard] {
      if (auto r = g->task(i); !r.ok()) {
        std::lock_guard lock(g->mutex);
        if (!g->failure) g->failure = r.error();
      }
      if (g->remaining.fetch_sub(1) != 1) return;
      runtime.post(reply_shard, [g] { g->done(g->failure ? result<void>(*g->failure) : result<void>(base::ok_v)); });
    });
  }
}

size_t shard_of(const std::string& topic, int32_t partition, size_t shard_count) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : topic) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
  h = (h ^ static_cast<uint32_t>(partition)) * 1099511628211ULL;
  return static_cast<size_t>(h % shard_count);
}

namespace {
struct steps_in_order {
  runtime::shard_runtime& runtime;
  size_t shard;
  std::vector<ordered_step> steps;
  after_failure mode;
  size_t next = 0;
  std::optional<error> failure;
  std::function<void(result<void>)> done;
};

// The pending step's `next` holds the run (the run holds only the steps), so nothing keeps it
// alive once the last step is done.
void run_next_step(const std::shared_ptr<steps_in_order>& run) {
  if (run->next == run->steps.size()) {
    auto finish = std::move(run->done);
    return finish(run->failure ? result<void>(*run->failure) : result<void>(base::ok_v));
  }
  auto step = run->steps[run->next++];
  step([run](result<void> r) {
    if (!r.ok() && run->mode == after_failure::stop) {
      auto finish = std::move(run->done);
      return finish(r.error());
    }
    if (!r.ok() && !run->failure) run->failure = r.error();
    run->runtime.post(run->shard, [run] { run_next_step(run); });
  });
}
}  // namespace

void run_in_order(runtime::shard_runtime& runtime, size_t shard, std::vector<ordered_step> steps, after_failure mode,
                  std::function<void(result<void>)> done) {
  run_next_step(std::make_shared<steps_in_order>(steps_in_order{
      .runtime = runtime, .shard = shard, .steps = std::move(steps), .mode = mode, .next = 0, .failure = {},
      .done = std::move(done)}));
}

partition_manager::partition_manager(size_t shard, runtime::shard_runtime& runtime, const base::clock& clock,
                                     const std::atomic<bool>& stopping, compaction& cleaner,
                                     maintenance_settings maintenance, const replica_services& services,
                                     log_directory dir)
    : shard_(shard),
      runtime_(runtime),
      dir_(std::move(dir)),
      node_id_(services.node_id),
      observer_(services.observer),
      host_(services.host),
      fetcher_(services.fetcher),
      clock_(clock),
      stopping_(stopping),
      cleaner_(cleaner),
      maintenance_(maintenance),
      next_retention_ms_(clock.now_ms() + std::min(retention_first_check_delay_ms,
                                                   maintenance.retention_check_interval_ms)),
      context_(make_partition_context(services)) {}

std::unique_ptr<partition_context> partition_manager::make_partition_context(const replica_services& services) {
  return std::unique_ptr<partition_context>(new partition_context{
      .shard = shard_,
      .current_shard = services.current_shard,
      .clock = clock_,
      .disk = runtime_.disk(shard_),
      .config = services.config,
      .min_insync_replicas = services.min_insync_replicas,
      .leader_replication_throttled_rate = services.leader_replication_throttled_rate,
      .acquire_leader_throttle = services.acquire_leader_throttle,
      .record_leader_throttle = services.record_leader_throttle,
      .leadership_lease_until_ms = services.leadership_lease_until_ms,
      .stopping = stopping_,
      .next_read_id = services.next_read_id,
      .next_txn_verification = services.next_txn_verification,
      .recent_reads = recent_reads_,
      .add_fetch_deadline =
          [this](int64_t at_ms, const std::shared_ptr<partition_runtime>& rt, const std::shared_ptr<fetch_waiter>& w) {
            add_fetch_deadline(at_ms, rt, w);
          },
  });
}

result<void> partition_manager::open_replica(const std::string& topic, const controller::uuid& topic_id,
                                             int32_t partition, const storage::log_config& log_config,
                                             std::shared_ptr<partition_stats> stats,
                                             const controller::partition_image& state, bool fresh) {
  const std::string dir = dir_.of(topic, partition);
  // Kafka's partition.metadata names the topic id a directory belongs to: a directory of a topic
  // deleted (or re-created) before a crash let its removal finish must never be served as the
  // new topic's. Directories without one (ringlog before topic ids) are adopted unless `fresh`.
  const std::string metadata_path = dir + "/partition.metadata";
  const std::string expected = partition_metadata_text(topic_id);
  if (dir_.fs.exists(dir)) {
    const bool has_metadata = dir_.fs.exists(metadata_path);
    const std::optional<std::string> text = has_metadata ? read_text(dir_.fs, metadata_path) : std::nullopt;
    if (has_metadata && (!text || !well_formed_metadata(*text))) {
      // Damaged (a disk or a hand wrote it): whose records these are is unknown, so they are
      // neither served nor deleted (the breaker of session 30: an empty file deleted the
      // partition, and as leader it truncated every follower to nothing). Kafka fails the log.
      return error{errc::kafka_storage_error,
                   metadata_path + (text ? " does not parse (expected \"version: 0\" and \"topic_id: <id>\" lines)"
                                         : " cannot be read") +
                       ": the replica is not opened on this broker and its files are kept. To repair: write \"" +
                       "version: 0\\ntopic_id: " + controller::uuid_to_string(topic_id) +
                       "\\n\" into it if these are this topic's records, or move the directory away, and restart"};
    }
    if (has_metadata && text != expected) {
      // Another topic's id: an earlier topic of this name deleted while this broker was down, or
      // a damaged file. The image keeps no deleted ids to tell which, so nothing is deleted
      // (Kafka's Partition.checkOrSetTopicId fails the replica: InconsistentTopicIdException).
      return error{errc::kafka_storage_error,
                   metadata_path + " names topic id " + topic_id_of(*text) + ", but topic " + topic + " has id " +
                       controller::uuid_to_string(topic_id) +
                       ": the replica is not opened on this broker and its files are kept. To repair: if these are "
                       "this topic's records, write \"version: 0\\ntopic_id: " + controller::uuid_to_string(topic_id) +
                       "\\n\" into it; if they are an earlier topic's of this name, move the directory away; and restart"};
    }
    if (!has_metadata && fresh) {
      auto removed = dir_.fs.remove_all(dir);
      if (!removed.ok()) return dir_.failed("removal of a replaced replica", removed.error());
    }
  }
  auto log = storage::partition_log::open(dir_.fs, dir, log_config, clock_);
  if (!log.ok()) {
    // A new replica's files are written, not read (its directory held nothing of this topic): a
    // failure there is the disk's (ENOSPC, EIO), and the log directory failed, as for any other
    // write (Kafka's LogDirFailureChannel). A replica opened from existing files may instead hold
    // damage only it suffers: it stays offline, logged by the caller (the breaker of session 29).
    // The breaker of session 34 filled the disk while creating topics: their replicas stayed
    // offline on a broker that kept serving, and their creators heard "already exists".
    if (fresh && dir_.failures && log.error().code == storage::errc::kafka_storage_error) {
      dir_.failures->report("replica creation", log.error());
    }
    return from_storage(log.error());
  }
  log.value()->report_failures_to(dir_.failures);
  log.value()->charge_segments_to(dir_.segment_budget);
  if (dir_.log) {
    for (const auto& warning : log.value()->last_recovery().warnings) dir_.log(false, dir + ": " + warning);
  }
  if (!dir_.fs.exists(metadata_path)) {
    auto written = io::write_file_atomic(dir_.fs, metadata_path, std::as_bytes(std::span(expected.data(), expected.size())));
    if (!written.ok()) return dir_.failed("partition.metadata write", written.error());
  }
  auto rt = std::make_shared<partition_runtime>(*context_);
  rt->uid = next_partition_uid_++;
  rt->topic = topic;
  rt->topic_id = topic_id;
  rt->partition = partition;
  rt->log = std::move(log.value());
  rt->stats = std::move(stats);
  rt->epoch = model::leader_epoch{-1};   // apply_partition_state begins its leadership or its following
  rt->publish();
  add(rt);
  apply_partition_state(rt, state);
  rt->stats->set_open_failure({});
  rt->stats->open_here.store(true, std::memory_order_release);
  return base::ok_v;
}

result<void> partition_manager::remove_replica(const std::string& topic, int32_t partition, const error& why) {
  if (auto rt = find(topic, partition)) {
    cleaner_.forget(shard_, *rt->log);
    rt->stats->replica_removed();
    // Its follower loop ends (replica_fetcher's new_follower_generation for a deleted replica).
    ++rt->follower_generation;
    rt->follower_fetching = false;
    remove(topic, partition);
    rt->close_for_removal(why);
  }
  auto removed = dir_.fs.remove_all(dir_.of(topic, partition));
  if (!removed.ok() && removed.error().code != io::errc::not_found) return dir_.failed("replica deletion", removed.error());
  return base::ok_v;
}

}  // namespace ringlog::partition
