#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <map>

#include "ringlog/codec/base64.h"
#include "ringlog/security/sasl.h"
#include "ringlog/security/scram_spec.h"

using namespace ringlog::security;
using ringlog::codec::base64_decode;
using ringlog::codec::base64_encode;

namespace {

std::span<const std::byte> b(std::string_view s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

/// A store holding what the test puts in.
struct store {
  std::map<std::pair<std::string, scram_mechanism>, scram_credential> users;
  scram_lookup lookup() {
    return [this](std::string_view user, scram_mechanism m) -> std::optional<scram_credential> {
      auto it = users.find({std::string(user), m});
      if (it == users.end()) return std::nullopt;
      return it->second;
    };
  }
};

// RFC 7677 section 3: user "user", password "pencil", SCRAM-SHA-256.
constexpr std::string_view rfc7677_client_first = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
constexpr std::string_view rfc7677_server_nonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
constexpr std::string_view rfc7677_server_first =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
constexpr std::string_view rfc7677_client_final =
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
constexpr std::string_view rfc7677_server_final = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

store rfc7677_store() {
  store s;
  auto salt = base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  auto c = derive_scram_credential(scram_mechanism::sha_256, "pencil", *salt, 4096);
  REQUIRE(c.ok());
  s.users[{"user", scram_mechanism::sha_256}] = *c;
  return s;
}

/// A SCRAM client's final message for `password` (RFC 5802 section 3), computed with OpenSSL
/// directly, not with the code under test.
std::string client_final(scram_mechanism m, std::string_view password, std::string_view client_first_bare,
                         std::string_view server_first, std::string_view nonce_prefix = {}) {
  const EVP_MD* md = m == scram_mechanism::sha_256 ? EVP_sha256() : EVP_sha512();
  const size_t n = digest_bytes(m);
  std::string nonce, salt_text;
  int iterations = 0;
  std::string sf(server_first);
  nonce = sf.substr(2, sf.find(",s=") - 2);
  salt_text = sf.substr(sf.find(",s=") + 3, sf.find(",i=") - sf.find(",s=") - 3);
  iterations = std::stoi(sf.substr(sf.find(",i=") + 3));
  auto salt = base64_decode(salt_text);
  std::vector<unsigned char> salted(n), client_key(n), stored(n), signature(n);
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), reinterpret_cast<const unsigned char*>(salt->data()),
                    static_cast<int>(salt->size()), iterations, md, static_cast<int>(n), salted.data());
  unsigned int len = 0;
  HMAC(md, salted.data(), static_cast<int>(n), reinterpret_cast<const unsigned char*>("Client Key"), 10, client_key.data(), &len);
  EVP_Digest(client_key.data(), n, stored.data(), &len, md, nullptr);
  const std::string without_proof = "c=biws,r=" + std::string(nonce_prefix) + nonce;
  const std::string auth = std::string(client_first_bare) + "," + std::string(server_first) + "," + without_proof;
  HMAC(md, stored.data(), static_cast<int>(n), reinterpret_cast<const unsigned char*>(auth.data()), auth.size(),
       signature.data(), &len);
  std::vector<std::byte> proof(n);
  for (size_t i = 0; i < n; ++i) proof[i] = static_cast<std::byte>(client_key[i] ^ signature[i]);
  return without_proof + ",p=" + base64_encode(proof);
}

}  // namespace

TEST_CASE("SCRAM-SHA-256 server answers RFC 7677's example exchange byte for byte") {
  store s = rfc7677_store();
  auto server = make_scram_server(scram_mechanism::sha_256, s.lookup(), std::string(rfc7677_server_nonce));
  CHECK(server->mechanism() == "SCRAM-SHA-256");
  auto first = server->step(b(rfc7677_client_first));
  REQUIRE(first.ok());
  CHECK(first->server_bytes == rfc7677_server_first);
  CHECK_FALSE(first->complete);
  auto final_step = server->step(b(rfc7677_client_final));
  REQUIRE(final_step.ok());
  CHECK(final_step->server_bytes == rfc7677_server_final);
  CHECK(final_step->complete);
  CHECK(final_step->principal->to_string() == "User:user");
  // The exchange is over: another message is out of order.
  auto again = server->step(b(rfc7677_client_final));
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == errc::illegal_sasl_state);
}

