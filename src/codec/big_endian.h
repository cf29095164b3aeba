#pragma once
// Big-endian integer loads and stores (Kafka's wire and disk byte order). Private to codec.
// Callers check bounds first; these touch exactly sizeof(T) bytes at p.

#include <cstddef>
#include <type_traits>

namespace ringlog::codec::detail {

template <typename T>
void put_be(std::byte* p, T v) noexcept {
  using U = std::make_unsigned_t<T>;
  const auto u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>(u >> (8 * (sizeof(T) - 1 - i)));
}

template <typename T>
T get_be(const std::byte* p) noexcept {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) u = static_cast<U>((u << 8) | static_cast<U>(p[i]));
  return static_cast<T>(u);
}

}  // namespace ringlog::codec::detail
