// The consumer and group body parsers (consumer_parsing.h): each field's wrong type is named with
// its path and the type it must have; statuses as the REST Proxy's.

#include <doctest.h>

#include "consumer_parsing.h"

using namespace ringlog;
using namespace ringlog::gateway;

namespace {

template <typename T>
api_error refused(const parsed<T>& r) {
  REQUIRE_FALSE(r.ok());
  return r.error();
}

}  // namespace

TEST_CASE("create consumer: settings as strings, numbers or booleans; each bad one named") {
  auto cfg = parse_create_consumer(R"({"name":"w1","format":"json","auto.offset.reset":"smallest",
      "auto.commit.enable":true,"fetch.min.bytes":5,"consumer.request.timeout.ms":"250",
      "consumer.instance.timeout.ms":60000,"partition.assignment.strategy":"range","group.instance.id":null})", 1000);
  REQUIRE(cfg.ok());
  CHECK(*cfg->name == "w1");
  CHECK(cfg->format == broker::consumer_format::json);
  CHECK(cfg->auto_offset_reset == group::offset_reset::earliest);
  CHECK(cfg->auto_commit_enable);
  CHECK(cfg->fetch_min_bytes == 5);
  CHECK(cfg->request_timeout_ms == 250);
  CHECK(cfg->session_timeout_ms == 60000);
  CHECK(cfg->assignor == group::assignor_kind::range);
  CHECK_FALSE(cfg->group_instance_id);
  CHECK(parse_create_consumer("", 1000).ok());      // no body: the defaults
  CHECK(parse_create_consumer("null", 1000).ok());
  auto unknown = refused(parse_create_consumer(R"({"auto.offset.rest":"earliest"})", 1000));
  CHECK(unknown.status == 422);
  CHECK(unknown.error_code == 42204);
  CHECK(unknown.message.find("unknown consumer setting \"auto.offset.rest\"") == 0);
  CHECK(refused(parse_create_consumer(R"({"format":"avro"})", 1000)).message == "format must be binary or json, got \"avro\"");
  CHECK(refused(parse_create_consumer(R"({"auto.commit.enable":"yes"})", 1000)).message.find("auto.commit.enable") == 0);
  CHECK(refused(parse_create_consumer(R"({"consumer.request.timeout.ms":1001})", 1000)).message ==
        "consumer.request.timeout.ms must be an integer in [0, 1000], got 1001");
  CHECK(refused(parse_create_consumer(R"({"fetch.min.bytes":[1]})", 1000)).message.find("fetch.min.bytes") == 0);
  CHECK(refused(parse_create_consumer(R"({"name":""})", 1000)).message == "name must be 1..200 characters");
  CHECK(refused(parse_create_consumer(R"([1])", 1000)).status == 422);
  CHECK(refused(parse_create_consumer(R"({"name":)", 1000)).error_code == 40001);
}

TEST_CASE("subscription: topics or a pattern, each element's type and name checked") {
  auto topics = parse_subscription(R"({"topics":["a","b"]})");
  REQUIRE(topics.ok());
  CHECK(topics->kind == group::subscription_kind::topics);
  CHECK(topics->topics == std::vector<std::string>{"a", "b"});
  auto pattern = parse_subscription(R"({"topic_pattern":"orders-.*"})");
  REQUIRE(pattern.ok());
  CHECK(pattern->pattern == "orders-.*");
  CHECK(refused(parse_subscription(R"({"topics":["a"],"topic_pattern":"b"})")).status == 409);
  CHECK(refused(parse_subscription(R"({"topics":[]})")).message == "topics must be a non-empty array of strings, got []");
  CHECK(refused(parse_subscription(R"({"topics":"a"})")).message ==
        "topics must be a non-empty array of strings, got a string");
  CHECK(refused(parse_subscription(R"({"topics":["a",3]})")).message ==
        "topics must be a non-empty array of strings; topics[1] is an integer");
  auto illegal = refused(parse_subscription(R"({"topics":["ok","bad name"]})"));
  CHECK(illegal.status == 400);
  CHECK(illegal.error_code == 40002);
  CHECK(illegal.message.find("topics[1]: ") == 0);
  CHECK(refused(parse_subscription(R"({"topic_pattern":7})")).message == "topic_pattern must be a string, got an integer");
  CHECK(refused(parse_subscription("")).message == "a list of topics or a topic_pattern is required");
}

