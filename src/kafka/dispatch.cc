// Routes a request frame to its api's handler; answers ApiVersions, SaslHandshake and whatever
// this listener does not serve.

#include <algorithm>
#include <array>

#include "handlers.h"


#include "ringlog/base/latency_stages.h"

namespace ringlog::kafka {

namespace {

using namespace detail;

// Version ranges: to the newest our schema files define, except where a newer version needs
// what a single node does not have yet (Fetch 13+ names topics by id only; ListOffsets 7+ adds
// max-timestamp lookups); from the oldest Kafka 4.0 still accepts (KIP-896), except Produce and
// Fetch. Only record batch v2 (magic 2: Produce 3+, Fetch 4+) is stored, yet Produce starts at
// v0 and Fetch at v2: librdkafka 2.0 compresses with gzip, snappy or lz4 only for a broker that
// lists Produce v0 (its "compression supported" check) and Fetch v2 (its MsgVer1 feature). A
// Produce of message format v0/v1 is answered UNSUPPORTED_FOR_MESSAGE_FORMAT, and a Fetch below v4
// UNSUPPORTED_VERSION, per partition. Sorted by api key.
constexpr std::array<handled_api, 44> apis = {{
    {protocol::produce_request_data::api_key, 0, 11},
    {protocol::fetch_request_data::api_key, 2, 12},
    {protocol::list_offsets_request_data::api_key, 1, 6},
    {protocol::metadata_request_data::api_key, 0, 12},
    {protocol::offset_commit_request_data::api_key, 2, 9},
    {protocol::offset_fetch_request_data::api_key, 1, 9},
    {protocol::find_coordinator_request_data::api_key, 0, 6},
    {protocol::join_group_request_data::api_key, 0, 9},
    {protocol::heartbeat_request_data::api_key, 0, 4},
    {protocol::leave_group_request_data::api_key, 0, 5},
    {protocol::sync_group_request_data::api_key, 0, 5},
    {protocol::describe_groups_request_data::api_key, 0, 5},
    {protocol::list_groups_request_data::api_key, 0, 5},
    {protocol::sasl_handshake_request_data::api_key, 0, 1},
    {protocol::api_versions_request_data::api_key, 0, 4},
    {protocol::create_topics_request_data::api_key, 2, 7},
    {protocol::delete_topics_request_data::api_key, 1, 6},
    {protocol::delete_records_request_data::api_key, 0, 2},
    {protocol::init_producer_id_request_data::api_key, 0, 5},
    {protocol::offset_for_leader_epoch_request_data::api_key, 2, 4},
    {protocol::add_partitions_to_txn_request_data::api_key, 0, 3},
    {protocol::add_offsets_to_txn_request_data::api_key, 0, 4},
    {protocol::end_txn_request_data::api_key, 0, 5},
    {protocol::txn_offset_commit_request_data::api_key, 0, 5},
    {protocol::describe_configs_request_data::api_key, 1, 4},
    {protocol::alter_configs_request_data::api_key, 0, 2},
    {protocol::sasl_authenticate_request_data::api_key, 0, 2},
    {protocol::create_partitions_request_data::api_key, 0, 3},
    {protocol::delete_groups_request_data::api_key, 0, 2},
    {protocol::incremental_alter_configs_request_data::api_key, 0, 1},
    {protocol::alter_partition_reassignments_request_data::api_key, 0, 0},
    {protocol::list_partition_reassignments_request_data::api_key, 0, 0},
    {protocol::offset_delete_request_data::api_key, 0, 0},
    {protocol::describe_client_quotas_request_data::api_key, 0, 1},
    {protocol::alter_client_quotas_request_data::api_key, 0, 1},
    {protocol::describe_user_scram_credentials_request_data::api_key, 0, 0},
    {protocol::alter_user_scram_credentials_request_data::api_key, 0, 0},
    {protocol::describe_cluster_request_data::api_key, 0, 1},
    {protocol::describe_producers_request_data::api_key, 0, 0},
    {protocol::describe_transactions_request_data::api_key, 0, 0},
    {protocol::list_transactions_request_data::api_key, 0, 1},
    {protocol::describe_acls_request_data::api_key, 0, 3},
    {protocol::create_acls_request_data::api_key, 0, 3},
    {protocol::delete_acls_request_data::api_key, 0, 3},
}};

constexpr size_t apis_count = apis.size();

/// The ApiVersions answer (KIP-511: always response header v0). error_code 35 when the client
/// asked for an api or version we do not serve; then the body is v0 so every client can read it.
bytes api_versions_frame(int16_t api_version, int32_t correlation_id, int16_t error) {
  protocol::api_versions_response_data body;
  body.error_code = error;
  for (size_t i = 0; i < apis_count; ++i) {
    protocol::api_versions_response_data::api_version v;
    v.api_key = apis[i].api_key;
    v.min_version = apis[i].min_version;
    v.max_version = apis[i].max_version;
    body.api_keys.push_back(v);
  }
  protocol::writer w;
  auto written = protocol::encode_response_frame(w, api_version, correlation_id, body);
  RINGLOG_ASSERT(written.ok(), "ApiVersionsResponse must encode");
  return std::move(w).take();
}

/// Decodes the body as Body and runs `handle` with it.
template <typename Body, typename Fn>
protocol::result<void> route(std::span<const std::byte> body, const request_context& ctx, Fn handle) {
  auto decoded = decode_body<Body>(body, ctx.api_version);
  if (!decoded.ok()) return decoded.error();
  if constexpr (requires(const Body& b) { audit_subjects_of(b); }) {
    request_context with_subjects = ctx;
    with_subjects.audit_subjects = std::make_shared<const std::vector<std::string>>(audit_subjects_of(decoded.value()));
    handle(with_subjects, std::move(decoded).value());
  } else {
    handle(ctx, std::move(decoded).value());
  }
  return base::ok_v;
}

/// KIP-511: ClientSoftwareName and ClientSoftwareVersion (ApiVersions v3+) match
/// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? - letters and digits at both ends, '-' and '.'
/// between (Kafka's ApiVersionsRequest.isValid).
bool valid_client_software_text(std::string_view s) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-' && c != '.') return false;
  }
  return true;
}

