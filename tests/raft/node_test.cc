// Scenario tests of raft::node driven by hand: every message, fsync and quorum-state write is
// delivered explicitly, so each test pins one rule (Raft paper §5, KIP-595, KIP-996, KIP-630).
#include <doctest.h>

#include <map>
#include <memory>
#include <vector>

#include "ringlog/raft/node.h"

using namespace ringlog::raft;

namespace {

const std::string cluster = "test";

config cfg(int self, int voters = 3) {
  config c;
  c.self = node_id{self};
  for (int i = 1; i <= voters; ++i) c.voters.push_back(node_id{i});
  c.cluster_id = cluster;
  return c;
}

entry data(int64_t o, int32_t epoch) { return entry{offset{o}, leader_epoch{epoch}, entry_type::data, {uint8_t(o)}}; }

persisted_state with_log(std::vector<std::pair<int64_t, int32_t>> entries, quorum_state q = {}) {
  persisted_state s;
  s.quorum = q;
  for (auto [o, e] : entries) s.entries.push_back(data(o, e));
  return s;
}

/// A driver for one node that makes every write durable at once (unless told not to) and
/// collects messages for the test to deliver.
struct harness {
  seeded_random random{42};
  std::unique_ptr<node> n;
  std::vector<message> outbox;
  bool auto_persist = true;
  bool auto_fsync = true;
  effects last;
  std::vector<log_write> writes;  // every log write so far
  bool caught_up_first_time = false;  // some effects said so

  harness(int self, persisted_state s = {}, int voters = 3) {
    n = std::make_unique<node>(cfg(self, voters), std::move(s), random, 0);
    pump();
  }
  void pump() {
    for (int round = 0; round < 10; ++round) {
      effects e = n->take_effects();
      if (e.empty()) return;
      for (auto& m : e.messages) outbox.push_back(m);
      for (auto& w : e.log_writes) writes.push_back(w);
      caught_up_first_time = caught_up_first_time || e.caught_up_first_time;
      const bool persist = e.quorum_state_ && auto_persist;
      const bool fsync = !e.log_writes.empty() && auto_fsync;
      last = std::move(e);
      if (persist) n->on_quorum_state_persisted(last.quorum_state_->version);
      if (fsync) n->on_append_fsynced(n->log().end_position());
    }
  }
  void tick(int64_t now) {
    n->tick(now);
    pump();
  }
  void handle(const message& m) {
    n->handle(m);
    pump();
  }
  template <typename T>
  std::vector<message> take(int to = -1) {
    std::vector<message> out, rest;
    for (auto& m : outbox) {
      (std::holds_alternative<T>(m.body) && (to < 0 || m.to.value() == to) ? out : rest).push_back(m);
    }
    outbox = rest;
    return out;
  }
};

message msg(int from, int to, message_body body, int64_t correlation = 1) {
  return message{node_id{from}, node_id{to}, correlation, std::move(body)};
}

vote_request vote(int candidate, int32_t epoch, int32_t last_epoch, int64_t last_offset, bool pre = false) {
  return vote_request{cluster, leader_epoch{epoch}, node_id{candidate}, leader_epoch{last_epoch}, offset{last_offset}, pre};
}

/// Makes `h` leader of `epoch`+1 by granting it the votes of nodes 2.. (it must be unattached).
void elect(harness& h, int voters = 3) {
  h.tick(1'000'000);  // election timeout -> prospective, pre-votes out
  for (auto& m : h.take<vote_request>()) {
    h.handle(msg(m.to.value(), 1, vote_response{errc::none, no_node, h.n->epoch(), true}, m.correlation_id));
  }
  for (auto& m : h.take<vote_request>()) {
    REQUIRE_FALSE(std::get<vote_request>(m.body).pre_vote);
    h.handle(msg(m.to.value(), 1, vote_response{errc::none, no_node, h.n->epoch(), true}, m.correlation_id));
  }
  REQUIRE(h.n->role() == role::leader);
  (void)voters;
}

fetch_request fetch(int replica, int32_t epoch, int64_t fetch_offset, int32_t last_epoch) {
  return fetch_request{cluster, node_id{replica}, leader_epoch{epoch}, offset{fetch_offset}, leader_epoch{last_epoch}, 0};
}

}  // namespace

TEST_CASE("vote: one vote per epoch, persisted before the response leaves") {
  harness h(1);
  h.auto_persist = false;
  h.handle(msg(2, 1, vote(2, 1, 0, 0)));
  CHECK(h.n->quorum().voted_id == node_id{2});
  CHECK(h.take<vote_response>().empty());  // held: the vote is not durable yet
  REQUIRE(h.last.quorum_state_.has_value());
  h.n->on_quorum_state_persisted(h.last.quorum_state_->version);
  h.pump();
  auto granted = h.take<vote_response>();
  REQUIRE(granted.size() == 1);
  CHECK(std::get<vote_response>(granted[0].body).vote_granted);

  h.auto_persist = true;
  h.handle(msg(3, 1, vote(3, 1, 0, 0)));  // another candidate, same epoch
  auto refused = h.take<vote_response>();
  REQUIRE(refused.size() == 1);
  CHECK_FALSE(std::get<vote_response>(refused[0].body).vote_granted);

  h.handle(msg(2, 1, vote(2, 1, 0, 0), 2));  // the same candidate retrying: same answer
  CHECK(std::get<vote_response>(h.take<vote_response>().at(0).body).vote_granted);
}

