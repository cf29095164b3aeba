#include "ringlog/codec/errc.h"

namespace ringlog::codec {

std::string_view to_string(errc e) {
  switch (e) {
    case errc::truncated: return "truncated";
    case errc::invalid_length: return "invalid_length";
    case errc::unknown_magic: return "unknown_magic";
    case errc::crc_mismatch: return "crc_mismatch";
    case errc::unsupported_compression: return "unsupported_compression";
    case errc::decompression_failed: return "decompression_failed";
    case errc::invalid_varint: return "invalid_varint";
    case errc::invalid_record: return "invalid_record";
    case errc::too_large: return "too_large";
  }
  return "unknown_codec_errc";
}

}  // namespace ringlog::codec
