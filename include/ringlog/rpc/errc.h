#pragma once
// Failures of the cluster transport. Every request's callback receives exactly one result: a
// response body or one of these (never silence).

#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::rpc {

enum class errc {
  connect_failed,       // the TCP connect to the peer failed or timed out (message: host:port and why)
  connection_refused,   // the peer's host refused the connect (ECONNREFUSED): nothing listens on its
                        // cluster port, so its process is gone or stopping - a definite answer, unlike
                        // a timeout, which a paused or cut-off peer also gives
  disconnected,         // the connection broke (EOF, reset) before the response arrived
  timeout,              // no response within the request's timeout
  too_many_in_flight,   // constants::client_pending_requests_max requests already wait on this peer
  malformed_response,   // a response frame that does not decode (bad size, bad header)
  listen_failed,        // the listener could not bind or listen (message: host:port and why)
  invalid_request,      // a request that cannot be framed (an api key or version the codec does not know)
  unknown_peer,         // a node id with no address in the transport
  shutting_down,        // the transport was stopped
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::rpc
