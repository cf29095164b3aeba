// v3 consumer groups (Confluent v3 shapes) and ringlog's native group admin.

#include "api_routes.h"

#include <algorithm>
#include <limits>
#include <set>
#include "consumer_parsing.h"
#include "request_parsing.h"

namespace ringlog::gateway::routes {

// -- v3 consumer groups (Confluent v3 shapes) and ringlog's native group admin

std::string state_name(group::group_state s) {
  std::string n(group::to_string(s));
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  return n;
}

json group_json(api::call& c, const group::group_listing& g, std::optional<broker::group_details> details) {
  const std::string& cluster = c.broker().config().cluster_id;
  std::string self = c.base_url + "/v3/clusters/" + cluster + "/consumer-groups/" + percent_encode_segment(g.group_id);
  json j = {{"kind", "KafkaConsumerGroup"},
            {"metadata", {{"self", self}, {"resource_name", "crn:///kafka=" + cluster + "/consumer-group=" + g.group_id}}},
            {"cluster_id", cluster},
            {"consumer_group_id", g.group_id},
            {"is_simple", false},
            {"state", state_name(g.state)},
            {"member_count", g.member_count},
            {"coordinator", related(c.base_url + "/v3/clusters/" + cluster + "/brokers/" + std::to_string(c.broker().config().node_id))},
            {"consumers", related(self + "/consumers")},
            {"lag_summary", related(self + "/lag-summary")}};
  // "classic": Kafka clients joined with JoinGroup/SyncGroup and their leader assigns (the
  // assignor is the protocol they chose); "ringlog": REST/WebSocket members, server-side assignor.
  j["group_type"] = g.classic ? "classic" : "ringlog";
  j["protocol_type"] = g.protocol_type;
  if (details && details->description.classic) {
    j["partition_assignor"] = details->description.protocol_name.value_or("");
    j["generation"] = details->description.generation.value();
    j["leader"] = details->description.leader;
    j["coordinator_partition"] = details->coordinator.offsets_partition;
    j["coordinator_shard"] = details->coordinator.shard;
  } else if (details) {
    j["partition_assignor"] = std::string(group::to_string(details->description.assignor));
    j["generation"] = details->description.generation.value();
    j["coordinator_partition"] = details->coordinator.offsets_partition;
    j["coordinator_shard"] = details->coordinator.shard;
  }
  return j;
}

/// Every entry is the full KafkaConsumerGroup, as GET of that group answers it (Confluent's
/// list holds the same objects): each listed group is described, in list order.
void v3_list_groups(const call_ptr& c) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  c->broker().groups().list_groups([c](broker::result<std::vector<group::group_listing>> r) {
    c->later([r = std::move(r)](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      struct gather {
        std::vector<group::group_listing> listings;
        std::vector<std::optional<broker::group_details>> details;
        size_t remaining = 0;
      };
      auto g = std::make_shared<gather>();
      g->listings = *r;
      // Issue 30: Kafka's ListGroups lists every group to DESCRIBE on the cluster, else the groups
      // the caller may DESCRIBE (the route's "DESCRIBE GROUP:listed | DESCRIBE CLUSTER:kafka-cluster").
      std::erase_if(g->listings, [&call](const group::group_listing& l) { return !may_list_group(call, l.group_id); });
      g->details.resize(g->listings.size());
      g->remaining = g->listings.size();
      auto answer = [g](api::call& call2) {
        json data = json::array();
        for (size_t i = 0; i < g->listings.size(); ++i) {
          // A group deleted meanwhile is left out; one that could not be described keeps its listing.
          if (g->details[i] && g->details[i]->description.state == group::group_state::dead) continue;
          data.push_back(group_json(call2, g->listings[i], g->details[i]));
        }
        call2.respond_json(200, list_json("KafkaConsumerGroupList", call2.base_url + "/v3/clusters/" +
                                                                         call2.params["cluster_id"] + "/consumer-groups",
                                          data));
      };
      if (g->listings.empty()) return answer(call);
      auto self = call.shared_from_this();
      for (size_t i = 0; i < g->listings.size(); ++i) {
        call.broker().groups().describe_group(g->listings[i].group_id, [self, g, i, answer](broker::result<broker::group_details> d) {
          self->later([g, i, answer, d = std::move(d)](api::call& call2) {
            if (d.ok()) g->details[i] = *d;
            if (--g->remaining == 0) answer(call2);
          });
        });
      }
    });
  });
}

