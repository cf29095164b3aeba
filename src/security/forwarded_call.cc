// The proof of a call one broker passes on to another (forwarded_call.h): HMAC-SHA256 over the
// call's fields with the cluster's forwarding secret.

#include "ringlog/security/forwarded_call.h"

#include <charconv>

#include "scram_primitives.h"

namespace ringlog::security {
namespace {

constexpr std::string_view hex_digits = "0123456789abcdef";
/// Hex digits of an HMAC-SHA256 (32 bytes).
constexpr size_t mac_hex_chars = 64;

/// Appends each field as "\n<bytes>:<field>" (a netstring without the comma), so no two
/// different field lists give the same message whatever their fields hold.
void append_fields(std::string& m, std::initializer_list<std::string_view> fields) {
  for (std::string_view field : fields) {
    m += '\n';
    m += std::to_string(field.size());
    m += ':';
    m += field;
  }
}

/// `b` as lowercase hex digits.
std::string to_hex(const bytes& b) {
  std::string out;
  out.reserve(b.size() * 2);
  for (std::byte x : b) {
    out += hex_digits[std::to_integer<size_t>(x) >> 4];
    out += hex_digits[std::to_integer<size_t>(x) & 0xf];
  }
  return out;
}

/// The signed message: the time and each field of the call.
std::string signed_message(const forwarded_call& call, int64_t signed_at_ms) {
  // v2: the principal joined the fields (a v1 proof never verifies as v2, nor the reverse).
  std::string m = "ringlog-forwarded-call-v2\n" + std::to_string(signed_at_ms);
  append_fields(m, {call.node_id, call.method, call.target, call.forwarded_for, call.forwarded_proto, call.principal,
                    call.body});
  return m;
}

bytes mac_of(std::span<const std::byte> secret, const forwarded_call& call, int64_t signed_at_ms) {
  return detail::hmac(scram_mechanism::sha_256, secret, signed_message(call, signed_at_ms));
}

/// `hex` (lowercase, even length) as bytes, or empty when it is not such hex.
bytes from_hex(std::string_view hex) {
  bytes out;
  if (hex.size() % 2 != 0) return out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const size_t high = hex_digits.find(hex[i]);
    const size_t low = hex_digits.find(hex[i + 1]);
    if (high == std::string_view::npos || low == std::string_view::npos) return {};
    out.push_back(static_cast<std::byte>(high * 16 + low));
  }
  return out;
}

}  // namespace

std::string sign_forwarded_call(std::span<const std::byte> secret, const forwarded_call& call, int64_t now_ms) {
  return std::to_string(now_ms) + ":" + to_hex(mac_of(secret, call, now_ms));
}

bool verify_forwarded_call(std::span<const std::byte> secret, const forwarded_call& call, std::string_view proof,
                           int64_t now_ms) {
  if (secret.empty()) return false;
  const size_t colon = proof.find(':');
  if (colon == std::string_view::npos || proof.size() - colon - 1 != mac_hex_chars) return false;
  int64_t signed_at_ms = 0;
  const auto [end, ec] = std::from_chars(proof.data(), proof.data() + colon, signed_at_ms);
  if (ec != std::errc() || end != proof.data() + colon) return false;
  // Either way: a sender's clock ahead of ours is skew too. Written as two comparisons so that no
  // subtraction of a hostile value can overflow.
  if (signed_at_ms > now_ms + constants::forwarded_call_skew_ms_max ||
      signed_at_ms < now_ms - constants::forwarded_call_skew_ms_max) {
    return false;
  }
  const bytes claimed = from_hex(proof.substr(colon + 1));
  return !claimed.empty() && detail::equal_constant_time(claimed, mac_of(secret, call, signed_at_ms));
}

bytes new_forwarding_secret() { return random_bytes(constants::forwarding_secret_bytes); }

namespace {

bytes broker_record_mac(std::span<const std::byte> secret, std::string_view purpose,
                        std::initializer_list<std::string_view> fields) {
  std::string m = "ringlog-broker-record-v1\n" + std::string(purpose);
  append_fields(m, fields);
  return detail::hmac(scram_mechanism::sha_256, secret, m);
}

}  // namespace

std::string sign_broker_record(std::span<const std::byte> secret, std::string_view purpose,
                               std::initializer_list<std::string_view> fields) {
  return secret.empty() ? std::string() : to_hex(broker_record_mac(secret, purpose, fields));
}

bool verify_broker_record(std::span<const std::byte> secret, std::string_view purpose,
                          std::initializer_list<std::string_view> fields, std::string_view proof) {
  if (secret.empty() || proof.size() != mac_hex_chars) return false;
  const bytes claimed = from_hex(proof);
  return !claimed.empty() && detail::equal_constant_time(claimed, broker_record_mac(secret, purpose, fields));
}

}  // namespace ringlog::security
