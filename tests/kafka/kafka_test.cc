// The Kafka listener's request side (kafka/request_handler.h) on a broker with a deterministic
// runtime and a simulated disk: encoded request frames in, response frames decoded with the same
// codec. Real clients and real sockets are in tests/integration/test_kafka.py.
#include <doctest.h>

#include <future>
#include <mutex>

#include "call.h"
#include "handlers.h"
#include "ringlog/codec/compression.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/sim_file_system.h"
#include "ringlog/kafka/request_handler.h"
#include "test_runtime.h"

using namespace ringlog;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;

struct fixture {
  io::sim_file_system fs;
  base::manual_clock clock{t0};
  std::unique_ptr<test::test_runtime> runtime = std::make_unique<test::test_runtime>(2, clock);
  std::unique_ptr<broker::broker> b;
  std::unique_ptr<kafka::request_handler> handler;
  int32_t next_correlation = 1;

  fixture() {
    broker::broker_config config;
    config.log_dir = "/data";
    auto opened = broker::open_broker(config, {fs, clock, *runtime});
    REQUIRE(opened.ok());
    b = std::move(opened.value());
    handler = std::make_unique<kafka::request_handler>(*b, kafka::handler_options{});
  }
  ~fixture() {
    std::promise<void> p;
    b->shutdown([&p] { p.set_value(); });
    p.get_future().wait();
  }

  /// Hands one request to the handler; `done` gets its answer, on a shard thread. Fails the test
  /// when the handler refuses the frame.
  template <typename Body>
  void start(int16_t version, const Body& body, kafka::respond_fn done, int16_t api_key = Body::api_key) {
    protocol::request_header_data header;
    header.request_api_key = api_key;
    header.request_api_version = version;
    header.correlation_id = next_correlation++;
    header.client_id = "test";
    protocol::writer w;
    REQUIRE(protocol::encode_request_frame(w, header, body).ok());
    auto frame = std::move(w).take();
    auto handled = handler->handle(std::span(frame).subspan(4), std::move(done));
    REQUIRE_MESSAGE(handled.ok(), (handled.ok() ? "" : handled.error().message));
  }

  /// Sends one request; returns its answer frame (nullopt: no answer).
  template <typename Body>
  std::optional<protocol::bytes> send(int16_t version, const Body& body, int16_t api_key = Body::api_key) {
    auto answer = test::call<std::optional<kafka::response_frame>>(
        [&](auto done) { start(version, body, std::move(done), api_key); });
    if (!answer) return std::nullopt;
    // A simulated disk has no descriptors: every answer here is memory only.
    REQUIRE(answer->file_pieces.empty());
    return std::move(answer->memory);
  }

  /// Decodes an answer frame as Response at `version`; checks the correlation id.
  template <typename Response>
  Response decode(const protocol::bytes& frame, int16_t version, int16_t api_key = Response::api_key) {
    protocol::reader rd{std::span<const std::byte>(frame).subspan(4)};
    auto header = protocol::decode_response_header(rd, api_key, version);
    REQUIRE(header.ok());
    CHECK(header->correlation_id == next_correlation - 1);
    auto body = Response::decode(rd, version);
    REQUIRE_MESSAGE(body.ok(), (body.ok() ? "" : body.error().message));
    return std::move(body).value();
  }

  protocol::bytes batch(std::vector<std::string> values, model::compression c = model::compression::none) {
    std::vector<model::record> records;
    for (auto& v : values) {
      model::record r;
      r.timestamp = t0 - 1000;
      r.value = model::to_bytes(v);
      r.headers.push_back({"h", model::to_bytes("x")});
      records.push_back(std::move(r));
    }
    codec::batch_options options;
    options.compression = c;
    auto encoded = codec::encode_batch(options, records);
    REQUIRE(encoded.ok());
    return std::move(encoded).value();
  }

  protocol::produce_response_data::partition_produce_response produce(const std::string& topic, protocol::bytes records,
                                                                      int16_t version = 9, int16_t acks = -1) {
    protocol::produce_request_data req;
    req.acks = acks;
    req.timeout_ms = 1000;
    protocol::produce_request_data::topic_produce_data t;
    t.name = topic;
    protocol::produce_request_data::partition_produce_data p;
    p.index = 0;
    p.records = std::move(records);
    t.partition_data.push_back(std::move(p));
    req.topic_data.push_back(std::move(t));
    auto answer = send(version, req);
    REQUIRE(answer.has_value());
    auto resp = decode<protocol::produce_response_data>(*answer, version);
    REQUIRE(resp.responses.size() == 1);
    REQUIRE(resp.responses[0].partition_responses.size() == 1);
    return resp.responses[0].partition_responses[0];
  }

