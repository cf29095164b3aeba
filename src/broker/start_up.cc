// A broker's start (Kafka's BrokerServer.startup and BrokerLifecycleManager's first steps): the
// metadata quorum started, caught up with, the partitions this node holds opened, the broker
// registered, the internal topics awaited, the coordinators and schedulers started. The waits are
// continuations on the controller shard (runtime timers, the clock interface), and so is the start
// itself (start_async: each step's completion posts the next), so one thread may run every shard
// (tests/sim/cluster_sim); only open_broker, the blocking wrapper, waits for the end.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "broker_parts.h"
#include "group_service.h"
#include "metadata.h"
#include "ringlog/base/assert.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/storage/meta_properties.h"

namespace ringlog::broker::detail {

namespace {

/// Start-up (ms): how long a step waiting on the metadata (to catch up, for a controller to take
/// a registration, for the internal topics) waits at most before it looks again when no entry is
/// applied and no leader changes meanwhile: short, a node's start waits on it; one look is one
/// describe or image lookup on the controller shard.
constexpr int64_t start_up_poll_ms = 20;
/// A waiting step's recheck, run at most once (its timer and a metadata change may both fire it)
/// and not at all once the broker is gone.
std::function<void()> run_once(std::shared_ptr<std::function<void()>> waiting, std::weak_ptr<int> alive) {
  return [waiting = std::move(waiting), alive = std::move(alive)] {
    if (!alive.lock() || !*waiting) return;
    auto run = std::move(*waiting);
    *waiting = nullptr;
    run();
  };
}

}  // namespace

void broker_parts::start_async(std::function<void(result<void>)> done) {
  deps_.runtime.post(controller_shard, [this, done = std::move(done)]() mutable {
    if (auto started = start_quorum(); !started.ok()) return done(started.error());
    // A task of its own, behind what the quorum's start queued (a single voter's election and
    // first commit), as when start() ran outside the shards: a test runtime whose clock stands
    // still then finds the quorum caught up without waiting for a recheck timer.
    deps_.runtime.post(controller_shard, [this, done = std::move(done)]() mutable {
      run_start_step(std::bind_front(&broker_parts::catch_up_with_metadata, this),
                     [this, done = std::move(done)](result<void> r) mutable {
                       if (!r.ok()) return done(std::move(r));
                       // Before any partition opens (issue 33).
                       if (auto refused = lifecycle_.decommissioned_refusal()) return done(*refused);
                       start_opening_partitions(std::move(done));
                     });
    });
  });
}

result<void> broker_parts::start_quorum() {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  auto made = deps_.fs.make_directories(config_.log_dir);
  if (!made.ok()) return error{errc::kafka_storage_error, made.error().message};
  auto pending_meta = check_data_directory();
  if (!pending_meta.ok()) return pending_meta.error();
  lifecycle_.new_incarnation();
  // The metadata quorum: one voter (this node) unless controller.quorum.voters names more. Its
  // start loads the snapshot and, for a directory of the single-node ringlog, the old history
  // (here, on the controller shard: metadata_quorum::start runs inline on its own shard).
  controller::metadata_quorum_config qc;
  qc.node_id = config_.node_id;
  qc.voters = deps_.controller_quorum_voters;
  if (qc.voters.empty()) qc.voters[config_.node_id] = rpc::peer_address{};
  qc.cluster_id = config_.cluster_id;
  qc.election_timeout_ms = config_.controller_quorum_election_timeout_ms;
  qc.fetch_timeout_ms = config_.controller_quorum_fetch_timeout_ms;
  qc.election_backoff_max_ms = config_.controller_quorum_election_backoff_max_ms;
  qc.log_dir = config_.log_dir;
  qc.log_dir_failures = deps_.log_dir_failures;
  qc.meta_properties_once_caught_up = *pending_meta;
  quorum_ = std::make_unique<controller::metadata_quorum>(qc, deps_.fs, deps_.runtime, controller_shard, deps_.clock,
                                                          deps_.cluster_transport, publisher_);
  if (deps_.cluster_transport != nullptr) register_cluster_handlers();
  if (auto started = quorum_->start(); !started.ok()) {
    return error{started.error().code == controller::errc::kafka_storage_error ? errc::kafka_storage_error
                                                                               : errc::invalid_config,
                 "metadata quorum: " + started.error().message};
  }
  if (deps_.cluster_transport != nullptr) fetch_router_.share_fetch_handler();
  if (deps_.start_cluster_transport) deps_.start_cluster_transport();
  return base::ok_v;
}

result<std::optional<storage::meta_properties>> broker_parts::check_data_directory() {
  // The directory must be this cluster's and this node's (KIP-631 meta.properties).
  const auto& voters = deps_.controller_quorum_voters;
  const bool lone_voter = voters.empty() || (voters.size() == 1 && voters.contains(config_.node_id));
  auto existing = storage::read_meta_properties(deps_.fs, config_.log_dir);
  if (!existing.ok()) return from_storage(existing.error());
  if (lone_voter || existing->has_value()) {
    // A lone voter formats its directory at once (the one-command start): it needs nobody's vote.
    auto meta = storage::check_meta_properties(deps_.fs, config_.log_dir, config_.cluster_id, config_.node_id);
    if (!meta.ok()) return from_storage(meta.error());
    return std::optional<storage::meta_properties>{};
  }
  // No meta.properties and other voters: a new node, or one whose disk was lost. It is written once
  // this node caught up with a leader (which also confirms cluster.id: a leader of another cluster
  // refuses the fetches); until then the node's vote is restricted (raft/node.h).
  meta_properties_pending_ = true;
  const bool voter = voters.contains(config_.node_id);
  broker_log(deps_.log).info(
      "node " + std::to_string(config_.node_id) + ": the data directory " + config_.log_dir +
      " has no meta.properties (a new node, or one whose disk was lost): it is written once this node has "
      "caught up with the metadata quorum's leader, confirming cluster.id=" + config_.cluster_id +
      (voter ? "; until then this voter grants votes only to candidates that have not caught up either, and "
               "voters that have grant it none (a voter that lost its log must not help a stale voter win and "
               "drop committed metadata, nor win with a partial copy of it, Raft section 5.4, KIP-853)"
             : ""));
  return std::optional<storage::meta_properties>{storage::meta_properties{1, config_.cluster_id, config_.node_id}};
}

void broker_parts::register_cluster_handlers() {
  // Envelope: metadata writes forwarded to the active controller (cluster_requests.h).
  writer_.register_cluster_handlers();
  // BrokerHeartbeat, AlterPartition, AllocateProducerIds; a connection from a broker closed.
  controller_.register_cluster_handlers();
  // DescribeQuorum, the metadata barrier's question to the active controller (metadata_barrier.h).
  barrier_.register_cluster_handlers();
  // Produce and ListOffsets forwarded by brokers that do not lead the partition (leader_forwarder.h).
  forwarder_.register_cluster_handlers();
  // WriteTxnMarkers for partitions led here, AddPartitionsToTxn v4 (KIP-890 verification) for
  // the transactional ids coordinated here (partition_transactions.h).
  partition_txns_.register_cluster_handlers();
}

void broker_parts::run_start_step(waiting_step step, std::function<void(result<void>)> done) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  const int64_t deadline_ms = deps_.clock.monotonic_ms() + config_.metadata_catch_up_timeout_ms;
  // The step may end on another shard (a commit's or a publication's completion): the next one
  // starts on the controller shard.
  step(deadline_ms, [this, done = std::move(done)](result<void> r) mutable {
    deps_.runtime.post(controller_shard, [r = std::move(r), done = std::move(done)]() mutable { done(std::move(r)); });
  });
}