TEST_CASE("vote: refused to a candidate whose log is less up to date (§5.4.1)") {
  harness h(1, with_log({{0, 1}, {1, 1}, {2, 2}}, {leader_epoch{2}, no_node, no_node}));
  h.handle(msg(2, 1, vote(2, 3, 1, 10)));  // longer log but older last epoch
  CHECK_FALSE(std::get<vote_response>(h.take<vote_response>().at(0).body).vote_granted);
  h.handle(msg(3, 1, vote(3, 3, 2, 2)));   // same last epoch, shorter
  CHECK_FALSE(std::get<vote_response>(h.take<vote_response>().at(0).body).vote_granted);
  CHECK(h.n->epoch() == leader_epoch{3});  // the epoch moved even though no vote was granted
  h.handle(msg(3, 1, vote(3, 4, 2, 3)));   // same last epoch, as long
  CHECK(std::get<vote_response>(h.take<vote_response>().at(0).body).vote_granted);
  h.handle(msg(2, 1, vote(2, 2, 2, 9)));   // stale epoch
  auto stale = std::get<vote_response>(h.take<vote_response>().at(0).body);
  CHECK(stale.error_code == errc::fenced_leader_epoch);
  CHECK_FALSE(stale.vote_granted);
}

TEST_CASE("pre-vote: refused while the leader is alive, granted after the fetch timeout, never changes state") {
  harness h(1);
  // Node 2 becomes our leader in epoch 1.
  h.handle(msg(2, 1, begin_quorum_epoch_request{cluster, node_id{2}, leader_epoch{1}}));
  CHECK(h.n->role() == role::follower);
  const auto q = h.n->quorum();
  h.handle(msg(3, 1, vote(3, 2, 0, 0, true)));
  CHECK_FALSE(std::get<vote_response>(h.take<vote_response>().at(0).body).vote_granted);
  CHECK(h.n->quorum() == q);
  // The leader goes silent: after the fetch timeout we start our own pre-vote and grant others'.
  h.tick(1'000);
  CHECK(h.n->role() == role::prospective);
  CHECK(h.n->epoch() == leader_epoch{1});  // a pre-vote does not bump the epoch
  h.handle(msg(3, 1, vote(3, 2, 0, 0, true)));
  CHECK(std::get<vote_response>(h.take<vote_response>().at(0).body).vote_granted);
  CHECK(h.n->quorum() == q);
}

TEST_CASE("pre-vote majority makes a candidate; a vote majority makes a leader with a leader-change entry") {
  harness h(1);
  elect(h);
  CHECK(h.n->epoch() == leader_epoch{1});
  CHECK(h.n->log().log_end_offset() == offset{1});
  CHECK(h.n->log().at(offset{0}).type == entry_type::leader_change);
  CHECK(h.take<begin_quorum_epoch_request>().size() == 2);
}

TEST_CASE("fetch: divergence answers the diverging epoch and the follower truncates to its end, not to the HW") {
  // Leader 1: epochs 1 at [0,3), 3 at [3,5). Follower 2: epoch 1 at [0,3), 2 at [3,6) (never committed).
  harness leader(1, with_log({{0, 1}, {1, 1}, {2, 1}, {3, 3}, {4, 3}}, {leader_epoch{3}, no_node, no_node}));
  elect(leader);  // epoch 4, leader-change at 5
  harness follower(2, with_log({{0, 1}, {1, 1}, {2, 1}, {3, 2}, {4, 2}, {5, 2}}, {leader_epoch{3}, no_node, no_node}));
  follower.handle(leader.take<begin_quorum_epoch_request>(2).at(0));
  auto f = follower.take<fetch_request>().at(0);
  CHECK(std::get<fetch_request>(f.body).fetch_offset == offset{6});
  leader.handle(f);
  auto r = leader.take<fetch_response>().at(0);
  const auto& body = std::get<fetch_response>(r.body);
  REQUIRE(body.has_diverging_epoch);
  CHECK(body.diverging_epoch == offset_and_epoch{offset{3}, leader_epoch{1}});
  CHECK(follower.n->high_watermark() == offset{0});
  follower.handle(r);
  CHECK(follower.n->log().log_end_offset() == offset{3});  // the end of epoch 1, above the HW of 0
  // The next fetch from 3 gets the leader's entries.
  auto f2 = follower.take<fetch_request>().at(0);
  CHECK(std::get<fetch_request>(f2.body).fetch_offset == offset{3});
  leader.handle(f2);
  follower.handle(leader.take<fetch_response>().at(0));
  CHECK(follower.n->log().log_end_offset() == offset{6});
  CHECK(follower.n->log().at(offset{4}).epoch == leader_epoch{3});
}

TEST_CASE("commit: only an entry of the current epoch is committed by counting replicas (§5.4.2, figure 8)") {
  // Node 1 holds an old-epoch entry at 1 (epoch 2) that node 2 also has; it becomes leader of
  // epoch 4 and appends its leader-change at 2. Node 2's fetch from 2 puts offset 1 on a
  // majority, but that entry is of epoch 2: the high watermark must not move until offset 2
  // (epoch 4) is on a majority too; otherwise a node holding an epoch-3 entry at 1 (figure 8's
  // S5) could still be elected and overwrite it.
  harness leader(1, with_log({{0, 1}, {1, 2}}, {leader_epoch{3}, no_node, no_node}));
  elect(leader);
  REQUIRE(leader.n->epoch() == leader_epoch{4});
  leader.handle(msg(2, 1, fetch(2, 4, 2, 2), 7));
  CHECK(leader.n->high_watermark() == offset{0});
  leader.take<fetch_response>();
  leader.handle(msg(2, 1, fetch(2, 4, 3, 4), 8));
  CHECK(leader.n->high_watermark() == offset{3});
  CHECK(leader.last.committed.size() == 3);
}

TEST_CASE("commit: the leader's own entries count only after its fsync") {
  harness leader(1);
  leader.auto_fsync = false;
  elect(leader);
  auto o = leader.n->propose({7});
  REQUIRE(o.ok());
  leader.handle(msg(2, 1, fetch(2, 1, 2, 1), 9));  // node 2 has both entries durably
  CHECK(leader.n->high_watermark() == offset{0});
  leader.n->on_append_fsynced(leader.n->log().end_position());
  leader.pump();
  CHECK(leader.n->high_watermark() == offset{2});
}

TEST_CASE("propose on a non-leader names the known leader") {
  harness h(1);
  h.handle(msg(2, 1, begin_quorum_epoch_request{cluster, node_id{2}, leader_epoch{1}}));
  auto r = h.n->propose({1});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::not_leader_or_follower);
  CHECK(r.error().message.find("known leader 2") != std::string::npos);
}

