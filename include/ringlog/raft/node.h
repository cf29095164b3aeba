#pragma once
// One KRaft voter as a pure state machine (KIP-595 pull-based Raft, KIP-996 pre-vote, KIP-630
// snapshots; Raft paper §5). It never touches sockets, threads, clocks, randomness or files: the
// driver feeds it inputs (time, messages, proposals, fsync completions) and carries out the
// effects it returns (see effects.h for their order).
//
// Inputs:                                   Effects (node::take_effects()):
//   tick(now_ms)                               quorum-state write, log writes, messages,
//   handle(message)                            committed entries / snapshot to apply,
//   propose(payload) -> offset                 high watermark, role change
//   on_quorum_state_persisted(version)
//   on_append_fsynced(position)
//   on_snapshot_created(snapshot_id, payload)
//   resign()
//
// Durability rules the node enforces (so a driver cannot get them wrong):
//   - every message is held inside the node while a quorum-state write it may depend on (a vote,
//     a new epoch, a leadership) is not yet reported durable;
//   - the leader counts its own entries toward the high watermark only once fsynced; a follower
//     sends its next Fetch (whose fetch_offset the leader counts) only after its writes are fsynced.
// Restart: construct a new node from what was durable (quorum state, snapshot, log entries).
//
// Observers (KIP-595, KafkaRaftClient's observer states): a node whose id is not among the voters
// is never prospective, candidate or leader and grants no vote. Without a known leader
// (unattached) it sends a Fetch to a random voter every constants::observer_discovery_backoff_ms
// and follows the leader named by the answer's current_leader; as a follower it fetches exactly
// like a voter (snapshots, divergence); on a fetch timeout, a refusal by its leader or the leader
// being unreachable it goes back to unattached and asks again. The leader tracks observers apart
// from the voters (at most constants::observers_max), answers their long polls, and never counts
// them for the high watermark or check-quorum.

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "ringlog/raft/config.h"
#include "ringlog/raft/effects.h"
#include "ringlog/raft/errc.h"
#include "ringlog/raft/memory_log.h"
#include "ringlog/raft/messages.h"
#include "ringlog/raft/random.h"
#include "ringlog/raft/types.h"

namespace ringlog::raft {

/// What a node is rebuilt from after a restart: exactly what the driver had fsynced.
struct persisted_state {
  quorum_state quorum;
  /// The latest snapshot ({0,0} = none) and its payload.
  offset_and_epoch snapshot_id;
  bytes snapshot_payload;
  /// Log entries; those below snapshot_id.end_offset are ignored. Must be consecutive.
  std::vector<entry> entries;
  /// The data directory was formatted on this start, or on an earlier one that never caught up
  /// with a leader (the driver keeps this on disk: ringlog writes meta.properties only once
  /// caught up). Such a voter may be one that lost its disk: its previous incarnation may have
  /// helped commit entries this log no longer holds, so its vote no longer carries the promise
  /// of Raft §5.4.1 (the vote-granting majority holds every committed entry). Votes and pre-votes
  /// go only between nodes of the same kind: until it has caught up (effects::caught_up_first_time)
  /// it grants only to candidates that also still await their first catch-up, as every voter of a
  /// new cluster does until its first leader commits, and voters past theirs grant only to
  /// candidates past theirs (vote_request::candidate_awaiting_first_catch_up). KIP-853 calls this
  /// the disk-loss problem of static quorums; Kafka makes the operator run `kafka-storage format`.
  /// Ignored in a quorum of one voter.
  bool awaiting_first_catch_up = false;
};

class node {
 public:
  /// `random` must outlive the node. `first_correlation_id` must differ between incarnations of
  /// one node that share a transport (responses to a crashed incarnation must not match).
  node(config cfg, persisted_state state, random_source& random, int64_t now_ms, int64_t first_correlation_id = 1);

