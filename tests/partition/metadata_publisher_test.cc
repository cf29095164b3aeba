// metadata_publisher<View> (ringlog/partition/metadata_publisher.h) instantiated for a view that
// is not the broker's: the partition module's publisher needs only `image` and `topics` of its
// view and its host for the rest (issue 28 stage D), and applies committed entries in order to
// the controller view, publishes them and answers their writers.

#include <doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../broker/test_runtime.h"
#include "ringlog/partition/constants.h"
#include "ringlog/partition/metadata_publisher_impl.h"

namespace ringlog::partition {
namespace {

/// The least a view may be: the image and the topics' states.
struct bare_view {
  std::shared_ptr<const controller::metadata_image> image = std::make_shared<const controller::metadata_image>();
  std::map<std::string, std::shared_ptr<const topic_state>, std::less<>> topics;
};

/// Reads every entry as `records` (or refuses it when `refuse`), and counts what it observed.
class bare_host final : public metadata_publisher_host<bare_view> {
 public:
  std::vector<protocol::metadata_record> records;
  bool refuse = false;
  int published = 0;

  std::shared_ptr<const bare_view> make_view(const bare_view& /*previous*/,
                                             std::shared_ptr<const controller::metadata_image> image) const override {
    auto view = std::make_shared<bare_view>();
    view->image = image;
    for (const auto& [name, topic] : image->topics()) {
      auto state = std::make_shared<topic_state>();
      state->image = topic;
      view->topics.emplace(name, std::move(state));
    }
    return view;
  }
  result<std::vector<protocol::metadata_record>> metadata_records(const controller::metadata_image& /*image*/,
                                                                  const model::record& /*record*/) const override {
    if (refuse) return error{errc::invalid_request, "refused by the test"};
    return records;
  }
  result<storage::log_config> log_config(const bare_view& /*view*/,
                                         const controller::topic_image& /*topic*/) const override {
    return storage::log_config{};
  }
  bool topic_defaults_changed(const bare_view& /*before*/, const bare_view& /*after*/) const override { return false; }
  bool acls_changed(const bare_view& /*before*/, const bare_view& /*after*/) const override { return false; }
  void run_metadata_rechecks() override {}
  void on_metadata_leader_change(int32_t /*leader_id*/) override {}
  void on_view_published(const bare_view& /*view*/) override { ++published; }
  void on_topic_deleted(const std::string& /*topic*/) override {}
  void on_topics_changed() override {}
};

/// Applies one committed entry at `offset` on the controller shard and waits for its outcome.
result<void> apply_one(test::test_runtime& runtime, metadata_publisher<bare_view>& publisher, int64_t offset) {
  std::optional<result<void>> outcome;
  runtime.post(controller_shard, [&] {
    const std::vector<uint8_t> payload{0};
    const controller::committed_entry entry{.offset = offset, .payload = payload};
    publisher.apply(std::span(&entry, 1));
    publisher.apply_queue().await_applied(offset, [&](result<void> r) { outcome = std::move(r); });
  });
  runtime.wait_idle();
  REQUIRE(outcome.has_value());
  return *outcome;
}

}  // namespace

TEST_CASE("the publisher applies, publishes and answers entries over a view that is not the broker's") {
  base::manual_clock clock(0);
  test::test_runtime runtime(2, clock);
  bare_host host;
  const std::vector<std::unique_ptr<partition_manager>> managers;   // node 1 holds no replica
  auto fs = io::make_posix_file_system();
  metadata_publisher<bare_view> publisher(host, {}, runtime, 1, managers, log_directory{.fs = *fs, .path = "/nonexistent", .log = {}},
                                          nullptr, [](int32_t) { return false; });
  protocol::topic_record topic;
  topic.name = "orders";
  topic.topic_id.value.fill(7);
  host.records.emplace_back(topic);
  protocol::partition_record partition;
  partition.topic_id = topic.topic_id;
  partition.partition_id = 0;
  partition.leader_epoch = partition.partition_epoch = 0;
  partition.replicas = partition.isr = {2, 3};
  partition.leader = 2;
  host.records.emplace_back(partition);

  auto applied = apply_one(runtime, publisher, 0);
  INFO((applied.ok() ? std::string() : applied.error().message));
  REQUIRE(applied.ok());
  CHECK(publisher.apply_queue().applied_end() == 1);
  CHECK(host.published == 1);
  auto orders = publisher.find_topic("orders");   // the test's thread reads the latest view
  REQUIRE(orders != nullptr);
  CHECK(orders->partitions_count() == 1);

  SUBCASE("a reader waits until an entry is applied here, bounded, and takes no writer's failure") {
    // Read-your-writes of a peer's image (broker::await_metadata_applied): offset 0 is applied.
    std::vector<std::pair<int64_t, bool>> heard;
    const auto await_through = [&](int64_t offset, int64_t timeout_ms) {
      runtime.post(controller_shard, [&, offset, timeout_ms] {
        publisher.apply_queue().await_applied_through(offset, timeout_ms,
                                                      [&, offset](bool applied) { heard.emplace_back(offset, applied); });
      });
      runtime.wait_idle();
    };
    await_through(0, 100);
    CHECK(heard == std::vector<std::pair<int64_t, bool>>{{0, true}});
    await_through(1, 100);   // not applied yet: waits
    await_through(5, 100);   // never comes within its bound
    CHECK(heard.size() == 1);
    host.records.clear();   // an entry that changes nothing (the topic exists already)
    CHECK(apply_one(runtime, publisher, 1).ok());
    CHECK(heard == std::vector<std::pair<int64_t, bool>>{{0, true}, {1, true}});
    runtime.advance_ms(99);
    runtime.wait_idle();
    CHECK(heard.size() == 2);
    runtime.advance_ms(1);
    runtime.wait_idle();
    CHECK(heard == std::vector<std::pair<int64_t, bool>>{{0, true}, {1, true}, {5, false}});
    // A refused entry: a reader waiting for it is released, and its writer still hears why.
    host.refuse = true;
    await_through(2, 100);
    auto refused = apply_one(runtime, publisher, 2);
    CHECK_FALSE(refused.ok());
    CHECK(heard.back() == std::pair<int64_t, bool>{2, true});
  }

  SUBCASE("a refused entry at the log's end is settled here: a wait through it ends without a later entry") {
    // Two plans of one partition at once (a reassignment forwarded by a node that is not the
    // active controller, and the controller's own): the second names a partition epoch the first
    // changed and is refused. The metadata barrier of the forwarding node waits through the
    // quorum's high watermark - 1, that refused entry: it waited metadata_write_timeout_ms, until
    // a later entry came (each admin call of that node 30 s late, session 41).
    host.refuse = true;
    auto refused = apply_one(runtime, publisher, 1);   // its writer hears why at once
    REQUIRE_FALSE(refused.ok());
    CHECK(publisher.apply_queue().applied_end() == 2);
    std::optional<bool> heard;
    runtime.post(controller_shard, [&] {
      publisher.apply_queue().await_applied_through(1, metadata_write_timeout_ms, [&](bool applied) { heard = applied; });
    });
    runtime.wait_idle();   // no time passes
    CHECK(heard == std::optional<bool>(true));
    host.refuse = false;   // a later entry applies as before
    host.records.clear();
    CHECK(apply_one(runtime, publisher, 2).ok());
    CHECK(publisher.apply_queue().applied_end() == 3);
  }

  SUBCASE("a writer asking after its refused entry was settled still hears why") {
    // The forwarding node may apply the refusal before the Envelope's answer brings the offset.
    host.refuse = true;
    runtime.post(controller_shard, [&] {
      const std::vector<uint8_t> payload{0};
      const controller::committed_entry entry{.offset = 1, .payload = payload};
      publisher.apply(std::span(&entry, 1));
    });
    runtime.wait_idle();
    CHECK(publisher.apply_queue().applied_end() == 2);
    std::optional<result<void>> outcome;
    runtime.post(controller_shard, [&] {
      publisher.apply_queue().await_applied(1, [&](result<void> r) { outcome = std::move(r); });
    });
    runtime.wait_idle();
    REQUIRE(outcome.has_value());
    CHECK_FALSE(outcome->ok());
  }

  SUBCASE("a record the host cannot read refuses the whole entry, naming its offset") {
    host.refuse = true;
    auto refused = apply_one(runtime, publisher, 1);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::invalid_request);
    CHECK(refused.error().message.find("metadata offset 1") != std::string::npos);
    CHECK(host.published == 1);
    CHECK(publisher.find_topic("orders") == orders);   // the view stays the one before it
  }
}

}  // namespace ringlog::partition
