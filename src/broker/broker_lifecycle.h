#pragma once
// This broker's lifecycle with the active controller (Kafka's BrokerLifecycleManager; a class of
// its own since issue 28): its registration (a RegisterBrokerRecord of a new incarnation on every
// process start, and again when the image no longer holds this process's), the heartbeats every
// broker.heartbeat.interval.ms, the leadership lease the controller's acknowledgements renew, and
// the controlled shutdown (KIP-631). broker_lifecycle.cc has the rules. It reaches the broker only
// through the parts it drives (the metadata writer, the active controller, the publisher, the
// quorum) and start-up's recheck (a callback), never through the composition. Everything here runs on the
// controller shard unless a function says otherwise. Private to the broker module.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "active_controller.h"
#include "metadata.h"
#include "metadata_publisher.h"
#include "ringlog/broker/broker.h"
#include "ringlog/controller/metadata_quorum.h"
#include "ringlog/protocol/messages.h"
#include "ringlog/replication/offsets_gate.h"

namespace ringlog::broker::detail {

class metadata_writer;   // cluster_requests.h

class broker_lifecycle {
 public:
  /// `recheck_on_metadata`: start-up's wait (start_up.cc): runs `again` once, on the next applied
  /// entry or leader change, or after start-up's poll interval, whichever is first; `config`: the
  /// static broker config; `deps`: the clock, runtime, cluster transport (null: a
  /// single node), random source and advertised listeners; `quorum`: the broker's metadata quorum,
  /// null until start_quorum made it; `stopping`: the broker's stop flag (a set flag ends the
  /// heartbeats). Every reference outlives this object.
  broker_lifecycle(std::function<void(std::function<void()> again)> recheck_on_metadata, broker_log log, const broker_config& config,
                   const broker_dependencies& deps, const std::unique_ptr<controller::metadata_quorum>& quorum,
                   metadata_publisher& publisher, metadata_writer& writer, active_controller& controller,
                   const std::atomic<bool>& stopping);

  /// Start-up (start_quorum), once the log directory is this node's: a new incarnation id (from
  /// deps.random; a restart is a new registration with a new broker epoch) and a lease of
  /// broker.session.timeout.ms.
  void new_incarnation();
  /// Start-up step: this broker registered (RegisterBrokerRecord, new incarnation) and the record
  /// applied here; retried until `deadline_ms` (clock ms). Errors: not_controller (timed out),
  /// duplicate_broker_registration (another live process holds this node.id), a refusal's error.
  void register_broker(int64_t deadline_ms, std::function<void(result<void>)> done);
  /// Every broker.heartbeat.interval.ms on the controller shard: the controller's tick
  /// (active_controller::heartbeat_tick), then this broker's heartbeat (or its registration).
  void schedule_heartbeat();
  /// Any thread: this node was decommissioned (issue 33): why it may not register, logged once.
  [[nodiscard]] std::optional<error> decommissioned_refusal() const;
  /// Controller shard: this broker's registration in the image, if it is the one of this process.
  [[nodiscard]] const controller::broker_registration* own_registration() const;
  /// This process's incarnation (new on every start; set once the start began).
  [[nodiscard]] controller::uuid incarnation_id() const { return incarnation_id_; }
  /// Any thread: the end of the leadership lease (monotonic ms, -1: none yet), mirrored for the
  /// partition shards, which check it before answering a partition's end (check_serving).
  [[nodiscard]] const std::atomic<int64_t>& leadership_lease_end() const { return leadership_lease_until_ms_; }
  [[nodiscard]] int64_t leadership_lease_until_ms() const {
    return leadership_lease_until_ms_.load(std::memory_order_relaxed);
  }

  /// Any thread: true once, for the first caller; the controlled shutdown is then under way
  /// (controlled_shutdown) or skipped.
  bool claim_controlled_shutdown() { return !controlled_shutdown_done_.exchange(true); }
  /// Any thread: claim_controlled_shutdown was called (the broker stops leading partitions).
  [[nodiscard]] bool controlled_shutdown_done() const { return controlled_shutdown_done_.load(std::memory_order_relaxed); }
  /// Once the quorum started, after claim_controlled_shutdown: on the controller shard, the active
  /// controller marks this broker and moves its leaderships away (a heartbeat with
  /// want_shut_down, every 50 ms until acknowledged or broker.session.timeout.ms passed; the
  /// active controller itself commits the change); a leader of the quorum then hands it over.
  /// A dedicated controller only hands the quorum over. `then` once, on the controller shard.
  void controlled_shutdown(std::function<void()> then);

 private:
  void heartbeat_tick();
  void send_heartbeat(bool want_shut_down, std::function<void(result<protocol::broker_heartbeat_response_data>)> done);
  /// Renews the lease with a request sent at `sent_ms` (monotonic ms) that the controller acknowledged.
  void renew_leadership_lease(int64_t sent_ms);
  /// Logs a refusal of this node's registration `e` (start-up's register_broker or a running
  /// broker's re-registration), at most once per constants::duplicate_registration_log_interval_ms.
  void log_registration_refused(const error& e);
  [[nodiscard]] const controller::metadata_image& controller_image() const { return *publisher_.controller_view()->image; }

  const std::function<void(std::function<void()> again)> recheck_on_metadata_;
  const broker_log log_;
  const broker_config& config_;
  const broker_dependencies& deps_;
  const std::unique_ptr<controller::metadata_quorum>& quorum_;
  metadata_publisher& publisher_;
  metadata_writer& writer_;
  active_controller& controller_;
  const std::atomic<bool>& stopping_;

  /// New on every process start: a restart is a new registration with a new broker epoch.
  controller::uuid incarnation_id_;
  // ---- controller shard only
  bool registering_ = false;
  int64_t registration_refusal_logged_ms_ = -1;   // log_registration_refused: the last line, monotonic ms (-1: none)
  bool heartbeat_in_flight_ = false;
  /// The leadership lease (replication/offsets_gate.h, controller shard): renewed by every
  /// registration and unfenced heartbeat the active controller acknowledged. Its end is mirrored
  /// for the partition shards, which check it before answering a partition's end (check_serving).
  replication::leadership_lease leadership_lease_{3000};
  std::atomic<int64_t> leadership_lease_until_ms_{-1};
  mutable std::atomic<bool> decommissioned_logged_{false};   // decommissioned_refusal said it once
  std::atomic<bool> controlled_shutdown_done_{false};
  /// Timers hold a weak reference: one that fires after this object is gone does nothing.
  std::shared_ptr<int> lifetime_ = std::make_shared<int>(0);
};

}  // namespace ringlog::broker::detail
