#include "ringlog/rpc/errc.h"

namespace ringlog::rpc {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::connect_failed: return "connect_failed";
    case errc::connection_refused: return "connection_refused";
    case errc::disconnected: return "disconnected";
    case errc::timeout: return "timeout";
    case errc::too_many_in_flight: return "too_many_in_flight";
    case errc::malformed_response: return "malformed_response";
    case errc::listen_failed: return "listen_failed";
    case errc::invalid_request: return "invalid_request";
    case errc::unknown_peer: return "unknown_peer";
    case errc::shutting_down: return "shutting_down";
  }
  return "unknown";
}

}  // namespace ringlog::rpc
