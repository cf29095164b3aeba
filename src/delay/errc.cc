#include "ringlog/delay/errc.h"

namespace ringlog::delay {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::invalid_record: return "invalid_record";
    case errc::corrupt_message: return "corrupt_message";
    case errc::unsupported_version: return "unsupported_version";
    case errc::invalid_config: return "invalid_config";
  }
  return "unknown";
}

}  // namespace ringlog::delay
