#include "ringlog/storage/index.h"

#include <algorithm>

namespace ringlog::storage {
namespace {

void put_u32(std::byte* p, uint32_t v) {
  for (int i = 3; i >= 0; --i) {
    p[i] = static_cast<std::byte>(v & 0xff);
    v >>= 8;
  }
}
void put_u64(std::byte* p, uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<std::byte>(v & 0xff);
    v >>= 8;
  }
}
uint32_t get_u32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint32_t>(p[i]);
  return v;
}
uint64_t get_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint64_t>(p[i]);
  return v;
}

}  // namespace

void encode_offset_index_entry(const offset_index_entry& e, std::span<std::byte, 8> out) {
  put_u32(out.data(), static_cast<uint32_t>(e.relative_offset));
  put_u32(out.data() + 4, e.file_position);
}

void encode_time_index_entry(const time_index_entry& e, std::span<std::byte, 12> out) {
  put_u64(out.data(), static_cast<uint64_t>(e.timestamp));
  put_u32(out.data() + 8, static_cast<uint32_t>(e.relative_offset));
}

std::vector<offset_index_entry> decode_offset_index(std::span<const std::byte> file_bytes) {
  std::vector<offset_index_entry> out;
  out.reserve(file_bytes.size() / 8);
  for (size_t p = 0; p + 8 <= file_bytes.size(); p += 8) {
    out.push_back({static_cast<int32_t>(get_u32(&file_bytes[p])), get_u32(&file_bytes[p + 4])});
  }
  return out;
}

std::vector<time_index_entry> decode_time_index(std::span<const std::byte> file_bytes) {
  std::vector<time_index_entry> out;
  out.reserve(file_bytes.size() / 12);
  for (size_t p = 0; p + 12 <= file_bytes.size(); p += 12) {
    out.push_back({static_cast<int64_t>(get_u64(&file_bytes[p])), static_cast<int32_t>(get_u32(&file_bytes[p + 8]))});
  }
  return out;
}

std::optional<offset_index_entry> floor_offset(std::span<const offset_index_entry> entries, int32_t relative_offset) {
  auto it = std::upper_bound(entries.begin(), entries.end(), relative_offset,
                             [](int32_t v, const offset_index_entry& e) { return v < e.relative_offset; });
  if (it == entries.begin()) return std::nullopt;
  return *(it - 1);
}

std::optional<time_index_entry> last_before_timestamp(std::span<const time_index_entry> entries,
                                                      model::timestamp_ms timestamp) {
  auto it = std::lower_bound(entries.begin(), entries.end(), timestamp,
                             [](const time_index_entry& e, model::timestamp_ms v) { return e.timestamp < v; });
  if (it == entries.begin()) return std::nullopt;
  return *(it - 1);
}

}  // namespace ringlog::storage
