#pragma once
// One listening socket's accept loop, shared by the Kafka listeners (src/kafka/listener.cc), the
// https:// front (src/gateway/tls_front.cc) and the cluster listener (src/rpc/server.cc), which
// wrote it three times before (issue 28):
//   - binds host:port (or adopts a socket serve bound earlier) and listens;
//   - accepts on one shard and hands each connection to a shard (round robin, or a fixed one),
//     on that shard's thread, with its socket on that shard's executor;
//   - sets SO_SNDBUF / SO_RCVBUF from socket_buffer_sizes (a listener warns once when the kernel
//     capped them at net.core.wmem_max / rmem_max);
//   - admits it through connection_limits (connection_limits.h; refused ones are closed here,
//     those over max.connection.creation.rate after being held for the delay the rate asks);
//   - out of descriptors or socket memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) it pauses
//     constants::accept_backoff_ms instead of retrying at once (a spin that floods the log and
//     takes a core), with one warning per constants::accept_warning_interval_ms naming the limit.
// Including this header compiles Asio (asio_context.h).

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ringlog/base/result.h"
#include "ringlog/runtime/asio_context.h"
#include "ringlog/runtime/connection_limits.h"
#include "ringlog/runtime/socket_buffer_sizes.h"

namespace ringlog::runtime {

namespace constants {
/// Pause after accept() failed for want of descriptors or memory, ms: long enough not to spin,
/// short enough that a descriptor freed by a closing connection is used soon.
inline constexpr int64_t accept_backoff_ms = 100;
/// At most one "accept paused" warning per listener per this long, ms; the line counts the
/// failures since the previous one.
inline constexpr int64_t accept_warning_interval_ms = 10'000;
/// Connections over max.connection.creation.rate held (unread) at once per listener before being
/// closed; past it they are closed at once (the hold is to slow a client, not to keep a storm).
inline constexpr size_t throttled_connections_max = 1024;
}  // namespace constants

struct acceptor_options {
  /// The listener in log lines and in connection_limits: "PLAINTEXT", "SASL_SSL", "HTTPS", "CLUSTER".
  std::string name;
  std::string host = "127.0.0.1";
  uint16_t port = 0;            // 0: an ephemeral port (see port())
  int listen_fd = -1;           // a socket serve bound already (adopted); -1 = bind host:port here
  size_t accept_shard = 0;      // the shard whose loop runs accept()
  /// The shard that serves every connection; nullopt = round robin over all shards.
  std::optional<size_t> serve_shard;
  /// Admission; nullptr = none (unit tests).
  std::shared_ptr<connection_limits> limits;
  socket_buffer_sizes buffers;   // -1, -1: the OS defaults (unit tests, the cluster listener)
};

/// Runs on `shard`'s thread with `socket` on its executor; `slot` holds the connection's place in
/// the limits until destroyed (keep it with the connection).
using accept_handler = std::function<void(size_t shard, shard_socket socket, connection_slot slot)>;

class acceptor : public std::enable_shared_from_this<acceptor> {
 public:
  /// Binds (or adopts options.listen_fd) and listens. Errors: "NAME host:port: why".
  static base::result<std::shared_ptr<acceptor>, std::string> listen(shard_threads& runtime, acceptor_options options);

  /// Starts the accept loop on the accept shard.
  void start(accept_handler on_accept);
  /// Stops accepting and closes the socket. Call on the accept shard's thread, or when its loop
  /// no longer runs (destructors). Idempotent.
  void close();
  [[nodiscard]] uint16_t port() const { return port_.load(); }
  [[nodiscard]] const acceptor_options& options() const { return options_; }

  struct impl;
  acceptor(shard_threads& runtime, acceptor_options options);
  ~acceptor();

 private:
  void accept_next();
  /// Admits or refuses an accepted connection; false when accepting pauses (a connection waits
  /// for max.connection.creation.rate, and accept_next runs once it is admitted).
  bool on_accepted(size_t shard, shard_socket socket);
  void back_off(const boost::system::error_code& ec);
  void hold_then_close(shard_socket socket, int64_t delay_ms);
  void wait_then_admit(size_t shard, shard_socket socket, int64_t delay_ms);

  shard_threads& runtime_;
  acceptor_options options_;
  std::unique_ptr<impl> impl_;
  accept_handler on_accept_;
  std::atomic<uint16_t> port_{0};
  std::atomic<bool> closed_{false};
  size_t next_shard_ = 0;   // accept shard only
};

/// The address of a socket's peer ("unknown" when it has gone).
std::string peer_address(const shard_socket& socket);

}  // namespace ringlog::runtime
