#pragma once
// The log cleaner's map from key to the latest offset seen for it (Kafka's SkimpyOffsetMap): a
// fixed block of memory, the dedupe buffer, holding one slot per key. A slot keeps a 128-bit hash
// of the key (MurmurHash3 x64-128) and the offset, never the key itself, so every key costs the
// same 24 bytes whatever its length. Two keys with one hash would let the cleaner drop the older
// one's latest value; with 128 bits that needs ~2^64 keys (Kafka accepts the same risk with MD5).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ringlog/model/types.h"

namespace ringlog::storage {

/// MurmurHash3 x64-128 of `key` (Austin Appleby's algorithm, seed 0): {h1, h2}.
std::pair<uint64_t, uint64_t> murmur3_128(std::span<const std::byte> key);

class offset_map {
 public:
  /// Bytes per slot: two 64-bit hash halves and the offset.
  static constexpr size_t slot_bytes = 24;
  /// Share of the slots that may be used: open addressing with linear probing stays at a few
  /// probes per lookup up to ~3/4 full (Kafka's log.cleaner.io.buffer.load.factor is 0.9 with a
  /// rehashing probe; linear probing degrades faster, so it stops earlier).
  static constexpr double load_factor = 0.75;

  /// A map using at most `memory_bytes` (log.cleaner.dedupe.buffer.size), created with 16 slots:
  /// reset_for() sizes it for a pass.
  explicit offset_map(size_t memory_bytes);

  /// Records `offset` as the latest offset of `key` (an offset below the one held is ignored).
  /// Returns false, changing nothing, when the key is new and the map holds capacity() keys.
  bool put(std::span<const std::byte> key, model::offset offset);
  /// The latest offset put for `key`, or nullopt.
  [[nodiscard]] std::optional<model::offset> get(std::span<const std::byte> key) const;
  void clear();
  /// Empties the map and sizes it for `expected_keys` (at most the memory given at construction),
  /// so a pass over a small dirty range touches little memory: the dedupe buffer is a bound, not
  /// an allocation every shard pays for.
  void reset_for(size_t expected_keys);

  [[nodiscard]] size_t size() const { return size_; }
  /// Keys the map accepts before put() refuses: slots x load_factor.
  [[nodiscard]] size_t capacity() const { return capacity_; }
  [[nodiscard]] size_t memory_bytes() const { return slots_.size() * slot_bytes; }

 private:
  struct slot {
    uint64_t h1 = 0;
    uint64_t h2 = 0;
    int64_t offset = -1;  // -1: empty
  };
  static_assert(sizeof(slot) == slot_bytes);
  size_t find(uint64_t h1, uint64_t h2) const;

  std::vector<slot> slots_;
  size_t slots_max_ = 0;   // from the memory bound
  size_t capacity_ = 0;
  size_t size_ = 0;
};

}  // namespace ringlog::storage