TEST_CASE("partitions lists: each element's topic and partition named with its path") {
  auto p = parse_partitions(R"({"partitions":[{"topic":"a","partition":0},{"topic":"b","partition":2147483647}]})");
  REQUIRE(p.ok());
  REQUIRE(p->size() == 2);
  CHECK((*p)[1].partition.value() == 2147483647);
  CHECK(parse_partitions("")->empty());
  CHECK(parse_partitions("{}")->empty());
  CHECK(refused(parse_partitions(R"({"partitions":{}})")).message == "partitions must be an array, got an object");
  CHECK(refused(parse_partitions(R"({"partitions":[3]})")).message ==
        "partitions[0] must be an object {\"topic\", \"partition\", ...}, got an integer");
  CHECK(refused(parse_partitions(R"({"partitions":[{"topic":"a"}]})")).message == "partitions[0].partition is required");
  CHECK(refused(parse_partitions(R"({"partitions":[{"topic":1,"partition":0}]})")).message ==
        "partitions[0].topic must be a string, got an integer");
  CHECK(refused(parse_partitions(R"({"partitions":[{"topic":"a","partition":4294967296}]})")).message ==
        "partitions[0].partition must be an integer in [0, 2147483647], got 4294967296");
  CHECK(refused(parse_partitions(R"({"partitions":[{"topic":"a","partition":"0"}]})")).message ==
        "partitions[0].partition must be an integer in [0, 2147483647], got a string");
  CHECK(refused(parse_partitions(R"({"partitions":[{"topic":"a b","partition":0}]})")).status == 400);
}

TEST_CASE("seek: offsets, timestamps (ISO-8601 or ms), the wrong type of each named") {
  auto s = parse_seek(R"({"offsets":[{"topic":"a","partition":0,"offset":5}],
      "timestamps":[{"topic":"a","partition":1,"timestamp":"2021-02-05T19:14:42.000Z"},{"topic":"a","partition":2,"timestamp":7}]})");
  REQUIRE(s.ok());
  REQUIRE(s->size() == 3);
  CHECK((*s)[0].kind == broker::seek_kind::offset);
  CHECK((*s)[0].value == 5);
  CHECK((*s)[1].kind == broker::seek_kind::timestamp);
  CHECK((*s)[1].value == 1612552482000);
  CHECK((*s)[2].value == 7);
  CHECK(refused(parse_seek("{}")).message.find("offsets (an array") == 0);
  CHECK(refused(parse_seek(R"({"offsets":[{"topic":"a","partition":0,"offset":"5"}]})")).message ==
        "offsets[0] needs an integer offset (a 64-bit JSON number) or a timestamp, got offset as a string");
  CHECK(refused(parse_seek(R"({"offsets":[{"topic":"a","partition":0,"offset":9223372036854775808}]})")).message ==
        "offsets[0] needs an integer offset (a 64-bit JSON number) or a timestamp, got offset as an integer");
  CHECK(refused(parse_seek(R"({"timestamps":[{"topic":"a","partition":0}]})")).message == "timestamps[0].timestamp is required");
  CHECK(refused(parse_seek(R"({"timestamps":[{"topic":"a","partition":0,"timestamp":"yesterday"}]})")).message ==
        "timestamps[0].timestamp must be an ISO-8601 date-time or ms since the epoch, got a string");
  CHECK(refused(parse_seek(R"({"timestamps":5})")).message == "timestamps must be an array, got an integer");
}