void broker_parts::start_opening_partitions(std::function<void(result<void>)> done) {
  // Open every partition this node holds as of the image it caught up to; entries applied from
  // now on open, remove and reconfigure partitions as they come.
  publisher_.open_all_partitions([this, done = std::move(done)](result<void> r) mutable {
    // await_applied may answer on another shard: every later step runs on the controller shard.
    deps_.runtime.post(controller_shard, [this, r = std::move(r), done = std::move(done)]() mutable {
      if (!r.ok()) return done(std::move(r));
      if (!config_.process_role_broker) {
        // A dedicated controller (process.roles=controller): no registration, no heartbeats, no
        // partitions, no coordinators. Its tick runs only the active controller's duties
        // (fencing, leader rebalance, the internal topics), which the brokers that register
        // later need.
        lifecycle_.schedule_heartbeat();
        for (size_t s = 0; s < partition_managers_.size(); ++s) partition_managers_[s]->schedule_maintenance();
        return done(base::ok_v);
      }
      start_registering(std::move(done));
    });
  });
}

void broker_parts::start_registering(std::function<void(result<void>)> done) {
  auto registered = [this, done = std::move(done)](result<void> r) mutable {
    if (!r.ok()) return done(std::move(r));
    // Heartbeats (and, on the active controller, fencing and the creation of __consumer_offsets)
    // run from here on; the groups need __consumer_offsets to exist.
    deps_.runtime.post(controller_shard, [this] { lifecycle_.schedule_heartbeat(); });
    run_start_step(std::bind_front(&broker_parts::await_internal_topics, this),
                   [this, done = std::move(done)](result<void> r) mutable {
                     if (!r.ok()) return done(std::move(r));
                     start_coordinators(std::move(done));
                   });
  };
  run_start_step(std::bind_front(&broker_lifecycle::register_broker, &lifecycle_), std::move(registered));
}

