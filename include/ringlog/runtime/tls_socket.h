#pragma once
// A shard's TCP socket, or TLS over it (Asio's ssl::stream): one AsyncReadStream /
// AsyncWriteStream type for the listeners and the cluster transport, so their framing code reads
// the same with and without TLS. Including this header compiles Asio's SSL support: keep it in
// the few Asio translation units.

#include <openssl/ssl.h>

#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "ringlog/runtime/asio_context.h"
#include "ringlog/runtime/constants.h"
#include "ringlog/runtime/tls.h"

namespace ringlog::runtime {

class tls_socket {
 public:
  using executor_type = shard_executor;
  using tls_stream = boost::asio::ssl::stream<shard_socket&>;

  explicit tls_socket(shard_socket socket) : socket_(std::move(socket)) {}
  tls_socket(tls_socket&&) = delete;

  /// Starts TLS on the socket with a fresh session of `context` (before any byte is read or
  /// written); the handshake is handshake()'s.
  void use_tls(const std::shared_ptr<SSL_CTX>& context) {
    context_ = context;
    tls_.emplace(socket_, SSL_new(context.get()));
  }
  [[nodiscard]] bool is_tls() const { return tls_.has_value(); }
  [[nodiscard]] SSL* native_tls() { return tls_ ? tls_->native_handle() : nullptr; }

  template <typename Handler>
  void async_handshake(boost::asio::ssl::stream_base::handshake_type type, Handler&& handler) {
    tls_->async_handshake(type, std::forward<Handler>(handler));
  }

  executor_type get_executor() { return socket_.get_executor(); }
  shard_socket& socket() { return socket_; }
  shard_socket& lowest_layer() { return socket_; }

  template <typename Buffers, typename Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    } else {
      socket_.async_read_some(buffers, std::forward<Handler>(handler));
    }
  }
  template <typename Buffers, typename Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_write_some(buffers, std::forward<Handler>(handler));
    } else {
      socket_.async_write_some(buffers, std::forward<Handler>(handler));
    }
  }

  /// TLS's close_notify, then the wait for the peer's (Asio's ssl::stream::async_shutdown); TLS
  /// only, with no read or write in flight. The caller bounds the wait (cancel the socket) and
  /// closes afterwards.
  template <typename Handler>
  void async_shutdown(Handler&& handler) {
    tls_->async_shutdown(std::forward<Handler>(handler));
  }

  /// Closes the socket without a TLS close_notify (the peer sees the TCP close).
  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  shard_socket socket_;
  std::shared_ptr<SSL_CTX> context_;   // the context this session was made from (a reload swaps the listener's)
  std::optional<tls_stream> tls_;
};

/// A TLS connection's bounded goodbye (the Kafka listeners, the https front and the cluster
/// listener at stop): the pending read is cancelled (its handler must find the connection
/// closed and do nothing), then, after it has run, close_notify and the wait for the peer's, cut
/// short by a timer after constants::tls_close_notify_timeout_ms (a peer that never sends its
/// close_notify); then the socket is closed and `after` runs, once. `owner` is the connection
/// that holds `socket`: it stays alive until then.
template <typename Owner, typename After>
void close_with_notify_bounded(std::shared_ptr<Owner> owner, tls_socket& socket, After after) {
  using shard_timer = boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                                        boost::asio::wait_traits<std::chrono::steady_clock>, shard_executor>;
  boost::system::error_code ignored;
  socket.socket().cancel(ignored);
  auto timer = std::make_shared<shard_timer>(socket.get_executor());
  timer->expires_after(std::chrono::milliseconds(constants::tls_close_notify_timeout_ms));
  timer->async_wait([owner, &socket](boost::system::error_code ec) {
    boost::system::error_code ignored_too;
    if (!ec) socket.socket().cancel(ignored_too);
  });
  boost::asio::post(socket.get_executor(), [owner, &socket, timer, after = std::move(after)]() mutable {
    socket.async_shutdown([owner, &socket, timer, after = std::move(after)](boost::system::error_code) mutable {
      timer->cancel();
      socket.close();
      after();
    });
  });
}

/// Why a TLS handshake failed, in words for a log line: plaintext bytes on a TLS port read as an
/// unknown record ("wrong version number", "http request"), a client that does not trust us
/// sends an alert, a missing client certificate, ...
inline std::string tls_failure_reason(const boost::system::error_code& ec) {
  std::string out = ec.message();
  if (ec.category() == boost::asio::error::get_ssl_category()) {
    const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
    if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_HTTP_REQUEST || reason == SSL_R_UNKNOWN_PROTOCOL ||
        reason == SSL_R_PACKET_LENGTH_TOO_LONG) {
      out += " (not a TLS client: plaintext on a TLS listener?)";
    } else if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
      out += " (ssl.client.auth=required and the client sent no certificate)";
    } else if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
      out += " (the peer's certificate is not signed by the truststore)";
    }
  }
  return out;
}

}  // namespace ringlog::runtime
