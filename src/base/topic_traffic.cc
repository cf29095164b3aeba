#include "ringlog/base/topic_traffic.h"

#include <mutex>

namespace ringlog::base {

namespace {

std::mutex traffic_mutex;
std::map<std::string, topic_traffic_counts, std::less<>> traffic;

topic_traffic_counts& counts_of(std::string_view topic) {
  auto it = traffic.find(topic);
  if (it == traffic.end()) it = traffic.emplace(std::string(topic), topic_traffic_counts{}).first;
  return it->second;
}

}  // namespace

void count_topic_in(std::string_view topic, uint64_t records, uint64_t bytes) {
  std::lock_guard lock(traffic_mutex);
  auto& c = counts_of(topic);
  c.records_in += records;
  c.bytes_in += bytes;
}

void count_topic_out(std::string_view topic, uint64_t records, uint64_t bytes) {
  std::lock_guard lock(traffic_mutex);
  auto& c = counts_of(topic);
  c.records_out += records;
  c.bytes_out += bytes;
}

std::map<std::string, topic_traffic_counts, std::less<>> topic_traffic() {
  std::lock_guard lock(traffic_mutex);
  return traffic;
}

}  // namespace ringlog::base
