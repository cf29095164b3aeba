#include "ringlog/raft/node.h"

#include <algorithm>
#include <string>
#include <utility>

#include "ringlog/base/assert.h"
#include "ringlog/raft/constants.h"

// Negative controls (tests/sim/meson.build): each RINGLOG_RAFT_BREAK_* define breaks exactly one
// safety rule so the simulator can prove its invariant checks notice. Never set in a real build.
//   RINGLOG_RAFT_BREAK_COMMIT_OLD_EPOCH_BY_COUNT  leader commits by replica count alone (no §5.4.2)
//   RINGLOG_RAFT_BREAK_SKIP_FSYNC_BEFORE_VOTE     vote responses leave before the vote is durable
//   RINGLOG_RAFT_BREAK_GRANT_TWO_VOTES_PER_EPOCH  a voter ignores that it already voted this epoch
//   RINGLOG_RAFT_BREAK_COUNT_UNSYNCED_LEADER      the leader counts its own entries before fsync
//   RINGLOG_RAFT_BREAK_COUNT_OBSERVERS            the leader counts observers toward the majority
//   RINGLOG_RAFT_BREAK_VOTE_AFTER_DISK_LOSS       an empty voter awaiting its first catch-up votes as any

namespace ringlog::raft {

namespace {

constexpr int64_t never_ms = -1;

bytes leader_change_payload(node_id leader, const std::vector<node_id>& voters) {
  // KRaft's LeaderChangeMessage names the leader and the voters; ours is 4-byte big-endian ids.
  bytes out;
  auto put = [&out](int32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<uint8_t>((static_cast<uint32_t>(v) >> shift) & 0xff));
    }
  };
  put(leader.value());
  for (auto v : voters) {
    put(v.value());
  }
  return out;
}

}  // namespace

std::string to_string(role r) {
  switch (r) {
    case role::unattached: return "unattached";
    case role::prospective: return "prospective";
    case role::candidate: return "candidate";
    case role::leader: return "leader";
    case role::follower: return "follower";
    case role::resigned: return "resigned";
  }
  return "unknown";
}

node::node(config cfg, persisted_state state, random_source& random, int64_t now_ms, int64_t first_correlation_id)
    : cfg_(std::move(cfg)),
      random_(random),
      now_ms_(now_ms),
      next_correlation_id_(first_correlation_id),
      quorum_(state.quorum),
      log_(state.snapshot_id),
      snapshot_payload_(std::move(state.snapshot_payload)) {
  RINGLOG_ASSERT(validate(cfg_).empty(), "invalid raft config");
  std::sort(cfg_.voters.begin(), cfg_.voters.end());
  // A lone voter's vote is the whole quorum: nothing it lost can have been held by anyone else.
  awaiting_first_catch_up_ =
      state.awaiting_first_catch_up && !(cfg_.voters.size() == 1 && cfg_.voters.front() == cfg_.self);
  for (auto& e : state.entries) {
    if (e.offset_ >= log_.log_start_offset()) {
      log_.append(std::move(e));
    }
  }
  // Everything handed to the constructor was durable; nothing above the snapshot is known to be
  // committed (KRaft does not persist the metadata high watermark).
  durable_end_ = log_.log_end_offset();
  high_watermark_ = log_.log_start_offset();
  if (is_observer() && quorum_.leader_id == no_node) {
    role_ = role::unattached;  // asks a voter for the leader on the first tick
    discovery_next_ms_ = now_ms_;
  } else if (is_observer() && quorum_.leader_id == cfg_.self) {
    // Led once as a voter, now configured as an observer: it cannot lead, so it looks for the leader.
    role_ = role::unattached;
    discovery_next_ms_ = now_ms_;
  } else if (quorum_.leader_id == cfg_.self) {
    // A restarted leader cannot lead again in its old epoch (KIP-595: it comes back resigned).
    role_ = role::resigned;
    election_deadline_ms_ = now_ms_ + random_election_timeout_ms();
  } else if (quorum_.leader_id != no_node) {
    role_ = role::follower;
    fetch_deadline_ms_ = now_ms_ + cfg_.fetch_timeout_ms;
    send_fetch();
  } else {
    role_ = role::unattached;
    election_deadline_ms_ = now_ms_ + random_election_timeout_ms();
  }
  // The only voter needs nobody's vote: it stands at once instead of after an election timeout
  // (KafkaRaftClient does the same), so a one-voter quorum leads as soon as its vote is durable.
  if (cfg_.voters.size() == 1 && cfg_.voters.front() == cfg_.self) become_candidate();
}

// ---------------------------------------------------------------------------------------------
// inputs

void node::tick(int64_t now_ms) {
  RINGLOG_ASSERT_OP(now_ms, >=, now_ms_);
  now_ms_ = now_ms;
  switch (role_) {
    case role::leader: leader_tick(); break;
    case role::follower: follower_tick(); break;
    case role::unattached:
    case role::resigned:
      if (is_observer()) {
        observer_unattached_tick();
      } else if (now_ms_ >= election_deadline_ms_) {
        become_prospective();
      }
      break;
    case role::prospective:
      if (now_ms_ >= election_deadline_ms_) {
        start_pre_vote_round();
      } else if (pre_vote_round_started_ && now_ms_ - votes_sent_ms_ >= constants::request_retry_ms) {
        send_vote_requests(true);  // a lost request or response must not cost a whole round
      }
      break;
    case role::candidate:
      if (now_ms_ >= election_deadline_ms_) {
        // Lost or split: back off a random while, then pre-vote again (KIP-996).
        set_role(role::prospective);
        pre_vote_round_started_ = false;
        election_deadline_ms_ = now_ms_ + random_.uniform(0, cfg_.election_backoff_max_ms);
      } else if (now_ms_ - votes_sent_ms_ >= constants::request_retry_ms) {
        send_vote_requests(false);
      }
      break;
  }
}

