#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
// `ringlog serve`: start order shards -> broker -> HTTP; stop order HTTP (drain) -> broker
// (flush, clean-shutdown marker) -> shards. SIGTERM/SIGINT trigger the stop; exit code 0.

#include "serve.h"
#include "http_authentication.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>
#include <thread>

#include "ringlog/base/assert.h"
#include "ringlog/base/clock.h"
#include "ringlog/base/logfmt.h"
#include "ringlog/broker/broker.h"
#include "ringlog/config/server_config.h"
#include "ringlog/gateway/http_server.h"
#include "ringlog/gateway/tls_front.h"
#include "ringlog/rpc/cluster_transport.h"
#include "ringlog/rpc/constants.h"
#include "ringlog/runtime/shard_threads.h"
#include "ringlog/runtime/connection_limits.h"
#include "ringlog/runtime/request_memory_pool.h"
#include "ringlog/io/disk_executor.h"
#include "ringlog/io/file.h"
#include "ringlog/kafka/listener.h"
#include "ringlog/security/acl.h"
#include "ringlog/security/jwt.h"
#include "ringlog/security/scram_spec.h"
#include "ringlog/storage/log_dir_failure.h"
#include "ringlog/storage/segment_file_budget.h"
#include "tls_setup.h"

namespace ringlog::app {

namespace {

/// The areas `serve --help` groups the keys under, in order; a key goes to the first area one of
/// whose prefixes (or exact names) it starts with, and to the last, "Other", when none matches.
struct help_area {
  const char* title;
  std::vector<std::string_view> prefixes;
};

const std::vector<help_area>& help_areas() {
  static const std::vector<help_area> areas = {
      {"Node and listeners", {"node.id", "process.roles", "cluster.id", "listeners", "advertised.listeners",
                              "broker.rack", "log.dirs"}},
      {"Metadata quorum and controller (KRaft)", {"controller.", "broker.heartbeat.", "broker.session.", "initial.broker.registration.", "metadata."}},
      {"Replication and leadership", {"default.replication.factor", "min.insync.replicas", "replica.",
                                      "unclean.leader.", "auto.leader.", "leader.imbalance.",
                                      "leader.replication.", "follower.replication."}},
      {"Partition autobalancer (issue 33; docs/configuration.md)", {"partition.autobalancer."}},
      {"Storage: segments, retention, flush, compaction", {"log.", "num.partitions", "message.max.bytes",
                                                          "auto.create.topics.", "compression."}},
      {"Produce and fetch", {"produce.", "fetch.", "producer.id."}},
      {"HTTP and Kafka listeners", {"http.", "ws.", "kafka.", "socket.", "cors.", "queued.max.request.bytes"}},
      {"Connection limits (issue 31; docs/configuration.md)", {"max.connection", "connection.authentication.", "connections.max.idle."}},
      {"Client quotas (issue 31; the quotas themselves are metadata: AlterClientQuotas)", {"quota."}},
      {"Security: SASL and users", {"sasl.", "connections.max.reauth.", "connection.failed.authentication."}},
      {"Security: ACLs (authorization on every door)", {"authorizer.", "super.users", "allow.everyone.if.no.acl.found"}},
      {"Consumer groups and transactions", {"group.", "offsets.", "transaction"}},
      {"Delayed delivery, retries and dead letters", {"delay.", "max.delivery.", "retry.", "dead.letter."}},
      {"Runtime", {"num.shards", "io.backend", "broker.partitions.", "shutdown."}},
      {"TLS and listener security (docs/security.md; each ssl.* key also as listener.name.<name>.<key>)",
       {"ssl.", "listener.security."}},
      {"Other", {}},
  };
  return areas;
}

size_t help_area_of(std::string_view key) {
  const auto& areas = help_areas();
  for (size_t i = 0; i + 1 < areas.size(); ++i) {
    for (auto prefix : areas[i].prefixes) {
      if (key.substr(0, prefix.size()) == prefix) return i;
    }
  }
  return areas.size() - 1;
}

void print_usage(std::ostream& out) {
  out << "usage: ringlog serve [--config FILE] [--set KEY=VALUE]... [--io-backend=uring|posix|auto]\n"
         "                     [--add-scram 'SCRAM-SHA-512=[name=NAME,password=PASSWORD]']...\n"
         "                     [--add-scram-file FILE]...\n\n"
         "Runs the broker: HTTP/REST and Kafka clients on listeners (default http://127.0.0.1:8082 and\n"
         "kafka://127.0.0.1:9092), data in log.dirs. listeners without http:// or https:// (e.g.\n"
         "listeners=kafka://127.0.0.1:9092) is a Kafka-only broker: no REST, WebSocket, console or /metrics.\n"
         "Settings come from the defaults, then --config (a Kafka-style .properties file), then each\n"
         "--set in order. Unknown keys and out-of-range values are refused at start.\n\n"
         "A three-node cluster on one machine (node N of 1, 2, 3; every node a voter and a broker):\n"
         "  ringlog serve --set node.id=N --set controller.quorum.voters=1@127.0.0.1:9191,2@127.0.0.1:9192,"
         "3@127.0.0.1:9193 \\\n"
         "    --set listeners=http://127.0.0.1:808N,kafka://127.0.0.1:909N,cluster://127.0.0.1:919N "
         "--set log.dirs=./cluster-data/nN\n\n"
         "Adding a broker to a running cluster: start a node with a new node.id, its own\n"
         "listeners=http://...,kafka://...,cluster://... and log.dirs, process.roles=broker and the\n"
         "cluster's controller.quorum.voters unchanged. It follows the metadata log without a vote (a raft\n"
         "observer), registers, and the other nodes learn its cluster:// address from its\n"
         "registration; topics created afterwards place replicas on it; `ringlog cluster rebalance` (or\n"
         "`ringlog cluster reassign` per partition) moves existing ones onto it, or by itself with\n"
         "partition.autobalancer.mode=node_add or continuous.\n\n"
         "A dedicated controller (KIP-631): process.roles=controller, its node.id in\n"
         "controller.quorum.voters, listeners=http://...,cluster://... (no kafka://: controllers serve no\n"
         "clients). It votes, keeps the metadata log and, when it leads, is the active controller; it never\n"
         "registers as a broker or holds a partition. Its HTTP listener serves health, metrics, the console\n"
         "and metadata (brokers, quorum, topics, configs, the group list); records, consumers, a group's\n"
         "own routes and transactions answer 421 naming the brokers.\n\n"
         "TLS (docs/security.md): https://HOST:PORT beside or instead of http://, Kafka listeners by Kafka's\n"
         "security protocol names (SSL://, SASL_SSL://, ...) or named ones mapped by\n"
         "listener.security.protocol.map (CLIENT:SSL), per listener listener.name.<name>.ssl.*, and\n"
         "listener.security.protocol.map=CLUSTER:SSL for mutual TLS between nodes. Keys and certificates are\n"
         "PEM (ssl.keystore.location, ssl.truststore.location); they are re-read when the files change and\n"
         "on SIGHUP, without dropping connections.\n\n"
         "HTTP authentication (docs/security.md): http.authentication.method=BASIC,BEARER makes every route\n"
         "but /v1/health (and /metrics unless http.metrics.authentication=true) need `curl -u user:password`\n"
         "(the SCRAM users) or a JWT (`curl --oauth2-bearer`, keys from sasl.oauthbearer.jwks.endpoint.url=https://... or file:...);\n"
         "the console then shows a login page.\n\n"
         "SASL on the Kafka listener (docs/security.md): listeners=...,SASL_PLAINTEXT://HOST:PORT, and the first\n"
         "user with --add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]' (Kafka's kafka-storage\n"
         "--add-scram syntax; also iterations=N (4096..16384), salt=BASE64, saltedpassword=BASE64; may repeat).\n"
         "A user is added only when the cluster has no credential of that user and mechanism, so the flag\n"
         "is needed at the first start only (later starts log \"the user exists, left unchanged\"). A password\n"
         "on the command line shows in `ps` for the life of the broker: --add-scram-file FILE reads the same\n"
         "entries from FILE instead, one a line (# comments and blank lines skipped); FILE must not be\n"
         "readable by group or others (chmod 600 FILE). More users: `ringlog users create`.\n\n"
         "Keys (default, meaning), by area:\n";
  const auto keys = config::describe_keys();
  const auto& areas = help_areas();
  for (size_t area = 0; area < areas.size(); ++area) {
    bool titled = false;
    for (const auto& k : keys) {
      if (help_area_of(k.name) != area) continue;
      if (!titled) out << "\n" << areas[area].title << ":\n";
      titled = true;
      out << "  " << k.name << " = " << k.default_value << "\n      " << k.doc << "\n";
    }
  }
}

/// glibc hands multi-MiB buffers (a fetch's batches, its encoded answer) to mmap and gives them
/// back to the kernel on free, so every large fetch paid a page fault per 4 KiB twice over: a
/// 4 MiB Kafka fetch answer took 51 ms on this VM, 7 ms with these settings (a raw Fetch of one
/// partition, docs/benchmarks.md). Buffers below 32 MiB (glibc's largest mmap threshold on 64-bit,
/// half its 64 MiB heap) come from the heap, and up to 512 MiB of freed heap stays mapped for
/// reuse; both bound what is kept, not what is allocated (every buffer has its own named limit).
void keep_large_buffers_mapped() {
  constexpr int mmap_threshold_bytes = 32 * 1024 * 1024;
  constexpr int trim_threshold_bytes = 512 * 1024 * 1024;
  if (mallopt(M_MMAP_THRESHOLD, mmap_threshold_bytes) != 1 || mallopt(M_TRIM_THRESHOLD, trim_threshold_bytes) != 1) {
    spdlog::warn("msg=\"malloc thresholds not applied; large fetches page-fault more\"");
  }
}

/// The Kafka client listener and the request handler it serves (issue 15).
struct kafka_front_end {
  std::unique_ptr<kafka::request_handler> handler;
  std::unique_ptr<kafka::listener> listener;
};

/// A Kafka client listener bound before the broker opens (so the port the kernel chose for
/// NAME://HOST:0 is the one registered), and its TLS context on SSL / SASL_SSL.
struct bound_kafka_listener {
  config::listener_record record;
  int listen_fd = -1;
  int32_t bound_port = -1;
  std::shared_ptr<runtime::reloading_tls_context> tls;
  std::shared_ptr<const security::ssl_principal_mapper> principal_mapper;
  std::shared_ptr<runtime::connection_limits> limits;
  std::shared_ptr<const security::jwt_validator> oauthbearer;   // the JWKS HTTP Bearer uses
};

/// The open-file limit the process raises itself to (plan_open_files): its hard limit.
int64_t open_file_limit() {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  return rl.rlim_max == RLIM_INFINITY ? 1'000'000 : static_cast<int64_t>(rl.rlim_max);
}

/// max.connections, or by default (0) an eighth of the open-file limit, at least 16, at most 10000
/// (Kafka's listeners together; the HTTP listener's http.connections.max has a quarter): one
/// address's max.connections.per.ip (1000) could otherwise take every descriptor under
/// `ulimit -n 1024` (breaker of session 31) and stop every listener.
int64_t kafka_connections_max(const config::server_config& cfg) {
  return cfg.max_connections > 0 ? cfg.max_connections : std::clamp<int64_t>(open_file_limit() / 8, 16, 10000);
}

/// The connection limits of every listener (plaintext HTTP has http.connections.max as well):
/// max.connections, max.connections.per.ip(.overrides), max.connection.creation.rate, and each
/// listener's listener.name.<name>.max.connections / .max.connection.creation.rate.
std::shared_ptr<runtime::connection_limits> make_connection_limits(const config::server_config& cfg) {
  runtime::connection_limits_config c;
  c.max_connections = kafka_connections_max(cfg);
  c.max_connections_per_ip = cfg.max_connections_per_ip;
  c.max_connections_per_ip_overrides = cfg.max_connections_per_ip_overrides;
  c.max_connection_creation_rate = cfg.max_connection_creation_rate;
  auto limits = std::make_shared<runtime::connection_limits>(std::move(c));
  auto own = [&](const config::listener_record& r, const char* key) -> std::optional<int64_t> {
    const std::string value = config::listener_setting(cfg, r.name, key);
    if (value.empty()) return std::nullopt;
    return std::stoll(value);   // checked when the config was read
  };
  for (const auto& r : cfg.listeners) {
    // The cluster listener's max.connections is the server's own bound (cluster_connections_max):
    // at it a stranger's connection gives its place to the newcomer, which a plain refusal cannot.
    limits->add_listener(r.name, runtime::listener_connection_limits{r.is_cluster() ? std::nullopt : own(r, "max.connections"),
                                                                     own(r, "max.connection.creation.rate"),
                                                                     r.is_cluster(), r.name == "HTTP" || r.name == "HTTPS"});
  }
  return limits;
}

/// The cluster listener's admission (rpc::listener_admission): the first-request and idle
/// deadlines, and its bound on open connections: listener.name.cluster.max.connections, else
/// rpc's default, at most an eighth of the open-file limit the process may raise itself to
/// (plan_open_files), at least 16.
rpc::listener_admission cluster_admission(const config::server_config& cfg,
                                          std::shared_ptr<runtime::connection_limits> limits) {
  rpc::listener_admission a{std::move(limits), cfg.connection_authentication_timeout_ms, cfg.connections_max_idle_ms,
                            rpc::constants::cluster_listener_connections_max_default};
  const std::string value = config::listener_setting(cfg, "CLUSTER", "max.connections");
  if (!value.empty()) {
    a.connections_max = std::stoll(value);   // checked when the config was read
    return a;
  }
  a.connections_max = std::clamp<int64_t>(open_file_limit() / 8, 16, rpc::constants::cluster_listener_connections_max_default);
  return a;
}

/// Where Kafka clients of listener `l` are told to connect: advertised.listeners' entry of its
/// name, else the bound address (a wildcard bind advertises 127.0.0.1, reachable from this
/// machine only).
broker::kafka_listener_endpoint kafka_advertised(const config::server_config& cfg, const bound_kafka_listener& l) {
  config::listener_record bound = l.record;
  if (l.bound_port > 0) bound.port = l.bound_port;
  const auto a = config::advertised_listener(cfg, bound);
  return {a.name, a.host, a.port};
}

/// Where peers and clients are told this node's HTTP listener is: advertised.listeners' entry,
/// else the bound host, except that a wildcard bind (0.0.0.0, ::) is advertised as 127.0.0.1
/// with a warning, as the Kafka listener's is (a new user of session 31 saw 0.0.0.0 registered:
/// a peer passing a group call there would call itself).
std::string advertised_http_host(const config::server_config& cfg) {
  if (!cfg.advertised_http_host.empty()) return cfg.advertised_http_host;
  if (cfg.listener_port < 0) return {};   // no HTTP listener: none is registered
  if (cfg.listener_host != "0.0.0.0" && cfg.listener_host != "::") return cfg.listener_host;
  // The advice names the scheme the listener serves: an https listener is advertised as
  // https://HOST:PORT (http:// there is refused at start; a new user of session 34 followed it).
  const bool https_only = std::none_of(cfg.listeners.begin(), cfg.listeners.end(),
                                       [](const config::listener_record& l) { return l.name == "HTTP"; });
  spdlog::warn("msg=\"http listener binds a wildcard address; peers and the REST v3 brokers answer are told "
               "127.0.0.1: set advertised.listeners={}://HOST:PORT for other machines\"",
               https_only ? "https" : "http");
  return "127.0.0.1";
}

/// The port a bound socket holds (an ephemeral port 0 becomes the one the kernel chose), or -1.
int32_t bound_port_of(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  return -1;
}

/// queued.max.request.bytes as /metrics text: its capacity, what is reserved, the frames waiting.
std::string request_pool_metrics(const runtime::request_memory_pool& pool) {
  std::string out;
  out += "# HELP ringlog_kafka_request_pool_capacity_bytes queued.max.request.bytes: bytes of Kafka request frames "
         "being read or handled, every Kafka listener together.\n";
  out += "# TYPE ringlog_kafka_request_pool_capacity_bytes gauge\n";
  out += "ringlog_kafka_request_pool_capacity_bytes " + std::to_string(pool.capacity_bytes()) + "\n";
  out += "# HELP ringlog_kafka_request_pool_reserved_bytes Bytes of queued.max.request.bytes reserved by request "
         "frames being read or handled (each frame's declared size).\n";
  out += "# TYPE ringlog_kafka_request_pool_reserved_bytes gauge\n";
  out += "ringlog_kafka_request_pool_reserved_bytes " + std::to_string(pool.reserved_bytes()) + "\n";
  out += "# HELP ringlog_kafka_request_pool_waiting_frames Request frames waiting for room in "
         "queued.max.request.bytes (their connections are not read meanwhile).\n";
  out += "# TYPE ringlog_kafka_request_pool_waiting_frames gauge\n";
  out += "ringlog_kafka_request_pool_waiting_frames " + std::to_string(pool.waiters()) + "\n";
  return out;
}

/// The Kafka listener's fetch byte counters as /metrics text (Prometheus exposition format).
std::string kafka_fetch_metrics(const kafka::fetch_counters& c) {
  std::string out;
  out += "# HELP ringlog_kafka_fetch_bytes_zero_copy_total Kafka Fetch record bytes sent from segment files by sendfile, "
         "never copied through the broker's memory.\n";
  out += "# TYPE ringlog_kafka_fetch_bytes_zero_copy_total counter\n";
  out += "ringlog_kafka_fetch_bytes_zero_copy_total " + std::to_string(c.bytes_zero_copy.load()) + "\n";
  out += "# HELP ringlog_kafka_fetch_bytes_copied_total Kafka Fetch record bytes read into memory and copied into "
         "the answer.\n";
  out += "# TYPE ringlog_kafka_fetch_bytes_copied_total counter\n";
  out += "ringlog_kafka_fetch_bytes_copied_total " + std::to_string(c.bytes_copied.load()) + "\n";
  return out;
}

/// socket.send.buffer.bytes and socket.receive.buffer.bytes, for the http, https and Kafka
/// listeners. The cluster listener keeps the OS defaults: its peers are this cluster's brokers,
/// whose replica fetches are bounded by replica.fetch.max.bytes already.
runtime::socket_buffer_sizes socket_buffers_of(const config::server_config& cfg) {
  return {.send_bytes = cfg.socket_send_buffer_bytes, .receive_bytes = cfg.socket_receive_buffer_bytes};
}

/// Starts Kafka listener `l` (bound by serve before the broker opened, so the broker registered
/// the port actually bound) with a request handler of its own: Metadata answers the endpoints of
/// this listener's name, and a TLS listener copies Fetch record sets into the answer (sendfile
/// cannot go through userspace TLS). Errors: why it cannot listen.
base::result<kafka_front_end, std::string> start_kafka_listener(const config::server_config& cfg,
                                                                const bound_kafka_listener& l, broker::broker& broker,
                                                                runtime::shard_threads& runtime,
                                                                kafka::fetch_counters& counters,
                                                                std::shared_ptr<runtime::request_memory_pool> request_pool) {
  kafka_front_end out;
  kafka::handler_options options;
  options.listener_name = l.record.name;
  options.security_protocol = l.record.security_protocol;
  options.node_id = cfg.node_id;
  options.cluster_id = cfg.cluster_id;
  options.fetch_response_bytes_max = cfg.fetch_response_bytes_max;
  options.fetch_zero_copy = cfg.kafka_fetch_zero_copy && !l.record.uses_tls();
  options.fetch_wait_max_ms = cfg.fetch_wait_max_ms;
  options.counters = &counters;
  const auto advertised = kafka_advertised(cfg, l);
  options.advertised_host = advertised.host;
  options.advertised_port = advertised.port;
  out.handler = std::make_unique<kafka::request_handler>(broker, options);
  kafka::listener_options listen;
  listen.name = l.record.name;
  listen.host = l.record.host;
  listen.port = static_cast<uint16_t>(l.record.port);
  listen.request_bytes_max = cfg.socket_request_max_bytes;
  listen.listen_fd = l.listen_fd;
  listen.tls = l.tls;
  listen.principal_mapper = l.principal_mapper;
  // SASL_PLAINTEXT:// and SASL_SSL://: every connection logs in first (src/kafka/sasl_gate.h).
  listen.sasl = l.record.security_protocol == "SASL_PLAINTEXT" || l.record.security_protocol == "SASL_SSL";
  listen.sasl_enabled_mechanisms = config::sasl_mechanisms_of(cfg, l.record.name);
  listen.connections_max_reauth_ms = cfg.connections_max_reauth_ms;
  listen.connection_failed_authentication_delay_ms = cfg.connection_failed_authentication_delay_ms;
  listen.authentication_timeout_ms = cfg.connection_authentication_timeout_ms;
  listen.connections_max_idle_ms = cfg.connections_max_idle_ms;
  listen.request_body_timeout_ms = cfg.kafka_request_body_timeout_ms;
  listen.oauthbearer_validator = l.oauthbearer;
  const auto& m = listen.sasl_enabled_mechanisms;
  RINGLOG_ASSERT(!listen.sasl || l.oauthbearer || std::find(m.begin(), m.end(), "OAUTHBEARER") == m.end(),
                 "config validation (check_jwks_needed) refuses OAUTHBEARER without sasl.oauthbearer.jwks.endpoint.url");
  listen.limits = l.limits;
  listen.socket_buffers = socket_buffers_of(cfg);
  listen.request_pool = std::move(request_pool);
  auto bound = kafka::listener::listen(runtime, *out.handler, listen);
  if (!bound.ok()) return bound.error();
  out.listener = std::move(bound).value();
  const bool wildcard = l.record.host == "0.0.0.0" || l.record.host == "::";
  if (wildcard && config::advertised_listener(cfg, l.record).host == "127.0.0.1") {
    spdlog::warn("msg=\"kafka listener binds a wildcard address; clients are told 127.0.0.1: set "
                 "advertised.listeners={}://HOST:PORT for other machines\"",
                 l.record.name);
  }
  out.listener->start();
  // kafka:// is how the PLAINTEXT listener has always been written (scripts grep this line).
  const std::string scheme = l.record.name == "PLAINTEXT" ? "kafka" : l.record.name;
  spdlog::info("msg=\"serving kafka\" listeners={}://{}:{} advertised={}://{}:{} listener={} security.protocol={} "
               "kafka.fetch.zero.copy={}",
               scheme, l.record.host, out.listener->port(), scheme, options.advertised_host, options.advertised_port,
               l.record.name, l.record.security_protocol, options.fetch_zero_copy);
  return out;
}

/// Every listener's socket, bound before anything exists on disk (a port in use stops the start
/// first), and the TLS contexts of the TLS ones (a missing file or a key that does not match its
/// certificate stops it too, naming the key).
struct bound_listeners {
  const config::listener_record* http_record = nullptr;    // http://, if listed
  const config::listener_record* https_record = nullptr;   // https:// (gateway/tls_front.h), if listed
  int http_fd = -1;
  int https_fd = -1;
  std::shared_ptr<runtime::reloading_tls_context> https_tls;
  std::vector<bound_kafka_listener> kafka;
  rpc::cluster_tls cluster_tls;   // CLUSTER:SSL
  /// The TLS client context for passing group calls on to a peer whose only HTTP door is
  /// https:// (peer_https_client); nullptr without a truststore to check peers against.
  std::shared_ptr<runtime::reloading_tls_context> peer_https_client;
  /// CLUSTER:SSL: listener.name.cluster.ssl.principal.mapping.rules (a peer's subject -> principal).
  std::shared_ptr<const security::ssl_principal_mapper> cluster_principal_mapper;
  std::shared_ptr<runtime::connection_limits> limits;   // every listener's
  /// queued.max.request.bytes: one pool for every Kafka listener, as Kafka's SocketServer shares one.
  std::shared_ptr<runtime::request_memory_pool> request_pool;
};

/// In a cluster, the TLS client context group calls are passed on with to a peer whose only HTTP
/// door is https:// (gateway/group_proxy.h): the https:// listener's ssl.* settings (its keystore
/// is presented when one is set; the HTTP layer takes no principal from it), with the cluster
/// listener's truststore when the https:// one has none. Without any truststore there is none,
/// and an https-only node says at start that its peers cannot pass calls on to it. Exit code 2
/// when the files do not make a context (the error names the key).
std::optional<int> peer_https_client(const config::server_config& cfg, bound_listeners& out, tls_reloader& reloader) {
  if (cfg.cluster_listener_port < 0) return std::nullopt;   // one node: no peers
  const config::listener_record* cluster = nullptr;
  for (const auto& r : cfg.listeners) {
    if (r.is_cluster() && r.uses_tls()) cluster = &r;
  }
  if (out.https_record == nullptr && cluster == nullptr) return std::nullopt;
  runtime::tls_settings s = tls_settings_for(cfg, out.https_record != nullptr ? *out.https_record : *cluster);
  if (s.truststore_location.empty() && s.truststore_certificates.empty() && cluster != nullptr) {
    const auto c = tls_settings_for(cfg, *cluster);
    s.truststore_location = c.truststore_location;
    s.truststore_certificates = c.truststore_certificates;
    s.truststore_type = c.truststore_type;
  }
  if (s.truststore_location.empty() && s.truststore_certificates.empty()) {
    if (out.http_record == nullptr) {
      spdlog::warn("msg=\"no truststore for https:// peers: the only HTTP listener is https://, and group calls other "
                   "brokers pass on to this node need them to check its certificate; set ssl.truststore.location on "
                   "every broker (or the cluster listener's)\"");
    }
    return std::nullopt;
  }
  auto made = runtime::reloading_tls_context::create(s, runtime::tls_role::client);
  if (!made.ok()) {
    spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped("https:// peers' client: " + made.error()));
    return 2;
  }
  out.peer_https_client = made.value();
  reloader.add("HTTPS (client side, peers)", out.peer_https_client);
  return std::nullopt;
}

/// Binds every listener into `out` and adds each TLS context to `reloader`. Returns the exit code
/// when the start must stop (1: cannot listen, 2: bad config), with its log line written.
std::optional<int> bind_listeners(const config::server_config& cfg, tls_reloader& reloader, bound_listeners& out) {
  out.limits = make_connection_limits(cfg);
  out.request_pool = std::make_shared<runtime::request_memory_pool>(static_cast<size_t>(cfg.queued_max_request_bytes));
  for (const auto& r : cfg.listeners) {
    if (r.name == "HTTP") out.http_record = &r;
    if (r.name == "HTTPS") out.https_record = &r;
  }
  base::result<int, std::string> listener = -1;
  if (out.http_record) listener = gateway::bind_listener(out.http_record->host, static_cast<uint16_t>(out.http_record->port));
  if (!listener.ok()) {
    spdlog::error("msg=\"cannot listen\" listeners=http://{}:{} error=\"{}\"", cfg.listener_host, cfg.listener_port,
                  base::logfmt_escaped(listener.error()));
    return 1;
  }
  out.http_fd = listener.value();
  if (const auto* https_record = out.https_record) {
    auto tls = listener_tls(cfg, *https_record, runtime::tls_role::server);
    if (!tls.ok()) {
      spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped(tls.error()));
      return 2;
    }
    out.https_tls = tls.value();
    reloader.add(https_record->name, out.https_tls);
    auto bound = gateway::bind_listener(https_record->host, static_cast<uint16_t>(https_record->port));
    if (!bound.ok()) {
      spdlog::error("msg=\"cannot listen\" listeners={} error=\"{}\"", https_record->to_string(),
                    base::logfmt_escaped(bound.error()));
      return 1;
    }
    out.https_fd = bound.value();
  }
  // The Kafka client listeners too: their ports (the one the kernel chose for NAME://HOST:0) are
  // registered as this broker's endpoints when the broker opens, below. TLS contexts are built
  // here as well, so a missing file or a key that does not match its certificate stops the start.
  for (const auto& record : cfg.listeners) {
    if (!record.is_kafka()) continue;
    bound_kafka_listener l;
    l.record = record;
    l.limits = out.limits;
    if (record.uses_tls()) {
      auto tls = listener_tls(cfg, record, runtime::tls_role::server);
      auto mapper = listener_principal_mapper(cfg, record);
      if (!tls.ok() || !mapper.ok()) {
        spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped(!tls.ok() ? tls.error() : mapper.error()));
        return 2;
      }
      l.tls = tls.value();
      l.principal_mapper = mapper.value();
      reloader.add(record.name, l.tls);
    }
    auto kafka_bound = gateway::bind_listener(record.host, static_cast<uint16_t>(record.port));
    if (!kafka_bound.ok()) {
      spdlog::error("msg=\"cannot listen\" listeners={} error=\"{}\"", record.to_string(),
                    base::logfmt_escaped(kafka_bound.error()));
      return 1;
    }
    l.listen_fd = kafka_bound.value();
    l.bound_port = bound_port_of(l.listen_fd);
    out.kafka.push_back(std::move(l));
  }
  // The cluster listener's TLS form (CLUSTER:SSL): mutual certificates, this node's on both the
  // accepting and the connecting side (docs/security.md).
  for (const auto& record : cfg.listeners) {
    if (!record.is_cluster() || !record.uses_tls()) continue;
    auto server_side = listener_tls(cfg, record, runtime::tls_role::server);
    auto client_side = listener_tls(cfg, record, runtime::tls_role::client);
    if (!server_side.ok() || !client_side.ok()) {
      spdlog::error("msg=\"bad config\" error=\"{}\"",
                    base::logfmt_escaped(!server_side.ok() ? server_side.error() : client_side.error()));
      return 2;
    }
    out.cluster_tls = {server_side.value(), client_side.value()};
    auto mapper = listener_principal_mapper(cfg, record);
    if (!mapper.ok()) {
      spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped(mapper.error()));
      return 2;
    }
    out.cluster_principal_mapper = mapper.value();
    reloader.add("CLUSTER", out.cluster_tls.server);
    reloader.add("CLUSTER (client side)", out.cluster_tls.client);
  }
  if (auto failed = peer_https_client(cfg, out, reloader)) return failed;
  return std::nullopt;
}

