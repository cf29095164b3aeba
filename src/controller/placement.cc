#include "ringlog/controller/placement.h"

#include "ringlog/controller/rebalance_planner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace ringlog::controller {

std::vector<int32_t> usable_brokers(const controller::metadata_image& image) {
  std::vector<int32_t> out;
  for (const auto& [id, b] : image.brokers()) {
    if (!b.fenced && !b.in_controlled_shutdown) out.push_back(id);
  }
  return out;
}

int16_t automatic_replication_factor(const controller::metadata_image& image) {
  const size_t usable = usable_brokers(image).size();
  return static_cast<int16_t>(std::clamp<size_t>(usable, 1, 3));
}

result<std::vector<std::vector<int32_t>>> place_replicas(const controller::metadata_image& image, int32_t count,
                                                         int32_t replication_factor, const controller::uuid& topic_id) {
  const std::vector<int32_t> brokers = controller::placement_brokers(image);   // not decommissioning (issue 33)
  if (replication_factor < 1) {
    return error{errc::invalid_replication_factor,
                 "replication_factor " + std::to_string(replication_factor) + " is out of range: at least 1"};
  }
  if (static_cast<size_t>(replication_factor) > brokers.size()) {
    return error{errc::invalid_replication_factor,
                 "replication_factor " + std::to_string(replication_factor) + " is larger than the number of available brokers (" +
                     std::to_string(brokers.size()) + ")"};
  }
  // Counts per broker: this topic's first (it spreads over every broker, whatever the others
  // did), then the whole cluster's. A partition's leader counts where it is preferred (its first
  // replica): leaderships go back there (auto.leader.rebalance.enable).
  struct load {
    int64_t topic_leaders = 0;
    int64_t leaders = 0;
    int64_t topic_replicas = 0;
    int64_t replicas = 0;
  };
  std::map<int32_t, load> loads;
  std::map<int32_t, std::string> rack;
  for (int32_t id : brokers) {
    loads[id] = load{};
    rack[id] = image.find_broker(id)->rack;
  }
  for (const auto& [name, topic] : image.topics()) {
    const bool same_topic = topic->topic_id == topic_id;
    for (const auto& p : topic->partitions) {
      if (p.replicas.empty()) continue;
      if (auto it = loads.find(p.replicas.front()); it != loads.end()) {
        ++it->second.leaders;
        if (same_topic) ++it->second.topic_leaders;
      }
      for (int32_t r : p.replicas) {
        if (auto it = loads.find(r); it != loads.end()) {
          ++it->second.replicas;
          if (same_topic) ++it->second.topic_replicas;
        }
      }
    }
  }
  auto leader_key = [&loads](int32_t id) {
    const load& l = loads[id];
    return std::make_tuple(l.topic_leaders, l.leaders, l.topic_replicas, l.replicas, id);
  };
  auto replica_key = [&loads](int32_t id) {
    const load& l = loads[id];
    return std::make_tuple(l.topic_replicas, l.replicas, id);
  };
  std::vector<std::vector<int32_t>> out;
  out.reserve(static_cast<size_t>(count));
  for (int32_t n = 0; n < count; ++n) {
    std::vector<int32_t> chosen;
    std::set<std::string> racks_used;
    // The leader: fewest leaderships of this topic, then in all, then fewest replicas, then lowest id.
    int32_t leader = brokers.front();
    for (int32_t id : brokers) {
      if (leader_key(id) < leader_key(leader)) leader = id;
    }
    chosen.push_back(leader);
    racks_used.insert(rack[leader]);
    while (chosen.size() < static_cast<size_t>(replication_factor)) {
      int32_t best = -1;
      bool best_new_rack = false;
      for (int32_t id : brokers) {
        if (std::find(chosen.begin(), chosen.end(), id) != chosen.end()) continue;
        const bool new_rack = !racks_used.contains(rack[id]);
        if (best < 0 || (new_rack && !best_new_rack) ||
            (new_rack == best_new_rack && replica_key(id) < replica_key(best))) {
          best = id;
          best_new_rack = new_rack;
        }
      }
      chosen.push_back(best);
      racks_used.insert(rack[best]);
    }
    ++loads[leader].leaders;
    ++loads[leader].topic_leaders;
    for (int32_t id : chosen) {
      ++loads[id].replicas;
      ++loads[id].topic_replicas;
    }
    out.push_back(std::move(chosen));
  }
  return out;
}

namespace {

protocol::partition_change_record leader_change(const controller::topic_image& topic, int32_t partition,
                                                int32_t leader) {
  protocol::partition_change_record c;
  c.topic_id = topic.topic_id;
  c.partition_id = partition;
  c.leader = leader;
  c.ringlog_expected_partition_epoch = topic.partitions[static_cast<size_t>(partition)].partition_epoch;
  return c;
}

/// The first replica, in replica order, that is in `isr` and `usable`; -1 when none is.
int32_t first_usable_in_sync(const std::vector<int32_t>& replicas, const std::vector<int32_t>& isr,
                             const std::function<bool(int32_t)>& usable) {
  for (int32_t candidate : replicas) {
    if (usable(candidate) && std::find(isr.begin(), isr.end(), candidate) != isr.end()) return candidate;
  }
  return -1;
}

}  // namespace

