// SASL OAUTHBEARER (RFC 7628 section 3.1, Kafka's KIP-255): the client's one message is
//   gs2-header kvsep *(key "=" value kvsep) kvsep        kvsep = %x01
// with gs2-header "n,," or "n,a=AUTHZID," and the pair auth=Bearer <token>. The token is a JWT
// checked by security::jwt_validator (signature against the JWKS, exp/nbf/iat with the clock skew,
// issuer, audience); the principal is User:<the subject claim>.

#include "ringlog/security/sasl.h"

namespace ringlog::security {

namespace {

class oauthbearer_server final : public sasl_server {
 public:
  oauthbearer_server(std::shared_ptr<const jwt_validator> validator, std::function<int64_t()> now_s)
      : validator_(std::move(validator)), now_s_(std::move(now_s)) {}

  [[nodiscard]] std::string_view mechanism() const override { return "OAUTHBEARER"; }
  [[nodiscard]] std::string attempted_user() const override { return user_; }

  result<sasl_step> step(std::span<const std::byte> client_bytes) override {
    if (done_) return error{errc::illegal_sasl_state, "OAUTHBEARER exchange is already over"};
    done_ = true;
    const std::string_view message(reinterpret_cast<const char*>(client_bytes.data()), client_bytes.size());
    if (message.size() > constants::sasl_message_bytes_max) return failed("OAUTHBEARER message is too long");
    auto token = bearer_token(message);
    if (!token.ok()) return token.error();
    auto claims = validator_->validate(*token, now_s_());
    if (!claims.ok()) {
      return failed("OAUTHBEARER token refused: " + std::string(to_string(claims.error().code)) + ": " +
                    claims.error().message);
    }
    user_ = claims->principal.name;
    if (!authzid_.empty() && authzid_ != user_) return failed("OAUTHBEARER authorization id differs from the token's subject");
    return sasl_step{"", true, claims->principal, claims->expires_at_s};
  }

 private:
  static error failed(std::string message) { return error{errc::sasl_authentication_failed, std::move(message)}; }

  /// The token of `auth=Bearer <token>`; keeps the authzid of the gs2 header.
  result<std::string> bearer_token(std::string_view message) {
    constexpr char kvsep = '\x01';
    const size_t first_comma = message.find(',');
    const size_t second_comma = first_comma == std::string_view::npos ? first_comma : message.find(',', first_comma + 1);
    if (second_comma == std::string_view::npos || message.substr(0, first_comma) != "n") {
      return failed("OAUTHBEARER message has no gs2 header (n,,)");
    }
    const std::string_view authzid = message.substr(first_comma + 1, second_comma - first_comma - 1);
    if (!authzid.empty()) {
      if (!authzid.starts_with("a=")) return failed("OAUTHBEARER gs2 header's authzid is malformed");
      authzid_ = std::string(authzid.substr(2));
    }
    std::string_view rest = message.substr(second_comma + 1);
    if (rest.size() < 3 || rest.front() != kvsep || !rest.ends_with(std::string_view("\x01\x01", 2))) {
      return failed("OAUTHBEARER message is not framed by 0x01 separators");
    }
    rest = rest.substr(1, rest.size() - 3);   // the pairs, without the leading and the final two kvseps
    std::optional<std::string> token;
    size_t from = 0;
    while (from <= rest.size()) {
      const size_t end = std::min(rest.find(kvsep, from), rest.size());
      const std::string_view pair = rest.substr(from, end - from);
      if (pair.starts_with("auth=")) {
        const std::string_view value = pair.substr(5);
        if (!value.starts_with("Bearer ") || value.size() == 7) return failed("OAUTHBEARER auth is not 'Bearer <token>'");
        if (token) return failed("OAUTHBEARER message has two auth pairs");
        token = std::string(value.substr(7));
      } else if (pair.find('=') == std::string_view::npos) {
        return failed("OAUTHBEARER message has a malformed key=value pair");
      }
      from = end + 1;
    }
    if (!token) return failed("OAUTHBEARER message has no auth=Bearer <token>");
    return *token;
  }

  std::shared_ptr<const jwt_validator> validator_;
  std::function<int64_t()> now_s_;
  std::string user_;
  std::string authzid_;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<sasl_server> make_oauthbearer_server(std::shared_ptr<const jwt_validator> validator,
                                                     std::function<int64_t()> now_s) {
  return std::make_unique<oauthbearer_server>(std::move(validator), std::move(now_s));
}

}  // namespace ringlog::security
