#pragma once
// Text helpers every layer that reads or writes URLs and numbers shares (the gateway's routes, the
// CLI's client): strict integer parsing and percent-encoding of one URL path segment.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringlog::base {

/// A decimal integer in [min, max], the whole of `text` (no sign but '-', no spaces); nullopt
/// otherwise, including for an empty text and values outside int64.
std::optional<int64_t> parse_int(std::string_view text, int64_t min, int64_t max);

/// Percent-encodes one path segment (RFC 3986 section 2.1): every byte but the unreserved
/// ALPHA / DIGIT / "-" / "." / "_" / "~" becomes %XX, so an id such as "team/app" or "q?x" stays
/// one segment of a URL ("team%2Fapp").
std::string percent_encode_segment(std::string_view text);

}  // namespace ringlog::base
