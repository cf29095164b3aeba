#pragma once
// Kafka record batch, message format v2 (magic 2), byte for byte. Reference: Kafka's
// "Message Format" docs (KIP-98 introduced v2). All integers big-endian.
//
//   offset  size  field
//   0       8     base_offset             int64
//   8       4     batch_length            int32: bytes after this field (whole batch = batch_length + 12)
//   12      4     partition_leader_epoch  int32
//   16      1     magic                   int8 = 2
//   17      4     crc                     uint32 CRC-32C of bytes [21, end)
//   21      2     attributes              int16: bits 0-2 compression, 3 timestamp type,
//                                                4 transactional, 5 control, 6 delete horizon
//                                                (KIP-534: base_timestamp holds deleteHorizonMs)
//   23      4     last_offset_delta       int32
//   27      8     base_timestamp          int64 (Kafka calls it firstTimestamp)
//   35      8     max_timestamp           int64
//   43      8     producer_id             int64
//   51      2     producer_epoch          int16
//   53      4     base_sequence           int32
//   57      4     records_count           int32
//   61      ...   records (lz4 frame of them when compression = 3)
//
// A record:  length varint (bytes after it), attributes int8 (unused, 0),
//   timestamp_delta varint, offset_delta varint, key_length varint (-1 = null) + key,
//   value_length varint (-1 = null) + value, headers_count varint, then per header:
//   header_key_length varint + key (UTF-8), header_value_length varint (-1 = null) + value.
//
// base_offset and partition_leader_epoch are outside the CRC so the log can assign them in place.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ringlog/codec/errc.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"

namespace ringlog::codec {

inline constexpr size_t batch_header_bytes = 61;
/// base_offset + batch_length: the part of the header not counted in batch_length.
inline constexpr size_t batch_log_overhead_bytes = 12;
inline constexpr int8_t batch_magic_v2 = 2;
inline constexpr size_t batch_crc_position = 17;
inline constexpr size_t batch_attributes_position = 21;
/// Attribute bit 6 (KIP-534): the batch's base_timestamp is its delete horizon, the time from
/// which the log cleaner may remove its tombstones or its transaction marker. Set only by the
/// cleaner, on the first clean that sees such a record; record timestamps stay base + delta.
inline constexpr int16_t batch_delete_horizon_flag = 0x40;

struct batch_header {
  model::offset base_offset{0};
  int32_t batch_length = 0;
  model::leader_epoch partition_leader_epoch{-1};
  int8_t magic = batch_magic_v2;
  uint32_t crc = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  model::timestamp_ms base_timestamp = model::no_timestamp;
  model::timestamp_ms max_timestamp = model::no_timestamp;
  model::producer_id producer{model::no_producer_id};
  model::producer_epoch producer_epoch_value{model::no_producer_epoch};
  model::sequence base_sequence{model::no_sequence};
  int32_t records_count = 0;

