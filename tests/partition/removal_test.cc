// partition_runtime::close_for_removal (partition.h): a replica removed from its shard (its topic
// deleted, or reassigned away) answers everything that waits on it, and an append whose flush
// completes after the removal is answered too. Before it (new user, session 36) such an acks=all
// append parked in the removed replica's ack_waiters, which nothing ticks any more: a WebSocket's
// produces racing a topic deletion stalled for good.

#include <doctest.h>

#include <memory>
#include <optional>

#include "partition_fixture.h"

namespace ringlog::partition {
namespace {

/// A replica of "t-0" this node (1) leads with the replicas it is given, flushed per the policy.
struct fixture : test::partition_fixture {
  using partition_fixture::partition_fixture;

  /// One record's batch appended with acks=all; the answer lands in `answer`.
  void append(std::optional<result<produce_batches_response>>& answer) {
    produce_batches_request request;
    request.partition = {"t", model::partition_id{0}};
    request.batches.push_back(one_record_batch());
    request.acks = acks_mode::all;
    rt->append_batches(std::move(request), false, [&answer](result<produce_batches_response> r) { answer = std::move(r); });
  }

  /// Runs the disk executor's completions until none is in flight (bounded).
  void drain_disk() {
    for (int i = 0; i < 1000 && disk->in_flight() > 0; ++i) disk->poll(std::chrono::milliseconds(10));
    REQUIRE(disk->in_flight() == 0);
  }
};

const error deleted_reason{errc::unknown_topic_or_partition, "topic 't' does not exist (deleted)"};

}  // namespace

TEST_CASE("an acks=all append whose flush completes after its replica was removed is answered with the reason") {
  fixture f("fsync", {1});
  std::optional<result<produce_batches_response>> answer;
  f.append(answer);
  CHECK_FALSE(answer.has_value());   // waits for its fdatasync
  f.rt->close_for_removal(deleted_reason);
  f.drain_disk();
  REQUIRE(answer.has_value());
  REQUIRE_FALSE(answer->ok());
  CHECK(answer->error().code == errc::unknown_topic_or_partition);
  CHECK(f.rt->ack_waiters.empty());
}

TEST_CASE("removing a replica answers its waiting acks=all appends, parked fetches and followers' fetches") {
  fixture f("replication", {1, 2});   // broker 2 never fetches: the high watermark stays
  std::optional<result<produce_batches_response>> answer;
  f.append(answer);
  CHECK_FALSE(answer.has_value());
  CHECK(f.rt->ack_waiters.size() == 1);

  auto fetch = std::make_shared<fetch_waiter>();
  std::optional<result<fetch_response>> fetched;
  fetch->request.partition = {"t", model::partition_id{0}};
  fetch->request.max_wait_ms = 500;
  fetch->done = [&fetched](result<fetch_response> r) { fetched = std::move(r); };
  f.rt->waiters.push_back(fetch);
  auto follower = std::make_shared<replica_fetch_waiter>();
  std::optional<int16_t> follower_error;
  follower->replica_id = 2;
  follower->done = [&follower_error](protocol::fetch_response_data::partition_data d) { follower_error = d.error_code; };
  f.rt->replica_waiters.push_back(follower);

  f.rt->close_for_removal(deleted_reason);
  CHECK(f.rt->deleted);
  REQUIRE(answer.has_value());
  REQUIRE_FALSE(answer->ok());
  CHECK(answer->error().code == errc::unknown_topic_or_partition);
  REQUIRE(fetched.has_value());
  CHECK(fetched->error().code == errc::unknown_topic_or_partition);
  REQUIRE(follower_error.has_value());
  CHECK(*follower_error == kafka_error_code(errc::unknown_topic_or_partition));
  CHECK(f.rt->ack_waiters.empty());
  CHECK(f.rt->waiters.empty());
  CHECK(f.rt->replica_waiters.empty());
}

TEST_CASE("a fetch that would park on a removed replica is answered with the reason instead") {
  fixture f("replication", {1});
  f.rt->close_for_removal(deleted_reason);
  auto fetch = std::make_shared<fetch_waiter>();
  std::optional<result<fetch_response>> fetched;
  fetch->request.partition = {"t", model::partition_id{0}};
  fetch->request.max_wait_ms = 500;
  fetch->done = [&fetched](result<fetch_response> r) { fetched = std::move(r); };
  f.rt->try_fetch(fetch);
  REQUIRE(fetched.has_value());
  REQUIRE_FALSE(fetched->ok());
  CHECK(fetched->error().code == errc::unknown_topic_or_partition);
  CHECK(f.rt->waiters.empty());
}

}  // namespace ringlog::partition
