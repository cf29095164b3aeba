#include "ringlog/security/scram.h"

#include <algorithm>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "ringlog/base/assert.h"
#include "scram_primitives.h"

namespace ringlog::security {

std::string_view mechanism_name(scram_mechanism m) {
  return m == scram_mechanism::sha_256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
}

std::optional<scram_mechanism> parse_scram_mechanism(std::string_view name) {
  if (name == "SCRAM-SHA-256") return scram_mechanism::sha_256;
  if (name == "SCRAM-SHA-512") return scram_mechanism::sha_512;
  return std::nullopt;
}

std::optional<scram_mechanism> scram_mechanism_from_type(int8_t type) {
  if (type == 1) return scram_mechanism::sha_256;
  if (type == 2) return scram_mechanism::sha_512;
  return std::nullopt;
}

size_t digest_bytes(scram_mechanism m) { return m == scram_mechanism::sha_256 ? 32 : 64; }

namespace detail {

const EVP_MD* digest_of(scram_mechanism m) { return m == scram_mechanism::sha_256 ? EVP_sha256() : EVP_sha512(); }

bytes hmac(scram_mechanism m, std::span<const std::byte> key, std::string_view message) {
  bytes out(digest_bytes(m));
  unsigned int length = 0;
  const unsigned char* done = HMAC(digest_of(m), key.data(), static_cast<int>(key.size()),
                                   reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                                   reinterpret_cast<unsigned char*>(out.data()), &length);
  RINGLOG_ASSERT(done != nullptr, "HMAC with a built-in digest does not fail");
  RINGLOG_ASSERT_OP(length, ==, out.size());
  return out;
}

bytes hash(scram_mechanism m, std::span<const std::byte> data) {
  bytes out(digest_bytes(m));
  unsigned int length = 0;
  const int done = EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()), &length,
                              digest_of(m), nullptr);
  RINGLOG_ASSERT_OP(done, ==, 1);
  RINGLOG_ASSERT_OP(length, ==, out.size());
  return out;
}

bytes salted_password(scram_mechanism m, std::string_view password, std::span<const std::byte> salt, int32_t iterations) {
  bytes out(digest_bytes(m));
  const int done = PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                                     reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                                     iterations, digest_of(m), static_cast<int>(out.size()),
                                     reinterpret_cast<unsigned char*>(out.data()));
  RINGLOG_ASSERT_OP(done, ==, 1);
  return out;
}

