#pragma once
// The group calls of a WebSocket group member (ws_session.cc) through any broker (issue 13):
// each call is served by the broker API here when this node coordinates the group (or the group
// has no coordinator now, which answers NOT_COORDINATOR), and otherwise passed on to the
// coordinator as the REST v2 consumer-instance call that does the same (group_proxy.h), its
// answer read back into the broker API's types. The coordinator is looked up on every call, so a
// member keeps working when its coordinator moves (the new one loads the instance from the
// replicated __consumer_offsets log). No Beast here.

#include <functional>
#include <string>
#include <vector>

#include "group_proxy.h"
#include "ringlog/broker/broker.h"

namespace ringlog::gateway {

class member_calls {
 public:
  /// Who the member is, for calls passed on: the coordinator authorizes them again (issues 29,
  /// 30) as the principal this node authenticated (X-Ringlog-Forwarded-Principal, believed there
  /// only under the call's proof: the session may have authenticated by this node's own access
  /// token or console session), or, without a proof, authenticates `authorization` again.
  struct caller {
    std::string authorization;   // the WebSocket upgrade's Authorization header; "" = none to pass
    std::string host;            // the client's address, ACL hosts' form (X-Ringlog-Forwarded-For)
    std::string principal;       // "User:alice" when this node authenticated the session; "" = none
  };
  /// `forwarder` nullptr: every call is served here. `fetch_wait_max_ms` bounds a passed-on poll.
  member_calls(broker::broker& b, http_forwarder* forwarder, int64_t fetch_wait_max_ms, caller who = {})
      : broker_(b), forwarder_(forwarder), fetch_wait_max_ms_(fetch_wait_max_ms), who_(std::move(who)) {}

  // The calls of broker::group_api a member uses, with its shapes and errors. A coordinator that
  // does not answer is a retriable not_coordinator naming it. `done` runs once, on some shard thread.
  void create_consumer(broker::consumer_instance_config config,
                       std::function<void(broker::result<broker::consumer_instance>)> done);
  void delete_consumer(const std::string& group_id, const std::string& instance_id,
                       std::function<void(broker::result<void>)> done);
  void subscribe(const std::string& group_id, const std::string& instance_id, const group::subscription& sub,
                 std::function<void(broker::result<void>)> done);
  /// broker::group_api::nack (issue 18).
  void nack(const std::string& group_id, const std::string& instance_id, std::vector<broker::nack_request> nacks,
            std::function<void(broker::result<void>)> done);
  void poll(const std::string& group_id, const std::string& instance_id, broker::poll_request request,
            std::function<void(broker::result<std::vector<broker::consumed_record>>)> done);
  void seek(const std::string& group_id, const std::string& instance_id, const std::vector<broker::seek_request>& seeks,
            std::function<void(broker::result<void>)> done);
  void assignments(const std::string& group_id, const std::string& instance_id,
                   std::function<void(broker::result<group::partition_set>)> done);
  /// Commits `offsets` (REST v2's rule: each names the LAST PROCESSED offset, N + 1 is stored);
  /// answers the committed offsets (the stored ones here; read back for the owned partitions
  /// from a remote coordinator, which answers REST v2's commit with 204).
  void commit(const std::string& group_id, const std::string& instance_id, std::vector<group::processed_offset> offsets,
              std::function<void(broker::result<group::partition_map<group::committed_offset>>)> done);

 private:
  /// The coordinator to pass a call of `group_id` on to; nullopt: serve it here.
  std::optional<forward_target> remote(const std::string& group_id, std::string& description) const;
  /// Sends one REST call to `to` and hands its answer (or a not_coordinator error) to `done`.
  void rest(const forward_target& to, const std::string& description, std::string method, std::string target,
            std::string body, std::string accept, std::function<void(broker::result<http_response>)> done);

  broker::broker& broker_;
  http_forwarder* forwarder_;
  int64_t fetch_wait_max_ms_;
  caller who_;
};

/// The broker error a REST error answer stands for (status, {error_code, message}), so a
/// WebSocket member reports it as the same error_code it would get here. Pure, for tests.
broker::error error_of_rest_answer(const http_response& answer);
/// A REST v2 binary consumer records answer (an array of {topic, partition, offset, timestamp,
/// key, value, headers} with base64 payloads) as consumed records. Errors: unknown_server_error
/// naming what does not parse. Pure, for tests.
broker::result<std::vector<broker::consumed_record>> records_of_rest_answer(const std::string& body);

}  // namespace ringlog::gateway