void node::handle(const message& m) {
  if (m.to != cfg_.self) {
    return;  // a misrouted message is dropped
  }
  if (m.from == cfg_.self) {
    // This node never sends itself a message, so this one came from elsewhere naming it. A vote
    // request is still answered, refused: KafkaRaftClient answers every Vote, and its candidate
    // state never grants one to itself ("the candidate votes for itself, this vote is implicit
    // and not granted"). Anything else is dropped.
    if (const auto* vote = std::get_if<vote_request>(&m.body)) refuse_own_candidacy(m, *vote);
    return;
  }
  const errc answered = std::visit(
      [](const auto& body) {
        if constexpr (requires { body.error_code; }) {
          return body.error_code;
        } else {
          return errc::none;
        }
      },
      m.body);
  if (answered == errc::inconsistent_cluster_id) cluster_id_refused_by_ = m.from;
  if (!is_voter(m.from)) {
    // A non-voter (an observer, KIP-595) may only fetch; its vote requests are refused and
    // anything else it sends is dropped.
    if (std::holds_alternative<fetch_request>(m.body)) {
      handle_fetch_request(m, std::get<fetch_request>(m.body));
    } else if (std::holds_alternative<fetch_snapshot_request>(m.body)) {
      handle_fetch_snapshot_request(m, std::get<fetch_snapshot_request>(m.body));
    } else if (const auto* vote = std::get_if<vote_request>(&m.body)) {
      // The cluster id first, as KafkaRaftClient checks it before anything else: a node of
      // another cluster hears why (the breaker of session 34 heard "not a voter").
      const errc code =
          vote->cluster_id != cfg_.cluster_id ? errc::inconsistent_cluster_id : errc::inconsistent_voter_set;
      send(m.from, m.correlation_id, vote_response{code, quorum_.leader_id, quorum_.epoch, false});
    }
    return;
  }
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, vote_request>) {
          handle_vote_request(m, body);
        } else if constexpr (std::is_same_v<T, vote_response>) {
          handle_vote_response(m, body);
        } else if constexpr (std::is_same_v<T, begin_quorum_epoch_request>) {
          handle_begin_quorum_epoch_request(m, body);
        } else if constexpr (std::is_same_v<T, begin_quorum_epoch_response>) {
          handle_begin_quorum_epoch_response(m, body);
        } else if constexpr (std::is_same_v<T, end_quorum_epoch_request>) {
          handle_end_quorum_epoch_request(m, body);
        } else if constexpr (std::is_same_v<T, end_quorum_epoch_response>) {
          observe_epoch(body.leader_epoch_, body.leader_id);
        } else if constexpr (std::is_same_v<T, fetch_request>) {
          handle_fetch_request(m, body);
        } else if constexpr (std::is_same_v<T, fetch_response>) {
          handle_fetch_response(m, body);
        } else if constexpr (std::is_same_v<T, fetch_snapshot_request>) {
          handle_fetch_snapshot_request(m, body);
        } else if constexpr (std::is_same_v<T, fetch_snapshot_response>) {
          handle_fetch_snapshot_response(m, body);
        }
      },
      m.body);
}

result<offset> node::propose(bytes payload) {
  if (role_ != role::leader) {
    return error{errc::not_leader_or_follower,
                 "not the leader; known leader " + std::to_string(quorum_.leader_id.value()) + " in epoch " +
                     std::to_string(quorum_.epoch.value())};
  }
  if (payload.size() > constants::entry_bytes_max) {
    return error{errc::record_too_large, "payload of " + std::to_string(payload.size()) +
                                             " bytes exceeds constants::entry_bytes_max"};
  }
  if (static_cast<size_t>(log_.log_end_offset() - high_watermark_) >= constants::uncommitted_entries_max) {
    return error{errc::uncommitted_limit_reached, "constants::uncommitted_entries_max entries await commit"};
  }
  const offset o = log_.log_end_offset();
  append_as_leader(entry_type::data, std::move(payload));
  return o;
}

void node::on_quorum_state_persisted(uint64_t version) {
  RINGLOG_ASSERT_OP(version, <=, quorum_version_requested_);
  quorum_version_persisted_ = std::max(quorum_version_persisted_, version);
  release_held_messages();
  maybe_win_election();
}

void node::on_append_fsynced(offset_and_epoch position) {
  const auto epoch = log_.epoch_at(position.end_offset - 1);
  const bool matches = position.end_offset == log_.log_start_offset()
                           ? position.epoch == log_.snapshot_id().epoch
                           : (epoch.has_value() && *epoch == position.epoch);
  if (!matches) {
    return;  // covers writes the log has since truncated: says nothing about today's entries
  }
  durable_end_ = std::max(durable_end_, position.end_offset);
  if (position.end_offset == log_.log_end_offset()) {
    unsynced_writes_ = false;
  }
  maybe_finish_first_catch_up();
  if (role_ == role::leader) {
    maybe_advance_high_watermark_as_leader();
  } else {
    maybe_send_next_fetch();
  }
}

result<void> node::on_snapshot_created(offset_and_epoch snapshot_id, bytes payload) {
  if (snapshot_id.end_offset <= log_.log_start_offset() || snapshot_id.end_offset > snapshot_limit()) {
    return error{errc::offset_out_of_range, "snapshot end offset " + std::to_string(snapshot_id.end_offset.value()) +
                                                " outside (log_start_offset, snapshot_limit]"};
  }
  if (log_.at(snapshot_id.end_offset - 1).epoch != snapshot_id.epoch) {
    return error{errc::invalid_request, "snapshot epoch differs from the epoch of the entry below its end offset"};
  }
  log_.delete_prefix(snapshot_id);
  snapshot_payload_ = std::move(payload);
  effects_.log_writes.emplace_back(delete_prefix{snapshot_id.end_offset});
  return base::ok_v;
}

void node::resign() {
  if (role_ == role::leader) {
    become_resigned(true);
  }
}

effects node::take_effects() { return std::exchange(effects_, effects{}); }

offset node::snapshot_limit() const { return std::min(high_watermark_, durable_end_); }

// ---------------------------------------------------------------------------------------------
// transitions

void node::set_role(raft::role r) {
  if (role_ != r) {
    role_ = r;
    effects_.role_changed = r;
  }
  if (r != role::leader) {
    progress_.clear();
    observers_.clear();
  }
  if (r != role::follower) {
    fetch_ = {};
    fetch_snapshot_ = {};
    downloading_snapshot_ = false;
    download_buffer_.clear();
  }
}

void node::persist(quorum_state qs) {
  if (qs == quorum_) {
    return;
  }
  quorum_ = qs;
  ++quorum_version_requested_;
  effects_.quorum_state_ = quorum_state_write{quorum_, quorum_version_requested_};
}

void node::become_unattached(leader_epoch epoch, node_id voted) {
  RINGLOG_ASSERT_OP(epoch.value(), >=, quorum_.epoch.value());
  persist({epoch, no_node, voted});
  set_role(role::unattached);
  election_deadline_ms_ = now_ms_ + random_election_timeout_ms();
}

