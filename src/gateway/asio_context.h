#pragma once
// Private to the gateway: reaches the io_context of a shard_threads shard, for the server and
// tests. Including this header compiles Asio; keep it in the few Asio translation units.

#include <boost/asio/io_context.hpp>

#include "ringlog/gateway/shard_runtime.h"

namespace ringlog::gateway {

boost::asio::io_context& io_context_of(shard_threads& runtime, size_t shard);

}  // namespace ringlog::gateway
