#include "ringlog/gateway/tls_front.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <future>
#include <set>

#include "ringlog/runtime/tls_socket.h"

namespace ringlog::gateway {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using acceptor_type = asio::basic_socket_acceptor<tcp, runtime::shard_executor>;
using local_socket = asio::basic_stream_socket<asio::local::stream_protocol, runtime::shard_executor>;

struct tunnel;

struct tls_front::impl : std::enable_shared_from_this<tls_front::impl> {
  impl(runtime::shard_threads& r, http_server& s, tls_front_options o)
      : rt(r), server(s), options(std::move(o)), acceptor(runtime::io_context_of(r, 0).get_executor()),
        open(r.shard_count()) {}
  runtime::shard_threads& rt;
  http_server& server;
  tls_front_options options;
  acceptor_type acceptor;
  std::vector<std::set<std::shared_ptr<tunnel>>> open;   // per shard, touched on that shard only
  std::atomic<bool> stopped{false};
  size_t next_shard = 0;   // accept loop only (shard 0)

  void accept_next();
};

/// One client: its TLS stream and the plaintext socketpair end towards the HTTP session, with a
/// pump in each direction. Either side closing closes both.
struct tunnel : std::enable_shared_from_this<tunnel> {
  tunnel(std::shared_ptr<tls_front::impl> o, size_t s, runtime::shard_socket socket)
      : owner(o), shard(s), client(std::move(socket)), inner(socket_executor()) {
    boost::system::error_code ec;
    auto ep = client.socket().remote_endpoint(ec);
    peer = ec ? "unknown" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  runtime::shard_executor socket_executor() { return client.get_executor(); }

  std::weak_ptr<tls_front::impl> owner;
  size_t shard;
  runtime::tls_socket client;
  local_socket inner;
  std::string peer;
  std::array<char, constants::tls_tunnel_buffer_bytes> upstream{};     // client -> HTTP session
  std::array<char, constants::tls_tunnel_buffer_bytes> downstream{};   // HTTP session -> client
  bool closed = false;

  void start(const std::shared_ptr<tls_front::impl>& o) {
    client.use_tls(o->options.tls->current());
    client.async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](boost::system::error_code ec) {
      if (self->closed) return;
      if (ec) return self->close("TLS handshake failed: " + runtime::tls_failure_reason(ec));
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
      asio::async_write(self->client, asio::buffer(self->downstream.data(), n),
                        [self](boost::system::error_code wec, size_t) {
                          if (self->closed) return;
                          if (wec) return self->close("");
                          self->pump_down();
                        });
    });
  }

  /// Closes both sides; `reason` empty = an ordinary end (no log line).
  void close(const std::string& reason) {
    if (closed) return;
    closed = true;
    auto o = owner.lock();
    if (!reason.empty()) {
      spdlog::warn("msg=\"https connection closed\" listener={} peer={} reason=\"{}\"", o ? o->options.name : "HTTPS",
                   peer, reason);
    }
    client.close();
    boost::system::error_code ignored;
    inner.close(ignored);
    if (o) o->open[shard].erase(shared_from_this());
  }
};

void tls_front::impl::accept_next() {
  if (stopped.load()) return;
  const size_t shard = next_shard++ % rt.shard_count();
  acceptor.async_accept(runtime::io_context_of(rt, shard).get_executor(),
                        [self = shared_from_this(), shard](boost::system::error_code ec, runtime::shard_socket socket) {
                          if (self->stopped.load()) return;
                          if (ec) {
                            spdlog::warn("msg=\"https accept failed\" error=\"{}\"", ec.message());
                          } else {
                            boost::system::error_code ignored;
                            socket.set_option(tcp::no_delay(true), ignored);
                            asio::post(socket.get_executor(), [self, shard, s = std::make_shared<runtime::shard_socket>(
                                                                                std::move(socket))]() mutable {
                              if (self->stopped.load()) return;
                              auto t = std::make_shared<tunnel>(self, shard, std::move(*s));
                              self->open[shard].insert(t);
                              t->start(self);
                            });
                          }
                          self->accept_next();
                        });
}

base::result<std::unique_ptr<tls_front>, std::string> tls_front::start(runtime::shard_threads& rt, http_server& server,
                                                                       tls_front_options options) {
  auto p = std::make_shared<impl>(rt, server, options);
  const std::string where = "https://" + options.host + ":" + std::to_string(options.port);
  boost::system::error_code ec;
  auto address = asio::ip::make_address(options.host, ec);
  if (ec) return where + ": host is not an IP address: " + ec.message();
  tcp::endpoint endpoint(address, options.port);
  if (options.listen_fd >= 0) {
    p->acceptor.assign(endpoint.protocol(), options.listen_fd, ec);
  } else {
    p->acceptor.open(endpoint.protocol(), ec);
    if (!ec) p->acceptor.set_option(acceptor_type::reuse_address(true), ec);
    if (!ec) p->acceptor.bind(endpoint, ec);
  }
  if (!ec) p->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return where + ": " + ec.message();
  asio::post(runtime::io_context_of(rt, 0), [p] { p->accept_next(); });
  return std::unique_ptr<tls_front>(new tls_front(std::move(p)));
}

tls_front::~tls_front() {
  if (!impl_->stopped.exchange(true)) {
    boost::system::error_code ignored;
    impl_->acceptor.close(ignored);
  }
}

void tls_front::stop() {
  impl_->stopped.store(true);
  const size_t n = impl_->rt.shard_count();
  std::vector<std::promise<void>> done(n);
  for (size_t shard = 0; shard < n; ++shard) {
    asio::post(runtime::io_context_of(impl_->rt, shard), [p = impl_, shard, &done] {
      if (shard == 0) {
        boost::system::error_code ignored;
        p->acceptor.close(ignored);
      }
      auto open = p->open[shard];   // close() erases from the set
      for (const auto& t : open) t->close("");
      done[shard].set_value();
    });
  }
  for (auto& d : done) d.get_future().wait();
}

uint16_t tls_front::port() const {
  boost::system::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

}  // namespace ringlog::gateway
