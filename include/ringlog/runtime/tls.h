#pragma once
// TLS contexts for the listeners and the cluster transport (issue 29): Kafka's ssl.* settings,
// PEM only (KIP-651), turned into OpenSSL contexts, and re-read when their files change. OpenSSL
// only, no Asio: the streams that use a context are in tls_socket.h.
//
// Kafka's keys and what they become here:
//   ssl.keystore.location              PEM file: the private key and the certificate chain (leaf first)
//   ssl.keystore.key / .certificate.chain   the same inline (PEM text)
//   ssl.key.password                   passphrase of an encrypted key (PKCS#8 "ENCRYPTED PRIVATE KEY"
//                                      or a legacy PKCS#1 "Proc-Type: 4,ENCRYPTED" one)
//   ssl.truststore.location / .certificates   PEM CA certificates the peer's chain must reach
//   ssl.client.auth                    none | requested | required (servers only)
//   ssl.enabled.protocols              TLSv1.2,TLSv1.3 (older ones are refused by name)
//   ssl.cipher.suites                  OpenSSL names; TLS 1.3 suites (TLS_*) and TLS 1.2 ones
// Keys accepted: PKCS#1 RSA, PKCS#8 (RSA, EC, Ed25519), SEC1 EC; plain or encrypted (Java takes
// PKCS#8 only).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/base/result.h"

typedef struct ssl_ctx_st SSL_CTX;   // NOLINT: OpenSSL's own forward declaration
typedef struct ssl_st SSL;           // NOLINT

namespace ringlog::runtime {

/// One listener's (or the cluster client's) TLS settings, Kafka's keys; strings as configured.
struct tls_settings {
  std::string keystore_type = "PEM";
  std::string keystore_location;
  std::string keystore_key;                 // inline PEM private key
  std::string keystore_certificate_chain;   // inline PEM certificates
  std::string key_password;
  std::string truststore_type = "PEM";
  std::string truststore_location;
  std::string truststore_certificates;      // inline PEM certificates
  std::string client_auth = "none";         // none | requested | required
  std::string enabled_protocols = "TLSv1.2,TLSv1.3";
  std::string cipher_suites;                // empty: OpenSSL's defaults
  /// Prefix of the keys in error messages: "ssl." or "listener.name.client.ssl.".
  std::string key_prefix = "ssl.";
};

enum class tls_role { server, client };

/// A context built from `settings`. Errors name the key: a missing or unreadable file, no key or
/// no certificate in it, a wrong ssl.key.password, a key that does not match the certificate, an
/// unknown protocol or cipher. A client context verifies the server's chain against the
/// truststore (no host name check: cluster peers are named by IP address and the CA is the
/// cluster's own) and presents the keystore when one is set.
base::result<std::shared_ptr<SSL_CTX>, std::string> make_tls_context(const tls_settings& settings, tls_role role);

/// The subject of the peer's certificate in RFC 2253 form ("CN=alice,OU=eng,O=acme"), as Java's
/// X500Principal.getName() prints it (Kafka's mTLS principal input); nullopt without one.
std::optional<std::string> peer_subject(SSL* ssl);

/// The subject of this side's own certificate (the one `ssl` presents), in the same form;
/// nullopt without one. For log lines that name the principal a peer judged.
std::optional<std::string> own_subject(SSL* ssl);

/// A context that follows its files: check() rebuilds it when the keystore or truststore file's
/// modification time or size changed, reload() always. New handshakes take current(); open
/// connections keep the context they started with (OpenSSL counts references). A rebuild that
/// fails keeps the previous context (the error says why). Thread-safe.
class reloading_tls_context {
 public:
  /// Builds the first context; errors as make_tls_context.
  static base::result<std::shared_ptr<reloading_tls_context>, std::string> create(tls_settings settings, tls_role role);

  [[nodiscard]] std::shared_ptr<SSL_CTX> current() const;
  /// Rebuilds when a file changed. Returns true when rebuilt, false when nothing changed, an
  /// error when the new files do not make a context (the old one stays).
  base::result<bool, std::string> check();
  /// Rebuilds unconditionally (SIGHUP).
  base::result<bool, std::string> reload();
  [[nodiscard]] const tls_settings& settings() const { return settings_; }

 private:
  reloading_tls_context(tls_settings s, tls_role r) : settings_(std::move(s)), role_(r) {}
  struct file_stamp {
    std::filesystem::file_time_type modified{};
    uintmax_t size = 0;
    friend bool operator==(const file_stamp&, const file_stamp&) = default;
  };
  [[nodiscard]] std::vector<file_stamp> stamps() const;

  tls_settings settings_;
  tls_role role_;
  mutable std::mutex mutex_;
  std::shared_ptr<SSL_CTX> context_;
  std::vector<file_stamp> stamps_;
};

}  // namespace ringlog::runtime
