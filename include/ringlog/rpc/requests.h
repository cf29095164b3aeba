#pragma once
// Requests this node sends and answers it gives to other nodes over the transport (transport.h),
// encoded with Kafka's protocol (the cluster listener): shared by the broker's files (which name
// them through src/broker/rpc_messages.h) and the replica fetcher's (ringlog/partition).

#include <span>
#include <utility>

#include "ringlog/base/assert.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/rpc/transport.h"

namespace ringlog::rpc {

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
inline void respond_with(const protocol::request_header_data& header, const Response& response, respond_fn& respond) {
  protocol::writer w;
  if (protocol::encode_response_frame(w, header.request_api_version, header.correlation_id, response).ok()) {
    respond(std::move(w).take());
  }
}

/// A request from another node: `body` decoded as a `Request` at the header's version and given to
/// `handle(request, answer)`, whose `answer(response)` sends the response at that version. A body
/// that does not decode is not answered: the sender's request times out and it asks again.
template <typename Request, typename Handle>
inline void answer_request(const protocol::request_header_data& header, std::span<const std::byte> body,
                           respond_fn respond, Handle&& handle) {
  protocol::reader rd(body);
  auto request = Request::decode(rd, header.request_api_version);
  if (!request.ok()) return;
  handle(std::move(request).value(), [header, respond = std::move(respond)](const auto& response) mutable {
    respond_with(header, response, respond);
  });
}

}  // namespace ringlog::rpc
