#pragma once
// Private to security: the hash, HMAC and PBKDF2 of a SCRAM mechanism (RFC 5802 section 2.2),
// by OpenSSL.

#include "ringlog/security/scram.h"

namespace ringlog::security::detail {

/// HMAC(key, message) with the mechanism's hash.
bytes hmac(scram_mechanism m, std::span<const std::byte> key, std::string_view message);
/// H(data).
bytes hash(scram_mechanism m, std::span<const std::byte> data);
/// Hi(password, salt, iterations): PBKDF2 with HMAC of the mechanism's hash.
bytes salted_password(scram_mechanism m, std::string_view password, std::span<const std::byte> salt, int32_t iterations);
/// a == b in time that depends only on their sizes (CRYPTO_memcmp).
bool equal_constant_time(std::span<const std::byte> a, std::span<const std::byte> b);

}  // namespace ringlog::security::detail
