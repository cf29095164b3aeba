#pragma once
#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::codec {

/// Why a byte sequence is not a valid Kafka record batch.
enum class errc {
  truncated,                // fewer bytes than the format says are there
  invalid_length,           // batch_length / record length / varint length out of range
  unknown_magic,            // magic byte is not 2
  crc_mismatch,             // stored CRC-32C differs from the computed one
  unsupported_compression,  // gzip/snappy/zstd or an undefined codec value
  decompression_failed,     // lz4 frame is corrupt or larger than its limit
  invalid_varint,           // varint longer than 10 bytes or overflowing
  invalid_record,           // record fields inconsistent with the batch header
  too_large,                // a named limit in base/constants.h was exceeded
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::codec
