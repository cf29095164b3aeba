// cluster_sim: a seeded, replayable simulation of 3 to 5 REAL brokers in one process (issue 28,
// "Proof: tests/sim/cluster_sim"). Each node is broker::open_broker_async - the broker, the
// controller and its raft metadata quorum, replication and storage as the binary runs them - on
// its own io::sim_file_system, with a sim_runtime (its shards' tasks and timers), sim_disk
// (fdatasyncs completing after a seeded delay) and sim_transport (the cluster listener) from
// sim_world.h: one thread, one event queue, a manual clock. Every choice comes from the seed.
//
// Faults (one at a time, each healed before the next; a seeded schedule): a node isolated, one
// direction of one link dropped, a link slowed (delay spikes), lossy links, a node crashed with
// power loss (sim_file_system::crash: what was not fdatasynced is lost or torn) and restarted
// with open_broker_async on the same disk, the leader of a partition crashed likewise, every node
// losing power at once (only what was fdatasynced stays anywhere), and a cascade on one partition
// (its leader's link to one follower fails until that follower leaves the ISR, then the other
// follower and the leader lose power: the partition stays offline until its last in-sync replica
// is back; an unclean election would lose acknowledged records).
//
// Workload, through the broker API as the HTTP gateway calls it: one topic (replication factor
// 3, 2 or 3 partitions, min.insync.replicas 2), acks=all produces of unique values to random live
// nodes (the broker forwards to the leader), read_committed fetches from random live nodes.
// --transactions adds transactional producers (txn_workload.h: InitProducerId, transactional
// produces, commit or abort at the id's coordinator, as the HTTP gateway calls them) on the same
// topic; --reassignment adds partition reassignments at seeded times (reassignment_workload.h);
// --clock-skew puts each node's clock off the world's by a seeded amount (clock_skew_max_ms);
// --clock-steps steps each node's wall clock (base::clock::now_ms) back and forth at seeded times
// during the faults, as NTP may, while its monotonic clock (monotonic_ms) runs on: the lease,
// sessions, raft's timers and the ISR's lag time must measure on the monotonic one.
//
// Checks (a violation prints the seed, the rule and the last trace lines, exit 1):
//   - one committed history: an offset is never acknowledged or read with two different values;
//   - ends never go backwards as clients see them: a fetch answer's high watermark and log end are
//     never at or below an offset acknowledged before the fetch was sent, and one node (in one
//     incarnation) never answers a high watermark below one it answered before - except an
//     answer that may come from a node cut off from the rest (the node asked, or a replica of the
//     partition it forwards to; isolated, or an end of a dropped link) from the
//     fault's start to cut_off_grace_ms after its heal (after a majority of the nodes serves
//     again, when fewer did at the heal: until then no controller can tell it it was replaced)
//     - but an isolated node's answers at or
//     above the high watermark it answers are judged from a session timeout into the isolation
//     to the end of that grace (its leadership lease has lapsed, and is renewed after the heal
//     only once it applied its fence: until then it must refuse them) - docs/kafka.md's open part
//     (replication::answer_fetch: a node cut off from the controller may answer with its old
//     figure), as tests/cluster/checker.py's cut_off_windows exempts it. (Across nodes a
//     follower's high watermark lags its leader's and an unacknowledged log end may be cut, so
//     the acknowledgement is the cross-node bound.);
//   - liveness after the final heal: every partition acknowledges an acks=all produce within
//     liveness_ms;
//   - no acknowledged record lost: every acknowledged record is read back at its offset;
//   - replicas agree below the high watermark: each node's log of each partition, read with
//     storage::partition_log from its file system at the end, holds the read-back records at
//     every offset below min(its log end, the high watermark) (records of aborted transactions,
//     which read_committed skips, the same on every replica);
//   - read_committed answers: records below the last stable offset, itself at most the high
//     watermark; no acknowledged record missing from the range an answer covers
//     ([fetch_offset, next_fetch_offset)); one node's last stable offset never backwards (with
//     the high watermark's exemption);
//   - with --transactions, txn_workload.h's: no record of a transaction not committed is read,
//     atomicity, no record of a committed transaction lost, a new transaction commits after the
//     heal; with --reassignment, every reassignment completes after the heal
//     (reassignment_workload.h).
//
//   cluster_sim --seed S [--nodes N] [--verbose]   one run (workload flags as the run had them:
//                                                  --transactions --reassignment --clock-skew
//                                                  --clock-steps --slow-fetches-after-heal)
//   cluster_sim --seeds N [--start S]              N runs from seed S (1)
//   cluster_sim --replay-check S                   runs S twice; fails unless the digests match
//   --expect-violation                             exit 0 only if some seed violates (controls)
//
// Negative controls (tests/sim/meson.build, cluster_sim_break_*): the real code built with one
// rule broken under a RINGLOG_*_BREAK_* define; they replaced replication_sim's model (issue 28).
//
// --disk-failures adds a fault: the next write or fdatasync on a serving node's disk fails
// (inject_failures, ENOSPC). The node's log-dir failure channel (storage/log_dir_failure.h) halts
// it as `ringlog serve` does (here: a process crash without power loss, the page cache kept),
// and it is started again later, as an operator would once the disk is fixed. Every invariant
// above must hold across it; runs without the flag draw the same faults as before.
//
// --slow-fetches-after-heal delays every Fetch an isolated node sends for a while after its heal
// (slow_fetch_window_ms): it reads the fence the controller committed while it was cut off only
// after its heartbeats are answered again, the schedule of session 34's end-below-ack.
//
// --segment-budget gives each broker process a budget of a few sealed segments
// (storage/segment_file_budget.h, what `ringlog serve` sizes from the open-file limit) and
// log.roll.ms of seconds: time rolls use the budget up and then wait, across crashes, truncations
// and reassignments. One more check at the end: each serving node's budget charges exactly the
// sealed segments its disk holds.
//
// --admin-conflicts adds a check after the others (admin_conflicts): the active controller and
// another node asked at once to reorder one partition's replicas, the other's forwarded entry
// refused for the partition epoch the first changed; every answer within admin_conflict_answer_ms.
//
// Not covered yet: consumer groups (and TxnOffsetCommit), disk failures during start-up,
// ListOffsets, random faults overlapping (only the cascade stacks them), clock drift (skew is a
// constant offset per node; --clock-steps steps the wall clock only, never the monotonic one).

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "ringlog/broker/broker.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/sim_file_system.h"
#include "ringlog/storage/partition_log.h"
#include "reassignment_workload.h"
#include "sim_cluster.h"
#include "sim_world.h"
#include "txn_workload.h"

using namespace ringlog;

