#include "ringlog/group/group_coordinator.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "ringlog/base/assert.h"
#include "ringlog/group/assignor.h"
#include "ringlog/group/limits.h"
#include "ringlog/model/types.h"

namespace ringlog::group {
namespace {

/// Whether `pattern` quantifies a group that itself holds a quantifier or an alternation, or
/// quantifies a quantifier (`(a+)+`, `((a|aa)*)*`, `(a|a)*`, `a{1,9}{1,9}`): std::regex
/// backtracks, and such patterns take time exponential in the topic name's length (a shard was
/// seen hanging on one). Kafka's Java regex has the same trap; ringlog refuses them by name.
bool has_nested_quantifier(std::string_view pattern) {
  struct group_state {
    bool inner_repeat = false;   // holds a quantifier or '|'
  };
  std::vector<group_state> groups{{}};
  bool last_closed_group_repeats = false;   // the token just before is a group with inner_repeat
  bool last_was_quantifier = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    const bool quantifier = c == '*' || c == '+' || c == '?' || c == '{';
    if (quantifier) {
      // '?' right after a quantifier makes it lazy: not a second quantifier.
      const bool lazy = c == '?' && last_was_quantifier;
      if (!lazy && (last_closed_group_repeats || last_was_quantifier)) return true;
      groups.back().inner_repeat = true;
      if (c == '{') {
        while (i < pattern.size() && pattern[i] != '}') ++i;
      }
      last_closed_group_repeats = false;
      last_was_quantifier = !lazy;
      continue;
    }
    last_was_quantifier = false;
    last_closed_group_repeats = false;
    if (c == '\\') {
      ++i;   // an escaped character is one atom
    } else if (c == '[') {
      ++i;
      if (i < pattern.size() && pattern[i] == ']') ++i;
      while (i < pattern.size() && pattern[i] != ']') i += pattern[i] == '\\' ? 2 : 1;
    } else if (c == '(') {
      groups.push_back({});
    } else if (c == ')' && groups.size() > 1) {
      const bool inner = groups.back().inner_repeat;
      groups.pop_back();
      groups.back().inner_repeat = groups.back().inner_repeat || inner;
      last_closed_group_repeats = inner;
    } else if (c == '|') {
      groups.back().inner_repeat = true;
    }
  }
  return false;
}
}  // namespace
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::string tp_name(const topic_partition& tp) { return tp.topic + "-" + std::to_string(tp.partition.value()); }
std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string gen_name(generation_id g) { return std::to_string(g.value()); }

/// A member with a manual assignment (Kafka's assign()), outside the cooperative protocol.
bool is_manual(const member_metadata& m) { return m.sub.kind == subscription_kind::manual; }

partition_set minus(const partition_set& a, const partition_set& b) {
  partition_set out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()), topic_partition_less{});
  return out;
}

error err(errc code, std::string message) { return error{code, std::move(message)}; }

/// `offsets` with one entry per partition, the last one given for it (as a Kafka client's offsets
/// map keeps one), in the order the partitions first appear: a commit that repeats a partition
/// (one entry per record, as the CLI sent) stores one offset record for it. Bounded by the
/// request, which the callers' limits bound.
std::vector<offset_commit> last_per_partition(const std::vector<offset_commit>& offsets) {
  partition_map<size_t> at;
  std::vector<offset_commit> out;
  for (const auto& o : offsets) {
    auto [it, inserted] = at.try_emplace(o.partition, out.size());
    if (inserted) {
      out.push_back(o);
    } else {
      out[it->second] = o;
    }
  }
  return out;
}

/// A commit names at most limits::commit_partitions_max partitions (`offsets` holds one entry
/// per partition: last_per_partition). Errors: too_many_partitions, naming the bound.
result<void> check_commit_size(const std::vector<offset_commit>& offsets) {
  if (offsets.size() <= limits::commit_partitions_max) return base::ok_v;
  return err(errc::too_many_partitions, "commit names " + std::to_string(offsets.size()) + " partitions, more than " +
                                            std::to_string(limits::commit_partitions_max) +
                                            " (limits::commit_partitions_max)");
}

/// Every commit's metadata within limits::offset_metadata_bytes_max. The offsets themselves are
/// not range-checked: Kafka stores a committed offset as given (negative ones too; readers treat
/// those as none). Errors: offset_metadata_too_large.
result<void> check_commit_metadata(const std::vector<offset_commit>& offsets) {
  for (const auto& c : offsets) {
    if (c.metadata.size() > limits::offset_metadata_bytes_max) {
      return err(errc::offset_metadata_too_large, "commit metadata for " + tp_name(c.partition) + " is " +
                                                      std::to_string(c.metadata.size()) +
                                                      " bytes (limits::offset_metadata_bytes_max)");
    }
  }
  return base::ok_v;
}

result<void> check_name(std::string_view value, const char* field, errc code) {
  if (value.empty() || value.size() > limits::group_id_bytes_max) {
    return err(code, std::string(field) + " must be 1.." + std::to_string(limits::group_id_bytes_max) +
                         " bytes (limits::group_id_bytes_max), got " + std::to_string(value.size()));
  }
  return base::ok_v;
}

result<void> check_timeout(int64_t value, const char* field) {
  if (value < limits::session_timeout_ms_min || value > limits::session_timeout_ms_max) {
    return err(errc::invalid_session_timeout,
               std::string(field) + " " + std::to_string(value) + " outside [" +
                   std::to_string(limits::session_timeout_ms_min) + ", " +
                   std::to_string(limits::session_timeout_ms_max) + "] (limits::session_timeout_ms_min/_max)");
  }
  return base::ok_v;
}

}  // namespace

std::string_view to_string(group_state s) {
  switch (s) {
    case group_state::empty: return "Empty";
    case group_state::preparing_rebalance: return "PreparingRebalance";
    case group_state::completing_rebalance: return "CompletingRebalance";
    case group_state::stable: return "Stable";
    case group_state::dead: return "Dead";
  }
  return "Unknown";
}

std::string_view to_string(assignor_kind k) {
  switch (k) {
    case assignor_kind::range: return "range";
    case assignor_kind::round_robin: return "roundrobin";
    case assignor_kind::cooperative_sticky: return "cooperative-sticky";
  }
  return "unknown";
}

group_coordinator::group_coordinator(uint64_t member_id_seed, int64_t initial_rebalance_delay_ms)
    : member_id_seed_(member_id_seed), initial_rebalance_delay_ms_(initial_rebalance_delay_ms) {
  RINGLOG_ASSERT_OP(initial_rebalance_delay_ms_, >=, int64_t{0});
}

// ---------------------------------------------------------------------------------------------
// lookups and helpers

result<group_coordinator::group_state_data*> group_coordinator::find_group(std::string_view group_id) {
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return err(errc::group_id_not_found, "group '" + std::string(group_id) + "' does not exist");
  return &it->second;
}

result<group_coordinator::member_state*> group_coordinator::find_member(group_state_data& g,
                                                                         std::string_view member_id) {
  auto it = g.members.find(member_id);
  if (it == g.members.end()) {
    return err(errc::unknown_member_id, "member '" + std::string(member_id) + "' is not in group '" + g.group_id +
                                            "' (generation " + gen_name(g.generation) +
                                            "): it left, expired or never joined");
  }
  return &it->second;
}


