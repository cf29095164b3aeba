#pragma once
// The rebalance planner (issue 33): from the metadata image and each partition's size, the
// partition reassignments that spread replicas, preferred leaderships and bytes evenly over the
// brokers, or move every replica off brokers being decommissioned. Pure: no I/O, no clock, no
// randomness; the same inputs give the same plan (ties go to the lowest broker id, then topic name
// and partition).
//
// Rules (Cruise Control's goals and Redpanda's partition balancer are the models, simplified):
// - Brokers that take replicas: registered, unfenced, not in controlled shutdown, not being
//   decommissioned (`placement_brokers`), not in options.unavailable_brokers. A broker being
//   decommissioned or named unavailable keeps none.
// - A partition is moved only when it is safe to: not being reassigned already, with a leader,
//   and with every replica in its ISR, or at least min.insync.replicas in it. The move is
//   KIP-455's: the new replicas are added and catch up before the old ones are removed, so the ISR
//   never shrinks below what it was because of the move (no partition drops under its
//   min.insync.replicas). Partitions left alone are listed in `skipped` with the reason.
// - A move never lowers the number of racks a partition spans (broker.rack; brokers without a rack
//   form one rack of their own): a destination on a rack the partition does not use yet is
//   preferred, then the least loaded.
// - Replica and preferred-leader counts are evened out as far as they go (the busiest and the
//   least busy broker at most one apart): the smallest partitions move, and a leadership moves by
//   putting another replica first (no data moves for it). Bytes are then evened out while a broker
//   is more than the tolerance from the average, each move taking the partition that best closes
//   the gap, keeping counts within their band: fewest bytes moved for the balance asked.
// - Balanced: every broker's replica count and preferred-leader count are within
//   max(1, tolerance x average) of the average, and its bytes within tolerance x average bytes of
//   the average (bytes only when the cluster holds at least rebalance_bytes_floor bytes). The
//   averages are over the brokers that take replicas, of what they can hold: replicas, preferred
//   leaderships and bytes on a fenced broker, one in controlled shutdown or an unregistered one
//   stay where they are (no plan moves them), so they are left out; a draining broker's count in.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ringlog/controller/metadata_image.h"

namespace ringlog::controller {

/// A partition's size on disk in bytes, by (topic, partition); partitions not listed count 0.
using partition_sizes = std::map<std::pair<std::string, int32_t>, uint64_t>;

struct rebalance_options {
  /// Allowed spread around the average, as a fraction of it: 0.0 to 1.0 inclusive.
  double tolerance = 0.1;
  /// min.insync.replicas of a topic (its override, else the brokers' default).
  std::function<int32_t(const std::string& topic)> min_insync_replicas;
  /// Upper bound on the partitions one plan moves (the rest waits for the next plan).
  size_t moves_max = 10'000;
  /// Only move replicas off brokers being decommissioned or unavailable; no balancing (a
  /// decommission's plan, the autobalancer's drain).
  bool drain_only = false;
  /// Brokers the autobalancer takes as gone (continuous mode, autobalancer.h): their replicas move
  /// off as a decommissioning broker's do and they take none, but they stay registered (back,
  /// they hold nothing and a later plan gives them replicas again). Node ids, registered or not.
  std::set<int32_t> unavailable_brokers;
};

/// One partition whose replicas change.
struct rebalance_move {
  std::string topic;
  int32_t partition = 0;
  std::vector<int32_t> replicas;          // now, in order (the first is the preferred leader)
  std::vector<int32_t> target_replicas;   // after the move, the first the preferred leader
  uint64_t size_bytes = 0;
  /// Brokers in target_replicas and not in replicas (they copy size_bytes each).
  [[nodiscard]] std::vector<int32_t> adding_replicas() const;
  /// Brokers in replicas and not in target_replicas.
  [[nodiscard]] std::vector<int32_t> removing_replicas() const;
};

struct rebalance_skip {
  std::string topic;
  int32_t partition = 0;
  std::string reason;   // e.g. "being reassigned", "no leader", "under-replicated: ISR [1] of replicas [1,2,3] is below min.insync.replicas=2"
};

/// One broker's load before and after the plan.
struct broker_load {
  int32_t broker_id = 0;
  std::string rack;       // "" = none
  bool excluded = false;   // being decommissioned (or not usable): it takes no replicas
  /// Why excluded: "decommissioning", "unavailable" (options.unavailable_brokers), "controlled
  /// shutdown", "fenced" or "not registered" (a partition names it); "" when not excluded.
  std::string excluded_reason;
  int32_t replicas_before = 0;
  int32_t replicas_after = 0;
  int32_t leaders_before = 0;   // preferred leaderships (first replica)
  int32_t leaders_after = 0;
  uint64_t bytes_before = 0;
  uint64_t bytes_after = 0;
};

struct rebalance_plan {
  std::vector<rebalance_move> moves;   // by topic, then partition
  std::vector<rebalance_skip> skipped;
  std::vector<broker_load> brokers;    // by broker id: every registered broker and every decommissioning one
  uint64_t bytes_to_move = 0;          // sum over moves of size_bytes x adding replicas
  /// The plan reaches the tolerance (and drains every decommissioning broker); false when safe
  /// moves alone cannot (a partition skipped, too few brokers, racks) or moves_max cut it short.
  bool balanced = false;
  /// Why not balanced, one line per broker and measure (replicas, preferred leaderships, bytes; a
  /// draining broker left holding replicas; a plan cut short), e.g. "broker 4: 0 replicas,
  /// outside 3..4"; empty when balanced.
  std::vector<std::string> imbalances;
  int32_t reassignments_in_progress = 0;   // partitions being reassigned in the image
};

/// Brokers that may take new replicas: registered, unfenced, not shutting down, not decommissioning.
std::vector<int32_t> placement_brokers(const metadata_image& image);

/// Why broker `broker_id` may not start being decommissioned in `image`: a partition listing it
/// has a replication factor larger than the brokers that would still take replicas (names the
/// topic and both numbers); nullopt when it may. Asked by the decommission call and again where a
/// BrokerDecommissionRecord is applied, so two decommissions that each fit alone cannot both pass.
std::optional<std::string> decommission_capacity_refusal(const metadata_image& image, int32_t broker_id);

/// The plan for `image` (see the rules above). Internal topics are planned like the others.
rebalance_plan plan_rebalance(const metadata_image& image, const partition_sizes& sizes, const rebalance_options& options);

}  // namespace ringlog::controller
