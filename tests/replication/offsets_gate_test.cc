#include <doctest.h>

#include "ringlog/replication/offsets_gate.h"

using namespace ringlog;
using model::offset;
using replication::end_offset_answer;
using replication::leadership_lease;

TEST_CASE("KIP-207: a new leader's high watermark counts once it reached its epoch's start offset") {
  CHECK_FALSE(replication::high_watermark_established(offset{22'511}, offset{23'868}));
  CHECK(replication::high_watermark_established(offset{23'868}, offset{23'868}));
  CHECK(replication::high_watermark_established(offset{23'900}, offset{23'868}));
}

TEST_CASE("leadership lease: nine tenths of the session timeout from the send of an acknowledged request") {
  leadership_lease lease(3000);
  CHECK(lease.length_ms() == 2700);
  CHECK_FALSE(lease.holds(0));   // nothing acknowledged yet
  lease.acknowledged(1000);
  CHECK(lease.holds(1000));
  CHECK(lease.holds(3699));
  CHECK_FALSE(lease.holds(3700));   // the end is exclusive
  lease.acknowledged(800);           // an older answer arriving late shortens nothing
  CHECK(lease.valid_until_ms() == 3700);
  lease.acknowledged(2000);
  CHECK(lease.holds(4699));
  CHECK(leadership_lease(1).length_ms() == 1);   // never zero
}

TEST_CASE("quorum contact: the time a majority of the voters (the leader counted now) last fetched") {
  CHECK(replication::quorum_contact_ms({}, 50) == 50);                 // a single voter
  CHECK(replication::quorum_contact_ms({40, 10}, 50) == 40);           // 3 voters: the leader and the freshest
  CHECK(replication::quorum_contact_ms({-1, -1}, 50) == -1);           // nobody fetched: no contact
  CHECK(replication::quorum_contact_ms({30, 20, 10, -1}, 50) == 20);   // 5 voters: 3 of them
}

TEST_CASE("answer_end_offset: the lease first (more than one replica), then the epoch start") {
  leadership_lease lease(600);
  lease.acknowledged(0);   // holds until 540
  CHECK(replication::answer_end_offset(offset{10}, offset{10}, 3, lease.holds(100)) == end_offset_answer::available);
  CHECK(replication::answer_end_offset(offset{9}, offset{10}, 3, lease.holds(100)) == end_offset_answer::offset_not_available);
  CHECK(replication::answer_end_offset(offset{10}, offset{10}, 3, lease.holds(540)) == end_offset_answer::lease_lapsed);
  // One replica: no other broker can lead it in a newer epoch, the lease does not matter.
  CHECK(replication::answer_end_offset(offset{10}, offset{10}, 1, lease.holds(540)) == end_offset_answer::available);
}

TEST_CASE("answer_fetch: below the high watermark only an establishing leader refuses (the answer carries its end)") {
  // Establishing (high watermark 9, epoch began at 10): every fetch offset is refused.
  CHECK(replication::answer_fetch(offset{9}, offset{10}, 3, true, offset{0}) == end_offset_answer::offset_not_available);
  CHECK(replication::answer_fetch(offset{9}, offset{10}, 3, true, offset{9}) == end_offset_answer::offset_not_available);
  // Established: below the high watermark served whether or not the lease holds (no stall).
  CHECK(replication::answer_fetch(offset{10}, offset{10}, 3, false, offset{3}) == end_offset_answer::available);
  CHECK(replication::answer_fetch(offset{10}, offset{10}, 3, true, offset{3}) == end_offset_answer::available);
  // At the high watermark: the end-offset rule, lease included.
  CHECK(replication::answer_fetch(offset{10}, offset{10}, 3, false, offset{10}) == end_offset_answer::lease_lapsed);
  // One replica: nothing to establish from.
  CHECK(replication::answer_fetch(offset{9}, offset{10}, 1, true, offset{0}) == end_offset_answer::available);
}
