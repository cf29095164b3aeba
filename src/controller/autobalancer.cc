#include "ringlog/controller/autobalancer.h"

#include <algorithm>

#include "ringlog/controller/constants.h"

namespace ringlog::controller {

namespace {

/// Every broker some partition lists as a replica (a reassignment's adding and removing ones too).
std::set<int32_t> holding_replicas(const metadata_image& image) {
  std::set<int32_t> out;
  for (const auto& [name, topic] : image.topics()) {
    for (const auto& p : topic->partitions) out.insert(p.replicas.begin(), p.replicas.end());
  }
  return out;
}

bool any_reassigning(const metadata_image& image) {
  for (const auto& [name, topic] : image.topics()) {
    for (const auto& p : topic->partitions) {
      if (p.reassigning()) return true;
    }
  }
  return false;
}

bool any_decommissioning(const metadata_image& image) {
  return std::any_of(image.decommissions().begin(), image.decommissions().end(),
                     [](const auto& d) { return d.second == broker_decommission_state::decommissioning; });
}

bool due(int64_t last_ms, int64_t interval_ms, int64_t now_ms) { return last_ms < 0 || now_ms - last_ms >= interval_ms; }

}  // namespace

std::optional<autobalancer_mode> parse_autobalancer_mode(std::string_view text) {
  if (text == "off") return autobalancer_mode::off;
  if (text == "node_add") return autobalancer_mode::node_add;
  if (text == "continuous") return autobalancer_mode::continuous;
  return std::nullopt;
}

std::string_view to_string(autobalancer_mode mode) {
  switch (mode) {
    case autobalancer_mode::off: return "off";
    case autobalancer_mode::node_add: return "node_add";
    case autobalancer_mode::continuous: return "continuous";
  }
  return "off";
}

std::string_view to_string(autobalance_reason reason) {
  switch (reason) {
    case autobalance_reason::none: return "none";
    case autobalance_reason::node_add: return "node_add";
    case autobalance_reason::unavailable: return "unavailable";
    case autobalance_reason::balance: return "balance";
  }
  return "none";
}

std::set<int32_t> unavailable_brokers(const metadata_image& image) {
  std::set<int32_t> out;
  for (const auto& [id, b] : image.brokers()) {
    if (b.fenced || b.in_controlled_shutdown) out.insert(id);
  }
  for (int32_t id : holding_replicas(image)) {
    if (image.find_broker(id) == nullptr) out.insert(id);
  }
  std::erase_if(out, [&image](int32_t id) { return image.decommission_state(id) != broker_decommission_state::none; });
  return out;
}

std::map<int32_t, int64_t> track_unavailable(const metadata_image& image, const std::map<int32_t, int64_t>& since,
                                             int64_t now_ms) {
  std::map<int32_t, int64_t> out;
  for (int32_t id : unavailable_brokers(image)) {
    auto it = since.find(id);
    out[id] = it == since.end() ? now_ms : it->second;
  }
  return out;
}

autobalancer_decision decide_autobalance(const metadata_image& image, const std::map<int32_t, int64_t>& unavailable_since,
                                         const autobalancer_inputs& inputs) {
  autobalancer_decision d;
  if (inputs.mode == autobalancer_mode::off) return d;
  const std::set<int32_t> holding = holding_replicas(image);
  bool unavailable_within_timeout = false;
  for (const auto& [id, since_ms] : unavailable_since) {
    if (inputs.now_ms - since_ms <= inputs.node_availability_timeout_ms) {
      unavailable_within_timeout = true;
    } else if (inputs.mode == autobalancer_mode::continuous && holding.contains(id)) {
      d.unavailable_brokers_draining.insert(id);
    }
  }
  for (const auto& [id, b] : image.brokers()) {
    if (!b.fenced && !b.in_controlled_shutdown && !holding.contains(id) &&
        image.decommission_state(id) == broker_decommission_state::none) {
      d.new_brokers.push_back(id);
    }
  }
  const bool retry_due = due(inputs.last_attempt_ms, constants::autobalancer_retry_interval_ms, inputs.now_ms);
  autobalance_reason wanted = autobalance_reason::none;
  if (!d.unavailable_brokers_draining.empty() && retry_due) {
    wanted = autobalance_reason::unavailable;
  } else if (!d.new_brokers.empty() && retry_due) {
    wanted = autobalance_reason::node_add;
  } else if (inputs.mode == autobalancer_mode::continuous && due(inputs.last_balance_ms, inputs.tick_interval_ms, inputs.now_ms)) {
    if (unavailable_within_timeout) {
      d.waiting = "a broker is unavailable for less than partition.autobalancer.node.availability.timeout.ms";
      return d;
    }
    wanted = autobalance_reason::balance;
  }
  if (wanted == autobalance_reason::none) return d;
  if (any_decommissioning(image)) {
    d.waiting = "a broker is being decommissioned";
  } else if (any_reassigning(image)) {
    d.waiting = "partitions are being reassigned";
  } else {
    d.reason = wanted;
  }
  return d;
}

}  // namespace ringlog::controller
