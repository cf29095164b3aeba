// The metadata image: records applied in order, copy-on-write sharing, and refusals that name
// the record that does not fit.

#include <doctest.h>

#include "ringlog/controller/metadata_entry.h"
#include "ringlog/controller/metadata_image.h"

namespace ringlog::controller {
namespace {

uuid id_of(uint8_t b) {
  uuid u;
  u.value.fill(b);
  return u;
}

protocol::topic_record topic(std::string name, uint8_t id) {
  protocol::topic_record r;
  r.name = std::move(name);
  r.topic_id = id_of(id);
  return r;
}

protocol::partition_record partition(uint8_t topic_id, int32_t p, std::vector<int32_t> replicas, int32_t leader) {
  protocol::partition_record r;
  r.topic_id = id_of(topic_id);
  r.partition_id = p;
  r.replicas = replicas;
  r.isr = replicas;
  r.leader = leader;
  r.leader_epoch = 0;
  r.partition_epoch = 0;
  return r;
}

std::shared_ptr<const metadata_image> apply_all(const metadata_image& base, std::vector<protocol::metadata_record> records) {
  metadata_delta delta(base);
  int64_t offset = base.offset();
  for (const auto& r : records) REQUIRE(delta.apply(r, ++offset).ok());
  return std::move(delta).image();
}

}  // namespace

TEST_CASE("uuid text is Kafka's 22 characters of URL-safe base64, both ways") {
  uuid u;
  for (uint8_t i = 0; i < 16; ++i) u.value[i] = static_cast<uint8_t>(i * 17 + 3);
  const std::string text = uuid_to_string(u);
  CHECK(text.size() == 22);
  auto back = uuid_from_string(text);
  REQUIRE(back.ok());
  CHECK(*back == u);
  CHECK(uuid_to_string(uuid{}) == "AAAAAAAAAAAAAAAAAAAAAA");   // Kafka's Uuid.ZERO_UUID
  CHECK_FALSE(uuid_from_string("short").ok());
  CHECK(uuid_from_string("AAAAAAAAAAAAAAAAAAAAA*").error().message.find("'*'") != std::string::npos);
}

TEST_CASE("topics, partitions and configs build the image; changes bump the epochs") {
  metadata_image empty;
  protocol::config_record retention;
  retention.resource_type = config_resource_topic;
  retention.resource_name = "orders";
  retention.name = "retention.ms";
  retention.value = "1000";
  auto image = apply_all(empty, {topic("orders", 1), partition(1, 0, {1, 2, 3}, 1), partition(1, 1, {2, 3, 1}, 2),
                                 retention, topic("audit", 2), partition(2, 0, {3}, 3)});
  CHECK(image->offset() == 5);
  CHECK(image->partition_count() == 3);
  const topic_image* orders = image->find_topic("orders");
  REQUIRE(orders != nullptr);
  CHECK(image->find_topic(id_of(1)) == orders);
  REQUIRE(orders->partitions.size() == 2);
  CHECK(orders->partitions[1].leader == 2);
  CHECK(orders->configs.at("retention.ms") == "1000");

  protocol::partition_change_record shrink;
  shrink.topic_id = id_of(1);
  shrink.partition_id = 1;
  shrink.isr = std::vector<int32_t>{2, 3};   // leader unchanged (-2)
  protocol::partition_change_record move;
  move.topic_id = id_of(1);
  move.partition_id = 1;
  move.leader = 3;
  auto next = apply_all(*image, {shrink, move});
  const partition_image& p = next->find_topic("orders")->partitions[1];
  CHECK(p.in_sync_replicas == std::vector<int32_t>{2, 3});
  CHECK(p.leader == 3);
  CHECK(p.leader_epoch == 1);       // only the leader change bumps it
  CHECK(p.partition_epoch == 2);    // every change bumps it
  // A change computed at an older partition epoch is stale: refused, nothing changes.
  protocol::partition_change_record stale;
  stale.topic_id = id_of(1);
  stale.partition_id = 1;
  stale.isr = std::vector<int32_t>{3};
  stale.ringlog_expected_partition_epoch = 1;
  metadata_delta refused(*next);
  auto why = refused.apply(stale, next->offset() + 1);
  REQUIRE_FALSE(why.ok());
  CHECK(why.error().message.find("stale ISR change") != std::string::npos);
  stale.ringlog_expected_partition_epoch = 2;   // the current one: applies
  CHECK(apply_all(*next, {stale})->find_topic("orders")->partitions[1].in_sync_replicas == std::vector<int32_t>{3});
  // Copy-on-write: the untouched topic is shared, the old image is unchanged.
  CHECK(next->find_topic("audit") == image->find_topic("audit"));
  CHECK(image->find_topic("orders")->partitions[1].leader == 2);

  protocol::remove_topic_record remove;
  remove.topic_id = id_of(1);
  retention.value = std::nullopt;
  retention.resource_name = "audit";
  auto last = apply_all(*next, {remove, retention});
  CHECK(last->find_topic("orders") == nullptr);
  CHECK(last->find_topic(id_of(1)) == nullptr);
  CHECK(last->partition_count() == 1);
  CHECK(last->find_topic("audit")->configs.empty());
}

TEST_CASE("brokers register with an epoch; fencing names that epoch") {
  protocol::register_broker_record reg;
  reg.broker_id = 2;
  reg.broker_epoch = 7;
  reg.incarnation_id = id_of(9);
  reg.end_points.push_back({"http", "127.0.0.1", 8082, 0, {}});
  reg.rack = "a";
  reg.fenced = true;
  protocol::unfence_broker_record unfence;
  unfence.id = 2;
  unfence.epoch = 7;
  auto image = apply_all(metadata_image{}, {reg, unfence});
  const broker_registration* b = image->find_broker(2);
  REQUIRE(b != nullptr);
  CHECK_FALSE(b->fenced);
  CHECK(b->rack == "a");
  REQUIRE(b->endpoint("http") != nullptr);
  CHECK(b->endpoint("http")->port == 8082);

  metadata_delta stale(*image);
  protocol::fence_broker_record fence;
  fence.id = 2;
  fence.epoch = 6;   // an older registration
  auto refused = stale.apply(fence, image->offset() + 1);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("broker 2 epoch 6") != std::string::npos);
}

