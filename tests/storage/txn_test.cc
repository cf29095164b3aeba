// The partition side of transactions (KIP-98): producer state with open transactions, the last
// stable offset, transaction markers, the aborted-transaction index (.txnindex: round trip,
// clipped, corrupt, unknown version), recovery after a clean stop, a crash of the simulated disk
// and SIGKILL of a real process, followers and truncation, retention. A negative control proves
// the read_committed check catches a broken last-stable-offset rule.
#include <doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <map>
#include <thread>

#include "ringlog/codec/crc32c.h"
#include "ringlog/io/sim_file_system.h"
#include "segment.h"
#include "test_util.h"

using namespace ringlog;
using namespace ringlog::storage;

namespace {

constexpr int64_t t0 = 1'700'000'000'000;
constexpr model::leader_epoch le{1};

struct splitmix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

/// A batch of `count` records of producer `pid`/`epoch` from sequence `seq`; transactional
/// unless `transactional` is false. Values are "p<pid>:<tag>:<i>".
model::bytes producer_batch_of(int64_t pid, int16_t epoch, int32_t seq, int count, int64_t tag, bool transactional = true) {
  std::vector<model::record> records;
  for (int i = 0; i < count; ++i) {
    model::record r;
    r.timestamp = t0;
    r.value = model::to_bytes("p" + std::to_string(pid) + ":" + std::to_string(tag) + ":" + std::to_string(i));
    records.push_back(std::move(r));
  }
  codec::batch_options o;
  o.producer = model::producer_id{pid};
  o.producer_epoch_value = model::producer_epoch{epoch};
  o.base_sequence = model::sequence{seq};
  o.is_transactional = transactional;
  auto encoded = codec::encode_batch(o, records);
  REQUIRE(encoded.ok());
  return std::move(encoded.value());
}

codec::batch_header header_at(const model::bytes& batch, int64_t base_offset) {
  auto h = codec::decode_header(batch);
  REQUIRE(h.ok());
  h->base_offset = model::offset{base_offset};
  return h.value();
}

codec::batch_header marker_header(int64_t pid, int16_t epoch, int64_t offset) {
  codec::batch_options o;
  o.base_offset = model::offset{offset};
  o.producer = model::producer_id{pid};
  o.producer_epoch_value = model::producer_epoch{epoch};
  auto b = codec::encode_control_batch(o, {codec::control_type::commit, 0}, t0);
  REQUIRE(b.ok());
  return header_at(b.value(), offset);
}

result<append_result> marker(partition_log& l, int64_t pid, int16_t epoch, bool commit, int32_t coordinator_epoch = 0) {
  return l.append_marker(model::producer_id{pid}, model::producer_epoch{epoch},
                         {commit ? codec::control_type::commit : codec::control_type::abort, coordinator_epoch}, le);
}

log_config small_segments() {
  log_config c;
  c.segment_bytes = 2048;
  c.index_interval_bytes = 256;
  return c;
}

/// What a from-scratch scan of the whole log says: the aborted transactions (with Kafka's
/// last_stable_offset rule), the first offset of every open transaction, and for each
/// transactional data batch whether its transaction committed, aborted or is still open.
struct txn_oracle {
  std::vector<aborted_txn_entry> aborted;
  std::map<int64_t, int64_t> open;                 // producer -> first offset
  std::map<int64_t, char> batch_fate;              // transactional batch base offset -> 'c', 'a', 'o'
  [[nodiscard]] std::optional<model::offset> first_unstable() const {
    std::optional<model::offset> out;
    for (const auto& [pid, first] : open) out = std::min(out.value_or(model::offset{first}), model::offset{first});
    return out;
  }
};

txn_oracle scan(partition_log& l) {
  txn_oracle o;
  std::map<int64_t, std::vector<int64_t>> open_batches;   // producer -> its open transaction's batches
  auto read = l.read(l.log_start_offset(), 1 << 30, l.log_end_offset());
  REQUIRE(read.ok());
  size_t pos = 0;
  const auto& bytes = read->batches;
  while (pos < bytes.size()) {
    auto h = codec::decode_header(std::span(bytes).subspan(pos));
    REQUIRE(h.ok());
    const auto batch = std::span(bytes).subspan(pos, h->size_bytes());
    pos += h->size_bytes();
    const int64_t pid = h->producer.value();
    if (pid < 0) continue;
    if (h->is_control()) {
      auto records = codec::decode_records(batch);
      REQUIRE(records.ok());
      auto m = codec::decode_control_record(records->front());
      REQUIRE(m.ok());
      auto it = o.open.find(pid);
      if (it == o.open.end()) continue;
      const bool aborted = m->type == codec::control_type::abort;
      for (int64_t b : open_batches[pid]) o.batch_fate[b] = aborted ? 'a' : 'c';
      open_batches.erase(pid);
      const int64_t first = it->second;
      o.open.erase(it);
      if (aborted) {
        const model::offset stable = o.first_unstable().value_or(h->last_offset() + 1);
        o.aborted.push_back({model::producer_id{pid}, model::offset{first}, h->last_offset(), stable});
      }
    } else if (h->is_transactional()) {
      o.open.emplace(pid, h->base_offset.value());
      open_batches[pid].push_back(h->base_offset.value());
      o.batch_fate[h->base_offset.value()] = 'o';
    }
  }
  return o;
}

/// The state the log keeps must equal a from-scratch scan of it.
void check_state_matches_log(partition_log& l, const std::string& context) {
  INFO(context);
  const txn_oracle o = scan(l);
  CHECK(l.aborted_transactions() == o.aborted);
  CHECK(l.first_unstable_offset() == o.first_unstable());
}

using lso_rule = std::function<model::offset(const partition_log&)>;

/// A read_committed read of the whole log with `rule` as its upper bound: every record returned
/// must be non-transactional or of a committed transaction, and every committed or
/// non-transactional record below the bound must be returned. Returns the violations found.
std::vector<std::string> read_committed_violations(partition_log& l, const lso_rule& rule) {
  std::vector<std::string> violations;
  const txn_oracle o = scan(l);
  const model::offset upper = rule(l);
  auto read = l.read(l.log_start_offset(), 1 << 30, upper);
  REQUIRE(read.ok());
  aborted_txn_filter filter(l.aborted_transactions(l.log_start_offset(), upper));
  size_t pos = 0;
  const auto& bytes = read->batches;
  while (pos < bytes.size()) {
    auto h = codec::decode_header(std::span(bytes).subspan(pos));
    REQUIRE(h.ok());
    const auto batch = std::span(bytes).subspan(pos, h->size_bytes());
    pos += h->size_bytes();
    std::optional<codec::control_type> m;
    if (h->is_control() && h->producer.value() >= 0) {
      auto records = codec::decode_records(batch);
      REQUIRE(records.ok());
      m = codec::decode_control_record(records->front())->type;
    }
    const bool kept = filter.keep(h.value(), m);
    if (h->is_control()) continue;
    const char fate = h->is_transactional() ? o.batch_fate.at(h->base_offset.value()) : 'c';
    if (kept && fate != 'c') {
      violations.push_back("batch at " + std::to_string(h->base_offset.value()) + " returned but its transaction is " +
                           (fate == 'a' ? "aborted" : "open"));
    }
    if (!kept && fate == 'c') violations.push_back("committed batch at " + std::to_string(h->base_offset.value()) + " dropped");
  }
  return violations;
}

}  // namespace

