#include "ringlog/security/sasl.h"

#include <vector>

#include "ringlog/codec/base64.h"
#include "scram_primitives.h"

namespace ringlog::security {

namespace {

std::string_view as_text(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

error failed(std::string message) { return error{errc::sasl_authentication_failed, std::move(message)}; }

/// Splits on ','; attributes are `x=value` (RFC 5802 section 5.1).
std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  size_t from = 0;
  while (true) {
    const size_t comma = s.find(',', from);
    out.push_back(s.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from));
    if (comma == std::string_view::npos) return out;
    from = comma + 1;
  }
}

/// The value of attribute `name` (`name=value`), or nullopt when `attribute` is another one.
std::optional<std::string_view> attribute_value(std::string_view attribute, char name) {
  if (attribute.size() < 2 || attribute[0] != name || attribute[1] != '=') return std::nullopt;
  return attribute.substr(2);
}

/// RFC 5802 saslname: '=' only as "=2C" (',') or "=3D" ('='). nullopt when malformed or empty.
std::optional<std::string> decode_saslname(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '=') {
      out.push_back(s[i]);
      continue;
    }
    const std::string_view escape = s.substr(i, 3);
    if (escape == "=2C") out.push_back(',');
    else if (escape == "=3D") out.push_back('=');
    else return std::nullopt;
    i += 2;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

/// RFC 5802 `printable`: %x21-2B / %x2D-7E (no ',').
bool printable_nonce(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < 0x21 || c > 0x7e || c == ',') return false;
  }
  return true;
}

/// Made-up credentials for users the store does not have (RFC 5802 section 9): the salt is an
/// HMAC of the name under a key chosen once per process, so the same name always gets the same
/// salt and the exchange looks like a known user's until the proof fails.
scram_credential unknown_user_credential(scram_mechanism m, std::string_view user) {
  static const bytes key = random_bytes(32);
  scram_credential c;
  c.mechanism = m;
  c.salt = detail::hmac(m, key, user);
  c.salt.resize(constants::scram_salt_bytes);
  c.iterations = constants::scram_iterations_default;
  c.stored_key = random_bytes(digest_bytes(m));
  c.server_key = random_bytes(digest_bytes(m));
  return c;
}

class scram_server final : public sasl_server {
 public:
  scram_server(scram_mechanism m, scram_lookup lookup, std::string server_nonce)
      : mechanism_(m), lookup_(std::move(lookup)), server_nonce_(std::move(server_nonce)) {
    if (server_nonce_.empty()) server_nonce_ = codec::base64_encode(random_bytes(constants::scram_nonce_bytes));
  }

  [[nodiscard]] std::string_view mechanism() const override { return mechanism_name(mechanism_); }
  [[nodiscard]] std::string attempted_user() const override { return user_; }

  result<sasl_step> step(std::span<const std::byte> client_bytes) override {
    if (client_bytes.size() > constants::sasl_message_bytes_max) {
      state_ = state::done;
      return failed("SCRAM message of " + std::to_string(client_bytes.size()) + " bytes (at most " +
                    std::to_string(constants::sasl_message_bytes_max) + ")");
    }
    const state now = state_;
    state_ = state::done;   // until a step succeeds
    switch (now) {
      case state::client_first: return on_client_first(as_text(client_bytes));
      case state::client_final: return on_client_final(as_text(client_bytes));
      case state::done: break;
    }
    return error{errc::illegal_sasl_state, std::string(mechanism()) + " exchange is already over"};
  }

 private:
  enum class state { client_first, client_final, done };
  /// RFC 5802 section 5.1: "m" is reserved; its presence MUST fail the authentication, wherever
  /// it stands (before the user name as reserved-mext, or among the extensions).
  static constexpr std::string_view reserved_extension =
      "SCRAM client-first message carries the reserved m= extension (RFC 5802 section 5.1)";

  result<sasl_step> on_client_first(std::string_view message) {
    auto parts = split_commas(message);
    // gs2-header: cbind-flag "," [authzid] "," then client-first-bare.
    if (parts.size() < 4) return failed("SCRAM client-first message is malformed");
    if (parts[0].starts_with("p=")) return failed("SCRAM channel binding is not supported");
    if (parts[0] != "n" && parts[0] != "y") return failed("SCRAM client-first message has no gs2 header");
    std::optional<std::string> authzid;
    if (!parts[1].empty()) {
      auto a = attribute_value(parts[1], 'a');
      if (!a) return failed("SCRAM gs2 header's authzid is malformed");
      authzid = decode_saslname(*a);
      if (!authzid) return failed("SCRAM authzid is malformed");
    }
    gs2_header_ = std::string(parts[0]) + "," + std::string(parts[1]) + ",";
    client_first_bare_ = std::string(message.substr(gs2_header_.size()));
    if (parts[2].starts_with("m=")) return failed(std::string(reserved_extension));
    auto name = attribute_value(parts[2], 'n');
    if (!name) return failed("SCRAM client-first message has no user name (n=)");
    auto user = decode_saslname(*name);
    if (!user) return failed("SCRAM user name is malformed");
    user_ = *user;
    auto client_nonce = attribute_value(parts[3], 'r');
    if (!client_nonce || !printable_nonce(*client_nonce)) return failed("SCRAM client nonce is missing or malformed");
    for (size_t i = 4; i < parts.size(); ++i) {
      if (parts[i].find('=') == std::string_view::npos || parts[i].front() == '=') {
        return failed("SCRAM client-first message has a malformed extension");
      }
      if (parts[i].starts_with("m=")) return failed(std::string(reserved_extension));
      // Kafka's one extension: tokenauth=true logs in with a delegation token, which ringlog has not.
      if (parts[i].starts_with("tokenauth=")) return failed("SCRAM delegation tokens (tokenauth) are not supported");
    }
    if (authzid && *authzid != user_) return failed("SCRAM authorization id differs from the user name");
    auto found = lookup_(user_, mechanism_);
    credential_ = found ? std::move(*found) : unknown_user_credential(mechanism_, user_);
    nonce_ = std::string(*client_nonce) + server_nonce_;
    server_first_ = "r=" + nonce_ + ",s=" + codec::base64_encode(credential_.salt) + ",i=" +
                    std::to_string(credential_.iterations);
    state_ = state::client_final;
    return sasl_step{server_first_, false, std::nullopt};
  }

