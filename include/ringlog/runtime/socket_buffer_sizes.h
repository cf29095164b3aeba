#pragma once
// The kernel's socket buffer sizes of a listener's connections, as the listeners' options carry
// them (runtime/acceptor.cc sets them). No Asio here: the front ends' option headers include it.

#include <cstdint>

namespace ringlog::runtime {

/// socket.send.buffer.bytes and socket.receive.buffer.bytes (Kafka's keys): SO_SNDBUF and
/// SO_RCVBUF of the listening socket and of every accepted one, bytes (Linux doubles them and caps
/// them at net.core.wmem_max / rmem_max); -1 = the OS default, which Linux autotunes. The receive
/// size is set on the listening socket too, as Kafka does, so the window offered in the SYN-ACK
/// (and its scale, fixed for the connection's life) already fits it.
struct socket_buffer_sizes {
  int32_t send_bytes = -1;
  int32_t receive_bytes = -1;
};

}  // namespace ringlog::runtime