void node::become_follower(leader_epoch epoch, node_id leader) {
  RINGLOG_ASSERT_OP(epoch.value(), >=, quorum_.epoch.value());
  const node_id voted = epoch == quorum_.epoch ? quorum_.voted_id : no_node;
  persist({epoch, leader, voted});
  const bool was_following = role_ == role::follower;
  set_role(role::follower);
  // leader_heard_ms_ moves only on contact with the leader itself, not on hearsay.
  fetch_deadline_ms_ = now_ms_ + cfg_.fetch_timeout_ms;
  if (!was_following) {
    awaiting_fsync_ = unsynced_writes_;
    maybe_send_next_fetch();
  }
}

void node::become_prospective() {
  RINGLOG_ASSERT(!is_observer(), "an observer never stands for election");
  set_role(role::prospective);
  start_pre_vote_round();
}

void node::start_pre_vote_round() {
  pre_vote_round_started_ = true;
  round_first_correlation_id_ = next_correlation_id_;
  granted_ = {cfg_.self};
  election_deadline_ms_ = now_ms_ + random_election_timeout_ms();
  if (granted_.size() >= majority()) {
    become_candidate();
    return;
  }
  send_vote_requests(true);
}

void node::become_candidate() {
  RINGLOG_ASSERT(!is_observer(), "an observer never stands for election");
  persist({quorum_.epoch + 1, no_node, cfg_.self});
  candidacy_version_ = quorum_version_requested_;
  set_role(role::candidate);
  round_first_correlation_id_ = next_correlation_id_;
  granted_ = {cfg_.self};
  election_deadline_ms_ = now_ms_ + random_election_timeout_ms();
  send_vote_requests(false);
  maybe_win_election();
}

void node::maybe_win_election() {
  // Our own vote counts only once it is durable: a crash before would let us vote again in this
  // epoch after restart (two leaders in one epoch).
  if (role_ == role::candidate && granted_.size() >= majority() && quorum_version_persisted_ >= candidacy_version_) {
    become_leader();
  }
}

void node::become_leader() {
  persist({quorum_.epoch, cfg_.self, cfg_.self});
  set_role(role::leader);
  leader_since_ms_ = now_ms_;
  progress_.clear();
  observers_.clear();
  for (auto v : cfg_.voters) {
    progress_.push_back(voter_progress{.id = v});
  }
  if (auto* self = progress_of(cfg_.self)) {
    self->last_fetch_ms = now_ms_;
  }
  // KRaft's LeaderChangeMessage: an entry of the new epoch, so the leader can commit (§5.4.2).
  append_as_leader(entry_type::leader_change, leader_change_payload(cfg_.self, cfg_.voters));
  for (auto& p : progress_) {
    if (p.id != cfg_.self) {
      p.begin_epoch_sent_ms = now_ms_;
      send(p.id, next_correlation_id(), begin_quorum_epoch_request{cfg_.cluster_id, cfg_.self, quorum_.epoch});
    }
  }
}

void node::become_resigned(bool graceful) {
  std::vector<voter_progress> progress = progress_;
  set_role(role::resigned);
  election_deadline_ms_ = now_ms_ + random_election_timeout_ms();
  if (!graceful) {
    return;
  }
  // EndQuorumEpoch with the successors most up to date first (KIP-595).
  std::vector<voter_progress> others;
  for (const auto& p : progress) {
    if (p.id != cfg_.self) {
      others.push_back(p);
    }
  }
  std::stable_sort(others.begin(), others.end(),
                   [](const voter_progress& a, const voter_progress& b) { return a.log_end_offset > b.log_end_offset; });
  std::vector<node_id> successors;
  for (const auto& p : others) {
    successors.push_back(p.id);
  }
  for (auto to : successors) {
    send(to, next_correlation_id(), end_quorum_epoch_request{cfg_.cluster_id, cfg_.self, quorum_.epoch, successors});
  }
}

void node::observe_epoch(leader_epoch epoch, node_id leader) {
  if (epoch > quorum_.epoch) {
    if (leader != no_node && leader != cfg_.self) {
      become_follower(epoch, leader);
    } else {
      become_unattached(epoch, no_node);
    }
    return;
  }
  if (epoch == quorum_.epoch && leader != no_node && leader != cfg_.self &&
      (role_ == role::unattached || role_ == role::candidate || role_ == role::prospective) &&
      (quorum_.leader_id == no_node || quorum_.leader_id == leader)) {
    // Someone won this epoch (or the prospective's leader is alive after all): follow it.
    become_follower(epoch, leader);
  }
}

// ---------------------------------------------------------------------------------------------
// elections

int64_t node::random_election_timeout_ms() {
  return random_.uniform(cfg_.election_timeout_ms, 2 * cfg_.election_timeout_ms - 1);
}

void node::send_vote_requests(bool pre_vote) {
  const leader_epoch candidate_epoch = pre_vote ? quorum_.epoch + 1 : quorum_.epoch;
  votes_sent_ms_ = now_ms_;
  for (auto v : cfg_.voters) {
    if (v != cfg_.self && std::find(granted_.begin(), granted_.end(), v) == granted_.end()) {
      send(v, next_correlation_id(),
           vote_request{cfg_.cluster_id, candidate_epoch, cfg_.self, log_.last_epoch(), log_.log_end_offset(), pre_vote,
                        awaiting_first_catch_up_});
    }
  }
}

bool node::log_up_to_date(leader_epoch last_epoch, offset last_offset) const {
  // Raft §5.4.1: compare the last entries' epochs, then the log lengths.
  return last_epoch > log_.last_epoch() ||
         (last_epoch == log_.last_epoch() && last_offset >= log_.log_end_offset());
}

bool node::heard_from_leader_recently() const {
  if (role_ == role::leader) {
    return true;
  }
  return role_ == role::follower && leader_heard_ms_ != never_ms && now_ms_ - leader_heard_ms_ < cfg_.fetch_timeout_ms;
}