/// The TLS cluster listener's peer check (issue 30): a peer's certificate subject becomes its
/// principal by listener.name.cluster.ssl.principal.mapping.rules; without an authorizer every
/// peer the cluster's CA signed is admitted (as before); with one, only super.users, or principals
/// with CLUSTER_ACTION on the cluster, may fetch replicas, vote or register (Kafka's rule for
/// inter-broker requests). Until the broker has opened (it may be waiting for this very quorum)
/// the ACLs are not loaded: super.users only, as Kafka's StandardAuthorizer before it is ready.
rpc::server::peer_check cluster_peer_check(const config::server_config& cfg,
                                           std::shared_ptr<const security::ssl_principal_mapper> mapper,
                                           std::shared_ptr<std::atomic<broker::broker*>> serving) {
  if (cfg.authorizer_class_name.empty()) return {};
  std::vector<std::string> super_users;
  if (auto su = security::parse_super_users(cfg.super_users); su.ok()) super_users = std::move(su).value();
  return [mapper = std::move(mapper), serving = std::move(serving), super_users = std::move(super_users)](
             const std::string& subject, const std::string& host) -> std::optional<std::string> {
    auto principal = mapper ? mapper->map(subject) : std::optional(security::kafka_principal::user(subject));
    if (!principal) return "no ssl.principal.mapping.rules rule matches the certificate subject";
    const std::string name = principal->to_string();
    broker::broker* b = serving->load();
    if (b != nullptr) {
      const security::acl_action action{security::resource_type::cluster, security::cluster_resource_name,
                                        security::acl_operation::cluster_action};
      if (b->security().authorize(*principal, host, action).allowed()) return std::nullopt;
      return name + " may not CLUSTER_ACTION on the cluster (not in super.users, no ACL allows it)";
    }
    if (std::find(super_users.begin(), super_users.end(), name) != super_users.end()) return std::nullopt;
    return name + " is not in super.users (the broker has not opened: ACLs are not loaded yet)";
  };
}

