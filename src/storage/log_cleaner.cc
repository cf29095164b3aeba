#include "ringlog/storage/log_cleaner.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <variant>

#include "checkpoint.h"
#include "ringlog/base/assert.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/storage/partition_log.h"
#include "segment.h"

namespace ringlog::storage {
namespace {

/// Cleaned bytes are collected up to this size before one write: few syscalls, bounded memory.
constexpr size_t cleaner_write_buffer_bytes = 1024 * 1024;
/// Record batch v2 attribute bits (codec/record_batch.h).
constexpr int16_t transactional_bit = 0x10;
constexpr int16_t control_bit = 0x20;


/// "00000000000000000042.log.swap" -> 42 (for `suffix` ".log.swap"); nullopt otherwise.
std::optional<model::offset> parse_base(const std::string& name, std::string_view suffix) {
  constexpr size_t digits = 20;
  if (name.size() != digits + suffix.size() || name.compare(digits, suffix.size(), suffix) != 0) return std::nullopt;
  int64_t value = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + digits, value);
  if (ec != std::errc{} || p != name.data() + digits || value < 0) return std::nullopt;
  return model::offset{value};
}

/// What a `.swap` file holds: one past its last offset when it is whole (every batch complete,
/// CRC valid, offsets ascending from `base`, nothing after the last batch, not empty); otherwise
/// why not. Errors: kafka_storage_error (the file cannot be read).
result<std::variant<model::offset, std::string>> whole_swap_end(io::file_system& fs, const std::string& path,
                                                               model::offset base) {
  using out = std::variant<model::offset, std::string>;
  auto file = fs.open(path, io::open_mode::read_only);
  if (!file.ok()) return storage_error(file.error());
  auto size = file.value()->size();
  if (!size.ok()) return storage_error(size.error());
  if (size.value() == 0) return out{std::string("it is empty")};
  model::offset end = base;
  uint64_t position = 0;
  std::array<std::byte, codec::batch_header_bytes> head{};
  model::bytes batch;
  while (position < size.value()) {
    const std::string where = " at file position " + std::to_string(position);
    if (position + codec::batch_header_bytes > size.value()) return out{"a torn batch header" + where};
    auto n = file.value()->read_at(model::file_position{position}, head);
    if (!n.ok()) return storage_error(n.error());
    auto header = codec::decode_header(head);
    if (!header.ok()) return out{"an unreadable batch header" + where + ": " + header.error().message};
    if (position + header->size_bytes() > size.value()) return out{"a torn batch" + where};
    if (header->base_offset < end) return out{"offsets not ascending" + where};
    batch.resize(header->size_bytes());
    auto r = file.value()->read_at(model::file_position{position}, batch);
    if (!r.ok()) return storage_error(r.error());
    if (auto valid = codec::validate_batch(batch); !valid.ok()) {
      return out{"a corrupt batch" + where + ": " + valid.error().message};
    }
    end = header->last_offset() + 1;
    position += header->size_bytes();
  }
  return out{end};
}

std::string join(const std::string& directory, const std::string& name) { return directory + "/" + name; }

/// The cleaner checkpoint of a log, or nullopt when there is none.
result<std::optional<model::offset>> read_cleaner_checkpoint(io::file_system& fs, const std::string& directory) {
  auto entries = read_checkpoint(fs, join(directory, cleaner_checkpoint_file));
  if (!entries.ok()) return entries.error();
  if (entries->empty()) return std::optional<model::offset>{};
  return std::optional<model::offset>{model::offset{entries->front().second}};
}

/// The newest timestamp of a segment as the tombstone clock sees it: a missing or future one
/// counts as now (the tombstone is kept longer, never shorter).
int64_t tombstone_clock_ms(const segment& seg, int64_t now_ms) {
  const int64_t t = seg.max_timestamp();
  return (t < 0 || t > now_ms) ? now_ms : t;
}

constexpr const char* txn_index_suffix = ".txnindex";

/// The abort markers (their offsets) among the control batches of the file at `path`.
result<std::set<int64_t>> abort_markers_of_file(io::file_system& fs, const std::string& path) {
  auto file = fs.open(path, io::open_mode::read_only);
  if (!file.ok()) return storage_error(file.error());
  auto size = file.value()->size();
  if (!size.ok()) return storage_error(size.error());
  std::set<int64_t> out;
  uint64_t position = 0;
  std::array<std::byte, codec::batch_header_bytes> head{};
  model::bytes batch;
  while (position + codec::batch_header_bytes <= size.value()) {
    auto n = file.value()->read_at(model::file_position{position}, head);
    if (!n.ok()) return storage_error(n.error());
    auto header = codec::decode_header(head);
    if (!header.ok() || position + header->size_bytes() > size.value()) break;
    if (header->is_control() && header->producer.value() >= 0 && header->records_count > 0) {
      batch.resize(header->size_bytes());
      auto r = file.value()->read_at(model::file_position{position}, batch);
      if (!r.ok()) return storage_error(r.error());
      auto records = codec::decode_records(batch);
      if (records.ok() && records->size() == 1) {
        auto marker = codec::decode_control_record(records->front());
        if (marker.ok() && marker->type == codec::control_type::abort) out.insert(header->last_offset().value());
      }
    }
    position += header->size_bytes();
  }
  return out;
}

/// Step d of a swap (log_cleaner.h): the txn index of the group [group_base, group_end) becomes
/// `<group_base>.txnindex` holding the entries of every index file of a base in that range whose
/// abort marker is in `kept_markers`; the other files of the range go. Idempotent, so recovery
/// can redo it. Returns the entries kept. Errors: kafka_storage_error.
result<std::vector<aborted_txn_entry>> rewrite_group_txn_index(io::file_system& fs, const std::string& directory,
                                                               model::offset group_base, model::offset group_end,
                                                               const std::set<int64_t>& kept_markers) {
  auto names = fs.list_directory(directory);
  if (!names.ok()) return storage_error(names.error());
  std::map<int64_t, aborted_txn_entry> entries;   // by marker offset
  std::vector<std::string> files;
  for (const auto& name : names.value()) {
    auto base = parse_base(name, txn_index_suffix);
    if (!base || *base < group_base || *base >= group_end) continue;
    files.push_back(name);
    auto bytes = io::read_whole_file(fs, join(directory, name));
    if (!bytes.ok()) return storage_error(bytes.error());
    auto decoded = decode_txn_index(bytes.value());
    // A corrupt file is rebuilt by the log's open from the segment's markers (partition_log.h).
    if (!decoded.ok()) continue;
    for (const auto& e : decoded.value()) {
      if (kept_markers.contains(e.last_offset.value())) entries[e.last_offset.value()] = e;
    }
  }
  std::vector<aborted_txn_entry> kept;
  for (const auto& [offset, e] : entries) kept.push_back(e);
  const std::string own = segment_file_stem(group_base) + txn_index_suffix;
  if (!kept.empty()) {
    auto written = io::write_file_atomic(fs, join(directory, own), encode_txn_index(kept));
    if (!written.ok()) return storage_error(written.error());
  }
  bool removed_any = false;
  for (const auto& name : files) {
    if (name == own && !kept.empty()) continue;
    auto removed = fs.remove(join(directory, name));
    if (!removed.ok() && removed.error().code != io::errc::not_found) return storage_error(removed.error());
    removed_any = true;
  }
  if (removed_any) {
    auto synced = fs.sync_directory(directory);
    if (!synced.ok()) return storage_error(synced.error());
  }
  return kept;
}

/// Transaction state of a walk over batches in offset order (Kafka's CleanedTransactionMetadata,
/// KIP-98): which data batches belong to aborted transactions, and which markers no batch of
/// their transaction needs any more. `aborted`: the aborted transactions whose marker is at or
/// after the walk's first batch (partition_log::aborted_transactions).
class txn_walk {
 public:
  explicit txn_walk(std::vector<aborted_txn_entry> aborted) : aborted_(std::move(aborted)) {
    std::sort(aborted_.begin(), aborted_.end(),
              [](const aborted_txn_entry& a, const aborted_txn_entry& b) { return a.first_offset < b.first_offset; });
  }
  /// A data batch holding records: true when it belongs to an aborted transaction (its records go).
  bool aborted_data(const codec::batch_header& h) {
    reach(h.last_offset());
    if (!h.is_transactional() || h.producer.value() < 0) return false;
    auto open = ongoing_aborted_.find(h.producer.value());
    if (open != ongoing_aborted_.end()) {
      open->second = true;
      return true;
    }
    ongoing_committed_.insert(h.producer.value());
    return false;
  }
  /// A transaction marker of `type`: true when no data batch of its transaction was met, so the
  /// marker may go (after its delete horizon).
  bool marker_may_go(const codec::batch_header& h, codec::control_type type) {
    reach(h.last_offset());
    const int64_t producer = h.producer.value();
    if (type == codec::control_type::abort) {
      auto open = ongoing_aborted_.find(producer);
      if (open == ongoing_aborted_.end()) return true;
      const bool data_met = open->second;
      ongoing_aborted_.erase(open);
      return !data_met;
    }
    return ongoing_committed_.erase(producer) == 0;
  }

