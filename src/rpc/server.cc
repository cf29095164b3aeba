#include "ringlog/rpc/server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <set>

#include "ringlog/base/assert.h"
#include "ringlog/base/logfmt.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/rpc/constants.h"
#include "ringlog/runtime/acceptor.h"
#include "ringlog/runtime/frame_read.h"
#include "ringlog/runtime/asio_context.h"
#include "ringlog/runtime/constants.h"
#include "ringlog/runtime/log_rate_limit.h"
#include "ringlog/runtime/tls_socket.h"

namespace ringlog::rpc {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using shard_timer = asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                                               runtime::shard_executor>;

/// Kafka's UNSUPPORTED_VERSION error code.
constexpr int16_t unsupported_version_code = 35;
constexpr int16_t api_versions_key = protocol::api_versions_request_data::api_key;

namespace {

int32_t read_be32(const std::array<std::byte, 4>& b) {
  return static_cast<int32_t>((static_cast<uint32_t>(b[0]) << 24) | (static_cast<uint32_t>(b[1]) << 16) |
                              (static_cast<uint32_t>(b[2]) << 8) | static_cast<uint32_t>(b[3]));
}

/// The ApiVersions answer: the supported list, with `error_code` (0, or 35 for an api or version
/// this listener cannot serve).
bytes api_versions_frame(int16_t api_version, int32_t correlation_id, int16_t error_code) {
  protocol::api_versions_response_data body;
  body.error_code = error_code;
  for (const auto& api : protocol::supported_apis()) {
    protocol::api_versions_response_data::api_version v;
    v.api_key = api.api_key;
    v.min_version = api.lowest_version;
    v.max_version = api.highest_version;
    body.api_keys.push_back(v);
  }
  protocol::writer w;
  auto written = protocol::encode_response_frame(w, api_version, correlation_id, body);
  RINGLOG_ASSERT(written.ok(), "ApiVersionsResponse must encode");
  return std::move(w).take();
}

/// The client id of a request frame: request header v1 and v2 both hold it as a nullable int16
/// string at bytes 8.. (after api key, api version, correlation id). "" when null or cut short.
std::string peek_client_id(std::span<const std::byte> frame) {
  constexpr size_t at = 8;
  if (frame.size() < at + 2) return "";
  const auto length = static_cast<int16_t>((static_cast<uint16_t>(frame[at]) << 8) | static_cast<uint16_t>(frame[at + 1]));
  if (length < 0 || frame.size() < at + 2 + static_cast<size_t>(length)) return "";
  return std::string(reinterpret_cast<const char*>(frame.data() + at + 2), static_cast<size_t>(length));
}

}  // namespace

struct connection;

struct server::impl : std::enable_shared_from_this<server::impl> {
  impl(runtime::shard_threads& rt_, size_t shard_index, std::shared_ptr<runtime::reloading_tls_context> t,
       listener_admission a)
      : rt(rt_), shard(shard_index), context(runtime::io_context_of(rt_, shard_index)), tls(std::move(t)),
        admission(std::move(a)) {}

  runtime::shard_threads& rt;
  size_t shard;
  asio::io_context& context;
  std::shared_ptr<runtime::acceptor> acceptor;   // accepts and serves on `shard`
  /// The TLS form of the cluster listener (mutual: a peer without a certificate the truststore
  /// signs fails the handshake, before any request); nullptr = plaintext.
  std::shared_ptr<runtime::reloading_tls_context> tls;
  listener_admission admission;
  std::map<int16_t, request_handler> handlers;
  std::function<void(const std::string&)> connection_closed;
  std::function<std::optional<std::string>(std::string_view)> client_check;
  server::peer_check peer_check;
  std::set<std::shared_ptr<connection>> connections;
  std::atomic<size_t> connection_count{0};
  uint64_t accepted = 0;          // connections accepted so far: each one's accept order
  bool at_bound_logged = false;   // the connections_max warning of this episode is out
  /// First-request deadline closes since the last warning, and when that was (steady ms; < 0 = never).
  uint64_t deadline_closes = 0;
  int64_t deadline_warning_ms = -1;
  /// Refusals by reason: when the last line about it was logged (steady ms) and how many came
  /// since. A refused broker redials several times a second: 650 lines in 47 s hid everything
  /// else in its peers' logs (session 32's new user). One line per reason per
  /// deadline_warning_interval_ms, with the count.
  std::map<std::string, std::pair<int64_t, uint64_t>> refusals;
  /// Whether a refusal for `reason` is logged now; `suppressed` gets the refusals not logged since.
  bool log_refusal_now(const std::string& reason, uint64_t& suppressed);
  /// Failed TLS handshakes are logged at most once per interval (a scanner would flood the log).
  runtime::log_rate_limit handshake_failures{runtime::constants::tls_handshake_warning_interval_ms};
  std::atomic<uint16_t> bound_port{0};
  bool stopped = false;