/// Before the cluster transport starts: its peer check (CLUSTER:SSL), and where a Kafka client
/// pointed at the cluster listener is told to go (refused with a log line naming it).
void configure_cluster_transport(const config::server_config& cfg, const bound_listeners& bound,
                                 std::shared_ptr<std::atomic<broker::broker*>> serving_broker,
                                 rpc::cluster_transport& transport) {
  if (bound.cluster_tls.server) {
    transport.set_peer_check(cluster_peer_check(cfg, bound.cluster_principal_mapper, std::move(serving_broker)));
  }
  if (!bound.kafka.empty()) {
    const auto first = kafka_advertised(cfg, bound.kafka.front());
    // kafka:// is how the PLAINTEXT listener has always been written.
    const std::string scheme = first.listener_name == "PLAINTEXT" ? "kafka" : first.listener_name;
    transport.set_kafka_listener_hint(scheme + "://" + first.host + ":" + std::to_string(first.port));
  } else {
    transport.set_kafka_listener_hint(cfg.process_role_broker
                                          ? "a kafka:// listener (this node has none in listeners; another broker's)"
                                          : "a broker's kafka:// listener (this node is a dedicated controller: "
                                            "process.roles=controller serves no Kafka clients)");
  }
}

/// Starts the https:// front and the Kafka listeners of `bound` once the HTTP server serves.
/// false (with a log line) when one cannot listen: the caller stops what did start.
bool start_front_ends(const config::server_config& cfg, const bound_listeners& bound, broker::broker& broker,
                      runtime::shard_threads& runtime, gateway::http_server& server, kafka::fetch_counters& counters,
                      std::unique_ptr<gateway::tls_front>& https, std::vector<kafka_front_end>& kafka) {
  // KIP-612: the connection_creation_rate quotas of ip entities bound these listeners' accepts
  // (they stop before the broker goes).
  if (bound.limits) {
    bound.limits->set_ip_creation_rate(
        [b = &broker](std::string_view address) { return b->security().connection_creation_rate_for(address); });
  }
  if (const auto* https_record = bound.https_record) {
    gateway::tls_front_options front;
    front.name = https_record->name;
    front.host = https_record->host;
    front.port = static_cast<uint16_t>(https_record->port);
    front.listen_fd = bound.https_fd;
    front.tls = bound.https_tls;
    front.authentication_timeout_ms = cfg.connection_authentication_timeout_ms;
    front.limits = bound.limits;
    front.socket_buffers = socket_buffers_of(cfg);
    auto started = gateway::tls_front::start(runtime, server, front);
    if (started.ok()) {
      https = std::move(started).value();
      spdlog::info("msg=\"serving https\" listeners=https://{}:{}", https_record->host, https->port());
    } else {
      spdlog::error("msg=\"cannot listen\" listeners={} error=\"{}\"", https_record->to_string(),
                    base::logfmt_escaped(started.error()));
      return false;
    }
  }
  if (!bound.kafka.empty() && cfg.queued_max_request_bytes < cfg.socket_request_max_bytes) {
    spdlog::warn("msg=\"queued.max.request.bytes is below socket.request.max.bytes: a Kafka request frame larger "
                 "than it closes its connection\" queued.max.request.bytes={} socket.request.max.bytes={}",
                 cfg.queued_max_request_bytes, cfg.socket_request_max_bytes);
  }
  for (const auto& l : bound.kafka) {
    auto started = start_kafka_listener(cfg, l, broker, runtime, counters, bound.request_pool);
    if (!started.ok()) {
      spdlog::error("msg=\"cannot listen\" listeners={} error=\"{}\"", l.record.to_string(),
                    base::logfmt_escaped(started.error()));
      return false;
    }
    kafka.push_back(std::move(started).value());
  }
  return true;
}