TEST_CASE("txnindex: Kafka's 34-byte entries round-trip; clipped, unknown version and bad entries are corrupt") {
  std::vector<aborted_txn_entry> entries{{model::producer_id{7}, model::offset{3}, model::offset{9}, model::offset{10}},
                                         {model::producer_id{8}, model::offset{4}, model::offset{12}, model::offset{5}}};
  const model::bytes bytes = encode_txn_index(entries);
  REQUIRE(bytes.size() == 2 * txn_index_entry_bytes);
  // Byte for byte Kafka's AbortedTxn: version 0, producer id, first, last, last stable offset.
  const std::vector<uint8_t> first_entry{0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 3,
                                         0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 10};
  for (size_t i = 0; i < first_entry.size(); ++i) CHECK(static_cast<uint8_t>(bytes[i]) == first_entry[i]);
  auto back = decode_txn_index(bytes);
  REQUIRE(back.ok());
  CHECK(back.value() == entries);
  CHECK(decode_txn_index({}).value().empty());
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    auto clipped = decode_txn_index(std::span(bytes).first(cut));
    if (cut % txn_index_entry_bytes == 0) {
      CHECK(clipped.ok());
      continue;
    }
    REQUIRE(!clipped.ok());
    CHECK(clipped.error().code == errc::corrupt_txn_index);
  }
  auto unknown = bytes;
  unknown[txn_index_entry_bytes + 1] = std::byte{1};
  auto u = decode_txn_index(unknown);
  REQUIRE(!u.ok());
  CHECK(u.error().message.find("entry 1 has unknown version 1") != std::string::npos);
  auto backwards = entries;
  std::swap(backwards[0], backwards[1]);
  CHECK(!decode_txn_index(encode_txn_index(backwards)).ok());
  auto inverted = bytes;
  inverted[17] = std::byte{20};   // entry 0 first_offset 20 > last_offset 9
  CHECK(decode_txn_index(inverted).error().message.find("above last_offset") != std::string::npos);
  auto negative = bytes;
  negative[2] = std::byte{0x80};
  CHECK(!decode_txn_index(negative).ok());
}

