#include "ringlog/config/server_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <limits>
#include <optional>

#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"
#include "ringlog/base/text.h"

namespace ringlog::config {

namespace {

/// `text` as an address prints (inet_ntop: "10.0.0.1", "::1"; an IPv4-mapped IPv6 address as its
/// IPv4 one, as the acceptor names an IPv4 client of a dual-stack socket); nullopt when it is no
/// IP address. For max.connections.per.ip.overrides.
std::optional<std::string> printed_address(std::string_view text) {
  const std::string host(text);
  unsigned char raw[16];
  char out[INET6_ADDRSTRLEN];
  if (::inet_pton(AF_INET, host.c_str(), raw) == 1) return ::inet_ntop(AF_INET, raw, out, sizeof out);
  if (::inet_pton(AF_INET6, host.c_str(), raw) != 1) return std::nullopt;
  static constexpr unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(v4_mapped, v4_mapped + 12, raw)) return ::inet_ntop(AF_INET, raw + 12, out, sizeof out);
  return ::inet_ntop(AF_INET6, raw, out, sizeof out);
}

error invalid(std::string_view key, std::string_view value, std::string_view why) {
  return {errc::invalid_value, std::string(key) + "=" + std::string(value) + ": " + std::string(why)};
}

using setter = std::function<std::optional<std::string>(server_config&, std::string_view)>;

struct key_spec {
  std::string name;
  std::string doc;
  setter apply;                                         // nullopt: ok; else why the value is refused
  std::function<std::string(const server_config&)> show;   // current value, for --help defaults
};

template <typename Int>
key_spec int_key(std::string name, Int server_config::*field, int64_t min, int64_t max, std::string doc) {
  std::string range = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return key_spec{
      std::move(name), doc + " (" + range + ")",
      [field, min, max, range](server_config& c, std::string_view v) -> std::optional<std::string> {
        int64_t x = 0;
        auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || x < min || x > max) {
          return "must be " + range;
        }
        c.*field = static_cast<Int>(x);
        return std::nullopt;
      },
      [field](const server_config& c) { return std::to_string(c.*field); }};
}

/// socket.send.buffer.bytes, socket.receive.buffer.bytes: -1 (Kafka's "the OS default") or a
/// size in [socket_buffer_bytes_min, socket_buffer_bytes_max].
key_spec socket_buffer_key(std::string name, int32_t server_config::*field, std::string doc) {
  const std::string range = "-1 (the OS default) or an integer in [" + std::to_string(socket_buffer_bytes_min) +
                            ", " + std::to_string(socket_buffer_bytes_max) + "]";
  return key_spec{
      std::move(name), doc + " (" + range + ")",
      [field, range](server_config& c, std::string_view v) -> std::optional<std::string> {
        int64_t x = 0;
        auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        const bool in_range = x == -1 || (x >= socket_buffer_bytes_min && x <= socket_buffer_bytes_max);
        if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || !in_range) return "must be " + range;
        c.*field = static_cast<int32_t>(x);
        return std::nullopt;
      },
      [field](const server_config& c) { return std::to_string(c.*field); }};
}

key_spec bool_key(std::string name, bool server_config::*field, std::string doc) {
  return key_spec{std::move(name), doc + " (true or false)",
                  [field](server_config& c, std::string_view v) -> std::optional<std::string> {
                    if (v == "true") c.*field = true;
                    else if (v == "false") c.*field = false;
                    else return "must be true or false";
                    return std::nullopt;
                  },
                  [field](const server_config& c) { return std::string(c.*field ? "true" : "false"); }};
}

key_spec choice_key(std::string name, std::string server_config::*field, std::vector<std::string> choices, std::string doc) {
  std::string list;
  for (const auto& ch : choices) list += (list.empty() ? "" : " | ") + ch;
  return key_spec{std::move(name), doc + " (" + list + ")",
                  [field, choices, list](server_config& c, std::string_view v) -> std::optional<std::string> {
                    for (const auto& ch : choices) {
                      if (v == ch) {
                        c.*field = ch;
                        return std::nullopt;
                      }
                    }
                    return "must be one of " + list;
                  },
                  [field](const server_config& c) { return c.*field; }};
}

/// A number in [min, max] (a double), shown in its shortest form ("0.5", "2").
key_spec fraction_key(std::string name, double server_config::*field, double min, double max, std::string doc) {
  auto shortest = [](double x) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
    return std::string(buf, ec == std::errc() ? end : buf);
  };
  std::string range = "a number in [" + shortest(min) + ", " + shortest(max) + "]";
  return key_spec{std::move(name), doc + " (" + range + ")",
                  [field, min, max, range](server_config& c, std::string_view v) -> std::optional<std::string> {
                    double x = 0;
                    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || !(x >= min && x <= max)) {
                      return "must be " + range;
                    }
                    c.*field = x;
                    return std::nullopt;
                  },
                  [field, shortest](const server_config& c) { return shortest(c.*field); }};
}

/// A topic name template of the retries (issue 18). Only its size is checked here: the rules
/// (placeholders, characters) are delay::validate_topic_template's, which `serve` applies at start.
key_spec template_key(std::string name, std::string server_config::*field, std::string doc) {
  return key_spec{std::move(name),
                  doc + " (a template holding <topic> and <group> once each, otherwise ASCII letters, digits, "
                        "'.', '_' and '-'; at most 200 characters)",
                  [field](server_config& c, std::string_view v) -> std::optional<std::string> {
                    if (v.empty() || v.size() > 200) return "must be 1 to 200 characters";
                    c.*field = std::string(v);
                    return std::nullopt;
                  },
                  [field](const server_config& c) { return c.*field; }};
}

/// Voters in controller.quorum.voters: a commit waits for a majority of them, and Kafka's
/// guidance is 3 or 5; past 9 every commit pays for more round trips than it gains in safety.
constexpr size_t quorum_voters_max = 9;

struct host_port {
  std::string host;
  int32_t port = 0;
};

/// "HOST:PORT" with an IP address host (IPv6 in brackets) and a port in [0, 65535]; the error
/// says what is wrong.
/// HOST:PORT; `host_names` (advertised.listeners): HOST may also be a DNS name, which clients
/// resolve (Kafka advertises names); listeners bind addresses only (no name lookups at start).
base::result<host_port, std::string> parse_host_port(std::string_view rest, bool host_names = false) {
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::string("must look like HOST:PORT");
  std::string_view host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string_view port = rest.substr(colon + 1);
  int64_t p = -1;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 0 || p > 65535) {
    return std::string("port must be an integer in [0, 65535]");
  }
  // An IP address (listeners bind it as given; no name lookups at start).
  std::string host_text(host);
  in_addr v4{};
  in6_addr v6{};
  const bool dns_name = host_names && !host_text.empty() && host_text.size() <= 253 &&
                        std::all_of(host_text.begin(), host_text.end(), [](unsigned char ch) {
                          return std::isalnum(ch) || ch == '.' || ch == '-';
                        });
  if (!dns_name && inet_pton(AF_INET, host_text.c_str(), &v4) != 1 && inet_pton(AF_INET6, host_text.c_str(), &v6) != 1) {
    return "host '" + host_text + "' is not an IP address (use 127.0.0.1, 0.0.0.0 or ::)";
  }
  return host_port{host_text, static_cast<int32_t>(p)};
}

/// Kafka's security protocols (SecurityProtocol), the values of listener.security.protocol.map.
bool is_security_protocol(std::string_view p) {
  return p == "PLAINTEXT" || p == "SSL" || p == "SASL_PLAINTEXT" || p == "SASL_SSL";
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

/// "NAME://HOST:PORT,...": http:// and https:// (REST), cluster://, kafka:// (= PLAINTEXT://) and
/// Kafka listener names; each name at most once. The protocol of a name that is not a protocol
/// is left empty (resolve_listeners takes it from listener.security.protocol.map).
base::result<std::vector<listener_record>, std::string> parse_listeners(std::string_view v, bool host_names = false) {
  std::vector<listener_record> out;
  for (std::string_view item : base::split_list(v)) {
    size_t scheme_end = item.find("://");
    if (scheme_end == std::string_view::npos || scheme_end == 0) {
      return "each listener must look like NAME://HOST:PORT, got '" + std::string(item) + "'";
    }
    const std::string scheme = lower(item.substr(0, scheme_end));
    listener_record r;
    if (scheme == "http") {
      r.name = "HTTP";
      r.security_protocol = "PLAINTEXT";
    } else if (scheme == "https") {
      r.name = "HTTPS";
      r.security_protocol = "SSL";
    } else if (scheme == "kafka") {
      r.name = "PLAINTEXT";   // today's kafka:// is Kafka's PLAINTEXT listener
    } else {
      r.name = upper(scheme);
      for (char ch : r.name) {
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') {
          return "listener name '" + std::string(item.substr(0, scheme_end)) + "' may hold only letters, digits, '_' and '-'";
        }
      }
    }
    for (const auto& existing : out) {
      if (existing.name == r.name) return "listener name " + r.name + " appears twice (kafka:// is PLAINTEXT://)";
    }
    std::string_view rest = item.substr(scheme_end + 3);
    std::string address_text = rest.substr(0, 1) == ":" ? "0.0.0.0" + std::string(rest) : std::string(rest);
    auto address = parse_host_port(address_text, host_names);
    if (!address.ok()) return std::string(item.substr(0, scheme_end)) + "://" + std::string(rest) + ": " + address.error();
    r.host = address->host;
    r.port = address->port;
    out.push_back(std::move(r));
  }
  return out;
}

std::string show_listeners(const std::vector<listener_record>& records) {
  std::string out;
  for (const auto& r : records) out += (out.empty() ? "" : ",") + r.to_string();
  return out;
}

