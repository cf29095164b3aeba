// This broker's lifecycle with the active controller (broker_lifecycle.h): the registration at
// start-up and again whenever the image no longer holds this process's, the heartbeats, the
// leadership lease they renew, and the controlled shutdown.
// Kafka's counterpart: BrokerLifecycleManager.

#include "broker_lifecycle.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "cluster_requests.h"
#include "constants.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/constants.h"

namespace ringlog::broker::detail {

namespace {

/// Start-up (ms): how long a registration refused as a duplicate (another live process holds this
/// node.id) waits before it asks again. The holder goes by a probe or broker.session.timeout.ms
/// (9 s by default), so a second is prompt; the metadata-driven recheck asked ~40 times a second
/// (635 cluster calls in 15 s: session 23).
constexpr int64_t duplicate_registration_retry_ms = 1000;

}  // namespace

broker_lifecycle::broker_lifecycle(std::function<void(std::function<void()> again)> recheck_on_metadata,
                                   broker_log log, const broker_config& config,
                                   const broker_dependencies& deps,
                                   const std::unique_ptr<controller::metadata_quorum>& quorum,
                                   metadata_publisher& publisher, metadata_writer& writer,
                                   active_controller& controller, const std::atomic<bool>& stopping)
    : recheck_on_metadata_(std::move(recheck_on_metadata)),
      log_(std::move(log)),
      config_(config),
      deps_(deps),
      quorum_(quorum),
      publisher_(publisher),
      writer_(writer),
      controller_(controller),
      stopping_(stopping) {}

void broker_lifecycle::new_incarnation() {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  leadership_lease_ = replication::leadership_lease(config_.broker_session_timeout_ms);
  incarnation_id_ = new_topic_id(deps_.random);
}

const controller::broker_registration* broker_lifecycle::own_registration() const {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  const auto* b = controller_image().find_broker(config_.node_id);
  return b != nullptr && b->incarnation_id == incarnation_id_ ? b : nullptr;
}

// Declared (with what it returns) in metadata.h.
std::vector<protocol::metadata_record> registration_records(const controller::metadata_image& image, int32_t node_id,
                                                            const controller::uuid& incarnation,
                                                            const broker_dependencies& deps, const std::string& rack) {
  protocol::register_broker_record r;
  r.broker_id = node_id;
  r.incarnation_id = incarnation;
  r.broker_epoch = -1;   // the registration's offset (metadata_image.cc)
  if (deps.advertised_port >= 0) {   // none on a node without an HTTP listener (a Kafka-only broker)
    protocol::register_broker_record::broker_endpoint http;
    // Named by its scheme: a peer reaches an https-only node over TLS (http_endpoint).
    http.name = deps.advertised_http_tls ? "https" : "http";
    http.security_protocol = deps.advertised_http_tls ? 1 : 0;   // Kafka's SecurityProtocol ids: SSL, PLAINTEXT
    http.host = deps.advertised_host;
    http.port = static_cast<uint16_t>(deps.advertised_port);
    r.end_points.push_back(http);
  }
  for (const auto& listener : deps.advertised_kafka_listeners) {   // Kafka listeners by name (issue 29)
    r.end_points.emplace_back().name = listener.listener_name;
    r.end_points.back().host = listener.host;
    r.end_points.back().port = static_cast<uint16_t>(listener.port);
  }
  if (!deps.advertised_cluster_host.empty() && deps.advertised_cluster_port >= 0) {
    protocol::register_broker_record::broker_endpoint cluster;
    cluster.name = "cluster";
    cluster.host = deps.advertised_cluster_host;
    cluster.port = static_cast<uint16_t>(deps.advertised_cluster_port);
    r.end_points.push_back(cluster);
  }
  r.rack = rack;
  // Registered after it caught up with the metadata log, so it may serve at once (Kafka registers
  // fenced and unfences on the first caught-up heartbeat: the same state, one step shorter).
  r.fenced = false;
  std::vector<protocol::metadata_record> out{r};
  for (auto& change : rejoin_partitions(image, node_id)) out.push_back(std::move(change));
  return out;
}

void broker_lifecycle::register_broker(int64_t deadline_ms, std::function<void(result<void>)> done) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  writer_.commit_records(registration_records(controller_image(), config_.node_id, incarnation_id_, deps_,
                                              config_.broker_rack),
                         [this, deadline_ms, done = std::move(done)](result<void> r) mutable {
    // invalid_request: the entry was refused where it was applied - a PartitionChangeRecord in it
    // was worked out from an image that a newer change overtook (its partition epoch moved); the
    // next attempt works it out again from the newer image.
    // duplicate_broker_registration: another process's session holds this node.id - a twin, or
    // this node's previous process until the controller fences it (probe or session timeout).
    const bool duplicate = !r.ok() && r.error().code == errc::duplicate_broker_registration;
    if (duplicate) log_registration_refused(r.error());
    if (duplicate && deps_.clock.monotonic_ms() >= deadline_ms) {
      return done(error{errc::duplicate_broker_registration,
                        "not registered within " + std::to_string(config_.metadata_catch_up_timeout_ms) +
                            " ms (initial.broker.registration.timeout.ms): " + r.error().message});
    }
    if (r.ok() ||
        (r.error().code != errc::not_controller && r.error().code != errc::request_timed_out &&
         r.error().code != errc::invalid_request && !duplicate) ||
        deps_.clock.monotonic_ms() >= deadline_ms) {
      return done(std::move(r));
    }
    auto again = [this, deadline_ms, done = std::move(done)]() mutable { register_broker(deadline_ms, std::move(done)); };
    if (!duplicate) return recheck_on_metadata_(std::move(again));
    deps_.runtime.post_after(controller_shard, duplicate_registration_retry_ms,
                             [again = std::make_shared<std::function<void()>>(std::move(again)),
                              alive = std::weak_ptr<int>(lifetime_)] {
                               if (alive.lock()) (*again)();
                             });
  });
}

