// Cluster membership on the active controller (controller/membership.h, Kafka's
// ClusterControlManager and BrokerHeartbeatManager, KIP-631): sessions lapse after
// broker.session.timeout.ms and not before, a new broker epoch restarts one, a refused probe
// fences at once, the own broker of a combined node is never fenced (a dedicated controller's
// leftover registration is), a fenced broker's heartbeat unfences it (its lease waits until it
// applied its fence), one fencing at a time, and
// a second incarnation of a broker id is refused while the first one's session lives.

#include <doctest.h>

#include <variant>

#include "cluster_image.h"
#include "ringlog/controller/membership.h"

namespace ringlog::controller {
namespace {

constexpr int64_t session_ms = 9'000;
constexpr int64_t interval_ms = 2'000;
/// activate's epoch_start_offset for a controller of the quorum's first epoch: no entry of an
/// earlier one to wait for.
constexpr int64_t no_epoch_start = -1;

/// The rules of a combined node 1 (process.roles=broker,controller) or a dedicated one.
fencing_rules rules(bool own_is_broker = true) {
  fencing_rules r;
  r.session_timeout_ms = session_ms;
  r.own_id = 1;
  r.own_is_broker = own_is_broker;
  return r;
}

/// Brokers 1-3; topic "t": partition 0 on [1, 2], partition 1 on [2] alone.
std::shared_ptr<const metadata_image> three_brokers() {
  cluster c;
  for (int32_t id = 1; id <= 3; ++id) c.add_broker(id);
  c.add_topic("t", {{1, 2}, {2}});
  return c.image();
}

/// `image` with `records` committed as one entry after it.
std::shared_ptr<const metadata_image> with(const metadata_image& image, const std::vector<protocol::metadata_record>& records) {
  metadata_delta delta(image);
  for (const auto& r : records) REQUIRE(delta.apply(r, image.offset() + 1).ok());
  return std::move(delta).image();
}

int64_t epoch_of(const metadata_image& image, int32_t id) {
  const auto* b = image.find_broker(id);
  REQUIRE(b != nullptr);
  return b->broker_epoch;
}

/// The broker next_to_fence picks at `now_ms`, -1 when none (for the cases whose records do not matter).
int32_t next_fenced(broker_heartbeats& hb, const metadata_image& image, int64_t now_ms, const fencing_rules& r = rules()) {
  auto f = hb.next_to_fence(image, now_ms, r);
  return f ? f->broker_id : -1;
}

/// A heartbeat of broker `id` that applied the metadata through `current_metadata_offset`.
protocol::broker_heartbeat_request_data heartbeat(const metadata_image& image, int32_t id, bool want_shut_down = false,
                                                  int64_t current_metadata_offset = 0) {
  protocol::broker_heartbeat_request_data r;
  r.broker_id = id;
  r.broker_epoch = epoch_of(image, id);
  r.want_shut_down = want_shut_down;
  r.current_metadata_offset = current_metadata_offset;
  return r;
}

}  // namespace

TEST_CASE("membership: a lapsed broker is fenced after broker.session.timeout.ms, not before") {
  auto image = three_brokers();
  broker_heartbeats hb;
  hb.activate(*image, 0, no_epoch_start);
  hb.heard(3, 4'000);
  CHECK(next_fenced(hb, *image, session_ms) == -1);   // the bound is inclusive
  auto f = hb.next_to_fence(*image, session_ms + 1, rules());
  REQUIRE(f.has_value());
  CHECK(f->broker_id == 2);
  CHECK(f->reason == "no heartbeat for 9001 ms (broker.session.timeout.ms=9000)");
  REQUIRE(f->records.size() >= 2);
  const auto& fence = std::get<protocol::fence_broker_record>(f->records[0]);
  CHECK(fence.id == 2);
  CHECK(fence.epoch == epoch_of(*image, 2));
  CHECK(std::holds_alternative<protocol::partition_change_record>(f->records[1]));   // its leadership of partition 1 goes
  // Broker 3's heartbeat at 4 s holds its session until 13 s.
  image = with(*image, f->records);
  CHECK(next_fenced(hb, *image, 4'000 + session_ms) == -1);
  CHECK(next_fenced(hb, *image, 4'000 + session_ms + 1) == 3);
}

TEST_CASE("membership: a new broker epoch (a restart) restarts the session") {
  auto image = three_brokers();
  broker_heartbeats hb;
  hb.activate(*image, 0, no_epoch_start);
  hb.heard(3, 8'000);
  // Broker 2 registers again after most of its session went by.
  auto again = broker(2);
  again.broker_epoch = 50;
  image = with(*image, {again});
  CHECK(next_fenced(hb, *image, 8'000) == -1);   // seen now: its session starts at 8 s
  CHECK(next_fenced(hb, *image, 8'000 + session_ms) == -1);
  auto f = hb.next_to_fence(*image, 8'000 + session_ms + 1, rules());
  REQUIRE(f.has_value());
  CHECK(f->broker_id == 2);
  CHECK(std::get<protocol::fence_broker_record>(f->records[0]).epoch == 50);
}

TEST_CASE("membership: a refused probe newer than the last heartbeat fences at once") {
  auto image = three_brokers();
  broker_heartbeats hb;
  hb.activate(*image, 0, no_epoch_start);
  hb.heard(2, 1'000);
  SUBCASE("a refusal older than the last heartbeat proves nothing") {
    hb.refused(2, 999);
    CHECK(next_fenced(hb, *image, 2'000) == -1);
  }
  SUBCASE("a refusal of a probe started at or after it fences") {
    hb.refused(2, 1'000);
    auto f = hb.next_to_fence(*image, 2'000, rules());
    REQUIRE(f.has_value());
    CHECK(f->broker_id == 2);
    CHECK(f->reason == "its cluster listener refuses connections (its process is gone)");
  }
  SUBCASE("a new active controller forgets the refusals it did not see") {
    hb.refused(2, 1'500);
    hb.activate(*image, 2'000, no_epoch_start);
    CHECK(next_fenced(hb, *image, 2'000) == -1);
  }
}

TEST_CASE("membership: the own broker of a combined node is never fenced; a dedicated controller's leftover is") {
  cluster c;
  c.add_broker(1);
  c.add_broker(2);
  auto image = c.image();
  broker_heartbeats hb;
  hb.activate(*image, 0, no_epoch_start);
  hb.heard(2, 100'000);
  CHECK(next_fenced(hb, *image, 100'000, rules(/*own_is_broker=*/true)) == -1);
  CHECK(next_fenced(hb, *image, 100'000, rules(/*own_is_broker=*/false)) == 1);
}

TEST_CASE("membership: one broker at a time, each on the image the previous one made") {
  auto image = three_brokers();
  broker_heartbeats hb;
  hb.activate(*image, 0, no_epoch_start);
  const int64_t now = session_ms + 1;
  auto first = hb.next_to_fence(*image, now, rules());
  REQUIRE(first.has_value());
  CHECK(first->broker_id == 2);
  CHECK(next_fenced(hb, *image, now) == 2);   // not committed yet: the same again
  image = with(*image, first->records);
  auto second = hb.next_to_fence(*image, now, rules());
  REQUIRE(second.has_value());
  CHECK(second->broker_id == 3);
  image = with(*image, second->records);
  CHECK(next_fenced(hb, *image, now) == -1);   // fenced brokers are not fenced again
}

TEST_CASE("membership: heartbeat answers") {
  auto image = three_brokers();
  broker_heartbeats hb;
  hb.activate(*image, 0, no_epoch_start);
  SUBCASE("an unfenced broker: nothing to commit, and its session restarts") {
    auto a = hb.answer(*image, heartbeat(*image, 2), 8'000);
    REQUIRE(a.ok());
    CHECK_FALSE(a->is_fenced);
    CHECK_FALSE(a->should_shut_down);
    CHECK(a->records.empty());
    hb.heard(3, 8'000);
    CHECK(next_fenced(hb, *image, 8'000 + session_ms) == -1);
  }
  SUBCASE("a stale or unknown broker epoch is refused and not heard") {
    auto stale = heartbeat(*image, 2);
    --stale.broker_epoch;
    auto a = hb.answer(*image, stale, 8'000);
    REQUIRE_FALSE(a.ok());
    CHECK(a.error().code == errc::stale_broker_epoch);
    auto unknown = heartbeat(*image, 2);
    unknown.broker_id = 9;
    CHECK(hb.answer(*image, unknown, 8'000).error().code == errc::stale_broker_epoch);
    CHECK(next_fenced(hb, *image, session_ms + 1) == 2);
  }
  SUBCASE("a fenced broker's heartbeat unfences it and gives it its leaderless partitions") {
    image = with(*image, fence_broker_records(*image, *image->find_broker(2), false));
    REQUIRE(image->find_broker(2)->fenced);
    REQUIRE(image->find_topic("t")->partitions[1].leader == -1);   // [2] alone: no other in-sync replica
    auto a = hb.answer(*image, heartbeat(*image, 2), 1'000);
    REQUIRE(a.ok());
    CHECK(a->is_fenced);   // the image still says so; the next heartbeat hears the outcome
    REQUIRE(a->records.size() == 2);
    const auto& unfence = std::get<protocol::unfence_broker_record>(a->records[0]);
    CHECK(unfence.id == 2);
    CHECK(unfence.epoch == epoch_of(*image, 2));
    CHECK(std::get<protocol::partition_change_record>(a->records[1]).leader == 2);
    image = with(*image, a->records);
    CHECK_FALSE(image->find_broker(2)->fenced);
    CHECK(image->find_topic("t")->partitions[1].leader == 2);
    auto b = hb.answer(*image, heartbeat(*image, 2, false, image->offset()), 2'000);
    REQUIRE(b.ok());
    CHECK_FALSE(b->is_fenced);
    CHECK(b->is_caught_up);
    CHECK(b->records.empty());
  }
  SUBCASE("a broker fenced while cut off is caught up only once it applied its fence (its lease waits)") {
    // Broker 1 led t-0; the controller fenced it and moved t-0 to broker 2 at `fenced_at`.
    REQUIRE(image->find_topic("t")->partitions[0].leader == 1);
    auto fenced = with(*image, fence_broker_records(*image, *image->find_broker(1), false));
    REQUIRE(fenced->find_topic("t")->partitions[0].leader == 2);
    const int64_t fenced_at = fenced->offset();
    // Its first heartbeat after the heal still reports the metadata before the fence.
    auto a = hb.answer(*fenced, heartbeat(*fenced, 1, false, image->offset()), 1'000);
    REQUIRE(a.ok());
    CHECK(a->is_fenced);
    CHECK_FALSE(a->is_caught_up);
    auto unfenced = with(*fenced, a->records);
    REQUIRE_FALSE(unfenced->find_broker(1)->fenced);
    // Unfenced in the image, but the broker has not applied the fence: no lease yet.
    auto b = hb.answer(*unfenced, heartbeat(*unfenced, 1, false, fenced_at - 1), 2'000);
    REQUIRE(b.ok());
    CHECK_FALSE(b->is_fenced);
    CHECK_FALSE(b->is_caught_up);
    auto c = hb.answer(*unfenced, heartbeat(*unfenced, 1, false, fenced_at), 3'000);
    REQUIRE(c.ok());
    CHECK_FALSE(c->is_fenced);
    CHECK(c->is_caught_up);
  }
  SUBCASE("a broker whose fence is proposed and not applied yet is answered fenced (its lease waits)") {
    // cluster_sim --slow-fetches-after-heal seed 675 (session 37): broker 3, cut off longer than
    // its session, heartbeated again after the heal while its fence was being committed; answered
    // "not fenced, caught up" from the image without the fence, it renewed its lease and answered
    // its old high watermark after the new leader acknowledged past it.
    hb.fence_proposed(1);
    CHECK(hb.fence_in_flight(1));
    auto a = hb.answer(*image, heartbeat(*image, 1, false, image->offset()), 1'000);
    REQUIRE(a.ok());
    CHECK(a->is_fenced);
    CHECK_FALSE(a->is_caught_up);
    CHECK(a->records.empty());   // no unfence before the fence is applied
    CHECK_FALSE(hb.answer(*image, heartbeat(*image, 2, false, image->offset()), 1'000)->is_fenced);   // others unaffected
    // Applied: the image says fenced, and the broker must apply the fence before its lease renews.
    auto fenced = with(*image, fence_broker_records(*image, *image->find_broker(1), false));
    hb.fence_settled(1);
    CHECK_FALSE(hb.fence_in_flight(1));
    auto b = hb.answer(*fenced, heartbeat(*fenced, 1, false, image->offset()), 2'000);
    REQUIRE(b.ok());
    CHECK(b->is_fenced);
    CHECK_FALSE(b->is_caught_up);
    CHECK_FALSE(b->records.empty());   // the unfence
  }
  SUBCASE("a failed fence commit leaves the broker's answers to the image") {
    hb.fence_proposed(1);
    hb.fence_settled(1);
    auto a = hb.answer(*image, heartbeat(*image, 1, false, image->offset()), 1'000);
    REQUIRE(a.ok());
    CHECK_FALSE(a->is_fenced);
    CHECK(a->is_caught_up);
  }
  SUBCASE("a broker never fenced is caught up though the image is entries ahead of it (a fresh cluster serves at once)") {
    // Session 36: the first heartbeat of every broker of a fresh cluster is answered from an
    // image an entry or two past what it applied (the internal topics, the forwarding secret);
    // counting it caught up only from that image refused every new leader's lease until its
    // second heartbeat.
    REQUIRE(image->offset() >= 2);
    auto a = hb.answer(*image, heartbeat(*image, 3, false, image->offset() - 2), 1'000);
    REQUIRE(a.ok());
    CHECK_FALSE(a->is_fenced);
    CHECK(a->is_caught_up);
  }
  SUBCASE("after a failover a broker is caught up once it applied the new controller's epoch start") {
    // The previous controller fenced broker 1 (moving t-0 to broker 2) and, on its first heartbeat
    // after the heal, committed its unfence; then it lost the quorum. The new controller sees
    // broker 1 unfenced and cannot tell it was ever fenced: its epoch's first entry, after both,
    // is what broker 1 must have applied.
    auto fenced = with(*image, fence_broker_records(*image, *image->find_broker(1), false));
    const int64_t fenced_at = fenced->offset();
    auto unfence = unfence_broker_records(*fenced, *fenced->find_broker(1));
    auto unfenced = with(*fenced, unfence);
    REQUIRE_FALSE(unfenced->find_broker(1)->fenced);
    const int64_t epoch_start = unfenced->offset() + 1;   // the new leader's leader-change entry
    broker_heartbeats next;
    next.activate(*unfenced, 5'000, epoch_start);
    auto a = next.answer(*unfenced, heartbeat(*unfenced, 1, false, fenced_at - 1), 5'100);
    REQUIRE(a.ok());
    CHECK_FALSE(a->is_fenced);
    CHECK_FALSE(a->is_caught_up);   // it still leads t-0 in its own view: no lease
    CHECK_FALSE(next.answer(*unfenced, heartbeat(*unfenced, 1, false, epoch_start - 1), 5'200)->is_caught_up);
    CHECK(next.answer(*unfenced, heartbeat(*unfenced, 1, false, epoch_start), 5'300)->is_caught_up);
    // Every broker waits for it, fenced before or not (a second of metadata fetches at most).
    CHECK_FALSE(next.answer(*unfenced, heartbeat(*unfenced, 3, false, epoch_start - 1), 5'300)->is_caught_up);
  }
  SUBCASE("a broker that wants to shut down gets the controlled shutdown records once") {
    auto a = hb.answer(*image, heartbeat(*image, 1, /*want_shut_down=*/true), 1'000);
    REQUIRE(a.ok());
    CHECK_FALSE(a->should_shut_down);
    REQUIRE_FALSE(a->records.empty());
    CHECK(std::holds_alternative<protocol::broker_registration_change_record>(a->records[0]));
    image = with(*image, a->records);
    auto b = hb.answer(*image, heartbeat(*image, 1, /*want_shut_down=*/true), 2'000);
    REQUIRE(b.ok());
    CHECK(b->should_shut_down);
    CHECK(b->records.empty());
  }
}

TEST_CASE("membership: brokers a heartbeat late are more than two intervals behind") {
  auto image = three_brokers();
  broker_heartbeats hb;
  hb.activate(*image, 0, no_epoch_start);
  hb.heard(2, 1'000);
  CHECK(hb.late(2 * interval_ms, interval_ms).empty());   // exactly two intervals: not yet
  CHECK(hb.late(2 * interval_ms + 1, interval_ms) == std::vector<int32_t>{1, 3});
  CHECK(hb.late(1'000 + 2 * interval_ms + 1, interval_ms) == std::vector<int32_t>{1, 2, 3});
}


namespace {

/// Broker `id`'s registration by another process (incarnation `incarnation`) listening for the
/// cluster on 127.0.0.1:`cluster_port`.
protocol::register_broker_record registration(int32_t id, uint8_t incarnation, uint16_t cluster_port) {
  auto r = broker(id);
  r.incarnation_id = id_of(incarnation);
  protocol::register_broker_record::broker_endpoint cluster;
  cluster.name = "cluster";
  cluster.host = "127.0.0.1";
  cluster.port = cluster_port;
  r.end_points.push_back(cluster);
  return r;
}

}  // namespace

TEST_CASE("membership: a second incarnation of a broker id with a live session is refused (DUPLICATE_BROKER_REGISTRATION)") {
  // Brokers 1-3; broker 4 registered by a process listening on :20004 (incarnation 44).
  auto image = with(*three_brokers(), {registration(4, 44, 20'004)});
  broker_heartbeats hb;
  hb.activate(*image, 0, no_epoch_start);
  hb.heard(4, 5'000);
  const auto twin = registration(4, 45, 20'104);   // a second process with node.id=4 on other ports
  SUBCASE("refused while the live one heartbeats, naming the id, the live incarnation and why") {
    auto r = hb.check_registration(*image, twin, 5'000 + session_ms, rules());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::duplicate_broker_registration);
    const auto& m = r.error().message;
    CHECK(m.find("DUPLICATE_BROKER_REGISTRATION") != std::string::npos);
    CHECK(m.find("broker 4 ") != std::string::npos);
    CHECK(m.find(uuid_to_string(id_of(44))) != std::string::npos);
    CHECK(m.find("127.0.0.1:20004") != std::string::npos);
    CHECK(m.find("last heartbeat 9000 ms ago, broker.session.timeout.ms=9000") != std::string::npos);
  }
  SUBCASE("let in once the live session lapsed, its listener refused a probe, or it is fenced") {
    CHECK(hb.check_registration(*image, twin, 5'000 + session_ms + 1, rules()).ok());
    hb.refused(4, 6'000);
    CHECK(hb.check_registration(*image, twin, 6'000, rules()).ok());
    hb.heard(4, 7'000);   // it answered after the probe: alive after all
    CHECK_FALSE(hb.check_registration(*image, twin, 7'000, rules()).ok());
    image = with(*image, fence_broker_records(*image, *image->find_broker(4), false));
    CHECK(hb.check_registration(*image, twin, 7'000, rules()).ok());
  }
  SUBCASE("the same incarnation again, or a restart on the very cluster endpoint, is let in at once") {
    CHECK(hb.check_registration(*image, registration(4, 44, 20'004), 5'000, rules()).ok());
    CHECK(hb.check_registration(*image, registration(4, 46, 20'004), 5'000, rules()).ok());
  }
  SUBCASE("a registration next_to_fence has not seen yet counts as live from now") {
    auto newer = registration(4, 47, 20'204);
    newer.broker_epoch = 60;
    image = with(*image, {newer});   // the twin got in first (both raced to an empty session)
    CHECK_FALSE(hb.check_registration(*image, registration(4, 44, 20'004), 100'000, rules()).ok());
    hb.heard(2, 100'000);
    hb.heard(3, 100'000);
    CHECK(next_fenced(hb, *image, 100'000) == -1);   // it sees broker 4's new epoch: its session starts now
    CHECK_FALSE(hb.check_registration(*image, registration(4, 44, 20'004), 100'000 + session_ms, rules()).ok());
    CHECK(hb.check_registration(*image, registration(4, 44, 20'004), 100'000 + session_ms + 1, rules()).ok());
  }
  SUBCASE("a broker id nobody holds, and the active controller's own process re-registering its id") {
    CHECK(hb.check_registration(*image, registration(5, 55, 20'005), 5'000, rules()).ok());
    auto own = rules();
    own.own_id = 4;
    own.own_incarnation_id = id_of(48);
    CHECK(hb.check_registration(*image, registration(4, 48, 20'304), 5'000, own).ok());
    own.own_is_broker = false;   // a dedicated controller has no broker of its own
    CHECK_FALSE(hb.check_registration(*image, registration(4, 48, 20'304), 5'000, own).ok());
  }
}

}  // namespace ringlog::controller
