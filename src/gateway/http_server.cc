// Beast sessions: read one request, hand it to the api, write its response (whole or chunked,
// one write at a time), then read the next (keep-alive) or close.

#include "ringlog/gateway/http_server.h"

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <utility>

#include <unistd.h>

#include "api.h"
#include "authorization.h"
#include "base64.h"
#include "ringlog/runtime/acceptor.h"
#include "ringlog/runtime/asio_context.h"
#include "errors.h"
#include "group_proxy.h"
#include "http_auth.h"
#include "http_util.h"
#include "ws_session.h"

namespace ringlog::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

/// A response that went out before its request's body ended (a produce stream that ended early)
/// is followed by a lingering close (RFC 9112 section 9.6): the server stops sending, then reads
/// and drops what the client still sends for at most this long and this many bytes, so the
/// client's remaining body is not answered with a reset that could destroy the response before
/// the client read it.
constexpr int64_t http_linger_close_ms = 2'000;
constexpr size_t http_linger_close_bytes_max = 1024 * 1024;
/// The bytes of a WebSocket upgrade's Sec-WebSocket-Key once base64-decoded (RFC 6455 4.1), and
/// its length as text: base64 with its padding (RFC 4648 section 4), "==" ending 16 bytes.
constexpr size_t websocket_key_nonce_bytes = 16;
constexpr size_t websocket_key_text_bytes = 24;

class session;

struct http_server::impl {
  broker::broker& broker;
  runtime::shard_threads& runtime;
  server_options options;
  metrics registry;
  std::unique_ptr<http_forwarder> forwarder;   // before `routes`, which holds a pointer to it
  api routes;
  /// Accepts on shard 0, round robin over the shards, admitting by options.connection_limits;
  /// nullptr when there is no http:// listener (https:// only).
  std::shared_ptr<runtime::acceptor> acceptor;
  std::atomic<bool> stopping = false;
  std::atomic<int64_t> in_flight = 0;   // requests read and not yet fully answered
  std::atomic<int64_t> open_connections = 0;   // HTTP sessions; WebSocket ones are in `websockets`
  std::shared_ptr<ws_shared_state> websockets = std::make_shared<ws_shared_state>();
  std::mutex sessions_mutex;            // guards `sessions` (accept and close paths only)
  std::list<std::weak_ptr<session>> sessions;

  impl(broker::broker& b, runtime::shard_threads& r, server_options o, api_options ao)
      : broker(b),
        runtime(r),
        options(std::move(o)),
        forwarder(make_http_forwarder(r, b.config().node_id, proxy_limits::answer_bytes_max(options.fetch_response_bytes_max),
                                      options.peer_tls_client, [&b] { return b.forwarding_secret(); },
                                      [&b] { return b.applied_metadata_offset(); })),
        routes(b, registry, with_forwarder(std::move(ao), forwarder.get())) {}
  ~impl() {
    if (acceptor) acceptor->close();
  }

  static api_options with_forwarder(api_options ao, http_forwarder* f) {
    ao.forwarder = f;
    return ao;
  }

  /// Serves one connection (accepted here, or the plaintext side of an https:// tunnel) on the
  /// shard whose executor `socket` has, or refuses it past http.connections.max.
  /// `tunnel_peer`: the TLS client's "ip:port" when the connection comes from the https front;
  /// empty for a connection accepted here. `slot`: its place in the connection limits (the
  /// https front holds the tunnel's), kept as long as the session.
  void serve(runtime::shard_socket socket, std::string tunnel_peer = {}, runtime::connection_slot slot = {});
  void remove_dead_sessions();
};

class session final : public std::enable_shared_from_this<session>, public response_sink {
 public:
  session(runtime::shard_socket socket, http_server::impl& server, std::string tunnel_peer, runtime::connection_slot slot)
      : stream_(std::move(socket)),
        server_(server),
        https_(!tunnel_peer.empty()),
        peer_(std::move(tunnel_peer)),
        slot_(std::move(slot)) {
    ++server_.open_connections;
  }
  ~session() override { --server_.open_connections; }

  void start() {
    beast::error_code ec;
    if (!https_) {   // the https front named its client; its socketpair end has no address
      const auto remote = stream_.socket().remote_endpoint(ec);
      if (!ec) peer_ = remote.address().to_string() + ":" + std::to_string(remote.port());
    }
    read_header();
  }

  /// Graceful stop: an idle connection closes now, a busy one after its response.
  void close_if_idle() {
    close_after_response_ = true;
    if (!busy_) {
      beast::error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream_.close();
    }
  }

  // ---- response_sink (connection thread only, except post)
  void post(std::function<void()> fn) override { asio::post(stream_.get_executor(), std::move(fn)); }
  void post_after(int64_t delay_ms, std::function<void()> fn) override {
    auto timer = std::make_shared<asio::steady_timer>(stream_.get_executor(), std::chrono::milliseconds(delay_ms));
    timer->async_wait([timer, fn = std::move(fn)](beast::error_code) { fn(); });
  }

