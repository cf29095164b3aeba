#pragma once
// A small JSON reader for the JOSE documents security reads itself: a JWT's header and claims
// and a JWKS (RFC 7515, 7517, 7519). Security sits below the gateway and the Kafka listener and
// both hand it tokens (HTTP Bearer, SASL OAUTHBEARER), so it cannot borrow the gateway's
// nlohmann (tests/layering) and the callers should not parse claims for it: the bytes that were
// signed are the bytes whose claims are checked. RFC 8259, iterative (no recursion), bounded.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringlog::security::detail {

/// Nesting bound: a JWKS is 3 deep ({"keys":[{...}]}); claims with nested objects rarely pass 4.
inline constexpr size_t json_depth_max = 16;

struct json_value {
  enum class kind { null, boolean, number, string, array, object };
  kind type = kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;                                          // kind::string
  std::vector<json_value> items;                             // kind::array
  std::vector<std::pair<std::string, json_value>> members;   // kind::object, in document order

  /// The first member named `key` of an object; nullptr for other kinds or a missing key.
  [[nodiscard]] const json_value* find(std::string_view key) const;
  /// The member `key` when it is a string; nullopt otherwise.
  [[nodiscard]] std::optional<std::string_view> string_at(std::string_view key) const;
  /// The member `key` when it is a number with an integral value in int64; nullopt otherwise.
  [[nodiscard]] std::optional<int64_t> integer_at(std::string_view key) const;
};

/// Parses one JSON document (whitespace around it allowed). nullopt on any syntax error, a
/// nesting deeper than json_depth_max, a duplicate member name (RFC 7515 section 4), or bytes
/// after the document; `why` then says what.
std::optional<json_value> parse_json(std::string_view text, std::string* why);

}  // namespace ringlog::security::detail
