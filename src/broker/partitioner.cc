// Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2, a MurmurHash2 variant with seed
// 0x9747b28c) and the default partitioner's toPositive(hash) % partitions. Arithmetic is done on
// uint32_t so the wrap-around matches Java's int overflow exactly.

#include "ringlog/broker/partitioner.h"

namespace ringlog::broker {

int32_t murmur2(std::span<const std::byte> key) noexcept {
  const uint32_t length = static_cast<uint32_t>(key.size());
  const uint32_t seed = 0x9747b28c;
  const uint32_t m = 0x5bd1e995;
  const int r = 24;
  uint32_t h = seed ^ length;
  const size_t whole_words = key.size() / 4;
  auto byte_at = [&](size_t i) { return std::to_integer<uint32_t>(key[i]); };
  for (size_t i = 0; i < whole_words; ++i) {
    const size_t i4 = i * 4;
    uint32_t k = byte_at(i4) | (byte_at(i4 + 1) << 8) | (byte_at(i4 + 2) << 16) | (byte_at(i4 + 3) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const size_t tail = key.size() & ~size_t{3};
  switch (key.size() % 4) {
    case 3:
      h ^= byte_at(tail + 2) << 16;
      [[fallthrough]];
    case 2:
      h ^= byte_at(tail + 1) << 8;
      [[fallthrough]];
    case 1:
      h ^= byte_at(tail);
      h *= m;
      break;
    default:
      break;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>(h);
}

int32_t partition_for_key(std::span<const std::byte> key, int32_t partition_count) noexcept {
  // Utils.toPositive: clear the sign bit (not abs(), which overflows on INT_MIN).
  const int32_t positive = murmur2(key) & 0x7fffffff;
  return positive % partition_count;
}

}  // namespace ringlog::broker
