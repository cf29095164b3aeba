// Consumer groups as far as Kafka clients outside membership need them: OffsetCommit (generation
// -1, no member id: a consumer that assign()s its partitions), OffsetFetch, ListGroups,
// DescribeGroups, DeleteGroups, on the same coordinators and __consumer_offsets as the REST
// consumers. Kafka-protocol membership (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) is not served
// yet, so a commit naming a member or a generation answers UNKNOWN_MEMBER_ID.

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "handlers.h"
#include "ringlog/group/types.h"

namespace ringlog::kafka::detail {

namespace {

constexpr int16_t unknown_member_id = 25;
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
  auto answer_all = [ctx, asked = std::move(asked)](int16_t code) {
    response out;
    for (const auto& [name, partitions] : asked) {
      response::offset_commit_response_topic rt;
      rt.name = name;
      for (int32_t partition : partitions) {
        response::offset_commit_response_partition rp;
        rp.partition_index = partition;
        rp.error_code = code;
        rt.partitions.push_back(rp);
      }
      out.topics.push_back(std::move(rt));
    }
    ctx.answer(out);
  };
  if (!request.member_id.empty() || request.generation_id_or_member_epoch >= 0) {
    // No member joined over the Kafka protocol (JoinGroup is not served yet).
    return answer_all(unknown_member_id);
  }
  std::vector<group::offset_commit> offsets;
  for (const auto& t : request.topics) {
    for (const auto& p : t.partitions) {
      offsets.push_back(group::offset_commit{model::topic_partition{t.name, model::partition_id{p.partition_index}},
                                             model::offset{p.committed_offset}, p.committed_metadata.value_or("")});
    }
  }
  ctx.broker_api().groups().commit_standalone(
      request.group_id, std::move(offsets),
      [answer_all](broker::result<group::partition_map<group::committed_offset>> r) {
        answer_all(r.ok() ? error_code::none : code_of(r.error()));
      });
}

void handle_offset_fetch(const request_context& ctx, protocol::offset_fetch_request_data request) {
  using response = protocol::offset_fetch_response_data;
  // One group before v8, a list of groups from v8 (KIP-709): both become (group, topics or all).
  struct wanted {
    std::string group_id;
    std::optional<std::vector<std::pair<std::string, std::vector<int32_t>>>> topics;   // nullopt: all
  };
  std::vector<wanted> groups;
  if (ctx.api_version < 8) {
    wanted w{request.group_id, std::nullopt};
    if (request.topics) {
      w.topics.emplace();
      for (const auto& t : *request.topics) w.topics->emplace_back(t.name, t.partition_indexes);
    }
    groups.push_back(std::move(w));
  } else {
    for (const auto& g : request.groups) {
      wanted w{g.group_id, std::nullopt};
      if (g.topics) {
        w.topics.emplace();
        for (const auto& t : *g.topics) w.topics->emplace_back(t.name, t.partition_indexes);
      }
      groups.push_back(std::move(w));
    }
  }
  using committed_map = group::partition_map<group::committed_offset>;
  auto g = std::make_shared<gather<committed_map>>(groups.size(), [ctx, groups](std::vector<committed_map>& found) {
    response out;
    for (size_t i = 0; i < groups.size(); ++i) {
      // (topic -> [(partition, offset, metadata)]) of the partitions asked for, or of all committed.
      std::map<std::string, std::vector<std::tuple<int32_t, int64_t, std::string>>> rows;
      if (groups[i].topics) {
        for (const auto& [topic, partitions] : *groups[i].topics) {
          auto& row = rows[topic];
          for (int32_t p : partitions) {
            auto c = found[i].find(model::topic_partition{topic, model::partition_id{p}});
            if (c == found[i].end()) row.emplace_back(p, -1, "");
            else row.emplace_back(p, c->second.committed.value(), c->second.metadata);
          }
        }
      } else {
        for (const auto& [tp, c] : found[i]) rows[tp.topic].emplace_back(tp.partition.value(), c.committed.value(), c.metadata);
      }
      if (ctx.api_version < 8) {
        for (auto& [topic, partitions] : rows) {
          response::offset_fetch_response_topic t;
          t.name = topic;
          for (auto& [p, offset, metadata] : partitions) {
            response::offset_fetch_response_partition rp;
            rp.partition_index = p;
            rp.committed_offset = offset;
            rp.committed_leader_epoch = -1;
            rp.metadata = metadata;
            t.partitions.push_back(std::move(rp));
          }
          out.topics.push_back(std::move(t));
        }
      } else {
        response::offset_fetch_response_group rg;
        rg.group_id = groups[i].group_id;
        for (auto& [topic, partitions] : rows) {
          response::offset_fetch_response_topics t;
          t.name = topic;
          for (auto& [p, offset, metadata] : partitions) {
            response::offset_fetch_response_partitions rp;
            rp.partition_index = p;
            rp.committed_offset = offset;
            rp.committed_leader_epoch = -1;
            rp.metadata = metadata;
            t.partitions.push_back(std::move(rp));
          }
          rg.topics.push_back(std::move(t));
        }
        out.groups.push_back(std::move(rg));
      }
    }
    ctx.answer(out);
  });
  for (size_t i = 0; i < groups.size(); ++i) {
    ctx.broker_api().groups().group_committed(groups[i].group_id, [g, i](broker::result<committed_map> r) {
      if (r.ok()) g->slot(i) = std::move(r).value();
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

void handle_list_groups(const request_context& ctx, protocol::list_groups_request_data request) {
  ctx.broker_api().groups().list_groups([ctx, filter = request.states_filter](
                                            broker::result<std::vector<group::group_listing>> r) {
    protocol::list_groups_response_data out;
    if (!r.ok()) {
      out.error_code = code_of(r.error());
      return ctx.answer(out);
    }
    for (const auto& listed : r.value()) {
      const std::string state = state_name(listed.state);
      if (!filter.empty() && std::find(filter.begin(), filter.end(), state) == filter.end()) continue;
      protocol::list_groups_response_data::listed_group lg;
      lg.group_id = listed.group_id;
      lg.protocol_type = "consumer";
      lg.group_state = state;
      lg.group_type = "classic";
      out.groups.push_back(std::move(lg));
    }
    ctx.answer(out);
  });
}

void handle_describe_groups(const request_context& ctx, protocol::describe_groups_request_data request) {
  using described = protocol::describe_groups_response_data::described_group;
  auto g = std::make_shared<gather<described>>(request.groups.size(), [ctx](std::vector<described>& found) {
    protocol::describe_groups_response_data out;
    out.groups = std::move(found);
    ctx.answer(out);
  });
  for (size_t i = 0; i < request.groups.size(); ++i) {
    g->slot(i).group_id = request.groups[i];
    ctx.broker_api().groups().describe_group(request.groups[i], [g, i](broker::result<broker::group_details> r) {
      described& d = g->slot(i);
      if (!r.ok()) {
        d.error_code = code_of(r.error());
      } else {
        const auto& desc = r->description;
        d.group_state = state_name(desc.state);
        if (desc.state != group::group_state::dead) {
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
          dm.member_metadata = consumer_subscription(m);
          dm.member_assignment = consumer_assignment(m.owned);
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

}  // namespace ringlog::kafka::detail