  void respond(http_response r) override {
    if (r.delay_ms > 0) {   // a refused login's answer (http_response::delay_ms): a timer, not a sleep
      const int64_t delay_ms = std::exchange(r.delay_ms, 0);
      return post_after(delay_ms, [self = shared_from_this(), r = std::move(r)]() mutable { self->respond(std::move(r)); });
    }
    auto msg = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), version_);
    fill_head(*msg, r);
    msg->body() = std::move(r.body);
    msg->prepare_payload();
    // RFC 9110 section 8.6: no Content-Length on a 1xx or 204, and on a 304 only the length the
    // 200 would have had; these have no content, so none is the honest answer.
    if (r.status < 200 || r.status == 204 || r.status == 304) msg->erase(http::field::content_length);
    if (head_request_) msg->body().clear();   // Content-Length stays the GET body's (RFC 9110 9.3.2)
    // r.hold (a record answer's bytes, response_budget.h) lives as long as the write: given back
    // when it completes or fails (the connection closed).
    http::async_write(stream_, *msg, [self = shared_from_this(), msg, hold = std::move(r.hold)](beast::error_code ec, size_t) {
      self->after_response(ec);
    });
  }

  void begin_stream(http_response head) override {
    streaming_ = true;
    header_message_ = std::make_unique<http::response<http::empty_body>>(static_cast<http::status>(head.status), version_);
    fill_head(*header_message_, head);
    header_message_->chunked(true);
    header_serializer_ = std::make_unique<http::response_serializer<http::empty_body>>(*header_message_);
    queue_.push_back({write_kind::header, {}, {}});
    write_next();
  }
  void write_chunk(std::string data) override {
    if (data.empty()) return;   // an empty chunk would end the body
    queue_.push_back({write_kind::chunk, std::move(data), {}});
    write_next();
  }
  void end_stream() override {
    queue_.push_back({write_kind::last, {}, {}});
    write_next();
  }

  void read_body_piece(std::function<void(std::string piece, bool done, bool ok)> got) override {
    if (!body_streaming_ || !parser_ || parser_->is_done()) {
      post([got = std::move(got)] { got({}, true, true); });
      return;
    }
    http::async_read_some(stream_, buffer_, *parser_, [self = shared_from_this(), got = std::move(got)](
                                                          beast::error_code ec, size_t) {
      if (ec) return got({}, true, false);
      std::string piece = std::move(self->parser_->get().body());
      self->parser_->get().body().clear();
      got(std::move(piece), self->parser_->is_done(), true);
    });
  }

  void watch_disconnect() override {
    // A produce stream's route reads the body itself; no watch may read beside it.
    if (body_streaming_) return;
    watching_ = true;
    arm_watch();
  }
  [[nodiscard]] bool disconnected() const override { return disconnected_ || stream_failed_ || closed_; }
  [[nodiscard]] std::function<bool()> connected_check() override {
    return [gone = gone_] { return !gone->load(std::memory_order_acquire); };
  }
  void write_chunk_then(std::string data, std::function<void(bool)> written) override {
    if (disconnected()) {
      post([written = std::move(written)] { written(false); });
      return;
    }
    if (data.empty()) {   // an empty chunk would end the body
      post([written = std::move(written)] { written(true); });
      return;
    }
    queue_.push_back({write_kind::chunk, std::move(data), std::move(written)});
    write_next();
  }

 private:
  enum class write_kind { header, chunk, last };
  struct pending_write {
    write_kind kind;
    std::string data;
    std::function<void(bool)> written;   // optional: told when the write completes or fails
  };

  /// Bytes asked for per watch read while a watched answer is pending (watch_disconnect). What a
  /// client sends meanwhile is the next request of its connection (HTTP/1.1 pipelining): it is
  /// kept in buffer_ and served once this answer is sent (read_header finds it there).
  static constexpr size_t watch_read_bytes = 4096;
  /// Bytes a watch keeps of the requests that follow before it stops reading: a request's line
  /// and headers fit in 64 KiB (http.request.header.bytes.max's default is smaller), and whatever
  /// follows stays in the socket (TCP flow control holds the client back) until this answer is
  /// sent. Past it the client leaving is no longer noticed while the answer is pending.
  static constexpr size_t watch_held_bytes_max = 64 * 1024;

  /// One watch read (watch_disconnect): ends the answer's watch with disconnected_ when the
  /// client closed its side, else keeps what came in buffer_ and reads again. Once the answer is
  /// sent (read_next_request), the read in flight is cancelled and the next request served.
  void arm_watch() {
    if (closed_ || !watching_ || buffer_.size() >= watch_held_bytes_max) return;
    watch_reading_ = true;
    stream_.socket().async_read_some(buffer_.prepare(watch_read_bytes), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->watch_reading_ = false;
      self->buffer_.commit(n);
      if (self->closed_) return;
      if (!self->watching_) return self->read_header();   // the answer went out meanwhile
      if (ec) {
        self->disconnected_ = true;
        self->gone_->store(true, std::memory_order_release);
        self->watching_ = false;
        return;
      }
      self->arm_watch();
    });
  }

  /// After a watched answer, before the next request is read: a watch read in flight must end
  /// first (two reads of one socket may not overlap), then it reads the next request itself.
  void read_next_request() {
    watching_ = false;
    if (!watch_reading_) return read_header();
    beast::error_code ignored;
    stream_.socket().cancel(ignored);   // the watch read ends (operation_aborted) and calls read_header
  }

  template <typename Message>
  void fill_head(Message& msg, const http_response& r) {
    msg.set(http::field::server, "ringlog");
    if (!r.content_type.empty()) msg.set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) msg.insert(name, value);
    msg.keep_alive(keep_alive_ && !close_after_response_ && !server_.stopping);
  }

  void read_header() {
    busy_ = false;
    head_request_ = false;
    if (close_after_response_ || server_.stopping) return close();
    parser_.emplace();
    parser_->body_limit(server_.options.body_bytes_max);
    parser_->header_limit(server_.options.header_bytes_max);
    if (buffer_.size() > 0) return read_rest_of_header();   // a pipelined request's first bytes are here
    // Idle until a request's first bytes come (http.idle.timeout.ms); from then its line and
    // headers have http.request.header.timeout.ms (read_rest_of_header).
    stream_.expires_after(std::chrono::milliseconds(server_.options.idle_timeout_ms));
    constexpr size_t first_read_bytes = 4096;
    stream_.async_read_some(buffer_.prepare(first_read_bytes), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) return self->on_read_error(ec);
      self->buffer_.commit(n);
      self->read_rest_of_header();
    });
  }

  /// A slow-header client (slowloris: a byte every few seconds) held a place of
  /// http.connections.max for the whole idle timeout; its request line and headers now have
  /// http.request.header.timeout.ms from the first byte, then a 408 naming the key and a close.
  void read_rest_of_header() {
    // Not the stream's own timeout: Beast closes the socket on it, and the 408 could not be sent.
    stream_.expires_after(std::chrono::milliseconds(server_.options.idle_timeout_ms));
    header_timed_out_ = false;
    struct header_deadline {
      asio::steady_timer timer;
      bool read_done = false;   // the read's handler ran: a deadline queued meanwhile does nothing
    };
    auto deadline = std::make_shared<header_deadline>(header_deadline{
        asio::steady_timer(stream_.get_executor(), std::chrono::milliseconds(server_.options.header_timeout_ms))});
    deadline->timer.async_wait([self = shared_from_this(), deadline](beast::error_code ec) {
      if (ec || deadline->read_done) return;   // the headers came (or the read failed) first
      self->header_timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);   // the read ends with operation_aborted; on_read_error answers 408
    });
    http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this(), deadline](beast::error_code ec, size_t) {
      deadline->read_done = true;
      deadline->timer.cancel();
      if (ec) return self->on_read_error(ec);
      self->on_header(ec);
    });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    busy_ = true;
    ++server_.in_flight;
    auto& msg = parser_->get();
    if (refuse_bad_host(msg) || refuse_foreign_host(msg)) return;
    // curl and others wait for "100 Continue" before sending bodies over 1 KiB.
    if (auto it = msg.find(http::field::expect); it != msg.end() && beast::iequals(it->value(), "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, msg.version());
      http::async_write(stream_, *cont, [self = shared_from_this(), cont](beast::error_code wec, size_t) {
        if (wec) return self->abort_request();
        self->read_body_or_stream();
      });
      return;
    }
    read_body_or_stream();
  }

  /// A chunked POST to a v3 records route is a produce stream (Confluent's streaming mode): it is
  /// handed to the route before its body, which the route then reads piece by piece
  /// (read_body_piece), answering each record while the client is still sending.
  static bool is_produce_stream(const http::request<http::string_body>& msg) {
    if (msg.method() != http::verb::post || !msg.chunked()) return false;
    std::string_view path(msg.target().data(), msg.target().size());
    path = path.substr(0, path.find('?'));
    constexpr std::string_view prefix = "/v3/clusters/", suffix = "/records";
    return path.size() > prefix.size() + suffix.size() && path.substr(0, prefix.size()) == prefix &&
           path.substr(path.size() - suffix.size()) == suffix;
  }

  void read_body_or_stream() {
    if (!is_produce_stream(parser_->get())) return read_body();
    stream_.expires_never();
    const auto& msg = parser_->get();
    version_ = msg.version();
    keep_alive_ = msg.keep_alive();
    if (refuse_encoded_body(msg)) return;
    // The stream has no total size: the route bounds what it holds (unparsed text, records in
    // flight), and each record is checked against message.max.bytes.
    parser_->body_limit(boost::none);
    body_streaming_ = true;
    http_request req = request_from(msg);
    req.body_stream = true;
    server_.routes.handle(std::move(req), shared_from_this());
  }

  void read_body() {
    // Beast reads at most the buffer's free capacity per read_some (at least 512 bytes, at most
    // 64 KiB). A buffer sized for headers turned a 100 KiB produce body into dozens of reads,
    // each a syscall and a composed operation (a fifth of the produce path in profiles), so a
    // large body gets a 64 KiB buffer, kept for the connection's next requests.
    constexpr size_t large_body_bytes = 8192;
    if (auto length = parser_->content_length(); length && *length >= large_body_bytes &&
                                                 buffer_.capacity() < beast_read_bytes_max) {
      buffer_.reserve(beast_read_bytes_max);
    }
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->on_read_error(ec);
      self->dispatch();
    });
  }

  void on_read_error(beast::error_code ec) {
    bool counted = busy_;
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      if (!counted) ++server_.in_flight;
      busy_ = true;
      return respond_error(413, error_codes::payload_too_large,
                           "request body is larger than the limit http.request.body.max.bytes=" +
                               std::to_string(server_.options.body_bytes_max));
    }
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      if (!counted) ++server_.in_flight;
      busy_ = true;
      return respond_error(431, 43101, "request headers are larger than the limit http.request.header.max.bytes=" +
                                            std::to_string(server_.options.header_bytes_max));
    }
    if (std::exchange(header_timed_out_, false)) {
      keep_alive_ = false;
      if (!counted) ++server_.in_flight;
      busy_ = true;
      return respond_error(408, 40801, "the request line and headers did not arrive within http.request.header.timeout.ms=" +
                                           std::to_string(server_.options.header_timeout_ms) + " of its first byte");
    }
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::eof || ec == asio::error::bad_descriptor) {
      if (counted) --server_.in_flight;
      return close();
    }
    // A malformed request line or header: answer 400 and close, the stream is out of sync.
    keep_alive_ = false;
    if (!counted) ++server_.in_flight;
    busy_ = true;
    respond_error(400, error_codes::bad_request, "malformed HTTP request: " + ec.message());
  }

  void respond_error(unsigned status, int code, std::string message) {
    version_ = 11;
    http_response r = error_response(status, code, message);
    // Before routing the Origin header may not be parsed yet: "*" only when any origin may read.
    if (origin_allowed(server_.options.cors_allowed_origins, "")) r.headers.emplace_back("Access-Control-Allow-Origin", "*");
    respond(std::move(r));
  }

  void abort_request() {
    --server_.in_flight;
    close();
  }

  /// An Upgrade: websocket request (RFC 6455 section 4.2.1); Beast's handshake checks the rest.
  static bool is_websocket_upgrade(const http::request<http::string_body>& msg) {
    auto it = msg.find(http::field::upgrade);
    return msg.method() == http::verb::get && it != msg.end() && beast::iequals(it->value(), "websocket");
  }

  /// Hands the socket to a WebSocket session (ws_session.cc) after checking the path and Origin.
  void upgrade_to_websocket(http::request<http::string_body> msg) {
    version_ = msg.version();
    std::string target(msg.target());
    std::string path = target.substr(0, target.find('?'));
    if (path != "/v1/ws") {
      keep_alive_ = false;
      return respond_error(404, error_codes::not_found, "no WebSocket endpoint at " + path + "; use /v1/ws");
    }
    // RFC 6455 section 4.2.1: the key is the base64 of a 16-byte nonce, else 400 (Beast's
    // handshake refuses only a missing or over-long one; the breaker of session 29 got 101 for
    // an empty key; the one of session 30 for a key without its "==" padding).
    auto key = msg.find(http::field::sec_websocket_key);
    if (key == msg.end()) {
      keep_alive_ = false;
      return respond_error(400, error_codes::bad_request,
                           "a WebSocket upgrade needs a Sec-WebSocket-Key header (RFC 6455 section 4.2.1)");
    }
    auto nonce = base64_decode(std::string_view(key->value().data(), key->value().size()));
    if (!nonce || nonce->size() != websocket_key_nonce_bytes || key->value().size() != websocket_key_text_bytes) {
      keep_alive_ = false;
      return respond_error(400, error_codes::bad_request,
                           "Sec-WebSocket-Key '" + std::string(key->value().substr(0, 64)) +
                               "' is not the base64 of a 16-byte nonce (RFC 6455 section 4.2.1)");
    }
    if (!server_.broker.config().process_role_broker) {
      keep_alive_ = false;
      std::string brokers;   // as the HTTP routes' 421 (api.cc): the unfenced brokers' HTTP listeners
      for (const auto& d : server_.broker.admin().list_brokers()) {
        if (d.state != "unfenced" || d.host.empty()) continue;   // none: no HTTP listener
        brokers += (brokers.empty() ? "" : ", ") + std::string("http://") + d.host + ":" + std::to_string(d.port);
      }
      return respond_error(421, error_codes::misdirected_request,
                           "node " + std::to_string(server_.broker.config().node_id) +
                               " is a dedicated controller (process.roles=controller): it serves no records; open "
                               "/v1/ws on a broker: " + (brokers.empty() ? "none registered now" : brokers));
    }
    auto origin = msg.find(http::field::origin);
    auto host = msg.find(http::field::host);
    const std::string host_text = host == msg.end() ? std::string() : std::string(host->value());
    if (origin != msg.end() &&
        !origin_permitted(server_.options.cors_allowed_origins, std::string(origin->value()), host_text, https_)) {
      keep_alive_ = false;
      return respond_error(403, error_codes::forbidden,
                           "origin " + std::string(origin->value()) +
                               " is not in http.cors.allowed.origins (empty by default: only this server's own pages)");
    }
    // Issue 29: a browser's WebSocket cannot send Authorization; the session cookie or a
    // POST /v1/tokens token (?access_token=) does. Refused before the handshake: 401 over HTTP.
    security::kafka_principal principal;
    auth_outcome credential;
    if (const auto& auth = server_.routes.options().auth) {
      http_request req = request_from(msg);
      auto who = auth->authenticate(req, query_access_token(target));
      if (auto* refusal = std::get_if<http_response>(&who)) {
        keep_alive_ = false;
        return respond(std::move(*refusal));
      }
      credential = std::get<auth_outcome>(std::move(who));
      principal = credential.principal;
      const std::string host(msg[http::field::host]);
      if (credential.via == auth_via::session_cookie && origin != msg.end() &&
          !auth->session_origin_allowed(std::string(origin->value()), host)) {
        keep_alive_ = false;
        return respond_error(403, error_codes::forbidden,
                             "origin " + std::string(origin->value()) + " may not open a WebSocket with the session "
                             "cookie: only this server's own pages and http.cors.credentials.origins may");
      }
    }
    --server_.in_flight;
    closed_ = true;   // the socket is the WebSocket session's now
    ws_context ctx{&server_.broker, &server_.registry, server_.websockets, server_.forwarder.get(), principal,
                   peer_host(peer_), {}, server_.routes.options().auth};
    ctx.connection_slot = std::make_shared<runtime::connection_slot>(std::move(slot_));
    ctx.authorization = std::string(msg[http::field::authorization]);
    ctx.credential = std::move(credential);
    auto client_id = msg.find(client_id_header);
    ctx.client_id = client_id != msg.end() && !client_id->value().empty() ? std::string(client_id->value()) : ctx.host;
    start_ws_session(stream_.release_socket(), std::move(msg), ctx);
  }

  void dispatch() {
    stream_.expires_never();   // long-polls and streams may take longer than the idle timeout
    auto msg = parser_->release();
    if (is_websocket_upgrade(msg)) return upgrade_to_websocket(std::move(msg));
    version_ = msg.version();
    keep_alive_ = msg.keep_alive();
    if (refuse_encoded_body(msg)) return;
    http_request req = request_from(msg);
    req.body = std::move(msg.body());
    server_.routes.handle(std::move(req), shared_from_this());
  }

  /// The request line and the headers the routes use (not the body).
  http_request request_from(const http::request<http::string_body>& msg) {
    http_request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    auto header = [&](http::field f) {
      auto it = msg.find(f);
      return it == msg.end() ? std::string() : std::string(it->value());
    };
    req.content_type = header(http::field::content_type);
    req.accept = header(http::field::accept);
    req.origin = header(http::field::origin);
    req.access_control_request_headers = header(http::field::access_control_request_headers);
    req.host = header(http::field::host);
    if (auto it = msg.find("Last-Event-ID"); it != msg.end()) req.last_event_id = std::string(it->value());
    req.if_none_match = header(http::field::if_none_match);
    if (auto it = msg.find(forwarded_header); it != msg.end()) req.forwarded_by = std::string(it->value());
    if (auto it = msg.find(forwarded_for_header); it != msg.end()) req.forwarded_for = std::string(it->value());
    if (auto it = msg.find(forwarded_proto_header); it != msg.end()) req.forwarded_proto = std::string(it->value());
    if (auto it = msg.find(forwarded_principal_header); it != msg.end()) req.forwarded_principal = std::string(it->value());
    if (auto it = msg.find(forwarded_proof_header); it != msg.end()) req.forwarded_proof = std::string(it->value());
    if (auto it = msg.find(forwarded_metadata_offset_header); it != msg.end()) {
      req.forwarded_metadata_offset = std::string(it->value());
    }
    req.authorization = header(http::field::authorization);
    const auto cookies = msg.equal_range(http::field::cookie);   // RFC 6265 5.4: one header, HTTP/2 splits it
    for (auto it = cookies.first; it != cookies.second; ++it) req.cookie += (req.cookie.empty() ? "" : "; ") + std::string(it->value());
    if (auto it = msg.find("X-CSRF-Token"); it != msg.end()) req.csrf_token = std::string(it->value());
    if (auto it = msg.find("X-Requested-With"); it != msg.end()) req.requested_with = std::string(it->value());
    if (auto it = msg.find(client_id_header); it != msg.end()) req.client_id = std::string(it->value());
    req.peer = peer_;
    req.https = https_;
    head_request_ = msg.method() == http::verb::head;
    req.chunked = msg.chunked();
    return req;
  }

  /// RFC 9112 section 3.2: more than one Host header is 400 (which one names the server would be a
  /// guess, and a check of one with a route of the other is a bypass). An absolute-form target
  /// ("GET http://host:port/path") of the listener's scheme is served as its path with its
  /// authority as the Host (section 3.2.2: the server ignores the Host header then), so the Host
  /// the origin and DNS-rebinding checks read is the server the request names; another scheme is
  /// 400. True when it answered (and closes).
  bool refuse_bad_host(http::request<http::string_body>& msg) {
    const size_t hosts = msg.count(http::field::host);
    if (hosts > 1) {
      keep_alive_ = false;
      respond_error(400, error_codes::bad_request,
                    std::to_string(hosts) + " Host headers: a request names one (RFC 9112 section 3.2)");
      return true;
    }
    const std::string_view target(msg.target().data(), msg.target().size());
    if (target.empty() || target.front() == '/' || target == "*") return false;
    auto form = origin_form(target, https_);
    if (!form) {
      keep_alive_ = false;
      respond_error(400, error_codes::bad_request,
                    "request target '" + std::string(target.substr(0, 255)) + "' is not a path, or an absolute URL of " +
                        (https_ ? "https" : "http") + " (this listener's scheme) with a host[:port] (RFC 9112 section 3.2)");
      return true;
    }
    msg.target(form->first);
    msg.set(http::field::host, form->second);
    return false;
  }

  /// A browser's plaintext request whose Host names neither an address of this server nor one of
  /// its names (server_options::allowed_hosts) gets 403 and the connection closes: a page whose DNS name
  /// was rebound to this address is same-origin to the browser, sends no Origin on its GETs and
  /// its own name as Host on every call (the breaker of session 31 created, read and deleted
  /// topics that way). Only where that page would be let in: TLS needs no check (the browser
  /// would not accept this server's certificate for the page's name), nor does a server with
  /// HTTP authentication (the page has no credentials: the browser keeps cookies and Basic
  /// logins for the server's real name).
  /// A browser is known by what every one sends (an Origin, a Sec-Fetch-* header of the Fetch
  /// Metadata spec, a "Mozilla/" User-Agent); other clients (curl, Kafka REST clients, a raw
  /// socket's "Host: x") are not browsers and are not checked.
  bool refuse_foreign_host(const http::request<http::string_body>& msg) {
    if (https_ || server_.options.authentication.methods.enabled()) return false;
    auto agent = msg.find(http::field::user_agent);
    const bool browser = msg.find(http::field::origin) != msg.end() || msg.find("Sec-Fetch-Site") != msg.end() ||
                         msg.find("Sec-Fetch-Mode") != msg.end() ||
                         (agent != msg.end() && std::string_view(agent->value().data(), agent->value().size()).starts_with("Mozilla/"));
    if (!browser) return false;
    auto host = msg.find(http::field::host);
    const std::string_view value = host == msg.end() ? std::string_view() : std::string_view(host->value().data(), host->value().size());
    if (host_permitted(server_.options.allowed_hosts, value)) return false;
    keep_alive_ = false;
    respond_error(403, error_codes::forbidden,
                  "Host '" + std::string(value.substr(0, 255)) + "' is not a name of this server: add it to "
                  "http.allowed.hosts (IP addresses, localhost, this machine's host name and the listeners' hosts "
                  "need no entry; the check keeps DNS-rebinding pages out)");
    return true;
  }

  /// A body in a coding we do not decode must not reach the JSON parser ("not valid UTF-8") or be
  /// stored as it is: 415 for a Content-Encoding (RFC 9110 section 8.4.1), 501 for a transfer
  /// coding other than chunked and 400 for an empty one (RFC 9112 section 6.1). True when it answered.
  bool refuse_encoded_body(const http::request<http::string_body>& msg) {
    if (auto it = msg.find(http::field::content_encoding); it != msg.end() && !beast::iequals(it->value(), "identity")) {
      respond_error(415, error_codes::unsupported_media_type,
                    "Content-Encoding \"" + std::string(it->value()) + "\" is not supported; send the body uncompressed");
      return true;
    }
    if (auto it = msg.find(http::field::transfer_encoding); it != msg.end()) {
      // Where the body ends is unknown unless chunked is the only coding, so the bytes after the
      // head are not a next request: close (RFC 9112 section 6.3; the breakers of sessions 30 and
      // 31 hid a request in a gzip, an identity and an empty Transfer-Encoding's body).
      bool chunked = false;
      for (auto coding : http::token_list(it->value())) {
        chunked = beast::iequals(coding, "chunked");
        if (chunked) continue;
        keep_alive_ = false;
        respond_error(501, error_codes::not_implemented,
                      "Transfer-Encoding \"" + std::string(it->value()) + "\" is not supported; only chunked is");
        return true;
      }
      if (!chunked) {
        keep_alive_ = false;
        respond_error(400, error_codes::bad_request, "an empty Transfer-Encoding header: send chunked or none");
        return true;
      }
    }
    return false;
  }

  void after_response(beast::error_code ec) {
    --server_.in_flight;
    // A produce stream answered before its body ended: the rest of the body is not a request.
    const bool body_left = body_streaming_ && (!parser_ || !parser_->is_done());
    body_streaming_ = false;
    if (body_left && !ec && !server_.stopping) return linger_close();
    if (ec || body_left || !keep_alive_ || close_after_response_ || server_.stopping) return close();
    read_next_request();
  }

  void linger_close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::milliseconds(http_linger_close_ms));
    linger_buffer_.resize(16 * 1024);
    linger_read();
  }

  void linger_read() {
    stream_.async_read_some(asio::buffer(linger_buffer_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->lingered_bytes_ += n;
      if (ec || self->lingered_bytes_ > http_linger_close_bytes_max || self->server_.stopping) return self->close();
      self->linger_read();
    });
  }

  void write_next() {
    if (writing_ || queue_.empty()) return;
    writing_ = true;
    pending_write& w = queue_.front();
    auto done = [self = shared_from_this()](beast::error_code ec, size_t) { self->on_written(ec); };
    switch (w.kind) {
      case write_kind::header:
        http::async_write_header(stream_, *header_serializer_, done);
        break;
      case write_kind::chunk:
        asio::async_write(stream_, http::make_chunk(asio::buffer(w.data)), done);
        break;
      case write_kind::last:
        asio::async_write(stream_, http::make_chunk_last(), done);
        break;
    }
  }

  void on_written(beast::error_code ec) {
    writing_ = false;
    write_kind kind = queue_.front().kind;
    std::function<void(bool)> written = std::move(queue_.front().written);
    queue_.pop_front();
    if (ec) {
      // The client went away mid-stream: drop what is queued, the rest of the reports are lost
      // to it anyway (records already sent to the broker are still stored).
      std::deque<pending_write> dropped;
      dropped.swap(queue_);
      if (!stream_failed_) {
        stream_failed_ = true;
        --server_.in_flight;
      }
      close();
      if (written) written(false);
      for (auto& w : dropped) {
        if (w.written) w.written(false);
      }
      return;
    }
    if (written) written(true);
    if (kind == write_kind::last) {
      streaming_ = false;
      header_serializer_.reset();
      header_message_.reset();
      return after_response(ec);
    }
    write_next();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    gone_->store(true, std::memory_order_release);
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::basic_stream<tcp, runtime::shard_executor> stream_;
  http_server::impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  unsigned version_ = 11;
  bool https_ = false;          // came through the https front (tls_front)
  std::string peer_;            // the client's "ip:port", for audit lines and ACL hosts
  runtime::connection_slot slot_;   // its place in server_.options.connection_limits (issue 31)
  bool keep_alive_ = true;
  std::string linger_buffer_;   // linger_close's reads; empty until then
  size_t lingered_bytes_ = 0;
  bool head_request_ = false;   // the request being answered is a HEAD: send no body
  bool header_timed_out_ = false;   // read_rest_of_header's deadline cancelled the read: answered 408
  bool body_streaming_ = false; // the request is a produce stream whose body the route reads
  bool busy_ = false;
  bool close_after_response_ = false;
  bool closed_ = false;
  bool streaming_ = false;
  bool writing_ = false;
  bool stream_failed_ = false;
  bool disconnected_ = false;   // the watch read saw the client close
  bool watching_ = false;       // watch_disconnect's watch runs until the answer is sent
  bool watch_reading_ = false;  // a watch read is in flight
  /// disconnected_ or closed_, for other threads (connected_check).
  std::shared_ptr<std::atomic<bool>> gone_ = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<http::response<http::empty_body>> header_message_;
  std::unique_ptr<http::response_serializer<http::empty_body>> header_serializer_;
  std::deque<pending_write> queue_;
};