struct serve_args {
  std::optional<std::string> config_file;
  std::vector<std::string> sets;
  std::optional<std::string> io_backend;
  std::vector<security::scram_user_spec> add_scram;   // --add-scram and --add-scram-file, in order
  bool help = false;
};

/// Whether the cluster, as this node's image has it, holds a credential of `spec`'s user and mechanism.
bool has_scram_credential(broker::broker& broker, const security::scram_user_spec& spec) {
  auto known = broker.security().describe_users({spec.user});
  return !known.empty() && std::any_of(known[0].credentials.begin(), known[0].credentials.end(),
                                       [&](const auto& c) { return c.mechanism == spec.credential.mechanism; });
}

/// One create-only write of `spec` (broker::scram_credential_alteration::create_only), waited for.
broker::result<void> add_scram_credential(broker::broker& broker, const security::scram_user_spec& spec) {
  std::promise<std::vector<broker::result<void>>> done;
  broker::scram_credential_alteration change;
  change.user = spec.user;
  change.mechanism = spec.credential.mechanism;
  change.credential = spec.credential;
  change.create_only = true;
  broker.security().alter_user_scram_credentials(
      {std::move(change)}, [&done](std::vector<broker::result<void>> r) { done.set_value(std::move(r)); });
  return done.get_future().get().at(0);
}

