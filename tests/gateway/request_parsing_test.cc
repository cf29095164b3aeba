#include <doctest.h>

#include "errors.h"
#include "metrics.h"
#include "request_parsing.h"

using namespace ringlog;
using namespace ringlog::gateway;

namespace {
std::string text(const std::optional<model::bytes>& b) { return b ? model::to_string(*b) : "<none>"; }
}  // namespace

TEST_CASE("v2 binary produce body") {
  auto r = parse_v2_produce(R"({"records":[{"key":"a2V5","value":"dmFsdWU="},{"value":"eA==","partition":2},{"key":null,"value":null}]})",
                            embedded_format::binary, false, {});
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  CHECK(text((*r)[0].key) == "key");
  CHECK(text((*r)[0].value) == "value");
  CHECK_FALSE((*r)[0].partition);
  CHECK((*r)[1].partition->value() == 2);
  CHECK_FALSE((*r)[1].key);
  CHECK_FALSE((*r)[2].key);   // a null key is no key, never the bytes "null"
  CHECK_FALSE((*r)[2].value);
}

TEST_CASE("v2 json produce body embeds minified JSON") {
  auto r = parse_v2_produce(R"({"records":[{"key":"k","value":{"a": [1, 2]}}]})", embedded_format::json, false, {});
  REQUIRE(r.ok());
  CHECK(text((*r)[0].key) == "\"k\"");
  CHECK(text((*r)[0].value) == "{\"a\":[1,2]}");
}

TEST_CASE("v2 produce refusals name the field") {
  auto bad = [](std::string_view body, embedded_format f = embedded_format::binary, bool in_path = false) {
    auto r = parse_v2_produce(body, f, in_path, produce_limits{3, 10});
    REQUIRE_FALSE(r.ok());
    return r.error();
  };
  CHECK(bad("{").status == 400);
  CHECK(bad("{").error_code == 40001);
  CHECK(bad("[]").message.find("must be an object") != std::string::npos);
  CHECK(bad(R"({})").message == "records is required");
  CHECK(bad(R"({"records":{}})").message == "records must be an array, got an object");
  CHECK(bad(R"({"records":[]})").message == "records must not be empty");
  CHECK(bad(R"({"records":[{"value":"!!"}]})").message == "records[0].value is not valid base64");
  CHECK(bad(R"({"records":[{"value":5}]})").message == "records[0].value must be a string, got an integer");
  CHECK(bad(R"({"records":[{"vlaue":"eA=="}]})").message.find("unknown field \"vlaue\"") != std::string::npos);
  CHECK(bad(R"({"records":[{"value":"eA==","partition":-1}]})").message.find("records[0].partition is out of range") == 0);
  CHECK(bad(R"({"records":[{"value":"eA==","partition":1e3}]})").message.find("must be an integer") != std::string::npos);
  CHECK(bad(R"({"records":[{"value":"eA==","partition":99999999999999999999}]})").message.find("out of range") != std::string::npos);
  CHECK(bad(R"({"records":[{"value":"eA==","partition":4294967296}]})").message.find("records[0].partition is out of range") == 0);
  CHECK(bad(R"({"records":[{"value":"eA==","partition":1}]})", embedded_format::binary, true).message.find("unknown field \"partition\"") != std::string::npos);
  auto many = bad(R"({"records":[{},{},{},{}]})");
  CHECK(many.error_code == 42201);
  CHECK(many.message.find("produce.records.max=3") != std::string::npos);
  auto large = bad(R"({"records":[{"value":"MDEyMzQ1Njc4OWFi"}]})");
  CHECK(large.error_code == 42201);
  CHECK(large.message.find("message.max.bytes=10") != std::string::npos);
  CHECK(bad(R"({"records":[{"value":"eA=="}],"value_schema":"x"})").message.find("value_schema is not supported") == 0);
}