TEST_CASE("last stable offset: below every open transaction, never above the high watermark or below the log start") {
  CHECK(last_stable_offset_of(std::nullopt, model::offset{10}, model::offset{0}).value() == 10);
  CHECK(last_stable_offset_of(model::offset{4}, model::offset{10}, model::offset{0}).value() == 4);
  CHECK(last_stable_offset_of(model::offset{12}, model::offset{10}, model::offset{0}).value() == 10);
  CHECK(last_stable_offset_of(model::offset{2}, model::offset{10}, model::offset{5}).value() == 5);
}

TEST_CASE("producer_state: transactions open at their first batch, end at a marker; the rules around them") {
  producer_state s;
  CHECK(!s.first_unstable_offset());
  s.update(header_at(producer_batch_of(1, 0, 0, 2, 0), 0), t0);   // offsets 0-1, producer 1's txn from 0
  s.update(header_at(producer_batch_of(2, 0, 0, 1, 0), 2), t0);   // offset 2, producer 2's txn from 2
  s.update(header_at(producer_batch_of(1, 0, 2, 1, 1), 3), t0);   // offset 3, still producer 1's txn
  CHECK(s.first_unstable_offset() == model::offset{0});
  CHECK(s.find(model::producer_id{1})->current_txn_first_offset == model::offset{0});
  // Inside its transaction a producer may not write a non-transactional batch.
  auto plain = s.check(header_at(producer_batch_of(1, 0, 3, 1, 2, false), 4));
  REQUIRE(!plain.ok());
  CHECK(plain.error().code == errc::invalid_txn_state);
  // Markers: a stale producer epoch is refused, so is an older coordinator epoch.
  CHECK(s.check_marker(model::producer_id{1}, model::producer_epoch{0}, 3).ok());
  CHECK(s.check_marker(model::producer_id{99}, model::producer_epoch{0}, 0).ok());   // unknown producer: Kafka writes it
  auto done = s.end_txn(marker_header(1, 0, 4), {codec::control_type::abort, 3}, t0);
  REQUIRE(done);
  CHECK(*done == completed_txn{model::producer_id{1}, model::offset{0}, model::offset{4}, true});
  CHECK(s.first_unstable_offset() == model::offset{2});
  CHECK(!s.end_txn(marker_header(1, 0, 5), {codec::control_type::abort, 3}, t0));   // a retried marker ends nothing
  auto fenced = s.check_marker(model::producer_id{1}, model::producer_epoch{0}, 2);
  REQUIRE(!fenced.ok());
  CHECK(fenced.error().code == errc::transaction_coordinator_fenced);
  // KIP-890: a marker in a bumped epoch; the old epoch is fenced after it, the new starts at 0.
  auto committed = s.end_txn(marker_header(2, 1, 6), {codec::control_type::commit, 0}, t0);
  REQUIRE(committed);
  CHECK(!committed->aborted);
  CHECK(!s.first_unstable_offset());
  auto stale = s.check_marker(model::producer_id{2}, model::producer_epoch{0}, 0);
  REQUIRE(!stale.ok());
  CHECK(stale.error().code == errc::invalid_producer_epoch);
  auto zombie = s.check(header_at(producer_batch_of(2, 0, 1, 1, 3), 7));
  REQUIRE(!zombie.ok());
  CHECK(zombie.error().code == errc::invalid_producer_epoch);
  auto not_zero = s.check(header_at(producer_batch_of(2, 1, 5, 1, 3), 7));
  REQUIRE(!not_zero.ok());
  CHECK(not_zero.error().code == errc::out_of_order_sequence_number);
  CHECK(s.check(header_at(producer_batch_of(2, 1, 0, 1, 3), 7)).ok());
  // An open transaction keeps its producer from expiring; a finished one does not.
  s.update(header_at(producer_batch_of(3, 0, 0, 1, 0), 8), t0);
  CHECK(s.remove_expired(t0 + 1'000'000, 1000) == 2);   // producers 1 and 2 go
  CHECK(s.find(model::producer_id{3}) != nullptr);
  CHECK(s.first_unstable_offset() == model::offset{8});
}

