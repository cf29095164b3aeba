#include "ringlog/storage/offset_map.h"

#include <algorithm>
#include <cstring>

#include "ringlog/base/assert.h"

namespace ringlog::storage {
namespace {

constexpr size_t slots_min = 16;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

uint64_t load_le(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint64_t>(p[i]);
  return v;
}

}  // namespace

std::pair<uint64_t, uint64_t> murmur3_128(std::span<const std::byte> key) {
  constexpr uint64_t c1 = 0x87c37b91114253d5ULL;
  constexpr uint64_t c2 = 0x4cf5ad432745937fULL;
  const size_t len = key.size();
  const size_t blocks = len / 16;
  uint64_t h1 = 0;
  uint64_t h2 = 0;
  for (size_t i = 0; i < blocks; ++i) {
    uint64_t k1 = load_le(key.data() + i * 16);
    uint64_t k2 = load_le(key.data() + i * 16 + 8);
    k1 *= c1; k1 = rotl(k1, 31); k1 *= c2; h1 ^= k1;
    h1 = rotl(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729;
    k2 *= c2; k2 = rotl(k2, 33); k2 *= c1; h2 ^= k2;
    h2 = rotl(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5;
  }
  const std::byte* tail = key.data() + blocks * 16;
  uint64_t k1 = 0;
  uint64_t k2 = 0;
  const size_t rest = len & 15;
  for (size_t i = rest; i > 8; --i) k2 ^= static_cast<uint64_t>(tail[i - 1]) << ((i - 9) * 8);
  if (rest > 8) { k2 *= c2; k2 = rotl(k2, 33); k2 *= c1; h2 ^= k2; }
  for (size_t i = std::min<size_t>(rest, 8); i > 0; --i) k1 ^= static_cast<uint64_t>(tail[i - 1]) << ((i - 1) * 8);
  if (rest > 0) { k1 *= c1; k1 = rotl(k1, 31); k1 *= c2; h1 ^= k1; }
  h1 ^= len;
  h2 ^= len;
  h1 += h2;
  h2 += h1;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h1 += h2;
  h2 += h1;
  return {h1, h2};
}

offset_map::offset_map(size_t memory_bytes) : slots_max_(std::max(slots_min, memory_bytes / slot_bytes)) {
  // Small until a pass sizes it: a broker whose compacted logs are small (or idle) never pays
  // for the whole dedupe buffer, nor the time to clear it on its shard thread.
  reset_for(0);
}

void offset_map::reset_for(size_t expected_keys) {
  const double wanted = static_cast<double>(expected_keys) / load_factor + static_cast<double>(slots_min);
  const size_t slots = wanted >= static_cast<double>(slots_max_) ? slots_max_ : static_cast<size_t>(wanted);
  if (slots != slots_.size()) {
    std::vector<slot>(slots).swap(slots_);   // releases the memory of a larger earlier pass
  } else {
    std::fill(slots_.begin(), slots_.end(), slot{});
  }
  size_ = 0;
  capacity_ = static_cast<size_t>(static_cast<double>(slots) * load_factor);
  RINGLOG_ASSERT(capacity_ > 0 && capacity_ < slots, "the map keeps a free slot so every probe ends");
}

size_t offset_map::find(uint64_t h1, uint64_t h2) const {
  // Linear probing from h1: ends at the key's slot or the first empty one (a free slot always
  // exists since size_ <= capacity_ < slots).
  size_t i = static_cast<size_t>(h1 % slots_.size());
  while (true) {
    const slot& s = slots_[i];
    if (s.offset < 0 || (s.h1 == h1 && s.h2 == h2)) return i;
    if (++i == slots_.size()) i = 0;
  }
}

bool offset_map::put(std::span<const std::byte> key, model::offset offset) {
  RINGLOG_ASSERT_OP(offset.value(), >=, 0);
  auto [h1, h2] = murmur3_128(key);
  slot& s = slots_[find(h1, h2)];
  if (s.offset >= 0) {
    s.offset = std::max(s.offset, offset.value());
    return true;
  }
  if (size_ >= capacity_) return false;
  s = slot{h1, h2, offset.value()};
  ++size_;
  return true;
}

std::optional<model::offset> offset_map::get(std::span<const std::byte> key) const {
  auto [h1, h2] = murmur3_128(key);
  const slot& s = slots_[find(h1, h2)];
  if (s.offset < 0) return std::nullopt;
  return model::offset{s.offset};
}

void offset_map::clear() {
  std::fill(slots_.begin(), slots_.end(), slot{});
  size_ = 0;
}

}  // namespace ringlog::storage