  [[nodiscard]] model::compression compression() const { return static_cast<model::compression>(attributes & 0x7); }
  [[nodiscard]] model::timestamp_type timestamp_type() const {
    return (attributes & 0x8) ? model::timestamp_type::log_append_time : model::timestamp_type::create_time;
  }
  [[nodiscard]] bool is_transactional() const { return (attributes & 0x10) != 0; }
  [[nodiscard]] bool is_control() const { return (attributes & 0x20) != 0; }
  [[nodiscard]] model::offset last_offset() const { return base_offset + last_offset_delta; }
  /// KIP-534: whether base_timestamp is the delete horizon (attribute bit 6).
  [[nodiscard]] bool has_delete_horizon() const { return (attributes & batch_delete_horizon_flag) != 0; }
  /// The delete horizon in ms (Kafka's RecordBatch.deleteHorizonMs), no_timestamp when unset.
  [[nodiscard]] model::timestamp_ms delete_horizon_ms() const {
    return has_delete_horizon() ? base_timestamp : model::no_timestamp;
  }
  /// Whole batch size on disk, bytes (batch_length + 12).
  [[nodiscard]] size_t size_bytes() const { return static_cast<size_t>(batch_length) + batch_log_overhead_bytes; }
};

/// What encode_batch writes into the header; records carry key/value/headers/timestamp.
struct batch_options {
  model::offset base_offset{0};
  model::leader_epoch partition_leader_epoch{-1};
  model::compression compression = model::compression::none;
  std::optional<int32_t> compression_level;   // KIP-390; nullopt: the codec's Kafka default (compression.h)
  model::timestamp_type timestamp_type = model::timestamp_type::create_time;
  model::producer_id producer{model::no_producer_id};
  model::producer_epoch producer_epoch_value{model::no_producer_epoch};
  model::sequence base_sequence{model::no_sequence};
  bool is_transactional = false;
  bool is_control = false;
};

/// Encodes records into one v2 batch. Offset deltas are the record's index (0..n-1); the base
/// timestamp is the first record's timestamp, max_timestamp the largest. A record timestamp of
/// no_timestamp (-1) is kept as -1 (Kafka allows it). Precondition: 1 <= records.size() <=
/// batch_records_max. Errors: unsupported_compression, too_large.
result<model::bytes> encode_batch(const batch_options& options, std::span<const model::record> records);

/// Re-encodes a batch after compaction removed some of its records (Kafka's
/// MemoryRecords.filterTo): the header fields of `original` are kept (base offset, partition
/// leader epoch, last_offset_delta, base and max timestamp, attributes, producer id/epoch, base
/// sequence), each kept record keeps its offset (offset delta = record_offset - base_offset) and
/// the records section is compressed with the original codec. With no record left the batch is
/// an empty header (records_count 0, no records section, compression bits cleared), which Kafka
/// also keeps so the batch's last offset survives. Precondition: `kept` ascending by offset, each
/// offset within [base_offset, last_offset].
/// `delete_horizon_ms` (KIP-534): when set, the batch carries attribute bit 6 and base_timestamp
/// is that horizon (record timestamp deltas are taken from it, so they may be negative); when
/// nullopt the bit is cleared and base_timestamp is the original's, or, when the original held
/// a horizon, the first kept record's timestamp (max_timestamp when none is kept).
/// Errors: unsupported_compression, too_large.
result<model::bytes> encode_filtered_batch(const batch_header& original, std::span<const model::record> kept,
                                           std::optional<model::timestamp_ms> delete_horizon_ms);

/// Parses the 61-byte header at the front of `in` (no CRC check). Errors: truncated,
/// unknown_magic, invalid_length (batch_length below 49 or above batch_bytes_max).
result<batch_header> decode_header(std::span<const std::byte> in);

/// Checks a whole batch: header, in.size() == batch_length + 12, CRC-32C, attributes (known
/// compression), records_count vs last_offset_delta. Errors as decode_header plus crc_mismatch,
/// unsupported_compression, invalid_record. The count rule: 0 <= records_count <= last_offset_delta + 1
/// (compaction may drop records but keeps last_offset_delta), records_count <= batch_records_max
/// (too_large), and base_offset + last_offset_delta must not overflow.
result<batch_header> validate_batch(std::span<const std::byte> in);

/// Decodes every record of a whole batch (validating it first), with absolute offsets and
/// timestamps (log_append_time batches give every record max_timestamp). Errors: any of the
/// above, decompression_failed, invalid_varint, invalid_record, too_large. Offset deltas must
/// strictly increase within [0, last_offset_delta]; each record's length must match its fields
/// exactly and the records section must hold nothing after the last record. The per-record
/// attributes byte is ignored, as Kafka does. An lz4 frame that decompresses past
/// batch_decompressed_bytes_max, or has bytes after its end, is decompression_failed.
result<std::vector<model::record>> decode_records(std::span<const std::byte> in);

/// One record of a batch read in place: key, value and header spans point into the batch (or
/// into its decompressed records section) and live while visit_records' call does.
struct record_view {
  struct header {
    std::string_view key;
    std::optional<std::span<const std::byte>> value;   // nullopt: a null header value
  };
  model::offset record_offset{0};
  model::timestamp_ms timestamp = model::no_timestamp;
  std::optional<std::span<const std::byte>> key;     // nullopt: a null key
  std::optional<std::span<const std::byte>> value;   // nullopt: a tombstone
  std::vector<header> headers;
};

/// Reads every record of a batch validate_batch accepted (`header` its answer; no second CRC),
/// calling `visit` with each in order, without copying keys, values or headers out (issue 32:
/// Kafka produce validation decoded every record into vectors only to look at its key and
/// header names). The same checks and errors as decode_records; the first error `visit`
/// returns ends the walk and is returned.
result<void> visit_records(std::span<const std::byte> batch, const batch_header& header,
                           const std::function<result<void>(const record_view&)>& visit);

/// Rewrites base_offset in place (outside the CRC). Precondition: in.size() >= header size.
void set_base_offset(std::span<std::byte> batch, model::offset base_offset);
/// Rewrites partition_leader_epoch in place (outside the CRC).
void set_partition_leader_epoch(std::span<std::byte> batch, model::leader_epoch epoch);
/// Sets the log_append_time attribute and max_timestamp, then recomputes the CRC.
void set_log_append_time(std::span<std::byte> batch, model::timestamp_ms now);

/// Control record types (Kafka's ControlRecordType): the key of a control record.
enum class control_type : int16_t { abort = 0, commit = 1 };

/// A transaction marker as stored in a control batch: key = version int16 (0) + type int16;
/// value = version int16 (0) + coordinator_epoch int32.
struct control_record {
  control_type type = control_type::abort;
  int32_t coordinator_epoch = 0;
};

/// Encodes a control batch holding one marker (attributes: transactional + control).
result<model::bytes> encode_control_batch(const batch_options& options, control_record marker,
                                          model::timestamp_ms timestamp);
/// Reads the marker of a decoded control record. Errors: invalid_record.
result<control_record> decode_control_record(const model::record& r);

}  // namespace ringlog::codec