/// describe_group, answering 404/40404 for a group that does not exist.
void with_group(const call_ptr& c, std::function<void(api::call&, broker::group_details)> done) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  std::string id = c->params["consumer_group_id"];
  c->broker().groups().describe_group(id, [c, id, done = std::move(done)](broker::result<broker::group_details> r) {
    c->later([r = std::move(r), id, done](api::call& call) {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      if (r->description.state == group::group_state::dead) {
        return call.fail(404, ec::group_not_found, "consumer group '" + id + "' not found");
      }
      // Issue 30: a member's partitions of topics the caller may not DESCRIBE (a pattern's
      // matches) are not shown, as Kafka's DescribeGroups leaves a consumer's hidden topics out.
      broker::group_details shown = *r;
      auto hidden = [&call](const model::topic_partition& tp) {
        return !call.authorized(security::resource_type::topic, tp.topic, security::acl_operation::describe);
      };
      for (auto& m : shown.description.members) {
        std::erase_if(m.owned, hidden);
        std::erase_if(m.target, hidden);
        std::erase_if(m.pending_revocation, hidden);
      }
      done(call, std::move(shown));
    });
  });
}

void v3_get_group(const call_ptr& c) {
  with_group(c, [](api::call& call, broker::group_details d) {
    group::group_listing g{d.description.group_id, d.description.state, d.description.members.size(),
                           d.description.protocol_type, d.description.classic};
    call.respond_json(200, group_json(call, g, d));
  });
}

/// The base URL of group `d`'s v3 resources.
std::string group_url(api::call& call, const broker::group_details& d) {
  return call.base_url + "/v3/clusters/" + call.broker().config().cluster_id + "/consumer-groups/" +
         percent_encode_segment(d.description.group_id);
}

/// The base URL of member `m`'s v3 resources.
std::string consumer_url(api::call& call, const broker::group_details& d, const group::member_description& m) {
  return group_url(call, d) + "/consumers/" + percent_encode_segment(m.member_id);
}

/// KafkaConsumer. `assignments` is a link, as Confluent's (issue 14 item 19);
/// `assigned_partitions` (ringlog) keeps the owned partitions inline for the console.
json consumer_json(api::call& call, const broker::group_details& d, const group::member_description& m) {
  json assigned = json::array();
  for (const auto& tp : m.owned) assigned.push_back({{"topic_name", tp.topic}, {"partition_id", tp.partition.value()}});
  return json{{"kind", "KafkaConsumer"},
              {"metadata", {{"self", consumer_url(call, d, m)}}},
              {"cluster_id", call.broker().config().cluster_id},
              {"consumer_group_id", d.description.group_id},
              {"consumer_id", m.member_id},
              {"instance_id", m.group_instance_id ? json(*m.group_instance_id) : json(nullptr)},
              {"client_id", m.client_name},
              {"generation", m.generation.value()},
              {"assignments", related(consumer_url(call, d, m) + "/assignments")},
              {"assigned_partitions", assigned},
              {"pending_assignment", partitions_json(m.target)}};
}

/// KafkaConsumerAssignment: partition `tp` owned by member `m`.
json assignment_json(api::call& call, const broker::group_details& d, const group::member_description& m,
                     const model::topic_partition& tp) {
  const std::string& cluster = call.broker().config().cluster_id;
  const std::string partition = std::to_string(tp.partition.value());
  return json{{"kind", "KafkaConsumerAssignment"},
              {"metadata", {{"self", consumer_url(call, d, m) + "/assignments/" + percent_encode_segment(tp.topic) +
                                         "/partitions/" + partition},
                            {"resource_name", "crn:///kafka=" + cluster + "/consumer-group=" + d.description.group_id +
                                                  "/consumer=" + m.member_id + "/assignment=" + tp.topic + "/partition=" +
                                                  partition}}},
              {"cluster_id", cluster},
              {"consumer_group_id", d.description.group_id},
              {"consumer_id", m.member_id},
              {"topic_name", tp.topic},
              {"partition_id", tp.partition.value()},
              {"partition", related(call.base_url + "/v3/clusters/" + cluster + "/topics/" + percent_encode_segment(tp.topic) +
                                    "/partitions/" + partition)},
              {"lag", related(group_url(call, d) + "/lags/" + percent_encode_segment(tp.topic) + "/partitions/" + partition)}};
}

void v3_group_consumers(const call_ptr& c) {
  with_group(c, [](api::call& call, broker::group_details d) {
    json data = json::array();
    for (const auto& m : d.description.members) data.push_back(consumer_json(call, d, m));
    call.respond_json(200, list_json("KafkaConsumerList", group_url(call, d) + "/consumers", data));
  });
}

