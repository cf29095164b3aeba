#include "ringlog/gateway/tls_front.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <future>
#include <set>

#include "ringlog/base/logfmt.h"
#include "ringlog/runtime/acceptor.h"
#include "ringlog/runtime/constants.h"
#include "ringlog/runtime/log_rate_limit.h"
#include "ringlog/runtime/tls_socket.h"

namespace ringlog::gateway {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using shard_timer = asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                                               runtime::shard_executor>;
using local_socket = asio::basic_stream_socket<asio::local::stream_protocol, runtime::shard_executor>;

struct tunnel;

struct tls_front::impl : std::enable_shared_from_this<tls_front::impl> {
  impl(runtime::shard_threads& r, http_server& s, tls_front_options o)
      : rt(r), server(s), options(std::move(o)), open(r.shard_count()) {}
  runtime::shard_threads& rt;
  http_server& server;
  tls_front_options options;
  std::shared_ptr<runtime::acceptor> acceptor;   // accepts on shard 0, round robin over shards
  std::vector<std::set<std::shared_ptr<tunnel>>> open;   // per shard, touched on that shard only
  std::atomic<bool> stopped{false};
  /// Failed TLS handshakes are logged at most once per interval (a scanner would flood the log).
  runtime::log_rate_limit handshake_failures{runtime::constants::tls_handshake_warning_interval_ms};