TEST_CASE("records that do not fit the image are refused, naming the record") {
  auto refused = [](std::vector<protocol::metadata_record> records) {
    metadata_delta delta{metadata_image{}};
    int64_t offset = 0;
    for (size_t i = 0; i + 1 < records.size(); ++i) REQUIRE(delta.apply(records[i], offset++).ok());
    auto r = delta.apply(records.back(), offset);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::invalid_record);
    return r.error().message;
  };
  CHECK(refused({partition(1, 0, {1}, 1)}).find("PartitionRecord for unknown topic id") != std::string::npos);
  CHECK(refused({topic("a", 1), partition(1, 1, {1}, 1)}).find("partition 1 of topic 'a', which has 0") != std::string::npos);
  CHECK(refused({topic("a", 1), topic("a", 2)}).find("'a', which exists") != std::string::npos);
  CHECK(refused({topic("a", 1), topic("b", 1)}).find("id") != std::string::npos);
  protocol::config_record bad_type;
  bad_type.resource_type = 9;
  CHECK(refused({bad_type}).find("resource type 9") != std::string::npos);
}

}  // namespace ringlog::controller

namespace ringlog::controller {

TEST_CASE("a snapshot payload rebuilds the image it was taken of") {
  protocol::register_broker_record reg;
  reg.broker_id = 1;
  reg.broker_epoch = 3;
  reg.end_points.push_back({"http", "127.0.0.1", 8082, 0, {}});
  reg.fenced = false;
  protocol::config_record broker_default;
  broker_default.resource_type = config_resource_broker;
  broker_default.resource_name = "";
  broker_default.name = "log.retention.ms";
  broker_default.value = "5";
  protocol::topic_record t;
  t.name = "orders";
  t.topic_id.value.fill(4);
  protocol::partition_record p;
  p.topic_id = t.topic_id;
  p.partition_id = 0;
  p.replicas = {1};
  p.isr = {1};
  p.leader = 1;
  p.leader_epoch = 6;
  p.partition_epoch = 9;
  protocol::config_record retention;
  retention.resource_type = config_resource_topic;
  retention.resource_name = "orders";
  retention.name = "retention.ms";
  retention.value = "1000";
  metadata_delta delta{metadata_image{}};
  int64_t offset = 0;
  for (const protocol::metadata_record& r : std::vector<protocol::metadata_record>{reg, broker_default, t, p, retention}) {
    REQUIRE(delta.apply(r, offset++).ok());
  }
  auto image = std::move(delta).image();
  auto payload = encode_snapshot(*image);
  auto back = decode_snapshot(payload, image->offset());
  REQUIRE(back.ok());
  CHECK(**back == *image);
  payload.pop_back();
  CHECK_FALSE(decode_snapshot(payload, 0).ok());
}

TEST_CASE("SCRAM credentials: set, replaced, removed, kept in snapshots, printed without keys") {
  auto credential = [](std::string name, int8_t mechanism, int32_t iterations, std::byte fill) {
    protocol::user_scram_credential_record r;
    r.name = std::move(name);
    r.mechanism = mechanism;
    r.salt = std::vector<std::byte>(32, fill);
    r.stored_key = std::vector<std::byte>(32, fill);
    r.server_key = std::vector<std::byte>(32, fill);
    r.iterations = iterations;
    return r;
  };
  metadata_delta delta{metadata_image{}};
  REQUIRE(delta.apply(credential("alice", 1, 4096, std::byte{1}), 0).ok());
  REQUIRE(delta.apply(credential("alice", 2, 8192, std::byte{2}), 1).ok());
  REQUIRE(delta.apply(credential("bob", 2, 4096, std::byte{3}), 2).ok());
  REQUIRE(delta.apply(credential("alice", 1, 16384, std::byte{4}), 3).ok());   // a new password replaces the old
  protocol::remove_user_scram_credential_record remove;
  remove.name = "bob";
  remove.mechanism = 2;
  REQUIRE(delta.apply(remove, 4).ok());
  auto image = std::move(delta).image();
  REQUIRE(image->scram_credentials().size() == 1);
  const auto& alice = image->scram_credentials().at("alice");
  CHECK(alice.at(1).iterations == 16384);
  CHECK(alice.at(2).iterations == 8192);
  auto back = decode_snapshot(encode_snapshot(*image), image->offset());
  REQUIRE(back.ok());
  CHECK(**back == *image);
  CHECK((*back)->scram_credentials().at("alice").at(1).stored_key == std::vector<std::byte>(32, std::byte{4}));
  // Refused: removing what is not there, an unknown mechanism, an empty name.
  metadata_delta bad{*image};
  auto missing = bad.apply(remove, 5);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("bob") != std::string::npos);
  CHECK_FALSE(metadata_delta{*image}.apply(credential("carol", 3, 4096, std::byte{0}), 5).ok());
  CHECK_FALSE(metadata_delta{*image}.apply(credential("", 1, 4096, std::byte{0}), 5).ok());
  // The metadata dump's text names user, mechanism and iterations, never the keys.
  const std::string text = describe_record(credential("alice", 2, 8192, std::byte{0x41}));
  CHECK(text == "UserScramCredentialRecord(name=alice, mechanism=SCRAM-SHA-512, salt=(32 bytes), "
                "storedKey=(redacted), serverKey=(redacted), iterations=8192)");
  CHECK(describe_record(remove) == "RemoveUserScramCredentialRecord(name=bob, mechanism=SCRAM-SHA-512)");
}

