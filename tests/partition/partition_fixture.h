#pragma once
// A partition_runtime without a broker around it, shared by the partition tests: one shard's
// context (the test's thread is shard 0) and one replica of "t-0" that this node (1) leads, its
// log under a temporary directory removed at the end.

#include <doctest.h>

#include <stdlib.h>

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/io/disk_executor.h"
#include "ringlog/io/file.h"
#include "ringlog/partition/partition.h"
#include "ringlog/storage/partition_log.h"

namespace ringlog::test {

/// The replica leads "t-0" in epoch 0 with `replicas` as its replicas and ISR (this node is 1),
/// its log flushed per `flush_policy` (log.flush.policy: "fsync" or "replication").
struct partition_fixture {
  std::unique_ptr<io::file_system> fs = io::make_posix_file_system();
  std::unique_ptr<io::disk_executor> disk = io::make_posix_disk_executor();
  base::system_clock clock;
  std::atomic<int64_t> lease_until_ms{INT64_MAX};
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> next_read_id{1};
  std::atomic<uint64_t> next_txn_verification{1};
  std::deque<partition::recent_read> recent_reads;
  std::string root;
  std::unique_ptr<partition::partition_context> context;
  std::shared_ptr<partition::partition_runtime> rt;

  partition_fixture(const std::string& flush_policy, const std::vector<int32_t>& replicas) {
    char pattern[] = "/tmp/ringlog-partition-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    root = pattern;
    context.reset(new partition::partition_context{
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
        .add_fetch_deadline = [](int64_t, const std::shared_ptr<partition::partition_runtime>&,
                                 const std::shared_ptr<partition::fetch_waiter>&) {},
    });
    auto log = storage::partition_log::open(*fs, root + "/t-0", storage::log_config{}, clock);
    REQUIRE(log.ok());
    rt = std::make_shared<partition::partition_runtime>(*context);
    rt->topic = "t";
    rt->partition = 0;
    rt->log = std::move(log.value());
    rt->stats = std::make_shared<partition::partition_stats>();
    rt->epoch = model::leader_epoch{0};
    rt->replicas = rt->isr = replicas;
    rt->leader_id = 1;
    rt->leader.emplace(1, replicas, replicas, clock.monotonic_ms());
  }
  ~partition_fixture() {
    rt.reset();
    (void)fs->remove_all(root);
  }
  partition_fixture(const partition_fixture&) = delete;
  partition_fixture& operator=(const partition_fixture&) = delete;

  /// One record of three bytes, stamped now, as one uncompressed batch.
  [[nodiscard]] model::bytes one_record_batch() const {
    model::record r;
    r.timestamp = model::timestamp_ms{clock.now_ms()};
    r.value = model::bytes(3, std::byte{'a'});
    auto batch = codec::encode_batch({}, std::span<const model::record>(&r, 1));
    REQUIRE(batch.ok());
    return std::move(batch.value());
  }
};

}  // namespace ringlog::test
