#include "ringlog/storage/partition_log.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <set>

#include "checkpoint.h"
#include "ringlog/storage/log_cleaner.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"
#include "ringlog/codec/record_batch.h"
#include "segment.h"

namespace ringlog::storage {
namespace {

constexpr const char* recovery_point_file = "recovery-point-offset-checkpoint";
constexpr const char* high_watermark_file = "replication-offset-checkpoint";
constexpr const char* log_start_offset_file = "log-start-offset-checkpoint";
constexpr const char* leader_epoch_file = "leader-epoch-checkpoint";
constexpr const char* clean_shutdown_file = "clean-shutdown";
/// The order of partition_log::written_checkpoints_.
constexpr std::array<const char*, 4> checkpoint_files{recovery_point_file, high_watermark_file, log_start_offset_file,
                                                      leader_epoch_file};
constexpr size_t leader_epoch_index = 3;


/// The leader-epoch-checkpoint entries: leader epoch -> first offset of that epoch.
checkpoint_entries epoch_entries(const std::map<int32_t, model::offset>& epochs) {
  checkpoint_entries entries;
  for (const auto& [e, o] : epochs) entries.emplace_back(std::to_string(e), o.value());
  return entries;
}

constexpr const char* snapshot_suffix = ".snapshot";
constexpr const char* txn_index_suffix = ".txnindex";

/// "00000000000000000042<suffix>" -> 42; nullopt for any other name.
std::optional<model::offset> parse_offset_name(const std::string& name, std::string_view suffix) {
  constexpr size_t digits = 20;
  if (name.size() != digits + suffix.size() || name.compare(digits, suffix.size(), suffix) != 0) return std::nullopt;
  int64_t value = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + digits, value);
  if (ec != std::errc{} || p != name.data() + digits || value < 0) return std::nullopt;
  return model::offset{value};
}

/// "00000000000000000042.log" -> 42; nullopt for any other name.
std::optional<model::offset> parse_segment_name(const std::string& name) { return parse_offset_name(name, ".log"); }

int64_t checkpoint_value(const checkpoint_entries& entries, int64_t fallback) {
  return entries.empty() ? fallback : entries.front().second;
}

/// The next offset of the last of `segments` (0 when there is none).
model::offset log_end_of(const std::map<model::offset, std::unique_ptr<segment>>& segments) {
  return segments.empty() ? model::offset{0} : segments.rbegin()->second->next_offset();
}

/// The warning for a segment recovery removes at open: an empty one before another segment or
/// one starting inside the log before it (`cut` false), or one after a gap or a cut segment
/// (`cut`: the log ends at `log_end`).
std::string removed_segment_warning(const segment& seg, bool cut, model::offset log_end) {
  const std::string file = segment_file_stem(seg.base_offset()) + ".log";
  if (!cut && seg.empty()) return "removed the empty segment " + file + ": it holds no records and another segment follows it";
  if (!cut) {
    return "removed segment " + file + " (" + std::to_string(seg.size_bytes()) + " bytes): it starts at offset " +
           std::to_string(seg.base_offset().value()) + ", inside the log before it (which ends at offset " +
           std::to_string(log_end.value()) + "), so it is a stray copy; the log goes on";
  }
  return "removed segment " + file + " (" + std::to_string(seg.size_bytes()) + " bytes, records from offset " +
         std::to_string(seg.base_offset().value()) + " on): the log before it ends at offset " +
         std::to_string(log_end.value()) + " (a segment missing or cut by recovery), and offsets stay dense, so the "
         "log ends there and every later segment goes; on a replica the leader's copy is fetched again";
}

/// The warning for a segment recovery cut at `seg`'s (new) end, `bytes` dropped after it.
std::string cut_segment_warning(const segment& seg, uint64_t bytes, model::offset recovery_point) {
  return "recovery cut segment " + segment_file_stem(seg.base_offset()) + ".log at offset " +
         std::to_string(seg.next_offset().value()) + ": " + std::to_string(bytes) +
         " bytes after it did not check (length, CRC or offsets)" +
         (seg.next_offset() < recovery_point
              ? " although they were below the recovery point " + std::to_string(recovery_point.value()) +
                    " (damaged on disk: acknowledged records were lost here; a replica fetches them again)"
              : " (a write torn by the crash)");
}

/// The warning when recovery ends the log at `log_end`, below the checkpointed `recovery_point`
/// (every record below it was fdatasynced here), or nullopt when it does not. Fires for every
/// way records go (a cut inside a batch, a file cut at a batch boundary or to nothing, a missing
/// segment): the breaker of session 40 lost 600 records silently so. Only the recovery point
/// counts: records above it were never durable here (a crash may take them, as the flush policy
/// allows), while a checkpointed high watermark can stand above the log end a follower truncated
/// to when it crashed before its next checkpoint; `high_watermark` only says how many of the lost
/// records had been acknowledged.
std::optional<std::string> lost_below_checkpoints_warning(model::offset log_end, model::offset recovery_point,
                                                          model::offset high_watermark) {
  if (log_end >= recovery_point) return std::nullopt;
  const model::offset acknowledged_end = std::min(recovery_point, high_watermark);
  const std::string acknowledged =
      log_end < acknowledged_end ? "records [" + std::to_string(log_end.value()) + ", " +
                                       std::to_string(acknowledged_end.value()) +
                                       ") were below the high watermark: acknowledged records were lost here"
                                 : "none was below the high watermark " + std::to_string(high_watermark.value());
  return "recovery ends the log at offset " + std::to_string(log_end.value()) + ", below the recovery point " +
         std::to_string(recovery_point.value()) + " of its checkpoints: records [" + std::to_string(log_end.value()) +
         ", " + std::to_string(recovery_point.value()) + ") were fdatasynced here and are gone (damaged on disk; " +
         acknowledged + "; a replica fetches them again)";
}

/// The checkpoints a log reads at open. `epochs` is nullopt when leader-epoch-checkpoint did not
/// parse: the log rebuilds the epochs from its batches (partition_log::rebuild_leader_epochs).
struct loaded_checkpoints {
  checkpoint_entries recovery_point;
  checkpoint_entries high_watermark;
  checkpoint_entries log_start;
  std::optional<std::map<int32_t, model::offset>> epochs;
};

/// The leader-epoch-checkpoint entries as epochs; nullopt when an epoch is not a number.
std::optional<std::map<int32_t, model::offset>> parse_epochs(const checkpoint_entries& entries) {
  std::map<int32_t, model::offset> epochs;
  for (const auto& [epoch, start] : entries) {
    int32_t e = 0;
    auto [p, ec] = std::from_chars(epoch.data(), epoch.data() + epoch.size(), e);
    if (ec != std::errc{} || p != epoch.data() + epoch.size()) return std::nullopt;
    epochs[e] = model::offset{start};
  }
  return epochs;
}

/// Reads the four checkpoints of the log in `directory` (a missing one has no entries). One whose
/// text does not parse (an empty file, garbage, a wrong entry count: a disk or a hand that wrote
/// it, never write_checkpoint's temp-sync-rename) is only an optimisation for three of them and
/// reads as none, with a line in `warnings` saying what is rebuilt: the recovery point (0: every
/// segment of an unclean shutdown is scanned), the high watermark (the log start: the leader
/// raises it again as its ISR fetches) and the leader epochs (rebuilt from the batches' epochs).
/// The log start offset cannot be rebuilt (records below it were deleted by DeleteRecords or
/// retention and may still be in the first segment): corrupt_checkpoint, the partition stays
/// offline. Errors: kafka_storage_error when a file cannot be read.
/// The checkpoint at `path`, whose one entry must name this partition (`key`, "<topic> <partition>"):
/// a file of another partition (copied by a hand) is corrupt_checkpoint, never applied here (the
/// breaker of session 30: another partition's log start offset hid 500 records).
result<checkpoint_entries> read_own_checkpoint(io::file_system& fs, const std::string& path, const std::string& key) {
  auto entries = read_checkpoint(fs, path);
  if (!entries.ok() || entries->empty() || entries->front().first == key) return entries;
  return error{errc::corrupt_checkpoint, "checkpoint " + path + ": its entry names '" + entries->front().first +
                                             "', not this partition ('" + key + "')"};
}

result<loaded_checkpoints> read_checkpoints(io::file_system& fs, const std::string& directory, const std::string& key,
                                            std::vector<std::string>& warnings) {
  // nullopt: the file did not parse (the warning says what `instead` happens).
  auto read = [&](const char* file, const char* instead) -> result<std::optional<checkpoint_entries>> {
    auto entries = std::string_view(file) == leader_epoch_file ? read_checkpoint(fs, directory + "/" + file)
                                                                : read_own_checkpoint(fs, directory + "/" + file, key);
    if (entries.ok()) return std::optional<checkpoint_entries>(std::move(entries.value()));
    if (entries.error().code != errc::corrupt_checkpoint) return entries.error();
    warnings.push_back("ignored the unreadable " + entries.error().message + "; " + instead +
                       " (the file is rewritten at the next checkpoint)");
    return std::optional<checkpoint_entries>{};
  };
  loaded_checkpoints cp;
  auto recovery_point = read(recovery_point_file, "recovery scans every segment");
  if (!recovery_point.ok()) return recovery_point.error();
  cp.recovery_point = recovery_point->value_or(checkpoint_entries{});
  auto high_watermark = read(high_watermark_file, "the high watermark starts at the log start and the leader raises it");
  if (!high_watermark.ok()) return high_watermark.error();
  cp.high_watermark = high_watermark->value_or(checkpoint_entries{});
  auto start = read_own_checkpoint(fs, directory + "/" + log_start_offset_file, key);
  if (!start.ok() && start.error().code == errc::corrupt_checkpoint) {
    return error{errc::corrupt_checkpoint,
                 start.error().message + ": the first offset this partition may serve is unknown (records below it "
                 "were deleted and may still be in its first segment), so it is not served from this broker. To "
                 "repair: write the log start offset into the file (\"0\\n1\\n<topic> <partition> <offset>\\n\"), or "
                 "remove it to serve from the first segment's base offset, and restart the broker"};
  }
  if (!start.ok()) return start.error();
  cp.log_start = std::move(start.value());
  auto epochs = read(leader_epoch_file, "the leader epochs are rebuilt from the batches");
  if (!epochs.ok()) return epochs.error();
  if (!epochs->has_value()) return cp;
  cp.epochs = parse_epochs(**epochs);
  if (!cp.epochs) {
    warnings.push_back("ignored the unreadable " + directory + "/" + leader_epoch_file +
                       " (an epoch is not a number); the leader epochs are rebuilt from the batches");
  }
  return cp;
}

}  // namespace

