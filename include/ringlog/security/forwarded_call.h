#pragma once
// How a broker proves that an HTTP call it passes on to a peer comes from it (issue 13's group,
// transaction and broker-config calls through any broker; docs/security.md "Calls passed on
// between brokers"). The peer believes the client's address the sender names (ACL hosts) and
// the steps the sender says it already did only for a call this proves; a call without a valid
// proof is a client's own call, whatever headers it carries.
//
// The proof is an HMAC-SHA256 (RFC 2104) keyed with the cluster's forwarding secret: random bytes
// the active controller commits once to the metadata log (broker/internal_topics.cc), so every
// broker of the cluster holds it and no client does. It covers the sender's node id, the method
// and target as sent, the client's address and scheme it names, the principal it authenticated the
// client as, the body and the time it was signed; the header's value is "<signed_at_ms>:<64 hex
// digits>". Pure: the secret and the time are arguments.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "ringlog/security/scram.h"

namespace ringlog::security {

namespace constants {
/// Bytes of the cluster's forwarding secret: an HMAC-SHA256 key of the hash's block size is the
/// strongest RFC 2104 uses without hashing the key first (64 bytes, 512 bits).
inline constexpr size_t forwarding_secret_bytes = 64;
/// How far a forwarded call's signing time may lie from the receiver's clock, ms (either way).
/// A call is signed just before it is sent and checked as it arrives (connect at most
/// proxy_limits::connect_timeout_ms later); the rest is the brokers' clock skew, which NTP keeps
/// far under this. Kerberos allows five minutes of skew for the same reason; one minute keeps a
/// captured call replayable for less time.
inline constexpr int64_t forwarded_call_skew_ms_max = 60'000;
}  // namespace constants

/// What a forwarded call's proof covers: every field a receiver believes or acts on.
struct forwarded_call {
  std::string_view node_id;         // X-Ringlog-Forwarded-By: the sender's node id, decimal
  std::string_view method;          // as sent (HEAD is passed on as GET)
  std::string_view target;          // path and query as sent
  std::string_view forwarded_for;   // X-Ringlog-Forwarded-For: the client's address ("" when none)
  std::string_view forwarded_proto;   // X-Forwarded-Proto: "https" when the client came over TLS, else ""
  /// X-Ringlog-Forwarded-Principal: the principal the sender authenticated the client as
  /// (`User:alice`, percent-encoded as sent), "" when it names none.
  std::string_view principal;
  std::string_view body;
};

/// The header value that proves `call` was sent by a holder of `secret` at `now_ms` (Unix ms):
/// "<now_ms>:<hex HMAC-SHA256>". `secret` must not be empty.
std::string sign_forwarded_call(std::span<const std::byte> secret, const forwarded_call& call, int64_t now_ms);

/// Whether `proof` (a header value of sign_forwarded_call) proves `call` with `secret` at the
/// receiver's `now_ms`: the HMAC matches (compared in constant time) and its time is within
/// constants::forwarded_call_skew_ms_max of `now_ms`. False for an empty secret (none committed
/// yet: nothing is believed) and for any malformed proof.
bool verify_forwarded_call(std::span<const std::byte> secret, const forwarded_call& call, std::string_view proof,
                           int64_t now_ms);

/// A new forwarding secret: constants::forwarding_secret_bytes of OpenSSL's RAND_bytes.
bytes new_forwarding_secret();

/// Proof that a record the broker writes into a topic users may write too (a dead-letter topic's
/// redrive marker) came from a broker of this cluster: the hex HMAC-SHA256, keyed with the
/// forwarding secret, of `purpose` and `fields` (each as "<bytes>:<field>", so no two different
/// field lists give one message). Empty for an empty secret (none committed yet).
std::string sign_broker_record(std::span<const std::byte> secret, std::string_view purpose,
                               std::initializer_list<std::string_view> fields);
/// Whether `proof` is sign_broker_record's for the same secret, purpose and fields (compared in
/// constant time). False for an empty secret and for any malformed proof.
bool verify_broker_record(std::span<const std::byte> secret, std::string_view purpose,
                          std::initializer_list<std::string_view> fields, std::string_view proof);

}  // namespace ringlog::security