  void adopt(runtime::shard_socket socket, runtime::connection_slot slot);
  /// At connections_max: closes the oldest connection that has sent no request; false when every
  /// open one has (the new one is refused then).
  bool make_room();
  /// Counts a connection closed by the first-request deadline; one warning per interval at most.
  void note_deadline_close(const std::string& why);
  /// Closes the listener and every connection; TLS ones with a session up and no answer being
  /// written send close_notify first (bounded by runtime::constants::tls_close_notify_timeout_ms).
  /// `all_gone` runs once every TCP socket is closed.
  void close_all(std::function<void()> all_gone);
};

/// One request's answer, shared by the copies of its respond_fn (connection::make_respond): used
/// at most once. When the last copy goes without a call, the handler discarded the request
/// (raft's inbound queue full or the request's deadline passed, an encode failure): the
/// connection gets its slot of connection_in_flight_requests_max back. Before, each such request
/// held one for good, and 64 of them stopped the connection's reading (its peer's requests all
/// timed out) with the idle close never firing on a connection that looked busy.
struct response_slot {
  response_slot(std::weak_ptr<server::impl> o, std::weak_ptr<connection> c, int16_t key)
      : owner(std::move(o)), answers_on(std::move(c)), api_key(key) {}
  response_slot(const response_slot&) = delete;
  response_slot& operator=(const response_slot&) = delete;
  ~response_slot();