  result<sasl_step> on_client_final(std::string_view message) {
    const size_t proof_at = message.rfind(",p=");
    if (proof_at == std::string_view::npos) return failed("SCRAM client-final message has no proof");
    const std::string_view without_proof = message.substr(0, proof_at);
    auto parts = split_commas(without_proof);
    if (parts.size() < 2) return failed("SCRAM client-final message is malformed");
    auto binding = attribute_value(parts[0], 'c');
    if (!binding || *binding != codec::base64_encode(gs2_header_)) return failed("SCRAM channel binding does not match");
    auto nonce = attribute_value(parts[1], 'r');
    // Kafka's ScramSaslServer accepts a final nonce that ends with the server's (librdkafka 2.0
    // sends its own nonce again in front of it); the proof covers the message as sent either way.
    if (!nonce || !nonce->ends_with(nonce_)) return failed("SCRAM nonce does not match");
    auto proof = codec::base64_decode(message.substr(proof_at + 3));
    if (!proof || proof->size() != digest_bytes(mechanism_)) return failed("SCRAM proof is malformed");
    const std::string auth_message = client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
    const bytes client_signature = detail::hmac(mechanism_, credential_.stored_key, auth_message);
    bytes client_key(proof->size());
    for (size_t i = 0; i < client_key.size(); ++i) client_key[i] = (*proof)[i] ^ client_signature[i];
    if (!detail::equal_constant_time(detail::hash(mechanism_, client_key), credential_.stored_key)) {
      return failed("Authentication failed during authentication due to invalid credentials with SASL mechanism " +
                    std::string(mechanism()));
    }
    const bytes server_signature = detail::hmac(mechanism_, credential_.server_key, auth_message);
    return sasl_step{"v=" + codec::base64_encode(server_signature), true, kafka_principal::user(user_)};
  }

  scram_mechanism mechanism_;
  scram_lookup lookup_;
  std::string server_nonce_;
  state state_ = state::client_first;
  std::string user_;
  std::string gs2_header_;
  std::string client_first_bare_;
  std::string server_first_;
  std::string nonce_;
  scram_credential credential_;
};

class plain_server final : public sasl_server {
 public:
  explicit plain_server(scram_lookup lookup) : lookup_(std::move(lookup)) {}

  [[nodiscard]] std::string_view mechanism() const override { return "PLAIN"; }
  [[nodiscard]] std::string attempted_user() const override { return user_; }

  result<sasl_step> step(std::span<const std::byte> client_bytes) override {
    if (done_) return error{errc::illegal_sasl_state, "PLAIN exchange is already over"};
    done_ = true;
    if (client_bytes.size() > constants::sasl_message_bytes_max) return failed("PLAIN message is too long");
    const std::string_view message = as_text(client_bytes);
    const size_t first = message.find('\0');
    const size_t second = first == std::string_view::npos ? first : message.find('\0', first + 1);
    if (second == std::string_view::npos || message.find('\0', second + 1) != std::string_view::npos) {
      return failed("PLAIN message is not [authzid] NUL authcid NUL passwd");
    }
    const std::string_view authzid = message.substr(0, first);
    user_ = std::string(message.substr(first + 1, second - first - 1));
    const std::string_view password = message.substr(second + 1);
    if (user_.empty() || password.empty()) return failed("PLAIN user name and password must not be empty");
    if (!authzid.empty() && authzid != user_) return failed("PLAIN authorization id differs from the user name");
    if (!user_password_matches(lookup_, user_, password)) {
      return failed("Authentication failed: Invalid username or password");
    }
    return sasl_step{"", true, kafka_principal::user(user_)};
  }

 private:
  scram_lookup lookup_;
  std::string user_;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<sasl_server> make_scram_server(scram_mechanism m, scram_lookup lookup, std::string server_nonce) {
  return std::make_unique<scram_server>(m, std::move(lookup), std::move(server_nonce));
}

std::unique_ptr<sasl_server> make_plain_server(scram_lookup lookup) {
  return std::make_unique<plain_server>(std::move(lookup));
}

std::unique_ptr<sasl_server> make_sasl_server(std::string_view mechanism, scram_lookup lookup) {
  if (mechanism == "PLAIN") return make_plain_server(std::move(lookup));
  if (auto m = parse_scram_mechanism(mechanism)) return make_scram_server(*m, std::move(lookup));
  return nullptr;
}

}  // namespace ringlog::security
