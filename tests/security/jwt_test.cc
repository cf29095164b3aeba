// The JWT validator against tokens signed here with keys OpenSSL generates at test time.
#include <doctest/doctest.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <memory>
#include <string>

#include "../../src/security/json_lite.h"
#include "ringlog/security/jwt.h"

using namespace ringlog::security;

namespace {

constexpr int64_t now_s = 1'800'000'000;

struct test_key {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey{nullptr, EVP_PKEY_free};
  std::string alg;
  std::string kid;
};

test_key make_key(const std::string& alg, const std::string& kid) {
  test_key k;
  k.alg = alg;
  k.kid = kid;
  if (alg[0] == 'E') {
    k.pkey.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", alg == "ES256" ? "P-256" : "P-384"));
  } else {
    k.pkey.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048}));
  }
  REQUIRE(k.pkey);
  return k;
}

std::string bn_param(EVP_PKEY* pkey, const char* name) {
  BIGNUM* bn = nullptr;
  REQUIRE(EVP_PKEY_get_bn_param(pkey, name, &bn) == 1);
  std::string out(static_cast<size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

/// The key's public half as one JWK object.
std::string jwk(const test_key& k, bool with_alg = true) {
  std::string fields = "\"kid\":\"" + k.kid + "\"" + (with_alg ? ",\"alg\":\"" + k.alg + "\"" : "");
  if (k.alg[0] != 'E') {
    return "{\"kty\":\"RSA\"," + fields + ",\"n\":\"" +
           base64url_encode(bn_param(k.pkey.get(), OSSL_PKEY_PARAM_RSA_N)) + "\",\"e\":\"" +
           base64url_encode(bn_param(k.pkey.get(), OSSL_PKEY_PARAM_RSA_E)) + "\"}";
  }
  unsigned char point[200];
  size_t len = 0;
  REQUIRE(EVP_PKEY_get_octet_string_param(k.pkey.get(), OSSL_PKEY_PARAM_PUB_KEY, point,
                                          sizeof point, &len) == 1);
  const size_t width = (len - 1) / 2;
  std::string_view p(reinterpret_cast<char*>(point), len);
  return "{\"kty\":\"EC\",\"use\":\"sig\"," + fields + ",\"crv\":\"" +
         (k.alg == "ES256" ? "P-256" : "P-384") + "\",\"x\":\"" +
         base64url_encode(p.substr(1, width)) + "\",\"y\":\"" +
         base64url_encode(p.substr(1 + width, width)) + "\"}";
}

std::string sign(const test_key& k, std::string_view data) {
  const EVP_MD* md = k.alg.ends_with("256") ? EVP_sha256() : k.alg.ends_with("384") ? EVP_sha384() : EVP_sha512();
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_PKEY_CTX* pctx = nullptr;
  REQUIRE(EVP_DigestSignInit(ctx, &pctx, md, nullptr, k.pkey.get()) == 1);
  if (k.alg[0] == 'P') {
    EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
  }
  size_t len = 0;
  REQUIRE(EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1);
  std::string sig(len, '\0');
  REQUIRE(EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                         reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1);
  sig.resize(len);
  EVP_MD_CTX_free(ctx);
  if (k.alg[0] != 'E') return sig;
  // DER to JWS's R || S, each left-padded to the coordinate width.
  const size_t width = k.alg == "ES256" ? 32 : 48;
  const unsigned char* der = reinterpret_cast<const unsigned char*>(sig.data());
  ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(sig.size()));
  std::string raw(2 * width, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(es), reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(width));
  BN_bn2binpad(ECDSA_SIG_get0_s(es), reinterpret_cast<unsigned char*>(raw.data() + width), static_cast<int>(width));
  ECDSA_SIG_free(es);
  return raw;
}

std::string token(const test_key& k, const std::string& claims, const std::string& header = "") {
  const std::string h = header.empty() ? "{\"alg\":\"" + k.alg + "\",\"typ\":\"JWT\",\"kid\":\"" + k.kid + "\"}" : header;
  const std::string signing_input = base64url_encode(h) + "." + base64url_encode(claims);
  return signing_input + "." + base64url_encode(sign(k, signing_input));
}

std::string claims(const std::string& extra = "") {
  return "{\"sub\":\"alice\",\"iss\":\"https://idp.example\",\"aud\":[\"other\",\"ringlog\"],"
         "\"iat\":" + std::to_string(now_s - 10) + ",\"exp\":" + std::to_string(now_s + 300) + extra + "}";
}

jwt_validator_config strict_config() {
  jwt_validator_config c;
  c.expected_issuer = "https://idp.example";
  c.expected_audience = {"ringlog"};
  return c;
}

jwt_errc refusal(const jwt_validator& v, const std::string& t) {
  auto r = v.validate(t, now_s);
  REQUIRE_FALSE(r.ok());
  return r.error().code;
}

}  // namespace