/// --add-scram: each user's credential is written unless the cluster already has a credential of
/// that user and mechanism (so a restart with the same flags changes nothing, and a password
/// changed since through AlterUserScramCredentials stays changed). The write is create-only, so
/// nodes that start together with the same flags add the user once: the first entry in the
/// metadata log applies, the others are refused where they apply and the user is left as the
/// first made it. Retries while no controller answers, a bounded number of times. Returns false
/// (logged) when a write failed.
bool add_scram_users(broker::broker& broker, const std::vector<security::scram_user_spec>& specs) {
  // 30 tries of up to 1 s: long enough for a quorum to elect its first leader at start-up.
  constexpr int attempts_max = 30;
  for (const auto& spec : specs) {
    const auto name = std::string(security::mechanism_name(spec.credential.mechanism));
    for (int attempt = 1;; ++attempt) {
      if (has_scram_credential(broker, spec)) {
        spdlog::info("msg=\"--add-scram: the user exists, left unchanged\" user={} mechanism={}", spec.user, name);
        break;
      }
      auto added = add_scram_credential(broker, spec);
      if (added.ok()) {
        spdlog::info("msg=\"--add-scram: user added\" user={} mechanism={} iterations={}", spec.user, name,
                     spec.credential.iterations);
        break;
      }
      if (has_scram_credential(broker, spec)) {   // refused where it applied: another node's came first
        spdlog::info("msg=\"--add-scram: the user exists, left unchanged\" user={} mechanism={} "
                     "reason=\"another node added it first\"", spec.user, name);
        break;
      }
      const auto& e = added.error();
      const bool retriable = e.code == broker::errc::not_controller || e.code == broker::errc::request_timed_out;
      if (!retriable || attempt == attempts_max) {
        spdlog::error("msg=\"--add-scram failed\" user={} mechanism={} error=\"{}\"", spec.user, name,
                      base::logfmt_escaped(e.message));
        return false;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));   // start-up only: waiting for a controller
    }
  }
  return true;
}

/// --add-scram-file PATH: the --add-scram entries of PATH, one a line (blank lines and lines
/// starting with # skipped), appended to `out`. Refused, with a line on stderr naming the file,
/// when PATH cannot be read, is readable or writable by group or others (it holds passwords; as
/// ssh refuses an open private key), or has a bad entry (named by its line number).
bool read_add_scram_file(const std::string& path, std::vector<security::scram_user_spec>& out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    std::cerr << "serve: --add-scram-file " << path << ": " << std::strerror(errno) << "\n";
    return false;
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    std::cerr << "serve: --add-scram-file " << path << " holds passwords but is open to group or others (mode "
              << std::oct << (st.st_mode & 07777) << std::dec << "): chmod 600 " << path << "\n";
    return false;
  }
  std::ifstream in(path);
  if (!in) {
    std::cerr << "serve: --add-scram-file " << path << ": " << std::strerror(errno) << "\n";
    return false;
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t\r");
    auto spec = security::parse_add_scram(line.substr(first, last - first + 1));
    if (!spec.ok()) {
      std::cerr << "serve: --add-scram-file " << path << " line " << number << ": " << spec.error().message << "\n";
      return false;
    }
    out.push_back(std::move(spec).value());
  }
  return true;
}

std::optional<serve_args> parse(int argc, char** argv) {
  serve_args out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string& name) -> std::optional<std::string> {
      if (a.rfind(name + "=", 0) == 0) return a.substr(name.size() + 1);
      if (a == name && i + 1 < argc) return std::string(argv[++i]);
      return std::nullopt;
    };
    if (a == "--help" || a == "-h") {
      out.help = true;
    } else if (a.rfind("--config", 0) == 0) {
      out.config_file = value("--config");
      if (!out.config_file) return std::nullopt;
    } else if (a.rfind("--set", 0) == 0) {
      auto v = value("--set");
      if (!v) return std::nullopt;
      out.sets.push_back(*v);
    } else if (a.rfind("--add-scram-file", 0) == 0) {
      auto v = value("--add-scram-file");
      if (!v || !read_add_scram_file(*v, out.add_scram)) return std::nullopt;
    } else if (a.rfind("--add-scram", 0) == 0) {
      auto v = value("--add-scram");
      if (!v) return std::nullopt;
      auto spec = security::parse_add_scram(*v);
      if (!spec.ok()) {
        std::cerr << "serve: " << spec.error().message << "\n";
        return std::nullopt;
      }
      out.add_scram.push_back(std::move(spec).value());
    } else if (a.rfind("--io-backend", 0) == 0) {
      out.io_backend = value("--io-backend");
      if (!out.io_backend) return std::nullopt;
    } else {
      std::cerr << "serve: unknown argument \"" << a << "\" (see ringlog serve --help)\n";
      return std::nullopt;
    }
  }
  return out;
}

/// Every key of `c` with its value and built-in default, as --help writes them: the broker shows
/// the Kafka ones among them in DescribeConfigs (broker_config::static_config_values).
std::map<std::string, broker::static_config_value> static_config_values_of(const config::server_config& c) {
  std::map<std::string, broker::static_config_value> out;
  for (const auto& key : config::describe_keys()) {
    out[key.name] = broker::static_config_value{config::key_value(c, key.name), key.default_value};
  }
  return out;
}

broker::broker_config to_broker_config(const config::server_config& c) {
  broker::broker_config b;
  b.node_id = c.node_id;
  b.process_role_broker = c.process_role_broker;
  b.cluster_id = c.cluster_id;
  b.log_dir = c.log_dir;
  b.num_partitions = c.num_partitions;
  b.default_replication_factor = c.default_replication_factor;
  b.auto_create_topics_enable = c.auto_create_topics_enable;
  b.authorizer_enabled = !c.authorizer_class_name.empty();
  // super.users was checked when the config loaded (each entry TYPE:NAME).
  if (auto su = security::parse_super_users(c.super_users); su.ok()) b.super_users = std::move(su).value();
  b.allow_everyone_if_no_acl_found = c.allow_everyone_if_no_acl_found;
  static std::atomic<bool> warned{false};   // the config is converted twice at start: one line
  if (b.authorizer_enabled && b.super_users.empty() && !warned.exchange(true)) {
    // A new user's lock-out: creating the first ACL needs ALTER on the cluster, which only an ACL
    // (or super.users) grants.
    spdlog::warn("msg=\"an authorizer without super.users: creating an ACL needs ALTER on the cluster, which no "
                 "principal holds until an ACL grants it; set super.users=User:<admin> (and restart) to administer "
                 "ACLs\" authorizer.class.name={}",
                 c.authorizer_class_name);
  }
  static std::atomic<bool> warned_open_http{false};
  const bool sasl_kafka = std::any_of(c.listeners.begin(), c.listeners.end(),
                                      [](const config::listener_record& l) { return l.uses_sasl(); });
  if (sasl_kafka && c.http_authentication_method == "NONE" && !warned_open_http.exchange(true)) {
    // The SASL example of docs/security.md left REST, user and ACL management with it, open to
    // anyone reaching http:// (session 32's new user).
    spdlog::warn("msg=\"Kafka clients log in with SASL but the HTTP listener asks no credentials: anyone who "
                 "reaches it may produce, consume and (without an authorizer) manage users and ACLs; set "
                 "http.authentication.method=BASIC (docs/security.md)\"");
  }
  b.message_max_bytes = c.message_max_bytes;
  b.log_segment_bytes = c.log_segment_bytes;
  b.log_roll_ms = c.log_roll_ms;
  b.log_retention_ms = c.log_retention_ms;
  b.log_retention_bytes = c.log_retention_bytes;
  b.log_retention_check_interval_ms = c.log_retention_check_interval_ms;
  b.log_index_interval_bytes = c.log_index_interval_bytes;
  b.log_flush_policy = c.log_flush_policy;
  b.log_direct_io = c.log_direct_io;
  b.log_cleaner_enable = c.log_cleaner_enable;
  b.log_cleaner_dedupe_buffer_size = c.log_cleaner_dedupe_buffer_size;
  b.log_cleaner_io_max_bytes_per_second = c.log_cleaner_io_max_bytes_per_second;
  b.log_cleaner_backoff_ms = c.log_cleaner_backoff_ms;
  b.log_cleanup_policy = c.log_cleanup_policy;
  b.compression_type = c.compression_type;
  b.compression_gzip_level = c.compression_gzip_level;
  b.compression_lz4_level = c.compression_lz4_level;
  b.compression_zstd_level = c.compression_zstd_level;
  b.log_cleaner_min_cleanable_ratio = c.log_cleaner_min_cleanable_ratio;
  b.log_cleaner_delete_retention_ms = c.log_cleaner_delete_retention_ms;
  b.log_cleaner_min_compaction_lag_ms = c.log_cleaner_min_compaction_lag_ms;
  b.log_cleaner_max_compaction_lag_ms = c.log_cleaner_max_compaction_lag_ms;
  b.min_insync_replicas = c.min_insync_replicas;
  b.produce_records_max = c.produce_records_max;
  b.fetch_wait_max_ms = c.fetch_wait_max_ms;
  b.fetch_waiters_per_partition_max = c.fetch_waiters_per_partition_max;
  b.offsets_topic_num_partitions = c.offsets_topic_num_partitions;
  b.transaction_state_log_num_partitions = c.transaction_state_log_num_partitions;
  b.transaction_max_timeout_ms = c.transaction_max_timeout_ms;
  b.transactional_id_expiration_ms = c.transactional_id_expiration_ms;
  b.transaction_abort_timed_out_transaction_cleanup_interval_ms =
      c.transaction_abort_timed_out_transaction_cleanup_interval_ms;
  b.group_expiry_interval_ms = c.group_expiry_interval_ms;
  b.delay_max_ms = c.delay_max_ms;
  b.max_delivery_attempts = c.max_delivery_attempts;
  b.retry_backoff_ms = c.retry_backoff_ms;
  b.retry_backoff_multiplier = c.retry_backoff_multiplier;
  b.retry_backoff_max_ms = c.retry_backoff_max_ms;
  b.retry_topic_template = c.retry_topic_template;
  b.dead_letter_topic_template = c.dead_letter_topic_template;
  b.group_initial_rebalance_delay_ms = c.group_initial_rebalance_delay_ms;
  b.offsets_retention_minutes = c.offsets_retention_minutes;
  b.offsets_retention_check_interval_ms = c.offsets_retention_check_interval_ms;
  b.controller_quorum_election_timeout_ms = c.controller_quorum_election_timeout_ms;
  b.controller_quorum_fetch_timeout_ms = c.controller_quorum_fetch_timeout_ms;
  b.controller_quorum_election_backoff_max_ms = c.controller_quorum_election_backoff_max_ms;
  b.broker_heartbeat_interval_ms = c.broker_heartbeat_interval_ms;
  b.broker_session_timeout_ms = c.broker_session_timeout_ms;
  b.metadata_catch_up_timeout_ms = c.initial_broker_registration_timeout_ms;
  b.broker_rack = c.broker_rack;
  b.replica_lag_time_max_ms = c.replica_lag_time_max_ms;
  b.producer_id_expiration_ms = c.producer_id_expiration_ms;
  b.replica_fetch_wait_max_ms = c.replica_fetch_wait_max_ms;
  b.replica_fetch_max_bytes = c.replica_fetch_max_bytes;
  b.replica_fetch_backoff_ms = c.replica_fetch_backoff_ms;
  b.leader_replication_throttled_rate = c.leader_replication_throttled_rate;
  b.follower_replication_throttled_rate = c.follower_replication_throttled_rate;
  b.partition_autobalancer_mode = c.partition_autobalancer_mode;
  b.partition_autobalancer_node_availability_timeout_ms = c.partition_autobalancer_node_availability_timeout_ms;
  b.partition_autobalancer_tick_interval_ms = c.partition_autobalancer_tick_interval_ms;
  b.unclean_leader_election_enable = c.unclean_leader_election_enable;
  b.auto_leader_rebalance_enable = c.auto_leader_rebalance_enable;
  b.leader_imbalance_check_interval_seconds = c.leader_imbalance_check_interval_seconds;
  b.leader_imbalance_per_broker_percentage = c.leader_imbalance_per_broker_percentage;
  b.quota_window = security::quota_window_config{c.quota_window_num, int64_t{c.quota_window_size_seconds} * 1000};
  b.static_config_values = static_config_values_of(c);
  return b;
}

