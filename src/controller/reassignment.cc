#include "ringlog/controller/reassignment.h"

#include <algorithm>
#include <set>
#include <utility>

#include "ringlog/controller/placement.h"

namespace ringlog::controller {

namespace {

bool has(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

/// `from` without the ids in `without`, in `from`'s order.
std::vector<int32_t> minus(const std::vector<int32_t>& from, const std::vector<int32_t>& without) {
  std::vector<int32_t> out;
  for (int32_t id : from) {
    if (!has(without, id)) out.push_back(id);
  }
  return out;
}

/// `from` keeping only the ids in `within`, in `from`'s order.
std::vector<int32_t> only(const std::vector<int32_t>& from, const std::vector<int32_t>& within) {
  std::vector<int32_t> out;
  for (int32_t id : from) {
    if (has(within, id)) out.push_back(id);
  }
  return out;
}

/// The first of `candidates` (in order) that is in `isr` and usable, or -1.
int32_t first_usable_in_sync(const std::vector<int32_t>& candidates, const std::vector<int32_t>& isr,
                             const std::vector<int32_t>& usable) {
  for (int32_t id : candidates) {
    if (has(isr, id) && has(usable, id)) return id;
  }
  return -1;
}

/// What completing a reassignment did to a partition's state.
enum class completion { none, leader_moved, completed };

/// Step 3 of the header on `q` (a partition's state after the change being built): when every
/// target replica is in its ISR, a leader being removed first hands the leadership to a target
/// replica (3a); once the leader is a target replica and every removing replica has caught up
/// with the metadata (`caught_up`), q becomes the completed state (3b).
completion complete_in_place(const controller::metadata_image& image, controller::partition_image& q,
                             const metadata_caught_up& caught_up) {
  if (!q.reassigning()) return completion::none;
  const std::vector<int32_t> target = target_replicas(q);
  for (int32_t id : target) {
    if (!has(q.in_sync_replicas, id)) return completion::none;
  }
  if (!has(target, q.leader)) {
    const int32_t leader = first_usable_in_sync(target, q.in_sync_replicas, usable_brokers(image));
    if (leader < 0) return completion::none;   // no target replica can lead now: wait (an ISR change retries)
    q.leader = leader;
    return completion::leader_moved;
  }
  for (int32_t id : q.removing_replicas) {
    if (!caught_up(id)) return completion::none;   // it may still believe it leads: the tick retries
  }
  q.in_sync_replicas = only(q.in_sync_replicas, target);
  q.replicas = target;
  q.adding_replicas.clear();
  q.removing_replicas.clear();
  return completion::completed;
}

std::string partition_text(const std::string& topic, int32_t partition) {
  return "partition " + std::to_string(partition) + " of topic '" + topic + "'";
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

/// The change from `p` to `next` (each field set only when it differs; the leader in a new
/// epoch when it changes), computed at p's partition epoch.
protocol::partition_change_record change_between(const controller::uuid& topic_id, int32_t partition,
                                                 const controller::partition_image& p,
                                                 const controller::partition_image& next) {
  protocol::partition_change_record c;
  c.topic_id = topic_id;
  c.partition_id = partition;
  c.ringlog_expected_partition_epoch = p.partition_epoch;
  if (next.replicas != p.replicas) c.replicas = next.replicas;
  if (next.in_sync_replicas != p.in_sync_replicas) c.isr = next.in_sync_replicas;
  if (next.adding_replicas != p.adding_replicas) c.adding_replicas = next.adding_replicas;
  if (next.removing_replicas != p.removing_replicas) c.removing_replicas = next.removing_replicas;
  if (next.leader != p.leader) c.leader = next.leader;
  return c;
}

/// Keeps `p`'s leader in `q` as a removing replica when q's replicas leave it out (a cancel or a
/// new target after step 3a gave an adding replica the leadership): it leaves as a removed leader
/// does, handing over first (3a) and going once it has applied that (3b), never in the record that
/// takes its leadership. Returns whether it did.
bool keep_leader_until_handed_over(const controller::partition_image& p, controller::partition_image& q) {
  if (p.leader < 0 || has(q.replicas, p.leader)) return false;
  q.replicas.push_back(p.leader);
  q.removing_replicas.push_back(p.leader);
  q.in_sync_replicas = only(p.in_sync_replicas, q.replicas);
  q.leader = p.leader;
  return true;
}

/// The state a cancel leads to, or the refusal.
result<controller::partition_image> cancelled(const controller::metadata_image& image, const controller::partition_image& p,
                                              const std::string& where, const metadata_caught_up& caught_up) {
  if (!p.reassigning()) return error{errc::no_reassignment_in_progress, where + " is not being reassigned"};
  controller::partition_image q = p;
  q.replicas = original_replicas(p);
  q.in_sync_replicas = only(p.in_sync_replicas, q.replicas);
  q.adding_replicas.clear();
  q.removing_replicas.clear();
  if (q.in_sync_replicas.empty()) {
    return error{errc::invalid_replica_assignment,
                 where + ": none of its original replicas " + ids_text(q.replicas) +
                     " is in the ISR, so cancelling would leave it without an in-sync replica"};
  }
  if (keep_leader_until_handed_over(p, q)) {
    complete_in_place(image, q, caught_up);
    return q;
  }
  if (!has(q.replicas, q.leader)) {
    q.leader = first_usable_in_sync(q.replicas, q.in_sync_replicas, usable_brokers(image));
    if (q.leader < 0) {
      return error{errc::invalid_replica_assignment,
                   where + ": none of its original replicas in the ISR is available to lead"};
    }
  }
  return q;
}

/// The state a new target leads to (started, or at once complete), or the refusal.
result<controller::partition_image> retargeted(const controller::metadata_image& image, const controller::partition_image& p,
                                               const std::vector<int32_t>& target, const std::string& where,
                                               const metadata_caught_up& caught_up) {
  if (target.empty()) return error{errc::invalid_replica_assignment, where + ": the target replicas are empty"};
  std::set<int32_t> seen;
  for (int32_t id : target) {
    if (!seen.insert(id).second) {
      return error{errc::invalid_replica_assignment,
                   where + ": the target replicas " + ids_text(target) + " name broker " + std::to_string(id) + " twice"};
    }
    if (image.find_broker(id) == nullptr) {
      return error{errc::invalid_replica_assignment,
                   where + ": the target replicas " + ids_text(target) + " name broker " + std::to_string(id) +
                       ", which is not registered"};
    }
  }
  const std::vector<int32_t> original = original_replicas(p);
  for (int32_t id : minus(target, original)) {
    if (image.decommission_state(id) != controller::broker_decommission_state::none) {
      return error{errc::invalid_replica_assignment, where + ": the target replicas " + ids_text(target) + " add broker " +
                                                          std::to_string(id) + ", which is being decommissioned"};
    }
  }
  controller::partition_image q = p;
  q.adding_replicas = minus(target, original);
  q.removing_replicas = minus(original, target);
  q.replicas = target;
  for (int32_t id : q.removing_replicas) q.replicas.push_back(id);
  // An earlier reassignment's adding replica that is not in the new target leaves at once (it
  // was never needed to keep a record).
  q.in_sync_replicas = only(p.in_sync_replicas, q.replicas);
  if (q.in_sync_replicas.empty()) {
    return error{errc::invalid_replica_assignment,
                 where + ": no in-sync replica " + ids_text(p.in_sync_replicas) + " would remain a replica"};
  }
  keep_leader_until_handed_over(p, q);
  if (!has(q.replicas, q.leader)) {
    q.leader = first_usable_in_sync(q.replicas, q.in_sync_replicas, usable_brokers(image));
    if (q.leader < 0) return error{errc::invalid_replica_assignment, where + ": no remaining in-sync replica can lead"};
  }
  if (!q.reassigning() && q.replicas == p.replicas) return q;   // the target is where it is
  complete_in_place(image, q, caught_up);
  return q;
}

}  // namespace

std::vector<int32_t> target_replicas(const controller::partition_image& p) {
  return minus(p.replicas, p.removing_replicas);
}

std::vector<int32_t> original_replicas(const controller::partition_image& p) {
  return minus(p.replicas, p.adding_replicas);
}

std::vector<reassignment_plan> plan_reassignments(const controller::metadata_image& image,
                                                  const std::vector<reassignment_target>& targets,
                                                  const metadata_caught_up& caught_up) {
  std::vector<reassignment_plan> out;
  std::set<std::pair<std::string, int32_t>> planned;
  for (const auto& t : targets) {
    reassignment_plan plan;
    plan.topic = t.topic;
    plan.partition = t.partition;
    const std::string where = partition_text(t.topic, t.partition);
    const controller::topic_image* topic = image.find_topic(t.topic);
    if (topic == nullptr || t.partition < 0 || static_cast<size_t>(t.partition) >= topic->partitions.size()) {
      plan.refused = error{errc::unknown_topic_or_partition, where + " does not exist"};
    } else if (!planned.insert({t.topic, t.partition}).second) {
      plan.refused = error{errc::invalid_replica_assignment, where + " is named more than once in one request"};
    } else {
      const controller::partition_image& p = topic->partitions[static_cast<size_t>(t.partition)];
      auto next = t.replicas ? retargeted(image, p, *t.replicas, where, caught_up) : cancelled(image, p, where, caught_up);
      if (!next.ok()) {
        plan.refused = next.error();
      } else if (next.value() != p) {
        plan.change = change_between(topic->topic_id, t.partition, p, next.value());
      }
    }
    out.push_back(std::move(plan));
  }
  return out;
}

bool complete_reassignment_if_ready(const controller::metadata_image& image, const controller::partition_image& current,
                                    protocol::partition_change_record& change, const metadata_caught_up& caught_up) {
  controller::partition_image q = current;
  if (change.replicas) q.replicas = *change.replicas;
  if (change.isr) q.in_sync_replicas = *change.isr;
  if (change.adding_replicas) q.adding_replicas = *change.adding_replicas;
  if (change.removing_replicas) q.removing_replicas = *change.removing_replicas;
  if (change.leader != -2) q.leader = change.leader;
  switch (complete_in_place(image, q, caught_up)) {
    case completion::none:
      return false;
    case completion::leader_moved:
      change.leader = q.leader;
      return true;
    case completion::completed:
      change.replicas = q.replicas;
      change.isr = q.in_sync_replicas;
      change.adding_replicas = q.adding_replicas;
      change.removing_replicas = q.removing_replicas;
      return true;
  }
  return false;
}

void completion_barrier::heard(int32_t broker_id, int64_t broker_epoch, int64_t metadata_offset) {
  report& r = reports_[broker_id];
  if (r.broker_epoch != broker_epoch) r = report{broker_epoch, -1};   // a restart applies everything again
  r.metadata_offset = std::max(r.metadata_offset, metadata_offset);
}

metadata_caught_up completion_barrier::rule(const controller::metadata_image& image, const std::string& topic,
                                            int32_t partition, const controller::partition_image& p) {
  wait& w = waits_[{topic, partition}];
  if (w.partition_epoch != p.partition_epoch) w = wait{p.partition_epoch, image.offset()};
  std::map<int32_t, bool> caught_up;
  for (int32_t id : p.removing_replicas) {
    const controller::broker_registration* b = image.find_broker(id);
    const auto r = reports_.find(id);
    caught_up[id] = b == nullptr || b->fenced ||
                    (r != reports_.end() && r->second.broker_epoch == b->broker_epoch &&
                     r->second.metadata_offset >= w.metadata_offset);
  }
  return [caught_up = std::move(caught_up)](int32_t id) {
    const auto it = caught_up.find(id);
    return it == caught_up.end() || it->second;
  };
}

void completion_barrier::forget_finished(const controller::metadata_image& image) {
  std::erase_if(waits_, [&image](const auto& entry) {
    const controller::topic_image* t = image.find_topic(entry.first.first);
    const auto index = static_cast<size_t>(entry.first.second);
    return t == nullptr || index >= t->partitions.size() || !t->partitions[index].reassigning();
  });
}

}  // namespace ringlog::controller
