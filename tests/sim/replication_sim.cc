// replication_sim: a seeded, replayable simulation of partition replication (design.md section
// 10; issue 13, "Test bed"), in the spirit of raft_sim.cc next to it.
//
// N brokers (3 by default) each hold a storage::partition_log per partition on their own
// io::sim_file_system (writes become durable only at a datasync; a crash keeps the durable state
// plus a seeded part of the rest). The same rule code the broker uses decides everything that
// matters: replication::leader_state (followers' log end offsets, the high watermark over the
// ISR with min.insync.replicas, ISR change proposals), check_divergence and truncation_offset
// (KIP-320), and partition_log (append, append_replicated, begin_leader_epoch, truncate_to,
// end_offset_for_epoch, flush, set_high_watermark, recovery). Around it, a small deterministic
// model of src/broker/replication.cc (apply_partition_state, update_high_watermark,
// complete_append / await_replication, maybe_change_isr, send_follower_fetch /
// on_follower_fetch_response, serve_replica_fetch with long-poll, wake_replica_waiters) and of
// the controller (broker.cc fence_lapsed_brokers / controller_heartbeat / registration_records,
// placement.cc remove_broker_from_partitions and elect_leaderless, replication.cc
// alter_partition with the partition-epoch check). Each mirrored function names its original.
//
// Faults from the seed: message delay, loss and partitions (full, one-way, split, including the
// links to the controller), process pauses, clock offsets and drift, slow disks, one broker
// crashing (losing what it did not fsync) and restarting, a leader crashing right after a
// follower truncated (KIP-101's moment), and whole-cluster power loss (every broker crashes at
// once, then each restarts after its own delay; the controller, on the same nodes, loses its
// memory of heartbeats).
//
// Two behaviours of src/broker are NOT the model's default because the simulator found them
// unsafe or stuck (see the report on issue 13); each is one flag away:
//   --keep-leadership-on-restart  a broker restarted before it was fenced leads again in the same
//       leader epoch (broker.cc start() applies partition state before register_broker(), and a
//       registration moves nothing): followers that fetched records the leader lost unsynced keep
//       them, the leader writes others at those offsets in the same epoch, no divergence is seen,
//       and replicas differ below the high watermark. Default: a new incarnation's registration
//       first fences the old one (remove_broker_from_partitions, as KRaft does), and a broker
//       applies partition state only once registered.
//   --stuck-follower-loop  replication.cc send_follower_fetch leaves follower_fetching set when a
//       loop of an older generation ends while the partition has no leader (or this broker leads):
//       no loop starts again, the follower never rejoins the ISR. Default: the flag is cleared.
//
// Invariants. After every event: a leader's high watermark never moves backwards within its
// leadership. Reading the real logs (every 250 ms of simulated time, after every crash, restart
// and start of a leadership, whenever a leader's high watermark moves, and at the end):
//   - no acknowledged record lost: every acks=all record acknowledged is in the log of the
//     partition's leader at its offset with its value;
//   - what a reader read is never gone: every record a reader read below a leader's high
//     watermark is in the log of every later leader at the same offset;
//   - one committed history: the same offset never holds two different records below any high
//     watermark a leader published;
//   - replicas agree: every live replica's log below its own high watermark equals that history;
//   - liveness: after the faults heal, every partition acknowledges a new write;
//   - no end below an acknowledgement (KAFKA-2334, KIP-207): clients keep asking random brokers
//     for a partition's end (ListOffsets latest, the v2 offsets route: the broker answers if it
//     leads, or passes the question to the leader it knows; or a Fetch from the log start, whose
//     answer carries the high watermark), and an end answered is never at or below an offset
//     already acknowledged to an acks=all producer (a Fetch answer of a leader whose lease
//     lapsed is not judged: offsets_gate.h serves it, a zombie's figure). The brokers answer by
//     replication/offsets_gate.h: only a leader whose high watermark reached its epoch's start
//     offset and whose leadership lease (heartbeats the controller answered) holds.
//
//   replication_sim --seed S [--verbose]            one run; prints its seed, schedule and digest
//   replication_sim --seeds N [--start S]           N runs from seed S
//   replication_sim --replay-check S                runs S twice, fails unless the digests match
//   replication_sim --power-loss K                  whole-cluster power losses until K happened
//   replication_sim --expect-violation --seeds N    negative control: exit 0 iff a run violates
//   options: --brokers 3..5 --partitions 1..4 --schedule (print the fault schedule of each run)
//            --keep-leadership-on-restart --stuck-follower-loop (src/broker as it is, see above)
//
// Negative controls, one executable each (tests/sim/meson.build), each breaking one rule with a
// compile definition:
//   RINGLOG_REPLICATION_SIM_BREAK_TRUNCATE_TO_HIGH_WATERMARK  a diverged follower (and a
//       restarted one, as before KIP-101) truncates to its high watermark instead of the
//       diverging epoch's end
//   RINGLOG_REPLICATION_SIM_BREAK_NO_FSYNC_BEFORE_FETCH      a follower reports an offset it did
//       not fsync
//   RINGLOG_REPLICATION_SIM_BREAK_UNCLEAN_ELECTION           unclean.leader.election.enable=true
//   RINGLOG_REPLICATION_SIM_BREAK_ACK_BEFORE_REPLICATION     acks=all answered once the leader
//       has the record (acks=1)
//   RINGLOG_REPLICATION_SIM_BREAK_END_BEFORE_ESTABLISHED     a new leader answers its end before
//       its high watermark reached its epoch's start offset (no OFFSET_NOT_AVAILABLE)
//   RINGLOG_REPLICATION_SIM_BREAK_END_WITHOUT_LEASE          a leader answers its end whether or
//       not its leadership lease holds (a zombie cut off from the controller answers)
//   RINGLOG_REPLICATION_SIM_BREAK_FETCH_END_BEFORE_ESTABLISHED  a Fetch below the high watermark
//       is served by a new leader still establishing it (its answer carries that high watermark)
//
// Exit codes: 0 ok, 1 negative control not caught, 2 usage, 3 invariant violation, 4 replay mismatch.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/sim_file_system.h"
#include "ringlog/replication/leader_state.h"
#include "ringlog/replication/offsets_gate.h"
#include "ringlog/storage/partition_log.h"

namespace {

using namespace ringlog;
using model::offset;

constexpr int exit_ok = 0;
constexpr int exit_not_caught = 1;
constexpr int exit_usage = 2;
constexpr int exit_violation = 3;
constexpr int exit_replay_mismatch = 4;

#ifdef RINGLOG_REPLICATION_SIM_BREAK_UNCLEAN_ELECTION
constexpr bool unclean_leader_election = true;
#else
constexpr bool unclean_leader_election = false;   // unclean.leader.election.enable's default
#endif

// ---- the simulated cluster's settings: Kafka's keys, times scaled down so a run is short ----
constexpr int32_t replication_factor = 3;
constexpr int32_t min_insync_replicas = 2;
constexpr int64_t broker_heartbeat_interval_ms = 100;   // broker.heartbeat.interval.ms (500 real)
constexpr int64_t broker_session_timeout_ms = 600;      // broker.session.timeout.ms (3000 real)
constexpr int64_t replica_lag_time_max_ms = 1'000;      // replica.lag.time.max.ms (30000 real)
constexpr int64_t replica_fetch_wait_max_ms = 200;      // replica.fetch.wait.max.ms (500 real)
constexpr int64_t replica_fetch_timeout_slack_ms = 300; // replication.cc's slack (5000 real)
constexpr int64_t replica_fetch_backoff_ms = 50;        // replica.fetch.backoff.ms (100 real)
constexpr size_t replica_fetch_max_bytes = 4'096;       // replica.fetch.max.bytes: a few batches per fetch
constexpr int64_t alter_partition_timeout_ms = 1'000;  // replication.cc's wait for the controller (10000 real)
constexpr int64_t produce_timeout_ms = 1'500;           // a producer's request timeout
constexpr int64_t replication_tick_ms = 50;             // replication.cc's per-shard tick (250 real)
constexpr int64_t checkpoint_interval_ms = 300;         // the broker's periodic checkpoint()
constexpr int64_t metadata_publish_interval_ms = 100;   // brokers re-read the metadata this often
constexpr int64_t segment_bytes = 4'096;                // small segments: rolls happen in every run
// ---- the simulation's own limits ----
constexpr int64_t tick_interval_ms = 10;
constexpr int64_t chaos_phase_ms = 6'000;
constexpr int64_t heal_phase_ms = 5'000;
constexpr int cycles = 2;
constexpr int64_t liveness_bound_ms = 4'000;   // after a heal, each partition acknowledges a write
constexpr int64_t network_delay_max_ms = 8;
constexpr int64_t fsync_delay_max_ms = 12;
constexpr int64_t slow_fsync_delay_max_ms = 250;
constexpr int64_t content_check_interval_ms = 250; // full log reads; also after every crash and leader change
constexpr int brokers_max = 5;
constexpr int partitions_max = 4;

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  return h * 0x100000001B3ULL;
}

/// splitmix64: the same sequence on every standard library (no <random> distributions).
class rng {
 public:
  explicit rng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi], inclusive.
  int64_t uniform(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next_u64() % static_cast<uint64_t>(hi - lo + 1)); }

 private:
  uint64_t state_;
};

struct options {
  uint64_t seed = 1;
  int brokers = 3;
  int partitions = 1;
  bool verbose = false;
  bool schedule = false;
  int power_losses = 0;   // > 0: power-loss mode (a whole-cluster power loss every few seconds)
  /// As src/broker does today (broker.cc registration_records): a broker that restarts before it
  /// was fenced keeps its leaderships in the same leader epoch. Off: a new incarnation's
  /// registration first fences the old one (Kafka's KRaft controller does), so its leaderships
  /// move in a new leader epoch. See the report on issue 13.
  bool keep_leadership_on_restart = false;
  /// As src/broker does today (replication.cc send_follower_fetch): a follower loop of an older
  /// generation that ends while the partition has no leader, or while this broker leads it,
  /// leaves follower_fetching set, so no loop ever starts again. Off: it clears the flag (no
  /// other loop can run meanwhile: start_follower_fetch starts one only when the flag is clear).
  bool stuck_follower_loop = false;
};

