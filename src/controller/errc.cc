#include "ringlog/controller/errc.h"

namespace ringlog::controller {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::invalid_record: return "invalid_record";
    case errc::unsupported_version: return "unsupported_version";
  }
  return "unknown";
}

}  // namespace ringlog::controller