/// How the process's open files are shared: connections, partitions (each partition's share is
/// 8 files: the active segment's .log, O_DIRECT .log, .index and .timeindex, a snapshot or
/// checkpoint being written) and sealed segments (one open .log each, storage/
/// segment_file_budget.h): sealed_segments_max is what the partitions' active files at
/// broker.partitions.max leave (at least 64).
struct open_file_budget {
  int64_t limit = 0;
  int64_t connections_max = 0;
  int64_t kafka_connections_max = 0;   // max.connections (kafka_connections_max)
  int64_t partitions_max = 0;
  int64_t sealed_segments_max = 0;
};

open_file_budget plan_open_files(const config::server_config& cfg) {
  // Kafka's docs tell operators to raise the open-file limit; do it for them up to the hard limit.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  constexpr int64_t reserved_files = 128;   // shards' rings and eventfds, logs, the metadata log
  constexpr int64_t files_per_partition = 8;
  open_file_budget b;
  b.limit = rl.rlim_cur == RLIM_INFINITY ? 1'000'000 : static_cast<int64_t>(rl.rlim_cur);
  b.connections_max = cfg.http_connections_max > 0 ? cfg.http_connections_max
                                                   : std::clamp<int64_t>(b.limit / 4, 16, 10000);
  b.kafka_connections_max = kafka_connections_max(cfg);
  const int64_t files_left = b.limit - b.connections_max - b.kafka_connections_max - reserved_files;
  b.partitions_max = cfg.broker_partitions_max > 0 ? cfg.broker_partitions_max
                                                   : std::max<int64_t>(1, files_left / files_per_partition);
  constexpr int64_t active_files_per_partition = 5;
  b.sealed_segments_max = std::max<int64_t>(64, files_left - b.partitions_max * active_files_per_partition);
  return b;
}

/// The names a plaintext HTTP request's Host may carry (gateway::host_permitted; IP addresses and
/// localhost need none): http.allowed.hosts, this machine's host name, and every listener's and
/// advertised listener's host (a broker reached by the name it advertises).
std::vector<std::string> allowed_http_hosts(const config::server_config& cfg) {
  std::vector<std::string> names = comma_separated(cfg.http_allowed_hosts);
  std::array<char, 256> own{};
  if (gethostname(own.data(), own.size() - 1) == 0 && own[0] != '\0') names.emplace_back(own.data());
  for (const auto* records : {&cfg.listeners, &cfg.advertised_listeners}) {
    for (const auto& r : *records) names.push_back(r.host);
  }
  return names;
}

/// The start-up line of the open-file budget (plan_open_files).
void log_open_file_budget(const open_file_budget& budget);
void warn_segment_budget(const std::string& partition_dir, int64_t sealed_segments_max);

/// Logs the open-file budget and makes the sealed segments' one, which `deps` hands to every log.
std::unique_ptr<storage::segment_file_budget> start_segment_budget(const open_file_budget& budget,
                                                                   broker::broker_dependencies& deps) {
  log_open_file_budget(budget);
  const int64_t max = budget.sealed_segments_max;
  auto made = std::make_unique<storage::segment_file_budget>(
      max, [max](const std::string& dir) { warn_segment_budget(dir, max); });
  deps.segment_budget = made.get();
  return made;
}

void log_open_file_budget(const open_file_budget& budget) {
  spdlog::info("msg=\"open-file budget\" limit={} http.connections.max={} max.connections={} broker.partitions.max={} "
               "sealed.segments.max={}",
               budget.limit, budget.connections_max, budget.kafka_connections_max, budget.partitions_max,
               budget.sealed_segments_max);
}

/// The segment file budget's refusal line (at most one a minute, storage/segment_file_budget.h):
/// a partition did not roll a new segment.
void warn_segment_budget(const std::string& partition_dir, int64_t sealed_segments_max) {
  spdlog::warn("msg=\"segment not rolled: the broker's sealed segments hold their open-file budget; a roll for "
               "segment.ms waits, a produce that needs a new segment is refused (retriable) until retention or "
               "deletion gives room back; raise the open-file limit (ulimit -n) for more\" partition_dir=\"{}\" "
               "sealed.segments.max={}",
               base::logfmt_escaped(partition_dir), sealed_segments_max);
}

/// "https://host:port" of the https listener `https` serves, or "" when there is none.
std::string https_listener_text(const bound_listeners& bound, const gateway::tls_front* https) {
  if (https == nullptr || bound.https_record == nullptr) return {};
  return "https://" + bound.https_record->host + ":" + std::to_string(https->port());
}

/// The "serving" line, once every front end listens: the plaintext HTTP listener (`http_port`, -1
/// when there is none), the https one (`https`: "https://host:port", empty when there is none; an
/// https-only node listed nothing before session 32), the Kafka listeners (`kafka`, their ports as
/// bound: a Kafka-only broker listed nothing before session 37) and the cluster listener (-1: none).
void log_serving(const config::server_config& cfg, int http_port, const std::string& https,
                 const std::vector<bound_kafka_listener>& kafka, int cluster_port, int32_t controller_id) {
  std::string listeners;
  if (http_port >= 0) listeners = "http://" + cfg.listener_host + ":" + std::to_string(http_port);
  if (!https.empty()) listeners += (listeners.empty() ? "" : ",") + https;
  for (const auto& l : kafka) {
    config::listener_record as_bound = l.record;
    if (l.bound_port >= 0) as_bound.port = l.bound_port;
    std::string text = as_bound.to_string();
    // As the "serving kafka" line writes the PLAINTEXT listener: kafka://, as users configure it.
    if (l.record.name == "PLAINTEXT") text = "kafka" + text.substr(text.find("://"));
    listeners += (listeners.empty() ? "" : ",") + text;
  }
  if (cluster_port >= 0) {
    listeners += (listeners.empty() ? "" : ",") + std::string("cluster://") + cfg.cluster_listener_host + ":" +
                 std::to_string(cluster_port);
  }
  spdlog::info("msg=\"serving\" listeners={} cluster.id={} node.id={} controller={}", listeners, cfg.cluster_id,
               cfg.node_id, controller_id);
  if (http_port < 0 && https.empty()) {
    // Kafka-style: listeners without http:// or https:// (Kafka and Redpanda run without an HTTP proxy).
    spdlog::info("msg=\"no http:// or https:// listener: the REST API, WebSocket, console and /metrics are off; "
                 "Kafka clients and the cluster listener serve as usual, and peers serve this node's groups to "
                 "Kafka clients only\"");
  }
}

/// The http:// listener's options from the config: where it listens and its bounds.
void set_http_listener(gateway::server_options& options, const config::server_config& cfg, const open_file_budget& budget,
                       const bound_listeners& bound) {
  options.host = cfg.listener_host;
  options.port = static_cast<uint16_t>(std::max(cfg.listener_port, 0));   // -1: none (options.listen false)
  options.body_bytes_max = static_cast<uint64_t>(cfg.http_request_body_max_bytes);
  options.header_bytes_max = static_cast<uint32_t>(cfg.http_request_header_max_bytes);
  options.idle_timeout_ms = cfg.http_idle_timeout_ms;
  options.header_timeout_ms = cfg.http_request_header_timeout_ms;
  options.fetch_response_bytes_max = cfg.fetch_response_bytes_max;
  options.drain_timeout_ms = cfg.shutdown_drain_timeout_ms;
  options.connections_max = budget.connections_max;
  options.listen_fd = bound.http_fd;
  options.connection_limits = bound.limits;
  options.socket_buffers = socket_buffers_of(cfg);
  options.listen = bound.http_record != nullptr;
  options.peer_tls_client = bound.peer_https_client;
}

