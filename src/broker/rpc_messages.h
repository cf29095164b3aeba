#pragma once
// The rpc module's helpers for requests between nodes (ringlog/rpc/requests.h: encode_body,
// respond_with, answer_request, decode_or_close, close_connection) under the names the broker's files use.

#include "ringlog/rpc/requests.h"

namespace ringlog::broker::detail {

using ::ringlog::rpc::answer_request;
using ::ringlog::rpc::close_connection;
using ::ringlog::rpc::decode_or_close;
using ::ringlog::rpc::encode_body;
using ::ringlog::rpc::respond_with;

}  // namespace ringlog::broker::detail
