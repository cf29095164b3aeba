#include "ringlog/controller/quorum_wire.h"

#include <algorithm>
#include <string>

#include "ringlog/base/constants.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/raft/constants.h"

namespace ringlog::controller::quorum_wire {

namespace {

using raft::errc;

struct code_pair {
  raft::errc raft;
  int16_t kafka;
};
// Kafka's error codes (org.apache.kafka.common.protocol.Errors).
constexpr code_pair codes[] = {
    {errc::none, 0},
    {errc::offset_out_of_range, 1},
    {errc::not_leader_or_follower, 6},
    {errc::record_too_large, 18},  // RECORD_LIST_TOO_LARGE
    {errc::invalid_request, 42},
    {errc::fenced_leader_epoch, 74},
    {errc::unknown_leader_epoch, 75},
    {errc::inconsistent_voter_set, 94},
    {errc::snapshot_not_found, 98},
    {errc::position_out_of_range, 99},
    {errc::inconsistent_cluster_id, 104},
};
constexpr int16_t unknown_server_error = -1;

error invalid(std::string message) { return error{controller::errc::invalid_record, std::move(message)}; }

protocol::bytes to_wire(const raft::bytes& b) {
  protocol::bytes out(b.size());
  std::transform(b.begin(), b.end(), out.begin(), [](uint8_t v) { return std::byte{v}; });
  return out;
}
raft::bytes from_wire(std::span<const std::byte> b) {
  raft::bytes out(b.size());
  std::transform(b.begin(), b.end(), out.begin(), [](std::byte v) { return static_cast<uint8_t>(v); });
  return out;
}

template <typename T>
result<T> decode_as(std::span<const std::byte> body, int16_t version) {
  protocol::reader rd(body);
  auto m = T::decode(rd, version);
  if (!m.ok()) return invalid(m.error().message);
  return std::move(m).value();
}

template <typename T>
result<protocol::bytes> encode_as(const T& m, int16_t version) {
  protocol::writer w;
  auto ok = m.encode(w, version);
  if (!ok.ok()) return invalid(ok.error().message);
  return std::move(w).take();
}

template <typename T>
result<protocol::bytes> frame_as(const T& m, int16_t version, int32_t correlation_id) {
  protocol::writer w;
  auto ok = protocol::encode_response_frame(w, version, correlation_id, m);
  if (!ok.ok()) return invalid(ok.error().message);
  return std::move(w).take();
}

/// The single partition of a request or response if it is __cluster_metadata-0, else nullptr.
template <typename Topics, typename NameOk>
auto only_partition(const Topics& topics, NameOk name_ok) {
  using partition = typename std::decay_t<decltype(topics[0].partitions)>::value_type;
  if (topics.size() != 1 || !name_ok(topics[0]) || topics[0].partitions.size() != 1) {
    return static_cast<const partition*>(nullptr);
  }
  return &topics[0].partitions[0];
}
constexpr std::string_view not_metadata = ": expected exactly the partition __cluster_metadata-0";

raft::leader_epoch epoch_of(int32_t v) { return raft::leader_epoch{v}; }
raft::node_id node_of(int32_t v) { return raft::node_id{v}; }

// ---- Vote ----
protocol::vote_request_data to_kafka(const raft::vote_request& r) {
  protocol::vote_request_data m;
  m.cluster_id = r.cluster_id;
  protocol::vote_request_data::topic_data t;
  t.topic_name = std::string(metadata_topic);
  protocol::vote_request_data::partition_data p;
  p.partition_index = metadata_partition;
  p.candidate_epoch = r.candidate_epoch.value();
  p.candidate_id = r.candidate_id.value();
  p.last_offset_epoch = r.last_offset_epoch.value();
  p.last_offset = r.last_offset.value();
  p.pre_vote = r.pre_vote;
  p.ringlog_candidate_awaiting_first_catch_up = r.candidate_awaiting_first_catch_up;
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  return m;
}

protocol::vote_response_data to_kafka(const raft::vote_response& r) {
  protocol::vote_response_data m;
  protocol::vote_response_data::topic_data t;
  t.topic_name = std::string(metadata_topic);
  protocol::vote_response_data::partition_data p;
  p.partition_index = metadata_partition;
  p.error_code = kafka_error_code(r.error_code);
  p.leader_id = r.leader_id.value();
  p.leader_epoch = r.leader_epoch_.value();
  p.vote_granted = r.vote_granted;
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  return m;
}

// ---- BeginQuorumEpoch / EndQuorumEpoch ----
protocol::begin_quorum_epoch_request_data to_kafka(const raft::begin_quorum_epoch_request& r) {
  protocol::begin_quorum_epoch_request_data m;
  m.cluster_id = r.cluster_id;
  protocol::begin_quorum_epoch_request_data::topic_data t;
  t.topic_name = std::string(metadata_topic);
  protocol::begin_quorum_epoch_request_data::partition_data p;
  p.partition_index = metadata_partition;
  p.leader_id = r.leader_id.value();
  p.leader_epoch = r.leader_epoch_.value();
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  return m;
}

template <typename Response, typename Raft>
Response epoch_response_to_kafka(const Raft& r) {
  Response m;
  typename Response::topic_data t;
  t.topic_name = std::string(metadata_topic);
  typename Response::partition_data p;
  p.partition_index = metadata_partition;
  p.error_code = kafka_error_code(r.error_code);
  p.leader_id = r.leader_id.value();
  p.leader_epoch = r.leader_epoch_.value();
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  return m;
}

protocol::end_quorum_epoch_request_data to_kafka(const raft::end_quorum_epoch_request& r, int16_t version) {
  protocol::end_quorum_epoch_request_data m;
  m.cluster_id = r.cluster_id;
  protocol::end_quorum_epoch_request_data::topic_data t;
  t.topic_name = std::string(metadata_topic);
  protocol::end_quorum_epoch_request_data::partition_data p;
  p.partition_index = metadata_partition;
  p.leader_id = r.leader_id.value();
  p.leader_epoch = r.leader_epoch_.value();
  for (auto id : r.preferred_successors) {
    if (version == 0) {
      p.preferred_successors.push_back(id.value());
    } else {
      protocol::end_quorum_epoch_request_data::replica_info c;
      c.candidate_id = id.value();
      p.preferred_candidates.push_back(c);
    }
  }
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  return m;
}

// ---- Fetch ----
protocol::fetch_request_data to_kafka(const raft::fetch_request& r) {
  protocol::fetch_request_data m;
  m.cluster_id = r.cluster_id;
  m.replica_state.replica_id = r.replica_id.value();  // v15+ (fetch_version is 17)
  m.max_wait_ms = static_cast<int32_t>(r.max_wait_ms);
  m.min_bytes = 0;
  m.max_bytes = static_cast<int32_t>(raft::constants::fetch_bytes_max);
  protocol::fetch_request_data::fetch_topic t;
  t.topic_id = metadata_topic_id();
  protocol::fetch_request_data::fetch_partition p;
  p.partition = metadata_partition;
  p.current_leader_epoch = r.current_leader_epoch.value();
  p.fetch_offset = r.fetch_offset.value();
  p.last_fetched_epoch = r.last_fetched_epoch.value();
  p.partition_max_bytes = static_cast<int32_t>(raft::constants::fetch_bytes_max);
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  return m;
}

result<protocol::fetch_response_data> to_kafka(const raft::fetch_response& r, int16_t version, int64_t now_ms) {
  protocol::fetch_response_data m;
  protocol::fetch_response_data::fetchable_topic_response t;
  if (version >= 13) {
    t.topic_id = metadata_topic_id();
  } else {
    t.topic = std::string(metadata_topic);
  }
  protocol::fetch_response_data::partition_data p;
  p.partition_index = metadata_partition;
  p.error_code = kafka_error_code(r.error_code);
  p.high_watermark = r.high_watermark.value();
  p.log_start_offset = r.log_start_offset.value();
  if (r.has_diverging_epoch) {
    p.diverging_epoch.epoch = r.diverging_epoch.epoch.value();
    p.diverging_epoch.end_offset = r.diverging_epoch.end_offset.value();
  }
  p.current_leader.leader_id = r.current_leader.leader_id.value();
  p.current_leader.leader_epoch = r.current_leader.leader_epoch_.value();
  if (r.has_snapshot_id) {
    p.snapshot_id.end_offset = r.snapshot_id.end_offset.value();
    p.snapshot_id.epoch = r.snapshot_id.epoch.value();
  }
  auto records = encode_entries(r.records, now_ms);
  if (!records.ok()) return records.error();
  p.records = std::move(records).value();
  t.partitions.push_back(std::move(p));
  m.responses.push_back(std::move(t));
  return m;
}

// ---- FetchSnapshot ----
protocol::fetch_snapshot_request_data to_kafka(const raft::fetch_snapshot_request& r) {
  protocol::fetch_snapshot_request_data m;
  m.cluster_id = r.cluster_id;
  m.replica_id = r.replica_id.value();
  m.max_bytes = static_cast<int32_t>(std::min<uint64_t>(r.max_bytes, INT32_MAX));
  protocol::fetch_snapshot_request_data::topic_snapshot t;
  t.name = std::string(metadata_topic);
  protocol::fetch_snapshot_request_data::partition_snapshot p;
  p.partition = metadata_partition;
  p.current_leader_epoch = r.current_leader_epoch.value();
  p.snapshot_id.end_offset = r.snapshot_id.end_offset.value();
  p.snapshot_id.epoch = r.snapshot_id.epoch.value();
  p.position = static_cast<int64_t>(r.position);
  t.partitions.push_back(p);
  m.topics.push_back(std::move(t));
  return m;
}

protocol::fetch_snapshot_response_data to_kafka(const raft::fetch_snapshot_response& r) {
  protocol::fetch_snapshot_response_data m;
  protocol::fetch_snapshot_response_data::topic_snapshot t;
  t.name = std::string(metadata_topic);
  protocol::fetch_snapshot_response_data::partition_snapshot p;
  p.index = metadata_partition;
  p.error_code = kafka_error_code(r.error_code);
  p.snapshot_id.end_offset = r.snapshot_id.end_offset.value();
  p.snapshot_id.epoch = r.snapshot_id.epoch.value();
  p.current_leader.leader_id = r.current_leader.leader_id.value();
  p.current_leader.leader_epoch = r.current_leader.leader_epoch_.value();
  p.size = static_cast<int64_t>(r.size);
  p.position = static_cast<int64_t>(r.position);
  p.unaligned_records = to_wire(r.unaligned_records);
  t.partitions.push_back(std::move(p));
  m.topics.push_back(std::move(t));
  return m;
}

bool named_metadata(const auto& topic) { return topic.topic_name == metadata_topic; }

result<raft::message_body> decode_vote_request(std::span<const std::byte> body, int16_t v) {
  auto m = decode_as<protocol::vote_request_data>(body, v);
  if (!m.ok()) return m.error();
  const auto* p = only_partition(m->topics, [](const auto& t) { return named_metadata(t); });
  if (p == nullptr) return invalid(std::string("VoteRequest") + std::string(not_metadata));
  raft::vote_request r;
  r.cluster_id = m->cluster_id.value_or("");
  r.candidate_epoch = epoch_of(p->candidate_epoch);
  r.candidate_id = node_of(p->candidate_id);
  r.last_offset_epoch = epoch_of(p->last_offset_epoch);
  r.last_offset = raft::offset{p->last_offset};
  r.pre_vote = v >= 2 && p->pre_vote;
  r.candidate_awaiting_first_catch_up = p->ringlog_candidate_awaiting_first_catch_up;
  return raft::message_body{r};
}

result<raft::message_body> decode_vote_response(std::span<const std::byte> body, int16_t v) {
  auto m = decode_as<protocol::vote_response_data>(body, v);
  if (!m.ok()) return m.error();
  raft::vote_response r;
  if (m->error_code != 0 && m->topics.empty()) {
    r.error_code = raft_error(m->error_code);
    return raft::message_body{r};
  }
  const auto* p = only_partition(m->topics, [](const auto& t) { return named_metadata(t); });
  if (p == nullptr) return invalid(std::string("VoteResponse") + std::string(not_metadata));
  r.error_code = raft_error(m->error_code != 0 ? m->error_code : p->error_code);
  r.leader_id = node_of(p->leader_id);
  r.leader_epoch_ = epoch_of(p->leader_epoch);
  r.vote_granted = p->vote_granted;
  return raft::message_body{r};
}

result<raft::message_body> decode_begin_request(std::span<const std::byte> body, int16_t v) {
  auto m = decode_as<protocol::begin_quorum_epoch_request_data>(body, v);
  if (!m.ok()) return m.error();
  const auto* p = only_partition(m->topics, [](const auto& t) { return named_metadata(t); });
  if (p == nullptr) return invalid(std::string("BeginQuorumEpochRequest") + std::string(not_metadata));
  raft::begin_quorum_epoch_request r;
  r.cluster_id = m->cluster_id.value_or("");
  r.leader_id = node_of(p->leader_id);
  r.leader_epoch_ = epoch_of(p->leader_epoch);
  return raft::message_body{r};
}

template <typename Kafka, typename Raft>
result<raft::message_body> decode_epoch_response(std::span<const std::byte> body, int16_t v, std::string_view what) {
  auto m = decode_as<Kafka>(body, v);
  if (!m.ok()) return m.error();
  Raft r;
  if (m->error_code != 0 && m->topics.empty()) {
    r.error_code = raft_error(m->error_code);
    return raft::message_body{r};
  }
  const auto* p = only_partition(m->topics, [](const auto& t) { return named_metadata(t); });
  if (p == nullptr) return invalid(std::string(what) + std::string(not_metadata));
  r.error_code = raft_error(m->error_code != 0 ? m->error_code : p->error_code);
  r.leader_id = node_of(p->leader_id);
  r.leader_epoch_ = epoch_of(p->leader_epoch);
  return raft::message_body{r};
}

result<raft::message_body> decode_end_request(std::span<const std::byte> body, int16_t v) {
  auto m = decode_as<protocol::end_quorum_epoch_request_data>(body, v);
  if (!m.ok()) return m.error();
  const auto* p = only_partition(m->topics, [](const auto& t) { return named_metadata(t); });
  if (p == nullptr) return invalid(std::string("EndQuorumEpochRequest") + std::string(not_metadata));
  raft::end_quorum_epoch_request r;
  r.cluster_id = m->cluster_id.value_or("");
  r.leader_id = node_of(p->leader_id);
  r.leader_epoch_ = epoch_of(p->leader_epoch);
  for (auto id : p->preferred_successors) r.preferred_successors.push_back(node_of(id));
  for (const auto& c : p->preferred_candidates) r.preferred_successors.push_back(node_of(c.candidate_id));
  return raft::message_body{r};
}

result<raft::message_body> decode_fetch_request(std::span<const std::byte> body, int16_t v) {
  auto m = decode_as<protocol::fetch_request_data>(body, v);
  if (!m.ok()) return m.error();
  const auto* p = only_partition(m->topics, [v](const auto& t) {
    return v >= 13 ? t.topic_id == metadata_topic_id() : t.topic == metadata_topic;
  });
  if (p == nullptr) return invalid(std::string("FetchRequest") + std::string(not_metadata));
  raft::fetch_request r;
  r.cluster_id = m->cluster_id.value_or("");
  r.replica_id = node_of(v >= 15 ? m->replica_state.replica_id : m->replica_id);
  r.current_leader_epoch = epoch_of(p->current_leader_epoch);
  r.fetch_offset = raft::offset{p->fetch_offset};
  r.last_fetched_epoch = epoch_of(p->last_fetched_epoch);
  r.max_wait_ms = m->max_wait_ms;
  return raft::message_body{r};
}

result<raft::message_body> decode_fetch_response(std::span<const std::byte> body, int16_t v) {
  auto m = decode_as<protocol::fetch_response_data>(body, v);
  if (!m.ok()) return m.error();
  raft::fetch_response r;
  if (m->error_code != 0 && m->responses.empty()) {
    r.error_code = raft_error(m->error_code);
    return raft::message_body{r};
  }
  if (m->responses.size() != 1 || m->responses[0].partitions.size() != 1) {
    return invalid("FetchResponse: expected exactly the partition __cluster_metadata-0");
  }
  const auto& p = m->responses[0].partitions[0];
  r.error_code = raft_error(m->error_code != 0 ? m->error_code : p.error_code);
  r.high_watermark = raft::offset{p.high_watermark};
  r.log_start_offset = raft::offset{p.log_start_offset};
  if (p.diverging_epoch.epoch >= 0 && p.diverging_epoch.end_offset >= 0) {
    r.has_diverging_epoch = true;
    r.diverging_epoch = {raft::offset{p.diverging_epoch.end_offset}, epoch_of(p.diverging_epoch.epoch)};
  }
  r.current_leader = {node_of(p.current_leader.leader_id), epoch_of(p.current_leader.leader_epoch)};
  if (p.snapshot_id.end_offset >= 0 && p.snapshot_id.epoch >= 0) {
    r.has_snapshot_id = true;
    r.snapshot_id = {raft::offset{p.snapshot_id.end_offset}, epoch_of(p.snapshot_id.epoch)};
  }
  if (p.records && !p.records->empty()) {
    auto entries = decode_entries(*p.records);
    if (!entries.ok()) return invalid("FetchResponse: records: " + entries.error().message);
    for (auto& e : *entries) r.records.push_back(std::move(e.entry));
  }
  return raft::message_body{std::move(r)};
}

result<raft::message_body> decode_fetch_snapshot_request(std::span<const std::byte> body, int16_t v) {
  auto m = decode_as<protocol::fetch_snapshot_request_data>(body, v);
  if (!m.ok()) return m.error();
  const auto* p = only_partition(m->topics, [](const auto& t) { return t.name == metadata_topic; });
  if (p == nullptr) return invalid(std::string("FetchSnapshotRequest") + std::string(not_metadata));
  raft::fetch_snapshot_request r;
  r.cluster_id = m->cluster_id.value_or("");
  r.replica_id = node_of(m->replica_id);
  r.current_leader_epoch = epoch_of(p->current_leader_epoch);
  r.snapshot_id = {raft::offset{p->snapshot_id.end_offset}, epoch_of(p->snapshot_id.epoch)};
  if (p->position < 0 || m->max_bytes < 0) return invalid("FetchSnapshotRequest: negative position or max_bytes");
  r.position = static_cast<uint64_t>(p->position);
  r.max_bytes = static_cast<uint64_t>(m->max_bytes);
  return raft::message_body{r};
}

result<raft::message_body> decode_fetch_snapshot_response(std::span<const std::byte> body, int16_t v) {
  auto m = decode_as<protocol::fetch_snapshot_response_data>(body, v);
  if (!m.ok()) return m.error();
  raft::fetch_snapshot_response r;
  if (m->error_code != 0 && m->topics.empty()) {
    r.error_code = raft_error(m->error_code);
    return raft::message_body{r};
  }
  const auto* p = only_partition(m->topics, [](const auto& t) { return t.name == metadata_topic; });
  if (p == nullptr) return invalid(std::string("FetchSnapshotResponse") + std::string(not_metadata));
  r.error_code = raft_error(m->error_code != 0 ? m->error_code : p->error_code);
  r.current_leader = {node_of(p->current_leader.leader_id), epoch_of(p->current_leader.leader_epoch)};
  r.snapshot_id = {raft::offset{p->snapshot_id.end_offset}, epoch_of(p->snapshot_id.epoch)};
  if (p->size < 0 || p->position < 0) return invalid("FetchSnapshotResponse: negative size or position");
  r.size = static_cast<uint64_t>(p->size);
  r.position = static_cast<uint64_t>(p->position);
  r.unaligned_records = from_wire(p->unaligned_records);
  return raft::message_body{std::move(r)};
}

}  // namespace

protocol::uuid metadata_topic_id() {
  protocol::uuid id;
  id.value[15] = 1;  // most significant long 0, least significant long 1
  return id;
}

int16_t kafka_error_code(raft::errc e) {
  for (const auto& c : codes) {
    if (c.raft == e) return c.kafka;
  }
  return unknown_server_error;
}

raft::errc raft_error(int16_t code) {
  for (const auto& c : codes) {
    if (c.kafka == code) return c.raft;
  }
  return errc::invalid_request;
}

int16_t api_key_of(const raft::message_body& body) {
  return std::visit(
      [](const auto& m) -> int16_t {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, raft::vote_request> || std::is_same_v<T, raft::vote_response>) {
          return protocol::vote_request_data::api_key;
        } else if constexpr (std::is_same_v<T, raft::begin_quorum_epoch_request> ||
                             std::is_same_v<T, raft::begin_quorum_epoch_response>) {
          return protocol::begin_quorum_epoch_request_data::api_key;
        } else if constexpr (std::is_same_v<T, raft::end_quorum_epoch_request> ||
                             std::is_same_v<T, raft::end_quorum_epoch_response>) {
          return protocol::end_quorum_epoch_request_data::api_key;
        } else if constexpr (std::is_same_v<T, raft::fetch_request> || std::is_same_v<T, raft::fetch_response>) {
          return protocol::fetch_request_data::api_key;
        } else {
          return protocol::fetch_snapshot_request_data::api_key;
        }
      },
      body);
}