  protocol::fetch_response_data::partition_data fetch(const std::string& topic, int64_t offset, int16_t version = 12) {
    protocol::fetch_request_data req;
    req.max_wait_ms = 0;
    req.min_bytes = 1;
    req.max_bytes = 1 << 20;
    req.session_epoch = -1;
    protocol::fetch_request_data::fetch_topic t;
    t.topic = topic;
    protocol::fetch_request_data::fetch_partition p;
    p.partition = 0;
    p.fetch_offset = offset;
    p.partition_max_bytes = 1 << 20;
    t.partitions.push_back(p);
    req.topics.push_back(std::move(t));
    auto answer = send(version, req);
    REQUIRE(answer.has_value());
    auto resp = decode<protocol::fetch_response_data>(*answer, version);
    REQUIRE(resp.responses.size() == 1);
    REQUIRE(resp.responses[0].partitions.size() == 1);
    return resp.responses[0].partitions[0];
  }

  void create(const std::string& name) {
    auto created = test::call<broker::result<broker::topic_description>>(
        [&](auto done) { b->admin().create_topic({name, 1, std::nullopt, {}, false}, std::move(done)); });
    REQUIRE(created.ok());
  }
};

}  // namespace

TEST_CASE("every advertised api is inside the codec's range and routed") {
  fixture f;
  protocol::api_versions_request_data req;
  // KIP-511: v3+ names the client; an empty name is INVALID_REQUEST (42), as Kafka answers.
  auto refused = f.send(3, req);
  REQUIRE(refused.has_value());
  CHECK(f.decode<protocol::api_versions_response_data>(*refused, 3).error_code == 42);
  req.client_software_name = "ringlog-test";
  req.client_software_version = "1.0";
  auto answer = f.send(3, req);
  REQUIRE(answer.has_value());
  auto resp = f.decode<protocol::api_versions_response_data>(*answer, 3);
  CHECK(resp.error_code == 0);
  REQUIRE(resp.api_keys.size() == kafka::handled_apis().size());
  for (const auto& api : resp.api_keys) {
    CAPTURE(api.api_key);
    const auto* codec = protocol::find_api(api.api_key);
    REQUIRE(codec != nullptr);
    CHECK(api.min_version >= codec->lowest_version);
    CHECK(api.max_version <= codec->highest_version);
  }
}

TEST_CASE("unknown apis and versions answer UNSUPPORTED_VERSION under the request's correlation id") {
  fixture f;
  protocol::fetch_request_data fetch;
  auto answer = f.send(1, fetch);   // Fetch v1: below the advertised range
  REQUIRE(answer.has_value());
  auto resp = f.decode<protocol::api_versions_response_data>(*answer, 0, protocol::api_versions_request_data::api_key);
  CHECK(resp.error_code == 35);
  CHECK_FALSE(resp.api_keys.empty());
  protocol::vote_request_data vote;   // known to the codec, not served to clients
  answer = f.send(0, vote);
  REQUIRE(answer.has_value());
  CHECK(f.decode<protocol::api_versions_response_data>(*answer, 0, protocol::api_versions_request_data::api_key)
            .error_code == 35);
}

TEST_CASE("a body that does not decode is refused (the listener closes the connection)") {
  fixture f;
  protocol::request_header_data header;
  header.request_api_key = protocol::metadata_request_data::api_key;
  header.request_api_version = 1;
  header.correlation_id = 5;
  header.client_id = "test";
  protocol::writer w;
  protocol::metadata_request_data body;
  REQUIRE(protocol::encode_request_frame(w, header, body).ok());
  auto frame = std::move(w).take();
  frame.push_back(std::byte{0x42});   // one byte after the body
  bool answered = false;
  auto handled = f.handler->handle(std::span(frame).subspan(4), [&](std::optional<kafka::response_frame>) { answered = true; });
  CHECK_FALSE(handled.ok());
  CHECK_FALSE(answered);
  frame.resize(frame.size() - 3);    // and cut short
  handled = f.handler->handle(std::span(frame).subspan(4), [&](std::optional<kafka::response_frame>) { answered = true; });
  CHECK_FALSE(handled.ok());
}

