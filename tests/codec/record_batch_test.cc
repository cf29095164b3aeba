#include <doctest.h>

#include <lz4frame.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ringlog/base/constants.h"
#include "ringlog/codec/crc32c.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/codec/varint.h"

using namespace ringlog;
using codec::errc;
using model::bytes;
using model::to_bytes;

namespace {

model::record make_record(model::timestamp_ms ts, std::optional<std::string> key, std::optional<std::string> value,
                          std::vector<model::record_header> headers = {}) {
  model::record r;
  r.timestamp = ts;
  if (key) r.key = to_bytes(*key);
  if (value) r.value = to_bytes(*value);
  r.headers = std::move(headers);
  return r;
}

/// A varied set: null key, null value, empty key/value, headers with a null value, timestamps
/// that go backwards (negative deltas) and -1.
std::vector<model::record> sample_records(size_t n) {
  std::vector<model::record> records;
  for (size_t i = 0; i < n; ++i) {
    const auto ts = static_cast<model::timestamp_ms>(1'700'000'000'000 + ((i % 3 == 1) ? -int64_t(i) * 1000 : int64_t(i)));
    std::optional<std::string> key;
    if (i % 4 != 0) key = "key-" + std::to_string(i);
    if (i % 7 == 3) key = "";
    std::optional<std::string> value = std::string(i % 50, static_cast<char>('a' + i % 26));
    if (i % 5 == 2) value = std::nullopt;
    std::vector<model::record_header> headers;
    for (size_t h = 0; h < i % 4; ++h) {
      model::record_header hdr{"h" + std::to_string(h), to_bytes("v" + std::to_string(i))};
      if (h == 1) hdr.value = std::nullopt;
      headers.push_back(hdr);
    }
    records.push_back(make_record(ts, key, value, headers));
  }
  if (n > 2) records[2].timestamp = model::no_timestamp;
  return records;
}

codec::batch_options options_with(model::compression c) {
  codec::batch_options o;
  o.base_offset = model::offset(1000);
  o.partition_leader_epoch = model::leader_epoch(7);
  o.compression = c;
  o.producer = model::producer_id(42);
  o.producer_epoch_value = model::producer_epoch(3);
  o.base_sequence = model::sequence(9);
  return o;
}

void fix_crc(bytes& batch) {
  const uint32_t crc = codec::crc32c(std::span<const std::byte>(batch).subspan(codec::batch_attributes_position));
  for (size_t i = 0; i < 4; ++i) {
    batch[codec::batch_crc_position + i] = static_cast<std::byte>(crc >> (8 * (3 - i)));
  }
}

template <typename T>
void put_be_at(bytes& b, size_t pos, T v) {
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < sizeof(T); ++i) b[pos + i] = static_cast<std::byte>(static_cast<U>(v) >> (8 * (sizeof(T) - 1 - i)));
}

/// A batch with a hand-written records section and a valid CRC, to reach record-level checks.
bytes raw_batch(const bytes& section, int32_t records_count, int32_t last_offset_delta, int16_t attributes = 0) {
  bytes b(codec::batch_header_bytes);
  put_be_at(b, 8, static_cast<int32_t>(codec::batch_header_bytes + section.size() - 12));
  put_be_at(b, 12, int32_t{-1});
  b[16] = std::byte{2};
  put_be_at(b, 21, attributes);
  put_be_at(b, 23, last_offset_delta);
  put_be_at(b, 27, int64_t{100});
  put_be_at(b, 35, int64_t{100});
  put_be_at(b, 43, int64_t{-1});
  put_be_at(b, 51, int16_t{-1});
  put_be_at(b, 53, int32_t{-1});
  put_be_at(b, 57, records_count);
  b.insert(b.end(), section.begin(), section.end());
  fix_crc(b);
  return b;
}

