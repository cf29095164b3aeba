#pragma once
// A REST consumer instance's settings and their record in __consumer_offsets (offsets_codec.h):
// the part of the group service that needs no coordinator (included by group_service_impl.h only).

#include <cmath>
#include <deque>
#include <optional>
#include <set>
#include <string>

#include "group_service.h"
#include "retries.h"
#include "ringlog/group/coordinator_partition.h"

namespace ringlog::broker {
namespace group_service_internal {   // the group service's files only (group_service_impl.h)

/// A consumer instance's REST settings; the membership itself is the coordinator's. An instance
/// joins its group on subscribe or assign (Kafka's consumer joins on subscribe/poll; issue 14
/// item 25), not when created: until then its lease is kept here. The settings and the
/// subscription are a consumer instance record in __consumer_offsets (offsets_codec.h), so a
/// restart keeps them (item 28); an instance whose membership did not survive the restart (a
/// dynamic member) joins again with its subscription on its next call.
struct instance_settings {
  consumer_instance info;
  group::offset_reset auto_offset_reset = group::offset_reset::latest;
  size_t rotation = 0;  // first partition of the next poll, so no partition starves the others
  int64_t session_timeout_ms = 0;  // the lease (consumer.instance.timeout.ms), for expiry messages
  group::join_request join;        // how it joins; member_id is its instance id
  int32_t fetch_min_bytes = 1;
  group::subscription sub;         // what it subscribed to or was assigned (none: nothing yet)
  bool read_committed = false;     // isolation.level=read_committed (KIP-98)
  bool joined = false;             // a member of its group in the coordinator now
  int64_t last_seen_ms = 0;        // its lease while not joined: the last call
  std::optional<delay::retry_policy> retry;   // its nacks' settings; nullopt: the broker's defaults
  /// Records ("<topic>/<partition>@<offset>") it nacked lately, so that a repeated nack (a client
  /// retrying a call whose answer it lost) writes no second copy. Bounded, oldest forgotten first.
  std::set<std::string> nacked;
  std::deque<std::string> nacked_order;
};

/// Nacks an instance remembers (instance_settings::nacked): 10,000 x ~60 bytes per instance.
/// Past it, a repeated nack of an old offset below the committed offset is still recognised.
inline constexpr size_t nacked_remembered_max = 10'000;
/// Records one nack call may name: a poll's worth (each is one fetch and one copy).
inline constexpr size_t nacks_per_call_max = 1'000;

inline std::optional<group::consumer_instance_value::retry_settings> retry_settings_of(const std::optional<delay::retry_policy>& p) {
  if (!p) return std::nullopt;
  return group::consumer_instance_value::retry_settings{
      p->max_delivery_attempts, p->retry_backoff_ms,
      static_cast<int32_t>(std::llround(p->retry_backoff_multiplier * 1000.0)), p->retry_backoff_max_ms,
      p->retry_topic_template, p->dead_letter_topic_template};
}

inline std::optional<delay::retry_policy> retry_policy_of(const std::optional<group::consumer_instance_value::retry_settings>& r) {
  if (!r) return std::nullopt;
  delay::retry_policy p{r->max_delivery_attempts, r->retry_backoff_ms,
                        static_cast<double>(r->retry_backoff_multiplier_milli) / 1000.0, r->retry_backoff_max_ms};
  // Written before the names were settings (version 101): the names were the defaults then.
  if (!r->retry_topic_template.empty()) p.retry_topic_template = r->retry_topic_template;
  if (!r->dead_letter_topic_template.empty()) p.dead_letter_topic_template = r->dead_letter_topic_template;
  return p;
}

inline group::offsets_topic_record instance_record(const instance_settings& s) {
  group::consumer_instance_value v;
  v.client_name = s.join.client_name;
  v.group_instance_id = s.join.group_instance_id;
  v.format = static_cast<int8_t>(s.info.format);
  v.auto_commit_enable = s.info.auto_commit_enable;
  v.request_timeout_ms = s.info.request_timeout_ms;
  v.session_timeout_ms = static_cast<int32_t>(s.session_timeout_ms);
  v.fetch_min_bytes = s.fetch_min_bytes;
  v.auto_offset_reset = s.auto_offset_reset;
  v.assignor = s.join.assignor;
  v.sub = s.sub;
  v.read_committed = s.read_committed;
  v.retry = retry_settings_of(s.retry);
  v.owner = s.info.owner;   // issue 29: only its creator's calls reach it
  return {group::encode_consumer_instance_key(s.info.group_id, s.info.instance_id),
          group::encode_consumer_instance_value(v)};
}

inline group::offsets_topic_record instance_tombstone(const std::string& group_id, const std::string& instance_id) {
  return {group::encode_consumer_instance_key(group_id, instance_id), std::nullopt};
}

/// The settings a consumer instance record holds (a restart); not joined, its lease starting now.
inline instance_settings settings_of(const group::consumer_instance_key& key, const group::consumer_instance_value& v,
                                     int64_t now_ms) {
  instance_settings s;
  s.info = {key.group_id, key.instance_id, static_cast<consumer_format>(v.format), v.auto_commit_enable,
            v.request_timeout_ms, v.owner};
  s.auto_offset_reset = v.auto_offset_reset;
  s.session_timeout_ms = v.session_timeout_ms;
  s.join.client_name = v.client_name;
  s.join.member_id = key.instance_id;
  s.join.group_instance_id = v.group_instance_id;
  s.join.assignor = v.assignor;
  s.join.session_timeout_ms = v.session_timeout_ms;
  s.join.rebalance_timeout_ms = v.session_timeout_ms;
  s.join.auto_offset_reset = v.auto_offset_reset;
  s.fetch_min_bytes = v.fetch_min_bytes;
  s.sub = v.sub;
  s.read_committed = v.read_committed;
  s.retry = retry_policy_of(v.retry);
  s.last_seen_ms = now_ms;
  return s;
}

}  // namespace group_service_internal
}  // namespace ringlog::broker