bool is_request(const raft::message_body& body) {
  return std::holds_alternative<raft::vote_request>(body) ||
         std::holds_alternative<raft::begin_quorum_epoch_request>(body) ||
         std::holds_alternative<raft::end_quorum_epoch_request>(body) ||
         std::holds_alternative<raft::fetch_request>(body) || std::holds_alternative<raft::fetch_snapshot_request>(body);
}

raft::node_id sender_of(const raft::message_body& request) {
  if (const auto* v = std::get_if<raft::vote_request>(&request)) return v->candidate_id;
  if (const auto* b = std::get_if<raft::begin_quorum_epoch_request>(&request)) return b->leader_id;
  if (const auto* e = std::get_if<raft::end_quorum_epoch_request>(&request)) return e->leader_id;
  if (const auto* f = std::get_if<raft::fetch_request>(&request)) return f->replica_id;
  if (const auto* s = std::get_if<raft::fetch_snapshot_request>(&request)) return s->replica_id;
  return raft::no_node;
}

result<encoded_request> encode_request(const raft::message_body& body) {
  encoded_request out;
  out.api_key = api_key_of(body);
  result<protocol::bytes> bytes = invalid(std::string("not a request: ") + std::string(raft::message_name(body)));
  if (const auto* v = std::get_if<raft::vote_request>(&body)) {
    out.api_version = vote_version;
    bytes = encode_as(to_kafka(*v), vote_version);
  } else if (const auto* b = std::get_if<raft::begin_quorum_epoch_request>(&body)) {
    out.api_version = begin_quorum_epoch_version;
    bytes = encode_as(to_kafka(*b), begin_quorum_epoch_version);
  } else if (const auto* e = std::get_if<raft::end_quorum_epoch_request>(&body)) {
    out.api_version = end_quorum_epoch_version;
    bytes = encode_as(to_kafka(*e, end_quorum_epoch_version), end_quorum_epoch_version);
  } else if (const auto* f = std::get_if<raft::fetch_request>(&body)) {
    out.api_version = fetch_version;
    bytes = encode_as(to_kafka(*f), fetch_version);
  } else if (const auto* s = std::get_if<raft::fetch_snapshot_request>(&body)) {
    out.api_version = fetch_snapshot_version;
    bytes = encode_as(to_kafka(*s), fetch_snapshot_version);
  }
  if (!bytes.ok()) return bytes.error();
  out.body = std::move(bytes).value();
  return out;
}