/// One record body (without its length prefix) built from raw varints.
bytes record_with_length(const bytes& body) {
  bytes out;
  codec::put_varint(out, static_cast<int64_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

bytes varints(std::initializer_list<int64_t> values, bool attributes_byte = true) {
  bytes out;
  if (attributes_byte) out.push_back(std::byte{0});
  for (int64_t v : values) codec::put_varint(out, v);
  return out;
}

errc decode_error(const bytes& batch) {
  auto r = codec::decode_records(batch);
  REQUIRE_FALSE(r.ok());
  return r.error().code;
}

void check_round_trip(model::compression c, const std::vector<model::record>& records) {
  const auto options = options_with(c);
  auto encoded = codec::encode_batch(options, records);
  REQUIRE(encoded.ok());
  auto header = codec::validate_batch(*encoded);
  REQUIRE(header.ok());
  CHECK(header->base_offset == model::offset(1000));
  CHECK(header->partition_leader_epoch == model::leader_epoch(7));
  CHECK(header->compression() == c);
  CHECK(header->records_count == static_cast<int32_t>(records.size()));
  CHECK(header->last_offset_delta == static_cast<int32_t>(records.size()) - 1);
  CHECK(header->last_offset() == model::offset(1000 + static_cast<int64_t>(records.size()) - 1));
  CHECK(header->base_timestamp == records.front().timestamp);
  model::timestamp_ms max_ts = records.front().timestamp;
  for (const auto& r : records) max_ts = std::max(max_ts, r.timestamp);
  CHECK(header->max_timestamp == max_ts);
  CHECK(header->producer == model::producer_id(42));
  CHECK(header->producer_epoch_value == model::producer_epoch(3));
  CHECK(header->base_sequence == model::sequence(9));
  CHECK(header->size_bytes() == encoded->size());
  CHECK_FALSE(header->is_control());
  CHECK_FALSE(header->is_transactional());
  CHECK(header->timestamp_type() == model::timestamp_type::create_time);

  auto decoded = codec::decode_records(*encoded);
  REQUIRE(decoded.ok());
  REQUIRE(decoded->size() == records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    auto expected = records[i];
    expected.record_offset = model::offset(1000 + static_cast<int64_t>(i));
    CHECK((*decoded)[i] == expected);
  }
}

}  // namespace

TEST_CASE("batch round trip, uncompressed and lz4") {
  for (auto c : {model::compression::none, model::compression::gzip, model::compression::snappy, model::compression::lz4, model::compression::zstd}) {
    CAPTURE(static_cast<int>(c));
    check_round_trip(c, sample_records(1));
    check_round_trip(c, sample_records(5));
    check_round_trip(c, sample_records(2000));
    check_round_trip(c, {make_record(5, std::nullopt, std::nullopt)});
    check_round_trip(c, {make_record(std::numeric_limits<int64_t>::max(), "a", "b"),
                         make_record(std::numeric_limits<int64_t>::min(), "c", "d"), make_record(-1, "e", "f")});
  }
}

TEST_CASE("lz4 batch with a large compressible payload spans several lz4 blocks") {
  std::vector<model::record> records;
  for (int i = 0; i < 50; ++i) records.push_back(make_record(i, "k", std::string(10'000, static_cast<char>('a' + i % 3))));
  auto lz4 = codec::encode_batch(options_with(model::compression::lz4), records);
  auto none = codec::encode_batch(options_with(model::compression::none), records);
  REQUIRE(lz4.ok());
  REQUIRE(none.ok());
  CHECK(lz4->size() < none->size() / 10);
  check_round_trip(model::compression::lz4, records);
}

TEST_CASE("every Kafka codec round-trips a batch") {
  for (auto c : {model::compression::gzip, model::compression::snappy, model::compression::lz4,
                 model::compression::zstd}) {
    CAPTURE(static_cast<int>(c));
    check_round_trip(c, sample_records(3));
  }
}

TEST_CASE("every truncation of a valid batch is an error") {
  for (auto c : {model::compression::none, model::compression::gzip, model::compression::snappy, model::compression::lz4, model::compression::zstd}) {
    auto encoded = codec::encode_batch(options_with(c), sample_records(20));
    REQUIRE(encoded.ok());
    for (size_t n = 0; n < encoded->size(); ++n) {
      // A copy of exactly n bytes, so reading past it is a heap overflow sanitizers see.
      bytes clipped(encoded->begin(), encoded->begin() + static_cast<std::ptrdiff_t>(n));
      auto r = codec::decode_records(clipped);
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == errc::truncated);
      CHECK_FALSE(codec::validate_batch(clipped).ok());
    }
  }
}

TEST_CASE("every flipped bit after the CRC field is crc_mismatch") {
  for (auto c : {model::compression::none, model::compression::gzip, model::compression::snappy, model::compression::lz4, model::compression::zstd}) {
    auto encoded = codec::encode_batch(options_with(c), sample_records(6));
    REQUIRE(encoded.ok());
    for (size_t byte = codec::batch_attributes_position; byte < encoded->size(); ++byte) {
      for (int bit = 0; bit < 8; ++bit) {
        bytes corrupt = *encoded;
        corrupt[byte] ^= static_cast<std::byte>(1 << bit);
        auto r = codec::decode_records(corrupt);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == errc::crc_mismatch);
      }
    }
  }
}

TEST_CASE("base_offset and partition_leader_epoch are outside the CRC") {
  auto encoded = codec::encode_batch(options_with(model::compression::none), sample_records(4));
  REQUIRE(encoded.ok());
  codec::set_base_offset(*encoded, model::offset(5'000'000'000));
  codec::set_partition_leader_epoch(*encoded, model::leader_epoch(99));
  auto header = codec::validate_batch(*encoded);
  REQUIRE(header.ok());
  CHECK(header->base_offset == model::offset(5'000'000'000));
  CHECK(header->partition_leader_epoch == model::leader_epoch(99));
  auto decoded = codec::decode_records(*encoded);
  REQUIRE(decoded.ok());
  CHECK((*decoded)[3].record_offset == model::offset(5'000'000'003));
}

TEST_CASE("set_log_append_time rewrites timestamps and the CRC") {
  for (auto c : {model::compression::none, model::compression::gzip, model::compression::snappy, model::compression::lz4, model::compression::zstd}) {
    auto encoded = codec::encode_batch(options_with(c), sample_records(5));
    REQUIRE(encoded.ok());
    const uint32_t crc_before = codec::decode_header(*encoded)->crc;
    codec::set_log_append_time(*encoded, 1'800'000'000'000);
    auto header = codec::validate_batch(*encoded);
    REQUIRE(header.ok());
    CHECK(header->crc != crc_before);
    CHECK(header->timestamp_type() == model::timestamp_type::log_append_time);
    CHECK(header->max_timestamp == 1'800'000'000'000);
    CHECK(header->compression() == c);
    auto decoded = codec::decode_records(*encoded);
    REQUIRE(decoded.ok());
    for (const auto& r : *decoded) CHECK(r.timestamp == 1'800'000'000'000);
  }
}

TEST_CASE("magic other than 2 is unknown_magic") {
  auto encoded = codec::encode_batch(options_with(model::compression::none), sample_records(2));
  REQUIRE(encoded.ok());
  for (int magic : {0, 1, 3, -1}) {
    bytes b = *encoded;
    b[16] = static_cast<std::byte>(magic);
    CHECK(codec::decode_header(b).error().code == errc::unknown_magic);
    CHECK(decode_error(b) == errc::unknown_magic);
    // A legacy message shorter than a v2 header is still named by its magic.
    bytes short_legacy(b.begin(), b.begin() + 30);
    CHECK(codec::decode_header(short_legacy).error().code == errc::unknown_magic);
  }
}

TEST_CASE("every compression value 0..7") {
  auto encoded = codec::encode_batch(options_with(model::compression::none), sample_records(3));
  REQUIRE(encoded.ok());
  const char* names[] = {"", "gzip", "snappy", "", "zstd", "5", "6", "7"};
  for (int16_t codec_value = 0; codec_value < 8; ++codec_value) {
    CAPTURE(codec_value);
    bytes b = *encoded;
    put_be_at(b, 21, codec_value);
    fix_crc(b);
    auto r = codec::decode_records(b);
    if (codec_value == 0) {
      CHECK(r.ok());
    } else if (codec_value <= 4) {
      // Plain records are not a gzip member, snappy block, lz4 frame or zstd frame.
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == errc::decompression_failed);
    } else {
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == errc::unsupported_compression);
      CHECK(r.error().message.find(names[codec_value]) != std::string::npos);
      CHECK(codec::validate_batch(b).error().code == errc::unsupported_compression);
    }
  }
}

TEST_CASE("control batch round trip") {
  for (auto type : {codec::control_type::abort, codec::control_type::commit}) {
    auto encoded = codec::encode_control_batch(options_with(model::compression::none), {type, 17}, 123);
    REQUIRE(encoded.ok());
    auto header = codec::validate_batch(*encoded);
    REQUIRE(header.ok());
    CHECK(header->is_control());
    CHECK(header->is_transactional());
    CHECK(header->records_count == 1);
    auto decoded = codec::decode_records(*encoded);
    REQUIRE(decoded.ok());
    REQUIRE(decoded->size() == 1);
    CHECK((*decoded)[0].timestamp == 123);
    auto marker = codec::decode_control_record((*decoded)[0]);
    REQUIRE(marker.ok());
    CHECK(marker->type == type);
    CHECK(marker->coordinator_epoch == 17);
  }
  model::record r = make_record(1, std::nullopt, "xxxxxx");
  CHECK(codec::decode_control_record(r).error().code == errc::invalid_record);
  r.key = bytes{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{5}};
  CHECK(codec::decode_control_record(r).error().code == errc::invalid_record);
  r.key = bytes{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1}};
  r.value = bytes{std::byte{0}};
  CHECK(codec::decode_control_record(r).error().code == errc::invalid_record);
}

TEST_CASE("KIP-534 delete horizon: bit 6 and base_timestamp round trip, record timestamps unchanged") {
  for (auto c : {model::compression::none, model::compression::lz4}) {
    const auto records = sample_records(6);
    auto encoded = codec::encode_batch(options_with(c), records);
    REQUIRE(encoded.ok());
    auto header = codec::validate_batch(*encoded);
    REQUIRE(header.ok());
    CHECK_FALSE(header->has_delete_horizon());
    CHECK(header->delete_horizon_ms() == model::no_timestamp);
    auto decoded = codec::decode_records(*encoded);
    REQUIRE(decoded.ok());
    // Keep records 1, 3, 5; the horizon lies far from every record's timestamp (negative deltas).
    std::vector<model::record> kept{(*decoded)[1], (*decoded)[3], (*decoded)[5]};
    const model::timestamp_ms horizon = 1'900'000'000'000;
    auto flagged = codec::encode_filtered_batch(*header, kept, horizon);
    REQUIRE(flagged.ok());
    auto fh = codec::validate_batch(*flagged);
    REQUIRE(fh.ok());
    CHECK(fh->has_delete_horizon());
    CHECK(fh->delete_horizon_ms() == horizon);
    CHECK(fh->base_timestamp == horizon);
    CHECK(fh->max_timestamp == header->max_timestamp);
    CHECK(fh->compression() == c);
    CHECK((fh->attributes & ~codec::batch_delete_horizon_flag) == header->attributes);
    auto again = codec::decode_records(*flagged);
    REQUIRE(again.ok());
    REQUIRE(again->size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK((*again)[i].timestamp == kept[i].timestamp);
      CHECK((*again)[i].record_offset == kept[i].record_offset);
      CHECK((*again)[i].key == kept[i].key);
    }
    // Re-filtering a flagged batch without a horizon clears the bit and bases on a record time.
    std::vector<model::record> one{(*again)[1]};
    auto cleared = codec::encode_filtered_batch(*fh, one, std::nullopt);
    REQUIRE(cleared.ok());
    auto ch = codec::validate_batch(*cleared);
    REQUIRE(ch.ok());
    CHECK_FALSE(ch->has_delete_horizon());
    CHECK(ch->base_timestamp == one[0].timestamp);
    auto last = codec::decode_records(*cleared);
    REQUIRE(last.ok());
    REQUIRE(last->size() == 1);
    CHECK((*last)[0].timestamp == one[0].timestamp);
    // An empty header keeps the horizon when asked to (a marker's batch never is one, but the
    // rule is the codec's, not the caller's).
    auto empty = codec::encode_filtered_batch(*fh, {}, horizon);
    REQUIRE(empty.ok());
    auto eh = codec::validate_batch(*empty);
    REQUIRE(eh.ok());
    CHECK(eh->delete_horizon_ms() == horizon);
    CHECK(eh->records_count == 0);
  }
}

TEST_CASE("batch length and size mismatches") {
  auto encoded = codec::encode_batch(options_with(model::compression::none), sample_records(3));
  REQUIRE(encoded.ok());
  bytes longer = *encoded;
  longer.push_back(std::byte{0});
  CHECK(decode_error(longer) == errc::invalid_length);
  for (int32_t bad : {-1, 0, 48, constants::batch_bytes_max + 1, std::numeric_limits<int32_t>::max()}) {
    bytes b = *encoded;
    put_be_at(b, 8, bad);
    CHECK(codec::decode_header(b).error().code == errc::invalid_length);
  }
}

TEST_CASE("malformed records behind a valid CRC get named errors") {
  // A correct single record: attributes, ts delta 0, offset delta 0, key null, value "x", 0 headers.
  const bytes good = record_with_length(bytes{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1},
                                              std::byte{2}, std::byte{'x'}, std::byte{0}});
  REQUIRE(codec::decode_records(raw_batch(good, 1, 0)).ok());
  // Empty batch (compaction can leave one) decodes to no records.
  auto empty = codec::decode_records(raw_batch({}, 0, 0));
  REQUIRE(empty.ok());
  CHECK(empty->empty());

  SUBCASE("header counts") {
    CHECK(decode_error(raw_batch(good, -1, 0)) == errc::invalid_record);
    CHECK(decode_error(raw_batch(good, 2, 0)) == errc::invalid_record);        // count > last delta + 1
    CHECK(decode_error(raw_batch(good, 1, -1)) == errc::invalid_record);
    CHECK(decode_error(raw_batch(good, 2, 1)) == errc::truncated);             // second record missing
    CHECK(decode_error(raw_batch(good, constants::batch_records_max + 1, constants::batch_records_max)) ==
          errc::too_large);
    CHECK(decode_error(raw_batch({}, 1, 0)) == errc::truncated);
  }
  SUBCASE("trailing bytes") {
    bytes section = good;
    section.push_back(std::byte{0});
    CHECK(decode_error(raw_batch(section, 1, 0)) == errc::invalid_record);
    CHECK(decode_error(raw_batch(good, 0, 0)) == errc::invalid_record);
  }
  SUBCASE("record length") {
    bytes negative;
    codec::put_varint(negative, -2);
    CHECK(decode_error(raw_batch(negative, 1, 0)) == errc::invalid_length);
    bytes too_long;
    codec::put_varint(too_long, 1000);
    too_long.insert(too_long.end(), good.begin() + 1, good.end());
    CHECK(decode_error(raw_batch(too_long, 1, 0)) == errc::truncated);
    // Length larger than the fields: bytes left inside the record.
    bytes body(good.begin() + 1, good.end());
    body.push_back(std::byte{0});
    CHECK(decode_error(raw_batch(record_with_length(body), 1, 0)) == errc::invalid_record);
    // Length smaller than the fields: the fields run off the record.
    bytes shorter(good.begin() + 1, good.end() - 1);
    CHECK(decode_error(raw_batch(record_with_length(shorter), 1, 0)) == errc::truncated);
  }
  SUBCASE("offset deltas must increase and stay within last_offset_delta") {
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 5, -1, -1, 0})), 1, 3)) == errc::invalid_record);
    CHECK(decode_error(raw_batch(record_with_length(varints({0, -1, -1, -1, 0})), 1, 0)) == errc::invalid_record);
    bytes two = record_with_length(varints({0, 1, -1, -1, 0}));
    bytes again = record_with_length(varints({0, 1, -1, -1, 0}));
    two.insert(two.end(), again.begin(), again.end());
    CHECK(decode_error(raw_batch(two, 2, 1)) == errc::invalid_record);
    // Gaps are fine (compacted batch).
    bytes gap = record_with_length(varints({0, 0, -1, -1, 0}));
    bytes later = record_with_length(varints({0, 4, -1, -1, 0}));
    gap.insert(gap.end(), later.begin(), later.end());
    auto ok = codec::decode_records(raw_batch(gap, 2, 4));
    REQUIRE(ok.ok());
    CHECK((*ok)[1].record_offset == model::offset(4));
  }
  SUBCASE("key, value and header lengths") {
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 0, -2, -1, 0})), 1, 0)) == errc::invalid_length);
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 0, -1, -5, 0})), 1, 0)) == errc::invalid_length);
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 0, 50, -1, 0})), 1, 0)) == errc::truncated);
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 0, -1, -1, -1})), 1, 0)) == errc::invalid_record);
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 0, -1, -1, constants::record_headers_max + 1})), 1,
                                 0)) == errc::too_large);
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 0, -1, -1, 1, -1, -1})), 1, 0)) ==
          errc::invalid_record);
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 0, -1, -1, 3, 0, -1})), 1, 0)) == errc::truncated);
    CHECK(decode_error(raw_batch(record_with_length(varints({0, 0, -1, -1, 1, 0, -3})), 1, 0)) ==
          errc::invalid_length);
    // offset_delta beyond int32.
    CHECK(decode_error(raw_batch(record_with_length(varints({0, int64_t{1} << 33, -1, -1, 0})), 1, 0)) ==
          errc::invalid_varint);
    // An 11-byte varint timestamp delta.
    bytes overlong{std::byte{0}};
    for (int i = 0; i < 10; ++i) overlong.push_back(std::byte{0x80});
    overlong.push_back(std::byte{0});
    for (auto b : varints({0, -1, -1, 0}, false)) overlong.push_back(b);
    CHECK(decode_error(raw_batch(record_with_length(overlong), 1, 0)) == errc::invalid_varint);
  }
  SUBCASE("lz4 section that is not a frame, or has bytes after the frame") {
    CHECK(decode_error(raw_batch(good, 1, 0, 3)) == errc::decompression_failed);
    CHECK(decode_error(raw_batch({}, 1, 0, 3)) == errc::decompression_failed);
    auto encoded = codec::encode_batch(options_with(model::compression::lz4), sample_records(3));
    REQUIRE(encoded.ok());
    bytes frame(encoded->begin() + 61, encoded->end());
    bytes extra = frame;
    extra.push_back(std::byte{0});
    CHECK(decode_error(raw_batch(extra, 3, 2, 3)) == errc::decompression_failed);
    for (size_t n = 0; n < frame.size(); ++n) {
      bytes clipped(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(n));
      CHECK(decode_error(raw_batch(clipped, 3, 2, 3)) == errc::decompression_failed);
    }
  }
}