  // ---- inputs ----
  /// Advances the node's clock (monotonic, ms; a driver-local clock) and fires due timers.
  void tick(int64_t now_ms);
  /// A message from a peer, at the time of the last tick. Malformed or stale messages are ignored
  /// or answered with an error code; nothing here fails.
  void handle(const message& m);
  /// Leader only: appends `payload` as a data entry of the current epoch; returns its offset.
  /// Errors: not_leader_or_follower (message names the known leader), record_too_large,
  /// uncommitted_limit_reached.
  result<offset> propose(bytes payload);
  /// The quorum-state write with this version (and every earlier one) is durable.
  void on_quorum_state_persisted(uint64_t version);
  /// The log is durable up to `position` ({end offset, epoch of the entry below it}). A stale
  /// report (the log was truncated and rewritten since) is recognized and ignored.
  void on_append_fsynced(offset_and_epoch position);
  /// The state machine stored a snapshot of everything below snapshot_id.end_offset. Requires
  /// log_start_offset < end_offset <= snapshot_limit() and the epoch of the entry below it.
  /// Errors: offset_out_of_range, invalid_request. Emits delete_prefix.
  result<void> on_snapshot_created(offset_and_epoch snapshot_id, bytes payload);
  /// Graceful resignation of a leader (controlled shutdown): EndQuorumEpoch to the other voters.
  void resign();
  /// The driver learned that `peer`'s process is gone (its listener refused a connection, a
  /// definite answer unlike a timeout). A follower of `peer` treats its leader as lost at once
  /// instead of after fetch_timeout_ms, standing after a slot of election_backoff_max_ms ranked by
  /// its place among the voters (as on EndQuorumEpoch, KIP-595) so the survivors rarely split
  /// their votes. Only liveness changes: pre-votes (KIP-996) and votes still decide, and a voter
  /// that hears the leader refuses them. Any other role or peer: ignored.
  void peer_unreachable(node_id peer);

  // ---- outputs ----
  /// The effects accumulated since the last call; the node forgets them.
  effects take_effects();

  // ---- observers ----
  [[nodiscard]] raft::role role() const { return role_; }
  [[nodiscard]] node_id id() const { return cfg_.self; }
  [[nodiscard]] leader_epoch epoch() const { return quorum_.epoch; }
  [[nodiscard]] node_id leader_id() const { return quorum_.leader_id; }
  [[nodiscard]] const quorum_state& quorum() const { return quorum_; }
  [[nodiscard]] offset high_watermark() const { return high_watermark_; }
  [[nodiscard]] const memory_log& log() const { return log_; }
  /// Highest end offset a snapshot may cover now: min(high watermark, durable log end).
  [[nodiscard]] offset snapshot_limit() const;
  [[nodiscard]] offset durable_end_offset() const { return durable_end_; }
  /// True when this node is not among the voters (an observer, KIP-595).
  [[nodiscard]] bool is_observer() const { return !is_voter(cfg_.self); }
  /// The last node that refused one of this node's requests with inconsistent_cluster_id (its
  /// cluster.id is not ours: this node can never join that quorum); no_node when none did.
  [[nodiscard]] node_id cluster_id_refused_by() const { return cluster_id_refused_by_; }
  /// persisted_state::awaiting_first_catch_up, until this node caught up with a leader: its log
  /// durably held the leader's high watermark, and that high watermark covered an entry of the
  /// leader's own epoch (so every entry committed before that leader's election).
  [[nodiscard]] bool awaiting_first_catch_up() const { return awaiting_first_catch_up_; }
  /// Leader only: the observers whose fetches it tracks now (ids ascending by first fetch).
  [[nodiscard]] std::vector<node_id> tracked_observers() const;

 private:
  struct voter_progress {
    node_id id = no_node;
    offset log_end_offset{-1};     // from its last valid Fetch; -1 = none yet in this epoch
    int64_t last_fetch_ms = -1;    // -1 = never in this epoch
    int64_t begin_epoch_sent_ms = -1;
    bool begin_epoch_acked = false;
    bool parked = false;           // a caught-up Fetch waits for data (long poll)
    int64_t parked_correlation_id = 0;
    int64_t parked_until_ms = 0;
    offset parked_fetch_offset{0};
  };
  struct in_flight {
    int64_t correlation_id = -1;  // -1 = nothing in flight
    int64_t sent_ms = 0;
  };

  // transitions
  void become_unattached(leader_epoch epoch, node_id voted);
  void become_follower(leader_epoch epoch, node_id leader);
  void become_prospective();
  void become_candidate();
  void become_leader();
  void become_resigned(bool graceful);
  void set_role(raft::role r);
  void persist(quorum_state qs);
  void observe_epoch(leader_epoch epoch, node_id leader);

  // elections
  void start_pre_vote_round();
  void send_vote_requests(bool pre_vote);
  /// A vote request naming this node as its candidate: answered vote_granted=false, no state change.
  void refuse_own_candidacy(const message& m, const vote_request& r);
  void handle_vote_request(const message& m, const vote_request& r);
  void handle_vote_response(const message& m, const vote_response& r);
  [[nodiscard]] bool log_up_to_date(leader_epoch last_epoch, offset last_offset) const;
  [[nodiscard]] bool heard_from_leader_recently() const;
  /// The vote rule of persisted_state::awaiting_first_catch_up: true when a candidate of this
  /// kind (vote_request::candidate_awaiting_first_catch_up) may have this node's (pre-)vote, which
  /// then still needs §5.4.1's log comparison: only when both await their first catch-up or both
  /// are past it.
  [[nodiscard]] bool may_vote_for_kind(bool candidate_awaiting_first_catch_up) const;
  /// A node awaiting its first catch-up learned a committed position it must hold durably
  /// (`target`: a leader's high watermark covering an entry of that leader's epoch).
  void note_catch_up_target(offset target);
  /// Ends the wait once the durable log reaches the target (effects::caught_up_first_time).
  void maybe_finish_first_catch_up();
  void maybe_win_election();
  int64_t random_election_timeout_ms();

