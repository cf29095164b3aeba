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

/// Beast reads at most a flat_buffer's free capacity per read_some: at least 512 bytes, at most
/// this (its own cap). A buffer left at 512 bytes reads a large body or answer in 512-byte
/// recvmsg calls, each with a composed operation and a timer re-arm, so buffers that meet large
/// messages reserve this much.
constexpr size_t beast_read_bytes_max = 65536;

/// Media type without parameters, lower case: "Application/JSON; charset=utf-8" -> "application/json".
std::string media_type_of(std::string_view header_value);
/// The charset parameter of a Content-Type, lowercased and unquoted (RFC 9110 8.3.2); "" when absent.
std::string charset_of(std::string_view header_value);
/// The first number in the JSON text `json` (outside strings) that a 64-bit reader cannot hold:
/// an integer outside [-2^63, 2^64 - 1] or a number whose magnitude overflows a double (1e400);
/// empty when there is none. A plain scan, not a parser: strings are skipped by their quotes
/// and backslash escapes, a number is a run of [-+.0-9eE] that starts with '-' or a digit. It
/// lets a refusal name the number simdjson and nlohmann only say is out of range.
std::string_view json_number_out_of_range(std::string_view json);
/// "a number in the <what> is out of range: <number> (integers must fit in 64 bits, other numbers
/// in a double)", naming the number json_number_out_of_range finds (its first 40 characters).
std::string json_number_out_of_range_message(std::string_view json, std::string_view what);
/// `text` read as ISO-8859-1 (every byte is the code point of its value, U+0000..U+00FF) and
/// written as UTF-8: bytes below 0x80 stay, the others become two bytes (0xC2/0xC3, then 0x80
/// plus the low six bits). Never fails: every byte string is Latin-1.
std::string latin1_to_utf8(std::string_view text);

/// Picks the offered type the Accept header prefers (highest q, then the order of `offered`).
/// An empty Accept accepts anything (the first offer). nullopt: nothing acceptable (answer 406).
std::optional<std::string> negotiate(std::string_view accept_header, const std::vector<std::string>& offered);

/// Percent-decoding ('+' is a space only in queries). nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space);


/// Splits "a=1&b=x%20y" into a map (later repeats win). nullopt on a malformed escape.
std::optional<std::map<std::string, std::string>> parse_query(std::string_view query);


/// Splits a target into path and query: "/a/b?x=1" -> {"/a/b", "x=1"}.
std::pair<std::string_view, std::string_view> split_target(std::string_view target);

/// `target` without its query parameters named `name` (compared percent-decoded), the others kept
/// as they were sent, in order: "/r?timeout=5&access_token=t" -> "/r?timeout=5"; no '?' is left
/// when none remains. A call passed on to another broker drops its ?access_token= so (a token is
/// this node's own, and the peer never needs it).
std::string without_query_parameter(std::string_view target, std::string_view name);

/// Matches a path template such as "/topics/{topic}/partitions/{partition}" against a request
/// path; fills `params` with the percent-decoded values. Segments match whole ("configs:alter").
bool match_path(std::string_view pattern, std::string_view path, std::map<std::string, std::string>& params);

/// Whether a request of `method` may change something (not GET, HEAD or OPTIONS, RFC 9110's safe
/// methods a browser sends across origins without asking): the CSRF token and the origin checks.
inline bool state_changing(std::string_view method) { return method != "GET" && method != "HEAD" && method != "OPTIONS"; }

/// Whether a browser Origin (RFC 6454 serialization, "scheme://host[:port]") is allowed by
/// http.cors.allowed.origins: "*" allows any; otherwise an exact, case-insensitive match. An
/// empty list (the default) allows none.
bool origin_allowed(const std::vector<std::string>& allowed, std::string_view origin);
/// Whether `origin` names the server the request was sent to: its scheme is the listener's (http,
/// or https when `https`) and its host[:port] is the request's Host header (case-insensitive;
/// RFC 6454 section 5 compares all three). This server's own pages (the console) are always allowed.
bool same_origin(std::string_view origin, std::string_view host, bool https);
/// RFC 9112 section 3.2.2: an absolute-form request target ("http://host:port/path?q") of the
/// listener's scheme (`https`) as (its origin-form "/path?q", its authority "host:port"); the
/// server then takes that authority as the request's Host, whatever the Host header says (the
/// origin and DNS-rebinding checks read it). nullopt for another scheme, no authority, or userinfo.
std::optional<std::pair<std::string, std::string>> origin_form(std::string_view target, bool https);
/// Whether a Host header (RFC 9110 section 7.2: host[:port]) names this server for a plaintext
/// request: an IPv4 address, a bracketed IPv6 address, localhost or a name under .localhost
/// (RFC 6761), or a name in `names` (case-insensitive, a trailing dot ignored; "*" allows any).
/// An empty header is allowed (HTTP/1.0 clients send none; no browser does). A DNS-rebinding
/// page sends its own name, which is none of these.
bool host_permitted(const std::vector<std::string>& names, std::string_view host);
/// origin_allowed or same_origin: whether a browser page of `origin` may call this server.
bool origin_permitted(const std::vector<std::string>& allowed, std::string_view origin, std::string_view host,
                      bool https);

/// Whether an If-None-Match header (RFC 9110 section 13.1.2: "*" or a comma-separated list of
/// entity tags) matches `etag` (a quoted strong tag such as "\"ab12\""). Weak comparison: a
/// W/ prefix on either side is ignored, as a GET's If-None-Match requires.
bool etag_matches(std::string_view if_none_match, std::string_view etag);

}  // namespace ringlog::gateway
