#include "segment.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"
#include "ringlog/codec/record_batch.h"

namespace ringlog::storage {
namespace {

/// A batch's contribution to its segment's retention clock: its largest timestamp, but a
/// timestamp in the future counts as `now`, and one already past retention when it arrived
/// (clocks in seconds, clients with a wrong clock) counts as its arrival time, so a bad client
/// clock can neither pin a segment forever nor get fresh data deleted at once.
model::timestamp_ms effective_timestamp(model::timestamp_ms max_timestamp, int64_t now_ms, int64_t retention_ms) {
  if (max_timestamp < 0 || max_timestamp > now_ms) return now_ms;
  if (retention_ms >= 0 && max_timestamp < now_ms - retention_ms) return now_ms;
  return max_timestamp;
}

}  // namespace

std::string segment_file_stem(model::offset base_offset) {
  char name[32];
  std::snprintf(name, sizeof(name), "%020lld", static_cast<long long>(base_offset.value()));
  return name;
}

segment::segment(io::file_system& fs, std::string directory, model::offset base_offset, bool direct)
    : fs_(fs), directory_(std::move(directory)), base_offset_(base_offset), tracked_(base_offset), direct_(direct) {}

std::string segment::path(const char* suffix) const {
  return directory_ + "/" + segment_file_stem(base_offset_) + suffix;
}

result<void> segment::open_files(io::open_mode mode) {
  auto log = fs_.open(path(".log"), mode);
  if (!log.ok()) return storage_error(log.error());
  log_ = std::move(log.value());
  if (direct_) {
    auto direct = fs_.open(path(".log"), io::open_mode::direct_write_create);
    if (!direct.ok()) return storage_error(direct.error());
    log_direct_ = std::move(direct.value());
  }
  auto size = log_->size();
  if (!size.ok()) return storage_error(size.error());
  size_bytes_ = size.value();
  return base::ok_v;
}

result<void> segment::open_index_files() {
  if (index_ && time_index_) return base::ok_v;
  // Index files are rebuildable: create them if they went missing.
  auto index = fs_.open(path(".index"), io::open_mode::read_write_create);
  if (!index.ok()) return storage_error(index.error());
  auto time_index = fs_.open(path(".timeindex"), io::open_mode::read_write_create);
  if (!time_index.ok()) return storage_error(time_index.error());
  index_ = std::move(index.value());
  time_index_ = std::move(time_index.value());
  return base::ok_v;
}

result<void> segment::release_write_files() {
  RINGLOG_TRY(sync(true));
  index_.reset();
  time_index_.reset();
  log_direct_.reset();
  tail_.reset();
  tail_capacity_ = 0;
  tail_loaded_ = false;
  return base::ok_v;
}

result<std::unique_ptr<segment>> segment::create(io::file_system& fs, const std::string& directory,
                                                 model::offset base_offset, bool direct) {
  std::unique_ptr<segment> seg(new segment(fs, directory, base_offset, direct));
  RINGLOG_TRY(seg->open_files(io::open_mode::read_write_create));
  // A segment is created empty; stale bytes under the same name would be a logic error upstream.
  if (seg->size_bytes_ != 0) {
    auto cut = seg->log_->truncate(0);
    if (!cut.ok()) return storage_error(cut.error());
    seg->size_bytes_ = 0;
  }
  RINGLOG_TRY(seg->open_index_files());
  auto cut_index = seg->index_->truncate(0);
  if (!cut_index.ok()) return storage_error(cut_index.error());
  auto cut_time = seg->time_index_->truncate(0);
  if (!cut_time.ok()) return storage_error(cut_time.error());
  return seg;
}

result<std::unique_ptr<segment>> segment::open_tracked(io::file_system& fs, const std::string& directory, bool direct,
                                                       segment_tracker tracked) {
  std::unique_ptr<segment> seg(new segment(fs, directory, tracked.base_offset, direct));
  RINGLOG_TRY(seg->open_files(io::open_mode::read_write));
  if (seg->size_bytes_ != tracked.end_position) {
    return error{errc::kafka_storage_error, seg->path(".log") + " holds " + std::to_string(seg->size_bytes_) +
                                                " bytes where " + std::to_string(tracked.end_position) +
                                                " were written and tracked"};
  }
  seg->tracked_ = std::move(tracked);
  RINGLOG_TRY(seg->rewrite_index_files());   // written, not synced: index_dirty_ stays until the caller's sync
  return seg;
}

result<std::unique_ptr<segment>> segment::open(io::file_system& fs, const std::string& directory,
                                               model::offset base_offset, bool direct) {
  std::unique_ptr<segment> seg(new segment(fs, directory, base_offset, direct));
  RINGLOG_TRY(seg->open_files(io::open_mode::read_write));
  return seg;
}

result<std::optional<located_batch>> segment::header_at(model::file_position position) {
  if (position.value() + codec::batch_header_bytes > size_bytes_) return std::optional<located_batch>{};
  std::array<std::byte, codec::batch_header_bytes> buf{};
  auto n = log_->read_at(position, buf);
  if (!n.ok()) return storage_error(n.error());
  if (n.value() != buf.size()) return std::optional<located_batch>{};
  auto header = codec::decode_header(buf);
  if (!header.ok()) {
    return error{errc::corrupt_message, "segment " + path(".log") + " at file position " +
                                            std::to_string(position.value()) + ": " + header.error().message};
  }
  if (position.value() + header->size_bytes() > size_bytes_) return std::optional<located_batch>{};
  return std::optional<located_batch>{located_batch{header.value(), position}};
}

result<void> segment::read_into(model::file_position position, size_t length, model::bytes& out) {
  const size_t old_size = out.size();
  out.resize(old_size + length);
  auto n = log_->read_at(position, std::span<std::byte>(out.data() + old_size, length));
  if (!n.ok()) {
    out.resize(old_size);
    return storage_error(n.error());
  }
  RINGLOG_ASSERT_OP(n.value(), ==, length);
  return base::ok_v;
}

void segment_tracker::track(const codec::batch_header& header, model::file_position position, int64_t now_ms,
                            int64_t retention_ms, int32_t index_interval_bytes) {
  // Index entries are kept in memory and written to their files lazily (write_pending_index_entries,
  // at roll, close and index syncs): an unclean stop rebuilds the last segment's indexes anyway,
  // so an append costs one write, not three.
  RINGLOG_ASSERT_OP(position.value(), ==, end_position);
  const auto relative_last = static_cast<int32_t>(header.last_offset() - base_offset);
  if (bytes_since_index_entry > static_cast<uint64_t>(index_interval_bytes)) {
    offset_entries.push_back(offset_index_entry{relative_last, static_cast<uint32_t>(position.value())});
    bytes_since_index_entry = 0;
  }
  bytes_since_index_entry += header.size_bytes();
  if (header.max_timestamp > max_timestamp) {
    max_timestamp = header.max_timestamp;
    // The exact record holding max_timestamp is inside the batch; the batch's last offset is an
    // upper bound, which is what a timestamp lookup needs to start scanning early enough.
    offset_of_max_timestamp = header.last_offset();
    if (time_entries.empty() || max_timestamp > time_entries.back().timestamp) {
      time_entries.push_back(time_index_entry{max_timestamp, relative_last});
    }
  }
  retention_timestamp = std::max(retention_timestamp, effective_timestamp(header.max_timestamp, now_ms, retention_ms));
  if (first_append_ms < 0) first_append_ms = now_ms;
  next_offset = header.last_offset() + 1;
  end_position = position.value() + header.size_bytes();
}

result<void> segment::append(std::span<const std::byte> batch, const codec::batch_header& header, int64_t now_ms,
                             int64_t retention_ms, int32_t index_interval_bytes) {
  // Offsets may jump (a compacted leader's batches replicated), never go back.
  RINGLOG_ASSERT_OP(header.base_offset.value(), >=, tracked_.next_offset.value());
  RINGLOG_ASSERT_OP(batch.size(), ==, header.size_bytes());
  const model::file_position position{size_bytes_};
  if (direct_) {
    RINGLOG_TRY(direct_write(batch));
  } else {
    auto w = log_->write_at(position, batch);
    if (!w.ok()) return storage_error(w.error());
  }
  size_bytes_ += batch.size();
  dirty_ = true;
  tracked_.track(header, position, now_ms, retention_ms, index_interval_bytes);
  return base::ok_v;
}

result<void> segment::direct_write(std::span<const std::byte> batch) {
  constexpr size_t align = io::direct_io_alignment;
  if (!log_direct_) {
    auto direct = fs_.open(path(".log"), io::open_mode::direct_write_create);
    if (!direct.ok()) return storage_error(direct.error());
    log_direct_ = std::move(direct.value());
  }
  if (!tail_loaded_) {
    // (Re)load the partial last block from the file: after open, recovery or truncation.
    tail_start_ = size_bytes_ / align * align;
    tail_loaded_ = true;
    const size_t partial = size_bytes_ - tail_start_;
    if (tail_capacity_ < align) {
      tail_.reset(static_cast<std::byte*>(std::aligned_alloc(align, align)));
      RINGLOG_ASSERT(tail_ != nullptr, "aligned_alloc of the O_DIRECT tail buffer");
      tail_capacity_ = align;
    }
    if (partial > 0) {
      auto n = log_->read_at(model::file_position{tail_start_}, std::span(tail_.get(), partial));
      if (!n.ok()) return storage_error(n.error());
      RINGLOG_ASSERT_OP(n.value(), ==, partial);
    }
  }
  const size_t partial = size_bytes_ - tail_start_;
  const size_t used = partial + batch.size();
  const size_t write_bytes = (used + align - 1) / align * align;
  if (write_bytes > tail_capacity_) {
    std::unique_ptr<std::byte, aligned_free> bigger(static_cast<std::byte*>(std::aligned_alloc(align, write_bytes)));
    RINGLOG_ASSERT(bigger != nullptr, "aligned_alloc of the O_DIRECT tail buffer");
    std::memcpy(bigger.get(), tail_.get(), partial);
    tail_ = std::move(bigger);
    tail_capacity_ = write_bytes;
  }
  std::memcpy(tail_.get() + partial, batch.data(), batch.size());
  std::memset(tail_.get() + used, 0, write_bytes - used);
  auto w = log_direct_->write_at(model::file_position{tail_start_}, std::span(tail_.get(), write_bytes));
  if (!w.ok()) return storage_error(w.error());
  const uint64_t new_size = size_bytes_ + batch.size();
  const uint64_t new_tail_start = new_size / align * align;
  std::memmove(tail_.get(), tail_.get() + (new_tail_start - tail_start_), new_size - new_tail_start);
  tail_start_ = new_tail_start;
  return base::ok_v;
}

result<void> segment::seal() {
  if (!direct_) return base::ok_v;
  auto size = log_->size();
  if (!size.ok()) return storage_error(size.error());
  if (size.value() != size_bytes_) {
    auto t = log_->truncate(size_bytes_);
    if (!t.ok()) return storage_error(t.error());
    dirty_ = true;
  }
  return base::ok_v;
}

result<bool> segment::load_indexes(int64_t now_ms, int64_t retention_ms) {
  auto index_bytes = io::read_whole_file(fs_, path(".index"));
  auto time_bytes = io::read_whole_file(fs_, path(".timeindex"));
  if (!index_bytes.ok() || !time_bytes.ok()) return false;
  auto offsets = decode_offset_index(index_bytes.value());
  auto times = decode_time_index(time_bytes.value());
  for (size_t i = 0; i < offsets.size(); ++i) {
    const bool increasing = i == 0 || (offsets[i].relative_offset > offsets[i - 1].relative_offset &&
                                       offsets[i].file_position > offsets[i - 1].file_position);
    if (!increasing || offsets[i].file_position >= size_bytes_ || offsets[i].relative_offset < 0) return false;
  }
  for (size_t i = 1; i < times.size(); ++i) {
    if (times[i].timestamp <= times[i - 1].timestamp) return false;
  }
  tracked_.offset_entries = std::move(offsets);
  tracked_.time_entries = std::move(times);
  offset_entries_written_ = tracked_.offset_entries.size();
  time_entries_written_ = tracked_.time_entries.size();
  // Scan from the last indexed batch to the end for next_offset and the latest timestamps.
  model::file_position position{tracked_.offset_entries.empty() ? 0 : tracked_.offset_entries.back().file_position};
  if (!tracked_.time_entries.empty()) tracked_.max_timestamp = tracked_.time_entries.back().timestamp;
  tracked_.bytes_since_index_entry = 0;
  bool first = true;
  while (true) {
    auto located = header_at(position);
    if (!located.ok()) return false;
    if (!located.value()) break;
    const auto& h = located.value()->header;
    if (first && !tracked_.offset_entries.empty() &&
        h.last_offset() != base_offset_ + tracked_.offset_entries.back().relative_offset) {
      return false;
    }
    first = false;
    tracked_.bytes_since_index_entry += h.size_bytes();
    if (h.max_timestamp > tracked_.max_timestamp) {
      tracked_.max_timestamp = h.max_timestamp;
      tracked_.offset_of_max_timestamp = h.last_offset();
    }
    tracked_.next_offset = h.last_offset() + 1;
    position = model::file_position{position.value() + h.size_bytes()};
  }
  if (position.value() != size_bytes_) return false;  // bytes after the last whole batch: recover
  tracked_.end_position = size_bytes_;
  if (size_bytes_ > 0) {
    tracked_.retention_timestamp = effective_timestamp(tracked_.max_timestamp, now_ms, retention_ms);
    tracked_.first_append_ms = now_ms;
  }
  return true;
}

result<uint64_t> segment::recover(int64_t now_ms, int64_t retention_ms, int32_t index_interval_bytes,
                                  size_t* batches) {
  tracked_ = segment_tracker(base_offset_);
  model::file_position position{0};
  model::bytes buffer;
  while (position.value() + codec::batch_header_bytes <= size_bytes_) {
    std::array<std::byte, codec::batch_header_bytes> head{};
    auto n = log_->read_at(position, head);
    if (!n.ok()) return storage_error(n.error());
    auto header = codec::decode_header(head);
    if (!header.ok() || position.value() + header->size_bytes() > size_bytes_) break;
    // Offsets must ascend from the previous batch (compaction leaves gaps between batches,
    // log_cleaner.h); anything else is garbage.
    if (header->base_offset < tracked_.next_offset || header->last_offset_delta < 0 ||
        header->last_offset() - base_offset_ > std::numeric_limits<int32_t>::max()) {
      break;
    }
    buffer.clear();
    RINGLOG_TRY(read_into(position, header->size_bytes(), buffer));
    if (!codec::validate_batch(buffer).ok()) break;
    tracked_.track(header.value(), position, now_ms, retention_ms, index_interval_bytes);
    position = model::file_position{position.value() + header->size_bytes()};
    if (batches != nullptr) ++*batches;
  }
  const uint64_t cut = size_bytes_ - position.value();
  tail_loaded_ = false;
  if (cut > 0) {
    auto t = log_->truncate(position.value());
    if (!t.ok()) return storage_error(t.error());
    size_bytes_ = position.value();
  }
  dirty_ = true;
  RINGLOG_TRY(rewrite_index_files());
  RINGLOG_TRY(sync(true));
  if (size_bytes_ > 0) tracked_.first_append_ms = now_ms;
  return cut;
}

result<void> segment::rewrite_index_files() {
  // Empty both files, then write every in-memory entry as pending.
  RINGLOG_TRY(open_index_files());
  auto t1 = index_->truncate(0);
  if (!t1.ok()) return storage_error(t1.error());
  auto t2 = time_index_->truncate(0);
  if (!t2.ok()) return storage_error(t2.error());
  offset_entries_written_ = 0;
  time_entries_written_ = 0;
  index_dirty_ = true;
  return write_pending_index_entries();
}

result<void> segment::write_pending_index_entries() {
  if (offset_entries_written_ == tracked_.offset_entries.size() && time_entries_written_ == tracked_.time_entries.size()) {
    return base::ok_v;
  }
  RINGLOG_TRY(open_index_files());
  const size_t new_offsets = tracked_.offset_entries.size() - offset_entries_written_;
  model::bytes index_bytes(new_offsets * constants::offset_index_entry_bytes);
  for (size_t i = 0; i < new_offsets; ++i) {
    encode_offset_index_entry(tracked_.offset_entries[offset_entries_written_ + i],
                              std::span<std::byte, 8>(index_bytes.data() + i * 8, 8));
  }
  auto w1 = index_->write_at(model::file_position{offset_entries_written_ * 8}, index_bytes);
  if (!w1.ok()) return storage_error(w1.error());
  const size_t new_times = tracked_.time_entries.size() - time_entries_written_;
  model::bytes time_bytes(new_times * constants::time_index_entry_bytes);
  for (size_t i = 0; i < new_times; ++i) {
    encode_time_index_entry(tracked_.time_entries[time_entries_written_ + i],
                            std::span<std::byte, 12>(time_bytes.data() + i * 12, 12));
  }
  auto w2 = time_index_->write_at(model::file_position{time_entries_written_ * 12}, time_bytes);
  if (!w2.ok()) return storage_error(w2.error());
  offset_entries_written_ = tracked_.offset_entries.size();
  time_entries_written_ = tracked_.time_entries.size();
  index_dirty_ = true;
  return base::ok_v;
}

result<std::optional<located_batch>> segment::find_batch(model::offset target) {
  if (target >= tracked_.next_offset) return std::optional<located_batch>{};
  const auto relative = static_cast<int32_t>(std::max<int64_t>(0, target - base_offset_));
  auto floor = floor_offset(tracked_.offset_entries, relative);
  model::file_position position{floor ? floor->file_position : 0};
  while (true) {
    auto located = header_at(position);
    if (!located.ok()) return located.error();
    if (!located.value()) return std::optional<located_batch>{};
    if (located.value()->header.last_offset() >= target) return located;
    position = model::file_position{position.value() + located.value()->header.size_bytes()};
  }
}

result<std::optional<std::pair<model::offset, model::timestamp_ms>>> segment::offset_for_timestamp(
    model::timestamp_ms timestamp, model::offset min_offset) {
  using found_t = std::optional<std::pair<model::offset, model::timestamp_ms>>;
  if (empty() || tracked_.max_timestamp < timestamp) return found_t{};
  // Every record up to the entry's offset has a timestamp <= entry.timestamp < target.
  auto before = last_before_timestamp(tracked_.time_entries, timestamp);
  const model::offset start =
      std::max(min_offset, before ? base_offset_ + (before->relative_offset + 1) : base_offset_);
  auto located = find_batch(start);
  if (!located.ok()) return located.error();
  std::optional<located_batch> current = located.value();
  model::bytes buffer;
  while (current) {
    if (current->header.max_timestamp >= timestamp) {
      buffer.clear();
      RINGLOG_TRY(read_into(current->position, current->header.size_bytes(), buffer));
      auto records = codec::decode_records(buffer);
      if (!records.ok()) return error{errc::corrupt_message, records.error().message};
      for (const auto& r : records.value()) {
        if (r.record_offset >= start && r.timestamp >= timestamp) return found_t{{r.record_offset, r.timestamp}};
      }
    }
    auto next = header_at(model::file_position{current->position.value() + current->header.size_bytes()});
    if (!next.ok()) return next.error();
    current = next.value();
  }
  return found_t{};
}

result<void> segment::truncate_to(model::offset offset, int64_t now_ms, int64_t retention_ms,
                                  int32_t index_interval_bytes) {
  if (offset >= tracked_.next_offset) return base::ok_v;
  auto located = find_batch(offset);
  if (!located.ok()) return located.error();
  const uint64_t cut_at = located.value() ? located.value()->position.value() : size_bytes_;
  auto t = log_->truncate(cut_at);
  if (!t.ok()) return storage_error(t.error());
  size_bytes_ = cut_at;
  // Rebuild in-memory state and the indexes from what is left.
  auto re = recover(now_ms, retention_ms, index_interval_bytes, nullptr);
  if (!re.ok()) return re.error();
  return base::ok_v;
}

result<void> segment::sync(bool with_indexes) {
  if (dirty_) {
    auto s = log_->datasync();
    if (!s.ok()) return storage_error(s.error());
    dirty_ = false;
  }
  if (with_indexes) RINGLOG_TRY(write_pending_index_entries());
  if (with_indexes && index_dirty_ && index_ && time_index_) {
    auto a = index_->datasync();
    if (!a.ok()) return storage_error(a.error());
    auto b = time_index_->datasync();
    if (!b.ok()) return storage_error(b.error());
    index_dirty_ = false;
  }
  return base::ok_v;
}

result<void> segment::remove_files(txn_index_file txn_index) {
  log_.reset();
  log_direct_.reset();
  index_.reset();
  time_index_.reset();
  for (const char* suffix : {".log", ".index", ".timeindex", ".txnindex"}) {
    if (txn_index == txn_index_file::keep && std::string_view(suffix) == ".txnindex") continue;
    auto r = fs_.remove(path(suffix));
    if (!r.ok() && r.error().code != io::errc::not_found) return storage_error(r.error());
  }
  return base::ok_v;
}

}  // namespace ringlog::storage