result<raft::message_body> decode_request(int16_t api_key, int16_t api_version, std::span<const std::byte> body) {
  switch (api_key) {
    case protocol::vote_request_data::api_key: return decode_vote_request(body, api_version);
    case protocol::begin_quorum_epoch_request_data::api_key: return decode_begin_request(body, api_version);
    case protocol::end_quorum_epoch_request_data::api_key: return decode_end_request(body, api_version);
    case protocol::fetch_request_data::api_key: return decode_fetch_request(body, api_version);
    case protocol::fetch_snapshot_request_data::api_key: return decode_fetch_snapshot_request(body, api_version);
    default: break;
  }
  return error{controller::errc::unsupported_version, "api key " + std::to_string(api_key) + " is not a quorum api"};
}

result<protocol::bytes> encode_response_frame(const raft::message_body& body, int16_t v, int32_t correlation_id,
                                              int64_t now_ms) {
  if (const auto* vr = std::get_if<raft::vote_response>(&body)) return frame_as(to_kafka(*vr), v, correlation_id);
  if (const auto* b = std::get_if<raft::begin_quorum_epoch_response>(&body)) {
    return frame_as(epoch_response_to_kafka<protocol::begin_quorum_epoch_response_data>(*b), v, correlation_id);
  }
  if (const auto* e = std::get_if<raft::end_quorum_epoch_response>(&body)) {
    return frame_as(epoch_response_to_kafka<protocol::end_quorum_epoch_response_data>(*e), v, correlation_id);
  }
  if (const auto* f = std::get_if<raft::fetch_response>(&body)) {
    auto m = to_kafka(*f, v, now_ms);
    if (!m.ok()) return m.error();
    return frame_as(*m, v, correlation_id);
  }
  if (const auto* s = std::get_if<raft::fetch_snapshot_response>(&body)) {
    return frame_as(to_kafka(*s), v, correlation_id);
  }
  return invalid(std::string("not a response: ") + std::string(raft::message_name(body)));
}