namespace {
template <typename Member>
result<void> check_session(std::string_view group_id, const Member& m, int64_t now_ms) {
  if (now_ms >= m.last_seen_ms + m.meta.session_timeout_ms) {
    return err(errc::unknown_member_id, "member '" + m.meta.member_id + "' of group '" + std::string(group_id) +
                                            "': session expired (no call for " +
                                            std::to_string(now_ms - m.last_seen_ms) + " ms, session_timeout_ms " +
                                            std::to_string(m.meta.session_timeout_ms) + ")");
  }
  return base::ok_v;
}
}  // namespace

result<std::pair<group_coordinator::group_state_data*, group_coordinator::member_state*>>
group_coordinator::live_member(std::string_view group_id, std::string_view member_id, int64_t now_ms) {
  auto g = find_group(group_id);
  if (!g.ok()) return g.error();
  auto m = find_member(**g, member_id);
  if (!m.ok()) return m.error();
  RINGLOG_TRY(check_session(group_id, **m, now_ms));
  return std::make_pair(*g, *m);
}

result<const group_coordinator::member_state*> group_coordinator::find_member_const(std::string_view group_id,
                                                                                     std::string_view member_id) const {
  auto git = groups_.find(group_id);
  if (git == groups_.end()) return err(errc::group_id_not_found, "group '" + std::string(group_id) + "' does not exist");
  auto it = git->second.members.find(member_id);
  if (it == git->second.members.end()) {
    return err(errc::unknown_member_id, "member '" + std::string(member_id) + "' is not in group '" +
                                            std::string(group_id) + "': it left, expired or never joined");
  }
  return &it->second;
}

std::string group_coordinator::next_member_id(const group_state_data& g, std::string_view client_name) {
  for (size_t attempt = 0; attempt < limits::member_id_attempts_max; ++attempt) {
    const uint64_t hi = splitmix64(member_id_seed_ ^ (2 * member_id_counter_));
    const uint64_t lo = splitmix64(member_id_seed_ ^ (2 * member_id_counter_ + 1));
    ++member_id_counter_;
    char uuid[40];
    std::snprintf(uuid, sizeof uuid, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                  static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
    std::string id = std::string(client_name) + "-" + uuid;
    const bool taken = g.members.contains(id) ||
                       (g.classic && (g.classic->members.contains(id) || g.classic->pending_members.contains(id)));
    if (!taken) return id;
  }
  RINGLOG_ASSERT(false, "no free member id after limits::member_id_attempts_max attempts");
  return {};
}

std::set<std::string> group_coordinator::resolve_topics(const group_state_data& g, const member_state& m) const {
  std::set<std::string> out;
  switch (m.meta.sub.kind) {
    case subscription_kind::topics:
      for (const auto& t : m.meta.sub.topics) out.insert(t);
      break;
    case subscription_kind::pattern:
      RINGLOG_ASSERT(m.pattern.has_value(), "pattern subscription without a compiled regex");
      for (const auto& [topic, count] : topics_) {
        if (model::is_internal_topic(topic) || !std::regex_match(topic, *m.pattern)) continue;
        if (pattern_topic_filter_ && !pattern_topic_filter_(g.group_id, m.meta.member_id, topic)) continue;
        out.insert(topic);
      }
      break;
    case subscription_kind::none:
    case subscription_kind::manual: break;
  }
  return out;
}

group_state group_coordinator::state_of(const group_state_data& g) {
  if (g.classic && !g.classic->members.empty()) return g.classic->state;
  if (g.members.empty()) return group_state::empty;
  bool pending_assignment = false;
  for (const auto& [id, m] : g.members) {
    if (!minus(m.meta.owned, m.meta.target).empty()) return group_state::preparing_rebalance;
    if (m.meta.owned != m.meta.target) pending_assignment = true;
  }
  return pending_assignment ? group_state::completing_rebalance : group_state::stable;
}

// Recomputes every member's target. Bumps the generation when membership or any target changed.
// Manual members stand outside the assignor (Kafka's assign() is outside the group's membership):
// their partitions stay available to the subscribed members, who keep what they were given.
void group_coordinator::rebalance(group_state_data& g, int64_t now_ms, bool membership_changed) {
  std::vector<assignor_member> inputs;
  partition_set available;
  for (auto& [id, m] : g.members) {
    if (is_manual(m.meta)) continue;
    assignor_member in{id, m.meta.group_instance_id, resolve_topics(g, m), m.meta.target};
    for (const auto& topic : in.topics) {
      auto t = topics_.find(topic);
      if (t == topics_.end()) continue;
      for (int32_t p = 0; p < t->second; ++p) available.insert(topic_partition{topic, partition_id(p)});
    }
    inputs.push_back(std::move(in));
  }
  const assignment result = run_assignor(g.assignor, inputs, available);
  bool changed = membership_changed;
  for (auto& [id, m] : g.members) {
    partition_set target;
    if (is_manual(m.meta)) {
      for (const auto& tp : m.meta.sub.partitions) {
        auto t = topics_.find(tp.topic);
        if (t != topics_.end() && tp.partition.value() < t->second) target.insert(tp);
      }
    } else {
      auto it = result.find(id);
      RINGLOG_ASSERT(it != result.end(), "assignor left out a member");
      target = it->second;
    }
    if (target != m.meta.target) changed = true;
    m.meta.target = std::move(target);
    const bool must_revoke = !minus(m.meta.owned, m.meta.target).empty();
    if (!must_revoke) {
      m.revocation_deadline_ms = -1;
    } else if (m.revocation_deadline_ms < 0) {
      m.revocation_deadline_ms = now_ms + m.meta.rebalance_timeout_ms;
    }
  }
  if (changed) g.generation = g.generation + 1;
  g.assignment_stale = false;
}

void group_coordinator::refresh_if_stale(group_state_data& g, int64_t now_ms) {
  if (g.assignment_stale) rebalance(g, now_ms, true);
}

// The member's own call: acknowledge revocations, then take the partitions of its target that
// no other member on its side (subscribed, or manual) owns: a subscribed member's partition is
// no obstacle to a manual one, nor the other way round.
member_assignment group_coordinator::progress(group_state_data& g, member_state& m) {
  member_assignment out;
  out.member_id = m.meta.member_id;
  out.revoked = minus(m.meta.owned, m.meta.target);
  for (const auto& tp : out.revoked) {
    m.meta.owned.erase(tp);
    m.position.erase(tp);
    m.last_returned.erase(tp);
  }
  m.revocation_deadline_ms = -1;
  partition_set owned_by_others;
  for (const auto& [id, other] : g.members) {
    if (&other != &m && is_manual(other.meta) == is_manual(m.meta)) {
      owned_by_others.insert(other.meta.owned.begin(), other.meta.owned.end());
    }
  }
  for (const auto& tp : minus(m.meta.target, m.meta.owned)) {
    if (owned_by_others.contains(tp)) continue;
    m.meta.owned.insert(tp);
    out.assigned.insert(tp);
  }
  m.meta.generation = g.generation;
  out.generation = g.generation;
  out.owned = m.meta.owned;
  out.target = m.meta.target;
  out.pending_revocation = minus(m.meta.owned, m.meta.target);
  out.pending_assignment = minus(m.meta.target, m.meta.owned);
  RINGLOG_ASSERT(out.pending_revocation.empty(), "a member's own call must acknowledge every revocation");
  return out;
}

void group_coordinator::persist(group_state_data& g, record_list& out) const {
  if (g.classic) return;  // a classic group's record is written by classic_persist
  group_metadata meta;
  meta.assignor = g.assignor;
  meta.generation = g.generation;
  for (const auto& [id, m] : g.members) meta.members.push_back(m.meta);
  model::bytes value = encode_group_metadata_value(meta);
  if (g.last_persisted && *g.last_persisted == value) return;
  g.last_persisted = value;
  out.push_back(offsets_topic_record{encode_group_metadata_key(g.group_id), std::move(value)});
}

// ---------------------------------------------------------------------------------------------
// metadata and membership

record_list group_coordinator::set_topics(topic_map topics, int64_t now_ms) {
  topics_ = std::move(topics);
  record_list out;
  for (auto& [id, g] : groups_) {
    if (g.members.empty()) continue;
    rebalance(g, now_ms, g.assignment_stale);
    persist(g, out);
  }
  return out;
}

result<bool> group_coordinator::check_join(std::string_view group_id, const join_request& request,
                                          int64_t now_ms) const {
  RINGLOG_TRY(check_name(group_id, "group_id", errc::invalid_group_id));
  RINGLOG_TRY(check_name(request.client_name, "client_name", errc::invalid_group_id));
  if (request.group_instance_id) {
    RINGLOG_TRY(check_name(*request.group_instance_id, "group_instance_id", errc::invalid_group_id));
  }
  RINGLOG_TRY(check_timeout(request.session_timeout_ms, "session_timeout_ms"));
  RINGLOG_TRY(check_timeout(request.rebalance_timeout_ms, "rebalance_timeout_ms"));
  auto git = groups_.find(group_id);
  if (git == groups_.end()) {
    if (groups_.size() >= limits::groups_per_coordinator_max) {
      return err(errc::too_many_groups, "coordinator holds " + std::to_string(groups_.size()) +
                                            " groups (limits::groups_per_coordinator_max)");
    }
  }
  if (git != groups_.end() && has_classic_members(git->second)) {
    const auto& c = *git->second.classic;
    return err(errc::inconsistent_group_protocol,
               "group '" + std::string(group_id) + "' is a classic group of Kafka clients (" +
                   std::to_string(c.members.size()) + " members, protocol type '" + c.protocol_type +
                   "', assignor '" + c.protocol_name.value_or("") +
                   "' chosen by its leader): REST/WebSocket consumers cannot join it; use another group");
  }
  // Members that stay: a static member with this instance id whose session is over is replaced.
  size_t members = 0;
  if (git != groups_.end()) {
    for (const auto& [id, m] : git->second.members) {
      if (request.group_instance_id && m.meta.group_instance_id == request.group_instance_id) {
        if (now_ms < m.last_seen_ms + m.meta.session_timeout_ms) return true;   // static takeover
        continue;
      }
      ++members;
    }
  }
  if (members > 0 && request.assignor && *request.assignor != git->second.assignor) {
    return err(errc::inconsistent_group_protocol,
               "group '" + git->second.group_id + "' uses assignor " + std::string(to_string(git->second.assignor)) +
                   ", member asked for " + std::string(to_string(*request.assignor)));
  }
  if (members >= limits::group_members_max) {
    return err(errc::group_max_size_reached, "group '" + std::string(group_id) + "' has " + std::to_string(members) +
                                                 " members (limits::group_members_max)");
  }
  if (request.member_id) {
    const std::string& wanted = *request.member_id;
    const bool legal = !wanted.empty() && wanted.size() <= 255 &&
                       std::all_of(wanted.begin(), wanted.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
                       });
    if (!legal) {
      return err(errc::invalid_group_id, "member id '" + wanted + "' must be 1..255 characters of [A-Za-z0-9._-]");
    }
    if (git != groups_.end() && git->second.members.contains(wanted)) {
      return err(errc::duplicate_member_id,
                 "a member named '" + wanted + "' already exists in group '" + std::string(group_id) + "'");
    }
  }
  return false;
}

