#include <doctest.h>

#include "ringlog/config/server_config.h"

using namespace ringlog::config;

TEST_CASE("properties files") {
  auto p = parse_properties("# comment\n! also\n\nlog.dirs = /tmp/x\nnum.partitions:3\nlisteners=http://127.0.0.1:9000\\\n\n"
                            "a.b=1\na.b=2\n", "test.properties");
  REQUIRE(p.ok());
  CHECK(p->at("log.dirs") == "/tmp/x");
  CHECK(p->at("num.partitions") == "3");
  CHECK(p->at("listeners") == "http://127.0.0.1:9000");
  CHECK(p->at("a.b") == "2");
  auto bad = parse_properties("ok=1\njust words\n", "f.properties");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "f.properties:2: \"just words\" is not key=value");
  CHECK(parse_assignment("a=b=c")->second == "b=c");
  CHECK_FALSE(parse_assignment("nothing").ok());
}

TEST_CASE("defaults serve on one machine") {
  auto c = load_server_config({});
  REQUIRE(c.ok());
  CHECK(c->listener_host == "127.0.0.1");
  CHECK(c->listener_port == 8082);
  CHECK(c->log_dir == "./ringlog-data");
  CHECK(c->log_flush_policy == "fsync");
  CHECK(c->offsets_topic_num_partitions == 8);
}

TEST_CASE("keys are applied and bounded, errors name the key") {
  auto c = load_server_config({{"listeners", "http://0.0.0.0:9000"}, {"num.partitions", "6"}, {"log.retention.ms", "-1"},
                               {"auto.create.topics.enable", "false"}, {"io.backend", "posix"}});
  REQUIRE(c.ok());
  CHECK(c->listener_host == "0.0.0.0");
  CHECK(c->listener_port == 9000);
  CHECK(c->num_partitions == 6);
  CHECK(c->log_retention_ms == -1);
  CHECK_FALSE(c->auto_create_topics_enable);
  CHECK(c->io_backend == "posix");
  auto refused = [](std::string key, std::string value) {
    auto r = load_server_config({{key, value}});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find(key) != std::string::npos);
    return r.error();
  };
  CHECK(refused("no.such.key", "1").code == errc::unknown_key);
  CHECK(refused("num.partitions", "0").code == errc::invalid_value);
  CHECK(refused("num.partitions", "abc").message == "num.partitions=abc: must be an integer in [1, 10000]");
  CHECK(refused("log.segment.bytes", "99999999999999999999").code == errc::invalid_value);
  CHECK(refused("log.flush.policy", "never").message.find("fsync | replication") != std::string::npos);
  CHECK(refused("listeners", "127.0.0.1:8082").code == errc::invalid_value);
  CHECK(refused("listeners", "http://127.0.0.1:70000").code == errc::invalid_value);
  CHECK(refused("auto.create.topics.enable", "yes").code == errc::invalid_value);
  CHECK(refused("log.dirs", "/a,/b").code == errc::invalid_value);
  CHECK(refused("offsets.topic.num.partitions", "0").message ==
        "offsets.topic.num.partitions=0: must be an integer in [1, 1000]");
  CHECK(refused("offsets.topic.num.partitions", "1001").code == errc::invalid_value);
  CHECK(refused("group.expiry.interval.ms", "10").code == errc::invalid_value);
  CHECK_FALSE(describe_keys().empty());
}