bool node::may_vote_for_kind(bool candidate_awaiting_first_catch_up) const {
  // persisted_state::awaiting_first_catch_up: votes only between nodes of the same kind.
  // - A voter past its first catch-up holds every entry it ever acknowledged, so a majority of
  //   them carries Raft §5.4.1's promise whatever became of the others' disks: such a leader holds
  //   every committed entry. An awaiting candidate's own log and vote carry no such promise (its
  //   lost disk may have been part of an entry's majority), so past voters refuse it: raft_sim
  //   --disk-loss seed 1514 elected a voter refetching after a lost disk, with a partial log,
  //   when the leader failed too, and lost an entry committed before.
  // - An awaiting voter refuses a past candidate for the same reason: its vote would count for
  //   a majority it may not belong to (KIP-853's disk-loss problem; Kafka makes the operator run
  //   `kafka-storage format`).
  // - Awaiting voters vote for awaiting candidates by §5.4.1: a new cluster's elections, until
  //   its first leader commits (seed 365 with 5 voters: the first leader died before its first
  //   commit, and an earlier rule - an empty voter votes only for an empty log - refused every
  //   holder of its LeaderChange entry for good). The price: two voters without their history at
  //   once (two disks lost, or one lost while another never caught up) may elect each other.
#ifdef RINGLOG_RAFT_BREAK_VOTE_AFTER_DISK_LOSS
  return true;
#endif
  return candidate_awaiting_first_catch_up == awaiting_first_catch_up_;
}

void node::refuse_own_candidacy(const message& m, const vote_request& r) {
  // No state change: neither the epoch nor the vote moves for a request this node did not send.
  const errc code = r.cluster_id != cfg_.cluster_id   ? errc::inconsistent_cluster_id
                    : r.candidate_epoch < quorum_.epoch ? errc::fenced_leader_epoch
                                                        : errc::none;
  send(m.from, m.correlation_id, vote_response{code, quorum_.leader_id, quorum_.epoch, false});
}

void node::handle_vote_request(const message& m, const vote_request& r) {
  auto reply = [&](errc code, bool granted) {
    send(m.from, m.correlation_id, vote_response{code, quorum_.leader_id, quorum_.epoch, granted});
  };
  if (r.cluster_id != cfg_.cluster_id) {
    reply(errc::inconsistent_cluster_id, false);
    return;
  }
  if (r.candidate_id != m.from) {
    reply(errc::invalid_request, false);
    return;
  }
  if (is_observer()) {
    reply(errc::inconsistent_voter_set, false);  // an observer never votes (KIP-595)
    return;
  }
  if (r.candidate_epoch < quorum_.epoch) {
    reply(errc::fenced_leader_epoch, false);
    return;
  }
  if (r.pre_vote) {
    // KIP-996: no state change; refuse while a live leader is known (check-quorum's partner).
    reply(errc::none, !heard_from_leader_recently() && log_up_to_date(r.last_offset_epoch, r.last_offset) &&
                          may_vote_for_kind(r.candidate_awaiting_first_catch_up));
    return;
  }
  if (r.candidate_epoch > quorum_.epoch) {
    become_unattached(r.candidate_epoch, no_node);
  }
  bool grant = false;
  if (quorum_.voted_id == r.candidate_id && quorum_.leader_id == no_node) {
    grant = true;  // a retried request: the same answer
  } else {
    bool free_to_vote = quorum_.voted_id == no_node && quorum_.leader_id == no_node;
#ifdef RINGLOG_RAFT_BREAK_GRANT_TWO_VOTES_PER_EPOCH
    free_to_vote = quorum_.leader_id == no_node && role_ != role::candidate && role_ != role::leader;
#endif
    grant = free_to_vote && role_ != role::candidate && role_ != role::leader &&
            log_up_to_date(r.last_offset_epoch, r.last_offset) && may_vote_for_kind(r.candidate_awaiting_first_catch_up);
  }
  if (grant) {
    persist({quorum_.epoch, no_node, r.candidate_id});
    if (role_ == role::unattached) {
      election_deadline_ms_ = now_ms_ + random_election_timeout_ms();
    }
  }
#ifdef RINGLOG_RAFT_BREAK_SKIP_FSYNC_BEFORE_VOTE
  effects_.messages.push_back(
      message{cfg_.self, m.from, m.correlation_id, vote_response{errc::none, quorum_.leader_id, quorum_.epoch, grant}});
#else
  reply(errc::none, grant);
#endif
}

void node::handle_vote_response(const message& m, const vote_response& r) {
  if (m.correlation_id < round_first_correlation_id_ || m.correlation_id >= next_correlation_id_) {
    return;  // an earlier round's answer
  }
  if (r.leader_epoch_ > quorum_.epoch) {
    observe_epoch(r.leader_epoch_, r.leader_id);
    return;
  }
  if (role_ == role::prospective && pre_vote_round_started_) {
    if (r.vote_granted && r.error_code == errc::none) {
      if (std::find(granted_.begin(), granted_.end(), m.from) == granted_.end()) {
        granted_.push_back(m.from);
      }
      if (granted_.size() >= majority()) {
        become_candidate();
      }
    } else if (r.error_code == errc::none && r.leader_epoch_ == quorum_.epoch) {
      observe_epoch(r.leader_epoch_, r.leader_id);  // a voter still hears our leader: go back to it
    }
    return;
  }
  if (role_ == role::candidate && r.vote_granted && r.error_code == errc::none && r.leader_epoch_ == quorum_.epoch) {
    if (std::find(granted_.begin(), granted_.end(), m.from) == granted_.end()) {
      granted_.push_back(m.from);
    }
    maybe_win_election();
  }
}

// ---------------------------------------------------------------------------------------------
// leader

node::voter_progress* node::progress_of(node_id id) {
  for (auto& p : progress_) {
    if (p.id == id) {
      return &p;
    }
  }
  for (auto& p : observers_) {
    if (p.id == id) {
      return &p;
    }
  }
  return nullptr;
}

node::voter_progress* node::track_observer(node_id id) {
  RINGLOG_ASSERT(!is_voter(id), "a voter tracked as an observer");
  if (observers_.size() >= constants::observers_max) {
    // Forget observers that have not fetched within the fetch timeout (stopped or moved on).
    std::erase_if(observers_, [&](const voter_progress& p) {
      return p.last_fetch_ms == never_ms || now_ms_ - p.last_fetch_ms >= cfg_.fetch_timeout_ms;
    });
  }
  if (observers_.size() >= constants::observers_max) {
    return nullptr;
  }
  observers_.push_back(voter_progress{.id = id});
  return &observers_.back();
}

std::vector<node_id> node::tracked_observers() const {
  std::vector<node_id> out;
  for (const auto& p : observers_) {
    out.push_back(p.id);
  }
  return out;
}

