// quorum_wire: every raft message survives raft struct -> Kafka message -> bytes -> back, with
// Kafka's field placement checked for the parts a Kafka peer reads; entries survive the trip
// through record batches (data runs, leader-change control batches, legacy keyed records).

#include <doctest/doctest.h>

#include "ringlog/codec/record_batch.h"
#include "ringlog/controller/quorum_wire.h"
#include "ringlog/protocol/frame.h"

namespace ringlog::controller {
namespace {

using raft::leader_epoch;
using raft::node_id;
using raft::offset;

raft::message_body request_round_trip(const raft::message_body& body) {
  auto encoded = quorum_wire::encode_request(body);
  REQUIRE(encoded.ok());
  CHECK(encoded->api_key == quorum_wire::api_key_of(body));
  auto decoded = quorum_wire::decode_request(encoded->api_key, encoded->api_version, encoded->body);
  REQUIRE_MESSAGE(decoded.ok(), decoded.error().message);
  return std::move(decoded).value();
}

/// Encodes a response as a whole frame, then reads it back as a client does: size, response
/// header (v0/v1 chosen by the api), body.
raft::message_body response_round_trip(const raft::message_body& body, int16_t version) {
  auto frame = quorum_wire::encode_response_frame(body, version, 77, 1000);
  REQUIRE_MESSAGE(frame.ok(), frame.error().message);
  protocol::reader rd(std::span<const std::byte>(*frame).subspan(protocol::frame_size_bytes));
  const int16_t key = quorum_wire::api_key_of(body);
  auto header = protocol::decode_response_header(rd, key, version);
  REQUIRE(header.ok());
  CHECK(header->correlation_id == 77);
  auto rest = std::span<const std::byte>(*frame).subspan(protocol::frame_size_bytes + rd.position());
  auto decoded = quorum_wire::decode_response(key, version, rest);
  REQUIRE_MESSAGE(decoded.ok(), decoded.error().message);
  return std::move(decoded).value();
}

raft::entry data(int64_t o, int32_t epoch, std::string_view text) {
  raft::entry e;
  e.offset_ = offset{o};
  e.epoch = leader_epoch{epoch};
  e.payload.assign(text.begin(), text.end());
  return e;
}

raft::entry leader_change(int64_t o, int32_t epoch, int32_t leader, std::vector<int32_t> voters) {
  raft::entry e;
  e.offset_ = offset{o};
  e.epoch = leader_epoch{epoch};
  e.type = raft::entry_type::leader_change;
  protocol::leader_change_message m;
  m.leader_id = leader;
  for (auto v : voters) {
    protocol::leader_change_message::voter voter;
    voter.voter_id = v;
    m.voters.push_back(voter);
  }
  e.payload = quorum_wire::from_leader_change_message(m);
  return e;
}

}  // namespace

TEST_CASE("Vote request and response round-trip, pre-vote included (v2)") {
  raft::vote_request r{"cluster-a", leader_epoch{5}, node_id{2}, leader_epoch{4}, offset{17}, true};
  auto back = std::get<raft::vote_request>(request_round_trip(r));
  CHECK(back.cluster_id == "cluster-a");
  CHECK(back.candidate_epoch == leader_epoch{5});
  CHECK(back.candidate_id == node_id{2});
  CHECK(back.last_offset_epoch == leader_epoch{4});
  CHECK(back.last_offset == offset{17});
  CHECK(back.pre_vote);
  CHECK(quorum_wire::sender_of(r) == node_id{2});

  raft::vote_response v{raft::errc::fenced_leader_epoch, node_id{3}, leader_epoch{6}, false};
  auto vb = std::get<raft::vote_response>(response_round_trip(v, quorum_wire::vote_version));
  CHECK(vb.error_code == raft::errc::fenced_leader_epoch);
  CHECK(vb.leader_id == node_id{3});
  CHECK(vb.leader_epoch_ == leader_epoch{6});
  CHECK(!vb.vote_granted);
}

TEST_CASE("Vote request: ringlog's tag 10000 carries whether the candidate awaits its first catch-up") {
  raft::vote_request r{"cluster-a", leader_epoch{5}, node_id{2}, leader_epoch{4}, offset{17}, false};
  r.candidate_awaiting_first_catch_up = true;
  CHECK(std::get<raft::vote_request>(request_round_trip(r)).candidate_awaiting_first_catch_up);
  r.candidate_awaiting_first_catch_up = false;
  CHECK_FALSE(std::get<raft::vote_request>(request_round_trip(r)).candidate_awaiting_first_catch_up);

  // On the wire: a tagged field of every version (all are flexible), written only when true:
  // tag 10000 (varint, 2 bytes), size 1, the bool. A request without it reads as "past".
  for (int16_t v = 0; v <= 2; ++v) {
    protocol::vote_request_data m;
    m.cluster_id = "c";
    protocol::vote_request_data::topic_data t;
    t.topic_name = "__cluster_metadata";
    t.partitions.emplace_back();
    m.topics.push_back(t);
    protocol::writer without;
    REQUIRE(m.encode(without, v).ok());
    m.topics[0].partitions[0].ringlog_candidate_awaiting_first_catch_up = true;
    protocol::writer with;
    REQUIRE(m.encode(with, v).ok());
    CHECK(with.buffer().size() == without.buffer().size() + 4);
    auto decoded = quorum_wire::decode_request(52, v, with.buffer());
    REQUIRE(decoded.ok());
    CHECK(std::get<raft::vote_request>(*decoded).candidate_awaiting_first_catch_up);
    decoded = quorum_wire::decode_request(52, v, without.buffer());
    REQUIRE(decoded.ok());
    CHECK_FALSE(std::get<raft::vote_request>(*decoded).candidate_awaiting_first_catch_up);
  }
}

TEST_CASE("a v1 Vote request (no pre_vote field) decodes as a real vote") {
  protocol::vote_request_data m;
  m.cluster_id = "c";
  protocol::vote_request_data::topic_data t;
  t.topic_name = "__cluster_metadata";
  protocol::vote_request_data::partition_data p;
  p.candidate_epoch = 3;
  p.candidate_id = 1;
  t.partitions.push_back(p);
  m.topics.push_back(t);
  protocol::writer w;
  REQUIRE(m.encode(w, 1).ok());
  auto decoded = quorum_wire::decode_request(52, 1, w.buffer());
  REQUIRE(decoded.ok());
  CHECK(!std::get<raft::vote_request>(*decoded).pre_vote);

  // Another topic is refused, naming the rule.
  m.topics[0].topic_name = "orders";
  protocol::writer w2;
  REQUIRE(m.encode(w2, 1).ok());
  auto refused = quorum_wire::decode_request(52, 1, w2.buffer());
  REQUIRE(!refused.ok());
  CHECK(refused.error().message == "VoteRequest: expected exactly the partition __cluster_metadata-0");
}

TEST_CASE("BeginQuorumEpoch and EndQuorumEpoch round-trip") {
  raft::begin_quorum_epoch_request b{"c", node_id{1}, leader_epoch{9}};
  auto bb = std::get<raft::begin_quorum_epoch_request>(request_round_trip(b));
  CHECK(bb.leader_id == node_id{1});
  CHECK(bb.leader_epoch_ == leader_epoch{9});
  raft::begin_quorum_epoch_response br{raft::errc::none, node_id{1}, leader_epoch{9}};
  auto brb = std::get<raft::begin_quorum_epoch_response>(
      response_round_trip(br, quorum_wire::begin_quorum_epoch_version));
  CHECK(brb.error_code == raft::errc::none);
  CHECK(brb.leader_epoch_ == leader_epoch{9});

  raft::end_quorum_epoch_request e{"c", node_id{1}, leader_epoch{9}, {node_id{3}, node_id{2}}};
  auto eb = std::get<raft::end_quorum_epoch_request>(request_round_trip(e));
  CHECK(eb.preferred_successors == std::vector<node_id>{node_id{3}, node_id{2}});
  raft::end_quorum_epoch_response er{raft::errc::inconsistent_cluster_id, node_id{-1}, leader_epoch{0}};
  auto erb = std::get<raft::end_quorum_epoch_response>(response_round_trip(er, quorum_wire::end_quorum_epoch_version));
  CHECK(erb.error_code == raft::errc::inconsistent_cluster_id);
}

TEST_CASE("Fetch request and response round-trip with records, diverging epoch and snapshot id") {
  raft::fetch_request f{"c", node_id{2}, leader_epoch{4}, offset{10}, leader_epoch{3}, 200};
  auto encoded = quorum_wire::encode_request(f);
  REQUIRE(encoded.ok());
  // Kafka's placement at v17: the topic by METADATA_TOPIC_ID, the replica in ReplicaState.
  protocol::reader rd(encoded->body);
  auto kafka = protocol::fetch_request_data::decode(rd, quorum_wire::fetch_version);
  REQUIRE(kafka.ok());
  CHECK(kafka->topics.at(0).topic_id == quorum_wire::metadata_topic_id());
  CHECK(kafka->replica_state.replica_id == 2);
  CHECK(kafka->topics.at(0).partitions.at(0).last_fetched_epoch == 3);
  auto fb = std::get<raft::fetch_request>(request_round_trip(f));
  CHECK(fb.replica_id == node_id{2});
  CHECK(fb.current_leader_epoch == leader_epoch{4});
  CHECK(fb.fetch_offset == offset{10});
  CHECK(fb.last_fetched_epoch == leader_epoch{3});
  CHECK(fb.max_wait_ms == 200);

  raft::fetch_response r;
  r.high_watermark = offset{11};
  r.log_start_offset = offset{2};
  r.current_leader = {node_id{1}, leader_epoch{4}};
  r.records = {data(10, 3, "a"), data(11, 3, "bb"), leader_change(12, 4, 1, {1, 2, 3}), data(13, 4, "")};
  auto rb = std::get<raft::fetch_response>(response_round_trip(r, quorum_wire::fetch_version));
  CHECK(rb.error_code == raft::errc::none);
  CHECK(rb.high_watermark == offset{11});
  CHECK(rb.log_start_offset == offset{2});
  CHECK(rb.current_leader.leader_id == node_id{1});
  CHECK(!rb.has_diverging_epoch);
  CHECK(!rb.has_snapshot_id);
  CHECK(rb.records == r.records);

  raft::fetch_response d;
  d.has_diverging_epoch = true;
  d.diverging_epoch = {offset{7}, leader_epoch{2}};
  d.current_leader = {node_id{1}, leader_epoch{4}};
  auto db = std::get<raft::fetch_response>(response_round_trip(d, quorum_wire::fetch_version));
  CHECK(db.has_diverging_epoch);
  CHECK(db.diverging_epoch == d.diverging_epoch);

  raft::fetch_response s;
  s.error_code = raft::errc::none;
  s.has_snapshot_id = true;
  s.snapshot_id = {offset{100}, leader_epoch{3}};
  auto sb = std::get<raft::fetch_response>(response_round_trip(s, quorum_wire::fetch_version));
  CHECK(sb.has_snapshot_id);
  CHECK(sb.snapshot_id == s.snapshot_id);
  CHECK(sb.records.empty());
}

TEST_CASE("FetchSnapshot request and response round-trip") {
  raft::fetch_snapshot_request q{"c", node_id{3}, leader_epoch{4}, {offset{100}, leader_epoch{3}}, 4096, 65536};
  auto qb = std::get<raft::fetch_snapshot_request>(request_round_trip(q));
  CHECK(qb.replica_id == node_id{3});
  CHECK(qb.snapshot_id == q.snapshot_id);
  CHECK(qb.position == 4096);
  CHECK(qb.max_bytes == 65536);

  raft::fetch_snapshot_response a;
  a.current_leader = {node_id{1}, leader_epoch{4}};
  a.snapshot_id = {offset{100}, leader_epoch{3}};
  a.size = 10;
  a.position = 4;
  a.unaligned_records = {1, 2, 3};
  auto ab = std::get<raft::fetch_snapshot_response>(response_round_trip(a, quorum_wire::fetch_snapshot_version));
  CHECK(ab.snapshot_id == a.snapshot_id);
  CHECK(ab.size == 10);
  CHECK(ab.position == 4);
  CHECK(ab.unaligned_records == a.unaligned_records);
  CHECK(ab.current_leader.leader_epoch_ == leader_epoch{4});
}

TEST_CASE("error codes map to Kafka's and back") {
  CHECK(quorum_wire::kafka_error_code(raft::errc::not_leader_or_follower) == 6);
  CHECK(quorum_wire::kafka_error_code(raft::errc::fenced_leader_epoch) == 74);
  CHECK(quorum_wire::kafka_error_code(raft::errc::inconsistent_cluster_id) == 104);
  for (auto e : {raft::errc::none, raft::errc::offset_out_of_range, raft::errc::not_leader_or_follower,
                 raft::errc::invalid_request, raft::errc::fenced_leader_epoch, raft::errc::unknown_leader_epoch,
                 raft::errc::inconsistent_voter_set, raft::errc::snapshot_not_found, raft::errc::position_out_of_range,
                 raft::errc::inconsistent_cluster_id}) {
    CHECK(quorum_wire::raft_error(quorum_wire::kafka_error_code(e)) == e);
  }
}

TEST_CASE("entries as record batches: a data run shares a batch, a leader change is a control batch") {
  std::vector<raft::entry> entries = {leader_change(0, 1, 1, {1}), data(1, 1, "x"), data(2, 1, "y"), data(3, 2, "z")};
  auto batches = quorum_wire::encode_entries(entries, 5);
  REQUIRE(batches.ok());
  // Batch 1: control, epoch 1, LEADER_CHANGE key; batch 2: offsets 1-2 epoch 1; batch 3: epoch 2.
  std::span<const std::byte> rest(*batches);
  std::vector<codec::batch_header> headers;
  while (!rest.empty()) {
    auto h = codec::validate_batch(rest.subspan(0, codec::decode_header(rest)->size_bytes()));
    REQUIRE(h.ok());
    headers.push_back(*h);
    rest = rest.subspan(h->size_bytes());
  }
  REQUIRE(headers.size() == 3);
  CHECK(headers[0].is_control());
  CHECK(headers[0].partition_leader_epoch == leader_epoch{1});
  CHECK(headers[1].base_offset == offset{1});
  CHECK(headers[1].last_offset_delta == 1);
  CHECK(headers[2].partition_leader_epoch == leader_epoch{2});

  auto back = quorum_wire::decode_entries(*batches);
  REQUIRE(back.ok());
  REQUIRE(back->size() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    CHECK((*back)[i].entry == entries[i]);
    CHECK(!(*back)[i].legacy_key);
  }
  auto message = quorum_wire::to_leader_change_message(entries[0].payload);
  REQUIRE(message.ok());
  CHECK(message->leader_id == 1);
  REQUIRE(message->voters.size() == 1);
}

TEST_CASE("a keyed record of the single-node broker decodes with its key; damage is refused") {
  model::record r;
  r.key = model::to_bytes("topic");
  r.value = model::to_bytes("name=orders\n");
  codec::batch_options options;
  options.base_offset = offset{4};
  options.partition_leader_epoch = leader_epoch{0};
  auto batch = codec::encode_batch(options, std::span<const model::record>(&r, 1));
  REQUIRE(batch.ok());
  auto back = quorum_wire::decode_entries(*batch);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 1);
  CHECK((*back)[0].entry.offset_ == offset{4});
  CHECK((*back)[0].entry.epoch == leader_epoch{0});
  REQUIRE((*back)[0].legacy_key);
  CHECK(model::to_string(*(*back)[0].legacy_key) == "topic");

  auto damaged = *batch;
  damaged.back() ^= std::byte{0xff};
  CHECK(!quorum_wire::decode_entries(damaged).ok());
  auto cut = model::bytes(batch->begin(), batch->end() - 3);
  CHECK(!quorum_wire::decode_entries(cut).ok());
}

}  // namespace ringlog::controller
