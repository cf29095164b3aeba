#pragma once
// Reading one size-prefixed frame (Kafka's protocol: a 4-byte size, then that many bytes) without
// trusting the size: the buffer grows as bytes arrive, frame_read_step_bytes at a time, so a
// client that declares 100 MiB and sends 4 bytes holds one step, not 100 MiB (a breaker held 1.7
// GB with 20 idle connections on the Kafka listener, session 15). Used by the Kafka listeners and
// the cluster listener.

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/read.hpp>
#include <cstddef>
#include <utility>
#include <vector>

namespace ringlog::runtime {

/// Bytes a frame's buffer grows by per read: 1 MiB, so a large produce takes a few reads and an
/// idle declared frame holds at most this much.
inline constexpr size_t frame_read_step_bytes = 1024 * 1024;

/// Reads `size` bytes into `frame` (cleared first), growing it a step at a time; `handler(ec)`
/// once all of them are there or reading failed. `stream` and `frame` must outlive the read (the
/// connection that owns them is kept alive by the handler).
template <typename Stream, typename Handler>
void async_read_frame(Stream& stream, std::vector<std::byte>& frame, size_t size, Handler&& handler) {
  const size_t have = frame.size();
  const size_t step = std::min(size - have, frame_read_step_bytes);
  frame.resize(have + step);
  boost::asio::async_read(stream, boost::asio::buffer(frame.data() + have, step),
                          [&stream, &frame, size, handler = std::forward<Handler>(handler)](
                              const boost::system::error_code& ec, size_t) mutable {
                            if (ec || frame.size() >= size) return handler(ec);
                            async_read_frame(stream, frame, size, std::move(handler));
                          });
}

}  // namespace ringlog::runtime
