#include "ringlog/controller/metadata_quorum.h"

#include <algorithm>
#include <future>

#include "ringlog/base/assert.h"
#include "ringlog/controller/quorum_storage.h"
#include "ringlog/controller/quorum_wire.h"
#include "ringlog/raft/constants.h"
#include "ringlog/raft/node.h"

namespace ringlog::controller {

namespace {

error config_error(std::string message) { return error{errc::invalid_record, std::move(message)}; }

constexpr int16_t quorum_apis[] = {
    protocol::vote_request_data::api_key,
    protocol::begin_quorum_epoch_request_data::api_key,
    protocol::end_quorum_epoch_request_data::api_key,
    protocol::fetch_request_data::api_key,
    protocol::fetch_snapshot_request_data::api_key,
};

}  // namespace

struct metadata_quorum::impl : std::enable_shared_from_this<metadata_quorum::impl> {
  impl(metadata_quorum_config c, io::file_system& f, runtime::shard_runtime& r, size_t s, const base::clock& cl,
       rpc::transport* t, quorum_state_machine& m)
      : config(std::move(c)), fs(f), rt(r), shard(s), clock(cl), transport(t), machine(m),
        random(config.random_seed.value_or(static_cast<uint64_t>(config.node_id) * 0x9E3779B97F4A7C15ULL ^
                                           static_cast<uint64_t>(cl.now_ms()))) {}

  struct proposal {
    std::function<void(result<int64_t>)> done;
    raft::leader_epoch epoch{0};
    int64_t deadline_ms = 0;
  };
  struct inbound_request {
    rpc::respond_fn respond;
    int16_t api_version = 0;
    int32_t wire_correlation_id = 0;
    raft::node_id from = raft::no_node;
    int64_t received_ms = 0;
  };
  struct voter_fetch {
    int64_t log_end_offset = -1;
    int64_t last_fetch_wall_ms = -1;
    int64_t last_fetch_monotonic_ms = -1;   // the leadership lease's quorum contact
  };

  metadata_quorum_config config;
  io::file_system& fs;
  runtime::shard_runtime& rt;
  size_t shard;
  const base::clock& clock;
  rpc::transport* transport;
  quorum_state_machine& machine;
  raft::seeded_random random;

  std::unique_ptr<quorum_storage> storage;
  std::unique_ptr<raft::node> node;
  std::map<int64_t, model::bytes> legacy_keys;
  int64_t last_now_ms = 0;
  bool started = false;
  bool stopped = false;
  std::atomic<bool> stopped_seen{false};   // stopped, as other threads may read it
  bool failed = false;

  // log durability (group commit)
  bool log_dirty = false;
  bool flush_in_flight = false;

  // state machine
  int64_t applied_end = 0;  // every entry below has been applied (or is covered by a loaded snapshot)
  uint64_t applied_since_snapshot = 0;

  // proposals by offset; inbound requests by the raft-side correlation id we gave them
  std::map<int64_t, proposal> proposals;
  std::map<int64_t, inbound_request> inbound;
  int64_t next_inbound_id = 1;

  // what the leader saw of each voter's fetches in the current epoch (describe)
  std::map<int32_t, voter_fetch> fetches;
  raft::leader_epoch fetches_epoch{-1};

  // published for other threads
  std::atomic<int32_t> published_leader{-1};
  std::atomic<int32_t> published_epoch{0};
  std::atomic<bool> published_leader_caught_up{false};   // leader_caught_up()
  std::atomic<int64_t> published_epoch_start{-1};         // leader_epoch_start_offset()
  mutable std::mutex description_mutex;
  quorum_description description;
  int32_t reported_leader = -2;
  int32_t reported_epoch = -1;

  int64_t now_ms() {
    // raft's timers need a clock that never steps (base::clock::monotonic_ms); the max keeps a
    // test clock set back by hand from going back too.
    last_now_ms = std::max(last_now_ms, clock.monotonic_ms());
    return last_now_ms;
  }