TEST_CASE("commit: the last processed offsets, each field's type named; none means everything returned") {
  auto c = parse_commit(R"({"offsets":[{"topic":"a","partition":0,"offset":3,"metadata":"m"}]})");
  REQUIRE(c.ok());
  REQUIRE(*c);
  CHECK((**c)[0].last_processed.value() == 3);
  CHECK((**c)[0].metadata == "m");
  CHECK_FALSE(*parse_commit(""));
  CHECK_FALSE(*parse_commit("{}"));
  CHECK_FALSE(*parse_commit(R"({"offsets":[]})"));
  CHECK(refused(parse_commit(R"({"offsets":[{"topic":"a","partition":0,"offset":"3"}]})")).message ==
        "offsets[0].offset must be an integer (a 64-bit JSON number), got a string");
  CHECK(refused(parse_commit(R"({"offsets":[{"topic":"a","partition":0}]})")).message == "offsets[0].offset is required");
  CHECK(refused(parse_commit(R"({"offsets":[{"topic":"a","partition":0,"offset":1,"metadata":2}]})")).message ==
        "offsets[0].metadata must be a string, got an integer");
  CHECK(refused(parse_commit(R"({"offsets":{}})")).message == "offsets must be an array, got an object");
  CHECK(refused(parse_commit("[]")).status == 422);
}

TEST_CASE("reset offsets: to, value, timestamp, topics and dry_run") {
  auto r = parse_reset_offsets(R"({"to":"shift","value":-2,"topics":["a"],"dry_run":false})");
  REQUIRE(r.ok());
  CHECK(r->spec.kind == group::reset_kind::shift_by);
  CHECK(r->spec.value == -2);
  CHECK(r->topics == std::vector<std::string>{"a"});
  CHECK(r->mode == group::dry_run::no);
  auto t = parse_reset_offsets(R"({"to":"timestamp","timestamp":"1970-01-01T00:00:01Z"})");
  REQUIRE(t.ok());
  CHECK(t->timestamp_ms == 1000);
  CHECK(t->mode == group::dry_run::yes);
  CHECK(refused(parse_reset_offsets("")).message == "a body with \"to\" is required");
  CHECK(refused(parse_reset_offsets(R"({"to":"offset"})")).message == "value (a 64-bit integer) is required with to=offset");
  CHECK(refused(parse_reset_offsets(R"({"to":"sideways"})")).status == 422);
  CHECK(refused(parse_reset_offsets(R"({"to":"latest","topics":[1]})")).message == "topics must be an array of strings");
  CHECK(refused(parse_reset_offsets(R"({"to":"latest","dry_run":"no"})")).message == "dry_run must be a boolean, got a string");
}

TEST_CASE("reset offsets: Kafka's topic:0,1,2 names single partitions of a topic") {
  auto r = parse_reset_offsets(R"({"to":"earliest","topics":["a:0,2","b","c:7"]})");
  REQUIRE(r.ok());
  CHECK(r->topics == std::vector<std::string>{"b"});
  REQUIRE(r->partitions.size() == 3);
  CHECK(r->partitions[0] == model::topic_partition{"a", model::partition_id(0)});
  CHECK(r->partitions[1] == model::topic_partition{"a", model::partition_id(2)});
  CHECK(r->partitions[2] == model::topic_partition{"c", model::partition_id(7)});
  // Every malformed entry is 422 naming it: a bad partition list, and a topic that is not a legal
  // name (":0" names none; an illegal one with or without a list), which was 400.
  for (const char* bad : {"a:", "a:1,,2", "a:x", "a:-1", "a:1,", "a:99999999999", ":0", ":", "b a:0", "b a", ""}) {
    auto refusal = refused(parse_reset_offsets(std::string(R"({"to":"earliest","topics":[")") + bad + "\"]}"));
    CHECK(refusal.status == 422);
    CHECK(refusal.message.find(std::string("topics[0] \"") + bad + "\"") != std::string::npos);
  }
}

TEST_CASE("create consumer: retry settings default to the broker's, each bad one named (issue 18)") {
  delay::retry_policy defaults{4, 100, 3.0, 900};
  auto none = parse_create_consumer(R"({"format":"binary"})", 1000, defaults);
  REQUIRE(none.ok());
  CHECK_FALSE(none->retry);   // nothing given: the broker's defaults apply at nack time
  auto some = parse_create_consumer(R"({"max.delivery.attempts":"7","retry.backoff.multiplier":"1.5"})", 1000, defaults);
  REQUIRE(some.ok());
  REQUIRE(some->retry);
  CHECK(*some->retry == delay::retry_policy{7, 100, 1.5, 900});
  CHECK(refused(parse_create_consumer(R"({"max.delivery.attempts":0})", 1000, defaults)).message.find("max.delivery.attempts=0") == 0);
  CHECK(refused(parse_create_consumer(R"({"retry.backoff.ms":"soon"})", 1000, defaults)).message.find("retry.backoff.ms") == 0);
  CHECK(refused(parse_create_consumer(R"({"retry.backoff.multiplier":"x2"})", 1000, defaults)).message.find("retry.backoff.multiplier") == 0);
  CHECK(refused(parse_create_consumer(R"({"retry.backoff.ms":5000})", 1000, defaults)).message.find("retry.backoff.max.ms=900") == 0);
  CHECK(refused(parse_create_consumer(R"({"max.delivery.attempts":99999999999})", 1000, defaults)).status == 422);
}