void http_server::impl::remove_dead_sessions() {
  sessions.remove_if([](const std::weak_ptr<session>& w) { return w.expired(); });
}

void http_server::impl::serve(runtime::shard_socket socket, std::string tunnel_peer, runtime::connection_slot slot) {
  if (open_connections.load() + websockets->open.load() >= options.connections_max) {
    // Refuse politely: a short 503 naming the limit, then close.
    static const std::string refusal =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
        "Content-Length: 76\r\n\r\n{\"error_code\":50301,\"message\":\"too many connections: http.connections.max\"}\n";
    beast::error_code ignored;
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(refusal), ignored);
    socket.close(ignored);
  } else if (!stopping) {
    auto s = std::make_shared<session>(std::move(socket), *this, std::move(tunnel_peer), std::move(slot));
    {
      std::lock_guard lock(sessions_mutex);
      if (sessions.size() % 64 == 0) remove_dead_sessions();
      sessions.push_back(s);
    }
    s->post([s] { s->start(); });
  }
}

namespace {
/// Waits (on shard 0) until no request is in flight or the drain deadline passes.
struct drainer : std::enable_shared_from_this<drainer> {
  drainer(http_server::impl* server, std::function<void()> done)
      : server(server),
        done(std::move(done)),
        deadline(std::chrono::steady_clock::now() + std::chrono::milliseconds(server->options.drain_timeout_ms)),
        timer(runtime::io_context_of(server->runtime, 0)) {}
  void check() {
    int64_t left = server->in_flight.load() + server->websockets->open.load();
    if (left <= 0 || std::chrono::steady_clock::now() >= deadline) {
      if (left > 0) spdlog::warn("stopping with {} requests still in flight", left);
      done();
      return;
    }
    timer.expires_after(std::chrono::milliseconds(5));
    timer.async_wait([self = shared_from_this()](beast::error_code) { self->check(); });
  }
  http_server::impl* server;
  std::function<void()> done;
  std::chrono::steady_clock::time_point deadline;
  asio::steady_timer timer;
};
}  // namespace