/// invalid_request when a v3+ ApiVersions body decodes and names its client software against
/// KIP-511's pattern (Kafka answers INVALID_REQUEST then); none otherwise, also for a body that
/// does not decode (answered all the same, see handle()).
int16_t api_versions_body_error(int16_t api_version, std::span<const std::byte> body) {
  if (api_version < 3) return error_code::none;
  protocol::reader rd(body);
  auto decoded = protocol::api_versions_request_data::decode(rd, api_version);
  if (!decoded.ok()) return error_code::none;
  if (!valid_client_software_text(decoded->client_software_name) ||
      !valid_client_software_text(decoded->client_software_version)) {
    return error_code::invalid_request;
  }
  return error_code::none;
}

}  // namespace

std::span<const handled_api> handled_apis() { return std::span<const handled_api>(apis.data(), apis_count); }

std::optional<base::cpu_activity> data_activity(int16_t api_key) {
  if (api_key == protocol::produce_request_data::api_key) return base::cpu_activity::produce;
  if (api_key == protocol::fetch_request_data::api_key) return base::cpu_activity::fetch;
  return std::nullopt;
}

const handled_api* find_handled_api(int16_t api_key) {
  for (size_t i = 0; i < apis_count; ++i) {
    if (apis[i].api_key == api_key) return &apis[i];
  }
  return nullptr;
}