TEST_CASE("A create-only SCRAM credential (serve --add-scram) applies once: the later one is refused") {
  auto credential = [](int8_t mechanism, std::byte fill) {
    protocol::user_scram_credential_record r;
    r.name = "admin";
    r.mechanism = mechanism;
    r.salt = std::vector<std::byte>(32, fill);
    r.stored_key = std::vector<std::byte>(32, fill);
    r.server_key = std::vector<std::byte>(32, fill);
    r.iterations = 4096;
    r.ringlog_create_only = true;
    return r;
  };
  // Three nodes started together, each found no user and wrote its own (another salt each).
  metadata_delta delta{metadata_image{}};
  REQUIRE(delta.apply(credential(2, std::byte{1}), 0).ok());
  auto image = std::move(delta).image();
  for (std::byte fill : {std::byte{2}, std::byte{3}}) {
    auto refused = metadata_delta{*image}.apply(credential(2, fill), 1);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("already has a credential") != std::string::npos);
  }
  const auto& stored = image->scram_credentials().at("admin").at(2);
  CHECK(stored.salt == std::vector<std::byte>(32, std::byte{1}));
  CHECK_FALSE(stored.ringlog_create_only);   // kept as a credential: snapshots carry no flag
  // Another mechanism of the same user is another credential; an upsertion still replaces.
  CHECK(metadata_delta{*image}.apply(credential(1, std::byte{4}), 1).ok());
  auto upsert = credential(2, std::byte{5});
  upsert.ringlog_create_only = false;
  CHECK(metadata_delta{*image}.apply(upsert, 1).ok());
  // Kafka's bytes when the flag is off (a tagged field at its default is not written).
  protocol::writer with_flag;
  protocol::writer without_flag;
  REQUIRE(protocol::encode_metadata_record(with_flag, credential(2, std::byte{1}), 0).ok());
  REQUIRE(protocol::encode_metadata_record(without_flag, upsert, 0).ok());
  CHECK(std::move(with_flag).take().size() > std::move(without_flag).take().size());
  CHECK(describe_record(credential(2, std::byte{1})).find("createOnly=true") != std::string::npos);
}