void node::append_as_leader(entry_type type, bytes payload) {
  entry e{log_.log_end_offset(), quorum_.epoch, type, std::move(payload)};
  log_.append(e);
  unsynced_writes_ = true;
  effects_.log_writes.emplace_back(append_entries{{std::move(e)}});
  answer_parked_fetches(true);
}

fetch_response node::error_fetch_response(errc code) const {
  fetch_response out;
  out.error_code = code;
  out.high_watermark = high_watermark_;
  out.log_start_offset = log_.log_start_offset();
  out.current_leader = {quorum_.leader_id, quorum_.epoch};
  return out;
}

void node::handle_fetch_request(const message& m, const fetch_request& r) {
  if (r.cluster_id != cfg_.cluster_id) {
    send(m.from, m.correlation_id, error_fetch_response(errc::inconsistent_cluster_id));
    return;
  }
  if (r.current_leader_epoch > quorum_.epoch && !is_voter(m.from)) {
    // An observer's epoch is hearsay from some voter (a candidate's, maybe): it must not depose
    // a leader (KafkaRaftClient answers UNKNOWN_LEADER_EPOCH without a state change).
    send(m.from, m.correlation_id, error_fetch_response(errc::unknown_leader_epoch));
    return;
  }
  if (r.current_leader_epoch > quorum_.epoch) {
    observe_epoch(r.current_leader_epoch, no_node);  // we are stale
  }
  if (role_ != role::leader) {
    send(m.from, m.correlation_id, error_fetch_response(errc::not_leader_or_follower));
    return;
  }
  if (r.current_leader_epoch < quorum_.epoch) {
    send(m.from, m.correlation_id, error_fetch_response(errc::fenced_leader_epoch));
    return;
  }
  if (r.replica_id != m.from || r.fetch_offset < offset{0}) {
    send(m.from, m.correlation_id, error_fetch_response(errc::invalid_request));
    return;
  }
  fetch_response out = error_fetch_response(errc::none);
  // KIP-595 fetch validation: below our log start -> snapshot; otherwise the follower's last
  // epoch must end at or after its fetch offset in our log, else it diverged.
  const auto end = r.fetch_offset < log_.log_start_offset() ? std::nullopt
                                                             : log_.end_offset_for_epoch(r.last_fetched_epoch);
  if (!end.has_value()) {
    out.has_snapshot_id = true;
    out.snapshot_id = log_.snapshot_id();
    send(m.from, m.correlation_id, std::move(out));
    return;
  }
  if (end->epoch != r.last_fetched_epoch || end->end_offset < r.fetch_offset) {
    out.has_diverging_epoch = true;
    out.diverging_epoch = *end;
    send(m.from, m.correlation_id, std::move(out));
    return;
  }
  auto* p = progress_of(m.from);
  if (p == nullptr && !is_voter(m.from)) {
    p = track_observer(m.from);
    if (p == nullptr) {
      // constants::observers_max live observers: this one is refused and looks again later.
      send(m.from, m.correlation_id, error_fetch_response(errc::invalid_request));
      return;
    }
  }
  RINGLOG_ASSERT(p != nullptr, "fetch from a voter without progress");
  p->log_end_offset = r.fetch_offset;
  p->last_fetch_ms = now_ms_;
  p->begin_epoch_acked = true;  // it fetches from us: it knows the epoch
  p->parked = false;
  maybe_advance_high_watermark_as_leader();
  if (r.fetch_offset == log_.log_end_offset() && r.max_wait_ms > 0) {
    p->parked = true;  // long poll (Kafka's MaxWaitMs): answered on new data, HW change or timeout
    p->parked_correlation_id = m.correlation_id;
    p->parked_fetch_offset = r.fetch_offset;
    p->parked_until_ms = now_ms_ + std::min(r.max_wait_ms, constants::fetch_max_wait_ms);
    return;
  }
  answer_fetch(m.from, m.correlation_id, r.fetch_offset);
}

void node::answer_fetch(node_id to, int64_t correlation_id, offset fetch_offset) {
  fetch_response out = error_fetch_response(errc::none);
  size_t payload_bytes = 0;
  for (offset o = fetch_offset; o < log_.log_end_offset() && out.records.size() < constants::fetch_entries_max; ++o) {
    const entry& e = log_.at(o);
    if (!out.records.empty() && payload_bytes + e.payload.size() > constants::fetch_bytes_max) {
      break;
    }
    payload_bytes += e.payload.size();
    out.records.push_back(e);
  }
  send(to, correlation_id, std::move(out));
}

void node::answer_parked_fetches(bool all) {
  for (auto* group : {&progress_, &observers_}) {
    for (auto& p : *group) {
      if (p.parked && (all || now_ms_ >= p.parked_until_ms)) {
        p.parked = false;
        answer_fetch(p.id, p.parked_correlation_id, p.parked_fetch_offset);
      }
    }
  }
}

void node::maybe_advance_high_watermark_as_leader() {
  if (role_ != role::leader) {
    return;
  }
  std::vector<offset> ends;
  for (const auto& p : progress_) {
#ifdef RINGLOG_RAFT_BREAK_COUNT_UNSYNCED_LEADER
    ends.push_back(p.id == cfg_.self ? log_.log_end_offset() : p.log_end_offset);
#else
    ends.push_back(p.id == cfg_.self ? durable_end_ : p.log_end_offset);
#endif
  }
  // Observers never count: only a majority of the voters commits (KIP-595).
#ifdef RINGLOG_RAFT_BREAK_COUNT_OBSERVERS
  for (const auto& p : observers_) {
    ends.push_back(p.log_end_offset);
  }
#endif
  std::sort(ends.begin(), ends.end(), std::greater<>());
  const offset replicated = ends[majority() - 1];  // the majority-th largest durable end offset
  if (replicated <= high_watermark_ || replicated > log_.log_end_offset()) {
    return;
  }
#ifndef RINGLOG_RAFT_BREAK_COMMIT_OLD_EPOCH_BY_COUNT
  // Raft §5.4.2: only an entry of the current epoch is committed by counting replicas.
  if (log_.at(replicated - 1).epoch != quorum_.epoch) {
    return;
  }
#endif
  advance_high_watermark(replicated);
  note_catch_up_target(replicated);   // an entry of this leader's epoch is committed
  maybe_finish_first_catch_up();
  answer_parked_fetches(true);
}

