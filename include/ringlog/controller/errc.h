#pragma once
// The controller module's error codes (Kafka's names in snake_case).

#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::controller {

enum class errc {
  invalid_record,        // a metadata record that does not fit the image (names the record and why)
  unsupported_version,   // a metadata record version this node cannot read
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

}  // namespace ringlog::controller