std::string group_coordinator::new_member_id(std::string_view group_id, std::string_view client_name) {
  static const group_state_data no_group;
  auto git = groups_.find(group_id);
  return next_member_id(git == groups_.end() ? no_group : git->second, client_name);
}

result<join_result> group_coordinator::join(std::string_view group_id, const join_request& request, int64_t now_ms) {
  auto checked = check_join(group_id, request, now_ms);
  if (!checked.ok()) return checked.error();
  auto git = groups_.find(group_id);
  if (git == groups_.end()) {
    git = groups_.emplace(std::string(group_id), group_state_data{}).first;
    git->second.group_id = std::string(group_id);
  }
  group_state_data& g = git->second;
  g.classic.reset();  // check_join refused a group with classic members: this one had none
  refresh_if_stale(g, now_ms);
  join_result out;

  // Static membership (KIP-345): a live member with this instance id is taken over.
  if (request.group_instance_id) {
    for (auto it = g.members.begin(); it != g.members.end(); ++it) {
      member_state& old = it->second;
      if (old.meta.group_instance_id != request.group_instance_id) continue;
      if (now_ms < old.last_seen_ms + old.meta.session_timeout_ms) {
        old.meta.client_name = request.client_name;
        old.meta.session_timeout_ms = static_cast<int32_t>(request.session_timeout_ms);
        old.meta.rebalance_timeout_ms = static_cast<int32_t>(request.rebalance_timeout_ms);
        old.meta.auto_offset_reset = request.auto_offset_reset;
        old.last_seen_ms = now_ms;
        old.position.clear();  // a restarted client starts from the committed offsets
        old.last_returned.clear();
        out.member_id = old.meta.member_id;
        out.static_rejoin = true;
        out.assignment = progress(g, old);
        persist(g, out.records);
        return out;
      }
      g.members.erase(it);  // its session is over: a normal join replaces it (rebalance below)
      break;
    }
  }
  if (g.members.empty()) g.assignor = request.assignor.value_or(assignor_kind::cooperative_sticky);
  member_state m;
  m.meta.member_id = request.member_id ? *request.member_id : next_member_id(g, request.client_name);
  m.meta.group_instance_id = request.group_instance_id;
  m.meta.client_name = request.client_name;
  m.meta.session_timeout_ms = static_cast<int32_t>(request.session_timeout_ms);
  m.meta.rebalance_timeout_ms = static_cast<int32_t>(request.rebalance_timeout_ms);
  m.meta.auto_offset_reset = request.auto_offset_reset;
  m.last_seen_ms = now_ms;
  const std::string id = m.meta.member_id;
  g.members.emplace(id, std::move(m));
  track_emptiness(g, now_ms);
  rebalance(g, now_ms, true);
  out.member_id = id;
  out.assignment = progress(g, g.members.at(id));
  persist(g, out.records);
  return out;
}

