#pragma once
// SASL server mechanisms (design.md section 3, "security: authenticators"), pure: they read the
// client's bytes and return the server's, with no sockets. The Kafka listener drives one per
// connection (SaslHandshake picks the mechanism; each SaslAuthenticate or raw token is one step).
//
// Mechanisms: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677; two steps: client-first ->
// server-first, client-final -> server-final), PLAIN (RFC 4616; one step), checked against the
// SCRAM store. OAUTHBEARER (RFC 7628) implements the same interface.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ringlog/security/jwt.h"
#include "ringlog/security/principal.h"
#include "ringlog/security/scram.h"

namespace ringlog::security {

/// What one step answers.
struct sasl_step {
  /// Bytes for the client (may be empty: PLAIN's success has none).
  std::string server_bytes;
  /// The exchange is over and the client is authenticated as `principal`.
  bool complete = false;
  std::optional<kafka_principal> principal;
  /// When the credential itself expires, seconds since the epoch (OAUTHBEARER: the token's exp);
  /// nullopt for passwords. KIP-368: the session lasts at most until then.
  std::optional<int64_t> credential_expires_at_s{};
};

/// One authentication exchange of one mechanism (a new object per attempt).
class sasl_server {
 public:
  virtual ~sasl_server() = default;
  /// The mechanism's SASL name, e.g. "SCRAM-SHA-512".
  [[nodiscard]] virtual std::string_view mechanism() const = 0;
  /// Takes the client's next message. Errors: sasl_authentication_failed with a message a client
  /// may be shown (never which of user or password was wrong); illegal_sasl_state for a step
  /// after completion or failure. After an error the exchange is over.
  virtual result<sasl_step> step(std::span<const std::byte> client_bytes) = 0;
  /// The user the client named so far ("" before it named one): for the audit line of a failure.
  [[nodiscard]] virtual std::string attempted_user() const = 0;
};

/// A SCRAM server for `m`. `server_nonce`: the server's part of the nonce (printable, no ','),
/// empty = scram_nonce_bytes of OpenSSL's random, base64-encoded (tests pass RFC 7677's).
/// An unknown user is answered like a known one with a made-up salt, and fails at the proof
/// (RFC 5802 section 9: the exchange does not reveal which users exist).
std::unique_ptr<sasl_server> make_scram_server(scram_mechanism m, scram_lookup lookup, std::string server_nonce = {});
/// A PLAIN server: `[authzid] NUL authcid NUL passwd`, checked against the user's SCRAM-SHA-512
/// credential, else its SCRAM-SHA-256 one. An authzid, when given, must equal authcid (Kafka's rule).
std::unique_ptr<sasl_server> make_plain_server(scram_lookup lookup);

/// An OAUTHBEARER server (RFC 7628, Kafka's KIP-255): one client message
/// `n,,\x01auth=Bearer <jwt>\x01\x01`, the JWT checked by `validator` at now_s() (seconds since the
/// epoch); the principal is User:<the token's subject claim>. An authzid (n,a=NAME,) must equal it.
std::unique_ptr<sasl_server> make_oauthbearer_server(std::shared_ptr<const jwt_validator> validator,
                                                     std::function<int64_t()> now_s);

/// A server for the mechanism named `mechanism` (a name of supported_sasl_mechanisms), or nullptr.
std::unique_ptr<sasl_server> make_sasl_server(std::string_view mechanism, scram_lookup lookup);

/// The mechanisms make_sasl_server makes, in the order a config lists them. OAUTHBEARER, also in
/// sasl.enabled.mechanisms, needs a validator: make_oauthbearer_server.
inline constexpr std::string_view supported_sasl_mechanisms[] = {"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"};

}  // namespace ringlog::security
