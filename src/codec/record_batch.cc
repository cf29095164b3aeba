#include "ringlog/codec/record_batch.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "big_endian.h"
#include "ringlog/base/constants.h"
#include "ringlog/codec/compression.h"
#include "ringlog/codec/crc32c.h"
#include "ringlog/codec/varint.h"

namespace ringlog::codec {
namespace {

using detail::get_be;
using detail::put_be;
using base::ok_v;

// Byte positions of the header fields (see the layout in record_batch.h).
constexpr size_t base_offset_position = 0;
constexpr size_t batch_length_position = 8;
constexpr size_t partition_leader_epoch_position = 12;
constexpr size_t magic_position = 16;
constexpr size_t last_offset_delta_position = 23;
constexpr size_t base_timestamp_position = 27;
constexpr size_t max_timestamp_position = 35;
constexpr size_t producer_id_position = 43;
constexpr size_t producer_epoch_position = 51;
constexpr size_t base_sequence_position = 53;
constexpr size_t records_count_position = 57;

constexpr int16_t compression_mask = 0x07;
constexpr int16_t timestamp_type_flag = 0x08;
constexpr int16_t transactional_flag = 0x10;
constexpr int16_t control_flag = 0x20;

/// Smallest legal batch_length: the header after batch_length with no records (61 - 12).
constexpr int32_t batch_length_min = static_cast<int32_t>(batch_header_bytes - batch_log_overhead_bytes);
/// A record is at least 7 bytes (length, attributes, timestamp_delta, offset_delta, key_length,
/// value_length, headers_count: one byte each); bounds the vector reserved before decoding.
constexpr size_t record_bytes_min = 7;
/// A header is at least 2 bytes (key_length, value_length).
constexpr size_t header_bytes_min = 2;

/// Two's-complement wrapping arithmetic for timestamp deltas: encode and decode wrap the same
/// way, so any pair of int64 timestamps round-trips (Java's long arithmetic does the same).
int64_t wrapping_sub(int64_t a, int64_t b) noexcept {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapping_add(int64_t a, int64_t b) noexcept {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

error annotate(error e, std::string_view context) {
  e.message = std::string(context) + ": " + e.message;
  return e;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

/// The codecs Kafka defines (0-4) are supported; the undefined values 5-7 are refused.
result<void> check_compression(int codec_value) {
  if (codec_value >= 0 && codec_value <= static_cast<int>(model::compression::zstd)) return ok_v;
  return error{errc::unsupported_compression,
               "compression value " + std::to_string(codec_value) + " is undefined (Kafka defines 0-4)"};
}

/// A bounds-checked reader over one span: every read fails with `truncated` instead of reading
/// past the end.
class cursor {
 public:
  explicit cursor(std::span<const std::byte> in) : in_(in) {}
  [[nodiscard]] size_t remaining() const { return in_.size() - pos_; }

  result<int8_t> read_int8() {
    if (remaining() < 1) return error{errc::truncated, "no byte left"};
    return static_cast<int8_t>(in_[pos_++]);
  }
  result<int64_t> read_varint() { return get_varint(in_, pos_); }
  result<int32_t> read_varint32() { return get_varint32(in_, pos_); }
  result<std::span<const std::byte>> read_bytes(size_t n) {
    if (n > remaining()) {
      return error{errc::truncated,
                   "needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left"};
    }
    auto out = in_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

 private:
  std::span<const std::byte> in_;
  size_t pos_ = 0;
};

using byte_span = std::span<const std::byte>;

/// Reads a varint32 length then that many bytes (in place); -1 means null, below -1 is invalid_length.
result<std::optional<byte_span>> read_nullable_bytes(cursor& c) {
  auto length = c.read_varint32();
  if (!length.ok()) return length.error();
  if (*length == -1) return std::optional<byte_span>{};
  if (*length < -1) return error{errc::invalid_length, "length " + std::to_string(*length) + " below -1"};
  auto data = c.read_bytes(static_cast<size_t>(*length));
  if (!data.ok()) return data.error();
  return std::optional<byte_span>(*data);
}

result<record_view::header> read_header(cursor& c) {
  record_view::header h;
  auto key_length = c.read_varint32();
  if (!key_length.ok()) return annotate(key_length.error(), "header key length");
  if (*key_length < 0) {
    return error{errc::invalid_record, "header key length " + std::to_string(*key_length) + " (keys are not nullable)"};
  }
  auto key = c.read_bytes(static_cast<size_t>(*key_length));
  if (!key.ok()) return annotate(key.error(), "header key");
  h.key = std::string_view(reinterpret_cast<const char*>(key->data()), key->size());
  auto value = read_nullable_bytes(c);
  if (!value.ok()) return annotate(value.error(), "header value");
  h.value = *value;
  return h;
}

/// Fills `headers` (cleared first; its capacity is reused from record to record).
result<void> read_headers(cursor& c, std::vector<record_view::header>& headers) {
  headers.clear();
  auto count = c.read_varint32();
  if (!count.ok()) return annotate(count.error(), "headers count");
  if (*count < 0) return error{errc::invalid_record, "headers count " + std::to_string(*count) + " is negative"};
  if (*count > constants::record_headers_max) {
    return error{errc::too_large, "headers count " + std::to_string(*count) + " above record_headers_max " +
                                      std::to_string(constants::record_headers_max)};
  }
  headers.reserve(std::min(static_cast<size_t>(*count), c.remaining() / header_bytes_min));
  for (int32_t i = 0; i < *count; ++i) {
    auto h = read_header(c);
    if (!h.ok()) return annotate(h.error(), "header " + std::to_string(i));
    headers.push_back(*h);
  }
  return ok_v;
}

/// Reads one record at the front of `section` into `r`, in place. `previous_offset_delta`
/// enforces strictly increasing offset deltas in [0, last_offset_delta].
result<void> read_record(cursor& section, const batch_header& header, int32_t& previous_offset_delta, record_view& r) {
  auto length = section.read_varint32();
  if (!length.ok()) return annotate(length.error(), "length");
  if (*length < 0) return error{errc::invalid_length, "length " + std::to_string(*length) + " is negative"};
  auto body_bytes = section.read_bytes(static_cast<size_t>(*length));
  if (!body_bytes.ok()) return annotate(body_bytes.error(), "body");
  cursor body(*body_bytes);

  auto attributes = body.read_int8();  // unused in v2; Kafka ignores it, so do we
  if (!attributes.ok()) return annotate(attributes.error(), "attributes");
  auto timestamp_delta = body.read_varint();
  if (!timestamp_delta.ok()) return annotate(timestamp_delta.error(), "timestamp_delta");
  auto offset_delta = body.read_varint32();
  if (!offset_delta.ok()) return annotate(offset_delta.error(), "offset_delta");
  if (*offset_delta <= previous_offset_delta || *offset_delta > header.last_offset_delta) {
    return error{errc::invalid_record, "offset_delta " + std::to_string(*offset_delta) + " not in (" +
                                           std::to_string(previous_offset_delta) + ", " +
                                           std::to_string(header.last_offset_delta) + "]"};
  }
  previous_offset_delta = *offset_delta;

  r.record_offset = header.base_offset + *offset_delta;
  r.timestamp = header.timestamp_type() == model::timestamp_type::log_append_time
                    ? header.max_timestamp
                    : wrapping_add(header.base_timestamp, *timestamp_delta);
  auto key = read_nullable_bytes(body);
  if (!key.ok()) return annotate(key.error(), "key");
  r.key = *key;
  auto value = read_nullable_bytes(body);
  if (!value.ok()) return annotate(value.error(), "value");
  r.value = *value;
  RINGLOG_TRY(read_headers(body, r.headers));
  if (body.remaining() != 0) {
    return error{errc::invalid_record, "length " + std::to_string(*length) + " leaves " +
                                           std::to_string(body.remaining()) + " bytes after the headers"};
  }
  return ok_v;
}

std::optional<model::bytes> copy_of(const std::optional<byte_span>& b) {
  if (!b) return std::nullopt;
  return model::bytes(b->begin(), b->end());
}

/// The record `v` shows, copied out of its batch.
model::record to_record(const record_view& v) {
  model::record r;
  r.record_offset = v.record_offset;
  r.timestamp = v.timestamp;
  r.key = copy_of(v.key);
  r.value = copy_of(v.value);
  r.headers.reserve(v.headers.size());
  for (const auto& h : v.headers) r.headers.push_back({std::string(h.key), copy_of(h.value)});
  return r;
}

size_t nullable_bytes_size(const std::optional<model::bytes>& b) noexcept {
  return b ? varint_size(static_cast<int64_t>(b->size())) + b->size() : varint_size(-1);
}

void put_nullable_bytes(model::bytes& out, const std::optional<model::bytes>& b) {
  if (!b) {
    put_varint(out, -1);
    return;
  }
  put_varint(out, static_cast<int64_t>(b->size()));
  out.insert(out.end(), b->begin(), b->end());
}

/// Field sizes the decoder would refuse are refused here, so every encoded batch decodes.
result<void> check_record_limits(const model::record& r, size_t index) {
  constexpr auto bytes_max = static_cast<size_t>(constants::batch_bytes_max);
  size_t total = (r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0);
  for (const auto& h : r.headers) total += h.key.size() + (h.value ? h.value->size() : 0);
  if (total > bytes_max) {
    return error{errc::too_large, "record " + std::to_string(index) + " holds " + std::to_string(total) +
                                      " bytes, above batch_bytes_max " + std::to_string(bytes_max)};
  }
  if (r.headers.size() > static_cast<size_t>(constants::record_headers_max)) {
    return error{errc::too_large, "record " + std::to_string(index) + " has " + std::to_string(r.headers.size()) +
                                      " headers, above record_headers_max " +
                                      std::to_string(constants::record_headers_max)};
  }
  return ok_v;
}

/// Bytes of one record's body: what follows its length varint (attributes, timestamp and offset
/// deltas, key, value, headers), as put_record writes it.
size_t record_body_size(const model::record& r, int32_t offset_delta, model::timestamp_ms base_timestamp) noexcept {
  size_t n = 1 + varint_size(wrapping_sub(r.timestamp, base_timestamp)) + varint_size(offset_delta) +
             nullable_bytes_size(r.key) + nullable_bytes_size(r.value) +
             varint_size(static_cast<int64_t>(r.headers.size()));
  for (const auto& h : r.headers) {
    n += varint_size(static_cast<int64_t>(h.key.size())) + h.key.size() + nullable_bytes_size(h.value);
  }
  return n;
}

/// Appends one record (length varint + body) to `out`, written in place: `body_size` is
/// record_body_size of the same record (no scratch copy of the body, issue 32).
void put_record(model::bytes& out, const model::record& r, int32_t offset_delta, model::timestamp_ms base_timestamp,
                size_t body_size) {
  put_varint(out, static_cast<int64_t>(body_size));
  out.push_back(std::byte{0});  // attributes, unused in v2
  put_varint(out, wrapping_sub(r.timestamp, base_timestamp));
  put_varint(out, offset_delta);
  put_nullable_bytes(out, r.key);
  put_nullable_bytes(out, r.value);
  put_varint(out, static_cast<int64_t>(r.headers.size()));
  for (const auto& h : r.headers) {
    put_varint(out, static_cast<int64_t>(h.key.size()));
    const auto* key = reinterpret_cast<const std::byte*>(h.key.data());
    out.insert(out.end(), key, key + h.key.size());
    put_nullable_bytes(out, h.value);
  }
}

int16_t attributes_of(const batch_options& options) {
  int16_t a = static_cast<int16_t>(static_cast<int16_t>(options.compression) & compression_mask);
  if (options.timestamp_type == model::timestamp_type::log_append_time) a |= timestamp_type_flag;
  if (options.is_transactional) a |= transactional_flag;
  if (options.is_control) a |= control_flag;
  return a;
}

void write_crc(std::span<std::byte> batch) {
  const uint32_t crc = crc32c(std::span<const std::byte>(batch).subspan(batch_attributes_position));
  put_be(batch.data() + batch_crc_position, crc);
}

/// The header fields a batch is written with (encode_batch's options, or a filtered original's).
struct header_fields {
  model::offset base_offset;
  model::leader_epoch partition_leader_epoch;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  model::timestamp_ms base_timestamp = model::no_timestamp;
  model::timestamp_ms max_timestamp = model::no_timestamp;
  model::producer_id producer;
  model::producer_epoch producer_epoch_value;
  model::sequence base_sequence;
  int32_t records_count = 0;
};

/// A whole batch: the 61-byte header of `f` and the records, each at offset delta
/// `delta_of(i)`, compressed with the codec of f.attributes (the attributes' other bits as
/// given), then the CRC. Uncompressed records are written straight after the header, in one
/// buffer sized once: the records are copied once (issue 32: the copies into a scratch body, a
/// section and then the batch, and the zeroing of the batch, were a tenth of the HTTP produce's CPU).
/// Errors: too_large (a record past check_record_limits, the section or the batch past
/// batch_bytes_max), compression's.
template <typename DeltaOf>
result<model::bytes> write_batch(const header_fields& f, std::span<const model::record> records, DeltaOf delta_of,
                                 std::optional<int32_t> compression_level) {
  constexpr auto bytes_max = static_cast<size_t>(constants::batch_bytes_max);
  std::vector<size_t> body_sizes(records.size());
  size_t section_bytes = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    RINGLOG_TRY(check_record_limits(records[i], i));
    body_sizes[i] = record_body_size(records[i], delta_of(i), f.base_timestamp);
    section_bytes += varint_size(static_cast<int64_t>(body_sizes[i])) + body_sizes[i];
    if (section_bytes > bytes_max) {
      return error{errc::too_large, "records section passes batch_bytes_max " + std::to_string(bytes_max) +
                                        " at record " + std::to_string(i)};
    }
  }
  const auto codec_value = static_cast<model::compression>(f.attributes & compression_mask);
  const bool compressed = !records.empty() && codec_value != model::compression::none;
  model::bytes out;
  // Compressed: the records go to their own section first, and the batch is sized for its output.
  model::bytes section;
  model::bytes& records_out = compressed ? section : out;
  records_out.reserve((compressed ? 0 : batch_header_bytes) + section_bytes);
  if (!compressed) records_out.resize(batch_header_bytes);
  for (size_t i = 0; i < records.size(); ++i) {
    put_record(records_out, records[i], delta_of(i), f.base_timestamp, body_sizes[i]);
  }
  if (compressed) {
    auto packed = compress(codec_value, section, compression_level);
    if (!packed.ok()) return packed.error();
    out.reserve(batch_header_bytes + packed->size());
    out.resize(batch_header_bytes);
    out.insert(out.end(), packed->begin(), packed->end());
  }
  if (out.size() > bytes_max) {
    return error{errc::too_large, "batch of " + std::to_string(out.size()) + " bytes above batch_bytes_max " +
                                      std::to_string(bytes_max)};
  }
  std::byte* p = out.data();
  put_be(p + base_offset_position, f.base_offset.value());
  put_be(p + batch_length_position, static_cast<int32_t>(out.size() - batch_log_overhead_bytes));
  put_be(p + partition_leader_epoch_position, f.partition_leader_epoch.value());
  put_be(p + magic_position, batch_magic_v2);
  put_be(p + batch_attributes_position, f.attributes);
  put_be(p + last_offset_delta_position, f.last_offset_delta);
  put_be(p + base_timestamp_position, f.base_timestamp);
  put_be(p + max_timestamp_position, f.max_timestamp);
  put_be(p + producer_id_position, f.producer.value());
  put_be(p + producer_epoch_position, f.producer_epoch_value.value());
  put_be(p + base_sequence_position, f.base_sequence.value());
  put_be(p + records_count_position, f.records_count);
  write_crc(out);
  return out;
}

}  // namespace

result<model::bytes> encode_batch(const batch_options& options, std::span<const model::record> records) {
  RINGLOG_ASSERT(!records.empty(), "encode_batch needs at least one record");
  RINGLOG_ASSERT_OP(records.size(), <=, static_cast<size_t>(constants::batch_records_max));
  RINGLOG_TRY(check_compression(static_cast<int>(options.compression)));
  header_fields f;
  f.base_offset = options.base_offset;
  f.partition_leader_epoch = options.partition_leader_epoch;
  f.attributes = attributes_of(options);
  f.last_offset_delta = static_cast<int32_t>(records.size() - 1);
  f.base_timestamp = records.front().timestamp;
  f.max_timestamp = f.base_timestamp;
  for (const auto& r : records) f.max_timestamp = std::max(f.max_timestamp, r.timestamp);
  f.producer = options.producer;
  f.producer_epoch_value = options.producer_epoch_value;
  f.base_sequence = options.base_sequence;
  f.records_count = static_cast<int32_t>(records.size());
  return write_batch(f, records, [](size_t i) { return static_cast<int32_t>(i); }, options.compression_level);
}

result<model::bytes> encode_filtered_batch(const batch_header& original, std::span<const model::record> kept,
                                           std::optional<model::timestamp_ms> delete_horizon_ms) {
  RINGLOG_ASSERT_OP(kept.size(), <=, static_cast<size_t>(original.last_offset_delta) + 1);
  int16_t attributes = original.attributes;
  if (kept.empty()) attributes = static_cast<int16_t>(attributes & ~compression_mask);
  // KIP-534: the base timestamp is the delete horizon while bit 6 is set, else a record's time.
  model::timestamp_ms base_timestamp = original.base_timestamp;
  if (delete_horizon_ms) {
    attributes = static_cast<int16_t>(attributes | batch_delete_horizon_flag);
    base_timestamp = *delete_horizon_ms;
  } else {
    attributes = static_cast<int16_t>(attributes & ~batch_delete_horizon_flag);
    if (original.has_delete_horizon()) base_timestamp = kept.empty() ? original.max_timestamp : kept.front().timestamp;
  }
  RINGLOG_TRY(check_compression(attributes & compression_mask));
  int64_t previous = -1;
  for (const auto& r : kept) {
    const int64_t delta = r.record_offset - original.base_offset;
    RINGLOG_ASSERT(delta > previous && delta <= original.last_offset_delta, "kept records ascend inside the batch");
    previous = delta;
  }
  header_fields f;
  f.base_offset = original.base_offset;
  f.partition_leader_epoch = original.partition_leader_epoch;
  f.attributes = attributes;
  f.last_offset_delta = original.last_offset_delta;
  f.base_timestamp = base_timestamp;
  f.max_timestamp = original.max_timestamp;
  f.producer = original.producer;
  f.producer_epoch_value = original.producer_epoch_value;
  f.base_sequence = original.base_sequence;
  f.records_count = static_cast<int32_t>(kept.size());
  auto delta_of = [&](size_t i) { return static_cast<int32_t>(kept[i].record_offset - original.base_offset); };
  return write_batch(f, kept, delta_of, std::nullopt);
}

result<batch_header> decode_header(std::span<const std::byte> in) {
  // The magic byte decides how the rest is laid out (v0/v1 differ), so it is checked first.
  if (in.size() <= magic_position) {
    return error{errc::truncated, "batch header: " + std::to_string(in.size()) + " bytes, magic is at 16"};
  }
  const auto magic = static_cast<int8_t>(in[magic_position]);
  if (magic != batch_magic_v2) {
    return error{errc::unknown_magic, "magic " + std::to_string(magic) + ", only 2 is supported"};
  }
  if (in.size() < batch_header_bytes) {
    return error{errc::truncated, "batch header: " + std::to_string(in.size()) + " of 61 bytes"};
  }
  const std::byte* p = in.data();
  batch_header h;
  h.base_offset = model::offset(get_be<int64_t>(p + base_offset_position));
  h.batch_length = get_be<int32_t>(p + batch_length_position);
  h.partition_leader_epoch = model::leader_epoch(get_be<int32_t>(p + partition_leader_epoch_position));
  h.magic = magic;
  h.crc = get_be<uint32_t>(p + batch_crc_position);
  h.attributes = get_be<int16_t>(p + batch_attributes_position);
  h.last_offset_delta = get_be<int32_t>(p + last_offset_delta_position);
  h.base_timestamp = get_be<int64_t>(p + base_timestamp_position);
  h.max_timestamp = get_be<int64_t>(p + max_timestamp_position);
  h.producer = model::producer_id(get_be<int64_t>(p + producer_id_position));
  h.producer_epoch_value = model::producer_epoch(get_be<int16_t>(p + producer_epoch_position));
  h.base_sequence = model::sequence(get_be<int32_t>(p + base_sequence_position));
  h.records_count = get_be<int32_t>(p + records_count_position);
  if (h.batch_length < batch_length_min || h.batch_length > constants::batch_bytes_max) {
    return error{errc::invalid_length, "batch_length " + std::to_string(h.batch_length) + " not in [" +
                                           std::to_string(batch_length_min) + ", " +
                                           std::to_string(constants::batch_bytes_max) + "]"};
  }
  return h;
}

result<batch_header> validate_batch(std::span<const std::byte> in) {
  auto header = decode_header(in);
  if (!header.ok()) return header;
  const batch_header& h = *header;
  if (in.size() < h.size_bytes()) {
    return error{errc::truncated,
                 "batch: " + std::to_string(in.size()) + " of " + std::to_string(h.size_bytes()) + " bytes"};
  }
  if (in.size() > h.size_bytes()) {
    return error{errc::invalid_length, "batch_length says " + std::to_string(h.size_bytes()) + " bytes, given " +
                                           std::to_string(in.size())};
  }
  const uint32_t computed = crc32c(in.subspan(batch_attributes_position));
  if (computed != h.crc) {
    return error{errc::crc_mismatch, "stored crc " + hex32(h.crc) + ", computed " + hex32(computed)};
  }
  RINGLOG_TRY(check_compression(h.attributes & compression_mask));
  if (h.records_count < 0) {
    return error{errc::invalid_record, "records_count " + std::to_string(h.records_count) + " is negative"};
  }
  if (h.records_count > constants::batch_records_max) {
    return error{errc::too_large, "records_count " + std::to_string(h.records_count) + " above batch_records_max " +
                                      std::to_string(constants::batch_records_max)};
  }
  // Compaction may remove records but keeps last_offset_delta, so the count may be smaller.
  if (h.last_offset_delta < 0 || static_cast<int64_t>(h.records_count) > int64_t{h.last_offset_delta} + 1) {
    return error{errc::invalid_record, "records_count " + std::to_string(h.records_count) +
                                           " does not fit last_offset_delta " + std::to_string(h.last_offset_delta)};
  }
  int64_t last_offset = 0;
  if (__builtin_add_overflow(h.base_offset.value(), int64_t{h.last_offset_delta}, &last_offset)) {
    return error{errc::invalid_record, "base_offset + last_offset_delta overflows int64"};
  }
  return header;
}

result<void> visit_records(std::span<const std::byte> in, const batch_header& h,
                           const std::function<result<void>(const record_view&)>& visit) {
  std::span<const std::byte> section = in.subspan(batch_header_bytes);
  model::bytes decompressed;
  if (h.compression() != model::compression::none) {
    auto d = decompress(h.compression(), section);
    if (!d.ok()) return d.error();
    decompressed = std::move(*d);
    section = decompressed;
  }
  cursor c(section);
  int32_t previous_offset_delta = -1;
  record_view r;
  for (int32_t i = 0; i < h.records_count; ++i) {
    if (auto read = read_record(c, h, previous_offset_delta, r); !read.ok()) {
      return annotate(read.error(), "record " + std::to_string(i));
    }
    RINGLOG_TRY(visit(r));
  }
  if (c.remaining() != 0) {
    return error{errc::invalid_record, std::to_string(c.remaining()) + " bytes after the last of " +
                                           std::to_string(h.records_count) + " records"};
  }
  return ok_v;
}

result<std::vector<model::record>> decode_records(std::span<const std::byte> in) {
  auto header = validate_batch(in);
  if (!header.ok()) return header.error();
  const batch_header& h = *header;
  std::vector<model::record> records;
  const size_t section_bytes = in.size() - batch_header_bytes;
  records.reserve(std::min(static_cast<size_t>(h.records_count), section_bytes / record_bytes_min));
  auto visited = visit_records(in, h, [&records](const record_view& r) -> result<void> {
    records.push_back(to_record(r));
    return ok_v;
  });
  if (!visited.ok()) return visited.error();
  return records;
}

void set_base_offset(std::span<std::byte> batch, model::offset base_offset) {
  RINGLOG_ASSERT_OP(batch.size(), >=, batch_header_bytes);
  put_be(batch.data() + base_offset_position, base_offset.value());
}

void set_partition_leader_epoch(std::span<std::byte> batch, model::leader_epoch epoch) {
  RINGLOG_ASSERT_OP(batch.size(), >=, batch_header_bytes);
  put_be(batch.data() + partition_leader_epoch_position, epoch.value());
}

void set_log_append_time(std::span<std::byte> batch, model::timestamp_ms now) {
  RINGLOG_ASSERT_OP(batch.size(), >=, batch_header_bytes);
  // The CRC covers [21, end): the span must be exactly one whole batch.
  RINGLOG_ASSERT_OP(batch.size(), ==,
                    static_cast<size_t>(get_be<int32_t>(batch.data() + batch_length_position)) +
                        batch_log_overhead_bytes);
  const auto attributes = get_be<int16_t>(batch.data() + batch_attributes_position);
  put_be(batch.data() + batch_attributes_position, static_cast<int16_t>(attributes | timestamp_type_flag));
  put_be(batch.data() + max_timestamp_position, now);
  write_crc(batch);
}

result<model::bytes> encode_control_batch(const batch_options& options, control_record marker,
                                          model::timestamp_ms timestamp) {
  // Key: version int16 (0) + type int16; value: version int16 (0) + coordinator_epoch int32
  // (Kafka's ControlRecordType and EndTransactionMarker).
  constexpr size_t key_bytes = 4;
  constexpr size_t value_bytes = 6;
  model::record r;
  r.timestamp = timestamp;
  r.key = model::bytes(key_bytes);
  put_be(r.key->data(), int16_t{0});
  put_be(r.key->data() + 2, static_cast<int16_t>(marker.type));
  r.value = model::bytes(value_bytes);
  put_be(r.value->data(), int16_t{0});
  put_be(r.value->data() + 2, marker.coordinator_epoch);
  batch_options control_options = options;
  control_options.is_control = true;
  control_options.is_transactional = true;
  return encode_batch(control_options, std::span<const model::record>(&r, 1));
}

result<control_record> decode_control_record(const model::record& r) {
  constexpr size_t key_bytes = 4;
  constexpr size_t value_bytes = 6;
  if (!r.key || r.key->size() < key_bytes) {
    return error{errc::invalid_record, "control record key is null or shorter than 4 bytes"};
  }
  if (get_be<int16_t>(r.key->data()) < 0) return error{errc::invalid_record, "control record key version is negative"};
  const auto type = get_be<int16_t>(r.key->data() + 2);
  if (type != static_cast<int16_t>(control_type::abort) && type != static_cast<int16_t>(control_type::commit)) {
    return error{errc::invalid_record, "control record type " + std::to_string(type) + " is not abort (0) or commit (1)"};
  }
  if (!r.value || r.value->size() < value_bytes) {
    return error{errc::invalid_record, "transaction marker value is null or shorter than 6 bytes"};
  }
  if (get_be<int16_t>(r.value->data()) < 0) {
    return error{errc::invalid_record, "transaction marker version is negative"};
  }
  return control_record{static_cast<control_type>(type), get_be<int32_t>(r.value->data() + 2)};
}

}  // namespace ringlog::codec
