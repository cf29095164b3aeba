#pragma once
// Private to the gateway: reaches the io_context of a shard_threads shard, for the server and
// tests. Including this header compiles Asio; keep it in the few Asio translation units.

#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "ringlog/gateway/shard_runtime.h"

namespace ringlog::gateway {

boost::asio::io_context& io_context_of(shard_threads& runtime, size_t shard);

/// The concrete executor of a shard's loop. Sockets and streams are typed with it rather than
/// with the type-erased any_io_executor: every asynchronous step copies, queries and destroys
/// its executor, and the type-erased one cost about 7% of the produce path in profiles.
using shard_executor = boost::asio::io_context::executor_type;
using shard_socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, shard_executor>;

}  // namespace ringlog::gateway
