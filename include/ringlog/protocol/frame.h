#pragma once
// Request and response frames (protocol guide, "Requests and Responses"):
//   request  = int32 size, request header (v1, or v2 when the request version is flexible), body
//   response = int32 size, response header (v0, or v1 when flexible; ApiVersions always v0), body
// `size` counts the bytes after itself. These helpers pick the header version from the api key
// and version, so a transport never chooses one by hand.

#include <cstddef>
#include <cstdint>
#include <span>

#include "ringlog/protocol/messages.h"

namespace ringlog::protocol {

/// Bytes of the size prefix of every frame.
inline constexpr size_t frame_size_bytes = 4;

/// A decoded request header and where the body starts.
struct request_header_and_offset {
  request_header_data header;
  int16_t header_version = 0;
  size_t body_offset = 0;  // bytes from the start of the frame (after the size prefix) to the body
};

/// Decodes the request header at the start of `frame` (the bytes after the size prefix). The
/// api key and version (the first 4 bytes, the same in every header version) choose the header
/// version. Errors: truncated, unknown_api_key, unsupported_version, and the header's own. On
/// unknown_api_key / unsupported_version, peek_correlation_id still gives the id to answer with.
result<request_header_and_offset> decode_request_header(std::span<const std::byte> frame);

/// The correlation id of a request frame (bytes 4..7 after the size prefix in header v0..v2).
/// Errors: truncated.
result<int32_t> peek_correlation_id(std::span<const std::byte> frame);

/// Decodes the response header of a response to (api_key, api_version) at the start of `frame`.
/// Errors: truncated, unknown_api_key, unsupported_version.
result<response_header_data> decode_response_header(reader& rd, int16_t api_key, int16_t api_version);

/// Writes a whole request frame: size, header (version chosen from the api), body. The header's
/// api key must be Body's. Errors: unknown_api_key, unsupported_version and the body's own.
template <typename Body>
result<void> encode_request_frame(writer& w, const request_header_data& header, const Body& body) {
  if (header.request_api_key != Body::api_key) {
    return error{errc::unknown_api_key, "request header api key " + std::to_string(header.request_api_key) +
                                            " does not match " + std::string(Body::schema_name)};
  }
  auto header_version = request_header_version(header.request_api_key, header.request_api_version);
  if (!header_version.ok()) {
    return header_version.error();
  }
  const size_t start = w.size();
  w.write_int32(0);
  RINGLOG_TRY(header.encode(w, *header_version));
  RINGLOG_TRY(body.encode(w, header.request_api_version));
  w.patch_int32(start, static_cast<int32_t>(w.size() - start - frame_size_bytes));
  return base::ok_v;
}

/// Writes a whole response frame for a request of Body's api at `api_version`.
template <typename Body>
result<void> encode_response_frame(writer& w, int16_t api_version, int32_t correlation_id, const Body& body) {
  auto header_version = response_header_version(Body::api_key, api_version);
  if (!header_version.ok()) {
    return header_version.error();
  }
  const size_t start = w.size();
  w.write_int32(0);
  response_header_data header;
  header.correlation_id = correlation_id;
  RINGLOG_TRY(header.encode(w, *header_version));
  RINGLOG_TRY(body.encode(w, api_version));
  w.patch_int32(start, static_cast<int32_t>(w.size() - start - frame_size_bytes));
  return base::ok_v;
}

}  // namespace ringlog::protocol
