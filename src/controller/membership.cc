#include "ringlog/controller/membership.h"

#include <algorithm>
#include <string>

#include "ringlog/controller/constants.h"
#include "ringlog/controller/placement.h"

namespace ringlog::controller {

void broker_heartbeats::activate(const controller::metadata_image& image, int64_t now_ms, int64_t epoch_start_offset) {
  last_heartbeat_ms_.clear();
  refused_at_ms_.clear();
  fenced_answer_offset_.clear();
  fences_in_flight_.clear();   // a previous term's proposals lie below epoch_start_offset
  epoch_start_offset_ = epoch_start_offset;
  for (const auto& [id, b] : image.brokers()) {
    last_heartbeat_ms_[id] = now_ms;
    heartbeat_epoch_[id] = b.broker_epoch;
  }
}

void broker_heartbeats::fence_proposed(int32_t broker_id) { fences_in_flight_.insert(broker_id); }

void broker_heartbeats::fence_settled(int32_t broker_id) { fences_in_flight_.erase(broker_id); }

void broker_heartbeats::heard(int32_t broker_id, int64_t now_ms) { last_heartbeat_ms_[broker_id] = now_ms; }

result<heartbeat_answer> broker_heartbeats::answer(const controller::metadata_image& image,
                                                   const protocol::broker_heartbeat_request_data& request,
                                                   int64_t now_ms) {
  const auto* b = image.find_broker(request.broker_id);
  if (b == nullptr || b->broker_epoch != request.broker_epoch) {
    return error{errc::stale_broker_epoch, "broker " + std::to_string(request.broker_id) + " is not registered in epoch " +
                                               std::to_string(request.broker_epoch)};
  }
  heard(request.broker_id, now_ms);
  heartbeat_answer out;
  if (fences_in_flight_.contains(request.broker_id)) return out;   // fenced, not caught up (the doc)
  out.is_fenced = b->fenced;
  // A fence this controller answered lies at or below the image of that answer; one a previous
  // controller committed, below this controller's epoch start.
  if (b->fenced) fenced_answer_offset_[request.broker_id] = image.offset();
  const auto fenced_at = fenced_answer_offset_.find(request.broker_id);
  const int64_t required =
      std::max(epoch_start_offset_, fenced_at == fenced_answer_offset_.end() ? int64_t{-1} : fenced_at->second);
  out.is_caught_up = request.current_metadata_offset >= required;
#ifdef RINGLOG_CONTROLLER_BREAK_LEASE_BEFORE_CAUGHT_UP
  // Negative control of tests/sim/cluster_sim: a broker fenced while cut off renews its lease
  // before it applied its fence and the leadership moves committed with it.
  out.is_caught_up = true;
#endif
  out.should_shut_down = b->in_controlled_shutdown;
  if (request.want_shut_down && !b->in_controlled_shutdown) {
    out.records = controlled_shutdown_records(image, *b);
  } else if (!request.want_shut_down && b->fenced) {
    out.records = unfence_broker_records(image, *b);
  }
  return out;
}

namespace {

/// The "host:port" of registration `r`'s cluster endpoint, or "" when it has none.
std::string cluster_endpoint(const protocol::register_broker_record& r) {
  for (const auto& e : r.end_points) {
    if (e.name == "cluster") return e.host + ":" + std::to_string(e.port);
  }
  return "";
}

std::string cluster_endpoint(const controller::broker_registration& b) {
  const auto* e = b.endpoint("cluster");
  return e == nullptr ? "" : e->host + ":" + std::to_string(e->port);
}

}  // namespace

result<void> broker_heartbeats::check_registration(const controller::metadata_image& image,
                                                   const protocol::register_broker_record& registration,
                                                   int64_t now_ms, const fencing_rules& rules) const {
  const int32_t id = registration.broker_id;
  const auto* live = image.find_broker(id);
  if (live == nullptr || live->fenced || live->incarnation_id == registration.incarnation_id) return base::ok_v;
  // The active controller's own process re-registering its id: whatever holds it is its past.
  if (id == rules.own_id && rules.own_is_broker && registration.incarnation_id == rules.own_incarnation_id) {
    return base::ok_v;
  }
  const std::string endpoint = cluster_endpoint(*live);
  if (!endpoint.empty() && endpoint == cluster_endpoint(registration)) return base::ok_v;   // a restart in place
  // The session counts for the broker epoch next_to_fence last saw; a newer registration has just
  // begun its session.
  const auto epoch = heartbeat_epoch_.find(id);
  const auto heard_at = last_heartbeat_ms_.find(id);
  const bool seen = epoch != heartbeat_epoch_.end() && epoch->second == live->broker_epoch && heard_at != last_heartbeat_ms_.end();
  const int64_t last_ms = seen ? heard_at->second : now_ms;
  const auto refused = refused_at_ms_.find(id);
  const bool gone = refused != refused_at_ms_.end() && refused->second >= last_ms;
  if (gone || now_ms - last_ms > rules.session_timeout_ms) return base::ok_v;
  return error{errc::duplicate_broker_registration,
               "DUPLICATE_BROKER_REGISTRATION: broker " + std::to_string(id) + " is registered by another live process (incarnation " +
                   uuid_to_string(live->incarnation_id) + ", broker epoch " + std::to_string(live->broker_epoch) +
                   ", cluster endpoint " + (endpoint.empty() ? "none" : endpoint) + ", last heartbeat " +
                   std::to_string(now_ms - last_ms) + " ms ago, broker.session.timeout.ms=" +
                   std::to_string(rules.session_timeout_ms) + "): is a second process running with node.id=" +
                   std::to_string(id) + "? Registration is refused until that session ends"};
}

std::optional<fencing> broker_heartbeats::next_to_fence(const controller::metadata_image& image, int64_t now_ms,
                                                        const fencing_rules& rules) {
  for (const auto& [id, b] : image.brokers()) {
    // The active controller's own broker is alive by definition (it runs this code): a late
    // heartbeat of its own, e.g. after the process stalled, must not take its partitions offline.
    // A dedicated controller has no broker of its own: a registration under its id is left over
    // from when the node ran process.roles=broker,controller, and is fenced like any lapsed one.
    if (b.fenced || (id == rules.own_id && rules.own_is_broker)) continue;
    // A new registration (a restart: a new broker epoch) starts its session now; without this a
    // broker that registers after a long absence was fenced again before its first heartbeat.
    if (auto [known, fresh] = heartbeat_epoch_.try_emplace(id, b.broker_epoch); !fresh && known->second != b.broker_epoch) {
      known->second = b.broker_epoch;
      last_heartbeat_ms_[id] = now_ms;
    }
    const int64_t seen = last_heartbeat_ms_.try_emplace(id, now_ms).first->second;
    const auto refused = refused_at_ms_.find(id);
    const bool gone = refused != refused_at_ms_.end() && refused->second >= seen;
    if (!gone && now_ms - seen <= rules.session_timeout_ms) continue;
    // Missed its heartbeats for broker.session.timeout.ms, or its process is gone: fence it and
    // move its leaderships.
    fencing out;
    out.broker_id = id;
    out.reason = gone ? "its cluster listener refuses connections (its process is gone)"
                      : "no heartbeat for " + std::to_string(now_ms - seen) + " ms (broker.session.timeout.ms=" +
                            std::to_string(rules.session_timeout_ms) + ")";
    out.records = fence_broker_records(image, b, rules.unclean_leader_election);
    return out;   // one at a time: each sees the image the previous one made
  }
  return std::nullopt;
}

std::vector<int32_t> broker_heartbeats::late(int64_t now_ms, int64_t heartbeat_interval_ms) const {
  std::vector<int32_t> out;
  for (const auto& [id, seen] : last_heartbeat_ms_) {
    if (now_ms - seen > constants::heartbeat_intervals_late * heartbeat_interval_ms) out.push_back(id);
  }
  return out;
}

void broker_heartbeats::refused(int32_t broker_id, int64_t started_ms) { refused_at_ms_[broker_id] = started_ms; }

std::vector<protocol::metadata_record> unfence_broker_records(const controller::metadata_image& image,
                                                              const controller::broker_registration& b) {
  protocol::unfence_broker_record unfence;
  unfence.id = b.node_id;
  unfence.epoch = b.broker_epoch;
  std::vector<protocol::metadata_record> records{unfence};
  for (auto& r : elect_leaderless(image, b.node_id)) records.push_back(std::move(r));
  return records;
}

std::vector<protocol::metadata_record> fence_broker_records(const controller::metadata_image& image,
                                                            const controller::broker_registration& b,
                                                            bool unclean_leader_election) {
  protocol::fence_broker_record fence;
  fence.id = b.node_id;
  fence.epoch = b.broker_epoch;
  std::vector<protocol::metadata_record> records{fence};
  for (auto& r : remove_broker_from_partitions(image, b.node_id, unclean_leader_election)) records.push_back(std::move(r));
  return records;
}

}  // namespace ringlog::controller
