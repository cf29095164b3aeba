// The proof of a call passed on between brokers (security/forwarded_call.h): what it covers, the
// secret and the signing time's bounds.

#include <doctest/doctest.h>

#include "ringlog/security/forwarded_call.h"

using namespace ringlog;
using security::forwarded_call;

namespace {

constexpr int64_t signed_at_ms = 1'764'930'000'000;

forwarded_call a_call() {
  return forwarded_call{"2", "POST", "/v3/clusters/c/topics/pub/records", "10.1.2.3", "https", "User:alice",
                        R"({"value":{"type":"STRING","data":"x"}})"};
}

}  // namespace

TEST_CASE("a forwarded call's proof verifies with the same secret, call and a time within the skew bound") {
  const auto secret = security::new_forwarding_secret();
  REQUIRE(secret.size() == security::constants::forwarding_secret_bytes);
  const std::string proof = security::sign_forwarded_call(secret, a_call(), signed_at_ms);
  CHECK(proof.starts_with(std::to_string(signed_at_ms) + ":"));
  CHECK(proof.size() == std::to_string(signed_at_ms).size() + 1 + 64);
  CHECK(security::verify_forwarded_call(secret, a_call(), proof, signed_at_ms));
  const int64_t skew = security::constants::forwarded_call_skew_ms_max;
  CHECK(security::verify_forwarded_call(secret, a_call(), proof, signed_at_ms + skew));
  CHECK(security::verify_forwarded_call(secret, a_call(), proof, signed_at_ms - skew));
}

TEST_CASE("a forwarded call's proof fails for an old or future time, another secret or an empty one") {
  const auto secret = security::new_forwarding_secret();
  const std::string proof = security::sign_forwarded_call(secret, a_call(), signed_at_ms);
  const int64_t skew = security::constants::forwarded_call_skew_ms_max;
  CHECK_FALSE(security::verify_forwarded_call(secret, a_call(), proof, signed_at_ms + skew + 1));   // replayed late
  CHECK_FALSE(security::verify_forwarded_call(secret, a_call(), proof, signed_at_ms - skew - 1));   // from the future
  CHECK_FALSE(security::verify_forwarded_call(security::new_forwarding_secret(), a_call(), proof, signed_at_ms));
  CHECK_FALSE(security::verify_forwarded_call({}, a_call(), proof, signed_at_ms));
  // A proof re-dated by the caller no longer matches its HMAC.
  const std::string redated = std::to_string(signed_at_ms + 1) + proof.substr(proof.find(':'));
  CHECK_FALSE(security::verify_forwarded_call(secret, a_call(), redated, signed_at_ms));
}

TEST_CASE("a forwarded call's proof covers the sender, method, target, client address, principal and body") {
  const auto secret = security::new_forwarding_secret();
  const std::string proof = security::sign_forwarded_call(secret, a_call(), signed_at_ms);
  auto tampered = [&](auto change) {
    forwarded_call call = a_call();
    change(call);
    return !security::verify_forwarded_call(secret, call, proof, signed_at_ms);
  };
  CHECK(tampered([](forwarded_call& c) { c.node_id = "3"; }));
  CHECK(tampered([](forwarded_call& c) { c.method = "DELETE"; }));
  CHECK(tampered([](forwarded_call& c) { c.target = "/v3/clusters/c/topics/pub/records?x=1"; }));
  CHECK(tampered([](forwarded_call& c) { c.forwarded_for = "10.9.9.9"; }));
  CHECK(tampered([](forwarded_call& c) { c.forwarded_for = ""; }));
  CHECK(tampered([](forwarded_call& c) { c.forwarded_proto = ""; }));
  // The principal the sender vouches for: another one, or none (a caller left to authenticate).
  CHECK(tampered([](forwarded_call& c) { c.principal = "User:admin"; }));
  CHECK(tampered([](forwarded_call& c) { c.principal = ""; }));
  CHECK(tampered([](forwarded_call& c) { c.body = "{}"; }));
  // Field boundaries are part of the message: moving bytes from one field to the next changes it.
  forwarded_call shifted = a_call();
  shifted.node_id = "2P";
  shifted.method = "OST";
  CHECK_FALSE(security::verify_forwarded_call(secret, shifted, proof, signed_at_ms));
}

TEST_CASE("a malformed forwarded-call proof is refused") {
  const auto secret = security::new_forwarding_secret();
  const std::string proof = security::sign_forwarded_call(secret, a_call(), signed_at_ms);
  const std::string mac = proof.substr(proof.find(':') + 1);
  for (const std::string& bad : {std::string(), std::string(":"), mac, ":" + mac, "x:" + mac,
                                 std::to_string(signed_at_ms) + ":" + mac.substr(2),
                                 std::to_string(signed_at_ms) + ":" + mac + "00",
                                 std::to_string(signed_at_ms) + ":" + std::string(64, 'G'),
                                 "99999999999999999999999:" + mac}) {
    CAPTURE(bad);
    CHECK_FALSE(security::verify_forwarded_call(secret, a_call(), bad, signed_at_ms));
  }
}
