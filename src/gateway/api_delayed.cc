// The delayed-delivery view over REST (issue 18, docs/delayed-delivery.md): the delay
// schedulers' pending records by due time, the next due time and their lag behind due time. Each
// broker runs the schedulers of the delay partitions it leads; in a cluster the broker asked
// gathers every broker's (each answers for its own, as the group list does) and adds them up.

#include <array>
#include <set>

#include "api_routes.h"
#include "ringlog/base/clock.h"

namespace ringlog::gateway::routes {
namespace {

json scheduler_json(const broker::delay_scheduler_description& d) {
  json counts = json::array();
  for (int64_t n : d.due_counts) counts.push_back(n);
  return {{"topic_name", d.topic},
          {"partition_id", d.partition},
          {"broker_id", d.broker_id},
          {"position", d.position},
          {"read_offset", d.read_offset},
          {"high_watermark", d.high_watermark},
          {"window_records", d.window_records},
          {"unread_records", d.unread_records},
          {"next_due_ms", d.next_due_ms ? json(*d.next_due_ms) : json(nullptr)},
          {"lag_ms", d.lag_ms},
          {"moved_records", d.moved_total},
          {"dropped_records", d.dropped_total},
          {"due_counts", counts},
          {"now_ms", d.now_ms}};
}

int64_t int_of(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

/// The answer: every scheduler and their sums. `schedulers` come from this broker or its peers
/// (the same shape), so the sums are taken from the JSON.
json delayed_records_json(api::call& c, json schedulers, const std::vector<std::string>& unanswered) {
  std::sort(schedulers.begin(), schedulers.end(), [](const json& a, const json& b) {
    return std::make_pair(a.value("topic_name", std::string()), int_of(a, "partition_id")) <
           std::make_pair(b.value("topic_name", std::string()), int_of(b, "partition_id"));
  });
  int64_t window = 0, unread = 0, lag = 0, moved = 0, dropped = 0, now_ms = 0;
  std::optional<int64_t> next_due;
  std::array<int64_t, broker::delay_due_buckets> counts{};
  for (const auto& s : schedulers) {
    window += int_of(s, "window_records");
    unread += int_of(s, "unread_records");
    moved += int_of(s, "moved_records");
    dropped += int_of(s, "dropped_records");
    lag = std::max(lag, int_of(s, "lag_ms"));
    now_ms = std::max(now_ms, int_of(s, "now_ms"));
    if (s.contains("next_due_ms") && s["next_due_ms"].is_number_integer()) {
      const int64_t due = s["next_due_ms"].get<int64_t>();
      next_due = next_due ? std::min(*next_due, due) : due;
    }
    if (s.contains("due_counts") && s["due_counts"].is_array()) {
      for (size_t i = 0; i < counts.size() && i < s["due_counts"].size(); ++i) {
        if (s["due_counts"][i].is_number_integer()) counts[i] += s["due_counts"][i].get<int64_t>();
      }
    }
  }
  if (now_ms == 0) now_ms = base::system_clock().now_ms();   // no scheduler: this broker's time
  // Bucket i holds records due in (bound[i-1], bound[i]] ms from now; the first is "due already",
  // the last has no upper bound.
  json histogram = json::array();
  const auto& bounds = broker::delay_due_bucket_bounds_ms;
  for (size_t i = 0; i < counts.size(); ++i) {
    histogram.push_back({{"due_after_ms", i == 0 ? json(nullptr) : json(bounds[i - 1])},
                         {"due_within_ms", i < bounds.size() ? json(bounds[i]) : json(nullptr)},
                         {"records", counts[i]}});
  }
  json out = {{"kind", "RinglogDelayedRecords"},
              {"metadata", {{"self", c.base_url + "/v3/clusters/" + c.params["cluster_id"] + "/delayed-records"}}},
              {"now_ms", now_ms},
              {"pending_records", window + unread},
              {"window_records", window},
              {"unread_records", unread},
              {"next_due_ms", next_due ? json(*next_due) : json(nullptr)},
              {"lag_ms", lag},
              {"moved_records", moved},
              {"dropped_records", dropped},
              {"due_histogram", histogram},
              {"schedulers", schedulers}};
  // The schedulers of a broker that did not answer are missing: say which.
  if (!unanswered.empty()) out["metadata"]["unanswered_brokers"] = unanswered;
  return out;
}

}  // namespace

void v3_delayed_records(const call_ptr& c) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  // In a cluster: every broker's schedulers (each answers for the delay partitions it leads).
  const bool gathering = ask_every_broker(c, [](api::call& call, std::vector<json> answers, std::vector<std::string> unanswered) {
    json schedulers = json::array();
    std::set<std::pair<std::string, int64_t>> seen;
    for (auto& body : answers) {
      if (!body.contains("schedulers") || !body["schedulers"].is_array()) continue;
      for (auto& s : body["schedulers"]) {
        // A delay partition whose leadership moved a moment ago may be reported twice: keep one.
        if (seen.insert({s.value("topic_name", std::string()), int_of(s, "partition_id")}).second) {
          schedulers.push_back(std::move(s));
        }
      }
    }
    call.respond_json(200, delayed_records_json(call, std::move(schedulers), unanswered));
  });
  if (gathering) return;
  c->broker().describe_delay_schedulers([c](std::vector<broker::delay_scheduler_description> list) {
    c->later([list = std::move(list)](api::call& call) {
      json schedulers = json::array();
      for (const auto& d : list) schedulers.push_back(scheduler_json(d));
      call.respond_json(200, delayed_records_json(call, std::move(schedulers), {}));
    });
  });
}

}  // namespace ringlog::gateway::routes
