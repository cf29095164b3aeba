#include <doctest.h>

#include "ringlog/group/offsets_codec.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::group;
using ringlog::group::test::tp;

namespace {
group_metadata sample_group() {
  group_metadata g;
  g.assignor = assignor_kind::range;
  g.generation = generation_id(7);
  member_metadata a;
  a.member_id = "a-1";
  a.group_instance_id = "host-a";
  a.client_name = "a";
  a.session_timeout_ms = 10'000;
  a.rebalance_timeout_ms = 60'000;
  a.auto_offset_reset = offset_reset::earliest;
  a.generation = generation_id(6);
  a.sub = subscription{subscription_kind::pattern, {}, "orders-.*", {}};
  a.target = {tp("orders-eu", 0), tp("orders-us", 1)};
  a.owned = {tp("orders-eu", 0)};
  member_metadata b;
  b.member_id = "b-2";
  b.client_name = "b";
  b.sub = subscription{subscription_kind::topics, {"x", "y"}, "", {}};
  g.members = {a, b};
  return g;
}
}  // namespace

TEST_CASE("offset commit key and value: Kafka's layout byte for byte") {
  const auto key = encode_offset_commit_key("g", tp("t", 2));
  const model::bytes expect_key{std::byte{0}, std::byte{1},                 // version 1
                                std::byte{0}, std::byte{1}, std::byte{'g'},  // group
                                std::byte{0}, std::byte{1}, std::byte{'t'},  // topic
                                std::byte{0}, std::byte{0}, std::byte{0}, std::byte{2}};
  CHECK(key == expect_key);
  const auto value = encode_offset_commit_value(committed_offset{offset(10), "m", 258});
  REQUIRE(value.size() == 2 + 8 + 4 + 2 + 1 + 8);
  CHECK(value[1] == std::byte{3});    // version 3
  CHECK(value[9] == std::byte{10});   // offset, big-endian
  CHECK(value[10] == std::byte{0xFF});  // leader epoch -1
  CHECK(value[16] == std::byte{'m'});
  CHECK(value[23] == std::byte{1});   // 258 = 0x0102
  CHECK(value[24] == std::byte{2});
  auto k = decode_offsets_topic_key(key);
  REQUIRE(k.ok());
  CHECK(std::get<offset_commit_key>(*k) == offset_commit_key{"g", tp("t", 2)});
  auto v = decode_offset_commit_value(value);
  REQUIRE(v.ok());
  CHECK(*v == committed_offset{offset(10), "m", 258});
}

TEST_CASE("group metadata round-trips") {
  const auto g = sample_group();
  const auto key = encode_group_metadata_key("grp");
  auto k = decode_offsets_topic_key(key);
  REQUIRE(k.ok());
  CHECK(std::get<group_metadata_key>(*k).group_id == "grp");
  auto v = decode_group_metadata_value(encode_group_metadata_value(g));
  REQUIRE(v.ok());
  CHECK(*v == g);
}

TEST_CASE("clipped values and keys are corrupt at every length, never a partial read") {
  const auto value = encode_group_metadata_value(sample_group());
  for (size_t n = 0; n < value.size(); ++n) {
    auto v = decode_group_metadata_value(std::span(value.data(), n));
    REQUIRE(!v.ok());
    CHECK(v.error().code == errc::corrupt_message);
  }
  const auto off = encode_offset_commit_value(committed_offset{offset(1), "meta", 5});
  for (size_t n = 0; n < off.size(); ++n) CHECK(!decode_offset_commit_value(std::span(off.data(), n)).ok());
  const auto key = encode_offset_commit_key("group", tp("topic", 1));
  for (size_t n = 0; n < key.size(); ++n) CHECK(!decode_offsets_topic_key(std::span(key.data(), n)).ok());
  auto longer = off;
  longer.push_back(std::byte{0});
  auto r = decode_offset_commit_value(longer);
  REQUIRE(!r.ok());
  CHECK(r.error().message.find("trailing") != std::string::npos);
}

