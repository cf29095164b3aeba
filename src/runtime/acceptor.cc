#include "ringlog/runtime/acceptor.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

namespace ringlog::runtime {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using acceptor_socket = asio::basic_socket_acceptor<tcp, shard_executor>;
using shard_timer = asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                                               shard_executor>;

namespace {

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// An accept() failure that retrying at once cannot cure: the process or the system is out of
/// descriptors, or the kernel out of socket memory.
bool out_of_resources(const boost::system::error_code& ec) {
  const int e = ec.value();
  return ec.category() == boost::system::system_category() &&
         (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM);
}

/// The limit an out_of_resources error ran into, for the warning line.
std::string limit_named(const boost::system::error_code& ec) {
  switch (ec.value()) {
    case EMFILE: {
      rlimit r{};
      ::getrlimit(RLIMIT_NOFILE, &r);
      return "the process's open-file limit (RLIMIT_NOFILE, ulimit -n) " + std::to_string(r.rlim_cur);
    }
    case ENFILE: return "the system's open-file limit (fs.file-max)";
    default: return "kernel socket memory (net.core.* / net.ipv4.tcp_mem)";
  }
}

/// Sets SO_SNDBUF / SO_RCVBUF of `s` (a listening or an accepted socket) to `sizes` where they
/// are not -1.
template <typename Socket>
void set_buffer_sizes(Socket& s, const socket_buffer_sizes& sizes, boost::system::error_code& ec) {
  if (sizes.send_bytes >= 0) s.set_option(asio::socket_base::send_buffer_size(sizes.send_bytes), ec);
  if (!ec && sizes.receive_bytes >= 0) s.set_option(asio::socket_base::receive_buffer_size(sizes.receive_bytes), ec);
}

/// One line when the kernel gave the listening socket less than was asked, i.e. net.core.wmem_max /
/// rmem_max capped it: the operator's value is not in force. Linux doubles a size on set and
/// Asio's get_option halves it back on Linux (socket_ops::getsockopt), so an uncapped size reads
/// as asked; comparing against twice the size warned on every listener (session 41's new user).
void warn_if_capped(acceptor_socket& s, const acceptor_options& options) {
  boost::system::error_code ec;
  asio::socket_base::send_buffer_size send;
  asio::socket_base::receive_buffer_size receive;
  s.get_option(send, ec);
  if (!ec) s.get_option(receive, ec);
  if (ec) return;
  const auto& b = options.buffers;
  if ((b.send_bytes >= 0 && send.value() < b.send_bytes) || (b.receive_bytes >= 0 && receive.value() < b.receive_bytes)) {
    spdlog::warn("msg=\"the kernel capped the socket buffers: raise net.core.wmem_max / net.core.rmem_max for the "
                 "sizes asked\" listener={} socket.send.buffer.bytes={} socket.receive.buffer.bytes={} "
                 "so_sndbuf={} so_rcvbuf={}",
                 options.name, b.send_bytes, b.receive_bytes, send.value(), receive.value());
  }
}

/// Events of one kind counted between warnings, one warning per constants::accept_warning_interval_ms
/// (the acceptor's warnings: a flood must not flood the log).
struct interval_warning {
  int64_t last_ms = -1;
  uint64_t since_last = 0;   // events since the last warning, this one included once counted
  /// Counts one event; true when a warning is due now (the caller logs since_last, then calls
  /// logged).
  bool count(int64_t now_ms) {
    ++since_last;
    return last_ms < 0 || now_ms - last_ms >= constants::accept_warning_interval_ms;
  }
  void logged(int64_t now_ms) {
    last_ms = now_ms;
    since_last = 0;
  }
};

}  // namespace

struct acceptor::impl {
  explicit impl(asio::io_context& context) : socket(context.get_executor()), retry(context.get_executor()) {}
  acceptor_socket socket;
  shard_timer retry;
  interval_warning out_of_resources;   // accepts failed for descriptors or memory
  interval_warning refusals;           // connections refused at a limit
  std::atomic<size_t> held = 0;   // connections held for an ip's connection_creation_rate
};

acceptor::acceptor(shard_threads& runtime, acceptor_options options)
    : runtime_(runtime), options_(std::move(options)),
      impl_(std::make_unique<impl>(io_context_of(runtime, options_.accept_shard))) {}

acceptor::~acceptor() = default;

base::result<std::shared_ptr<acceptor>, std::string> acceptor::listen(shard_threads& runtime, acceptor_options options) {
  const std::string where = options.name + " " + options.host + ":" + std::to_string(options.port);
  boost::system::error_code ec;
  auto address = asio::ip::make_address(options.host, ec);
  if (ec) return where + ": host is not an IP address: " + ec.message();
  auto p = std::make_shared<acceptor>(runtime, options);
  tcp::endpoint endpoint(address, options.port);
  acceptor_socket& s = p->impl_->socket;
  if (options.listen_fd >= 0) {
    s.assign(endpoint.protocol(), options.listen_fd, ec);
  } else {
    s.open(endpoint.protocol(), ec);
    if (!ec) s.set_option(acceptor_socket::reuse_address(true), ec);
    if (!ec) s.bind(endpoint, ec);
  }
  if (!ec) set_buffer_sizes(s, options.buffers, ec);
  if (!ec) s.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return where + ": " + ec.message();
  warn_if_capped(s, options);
  p->port_.store(s.local_endpoint(ec).port());
  return p;
}

void acceptor::start(accept_handler on_accept) {
  on_accept_ = std::move(on_accept);
  asio::post(io_context_of(runtime_, options_.accept_shard), [self = shared_from_this()] { self->accept_next(); });
}

void acceptor::close() {
  if (closed_.exchange(true)) return;
  boost::system::error_code ignored;
  impl_->socket.close(ignored);
  impl_->retry.cancel();
}

void acceptor::accept_next() {
  if (closed_.load()) return;
  const size_t shard = options_.serve_shard ? *options_.serve_shard : next_shard_++ % runtime_.shard_count();
  impl_->socket.async_accept(io_context_of(runtime_, shard).get_executor(),
                             [self = shared_from_this(), shard](boost::system::error_code ec, shard_socket socket) {
                               if (self->closed_.load() || ec == asio::error::operation_aborted) return;
                               if (out_of_resources(ec)) return self->back_off(ec);
                               if (ec) {
                                 // A peer that reset before accept() returned: its to retry.
                                 spdlog::debug("msg=\"accept failed\" listener={} error=\"{}\"", self->options_.name,
                                               ec.message());
                               } else if (!self->on_accepted(shard, std::move(socket))) {
                                 return;   // paused: accepting goes on once that connection is admitted
                               }
                               self->accept_next();
                             });
}

void acceptor::back_off(const boost::system::error_code& ec) {
  const int64_t now = steady_now_ms();
  if (impl_->out_of_resources.count(now)) {
    spdlog::warn("msg=\"accept paused: out of resources\" listener={} error=\"{}\" limit=\"{}\" pause_ms={} "
                 "failures={} warning_interval_ms={}",
                 options_.name, ec.message(), limit_named(ec), constants::accept_backoff_ms,
                 impl_->out_of_resources.since_last, constants::accept_warning_interval_ms);
    impl_->out_of_resources.logged(now);
  }
  impl_->retry.expires_after(std::chrono::milliseconds(constants::accept_backoff_ms));
  impl_->retry.async_wait([self = shared_from_this()](boost::system::error_code wait_ec) {
    if (!wait_ec) self->accept_next();
  });
}

void acceptor::warn_refused(const std::string& peer, std::string_view limit) {
  // One line per listener and accept_warning_interval_ms, with the count since the last one: a
  // flood of refused connects must not flood the log, and an operator must see the limit named
  // (refusals were only counted in ringlog_connections_refused_total, session 41's breaker).
  const int64_t now = steady_now_ms();
  if (!impl_->refusals.count(now)) return;
  spdlog::warn("msg=\"connections refused at a limit\" listener={} peer={} limit={} refused={} warning_interval_ms={}",
               options_.name, peer, limit, impl_->refusals.since_last, constants::accept_warning_interval_ms);
  impl_->refusals.logged(now);
}

bool acceptor::on_accepted(size_t shard, shard_socket socket) {
  connection_slot slot;
  if (options_.limits) {
    auto admitted = options_.limits->admit(options_.name, peer_address(socket), steady_now_ms());
    if (admitted.refused) {
      spdlog::debug("msg=\"connection refused\" listener={} peer={} reason={} delay_ms={}", options_.name,
                    peer_address(socket), connection_refusal_name(*admitted.refused), admitted.delay_ms);
      if (*admitted.refused == connection_refusal::max_connection_creation_rate) {
        wait_then_admit(shard, std::move(socket), admitted.delay_ms);   // held, not refused: no warning
        return false;
      }
      warn_refused(peer_address(socket), connection_refusal_name(*admitted.refused));
      if (admitted.delay_ms > 0) hold_then_close(std::move(socket), admitted.delay_ms);
      return true;   // otherwise the socket closes as it goes out of scope
    }
    slot = std::move(admitted.slot);
  }
  // Linux's accepted sockets inherit the listening socket's sizes; set again, as Kafka's acceptor
  // does, so no kernel path that re-derives them (tcp_init_buffer_space) is relied on.
  boost::system::error_code ignored;
  set_buffer_sizes(socket, options_.buffers, ignored);
  asio::post(socket.get_executor(), [self = shared_from_this(), shard, s = std::make_shared<shard_socket>(std::move(socket)),
                                     slot = std::make_shared<connection_slot>(std::move(slot))]() mutable {
    if (self->closed_.load()) return;
    self->on_accept_(shard, std::move(*s), std::move(*slot));
  });
  return true;
}

/// Kafka's acceptor over the broker's or a listener's max.connection.creation.rate
/// (ConnectionQuotas.waitForConnectionSlot): it waits the time the rate asks for, then serves the
/// connection, and accepts nothing meanwhile, so the connections behind it wait in the listen
/// backlog. Clients see a slower connect, never a connection closed unanswered (a new user's
/// connection-per-request HTTP client got thousands of resets at 1,500 connections/s). Only an
/// ip's connection_creation_rate holds and closes (hold_then_close), as Kafka does.
void acceptor::wait_then_admit(size_t shard, shard_socket socket, int64_t delay_ms) {
  auto waiting = std::make_shared<shard_socket>(std::move(socket));
  impl_->retry.expires_after(std::chrono::milliseconds(delay_ms));
  impl_->retry.async_wait([self = shared_from_this(), shard, waiting](boost::system::error_code ec) {
    if (ec || self->closed_.load()) return;   // closing: the waiting socket closes with `waiting`
    if (self->on_accepted(shard, std::move(*waiting))) self->accept_next();
  });
}

/// Kafka's answer to a connection over an ip's connection_creation_rate: it is not read and not
/// answered, only closed once the delay the rate asks for has passed, so a reconnecting client
/// slows down.
void acceptor::hold_then_close(shard_socket socket, int64_t delay_ms) {
  if (impl_->held.load() >= constants::throttled_connections_max) return;   // closed at once
  ++impl_->held;
  shard_timer timer(socket.get_executor());
  auto held = std::make_shared<std::pair<shard_socket, shard_timer>>(std::move(socket), std::move(timer));
  held->second.expires_after(std::chrono::milliseconds(delay_ms));
  held->second.async_wait([self = shared_from_this(), held](boost::system::error_code) {
    boost::system::error_code ignored;
    held->first.close(ignored);
    --self->impl_->held;
  });
}

std::string peer_address(const shard_socket& socket) {
  boost::system::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  // An IPv4 client of a dual-stack socket is "10.0.0.1", not "::ffff:10.0.0.1": as
  // max.connections.per.ip.overrides and ip quota entities name it.
  const auto& a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).to_string();
  return a.to_string();
}

}  // namespace ringlog::runtime
