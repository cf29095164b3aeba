// raft_sim: a seeded, replayable simulation of a KRaft quorum (design.md section 10, in the
// spirit of TigerBeetle's VOPR and FoundationDB's simulation).
//
// 3 or 5 raft::node instances run in one process over a simulated network (drop, delay,
// duplicate, reorder, full and one-way partitions), a simulated disk per node (writes become
// durable only when a simulated fsync completes; a crash keeps only durable data) and a simulated
// clock per node (offset, drift, pauses). Nodes crash and restart from their durable state. A
// key/value state machine applies committed entries; snapshots are taken and installed through
// FetchSnapshot. After every event the oracle checks election safety, log matching, leader
// completeness, state machine safety, high-watermark monotonicity and, after faults heal,
// liveness.
//
// With --observers N, N more nodes run as observers (KIP-595: not among the voters, like
// process.roles=broker nodes). They suffer the same faults; the oracle also checks that an
// observer never stands or leads, that everything it applies is a prefix of the committed log
// (the same state-machine-safety check as for voters), and that after faults heal it catches up
// with everything committed before the heal.
//
//   raft_sim --seed S [--voters 3|5] [--observers 0..4] [--verbose]   one run; prints its seed and trace digest
//   raft_sim --seeds N [--start S] [--voters 3|5]     N runs from seed S
//   raft_sim --replay-check S                         runs S twice, fails unless digests match
//   raft_sim --expect-violation --seeds N ...         negative control: exit 0 iff a run violates
//   raft_sim --seeds N --failover R                   no chaos: crash the leader R times per seed and
//                                                     report leader-crash-to-commit percentiles
//
// With --disk-loss, nodes start from formatted directories (raft::persisted_state::
// awaiting_first_catch_up until their first catch-up, which the driver records durably) and a
// fault wipes a crashed voter's disk whole - log, snapshot, quorum state, that record - while
// every other voter has caught up once (one lost disk at a time: Raft tolerates crashes, and a
// lost disk is a worse fault). The oracle is unchanged: a vote that helped a stale candidate win
// shows up as a committed entry replaced (state machine safety).
//
// Exit codes: 0 ok, 1 negative control not caught, 2 usage, 3 invariant violation, 4 replay mismatch.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "ringlog/raft/node.h"

namespace {

using namespace ringlog;
using raft::bytes;
using raft::entry;
using raft::leader_epoch;
using raft::node_id;
using raft::offset;
using raft::offset_and_epoch;

constexpr int exit_ok = 0;
constexpr int exit_not_caught = 1;
constexpr int exit_usage = 2;
constexpr int exit_violation = 3;
constexpr int exit_replay_mismatch = 4;

// ---- limits of the simulation (each keeps a run short and bounded) ----
constexpr int64_t tick_interval_ms = 5;          // how often every live node's clock is advanced
constexpr int64_t chaos_phase_ms = 6'000;        // faults are injected during this phase
constexpr int64_t heal_phase_ms = 6'000;         // then removed; liveness must hold within it
constexpr int cycles = 2;                        // chaos + heal phases per run
constexpr int64_t liveness_bound_ms = 5'000;     // leader elected and a proposal committed after heal
constexpr int64_t network_delay_max_ms = 15;
constexpr int64_t fsync_delay_max_ms = 20;
constexpr int64_t slow_fsync_delay_max_ms = 300;
constexpr int keys = 8;                          // state machine keys: small so writes overwrite
constexpr int observers_max = 4;                 // --observers bound; sizes the partition matrix
constexpr size_t nodes_max = 5 + observers_max;  // voters (3 or 5) plus observers

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  return h * 0x100000001B3ULL;
}

uint64_t hash_bytes(const bytes& b, uint64_t h = 1469598103934665603ULL) {
  for (auto c : b) {
    h = (h ^ c) * 1099511628211ULL;
  }
  return h;
}

uint64_t entry_hash(const entry& e) {
  return mix(hash_bytes(e.payload, static_cast<uint64_t>(e.type) + 17), static_cast<uint64_t>(e.epoch.value()));
}

// ---- the state machine: key/value, payload "k=v" ----
using kv_map = std::map<std::string, std::string>;

bytes to_bytes(const std::string& s) { return bytes(s.begin(), s.end()); }

void apply_entry(kv_map& kv, const entry& e) {
  if (e.type != raft::entry_type::data) {
    return;
  }
  const std::string s(e.payload.begin(), e.payload.end());
  const auto eq = s.find('=');
  kv[s.substr(0, eq)] = s.substr(eq + 1);
}

bytes serialize(const kv_map& kv) {
  std::string s;
  for (const auto& [k, v] : kv) {
    s += k + "=" + v + "\n";
  }
  return to_bytes(s);
}

kv_map deserialize(const bytes& b) {
  kv_map kv;
  std::string s(b.begin(), b.end());
  size_t pos = 0;
  while (pos < s.size()) {
    const auto nl = s.find('\n', pos);
    const auto line = s.substr(pos, nl - pos);
    const auto eq = line.find('=');
    kv[line.substr(0, eq)] = line.substr(eq + 1);
    pos = nl + 1;
  }
  return kv;
}

/// The proposal number N of a "k=N" data entry; -1 for control entries.
int64_t proposal_number(const entry& e) {
  if (e.type != raft::entry_type::data) {
    return -1;
  }
  const std::string s(e.payload.begin(), e.payload.end());
  return std::strtoll(s.c_str() + s.find('=') + 1, nullptr, 10);
}