/// {consumer_id} of the group, then `done`; 404/40403 when it is not a member.
void with_member(const call_ptr& c,
                 std::function<void(api::call&, const broker::group_details&, const group::member_description&)> done) {
  with_group(c, [done = std::move(done)](api::call& call, broker::group_details d) {
    const std::string& id = call.params["consumer_id"];
    for (const auto& m : d.description.members) {
      if (m.member_id == id) return done(call, d, m);
    }
    call.fail(404, ec::consumer_instance_not_found,
              "consumer '" + id + "' is not a member of group '" + d.description.group_id + "'");
  });
}

void v3_group_consumer(const call_ptr& c) {
  with_member(c, [](api::call& call, const broker::group_details& d, const group::member_description& m) {
    call.respond_json(200, consumer_json(call, d, m));
  });
}

/// GET .../consumers/{consumer_id}/assignments (KafkaConsumerAssignmentList).
void v3_group_consumer_assignments(const call_ptr& c) {
  with_member(c, [](api::call& call, const broker::group_details& d, const group::member_description& m) {
    json data = json::array();
    for (const auto& tp : m.owned) data.push_back(assignment_json(call, d, m, tp));
    call.respond_json(200, list_json("KafkaConsumerAssignmentList", consumer_url(call, d, m) + "/assignments", data));
  });
}

/// GET .../consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}: 404 (40402)
/// for a partition not assigned to that member.
void v3_group_consumer_assignment(const call_ptr& c) {
  auto p = c->path_partition("partition_id");
  if (!p) return;
  with_member(c, [p = *p](api::call& call, const broker::group_details& d, const group::member_description& m) {
    const model::topic_partition tp{call.params["topic_name"], model::partition_id(p)};
    if (!m.owned.contains(tp)) {
      return call.fail(404, ec::partition_not_found, "partition " + std::to_string(p) + " of topic '" + tp.topic +
                                                         "' is not assigned to consumer '" + m.member_id + "'");
    }
    call.respond_json(200, assignment_json(call, d, m, tp));
  });
}

/// Lags of a group's partitions with a committed offset (a lag is measured from one: Confluent
/// lists only those), then `done`; 404 when the group has committed nothing.
void with_lags(const call_ptr& c, std::function<void(api::call&, broker::group_details, std::vector<group::partition_lag>)> done) {
  with_group(c, [done = std::move(done)](api::call& call, broker::group_details d) {
    auto self = call.shared_from_this();
    call.broker().groups().group_lag(d.description.group_id, [self, d, done](broker::result<std::vector<group::partition_lag>> r) {
      self->later([r = std::move(r), d, done](api::call& call2) {
        if (!r.ok() && r.error().code != broker::errc::group_id_not_found) return call2.fail(to_api_error(r.error()));
        std::vector<group::partition_lag> lags;
        if (r.ok()) {
          for (const auto& l : *r) {
            // Issue 30: only topics the caller may DESCRIBE (Kafka's OffsetFetch leaves the others
            // out), so a group's lag never names a hidden topic.
            if (l.committed && call2.authorized(security::resource_type::topic, l.partition.topic,
                                                security::acl_operation::describe)) {
              lags.push_back(l);
            }
          }
        }
        if (lags.empty()) {
          return call2.fail(404, ec::not_found, "consumer group '" + d.description.group_id +
                                                    "' has no committed offsets, so no lag to report");
        }
        done(call2, d, std::move(lags));
      });
    });
  });
}

std::string owner_of(const broker::group_details& d, const model::topic_partition& tp) {
  for (const auto& m : d.description.members) {
    if (m.owned.contains(tp)) return m.member_id;
  }
  return "";
}

json lag_json(api::call& call, const broker::group_details& d, const group::partition_lag& l) {
  std::string owner = owner_of(d, l.partition);
  return json{{"kind", "KafkaConsumerLag"},
              {"metadata", {{"self", group_url(call, d) + "/lags/" + percent_encode_segment(l.partition.topic) +
                                         "/partitions/" + std::to_string(l.partition.partition.value())}}},
              {"cluster_id", call.broker().config().cluster_id},
              {"consumer_group_id", d.description.group_id},
              {"topic_name", l.partition.topic},
              {"partition_id", l.partition.partition.value()},
              {"current_offset", l.committed ? json(l.committed->value()) : json(nullptr)},
              // null with a null lag for a committed partition: its leader did not tell its end
              // (KIP-207, or not reachable), and this node's own figure may lag behind it
              {"log_end_offset", l.lag || !l.committed ? json(l.high_watermark.value()) : json(nullptr)},
              {"lag", l.lag ? json(*l.lag) : json(nullptr)},
              {"consumer_id", owner.empty() ? json(nullptr) : json(owner)}};
}