void broker_parts::start_coordinators(std::function<void(result<void>)> done) {
  const auto offsets_topic = publisher_.find_topic(consumer_offsets_topic);
  const auto txn_state_topic = publisher_.find_topic(transaction_state_topic);
  RINGLOG_ASSERT(offsets_topic && txn_state_topic, "await_internal_topics ends once both are published");
  group_service_options group_options;
  group_options.offsets_partitions = offsets_topic->partitions_count();
  group_options.expiry_interval_ms = config_.group_expiry_interval_ms;
  group_options.initial_rebalance_delay_ms = config_.group_initial_rebalance_delay_ms;
  group_options.offsets_retention_ms = int64_t{config_.offsets_retention_minutes} * 60'000;
  group_options.offsets_retention_check_interval_ms = config_.offsets_retention_check_interval_ms;
  groups_ = make_group_service(api_, coordinator_partitions_, deps_.runtime, deps_.clock, group_options);
  txn_service_options txn_options;
  txn_options.state_partitions = txn_state_topic->partitions_count();
  txn_options.transaction_max_timeout_ms = config_.transaction_max_timeout_ms;
  txn_options.transactional_id_expiration_ms = config_.transactional_id_expiration_ms;
  txn_options.abort_timed_out_check_interval_ms = config_.transaction_abort_timed_out_transaction_cleanup_interval_ms;
  groups_->start([this, txn_options, done = std::move(done)](result<void> r) mutable {
    deps_.runtime.post(controller_shard, [this, r = std::move(r), txn_options, done = std::move(done)]() mutable {
      if (!r.ok()) return done(std::move(r));
      groups_started_.store(groups_.get(), std::memory_order_release);
      txns_ = make_txn_service(api_, coordinator_partitions_, deps_.runtime, deps_.clock, txn_options);
      txns_->start([this, done = std::move(done)]() mutable {
        deps_.runtime.post(controller_shard, [this, done = std::move(done)] {
          txns_started_.store(txns_.get(), std::memory_order_release);
          delay_host_.start();
          for (size_t s = 0; s < partition_managers_.size(); ++s) {
            partition_managers_[s]->schedule_maintenance();
            replica_fetcher_.schedule_replication_tick(s);
          }
          done(base::ok_v);
        });
      });
    });
  });
}

