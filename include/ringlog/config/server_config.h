#pragma once
// `ringlog serve` settings (design.md section 9): Kafka's key names, each with a default that
// serves on one machine, bounds, and an error naming the key when violated. Read from a Kafka
// style .properties file plus `--set key=value` overrides. Depends on base only: the app turns
// these into broker::broker_config and the gateway's server_options.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ringlog/base/result.h"

namespace ringlog::config {

enum class errc {
  parse_error,    // a line that is not "key=value" (message names file:line)
  unknown_key,    // message names the key
  invalid_value,  // message names the key, the value and the accepted range
};
using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

/// socket.send.buffer.bytes and socket.receive.buffer.bytes: SO_SNDBUF and SO_RCVBUF of accepted
/// sockets, bytes. Kafka's defaults (102400): Linux doubles the value for its bookkeeping, so a
/// connection holds at most about 200 KiB of unsent answer in the kernel instead of autotuning's
/// 4 MiB (tcp_wmem's maximum). Session 39: 300 WebSocket subscribers that never read held 1.12 GB
/// of Send-Q, near the host's TCP memory pressure threshold; with these, 300 hold about 60 MB.
inline constexpr int32_t socket_send_buffer_bytes_default = 102400;
inline constexpr int32_t socket_receive_buffer_bytes_default = 102400;
/// Both keys: -1 (the OS default, autotuned) or [socket_buffer_bytes_min, socket_buffer_bytes_max].
/// The minimum, a page: smaller values buy nothing (doubled, they fall under or near the kernel's
/// floor, SOCK_MIN_SNDBUF, about 4.5 KiB). The kernel also caps a value at net.core.wmem_max /
/// rmem_max (212992 on a stock kernel), so larger ones need the sysctl raised; the listener warns
/// when capped.
inline constexpr int64_t socket_buffer_bytes_min = 4096;
inline constexpr int64_t socket_buffer_bytes_max = 1LL << 30;

/// Key -> value in the order read; a later assignment of a key replaces the earlier one.
using properties = std::map<std::string, std::string>;

/// Parses .properties text (java.util.Properties subset: '#' and '!' comments, '=' or ':'
/// separators, surrounding blanks trimmed, '\' line continuations). `source` names the file in errors.
result<properties> parse_properties(std::string_view text, std::string_view source);
/// Parses one "key=value" of --set.
result<std::pair<std::string, std::string>> parse_assignment(std::string_view text);

/// One listener of `listeners` / `advertised.listeners` (issue 29): Kafka's listener name and
/// security protocol. Names: HTTP (http://) and HTTPS (https://) for REST, WebSocket, streams and
/// the console; CLUSTER (cluster://) for the inter-broker listener; every other name is a Kafka
/// client listener (kafka:// is the name PLAINTEXT). Protocols: PLAINTEXT, SSL, SASL_PLAINTEXT,
/// SASL_SSL (a name that is not a protocol takes its protocol from listener.security.protocol.map).
struct listener_record {
  std::string name;               // upper case, as Kafka normalizes listener names
  std::string security_protocol;  // PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
  std::string host;               // an IP address; "0.0.0.0" for an empty host (NAME://:PORT)
  int32_t port = 0;
  [[nodiscard]] bool is_http() const { return name == "HTTP" || name == "HTTPS"; }
  [[nodiscard]] bool is_cluster() const { return name == "CLUSTER"; }
  [[nodiscard]] bool is_kafka() const { return !is_http() && !is_cluster(); }
  [[nodiscard]] bool uses_tls() const { return security_protocol == "SSL" || security_protocol == "SASL_SSL"; }
  [[nodiscard]] bool uses_sasl() const { return security_protocol.rfind("SASL_", 0) == 0; }
  /// NAME://HOST:PORT as listeners shows it (http:// / https:// / cluster:// for those).
  [[nodiscard]] std::string to_string() const;
};

/// Keys a listener may override as listener.name.<name lower-cased>.<key> (Kafka's rule).
bool listener_overridable_key(std::string_view key);

struct server_config {
  // ---- broker (Kafka names)
  int32_t node_id = 0;                                  // node.id
  std::string cluster_id = "ringlog-cluster";           // cluster.id
  std::string log_dir = "./ringlog-data";               // log.dirs (one directory)
  int32_t num_partitions = 1;                           // num.partitions
  int16_t default_replication_factor = -1;              // default.replication.factor (-1: automatic)
  bool auto_create_topics_enable = true;                // auto.create.topics.enable
  // Authorization (issue 30, Kafka's StandardAuthorizer names): empty authorizer.class.name = no
  // authorizer (Kafka's default): the ACL APIs answer SECURITY_DISABLED.
  std::string authorizer_class_name;                    // authorizer.class.name
  std::string super_users;                              // super.users: User:a;User:b
  bool allow_everyone_if_no_acl_found = false;          // allow.everyone.if.no.acl.found
  int32_t message_max_bytes = 1048588;                  // message.max.bytes
  int64_t log_segment_bytes = 1024 * 1024 * 1024;       // log.segment.bytes
  int64_t log_roll_ms = 7LL * 24 * 3600 * 1000;         // log.roll.ms
  int64_t log_retention_ms = 7LL * 24 * 3600 * 1000;    // log.retention.ms (-1 unlimited)
  int64_t log_retention_bytes = -1;                     // log.retention.bytes (-1 unlimited)
  int64_t log_retention_check_interval_ms = 300000;     // log.retention.check.interval.ms
  int32_t log_index_interval_bytes = 4096;              // log.index.interval.bytes
  std::string log_flush_policy = "fsync";               // log.flush.policy: fsync | replication
  bool log_direct_io = false;                           // log.direct.io (ringlog): O_DIRECT appends
  bool log_cleaner_enable = true;                       // log.cleaner.enable
  int64_t log_cleaner_dedupe_buffer_size = 128LL << 20; // log.cleaner.dedupe.buffer.size (all shards)
  int64_t log_cleaner_io_max_bytes_per_second = INT64_MAX;  // log.cleaner.io.max.bytes.per.second
  int64_t log_cleaner_backoff_ms = 15000;               // log.cleaner.backoff.ms
  // Broker-level defaults of the compaction topic configs (Kafka's names and defaults).
  std::string log_cleanup_policy = "delete";            // log.cleanup.policy -> cleanup.policy
  std::string compression_type = "producer";            // compression.type -> compression.type (Kafka: same name)
  int32_t compression_gzip_level = -1;                  // compression.gzip.level (KIP-390), -1 or [1, 9]
  int32_t compression_lz4_level = 9;                    // compression.lz4.level, [1, 17]
  int32_t compression_zstd_level = 3;                   // compression.zstd.level, [-131072, 22]
  double log_cleaner_min_cleanable_ratio = 0.5;         // log.cleaner.min.cleanable.ratio -> min.cleanable.dirty.ratio
  int64_t log_cleaner_delete_retention_ms = 86400000;   // log.cleaner.delete.retention.ms -> delete.retention.ms
  int64_t log_cleaner_min_compaction_lag_ms = 0;        // log.cleaner.min.compaction.lag.ms -> min.compaction.lag.ms
  int64_t log_cleaner_max_compaction_lag_ms = INT64_MAX;  // log.cleaner.max.compaction.lag.ms -> max.compaction.lag.ms
  int32_t min_insync_replicas = 1;                      // min.insync.replicas
  int32_t produce_records_max = 10000;                  // produce.records.max
  int64_t fetch_wait_max_ms = 60000;                    // fetch.wait.max.ms
  int32_t fetch_waiters_per_partition_max = 10000;      // fetch.waiters.per.partition.max
  int32_t offsets_topic_num_partitions = 8;             // offsets.topic.num.partitions
  int32_t transaction_state_log_num_partitions = 8;     // transaction.state.log.num.partitions
  int64_t transaction_max_timeout_ms = 900000;          // transaction.max.timeout.ms (Kafka's default)
  int64_t transactional_id_expiration_ms = 604800000;   // transactional.id.expiration.ms (Kafka's default, 7 days)
  int64_t transaction_abort_timed_out_transaction_cleanup_interval_ms = 10000;  // Kafka's key and default
  int64_t group_expiry_interval_ms = 1000;              // group.expiry.interval.ms (ringlog)
  int64_t delay_max_ms = 7LL * 24 * 3600 * 1000;        // delay.max.ms (ringlog): longest delayed delivery
  // Broker defaults of a consumer instance's retries (issue 18; bounds in delay/retry.h).
  int32_t max_delivery_attempts = 5;                     // max.delivery.attempts
  int64_t retry_backoff_ms = 1'000;                      // retry.backoff.ms
  double retry_backoff_multiplier = 2.0;                 // retry.backoff.multiplier
  int64_t retry_backoff_max_ms = 30'000;                 // retry.backoff.max.ms
  std::string retry_topic_template = "<topic>.<group>.retry";     // retry.topic.template
  std::string dead_letter_topic_template = "<topic>.<group>.dlq"; // dead.letter.topic.template
  int64_t group_initial_rebalance_delay_ms = 3000;      // group.initial.rebalance.delay.ms
  int32_t offsets_retention_minutes = 10080;            // offsets.retention.minutes (KIP-211)
  int64_t offsets_retention_check_interval_ms = 600000; // offsets.retention.check.interval.ms
  // ---- process and HTTP
  std::string listener_host = "127.0.0.1";              // listeners=http://HOST:PORT
  int32_t listener_port = 8082;
  int32_t num_shards = 0;                               // num.shards: 0 = one per core
  std::string io_backend = "auto";                      // io.backend: auto | uring | posix
  int64_t http_request_body_max_bytes = 64LL * 1024 * 1024;  // http.request.body.max.bytes
  int32_t http_request_header_max_bytes = 64 * 1024;    // http.request.header.max.bytes
  int64_t http_idle_timeout_ms = 60000;                 // http.idle.timeout.ms
  int64_t http_request_header_timeout_ms = 10000;       // http.request.header.timeout.ms
  int64_t fetch_response_bytes_max = 64LL * 1024 * 1024;  // fetch.response.bytes.max
  int64_t shutdown_drain_timeout_ms = 10000;            // shutdown.drain.timeout.ms
  int64_t http_connections_max = 0;                     // http.connections.max: 0 = from RLIMIT_NOFILE
  std::string http_cors_allowed_origins;          // http.cors.allowed.origins: "*" or origins, comma-separated
  std::string http_allowed_hosts;                 // http.allowed.hosts: "*" or host names, comma-separated
  // ---- HTTP authentication (issue 29; docs/security.md "HTTP authentication and the console")
  std::string http_authentication_method = "NONE";      // http.authentication.method: NONE | BASIC | BEARER | BASIC,BEARER
  bool http_metrics_authentication = false;             // http.metrics.authentication: /metrics needs credentials
  int64_t http_session_max_age_ms = 8LL * 3600 * 1000;  // http.session.max.age.ms: a console login's lifetime
  int64_t http_sessions_max = 10000;                    // http.sessions.max: live console sessions at once
  int64_t http_access_token_max_age_ms = 60000;         // http.access.token.max.age.ms: POST /v1/tokens lifetime
  std::string http_cors_credentials_origins;            // http.cors.credentials.origins: origins sent Allow-Credentials
  // ---- JWT validation, shared by HTTP Bearer and SASL OAUTHBEARER (KIP-768 names)
  std::string sasl_oauthbearer_jwks_endpoint_url;       // sasl.oauthbearer.jwks.endpoint.url: file:PATH | https://HOST[:PORT]/PATH
  std::string sasl_oauthbearer_expected_issuer;         // sasl.oauthbearer.expected.issuer: "" = not checked
  std::string sasl_oauthbearer_expected_audience;       // sasl.oauthbearer.expected.audience: comma-separated
  std::string sasl_oauthbearer_sub_claim_name = "sub";  // sasl.oauthbearer.sub.claim.name
  int64_t sasl_oauthbearer_clock_skew_seconds = 30;     // sasl.oauthbearer.clock.skew.seconds
  int64_t sasl_oauthbearer_jwks_endpoint_retry_backoff_max_ms = 10000;  // ...retry.backoff.max.ms: re-reads at most this often
  int64_t sasl_oauthbearer_jwks_endpoint_refresh_ms = 3600000;        // ...refresh.ms: an https JWKS is fetched again this often
  int64_t sasl_oauthbearer_jwks_endpoint_retry_backoff_ms = 100;      // ...retry.backoff.ms: first retry of a failed fetch, doubling
  int64_t broker_partitions_max = 0;                    // broker.partitions.max: 0 = from RLIMIT_NOFILE
  // ---- cluster (design.md section 6; KIP-500, KIP-595, KIP-631 names)
  /// listeners=...,cluster://HOST:PORT: the inter-broker listener (Kafka's wire protocol). Port -1
  /// when not configured: a node without one is a single-node cluster (one-voter quorum).
  std::string cluster_listener_host = "127.0.0.1";
  int32_t cluster_listener_port = -1;
  /// advertised.listeners: what other nodes and clients are told; empty = the listeners as bound.
  std::string advertised_http_host;
  int32_t advertised_http_port = -1;
  std::string advertised_cluster_host;
  int32_t advertised_cluster_port = -1;
  /// listeners=...,kafka://HOST:PORT: the Kafka client listener (issue 15). Port -1 when the
  /// listeners key names none; the embedded default serves kafka://127.0.0.1:9092.
  std::string kafka_listener_host = "127.0.0.1";
  int32_t kafka_listener_port = 9092;
  std::string advertised_kafka_host;
  int32_t advertised_kafka_port = -1;
  /// sasl.enabled.mechanisms: the SASL mechanisms the Kafka listener offers, in order.
  std::vector<std::string> sasl_enabled_mechanisms = {"SCRAM-SHA-256", "SCRAM-SHA-512"};
  /// connections.max.reauth.ms (KIP-368): a SASL session's lifetime; 0 = no limit.
  int64_t connections_max_reauth_ms = 0;
  /// connection.failed.authentication.delay.ms: how long a failed login's answer waits before the
  /// connection closes (Kafka's default 100), so a password guesser gets few tries per second; on
  /// HTTP, how long a 401 for refused credentials waits (gateway::http_response::delay_ms).
  int64_t connection_failed_authentication_delay_ms = 100;
  /// connection.authentication.timeout.ms (ringlog; Kafka has none for TLS): a TLS handshake, or
  /// a SASL login, not done this long after accept closes the connection; 0 = no limit.
  int64_t connection_authentication_timeout_ms = 10000;
  /// connections.max.idle.ms (Kafka's key and default, 10 min): a Kafka listener connection with
  /// no request read and no answer written this long, and none in flight, is closed; 0 = never.
  int64_t connections_max_idle_ms = 600000;
  // Connection limits (issue 31, Kafka's keys; runtime/connection_limits.h has the rules). Kafka's
  // defaults are unlimited; these are on by default so a connect storm cannot take the broker.
  int64_t max_connections = 0;   // max.connections (every listener but CLUSTER); 0: an eighth of the open-file limit, at most 10000
  int64_t max_connections_per_ip = 1000;                // max.connections.per.ip
  std::map<std::string, int64_t> max_connections_per_ip_overrides;   // max.connections.per.ip.overrides
  int64_t max_connection_creation_rate = 1000;          // max.connection.creation.rate, per second
  // Client quotas (issue 31): the window every quota rate is measured over (Kafka's keys and defaults).
  int32_t quota_window_num = 11;                        // quota.window.num: samples
  int32_t quota_window_size_seconds = 1;                // quota.window.size.seconds: each sample's span
  int32_t socket_request_max_bytes = 104857600;         // socket.request.max.bytes (Kafka's default)
  /// socket.send.buffer.bytes / socket.receive.buffer.bytes (Kafka's keys): SO_SNDBUF / SO_RCVBUF
  /// of every socket the http, https and Kafka listeners accept, bytes; -1 = the OS default (Linux
  /// grows it with the connection, up to net.ipv4.tcp_wmem / tcp_rmem's maximum, 4 MiB / 6 MiB).
  /// The defaults and bounds are above (socket_send_buffer_bytes_default), with why.
  int32_t socket_send_buffer_bytes = socket_send_buffer_bytes_default;
  int32_t socket_receive_buffer_bytes = socket_receive_buffer_bytes_default;
  /// queued.max.request.bytes: request frames being read or handled, every Kafka listener
  /// together (Kafka's memory pool, KIP-72). Kafka's default -1 is unbounded; 512 MiB holds five
  /// frames of the largest socket.request.max.bytes at once and bounds what slow senders of large
  /// frames can make the broker hold (20 connections each sending 90 MB held about 2 GB before).
  int64_t queued_max_request_bytes = 536870912;
  /// kafka.request.body.timeout.ms (ringlog; Kafka has none): a Kafka request frame's body must
  /// be read this long after queued.max.request.bytes reserved its declared size, else the
  /// connection is closed and the room given back; 0 = only connections.max.idle.ms bounds it.
  /// 60 s: librdkafka's socket.timeout.ms (the Java client's request.timeout.ms is 30 s), past
  /// which the client has given the request up anyway.
  int64_t kafka_request_body_timeout_ms = 60000;
  bool kafka_fetch_zero_copy = true;                    // kafka.fetch.zero.copy: sendfile Fetch record sets
  bool process_role_broker = true;                      // process.roles contains "broker"
  bool process_role_controller = true;                  // process.roles contains "controller"
  /// controller.quorum.voters=ID@HOST:PORT,...: the voters' cluster listeners. Empty = this node
  /// alone (node.id on its own cluster listener, or in-process when it has none).
  struct quorum_voter {
    int32_t node_id = 0;
    std::string host;
    int32_t port = 0;
  };
  std::vector<quorum_voter> controller_quorum_voters;
  int64_t controller_quorum_election_timeout_ms = 1000;      // controller.quorum.election.timeout.ms
  // ringlog's defaults are shorter than Kafka's (2000, 1000) for failover within 2 s; raft/config.h
  // says what that trades (a leader paused for more than 1 s loses its leadership).
  int64_t controller_quorum_fetch_timeout_ms = 1000;         // controller.quorum.fetch.timeout.ms
  int64_t controller_quorum_election_backoff_max_ms = 500;   // controller.quorum.election.backoff.max.ms
  int64_t broker_heartbeat_interval_ms = 500;                // broker.heartbeat.interval.ms
  int64_t broker_session_timeout_ms = 3000;                  // broker.session.timeout.ms
  // initial.broker.registration.timeout.ms: Kafka's name for how long a starting broker waits to
  // register (its default is 60000); here it bounds each wait of start-up (the quorum's leader and
  // the catch-up, the registration, the internal topics), and is longer because the other voters
  // of a cluster started by hand may come minutes later.
  int64_t initial_broker_registration_timeout_ms = 300000;
  std::string broker_rack;                                   // broker.rack: empty = no rack
  int64_t replica_lag_time_max_ms = 30000;                  // replica.lag.time.max.ms: a follower not caught up this long leaves the ISR
  int64_t producer_id_expiration_ms = 86'400'000;           // producer.id.expiration.ms: idle idempotent producers are forgotten
  int64_t replica_fetch_wait_max_ms = 500;                  // replica.fetch.wait.max.ms: a follower's long-poll at its leader
  int32_t replica_fetch_max_bytes = 1024 * 1024;            // replica.fetch.max.bytes: batches per follower fetch (at least one)
  int64_t replica_fetch_backoff_ms = 100;                   // replica.fetch.backoff.ms: after a failed follower fetch
  int64_t leader_replication_throttled_rate = INT64_MAX;    // leader.replication.throttled.rate: bytes/s (KIP-73)
  int64_t follower_replication_throttled_rate = INT64_MAX;  // follower.replication.throttled.rate: bytes/s (KIP-73)
  // The partition autobalancer (issue 33, controller/autobalancer.h; Redpanda's names): off (the
  // default: nothing moves by itself, as in Kafka), node_add or continuous; also dynamic.
  std::string partition_autobalancer_mode = "off";                      // partition.autobalancer.mode
  int64_t partition_autobalancer_node_availability_timeout_ms = 900'000;  // ms (Redpanda's 900 s)
  int64_t partition_autobalancer_tick_interval_ms = 30'000;             // ms: continuous mode's balance check
  bool unclean_leader_election_enable = false;              // unclean.leader.election.enable
  bool auto_leader_rebalance_enable = true;                 // auto.leader.rebalance.enable
  // Kafka checks every 300 s; ringlog's clusters are small and users expect a restarted broker
  // to lead again soon, so 30 s (the check is a pass over the image, no I/O).
  int64_t leader_imbalance_check_interval_seconds = 30;     // leader.imbalance.check.interval.seconds
  int32_t leader_imbalance_per_broker_percentage = 10;      // leader.imbalance.per.broker.percentage (Kafka's)
  // ---- listeners and TLS (issue 29)
  /// Every listener of `listeners`, in order, protocols resolved. The fields above
  /// (listener_host, kafka_listener_host, cluster_listener_host, ...) mirror the plaintext HTTP,
  /// the first Kafka and the cluster listener for the code that knows one of each.
  std::vector<listener_record> listeners = {{"HTTP", "PLAINTEXT", "127.0.0.1", 8082},
                                             {"PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092}};
  /// advertised.listeners by name (empty = each listener as bound).
  std::vector<listener_record> advertised_listeners;
  /// listener.security.protocol.map: NAME -> protocol (Kafka's default maps each protocol name to itself).
  std::map<std::string, std::string> listener_security_protocol_map;
  /// ssl.* keys as set (Kafka's names; runtime/tls.h says what each means).
  std::map<std::string, std::string> ssl;
  /// listener.name.<name>.<key> overrides: lower-cased listener name -> key -> value.
  std::map<std::string, std::map<std::string, std::string>> listener_overrides;
  /// ssl.reload.check.interval.ms (ringlog): how often keystore and truststore files are checked
  /// for changes (a renewed certificate is served without a restart; SIGHUP re-reads at once).
  int64_t ssl_reload_check_interval_ms = 30000;
};

/// The value of `key` ("ssl.keystore.location", "sasl.enabled.mechanisms") for `listener_name`:
/// listener.name.<name>.<key> when set, else the global key, else "".
std::string listener_setting(const server_config& c, std::string_view listener_name, std::string_view key);
/// The SASL mechanisms Kafka listener `listener_name` offers: its
/// listener.name.<name>.sasl.enabled.mechanisms when set, else sasl.enabled.mechanisms.
std::vector<std::string> sasl_mechanisms_of(const server_config& c, std::string_view listener_name);
/// The advertised address of listener `r`: advertised.listeners' entry of the same name, else
/// `r` itself (a wildcard host advertises 127.0.0.1).
listener_record advertised_listener(const server_config& c, const listener_record& r);

/// Applies `values` over the defaults. Unknown keys and out-of-range values are refused, naming the key.
result<server_config> load_server_config(const properties& values);

struct key_description {
  std::string name;
  std::string default_value;
  std::string doc;   // meaning and accepted range
};
/// The value of `key` in `c` as text (as --help and errors show it); empty for an unknown key.
std::string key_value(const server_config& c, std::string_view key);
/// Every accepted key, for `ringlog serve --help`.
std::vector<key_description> describe_keys();

}  // namespace ringlog::config