TEST_CASE("unknown versions are refused by name") {
  auto key = encode_offset_commit_key("g", tp("t", 0));
  key[1] = std::byte{9};
  auto k = decode_offsets_topic_key(key);
  REQUIRE(!k.ok());
  CHECK(k.error().code == errc::unsupported_version);
  auto value = encode_offset_commit_value(committed_offset{offset(1), "", 0});
  value[1] = std::byte{1};
  auto v = decode_offset_commit_value(value);
  REQUIRE(!v.ok());
  CHECK(v.error().code == errc::unsupported_version);
  auto g = encode_group_metadata_value(sample_group());
  g[1] = std::byte{3};  // Kafka's own GroupMetadataValue v3: not ours
  CHECK(decode_group_metadata_value(g).error().code == errc::unsupported_version);
  // Kafka's key version 0 has the same layout as 1 and is read.
  auto v0 = encode_offset_commit_key("g", tp("t", 0));
  v0[1] = std::byte{0};
  CHECK(decode_offsets_topic_key(v0).ok());
}

namespace {

consumer_instance_value sample_instance() {
  consumer_instance_value v;
  v.client_name = "worker";
  v.group_instance_id = "host-a";
  v.format = 1;
  v.auto_commit_enable = true;
  v.request_timeout_ms = 2500;
  v.session_timeout_ms = 45000;
  v.fetch_min_bytes = 7;
  v.auto_offset_reset = offset_reset::earliest;
  v.assignor = assignor_kind::range;
  v.sub.kind = subscription_kind::topics;
  v.sub.topics = {"orders", "payments"};
  return v;
}

}  // namespace

/// A version 103 value with an empty owner as the version 102 value it extends: without the
/// owner's 2-byte length at the end.
model::bytes version_102_of(model::bytes v103) {
  REQUIRE(v103[1] == std::byte{103});
  REQUIRE(v103[v103.size() - 1] == std::byte{0});
  REQUIRE(v103[v103.size() - 2] == std::byte{0});
  v103.resize(v103.size() - 2);
  v103[1] = std::byte{102};
  return v103;
}

TEST_CASE("consumer instance records round-trip; clipped, trailing and out-of-range bytes are corrupt") {
  const auto key = encode_consumer_instance_key("grp", "worker-1");
  auto k = decode_offsets_topic_key(key);
  REQUIRE(k.ok());
  CHECK(std::get<consumer_instance_key>(*k) == consumer_instance_key{"grp", "worker-1"});
  for (size_t n = 0; n < key.size(); ++n) CHECK(!decode_offsets_topic_key(std::span(key.data(), n)).ok());

  for (const auto& v : {sample_instance(), consumer_instance_value{}}) {
    const auto bytes = encode_consumer_instance_value(v);
    auto back = decode_consumer_instance_value(bytes);
    REQUIRE_MESSAGE(back.ok(), back.error().message);
    CHECK(*back == v);
    for (size_t n = 0; n < bytes.size(); ++n) CHECK(!decode_consumer_instance_value(std::span(bytes.data(), n)).ok());
    auto longer = bytes;
    longer.push_back(std::byte{0});
    CHECK(decode_consumer_instance_value(longer).error().message.find("trailing") != std::string::npos);
  }
  auto manual = sample_instance();
  manual.assignor.reset();
  manual.sub = subscription{};
  manual.sub.kind = subscription_kind::manual;
  manual.sub.partitions = {tp("orders", 3)};
  CHECK(*decode_consumer_instance_value(encode_consumer_instance_value(manual)) == manual);

  auto bad_format = encode_consumer_instance_value(sample_instance());
  // version(2) + client_name(2 + 6) + group_instance_id(2 + 6): the format byte.
  bad_format[18] = std::byte{2};
  auto r = decode_consumer_instance_value(bad_format);
  REQUIRE(!r.ok());
  CHECK(r.error().code == errc::corrupt_message);
  auto version = encode_consumer_instance_value(sample_instance());
  version[1] = std::byte{3};
  CHECK(decode_consumer_instance_value(version).error().code == errc::unsupported_version);
  // isolation_level (version 101); version 100 (before it) still reads, as read_uncommitted.
  auto committed = sample_instance();
  committed.read_committed = true;
  CHECK(*decode_consumer_instance_value(encode_consumer_instance_value(committed)) == committed);
  // Version 101 ends with isolation_level and has_retry (0 here): version 100 has neither.
  auto v100 = version_102_of(encode_consumer_instance_value(sample_instance()));
  v100.resize(v100.size() - 2);
  v100[1] = std::byte{100};
  auto old = decode_consumer_instance_value(v100);
  REQUIRE_MESSAGE(old.ok(), old.error().message);
  CHECK(*old == sample_instance());
  auto bad_isolation = version_102_of(encode_consumer_instance_value(committed));
  bad_isolation[bad_isolation.size() - 2] = std::byte{2};   // isolation_level, before has_retry
  CHECK(decode_consumer_instance_value(bad_isolation).error().code == errc::corrupt_message);
}

