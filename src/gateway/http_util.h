#pragma once
// Pure HTTP helpers for the route handlers: media types and content negotiation (RFC 9110
// section 12.5.1), query strings, strict integer parsing, and path templates.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/base/text.h"

namespace ringlog::gateway {

// Shared with the CLI (ringlog/base/text.h).
using base::parse_int;
using base::percent_encode_segment;


/// Media type without parameters, lower case: "Application/JSON; charset=utf-8" -> "application/json".
std::string media_type_of(std::string_view header_value);
/// The charset parameter of a Content-Type, lowercased and unquoted (RFC 9110 8.3.2); "" when absent.
std::string charset_of(std::string_view header_value);

/// Picks the offered type the Accept header prefers (highest q, then the order of `offered`).
/// An empty Accept accepts anything (the first offer). nullopt: nothing acceptable (answer 406).
std::optional<std::string> negotiate(std::string_view accept_header, const std::vector<std::string>& offered);

/// Percent-decoding ('+' is a space only in queries). nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space);


/// Splits "a=1&b=x%20y" into a map (later repeats win). nullopt on a malformed escape.
std::optional<std::map<std::string, std::string>> parse_query(std::string_view query);


/// Splits a target into path and query: "/a/b?x=1" -> {"/a/b", "x=1"}.
std::pair<std::string_view, std::string_view> split_target(std::string_view target);

/// Matches a path template such as "/topics/{topic}/partitions/{partition}" against a request
/// path; fills `params` with the percent-decoded values. Segments match whole ("configs:alter").
bool match_path(std::string_view pattern, std::string_view path, std::map<std::string, std::string>& params);

/// Whether a browser Origin (RFC 6454 serialization, "scheme://host[:port]") is allowed by
/// http.cors.allowed.origins: "*" allows any; otherwise an exact, case-insensitive match.
bool origin_allowed(const std::vector<std::string>& allowed, std::string_view origin);

/// Whether an If-None-Match header (RFC 9110 section 13.1.2: "*" or a comma-separated list of
/// entity tags) matches `etag` (a quoted strong tag such as "\"ab12\""). Weak comparison: a
/// W/ prefix on either side is ignored, as a GET's If-None-Match requires.
bool etag_matches(std::string_view if_none_match, std::string_view etag);

}  // namespace ringlog::gateway