namespace {

using broker::result;

constexpr int64_t start_ms = 1'700'000'000'000;
/// Faults run for this long (ms of sim time), then everything heals.
constexpr int64_t fault_phase_ms = 40'000;
/// After the final heal and restarts, before the liveness probes: a session timeout and an ISR
/// round for the cluster to settle.
constexpr int64_t settle_ms = 10'000;
/// Every partition must acknowledge an acks=all produce within this long after settling.
constexpr int64_t liveness_ms = 30'000;
/// --segment-budget: log.roll.ms of every broker (sim ms): a few time rolls per partition in a run,
/// and a budget of sealed segments per process that they use up, after which time rolls wait
/// (storage/segment_file_budget.h).
constexpr int64_t segment_budget_roll_ms = 2'000;
constexpr int64_t segment_budget_files = 6;
/// A node cut off from the rest may act on old metadata until this long after the heal
/// (tests/cluster/checker.py CUT_OFF_GRACE_S).
constexpr int64_t cut_off_grace_ms = 2'000;
/// replica.lag.time.max.ms of the brokers here (start_node): a follower that has not caught up
/// for this long leaves the ISR.
constexpr int64_t replica_lag_time_max_ms = 5'000;
/// How often the end of the run asks whether the reassignments completed.
constexpr int64_t reassignment_poll_ms = 500;
/// --admin-conflicts: rounds of two plans of one partition at once, and the bound on each answer:
/// well below metadata_write_timeout_ms (30 s), which a stalled write waited before it answered.
constexpr int admin_conflict_rounds = 4;
constexpr int64_t admin_conflict_answer_ms = 5'000;
/// Start-up of the whole cluster must end within this long.
constexpr int64_t start_up_ms = 60'000;
constexpr const char* topic = "sim";
/// broker_config's broker.session.timeout.ms (the brokers run with it): a node cut off from the
/// controller for this long has no leadership lease left (replication::leadership_lease, 9/10 of
/// it), so its answers at its high watermark are judged from then on.
const int64_t session_timeout_ms = broker::broker_config{}.broker_session_timeout_ms;

/// --clock-skew: each node's clock is off the world's by a seeded amount within +-this (ms):
/// half a broker.session.timeout.ms, well past the lease's margin (a tenth of it), so a rule
/// that compared one node's time with another's would show.
const int64_t clock_skew_max_ms = session_timeout_ms / 2;
/// --clock-steps: a node's wall clock is set off its monotonic clock by a seeded amount in
/// [-this, this / 4] every clock_step_interval_ms (uniform in [1/2, 2] of it) during the faults,
/// and back to none at the heal. Two session timeouts back is far enough that a lease measured on
/// the wall clock would outlive the controller's fencing (cluster_sim_break_lease_on_wall_clock).
const int64_t clock_step_max_ms = 2 * session_timeout_ms;
constexpr int64_t clock_step_interval_ms = 4'000;
/// --slow-fetches-after-heal: for this long after the heal, each Fetch an isolated node sends
/// (the metadata quorum's and its replicas') arrives slow_fetch_min_ms..slow_fetch_max_ms late,
/// its heartbeats on time. Session 34's real run (tests/cluster isolate-leader seed 27) needed
/// that: the healed node's metadata fetch came after two heartbeats, the first answered fenced,
/// the second not, and a lease renewed on the second outlived the fence it had not applied. The
/// node then reads its fence only after the grace (cut_off_grace_ms) in which its answers at the
/// end are judged; without the delay it reads it long before its second heartbeat (a control of
/// the rule went uncaught for 400 seeds: session 35). Its cut-off window (the open part: a
/// Fetch below its high watermark answered with its old figure) lasts until its last slow fetch
/// could be answered, plus the grace.
constexpr int64_t slow_fetch_window_ms = 3'000;
constexpr int64_t slow_fetch_min_ms = 1'000;
constexpr int64_t slow_fetch_max_ms = 2'000;

struct options {
  uint64_t seed = 1;
  int nodes = 3;
  bool verbose = false;
  bool transactions = false;   // --transactions: txn_workload.h's producers too
  bool reassignment = false;   // --reassignment: reassignment_workload.h's moves too
  bool clock_skew = false;     // --clock-skew: each node's clock off by a seeded amount
  bool clock_steps = false;    // --clock-steps: each node's wall clock stepped at seeded times
  bool disk_failures = false;  // --disk-failures: a failed write halts a node (log_dir_failure.h)
  bool segment_budget = false; // --segment-budget: time rolls against a small sealed-segment budget
  bool slow_fetches_after_heal = false;   // --slow-fetches-after-heal: a healed isolated node reads metadata late
  bool admin_conflicts = false;   // --admin-conflicts: two plans of one partition at once at the end
};

/// A node's clock: the world's plus a constant skew (--clock-skew); its wall clock (now_ms)
/// also off by the last step (--clock-steps), its monotonic clock never.
class skewed_clock final : public base::clock {
 public:
  skewed_clock(const base::clock& world, int64_t skew_ms) : world_(world), skew_ms_(skew_ms) {}
  [[nodiscard]] int64_t now_ms() const override { return world_.now_ms() + skew_ms_ + wall_step_ms_; }
  [[nodiscard]] int64_t monotonic_ms() const override { return world_.now_ms() + skew_ms_; }
  /// The wall clock from now on is `step_ms` off the monotonic one (an NTP step).
  void step_wall(int64_t step_ms) { wall_step_ms_ = step_ms; }

 private:
  const base::clock& world_;
  int64_t skew_ms_;
  int64_t wall_step_ms_ = 0;
};

/// One run's figures, and its violation (the first rule broken) if any.
struct outcome {
  std::string rule;
  bool violated = false;
  uint64_t digest = 0;
  uint64_t events = 0;
  int acked = 0;
  int crashes = 0;
  int disk_failures = 0;    // nodes halted by their log-dir failure channel
  uint64_t read_back = 0;   // records read back at the end
  uint64_t compared = 0;    // replica records compared with the history at the end
  std::string workloads;    // what the transactional and reassignment workloads did
};

struct node_state {
  std::unique_ptr<io::sim_file_system> fs = std::make_unique<io::sim_file_system>();
  std::unique_ptr<skewed_clock> clock;   // the world's, skewed with --clock-skew
  uint64_t incarnation = 0;
  std::unique_ptr<broker::broker> b;   // null while down or starting
  storage::segment_file_budget* budget = nullptr;   // this incarnation's (--segment-budget)
  bool starting = false;
};

class simulation final : public sim::sim_cluster {
 public:
  explicit simulation(const options& opt) : opt_(opt), world_(opt.seed, start_ms) { world_.echo = opt.verbose; }
  /// The brokers are leaked, as at a crash (see crash()): there is no graceful stop in here.
  ~simulation() {
    for (auto& [n, node] : nodes_) (void)node.b.release();
  }
  simulation(const simulation&) = delete;
  simulation& operator=(const simulation&) = delete;

  outcome run() {
    for (int n = 1; n <= opt_.nodes; ++n) {
      const int64_t skew = opt_.clock_skew ? world_.uniform(-clock_skew_max_ms, clock_skew_max_ms) : 0;
      nodes_[n].clock = std::make_unique<skewed_clock>(world_.clock, skew);
      if (skew != 0) world_.note("n" + std::to_string(n) + " clock skew " + std::to_string(skew) + " ms");
      world_.live[n] = 0;
      table_[n] = nullptr;
    }
    for (int n = 1; n <= opt_.nodes; ++n) start_node(n);
    if (!until([this] { return all_up(); }, start_up_ms)) fail("start-up: not every broker started");
    create_topic();
    if (!failed_) fault_phase();
    if (!failed_) heal_everything();
    if (!failed_) liveness();
    if (!failed_ && reassignments_) reassignments_complete();
    if (!failed_) produces_answered();
    if (!failed_) read_back();
    if (!failed_ && txns_) txns_->check_final(final_);
    if (!failed_) replicas_agree();
    if (!failed_ && opt_.admin_conflicts) admin_conflicts();
    if (txns_) out_.workloads += txns_->summary();
    if (!failed_ && opt_.segment_budget) budgets_match_disk();
    if (reassignments_) {
      out_.workloads += std::string(out_.workloads.empty() ? "" : ", ") + std::to_string(reassignments_->moves()) +
                        " reassignments";
    }
    out_.digest = world_.trace_digest.value;
    return out_;
  }

  // ------------------------------------------------------------------ sim_cluster

  sim::world& sim_world() override { return world_; }
  void at(int64_t due, std::function<void()> fn) override {
    world_.schedule(due, 0, 0, 0, sim::world::kind_client, std::move(fn));
  }
  broker::broker* serving(int n) override {
    auto it = nodes_.find(n);
    return it == nodes_.end() ? nullptr : it->second.b.get();
  }
  int random_serving() override {
    auto s = serving_nodes();
    if (s.empty()) return -1;
    return s[static_cast<size_t>(world_.uniform(0, static_cast<int64_t>(s.size()) - 1))];
  }
  void fail(const std::string& rule) override {
    if (failed_) return;
    failed_ = true;
    out_.violated = true;
    out_.rule = rule;
    world_.note("VIOLATION " + rule);
  }
  [[nodiscard]] bool failed() const override { return failed_; }
  [[nodiscard]] int node_count() const override { return opt_.nodes; }

  void print_trace() const {
    for (const auto& line : world_.trace) std::printf("  %s\n", line.c_str());
  }

 private:
  // ------------------------------------------------------------------ nodes