  /// Runs `f` on the shard and waits for it (inline when already there).
  template <typename F>
  void run_on_shard_and_wait(F f) {
    if (rt.current_shard() == shard) {
      f();
      return;
    }
    std::promise<void> done;
    rt.post(shard, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }

  // ---------------------------------------------------------------------------------------------
  // start / stop

  result<void> start_here() {
    if (started) return base::ok_v;
    // A node that is not a voter is an observer (KIP-595; process.roles=broker): it replicates
    // the metadata log from the leader, which it finds by asking the voters over the transport.
    const bool voter = config.voters.find(config.node_id) != config.voters.end();
    if (!voter && transport == nullptr) {
      return config_error("node.id " + std::to_string(config.node_id) +
                          " is not one of controller.quorum.voters (an observer) and needs a cluster listener "
                          "transport to reach them");
    }
    if (config.voters.size() > 1 && transport == nullptr) {
      return config_error("controller.quorum.voters lists " + std::to_string(config.voters.size()) +
                          " voters but there is no cluster listener transport");
    }
    raft::config rc;
    rc.self = raft::node_id{config.node_id};
    for (const auto& [id, address] : config.voters) rc.voters.push_back(raft::node_id{id});
    rc.cluster_id = config.cluster_id;
    rc.election_timeout_ms = config.election_timeout_ms;
    rc.fetch_timeout_ms = config.fetch_timeout_ms;
    rc.election_backoff_max_ms = config.election_backoff_max_ms;
    if (auto problem = raft::validate(rc); !problem.empty()) return config_error(problem);

    auto opened = quorum_storage::open(fs, config.log_dir, clock, config.cluster_id, rc.voters);
    if (!opened.ok()) return opened.error();
    storage = std::move(opened).value();
    const loaded_quorum& loaded = storage->loaded();
    legacy_keys = loaded.legacy_keys;

    // The snapshot first, then (upgrade only) the single-node broker's committed history.
    const auto& snapshot_id = loaded.state.snapshot_id;
    applied_end = snapshot_id.end_offset.value();
    if (snapshot_id.end_offset.value() > 0) {
      machine.load_snapshot(loaded.state.snapshot_payload, snapshot_id.end_offset.value());
    }
    const bool upgraded_single_node = voter && !loaded.had_quorum_state_file && config.voters.size() == 1;
    if (upgraded_single_node) {
      apply_entries(loaded.state.entries);
    }

    const int64_t now = now_ms();
    // Correlation ids of a new incarnation must not match responses meant for an old one.
    const int64_t first_correlation_id = now * 1024;
    raft::persisted_state state = loaded.state;
    state.awaiting_first_catch_up = config.meta_properties_once_caught_up.has_value();
    node = std::make_unique<raft::node>(rc, std::move(state), random, now, first_correlation_id);
    if (transport != nullptr) register_handlers();
    started = true;
    drive();
    schedule_tick();
    return base::ok_v;
  }

  void stop_here() {
    if (stopped) return;
    stopped = true;
    stopped_seen.store(true, std::memory_order_release);
    fail_proposals(errc::shutting_down, "the metadata quorum is stopping");
    inbound.clear();
    // A stop right after catching up (e.g. a start refused once the metadata is read) can find
    // the log's fdatasync in flight: let it complete before the files close, as the broker's
    // shutdown does (partition_log::close asserts none is). Bounded: 10 s in 10 ms polls; past
    // that the files are left to the process exit rather than closed under the sync.
    constexpr int flush_polls_max = 1'000;
    for (int i = 0; i < flush_polls_max && flush_in_flight; ++i) rt.disk(shard).poll(std::chrono::milliseconds(10));
    if (storage && !failed && !flush_in_flight) (void)storage->close();
  }

  /// A disk failure: the metadata log directory is not trusted any more (style.md "Errors").
  void fail(const std::string& why) {
    if (config.log_dir_failures != nullptr) {
      config.log_dir_failures->report("metadata log write", storage::error{storage::errc::kafka_storage_error, why});
    }
    failed = true;
    fail_proposals(errc::kafka_storage_error, why);
    stop_here();
  }

  void register_handlers() {
    std::weak_ptr<impl> weak = shared_from_this();
    for (int16_t api_key : quorum_apis) {
      transport->set_handler(api_key, [weak, api_key](const protocol::request_header_data& header,
                                                      std::span<const std::byte> body, rpc::respond_fn respond) {
        auto self = weak.lock();
        if (!self) return;
        auto request = quorum_wire::decode_request(api_key, header.request_api_version, body);
        // One that does not decode, or names another log than __cluster_metadata-0, closes the
        // connection (rpc::close_connection_frame); its error names the request and version
        // ("BeginQuorumEpochRequest v0: topics: truncated ...").
        if (!request.ok()) return respond(rpc::close_connection_frame(header, request.error().message));
        // Only a misconfigured peer (two processes with one node.id) names this node as the
        // sender of a BeginQuorumEpoch, EndQuorumEpoch, Fetch or FetchSnapshot: raft ignores it,
        // so it closes the connection with the warning naming it. A Vote naming this node is
        // answered not granted instead (Kafka's CandidateState), by raft.
        const raft::node_id sender = quorum_wire::sender_of(*request);
        if (sender.value() == self->config.node_id && !std::holds_alternative<raft::vote_request>(*request)) {
          return respond(rpc::close_connection_frame(
              header, "the request names this node (node.id " + std::to_string(self->config.node_id) +
                          ") as its sender: is another process configured with the same node.id?"));
        }
        self->rt.post(self->shard, [self, header, request = std::move(request).value(),
                                         respond = std::move(respond)]() mutable {
          self->on_request(header, std::move(request), std::move(respond));
        });
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // inputs

  void schedule_tick() {
    rt.post_after(shard, constants::tick_interval_ms, [self = shared_from_this()] {
      if (self->stopped) return;
      self->tick();
      self->schedule_tick();
    });
  }

  void tick() {
    const int64_t now = now_ms();
    node->tick(now);
    expire(now);
    drive();
  }

  void on_request(const protocol::request_header_data& header, raft::message_body request, rpc::respond_fn respond) {
    if (stopped) return;
    if (inbound.size() >= constants::inbound_requests_max) return;  // the peer retries
    const raft::node_id from = quorum_wire::sender_of(request);
    if (const auto* f = std::get_if<raft::fetch_request>(&request)) note_fetch(*f);
    const int64_t id = next_inbound_id++;
    inbound.emplace(id, inbound_request{std::move(respond), header.request_api_version, header.correlation_id, from, now_ms()});
    node->tick(now_ms());
    node->handle(raft::message{from, raft::node_id{config.node_id}, id, std::move(request)});
    drive();
  }

  void on_response(raft::node_id from, int64_t correlation_id, raft::message_body response) {
    if (stopped) return;
    node->tick(now_ms());
    node->handle(raft::message{from, raft::node_id{config.node_id}, correlation_id, std::move(response)});
    drive();
  }

  /// Runs on the transport's thread. A broken connection is checked with a fresh connect: the
  /// peer's listener refusing it says the process is gone (rpc::probe_listening).
  void on_send_failed(raft::node_id to, rpc::errc code) {
    std::weak_ptr<impl> weak = shared_from_this();
    auto unreachable = [weak, to] {
      if (auto self = weak.lock()) self->rt.post(self->shard, [self, to] { self->on_peer_unreachable(to); });
    };
    if (code == rpc::errc::connection_refused) return unreachable();
    if (code != rpc::errc::disconnected || transport == nullptr) return;
    rpc::probe_listening(*transport, to.value(), constants::request_timeout_ms,
                         [unreachable](rpc::result<void> r) {
                           if (!r.ok() && r.error().code == rpc::errc::connection_refused) unreachable();
                         });
  }

  void on_peer_unreachable(raft::node_id peer) {
    if (stopped) return;
    node->tick(now_ms());
    node->peer_unreachable(peer);
    drive();
  }

  void note_fetch(const raft::fetch_request& f) {
    if (fetches_epoch != node->epoch()) {
      fetches.clear();
      fetches_epoch = node->epoch();
    }
    if (f.current_leader_epoch != node->epoch() || node->role() != raft::role::leader) return;
    // Bounded: the voters plus the observers raft tracks (raft::constants::observers_max).
    if (fetches.size() >= config.voters.size() + raft::constants::observers_max &&
        !fetches.contains(f.replica_id.value())) {
      return;
    }
    fetches[f.replica_id.value()] = voter_fetch{f.fetch_offset.value(), clock.now_ms(), clock.monotonic_ms()};
  }

  void propose_here(std::vector<uint8_t> payload, std::function<void(result<int64_t>)> done) {
    if (stopped || !started) {
      done(error{errc::shutting_down, "the metadata quorum is not running"});
      return;
    }
    node->tick(now_ms());
    auto offset = node->propose(std::move(payload));
    if (!offset.ok()) {
      done(from_raft(offset.error()));
      drive();
      return;
    }
    proposals.emplace(offset->value(), proposal{std::move(done), node->epoch(), now_ms() + config.propose_timeout_ms});
    drive();
  }

  error from_raft(const raft::error& e) const {
    switch (e.code) {
      case raft::errc::record_too_large: return error{errc::record_too_large, e.message};
      case raft::errc::uncommitted_limit_reached: return error{errc::uncommitted_limit_reached, e.message};
      default: break;
    }
    return not_leader_error();
  }

  error not_leader_error() const {
    const int32_t leader = node ? node->leader_id().value() : -1;
    if (leader >= 0 && leader != config.node_id) {
      return error{errc::not_leader_or_follower, "node " + std::to_string(config.node_id) +
                                                     " is not the metadata quorum leader; the leader is node " +
                                                     std::to_string(leader)};
    }
    return error{errc::not_leader_or_follower,
                 "node " + std::to_string(config.node_id) + " is not the metadata quorum leader; no leader is known"};
  }

  void expire(int64_t now) {
    for (auto it = proposals.begin(); it != proposals.end();) {
      if (it->second.deadline_ms > now) {
        ++it;
        continue;
      }
      auto done = std::move(it->second.done);
      const int64_t offset = it->first;
      it = proposals.erase(it);
      done(error{errc::request_timed_out, "the entry at offset " + std::to_string(offset) + " was not committed within " +
                                              std::to_string(config.propose_timeout_ms) + " ms"});
    }
    for (auto it = inbound.begin(); it != inbound.end();) {
      if (now - it->second.received_ms >= constants::inbound_request_expiry_ms) {
        it = inbound.erase(it);
      } else {
        ++it;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // effects

  /// Carries out the node's effects until it has none left, then starts a log flush if needed and
  /// publishes the state for other threads.
  void drive() {
    do {
      while (!stopped) {
        raft::effects fx = node->take_effects();
        if (fx.empty()) break;
        if (!carry_out(fx)) return;
      }
      if (stopped) return;
    } while (maybe_snapshot());  // a new snapshot emits delete_prefix: drain that too
    maybe_flush();
    publish();
  }

  /// One effects value, in effects.h's order. False after a disk failure.
  bool carry_out(raft::effects& fx) {
    if (fx.quorum_state_) {
      auto written = storage->write_quorum_state(fx.quorum_state_->state);
      if (!written.ok()) {
        fail(written.error().message);
        return false;
      }
      node->on_quorum_state_persisted(fx.quorum_state_->version);
    }
    for (auto& w : fx.log_writes) {
      if (!write_log(w)) return false;
    }
    // Before anything leaves or is applied: a commit seen outside implies the record is durable.
    if (fx.caught_up_first_time && config.meta_properties_once_caught_up) {
      // The wait of a directory formatted on this start ends for good (meta.properties.h).
      if (auto written = storage::write_meta_properties(fs, config.log_dir, *config.meta_properties_once_caught_up);
          !written.ok()) {
        fail(written.error().message);
        return false;
      }
    }
    for (auto& m : fx.messages) send(std::move(m));
    if (fx.apply_snapshot) {
      machine.load_snapshot(fx.apply_snapshot->payload, fx.apply_snapshot->snapshot_id.end_offset.value());
      applied_end = fx.apply_snapshot->snapshot_id.end_offset.value();
      applied_since_snapshot = 0;
    }
    if (!fx.committed.empty()) {
      apply_entries(fx.committed);
      complete_proposals(fx.committed);
    }
    return true;
  }

  bool write_log(raft::log_write& w) {
    result<void> r = base::ok_v;
    if (auto* a = std::get_if<raft::append_entries>(&w)) {
      r = storage->append(a->entries, clock.now_ms());
      log_dirty = true;
    } else if (auto* t = std::get_if<raft::truncate_suffix>(&w)) {
      r = storage->truncate_suffix(t->end_offset);
      log_dirty = true;  // the node hears of the new durable end through the next fsync report
      // Proposals at or above the cut will never commit with their own payload.
      for (auto it = proposals.lower_bound(t->end_offset.value()); it != proposals.end();) {
        auto done = std::move(it->second.done);
        it = proposals.erase(it);
        done(not_leader_error());
      }
    } else if (auto* s = std::get_if<raft::install_snapshot>(&w)) {
      r = storage->install_snapshot(s->snapshot_id, s->payload);
      log_dirty = true;
    } else if (auto* d = std::get_if<raft::delete_prefix>(&w)) {
      r = storage->delete_prefix(d->log_start_offset);
    }
    if (!r.ok()) {
      fail(r.error().message);
      return false;
    }
    return true;
  }

  void maybe_flush() {
    if (!log_dirty || flush_in_flight || failed) return;
    log_dirty = false;
    flush_in_flight = true;
    // After drive() the node's log and the files hold the same entries: this is the position
    // the flush covers.
    const raft::offset_and_epoch position = node->log().end_position();
    storage->flush_async(rt.disk(shard), [self = shared_from_this(), position](result<void> r) {
      self->flush_in_flight = false;
      if (self->stopped) return;
      if (!r.ok()) {
        self->fail(r.error().message);
        return;
      }
      self->node->on_append_fsynced(position);
      self->drive();
    });
  }

  void send(raft::message m) {
    if (!quorum_wire::is_request(m.body)) {
      respond(std::move(m));
      return;
    }
    if (transport == nullptr) return;  // a single voter sends nothing
    auto request = quorum_wire::encode_request(m.body);
    RINGLOG_ASSERT(request.ok(), "a raft request must encode");
    const int16_t api_key = request->api_key;
    const int16_t api_version = request->api_version;
    const raft::node_id to = m.to;
    const int64_t correlation_id = m.correlation_id;
    std::weak_ptr<impl> weak = shared_from_this();
    transport->send(to.value(), api_key, api_version, std::move(request->body), constants::request_timeout_ms,
                    [weak, to, correlation_id, api_key, api_version](rpc::result<rpc::bytes> r) {
                      auto self = weak.lock();
                      if (!self) return;
                      if (!r.ok()) {
                        // A lost request: the node retries on its own. A refused connect is more:
                        // the peer's process is gone, and a follower of it need not wait out
                        // controller.quorum.fetch.timeout.ms to stand.
                        self->on_send_failed(to, r.error().code);
                        return;
                      }
                      auto response = quorum_wire::decode_response(api_key, api_version, *r);
                      if (!response.ok()) return;
                      self->rt.post(self->shard, [self, to, correlation_id,
                                                       body = std::move(response).value()]() mutable {
                        self->on_response(to, correlation_id, std::move(body));
                      });
                    });
  }

  void respond(raft::message m) {
    auto it = inbound.find(m.correlation_id);
    if (it == inbound.end() || it->second.from != m.to) return;  // expired, or not ours
    auto request = std::move(it->second);
    inbound.erase(it);
    auto frame = quorum_wire::encode_response_frame(m.body, request.api_version, request.wire_correlation_id,
                                                    clock.now_ms());
    if (!frame.ok()) return;  // an old peer version that cannot carry the answer: it times out
    request.respond(std::move(frame).value());
  }

  void apply_entries(const std::vector<raft::entry>& entries) {
    std::vector<committed_entry> batch;
    batch.reserve(entries.size());
    const int64_t applied_end_before = applied_end;
    int64_t data_end = -1;   // one past the last data entry passed on
    for (const auto& e : entries) {
      if (e.offset_.value() < applied_end) continue;  // applied before (upgrade history, snapshot)
      RINGLOG_ASSERT_OP(e.offset_.value(), ==, applied_end);
      applied_end = e.offset_.value() + 1;
      ++applied_since_snapshot;
      if (e.type != raft::entry_type::data) continue;
      committed_entry c;
      c.offset = e.offset_.value();
      c.payload = e.payload;
      if (auto k = legacy_keys.find(c.offset); k != legacy_keys.end()) c.legacy_key = &k->second;
      batch.push_back(c);
      data_end = c.offset + 1;
    }
    if (!batch.empty()) machine.apply(batch);
    // Control entries after the last data entry: the machine hears that they are applied too.
    if (applied_end > applied_end_before && applied_end > data_end) machine.applied_through(applied_end);
  }

  void complete_proposals(const std::vector<raft::entry>& committed) {
    for (const auto& e : committed) {
      auto it = proposals.find(e.offset_.value());
      if (it == proposals.end()) continue;
      auto p = std::move(it->second);
      proposals.erase(it);
      if (e.epoch == p.epoch && e.type == raft::entry_type::data) {
        p.done(e.offset_.value());
      } else {
        p.done(not_leader_error());  // another leader's entry took this offset
      }
    }
  }

  void fail_proposals(errc code, const std::string& why) {
    auto failing = std::move(proposals);
    proposals.clear();
    for (auto& [offset, p] : failing) p.done(error{code, why});
  }

  /// Takes a snapshot when snapshot_interval_entries were applied since the last one and the
  /// node allows one covering everything applied. True when one was taken.
  bool maybe_snapshot() {
    if (applied_since_snapshot < config.snapshot_interval_entries || failed) return false;
    const raft::offset end{applied_end};
    if (end > node->snapshot_limit() || end <= node->log().log_start_offset()) return false;  // later
    auto epoch = node->log().epoch_at(end - 1);
    if (!epoch) return false;
    const raft::offset_and_epoch id{end, *epoch};
    auto payload = machine.snapshot();
    if (auto saved = storage->save_snapshot(id, payload); !saved.ok()) {
      fail(saved.error().message);
      return false;
    }
    applied_since_snapshot = 0;
    auto created = node->on_snapshot_created(id, std::move(payload));
    RINGLOG_ASSERT(created.ok(), "a snapshot within snapshot_limit() must be accepted");
    return true;
  }

  /// The leader's: the offset of its epoch's first entry. The log's end of the epoch before it
  /// (memory_log::end_offset_for_epoch); when the snapshot already covers entries of this epoch
  /// (none of an earlier one is left in the log), the snapshot's last offset, which lies at or
  /// after that first entry: stricter, never looser.
  [[nodiscard]] int64_t epoch_start_offset() const {
    const raft::leader_epoch epoch = node->epoch();
    const auto before = node->log().end_offset_for_epoch(raft::leader_epoch{epoch.value() - 1});
    if (before && before->epoch < epoch) return before->end_offset.value();
    return node->log().log_start_offset().value() - 1;
  }

  void publish() {
    // A leader is known only to a leader and its followers: a prospective or resigned node may
    // remember the last one (KIP-996), but cannot say it leads now.
    const raft::role role = node->role();
    const int32_t leader =
        role == raft::role::leader || role == raft::role::follower ? node->leader_id().value() : -1;
    const int32_t epoch = node->epoch().value();
    published_leader.store(leader, std::memory_order_relaxed);
    published_epoch.store(epoch, std::memory_order_relaxed);
    const auto last_applied_epoch = applied_end > 0 ? node->log().epoch_at(raft::offset{applied_end - 1}) : std::nullopt;
    published_leader_caught_up.store(role == raft::role::leader && last_applied_epoch == node->epoch(),
                                     std::memory_order_relaxed);
    published_epoch_start.store(role == raft::role::leader ? epoch_start_offset() : -1, std::memory_order_relaxed);
    if (node->role() != raft::role::leader && !proposals.empty()) {
      // Leadership moved: the outcome of what we appended is up to the new leader; say so.
      fail_proposals(errc::not_leader_or_follower, not_leader_error().message);
    }
    if (leader != reported_leader || epoch != reported_epoch) {
      reported_leader = leader;
      reported_epoch = epoch;
      machine.on_leader_change(leader, epoch);
    }
    quorum_description d;
    d.node_id = config.node_id;
    d.leader_id = leader;
    d.leader_epoch = epoch;
    d.high_watermark = node->high_watermark().value();
    d.log_start_offset = node->log().log_start_offset().value();
    d.log_end_offset = node->log().log_end_offset().value();
    d.applied_end_offset = applied_end;
    d.role = raft::to_string(node->role());
    const bool leading = node->role() == raft::role::leader;
    for (const auto& [id, address] : config.voters) {
      quorum_description::voter v;
      v.replica_id = id;
      if (leading && id == config.node_id) {
        v.log_end_offset = d.log_end_offset;
        v.lag = 0;
        v.last_fetch_timestamp_ms = clock.now_ms();
        v.last_fetch_monotonic_ms = clock.monotonic_ms();
      } else if (leading && fetches_epoch == node->epoch()) {
        if (auto f = fetches.find(id); f != fetches.end()) {
          v.log_end_offset = f->second.log_end_offset;
          v.lag = d.log_end_offset - f->second.log_end_offset;
          v.last_fetch_timestamp_ms = f->second.last_fetch_wall_ms;
          v.last_fetch_monotonic_ms = f->second.last_fetch_monotonic_ms;
        }
      }
      d.voters.push_back(v);
    }
    d.observer = node->is_observer();
    d.cluster_id_refused_by = node->cluster_id_refused_by().value();
    d.awaiting_first_catch_up = node->awaiting_first_catch_up();
    if (leading && fetches_epoch == node->epoch()) {
      for (const auto& [id, f] : fetches) {
        if (config.voters.contains(id)) continue;
        d.observers.push_back({id, f.log_end_offset, d.log_end_offset - f.log_end_offset, f.last_fetch_wall_ms,
                               f.last_fetch_monotonic_ms});
      }
    }
    std::lock_guard lock(description_mutex);
    description = std::move(d);
  }
};

metadata_quorum::metadata_quorum(metadata_quorum_config config, io::file_system& fs, runtime::shard_runtime& runtime,
                                 size_t shard, const base::clock& clock, rpc::transport* transport,
                                 quorum_state_machine& state_machine)
    : impl_(std::make_shared<impl>(std::move(config), fs, runtime, shard, clock, transport, state_machine)) {}

metadata_quorum::~metadata_quorum() {
  // stop() must have run (it needs the runtime); a quorum never started has nothing to stop.
  RINGLOG_ASSERT(!impl_->started || impl_->stopped, "metadata_quorum destroyed without stop()");
}

result<void> metadata_quorum::start() {
  result<void> out = base::ok_v;
  impl_->run_on_shard_and_wait([&] { out = impl_->start_here(); });
  return out;
}

void metadata_quorum::propose(std::vector<uint8_t> payload, std::function<void(result<int64_t>)> done) {
  impl_->rt.post(impl_->shard, [p = impl_, payload = std::move(payload), done = std::move(done)]() mutable {
    p->propose_here(std::move(payload), std::move(done));
  });
}

int32_t metadata_quorum::leader_id() const { return impl_->published_leader.load(std::memory_order_relaxed); }

bool metadata_quorum::leader_caught_up() const {
  return impl_->published_leader_caught_up.load(std::memory_order_relaxed);
}

int64_t metadata_quorum::leader_epoch_start_offset() const {
  return impl_->published_epoch_start.load(std::memory_order_relaxed);
}

int32_t metadata_quorum::epoch() const { return impl_->published_epoch.load(std::memory_order_relaxed); }

quorum_description metadata_quorum::describe() const {
  std::lock_guard lock(impl_->description_mutex);
  return impl_->description;
}

void metadata_quorum::resign() {
  impl_->rt.post(impl_->shard, [p = impl_] {
    if (p->stopped || !p->started) return;
    p->node->tick(p->now_ms());
    p->node->resign();
    p->drive();
  });
}

void metadata_quorum::stop() {
  // Stopped before: nothing to do, and the runtime may be gone by now (a second stop from a
  // destructor after the shards stopped).
  if (impl_->stopped_seen.load(std::memory_order_acquire)) return;
  impl_->run_on_shard_and_wait([p = impl_] { p->stop_here(); });
}

}  // namespace ringlog::controller