TEST_CASE("v3 records: one, streaming, per-record failures") {
  auto r = parse_v3_records(R"({"key":{"type":"STRING","data":"k"},"value":{"type":"JSON","data":{"x":1}},
      "headers":[{"name":"h","value":"dg=="},{"name":"n","value":null}],"partition_id":1,"timestamp":"2021-02-05T19:14:42.123Z"})",
                            {});
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1);
  const v3_record& rec = *(*r)[0].record;
  CHECK(text(rec.record.key) == "k");
  CHECK(rec.key_type == "STRING");
  CHECK(text(rec.record.value) == "{\"x\":1}");
  CHECK(rec.value_size == 7);
  CHECK(rec.record.partition->value() == 1);
  CHECK(*rec.record.timestamp == 1612552482123);
  REQUIRE(rec.record.headers.size() == 2);
  CHECK(text(rec.record.headers[0].value) == "v");
  CHECK_FALSE(rec.record.headers[1].value);

  auto s = parse_v3_records(R"({"value":{"type":"BINARY","data":"eA=="}} {"key":null,"value":{"type":"BINARY","data":"!"}}
      {"value":{"data":"s"},"key":{"type":"JSON","data":null}})", {});
  REQUIRE(s.ok());
  REQUIRE(s->size() == 3);
  CHECK((*s)[0].record);
  REQUIRE((*s)[1].failure);
  CHECK((*s)[1].failure->message == "records[1].value.data is not valid base64");
  REQUIRE((*s)[2].record);
  CHECK_FALSE((*s)[2].record->record.key);   // JSON null data is no key
  CHECK((*s)[2].record->key_type == "");

  // A date-time text gets the same upper bound as a number of ms: 9999-12-31T23:59:59.999Z.
  auto far = parse_v3_records(R"({"value":null,"timestamp":"9999-12-31T23:59:59.999-01:00"})", {});
  REQUIRE(far.ok());
  REQUIRE((*far)[0].failure);
  CHECK((*far)[0].failure->message.find("records[0].timestamp") == 0);
  auto last = parse_v3_records(R"({"value":null,"timestamp":"9999-12-31T23:59:59.999Z"})", {});
  REQUIRE(last.ok());
  CHECK(*(*last)[0].record->record.timestamp == 253'402'300'799'999);

  CHECK(parse_v3_records(R"({"value":1} {"value":)", {}).error().status == 400);
  // Issue 14: an empty body is 422/422; a record with invalid data is that record's 400.
  CHECK(parse_v3_records("", {}).error().status == 422);
  CHECK(parse_v3_records(" \n", {}).error().error_code == 422);
  CHECK((*s)[1].failure->status == 400);
  CHECK((*s)[1].failure->error_code == 400);
  auto typo = parse_v3_records(R"({"value":{"type":"TEXT","data":"x"}})", {});
  REQUIRE(typo.ok());
  CHECK((*typo)[0].failure->message.find("BINARY, JSON or STRING") != std::string::npos);
}

TEST_CASE("admin bodies") {
  auto c = parse_create_topic(R"({"topic_name":"t","partitions_count":3,"configs":[{"name":"retention.ms","value":"1000"}]})");
  REQUIRE(c.ok());
  CHECK(c->name == "t");
  CHECK(*c->partitions_count == 3);
  CHECK(c->configs.at("retention.ms") == "1000");
  CHECK(parse_create_topic(R"({"partitions_count":3})").error().message == "topic_name is required");
  CHECK(parse_create_topic(R"({"topic_name":"t","partitions_count":0})").error().message.find("partitions_count is out of range") == 0);
  CHECK(parse_create_topic(R"({"topic_name":"t","partitions_count":"3"})").error().message == "partitions_count must be an integer, got a string");
  CHECK(*parse_patch_topic(R"({"partitions_count":4})") == 4);
  CHECK(parse_patch_topic(R"({})").error().message == "partitions_count is required");
  auto a = parse_alter_configs(R"({"data":[{"name":"retention.ms","value":"5"},{"name":"cleanup.policy","operation":"DELETE"}]})");
  REQUIRE(a.ok());
  CHECK(*a->changes.at("retention.ms") == "5");
  CHECK_FALSE(a->changes.at("cleanup.policy"));
  CHECK(parse_alter_configs(R"({"data":[{"name":"x","operation":"ADD"}]})").error().message.find("SET or DELETE") != std::string::npos);
}

