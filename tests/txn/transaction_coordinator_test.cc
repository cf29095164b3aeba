// The transaction coordinator's state machine: every transition, fencing, timeouts, replay, and
// the delayed EndTxn of an ended transaction (KAFKA-17754) with its negative control.

#include <doctest.h>

#include "ringlog/txn/transaction_coordinator.h"

using namespace ringlog;
using namespace ringlog::txn;

namespace {

model::producer_epoch E(int16_t e) { return model::producer_epoch{e}; }
model::producer_id P(int64_t p) { return model::producer_id{p}; }
model::topic_partition tp(const char* t, int32_t p) { return {t, model::partition_id{p}}; }

/// Drives a coordinator the way the broker does: every write is made durable at once, and
/// markers are "written" by the caller with finish_markers. Keeps the log it wrote, for replay.
struct driver {
  explicit driver(coordinator_options o = {}) : c(o) {}
  transaction_coordinator c;
  int64_t now = 1'000'000;
  int64_t next_pid = 100;
  std::vector<txn_log_record> log;
  std::vector<marker_request> markers;   // due, in order

  void durable(const txn_metadata& md) {
    log.push_back(record_of(md));
    if (auto m = c.complete_write(md.transactional_id, true)) markers.push_back(*m);
  }
  result<outcome> run(result<outcome> r) {
    if (r.ok() && r->write) durable(*r->write);
    return r;
  }
  result<outcome> init(const std::string& id, int32_t timeout_ms = 60000,
                       std::optional<std::pair<model::producer_id, model::producer_epoch>> expected = std::nullopt) {
    auto r = c.init_producer_id(id, timeout_ms, expected, std::nullopt, now);
    if (!r.ok() && r.error().code == errc::producer_id_needed) r = c.init_producer_id(id, timeout_ms, expected, P(next_pid++), now);
    return run(std::move(r));
  }
  result<outcome> add(const std::string& id, const outcome& who, partition_set ps) {
    return run(c.add_partitions(id, who.producer_id, who.producer_epoch, ps, now));
  }
  result<outcome> end(const std::string& id, model::producer_id pid, model::producer_epoch epoch, bool commit, bool bump) {
    return run(c.end_txn(id, pid, epoch, commit, bump, std::nullopt, now));
  }
  /// Writes every due marker and completes the transactions.
  void finish_markers() {
    auto due = std::move(markers);
    markers.clear();
    for (const auto& m : due) {
      auto done = c.markers_written(m.transactional_id, m.producer_epoch, now);
      REQUIRE(done.ok());
      durable(*done);
    }
  }
  txn_state state(const std::string& id) const { return c.find(id)->state; }
};

}  // namespace

TEST_CASE("InitProducerId: a new id needs a producer id, then Empty with epoch 0") {
  driver d;
  auto first = d.c.init_producer_id("t", 60000, std::nullopt, std::nullopt, d.now);
  REQUIRE_FALSE(first.ok());
  CHECK(first.error().code == errc::producer_id_needed);
  CHECK(d.c.find("t") == nullptr);
  auto r = d.init("t");
  REQUIRE(r.ok());
  CHECK(r->producer_id == P(100));
  CHECK(r->producer_epoch == E(0));
  CHECK(d.state("t") == txn_state::empty);
  // Again: the epoch is bumped (a new producer instance fences the old one).
  auto again = d.init("t");
  REQUIRE(again.ok());
  CHECK(again->producer_id == P(100));
  CHECK(again->producer_epoch == E(1));
}

