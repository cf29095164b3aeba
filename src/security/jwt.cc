#include "ringlog/security/jwt.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "json_lite.h"
#include "ringlog/codec/base64.h"

namespace ringlog::security {

using detail::json_value;

std::string_view to_string(jwt_errc e) {
  switch (e) {
    case jwt_errc::malformed: return "malformed";
    case jwt_errc::alg_none_refused: return "alg_none_refused";
    case jwt_errc::unsupported_alg: return "unsupported_alg";
    case jwt_errc::unknown_kid: return "unknown_kid";
    case jwt_errc::bad_signature: return "bad_signature";
    case jwt_errc::expired: return "expired";
    case jwt_errc::not_yet_valid: return "not_yet_valid";
    case jwt_errc::wrong_issuer: return "wrong_issuer";
    case jwt_errc::wrong_audience: return "wrong_audience";
    case jwt_errc::no_subject: return "no_subject";
    case jwt_errc::invalid_jwks: return "invalid_jwks";
  }
  return "unknown";
}

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string standard(text);
  for (char& c : standard) {
    if (c == '+' || c == '/' || c == '=') return std::nullopt;  // not the url alphabet, no padding
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  auto bytes = codec::base64_decode(standard);
  if (!bytes) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

std::string base64url_encode(std::string_view bytes) {
  std::string out = codec::base64_encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

namespace {

enum class key_family { rsa, ec_p256, ec_p384 };

/// One JWS algorithm of RFC 7518 section 3 that ringlog verifies.
struct algorithm {
  std::string_view name;
  key_family family;
  const EVP_MD* (*digest)();
  bool pss;
};

constexpr algorithm algorithms[] = {
    {"RS256", key_family::rsa, EVP_sha256, false}, {"RS384", key_family::rsa, EVP_sha384, false},
    {"RS512", key_family::rsa, EVP_sha512, false}, {"PS256", key_family::rsa, EVP_sha256, true},
    {"ES256", key_family::ec_p256, EVP_sha256, false},
    {"ES384", key_family::ec_p384, EVP_sha384, false},
};

/// RSA moduli below this are refused (RFC 7518 section 3.3: "2048 bits or larger MUST be used").
constexpr int rsa_bits_min = 2048;

size_t ec_coordinate_bytes(key_family f) { return f == key_family::ec_p256 ? 32 : 48; }

struct pkey_free {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;

jwt_error jwks_error(std::string message) {
  return jwt_error{jwt_errc::invalid_jwks, "JWKS: " + std::move(message)};
}

}  // namespace

struct jwt_validator::key {
  std::string kid;
  std::string alg;  // empty when the JWK names none
  key_family family = key_family::rsa;
  pkey_ptr pkey;
};

struct jwt_validator::key_set {
  std::vector<key> keys;
};

namespace {

/// Builds an EVP_PKEY from OpenSSL 3 parameters (the non-deprecated way to make a public key).
pkey_ptr pkey_from_params(const char* type, OSSL_PARAM_BLD* bld) {
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* pkey = nullptr;
  if (params != nullptr && ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1) {
    if (EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) pkey = nullptr;
  }
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  return pkey_ptr(pkey);
}

jwt_result<pkey_ptr> rsa_key(const json_value& jwk, const std::string& name) {
  auto n = jwk.string_at("n");
  auto e = jwk.string_at("e");
  std::optional<std::string> n_bytes = n ? base64url_decode(*n) : std::nullopt;
  std::optional<std::string> e_bytes = e ? base64url_decode(*e) : std::nullopt;
  if (!n_bytes || !e_bytes || n_bytes->empty() || e_bytes->empty()) {
    return jwks_error(name + ": an RSA key needs base64url n and e");
  }
  BIGNUM* bn_n = BN_bin2bn(reinterpret_cast<const unsigned char*>(n_bytes->data()),
                           static_cast<int>(n_bytes->size()), nullptr);
  BIGNUM* bn_e = BN_bin2bn(reinterpret_cast<const unsigned char*>(e_bytes->data()),
                           static_cast<int>(e_bytes->size()), nullptr);
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  pkey_ptr pkey;
  if (bld != nullptr && bn_n != nullptr && bn_e != nullptr &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1) {
    pkey = pkey_from_params("RSA", bld);
  }
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn_n);
  BN_free(bn_e);
  if (!pkey) return jwks_error(name + ": the RSA key does not decode");
  if (EVP_PKEY_get_bits(pkey.get()) < rsa_bits_min) {
    return jwks_error(name + ": RSA key of " + std::to_string(EVP_PKEY_get_bits(pkey.get())) +
                      " bits; at least 2048 (RFC 7518 section 3.3)");
  }
  return pkey;
}

jwt_result<pkey_ptr> ec_key(const json_value& jwk, key_family family, const std::string& name) {
  auto x = jwk.string_at("x");
  auto y = jwk.string_at("y");
  std::optional<std::string> x_bytes = x ? base64url_decode(*x) : std::nullopt;
  std::optional<std::string> y_bytes = y ? base64url_decode(*y) : std::nullopt;
  const size_t width = ec_coordinate_bytes(family);
  // RFC 7518 section 6.2.1.2: x and y are the full coordinate width, leading zeros kept.
  if (!x_bytes || !y_bytes || x_bytes->size() != width || y_bytes->size() != width) {
    return jwks_error(name + ": an EC key needs base64url x and y of " + std::to_string(width) +
                      " bytes each");
  }
  const std::string point = '\x04' + *x_bytes + *y_bytes;  // SEC 1 uncompressed point
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  pkey_ptr pkey;
  const char* group = family == key_family::ec_p256 ? "prime256v1" : "secp384r1";
  if (bld != nullptr &&
      OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) == 1 &&
      OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) == 1) {
    pkey = pkey_from_params("EC", bld);
  }
  OSSL_PARAM_BLD_free(bld);
  if (!pkey) return jwks_error(name + ": the EC point is not on the curve");
  return pkey;
}

/// Decodes one JWK; nullopt (without error) for a key ringlog does not use (another kty or
/// curve, or `use` other than "sig").
jwt_result<std::optional<jwt_validator::key>> decode_jwk(const json_value& jwk, size_t index) {
  if (jwk.type != json_value::kind::object) return jwks_error("keys[" + std::to_string(index) + "] is not an object");
  jwt_validator::key k;
  k.kid = std::string(jwk.string_at("kid").value_or(""));
  k.alg = std::string(jwk.string_at("alg").value_or(""));
  const std::string name = "key " + (k.kid.empty() ? "#" + std::to_string(index) : "'" + k.kid + "'");
  const std::string_view kty = jwk.string_at("kty").value_or("");
  if (jwk.string_at("use").value_or("sig") != "sig") return std::optional<jwt_validator::key>{};
  jwt_result<pkey_ptr> pkey = jwks_error("");
  if (kty == "RSA") {
    k.family = key_family::rsa;
    pkey = rsa_key(jwk, name);
  } else if (kty == "EC") {
    const std::string_view crv = jwk.string_at("crv").value_or("");
    if (crv != "P-256" && crv != "P-384") return std::optional<jwt_validator::key>{};
    k.family = crv == "P-256" ? key_family::ec_p256 : key_family::ec_p384;
    pkey = ec_key(jwk, k.family, name);
  } else {
    return std::optional<jwt_validator::key>{};
  }
  if (!pkey.ok()) return pkey.error();
  k.pkey = std::move(pkey).value();
  return std::optional<jwt_validator::key>(std::move(k));
}

/// ECDSA's JWS form R || S (RFC 7518 section 3.4) to the DER OpenSSL verifies.
std::optional<std::string> ecdsa_der(std::string_view raw, size_t width) {
  if (raw.size() != 2 * width) return std::nullopt;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(width), nullptr);
  BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data() + width),
                        static_cast<int>(width), nullptr);
  std::optional<std::string> out;
  if (sig != nullptr && r != nullptr && s != nullptr && ECDSA_SIG_set0(sig, r, s) == 1) {
    r = s = nullptr;  // owned by sig now
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(sig, &der);
    if (len > 0) out = std::string(reinterpret_cast<char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
  }
  BN_free(r);
  BN_free(s);
  ECDSA_SIG_free(sig);
  return out;
}