namespace {

// Kafka answers a SaslHandshake on a listener without SASL with ILLEGAL_SASL_STATE; the client
// then reports that the broker does not do SASL.
void answer_sasl_handshake(const request_context& c, protocol::sasl_handshake_request_data) {
  protocol::sasl_handshake_response_data out;
  out.error_code = error_code::illegal_sasl_state;
  c.answer(out);
}

// Reaches here only on a listener without SASL (a SASL listener's gate answers it first).
void answer_sasl_authenticate(const request_context& c, protocol::sasl_authenticate_request_data) {
  protocol::sasl_authenticate_response_data out;
  out.error_code = error_code::illegal_sasl_state;
  out.error_message = "this listener does not do SASL (it is not SASL_PLAINTEXT://)";
  c.answer(out);
}

/// Decodes the body of an api of handled_apis() and runs its handler.
protocol::result<void> route_api(int16_t api_key, std::span<const std::byte> body, const request_context& ctx) {
  switch (api_key) {
    case protocol::produce_request_data::api_key:
      return route<protocol::produce_request_data>(body, ctx, handle_produce);
    case protocol::fetch_request_data::api_key:
      return route<protocol::fetch_request_data>(body, ctx, handle_fetch);
    case protocol::list_offsets_request_data::api_key:
      return route<protocol::list_offsets_request_data>(body, ctx, handle_list_offsets);
    case protocol::metadata_request_data::api_key:
      return route<protocol::metadata_request_data>(body, ctx, handle_metadata);
    case protocol::find_coordinator_request_data::api_key:
      return route<protocol::find_coordinator_request_data>(body, ctx, handle_find_coordinator);
    case protocol::sasl_handshake_request_data::api_key:
      return route<protocol::sasl_handshake_request_data>(body, ctx, answer_sasl_handshake);
    case protocol::sasl_authenticate_request_data::api_key:
      return route<protocol::sasl_authenticate_request_data>(body, ctx, answer_sasl_authenticate);
    case protocol::create_topics_request_data::api_key:
      return route<protocol::create_topics_request_data>(body, ctx, handle_create_topics);
    case protocol::describe_acls_request_data::api_key:
      return route<protocol::describe_acls_request_data>(body, ctx, handle_describe_acls);
    case protocol::create_acls_request_data::api_key:
      return route<protocol::create_acls_request_data>(body, ctx, handle_create_acls);
    case protocol::delete_acls_request_data::api_key:
      return route<protocol::delete_acls_request_data>(body, ctx, handle_delete_acls);
    case protocol::delete_topics_request_data::api_key:
      return route<protocol::delete_topics_request_data>(body, ctx, handle_delete_topics);
    case protocol::delete_records_request_data::api_key:
      return route<protocol::delete_records_request_data>(body, ctx, handle_delete_records);
    case protocol::offset_for_leader_epoch_request_data::api_key:
      return route<protocol::offset_for_leader_epoch_request_data>(body, ctx, handle_offset_for_leader_epoch);
    case protocol::describe_configs_request_data::api_key:
      return route<protocol::describe_configs_request_data>(body, ctx, handle_describe_configs);
    case protocol::alter_configs_request_data::api_key:
      return route<protocol::alter_configs_request_data>(body, ctx, handle_alter_configs);
    case protocol::create_partitions_request_data::api_key:
      return route<protocol::create_partitions_request_data>(body, ctx, handle_create_partitions);
    case protocol::incremental_alter_configs_request_data::api_key:
      return route<protocol::incremental_alter_configs_request_data>(body, ctx, handle_incremental_alter_configs);
    case protocol::offset_commit_request_data::api_key:
      return route<protocol::offset_commit_request_data>(body, ctx, handle_offset_commit);
    case protocol::offset_fetch_request_data::api_key:
      return route<protocol::offset_fetch_request_data>(body, ctx, handle_offset_fetch);
    case protocol::list_groups_request_data::api_key:
      return route<protocol::list_groups_request_data>(body, ctx, handle_list_groups);
    case protocol::describe_groups_request_data::api_key:
      return route<protocol::describe_groups_request_data>(body, ctx, handle_describe_groups);
    case protocol::delete_groups_request_data::api_key:
      return route<protocol::delete_groups_request_data>(body, ctx, handle_delete_groups);
    case protocol::join_group_request_data::api_key:
      return route<protocol::join_group_request_data>(body, ctx, handle_join_group);
    case protocol::sync_group_request_data::api_key:
      return route<protocol::sync_group_request_data>(body, ctx, handle_sync_group);
    case protocol::heartbeat_request_data::api_key:
      return route<protocol::heartbeat_request_data>(body, ctx, handle_heartbeat);
    case protocol::leave_group_request_data::api_key:
      return route<protocol::leave_group_request_data>(body, ctx, handle_leave_group);
    case protocol::offset_delete_request_data::api_key:
      return route<protocol::offset_delete_request_data>(body, ctx, handle_offset_delete);
    case protocol::describe_cluster_request_data::api_key:
      return route<protocol::describe_cluster_request_data>(body, ctx, handle_describe_cluster);
    case protocol::alter_partition_reassignments_request_data::api_key:
      return route<protocol::alter_partition_reassignments_request_data>(body, ctx, handle_alter_partition_reassignments);
    case protocol::list_partition_reassignments_request_data::api_key:
      return route<protocol::list_partition_reassignments_request_data>(body, ctx, handle_list_partition_reassignments);
    case protocol::init_producer_id_request_data::api_key:
      return route<protocol::init_producer_id_request_data>(body, ctx, handle_init_producer_id);
    case protocol::add_partitions_to_txn_request_data::api_key:
      return route<protocol::add_partitions_to_txn_request_data>(body, ctx, handle_add_partitions_to_txn);
    case protocol::add_offsets_to_txn_request_data::api_key:
      return route<protocol::add_offsets_to_txn_request_data>(body, ctx, handle_add_offsets_to_txn);
    case protocol::end_txn_request_data::api_key:
      return route<protocol::end_txn_request_data>(body, ctx, handle_end_txn);
    case protocol::txn_offset_commit_request_data::api_key:
      return route<protocol::txn_offset_commit_request_data>(body, ctx, handle_txn_offset_commit);
    case protocol::describe_transactions_request_data::api_key:
      return route<protocol::describe_transactions_request_data>(body, ctx, handle_describe_transactions);
    case protocol::list_transactions_request_data::api_key:
      return route<protocol::list_transactions_request_data>(body, ctx, handle_list_transactions);
    case protocol::describe_producers_request_data::api_key:
      return route<protocol::describe_producers_request_data>(body, ctx, handle_describe_producers);
    case protocol::describe_client_quotas_request_data::api_key:
      return route<protocol::describe_client_quotas_request_data>(body, ctx, handle_describe_client_quotas);
    case protocol::alter_client_quotas_request_data::api_key:
      return route<protocol::alter_client_quotas_request_data>(body, ctx, handle_alter_client_quotas);
    case protocol::describe_user_scram_credentials_request_data::api_key:
      return route<protocol::describe_user_scram_credentials_request_data>(body, ctx, handle_describe_user_scram_credentials);
    case protocol::alter_user_scram_credentials_request_data::api_key:
      return route<protocol::alter_user_scram_credentials_request_data>(body, ctx, handle_alter_user_scram_credentials);
    default:
      break;
  }
  RINGLOG_ASSERT(false, "every api in handled_apis() has a route");
  return base::ok_v;
}

}  // namespace

