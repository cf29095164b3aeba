#include "ringlog/protocol/frame.h"

namespace ringlog::protocol {

result<int32_t> peek_correlation_id(std::span<const std::byte> frame) {
  reader rd(frame);
  for (int i = 0; i < 2; ++i) {
    auto skip = rd.read_int16();
    if (!skip.ok()) {
      return with_prefix(skip.error(), "request header: ");
    }
  }
  auto id = rd.read_int32();
  if (!id.ok()) {
    return with_prefix(id.error(), "request header: correlation_id: ");
  }
  return *id;
}

result<request_header_and_offset> decode_request_header(std::span<const std::byte> frame) {
  reader peek(frame);
  auto key = peek.read_int16();
  if (!key.ok()) {
    return with_prefix(key.error(), "request header: request_api_key: ");
  }
  auto version = peek.read_int16();
  if (!version.ok()) {
    return with_prefix(version.error(), "request header: request_api_version: ");
  }
  auto header_version = request_header_version(*key, *version);
  if (!header_version.ok()) {
    return header_version.error();
  }
  reader rd(frame);
  auto header = request_header_data::decode(rd, *header_version);
  if (!header.ok()) {
    return header.error();
  }
  return request_header_and_offset{std::move(*header), *header_version, rd.position()};
}

result<response_header_data> decode_response_header(reader& rd, int16_t api_key, int16_t api_version) {
  auto header_version = response_header_version(api_key, api_version);
  if (!header_version.ok()) {
    return header_version.error();
  }
  return response_header_data::decode(rd, *header_version);
}

}  // namespace ringlog::protocol