  void start_node(int n) {
    auto& node = nodes_[n];
    const uint64_t inc = ++next_incarnation_;
    node.incarnation = inc;
    node.starting = true;
    world_.live[n] = inc;
    keep_.runtimes.push_back(std::make_unique<sim::sim_runtime>(world_, n, inc, 2));
    keep_.transports.push_back(std::make_unique<sim::sim_transport>(world_, net_, table_, n, inc));
    keep_.randoms.push_back(std::make_unique<base::seeded_random>(opt_.seed * 1000003 + inc));
    keep_.failure_channels.push_back(std::make_unique<storage::log_dir_failure_channel>(
        "/data", [this, n, inc](const storage::log_dir_failure& f) { halt_on_disk_failure(n, inc, f); }));
    table_[n] = keep_.transports.back().get();
    broker::broker_config config;
    config.node_id = n;
    config.log_dir = "/data";
    config.cluster_id = "sim-cluster";
    config.default_replication_factor = 3;
    config.replica_lag_time_max_ms = replica_lag_time_max_ms;
    if (opt_.transactions) config.transaction_abort_timed_out_transaction_cleanup_interval_ms = sim::txn_cleanup_interval_ms;
    std::map<int32_t, rpc::peer_address> voters;
    for (int v = 1; v <= opt_.nodes; ++v) voters[v] = rpc::peer_address{"node-" + std::to_string(v), 9093};
    broker::broker_dependencies deps{
        .fs = *node.fs,
        .clock = *node.clock,
        .runtime = *keep_.runtimes.back(),
        .advertised_host = "node-" + std::to_string(n),
        .controller_quorum_voters = voters,
        .cluster_transport = keep_.transports.back().get(),
        .advertised_cluster_host = "node-" + std::to_string(n),
        .advertised_cluster_port = 9093,
        .log = [this, n](bool, const std::string& line) { world_.note("n" + std::to_string(n) + " " + line); },
        .random = *keep_.randoms.back(),
    };
    deps.log_dir_failures = keep_.failure_channels.back().get();
    if (opt_.segment_budget) {
      // A process's budget: each incarnation starts with its own and charges what is on disk.
      config.log_roll_ms = segment_budget_roll_ms;
      keep_.budgets.push_back(std::make_unique<storage::segment_file_budget>(segment_budget_files));
      node.budget = keep_.budgets.back().get();
      deps.segment_budget = node.budget;
    }
    world_.note("start n" + std::to_string(n) + " incarnation " + std::to_string(inc));
    // open_broker_async's first task runs on the node's controller shard from the queue.
    world_.schedule(world_.clock.now_ms(), n, inc, 0, sim::world::kind_task,
                    [this, n, inc, config = std::move(config), deps = std::move(deps)]() mutable {
      broker::open_broker_async(std::move(config), std::move(deps),
                                [this, n, inc](result<std::unique_ptr<broker::broker>> opened) {
        auto& node = nodes_[n];
        if (node.incarnation != inc) return;
        node.starting = false;
        if (!opened.ok()) {
          world_.note("n" + std::to_string(n) + " start failed: " + opened.error().message);
          restart_later(n);
          return;
        }
        world_.note("n" + std::to_string(n) + " serving");
        node.b = std::move(opened.value());
        quorum_back();
      });
    });
  }