TEST_CASE("ACLs are added and removed by id, shared until changed, and kept in snapshots") {
  protocol::access_control_entry_record acl;
  acl.id = id_of(7);
  acl.resource_type = 2;   // TOPIC
  acl.resource_name = "orders";
  acl.pattern_type = 3;    // LITERAL
  acl.principal = "User:alice";
  acl.host = "*";
  acl.operation = 3;       // READ
  acl.permission_type = 3; // ALLOW
  auto one = apply_all(metadata_image{}, {acl});
  REQUIRE(one->acls().size() == 1);
  CHECK(one->acls().begin()->second.principal == "User:alice");
  // An image no ACL record touched shares the map.
  auto later = apply_all(*one, {topic("t", 1)});
  CHECK(&later->acls() == &one->acls());
  auto payload = encode_snapshot(*later);
  auto back = decode_snapshot(payload, later->offset());
  REQUIRE(back.ok());
  CHECK(**back == *later);
  // The same id twice, or the removal of an unknown id, is refused naming the record.
  metadata_delta again(*one);
  auto twice = again.apply(acl, one->offset() + 1);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message.find("AccessControlEntryRecord") != std::string::npos);
  protocol::remove_access_control_entry_record remove;
  remove.id = id_of(8);
  metadata_delta unknown(*one);
  auto r = unknown.apply(remove, one->offset() + 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("unknown ACL id") != std::string::npos);
  remove.id = id_of(7);
  auto none = apply_all(*one, {remove});
  CHECK(none->acls().empty());
  CHECK(one->acls().size() == 1);   // the older image is unchanged
}

TEST_CASE("client quotas are set, replaced and removed per entity and key, and kept in snapshots") {
  protocol::client_quota_record set;
  set.entity.resize(2);
  set.entity[0].entity_type = "user";
  set.entity[0].entity_name = "alice";
  set.entity[1].entity_type = "client-id";
  set.entity[1].entity_name = std::nullopt;
  set.key = "producer_byte_rate";
  set.value = 1048576;
  auto other = set;
  other.key = "consumer_byte_rate";
  other.value = 2097152;
  auto one = apply_all(metadata_image{}, {set, other});
  const metadata_image::client_quota_entity alice_default{{"client-id", std::nullopt}, {"user", "alice"}};
  REQUIRE(one->client_quotas().size() == 1);
  CHECK(one->client_quotas().at(alice_default).at("producer_byte_rate") == 1048576);
  CHECK(one->client_quotas().at(alice_default).at("consumer_byte_rate") == 2097152);
  auto later = apply_all(*one, {topic("t", 1)});
  CHECK(&later->client_quotas() == &one->client_quotas());   // shared until a quota record
  auto payload = encode_snapshot(*later);
  auto back = decode_snapshot(payload, later->offset());
  REQUIRE(back.ok());
  CHECK(**back == *later);
  // Removing one key keeps the other; removing the last drops the entity; removing an absent
  // key is no error (Kafka's ClientQuotasImage).
  auto remove = set;
  remove.remove = true;
  auto fewer = apply_all(*one, {remove});
  CHECK(fewer->client_quotas().at(alice_default).size() == 1);
  other.remove = true;
  auto none = apply_all(*fewer, {other, remove});
  CHECK(none->client_quotas().empty());
  // An entity naming one type twice is refused naming the record.
  auto twice = set;
  twice.entity[1].entity_type = "user";
  twice.entity[1].entity_name = "b";
  metadata_delta bad_delta(*one);
  auto r = bad_delta.apply(twice, one->offset() + 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("ClientQuotaRecord") != std::string::npos);
}

}  // namespace ringlog::controller
