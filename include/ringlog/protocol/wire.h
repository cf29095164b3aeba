#pragma once
// Primitive types of Kafka's wire protocol (protocol guide, "Protocol Primitive Types"; KIP-482
// for the compact and tagged forms used by flexible versions). Big-endian fixed-width integers;
// classic strings are int16-length-prefixed, bytes/records and arrays int32-prefixed, -1 = null;
// compact forms prefix an unsigned varint of length + 1, 0 = null.
//
// The writer appends to a growing buffer. The reader is bounds-checked: every read checks what
// is left first, every length is validated (negative other than -1 for a nullable value, or
// longer than what is left, is an error) and an array count is bounded by the bytes left, so a
// forged count never allocates more than the frame itself. Errors are values, never exceptions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringlog/protocol/constants.h"
#include "ringlog/protocol/errc.h"

namespace ringlog::protocol {

using bytes = std::vector<std::byte>;

/// Kafka's uuid: 16 raw bytes on the wire (most significant long first). All zeros is the
/// "no id" value (Uuid.ZERO_UUID).
struct uuid {
  std::array<uint8_t, 16> value{};
  bool operator==(const uuid&) const = default;
  [[nodiscard]] bool is_zero() const { return *this == uuid{}; }
};

/// A tagged field the decoder did not know (KIP-482): kept as raw bytes and written back on
/// encode, so a message passes through a newer peer's fields unchanged.
struct tagged_field {
  uint32_t tag = 0;
  bytes data;
  bool operator==(const tagged_field&) const = default;
};

/// What kind of length/count prefix sits at a position the writer recorded (tests use these
/// marks to forge bad lengths).
enum class length_kind { int16, int32, unsigned_varint };
struct length_mark {
  size_t position = 0;  // byte offset of the prefix in the writer's buffer
  length_kind kind = length_kind::int32;
};

/// Appends wire primitives to a buffer. Writes that can be out of range (a string longer than
/// an int16 length allows) return an error; the rest cannot fail.
class writer {
 public:
  writer() = default;
  /// record_marks: remember where every length/count prefix was written (for tests).
  explicit writer(bool record_marks) : record_marks_(record_marks) {}

  void write_int8(int8_t v) { put_be(static_cast<uint8_t>(v), 1); }
  void write_int16(int16_t v) { put_be(static_cast<uint16_t>(v), 2); }
  void write_uint16(uint16_t v) { put_be(v, 2); }
  void write_int32(int32_t v) { put_be(static_cast<uint32_t>(v), 4); }
  void write_uint32(uint32_t v) { put_be(v, 4); }
  void write_int64(int64_t v) { put_be(static_cast<uint64_t>(v), 8); }
  void write_float64(double v);
  void write_bool(bool v) { write_int8(v ? 1 : 0); }
  void write_uuid(const uuid& v);
  void write_unsigned_varint(uint32_t v);
  /// Zig-zag varint of an int32 / int64 (Kafka's "varint" / "varlong").
  void write_varint(int32_t v);
  void write_varlong(int64_t v);

  /// String, classic (int16 length) or compact. Errors: invalid_length when longer than the
  /// prefix allows.
  result<void> write_string(std::string_view v, bool compact);
  result<void> write_nullable_string(const std::optional<std::string>& v, bool compact);
  /// Bytes (also records), classic (int32 length) or compact.
  result<void> write_bytes(std::span<const std::byte> v, bool compact);
  result<void> write_nullable_bytes(const std::optional<bytes>& v, bool compact);
  /// Array count prefix (the elements follow), or -1 / 0 for a null array.
  result<void> write_array_length(size_t count, bool compact);
  void write_null_array(bool compact);
  void write_null_bytes(bool compact);

  /// Writes the tagged field section of a flexible struct: the count, then for each field in
  /// ascending tag order its tag, size and bytes. `known` holds the encoded known fields (tag,
  /// bytes as a writer so its marks move along); `unknown` the preserved ones. Errors:
  /// invalid_tagged_field when a tag occurs twice.
  result<void> write_tagged_fields(std::vector<std::pair<uint32_t, writer>>& known,
                                   const std::vector<tagged_field>& unknown);

  void write_raw(std::span<const std::byte> v) { buf_.insert(buf_.end(), v.begin(), v.end()); }
  /// Appends another writer's bytes and its marks (shifted to their new position).
  void append(const writer& other);
  /// Overwrites 4 bytes at `position` with v (a frame size written after the frame).
  void patch_int32(size_t position, int32_t v);

  [[nodiscard]] size_t size() const { return buf_.size(); }
  [[nodiscard]] const bytes& buffer() const { return buf_; }
  bytes take() && { return std::move(buf_); }
  [[nodiscard]] bool recording_marks() const { return record_marks_; }
  [[nodiscard]] const std::vector<length_mark>& marks() const { return marks_; }

 private:
  void put_be(uint64_t v, int width);
  void mark(length_kind kind);

  bytes buf_;
  bool record_marks_ = false;
  std::vector<length_mark> marks_;
};

/// Reads wire primitives from a span, bounds-checked. `base` is the offset of the span inside
/// the frame, so error messages give byte positions within the whole frame ("truncated at byte
/// 17 of 16": the read needed bytes up to 17, the frame ends at 16).
class reader {
 public:
  explicit reader(std::span<const std::byte> in, size_t base = 0) : in_(in), base_(base) {}

  result<int8_t> read_int8();
  result<int16_t> read_int16();
  result<uint16_t> read_uint16();
  result<int32_t> read_int32();
  result<uint32_t> read_uint32();
  result<int64_t> read_int64();
  result<double> read_float64();
  /// Any non-zero byte is true, as in Kafka's readers.
  result<bool> read_bool();
  result<uuid> read_uuid();
  /// Errors: truncated, invalid_varint (a 6th byte, or a 5th byte above 0x0f).
  result<uint32_t> read_unsigned_varint();
  result<int32_t> read_varint();
  result<int64_t> read_varlong();

  /// Non-null string. Errors: truncated, invalid_length (negative, -1 included: null is not
  /// allowed here; longer than what is left).
  result<std::string> read_string(bool compact);
  result<std::optional<std::string>> read_nullable_string(bool compact);
  result<bytes> read_bytes(bool compact);
  result<std::optional<bytes>> read_nullable_bytes(bool compact);
  /// Array count: -1 for null (only when `nullable`), else 0..n where n * min_element_bytes
  /// must fit in what is left (min_element_bytes >= 1: the smallest encoding of one element).
  /// Errors: truncated, invalid_varint, invalid_length.
  result<int32_t> read_array_length(bool compact, bool nullable, size_t min_element_bytes);
  /// Tagged field count, bounded by what is left / limits::tagged_field_bytes_min.
  result<uint32_t> read_tagged_field_count();
  /// A reader over the next n bytes (a tagged field's body); this reader skips them.
  result<reader> sub_reader(size_t n);
  /// The next n bytes as raw bytes.
  result<bytes> read_raw(size_t n);

  [[nodiscard]] size_t remaining() const { return in_.size() - pos_; }
  /// Position within the frame (base + bytes consumed).
  [[nodiscard]] size_t position() const { return base_ + pos_; }

 private:
  result<void> need(size_t n) const;
  result<uint64_t> get_be(int width);
  /// Reads a classic int16/int32 or compact length; -1 means null. Checks it against what is
  /// left but not nullability.
  result<int64_t> read_length(bool compact, bool wide);

  std::span<const std::byte> in_;
  size_t pos_ = 0;
  size_t base_ = 0;
};

}  // namespace ringlog::protocol
