#include "ringlog/rpc/client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <future>
#include <map>
#include <set>

#include <sys/ioctl.h>
#include <linux/sockios.h>

#include "ringlog/base/assert.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/rpc/constants.h"
#include "ringlog/runtime/asio_context.h"
#include "ringlog/runtime/tls.h"
#include "ringlog/runtime/tls_socket.h"

namespace ringlog::rpc {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using timer_type = asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                                              runtime::shard_executor>;

namespace {

int32_t read_be32(const std::array<std::byte, 4>& b) {
  return static_cast<int32_t>((static_cast<uint32_t>(b[0]) << 24) | (static_cast<uint32_t>(b[1]) << 16) |
                              (static_cast<uint32_t>(b[2]) << 8) | static_cast<uint32_t>(b[3]));
}

}  // namespace

struct client::impl : std::enable_shared_from_this<client::impl> {
  impl(runtime::shard_threads& rt_, size_t shard_index, std::string h, uint16_t p, std::string id,
       std::shared_ptr<runtime::reloading_tls_context> tls_context, std::string name)
      : rt(rt_), shard(shard_index), context(runtime::io_context_of(rt_, shard_index)), host(std::move(h)),
        port(p), client_id(std::move(id)), tls(std::move(tls_context)), peer_name(std::move(name)),
        socket(context.get_executor()), backoff_timer(context.get_executor()), connect_timer(context.get_executor()) {}

  enum class state { idle, connecting, connected, backoff };

  struct pending_request {
    response_callback done;
    int16_t api_key = 0;
    int16_t api_version = 0;
    std::unique_ptr<timer_type> timer;
  };

  runtime::shard_threads& rt;
  size_t shard;
  asio::io_context& context;
  std::string host;
  uint16_t port;
  std::string client_id;
  /// The cluster listener's TLS form (mutual certificates): the context this node's certificate
  /// and the cluster's CA come from; nullptr = plaintext.
  std::shared_ptr<runtime::reloading_tls_context> tls;
  std::string peer_name;          // "node 3" for log lines; may be empty
  /// Protocol-mismatch diagnosis (warn_mismatch): a response arrived on the current connection;
  /// connections in a row that ended before their first response (or their TLS handshake);
  /// the causes already logged since the last response, with when each was last logged.
  bool answered = false;
  /// Some connection to this peer was answered since this client started: the peer speaks this
  /// node's protocol (and took its certificate), so closes before an answer now are most likely
  /// the peer's connection bound (note_silent_close).
  bool answered_before = false;
  int silent_closes = 0;
  std::map<std::string, std::chrono::steady_clock::time_point> causes_logged;
  runtime::shard_socket socket;   // while connecting
  /// Once connected: the socket, with TLS over it when `tls` is set. Reads and writes go here.
  /// Shared with every operation in flight on it: a composed write or read that has more bytes
  /// to move after a reset_socket() calls the stream again (then closed, so it fails at once),
  /// and must not find it freed (a use-after-free seen under MALLOC_PERTURB_ in test_rpc).
  std::shared_ptr<runtime::tls_socket> stream;
  runtime::shard_socket& tcp_socket() { return stream ? stream->socket() : socket; }
  timer_type backoff_timer;
  timer_type connect_timer;
  state st = state::idle;
  bool stopped = false;
  /// Bumped whenever the socket is closed, so completions of an older connection are ignored.
  uint64_t generation = 0;
  int64_t backoff_ms = constants::connect_backoff_initial_ms;
  int32_t next_correlation_id = 1;
  std::map<int32_t, pending_request> pending;
  /// Frames not yet written, by correlation id, in send order.
  std::deque<std::pair<int32_t, bytes>> unsent;
  bool writing = false;
  std::array<std::byte, 4> size_prefix{};
  bytes frame;

  [[nodiscard]] std::string where() const { return host + ":" + std::to_string(port); }
  [[nodiscard]] std::string named() const { return (peer_name.empty() ? "" : peer_name + " at ") + where(); }

  /// One warning per peer and cause, repeated at most every cause_repeat_ms while it lasts (a
  /// node that waits for ever says why in its recent log too), until the peer answers again: what
  /// failed and its likely cause. Without it a node whose cluster listener's protocol differs from
  /// its peers' logged only "waiting for the metadata quorum"; the peers logged the TLS failure.
  void warn_mismatch(const std::string& cause, const std::string& what, const std::string& likely) {
    const auto now = std::chrono::steady_clock::now();
    auto [it, first] = causes_logged.try_emplace(cause, now);
    if (!first && now - it->second < std::chrono::milliseconds(cause_repeat_ms)) return;
    it->second = now;
    spdlog::warn("msg=\"cluster connection failed\" peer=\"{}\" error=\"{}\" likely_cause=\"{}\"", named(), what,
                 likely);
  }

