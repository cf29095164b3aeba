// Transactions on the broker (transactions.h): each __transaction_state partition this node
// leads has one txn::transaction_coordinator on the partition's shard; every call hops there,
// runs the pure state machine, appends the record it returns and answers once it is durable.
// Markers of ended transactions go out through txn_host::write_markers (the partitions' side);
// a failed marker write is retried until it succeeds or the leadership moves (Kafka's
// TransactionMarkerChannelManager retries too: a decided transaction must end).

#include "txn_service.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "ringlog/base/assert.h"
#include "ringlog/group/coordinator_partition.h"
#include "ringlog/model/types.h"
#include "coordinator_write_error.h"

namespace ringlog::broker {
namespace {

/// Backoff between tries of a marker write that failed (a partition without a leader for a
/// moment, a full queue): short enough that a transaction ends soon after its partitions are
/// back, long enough not to spin.
constexpr int64_t marker_retry_backoff_ms = 100;

error from_txn(const txn::error& e) {
  using terrc = txn::errc;
  switch (e.code) {
    case terrc::invalid_producer_id_mapping: return {errc::invalid_producer_id_mapping, e.message};
    case terrc::producer_fenced: return {errc::producer_fenced, e.message};
    case terrc::concurrent_transactions: return {errc::concurrent_transactions, e.message};
    case terrc::invalid_txn_state: return {errc::invalid_txn_state, e.message};
    case terrc::invalid_transaction_timeout: return {errc::invalid_transaction_timeout, e.message};
    case terrc::transactional_id_not_found: return {errc::transactional_id_not_found, e.message};
    case terrc::invalid_request: return {errc::invalid_request, e.message};
    case terrc::too_many_transactional_ids: return {errc::throttling_quota_exceeded, e.message};
    case terrc::producer_id_needed: return {errc::unknown_server_error, e.message};
    case terrc::corrupt_message:
    case terrc::unsupported_version: return {errc::kafka_storage_error, e.message};
  }
  return {errc::unknown_server_error, e.message};
}

/// The coordinator of one __transaction_state partition led here.
struct partition_coordinator {
  partition_coordinator(txn::coordinator_options o, int32_t epoch, uint64_t gen)
      : coordinator(o), coordinator_epoch(epoch), generation(gen) {}
  txn::transaction_coordinator coordinator;
  int32_t coordinator_epoch = -1;   // the partition's leader epoch when this leadership began
  uint64_t generation = 0;          // which leadership: completions of an earlier one are dropped
};

struct shard_state {
  std::map<int32_t, std::unique_ptr<partition_coordinator>> partitions;
};

using id_epoch = std::pair<model::producer_id, model::producer_epoch>;

class txn_service_impl final : public txn_service {
 public:
  txn_service_impl(broker& b, txn_host& host, runtime::shard_runtime& runtime, const base::clock& clock,
                   txn_service_options options)
      : broker_(b), host_(host), runtime_(runtime), clock_(clock), options_(options) {
    RINGLOG_ASSERT_OP(options_.state_partitions, >=, 1);
    for (size_t s = 0; s < runtime_.shard_count(); ++s) shards_.push_back(std::make_unique<shard_state>());
  }

  void start(std::function<void()> done) override { load_led_from(0, std::move(done)); }
  void state_partition_led(int32_t partition, bool leads) override;
  void stop() override { stopping_ = true; }