partition_log::partition_log(io::file_system& fs, std::string directory, log_config config, const base::clock& clock)
    : fs_(fs), directory_(std::move(directory)), config_(std::move(config)), clock_(clock) {}

partition_log::~partition_log() {
  if (segment_budget_ != nullptr) segment_budget_->release(segment_files_charged_);
}

void partition_log::charge_segments_to(segment_file_budget* budget) {
  if (segment_budget_ != nullptr) segment_budget_->release(segment_files_charged_);
  segment_files_charged_ = 0;
  segment_budget_ = budget;
#ifndef RINGLOG_STORAGE_BREAK_BUDGET_UNCHARGED_AT_OPEN
  settle_segment_budget();
#endif
  // (Negative control of tests/sim/cluster_sim --segment-budget, cluster_sim_break_*: the
  // segments a log finds on disk are not charged, so a restarted broker's budget is short.)
}

void partition_log::settle_segment_budget() {
  if (segment_budget_ == nullptr) return;
  const int64_t sealed = segments_.empty() ? 0 : static_cast<int64_t>(segments_.size()) - 1;
  if (sealed > segment_files_charged_) segment_budget_->force_acquire(sealed - segment_files_charged_);
  if (sealed < segment_files_charged_) segment_budget_->release(segment_files_charged_ - sealed);
  segment_files_charged_ = sealed;
}

void partition_log::replace_segments(const std::vector<model::offset>& bases, model::offset base,
                                     std::unique_ptr<segment> fresh) {
  for (model::offset b : bases) segments_.erase(b);
  segments_.emplace(base, std::move(fresh));
  settle_segment_budget();
}

bool partition_log::segment_budget_has_room() {
  if (segment_budget_ == nullptr || segment_budget_->used() < segment_budget_->limit()) return true;
  (void)segment_budget_->refused(directory_, clock_.now_ms());
  return false;
}

bool partition_log::take_segment_file(bool forced) {
  if (segment_budget_ == nullptr) return true;
  if (forced) {
    segment_budget_->force_acquire(1);
  } else if (!segment_budget_->try_acquire()) {
    (void)segment_budget_->refused(directory_, clock_.now_ms());
    return false;
  }
  ++segment_files_charged_;
  return true;
}

result<std::unique_ptr<partition_log>> partition_log::open(io::file_system& fs, std::string directory,
                                                           log_config config, const base::clock& clock) {
  RINGLOG_TRY(config.validate());
  std::unique_ptr<partition_log> log(new partition_log(fs, std::move(directory), std::move(config), clock));
  RINGLOG_TRY(log->load());
  return log;
}

std::string partition_log::checkpoint_key() const {
  // Kafka writes "<topic> <partition>"; our directory name is "<topic>-<partition>".
  std::string name = directory_.substr(directory_.find_last_of('/') + 1);
  auto dash = name.find_last_of('-');
  if (dash == std::string::npos) return name + " 0";
  return name.substr(0, dash) + " " + name.substr(dash + 1);
}

result<void> partition_log::open_segments(const std::vector<model::offset>& bases,
                                          model::offset recovery_point_checkpoint, int64_t now) {
  bool cut_rest = false;  // once a segment was cut, every later segment is garbage
  for (size_t i = 0; i < bases.size(); ++i) {
    auto seg = segment::open(fs_, directory_, bases[i], config_.direct_io);
    if (!seg.ok()) return seg.error();
    // A file starting inside the segment before it is a stray copy (the breaker of session 30:
    // it ended the log and took the genuine segments after it along).
    const bool overlap = !segments_.empty() && bases[i] < segments_.rbegin()->second->next_offset();
    const bool stray = (seg.value()->empty() && i + 1 < bases.size()) || overlap;
    const bool gap = !stray && !segments_.empty() && segments_.rbegin()->second->next_offset() != bases[i];
    if (cut_rest || gap || stray) {
      // A stray empty file holds no records: it goes alone. After a gap or a cut the log ends
      // (offsets stay dense, design.md), and the line says what went.
      recovery_.warnings.push_back(removed_segment_warning(*seg.value(), cut_rest || gap, log_end_of(segments_)));
      RINGLOG_TRY(seg.value()->remove_files());
      cut_rest = cut_rest || gap;
      continue;
    }
    const bool last = i + 1 == bases.size();
    const bool next_below_recovery_point = !last && bases[i + 1] <= recovery_point_checkpoint;
    bool trusted = false;
    if (recovery_.clean_shutdown || (next_below_recovery_point && !last)) {
      auto loaded = seg.value()->load_indexes(now, config_.retention_ms);
      if (!loaded.ok()) return loaded.error();
      trusted = loaded.value();
    }
    if (!trusted) {
      ++recovery_.segments_scanned;
      auto cut = seg.value()->recover(now, config_.retention_ms, config_.index_interval_bytes,
                                      &recovery_.batches_scanned);
      if (!cut.ok()) return cut.error();
      recovery_.bytes_truncated += cut.value();
      if (cut.value() > 0) {
        // Kafka's "Found invalid messages in log segment ... truncating": a torn tail is normal
        // after a crash, a cut below the recovery point is damage; either way the line says it
        // (the breaker of session 30: 200 records went without a word).
        cut_rest = true;
        recovery_.warnings.push_back(cut_segment_warning(*seg.value(), cut.value(), recovery_point_checkpoint));
      }
    }
    if (!last) RINGLOG_TRY(seg.value()->release_write_files());
    segments_.emplace(bases[i], std::move(seg.value()));
  }
  return base::ok_v;
}