bool verify_signature(const algorithm& alg, EVP_PKEY* pkey, std::string_view signed_part,
                      std::string_view signature) {
  std::string der;
  if (alg.family != key_family::rsa) {
    auto converted = ecdsa_der(signature, ec_coordinate_bytes(alg.family));
    if (!converted) return false;
    der = std::move(*converted);
    signature = der;
  }
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  EVP_PKEY_CTX* pctx = nullptr;  // owned by md
  bool ok = md != nullptr && EVP_DigestVerifyInit(md, &pctx, alg.digest(), nullptr, pkey) == 1;
  if (ok && alg.pss) {
    // RFC 7518 section 3.5: MGF1 with the same hash, salt as long as the hash.
    ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1;
  }
  ok = ok && EVP_DigestVerify(md, reinterpret_cast<const unsigned char*>(signature.data()),
                              signature.size(),
                              reinterpret_cast<const unsigned char*>(signed_part.data()),
                              signed_part.size()) == 1;
  EVP_MD_CTX_free(md);
  return ok;
}

jwt_error malformed(std::string message) {
  return jwt_error{jwt_errc::malformed, "malformed token: " + std::move(message)};
}

/// One base64url part of a token, parsed as a JSON object.
jwt_result<json_value> json_part(std::string_view part, const char* what) {
  auto bytes = base64url_decode(part);
  if (!bytes) return malformed(std::string(what) + " is not base64url");
  std::string why;
  auto doc = detail::parse_json(*bytes, &why);
  if (!doc || doc->type != json_value::kind::object) {
    return malformed(std::string(what) + " is not a JSON object" + (why.empty() ? "" : ": " + why));
  }
  return std::move(*doc);
}