TEST_CASE("producer_state: at the bound a new producer is refused only while every known one is inside a transaction") {
  producer_state s;
  const auto max = static_cast<int64_t>(producers_per_partition_max);
  for (int64_t id = 0; id < max; ++id) s.update(header_at(producer_batch_of(id, 0, 0, 1, 0), id), t0);
  auto refused = s.check(header_at(producer_batch_of(max, 0, 0, 1, 0, false), max));
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == errc::too_many_producers);
  CHECK(refused.error().message.find("producers_per_partition_max") != std::string::npos);
  CHECK(refused.error().message.find("open transaction") != std::string::npos);
  // Producer 7's transaction ends: it is idle now, and the newcomer takes its place.
  REQUIRE(s.end_txn(marker_header(7, 0, max), {codec::control_type::commit, 0}, t0));
  auto newcomer = header_at(producer_batch_of(max, 0, 0, 1, 0, false), max + 1);
  REQUIRE(s.check(newcomer).ok());
  s.update(newcomer, t0);
  CHECK(s.producers().size() == producers_per_partition_max);
  CHECK(s.find(model::producer_id{7}) == nullptr);
  CHECK(s.ongoing_transactions().size() == producers_per_partition_max - 1);
  auto back = producer_state::decode_snapshot(s.encode_snapshot(model::offset{max + 2}));
  REQUIRE(back.ok());
  CHECK(back->second == s);
}

TEST_CASE("producer_state: a follower past the bound (every producer in a transaction) makes room again, without a crash") {
  // A follower stores what its leader admitted without check(): with all of its producers inside
  // open transactions (the replicas expire idle producers on their own timers) it goes past the
  // bound; the next idle newcomers bring it back, and its snapshot still reads.
  producer_state s;
  const auto max = static_cast<int64_t>(producers_per_partition_max);
  for (int64_t id = 0; id < max; ++id) s.update(header_at(producer_batch_of(id, 0, 0, 1, 0), id), t0);
  s.update(header_at(producer_batch_of(max, 0, 0, 1, 0), max), t0);
  s.update(header_at(producer_batch_of(max + 1, 0, 0, 1, 0), max + 1), t0);
  CHECK(s.producers().size() == producers_per_partition_max + 2);
  auto over = producer_state::decode_snapshot(s.encode_snapshot(model::offset{max + 2}));
  REQUIRE(over.ok());
  CHECK(over->second == s);
  REQUIRE(s.end_txn(marker_header(7, 0, max + 2), {codec::control_type::commit, 0}, t0));
  REQUIRE(s.end_txn(marker_header(8, 0, max + 3), {codec::control_type::commit, 0}, t0));
  s.update(header_at(producer_batch_of(max + 2, 0, 0, 1, 0, false), max + 4), t0);
  CHECK(s.producers().size() == producers_per_partition_max);
  CHECK(s.find(model::producer_id{7}) == nullptr);
  CHECK(s.find(model::producer_id{8}) == nullptr);
}

