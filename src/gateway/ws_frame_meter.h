#pragma once
// Reads a client's WebSocket byte stream as it arrives (RFC 6455 section 5.2, no extensions) to
// learn each data message's declared size from its frame headers, before the payload comes.
// Beast reads a frame's payload after its header and tells nothing of the declared length, so a
// frame that declares 2^63 bytes kept its connection waiting for bytes (the breaker of session 34)
// instead of closing at once with 1009; with Beast's own limit (read_message_max) it closes with
// no reason. ws_session closes with 1009 and the limit as soon as this meter sees the header.
// Pure: no Beast, no sockets.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ringlog::gateway {

class ws_frame_meter {
 public:
  /// `message_bytes_max`: the largest data message allowed (sum of its frames' payloads).
  explicit ws_frame_meter(uint64_t message_bytes_max) : message_bytes_max_(message_bytes_max) {}

  /// Feeds the next bytes read from the client. Returns the declared size of the data message
  /// that goes over the bound (saturated at UINT64_MAX) once a frame header shows it; nullopt
  /// while every message is within it. After it returned one, it keeps returning it.
  std::optional<uint64_t> feed(std::span<const std::byte> bytes) {
    size_t at = 0;
    while (at < bytes.size() && !over_) {
      if (payload_remaining_ > 0) {
        const uint64_t skip = std::min<uint64_t>(payload_remaining_, bytes.size() - at);
        payload_remaining_ -= skip;
        at += static_cast<size_t>(skip);
        continue;
      }
      header_[header_size_++] = bytes[at++];
      if (header_size_ == header_bytes_needed()) end_of_header();
    }
    return over_;
  }

 private:
  static constexpr uint8_t opcode_continuation = 0x0;
  static constexpr uint8_t control_opcodes_from = 0x8;   // close, ping, pong (section 5.5)

  [[nodiscard]] uint8_t byte(size_t i) const { return static_cast<uint8_t>(header_[i]); }

  /// The header's length once its first two bytes are known: 2, then 2 or 8 length bytes for a
  /// 7-bit length of 126 or 127, then 4 mask bytes when masked (section 5.2). 2 before that.
  [[nodiscard]] size_t header_bytes_needed() const {
    if (header_size_ < 2) return 2;
    const uint8_t length7 = byte(1) & 0x7f;
    const size_t length_bytes = length7 == 126 ? 2 : length7 == 127 ? 8 : 0;
    const size_t mask_bytes = (byte(1) & 0x80) != 0 ? 4 : 0;
    return 2 + length_bytes + mask_bytes;
  }

  void end_of_header() {
    const uint8_t length7 = byte(1) & 0x7f;
    uint64_t length = length7;
    if (length7 >= 126) {
      const size_t n = length7 == 126 ? 2 : 8;
      length = 0;
      for (size_t i = 0; i < n; ++i) length = (length << 8) | byte(2 + i);
    }
    header_size_ = 0;
    payload_remaining_ = length;
    const uint8_t opcode = byte(0) & 0x0f;
    if (opcode >= control_opcodes_from) return;   // control frames interleave; Beast bounds them (125)
    if (opcode != opcode_continuation) message_bytes_ = 0;
    message_bytes_ = length > UINT64_MAX - message_bytes_ ? UINT64_MAX : message_bytes_ + length;
    if (message_bytes_ > message_bytes_max_) over_ = message_bytes_;
  }

  uint64_t message_bytes_max_;
  std::array<std::byte, 14> header_{};   // the longest header: 2 + 8 length bytes + 4 mask bytes
  size_t header_size_ = 0;
  uint64_t payload_remaining_ = 0;
  uint64_t message_bytes_ = 0;            // declared so far in the current data message
  std::optional<uint64_t> over_;
};

}  // namespace ringlog::gateway