base::result<std::unique_ptr<http_server>, std::string> http_server::start(broker::broker& broker,
                                                                           runtime::shard_threads& runtime,
                                                                           server_options options) {
  const broker::broker_config& bc = broker.config();
  api_options ao;
  ao.limits.records_max = bc.produce_records_max;
  ao.limits.record_bytes_max = bc.message_max_bytes;
  ao.fetch_wait_max_ms = bc.fetch_wait_max_ms;
  ao.fetch_response_bytes_max = options.fetch_response_bytes_max;
  ao.cors_allowed_origins = options.cors_allowed_origins;
  ao.extra_metrics = options.extra_metrics;
  if (options.authentication.methods.enabled()) ao.auth = std::make_shared<http_authenticator>(options.authentication);
  ao.fsync_latency = [&runtime] {
    io::latency_histogram::snapshot all;
    for (size_t shard = 0; shard < runtime.shard_count(); ++shard) all += runtime.disk(shard).datasync_latency().read();
    return all;
  };
  auto p = std::make_unique<impl>(broker, runtime, options, ao);
  if (!options.listen) return std::unique_ptr<http_server>(new http_server(std::move(p)));   // https:// only
  auto bound = runtime::acceptor::listen(runtime, {.name = "HTTP", .host = options.host, .port = options.port,
                                                  .listen_fd = options.listen_fd, .accept_shard = 0,
                                                  .serve_shard = std::nullopt, .limits = options.connection_limits,
                                                  .buffers = options.socket_buffers});
  if (!bound.ok()) return bound.error();
  p->acceptor = std::move(bound).value();
  impl* i = p.get();
  p->acceptor->start([i](size_t, runtime::shard_socket socket, runtime::connection_slot slot) {
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (!i->stopping) i->serve(std::move(socket), {}, std::move(slot));
  });
  return std::unique_ptr<http_server>(new http_server(std::move(p)));
}

