#include "ringlog/group/coordinator_partition.h"

#include <limits>

#include "ringlog/base/assert.h"

namespace ringlog::group {
namespace {

constexpr uint32_t replacement_char = 0xFFFD;

// Decodes one UTF-8 code point starting at s[i]; advances i. Invalid sequences yield U+FFFD and
// consume one byte (Java's decoder replaces each malformed byte the same way for these cases).
uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) {
    ++i;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    ++i;
    return replacement_char;
  }
  if (i + len > s.size()) {
    ++i;
    return replacement_char;
  }
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return replacement_char;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return replacement_char;
  }
  i += len;
  return cp;
}

}  // namespace

int32_t java_string_hash_code(std::string_view s) {
  uint32_t h = 0;  // unsigned arithmetic = Java's int wrap-around, without C++ signed overflow
  size_t i = 0;
  while (i < s.size()) {
    const uint32_t cp = next_code_point(s, i);
    if (cp >= 0x10000) {
      const uint32_t v = cp - 0x10000;
      h = 31 * h + (0xD800 + (v >> 10));
      h = 31 * h + (0xDC00 + (v & 0x3FF));
    } else {
      h = 31 * h + cp;
    }
  }
  return static_cast<int32_t>(h);
}

int32_t coordinator_partition_for(std::string_view group_id, int32_t offsets_topic_partitions) {
  RINGLOG_ASSERT_OP(offsets_topic_partitions, >=, 1);
  const int32_t h = java_string_hash_code(group_id);
  // Utils.abs: Math.abs, except Integer.MIN_VALUE (whose Math.abs is itself) maps to 0.
  const int32_t abs = h == std::numeric_limits<int32_t>::min() ? 0 : (h < 0 ? -h : h);
  return abs % offsets_topic_partitions;
}

}  // namespace ringlog::group
