#include "ringlog/group/assignor.h"

#include <algorithm>

#include "ringlog/base/assert.h"

namespace ringlog::group {
namespace {

// Members ordered as Kafka's assignors order them: instance id if present, else member id.
std::vector<const assignor_member*> ordered(const std::vector<assignor_member>& members) {
  std::vector<const assignor_member*> out;
  out.reserve(members.size());
  for (const auto& m : members) out.push_back(&m);
  std::sort(out.begin(), out.end(), [](const assignor_member* a, const assignor_member* b) {
    const auto& ka = a->group_instance_id ? *a->group_instance_id : a->member_id;
    const auto& kb = b->group_instance_id ? *b->group_instance_id : b->member_id;
    if (ka != kb) return ka < kb;
    return a->member_id < b->member_id;
  });
  return out;
}

assignment empty_assignment(const std::vector<assignor_member>& members) {
  assignment out;
  for (const auto& m : members) out[m.member_id];
  return out;
}

}  // namespace

assignment assign_range(const std::vector<assignor_member>& members, const partition_set& available) {
  assignment out = empty_assignment(members);
  const auto order = ordered(members);
  // Group the available partitions by topic, in partition order (partition_set is sorted).
  std::map<std::string, std::vector<topic_partition>> by_topic;
  for (const auto& tp : available) by_topic[tp.topic].push_back(tp);
  for (const auto& [topic, partitions] : by_topic) {
    std::vector<const assignor_member*> subscribers;
    for (const auto* m : order) {
      if (m->topics.contains(topic)) subscribers.push_back(m);
    }
    if (subscribers.empty()) continue;
    const size_t per_member = partitions.size() / subscribers.size();
    const size_t extra = partitions.size() % subscribers.size();
    for (size_t i = 0; i < subscribers.size(); ++i) {
      const size_t start = per_member * i + std::min(i, extra);
      const size_t length = per_member + (i < extra ? 1 : 0);
      for (size_t k = start; k < start + length; ++k) out[subscribers[i]->member_id].insert(partitions[k]);
    }
  }
  return out;
}

assignment assign_round_robin(const std::vector<assignor_member>& members, const partition_set& available) {
  assignment out = empty_assignment(members);
  const auto order = ordered(members);
  if (order.empty()) return out;
  size_t next = 0;
  for (const auto& tp : available) {
    // At most one full cycle over the members looking for a subscriber of this topic.
    for (size_t tried = 0; tried < order.size(); ++tried) {
      const auto* m = order[next];
      next = (next + 1) % order.size();
      if (m->topics.contains(tp.topic)) {
        out[m->member_id].insert(tp);
        break;
      }
    }
  }
  return out;
}

assignment assign_cooperative_sticky(const std::vector<assignor_member>& members, const partition_set& available) {
  assignment out = empty_assignment(members);
  const auto order = ordered(members);
  // 1. Stickiness: keep every previously held partition that is still available and subscribed.
  partition_set taken;
  for (const auto* m : order) {
    for (const auto& tp : m->current) {
      if (available.contains(tp) && m->topics.contains(tp.topic) && !taken.contains(tp)) {
        out[m->member_id].insert(tp);
        taken.insert(tp);
      }
    }
  }
  // 2. Unowned partitions to the least-loaded eligible member (ties: member order).
  for (const auto& tp : available) {
    if (taken.contains(tp)) continue;
    const assignor_member* best = nullptr;
    for (const auto* m : order) {
      if (!m->topics.contains(tp.topic)) continue;
      if (best == nullptr || out[m->member_id].size() < out[best->member_id].size()) best = m;
    }
    if (best == nullptr) continue;  // nobody subscribes to this topic
    out[best->member_id].insert(tp);
    taken.insert(tp);
  }
  // 3. Balance: move one partition at a time from a loaded member to an eligible member holding
  // at least 2 fewer. Each move strictly lowers the sum of squared counts, so this ends; the
  // bound below is a safety net (available.size()^2 moves can never be needed).
  const size_t moves_max = available.size() * available.size() + 1;
  for (size_t moves = 0; moves < moves_max; ++moves) {
    bool moved = false;
    // Try donors from most to least loaded.
    std::vector<const assignor_member*> donors(order.begin(), order.end());
    std::stable_sort(donors.begin(), donors.end(), [&](const auto* a, const auto* b) {
      return out[a->member_id].size() > out[b->member_id].size();
    });
    for (const auto* donor : donors) {
      auto& held = out[donor->member_id];
      // Last partition first, so a donor keeps its lowest partitions (deterministic, stable).
      for (auto it = held.rbegin(); it != held.rend() && !moved; ++it) {
        const assignor_member* receiver = nullptr;
        for (const auto* m : order) {
          if (m == donor || !m->topics.contains(it->topic)) continue;
          if (out[m->member_id].size() + 2 > held.size()) continue;
          if (receiver == nullptr || out[m->member_id].size() < out[receiver->member_id].size()) receiver = m;
        }
        if (receiver == nullptr) continue;
        const topic_partition tp = *it;
        held.erase(tp);
        out[receiver->member_id].insert(tp);
        moved = true;
      }
      if (moved) break;
    }
    if (!moved) return out;
  }
  RINGLOG_ASSERT(false, "cooperative_sticky balancing did not converge");
  return out;
}

assignment run_assignor(assignor_kind kind, const std::vector<assignor_member>& members,
                        const partition_set& available) {
  switch (kind) {
    case assignor_kind::range: return assign_range(members, available);
    case assignor_kind::round_robin: return assign_round_robin(members, available);
    case assignor_kind::cooperative_sticky: return assign_cooperative_sticky(members, available);
  }
  RINGLOG_ASSERT(false, "unknown assignor kind");
  return {};
}

}  // namespace ringlog::group