struct run_result {
  bool violated = false;
  int64_t ends_answered = 0;   // partition ends answered to clients (the KAFKA-2334 invariant's checks)
  int64_t ends_refused = 0;    // ... refused by offsets_gate (retry)
  std::string violation;
  uint64_t digest = 0;
  int64_t acked = 0;
  int64_t produced = 0;
  int64_t leader_changes = 0;
  int64_t crashes = 0;
  int64_t power_losses = 0;
  int64_t truncations = 0;
  int64_t isr_changes = 0;
};

// ---------------------------------------------------------------- messages
constexpr int16_t code_none = 0;
constexpr int16_t code_offset_out_of_range = 1;
constexpr int16_t code_not_leader_or_follower = 6;
constexpr int16_t code_fenced_leader_epoch = 74;
constexpr int16_t code_unknown_leader_epoch = 75;
constexpr int16_t code_invalid_update_version = 95;
constexpr int16_t code_ineligible_replica = 107;
constexpr int16_t code_invalid_request = 42;
constexpr int16_t code_not_controller = 41;

struct fetch_request {
  int partition = 0;
  int32_t replica_id = 0;
  int32_t current_leader_epoch = -1;
  int64_t fetch_offset = 0;
  int32_t last_fetched_epoch = -1;
  uint64_t request_id = 0;
};
struct fetch_response {
  int partition = 0;
  int16_t error_code = 0;
  int64_t high_watermark = 0;
  int64_t log_start_offset = 0;
  int32_t diverging_epoch = -1;
  int64_t diverging_end_offset = -1;
  model::bytes records;
  uint64_t request_id = 0;
};
struct alter_partition_request {
  int partition = 0;
  int32_t broker_id = 0;
  int32_t leader_epoch = 0;
  std::vector<int32_t> new_isr;
  int32_t partition_epoch = 0;
  uint64_t generation = 0;
  uint64_t proposal_id = 0;
};
struct alter_partition_response {
  int partition = 0;
  int16_t error_code = 0;
  uint64_t generation = 0;
  uint64_t proposal_id = 0;
};
struct heartbeat {
  int32_t broker_id = 0;
  uint64_t broker_epoch = 0;   // the incarnation here
  int64_t sent_ms = 0;         // the broker's clock when it sent it (its lease counts from there)
};
struct registration {
  int32_t broker_id = 0;
  uint64_t incarnation = 0;
  int64_t sent_ms = 0;
};
/// The controller's answer to a heartbeat or a registration (BrokerHeartbeatResponse): sent only
/// when it restarted the broker's session; `fenced` when the broker was fenced at that moment.
struct heartbeat_response {
  int64_t sent_ms = 0;   // the request's
  bool fenced = false;
};
/// The controller's image of one partition (controller::partition_image).
struct partition_meta {
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  int32_t leader = -1;
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;
};
/// The metadata a broker applies: every partition, as of one metadata version (brokers apply the
/// metadata log in order; a newer version replaces an older one, an older one is ignored).
struct metadata_update {
  uint64_t version = 0;
  std::vector<partition_meta> partitions;
  std::map<int32_t, uint64_t> registered;   // broker -> the incarnation registered
};
using payload = std::variant<fetch_request, fetch_response, alter_partition_request, alter_partition_response, heartbeat,
                             registration, metadata_update, heartbeat_response>;
struct message {
  int from = 0;   // broker index, or controller_node
  int to = 0;
  uint64_t to_incarnation = 0;   // 0: whichever incarnation is up (requests); else that one only
  payload body;
};

// ---------------------------------------------------------------- events
struct ev_deliver {
  message m;
};
struct ev_flush_done {   // a flush issued at a partition_log completes
  int broker;
  uint64_t incarnation;
  int partition;
};
struct ev_fetch_timeout {
  int broker;
  uint64_t incarnation;
  int partition;
  uint64_t request_id;
};
struct ev_fetch_retry {   // replica.fetch.backoff.ms passed
  int broker;
  uint64_t incarnation;
  int partition;
  uint64_t generation;
};
struct ev_replica_wait_expired {
  int broker;
  uint64_t incarnation;
  int partition;
  uint64_t waiter_id;
};
struct ev_alter_partition_timeout {
  int broker;
  uint64_t incarnation;
  int partition;
  uint64_t proposal_id;
};
struct ev_crash {
  int broker;
};
struct ev_restart {
  int broker;
};
struct ev_power_loss {};
using event_body = std::variant<ev_deliver, ev_flush_done, ev_fetch_timeout, ev_fetch_retry, ev_replica_wait_expired,
                                ev_alter_partition_timeout, ev_crash, ev_restart, ev_power_loss>;
struct event {
  int64_t at_ms;
  uint64_t seq;
  event_body body;
  bool operator>(const event& o) const { return at_ms != o.at_ms ? at_ms > o.at_ms : seq > o.seq; }
};

bool contains(const std::vector<int32_t>& set, int32_t id) { return std::find(set.begin(), set.end(), id) != set.end(); }

/// A leader's parked answer to a follower's fetch (replica_fetch_waiter).
struct replica_waiter {
  uint64_t id = 0;
  int follower = 0;
  uint64_t request_id = 0;
  offset fetch_offset{0};
};
/// A producer's acks=all write waiting for the high watermark (ack_waiter).
struct ack_waiter {
  int64_t deadline_ms = 0;
  std::vector<std::pair<offset, std::string>> records;   // offset -> value, to count when acknowledged
};

/// One partition on one broker (partition_runtime).
struct partition_runtime {
  std::unique_ptr<storage::partition_log> log;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  int32_t partition_epoch = -1;
  int32_t leader_id = -1;
  int32_t epoch = -1;
  std::optional<replication::leader_state> leader;
  offset epoch_start_offset{0};
  uint64_t follower_generation = 0;
  bool follower_fetching = false;
  uint64_t outstanding_fetch = 0;   // request id of the fetch in flight, 0 when none
  uint64_t outstanding_proposal = 0;   // id of the AlterPartition in flight, 0 when none
  bool flush_in_flight = false;
  std::vector<std::function<void()>> after_flush;   // run when the flush in flight completes
  std::vector<std::function<void()>> after_next_flush;
  std::multimap<offset, ack_waiter> ack_waiters;    // by the offset the high watermark must reach
  std::vector<replica_waiter> replica_waiters;
  offset high_watermark_in_leadership{-1};          // for the "never backwards" check
};

struct sim_broker {
  int32_t id = 0;
  std::unique_ptr<io::sim_file_system> fs;
  std::unique_ptr<base::manual_clock> clock;
  bool up = false;
  uint64_t incarnation = 0;
  uint64_t metadata_version = 0;   // of the last metadata applied; 0: none since the start
  bool registered = false;
  std::vector<partition_runtime> parts;
  int64_t paused_until_ms = 0;
  int64_t clock_offset_ms = 0;
  int64_t drift_ppm = 0;
  int64_t disk_fsync_delay_ms = fsync_delay_max_ms;   // raised by the "slow disk" fault
  int64_t next_heartbeat_ms = 0;
  /// cluster_requests.cc leadership_lease_: renewed by the controller's answers (heartbeat_response).
  replication::leadership_lease lease{broker_session_timeout_ms};
  int64_t next_replication_tick_ms = 0;
  int64_t next_checkpoint_ms = 0;
  uint64_t next_request_id = 1;
};

/// The controller: KRaft's active controller reduced to what replication needs. Its state is
/// the committed metadata (durable: the Cluster I simulator covers the quorum under it); what it
/// keeps in memory only (the last heartbeat of each broker) is lost when it fails over.
struct sim_controller {
  bool active = true;
  std::vector<partition_meta> partitions;
  std::map<int32_t, uint64_t> registered;   // broker -> incarnation (its broker epoch here)
  std::set<int32_t> fenced;
  std::map<int32_t, int64_t> last_heartbeat_ms;
  uint64_t version = 1;
  int64_t next_publish_ms = 0;
};

class simulation {
 public:
  explicit simulation(const options& opt) : opt_(opt), rng_(opt.seed), client_rng_(opt.seed ^ 0x5DEECE66DULL) {}

  run_result run() {
    setup();
    if (opt_.power_losses > 0) return run_power_losses();
    int64_t start = 0;
    for (int c = 0; c < cycles && !result_.violated; ++c) {
      chaos_ = true;
      run_until(start + chaos_phase_ms);
      heal();
      run_until(start + chaos_phase_ms + heal_phase_ms);
      if (!result_.violated) check_liveness(true);
      start += chaos_phase_ms + heal_phase_ms;
    }
    if (!result_.violated) check_contents("final");
    result_.digest = digest_;
    return result_;
  }