  void adopt(size_t shard, runtime::shard_socket socket, runtime::connection_slot slot);
};

/// One client: its TLS stream and the plaintext socketpair end towards the HTTP session, with a
/// pump in each direction. Either side closing closes both. Once the TLS session is up, a close
/// with no answer bytes being written (the HTTP session ended: Connection: close, a controlled
/// shutdown's drain; or tls_front::stop) says goodbye with TLS's close_notify first, bounded by
/// runtime::constants::tls_close_notify_timeout_ms, as the Kafka listeners do.
struct tunnel : std::enable_shared_from_this<tunnel> {
  tunnel(std::shared_ptr<tls_front::impl> o, size_t s, runtime::shard_socket socket, runtime::connection_slot sl)
      : owner(o), shard(s), client(std::move(socket)), inner(socket_executor()), slot_in_limits(std::move(sl)),
        handshake_deadline(socket_executor()) {
    boost::system::error_code ec;
    auto ep = client.socket().remote_endpoint(ec);
    peer = ec ? "unknown" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  runtime::shard_executor socket_executor() { return client.get_executor(); }

  std::weak_ptr<tls_front::impl> owner;
  size_t shard;
  runtime::tls_socket client;
  local_socket inner;
  runtime::connection_slot slot_in_limits;   // max.connections / per IP, given back on close
  shard_timer handshake_deadline;             // connection.authentication.timeout.ms
  std::string peer;
  std::array<char, constants::tls_tunnel_buffer_bytes> upstream{};     // client -> HTTP session
  std::array<char, constants::tls_tunnel_buffer_bytes> downstream{};   // HTTP session -> client
  bool closed = false;        // no more pumping; the TCP socket may still be saying goodbye
  bool tls_up = false;        // the handshake is done: a close can send close_notify
  bool writing_down = false;  // answer bytes are being written to the client
  /// Run once the TCP socket is closed (tls_front::stop waits for every tunnel's).
  std::vector<std::function<void()>> on_gone;
  std::array<char, 1> first_byte{};   // peeked before the handshake (plain HTTP is told to use TLS)

  void start(const std::shared_ptr<tls_front::impl>& o) {
    client.use_tls(o->options.tls->current());
    if (o->options.authentication_timeout_ms > 0) {
      // A client that connects and never finishes its handshake is closed (and counted).
      handshake_deadline.expires_after(std::chrono::milliseconds(o->options.authentication_timeout_ms));
      handshake_deadline.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->closed) return;
        auto o2 = self->owner.lock();
        if (!o2) return;
        if (o2->options.limits) {
          o2->options.limits->count_refusal(o2->options.name, runtime::connection_refusal::authentication_timeout);
        }
        self->close("TLS handshake not finished within connection.authentication.timeout.ms=" +
                    std::to_string(o2->options.authentication_timeout_ms));
      });
    }
    // The first byte, peeked: a TLS handshake starts with a record of type 22; a plain HTTP
    // request (an http:// URL aimed at this port) is told so instead of a bare close.
    client.socket().async_receive(asio::buffer(first_byte), asio::socket_base::message_peek,
                                  [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                                    if (self->closed) return;
                                    if (ec || n == 0) return self->close("");
                                    if (plain_http_start(first_byte_value(*self))) return self->refuse_plain_http();
                                    self->handshake();
                                  });
  }

  static unsigned char first_byte_value(const tunnel& t) { return static_cast<unsigned char>(t.first_byte[0]); }
  /// An ASCII capital letter: a request line (GET, POST, PUT, HEAD, ...), never a TLS record type.
  static bool plain_http_start(unsigned char c) { return c >= 'A' && c <= 'Z'; }

  void refuse_plain_http() {
    static const std::string answer =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 98\r\n\r\n"
        "{\"error_code\":400,\"message\":\"this is an https:// listener: send the request over TLS (https://)\"}\n";
    asio::async_write(client.socket(), asio::buffer(answer), [self = shared_from_this()](boost::system::error_code, size_t) {
      self->close("a plain HTTP request on an https:// listener (answered 400: use https://)");
    });
  }

  void handshake() {
    client.async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](boost::system::error_code ec) {
      if (self->closed) return;
      self->handshake_deadline.cancel();
      self->tls_up = !ec;
      if (ec) {
        uint64_t suppressed = 0;
        const std::string why = runtime::tls_failure_reason(ec);
        auto o = self->owner.lock();
        if (o && !o->handshake_failures.admit(why, suppressed)) return self->close("");
        return self->close("TLS handshake failed: " + why + runtime::handshakes_not_logged(suppressed));
      }
      self->connect_inner();
    });
  }

  void connect_inner() {
    auto o = owner.lock();
    if (!o) return close("listener stopped");
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      return close(std::string("socketpair failed: ") + std::strerror(errno));
    }
    boost::system::error_code ec;
    inner.assign(asio::local::stream_protocol(), fds[0], ec);
    if (ec) {
      ::close(fds[0]);
      ::close(fds[1]);
      return close("socketpair not adopted: " + ec.message());
    }
    o->server.serve_connection(shard, fds[1], peer);
    pump_up();
    pump_down();
  }

  void pump_up() {
    client.async_read_some(asio::buffer(upstream), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      if (self->closed) return;
      if (ec) {
        // The client is done sending (or gone): the HTTP session reads its end of input.
        boost::system::error_code ignored;
        self->inner.shutdown(local_socket::shutdown_send, ignored);
        return;
      }
      asio::async_write(self->inner, asio::buffer(self->upstream.data(), n),
                        [self](boost::system::error_code wec, size_t) {
                          if (self->closed) return;
                          if (wec) return self->close("");
                          self->pump_up();
                        });
    });
  }

  void pump_down() {
    inner.async_read_some(asio::buffer(downstream), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      if (self->closed) return;
      if (ec) return self->close("");   // the HTTP session closed its side
      self->writing_down = true;
      asio::async_write(self->client, asio::buffer(self->downstream.data(), n),
                        [self](boost::system::error_code wec, size_t) {
                          if (self->closed) return;
                          if (wec) return self->close("");   // writing_down stays: no goodbye on a broken socket
                          self->writing_down = false;
                          self->pump_down();
                        });
    });
  }

  /// Closes both sides; `reason` empty = an ordinary end (no log line). With the TLS session up
  /// and no answer bytes in flight, close_notify goes out before the TCP close (say_goodbye).
  void close(const std::string& reason) {
    if (closed) return;
    closed = true;
    if (!reason.empty()) {
      auto o = owner.lock();
      spdlog::warn("msg=\"https connection closed\" listener={} peer={} reason=\"{}\"", o ? o->options.name : "HTTPS",
                   peer, base::logfmt_escaped(reason));
    }
    handshake_deadline.cancel();
    slot_in_limits.release();
    boost::system::error_code ignored;
    inner.close(ignored);
    if (tls_up && !writing_down) return say_goodbye();
    client.close();
    gone();
  }

  /// Runs `f` once the TCP socket is closed (at once if close() closes it without a goodbye).
  void when_gone(std::function<void()> f) { on_gone.push_back(std::move(f)); }

  /// The pending read is cancelled (its handler finds `closed` and does nothing), then, after it
  /// has run, close_notify and the wait for the client's, cut short by the timer; then the close.
  void say_goodbye() {
    boost::system::error_code ignored;
    client.socket().cancel(ignored);
    auto timer = std::make_shared<shard_timer>(socket_executor());
    timer->expires_after(std::chrono::milliseconds(runtime::constants::tls_close_notify_timeout_ms));
    timer->async_wait([self = shared_from_this()](boost::system::error_code ec) {
      boost::system::error_code ignored2;
      if (!ec) self->client.socket().cancel(ignored2);   // a client that never sends its close_notify
    });
    asio::post(socket_executor(), [self = shared_from_this(), timer] {
      self->client.async_shutdown([self, timer](boost::system::error_code) {
        timer->cancel();
        self->client.close();
        self->gone();
      });
    });
  }

  void gone() {
    if (auto o = owner.lock()) o->open[shard].erase(shared_from_this());
    for (auto& f : std::exchange(on_gone, {})) f();
  }
};

