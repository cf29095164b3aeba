#pragma once
#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::storage {

/// Storage failures, named as Kafka's error codes where one exists.
enum class errc {
  offset_out_of_range,     // read/lookup outside [log_start_offset, log_end_offset]
  corrupt_message,         // a batch failed validation (CRC, length, format)
  message_too_large,       // batch larger than max.message.bytes
  invalid_timestamp,       // record timestamp outside the allowed window
  kafka_storage_error,     // disk failure: the log directory must not be served any more
  invalid_config,          // a log config value out of range (message names the key)
  too_many_segments,       // segments_per_partition_max reached
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::storage