TEST_CASE("topics/-/configs:alter takes Confluent's AlterMultipleTopicsConfigs body (issue 27 item 5)") {
  auto a = parse_alter_configs(R"({"data":[{"topic_name":"a","configs":[{"name":"retention.ms","value":"5"},
                                   {"name":"cleanup.policy","value":null,"operation":"DELETE"}]},
                                  {"topic_name":"b","configs":[]}],"validate_only":true})",
                               true);
  REQUIRE(a.ok());
  CHECK(a->validate_only);
  CHECK(*a->by_topic.at("a").at("retention.ms") == "5");
  CHECK_FALSE(a->by_topic.at("a").at("cleanup.policy"));
  CHECK(a->by_topic.at("b").empty());
  auto flat = parse_alter_configs(R"({"data":[{"topic_name":"a","name":"retention.ms","value":"5"}]})", true);
  REQUIRE_FALSE(flat.ok());
  CHECK(flat.error().status == 422);
  CHECK(flat.error().message.find("data[0] has the field \"name\": each element is {\"topic_name\", \"configs\"") == 0);
  auto no_topic = parse_alter_configs(R"({"data":[{"configs":[]}]})", true);
  CHECK((!no_topic.ok() && no_topic.error().status == 400 && no_topic.error().message.find("data[0].topic_name") == 0));
  auto no_configs = parse_alter_configs(R"({"data":[{"topic_name":"a"}]})", true);
  CHECK((!no_configs.ok() && no_configs.error().message.find("data[0].configs") == 0));
  auto no_value = parse_alter_configs(R"({"data":[{"topic_name":"a","configs":[{"name":"x"}]}]})", true);
  CHECK((!no_value.ok() && no_value.error().message == "data[0].configs[0].value is required for operation SET"));
}

TEST_CASE("empty bodies and missing required fields (issue 14 items 4, 10)") {
  for (const char* body : {"", "  \r\n"}) {
    CHECK(parse_create_topic(body).error().status == 422);
    CHECK(parse_patch_topic(body).error().status == 422);
    CHECK(parse_alter_configs(body).error().status == 422);
    CHECK(parse_v2_produce(body, embedded_format::binary, false, {}).error().error_code == 422);
    CHECK(parse_v3_batch(body, {}).error().status == 422);
  }
  auto missing = parse_create_topic(R"({"partitions_count":3})").error();
  CHECK(missing.status == 400);
  CHECK(missing.error_code == 400);
  CHECK(parse_patch_topic(R"({})").error().status == 400);
  CHECK(parse_v2_produce(R"({})", embedded_format::binary, false, {}).error().error_code == 422);
  CHECK(parse_create_topic(R"({"topic_name":"t","partitions_count":10001})").error().message ==
        "partitions_count is out of range [1, 10000]: 10001");
  CHECK(parse_create_topic(R"({"topic_name":"t","partitions_count":0})").error().message ==
        "partitions_count is out of range [1, 10000]: 0");
}

