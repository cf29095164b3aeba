#pragma once
// Private to the kafka module: the SASL state of one connection of a SASL_PLAINTEXT:// listener
// (KIP-43 handshake, KIP-152 SaslAuthenticate, KIP-368 re-authentication), without sockets or
// clocks: the listener hands it every frame before dispatch (on_frame) with the time, and does
// what the answer says. Kafka's SaslServerAuthenticator is the model:
//   - until the connection has authenticated, only ApiVersions (18), SaslHandshake (17) and
//     SaslAuthenticate (36) are served; any other request closes the connection;
//   - SaslHandshake v0: the next frames are raw SASL tokens (4-byte length + bytes, not Kafka
//     requests; kafka-python 2.0's framing) until the exchange completes; v1: each token comes in a
//     SaslAuthenticate request;
//   - a failed login: SaslAuthenticate answers SASL_AUTHENTICATION_FAILED (58) with a message
//     (raw tokens cannot carry one), then the connection closes after
//     connection.failed.authentication.delay.ms;
//   - connections.max.reauth.ms > 0: SaslAuthenticate v1+ tells the client the session lifetime;
//     the client re-authenticates with a new SaslHandshake v1 (same mechanism) on the same
//     connection; a request other than those after the lifetime closes the connection.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringlog/kafka/request_handler.h"
#include "ringlog/security/sasl.h"

namespace ringlog::kafka::detail {

struct sasl_gate_options {
  std::vector<std::string> enabled_mechanisms;   // sasl.enabled.mechanisms
  int64_t reauth_ms = 0;                         // connections.max.reauth.ms (0: no expiry)
  /// OAUTHBEARER: the JWT rules (sasl.oauthbearer.*, the JWKS HTTP Bearer uses); nullptr = none.
  std::shared_ptr<const security::jwt_validator> oauthbearer;
};

class sasl_gate {
 public:
  enum class action {
    dispatch,          // an ordinary request of an authenticated connection (or ApiVersions): to the handler
    answer,            // send `frame` (a SASL answer) in its place in the order
    answer_and_close,  // send `frame`, then close after connection.failed.authentication.delay.ms
    close,             // close now (no answer can be framed)
  };
  struct decision {
    action what = action::dispatch;
    bytes frame;          // for answer / answer_and_close: the whole frame with its size prefix
    std::string reason;   // for the close: why (the log line)
    bool failed_login = false;   // an authentication failure: the listener writes the audit line
  };

  sasl_gate(sasl_gate_options options, security::scram_lookup lookup)
      : options_(std::move(options)), lookup_(std::move(lookup)) {}

  /// One frame (the bytes after the size prefix) at `now_ms` (a monotonic clock, ms).
  decision on_frame(std::span<const std::byte> frame, int64_t now_ms);

  /// The authenticated principal; User:ANONYMOUS before the first login.
  [[nodiscard]] const security::kafka_principal& principal() const { return principal_; }
  [[nodiscard]] bool authenticated() const { return authenticated_; }
  /// The user the current or failed exchange named ("" if none), for the audit line.
  [[nodiscard]] std::string attempted_user() const;
  [[nodiscard]] std::string mechanism() const { return mechanism_; }

 private:
  decision on_raw_token(std::span<const std::byte> token, int64_t now_ms);
  decision on_handshake(const protocol::request_header_data& h, std::span<const std::byte> body);
  decision on_authenticate(const protocol::request_header_data& h, std::span<const std::byte> body, int64_t now_ms);
  /// Marks the connection authenticated by `step` (complete) at `now_ms`; answers the session's
  /// lifetime, ms (0: none): connections.max.reauth.ms, or less when the credential expires sooner
  /// (KIP-368).
  int64_t logged_in(const security::sasl_step& step, int64_t now_ms);

  enum class state { expect_handshake, expect_raw_token, expect_authenticate };
  sasl_gate_options options_;
  security::scram_lookup lookup_;
  state state_ = state::expect_handshake;
  std::unique_ptr<security::sasl_server> exchange_;
  std::string mechanism_;                  // of the last handshake
  std::string last_user_;                  // of the last exchange
  bool authenticated_ = false;
  security::kafka_principal principal_;
  std::optional<int64_t> session_end_ms_;  // KIP-368: when the login expires (nullopt: never)
};

}  // namespace ringlog::kafka::detail
