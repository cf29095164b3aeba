#pragma once
// Retries and dead letters on plain topics (issue 18, docs/retries.md): the writes a nack makes
// and the dead-letter calls (list, browse, redrive). Everything here goes through the public
// broker API (produce, fetch, create_topic), so a retry or dead-letter partition led by another
// broker is reached like any partition; the group coordinator (group_nacks.cc) decides what a
// nack may do, delay::route_nack decides where it goes.

#include <functional>
#include <vector>

#include "ringlog/broker/broker.h"
#include "ringlog/delay/retry.h"

namespace ringlog::broker::retries {

/// One nacked record on its way: where it goes (delay::route_nack) and its key and value.
struct nack_write {
  delay::nack_route route;
  std::optional<model::bytes> key;
  std::optional<model::bytes> value;
};

/// Creates the retry and dead-letter topics `writes` need (as many partitions as their original
/// topic, so a record keeps its partition number) and produces each copy with acks=all; a retry
/// copy carries ringlog-deliver-at, so it goes through delayed delivery. `done` once every copy
/// is durable, or with the first failure (copies of other nacks may be stored then: a nack that
/// is answered with an error may be repeated, docs/retries.md).
void write_nacks(broker& b, std::vector<nack_write> writes, std::function<void(result<void>)> done);

/// Non-blocking retries (issue 18): adds to a topic-list subscription `sub` of `group_id` the group's
/// retry topic of each topic it names (policy's retry.topic.template), so a nacked record comes
/// back to the group; at most group::limits::subscription_topics_max topics in all.
void add_retry_topics(group::subscription& sub, const std::string& group_id, const delay::retry_policy& policy);

/// Reads each of `nacks`' records and routes its copy (delay::route_nack under `policy`, group
/// `group_id`, broker time `now_ms`): the copies to write, or the first error: a record gone
/// (offset_out_of_range), a route refused (invalid_record), a retry or dead-letter topic name
/// refused, or topic_authorization_failed when, with an authorizer, the nacking principal lacks
/// WRITE on the copy's topic, or CREATE on the cluster or the topic when the copy would create it
/// (issue 30: a copy is a produce by the member, so a template cannot aim at a topic it may not
/// write). `done` once, on any thread.
void route_nacks(broker& b, const std::string& group_id, const std::vector<nack_request>& nacks,
                 const delay::retry_policy& policy, int64_t now_ms,
                 std::function<void(result<std::vector<nack_write>>)> done);

/// The record at `offset` of `tp` (fetched through the broker). Errors: offset_out_of_range when
/// no record has that offset any more (compacted, deleted by retention).
void read_record(broker& b, model::topic_partition tp, model::offset offset, std::function<void(result<model::record>)> done);

/// `namings`: the policies whose retry.topic.template and dead.letter.topic.template the group's
/// topics may be named by (the broker's defaults and each of the group's instances'; at least one).
/// A dead-letter topic is one whose name one of their dead-letter templates makes for the group.
void dead_letter_topics(broker& b, std::string group_id, std::vector<delay::retry_policy> namings,
                        std::function<void(result<std::vector<dead_letter_topic_info>>)> done);
void dead_letters(broker& b, dead_letters_request request, std::vector<delay::retry_policy> namings,
                  std::function<void(result<std::vector<dead_letter>>)> done);
/// A redrive to the retry path goes to the retry topic of the naming that made the dead-letter topic.
void redrive(broker& b, redrive_request request, std::vector<delay::retry_policy> namings,
             std::function<void(result<redrive_result>)> done);

}  // namespace ringlog::broker::retries