/// The ssl.* keys (Kafka's names, PEM only: KIP-651), each also settable per listener.
struct ssl_key {
  const char* name;
  const char* doc;
};
const std::vector<ssl_key>& ssl_keys() {
  static const std::vector<ssl_key> keys = {
      {"ssl.keystore.type", "format of the keystore: PEM only (KIP-651)"},
      {"ssl.keystore.location", "PEM file with this node's private key and certificate chain (leaf first) for TLS "
                                "listeners (SSL://, SASL_SSL://, https://) and the cluster listener; re-read when it changes"},
      {"ssl.keystore.key", "the private key inline (PEM; PKCS#1, PKCS#8, EC, plain or encrypted), with "
                           "ssl.keystore.certificate.chain, instead of ssl.keystore.location"},
      {"ssl.keystore.certificate.chain", "the certificate chain inline (PEM), with ssl.keystore.key"},
      {"ssl.key.password", "passphrase of an encrypted private key"},
      {"ssl.truststore.type", "format of the truststore: PEM only"},
      {"ssl.truststore.location", "PEM file of CA certificates that client certificates (and, on the cluster "
                                  "listener, peers' certificates) must chain to; re-read when it changes"},
      {"ssl.truststore.certificates", "the CA certificates inline (PEM), instead of ssl.truststore.location"},
      {"ssl.client.auth", "client certificates on TLS listeners: none, requested (checked when sent) or required "
                          "(a client without one is refused); the principal of a client with one is "
                          "ssl.principal.mapping.rules of its subject"},
      {"ssl.enabled.protocols", "TLS versions served: TLSv1.2 and/or TLSv1.3"},
      {"ssl.cipher.suites", "OpenSSL cipher names, comma-separated (TLS_* ones are TLS 1.3 suites); empty = OpenSSL's defaults"},
      {"ssl.principal.mapping.rules", "the principal of an mTLS client from its certificate subject (RFC 2253): "
                                      "RULE:pattern/replacement/[LU],...,DEFAULT (KIP-371); DEFAULT = User:<subject>"},
  };
  return keys;
}

const char* const ssl_defaults[][2] = {{"ssl.keystore.type", "PEM"},      {"ssl.truststore.type", "PEM"},
                                       {"ssl.client.auth", "none"},       {"ssl.enabled.protocols", "TLSv1.2,TLSv1.3"},
                                       {"ssl.principal.mapping.rules", "DEFAULT"}};

std::string ssl_default(std::string_view key) {
  for (const auto& d : ssl_defaults) {
    if (key == d[0]) return d[1];
  }
  return "";
}

/// Why an ssl.* value is refused (the checks that need no file); nullopt when it is fine.
std::optional<std::string> check_ssl_value(std::string_view key, std::string_view v) {
  if ((key == "ssl.keystore.type" || key == "ssl.truststore.type") && v != "PEM") {
    return "only PEM is supported (KIP-651: the key and certificates as PEM text)";
  }
  if (key == "ssl.client.auth" && v != "none" && v != "requested" && v != "required") {
    return "must be none, requested or required";
  }
  if (key == "ssl.enabled.protocols") {
    if (base::split_list(v).empty()) return "must name TLSv1.2 and/or TLSv1.3";
    for (std::string_view item : base::split_list(v)) {
      if (item != "TLSv1.2" && item != "TLSv1.3") {
        return "unknown or unsupported protocol '" + std::string(item) + "' (TLSv1.2, TLSv1.3)";
      }
    }
  }
  return std::nullopt;
}

key_spec ssl_key_spec(const ssl_key& k) {
  std::string name = k.name;
  return key_spec{name, std::string(k.doc) + " (per listener: listener.name.<name>." + name + ")",
                  [name](server_config& c, std::string_view v) -> std::optional<std::string> {
                    if (auto why = check_ssl_value(name, v)) return why;
                    c.ssl[name] = std::string(v);
                    return std::nullopt;
                  },
                  [name](const server_config& c) {
                    auto it = c.ssl.find(name);
                    if (it == c.ssl.end()) return ssl_default(name);
                    // Secrets are not printed back (errors and --help show key values).
                    if (name == "ssl.key.password" || name == "ssl.keystore.key") return std::string("[hidden]");
                    return it->second;
                  }};
}

/// super.users: principals separated by ';' (Kafka's rule), each TYPE:NAME.
std::optional<std::string> apply_super_users(server_config& c, std::string_view v) {
  size_t start = 0;
  while (start <= v.size()) {
    size_t end = v.find(';', start);
    if (end == std::string_view::npos) end = v.size();
    std::string_view item = v.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const size_t colon = item.find(':');
    if (!item.empty() && (colon == std::string_view::npos || colon == 0 || colon + 1 == item.size())) {
      return "each entry must be a principal TYPE:NAME (User:admin), got '" + std::string(item) + "'";
    }
    // "User:admin,User:ops" is one principal named "admin,User:ops": no super user at all,
    // silently (session 32's new user). A certificate's name may hold commas.
    if (item.find(",User:") != std::string_view::npos) {
      return "entries are separated by ';' (Kafka's rule), not ',': '" + std::string(item) + "'";
    }
    start = end + 1;
  }
  c.super_users = std::string(v);
  return std::nullopt;
}

/// Every ssl.* key, for key_table().
std::vector<key_spec> ssl_key_specs() {
  std::vector<key_spec> out;
  for (const auto& k : ssl_keys()) out.push_back(ssl_key_spec(k));
  return out;
}

/// Any text.
key_spec string_key(std::string name, std::string server_config::*field, std::string doc) {
  return key_spec{std::move(name), std::move(doc),
                  [field](server_config& c, std::string_view v) -> std::optional<std::string> {
                    c.*field = std::string(v);
                    return std::nullopt;
                  },
                  [field](const server_config& c) { return c.*field; }};
}

std::vector<key_spec> joined(std::vector<key_spec> first, std::vector<key_spec> second) {
  for (auto& k : second) first.push_back(std::move(k));
  return first;
}

/// The keys of issue 29's HTTP authentication and the JWT rules it shares with SASL OAUTHBEARER
/// (KIP-768 names), appended to key_table().
std::vector<key_spec> authentication_keys() {
  return {
      key_spec{"http.authentication.method",
               "how HTTP callers authenticate: NONE (every caller is User:ANONYMOUS), BASIC (users of the SCRAM "
               "store), BEARER (JWTs checked by the sasl.oauthbearer.* keys) or a list such as BASIC,BEARER",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 for (size_t start = 0; start <= v.size();) {
                   const size_t comma = std::min(v.find(',', start), v.size());
                   std::string word(v.substr(start, comma - start));
                   std::erase(word, ' ');
                   std::transform(word.begin(), word.end(), word.begin(), [](unsigned char ch) { return std::toupper(ch); });
                   if (word != "NONE" && word != "BASIC" && word != "BEARER") {
                     return "must be NONE, BASIC, BEARER or a comma-separated list of BASIC and BEARER, got '" + word + "'";
                   }
                   start = comma + 1;
                 }
                 c.http_authentication_method = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.http_authentication_method; }},
      bool_key("http.metrics.authentication", &server_config::http_metrics_authentication,
               "/metrics needs credentials like the REST routes (false: open, like /v1/health)"),
      int_key("http.session.max.age.ms", &server_config::http_session_max_age_ms, 60000, 604800000,
              "how long a console login (POST /v1/login) lasts, ms"),
      int_key("http.sessions.max", &server_config::http_sessions_max, 1, 1000000,
              "live console sessions at once; a login past it is refused (429)"),
      int_key("http.access.token.max.age.ms", &server_config::http_access_token_max_age_ms, 1000, 3600000,
              "how long a POST /v1/tokens access token (?access_token= for WebSocket and SSE) is good, ms"),
      key_spec{"http.cors.credentials.origins",
               "browser origins answered Access-Control-Allow-Credentials: true (scripts may send cookies and "
               "Authorization): a comma-separated list of scheme://host[:port], never *; empty = none",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.find('*') != std::string_view::npos) return "must list origins, not * (credentials go to named origins only)";
                 c.http_cors_credentials_origins = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.http_cors_credentials_origins; }},
      key_spec{"sasl.oauthbearer.jwks.endpoint.url",
               "the JWKS (RFC 7517) whose keys sign the JWTs of HTTP Bearer and SASL OAUTHBEARER: "
               "https://HOST[:PORT]/PATH (fetched at start, every sasl.oauthbearer.jwks.endpoint.refresh.ms and when a "
               "token names an unknown kid; the server's certificate must chain to the system's CAs or "
               "ssl.truststore.location's) or file:PATH (read at the same times); empty = no keys, and then "
               "SASL OAUTHBEARER and HTTP BEARER are refused at start",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.starts_with("http://")) {
                   return "http:// would take the signing keys over plaintext (anyone on the path could sign tokens); "
                          "use https:// or file:; got '" + std::string(v) + "'";
                 }
                 if (!v.empty() && !v.starts_with("file:") && !v.starts_with("https://")) {
                   return "must be an https:// or a file: URL; got '" + std::string(v) + "'";
                 }
                 c.sasl_oauthbearer_jwks_endpoint_url = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.sasl_oauthbearer_jwks_endpoint_url; }},
      int_key("sasl.oauthbearer.jwks.endpoint.refresh.ms", &server_config::sasl_oauthbearer_jwks_endpoint_refresh_ms,
              1000, 604800000,
              "the JWKS is fetched (or read) again this often, ms (KIP-768; at least 1 s: providers rotate keys "
              "in hours or days)"),
      int_key("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
              &server_config::sasl_oauthbearer_jwks_endpoint_retry_backoff_ms, 1, 3600000,
              "a failed JWKS refresh (the old keys stay) is retried after this many ms, doubling up to "
              "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"),
      string_key("sasl.oauthbearer.expected.issuer", &server_config::sasl_oauthbearer_expected_issuer,
                 "the iss a JWT must carry; empty = not checked"),
      string_key("sasl.oauthbearer.expected.audience", &server_config::sasl_oauthbearer_expected_audience,
                 "audiences a JWT's aud must name one of, comma-separated; empty = not checked"),
      key_spec{"sasl.oauthbearer.sub.claim.name", "the JWT claim that names the principal (User:<claim>)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.empty()) return "must name a claim";
                 c.sasl_oauthbearer_sub_claim_name = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.sasl_oauthbearer_sub_claim_name; }},
      int_key("sasl.oauthbearer.clock.skew.seconds", &server_config::sasl_oauthbearer_clock_skew_seconds, 0, 3600,
              "tolerance for a JWT's exp, nbf and iat, seconds"),
      int_key("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
              &server_config::sasl_oauthbearer_jwks_endpoint_retry_backoff_max_ms, 0, 3600000,
              "the JWKS is fetched again for a token naming an unknown kid at most once per this many ms; also the "
              "longest wait before retrying a failed refresh"),
  };
}