/// A NumericDate claim (RFC 7519 section 2: seconds, may be fractional); nullopt when absent,
/// an error when present and not a number.
jwt_result<std::optional<int64_t>> numeric_date(const json_value& claims, std::string_view name) {
  const json_value* v = claims.find(name);
  if (v == nullptr) return std::optional<int64_t>{};
  if (v->type != json_value::kind::number || !std::isfinite(v->number) ||
      std::fabs(v->number) >= 9.2e18) {
    return malformed("claim '" + std::string(name) + "' is not a NumericDate");
  }
  return std::optional<int64_t>(static_cast<int64_t>(std::floor(v->number)));
}

jwt_error refused(jwt_errc code, std::string message) { return jwt_error{code, std::move(message)}; }

/// The audience claim holds one of `expected` (RFC 7519 section 4.1.3: a string or a list).
bool audience_matches(const json_value* aud, const std::vector<std::string>& expected) {
  if (aud == nullptr) return false;
  auto wanted = [&](const json_value& v) {
    return v.type == json_value::kind::string &&
           std::find(expected.begin(), expected.end(), v.text) != expected.end();
  };
  if (aud->type == json_value::kind::array) return std::any_of(aud->items.begin(), aud->items.end(), wanted);
  return wanted(*aud);
}

/// The registered claims of RFC 7519 section 4.1 under Kafka's settings (KIP-768).
jwt_result<jwt_claims> check_claims(const json_value& claims, const jwt_validator_config& config,
                                    int64_t now_s) {
  auto exp = numeric_date(claims, "exp");
  auto nbf = numeric_date(claims, "nbf");
  auto iat = numeric_date(claims, "iat");
  for (const auto* date : {&exp, &nbf, &iat}) {
    if (!date->ok()) return date->error();
  }
  const int64_t skew = config.clock_skew_seconds;
  const std::optional<int64_t> expires = exp.value(), not_before = nbf.value(), issued = iat.value();
  if (!expires) return malformed("no exp claim (a token must expire)");
  if (now_s > *expires + skew) {
    return refused(jwt_errc::expired, "token expired at " + std::to_string(*expires) + " (now " +
                                          std::to_string(now_s) + ", clock skew " + std::to_string(skew) + " s)");
  }
  if (not_before && now_s + skew < *not_before) {
    return refused(jwt_errc::not_yet_valid, "token not valid before " + std::to_string(*not_before) +
                                                " (now " + std::to_string(now_s) + ")");
  }
  if (issued && now_s + skew < *issued) {
    return refused(jwt_errc::not_yet_valid, "token issued in the future (iat " + std::to_string(*issued) +
                                                ", now " + std::to_string(now_s) + ")");
  }
  const std::string issuer(claims.string_at("iss").value_or(""));
  if (!config.expected_issuer.empty() && issuer != config.expected_issuer) {
    return refused(jwt_errc::wrong_issuer, "issuer '" + issuer + "' is not sasl.oauthbearer.expected.issuer '" +
                                               config.expected_issuer + "'");
  }
  if (!config.expected_audience.empty() && !audience_matches(claims.find("aud"), config.expected_audience)) {
    return refused(jwt_errc::wrong_audience, "aud names none of sasl.oauthbearer.expected.audience");
  }
  const auto subject = claims.string_at(config.sub_claim_name);
  if (!subject || subject->empty()) {
    return refused(jwt_errc::no_subject, "no string claim '" + config.sub_claim_name +
                                             "' (sasl.oauthbearer.sub.claim.name) to name the principal");
  }
  if (*subject == "ANONYMOUS") {
    return refused(jwt_errc::no_subject, "subject 'ANONYMOUS' is reserved: it names callers that did not log in");
  }
  if (std::any_of(subject->begin(), subject->end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; })) {
    return refused(jwt_errc::no_subject, "the subject holds control characters");
  }
  jwt_claims out;
  out.principal = kafka_principal::user(std::string(*subject));
  out.expires_at_s = *expires;
  out.issuer = issuer;
  out.scope = std::string(claims.string_at("scope").value_or(""));
  return out;
}

