#pragma once
// Byte strings written as integer lists, for the protocol tests' expected encodings.

#include <initializer_list>

#include "ringlog/protocol/wire.h"

namespace ringlog::protocol::test {

inline bytes bytes_of(std::initializer_list<int> values) {
  bytes out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

}  // namespace ringlog::protocol::test
