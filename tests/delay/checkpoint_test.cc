#include <doctest.h>

#include "ringlog/delay/checkpoint.h"
#include "ringlog/delay/constants.h"

using namespace ringlog;
using namespace ringlog::delay;

TEST_CASE("checkpoint round-trips") {
  checkpoint c;
  c.position = model::offset{1000};
  c.moved_ahead = {model::offset{1001}, model::offset{1005}, model::offset{90000}};
  c.in_flight = {model::offset{1000}, model::offset{1002}};
  c.intent_ms = 1'700'000'000'123;
  auto bytes = encode_checkpoint(c);
  auto back = decode_checkpoint(bytes);
  REQUIRE(back.ok());
  CHECK(*back == c);

  checkpoint empty;
  auto e = decode_checkpoint(encode_checkpoint(empty));
  REQUIRE(e.ok());
  CHECK(*e == empty);
}

TEST_CASE("checkpoint refuses clipped, trailing, out-of-order and unknown-version values") {
  checkpoint c;
  c.position = model::offset{5};
  c.moved_ahead = {model::offset{7}, model::offset{9}};
  c.in_flight = {model::offset{5}};
  c.intent_ms = 42;
  auto bytes = encode_checkpoint(c);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto clipped = decode_checkpoint(std::span(bytes).first(cut));
    CHECK_FALSE(clipped.ok());
  }
  auto longer = bytes;
  longer.push_back(std::byte{0});
  auto trailing = decode_checkpoint(longer);
  REQUIRE_FALSE(trailing.ok());
  CHECK(trailing.error().code == errc::corrupt_message);

  checkpoint equal_moved;   // a moved offset equal to the position is impossible (it is unmoved)
  equal_moved.position = model::offset{5};
  equal_moved.moved_ahead = {model::offset{5}};
  auto bad = decode_checkpoint(encode_checkpoint(equal_moved));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == errc::corrupt_message);

  auto versioned = bytes;
  versioned[0] = std::byte{2};   // zig-zag 1
  auto unknown = decode_checkpoint(versioned);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == errc::unsupported_version);
}

TEST_CASE("delay tiers cover every delay") {
  CHECK(tier_for_delay(0) == 0);
  CHECK(tier_for_delay(9'999) == 0);
  CHECK(tier_for_delay(10'000) == 1);
  CHECK(tier_for_delay(86'400'000) == 4);
  CHECK(tier_for_delay(delay_max_ms_limit) == tiers.size() - 1);
  CHECK(is_delay_topic("__delay-1h"));
  CHECK_FALSE(is_delay_topic("__consumer_offsets"));
}