/// One warning when `log_dir` already exists and its group or others may read or enter it: the
/// directory holds the forwarding secret (in __cluster_metadata) and the SCRAM credentials.
/// PostgreSQL refuses such a data directory; a warning is enough here, since serve's umask keeps
/// everything it creates below owner-only (new directories 0700, files 0600).
void warn_if_log_dir_open(const std::string& log_dir) {
  struct stat st {};
  if (::stat(log_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;   // created below, 0700
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) == 0) return;
  spdlog::warn("msg=\"log.dirs is open to group or others (mode {:04o}): any local user may read the forwarding "
               "secret in __cluster_metadata and the SCRAM credentials; restrict it with: chmod 700 {}\" "
               "log.dirs=\"{}\"",
               st.st_mode & 07777, base::logfmt_escaped(log_dir), base::logfmt_escaped(log_dir));
}

/// process.roles (KIP-631): broker,controller (combined mode, the default) is a voter of the
/// metadata quorum and a broker; broker is a broker that follows the metadata log as a raft
/// observer (KIP-595), so brokers join a running cluster without touching
/// controller.quorum.voters; controller is a dedicated controller: a voter (and, when it leads,
/// the active controller) that never registers as a broker, hosts no partitions and serves
/// only metadata over HTTP (config validation refused a kafka:// listener for it). One line for
/// the two single roles.
void log_process_roles(const config::server_config& cfg) {
  if (!cfg.process_role_controller) {
    spdlog::info("msg=\"broker-only node: an observer of the metadata quorum, not a voter\" node.id={} "
                 "controller.quorum.voters={}",
                 cfg.node_id, cfg.controller_quorum_voters.size());
  } else if (!cfg.process_role_broker) {
    spdlog::info("msg=\"dedicated controller: a voter of the metadata quorum, never a broker (no partitions, no "
                 "records)\" node.id={} controller.quorum.voters={}",
                 cfg.node_id, cfg.controller_quorum_voters.size());
  }
}

/// Creates `log_dir` if needed and takes an exclusive flock(2) on `log_dir/.lock`, kept open (and
/// so held) for the life of the process; the kernel drops it when the process dies, SIGKILL
/// included. False, after logging why, when another process holds it or the directory is unusable.
bool lock_log_dir(const std::string& log_dir) {
  warn_if_log_dir_open(log_dir);
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec) {
    spdlog::error("msg=\"cannot create log.dirs\" log.dirs=\"{}\" error=\"{}\"", base::logfmt_escaped(log_dir), ec.message());
    return false;
  }
  const std::string path = log_dir + "/.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    spdlog::error("msg=\"cannot open the log directory lock\" path=\"{}\" error=\"{}\"", path, std::strerror(errno));
    return false;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      spdlog::error("msg=\"log.dirs is in use by another ringlog process (it holds {}); stop it or choose another "
                    "directory with --set log.dirs=...\" log.dirs=\"{}\"",
                    path, log_dir);
    } else {
      spdlog::error("msg=\"cannot lock the log directory\" path=\"{}\" error=\"{}\"", path, std::strerror(err));
    }
    return false;
  }
  return true;   // fd stays open on purpose: closing it would release the lock
}

/// The broker's lines for an operator (broker_dependencies::log): info or error, one each.
void log_broker_event(bool info, const std::string& message) {
  if (info) {
    spdlog::info("msg=\"{}\"", base::logfmt_escaped(message));
  } else {
    spdlog::error("msg=\"{}\"", base::logfmt_escaped(message));
  }
}

/// The log directory failed (a write, fdatasync, segment roll or checkpoint in log.dirs): one
/// error line naming the directory, the operation and the error, then the process halts with
/// exit_code_log_dir_failure - no graceful shutdown, which would flush and checkpoint through
/// a page cache it cannot trust (style.md "Errors"; Kafka's Exit.halt in ReplicaManager's
/// handleLogDirFailure). The other nodes' probes find the cluster listener refused and fence
/// this broker at once, so its leaderships move to the in-sync replicas; after a restart,
/// recovery cuts whatever the failed write left (docs/configuration.md "Disk failures").
[[noreturn]] void halt_on_log_dir_failure(const storage::log_dir_failure& failure) {
  spdlog::error("msg=\"log directory failed: halting the broker, its partitions move to the in-sync replicas; free "
                "space or check the disk, then restart this node\" log.dirs=\"{}\" operation=\"{}\" error=\"{}\" "
                "exit_code={}",
                base::logfmt_escaped(failure.log_dir), failure.operation, base::logfmt_escaped(failure.error),
                exit_code_log_dir_failure);
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  std::_Exit(exit_code_log_dir_failure);
}

/// Blocks until SIGTERM or SIGINT (blocked in every thread, taken here with sigwait).
int wait_for_stop_signal(const sigset_t& signals) {
  int sig = 0;
  sigwait(&signals, &sig);
  return sig;
}

}  // namespace