TEST_CASE("lz4 frame decompressing past batch_decompressed_bytes_max is refused") {
  // Stream 1 MiB chunks of zeros into one frame until just past the limit; the frame stays small.
  constexpr size_t chunk_bytes = 1 << 20;
  const size_t chunks = static_cast<size_t>(constants::batch_decompressed_bytes_max) / chunk_bytes + 1;
  LZ4F_cctx* ctx = nullptr;
  REQUIRE_FALSE(LZ4F_isError(LZ4F_createCompressionContext(&ctx, LZ4F_VERSION)));
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  const bytes zeros(chunk_bytes);
  bytes frame;
  bytes scratch(LZ4F_compressBound(chunk_bytes, &prefs) + LZ4F_HEADER_SIZE_MAX);
  size_t n = LZ4F_compressBegin(ctx, scratch.data(), scratch.size(), &prefs);
  frame.insert(frame.end(), scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < chunks; ++i) {
    n = LZ4F_compressUpdate(ctx, scratch.data(), scratch.size(), zeros.data(), zeros.size(), nullptr);
    REQUIRE_FALSE(LZ4F_isError(n));
    frame.insert(frame.end(), scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(n));
  }
  n = LZ4F_compressEnd(ctx, scratch.data(), scratch.size(), nullptr);
  frame.insert(frame.end(), scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(n));
  LZ4F_freeCompressionContext(ctx);
  auto r = codec::decode_records(raw_batch(frame, 1, 0, 3));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::decompression_failed);
  CHECK(r.error().message.find("batch_decompressed_bytes_max") != std::string::npos);
}