result<void> partition_log::load() {
  auto made = fs_.make_directories(directory_);
  if (!made.ok()) return storage_error(made.error());
  // A log cleaner swap cut by a crash is finished or undone before segments are listed.
  RINGLOG_TRY(complete_interrupted_swaps(fs_, directory_, &recovery_.warnings));
  {
    // An unreadable cleaner checkpoint was not written by the cleaner (tmp, fdatasync, rename):
    // it goes, and the cleaner starts over from the log start (log_cleaner::inspect).
    const std::string cleaner_checkpoint = directory_ + "/" + cleaner_checkpoint_file;
    if (fs_.exists(cleaner_checkpoint) && !read_checkpoint(fs_, cleaner_checkpoint).ok()) {
      auto removed = fs_.remove(cleaner_checkpoint);
      if (!removed.ok()) return storage_error(removed.error());
      recovery_.warnings.push_back(std::string("removed the unreadable ") + cleaner_checkpoint_file +
                                   ": the log cleaner treats the whole log as dirty");
    }
  }
  const std::string marker = directory_ + "/" + clean_shutdown_file;
  recovery_.clean_shutdown = fs_.exists(marker);
  const int64_t now = clock_.now_ms();

  auto names = fs_.list_directory(directory_);
  if (!names.ok()) return storage_error(names.error());
  std::vector<model::offset> bases;
  for (const auto& name : names.value()) {
    if (auto base = parse_segment_name(name)) bases.push_back(*base);
    if (name.ends_with(".tmp")) (void)fs_.remove(directory_ + "/" + name);  // a checkpoint write cut short
  }
  std::sort(bases.begin(), bases.end());

  auto read = read_checkpoints(fs_, directory_, checkpoint_key(), recovery_.warnings);
  if (!read.ok()) return read.error();
  const loaded_checkpoints& cp = read.value();
  const model::offset recovery_point_checkpoint{checkpoint_value(cp.recovery_point, 0)};

  RINGLOG_TRY(open_segments(bases, recovery_point_checkpoint, now));

  log_start_offset_ = model::offset{checkpoint_value(cp.log_start, 0)};
  if (segments_.empty()) {
    // No segment: start where the log start checkpoint says, so offsets are never reused.
    auto seg = segment::create(fs_, directory_, log_start_offset_, config_.direct_io);
    if (!seg.ok()) return seg.error();
    segments_.emplace(log_start_offset_, std::move(seg.value()));
  }
  log_start_offset_ = std::max(log_start_offset_, segments_.begin()->first);
  log_end_offset_ = active().next_offset();
  log_start_offset_ = std::min(log_start_offset_, log_end_offset_);
  if (auto lost = lost_below_checkpoints_warning(log_end_offset_, recovery_point_checkpoint,
                                                 model::offset{checkpoint_value(cp.high_watermark, 0)})) {
    recovery_.warnings.push_back(*lost);
  }
  recovery_point_ = log_end_offset_;  // recover() synced whatever it kept; a clean close flushed all
  high_watermark_ = std::clamp(model::offset{checkpoint_value(cp.high_watermark, 0)}, log_start_offset_, log_end_offset_);
  if (cp.epochs) {
    for (const auto& [e, start] : *cp.epochs) {
      if (start < log_end_offset_ || epochs_.empty()) epochs_[e] = start;
    }
  } else {
    RINGLOG_TRY(rebuild_leader_epochs());
  }

  auto corrupt_txn_index = load_txn_index();
  if (!corrupt_txn_index.ok()) return corrupt_txn_index.error();
  RINGLOG_TRY(rebuild_producer_state(corrupt_txn_index.value()));
  // Drop the marker durably before anything new is written: a crash from here on is unclean.
  if (recovery_.clean_shutdown) {
    auto removed = fs_.remove(marker);
    if (!removed.ok()) return storage_error(removed.error());
  }
  auto synced = fs_.sync_directory(directory_);
  if (!synced.ok()) return storage_error(synced.error());
  return checkpoint();
}

result<void> partition_log::check_usable() const {
  if (failure_) return *failure_;
  if (closed_) return error{errc::kafka_storage_error, "partition log " + directory_ + " is closed"};
  return base::ok_v;
}

error partition_log::fail(std::string_view operation, const error& e) {
  failure_ = e;
  if (failure_channel_) failure_channel_->report(operation, e);
  return e;
}

void partition_log::report_write_failure(std::string_view operation, const error& e) {
  if (e.code == errc::kafka_storage_error && !closed_ && failure_channel_) failure_channel_->report(operation, e);
}

template <typename T>
result<T> partition_log::reported(std::string_view operation, result<T> r) {
  if (!r.ok()) report_write_failure(operation, r.error());
  return r;
}

result<append_result> partition_log::append(model::bytes batch, model::leader_epoch epoch) {
  RINGLOG_TRY(check_usable());
  if (batch.size() > static_cast<size_t>(config_.max_message_bytes)) {
    return error{errc::message_too_large, "record batch of " + std::to_string(batch.size()) +
                                              " bytes is larger than max.message.bytes (" +
                                              std::to_string(config_.max_message_bytes) + ")"};
  }
  auto header = codec::validate_batch(batch);
  if (!header.ok()) return error{errc::corrupt_message, header.error().message};
  if (header->is_control() && header->producer.value() >= 0) {
    return error{errc::corrupt_message, "a transaction marker is written by the partition's leader only (append_marker)"};
  }
  // KIP-98: a retry of a stored batch is answered from the producer state, never written twice.
  auto known = producers_.check(header.value());
  if (!known.ok()) return known.error();
  const int64_t now = clock_.now_ms();
  if (known.value()) {
    // Kafka's duplicate answer (UnifiedLog.append: setLogAppendTime(duplicate.timestamp)) carries
    // the original batch's max timestamp (its append time under LogAppendTime), not this retry's.
    const producer_batch& original = *known.value();
    append_result dup{original.base_offset, original.last_offset, original.timestamp, 0, true};
    return dup;
  }
  RINGLOG_TRY(roll_if_needed(batch.size(), log_end_offset_, header->last_offset_delta, now));
  codec::set_base_offset(batch, log_end_offset_);
  codec::set_partition_leader_epoch(batch, epoch);
  header->base_offset = log_end_offset_;
  header->partition_leader_epoch = epoch;
  RINGLOG_TRY(note_epoch(epoch, log_end_offset_));
  return write_batch(batch, header.value(), now);
}

result<append_result> partition_log::append_marker(model::producer_id producer_id, model::producer_epoch producer_epoch,
                                                   codec::control_record marker, model::leader_epoch epoch) {
  RINGLOG_TRY(check_usable());
  RINGLOG_TRY(producers_.check_marker(producer_id, producer_epoch, marker.coordinator_epoch));
  const int64_t now = clock_.now_ms();
  codec::batch_options options;
  options.base_offset = log_end_offset_;
  options.partition_leader_epoch = epoch;
  options.producer = producer_id;
  options.producer_epoch_value = producer_epoch;
  auto batch = codec::encode_control_batch(options, marker, now);
  RINGLOG_ASSERT(batch.ok(), "a one-record control batch always encodes");
  auto header = codec::decode_header(batch.value());
  RINGLOG_ASSERT(header.ok(), "a batch encoded here decodes");
  RINGLOG_TRY(roll_if_needed(batch->size(), log_end_offset_, 0, now));
  header->base_offset = log_end_offset_;
  codec::set_base_offset(batch.value(), log_end_offset_);
  RINGLOG_TRY(note_epoch(epoch, log_end_offset_));
  return write_batch(batch.value(), header.value(), now);
}

