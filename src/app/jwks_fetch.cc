#include "jwks_fetch.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>
#include <chrono>
#include <fstream>
#include <optional>

#include "ringlog/security/jwt.h"

namespace ringlog::app {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// How long one io_context::run_for slice lasts: how soon a fetch notices `stopping` (shutdown
/// waits at most this long for a fetch under way, not jwks_fetch_timeout_ms).
constexpr auto stop_check_interval = std::chrono::milliseconds(100);

/// file:PATH, file:///PATH -> PATH.
std::string path_of_file_url(std::string_view url) {
  url.remove_prefix(5);   // "file:"
  if (url.starts_with("//")) url.remove_prefix(2);
  return std::string(url);
}

/// The file's bytes, at most security::jwks_bytes_max of them.
base::result<std::string, jwks_error> read_jwks_file(const std::string& url) {
  const std::string path = path_of_file_url(url);
  std::ifstream in(path, std::ios::binary);
  if (!in) return jwks_error{jwks_errc::cannot_read, "cannot read " + path};
  std::string text(security::jwks_bytes_max + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return jwks_error{jwks_errc::cannot_read, "cannot read " + path};
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > security::jwks_bytes_max) {
    return jwks_error{jwks_errc::cannot_read,
                      path + " is larger than " + std::to_string(security::jwks_bytes_max) + " bytes (security::jwks_bytes_max)"};
  }
  return text;
}

/// One https GET, its asynchronous steps run on `context` until done, the stream's expiry
/// (jwks_fetch_timeout_ms from the start) or `stopping`.
class https_fetch {
 public:
  https_fetch(const std::string& url, https_url where, const std::atomic<bool>& stopping)
      : url_(url), where_(std::move(where)), stopping_(stopping),
        deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(jwks_fetch_timeout_ms)) {}