  /// How a connection ended before its first answer: during the TLS handshake, after it (the peer
  /// took this node's certificate, then refused its principal), or on plaintext.
  enum class silent_close : int8_t { tls_handshake, tls_after_handshake, plaintext };

  /// A connection ended before its first response. A peer that restarts does this once; three in a
  /// row, with the backoff between them, is a peer that will not speak our protocol, or (after a
  /// TLS handshake) one that refused this node: a secure cluster whose super.users missed the
  /// brokers' certificate logged only "waiting for the metadata quorum" here (session 32).
  ///
  /// A peer at its connection bound (listener.name.cluster.max.connections, max.connections.per.ip
  /// or its override for this node's address) closes a new connection as soon as it accepts it,
  /// unread and unanswered (runtime/acceptor.cc, rpc/server.cc make_room): on this side that is a
  /// close before the TLS handshake ends, or before the first answer on plaintext, exactly as a
  /// protocol mismatch looks. A peer that answered this client before speaks its protocol, so the
  /// bound is then the cause named; otherwise both are (or_at_bound after the mismatch hint).
  void note_silent_close(silent_close how, const std::string& detail, const std::string& own_subject = "") {
    if (++silent_closes < silent_closes_before_warning) return;
    const std::string in_a_row = detail + ", " + std::to_string(silent_closes) + " connections in a row)";
    const bool as_a_bound_refusal_looks = how == silent_close::tls_handshake || how == silent_close::plaintext;
    if (as_a_bound_refusal_looks && answered_before) {
      return warn_mismatch("at-bound", "connection to " + named() + " closed before answering (" + in_a_row,
                           connection_bound_hint);
    }
    switch (how) {
      case silent_close::tls_handshake:
        return warn_mismatch("tls-closed", "connection to " + named() + " closed during the TLS handshake (" + in_a_row,
                             std::string(plaintext_peer_hint) + "; " + or_at_bound);
      case silent_close::tls_after_handshake:
        return warn_mismatch("tls-refused",
                             "connection to " + named() + " closed after the TLS handshake, before answering (" + in_a_row +
                                 ": the peer refused this node" +
                                 (own_subject.empty() ? std::string()
                                                      : " (its certificate's subject is " + own_subject +
                                                            ", principal User:" + own_subject +
                                                            " unless ssl.principal.mapping.rules maps it)"),
                             refused_principal_hint);
      case silent_close::plaintext:
        return warn_mismatch("plaintext-closed",
                             "connection to " + named() + " closed before answering its first request (" + in_a_row,
                             std::string(tls_peer_hint) + "; " + or_at_bound);
    }
  }

  static constexpr int silent_closes_before_warning = 3;
  /// A cause still true is logged again after a minute: often enough to be in the last screen of
  /// a log someone reads, rare enough not to flood it (the backoff retries every few seconds).
  static constexpr int64_t cause_repeat_ms = 60'000;
  static constexpr const char* refused_principal_hint =
      "the peer refused this node's certificate principal (CLUSTER_AUTHORIZATION_FAILED): every node's principal "
      "(e.g. User:CN=broker) must be in super.users or allowed CLUSTER_ACTION on the cluster (ringlog acls create "
      "--allow-principal User:... --operation ClusterAction --cluster); the peer logs \"cluster connection refused\" "
      "with the subject and reason (docs/security.md)";
  static constexpr const char* tls_peer_hint =
      "does its cluster listener expect TLS? This node's is PLAINTEXT (its listener.security.protocol.map has no "
      "CLUSTER:SSL); every node's listener.security.protocol.map must give CLUSTER the same protocol (docs/security.md)";
  static constexpr const char* connection_bound_hint =
      "the peer answered this node before, so it speaks its protocol: it is refusing new connections at its "
      "connection bound (listener.name.cluster.max.connections, or max.connections.per.ip or its override for this "
      "node's address), closing each as it accepts it; the peer logs \"cluster listener at its connection bound\" "
      "and counts ringlog_connections_refused_total{listener=\"CLUSTER\"} by the key (docs/configuration.md)";
  static constexpr const char* or_at_bound =
      "or the peer is at its connection bound (listener.name.cluster.max.connections, or max.connections.per.ip or "
      "its override for this node's address) and closes each new connection as it accepts it: its /metrics "
      "ringlog_connections_refused_total{listener=\"CLUSTER\"} then rises";
  static constexpr const char* plaintext_peer_hint =
      "does its cluster listener expect PLAINTEXT? This node's is SSL (listener.security.protocol.map has CLUSTER:SSL); "
      "every node's listener.security.protocol.map must give CLUSTER the same protocol (docs/security.md)";