void v3_group_lags(const call_ptr& c) {
  with_lags(c, [](api::call& call, broker::group_details d, std::vector<group::partition_lag> lags) {
    json data = json::array();
    for (const auto& l : lags) data.push_back(lag_json(call, d, l));
    call.respond_json(200, list_json("KafkaConsumerLagList", group_url(call, d) + "/lags", data));
  });
}

void v3_group_partition_lag(const call_ptr& c) {
  auto p = c->path_partition("partition_id");
  if (!p) return;
  with_lags(c, [p = *p](api::call& call, broker::group_details d, std::vector<group::partition_lag> lags) {
    const std::string& topic = call.params["topic_name"];
    for (const auto& l : lags) {
      if (l.partition.topic == topic && l.partition.partition.value() == p) return call.respond_json(200, lag_json(call, d, l));
    }
    call.fail(404, ec::partition_not_found, "group '" + d.description.group_id + "' has no lag for partition " +
                                                std::to_string(p) + " of topic '" + topic + "' (nothing committed there)");
  });
}

void v3_group_lag_summary(const call_ptr& c) {
  with_lags(c, [](api::call& call, broker::group_details d, std::vector<group::partition_lag> lags) {
    const std::string& cluster = call.broker().config().cluster_id;
    int64_t total = 0;
    const group::partition_lag* max = nullptr;
    for (const auto& l : lags) {
      total += l.lag.value_or(0);
      if (l.lag && (!max || *l.lag > *max->lag)) max = &l;
    }
    json j = {{"kind", "KafkaConsumerGroupLagSummary"},
              {"cluster_id", cluster},
              {"consumer_group_id", d.description.group_id},
              {"total_lag", total},
              {"max_lag", max ? *max->lag : 0},
              {"max_lag_topic_name", max ? json(max->partition.topic) : json(nullptr)},
              {"max_lag_partition_id", max ? json(max->partition.partition.value()) : json(nullptr)},
              {"max_lag_consumer_id", max && !owner_of(d, max->partition).empty() ? json(owner_of(d, max->partition)) : json(nullptr)}};
    call.respond_json(200, j);
  });
}

/// The lag history of group `id` (v3_group_lag_history, once the caller may see it).
void answer_lag_history(api::call& call, const std::string& id) {
  call.broker().groups().lag_history(id, [self = call.shared_from_this(), id](broker::result<std::vector<broker::lag_sample>> r) {
    self->later([r = std::move(r), id](api::call& call2) {
      if (!r.ok()) return call2.fail(to_api_error(r.error()));
      const std::string& cluster = call2.broker().config().cluster_id;
      json data = json::array();
      for (const auto& s : *r) data.push_back({{"timestamp", s.timestamp_ms}, {"total_lag", s.total_lag}});
      call2.respond_json(200, {{"kind", "KafkaConsumerGroupLagHistory"},
                               {"metadata", {{"self", call2.base_url + "/v3/clusters/" + cluster + "/consumer-groups/" + percent_encode_segment(id) + "/lag-history"}}},
                               {"cluster_id", cluster},
                               {"consumer_group_id", id},
                               {"interval_ms", broker::lag_history_interval_ms},
                               {"samples_max", broker::lag_history_samples_max},
                               {"data", data}});
    });
  });
}

/// The topics of `committed` (group_committed's answer) with an offset of at least 0 (a Kafka
/// client's -1/-2 names no record: no lag is measured from it).
std::set<std::string> committed_topics(const group::partition_map<group::committed_offset>& committed) {
  std::set<std::string> out;
  for (const auto& [tp, c] : committed) {
    if (c.committed.value() >= 0) out.insert(tp.topic);
  }
  return out;
}

/// GET .../consumer-groups/{g}/lag-history: the total lag the broker sampled every
/// lag_history_interval_ms (broker/groups.h), oldest first; in memory, so empty after a restart.
/// The samples are totals over every topic the group committed, so a caller who may not DESCRIBE
/// one of them hears 403 (the breaker of session 35 read activity on a hidden topic from them,
/// while /lags leaves that topic out).
void v3_group_lag_history(const call_ptr& c) {
  with_group(c, [](api::call& call, broker::group_details d) {
    std::string id = d.description.group_id;
    call.broker().groups().group_committed(id, [self = call.shared_from_this(), id](
                                                  broker::result<group::partition_map<group::committed_offset>> committed) {
      self->later([committed = std::move(committed), id](api::call& call2) {
        if (!committed.ok()) return call2.fail(to_api_error(committed.error()));
        for (const auto& topic : committed_topics(*committed)) {
          if (!call2.authorized(security::resource_type::topic, topic, security::acl_operation::describe)) {
            return call2.fail(403, ec::forbidden, "the lag history of consumer group '" + id +
                                                      "' covers topics you are not authorized to DESCRIBE");
          }
        }
        answer_lag_history(call2, id);
      });
    });
  });
}