TEST_CASE("every supported algorithm verifies, and the subject becomes User:<sub>") {
  for (const char* alg : {"RS256", "RS384", "RS512", "PS256", "ES256", "ES384"}) {
    CAPTURE(alg);
    const test_key k = make_key(alg, std::string("k-") + alg);
    jwt_validator v(strict_config());
    auto loaded = v.load_jwks("{\"keys\":[" + jwk(k) + "]}");
    REQUIRE(loaded.ok());
    CHECK(loaded.value() == 1);
    auto r = v.validate(token(k, claims(",\"scope\":\"read write\"")), now_s);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    CHECK(r->principal.to_string() == "User:alice");
    CHECK(r->expires_at_s == now_s + 300);
    CHECK(r->scope == "read write");
    CHECK(r->issuer == "https://idp.example");
  }
}

TEST_CASE("refusals name their reason") {
  const test_key rsa = make_key("RS256", "rsa-1");
  const test_key ec = make_key("ES256", "ec-1");
  const test_key stranger = make_key("RS256", "rsa-1");  // same kid, another key
  jwt_validator v(strict_config());
  REQUIRE(v.load_jwks("{\"keys\":[" + jwk(rsa) + "," + jwk(ec) + "]}").ok());
  int refreshes = 0;
  v.set_refresh_hook([&] { ++refreshes; });

  SUBCASE("expired, with the skew honoured") {
    const std::string past = "{\"sub\":\"alice\",\"iss\":\"https://idp.example\",\"aud\":\"ringlog\",\"exp\":";
    CHECK(refusal(v, token(rsa, past + std::to_string(now_s - 31) + "}")) == jwt_errc::expired);
    CHECK(v.validate(token(rsa, past + std::to_string(now_s - 29) + "}"), now_s).ok());
  }
  SUBCASE("not yet valid: nbf and iat in the future") {
    CHECK(refusal(v, token(rsa, claims(",\"nbf\":" + std::to_string(now_s + 60)))) == jwt_errc::not_yet_valid);
    CHECK(v.validate(token(rsa, claims(",\"nbf\":" + std::to_string(now_s + 20))), now_s).ok());
    std::string future_iat = claims();
    future_iat.replace(future_iat.find(std::to_string(now_s - 10)), 10, std::to_string(now_s + 100));
    CHECK(refusal(v, token(rsa, future_iat)) == jwt_errc::not_yet_valid);
  }
  SUBCASE("bad signature: another key under the same kid, or a payload changed after signing") {
    CHECK(refusal(v, token(stranger, claims())) == jwt_errc::bad_signature);
    std::string t = token(rsa, claims());
    const size_t dot1 = t.find('.');
    const size_t dot2 = t.find('.', dot1 + 1);
    t.replace(dot1 + 1, dot2 - dot1 - 1, base64url_encode(claims(",\"admin\":true")));
    CHECK(refusal(v, t) == jwt_errc::bad_signature);
    // Flip a character inside the signature, not the last one: the last base64url character of
    // a 64-byte ES256 signature carries 2 data bits and 4 padding bits, so changing it may only
    // touch padding and leave the decoded signature as signed (a flaky test, CI session 14).
    std::string ec_token = token(ec, claims());
    const size_t mid = ec_token.rfind('.') + 10;
    ec_token[mid] = ec_token[mid] == 'A' ? 'B' : 'A';
    CHECK(refusal(v, ec_token) == jwt_errc::bad_signature);
  }
  SUBCASE("unknown kid calls the refresh hook") {
    const test_key rotated = make_key("RS256", "rsa-2");
    CHECK(refusal(v, token(rotated, claims())) == jwt_errc::unknown_kid);
    CHECK(refreshes == 1);
    REQUIRE(v.load_jwks("{\"keys\":[" + jwk(rsa) + "," + jwk(rotated) + "]}").ok());
    CHECK(v.validate(token(rotated, claims()), now_s).ok());
  }
  SUBCASE("a token without kid takes the only key of its type") {
    CHECK(v.validate(token(ec, claims(), "{\"alg\":\"ES256\"}"), now_s).ok());
  }
  SUBCASE("alg none is refused; HMAC and other algs are unsupported, named as such") {
    const std::string unsigned_token =
        base64url_encode("{\"alg\":\"none\"}") + "." + base64url_encode(claims()) + ".";
    CHECK(refusal(v, unsigned_token) == jwt_errc::alg_none_refused);
    CHECK(refusal(v, base64url_encode("{\"alg\":\"HS256\",\"kid\":\"rsa-1\"}") + "." +
                         base64url_encode(claims()) + ".c2ln") == jwt_errc::unsupported_alg);
    CHECK(refusal(v, base64url_encode("{\"alg\":\"EdDSA\"}") + "." + base64url_encode(claims()) + ".c2ln") ==
          jwt_errc::unsupported_alg);
    // An RSA kid under an EC alg finds no key (alg confusion).
    CHECK(refusal(v, token(ec, claims(), "{\"alg\":\"ES256\",\"kid\":\"rsa-1\"}")) == jwt_errc::unknown_kid);
  }
  SUBCASE("wrong issuer, wrong audience, no subject") {
    std::string other_iss = claims();
    other_iss.replace(other_iss.find("https://idp.example"), 19, "https://evil.example");
    CHECK(refusal(v, token(rsa, other_iss)) == jwt_errc::wrong_issuer);
    std::string other_aud = claims();
    other_aud.replace(other_aud.find("\"ringlog\""), 9, "\"nobody\"");
    CHECK(refusal(v, token(rsa, other_aud)) == jwt_errc::wrong_audience);
    std::string no_sub = claims();
    no_sub.replace(no_sub.find("\"sub\""), 5, "\"who\"");
    CHECK(refusal(v, token(rsa, no_sub)) == jwt_errc::no_subject);
  }
  SUBCASE("malformed: parts, base64, JSON, no exp") {
    CHECK(refusal(v, "abc") == jwt_errc::malformed);
    CHECK(refusal(v, "a.b.c.d") == jwt_errc::malformed);
    CHECK(refusal(v, "!!!.e30.") == jwt_errc::malformed);
    CHECK(refusal(v, base64url_encode("{\"alg\":") + ".e30.") == jwt_errc::malformed);
    CHECK(refusal(v, token(rsa, "{\"sub\":\"alice\",\"iss\":\"https://idp.example\",\"aud\":\"ringlog\"}")) ==
          jwt_errc::malformed);
    CHECK(refusal(v, token(rsa, claims(",\"exp\":\"soon\""))) == jwt_errc::malformed);
  }
}

