#pragma once
// The deterministic world of tests/sim/cluster_sim (issue 28's proof): one event queue that runs
// every node's shard tasks, timers, disk completions and network deliveries on one thread, in
// (due time, sequence) order, on a manual clock that jumps to the next due time when nothing is
// ready. A node's objects are tagged with its incarnation: a crash bumps it, and every queued
// event of an older incarnation is dropped when it comes up (never run), so a crashed broker's
// work and the answers meant for it vanish as with a process that died.
//
// Pieces, each implementing the interface the real broker takes:
//   - sim_runtime    runtime::shard_runtime of one node incarnation (its shards' post/post_after)
//   - sim_disk       io::disk_executor completing fdatasyncs after a seeded delay on the sim clock
//                    (FIFO per shard, as the posix executor; the delay lets network events run
//                    between an append and its sync)
//   - sim_transport  rpc::transport: requests to a peer after a seeded per-link delay (FIFO per
//                    directed link, as one TCP connection), lost while the link is cut, answered
//                    connection_refused by a node that is down, timeout after timeout_ms

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/base/random.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/rpc/transport.h"
#include "ringlog/runtime/shard_runtime.h"

namespace ringlog::sim {

/// FNV-1a, 64 bits: the replay digest of a run.
struct digest {
  uint64_t value = 1469598103934665603ULL;
  void add(uint64_t x) {
    for (int i = 0; i < 8; ++i) {
      value ^= (x >> (8 * i)) & 0xff;
      value *= 1099511628211ULL;
    }
  }
  void add(const std::string& s) {
    for (char c : s) {
      value ^= static_cast<uint8_t>(c);
      value *= 1099511628211ULL;
    }
    add(s.size());
  }
};

/// One world a seed. Node ids are 1..n; node id 0 tags the clients' events.
class world {
 public:
  world(uint64_t seed, int64_t start_ms) : clock(start_ms), rng(seed) {}

  base::manual_clock clock;
  base::seeded_random rng;
  digest trace_digest;
  std::deque<std::string> trace;   // the last trace_lines_max notable lines
  static constexpr size_t trace_lines_max = 30;

  /// A uniform draw in [lo, hi].
  int64_t uniform(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng.next_u64() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(double p) { return static_cast<double>(rng.next_u64() % 1'000'000) < p * 1'000'000; }

  bool echo = false;   // print every note as it is made (cluster_sim --verbose)

  void note(const std::string& line) {
    if (echo) std::printf("%lld %s\n", static_cast<long long>(clock.now_ms()), line.c_str());
    trace_digest.add(line);
    trace.push_back(std::to_string(clock.now_ms()) + " " + line);
    if (trace.size() > trace_lines_max) trace.pop_front();
  }

  /// Queues `fn` for node `node` (incarnation `incarnation`, shard `shard`) at `due_ms`.
  void schedule(int64_t due_ms, int node, uint64_t incarnation, size_t shard, uint8_t kind, std::function<void()> fn) {
    queue_.emplace(std::make_pair(due_ms, next_sequence_++), event{node, incarnation, shard, kind, std::move(fn)});
  }

  /// The live incarnation of each node (0: down).
  std::map<int, uint64_t> live;
  /// The task now running: its node and shard (node -1: none).
  int running_node = -1;
  size_t running_shard = 0;

  /// Runs events due at or before `until_ms` (the clock jumps to each), then sets the clock to
  /// `until_ms`. `stop` (checked after each event) ends it early. Returns the events run.
  uint64_t run_until(int64_t until_ms, const std::function<bool()>& stop = {}) {
    uint64_t ran = 0;
    while (!queue_.empty() && queue_.begin()->first.first <= until_ms) {
      auto it = queue_.begin();
      const int64_t due = it->first.first;
      event e = std::move(it->second);
      queue_.erase(it);
      if (e.node != 0) {
        auto l = live.find(e.node);
        if (l == live.end() || l->second != e.incarnation) continue;   // a crashed incarnation's work
      }
      if (due > clock.now_ms()) clock.set_ms(due);
      trace_digest.add(static_cast<uint64_t>(due));
      trace_digest.add(static_cast<uint64_t>(e.node) << 32 | e.shard << 8 | e.kind);
      running_node = e.node;
      running_shard = e.shard;
      e.fn();
      running_node = -1;
      ++ran;
      if (stop && stop()) return ran;
    }
    if (clock.now_ms() < until_ms) clock.set_ms(until_ms);
    return ran;
  }

  /// Event kinds, for the digest.
  enum : uint8_t { kind_task = 1, kind_timer, kind_disk, kind_request, kind_response, kind_timeout, kind_client };

 private:
  struct event {
    int node;
    uint64_t incarnation;
    size_t shard;
    uint8_t kind;
    std::function<void()> fn;
  };
  std::map<std::pair<int64_t, uint64_t>, event> queue_;
  uint64_t next_sequence_ = 0;
};

/// io::disk_executor over a node's sim_file_system: each fdatasync (and linked write) runs on
/// the sim clock after a seeded delay, in submission order per shard.
class sim_disk final : public io::disk_executor {
 public:
  sim_disk(world& w, int node, uint64_t incarnation, size_t shard)
      : world_(w), node_(node), incarnation_(incarnation), shard_(shard) {}
  void submit_datasync(io::file& f, callback done) override {
    queue([&f] { return f.datasync(); }, std::move(done));
  }
  void submit_write_datasync(io::file& f, model::file_position position, std::span<const std::byte> data,
                             callback done) override {
    queue([&f, position, data]() -> io::result<void> {
      RINGLOG_TRY(f.write_at(position, data));
      return f.datasync();
    }, std::move(done));
  }
  size_t poll(std::chrono::milliseconds) override { return 0; }   // completions come from the world's queue
  [[nodiscard]] size_t in_flight() const override { return in_flight_; }
  [[nodiscard]] int event_fd() const override { return -1; }
  [[nodiscard]] std::string_view name() const override { return "sim"; }

