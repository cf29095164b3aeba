#pragma once
// cluster_sim's reassignment workload (issue 28: "reassignment"): at seeded times an admin
// client moves a partition of the workload topic to another replica set through
// admin_api::alter_partition_reassignments (KIP-455) at a random serving node: with more nodes than
// the replication factor one replica goes to a node outside the set, else the set is reordered
// (a new preferred leader). The other checks of cluster_sim hold through it; after the final
// heal every reassignment must complete (list_partition_reassignments empty on every serving
// node, the partition's replicas the last target) within reassignment_deadline_ms.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim_cluster.h"

namespace ringlog::sim {

/// Between two reassignment calls of the fault phase (ms of sim time).
constexpr int64_t reassignment_gap_min_ms = 3'000;
constexpr int64_t reassignment_gap_max_ms = 12'000;
/// An admin client's wait for an answer.
constexpr int64_t reassignment_call_timeout_ms = 10'000;
/// After the final heal, every reassignment completes within this long: a new replica catches up
/// on a few hundred records and joins the ISR (a replica.lag.time.max.ms round), the leadership
/// moves and the removed replicas leave; a few rounds of it.
constexpr int64_t reassignment_deadline_ms = 60'000;

class reassignment_workload {
 public:
  /// `replicas`: cluster_sim's replicas of each partition (created), to which every node a
  /// target names is added (a node that may serve the partition, for its cut-off exemption).
  reassignment_workload(sim_cluster& c, std::string topic, std::map<int32_t, std::vector<int32_t>>& replicas)
      : c_(c), topic_(std::move(topic)), ever_(replicas) {
    for (const auto& [p, r] : replicas) accepted_[p] = r;
  }

  /// Schedules reassignment calls from now until `until_ms`.
  void start(int64_t until_ms) {
    for (int64_t t = now() + w().uniform(reassignment_gap_min_ms, reassignment_gap_max_ms); t < until_ms;
         t += w().uniform(reassignment_gap_min_ms, reassignment_gap_max_ms)) {
      c_.at(t, [this] { move(); });
    }
  }

  /// Whether every reassignment completed: none listed on any serving node, and each partition's
  /// replicas (as `describe`d) one of the targets it may have now. `why` names what is missing.
  bool complete(const broker::topic_description& d, std::string& why) const {
    for (int n = 1; n <= c_.node_count(); ++n) {
      broker::broker* b = c_.serving(n);
      if (b == nullptr) continue;
      if (auto listed = b->admin().list_partition_reassignments(topic_); !listed.empty()) {
        why = "n" + std::to_string(n) + " lists " + std::to_string(listed.size()) + " reassignment(s) under way";
        return false;
      }
    }
    for (const auto& part : d.partitions) {
      const int32_t p = part.partition.value();
      if (!possible(p, part.replicas)) {
        why = "p" + std::to_string(p) + " has replicas " + text(part.replicas) + ", the target was " +
              text(accepted_.at(p));
        return false;
      }
    }
    return true;
  }

  /// The replicas partition `p` ends with (the last target acknowledged).
  [[nodiscard]] const std::map<int32_t, std::vector<int32_t>>& accepted() const { return accepted_; }
  [[nodiscard]] int moves() const { return moves_; }

 private:
  world& w() { return c_.sim_world(); }
  int64_t now() { return w().clock.now_ms(); }

  static std::string text(const std::vector<int32_t>& r) {
    std::string out = "[";
    for (size_t i = 0; i < r.size(); ++i) out += (i ? "," : "") + std::to_string(r[i]);
    return out + "]";
  }

  /// Whether `replicas` may be partition p's now: its last acknowledged target, or one sent
  /// after it whose answer never came (it may have been committed).
  [[nodiscard]] bool possible(int32_t p, const std::vector<int32_t>& replicas) const {
    if (auto a = accepted_.find(p); a != accepted_.end() && a->second == replicas) return true;
    auto u = unknown_.find(p);
    return u != unknown_.end() && std::find(u->second.begin(), u->second.end(), replicas) != u->second.end();
  }

  /// The next target of a partition now on `current`: one replica replaced by a node outside the
  /// set (when there is one), then rotated so another replica may lead.
  std::vector<int32_t> target_from(std::vector<int32_t> current) {
    std::vector<int32_t> outside;
    for (int n = 1; n <= c_.node_count(); ++n) {
      if (std::find(current.begin(), current.end(), n) == current.end()) outside.push_back(n);
    }
    if (!outside.empty()) {
      current[static_cast<size_t>(w().uniform(0, static_cast<int64_t>(current.size()) - 1))] =
          outside[static_cast<size_t>(w().uniform(0, static_cast<int64_t>(outside.size()) - 1))];
    }
    std::rotate(current.begin(), current.begin() + w().uniform(0, static_cast<int64_t>(current.size()) - 1),
                current.end());
    return current;
  }

  void move() {
    if (c_.failed() || accepted_.empty()) return;
    const auto p = static_cast<int32_t>(w().uniform(0, static_cast<int64_t>(accepted_.size()) - 1));
    const int n = c_.random_serving();
    if (n < 0) return;
    const auto target = target_from(accepted_[p]);
    for (int32_t r : target) {
      if (std::find(ever_[p].begin(), ever_[p].end(), r) == ever_[p].end()) ever_[p].push_back(r);
    }
    w().note("reassign p" + std::to_string(p) + " to " + text(target) + " at n" + std::to_string(n));
    using answer = broker::result<std::vector<broker::partition_reassignment_result>>;
    c_.serving(n)->admin().alter_partition_reassignments(
        {broker::partition_reassignment_target{topic_, p, target}},
        answer_within<answer>(c_, reassignment_call_timeout_ms, [this, p, target](std::optional<answer> a) {
          if (a && a->ok() && a->value().size() == 1 && !a->value()[0].refused) {
            w().note("reassign p" + std::to_string(p) + " accepted");
            ++moves_;
            accepted_[p] = target;   // an older call without an answer may still commit: unknown_ keeps it
          } else if (a && a->ok()) {
            w().note("reassign p" + std::to_string(p) + " refused" +
                     (a->value().empty() ? std::string() : ": " + a->value()[0].refused->message));
          } else {
            w().note("reassign p" + std::to_string(p) + " unknown: " + (a ? a->error().message : std::string("no answer")));
            unknown_[p].push_back(target);
          }
        }));
  }

  sim_cluster& c_;
  std::string topic_;
  std::map<int32_t, std::vector<int32_t>>& ever_;
  std::map<int32_t, std::vector<int32_t>> accepted_;
  std::map<int32_t, std::vector<std::vector<int32_t>>> unknown_;
  int moves_ = 0;
};

}  // namespace ringlog::sim
