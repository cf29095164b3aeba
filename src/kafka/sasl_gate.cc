#include "sasl_gate.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "handlers.h"

namespace ringlog::kafka::detail {

namespace {

template <typename Body>
bytes response(int16_t api_version, int32_t correlation_id, const Body& body) {
  protocol::writer w;
  auto written = protocol::encode_response_frame(w, api_version, correlation_id, body);
  RINGLOG_ASSERT(written.ok(), "a SASL answer encodes at the request's version");
  return std::move(w).take();
}

/// A raw SASL token as Kafka frames it after a SaslHandshake v0: int32 length, then the bytes.
bytes raw_token(std::string_view token) {
  protocol::writer w;
  w.write_int32(static_cast<int32_t>(token.size()));
  w.write_raw(std::span(reinterpret_cast<const std::byte*>(token.data()), token.size()));
  return std::move(w).take();
}

/// Seconds since the epoch: a JWT's exp, nbf and iat are wall-clock times.
int64_t wall_clock_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int16_t code_of_security(security::errc e) {
  return e == security::errc::illegal_sasl_state ? error_code::illegal_sasl_state : error_code::sasl_authentication_failed;
}

}  // namespace

std::string sasl_gate::attempted_user() const { return exchange_ ? exchange_->attempted_user() : last_user_; }

int64_t sasl_gate::logged_in(const security::sasl_step& step, int64_t now_ms) {
  authenticated_ = true;
  principal_ = *step.principal;
  // connections.max.reauth.ms may be as large as INT64_MAX: saturate instead of overflowing (a
  // breaker's --set connections.max.reauth.ms=9223372036854775807 made every login expire at once).
  const bool never = options_.reauth_ms <= 0 || options_.reauth_ms > std::numeric_limits<int64_t>::max() - now_ms;
  int64_t lifetime_ms = never ? std::numeric_limits<int64_t>::max() : options_.reauth_ms;
  // KIP-368 (Kafka's SaslServerAuthenticator): the session also ends when the credential does
  // (an OAUTHBEARER token's exp), even with connections.max.reauth.ms 0.
  if (step.credential_expires_at_s) {
    const int64_t left_s = *step.credential_expires_at_s - wall_clock_s();
    lifetime_ms = std::min(lifetime_ms, std::max<int64_t>(1, left_s) * 1000);
  }
  const bool endless = lifetime_ms == std::numeric_limits<int64_t>::max() ||
                       lifetime_ms > std::numeric_limits<int64_t>::max() - now_ms;
  session_end_ms_ = endless ? std::nullopt : std::optional<int64_t>(now_ms + lifetime_ms);
  last_user_ = exchange_->attempted_user();
  exchange_.reset();
  state_ = state::expect_handshake;
  return endless ? 0 : lifetime_ms;
}

sasl_gate::decision sasl_gate::on_frame(std::span<const std::byte> frame, int64_t now_ms) {
  if (state_ == state::expect_raw_token) return on_raw_token(frame, now_ms);
  auto header = protocol::decode_request_header(frame);
  if (!header.ok()) {
    if (authenticated_) return {};   // the handler answers or closes as on any listener
    return {action::close, {}, "a request that does not decode before SASL authentication: " + header.error().message};
  }
  const auto& h = header->header;
  const auto body = frame.subspan(header->body_offset);
  switch (h.request_api_key) {
    case protocol::api_versions_request_data::api_key:
      return {};
    case protocol::sasl_handshake_request_data::api_key:
      return on_handshake(h, body);
    case protocol::sasl_authenticate_request_data::api_key:
      return on_authenticate(h, body, now_ms);
    default:
      break;
  }
  if (!authenticated_) {
    return {action::close, {}, "api key " + std::to_string(h.request_api_key) +
                                   " before SASL authentication (only ApiVersions, SaslHandshake, SaslAuthenticate)"};
  }
  if (state_ != state::expect_handshake) {
    // Kafka's rule during KIP-368 re-authentication: the exchange runs alone.
    return {action::close, {}, "api key " + std::to_string(h.request_api_key) + " in the middle of re-authentication"};
  }
  if (session_end_ms_ && now_ms >= *session_end_ms_) {
    return {action::close, {}, "the SASL session of " + principal_.to_string() +
                                   " expired (connections.max.reauth.ms) without re-authentication"};
  }
  return {};
}

sasl_gate::decision sasl_gate::on_handshake(const protocol::request_header_data& h, std::span<const std::byte> body) {
  auto request = decode_body<protocol::sasl_handshake_request_data>(body, h.request_api_version);
  if (!request.ok()) return {action::close, {}, "SaslHandshake does not decode: " + request.error().message};
  protocol::sasl_handshake_response_data out;
  for (const auto& m : options_.enabled_mechanisms) out.mechanisms.push_back(m);
  const bool known = std::find(options_.enabled_mechanisms.begin(), options_.enabled_mechanisms.end(),
                               request->mechanism) != options_.enabled_mechanisms.end();
  if (state_ != state::expect_handshake || (authenticated_ && h.request_api_version == 0)) {
    // A handshake inside an exchange, or a v0 one (raw tokens) to re-authenticate (KIP-368 needs v1).
    out.error_code = error_code::illegal_sasl_state;
    return {action::answer_and_close, response(h.request_api_version, h.correlation_id, out),
            "SaslHandshake out of order", false};
  }
  if (!known) {
    out.error_code = error_code::unsupported_sasl_mechanism;
    return {action::answer_and_close, response(h.request_api_version, h.correlation_id, out),
            "SASL mechanism '" + request->mechanism + "' is not enabled (sasl.enabled.mechanisms)", true};
  }
  if (authenticated_ && request->mechanism != mechanism_) {
    // KIP-368: re-authentication keeps the mechanism of the first login.
    out.error_code = error_code::illegal_sasl_state;
    return {action::answer_and_close, response(h.request_api_version, h.correlation_id, out),
            "re-authentication with " + request->mechanism + " after a login with " + mechanism_, true};
  }
  mechanism_ = request->mechanism;
  exchange_ = mechanism_ == "OAUTHBEARER" ? security::make_oauthbearer_server(options_.oauthbearer, wall_clock_s)
                                          : security::make_sasl_server(mechanism_, lookup_);
  RINGLOG_ASSERT(exchange_ != nullptr, "every mechanism sasl.enabled.mechanisms accepts has a server");
  state_ = h.request_api_version == 0 ? state::expect_raw_token : state::expect_authenticate;
  out.error_code = error_code::none;
  return {action::answer, response(h.request_api_version, h.correlation_id, out), {}, false};
}

sasl_gate::decision sasl_gate::on_authenticate(const protocol::request_header_data& h, std::span<const std::byte> body,
                                               int64_t now_ms) {
  protocol::sasl_authenticate_response_data out;
  if (state_ != state::expect_authenticate) {
    out.error_code = error_code::illegal_sasl_state;
    out.error_message = "SaslAuthenticate without a SaslHandshake v1 before it";
    return {action::answer_and_close, response(h.request_api_version, h.correlation_id, out), *out.error_message, false};
  }
  auto request = decode_body<protocol::sasl_authenticate_request_data>(body, h.request_api_version);
  if (!request.ok()) {
    out.error_code = error_code::illegal_sasl_state;
    out.error_message = "SaslAuthenticate does not decode: " + request.error().message;
    return {action::answer_and_close, response(h.request_api_version, h.correlation_id, out), *out.error_message, true};
  }
  auto step = exchange_->step(request->auth_bytes);
  if (!step.ok()) {
    last_user_ = exchange_->attempted_user();
    exchange_.reset();
    state_ = state::expect_handshake;
    out.error_code = code_of_security(step.error().code);
    out.error_message = step.error().message;
    return {action::answer_and_close, response(h.request_api_version, h.correlation_id, out), step.error().message, true};
  }
  if (step->complete && authenticated_ && step->principal->to_string() != principal_.to_string()) {
    // KIP-368: re-authentication must keep the principal (Kafka's ReauthInfo: "Cannot change
    // principals during re-authentication"); a connection cannot become another user.
    last_user_ = exchange_->attempted_user();
    exchange_.reset();
    state_ = state::expect_handshake;
    out.error_code = error_code::sasl_authentication_failed;
    out.error_message = "Cannot change principals during re-authentication from " + principal_.to_string() + ": " +
                        step->principal->to_string();
    return {action::answer_and_close, response(h.request_api_version, h.correlation_id, out), *out.error_message, true};
  }
  out.auth_bytes.assign(reinterpret_cast<const std::byte*>(step->server_bytes.data()),
                        reinterpret_cast<const std::byte*>(step->server_bytes.data()) + step->server_bytes.size());
  if (step->complete) out.session_lifetime_ms = logged_in(*step, now_ms);
  return {action::answer, response(h.request_api_version, h.correlation_id, out), {}, false};
}

sasl_gate::decision sasl_gate::on_raw_token(std::span<const std::byte> token, int64_t now_ms) {
  auto step = exchange_->step(token);
  if (!step.ok()) {
    last_user_ = exchange_->attempted_user();
    exchange_.reset();
    state_ = state::expect_handshake;
    // Raw framing has no place for an error: Kafka closes the connection (after the delay).
    return {action::close, {}, step.error().message, true};
  }
  bytes answer = raw_token(step->server_bytes);
  if (step->complete) logged_in(*step, now_ms);
  return {action::answer, std::move(answer), {}, false};
}

}  // namespace ringlog::kafka::detail