TEST_CASE("producer snapshot v3 keeps open transactions and coordinator epochs; version 1 files still read") {
  producer_state s;
  s.update(header_at(producer_batch_of(1, 0, 0, 2, 0), 0), t0);
  s.update(header_at(producer_batch_of(2, 3, 0, 1, 0, false), 2), t0 + 1);
  s.end_txn(marker_header(4, 2, 3), {codec::control_type::commit, 9}, t0 + 2);   // a producer known only by a marker
  auto bytes = s.encode_snapshot(model::offset{4});
  CHECK(bytes.size() == producer_snapshot_header_bytes + 3 * producer_snapshot_producer_bytes +
                            2 * producer_snapshot_batch_bytes);
  auto back = producer_state::decode_snapshot(bytes);
  REQUIRE(back.ok());
  CHECK(back->second == s);
  CHECK(back->second.first_unstable_offset() == model::offset{0});
  CHECK(back->second.find(model::producer_id{4})->coordinator_epoch == 9);
  CHECK(back->second.find(model::producer_id{4})->batches.empty());
  for (size_t cut = 0; cut < bytes.size(); ++cut) CHECK(!producer_state::decode_snapshot(std::span(bytes).first(cut)).ok());
  auto future = bytes;
  future[1] = std::byte{4};
  auto unknown = producer_state::decode_snapshot(future);
  REQUIRE(!unknown.ok());
  CHECK(unknown.error().message.find("unknown version 4") != std::string::npos);
  // A version 1 file (before transactions), written by hand: producer 5 epoch 1, one batch.
  model::bytes v1;
  auto put = [&v1](uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) v1.push_back(static_cast<std::byte>(v >> (8 * i)));
  };
  put(1, 2);                    // version 1
  put(0, 4);                    // CRC, below
  put(10, 8);                   // snapshot offset
  put(1, 4);                    // one producer
  put(5, 8), put(1, 2), put(1, 1);
  put(0, 4), put(2, 4), put(7, 8), put(2, 4), put(static_cast<uint64_t>(t0), 8);
  const uint32_t crc = codec::crc32c(std::span<const std::byte>(v1).subspan(6));
  for (int i = 0; i < 4; ++i) v1[2 + static_cast<size_t>(i)] = static_cast<std::byte>(crc >> (8 * (3 - i)));
  auto old = producer_state::decode_snapshot(v1);
  REQUIRE(old.ok());
  const producer_entry* e = old->second.find(model::producer_id{5});
  REQUIRE(e != nullptr);
  CHECK(e->epoch.value() == 1);
  CHECK(e->last_timestamp() == t0);
  CHECK(e->coordinator_epoch == -1);
  CHECK(!e->current_txn_first_offset);
  CHECK(e->batches.back().last_offset.value() == 9);
  auto zero_batches = v1;   // version 1 needs at least one batch per producer
  zero_batches[28] = std::byte{0};
  CHECK(!producer_state::decode_snapshot(zero_batches).ok());
}

