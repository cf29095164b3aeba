#include "ringlog/cli/http_client.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <thread>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdlib>
#include <chrono>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringlog/codec/base64.h"

namespace ringlog::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// How many servers a transport error names at most (a list of thousands would make a huge line).
constexpr size_t failures_named_max = 5;

/// "a; b; c; and N more" (at most failures_named_max named).
std::string join_failures(const std::vector<std::string>& failures) {
  std::string out;
  for (size_t i = 0; i < failures.size() && i < failures_named_max; ++i) out += (i == 0 ? "" : "; ") + failures[i];
  if (failures.size() > failures_named_max) out += "; and " + std::to_string(failures.size() - failures_named_max) + " more";
  return out;
}

/// The value of a "timeout=MS" query parameter (a long poll the server holds that long), else 0.
int64_t long_poll_ms(const std::string& path) {
  size_t q = path.find('?');
  while (q != std::string::npos) {
    if (path.compare(q + 1, 8, "timeout=") == 0) {
      int64_t ms = 0;
      for (size_t i = q + 9; i < path.size() && path[i] >= '0' && path[i] <= '9' && ms < 86400000; ++i) {
        ms = ms * 10 + (path[i] - '0');
      }
      return ms;
    }
    q = path.find('&', q + 1);
  }
  return 0;
}

}  // namespace

struct http_client::impl {
  /// The --bootstrap-server list, tried in turn from `current` on each new connection.
  std::vector<http_endpoint> endpoints;
  size_t current = 0;
  std::string host;
  std::string port;
  bool tls = false;   // the server in use is an https:// one
  asio::io_context context;
  /// The connection: TCP, or TLS over it to an https:// server (then `tls_stream` holds it).
  std::optional<beast::tcp_stream> stream;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_stream;
  std::optional<asio::ssl::context> tls_context;   // made on the first https:// connection
  /// Beast reads at most this buffer's free capacity per read_some (at least 512 bytes, at most
  /// 64 KiB). Left at its first 512 bytes, a 4 MiB records answer took three recvmsg calls and a
  /// timer re-arm per 1 KiB record: the bench's six HTTP readers fell seconds behind 40,000
  /// records/s on their own CPU (issue 32). So it is made with Beast's 64 KiB cap, once.
  beast::flat_buffer buffer = [] {
    beast::flat_buffer b;
    b.reserve(response_read_bytes);
    return b;
  }();
  int64_t timeout_ms = default_request_timeout_ms;

  /// Runs the asynchronous operation started on `context` to its end; the stream's expiry (set by
  /// the caller) bounds it: beast's timeouts apply to asynchronous operations only.
  void run() {
    context.restart();
    context.run();
  }

  std::string where() const { return host + ":" + port; }

  struct exchange_error_t {
    std::string message;
    bool timed_out = false;
  };