/// Connection limits (issue 31, Kafka's keys; runtime/connection_limits.h has the rules), the
/// handshake/login deadline and the Kafka listeners' request memory (runtime/request_memory_pool.h).
/// socket.send.buffer.bytes and socket.receive.buffer.bytes (Kafka's keys).
std::vector<key_spec> socket_buffer_keys() {
  return {
      socket_buffer_key("socket.send.buffer.bytes", &server_config::socket_send_buffer_bytes,
                        "SO_SNDBUF of every socket the http, https and Kafka listeners accept: how much of an answer the "
                        "kernel holds for a client that does not read (Linux doubles it); -1 = the OS default, which "
                        "grows to net.ipv4.tcp_wmem's maximum, bytes"),
      socket_buffer_key("socket.receive.buffer.bytes", &server_config::socket_receive_buffer_bytes,
                        "SO_RCVBUF of every socket the http, https and Kafka listeners accept (Linux doubles it); "
                        "-1 = the OS default, which grows to net.ipv4.tcp_rmem's maximum, bytes"),
  };
}

std::vector<key_spec> connection_limit_keys() {
  return {
      int_key("http.request.header.timeout.ms", &server_config::http_request_header_timeout_ms, 100, 3600000,
              "a request's line and headers must arrive within this long of its first byte, else 408 and a close, ms"),
      int_key("connection.authentication.timeout.ms", &server_config::connection_authentication_timeout_ms, 0,
              3'600'000,
              "on TLS and SASL listeners (Kafka, https, the TLS cluster listener) the TLS handshake and the SASL "
              "login must be done this long after the connection is accepted, else it is closed (a SASL one as a "
              "failed login); on the cluster listener the first complete request as well; 0 = no limit, ms"),
      int_key("connections.max.idle.ms", &server_config::connections_max_idle_ms, 0, 86'400'000,
              "a Kafka or cluster listener connection with no request read and no answer written for this long, "
              "and none with its handler (answers the client does not read count as none), is closed, so idle "
              "clients do not hold max.connections places (Kafka's default); 0 = never, ms"),
      int_key("max.connections", &server_config::max_connections, 0, 100'000'000,
              "open connections of every Kafka listener together (the cluster listener is not counted; http and https "
              "have http.connections.max); "
              "past it new connections are closed at once; also listener.name.<name>.max.connections per listener; "
              "0 = an eighth of the open-file limit, at least 16, at most 10000"),
      int_key("max.connections.per.ip", &server_config::max_connections_per_ip, 0, 100'000'000,
              "open connections from one client address, every listener; past it new ones are closed at once"),
      key_spec{"max.connections.per.ip.overrides",
               "per-address exceptions to max.connections.per.ip: host:count,host:count (0 refuses that address)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 std::map<std::string, int64_t> out;
                 for (std::string_view item : base::split_list(v)) {
                   const size_t colon = item.rfind(':');
                   int64_t count = -1;
                   const char* end = item.data() + item.size();
                   auto parsed = colon == std::string_view::npos
                                     ? std::from_chars_result{end, std::errc::invalid_argument}
                                     : std::from_chars(item.data() + colon + 1, end, count);
                   if (colon == 0 || parsed.ec != std::errc{} || parsed.ptr != end || count < 0) {
                     return "each item must be host:count with a count >= 0, got '" + std::string(item) + "'";
                   }
                   // Connections are counted by address (Kafka resolves names here; a name would
                   // silently never match): an IPv4 or IPv6 address, kept in the form peers print.
                   auto address = printed_address(item.substr(0, colon));
                   if (!address) {
                     return "each item's host must be an IPv4 or IPv6 address, got '" + std::string(item.substr(0, colon)) + "'";
                   }
                   out[*address] = count;
                 }
                 c.max_connections_per_ip_overrides = std::move(out);
                 return std::nullopt;
               },
               [](const server_config& c) {
                 std::string out;
                 for (const auto& [host, count] : c.max_connections_per_ip_overrides) {
                   out += (out.empty() ? "" : ",") + host + ":" + std::to_string(count);
                 }
                 return out;
               }},
      int_key("max.connection.creation.rate", &server_config::max_connection_creation_rate, 0, 100'000'000,
              "new connections per second of every Kafka listener together (http and https each have a bucket of "
              "this rate of their own); one over it is held "
              "unanswered for the delay the rate needs (at most 1 s), then closed; also "
              "listener.name.<name>.max.connection.creation.rate per listener"),
      int_key("quota.window.num", &server_config::quota_window_num, 1, 1000,
              "samples a client quota's rate is measured over (Kafka's; the window is this x "
              "quota.window.size.seconds; 1 is measured as 2)"),
      int_key("quota.window.size.seconds", &server_config::quota_window_size_seconds, 1, 3600,
              "span of one client quota sample, s (Kafka's)"),
      int_key("queued.max.request.bytes", &server_config::queued_max_request_bytes, 1048576, int64_t{1} << 40,
              "bytes of Kafka request frames being read or handled, every Kafka listener together: a frame that "
              "does not fit waits (its connection is not read) until answered requests give room back; a frame "
              "larger than this closes its connection. Kafka's -1 (unbounded) is not accepted"),
      int_key("kafka.request.body.timeout.ms", &server_config::kafka_request_body_timeout_ms, 0, 86'400'000,
              "a Kafka request frame's body must be read within this long of queued.max.request.bytes reserving "
              "its declared size, else the connection is closed and the room given back (a client that declares a "
              "large frame and sends nothing held it until connections.max.idle.ms); 0 = no limit but that, ms"),
  };
}

/// KIP-73's replication throttles (Kafka's names and default, Long.MAX_VALUE = unbounded; also
/// dynamic broker configs: broker/broker_configs.cc; the rule: replication/throttle.h).
std::vector<key_spec> replication_throttle_keys() {
  constexpr int64_t i64 = std::numeric_limits<int64_t>::max();
  return {
      int_key("leader.replication.throttled.rate", &server_config::leader_replication_throttled_rate, 0, i64,
              "bytes/s this broker, leading, sends to followers outside a partition's ISR (a reassignment's new "
              "replica, a follower catching up), all partitions together; in-sync followers are never held back; "
              "the default bounds nothing, 0 stops that traffic; dynamic"),
      int_key("follower.replication.throttled.rate", &server_config::follower_replication_throttled_rate, 0, i64,
              "bytes/s this broker fetches for partitions whose ISR it is not in, all together; the default "
              "bounds nothing, 0 stops that traffic; dynamic"),
  };
}

/// The partition autobalancer (issue 33; Redpanda's names, controller/autobalancer.h has the
/// rules; also dynamic broker configs: broker/broker_configs.cc). Bounds: base/constants.h.
std::vector<key_spec> autobalancer_keys() {
  return {
      choice_key("partition.autobalancer.mode", &server_config::partition_autobalancer_mode,
                 {"off", "node_add", "continuous"},
                 "off: nothing moves by itself (Kafka's behaviour; Redpanda's default is node_add); node_add: a "
                 "broker that joins holding no replica gets its share without a command; continuous: node_add, "
                 "plus a broker unavailable longer than partition.autobalancer.node.availability.timeout.ms has "
                 "its replicas moved to the others, and a rebalance starts every "
                 "partition.autobalancer.tick.interval.ms when it moves something; dynamic"),
      int_key("partition.autobalancer.node.availability.timeout.ms",
              &server_config::partition_autobalancer_node_availability_timeout_ms,
              constants::autobalancer_node_availability_timeout_ms_min,
              constants::autobalancer_node_availability_timeout_ms_max,
              "continuous mode: a broker fenced (or unregistered) longer than this has its replicas moved to "
              "the others, ms; dynamic"),
      int_key("partition.autobalancer.tick.interval.ms", &server_config::partition_autobalancer_tick_interval_ms,
              constants::autobalancer_tick_interval_ms_min, constants::autobalancer_tick_interval_ms_max,
              "continuous mode: how often the balance is checked, ms; dynamic"),
  };
}

/// The KRaft timing keys (KIP-595's controller.quorum.*, KIP-631's broker heartbeats and session,
/// the start-up bound), appended to key_table().
std::vector<key_spec> quorum_and_membership_keys() {
  return {
      int_key("controller.quorum.election.timeout.ms", &server_config::controller_quorum_election_timeout_ms, 10, 600000,
              "a voter that hears no leader this long starts an election (randomized up to twice this), ms"),
      int_key("controller.quorum.fetch.timeout.ms", &server_config::controller_quorum_fetch_timeout_ms, 10, 600000,
              "a follower without a fetch answer this long, or a leader without fetches from a majority, gives up "
              "the leader, ms"),
      int_key("controller.quorum.election.backoff.max.ms", &server_config::controller_quorum_election_backoff_max_ms, 1,
              600000, "longest random wait before retrying a failed election, ms"),
      int_key("broker.heartbeat.interval.ms", &server_config::broker_heartbeat_interval_ms, 10, 600000,
              "how often a broker heartbeats to the active controller, ms"),
      int_key("broker.session.timeout.ms", &server_config::broker_session_timeout_ms, 100, 3600000,
              "a broker without a heartbeat this long is fenced and its leaderships move, ms"),
      int_key("initial.broker.registration.timeout.ms", &server_config::initial_broker_registration_timeout_ms, 1000,
              86400000,
              "longest wait of each start-up step (a quorum leader to catch up with, the registration, the "
              "internal topics) before the node gives up and exits, ms"),
  };
}