TEST_CASE("v3 records:batch bodies (issue 14 item 15)") {
  auto b = parse_v3_batch(R"({"entries":[{"id":"a","value":{"type":"STRING","data":"x"}},
      {"id":"b","value":{"type":"BINARY","data":"!"}},{"id":"c","vlaue":{}},{"id":"d","partition_id":2,"value":null}]})", {});
  REQUIRE(b.ok());
  REQUIRE(b->size() == 4);
  CHECK((*b)[0].id == "a");
  CHECK(text((*b)[0].item.record->record.value) == "x");
  REQUIRE((*b)[1].item.failure);
  CHECK((*b)[1].item.failure->error_code == 400);
  CHECK((*b)[1].item.failure->message == "entries[1].value.data is not valid base64");
  CHECK((*b)[2].item.failure->message.find("unknown field \"vlaue\"") != std::string::npos);
  CHECK((*b)[3].item.record->record.partition->value() == 2);
  auto bad = [](std::string_view body) {
    auto r = parse_v3_batch(body, produce_limits{2, 100});
    REQUIRE_FALSE(r.ok());
    return r.error();
  };
  CHECK(bad(R"({"entries":[],"extra":1})").status == 422);
  CHECK(bad(R"({"entries":[],"extra":1})").message.find("unknown field \"extra\"") != std::string::npos);
  CHECK(bad(R"({})").status == 400);
  CHECK(bad(R"({"entries":[{"value":null}]})").message == "entries[0].id is required");
  CHECK(bad(R"({"entries":[{"value":null}]})").status == 422);
  CHECK(bad(R"({"entries":[{"id":1}]})").message == "entries[0].id must be a string, got an integer");
  CHECK(bad(R"({"entries":[{"id":1}]})").status == 422);
  // Confluent's id rule: 1..80 bytes of [0-9a-zA-Z_-] (a multi-byte character counts its bytes).
  CHECK(bad(R"({"entries":[{"id":""}]})").message == "entries[0].id must be 1..80 bytes of [0-9a-zA-Z_-], got 0 bytes");
  CHECK(bad(R"({"entries":[{"id":"a b"}]})").status == 422);
  const std::string eighty(80, 'x');
  CHECK(parse_v3_batch(R"({"entries":[{"id":")" + eighty + R"("}]})", {}).ok());
  CHECK(bad(R"({"entries":[{"id":")" + eighty + R"(x"}]})").message.find("got 81 bytes") != std::string::npos);
  std::string accents;
  for (int i = 0; i < 41; ++i) accents += "\u00e9";   // 41 characters, 82 bytes
  CHECK(bad(R"({"entries":[{"id":")" + accents + R"("}]})").message.find("got 82 bytes") != std::string::npos);
  CHECK(bad(R"({"entries":[{"id":"x"},{"id":"x"}]})").message.find("ids must be distinct") != std::string::npos);
  CHECK(bad(R"({"entries":[{"id":"1"},{"id":"2"},{"id":"3"}]})").error_code == 42201);
  CHECK(bad(R"({"entries":[)").error_code == 40001);
}