result<append_result> partition_log::append_replicated(std::span<const std::byte> batches) {
  RINGLOG_TRY(check_usable());
  const int64_t now = clock_.now_ms();
  append_result out{log_end_offset_, log_end_offset_ - 1, now, 0};
  bool appended = false;
  size_t pos = 0;
  while (pos < batches.size()) {
    auto header = codec::decode_header(batches.subspan(pos));
    if (!header.ok() || header->size_bytes() > batches.size() - pos) {
      return error{errc::corrupt_message, "replicated batch at byte " + std::to_string(pos) + " of " +
                                              std::to_string(batches.size()) + " is cut short or unreadable"};
    }
    const auto batch = batches.subspan(pos, header->size_bytes());
    pos += header->size_bytes();
    if (header->last_offset() < log_end_offset_) continue;   // already here (a repeated fetch)
    if (header->base_offset < log_end_offset_) {
      return error{errc::corrupt_message, "replicated batch [" + std::to_string(header->base_offset.value()) + ", " +
                                              std::to_string(header->last_offset().value()) +
                                              "] overlaps the log, which ends at " +
                                              std::to_string(log_end_offset_.value())};
    }
    // No max.message.bytes check: the leader applied it, and a follower must hold what its leader
    // holds (the fetch response is bounded by replica.fetch.max.bytes instead).
    auto valid = codec::validate_batch(batch);
    if (!valid.ok()) return error{errc::corrupt_message, "replicated batch: " + valid.error().message};
    RINGLOG_TRY(roll_if_needed(batch.size(), header->base_offset, header->last_offset_delta, now));
    RINGLOG_TRY(note_epoch(valid->partition_leader_epoch, valid->base_offset));
    auto written = write_batch(batch, valid.value(), now);
    if (!written.ok()) return written.error();
    if (!appended) out.base_offset = written->base_offset;
    out.last_offset = written->last_offset;
    out.size_bytes += written->size_bytes;
    appended = true;
  }
  return out;
}

result<void> partition_log::begin_leader_epoch(model::leader_epoch epoch) {
  RINGLOG_TRY(check_usable());
  return note_epoch(epoch, log_end_offset_);
}

result<void> partition_log::roll_if_needed(size_t batch_bytes, model::offset base, int32_t last_offset_delta,
                                           int64_t now_ms) {
  segment& current = active();
  if (current.empty()) return base::ok_v;
  const bool full = current.size_bytes() + batch_bytes > static_cast<uint64_t>(config_.segment_bytes);
  const bool old = active_past_segment_ms(now_ms);
  const bool offsets_overflow = base + last_offset_delta - current.base_offset() > std::numeric_limits<int32_t>::max();
  // Kafka also rolls when the offset index is full (segment.index.bytes).
  const bool index_full = (current.offset_entries().size() + 1) * constants::offset_index_entry_bytes >
                          static_cast<size_t>(config_.segment_index_bytes);
  if (full || offsets_overflow || index_full) return roll_at(base);
  // A roll for age only waits while the segment budget is used up (or another log took its last
  // file meanwhile): the active segment keeps growing, the append goes on.
  if (!old || !segment_budget_has_room()) return base::ok_v;
  auto rolled = roll_at(base);
  if (!rolled.ok() && rolled.error().code == errc::too_many_segments) return base::ok_v;
  return rolled;
}

result<append_result> partition_log::write_batch(std::span<const std::byte> batch, const codec::batch_header& header,
                                                 int64_t now_ms) {
  RINGLOG_ASSERT_OP(header.base_offset.value(), >=, log_end_offset_.value());
  auto marker = marker_of(batch, header);   // before the write: a bad marker is never stored
  if (!marker.ok()) return marker.error();
  auto written = active().append(batch, header, now_ms, config_.retention_ms, config_.index_interval_bytes);
  if (!written.ok()) return fail("append", written.error());
  append_result out{header.base_offset, header.last_offset(), now_ms, batch.size()};
  log_end_offset_ = header.last_offset() + 1;
  bool index_changed = false;
  apply_to_producer_state(header, marker.value(), now_ms, &index_changed);
  RINGLOG_ASSERT(active().next_offset() == log_end_offset_, "active segment end must be the log end offset");
  if (index_changed) {
    auto indexed = write_txn_index_files(active().base_offset());
    // The log holds an abort its index lacks: stop serving it.
    if (!indexed.ok()) return fail("transaction index write", indexed.error());
  }
  return out;
}

result<std::optional<codec::control_record>> partition_log::marker_of(std::span<const std::byte> batch,
                                                                      const codec::batch_header& header) {
  // An empty control batch holds no marker (compaction empties batches: log_cleaner.h).
  if (!header.is_control() || header.producer.value() < 0 || header.records_count == 0) {
    return std::optional<codec::control_record>{};
  }
  auto records = codec::decode_records(batch);
  if (!records.ok() || records->size() != 1) {
    return error{errc::corrupt_message, "control batch at offset " + std::to_string(header.base_offset.value()) +
                                            " of producer " + std::to_string(header.producer.value()) +
                                            " does not hold exactly one readable record"};
  }
  auto marker = codec::decode_control_record(records->front());
  if (!marker.ok()) {
    return error{errc::corrupt_message, "control batch at offset " + std::to_string(header.base_offset.value()) + ": " +
                                            marker.error().message};
  }
  return std::optional<codec::control_record>{marker.value()};
}

void partition_log::apply_to_producer_state(const codec::batch_header& header,
                                            const std::optional<codec::control_record>& marker, int64_t now_ms,
                                            bool* index_changed) {
  if (!marker) {
    producers_.update(header, now_ms);
    return;
  }
  auto completed = producers_.end_txn(header, *marker, now_ms);
  if (completed && completed->last_offset >= high_watermark_) {
    unreplicated_txn_ends_[completed->last_offset.value()] = completed->first_offset;
  }
  if (!completed || !completed->aborted) return;
  // Kafka's lastStableOffset(completedTxn): the oldest transaction still open, else past the marker.
  const model::offset stable = producers_.first_unstable_offset().value_or(completed->last_offset + 1);
  aborted_txns_[completed->last_offset.value()] =
      aborted_txn_entry{completed->producer_id, completed->first_offset, completed->last_offset, stable};
  *index_changed = true;
}

std::vector<aborted_txn_entry> partition_log::aborted_transactions(model::offset start, model::offset upper) const {
  std::vector<aborted_txn_entry> out;
  for (auto it = aborted_txns_.lower_bound(start.value()); it != aborted_txns_.end(); ++it) {
    if (it->second.first_offset < upper) out.push_back(it->second);
  }
  std::sort(out.begin(), out.end(),
            [](const aborted_txn_entry& a, const aborted_txn_entry& b) { return a.first_offset < b.first_offset; });
  return out;
}

std::vector<aborted_txn_entry> partition_log::aborted_transactions() const {
  std::vector<aborted_txn_entry> out;
  for (const auto& [last, e] : aborted_txns_) out.push_back(e);
  return out;
}