TEST_CASE("random corruption behind a fixed-up CRC never crashes") {
  std::mt19937_64 rng(7);
  for (auto c : {model::compression::none, model::compression::gzip, model::compression::snappy, model::compression::lz4, model::compression::zstd}) {
    auto encoded = codec::encode_batch(options_with(c), sample_records(12));
    REQUIRE(encoded.ok());
    for (int round = 0; round < 3000; ++round) {
      bytes b = *encoded;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        const size_t pos = 61 + rng() % (b.size() - 61);
        b[pos] = static_cast<std::byte>(rng());
      }
      fix_crc(b);
      auto r = codec::decode_records(b);
      if (!r.ok()) CHECK_FALSE(r.error().message.empty());
    }
  }
}

TEST_CASE("errc names") {
  CHECK(codec::to_string(errc::crc_mismatch) == "crc_mismatch");
  CHECK(codec::to_string(errc::unsupported_compression) == "unsupported_compression");
}

namespace {

/// What visit_records shows of a batch, copied into records (to compare with decode_records).
codec::result<std::vector<model::record>> visited_records(const bytes& batch) {
  auto header = codec::validate_batch(batch);
  if (!header.ok()) return header.error();
  std::vector<model::record> out;
  auto copy = [](const std::optional<std::span<const std::byte>>& b) {
    return b ? std::optional<bytes>(bytes(b->begin(), b->end())) : std::nullopt;
  };
  auto walked = codec::visit_records(batch, *header, [&](const codec::record_view& v) -> codec::result<void> {
    model::record r;
    r.record_offset = v.record_offset;
    r.timestamp = v.timestamp;
    r.key = copy(v.key);
    r.value = copy(v.value);
    for (const auto& h : v.headers) r.headers.push_back({std::string(h.key), copy(h.value)});
    out.push_back(std::move(r));
    return base::ok_v;
  });
  if (!walked.ok()) return walked.error();
  return out;
}

}  // namespace