std::vector<protocol::metadata_record> remove_broker_from_partitions(const controller::metadata_image& image,
                                                                     int32_t broker_id, bool unclean_election) {
#ifdef RINGLOG_CONTROLLER_BREAK_UNCLEAN_ELECTION
  // Negative control of tests/sim/cluster_sim: unclean.leader.election.enable=true whatever the config.
  unclean_election = true;
#endif
  const std::vector<int32_t> usable = usable_brokers(image);
  auto is_usable = [&](int32_t id) { return id != broker_id && std::find(usable.begin(), usable.end(), id) != usable.end(); };
  std::vector<protocol::metadata_record> out;
  for (const auto& [name, topic] : image.topics()) {
    for (size_t p = 0; p < topic->partitions.size(); ++p) {
      const auto& part = topic->partitions[p];
      const auto& isr = part.in_sync_replicas;
      const bool in_isr = std::find(isr.begin(), isr.end(), broker_id) != isr.end();
      if (part.leader != broker_id && !in_isr) continue;
      std::vector<int32_t> next_isr;
      for (int32_t id : isr) {
        if (id != broker_id) next_isr.push_back(id);
      }
      // Kafka keeps the last member in the ISR when it goes: it holds every acknowledged record,
      // so it is the one that may lead again when it comes back (the partition is offline until then).
      if (next_isr.empty()) next_isr.push_back(broker_id);
      protocol::partition_change_record c;
      c.topic_id = topic->topic_id;
      c.partition_id = static_cast<int32_t>(p);
      // Computed from this image: refused where it is applied if the partition changed since
      // (a registration or fencing worked out from a stale image must not undo a newer change).
      c.ringlog_expected_partition_epoch = part.partition_epoch;
      if (next_isr != isr) c.isr = next_isr;
      if (part.leader == broker_id) {
        // The next live in-sync replica in replica order; with unclean election, else any live replica.
        int32_t leader = first_usable_in_sync(part.replicas, next_isr, is_usable);
        for (size_t i = 0; leader < 0 && unclean_election && i < part.replicas.size(); ++i) {
          if (is_usable(part.replicas[i])) {
            leader = part.replicas[i];
            c.isr = std::vector<int32_t>{leader};   // an unclean leader starts a new ISR of itself
          }
        }
        c.leader = leader;
      }
      if (!c.isr && c.leader == -2) continue;
      out.push_back(c);
    }
  }
  return out;
}

std::vector<protocol::metadata_record> rejoin_partitions(const controller::metadata_image& image, int32_t broker_id) {
  const std::vector<int32_t> usable = usable_brokers(image);
  auto is_usable = [&](int32_t id) { return id != broker_id && std::find(usable.begin(), usable.end(), id) != usable.end(); };
  std::vector<protocol::metadata_record> out;
  for (const auto& [name, topic] : image.topics()) {
    for (size_t p = 0; p < topic->partitions.size(); ++p) {
      const auto& part = topic->partitions[p];
      const auto& isr = part.in_sync_replicas;
      const bool in_isr = std::find(isr.begin(), isr.end(), broker_id) != isr.end();
      std::vector<int32_t> others;
      for (int32_t id : isr) {
        if (id != broker_id) others.push_back(id);
      }
      protocol::partition_change_record c;
      c.topic_id = topic->topic_id;
      c.partition_id = static_cast<int32_t>(p);
      // Computed from this image: refused where it is applied if the partition changed since
      // (a registration or fencing worked out from a stale image must not undo a newer change).
      c.ringlog_expected_partition_epoch = part.partition_epoch;
      if (part.leader == broker_id || (part.leader < 0 && in_isr)) {
        const int32_t next = first_usable_in_sync(part.replicas, others, is_usable);
        if (next >= 0 && part.leader == broker_id) {
          c.leader = next;
          c.isr = others;
        } else if (part.leader == broker_id || part.leader < 0) {
          c.leader = broker_id;   // the same or the last in-sync replica: a new leader epoch
        }
      } else if (in_isr && !others.empty()) {
        c.isr = others;   // a follower rejoins the ISR once it caught up with the leader
      }
      if (!c.isr && c.leader == -2) continue;
      out.push_back(c);
    }
  }
  return out;
}