  void send(int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms, response_callback done) {
    if (stopped) {
      done(error{errc::shutting_down, "cluster client for " + where() + " is stopped"});
      return;
    }
    if (pending.size() >= constants::client_pending_requests_max) {
      done(error{errc::too_many_in_flight, std::to_string(pending.size()) + " requests already wait on " + where() +
                                               " (client_pending_requests_max)"});
      return;
    }
    const int32_t correlation_id = next_correlation_id;
    next_correlation_id = next_correlation_id == INT32_MAX ? 1 : next_correlation_id + 1;
    protocol::request_header_data header;
    header.request_api_key = api_key;
    header.request_api_version = api_version;
    header.correlation_id = correlation_id;
    header.client_id = client_id;
    auto header_version = protocol::request_header_version(api_key, api_version);
    protocol::writer w;
    w.write_int32(0);
    if (!header_version.ok() || !header.encode(w, *header_version).ok()) {
      done(error{errc::invalid_request, "api key " + std::to_string(api_key) + " version " +
                                            std::to_string(api_version) + " cannot be framed"});
      return;
    }
    w.write_raw(body);
    w.patch_int32(0, static_cast<int32_t>(w.size() - protocol::frame_size_bytes));

    pending_request req;
    req.done = std::move(done);
    req.api_key = api_key;
    req.api_version = api_version;
    req.timer = std::make_unique<timer_type>(context.get_executor());
    req.timer->expires_after(std::chrono::milliseconds(std::max<int64_t>(0, timeout_ms)));
    req.timer->async_wait([weak = weak_from_this(), correlation_id, timeout_ms](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || !self->pending.contains(correlation_id)) return;
      const std::string why = "no response from " + self->where() + " within " + std::to_string(timeout_ms) + " ms";
      // Its bytes may still wait in the kernel's send queue (a cut path): aborted, so that they
      // are never delivered after this caller heard "timeout" (abort_if_undelivered). Taken out
      // first so that it hears timeout, and answered last so that a retry from its callback goes
      // to the next connection.
      auto done = self->take_pending(correlation_id);
      self->abort_if_undelivered("call " + std::to_string(correlation_id) + " timed out");
      done(error{errc::timeout, why});
    });
    pending.emplace(correlation_id, std::move(req));
    unsent.emplace_back(correlation_id, std::move(w).take());
    if (st == state::idle) {
      connect();
    } else if (st == state::connected) {
      write_next();
    }
  }

  /// Removes a waiting request (it must be there) and returns its callback, not yet run. A frame
  /// not yet written is dropped; one being written stays (writing owns it) and its response, if
  /// any, finds no pending entry and is ignored.
  response_callback take_pending(int32_t correlation_id) {
    auto it = pending.find(correlation_id);
    RINGLOG_ASSERT(it != pending.end(), "only a request still waiting is taken");
    auto done = std::move(it->second.done);
    pending.erase(it);
    auto u = std::find_if(unsent.begin(), unsent.end(), [&](const auto& f) { return f.first == correlation_id; });
    if (u != unsent.end() && !(writing && u == unsent.begin())) unsent.erase(u);
    return done;
  }

  void fail_all(const error& e) {
    auto failing = std::move(pending);
    pending.clear();
    unsent.clear();
    for (auto& [id, req] : failing) {
      req.timer->cancel();
      req.done(e);
    }
  }

  /// Bytes written to the socket that the peer's kernel has not acknowledged yet (SIOCOUTQ), 0
  /// when the socket is not open; -1 when the kernel does not say (treated as "some").
  int64_t unacknowledged_bytes() {
    if (!tcp_socket().is_open()) return 0;
    int queued = 0;
    if (::ioctl(tcp_socket().native_handle(), SIOCOUTQ, &queued) != 0) return -1;
    return queued;
  }