  std::weak_ptr<server::impl> owner;
  std::weak_ptr<connection> answers_on;   // the connection the request came on
  int16_t api_key;
  std::atomic<bool> used{false};
};

/// One accepted connection: reads frames one after another, hands requests to handlers, writes
/// responses one at a time. Lives on the shard's thread only.
struct connection : std::enable_shared_from_this<connection> {
  connection(std::shared_ptr<server::impl> o, runtime::shard_socket s, runtime::connection_slot sl)
      : owner(std::move(o)), socket(std::move(s)), slot_in_limits(std::move(sl)),
        first_request_deadline(socket.get_executor()), idle_timer(socket.get_executor()) {
    boost::system::error_code ec;
    auto ep = socket.socket().remote_endpoint(ec);
    peer = ec ? std::string("unknown") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  std::weak_ptr<server::impl> owner;
  runtime::tls_socket socket;   // TLS over TCP on the TLS cluster listener
  runtime::connection_slot slot_in_limits;   // max.connections.per.ip, given back on close
  shard_timer first_request_deadline;         // connection.authentication.timeout.ms
  shard_timer idle_timer;                     // connections.max.idle.ms
  /// The last time bytes were read or an answer written.
  std::chrono::steady_clock::time_point last_active = std::chrono::steady_clock::now();
  uint64_t accept_order = 0;
  bool handshake_done = false;   // the TLS form: the handshake finished
  std::string peer;
  /// The client id of the last request header read (empty before the first).
  std::string client_id;
  /// The first request's client id passed the server's client check.
  bool admitted = false;
  std::array<std::byte, 4> size_prefix{};
  bytes frame;
  size_t in_flight = 0;
  bool reading = false;
  bool closed = false;
  std::deque<bytes> write_queue;
  bool writing = false;
  /// Set by close_with_notify (server::stop): close() sends TLS's close_notify, then runs it.
  std::function<void()> goodbye;

  void read_next() {
    // Requests with handlers and responses not yet written share the bound: a peer that sends but
    // does not read (paused, cut off) fills the socket, and reading stops instead of queueing.
    if (closed || reading || in_flight + write_queue.size() >= constants::connection_in_flight_requests_max) {
      return;  // at the bound reading pauses; a written response resumes it
    }
    reading = true;
    asio::async_read(socket, asio::buffer(size_prefix),
                     [self = shared_from_this()](boost::system::error_code ec, size_t) { self->on_size(ec); });
  }

  void on_size(boost::system::error_code ec) {
    if (closed) return;
    last_active = std::chrono::steady_clock::now();
    if (ec) {
      close(ec == asio::error::eof ? "" : "read failed: " + ec.message());
      return;
    }
    const int32_t size = read_be32(size_prefix);
    if (size <= 0 || size > protocol::limits::frame_bytes_max) {
      close("frame size " + std::to_string(size) + " outside 1.." + std::to_string(protocol::limits::frame_bytes_max) +
            " (socket.request.max.bytes)");
      return;
    }
    frame.clear();
    runtime::async_read_frame(socket, frame, static_cast<size_t>(size),
                              [self = shared_from_this()](boost::system::error_code ec2) { self->on_frame(ec2); });
  }

  void on_frame(boost::system::error_code ec) {
    reading = false;
    if (closed) return;
    last_active = std::chrono::steady_clock::now();
    if (ec) {
      close("read failed inside a frame: " + ec.message());
      return;
    }
    dispatch();
    read_next();
  }

  /// The server's client check on the first request (before its header is decoded: a Kafka
  /// client's ApiVersions may be of a version this codec does not know). False: refused, closed.
  bool admit() {
    admitted = true;
    first_request_deadline.cancel();
    auto o = owner.lock();
    if (!o || !o->client_check) return true;
    const std::string id = peek_client_id(frame);
    auto refusal = o->client_check(id);
    if (!refusal) return true;
    uint64_t suppressed = 0;
    if (!o->log_refusal_now(*refusal, suppressed)) {
      close("");
      return false;
    }
    const int16_t api_key = frame.size() >= 2 ? static_cast<int16_t>((static_cast<uint16_t>(frame[0]) << 8) |
                                                                     static_cast<uint16_t>(frame[1]))
                                              : int16_t{-1};
    spdlog::warn("msg=\"cluster connection refused\" peer={} client_id=\"{}\" api_key={} reason=\"{}\" "
                 "refused_since_last_line={}",
                 peer, base::logfmt_escaped(id), api_key, base::logfmt_escaped(*refusal), suppressed);
    close("");
    return false;
  }

  /// Hands the frame in `frame` to its handler, or answers it here.
  void dispatch() {
    if (!admitted && !admit()) return;
    auto header = protocol::decode_request_header(frame);
    if (!header.ok()) {
      const auto code = header.error().code;
      auto correlation = protocol::peek_correlation_id(frame);
      if ((code == protocol::errc::unknown_api_key || code == protocol::errc::unsupported_version) && correlation.ok()) {
        ++in_flight;
        make_respond(-1)(api_versions_frame(0, *correlation, unsupported_version_code));
        return;
      }
      close("malformed request header: " + header.error().message);
      return;
    }
    const auto& h = header->header;
    auto o = owner.lock();
    if (!o) {
      close("server stopped");
      return;
    }
    if (h.client_id && *h.client_id != client_id) client_id = *h.client_id;
    if (h.request_api_key == api_versions_key) {
      ++in_flight;
      make_respond(h.request_api_key)(api_versions_frame(h.request_api_version, h.correlation_id, 0));
      return;
    }
    auto handler = o->handlers.find(h.request_api_key);
    if (handler == o->handlers.end()) {
      ++in_flight;
      make_respond(h.request_api_key)(api_versions_frame(0, h.correlation_id, unsupported_version_code));
      return;
    }
    ++in_flight;
    const auto body = std::span<const std::byte>(frame).subspan(header->body_offset);
    handler->second(h, body, make_respond(h.request_api_key));
  }

  /// A respond_fn for request `api_key`: callable from any thread, effective once. Dropped
  /// without a call (response_slot), the request's in-flight slot is given back.
  respond_fn make_respond(int16_t api_key) {
    auto slot = std::make_shared<response_slot>(owner, weak_from_this(), api_key);
    return [slot](bytes response) {
      if (slot->used.exchange(true)) return;
      auto o = slot->owner.lock();
      if (!o) return;
      asio::post(o->context, [weak = slot->answers_on, response = std::move(response)]() mutable {
        if (auto self = weak.lock()) self->on_response(std::move(response));
      });
    };
  }

  /// A handler let go of request `api_key`'s respond_fn without answering (response_slot): the
  /// slot is free again; the sender's own deadline answers it. One line per api key per
  /// deadline_warning_interval_ms.
  void on_dropped(int16_t api_key) {
    RINGLOG_ASSERT_OP(in_flight, >, 0U);
    --in_flight;
    if (closed) return;
    uint64_t suppressed = 0;
    auto o = owner.lock();
    if (o && o->log_refusal_now("unanswered api_key=" + std::to_string(api_key), suppressed)) {
      spdlog::info("msg=\"cluster request dropped unanswered by its handler\" peer={} client_id=\"{}\" api_key={} "
                   "dropped_since_last_line={}",
                   peer, base::logfmt_escaped(client_id), api_key, suppressed);
    }
    read_next();
  }

  void on_response(bytes response) {
    RINGLOG_ASSERT_OP(in_flight, >, 0U);
    --in_flight;
    if (closed) return;
    if (auto refused = as_close_connection(response)) return close_unservable(*refused);
    RINGLOG_ASSERT_OP(write_queue.size(), <=, constants::connection_write_queue_max);
    write_queue.push_back(std::move(response));
    write_next();
    read_next();
  }

  /// A handler's close_connection_frame (transport.h): the request cannot be served, so the
  /// connection closes, as Kafka's SocketServer closes one whose request it cannot parse. One
  /// warning per api key and version per deadline_warning_interval_ms (a peer that redials and
  /// sends it again must not flood the log), with the count of those not logged.
  void close_unservable(const close_connection_request& refused) {
    uint64_t suppressed = 0;
    auto o = owner.lock();
    const std::string key = "unservable request api_key=" + std::to_string(refused.api_key) +
                            " api_version=" + std::to_string(refused.api_version);
    if (o && o->log_refusal_now(key, suppressed)) {
      spdlog::warn("msg=\"cluster connection closed: a request it cannot serve\" peer={} client_id=\"{}\" api_key={} "
                   "api_version={} error=\"{}\" closed_since_last_line={}",
                   peer, base::logfmt_escaped(client_id), refused.api_key, refused.api_version,
                   base::logfmt_escaped(refused.why), suppressed);
    }
    close("");
  }

  void write_next() {
    if (writing || write_queue.empty() || closed) return;
    writing = true;
    asio::async_write(socket, asio::buffer(write_queue.front()),
                      [self = shared_from_this()](boost::system::error_code ec, size_t) {
                        self->writing = false;
                        if (self->closed) return;
                        if (ec) {
                          self->close("write failed: " + ec.message());
                          return;
                        }
                        self->write_queue.pop_front();
                        self->last_active = std::chrono::steady_clock::now();
                        self->write_next();
                        self->read_next();
                      });
  }

  /// TLS handshake first on the TLS cluster listener: a stranger (no certificate, or one the
  /// truststore does not sign) is closed with a log line and never reaches a handler. Both forms:
  /// the first-request deadline and the idle deadline start now (listener_admission).
  void start(const std::shared_ptr<runtime::reloading_tls_context>& tls, const listener_admission& admission) {
    if (admission.authentication_timeout_ms > 0) arm_first_request_deadline(admission.authentication_timeout_ms);
    if (admission.idle_ms > 0) arm_idle(admission.idle_ms);
    if (!tls) return read_next();
    socket.use_tls(tls->current());
    socket.async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](boost::system::error_code ec) {
      if (self->closed) return;
      if (ec) {
        uint64_t suppressed = 0;
        const std::string why = runtime::tls_failure_reason(ec);
        auto o = self->owner.lock();
        if (o && !o->handshake_failures.admit(why, suppressed)) return self->close("");
        return self->close("TLS handshake failed on the cluster listener (CLUSTER): " + why +
                           runtime::handshakes_not_logged(suppressed));
      }
      self->handshake_done = true;
      if (!self->peer_admitted()) return;
      self->read_next();
    });
  }