  std::optional<std::string> connect_one() {
    beast::error_code ec;
    tcp::resolver resolver(context);
    auto resolved = resolver.resolve(host, port, ec);
    if (ec) return "cannot resolve the broker address " + where() + " (" + ec.message() + ")";
    stream.emplace(context);
    stream->expires_after(std::chrono::milliseconds(timeout_ms));
    ec = asio::error::would_block;
    stream->async_connect(resolved, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
    run();
    if (ec) {
      stream.reset();
      if (ec == beast::error::timeout) {
        return "cannot connect to a broker at " + where() + " (no connection within " + std::to_string(timeout_ms) + " ms)";
      }
      return "cannot connect to a broker at " + where() + " (" + ec.message() + ")";
    }
    // A request is written as header + body; without TCP_NODELAY Nagle holds the last partial
    // segment of a large body until the server's delayed ACK (40 ms on Linux), as curl and
    // Kafka's clients know (they set it too).
    stream->socket().set_option(tcp::no_delay(true), ec);
    buffer.clear();
    if (tls) return start_tls();
    return std::nullopt;
  }

  /// TLS over the connected stream (an https:// server): the server's certificate must chain to
  /// RINGLOG_CA_FILE (else the system's CAs) and name the host, unless RINGLOG_TLS_INSECURE=1.
  std::optional<std::string> start_tls() {
    if (!tls_context) {
      tls_context.emplace(asio::ssl::context::tls_client);
      beast::error_code ec;
      const char* ca_file = std::getenv("RINGLOG_CA_FILE");
      if (ca_file != nullptr && *ca_file != '\0') {
        tls_context->load_verify_file(ca_file, ec);
        if (ec) return std::string("RINGLOG_CA_FILE=") + ca_file + ": " + ec.message();
      } else {
        tls_context->set_default_verify_paths(ec);
      }
      const char* insecure = std::getenv("RINGLOG_TLS_INSECURE");
      const bool verify = insecure == nullptr || std::string(insecure) != "1";
      tls_context->set_verify_mode(verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
    }
    tls_stream.emplace(std::move(*stream), *tls_context);
    stream.reset();
    beast::error_code ec;
    (void)asio::ip::make_address(host, ec);   // ec: not an IP address, so a name
    SSL* ssl = tls_stream->native_handle();
    if (ec) {
      SSL_set_tlsext_host_name(ssl, host.c_str());   // SNI: names only
      SSL_set1_host(ssl, host.c_str());              // the certificate must name the host
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());   // ... or its IP address
    }
    ec = asio::error::would_block;
    tls_stream->async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
    run();
    if (ec) {
      tls_stream.reset();
      return "TLS handshake with " + where() + " failed (" + ec.message() +
             "; RINGLOG_CA_FILE names the CA that signed the broker's certificate, RINGLOG_TLS_INSECURE=1 skips the check)";
    }
    return std::nullopt;
  }

  [[nodiscard]] bool connected() const { return stream.has_value() || tls_stream.has_value(); }
  void disconnect() {
    stream.reset();
    tls_stream.reset();
  }

  std::optional<exchange_error_t> exchange(const http::request<http::string_body>& req, int64_t wait_ms, http_reply& out) {
    if (tls_stream) return exchange_on(*tls_stream, beast::get_lowest_layer(*tls_stream), req, wait_ms, out);
    return exchange_on(*stream, *stream, req, wait_ms, out);
  }

  // One attempt on the current connection (`s`, over the TCP stream `tcp_layer`, which keeps the
  // expiry); nullopt means the reply is in `out`.
  template <typename Stream>
  std::optional<exchange_error_t> exchange_on(Stream& s, beast::tcp_stream& tcp_layer,
                                              const http::request<http::string_body>& req, int64_t wait_ms,
                                              http_reply& out) {
    using exchange_error = exchange_error_t;
    beast::error_code ec = asio::error::would_block;
    tcp_layer.expires_after(std::chrono::milliseconds(wait_ms));
    http::async_write(s, req, [&](beast::error_code e, size_t) { ec = e; });
    run();
    if (ec == beast::error::timeout) return exchange_error{where() + ": request not taken within " + std::to_string(wait_ms) + " ms", true};
    if (ec) return exchange_error{where() + ": send: " + ec.message()};
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<uint64_t>::max());
    ec = asio::error::would_block;
    http::async_read(s, buffer, parser, [&](beast::error_code e, size_t) { ec = e; });
    run();
    if (ec == beast::error::timeout) return exchange_error{where() + ": no answer within " + std::to_string(wait_ms) + " ms", true};
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset) {
      if (!parser.got_some()) {
        return exchange_error{where() + ": closed the connection without an HTTP answer: not a plain HTTP listener (is it the kafka:// port, or an https:// listener? then use https://)"};
      }
    }
    if (ec) return exchange_error{where() + ": receive: " + ec.message()};
    auto& res = parser.get();
    out.status = res.result_int();
    if (auto it = res.find(http::field::content_type); it != res.end()) out.content_type = std::string(it->value());
    out.body = std::move(res.body());
    if (auto it = res.find(http::field::retry_after); it != res.end()) {
      int64_t seconds = -1;
      const std::string_view v = it->value();
      if (auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds); ec == std::errc{} && end == v.data() + v.size()) {
        out.retry_after_s = seconds;
      }
    }
    if (!res.keep_alive()) disconnect();
    return std::nullopt;
  }

  /// The error once every server tried failed: the single server's own (with a hint when it
  /// refused the connection), else all of them, capped.
  std::string failed(const std::vector<std::string>& failures, bool connect_only) const {
    if (endpoints.size() == 1 && failures.size() == 1) {
      return connect_only ? failures[0] + ": is `ringlog serve` running there? --bootstrap-server (or "
                                          "RINGLOG_BOOTSTRAP_SERVER) names another"
                          : failures[0];
    }
    return "no bootstrap server answered (" + join_failures(failures) + ")";
  }
};

