// The active controller's producer-id blocks (controller/producer_ids.h, Kafka's
// ProducerIdControlManager): block boundaries, blocks reserved but not committed never handed
// twice, the image's blocks of an earlier controller, the id space exhausted.

#include <doctest.h>

#include <limits>

#include "ringlog/controller/constants.h"
#include "ringlog/controller/producer_ids.h"

using namespace ringlog;
using controller::constants::producer_id_block_size;

namespace {

/// `image` with `records` committed at metadata offset `offset`.
std::shared_ptr<const controller::metadata_image> with(const controller::metadata_image& image,
                                                       const std::vector<protocol::metadata_record>& records,
                                                       int64_t offset) {
  controller::metadata_delta delta(image);
  for (const auto& r : records) REQUIRE(delta.apply(r, offset).ok());
  return std::move(delta).image();
}

std::shared_ptr<const controller::metadata_image> next_producer_id_at(int64_t next) {
  protocol::producer_ids_record r;
  r.broker_id = 1;
  r.next_producer_id = next;
  return with(controller::metadata_image{}, {r}, 1);
}

}  // namespace

TEST_CASE("producer ids: the first block is [0, block size) and its record ends it") {
  controller::producer_id_control control;
  auto block = control.generate_next_block(controller::metadata_image{}, 3, 42);
  REQUIRE(block.ok());
  CHECK(block->producer_id_start == 0);
  CHECK(block->producer_id_len == producer_id_block_size);
  CHECK(block->record.broker_id == 3);
  CHECK(block->record.broker_epoch == 42);
  CHECK(block->record.next_producer_id == producer_id_block_size);
}

TEST_CASE("producer ids: a block reserved but not committed yet is not handed out again") {
  controller::producer_id_control control;
  const controller::metadata_image empty;
  auto first = control.generate_next_block(empty, 1, -1);
  auto second = control.generate_next_block(empty, 2, -1);   // the first's record has not committed
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(second->producer_id_start == first->producer_id_start + producer_id_block_size);
  CHECK(second->record.next_producer_id == 2 * producer_id_block_size);
  // The first commits: the image is behind the reservation, which still wins.
  auto image = with(empty, {first->record}, 1);
  auto third = control.generate_next_block(*image, 1, -1);
  REQUIRE(third.ok());
  CHECK(third->producer_id_start == 2 * producer_id_block_size);
  // Both later records apply in order (next_producer_id never moves back).
  image = with(*image, {second->record}, 2);
  image = with(*image, {third->record}, 3);
  CHECK(image->next_producer_id() == 3 * producer_id_block_size);
}

TEST_CASE("producer ids: blocks an earlier controller committed are above the reservation") {
  controller::producer_id_control control;
  REQUIRE(control.generate_next_block(controller::metadata_image{}, 1, -1).ok());   // reserved [0, 1000)
  auto image = next_producer_id_at(7 * producer_id_block_size + 5);                // not a multiple: kept as it is
  auto block = control.generate_next_block(*image, 1, -1);
  REQUIRE(block.ok());
  CHECK(block->producer_id_start == 7 * producer_id_block_size + 5);
  CHECK(block->record.next_producer_id == 8 * producer_id_block_size + 5);
}

TEST_CASE("producer ids: the id space ends at 2^63 - 1") {
  constexpr int64_t max = std::numeric_limits<int64_t>::max();
  SUBCASE("the last whole block is handed out, then none") {
    controller::producer_id_control control;
    auto image = next_producer_id_at(max - producer_id_block_size);
    auto last = control.generate_next_block(*image, 1, -1);
    REQUIRE(last.ok());
    CHECK(last->producer_id_start == max - producer_id_block_size);
    CHECK(last->record.next_producer_id == max);
    auto none = control.generate_next_block(*image, 1, -1);
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().code == controller::errc::unknown_server_error);
    CHECK(none.error().message.find("exhausted") != std::string::npos);
  }
  SUBCASE("a block that would pass it is refused and reserves nothing") {
    controller::producer_id_control control;
    auto image = next_producer_id_at(max - producer_id_block_size + 1);
    CHECK_FALSE(control.generate_next_block(*image, 1, -1).ok());
    CHECK_FALSE(control.generate_next_block(*image, 1, -1).ok());
    auto lower = next_producer_id_at(0);
    auto block = control.generate_next_block(*lower, 1, -1);   // the refusals moved nothing
    REQUIRE(block.ok());
    CHECK(block->producer_id_start == 0);
  }
}