TEST_CASE("create consumer: retry and dead-letter topic templates, strings, validated naming the key (issue 18)") {
  delay::retry_policy defaults{4, 100, 3.0, 900, "r.<group>.<topic>", "d.<group>.<topic>"};
  auto named = parse_create_consumer(R"({"dead.letter.topic.template":"<group>-dlt-<topic>"})", 1000, defaults);
  REQUIRE(named.ok());
  REQUIRE(named->retry);
  CHECK(named->retry->retry_topic_template == "r.<group>.<topic>");   // the broker's default kept
  CHECK(named->retry->dead_letter_topic_template == "<group>-dlt-<topic>");
  CHECK(named->retry->max_delivery_attempts == 4);
  auto null = parse_create_consumer(R"({"retry.topic.template":null})", 1000, defaults);
  REQUIRE(null.ok());
  CHECK_FALSE(null->retry);   // null is absent
  CHECK(refused(parse_create_consumer(R"({"retry.topic.template":7})", 1000, defaults)).message ==
        "retry.topic.template must be a string");
  CHECK(refused(parse_create_consumer(R"({"retry.topic.template":"<topic>"})", 1000, defaults)).message.find(
            "retry.topic.template=<topic>: must hold <topic> and <group> once each") == 0);
  CHECK(refused(parse_create_consumer(R"({"dead.letter.topic.template":"r.<group>.<topic>"})", 1000, defaults))
            .message.find("dead.letter.topic.template=r.<group>.<topic>: must be different") == 0);
  auto ws = parse_retry_settings(R"({"type":"join","retry.topic.template":"<topic>.<group>.again"})", defaults);
  REQUIRE(ws.ok());
  REQUIRE(*ws);
  CHECK((*ws)->retry_topic_template == "<topic>.<group>.again");
}

TEST_CASE("nacks: offsets with topic, partition, offset and an optional reason; each bad field named") {
  auto n = parse_nacks(R"({"offsets":[{"topic":"a","partition":1,"offset":3,"reason":"db down"},{"topic":"b","partition":0,"offset":0}]})");
  REQUIRE(n.ok());
  REQUIRE(n->size() == 2);
  CHECK((*n)[0].partition.topic == "a");
  CHECK((*n)[0].partition.partition.value() == 1);
  CHECK((*n)[0].offset.value() == 3);
  CHECK((*n)[0].reason == "db down");
  CHECK((*n)[1].reason.empty());
  CHECK(refused(parse_nacks("")).message.find("offsets is required") == 0);
  CHECK(refused(parse_nacks(R"({"offsets":[]})")).message == "offsets must name at least one record");
  CHECK(refused(parse_nacks(R"({"offsets":{}})")).message == "offsets must be an array, got an object");
  CHECK(refused(parse_nacks(R"({"offsets":[{"topic":"a","partition":0}]})")).message == "offsets[0].offset is required");
  CHECK(refused(parse_nacks(R"({"offsets":[{"topic":"a","partition":0,"offset":-2}]})")).message.find("offsets[0].offset") == 0);
  CHECK(refused(parse_nacks(R"({"offsets":[{"topic":"a","partition":0,"offset":1,"reason":[]}]})")).message.find("offsets[0].reason") == 0);
  CHECK(refused(parse_nacks(R"({"offsets":[{"partition":0,"offset":1}]})")).message.find("offsets[0].topic") == 0);
  CHECK(refused(parse_nacks(R"({"offsets":)")).status == 400);
}