/// The key a token's header names: by kid, else the only key of the algorithm's family.
/// Returns nullptr when there is none (or several without a kid); `why` then says so.
const jwt_validator::key* choose_key(const jwt_validator::key_set& set, const algorithm& alg,
                                     std::optional<std::string_view> kid, std::string& why);

}  // namespace

jwt_validator::jwt_validator(jwt_validator_config config)
    : config_(std::move(config)), keys_(std::make_shared<const key_set>()) {}

jwt_validator::~jwt_validator() = default;

std::shared_ptr<const jwt_validator::key_set> jwt_validator::keys() const {
  std::lock_guard lock(mutex_);
  return keys_;
}

void jwt_validator::set_refresh_hook(std::function<void()> hook) {
  std::lock_guard lock(mutex_);
  refresh_hook_ = std::move(hook);
}

jwt_result<size_t> jwt_validator::load_jwks(std::string_view jwks_json) {
  if (jwks_json.size() > jwks_bytes_max) return jwks_error("larger than 1 MiB");
  std::string why;
  auto doc = detail::parse_json(jwks_json, &why);
  if (!doc) return jwks_error("not JSON: " + why);
  const json_value* list = doc->find("keys");
  if (list == nullptr || list->type != json_value::kind::array) {
    return jwks_error("no \"keys\" array (RFC 7517 section 5)");
  }
  if (list->items.size() > jwks_keys_max) return jwks_error("more than 64 keys");
  auto set = std::make_shared<key_set>();
  for (size_t i = 0; i < list->items.size(); ++i) {
    auto k = decode_jwk(list->items[i], i);
    if (!k.ok()) return k.error();
    if (k.value()) set->keys.push_back(std::move(*k.value()));
  }
  if (set->keys.empty()) {
    return jwks_error("no usable signing key (kty RSA, or EC on P-256 / P-384)");
  }
  const size_t count = set->keys.size();
  std::lock_guard lock(mutex_);
  keys_ = std::move(set);
  return count;
}