void broker_lifecycle::schedule_heartbeat() {
  deps_.runtime.post_after(controller_shard, config_.broker_heartbeat_interval_ms,
                           [this, alive = std::weak_ptr<int>(lifetime_)] {
    if (!alive.lock() || stopping_) return;
    heartbeat_tick();
    schedule_heartbeat();
  });
}

void broker_lifecycle::heartbeat_tick() {
  controller_.heartbeat_tick();   // every node: the autobalancer; the active controller: fencing, ticks
  if (!config_.process_role_broker) return;   // a dedicated controller never registers or heartbeats
  if (own_registration() == nullptr) {
    // Not registered in this incarnation (or the registration was replaced): register again.
    if (registering_ || decommissioned_refusal()) return;   // decommissioned: never again (issue 33)
    registering_ = true;
    writer_.commit_records(registration_records(controller_image(), config_.node_id, incarnation_id_, deps_,
                                                config_.broker_rack),
                           [this, sent_ms = deps_.clock.monotonic_ms()](result<void> r) {
                             registering_ = false;
                             if (r.ok()) renew_leadership_lease(sent_ms);   // a new registration starts its session
                             // Another live process holds this node.id: refused again each tick,
                             // never over its session (the controller's check), and unregistered
                             // this process leads nothing (apply_partition_state).
                             if (!r.ok() && r.error().code == errc::duplicate_broker_registration) {
                               log_registration_refused(r.error());
                             }
                           });
    return;
  }
  controller_.renew_stale_leaderships();
  if (heartbeat_in_flight_) return;
  heartbeat_in_flight_ = true;
  send_heartbeat(false, [this, sent_ms = deps_.clock.monotonic_ms()](result<protocol::broker_heartbeat_response_data> r) {
    heartbeat_in_flight_ = false;
    // Caught up: this broker had applied any fence of it and the leadership moves with it when it
    // sent the heartbeat (controller::broker_heartbeats::answer), so what it leads is current.
    if (r.ok() && r->error_code == 0 && !r->is_fenced && r->is_caught_up) renew_leadership_lease(sent_ms);
  });
}

void broker_lifecycle::renew_leadership_lease(int64_t sent_ms) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  if (quorum_->leader_id() == config_.node_id) {
    // Answered by the controller in this process: it counts only as of the last time a majority
    // of the voters fetched from it (a controller cut off from them may have been replaced).
    std::vector<int64_t> others;
    for (const auto& v : quorum_->describe().voters) {
      if (v.replica_id != config_.node_id) others.push_back(v.last_fetch_monotonic_ms);
    }
    sent_ms = std::min(sent_ms, replication::quorum_contact_ms(others, deps_.clock.monotonic_ms()));
  }
  leadership_lease_.acknowledged(sent_ms);
  leadership_lease_until_ms_.store(leadership_lease_.valid_until_ms(), std::memory_order_relaxed);
}