bool equal_constant_time(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace detail

result<void> check_credential_shape(int32_t iterations, std::span<const std::byte> salt) {
  if (iterations < constants::scram_iterations_min || iterations > constants::scram_iterations_max) {
    return error{errc::invalid_config, "iterations " + std::to_string(iterations) + " outside " +
                                           std::to_string(constants::scram_iterations_min) + ".." +
                                           std::to_string(constants::scram_iterations_max)};
  }
  if (salt.empty() || salt.size() > constants::scram_salt_bytes_max) {
    return error{errc::invalid_config, "salt of " + std::to_string(salt.size()) + " bytes (1.." +
                                           std::to_string(constants::scram_salt_bytes_max) + ")"};
  }
  return base::ok_v;
}

result<scram_credential> derive_scram_credential(scram_mechanism m, std::string_view password,
                                                 std::span<const std::byte> salt, int32_t iterations) {
  RINGLOG_TRY(check_credential_shape(iterations, salt));
  return credential_from_salted_password(m, detail::salted_password(m, password, salt, iterations), salt, iterations);
}

result<scram_credential> credential_from_salted_password(scram_mechanism m, std::span<const std::byte> salted,
                                                         std::span<const std::byte> salt, int32_t iterations) {
  RINGLOG_TRY(check_credential_shape(iterations, salt));
  if (salted.size() != digest_bytes(m)) {
    return error{errc::invalid_config, "salted password of " + std::to_string(salted.size()) + " bytes (" +
                                           std::string(mechanism_name(m)) + " needs " + std::to_string(digest_bytes(m)) + ")"};
  }
  scram_credential c;
  c.mechanism = m;
  c.salt.assign(salt.begin(), salt.end());
  c.iterations = iterations;
  c.stored_key = detail::hash(m, detail::hmac(m, salted, "Client Key"));
  c.server_key = detail::hmac(m, salted, "Server Key");
  return c;
}

result<scram_credential> new_scram_credential(scram_mechanism m, std::string_view password, int32_t iterations) {
  return derive_scram_credential(m, password, random_bytes(constants::scram_salt_bytes), iterations);
}

bool password_matches(const scram_credential& credential, std::string_view password) {
  if (!check_credential_shape(credential.iterations, credential.salt).ok()) return false;
  const bytes salted = detail::salted_password(credential.mechanism, password, credential.salt, credential.iterations);
  const bytes stored = detail::hash(credential.mechanism, detail::hmac(credential.mechanism, salted, "Client Key"));
  return detail::equal_constant_time(stored, credential.stored_key);
}

bool user_password_matches(const scram_lookup& lookup, std::string_view user, std::string_view password) {
  for (auto m : {scram_mechanism::sha_512, scram_mechanism::sha_256}) {
    if (auto credential = lookup(user, m)) return password_matches(*credential, password);
  }
  // No such user: the same work as for one, against a credential no password was derived from.
  static const scram_credential unknown = [] {
    scram_credential c;
    c.mechanism = scram_mechanism::sha_512;
    c.salt = bytes(constants::scram_salt_bytes, std::byte{0x5a});
    c.stored_key = bytes(64, std::byte{0});
    return c;
  }();
  (void)password_matches(unknown, password);
  return false;
}

std::string credential_fingerprint(const scram_lookup& lookup, std::string_view user) {
  // The credential a password is checked against (user_password_matches' order), not every
  // mechanism's: adding a SCRAM-SHA-256 credential beside a SHA-512 one changes no password
  // check, so it ends no login (a breaker saw it log the user out everywhere, session 27).
  for (auto m : {scram_mechanism::sha_512, scram_mechanism::sha_256}) {
    auto credential = lookup(user, m);
    if (!credential) continue;
    std::string out = std::to_string(static_cast<int>(m)) + ":" + std::to_string(credential->iterations) + ":";
    out.append(reinterpret_cast<const char*>(credential->salt.data()), credential->salt.size());
    out.append(reinterpret_cast<const char*>(credential->stored_key.data()), credential->stored_key.size());
    return out;
  }
  return {};
}

verified_passwords::verified_passwords(size_t entries_max)
    : key_(random_bytes(32)), entries_max_(std::max<size_t>(entries_max, 1)) {}

bool verified_passwords::matches(const scram_lookup& lookup, std::string_view user, std::string_view password) {
  const std::string fingerprint = credential_fingerprint(lookup, user);
  // No such user: the same PBKDF2 as for one (user_password_matches), and nothing remembered.
  if (fingerprint.empty()) return user_password_matches(lookup, user, password);
  std::string message(user);
  message += '\0';
  message.append(password);
  const bytes mac = detail::hmac(scram_mechanism::sha_256, key_, message);
  std::string id(reinterpret_cast<const char*>(mac.data()), mac.size());
  if (auto it = fingerprints_.find(id); it != fingerprints_.end() && it->second == fingerprint) return true;
  if (!user_password_matches(lookup, user, password)) return false;
  // `fingerprint` was read before the check: if the credential changed in between, the entry
  // holds the older one and the next request is verified again.
  auto [it, inserted] = fingerprints_.insert_or_assign(id, fingerprint);
  if (inserted) order_.push_back(std::move(id));
  while (fingerprints_.size() > entries_max_) {
    fingerprints_.erase(order_.front());
    order_.pop_front();
  }
  return true;
}

bytes random_bytes(size_t n) {
  bytes out(n);
  const int done = RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n));
  RINGLOG_ASSERT_OP(done, ==, 1);
  return out;
}

}  // namespace ringlog::security