TEST_CASE("InitProducerId validates the id and the timeout") {
  driver d;
  CHECK(d.init("").error().code == errc::invalid_request);
  CHECK(d.init(std::string(limits::transactional_id_bytes_max + 1, 'x')).error().code == errc::invalid_request);
  CHECK(d.init("t", 0).error().code == errc::invalid_transaction_timeout);
  CHECK(d.init("t", 900'001).error().code == errc::invalid_transaction_timeout);
  CHECK(d.init("t", 900'000).ok());
  // Control characters (NUL included) never name a transaction (breaker finding, session 9).
  CHECK(d.init(std::string("a\0b", 3)).error().code == errc::invalid_request);
  CHECK(d.init("a\nb").error().code == errc::invalid_request);
  CHECK(d.init(std::string(limits::transactional_id_bytes_max, 'x')).ok());
  CHECK(check_transactional_id("caf\xc3\xa9").ok());
}

TEST_CASE("an abort right after a commit waits for the commit's markers: concurrent_transactions, then ok") {
  // Breaker finding (session 9): ~3% of librdkafka aborts right after a commit were answered
  // INVALID_TXN_STATE (fatal for the client) while the commit's markers were still written.
  for (const bool bump : {false, true}) {
    CAPTURE(bump);
    driver d;
    auto p = d.init("t").value();
    REQUIRE(d.add("t", p, {tp("a", 0)}).ok());
    auto commit = d.end("t", p.producer_id, p.producer_epoch, true, bump);
    REQUIRE(commit.ok());
    REQUIRE(d.state("t") == txn_state::prepare_commit);
    // The next transaction of the producer (the epoch the commit answered) aborts at once.
    auto early = d.c.end_txn("t", commit->producer_id, commit->producer_epoch, false, bump, std::nullopt, d.now);
    REQUIRE_FALSE(early.ok());
    CHECK(early.error().code == errc::concurrent_transactions);
    CHECK(d.state("t") == txn_state::prepare_commit);   // the commit is untouched
    REQUIRE(d.markers.size() == 1);
    CHECK(d.markers[0].committed);
    d.finish_markers();
    CHECK(d.state("t") == txn_state::complete_commit);
    // Retried after the markers: a bumping client's abort of its empty transaction moves its
    // epoch on; without the bump an abort of a committed transaction is refused, as before.
    auto retried = d.c.end_txn("t", commit->producer_id, commit->producer_epoch, false, bump, std::nullopt, d.now);
    if (bump) {
      CHECK(retried.ok());
    } else {
      REQUIRE_FALSE(retried.ok());
      CHECK(retried.error().code == errc::invalid_txn_state);
    }
  }
  // And after an abort: a commit while the abort's markers are written waits the same way.
  driver d;
  auto p = d.init("t").value();
  REQUIRE(d.add("t", p, {tp("a", 0)}).ok());
  auto abort = d.end("t", p.producer_id, p.producer_epoch, false, true);
  REQUIRE(abort.ok());
  CHECK(d.c.end_txn("t", abort->producer_id, abort->producer_epoch, true, true, std::nullopt, d.now).error().code ==
        errc::concurrent_transactions);
}

TEST_CASE("a failed first write forgets the id; a failed later write keeps the old state") {
  driver d;
  auto r = d.c.init_producer_id("t", 60000, std::nullopt, P(7), d.now);
  REQUIRE(r.ok());
  CHECK(d.c.write_pending("t"));
  CHECK(d.c.init_producer_id("t", 60000, std::nullopt, P(8), d.now).error().code == errc::concurrent_transactions);
  CHECK_FALSE(d.c.complete_write("t", false).has_value());
  CHECK(d.c.find("t") == nullptr);
  auto ok = d.init("t");
  REQUIRE(ok.ok());
  auto add = d.c.add_partitions("t", ok->producer_id, ok->producer_epoch, {tp("a", 0)}, d.now);
  REQUIRE(add.ok());
  d.c.complete_write("t", false);
  CHECK(d.state("t") == txn_state::empty);
}

TEST_CASE("commit: Empty -> Ongoing -> PrepareCommit -> markers -> CompleteCommit") {
  driver d;
  auto p = d.init("t").value();
  auto added = d.add("t", p, {tp("a", 0), tp("b", 1)});
  REQUIRE(added.ok());
  CHECK(d.state("t") == txn_state::ongoing);
  CHECK(d.c.find("t")->txn_start_ms == d.now);
  // Adding what is already there writes nothing.
  auto again = d.c.add_partitions("t", p.producer_id, p.producer_epoch, {tp("a", 0)}, d.now);
  REQUIRE(again.ok());
  CHECK_FALSE(again->write.has_value());
  auto end = d.end("t", p.producer_id, p.producer_epoch, true, false);
  REQUIRE(end.ok());
  CHECK(d.state("t") == txn_state::prepare_commit);
  REQUIRE(d.markers.size() == 1);
  CHECK(d.markers[0].committed);
  CHECK(d.markers[0].producer_epoch == p.producer_epoch);   // no bump for EndTxn v0-v4
  CHECK(d.markers[0].partitions == partition_set{tp("a", 0), tp("b", 1)});
  // While the markers are written nothing else may start: the same decision is a retry, and the
  // other one waits too (retriable; once the markers are written it meets CompleteCommit and is
  // refused below).
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, true, false, std::nullopt, d.now).error().code ==
        errc::concurrent_transactions);
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, false, false, std::nullopt, d.now).error().code ==
        errc::concurrent_transactions);
  CHECK(d.c.add_partitions("t", p.producer_id, p.producer_epoch, {tp("c", 0)}, d.now).error().code ==
        errc::concurrent_transactions);
  CHECK(d.c.init_producer_id("t", 60000, std::nullopt, std::nullopt, d.now).error().code ==
        errc::concurrent_transactions);
  d.finish_markers();
  CHECK(d.state("t") == txn_state::complete_commit);
  CHECK(d.c.find("t")->partitions.empty());
  // A retried commit is answered; an abort of a committed transaction is not.
  auto retry = d.end("t", p.producer_id, p.producer_epoch, true, false);
  REQUIRE(retry.ok());
  CHECK_FALSE(retry->write.has_value());
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, false, false, std::nullopt, d.now).error().code ==
        errc::invalid_txn_state);
  // The next transaction starts from CompleteCommit.
  REQUIRE(d.add("t", p, {tp("c", 0)}).ok());
  CHECK(d.c.find("t")->partitions == partition_set{tp("c", 0)});
}