void broker_parts::catch_up_with_metadata(int64_t deadline_ms, std::function<void(result<void>)> done) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  const controller::quorum_description d = quorum_->describe();
  if (d.leader_id >= 0 && d.high_watermark > 0 && d.applied_end_offset >= d.high_watermark &&
      !d.awaiting_first_catch_up) {
    if (std::exchange(meta_properties_pending_, false)) {
      broker_log(deps_.log).info("node " + std::to_string(config_.node_id) +
                                 " caught up with the metadata quorum's leader " + std::to_string(d.leader_id) +
                                 " (high watermark " + std::to_string(d.high_watermark) + "): meta.properties written (cluster.id=" +
                                 config_.cluster_id + ", node.id=" + std::to_string(config_.node_id) +
                                 (d.observer ? "); it follows the metadata log as an observer (process.roles=broker: "
                                               "it never votes or stands for election)"
                                             : "); it votes and stands for election like any voter from now on"));
    }
    // Entries applied so far are queued for publication: done once they are published.
    const int64_t offset = publisher_.controller_view()->image->offset();
    if (offset < 0 || offset < publisher_.apply_queue().applied_end()) return done(base::ok_v);
    return publisher_.apply_queue().await_applied(offset, std::move(done));
  }
  if (d.cluster_id_refused_by >= 0) {
    // Another cluster.id is not a condition that passes: say so now instead of at the deadline.
    return done(error{errc::invalid_config,
                      "node " + std::to_string(d.cluster_id_refused_by) +
                          " refused this node's requests with INCONSISTENT_CLUSTER_ID: its cluster.id is not this "
                          "node's '" + config_.cluster_id +
                          "'; give every node of the cluster the same cluster.id (a running node shows it: GET /v3/clusters, "
                          "or the cluster.id line of its meta.properties)" +
                          (meta_properties_pending_ ? std::string("; nothing was pinned in ") + config_.log_dir +
                                                          " (meta.properties is written once a leader answers), so a "
                                                          "restart with the right cluster.id works"
                                                    : std::string(" (meta.properties in log.dirs pins it)"))});
  }
  if (deps_.clock.monotonic_ms() >= deadline_ms) {
    return done(error{errc::not_controller,
                      "the metadata quorum has no leader this node could catch up with after " +
                          std::to_string(config_.metadata_catch_up_timeout_ms) +
                          " ms (initial.broker.registration.timeout.ms; leader " +
                          std::to_string(d.leader_id) + ", high watermark " + std::to_string(d.high_watermark) +
                          ", applied " + std::to_string(d.applied_end_offset) +
                          "): are a majority of controller.quorum.voters running and reachable?"});
  }
  recheck_on_metadata([this, deadline_ms, done = std::move(done)]() mutable {
    catch_up_with_metadata(deadline_ms, std::move(done));
  });
}

void broker_parts::await_internal_topics(int64_t deadline_ms, std::function<void(result<void>)> done) {
  // The active controller creates them (ensure_offsets_topic_async, also on every heartbeat tick);
  // other nodes wait until they are in their image.
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  controller_.ensure_offsets_topic_async([this, deadline_ms, done = std::move(done)](result<bool> r) mutable {
    // In the controller shard's image now; done once that image is published to every shard, so
    // start()'s find_topic sees both (a breaker's segfault when it read the view before that).
    // The cluster's forwarding secret too (the active controller commits it on its heartbeat
    // tick): a broker that served before it could not prove the HTTP calls it passes on to its
    // peers, which would then serve them as a client's own (issue of session 25).
    if (r.ok() && r.value()) controller_.ensure_forwarding_secret();   // on the active controller, else a no-op
    if (r.ok() && r.value() && !forwarding_secret_in(*publisher_.controller_view()->image).empty()) {
      return publisher_.apply_queue().await_applied(publisher_.controller_view()->image->offset(), std::move(done));
    }
    if (!r.ok() && r.error().code != errc::not_controller && r.error().code != errc::request_timed_out) {
      return done(r.error());
    }
    if (deps_.clock.monotonic_ms() >= deadline_ms) {
      return done(error{errc::not_controller, "topics " + std::string(consumer_offsets_topic) + " and " +
                                                  transaction_state_topic + " and the cluster's forwarding secret" +
                                                  " were not created by the active controller within " +
                                                  std::to_string(config_.metadata_catch_up_timeout_ms) +
                                                  " ms (initial.broker.registration.timeout.ms)"});
    }
    recheck_on_metadata([this, deadline_ms, done = std::move(done)]() mutable {
      await_internal_topics(deadline_ms, std::move(done));
    });
  });
}

void broker_parts::recheck_on_metadata(std::function<void()> again) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  std::erase_if(metadata_rechecks_, [](const auto& waiting) { return !*waiting; });
  auto waiting = std::make_shared<std::function<void()>>(std::move(again));
  metadata_rechecks_.push_back(waiting);
  deps_.runtime.post_after(controller_shard, start_up_poll_ms, run_once(waiting, lifetime_));
}

void broker_parts::run_metadata_rechecks() {
  // Posted, not run here: the quorum is inside its apply or leader-change callback.
  for (auto& waiting : std::exchange(metadata_rechecks_, {})) {
    deps_.runtime.post(controller_shard, run_once(std::move(waiting), lifetime_));
  }
}

}  // namespace ringlog::broker::detail