TEST_CASE("SCRAM-SHA-512 round trip with an independent client, and a wrong password fails at the proof") {
  store s;
  auto c = new_scram_credential(scram_mechanism::sha_512, "admin-secret", 8192);
  REQUIRE(c.ok());
  CHECK(c->salt.size() == constants::scram_salt_bytes);
  CHECK(c->stored_key.size() == 64);
  CHECK(c->server_key.size() == 64);
  s.users[{"admin", scram_mechanism::sha_512}] = *c;
  for (std::string_view password : {"admin-secret", "wrong"}) {
    auto server = make_scram_server(scram_mechanism::sha_512, s.lookup());
    const std::string bare = "n=admin,r=abcdefghijklmnop";
    auto first = server->step(b("n,," + bare));
    REQUIRE(first.ok());
    CHECK(first->server_bytes.find(",i=8192") != std::string::npos);
    CHECK(first->server_bytes.starts_with("r=abcdefghijklmnop"));
    CHECK(first->server_bytes.size() > std::string("r=abcdefghijklmnop").size() + 20);   // a server nonce was added
    auto last = server->step(b(client_final(scram_mechanism::sha_512, password, bare, first->server_bytes)));
    if (password == "admin-secret") {
      REQUIRE(last.ok());
      CHECK(last->complete);
      CHECK(last->principal->to_string() == "User:admin");
    } else {
      REQUIRE_FALSE(last.ok());
      CHECK(last.error().code == errc::sasl_authentication_failed);
      CHECK(last.error().message.find("SCRAM-SHA-512") != std::string::npos);
    }
  }
}

TEST_CASE("SCRAM refuses an unknown user only at the proof, with a stable made-up salt") {
  store s;
  std::string salts[2];
  for (int i = 0; i < 2; ++i) {
    auto server = make_scram_server(scram_mechanism::sha_256, s.lookup());
    auto first = server->step(b("n,,n=nobody,r=xyz"));
    REQUIRE(first.ok());
    salts[i] = first->server_bytes.substr(first->server_bytes.find(",s="));
    auto last = server->step(b(client_final(scram_mechanism::sha_256, "pw", "n=nobody,r=xyz", first->server_bytes)));
    REQUIRE_FALSE(last.ok());
    CHECK(last.error().code == errc::sasl_authentication_failed);
    CHECK(server->attempted_user() == "nobody");
  }
  CHECK(salts[0] == salts[1]);
}