base::result<http_endpoint, std::string> parse_base_url(const std::string& base_url) {
  std::string_view url = base_url;
  const bool tls = url.substr(0, 8) == "https://";
  if (url.substr(0, 7) != "http://" && !tls) {
    // Kafka's tools take HOST:PORT of the Kafka listener; the CLI talks to the HTTP one.
    return "bootstrap server \"" + base_url + "\" must start with http:// or https://: the CLI talks to a broker's " +
           "HTTP listener (listeners=http://HOST:PORT, e.g. http://127.0.0.1:8082), not to its Kafka one";
  }
  url.remove_prefix(tls ? 8 : 7);
  if (size_t slash = url.find('/'); slash != std::string_view::npos) url = url.substr(0, slash);
  size_t colon = url.rfind(':');
  http_endpoint e;
  e.tls = tls;
  if (colon == std::string_view::npos) {
    e.host = std::string(url);
    e.port = tls ? "443" : "80";
  } else {
    e.host = std::string(url.substr(0, colon));
    e.port = std::string(url.substr(colon + 1));
  }
  if (e.host.empty() || e.port.empty()) return "bootstrap server \"" + base_url + "\" has no host or port";
  return e;
}

base::result<std::vector<http_endpoint>, std::string> parse_bootstrap_servers(const std::string& list) {
  std::vector<http_endpoint> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // Kafka trims each bootstrap.servers entry: "http://a, http://b" is two servers.
    const size_t first = item.find_first_not_of(" \t\r\n");
    item = first == std::string::npos ? std::string() : item.substr(first, item.find_last_not_of(" \t\r\n") - first + 1);
    if (!item.empty()) {
      auto endpoint = parse_base_url(item);
      if (!endpoint.ok()) return endpoint.error();
      out.push_back(std::move(endpoint).value());
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) return "--bootstrap-server \"" + list + "\" names no server";
  return out;
}

base::result<std::unique_ptr<http_client>, std::string> http_client::create(const std::string& base_urls) {
  auto endpoints = parse_bootstrap_servers(base_urls);
  if (!endpoints.ok()) return endpoints.error();
  auto p = std::make_unique<impl>();
  p->endpoints = std::move(endpoints).value();
  p->host = p->endpoints.front().host;
  p->port = p->endpoints.front().port;
  p->tls = p->endpoints.front().tls;
  return std::unique_ptr<http_client>(new http_client(std::move(p)));
}

std::string http_client::base_url() const {
  return (impl_->tls ? "https://" : "http://") + impl_->host + ":" + impl_->port;
}

