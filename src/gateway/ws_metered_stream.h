#pragma once
// The stream under a WebSocket session's websocket::stream: the TCP stream, with every byte read
// from the client passed through a ws_frame_meter on its way to Beast, so that a frame header
// declaring a message over the bound is seen as it arrives (ws_frame_meter.h says why). Writes
// and teardown pass straight through. Included by ws_session.cc only (Beast stays there).

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket/teardown.hpp>
#include <cstdint>
#include <functional>
#include <utility>

#include "ringlog/runtime/asio_context.h"
#include "ws_frame_meter.h"

namespace ringlog::gateway {

class ws_metered_stream {
 public:
  using next_layer_type = boost::beast::basic_stream<boost::asio::ip::tcp, runtime::shard_executor>;
  using executor_type = next_layer_type::executor_type;
  /// Runs (on the stream's executor, inside the read's completion) once, with the declared size
  /// of the first message over the bound.
  using over_limit_fn = std::function<void(uint64_t declared_bytes)>;

  ws_metered_stream(runtime::shard_socket socket, uint64_t message_bytes_max)
      : next_(std::move(socket)), meter_(message_bytes_max) {}

  void on_over_limit(over_limit_fn f) { over_limit_ = std::move(f); }

  executor_type get_executor() noexcept { return next_.get_executor(); }
  next_layer_type& next_layer() noexcept { return next_; }
  const next_layer_type& next_layer() const noexcept { return next_; }

  template <typename MutableBuffers, typename ReadHandler>
  void async_read_some(const MutableBuffers& buffers, ReadHandler&& handler) {
    // The handler keeps its executor (Beast's operations are bound to the session's).
    auto executor = boost::asio::get_associated_executor(handler, next_.get_executor());
    next_.async_read_some(
        buffers, boost::asio::bind_executor(executor, [this, buffers, h = std::forward<ReadHandler>(handler)](
                                                          boost::beast::error_code ec, size_t n) mutable {
          if (n > 0) metered(buffers, n);
          h(ec, n);
        }));
  }

  template <typename ConstBuffers, typename WriteHandler>
  void async_write_some(const ConstBuffers& buffers, WriteHandler&& handler) {
    next_.async_write_some(buffers, std::forward<WriteHandler>(handler));
  }

 private:
  template <typename MutableBuffers>
  void metered(const MutableBuffers& buffers, size_t n) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers) && n > 0;
         ++it) {
      const boost::asio::mutable_buffer b = *it;
      const size_t take = std::min(n, b.size());
      n -= take;
      auto over = meter_.feed(std::span<const std::byte>(static_cast<const std::byte*>(b.data()), take));
      if (over && over_limit_) {
        auto f = std::move(over_limit_);
        over_limit_ = nullptr;
        f(*over);
        return;
      }
    }
  }

  next_layer_type next_;
  ws_frame_meter meter_;
  over_limit_fn over_limit_;
};

/// Beast's websocket teardown of the layer below (found by argument-dependent lookup).
inline void teardown(boost::beast::role_type role, ws_metered_stream& s, boost::beast::error_code& ec) {
  using boost::beast::websocket::teardown;
  teardown(role, s.next_layer(), ec);
}

template <typename TeardownHandler>
void async_teardown(boost::beast::role_type role, ws_metered_stream& s, TeardownHandler&& handler) {
  using boost::beast::websocket::async_teardown;
  async_teardown(role, s.next_layer(), std::forward<TeardownHandler>(handler));
}

}  // namespace ringlog::gateway