 private:
  /// Opens every aborted transaction that starts at or before `offset`.
  void reach(model::offset offset) {
    while (next_ < aborted_.size() && aborted_[next_].first_offset <= offset) {
      ongoing_aborted_.try_emplace(aborted_[next_].producer_id.value(), false);
      ++next_;
    }
  }
  std::vector<aborted_txn_entry> aborted_;   // ascending first_offset
  size_t next_ = 0;
  std::map<int64_t, bool> ongoing_aborted_;  // producer -> a data batch of it was met
  std::set<int64_t> ongoing_committed_;      // producers whose open (committed) transaction was met
};

/// The marker of a control batch of a producer; nullopt for an empty one or an unreadable one
/// (never written by the log: partition_log::marker_of refuses it before the write).
std::optional<codec::control_type> marker_type(std::span<const std::byte> batch, const codec::batch_header& h) {
  if (h.records_count == 0) return std::nullopt;
  auto records = codec::decode_records(batch);
  if (!records.ok() || records->size() != 1) return std::nullopt;
  auto marker = codec::decode_control_record(records->front());
  if (!marker.ok()) return std::nullopt;
  return marker->type;
}

}  // namespace

// ---------------------------------------------------------------- recovery of the swap steps

result<size_t> complete_interrupted_swaps(io::file_system& fs, const std::string& directory,
                                          std::vector<std::string>* warnings) {
  auto names = fs.list_directory(directory);
  if (!names.ok()) {
    if (names.error().code == io::errc::not_found) return size_t{0};
    return storage_error(names.error());
  }
  bool changed = false;
  std::vector<model::offset> swaps;
  std::vector<model::offset> segments;
  for (const auto& name : names.value()) {
    if (name.ends_with(".cleaned")) {
      // Written before its commit point: the segments it would replace are all still there.
      auto removed = fs.remove(join(directory, name));
      if (!removed.ok() && removed.error().code != io::errc::not_found) return storage_error(removed.error());
      changed = true;
    } else if (auto base = parse_base(name, ".log.swap")) {
      swaps.push_back(*base);
    } else if (auto seg = parse_base(name, ".log")) {
      segments.push_back(*seg);
    }
  }
  std::sort(swaps.begin(), swaps.end());
  size_t completed = 0;
  for (model::offset base : swaps) {
    const std::string swap_path = join(directory, segment_file_stem(base) + ".log.swap");
    auto whole = whole_swap_end(fs, swap_path, base);
    if (!whole.ok()) return whole.error();
    if (const auto* why = std::get_if<std::string>(&whole.value())) {
      // Not a swap a cleaner committed: completing it would replace whole segments by part of it.
      auto removed = fs.remove(swap_path);
      if (!removed.ok()) return storage_error(removed.error());
      changed = true;
      if (warnings != nullptr) {
        warnings->push_back("removed " + segment_file_stem(base) + ".log.swap, which no log cleaner committed (" + *why +
                            "): the segments it would have replaced are kept");
      }
      continue;
    }
    const model::offset end = std::get<model::offset>(whole.value());
    RINGLOG_ASSERT(end > base, "a whole swap file holds at least one batch");
    // The swap replaces every segment whose base lies in its offsets [base, end).
    for (model::offset old : segments) {
      if (old < base || old >= end) continue;
      for (const char* suffix : {".log", ".index", ".timeindex"}) {
        auto removed = fs.remove(join(directory, segment_file_stem(old) + suffix));
        if (!removed.ok() && removed.error().code != io::errc::not_found) return storage_error(removed.error());
      }
    }
    // Stale index files of the same base are gone with the old segment: recovery rebuilds them.
    for (const char* suffix : {".index", ".timeindex"}) {
      auto removed = fs.remove(join(directory, segment_file_stem(base) + suffix));
      if (!removed.ok() && removed.error().code != io::errc::not_found) return storage_error(removed.error());
    }
    // Step d again: the group's txn index keeps the aborted transactions whose marker is stored.
    auto markers = abort_markers_of_file(fs, swap_path);
    if (!markers.ok()) return markers.error();
    auto indexed = rewrite_group_txn_index(fs, directory, base, end, markers.value());
    if (!indexed.ok()) return indexed.error();
    auto renamed = fs.rename(swap_path, join(directory, segment_file_stem(base) + ".log"));
    if (!renamed.ok()) return storage_error(renamed.error());
    changed = true;
    ++completed;
  }
  if (changed) {
    auto synced = fs.sync_directory(directory);
    if (!synced.ok()) return storage_error(synced.error());
  }
  return completed;
}