  /// connection.authentication.timeout.ms: no complete first request (on the TLS form: no
  /// finished handshake, or no first request after it) this long after accept closes the
  /// connection, counted as an authentication_timeout refusal: an idle connect cannot hold a
  /// descriptor (the breaker's fd_exhaust.py: 19,800 silent connections took every fd).
  void arm_first_request_deadline(int64_t timeout_ms) {
    first_request_deadline.expires_after(std::chrono::milliseconds(timeout_ms));
    first_request_deadline.async_wait([self = shared_from_this(), timeout_ms](boost::system::error_code ec) {
      if (ec || self->closed || self->admitted) return;
      auto o = self->owner.lock();
      if (!o) return;
      if (o->admission.limits) {
        o->admission.limits->count_refusal("CLUSTER", runtime::connection_refusal::authentication_timeout);
      }
      const bool tls_pending = o->tls && !self->handshake_done;
      const std::string why = std::string(tls_pending ? "TLS handshake" : "no complete first request") +
                              " within connection.authentication.timeout.ms=" + std::to_string(timeout_ms);
      o->note_deadline_close(why);
      self->close("");
    });
  }

  /// Whether the connection does anything now: a request with its handler, or bytes waiting in
  /// the socket that were not read yet. Answers queued or being written that the peer does not
  /// take are no work: a peer that sends and never reads is idle (Kafka's Selector counts only
  /// completed reads and writes).
  bool busy() {
    if (in_flight > 0) return true;
    boost::system::error_code ec;
    return socket.socket().available(ec) > 0 && !ec;
  }

