// partition_runtime::close_for_removal (partition.h): a replica removed from its shard (its topic
// deleted, or reassigned away) answers everything that waits on it, and an append whose flush
// completes after the removal is answered too. Before it (new user, session 36) such an acks=all
// append parked in the removed replica's ack_waiters, which nothing ticks any more: a WebSocket's
// produces racing a topic deletion stalled for good.

#include <doctest.h>

#include <stdlib.h>

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/disk_executor.h"
#include "ringlog/io/file.h"
#include "ringlog/partition/partition.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::partition {
namespace {

/// One shard's context (the test's thread is shard 0) and one replica of "t-0" it leads with
/// `replicas` (this node is 1), its log under a temporary directory, flushed per `flush_policy`.
struct fixture {
  std::unique_ptr<io::file_system> fs = io::make_posix_file_system();
  std::unique_ptr<io::disk_executor> disk = io::make_posix_disk_executor();
  base::system_clock clock;
  std::atomic<int64_t> lease_until_ms{INT64_MAX};
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> next_read_id{1};
  std::atomic<uint64_t> next_txn_verification{1};
  std::deque<recent_read> recent_reads;
  std::string root;
  std::unique_ptr<partition_context> context;
  std::shared_ptr<partition_runtime> rt;

  fixture(const std::string& flush_policy, std::vector<int32_t> replicas) {
    char pattern[] = "/tmp/ringlog-removal-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    root = pattern;
    context.reset(new partition_context{
        .shard = 0,
        .current_shard = [] { return size_t{0}; },
        .clock = clock,
        .disk = *disk,
        .config = {.log_flush_policy = flush_policy, .fetch_wait_max_ms = 500, .fetch_waiters_per_partition_max = 16},
        .min_insync_replicas = [](const std::string&) { return 1; },
        .leader_replication_throttled_rate = [] { return int64_t{0}; },
        .acquire_leader_throttle = [](int64_t, int64_t) { return int64_t{0}; },
        .record_leader_throttle = [](int64_t, int64_t, int64_t) {},
        .leadership_lease_until_ms = lease_until_ms,
        .stopping = stopping,
        .next_read_id = next_read_id,
        .next_txn_verification = next_txn_verification,
        .recent_reads = recent_reads,
        .add_fetch_deadline = [](int64_t, const std::shared_ptr<partition_runtime>&,
                                 const std::shared_ptr<fetch_waiter>&) {},
    });
    auto log = storage::partition_log::open(*fs, root + "/t-0", storage::log_config{}, clock);
    REQUIRE(log.ok());
    rt = std::make_shared<partition_runtime>(*context);
    rt->topic = "t";
    rt->partition = 0;
    rt->log = std::move(log.value());
    rt->stats = std::make_shared<partition_stats>();
    rt->epoch = model::leader_epoch{0};
    rt->replicas = rt->isr = replicas;
    rt->leader_id = 1;
    rt->leader.emplace(1, replicas, replicas, clock.monotonic_ms());
  }
  ~fixture() {
    rt.reset();
    (void)fs->remove_all(root);
  }

  /// One record's batch appended with acks=all; the answer lands in `answer`.
  void append(std::optional<result<produce_batches_response>>& answer) {
    model::record r;
    r.timestamp = model::timestamp_ms{clock.now_ms()};
    r.value = model::bytes(3, std::byte{'a'});
    auto batch = codec::encode_batch({}, std::span<const model::record>(&r, 1));
    REQUIRE(batch.ok());
    produce_batches_request request;
    request.partition = {"t", model::partition_id{0}};
    request.batches.push_back(std::move(batch.value()));
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