// ---------------------------------------------------------------- throttle

void cleaner_throttle::record(int64_t now_ms, uint64_t bytes) {
  if (!(bytes_per_second_ > 0) || std::isinf(bytes_per_second_)) return;
  const double wait_ms = static_cast<double>(bytes) * 1000.0 / bytes_per_second_;
  next_start_ms_ = now_ms + static_cast<int64_t>(std::min(wait_ms, 3.6e6));  // at most an hour
}

// ---------------------------------------------------------------- the cleaner

/// A pass in progress: its plan, where it stands, and what it has done.
/// A sync submitted to the executor: shared by the pass and the completion callback (which
/// holds it weakly, so a pass that ended meanwhile is not resumed).
struct log_cleaner::pending_sync {
  size_t remaining = 0;   // syncs not completed yet; done at 0
  bool done = false;
  std::optional<error> failure;   // the first failure
};

struct log_cleaner::pass {
  // seed_horizons: after a restart, the delete horizons of the clean section (KIP-534).
  // swap_*: one group's swap (log_cleaner.h step 5), each part ending with a sync:
  //   swap_sync_cleaned  a: the .cleaned file's fdatasync
  //   swap_rename        b: rename to .swap, directory fsync (the commit point)
  //   swap_commit        c, d, e: old files go, txn index, rename to .log, directory and index fsyncs
  //   swap_done          the group is complete: next group or finish
  // finish, finish_rename, finish_rest: the cleaner checkpoint written, fdatasynced, renamed,
  //   the directory fsynced; then compact,delete's retention (finish()).
  enum class phase {
    seed_horizons, build_map, rewrite, swap_sync_cleaned, swap_rename, swap_commit, swap_done,
    finish, finish_rename, finish_rest
  };
  partition_log* log = nullptr;
  cleaner_io io;
  force_clean force = force_clean::no;
  // seed_horizons: batches of segments ending at or below seed_end, the earliest horizon met
  model::offset seed_end{0};
  int64_t earliest_horizon_ms = std::numeric_limits<int64_t>::max();
  // the sync in flight (executor), or the failure of the last inline one
  std::shared_ptr<pending_sync> waiting;
  std::optional<error> sync_failure;
  std::shared_ptr<io::file> directory;   // the log directory's handle, opened at the first swap
  uint64_t generation = 0;          // the log's segments_generation_ at begin()
  int64_t now_ms = 0;               // the pass's time: horizons are set and compared with it
  cleanable_state state;
  bool clean_section_only = false;  // nothing dirty: only expired tombstones / markers go
  clean_stats stats;
  phase at = phase::build_map;
  // build_map: the next batch to read, and where the map ended
  model::offset segment_base{0};
  uint64_t position = 0;
  bool map_full = false;
  model::offset map_end{0};
  std::optional<txn_walk> map_txns;
  // rewrite: groups of segment bases, the current group and member, the output file
  std::vector<std::vector<model::offset>> groups;
  size_t group = 0;
  size_t member = 0;
  std::optional<txn_walk> rewrite_txns;   // one walk over the whole pass, from the log start
  std::shared_ptr<io::file> out;          // shared with a sync in flight
  std::string cleaned_path;
  uint64_t written = 0;
  // what the output holds, tracked as it is written: the swap installs it without a scan
  std::optional<segment_tracker> tracker;
  model::bytes pending;
  std::set<int64_t> kept_abort_markers;   // of the current group's output
  int64_t next_due_ms = std::numeric_limits<int64_t>::max();
  model::bytes buffer;
};

log_cleaner::log_cleaner(cleaner_config config) : map_(config.dedupe_buffer_bytes) {}
log_cleaner::~log_cleaner() = default;

const partition_log* log_cleaner::cleaning() const { return pass_ ? pass_->log : nullptr; }
const clean_stats& log_cleaner::stats() const { return pass_ ? pass_->stats : last_stats_; }

result<void> log_cleaner::hook(std::string_view name) {
  if (step_hook && !step_hook(name)) {
    return error{errc::kafka_storage_error, "log cleaner stopped at step '" + std::string(name) + "' (test hook)"};
  }
  return base::ok_v;
}

bool log_cleaner::horizons_known(const partition_log& log) const { return horizons_known_.contains(log.directory_); }

result<model::offset> log_cleaner::checkpointed_first_dirty(partition_log& log) {
  auto cached = first_dirty_cache_.find(log.directory_);
  if (cached == first_dirty_cache_.end()) {
    // An unreadable checkpoint (partition_log::open removes one, with a warning) counts as none:
    // the whole log is dirty, as Kafka's cleaner treats it, never "nothing to clean" for good.
    auto checkpoint = read_cleaner_checkpoint(log.fs_, log.directory_);
    const model::offset from = checkpoint.ok() ? checkpoint->value_or(log.log_start_offset_) : log.log_start_offset_;
    cached = first_dirty_cache_.emplace(log.directory_, from).first;
  }
  model::offset first_dirty = cached->second;
  // A checkpoint outside the log (truncation, a log started anew) restarts from the log start.
  if (first_dirty < log.log_start_offset_ || first_dirty > log.log_end_offset_) first_dirty = log.log_start_offset_;
  return first_dirty;
}

