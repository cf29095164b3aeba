#pragma once
// Delayed-delivery failures (issue 18), named as Kafka's error codes where one exists.

#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::delay {

enum class errc {
  invalid_record,     // a ringlog-deliver-at header that is not a decimal ms count, or a delay past delay.max.ms
  corrupt_message,    // a delay record or scheduler checkpoint that does not decode (message says where)
  unsupported_version, // a scheduler checkpoint of a version this code does not know
  invalid_config       // a retry setting out of its bounds (the message names the key)
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::delay