  base::result<std::string, jwks_error> run(const jwks_trust& trust) {
    asio::ssl::context tls(asio::ssl::context::tls_client);
    if (auto e = trust_setup(tls, trust)) return fetch_error(*e);
    beast::error_code ec;
    tcp::resolver resolver(context_);
    auto resolved = resolver.resolve(where_.host, where_.port, ec);
    if (ec) return fetch_error(named("cannot resolve " + where_.host + " (" + ec.message() + ")"));
    beast::ssl_stream<beast::tcp_stream> stream(context_, tls);
    beast::get_lowest_layer(stream).expires_at(deadline_);
    ec = asio::error::would_block;
    beast::get_lowest_layer(stream).async_connect(resolved, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
    if (auto e = wait(ec, "connect")) return fetch_error(*e);
    if (auto e = name_the_host(stream)) return fetch_error(*e);
    ec = asio::error::would_block;
    stream.async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
    if (auto e = wait(ec, "TLS handshake")) return fetch_error(*e);
    return exchange(stream);
  }

 private:
  /// The system's CAs and ssl.truststore.location's; peer verification; TLS 1.2 or later.
  std::optional<std::string> trust_setup(asio::ssl::context& tls, const jwks_trust& trust) {
    beast::error_code ec;
    tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    tls.set_default_verify_paths(ec);   // no system CAs is not an error: the truststore may do
    if (!trust.truststore_location.empty()) {
      tls.load_verify_file(trust.truststore_location, ec);
      if (ec) return "ssl.truststore.location=" + trust.truststore_location + ": not a PEM file of CA certificates (" + ec.message() + ")";
    }
    tls.set_verify_mode(asio::ssl::verify_peer);
    return std::nullopt;
  }

  /// SNI and the name (or address) the certificate must carry.
  std::optional<std::string> name_the_host(beast::ssl_stream<beast::tcp_stream>& stream) {
    beast::error_code ec;
    (void)asio::ip::make_address(where_.host, ec);   // ec: not an IP address, so a name
    SSL* ssl = stream.native_handle();
    const bool checked = ec ? SSL_set_tlsext_host_name(ssl, where_.host.c_str()) == 1 && SSL_set1_host(ssl, where_.host.c_str()) == 1
                          : X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), where_.host.c_str()) == 1;
    if (!checked) return named("cannot set the host name " + where_.host + " to check the certificate against");
    return std::nullopt;
  }

  base::result<std::string, jwks_error> exchange(beast::ssl_stream<beast::tcp_stream>& stream) {
    http::request<http::empty_body> req{http::verb::get, where_.target, 11};
    // RFC 9110 section 7.2: the host as in the URL (an IPv6 address in brackets), its port unless 443.
    const std::string host = where_.host.find(':') != std::string::npos ? "[" + where_.host + "]" : where_.host;
    req.set(http::field::host, where_.port == "443" ? host : host + ":" + where_.port);
    req.set(http::field::accept, "application/json");
    req.set(http::field::user_agent, "ringlog");
    req.set(http::field::connection, "close");
    beast::error_code ec = asio::error::would_block;
    http::async_write(stream, req, [&](beast::error_code e, size_t) { ec = e; });
    if (auto e = wait(ec, "send")) return fetch_error(*e);
    http::response_parser<http::string_body> parser;
    parser.body_limit(security::jwks_bytes_max);
    beast::flat_buffer buffer;
    ec = asio::error::would_block;
    http::async_read(stream, buffer, parser, [&](beast::error_code e, size_t) { ec = e; });
    run_until_done(ec);
    if (ec == http::error::body_limit) {
      return fetch_error(named("the answer is larger than " + std::to_string(security::jwks_bytes_max) + " bytes (security::jwks_bytes_max)"));
    }
    if (auto e = failure_of(ec, "receive")) return fetch_error(*e);
    auto& res = parser.get();
    if (res.result_int() / 100 == 3) {
      auto location = res.find(http::field::location);
      return fetch_error(named("answered " + std::to_string(res.result_int()) + " (redirects are not followed" +
                         (location != res.end() ? "; Location: " + std::string(location->value()) : std::string()) + ")"));
    }
    if (res.result_int() != 200) return fetch_error(named("answered " + std::to_string(res.result_int()) + ", not 200"));
    return std::move(res.body());
  }

  /// Runs `context_` until the operation that sets `ec` is done; its failure as a message.
  std::optional<std::string> wait(beast::error_code& ec, std::string_view step) {
    run_until_done(ec);
    return failure_of(ec, step);
  }

  void run_until_done(beast::error_code& ec) {
    context_.restart();
    while (ec == asio::error::would_block && !stopping_.load()) context_.run_for(stop_check_interval);
    if (ec == asio::error::would_block) ec = asio::error::operation_aborted;   // stopping
  }

  std::optional<std::string> failure_of(const beast::error_code& ec, std::string_view step) const {
    if (!ec) return std::nullopt;
    if (ec == beast::error::timeout) {
      return named(std::string(step) + ": not done within " + std::to_string(jwks_fetch_timeout_ms) + " ms (jwks_fetch_timeout_ms)");
    }
    if (ec == asio::error::operation_aborted && stopping_.load()) return named(std::string(step) + ": shutting down");
    std::string reason = ec.message();
    if (ec.category() == asio::error::get_ssl_category() && reason.find("certificate verify failed") != std::string::npos) {
      reason += ": the server's certificate is not signed by a CA of the system or of ssl.truststore.location, or does not name " + where_.host;
    }
    return named(std::string(step) + ": " + reason);
  }

  /// "URL: reason", the message of every failure.
  std::string named(const std::string& reason) const { return url_ + ": " + reason; }
  static jwks_error fetch_error(std::string message) { return jwks_error{jwks_errc::cannot_fetch, std::move(message)}; }

  const std::string& url_;
  https_url where_;
  const std::atomic<bool>& stopping_;
  std::chrono::steady_clock::time_point deadline_;
  asio::io_context context_;
};

}  // namespace

base::result<https_url, jwks_error> parse_https_url(std::string_view url) {
  const std::string whole(url);
  auto bad = [&](std::string_view why) { return jwks_error{jwks_errc::bad_url, whole + ": " + std::string(why)}; };
  if (!url.starts_with("https://")) return bad("not an https:// URL");
  url.remove_prefix(8);
  const size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  https_url out;
  out.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  if (authority.find('@') != std::string_view::npos) return bad("user information (user@host) is not supported");
  std::string_view port;
  if (authority.starts_with("[")) {   // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address without its closing ]");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(":")) return bad("a host followed by neither :PORT nor /");
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return bad("no host");
  out.port = "443";
  if (!port.empty()) {
    int number = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (ec != std::errc{} || end != port.data() + port.size() || number < 1 || number > 65535) {
      return bad("the port must be 1..65535");
    }
    out.port = std::string(port);
  }
  return out;
}

base::result<std::string, jwks_error> read_jwks(const std::string& url, const jwks_trust& trust,
                                                 const std::atomic<bool>& stopping) {
  if (url.starts_with("file:")) return read_jwks_file(url);
  auto where = parse_https_url(url);
  if (!where.ok()) return where.error();
  try {
    return https_fetch(url, std::move(where).value(), stopping).run(trust);
  } catch (const std::exception& e) {   // Asio's constructors throw (a context OpenSSL cannot make)
    return jwks_error{jwks_errc::cannot_fetch, url + ": " + e.what()};
  }
}

}  // namespace ringlog::app
