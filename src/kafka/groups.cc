// Consumer groups for Kafka clients: the classic group protocol (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup) and OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups,
// DeleteGroups, on the same coordinators and __consumer_offsets as the REST consumers. Each
// handler only translates: request -> broker groups() call -> response; the rules are the
// coordinator's (group::group_coordinator, classic_group.h).

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "handlers.h"
#include "ringlog/group/types.h"

namespace ringlog::kafka::detail {

namespace {

constexpr int16_t group_id_not_found = 69;

/// Kafka's group state names (ConsumerGroupState).
std::string state_name(group::group_state s) {
  switch (s) {
    case group::group_state::empty: return "Empty";
    case group::group_state::preparing_rebalance: return "PreparingRebalance";
    case group::group_state::completing_rebalance: return "CompletingRebalance";
    case group::group_state::stable: return "Stable";
    case group::group_state::dead: return "Dead";
  }
  return "Unknown";
}

/// A member's owned partitions in Kafka's ConsumerProtocol Assignment v0 (int16 version, array of
/// (string topic, array of int32 partition), bytes user_data = null), so Kafka tools that decode
/// DescribeGroups assignments read REST members' partitions too.
bytes consumer_assignment(const group::partition_set& owned) {
  protocol::writer w;
  w.write_int16(0);
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& tp : owned) by_topic[tp.topic].push_back(tp.partition.value());
  w.write_int32(static_cast<int32_t>(by_topic.size()));
  for (const auto& [topic, partitions] : by_topic) {
    (void)w.write_string(topic, false);
    w.write_int32(static_cast<int32_t>(partitions.size()));
    for (int32_t p : partitions) w.write_int32(p);
  }
  w.write_int32(-1);
  return std::move(w).take();
}

/// A member's subscription in Kafka's ConsumerProtocol Subscription v0 (int16 version, array of
/// string topic, bytes user_data = null): its topics, or for a pattern or a manual assignment the
/// topics it owns.
bytes consumer_subscription(const group::member_description& m) {
  std::set<std::string> topics;
  if (m.sub.kind == group::subscription_kind::topics) {
    topics.insert(m.sub.topics.begin(), m.sub.topics.end());
  } else {
    for (const auto& tp : m.owned) topics.insert(tp.topic);
  }
  protocol::writer w;
  w.write_int16(0);
  w.write_int32(static_cast<int32_t>(topics.size()));
  for (const auto& t : topics) (void)w.write_string(t, false);
  w.write_int32(-1);
  return std::move(w).take();
}

}  // namespace

void handle_offset_commit(const request_context& ctx, protocol::offset_commit_request_data request) {
  using response = protocol::offset_commit_response_data;
  // The answer names every partition asked for; it runs after this function returned, so it
  // keeps its own copy of the names.
  std::vector<std::pair<std::string, std::vector<int32_t>>> asked;
  for (const auto& t : request.topics) {
    std::vector<int32_t> partitions;
    for (const auto& p : t.partitions) partitions.push_back(p.partition_index);
    asked.emplace_back(t.name, std::move(partitions));
  }
  // Per partition: UNKNOWN_TOPIC_OR_PARTITION for one the metadata does not hold (not stored, as
  // KafkaApis answers), else the group's answer.
  // READ on the group, then READ on each topic (KafkaApis.handleOffsetCommitRequest): a refused
  // group refuses every partition; a refused topic's partitions are not committed.
  const bool group_allowed = ctx.authorized(security::resource_type::group, request.group_id, security::acl_operation::read);
  std::set<std::string> refused_topics;
  for (const auto& t : request.topics) {
    if (!ctx.authorized(security::resource_type::topic, t.name, security::acl_operation::read)) refused_topics.insert(t.name);
  }
  auto answer = [ctx, asked = std::move(asked), refused_topics](int16_t code,
                                                                const group::partition_map<broker::error>& refused) {
    response out;
    for (const auto& [name, partitions] : asked) {
      response::offset_commit_response_topic rt;
      rt.name = name;
      for (int32_t partition : partitions) {
        response::offset_commit_response_partition rp;
        rp.partition_index = partition;
        auto r = refused.find(model::topic_partition{name, model::partition_id{partition}});
        rp.error_code = code == error_code::group_authorization_failed ? code
                        : refused_topics.contains(name)                 ? error_code::topic_authorization_failed
                        : r != refused.end()                            ? code_of(r->second)
                                                                        : code;
        rt.partitions.push_back(rp);
      }
      out.topics.push_back(std::move(rt));
    }
    ctx.answer(out);
  };
  if (!group_allowed) return answer(error_code::group_authorization_failed, {});
  std::vector<group::offset_commit> offsets;
  for (const auto& t : request.topics) {
    if (refused_topics.contains(t.name)) continue;
    for (const auto& p : t.partitions) {
      offsets.push_back(group::offset_commit{model::topic_partition{t.name, model::partition_id{p.partition_index}},
                                             model::offset{p.committed_offset}, p.committed_metadata.value_or("")});
    }
  }
  // v0 has no generation: Kafka treats it as a commit outside membership.
  const int32_t generation = ctx.api_version >= 1 ? request.generation_id_or_member_epoch : -1;
  ctx.broker_api().groups().commit_kafka(
      request.group_id, request.member_id, request.group_instance_id, generation, std::move(offsets),
      [answer](broker::result<broker::offset_commit_answer> r) {
        if (!r.ok()) return answer(code_of(r.error()), {});
        answer(error_code::none, r->refused);
      });
}

