#pragma once
// Range-checked fields of nlohmann::json request bodies (the v2 consumer API, the WebSocket).
// nlohmann's get<int32_t>() converts with a cast: 4294967297 silently becomes 1.

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "errors.h"
#include "http_util.h"

namespace ringlog::gateway {

/// A partition id: a JSON integer in [0, 2147483647] (Kafka's partition ids are int32). nullopt
/// for anything else, so 2^32 is refused rather than read as partition 0.
inline std::optional<int32_t> json_partition(const nlohmann::json& v) {
  constexpr uint64_t partition_max = std::numeric_limits<int32_t>::max();
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u <= partition_max ? std::optional<int32_t>(static_cast<int32_t>(u)) : std::nullopt;
  }
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t i = v.get<int64_t>();
  if (i < 0 || static_cast<uint64_t>(i) > partition_max) return std::nullopt;
  return static_cast<int32_t>(i);
}

/// How json_partition's refusals name the range.
inline constexpr const char* json_partition_range = "an integer in [0, 2147483647]";

/// The deepest nesting of objects and arrays a JSON request body or WebSocket message may have:
/// simdjson's default max_depth, which the simdjson-parsed routes already enforce, so every door
/// refuses the same depth. nlohmann parses any depth but copies and dumps recursively: a
/// WebSocket message nested 100,000 deep overflowed the broker's stack (breaker, session 28).
inline constexpr size_t json_nesting_depth_max = 1024;

/// Whether `text` nests objects and arrays deeper than `limit` (brackets inside strings, escaped
/// quotes included, do not count). Linear, no allocation; stops at the first level past `limit`.
inline bool json_nests_deeper_than(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > limit) return true;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

/// `text` parsed as one JSON value, or a discarded value (is_discarded()) with `refusal` set:
/// 422 naming a number out of a 64-bit reader's range (json_number_out_of_range_message; nlohmann
/// calls 1e400 an overflow, simdjson's routes refuse it the same way), else 400 "malformed JSON
/// <what>: <the parser's reason>" without nlohmann's "[json.exception...]" prefix, e.g. "syntax
/// error while parsing value - invalid literal; last read: 'x'", or 400 "malformed JSON <what>:
/// objects and arrays nested deeper than 1024 levels" (json_nesting_depth_max). `what`: "request
/// body", "message".
inline nlohmann::json parse_json(std::string_view text, std::string_view what, api_error& refusal) {
  if (json_nests_deeper_than(text, json_nesting_depth_max)) {
    refusal = {400, error_codes::bad_request,
               "malformed JSON " + std::string(what) + ": objects and arrays nested deeper than " +
                   std::to_string(json_nesting_depth_max) + " levels (json_nesting_depth_max)"};
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range&) {
    refusal = {422, error_codes::unprocessable, json_number_out_of_range_message(text, what)};
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();
    if (!why.empty() && why.front() == '[') {
      if (const auto end = why.find("] "); end != std::string::npos) why.erase(0, end + 2);
    }
    refusal = {400, error_codes::bad_request, "malformed JSON " + std::string(what) + ": " + why};
  }
  return nlohmann::json(nlohmann::json::value_t::discarded);
}

}  // namespace ringlog::gateway