result<model::offset> partition_log::load_txn_index() {
  aborted_txns_.clear();
  model::offset corrupt_base{INT64_MAX};
  auto names = fs_.list_directory(directory_);
  if (!names.ok()) return storage_error(names.error());
  for (const auto& name : names.value()) {
    auto base = parse_offset_name(name, txn_index_suffix);
    if (!base) continue;
    const std::string path = directory_ + "/" + name;
    auto bytes = io::read_whole_file(fs_, path);
    if (!bytes.ok()) return storage_error(bytes.error());
    auto entries = decode_txn_index(bytes.value());
    if (!entries.ok()) {
      // Rebuilt by replaying the segment holding it (its base, or the one holding that offset).
      auto removed = fs_.remove(path);
      if (!removed.ok()) return storage_error(removed.error());
      auto seg = segments_.upper_bound(*base);
      const model::offset from = seg == segments_.begin() ? *base : std::prev(seg)->first;
      corrupt_base = std::min(corrupt_base, from);
      continue;
    }
    for (const aborted_txn_entry& e : entries.value()) {
      if (e.last_offset >= log_start_offset_ && e.last_offset < log_end_offset_) aborted_txns_[e.last_offset.value()] = e;
    }
  }
  return corrupt_base;
}

result<void> partition_log::write_txn_index_files(model::offset from_base) {
  auto names = fs_.list_directory(directory_);
  if (!names.ok()) return storage_error(names.error());
  std::set<int64_t> on_disk;
  for (const auto& name : names.value()) {
    if (auto base = parse_offset_name(name, txn_index_suffix)) on_disk.insert(base->value());
  }
  bool changed = false;
  // Files of no segment (left by compaction merging segments, or a crash during truncation):
  // their entries were loaded into aborted_txns_ and live on in the file of their segment.
  for (int64_t base : on_disk) {
    if (segments_.contains(model::offset{base})) continue;
    auto removed = fs_.remove(directory_ + "/" + segment_file_stem(model::offset{base}) + txn_index_suffix);
    if (!removed.ok()) return storage_error(removed.error());
    changed = true;
  }
  for (auto seg = segments_.lower_bound(from_base); seg != segments_.end(); ++seg) {
    const int64_t base = seg->first.value();
    const int64_t end = std::next(seg) == segments_.end() ? INT64_MAX : std::next(seg)->first.value();
    std::vector<aborted_txn_entry> entries;
    for (auto it = aborted_txns_.lower_bound(base); it != aborted_txns_.end() && it->first < end; ++it) {
      entries.push_back(it->second);
    }
    const std::string path = directory_ + "/" + segment_file_stem(seg->first) + txn_index_suffix;
    if (entries.empty()) {
      if (!on_disk.contains(base)) continue;
      auto removed = fs_.remove(path);
      if (!removed.ok()) return storage_error(removed.error());
      changed = true;
      continue;
    }
    const model::bytes wanted = encode_txn_index(entries);
    if (on_disk.contains(base)) {
      auto current = io::read_whole_file(fs_, path);
      if (current.ok() && current.value() == wanted) continue;
    }
    auto written = io::write_file_atomic(fs_, path, wanted);
    if (!written.ok()) return storage_error(written.error());
  }
  if (changed) {
    auto synced = fs_.sync_directory(directory_);
    if (!synced.ok()) return storage_error(synced.error());
  }
  return base::ok_v;
}


result<void> partition_log::note_epoch(model::leader_epoch epoch, model::offset start) {
  if (epoch.value() < 0) return base::ok_v;
  if (!epochs_.empty() && epochs_.rbegin()->first >= epoch.value()) return base::ok_v;
  epochs_[epoch.value()] = start;
  const checkpoint_entries entries = epoch_entries(epochs_);
  written_checkpoints_[leader_epoch_index].reset();   // unknown until written
  RINGLOG_TRY(reported("leader epoch checkpoint", write_checkpoint(fs_, directory_ + "/" + leader_epoch_file, entries)));
  written_checkpoints_[leader_epoch_index] = checkpoint_text(entries);
  return base::ok_v;
}

result<void> partition_log::roll_at(model::offset base, bool forced) {
  if (!take_segment_file(forced)) {
    return error{errc::too_many_segments,
                 directory_ + ": no new segment: the broker's segment file budget (" +
                     std::to_string(segment_budget_->limit()) +
                     " sealed segments, from the open-file limit; raise it with ulimit -n) is used up; retention, "
                     "deleted records or topics give room back (retriable)"};
  }
  auto rolled = roll_segment_at(base);
  settle_segment_budget();   // a roll that failed before its new segment gives the file back
  return reported("segment roll", std::move(rolled));
}

result<void> partition_log::roll_segment_at(model::offset base) {
  if (segments_.size() >= constants::segments_per_partition_max) {
    return error{errc::too_many_segments, directory_ + " holds " + std::to_string(segments_.size()) +
                                              " segments, the limit segments_per_partition_max"};
  }
  // The closed segment becomes immutable: cut O_DIRECT padding, make it and its indexes durable.
  RINGLOG_TRY(active().seal());
  auto synced = active().sync(true);
  if (!synced.ok()) {
    failure_ = synced.error();
    return synced.error();
  }
  RINGLOG_TRY(active().release_write_files());
  auto seg = segment::create(fs_, directory_, base, config_.direct_io);
  if (!seg.ok()) return seg.error();
  segments_.emplace(base, std::move(seg.value()));
  // Kafka's snapshot at each roll: the state of every batch below the new segment survives the
  // deletion of the older segments by retention, and recovery replays only the active segment.
  RINGLOG_TRY(write_producer_snapshot(base));
  auto dir = fs_.sync_directory(directory_);
  if (!dir.ok()) return storage_error(dir.error());
  return base::ok_v;
}

bool partition_log::active_past_segment_ms(int64_t now_ms) const {
  const segment& current = *segments_.rbegin()->second;
  return current.first_append_ms() >= 0 && now_ms - current.first_append_ms() >= config_.max_segment_ms();
}

result<bool> partition_log::roll_if_idle() {
  RINGLOG_TRY(check_usable());
  if (active().empty() || !active_past_segment_ms(clock_.now_ms()) || !segment_budget_has_room()) return false;
  auto rolled = roll_at(log_end_offset_);
  if (!rolled.ok() && rolled.error().code == errc::too_many_segments) return false;   // waits, as in roll_if_needed
  RINGLOG_TRY(std::move(rolled));
  return true;
}

result<void> partition_log::roll() {
  RINGLOG_TRY(check_usable());
  if (active().empty()) return base::ok_v;
  return roll_at(log_end_offset_);
}

result<void> partition_log::flush() {
  RINGLOG_TRY(check_usable());
  const model::offset target = log_end_offset_;
  for (auto& [base, seg] : segments_) {
    auto synced = seg->sync(false);
    if (!synced.ok()) return fail("fdatasync", synced.error());
  }
  recovery_point_ = std::max(recovery_point_, target);
  return base::ok_v;
}

void partition_log::flush_async(io::disk_executor& executor, std::function<void(result<void>)> done) {
  if (auto usable = check_usable(); !usable.ok()) {
    // Still deliver from poll(): run the failure through the executor with an empty sync.
    waiting_for_next_sync_.push_back(std::move(done));
    if (!sync_in_flight_) start_async_sync(executor);
    return;
  }
  waiting_for_next_sync_.push_back(std::move(done));
  if (!sync_in_flight_) start_async_sync(executor);
}

