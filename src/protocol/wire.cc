#include "ringlog/protocol/wire.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace ringlog::protocol {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::truncated: return "truncated";
    case errc::invalid_length: return "invalid_length";
    case errc::invalid_varint: return "invalid_varint";
    case errc::unsupported_version: return "unsupported_version";
    case errc::invalid_tagged_field: return "invalid_tagged_field";
    case errc::null_value: return "null_value";
    case errc::unknown_api_key: return "unknown_api_key";
    case errc::trailing_bytes: return "trailing_bytes";
  }
  return "unknown_protocol_errc";
}

error with_prefix(error e, std::string_view prefix) {
  e.message.insert(0, prefix);
  return e;
}

// ---- writer ----

void writer::put_be(uint64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    buf_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
  }
}

void writer::mark(length_kind kind) {
  if (record_marks_) {
    marks_.push_back(length_mark{buf_.size(), kind});
  }
}

void writer::write_float64(double v) { put_be(std::bit_cast<uint64_t>(v), 8); }

void writer::write_uuid(const uuid& v) {
  for (uint8_t b : v.value) {
    buf_.push_back(static_cast<std::byte>(b));
  }
}

void writer::write_unsigned_varint(uint32_t v) {
  while ((v & ~uint32_t{0x7f}) != 0) {
    buf_.push_back(static_cast<std::byte>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  buf_.push_back(static_cast<std::byte>(v));
}

void writer::write_varint(int32_t v) {
  write_unsigned_varint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}

void writer::write_varlong(int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while ((z & ~uint64_t{0x7f}) != 0) {
    buf_.push_back(static_cast<std::byte>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  buf_.push_back(static_cast<std::byte>(z));
}

result<void> writer::write_string(std::string_view v, bool compact) {
  if (compact) {
    if (v.size() >= limits::bytes_max) {
      return error{errc::invalid_length, "string of " + std::to_string(v.size()) + " bytes is too long"};
    }
    mark(length_kind::unsigned_varint);
    write_unsigned_varint(static_cast<uint32_t>(v.size() + 1));
  } else {
    if (v.size() > limits::string_bytes_max) {
      return error{errc::invalid_length,
                   "string of " + std::to_string(v.size()) + " bytes exceeds the int16 length prefix"};
    }
    mark(length_kind::int16);
    write_int16(static_cast<int16_t>(v.size()));
  }
  write_raw(std::as_bytes(std::span(v.data(), v.size())));
  return base::ok_v;
}

result<void> writer::write_nullable_string(const std::optional<std::string>& v, bool compact) {
  if (v) {
    return write_string(*v, compact);
  }
  if (compact) {
    write_unsigned_varint(0);
  } else {
    write_int16(-1);
  }
  return base::ok_v;
}

result<void> writer::write_bytes(std::span<const std::byte> v, bool compact) {
  if (v.size() >= limits::bytes_max) {
    return error{errc::invalid_length, "bytes of " + std::to_string(v.size()) + " bytes are too long"};
  }
  if (compact) {
    mark(length_kind::unsigned_varint);
    write_unsigned_varint(static_cast<uint32_t>(v.size() + 1));
  } else {
    mark(length_kind::int32);
    write_int32(static_cast<int32_t>(v.size()));
  }
  write_raw(v);
  return base::ok_v;
}

void writer::write_null_bytes(bool compact) {
  if (compact) {
    write_unsigned_varint(0);
  } else {
    write_int32(-1);
  }
}

result<void> writer::write_nullable_bytes(const std::optional<bytes>& v, bool compact) {
  if (v) {
    return write_bytes(*v, compact);
  }
  write_null_bytes(compact);
  return base::ok_v;
}

result<void> writer::write_array_length(size_t count, bool compact) {
  if (count >= limits::bytes_max) {
    return error{errc::invalid_length, "array of " + std::to_string(count) + " elements is too long"};
  }
  if (compact) {
    mark(length_kind::unsigned_varint);
    write_unsigned_varint(static_cast<uint32_t>(count + 1));
  } else {
    mark(length_kind::int32);
    write_int32(static_cast<int32_t>(count));
  }
  return base::ok_v;
}

void writer::write_null_array(bool compact) {
  if (compact) {
    write_unsigned_varint(0);
  } else {
    write_int32(-1);
  }
}

void writer::append(const writer& other) {
  const size_t shift = buf_.size();
  if (record_marks_) {
    for (const auto& m : other.marks_) {
      marks_.push_back(length_mark{m.position + shift, m.kind});
    }
  }
  write_raw(other.buf_);
}

void writer::patch_int32(size_t position, int32_t v) {
  RINGLOG_ASSERT_OP(position + 4, <=, buf_.size());
  const auto u = static_cast<uint32_t>(v);
  for (size_t i = 0; i < 4; ++i) {
    buf_[position + i] = static_cast<std::byte>((u >> (8 * (3 - i))) & 0xff);
  }
}

result<void> writer::write_tagged_fields(std::vector<std::pair<uint32_t, writer>>& known,
                                         const std::vector<tagged_field>& unknown) {
  // Merge the two tag-sorted lists (known fields are generated in tag order; unknown ones are
  // kept in the order read, which a valid peer wrote ascending; sort a copy of indexes to be safe).
  std::vector<size_t> order(unknown.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return unknown[a].tag < unknown[b].tag; });
  std::sort(known.begin(), known.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  mark(length_kind::unsigned_varint);
  write_unsigned_varint(static_cast<uint32_t>(known.size() + unknown.size()));
  size_t k = 0;
  size_t u = 0;
  bool have_last = false;
  uint32_t last_tag = 0;
  while (k < known.size() || u < order.size()) {
    const bool take_known = u == order.size() || (k < known.size() && known[k].first <= unknown[order[u]].tag);
    const uint32_t tag = take_known ? known[k].first : unknown[order[u]].tag;
    if (have_last && tag == last_tag) {
      return error{errc::invalid_tagged_field, "tag " + std::to_string(tag) + " written twice"};
    }
    have_last = true;
    last_tag = tag;
    write_unsigned_varint(tag);
    mark(length_kind::unsigned_varint);
    if (take_known) {
      write_unsigned_varint(static_cast<uint32_t>(known[k].second.size()));
      append(known[k].second);
      ++k;
    } else {
      const auto& f = unknown[order[u]];
      write_unsigned_varint(static_cast<uint32_t>(f.data.size()));
      write_raw(f.data);
      ++u;
    }
  }
  return base::ok_v;
}

// ---- reader ----

result<void> reader::need(size_t n) const {
  if (n > remaining()) {
    return error{errc::truncated, "truncated at byte " + std::to_string(base_ + pos_ + n) + " of " +
                                      std::to_string(base_ + in_.size())};
  }
  return base::ok_v;
}

result<uint64_t> reader::get_be(int width) {
  RINGLOG_TRY(need(static_cast<size_t>(width)));
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) {
    v = (v << 8) | static_cast<uint8_t>(in_[pos_ + static_cast<size_t>(i)]);
  }
  pos_ += static_cast<size_t>(width);
  return v;
}

#define RINGLOG_PROTOCOL_GET(type, width)           \
  auto v = get_be(width);                           \
  if (!v.ok()) {                                    \
    return v.error();                               \
  }                                                 \
  return static_cast<type>(*v)

result<int8_t> reader::read_int8() { RINGLOG_PROTOCOL_GET(int8_t, 1); }
result<int16_t> reader::read_int16() { RINGLOG_PROTOCOL_GET(int16_t, 2); }
result<uint16_t> reader::read_uint16() { RINGLOG_PROTOCOL_GET(uint16_t, 2); }
result<int32_t> reader::read_int32() { RINGLOG_PROTOCOL_GET(int32_t, 4); }
result<uint32_t> reader::read_uint32() { RINGLOG_PROTOCOL_GET(uint32_t, 4); }
result<int64_t> reader::read_int64() { RINGLOG_PROTOCOL_GET(int64_t, 8); }
#undef RINGLOG_PROTOCOL_GET

result<double> reader::read_float64() {
  auto v = get_be(8);
  if (!v.ok()) {
    return v.error();
  }
  return std::bit_cast<double>(*v);
}

result<bool> reader::read_bool() {
  auto v = get_be(1);
  if (!v.ok()) {
    return v.error();
  }
  return *v != 0;
}

result<uuid> reader::read_uuid() {
  RINGLOG_TRY(need(16));
  uuid u;
  for (size_t i = 0; i < 16; ++i) {
    u.value[i] = static_cast<uint8_t>(in_[pos_ + i]);
  }
  pos_ += 16;
  return u;
}

result<uint32_t> reader::read_unsigned_varint() {
  const size_t start = base_ + pos_;
  uint32_t v = 0;
  for (size_t i = 0; i < limits::varint32_bytes_max; ++i) {
    RINGLOG_TRY(need(1));
    const auto b = static_cast<uint8_t>(in_[pos_++]);
    if (i == limits::varint32_bytes_max - 1 && b > 0x0f) {
      return error{errc::invalid_varint, "varint at byte " + std::to_string(start) + " overflows 32 bits"};
    }
    v |= static_cast<uint32_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      return v;
    }
  }
  return error{errc::invalid_varint, "varint at byte " + std::to_string(start) + " is longer than 5 bytes"};
}

result<int32_t> reader::read_varint() {
  auto u = read_unsigned_varint();
  if (!u.ok()) {
    return u.error();
  }
  return static_cast<int32_t>((*u >> 1) ^ (~(*u & 1) + 1));
}

result<int64_t> reader::read_varlong() {
  const size_t start = base_ + pos_;
  uint64_t v = 0;
  for (size_t i = 0; i < limits::varint64_bytes_max; ++i) {
    RINGLOG_TRY(need(1));
    const auto b = static_cast<uint8_t>(in_[pos_++]);
    if (i == limits::varint64_bytes_max - 1 && b > 0x01) {
      return error{errc::invalid_varint, "varlong at byte " + std::to_string(start) + " overflows 64 bits"};
    }
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
    }
  }
  return error{errc::invalid_varint, "varlong at byte " + std::to_string(start) + " is longer than 10 bytes"};
}

result<int64_t> reader::read_length(bool compact, bool wide) {
  const size_t start = base_ + pos_;
  int64_t n = 0;
  if (compact) {
    auto u = read_unsigned_varint();
    if (!u.ok()) {
      return u.error();
    }
    n = static_cast<int64_t>(*u) - 1;
  } else if (wide) {
    auto v = read_int32();
    if (!v.ok()) {
      return v.error();
    }
    n = *v;
  } else {
    auto v = read_int16();
    if (!v.ok()) {
      return v.error();
    }
    n = *v;
  }
  if (n < -1) {
    return error{errc::invalid_length, "length " + std::to_string(n) + " at byte " + std::to_string(start)};
  }
  if (n > static_cast<int64_t>(remaining())) {
    return error{errc::invalid_length, "length " + std::to_string(n) + " at byte " + std::to_string(start) +
                                           " exceeds the " + std::to_string(remaining()) + " bytes left"};
  }
  return n;
}

result<std::optional<std::string>> reader::read_nullable_string(bool compact) {
  auto n = read_length(compact, false);
  if (!n.ok()) {
    return n.error();
  }
  if (*n == -1) {
    return std::optional<std::string>{};
  }
  const auto len = static_cast<size_t>(*n);
  std::string s(reinterpret_cast<const char*>(in_.data() + pos_), len);
  pos_ += len;
  return std::optional<std::string>{std::move(s)};
}

result<std::string> reader::read_string(bool compact) {
  const size_t start = position();
  auto s = read_nullable_string(compact);
  if (!s.ok()) {
    return s.error();
  }
  if (!s->has_value()) {
    return error{errc::null_value, "null string at byte " + std::to_string(start) + " is not nullable"};
  }
  return std::move(**s);
}

result<std::optional<bytes>> reader::read_nullable_bytes(bool compact) {
  auto n = read_length(compact, true);
  if (!n.ok()) {
    return n.error();
  }
  if (*n == -1) {
    return std::optional<bytes>{};
  }
  const auto len = static_cast<size_t>(*n);
  bytes b(in_.begin() + static_cast<std::ptrdiff_t>(pos_), in_.begin() + static_cast<std::ptrdiff_t>(pos_ + len));
  pos_ += len;
  return std::optional<bytes>{std::move(b)};
}

result<bytes> reader::read_bytes(bool compact) {
  const size_t start = position();
  auto b = read_nullable_bytes(compact);
  if (!b.ok()) {
    return b.error();
  }
  if (!b->has_value()) {
    return error{errc::null_value, "null bytes at byte " + std::to_string(start) + " are not nullable"};
  }
  return std::move(**b);
}

result<int32_t> reader::read_array_length(bool compact, bool nullable, size_t min_element_bytes) {
  const size_t start = position();
  auto n = read_length(compact, true);
  if (!n.ok()) {
    return n.error();
  }
  if (*n == -1) {
    if (!nullable) {
      return error{errc::null_value, "null array at byte " + std::to_string(start) + " is not nullable"};
    }
    return -1;
  }
  const auto count = static_cast<uint64_t>(*n);
  if (count * std::max<size_t>(min_element_bytes, 1) > remaining()) {
    return error{errc::invalid_length, "array count " + std::to_string(count) + " at byte " + std::to_string(start) +
                                           " cannot fit in the " + std::to_string(remaining()) + " bytes left"};
  }
  return static_cast<int32_t>(count);
}

result<uint32_t> reader::read_tagged_field_count() {
  const size_t start = position();
  auto n = read_unsigned_varint();
  if (!n.ok()) {
    return n.error();
  }
  if (static_cast<uint64_t>(*n) * limits::tagged_field_bytes_min > remaining()) {
    return error{errc::invalid_length, "tagged field count " + std::to_string(*n) + " at byte " +
                                           std::to_string(start) + " cannot fit in the " +
                                           std::to_string(remaining()) + " bytes left"};
  }
  return *n;
}

result<reader> reader::sub_reader(size_t n) {
  if (n > remaining()) {
    return error{errc::invalid_length, "size " + std::to_string(n) + " at byte " + std::to_string(position()) +
                                           " exceeds the " + std::to_string(remaining()) + " bytes left"};
  }
  reader r(in_.subspan(pos_, n), base_ + pos_);
  pos_ += n;
  return r;
}

result<bytes> reader::read_raw(size_t n) {
  RINGLOG_TRY(need(n));
  bytes b(in_.begin() + static_cast<std::ptrdiff_t>(pos_), in_.begin() + static_cast<std::ptrdiff_t>(pos_ + n));
  pos_ += n;
  return b;
}

}  // namespace ringlog::protocol