TEST_CASE("visit_records shows in place what decode_records copies, for every codec") {
  for (auto c : {model::compression::none, model::compression::gzip, model::compression::snappy,
                 model::compression::lz4, model::compression::zstd}) {
    CAPTURE(static_cast<int>(c));
    for (size_t n : {size_t{1}, size_t{7}, size_t{300}}) {
      auto encoded = codec::encode_batch(options_with(c), sample_records(n));
      REQUIRE(encoded.ok());
      auto decoded = codec::decode_records(*encoded);
      auto visited = visited_records(*encoded);
      REQUIRE(decoded.ok());
      REQUIRE(visited.ok());
      CHECK(*visited == *decoded);
    }
  }
}

TEST_CASE("visit_records stops at the visitor's first error and returns it") {
  auto encoded = codec::encode_batch(options_with(model::compression::none), sample_records(10));
  REQUIRE(encoded.ok());
  auto header = codec::validate_batch(*encoded);
  REQUIRE(header.ok());
  int seen = 0;
  auto walked = codec::visit_records(*encoded, *header, [&](const codec::record_view&) -> codec::result<void> {
    if (++seen == 3) return codec::error{errc::too_large, "stop here"};
    return base::ok_v;
  });
  REQUIRE_FALSE(walked.ok());
  CHECK(walked.error().code == errc::too_large);
  CHECK(walked.error().message == "stop here");
  CHECK(seen == 3);
}