void partition_log::start_async_sync(io::disk_executor& executor) {
  struct round {
    std::vector<std::function<void(result<void>)>> waiters;
    model::offset target{0};
    size_t pending = 0;
    std::optional<error> failure;
  };
  auto r = std::make_shared<round>();
  r->waiters = std::move(waiting_for_next_sync_);
  waiting_for_next_sync_.clear();
  r->target = log_end_offset_;
  sync_in_flight_ = true;
  std::vector<segment*> dirty;
  for (auto& [base, seg] : segments_) {
    if (seg->dirty()) dirty.push_back(seg.get());
  }
  if (dirty.empty()) dirty.push_back(&active());  // nothing new: one cheap sync keeps the contract
  r->pending = dirty.size();
  for (segment* seg : dirty) {
    seg->mark_clean();
    executor.submit_datasync(seg->log_file(), [this, r, &executor](io::result<void> status) {
      if (!status.ok() && !r->failure) r->failure = storage_error(status.error());
      if (--r->pending > 0) return;
      if (r->failure) {
        fail("fdatasync", *r->failure);  // never trust this log's page cache again
      } else if (auto usable = check_usable(); !usable.ok()) {
        r->failure = usable.error();
      } else {
        recovery_point_ = std::max(recovery_point_, r->target);
      }
      sync_in_flight_ = false;
      for (auto& waiter : r->waiters) {
        waiter(r->failure ? result<void>(*r->failure) : result<void>(base::ok_v));
      }
      if (!waiting_for_next_sync_.empty()) start_async_sync(executor);
    });
  }
}

result<model::offset> partition_log::walk_batches(model::offset start, size_t max_bytes, model::offset max_offset,
                                                  const std::function<result<void>(segment&, const located_batch&)>& take) {
  RINGLOG_TRY(check_usable());
  if (start < log_start_offset_ || start > log_end_offset_) {
    return error{errc::offset_out_of_range, "offset " + std::to_string(start.value()) +
                                                " is outside the log: log_start_offset " +
                                                std::to_string(log_start_offset_.value()) + ", log_end_offset " +
                                                std::to_string(log_end_offset_.value())};
  }
  model::offset next_offset = start;
  if (start >= log_end_offset_ || start >= max_offset) return next_offset;
  auto it = segments_.upper_bound(start);
  RINGLOG_ASSERT(it != segments_.begin(), "a segment must hold every offset in the log");
  --it;
  auto located = it->second->find_batch(start);
  if (!located.ok()) return located.error();
  if (!located.value() && start < it->second->next_offset()) {
    // The segment holds `start` but its batches end before it: a damaged length cut the scan.
    return error{errc::corrupt_message, "segment " + segment_file_stem(it->first) + ".log of " + directory_ +
                                            ": a batch before offset " + std::to_string(start.value()) +
                                            " runs past the segment's end (" +
                                            std::to_string(it->second->size_bytes()) + " bytes)"};
  }
  std::optional<located_batch> batch = located.value();
  size_t taken_bytes = 0;
  // Stored damage met after the first batch (a header that does not decode, a batch running past
  // its segment's end) ends the read there: the batches before it are answered, as Kafka sends
  // the bytes before it, and the read that starts at it fails naming where. Nothing is changed.
  auto damaged = [&](const error& e) -> result<model::offset> {
    if (taken_bytes > 0) return next_offset;
    return e;
  };
  while (true) {
    while (!batch) {
      if (++it == segments_.end()) return next_offset;
      auto first = it->second->header_at(model::file_position{0});
      if (!first.ok()) return damaged(first.error());
      batch = first.value();
    }
    const auto& h = batch->header;
    if (h.base_offset >= max_offset) break;
    if (taken_bytes > 0 && taken_bytes + h.size_bytes() > max_bytes) break;
    RINGLOG_TRY(take(*it->second, *batch));
    taken_bytes += h.size_bytes();
    next_offset = h.last_offset() + 1;
    const uint64_t after = batch->position.value() + h.size_bytes();
    auto next = it->second->header_at(model::file_position{after});
    if (!next.ok()) return damaged(next.error());
    if (!next.value() && after != it->second->size_bytes()) {
      // Recovery left every segment ending at a whole batch: a shorter rest is a damaged length.
      return damaged(error{errc::corrupt_message, "segment " + segment_file_stem(it->first) + ".log of " + directory_ +
                                                      " at file position " + std::to_string(after) +
                                                      ": the batch after offset " + std::to_string(h.last_offset().value()) +
                                                      " runs past the segment's end (" +
                                                      std::to_string(it->second->size_bytes()) + " bytes)"});
    }
    batch = next.value();
  }
  return next_offset;
}

result<read_result> partition_log::read(model::offset start, size_t max_bytes, model::offset max_offset) {
  read_result out;
  auto next = walk_batches(start, max_bytes, max_offset, [&out](segment& seg, const located_batch& b) {
    return seg.read_into(b.position, b.header.size_bytes(), out.batches);
  });
  if (!next.ok()) return next.error();
  out.next_offset = next.value();
  return out;
}

result<file_read_result> partition_log::read_file_ranges(model::offset start, size_t max_bytes,
                                                         model::offset max_offset) {
  file_read_result out;
  auto next = walk_batches(start, max_bytes, max_offset, [&out](segment& seg, const located_batch& b) -> result<void> {
    const size_t length = b.header.size_bytes();
    RINGLOG_ASSERT_OP(b.position.value() + length, <=, seg.size_bytes());
    out.batches.push_back(io::file_range{seg.shared_log_file(), b.position, length});
    out.size_bytes += length;
    return base::ok_v;
  });
  if (!next.ok()) return next.error();
  out.next_offset = next.value();
  return out;
}

result<std::optional<timestamp_lookup>> partition_log::offset_for_timestamp(model::timestamp_ms timestamp) {
  RINGLOG_TRY(check_usable());
  for (auto& [base, seg] : segments_) {
    if (seg->max_timestamp() < timestamp || seg->next_offset() <= log_start_offset_) continue;
    auto found = seg->offset_for_timestamp(timestamp, log_start_offset_);
    if (!found.ok()) return found.error();
    if (found.value()) return std::optional<timestamp_lookup>{{found.value()->first, found.value()->second}};
  }
  return std::optional<timestamp_lookup>{};
}

result<void> partition_log::roll_back_pending_swap() {
  if (pending_swap_path_.empty()) return base::ok_v;
  auto removed = fs_.remove(pending_swap_path_);
  if (!removed.ok() && removed.error().code != io::errc::not_found) {
    return fail("roll back of a compaction swap", storage_error(removed.error()));
  }
  auto dir = fs_.sync_directory(directory_);
  if (!dir.ok()) return fail("roll back of a compaction swap", storage_error(dir.error()));
  pending_swap_path_.clear();
  return base::ok_v;
}

result<void> partition_log::truncate_to(model::offset new_log_end_offset) {
  return reported("truncate", truncate_segments_to(new_log_end_offset));
}

