#include "ringlog/cli/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>
#include <vector>

namespace ringlog::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct http_client::impl {
  /// The --bootstrap-server list, tried in turn from `current` on each new connection.
  std::vector<http_endpoint> endpoints;
  size_t current = 0;
  std::string host;
  std::string port;
  asio::io_context context;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  int64_t timeout_ms = 120000;

  /// Connects to the first endpoint that answers, from the current one on (as Kafka's tools walk
  /// bootstrap.servers); the error names every one tried.
  std::optional<std::string> connect() {
    std::string failures;
    for (size_t tried = 0; tried < endpoints.size(); ++tried) {
      const auto& e = endpoints[(current + tried) % endpoints.size()];
      host = e.host;
      port = e.port;
      auto err = connect_one();
      if (!err) {
        current = (current + tried) % endpoints.size();
        return std::nullopt;
      }
      failures += (failures.empty() ? "" : "; ") + *err;
    }
    return endpoints.size() == 1 ? failures + ": is `ringlog serve` running there? --bootstrap-server names another"
                                 : "no bootstrap server answered (" + failures + ")";
  }

  std::optional<std::string> connect_one() {
    beast::error_code ec;
    tcp::resolver resolver(context);
    auto endpoints = resolver.resolve(host, port, ec);
    if (ec) return "cannot resolve the broker address " + host + ":" + port + " (" + ec.message() + ")";
    stream.emplace(context);
    stream->expires_after(std::chrono::milliseconds(timeout_ms));
    stream->connect(endpoints, ec);
    if (ec) {
      stream.reset();
      return "cannot connect to a broker at " + host + ":" + port + " (" + ec.message() + ")";
    }
    // A request is written as header + body; without TCP_NODELAY Nagle holds the last partial
    // segment of a large body until the server's delayed ACK (40 ms on Linux), as curl and
    // Kafka's clients know (they set it too).
    stream->socket().set_option(tcp::no_delay(true), ec);
    buffer.clear();
    return std::nullopt;
  }

  // One attempt on the current connection; nullopt error means the reply is in `out`.
  std::optional<std::string> exchange(const http::request<http::string_body>& req, http_reply& out) {
    beast::error_code ec;
    stream->expires_after(std::chrono::milliseconds(timeout_ms));
    http::write(*stream, req, ec);
    if (ec) return "send: " + ec.message();
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<uint64_t>::max());
    http::read(*stream, buffer, parser, ec);
    if (ec) return "receive: " + ec.message();
    auto& res = parser.get();
    out.status = res.result_int();
    if (auto it = res.find(http::field::content_type); it != res.end()) out.content_type = std::string(it->value());
    out.body = std::move(res.body());
    if (!res.keep_alive()) stream.reset();
    return std::nullopt;
  }
};

base::result<http_endpoint, std::string> parse_base_url(const std::string& base_url) {
  std::string_view url = base_url;
  if (url.substr(0, 7) != "http://") {
    // Kafka's tools take HOST:PORT of the Kafka listener; the CLI talks to the HTTP one.
    return "bootstrap server \"" + base_url + "\" must start with http://: the CLI talks to a broker's HTTP listener " +
           "(listeners=http://HOST:PORT, e.g. http://127.0.0.1:8082), not to its kafka:// one";
  }
  url.remove_prefix(7);
  if (size_t slash = url.find('/'); slash != std::string_view::npos) url = url.substr(0, slash);
  size_t colon = url.rfind(':');
  http_endpoint e;
  if (colon == std::string_view::npos) {
    e.host = std::string(url);
    e.port = "80";
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
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
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
  return std::unique_ptr<http_client>(new http_client(std::move(p)));
}

std::string http_client::base_url() const { return "http://" + impl_->host + ":" + impl_->port; }

http_client::http_client(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
http_client::~http_client() = default;

void http_client::set_timeout_ms(int64_t ms) { impl_->timeout_ms = ms; }

http_client::reply_result http_client::request(const std::string& method, const std::string& path,
                                               const std::string& body, const std::string& content_type,
                                               const std::string& accept) {
  http::request<http::string_body> req(http::string_to_verb(method), path, 11);
  req.set(http::field::host, impl_->host + ":" + impl_->port);
  req.set(http::field::user_agent, "ringlog-cli");
  if (!accept.empty()) req.set(http::field::accept, accept);
  if (!content_type.empty()) req.set(http::field::content_type, content_type);
  req.keep_alive(true);
  req.body() = body;
  req.prepare_payload();
  // A kept-alive connection may have been closed by the server meanwhile: retry once, fresh.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool fresh = !impl_->stream.has_value();
    if (fresh) {
      if (auto err = impl_->connect()) return *err;
    }
    http_reply out;
    auto err = impl_->exchange(req, out);
    if (!err) return out;
    impl_->stream.reset();
    if (fresh) return *err;
  }
  return std::string("request failed");
}

}  // namespace ringlog::cli
