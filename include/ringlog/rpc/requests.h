#pragma once
// Requests this node sends and answers it gives to other nodes over the transport (transport.h),
// encoded with Kafka's protocol (the cluster listener): shared by the broker's files (which name
// them through src/broker/rpc_messages.h) and the replica fetcher's (ringlog/partition).

#include <optional>
#include <span>
#include <string>
#include <string_view>
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

/// The closing "answer" (close_connection_frame) to a request from another node that cannot be
/// served: `what` names the request and `why` what is wrong with it.
inline void close_connection(const protocol::request_header_data& header, std::string_view what, std::string_view why,
                             respond_fn& respond) {
  respond(close_connection_frame(header, std::string(what) + " v" + std::to_string(header.request_api_version) + ": " +
                                             std::string(why)));
}

/// `body` decoded as a `Request` at the header's version; nullopt when it does not decode, and the
/// connection is then closed with the decode error (close_connection_frame; Kafka closes a
/// connection whose request it cannot parse).
template <typename Request>
inline std::optional<Request> decode_or_close(const protocol::request_header_data& header,
                                              std::span<const std::byte> body, respond_fn& respond) {
  protocol::reader rd(body);
  auto request = Request::decode(rd, header.request_api_version);
  if (!request.ok()) {
    close_connection(header, Request::schema_name, "does not decode: " + request.error().message, respond);
    return std::nullopt;
  }
  return std::move(request).value();
}

/// A request from another node: `body` decoded as a `Request` at the header's version and given to
/// `handle(request, answer)`, whose `answer(response)` sends the response at that version. A body
/// that does not decode closes the connection (decode_or_close).
template <typename Request, typename Handle>
inline void answer_request(const protocol::request_header_data& header, std::span<const std::byte> body,
                           respond_fn respond, Handle&& handle) {
  auto request = decode_or_close<Request>(header, body, respond);
  if (!request) return;
  handle(std::move(*request), [header, respond = std::move(respond)](const auto& response) mutable {
    respond_with(header, response, respond);
  });
}

}  // namespace ringlog::rpc