result<void> partition_log::truncate_segments_to(model::offset new_log_end_offset) {
  RINGLOG_TRY(check_usable());
  ++segments_generation_;   // a cleaning pass in progress must not go on over these segments
  RINGLOG_TRY(roll_back_pending_swap());
  if (new_log_end_offset >= log_end_offset_) {
    // No record goes, but epochs that start at or past the cut do (Kafka's truncateFromEnd): an
    // epoch a deposed leader began at its log end without appending must not be reported as
    // the epoch of its last batch.
    if (epochs_.empty() || epochs_.rbegin()->second < new_log_end_offset) return base::ok_v;
    while (!epochs_.empty() && epochs_.rbegin()->second >= new_log_end_offset) epochs_.erase(std::prev(epochs_.end()));
    written_checkpoints_[leader_epoch_index].reset();
    return checkpoint();
  }
  const int64_t now = clock_.now_ms();
  // Drop whole segments at or above the new end, keeping at least one segment.
  while (segments_.size() > 1 && segments_.rbegin()->first >= new_log_end_offset) {
    RINGLOG_TRY(segments_.rbegin()->second->remove_files());
    segments_.erase(std::prev(segments_.end()));
  }
  if (segments_.begin()->first >= new_log_end_offset) {
    // Everything goes: start an empty segment at the new end.
    RINGLOG_TRY(segments_.begin()->second->remove_files());
    segments_.clear();
    auto seg = segment::create(fs_, directory_, new_log_end_offset, config_.direct_io);
    if (!seg.ok()) return seg.error();
    segments_.emplace(new_log_end_offset, std::move(seg.value()));
    log_start_offset_ = std::min(log_start_offset_, new_log_end_offset);
  } else {
    RINGLOG_TRY(active().truncate_to(new_log_end_offset, now, config_.retention_ms, config_.index_interval_bytes));
  }
  settle_segment_budget();
  auto dir = fs_.sync_directory(directory_);
  if (!dir.ok()) return storage_error(dir.error());
  log_end_offset_ = active().next_offset();
  RINGLOG_ASSERT_OP(log_end_offset_.value(), <=, new_log_end_offset.value());
  log_start_offset_ = std::min(log_start_offset_, log_end_offset_);
  high_watermark_ = std::min(high_watermark_, log_end_offset_);
  recovery_point_ = std::min(recovery_point_, log_end_offset_);
  while (!epochs_.empty() && epochs_.rbegin()->second >= log_end_offset_) epochs_.erase(std::prev(epochs_.end()));
  // The producer state may hold batches that are gone: rebuild it below the new end.
  RINGLOG_TRY(rebuild_producer_state());
  return checkpoint();
}

result<void> partition_log::truncate_fully_and_start_at(model::offset new_start_offset) {
  return reported("truncate", truncate_fully(new_start_offset));
}

result<void> partition_log::truncate_fully(model::offset new_start_offset) {
  RINGLOG_TRY(check_usable());
  ++segments_generation_;
  RINGLOG_TRY(roll_back_pending_swap());
  RINGLOG_ASSERT_OP(new_start_offset.value(), >=, 0);
  // The newest segment goes last, so a crash part-way leaves a log that still ends where it did
  // (recovery then sees a shorter prefix removed, never a hole in the middle).
  while (!segments_.empty()) {
    RINGLOG_TRY(segments_.begin()->second->remove_files());
    segments_.erase(segments_.begin());
  }
  auto seg = segment::create(fs_, directory_, new_start_offset, config_.direct_io);
  if (!seg.ok()) return seg.error();
  segments_.emplace(new_start_offset, std::move(seg.value()));
  settle_segment_budget();
  auto dir = fs_.sync_directory(directory_);
  if (!dir.ok()) return storage_error(dir.error());
  log_start_offset_ = new_start_offset;
  log_end_offset_ = new_start_offset;
  recovery_point_ = new_start_offset;
  high_watermark_ = new_start_offset;
  epochs_.clear();
  producers_.clear();
  unreplicated_txn_ends_.clear();
  aborted_txns_.clear();
  RINGLOG_TRY(remove_producer_snapshots([](model::offset) { return true; }));
  RINGLOG_TRY(write_txn_index_files(model::offset{0}));
  return checkpoint();
}

result<void> partition_log::delete_segment_front() {
  RINGLOG_ASSERT_OP(segments_.size(), >, 1u);
  ++segments_generation_;
  RINGLOG_TRY(roll_back_pending_swap());
  RINGLOG_TRY(segments_.begin()->second->remove_files());
  segments_.erase(segments_.begin());
  settle_segment_budget();
  log_start_offset_ = std::max(log_start_offset_, segments_.begin()->first);
  // Snapshots below the new first segment go with the segments (the one at its base, written
  // when it was rolled to, holds every producer the deleted ones knew).
  const model::offset first = segments_.begin()->first;
  // The deleted segment's aborted transactions go with it (its .txnindex went with its files).
  std::erase_if(aborted_txns_, [first](const auto& kv) { return kv.first < first.value(); });
  return remove_producer_snapshots([first](model::offset o) { return o < first; });
}

result<void> partition_log::advance_log_start_offset(model::offset new_log_start_offset) {
  return reported("segment deletion", advance_log_start(new_log_start_offset));
}

result<void> partition_log::advance_log_start(model::offset new_log_start_offset) {
  RINGLOG_TRY(check_usable());
  if (new_log_start_offset <= log_start_offset_) return base::ok_v;
  if (new_log_start_offset > log_end_offset_) {
    return error{errc::offset_out_of_range, "new log start offset " + std::to_string(new_log_start_offset.value()) +
                                                " is above log_end_offset " + std::to_string(log_end_offset_.value())};
  }
  log_start_offset_ = new_log_start_offset;
  RINGLOG_TRY(checkpoint());  // durable before any segment goes
  if (new_log_start_offset == log_end_offset_ && !active().empty()) RINGLOG_TRY(roll_at(log_end_offset_, true));
  while (segments_.size() > 1 && std::next(segments_.begin())->first <= new_log_start_offset) {
    RINGLOG_TRY(delete_segment_front());
  }
  auto dir = fs_.sync_directory(directory_);
  if (!dir.ok()) return storage_error(dir.error());
  high_watermark_ = std::max(high_watermark_, log_start_offset_);
  return base::ok_v;
}

result<size_t> partition_log::apply_retention() { return reported("retention", delete_by_retention()); }

result<size_t> partition_log::delete_by_retention() {
  RINGLOG_TRY(check_usable());
  const int64_t now = clock_.now_ms();
  producers_.remove_expired(now, config_.producer_id_expiration_ms);
  auto expired = [&](const segment& s) {
    return config_.retention_ms >= 0 && !s.empty() && now - s.retention_timestamp() > config_.retention_ms;
  };
  if (expired(active())) {
    RINGLOG_TRY(roll_at(log_end_offset_, true));
  } else {
    RINGLOG_TRY(roll_if_idle());
  }
  // A compacted log loses records only through the log cleaner, which keeps every key's latest
  // value (under compact,delete it also deletes expired segments left without records).
  if (config_.compacted()) return size_t{0};

  size_t deleted = 0;
  while (segments_.size() > 1 && expired(*segments_.begin()->second)) {
    RINGLOG_TRY(delete_segment_front());
    ++deleted;
  }
  if (config_.retention_bytes >= 0) {
    int64_t excess = static_cast<int64_t>(size_bytes()) - config_.retention_bytes;
    while (segments_.size() > 1 && static_cast<int64_t>(segments_.begin()->second->size_bytes()) <= excess) {
      excess -= static_cast<int64_t>(segments_.begin()->second->size_bytes());
      RINGLOG_TRY(delete_segment_front());
      ++deleted;
    }
  }
  if (deleted > 0) {
    high_watermark_ = std::max(high_watermark_, log_start_offset_);
    auto dir = fs_.sync_directory(directory_);
    if (!dir.ok()) return storage_error(dir.error());
    RINGLOG_TRY(checkpoint());
  }
  return deleted;
}

result<void> partition_log::checkpoint() { return reported("checkpoint", write_checkpoints()); }

result<void> partition_log::write_checkpoints() {
  const std::string key = checkpoint_key();
  const std::array<std::string, checkpoint_files.size()> texts{
      checkpoint_text({{key, recovery_point_.value()}}), checkpoint_text({{key, high_watermark_.value()}}),
      checkpoint_text({{key, log_start_offset_.value()}}), checkpoint_text(epoch_entries(epochs_))};
  // Only files whose text changed are written (under load that is the recovery point and the
  // high watermark), with one directory sync for all: each costs two fsyncs otherwise.
  std::vector<io::file_contents> changed;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (written_checkpoints_[i] && *written_checkpoints_[i] == texts[i]) continue;
    changed.push_back({directory_ + "/" + checkpoint_files[i], std::as_bytes(std::span(texts[i].data(), texts[i].size()))});
  }
  auto written = io::write_files_atomic(fs_, directory_, changed);
  if (!written.ok()) {
    written_checkpoints_ = {};   // unknown on disk now: the next call writes every file
    return storage_error(written.error());
  }
  for (size_t i = 0; i < texts.size(); ++i) written_checkpoints_[i] = texts[i];
  return base::ok_v;
}