  /// connections.max.idle.ms (Kafka's Selector closes idle channels, the inter-broker ones too):
  /// wakes when the connection would have been idle `idle_ms`; closes it when nothing was read
  /// or written since and it is not busy(), else sleeps again.
  void arm_idle(int64_t idle_ms) {
    const auto idle = std::chrono::milliseconds(idle_ms);
    const auto now = std::chrono::steady_clock::now();
    idle_timer.expires_at(busy() ? now + idle : std::max(last_active + idle, now + std::chrono::milliseconds(1)));
    idle_timer.async_wait([self = shared_from_this(), idle_ms](boost::system::error_code ec) {
      if (ec || self->closed) return;
      const bool quiet = std::chrono::steady_clock::now() - self->last_active >= std::chrono::milliseconds(idle_ms);
      if (!quiet || self->busy()) return self->arm_idle(idle_ms);
      spdlog::info("msg=\"cluster connection closed\" peer={} client_id=\"{}\" reason=\"idle for "
                   "connections.max.idle.ms={} (no request or answer)\"",
                   self->peer, base::logfmt_escaped(self->client_id), idle_ms);
      self->close("");
    });
  }

  /// The server's peer check (issue 30: only brokers and controllers use the cluster listener).
  /// False: refused, logged, closed.
  bool peer_admitted() {
    auto o = owner.lock();
    if (!o || !o->peer_check) return true;
    const std::string subject = runtime::peer_subject(socket.native_tls()).value_or("");
    boost::system::error_code ec;
    auto ep = socket.socket().remote_endpoint(ec);
    auto refusal = o->peer_check(subject, ec ? std::string("unknown") : ep.address().to_string());
    if (!refusal) return true;
    uint64_t suppressed = 0;
    if (o->log_refusal_now(subject + " " + *refusal, suppressed)) {
      spdlog::warn("msg=\"cluster connection refused\" peer={} subject=\"{}\" error=CLUSTER_AUTHORIZATION_FAILED "
                   "reason=\"{}\" refused_since_last_line={}",
                   peer, base::logfmt_escaped(subject), base::logfmt_escaped(*refusal), suppressed);
    }
    close("");
    return false;
  }

  /// Closes the socket; `reason` empty = the peer closed cleanly (not worth a warning).
  void close(const std::string& reason) {
    if (closed) return;
    closed = true;
    if (!reason.empty()) {
      spdlog::warn("msg=\"cluster connection closed\" peer={} reason=\"{}\"", peer, base::logfmt_escaped(reason));
    }
    first_request_deadline.cancel();
    idle_timer.cancel();
    slot_in_limits.release();
    if (goodbye) {
      send_close_notify();
    } else {
      socket.close();
    }
    write_queue.clear();
    if (auto o = owner.lock()) {
      o->connections.erase(shared_from_this());
      o->connection_count.store(o->connections.size(), std::memory_order_relaxed);
      if (o->connection_closed && !client_id.empty() && !o->stopped) o->connection_closed(client_id);
    }
  }

