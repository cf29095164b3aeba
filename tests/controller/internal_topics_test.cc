// The coordinators' internal topics (controller/internal_topics.h): due once min(3, voters)
// brokers are usable or a session has passed since this node became the active controller;
// __consumer_offsets first, then __transaction_state; each with its configured partition count,
// the automatic replication factor, compacted with 100 MiB segments.

#include <doctest.h>

#include <map>

#include "cluster_image.h"
#include "ringlog/controller/constants.h"
#include "ringlog/controller/internal_topics.h"

namespace ringlog::controller {
namespace {

internal_topic_rules rules(size_t voters) {
  internal_topic_rules r;
  r.offsets_topic_partitions = 5;
  r.transaction_state_partitions = 3;
  r.quorum_voters = voters;
  r.session_timeout_ms = 9'000;
  return r;
}

std::shared_ptr<const metadata_image> brokers(int32_t count) {
  cluster c;
  for (int32_t id = 1; id <= count; ++id) c.add_broker(id);
  return c.image();
}

/// A topic's partition count, replication factor and configs in `records`.
struct created {
  std::string name;
  size_t partitions = 0;
  size_t replication_factor = 0;
  std::map<std::string, std::string> configs;
};

created read(const std::vector<protocol::metadata_record>& records) {
  created out;
  for (const auto& r : records) {
    if (const auto* t = std::get_if<protocol::topic_record>(&r)) out.name = t->name;
    if (const auto* p = std::get_if<protocol::partition_record>(&r)) {
      ++out.partitions;
      out.replication_factor = p->replicas.size();
    }
    if (const auto* c = std::get_if<protocol::config_record>(&r)) out.configs[c->name] = c->value.value_or("");
  }
  return out;
}

}  // namespace

TEST_CASE("internal_topics_due: min(3, voters) usable brokers, or a session since the controller became active") {
  CHECK_FALSE(internal_topics_due(*brokers(2), rules(3), 1'000, 0));
  CHECK(internal_topics_due(*brokers(3), rules(3), 1'000, 0));
  CHECK(internal_topics_due(*brokers(3), rules(5), 1'000, 0));   // never more than 3
  CHECK(internal_topics_due(*brokers(1), rules(1), 1'000, 0));
  CHECK(internal_topics_due(*brokers(1), rules(0), 1'000, 0));   // no voters listed counts as one
  CHECK_FALSE(internal_topics_due(*brokers(1), rules(3), 8'999, 0));
  CHECK(internal_topics_due(*brokers(1), rules(3), 9'000, 0));   // some brokers never came
}

TEST_CASE("internal topics: __consumer_offsets first, then __transaction_state, then none") {
  cluster c;
  for (int32_t id = 1; id <= 3; ++id) c.add_broker(id);
  CHECK(missing_internal_topic(*c.image()) == consumer_offsets_topic_name);
  c.add_topic(std::string(consumer_offsets_topic_name), {{1}});
  CHECK(missing_internal_topic(*c.image()) == transaction_state_topic_name);
  c.add_topic(std::string(transaction_state_topic_name), {{1}});
  CHECK_FALSE(missing_internal_topic(*c.image()));
}

TEST_CASE("internal topics: the configured partitions, the automatic replication factor, compacted") {
  const std::string segment_bytes = std::to_string(constants::internal_topic_segment_bytes);
  CHECK(segment_bytes == "104857600");
  auto offsets = internal_topic_records(*brokers(4), rules(3), consumer_offsets_topic_name, id_of(9));
  REQUIRE(offsets.ok());
  const auto o = read(*offsets);
  CHECK(o.name == "__consumer_offsets");
  CHECK(o.partitions == 5);
  CHECK(o.replication_factor == 3);   // 3 of 4 usable brokers
  CHECK(o.configs == std::map<std::string, std::string>{{"cleanup.policy", "compact"}, {"segment.bytes", segment_bytes}});
  auto txn = internal_topic_records(*brokers(2), rules(3), transaction_state_topic_name, id_of(9));
  REQUIRE(txn.ok());
  const auto t = read(*txn);
  CHECK(t.name == "__transaction_state");
  CHECK(t.partitions == 3);
  CHECK(t.replication_factor == 2);   // every usable broker when fewer than 3
  CHECK(t.configs == o.configs);
  auto none = internal_topic_records(*brokers(0), rules(3), consumer_offsets_topic_name, id_of(9));
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == errc::invalid_replication_factor);
}

}  // namespace ringlog::controller
