#pragma once
// SCRAM credentials (RFC 5802 section 3, RFC 7677): what the SCRAM store keeps per user and
// mechanism instead of a password, and how they are derived (PBKDF2 by OpenSSL). The same
// credentials check PLAIN logins (RFC 4616): derive with the stored salt and iterations and compare
// the stored key, so no plaintext password is ever kept.
//
// They are metadata records (Kafka's UserScramCredentialRecord), replicated to every node; this
// header is the pure part, without the store.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/security/errc.h"

namespace ringlog::security {

using bytes = std::vector<std::byte>;

namespace constants {
/// Kafka's bounds for a SCRAM credential's iteration count (ScramMechanism.minIterations() is
/// 4096, RFC 7677's minimum for SHA-256; maxIterations() 16384, which bounds the PBKDF2 work one
/// PLAIN login or one AlterUserScramCredentials costs a broker, a few milliseconds).
inline constexpr int32_t scram_iterations_min = 4096;
inline constexpr int32_t scram_iterations_max = 16384;
/// Iterations when an operator names none (Kafka's kafka-storage and kafka-configs use 4096).
inline constexpr int32_t scram_iterations_default = 4096;
/// Bytes of a salt made here (Kafka's ScramFormatter.secureRandomBytes: 32 bytes of SecureRandom).
inline constexpr size_t scram_salt_bytes = 32;
/// Longest salt accepted from a client (AlterUserScramCredentials) or --add-scram: far above any
/// real salt, small enough that a record stays small.
inline constexpr size_t scram_salt_bytes_max = 1024;
/// Random bytes in the server's part of a SCRAM nonce (base64-encoded on the wire; Kafka uses 32
/// characters of a secure random).
inline constexpr size_t scram_nonce_bytes = 24;
/// Longest SCRAM or PLAIN message a server reads (a username, a nonce and a proof fit in a few
/// hundred bytes; Kafka's SaslServerAuthenticator caps a token at 512 KiB, far above this).
inline constexpr size_t sasl_message_bytes_max = 64 * 1024;
/// Passwords one thread's verified_passwords keeps (each entry ~200 bytes): far more users than
/// one HTTP listener's clients use at once; past it the oldest is verified again (one PBKDF2).
inline constexpr size_t verified_passwords_max = 4096;
}  // namespace constants

enum class scram_mechanism : int8_t {
  sha_256 = 1,   // Kafka's ScramMechanism type 1 (SCRAM-SHA-256)
  sha_512 = 2,   // Kafka's ScramMechanism type 2 (SCRAM-SHA-512)
};

/// "SCRAM-SHA-256" / "SCRAM-SHA-512" (the SASL mechanism names of RFC 7677 / IANA).
std::string_view mechanism_name(scram_mechanism m);
/// The mechanism a SASL name names; nullopt for any other name.
std::optional<scram_mechanism> parse_scram_mechanism(std::string_view name);
/// Kafka's ScramMechanism type number (AlterUserScramCredentials, UserScramCredentialRecord);
/// nullopt for 0 (UNKNOWN) or anything else.
std::optional<scram_mechanism> scram_mechanism_from_type(int8_t type);
/// Bytes of the mechanism's hash: 32 or 64.
size_t digest_bytes(scram_mechanism m);

/// One user's credential for one mechanism (RFC 5802 section 3): StoredKey = H(ClientKey),
/// ServerKey = HMAC(SaltedPassword, "Server Key"), ClientKey = HMAC(SaltedPassword, "Client Key"),
/// SaltedPassword = PBKDF2(password, salt, iterations).
struct scram_credential {
  scram_mechanism mechanism = scram_mechanism::sha_512;
  bytes salt;
  bytes stored_key;
  bytes server_key;
  int32_t iterations = constants::scram_iterations_default;
  bool operator==(const scram_credential&) const = default;
};

/// Errors: invalid_config when iterations are outside scram_iterations_min..max (inclusive) or
/// the salt is empty or longer than scram_salt_bytes_max (the message names which).
result<void> check_credential_shape(int32_t iterations, std::span<const std::byte> salt);
/// The credential of `password` with this salt and iteration count. Errors: as
/// check_credential_shape.
result<scram_credential> derive_scram_credential(scram_mechanism m, std::string_view password,
                                                 std::span<const std::byte> salt, int32_t iterations);
/// The credential of a SaltedPassword a client computed (AlterUserScramCredentials sends that,
/// never the password; KIP-554). Errors: as check_credential_shape, and invalid_config when the
/// salted password is not the mechanism's digest size.
result<scram_credential> credential_from_salted_password(scram_mechanism m, std::span<const std::byte> salted_password,
                                                         std::span<const std::byte> salt, int32_t iterations);
/// The same with a new random salt of scram_salt_bytes (OpenSSL's RAND_bytes).
result<scram_credential> new_scram_credential(scram_mechanism m, std::string_view password, int32_t iterations);
/// True when `password` is the one `credential` was derived from (a PBKDF2 with its salt and
/// iterations, then H(ClientKey) compared with the stored key in constant time).
bool password_matches(const scram_credential& credential, std::string_view password);

/// `n` bytes of OpenSSL's cryptographically secure random (RAND_bytes; aborts if it fails, which
/// OpenSSL documents only for an unseeded generator).
bytes random_bytes(size_t n);

/// The SCRAM store as the mechanisms see it: a user's credential for a mechanism, or nullopt.
/// Called on the connection's thread; must be safe there (the store is an immutable image).
using scram_lookup = std::function<std::optional<scram_credential>(std::string_view user, scram_mechanism m)>;

/// True when `user` has a credential (SCRAM-SHA-512's, else SCRAM-SHA-256's) and `password` is
/// its password: HTTP Basic, the console's login and SASL PLAIN. An unknown user costs one PBKDF2
/// at scram_iterations_default too, so the answer's time does not tell which users exist (as the
/// SCRAM exchange's fake salt does not; the breaker measured 2.85 ms vs 0.48 ms before).
bool user_password_matches(const scram_lookup& lookup, std::string_view user, std::string_view password);
/// `user`'s credentials as they are now (each mechanism's iterations, salt and stored key), ""
/// when the user has none. A console session or access token keeps the one it began with and
/// ends when it differs: the user was deleted or its password changed.
std::string credential_fingerprint(const scram_lookup& lookup, std::string_view user);

/// user_password_matches with a memory of the passwords it verified lately, for HTTP Basic,
/// which sends the password with every request: one PBKDF2 per request (~3 ms at 4096
/// iterations) would cost a listener a core at a few hundred requests/s (the breaker of session
/// 23). An entry is keyed by HMAC-SHA-256(key, user, password) under a key random per cache, so
/// no password is kept, and counts only while the user's credential_fingerprint is the one it
/// was verified against: a deleted user or a changed password is verified again (and refused).
/// A refusal is never remembered (an unknown user or a wrong password costs its PBKDF2 each
/// time). At most `entries_max` entries, the oldest out first. Not thread-safe: one per thread.
class verified_passwords {
 public:
  explicit verified_passwords(size_t entries_max = constants::verified_passwords_max);
  bool matches(const scram_lookup& lookup, std::string_view user, std::string_view password);
  [[nodiscard]] size_t size() const { return fingerprints_.size(); }

 private:
  bytes key_;
  size_t entries_max_;
  std::map<std::string, std::string, std::less<>> fingerprints_;   // HMAC -> credential_fingerprint
  std::deque<std::string> order_;                                   // HMACs, oldest first
};

}  // namespace ringlog::security