  /// Whether a controlled shutdown can say goodbye in TLS (close_with_notify): a TLS session is
  /// up and no answer is being written (close_notify must not cut into its records).
  [[nodiscard]] bool tls_goodbye_possible() const { return !closed && handshake_done && socket.is_tls() && !writing; }

  /// server::stop's close of a TLS connection: as close(""), but TLS's close_notify goes out
  /// first; `after` runs once the socket is closed.
  void close_with_notify(std::function<void()> after) {
    goodbye = std::move(after);
    close("");
  }

  /// The pending read is cancelled (its handler finds `closed` and does nothing), then, after it
  /// has run, close_notify and the wait for the peer's, cut short by the timer; then the close.
  void send_close_notify() {
    boost::system::error_code ignored;
    socket.socket().cancel(ignored);
    auto timer = std::make_shared<shard_timer>(socket.get_executor());
    timer->expires_after(std::chrono::milliseconds(runtime::constants::tls_close_notify_timeout_ms));
    timer->async_wait([self = shared_from_this()](boost::system::error_code ec) {
      boost::system::error_code ignored2;
      if (!ec) self->socket.socket().cancel(ignored2);   // a peer that never sends its close_notify
    });
    asio::post(socket.get_executor(), [self = shared_from_this(), timer] {
      self->socket.async_shutdown([self, timer](boost::system::error_code) {
        timer->cancel();
        self->socket.close();
        if (auto after = std::exchange(self->goodbye, nullptr)) after();
      });
    });
  }
};

response_slot::~response_slot() {
  if (used.load()) return;
  auto o = owner.lock();
  if (!o) return;
  asio::post(o->context, [weak = answers_on, key = api_key] {
    if (auto self = weak.lock()) self->on_dropped(key);
  });
}

void server::impl::adopt(runtime::shard_socket socket, runtime::connection_slot slot) {
  if (stopped) return;
  boost::system::error_code nodelay_ec;
  socket.set_option(tcp::no_delay(true), nodelay_ec);
  const auto bound = static_cast<size_t>(std::max<int64_t>(admission.connections_max, 0));
  if (bound > 0 && connections.size() >= bound && !make_room()) {
    if (admission.limits) admission.limits->count_refusal("CLUSTER", runtime::connection_refusal::max_connections);
    return;   // every open connection is a peer's: the new one closes as `socket` goes
  }
  if (bound > 0 && at_bound_logged && connections.size() < bound / 2) at_bound_logged = false;
  auto c = std::make_shared<connection>(shared_from_this(), std::move(socket), std::move(slot));
  c->accept_order = ++accepted;
  connections.insert(c);
  connection_count.store(connections.size(), std::memory_order_relaxed);
  c->start(tls, admission);
}

bool server::impl::make_room() {
  if (!at_bound_logged) {
    at_bound_logged = true;
    spdlog::warn("msg=\"cluster listener at its connection bound\" listener=CLUSTER "
                 "listener.name.cluster.max.connections={} open={} action=\"a new connection takes the place of the "
                 "oldest one that has sent no request; refused when every open one has\"",
                 admission.connections_max, connections.size());
  }
  std::shared_ptr<connection> oldest;
  for (const auto& c : connections) {
    if (!c->admitted && (!oldest || c->accept_order < oldest->accept_order)) oldest = c;
  }
  if (!oldest) return false;
  if (admission.limits) admission.limits->count_refusal("CLUSTER", runtime::connection_refusal::max_connections);
  spdlog::debug("msg=\"cluster connection closed\" peer={} reason=\"no request yet and the listener is at "
                "listener.name.cluster.max.connections={}\"",
                oldest->peer, admission.connections_max);
  oldest->close("");
  return true;
}