namespace {

preferred_election plan_one(const controller::topic_image& topic, int32_t partition,
                            const std::vector<int32_t>& usable) {
  preferred_election e;
  e.topic = topic.name;
  e.partition = partition;
  const auto& part = topic.partitions[static_cast<size_t>(partition)];
  e.preferred = part.replicas.empty() ? -1 : part.replicas.front();
  const auto& isr = part.in_sync_replicas;
  if (part.leader == e.preferred) {
    e.refused = errc::election_not_needed;
  } else if (e.preferred < 0 || std::find(usable.begin(), usable.end(), e.preferred) == usable.end() ||
             std::find(isr.begin(), isr.end(), e.preferred) == isr.end()) {
    e.refused = errc::preferred_leader_not_available;
  } else {
    auto c = leader_change(topic, partition, e.preferred);
    c.ringlog_expected_partition_epoch = part.partition_epoch;
    e.change = c;
  }
  return e;
}

}  // namespace

std::vector<preferred_election> plan_preferred_elections(const controller::metadata_image& image,
                                                         const std::vector<std::pair<std::string, int32_t>>& wanted) {
  const std::vector<int32_t> usable = usable_brokers(image);
  std::vector<preferred_election> out;
  if (wanted.empty()) {
    for (const auto& [name, topic] : image.topics()) {
      for (size_t p = 0; p < topic->partitions.size(); ++p) {
        auto e = plan_one(*topic, static_cast<int32_t>(p), usable);
        if (e.change) out.push_back(std::move(e));
      }
    }
    return out;
  }
  for (const auto& [name, partition] : wanted) {
    const auto* topic = image.find_topic(name);
    if (topic == nullptr || partition < 0 || static_cast<size_t>(partition) >= topic->partitions.size()) {
      preferred_election e;
      e.topic = name;
      e.partition = partition;
      e.refused = errc::unknown_topic_or_partition;
      out.push_back(std::move(e));
      continue;
    }
    out.push_back(plan_one(*topic, partition, usable));
  }
  return out;
}

std::vector<int32_t> imbalanced_brokers(const controller::metadata_image& image, int32_t percentage) {
  std::map<int32_t, std::pair<int64_t, int64_t>> preferred_and_not_leading;
  for (const auto& [name, topic] : image.topics()) {
    for (const auto& part : topic->partitions) {
      if (part.replicas.empty()) continue;
      auto& [preferred, elsewhere] = preferred_and_not_leading[part.replicas.front()];
      ++preferred;
      if (part.leader != part.replicas.front()) ++elsewhere;
    }
  }
  std::vector<int32_t> out;
  for (const auto& [broker, counts] : preferred_and_not_leading) {
    if (counts.second * 100 > counts.first * percentage) out.push_back(broker);
  }
  return out;
}

std::optional<protocol::partition_change_record> renew_stale_leadership(const controller::metadata_image& image,
                                                                        int32_t broker_id, const std::string& topic_name,
                                                                        int32_t partition, int32_t leader_epoch) {
  const auto* topic = image.find_topic(topic_name);
  if (topic == nullptr || partition < 0 || static_cast<size_t>(partition) >= topic->partitions.size()) return std::nullopt;
  const auto& part = topic->partitions[static_cast<size_t>(partition)];
  if (part.leader != broker_id || part.leader_epoch != leader_epoch) return std::nullopt;
  const std::vector<int32_t> usable = usable_brokers(image);
  auto is_usable = [&](int32_t id) { return id != broker_id && std::find(usable.begin(), usable.end(), id) != usable.end(); };
  std::vector<int32_t> others;
  for (int32_t id : part.in_sync_replicas) {
    if (id != broker_id) others.push_back(id);
  }
  auto c = leader_change(*topic, partition, broker_id);   // renewed in a new epoch ...
  if (const int32_t next = first_usable_in_sync(part.replicas, others, is_usable); next >= 0) {
    c.leader = next;                                        // ... unless another in-sync replica can lead
    c.isr = others;
  }
  return c;
}

std::vector<protocol::metadata_record> elect_leaderless(const controller::metadata_image& image, int32_t broker_id) {
  std::vector<protocol::metadata_record> out;
  for (const auto& [name, topic] : image.topics()) {
    for (size_t p = 0; p < topic->partitions.size(); ++p) {
      const auto& part = topic->partitions[p];
      if (part.leader >= 0) continue;
      const auto& isr = part.in_sync_replicas;
      if (std::find(isr.begin(), isr.end(), broker_id) == isr.end()) continue;
      out.push_back(leader_change(*topic, static_cast<int32_t>(p), broker_id));
    }
  }
  return out;
}

std::vector<protocol::metadata_record> controlled_shutdown_records(const controller::metadata_image& image,
                                                                   const controller::broker_registration& b) {
  protocol::broker_registration_change_record change;
  change.broker_id = b.node_id;
  change.broker_epoch = b.broker_epoch;
  change.in_controlled_shutdown = 1;
  std::vector<protocol::metadata_record> records{change};
  for (auto& r : remove_broker_from_partitions(image, b.node_id, false)) records.push_back(std::move(r));
  return records;
}

}  // namespace ringlog::controller
