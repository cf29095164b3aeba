#include "ringlog/rpc/transport.h"

#include <algorithm>
#include <array>

namespace ringlog::rpc {

namespace {
constexpr int16_t api_versions_api_key = 18;   // protocol guide: ApiVersions; v0's body is empty
/// A close_connection_frame's first bytes: a size prefix no response frame has (-1).
constexpr std::array<std::byte, 4> close_marker{std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff}};
/// The marker, then the api key and the api version (int16 each, big-endian), then the reason.
constexpr size_t close_reason_at = close_marker.size() + 4;

void put_int16(bytes& out, int16_t v) {
  out.push_back(static_cast<std::byte>((static_cast<uint16_t>(v) >> 8) & 0xff));
  out.push_back(static_cast<std::byte>(static_cast<uint16_t>(v) & 0xff));
}

int16_t get_int16(std::span<const std::byte> in, size_t at) {
  return static_cast<int16_t>((static_cast<uint16_t>(in[at]) << 8) | static_cast<uint16_t>(in[at + 1]));
}
}  // namespace

bytes close_connection_frame(const protocol::request_header_data& header, std::string_view why) {
  bytes out(close_marker.begin(), close_marker.end());
  put_int16(out, header.request_api_key);
  put_int16(out, header.request_api_version);
  for (char c : why) out.push_back(static_cast<std::byte>(c));
  return out;
}

std::optional<close_connection_request> as_close_connection(std::span<const std::byte> frame) {
  if (frame.size() < close_reason_at || !std::equal(close_marker.begin(), close_marker.end(), frame.begin())) {
    return std::nullopt;
  }
  close_connection_request r;
  r.api_key = get_int16(frame, close_marker.size());
  r.api_version = get_int16(frame, close_marker.size() + 2);
  r.why.assign(reinterpret_cast<const char*>(frame.data() + close_reason_at), frame.size() - close_reason_at);
  return r;
}

void probe_listening(transport& t, int32_t to, int64_t timeout_ms, std::function<void(result<void>)> done) {
  t.send(to, api_versions_api_key, 0, bytes{}, timeout_ms, [done = std::move(done)](result<bytes> r) {
    if (!r.ok()) return done(r.error());
    done(base::ok_v);
  });
}

}  // namespace ringlog::rpc