TEST_CASE("abort: Ongoing -> PrepareAbort -> CompleteAbort; ending an Empty transaction is refused") {
  driver d;
  auto p = d.init("t").value();
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, true, false, std::nullopt, d.now).error().code ==
        errc::invalid_txn_state);
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, false, false, std::nullopt, d.now).error().code ==
        errc::invalid_txn_state);
  REQUIRE(d.add("t", p, {tp("a", 0)}).ok());
  REQUIRE(d.end("t", p.producer_id, p.producer_epoch, false, false).ok());
  CHECK(d.state("t") == txn_state::prepare_abort);
  REQUIRE(d.markers.size() == 1);
  CHECK_FALSE(d.markers[0].committed);
  d.finish_markers();
  CHECK(d.state("t") == txn_state::complete_abort);
  CHECK(d.end("t", p.producer_id, p.producer_epoch, false, false).ok());
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, true, false, std::nullopt, d.now).error().code ==
        errc::invalid_txn_state);
}

TEST_CASE("wrong producer id or epoch: invalid_producer_id_mapping, producer_fenced") {
  driver d;
  auto p = d.init("t").value();
  CHECK(d.c.add_partitions("t", P(999), p.producer_epoch, {tp("a", 0)}, d.now).error().code ==
        errc::invalid_producer_id_mapping);
  CHECK(d.c.add_partitions("nobody", p.producer_id, p.producer_epoch, {tp("a", 0)}, d.now).error().code ==
        errc::invalid_producer_id_mapping);
  CHECK(d.c.add_partitions("t", p.producer_id, E(p.producer_epoch.value() + 1), {tp("a", 0)}, d.now).error().code ==
        errc::producer_fenced);
  CHECK(d.c.end_txn("t", P(999), p.producer_epoch, true, false, std::nullopt, d.now).error().code ==
        errc::invalid_producer_id_mapping);
}

TEST_CASE("a zombie is fenced: InitProducerId aborts the old producer's ongoing transaction") {
  driver d;
  auto old = d.init("t").value();
  REQUIRE(d.add("t", old, {tp("a", 0)}).ok());
  auto fencing = d.init("t");
  REQUIRE(fencing.ok());
  CHECK(fencing->answer_retry);   // the new producer retries until the abort completed
  CHECK(d.state("t") == txn_state::prepare_abort);
  REQUIRE(d.markers.size() == 1);
  CHECK_FALSE(d.markers[0].committed);
  CHECK(d.markers[0].producer_epoch == E(old.producer_epoch.value() + 1));   // markers fence the zombie's epoch
  // The zombie can neither add nor commit.
  CHECK(d.c.end_txn("t", old.producer_id, old.producer_epoch, true, false, std::nullopt, d.now).error().code ==
        errc::producer_fenced);
  CHECK(d.init("t").error().code == errc::concurrent_transactions);
  d.finish_markers();
  auto fresh = d.init("t");
  REQUIRE(fresh.ok());
  CHECK_FALSE(fresh->answer_retry);
  CHECK(fresh->producer_epoch == E(old.producer_epoch.value() + 2));
  CHECK(d.c.add_partitions("t", old.producer_id, old.producer_epoch, {tp("a", 0)}, d.now).error().code ==
        errc::producer_fenced);
  CHECK(d.add("t", fresh.value(), {tp("a", 0)}).ok());
}