 private:
  void queue(std::function<io::result<void>()> op, callback done) {
    // Mostly a fraction of a millisecond (0), sometimes a slow device.
    const int64_t delay = world_.chance(0.05) ? world_.uniform(2, 20) : world_.uniform(0, 1);
    last_due_ms_ = std::max(last_due_ms_, world_.clock.now_ms() + delay);
    ++in_flight_;
    world_.schedule(last_due_ms_, node_, incarnation_, shard_, world::kind_disk,
                    [this, op = std::move(op), done = std::move(done)] {
                      --in_flight_;
                      done(op());
                    });
  }
  world& world_;
  int node_;
  uint64_t incarnation_;
  size_t shard_;
  size_t in_flight_ = 0;
  int64_t last_due_ms_ = 0;
};

/// runtime::shard_runtime of one node incarnation.
class sim_runtime final : public runtime::shard_runtime {
 public:
  sim_runtime(world& w, int node, uint64_t incarnation, size_t shards)
      : world_(w), node_(node), incarnation_(incarnation) {
    for (size_t s = 0; s < shards; ++s) disks_.push_back(std::make_unique<sim_disk>(w, node, incarnation, s));
  }
  [[nodiscard]] size_t shard_count() const override { return disks_.size(); }
  [[nodiscard]] size_t current_shard() const override {
    return world_.running_node == node_ ? world_.running_shard : disks_.size();
  }
  void post(size_t shard, task t) override {
    world_.schedule(world_.clock.now_ms(), node_, incarnation_, shard, world::kind_task, std::move(t));
  }
  void post_after(size_t shard, int64_t delay_ms, task t) override {
    world_.schedule(world_.clock.now_ms() + std::max<int64_t>(delay_ms, 0), node_, incarnation_, shard,
                    world::kind_timer, std::move(t));
  }
  io::disk_executor& disk(size_t shard) override { return *disks_[shard]; }

 private:
  world& world_;
  int node_;
  uint64_t incarnation_;
  std::vector<std::unique_ptr<sim_disk>> disks_;
};

/// The network between the nodes: link state and per-link delivery times.
struct network {
  std::set<std::pair<int, int>> cut;                   // directed links that lose everything
  std::map<std::pair<int, int>, int64_t> slow_until;   // delay spikes: link -> until (ms)
  std::map<std::pair<int, int>, int64_t> last_due;     // FIFO per directed link
  double loss = 0.0;                                   // chance a message is lost (a broken connection)
  /// Fetch requests (api key 1: the metadata quorum's and the replicas') a node sends before
  /// `until` take [min_ms, max_ms] each, outside the link's FIFO (a connection of their own, its
  /// other calls pass them): cluster_sim --slow-fetches-after-heal.
  struct slow_fetches {
    int64_t until = 0;
    int64_t min_ms = 0;
    int64_t max_ms = 0;
  };
  std::map<int, slow_fetches> fetches_slow;
  static constexpr int16_t fetch_api_key = 1;   // Kafka's Fetch

  /// When a request of `api_key` from `from` to `to` sent now arrives.
  int64_t due(world& w, int from, int to, int16_t api_key) {
    const auto s = fetches_slow.find(from);
    if (api_key != fetch_api_key || s == fetches_slow.end() || s->second.until <= w.clock.now_ms()) {
      return due(w, from, to);
    }
    return w.clock.now_ms() + w.uniform(s->second.min_ms, s->second.max_ms);
  }

  [[nodiscard]] bool up(int from, int to) const { return !cut.contains({from, to}); }
  int64_t due(world& w, int from, int to) {
    int64_t delay = w.uniform(0, 3);
    if (auto s = slow_until.find({from, to}); s != slow_until.end() && s->second > w.clock.now_ms()) {
      delay += w.uniform(50, 400);
    }
    auto& last = last_due[{from, to}];
    last = std::max(last, w.clock.now_ms() + delay);
    return last;
  }
};

class sim_transport;

/// Every node's current transport, for delivery (nullptr while down).
using transport_table = std::map<int, sim_transport*>;

/// rpc::transport of one node incarnation; handlers and done callbacks run on its shard 0.
class sim_transport final : public rpc::transport {
 public:
  sim_transport(world& w, network& net, transport_table& table, int node, uint64_t incarnation)
      : world_(w), net_(net), table_(table), node_(node), incarnation_(incarnation) {}