TEST_CASE("produce stores the client's batch as sent and fetch returns it byte for byte") {
  fixture f;
  f.create("t");
  for (auto c : {model::compression::none, model::compression::gzip, model::compression::snappy,
                 model::compression::lz4, model::compression::zstd}) {
    CAPTURE(codec::compression_name(c));
    auto sent = f.batch({"a", "b", "c"}, c);
    auto before = f.fetch("t", 0).high_watermark;
    auto produced = f.produce("t", sent);
    CHECK(produced.error_code == 0);
    CHECK(produced.base_offset == before);
    auto fetched = f.fetch("t", before);
    CHECK(fetched.error_code == 0);
    CHECK(fetched.high_watermark == before + 3);
    REQUIRE(fetched.records.has_value());
    auto stored = *fetched.records;
    REQUIRE(stored.size() == sent.size());
    // Only base_offset and partition_leader_epoch (outside the CRC) are the broker's.
    codec::set_base_offset(sent, model::offset{before});
    codec::set_partition_leader_epoch(sent, model::leader_epoch{0});
    CHECK(stored == sent);
  }
}

TEST_CASE("Fetch waits for min_bytes (Kafka's DelayedFetch): answered once appends bring enough, else at max_wait_ms") {
  fixture f;
  kafka::handler_options options;
  options.clock = &f.clock;   // the request's max_wait_ms on the simulated clock
  f.handler->set_options(options);
  f.create("t");
  REQUIRE(f.produce("t", f.batch({"tiny"})).error_code == 0);
  const auto request = [](int32_t min_bytes, int32_t max_wait_ms) {
    protocol::fetch_request_data req;
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = min_bytes;
    req.max_bytes = 1 << 20;
    req.session_epoch = -1;
    protocol::fetch_request_data::fetch_topic t;
    t.topic = "t";
    protocol::fetch_request_data::fetch_partition p;
    p.partition = 0;
    p.fetch_offset = 0;
    p.partition_max_bytes = 1 << 20;
    t.partitions.push_back(p);
    req.topics.push_back(std::move(t));
    return req;
  };
  struct pending {
    std::mutex mutex;
    std::optional<kafka::response_frame> frame;
    bool answered = false;
  };
  const auto wait_answer = [&f, &request](int32_t min_bytes, int32_t max_wait_ms, const std::shared_ptr<pending>& into) {
    f.start(12, request(min_bytes, max_wait_ms), [into](std::optional<kafka::response_frame> frame) {
      std::lock_guard lock(into->mutex);
      into->frame = std::move(frame);
      into->answered = true;
    });
    f.runtime->wait_idle();
  };
  const auto answered = [](const std::shared_ptr<pending>& p) {
    std::lock_guard lock(p->mutex);
    return p->answered;
  };
  const auto records_of = [](const std::shared_ptr<pending>& p) {
    std::lock_guard lock(p->mutex);
    REQUIRE(p->frame.has_value());
    protocol::reader rd{std::span<const std::byte>(p->frame->memory).subspan(4)};
    REQUIRE(protocol::decode_response_header(rd, protocol::fetch_response_data::api_key, 12).ok());
    auto resp = protocol::fetch_response_data::decode(rd, 12);
    REQUIRE(resp.ok());
    REQUIRE(resp->responses.size() == 1);
    return resp->responses[0].partitions.at(0).records.value_or(protocol::bytes{});
  };
  const size_t tiny_bytes = f.batch({"tiny"}).size();

  // Early: 2000 bytes are asked for; the tiny batch is not enough, the next append is.
  auto early = std::make_shared<pending>();
  wait_answer(2000, 60000, early);
  CHECK_FALSE(answered(early));
  REQUIRE(f.produce("t", f.batch({std::string(2000, 'x')})).error_code == 0);
  f.runtime->wait_idle();
  REQUIRE(answered(early));
  CHECK(records_of(early).size() == tiny_bytes + f.batch({std::string(2000, 'x')}).size());

  // Never enough: the answer comes at max_wait_ms with what there is, not a millisecond before.
  auto late = std::make_shared<pending>();
  wait_answer(1'000'000, 1000, late);
  CHECK_FALSE(answered(late));
  f.runtime->advance_ms(999);
  f.runtime->wait_idle();
  CHECK_FALSE(answered(late));
  f.runtime->advance_ms(1);
  f.runtime->wait_idle();
  REQUIRE(answered(late));
  CHECK(records_of(late).size() == tiny_bytes + f.batch({std::string(2000, 'x')}).size());
}

