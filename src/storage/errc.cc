#include "ringlog/storage/errc.h"

namespace ringlog::storage {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::offset_out_of_range: return "offset_out_of_range";
    case errc::corrupt_message: return "corrupt_message";
    case errc::message_too_large: return "message_too_large";
    case errc::invalid_timestamp: return "invalid_timestamp";
    case errc::kafka_storage_error: return "kafka_storage_error";
    case errc::invalid_config: return "invalid_config";
    case errc::too_many_segments: return "too_many_segments";
  }
  return "unknown";
}

}  // namespace ringlog::storage