void v3_delete_group(const call_ptr& c) {
  if (!c->check_cluster()) return;
  c->broker().groups().delete_group(c->params["consumer_group_id"], answer_no_content(c));
}

/// Resets `req` (its topics or partitions named) once the caller may READ each topic (Kafka's
/// AlterConsumerGroupOffsets: READ on each topic).
void reset_group_offsets(const call_ptr& c, broker::reset_offsets_request req) {
  for (const auto& topic : req.topics) {
    if (!c->require(security::resource_type::topic, topic, security::acl_operation::read)) return;
  }
  for (const auto& tp : req.partitions) {
    if (!c->require(security::resource_type::topic, tp.topic, security::acl_operation::read)) return;
  }
  const bool dry = req.mode == group::dry_run::yes;
  // Every topic named, when partitions are named ("T:0,5"): all of them existing, a failure is
  // about a partition.
  std::vector<std::string> partitions_of;
  if (!req.partitions.empty()) {
    partitions_of = req.topics;
    for (const auto& tp : req.partitions) partitions_of.push_back(tp.topic);
  }
  c->broker().groups().reset_offsets(std::move(req), [c, dry, partitions_of](broker::result<group::partition_map<model::offset>> r) {
    c->later([r = std::move(r), dry, partitions_of](api::call& call) {
      if (!r.ok()) {
        // A missing partition of a topic that exists is 40402 (Confluent's partition not found),
        // not the topic's 40401.
        const bool topics_exist = !partitions_of.empty() &&
                                  std::all_of(partitions_of.begin(), partitions_of.end(),
                                              [&call](const std::string& t) { return call.topic_exists(t); });
        return call.fail(to_api_error(r.error(), topics_exist ? error_scope::partition : error_scope::topic, topics_exist));
      }
      json offsets = json::array();
      for (const auto& [tp, o] : *r) {
        offsets.push_back({{"topic_name", tp.topic}, {"partition_id", tp.partition.value()}, {"offset", o.value()}});
      }
      call.respond_json(200, {{"dry_run", dry}, {"offsets", offsets}});
    });
  });
}

/// POST .../consumer-groups/{g}/offsets:reset {"to": earliest|latest|timestamp|offset|shift,
/// "value": N, "timestamp": ms or ISO-8601, "topics": [...], "dry_run": true (default)}.
/// Without "topics": the topics the group committed that the caller may DESCRIBE (what Kafka's
/// OffsetFetch shows kafka-consumer-groups --all-topics), each then needing READ; 404 when there
/// are none. The broker's own "every committed topic" reset a topic the caller could not even
/// see, and named it in the answer (breaker, session 35).
void v3_reset_group_offsets(const call_ptr& c) {
  if (!c->check_cluster() || !c->accept(v3_offers)) return;
  if (!is_blank(c->request.body) && !c->content_type_in(consumer_offers)) return;
  auto parsed = parse_reset_offsets(c->request.body);
  if (!parsed.ok()) return c->fail(parsed.error());
  broker::reset_offsets_request req = std::move(parsed).value();
  req.group_id = c->params["consumer_group_id"];
  if (!req.topics.empty() || !req.partitions.empty()) return reset_group_offsets(c, std::move(req));
  c->broker().groups().group_committed(req.group_id, [c, req](broker::result<group::partition_map<group::committed_offset>> r) mutable {
    c->later([r = std::move(r), req = std::move(req)](api::call& call) mutable {
      if (!r.ok()) return call.fail(to_api_error(r.error()));
      std::set<std::string> topics;
      for (const auto& topic : committed_topics(*r)) {
        if (call.authorized(security::resource_type::topic, topic, security::acl_operation::describe)) topics.insert(topic);
      }
      if (topics.empty()) {
        return call.fail(404, ec::not_found, "consumer group '" + req.group_id +
                                                 "' has no committed offsets to reset: name the \"topics\" to reset");
      }
      req.topics.assign(topics.begin(), topics.end());
      reset_group_offsets(call.shared_from_this(), std::move(req));
    });
  });
}

}  // namespace ringlog::gateway::routes