  // leader
  void handle_fetch_request(const message& m, const fetch_request& r);
  void handle_fetch_snapshot_request(const message& m, const fetch_snapshot_request& r);
  void handle_begin_quorum_epoch_response(const message& m, const begin_quorum_epoch_response& r);
  void answer_fetch(node_id to, int64_t correlation_id, offset fetch_offset);
  void answer_parked_fetches(bool all);
  void maybe_advance_high_watermark_as_leader();
  void leader_tick();
  void append_as_leader(entry_type type, bytes payload);
  voter_progress* progress_of(node_id id);
  [[nodiscard]] fetch_response error_fetch_response(errc code) const;

  // follower
  void handle_fetch_response(const message& m, const fetch_response& r);
  void handle_fetch_snapshot_response(const message& m, const fetch_snapshot_response& r);
  void handle_begin_quorum_epoch_request(const message& m, const begin_quorum_epoch_request& r);
  void handle_end_quorum_epoch_request(const message& m, const end_quorum_epoch_request& r);
  void send_fetch();
  void send_fetch_snapshot();
  void maybe_send_next_fetch();
  void follower_tick();
  void leader_lost(int64_t election_delay_ms);

  // observer
  void observer_unattached_tick();
  void observer_leader_lost();
  void handle_discovery_fetch_response(const message& m, const fetch_response& r);
  voter_progress* track_observer(node_id id);

  // shared
  void advance_high_watermark(offset new_high_watermark);
  void send(node_id to, int64_t correlation_id, message_body body);
  int64_t next_correlation_id() { return next_correlation_id_++; }
  void release_held_messages();
  [[nodiscard]] bool is_voter(node_id id) const;
  [[nodiscard]] size_t majority() const { return cfg_.voters.size() / 2 + 1; }

  config cfg_;
  random_source& random_;
  int64_t now_ms_;
  int64_t next_correlation_id_;

  raft::role role_ = raft::role::unattached;
  quorum_state quorum_;
  uint64_t quorum_version_requested_ = 0;
  uint64_t quorum_version_persisted_ = 0;
  std::vector<message> held_;  // waiting for quorum_version_persisted_ >= quorum_version_requested_
  node_id cluster_id_refused_by_ = no_node;   // cluster_id_refused_by()
  bool awaiting_first_catch_up_ = false;      // awaiting_first_catch_up()
  offset catch_up_target_{0};                 // 0 = none learnt yet (see note_catch_up_target)

  memory_log log_;
  bytes snapshot_payload_;
  offset durable_end_{0};  // the log is fsynced below this offset
  bool unsynced_writes_ = false;
  offset high_watermark_{0};

  // timers (node-local ms)
  int64_t election_deadline_ms_ = 0;   // unattached, prospective, candidate, resigned
  int64_t fetch_deadline_ms_ = 0;      // follower: no word from the leader until then -> pre-vote
  int64_t leader_heard_ms_ = -1;       // last Fetch response / BeginQuorumEpoch from the leader
  int64_t leader_since_ms_ = 0;
  bool pre_vote_round_started_ = false;

  // elections
  int64_t round_first_correlation_id_ = 0;  // responses to earlier rounds are ignored
  std::vector<node_id> granted_;
  int64_t votes_sent_ms_ = 0;
  uint64_t candidacy_version_ = 0;          // the quorum-state write that recorded our own vote

  // follower
  in_flight fetch_;
  in_flight fetch_snapshot_;
  bool awaiting_fsync_ = false;             // next Fetch waits for the last writes' fsync
  bool downloading_snapshot_ = false;
  offset_and_epoch download_snapshot_id_;
  bytes download_buffer_;

  // observer without a leader: the next discovery Fetch goes out at this time (node-local ms)
  int64_t discovery_next_ms_ = 0;

  // leader
  std::vector<voter_progress> progress_;   // the voters, self included
  std::vector<voter_progress> observers_;  // non-voters that fetched in this epoch (<= observers_max)

  effects effects_;
};

}  // namespace ringlog::raft
