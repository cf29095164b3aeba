#pragma once
// Metadata images of a small cluster for the controller's tests (the rebalance planner's, the
// autobalancer's, replication control's): brokers with racks, fenced ones, topics with assignments
// and ISRs, decommissions.

#include <doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "ringlog/controller/metadata_image.h"

namespace ringlog::controller {

inline uuid id_of(uint8_t b) {
  uuid u;
  u.value.fill(b);
  return u;
}

inline protocol::register_broker_record broker(int32_t id, std::string rack = "") {
  protocol::register_broker_record r;
  r.broker_id = id;
  r.broker_epoch = -1;
  r.incarnation_id = id_of(static_cast<uint8_t>(100 + id));
  if (!rack.empty()) r.rack = rack;
  r.fenced = false;
  return r;
}

/// A cluster image: brokers (with racks when given), then topic `name` with `assignments`.
struct cluster {
  std::vector<protocol::metadata_record> records;
  uint8_t next_topic_id = 1;
  void add_broker(int32_t id, std::string rack = "") { records.push_back(broker(id, std::move(rack))); }
  /// Broker `id` registered fenced (missed heartbeats, or never unfenced): it holds replicas but
  /// may lead, join an ISR or take new replicas no more.
  void add_fenced_broker(int32_t id, std::string rack = "") {
    auto r = broker(id, std::move(rack));
    r.fenced = true;
    records.push_back(r);
  }
  void add_topic(const std::string& name, const std::vector<std::vector<int32_t>>& assignments,
                 const std::vector<std::vector<int32_t>>& isrs = {}) {
    protocol::topic_record t;
    t.name = name;
    t.topic_id = id_of(next_topic_id);
    records.push_back(t);
    for (size_t p = 0; p < assignments.size(); ++p) {
      protocol::partition_record r;
      r.topic_id = t.topic_id;
      r.partition_id = static_cast<int32_t>(p);
      r.replicas = assignments[p];
      r.isr = p < isrs.size() ? isrs[p] : assignments[p];
      r.leader = assignments[p].front();
      records.push_back(r);
    }
    ++next_topic_id;
  }
  void decommission(int32_t id, int8_t state) {
    protocol::broker_decommission_record d;
    d.broker_id = id;
    d.state = state;
    records.push_back(d);
  }
  [[nodiscard]] std::shared_ptr<const metadata_image> image() const {
    metadata_image empty;
    metadata_delta delta(empty);
    int64_t offset = 0;
    for (const auto& r : records) REQUIRE(delta.apply(r, ++offset).ok());
    return std::move(delta).image();
  }
};

}  // namespace ringlog::controller