base::result<int, std::string> bind_listener(const std::string& host, uint16_t port) {
  beast::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  const std::string where = host + ":" + std::to_string(port);
  if (ec) return "listener host \"" + host + "\" is not an IP address: " + ec.message();
  asio::io_context io;
  tcp::acceptor acceptor(io);
  const tcp::endpoint endpoint(address, port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (ec) return "bind " + where + ": " + ec.message();
  // Bound, not listening: until start() listens, a client's connect is refused (as before any
  // socket existed) instead of waiting in the backlog of a broker still opening its logs.
  const int fd = acceptor.release(ec);
  if (ec) return "listen " + where + ": " + ec.message();
  return fd;
}

http_server::http_server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
http_server::~http_server() = default;

void http_server::serve_connection(size_t shard, int fd, std::string peer) {
  impl* i = impl_.get();
  asio::post(runtime::io_context_of(i->runtime, shard), [i, shard, fd, peer = std::move(peer)]() mutable {
    runtime::shard_socket socket(runtime::io_context_of(i->runtime, shard).get_executor());
    beast::error_code ec;
    // A stream socket of another family (the tunnel's AF_UNIX end): reads, writes and shutdown
    // are the same system calls; nothing here asks it for TCP options or addresses.
    socket.assign(tcp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      return;
    }
    if (i->stopping) return;   // closes as it goes out of scope
    i->serve(std::move(socket), peer.empty() ? std::string("unknown") : std::move(peer));
  });
}

uint16_t http_server::port() const { return impl_->acceptor ? impl_->acceptor->port() : 0; }

void http_server::stop(std::function<void()> drained) {
  impl* i = impl_.get();
  i->stopping = true;
  i->websockets->stopping = true;
  i->routes.set_stopping();
  asio::post(runtime::io_context_of(i->runtime, 0), [i, drained = std::move(drained)]() mutable {
    if (i->acceptor) i->acceptor->close();
    {
      std::lock_guard lock(i->sessions_mutex);
      for (auto& w : i->sessions) {
        if (auto s = w.lock()) s->post([s] { s->close_if_idle(); });
      }
    }
    // Poll the in-flight count: requests finish on their own shards.
    auto d = std::make_shared<drainer>(i, std::move(drained));
    d->check();
  });
}

}  // namespace ringlog::gateway