void tls_front::impl::adopt(size_t shard, runtime::shard_socket socket, runtime::connection_slot slot) {
  if (stopped.load()) return;
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto t = std::make_shared<tunnel>(shared_from_this(), shard, std::move(socket), std::move(slot));
  open[shard].insert(t);
  t->start(shared_from_this());
}

base::result<std::unique_ptr<tls_front>, std::string> tls_front::start(runtime::shard_threads& rt, http_server& server,
                                                                       tls_front_options options) {
  auto p = std::make_shared<impl>(rt, server, options);
  runtime::acceptor_options accept;
  accept.name = options.name;
  accept.host = options.host;
  accept.port = options.port;
  accept.listen_fd = options.listen_fd;
  accept.limits = options.limits;
  accept.buffers = options.socket_buffers;
  auto bound = runtime::acceptor::listen(rt, std::move(accept));
  if (!bound.ok()) return bound.error();
  p->acceptor = std::move(bound).value();
  p->acceptor->start([weak = std::weak_ptr<impl>(p)](size_t shard, runtime::shard_socket socket,
                                                     runtime::connection_slot slot) {
    if (auto self = weak.lock()) self->adopt(shard, std::move(socket), std::move(slot));
  });
  return std::unique_ptr<tls_front>(new tls_front(std::move(p)));
}

tls_front::~tls_front() {
  if (!impl_->stopped.exchange(true)) impl_->acceptor->close();
}

void tls_front::stop() {
  impl_->stopped.store(true);
  const size_t n = impl_->rt.shard_count();
  std::vector<std::promise<void>> done(n);
  for (size_t shard = 0; shard < n; ++shard) {
    asio::post(runtime::io_context_of(impl_->rt, shard), [p = impl_, shard, &done] {
      if (shard == 0) p->acceptor->close();
      // Every tunnel closes, those with a TLS session with close_notify (bounded in time), and
      // those the HTTP server's drain closed already may still be saying goodbye: the shard is
      // done when the last TCP socket has closed. `left` starts at 1 for this loop itself.
      auto left = std::make_shared<size_t>(1);
      auto one_gone = [left, finished = &done[shard]] {
        if (--*left == 0) finished->set_value();
      };
      auto open = p->open[shard];   // gone() erases from the set
      for (const auto& t : open) {
        ++*left;
        t->when_gone(one_gone);
        t->close("");
      }
      one_gone();
    });
  }
  for (auto& d : done) d.get_future().wait();
}

uint16_t tls_front::port() const { return impl_->acceptor->port(); }

}  // namespace ringlog::gateway
