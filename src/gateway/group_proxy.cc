// The HTTP client that passes group calls on to their coordinator (group_proxy.h): one
// connection per call (resolve, connect, a TLS handshake when the peer's door is https://, write,
// read, close), bounded by a connect timeout, an exchange timeout and a count of calls in flight.

#include "group_proxy.h"
#include "http_quotas.h"
#include "http_util.h"

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>

#include "ringlog/base/clock.h"
#include "ringlog/runtime/asio_context.h"
#include "ringlog/runtime/tls.h"
#include "ringlog/runtime/tls_socket.h"
#include "ringlog/security/forwarded_call.h"

namespace ringlog::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

/// Headers of the coordinator's answer that belong to its connection or that the answering broker
/// sets itself (RFC 9110 section 7.6.1 hop-by-hop fields, CORS, Server, Date, lengths).
bool hop_by_hop(std::string_view name) {
  static constexpr std::string_view dropped[] = {"connection", "keep-alive", "transfer-encoding", "content-length",
                                                 "content-type", "server", "date", "vary", "upgrade", "te",
                                                 "trailer", "proxy-connection"};
  for (auto d : dropped) {
    if (beast::iequals(name, d)) return true;
  }
  return name.size() >= 12 && beast::iequals(name.substr(0, 12), "access-contr");   // Access-Control-*
}

class exchange : public std::enable_shared_from_this<exchange> {
 public:
  exchange(asio::io_context& io, std::shared_ptr<std::atomic<int64_t>> in_flight, uint64_t answer_bytes_max,
           std::shared_ptr<SSL_CTX> tls, std::function<void(forward_result)> done)
      : resolver_(io),
        stream_(io),
        caller_timer_(io),
        tls_context_(std::move(tls)),
        in_flight_(std::move(in_flight)),
        done_(std::move(done)) {
    parser_.body_limit(answer_bytes_max);
    parser_.header_limit(64 * 1024);
  }
  ~exchange() { --*in_flight_; }

  void start(const http_request& request, const forward_target& target, int32_t node_id,
             const std::vector<std::byte>& secret, int64_t metadata_offset, int64_t timeout_ms,
             std::function<bool()> caller_connected) {
    timeout_ms_ = timeout_ms;
    const std::string_view method = request.method == "HEAD" ? std::string_view("GET") : std::string_view(request.method);
    request_.method_string(method);
    // An access token is this node's own: the peer could not check it, and it should not cross
    // the network (the principal it stands for goes in forwarded_principal_header instead).
    const std::string target_sent = without_query_parameter(request.target, "access_token");
    request_.target(target_sent);
    request_.version(11);
    request_.set(http::field::host, request.host.empty() ? target.host + ":" + std::to_string(target.port) : request.host);
    if (!request.content_type.empty()) request_.set(http::field::content_type, request.content_type);
    if (!request.accept.empty()) request_.set(http::field::accept, request.accept);
    if (!request.last_event_id.empty()) request_.set("Last-Event-ID", request.last_event_id);
    // Basic and Bearer pass as they are (the coordinator checks them again when the call carries
    // no proof: no forwarding secret yet). The caller this node authenticated, whatever way it
    // did (a session cookie and an access token are this node's own: never passed on), is named
    // for the coordinator, which believes it only from a call the proof covers.
    if (!request.authorization.empty()) request_.set(http::field::authorization, request.authorization);
    if (!request.forwarded_principal.empty()) request_.set(forwarded_principal_header, request.forwarded_principal);
    request_.set(forwarded_header, std::to_string(node_id));
    // Read-your-writes across nodes: the peer authorizes once its image is at least this new.
    if (metadata_offset >= 0) request_.set(forwarded_metadata_offset_header, std::to_string(metadata_offset));
    // The coordinator authorizes (ACL hosts) and accounts quotas for the client, not this broker.
    if (!request.forwarded_for.empty()) request_.set(forwarded_for_header, request.forwarded_for);
    // The client's scheme, for the coordinator's base_uri and self links (a peer's word passes on).
    const std::string_view proto = request.https || request.forwarded_proto == "https" ? "https" : "";
    if (!proto.empty()) request_.set(forwarded_proto_header, proto);
    if (!request.client_id.empty()) request_.set(client_id_header, request.client_id);
    request_.set(http::field::connection, "close");
    request_.body() = request.body;
    // The proof that this broker sent it (security/forwarded_call.h), over what was set above.
    if (!secret.empty()) {
      const std::string node = std::to_string(node_id);
      const int64_t now_ms = base::system_clock().now_ms();
      request_.set(forwarded_proof_header,
                   security::sign_forwarded_call(secret, {node, method, target_sent, request.forwarded_for,
                                                          proto, request.forwarded_principal, request.body}, now_ms));
    }
    request_.prepare_payload();
    stream_.expires_after(std::chrono::milliseconds(proxy_limits::connect_timeout_ms));
    host_ = target.host;
    use_tls_ = target.tls;
    watch_caller(std::move(caller_connected));
    resolver_.async_resolve(target.host, std::to_string(target.port),
                            [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type found) {
                              if (ec) return self->fail("resolve: " + ec.message());
                              self->connect(found);
                            });
  }

