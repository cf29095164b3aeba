#include "ringlog/runtime/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ringlog::runtime {

namespace {

using bio_ptr = std::unique_ptr<BIO, decltype(&BIO_free)>;

/// OpenSSL's queued errors as one line (the last reason is the useful one), and the queue cleared.
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out = buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

/// The text of `path` into `out`; the error names `key` and the file.
base::result<void, std::string> read_pem_file(const std::string& key, const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return key + "=" + path + ": cannot open the file (" + std::strerror(errno) + ")";
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return base::ok_v;
}

/// For a keystore or truststore file that is not PEM text at all: what it likely is and how to
/// convert it (a Kafka user's JKS or PKCS12 file, pasted with its ssl.*.location). Empty for PEM.
std::string not_pem_hint(const std::string& pem) {
  if (pem.find("-----BEGIN") != std::string::npos) return {};
  return "; the file is not PEM text (a JKS or PKCS12 keystore?): ringlog reads PEM only (KIP-651), convert it with "
         "`keytool -importkeystore -srckeystore FILE.jks -destkeystore FILE.p12 -deststoretype PKCS12` and "
         "`openssl pkcs12 -in FILE.p12 -nodes -out FILE.pem` (docs/security.md)";
}

/// The private key of `pem` (any of the PEM key forms; encrypted ones with `password`).
base::result<EVP_PKEY*, std::string> load_private_key(const std::string& pem, const tls_settings& s,
                                                      const std::string& where) {
  bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  ERR_clear_error();
  // PEM_read_bio_PrivateKey reads PKCS#1 ("RSA PRIVATE KEY", also with Proc-Type ENCRYPTED),
  // SEC1 ("EC PRIVATE KEY"), PKCS#8 ("PRIVATE KEY") and encrypted PKCS#8. The passphrase is
  // given explicitly so OpenSSL never prompts on a terminal.
  std::string password = s.key_password;
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, password.data());
  if (key != nullptr) return key;
  const unsigned long e = ERR_peek_last_error();
  const std::string detail = openssl_errors();
  const bool encrypted = pem.find("ENCRYPTED") != std::string::npos;
  if (encrypted && s.key_password.empty()) {
    return where + ": the private key is encrypted and " + s.key_prefix + "key.password is not set";
  }
  if (encrypted || ERR_GET_REASON(e) == EVP_R_BAD_DECRYPT || ERR_GET_REASON(e) == PEM_R_BAD_DECRYPT) {
    return s.key_prefix + "key.password: cannot decrypt the private key of " + where + " (wrong password?): " + detail;
  }
  return where + ": no PEM private key found (" + detail + ")" + not_pem_hint(pem);
}

/// Every certificate of `pem`, in order; errors when there is none.
base::result<std::vector<X509*>, std::string> load_certificates(const std::string& pem, const std::string& where) {
  bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  std::vector<X509*> out;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.push_back(cert);
  ERR_clear_error();   // the read past the last certificate queues "no start line"
  if (out.empty()) return where + ": no PEM certificate found" + not_pem_hint(pem);
  return out;
}

void free_certificates(std::vector<X509*>& certs) {
  for (X509* c : certs) X509_free(c);
  certs.clear();
}

base::result<void, std::string> set_protocols(SSL_CTX* ctx, const tls_settings& s) {
  int min = 0;
  int max = 0;
  size_t start = 0;
  const std::string& v = s.enabled_protocols;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    std::string item = v.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    start = comma + 1;
    if (item.empty()) continue;
    int version = 0;
    if (item == "TLSv1.2") version = TLS1_2_VERSION;
    else if (item == "TLSv1.3") version = TLS1_3_VERSION;
    else {
      return s.key_prefix + "enabled.protocols=" + v + ": unknown or unsupported protocol '" + item +
             "' (TLSv1.2, TLSv1.3)";
    }
    min = min == 0 ? version : std::min(min, version);
    max = std::max(max, version);
  }
  if (min == 0) return s.key_prefix + "enabled.protocols=" + v + ": must name TLSv1.2 and/or TLSv1.3";
  SSL_CTX_set_min_proto_version(ctx, min);
  SSL_CTX_set_max_proto_version(ctx, max);
  return base::ok_v;
}

base::result<void, std::string> set_ciphers(SSL_CTX* ctx, const tls_settings& s) {
  if (s.cipher_suites.empty()) return base::ok_v;
  // Kafka has one list; OpenSSL keeps TLS 1.3 suites (TLS_AES_128_GCM_SHA256, ...) apart.
  std::string tls13;
  std::string tls12;
  size_t start = 0;
  while (start <= s.cipher_suites.size()) {
    size_t comma = s.cipher_suites.find(',', start);
    if (comma == std::string::npos) comma = s.cipher_suites.size();
    std::string item = s.cipher_suites.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    start = comma + 1;
    if (item.empty()) continue;
    std::string& list = item.rfind("TLS_", 0) == 0 ? tls13 : tls12;
    list += (list.empty() ? "" : ":") + item;
  }
  if (!tls13.empty() && SSL_CTX_set_ciphersuites(ctx, tls13.c_str()) != 1) {
    return s.key_prefix + "cipher.suites=" + s.cipher_suites + ": OpenSSL knows none of " + tls13;
  }
  if (!tls12.empty() && SSL_CTX_set_cipher_list(ctx, tls12.c_str()) != 1) {
    return s.key_prefix + "cipher.suites=" + s.cipher_suites + ": OpenSSL knows none of " + tls12;
  }
  ERR_clear_error();
  return base::ok_v;
}