result<cleanable_state> log_cleaner::inspect(partition_log& log) {
  RINGLOG_TRY(log.check_usable());
  cleanable_state out;
  const int64_t now = log.clock_.now_ms();
  const log_config& config = log.config_;
  auto checkpointed = checkpointed_first_dirty(log);
  if (!checkpointed.ok()) return checkpointed.error();
  model::offset first_dirty = checkpointed.value();

  // The first segment that may not be cleaned: the active one, one reaching above the last
  // stable offset (above the high watermark it could still be truncated; above the first offset
  // of an open transaction its outcome is unknown: KIP-98), or one with records newer than the lag.
  const model::offset last_stable = log.last_stable_offset();
  const segment* active = log.segments_.rbegin()->second.get();
  model::offset first_uncleanable = active->base_offset();
  for (const auto& [base, seg] : log.segments_) {
    if (seg.get() == active) break;
    const bool above_last_stable = seg->next_offset() > last_stable;
    const bool too_new = config.min_compaction_lag_ms > 0 && tombstone_clock_ms(*seg, now) > now - config.min_compaction_lag_ms;
    if (above_last_stable || too_new) {
      first_uncleanable = base;
      break;
    }
  }
  first_dirty = std::min(first_dirty, first_uncleanable);
  out.first_dirty_offset = first_dirty;
  out.first_uncleanable_offset = first_uncleanable;
  bool first_dirty_segment = true;
  for (const auto& [base, seg] : log.segments_) {
    if (base >= first_uncleanable) break;
    if (seg->next_offset() <= first_dirty) {
      out.clean_bytes += seg->size_bytes();
      continue;
    }
    out.dirty_bytes += seg->size_bytes();
    if (first_dirty_segment) {
      first_dirty_segment = false;
      // KIP-354: the oldest dirty record's timestamp, from the first batch at the dirty start
      // (its max timestamp when base_timestamp is a delete horizon, as in a batch a follower
      // copied from a cleaned leader).
      auto located = seg->find_batch(first_dirty);
      if (!located.ok()) return located.error();
      if (located.value()) {
        const auto& h = located.value()->header;
        const int64_t first_ts = h.has_delete_horizon() ? h.max_timestamp : h.base_timestamp;
        out.max_lag_passed = first_ts >= 0 && now - first_ts > config.max_compaction_lag_ms;
      }
    }
  }
  const uint64_t total = out.clean_bytes + out.dirty_bytes;
  out.dirty_ratio = total == 0 ? 0.0 : static_cast<double>(out.dirty_bytes) / static_cast<double>(total);
  auto tombstones = tombstone_due_ms_.find(log.directory_);
  out.tombstones_due = tombstones != tombstone_due_ms_.end() && now >= tombstones->second;
  out.due = config.compacted() &&
            ((out.dirty_bytes > 0 && (out.dirty_ratio >= config.min_cleanable_dirty_ratio || out.max_lag_passed)) ||
             (out.clean_bytes > 0 && out.tombstones_due));
  return out;
}

result<bool> log_cleaner::begin(partition_log& log, force_clean force, cleaner_io io) {
  RINGLOG_ASSERT(pass_ == nullptr, "one pass at a time per cleaner");
  if (!log.config_.compacted()) return false;
  RINGLOG_TRY(log.check_usable());
  // A swap an earlier pass left before its old segments went (it failed there): undone first.
  RINGLOG_TRY(log.roll_back_pending_swap());
  auto p = std::make_unique<pass>();
  p->log = &log;
  p->generation = log.segments_generation_;
  p->io = std::move(io);
  p->force = force;
  if (!horizons_known(log)) {
    // After a restart: the horizons of the clean section first, in bounded steps (seed_step).
    auto first_dirty = checkpointed_first_dirty(log);
    if (!first_dirty.ok()) return first_dirty.error();
    p->seed_end = first_dirty.value();
    p->segment_base = log.segments_.begin()->first;
    p->position = 0;
    p->at = pass::phase::seed_horizons;
    pass_ = std::move(p);
    return true;
  }
  auto state = inspect(log);
  if (!state.ok()) return state.error();
  if (!state->due && force == force_clean::no) return false;
  // Nothing dirty: only the clean section is rewritten (expired tombstones / markers).
  if (state->dirty_bytes == 0 && !(state->clean_bytes > 0 && state->tombstones_due)) return false;
  RINGLOG_TRY(plan_pass(*p, state.value()));
  pass_ = std::move(p);
  return true;
}

result<void> log_cleaner::plan_pass(pass& p, const cleanable_state& state) {
  partition_log& log = *p.log;
  p.now_ms = log.clock_.now_ms();
  p.state = state;
  p.clean_section_only = state.dirty_bytes == 0;
  p.stats.dirty_ratio = state.dirty_ratio;
  p.stats.first_dirty_offset = state.first_dirty_offset;
  p.map_end = state.first_uncleanable_offset;
  // At most one key per offset of the dirty range: size the map for that, within the buffer.
  map_.reset_for(static_cast<size_t>(state.first_uncleanable_offset - state.first_dirty_offset));
  p.map_txns.emplace(log.aborted_transactions(state.first_dirty_offset, state.first_uncleanable_offset));
  // The map starts at the segment holding the first dirty offset.
  p.segment_base = state.first_uncleanable_offset;
  p.position = 0;
  for (const auto& [base, seg] : log.segments_) {
    if (base >= state.first_uncleanable_offset) break;
    if (seg->next_offset() <= state.first_dirty_offset) continue;
    p.segment_base = base;
    auto located = seg->find_batch(state.first_dirty_offset);
    if (!located.ok()) return located.error();
    p.position = located.value() ? located.value()->position.value() : seg->size_bytes();
    break;
  }
  p.at = pass::phase::build_map;
  return base::ok_v;
}

result<void> log_cleaner::seed_step(pass& p, size_t budget_bytes, clean_step& out) {
  partition_log& log = *p.log;
  while (p.segment_base < p.seed_end) {
    auto found = log.segments_.find(p.segment_base);
    RINGLOG_ASSERT(found != log.segments_.end(), "the segments of a pass stay while its generation holds");
    segment& seg = *found->second;
    if (seg.next_offset() > p.seed_end) break;   // the clean section only
    if (out.bytes_read >= budget_bytes) return base::ok_v;   // the step's bound: yield
    auto located = seg.header_at(model::file_position{p.position});
    if (!located.ok()) return located.error();
    if (!located.value()) {
      auto next = log.segments_.upper_bound(p.segment_base);
      p.segment_base = next == log.segments_.end() ? p.seed_end : next->first;
      p.position = 0;
      continue;
    }
    const auto& h = located.value()->header;
    if (h.has_delete_horizon()) p.earliest_horizon_ms = std::min(p.earliest_horizon_ms, h.delete_horizon_ms());
    out.bytes_read += h.size_bytes();   // covered, for pacing: the page cache reads around the headers
    p.position += h.size_bytes();
  }
  if (p.earliest_horizon_ms != std::numeric_limits<int64_t>::max()) {
    tombstone_due_ms_[log.directory_] = p.earliest_horizon_ms;
  }
  horizons_known_.insert(log.directory_);
  // Now the pass as begin() would start it, or none.
  auto state = inspect(log);
  if (!state.ok()) return state.error();
  const bool nothing = state->dirty_bytes == 0 && !(state->clean_bytes > 0 && state->tombstones_due);
  if ((!state->due && p.force == force_clean::no) || nothing) {
    p.at = pass::phase::finish;   // finish() with no groups and no clean section: not cleaned
    p.clean_section_only = false;
    p.stats.dirty_ratio = state->dirty_ratio;
    p.stats.first_dirty_offset = state->first_dirty_offset;
    return base::ok_v;
  }
  return plan_pass(p, state.value());
}