namespace {

/// One group of an OffsetFetch: one group before v8, a list of groups from v8 (KIP-709).
struct offset_fetch_wanted {
  std::string group_id;
  std::optional<std::vector<std::pair<std::string, std::vector<int32_t>>>> topics;   // nullopt: all
};

template <typename Topics>
offset_fetch_wanted wanted_of(std::string group_id, const std::optional<Topics>& topics) {
  offset_fetch_wanted w{std::move(group_id), std::nullopt};
  if (topics) {
    w.topics.emplace();
    for (const auto& t : *topics) w.topics->emplace_back(t.name, t.partition_indexes);
  }
  return w;
}

/// One partition of an OffsetFetch answer; error: NONE, or UNSTABLE_OFFSET_COMMIT (offset -1).
struct offset_row {
  int32_t partition = 0;
  int64_t offset = -1;
  std::string metadata;
  int16_t error = error_code::none;
};
/// topic -> its partitions' rows
using offset_rows = std::map<std::string, std::vector<offset_row>>;

/// One partition's row (GroupMetadataManager.getOffsets): with require_stable (v7+, KIP-447) a
/// partition that an open transaction's offsets name answers UNSTABLE_OFFSET_COMMIT with offset
/// -1, so the client asks again once the transaction ended instead of reading the older commit;
/// without it (v0-v6, or false) the last committed offset, as Kafka answers.
offset_row offset_row_of(const broker::group_offsets& offsets, const model::topic_partition& tp, bool require_stable) {
  if (require_stable && offsets.unstable.contains(tp)) {
    return offset_row{tp.partition.value(), -1, "", error_code::unstable_offset_commit};
  }
  auto c = offsets.committed.find(tp);
  if (c == offsets.committed.end()) return offset_row{tp.partition.value(), -1, "", error_code::none};
  return offset_row{tp.partition.value(), c->second.committed.value(), c->second.metadata, error_code::none};
}

/// The rows of one group's answer: the partitions asked for, or every committed one (Kafka's
/// group.allOffsets: a partition with only a pending transactional offset is not listed); on a
/// group error only the partitions asked for (v0-v1 carry the error there). DESCRIBE on each
/// topic: an all-topics answer leaves the others out; a named one is returned in `refused` (its
/// partitions answer TOPIC_AUTHORIZATION_FAILED, without offsets).
offset_rows offset_fetch_rows(const request_context& ctx, const offset_fetch_wanted& wanted, int16_t code,
                              const broker::group_offsets& offsets, bool require_stable,
                              std::set<std::string>& refused) {
  offset_rows rows;
  if (wanted.topics) {
    for (const auto& [topic, partitions] : *wanted.topics) {
      auto& row = rows[topic];
      for (int32_t p : partitions) {
        row.push_back(offset_row_of(offsets, model::topic_partition{topic, model::partition_id{p}}, require_stable));
      }
    }
  } else if (code == error_code::none) {
    for (const auto& [tp, c] : offsets.committed) rows[tp.topic].push_back(offset_row_of(offsets, tp, require_stable));
  }
  for (auto it = rows.begin(); it != rows.end();) {
    if (ctx.authorized(security::resource_type::topic, it->first, security::acl_operation::describe)) {
      ++it;
    } else if (wanted.topics) {
      refused.insert(it->first);
      for (auto& r : it->second) r = offset_row{r.partition, -1, "", error_code::none};
      ++it;
    } else {
      it = rows.erase(it);
    }
  }
  return rows;
}

/// Adds one group's rows to the answer in the shape of the request's version. A group error (not
/// the coordinator, GROUP_AUTHORIZATION_FAILED, ...) is the answer's own from v2 and comes with no
/// partitions; v0-v1 have no such field and carry it on every partition asked for, whatever the
/// topic's own authorization (Kafka's OffsetFetchRequest.getErrorResponse). UNSTABLE_OFFSET_COMMIT
/// is a partition's error in every version (v7's top-level error and v8's group error stay NONE:
/// Kafka's OffsetFetchResponse lists it under partition errors).
void add_offset_fetch_group(const request_context& ctx, protocol::offset_fetch_response_data& out,
                            const std::string& group_id, int16_t code, const offset_rows& rows,
                            const std::set<std::string>& refused) {
  using response = protocol::offset_fetch_response_data;
  if (ctx.api_version < 8) {
    out.error_code = code;
    if (code != error_code::none && ctx.api_version >= 2) return;
    for (const auto& [topic, partitions] : rows) {
      response::offset_fetch_response_topic t;
      t.name = topic;
      for (const auto& r : partitions) {
        response::offset_fetch_response_partition rp;
        rp.partition_index = r.partition;
        rp.committed_offset = r.offset;
        rp.committed_leader_epoch = -1;
        rp.metadata = r.metadata;
        const bool topic_refused = code == error_code::none && refused.contains(topic);
        rp.error_code = topic_refused ? error_code::topic_authorization_failed : code != error_code::none ? code : r.error;
        t.partitions.push_back(std::move(rp));
      }
      out.topics.push_back(std::move(t));
    }
    return;
  }
  response::offset_fetch_response_group rg;
  rg.group_id = group_id;
  rg.error_code = code;
  for (const auto& [topic, partitions] : rows) {
    if (code != error_code::none) break;
    response::offset_fetch_response_topics t;
    t.name = topic;
    for (const auto& r : partitions) {
      response::offset_fetch_response_partitions rp;
      rp.partition_index = r.partition;
      rp.committed_offset = r.offset;
      rp.committed_leader_epoch = -1;
      rp.metadata = r.metadata;
      rp.error_code = refused.contains(topic) ? error_code::topic_authorization_failed : r.error;
      t.partitions.push_back(std::move(rp));
    }
    rg.topics.push_back(std::move(t));
  }
  out.groups.push_back(std::move(rg));
}

}  // namespace

