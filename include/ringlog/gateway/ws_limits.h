#pragma once
// Limits of the /v1/ws WebSocket protocol that clients must respect (http-api/ws-protocol.md):
// the CLI's load generator reads them from here rather than keeping its own copy.

#include <cstddef>

namespace ringlog::gateway {

/// Largest WebSocket message a client may send, bytes: a produce of one record up to Kafka's
/// default message.max.bytes (1 MiB) in base64 (4/3) plus JSON framing. Larger: close 1009.
inline constexpr size_t ws_message_bytes_max = 2 * 1024 * 1024;

}  // namespace ringlog::gateway