TEST_CASE("corrupt batches are refused and nothing is stored") {
  fixture f;
  f.create("t");
  auto good = f.batch({"a", "b"});
  auto bad_crc = good;
  bad_crc.back() ^= std::byte{1};
  CHECK(f.produce("t", bad_crc).error_code == 2);
  auto truncated = good;
  truncated.resize(truncated.size() - 4);
  CHECK(f.produce("t", truncated).error_code == 2);
  auto bad_length = good;
  bad_length[11] = std::byte{0x7f};   // batch_length runs past the record set
  CHECK(f.produce("t", bad_length).error_code == 2);
  CHECK(f.fetch("t", 0).high_watermark == 0);
  CHECK(f.produce("t", good).error_code == 0);
  CHECK(f.fetch("t", 0).high_watermark == 2);
  CHECK(f.fetch("t", 5).error_code == 1);   // OFFSET_OUT_OF_RANGE
}

TEST_CASE("acks=0 takes no answer") {
  fixture f;
  f.create("t");
  protocol::produce_request_data req;
  req.acks = 0;
  protocol::produce_request_data::topic_produce_data t;
  t.name = "t";
  protocol::produce_request_data::partition_produce_data p;
  p.records = f.batch({"a"});
  t.partition_data.push_back(std::move(p));
  req.topic_data.push_back(std::move(t));
  CHECK_FALSE(f.send(9, req).has_value());
  f.runtime->wait_idle();
  CHECK(f.fetch("t", 0).high_watermark == 1);
}

TEST_CASE("metadata creates a missing topic when the client allows it, and names the topic id") {
  fixture f;
  protocol::metadata_request_data req;
  req.topics = std::vector<protocol::metadata_request_data::metadata_request_topic>(1);
  (*req.topics)[0].name = "auto";
  req.allow_auto_topic_creation = false;
  auto answer = f.send(12, req);
  auto resp = f.decode<protocol::metadata_response_data>(*answer, 12);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].error_code == 3);
  req.allow_auto_topic_creation = true;
  answer = f.send(12, req);
  resp = f.decode<protocol::metadata_response_data>(*answer, 12);
  REQUIRE(resp.topics.size() == 1);
  CHECK(resp.topics[0].error_code == 0);
  CHECK_FALSE(resp.topics[0].topic_id.is_zero());
  CHECK(resp.topics[0].partitions.size() == 1);
  CHECK(resp.brokers.size() == 1);
  CHECK(resp.brokers[0].port == 9092);
}

TEST_CASE("parse_uuid reads Kafka's base64 text form") {
  // Kafka's Uuid.toString of 0x0123456789abcdef_fedcba9876543210.
  auto id = kafka::parse_uuid("ASNFZ4mrze_-3LqYdlQyEA");
  const std::array<uint8_t, 16> want = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                        0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
  CHECK(id.value == want);
  CHECK(kafka::parse_uuid("short").is_zero());
  CHECK(kafka::parse_uuid("ASNFZ4mrze_-3LqYdlQy!A").is_zero());
}