uint64_t kv_digest(const kv_map& kv) { return hash_bytes(serialize(kv)); }

// ---- the simulated disk: a log view (snapshot + entries) ----
struct disk_log {
  raft::quorum_state quorum;
  offset_and_epoch snapshot_id;
  bytes snapshot_payload;
  std::vector<entry> entries;  // from snapshot_id.end_offset, consecutive

  [[nodiscard]] offset end() const { return snapshot_id.end_offset + static_cast<int64_t>(entries.size()); }
  [[nodiscard]] offset_and_epoch end_position() const {
    return {end(), entries.empty() ? snapshot_id.epoch : entries.back().epoch};
  }
  void apply(const raft::log_write& w) {
    std::visit(
        [&](const auto& op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, raft::append_entries>) {
            for (const auto& e : op.entries) {
              RINGLOG_ASSERT_OP(e.offset_.value(), ==, end().value());
              entries.push_back(e);
            }
          } else if constexpr (std::is_same_v<T, raft::truncate_suffix>) {
            RINGLOG_ASSERT_OP(op.end_offset.value(), >=, snapshot_id.end_offset.value());
            entries.resize(std::min(entries.size(), static_cast<size_t>(op.end_offset - snapshot_id.end_offset)));
          } else if constexpr (std::is_same_v<T, raft::install_snapshot>) {
            snapshot_id = op.snapshot_id;
            snapshot_payload = op.payload;
            entries.clear();
          } else if constexpr (std::is_same_v<T, raft::delete_prefix>) {
            drop_below(op.log_start_offset);
          }
        },
        w);
  }
  void drop_below(offset start) {
    while (!entries.empty() && entries.front().offset_ < start) {
      entries.erase(entries.begin());
    }
  }
};

struct options {
  uint64_t seed = 1;
  int voters = 3;
  int observers = 0;
  bool verbose = false;
  int failover_rounds = 0;  // > 0: failover timing mode instead of chaos cycles
  bool disk_loss = false;   // --disk-loss: formatted directories and the lost-disk fault
};

struct run_result {
  bool violated = false;
  std::string violation;
  uint64_t digest = 0;
  int64_t commits = 0;
  int64_t elections = 0;
  int64_t snapshots_installed = 0;
  int64_t crashes = 0;
  std::vector<int64_t> failover_ms;  // heal -> first commit in a new epoch, per heal phase
  int64_t observer_applied = 0;      // entries applied by observers (shows they replicated)
};

// ---- events ----
struct ev_deliver {
  raft::message m;
};
struct ev_log_fsync {
  size_t node;
  int incarnation;
  size_t ops;                  // pending writes this fsync covers
  offset_and_epoch position;   // the written log end when it was issued
};
struct ev_quorum_fsync {
  size_t node;
  int incarnation;
  raft::quorum_state state;
  uint64_t version;
};
struct ev_crash {
  size_t node;
};
struct ev_restart {
  size_t node;
};
/// `node` learns that `peer`'s process is gone: a message to a crashed node is refused at connect
/// (ECONNREFUSED), as the broker's transport reports it (raft::node::peer_unreachable).
struct ev_refused {
  size_t node;
  node_id peer;
};
using event_body = std::variant<ev_deliver, ev_log_fsync, ev_quorum_fsync, ev_crash, ev_restart, ev_refused>;
struct event {
  int64_t at_ms;
  uint64_t seq;
  event_body body;
  bool operator>(const event& o) const { return at_ms != o.at_ms ? at_ms > o.at_ms : seq > o.seq; }
};

struct sim_node {
  node_id id;
  std::unique_ptr<raft::random_source> random;
  std::unique_ptr<raft::node> raft;  // null while crashed
  int incarnation = 0;
  bool caught_up_once = false;  // durable: effects::caught_up_first_time was carried out (meta.properties)
  disk_log durable;
  disk_log written;
  std::vector<raft::log_write> pending;  // written, not yet covered by a completed fsync
  bool fsync_in_flight = false;
  int64_t quorum_fsync_ready_ms = 0;     // quorum-state fsyncs complete in order
  int64_t fsync_delay_max_ms = 20;       // raised by the "slow disk" fault
  // clock
  int64_t clock_offset_ms = 0;
  int64_t drift_ppm = 0;
  int64_t paused_until_ms = 0;
  int64_t last_local_ms = 0;
  // state machine
  kv_map kv;
  offset applied{0};
  offset last_high_watermark{0};
  std::vector<uint64_t> chain;  // log-matching chain hash per written entry
  uint64_t chain_base = 0;      // chain hash at written.snapshot_id.end_offset
};

class simulation {
 public:
  explicit simulation(const options& opt) : opt_(opt), rng_(opt.seed) {}

  run_result run() {
    setup();
    if (opt_.failover_rounds > 0) {
      return run_failovers();
    }
    int64_t cycle_start = 0;
    for (int c = 0; c < cycles && !result_.violated; ++c) {
      chaos_ = true;
      run_until(cycle_start + chaos_phase_ms);
      heal();
      const size_t committed_at_heal = committed_.size();
      run_until(cycle_start + chaos_phase_ms + heal_phase_ms);
      check_observers_caught_up(committed_at_heal);
      if (!result_.violated && heal_started_ms_ >= 0) {
        violation("liveness: no leader committed a proposal within " + std::to_string(liveness_bound_ms) +
                  " ms after faults healed");
      }
      cycle_start += chaos_phase_ms + heal_phase_ms;
    }
    result_.digest = digest_;
    return result_;
  }

