// ws_frame_meter (ws_frame_meter.h): a data message's declared size is known from its frame
// headers as they arrive, before the payload, however the bytes are split.
#include "ws_frame_meter.h"

#include <doctest/doctest.h>

#include <vector>

using namespace ringlog::gateway;

namespace {

/// A client frame (masked, as RFC 6455 section 5.3 requires of clients) header declaring
/// `length` payload bytes, with `opcode` and FIN as given.
std::vector<std::byte> header(uint8_t opcode, uint64_t length, bool fin = true) {
  std::vector<std::byte> out{std::byte(static_cast<uint8_t>((fin ? 0x80 : 0) | opcode))};
  if (length < 126) {
    out.push_back(std::byte(static_cast<uint8_t>(0x80 | length)));
  } else if (length <= 0xffff) {
    out.push_back(std::byte{0x80 | 126});
    for (int i = 1; i >= 0; --i) out.push_back(std::byte(static_cast<uint8_t>(length >> (8 * i))));
  } else {
    out.push_back(std::byte{0x80 | 127});
    for (int i = 7; i >= 0; --i) out.push_back(std::byte(static_cast<uint8_t>(length >> (8 * i))));
  }
  for (int i = 0; i < 4; ++i) out.push_back(std::byte{0x5a});   // the mask key
  return out;
}

std::vector<std::byte> frame(uint8_t opcode, size_t length, bool fin = true) {
  auto out = header(opcode, length, fin);
  out.insert(out.end(), length, std::byte{'x'});
  return out;
}

}  // namespace

TEST_CASE("a frame header declaring 2^63 bytes is over the bound at once, even fed a byte at a time") {
  ws_frame_meter meter(1024);
  const auto h = header(0x1, uint64_t{1} << 63);
  for (size_t i = 0; i + 1 < h.size(); ++i) CHECK_FALSE(meter.feed(std::span(&h[i], 1)).has_value());
  auto over = meter.feed(std::span(&h.back(), 1));
  REQUIRE(over.has_value());
  CHECK(*over == uint64_t{1} << 63);
}

TEST_CASE("messages within the bound pass, whole or split; continuations add up; control frames do not count") {
  ws_frame_meter meter(1000);
  std::vector<std::byte> stream;
  for (const auto& f : {frame(0x1, 1000), frame(0x1, 125), frame(0x1, 600, false), frame(0x9, 100),
                        frame(0x0, 400, true), frame(0x2, 70'000 - 69'000)}) {
    stream.insert(stream.end(), f.begin(), f.end());
  }
  CHECK_FALSE(meter.feed(stream).has_value());
  // Split at every 7 bytes: the same answer.
  ws_frame_meter split(1000);
  for (size_t at = 0; at < stream.size(); at += 7) {
    CHECK_FALSE(split.feed(std::span(stream).subspan(at, std::min<size_t>(7, stream.size() - at))).has_value());
  }
  // A continuation that takes the message past the bound: over at its header.
  auto more = frame(0x1, 600, false);
  auto cont = header(0x0, 401);
  more.insert(more.end(), cont.begin(), cont.end());
  auto over = meter.feed(more);
  REQUIRE(over.has_value());
  CHECK(*over == 1001);
}

TEST_CASE("the 16-bit length form is read; the sum saturates instead of wrapping") {
  ws_frame_meter meter(70'000);
  CHECK_FALSE(meter.feed(header(0x1, 65'535, false)).has_value());
  ws_frame_meter huge(UINT64_MAX - 1);
  CHECK_FALSE(huge.feed(frame(0x1, 10, false)).has_value());
  auto over = huge.feed(header(0x0, UINT64_MAX));
  REQUIRE(over.has_value());
  CHECK(*over == UINT64_MAX);
}