void log_cleaner::forget(const partition_log& log) {
  if (pass_ && pass_->log == &log) abandon();
  tombstone_due_ms_.erase(log.directory_);
  horizons_known_.erase(log.directory_);
  first_dirty_cache_.erase(log.directory_);
}

void log_cleaner::abandon() {
  if (!pass_) return;
  pass_->out.reset();   // a sync in flight keeps its own reference
  partition_log& log = *pass_->log;
  if (log.check_usable().ok()) {
    if (!pass_->cleaned_path.empty()) (void)log.fs_.remove(pass_->cleaned_path);   // recovery removes it too
    (void)log.roll_back_pending_swap();   // a failure there leaves the log refusing use
  }
  last_stats_ = pass_->stats;
  pass_.reset();
}

void log_cleaner::start_sync(pass& p, const std::vector<std::shared_ptr<io::file>>& files) {
  p.sync_failure.reset();
  if (p.io.executor == nullptr) {
    for (const auto& f : files) {
      auto synced = f->datasync();
      if (!synced.ok()) {
        p.sync_failure = storage_error(synced.error());
        return;
      }
    }
    return;
  }
  auto waiting = std::make_shared<pending_sync>();
  waiting->remaining = files.size();
  p.waiting = waiting;
  for (const auto& f : files) {
    p.io.executor->submit_datasync(*f, [f, weak = std::weak_ptr<pending_sync>(waiting),
                                        resume = p.io.resume](io::result<void> status) {
      auto w = weak.lock();
      if (!w) return;   // the pass ended meanwhile; `f` lived until here
      if (!status.ok() && !w->failure) w->failure = storage_error(status.error());
      if (--w->remaining > 0) return;
      w->done = true;
      if (resume) resume();
    });
  }
}

result<clean_step> log_cleaner::step(partition_log& log, size_t budget_bytes) {
  RINGLOG_ASSERT(pass_ != nullptr && pass_->log == &log, "step() continues the pass begin() started on this log");
  pass& p = *pass_;
  clean_step out;
  if (!log.check_usable().ok() || log.segments_generation_ != p.generation) {
    // Retention, truncation or close changed the segments under the pass: stop here. Every
    // group swapped so far is complete; the next pass starts over from the checkpoint.
    abandon();
    out.done = true;
    out.abandoned = true;
    return out;
  }
  if (p.waiting) {
    if (!p.waiting->done) {
      out.waiting_for_io = true;
      return out;
    }
    p.sync_failure = p.waiting->failure;
    p.waiting.reset();
  }
  ++p.stats.steps;
  result<void> r = base::ok_v;
  switch (p.at) {
    case pass::phase::seed_horizons: r = seed_step(p, budget_bytes, out); break;
    case pass::phase::build_map: r = build_map_step(p, budget_bytes, out); break;
    case pass::phase::rewrite: r = rewrite_step(p, budget_bytes, out); break;
    case pass::phase::swap_sync_cleaned:
    case pass::phase::swap_rename:
    case pass::phase::swap_commit:
    case pass::phase::swap_done:
      // Inline syncs: the whole swap in this step; with an executor, up to the next sync.
      do {
        r = swap_substep(p, out);
      } while (r.ok() && !p.waiting && p.at != pass::phase::rewrite && p.at != pass::phase::finish);
      out.waiting_for_io = r.ok() && p.waiting != nullptr;
      break;
    case pass::phase::finish:
    case pass::phase::finish_rename:
    case pass::phase::finish_rest:
      // Inline syncs: to the end in this step; with an executor, up to the next sync.
      do {
        r = finish(p, out);
      } while (r.ok() && !p.waiting && !out.done);
      out.waiting_for_io = r.ok() && p.waiting != nullptr;
      out.done = out.done && r.ok();
      break;
  }
  if (!r.ok()) {
    // Its reads of stored batches that do not decode are corrupt_message; kafka_storage_error is
    // a file it could not write, sync, rename or read: the log directory failed.
    log.report_write_failure("log cleaning", r.error());
    // As a crash at this point would: the .cleaned file stays for the next pass (which
    // truncates it) or recovery (which removes it); a .swap stays for the next pass or a
    // change of the segments to roll back, or recovery to complete.
    last_stats_ = p.stats;
    pass_.reset();
    return r.error();
  }
  if (out.done) {
    last_stats_ = p.stats;
    pass_.reset();
  }
  return out;
}

result<clean_stats> log_cleaner::clean(partition_log& log, force_clean force) {
  auto started = begin(log, force);
  if (!started.ok()) return started.error();
  if (!started.value()) {
    clean_stats none;
    auto state = inspect(log);
    if (state.ok()) {
      none.dirty_ratio = state->dirty_ratio;
      none.first_dirty_offset = state->first_dirty_offset;
    }
    return none;
  }
  for (;;) {
    auto s = step(log);
    if (!s.ok()) return s.error();
    if (s->done) return last_stats_;
  }
}

result<void> log_cleaner::build_map_step(pass& p, size_t budget_bytes, clean_step& out) {
  partition_log& log = *p.log;
  const cleanable_state& state = p.state;
  auto end_map = [&]() -> result<void> {
    if (p.map_end <= state.first_dirty_offset && !p.clean_section_only) {
      // Not one key fits (or nothing dirty to map): nothing to do.
      p.stats.map_end_offset = p.map_end;
      p.at = pass::phase::finish;
      p.groups.clear();
      p.stats.cleaned = false;
      return base::ok_v;
    }
    p.stats.map_end_offset = p.map_end;
    p.stats.keys_in_map = map_.size();
    return plan_groups(p);
  };
  if (p.clean_section_only) return end_map();
  while (!p.map_full && p.segment_base < state.first_uncleanable_offset) {
    auto found = log.segments_.find(p.segment_base);
    RINGLOG_ASSERT(found != log.segments_.end(), "the segments of a pass stay while its generation holds");
    segment& seg = *found->second;
    if (out.bytes_read >= budget_bytes) return base::ok_v;   // the step's bound: yield
    auto located = seg.header_at(model::file_position{p.position});
    if (!located.ok()) return located.error();
    if (!located.value()) {
      auto next = log.segments_.upper_bound(p.segment_base);
      p.segment_base = next == log.segments_.end() ? state.first_uncleanable_offset : next->first;
      p.position = 0;
      continue;
    }
    const auto& h = located.value()->header;
    p.buffer.clear();
    RINGLOG_TRY(seg.read_into(located.value()->position, h.size_bytes(), p.buffer));
    out.bytes_read += h.size_bytes();
    p.position += h.size_bytes();
    if (h.is_control()) {
      // Control records are markers, never a key's value; they end transactions in the walk.
      if (h.producer.value() >= 0) {
        if (auto type = marker_type(p.buffer, h)) (void)p.map_txns->marker_may_go(h, *type);
      }
      continue;
    }
    if (h.records_count == 0) continue;
    if (p.map_txns->aborted_data(h)) continue;   // an aborted value never supersedes anything
    auto records = codec::decode_records(p.buffer);
    if (!records.ok()) return error{errc::corrupt_message, log.directory_ + ": " + records.error().message};
    for (const auto& r : records.value()) {
      if (r.record_offset < state.first_dirty_offset || !r.key) continue;
      if (!map_.put(*r.key, r.record_offset)) {
        p.map_full = true;
        p.map_end = r.record_offset;
        break;
      }
    }
  }
  return end_map();
}