result<raft::message_body> decode_response(int16_t api_key, int16_t api_version, std::span<const std::byte> body) {
  switch (api_key) {
    case protocol::vote_request_data::api_key: return decode_vote_response(body, api_version);
    case protocol::begin_quorum_epoch_request_data::api_key:
      return decode_epoch_response<protocol::begin_quorum_epoch_response_data, raft::begin_quorum_epoch_response>(
          body, api_version, "BeginQuorumEpochResponse");
    case protocol::end_quorum_epoch_request_data::api_key:
      return decode_epoch_response<protocol::end_quorum_epoch_response_data, raft::end_quorum_epoch_response>(
          body, api_version, "EndQuorumEpochResponse");
    case protocol::fetch_request_data::api_key: return decode_fetch_response(body, api_version);
    case protocol::fetch_snapshot_request_data::api_key: return decode_fetch_snapshot_response(body, api_version);
    default: break;
  }
  return error{controller::errc::unsupported_version, "api key " + std::to_string(api_key) + " is not a quorum api"};
}

// ---- entries <-> record batches ----

result<protocol::leader_change_message> to_leader_change_message(const raft::bytes& payload) {
  if (payload.size() < 4 || payload.size() % 4 != 0) {
    return invalid("leader change payload of " + std::to_string(payload.size()) + " bytes is not 4-byte ids");
  }
  auto id_at = [&payload](size_t i) {
    return static_cast<int32_t>((uint32_t{payload[i]} << 24) | (uint32_t{payload[i + 1]} << 16) |
                                (uint32_t{payload[i + 2]} << 8) | uint32_t{payload[i + 3]});
  };
  protocol::leader_change_message m;
  m.version = 0;
  m.leader_id = id_at(0);
  for (size_t i = 4; i < payload.size(); i += 4) {
    protocol::leader_change_message::voter v;
    v.voter_id = id_at(i);
    m.voters.push_back(v);
  }
  return m;
}