TEST_CASE("the classic group apis answer Kafka's errors at every version they are listed for") {
  fixture f;
  // JoinGroup v4+ without a member id: MEMBER_ID_REQUIRED with the id to join with; the
  // protocol name is null from v7 (nullable there) and "" before.
  for (int16_t v : {4, 5, 6, 7, 9}) {
    protocol::join_group_request_data req;
    req.group_id = "g";
    req.session_timeout_ms = 10'000;
    req.rebalance_timeout_ms = 10'000;
    req.protocol_type = "consumer";
    protocol::join_group_request_data::join_group_request_protocol p;
    p.name = "range";
    req.protocols.push_back(p);
    auto answer = f.send(v, req);
    REQUIRE(answer.has_value());
    auto resp = f.decode<protocol::join_group_response_data>(*answer, v);
    CHECK(resp.error_code == 79);
    CHECK(resp.member_id.starts_with("test-"));
    CHECK(resp.protocol_name == (v >= 7 ? std::nullopt : std::optional<std::string>("")));
  }
  {
    protocol::join_group_request_data req;
    req.group_id = "g";
    req.session_timeout_ms = 10;   // below group.min.session.timeout.ms
    req.protocol_type = "consumer";
    req.protocols.emplace_back();
    auto resp = f.decode<protocol::join_group_response_data>(*f.send(2, req), 2);
    CHECK(resp.error_code == 26);   // INVALID_SESSION_TIMEOUT
  }
  {
    protocol::heartbeat_request_data req;
    req.group_id = "g";
    req.generation_id = 1;
    req.member_id = "nobody";
    CHECK(f.decode<protocol::heartbeat_response_data>(*f.send(4, req), 4).error_code == 25);
  }
  {
    protocol::sync_group_request_data req;
    req.group_id = "g";
    req.generation_id = 1;
    req.member_id = "nobody";
    CHECK(f.decode<protocol::sync_group_response_data>(*f.send(5, req), 5).error_code == 25);
  }
  {
    protocol::leave_group_request_data req;
    req.group_id = "g";
    protocol::leave_group_request_data::member_identity m;
    m.member_id = "nobody";
    req.members.push_back(m);
    auto resp = f.decode<protocol::leave_group_response_data>(*f.send(5, req), 5);
    CHECK(resp.error_code == 0);
    REQUIRE(resp.members.size() == 1);
    CHECK(resp.members[0].error_code == 25);
    protocol::leave_group_request_data old;
    old.group_id = "g";
    old.member_id = "nobody";
    CHECK(f.decode<protocol::leave_group_response_data>(*f.send(1, old), 1).error_code == 25);
  }
  {
    // A commit naming a generation for a group that does not exist: ILLEGAL_GENERATION (of a
    // topic that exists: an unknown one is answered UNKNOWN_TOPIC_OR_PARTITION first, as Kafka's
    // KafkaApis filters unknown topics before the coordinator).
    f.create("orders");
    protocol::offset_commit_request_data req;
    req.group_id = "none";
    req.generation_id_or_member_epoch = 3;
    req.member_id = "m";
    protocol::offset_commit_request_data::offset_commit_request_topic t;
    t.name = "orders";
    t.partitions.emplace_back();
    req.topics.push_back(t);
    auto resp = f.decode<protocol::offset_commit_response_data>(*f.send(8, req), 8);
    REQUIRE(resp.topics.size() == 1);
    CHECK(resp.topics[0].partitions.at(0).error_code == 22);
  }
  {
    protocol::offset_delete_request_data req;
    req.group_id = "none";
    CHECK(f.decode<protocol::offset_delete_response_data>(*f.send(0, req), 0).error_code == 69);
  }
}

// ---- client quotas (issue 31): DescribeClientQuotas (48), AlterClientQuotas (49), KIP-219 throttling

namespace {

using quota_entity_parts = std::vector<std::pair<std::string, std::optional<std::string>>>;
using quota_ops = std::vector<std::tuple<std::string, double, bool>>;

protocol::alter_client_quotas_request_data::entry_data quota_entry(const quota_entity_parts& entity, const quota_ops& ops) {
  protocol::alter_client_quotas_request_data::entry_data e;
  for (const auto& [type, name] : entity) e.entity.push_back({type, name, {}});
  for (const auto& [key, value, remove] : ops) e.ops.push_back({key, value, remove, {}});
  return e;
}

protocol::alter_client_quotas_response_data alter_quotas(fixture& f, std::vector<protocol::alter_client_quotas_request_data::entry_data> entries) {
  protocol::alter_client_quotas_request_data req;
  req.entries = std::move(entries);
  auto answer = f.send(1, req);
  REQUIRE(answer.has_value());
  return f.decode<protocol::alter_client_quotas_response_data>(*answer, 1);
}

protocol::describe_client_quotas_response_data describe_quotas(fixture& f, protocol::describe_client_quotas_request_data req) {
  auto answer = f.send(1, req);
  REQUIRE(answer.has_value());
  return f.decode<protocol::describe_client_quotas_response_data>(*answer, 1);
}

/// Sends `body` and returns the whole answer frame (its throttle fields with it).
template <typename Body>
kafka::response_frame answer_frame(fixture& f, int16_t version, const Body& body) {
  auto answer = test::call<std::optional<kafka::response_frame>>([&](auto done) { f.start(version, body, std::move(done)); });
  REQUIRE(answer.has_value());
  return std::move(*answer);
}

}  // namespace