http_client::http_client(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
http_client::~http_client() = default;

void http_client::set_timeout_ms(int64_t ms) { impl_->timeout_ms = ms; }

/// How many times one request is sent again after a 429 with Retry-After: a throttled client
/// that honours it loses nothing (issue 31); the bound keeps a quota that never lets it through
/// (a quota of 0 bytes) from holding the CLI forever.
constexpr int throttled_resends_max = 100;
/// The longest wait for one Retry-After, s: a quota window (quota.window.num x
/// quota.window.size.seconds, 11 s by default) with room.
constexpr int64_t throttled_wait_s_max = 60;

http_client::reply_result http_client::request(const std::string& method, const std::string& path,
                                               const std::string& body, const std::string& content_type,
                                               const std::string& accept) {
  for (int resend = 0;; ++resend) {
    auto reply = request_once(method, path, body, content_type, accept);
    if (!reply.ok() || reply->status != 429 || reply->retry_after_s < 0 || resend == throttled_resends_max) return reply;
    const int64_t wait_s = std::min(reply->retry_after_s, throttled_wait_s_max);
    std::fprintf(stderr, "ringlog: throttled by a client quota (HTTP 429): waiting %lld s (Retry-After), then %s %s again\n",
                 static_cast<long long>(wait_s), method.c_str(), path.c_str());
    std::this_thread::sleep_for(std::chrono::seconds(wait_s));
  }
}

http_client::reply_result http_client::request_once(const std::string& method, const std::string& path,
                                                    const std::string& body, const std::string& content_type,
                                                    const std::string& accept) {
  http::request<http::string_body> req(http::string_to_verb(method), path, 11);
  req.set(http::field::host, impl_->host + ":" + impl_->port);
  req.set(http::field::user_agent, "ringlog-cli");
  // With http.authentication.method on (issue 29), the CLI's caller: RINGLOG_TOKEN (a JWT, sent as
  // Bearer) or RINGLOG_USER + RINGLOG_PASSWORD (Basic, a SCRAM user); none = User:ANONYMOUS.
  if (const char* token = std::getenv("RINGLOG_TOKEN"); token != nullptr && *token != '\0') {
    req.set(http::field::authorization, std::string("Bearer ") + token);
  } else if (const char* user = std::getenv("RINGLOG_USER"); user != nullptr && *user != '\0') {
    const char* password = std::getenv("RINGLOG_PASSWORD");
    const std::string pair = std::string(user) + ":" + (password != nullptr ? password : "");
    req.set(http::field::authorization,
            "Basic " + codec::base64_encode(std::as_bytes(std::span(pair.data(), pair.size()))));
  }
  if (!accept.empty()) req.set(http::field::accept, accept);
  if (!content_type.empty()) req.set(http::field::content_type, content_type);
  req.keep_alive(true);
  req.body() = body;
  req.prepare_payload();
  const bool idempotent = req.method() == http::verb::get;
  const int64_t wait_ms = impl_->timeout_ms + long_poll_ms(path);
  std::vector<std::string> failures;
  bool skip_current = false;
  // A kept-alive connection may have been closed by the server meanwhile: then a fresh one.
  if (impl_->connected()) {
    http_reply out;
    auto err = impl_->exchange(req, wait_ms, out);
    if (!err) return out;
    impl_->disconnect();
    if (err->timed_out) {
      if (!idempotent) return err->message;
      failures.push_back(err->message);
      skip_current = true;
    }
  }
  // Each server of the list in turn from the current one (Kafka's tools walk bootstrap.servers
  // so); a GET moves on after no answer too, another method only when it could not connect.
  const size_t n = impl_->endpoints.size();
  bool connect_only = true;
  for (size_t i = skip_current ? 1 : 0; i < n; ++i) {
    const size_t index = (impl_->current + i) % n;
    impl_->host = impl_->endpoints[index].host;
    impl_->port = impl_->endpoints[index].port;
    impl_->tls = impl_->endpoints[index].tls;
    req.set(http::field::host, impl_->host + ":" + impl_->port);
    if (auto err = impl_->connect_one()) {
      failures.push_back(*err);
      continue;
    }
    impl_->current = index;
    http_reply out;
    auto err = impl_->exchange(req, wait_ms, out);
    if (!err) return out;
    impl_->disconnect();
    failures.push_back(err->message);
    connect_only = false;
    if (!idempotent) return impl_->failed(failures, false);
  }
  return impl_->failed(failures, connect_only);
}

}  // namespace ringlog::cli