TEST_CASE("ISO-8601 timestamps") {
  CHECK(parse_iso8601_ms("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_iso8601_ms("2021-02-05T19:14:42.000Z") == 1612552482000);
  CHECK(parse_iso8601_ms("2021-02-05T20:14:42+01:00") == 1612552482000);
  CHECK_FALSE(parse_iso8601_ms("2021-02-05T19:14:42"));
  CHECK_FALSE(parse_iso8601_ms("2021-13-05T19:14:42Z"));
  CHECK_FALSE(parse_iso8601_ms("yesterday"));
  // RFC 3339 section 5.6: a time-numoffset's hour is 00..23 and its minute 00..59; "+99:99"
  // was read as a 100-hour shift (found by an adversarial session).
  CHECK(parse_iso8601_ms("2021-02-05T19:14:42+23:59") == 1612552482000 - (23 * 60 + 59) * 60'000);
  CHECK(parse_iso8601_ms("2021-02-05T19:14:42-23:59") == 1612552482000 + (23 * 60 + 59) * 60'000);
  CHECK_FALSE(parse_iso8601_ms("2021-02-05T19:14:42+99:99"));
  CHECK_FALSE(parse_iso8601_ms("2021-02-05T19:14:42+24:00"));
  CHECK_FALSE(parse_iso8601_ms("2021-02-05T19:14:42-01:60"));
  CHECK(format_iso8601_ms(1612552482123) == "2021-02-05T19:14:42.123Z");
  CHECK(format_iso8601_ms(0) == "1970-01-01T00:00:00.000Z");
}

TEST_CASE("broker errors map to REST proxy codes") {
  using broker::errc;
  auto m = [](errc c, error_scope s = error_scope::topic, bool exists = false) {
    return to_api_error(broker::error{c, "m"}, s, exists);
  };
  CHECK(m(errc::unknown_topic_or_partition).error_code == 40401);
  CHECK(m(errc::unknown_topic_or_partition, error_scope::partition, false).error_code == 40401);
  CHECK(m(errc::unknown_topic_or_partition, error_scope::partition, true).error_code == 40402);
  CHECK(m(errc::unknown_topic_or_partition).status == 404);
  CHECK(m(errc::topic_already_exists).status == 400);
  CHECK(m(errc::offset_out_of_range).error_code == 42202);
  CHECK(m(errc::message_too_large).error_code == 42201);
  CHECK(m(errc::kafka_storage_error).status == 503);   // Kafka: retriable
  CHECK(m(errc::kafka_storage_error).error_code == 50301);
  CHECK(is_retriable(errc::kafka_storage_error));
  CHECK(m(errc::not_enough_replicas).error_code == 50003);
  CHECK(m(errc::throttling_quota_exceeded).status == 429);
  CHECK(error_body(40401, "no \"t\"") == R"({"error_code":40401,"message":"no \"t\""})");
}

TEST_CASE("metrics exposition") {
  metrics m;
  m.observe_request("GET /topics", 200, 0.002);
  m.observe_request("GET /topics", 200, 0.2);
  m.add_bytes_in("t\"1", 3, 30);
  broker::topic_description t;
  t.name = "t";
  broker::partition_description p;
  p.log_end_offset = model::offset(7);
  p.replica_here = true;
  t.partitions.push_back(p);
  broker::partition_description elsewhere;   // a partition this node holds no replica of (any more)
  elsewhere.partition = model::partition_id{1};
  elsewhere.size_bytes = 40628767;
  t.partitions.push_back(elsewhere);
  std::string out = m.render({t});
  CHECK(out.find("ringlog_http_requests_total{route=\"GET /topics\",status=\"200\"} 2") != std::string::npos);
  CHECK(out.find("ringlog_http_request_duration_seconds_bucket{route=\"GET /topics\",le=\"0.0025\"} 1") != std::string::npos);
  CHECK(out.find("ringlog_http_request_duration_seconds_bucket{route=\"GET /topics\",le=\"+Inf\"} 2") != std::string::npos);
  CHECK(out.find("ringlog_topic_records_in_total{topic=\"t\\\"1\"} 3") != std::string::npos);
  CHECK(out.find("ringlog_partition_log_end_offset{topic=\"t\",partition=\"0\"} 7") != std::string::npos);
  CHECK(out.find("partition=\"1\"") == std::string::npos);   // no series for a replica not held here
}

TEST_CASE("deliver_at and delay_ms become the delay headers (issue 18)") {
  auto header_of = [](const broker::produce_record& r) {
    REQUIRE(r.headers.size() == 1);
    return r.headers[0].key + "=" + text(r.headers[0].value);
  };
  auto v3 = parse_v3_records(R"({"value":null,"deliver_at":1700000000000} {"value":null,"delay_ms":250}
      {"value":null,"deliver_at":"2021-02-05T19:14:42.123Z"} {"value":null,"delay_ms":-1}
      {"value":null,"delay_ms":1,"deliver_at":2} {"value":null,"deliver_at":"tomorrow"}
      {"value":null,"delay_ms":1,"headers":[{"name":"ringlog-deliver-at","value":"MQ=="}]})", {});
  REQUIRE(v3.ok());
  REQUIRE(v3->size() == 7);
  CHECK(header_of((*v3)[0].record->record) == "ringlog-deliver-at=1700000000000");
  CHECK(header_of((*v3)[1].record->record) == "ringlog-delay-ms=250");
  CHECK(header_of((*v3)[2].record->record) == "ringlog-deliver-at=1612552482123");
  REQUIRE((*v3)[3].failure);
  CHECK((*v3)[3].failure->message.find("records[3].delay_ms") != std::string::npos);
  REQUIRE((*v3)[4].failure);
  CHECK((*v3)[4].failure->message.find("not both") != std::string::npos);
  REQUIRE((*v3)[5].failure);
  CHECK((*v3)[5].failure->message.find("deliver_at must be ms since the epoch or an ISO-8601") != std::string::npos);
  REQUIRE((*v3)[6].failure);
  CHECK((*v3)[6].failure->message.find("only one of them") != std::string::npos);

  auto v2 = parse_v2_produce(R"({"records":[{"value":"eA==","delay_ms":5},{"value":"eA==","deliver_at":null}]})",
                             embedded_format::binary, false, produce_limits{});
  REQUIRE(v2.ok());
  CHECK(header_of((*v2)[0]) == "ringlog-delay-ms=5");
  CHECK((*v2)[1].headers.empty());
  auto bad = parse_v2_produce(R"({"records":[{"value":"eA==","delay_ms":"5"}]})", embedded_format::binary, false,
                              produce_limits{});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("records[0].delay_ms") != std::string::npos);
}