/// The consumer group coordinator's timing keys (its sweeps, the first rebalance's wait, KIP-211's
/// offsets retention), appended to key_table().
std::vector<key_spec> consumer_group_keys() {
  return {
      int_key("group.expiry.interval.ms", &server_config::group_expiry_interval_ms, 100, 60000,
              "how often consumer sessions past their timeout are swept, ms"),
      int_key("group.initial.rebalance.delay.ms", &server_config::group_initial_rebalance_delay_ms, 0, 300000,
              "how long the first rebalance of an empty Kafka-client group waits for more members to join, ms"),
      // KIP-211 (Kafka's keys, defaults and lower bounds): group_coordinator::expire_offsets.
      int_key("offsets.retention.minutes", &server_config::offsets_retention_minutes, 1, 2147483647,
              "committed offsets of a group without members are deleted this long after the group became empty "
              "and after its last commit, minutes (a group with members keeps them; docs/configuration.md)"),
      int_key("offsets.retention.check.interval.ms", &server_config::offsets_retention_check_interval_ms, 1,
              365LL * 24 * 3600 * 1000,
              "how often each coordinator looks for committed offsets past offsets.retention.minutes, ms (at most "
              "every group.expiry.interval.ms)"),
  };
}

constexpr const char* advertised_listeners_help =
    "what other nodes and clients are told to connect to, same form and names as listeners; a listener not named "
    "here is advertised at its bound host and port, except a wildcard bind (0.0.0.0 or ::), which is advertised as "
    "127.0.0.1 with a warning (reachable from this machine only); 0.0.0.0 and :: are refused here; empty = listeners";

constexpr const char* allowed_hosts_help =
    "host names (beside IP addresses, localhost, this machine's host name and the listeners' and advertised "
    "listeners' hosts) a browser's request to a plaintext http:// listener without HTTP authentication may name in "
    "its Host header; others get 403 (DNS rebinding): a comma-separated list of names, or * (any)";

/// http.allowed.hosts: names only (letters, digits, '.', '-', '_'), commas, spaces or "*".
std::optional<std::string> set_allowed_hosts(server_config& c, std::string_view v) {
  for (char ch : v) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '_' || ch == ',' ||
          ch == ' ' || ch == '*')) {
      return "each entry must be a host name (no scheme, port or path) or *, got '" + std::string(v) + "'";
    }
  }
  c.http_allowed_hosts = std::string(v);
  return std::nullopt;
}

/// http.cors.allowed.origins: "*" or scheme://host[:port] entries, comma-separated, or empty.
std::optional<std::string> set_cors_allowed_origins(server_config& c, std::string_view v) {
  size_t start = v.find_first_not_of(' ') == std::string_view::npos ? v.size() + 1 : 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string_view::npos) comma = v.size();
    std::string_view item = v.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    size_t scheme = item.find("://");
    if (item != "*" && (scheme == std::string_view::npos || scheme == 0 || item.size() == scheme + 3 ||
                        item.find('/', scheme + 3) != std::string_view::npos)) {
      return "each origin must be * or scheme://host[:port] (no path), got '" + std::string(item) + "'";
    }
    start = comma + 1;
  }
  c.http_cors_allowed_origins = std::string(v);
  return std::nullopt;
}

std::string show_allowed_hosts(const server_config& c) { return c.http_allowed_hosts; }