TEST_CASE("consumer instance values carry their owner (version 103, issue 29); version 102 reads with none") {
  auto v = sample_instance();
  v.owner = "User:alice";
  const auto bytes = encode_consumer_instance_value(v);
  auto back = decode_consumer_instance_value(bytes);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(*back == v);
  for (size_t n = 0; n < bytes.size(); ++n) CHECK(!decode_consumer_instance_value(std::span(bytes.data(), n)).ok());
  auto v102 = version_102_of(encode_consumer_instance_value(sample_instance()));
  auto read = decode_consumer_instance_value(v102);
  REQUIRE_MESSAGE(read.ok(), read.error().message);
  CHECK(read->owner.empty());
  CHECK(*read == sample_instance());
}

TEST_CASE("consumer instance values carry retry settings (version 101+) and version 100 values are still read") {
  auto v = sample_instance();
  v.retry = consumer_instance_value::retry_settings{7, 250, 1500, 60'000, "", ""};
  const auto bytes = encode_consumer_instance_value(v);
  auto back = decode_consumer_instance_value(bytes);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(*back == v);
  for (size_t n = 0; n < bytes.size(); ++n) CHECK(!decode_consumer_instance_value(std::span(bytes.data(), n)).ok());
  auto bad_flag = version_102_of(encode_consumer_instance_value(sample_instance()));
  bad_flag.back() = std::byte{2};   // has_retry must be 0 or 1
  CHECK(decode_consumer_instance_value(bad_flag).error().code == errc::corrupt_message);
  // A version 100 value: the same bytes without the retry part.
  auto old = version_102_of(encode_consumer_instance_value(sample_instance()));
  old.resize(old.size() - 2);   // isolation_level = 0 and has_retry = 0
  old[1] = std::byte{100};
  auto read = decode_consumer_instance_value(old);
  REQUIRE_MESSAGE(read.ok(), read.error().message);
  CHECK(*read == sample_instance());
  CHECK_FALSE(read->retry);
}

TEST_CASE("consumer instance values carry the retry topic templates (version 102); version 101 reads with none") {
  auto v = sample_instance();
  v.retry = consumer_instance_value::retry_settings{3, 100, 2000, 5'000, "retries.<group>.<topic>", "<topic>-<group>-dlt"};
  const auto bytes = encode_consumer_instance_value(v);
  auto back = decode_consumer_instance_value(bytes);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(*back == v);
  for (size_t n = 0; n < bytes.size(); ++n) CHECK(!decode_consumer_instance_value(std::span(bytes.data(), n)).ok());
  // Version 101: the same value without the two strings (2 + 23 and 2 + 19 bytes).
  auto v101 = version_102_of(bytes);
  v101.resize(v101.size() - (2 + 23) - (2 + 19));
  v101[1] = std::byte{101};
  auto read = decode_consumer_instance_value(v101);
  REQUIRE_MESSAGE(read.ok(), read.error().message);
  REQUIRE(read->retry);
  CHECK(read->retry->max_delivery_attempts == 3);
  CHECK(read->retry->retry_topic_template.empty());
  CHECK(read->retry->dead_letter_topic_template.empty());
  // A version 102 value cut before its templates is refused, not read as version 101.
  auto cut = bytes;
  cut.resize(v101.size());
  CHECK(decode_consumer_instance_value(cut).error().code == errc::corrupt_message);
}
