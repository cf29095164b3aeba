// The coordinators' internal topics on the active controller: __consumer_offsets and
// __transaction_state created once enough brokers are registered (the decisions are
// controller/internal_topics.h's; here the commit). Kafka's counterpart: the controller's side of
// AutoTopicCreationManager's internal topics. Their records are appended and read on the
// partition's shard by own_records.cc. Also the cluster's forwarding secret
// (security/forwarded_call.h), committed once as broker/users.h's reserved record.

#include <utility>

#include "active_controller.h"
#include "cluster_requests.h"
#include "metadata_publisher.h"
#include "ringlog/broker/groups.h"
#include "ringlog/controller/internal_topics.h"
#include "ringlog/security/forwarded_call.h"

namespace ringlog::broker::detail {

// The broker's names of the internal topics are the controller's (which creates them).
static_assert(std::string_view(consumer_offsets_topic) == controller::consumer_offsets_topic_name);
static_assert(std::string_view(transaction_state_topic) == controller::transaction_state_topic_name);

void active_controller::ensure_offsets_topic_async(std::function<void(result<bool>)> done) {
  // Both internal topics of the coordinators: __consumer_offsets, then __transaction_state (one
  // metadata entry each; `done(true)` once both exist). Which, when and their records:
  // controller/internal_topics.h.
  const auto& image = *metadata_.controller_view()->image;
  const auto missing = controller::missing_internal_topic(image);
  if (!missing) return done(true);
  const controller::internal_topic_rules rules{config_.offsets_topic_num_partitions,
                                               config_.transaction_state_log_num_partitions, quorum_voters_.size(),
                                               config_.broker_session_timeout_ms};
  if (offsets_topic_pending_ || !active() ||
      !controller::internal_topics_due(image, rules, clock_.monotonic_ms(), controller_active_since_ms_)) {
    return done(false);
  }
  auto records = controller::internal_topic_records(image, rules, *missing, new_topic_id(random_));
  if (!records.ok()) return done(from_controller(records.error()));
  offsets_topic_pending_ = true;
  parts_.writer.commit_records(std::move(records).value(),
                       [this, creating = std::string(*missing), done = std::move(done)](result<void> r) {
    offsets_topic_pending_ = false;
    parts_.recheck_start_up();   // a start-up wait refused while this was pending asks again
    if (!r.ok() && !metadata_.controller_view()->topics.contains(creating)) return done(r.error());
    ensure_offsets_topic_async(std::move(done));   // the other one next (at most two rounds)
  });
}

security::bytes forwarding_secret_in(const controller::metadata_image& image) {
  const auto& all = image.scram_credentials();
  auto user = all.find(forwarding_secret_user);
  if (user == all.end()) return {};
  auto record = user->second.find(static_cast<int8_t>(security::scram_mechanism::sha_512));
  if (record == user->second.end() || record->second.iterations != forwarding_secret_iterations) return {};
  return record->second.stored_key;
}

void active_controller::ensure_forwarding_secret() {
  if (forwarding_secret_pending_ || !active()) return;
  if (!forwarding_secret_in(*metadata_.controller_view()->image).empty()) return;
  // Made once per cluster and kept (a restart or a snapshot keeps it): rotating it would refuse
  // the calls in flight signed with the old one, and nothing but the metadata log holds it.
  protocol::user_scram_credential_record secret;
  secret.name = std::string(forwarding_secret_user);
  secret.mechanism = static_cast<int8_t>(security::scram_mechanism::sha_512);
  secret.iterations = forwarding_secret_iterations;
  secret.stored_key = security::new_forwarding_secret();
  forwarding_secret_pending_ = true;
  parts_.writer.commit_records({protocol::metadata_record(std::move(secret))}, [this](result<void> r) {
    forwarding_secret_pending_ = false;   // not committed: the next heartbeat tick tries again
    if (!r.ok()) log_.error("the cluster's forwarding secret was not committed: " + r.error().message);
  });
}

}  // namespace ringlog::broker::detail