raft::bytes from_leader_change_message(const protocol::leader_change_message& message) {
  raft::bytes out;
  auto put = [&out](int32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>((static_cast<uint32_t>(v) >> shift) & 0xff));
  };
  put(message.leader_id);
  for (const auto& v : message.voters) put(v.voter_id);
  return out;
}

result<model::bytes> encode_entries(std::span<const raft::entry> entries, int64_t now_ms) {
  model::bytes out;
  size_t i = 0;
  while (i < entries.size()) {
    const raft::entry& first = entries[i];
    codec::batch_options options;
    options.base_offset = first.offset_;
    options.partition_leader_epoch = first.epoch;
    std::vector<model::record> records;
    if (first.type == raft::entry_type::leader_change) {
      auto message = to_leader_change_message(first.payload);
      if (!message.ok()) return message.error();
      auto value = encode_as(*message, 0);
      if (!value.ok()) return value.error();
      model::record r;
      r.timestamp = model::timestamp_ms{now_ms};
      r.key = model::bytes{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{leader_change_control_type}};
      r.value = std::move(value).value();
      records.push_back(std::move(r));
      options.is_control = true;
      ++i;
    } else {
      // A run of data entries of one epoch becomes one batch.
      while (i < entries.size() && entries[i].type == raft::entry_type::data && entries[i].epoch == first.epoch) {
        RINGLOG_ASSERT_OP(entries[i].offset_.value(), ==, first.offset_.value() + static_cast<int64_t>(records.size()));
        model::record r;
        r.timestamp = model::timestamp_ms{now_ms};
        r.value = to_wire(entries[i].payload);
        records.push_back(std::move(r));
        ++i;
      }
    }
    auto batch = codec::encode_batch(options, records);
    if (!batch.ok()) return invalid("entries at offset " + std::to_string(first.offset_.value()) + ": " + batch.error().message);
    out.insert(out.end(), batch->begin(), batch->end());
  }
  return out;
}

