#pragma once
// JWT validation for HTTP Bearer and SASL OAUTHBEARER (issue 29): one validator, the same keys
// and claim rules on both doors, as Kafka's OAuthBearerValidatorCallbackHandler (KIP-768).
//
// - Tokens: JWS compact serialization (RFC 7515 section 7.1), `header.payload.signature`,
//   base64url without padding. Algorithms (RFC 7518 section 3): RS256, RS384, RS512 (RSASSA
//   PKCS#1 v1.5), PS256 (RSASSA-PSS, MGF1 with SHA-256, salt length 32), ES256, ES384 (ECDSA,
//   P-256 / P-384, the signature is R || S). `none` and the HMAC family are refused: a shared
//   secret in a JWKS would let anyone who reads it mint tokens.
// - Keys: a JWKS document (RFC 7517): kty RSA (n, e) and kty EC (crv P-256 / P-384, x, y); keys
//   with `use` other than "sig" are skipped; `alg`, when a key names one, must match the token's.
//   A token with `kid` takes the key with that kid; a token without takes the only key of its
//   type. The validator takes the JWKS text: reading `file:` paths or fetching https URLs
//   (`sasl.oauthbearer.jwks.endpoint.url`) belongs to the app, which calls load_jwks() again;
//   the refresh hook tells it when a token names a kid it does not know (a key rotation).
// - Claims (RFC 7519 section 4.1): `exp` required, `nbf` and `iat` optional, each checked with
//   `sasl.oauthbearer.clock.skew.seconds`; `iss` against `sasl.oauthbearer.expected.issuer`
//   when set; `aud` (a string or a list) must hold one of `sasl.oauthbearer.expected.audience`
//   when set; the subject claim (`sasl.oauthbearer.sub.claim.name`, default `sub`) gives the
//   principal `User:<subject>`.
//
// Thread safety: validate() and load_jwks() may run on any threads at once; a load swaps the
// whole key set, and a validation sees either the old or the new one.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/base/result.h"
#include "ringlog/security/principal.h"

namespace ringlog::security {

/// Why a token was refused; each is named in the message the caller logs and answers with.
enum class jwt_errc {
  malformed,           // not three base64url parts, bad JSON, a claim of the wrong type, no exp
  alg_none_refused,    // alg "none" (an unsigned token)
  unsupported_alg,     // an alg outside RS256/384/512, PS256, ES256/384 (an HMAC alg HS256/384/512 too)
  unknown_kid,         // no key in the JWKS for the token's kid (or none of its type)
  bad_signature,       // the signature does not verify with the key
  expired,             // now > exp + skew
  not_yet_valid,       // now < nbf - skew, or iat in the future beyond the skew
  wrong_issuer,        // iss differs from sasl.oauthbearer.expected.issuer
  wrong_audience,      // aud holds none of sasl.oauthbearer.expected.audience
  no_subject,          // the subject claim is missing or not a non-empty string
  invalid_jwks         // load_jwks(): not a JWKS, or a key that does not decode
};

std::string_view to_string(jwt_errc);

using jwt_error = base::error<jwt_errc>;
template <typename T>
using jwt_result = base::result<T, jwt_error>;

/// Kafka's settings, with Kafka's names and defaults (KIP-768).
struct jwt_validator_config {
  /// sasl.oauthbearer.clock.skew.seconds: tolerance for exp, nbf and iat, [0, 3600] seconds.
  int64_t clock_skew_seconds = 30;
  /// sasl.oauthbearer.expected.issuer: empty = iss is not checked.
  std::string expected_issuer;
  /// sasl.oauthbearer.expected.audience: empty = aud is not checked.
  std::vector<std::string> expected_audience;
  /// sasl.oauthbearer.sub.claim.name: the claim that names the principal.
  std::string sub_claim_name = "sub";
};

/// What a valid token says.
struct jwt_claims {
  kafka_principal principal;   // User:<subject claim>
  int64_t expires_at_s = 0;    // exp, seconds since the epoch (KIP-368 session lifetime)
  std::string issuer;          // iss, empty when absent
  std::string scope;           // scope (a space-separated string), empty when absent
};

/// Bounds: a token or JWKS larger than these is refused before it is parsed.
inline constexpr size_t jwt_token_bytes_max = 16 * 1024;     // Kafka's tokens are ~1 KiB
inline constexpr size_t jwks_bytes_max = 1024 * 1024;        // providers publish a few keys
inline constexpr size_t jwks_keys_max = 64;

class jwt_validator {
 public:
  explicit jwt_validator(jwt_validator_config config);
  ~jwt_validator();
  jwt_validator(const jwt_validator&) = delete;
  jwt_validator& operator=(const jwt_validator&) = delete;

  /// Replaces the key set with the keys of a JWKS document; returns how many keys it kept.
  /// Errors: invalid_jwks when the text is not a JWKS, a usable key does not decode, or no key is
  /// usable (the old key set is then kept).
  jwt_result<size_t> load_jwks(std::string_view jwks_json);

  /// Checks a compact JWS token at `now_s` (seconds since the epoch). Errors: see jwt_errc.
  /// An unknown kid calls the refresh hook (the app re-reads the JWKS; the next attempt sees it).
  [[nodiscard]] jwt_result<jwt_claims> validate(std::string_view token, int64_t now_s) const;

  /// Called (on the validating thread) when a token names a kid the key set lacks. The hook must
  /// not block; it schedules a re-read and rate-limits it itself.
  void set_refresh_hook(std::function<void()> hook);

  [[nodiscard]] const jwt_validator_config& config() const { return config_; }

  struct key;       // one decoded JWK (an OpenSSL EVP_PKEY)
  struct key_set;   // the keys of one JWKS document

 private:
  [[nodiscard]] std::shared_ptr<const key_set> keys() const;

  jwt_validator_config config_;
  mutable std::mutex mutex_;  // guards keys_ and refresh_hook_ (swapped rarely, copied per call)
  std::shared_ptr<const key_set> keys_;
  std::function<void()> refresh_hook_;
};

/// base64url without padding (RFC 4648 section 5), as JWS uses it; nullopt on a byte outside the
/// alphabet or a length that cannot be.
std::optional<std::string> base64url_decode(std::string_view text);
std::string base64url_encode(std::string_view bytes);

}  // namespace ringlog::security