  void send(int32_t to, int16_t api_key, int16_t api_version, rpc::bytes body, int64_t timeout_ms,
            rpc::response_callback done) override {
    const uint64_t id = ++next_call_;
    pending_[id] = pending_call{api_key, api_version, std::move(done)};
    world_.schedule(world_.clock.now_ms() + timeout_ms, node_, incarnation_, 0, world::kind_timeout, [this, id, to] {
      fail(id, rpc::error{rpc::errc::timeout, "no answer from node " + std::to_string(to)});
    });
    auto target = table_.find(to);
    if (target == table_.end()) return fail(id, rpc::error{rpc::errc::unknown_peer, "node " + std::to_string(to)});
    if (!net_.up(node_, to) || world_.chance(net_.loss)) return;   // lost: the timeout answers
    if (target->second == nullptr) {
      // Down: its host refuses the connection (a definite answer, after a round trip).
      world_.schedule(net_.due(world_, node_, to) + 1, node_, incarnation_, 0, world::kind_response, [this, id, to] {
        fail(id, rpc::error{rpc::errc::connection_refused, "node " + std::to_string(to) + " is down"});
      });
      return;
    }
    sim_transport* peer = target->second;
    const uint64_t peer_incarnation = peer->incarnation_;
    world_.schedule(net_.due(world_, node_, to, api_key), to, peer_incarnation, 0, world::kind_request,
                    [this, peer, id, api_key, api_version, body = std::move(body), from_incarnation = incarnation_] {
                      if (!net_.up(node_, peer->node_)) return;
                      peer->deliver(node_, from_incarnation, id, api_key, api_version, body);
                    });
  }
  void set_handler(int16_t api_key, rpc::request_handler handler) override { handlers_[api_key] = std::move(handler); }
  [[nodiscard]] rpc::request_handler handler(int16_t api_key) const override {
    auto it = handlers_.find(api_key);
    return it == handlers_.end() ? rpc::request_handler{} : it->second;
  }

  [[nodiscard]] int node() const { return node_; }
  [[nodiscard]] uint64_t incarnation() const { return incarnation_; }

 private:
  struct pending_call {
    int16_t api_key;
    int16_t api_version;
    rpc::response_callback done;
  };

  void fail(uint64_t id, rpc::error e) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    auto done = std::move(it->second.done);
    pending_.erase(it);
    done(std::move(e));
  }

  /// On this node: the request from `from` (incarnation `from_incarnation`) runs its handler.
  void deliver(int from, uint64_t from_incarnation, uint64_t id, int16_t api_key, int16_t api_version,
               const rpc::bytes& body) {
    auto h = handlers_.find(api_key);
    if (h == handlers_.end()) return;   // never registered: the sender times out
    protocol::request_header_data header;
    header.request_api_key = api_key;
    header.request_api_version = api_version;
    header.correlation_id = static_cast<int32_t>(id & 0x7fffffff);
    header.client_id = "node-" + std::to_string(from);
    h->second(header, body, [w = &world_, net = &net_, table = &table_, self = node_, from, from_incarnation,
                             id](rpc::bytes frame) {
      if (!net->up(self, from)) return;
      w->schedule(net->due(*w, self, from), from, from_incarnation, 0, world::kind_response,
                  [net, table, self, from, id, frame = std::move(frame)] {
                    if (!net->up(self, from)) return;
                    auto t = table->find(from);
                    if (t != table->end() && t->second != nullptr) t->second->complete(id, frame);
                  });
    });
  }

  /// The response frame (size prefix, response header, body) of call `id`.
  void complete(uint64_t id, const rpc::bytes& frame) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;   // timed out before
    auto call = std::move(it->second);
    pending_.erase(it);
    std::span<const std::byte> all(frame);
    if (auto refused = rpc::as_close_connection(all)) {   // the listener would close the connection
      return call.done(rpc::error{rpc::errc::disconnected, refused->why});
    }
    if (all.size() < protocol::frame_size_bytes) {
      return call.done(rpc::error{rpc::errc::malformed_response, "short frame"});
    }
    protocol::reader rd(all.subspan(protocol::frame_size_bytes));
    if (auto header = protocol::decode_response_header(rd, call.api_key, call.api_version); !header.ok()) {
      return call.done(rpc::error{rpc::errc::malformed_response, header.error().message});
    }
    call.done(rpc::bytes(frame.begin() + static_cast<std::ptrdiff_t>(protocol::frame_size_bytes + rd.position()),
                         frame.end()));
  }

  world& world_;
  network& net_;
  transport_table& table_;
  int node_;
  uint64_t incarnation_;
  uint64_t next_call_ = 0;
  std::map<int16_t, rpc::request_handler> handlers_;
  std::map<uint64_t, pending_call> pending_;
};

}  // namespace ringlog::sim