result<void> partition_log::close() { return reported("close", close_files()); }

result<void> partition_log::close_files() {
  if (closed_) return base::ok_v;
  ++segments_generation_;
  RINGLOG_ASSERT(!sync_in_flight_, "close() with an fdatasync in flight: drain the executor first");
  RINGLOG_TRY(check_usable());
  RINGLOG_TRY(roll_back_pending_swap());
  for (auto& [base, seg] : segments_) {
    RINGLOG_TRY(seg->seal());
    auto synced = seg->sync(true);
    if (!synced.ok()) return synced.error();
  }
  recovery_point_ = log_end_offset_;
  RINGLOG_TRY(write_producer_snapshot(log_end_offset_));
  RINGLOG_TRY(checkpoint());
  auto marker = io::write_file_atomic(fs_, directory_ + "/" + clean_shutdown_file, {});
  if (!marker.ok()) return storage_error(marker.error());
  closed_ = true;
  return base::ok_v;
}

void partition_log::set_config(log_config config) { config_ = std::move(config); }

void partition_log::set_high_watermark(model::offset hw) {
  high_watermark_ = std::max(high_watermark_, std::clamp(hw, log_start_offset_, log_end_offset_));
  unreplicated_txn_ends_.erase(unreplicated_txn_ends_.begin(), unreplicated_txn_ends_.lower_bound(high_watermark_.value()));
}

std::optional<model::offset> partition_log::first_undecided_offset() const {
  std::optional<model::offset> out = producers_.first_unstable_offset();
  for (auto it = unreplicated_txn_ends_.lower_bound(high_watermark_.value()); it != unreplicated_txn_ends_.end(); ++it) {
    if (!out || it->second < *out) out = it->second;
  }
  return out;
}

std::optional<std::pair<model::leader_epoch, model::offset>> partition_log::end_offset_for_epoch(
    model::leader_epoch epoch) const {
  auto it = epochs_.upper_bound(epoch.value());
  if (it == epochs_.begin()) return std::nullopt;
  const model::offset end = it == epochs_.end() ? log_end_offset_ : it->second;
  --it;
  return std::make_pair(model::leader_epoch{it->first}, end);
}

uint64_t partition_log::size_bytes() const {
  uint64_t total = 0;
  for (const auto& [base, seg] : segments_) total += seg->size_bytes();
  return total;
}

std::vector<segment_info> partition_log::segments() const {
  std::vector<segment_info> out;
  for (const auto& [base, seg] : segments_) {
    out.push_back({seg->base_offset(), seg->next_offset(), seg->size_bytes(), seg->max_timestamp()});
  }
  return out;
}

// ---------------------------------------------------------------- producer state (KIP-98)

std::vector<model::offset> partition_log::producer_snapshots() const {
  std::vector<model::offset> out;
  auto names = fs_.list_directory(directory_);
  if (!names.ok()) return out;
  for (const auto& name : names.value()) {
    if (auto o = parse_offset_name(name, snapshot_suffix)) out.push_back(*o);
  }
  std::sort(out.begin(), out.end());
  return out;
}

result<void> partition_log::write_producer_snapshot(model::offset offset) {
  const model::bytes bytes = producers_.encode_snapshot(offset);
  const std::string path = directory_ + "/" + segment_file_stem(offset) + snapshot_suffix;
  auto written = io::write_file_atomic(fs_, path, bytes);
  if (!written.ok()) return storage_error(written.error());
  return base::ok_v;
}

result<void> partition_log::remove_producer_snapshots(const std::function<bool(model::offset)>& drop) {
  for (model::offset o : producer_snapshots()) {
    if (!drop(o)) continue;
    auto removed = fs_.remove(directory_ + "/" + segment_file_stem(o) + snapshot_suffix);
    if (!removed.ok()) return storage_error(removed.error());
  }
  return base::ok_v;
}

result<void> partition_log::rebuild_producer_state(model::offset snapshot_limit) {
  producers_.clear();
  unreplicated_txn_ends_.clear();
  const model::offset end = log_end_offset_;
  RINGLOG_TRY(remove_producer_snapshots([end](model::offset o) { return o > end; }));
  // The newest snapshot that reads back whole; a bad one is removed (Kafka does the same) and
  // the next older one tried, down to an empty state replayed from the first segment.
  model::offset from = segments_.begin()->first;
  std::vector<model::offset> snapshots = producer_snapshots();
  for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
    if (*it > snapshot_limit) continue;
    const std::string path = directory_ + "/" + segment_file_stem(*it) + snapshot_suffix;
    auto bytes = io::read_whole_file(fs_, path);
    if (!bytes.ok()) return storage_error(bytes.error());
    auto decoded = producer_state::decode_snapshot(bytes.value());
    if (decoded.ok() && decoded->first == *it) {
      producers_ = std::move(decoded->second);
      from = std::max(from, *it);
      break;
    }
    auto removed = fs_.remove(path);
    if (!removed.ok()) return storage_error(removed.error());
  }
  // Replay every batch from `from` to the log end (headers only, and the marker of each
  // producer's control batch); the aborted transactions ended from there on are rebuilt too.
  std::erase_if(aborted_txns_, [from](const auto& kv) { return kv.first >= from.value(); });
  const int64_t now = clock_.now_ms();
  auto seg = segments_.upper_bound(from);
  if (seg != segments_.begin()) --seg;   // the segment holding `from`
  const model::offset replay_base = seg->first;
  bool index_changed = false;
  for (; seg != segments_.end(); ++seg) {
    auto located = seg->second->find_batch(from);
    if (!located.ok()) return located.error();
    std::optional<located_batch> batch = located.value();
    while (batch) {
      if (batch->header.base_offset >= from) {
        std::optional<codec::control_record> marker;
        if (batch->header.is_control() && batch->header.producer.value() >= 0) {
          model::bytes bytes;
          RINGLOG_TRY(seg->second->read_into(batch->position, batch->header.size_bytes(), bytes));
          auto found = marker_of(bytes, batch->header);
          // Recovery validated every batch's CRC; an unreadable marker is a bug or a disk lie.
          if (!found.ok()) return error{errc::kafka_storage_error, directory_ + ": " + found.error().message};
          marker = found.value();
        }
        apply_to_producer_state(batch->header, marker, now, &index_changed);
      }
      auto next = seg->second->header_at(model::file_position{batch->position.value() + batch->header.size_bytes()});
      if (!next.ok()) return next.error();
      batch = next.value();
    }
  }
  // Entries from `from` on were dropped and replayed: files of those segments are rewritten
  // where they differ (at open this also removes files of no segment).
  return write_txn_index_files(std::min(replay_base, segments_.begin()->first));
}

result<void> partition_log::rebuild_leader_epochs() {
  // Every batch carries the epoch of the leader that appended it: the first offset of each epoch
  // larger than every one before it (note_epoch's rule) is that epoch's start.
  epochs_.clear();
  for (auto& [base, seg] : segments_) {
    auto located = seg->find_batch(base);
    if (!located.ok()) return located.error();
    std::optional<located_batch> batch = located.value();
    while (batch) {
      const int32_t e = batch->header.partition_leader_epoch.value();
      if (e >= 0 && (epochs_.empty() || epochs_.rbegin()->first < e)) epochs_[e] = batch->header.base_offset;
      auto next = seg->header_at(model::file_position{batch->position.value() + batch->header.size_bytes()});
      if (!next.ok()) return next.error();
      batch = next.value();
    }
  }
  return base::ok_v;
}

}  // namespace ringlog::storage