TEST_CASE("visit_records refuses malformed records as decode_records does") {
  const bytes good = record_with_length(bytes{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1},
                                              std::byte{2}, std::byte{'x'}, std::byte{0}});
  bytes trailing = good;
  trailing.push_back(std::byte{0});
  bytes body(good.begin() + 1, good.end());
  body.push_back(std::byte{0});
  for (const bytes& batch : {raw_batch(good, 2, 1), raw_batch(trailing, 1, 0), raw_batch(record_with_length(body), 1, 0),
                             raw_batch({}, 1, 0)}) {
    auto decoded = codec::decode_records(batch);
    auto visited = visited_records(batch);
    REQUIRE_FALSE(decoded.ok());
    REQUIRE_FALSE(visited.ok());
    CHECK(visited.error().code == decoded.error().code);
    CHECK(visited.error().message == decoded.error().message);
  }
}

TEST_CASE("encode_batch writes each record's length as the bytes that follow it, and no byte more") {
  // Large values (multi-byte length varints), empty and null fields, headers: the batch is the
  // header plus, per record, varint(length) + length bytes, and every record decodes whole.
  std::vector<model::record> records = sample_records(40);
  records.push_back(make_record(7, std::string(300, 'k'), std::string(70'000, 'v'),
                                {{"h", to_bytes(std::string(200, 'x'))}, {"", std::nullopt}}));
  for (auto c : {model::compression::none, model::compression::zstd}) {
    auto encoded = codec::encode_batch(options_with(c), records);
    REQUIRE(encoded.ok());
    auto decoded = codec::decode_records(*encoded);
    REQUIRE(decoded.ok());
    CHECK(decoded->size() == records.size());
    CHECK(decoded->back().value->size() == 70'000);
  }
  auto none = codec::encode_batch(options_with(model::compression::none), records);
  REQUIRE(none.ok());
  size_t section = 0;
  for (size_t pos = codec::batch_header_bytes; pos < none->size();) {
    size_t at = pos;
    auto length = codec::get_varint(*none, at);
    REQUIRE(length.ok());
    pos = at + static_cast<size_t>(*length);
    REQUIRE(pos <= none->size());
    section += 1;
  }
  CHECK(section == records.size());
}