int serve_main(int argc, char** argv) {
  auto args = parse(argc, argv);
  if (!args) return 2;
  if (args->help) {
    print_usage(std::cout);
    return 0;
  }
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z level=%l thread=%t %v");
  // Owner-only from here on: log.dirs holds the forwarding secret (__cluster_metadata, which lets
  // anyone who reads it sign forwarded calls) and the SCRAM credentials, so every directory serve
  // creates is 0700 and every file 0600, whatever the caller's umask. Set before anything exists.
  ::umask(0077);

  // Settings: defaults <- file <- --set, in that order.
  config::properties values;
  if (args->config_file) {
    std::ifstream in(*args->config_file);
    if (!in) {
      spdlog::error("msg=\"cannot read config file\" path=\"{}\" error=\"{}\"", base::logfmt_escaped(*args->config_file),
                    std::strerror(errno));
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto file_values = config::parse_properties(text.str(), *args->config_file);
    if (!file_values.ok()) {
      spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped(file_values.error().message));
      return 2;
    }
    values = std::move(file_values).value();
  }
  for (const auto& s : args->sets) {
    auto kv = config::parse_assignment(s);
    if (!kv.ok()) {
      spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped(kv.error().message));
      return 2;
    }
    values[kv->first] = kv->second;
  }
  if (args->io_backend) values["io.backend"] = *args->io_backend;
  auto settings = config::load_server_config(values);
  if (!settings.ok()) {
    spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped(settings.error().message));
    return 2;
  }
  const config::server_config& cfg = settings.value();
  // The retry defaults together (retry.backoff.max.ms against retry.backoff.ms, the topic name
  // templates' rules): a consumer instance that sets none uses these, so they must be valid.
  if (auto retry = delay::validate(broker::retry_defaults_of(to_broker_config(cfg))); !retry.ok()) {
    spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped(retry.error().message));
    return 2;
  }
  gateway::server_options options;   // issue 29: who HTTP callers are, and the JWKS, checked first
  std::shared_ptr<jwks_refresher> jwks;   // started with the TLS reloader, stopped on the way out
  if (auto auth = configure_http_authentication(cfg, options, jwks); !auth.ok()) {
    spdlog::error("msg=\"bad config\" error=\"{}\"", base::logfmt_escaped(auth.error()));
    return 2;
  }
  log_process_roles(cfg);

  keep_large_buffers_mapped();
  // Signals go to sigwait below, never to a shard thread: block them before threads start.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);   // re-reads TLS certificates (tls_reloader), does not stop
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto backend = io::parse_backend_kind(cfg.io_backend);
  if (!backend.ok()) {
    spdlog::error("msg=\"bad config\" key=io.backend error=\"{}\"", base::logfmt_escaped(backend.error().message));
    return 2;
  }
  // The listeners first: a port in use stops the start before anything exists on disk.
  tls_reloader reloader(cfg.ssl_reload_check_interval_ms);
  bound_listeners bound;
  if (auto code = bind_listeners(cfg, reloader, bound)) return *code;
  for (auto& l : bound.kafka) l.oauthbearer = options.authentication.jwt;
  // The cluster listener (Kafka's wire protocol between nodes), bound before anything is on disk.
  std::map<int32_t, rpc::peer_address> voters;
  for (const auto& v : cfg.controller_quorum_voters) {
    voters[v.node_id] = rpc::peer_address{v.host, static_cast<uint16_t>(v.port)};
  }
  // This node's voter address must be its own cluster listener (as advertised), and no two
  // voters may share an address: either would send raft messages to the wrong node.
  for (const auto& [id, address] : voters) {
    for (const auto& [other, other_address] : voters) {
      if (other > id && other_address.host == address.host && other_address.port == address.port) {
        spdlog::error("msg=\"bad config\" key=controller.quorum.voters error=\"voters {} and {} have the same address "
                      "{}:{}\"",
                      id, other, address.host, address.port);
        return 2;
      }
    }
  }
  if (auto own = voters.find(cfg.node_id); own != voters.end() && cfg.cluster_listener_port >= 0) {
    const std::string host = cfg.advertised_cluster_host.empty() ? cfg.cluster_listener_host : cfg.advertised_cluster_host;
    const int32_t port = cfg.advertised_cluster_port >= 0 ? cfg.advertised_cluster_port : cfg.cluster_listener_port;
    if (cfg.cluster_listener_port != 0 && (own->second.host != host || own->second.port != port)) {
      spdlog::error("msg=\"bad config\" key=controller.quorum.voters error=\"node.id {} is listed at {}:{}, but its "
                    "cluster listener is {}:{} (listeners / advertised.listeners)\"",
                    cfg.node_id, own->second.host, own->second.port, host, port);
      return 2;
    }
  }
  // One broker per log directory, as Kafka's `.lock` file enforces: a second broker on the same
  // directory would assign the same offsets to different records (seen: an acknowledged record
  // overwritten). The lock is held until the process exits.
  if (!lock_log_dir(cfg.log_dir)) return 1;
  size_t shards = cfg.num_shards > 0 ? static_cast<size_t>(cfg.num_shards)
                                     : std::max<size_t>(1, std::thread::hardware_concurrency());
  std::string note;
  auto runtime_result = runtime::shard_threads::create(shards, *backend, &note);
  if (!runtime_result.ok()) {
    spdlog::error("msg=\"cannot start the disk executor\" io.backend={} error=\"{}\"", cfg.io_backend,
                  base::logfmt_escaped(runtime_result.error().message));
    return 2;
  }
  auto runtime = std::move(runtime_result).value();
  if (!note.empty()) spdlog::warn("msg=\"io_uring unavailable, using the posix backend\" reason=\"{}\"", note);
  spdlog::info("msg=\"starting\" shards={} io.backend={} log.dirs=\"{}\"", shards, runtime->disk_backend_name(), cfg.log_dir);
  runtime->start();

  std::unique_ptr<rpc::cluster_transport> transport;
  // The broker once open, for the cluster listener's peer check; cleared before it is destroyed
  // (the transport stops first anyway).
  auto serving_broker = std::make_shared<std::atomic<broker::broker*>>(nullptr);
  if (cfg.cluster_listener_port >= 0) {
    auto created = rpc::cluster_transport::create(
        *runtime, 0, cfg.node_id,
        rpc::peer_address{cfg.cluster_listener_host, static_cast<uint16_t>(cfg.cluster_listener_port)}, voters,
        bound.cluster_tls, cluster_admission(cfg, bound.limits));
    if (!created.ok()) {
      spdlog::error("msg=\"cannot listen\" listeners=cluster://{}:{} error=\"{}\"", cfg.cluster_listener_host,
                    cfg.cluster_listener_port, base::logfmt_escaped(created.error().message));
      runtime->stop();
      return 1;
    }
    transport = std::move(created).value();
    configure_cluster_transport(cfg, bound, serving_broker, *transport);
  }

  auto fs = io::make_posix_file_system();
  base::system_clock clock;
  // Declared before the broker, so it outlives every log that reports to it.
  storage::log_dir_failure_channel log_dir_failures(cfg.log_dir, halt_on_log_dir_failure);
  broker::broker_dependencies deps{*fs, clock, *runtime, advertised_http_host(cfg),
                                   cfg.advertised_http_port >= 0 ? cfg.advertised_http_port : cfg.listener_port};
  if (voters.size() > 1 || transport) deps.controller_quorum_voters = voters;
  deps.log_dir_failures = &log_dir_failures;
  deps.log = log_broker_event;
  // Registered as the broker's endpoints by listener name (the first also as "kafka"), so
  // Metadata on any broker lists every broker's endpoint of the client's listener (for
  // NAME://HOST:0, the port the kernel chose: the sockets are bound above).
  deps.advertised_http_tls = bound.http_record == nullptr && bound.https_record != nullptr;
  for (const auto& l : bound.kafka) deps.advertised_kafka_listeners.push_back(kafka_advertised(cfg, l));
  if (!bound.kafka.empty()) {
    deps.advertised_kafka_host = deps.advertised_kafka_listeners.front().host;
    deps.advertised_kafka_port = deps.advertised_kafka_listeners.front().port;
  }
  if (transport) {
    deps.cluster_transport = transport.get();
    deps.start_cluster_transport = [t = transport.get()] { t->start(); };
    deps.advertised_cluster_host =
        cfg.advertised_cluster_host.empty() ? cfg.cluster_listener_host : cfg.advertised_cluster_host;
    deps.advertised_cluster_port = cfg.advertised_cluster_port >= 0 ? cfg.advertised_cluster_port
                                                                    : static_cast<int32_t>(transport->port());
  }
  const open_file_budget budget = plan_open_files(cfg);
  const auto segment_budget = start_segment_budget(budget, deps);   // outlives the broker's logs
  broker::broker_config broker_config = to_broker_config(cfg);
  broker_config.partitions_max = static_cast<int32_t>(budget.partitions_max);
  // Start-up may wait for the metadata quorum (the other voters may start later): a SIGTERM or
  // SIGINT meanwhile stops the process at once. Nothing is acknowledged before the listeners
  // serve, and everything on disk is crash-safe, so exiting here loses nothing.
  std::atomic<bool> starting{true};
  std::promise<int> stop_signal;
  std::thread signal_thread([&stop_signals, &starting, &stop_signal, &reloader] {
    int sig = wait_for_stop_signal(stop_signals);
    for (; sig == SIGHUP; sig = wait_for_stop_signal(stop_signals)) {
      spdlog::info("msg=\"SIGHUP: re-reading TLS certificates\"");
      reloader.reload_now();
    }
    if (starting.load()) {
      spdlog::warn("msg=\"stopped during start-up\" signal={}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      spdlog::shutdown();
      std::_Exit(sig == SIGTERM ? 143 : 130);
    }
    stop_signal.set_value(sig);
  });
  signal_thread.detach();
  if (cfg.controller_quorum_voters.size() > 1) {
    std::string others;
    for (const auto& v : cfg.controller_quorum_voters) {
      if (v.node_id != cfg.node_id) others += (others.empty() ? "" : ",") + std::to_string(v.node_id);
    }
    spdlog::info("msg=\"waiting for the metadata quorum: a majority of the voters must run; HTTP serves once this "
                 "node caught up with the metadata log\" other_voters={}",
                 others);
  }
  auto opened = broker::open_broker(broker_config, deps);
  if (!opened.ok()) {
    spdlog::error("msg=\"cannot open the broker\" error=\"{}\" code={}", base::logfmt_escaped(opened.error().message),
                  broker::to_string(opened.error().code));
    if (transport) transport->stop();
    runtime->stop();
    return 1;
  }
  std::unique_ptr<broker::broker> broker = std::move(opened).value();
  serving_broker->store(broker.get());

  set_http_listener(options, cfg, budget, bound);
  // Declared before the server and the Kafka listener, so it outlives both (they read it).
  kafka::fetch_counters kafka_counters;
  options.extra_metrics = [&kafka_counters, limits = bound.limits, pool = bound.request_pool] {
    return kafka_fetch_metrics(kafka_counters) + request_pool_metrics(*pool) + limits->metrics_text();
  };
  options.cors_allowed_origins = comma_separated(cfg.http_cors_allowed_origins);
  options.allowed_hosts = allowed_http_hosts(cfg);
  // HTTP Basic and the console login check the SCRAM users (issue 29): the password is derived
  // with the stored salt and iterations and compared with the stored key (no plaintext kept).
  use_scram_store(options.authentication, broker->security().scram_lookup());
  // Users before the listeners, so the first SASL or Basic client finds its user (a failure is
  // logged and the node serves on: users can be added over HTTP or the Kafka admin API).
  if (!args->add_scram.empty()) add_scram_users(*broker, args->add_scram);
  auto server_result = gateway::http_server::start(*broker, *runtime, options);
  if (!server_result.ok()) {
    spdlog::error("msg=\"cannot listen\" listeners=http://{}:{} error=\"{}\"", cfg.listener_host, cfg.listener_port,
                  server_result.error());
    std::promise<void> closed;
    broker->shutdown([&closed] { closed.set_value(); });
    closed.get_future().wait();
    if (transport) transport->stop();
    runtime->stop();
    return 1;
  }
  auto server = std::move(server_result).value();
  // https:// in front of the same server, and the Kafka client listeners (issue 15, 29) beside
  // it; none when `listeners` names none.
  std::unique_ptr<gateway::tls_front> https;
  std::vector<kafka_front_end> kafka;
  // The way out, from a failed start of the front ends or a stop signal (the reloader and the
  // JWKS refresher may not have started: stopping them is then a no-op).
  auto shut_down = [&] {
    broker->begin_shutdown();  // parked long-polls answer now, so the drain below is quick
    std::promise<void> drained;
    server->stop([&drained] { drained.set_value(); });
    drained.get_future().wait();
    reloader.stop();
    if (jwks) jwks->stop();
    if (https) https->stop();
    for (auto& k : kafka) k.listener->stop();
    std::promise<void> closed;
    broker->shutdown([&closed] { closed.set_value(); });
    closed.get_future().wait();
    if (transport) transport->stop();
    runtime->stop();
  };
  if (!start_front_ends(cfg, bound, *broker, *runtime, *server, kafka_counters, https, kafka)) {
    shut_down();
    return 1;
  }
  log_serving(cfg, options.listen ? server->port() : -1, https_listener_text(bound, https.get()), bound.kafka,
              transport ? static_cast<int>(transport->port()) : -1, broker->admin().controller_id());
  reloader.start();
  if (jwks) jwks->start();

  starting.store(false);
  int sig = stop_signal.get_future().get();
  spdlog::info("msg=\"stopping\" signal={}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  shut_down();
  kafka.clear();
  https.reset();
  server.reset();
  serving_broker->store(nullptr);
  broker.reset();
  spdlog::info("msg=\"stopped cleanly\"");
  return 0;
}

}  // namespace ringlog::app
