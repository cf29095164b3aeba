#pragma once
// Strong types for ids, offsets and epochs (in the spirit of Redpanda's named_type) so that an
// offset can never be passed where a file position or an epoch is expected.

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace ringlog::base {

template <typename T, typename Tag>
class named_type {
 public:
  using value_type = T;
  constexpr named_type() = default;
  constexpr explicit named_type(T v) : value_(v) {}
  [[nodiscard]] constexpr T value() const { return value_; }
  constexpr explicit operator T() const { return value_; }
  constexpr auto operator<=>(const named_type&) const = default;
  constexpr bool operator==(const named_type&) const = default;
  constexpr named_type& operator++() {
    ++value_;
    return *this;
  }
  constexpr named_type operator+(T d) const { return named_type(value_ + d); }
  constexpr named_type operator-(T d) const { return named_type(value_ - d); }
  constexpr T operator-(named_type o) const { return value_ - o.value_; }
  friend std::ostream& operator<<(std::ostream& os, named_type v) { return os << v.value_; }

 private:
  T value_{};
};

}  // namespace ringlog::base

template <typename T, typename Tag>
struct std::hash<ringlog::base::named_type<T, Tag>> {
  size_t operator()(ringlog::base::named_type<T, Tag> v) const noexcept { return std::hash<T>{}(v.value()); }
};