void node::leader_tick() {
  // Check-quorum: resign when a majority did not fetch within the fetch timeout.
  if (now_ms_ - leader_since_ms_ >= cfg_.fetch_timeout_ms) {
    size_t live = 0;
    for (const auto& p : progress_) {
      if (p.id == cfg_.self || (p.last_fetch_ms != never_ms && now_ms_ - p.last_fetch_ms < cfg_.fetch_timeout_ms)) {
        ++live;
      }
    }
    if (live < majority()) {
      become_resigned(false);
      return;
    }
  }
  answer_parked_fetches(false);
  for (auto& p : progress_) {
    if (p.id != cfg_.self && !p.begin_epoch_acked && now_ms_ - p.begin_epoch_sent_ms >= constants::request_retry_ms) {
      p.begin_epoch_sent_ms = now_ms_;
      send(p.id, next_correlation_id(), begin_quorum_epoch_request{cfg_.cluster_id, cfg_.self, quorum_.epoch});
    }
  }
}

void node::handle_begin_quorum_epoch_response(const message& m, const begin_quorum_epoch_response& r) {
  if (r.leader_epoch_ > quorum_.epoch) {
    observe_epoch(r.leader_epoch_, r.leader_id);
    return;
  }
  if (role_ == role::leader && r.error_code == errc::none && r.leader_epoch_ == quorum_.epoch) {
    if (auto* p = progress_of(m.from)) {
      p->begin_epoch_acked = true;
    }
  }
}

void node::handle_fetch_snapshot_request(const message& m, const fetch_snapshot_request& r) {
  fetch_snapshot_response out;
  out.current_leader = {quorum_.leader_id, quorum_.epoch};
  out.snapshot_id = r.snapshot_id;
  const bool observer_ahead = r.current_leader_epoch > quorum_.epoch && !is_voter(m.from);
  if (r.current_leader_epoch > quorum_.epoch && !observer_ahead) {
    observe_epoch(r.current_leader_epoch, no_node);
    out.current_leader = {quorum_.leader_id, quorum_.epoch};
  }
  if (r.cluster_id != cfg_.cluster_id) {
    out.error_code = errc::inconsistent_cluster_id;
  } else if (observer_ahead) {
    out.error_code = errc::unknown_leader_epoch;  // as for Fetch: an observer never deposes a leader
  } else if (role_ != role::leader) {
    out.error_code = errc::not_leader_or_follower;
  } else if (r.current_leader_epoch < quorum_.epoch) {
    out.error_code = errc::fenced_leader_epoch;
  } else if (r.snapshot_id != log_.snapshot_id() || log_.snapshot_id().end_offset == offset{0}) {
    out.error_code = errc::snapshot_not_found;
  } else if (r.position > snapshot_payload_.size()) {
    out.error_code = errc::position_out_of_range;
  } else {
    const uint64_t n = std::min<uint64_t>({r.max_bytes, constants::snapshot_chunk_bytes_max,
                                           snapshot_payload_.size() - r.position});
    out.size = snapshot_payload_.size();
    out.position = r.position;
    out.unaligned_records.assign(snapshot_payload_.begin() + static_cast<ptrdiff_t>(r.position),
                                 snapshot_payload_.begin() + static_cast<ptrdiff_t>(r.position + n));
  }
  send(m.from, m.correlation_id, std::move(out));
}

// ---------------------------------------------------------------------------------------------
// follower

void node::maybe_send_next_fetch() {
  if (role_ != role::follower) {
    return;
  }
  if (awaiting_fsync_ && unsynced_writes_) {
    return;  // our fetch_offset may only count fsynced entries
  }
  awaiting_fsync_ = false;
  if (fetch_.correlation_id != -1 || fetch_snapshot_.correlation_id != -1) {
    return;
  }
  if (downloading_snapshot_) {
    send_fetch_snapshot();
  } else {
    send_fetch();
  }
}

void node::send_fetch() {
  fetch_ = {next_correlation_id(), now_ms_};
  send(quorum_.leader_id, fetch_.correlation_id,
       fetch_request{cfg_.cluster_id, cfg_.self, quorum_.epoch, log_.log_end_offset(), log_.last_epoch(),
                     constants::fetch_max_wait_ms});
}

void node::send_fetch_snapshot() {
  fetch_snapshot_ = {next_correlation_id(), now_ms_};
  send(quorum_.leader_id, fetch_snapshot_.correlation_id,
       fetch_snapshot_request{cfg_.cluster_id, cfg_.self, quorum_.epoch, download_snapshot_id_,
                              download_buffer_.size(), constants::snapshot_chunk_bytes_max});
}

void node::follower_tick() {
  if (now_ms_ >= fetch_deadline_ms_) {
    if (is_observer()) {
      observer_leader_lost();
      return;
    }
    become_prospective();  // KIP-996: a follower that lost its leader asks for pre-votes first
    return;
  }
  const int64_t retry_after_ms = constants::fetch_max_wait_ms + constants::request_retry_ms;
  if (fetch_.correlation_id != -1 && now_ms_ - fetch_.sent_ms >= retry_after_ms) {
    fetch_ = {};
    maybe_send_next_fetch();
  }
  if (fetch_snapshot_.correlation_id != -1 && now_ms_ - fetch_snapshot_.sent_ms >= retry_after_ms) {
    fetch_snapshot_ = {};
    maybe_send_next_fetch();
  }
}

void node::leader_lost(int64_t election_delay_ms) {
  leader_heard_ms_ = never_ms;  // voters may grant pre-votes again
  fetch_deadline_ms_ = std::min(fetch_deadline_ms_, now_ms_ + election_delay_ms);
}