TEST_CASE("a transaction past its timeout is aborted with a bumped epoch; the producer may resume (KIP-360)") {
  driver d;
  auto p = d.init("t", 5000).value();
  REQUIRE(d.add("t", p, {tp("a", 0)}).ok());
  d.now += 4999;
  CHECK(d.c.expire(d.now).empty());
  d.now += 1;
  auto due = d.c.expire(d.now);
  REQUIRE(due.size() == 1);
  CHECK(due[0].state == txn_state::prepare_abort);
  CHECK(due[0].producer_epoch == E(p.producer_epoch.value() + 1));
  CHECK(d.c.expire(d.now).empty());   // being written: not twice
  d.durable(due[0]);
  d.finish_markers();
  CHECK(d.state("t") == txn_state::complete_abort);
  // The hung producer's commit is refused.
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, true, false, std::nullopt, d.now).error().code ==
        errc::producer_fenced);
  // A producer naming a foreign epoch is fenced; the one whose epoch was bumped may resume.
  CHECK(d.init("t", 5000, std::make_pair(p.producer_id, E(42))).error().code == errc::producer_fenced);
  auto resumed = d.init("t", 5000, std::make_pair(p.producer_id, p.producer_epoch));
  REQUIRE(resumed.ok());
  CHECK(resumed->producer_epoch == E(p.producer_epoch.value() + 2));
}