namespace {
/// The steady clock in ms: the warning intervals of the listener measure on it.
int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool server::impl::log_refusal_now(const std::string& reason, uint64_t& suppressed) {
  const int64_t now = steady_now_ms();
  // Bounded: a reason is the peer's name or subject and a fixed text; past this many the map
  // starts over (a storm of distinct strangers is logged a line each, then again).
  if (refusals.size() >= constants::refusal_reasons_tracked_max) refusals.clear();
  auto [it, fresh] = refusals.try_emplace(reason, now, 0);
  if (!fresh && now - it->second.first < constants::deadline_warning_interval_ms) {
    ++it->second.second;
    return false;
  }
  suppressed = it->second.second;
  it->second = {now, 0};
  return true;
}

void server::impl::note_deadline_close(const std::string& why) {
  ++deadline_closes;
  const int64_t now = steady_now_ms();
  if (deadline_warning_ms >= 0 && now - deadline_warning_ms < constants::deadline_warning_interval_ms) return;
  spdlog::warn("msg=\"cluster connections closed\" listener=CLUSTER reason=\"{}\" closed={} warning_interval_ms={}",
               base::logfmt_escaped(why), deadline_closes, constants::deadline_warning_interval_ms);
  deadline_warning_ms = now;
  deadline_closes = 0;
}

void server::impl::close_all(std::function<void()> all_gone) {
  stopped = true;
  acceptor->close();
  // `left` starts at 1 for this loop itself.
  auto left = std::make_shared<size_t>(1);
  auto one_gone = [left, all_gone = std::move(all_gone)] {
    if (--*left == 0) all_gone();
  };
  auto open = connections;  // close() erases from the set
  for (const auto& c : open) {
    if (c->tls_goodbye_possible()) {
      ++*left;
      c->close_with_notify(one_gone);
    } else {
      c->close("");
    }
  }
  one_gone();
}

result<std::unique_ptr<server>> server::listen(runtime::shard_threads& rt, size_t shard, const std::string& host,
                                               uint16_t port, std::shared_ptr<runtime::reloading_tls_context> tls,
                                               listener_admission admission) {
  auto p = std::make_shared<impl>(rt, shard, std::move(tls), admission);
  runtime::acceptor_options accept;
  accept.name = "CLUSTER";
  accept.host = host;
  accept.port = port;
  accept.accept_shard = shard;
  accept.serve_shard = shard;
  accept.limits = admission.limits;
  auto bound = runtime::acceptor::listen(rt, std::move(accept));
  if (!bound.ok()) return error{errc::listen_failed, "cluster listener " + bound.error()};
  p->acceptor = std::move(bound).value();
  p->bound_port.store(p->acceptor->port());
  return std::unique_ptr<server>(new server(std::move(p)));
}

server::server(std::shared_ptr<impl> p) : impl_(std::move(p)) {}

server::~server() {
  // The loop may already be gone (runtime stopped): close here without it then.
  if (!impl_->stopped) {
    impl_->stopped = true;
    impl_->acceptor->close();
  }
}

void server::set_handler(int16_t api_key, request_handler handler) { impl_->handlers[api_key] = std::move(handler); }

void server::set_client_check(std::function<std::optional<std::string>(std::string_view client_id)> refusal) {
  impl_->client_check = std::move(refusal);
}

void server::set_peer_check(peer_check refusal) { impl_->peer_check = std::move(refusal); }

void server::set_connection_closed_handler(std::function<void(const std::string& client_id)> handler) {
  impl_->connection_closed = std::move(handler);
}

request_handler server::handler(int16_t api_key) const {
  auto it = impl_->handlers.find(api_key);
  return it == impl_->handlers.end() ? request_handler{} : it->second;
}

void server::start() {
  impl_->acceptor->start([weak = std::weak_ptr<impl>(impl_)](size_t, runtime::shard_socket socket,
                                                             runtime::connection_slot slot) {
    if (auto p = weak.lock()) p->adopt(std::move(socket), std::move(slot));
  });
}

void server::stop() {
  if (impl_->rt.current_shard() == impl_->shard) {
    impl_->close_all([] {});   // this thread runs the loop: the goodbyes finish after the return
    return;
  }
  std::promise<void> done;
  asio::post(impl_->context, [p = impl_, &done] { p->close_all([&done] { done.set_value(); }); });
  done.get_future().wait();
}

uint16_t server::port() const { return impl_->bound_port.load(); }

size_t server::open_connections() const { return impl_->connection_count.load(std::memory_order_relaxed); }

}  // namespace ringlog::rpc