TEST_CASE("AlterClientQuotas and DescribeClientQuotas: a round trip, and Kafka's INVALID_REQUEST per bad entry") {
  fixture f;
  auto altered = alter_quotas(f, {
      quota_entry({{"client-id", "slow"}}, {{"producer_byte_rate", 1048576, false}}),
      quota_entry({{"user", std::nullopt}}, {{"consumer_byte_rate", 2048, false}}),
      quota_entry({{"client-id", "x"}}, {{"no_such_key", 1, false}}),
      quota_entry({{"ip", "10.0.0.1"}, {"user", "alice"}}, {{"connection_creation_rate", 5, false}}),
      quota_entry({{"client-id", "neg"}}, {{"producer_byte_rate", -1, false}}),
      quota_entry({{"group", "g"}}, {{"producer_byte_rate", 1, false}}),
      quota_entry({{"client-id", "twice"}}, {{"producer_byte_rate", 1, false}}),
      quota_entry({{"client-id", "twice"}}, {{"consumer_byte_rate", 1, false}}),
  });
  REQUIRE(altered.entries.size() == 8);
  CHECK(altered.entries[0].error_code == 0);
  CHECK(altered.entries[1].error_code == 0);
  REQUIRE(altered.entries[1].entity.size() == 1);
  CHECK_FALSE(altered.entries[1].entity[0].entity_name.has_value());   // <default> answered as null
  const std::vector<std::string> named = {"no_such_key", "ip", "-1", "group", "twice", "twice"};
  for (size_t i = 2; i < 8; ++i) {
    CAPTURE(i);
    CHECK(altered.entries[i].error_code == 42);
    REQUIRE(altered.entries[i].error_message.has_value());
    CHECK_MESSAGE(altered.entries[i].error_message->find(named[i - 2]) != std::string::npos, *altered.entries[i].error_message);
  }

  auto all = describe_quotas(f, {});
  CHECK(all.error_code == 0);
  REQUIRE(all.entries.has_value());
  CHECK(all.entries->size() == 2);

  protocol::describe_client_quotas_request_data exact;
  exact.components.push_back({"client-id", 0, "slow", {}});
  exact.strict = true;
  auto slow = describe_quotas(f, exact);
  REQUIRE(slow.entries.has_value());
  REQUIRE(slow.entries->size() == 1);
  REQUIRE(slow.entries->at(0).values.size() == 1);
  CHECK(slow.entries->at(0).values[0].key == "producer_byte_rate");
  CHECK(slow.entries->at(0).values[0].value == 1048576.0);

  protocol::describe_client_quotas_request_data bad;
  bad.components.push_back({"client-id", 7, std::nullopt, {}});
  auto refused = describe_quotas(f, bad);
  CHECK(refused.error_code == 42);
  CHECK_FALSE(refused.entries.has_value());

  CHECK(alter_quotas(f, {quota_entry({{"client-id", "slow"}}, {{"producer_byte_rate", 0, true}})}).entries[0].error_code == 0);
  auto gone = describe_quotas(f, exact);
  REQUIRE(gone.entries.has_value());
  CHECK(gone.entries->empty());
}

TEST_CASE("KIP-219: over producer_byte_rate the answer carries throttle_time_ms; an old Produce version's is held back") {
  fixture f;
  f.create("t");
  // The fixture's requests say client.id "test".
  REQUIRE(alter_quotas(f, {quota_entry({{"client-id", "test"}}, {{"producer_byte_rate", 100, false}})}).entries[0].error_code == 0);
  auto produce_request = [&](std::string value) {
    protocol::produce_request_data req;
    req.acks = -1;
    req.timeout_ms = 1000;
    protocol::produce_request_data::topic_produce_data t;
    t.name = "t";
    protocol::produce_request_data::partition_produce_data p;
    p.index = 0;
    p.records = f.batch({std::move(value)});
    t.partition_data.push_back(std::move(p));
    req.topic_data.push_back(std::move(t));
    return req;
  };
  // 3000 bytes against 100 bytes/s over an 11 x 1 s window: about 30 x the bound.
  auto frame = answer_frame(f, 9, produce_request(std::string(3000, 'x')));
  CHECK(frame.throttle_time_ms > 0);
  CHECK(frame.client_throttles);
  auto body = f.decode<protocol::produce_response_data>(frame.memory, 9);
  CHECK(body.throttle_time_ms == frame.throttle_time_ms);
  CHECK(body.responses.at(0).partition_responses.at(0).error_code == 0);   // the records are stored all the same
  auto old = answer_frame(f, 5, produce_request("y"));
  CHECK(old.throttle_time_ms > 0);
  CHECK_FALSE(old.client_throttles);   // Produce v5 < 6: the listener holds the answer back
}