const std::vector<key_spec>& key_table() {
  constexpr int64_t i32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t i64 = std::numeric_limits<int64_t>::max();
  static const std::vector<key_spec> table = joined({
      int_key("node.id", &server_config::node_id, 0, i32, "this broker's id"),
      key_spec{"cluster.id", "cluster id reported by /v3/clusters ([A-Za-z0-9._-], 1..64 chars)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.empty() || v.size() > 64) return "must be 1..64 characters";
                 for (char ch : v) {
                   if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') {
                     return "may contain only letters, digits, '.', '_' and '-'";
                   }
                 }
                 c.cluster_id = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.cluster_id; }},
      key_spec{"log.dirs", "data directory (one path; a comma-separated list is refused)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.empty()) return "must name a directory";
                 if (v.find(',') != std::string_view::npos) return "only one log directory is supported";
                 c.log_dir = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.log_dir; }},
      int_key("num.partitions", &server_config::num_partitions, 1, 10000, "partitions of auto-created and default topics"),
      int_key("default.replication.factor", &server_config::default_replication_factor, -1, 32767,
              "replicas of new topics; -1: 3 with >= 3 usable brokers, else their number (as DescribeConfigs shows it)"),
      bool_key("auto.create.topics.enable", &server_config::auto_create_topics_enable,
               "create a topic on first produce to it"),
      key_spec{"authorizer.class.name",
               "the authorizer: empty (none: every caller may do everything, the ACL APIs answer SECURITY_DISABLED) or "
               "org.apache.kafka.metadata.authorizer.StandardAuthorizer (ACLs in the metadata log; "
               "kafka.security.authorizer.AclAuthorizer is taken as the same, so ZooKeeper-era configs paste)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.empty() || v == "org.apache.kafka.metadata.authorizer.StandardAuthorizer" ||
                     v == "kafka.security.authorizer.AclAuthorizer") {
                   c.authorizer_class_name = std::string(v);
                   return std::nullopt;
                 }
                 return "must be empty or org.apache.kafka.metadata.authorizer.StandardAuthorizer, got '" +
                        std::string(v) + "'";
               },
               [](const server_config& c) { return c.authorizer_class_name; }},
      key_spec{"super.users",
               "principals allowed everything whatever the ACLs say, ';'-separated (User:admin;User:ops)",
               apply_super_users,
               [](const server_config& c) { return c.super_users; }},
      bool_key("allow.everyone.if.no.acl.found", &server_config::allow_everyone_if_no_acl_found,
               "with an authorizer: allow a resource no ACL names (Kafka's default false)"),
      int_key("message.max.bytes", &server_config::message_max_bytes, 1024, 64 * 1024 * 1024,
              "largest record batch, bytes (also the largest record over HTTP)"),
      int_key("log.segment.bytes", &server_config::log_segment_bytes, 1024, (int64_t{1} << 31) - 1, "segment size, bytes"),
      int_key("log.roll.ms", &server_config::log_roll_ms, 1, i64, "roll a segment this old, ms"),
      int_key("log.retention.ms", &server_config::log_retention_ms, -1, i64, "delete segments older than this, ms; -1 keeps all"),
      int_key("log.retention.bytes", &server_config::log_retention_bytes, -1, i64,
              "delete old segments past this size per partition; -1 keeps all"),
      int_key("log.retention.check.interval.ms", &server_config::log_retention_check_interval_ms, 1000, i64,
              "how often retention runs, first 30 s after start (it also rolls an idle segment past segment.ms), ms"),
      int_key("log.index.interval.bytes", &server_config::log_index_interval_bytes, 1, 64 * 1024 * 1024,
              "bytes between offset index entries"),
      choice_key("log.flush.policy", &server_config::log_flush_policy, {"fsync", "replication"},
                 "fsync before acknowledging, or rely on replication (Kafka's default)"),
      bool_key("log.cleaner.enable", &server_config::log_cleaner_enable,
               "run the log cleaner on topics with cleanup.policy=compact (each shard cleans its partitions)"),
      int_key("log.cleaner.dedupe.buffer.size", &server_config::log_cleaner_dedupe_buffer_size, 64 * 1024,
              int64_t{1} << 40, "memory of the cleaner's offset maps, bytes, shared out over the shards (32 bytes per key)"),
      int_key("log.cleaner.io.max.bytes.per.second", &server_config::log_cleaner_io_max_bytes_per_second, 1, i64,
              "bytes the cleaner of one shard reads per second at most, paced after each step of a pass"),
      int_key("log.cleaner.backoff.ms", &server_config::log_cleaner_backoff_ms, 100, i64,
              "how often each shard looks for a compacted partition to clean (and rolls an idle compacted "
              "active segment older than segment.ms or max.compaction.lag.ms), ms"),
      // The broker-level defaults of the compaction topic configs (Kafka's names and defaults):
      // a topic that does not set its own follows these.
      key_spec{"log.cleanup.policy",
               "default cleanup.policy of topics: delete, compact, or the list compact,delete",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 auto items = base::split_list(v);
                 if (items.empty()) return "must be delete, compact or compact,delete";
                 for (std::string_view item : items) {
                   if (item != "delete" && item != "compact") {
                     return "must be delete, compact or compact,delete (got the item '" + std::string(item) + "')";
                   }
                 }
                 c.log_cleanup_policy = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.log_cleanup_policy; }},
      // Kafka's broker compression.type (BrokerCompressionType): the codec batches are stored
      // with, for every topic that does not set its own.
      choice_key("compression.type", &server_config::compression_type,
                 {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"},
                 "default compression.type of topics: the codec stored batches are recompressed to, or producer "
                 "to keep each batch as its producer sent it"),
      // KIP-390: the level each codec compresses at, Kafka's bounds and defaults (the codec's
      // compression.h holds the same).
      int_key("compression.gzip.level", &server_config::compression_gzip_level, -1, 9,
              "default compression.gzip.level of topics: zlib's level, -1 its default (not 0)"),
      int_key("compression.lz4.level", &server_config::compression_lz4_level, 1, 17,
              "default compression.lz4.level of topics: 9 the fast compressor, the others LZ4 HC's levels"),
      int_key("compression.zstd.level", &server_config::compression_zstd_level, -131072, 22,
              "default compression.zstd.level of topics: zstd's level, negative ones its fast modes"),
      fraction_key("log.cleaner.min.cleanable.ratio", &server_config::log_cleaner_min_cleanable_ratio, 0.0, 1.0,
                   "default min.cleanable.dirty.ratio of topics: clean a compacted log once dirty bytes / all bytes "
                   "reach this"),
      int_key("log.cleaner.delete.retention.ms", &server_config::log_cleaner_delete_retention_ms, 0, i64,
              "default delete.retention.ms of topics: how long a tombstone stays readable, ms"),
      int_key("log.cleaner.min.compaction.lag.ms", &server_config::log_cleaner_min_compaction_lag_ms, 0, i64,
              "default min.compaction.lag.ms of topics: newer records are not cleaned, ms"),
      int_key("log.cleaner.max.compaction.lag.ms", &server_config::log_cleaner_max_compaction_lag_ms, 1, i64,
              "default max.compaction.lag.ms of topics: an older record is cleaned whatever the ratio, ms (at least "
              "log.cleaner.min.compaction.lag.ms)"),
      bool_key("log.direct.io", &server_config::log_direct_io,
               "append to segments with O_DIRECT (aligned block writes, no page cache; see docs/benchmarks.md)"),
      int_key("min.insync.replicas", &server_config::min_insync_replicas, 1, 32767,
              "in-sync replicas an acks=all write needs (and the high watermark needs to advance)"),
      int_key("produce.records.max", &server_config::produce_records_max, 1, 1000000, "records per produce request"),
      int_key("fetch.wait.max.ms", &server_config::fetch_wait_max_ms, 0, 3600000, "longest long-poll of a fetch, ms"),
      int_key("fetch.waiters.per.partition.max", &server_config::fetch_waiters_per_partition_max, 1, 1000000,
              "long-polls parked on one partition"),
      int_key("offsets.topic.num.partitions", &server_config::offsets_topic_num_partitions, 1, 1000,
              "partitions of __consumer_offsets when it is created (later changes do not move groups)"),
      int_key("transaction.state.log.num.partitions", &server_config::transaction_state_log_num_partitions, 1, 1000,
              "partitions of __transaction_state when it is created (later changes do not move transactional ids)"),
      int_key("transaction.max.timeout.ms", &server_config::transaction_max_timeout_ms, 1, 7LL * 24 * 3600 * 1000,
              "the longest transaction.timeout.ms a transactional producer may ask, ms"),
      int_key("transactional.id.expiration.ms", &server_config::transactional_id_expiration_ms, 1,
              365LL * 24 * 3600 * 1000, "a transactional id without a transaction this long is forgotten, ms"),
      int_key("transaction.abort.timed.out.transaction.cleanup.interval.ms",
              &server_config::transaction_abort_timed_out_transaction_cleanup_interval_ms, 10, 3600000,
              "how often the transaction coordinator aborts transactions past their timeout, ms"),
      int_key("delay.max.ms", &server_config::delay_max_ms, 1, 365LL * 24 * 3600 * 1000,
              "longest delay of a delayed record (deliver_at, delay_ms, header ringlog-deliver-at), ms; longer ones are refused"),
      int_key("max.delivery.attempts", &server_config::max_delivery_attempts, 1, 100,
              "default deliveries of a record nacked by a consumer group member before it goes to the group's "
              "dead-letter topic (a consumer instance may set its own)"),
      int_key("retry.backoff.ms", &server_config::retry_backoff_ms, 0, 7LL * 24 * 3600 * 1000,
              "default wait before a nacked record is delivered again, ms"),
      fraction_key("retry.backoff.multiplier", &server_config::retry_backoff_multiplier, 1.0, 10.0,
                   "default factor of the wait per further retry"),
      int_key("retry.backoff.max.ms", &server_config::retry_backoff_max_ms, 0, 7LL * 24 * 3600 * 1000,
              "default cap of the growing wait between retries, ms (at least retry.backoff.ms)"),
      template_key("retry.topic.template", &server_config::retry_topic_template,
                   "default name of a consumer group's retry topic of each topic"),
      template_key("dead.letter.topic.template", &server_config::dead_letter_topic_template,
                   "default name of a consumer group's dead-letter topic of each topic"),
      key_spec{"listeners",
               "where this node listens, comma-separated NAME://HOST:PORT: http:// and/or https:// (REST, "
               "WebSocket, streams, console; https = TLS with the ssl.* keys), Kafka client listeners by Kafka's "
               "security protocol names PLAINTEXT:// (kafka:// is an alias), SSL://, SASL_PLAINTEXT://, SASL_SSL:// or "
               "by names of listener.security.protocol.map (several at once, e.g. CLIENT://:9093,INTERNAL://:9094), "
               "and cluster:// (the inter-broker listener, for ringlog nodes only; CLUSTER:SSL in "
               "listener.security.protocol.map makes it mutual TLS, docs/security.md). IP address hosts (an empty "
               "host is 0.0.0.0). Listing listeners replaces the default: without Kafka ones no Kafka clients, "
               "without http:// and https:// no REST, WebSocket, console or /metrics (a Kafka-only broker)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 auto parsed = parse_listeners(v);
                 if (!parsed.ok()) return parsed.error();
                 c.listeners = std::move(parsed).value();
                 return std::nullopt;
               },
               [](const server_config& c) { return show_listeners(c.listeners); }},
      key_spec{"advertised.listeners",
               advertised_listeners_help,
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 auto parsed = parse_listeners(v, /*host_names=*/true);
                 if (!parsed.ok()) return parsed.error();
                 c.advertised_listeners = std::move(parsed).value();
                 return std::nullopt;
               },
               [](const server_config& c) { return show_listeners(c.advertised_listeners); }},
      key_spec{"listener.security.protocol.map",
               "NAME:PROTOCOL,... the security protocol of each named listener (PLAINTEXT, SSL, SASL_PLAINTEXT, "
               "SASL_SSL); the protocol names map to themselves, CLUSTER to PLAINTEXT unless set here",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 c.listener_security_protocol_map.clear();
                 for (std::string_view item : base::split_list(v)) {
                   size_t colon = item.find(':');
                   if (colon == std::string_view::npos || colon == 0) {
                     return "each entry must look like NAME:PROTOCOL, got '" + std::string(item) + "'";
                   }
                   std::string protocol = upper(base::trim_blanks(item.substr(colon + 1)));
                   if (!is_security_protocol(protocol)) {
                     return "unknown security protocol '" + protocol + "' (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)";
                   }
                   c.listener_security_protocol_map[upper(base::trim_blanks(item.substr(0, colon)))] = protocol;
                 }
                 return std::nullopt;
               },
               [](const server_config& c) {
                 std::string out;
                 for (const auto& [name, protocol] : c.listener_security_protocol_map) {
                   out += (out.empty() ? "" : ",") + name + ":" + protocol;
                 }
                 return out;
               }},
      int_key("ssl.reload.check.interval.ms", &server_config::ssl_reload_check_interval_ms, 100, 86400000,
              "how often the keystore and truststore files are checked for changes, ms: a renewed certificate "
              "serves new handshakes without a restart, open connections stay (SIGHUP re-reads at once)"),
      key_spec{"process.roles", "what this node runs: broker,controller (combined mode: a voter of controller.quorum.voters and a broker), "
               "or broker (a broker that follows the metadata quorum without a vote: how a broker joins a running "
               "cluster without changing controller.quorum.voters), or controller (a dedicated controller, KIP-631: a voter "
               "that runs the metadata quorum and the active controller's duties but never registers as a broker, "
               "hosts no partitions and serves no records; it takes no kafka:// listener)",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 bool broker = false;
                 bool controller = false;
                 for (std::string_view item : base::split_list(v)) {
                   if (item == "broker" && !broker) {
                     broker = true;
                   } else if (item == "controller" && !controller) {
                     controller = true;
                   } else {
                     return "each role must be broker or controller, at most once each; got '" + std::string(item) + "'";
                   }
                 }
                 if (!broker && !controller) return "must name at least one role (broker, controller)";
                 c.process_role_broker = broker;
                 c.process_role_controller = controller;
                 return std::nullopt;
               },
               [](const server_config& c) {
                 if (c.process_role_broker && c.process_role_controller) return std::string("broker,controller");
                 return std::string(c.process_role_broker ? "broker" : "controller");
               }},
      key_spec{"controller.quorum.voters",
               "the controller quorum: ID@HOST:PORT,... (each voter's cluster listener); empty = this node alone",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 c.controller_quorum_voters.clear();
                 if (v.empty()) return std::nullopt;
                 for (std::string_view item : base::split_list(v)) {
                   size_t at = item.find('@');
                   if (at == std::string_view::npos) return "each voter must look like ID@HOST:PORT, got '" + std::string(item) + "'";
                   int64_t id = -1;
                   std::string_view id_text = item.substr(0, at);
                   auto [ptr, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
                   if (id_text.empty() || ec != std::errc() || ptr != id_text.data() + id_text.size() || id < 0 ||
                       id > std::numeric_limits<int32_t>::max()) {
                     return "voter id '" + std::string(id_text) + "' must be an integer in [0, 2147483647]";
                   }
                   auto address = parse_host_port(item.substr(at + 1));
                   if (!address.ok()) return "voter '" + std::string(item) + "': " + address.error();
                   for (const auto& existing : c.controller_quorum_voters) {
                     if (existing.node_id == id) return "voter id " + std::to_string(id) + " appears twice";
                   }
                   c.controller_quorum_voters.push_back({static_cast<int32_t>(id), address->host, address->port});
                 }
                 if (c.controller_quorum_voters.size() > quorum_voters_max) {
                   return "at most " + std::to_string(quorum_voters_max) + " voters (each commit waits for a majority)";
                 }
                 return std::nullopt;
               },
               [](const server_config& c) {
                 std::string out;
                 for (const auto& v : c.controller_quorum_voters) {
                   out += (out.empty() ? "" : ",") + std::to_string(v.node_id) + "@" + v.host + ":" + std::to_string(v.port);
                 }
                 return out;
               }},
      int_key("replica.lag.time.max.ms", &server_config::replica_lag_time_max_ms, 100, 3600000,
              "a follower not caught up with its leader this long leaves the ISR, ms; never sooner than broker.session.timeout.ms"),
      int_key("producer.id.expiration.ms", &server_config::producer_id_expiration_ms, 1, 365LL * 24 * 3600 * 1000,
              "an idempotent producer with no batch in a partition for this long is forgotten there, ms "
              "(its late retries are then new batches; Kafka's default, one day)"),
      int_key("replica.fetch.wait.max.ms", &server_config::replica_fetch_wait_max_ms, 0, 60000,
              "longest wait of a follower's fetch at its leader when there is nothing new, ms"),
      int_key("replica.fetch.max.bytes", &server_config::replica_fetch_max_bytes, 1024, 1 << 30,
              "bytes of batches one follower fetch asks for (at least one batch is returned)"),
      int_key("replica.fetch.backoff.ms", &server_config::replica_fetch_backoff_ms, 0, 60000,
              "wait after a failed follower fetch before the next, ms"),
      bool_key("unclean.leader.election.enable", &server_config::unclean_leader_election_enable,
               "let a replica outside the ISR lead when the whole ISR is gone (acknowledged writes may be lost)"),
      bool_key("auto.leader.rebalance.enable", &server_config::auto_leader_rebalance_enable,
               "give leaderships back to preferred replicas (the first of each partition) once they are in the ISR"),
      int_key("leader.imbalance.check.interval.seconds", &server_config::leader_imbalance_check_interval_seconds, 1,
              86400, "how often the active controller checks for leaderships to give back to preferred replicas, s"),
      int_key("leader.imbalance.per.broker.percentage", &server_config::leader_imbalance_per_broker_percentage, 0, 100,
              "a broker's leaderships are given back once more than this share of the partitions it prefers are led "
              "elsewhere, %"),
      key_spec{"broker.rack", "this broker's rack, for rack-aware replica placement; empty = none",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 if (v.size() > 255) return "at most 255 characters";
                 c.broker_rack = std::string(v);
                 return std::nullopt;
               },
               [](const server_config& c) { return c.broker_rack; }},
      int_key("num.shards", &server_config::num_shards, 0, 1024, "shard threads; 0 = one per core"),
      choice_key("io.backend", &server_config::io_backend, {"auto", "uring", "posix"}, "disk I/O backend"),
      int_key("http.request.body.max.bytes", &server_config::http_request_body_max_bytes, 1024, int64_t{1} << 32,
              "largest HTTP request body, bytes"),
      int_key("http.request.header.max.bytes", &server_config::http_request_header_max_bytes, 1024, 1024 * 1024,
              "largest HTTP request line + headers, bytes"),
      int_key("http.idle.timeout.ms", &server_config::http_idle_timeout_ms, 100, 3600000,
              "close keep-alive connections idle this long, ms"),
      int_key("fetch.response.bytes.max", &server_config::fetch_response_bytes_max, 1024, int64_t{1} << 30,
              "largest max_bytes a fetch may ask for"),
      int_key("socket.request.max.bytes", &server_config::socket_request_max_bytes, 1024, 104857600,
              "largest Kafka request frame, bytes: a larger one closes the connection (Kafka's default 100 MiB)"),
      bool_key("kafka.fetch.zero.copy", &server_config::kafka_fetch_zero_copy,
               "Kafka Fetch answers send record batches from the segment files with sendfile (no copy through "
               "the broker's memory); false = read them into the answer (see docs/kafka.md)"),
      key_spec{"sasl.enabled.mechanisms",
               "SASL mechanisms a SASL Kafka listener offers, comma-separated, from SCRAM-SHA-256, SCRAM-SHA-512, "
               "PLAIN (checked against the SCRAM users; it sends the password: not on by default) and OAUTHBEARER "
               "(JWTs checked by the sasl.oauthbearer.* keys). Kafka's default, GSSAPI, is not served",
               [](server_config& c, std::string_view v) -> std::optional<std::string> {
                 std::vector<std::string> out;
                 for (std::string_view item : base::split_list(v)) {
                   if (item != "SCRAM-SHA-256" && item != "SCRAM-SHA-512" && item != "PLAIN" && item != "OAUTHBEARER") {
                     return "mechanism '" + std::string(item) + "' is not supported (SCRAM-SHA-*, PLAIN, OAUTHBEARER)";
                   }
                   if (std::find(out.begin(), out.end(), item) != out.end()) return "names " + std::string(item) + " twice";
                   out.emplace_back(item);
                 }
                 if (out.empty()) return "must name at least one mechanism";
                 c.sasl_enabled_mechanisms = std::move(out);
                 return std::nullopt;
               },
               [](const server_config& c) {
                 std::string out;
                 for (const auto& m : c.sasl_enabled_mechanisms) out += (out.empty() ? "" : ",") + m;
                 return out;
               }},
      int_key("connections.max.reauth.ms", &server_config::connections_max_reauth_ms, 0, std::numeric_limits<int64_t>::max(),
              "KIP-368: a SASL login lasts this long; the client re-authenticates on the same connection before it "
              "ends (clients are told it in SaslAuthenticate), else the connection is closed at the next request; "
              "0 = logins do not expire, ms"),
      int_key("connection.failed.authentication.delay.ms", &server_config::connection_failed_authentication_delay_ms,
              0, 60000, "a failed SASL login closes, an HTTP 401 for bad credentials is answered, this long after, ms"),
      key_spec{"http.cors.allowed.origins",
               "browser origins (pages of other sites) allowed by CORS, the WebSocket upgrade and state-changing calls: "
               "empty (none; the server's own pages always are), * (any) or a comma-separated list of scheme://host[:port]",
               set_cors_allowed_origins,
               [](const server_config& c) { return c.http_cors_allowed_origins; }},
      key_spec{"http.allowed.hosts", allowed_hosts_help, set_allowed_hosts, show_allowed_hosts},
      int_key("http.connections.max", &server_config::http_connections_max, 0, 1000000,
              "open HTTP connections at once; 0 = a quarter of the open-file limit, at most 10000"),
      int_key("broker.partitions.max", &server_config::broker_partitions_max, 0, 10000000,
              "partitions of all topics together; 0 = from the open-file limit less the connections (8 files per partition)"),
      int_key("shutdown.drain.timeout.ms", &server_config::shutdown_drain_timeout_ms, 0, 600000,
              "how long a graceful stop waits for in-flight requests, ms"),
  }, joined(consumer_group_keys(), joined(quorum_and_membership_keys(), joined(authentication_keys(), joined(connection_limit_keys(), joined(socket_buffer_keys(), joined(replication_throttle_keys(), joined(autobalancer_keys(), ssl_key_specs()))))))));
  return table;
}

}  // namespace