TEST_CASE("partition_log: markers end transactions, the last stable offset follows, aborts are indexed on disk") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto log = partition_log::open(fs, "/data/t-0", small_segments(), clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  REQUIRE(l.append(test::make_batch(2, 0, t0), le).ok());                    // 0-1 plain
  REQUIRE(l.append(producer_batch_of(10, 0, 0, 2, 0), le).ok());             // 2-3 txn of 10
  REQUIRE(l.append(producer_batch_of(11, 0, 0, 1, 0), le).ok());             // 4 txn of 11
  l.set_high_watermark(l.log_end_offset());
  CHECK(l.first_unstable_offset() == model::offset{2});
  CHECK(l.last_stable_offset().value() == 2);
  REQUIRE(l.append(test::make_batch(1, 0, t0), le).ok());                    // 5 plain
  auto aborted = marker(l, 10, 0, false);                                    // 6: abort 10
  REQUIRE(aborted.ok());
  CHECK(aborted->base_offset.value() == 6);
  l.set_high_watermark(l.log_end_offset());
  CHECK(l.last_stable_offset().value() == 4);   // 11 still open
  REQUIRE(marker(l, 11, 0, true).ok());          // 7: commit 11
  // The marker at 7 is not below the high watermark (7) yet: a new leader may not have it, so
  // 11 still holds the last stable offset (Kafka's ProducerStateManager unreplicatedTxns).
  CHECK(l.last_stable_offset().value() == 4);
  l.set_high_watermark(l.log_end_offset());
  CHECK(l.last_stable_offset().value() == 8);
  const std::vector<aborted_txn_entry> expected{{model::producer_id{10}, model::offset{2}, model::offset{6}, model::offset{4}}};
  CHECK(l.aborted_transactions() == expected);
  CHECK(l.aborted_transactions(model::offset{0}, model::offset{8}) == expected);
  CHECK(l.aborted_transactions(model::offset{7}, model::offset{8}).empty());   // ended before 7
  CHECK(l.aborted_transactions(model::offset{0}, model::offset{2}).empty());   // began at 2
  auto file = io::read_whole_file(fs, "/data/t-0/00000000000000000000.txnindex");
  REQUIRE(file.ok());
  CHECK(file.value() == encode_txn_index(expected));
  // A stale epoch and a deposed coordinator are refused, nothing stored.
  REQUIRE(marker(l, 11, 1, true, 5).ok());
  auto stale = marker(l, 11, 0, true, 5);
  REQUIRE(!stale.ok());
  CHECK(stale.error().code == errc::invalid_producer_epoch);
  auto deposed = marker(l, 11, 1, true, 4);
  REQUIRE(!deposed.ok());
  CHECK(deposed.error().code == errc::transaction_coordinator_fenced);
  CHECK(l.log_end_offset().value() == 9);
  // Clients may not send control batches of a producer.
  codec::batch_options o;
  o.producer = model::producer_id{12};
  o.producer_epoch_value = model::producer_epoch{0};
  auto forged = codec::encode_control_batch(o, {codec::control_type::commit, 0}, t0);
  REQUIRE(forged.ok());
  auto refused = l.append(forged.value(), le);
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == errc::corrupt_message);
  check_state_matches_log(l, "after the appends");
  // Clean restart: the index and open transactions come back.
  REQUIRE(l.append(producer_batch_of(13, 0, 0, 1, 0), le).ok());   // 9: open txn of 13
  REQUIRE(l.close().ok());
  auto reopened = partition_log::open(fs, "/data/t-0", small_segments(), clock);
  REQUIRE(reopened.ok());
  CHECK(reopened.value()->aborted_transactions() == expected);
  CHECK(reopened.value()->first_unstable_offset() == model::offset{9});
  check_state_matches_log(*reopened.value(), "after a clean restart");
}