base::result<void, std::string> set_keystore(SSL_CTX* ctx, const tls_settings& s) {
  std::string key_pem;
  std::string chain_pem;
  std::string where;
  if (!s.keystore_location.empty()) {
    where = s.key_prefix + "keystore.location=" + s.keystore_location;
    if (auto r = read_pem_file(s.key_prefix + "keystore.location", s.keystore_location, key_pem); !r.ok()) return r;
    chain_pem = key_pem;
  } else {
    where = s.key_prefix + "keystore.key";
    key_pem = s.keystore_key;
    chain_pem = s.keystore_certificate_chain;
    if (chain_pem.empty()) return s.key_prefix + "keystore.certificate.chain: must be set with " + where;
  }
  auto key = load_private_key(key_pem, s, where);
  if (!key.ok()) return key.error();
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key_holder(key.value(), &EVP_PKEY_free);
  auto certs = load_certificates(chain_pem, s.keystore_location.empty() ? s.key_prefix + "keystore.certificate.chain" : where);
  if (!certs.ok()) return certs.error();
  std::vector<X509*> chain = std::move(certs).value();
  base::result<void, std::string> out = base::ok_v;
  if (SSL_CTX_use_certificate(ctx, chain[0]) != 1) {
    out = where + ": the certificate is not usable: " + openssl_errors();
  } else if (SSL_CTX_use_PrivateKey(ctx, key_holder.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    out = where + ": the private key does not match the certificate (" + openssl_errors() + ")";
  } else {
    for (size_t i = 1; i < chain.size(); ++i) {
      if (SSL_CTX_add1_chain_cert(ctx, chain[i]) != 1) {
        out = where + ": chain certificate " + std::to_string(i) + " is not usable: " + openssl_errors();
        break;
      }
    }
  }
  free_certificates(chain);
  return out;
}

base::result<void, std::string> set_truststore(SSL_CTX* ctx, const tls_settings& s) {
  std::string pem;
  std::string where;
  if (!s.truststore_location.empty()) {
    where = s.key_prefix + "truststore.location=" + s.truststore_location;
    if (auto r = read_pem_file(s.key_prefix + "truststore.location", s.truststore_location, pem); !r.ok()) return r;
  } else {
    where = s.key_prefix + "truststore.certificates";
    pem = s.truststore_certificates;
  }
  auto certs = load_certificates(pem, where);
  if (!certs.ok()) return certs.error();
  std::vector<X509*> list = std::move(certs).value();
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  for (X509* c : list) X509_STORE_add_cert(store, c);
  free_certificates(list);
  ERR_clear_error();
  return base::ok_v;
}

bool has_truststore(const tls_settings& s) {
  return !s.truststore_location.empty() || !s.truststore_certificates.empty();
}

}  // namespace

base::result<std::shared_ptr<SSL_CTX>, std::string> make_tls_context(const tls_settings& s, tls_role role) {
  if (s.keystore_type != "PEM") {
    return s.key_prefix + "keystore.type=" + s.keystore_type + ": only PEM is supported (KIP-651)";
  }
  if (s.truststore_type != "PEM") {
    return s.key_prefix + "truststore.type=" + s.truststore_type + ": only PEM is supported (KIP-651)";
  }
  if (s.client_auth != "none" && s.client_auth != "requested" && s.client_auth != "required") {
    return s.key_prefix + "client.auth=" + s.client_auth + ": must be none, requested or required";
  }
  const bool has_keystore = !s.keystore_location.empty() || !s.keystore_key.empty();
  if (role == tls_role::server && !has_keystore) {
    return s.key_prefix + "keystore.location: a TLS listener needs its certificate and key (or " + s.key_prefix +
           "keystore.key with " + s.key_prefix + "keystore.certificate.chain)";
  }
  if (s.client_auth != "none" && !has_truststore(s)) {
    return s.key_prefix + "client.auth=" + s.client_auth + ": needs " + s.key_prefix +
           "truststore.location (the CA certificates clients' certificates are checked against)";
  }
  if (role == tls_role::client && !has_truststore(s)) {
    return s.key_prefix + "truststore.location: a TLS client needs the CA certificates to check its peer against";
  }
  ERR_clear_error();
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(role == tls_role::server ? TLS_server_method() : TLS_client_method()),
                               &SSL_CTX_free);
  if (!ctx) return "cannot create a TLS context: " + openssl_errors();
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // Asio writes from a buffer that may move between retries of a partial write.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  if (auto r = set_protocols(ctx.get(), s); !r.ok()) return r.error();
  if (auto r = set_ciphers(ctx.get(), s); !r.ok()) return r.error();
  if (has_keystore) {
    if (auto r = set_keystore(ctx.get(), s); !r.ok()) return r.error();
  }
  if (has_truststore(s)) {
    if (auto r = set_truststore(ctx.get(), s); !r.ok()) return r.error();
  }
  if (role == tls_role::server) {
    int mode = SSL_VERIFY_NONE;
    if (s.client_auth == "requested") mode = SSL_VERIFY_PEER;
    if (s.client_auth == "required") mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx.get(), mode, nullptr);
    // Session resumption by tickets is stateless; the id context lets it work with client certs.
    static const unsigned char session_id_context[] = "ringlog";
    SSL_CTX_set_session_id_context(ctx.get(), session_id_context, sizeof session_id_context - 1);
  } else {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  return ctx;
}