TEST_CASE("check-quorum: a leader without fetches from a majority within the fetch timeout resigns") {
  harness h(1);
  elect(h);
  const int64_t t0 = 1'000'000;
  h.tick(t0 + 500);
  h.handle(msg(2, 1, fetch(2, 1, 1, 1), 3));  // node 2 is alive at +500
  h.tick(t0 + 1'400);
  CHECK(h.n->role() == role::leader);           // 1 and 2 are a majority
  h.tick(t0 + 1'600);                           // node 2's fetch is now 1100 ms old
  CHECK(h.n->role() == role::resigned);
  CHECK(h.n->propose({1}).error().code == errc::not_leader_or_follower);
}

TEST_CASE("graceful resign sends EndQuorumEpoch with the most caught-up successor first") {
  harness h(1);
  elect(h);
  h.n->propose({1}).value();
  h.pump();
  h.handle(msg(3, 1, fetch(3, 1, 2, 1), 4));
  h.handle(msg(2, 1, fetch(2, 1, 1, 1), 5));
  h.n->resign();
  h.pump();
  auto ends = h.take<end_quorum_epoch_request>();
  REQUIRE(ends.size() == 2);
  const auto& succ = std::get<end_quorum_epoch_request>(ends[0].body).preferred_successors;
  REQUIRE(succ.size() == 2);
  CHECK(succ[0] == node_id{3});
  CHECK(succ[1] == node_id{2});
}

TEST_CASE("snapshot: a follower below the leader's log start downloads the snapshot in chunks and resumes after it") {
  harness leader(1);
  elect(leader);
  for (int i = 0; i < 20; ++i) leader.n->propose({uint8_t(i)}).value();
  leader.pump();
  leader.handle(msg(2, 1, fetch(2, 1, 21, 1), 3));  // node 2 has all 21 entries: HW 21
  REQUIRE(leader.n->high_watermark() == offset{21});
  bytes payload(600'000, 0xab);  // larger than one chunk
  REQUIRE(leader.n->on_snapshot_created({offset{21}, leader_epoch{1}}, payload).ok());
  CHECK(leader.n->log().log_start_offset() == offset{21});
  CHECK(leader.n->on_snapshot_created({offset{21}, leader_epoch{1}}, payload).error().code == errc::offset_out_of_range);
  leader.take<fetch_response>();

  harness follower(3);
  follower.handle(msg(1, 3, begin_quorum_epoch_request{cluster, node_id{1}, leader_epoch{1}}));
  leader.handle(follower.take<fetch_request>().at(0));
  auto r = leader.take<fetch_response>().at(0);
  REQUIRE(std::get<fetch_response>(r.body).has_snapshot_id);
  follower.handle(r);
  int chunks = 0;
  for (;;) {
    auto req = follower.take<fetch_snapshot_request>();
    if (req.empty()) break;
    leader.handle(req.at(0));
    follower.handle(leader.take<fetch_snapshot_response>().at(0));
    ++chunks;
  }
  CHECK(chunks == 3);  // 600000 bytes in 256 KiB chunks
  CHECK(follower.n->log().log_start_offset() == offset{21});
  CHECK(follower.n->high_watermark() == offset{21});
  REQUIRE_FALSE(follower.writes.empty());
  const auto* install = std::get_if<install_snapshot>(&follower.writes.back());
  REQUIRE(install != nullptr);
  CHECK(install->snapshot_id == offset_and_epoch{offset{21}, leader_epoch{1}});
  CHECK(install->payload == payload);
  auto f = follower.take<fetch_request>().at(0);
  CHECK(std::get<fetch_request>(f.body).fetch_offset == offset{21});
  CHECK(std::get<fetch_request>(f.body).last_fetched_epoch == leader_epoch{1});
}

TEST_CASE("a stale fsync report (for writes since truncated) does not count") {
  harness h(2, with_log({{0, 1}, {1, 1}}, {leader_epoch{1}, node_id{1}, no_node}));
  h.auto_fsync = false;
  CHECK(h.n->durable_end_offset() == offset{2});
  h.n->on_append_fsynced({offset{2}, leader_epoch{5}});  // epoch does not match the entry at 1
  CHECK(h.n->durable_end_offset() == offset{2});
  h.n->on_append_fsynced({offset{9}, leader_epoch{1}});  // beyond the log
  CHECK(h.n->durable_end_offset() == offset{2});
}

TEST_CASE("a restarted leader comes back resigned in its old epoch") {
  harness h(1, with_log({{0, 1}}, {leader_epoch{1}, node_id{1}, node_id{1}}));
  CHECK(h.n->role() == role::resigned);
  CHECK(h.n->high_watermark() == offset{0});
}

TEST_CASE("config validation names the key") {
  config c = cfg(1);
  CHECK(validate(c).empty());
  c.fetch_timeout_ms = 100;
  CHECK(validate(c).find("controller.quorum.fetch.timeout.ms") != std::string::npos);
  c = cfg(4);
  CHECK(validate(c).empty());  // not among the voters: an observer (KIP-595)
  c.self = no_node;
  CHECK(validate(c).find("node.id") != std::string::npos);
}

TEST_CASE("one voter: stands at once and leads once its vote is durable, without an election timeout") {
  harness h(1, {}, 1);   // pump() persists the vote and fsyncs at once; no tick has run
  CHECK(h.n->role() == role::leader);
  CHECK(h.n->epoch() == leader_epoch{1});
  CHECK(h.n->high_watermark() == offset{1});   // its leader-change entry, committed by its own fsync

  // Without the durable vote it must not lead (the vote is fsynced before it counts).
  seeded_random random{7};
  node n(cfg(1, 1), {}, random, 0);
  CHECK(n.role() == role::candidate);
  effects e = n.take_effects();
  REQUIRE(e.quorum_state_);
  CHECK(n.role() == role::candidate);
  n.on_quorum_state_persisted(e.quorum_state_->version);
  CHECK(n.role() == role::leader);
}

TEST_CASE("a follower told its leader's process is gone stands after a backoff slot, not the fetch timeout") {
  const config defaults = cfg(2);
  REQUIRE(defaults.fetch_timeout_ms > defaults.election_backoff_max_ms + 100);
  harness h(2);
  h.handle(msg(1, 2, begin_quorum_epoch_request{cluster, node_id{1}, leader_epoch{1}}));
  REQUIRE(h.n->role() == role::follower);
  h.tick(10);
  h.n->peer_unreachable(node_id{3});   // not its leader: nothing changes
  h.tick(20 + defaults.election_backoff_max_ms);
  CHECK(h.n->role() == role::follower);
  h.n->peer_unreachable(node_id{1});
  h.pump();
  h.tick(40 + 2 * defaults.election_backoff_max_ms);
  CHECK(h.n->role() == role::prospective);
  auto pre_votes = h.take<vote_request>();
  REQUIRE(pre_votes.size() == 2);
  CHECK(std::get<vote_request>(pre_votes[0].body).pre_vote);
}

TEST_CASE("a voter that still hears the leader refuses pre-votes until it learns the leader is gone (KIP-996)") {
  harness h(3);
  h.handle(msg(1, 3, begin_quorum_epoch_request{cluster, node_id{1}, leader_epoch{1}}));
  h.tick(30);
  h.handle(msg(2, 3, vote(2, 2, 0, 0, true), 7));
  auto refused = h.take<vote_response>();
  REQUIRE(refused.size() == 1);
  CHECK_FALSE(std::get<vote_response>(refused[0].body).vote_granted);
  h.n->peer_unreachable(node_id{1});
  h.pump();
  h.handle(msg(2, 3, vote(2, 2, 0, 0, true), 8));
  auto granted = h.take<vote_response>();
  REQUIRE(granted.size() == 1);
  CHECK(std::get<vote_response>(granted[0].body).vote_granted);
  CHECK(h.n->epoch() == leader_epoch{1});   // a pre-vote changes nothing durable
}

// ---- observers (KIP-595 non-voters, process.roles=broker) ----

TEST_CASE("observer: finds the leader by asking a voter, then fetches from it like a follower") {
  harness obs(4);  // voters 1..3
  CHECK(obs.n->is_observer());
  CHECK(obs.n->role() == role::unattached);
  obs.tick(1);
  auto ask = obs.take<fetch_request>();
  REQUIRE(ask.size() == 1);
  CHECK(ask[0].to.value() >= 1);
  CHECK(ask[0].to.value() <= 3);
  CHECK(std::get<fetch_request>(ask[0].body).max_wait_ms == 0);  // a question, not a long poll
  // A follower voter answers not_leader_or_follower naming leader 2 in epoch 3.
  fetch_response refused;
  refused.error_code = errc::not_leader_or_follower;
  refused.current_leader = {node_id{2}, leader_epoch{3}};
  obs.handle(msg(ask[0].to.value(), 4, refused, ask[0].correlation_id));
  CHECK(obs.n->role() == role::follower);
  CHECK(obs.n->leader_id() == node_id{2});
  CHECK(obs.n->epoch() == leader_epoch{3});
  auto f = obs.take<fetch_request>(2);
  REQUIRE(f.size() == 1);
  CHECK(std::get<fetch_request>(f[0].body).current_leader_epoch == leader_epoch{3});
  // The leader's records are appended and committed up to its high watermark.
  fetch_response data_response;
  data_response.high_watermark = offset{2};
  data_response.current_leader = {node_id{2}, leader_epoch{3}};
  data_response.records = {data(0, 3), data(1, 3)};
  obs.handle(msg(2, 4, data_response, f[0].correlation_id));
  CHECK(obs.n->log().log_end_offset() == offset{2});
  CHECK(obs.n->high_watermark() == offset{2});
  CHECK(obs.take<fetch_request>(2).size() == 1);  // next fetch after the fsync
}

TEST_CASE("a node of another cluster.id learns who refused it with inconsistent_cluster_id") {
  harness voter(1);   // cluster "test"
  seeded_random random{7};
  config other = cfg(4);
  other.cluster_id = "another";
  node stranger(other, {}, random, 0);
  stranger.tick(1);
  effects e = stranger.take_effects();
  REQUIRE(e.messages.size() == 1);
  CHECK(stranger.cluster_id_refused_by() == no_node);
  message ask = e.messages[0];
  ask.to = node_id{1};
  voter.handle(ask);
  auto refused = voter.take<fetch_response>(4);
  REQUIRE(refused.size() == 1);
  CHECK(std::get<fetch_response>(refused[0].body).error_code == errc::inconsistent_cluster_id);
  stranger.handle(refused[0]);
  CHECK(stranger.cluster_id_refused_by() == node_id{1});
}

TEST_CASE("observer: never stands and refuses votes, however long it hears nothing") {
  harness obs(4);
  for (int64_t t = 0; t <= 20'000; t += 50) obs.tick(t);
  CHECK(obs.n->role() == role::unattached);
  CHECK(obs.take<vote_request>().empty());
  CHECK(obs.n->quorum().voted_id == no_node);
  CHECK_FALSE(obs.take<fetch_request>().empty());  // it kept asking voters for the leader
  obs.handle(msg(1, 4, vote(1, 9, 5, 100)));
  auto r = obs.take<vote_response>();
  REQUIRE(r.size() == 1);
  CHECK_FALSE(std::get<vote_response>(r[0].body).vote_granted);
  CHECK(std::get<vote_response>(r[0].body).error_code == errc::inconsistent_voter_set);
  CHECK(obs.n->quorum().voted_id == no_node);
}

TEST_CASE("a vote request from a non-voter of another cluster.id is refused with inconsistent_cluster_id") {
  // KafkaRaftClient checks the cluster id before the voter set; a non-voter of this cluster is
  // refused with inconsistent_voter_set.
  harness voter(1);
  auto stranger = vote(7, 9, 5, 100);
  stranger.cluster_id = "another";
  voter.handle(msg(7, 1, stranger));
  auto r = voter.take<vote_response>();
  REQUIRE(r.size() == 1);
  CHECK_FALSE(std::get<vote_response>(r[0].body).vote_granted);
  CHECK(std::get<vote_response>(r[0].body).error_code == errc::inconsistent_cluster_id);
  voter.handle(msg(7, 1, vote(7, 9, 5, 100)));
  r = voter.take<vote_response>();
  REQUIRE(r.size() == 1);
  CHECK(std::get<vote_response>(r[0].body).error_code == errc::inconsistent_voter_set);
}

TEST_CASE("observer: a fetch timeout or a refusal by its leader sends it back to finding the leader") {
  harness obs(4, with_log({}, {leader_epoch{2}, node_id{1}, no_node}));  // restarted knowing leader 1
  CHECK(obs.n->role() == role::follower);
  auto f = obs.take<fetch_request>(1);
  REQUIRE(f.size() == 1);
  fetch_response refused;
  refused.error_code = errc::not_leader_or_follower;
  refused.current_leader = {no_node, leader_epoch{2}};
  obs.handle(msg(1, 4, refused, f[0].correlation_id));
  CHECK(obs.n->role() == role::unattached);
  obs.tick(1);
  REQUIRE(obs.take<fetch_request>().size() == 1);  // asks a voter
  // Found again; then silence for the fetch timeout.
  harness obs2(4, with_log({}, {leader_epoch{2}, node_id{1}, no_node}));
  obs2.take<fetch_request>();
  obs2.tick(999);
  CHECK(obs2.n->role() == role::follower);
  obs2.tick(1'001);
  CHECK(obs2.n->role() == role::unattached);
  CHECK(obs2.take<vote_request>().empty());
}

TEST_CASE("observer: a snapshot answer from the leader makes it download the snapshot") {
  harness obs(4, with_log({}, {leader_epoch{1}, node_id{1}, no_node}));
  auto f = obs.take<fetch_request>(1);
  REQUIRE(f.size() == 1);
  fetch_response r;
  r.current_leader = {node_id{1}, leader_epoch{1}};
  r.has_snapshot_id = true;
  r.snapshot_id = {offset{21}, leader_epoch{1}};
  obs.handle(msg(1, 4, r, f[0].correlation_id));
  auto s = obs.take<fetch_snapshot_request>(1);
  REQUIRE(s.size() == 1);
  CHECK(std::get<fetch_snapshot_request>(s[0].body).snapshot_id == r.snapshot_id);
}

TEST_CASE("leader: an observer's fetch is served but never counts toward the high watermark") {
  harness leader(1);
  elect(leader);
  leader.n->propose({7}).value();
  leader.pump();
  leader.take<fetch_response>();
  // Observer 4 has both entries: alone with the leader it is no majority of the voters.
  leader.handle(msg(4, 1, fetch(4, 1, 2, 1), 11));
  CHECK(leader.n->high_watermark() == offset{0});
  REQUIRE(leader.n->tracked_observers() == std::vector<node_id>{node_id{4}});
  auto answer = leader.take<fetch_response>(4);
  REQUIRE(answer.size() == 1);
  CHECK(std::get<fetch_response>(answer[0].body).error_code == errc::none);
  // A second observer does not help either; a voter does.
  leader.handle(msg(5, 1, fetch(5, 1, 2, 1), 12));
  CHECK(leader.n->high_watermark() == offset{0});
  leader.handle(msg(2, 1, fetch(2, 1, 2, 1), 13));
  CHECK(leader.n->high_watermark() == offset{2});
  // An observer's fetch from behind gets the entries.
  leader.handle(msg(6, 1, fetch(6, 1, 0, 0), 14));
  auto behind = leader.take<fetch_response>(6);
  REQUIRE(behind.size() == 1);
  CHECK(std::get<fetch_response>(behind[0].body).records.size() == 2);
  CHECK(std::get<fetch_response>(behind[0].body).high_watermark == offset{2});
}

TEST_CASE("leader: a caught-up observer's long poll is parked and answered on new data") {
  harness leader(1);
  elect(leader);
  leader.take<fetch_response>();
  auto f = fetch(4, 1, 1, 1);
  f.max_wait_ms = 200;
  leader.handle(msg(4, 1, f, 21));
  CHECK(leader.take<fetch_response>(4).empty());  // parked
  leader.n->propose({9}).value();
  leader.pump();
  auto r = leader.take<fetch_response>(4);
  REQUIRE(r.size() == 1);
  CHECK(r[0].correlation_id == 21);
  CHECK(std::get<fetch_response>(r[0].body).records.size() == 1);
}

TEST_CASE("leader: observers do not keep it leading (check-quorum) and their votes are refused") {
  harness h(1);
  elect(h);
  const int64_t t0 = 1'000'000;
  h.handle(msg(4, 1, vote(4, 9, 5, 100), 30));
  auto v = h.take<vote_response>(4);
  REQUIRE(v.size() == 1);
  CHECK_FALSE(std::get<vote_response>(v[0].body).vote_granted);
  CHECK(h.n->epoch() == leader_epoch{1});  // the observer's epoch 9 changed nothing
  for (int64_t t = t0 + 100; t <= t0 + 1'600; t += 100) {
    h.tick(t);
    h.handle(msg(4, 1, fetch(4, 1, 1, 1), 100 + t));
    h.handle(msg(5, 1, fetch(5, 1, 1, 1), 200 + t));
  }
  CHECK(h.n->role() == role::resigned);
}

TEST_CASE("vote: a request naming this node as its candidate is answered, refused, and changes nothing") {
  // KafkaRaftClient answers every Vote; its candidate state never grants one to itself. A node
  // never sends itself a message, so such a request came from elsewhere (session 34's breaker
  // sent one on the cluster listener and waited: no answer).
  harness h(1);
  const quorum_state before = h.n->quorum();
  h.handle(msg(1, 1, vote(1, 5, 0, 0)));   // a higher epoch, a log as long as ours
  auto answers = h.take<vote_response>(1);
  REQUIRE(answers.size() == 1);
  const auto answer = std::get<vote_response>(answers[0].body);
  CHECK(answer.error_code == errc::none);
  CHECK_FALSE(answer.vote_granted);
  CHECK(answer.leader_epoch_ == before.epoch);
  CHECK(h.n->quorum().epoch == before.epoch);          // the epoch did not move
  CHECK(h.n->quorum().voted_id == before.voted_id);    // no vote recorded
  CHECK(h.n->role() == role::unattached);
  h.handle(msg(1, 1, vote_request{"other", leader_epoch{5}, node_id{1}, leader_epoch{0}, offset{0}, false}, 2));
  CHECK(std::get<vote_response>(h.take<vote_response>(1).at(0).body).error_code == errc::inconsistent_cluster_id);
  // Other requests naming this node as their sender are still dropped.
  h.handle(msg(1, 1, begin_quorum_epoch_request{cluster, node_id{1}, leader_epoch{6}}, 3));
  CHECK(h.outbox.empty());
  CHECK(h.n->epoch() == before.epoch);
}

// ---------------------------------------------------------------------------------------------
// A data directory formatted on this start (persisted_state::awaiting_first_catch_up): the voter
// may have lost its disk, so its vote must not help a stale candidate win (Raft §5.4.1 assumes a
// voter keeps what it acknowledged; KIP-853's disk-loss problem).

namespace {

persisted_state formatted_now() {
  persisted_state s;
  s.awaiting_first_catch_up = true;
  return s;
}

bool granted(harness& h) { return std::get<vote_response>(h.take<vote_response>().at(0).body).vote_granted; }

/// `r` from a candidate that still awaits its own first catch-up.
vote_request from_awaiting(vote_request r) {
  r.candidate_awaiting_first_catch_up = true;
  return r;
}

}  // namespace

TEST_CASE("disk loss: a voter awaiting its first catch-up votes only for a candidate also awaiting its own") {
  harness h(2, formatted_now());
  CHECK(h.n->awaiting_first_catch_up());
  // Committed {A=1, B=2} at offset 5, B lost its disk, stale C=3 ends at 3: it must not win with B.
  h.handle(msg(3, 2, vote(3, 3, 2, 3, true)));
  CHECK_FALSE(granted(h));
  h.handle(msg(3, 2, vote(3, 3, 2, 3)));
  CHECK_FALSE(granted(h));
  CHECK(h.n->epoch() == leader_epoch{3});   // the epoch still moves (§5.1), the vote is not given
  CHECK(h.n->quorum().voted_id == no_node);
  // Even a past candidate with an empty log: the kinds differ.
  h.handle(msg(3, 2, vote(3, 3, 0, 0, true)));
  CHECK_FALSE(granted(h));
  // A new cluster's first election: every voter awaits, the vote is granted as always.
  h.handle(msg(1, 2, from_awaiting(vote(1, 4, 0, 0, true))));
  CHECK(granted(h));
  h.handle(msg(1, 2, from_awaiting(vote(1, 4, 0, 0))));
  CHECK(granted(h));
  CHECK_FALSE(h.caught_up_first_time);
}

TEST_CASE("disk loss: the wait ends once the durable log holds a leader's high watermark of its own epoch") {
  harness h(2, formatted_now());
  h.auto_fsync = false;
  h.handle(msg(1, 2, begin_quorum_epoch_request{cluster, node_id{1}, leader_epoch{3}}));
  REQUIRE(h.n->role() == role::follower);
  auto f = h.take<fetch_request>(1);
  REQUIRE(f.size() == 1);
  // The leader's high watermark 2 covers entries of epoch 1 only (its own LeaderChange is not
  // committed yet): entries committed before its election may lie above it. Not caught up.
  fetch_response older;
  older.high_watermark = offset{2};
  older.current_leader = {node_id{1}, leader_epoch{3}};
  older.records = {data(0, 1), data(1, 1), data(2, 1), data(3, 3)};
  h.handle(msg(1, 2, older, f[0].correlation_id));
  h.n->on_append_fsynced(h.n->log().end_position());
  h.pump();
  CHECK(h.n->awaiting_first_catch_up());
  f = h.take<fetch_request>(1);
  REQUIRE_FALSE(f.empty());
  // Now the leader's high watermark 5 covers offset 4, of its epoch 3: caught up once offset 4
  // is durable here too.
  fetch_response current;
  current.high_watermark = offset{5};
  current.current_leader = {node_id{1}, leader_epoch{3}};
  current.records = {data(4, 3)};
  h.handle(msg(1, 2, current, f.back().correlation_id));
  CHECK(h.n->high_watermark() == offset{5});
  CHECK_FALSE(h.caught_up_first_time);
  CHECK(h.n->awaiting_first_catch_up());
  h.n->on_append_fsynced(h.n->log().end_position());
  h.pump();
  CHECK(h.caught_up_first_time);
  CHECK_FALSE(h.n->awaiting_first_catch_up());
  // From now on it votes by §5.4.1 alone: an up-to-date candidate with a log gets the vote.
  h.handle(msg(3, 2, vote(3, 4, 3, 5)));
  CHECK(granted(h));
}

TEST_CASE("disk loss: awaiting voters vote for awaiting candidates by §5.4.1, and refuse past ones") {
  // A new cluster whose first leader (1) died before its first commit: voter 2 holds the
  // LeaderChange entry, and voter 3 (awaiting too) must be able to win with its vote (raft_sim
  // --disk-loss --voters 5 --seed 365 deadlocked when an empty voter refused every such holder).
  harness h(2, formatted_now());
  h.handle(msg(1, 2, begin_quorum_epoch_request{cluster, node_id{1}, leader_epoch{1}}));
  auto f = h.take<fetch_request>(1);
  REQUIRE(f.size() == 1);
  fetch_response first;
  first.current_leader = {node_id{1}, leader_epoch{1}};
  first.records = {entry{offset{0}, leader_epoch{1}, entry_type::leader_change, {}}};
  h.handle(msg(1, 2, first, f[0].correlation_id));
  REQUIRE(h.n->log().log_end_offset() == offset{1});
  CHECK(h.n->awaiting_first_catch_up());
  h.tick(1'000);   // leader 1 silent for the fetch timeout
  h.handle(msg(3, 2, from_awaiting(vote(3, 2, 1, 1, true))));
  CHECK(granted(h));
  h.handle(msg(3, 2, from_awaiting(vote(3, 2, 0, 0, true))));   // less up to date than its own log (§5.4.1)
  CHECK_FALSE(granted(h));
  // A voter refetching after a lost disk: its partial log says nothing of what its lost disk
  // held, so a past candidate, however up to date, does not get its (pre-)vote.
  h.handle(msg(3, 2, vote(3, 2, 1, 7, true)));
  CHECK_FALSE(granted(h));
  h.handle(msg(3, 2, vote(3, 2, 1, 7)));
  CHECK_FALSE(granted(h));
  CHECK(h.n->quorum().voted_id == no_node);
  h.handle(msg(3, 2, from_awaiting(vote(3, 2, 1, 1))));
  CHECK(granted(h));
}

TEST_CASE("disk loss: a voter past its first catch-up refuses a candidate still awaiting its own") {
  // raft_sim --disk-loss --seed 1514: entry 5 committed by {2, 3} while 1 lagged; 3 lost its disk
  // and refetched part of the log; leader 2 crashed. Voter 1 (past its catch-up, lacking entry 5)
  // must not elect 3, whose partial log is more up to date than its own but lacks entry 5.
  harness h(1, with_log({{0, 1}, {1, 1}, {2, 2}}, {leader_epoch{3}, no_node, no_node}));
  CHECK_FALSE(h.n->awaiting_first_catch_up());
  h.handle(msg(3, 1, from_awaiting(vote(3, 4, 3, 4, true))));
  CHECK_FALSE(granted(h));
  h.handle(msg(3, 1, from_awaiting(vote(3, 4, 3, 4))));
  CHECK_FALSE(granted(h));
  CHECK(h.n->quorum().voted_id == no_node);
  h.handle(msg(2, 1, vote(2, 4, 3, 4)));   // the same log from a candidate past its catch-up
  CHECK(granted(h));
}

TEST_CASE("disk loss: a candidate's (pre-)vote requests say whether it awaits its first catch-up") {
  harness formatted(1, formatted_now());
  formatted.tick(1'000'000);
  auto pre = formatted.take<vote_request>();
  REQUIRE(pre.size() == 2);
  CHECK(std::get<vote_request>(pre[0].body).pre_vote);
  CHECK(std::get<vote_request>(pre[0].body).candidate_awaiting_first_catch_up);
  harness past(1);
  past.tick(1'000'000);
  pre = past.take<vote_request>();
  REQUIRE(pre.size() == 2);
  CHECK_FALSE(std::get<vote_request>(pre[0].body).candidate_awaiting_first_catch_up);
}

TEST_CASE("disk loss: a new cluster of formatted voters elects a leader, which ends its wait on its first commit") {
  harness h(1, formatted_now());
  elect(h);   // it stands as a voter awaiting its first catch-up, and the other awaiting voters grant it
  CHECK(h.n->awaiting_first_catch_up());
  h.handle(msg(2, 1, fetch(2, 1, 1, 1)));   // voter 2 holds the LeaderChange entry: committed
  CHECK(h.n->high_watermark() == offset{1});
  CHECK(h.caught_up_first_time);
  CHECK_FALSE(h.n->awaiting_first_catch_up());
}

TEST_CASE("disk loss: a lone voter ignores the wait (its vote is the whole quorum)") {
  harness h(1, formatted_now(), 1);
  CHECK_FALSE(h.n->awaiting_first_catch_up());
  CHECK(h.n->role() == role::leader);
  CHECK_FALSE(h.caught_up_first_time);
}