result<properties> parse_properties(std::string_view text, std::string_view source) {
  properties out;
  size_t line_number = 0;
  std::string logical;
  size_t logical_start = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    std::string_view t = base::trim_blanks(line);
    if (logical.empty()) {
      logical_start = line_number;
      if (t.empty() || t.front() == '#' || t.front() == '!') {
        if (end == text.size()) break;
        continue;
      }
    }
    // An odd number of trailing backslashes continues the line.
    size_t backslashes = 0;
    while (backslashes < t.size() && t[t.size() - 1 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 1) {
      logical += std::string(t.substr(0, t.size() - 1));
      if (end == text.size()) break;
      continue;
    }
    logical += std::string(t);
    size_t sep = logical.find_first_of("=:");
    if (sep == std::string::npos) {
      return error{errc::parse_error, std::string(source) + ":" + std::to_string(logical_start) + ": \"" + logical +
                                          "\" is not key=value"};
    }
    std::string key(base::trim_blanks(std::string_view(logical).substr(0, sep)));
    std::string value(base::trim_blanks(std::string_view(logical).substr(sep + 1)));
    if (key.empty()) {
      return error{errc::parse_error, std::string(source) + ":" + std::to_string(logical_start) + ": empty key"};
    }
    out[key] = value;
    logical.clear();
    if (end == text.size()) break;
  }
  if (!logical.empty()) {
    return error{errc::parse_error, std::string(source) + ":" + std::to_string(logical_start) + ": file ends inside a continued line"};
  }
  return out;
}

result<std::pair<std::string, std::string>> parse_assignment(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || base::trim_blanks(text.substr(0, eq)).empty()) {
    return error{errc::parse_error, "--set \"" + std::string(text) + "\" is not key=value"};
  }
  return std::pair{std::string(base::trim_blanks(text.substr(0, eq))), std::string(base::trim_blanks(text.substr(eq + 1)))};
}