result<void> log_cleaner::plan_groups(pass& p) {
  partition_log& log = *p.log;
  const log_config& config = log.config_;
  uint64_t group_bytes = 0;
  model::offset group_front{0};
  for (auto& [base, seg] : log.segments_) {
    if (base >= p.map_end) break;
    RINGLOG_ASSERT(seg.get() != log.segments_.rbegin()->second.get(), "the active segment is never cleaned");
    const bool offsets_fit = !p.groups.empty() &&
                             seg->next_offset() - group_front < std::numeric_limits<int32_t>::max();
    if (p.groups.empty() || !offsets_fit || group_bytes + seg->size_bytes() > static_cast<uint64_t>(config.segment_bytes)) {
      p.groups.emplace_back();
      group_bytes = 0;
      group_front = base;
    }
    p.groups.back().push_back(base);
    group_bytes += seg->size_bytes();
  }
  p.rewrite_txns.emplace(log.aborted_transactions(log.log_start_offset_, p.map_end));
  p.group = 0;
  p.member = 0;
  p.position = 0;
  p.at = p.groups.empty() ? pass::phase::finish : pass::phase::rewrite;
  return base::ok_v;
}

result<void> log_cleaner::rewrite_step(pass& p, size_t budget_bytes, clean_step& out) {
  partition_log& log = *p.log;
  const log_config& config = log.config_;
  const auto& group = p.groups[p.group];
  const model::offset group_base = group.front();
  if (!p.out) {
    // The group's output file; a stale one of an earlier cut pass is cut to nothing.
    p.cleaned_path = log.directory_ + "/" + segment_file_stem(group_base) + ".log.cleaned";
    auto opened = log.fs_.open(p.cleaned_path, io::open_mode::read_write_create);
    if (!opened.ok()) return storage_error(opened.error());
    auto cut = opened.value()->truncate(0);
    if (!cut.ok()) return storage_error(cut.error());
    p.out = std::move(opened.value());
    p.written = 0;
    p.tracker.emplace(group_base);
    p.pending.clear();
    p.kept_abort_markers.clear();
  }
  auto flush_pending = [&]() -> result<void> {
    if (p.pending.empty()) return base::ok_v;
    auto w = p.out->write_at(model::file_position{p.written}, p.pending);
    if (!w.ok()) return storage_error(w.error());
    p.written += p.pending.size();
    p.pending.clear();
    return base::ok_v;
  };
  const int64_t now = p.now_ms;
  // Saturating: delete.retention.ms may be Long.MAX_VALUE ("keep tombstones for good"), and a
  // wrapped sum would be a horizon in the past (the tombstone removed at the next pass).
  const int64_t new_horizon = config.delete_retention_ms > std::numeric_limits<int64_t>::max() - now
                                  ? std::numeric_limits<int64_t>::max()
                                  : now + config.delete_retention_ms;
  while (p.member < group.size()) {
    auto found = log.segments_.find(group[p.member]);
    RINGLOG_ASSERT(found != log.segments_.end(), "the segments of a pass stay while its generation holds");
    segment& seg = *found->second;
    if (out.bytes_read >= budget_bytes) {
      RINGLOG_TRY(flush_pending());
      return base::ok_v;   // the step's bound: yield (a step reads at least one batch)
    }
    if (p.position == 0) {
      p.stats.bytes_read += seg.size_bytes();
      ++p.stats.segments_before;
    }
    auto located = seg.header_at(model::file_position{p.position});
    if (!located.ok()) return located.error();
    if (!located.value()) {
      ++p.member;
      p.position = 0;
      continue;
    }
    const auto h = located.value()->header;
    auto next = seg.header_at(model::file_position{p.position + h.size_bytes()});
    if (!next.ok()) return next.error();
    const bool last_of_segment = !next.value().has_value();
    p.buffer.clear();
    RINGLOG_TRY(seg.read_into(located.value()->position, h.size_bytes(), p.buffer));
    out.bytes_read += h.size_bytes();
    p.position += h.size_bytes();
    const model::bytes& buffer = p.buffer;
    auto append_bytes = [&](const model::bytes& bytes) {
      auto written_header = codec::decode_header(bytes);
      RINGLOG_ASSERT(written_header.ok(), "the cleaner writes whole batches: stored ones or ones it encoded");
      p.tracker->track(written_header.value(), model::file_position{p.written + p.pending.size()}, p.now_ms,
                       config.retention_ms, config.index_interval_bytes);
      p.pending.insert(p.pending.end(), bytes.begin(), bytes.end());
    };
    auto append_encoded = [&](std::span<const model::record> kept, std::optional<int64_t> horizon) -> result<void> {
      // An emptied batch stays only to end its segment: it is no transaction's data and no
      // marker any more (a replay must not open a transaction at it, whose marker may go).
      codec::batch_header shape = h;
      if (kept.empty()) shape.attributes = static_cast<int16_t>(shape.attributes & ~(transactional_bit | control_bit));
      auto encoded = codec::encode_filtered_batch(shape, kept, horizon);
      if (!encoded.ok()) return error{errc::corrupt_message, log.directory_ + ": " + encoded.error().message};
      append_bytes(encoded.value());
      return base::ok_v;
    };
    if (h.records_count == 0) {
      // An empty header left by an earlier pass: needed only to end its segment.
      if (last_of_segment) append_bytes(buffer);
    } else if (h.is_control()) {
      const auto type = h.producer.value() >= 0 ? marker_type(buffer, h) : std::nullopt;
      const bool may_go = type.has_value() && p.rewrite_txns->marker_may_go(h, *type);
      const bool is_abort = type == codec::control_type::abort;
      if (!may_go) {
        append_bytes(buffer);
        if (is_abort) p.kept_abort_markers.insert(h.last_offset().value());
      } else if (h.has_delete_horizon() && now >= h.delete_horizon_ms()) {
        ++p.stats.markers_removed;   // its transaction has no data left and readers had their time
        if (last_of_segment) RINGLOG_TRY(append_encoded({}, std::nullopt));
      } else {
        // KIP-534: the marker may go, after delete.retention.ms from the first pass that saw that.
        const int64_t horizon = h.has_delete_horizon() ? h.delete_horizon_ms() : new_horizon;
        if (h.has_delete_horizon()) {
          append_bytes(buffer);
        } else {
          auto records = codec::decode_records(buffer);
          if (!records.ok()) return error{errc::corrupt_message, log.directory_ + ": " + records.error().message};
          RINGLOG_TRY(append_encoded(records.value(), horizon));
          ++p.stats.horizons_set;
        }
        p.next_due_ms = std::min(p.next_due_ms, horizon);
        if (is_abort) p.kept_abort_markers.insert(h.last_offset().value());
      }
    } else {
      const bool aborted = p.rewrite_txns->aborted_data(h);
      auto records = codec::decode_records(buffer);
      if (!records.ok()) return error{errc::corrupt_message, log.directory_ + ": " + records.error().message};
      std::vector<model::record> kept;
      bool holds_tombstone = false;
      p.stats.records_read += records->size();
      if (aborted) {
        p.stats.aborted_records_removed += records->size();
      } else {
        for (auto& r : records.value()) {
          if (!r.key) continue;   // a keyless record is no key's value (Kafka drops them too)
          auto latest = map_.get(*r.key);
          if (latest && *latest > r.record_offset) continue;   // superseded
          if (!r.value && r.record_offset < p.map_end) {
            // A tombstone that is its key's latest: it goes once its batch's horizon passed.
            if (h.has_delete_horizon() && now >= h.delete_horizon_ms()) {
              ++p.stats.tombstones_removed;
              continue;
            }
            holds_tombstone = true;
          }
          kept.push_back(std::move(r));
        }
      }
      p.stats.records_kept += kept.size();
      // The batch's horizon: kept while it holds a tombstone, set by the first pass that keeps one.
      std::optional<int64_t> horizon;
      if (holds_tombstone) {
        horizon = h.has_delete_horizon() ? h.delete_horizon_ms() : new_horizon;
        p.next_due_ms = std::min(p.next_due_ms, *horizon);
      }
      const bool horizon_unchanged = horizon.has_value() == h.has_delete_horizon();
      if (kept.size() == static_cast<size_t>(h.records_count) && horizon_unchanged) {
        append_bytes(buffer);   // unchanged: bytes as stored
      } else if (!kept.empty() || last_of_segment) {
        RINGLOG_TRY(append_encoded(kept, horizon));
        if (horizon && !h.has_delete_horizon()) ++p.stats.horizons_set;
      }
    }
    if (p.pending.size() >= cleaner_write_buffer_bytes) RINGLOG_TRY(flush_pending());
  }
  RINGLOG_TRY(flush_pending());
  p.at = pass::phase::swap_sync_cleaned;
  return base::ok_v;
}

