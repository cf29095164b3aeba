#pragma once
// A small synchronous HTTP/1.1 client for the CLI (`ringlog topics|produce|consume`): one
// keep-alive connection to the broker's REST listener, reopened once when the server closed it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringlog/base/result.h"

namespace ringlog::cli {

struct http_reply {
  unsigned status = 0;
  std::string content_type;
  std::string body;
  int64_t retry_after_s = -1;   // Retry-After (seconds) when the answer has one, else -1
};

/// Host and port of a broker's REST listener.
struct http_endpoint {
  std::string host;
  std::string port;
  /// https://: TLS, the server's certificate checked against RINGLOG_CA_FILE (a PEM file of CA
  /// certificates; default the system's) and its host name; RINGLOG_TLS_INSECURE=1 skips the check.
  bool tls = false;
};

/// "http://HOST[:PORT][/...]" or "https://..." -> host and port (80 / 443 when absent). Errors name the malformed part
/// (a bare HOST:PORT gets a hint naming the HTTP listener's form).
base::result<http_endpoint, std::string> parse_base_url(const std::string& base_url);
/// --bootstrap-server: one URL or several separated by commas ("http://a:8081,http://b:8082"),
/// as Kafka's bootstrap.servers; items are trimmed of blanks ("http://a, http://b") and empty ones
/// skipped. Errors name the first malformed one.
base::result<std::vector<http_endpoint>, std::string> parse_bootstrap_servers(const std::string& list);

/// Default of --request-timeout-ms: the longest wait for a connection and then for a reply, ms
/// (a long-poll request's own "timeout=" is added to it).
constexpr int64_t default_request_timeout_ms = 10000;
/// Capacity of a connection's read buffer, bytes: Beast reads at most this much per read_some
/// (64 KiB is its own cap), so an answer of N bytes costs about N / 64 KiB reads.
constexpr size_t response_read_bytes = 65536;

class http_client {
 public:
  using reply_result = base::result<http_reply, std::string>;

  /// `base_urls` is "http://HOST:PORT" (a trailing "/" is fine) or several separated by commas:
  /// each new connection goes to the first that accepts it, from the last one used on (Kafka's
  /// tools walk bootstrap.servers so). Errors name the malformed part.
  static base::result<std::unique_ptr<http_client>, std::string> create(const std::string& base_urls);
  ~http_client();

  /// "http://HOST:PORT" of the server in use (the last one connected to, else the first listed).
  [[nodiscard]] std::string base_url() const;

  /// Sends one request; `path` includes any query. Errors are transport errors ("127.0.0.1:8081:
  /// no answer within 10000 ms"), naming each server tried; HTTP error statuses are replies. A GET
  /// (idempotent) that gets no answer, or a connection closed without one, is retried on the next
  /// server of the list; other methods are not resent once sent. A 429 with Retry-After (a client
  /// quota's throttle, issue 31: nothing of the request was done) is waited out and sent again,
  /// at most throttled_resends_max times, each wait at most throttled_wait_s_max, with a line on
  /// stderr; the last 429 is the reply.
  reply_result request(const std::string& method, const std::string& path, const std::string& body = {},
                       const std::string& content_type = {}, const std::string& accept = "application/json");
  reply_result get(const std::string& path, const std::string& accept = "application/json") {
    return request("GET", path, {}, {}, accept);
  }
  reply_result post(const std::string& path, const std::string& body, const std::string& content_type,
                    const std::string& accept = "application/json") {
    return request("POST", path, body, content_type, accept);
  }
  reply_result patch(const std::string& path, const std::string& body, const std::string& content_type = "application/json") {
    return request("PATCH", path, body, content_type);
  }
  reply_result del(const std::string& path) { return request("DELETE", path); }

  /// Longest wait for a connection, and then for one reply, ms (default_request_timeout_ms); a
  /// long-poll request adds its own "timeout=" query value to the wait for its reply.
  void set_timeout_ms(int64_t ms);

  struct impl;

 private:
  /// One request as request() describes it, without waiting out a 429.
  reply_result request_once(const std::string& method, const std::string& path, const std::string& body,
                            const std::string& content_type, const std::string& accept);
  explicit http_client(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace ringlog::cli