  /// A caller gave up on a call (its timeout, or the forwarder answered "outcome unknown"): when
  /// any request may still reach the peer later - a frame queued or being written, or written
  /// bytes the peer has not acknowledged - the connection is aborted: SO_LINGER {on, 0} makes
  /// close() send RST and discard the kernel's send queue. A plain close keeps retransmitting
  /// that queue (for minutes, with backoff), so a request given up on during a network cut would
  /// still be delivered, and acted on, once the path heals. Every other call on the connection
  /// fails with disconnected (as for a broken one); the next call reconnects. When everything
  /// written is acknowledged and nothing is queued, nothing can arrive late: the connection stays.
  void abort_if_undelivered(const std::string& why) {
    if (stopped) return;
    const bool queued = !unsent.empty() || writing;
    if (st == state::connected && !queued && unacknowledged_bytes() == 0) return;
    if (st != state::connected && !queued) return;
    spdlog::warn("msg=\"cluster client connection aborted\" peer={} reason=\"{}\" unacknowledged_bytes={}", where(),
                 why, unacknowledged_bytes());
    boost::system::error_code ignored;
    if (tcp_socket().is_open()) tcp_socket().set_option(asio::socket_base::linger(true, 0), ignored);
    reset_socket(close_mode::abort);
    enter_backoff();
    fail_all(error{errc::disconnected, "connection to " + where() + " aborted: " + why +
                                           " (requests still unacknowledged by the peer are discarded)"});
  }

  void connect() {
    st = state::connecting;
    const uint64_t gen = generation;
    boost::system::error_code ec;
    auto address = asio::ip::make_address(host, ec);
    auto self = shared_from_this();
    connect_timer.expires_after(std::chrono::milliseconds(constants::connect_timeout_ms));
    connect_timer.async_wait([self, gen](boost::system::error_code tec) {
      if (tec || self->generation != gen || self->st != state::connecting) return;
      self->on_connect_failed("connect timed out after " + std::to_string(constants::connect_timeout_ms) + " ms");
    });
    if (!ec) {
      socket.async_connect(tcp::endpoint(address, port), [self, gen](boost::system::error_code cec) {
        if (self->generation != gen || self->st != state::connecting) return;
        self->on_connected(cec);
      });
      return;
    }
    auto resolver = std::make_shared<asio::ip::basic_resolver<tcp, runtime::shard_executor>>(context.get_executor());
    resolver->async_resolve(host, std::to_string(port),
                            [self, gen, resolver](boost::system::error_code rec, const auto& endpoints) {
                              if (self->generation != gen || self->st != state::connecting) return;
                              if (rec) {
                                self->on_connect_failed("resolve failed: " + rec.message());
                                return;
                              }
                              asio::async_connect(self->socket, endpoints,
                                                  [self, gen](boost::system::error_code cec, const tcp::endpoint&) {
                                                    if (self->generation != gen || self->st != state::connecting) return;
                                                    self->on_connected(cec);
                                                  });
                            });
  }

  void on_connected(boost::system::error_code ec) {
    if (ec) {
      on_connect_failed(ec.message(), ec == asio::error::connection_refused ? errc::connection_refused
                                                                            : errc::connect_failed);
      return;
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    stream = std::make_shared<runtime::tls_socket>(std::move(socket));
    socket = runtime::shard_socket(context.get_executor());
    if (!tls) return on_ready();
    // Mutual TLS: this node's certificate goes out, the peer's must chain to the truststore. The
    // connect timeout covers the handshake too.
    stream->use_tls(tls->current());
    const uint64_t gen = generation;
    stream->async_handshake(asio::ssl::stream_base::client, [self = shared_from_this(), keep = stream, gen](boost::system::error_code hec) {
      if (self->generation != gen || self->st != state::connecting) return;
      if (hec) {
        self->diagnose_handshake_failure(hec);
        return self->on_connect_failed("TLS handshake failed: " + runtime::tls_failure_reason(hec));
      }
      self->on_ready();
    });
  }

  /// Our TLS handshake failed: the peer closed it (a plaintext listener reads our ClientHello as
  /// a frame size past socket.request.max.bytes and closes), answered plaintext, or refused a
  /// certificate (at once: no restart looks like that).
  void diagnose_handshake_failure(const boost::system::error_code& ec) {
    if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated || ec == asio::error::connection_reset) {
      return note_silent_close(silent_close::tls_handshake, ec.message());
    }
    const std::string reason = runtime::tls_failure_reason(ec);
    if (reason.find("wrong version number") != std::string::npos || reason.find("record layer") != std::string::npos) {
      return warn_mismatch("tls-plaintext-answer", "TLS handshake with " + named() + " failed: " + reason,
                           plaintext_peer_hint);
    }
    warn_mismatch("tls-certificate", "TLS handshake with " + named() + " failed: " + reason,
                  "certificates: each node's keystore (ssl.keystore.location, or listener.name.cluster.ssl.*) must "
                  "be signed by a CA in every other node's ssl.truststore.location");
  }