TEST_CASE("partition_log: transactions across segments survive crashes, corrupt indexes, followers, truncation, retention") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto cfg = small_segments();
  auto log = partition_log::open(fs, "/data/x-0", cfg, clock);
  REQUIRE(log.ok());
  splitmix rng{20261202};
  std::map<int64_t, int32_t> next_seq;
  std::map<int64_t, bool> open;
  auto step = [&](partition_log& l, int i) {
    const int64_t pid = 100 + static_cast<int64_t>(rng.below(4));
    const uint64_t what = rng.below(10);
    if (what < 6) {
      const int count = 1 + static_cast<int>(rng.below(4));
      REQUIRE(l.append(producer_batch_of(pid, 0, next_seq[pid], count, i), le).ok());
      next_seq[pid] += count;
      open[pid] = true;
    } else if (what < 8) {
      REQUIRE(marker(l, pid, 0, what == 6).ok());
      open[pid] = false;
    } else {
      REQUIRE(l.append(test::make_batch(1 + static_cast<int>(rng.below(3)), i, t0), le).ok());
    }
  };
  for (int i = 0; i < 200; ++i) step(*log.value(), i);
  REQUIRE(log.value()->segments().size() > 3);
  REQUIRE(!log.value()->aborted_transactions().empty());
  check_state_matches_log(*log.value(), "leader");
  // A follower fed the leader's batches keeps the same state and index.
  {
    auto follower = partition_log::open(fs, "/data/x-follower", cfg, clock);
    REQUIRE(follower.ok());
    auto all = log.value()->read(model::offset{0}, 1 << 30, log.value()->log_end_offset());
    REQUIRE(all.ok());
    REQUIRE(follower.value()->append_replicated(all->batches).ok());
    CHECK(follower.value()->aborted_transactions() == log.value()->aborted_transactions());
    CHECK(follower.value()->first_unstable_offset() == log.value()->first_unstable_offset());
    // Truncation (a diverged follower) rolls the index and open transactions back.
    const auto aborted = follower.value()->aborted_transactions();
    const model::offset cut = aborted.front().last_offset;   // the first abort marker goes
    REQUIRE(follower.value()->truncate_to(cut).ok());
    CHECK(follower.value()->aborted_transactions().empty());
    check_state_matches_log(*follower.value(), "follower after truncation");
  }
  REQUIRE(log.value()->flush().ok());
  const auto durable = log.value()->aborted_transactions();
  for (int i = 200; i < 260; ++i) step(*log.value(), i);   // not flushed: a crash may drop them
  log.value().reset();
  fs.crash(7);
  auto crashed = partition_log::open(fs, "/data/x-0", cfg, clock);
  REQUIRE(crashed.ok());
  check_state_matches_log(*crashed.value(), "after a simulated power loss");
  const auto after_crash = crashed.value()->aborted_transactions();
  REQUIRE(after_crash.size() >= durable.size());
  for (size_t i = 0; i < durable.size(); ++i) CHECK(after_crash[i] == durable[i]);
  // A corrupt .txnindex (a torn entry) is rebuilt from the segment's batches.
  std::string corrupted;
  for (const auto& seg : crashed.value()->segments()) {
    const std::string path = "/data/x-0/" + segment_file_stem(seg.base_offset) + ".txnindex";
    if (!fs.exists(path) || seg.base_offset == crashed.value()->segments().back().base_offset) continue;
    auto bytes = io::read_whole_file(fs, path);
    REQUIRE(bytes.ok());
    bytes->pop_back();
    REQUIRE(io::write_file_atomic(fs, path, bytes.value()).ok());
    corrupted = path;
    break;
  }
  REQUIRE(!corrupted.empty());
  REQUIRE(crashed.value()->close().ok());
  auto rebuilt = partition_log::open(fs, "/data/x-0", cfg, clock);
  REQUIRE(rebuilt.ok());
  CHECK(rebuilt.value()->aborted_transactions() == after_crash);
  auto repaired = io::read_whole_file(fs, corrupted);
  REQUIRE(repaired.ok());
  CHECK(decode_txn_index(repaired.value()).ok());
  // Retention deletes the oldest segments with their .txnindex files and entries.
  auto& r = *rebuilt.value();
  const model::offset second = r.segments()[1].base_offset;
  const std::string first_index = "/data/x-0/" + segment_file_stem(r.segments()[0].base_offset) + ".txnindex";
  REQUIRE(r.advance_log_start_offset(second).ok());
  CHECK(!fs.exists(first_index));
  for (const auto& e : r.aborted_transactions()) CHECK(e.last_offset >= second);
}

TEST_CASE("read_committed: the check accepts the real last stable offset and catches a broken rule (negative control)") {
  io::sim_file_system fs;
  base::manual_clock clock(t0);
  auto log = partition_log::open(fs, "/data/n-0", small_segments(), clock);
  REQUIRE(log.ok());
  auto& l = *log.value();
  REQUIRE(l.append(producer_batch_of(1, 0, 0, 2, 0), le).ok());   // committed below
  REQUIRE(l.append(producer_batch_of(2, 0, 0, 2, 0), le).ok());   // aborted below
  REQUIRE(l.append(test::make_batch(1, 0, t0), le).ok());
  REQUIRE(marker(l, 1, 0, true).ok());
  REQUIRE(marker(l, 2, 0, false).ok());
  REQUIRE(l.append(producer_batch_of(3, 0, 0, 2, 0), le).ok());   // open
  REQUIRE(l.append(test::make_batch(1, 1, t0), le).ok());
  l.set_high_watermark(l.log_end_offset());
  const lso_rule real = [](const partition_log& p) { return p.last_stable_offset(); };
  CHECK(read_committed_violations(l, real).empty());
  // Broken rule: the high watermark, forgetting open transactions. The check must fire.
  const lso_rule broken = [](const partition_log& p) { return p.high_watermark(); };
  const auto caught = read_committed_violations(l, broken);
  REQUIRE(caught.size() == 1);
  CHECK(caught.front().find("open") != std::string::npos);
  // Once the open transaction commits, the high watermark is the last stable offset again.
  REQUIRE(marker(l, 3, 0, true).ok());
  l.set_high_watermark(l.log_end_offset());
  CHECK(read_committed_violations(l, real).empty());
}