 private:
  /// Asks `caller_connected` every proxy_limits::caller_check_interval_ms until the exchange
  /// ends; once the client is gone the exchange is closed (http_forwarder::forward).
  void watch_caller(std::function<bool()> caller_connected) {
    if (!caller_connected) return;
    caller_connected_ = std::move(caller_connected);
    arm_caller_check();
  }

  void arm_caller_check() {
    caller_timer_.expires_after(std::chrono::milliseconds(proxy_limits::caller_check_interval_ms));
    caller_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->done_) return;   // cancelled: the exchange ended
      if (self->caller_connected_()) return self->arm_caller_check();
      self->fail("the client closed its connection");
      // The pending resolve, connect, handshake, write or read ends with operation_aborted; its
      // own fail() finds `done_` taken. The coordinator's watch read sees this socket close.
      self->resolver_.cancel();
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      self->stream_.close();
    });
  }

  void connect(const tcp::resolver::results_type& found) {
    stream_.async_connect(found, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
      if (ec == beast::error::timeout) {
        return self->fail("connect: no answer within " + std::to_string(proxy_limits::connect_timeout_ms) + " ms");
      }
      if (ec) return self->fail("connect: " + ec.message());
      if (self->use_tls_) return self->handshake();
      self->write(self->stream_);
    });
  }

  /// The peer's door is https://: its certificate must chain to the client context's truststore
  /// (no host name check, as on the cluster listener: peers are often named by address). The
  /// connect timeout covers the handshake.
  void handshake() {
    if (!tls_context_) {
      return fail("its HTTP listener is https:// and this broker has no TLS client context (no ssl.truststore.location)");
    }
    tls_.emplace(stream_, SSL_new(tls_context_.get()));
    boost::system::error_code not_address;
    (void)asio::ip::make_address(host_, not_address);
    if (not_address) SSL_set_tlsext_host_name(tls_->native_handle(), host_.c_str());   // SNI for a name only
    tls_->async_handshake(asio::ssl::stream_base::client, [self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return self->fail("TLS handshake: " + runtime::tls_failure_reason(ec));
      self->write(*self->tls_);
    });
  }

  template <typename Stream>
  void write(Stream& stream) {
    stream_.expires_after(std::chrono::milliseconds(timeout_ms_));
    http::async_write(stream, request_, [self = shared_from_this(), &stream](beast::error_code wec, size_t) {
      self->sent_ = true;
      if (wec) return self->fail("send: " + wec.message());
      self->read(stream);
    });
  }

  template <typename Stream>
  void read(Stream& stream) {
    // A forwarded records read answers up to max_bytes: read it 64 KiB at a time, not 512 bytes.
    buffer_.reserve(beast_read_bytes_max);
    http::async_read(stream, buffer_, parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec == beast::error::timeout) {
        return self->fail("no answer within " + std::to_string(self->timeout_ms_) + " ms");
      }
      if (ec == http::error::body_limit) return self->fail("its answer is larger than this broker accepts");
      if (ec) return self->fail("read: " + ec.message());
      self->answer();
    });
  }

  void answer() {
    auto& msg = parser_.get();
    forward_result r;
    r.answered = true;
    r.sent = true;
    r.response.status = msg.result_int();
    auto type = msg.find(http::field::content_type);
    r.response.content_type = type == msg.end() ? std::string() : std::string(type->value());
    for (const auto& field : msg) {
      if (hop_by_hop(field.name_string())) continue;
      r.response.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    r.response.body = std::move(msg.body());
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    finish(std::move(r));
  }

  void fail(std::string why) {
    forward_result r;
    r.sent = sent_;
    r.failure = std::move(why);
    finish(std::move(r));
  }

  void finish(forward_result r) {
    if (!done_) return;
    auto done = std::move(done_);
    done_ = nullptr;
    caller_timer_.cancel();   // lets go of this exchange now, not at the next check
    done(std::move(r));
  }

  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  asio::steady_timer caller_timer_;         // the next ask of caller_connected_
  std::function<bool()> caller_connected_;  // unset: the client is not watched
  std::shared_ptr<SSL_CTX> tls_context_;   // null without a TLS client context
  std::optional<asio::ssl::stream<beast::tcp_stream&>> tls_;   // over stream_, for an https:// peer
  std::string host_;
  bool use_tls_ = false;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response_parser<http::string_body> parser_;
  std::shared_ptr<std::atomic<int64_t>> in_flight_;
  std::function<void(forward_result)> done_;
  int64_t timeout_ms_ = 0;
  bool sent_ = false;
};