result<void> log_cleaner::swap_substep(pass& p, clean_step& out) {
  partition_log& log = *p.log;
  const log_config& config = log.config_;
  const auto& bases = p.groups[p.group];
  const model::offset group_base = bases.front();
  const std::string stem = log.directory_ + "/" + segment_file_stem(group_base);
  const std::string swap_path = stem + ".log.swap";
  // Past the commit point: a failure from here on leaves the directory for recovery to finish,
  // and this log must not be served from its now stale segment objects.
  auto fail = [&log](const error& e) -> error { return log.fail("log cleaner swap", e); };
  switch (p.at) {
    case pass::phase::swap_sync_cleaned: {
      // a. The .cleaned file is complete: make it durable.
      RINGLOG_ASSERT(p.written > 0, "the last batch of every segment is kept, so a cleaned segment is never empty");
      RINGLOG_TRY(hook("cleaned-written"));
      p.at = pass::phase::swap_rename;
      start_sync(p, {p.out});
      return base::ok_v;
    }
    case pass::phase::swap_rename: {
      if (p.sync_failure) return *p.sync_failure;   // not in the log yet: the old group stays
      p.out.reset();
      RINGLOG_TRY(hook("cleaned-synced"));
      // b. From here until step c a change of the segments rolls the swap back.
      log.pending_swap_path_ = swap_path;
      auto renamed = log.fs_.rename(p.cleaned_path, swap_path);
      if (!renamed.ok()) return storage_error(renamed.error());
      p.cleaned_path.clear();
      RINGLOG_TRY(hook("swap-renamed"));
      if (!p.directory) {
        auto opened = log.fs_.open_directory(log.directory_);
        if (!opened.ok()) return storage_error(opened.error());
        p.directory = std::move(opened.value());
      }
      p.at = pass::phase::swap_commit;
      start_sync(p, {p.directory});   // the commit point once it completes
      return base::ok_v;
    }
    case pass::phase::swap_commit: {
      // The .swap name may or may not be durable: neither the old group nor this one can be
      // trusted to be what a restart finds, so the log stops here (recovery decides).
      if (p.sync_failure) return fail(*p.sync_failure);
      RINGLOG_TRY(hook("swap-committed"));
      log.pending_swap_path_.clear();
      std::vector<segment*> group;
      for (model::offset b : bases) group.push_back(log.segments_.at(b).get());
      const model::offset group_end = group.back()->next_offset();
      for (size_t i = 0; i < group.size(); ++i) {
        // c. The old txn index files stay for step d, which reads them (also after a crash here).
        auto removed = group[i]->remove_files(txn_index_file::keep);
        if (!removed.ok()) return fail(removed.error());
        if (i == 0) {
          auto s = hook("old-segment-removed");
          if (!s.ok()) return fail(s.error());
        }
      }
      // d.
      auto indexed = rewrite_group_txn_index(log.fs_, log.directory_, group_base, group_end, p.kept_abort_markers);
      if (!indexed.ok()) return fail(indexed.error());
      {
        auto s = hook("txn-index-written");
        if (!s.ok()) return fail(s.error());
      }
      // e. The cleaned segment is served from here on: its bytes and its .swap name are durable,
      // so whatever a crash leaves of this rename, recovery ends with this group.
      auto final_name = log.fs_.rename(swap_path, stem + ".log");
      if (!final_name.ok()) return fail(storage_error(final_name.error()));
      // Installed from what the rewrite tracked: no read of the cleaned file on the shard (it was
      // fdatasynced in step a); its index files are written here and synced with the directory.
      auto fresh = segment::open_tracked(log.fs_, log.directory_, config.direct_io, std::move(*p.tracker));
      p.tracker.reset();
      if (!fresh.ok()) return fail(fresh.error());
      RINGLOG_ASSERT_OP(fresh.value()->next_offset().value(), ==, group_end.value());
      auto index_files = fresh.value()->index_files();
      p.stats.bytes_written += fresh.value()->size_bytes();
      ++p.stats.segments_after;
      log.replace_segments(bases, group_base, std::move(fresh.value()));
      // The producer snapshots at the bases the group merged go with those segments (Kafka's
      // replaceSegments deletes them too); the one at group_base and later ones stay. Without
      // this a compacted log, never trimmed from the front, kept one per roll for good.
      {
        auto pruned = log.remove_producer_snapshots([&](model::offset o) { return o > group_base && o < group_end; });
        if (!pruned.ok()) return fail(pruned.error());
      }
      // The log's aborted transactions of the group are now those of its rewritten index.
      std::erase_if(log.aborted_txns_, [&](const auto& kv) {
        return kv.first >= group_base.value() && kv.first < group_end.value() && !p.kept_abort_markers.contains(kv.first);
      });
      out.records_changed = true;
      p.at = pass::phase::swap_done;
      start_sync(p, {p.directory, index_files[0], index_files[1]});
      return base::ok_v;
    }
    case pass::phase::swap_done: {
      if (p.sync_failure) return fail(*p.sync_failure);
      {
        // Its files synced: the cleaned segment keeps only its .log open, as a rolled one does.
        segment& cleaned = *log.segments_.at(group_base);
        cleaned.mark_indexes_synced();
        auto released = cleaned.release_write_files();
        if (!released.ok()) return fail(released.error());
      }
      auto s = hook("group-done");
      if (!s.ok()) return fail(s.error());
      ++p.group;
      p.member = 0;
      p.position = 0;
      p.at = p.group < p.groups.size() ? pass::phase::rewrite : pass::phase::finish;
      return base::ok_v;
    }
    default:
      RINGLOG_ASSERT(false, "swap_substep outside a swap");
  }
  return base::ok_v;
}