TEST_CASE("the subject claim name and an unchecked issuer/audience follow the config") {
  const test_key k = make_key("ES384", "ec-384");
  jwt_validator_config c;
  c.sub_claim_name = "client_id";
  jwt_validator v(c);
  REQUIRE(v.load_jwks("{\"keys\":[" + jwk(k, false) + "]}").ok());
  auto r = v.validate(token(k, "{\"client_id\":\"svc-orders\",\"exp\":" + std::to_string(now_s + 5) + "}"), now_s);
  REQUIRE(r.ok());
  CHECK(r->principal.to_string() == "User:svc-orders");
}

TEST_CASE("a JWKS that is not one is refused and the old keys stay") {
  const test_key k = make_key("RS256", "rsa-1");
  jwt_validator v(jwt_validator_config{});
  REQUIRE(v.load_jwks("{\"keys\":[" + jwk(k) + "]}").ok());
  for (const char* bad : {"", "[]", "{\"keys\":{}}", "{\"keys\":[]}",
                          "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}",
                          "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}",
                          "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AQAB\",\"y\":\"AQAB\"}]}"}) {
    CAPTURE(bad);
    auto r = v.load_jwks(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == jwt_errc::invalid_jwks);
  }
  CHECK(v.validate(token(k, "{\"sub\":\"a\",\"exp\":" + std::to_string(now_s) + "}"), now_s).ok());
}

TEST_CASE("the JSON reader: escapes, nesting bound, trailing bytes") {
  using ringlog::security::detail::parse_json;
  std::string why;
  auto doc = parse_json(R"( {"a":"x\u00e9\ud83d\ude00\n","b":[1,-2.5e1,true,null,{}],"c":{}} )", &why);
  REQUIRE(doc);
  CHECK(doc->string_at("a") == std::optional<std::string_view>("x\xc3\xa9\xf0\x9f\x98\x80\n"));
  CHECK(doc->find("b")->items.size() == 5);
  CHECK(doc->find("b")->items[1].number == -25);
  for (const char* bad : {"{", "{\"a\" 1}", "[1,]", "{\"a\":1,\"a\":2}", "{\"a\":1}x", "\"\\ud800\"", "01", "[1}", "{,}",
                          "[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_json(bad, &why));
  }
}