class beast_forwarder final : public http_forwarder {
 public:
  beast_forwarder(runtime::shard_threads& runtime, int32_t node_id, int64_t answer_bytes_max,
                  std::shared_ptr<runtime::reloading_tls_context> tls_client, forwarding_secret_fn secret,
                  applied_metadata_offset_fn applied_offset)
      : runtime_(runtime),
        node_id_(node_id),
        answer_bytes_max_(static_cast<uint64_t>(answer_bytes_max)),
        tls_client_(std::move(tls_client)),
        secret_(std::move(secret)),
        applied_offset_(std::move(applied_offset)) {}

  void forward(const http_request& request, const forward_target& target, int64_t timeout_ms,
               std::function<void(forward_result)> done, std::function<bool()> caller_connected) override {
    if (in_flight_->fetch_add(1) >= proxy_limits::in_flight_max) {
      --*in_flight_;
      forward_result r;
      r.failure = "this broker already passes on " + std::to_string(proxy_limits::in_flight_max) +
                  " group calls (limit proxy_limits::in_flight_max)";
      return done(std::move(r));
    }
    asio::io_context& io = runtime::io_context_of(runtime_, runtime_.current_shard());
    auto x = std::make_shared<exchange>(io, in_flight_, answer_bytes_max_,
                                        target.tls && tls_client_ ? tls_client_->current() : nullptr, std::move(done));
    x->start(request, target, node_id_, secret_(), applied_offset_ ? applied_offset_() : -1, timeout_ms,
             std::move(caller_connected));
  }

  [[nodiscard]] int64_t in_flight() const override { return in_flight_->load(); }

 private:
  runtime::shard_threads& runtime_;
  int32_t node_id_;
  uint64_t answer_bytes_max_;
  std::shared_ptr<runtime::reloading_tls_context> tls_client_;
  forwarding_secret_fn secret_;
  applied_metadata_offset_fn applied_offset_;
  std::shared_ptr<std::atomic<int64_t>> in_flight_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace

std::unique_ptr<http_forwarder> make_http_forwarder(runtime::shard_threads& runtime, int32_t node_id,
                                                    int64_t answer_bytes_max,
                                                    std::shared_ptr<runtime::reloading_tls_context> tls_client,
                                                    forwarding_secret_fn secret, applied_metadata_offset_fn applied_offset) {
  return std::make_unique<beast_forwarder>(runtime, node_id, answer_bytes_max, std::move(tls_client), std::move(secret),
                                           std::move(applied_offset));
}

}  // namespace ringlog::gateway