result<member_result> group_coordinator::subscribe(std::string_view group_id, std::string_view member_id,
                                                   subscription sub, int64_t now_ms) {
  auto found = live_member(group_id, member_id, now_ms);
  if (!found.ok()) return found.error();
  auto [g, m] = found.value();
  member_state& member = *m;
  if (sub.kind != subscription_kind::topics && sub.kind != subscription_kind::pattern) {
    return err(errc::inconsistent_subscription, "subscribe() takes a topic list or a pattern; use assign() or unsubscribe()");
  }
  if (member.meta.sub.kind == subscription_kind::manual) {
    return err(errc::inconsistent_subscription,
               "member '" + std::string(member_id) +
                   "' has a manual assignment; subscription to topics, partitions and pattern are mutually exclusive");
  }
  std::optional<std::regex> compiled;
  if (sub.kind == subscription_kind::topics) {
    if (sub.topics.size() > limits::subscription_topics_max) {
      return err(errc::too_many_partitions, "subscription lists " + std::to_string(sub.topics.size()) +
                                                " topics (limits::subscription_topics_max)");
    }
    for (const auto& t : sub.topics) {
      RINGLOG_TRY(check_name(t, "topic", errc::unknown_topic_or_partition));
    }
    sub.pattern.clear();
  } else {
    if (sub.pattern.empty() || sub.pattern.size() > limits::pattern_bytes_max) {
      return err(errc::invalid_regular_expression, "pattern must be 1.." + std::to_string(limits::pattern_bytes_max) +
                                                       " bytes (limits::pattern_bytes_max)");
    }
    if (has_nested_quantifier(sub.pattern)) {
      return err(errc::invalid_regular_expression,
                 "pattern '" + sub.pattern + "' repeats a group that holds a repetition or an alternation (or repeats a "
                 "repetition): such patterns take exponential time to match, so they are refused");
    }
    try {  // std::regex reports bad patterns only by throwing; contained here
      compiled.emplace(sub.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return err(errc::invalid_regular_expression, "pattern '" + sub.pattern + "' does not compile: " + e.what());
    }
    sub.topics.clear();
  }
  sub.partitions.clear();
  refresh_if_stale(*g, now_ms);
  member.meta.sub = std::move(sub);
  member.pattern = std::move(compiled);
  member.last_seen_ms = now_ms;
  rebalance(*g, now_ms, false);
  member_result out;
  out.assignment = progress(*g, member);
  persist(*g, out.records);
  return out;
}

result<member_result> group_coordinator::assign(std::string_view group_id, std::string_view member_id,
                                                partition_set partitions, int64_t now_ms) {
  auto found = live_member(group_id, member_id, now_ms);
  if (!found.ok()) return found.error();
  auto [g, m] = found.value();
  member_state& member = *m;
  const auto kind = member.meta.sub.kind;
  if (kind == subscription_kind::topics || kind == subscription_kind::pattern) {
    return err(errc::inconsistent_subscription,
               "member '" + std::string(member_id) +
                   "' is subscribed; subscription to topics, partitions and pattern are mutually exclusive");
  }
  if (partitions.size() > limits::commit_partitions_max) {
    return err(errc::too_many_partitions, "assignment lists " + std::to_string(partitions.size()) +
                                              " partitions (limits::commit_partitions_max)");
  }
  for (const auto& tp : partitions) {
    auto t = topics_.find(tp.topic);
    if (t == topics_.end() || tp.partition.value() < 0 || tp.partition.value() >= t->second) {
      return err(errc::unknown_topic_or_partition, "partition " + tp_name(tp) + " does not exist");
    }
    for (const auto& [id, other] : g->members) {
      if (&other != &member && is_manual(other.meta) &&
          other.meta.sub.partitions.contains(tp)) {
        return err(errc::partition_assigned_elsewhere,
                   "partition " + tp_name(tp) + " is manually assigned to member '" + id + "'");
      }
    }
  }
  refresh_if_stale(*g, now_ms);
  member.meta.sub = subscription{subscription_kind::manual, {}, {}, std::move(partitions)};
  member.pattern.reset();
  member.last_seen_ms = now_ms;
  rebalance(*g, now_ms, false);
  member_result out;
  out.assignment = progress(*g, member);
  persist(*g, out.records);
  return out;
}

result<member_result> group_coordinator::unsubscribe(std::string_view group_id, std::string_view member_id,
                                                     int64_t now_ms) {
  auto found = live_member(group_id, member_id, now_ms);
  if (!found.ok()) return found.error();
  auto [g, m] = found.value();
  refresh_if_stale(*g, now_ms);
  m->meta.sub = subscription{};
  m->pattern.reset();
  m->last_seen_ms = now_ms;
  rebalance(*g, now_ms, false);
  member_result out;
  out.assignment = progress(*g, *m);
  persist(*g, out.records);
  return out;
}

result<member_result> group_coordinator::heartbeat(std::string_view group_id, std::string_view member_id,
                                                   int64_t now_ms) {
  auto found = live_member(group_id, member_id, now_ms);
  if (!found.ok()) return found.error();
  auto [g, m] = found.value();
  refresh_if_stale(*g, now_ms);
  m->last_seen_ms = now_ms;
  member_result out;
  out.assignment = progress(*g, *m);
  persist(*g, out.records);
  return out;
}

result<record_list> group_coordinator::leave(std::string_view group_id, std::string_view member_id, int64_t now_ms) {
  auto g = find_group(group_id);
  if (!g.ok()) return g.error();
  auto m = find_member(**g, member_id);
  if (!m.ok()) return m.error();
  (*g)->members.erase((*m)->meta.member_id);
  track_emptiness(**g, now_ms);
  rebalance(**g, now_ms, true);
  record_list out;
  persist(**g, out);
  return out;
}

expire_result group_coordinator::expire(int64_t now_ms) {
  expire_result out;
  for (auto& [gid, g] : groups_) {
    if (g.classic) continue;  // classic members expire in classic_tick
    bool removed = false;
    for (auto it = g.members.begin(); it != g.members.end();) {
      const member_state& m = it->second;
      const char* reason = nullptr;
      if (now_ms >= m.last_seen_ms + m.meta.session_timeout_ms) {
        reason = "session timeout";
      } else if (m.revocation_deadline_ms >= 0 && now_ms >= m.revocation_deadline_ms) {
        reason = "rebalance timeout";
      }
      if (reason == nullptr) {
        ++it;
        continue;
      }
      out.removed.push_back(expired_member{gid, it->first, reason});
      it = g.members.erase(it);
      removed = true;
    }
    track_emptiness(g, now_ms);
    if (removed || g.assignment_stale) rebalance(g, now_ms, true);
    persist(g, out.records);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// positions and commits

result<std::vector<fetch_position>> group_coordinator::positions_for_fetch(std::string_view group_id,
                                                                           std::string_view member_id) const {
  auto m = find_member_const(group_id, member_id);
  if (!m.ok()) return m.error();
  const auto& g = groups_.find(group_id)->second;
  std::vector<fetch_position> out;
  for (const auto& tp : (*m)->meta.owned) {
    fetch_position fp{tp, fetch_source::position, std::nullopt};
    if (auto p = (*m)->position.find(tp); p != (*m)->position.end()) {
      fp.fetch_offset = p->second;
    } else if (auto c = g.committed.find(tp); c != g.committed.end() && c->second.committed.value() >= 0) {
      // A negative committed offset (Kafka stores what a client commits, e.g. KafkaJS's -2 after
      // a seek past the end) names no record: auto.offset.reset decides, as in Kafka's clients.
      fp.source = fetch_source::committed;
      fp.fetch_offset = c->second.committed;
    } else {
      switch ((*m)->meta.auto_offset_reset) {
        case offset_reset::earliest: fp.source = fetch_source::reset_earliest; break;
        case offset_reset::latest: fp.source = fetch_source::reset_latest; break;
        case offset_reset::none: fp.source = fetch_source::no_offset; break;
      }
    }
    out.push_back(std::move(fp));
  }
  return out;
}

result<void> group_coordinator::record_fetched(std::string_view group_id, std::string_view member_id,
                                               const topic_partition& tp, offset next_offset) {
  return seek(group_id, member_id, tp, next_offset);
}

result<void> group_coordinator::seek(std::string_view group_id, std::string_view member_id, const topic_partition& tp,
                                     offset next_offset) {
  auto g = find_group(group_id);
  if (!g.ok()) return g.error();
  auto m = find_member(**g, member_id);
  if (!m.ok()) return m.error();
  if (next_offset.value() < 0) {
    return err(errc::invalid_offset, "offset " + std::to_string(next_offset.value()) + " for " + tp_name(tp) + " is negative");
  }
  if (!(*m)->meta.owned.contains(tp)) {
    return err(errc::partition_not_owned, "member '" + std::string(member_id) + "' (generation " +
                                              gen_name((*m)->meta.generation) + ") does not own " + tp_name(tp));
  }
  (*m)->position[tp] = next_offset;
  (*m)->last_returned[tp] = next_offset;
  return base::ok_v;
}

result<commit_result> group_coordinator::apply_commit(std::string_view group_id, std::string_view member_id,
                                                      std::optional<generation_id> generation,
                                                      const std::vector<offset_commit>& offsets_given, int64_t now_ms) {
  const std::vector<offset_commit> offsets = last_per_partition(offsets_given);
  auto found = live_member(group_id, member_id, now_ms);
  if (!found.ok()) return found.error();
  auto [g, m] = found.value();
  const member_state& member = *m;
  RINGLOG_TRY(check_commit_size(offsets));
  if (generation && *generation != member.meta.generation) {
    return err(errc::illegal_generation, "commit from member '" + std::string(member_id) + "' names generation " +
                                             gen_name(*generation) + " but the member is at generation " +
                                             gen_name(member.meta.generation) + " (group generation " +
                                             gen_name(g->generation) + "); nothing was committed");
  }
  // Validate everything before applying anything: a commit is all-or-nothing.
  for (const auto& c : offsets) {
    if (!member.meta.owned.contains(c.partition)) {
      return err(errc::partition_not_owned,
                 "commit refused: member '" + std::string(member_id) + "' (generation " +
                     gen_name(member.meta.generation) + ") does not own partition " + tp_name(c.partition) +
                     " of group '" + std::string(group_id) + "' (revoked or never assigned); nothing was committed");
    }
    if (c.metadata.size() > limits::offset_metadata_bytes_max) {
      return err(errc::offset_metadata_too_large, "commit metadata for " + tp_name(c.partition) + " is " +
                                                      std::to_string(c.metadata.size()) +
                                                      " bytes (limits::offset_metadata_bytes_max)");
    }
  }
  m->last_seen_ms = now_ms;
  commit_result out;
  for (const auto& c : offsets) {
    committed_offset v{c.next_offset, c.metadata, now_ms};
    g->committed[c.partition] = v;
    out.committed[c.partition] = v;
    out.records.push_back(
        offsets_topic_record{encode_offset_commit_key(group_id, c.partition), encode_offset_commit_value(v)});
  }
  return out;
}

result<commit_result> group_coordinator::commit_offsets(std::string_view group_id, std::string_view member_id,
                                                        std::optional<generation_id> generation,
                                                        const std::vector<offset_commit>& offsets, int64_t now_ms) {
  return apply_commit(group_id, member_id, generation, offsets, now_ms);
}

result<commit_result> group_coordinator::commit_offsets_standalone(std::string_view group_id,
                                                                   const std::vector<offset_commit>& offsets_given,
                                                                   int64_t now_ms) {
  const std::vector<offset_commit> offsets = last_per_partition(offsets_given);
  RINGLOG_TRY(check_name(group_id, "group_id", errc::invalid_group_id));
  auto git = groups_.find(group_id);
  if (git != groups_.end() && git->second.classic && !git->second.classic->members.empty()) {
    return err(errc::unknown_member_id, "group '" + std::string(group_id) + "' has " +
                                            std::to_string(git->second.classic->members.size()) +
                                            " Kafka-protocol members; a commit without membership (generation -1) "
                                            "is refused while they are in it; nothing was committed");
  }
  if (git != groups_.end() && !git->second.members.empty()) {   // Kafka: UNKNOWN_MEMBER_ID, as above
    return err(errc::unknown_member_id,
               "group '" + std::string(group_id) + "' has " + std::to_string(git->second.members.size()) +
                   " members managed by ringlog (REST/WebSocket consumers); a commit without membership "
                   "(generation -1) is refused while they are in it; nothing was committed");
  }
  RINGLOG_TRY(check_commit_size(offsets));
  if (git == groups_.end() && groups_.size() >= limits::groups_per_coordinator_max) {
    return err(errc::too_many_groups, "coordinator holds " + std::to_string(groups_.size()) +
                                          " groups (limits::groups_per_coordinator_max)");
  }
  RINGLOG_TRY(check_commit_metadata(offsets));
  if (git == groups_.end()) {
    git = groups_.emplace(std::string(group_id), group_state_data{}).first;
    git->second.group_id = std::string(group_id);
    track_emptiness(git->second, now_ms);
  }
  commit_result out;
  for (const auto& c : offsets) {
    committed_offset v{c.next_offset, c.metadata, now_ms};
    git->second.committed[c.partition] = v;
    out.committed[c.partition] = v;
    out.records.push_back(
        offsets_topic_record{encode_offset_commit_key(group_id, c.partition), encode_offset_commit_value(v)});
  }
  return out;
}

result<commit_result> group_coordinator::txn_commit_offsets(std::string_view group_id, std::string_view member_id,
                                                            const std::optional<std::string>& group_instance_id,
                                                            int32_t generation, int64_t producer_id,
                                                            const std::vector<offset_commit>& offsets_given, int64_t now_ms) {
  const std::vector<offset_commit> offsets = last_per_partition(offsets_given);
  RINGLOG_TRY(check_name(group_id, "group_id", errc::invalid_group_id));
  RINGLOG_TRY(check_commit_size(offsets));
  RINGLOG_TRY(check_commit_metadata(offsets));
  auto git = groups_.find(group_id);
  // KIP-447: a producer that names its consumer's member id and generation is fenced like that
  // consumer's own commit would be (a zombie of an earlier generation cannot commit).
  if (git != groups_.end() && generation >= 0 && git->second.classic && !git->second.classic->members.empty()) {
    const group_state_data& g = git->second;
    if (group_instance_id) {
      for (const auto& [id, m] : g.classic->members) {
        if (m.meta.group_instance_id == group_instance_id && id != member_id) {
          return err(errc::fenced_instance_id, "group.instance.id " + quoted(*group_instance_id) +
                                                   " is held by another member id; nothing was committed");
        }
      }
    }
    if (!g.classic->members.contains(std::string(member_id))) {
      return err(errc::unknown_member_id, "member " + quoted(member_id) + " is not in group " + quoted(group_id) +
                                              "; nothing was committed");
    }
    if (generation != g.generation.value()) {
      return err(errc::illegal_generation, "transactional commit of member " + quoted(member_id) +
                                               " names generation " + std::to_string(generation) + ", the group is at " +
                                               std::to_string(g.generation.value()) + "; nothing was committed");
    }
  }
  if (git == groups_.end()) {
    if (groups_.size() >= limits::groups_per_coordinator_max) {
      return err(errc::too_many_groups, "coordinator holds " + std::to_string(groups_.size()) +
                                            " groups (limits::groups_per_coordinator_max)");
    }
    git = groups_.emplace(std::string(group_id), group_state_data{}).first;
    git->second.group_id = std::string(group_id);
    track_emptiness(git->second, now_ms);
  }
  commit_result out;
  auto& pending = git->second.pending_txn[producer_id];
  for (const auto& c : offsets) {
    committed_offset v{c.next_offset, c.metadata, now_ms};
    pending[c.partition] = v;
    out.committed[c.partition] = v;
    out.records.push_back(offsets_topic_record{encode_txn_offset_key(group_id, c.partition, producer_id),
                                               encode_offset_commit_value(v)});
  }
  return out;
}

record_list group_coordinator::complete_txn_offsets(int64_t producer_id, bool committed,
                                                    const std::function<bool(std::string_view)>& belongs,
                                                    int64_t now_ms) {
  (void)now_ms;   // the commit keeps the timestamp of its TxnOffsetCommit, as Kafka's does
  record_list out;
  for (auto& [group_id, g] : groups_) {
    auto pit = g.pending_txn.find(producer_id);
    if (pit == g.pending_txn.end() || !belongs(group_id)) continue;
    for (const auto& [tp, v] : pit->second) {
      if (committed) {
        g.committed[tp] = v;
        out.push_back(offsets_topic_record{encode_offset_commit_key(group_id, tp), encode_offset_commit_value(v)});
      }
      out.push_back(offsets_topic_record{encode_txn_offset_key(group_id, tp, producer_id), std::nullopt});
    }
    g.pending_txn.erase(pit);
  }
  return out;
}

result<commit_result> group_coordinator::commit_processed(std::string_view group_id, std::string_view member_id,
                                                          std::optional<generation_id> generation,
                                                          const std::vector<processed_offset>& offsets, int64_t now_ms) {
  std::vector<offset_commit> next;
  next.reserve(offsets.size());
  for (const auto& p : offsets) {
    // N = -1 stores 0 (nothing processed: read from offset 0). Below -1 the stored N + 1 would be
    // negative, which Confluent's REST proxy refuses too: it hands N + 1 to the Java consumer's
    // commitSync, whose OffsetAndMetadata throws on a negative offset.
    if (p.last_processed.value() < -1) {
      return err(errc::invalid_offset, "commit offset " + std::to_string(p.last_processed.value()) + " for " +
                                           tp_name(p.partition) +
                                           " is below -1: it names the last processed record, and N + 1 is stored");
    }
    // N + 1 must fit: the largest int64 is no record's offset (offsets stay below it).
    if (p.last_processed.value() == std::numeric_limits<int64_t>::max()) {
      return err(errc::invalid_offset, "commit offset " + std::to_string(p.last_processed.value()) + " for " +
                                           tp_name(p.partition) + " is past the largest offset (N + 1 must fit in 64 bits)");
    }
    next.push_back(offset_commit{p.partition, p.last_processed + 1, p.metadata});  // REST v2: N -> N + 1
  }
  return apply_commit(group_id, member_id, generation, next, now_ms);
}

result<commit_result> group_coordinator::commit_returned(std::string_view group_id, std::string_view member_id,
                                                         std::optional<generation_id> generation, int64_t now_ms) {
  auto m = find_member_const(group_id, member_id);
  if (!m.ok()) return m.error();
  std::vector<offset_commit> next;
  for (const auto& [tp, off] : (*m)->last_returned) {
    if ((*m)->meta.owned.contains(tp)) next.push_back(offset_commit{tp, off, ""});
  }
  return apply_commit(group_id, member_id, generation, next, now_ms);
}

result<partition_map<committed_offset>> group_coordinator::committed_offsets(std::string_view group_id) const {
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return err(errc::group_id_not_found, "group '" + std::string(group_id) + "' does not exist");
  return it->second.committed;
}

partition_set group_coordinator::pending_txn_partitions(std::string_view group_id) const {
  partition_set out;
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return out;
  for (const auto& [producer_id, offsets] : it->second.pending_txn) {
    for (const auto& [tp, v] : offsets) out.insert(tp);
  }
  return out;
}

record_list group_coordinator::delete_topic_offsets(std::string_view topic) {
  record_list out;
  for (auto& [gid, g] : groups_) {
    for (auto it = g.committed.begin(); it != g.committed.end();) {
      if (it->first.topic != topic) {
        ++it;
        continue;
      }
      out.push_back(offsets_topic_record{encode_offset_commit_key(gid, it->first), std::nullopt});
      it = g.committed.erase(it);
    }
    for (auto& [mid, m] : g.members) {
      std::erase_if(m.position, [&](const auto& kv) { return kv.first.topic == topic; });
      std::erase_if(m.last_returned, [&](const auto& kv) { return kv.first.topic == topic; });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// persistence

group_coordinator::unloaded_groups group_coordinator::unload_groups(
    const std::function<bool(std::string_view group_id)>& belongs) {
  unloaded_groups out;
  for (const auto& [group_id, g] : groups_) {
    if (!g.classic || !belongs(group_id)) continue;
    for (const auto& [member_id, m] : g.classic->members) {
      if (m.awaiting_join) out.joins.push_back(*m.awaiting_join);
      if (m.awaiting_sync) out.syncs.push_back(*m.awaiting_sync);
    }
  }
  out.groups = std::erase_if(groups_, [&](const auto& entry) { return belongs(entry.first); });
  return out;
}

result<void> group_coordinator::replay(const offsets_topic_record& record, int64_t now_ms) {
  auto key = decode_offsets_topic_key(record.key);
  if (!key.ok()) return key.error();
  // Consumer instance records belong to the broker's REST instances, not to the coordinator.
  if (std::holds_alternative<consumer_instance_key>(*key)) return base::ok_v;
  const std::string& group_id = std::visit([](const auto& k) -> const std::string& { return k.group_id; }, *key);
  auto git = groups_.find(group_id);
  if (!record.value) {
    if (git != groups_.end()) replay_tombstone(*key, git);
    // A group replayed without members is empty since now: retention starts over after a restart.
    if (auto left = groups_.find(group_id); left != groups_.end()) track_emptiness(left->second, now_ms);
    return base::ok_v;
  }
  // Decode before creating anything, so a corrupt record changes nothing.
  std::optional<committed_offset> offset_value;
  std::optional<group_metadata> group_value;
  std::optional<classic_group_metadata> classic_value;
  if (std::holds_alternative<offset_commit_key>(*key) || std::holds_alternative<txn_offset_key>(*key)) {
    auto v = decode_offset_commit_value(*record.value);
    if (!v.ok()) return v.error();
    offset_value = std::move(*v);
  } else if (auto version = group_metadata_value_version(*record.value);
             version.ok() && *version == classic_group_value_version) {
    auto v = decode_classic_group_metadata_value(*record.value);
    if (!v.ok()) return v.error();
    classic_value = std::move(*v);
  } else {
    auto v = decode_group_metadata_value(*record.value);
    if (!v.ok()) return v.error();
    group_value = std::move(*v);
  }
  if (git == groups_.end()) {
    if (groups_.size() >= limits::groups_per_coordinator_max) {
      return err(errc::too_many_groups, "replay would exceed limits::groups_per_coordinator_max");
    }
    git = groups_.emplace(group_id, group_state_data{}).first;
    git->second.group_id = group_id;
  }
  group_state_data& g = git->second;
  track_emptiness(g, now_ms);
  if (const auto* tk = std::get_if<txn_offset_key>(&*key)) {
    g.pending_txn[tk->producer_id][tk->partition] = *offset_value;
    return base::ok_v;
  }
  if (offset_value) {
    g.committed[std::get<offset_commit_key>(*key).partition] = *offset_value;
    return base::ok_v;
  }
  if (classic_value) {
    replay_classic_group(g, std::move(*classic_value), now_ms);
  } else if (auto replayed = replay_group(g, std::move(*group_value), now_ms); !replayed.ok()) {
    return replayed;
  }
  track_emptiness(g, now_ms);
  g.last_persisted = *record.value;
  return base::ok_v;
}

void group_coordinator::replay_tombstone(const offsets_topic_key& key, groups_map::iterator git) {
  if (const auto* ok = std::get_if<offset_commit_key>(&key)) {
    git->second.committed.erase(ok->partition);
  } else if (const auto* tk = std::get_if<txn_offset_key>(&key)) {
    auto pit = git->second.pending_txn.find(tk->producer_id);
    if (pit != git->second.pending_txn.end()) {
      pit->second.erase(tk->partition);
      if (pit->second.empty()) git->second.pending_txn.erase(pit);
    }
  } else {
    git->second.members.clear();
    git->second.classic.reset();
    git->second.last_persisted.reset();
  }
  const auto& g = git->second;
  if (g.members.empty() && g.committed.empty() && g.pending_txn.empty() && !g.last_persisted) groups_.erase(git);
}

void group_coordinator::replay_classic_group(group_state_data& g, classic_group_metadata value, int64_t now_ms) {
  // Kafka's loadGroup: every member comes back (dynamic ones too) with its assignment, the
  // group Stable at its generation, each session starting now; members keep heartbeating and
  // committing as if the coordinator never left.
  g.members.clear();
  g.assignment_stale = false;
  g.generation = value.generation;
  classic_state c;
  c.protocol_type = value.protocol_type;
  c.protocol_name = value.protocol_name;
  c.leader = value.leader.value_or("");
  c.state = value.members.empty() ? group_state::empty : group_state::stable;
  c.state_since_ms = now_ms;
  for (auto& meta : value.members) {
    classic_member m;
    m.protocols.push_back(classic_protocol{c.protocol_name.value_or(""), meta.subscription});
    m.meta = std::move(meta);
    m.last_heartbeat_ms = now_ms;
    const std::string id = m.meta.member_id;
    c.members.emplace(id, std::move(m));
  }
  if (!c.members.empty() && !c.members.contains(c.leader)) c.leader = c.members.begin()->first;
  g.classic = std::move(c);
}

result<void> group_coordinator::replay_group(group_state_data& g, group_metadata value, int64_t now_ms) {
  g.assignor = value.assignor;
  g.generation = value.generation;
  g.classic.reset();
  g.members.clear();
  g.assignment_stale = false;
  for (auto& meta : value.members) {
    if (!meta.group_instance_id) {
      g.assignment_stale = true;  // dynamic members do not survive a restart
      continue;
    }
    member_state m;
    if (meta.sub.kind == subscription_kind::pattern) {
      try {
        m.pattern.emplace(meta.sub.pattern, std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        return err(errc::corrupt_message, "group '" + g.group_id + "': stored pattern does not compile");
      }
    }
    m.meta = std::move(meta);
    m.last_seen_ms = now_ms;
    const std::string id = m.meta.member_id;
    g.members.emplace(id, std::move(m));
  }
  return base::ok_v;
}

// ---------------------------------------------------------------------------------------------
// admin

std::vector<group_listing> group_coordinator::list_groups() const {
  std::vector<group_listing> out;
  for (const auto& [id, g] : groups_) {
    group_listing l{id, state_of(g), g.members.size(), consumer_protocol_type, false};
    if (g.classic) {
      l.classic = true;
      l.member_count = g.classic->members.size();
      if (!g.classic->protocol_type.empty()) l.protocol_type = g.classic->protocol_type;
    }
    out.push_back(std::move(l));
  }
  return out;
}

size_t group_coordinator::managed_member_count(std::string_view group_id) const {
  auto it = groups_.find(group_id);
  return it == groups_.end() ? 0 : it->second.members.size();
}

group_description group_coordinator::describe_group(std::string_view group_id) const {
  group_description out;
  out.group_id = std::string(group_id);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return out;
  const auto& g = it->second;
  out.state = state_of(g);
  out.generation = g.generation;
  out.assignor = g.assignor;
  if (g.classic) {
    classic_describe(g, out);
    return out;
  }
  for (const auto& [id, m] : g.members) {
    subscription sub = m.meta.sub;
    // A pattern's member lists the topics it matches now (the Confluent REST Proxy's GET
    // subscription shows the consumer's matched topics), beside the pattern itself.
    if (sub.kind == subscription_kind::pattern && m.pattern) {
      const std::set<std::string> matched = resolve_topics(g, m);
      sub.topics.assign(matched.begin(), matched.end());
    }
    out.members.push_back(member_description{id, m.meta.client_name, m.meta.group_instance_id, m.meta.generation,
                                             std::move(sub), m.meta.owned, m.meta.target,
                                             minus(m.meta.owned, m.meta.target), m.last_seen_ms, "", {}, {}});
  }
  return out;
}

result<record_list> group_coordinator::delete_group(std::string_view group_id) {
  auto g = find_group(group_id);
  if (!g.ok()) return g.error();
  if (!(*g)->members.empty()) {
    return err(errc::group_not_empty, "group '" + std::string(group_id) + "' has " +
                                          std::to_string((*g)->members.size()) + " members; only empty groups can be deleted");
  }
  if ((*g)->classic && !(*g)->classic->members.empty()) {
    return err(errc::group_not_empty, "group '" + std::string(group_id) + "' has " +
                                          std::to_string((*g)->classic->members.size()) +
                                          " Kafka-protocol members; only empty groups can be deleted");
  }

  record_list out;
  for (const auto& [tp, v] : (*g)->committed) {
    out.push_back(offsets_topic_record{encode_offset_commit_key(group_id, tp), std::nullopt});
  }
  out.push_back(offsets_topic_record{encode_group_metadata_key(group_id), std::nullopt});
  groups_.erase(groups_.find(group_id));
  return out;
}

result<reset_result> group_coordinator::reset_offsets(std::string_view group_id, reset_spec spec,
                                                      const partition_map<partition_offsets>& partitions, dry_run mode,
                                                      int64_t now_ms) {
  RINGLOG_TRY(check_name(group_id, "group_id", errc::invalid_group_id));
  if (partitions.size() > limits::commit_partitions_max) {
    return err(errc::too_many_partitions, "reset names " + std::to_string(partitions.size()) +
                                              " partitions (limits::commit_partitions_max)");
  }
  auto git = groups_.find(group_id);
  if (git != groups_.end() && git->second.classic && !git->second.classic->members.empty()) {
    return err(errc::group_not_empty, "group '" + std::string(group_id) + "' has " +
                                          std::to_string(git->second.classic->members.size()) +
                                          " Kafka-protocol members; offsets can only be reset when the group is inactive");
  }
  if (git != groups_.end() && !git->second.members.empty()) {
    return err(errc::group_not_empty, "group '" + std::string(group_id) + "' has " +
                                          std::to_string(git->second.members.size()) +
                                          " members; offsets can only be reset when the group is inactive");
  }
  if (git == groups_.end() && groups_.size() >= limits::groups_per_coordinator_max && mode == dry_run::no) {
    return err(errc::too_many_groups, "coordinator holds " + std::to_string(groups_.size()) +
                                          " groups (limits::groups_per_coordinator_max)");
  }
  reset_result out;
  for (const auto& [tp, info] : partitions) {
    if (info.log_start_offset.value() < 0 || info.log_start_offset > info.high_watermark) {
      return err(errc::invalid_offset, "partition " + tp_name(tp) + ": log_start_offset " +
                                           std::to_string(info.log_start_offset.value()) + " > high_watermark " +
                                           std::to_string(info.high_watermark.value()));
    }
    const auto clamp = [&](int64_t v) {
      return offset(std::clamp(v, info.log_start_offset.value(), info.high_watermark.value()));
    };
    offset target{0};
    switch (spec.kind) {
      case reset_kind::to_earliest: target = info.log_start_offset; break;
      case reset_kind::to_latest: target = info.high_watermark; break;
      case reset_kind::to_timestamp: target = clamp(info.offset_for_timestamp.value_or(info.high_watermark).value()); break;
      case reset_kind::to_offset: target = clamp(spec.value); break;
      case reset_kind::shift_by: {
        // Kafka's kafka-consumer-groups --shift-by shifts the current committed offset and refuses
        // a partition without one ("Cannot shift offset for partition ... since there is no
        // current committed offset"); a negative one (a Kafka client's -1/-2) is none: the admin
        // client reads it as null, and the group's readers start where auto.offset.reset says.
        std::optional<int64_t> committed;
        if (git != groups_.end()) {
          if (auto c = git->second.committed.find(tp); c != git->second.committed.end()) {
            committed = c->second.committed.value();
          }
        }
        if (!committed || *committed < 0) {
          return err(errc::invalid_offset,
                     "cannot shift the offset of partition " + tp_name(tp) + ": group '" + std::string(group_id) +
                         "' has no committed offset there" +
                         (committed ? " (it committed " + std::to_string(*committed) +
                                          ", which names no record: its readers start by auto.offset.reset)"
                                    : std::string()) +
                         "; reset it to earliest, latest, an offset or a timestamp instead, as Kafka's "
                         "kafka-consumer-groups --shift-by asks");
        }
        const int64_t base_offset = *committed;
        // Saturating: a shift past either end clamps like any other (no signed overflow).
        constexpr int64_t largest = std::numeric_limits<int64_t>::max(), smallest = std::numeric_limits<int64_t>::min();
        const bool past_largest = spec.value > 0 && base_offset > largest - spec.value;
        const bool past_smallest = spec.value < 0 && base_offset < smallest - spec.value;
        target = clamp(past_largest ? largest : past_smallest ? smallest : base_offset + spec.value);
        break;
      }
    }
    out.offsets[tp] = target;
  }
  if (mode == dry_run::yes) return out;
  if (git == groups_.end()) {
    git = groups_.emplace(std::string(group_id), group_state_data{}).first;
    git->second.group_id = std::string(group_id);
    track_emptiness(git->second, now_ms);
  }
  for (const auto& [tp, off] : out.offsets) {
    committed_offset v{off, "", now_ms};
    git->second.committed[tp] = v;
    out.records.push_back(offsets_topic_record{encode_offset_commit_key(group_id, tp), encode_offset_commit_value(v)});
  }
  return out;
}

result<std::vector<partition_lag>> group_coordinator::lag(std::string_view group_id,
                                                          const partition_map<offset>& high_watermarks) const {
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return err(errc::group_id_not_found, "group '" + std::string(group_id) + "' does not exist");
  std::vector<partition_lag> out;
  for (const auto& [tp, hw] : high_watermarks) {
    partition_lag l{tp, std::nullopt, hw, std::nullopt};
    // A negative committed offset names no record (its reader resets by auto.offset.reset): like
    // Kafka's admin client, no committed offset and no lag are reported for it.
    if (auto c = it->second.committed.find(tp); c != it->second.committed.end() && c->second.committed.value() >= 0) {
      l.committed = c->second.committed;
      l.lag = std::max<int64_t>(0, hw - c->second.committed);
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::optional<std::string> group_coordinator::check_invariants() const {
  if (groups_.size() > limits::groups_per_coordinator_max) return "too many groups";
  for (const auto& [gid, g] : groups_) {
    if (g.members.size() > limits::group_members_max) return "group " + gid + ": too many members";
    // One owner and one target per partition on each side: subscribed members ([0]) and manual
    // ones ([1]); a manual member may read a partition a subscribed one owns (Kafka's assign()).
    partition_map<std::string> owner[2];
    partition_map<std::string> target_owner[2];
    for (const auto& [mid, m] : g.members) {
      const bool manual = is_manual(m.meta);
      for (const auto& tp : m.meta.owned) {
        auto [it, fresh] = owner[manual].emplace(tp, mid);
        if (!fresh) return "group " + gid + ": " + tp_name(tp) + " owned by both " + it->second + " and " + mid;
      }
      for (const auto& tp : m.meta.target) {
        auto [it, fresh] = target_owner[manual].emplace(tp, mid);
        if (!fresh) return "group " + gid + ": " + tp_name(tp) + " in the targets of " + it->second + " and " + mid;
      }
      if (manual && !std::includes(m.meta.sub.partitions.begin(), m.meta.sub.partitions.end(), m.meta.target.begin(),
                                   m.meta.target.end(), topic_partition_less{})) {
        return "group " + gid + ": manual member " + mid + " has a target beyond the partitions it assigned itself";
      }
      for (const auto& [tp, off] : m.position) {
        if (!m.meta.owned.contains(tp)) return "group " + gid + ": member " + mid + " has a position for unowned " + tp_name(tp);
      }
      if (m.meta.generation > g.generation) return "group " + gid + ": member " + mid + " ahead of the group generation";
    }
    if (!g.classic) continue;
    const auto& c = *g.classic;
    if (!c.members.empty() && !g.members.empty()) return "group " + gid + ": both classic and ringlog-managed members";
    if (c.members.size() + c.pending_members.size() > limits::group_members_max) return "group " + gid + ": too many classic members";
    if (!c.members.empty() && c.state == group_state::empty) return "group " + gid + ": classic members in an Empty group";
    if (c.members.empty() && c.state != group_state::empty && c.state != group_state::preparing_rebalance) {
      return "group " + gid + ": no classic members but state " + std::string(to_string(c.state));
    }
    if (c.state != group_state::empty && c.state != group_state::preparing_rebalance && !c.members.contains(c.leader)) {
      return "group " + gid + ": leader '" + c.leader + "' is not a member";
    }
    for (const auto& [mid, m] : c.members) {
      if (m.awaiting_join && c.state != group_state::preparing_rebalance) {
        return "group " + gid + ": member " + mid + " awaits a join outside PreparingRebalance";
      }
      if (m.awaiting_sync && c.state != group_state::completing_rebalance) {
        return "group " + gid + ": member " + mid + " awaits a sync outside CompletingRebalance";
      }
    }
  }
  return std::nullopt;
}

}  // namespace ringlog::group