namespace {

/// The cluster keys that depend on each other (KIP-631's rules for process.roles and voters).
result<void> check_cluster_settings(const server_config& c) {
  const std::string voters = key_value(c, "controller.quorum.voters");
  const bool dedicated_controller = c.process_role_controller && !c.process_role_broker;
  if (dedicated_controller && c.kafka_listener_port >= 0) {
    // Kafka's controllers have no client listener either: clients go to brokers.
    return invalid("listeners", key_value(c, "listeners"),
                   "process.roles=controller (a dedicated controller) serves no Kafka clients: list only "
                   "http:// and cluster:// listeners (kafka:// is on by default when listeners is not set)");
  }
  if (c.controller_quorum_voters.empty()) {
    if (!c.process_role_controller) {
      return invalid("process.roles", "broker",
                     "a broker-only node needs controller.quorum.voters to find the controllers");
    }
    if (dedicated_controller) {
      return invalid("process.roles", "controller",
                     "a dedicated controller needs controller.quorum.voters (with its own node.id) and brokers "
                     "(process.roles=broker) that join it; a single node runs broker,controller");
    }
    return base::ok_v;
  }
  bool listed = false;
  for (const auto& v : c.controller_quorum_voters) listed = listed || v.node_id == c.node_id;
  if (c.process_role_controller && !listed) {
    return invalid("controller.quorum.voters", voters,
                   "node.id=" + std::to_string(c.node_id) + " runs the controller role (process.roles=" +
                       key_value(c, "process.roles") + ") but is not one of the voters");
  }
  if (!c.process_role_controller && listed) {
    return invalid("controller.quorum.voters", voters,
                   "node.id=" + std::to_string(c.node_id) + " is a voter but process.roles has no controller");
  }
  if (c.cluster_listener_port < 0) {
    return invalid("listeners", key_value(c, "listeners"),
                   "a node of a multi-node cluster (controller.quorum.voters is set) needs a cluster://HOST:PORT listener");
  }
  if (c.broker_session_timeout_ms <= c.broker_heartbeat_interval_ms) {
    return invalid("broker.session.timeout.ms", std::to_string(c.broker_session_timeout_ms),
                   "must be longer than broker.heartbeat.interval.ms=" + std::to_string(c.broker_heartbeat_interval_ms));
  }
  return base::ok_v;
}

/// Each TLS listener has a keystore, and a truststore where client certificates are checked.
result<void> check_tls_listeners(const server_config& c) {
  for (const auto& r : c.listeners) {
    const bool tls = r.uses_tls() || (r.is_http() && r.name == "HTTPS");
    const std::string prefix = "listener.name." + lower(r.name) + ".";
    const bool keystore = !listener_setting(c, r.name, "ssl.keystore.location").empty() ||
                          !listener_setting(c, r.name, "ssl.keystore.key").empty();
    if (tls && !keystore) {
      return invalid("ssl.keystore.location", listener_setting(c, r.name, "ssl.keystore.location"),
                     "listener " + r.to_string() + " uses TLS (" + r.security_protocol + ") and needs a keystore: set "
                     "ssl.keystore.location (or " + prefix + "ssl.keystore.location, or ssl.keystore.key with "
                     "ssl.keystore.certificate.chain)");
    }
    const std::string client_auth = listener_setting(c, r.name, "ssl.client.auth");
    const bool truststore = !listener_setting(c, r.name, "ssl.truststore.location").empty() ||
                            !listener_setting(c, r.name, "ssl.truststore.certificates").empty();
    if (tls && (client_auth == "requested" || client_auth == "required" || r.is_cluster()) && !truststore) {
      return invalid("ssl.truststore.location", "",
                     "listener " + r.name + (r.is_cluster() ? " (the cluster listener: mutual TLS)" : " with ssl.client.auth=" + client_auth) +
                         " needs a truststore (ssl.truststore.location or " + prefix + "ssl.truststore.location)");
    }
  }
  return base::ok_v;
}

/// OAUTHBEARER (a Kafka listener's SASL mechanism) and BEARER (http.authentication.method) check
/// JWTs with the keys of sasl.oauthbearer.jwks.endpoint.url: either one without it is a config
/// error naming that key (issue 29), before anything binds.
result<void> check_jwks_needed(const server_config& c) {
  if (!c.sasl_oauthbearer_jwks_endpoint_url.empty()) return base::ok_v;
  const std::string fix = "set sasl.oauthbearer.jwks.endpoint.url=https://HOST/PATH or file:PATH (the keys that "
                          "sign the tokens)";
  for (const auto& r : c.listeners) {
    if (!r.is_kafka() || !r.uses_sasl()) continue;
    const auto mechanisms = sasl_mechanisms_of(c, r.name);
    if (std::find(mechanisms.begin(), mechanisms.end(), "OAUTHBEARER") == mechanisms.end()) continue;
    return invalid("sasl.oauthbearer.jwks.endpoint.url", "",
                   "listener " + r.to_string() + " offers SASL OAUTHBEARER (sasl.enabled.mechanisms) but no JWKS "
                   "is configured to check its tokens: " + fix);
  }
  const std::string methods = upper(c.http_authentication_method);
  if (methods.find("BEARER") != std::string::npos) {
    return invalid("sasl.oauthbearer.jwks.endpoint.url", "",
                   "http.authentication.method=" + c.http_authentication_method + " has BEARER but no JWKS is "
                   "configured to check its tokens: " + fix);
  }
  return base::ok_v;
}

/// Resolves each listener's protocol (listener.security.protocol.map), checks the combinations,
/// and fills the one-of-each fields (listener_host, kafka_listener_*, cluster_listener_*, advertised_*).
result<void> resolve_listeners(server_config& c) {
  const std::string shown = key_value(c, "listeners");
  for (const auto& [name, protocol] : c.listener_security_protocol_map) {
    bool used = false;
    for (const auto& r : c.listeners) used = used || r.name == name;
    if (!used && !is_security_protocol(name)) {
      return invalid("listener.security.protocol.map", key_value(c, "listener.security.protocol.map"),
                     "names listener " + name + ", which listeners does not have");
    }
  }
  for (auto* records : {&c.listeners, &c.advertised_listeners}) {
    for (auto& r : *records) {
      if (r.is_http()) continue;
      auto mapped = c.listener_security_protocol_map.find(r.name);
      if (mapped != c.listener_security_protocol_map.end()) {
        r.security_protocol = mapped->second;
      } else if (is_security_protocol(r.name) || r.is_cluster()) {
        r.security_protocol = r.is_cluster() ? "PLAINTEXT" : r.name;
      } else {
        return invalid(records == &c.listeners ? "listeners" : "advertised.listeners", show_listeners(*records),
                       "listener name " + r.name + " is not a security protocol and has no entry in "
                       "listener.security.protocol.map (e.g. " + r.name + ":SASL_SSL)");
      }
    }
  }
  int http = 0;
  for (const auto& r : c.listeners) {
    http += r.name == "HTTP";
    if (r.is_cluster() && r.uses_sasl()) {
      return invalid("listener.security.protocol.map", key_value(c, "listener.security.protocol.map"),
                     "the cluster listener takes PLAINTEXT or SSL (mutual certificates), not " + r.security_protocol);
    }
  }
  // No http:// or https:// listener is allowed (Kafka and Redpanda run without an HTTP proxy):
  // then the REST, WebSocket, console and /metrics doors are off (listener_port stays -1, below).
  for (const auto& r : c.advertised_listeners) {
    bool bound = false;
    for (const auto& l : c.listeners) bound = bound || l.name == r.name;
    if (!bound) return invalid("advertised.listeners", show_listeners(c.advertised_listeners),
                               "names listener " + r.name + ", which listeners does not have");
  }
  for (const auto& [name, keys] : c.listener_overrides) {
    bool found = false;
    for (const auto& r : c.listeners) found = found || lower(r.name) == name;
    if (!found) {
      return invalid("listener.name." + name + "." + keys.begin()->first, keys.begin()->second,
                     "there is no listener named " + upper(name) + " in listeners=" + shown);
    }
  }
  RINGLOG_TRY(check_tls_listeners(c));
  // The fields of one listener of each kind.
  c.listener_port = -1;
  c.kafka_listener_port = -1;
  c.cluster_listener_port = -1;
  for (const auto& r : c.listeners) {
    if (r.name == "HTTP" || (r.name == "HTTPS" && http == 0)) {
      c.listener_host = r.host;
      c.listener_port = r.port;
    } else if (r.is_cluster()) {
      c.cluster_listener_host = r.host;
      c.cluster_listener_port = r.port;
    } else if (r.is_kafka() && c.kafka_listener_port < 0) {
      c.kafka_listener_host = r.host;
      c.kafka_listener_port = r.port;
    }
  }
  for (const auto& r : c.advertised_listeners) {
    if (r.host == "0.0.0.0" || r.host == "::") {
      // Kafka's rule: advertised.listeners cannot use the nonroutable meta-address.
      return invalid("advertised.listeners", show_listeners(c.advertised_listeners),
                     "advertises " + r.to_string() + ", a wildcard address no client or peer can connect to: name "
                     "this node's routable address or name (0.0.0.0 and :: belong in listeners only)");
    }
    if (r.name == "HTTP" || (r.name == "HTTPS" && http == 0)) {
      c.advertised_http_host = r.host;
      c.advertised_http_port = r.port;
    } else if (r.is_cluster()) {
      c.advertised_cluster_host = r.host;
      c.advertised_cluster_port = r.port;
    }
  }
  for (const auto& r : c.listeners) {
    if (!r.is_kafka()) continue;
    for (const auto& a : c.advertised_listeners) {
      if (a.name == r.name) {
        c.advertised_kafka_host = a.host;
        c.advertised_kafka_port = a.port;
      }
    }
    break;
  }
  return base::ok_v;
}

/// listener.name.<name>.<key>: stored for resolve_listeners and listener_setting.
std::optional<std::string> apply_listener_override(server_config& c, const std::string& key, const std::string& value) {
  constexpr std::string_view prefix = "listener.name.";
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return "must look like listener.name.<name>.<key>";
  const std::string name = key.substr(prefix.size(), dot - prefix.size());
  const std::string setting = key.substr(dot + 1);
  if (name != lower(name)) return "the listener name must be lower case (Kafka's rule): listener.name." + lower(name) + "." + setting;
  if (!listener_overridable_key(setting)) {
    return "'" + setting + "' cannot be set per listener (ssl.*, sasl.enabled.mechanisms, max.connections and "
           "max.connection.creation.rate can; the sasl.oauthbearer.* keys apply to every listener)";
  }
  if (auto why = check_ssl_value(setting, value)) return why;
  if (setting == "sasl.enabled.mechanisms") {
    // Checked as the global key is (a listener's own list was stored unread and the listener
    // offered the global one: PLAIN on a listener restricted to SCRAM, session 32's new user).
    server_config scratch;
    for (const auto& k : key_table()) {
      if (k.name == setting) {
        if (auto why = k.apply(scratch, value)) return why;
      }
    }
  }
  if (setting.rfind("max.connection", 0) == 0) {
    int64_t n = -1;
    auto parsed = std::from_chars(value.data(), value.data() + value.size(), n);
    if (parsed.ec != std::errc{} || parsed.ptr != value.data() + value.size() || n < 0) {
      return "must be an integer >= 0";
    }
  }
  c.listener_overrides[name][setting] = value;
  return std::nullopt;
}

}  // namespace