result<std::vector<decoded_entry>> decode_entries(std::span<const std::byte> batches) {
  std::vector<decoded_entry> out;
  size_t position = 0;
  while (position < batches.size()) {
    auto header = codec::decode_header(batches.subspan(position));
    if (!header.ok()) return invalid("batch at byte " + std::to_string(position) + ": " + header.error().message);
    const size_t size = header->size_bytes();
    if (size > batches.size() - position) {
      return invalid("batch at byte " + std::to_string(position) + " is cut (" + std::to_string(size) + " bytes)");
    }
    auto records = codec::decode_records(batches.subspan(position, size));
    if (!records.ok()) {
      return invalid("batch at offset " + std::to_string(header->base_offset.value()) + ": " + records.error().message);
    }
    for (auto& r : *records) {
      decoded_entry d;
      d.entry.offset_ = r.record_offset;
      d.entry.epoch = header->partition_leader_epoch;
      if (header->is_control()) {
        const bool leader_change = r.key && r.key->size() == 4 && (*r.key)[0] == std::byte{0} &&
                                   (*r.key)[1] == std::byte{0} && (*r.key)[2] == std::byte{0} &&
                                   (*r.key)[3] == std::byte{leader_change_control_type};
        if (!leader_change || !r.value) {
          return invalid("control record at offset " + std::to_string(r.record_offset.value()) +
                         " is not a LEADER_CHANGE record");
        }
        auto message = decode_as<protocol::leader_change_message>(*r.value, 0);
        if (!message.ok()) {
          return invalid("LeaderChangeMessage at offset " + std::to_string(r.record_offset.value()) + ": " +
                         message.error().message);
        }
        d.entry.type = raft::entry_type::leader_change;
        d.entry.payload = from_leader_change_message(*message);
      } else {
        d.entry.type = raft::entry_type::data;
        if (r.value) d.entry.payload = from_wire(*r.value);
        d.legacy_key = std::move(r.key);
      }
      out.push_back(std::move(d));
    }
    position += size;
  }
  return out;
}

}  // namespace ringlog::controller::quorum_wire