jwt_result<jwt_claims> jwt_validator::validate(std::string_view token, int64_t now_s) const {
  if (token.size() > jwt_token_bytes_max) return malformed("longer than 16 KiB");
  const size_t dot1 = token.find('.');
  const size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return malformed("not the three parts header.payload.signature");
  }
  auto header = json_part(token.substr(0, dot1), "the header");
  if (!header.ok()) return header.error();
  const std::string_view alg_name = header->string_at("alg").value_or("");
  if (alg_name == "none") {
    return jwt_error{jwt_errc::alg_none_refused, "alg 'none' refused: tokens must be signed with a public key"};
  }
  // An HMAC alg is signed, not unsigned: its reason names it as the unsupported alg it is here (as
  // Kafka's jose4j-based validator refuses an alg outside its allowed list), never "none".
  if (alg_name.starts_with("HS")) {
    return jwt_error{jwt_errc::unsupported_alg,
                     "alg '" + std::string(alg_name) +
                         "' unsupported: an HMAC alg needs a shared secret; tokens must be signed with a public key "
                         "(RS256, RS384, RS512, PS256, ES256, ES384)"};
  }
  const auto* alg = std::find_if(std::begin(algorithms), std::end(algorithms),
                                 [&](const algorithm& a) { return a.name == alg_name; });
  if (alg == std::end(algorithms)) {
    return jwt_error{jwt_errc::unsupported_alg,
                     "alg '" + std::string(alg_name) + "' unsupported (RS256, RS384, RS512, PS256, ES256, ES384)"};
  }
  if (header->find("crit") != nullptr) return malformed("the header's crit names extensions ringlog does not know");

  std::string why;
  const auto set = keys();
  const key* chosen = choose_key(*set, *alg, header->string_at("kid"), why);
  if (chosen == nullptr) {
    std::function<void()> hook;
    {
      std::lock_guard lock(mutex_);
      hook = refresh_hook_;
    }
    if (hook) hook();
    return jwt_error{jwt_errc::unknown_kid, why};
  }

  const size_t signature_start = dot2 + 1;
  auto signature = base64url_decode(token.substr(signature_start));
  if (!signature) return malformed("the signature is not base64url");
  if (!verify_signature(*alg, chosen->pkey.get(), token.substr(0, dot2), *signature)) {
    return jwt_error{jwt_errc::bad_signature, "the signature does not verify (" + std::string(alg_name) + ")"};
  }

  auto claims = json_part(token.substr(dot1 + 1, dot2 - dot1 - 1), "the payload");
  if (!claims.ok()) return claims.error();
  return check_claims(*claims, config_, now_s);
}

namespace {

const jwt_validator::key* choose_key(const jwt_validator::key_set& set, const algorithm& alg,
                                     std::optional<std::string_view> kid, std::string& why) {
  const jwt_validator::key* chosen = nullptr;
  size_t candidates = 0;
  for (const auto& k : set.keys) {
    if (k.family != alg.family || (!k.alg.empty() && k.alg != alg.name)) continue;
    ++candidates;
    if (!kid || k.kid == *kid) chosen = &k;
  }
  if (kid && chosen == nullptr) {
    why = "no key with kid '" + std::string(*kid) + "' for " + std::string(alg.name) + " in the JWKS";
  } else if (!kid && candidates != 1) {
    why = "the token has no kid and the JWKS has " + std::to_string(candidates) + " keys for " +
          std::string(alg.name);
    chosen = nullptr;
  }
  return chosen;
}

}  // namespace

}  // namespace ringlog::security
