// Fetch response frames with file pieces (fetch_frame.h). The layout written by hand here is
// that of Kafka's FetchResponse.json for versions 4-12, down to the partition: each partition
// is encoded by the generated codec with an empty record set, whose length prefix (and the
// tagged-field count after it, flexible versions) is then cut off and written again for the
// ranges' length. tests/kafka checks every version against encode_response_frame.

#include "fetch_frame.h"

#include <algorithm>

#include "ringlog/base/assert.h"

namespace ringlog::kafka::detail {

namespace {

using fetch_response = protocol::fetch_response_data;

/// Bytes the generated encoder writes after a partition's fields up to its records for an
/// empty, non-null record set with no tagged field: int32 0 (classic), or uvarint 1 (length +
/// 1) then uvarint 0 (no tagged fields) in flexible versions.
constexpr size_t empty_records_tail_classic = 4;
constexpr size_t empty_records_tail_flexible = 2;

bool has_no_tagged_field(const fetch_response::partition_data& p) {
  return p.diverging_epoch == fetch_response::epoch_end_offset{} &&
         p.current_leader == fetch_response::leader_id_and_epoch{} &&
         p.snapshot_id == fetch_response::snapshot_id_data{} && p.unknown_tagged_fields.empty();
}

/// Writes one partition whose records are `ranges`, adding its file pieces to `out`.
protocol::result<void> write_ranged_partition(protocol::writer& w, int16_t version, bool flexible,
                                              const fetch_response::partition_data& p,
                                              const std::vector<io::file_range>& ranges,
                                              std::vector<file_piece>& pieces, size_t& file_bytes) {
  RINGLOG_ASSERT(!p.records || p.records->empty(), "a partition sent from files has no records of its own");
  RINGLOG_ASSERT(has_no_tagged_field(p), "a partition sent from files has no tagged field");
  fetch_response::partition_data empty = p;
  empty.records = protocol::bytes{};
  protocol::writer pw;
  RINGLOG_TRY(empty.encode(pw, version));
  const protocol::bytes& encoded = pw.buffer();
  const size_t tail = flexible ? empty_records_tail_flexible : empty_records_tail_classic;
  RINGLOG_ASSERT_OP(encoded.size(), >, tail);
  for (size_t i = encoded.size() - tail; i < encoded.size(); ++i) {
    const std::byte want = flexible && i == encoded.size() - tail ? std::byte{1} : std::byte{0};
    RINGLOG_ASSERT(encoded[i] == want, "the empty record set's prefix ends the partition's encoding");
  }
  w.write_raw(std::span(encoded).first(encoded.size() - tail));
  size_t length = 0;
  for (const auto& r : ranges) length += r.length;
  RINGLOG_ASSERT_OP(length, <, static_cast<size_t>(INT32_MAX));
  if (flexible) {
    w.write_unsigned_varint(static_cast<uint32_t>(length + 1));
  } else {
    w.write_int32(static_cast<int32_t>(length));
  }
  for (const auto& r : ranges) {
    RINGLOG_ASSERT(r.source != nullptr, "a file range names its file");
    if (!pieces.empty() && pieces.back().memory_position == w.size() && pieces.back().range.source == r.source &&
        pieces.back().range.file_position.value() + pieces.back().range.length == r.file_position.value()) {
      pieces.back().range.length += r.length;   // the next batch of the same segment: one sendfile
    } else {
      pieces.push_back(file_piece{w.size(), r});
    }
  }
  file_bytes += length;
  if (flexible) w.write_unsigned_varint(0);   // the partition's tagged fields: none
  return base::ok_v;
}

}  // namespace

protocol::result<response_frame> encode_fetch_frame(int16_t version, int32_t correlation_id,
                                                    const protocol::fetch_response_data& body,
                                                    const fetch_frame_ranges& ranges) {
  RINGLOG_ASSERT_OP(version, >=, fetch_frame_version_min);
  RINGLOG_ASSERT_OP(version, <=, fetch_frame_version_max);
  RINGLOG_ASSERT_OP(ranges.size(), ==, body.responses.size());
  RINGLOG_ASSERT(body.unknown_tagged_fields.empty(), "no tagged field at the top of a Fetch answer");
  const bool flexible = fetch_response::is_flexible(version);
  auto header_version = protocol::response_header_version(fetch_response::api_key, version);
  if (!header_version.ok()) return header_version.error();
  protocol::writer w;
  w.write_int32(0);   // the size, patched below
  protocol::response_header_data header;
  header.correlation_id = correlation_id;
  RINGLOG_TRY(header.encode(w, *header_version));
  w.write_int32(body.throttle_time_ms);   // v1+
  if (version >= 7) {                     // KIP-227's top-level error and session id
    w.write_int16(body.error_code);
    w.write_int32(body.session_id);
  }
  std::vector<file_piece> pieces;
  size_t file_bytes = 0;
  RINGLOG_TRY(w.write_array_length(body.responses.size(), flexible));
  for (size_t t = 0; t < body.responses.size(); ++t) {
    const auto& topic = body.responses[t];
    RINGLOG_ASSERT(topic.unknown_tagged_fields.empty(), "no tagged field on a topic of a Fetch answer");
    RINGLOG_ASSERT_OP(ranges[t].size(), ==, topic.partitions.size());
    RINGLOG_TRY(w.write_string(topic.topic, flexible));
    RINGLOG_TRY(w.write_array_length(topic.partitions.size(), flexible));
    for (size_t p = 0; p < topic.partitions.size(); ++p) {
      if (ranges[t][p].empty()) {
        RINGLOG_TRY(topic.partitions[p].encode(w, version));
      } else {
        RINGLOG_TRY(write_ranged_partition(w, version, flexible, topic.partitions[p], ranges[t][p], pieces, file_bytes));
      }
    }
    if (flexible) w.write_unsigned_varint(0);   // the topic's tagged fields: none
  }
  if (flexible) w.write_unsigned_varint(0);     // the response's tagged fields: none before v16
  const size_t total = w.size() + file_bytes - protocol::frame_size_bytes;
  RINGLOG_ASSERT_OP(total, <=, static_cast<size_t>(INT32_MAX));
  w.patch_int32(0, static_cast<int32_t>(total));
  response_frame out(std::move(w).take());
  out.file_pieces = std::move(pieces);
  return out;
}

}  // namespace ringlog::kafka::detail
