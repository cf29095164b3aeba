// __transaction_state records: round trip, clipped buffers, unknown versions, bad fields.

#include <doctest.h>

#include "ringlog/txn/log_codec.h"

using namespace ringlog;
using namespace ringlog::txn;

namespace {

txn_metadata sample() {
  txn_metadata md;
  md.transactional_id = "orders-app";
  md.producer_id = model::producer_id{4242};
  md.producer_epoch = model::producer_epoch{7};
  md.last_producer_epoch = model::producer_epoch{6};
  md.timeout_ms = 60000;
  md.state = txn_state::ongoing;
  md.partitions = {{"a", model::partition_id{0}}, {"a", model::partition_id{3}}, {"__consumer_offsets", model::partition_id{5}}};
  md.txn_start_ms = 1'700'000'000'000;
  md.last_update_ms = 1'700'000'000'123;
  md.epoch_bump_per_transaction = true;
  return md;
}

}  // namespace

TEST_CASE("txn log key and value round-trip") {
  const auto md = sample();
  auto rec = record_of(md);
  REQUIRE(rec.value.has_value());
  auto id = decode_txn_log_key(rec.key);
  REQUIRE(id.ok());
  CHECK(*id == "orders-app");
  auto back = decode_txn_log_value(*id, *rec.value);
  REQUIRE(back.ok());
  CHECK(*back == md);
  // Kafka's TransactionLogKey v0 layout: int16 version 0, int16 length, bytes.
  CHECK(rec.key.size() == 2 + 2 + 10);
  CHECK(rec.key[0] == std::byte{0});
  CHECK(rec.key[1] == std::byte{0});
}

TEST_CASE("every state round-trips and dead is a tombstone") {
  for (int8_t s = 0; s <= 6; ++s) {
    auto md = sample();
    md.state = static_cast<txn_state>(s);
    auto rec = record_of(md);
    if (md.state == txn_state::dead) {
      CHECK_FALSE(rec.value.has_value());
      continue;
    }
    auto back = decode_txn_log_value(md.transactional_id, *rec.value);
    REQUIRE(back.ok());
    CHECK(back->state == md.state);
    CHECK(parse_kafka_name(kafka_name(md.state)) == md.state);
  }
  CHECK_FALSE(parse_kafka_name("ongoing").has_value());
}

TEST_CASE("clipped values and keys are corrupt, never partial") {
  const auto rec = record_of(sample());
  for (size_t n = 0; n < rec.value->size(); ++n) {
    auto r = decode_txn_log_value("x", std::span(rec.value->data(), n));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::corrupt_message);
  }
  for (size_t n = 0; n < rec.key.size(); ++n) {
    auto r = decode_txn_log_key(std::span(rec.key.data(), n));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::corrupt_message);
  }
  auto longer = *rec.value;
  longer.push_back(std::byte{0});
  auto r = decode_txn_log_value("x", longer);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("after last_update_ms") != std::string::npos);
}

TEST_CASE("unknown versions and out-of-range fields are refused") {
  auto rec = record_of(sample());
  auto key = rec.key;
  key[1] = std::byte{1};
  CHECK(decode_txn_log_key(key).error().code == errc::unsupported_version);
  auto value = *rec.value;
  value[1] = std::byte{0};   // version 0: Kafka's layout, not ours
  CHECK(decode_txn_log_value("x", value).error().code == errc::unsupported_version);
  value = *rec.value;
  value[2 + 8 + 2 + 2 + 4] = std::byte{9};   // state
  auto bad_state = decode_txn_log_value("x", value);
  REQUIRE_FALSE(bad_state.ok());
  CHECK(bad_state.error().message.find("state 9") != std::string::npos);
  value = *rec.value;
  value[2 + 8 + 2 + 2 + 4 + 1] = std::byte{2};   // flags
  CHECK(decode_txn_log_value("x", value).error().code == errc::corrupt_message);
}
