#include <doctest.h>

#include <tuple>

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

TEST_CASE("every unknown key is named in one error, with a close known key or Kafka's replacement") {
  // A Kafka server.properties was refused one unknown key per start (fix one, start again, the next).
  auto r = load_server_config({{"num.partitions", "3"}, {"log.retention.hours", "168"}, {"num.partitons", "3"},
                               {"zookeeper.connect", "localhost:2181"}, {"log.dirs", "/tmp/x"}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::unknown_key);
  CHECK(r.error().message ==
        "3 unknown config keys: \"log.retention.hours\": ringlog does not take Kafka's log.retention.hours; use "
        "log.retention.ms (hours x 3600000); \"num.partitons\" (did you mean \"num.partitions\"?); "
        "\"zookeeper.connect\" (see ringlog serve --help)");
  auto one = load_server_config({{"log.dir", "/tmp/x"}});
  REQUIRE_FALSE(one.ok());
  CHECK(one.error().message ==
        "unknown config key \"log.dir\": ringlog does not take Kafka's log.dir; use log.dirs (see ringlog serve --help)");
  // Unknown keys are refused before any value is checked: the error names them, not a bad value.
  auto mixed = load_server_config({{"num.partitions", "0"}, {"bogus.key", "1"}});
  REQUIRE_FALSE(mixed.ok());
  CHECK(mixed.error().message == "unknown config key \"bogus.key\" (see ringlog serve --help)");
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
  // KIP-211's keys: Kafka's defaults and lower bounds.
  CHECK(c->offsets_retention_minutes == 10080);
  CHECK(c->offsets_retention_check_interval_ms == 600000);
  CHECK(refused("offsets.retention.minutes", "0").message ==
        "offsets.retention.minutes=0: must be an integer in [1, 2147483647]");
  CHECK(refused("offsets.retention.minutes", "2147483648").code == errc::invalid_value);
  CHECK(refused("offsets.retention.check.interval.ms", "0").message ==
        "offsets.retention.check.interval.ms=0: must be an integer in [1, 31536000000]");
  auto retention = load_server_config({{"offsets.retention.minutes", "1"}, {"offsets.retention.check.interval.ms", "500"}});
  REQUIRE(retention.ok());
  CHECK(retention->offsets_retention_minutes == 1);
  CHECK(retention->offsets_retention_check_interval_ms == 500);
  CHECK_FALSE(describe_keys().empty());
  // The breaker's ovr.py: a host name or a bad address was accepted and never matched a client.
  CHECK(refused("max.connections.per.ip.overrides", "localhost:0").message.find("IPv4 or IPv6") != std::string::npos);
  CHECK(refused("max.connections.per.ip.overrides", "999.0.0.1:5").code == errc::invalid_value);
  auto o = load_server_config({{"max.connections.per.ip.overrides", "10.0.0.9:0,::ffff:10.0.0.8:3,0:0:0:0:0:0:0:1:7"}});
  REQUIRE(o.ok());
  CHECK(o->max_connections_per_ip_overrides == std::map<std::string, int64_t>{{"10.0.0.9", 0}, {"10.0.0.8", 3}, {"::1", 7}});
}

TEST_CASE("sasl.oauthbearer.jwks.endpoint.*: https and file URLs, never http (KIP-768 keys, issue 29)") {
  auto d = load_server_config({});
  REQUIRE(d.ok());
  CHECK(d->sasl_oauthbearer_jwks_endpoint_refresh_ms == 3600000);   // Kafka's defaults
  CHECK(d->sasl_oauthbearer_jwks_endpoint_retry_backoff_ms == 100);
  CHECK(d->sasl_oauthbearer_jwks_endpoint_retry_backoff_max_ms == 10000);
  for (const char* url : {"https://idp.example/.well-known/jwks.json", "https://127.0.0.1:8443/jwks", "file:/etc/jwks.json"}) {
    auto c = load_server_config({{"sasl.oauthbearer.jwks.endpoint.url", url}});
    REQUIRE(c.ok());
    CHECK(c->sasl_oauthbearer_jwks_endpoint_url == url);
  }
  auto http = load_server_config({{"sasl.oauthbearer.jwks.endpoint.url", "http://idp.example/jwks.json"}});
  REQUIRE_FALSE(http.ok());
  CHECK(http.error().message.find("sasl.oauthbearer.jwks.endpoint.url") != std::string::npos);
  CHECK(http.error().message.find("plaintext") != std::string::npos);
  CHECK_FALSE(load_server_config({{"sasl.oauthbearer.jwks.endpoint.url", "ftp://idp.example/jwks.json"}}).ok());
  CHECK_FALSE(load_server_config({{"sasl.oauthbearer.jwks.endpoint.refresh.ms", "999"}}).ok());
  CHECK_FALSE(load_server_config({{"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "0"}}).ok());
}

TEST_CASE("the compaction topic configs' broker-level defaults: Kafka's keys and defaults, bounded") {
  auto d = load_server_config({});
  REQUIRE(d.ok());
  CHECK(key_value(*d, "log.cleanup.policy") == "delete");
  CHECK(key_value(*d, "log.cleaner.min.cleanable.ratio") == "0.5");
  CHECK(key_value(*d, "log.cleaner.delete.retention.ms") == "86400000");
  CHECK(key_value(*d, "log.cleaner.min.compaction.lag.ms") == "0");
  CHECK(key_value(*d, "log.cleaner.max.compaction.lag.ms") == "9223372036854775807");
  CHECK(key_value(*d, "retry.backoff.multiplier") == "2");
  auto c = load_server_config({{"log.cleanup.policy", "compact, delete"}, {"log.cleaner.min.cleanable.ratio", "0.1"},
                               {"log.cleaner.delete.retention.ms", "1000"}, {"log.cleaner.min.compaction.lag.ms", "5"},
                               {"log.cleaner.max.compaction.lag.ms", "60000"}});
  REQUIRE(c.ok());
  CHECK(c->log_cleanup_policy == "compact, delete");
  CHECK(c->log_cleaner_min_cleanable_ratio == 0.1);
  CHECK(key_value(*c, "log.cleaner.min.cleanable.ratio") == "0.1");
  CHECK(c->log_cleaner_delete_retention_ms == 1000);
  CHECK(c->log_cleaner_min_compaction_lag_ms == 5);
  CHECK(c->log_cleaner_max_compaction_lag_ms == 60000);
  for (auto [key, value, why] : {std::tuple{"log.cleanup.policy", "shrink", "must be delete, compact or compact,delete"},
                                 std::tuple{"log.cleanup.policy", "", "must be delete, compact or compact,delete"},
                                 std::tuple{"log.cleaner.min.cleanable.ratio", "1.5", "must be a number in [0, 1]"},
                                 std::tuple{"log.cleaner.min.cleanable.ratio", "half", "must be a number in [0, 1]"},
                                 std::tuple{"log.cleaner.delete.retention.ms", "-1", "must be an integer in [0, "},
                                 std::tuple{"log.cleaner.max.compaction.lag.ms", "0", "must be an integer in [1, "}}) {
    auto bad = load_server_config({{key, value}});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find(std::string(key) + "=" + value + ": " + why) == 0);
  }
  auto conflict = load_server_config({{"log.cleaner.min.compaction.lag.ms", "10000"},
                                      {"log.cleaner.max.compaction.lag.ms", "5000"}});
  REQUIRE_FALSE(conflict.ok());
  CHECK(conflict.error().message ==
        "log.cleaner.min.compaction.lag.ms=10000: must be at most log.cleaner.max.compaction.lag.ms=5000");
}

TEST_CASE("compression.type: Kafka's broker key, its values and default") {
  auto d = load_server_config({});
  REQUIRE(d.ok());
  CHECK(key_value(*d, "compression.type") == "producer");
  for (const char* codec : {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}) {
    auto c = load_server_config({{"compression.type", codec}});
    REQUIRE(c.ok());
    CHECK(c->compression_type == codec);
  }
  // Kafka's BrokerCompressionType names "uncompressed"; "none" is the producer's name and refused.
  auto bad = load_server_config({{"compression.type", "none"}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("compression.type=none: must be one of producer | uncompressed") == 0);
  // KIP-390 levels: Kafka's defaults and bounds; gzip's 0 is refused as Kafka refuses it.
  CHECK(key_value(*d, "compression.gzip.level") == "-1");
  CHECK(key_value(*d, "compression.lz4.level") == "9");
  CHECK(key_value(*d, "compression.zstd.level") == "3");
  auto levels = load_server_config({{"compression.gzip.level", "1"}, {"compression.lz4.level", "17"},
                                    {"compression.zstd.level", "-131072"}});
  REQUIRE(levels.ok());
  CHECK(levels->compression_gzip_level == 1);
  CHECK(levels->compression_lz4_level == 17);
  CHECK(levels->compression_zstd_level == -131072);
  for (auto [key, value, why] : {std::tuple{"compression.gzip.level", "0", "must be -1 or an integer in [1, 9]"},
                                 std::tuple{"compression.gzip.level", "10", "must be an integer in [-1, 9]"},
                                 std::tuple{"compression.lz4.level", "0", "must be an integer in [1, 17]"},
                                 std::tuple{"compression.zstd.level", "23", "must be an integer in [-131072, 22]"}}) {
    auto refused = load_server_config({{key, value}});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message == std::string(key) + "=" + value + ": " + why);
  }
}

TEST_CASE("cluster settings: listeners by kind, process.roles, controller.quorum.voters") {
  auto single = load_server_config({});
  REQUIRE(single.ok());
  CHECK(single->cluster_listener_port == -1);   // no cluster listener: a one-voter quorum
  CHECK(single->process_role_broker);
  CHECK(single->process_role_controller);
  CHECK(single->controller_quorum_voters.empty());

  auto c = load_server_config({{"node.id", "2"},
                               {"listeners", "http://127.0.0.1:8092, cluster://127.0.0.1:9192"},
                               {"controller.quorum.voters", "1@127.0.0.1:9191,2@127.0.0.1:9192,3@[::1]:9193"}});
  REQUIRE(c.ok());
  CHECK(c->listener_port == 8092);
  CHECK(c->cluster_listener_host == "127.0.0.1");
  CHECK(c->cluster_listener_port == 9192);
  REQUIRE(c->controller_quorum_voters.size() == 3);
  CHECK(c->controller_quorum_voters[2].node_id == 3);
  CHECK(c->controller_quorum_voters[2].host == "::1");
  CHECK(c->controller_quorum_voters[2].port == 9193);
  CHECK(key_value(*c, "listeners") == "http://127.0.0.1:8092,cluster://127.0.0.1:9192");
  CHECK(key_value(*c, "controller.quorum.voters") == "1@127.0.0.1:9191,2@127.0.0.1:9192,3@::1:9193");

  auto broker_only = load_server_config({{"node.id", "4"},
                                         {"process.roles", "broker"},
                                         {"listeners", "http://127.0.0.1:8094,cluster://127.0.0.1:9194"},
                                         {"controller.quorum.voters", "1@127.0.0.1:9191"}});
  REQUIRE(broker_only.ok());
  CHECK_FALSE(broker_only->process_role_controller);

  // The Kafka client listener: on by default beside HTTP; listing listeners without one turns it off.
  auto defaults = load_server_config({});
  REQUIRE(defaults.ok());
  CHECK(defaults->kafka_listener_port == 9092);
  CHECK(defaults->kafka_listener_host == "127.0.0.1");
  auto with_kafka = load_server_config({{"listeners", "http://127.0.0.1:8082,kafka://0.0.0.0:19092"},
                                        {"advertised.listeners", "kafka://10.0.0.5:9092"}});
  REQUIRE(with_kafka.ok());
  CHECK(with_kafka->kafka_listener_host == "0.0.0.0");
  CHECK(with_kafka->kafka_listener_port == 19092);
  CHECK(with_kafka->advertised_kafka_host == "10.0.0.5");
  CHECK(with_kafka->advertised_kafka_port == 9092);
  auto http_only = load_server_config({{"listeners", "http://127.0.0.1:8082"}});
  REQUIRE(http_only.ok());
  CHECK(http_only->kafka_listener_port == -1);
  // A Kafka-only broker, as Kafka's and Redpanda's (no HTTP proxy): no http:// or https:// listener
  // is allowed; its HTTP doors are off (listener_port -1, nothing advertised).
  auto kafka_only = load_server_config({{"listeners", "kafka://127.0.0.1:19092"}});
  REQUIRE(kafka_only.ok());
  CHECK(kafka_only->listener_port == -1);
  CHECK(kafka_only->advertised_http_port == -1);
  CHECK(kafka_only->kafka_listener_port == 19092);
  auto cluster_only = load_server_config({{"listeners", "kafka://127.0.0.1:19092,cluster://127.0.0.1:19191"}});
  REQUIRE(cluster_only.ok());
  CHECK(cluster_only->listener_port == -1);
  CHECK(cluster_only->cluster_listener_port == 19191);

  auto why = [](properties p) {
    auto r = load_server_config(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::invalid_value);
    return r.error().message;
  };
  CHECK(why({{"listeners", "http://127.0.0.1:1,http://127.0.0.1:2"}}).find("listener name HTTP appears twice") != std::string::npos);
  CHECK(why({{"listeners", "http://127.0.0.1:1,kafka://127.0.0.1:2,kafka://127.0.0.1:3"}}).find("listener name PLAINTEXT appears twice") !=
        std::string::npos);
  CHECK(why({{"listeners", "http://127.0.0.1:1,kafka://localhost:2"}}).find("kafka://localhost:2") != std::string::npos);
  CHECK(why({{"socket.request.max.bytes", "104857601"}}).find("socket.request.max.bytes") != std::string::npos);
  CHECK(why({{"listeners", "http://127.0.0.1:1,ftp://127.0.0.1:9092"}}).find("FTP is not a security protocol and has no entry in listener.security.protocol.map") != std::string::npos);
  CHECK(why({{"process.roles", "broker,broker"}}).find("at most once") != std::string::npos);
  CHECK(why({{"process.roles", ""}}).find("at least one role") != std::string::npos);
  CHECK(why({{"process.roles", "broker"}}).find("needs controller.quorum.voters") != std::string::npos);
  CHECK(why({{"controller.quorum.voters", "1@127.0.0.1:9191,1@127.0.0.1:9192"}}).find("appears twice") != std::string::npos);
  CHECK(why({{"controller.quorum.voters", "x@127.0.0.1:9191"}}).find("voter id 'x'") != std::string::npos);
  CHECK(why({{"controller.quorum.voters", "1@localhost:9191"}}).find("not an IP address") != std::string::npos);
  // node.id 0 (the default) is not among the voters but runs the controller role.
  CHECK(why({{"listeners", "http://127.0.0.1:1,cluster://127.0.0.1:2"}, {"controller.quorum.voters", "1@127.0.0.1:2"}})
            .find("node.id=0 runs the controller role (process.roles=broker,controller) but is not one of the voters") != std::string::npos);
  // A dedicated controller (process.roles=controller): a voter with http:// and cluster:// only.
  auto dedicated = load_server_config({{"node.id", "1"},
                                       {"process.roles", "controller"},
                                       {"listeners", "http://127.0.0.1:8091,cluster://127.0.0.1:9191"},
                                       {"controller.quorum.voters", "1@127.0.0.1:9191,2@127.0.0.1:9192"}});
  REQUIRE(dedicated.ok());
  CHECK(dedicated->process_role_controller);
  CHECK_FALSE(dedicated->process_role_broker);
  CHECK(key_value(*dedicated, "process.roles") == "controller");
  // ... whose node.id is not a voter: refused naming node.id and the voters.
  const std::string not_voter = why({{"node.id", "3"},
                                     {"process.roles", "controller"},
                                     {"listeners", "http://127.0.0.1:8093,cluster://127.0.0.1:9193"},
                                     {"controller.quorum.voters", "1@127.0.0.1:9191,2@127.0.0.1:9192"}});
  CHECK(not_voter.find("controller.quorum.voters=1@127.0.0.1:9191,2@127.0.0.1:9192") != std::string::npos);
  CHECK(not_voter.find("node.id=3 runs the controller role (process.roles=controller) but is not one of the voters") !=
        std::string::npos);
  // ... with a Kafka client listener (the default listeners have one): refused naming listeners.
  const std::string with_kafka_listener =
      why({{"node.id", "1"},
           {"process.roles", "controller"},
           {"listeners", "http://127.0.0.1:8091,kafka://127.0.0.1:9092,cluster://127.0.0.1:9191"},
           {"controller.quorum.voters", "1@127.0.0.1:9191"}});
  CHECK(with_kafka_listener.find("listeners=") == 0);
  CHECK(with_kafka_listener.find("serves no Kafka clients") != std::string::npos);
  CHECK(why({{"process.roles", "controller"}}).find("listeners=") == 0);   // default listeners include kafka://
  // ... alone, without voters: nothing would ever serve records.
  CHECK(why({{"process.roles", "controller"}, {"listeners", "http://127.0.0.1:8091"}})
            .find("process.roles=controller: a dedicated controller needs controller.quorum.voters") !=
        std::string::npos);
  CHECK(why({{"node.id", "1"}, {"controller.quorum.voters", "1@127.0.0.1:2"}}).find("needs a cluster://HOST:PORT listener") !=
        std::string::npos);
  CHECK(why({{"broker.session.timeout.ms", "400"}, {"broker.heartbeat.interval.ms", "500"}, {"node.id", "1"},
             {"listeners", "http://127.0.0.1:1,cluster://127.0.0.1:2"}, {"controller.quorum.voters", "1@127.0.0.1:2"}})
            .find("must be longer than broker.heartbeat.interval.ms=500") != std::string::npos);
}

TEST_CASE("listeners by Kafka's security protocol names, named listeners and per-listener overrides (issue 29)") {
  auto c = load_server_config(
      {{"listeners", "http://127.0.0.1:8082,https://127.0.0.1:8443,PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,"
                     "CLIENT://:9094,INTERNAL://127.0.0.1:9095,cluster://127.0.0.1:9191"},
       {"advertised.listeners", "CLIENT://broker1.example:9094"},
       {"listener.security.protocol.map", "CLIENT:SASL_SSL,internal:SSL,CLUSTER:SSL"},
       {"ssl.keystore.location", "/etc/ringlog/broker.pem"},
       {"ssl.truststore.location", "/etc/ringlog/ca.pem"},
       {"listener.name.client.ssl.client.auth", "required"},
       {"listener.name.client.sasl.enabled.mechanisms", "SCRAM-SHA-512"}});
  REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message));
  std::vector<std::string> shape;
  for (const auto& r : c->listeners) shape.push_back(r.name + "/" + r.security_protocol + "/" + r.host + ":" + std::to_string(r.port));
  CHECK(shape == std::vector<std::string>{"HTTP/PLAINTEXT/127.0.0.1:8082", "HTTPS/SSL/127.0.0.1:8443",
                                          "PLAINTEXT/PLAINTEXT/127.0.0.1:9092", "SSL/SSL/127.0.0.1:9093",
                                          "CLIENT/SASL_SSL/0.0.0.0:9094", "INTERNAL/SSL/127.0.0.1:9095",
                                          "CLUSTER/SSL/127.0.0.1:9191"});
  CHECK(c->listeners[4].uses_sasl());
  CHECK(c->listeners[4].uses_tls());
  CHECK(c->listeners[4].is_kafka());
  CHECK_FALSE(c->listeners[6].is_kafka());
  CHECK(c->kafka_listener_port == 9092);   // the first Kafka listener, for the code that knows one
  CHECK(listener_setting(*c, "CLIENT", "ssl.client.auth") == "required");
  CHECK(listener_setting(*c, "SSL", "ssl.client.auth") == "none");
  CHECK(listener_setting(*c, "CLIENT", "ssl.keystore.location") == "/etc/ringlog/broker.pem");
  CHECK(listener_setting(*c, "CLIENT", "sasl.enabled.mechanisms") == "SCRAM-SHA-512");
  CHECK(advertised_listener(*c, c->listeners[4]).host == "broker1.example" );
  CHECK(advertised_listener(*c, c->listeners[3]).host == "127.0.0.1");
  // kafka:// stays the PLAINTEXT listener.
  auto alias = load_server_config({{"listeners", "http://127.0.0.1:1,kafka://127.0.0.1:2"}});
  REQUIRE(alias.ok());
  CHECK(alias->listeners[1].name == "PLAINTEXT");
  CHECK(key_value(*alias, "listeners") == "http://127.0.0.1:1,PLAINTEXT://127.0.0.1:2");

  auto why = [](properties p) {
    auto r = load_server_config(p);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(why({{"listeners", "http://127.0.0.1:1,SSL://127.0.0.1:2"}}).find("ssl.keystore.location") == 0);
  CHECK(why({{"listeners", "http://127.0.0.1:1,SSL://127.0.0.1:2"}, {"ssl.keystore.location", "/k.pem"},
             {"listener.name.ssl.ssl.client.auth", "required"}})
            .find("needs a truststore") != std::string::npos);
  CHECK(why({{"listener.security.protocol.map", "CLIENT:TLS"}}).find("unknown security protocol 'TLS'") != std::string::npos);
  CHECK(why({{"listener.security.protocol.map", "CLIENT:SSL"}}).find("names listener CLIENT") != std::string::npos);
  CHECK(why({{"listener.name.nosuch.ssl.client.auth", "required"}}).find("listener.name.nosuch.ssl.client.auth=") == 0);
  CHECK(why({{"listener.name.NoSuch.ssl.client.auth", "required"}}).find("lower case") != std::string::npos);
  CHECK(why({{"listener.name.plaintext.log.dirs", "/x"}}).find("cannot be set per listener") != std::string::npos);
  CHECK(why({{"ssl.enabled.protocols", "TLSv1.2,TLSv1.1"}}).find("unknown or unsupported protocol 'TLSv1.1'") !=
        std::string::npos);
  CHECK(why({{"ssl.keystore.type", "JKS"}}).find("only PEM") != std::string::npos);
  CHECK(why({{"ssl.client.auth", "maybe"}}).find("none, requested or required") != std::string::npos);
  CHECK(why({{"listeners", "http://127.0.0.1:1,cluster://127.0.0.1:2"}, {"listener.security.protocol.map", "CLUSTER:SASL_SSL"}})
            .find("cluster listener takes PLAINTEXT or SSL") != std::string::npos);
  CHECK(why({{"advertised.listeners", "SSL://10.0.0.1:9093"}}).find("names listener SSL") != std::string::npos);
  // Kafka's rule: the nonroutable meta-address is never advertised (the new user of session 31).
  CHECK(why({{"advertised.listeners", "kafka://0.0.0.0:9092"}}).find("wildcard address") != std::string::npos);
  CHECK(why({{"advertised.listeners", "http://0.0.0.0:8082"}}).find("wildcard address") != std::string::npos);
  // Secrets are not printed back.
  auto secret = load_server_config({{"ssl.key.password", "hunter2"}});
  REQUIRE(secret.ok());
  CHECK(key_value(*secret, "ssl.key.password") == "[hidden]");
}

TEST_CASE("super.users: ';' separates principals; 'User:a,User:b' is refused, a certificate name's commas are not") {
  auto r = load_server_config({{"super.users", "User:admin,User:ops"}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("separated by ';'") != std::string::npos);
  auto ok = load_server_config({{"super.users", "User:CN=broker,O=acme;User:admin"}});
  CHECK(ok.ok());
}