void node::handle_fetch_response(const message& m, const fetch_response& r) {
  if (role_ == role::unattached && is_observer() && fetch_.correlation_id != -1 &&
      m.correlation_id == fetch_.correlation_id) {
    handle_discovery_fetch_response(m, r);
    return;
  }
  if (role_ != role::follower || m.correlation_id != fetch_.correlation_id) {
    return;  // late, duplicated, or from a previous leadership
  }
  fetch_ = {};
  if (r.current_leader.leader_epoch_ > quorum_.epoch) {
    observe_epoch(r.current_leader.leader_epoch_, r.current_leader.leader_id);
    return;
  }
  if (m.from != quorum_.leader_id) {
    return;
  }
  if (r.error_code != errc::none && is_observer()) {
    observer_leader_lost();  // refused (it resigned, or it tracks too many observers): look again
    return;
  }
  if (r.error_code == errc::not_leader_or_follower) {
    leader_lost(random_.uniform(0, cfg_.election_backoff_max_ms));  // it resigned
    return;
  }
  if (r.error_code != errc::none) {
    return;  // retried on the next tick
  }
  leader_heard_ms_ = now_ms_;
  fetch_deadline_ms_ = now_ms_ + cfg_.fetch_timeout_ms;
  if (r.has_snapshot_id) {
    if (!downloading_snapshot_ || download_snapshot_id_ != r.snapshot_id) {
      downloading_snapshot_ = true;
      download_snapshot_id_ = r.snapshot_id;
      download_buffer_.clear();
    }
    maybe_send_next_fetch();
    return;
  }
  if (r.has_diverging_epoch) {
    // Kafka's truncateToEndOffset: the end of the diverging epoch in our own log, capped by the
    // leader's end of it. Never below the high watermark (committed entries match the leader's);
    // a broken build may try, and the simulator's invariants then report it.
    const auto local = log_.end_offset_for_epoch(r.diverging_epoch.epoch);
    offset to = local.has_value() ? local->end_offset : log_.log_start_offset();
    if (local.has_value() && local->epoch == r.diverging_epoch.epoch) {
      to = std::min(to, r.diverging_epoch.end_offset);
    }
    to = std::clamp(to, log_.log_start_offset(), log_.log_end_offset());
    if (to < log_.log_end_offset()) {
      log_.truncate_suffix(to);
      durable_end_ = std::min(durable_end_, to);
      unsynced_writes_ = true;
      awaiting_fsync_ = true;
      effects_.log_writes.emplace_back(truncate_suffix{to});
    }
    maybe_send_next_fetch();
    return;
  }
  if (!r.records.empty() && r.records.front().offset_ == log_.log_end_offset()) {
    std::vector<entry> appended;
    for (const auto& e : r.records) {
      if (e.offset_ != log_.log_end_offset() || e.epoch < log_.last_epoch()) {
        break;
      }
      log_.append(e);
      appended.push_back(e);
    }
    unsynced_writes_ = true;
    awaiting_fsync_ = true;
    effects_.log_writes.emplace_back(append_entries{std::move(appended)});
  }
  // Kafka: a follower's high watermark is the leader's, capped by its own log end. Our prefix
  // matches the leader's up to the log end (the leader validated it).
  const offset hw = std::min(r.high_watermark, log_.log_end_offset());
  if (hw > high_watermark_) {
    advance_high_watermark(hw);
  }
  if (r.high_watermark > log_.log_start_offset() && r.high_watermark <= log_.log_end_offset() &&
      log_.epoch_at(r.high_watermark - 1) == quorum_.epoch) {
    // The leader's high watermark covers an entry of its own epoch, so every entry committed
    // before its election (it holds them all, Raft §5.4.3), and our log holds it too.
    note_catch_up_target(r.high_watermark);
  }
  maybe_finish_first_catch_up();
  maybe_send_next_fetch();
}

void node::handle_fetch_snapshot_response(const message& m, const fetch_snapshot_response& r) {
  if (role_ != role::follower || m.correlation_id != fetch_snapshot_.correlation_id) {
    return;
  }
  fetch_snapshot_ = {};
  if (r.current_leader.leader_epoch_ > quorum_.epoch) {
    observe_epoch(r.current_leader.leader_epoch_, r.current_leader.leader_id);
    return;
  }
  if (r.error_code == errc::snapshot_not_found || r.error_code == errc::position_out_of_range) {
    downloading_snapshot_ = false;  // the leader has a newer one: ask again with Fetch
    download_buffer_.clear();
    maybe_send_next_fetch();
    return;
  }
  if (r.error_code != errc::none || !downloading_snapshot_ || r.snapshot_id != download_snapshot_id_ ||
      r.position != download_buffer_.size() || r.size > constants::snapshot_bytes_max ||
      r.position + r.unaligned_records.size() > r.size) {
    return;  // retried on the next tick
  }
  leader_heard_ms_ = now_ms_;
  fetch_deadline_ms_ = now_ms_ + cfg_.fetch_timeout_ms;
  download_buffer_.insert(download_buffer_.end(), r.unaligned_records.begin(), r.unaligned_records.end());
  if (download_buffer_.size() < r.size) {
    maybe_send_next_fetch();
    return;
  }
  // Complete (KIP-630): the snapshot replaces our whole log; fetching resumes at its end offset.
  const offset_and_epoch id = download_snapshot_id_;
  downloading_snapshot_ = false;
  snapshot_payload_ = std::move(download_buffer_);
  download_buffer_.clear();
  log_.reset(id);
  durable_end_ = std::min(durable_end_, id.end_offset);
  unsynced_writes_ = true;
  awaiting_fsync_ = true;
  effects_.log_writes.emplace_back(install_snapshot{id, snapshot_payload_});
  if (id.end_offset > high_watermark_) {
    high_watermark_ = id.end_offset;
    effects_.high_watermark = high_watermark_;
    effects_.committed.clear();
    effects_.apply_snapshot = snapshot_to_apply{id, snapshot_payload_};
  }
  maybe_send_next_fetch();
}

void node::handle_begin_quorum_epoch_request(const message& m, const begin_quorum_epoch_request& r) {
  errc code = errc::none;
  if (r.cluster_id != cfg_.cluster_id) {
    code = errc::inconsistent_cluster_id;
  } else if (r.leader_id != m.from) {
    code = errc::invalid_request;
  } else if (r.leader_epoch_ < quorum_.epoch) {
    code = errc::fenced_leader_epoch;
  } else if (r.leader_epoch_ > quorum_.epoch) {
    become_follower(r.leader_epoch_, r.leader_id);
    leader_heard_ms_ = now_ms_;
  } else if (role_ == role::follower && quorum_.leader_id == r.leader_id) {
    leader_heard_ms_ = now_ms_;
    fetch_deadline_ms_ = now_ms_ + cfg_.fetch_timeout_ms;
  } else {
    observe_epoch(r.leader_epoch_, r.leader_id);
    if (role_ == role::follower && quorum_.leader_id == r.leader_id) {
      leader_heard_ms_ = now_ms_;
    }
  }
  send(m.from, m.correlation_id, begin_quorum_epoch_response{code, quorum_.leader_id, quorum_.epoch});
}