TEST_CASE("SIGKILL of a process writing transactions at seeded moments: the state rebuilt equals a scan of the log") {
  test::temp_dir dir;
  const std::string path = dir.path() + "/k-0";
  const uint64_t seed = 20261202;
  splitmix rng{seed};
  size_t acked_aborts = 0;
  for (int round = 0; round < 6; ++round) {
    INFO("seed " << seed << " round " << round);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const uint64_t child_seed = rng.next();
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      auto fs = io::make_posix_file_system();
      base::system_clock clock;
      log_config config;
      config.segment_bytes = 16 * 1024;
      auto log = partition_log::open(*fs, path, config, clock);
      if (!log.ok()) _exit(3);
      auto& l = *log.value();
      splitmix child{child_seed};
      // Producers of this round: ids by round so sequences start fresh (KIP-360 accepts them).
      for (int a = 0;; ++a) {
        const int64_t producer = 1000 * (round + 1) + static_cast<int64_t>(child.below(3));
        const uint64_t what = child.below(10);
        result<append_result> r = error{errc::kafka_storage_error, ""};
        bool abort_marker = false;
        if (what < 6) {
          static std::map<int64_t, int32_t> seq;
          const int count = 1 + static_cast<int>(child.below(5));
          r = l.append(producer_batch_of(producer, 0, seq[producer], count, a), le);
          seq[producer] += count;
        } else if (what < 8) {
          abort_marker = what == 6;
          r = marker(l, producer, 0, !abort_marker);
        } else {
          r = l.append(test::make_batch(1, a, clock.now_ms()), le);
        }
        if (!r.ok()) _exit(4);
        if (!l.flush().ok()) _exit(6);
        char line[64];
        const int n = std::snprintf(line, sizeof(line), "%lld %d\n", static_cast<long long>(r->base_offset.value()),
                                    abort_marker ? 1 : 0);
        if (write(fds[1], line, static_cast<size_t>(n)) != n) _exit(7);
      }
    }
    close(fds[1]);
    FILE* in = fdopen(fds[0], "r");
    REQUIRE(in != nullptr);
    const uint64_t kill_after = 20 + rng.below(300);
    long long offset = 0;
    int is_abort = 0;
    long long last_acked = -1;
    uint64_t seen = 0;
    while (seen < kill_after && std::fscanf(in, "%lld %d", &offset, &is_abort) == 2) {
      last_acked = offset;
      ++seen;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng.below(3000)));   // a seeded spot in the cycle
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    while (std::fscanf(in, "%lld %d", &offset, &is_abort) == 2) {
      last_acked = offset;
    }
    fclose(in);
    auto fs = io::make_posix_file_system();
    base::system_clock clock;
    log_config config;
    config.segment_bytes = 16 * 1024;
    auto log = partition_log::open(*fs, path, config, clock);
    REQUIRE(log.ok());
    CHECK(log.value()->log_end_offset().value() > last_acked);
    check_state_matches_log(*log.value(), "after SIGKILL round " + std::to_string(round));
    const auto indexed = log.value()->aborted_transactions();
    acked_aborts += indexed.size();
    // End every open transaction so the next round starts with none of this round's open.
    const auto still_open = log.value()->producers().ongoing_transactions();
    for (const auto& [first, producer] : still_open) {
      (void)first;
      REQUIRE(marker(*log.value(), producer, 0, true).ok());
    }
    CHECK(!log.value()->first_unstable_offset());
    REQUIRE(log.value()->close().ok());
  }
  CHECK(acked_aborts > 3);
}