bool listener_overridable_key(std::string_view key) {
  if (key == "ssl.reload.check.interval.ms") return false;
  for (const auto& k : ssl_keys()) {
    if (key == k.name) return true;
  }
  // Kafka's per-listener connection limits (KIP-308, KIP-402).
  if (key == "max.connections" || key == "max.connection.creation.rate") return true;
  // Of the sasl.* keys, the mechanisms a listener offers (Kafka's
  // listener.name.<l>.sasl.enabled.mechanisms); the JWT rules are the broker's, one set.
  return key == "sasl.enabled.mechanisms";
}

std::vector<std::string> sasl_mechanisms_of(const server_config& c, std::string_view listener_name) {
  auto per_listener = c.listener_overrides.find(lower(listener_name));
  if (per_listener == c.listener_overrides.end()) return c.sasl_enabled_mechanisms;
  auto it = per_listener->second.find("sasl.enabled.mechanisms");
  if (it == per_listener->second.end()) return c.sasl_enabled_mechanisms;
  std::vector<std::string> out;
  for (std::string_view item : base::split_list(it->second)) out.emplace_back(item);   // checked when set
  return out;
}

std::string listener_record::to_string() const {
  std::string scheme = name == "HTTP" ? "http" : name == "HTTPS" ? "https" : name == "CLUSTER" ? "cluster" : name;
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string listener_setting(const server_config& c, std::string_view listener_name, std::string_view key) {
  auto per_listener = c.listener_overrides.find(lower(listener_name));
  if (per_listener != c.listener_overrides.end()) {
    auto it = per_listener->second.find(std::string(key));
    if (it != per_listener->second.end()) return it->second;
  }
  auto it = c.ssl.find(std::string(key));
  if (it != c.ssl.end()) return it->second;
  return ssl_default(key);
}

listener_record advertised_listener(const server_config& c, const listener_record& r) {
  for (const auto& a : c.advertised_listeners) {
    if (a.name == r.name) return a;
  }
  listener_record out = r;
  if (out.host == "0.0.0.0" || out.host == "::") out.host = "127.0.0.1";
  return out;
}


namespace {

/// For a key of Kafka's server.properties that ringlog takes under another name or not at all:
/// what to write instead (a new user's stock Kafka file stopped at log.retention.hours with no
/// hint). Empty for other keys.
std::string kafka_key_hint(const std::string& key) {
  static const std::vector<std::pair<std::string_view, std::string_view>> hints = {
      {"log.retention.hours", "log.retention.ms (hours x 3600000)"},
      {"log.retention.minutes", "log.retention.ms (minutes x 60000)"},
      {"log.roll.hours", "log.roll.ms (hours x 3600000)"},
      {"log.dir", "log.dirs"},
      {"num.network.threads", "num.shards (each shard's thread serves its sockets and its disk work)"},
      {"num.io.threads", "num.shards (each shard's thread serves its sockets and its disk work)"},
      {"offsets.topic.replication.factor", "default.replication.factor (internal topics take the automatic "
                                           "factor, min(3, brokers))"},
      {"transaction.state.log.replication.factor", "default.replication.factor (internal topics take the "
                                                   "automatic factor, min(3, brokers))"},
      {"delete.topic.enable", "nothing: topics can always be deleted (Kafka's default, true)"},
      // Nodes talk to each other on one listener of their own, cluster:// (name CLUSTER), never on
      // a client listener: Kafka's inter-broker and controller listener keys have no meaning here.
      {"security.inter.broker.protocol", "listener.security.protocol.map=CLUSTER:SSL (nodes talk on the cluster:// "
                                         "listener, PLAINTEXT or SSL = mutual TLS; docs/security.md)"},
      {"inter.broker.listener.name", "a cluster://HOST:PORT listener in listeners (nodes talk on it and on no "
                                     "other; its protocol: listener.security.protocol.map=CLUSTER:SSL)"},
      {"controller.listener.names", "a cluster://HOST:PORT listener in listeners (the quorum and the brokers share "
                                    "it) and controller.quorum.voters=ID@HOST:PORT,... naming each voter's"},
      // KIP-651 PEM only: no store, so no store password.
      {"ssl.keystore.password", "nothing: ssl.keystore.location is a PEM file (key, then chain), not a JKS or "
                                "PKCS12 store; an encrypted key's passphrase is ssl.key.password"},
      {"ssl.truststore.password", "nothing: ssl.truststore.location is a PEM file of CA certificates"},
      {"ssl.endpoint.identification.algorithm", "nothing: ringlog's listeners check no host name of their "
                                                "clients, and nodes check each other's certificate against "
                                                "ssl.truststore.location without a host name (docs/security.md)"},
  };
  for (const auto& [kafka, instead] : hints) {
    if (key == kafka) return ": ringlog does not take Kafka's " + key + "; use " + std::string(instead);
  }
  return {};
}

/// Edit distance of `a` and `b` (insert, delete, replace), at most `cap` + 1.
size_t edit_distance(std::string_view a, std::string_view b, size_t cap) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > cap) return cap + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return std::min(row[b.size()], cap + 1);
}

/// Why `key` is unknown, for the error: Kafka's key it stands for (kafka_key_hint), else the
/// known key within two edits of it (a typo), else nothing.
std::string unknown_key_hint(const std::string& key, const std::vector<key_spec>& table) {
  if (auto kafka = kafka_key_hint(key); !kafka.empty()) return kafka;
  constexpr size_t typo_edits_max = 2;
  const key_spec* closest = nullptr;
  size_t best = typo_edits_max + 1;
  for (const auto& k : table) {
    const size_t d = edit_distance(key, k.name, typo_edits_max);
    if (d < best) {
      best = d;
      closest = &k;
    }
  }
  return closest ? " (did you mean \"" + closest->name + "\"?)" : std::string();
}

/// Every key of `values` the server does not know, in one error (a file with three typos is
/// refused once, naming all three, not once per start); nullopt when there is none.
std::optional<error> unknown_keys(const properties& values, const std::vector<key_spec>& table) {
  std::vector<std::string> named;
  for (const auto& [key, value] : values) {
    if (key.rfind("listener.name.", 0) == 0) continue;   // apply_listener_override checks those
    const bool known = std::any_of(table.begin(), table.end(), [&](const key_spec& k) { return k.name == key; });
    if (!known) named.push_back("\"" + key + "\"" + unknown_key_hint(key, table));
  }
  if (named.empty()) return std::nullopt;
  std::string message = named.size() == 1 ? "unknown config key " : std::to_string(named.size()) + " unknown config keys: ";
  for (size_t i = 0; i < named.size(); ++i) message += (i == 0 ? "" : "; ") + named[i];
  return error{errc::unknown_key, message + " (see ringlog serve --help)"};
}

}  // namespace
result<server_config> load_server_config(const properties& values) {
  server_config c;
  const auto& table = key_table();
  if (auto unknown = unknown_keys(values, table)) return *unknown;
  for (const auto& [key, value] : values) {
    if (key.rfind("listener.name.", 0) == 0) {
      if (auto why = apply_listener_override(c, key, value)) return invalid(key, value, *why);
      continue;
    }
    const key_spec* spec = nullptr;
    for (const auto& k : table) {
      if (k.name == key) spec = &k;
    }
    RINGLOG_ASSERT(spec != nullptr, "unknown_keys refused every key the table does not hold");
    if (auto why = spec->apply(c, value)) return invalid(key, value, *why);
  }
  if (c.log_segment_bytes < c.message_max_bytes) {
    return invalid("log.segment.bytes", std::to_string(c.log_segment_bytes),
                   "must be at least message.max.bytes=" + std::to_string(c.message_max_bytes));
  }
  if (c.compression_gzip_level == 0) {
    // Kafka's gzip level validator: -1 (zlib's default) or [1, 9]; zlib's 0 would store.
    return invalid("compression.gzip.level", "0", "must be -1 or an integer in [1, 9]");
  }
  if (c.log_cleaner_min_compaction_lag_ms > c.log_cleaner_max_compaction_lag_ms) {
    // Kafka's conflict rule for the topic configs these default (LogConfig.validateValues).
    return invalid("log.cleaner.min.compaction.lag.ms", std::to_string(c.log_cleaner_min_compaction_lag_ms),
                   "must be at most log.cleaner.max.compaction.lag.ms=" +
                       std::to_string(c.log_cleaner_max_compaction_lag_ms));
  }
  RINGLOG_TRY(resolve_listeners(c));
  RINGLOG_TRY(check_cluster_settings(c));
  RINGLOG_TRY(check_jwks_needed(c));
  return c;
}

std::string key_value(const server_config& c, std::string_view key) {
  for (const auto& k : key_table()) {
    if (k.name == key) return k.show(c);
  }
  return {};
}

std::vector<key_description> describe_keys() {
  server_config defaults;
  std::vector<key_description> out;
  for (const auto& k : key_table()) out.push_back({k.name, k.show(defaults), k.doc});
  return out;
}

}  // namespace ringlog::config