TEST_CASE("idle ids expire after transactional.id.expiration.ms; ongoing ones do not") {
  coordinator_options o;
  o.transactional_id_expiration_ms = 1000;
  driver d(o);
  auto p = d.init("idle").value();
  auto q = d.init("busy", 900'000).value();
  (void)p;
  REQUIRE(d.add("busy", q, {tp("a", 0)}).ok());
  d.now += 1000;
  auto due = d.c.expire(d.now);
  REQUIRE(due.size() == 1);
  CHECK(due[0].transactional_id == "idle");
  CHECK(due[0].state == txn_state::dead);
  d.durable(due[0]);
  CHECK_FALSE(d.log.back().value.has_value());   // a tombstone
  CHECK(d.c.find("idle") == nullptr);
  CHECK(d.c.find("busy") != nullptr);
}

TEST_CASE("an operator's abort of an ongoing transaction") {
  driver d;
  CHECK(d.c.abort_transaction("nobody", d.now).error().code == errc::transactional_id_not_found);
  auto p = d.init("t").value();
  CHECK(d.c.abort_transaction("t", d.now).error().code == errc::invalid_txn_state);
  REQUIRE(d.add("t", p, {tp("a", 0)}).ok());
  REQUIRE(d.run(d.c.abort_transaction("t", d.now)).ok());
  d.finish_markers();
  CHECK(d.state("t") == txn_state::complete_abort);
  CHECK(d.c.find("t")->producer_epoch == E(p.producer_epoch.value() + 1));
}

TEST_CASE("replay rebuilds the state; a Prepare* left behind gets its markers again") {
  driver d;
  auto p = d.init("a").value();
  REQUIRE(d.add("a", p, {tp("x", 0)}).ok());
  REQUIRE(d.end("a", p.producer_id, p.producer_epoch, true, false).ok());   // markers not written
  auto q = d.init("b").value();
  REQUIRE(d.add("b", q, {tp("y", 1)}).ok());
  auto r = d.init("c").value();
  (void)r;
  transaction_coordinator replayed;
  for (const auto& rec : d.log) {
    std::optional<std::span<const std::byte>> v;
    if (rec.value) v = std::span<const std::byte>(*rec.value);
    REQUIRE(replayed.replay(rec.key, v).ok());
  }
  CHECK(replayed.size() == 3);
  CHECK(*replayed.find("a") == *d.c.find("a"));
  CHECK(*replayed.find("b") == *d.c.find("b"));
  auto due = replayed.pending_markers();
  REQUIRE(due.size() == 1);
  CHECK(due[0].transactional_id == "a");
  CHECK(due[0].committed);
  CHECK(due[0].partitions == partition_set{tp("x", 0)});
  auto done = replayed.markers_written("a", due[0].producer_epoch, d.now);
  REQUIRE(done.ok());
  CHECK(done->state == txn_state::complete_commit);
  // A stale completion (another epoch) is refused.
  CHECK(replayed.markers_written("b", q.producer_epoch, d.now).error().code == errc::invalid_txn_state);
}

TEST_CASE("ListTransactions filters by state, producer id and duration") {
  driver d;
  auto p = d.init("a").value();
  REQUIRE(d.add("a", p, {tp("x", 0)}).ok());
  REQUIRE(d.init("b").ok());
  d.now += 10'000;
  CHECK(d.c.list({}, {}, -1, d.now).size() == 2);
  auto ongoing = d.c.list({txn_state::ongoing}, {}, -1, d.now);
  REQUIRE(ongoing.size() == 1);
  CHECK(ongoing[0].transactional_id == "a");
  CHECK(d.c.list({}, {p.producer_id}, -1, d.now).size() == 1);
  CHECK(d.c.list({}, {}, 10'000, d.now).size() == 1);
  CHECK(d.c.list({}, {}, 10'001, d.now).empty());
}

// ---- KIP-890 part 2: the epoch is bumped at every transaction end

TEST_CASE("KIP-890: EndTxn v5 bumps the epoch; the markers and the answer carry the new one") {
  driver d;
  auto p = d.init("t").value();
  REQUIRE(d.add("t", p, {tp("a", 0)}).ok());
  auto end = d.end("t", p.producer_id, p.producer_epoch, true, true);
  REQUIRE(end.ok());
  CHECK(end->producer_epoch == E(p.producer_epoch.value() + 1));
  REQUIRE(d.markers.size() == 1);
  CHECK(d.markers[0].producer_epoch == end->producer_epoch);
  // A retry of that EndTxn (old epoch, same decision) is answered with the new epoch, also
  // after the markers are written.
  auto retry = d.c.end_txn("t", p.producer_id, p.producer_epoch, true, true, std::nullopt, d.now);
  REQUIRE(retry.ok());
  CHECK_FALSE(retry->write.has_value());
  CHECK(retry->producer_epoch == end->producer_epoch);
  d.finish_markers();
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, true, true, std::nullopt, d.now).ok());
  // The other decision with the old epoch is a zombie.
  CHECK(d.c.end_txn("t", p.producer_id, p.producer_epoch, false, true, std::nullopt, d.now).error().code ==
        errc::producer_fenced);
  // A bumping client may abort an empty transaction (it moves its epoch on).
  outcome next{std::nullopt, end->producer_id, end->producer_epoch, false};
  auto abort_empty = d.end("t", next.producer_id, next.producer_epoch, false, true);
  REQUIRE(abort_empty.ok());
  CHECK(abort_empty->producer_epoch == E(next.producer_epoch.value() + 1));
}

namespace {

/// The KAFKA-17754 history: transaction 1 is committed (EndTxn v5) and its answer is lost or
/// slow; the client goes on with transaction 2 (with the epoch it was given, or after a retry);
/// then the delayed duplicate of transaction 1's EndTxn arrives while transaction 2 is ongoing.
/// Returns "" when transaction 2 is untouched (still Ongoing, its partitions not marked), else
/// what went wrong: the checker the negative control must trip.
std::string delayed_end_txn_violation(coordinator_options o) {
  driver d(o);
  auto p = d.init("t").value();
  if (!d.add("t", p, {tp("a", 0)}).ok()) return "txn 1 add failed";
  auto end1 = d.end("t", p.producer_id, p.producer_epoch, true, true);
  if (!end1.ok()) return "txn 1 end failed";
  d.finish_markers();
  outcome second{std::nullopt, end1->producer_id, end1->producer_epoch, false};
  if (!d.add("t", second, {tp("b", 0)}).ok()) return "txn 2 add failed";
  // The delayed EndTxn of transaction 1.
  auto delayed = d.end("t", p.producer_id, p.producer_epoch, true, true);
  if (d.state("t") != txn_state::ongoing) {
    return "the delayed EndTxn of transaction 1 moved transaction 2 to " + std::string(kafka_name(d.state("t")));
  }
  for (const auto& m : d.markers) {
    if (m.partitions.contains(tp("b", 0))) return "transaction 2's partition got a marker";
  }
  if (delayed.ok()) return "the delayed EndTxn was answered ok";
  if (delayed.error().code != errc::producer_fenced) return "refused with " + std::string(to_string(delayed.error().code));
  return "";
}

}  // namespace

TEST_CASE("KAFKA-17754: a delayed EndTxn of an ended transaction never ends the next one") {
  CHECK(delayed_end_txn_violation({}) == "");
}

TEST_CASE("negative control: without the epoch bump per transaction the checker catches the hole") {
  coordinator_options broken;
  broken.bump_epoch_per_transaction = false;
  const std::string violation = delayed_end_txn_violation(broken);
  CHECK(violation == "the delayed EndTxn of transaction 1 moved transaction 2 to PrepareCommit");
}

TEST_CASE("an exhausted epoch takes a new producer id at InitProducerId") {
  driver d;
  REQUIRE(d.init("t").ok());
  // Replay a record at the last epoch.
  txn_metadata md = *d.c.find("t");
  md.producer_epoch = E(limits::producer_epoch_max);
  auto rec = record_of(md);
  REQUIRE(d.c.replay(rec.key, std::span<const std::byte>(*rec.value)).ok());
  auto r = d.c.init_producer_id("t", 60000, std::nullopt, std::nullopt, d.now);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::producer_id_needed);
  auto fresh = d.init("t");
  REQUIRE(fresh.ok());
  CHECK(fresh->producer_id != md.producer_id);
  CHECK(fresh->producer_epoch == E(0));
}

TEST_CASE("KIP-890 part 1: verify_partition confirms only partitions of the producer's ongoing transaction") {
  driver d;
  auto p = d.init("t").value();
  // Empty: nothing to verify against.
  CHECK(d.c.verify_partition("t", p.producer_id, p.producer_epoch, tp("a", 0)).error().code == errc::invalid_txn_state);
  REQUIRE(d.add("t", p, {tp("a", 0)}).ok());
  CHECK(d.c.verify_partition("t", p.producer_id, p.producer_epoch, tp("a", 0)).ok());
  // Not added; another producer id; an older epoch; an unknown id.
  CHECK(d.c.verify_partition("t", p.producer_id, p.producer_epoch, tp("a", 1)).error().code == errc::invalid_txn_state);
  CHECK(d.c.verify_partition("t", P(p.producer_id.value() + 1), p.producer_epoch, tp("a", 0)).error().code ==
        errc::invalid_producer_id_mapping);
  CHECK(d.c.verify_partition("t", p.producer_id, E(static_cast<int16_t>(p.producer_epoch.value() + 1)), tp("a", 0))
            .error().code == errc::producer_fenced);
  CHECK(d.c.verify_partition("nobody", p.producer_id, p.producer_epoch, tp("a", 0)).error().code ==
        errc::invalid_producer_id_mapping);
  // Ending (PrepareCommit written, markers due) and ended: a late batch of the transaction is refused.
  auto end = d.end("t", p.producer_id, p.producer_epoch, true, true);
  REQUIRE(end.ok());
  CHECK(d.c.verify_partition("t", p.producer_id, p.producer_epoch, tp("a", 0)).error().code == errc::producer_fenced);
  CHECK(d.c.verify_partition("t", end->producer_id, end->producer_epoch, tp("a", 0)).error().code ==
        errc::invalid_txn_state);
  d.finish_markers();
  CHECK(d.c.verify_partition("t", end->producer_id, end->producer_epoch, tp("a", 0)).error().code ==
        errc::invalid_txn_state);
  // An end being written (pending) already refuses, before it is durable.
  REQUIRE(d.add("t", *end, {tp("b", 0)}).ok());
  CHECK(d.c.verify_partition("t", end->producer_id, end->producer_epoch, tp("b", 0)).ok());
  auto pending = d.c.end_txn("t", end->producer_id, end->producer_epoch, false, false, std::nullopt, d.now);
  REQUIRE(pending.ok());
  CHECK(d.c.verify_partition("t", end->producer_id, end->producer_epoch, tp("b", 0)).error().code ==
        errc::invalid_txn_state);
}

TEST_CASE("a new transactional id past transactional_ids_per_partition_max is refused with a message naming the limit") {
  driver d;
  for (size_t i = 0; i < limits::transactional_ids_per_partition_max; ++i) {
    auto r = d.c.init_producer_id("id-" + std::to_string(i), 60000, std::nullopt, P(static_cast<int64_t>(i)), d.now);
    REQUIRE(r.ok());
  }
  auto refused = d.c.init_producer_id("one-too-many", 60000, std::nullopt, P(1'000'000), d.now);
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == errc::too_many_transactional_ids);
  const std::string& m = refused.error().message;
  CHECK(m.find("transactional id 'one-too-many'") != std::string::npos);
  CHECK(m.find("transactional_ids_per_partition_max (100000)") != std::string::npos);
  CHECK(m.find("transactional.id.expiration.ms") != std::string::npos);
  // A known id is still served.
  CHECK(d.c.init_producer_id("id-7", 60000, std::nullopt, std::nullopt, d.now).error().code == errc::concurrent_transactions);
}