TEST_CASE("SCRAM refuses malformed and tampered messages") {
  store s = rfc7677_store();
  for (std::string_view bad : {"", "n", "n,,", "x,,n=user,r=abc", "p=tls-unique,,n=user,r=abc", "n,,m=ext,n=user,r=abc",
                               "n,,n=us=er,r=abc", "n,,n=user,r=a,bc", "n,,n=user", "n,a=other,n=user,r=abc",
                               "n,,n=user,r=abc,tokenauth=true", "n,,n=user,r=abc,m=ext"}) {
    CAPTURE(bad);
    auto server = make_scram_server(scram_mechanism::sha_256, s.lookup(), std::string(rfc7677_server_nonce));
    auto r = server->step(b(bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::sasl_authentication_failed);
    CHECK_FALSE(server->step(b(rfc7677_client_first)).ok());   // over after a failure
  }
  const std::string good(rfc7677_client_final);
  const std::string wrong_nonce = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
  const std::string wrong_proof = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=eHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
  const std::string wrong_binding = "c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
  for (const std::string& bad : {wrong_nonce, wrong_proof, wrong_binding, std::string("c=biws"), good.substr(0, good.size() - 4)}) {
    CAPTURE(bad);
    auto server = make_scram_server(scram_mechanism::sha_256, s.lookup(), std::string(rfc7677_server_nonce));
    REQUIRE(server->step(b(rfc7677_client_first)).ok());
    auto r = server->step(b(bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::sasl_authentication_failed);
  }
}

TEST_CASE("SCRAM refuses the reserved m= extension wherever it stands (RFC 5802 section 5.1)") {
  store s = rfc7677_store();
  for (std::string_view bad : {"n,,m=ext,n=user,r=abc", "n,,n=user,r=abc,m=ext", "n,,n=user,r=abc,x=1,m=ext"}) {
    CAPTURE(bad);
    auto server = make_scram_server(scram_mechanism::sha_256, s.lookup(), std::string(rfc7677_server_nonce));
    auto r = server->step(b(bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("reserved m=") != std::string::npos);
  }
}

TEST_CASE("SCRAM does not crash on random bytes (a small fuzz loop)") {
  store s = rfc7677_store();
  uint64_t x = 0x9e3779b97f4a7c15ULL;   // xorshift, fixed seed: replayable
  for (int round = 0; round < 2000; ++round) {
    std::string junk(static_cast<size_t>(round % 97), '\0');
    for (char& c : junk) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      c = static_cast<char>(round % 3 == 0 ? "n,=rap2CD"[x % 9] : x & 0xff);
    }
    auto server = make_scram_server(scram_mechanism::sha_256, s.lookup());
    auto first = server->step(b(round % 2 == 0 ? junk : std::string(rfc7677_client_first)));
    if (round % 2 == 1) {
      REQUIRE(first.ok());
      CHECK_FALSE(server->step(b(junk)).ok());
    }
    auto plain = make_plain_server(s.lookup());
    CHECK_FALSE(plain->step(b(junk)).ok());
  }
}

TEST_CASE("PLAIN checks the password against the SCRAM store and keeps no password") {
  store s = rfc7677_store();
  auto ok = make_plain_server(s.lookup())->step(b(std::string_view("\0user\0pencil", 12)));
  REQUIRE(ok.ok());
  CHECK(ok->complete);
  CHECK(ok->principal->to_string() == "User:user");
  auto with_authzid = make_plain_server(s.lookup())->step(b(std::string_view("user\0user\0pencil", 16)));
  CHECK(with_authzid.ok());
  for (std::string_view bad : {std::string_view("\0user\0pen", 9), std::string_view("\0nobody\0pencil", 14),
                               std::string_view("other\0user\0pencil", 17), std::string_view("user\0pencil", 11),
                               std::string_view("\0user\0pencil\0", 13), std::string_view("\0\0pencil", 8)}) {
    auto r = make_plain_server(s.lookup())->step(b(bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::sasl_authentication_failed);
  }
}

TEST_CASE("user_password_matches and credential_fingerprint follow the store as it changes") {
  std::map<std::string, scram_credential> store;
  scram_lookup lookup = [&store](std::string_view user, scram_mechanism m) -> std::optional<scram_credential> {
    auto it = store.find(std::string(user));
    if (it == store.end() || it->second.mechanism != m) return std::nullopt;
    return it->second;
  };
  CHECK_FALSE(user_password_matches(lookup, "bob", "pw"));   // unknown: refused (after the same work)
  CHECK_FALSE(user_password_matches(lookup, "bob", ""));
  CHECK(credential_fingerprint(lookup, "bob").empty());
  store["bob"] = new_scram_credential(scram_mechanism::sha_256, "pw", 4096).value();
  CHECK(user_password_matches(lookup, "bob", "pw"));
  CHECK_FALSE(user_password_matches(lookup, "bob", "other"));
  const std::string first = credential_fingerprint(lookup, "bob");
  CHECK_FALSE(first.empty());
  CHECK(credential_fingerprint(lookup, "bob") == first);
  store["bob"] = new_scram_credential(scram_mechanism::sha_256, "pw", 4096).value();   // same password, new salt
  CHECK(credential_fingerprint(lookup, "bob") != first);
  store.erase("bob");
  CHECK(credential_fingerprint(lookup, "bob").empty());
}

TEST_CASE("credential_fingerprint is the credential a password is checked against, not every mechanism's") {
  // A breaker (session 27): adding a SCRAM-SHA-256 credential beside the SHA-512 one every
  // password check uses ended every login of the user.
  std::map<std::pair<std::string, scram_mechanism>, scram_credential> store;
  scram_lookup lookup = [&store](std::string_view user, scram_mechanism m) -> std::optional<scram_credential> {
    auto it = store.find({std::string(user), m});
    if (it == store.end()) return std::nullopt;
    return it->second;
  };
  store[{"bob", scram_mechanism::sha_512}] = new_scram_credential(scram_mechanism::sha_512, "pw", 4096).value();
  const std::string first = credential_fingerprint(lookup, "bob");
  store[{"bob", scram_mechanism::sha_256}] = new_scram_credential(scram_mechanism::sha_256, "other", 4096).value();
  CHECK(credential_fingerprint(lookup, "bob") == first);
  CHECK(user_password_matches(lookup, "bob", "pw"));
  store[{"bob", scram_mechanism::sha_512}] = new_scram_credential(scram_mechanism::sha_512, "new", 4096).value();
  CHECK(credential_fingerprint(lookup, "bob") != first);
  store.erase({"bob", scram_mechanism::sha_512});   // the SHA-256 one is now what a password is checked against
  CHECK_FALSE(credential_fingerprint(lookup, "bob").empty());
  CHECK(credential_fingerprint(lookup, "bob") != first);
}

TEST_CASE("verified_passwords remembers verified passwords only while the credential stays") {
  std::map<std::string, scram_credential> store;
  scram_lookup lookup = [&store](std::string_view user, scram_mechanism m) -> std::optional<scram_credential> {
    auto it = store.find(std::string(user));
    if (it == store.end() || it->second.mechanism != m) return std::nullopt;
    return it->second;
  };
  verified_passwords verified(2);
  CHECK_FALSE(verified.matches(lookup, "bob", "pw"));   // unknown user: refused, not remembered
  CHECK(verified.size() == 0);
  store["bob"] = new_scram_credential(scram_mechanism::sha_256, "pw", 4096).value();
  CHECK(verified.matches(lookup, "bob", "pw"));
  CHECK(verified.size() == 1);
  CHECK_FALSE(verified.matches(lookup, "bob", "other"));   // a wrong password is never remembered
  CHECK(verified.size() == 1);
  CHECK(verified.matches(lookup, "bob", "pw"));
  CHECK(verified.size() == 1);
  // The user's password changes: the remembered one no longer counts.
  store["bob"] = new_scram_credential(scram_mechanism::sha_256, "new", 4096).value();
  CHECK_FALSE(verified.matches(lookup, "bob", "pw"));
  CHECK(verified.matches(lookup, "bob", "new"));
  store.erase("bob");   // deleted
  CHECK_FALSE(verified.matches(lookup, "bob", "new"));
  // The bound: the oldest entries go first, and an evicted password is verified again.
  for (const char* user : {"u1", "u2", "u3"}) store[user] = new_scram_credential(scram_mechanism::sha_512, "p", 4096).value();
  CHECK(verified.matches(lookup, "u1", "p"));
  CHECK(verified.matches(lookup, "u2", "p"));
  CHECK(verified.matches(lookup, "u3", "p"));
  CHECK(verified.size() == 2);
  CHECK(verified.matches(lookup, "u1", "p"));
  CHECK_FALSE(verified.matches(lookup, "u1", "q"));
}

TEST_CASE("credentials: iterations bounded 4096..16384, derivation is deterministic per salt") {
  auto salt = base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  CHECK_FALSE(derive_scram_credential(scram_mechanism::sha_256, "p", *salt, 4095).ok());
  CHECK_FALSE(derive_scram_credential(scram_mechanism::sha_256, "p", *salt, 16385).ok());
  CHECK(derive_scram_credential(scram_mechanism::sha_256, "p", *salt, 16384).ok());
  auto empty_salt = derive_scram_credential(scram_mechanism::sha_256, "p", {}, 4096);
  REQUIRE_FALSE(empty_salt.ok());
  CHECK(empty_salt.error().message.find("salt") != std::string::npos);
  auto a = derive_scram_credential(scram_mechanism::sha_512, "p", *salt, 4096);
  auto c = derive_scram_credential(scram_mechanism::sha_512, "p", *salt, 4096);
  CHECK(a.value() == c.value());
  CHECK(password_matches(*a, "p"));
  CHECK_FALSE(password_matches(*a, "q"));
  CHECK(parse_scram_mechanism("SCRAM-SHA-512") == scram_mechanism::sha_512);
  CHECK_FALSE(parse_scram_mechanism("SCRAM-SHA-1").has_value());
  CHECK(scram_mechanism_from_type(1) == scram_mechanism::sha_256);
  CHECK_FALSE(scram_mechanism_from_type(0).has_value());
}

TEST_CASE("--add-scram takes Kafka's kafka-storage syntax") {
  auto a = ringlog::security::parse_add_scram("SCRAM-SHA-512=[name=admin,password=admin-secret]");
  REQUIRE(a.ok());
  CHECK(a->user == "admin");
  CHECK(a->credential.mechanism == scram_mechanism::sha_512);
  CHECK(a->credential.iterations == 4096);
  CHECK(password_matches(a->credential, "admin-secret"));
  // Kafka's documented example: salt and salted password given, quoted.
  auto b2 = ringlog::security::parse_add_scram(
      "SCRAM-SHA-256=[name=alice,salt=\"W22ZaJ0SNY7soEsUEjb6gQ==\",password=\"pen,cil\",iterations=8192]");
  REQUIRE(b2.ok());
  CHECK(b2->credential.iterations == 8192);
  CHECK(base64_encode(b2->credential.salt) == "W22ZaJ0SNY7soEsUEjb6gQ==");
  CHECK(password_matches(b2->credential, "pen,cil"));
  auto same = derive_scram_credential(scram_mechanism::sha_256, "pen,cil", *base64_decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 8192);
  CHECK(same.value() == b2->credential);
  for (std::string_view bad : {"SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-512=[name=a]", "SCRAM-SHA-512=[password=b]",
                               "SCRAM-SHA-512=name=a,password=b", "SCRAM-SHA-512=[name=a,password=b,iterations=100]",
                               "SCRAM-SHA-512=[name=a,password=b,colour=red]", "SCRAM-SHA-512=[name=a,salt=!!,password=b]",
                               "SCRAM-SHA-512=[name=a,password=b,name=c]"}) {
    CAPTURE(bad);
    auto r = ringlog::security::parse_add_scram(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("--add-scram") != std::string::npos);
  }
}

TEST_CASE("SCRAM takes librdkafka 2.0's client-final nonce (its nonce again in front), as Kafka does") {
  store s = rfc7677_store();
  const std::string bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
  auto server = make_scram_server(scram_mechanism::sha_256, s.lookup(), std::string(rfc7677_server_nonce));
  auto first = server->step(b("n,," + bare));
  REQUIRE(first.ok());
  // As librdkafka 2.0 builds it: "c=biws,r=" + its nonce + the server-first's whole nonce, signed.
  auto last = server->step(b(client_final(scram_mechanism::sha_256, "pencil", bare, first->server_bytes, "rOprNGfwEbeRWgbNEkqO")));
  REQUIRE_MESSAGE(last.ok(), (last.ok() ? "" : last.error().message));
  CHECK(last->complete);
}