void handle_offset_fetch(const request_context& ctx, protocol::offset_fetch_request_data request) {
  std::vector<offset_fetch_wanted> groups;
  if (ctx.api_version < 8) {
    groups.push_back(wanted_of(request.group_id, request.topics));
  } else {
    for (const auto& g : request.groups) groups.push_back(wanted_of(g.group_id, g.topics));
  }
  // Each group's committed offsets, or the error of asking for them: a broker that is not the
  // group's coordinator (or is still loading it) answers NOT_COORDINATOR /
  // COORDINATOR_LOAD_IN_PROGRESS as Kafka does, so the client finds the coordinator again; an
  // answer of "no committed offset" there would send it back to auto.offset.reset.
  // require_stable is v7+ (KIP-447): older versions read 0 (false) and get the last commit.
  const bool require_stable = ctx.api_version >= 7 && request.require_stable;
  using fetched = std::pair<int16_t, broker::group_offsets>;
  auto g = std::make_shared<gather<fetched>>(groups.size(), [ctx, groups, require_stable](std::vector<fetched>& found) {
    protocol::offset_fetch_response_data out;
    for (size_t i = 0; i < groups.size(); ++i) {
      std::set<std::string> refused;
      const auto rows = offset_fetch_rows(ctx, groups[i], found[i].first, found[i].second, require_stable, refused);
      add_offset_fetch_group(ctx, out, groups[i].group_id, found[i].first, rows, refused);
    }
    ctx.answer(out);
  });
  for (size_t i = 0; i < groups.size(); ++i) {
    // DESCRIBE on the group (KafkaApis.handleOffsetFetchRequest); its topics are filtered above.
    if (!ctx.authorized(security::resource_type::group, groups[i].group_id, security::acl_operation::describe)) {
      g->slot(i) = {error_code::group_authorization_failed, {}};
      g->complete_one();
      continue;
    }
    ctx.broker_api().groups().fetch_offsets(groups[i].group_id, [g, i](broker::result<broker::group_offsets> r) {
      if (r.ok()) {
        g->slot(i) = {error_code::none, std::move(r).value()};
      } else {
        // The code is read out of the result before the slot is written (the slot's offsets stay
        // empty): GCC 12's -Wmaybe-uninitialized, an error here, flagged code_of(r.error())
        // inside the brace-initialized pair written to the slot.
        const int16_t code = code_of(r.error());
        g->slot(i).first = code;
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

void handle_list_groups(const request_context& ctx, protocol::list_groups_request_data request) {
  // DESCRIBE on the cluster lists every group; else only those the principal may DESCRIBE
  // (KafkaApis.handleListGroupsRequest: filtered, never refused).
  const bool all_groups = ctx.authorized_cluster(security::acl_operation::describe);
  ctx.broker_api().groups().list_groups([ctx, all_groups, filter = request.states_filter](
                                            broker::result<std::vector<group::group_listing>> r) {
    protocol::list_groups_response_data out;
    if (!r.ok()) {
      out.error_code = code_of(r.error());
      return ctx.answer(out);
    }
    for (const auto& listed : r.value()) {
      const std::string state = state_name(listed.state);
      if (!filter.empty() && std::find(filter.begin(), filter.end(), state) == filter.end()) continue;
      if (!all_groups &&
          !ctx.authorized(security::resource_type::group, listed.group_id, security::acl_operation::describe)) {
        continue;
      }
      protocol::list_groups_response_data::listed_group lg;
      lg.group_id = listed.group_id;
      lg.protocol_type = listed.protocol_type;
      lg.group_state = state;
      lg.group_type = "classic";
      out.groups.push_back(std::move(lg));
    }
    ctx.answer(out);
  });
}

void handle_describe_groups(const request_context& ctx, protocol::describe_groups_request_data request) {
  using described = protocol::describe_groups_response_data::described_group;
  const bool operations = ctx.api_version >= 3 && request.include_authorized_operations;
  auto g = std::make_shared<gather<described>>(request.groups.size(), [ctx, operations](std::vector<described>& found) {
    protocol::describe_groups_response_data out;
    out.groups = std::move(found);
    for (auto& d : out.groups) {
      if (operations && d.error_code != error_code::group_authorization_failed) {
        d.authorized_operations = ctx.authorized_operations(security::resource_type::group, d.group_id);
      }
    }
    ctx.answer(out);
  });
  for (size_t i = 0; i < request.groups.size(); ++i) {
    g->slot(i).group_id = request.groups[i];
    if (!ctx.authorized(security::resource_type::group, request.groups[i], security::acl_operation::describe)) {
      g->slot(i).error_code = error_code::group_authorization_failed;
      g->complete_one();
      continue;
    }
    ctx.broker_api().groups().describe_group(request.groups[i], [g, i](broker::result<broker::group_details> r) {
      described& d = g->slot(i);
      if (!r.ok()) {
        d.error_code = code_of(r.error());
      } else {
        const auto& desc = r->description;
        d.group_state = state_name(desc.state);
        if (desc.classic) {
          // Kafka clients' group: the protocol their members chose, and their own bytes.
          d.protocol_type = desc.protocol_type;
          d.protocol_data = desc.protocol_name.value_or("");
        } else if (desc.state != group::group_state::dead) {
          // REST/WebSocket groups: the server-side assignor stands where a classic group names
          // the protocol its leader chose.
          d.protocol_type = "consumer";
          d.protocol_data = std::string(group::to_string(desc.assignor));
        }
        for (const auto& m : desc.members) {
          protocol::describe_groups_response_data::described_group_member dm;
          dm.member_id = m.member_id;
          dm.group_instance_id = m.group_instance_id;
          dm.client_id = m.client_name;
          dm.client_host = m.client_host;
          dm.member_metadata = desc.classic ? m.member_metadata : consumer_subscription(m);
          dm.member_assignment = desc.classic ? m.member_assignment : consumer_assignment(m.owned);
          d.members.push_back(std::move(dm));
        }
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

void handle_delete_groups(const request_context& ctx, protocol::delete_groups_request_data request) {
  using result_t = protocol::delete_groups_response_data::deletable_group_result;
  auto g = std::make_shared<gather<result_t>>(request.groups_names.size(), [ctx](std::vector<result_t>& results) {
    protocol::delete_groups_response_data out;
    out.results = std::move(results);
    ctx.answer(out);
  });
  for (size_t i = 0; i < request.groups_names.size(); ++i) {
    g->slot(i).group_id = request.groups_names[i];
    if (!ctx.authorized(security::resource_type::group, request.groups_names[i], security::acl_operation::delete_)) {
      g->slot(i).error_code = error_code::group_authorization_failed;
      g->complete_one();
      continue;
    }
    ctx.broker_api().groups().delete_group(request.groups_names[i], [g, i](broker::result<void> r) {
      if (!r.ok()) {
        g->slot(i).error_code =
            r.error().code == broker::errc::group_id_not_found ? group_id_not_found : code_of(r.error());
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

// ---------------------------------------------------------------- the classic group protocol

void handle_join_group(const request_context& ctx, protocol::join_group_request_data request) {
  if (!ctx.authorized(security::resource_type::group, request.group_id, security::acl_operation::read)) {
    protocol::join_group_response_data out;
    out.error_code = error_code::group_authorization_failed;
    out.generation_id = -1;
    out.protocol_name = ctx.api_version >= 7 ? std::nullopt : std::optional<std::string>("");
    return ctx.answer(out);
  }
  group::classic_join_request r;
  r.member_id = request.member_id;
  r.group_instance_id = request.group_instance_id;
  r.client_id = ctx.client_id;
  r.client_host = "/" + ctx.client_host;
  r.session_timeout_ms = request.session_timeout_ms;
  // v0 has no rebalance timeout: Kafka uses the session timeout for both.
  r.rebalance_timeout_ms = ctx.api_version >= 1 && request.rebalance_timeout_ms > 0 ? request.rebalance_timeout_ms
                                                                                   : request.session_timeout_ms;
  r.protocol_type = request.protocol_type;
  for (auto& p : request.protocols) r.protocols.push_back(group::classic_protocol{p.name, std::move(p.metadata)});
  r.require_known_member_id = ctx.api_version >= 4;  // KIP-394
  const std::string group_id = request.group_id;
  ctx.broker_api().groups().join_group(group_id, std::move(r), [ctx](broker::join_group_answer a) {
    protocol::join_group_response_data out;
    out.error_code = a.failure ? code_of(*a.failure) : error_code::none;
    out.generation_id = a.data.generation.value();
    if (!a.failure) out.protocol_type = a.data.protocol_type;
    // Null only from v7 (nullable there); before, an empty string.
    out.protocol_name = a.data.protocol_name ? a.data.protocol_name
                        : ctx.api_version >= 7 ? std::nullopt
                                               : std::optional<std::string>("");
    out.leader = a.data.leader;
    out.skip_assignment = a.data.skip_assignment && ctx.api_version >= 9;
    out.member_id = a.data.member_id;
    for (auto& m : a.data.members) {
      protocol::join_group_response_data::join_group_response_member rm;
      rm.member_id = m.member_id;
      rm.group_instance_id = m.group_instance_id;
      rm.metadata = std::move(m.metadata);
      out.members.push_back(std::move(rm));
    }
    ctx.answer(out);
  });
}

void handle_sync_group(const request_context& ctx, protocol::sync_group_request_data request) {
  if (!ctx.authorized(security::resource_type::group, request.group_id, security::acl_operation::read)) {
    protocol::sync_group_response_data out;
    out.error_code = error_code::group_authorization_failed;
    return ctx.answer(out);
  }
  group::classic_sync_request r;
  r.member_id = request.member_id;
  r.group_instance_id = request.group_instance_id;
  r.generation = group::generation_id(request.generation_id);
  r.protocol_type = request.protocol_type;
  r.protocol_name = request.protocol_name;
  for (auto& a : request.assignments) r.assignments.emplace_back(a.member_id, std::move(a.assignment));
  ctx.broker_api().groups().sync_group(request.group_id, std::move(r), [ctx](broker::sync_group_answer a) {
    protocol::sync_group_response_data out;
    out.error_code = a.failure ? code_of(*a.failure) : error_code::none;
    if (!a.failure) {
      out.protocol_type = a.data.protocol_type;
      out.protocol_name = a.data.protocol_name;
      out.assignment = std::move(a.data.assignment);
    }
    ctx.answer(out);
  });
}

void handle_heartbeat(const request_context& ctx, protocol::heartbeat_request_data request) {
  if (!ctx.authorized(security::resource_type::group, request.group_id, security::acl_operation::read)) {
    protocol::heartbeat_response_data out;
    out.error_code = error_code::group_authorization_failed;
    return ctx.answer(out);
  }
  ctx.broker_api().groups().heartbeat_group(request.group_id, request.member_id, request.group_instance_id,
                                            request.generation_id, [ctx](broker::result<void> r) {
                                              protocol::heartbeat_response_data out;
                                              out.error_code = r.ok() ? error_code::none : code_of(r.error());
                                              ctx.answer(out);
                                            });
}

void handle_leave_group(const request_context& ctx, protocol::leave_group_request_data request) {
  if (!ctx.authorized(security::resource_type::group, request.group_id, security::acl_operation::read)) {
    protocol::leave_group_response_data out;
    out.error_code = error_code::group_authorization_failed;
    return ctx.answer(out);
  }
  // v0-2 name one member; v3+ a list, each by member id and/or group.instance.id (KIP-345).
  std::vector<group::classic_member_identity> members;
  if (ctx.api_version < 3) {
    members.push_back({request.member_id, std::nullopt});
  } else {
    for (const auto& m : request.members) members.push_back({m.member_id, m.group_instance_id});
  }
  ctx.broker_api().groups().leave_group(
      request.group_id, members,
      [ctx, members](broker::result<std::vector<std::optional<broker::error>>> r) {
        protocol::leave_group_response_data out;
        if (!r.ok()) {
          out.error_code = code_of(r.error());
          return ctx.answer(out);
        }
        if (ctx.api_version < 3) {
          const auto& only = r->at(0);
          out.error_code = only ? code_of(*only) : error_code::none;
          return ctx.answer(out);
        }
        for (size_t i = 0; i < members.size(); ++i) {
          protocol::leave_group_response_data::member_response mr;
          mr.member_id = members[i].member_id;
          mr.group_instance_id = members[i].group_instance_id;
          mr.error_code = (*r)[i] ? code_of(*(*r)[i]) : error_code::none;
          out.members.push_back(std::move(mr));
        }
        ctx.answer(out);
      });
}

void handle_offset_delete(const request_context& ctx, protocol::offset_delete_request_data request) {
  // DELETE on the group, then READ on each topic (KafkaApis.handleOffsetDeleteRequest).
  if (!ctx.authorized(security::resource_type::group, request.group_id, security::acl_operation::delete_)) {
    protocol::offset_delete_response_data out;
    out.error_code = error_code::group_authorization_failed;
    return ctx.answer(out);
  }
  group::partition_set partitions;
  std::vector<std::pair<std::string, std::vector<int32_t>>> asked;
  std::set<std::string> refused_topics;
  for (const auto& t : request.topics) {
    std::vector<int32_t> ps;
    const bool allowed = ctx.authorized(security::resource_type::topic, t.name, security::acl_operation::read);
    if (!allowed) refused_topics.insert(t.name);
    for (const auto& p : t.partitions) {
      if (allowed) partitions.insert(model::topic_partition{t.name, model::partition_id{p.partition_index}});
      ps.push_back(p.partition_index);
    }
    asked.emplace_back(t.name, std::move(ps));
  }
  ctx.broker_api().groups().delete_offsets(
      request.group_id, std::move(partitions),
      [ctx, asked, refused_topics](broker::result<group::partition_map<std::optional<broker::error>>> r) {
        protocol::offset_delete_response_data out;
        if (!r.ok()) {
          out.error_code = r.error().code == broker::errc::group_id_not_found ? group_id_not_found
                                                                              : code_of(r.error());
          return ctx.answer(out);
        }
        for (const auto& [name, ps] : asked) {
          protocol::offset_delete_response_data::offset_delete_response_topic t;
          t.name = name;
          for (int32_t p : ps) {
            protocol::offset_delete_response_data::offset_delete_response_partition rp;
            rp.partition_index = p;
            auto e = r->find(model::topic_partition{name, model::partition_id{p}});
            rp.error_code = refused_topics.contains(name)          ? error_code::topic_authorization_failed
                            : e != r->end() && e->second ? code_of(*e->second)
                                                         : error_code::none;
            t.partitions.push_back(rp);
          }
          out.topics.push_back(std::move(t));
        }
        ctx.answer(out);
      });
}

}  // namespace ringlog::kafka::detail
