#include "ringlog/controller/rebalance_planner.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <functional>
#include <tuple>

#include "ringlog/base/assert.h"
#include "ringlog/controller/constants.h"

namespace ringlog::controller {

namespace {

bool contains(const std::vector<int32_t>& ids, int32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

std::vector<int32_t> minus(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int32_t> out;
  for (int32_t id : a) {
    if (!contains(b, id)) out.push_back(id);
  }
  return out;
}

std::string id_list(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

/// One partition as the planner sees it.
struct entry {
  std::string topic;
  int32_t partition = 0;
  std::vector<int32_t> replicas;
  std::vector<int32_t> target;
  uint64_t size = 0;
  bool movable = false;
};

struct load {
  std::string rack;
  bool allowed = false;    // takes replicas (placement_brokers)
  bool draining = false;   // being decommissioned, or unavailable (options.unavailable_brokers)
  std::string excluded_reason;   // why not allowed (broker_load::excluded_reason); "" while allowed
  int32_t replicas = 0;
  int32_t leaders = 0;
  uint64_t bytes = 0;
};

/// The planner's working state: the partitions and each broker's load under the targets so far.
class planner {
 public:
  planner(const metadata_image& image, const partition_sizes& sizes, const rebalance_options& options);
  void drain();
  void balance_replicas();
  void balance_bytes();
  void balance_leaders();
  rebalance_plan finish(const metadata_image& image);

 private:
  /// A broker's replica and preferred-leader counts of one topic.
  struct topic_load {
    int32_t replicas = 0;
    int32_t leaders = 0;
  };
  /// What the balancing loops order brokers by: the count they even out first, then the
  /// broker's replicas, then its bytes.
  using order_key = std::tuple<int64_t, int64_t, uint64_t>;
  void count(const std::string& topic, const std::vector<int32_t>& target, uint64_t size, int sign);
  void balance_replica_counts(const std::string* topic);
  void balance_leader_counts(const std::string* topic);
  [[nodiscard]] int32_t replicas_of(const std::string* topic, int32_t id) const;
  [[nodiscard]] int32_t leaders_of(const std::string* topic, int32_t id) const;
  void retarget(entry& e, std::vector<int32_t> target);
  [[nodiscard]] bool rack_ok(const entry& e, int32_t from, int32_t to) const;
  [[nodiscard]] std::pair<double, double> replica_band() const;
  [[nodiscard]] std::pair<double, double> leader_band() const;
  [[nodiscard]] uint64_t usable_bytes() const { return total_bytes_ - pinned_bytes_; }
  [[nodiscard]] bool pinned(int32_t id) const;
  void count_pinned(const entry& e);
  [[nodiscard]] std::vector<int32_t> allowed_by(const std::function<order_key(int32_t)>& key) const;
  bool move_one_replica(int32_t from, int32_t to, const std::string* topic);
  [[nodiscard]] std::vector<std::string> imbalances() const;

  const rebalance_options& options_;
  std::vector<entry> entries_;
  std::map<int32_t, load> loads_;
  std::map<std::string, std::map<int32_t, topic_load>> topic_loads_;
  std::vector<rebalance_skip> skipped_;
  size_t allowed_count_ = 0;
  int64_t total_replicas_ = 0;
  uint64_t total_bytes_ = 0;
  // Replicas, preferred leaderships and bytes on brokers that neither take replicas nor give them
  // up (fenced, in controlled shutdown, not registered): no plan moves them, so the bands the
  // usable brokers are measured against leave them out. Fixed once the planner is built.
  int64_t pinned_replicas_ = 0;
  int64_t pinned_leaders_ = 0;
  uint64_t pinned_bytes_ = 0;
  bool stopped_short_ = false;
};

planner::planner(const metadata_image& image, const partition_sizes& sizes, const rebalance_options& options)
    : options_(options) {
  const std::vector<int32_t> allowed = placement_brokers(image);
  allowed_count_ = allowed.size();
  for (const auto& [id, b] : image.brokers()) {
    loads_[id].rack = b.rack;
    loads_[id].allowed = contains(allowed, id);
    if (b.fenced) loads_[id].excluded_reason = "fenced";
    if (b.in_controlled_shutdown) loads_[id].excluded_reason = "controlled shutdown";
  }
  for (const auto& [id, state] : image.decommissions()) {
    if (state != broker_decommission_state::decommissioning) continue;
    loads_[id].draining = true;
    loads_[id].excluded_reason = "decommissioning";
  }
  for (int32_t id : options.unavailable_brokers) {
    if (loads_[id].allowed) --allowed_count_;
    loads_[id].allowed = false;
    loads_[id].draining = true;
    loads_[id].excluded_reason = "unavailable";
  }
  for (const auto& [name, topic] : image.topics()) {
    for (size_t p = 0; p < topic->partitions.size(); ++p) {
      const partition_image& part = topic->partitions[p];
      entry e{name, static_cast<int32_t>(p), part.replicas, part.replicas, 0, false};
      if (auto it = sizes.find({name, e.partition}); it != sizes.end()) e.size = it->second;
      const int32_t min_insync = options.min_insync_replicas ? options.min_insync_replicas(name) : 1;
      const auto in_sync = static_cast<int32_t>(part.in_sync_replicas.size());
      if (part.reassigning()) {
        skipped_.push_back({name, e.partition, "being reassigned"});
      } else if (part.leader < 0) {
        skipped_.push_back({name, e.partition, "no leader"});
      } else if (in_sync < static_cast<int32_t>(part.replicas.size()) && in_sync < min_insync) {
        skipped_.push_back({name, e.partition,
                            "under-replicated: ISR " + id_list(part.in_sync_replicas) + " of replicas " +
                                id_list(part.replicas) + " is below min.insync.replicas=" + std::to_string(min_insync)});
      } else {
        e.movable = true;
      }
      count(name, e.target, e.size, +1);
      count_pinned(e);
      total_replicas_ += static_cast<int64_t>(e.target.size());
      total_bytes_ += e.size * e.target.size();
      entries_.push_back(std::move(e));
    }
  }
}

void planner::count(const std::string& topic, const std::vector<int32_t>& target, uint64_t size, int sign) {
  auto& by_broker = topic_loads_[topic];
  for (size_t i = 0; i < target.size(); ++i) {
    load& l = loads_[target[i]];
    topic_load& t = by_broker[target[i]];
    l.replicas += sign;
    t.replicas += sign;
    l.bytes = sign > 0 ? l.bytes + size : l.bytes - size;
    if (i == 0) {
      l.leaders += sign;
      t.leaders += sign;
    }
  }
}

/// A broker no plan moves replicas to or from: not allowed and not draining (fenced, in
/// controlled shutdown, or named by a partition without being registered).
bool planner::pinned(int32_t id) const {
  const load& l = loads_.at(id);
  return !l.allowed && !l.draining;
}

void planner::count_pinned(const entry& e) {
  for (size_t i = 0; i < e.target.size(); ++i) {
    if (!pinned(e.target[i])) continue;
    ++pinned_replicas_;
    pinned_bytes_ += e.size;
    if (i == 0) ++pinned_leaders_;
  }
}

int32_t planner::replicas_of(const std::string* topic, int32_t id) const {
  if (topic == nullptr) return loads_.at(id).replicas;
  const auto& by_broker = topic_loads_.at(*topic);
  auto it = by_broker.find(id);
  return it == by_broker.end() ? 0 : it->second.replicas;
}

int32_t planner::leaders_of(const std::string* topic, int32_t id) const {
  if (topic == nullptr) return loads_.at(id).leaders;
  const auto& by_broker = topic_loads_.at(*topic);
  auto it = by_broker.find(id);
  return it == by_broker.end() ? 0 : it->second.leaders;
}

void planner::retarget(entry& e, std::vector<int32_t> target) {
  RINGLOG_ASSERT_OP(target.size(), ==, e.target.size());   // a move keeps the replication factor
  count(e.topic, e.target, e.size, -1);
  e.target = std::move(target);
  count(e.topic, e.target, e.size, +1);
}

/// Racks `e` would span with `from` replaced by `to` are not fewer than it spans now.
bool planner::rack_ok(const entry& e, int32_t from, int32_t to) const {
  std::set<std::string> now;
  std::set<std::string> after;
  for (int32_t id : e.target) {
    now.insert(loads_.at(id).rack);
    after.insert(loads_.at(id == from ? to : id).rack);
  }
  return after.size() >= now.size();
}

/// Allowed brokers sorted by `key`, smallest first (ties: lowest id first).
std::vector<int32_t> planner::allowed_by(const std::function<order_key(int32_t)>& key) const {
  std::vector<std::pair<order_key, int32_t>> keyed;
  for (const auto& [id, l] : loads_) {
    if (l.allowed) keyed.emplace_back(key(id), id);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int32_t> out;
  out.reserve(keyed.size());
  for (const auto& k : keyed) out.push_back(k.second);
  return out;
}

void planner::drain() {
  for (entry& e : entries_) {
    for (int32_t gone : std::vector<int32_t>(e.target)) {
      if (!loads_[gone].draining) continue;
      if (!e.movable) continue;   // listed in skipped already; the plan is not balanced
      int32_t best = -1;
      bool best_new_rack = false;
      std::set<std::string> racks;
      for (int32_t id : e.target) {
        if (id != gone) racks.insert(loads_[id].rack);
      }
      const auto fewer_replicas = [this, &e](int32_t id) {
        return order_key{replicas_of(&e.topic, id), loads_.at(id).replicas, loads_.at(id).bytes};
      };
      for (int32_t id : allowed_by(fewer_replicas)) {
        if (contains(e.target, id)) continue;
        const bool new_rack = !racks.contains(loads_[id].rack);
        if (best < 0 || (new_rack && !best_new_rack)) {
          best = id;
          best_new_rack = new_rack;
        }
      }
      if (best < 0) {
        skipped_.push_back({e.topic, e.partition,
                            "no broker can take its replica on broker " + std::to_string(gone) + ": " +
                                std::to_string(allowed_count_) + " broker(s) take replicas, replication factor " +
                                std::to_string(e.target.size())});
        e.movable = false;
        break;
      }
      std::vector<int32_t> target = e.target;
      std::replace(target.begin(), target.end(), gone, best);
      retarget(e, std::move(target));
    }
  }
}

/// The replica counts the usable brokers should stay within: the average over them of the replicas
/// they hold or take (every replica but those pinned on excluded brokers), +-max(1, tolerance x it).
std::pair<double, double> planner::replica_band() const {
  const double average = static_cast<double>(total_replicas_ - pinned_replicas_) / static_cast<double>(allowed_count_);
  const double slack = std::max(1.0, options_.tolerance * average);
  return {average - slack, average + slack};
}

/// As replica_band, for preferred leaderships: partitions whose first replica is pinned are left out.
std::pair<double, double> planner::leader_band() const {
  const double average =
      static_cast<double>(static_cast<int64_t>(entries_.size()) - pinned_leaders_) / static_cast<double>(allowed_count_);
  const double slack = std::max(1.0, options_.tolerance * average);
  return {average - slack, average + slack};
}

/// Moves the smallest movable partition (of `topic`, when given) on `from` that `to` does not
/// hold and whose racks allow it from `from` to `to`. Returns whether one moved.
bool planner::move_one_replica(int32_t from, int32_t to, const std::string* topic) {
  entry* best = nullptr;
  for (entry& e : entries_) {
    if (topic != nullptr && e.topic != *topic) continue;
    if (!e.movable || !contains(e.target, from) || contains(e.target, to) || !rack_ok(e, from, to)) continue;
    if (best == nullptr || e.size < best->size) best = &e;
  }
  if (best == nullptr) return false;
  std::vector<int32_t> target = best->target;
  std::replace(target.begin(), target.end(), from, to);
  retarget(*best, std::move(target));
  return true;
}

/// Each topic's replicas spread first (so a new broker gets some of every topic), then the totals.
void planner::balance_replicas() {
  if (allowed_count_ == 0) return;
  for (const auto& [topic, by_broker] : topic_loads_) balance_replica_counts(&topic);
  balance_replica_counts(nullptr);
}

/// Evens out the replica counts (of `topic`, or in all) until the busiest and the least busy
/// broker are at most one apart, or no safe move is left.
void planner::balance_replica_counts(const std::string* topic) {
  const auto key = [this, topic](int32_t id) {
    return order_key{replicas_of(topic, id), loads_.at(id).replicas, loads_.at(id).bytes};
  };
  for (size_t step = 0; step < constants::rebalance_steps_max; ++step) {
    const std::vector<int32_t> order = allowed_by(key);
    const int32_t most = replicas_of(topic, order.back());
    if (most - replicas_of(topic, order.front()) <= 1) return;
    bool moved = false;
    // From the busiest broker to the least busy one that can take one of its partitions.
    for (size_t to = 0; to + 1 < order.size() && !moved; ++to) {
      if (replicas_of(topic, order[to]) + 1 >= most) break;
      moved = move_one_replica(order.back(), order[to], topic);
    }
    if (!moved) return;
  }
  stopped_short_ = true;
}

void planner::balance_bytes() {
  if (allowed_count_ < 2 || usable_bytes() < constants::rebalance_bytes_floor) return;
  const double average = static_cast<double>(usable_bytes()) / static_cast<double>(allowed_count_);
  const auto [low, high] = replica_band();
  for (size_t step = 0; step < constants::rebalance_steps_max; ++step) {
    const std::vector<int32_t> order = allowed_by([this](int32_t id) {
      return order_key{static_cast<int64_t>(loads_.at(id).bytes), loads_.at(id).replicas, 0};
    });
    const int32_t from = order.back();
    const int32_t to = order.front();
    const double spread = static_cast<double>(loads_[from].bytes) - static_cast<double>(loads_[to].bytes);
    if (static_cast<double>(loads_[from].bytes) <= average * (1 + options_.tolerance) &&
        static_cast<double>(loads_[to].bytes) >= average * (1 - options_.tolerance)) {
      return;
    }
    if (loads_[to].replicas + 1 > high || loads_[from].replicas - 1 < low) return;
    // The partition that leaves the two closest: its size nearest half the spread, below the spread.
    entry* best = nullptr;
    for (entry& e : entries_) {
      if (!e.movable || e.size == 0 || static_cast<double>(e.size) >= spread || !contains(e.target, from) ||
          contains(e.target, to) || !rack_ok(e, from, to)) {
        continue;
      }
      if (best == nullptr || std::abs(spread - 2.0 * static_cast<double>(e.size)) <
                                 std::abs(spread - 2.0 * static_cast<double>(best->size))) {
        best = &e;
      }
    }
    if (best == nullptr) return;
    std::vector<int32_t> target = best->target;
    std::replace(target.begin(), target.end(), from, to);
    retarget(*best, std::move(target));
  }
  stopped_short_ = true;
}

/// Each topic's preferred leaderships spread first, then the totals.
void planner::balance_leaders() {
  if (allowed_count_ < 2) return;
  for (const auto& [topic, by_broker] : topic_loads_) balance_leader_counts(&topic);
  balance_leader_counts(nullptr);
}

void planner::balance_leader_counts(const std::string* topic) {
  const auto key = [this, topic](int32_t id) {
    return order_key{leaders_of(topic, id), loads_.at(id).leaders, loads_.at(id).replicas};
  };
  for (size_t step = 0; step < constants::rebalance_steps_max; ++step) {
    const std::vector<int32_t> order = allowed_by(key);
    const int32_t from = order.back();
    if (leaders_of(topic, from) - leaders_of(topic, order.front()) <= 1) return;
    // A partition preferring `from` that has a replica on a broker with at least two leaderships
    // fewer: that replica goes first. Partitions moving anyway are preferred (no extra change).
    entry* best = nullptr;
    int32_t best_to = -1;
    for (entry& e : entries_) {
      if (!e.movable || e.target.front() != from || (topic != nullptr && e.topic != *topic)) continue;
      for (size_t i = 1; i < e.target.size(); ++i) {
        const int32_t to = e.target[i];
        if (!loads_[to].allowed || leaders_of(topic, to) + 1 >= leaders_of(topic, from)) continue;
        const bool changing = e.target != e.replicas;
        const bool best_changing = best != nullptr && best->target != best->replicas;
        if (best == nullptr || (changing && !best_changing) ||
            (changing == best_changing && leaders_of(topic, to) < leaders_of(topic, best_to))) {
          best = &e;
          best_to = to;
        }
      }
    }
    if (best == nullptr) return;
    std::vector<int32_t> target = best->target;
    std::iter_swap(target.begin(), std::find(target.begin(), target.end(), best_to));
    retarget(*best, std::move(target));
  }
  stopped_short_ = true;
}

/// "3" or "2.5": a band's bound as an operator reads it.
static std::string bound_text(double v) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f", v);
  std::string text = out;
  if (text.ends_with(".0")) text.resize(text.size() - 2);
  return text;
}

/// What keeps the loads after the plan from balanced, one line per broker and measure; empty:
/// balanced.
std::vector<std::string> planner::imbalances() const {
  std::vector<std::string> out;
  if (allowed_count_ == 0) {
    if (!entries_.empty()) out.push_back("no broker may take replicas");
    return out;
  }
  const auto [low, high] = replica_band();
  const auto [leaders_low, leaders_high] = leader_band();
  const double average_bytes = static_cast<double>(usable_bytes()) / static_cast<double>(allowed_count_);
  for (const auto& [id, l] : loads_) {
    const std::string broker = "broker " + std::to_string(id);
    if (l.draining && l.replicas > 0) out.push_back(broker + " still holds " + std::to_string(l.replicas) + " replica(s) it should give up");
    if (!l.allowed || options_.drain_only) continue;
    if (l.replicas < low || l.replicas > high) {
      out.push_back(broker + ": " + std::to_string(l.replicas) + " replicas, outside " + bound_text(low) + ".." + bound_text(high));
    }
    if (l.leaders < leaders_low || l.leaders > leaders_high) {
      out.push_back(broker + ": " + std::to_string(l.leaders) + " preferred leaderships, outside " + bound_text(leaders_low) +
                    ".." + bound_text(leaders_high));
    }
    const double bytes = static_cast<double>(l.bytes);
    if (usable_bytes() >= constants::rebalance_bytes_floor &&
        (bytes > average_bytes * (1 + options_.tolerance) || bytes < average_bytes * (1 - options_.tolerance))) {
      out.push_back(broker + ": " + std::to_string(l.bytes) + " bytes, more than the tolerance " + bound_text(options_.tolerance * 100) +
                    "% from the average " + std::to_string(static_cast<uint64_t>(average_bytes)));
    }
  }
  return out;
}

rebalance_plan planner::finish(const metadata_image& image) {
  rebalance_plan plan;
  // moves_max: the later moves are undone, so the loads after are those of the moves kept.
  size_t kept = 0;
  for (entry& e : entries_) {
    if (e.target == e.replicas) continue;
    if (kept == options_.moves_max) {
      retarget(e, e.replicas);
      stopped_short_ = true;
      continue;
    }
    ++kept;
  }
  std::map<int32_t, load> before;
  for (const auto& [id, l] : loads_) before[id].rack = l.rack;
  for (const entry& e : entries_) {
    for (size_t i = 0; i < e.replicas.size(); ++i) {
      load& l = before[e.replicas[i]];
      ++l.replicas;
      l.bytes += e.size;
      if (i == 0) ++l.leaders;
    }
    if (e.target == e.replicas) continue;
    rebalance_move m{e.topic, e.partition, e.replicas, e.target, e.size};
    plan.bytes_to_move += e.size * m.adding_replicas().size();
    plan.moves.push_back(std::move(m));
  }
  for (const auto& [id, l] : loads_) {
    const load& b = before[id];
    const std::string reason = l.allowed ? "" : l.excluded_reason.empty() ? "not registered" : l.excluded_reason;
    plan.brokers.push_back({id, l.rack, !l.allowed, reason, b.replicas, l.replicas, b.leaders, l.leaders, b.bytes, l.bytes});
  }
  plan.skipped = std::move(skipped_);
  plan.imbalances = imbalances();
  if (stopped_short_) plan.imbalances.push_back("the plan stops short (its bound of moves or steps): plan again once it is done");
  plan.balanced = plan.imbalances.empty();
  for (const auto& [name, topic] : image.topics()) {
    for (const auto& p : topic->partitions) plan.reassignments_in_progress += p.reassigning() ? 1 : 0;
  }
  return plan;
}

}  // namespace

std::vector<int32_t> rebalance_move::adding_replicas() const { return minus(target_replicas, replicas); }
std::vector<int32_t> rebalance_move::removing_replicas() const { return minus(replicas, target_replicas); }

std::vector<int32_t> placement_brokers(const metadata_image& image) {
  std::vector<int32_t> out;
  for (const auto& [id, b] : image.brokers()) {
    if (!b.fenced && !b.in_controlled_shutdown && image.decommission_state(id) == broker_decommission_state::none) {
      out.push_back(id);
    }
  }
  return out;
}

std::optional<std::string> decommission_capacity_refusal(const metadata_image& image, int32_t broker_id) {
  size_t others = 0;
  for (int32_t id : placement_brokers(image)) others += id != broker_id ? 1 : 0;
  size_t factor = 0;
  std::string topic;
  for (const auto& [name, t] : image.topics()) {
    for (const auto& p : t->partitions) {
      if (!contains(p.replicas, broker_id) || p.replicas.size() - p.removing_replicas.size() <= factor) continue;
      factor = p.replicas.size() - p.removing_replicas.size();
      topic = name;
    }
  }
  if (factor <= others) return std::nullopt;
  return "the other brokers cannot hold the replicas of broker " + std::to_string(broker_id) + ": topic '" + topic +
         "' has replication factor " + std::to_string(factor) + " and " + std::to_string(others) +
         " other broker(s) take replicas; add a broker or lower the replication factor first";
}

rebalance_plan plan_rebalance(const metadata_image& image, const partition_sizes& sizes, const rebalance_options& options) {
  planner p(image, sizes, options);
  p.drain();
  if (!options.drain_only) {
    p.balance_replicas();
    p.balance_bytes();
    p.balance_leaders();
  }
  return p.finish(image);
}

}  // namespace ringlog::controller