result<void> log_cleaner::finish(pass& p, clean_step& out) {
  partition_log& log = *p.log;
  const log_config& config = log.config_;
  const std::string checkpoint_path = log.directory_ + "/" + cleaner_checkpoint_file;
  const model::offset map_end = p.map_end;
  switch (p.at) {
    case pass::phase::finish: {
      if (p.groups.empty() && !p.clean_section_only) {   // nothing was cleaned
        out.done = true;
        return base::ok_v;
      }
      // The checkpoint as io::write_file_atomic writes it, with its two syncs through start_sync.
      auto temp = log.fs_.open(checkpoint_path + ".tmp", io::open_mode::read_write_create);
      if (!temp.ok()) return storage_error(temp.error());
      const std::string text = checkpoint_text({{log.checkpoint_key(), map_end.value()}});
      auto cut = temp.value()->truncate(0);
      if (!cut.ok()) return storage_error(cut.error());
      auto written = temp.value()->write_at(model::file_position{0}, std::as_bytes(std::span(text.data(), text.size())));
      if (!written.ok()) return storage_error(written.error());
      p.at = pass::phase::finish_rename;
      start_sync(p, {std::shared_ptr<io::file>(std::move(temp.value()))});
      return base::ok_v;
    }
    case pass::phase::finish_rename: {
      if (p.sync_failure) return *p.sync_failure;   // the old checkpoint stands: cleaned again later
      auto renamed = log.fs_.rename(checkpoint_path + ".tmp", checkpoint_path);
      if (!renamed.ok()) return storage_error(renamed.error());
      if (!p.directory) {
        auto opened = log.fs_.open_directory(log.directory_);
        if (!opened.ok()) return storage_error(opened.error());
        p.directory = std::move(opened.value());
      }
      p.at = pass::phase::finish_rest;
      start_sync(p, {p.directory});
      return base::ok_v;
    }
    case pass::phase::finish_rest:
      if (p.sync_failure) return *p.sync_failure;
      out.done = true;
      break;
    default:
      RINGLOG_ASSERT(false, "finish() outside the pass's end");
  }
  const int64_t now = p.now_ms;
  first_dirty_cache_[log.directory_] = map_end;
  if (config.deletes()) {
    // By the newest record timestamp (a rewritten segment's retention clock restarted at its
    // rewrite, segment.cc's effective_timestamp).
    auto expired = [&](const segment& s) {
      return config.retention_ms >= 0 && now - tombstone_clock_ms(s, now) > config.retention_ms;
    };
    int64_t excess = config.retention_bytes >= 0 ? static_cast<int64_t>(log.size_bytes()) - config.retention_bytes : 0;
    while (log.segments_.size() > 1 && log.segments_.begin()->first < map_end) {
      segment& front = *log.segments_.begin()->second;
      if (!expired(front) && static_cast<int64_t>(front.size_bytes()) > excess) break;
      bool holds_records = false;
      auto batch = front.header_at(model::file_position{0});
      while (batch.ok() && batch.value() && !holds_records) {
        holds_records = batch.value()->header.records_count > 0;
        const auto& b = *batch.value();
        batch = front.header_at(model::file_position{b.position.value() + b.header.size_bytes()});
      }
      if (!batch.ok()) return batch.error();
      if (holds_records) break;   // it may hold a key's only value: never deleted by retention
      excess -= static_cast<int64_t>(front.size_bytes());
      RINGLOG_TRY(log.delete_segment_front());
      ++p.stats.segments_deleted;
    }
    if (p.stats.segments_deleted > 0) {
      log.high_watermark_ = std::max(log.high_watermark_, log.log_start_offset_);
      auto dir = log.fs_.sync_directory(log.directory_);
      if (!dir.ok()) return storage_error(dir.error());
      RINGLOG_TRY(log.checkpoint());
    }
  }
  if (p.next_due_ms == std::numeric_limits<int64_t>::max()) {
    tombstone_due_ms_.erase(log.directory_);
  } else {
    tombstone_due_ms_[log.directory_] = p.next_due_ms;
  }
  p.stats.cleaned = true;
  return base::ok_v;
}

}  // namespace ringlog::storage