namespace {

/// `cert`'s subject in RFC 2253 form: most specific RDN first, "," without blanks, as Java's
/// X500Principal.getName().
std::string subject_text(X509* cert) {
  bio_ptr bio(BIO_new(BIO_s_mem()), &BIO_free);
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace

std::optional<std::string> peer_subject(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return std::nullopt;
  std::string out = subject_text(cert);
  X509_free(cert);
  return out;
}

std::optional<std::string> own_subject(SSL* ssl) {
  X509* cert = ssl == nullptr ? nullptr : SSL_get_certificate(ssl);   // not counted: owned by `ssl`
  if (cert == nullptr) return std::nullopt;
  return subject_text(cert);
}

base::result<std::shared_ptr<reloading_tls_context>, std::string> reloading_tls_context::create(tls_settings settings,
                                                                                                 tls_role role) {
  std::shared_ptr<reloading_tls_context> out(new reloading_tls_context(std::move(settings), role));
  auto r = out->reload();
  if (!r.ok()) return r.error();
  return out;
}

std::shared_ptr<SSL_CTX> reloading_tls_context::current() const {
  std::lock_guard lock(mutex_);
  return context_;
}

std::vector<reloading_tls_context::file_stamp> reloading_tls_context::stamps() const {
  std::vector<file_stamp> out;
  for (const std::string* path : {&settings_.keystore_location, &settings_.truststore_location}) {
    file_stamp stamp;
    std::error_code ec;
    if (!path->empty()) {
      stamp.modified = std::filesystem::last_write_time(*path, ec);
      stamp.size = std::filesystem::file_size(*path, ec);
    }
    out.push_back(stamp);
  }
  return out;
}

base::result<bool, std::string> reloading_tls_context::check() {
  {
    std::lock_guard lock(mutex_);
    if (stamps() == stamps_) return false;
  }
  return reload();
}

namespace {

/// Why the leaf certificate of `ctx` may not replace a serving one: it has expired or is not yet
/// valid (a renewal dropped in early, or a clock far off). nullopt: usable now, or no keystore.
std::optional<std::string> validity_problem(SSL_CTX* ctx, const tls_settings& s) {
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf == nullptr) return std::nullopt;
  const std::string where = s.keystore_location.empty() ? s.key_prefix + "keystore.certificate.chain"
                                                        : s.key_prefix + "keystore.location=" + s.keystore_location;
  auto printed = [](const ASN1_TIME* t) {
    bio_ptr out(BIO_new(BIO_s_mem()), &BIO_free);
    ASN1_TIME_print(out.get(), t);
    char* data = nullptr;
    const long n = BIO_get_mem_data(out.get(), &data);
    return std::string(data, static_cast<size_t>(std::max(0L, n)));
  };
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0) {
    return where + ": the certificate has expired (notAfter " + printed(X509_get0_notAfter(leaf)) + ")";
  }
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0) {
    return where + ": the certificate is not valid yet (notBefore " + printed(X509_get0_notBefore(leaf)) + ")";
  }
  return std::nullopt;
}

}  // namespace

base::result<bool, std::string> reloading_tls_context::reload() {
  auto now = stamps();
  auto built = make_tls_context(settings_, role_);
  // A renewal must be usable now: an expired or not yet valid certificate would fail every
  // client's handshake, so the serving one stays (a key that does not match its certificate is
  // refused by make_tls_context).
  if (built.ok()) {
    if (auto why = validity_problem(built.value().get(), settings_)) built = *why;
  }
  std::lock_guard lock(mutex_);
  // A failed rebuild is not retried until the files change again (no log line per poll).
  stamps_ = std::move(now);
  if (!built.ok()) return built.error();
  context_ = std::move(built).value();
  return true;
}

}  // namespace ringlog::runtime
