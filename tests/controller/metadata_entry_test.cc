// Metadata entries: round trip, and every truncation or bad count is an error naming the record.

#include <doctest.h>

#include "ringlog/controller/metadata_entry.h"

namespace ringlog::controller {

TEST_CASE("a metadata entry round-trips its records in order; every clipped copy is refused") {
  protocol::topic_record topic;
  topic.name = "orders";
  topic.topic_id.value.fill(7);
  protocol::partition_record partition;
  partition.topic_id = topic.topic_id;
  partition.partition_id = 0;
  partition.replicas = {1, 2, 3};
  partition.isr = {1, 2};
  partition.leader = 1;
  partition.leader_epoch = 4;
  partition.partition_epoch = 5;
  protocol::config_record config;
  config.resource_type = 2;
  config.resource_name = "orders";
  config.name = "retention.ms";
  config.value = std::nullopt;
  std::vector<protocol::metadata_record> records{topic, partition, config};
  auto bytes = encode_metadata_entry(records);
  auto back = decode_metadata_entry(bytes);
  REQUIRE(back.ok());
  CHECK(*back == records);
  CHECK(record_name(back->at(1)) == "PartitionRecord");
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto clipped = decode_metadata_entry(std::span(bytes).first(n));
    REQUIRE_FALSE(clipped.ok());
    CHECK(clipped.error().code == errc::invalid_record);
    CHECK(clipped.error().message.starts_with("metadata entry"));
  }
  auto longer = bytes;
  longer.push_back(std::byte{0});
  CHECK(decode_metadata_entry(longer).error().message.find("1 bytes after the last record") != std::string::npos);
  std::vector<std::byte> zero{std::byte{0}};
  CHECK(decode_metadata_entry(zero).error().message.find("record count 0") != std::string::npos);
}

}  // namespace ringlog::controller