void broker_lifecycle::send_heartbeat(bool want_shut_down,
                                      std::function<void(result<protocol::broker_heartbeat_response_data>)> done) {
  const auto* own = own_registration();
  if (own == nullptr) return done(error{errc::stale_broker_epoch, "this broker is not registered"});
  protocol::broker_heartbeat_request_data request;
  request.broker_id = config_.node_id;
  request.broker_epoch = own->broker_epoch;
  // Applied, published to every shard and reconciled (a reassignment's completion waits for it).
  request.current_metadata_offset = publisher_.apply_queue().applied_end() - 1;
  request.want_shut_down = want_shut_down;
  const int32_t leader = quorum_->leader_id();
  if (leader == config_.node_id) return done(controller_.controller_heartbeat(request));
  if (leader < 0 || deps_.cluster_transport == nullptr) {
    return done(error{errc::not_controller, "no active controller to send the heartbeat to"});
  }
  protocol::writer w;
  if (auto encoded = request.encode(w, 0); !encoded.ok()) return done(error{errc::unknown_server_error, encoded.error().message});
  deps_.cluster_transport->send(
      leader, broker_heartbeat_api_key, 0, std::move(w).take(), config_.broker_heartbeat_interval_ms * 2,
      [&runtime = deps_.runtime, done = std::move(done)](rpc::result<rpc::bytes> r) mutable {
        runtime.post(controller_shard, [r = std::move(r), done = std::move(done)]() mutable {
          if (!r.ok()) return done(error{errc::not_controller, r.error().message});
          protocol::reader rd(*r);
          auto response = protocol::broker_heartbeat_response_data::decode(rd, 0);
          if (!response.ok()) return done(error{errc::unknown_server_error, response.error().message});
          done(std::move(response).value());
        });
      });
}

std::optional<error> broker_lifecycle::decommissioned_refusal() const {
  if (publisher_.view()->image->decommission_state(config_.node_id) !=
      controller::broker_decommission_state::decommissioned) {
    return std::nullopt;
  }
  std::string why = "node " + std::to_string(config_.node_id) + " was decommissioned from cluster " + config_.cluster_id +
                    ": it may not register again; start a new broker with another node.id and an empty log.dirs";
  if (!decommissioned_logged_.exchange(true)) log_.error(why);
  return error{errc::resource_not_found, std::move(why)};
}

void broker_lifecycle::log_registration_refused(const error& e) {
  const int64_t now_ms = deps_.clock.monotonic_ms();
  if (registration_refusal_logged_ms_ >= 0 &&
      now_ms - registration_refusal_logged_ms_ < duplicate_registration_log_interval_ms) {
    return;
  }
  registration_refusal_logged_ms_ = now_ms;
  log_.error("node " + std::to_string(config_.node_id) + " (incarnation " +
             controller::uuid_to_string(incarnation_id_) + ") may not register: " + e.message +
             " (retrying; logged at most every " + std::to_string(duplicate_registration_log_interval_ms) + " ms)");
}

void broker_lifecycle::controlled_shutdown(std::function<void()> then) {
  if (!config_.process_role_broker) {
    // A dedicated controller has no leaderships to move: as the active controller it hands the
    // quorum over at once (no election timeout for the brokers to wait out), then stops.
    deps_.runtime.post(controller_shard, [this, then = std::move(then)] {
      if (quorum_->leader_id() == config_.node_id) quorum_->resign();
      then();
    });
    return;
  }
  const auto deadline = deps_.clock.now_ms() + config_.broker_session_timeout_ms;
  auto attempt = std::make_shared<std::function<void()>>();
  std::weak_ptr<std::function<void()>> weak = attempt;
  *attempt = [this, weak, deadline, then]() mutable {
    auto self = weak.lock();
    if (quorum_->leader_id() == config_.node_id) {
      // The active controller itself: commit the change here, then hand the quorum over.
      const auto* own = own_registration();
      if (own == nullptr) return then();
      return writer_.commit_records(controlled_shutdown_records(controller_image(), *own),
                                    [this, then](result<void>) mutable {
                                      quorum_->resign();
                                      then();
                                    });
    }
    send_heartbeat(true, [this, self, deadline, then](result<protocol::broker_heartbeat_response_data> r) mutable {
      const bool acknowledged = r.ok() && r->error_code == 0 && r->should_shut_down;
      if (acknowledged || deps_.clock.now_ms() >= deadline) {
        // A leader of the quorum hands it over at once instead of after an election timeout.
        if (quorum_->leader_id() == config_.node_id) quorum_->resign();
        return then();
      }
      deps_.runtime.post_after(controller_shard, 50, [self, alive = std::weak_ptr<int>(lifetime_)] {
        if (alive.lock()) (*self)();
      });
    });
  };
  deps_.runtime.post(controller_shard, [attempt] { (*attempt)(); });
}

}  // namespace ringlog::broker::detail