  /// Connected (and, on a TLS cluster listener, the handshake done): requests may go.
  void on_ready() {
    connect_timer.cancel();
    answered = false;
    st = state::connected;
    backoff_ms = constants::connect_backoff_initial_ms;
    read_next();
    write_next();
  }

  void on_connect_failed(const std::string& why, errc code = errc::connect_failed) {
    reset_socket();
    fail_all(error{code, "connect to " + where() + " failed: " + why});
    enter_backoff();
    backoff_ms = std::min(backoff_ms * 2, constants::connect_backoff_max_ms);
  }

  void on_broken(errc code, const std::string& why) {
    spdlog::debug("msg=\"cluster client connection lost\" peer={} reason=\"{}\"", where(), why);
    reset_socket();
    fail_all(error{code, "connection to " + where() + " lost: " + why});
    enter_backoff();
  }

  enum class close_mode { graceful, abort };

  /// `abort`: SO_LINGER {on, 0} is set already; no shutdown (its FIN would only queue behind the data).
  void reset_socket(close_mode mode = close_mode::graceful) {
    ++generation;
    connect_timer.cancel();
    boost::system::error_code ignored;
    if (mode == close_mode::graceful) tcp_socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_socket().close(ignored);
    stream.reset();
    socket = runtime::shard_socket(context.get_executor());
    writing = false;
    st = state::idle;
  }