 private:
  /// Failover timing without chaos: crash the leader (no graceful resign), measure until a
  /// proposal made after the crash commits, restart the old leader, repeat.
  run_result run_failovers() {
    int64_t t = 3'000;
    run_until(t);
    for (int k = 0; k < opt_.failover_rounds && !result_.violated; ++k) {
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].raft && nodes_[i].raft->role() == raft::role::leader) {
          crash(i);
          schedule(now_ms_ + 500, ev_restart{i});
        }
      }
      heal_started_ms_ = now_ms_;
      heal_proposal_floor_ = proposals_;
      t += 4'000;
      run_until(t);
    }
    result_.digest = digest_;
    return result_;
  }

  // ---------------------------------------------------------------- setup and main loop
  void setup() {
    for (int i = 0; i < opt_.voters; ++i) {
      voters_.push_back(node_id{i + 1});
    }
    for (int i = 0; i < opt_.voters + opt_.observers; ++i) {
      auto& n = nodes_.emplace_back();
      n.id = node_id{i + 1};  // ids above the voters' are observers
      n.clock_offset_ms = rng_.uniform(0, 10'000);
      n.drift_ppm = rng_.uniform(-20'000, 20'000);  // +-2%
      start_node(static_cast<size_t>(i));
    }
  }

  raft::config config_for(node_id self) const {
    raft::config c;
    c.self = self;
    c.voters = voters_;
    c.cluster_id = "sim";
    return c;
  }

  int64_t local_ms(const sim_node& n) const {
    return now_ms_ + n.clock_offset_ms + now_ms_ * n.drift_ppm / 1'000'000;
  }

  void start_node(size_t i) {
    auto& n = nodes_[i];
    ++n.incarnation;
    n.random = std::make_unique<raft::seeded_random>(rng_.next_u64());
    raft::persisted_state ps{n.durable.quorum, n.durable.snapshot_id, n.durable.snapshot_payload, n.durable.entries};
    ps.awaiting_first_catch_up = opt_.disk_loss && !n.caught_up_once;
    n.written = n.durable;
    n.pending.clear();
    n.fsync_in_flight = false;
    n.quorum_fsync_ready_ms = now_ms_;
    n.last_local_ms = local_ms(n);
    n.raft = std::make_unique<raft::node>(config_for(n.id), std::move(ps), *n.random, n.last_local_ms,
                                          int64_t{n.incarnation} << 40);
    n.kv = n.durable.snapshot_id.end_offset > offset{0} ? deserialize(n.durable.snapshot_payload) : kv_map{};
    n.applied = n.durable.snapshot_id.end_offset;
    n.last_high_watermark = n.raft->high_watermark();
    rebuild_chain(n);
    trace(i, "start", n.incarnation);
    drain(i);
  }

  void crash(size_t i) {
    auto& n = nodes_[i];
    if (!n.raft) {
      return;
    }
    ++result_.crashes;
    trace(i, "crash", 0);
    n.raft.reset();
    n.pending.clear();
    n.written = n.durable;
  }

  void run_until(int64_t end_ms) {
    while (!result_.violated && now_ms_ < end_ms) {
      const int64_t next_tick = next_tick_ms_;
      if (!events_.empty() && events_.top().at_ms <= next_tick) {
        event e = events_.top();
        events_.pop();
        now_ms_ = std::max(now_ms_, e.at_ms);
        process(e);
      } else {
        now_ms_ = next_tick;
        next_tick_ms_ += tick_interval_ms;
        tick_all();
      }
      check_invariants();
    }
  }

  void schedule(int64_t at_ms, event_body body) { events_.push(event{at_ms, seq_++, std::move(body)}); }

  void tick_all() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      auto& n = nodes_[i];
      if (!n.raft || now_ms_ < n.paused_until_ms) {
        continue;
      }
      n.last_local_ms = std::max(n.last_local_ms, local_ms(n));
      n.raft->tick(n.last_local_ms);
      drain(i);
    }
    if (chaos_) {
      inject_faults();
    }
    maybe_propose();
    maybe_snapshot();
    check_liveness();
  }

  void process(const event& e) {
    std::visit(
        [&](const auto& ev) {
          using T = std::decay_t<decltype(ev)>;
          if constexpr (std::is_same_v<T, ev_deliver>) {
            deliver(ev.m);
          } else if constexpr (std::is_same_v<T, ev_log_fsync>) {
            log_fsync_done(ev);
          } else if constexpr (std::is_same_v<T, ev_quorum_fsync>) {
            quorum_fsync_done(ev);
          } else if constexpr (std::is_same_v<T, ev_crash>) {
            crash(ev.node);
          } else if constexpr (std::is_same_v<T, ev_restart>) {
            if (!nodes_[ev.node].raft) {
              start_node(ev.node);
            }
          } else if constexpr (std::is_same_v<T, ev_refused>) {
            refused(ev);
          }
        },
        e.body);
  }

  size_t index_of(node_id id) const { return static_cast<size_t>(id.value() - 1); }

  bool paused(const sim_node& n) const { return now_ms_ < n.paused_until_ms; }

  // ---------------------------------------------------------------- network
  void send(const raft::message& m) {
    const size_t from = index_of(m.from);
    const size_t to = index_of(m.to);
    if (blocked_[from][to] || rng_.uniform(0, 999) < drop_permille_) {
      trace(from, "drop", m.correlation_id);
      return;
    }
    const int copies = rng_.uniform(0, 999) < duplicate_permille_ ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      schedule(now_ms_ + rng_.uniform(1, network_delay_max_ms), ev_deliver{m});
    }
  }

  void deliver(const raft::message& m) {
    const size_t to = index_of(m.to);
    auto& n = nodes_[to];
    if (!n.raft) {
      // Nothing listens on a crashed node's port: the sender's connect is refused one round trip later.
      schedule(now_ms_ + rng_.uniform(1, network_delay_max_ms), ev_refused{index_of(m.from), m.to});
      return;
    }
    if (paused(n)) {
      schedule(n.paused_until_ms, ev_deliver{m});  // a stopped process reads its socket later
      return;
    }
    digest_ = mix(digest_, mix(static_cast<uint64_t>(m.correlation_id), m.body.index()));
    if (opt_.verbose) {
      std::printf("%8lld  %d -> %d  %s #%lld\n", static_cast<long long>(now_ms_), m.from.value(), m.to.value(),
                  std::string(raft::message_name(m.body)).c_str(), static_cast<long long>(m.correlation_id));
    }
    n.last_local_ms = std::max(n.last_local_ms, local_ms(n));
    n.raft->tick(n.last_local_ms);
    n.raft->handle(m);
    drain(to);
  }

  void refused(const ev_refused& ev) {
    auto& n = nodes_[ev.node];
    if (!n.raft || paused(n)) return;
    n.last_local_ms = std::max(n.last_local_ms, local_ms(n));
    n.raft->tick(n.last_local_ms);
    n.raft->peer_unreachable(ev.peer);
    drain(ev.node);
  }

  // ---------------------------------------------------------------- disk
  void issue_fsync(size_t i) {
    auto& n = nodes_[i];
    if (n.fsync_in_flight || n.pending.empty()) {
      return;
    }
    n.fsync_in_flight = true;
    schedule(now_ms_ + rng_.uniform(1, n.fsync_delay_max_ms),
             ev_log_fsync{i, n.incarnation, n.pending.size(), n.written.end_position()});
  }

  void log_fsync_done(const ev_log_fsync& ev) {
    auto& n = nodes_[ev.node];
    if (!n.raft || n.incarnation != ev.incarnation) {
      return;  // the crash lost what this fsync would have made durable
    }
    if (paused(n)) {
      schedule(n.paused_until_ms, ev);
      return;
    }
    for (size_t k = 0; k < ev.ops; ++k) {
      n.durable.apply(n.pending[k]);
    }
    n.pending.erase(n.pending.begin(), n.pending.begin() + static_cast<ptrdiff_t>(ev.ops));
    n.fsync_in_flight = false;
    trace(ev.node, "fsync", ev.position.end_offset.value());
    n.raft->on_append_fsynced(ev.position);
    drain(ev.node);
    issue_fsync(ev.node);
  }

  void quorum_fsync_done(const ev_quorum_fsync& ev) {
    auto& n = nodes_[ev.node];
    if (!n.raft || n.incarnation != ev.incarnation) {
      return;
    }
    if (paused(n)) {
      schedule(n.paused_until_ms, ev);
      return;
    }
    n.durable.quorum = ev.state;
    trace(ev.node, "quorum-fsync(epoch*100+voted)", ev.state.epoch.value() * 100 + ev.state.voted_id.value());
    n.raft->on_quorum_state_persisted(ev.version);
    drain(ev.node);
  }

  // ---------------------------------------------------------------- effects
  void drain(size_t i) {
    auto& n = nodes_[i];
    raft::effects e = n.raft->take_effects();
    if (e.caught_up_first_time) {
      n.caught_up_once = true;   // written at once, like meta.properties
      trace(i, "caught-up-once", n.raft->high_watermark().value());
    }
    if (e.role_changed && is_observer(i) && (*e.role_changed == raft::role::leader ||
                                             *e.role_changed == raft::role::candidate ||
                                             *e.role_changed == raft::role::prospective)) {
      violation("observer " + std::to_string(n.id.value()) + " became " + raft::to_string(*e.role_changed));
      return;
    }
    if (e.role_changed) {
      trace(i, "role(epoch*10+role)", n.raft->epoch().value() * 10 + static_cast<int64_t>(*e.role_changed));
      if (*e.role_changed == raft::role::leader) {
        on_new_leader(i);
        // Targeted fault (Raft paper figure 8): a new leader dies before its own epoch's first
        // entry replicates, leaving old-epoch entries on some nodes and its own on none.
        const int64_t dice = rng_.uniform(0, 99);
        if (chaos_ && dice < 25) {
          schedule(now_ms_ + rng_.uniform(0, 40), ev_crash{i});
          schedule(now_ms_ + rng_.uniform(50, 600), ev_restart{i});
        } else if (chaos_ && dice < 40) {
          // ... or goes mute toward some voters (one-way partition): it hears their fetches but
          // its answers are lost, so old-epoch entries count before its own epoch's entry arrives.
          for (size_t j = 0; j < nodes_.size(); ++j) {
            blocked_[i][j] = i != j && rng_.uniform(0, 1) == 1;
          }
          trace(i, "mute", 0);
        }
      }
    }
    if (e.quorum_state_) {
      n.written.quorum = e.quorum_state_->state;
      n.quorum_fsync_ready_ms = std::max(n.quorum_fsync_ready_ms, now_ms_) + rng_.uniform(1, fsync_delay_max_ms);
      schedule(n.quorum_fsync_ready_ms, ev_quorum_fsync{i, n.incarnation, e.quorum_state_->state, e.quorum_state_->version});
      const bool is_vote = e.quorum_state_->state.voted_id != raft::no_node &&
                           e.quorum_state_->state.voted_id != n.id && e.quorum_state_->state.leader_id == raft::no_node;
      // Targeted fault: crash a voter right after it voted, before the vote is durable.
      if (chaos_ && is_vote && rng_.uniform(0, 99) < 30) {
        schedule(now_ms_ + rng_.uniform(0, 1), ev_crash{i});
        schedule(now_ms_ + rng_.uniform(5, 60), ev_restart{i});
      }
    }
    for (auto& w : e.log_writes) {
      written_apply(i, w);
      n.pending.push_back(std::move(w));
    }
    issue_fsync(i);
    if (!n.raft) {
      return;
    }
    for (const auto& m : e.messages) {
      send(m);
    }
    if (e.apply_snapshot) {
      const offset end = e.apply_snapshot->snapshot_id.end_offset;
      n.kv = deserialize(e.apply_snapshot->payload);
      if (end <= n.applied) {
        violation("node " + std::to_string(n.id.value()) + " asked to load a snapshot at or below its applied offset");
        return;
      }
      n.applied = end;
      ++result_.snapshots_installed;
      check_state_digest(i, end);
    }
    for (const auto& c : e.committed) {
      apply_committed(i, c);
      if (result_.violated) {
        return;
      }
    }
    if (e.high_watermark) {
      if (n.applied != *e.high_watermark) {
        violation("node " + std::to_string(n.id.value()) + " applied offset differs from its high watermark");
      }
    }
  }

  void written_apply(size_t i, const raft::log_write& w) {
    auto& n = nodes_[i];
    n.written.apply(w);
    if (std::holds_alternative<raft::install_snapshot>(w) || std::holds_alternative<raft::delete_prefix>(w)) {
      rebuild_chain(n);
      return;
    }
    if (const auto* t = std::get_if<raft::truncate_suffix>(&w)) {
      n.chain.resize(std::min(n.chain.size(), static_cast<size_t>(t->end_offset - n.written.snapshot_id.end_offset)));
      trace(i, "truncate", t->end_offset.value());
      return;
    }
    // append: extend the chain and check log matching against every entry ever written anywhere
    for (size_t k = n.chain.size(); k < n.written.entries.size(); ++k) {
      const entry& e = n.written.entries[k];
      const uint64_t prev = k == 0 ? n.chain_base : n.chain[k - 1];
      const uint64_t h = mix(prev, entry_hash(e));
      n.chain.push_back(h);
      const auto key = std::make_pair(e.offset_.value(), e.epoch.value());
      const auto [it, inserted] = chains_.emplace(key, h);
      if (!inserted && it->second != h) {
        violation("log matching: node " + std::to_string(n.id.value()) + " holds a different entry or prefix at offset " +
                  std::to_string(e.offset_.value()) + " epoch " + std::to_string(e.epoch.value()));
        return;
      }
    }
  }

  void rebuild_chain(sim_node& n) {
    const offset start = n.written.snapshot_id.end_offset;
    n.chain_base = start > offset{0} && static_cast<size_t>(start.value()) <= committed_.size()
                       ? committed_[static_cast<size_t>(start.value() - 1)].chain
                       : 0;
    n.chain.clear();
    uint64_t h = n.chain_base;
    for (const auto& e : n.written.entries) {
      h = mix(h, entry_hash(e));
      n.chain.push_back(h);
    }
  }

  // ---------------------------------------------------------------- state machine + oracle
  struct committed_entry {
    leader_epoch epoch;
    uint64_t hash;
    uint64_t chain;
    uint64_t state_digest;
    int32_t commit_epoch;  // epoch of the node that first saw it committed (its leader's epoch)
  };

  void apply_committed(size_t i, const entry& e) {
    auto& n = nodes_[i];
    if (e.offset_ != n.applied) {
      violation("node " + std::to_string(n.id.value()) + " committed offset " + std::to_string(e.offset_.value()) +
                " but has applied up to " + std::to_string(n.applied.value()));
      return;
    }
    apply_entry(n.kv, e);
    n.applied = e.offset_ + 1;
    if (is_observer(i)) {
      ++result_.observer_applied;
    }
    const auto o = static_cast<size_t>(e.offset_.value());
    const uint64_t digest = kv_digest(n.kv);
    if (o < committed_.size()) {
      const auto& c = committed_[o];
      if (c.epoch != e.epoch || c.hash != entry_hash(e)) {
        violation("state machine safety: node " + std::to_string(n.id.value()) + " committed a different entry at offset " +
                  std::to_string(o) + " (epoch " + std::to_string(e.epoch.value()) + " vs " +
                  std::to_string(c.epoch.value()) + ")");
        return;
      }
      if (c.state_digest != digest) {
        violation("state machine safety: node " + std::to_string(n.id.value()) + " state differs at offset " +
                  std::to_string(o));
      }
      return;
    }
    if (o != committed_.size()) {
      violation("commit gap at offset " + std::to_string(o));
      return;
    }
    const uint64_t prev = o == 0 ? 0 : committed_.back().chain;
    committed_.push_back({e.epoch, entry_hash(e), mix(prev, entry_hash(e)), digest, n.raft->epoch().value()});
    ++result_.commits;
    if (heal_started_ms_ >= 0 && proposal_number(e) > heal_proposal_floor_) {
      result_.failover_ms.push_back(now_ms_ - heal_started_ms_);
      heal_started_ms_ = -1;
    }
  }

  void check_state_digest(size_t i, offset end) {
    const auto o = static_cast<size_t>(end.value());
    if (o > committed_.size()) {
      violation("snapshot at " + std::to_string(o) + " beyond anything committed");
      return;
    }
    if (kv_digest(nodes_[i].kv) != committed_[o - 1].state_digest) {
      violation("state machine safety: snapshot state of node " + std::to_string(nodes_[i].id.value()) +
                " differs at offset " + std::to_string(o));
    }
  }

  void on_new_leader(size_t i) {
    auto& n = nodes_[i];
    ++result_.elections;
    const int32_t epoch = n.raft->epoch().value();
    const auto [it, inserted] = leaders_.emplace(epoch, n.id.value());
    if (!inserted && it->second != n.id.value()) {
      violation("election safety: nodes " + std::to_string(it->second) + " and " + std::to_string(n.id.value()) +
                " both led epoch " + std::to_string(epoch));
      return;
    }
    // Leader completeness (Raft §5.4): an entry committed in epoch T is in the log (or the
    // snapshot) of every leader of an epoch > T. A leader of an older epoch elected late in real
    // time cannot commit anything and is not bound by it.
    const auto& log = n.raft->log();
    for (size_t o = 0; o < committed_.size(); ++o) {
      if (committed_[o].commit_epoch >= epoch) {
        continue;
      }
      const auto at = offset{static_cast<int64_t>(o)};
      if (at < log.log_start_offset()) {
        continue;  // inside the leader's snapshot, whose state was checked when it was loaded
      }
      if (at >= log.log_end_offset() || log.at(at).epoch != committed_[o].epoch ||
          entry_hash(log.at(at)) != committed_[o].hash) {
        violation("leader completeness: leader " + std::to_string(n.id.value()) + " of epoch " +
                  std::to_string(epoch) + " lacks offset " + std::to_string(o) + " committed in epoch " +
                  std::to_string(committed_[o].commit_epoch));
        return;
      }
    }
  }

  void check_invariants() {
    if (result_.violated) {
      return;
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      auto& n = nodes_[i];
      if (!n.raft) {
        continue;
      }
      const offset hw = n.raft->high_watermark();
      if (hw < n.last_high_watermark) {
        violation("high watermark of node " + std::to_string(n.id.value()) + " moved backwards from " +
                  std::to_string(n.last_high_watermark.value()) + " to " + std::to_string(hw.value()));
        return;
      }
      n.last_high_watermark = hw;
      if (n.raft->log().log_end_offset() != n.written.end()) {
        violation("driver: node " + std::to_string(n.id.value()) + " log end differs from what its effects wrote");
        return;
      }
      if (n.raft->role() == raft::role::leader) {
        const auto [it, inserted] = leaders_.emplace(n.raft->epoch().value(), n.id.value());
        if (!inserted && it->second != n.id.value()) {
          violation("election safety: two leaders in epoch " + std::to_string(n.raft->epoch().value()));
          return;
        }
      }
    }
  }

  [[nodiscard]] bool is_observer(size_t i) const { return i >= static_cast<size_t>(opt_.voters); }

  /// After a heal phase every observer has applied (or loaded in a snapshot) all that was
  /// committed when the heal began: it found the leader again and caught up.
  void check_observers_caught_up(size_t committed_at_heal) {
    for (size_t i = static_cast<size_t>(opt_.voters); i < nodes_.size() && !result_.violated; ++i) {
      const auto& n = nodes_[i];
      if (n.raft && n.applied.value() < static_cast<int64_t>(committed_at_heal)) {
        violation("observer " + std::to_string(n.id.value()) + " applied only " + std::to_string(n.applied.value()) +
                  " of the " + std::to_string(committed_at_heal) + " entries committed before the heal");
      }
    }
  }

  void check_liveness() {
    if (heal_started_ms_ >= 0 && now_ms_ - heal_started_ms_ > liveness_bound_ms) {
      violation("liveness: no leader committed a proposal within " + std::to_string(liveness_bound_ms) +
                " ms after faults healed");
    }
  }

  void violation(const std::string& what) {
    if (!result_.violated) {
      result_.violated = true;
      result_.violation = what + " (at " + std::to_string(now_ms_) + " ms)";
    }
  }

  void trace(size_t i, const char* what, int64_t value) {
    digest_ = mix(digest_, mix(static_cast<uint64_t>(now_ms_), mix(i, mix(hash_bytes(to_bytes(what)), static_cast<uint64_t>(value)))));
    if (opt_.verbose) {
      std::printf("%8lld  node %zu  %s %lld\n", static_cast<long long>(now_ms_), i + 1, what, static_cast<long long>(value));
    }
  }

  // ---------------------------------------------------------------- workload
  void maybe_propose() {
    if (rng_.uniform(0, 99) >= 40) {
      return;
    }
    std::vector<size_t> leaders;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].raft && !paused(nodes_[i]) && nodes_[i].raft->role() == raft::role::leader) {
        leaders.push_back(i);
      }
    }
    if (leaders.empty()) {
      return;
    }
    const size_t i = leaders[static_cast<size_t>(rng_.uniform(0, static_cast<int64_t>(leaders.size()) - 1))];
    const std::string payload = "k" + std::to_string(rng_.uniform(0, keys - 1)) + "=" + std::to_string(++proposals_);
    auto r = nodes_[i].raft->propose(to_bytes(payload));
    trace(i, "propose", r.ok() ? r.value().value() : -1);
    drain(i);
  }

  void maybe_snapshot() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      auto& n = nodes_[i];
      if (!n.raft || paused(n) || rng_.uniform(0, 999) >= 5) {
        continue;
      }
      const offset end = n.applied;
      if (end <= n.raft->log().log_start_offset() + 10 || end > n.raft->snapshot_limit()) {
        continue;
      }
      const offset_and_epoch id{end, *n.raft->log().epoch_at(end - 1)};
      const bytes payload = serialize(n.kv);
      // The driver writes the snapshot file, fsyncs and renames it before telling raft.
      n.durable.snapshot_id = id;
      n.durable.snapshot_payload = payload;
      n.durable.drop_below(end);
      n.written.snapshot_id = id;
      n.written.snapshot_payload = payload;
      n.written.drop_below(end);
      auto r = n.raft->on_snapshot_created(id, payload);
      if (!r.ok()) {
        violation("on_snapshot_created refused a snapshot within snapshot_limit: " + r.error().message);
        return;
      }
      rebuild_chain(n);
      trace(i, "snapshot", end.value());
      drain(i);
    }
  }

  // ---------------------------------------------------------------- faults
  void inject_faults() {
    if (rng_.uniform(0, 999) >= 8) {  // about one fault action per 600 ms
      return;
    }
    const auto pick = [&] { return static_cast<size_t>(rng_.uniform(0, static_cast<int64_t>(nodes_.size()) - 1)); };
    if (opt_.disk_loss && rng_.uniform(0, 3) == 0) {
      lose_disk(static_cast<size_t>(rng_.uniform(0, opt_.voters - 1)));
      return;
    }
    switch (rng_.uniform(0, 10)) {
      case 0:
      case 1: {  // crash and restart later
        const size_t i = pick();
        schedule(now_ms_, ev_crash{i});
        schedule(now_ms_ + rng_.uniform(10, 3'000), ev_restart{i});
        break;
      }
      case 2: {  // isolate one node both ways
        const size_t i = pick();
        for (size_t j = 0; j < nodes_.size(); ++j) {
          blocked_[i][j] = blocked_[j][i] = (i != j);
        }
        trace(i, "isolate", 0);
        break;
      }
      case 3: {  // one-way partition of a random pair
        const size_t a = pick();
        const size_t b = pick();
        blocked_[a][b] = a != b;
        trace(a, "one-way", static_cast<int64_t>(b));
        break;
      }
      case 4: {  // split in two random groups
        std::vector<bool> side(nodes_.size());
        for (size_t j = 0; j < nodes_.size(); ++j) {
          side[j] = rng_.uniform(0, 1) == 1;
        }
        for (size_t a = 0; a < nodes_.size(); ++a) {
          for (size_t b = 0; b < nodes_.size(); ++b) {
            blocked_[a][b] = side[a] != side[b];
          }
        }
        trace(0, "split", 0);
        break;
      }
      case 5:  // heal the network
        clear_partitions();
        trace(0, "heal-net", 0);
        break;
      case 6: {  // pause a process (GC, SIGSTOP)
        const size_t i = pick();
        nodes_[i].paused_until_ms = now_ms_ + rng_.uniform(100, 2'500);
        trace(i, "pause", nodes_[i].paused_until_ms);
        break;
      }
      case 7:
        drop_permille_ = std::array<int64_t, 3>{0, 50, 200}[static_cast<size_t>(rng_.uniform(0, 2))];
        duplicate_permille_ = rng_.uniform(0, 50);
        trace(0, "lossy", drop_permille_);
        break;
      case 8: {  // a leader steps down gracefully (controlled shutdown)
        for (size_t i = 0; i < nodes_.size(); ++i) {
          if (nodes_[i].raft && nodes_[i].raft->role() == raft::role::leader) {
            nodes_[i].raft->resign();
            trace(i, "resign", 0);
            drain(i);
          }
        }
        break;
      }
      case 9: {  // a slow disk: fsyncs take up to slow_fsync_delay_max_ms
        const size_t i = pick();
        nodes_[i].fsync_delay_max_ms = nodes_[i].fsync_delay_max_ms == fsync_delay_max_ms ? slow_fsync_delay_max_ms
                                                                                          : fsync_delay_max_ms;
        trace(i, "slow-disk", nodes_[i].fsync_delay_max_ms);
        break;
      }
      case 10: {  // crash the leader while it has unsynced or uncommitted entries
        for (size_t i = 0; i < nodes_.size(); ++i) {
          if (nodes_[i].raft && nodes_[i].raft->role() == raft::role::leader && !nodes_[i].pending.empty()) {
            schedule(now_ms_ + rng_.uniform(0, 5), ev_crash{i});
            schedule(now_ms_ + rng_.uniform(20, 1'000), ev_restart{i});
          }
        }
        break;
      }
    }
  }

  /// The lost-disk fault: voter `i` crashes and restarts later with an empty directory, when it
  /// and every other voter have caught up once (at most one voter without its history at a time).
  void lose_disk(size_t i) {
    for (int v = 0; v < opt_.voters; ++v) {
      if (!nodes_[static_cast<size_t>(v)].caught_up_once) return;
    }
    crash(i);
    auto& n = nodes_[i];
    n.durable = disk_log{};
    n.written = disk_log{};
    n.caught_up_once = false;
    trace(i, "disk-loss", 0);
    schedule(now_ms_ + rng_.uniform(10, 3'000), ev_restart{i});
  }

  void clear_partitions() {
    for (auto& row : blocked_) {
      row.fill(false);
    }
  }

  void heal() {
    chaos_ = false;
    clear_partitions();
    drop_permille_ = 0;
    duplicate_permille_ = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      nodes_[i].paused_until_ms = std::min(nodes_[i].paused_until_ms, now_ms_);
      nodes_[i].fsync_delay_max_ms = fsync_delay_max_ms;
      if (!nodes_[i].raft) {
        start_node(i);
      }
    }
    heal_started_ms_ = now_ms_;
    heal_proposal_floor_ = proposals_;  // a proposal made after the heal must commit
    trace(0, "heal", 0);
  }

  options opt_;
  raft::seeded_random rng_;
  std::vector<node_id> voters_;
  std::vector<sim_node> nodes_;
  std::priority_queue<event, std::vector<event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  int64_t now_ms_ = 0;
  int64_t next_tick_ms_ = 0;
  bool chaos_ = false;
  std::array<std::array<bool, nodes_max>, nodes_max> blocked_{};
  int64_t drop_permille_ = 0;
  int64_t duplicate_permille_ = 0;
  int64_t proposals_ = 0;
  int64_t heal_started_ms_ = -1;
  int64_t heal_proposal_floor_ = 0;
  std::map<int32_t, int32_t> leaders_;                         // epoch -> leader, all history
  std::map<std::pair<int64_t, int32_t>, uint64_t> chains_;     // (offset, epoch) -> prefix chain hash
  std::vector<committed_entry> committed_;                     // by offset, from 0
  uint64_t digest_ = 0xcbf29ce484222325ULL;
  run_result result_;
};

run_result run_seed(const options& opt) {
  simulation sim(opt);
  return sim.run();
}

void print_result(const options& opt, const run_result& r) {
  std::printf("seed %llu voters %d observers %d observer_applied %lld digest %016llx commits %lld elections %lld crashes %lld snapshots_installed %lld %s%s\n",
              static_cast<unsigned long long>(opt.seed), opt.voters, opt.observers,
              static_cast<long long>(r.observer_applied), static_cast<unsigned long long>(r.digest),
              static_cast<long long>(r.commits), static_cast<long long>(r.elections), static_cast<long long>(r.crashes),
              static_cast<long long>(r.snapshots_installed), r.violated ? "VIOLATION: " : "ok",
              r.violated ? r.violation.c_str() : "");
}

int usage() {
  std::fprintf(stderr,
               "usage: raft_sim --seed S | --seeds N [--start S] | --replay-check S  [--voters 3|5] [--observers 0..4] "
               "[--verbose] "
               "[--expect-violation] [--failover ROUNDS] [--disk-loss]\n");
  return exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  std::optional<uint64_t> seed;
  std::optional<uint64_t> replay_seed;
  uint64_t seeds = 0;
  uint64_t start = 1;
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
    } else if (arg == "--voters" && has_value) {
      opt.voters = std::atoi(argv[++a]);
    } else if (arg == "--observers" && has_value) {
      opt.observers = std::atoi(argv[++a]);
    } else if (arg == "--failover" && has_value) {
      opt.failover_rounds = std::atoi(argv[++a]);
    } else if (arg == "--disk-loss") {
      opt.disk_loss = true;
    } else if (arg == "--verbose") {
      opt.verbose = true;
    } else if (arg == "--expect-violation") {
      expect_violation = true;
    } else {
      return usage();
    }
  }
  if ((opt.voters != 3 && opt.voters != 5) || opt.observers < 0 || opt.observers > observers_max) {
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
  if (seed) {
    opt.seed = *seed;
    const auto r = run_seed(opt);
    print_result(opt, r);
    for (auto f : r.failover_ms) {
      std::printf("heal-to-commit %lld ms\n", static_cast<long long>(f));
    }
    return r.violated ? exit_violation : exit_ok;
  }
  if (seeds == 0) {
    return usage();
  }
  uint64_t violations = 0;
  std::vector<int64_t> failovers;
  for (uint64_t s = start; s < start + seeds; ++s) {
    opt.seed = s;
    const auto r = run_seed(opt);
    failovers.insert(failovers.end(), r.failover_ms.begin(), r.failover_ms.end());
    if (r.violated || opt.verbose) {
      print_result(opt, r);
    }
    if (r.violated) {
      ++violations;
      if (expect_violation) {
        std::printf("negative control caught after %llu seed(s): replay with --seed %llu\n",
                    static_cast<unsigned long long>(s - start + 1), static_cast<unsigned long long>(s));
        return exit_ok;
      }
    }
  }
  std::sort(failovers.begin(), failovers.end());
  const auto pct = [&](double p) {
    return failovers.empty() ? -1LL : static_cast<long long>(failovers[static_cast<size_t>(p * (failovers.size() - 1))]);
  };
  std::printf("%llu seeds from %llu, %d voters, %d observers: %llu violation(s); %s ms p50 %lld p99 %lld max %lld\n",
              static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(start), opt.voters, opt.observers,
              static_cast<unsigned long long>(violations),
              opt.failover_rounds > 0 ? "leader-crash-to-commit" : "heal-to-commit", pct(0.5), pct(0.99), pct(1.0));
  if (expect_violation) {
    std::printf("negative control NOT caught in %llu seeds\n", static_cast<unsigned long long>(seeds));
    return exit_not_caught;
  }
  return violations == 0 ? exit_ok : exit_violation;
}