 private:
  /// Power-loss mode: no other chaos, a steady acks=all load, and every broker losing power at
  /// once, `power_losses` times, each followed by restarts (some slow enough to be fenced).
  run_result run_power_losses() {
    int64_t t = 1'000;
    run_until(t);
    for (int k = 0; k < opt_.power_losses && !result_.violated; ++k) {
      t += rng_.uniform(200, 1'500);
      run_until(t);
      power_loss();
      heal_started_ms_ = -1;
      t += 3'000;
      run_until(t);
      heal();
      t += liveness_bound_ms + 500;
      run_until(t);
      if (!result_.violated) check_liveness(true);
    }
    if (!result_.violated) check_contents("final");
    result_.digest = digest_;
    return result_;
  }

  // ---------------------------------------------------------------- setup and main loop
  void setup() {
    controller_node_ = opt_.brokers;
    for (int i = 0; i < opt_.brokers; ++i) {
      auto& b = brokers_.emplace_back();
      b.id = i + 1;
      b.fs = std::make_unique<io::sim_file_system>();
      b.clock = std::make_unique<base::manual_clock>(0);
      b.clock_offset_ms = rng_.uniform(0, 5'000);
      b.drift_ppm = rng_.uniform(-20'000, 20'000);   // +-2%
    }
    // Placement: replica order rotates, as place_replicas spreads leaders; every replica in sync.
    for (int p = 0; p < opt_.partitions; ++p) {
      partition_meta m;
      for (int r = 0; r < replication_factor; ++r) m.replicas.push_back((p + r) % opt_.brokers + 1);
      m.isr = m.replicas;
      m.leader = m.replicas[0];
      m.leader_epoch = 0;
      m.partition_epoch = 0;
      controller_.partitions.push_back(m);
      acked_.emplace_back();
      committed_.emplace_back();
      read_.emplace_back();
      last_ack_ms_.push_back(0);
    }
    for (int i = 0; i < opt_.brokers; ++i) start_broker(i);
  }

  int64_t local_ms(const sim_broker& b) const { return now_ms_ + b.clock_offset_ms + now_ms_ * b.drift_ppm / 1'000'000; }

  /// The broker's clock at this moment (never backwards).
  int64_t broker_now(sim_broker& b) {
    b.clock->set_ms(std::max(b.clock->now_ms(), local_ms(b)));
    return b.clock->now_ms();
  }

  void start_broker(int i) {
    auto& b = brokers_[static_cast<size_t>(i)];
    b.up = true;
    b.incarnation = ++incarnations_;
    b.metadata_version = 0;
    b.registered = false;
    b.lease = replication::leadership_lease(broker_session_timeout_ms);
    b.paused_until_ms = 0;
    b.parts.clear();
    const int64_t now = broker_now(b);
    for (int p = 0; p < opt_.partitions; ++p) {
      auto& rt = b.parts.emplace_back();
      storage::log_config config;
      config.segment_bytes = segment_bytes;
      config.index_interval_bytes = 256;
      auto log = storage::partition_log::open(*b.fs, "/data/t-" + std::to_string(p), config, *b.clock);
      if (!log.ok()) {
        violation("broker " + std::to_string(b.id) + " cannot open partition " + std::to_string(p) + ": " +
                  log.error().message);
        return;
      }
      rt.log = std::move(log.value());
    }
    b.next_heartbeat_ms = now_ms_;
    b.next_replication_tick_ms = now_ms_ + replication_tick_ms;
    b.next_checkpoint_ms = now_ms_ + checkpoint_interval_ms;
    (void)now;
    trace(i, "start", static_cast<int64_t>(b.incarnation));
    // register_broker: a new incarnation registers with the controller.
    send(message{i, controller_node_, 0, registration{b.id, b.incarnation, broker_now(b)}});
  }

  void crash(int i) {
    auto& b = brokers_[static_cast<size_t>(i)];
    if (!b.up) return;
    ++result_.crashes;
    trace(i, "crash", 0);
    b.up = false;
    b.parts.clear();   // the processes' memory is gone (partition_log objects first: they hold files)
    b.fs->crash(rng_.next_u64());
  }

  void power_loss() {
    ++result_.power_losses;
    trace(0, "power-loss", 0);
    for (int i = 0; i < opt_.brokers; ++i) {
      crash(i);
      // Some come back at once, some after the session timeout (their leaderships move first).
      schedule(now_ms_ + rng_.uniform(20, 2'500), ev_restart{i});
    }
    // The controllers lose power too: the next active one knows no heartbeats.
    controller_.active = false;
  }

  void run_until(int64_t end_ms) {
    while (!result_.violated && now_ms_ < end_ms) {
      if (!events_.empty() && events_.top().at_ms <= next_tick_ms_) {
        event e = events_.top();
        events_.pop();
        now_ms_ = std::max(now_ms_, e.at_ms);
        process(e);
      } else {
        now_ms_ = next_tick_ms_;
        next_tick_ms_ += tick_interval_ms;
        tick_all();
      }
      check_invariants();
    }
  }

  void schedule(int64_t at_ms, event_body body) { events_.push(event{at_ms, seq_++, std::move(body)}); }

  bool paused(const sim_broker& b) const { return now_ms_ < b.paused_until_ms; }

  /// The broker's incarnation still runs (a callback of a crashed one does nothing).
  bool alive(int i, uint64_t incarnation) const {
    const auto& b = brokers_[static_cast<size_t>(i)];
    return b.up && b.incarnation == incarnation;
  }

  void tick_all() {
    controller_tick();
    for (int i = 0; i < opt_.brokers; ++i) {
      auto& b = brokers_[static_cast<size_t>(i)];
      if (!b.up || paused(b)) continue;
      broker_now(b);
      if (now_ms_ >= b.next_heartbeat_ms) {
        b.next_heartbeat_ms = now_ms_ + broker_heartbeat_interval_ms;
        if (b.registered) send(message{i, controller_node_, 0, heartbeat{b.id, b.incarnation, broker_now(b)}});
        else send(message{i, controller_node_, 0, registration{b.id, b.incarnation, broker_now(b)}});
      }
      if (now_ms_ >= b.next_replication_tick_ms) {
        b.next_replication_tick_ms = now_ms_ + replication_tick_ms;
        for (int p = 0; p < opt_.partitions; ++p) replication_tick(i, p);
      }
      if (now_ms_ >= b.next_checkpoint_ms) {
        b.next_checkpoint_ms = now_ms_ + checkpoint_interval_ms;
        for (auto& rt : b.parts) {
          if (auto r = rt.log->checkpoint(); !r.ok()) violation("checkpoint failed: " + r.error().message);
        }
      }
    }
    if (chaos_) inject_faults();
    maybe_produce();
    maybe_read();
    ask_end_offsets();
    if (now_ms_ >= next_content_check_ms_) {
      next_content_check_ms_ = now_ms_ + content_check_interval_ms;
      check_contents("periodic");
    }
    check_liveness(false);
  }

  void process(const event& e) {
    std::visit(
        [&](const auto& ev) {
          using T = std::decay_t<decltype(ev)>;
          if constexpr (std::is_same_v<T, ev_deliver>) {
            deliver(ev.m);
          } else if constexpr (std::is_same_v<T, ev_flush_done>) {
            if (alive(ev.broker, ev.incarnation)) flush_done(ev.broker, ev.partition);
          } else if constexpr (std::is_same_v<T, ev_fetch_timeout>) {
            if (!alive(ev.broker, ev.incarnation)) return;
            auto& rt = part(ev.broker, ev.partition);
            if (rt.outstanding_fetch != ev.request_id) return;
            rt.outstanding_fetch = 0;
            trace(ev.broker, "fetch-timeout", ev.partition);
            retry_follower_fetch(ev.broker, ev.partition, rt.follower_generation);
          } else if constexpr (std::is_same_v<T, ev_fetch_retry>) {
            if (alive(ev.broker, ev.incarnation)) send_follower_fetch(ev.broker, ev.partition, ev.generation);
          } else if constexpr (std::is_same_v<T, ev_replica_wait_expired>) {
            if (alive(ev.broker, ev.incarnation)) replica_wait_expired(ev.broker, ev.partition, ev.waiter_id);
          } else if constexpr (std::is_same_v<T, ev_alter_partition_timeout>) {
            if (!alive(ev.broker, ev.incarnation)) return;
            const auto& rt = part(ev.broker, ev.partition);
            on_alter_partition_response(
                ev.broker, alter_partition_response{ev.partition, code_not_controller, rt.follower_generation, ev.proposal_id});
          } else if constexpr (std::is_same_v<T, ev_crash>) {
            crash(ev.broker);
            check_contents("crash");
          } else if constexpr (std::is_same_v<T, ev_restart>) {
            if (!brokers_[static_cast<size_t>(ev.broker)].up) {
              start_broker(ev.broker);
              check_contents("restart");
            }
          } else if constexpr (std::is_same_v<T, ev_power_loss>) {
            power_loss();
          }
        },
        e.body);
  }

  partition_runtime& part(int broker, int partition) {
    return brokers_[static_cast<size_t>(broker)].parts[static_cast<size_t>(partition)];
  }

  // ---------------------------------------------------------------- network
  /// `r`: the randomness of its loss and delay; the controller's answers to heartbeats draw from
  /// their own, so the schedules of seeds from before they existed stay as they were.
  void send(message m) { send_with(rng_, std::move(m)); }
  void send_with(rng& r, message m) {
    if (blocked_[static_cast<size_t>(m.from)][static_cast<size_t>(m.to)] || r.uniform(0, 999) < drop_permille_) {
      return;
    }
    schedule(now_ms_ + r.uniform(1, network_delay_max_ms), ev_deliver{std::move(m)});
  }

  void deliver(const message& m) {
    digest_ = mix(digest_, mix(static_cast<uint64_t>(m.from * 8 + m.to), m.body.index()));
    if (m.to == controller_node_) {
      if (!controller_.active) return;
      return controller_receive(m);
    }
    auto& b = brokers_[static_cast<size_t>(m.to)];
    if (!b.up || (m.to_incarnation != 0 && m.to_incarnation != b.incarnation)) return;
    if (paused(b)) {
      schedule(b.paused_until_ms, ev_deliver{m});   // a stopped process reads its socket later
      return;
    }
    broker_now(b);
    std::visit(
        [&](const auto& body) {
          using T = std::decay_t<decltype(body)>;
          if constexpr (std::is_same_v<T, fetch_request>) {
            serve_replica_fetch(m.to, m.from, body);
          } else if constexpr (std::is_same_v<T, fetch_response>) {
            on_follower_fetch_response(m.to, body);
          } else if constexpr (std::is_same_v<T, alter_partition_response>) {
            on_alter_partition_response(m.to, body);
          } else if constexpr (std::is_same_v<T, metadata_update>) {
            apply_metadata(m.to, body);
          } else if constexpr (std::is_same_v<T, heartbeat_response>) {
            // cluster_requests.cc heartbeat_tick: an answer not fenced renews the lease from its send time.
            if (!body.fenced) b.lease.acknowledged(body.sent_ms);
          }
        },
        m.body);
  }

  // ---------------------------------------------------------------- controller
  void publish_metadata() {
    for (int i = 0; i < opt_.brokers; ++i) {
      send(message{controller_node_, i, 0,
                   metadata_update{controller_.version, controller_.partitions, controller_.registered}});
    }
  }

  void commit_metadata(const char* why) {
    ++controller_.version;
    trace(0, why, static_cast<int64_t>(controller_.version));
    if (opt_.schedule) {
      std::printf("%8lld  controller %s:", static_cast<long long>(now_ms_), why);
      for (const auto& p : controller_.partitions) {
        std::printf(" [leader %d epoch %d isr", p.leader, p.leader_epoch);
        for (int32_t id : p.isr) std::printf(" %d", id);
        std::printf("]");
      }
      std::printf("\n");
    }
    publish_metadata();
  }

  bool usable(int32_t id) const { return controller_.registered.contains(id) && !controller_.fenced.contains(id); }

  void controller_tick() {
    // Combined mode: the quorum (and so an active controller) needs a majority of the nodes up.
    int up = 0;
    for (const auto& b : brokers_) up += b.up ? 1 : 0;
    if (up * 2 <= opt_.brokers) {
      if (controller_.active) trace(0, "controller-lost", 0);
      controller_.active = false;
      return;
    }
    if (!controller_.active) {
      controller_.active = true;
      controller_.last_heartbeat_ms.clear();
      trace(0, "controller-active", 0);
    }
    if (now_ms_ >= controller_.next_publish_ms) {
      controller_.next_publish_ms = now_ms_ + metadata_publish_interval_ms;
      publish_metadata();
    }
    fence_lapsed_brokers();
  }

  /// broker.cc fence_lapsed_brokers: one broker at a time.
  void fence_lapsed_brokers() {
    for (const auto& [id, incarnation] : controller_.registered) {
      if (controller_.fenced.contains(id)) continue;
      const int64_t seen = controller_.last_heartbeat_ms.try_emplace(id, now_ms_).first->second;
      if (now_ms_ - seen <= broker_session_timeout_ms) continue;
      controller_.fenced.insert(id);
      remove_broker_from_partitions(id, unclean_leader_election);
      commit_metadata(("fence " + std::to_string(id)).c_str());
      return;
    }
  }

  /// placement.cc remove_broker_from_partitions.
  void remove_broker_from_partitions(int32_t broker_id, bool unclean_election) {
    auto is_usable = [&](int32_t id) { return id != broker_id && usable(id); };
    for (auto& part : controller_.partitions) {
      const bool in_isr = contains(part.isr, broker_id);
      if (part.leader != broker_id && !in_isr) continue;
      std::vector<int32_t> next_isr;
      for (int32_t id : part.isr) {
        if (id != broker_id) next_isr.push_back(id);
      }
      if (next_isr.empty()) next_isr.push_back(broker_id);
      bool changed = false;
      if (next_isr != part.isr) {
        part.isr = next_isr;
        changed = true;
      }
      if (part.leader == broker_id) {
        int32_t leader = -1;
        for (int32_t candidate : part.replicas) {
          if (is_usable(candidate) && contains(next_isr, candidate)) {
            leader = candidate;
            break;
          }
        }
        for (size_t i = 0; leader < 0 && unclean_election && i < part.replicas.size(); ++i) {
          if (is_usable(part.replicas[i])) {
            leader = part.replicas[i];
            part.isr = {leader};
          }
        }
        part.leader = leader;
        ++part.leader_epoch;
        changed = true;
      }
      if (changed) ++part.partition_epoch;
    }
  }

  /// placement.cc elect_leaderless.
  void elect_leaderless(int32_t broker_id) {
    for (auto& part : controller_.partitions) {
      if (part.leader >= 0 || !contains(part.isr, broker_id)) continue;
      part.leader = broker_id;
      ++part.leader_epoch;
      ++part.partition_epoch;
    }
  }

  void controller_receive(const message& m) {
    if (const auto* r = std::get_if<registration>(&m.body)) {
      // registration_records: a registration (unfenced) replaces the old one; the partitions
      // that lost their leader and list this broker in their ISR are elected to it.
      const auto it = controller_.registered.find(r->broker_id);
      if (it != controller_.registered.end() && it->second == r->incarnation) return;   // already
      if (it != controller_.registered.end() && !opt_.keep_leadership_on_restart && !controller_.fenced.contains(r->broker_id)) {
        // The old incarnation is gone: fence it first, so what it led moves in a new leader epoch.
        controller_.fenced.insert(r->broker_id);
        remove_broker_from_partitions(r->broker_id, unclean_leader_election);
      }
      controller_.registered[r->broker_id] = r->incarnation;
      controller_.fenced.erase(r->broker_id);
      controller_.last_heartbeat_ms[r->broker_id] = now_ms_;
      elect_leaderless(r->broker_id);
      commit_metadata(("register " + std::to_string(r->broker_id)).c_str());
      send_with(client_rng_, message{controller_node_, m.from, r->incarnation, heartbeat_response{r->sent_ms, false}});
      return;
    }
    if (const auto* h = std::get_if<heartbeat>(&m.body)) {
      // controller_heartbeat
      const auto it = controller_.registered.find(h->broker_id);
      if (it == controller_.registered.end() || it->second != h->broker_epoch) return;   // stale broker epoch
      controller_.last_heartbeat_ms[h->broker_id] = now_ms_;
      send_with(client_rng_, message{controller_node_, m.from, h->broker_epoch,
                                     heartbeat_response{h->sent_ms, controller_.fenced.contains(h->broker_id)}});
      if (controller_.fenced.contains(h->broker_id)) {
        controller_.fenced.erase(h->broker_id);
        elect_leaderless(h->broker_id);
        commit_metadata(("unfence " + std::to_string(h->broker_id)).c_str());
      }
      return;
    }
    if (const auto* a = std::get_if<alter_partition_request>(&m.body)) {
      alter_partition_response out{a->partition, code_none, a->generation, a->proposal_id};
      out.error_code = alter_partition(*a);
      send(message{controller_node_, m.from, 0, out});
    }
  }

  /// replication.cc alter_partition, committed at once.
  int16_t alter_partition(const alter_partition_request& in) {
    auto& part = controller_.partitions[static_cast<size_t>(in.partition)];
    if (part.leader != in.broker_id || in.leader_epoch != part.leader_epoch) return code_fenced_leader_epoch;
    if (in.partition_epoch != part.partition_epoch) return code_invalid_update_version;
    if (!contains(in.new_isr, part.leader)) return code_invalid_request;
    for (int32_t id : in.new_isr) {
      if (!contains(part.replicas, id)) return code_invalid_request;
      if (!contains(part.isr, id) && !usable(id)) return code_ineligible_replica;
    }
    part.isr = in.new_isr;
    ++part.partition_epoch;
    ++result_.isr_changes;
    commit_metadata("alter-partition");
    return code_none;
  }

  // ---------------------------------------------------------------- broker: partition state

  /// replication.cc apply_partition_state, for every partition of a metadata update.
  void apply_metadata(int i, const metadata_update& u) {
    auto& b = brokers_[static_cast<size_t>(i)];
    if (u.version <= b.metadata_version) return;
    b.metadata_version = u.version;
    const auto own = u.registered.find(b.id);
    b.registered = own != u.registered.end() && own->second == b.incarnation;
    // broker.cc start() opens its partitions and applies their state before register_broker():
    // a restarted leader leads again at once. The fixed model waits for its registration, which
    // moves the old incarnation's leaderships first.
    if (!b.registered && !opt_.keep_leadership_on_restart) return;
    for (int p = 0; p < opt_.partitions; ++p) apply_partition_state(i, p, u.partitions[static_cast<size_t>(p)]);
  }

  void apply_partition_state(int i, int p_index, const partition_meta& p) {
    auto& b = brokers_[static_cast<size_t>(i)];
    auto& rt = part(i, p_index);
    const int64_t now = broker_now(b);
    const bool leads = p.leader == b.id;
    const bool new_leadership = p.leader != rt.leader_id || p.leader_epoch != rt.epoch;
    const bool isr_shrank_below_min =
        static_cast<int32_t>(p.isr.size()) < min_insync_replicas && p.isr.size() < rt.isr.size();
#ifdef RINGLOG_REPLICATION_SIM_BREAK_TRUNCATE_TO_HIGH_WATERMARK
    if (rt.leader_id < 0 && !leads && p.leader >= 0) {
      // The pre-KIP-101 rule: a replica that starts following truncates to its high watermark.
      if (auto r = rt.log->truncate_to(rt.log->high_watermark()); !r.ok()) violation("truncate: " + r.error().message);
    }
#endif
    rt.replicas = p.replicas;
    rt.isr = p.isr;
    rt.partition_epoch = p.partition_epoch;
    rt.leader_id = p.leader;
    rt.epoch = p.leader_epoch;
    if (rt.leader && (!leads || new_leadership)) {
      rt.leader.reset();
      fail_ack_waiters(rt);
      for (auto& w : rt.replica_waiters) {
        fetch_response out;
        out.partition = p_index;
        out.error_code = code_not_leader_or_follower;
        out.request_id = w.request_id;
        send(message{i, w.follower, 0, out});
      }
      rt.replica_waiters.clear();
    }
    if (leads) {
      if (!rt.leader) {
        if (auto r = rt.log->begin_leader_epoch(model::leader_epoch{rt.epoch}); !r.ok()) {
          violation("begin_leader_epoch: " + r.error().message);
          return;
        }
        rt.epoch_start_offset = rt.log->log_end_offset();
        rt.leader.emplace(b.id, p.replicas, p.isr, now);
        rt.high_watermark_in_leadership = rt.log->high_watermark();
        ++rt.follower_generation;
        ++result_.leader_changes;
        trace(i, "leading", rt.epoch);
        check_new_leader(i, p_index);
      } else {
        rt.leader->set_committed(p.replicas, p.isr, now);
        if (isr_shrank_below_min) fail_ack_waiters(rt);
      }
      update_high_watermark(i, p_index);
      return;
    }
    if (new_leadership) ++rt.follower_generation;
    if (p.leader >= 0 && contains(p.replicas, b.id)) start_follower_fetch(i, p_index);
  }

  void fail_ack_waiters(partition_runtime& rt) { rt.ack_waiters.clear(); }   // the producers hear an error

  /// replication.cc update_high_watermark (fsync flush policy: the leader counts its durable end).
  void update_high_watermark(int i, int p) {
    auto& rt = part(i, p);
    if (!rt.leader) return;
    const offset leader_end = rt.log->durable_offset();
    const offset before = rt.log->high_watermark();
    const offset next = rt.leader->high_watermark(leader_end, before, min_insync_replicas);
    if (next > before) {
      rt.log->set_high_watermark(next);
      note_committed(i, p);
      wake_replica_waiters(i, p);
    }
    const offset hw = rt.log->high_watermark();
    while (!rt.ack_waiters.empty() && rt.ack_waiters.begin()->first <= hw) {
      acknowledge(p, rt.ack_waiters.begin()->second);
      rt.ack_waiters.erase(rt.ack_waiters.begin());
    }
  }

  void acknowledge(int p, const ack_waiter& w) {
    for (const auto& [o, value] : w.records) {
      acked_[static_cast<size_t>(p)][o.value()] = value;
      ++result_.acked;
    }
    last_ack_ms_[static_cast<size_t>(p)] = now_ms_;
    trace(-1, "ack p" + std::to_string(p), w.records.empty() ? -1 : w.records.back().first.value());
  }

  // ---------------------------------------------------------------- broker: produce (leader)

  /// A producer's acks=all write of 1..3 records, sent to the leader the controller names.
  void maybe_produce() {
    if (rng_.uniform(0, 99) >= 35) return;
    const int p = static_cast<int>(rng_.uniform(0, opt_.partitions - 1));
    const int32_t leader = controller_.partitions[static_cast<size_t>(p)].leader;
    if (leader < 0) return;
    const int i = leader - 1;
    auto& b = brokers_[static_cast<size_t>(i)];
    if (!b.up || paused(b)) return;
    auto& rt = part(i, p);
    // check_append
    if (!rt.leader || static_cast<int32_t>(rt.isr.size()) < min_insync_replicas) return;
    const int count = static_cast<int>(rng_.uniform(1, 3));
    std::vector<model::record> records;
    std::vector<std::string> values;
    for (int k = 0; k < count; ++k) {
      model::record r;
      r.timestamp = model::timestamp_ms{broker_now(b)};
      values.push_back("v" + std::to_string(++produced_));
      r.value = model::to_bytes(values.back());
      records.push_back(std::move(r));
    }
    auto batch = codec::encode_batch(codec::batch_options{}, records);
    RINGLOG_ASSERT(batch.ok(), "the simulator's batches encode");
    auto appended = rt.log->append(std::move(batch.value()), model::leader_epoch{rt.epoch});
    if (!appended.ok()) {
      violation("leader append failed: " + appended.error().message);
      return;
    }
    result_.produced += count;
    trace(i, "append", appended->base_offset.value());
    ack_waiter w;
    w.deadline_ms = now_ms_ + produce_timeout_ms;
    for (int k = 0; k < count; ++k) w.records.emplace_back(appended->base_offset + k, values[static_cast<size_t>(k)]);
    const offset required = appended->last_offset + 1;
    // complete_append: followers may fetch it now, in parallel with the leader's fsync.
    wake_replica_waiters(i, p);
    const uint64_t generation = rt.follower_generation;
    flush_async(i, p, [this, i, p, required, generation, w = std::move(w)]() mutable {
      auto& rt = part(i, p);
      update_high_watermark(i, p);
      // await_replication
      if (!rt.leader || rt.follower_generation != generation) return;   // leadership moved: an error
#ifdef RINGLOG_REPLICATION_SIM_BREAK_ACK_BEFORE_REPLICATION
      (void)required;
      acknowledge(p, w);
#else
      if (rt.log->high_watermark() >= required) return acknowledge(p, w);
      rt.ack_waiters.emplace(required, std::move(w));
#endif
    });
  }

  /// partition_log::flush_async with a simulated fdatasync latency: a flush in flight covers
  /// what was appended before it; appends made meanwhile join the next one (group commit). The
  /// flush itself (partition_log::flush) runs when the simulated fdatasync completes.
  void flush_async(int i, int p, std::function<void()> done) {
    auto& rt = part(i, p);
    rt.after_next_flush.push_back(std::move(done));
    if (!rt.flush_in_flight) start_flush(i, p);
  }

  void start_flush(int i, int p) {
    auto& b = brokers_[static_cast<size_t>(i)];
    auto& rt = part(i, p);
    rt.flush_in_flight = true;
    rt.after_flush = std::move(rt.after_next_flush);
    rt.after_next_flush.clear();
    schedule(now_ms_ + rng_.uniform(1, b.disk_fsync_delay_ms), ev_flush_done{i, b.incarnation, p});
  }

  void flush_done(int i, int p) {
    auto& rt = part(i, p);
    if (auto r = rt.log->flush(); !r.ok()) {
      violation("flush failed: " + r.error().message);
      return;
    }
    rt.flush_in_flight = false;
    auto callbacks = std::move(rt.after_flush);
    rt.after_flush.clear();
    if (!rt.after_next_flush.empty()) start_flush(i, p);
    for (auto& c : callbacks) c();
  }

  // ---------------------------------------------------------------- broker: replication tick

  /// replication.cc replication_tick: ISR changes, acks=all deadlines, idle followers.
  void replication_tick(int i, int p) {
    auto& rt = part(i, p);
    if (rt.leader) {
      maybe_change_isr(i, p);
      std::erase_if(rt.ack_waiters, [&](const auto& e) { return e.second.deadline_ms <= now_ms_; });
    } else if (rt.leader_id >= 0 && !rt.follower_fetching && contains(rt.replicas, brokers_[static_cast<size_t>(i)].id)) {
      start_follower_fetch(i, p);
    }
  }

  /// replication.cc maybe_change_isr.
  void maybe_change_isr(int i, int p) {
    auto& b = brokers_[static_cast<size_t>(i)];
    auto& rt = part(i, p);
    if (!rt.leader) return;
    auto change = rt.leader->isr_change(broker_now(b), replica_lag_time_max_ms, rt.log->log_end_offset(),
                                        rt.log->high_watermark(), rt.epoch_start_offset);
    if (!change) return;
    rt.leader->proposal_sent(*change);
    rt.outstanding_proposal = b.next_request_id++;
    trace(i, "propose-isr", static_cast<int64_t>(change->size()));
    send(message{i, controller_node_, 0,
                 alter_partition_request{p, b.id, rt.epoch, *change, rt.partition_epoch, rt.follower_generation,
                                         rt.outstanding_proposal}});
    schedule(now_ms_ + alter_partition_timeout_ms, ev_alter_partition_timeout{i, b.incarnation, p, rt.outstanding_proposal});
  }

  /// The controller's answer, or (code_not_controller) the request's timeout.
  void on_alter_partition_response(int i, const alter_partition_response& r) {
    auto& rt = part(i, r.partition);
    if (rt.outstanding_proposal != r.proposal_id) return;   // answered already, or timed out
    rt.outstanding_proposal = 0;
    if (!rt.leader || rt.follower_generation != r.generation) return;
    if (r.error_code != code_none) rt.leader->proposal_failed();
    update_high_watermark(i, r.partition);
  }

  // ---------------------------------------------------------------- broker: follower side

  void start_follower_fetch(int i, int p) {
    auto& rt = part(i, p);
    if (rt.follower_fetching) return;
    rt.follower_fetching = true;
    send_follower_fetch(i, p, rt.follower_generation);
  }

  /// replication.cc send_follower_fetch.
  void send_follower_fetch(int i, int p, uint64_t generation) {
    auto& b = brokers_[static_cast<size_t>(i)];
    auto& rt = part(i, p);
    if (rt.leader || rt.leader_id < 0 || rt.follower_generation != generation) {
      if (rt.follower_generation == generation || !opt_.stuck_follower_loop) rt.follower_fetching = false;
      if (!rt.leader && rt.leader_id >= 0 && rt.follower_generation != generation) {
        rt.follower_fetching = false;
        start_follower_fetch(i, p);
      }
      return;
    }
    fetch_request req;
    req.partition = p;
    req.replica_id = b.id;
    req.current_leader_epoch = rt.epoch;
    req.fetch_offset = rt.log->log_end_offset().value();
    const auto& epochs = rt.log->leader_epochs();
    req.last_fetched_epoch = epochs.empty() ? -1 : epochs.rbegin()->first;
    req.request_id = b.next_request_id++;
    rt.outstanding_fetch = req.request_id;
    if (opt_.verbose) trace(i, "fetch from " + std::to_string(rt.leader_id) + " epoch " + std::to_string(rt.epoch), req.fetch_offset);
    fetch_sent_[{i, p, req.request_id}] = {generation, offset{req.fetch_offset}};
    send(message{i, rt.leader_id - 1, 0, req});
    schedule(now_ms_ + replica_fetch_wait_max_ms + replica_fetch_timeout_slack_ms,
             ev_fetch_timeout{i, b.incarnation, p, req.request_id});
  }

  void retry_follower_fetch(int i, int p, uint64_t generation) {
    schedule(now_ms_ + replica_fetch_backoff_ms,
             ev_fetch_retry{i, brokers_[static_cast<size_t>(i)].incarnation, p, generation});
  }

  /// replication.cc on_follower_fetch_response.
  void on_follower_fetch_response(int i, const fetch_response& resp) {
    auto& rt = part(i, resp.partition);
    const int p = resp.partition;
    if (rt.outstanding_fetch != resp.request_id) return;   // timed out already: a retry is under way
    rt.outstanding_fetch = 0;
    const auto key = std::make_tuple(i, p, resp.request_id);
    const auto [generation, fetch_offset] = fetch_sent_.at(key);
    fetch_sent_.erase(key);
    if (rt.follower_generation != generation || rt.leader) return send_follower_fetch(i, p, generation);
    if (rt.log->log_end_offset() != fetch_offset) return send_follower_fetch(i, p, generation);   // the log changed meanwhile
    if (resp.error_code == code_offset_out_of_range) {
      if (auto r = rt.log->truncate_to(offset{std::max<int64_t>(resp.high_watermark, 0)}); !r.ok()) {
        violation("truncate_to failed: " + r.error().message);
        return;
      }
      return send_follower_fetch(i, p, generation);
    }
    if (resp.error_code != code_none) {
      if (opt_.verbose) trace(i, "fetch error", resp.error_code);
      return retry_follower_fetch(i, p, generation);
    }
    if (resp.diverging_epoch >= 0 || resp.diverging_end_offset >= 0) {
#ifdef RINGLOG_REPLICATION_SIM_BREAK_TRUNCATE_TO_HIGH_WATERMARK
      const offset cut = std::min(rt.log->high_watermark(), rt.log->log_end_offset());
#else
      const replication::diverging_epoch diverging{resp.diverging_epoch, resp.diverging_end_offset};
      const offset cut = replication::truncation_offset(
          diverging, rt.log->end_offset_for_epoch(model::leader_epoch{std::max(diverging.epoch, 0)}),
          rt.log->log_end_offset(), rt.log->high_watermark());
#endif
      const auto epochs_before = rt.log->leader_epochs();
      const offset end_before = rt.log->log_end_offset();
      if (auto r = rt.log->truncate_to(cut); !r.ok()) {
        violation("truncate_to failed: " + r.error().message);
        return;
      }
      ++result_.truncations;
      trace(i, "truncate", cut.value());
      if (chaos_ && rt.leader_id > 0 && rng_.uniform(0, 99) < 60) {
        // A fault aimed at the moment that matters (KIP-101): the leader crashes right after a
        // follower cut its log, before the follower fetched again.
        const int leader = rt.leader_id - 1;
        const int64_t back = rng_.uniform(10, 1'500);
        fault("crash leader " + std::to_string(leader + 1) + " after a truncation, for " + std::to_string(back) + " ms");
        schedule(now_ms_ + rng_.uniform(0, 3), ev_crash{leader});
        schedule(now_ms_ + back, ev_restart{leader});
      }
      if (opt_.verbose) {
        std::printf("          diverging epoch %d end %lld; follower epochs:", resp.diverging_epoch,
                    static_cast<long long>(resp.diverging_end_offset));
        for (const auto& [e, o] : epochs_before) std::printf(" %d@%lld", e, static_cast<long long>(o.value()));
        std::printf(" end %lld -> epochs:", static_cast<long long>(end_before.value()));
        for (const auto& [e, o] : rt.log->leader_epochs()) std::printf(" %d@%lld", e, static_cast<long long>(o.value()));
        std::printf(" end %lld; leader %d epochs:", static_cast<long long>(rt.log->log_end_offset().value()), rt.leader_id);
        const auto& leader_broker = brokers_[static_cast<size_t>(rt.leader_id - 1)];
        if (leader_broker.up && !leader_broker.parts.empty()) {
          const auto& lrt = leader_broker.parts[static_cast<size_t>(p)];
          for (const auto& [e, o] : lrt.log->leader_epochs()) std::printf(" %d@%lld", e, static_cast<long long>(o.value()));
          std::printf(" end %lld", static_cast<long long>(lrt.log->log_end_offset().value()));
        }
        std::printf("\n");
      }
      if (rt.log->log_end_offset() == end_before && rt.log->leader_epochs() == epochs_before) {
        return retry_follower_fetch(i, p, generation);
      }
      return send_follower_fetch(i, p, generation);
    }
    const int64_t hw = resp.high_watermark;
    auto learn_high_watermark = [this, i, p, hw] {
      auto& rt = part(i, p);
      rt.log->set_high_watermark(offset{std::min(hw, rt.log->log_end_offset().value())});
    };
    if (resp.records.empty()) {
      learn_high_watermark();
      return send_follower_fetch(i, p, generation);
    }
    auto appended = rt.log->append_replicated(resp.records);
    if (!appended.ok()) {
      violation("append_replicated refused what the leader sent: " + appended.error().message);
      return;
    }
#ifdef RINGLOG_REPLICATION_SIM_BREAK_NO_FSYNC_BEFORE_FETCH
    learn_high_watermark();
    return send_follower_fetch(i, p, generation);
#else
    // Durable before the next fetch reports it.
    flush_async(i, p, [this, i, p, generation, learn_high_watermark] {
      learn_high_watermark();
      send_follower_fetch(i, p, generation);
    });
#endif
  }

  // ---------------------------------------------------------------- broker: leader side of a fetch

  fetch_response read_for_replica(partition_runtime& rt, int p, offset fetch_offset, uint64_t request_id) {
    fetch_response out;
    out.partition = p;
    out.request_id = request_id;
    out.high_watermark = rt.log->high_watermark().value();
    out.log_start_offset = rt.log->log_start_offset().value();
    auto read = rt.log->read(fetch_offset, replica_fetch_max_bytes, rt.log->log_end_offset());
    if (!read.ok()) {
      out.error_code = read.error().code == storage::errc::offset_out_of_range ? code_offset_out_of_range
                                                                                : code_not_leader_or_follower;
      return out;
    }
    out.records = std::move(read->batches);
    return out;
  }

  /// replication.cc serve_replica_fetch.
  void serve_replica_fetch(int i, int follower, const fetch_request& req) {
    auto& b = brokers_[static_cast<size_t>(i)];
    auto& rt = part(i, req.partition);
    fetch_response out;
    out.partition = req.partition;
    out.request_id = req.request_id;
    out.high_watermark = rt.log->high_watermark().value();
    out.log_start_offset = rt.log->log_start_offset().value();
    auto answer = [&](fetch_response r) { send(message{i, follower, 0, std::move(r)}); };
    if (!rt.leader) {
      out.error_code = code_not_leader_or_follower;
      return answer(out);
    }
    if (req.current_leader_epoch >= 0 && req.current_leader_epoch < rt.epoch) {
      out.error_code = code_fenced_leader_epoch;
      return answer(out);
    }
    if (req.current_leader_epoch > rt.epoch) {
      out.error_code = code_unknown_leader_epoch;
      return answer(out);
    }
    const offset fetch_offset{req.fetch_offset};
    if (req.last_fetched_epoch >= 0) {
      auto diverged = replication::check_divergence(
          req.last_fetched_epoch, fetch_offset,
          rt.log->end_offset_for_epoch(model::leader_epoch{req.last_fetched_epoch}), rt.log->log_start_offset());
      if (diverged) {
        out.diverging_epoch = diverged->epoch;
        out.diverging_end_offset = diverged->end_offset;
        return answer(out);
      }
    }
    if (fetch_offset < rt.log->log_start_offset() || fetch_offset > rt.log->log_end_offset()) {
      out.error_code = code_offset_out_of_range;
      return answer(out);
    }
    if (rt.leader->on_fetch(req.replica_id, fetch_offset, rt.log->log_end_offset(), broker_now(b))) {
      update_high_watermark(i, req.partition);
      maybe_change_isr(i, req.partition);
    }
    auto r = read_for_replica(rt, req.partition, fetch_offset, req.request_id);
    if (r.error_code != code_none || !r.records.empty()) return answer(std::move(r));
    replica_waiter w{next_waiter_id_++, follower, req.request_id, fetch_offset};
    rt.replica_waiters.push_back(w);
    schedule(now_ms_ + replica_fetch_wait_max_ms, ev_replica_wait_expired{i, b.incarnation, req.partition, w.id});
  }

  void replica_wait_expired(int i, int p, uint64_t waiter_id) {
    auto& rt = part(i, p);
    for (auto it = rt.replica_waiters.begin(); it != rt.replica_waiters.end(); ++it) {
      if (it->id != waiter_id) continue;
      const replica_waiter w = *it;
      rt.replica_waiters.erase(it);
      send(message{i, w.follower, 0, read_for_replica(rt, p, w.fetch_offset, w.request_id)});
      return;
    }
  }

  void wake_replica_waiters(int i, int p) {
    auto& rt = part(i, p);
    auto waiting = std::move(rt.replica_waiters);
    rt.replica_waiters.clear();
    for (const auto& w : waiting) send(message{i, w.follower, 0, read_for_replica(rt, p, w.fetch_offset, w.request_id)});
  }

  // ---------------------------------------------------------------- readers and the oracle

  /// Every record of a log, offset -> value (log start to log end).
  std::map<int64_t, std::string> read_log(storage::partition_log& log, offset from, offset to) {
    std::map<int64_t, std::string> out;
    offset at = std::max(from, log.log_start_offset());
    while (at < to) {
      auto r = log.read(at, 1 << 20, to);
      if (!r.ok()) {
        violation("read of [" + std::to_string(at.value()) + ", " + std::to_string(to.value()) + ") failed: " +
                  r.error().message);
        return out;
      }
      if (r->batches.empty()) break;
      size_t pos = 0;
      while (pos < r->batches.size()) {
        auto header = codec::decode_header(std::span(r->batches).subspan(pos));
        RINGLOG_ASSERT(header.ok(), "a log returns whole batches");
        auto records = codec::decode_records(std::span(r->batches).subspan(pos, header->size_bytes()));
        if (!records.ok()) {
          violation("a stored batch does not decode: " + records.error().message);
          return out;
        }
        for (const auto& rec : records.value()) {
          if (rec.record_offset >= at && rec.record_offset < to) {
            out[rec.record_offset.value()] = std::string(reinterpret_cast<const char*>(rec.value->data()), rec.value->size());
          }
        }
        pos += header->size_bytes();
      }
      if (r->next_offset <= at) break;
      at = r->next_offset;
    }
    return out;
  }

  /// The leader published a higher high watermark: what lies below it is committed, once.
  void note_committed(int i, int p) {
    auto& rt = part(i, p);
    const offset hw = rt.log->high_watermark();
    if (hw < rt.high_watermark_in_leadership) {
      violation("high watermark of partition " + std::to_string(p) + " on leader " + std::to_string(i + 1) +
                " moved backwards within a leadership");
      return;
    }
    auto& committed = committed_[static_cast<size_t>(p)];
    const offset from{committed.empty() ? 0 : std::min(committed.rbegin()->first + 1, rt.high_watermark_in_leadership.value())};
    rt.high_watermark_in_leadership = hw;
    for (const auto& [o, value] : read_log(*rt.log, from, hw)) {
      const auto [it, inserted] = committed.emplace(o, value);
      if (!inserted && it->second != value) {
        violation("offset " + std::to_string(o) + " of partition " + std::to_string(p) + " was committed as " +
                  it->second + " and is now committed as " + value + " by leader " + std::to_string(i + 1) +
                  " (epoch " + std::to_string(rt.epoch) + ")");
        return;
      }
    }
  }

  /// A reader tails a partition on the broker that leads it (what it is told is below the high
  /// watermark there): what it reads must never be gone.
  void maybe_read() {
    if (rng_.uniform(0, 99) >= 20) return;
    const int p = static_cast<int>(rng_.uniform(0, opt_.partitions - 1));
    for (int i = 0; i < opt_.brokers; ++i) {
      auto& b = brokers_[static_cast<size_t>(i)];
      if (!b.up || paused(b) || !part(i, p).leader) continue;
      auto& rt = part(i, p);
      auto& seen = read_[static_cast<size_t>(p)];
      const offset from{std::max<int64_t>(0, rt.log->high_watermark().value() - 20)};
      for (const auto& [o, value] : read_log(*rt.log, from, rt.log->high_watermark())) {
        const auto [it, inserted] = seen.emplace(o, value);
        if (!inserted && it->second != value) {
          violation("a reader read offset " + std::to_string(o) + " of partition " + std::to_string(p) + " as " +
                    it->second + " and later as " + value + " (from leader " + std::to_string(i + 1) + ")");
          return;
        }
      }
    }
  }

  /// replication.cc check_serving for a question about the partition's end, on broker `i`.
  replication::end_offset_answer end_offset_answer(int i, int p) {
    auto& b = brokers_[static_cast<size_t>(i)];
    const auto& rt = part(i, p);
    bool lease_holds = b.lease.holds(broker_now(b));
    offset epoch_start = rt.epoch_start_offset;
#ifdef RINGLOG_REPLICATION_SIM_BREAK_END_WITHOUT_LEASE
    lease_holds = true;
#endif
#ifdef RINGLOG_REPLICATION_SIM_BREAK_END_BEFORE_ESTABLISHED
    epoch_start = offset{0};
#endif
    return replication::answer_end_offset(rt.log->high_watermark(), epoch_start, rt.replicas.size(), lease_holds);
  }

  /// replication.cc check_fetch_serving for a Fetch at `fetch_offset` on broker `i`.
  replication::end_offset_answer fetch_answer(int i, int p, offset fetch_offset) {
    auto& b = brokers_[static_cast<size_t>(i)];
    const auto& rt = part(i, p);
    const bool lease_holds = b.lease.holds(broker_now(b));
#ifdef RINGLOG_REPLICATION_SIM_BREAK_FETCH_END_BEFORE_ESTABLISHED
    if (fetch_offset < rt.log->high_watermark()) return replication::end_offset_answer::available;
#endif
    return replication::answer_fetch(rt.log->high_watermark(), rt.epoch_start_offset, rt.replicas.size(), lease_holds,
                                     fetch_offset);
  }

  /// Clients ask random brokers for a random partition's end (fetch.cc list_offsets_known: answered
  /// where the broker leads, else passed to the leader it knows, which answers if it leads; a
  /// question in flight is not modelled). An end answered must be above every offset already
  /// acknowledged (KAFKA-2334). Its own randomness: the seeds' schedules are unchanged by it.
  void ask_end_offsets() {
    if (client_rng_.uniform(0, 99) >= 50) return;
    const int p = static_cast<int>(client_rng_.uniform(0, opt_.partitions - 1));
    const int asked = static_cast<int>(client_rng_.uniform(0, opt_.brokers - 1));
    auto reachable = [&](int i) {
      if (i < 0 || i >= opt_.brokers) return false;
      const auto& b = brokers_[static_cast<size_t>(i)];
      return b.up && !paused(b) && !b.parts.empty();
    };
    if (!reachable(asked)) return;
    const int answering = part(asked, p).leader ? asked : part(asked, p).leader_id - 1;
    if (!reachable(answering) || !part(answering, p).leader) return;   // not_leader_or_follower: retry
    // Half the questions are a Fetch from the log start (below the high watermark: committed
    // records, but the answer carries the high watermark), half ListOffsets latest.
    const bool fetch = client_rng_.uniform(0, 1) == 0;
    const auto answer = fetch ? fetch_answer(answering, p, part(answering, p).log->log_start_offset())
                              : end_offset_answer(answering, p);
    if (answer != replication::end_offset_answer::available) {
      ++result_.ends_refused;
      return;
    }
    ++result_.ends_answered;
    // A Fetch below the high watermark is served on a lapsed lease (no stall): a zombie's figure is
    // the one it held when cut off (offsets_gate.h), so only a leader whose lease holds is judged.
    auto& b = brokers_[static_cast<size_t>(answering)];
    if (fetch && part(answering, p).replicas.size() > 1 && !b.lease.holds(broker_now(b))) return;
    const offset end = part(answering, p).log->high_watermark();
    const auto& acked = acked_[static_cast<size_t>(p)];
    if (!acked.empty() && end.value() <= acked.rbegin()->first) {
      violation("broker " + std::to_string(answering + 1) + " (asked through broker " + std::to_string(asked + 1) +
                ") answered " + (fetch ? "a Fetch from the log start with" : "") + " the end of partition " +
                std::to_string(p) + " as " + std::to_string(end.value()) +
                " after offset " + std::to_string(acked.rbegin()->first) + " was acknowledged (KAFKA-2334; epoch " +
                std::to_string(part(answering, p).epoch) + " began at " +
                std::to_string(part(answering, p).epoch_start_offset.value()) + ")");
    }
  }

  void check_new_leader(int i, int p) {
    const auto& meta = controller_.partitions[static_cast<size_t>(p)];
    if (meta.leader == brokers_[static_cast<size_t>(i)].id && meta.leader_epoch == part(i, p).epoch) {
      check_leader_log(i, p, "a new leader");
    }
  }

  /// Every acknowledged, committed and read record is in this leader's log.
  void check_leader_log(int i, int p, const std::string& when) {
    auto& rt = part(i, p);
    const auto& acked = acked_[static_cast<size_t>(p)];
    const auto& committed = committed_[static_cast<size_t>(p)];
    const auto& seen = read_[static_cast<size_t>(p)];
    int64_t last = -1;
    if (!acked.empty()) last = std::max(last, acked.rbegin()->first);
    if (!committed.empty()) last = std::max(last, committed.rbegin()->first);
    if (!seen.empty()) last = std::max(last, seen.rbegin()->first);
    if (last < 0) return;
    const auto log = read_log(*rt.log, offset{0}, rt.log->log_end_offset());
    auto check = [&](const std::map<int64_t, std::string>& expected, const char* what) {
      for (const auto& [o, value] : expected) {
        const auto it = log.find(o);
        if (it == log.end() || it->second != value) {
          violation(std::string(what) + " record " + value + " at offset " + std::to_string(o) + " of partition " +
                    std::to_string(p) + " is " + (it == log.end() ? "missing" : "replaced by " + it->second) +
                    " on leader " + std::to_string(i + 1) + " (epoch " + std::to_string(rt.epoch) + ", " + when +
                    ", log end " + std::to_string(rt.log->log_end_offset().value()) + ")");
          return false;
        }
      }
      return true;
    };
    if (!check(acked, "acknowledged")) return;
    if (!check(committed, "committed")) return;
    check(seen, "read");
  }

  /// Full content checks: each partition's leader holds every acknowledged, committed and read
  /// record; every live replica's log below its own high watermark is the committed history.
  void check_contents(const std::string& when) {
    if (result_.violated) return;
    for (int p = 0; p < opt_.partitions && !result_.violated; ++p) {
      for (int i = 0; i < opt_.brokers && !result_.violated; ++i) {
        auto& b = brokers_[static_cast<size_t>(i)];
        if (!b.up || b.parts.empty()) continue;
        auto& rt = part(i, p);
        // The leader of the newest epoch; a deposed one that has not heard yet lags by design.
        const auto& meta = controller_.partitions[static_cast<size_t>(p)];
        if (rt.leader && meta.leader == b.id && meta.leader_epoch == rt.epoch) check_leader_log(i, p, when);
        const auto& committed = committed_[static_cast<size_t>(p)];
        for (const auto& [o, value] : read_log(*rt.log, offset{0}, rt.log->high_watermark())) {
          const auto it = committed.find(o);
          if (it != committed.end() && it->second != value) {
            violation("replica " + std::to_string(i + 1) + " holds " + value + " at offset " + std::to_string(o) +
                      " of partition " + std::to_string(p) + " below its high watermark " +
                      std::to_string(rt.log->high_watermark().value()) + ", but " + it->second + " was committed there (" +
                      when + ")");
            return;
          }
        }
      }
    }
  }

  void check_invariants() {
    if (result_.violated) return;
    for (int i = 0; i < opt_.brokers; ++i) {
      auto& b = brokers_[static_cast<size_t>(i)];
      if (!b.up) continue;
      for (int p = 0; p < opt_.partitions; ++p) {
        auto& rt = part(i, p);
        if (rt.leader && rt.log->high_watermark() < rt.high_watermark_in_leadership) {
          violation("high watermark of partition " + std::to_string(p) + " on leader " + std::to_string(i + 1) +
                    " moved backwards within its leadership");
          return;
        }
      }
    }
  }

  void check_liveness(bool at_end) {
    if (heal_started_ms_ < 0) return;
    const bool late = now_ms_ - heal_started_ms_ > liveness_bound_ms;
    if (!late && !at_end) return;
    for (int p = 0; p < opt_.partitions; ++p) {
      if (last_ack_ms_[static_cast<size_t>(p)] <= heal_started_ms_) {
        violation("liveness: partition " + std::to_string(p) + " acknowledged no write within " +
                  std::to_string(liveness_bound_ms) + " ms after the faults healed");
        return;
      }
    }
    if (late) heal_started_ms_ = -1;
  }

  void violation(const std::string& what) {
    if (!result_.violated) {
      result_.violated = true;
      result_.violation = what + " (at " + std::to_string(now_ms_) + " ms)";
    }
  }

  void trace(int i, const std::string& what, int64_t value) {
    uint64_t h = 1469598103934665603ULL;
    for (char c : what) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
    digest_ = mix(digest_, mix(static_cast<uint64_t>(now_ms_), mix(static_cast<uint64_t>(i), mix(h, static_cast<uint64_t>(value)))));
    if (opt_.verbose) {
      std::printf("%8lld  node %d  %s %lld\n", static_cast<long long>(now_ms_), i + 1, what.c_str(),
                  static_cast<long long>(value));
    }
  }

  /// A fault, in the schedule printed by --schedule.
  void fault(const std::string& what) {
    trace(0, "fault " + what, 0);
    if (opt_.schedule) std::printf("%8lld  fault %s\n", static_cast<long long>(now_ms_), what.c_str());
  }

  // ---------------------------------------------------------------- faults
  void inject_faults() {
    if (rng_.uniform(0, 999) >= 15) return;   // about one fault action per 670 ms
    const auto pick = [&] { return static_cast<int>(rng_.uniform(0, opt_.brokers - 1)); };
    const auto leader_of = [&](int p) { return controller_.partitions[static_cast<size_t>(p)].leader - 1; };
    const int nodes = opt_.brokers + 1;   // the controller is node opt_.brokers
    switch (rng_.uniform(0, 11)) {
      case 0:
      case 1: {
        const int i = pick();
        const int64_t back = rng_.uniform(10, 2'000);
        fault("crash " + std::to_string(i + 1) + " for " + std::to_string(back) + " ms");
        schedule(now_ms_, ev_crash{i});
        schedule(now_ms_ + back, ev_restart{i});
        break;
      }
      case 2: {   // crash a leader right after an append (unsynced records on it and maybe its followers)
        const int i = leader_of(static_cast<int>(rng_.uniform(0, opt_.partitions - 1)));
        if (i < 0) break;
        const int64_t back = rng_.uniform(10, 1'500);
        fault("crash leader " + std::to_string(i + 1) + " for " + std::to_string(back) + " ms");
        schedule(now_ms_ + rng_.uniform(0, 5), ev_crash{i});
        schedule(now_ms_ + back, ev_restart{i});
        break;
      }
      case 3: {
        fault("power loss");
        schedule(now_ms_, ev_power_loss{});
        break;
      }
      case 4: {
        const int i = pick();
        for (int j = 0; j < nodes; ++j) {
          blocked_[static_cast<size_t>(i)][static_cast<size_t>(j)] = blocked_[static_cast<size_t>(j)][static_cast<size_t>(i)] = i != j;
        }
        fault("isolate " + std::to_string(i + 1));
        break;
      }
      case 5: {
        const int a = static_cast<int>(rng_.uniform(0, nodes - 1));
        const int c = static_cast<int>(rng_.uniform(0, nodes - 1));
        blocked_[static_cast<size_t>(a)][static_cast<size_t>(c)] = a != c;
        fault("one-way " + std::to_string(a + 1) + "->" + std::to_string(c + 1));
        break;
      }
      case 6: {
        std::vector<bool> side(static_cast<size_t>(nodes));
        for (auto&& s : side) s = rng_.uniform(0, 1) == 1;
        for (int a = 0; a < nodes; ++a) {
          for (int c = 0; c < nodes; ++c) blocked_[static_cast<size_t>(a)][static_cast<size_t>(c)] = side[static_cast<size_t>(a)] != side[static_cast<size_t>(c)];
        }
        fault("split");
        break;
      }
      case 7:
      case 8:
        clear_partitions();
        fault("heal-net");
        break;
      case 9: {
        const int i = pick();
        brokers_[static_cast<size_t>(i)].paused_until_ms = now_ms_ + rng_.uniform(100, 1'500);
        fault("pause " + std::to_string(i + 1) + " until " + std::to_string(brokers_[static_cast<size_t>(i)].paused_until_ms));
        break;
      }
      case 10:
        drop_permille_ = std::array<int64_t, 3>{0, 30, 150}[static_cast<size_t>(rng_.uniform(0, 2))];
        fault("lossy " + std::to_string(drop_permille_));
        break;
      case 11: {
        const int i = pick();
        auto& b = brokers_[static_cast<size_t>(i)];
        b.disk_fsync_delay_ms = b.disk_fsync_delay_ms == fsync_delay_max_ms ? slow_fsync_delay_max_ms : fsync_delay_max_ms;
        fault("slow-disk " + std::to_string(i + 1) + " " + std::to_string(b.disk_fsync_delay_ms));
        break;
      }
    }
  }

  void clear_partitions() {
    for (auto& row : blocked_) row.fill(false);
  }

  void heal() {
    chaos_ = false;
    clear_partitions();
    drop_permille_ = 0;
    for (int i = 0; i < opt_.brokers; ++i) {
      auto& b = brokers_[static_cast<size_t>(i)];
      b.paused_until_ms = std::min(b.paused_until_ms, now_ms_);
      b.disk_fsync_delay_ms = fsync_delay_max_ms;
      if (!b.up) start_broker(i);
    }
    heal_started_ms_ = now_ms_;
    if (opt_.schedule) std::printf("%8lld  heal\n", static_cast<long long>(now_ms_));
    trace(0, "heal", 0);
  }

  options opt_;
  rng rng_;
  rng client_rng_;   // the clients' questions and the controller's heartbeat answers
  int controller_node_ = 0;
  std::vector<sim_broker> brokers_;
  sim_controller controller_;
  std::priority_queue<event, std::vector<event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  int64_t now_ms_ = 0;
  int64_t next_tick_ms_ = 0;
  int64_t next_content_check_ms_ = 0;
  bool chaos_ = false;
  std::array<std::array<bool, brokers_max + 1>, brokers_max + 1> blocked_{};
  int64_t drop_permille_ = 0;
  uint64_t incarnations_ = 0;
  uint64_t next_waiter_id_ = 1;
  int64_t produced_ = 0;
  int64_t heal_started_ms_ = -1;
  /// (broker, partition, request id) -> the follower generation and fetch offset it was sent with.
  std::map<std::tuple<int, int, uint64_t>, std::pair<uint64_t, offset>> fetch_sent_;
  std::vector<std::map<int64_t, std::string>> acked_;       // per partition: offset -> value acknowledged
  std::vector<std::map<int64_t, std::string>> committed_;   // per partition: below some published HW
  std::vector<std::map<int64_t, std::string>> read_;        // per partition: what readers read
  std::vector<int64_t> last_ack_ms_;
  uint64_t digest_ = 0xcbf29ce484222325ULL;
  run_result result_;
};

run_result run_seed(const options& opt) {
  simulation sim(opt);
  return sim.run();
}

void print_result(const options& opt, const run_result& r) {
  std::printf("seed %llu brokers %d partitions %d digest %016llx produced %lld acked %lld leader_changes %lld "
              "crashes %lld power_losses %lld truncations %lld isr_changes %lld ends_answered %lld ends_refused %lld "
              "%s%s\n",
              static_cast<unsigned long long>(opt.seed), opt.brokers, opt.partitions,
              static_cast<unsigned long long>(r.digest), static_cast<long long>(r.produced),
              static_cast<long long>(r.acked), static_cast<long long>(r.leader_changes),
              static_cast<long long>(r.crashes), static_cast<long long>(r.power_losses),
              static_cast<long long>(r.truncations), static_cast<long long>(r.isr_changes),
              static_cast<long long>(r.ends_answered), static_cast<long long>(r.ends_refused),
              r.violated ? "VIOLATION: " : "ok", r.violated ? r.violation.c_str() : "");
}

int usage() {
  std::fprintf(stderr,
               "usage: replication_sim --seed S | --seeds N [--start S] | --replay-check S | --power-loss K "
               "[--brokers 3..5] [--partitions 1..4] [--verbose] [--schedule] [--expect-violation] "
               "[--keep-leadership-on-restart] [--stuck-follower-loop]\n");
  return exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  std::optional<uint64_t> seed;
  std::optional<uint64_t> replay_seed;
  uint64_t seeds = 0;
  uint64_t start = 1;
  int power_losses = 0;
  bool expect_violation = false;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const bool has_value = a + 1 < argc;
    if (arg == "--seed" && has_value) {
      seed = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--seeds" && has_value) {
      seeds = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--start" && has_value) {
      start = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--replay-check" && has_value) {
      replay_seed = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--power-loss" && has_value) {
      power_losses = std::atoi(argv[++a]);
    } else if (arg == "--brokers" && has_value) {
      opt.brokers = std::atoi(argv[++a]);
    } else if (arg == "--partitions" && has_value) {
      opt.partitions = std::atoi(argv[++a]);
    } else if (arg == "--keep-leadership-on-restart") {
      opt.keep_leadership_on_restart = true;
    } else if (arg == "--stuck-follower-loop") {
      opt.stuck_follower_loop = true;
    } else if (arg == "--verbose") {
      opt.verbose = true;
    } else if (arg == "--schedule") {
      opt.schedule = true;
    } else if (arg == "--expect-violation") {
      expect_violation = true;
    } else {
      return usage();
    }
  }
  if (opt.brokers < replication_factor || opt.brokers > brokers_max || opt.partitions < 1 ||
      opt.partitions > partitions_max || power_losses < 0) {
    return usage();
  }
  if (replay_seed) {
    opt.seed = *replay_seed;
    const auto a = run_seed(opt);
    const auto b = run_seed(opt);
    print_result(opt, a);
    print_result(opt, b);
    if (a.digest != b.digest || a.violated != b.violated) {
      std::printf("REPLAY MISMATCH for seed %llu\n", static_cast<unsigned long long>(opt.seed));
      return exit_replay_mismatch;
    }
    std::printf("replay ok: seed %llu digest %016llx\n", static_cast<unsigned long long>(opt.seed),
                static_cast<unsigned long long>(a.digest));
    return a.violated ? exit_violation : exit_ok;
  }
  if (power_losses > 0) {
    // Seeds from --start, each with up to 10 whole-cluster power losses, until K happened.
    constexpr int per_seed = 10;
    int64_t done = 0;
    int64_t acked = 0;
    uint64_t s = seed.value_or(start);
    while (done < power_losses) {
      opt.seed = s++;
      opt.power_losses = static_cast<int>(std::min<int64_t>(per_seed, power_losses - done));
      const auto r = run_seed(opt);
      done += r.power_losses;
      acked += r.acked;
      if (r.violated || opt.verbose) print_result(opt, r);
      if (r.violated) {
        std::printf("%lld whole-cluster power losses: VIOLATION (replay with --seed %llu --power-loss %d)\n",
                    static_cast<long long>(done), static_cast<unsigned long long>(opt.seed), opt.power_losses);
        return expect_violation ? exit_ok : exit_violation;
      }
    }
    std::printf("%lld whole-cluster power losses (seeds %llu..%llu, %d brokers, %d partitions): %lld acks=all "
                "records acknowledged, 0 lost, 0 invariant violations\n",
                static_cast<long long>(done), static_cast<unsigned long long>(seed.value_or(start)),
                static_cast<unsigned long long>(s - 1), opt.brokers, opt.partitions, static_cast<long long>(acked));
    return expect_violation ? exit_not_caught : exit_ok;
  }
  if (seed) {
    opt.seed = *seed;
    const auto r = run_seed(opt);
    print_result(opt, r);
    return r.violated ? exit_violation : exit_ok;
  }
  if (seeds == 0) return usage();
  uint64_t violations = 0;
  int64_t acked = 0;
  int64_t power = 0;
  for (uint64_t s = start; s < start + seeds; ++s) {
    opt.seed = s;
    const auto r = run_seed(opt);
    acked += r.acked;
    power += r.power_losses;
    if (r.violated || opt.verbose) print_result(opt, r);
    if (r.violated) {
      ++violations;
      if (expect_violation) {
        std::printf("negative control caught after %llu seed(s): replay with --seed %llu --schedule\n",
                    static_cast<unsigned long long>(s - start + 1), static_cast<unsigned long long>(s));
        return exit_ok;
      }
    }
  }
  std::printf("%llu seeds from %llu, %d brokers, %d partitions: %llu violation(s); %lld records acknowledged, "
              "%lld whole-cluster power losses\n",
              static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(start), opt.brokers,
              opt.partitions, static_cast<unsigned long long>(violations), static_cast<long long>(acked),
              static_cast<long long>(power));
  if (expect_violation) {
    std::printf("negative control NOT caught in %llu seeds\n", static_cast<unsigned long long>(seeds));
    return exit_not_caught;
  }
  return violations == 0 ? exit_ok : exit_violation;
}
