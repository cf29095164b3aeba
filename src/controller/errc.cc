#include "ringlog/controller/errc.h"

namespace ringlog::controller {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::invalid_record: return "invalid_record";
    case errc::unsupported_version: return "unsupported_version";
    case errc::not_leader_or_follower: return "not_leader_or_follower";
    case errc::request_timed_out: return "request_timed_out";
    case errc::record_too_large: return "record_too_large";
    case errc::uncommitted_limit_reached: return "uncommitted_limit_reached";
    case errc::kafka_storage_error: return "kafka_storage_error";
    case errc::shutting_down: return "shutting_down";
  }
  return "unknown";
}

}  // namespace ringlog::controller