  void enter_backoff() {
    if (stopped) return;
    st = state::backoff;
    backoff_timer.expires_after(std::chrono::milliseconds(backoff_ms));
    backoff_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->stopped || self->st != state::backoff) return;
      self->st = state::idle;
      if (!self->unsent.empty()) self->connect();
    });
  }

  /// The peer closed the connection: EOF or a reset, a write into its closed socket, or (TLS) a
  /// close without close_notify, as a cluster listener does when it refuses this node's
  /// principal after the handshake.
  static bool is_peer_close(const boost::system::error_code& ec) {
    return ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
           ec == asio::ssl::error::stream_truncated;
  }

  /// A connection the peer closed before its first answer (note_silent_close), with this node's
  /// certificate subject on TLS: the principal a refusing peer judged.
  void note_close_before_answer(const boost::system::error_code& ec) {
    note_silent_close(tls ? silent_close::tls_after_handshake : silent_close::plaintext, ec.message(),
                      runtime::own_subject(stream->native_tls()).value_or(""));
  }

  /// A read or write failed before the peer's first answer: a close (note_close_before_answer),
  /// or on TLS an alert. Under TLS 1.3 this side's handshake ends before the peer has checked this
  /// node's certificate, so a peer that refuses it (unknown CA, expired) sends its alert after: it
  /// arrives as the first read's error, not the handshake's, and a node whose certificate came
  /// from another CA logged only "waiting for the metadata quorum" (session 41's new user).
  void diagnose_failure_before_answer(const boost::system::error_code& ec) {
    if (answered) return;
    if (is_peer_close(ec)) return note_close_before_answer(ec);
    if (tls && ec.category() == asio::error::get_ssl_category()) diagnose_handshake_failure(ec);
  }

  void write_next() {
    if (writing || unsent.empty() || st != state::connected) return;
    writing = true;
    const uint64_t gen = generation;
    asio::async_write(*stream, asio::buffer(unsent.front().second),
                      [self = shared_from_this(), keep = stream, gen](boost::system::error_code ec, size_t) {
                        if (self->generation != gen) return;
                        self->writing = false;
                        if (ec) {
                          // A peer that closed before answering may fail our write first (EPIPE
                          // after its RST) rather than our read: the same diagnosis.
                          self->diagnose_failure_before_answer(ec);
                          self->on_broken(errc::disconnected, "write failed: " + ec.message());
                          return;
                        }
                        self->unsent.pop_front();
                        self->write_next();
                      });
  }

  void read_next() {
    const uint64_t gen = generation;
    asio::async_read(*stream, asio::buffer(size_prefix),
                     [self = shared_from_this(), keep = stream, gen](boost::system::error_code ec, size_t) {
                       if (self->generation != gen) return;
                       if (ec) {
                         self->diagnose_failure_before_answer(ec);
                         self->on_broken(errc::disconnected, ec == asio::error::eof ? "closed by peer" : ec.message());
                         return;
                       }
                       self->on_size();
                     });
  }

  void on_size() {
    const int32_t size = read_be32(size_prefix);
    if (size < 4 || size > protocol::limits::frame_bytes_max) {
      // A TLS record (alert 0x15 or handshake 0x16, version 3.x) where a response should start.
      const auto first = static_cast<uint8_t>(size_prefix[0]);
      if (!tls && !answered && (first == 0x15 || first == 0x16) && static_cast<uint8_t>(size_prefix[1]) == 0x03) {
        warn_mismatch("plaintext-tls-answer",
                      named() + " answered our first request with TLS bytes (a TLS " +
                          (first == 0x15 ? "alert" : "handshake") + " record), not a Kafka response",
                      tls_peer_hint);
      }
      on_broken(errc::malformed_response, "response frame size " + std::to_string(size) + " outside 4.." +
                                              std::to_string(protocol::limits::frame_bytes_max));
      return;
    }
    frame.assign(static_cast<size_t>(size), std::byte{0});
    const uint64_t gen = generation;
    asio::async_read(*stream, asio::buffer(frame), [self = shared_from_this(), keep = stream, gen](boost::system::error_code ec, size_t) {
      if (self->generation != gen) return;
      if (ec) {
        self->on_broken(errc::disconnected, "read failed inside a frame: " + ec.message());
        return;
      }
      self->on_frame();
      if (self->generation == gen) self->read_next();
    });
  }

  void on_frame() {
    if (!answered) {
      answered = true;
      answered_before = true;
      silent_closes = 0;
      causes_logged.clear();
    }
    protocol::reader peek(frame);
    const int32_t correlation_id = *peek.read_int32();  // size >= 4 checked in on_size
    auto it = pending.find(correlation_id);
    if (it == pending.end()) return;  // timed out earlier: its callback already ran
    auto req = std::move(it->second);
    pending.erase(it);
    req.timer->cancel();
    protocol::reader rd(frame);
    auto header = protocol::decode_response_header(rd, req.api_key, req.api_version);
    if (!header.ok()) {
      req.done(error{errc::malformed_response, "response from " + where() + ": " + header.error().message});
      return;
    }
    req.done(bytes(frame.begin() + static_cast<std::ptrdiff_t>(rd.position()), frame.end()));
  }

  void stop_here() {
    if (stopped) return;
    stopped = true;
    backoff_timer.cancel();
    reset_socket();
    fail_all(error{errc::shutting_down, "cluster client for " + where() + " stopped"});
  }
};

client::client(runtime::shard_threads& rt, size_t shard, std::string host, uint16_t port, std::string client_id,
               std::shared_ptr<runtime::reloading_tls_context> tls, std::string peer_name)
    : impl_(std::make_shared<impl>(rt, shard, std::move(host), port, std::move(client_id), std::move(tls),
                                   std::move(peer_name))) {}

client::~client() {
  // Completions still queued hold their own reference; they see `stopped` and do nothing.
  impl_->stopped = true;
}

void client::send(int16_t api_key, int16_t api_version, bytes body, int64_t timeout_ms, response_callback done) {
  if (impl_->rt.current_shard() == impl_->shard) {
    impl_->send(api_key, api_version, std::move(body), timeout_ms, std::move(done));
    return;
  }
  asio::post(impl_->context, [p = impl_, api_key, api_version, body = std::move(body), timeout_ms,
                              done = std::move(done)]() mutable {
    p->send(api_key, api_version, std::move(body), timeout_ms, std::move(done));
  });
}

void client::abort_if_undelivered(std::string why) {
  if (impl_->rt.current_shard() == impl_->shard) {
    impl_->abort_if_undelivered(why);
    return;
  }
  asio::post(impl_->context, [p = impl_, why = std::move(why)] { p->abort_if_undelivered(why); });
}

void client::stop() {
  if (impl_->rt.current_shard() == impl_->shard) {
    impl_->stop_here();
    return;
  }
  std::promise<void> done;
  asio::post(impl_->context, [p = impl_, &done] {
    p->stop_here();
    done.set_value();
  });
  done.get_future().wait();
}

}  // namespace ringlog::rpc
