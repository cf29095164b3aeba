#pragma once
// Requests this node sends and answers it gives to other nodes, encoded with Kafka's protocol
// (the cluster listener): shared by the broker's files and the replica fetcher's.

#include <utility>

#include "ringlog/base/assert.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/rpc/transport.h"

namespace ringlog::broker::detail {

/// The body of a request this node sends at `version` (the versions are chosen here, so an
/// encoding failure is a bug).
template <typename Message>
inline protocol::bytes encode_body(const Message& m, int16_t version) {
  protocol::writer w;
  auto ok = m.encode(w, version);
  RINGLOG_ASSERT(ok.ok(), "messages built here encode at the versions chosen here");
  return std::move(w).take();
}

/// Answers a request from another node with `response` at the request's version.
template <typename Response>
inline void respond_with(const protocol::request_header_data& header, const Response& response, rpc::respond_fn& respond) {
  protocol::writer w;
  if (protocol::encode_response_frame(w, header.request_api_version, header.correlation_id, response).ok()) {
    respond(std::move(w).take());
  }
}

}  // namespace ringlog::broker::detail
