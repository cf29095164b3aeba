// Kafka's classic group protocol on the group_coordinator (classic_group.h): JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, the member checks of OffsetCommit, and OffsetDelete. The
// rules follow Kafka's GroupCoordinator (the classic group state machine: Empty ->
// PreparingRebalance -> CompletingRebalance -> Stable) and the protocol guide; where ringlog
// differs it says so.

#include <algorithm>
#include <limits>
#include <set>

#include "ringlog/base/assert.h"
#include "ringlog/group/group_coordinator.h"
#include "ringlog/group/limits.h"

namespace ringlog::group {
namespace {

error err(errc code, std::string message) { return error{code, std::move(message)}; }

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string tp_name(const topic_partition& tp) { return tp.topic + "-" + std::to_string(tp.partition.value()); }

/// The protocol names of `protocols`, in order.
std::vector<std::string> names_of(const std::vector<classic_protocol>& protocols) {
  std::vector<std::string> out;
  for (const auto& p : protocols) out.push_back(p.name);
  return out;
}

bool offers(const std::vector<classic_protocol>& protocols, std::string_view name) {
  return std::any_of(protocols.begin(), protocols.end(), [&](const classic_protocol& p) { return p.name == name; });
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

classic_join_response join_failure(error e, std::string member_id) {
  classic_join_response r;
  r.failure = std::move(e);
  r.member_id = std::move(member_id);
  return r;
}

classic_sync_response sync_failure(error e) {
  classic_sync_response r;
  r.failure = std::move(e);
  return r;
}

result<void> validate_join(std::string_view group_id, const classic_join_request& request) {
  if (group_id.empty() || group_id.size() > limits::group_id_bytes_max) {
    return err(errc::invalid_group_id, "group_id must be 1.." + std::to_string(limits::group_id_bytes_max) +
                                           " bytes (limits::group_id_bytes_max), got " + std::to_string(group_id.size()));
  }
  if (request.group_instance_id &&
      (request.group_instance_id->empty() || request.group_instance_id->size() > limits::group_id_bytes_max)) {
    return err(errc::invalid_group_id, "group.instance.id must be 1.." + std::to_string(limits::group_id_bytes_max) +
                                           " bytes (limits::group_id_bytes_max)");
  }
  if (request.session_timeout_ms < limits::session_timeout_ms_min ||
      request.session_timeout_ms > limits::session_timeout_ms_max) {
    return err(errc::invalid_session_timeout,
               "session.timeout.ms " + std::to_string(request.session_timeout_ms) + " outside [" +
                   std::to_string(limits::session_timeout_ms_min) + ", " +
                   std::to_string(limits::session_timeout_ms_max) +
                   "] (group.min.session.timeout.ms / group.max.session.timeout.ms)");
  }
  if (request.protocol_type.empty() || request.protocols.empty()) {
    return err(errc::inconsistent_group_protocol, "a JoinGroup must name a protocol type and at least one protocol");
  }
  if (request.protocols.size() > limits::classic_protocols_max) {
    return err(errc::inconsistent_group_protocol, "a JoinGroup offers " + std::to_string(request.protocols.size()) +
                                                      " protocols (limits::classic_protocols_max)");
  }
  for (const auto& p : request.protocols) {
    if (p.metadata.size() > limits::classic_metadata_bytes_max) {
      return err(errc::inconsistent_group_protocol, "protocol " + quoted(p.name) + " metadata is " +
                                                        std::to_string(p.metadata.size()) +
                                                        " bytes (limits::classic_metadata_bytes_max)");
    }
  }
  return base::ok_v;
}

}  // namespace

bool group_coordinator::has_classic_members(const group_state_data& g) {
  return g.classic && (!g.classic->members.empty() || !g.classic->pending_members.empty());
}

// ---------------------------------------------------------------------------------------------
// JoinGroup

result<group_coordinator::group_state_data*> group_coordinator::classic_group_for_join(
    std::string_view group_id, const classic_join_request& request) {
  RINGLOG_TRY(validate_join(group_id, request));
  auto git = groups_.find(group_id);
  if (git == groups_.end()) {
    if (!request.member_id.empty()) {
      return err(errc::unknown_member_id, "member " + quoted(request.member_id) + " joins group " + quoted(group_id) +
                                              ", which does not exist: join without a member id");
    }
    if (groups_.size() >= limits::groups_per_coordinator_max) {
      return err(errc::too_many_groups, "coordinator holds " + std::to_string(groups_.size()) +
                                            " groups (limits::groups_per_coordinator_max)");
    }
    git = groups_.emplace(std::string(group_id), group_state_data{}).first;
    git->second.group_id = std::string(group_id);
  }
  group_state_data& g = git->second;
  if (!g.members.empty()) {
    return err(errc::inconsistent_group_protocol,
               "group " + quoted(group_id) + " is a ringlog-managed group (" + std::to_string(g.members.size()) +
                   " REST/WebSocket members, server-side assignor " + std::string(to_string(g.assignor)) +
                   "): a Kafka client cannot join it with the classic protocol; use another group.id");
  }
  if (!g.classic) g.classic.emplace();
  const classic_state& c = *g.classic;
  if (c.members.empty()) return &g;
  if (request.protocol_type != c.protocol_type) {
    return err(errc::inconsistent_group_protocol, "group " + quoted(group_id) + " has protocol type " +
                                                      quoted(c.protocol_type) + ", the member asked for " +
                                                      quoted(request.protocol_type));
  }
  // At least one protocol every other member also offers (Kafka's supportsProtocols).
  std::vector<std::string> common = names_of(request.protocols);
  for (const auto& [id, m] : c.members) {
    if (id == request.member_id) continue;
    std::erase_if(common, [&](const std::string& name) { return !offers(m.protocols, name); });
  }
  if (common.empty()) {
    return err(errc::inconsistent_group_protocol,
               "group " + quoted(group_id) + ": none of the member's protocols (" +
                   join_names(names_of(request.protocols)) + ") is offered by every member" +
                   (c.protocol_name ? " (the group uses " + quoted(*c.protocol_name) + ")" : std::string()));
  }
  return &g;
}

classic_effects group_coordinator::classic_join(std::string_view group_id, const classic_join_request& request,
                                                classic_ticket ticket, int64_t now_ms) {
  classic_effects out;
  auto found = classic_group_for_join(group_id, request);
  if (!found.ok()) {
    out.joins.emplace_back(ticket, join_failure(found.error(), request.member_id));
    return out;
  }
  group_state_data& g = **found;
  classic_state& c = *g.classic;

  if (request.member_id.empty()) {
    // Static membership (KIP-345): a known group.instance.id takes its member over under a new id.
    if (request.group_instance_id) {
      for (auto& [id, old] : c.members) {
        if (old.meta.group_instance_id != request.group_instance_id) continue;
        const std::string old_id = id;
        classic_member m = std::move(old);
        c.members.erase(old_id);
        const error fenced = err(errc::fenced_instance_id, "group.instance.id " + quoted(*request.group_instance_id) +
                                                               " rejoined as a new member; " + quoted(old_id) +
                                                               " is fenced");
        if (m.awaiting_join) out.joins.emplace_back(*m.awaiting_join, join_failure(fenced, old_id));
        if (m.awaiting_sync) out.syncs.emplace_back(*m.awaiting_sync, sync_failure(fenced));
        m.awaiting_join.reset();
        m.awaiting_sync.reset();
        const std::string new_id = next_member_id(g, *request.group_instance_id);
        m.meta.member_id = new_id;
        m.meta.client_id = request.client_id;
        m.meta.client_host = request.client_host;
        m.meta.session_timeout_ms = request.session_timeout_ms;
        m.meta.rebalance_timeout_ms = request.rebalance_timeout_ms;
        m.protocols = request.protocols;
        m.last_heartbeat_ms = now_ms;
        m.awaiting_join = ticket;
        auto& placed = c.members.emplace(new_id, std::move(m)).first->second;
        if (c.leader == old_id) c.leader = new_id;
        if (c.state == group_state::stable && c.protocol_name && offers(request.protocols, *c.protocol_name)) {
          // Nothing the group agreed on changes: no rebalance; the member gets its assignment
          // back from SyncGroup. The leader must not assign again (skip_assignment, KIP-814).
          for (const auto& p : request.protocols) {
            if (p.name == *c.protocol_name) placed.meta.subscription = p.metadata;
          }
          placed.awaiting_join.reset();
          out.joins.emplace_back(ticket, classic_current_join(g, placed, c.leader == new_id));
          classic_persist(g, now_ms, out.records);
          return out;
        }
        if (c.state != group_state::preparing_rebalance) classic_prepare_rebalance(g, now_ms, out);
        classic_maybe_complete_join(g, now_ms, out);
        return out;
      }
    }
    if (c.members.size() + c.pending_members.size() >= limits::group_members_max) {
      out.joins.emplace_back(ticket, join_failure(err(errc::group_max_size_reached,
                                                      "group " + quoted(group_id) + " has " +
                                                          std::to_string(c.members.size()) +
                                                          " members (limits::group_members_max)"),
                                                  ""));
      return out;
    }
    const std::string prefix = request.group_instance_id ? *request.group_instance_id
                               : request.client_id.empty() ? std::string("consumer")
                                                           : request.client_id;
    const std::string new_id = next_member_id(g, prefix.substr(0, std::min<size_t>(prefix.size(), 200)));
    if (request.require_known_member_id && !request.group_instance_id) {
      // KIP-394: the member id is handed out first; only a join with it enters the group, so a
      // client that retries a lost answer does not leave a ghost member behind.
      c.pending_members[new_id] = now_ms + request.session_timeout_ms;
      out.joins.emplace_back(ticket, join_failure(err(errc::member_id_required,
                                                      "join group " + quoted(group_id) + " again with member id " +
                                                          quoted(new_id)),
                                                  new_id));
      return out;
    }
    classic_add_member(g, new_id, request, ticket, now_ms, out);
    return out;
  }

  if (auto p = c.pending_members.find(request.member_id); p != c.pending_members.end()) {
    c.pending_members.erase(p);
    classic_add_member(g, request.member_id, request, ticket, now_ms, out);
    return out;
  }
  auto it = c.members.find(request.member_id);
  if (it == c.members.end()) {
    out.joins.emplace_back(ticket, join_failure(err(errc::unknown_member_id,
                                                    "member " + quoted(request.member_id) + " is not in group " +
                                                        quoted(group_id) + ": it left or its session expired; join "
                                                        "without a member id"),
                                                request.member_id));
    return out;
  }
  classic_member& m = it->second;
  if (m.meta.group_instance_id != request.group_instance_id) {
    out.joins.emplace_back(ticket, join_failure(err(errc::fenced_instance_id,
                                                    "member " + quoted(request.member_id) +
                                                        " joined with another group.instance.id than it holds"),
                                                request.member_id));
    return out;
  }
  const bool same_protocols = m.protocols == request.protocols;
  m.last_heartbeat_ms = now_ms;
  if (c.state == group_state::completing_rebalance && same_protocols) {
    // It lost the answer of this generation's join: the same answer again.
    out.joins.emplace_back(ticket, classic_current_join(g, m, false));
    return out;
  }
  if (c.state == group_state::stable && same_protocols && request.member_id != c.leader) {
    out.joins.emplace_back(ticket, classic_current_join(g, m, false));
    return out;
  }
  if (m.awaiting_join) {
    out.joins.emplace_back(*m.awaiting_join, join_failure(err(errc::rebalance_in_progress,
                                                              "a newer JoinGroup of member " +
                                                                  quoted(request.member_id) + " replaced this one"),
                                                          request.member_id));
  }
  m.protocols = request.protocols;
  m.meta.client_id = request.client_id;
  m.meta.client_host = request.client_host;
  m.meta.session_timeout_ms = request.session_timeout_ms;
  m.meta.rebalance_timeout_ms = request.rebalance_timeout_ms;
  m.awaiting_join = ticket;
  if (c.state != group_state::preparing_rebalance) classic_prepare_rebalance(g, now_ms, out);
  classic_maybe_complete_join(g, now_ms, out);
  return out;
}

void group_coordinator::classic_add_member(group_state_data& g, const std::string& member_id,
                                           const classic_join_request& request, classic_ticket ticket, int64_t now_ms,
                                           classic_effects& out) {
  classic_state& c = *g.classic;
  if (c.members.empty()) c.protocol_type = request.protocol_type;
  classic_member m;
  m.meta.member_id = member_id;
  m.meta.group_instance_id = request.group_instance_id;
  m.meta.client_id = request.client_id;
  m.meta.client_host = request.client_host;
  m.meta.session_timeout_ms = request.session_timeout_ms;
  m.meta.rebalance_timeout_ms = request.rebalance_timeout_ms;
  m.protocols = request.protocols;
  m.awaiting_join = ticket;
  m.last_heartbeat_ms = now_ms;
  c.members.emplace(member_id, std::move(m));
  track_emptiness(g, now_ms);
  if (c.state != group_state::preparing_rebalance) {
    classic_prepare_rebalance(g, now_ms, out);
  } else if (c.join_delay_until_ms >= 0) {
    // Kafka's InitialDelayedJoin: each new member during the first rebalance waits a little
    // longer for the next, never past the rebalance timeout.
    c.join_delay_until_ms = std::min(now_ms + initial_rebalance_delay_ms_, c.rebalance_deadline_ms);
  }
  classic_maybe_complete_join(g, now_ms, out);
}

void group_coordinator::classic_prepare_rebalance(group_state_data& g, int64_t now_ms, classic_effects& out) {
  classic_state& c = *g.classic;
  if (c.state == group_state::completing_rebalance) {
    // The leader's assignment of this generation will not come: waiting SyncGroups rejoin.
    for (auto& [id, m] : c.members) {
      if (m.awaiting_sync) {
        out.syncs.emplace_back(*m.awaiting_sync,
                               sync_failure(err(errc::rebalance_in_progress,
                                                "group " + quoted(g.group_id) + " is rebalancing again: rejoin")));
        m.awaiting_sync.reset();
      }
    }
  }
  for (auto& [id, m] : c.members) m.meta.assignment.clear();
  const bool from_empty = c.state == group_state::empty;
  int64_t rebalance_timeout_ms = 0;
  for (const auto& [id, m] : c.members) rebalance_timeout_ms = std::max<int64_t>(rebalance_timeout_ms, m.meta.rebalance_timeout_ms);
  c.state = group_state::preparing_rebalance;
  c.state_since_ms = now_ms;
  c.rebalance_deadline_ms = now_ms + rebalance_timeout_ms;
  c.join_delay_until_ms = from_empty ? std::min(now_ms + initial_rebalance_delay_ms_, c.rebalance_deadline_ms) : -1;
}

void group_coordinator::classic_maybe_complete_join(group_state_data& g, int64_t now_ms, classic_effects& out) {
  const classic_state& c = *g.classic;
  if (c.state != group_state::preparing_rebalance) return;
  const bool all_joined =
      c.pending_members.empty() &&
      std::all_of(c.members.begin(), c.members.end(), [](const auto& kv) { return kv.second.awaiting_join.has_value(); });
  if ((all_joined && now_ms >= c.join_delay_until_ms) || now_ms >= c.rebalance_deadline_ms) {
    classic_complete_join(g, now_ms, out);
  }
}

void group_coordinator::classic_complete_join(group_state_data& g, int64_t now_ms, classic_effects& out) {
  classic_state& c = *g.classic;
  RINGLOG_ASSERT(c.state == group_state::preparing_rebalance, "a join completes only while preparing a rebalance");
  // Members that did not rejoin within the rebalance timeout are out (Kafka keeps static
  // members here; ringlog removes them too: they join again as a new member).
  std::erase_if(c.members, [](const auto& kv) { return !kv.second.awaiting_join.has_value(); });
  c.rebalance_deadline_ms = -1;
  c.join_delay_until_ms = -1;
  c.state_since_ms = now_ms;
  g.generation = g.generation + 1;
  if (c.members.empty()) {
    c.state = group_state::empty;
    c.protocol_name.reset();
    c.leader.clear();
    classic_persist(g, now_ms, out.records);
    return;
  }
  // The protocol every member offers, chosen by vote: each member votes for the first of its
  // own list that all offer (Kafka's selectProtocol); ties go to the name first in order.
  std::map<std::string, size_t> votes;
  for (const auto& p : c.members.begin()->second.protocols) {
    const bool everyone = std::all_of(c.members.begin(), c.members.end(),
                                      [&](const auto& kv) { return offers(kv.second.protocols, p.name); });
    if (everyone) votes[p.name] = 0;
  }
  RINGLOG_ASSERT(!votes.empty(), "every join checks that one protocol is offered by all members");
  for (const auto& [id, m] : c.members) {
    for (const auto& p : m.protocols) {
      if (auto v = votes.find(p.name); v != votes.end()) {
        ++v->second;
        break;
      }
    }
  }
  auto best = std::max_element(votes.begin(), votes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  c.protocol_name = best->first;
  if (!c.members.contains(c.leader)) c.leader = c.members.begin()->first;
  c.state = group_state::completing_rebalance;
  for (auto& [id, m] : c.members) {  // every subscription first: the leader's answer lists them all
    for (const auto& p : m.protocols) {
      if (p.name == *c.protocol_name) m.meta.subscription = p.metadata;
    }
  }
  for (auto& [id, m] : c.members) {
    m.last_heartbeat_ms = now_ms;
    const classic_ticket ticket = *m.awaiting_join;
    m.awaiting_join.reset();
    out.joins.emplace_back(ticket, classic_current_join(g, m, false));
  }
}

classic_join_response group_coordinator::classic_current_join(const group_state_data& g, const classic_member& m,
                                                              bool skip) const {
  const classic_state& c = *g.classic;
  classic_join_response r;
  r.generation = g.generation;
  r.protocol_type = c.protocol_type;
  r.protocol_name = c.protocol_name;
  r.leader = c.leader;
  r.member_id = m.meta.member_id;
  r.skip_assignment = skip;
  if (m.meta.member_id == c.leader) {
    for (const auto& [id, other] : c.members) {
      r.members.push_back(classic_join_member{id, other.meta.group_instance_id, other.meta.subscription});
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// SyncGroup, Heartbeat, LeaveGroup

classic_effects group_coordinator::classic_sync(std::string_view group_id, const classic_sync_request& request,
                                                classic_ticket ticket, int64_t now_ms) {
  classic_effects out;
  auto fail = [&](errc code, std::string message) {
    out.syncs.emplace_back(ticket, sync_failure(err(code, std::move(message))));
    return out;
  };
  auto git = groups_.find(group_id);
  if (git == groups_.end() || !git->second.classic) {
    return fail(errc::unknown_member_id, "group " + quoted(group_id) + " has no Kafka-protocol members: join first");
  }
  group_state_data& g = git->second;
  classic_state& c = *g.classic;
  auto it = c.members.find(request.member_id);
  if (it == c.members.end()) {
    return fail(errc::unknown_member_id, "member " + quoted(request.member_id) + " is not in group " +
                                             quoted(group_id) + ": it left or its session expired");
  }
  classic_member& m = it->second;
  if (request.group_instance_id && m.meta.group_instance_id != request.group_instance_id) {
    return fail(errc::fenced_instance_id, "member " + quoted(request.member_id) + " does not hold group.instance.id " +
                                              quoted(*request.group_instance_id));
  }
  if (request.generation != g.generation) {
    return fail(errc::illegal_generation, "SyncGroup of member " + quoted(request.member_id) + " names generation " +
                                              std::to_string(request.generation.value()) + ", the group is at " +
                                              std::to_string(g.generation.value()));
  }
  if ((request.protocol_type && *request.protocol_type != c.protocol_type) ||
      (request.protocol_name && request.protocol_name != c.protocol_name)) {
    return fail(errc::inconsistent_group_protocol,
                "SyncGroup names protocol " + request.protocol_type.value_or("") + "/" +
                    request.protocol_name.value_or("") + ", the group uses " + c.protocol_type + "/" +
                    c.protocol_name.value_or(""));
  }
  m.last_heartbeat_ms = now_ms;
  switch (c.state) {
    case group_state::empty:
    case group_state::dead:
      return fail(errc::unknown_member_id, "group " + quoted(group_id) + " is empty");
    case group_state::preparing_rebalance:
      return fail(errc::rebalance_in_progress, "group " + quoted(group_id) + " is rebalancing: rejoin");
    case group_state::stable: {
      classic_sync_response r;
      r.protocol_type = c.protocol_type;
      r.protocol_name = c.protocol_name;
      r.assignment = m.meta.assignment;
      out.syncs.emplace_back(ticket, std::move(r));
      return out;
    }
    case group_state::completing_rebalance: break;
  }
  if (m.awaiting_sync) {
    out.syncs.emplace_back(*m.awaiting_sync, sync_failure(err(errc::rebalance_in_progress,
                                                              "a newer SyncGroup of member " +
                                                                  quoted(request.member_id) + " replaced this one")));
  }
  m.awaiting_sync = ticket;
  if (request.member_id != c.leader) return out;  // answered with the leader's assignment
  for (auto& [id, member] : c.members) member.meta.assignment.clear();
  for (const auto& [id, assignment] : request.assignments) {
    auto target = c.members.find(id);
    if (target == c.members.end()) continue;  // a member gone meanwhile: Kafka ignores it too
    target->second.meta.assignment = assignment.size() <= limits::classic_metadata_bytes_max ? assignment : model::bytes{};
  }
  c.state = group_state::stable;
  c.state_since_ms = now_ms;
  classic_persist(g, now_ms, out.records);
  for (auto& [id, member] : c.members) {
    if (!member.awaiting_sync) continue;
    classic_sync_response r;
    r.protocol_type = c.protocol_type;
    r.protocol_name = c.protocol_name;
    r.assignment = member.meta.assignment;
    out.syncs.emplace_back(*member.awaiting_sync, std::move(r));
    member.awaiting_sync.reset();
  }
  return out;
}

result<void> group_coordinator::classic_heartbeat(std::string_view group_id, std::string_view member_id,
                                                  const std::optional<std::string>& group_instance_id,
                                                  generation_id generation, int64_t now_ms) {
  auto git = groups_.find(group_id);
  if (git == groups_.end() || !git->second.classic) {
    return err(errc::unknown_member_id, "group " + quoted(group_id) + " has no Kafka-protocol members: join first");
  }
  group_state_data& g = git->second;
  classic_state& c = *g.classic;
  auto it = c.members.find(member_id);
  if (it == c.members.end()) {
    return err(errc::unknown_member_id, "member " + quoted(member_id) + " is not in group " + quoted(group_id) +
                                            ": it left or its session expired");
  }
  classic_member& m = it->second;
  if (group_instance_id && m.meta.group_instance_id != group_instance_id) {
    return err(errc::fenced_instance_id, "member " + quoted(member_id) + " does not hold group.instance.id " +
                                             quoted(*group_instance_id));
  }
  if (generation != g.generation) {
    return err(errc::illegal_generation, "heartbeat of member " + quoted(member_id) + " names generation " +
                                             std::to_string(generation.value()) + ", the group is at " +
                                             std::to_string(g.generation.value()));
  }
  m.last_heartbeat_ms = now_ms;
  if (c.state == group_state::preparing_rebalance) {
    return err(errc::rebalance_in_progress, "group " + quoted(group_id) + " is rebalancing: rejoin");
  }
  return base::ok_v;
}

classic_leave_result group_coordinator::classic_leave(std::string_view group_id,
                                                      const std::vector<classic_member_identity>& members,
                                                      int64_t now_ms) {
  classic_leave_result out;
  auto git = groups_.find(group_id);
  for (const auto& who : members) {
    const std::string name = who.group_instance_id ? "group.instance.id " + quoted(*who.group_instance_id)
                                                   : "member " + quoted(who.member_id);
    if (git == groups_.end() || !git->second.classic) {
      out.members.push_back(err(errc::unknown_member_id, name + " is not in group " + quoted(group_id)));
      continue;
    }
    group_state_data& g = git->second;
    classic_state& c = *g.classic;
    std::string id = who.member_id;
    if (who.group_instance_id) {
      auto it = std::find_if(c.members.begin(), c.members.end(), [&](const auto& kv) {
        return kv.second.meta.group_instance_id == who.group_instance_id;
      });
      if (it == c.members.end()) {
        out.members.push_back(err(errc::unknown_member_id, name + " is not in group " + quoted(group_id)));
        continue;
      }
      if (!who.member_id.empty() && who.member_id != it->first) {
        out.members.push_back(err(errc::fenced_instance_id, name + " is held by another member id"));
        continue;
      }
      id = it->first;
    } else if (c.pending_members.erase(who.member_id) > 0) {
      out.members.push_back(std::nullopt);
      classic_maybe_complete_join(g, now_ms, out.effects);
      continue;
    } else if (!c.members.contains(who.member_id)) {
      out.members.push_back(err(errc::unknown_member_id, name + " is not in group " + quoted(group_id)));
      continue;
    }
    classic_remove_member(g, id, err(errc::unknown_member_id, "member " + quoted(id) + " left the group"), now_ms,
                          out.effects);
    out.members.push_back(std::nullopt);
  }
  return out;
}

void group_coordinator::classic_remove_member(group_state_data& g, const std::string& member_id, const error& why,
                                              int64_t now_ms, classic_effects& out) {
  classic_state& c = *g.classic;
  auto it = c.members.find(member_id);
  RINGLOG_ASSERT(it != c.members.end(), "classic_remove_member of a member not in the group");
  if (it->second.awaiting_join) out.joins.emplace_back(*it->second.awaiting_join, join_failure(why, member_id));
  if (it->second.awaiting_sync) out.syncs.emplace_back(*it->second.awaiting_sync, sync_failure(why));
  c.members.erase(it);
  track_emptiness(g, now_ms);
  if (c.leader == member_id) {
    // The next leader: one that is rejoining if any (it will get the member list), else the first.
    auto next = std::find_if(c.members.begin(), c.members.end(),
                             [](const auto& kv) { return kv.second.awaiting_join.has_value(); });
    if (next == c.members.end()) next = c.members.begin();
    c.leader = next == c.members.end() ? std::string() : next->first;
  }
  if (c.state == group_state::stable || c.state == group_state::completing_rebalance) {
    classic_prepare_rebalance(g, now_ms, out);
  }
  classic_maybe_complete_join(g, now_ms, out);
}

classic_effects group_coordinator::classic_tick(int64_t now_ms) {
  classic_effects out;
  for (auto& [gid, g] : groups_) {
    if (!g.classic) continue;
    classic_state& c = *g.classic;
    std::erase_if(c.pending_members, [&](const auto& kv) { return now_ms >= kv.second; });
    // A member with a JoinGroup or SyncGroup outstanding is waiting on the coordinator, not gone.
    auto session_expired = [now_ms](const auto& m) {
      return !m.awaiting_join && !m.awaiting_sync && now_ms >= m.last_heartbeat_ms + m.meta.session_timeout_ms;
    };
    std::vector<std::string> expired;
    for (const auto& [id, m] : c.members) {
      if (session_expired(m)) expired.push_back(id);
    }
    for (const auto& id : expired) {
      // Removing one member may complete a join whose rebalance deadline has passed, and that
      // drops every member that did not rejoin, expired ones included: each is looked up again
      // (a breaker's three JoinGroups of session 34 removed one twice and hit the assertion).
      auto it = c.members.find(id);
      if (it == c.members.end() || !session_expired(it->second)) continue;
      classic_remove_member(g, id,
                            err(errc::unknown_member_id, "member " + quoted(id) + " of group " + quoted(gid) +
                                                             ": session expired (no heartbeat within session.timeout.ms)"),
                            now_ms, out);
    }
    classic_maybe_complete_join(g, now_ms, out);
  }
  forget_groups_never_stored();
  return out;
}

void group_coordinator::forget_groups_never_stored() {
  // A group that holds nothing and never stored anything (made by JoinGroups answered
  // MEMBER_ID_REQUIRED whose members never came back) goes once its pending members expired, as
  // Kafka's cleanupGroupMetadata drops an empty group without offsets. Kept until offsets
  // retention (7 days), a client could fill groups_per_coordinator_max in seconds and lock new
  // groups out (session 41's breaker: 20,000 groups in 1.7 s, nothing written).
  std::erase_if(groups_, [](const auto& entry) {
    const group_state_data& g = entry.second;
    return g.classic && !has_classic_members(g) && g.members.empty() && g.committed.empty() && g.pending_txn.empty() &&
           !g.last_persisted && g.generation == generation_id{0};
  });
}

// ---------------------------------------------------------------------------------------------
// OffsetCommit and OffsetDelete

result<commit_result> group_coordinator::commit_offsets_kafka(std::string_view group_id, std::string_view member_id,
                                                              const std::optional<std::string>& group_instance_id,
                                                              int32_t generation,
                                                              const std::vector<offset_commit>& offsets,
                                                              int64_t now_ms) {
  auto git = groups_.find(group_id);
  if (git == groups_.end()) {
    if (generation < 0) return commit_offsets_standalone(group_id, offsets, now_ms);
    return err(errc::illegal_generation, "group " + quoted(group_id) + " does not exist; a commit naming generation " +
                                             std::to_string(generation) + " needs a member: join first");
  }
  group_state_data& g = git->second;
  // Kafka answers a commit from outside a group with members UNKNOWN_MEMBER_ID, whatever the
  // members' protocol (ClassicGroup and ConsumerGroup.validateOffsetCommit): the committer is no
  // member. INCONSISTENT_GROUP_PROTOCOL is JoinGroup's answer, not OffsetCommit's.
  if (!g.members.empty()) {
    return err(errc::unknown_member_id,
               "member " + quoted(member_id) + " is not in group " + quoted(group_id) + ", a ringlog-managed group (" +
                   std::to_string(g.members.size()) +
                   " REST/WebSocket members): a Kafka client cannot commit to it; nothing was committed");
  }
  const bool classic_members = g.classic && !g.classic->members.empty();
  if (group_instance_id && classic_members) {
    for (const auto& [id, m] : g.classic->members) {
      if (m.meta.group_instance_id == group_instance_id && id != member_id) {
        return err(errc::fenced_instance_id, "group.instance.id " + quoted(*group_instance_id) +
                                                 " is held by another member id; nothing was committed");
      }
    }
  }
  if (generation < 0 && !classic_members) return commit_offsets_standalone(group_id, offsets, now_ms);
  if (classic_members && g.classic->state == group_state::completing_rebalance) {
    return err(errc::rebalance_in_progress, "group " + quoted(group_id) +
                                                " is waiting for its leader's assignment; nothing was committed");
  }
  classic_member* member = nullptr;
  if (classic_members) {
    if (auto it = g.classic->members.find(member_id); it != g.classic->members.end()) member = &it->second;
  }
  if (member == nullptr) {
    return err(errc::unknown_member_id, "member " + quoted(member_id) + " is not in group " + quoted(group_id) +
                                            "; nothing was committed");
  }
  if (generation != g.generation.value()) {
    return err(errc::illegal_generation, "commit of member " + quoted(member_id) + " names generation " +
                                             std::to_string(generation) + ", the group is at " +
                                             std::to_string(g.generation.value()) + "; nothing was committed");
  }
  if (offsets.size() > limits::commit_partitions_max) {
    return err(errc::too_many_partitions, "commit names " + std::to_string(offsets.size()) +
                                              " partitions (limits::commit_partitions_max)");
  }
  for (const auto& c : offsets) {
    if (c.metadata.size() > limits::offset_metadata_bytes_max) {
      return err(errc::offset_metadata_too_large, "commit metadata for " + tp_name(c.partition) + " is " +
                                                      std::to_string(c.metadata.size()) +
                                                      " bytes (limits::offset_metadata_bytes_max)");
    }
  }
  member->last_heartbeat_ms = now_ms;
  commit_result out;
  for (const auto& c : offsets) {
    committed_offset v{c.next_offset, c.metadata, now_ms};
    g.committed[c.partition] = v;
    out.committed[c.partition] = v;
    out.records.push_back(
        offsets_topic_record{encode_offset_commit_key(group_id, c.partition), encode_offset_commit_value(v)});
  }
  return out;
}

result<group_coordinator::offset_delete_result> group_coordinator::delete_offsets(std::string_view group_id,
                                                                                const partition_set& partitions) {
  auto git = groups_.find(group_id);
  if (git == groups_.end()) return err(errc::group_id_not_found, "group " + quoted(group_id) + " does not exist");
  group_state_data& g = git->second;
  if (partitions.size() > limits::commit_partitions_max) {
    return err(errc::too_many_partitions, "OffsetDelete names " + std::to_string(partitions.size()) +
                                              " partitions (limits::commit_partitions_max)");
  }
  // The topics the group's live members consume.
  std::set<std::string> consumed;
  for (const auto& [id, m] : g.members) {
    for (const auto& t : resolve_topics(g, m)) consumed.insert(t);
    for (const auto& tp : m.meta.sub.partitions) consumed.insert(tp.topic);
    for (const auto& tp : m.meta.owned) consumed.insert(tp.topic);
  }
  if (g.classic && !g.classic->members.empty()) {
    if (g.classic->protocol_type != consumer_protocol_type) {
      return err(errc::group_not_empty, "group " + quoted(group_id) + " has members of protocol type " +
                                            quoted(g.classic->protocol_type) + ": its offsets can be deleted only "
                                            "once it is empty");
    }
    for (const auto& [id, m] : g.classic->members) {
      const model::bytes& sub = !m.meta.subscription.empty() || m.protocols.empty() ? m.meta.subscription
                                                                                    : m.protocols.front().metadata;
      if (auto topics = decode_consumer_subscription_topics(sub); topics.ok()) consumed.insert(topics->begin(), topics->end());
      if (auto owned = decode_consumer_assignment(m.meta.assignment); owned.ok()) {
        for (const auto& tp : *owned) consumed.insert(tp.topic);
      }
    }
  }
  offset_delete_result out;
  for (const auto& tp : partitions) {
    if (consumed.contains(tp.topic)) {
      out.partitions[tp] = err(errc::group_subscribed_to_topic, "group " + quoted(group_id) + " consumes topic " +
                                                                    quoted(tp.topic) + ": its offsets stay");
      continue;
    }
    out.partitions[tp] = std::nullopt;
    if (g.committed.erase(tp) > 0) {
      out.records.push_back(offsets_topic_record{encode_offset_commit_key(group_id, tp), std::nullopt});
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// persistence and description

void group_coordinator::classic_persist(group_state_data& g, int64_t now_ms, record_list& out) const {
  const classic_state& c = *g.classic;
  classic_group_metadata meta;
  meta.protocol_type = c.protocol_type;
  meta.generation = g.generation;
  meta.protocol_name = c.protocol_name;
  if (!c.leader.empty()) meta.leader = c.leader;
  meta.current_state_timestamp_ms = now_ms;
  for (const auto& [id, m] : c.members) meta.members.push_back(m.meta);
  model::bytes value = encode_classic_group_metadata_value(meta);
  g.last_persisted = value;
  out.push_back(offsets_topic_record{encode_group_metadata_key(g.group_id), std::move(value)});
}

void group_coordinator::classic_describe(const group_state_data& g, group_description& out) const {
  const classic_state& c = *g.classic;
  out.classic = true;
  out.state = c.members.empty() ? group_state::empty : c.state;
  out.protocol_type = c.protocol_type.empty() ? std::string(consumer_protocol_type) : c.protocol_type;
  out.protocol_name = c.protocol_name;
  out.leader = c.leader;
  const bool consumer = c.protocol_type == consumer_protocol_type;
  for (const auto& [id, m] : c.members) {
    member_description d;
    d.member_id = id;
    d.client_name = m.meta.client_id;
    d.group_instance_id = m.meta.group_instance_id;
    d.generation = g.generation;
    d.last_seen_ms = m.last_heartbeat_ms;
    d.client_host = m.meta.client_host;
    d.member_metadata = !m.meta.subscription.empty() || m.protocols.empty() ? m.meta.subscription
                                                                            : m.protocols.front().metadata;
    d.member_assignment = m.meta.assignment;
    if (consumer) {
      if (auto topics = decode_consumer_subscription_topics(d.member_metadata); topics.ok()) {
        d.sub.kind = subscription_kind::topics;
        d.sub.topics = std::move(topics).value();
      }
      if (auto owned = decode_consumer_assignment(m.meta.assignment); owned.ok()) {
        d.owned = *owned;
        d.target = std::move(owned).value();
      }
    }
    out.members.push_back(std::move(d));
  }
}

}  // namespace ringlog::group