  [[nodiscard]] int32_t coordinator_id(const std::string& transactional_id) const override {
    const auto route = host_.internal_leader_route(transaction_state_topic, partition_of(transactional_id));
    return route.where == group_coordinator_route::place::none ? -1 : route.node_id;
  }
  [[nodiscard]] group_coordinator_route coordinator_route(const std::string& transactional_id) const override {
    return host_.internal_leader_route(transaction_state_topic, partition_of(transactional_id));
  }
  void init_producer_id(std::string transactional_id, int32_t timeout_ms, std::optional<id_epoch> expected,
                        std::function<void(result<id_epoch>)> done) override;
  void add_partitions(std::string transactional_id, model::producer_id producer_id,
                      model::producer_epoch producer_epoch, std::vector<model::topic_partition> partitions,
                      std::function<void(result<void>)> done) override;
  void add_offsets(std::string transactional_id, model::producer_id producer_id, model::producer_epoch producer_epoch,
                   std::string group_id, std::function<void(result<void>)> done) override;
  void verify_partition(std::string transactional_id, model::producer_id producer_id,
                        model::producer_epoch producer_epoch, model::topic_partition partition,
                        std::function<void(result<void>)> done) override;
  /// add_partitions; `internal_allowed`: the group's __consumer_offsets partition of
  /// add_offsets (a producer's own add_partitions may not name an internal topic).
  void add_partitions_of(std::string transactional_id, model::producer_id producer_id,
                         model::producer_epoch producer_epoch, std::vector<model::topic_partition> partitions,
                         bool internal_allowed, std::function<void(result<void>)> done);
  void end_txn(std::string transactional_id, model::producer_id producer_id, model::producer_epoch producer_epoch,
               bool committed, bool bump_epoch, std::function<void(result<id_epoch>)> done) override;
  void describe_transaction(std::string transactional_id,
                            std::function<void(result<transaction_description>)> done) override;
  void list_transactions(list_transactions_filter filter,
                         std::function<void(result<std::vector<transaction_listing>>)> done) override;
  void abort_transaction(std::string transactional_id, std::function<void(result<void>)> done) override;

 private:
  int32_t partition_of(std::string_view transactional_id) const {
    return group::coordinator_partition_for(transactional_id, options_.state_partitions);
  }
  size_t shard_of(int32_t partition) const { return host_.owner_shard(transaction_state_topic, partition); }
  txn::coordinator_options coordinator_options() const {
    txn::coordinator_options o;
    o.transaction_max_timeout_ms = options_.transaction_max_timeout_ms;
    o.transactional_id_expiration_ms = options_.transactional_id_expiration_ms;
    return o;
  }
  /// On the shard of partition `p`: its coordinator, or why this node does not serve it.
  result<partition_coordinator*> coordinator_of(size_t shard, int32_t p) const {
    auto& st = *shards_[shard];
    auto it = st.partitions.find(p);
    if (it != st.partitions.end()) return it->second.get();
    const auto route = host_.internal_leader_route(transaction_state_topic, p);
    if (route.where == group_coordinator_route::place::here) {
      return error{errc::coordinator_load_in_progress, "this broker is loading " + std::string(transaction_state_topic) +
                                                           "-" + std::to_string(p) + ": retry"};
    }
    return error{errc::not_coordinator, "this broker does not coordinate the transactional id: " + route.description};
  }
  /// Runs `f` on the shard of `transactional_id`'s partition with its coordinator (or answers
  /// `fail` with why not).
  void on_coordinator(const std::string& transactional_id, std::function<void(error)> fail,
                      std::function<void(size_t shard, int32_t p, partition_coordinator&)> f) {
    if (stopping_) return fail(error{errc::broker_not_available, "the broker is shutting down"});
    const int32_t p = partition_of(transactional_id);
    const size_t shard = shard_of(p);
    if (!runtime_.admits(shard)) return fail(shard_busy_error(shard));
    runtime_.post(shard, [this, shard, p, fail = std::move(fail), f = std::move(f)] {
      auto pc = coordinator_of(shard, p);
      if (!pc.ok()) return fail(pc.error());
      f(shard, p, *pc.value());
    });
  }
  static error shard_busy_error(size_t shard) {
    return error{errc::throttling_quota_exceeded, "shard " + std::to_string(shard) + " has too much work queued: retry"};
  }
  /// On `shard`: makes `md` durable in partition `p`, then completes the coordinator's write
  /// (starting the markers of a Prepare* state) and runs `then` with the outcome.
  void write(size_t shard, int32_t p, const txn::txn_metadata& md, std::function<void(result<void>)> then);
  /// On `shard`: writes the markers of `m`, retrying until they are written or the leadership of
  /// `p` moved; then makes the Complete* state durable.
  void send_markers(size_t shard, int32_t p, uint64_t generation, txn::marker_request m);
  /// On `shard`, once the markers of `m` are written: makes the Complete* state durable, trying
  /// again until it is or the leadership of `p` moved.
  void complete_markers(size_t shard, int32_t p, uint64_t generation, txn::marker_request m);
  void schedule_sweep(size_t shard);
  /// start(): loads the led partitions from `p` on, one a task, then the sweeps, then `done`.
  void load_led_from(int32_t p, std::function<void()> done);
  /// init_producer_id on the coordinator's shard, with a fresh producer id when one was fetched.
  void init_on_shard(size_t shard, int32_t p, partition_coordinator& pc, std::string transactional_id,
                     int32_t timeout_ms, std::optional<id_epoch> expected, std::optional<model::producer_id> fresh,
                     std::function<void(result<id_epoch>)> done);
  /// Answers an outcome: writes its metadata first when it has some.
  void finish(size_t shard, int32_t p, const txn::outcome& out, std::function<void(result<id_epoch>)> done);