TEST_CASE("KIP-219: a consumer over consumer_byte_rate gets its data once, then an empty answer with the throttle time") {
  fixture f;
  f.create("t");
  CHECK(f.produce("t", f.batch({std::string(3000, 'x')})).error_code == 0);
  REQUIRE(alter_quotas(f, {quota_entry({{"client-id", "test"}}, {{"consumer_byte_rate", 100, false}})}).entries[0].error_code == 0);
  auto first = f.fetch("t", 0);
  REQUIRE(first.records.has_value());
  CHECK_FALSE(first.records->empty());
  protocol::fetch_request_data req;
  req.max_bytes = 1 << 20;
  req.session_epoch = -1;
  protocol::fetch_request_data::fetch_topic topic;
  topic.topic = "t";
  protocol::fetch_request_data::fetch_partition partition;
  partition.partition_max_bytes = 1 << 20;
  topic.partitions.push_back(partition);
  req.topics.push_back(std::move(topic));
  auto frame = answer_frame(f, 12, req);
  CHECK(frame.throttle_time_ms > 0);
  auto body = f.decode<protocol::fetch_response_data>(frame.memory, 12);
  CHECK(body.throttle_time_ms == frame.throttle_time_ms);
  CHECK(body.responses.empty());
}

TEST_CASE("KIP-599: CreateTopics v6+ past controller_mutation_rate is refused with THROTTLING_QUOTA_EXCEEDED; v5 is throttled") {
  fixture f;
  // 1 partition per second: a burst of 11 (11 samples of 1 s).
  REQUIRE(alter_quotas(f, {quota_entry({{"client-id", "test"}}, {{"controller_mutation_rate", 1, false}})}).entries[0].error_code == 0);
  auto create_topics = [](std::string name) {
    protocol::create_topics_request_data req;
    req.timeout_ms = 5000;
    protocol::create_topics_request_data::creatable_topic t;
    t.name = std::move(name);
    t.num_partitions = 12;
    t.replication_factor = -1;
    req.topics.push_back(std::move(t));
    return req;
  };
  auto first = f.decode<protocol::create_topics_response_data>(answer_frame(f, 6, create_topics("m1")).memory, 6);
  CHECK(first.topics.at(0).error_code == 0);   // admitted while the bucket holds tokens, then below zero
  auto refused_frame = answer_frame(f, 7, create_topics("m2"));
  auto refused = f.decode<protocol::create_topics_response_data>(refused_frame.memory, 7);
  CHECK(refused.topics.at(0).error_code == 89);
  CHECK(refused.throttle_time_ms > 0);
  CHECK(refused_frame.throttle_time_ms == refused.throttle_time_ms);
  auto lenient = f.decode<protocol::create_topics_response_data>(answer_frame(f, 5, create_topics("m3")).memory, 5);
  CHECK(lenient.topics.at(0).error_code == 0);
  CHECK(lenient.throttle_time_ms > 0);
}

TEST_CASE("KIP-219's version table: which clients wait out a throttle time themselves") {
  CHECK_FALSE(kafka::detail::client_throttles(0, 5));   // Produce
  CHECK(kafka::detail::client_throttles(0, 6));
  CHECK_FALSE(kafka::detail::client_throttles(1, 7));   // Fetch
  CHECK(kafka::detail::client_throttles(1, 8));
  CHECK(kafka::detail::client_throttles(48, 0));        // DescribeClientQuotas: after KIP-219
}

TEST_CASE("request_percentage (KIP-124): the handling time counts, and every answer carries the throttle it asks") {
  fixture f;
  // A bound no request can stay under: any measurable handling time is over it.
  REQUIRE(alter_quotas(f, {quota_entry({{"client-id", "test"}}, {{"request_percentage", 1e-9, false}})}).entries[0].error_code == 0);
  protocol::describe_cluster_request_data describe;
  auto frame = answer_frame(f, 1, describe);
  CHECK(frame.throttle_time_ms > 0);
  CHECK(frame.throttle_time_ms <= 1000);   // Kafka caps a request-time throttle at one sample (1 s)
  auto body = f.decode<protocol::describe_cluster_response_data>(frame.memory, 1);
  CHECK(body.throttle_time_ms == frame.throttle_time_ms);
}
