#pragma once
// Reaches the io_context of a shard_threads shard, for modules that own sockets and timers on a
// shard (the HTTP server, the cluster transport) and their tests. Including this header compiles
// Asio: keep it in the few Asio translation units (they dominate build time on 2 cores).

#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "ringlog/runtime/shard_threads.h"

namespace ringlog::runtime {

boost::asio::io_context& io_context_of(shard_threads& runtime, size_t shard);

/// The concrete executor of a shard's loop. Sockets and streams are typed with it rather than
/// with the type-erased any_io_executor: every asynchronous step copies, queries and destroys
/// its executor, and the type-erased one cost about 7% of the produce path in profiles.
using shard_executor = boost::asio::io_context::executor_type;
using shard_socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, shard_executor>;

}  // namespace ringlog::runtime