  broker& broker_;
  txn_host& host_;
  runtime::shard_runtime& runtime_;
  const base::clock& clock_;
  txn_service_options options_;
  std::vector<std::unique_ptr<shard_state>> shards_;   // shards_[i] is touched only on shard i's thread
  std::atomic<uint64_t> next_generation_{1};
  std::atomic<bool> stopping_{false};
};

// ---------------------------------------------------------------- leadership and replay

void txn_service_impl::state_partition_led(int32_t p, bool leads) {
  const size_t shard = shard_of(p);
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, shard);
  auto& st = *shards_[shard];
  st.partitions.erase(p);
  if (!leads) return;
  auto records = host_.read_internal_from(transaction_state_topic, shard, p);
  if (!records.ok()) {
    host_.report_error("transaction coordinator: " + std::string(transaction_state_topic) + "-" + std::to_string(p) +
                       ": " + records.error().message);
    return;
  }
  auto pc = std::make_unique<partition_coordinator>(coordinator_options(),
                                                    host_.leader_epoch_of(transaction_state_topic, p),
                                                    next_generation_.fetch_add(1));
  for (const auto& r : records.value()) {
    if (!r.key) continue;
    std::optional<std::span<const std::byte>> value;
    if (r.value) value = std::span<const std::byte>(*r.value);
    if (auto applied = pc->coordinator.replay(*r.key, value); !applied.ok()) {
      host_.report_error("transaction coordinator: " + std::string(transaction_state_topic) + "-" +
                         std::to_string(p) + " offset " + std::to_string(r.record_offset.value()) + ": " +
                         applied.error().message);
      return;   // not served: an operator must look at the partition
    }
  }
  const uint64_t generation = pc->generation;
  auto due = pc->coordinator.pending_markers();
  st.partitions[p] = std::move(pc);
  // Decisions the previous coordinator wrote whose markers may be missing are finished here.
  for (auto& m : due) send_markers(shard, p, generation, std::move(m));
}

void txn_service_impl::load_led_from(int32_t p, std::function<void()> done) {
  // One partition a task, on its shard, the next posted from there: nothing waits on a shard.
  while (p < options_.state_partitions &&
         host_.internal_leader_route(transaction_state_topic, p).where != group_coordinator_route::place::here) {
    ++p;
  }
  if (p == options_.state_partitions) {
    for (size_t s = 0; s < shards_.size(); ++s) schedule_sweep(s);
    return done();
  }
  runtime_.post(shard_of(p), [this, p, done = std::move(done)]() mutable {
    state_partition_led(p, true);
    load_led_from(p + 1, std::move(done));
  });
}

void txn_service_impl::schedule_sweep(size_t shard) {
  runtime_.post_after(shard, options_.abort_timed_out_check_interval_ms, [this, shard] {
    if (stopping_) return;
    const int64_t now = clock_.now_ms();
    for (auto& [p, pc] : shards_[shard]->partitions) {
      // Transactions past transaction.timeout.ms are aborted (their producer fenced); ids idle
      // past transactional.id.expiration.ms are removed.
      for (const auto& md : pc->coordinator.expire(now)) {
        const std::string id = md.transactional_id;
        write(shard, p, md, [this, id](result<void> r) {
          if (!r.ok()) host_.report_error("transaction coordinator: expiring '" + id + "': " + r.error().message);
        });
      }
    }
    schedule_sweep(shard);
  });
}

// ---------------------------------------------------------------- writes and markers

void txn_service_impl::write(size_t shard, int32_t p, const txn::txn_metadata& md,
                             std::function<void(result<void>)> then) {
  auto& pc = *shards_[shard]->partitions.at(p);
  const uint64_t generation = pc.generation;
  auto rec = txn::record_of(md);
  model::record r;
  r.key = std::move(rec.key);
  r.value = std::move(rec.value);
  std::vector<model::record> records;
  records.push_back(std::move(r));
  host_.append_internal_to(transaction_state_topic, shard, p, std::move(records),
                           [this, shard, p, generation, id = md.transactional_id, then = std::move(then)](result<void> r) {
                             auto& st = *shards_[shard];
                             auto it = st.partitions.find(p);
                             if (it == st.partitions.end() || it->second->generation != generation) {
                               // The leadership moved meanwhile: the new coordinator replays what is durable.
                               return then(error{errc::not_coordinator, "the coordinator of the transactional id moved "
                                                                        "while its state was written: retry"});
                             }
                             auto markers = it->second->coordinator.complete_write(id, r.ok());
                             if (markers) send_markers(shard, p, generation, std::move(*markers));
                             if (!r.ok()) return then(coordinator_write_error(r.error(), "the transaction's state", transaction_state_topic));
                             then(std::move(r));
                           });
}

void txn_service_impl::send_markers(size_t shard, int32_t p, uint64_t generation, txn::marker_request m) {
  auto& st = *shards_[shard];
  auto it = st.partitions.find(p);
  if (stopping_ || it == st.partitions.end() || it->second->generation != generation) return;
  const int32_t coordinator_epoch = it->second->coordinator_epoch;
  host_.write_markers(m, coordinator_epoch, [this, shard, p, generation, m](result<txn::partition_set> r) mutable {
    runtime_.post(shard, [this, shard, p, generation, m = std::move(m), r = std::move(r)]() mutable {
      auto& st = *shards_[shard];
      auto it = st.partitions.find(p);
      if (stopping_ || it == st.partitions.end() || it->second->generation != generation) return;
      if (!r.ok() || !r->empty()) {
        // Only the partitions still without their marker are tried again.
        if (r.ok()) m.partitions = std::move(r.value());
        runtime_.post_after(shard, marker_retry_backoff_ms, [this, shard, p, generation, m = std::move(m)]() mutable {
          send_markers(shard, p, generation, std::move(m));
        });
        return;
      }
      complete_markers(shard, p, generation, std::move(m));
    });
  });
}

void txn_service_impl::complete_markers(size_t shard, int32_t p, uint64_t generation, txn::marker_request m) {
  auto& st = *shards_[shard];
  auto it = st.partitions.find(p);
  if (stopping_ || it == st.partitions.end() || it->second->generation != generation) return;
  auto complete = it->second->coordinator.markers_written(m.transactional_id, m.producer_epoch, clock_.now_ms());
  if (!complete.ok()) {
    host_.report_error("transaction coordinator: " + complete.error().message);
    return;
  }
  write(shard, p, *complete, [this, shard, p, generation, m](result<void> w) mutable {
    if (w.ok()) return;
    // A failed write (not replicated in time, a full queue) leaves the id in its Prepare state,
    // answering concurrent_transactions to every call: it is written again, as Kafka's
    // TransactionMarkerChannelManager retries the append (txnLogAppendRetryQueue). Found by
    // tests/sim/cluster_sim --transactions (seed 4).
    host_.report_error("transaction coordinator: completing the " + txn::describe(m) + ": " + w.error().message +
                       " (retried)");
    runtime_.post_after(shard, marker_retry_backoff_ms, [this, shard, p, generation, m = std::move(m)]() mutable {
      complete_markers(shard, p, generation, std::move(m));
    });
  });
}

void txn_service_impl::finish(size_t shard, int32_t p, const txn::outcome& out,
                              std::function<void(result<id_epoch>)> done) {
  const id_epoch answer{out.producer_id, out.producer_epoch};
  if (!out.write) return done(answer);
  const bool retry = out.answer_retry;
  write(shard, p, *out.write, [answer, retry, done = std::move(done)](result<void> r) {
    if (!r.ok()) return done(r.error());
    if (retry) {
      return done(error{errc::concurrent_transactions,
                        "the previous producer's open transaction is being aborted (it is fenced): retry"});
    }
    done(answer);
  });
}

// ---------------------------------------------------------------- the calls

void txn_service_impl::init_on_shard(size_t shard, int32_t p, partition_coordinator& pc, std::string transactional_id,
                                     int32_t timeout_ms, std::optional<id_epoch> expected,
                                     std::optional<model::producer_id> fresh, std::function<void(result<id_epoch>)> done) {
  auto out = pc.coordinator.init_producer_id(transactional_id, timeout_ms, expected, fresh, clock_.now_ms());
  if (out.ok()) return finish(shard, p, *out, std::move(done));
  if (out.error().code != txn::errc::producer_id_needed || fresh) return done(from_txn(out.error()));
  // A new id (or an exhausted epoch) needs a producer id from the controller's blocks.
  const uint64_t generation = pc.generation;
  broker_.init_producer_id([this, shard, p, generation, transactional_id = std::move(transactional_id), timeout_ms,
                            expected, done = std::move(done)](result<producer_identity> id) mutable {
    if (!id.ok()) return done(id.error());
    runtime_.post(shard, [this, shard, p, generation, transactional_id = std::move(transactional_id), timeout_ms,
                          expected, fresh_id = id->producer_id, done = std::move(done)]() mutable {
      auto pc = coordinator_of(shard, p);
      if (!pc.ok()) return done(pc.error());
      if (pc.value()->generation != generation) {
        return done(error{errc::not_coordinator, "the coordinator of the transactional id moved: retry"});
      }
      init_on_shard(shard, p, *pc.value(), std::move(transactional_id), timeout_ms, expected, fresh_id, std::move(done));
    });
  });
}

void txn_service_impl::init_producer_id(std::string transactional_id, int32_t timeout_ms,
                                        std::optional<id_epoch> expected, std::function<void(result<id_epoch>)> done) {
  auto fail = [done](error e) { done(std::move(e)); };
  const std::string id = transactional_id;
  on_coordinator(id, fail,
                 [this, transactional_id = std::move(transactional_id), timeout_ms, expected,
                  done = std::move(done)](size_t shard, int32_t p, partition_coordinator& pc) mutable {
                   init_on_shard(shard, p, pc, std::move(transactional_id), timeout_ms, expected, std::nullopt,
                                 std::move(done));
                 });
}

void txn_service_impl::add_partitions(std::string transactional_id, model::producer_id producer_id,
                                      model::producer_epoch producer_epoch, std::vector<model::topic_partition> partitions,
                                      std::function<void(result<void>)> done) {
  add_partitions_of(std::move(transactional_id), producer_id, producer_epoch, std::move(partitions), false,
                    std::move(done));
}

void txn_service_impl::add_partitions_of(std::string transactional_id, model::producer_id producer_id,
                                         model::producer_epoch producer_epoch,
                                         std::vector<model::topic_partition> partitions, bool internal_allowed,
                                         std::function<void(result<void>)> done) {
  txn::partition_set set;
  for (auto& tp : partitions) {
    // Internal topics (every "__" name: __consumer_offsets, __transaction_state, the delay
    // topics) are written by the broker only: a producer's write to them is refused (Kafka:
    // "Cannot append to internal topic"; ringlog's produce answers topic_authorization_failed,
    // HTTP 403, and so does this). A group's offsets join a transaction through add_offsets.
    if (!internal_allowed && model::is_internal_topic(tp.topic)) {
      return done(error{errc::topic_authorization_failed,
                        "topic '" + tp.topic + "' is internal: producers cannot write to it, so it cannot join a "
                        "transaction (a group's offsets join through the offsets call, AddOffsetsToTxn); no "
                        "partition was added"});
    }
    const int32_t count = host_.partitions_count(tp.topic);
    if (count < 0 || tp.partition.value() < 0 || tp.partition.value() >= count) {
      return done(error{errc::unknown_topic_or_partition,
                        "partition " + std::to_string(tp.partition.value()) + " of topic '" + tp.topic +
                            "' does not exist: no partition was added to the transaction"});
    }
    set.insert(std::move(tp));
  }
  auto fail = [done](error e) { done(std::move(e)); };
  const std::string id = transactional_id;
  on_coordinator(id, fail,
                 [this, transactional_id = std::move(transactional_id), producer_id, producer_epoch,
                  set = std::move(set), done = std::move(done)](size_t shard, int32_t p, partition_coordinator& pc) mutable {
                   auto out = pc.coordinator.add_partitions(transactional_id, producer_id, producer_epoch, set,
                                                            clock_.now_ms());
                   if (!out.ok()) return done(from_txn(out.error()));
                   finish(shard, p, *out, [done = std::move(done)](result<id_epoch> r) {
                     if (!r.ok()) return done(r.error());
                     done(base::ok_v);
                   });
                 });
}

void txn_service_impl::verify_partition(std::string transactional_id, model::producer_id producer_id,
                                        model::producer_epoch producer_epoch, model::topic_partition partition,
                                        std::function<void(result<void>)> done) {
  auto fail = [done](error e) { done(std::move(e)); };
  const std::string id = transactional_id;
  on_coordinator(id, fail,
                 [this, transactional_id = std::move(transactional_id), producer_id, producer_epoch,
                  partition = std::move(partition), done = std::move(done)](size_t, int32_t, partition_coordinator& pc) {
                   auto verified = pc.coordinator.verify_partition(transactional_id, producer_id, producer_epoch, partition);
                   if (!verified.ok()) return done(from_txn(verified.error()));
                   done(base::ok_v);
                 });
}

void txn_service_impl::add_offsets(std::string transactional_id, model::producer_id producer_id,
                                   model::producer_epoch producer_epoch, std::string group_id,
                                   std::function<void(result<void>)> done) {
  const int32_t offsets_partitions = host_.partitions_count(consumer_offsets_topic);
  if (offsets_partitions <= 0) {
    return done(error{errc::coordinator_load_in_progress, std::string(consumer_offsets_topic) + " does not exist yet: retry"});
  }
  if (group_id.empty()) return done(error{errc::invalid_group_id, "group id is empty"});
  const int32_t gp = group::coordinator_partition_for(group_id, offsets_partitions);
  add_partitions_of(std::move(transactional_id), producer_id, producer_epoch,
                    {model::topic_partition{consumer_offsets_topic, model::partition_id{gp}}}, true, std::move(done));
}

void txn_service_impl::end_txn(std::string transactional_id, model::producer_id producer_id,
                               model::producer_epoch producer_epoch, bool committed, bool bump_epoch,
                               std::function<void(result<id_epoch>)> done) {
  auto fail = [done](error e) { done(std::move(e)); };
  const std::string id = transactional_id;
  on_coordinator(id, fail,
                 [this, transactional_id = std::move(transactional_id), producer_id, producer_epoch, committed,
                  bump_epoch, done = std::move(done)](size_t shard, int32_t p, partition_coordinator& pc) mutable {
                   auto out = pc.coordinator.end_txn(transactional_id, producer_id, producer_epoch, committed,
                                                     bump_epoch, std::nullopt, clock_.now_ms());
                   if (!out.ok()) return done(from_txn(out.error()));
                   finish(shard, p, *out, std::move(done));
                 });
}

void txn_service_impl::abort_transaction(std::string transactional_id, std::function<void(result<void>)> done) {
  auto fail = [done](error e) { done(std::move(e)); };
  const std::string id = transactional_id;
  on_coordinator(id, fail,
                 [this, transactional_id = std::move(transactional_id), done = std::move(done)](
                     size_t shard, int32_t p, partition_coordinator& pc) mutable {
                   auto out = pc.coordinator.abort_transaction(transactional_id, clock_.now_ms());
                   if (!out.ok()) return done(from_txn(out.error()));
                   finish(shard, p, *out, [done = std::move(done)](result<id_epoch> r) {
                     if (!r.ok()) return done(r.error());
                     done(base::ok_v);
                   });
                 });
}

void txn_service_impl::describe_transaction(std::string transactional_id,
                                            std::function<void(result<transaction_description>)> done) {
  auto fail = [done](error e) { done(std::move(e)); };
  const std::string id = transactional_id;
  on_coordinator(id, fail,
                 [this, transactional_id = std::move(transactional_id), done = std::move(done)](
                     size_t, int32_t p, partition_coordinator& pc) mutable {
                   const txn::txn_metadata* md = pc.coordinator.find(transactional_id);
                   if (md == nullptr) {
                     return done(error{errc::transactional_id_not_found,
                                       "transactional id '" + transactional_id + "' is not known to its coordinator"});
                   }
                   transaction_description d;
                   d.transactional_id = md->transactional_id;
                   d.state = std::string(txn::kafka_name(md->state));
                   d.timeout_ms = md->timeout_ms;
                   d.txn_start_ms = md->txn_start_ms;
                   d.last_update_ms = md->last_update_ms;
                   d.producer_id = md->producer_id;
                   d.producer_epoch = md->producer_epoch;
                   d.coordinator_id = host_.internal_leader_route(transaction_state_topic, p).node_id;
                   d.partitions.assign(md->partitions.begin(), md->partitions.end());
                   done(std::move(d));
                 });
}

void txn_service_impl::list_transactions(list_transactions_filter filter,
                                         std::function<void(result<std::vector<transaction_listing>>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  std::vector<txn::txn_state> states;
  for (const auto& s : filter.states) {
    if (auto parsed = txn::parse_kafka_name(s)) states.push_back(*parsed);
  }
  if (!filter.states.empty() && states.empty()) return done(std::vector<transaction_listing>{});
  struct gathered {
    std::mutex mutex;
    std::vector<transaction_listing> out;
    std::atomic<size_t> remaining{0};
    std::function<void(result<std::vector<transaction_listing>>)> done;
  };
  auto g = std::make_shared<gathered>();
  g->remaining = shards_.size();
  g->done = std::move(done);
  for (size_t shard = 0; shard < shards_.size(); ++shard) {
    runtime_.post(shard, [this, shard, g, states, filter] {
      std::vector<transaction_listing> local;
      const int64_t now = clock_.now_ms();
      for (const auto& [p, pc] : shards_[shard]->partitions) {
        const int32_t node = host_.internal_leader_route(transaction_state_topic, p).node_id;
        for (const auto& l : pc->coordinator.list(states, filter.producer_ids, filter.duration_ms, now)) {
          local.push_back({l.transactional_id, l.producer_id, std::string(txn::kafka_name(l.state)), l.txn_start_ms, node});
        }
      }
      {
        std::lock_guard lock(g->mutex);
        for (auto& l : local) g->out.push_back(std::move(l));
      }
      if (g->remaining.fetch_sub(1) == 1) {
        std::sort(g->out.begin(), g->out.end(),
                  [](const auto& a, const auto& b) { return a.transactional_id < b.transactional_id; });
        g->done(std::move(g->out));
      }
    });
  }
}

}  // namespace

std::unique_ptr<txn_service> make_txn_service(broker& b, txn_host& host, runtime::shard_runtime& runtime,
                                              const base::clock& clock, txn_service_options options) {
  return std::make_unique<txn_service_impl>(b, host, runtime, clock, options);
}

}  // namespace ringlog::broker