void node::peer_unreachable(node_id peer) {
  if (is_observer()) {
    if (role_ == role::follower && quorum_.leader_id == peer) observer_leader_lost();
    return;
  }
  if (role_ != role::follower || quorum_.leader_id != peer || leader_heard_ms_ == never_ms) return;
  std::vector<node_id> others;
  for (const auto v : cfg_.voters) {
    if (v != peer) others.push_back(v);
  }
  const auto rank = static_cast<int64_t>(std::find(others.begin(), others.end(), cfg_.self) - others.begin());
  const int64_t slot_ms = cfg_.election_backoff_max_ms / static_cast<int64_t>(cfg_.voters.size());
  leader_lost(rank * slot_ms + random_.uniform(0, slot_ms));
}

void node::handle_end_quorum_epoch_request(const message& m, const end_quorum_epoch_request& r) {
  if (r.cluster_id != cfg_.cluster_id) {
    send(m.from, m.correlation_id, end_quorum_epoch_response{errc::inconsistent_cluster_id, quorum_.leader_id, quorum_.epoch});
    return;
  }
  if (r.leader_epoch_ > quorum_.epoch) {
    observe_epoch(r.leader_epoch_, no_node);
  } else if (r.leader_epoch_ == quorum_.epoch && role_ == role::follower && quorum_.leader_id == r.leader_id &&
             is_observer()) {
    observer_leader_lost();
  } else if (r.leader_epoch_ == quorum_.epoch && role_ == role::follower && quorum_.leader_id == r.leader_id) {
    // The more up to date we are (earlier in preferred_successors), the sooner we stand (KIP-595).
    const auto it = std::find(r.preferred_successors.begin(), r.preferred_successors.end(), cfg_.self);
    const auto rank = static_cast<int64_t>(it - r.preferred_successors.begin());
    const int64_t slot_ms = cfg_.election_backoff_max_ms / static_cast<int64_t>(cfg_.voters.size());
    leader_lost(rank * slot_ms + random_.uniform(0, slot_ms));
  }
  send(m.from, m.correlation_id, end_quorum_epoch_response{errc::none, quorum_.leader_id, quorum_.epoch});
}

// ---------------------------------------------------------------------------------------------
// observer (KIP-595: a non-voter replicates the log but never votes, stands or counts)

void node::observer_leader_lost() {
  // Back to finding the leader. The quorum state keeps the last known leader: an observer's vote
  // and leadership never matter, so nothing needs to be written, and a voter that still names the
  // same leader in the same epoch sends us straight back to it.
  leader_heard_ms_ = never_ms;
  set_role(role::unattached);
  discovery_next_ms_ = now_ms_;
}

void node::observer_unattached_tick() {
  if (fetch_.correlation_id != -1 && now_ms_ - fetch_.sent_ms >= constants::request_retry_ms) {
    fetch_ = {};  // lost, or the voter is down: ask another one now
    discovery_next_ms_ = now_ms_;
  }
  if (fetch_.correlation_id != -1 || now_ms_ < discovery_next_ms_) {
    return;
  }
  // A random voter each time (seeded): a down voter costs one retry, not the observer's progress.
  const auto i = static_cast<size_t>(random_.uniform(0, static_cast<int64_t>(cfg_.voters.size()) - 1));
  fetch_ = {next_correlation_id(), now_ms_};
  // max_wait_ms 0: a leader must not park a question it can answer at once.
  send(cfg_.voters[i], fetch_.correlation_id,
       fetch_request{cfg_.cluster_id, cfg_.self, quorum_.epoch, log_.log_end_offset(), log_.last_epoch(), 0});
}

void node::handle_discovery_fetch_response(const message& m, const fetch_response& r) {
  fetch_ = {};
  discovery_next_ms_ = now_ms_ + constants::observer_discovery_backoff_ms;
  const leader_id_and_epoch& cl = r.current_leader;
  // The answer names the leader it knows (not_leader_or_follower and fenced_leader_epoch answers
  // carry it too, KafkaRaftClient's maybeHandleCommonResponse). Only a voter can lead.
  if (cl.leader_epoch_ < quorum_.epoch) {
    return;  // a stale voter
  }
  if (cl.leader_id == no_node || cl.leader_id == cfg_.self || !is_voter(cl.leader_id)) {
    if (cl.leader_epoch_ > quorum_.epoch) {
      become_unattached(cl.leader_epoch_, no_node);  // a newer epoch without a leader yet
    }
    return;
  }
  (void)m;
  become_follower(cl.leader_epoch_, cl.leader_id);
}

// ---------------------------------------------------------------------------------------------
// shared

void node::advance_high_watermark(offset new_high_watermark) {
  RINGLOG_ASSERT_OP(new_high_watermark.value(), >, high_watermark_.value());
  RINGLOG_ASSERT_OP(new_high_watermark.value(), <=, log_.log_end_offset().value());
  for (offset o = std::max(high_watermark_, log_.log_start_offset()); o < new_high_watermark; ++o) {
    effects_.committed.push_back(log_.at(o));
  }
  high_watermark_ = new_high_watermark;
  effects_.high_watermark = high_watermark_;
}

void node::note_catch_up_target(offset target) {
  if (awaiting_first_catch_up_ && target > catch_up_target_) {
    catch_up_target_ = target;
  }
}

void node::maybe_finish_first_catch_up() {
  // Only what is durable counts: after a crash the node is rebuilt from its durable log, and the
  // driver records the end of the wait durably too.
  if (!awaiting_first_catch_up_ || catch_up_target_ <= offset{0} || durable_end_ < catch_up_target_) {
    return;
  }
  awaiting_first_catch_up_ = false;
  effects_.caught_up_first_time = true;
}

void node::send(node_id to, int64_t correlation_id, message_body body) {
  message m{cfg_.self, to, correlation_id, std::move(body)};
  if (quorum_version_persisted_ < quorum_version_requested_) {
    RINGLOG_ASSERT_OP(held_.size(), <, constants::held_messages_max);
    held_.push_back(std::move(m));
    return;
  }
  effects_.messages.push_back(std::move(m));
}

void node::release_held_messages() {
  if (quorum_version_persisted_ < quorum_version_requested_) {
    return;
  }
  for (auto& m : held_) {
    effects_.messages.push_back(std::move(m));
  }
  held_.clear();
}

bool node::is_voter(node_id id) const { return std::binary_search(cfg_.voters.begin(), cfg_.voters.end(), id); }

}  // namespace ringlog::raft
