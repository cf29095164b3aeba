#pragma once
// Text helpers every layer that reads or writes URLs and numbers shares (the gateway's routes, the
// CLI's client): strict integer parsing, percent-encoding of one URL path segment, and the items
// of a comma-separated list (the config file's and the Kafka protocol's LIST values).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringlog::base {

/// A decimal integer in [min, max], the whole of `text` (no sign but '-', no spaces); nullopt
/// otherwise, including for an empty text and values outside int64.
std::optional<int64_t> parse_int(std::string_view text, int64_t min, int64_t max);

/// Percent-encodes one path segment (RFC 3986 section 2.1): every byte but the unreserved
/// ALPHA / DIGIT / "-" / "." / "_" / "~" becomes %XX, so an id such as "team/app" or "q?x" stays
/// one segment of a URL ("team%2Fapp").
std::string percent_encode_segment(std::string_view text);

/// `text` without the blanks (' ', '\t', '\f', '\r') at either end.
std::string_view trim_blanks(std::string_view text);

/// The items of a comma-separated list, as Kafka's ConfigDef reads a LIST value (split on
/// "\s*,\s*"): split on ',', each trimmed of blanks (trim_blanks). Empty items stay, in their
/// place ("a,,b" -> {"a", "", "b"}), for callers that refuse them; a list blank as a whole has no
/// items. The views point into `list`.
std::vector<std::string_view> split_list(std::string_view list);

}  // namespace ringlog::base
