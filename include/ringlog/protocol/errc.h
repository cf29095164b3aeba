#pragma once
// Errors of the Kafka wire codec (protocol guide, "Protocol Primitive Types"). Every decode error
// message names the message, version and field path, e.g.
// "VoteRequest v0: candidate_epoch: truncated at byte 17 of 16".

#include <string>
#include <string_view>

#include "ringlog/base/result.h"

namespace ringlog::protocol {

enum class errc {
  truncated,             // a read needs more bytes than the buffer holds
  invalid_length,        // a length or count is negative (other than -1 for null), or longer than what is left
  invalid_varint,        // a varint longer than its type allows (5 bytes for 32 bits, 10 for 64)
  unsupported_version,   // the version is outside validVersions, or a field set to a non-default value is
                         // not in the version being encoded and is not ignorable
  invalid_tagged_field,  // a known tagged field whose bytes do not match its declared size, or a repeated tag
  null_value,            // null in a field that is not nullable in this version
  unknown_api_key,       // an api key (or metadata record type) this codec does not know
  trailing_bytes,        // bytes left after a message that must fill its frame
};

std::string_view to_string(errc);

using error = base::error<errc>;
template <typename T>
using result = base::result<T, error>;

/// Returns e with `prefix` put before its message (used to build the field path while unwinding).
error with_prefix(error e, std::string_view prefix);

}  // namespace ringlog::protocol