protocol::result<void> request_handler::handle(std::span<const std::byte> frame, respond_fn respond,
                                              std::string_view client_host, const security::kafka_principal& principal,
                                              int64_t* throttle_ms) {
  auto header = protocol::decode_request_header(frame);
  if (!header.ok()) {
    const auto code = header.error().code;
    auto correlation = protocol::peek_correlation_id(frame);
    if ((code == protocol::errc::unknown_api_key || code == protocol::errc::unsupported_version) && correlation.ok()) {
      respond(api_versions_frame(0, *correlation, error_code::unsupported_version));
      return base::ok_v;
    }
    return header.error();
  }
  const auto& h = header->header;
  const auto body = frame.subspan(header->body_offset);
  const handled_api* api = find_handled_api(h.request_api_key);
  if (h.request_api_key == protocol::api_versions_request_data::api_key) {
    // A body we cannot read is still answered: clients send ApiVersions first, before they know
    // what we speak (KIP-511). A readable v3+ body must name its client as KIP-511 says.
    respond(api_versions_frame(h.request_api_version, h.correlation_id, api_versions_body_error(h.request_api_version, body)));
    return base::ok_v;
  }
  if (api == nullptr || h.request_api_version < api->min_version || h.request_api_version > api->max_version) {
    respond(api_versions_frame(0, h.correlation_id, error_code::unsupported_version));
    return base::ok_v;
  }
  // An admin write's audit lines are written with its answer (audit_answer, admin_audit.cc).
  request_context ctx{this, h.request_api_version, h.correlation_id, std::move(respond), h.client_id.value_or(""),
                      std::string(client_host), principal, h.request_api_key, std::make_shared<request_timing>(), nullptr};
  ctx.timing->received_ns = base::monotonic_ns();
  auto routed = [&] {
    const base::cpu_scope cpu(data_activity(h.request_api_key));   // issue 33: a Produce's or Fetch's decode, dispatch
    return route_api(h.request_api_key, body, ctx);
  }();
  // request_percentage counts this (client_quotas.cc); an answer sent before now timed itself.
  ctx.timing->dispatch_ns.store(std::max<int64_t>(base::monotonic_ns() - ctx.timing->received_ns, 1),
                                std::memory_order_release);
  if (throttle_ms != nullptr) *throttle_ms = ctx.timing->dispatch_throttle_ms;
  return routed;
}

protocol::uuid parse_uuid(std::string_view text) {
  protocol::uuid out;
  if (text.size() != 22) return out;
  // URL-safe base64 without padding: 22 characters carry 132 bits, the last 4 are zero.
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (char c : text) {
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '-') v = 62;
    else if (c == '_') v = 63;
    if (v < 0) return protocol::uuid{};
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n < out.value.size()) out.value[n++] = static_cast<uint8_t>((acc >> bits) & 0xff);
    }
  }
  return n == out.value.size() ? out : protocol::uuid{};
}

}  // namespace ringlog::kafka