  void restart_later(int n) {
    // A failed start (no quorum to catch up with): the process is started again, as an
    // operator's supervisor would.
    crash(n, false);
    at(world_.clock.now_ms() + 1'000, [this, n] { start_node(n); });
  }

  /// Power loss on node `n`: its queued work goes (the world drops every event of its
  /// incarnation), its disk keeps what was synced plus a seeded part of the rest. The broker
  /// object is leaked, not destroyed: its destructor stops the metadata quorum, which waits for
  /// a task on its shard (run_on_shard_and_wait) - a task the dead incarnation will never run,
  /// and a graceful step a crashed process does not take. Leaking keeps every reference it holds
  /// (runtime, transport, random source, kept in keep_) valid and runs none of its code again.
  void crash(int n, bool power_loss) {
    auto& node = nodes_[n];
    world_.live[n] = 0;
    table_[n] = nullptr;
    (void)node.b.release();
    node.starting = false;
    node.incarnation = 0;
    if (power_loss) node.fs->crash(world_.rng.next_u64());
    world_.note("crash n" + std::to_string(n));
  }

  [[nodiscard]] bool all_up() const {
    for (const auto& [n, node] : nodes_) {
      if (!node.b) return false;
    }
    return true;
  }

  std::vector<int> serving_nodes() const {
    std::vector<int> out;
    for (const auto& [n, node] : nodes_) {
      if (node.b) out.push_back(n);
    }
    return out;
  }

  // ------------------------------------------------------------------ running

  /// Runs the world until `done()` or `within_ms` passed; whether done.
  bool until(const std::function<bool()>& done, int64_t within_ms) {
    const int64_t end = world_.clock.now_ms() + within_ms;
    while (!done() && !failed_ && world_.clock.now_ms() < end) {
      out_.events += world_.run_until(std::min(end, world_.clock.now_ms() + 100), [&] { return done() || failed_; });
    }
    return done();
  }

  // ------------------------------------------------------------------ workload

  void create_topic() {
    partitions_ = static_cast<int32_t>(world_.uniform(2, 3));
    bool created = false;
    auto attempt = std::make_shared<std::function<void()>>();
    *attempt = [this, &created, attempt] {
      const int n = random_serving();
      if (n < 0) return at(world_.clock.now_ms() + 200, *attempt);
      broker::create_topic_request r;
      r.name = topic;
      r.partitions_count = partitions_;
      r.replication_factor = 3;
      r.configs = {{"min.insync.replicas", "2"}};
      nodes_[n].b->admin().create_topic(std::move(r), [this, &created, attempt](result<broker::topic_description> d) {
        world_.note(std::string("create topic: ") + (d.ok() ? "ok" : d.error().message));
        if (d.ok()) {
          for (size_t p = 0; p < d->partitions.size(); ++p) replicas_[static_cast<int32_t>(p)] = d->partitions[p].replicas;
        }
        if (d.ok() || d.error().code == broker::errc::topic_already_exists) {
          created = true;
          return;
        }
        at(world_.clock.now_ms() + 200, *attempt);
      });
    };
    at(world_.clock.now_ms(), *attempt);
    if (!until([&] { return created; }, start_up_ms)) fail("start-up: the topic was not created");
    *attempt = nullptr;
  }

  void produce_one(int32_t p, std::function<void(bool acked)> then = {}) {
    const int n = random_serving();
    if (n < 0) return;
    const std::string value = "v" + std::to_string(++next_value_);
    broker::produce_request r;
    r.topic = topic;
    r.acks = broker::acks_mode::all;
    r.timeout_ms = 5'000;
    broker::produce_record rec;
    rec.partition = model::partition_id{p};
    rec.value = model::to_bytes(value);
    r.records.push_back(std::move(rec));
    world_.note("produce n" + std::to_string(n) + " p" + std::to_string(p) + " " + value);
    const uint64_t id = ++produces_sent_;
    produces_in_flight_.emplace(id, std::make_pair(n, nodes_[n].incarnation));
    nodes_[n].b->produce(std::move(r), [this, p, n, value, then, id](result<broker::produce_response> resp) {
      produces_in_flight_.erase(id);
      bool acked = false;
      if (resp.ok() && resp->results.size() == 1 && !resp->results[0].failure) {
        acked = true;
        const int64_t offset = resp->results[0].record_offset.value();
        world_.note("ack n" + std::to_string(n) + " p" + std::to_string(p) + "@" + std::to_string(offset) + " " + value);
        ++out_.acked;
        auto [it, fresh] = acked_.emplace(std::make_pair(p, offset), value);
        if (!fresh && it->second != value) {
          fail("one committed history: p" + std::to_string(p) + " offset " + std::to_string(offset) +
               " acknowledged as " + it->second + " and as " + value);
        }
        observe(p, offset, value, "acknowledged");
        acked_end_[p] = std::max(acked_end_[p], offset + 1);
      } else {
        world_.note("produce failed n" + std::to_string(n) + " p" + std::to_string(p) + " " + value + ": " +
                    (resp.ok() ? (resp->results.empty() || !resp->results[0].failure
                                      ? std::string("no result")
                                      : resp->results[0].failure->message)
                               : resp.error().message));
      }
      if (then) then(acked);
    });
  }

  /// A committed record seen (acknowledged or read): one history per partition.
  void observe(int32_t p, int64_t offset, const std::string& value, const char* how) {
    auto [it, fresh] = seen_.emplace(std::make_pair(p, offset), value);
    if (!fresh && it->second != value) {
      fail("one committed history: p" + std::to_string(p) + " offset " + std::to_string(offset) + " held " +
           it->second + ", then " + how + " " + value);
    }
  }

  /// An isolated node whose leadership lease has lapsed (a session timeout into the isolation)
  /// answers no end that is not the partition's: a Fetch at its high watermark is refused
  /// (replication::answer_fetch, the lease rule), and so through the grace after the heal: the
  /// controller may have fenced it and moved its leaderships, and a heartbeat answered then
  /// renews its lease only once it applied that fence (controller::broker_heartbeats::answer,
  /// is_caught_up; tests/cluster isolate-leader seed 27 of session 34 saw a node answer its old
  /// figure as established right after the heal). Once renewed, what it leads is current, so its
  /// answers are judged as any leader's. Its answers below the high watermark are the open part.
  [[nodiscard]] bool lease_lapsed(int n, int64_t t, bool at_end) const {
    if (!at_end) return false;
    for (const auto& w : cut_off_windows_) {
      if (w.node == n && w.isolated && w.from_ms + session_timeout_ms <= t && t <= w.to_ms) return true;
    }
    return false;
  }

  /// Whether a fetch asked of node `n` at `t` may have been answered by a node cut off from the
  /// rest that may still answer (the open part above): `n` itself, or a replica of `p` it
  /// forwarded the fetch to (every node forwards a fetch of a partition it does not lead).
  [[nodiscard]] bool may_be_zombie_answer(int n, int32_t p, int64_t t, bool at_end) const {
    std::vector<int32_t> candidates{n};
    if (auto r = replicas_.find(p); r != replicas_.end()) {
      candidates.insert(candidates.end(), r->second.begin(), r->second.end());
    } else {
      for (int o = 1; o <= opt_.nodes; ++o) candidates.push_back(o);   // replicas not known
    }
    for (int32_t c : candidates) {
      if (cut_off(c, t) && !lease_lapsed(c, t, at_end)) return true;
    }
    return false;
  }

  [[nodiscard]] bool cut_off(int n, int64_t t) const {
    for (const auto& w : cut_off_windows_) {
      if (w.node == n && w.from_ms <= t && t <= w.to_ms) return true;
    }
    return false;
  }

  void fetch_one(int32_t p, int64_t offset, std::function<void(result<broker::fetch_response>)> then = {}) {
    const int n = random_serving();
    if (n < 0) return;
    broker::fetch_request r;
    r.partition = {topic, model::partition_id{p}};
    r.fetch_offset = model::offset{offset};
    r.max_bytes = 64 * 1024;
    r.isolation = broker::isolation_level::read_committed;
    const int64_t sent_ms = world_.clock.now_ms();
    const int64_t acked_end = acked_end_[p];
    const uint64_t inc = nodes_[n].incarnation;
    nodes_[n].b->fetch(std::move(r), [this, p, n, inc, sent_ms, acked_end, offset, then](result<broker::fetch_response> f) {
      if (f.ok()) check_fetch(n, inc, p, sent_ms, acked_end, offset, *f);
      if (then) then(std::move(f));
    });
  }

  void check_fetch(int n, uint64_t inc, int32_t p, int64_t sent_ms, int64_t acked_end, int64_t fetch_offset,
                   const broker::fetch_response& f) {
    const int64_t hw = f.high_watermark.value();
    world_.note("fetch n" + std::to_string(n) + " p" + std::to_string(p) + " hw " + std::to_string(hw) + " lso " +
                std::to_string(f.last_stable_offset.value()) + " leo " + std::to_string(f.log_end_offset.value()) +
                " records " + std::to_string(f.records.size()));
    check_records(n, p, fetch_offset, f);
    if (txns_) txns_->on_fetch(n, p, fetch_offset, f);
    if (may_be_zombie_answer(n, p, sent_ms, fetch_offset >= hw)) return;
    // Never backwards on one node (one incarnation): its high watermark and last stable offset
    // as answered before. A follower's figure lags its leader's and a log end may be cut (an
    // unacknowledged tail), so across nodes the rule below (never below an acknowledgement) is
    // the one that holds.
    auto& before = hw_seen_[{n, inc}][p];
    if (hw < before) {
      return fail("high watermark went backwards: fetch at n" + std::to_string(n) + " p" + std::to_string(p) +
                  " answered " + std::to_string(hw) + " after it answered " + std::to_string(before));
    }
    before = hw;
    auto& stable_before = lso_seen_[{n, inc}][p];
    if (f.last_stable_offset.value() < stable_before) {
      return fail("last stable offset went backwards: fetch at n" + std::to_string(n) + " p" + std::to_string(p) +
                  " answered " + std::to_string(f.last_stable_offset.value()) + " after it answered " +
                  std::to_string(stable_before));
    }
    stable_before = f.last_stable_offset.value();
    if (hw < acked_end || f.log_end_offset.value() < acked_end) {
      fail("end below an acknowledgement: fetch at n" + std::to_string(n) + " p" + std::to_string(p) +
           " answered high watermark " + std::to_string(hw) + " log end " + std::to_string(f.log_end_offset.value()) +
           " after offset " + std::to_string(acked_end - 1) + " was acknowledged");
    }
  }

  /// The records of a read_committed answer: below its last stable offset (KIP-98), which is at
  /// most its high watermark; one history; no acknowledged record missing from the range the
  /// answer covers ([fetch_offset, next_fetch_offset): only markers and aborted records may be
  /// left out of it).
  void check_records(int n, int32_t p, int64_t fetch_offset, const broker::fetch_response& f) {
    const int64_t stable = f.last_stable_offset.value();
    const std::string where = "fetch n" + std::to_string(n) + " p" + std::to_string(p);
    if (stable > f.high_watermark.value()) {
      return fail(where + " answered last stable offset " + std::to_string(stable) + " above its high watermark " +
                  std::to_string(f.high_watermark.value()));
    }
    std::map<int64_t, std::string> returned;
    for (const auto& rec : f.records) {
      const int64_t o = rec.record_offset.value();
      const std::string value = rec.value ? model::to_string(*rec.value) : std::string("<null>");
      if (o >= stable) {
        return fail(where + " (read_committed) returned offset " + std::to_string(o) + " (" + value +
                    ") at or above its last stable offset " + std::to_string(stable));
      }
      observe(p, o, value, "read");
      returned.emplace(o, value);
    }
    const int64_t end = std::max(fetch_offset, f.next_fetch_offset.value());
    for (auto it = acked_.lower_bound({p, fetch_offset}); it != acked_.end() && it->first.first == p &&
                                                          it->first.second < end && !failed_;
         ++it) {
      if (!returned.contains(it->first.second)) {
        fail(where + " read [" + std::to_string(fetch_offset) + ", " + std::to_string(end) + ") without offset " +
             std::to_string(it->first.second) + ", acknowledged as " + it->second);
      }
    }
  }

  void schedule_workload(int64_t until_ms) {
    for (int64_t t = world_.clock.now_ms(); t < until_ms; t += world_.uniform(10, 60)) {
      at(t, [this] {
        const auto p = static_cast<int32_t>(world_.uniform(0, partitions_ - 1));
        if (world_.chance(0.7)) return produce_one(p);
        // Up to the acknowledged end included: a read at the end asks for the partition's end.
        fetch_one(p, world_.uniform(0, acked_end_[p]));
      });
    }
  }

  // ------------------------------------------------------------------ faults

  struct window {
    int node;
    int64_t from_ms;
    int64_t to_ms;
    bool isolated = false;   // cut from every other node (not one link)
    /// Healed while fewer than a majority of the voters (every node here) served: the node still
    /// reaches no metadata quorum that could tell it it was replaced, so the window runs on until
    /// a majority serves again (quorum_back), then the grace.
    bool until_quorum = false;
    int64_t healed_to_ms = 0;   // to_ms as the heal set it, before until_quorum held it open
  };

  [[nodiscard]] bool majority_serving() const {
    return static_cast<int>(serving_nodes().size()) >= opt_.nodes / 2 + 1;
  }

  /// A node started serving (it caught up with a metadata leader): windows held open past their
  /// heal for want of a metadata quorum (window::until_quorum) end a grace from now.
  void quorum_back() {
    if (!majority_serving()) return;
    const int64_t now = world_.clock.now_ms();
    for (auto& w : cut_off_windows_) {
      if (!w.until_quorum) continue;
      w.until_quorum = false;
      w.to_ms = std::max(w.healed_to_ms, now + cut_off_grace_ms);
      world_.note("n" + std::to_string(w.node) + "'s cut-off window ends at " + std::to_string(w.to_ms) +
                  " (a metadata quorum serves again)");
    }
  }

  void heal_links() {
    const int64_t now = world_.clock.now_ms();
    if (now < hold_until_) return at(hold_until_, [this] { heal_links(); });   // a cascade runs on
    for (auto& w : cut_off_windows_) {
      if (w.to_ms != INT64_MAX || w.until_quorum) continue;   // healed before (until_quorum: awaiting one)
      w.to_ms = now + cut_off_grace_ms;
      if (w.isolated && opt_.slow_fetches_after_heal) {
        net_.fetches_slow[w.node] = {now + slow_fetch_window_ms, slow_fetch_min_ms, slow_fetch_max_ms};
        // It acts on old metadata until its last slow fetch is answered: the grace counts from then.
        w.to_ms = now + slow_fetch_window_ms + slow_fetch_max_ms + cut_off_grace_ms;
        world_.note("n" + std::to_string(w.node) + "'s fetches slow until " + std::to_string(now + slow_fetch_window_ms));
      }
      // The cut healed but the voters it could learn its replacement from are down (a cascade's
      // two power losses, say): it is still cut off from the controller, the open part above.
      if (!majority_serving()) {
        w.until_quorum = true;
        w.healed_to_ms = w.to_ms;
        w.to_ms = INT64_MAX;
        world_.note("n" + std::to_string(w.node) + " reaches no metadata quorum at the heal: its cut-off window "
                    "runs on until a majority serves");
      }
    }
    net_.cut.clear();
    net_.slow_until.clear();
    net_.loss = 0.0;
    world_.note("heal");
  }

  void cut_off_from(int n, bool isolated = false) {
    cut_off_windows_.push_back({n, world_.clock.now_ms(), INT64_MAX, isolated});
  }

  void start_fault() {
    if (world_.clock.now_ms() < hold_until_) return;   // a cascade runs on
    const int kind = static_cast<int>(world_.uniform(0, opt_.disk_failures ? 8 : 7));
    const int a = static_cast<int>(world_.uniform(1, opt_.nodes));
    int b = static_cast<int>(world_.uniform(1, opt_.nodes - 1));
    if (b >= a) ++b;
    switch (kind) {
      case 0:   // isolate a node
        for (int o = 1; o <= opt_.nodes; ++o) {
          if (o == a) continue;
          net_.cut.insert({a, o});
          net_.cut.insert({o, a});
        }
        cut_off_from(a, true);
        world_.note("fault: isolate n" + std::to_string(a));
        break;
      case 1:   // one direction of one link
        net_.cut.insert({a, b});
        cut_off_from(a);
        cut_off_from(b);
        world_.note("fault: drop n" + std::to_string(a) + "->n" + std::to_string(b));
        break;
      case 2:   // delay spikes both ways
        net_.slow_until[{a, b}] = INT64_MAX;
        net_.slow_until[{b, a}] = INT64_MAX;
        world_.note("fault: slow n" + std::to_string(a) + "<->n" + std::to_string(b));
        break;
      case 3:   // lossy links everywhere
        net_.loss = 0.02;
        world_.note("fault: loss 2%");
        break;
      case 4:   // power loss of a node
        crash_and_restart(a);
        break;
      case 5:   // power loss of every node at once (a data centre's): only what was fsynced stays
        world_.note("fault: power loss of every node");
        for (int n = 1; n <= opt_.nodes; ++n) crash_and_restart(n);
        break;
      case 6:
        cascade();
        break;
      case 8:
        fail_disk(a);
        break;
      default:   // the leader of a partition
        kill_leader();
        break;
    }
  }

  /// The channel of incarnation `inc` of node `n` reported a failed write: the process halts
  /// there and then (`ringlog serve` exits with 74), so the crash is synchronous: no task of
  /// this incarnation runs after the failed write. The disk keeps its page cache (a process
  /// exit, not a power loss); the node starts again later, its disk fixed.
  void halt_on_disk_failure(int n, uint64_t inc, const storage::log_dir_failure& f) {
    if (nodes_[n].incarnation != inc) return;
    ++out_.disk_failures;
    world_.note("n" + std::to_string(n) + " halts: log dir " + f.log_dir + " failed: " + f.operation + ": " + f.error);
    crash(n, false);
    at(world_.clock.now_ms() + world_.uniform(500, 4'000), [this, n] {
      if (world_.live[n] == 0) start_node(n);
    });
  }

  /// --disk-failures: the next write or fdatasync of a serving node fails with ENOSPC.
  void fail_disk(int n) {
    if (!nodes_[n].b) return;
    world_.note("fault: the disk of n" + std::to_string(n) + " fails its next write");
    nodes_[n].fs->inject_failures(io::errc::no_space, 1);
  }

  void crash_and_restart(int n) {
    if (!nodes_[n].b && !nodes_[n].starting) return;
    ++out_.crashes;
    crash(n, true);
    at(world_.clock.now_ms() + world_.uniform(500, 4'000), [this, n] {
      if (world_.live[n] == 0) start_node(n);
    });
  }

  void kill_leader() {
    const int asked = random_serving();
    if (asked < 0) return;
    const auto p = static_cast<int32_t>(world_.uniform(0, partitions_ - 1));
    nodes_[asked].b->admin().describe_topic(topic, [this, p](result<broker::topic_description> d) {
      if (!d.ok() || static_cast<size_t>(p) >= d->partitions.size()) return;
      const int leader = d->partitions[static_cast<size_t>(p)].leader;
      if (leader < 1 || leader > opt_.nodes) return;
      world_.note("fault: kill n" + std::to_string(leader) + ", leader of p" + std::to_string(p));
      crash_and_restart(leader);
    });
  }

  /// A cascading failure of one partition's replicas (leader L, followers F and G): the link
  /// L->F fails, so F falls behind and out of the ISR (replica.lag.time.max.ms) while it still
  /// reaches the controller (unless L is the controller); then G loses power, the ISR is L
  /// alone; then L loses power. The ISR's last member is gone with records only it and G hold:
  /// the partition must stay offline until L is back (unclean.leader.election.enable=false),
  /// never be led by F. Other faults wait until it is over.
  void cascade() {
    const int asked = random_serving();
    if (asked < 0) return;
    const auto p = static_cast<int32_t>(world_.uniform(0, partitions_ - 1));
    const int64_t lag = replica_lag_time_max_ms + world_.uniform(500, 2'000);
    const int64_t gap = world_.uniform(200, 1'000);
    hold_until_ = world_.clock.now_ms() + lag + gap + 1'000;
    nodes_[asked].b->admin().describe_topic(topic, [this, p, lag, gap](result<broker::topic_description> d) {
      if (!d.ok() || static_cast<size_t>(p) >= d->partitions.size()) return;
      const auto& part = d->partitions[static_cast<size_t>(p)];
      std::vector<int> followers;
      for (int32_t r : part.replicas) {
        if (r != part.leader) followers.push_back(r);
      }
      if (part.leader < 1 || followers.size() < 2) return;
      const int leader = part.leader;
      const int behind = followers[static_cast<size_t>(world_.uniform(0, 1))];
      const int other = followers[0] == behind ? followers[1] : followers[0];
      net_.cut.insert({leader, behind});
      cut_off_from(leader);
      cut_off_from(behind);
      world_.note("fault: cascade on p" + std::to_string(p) + ": drop n" + std::to_string(leader) + "->n" +
                  std::to_string(behind) + ", then power loss of n" + std::to_string(other) + " and n" +
                  std::to_string(leader));
      at(world_.clock.now_ms() + lag, [this, other] { crash_and_restart(other); });
      at(world_.clock.now_ms() + lag + gap, [this, leader] { crash_and_restart(leader); });
    });
  }

  void fault_phase() {
    const int64_t end = world_.clock.now_ms() + fault_phase_ms;
    schedule_workload(end);
    start_workloads(end);
    if (opt_.clock_steps) schedule_clock_steps(end);
    int64_t t = world_.clock.now_ms() + world_.uniform(1'000, 3'000);
    while (t < end) {
      at(t, [this] { start_fault(); });
      const int64_t heal = t + world_.uniform(1'000, 6'000);
      at(heal, [this] { heal_links(); });
      t = heal + world_.uniform(500, 4'000);
    }
    until([] { return false; }, end - world_.clock.now_ms());
    // A cascade started near the end runs to its end before the heal.
    if (hold_until_ > world_.clock.now_ms()) until([] { return false; }, hold_until_ - world_.clock.now_ms());
  }

  /// --clock-steps: every node's wall clock stepped at seeded times until `end`, back to none then.
  void schedule_clock_steps(int64_t end) {
    for (int n = 1; n <= opt_.nodes; ++n) {
      for (int64_t t = world_.clock.now_ms() + world_.uniform(clock_step_interval_ms / 2, clock_step_interval_ms * 2);
           t < end; t += world_.uniform(clock_step_interval_ms / 2, clock_step_interval_ms * 2)) {
        const int64_t step = world_.uniform(-clock_step_max_ms, clock_step_max_ms / 4);
        at(t, [this, n, step] {
          nodes_[n].clock->step_wall(step);
          world_.note("n" + std::to_string(n) + " wall clock stepped to " + std::to_string(step) + " ms");
        });
      }
      at(end, [this, n] { nodes_[n].clock->step_wall(0); });
    }
  }

  /// The transactional producers and the reassignment moves (--transactions, --reassignment).
  void start_workloads(int64_t end) {
    if (opt_.transactions) {
      txns_ = std::make_unique<sim::txn_workload>(*this, topic, partitions_,
                                                  [this](int32_t p, int64_t offset, const std::string& value) {
        observe(p, offset, value, "acknowledged");
        acked_end_[p] = std::max(acked_end_[p], offset + 1);
      });
      txns_->start();
    }
    if (opt_.reassignment) {
      reassignments_ = std::make_unique<sim::reassignment_workload>(*this, topic, replicas_);
      reassignments_->start(end);
    }
  }

  void heal_everything() {
    heal_links();
    for (int n = 1; n <= opt_.nodes; ++n) {
      if (world_.live[n] == 0) start_node(n);
    }
    // Clients keep going while the cluster settles.
    schedule_workload(world_.clock.now_ms() + settle_ms);
    if (!until([this] { return all_up(); }, start_up_ms)) fail("restart: not every broker serves after the heal");
    if (txns_) txns_->stop();
    until([] { return false; }, settle_ms);
    if (txns_ && !until([this] { return txns_->all_ended(); }, liveness_ms)) {
      fail("liveness: a transaction did not end within " + std::to_string(liveness_ms) + " ms of settling");
    }
  }

  // ------------------------------------------------------------------ final checks

  void liveness() {
    for (int32_t p = 0; p < partitions_ && !failed_; ++p) {
      bool acked = false;
      auto attempt = std::make_shared<std::function<void()>>();
      *attempt = [this, p, &acked, attempt] {
        produce_one(p, [this, &acked, attempt](bool ok) {
          if (ok) acked = true;
          else at(world_.clock.now_ms() + 500, *attempt);
        });
      };
      at(world_.clock.now_ms(), *attempt);
      if (!until([&] { return acked; }, liveness_ms)) {
        fail("liveness: p" + std::to_string(p) + " acknowledged no acks=all produce within " +
             std::to_string(liveness_ms) + " ms of the heal");
      }
      *attempt = nullptr;
    }
    if (failed_ || !txns_) return;
    txns_->start_liveness();
    if (!until([this] { return txns_->live_committed(); }, liveness_ms)) {
      fail("liveness: no new transaction committed within " + std::to_string(liveness_ms) + " ms of the heal");
    }
  }

  /// Every reassignment completes after the heal (reassignment_workload::complete), asked of a
  /// random serving node every reassignment_poll_ms.
  void reassignments_complete() {
    bool done = false;
    std::string why = "no answer";
    auto poll = std::make_shared<std::function<void()>>();
    *poll = [this, &done, &why, poll] {
      const int n = random_serving();
      if (n < 0) return at(world_.clock.now_ms() + reassignment_poll_ms, *poll);
      nodes_[n].b->admin().describe_topic(topic, sim::answer_within<result<broker::topic_description>>(
          *this, reassignment_poll_ms, [this, &done, &why, poll](std::optional<result<broker::topic_description>> d) {
            if (d && d->ok() && reassignments_->complete(d->value(), why)) {
              for (const auto& part : d->value().partitions) final_replicas_[part.partition.value()] = part.replicas;
              done = true;
              return;
            }
            at(world_.clock.now_ms() + reassignment_poll_ms, *poll);
          }));
    };
    at(world_.clock.now_ms(), *poll);
    if (!until([&] { return done; }, sim::reassignment_deadline_ms)) {
      fail("reassignment did not complete within " + std::to_string(sim::reassignment_deadline_ms) +
           " ms of the heal: " + why);
    }
    *poll = nullptr;
  }

  /// --admin-conflicts, after the final checks (the cluster healed and quiet): in each round the
  /// active controller and another node are asked at the same instant to reorder one partition's
  /// replicas the same way (no data moves, the replica set stays). The other node plans behind its
  /// metadata barrier against the image before the controller's change and forwards its entry in
  /// an Envelope; it names the partition epoch the first changed and is refused when applied, and
  /// its retry passes the barrier again. Every answer, and a third call at the other node after
  /// both, must come within admin_conflict_answer_ms: a refused entry at the log's end held that
  /// node's barrier for metadata_write_timeout_ms (session 41: each admin call 30 s late).
  void admin_conflicts() {
    for (int round = 0; round < admin_conflict_rounds && !failed_; ++round) {
      const int32_t p = round % partitions_;
      int controller = -1;
      until([&] {
        const int n = random_serving();
        controller = n < 0 ? -1 : nodes_[n].b->admin().controller_id();
        return controller > 0 && serving(controller) != nullptr;
      }, liveness_ms);
      std::vector<int> others;
      for (int n : serving_nodes()) {
        if (n != controller) others.push_back(n);
      }
      if (controller <= 0 || serving(controller) == nullptr || others.empty()) {
        return fail("admin conflicts: no active controller and other serving node");
      }
      const int other = others[static_cast<size_t>(world_.uniform(0, static_cast<int64_t>(others.size()) - 1))];
      std::optional<std::vector<int32_t>> current;
      nodes_[controller].b->admin().describe_topic(topic, [&current, p](result<broker::topic_description> d) {
        if (d.ok() && p < static_cast<int32_t>(d->partitions.size())) current = d->partitions[static_cast<size_t>(p)].replicas;
      });
      if (!until([&] { return current.has_value(); }, admin_conflict_answer_ms)) {
        return fail("admin conflicts: the controller n" + std::to_string(controller) + " did not describe the topic");
      }
      std::vector<int32_t> target = *current;
      std::rotate(target.begin(), target.begin() + 1, target.end());
      admin_conflict_round(p, target, {controller, other}, other);
    }
  }

  /// One round of admin_conflicts: `at` asked at once to move `p` to `target`, then `again`.
  void admin_conflict_round(int32_t p, const std::vector<int32_t>& target, const std::vector<int>& at, int again) {
    int answered = 0;
    const auto ask = [&](int n) {
      using answer = result<std::vector<broker::partition_reassignment_result>>;
      world_.note("admin conflict: p" + std::to_string(p) + " reordered at n" + std::to_string(n));
      nodes_[n].b->admin().alter_partition_reassignments(
          {broker::partition_reassignment_target{topic, p, target}},
          sim::answer_within<answer>(*this, admin_conflict_answer_ms, [this, &answered, n, p](std::optional<answer> a) {
            if (!a) {
              return fail("admin conflicts: a reassignment of p" + std::to_string(p) + " at n" + std::to_string(n) +
                          " was not answered within " + std::to_string(admin_conflict_answer_ms) + " ms");
            }
            world_.note("admin conflict: n" + std::to_string(n) + " answered " +
                        (a->ok() ? std::string("ok") : a->error().message));
            ++answered;
          }));
    };
    for (int n : at) ask(n);
    until([&] { return answered == static_cast<int>(at.size()); }, admin_conflict_answer_ms + 1);
    if (failed_) return;
    ask(again);
    until([&] { return answered == static_cast<int>(at.size()) + 1; }, admin_conflict_answer_ms + 1);
  }

  /// Before the read back: every produce sent to a node still running the incarnation it was
  /// sent to is answered (a late acknowledgement after the read back of its partition would be
  /// judged lost: seed 41 with --clock-steps acknowledged the workload's last produce 2 ms after
  /// the read back). A crashed incarnation never answers (its broker is leaked, as at a crash).
  void produces_answered() {
    const bool answered = until([this] {
      return std::all_of(produces_in_flight_.begin(), produces_in_flight_.end(), [this](const auto& entry) {
        const auto& [n, inc] = entry.second;
        return nodes_[n].incarnation != inc || !nodes_[n].b;
      });
    }, liveness_ms);
    if (!answered) fail("a produce to a running node was not answered within " + std::to_string(liveness_ms) + " ms");
  }

  void read_back() {
    for (int32_t p = 0; p < partitions_ && !failed_; ++p) {
      int64_t next = 0;
      bool done = false;
      auto page = std::make_shared<std::function<void()>>();
      *page = [this, p, &next, &done, page] {
        fetch_one(p, next, [this, p, &next, &done, page](result<broker::fetch_response> f) {
          const int64_t before = next;
          if (f.ok() && !f->records.empty()) {
            for (const auto& r : f->records) {
              if (r.record_offset.value() >= next) {
                final_[p].emplace(r.record_offset.value(), r.value ? model::to_string(*r.value) : "<null>");
              }
            }
            next = f->records.back().record_offset.value() + 1;
          }
          // Past transaction markers and aborted records too (read_committed).
          if (f.ok()) next = std::max(next, f->next_fetch_offset.value());
          if (f.ok() && next >= f->high_watermark.value() && next >= acked_end_[p]) {
            final_hw_[p] = f->high_watermark.value();
            done = true;
            return;
          }
          if (f.ok()) read_back_stuck_[p] = f->last_stable_offset.value();
          at(world_.clock.now_ms() + (next > before ? 0 : 200), *page);
        });
      };
      at(world_.clock.now_ms(), *page);
      if (!until([&] { return done; }, liveness_ms)) {
        fail("read back: p" + std::to_string(p) + " could not be read past offset " + std::to_string(next) +
             " (last stable offset answered: " + std::to_string(read_back_stuck_[p]) + ")");
      }
      *page = nullptr;
      out_.read_back += final_[p].size();
    }
    for (const auto& [key, value] : acked_) {
      if (failed_) return;
      auto it = final_[key.first].find(key.second);
      if (it == final_[key.first].end() || it->second != value) {
        fail("acknowledged record lost: p" + std::to_string(key.first) + " offset " + std::to_string(key.second) +
             " acknowledged as " + value + ", read back as " +
             (it == final_[key.first].end() ? std::string("nothing") : it->second));
      }
    }
  }

  /// Each node's log of each partition, read from its file system, against the read-back history.
  void replicas_agree() {
    for (int n = 1; n <= opt_.nodes && !failed_; ++n) {
      for (int32_t p = 0; p < partitions_ && !failed_; ++p) {
        const std::string dir = std::string("/data/") + topic + "-" + std::to_string(p);
        if (!nodes_[n].fs->exists(dir) || !final_replica(n, p)) continue;
        auto log = storage::partition_log::open(*nodes_[n].fs, dir, storage::log_config{}, world_.clock);
        if (!log.ok()) return fail("replica n" + std::to_string(n) + " p" + std::to_string(p) + ": " + log.error().message);
        const int64_t below = std::min((*log)->log_end_offset().value(), final_hw_[p]);
        int64_t offset = 0;
        while (offset < below && !failed_) {
          auto read = (*log)->read(model::offset{offset}, 1 << 20, model::offset{below});
          if (!read.ok() || read->batches.empty()) break;
          compare_batches(n, p, read->batches, below);
          if (read->next_offset.value() <= offset) break;
          offset = read->next_offset.value();
        }
      }
    }
  }

  /// --segment-budget: each serving node's budget holds exactly its sealed segments on disk (every
  /// .log of a partition directory but the active one's): a roll, a truncation, a deletion or a
  /// restart that charged or gave back a file twice, or never, shows here.
  void budgets_match_disk() {
    for (int n = 1; n <= opt_.nodes && !failed_; ++n) {
      const auto& node = nodes_[n];
      if (node.b == nullptr || node.budget == nullptr) continue;
      auto dirs = node.fs->list_directory("/data");
      if (!dirs.ok()) return fail("budget: n" + std::to_string(n) + " /data: " + dirs.error().message);
      int64_t sealed = 0;
      std::string counted;
      for (const auto& dir : *dirs) {
        auto files = node.fs->list_directory("/data/" + dir);
        if (!files.ok() || dir.starts_with("__cluster_metadata")) continue;   // a file, or the raft log (not charged)
        const auto logs = std::count_if(files->begin(), files->end(), [](const std::string& f) {
          return f.size() == 24 && f.ends_with(".log");
        });
        if (logs > 1) counted += " " + dir + ":" + std::to_string(logs - 1);
        sealed += std::max<int64_t>(logs - 1, 0);
      }
      out_.workloads += std::string(out_.workloads.empty() ? "" : ", ") + "n" + std::to_string(n) + " charges " +
                        std::to_string(sealed) + " sealed segments";
      if (node.budget->used() != sealed) {
        fail("budget: n" + std::to_string(n) + " charges " + std::to_string(node.budget->used()) +
             " sealed segments, its disk holds " + std::to_string(sealed) + " (" + counted + " )");
      }
    }
  }

  /// Whether node `n` ends as a replica of `p` (a reassignment's removed replica may not have
  /// deleted its log yet: it is not compared).
  [[nodiscard]] bool final_replica(int n, int32_t p) const {
    auto it = final_replicas_.find(p);
    return it == final_replicas_.end() || std::find(it->second.begin(), it->second.end(), n) != it->second.end();
  }

  void compare_batches(int n, int32_t p, const model::bytes& batches, int64_t below) {
    std::span<const std::byte> rest(batches);
    while (rest.size() >= 12 && !failed_) {
      const auto length = static_cast<size_t>(static_cast<uint32_t>(rest[8]) << 24 | static_cast<uint32_t>(rest[9]) << 16 |
                                              static_cast<uint32_t>(rest[10]) << 8 | static_cast<uint32_t>(rest[11]));
      const size_t size = 12 + length;
      if (size > rest.size()) break;
      auto header = codec::decode_header(rest.first(size));
      auto records = codec::decode_records(rest.first(size));
      rest = rest.subspan(size);
      if (!header.ok() || header->is_control() || !records.ok()) continue;   // a transaction marker
      for (const auto& r : *records) {
        const int64_t o = r.record_offset.value();
        if (o >= below) return;
        const std::string value = r.value ? model::to_string(*r.value) : "<null>";
        auto it = final_[p].find(o);
        ++out_.compared;
        if (it == final_[p].end() && txns_ && txns_->may_be_invisible(value)) {
          // An aborted transaction's record: every replica holds the same one at o.
          auto [seen, fresh] = invisible_[p].emplace(o, value);
          if (fresh || seen->second == value) continue;
        }
        if (it == final_[p].end() || it->second != value) {
          fail("replicas disagree below the high watermark: n" + std::to_string(n) + " p" + std::to_string(p) +
               " offset " + std::to_string(o) + " holds " + value + ", the history " +
               (it == final_[p].end() ? std::string("nothing") : it->second));
        }
      }
    }
  }

  options opt_;
  sim::world world_;
  sim::network net_;
  sim::transport_table table_;
  std::map<int, node_state> nodes_;
  struct {
    std::vector<std::unique_ptr<sim::sim_runtime>> runtimes;
    std::vector<std::unique_ptr<sim::sim_transport>> transports;
    std::vector<std::unique_ptr<base::seeded_random>> randoms;
    std::vector<std::unique_ptr<storage::log_dir_failure_channel>> failure_channels;
    std::vector<std::unique_ptr<storage::segment_file_budget>> budgets;
  } keep_;   // every incarnation's, for the leaked brokers that still refer to them
  uint64_t next_incarnation_ = 0;
  int32_t partitions_ = 0;
  uint64_t next_value_ = 0;
  std::map<std::pair<int32_t, int64_t>, std::string> acked_;
  std::map<std::pair<int32_t, int64_t>, std::string> seen_;
  std::map<int32_t, int64_t> acked_end_;
  /// Produces sent and not answered yet, by a sequence number: the node and its incarnation.
  std::map<uint64_t, std::pair<int, uint64_t>> produces_in_flight_;
  uint64_t produces_sent_ = 0;
  std::map<int32_t, std::map<int64_t, std::string>> final_;
  std::map<int32_t, int64_t> final_hw_;
  std::map<int32_t, int64_t> read_back_stuck_;
  std::map<int32_t, std::vector<int32_t>> final_replicas_;   // after the reassignments completed   // the last stable offset the read-back last saw
  /// Records below the high watermark that read_committed does not show (aborted transactions),
  /// as the first replica compared holds them: the others must agree.
  std::map<int32_t, std::map<int64_t, std::string>> invisible_;
  /// Per node incarnation and partition: the highest high watermark it answered (judged answers).
  std::map<std::pair<int, uint64_t>, std::map<int32_t, int64_t>> hw_seen_;
  /// The same for the last stable offset.
  std::map<std::pair<int, uint64_t>, std::map<int32_t, int64_t>> lso_seen_;
  std::unique_ptr<sim::txn_workload> txns_;                     // --transactions
  std::unique_ptr<sim::reassignment_workload> reassignments_;   // --reassignment
  std::vector<window> cut_off_windows_;
  std::map<int32_t, std::vector<int32_t>> replicas_;   // of each partition, as created
  int64_t hold_until_ = 0;   // no new fault, no heal before this (a cascade runs)
  outcome out_;
  bool failed_ = false;
};

outcome run_seed(const options& opt, bool print_trace_on_failure) {
  simulation sim(opt);
  auto out = sim.run();
  if (out.violated && print_trace_on_failure) {
    std::printf("seed %" PRIu64 ": VIOLATION %s\n  last trace lines:\n", opt.seed, out.rule.c_str());
    sim.print_trace();
  }
  return out;
}

void print_result(const options& opt, const outcome& o) {
  std::printf("seed %" PRIu64 " nodes %d: %s, %d acked, %d crashes, %d disk failures, %" PRIu64 " events, %" PRIu64
              " records read back, %" PRIu64 " replica records compared%s%s, digest %016" PRIx64 "\n",
              opt.seed, opt.nodes, o.violated ? "VIOLATION" : "ok", o.acked, o.crashes, o.disk_failures, o.events, o.read_back,
              o.compared, o.workloads.empty() ? "" : ", ", o.workloads.c_str(), o.digest);
}

int usage() {
  std::fprintf(stderr,
               "usage: cluster_sim (--seed S | --seeds N [--start S] | --replay-check S) [--nodes 3..5] "
               "[--transactions] [--reassignment] [--clock-skew] [--clock-steps] [--disk-failures] [--segment-budget] "
               "[--slow-fetches-after-heal] [--admin-conflicts] [--expect-violation] "
               "[--verbose]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  std::optional<uint64_t> seed, replay_seed;
  uint64_t seeds = 0, start = 1;
  bool expect_violation = false;
  // Flags with a number (raft_sim's and replication_sim's names), then flags alone.
  const std::map<std::string, std::function<void(uint64_t)>> with_value = {
      {"--seed", [&](uint64_t v) { seed = v; }},
      {"--seeds", [&](uint64_t v) { seeds = v; }},
      {"--start", [&](uint64_t v) { start = v; }},
      {"--replay-check", [&](uint64_t v) { replay_seed = v; }},
      {"--nodes", [&](uint64_t v) { opt.nodes = static_cast<int>(std::min<uint64_t>(v, 100)); }},
  };
  const std::map<std::string, bool*> alone = {{"--expect-violation", &expect_violation},
                                              {"--verbose", &opt.verbose},
                                              {"--transactions", &opt.transactions},
                                              {"--reassignment", &opt.reassignment},
                                              {"--clock-skew", &opt.clock_skew},
                                              {"--clock-steps", &opt.clock_steps},
                                              {"--disk-failures", &opt.disk_failures},
                                              {"--segment-budget", &opt.segment_budget},
                                              {"--slow-fetches-after-heal", &opt.slow_fetches_after_heal},
                                              {"--admin-conflicts", &opt.admin_conflicts}};
  for (int a = 1; a < argc; ++a) {
    if (auto f = with_value.find(argv[a]); f != with_value.end() && a + 1 < argc) {
      f->second(std::strtoull(argv[++a], nullptr, 10));
    } else if (auto g = alone.find(argv[a]); g != alone.end()) {
      *g->second = true;
    } else {
      return usage();
    }
  }
  if (opt.nodes < 3 || opt.nodes > 5) return usage();
  if (replay_seed) {
    opt.seed = *replay_seed;
    const auto a = run_seed(opt, true);
    const auto b = run_seed(opt, false);
    print_result(opt, a);
    print_result(opt, b);
    if (a.digest != b.digest || a.violated != b.violated) {
      std::printf("REPLAY MISMATCH for seed %" PRIu64 "\n", opt.seed);
      return 3;
    }
    std::printf("replay ok: seed %" PRIu64 " digest %016" PRIx64 "\n", opt.seed, a.digest);
    return a.violated ? 1 : 0;
  }
  if (seed) {
    start = *seed;
    seeds = 1;
  }
  if (seeds == 0) return usage();
  for (uint64_t s = start; s < start + seeds; ++s) {
    opt.seed = s;
    const auto o = run_seed(opt, !expect_violation || opt.verbose);
    if (opt.verbose || seeds == 1) print_result(opt, o);
    if (o.violated) {
      if (expect_violation) {
        std::printf("expected violation found at seed %" PRIu64 ": %s\n", s, o.rule.c_str());
        return 0;
      }
      std::printf("FAILED: seed %" PRIu64 " (replay: cluster_sim --seed %" PRIu64 " --nodes %d%s%s%s%s%s%s%s%s)\n", s, s,
                  opt.nodes, opt.transactions ? " --transactions" : "", opt.reassignment ? " --reassignment" : "",
                  opt.clock_skew ? " --clock-skew" : "", opt.clock_steps ? " --clock-steps" : "",
                  opt.disk_failures ? " --disk-failures" : "", opt.segment_budget ? " --segment-budget" : "",
                  opt.slow_fetches_after_heal ? " --slow-fetches-after-heal" : "",
                  opt.admin_conflicts ? " --admin-conflicts" : "");
      return 1;
    }
  }
  if (expect_violation) {
    std::printf("no violation in %" PRIu64 " seeds from %" PRIu64 " (the control was not caught)\n", seeds, start);
    return 1;
  }
  std::printf("%" PRIu64 " seeds ok from %" PRIu64 "\n", seeds, start);
  return 0;
}
