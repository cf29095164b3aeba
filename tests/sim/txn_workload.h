#pragma once
// cluster_sim's transactional workload (issue 28: "transactions"): producers with a
// transactional.id, as the HTTP gateway drives the broker (docs/transactions.md "HTTP"): at the
// id's coordinator (txn_api::coordinator_id, asked of a random serving node) InitProducerId,
// then transactional produces (each adds its partition to the transaction: AddPartitionsToTxn),
// then EndTxn with the epoch bump (KIP-890 part 2), commit or abort at random. A produce that
// fails or gets no answer makes the transaction abort; an end without a definite answer is sent
// again with the same epoch and decision (Kafka's clients retry EndTxn) until one comes.
//
// Each transaction's records have values "t<txn>.<k>", so a value names its transaction. Checks:
//   - read_committed never returns a record of a transaction not committed: no commit sent yet
//     when the answer came, or an abort acknowledged (on_fetch);
//   - atomicity: a read_committed answer covers [fetch_offset, next_fetch_offset); an
//     acknowledged record of a transaction whose commit was acknowledged is never missing from
//     it, and at the end every transaction is all visible (commit acknowledged) or none (abort);
//   - no record of a committed transaction lost: read back at its acknowledged offset (check_final);
//   - liveness after the heal: a new transactional id commits a transaction to every partition.
// The last stable offset never going backwards on a node is checked by cluster_sim itself.

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim_cluster.h"

namespace ringlog::sim {

/// transaction.timeout.ms the producers ask for: short, so the coordinator's timeout abort runs
/// within a run (cluster_sim sets the cleanup interval to txn_cleanup_interval_ms).
constexpr int32_t txn_timeout_ms = 8'000;
/// transaction.abort.timed.out.transaction.cleanup.interval.ms of the brokers with transactions.
constexpr int64_t txn_cleanup_interval_ms = 1'000;
/// Transactional ids of the workload (each its own producer, one transaction at a time).
constexpr int txn_producers = 2;
/// A client's wait for one answer (a produce's own timeout is txn_produce_timeout_ms).
constexpr int64_t txn_call_timeout_ms = 7'000;
constexpr int64_t txn_produce_timeout_ms = 5'000;
/// Between retries of a call that failed (no coordinator now, concurrent_transactions).
constexpr int64_t txn_retry_backoff_ms = 200;
/// Records in one transaction: 1 to this many, each to a random partition.
constexpr int txn_records_max = 4;
/// Chance a transaction whose records were all acknowledged is committed (else aborted).
constexpr double txn_commit_chance = 0.7;

class txn_workload {
 public:
  using id_epoch = std::pair<model::producer_id, model::producer_epoch>;
  /// `acked(p, offset, value)`: a transactional record was acknowledged (one history, ends).
  txn_workload(sim_cluster& c, std::string topic, int32_t partitions,
               std::function<void(int32_t, int64_t, const std::string&)> acked)
      : c_(c), topic_(std::move(topic)), partitions_(partitions), acked_(std::move(acked)) {
    for (int i = 0; i < txn_producers; ++i) producers_.push_back(producer{"tx-" + std::to_string(i)});
  }

  /// Starts every producer (each runs one transaction after another until stop()).
  void start() {
    for (size_t i = 0; i < producers_.size(); ++i) {
      c_.at(now() + w().uniform(0, 1'000), [this, i] { next_transaction(i); });
    }
  }
  /// No new transaction from here on; the open ones end.
  void stop() {
    for (auto& p : producers_) p.stopping = true;
  }
  /// Whether every producer's transaction has ended (a definite answer to its end).
  [[nodiscard]] bool all_ended() const {
    for (const auto& p : producers_) {
      if (p.txn >= 0) return false;
    }
    return true;
  }
  /// Liveness: a new transactional id commits one record to every partition (retried from
  /// InitProducerId when anything fails). live_committed() tells when.
  void start_liveness() {
    producers_.push_back(producer{"tx-live"});
    producers_.back().liveness = true;
    const size_t i = producers_.size() - 1;
    c_.at(now(), [this, i] { next_transaction(i); });
  }
  [[nodiscard]] bool live_committed() const { return !producers_.empty() && producers_.back().committed_once; }

  /// A read_committed answer of node `n` for partition `p` asked at `fetch_offset`.
  void on_fetch(int n, int32_t p, int64_t fetch_offset, const broker::fetch_response& f) {
    std::set<int64_t> returned;
    for (const auto& r : f.records) {
      returned.insert(r.record_offset.value());
      const int t = txn_of(r.value ? model::to_string(*r.value) : std::string());
      if (t < 0 || static_cast<size_t>(t) >= txns_.size()) continue;
      auto& s = txns_[static_cast<size_t>(t)];
      s.seen_visible = true;
      if (s.decided != decision::commit || s.ended == fate::aborted) {
        return c_.fail("read_committed returned a record of a transaction not committed: fetch at n" +
                       std::to_string(n) + " p" + std::to_string(p) + " offset " +
                       std::to_string(r.record_offset.value()) + " of transaction " + std::to_string(t) + " (" +
                       describe(s) + ")");
      }
    }
    const int64_t end = std::max(fetch_offset, f.next_fetch_offset.value());
    for (auto it = by_offset_.lower_bound({p, fetch_offset}); it != by_offset_.end() && it->first.first == p &&
                                                               it->first.second < end;
         ++it) {
      if (returned.contains(it->first.second)) continue;
      auto& s = txns_[static_cast<size_t>(it->second)];
      s.seen_skipped = true;
      if (s.ended == fate::committed) {
        return c_.fail("transaction atomicity: fetch at n" + std::to_string(n) + " p" + std::to_string(p) + " read [" +
                       std::to_string(fetch_offset) + ", " + std::to_string(end) + ") without offset " +
                       std::to_string(it->first.second) + " of committed transaction " + std::to_string(it->second));
      }
    }
  }

  /// Whether a record with `value` found in a replica's log may be missing from the read-back
  /// history: a record of a transaction that did not commit.
  [[nodiscard]] bool may_be_invisible(const std::string& value) const {
    const int t = txn_of(value);
    return t >= 0 && static_cast<size_t>(t) < txns_.size() && txns_[static_cast<size_t>(t)].ended != fate::committed;
  }

  /// At the end, against the read-back history (partition -> offset -> value).
  void check_final(const std::map<int32_t, std::map<int64_t, std::string>>& history) {
    std::set<std::string> visible;
    for (const auto& [p, records] : history) {
      for (const auto& [o, v] : records) visible.insert(v);
    }
    for (size_t t = 0; t < txns_.size() && !c_.failed(); ++t) check_final_one(static_cast<int>(t), history, visible);
  }

  [[nodiscard]] std::string summary() const {
    int committed = 0, aborted = 0;
    for (const auto& s : txns_) {
      committed += s.ended == fate::committed;
      aborted += s.ended == fate::aborted;
    }
    return std::to_string(committed) + " transactions committed, " + std::to_string(aborted) + " aborted";
  }

 private:
  enum class decision { none, commit, abort };
  enum class fate { open, committed, aborted };
  struct txn_state {
    decision decided = decision::none;   // what the client sent (first end sent)
    fate ended = fate::open;             // as the end's definite answer says
    std::vector<std::tuple<int32_t, int64_t, std::string>> acked;   // partition, offset, value
    bool seen_visible = false;   // some read_committed answer returned one of its records
    bool seen_skipped = false;   // some read_committed answer covered one of them without it
  };
  struct producer {
    std::string id;
    std::optional<id_epoch> identity{};
    int txn = -1;   // the transaction under way, -1: none
    std::map<int32_t, int32_t> next_sequence{};   // per partition, in this epoch
    int records_left = 0;
    bool all_acked = true;
    bool stopping = false;
    bool liveness = false;
    bool committed_once = false;
  };

  world& w() { return c_.sim_world(); }
  int64_t now() { return w().clock.now_ms(); }
  void note(const std::string& line) { w().note(line); }

  static int txn_of(const std::string& value) {
    if (value.size() < 2 || value[0] != 't') return -1;   // "t<txn>.<k>"
    const auto dot = value.find('.');
    if (dot == std::string::npos) return -1;
    return std::atoi(value.substr(1, dot - 1).c_str());
  }
  static std::string describe(const txn_state& s) {
    const char* d = s.decided == decision::commit ? "commit sent" : s.decided == decision::abort ? "abort sent" : "open";
    const char* e = s.ended == fate::committed ? ", commit acknowledged" : s.ended == fate::aborted ? ", aborted" : "";
    return std::string(d) + e;
  }

  /// Runs `call(broker, node)` at the coordinator of producer i's id, found as a client does
  /// (FindCoordinator at a random serving node); retried after a backoff while there is none.
  void at_coordinator(size_t i, std::function<void(broker::broker&, int)> call) {
    const int asked = c_.random_serving();
    const int coordinator = asked < 0 ? -1 : c_.serving(asked)->transactions().coordinator_id(producers_[i].id);
    broker::broker* b = coordinator < 1 || coordinator > c_.node_count() ? nullptr : c_.serving(coordinator);
    if (b == nullptr) {
      return c_.at(now() + txn_retry_backoff_ms, [this, i, call = std::move(call)] { at_coordinator(i, call); });
    }
    call(*b, coordinator);
  }

  void next_transaction(size_t i) {
    auto& pr = producers_[i];
    if (c_.failed() || (pr.stopping && !pr.liveness) || (pr.liveness && pr.committed_once)) return;
    if (!pr.identity) return init(i);
    pr.txn = static_cast<int>(txns_.size());
    txns_.emplace_back();
    pr.records_left = pr.liveness ? partitions_ : static_cast<int>(w().uniform(1, txn_records_max));
    pr.all_acked = true;
    note(pr.id + " begins transaction " + std::to_string(pr.txn));
    produce_next(i);
  }

  void init(size_t i) {
    if (c_.failed() || (producers_[i].stopping && !producers_[i].liveness)) return;
    at_coordinator(i, [this, i](broker::broker& b, int node) {
      note(producers_[i].id + " InitProducerId at n" + std::to_string(node));
      b.transactions().init_producer_id(
          producers_[i].id, txn_timeout_ms, std::nullopt,
          answer_within<broker::result<id_epoch>>(c_, txn_call_timeout_ms, [this, i](std::optional<broker::result<id_epoch>> r) {
            if (r && r->ok()) {
              producers_[i].identity = r->value();
              producers_[i].next_sequence.clear();
              note(producers_[i].id + " producer " + std::to_string(r->value().first.value()) + " epoch " +
                   std::to_string(r->value().second.value()));
              return next_transaction(i);
            }
            c_.at(now() + txn_retry_backoff_ms, [this, i] { init(i); });
          }));
    });
  }

  void produce_next(size_t i) {
    auto& pr = producers_[i];
    if (pr.records_left == 0 || !pr.all_acked) {
      const bool commit = pr.all_acked && (pr.liveness || w().chance(txn_commit_chance));
      return end(i, commit ? decision::commit : decision::abort);
    }
    const auto p = pr.liveness ? partitions_ - pr.records_left
                               : static_cast<int32_t>(w().uniform(0, partitions_ - 1));
    const std::string value = "t" + std::to_string(pr.txn) + "." + std::to_string(pr.records_left);
    broker::produce_request r;
    r.topic = topic_;
    r.acks = broker::acks_mode::all;
    r.timeout_ms = txn_produce_timeout_ms;
    r.producer = broker::producer_identity{pr.identity->first, pr.identity->second, pr.id};
    broker::produce_record rec;
    rec.partition = model::partition_id{p};
    rec.sequence = model::sequence{pr.next_sequence[p]++};
    rec.value = model::to_bytes(value);
    r.records.push_back(std::move(rec));
    --pr.records_left;
    at_coordinator(i, [this, i, p, value, r = std::move(r)](broker::broker& b, int node) mutable {
      note(producers_[i].id + " produce n" + std::to_string(node) + " p" + std::to_string(p) + " " + value);
      b.produce(std::move(r), answer_within<broker::result<broker::produce_response>>(
                                  c_, txn_call_timeout_ms,
                                  [this, i, p, value](std::optional<broker::result<broker::produce_response>> a) {
                                    produced(i, p, value, a);
                                  }));
    });
  }

  void produced(size_t i, int32_t p, const std::string& value,
                const std::optional<broker::result<broker::produce_response>>& a) {
    auto& pr = producers_[i];
    if (a && a->ok() && (*a)->results.size() == 1 && !(*a)->results[0].failure) {
      const int64_t offset = (*a)->results[0].record_offset.value();
      note(pr.id + " ack p" + std::to_string(p) + "@" + std::to_string(offset) + " " + value);
      txns_[static_cast<size_t>(pr.txn)].acked.emplace_back(p, offset, value);
      by_offset_[{p, offset}] = pr.txn;
      acked_(p, offset, value);
    } else {
      pr.all_acked = false;   // the transaction aborts (an abortable error, as Kafka's clients)
      note(pr.id + " produce failed p" + std::to_string(p) + " " + value + ": " +
           (!a ? std::string("no answer")
               : !a->ok() ? a->error().message
                          : (*a)->results.empty() || !(*a)->results[0].failure ? std::string("no result")
                                                                              : (*a)->results[0].failure->message));
    }
    produce_next(i);
  }

  void end(size_t i, decision d) {
    auto& pr = producers_[i];
    txns_[static_cast<size_t>(pr.txn)].decided = d;
    at_coordinator(i, [this, i, d](broker::broker& b, int node) {
      auto& pr = producers_[i];
      note(pr.id + (d == decision::commit ? " commit " : " abort ") + std::to_string(pr.txn) + " at n" +
           std::to_string(node));
      b.transactions().end_txn(pr.id, pr.identity->first, pr.identity->second, d == decision::commit, true,
                               answer_within<broker::result<id_epoch>>(
                                   c_, txn_call_timeout_ms,
                                   [this, i, d](std::optional<broker::result<id_epoch>> r) { ended(i, d, r); }));
    });
  }

  /// Refusals that end the transaction without it committing: the coordinator aborted it (its
  /// timeout, with an epoch bump) before the end came.
  static bool definite_refusal(broker::errc e) {
    using broker::errc;
    return e == errc::producer_fenced || e == errc::invalid_producer_epoch || e == errc::invalid_txn_state ||
           e == errc::invalid_producer_id_mapping || e == errc::transactional_id_not_found;
  }

  void ended(size_t i, decision d, const std::optional<broker::result<id_epoch>>& r) {
    auto& pr = producers_[i];
    auto& s = txns_[static_cast<size_t>(pr.txn)];
    if (!r || (!r->ok() && !definite_refusal(r->error().code))) {
      note(pr.id + " end of " + std::to_string(pr.txn) + " again: " + (r ? r->error().message : std::string("no answer")));
      return c_.at(now() + txn_retry_backoff_ms, [this, i, d] { end(i, d); });   // the same end again
    }
    if (r->ok()) {
      s.ended = d == decision::commit ? fate::committed : fate::aborted;
      pr.identity = r->value();
    } else {
      s.ended = fate::aborted;
      pr.identity.reset();   // fenced: a new InitProducerId
    }
    note(pr.id + " transaction " + std::to_string(pr.txn) + (s.ended == fate::committed ? " committed" : " aborted") +
         (r->ok() ? "" : " (" + r->error().message + ")"));
    if (pr.liveness && s.ended == fate::committed) pr.committed_once = true;
    if (s.ended == fate::committed) check_committed_now(pr.txn);
    pr.next_sequence.clear();
    pr.txn = -1;
    c_.at(now() + w().uniform(0, 300), [this, i] { next_transaction(i); });
  }

  /// A commit acknowledged after a read_committed answer covered one of its records without it.
  void check_committed_now(int t) {
    if (txns_[static_cast<size_t>(t)].seen_skipped) {
      c_.fail("transaction atomicity: a read_committed answer skipped a record of transaction " + std::to_string(t) +
              ", whose commit was then acknowledged");
    }
  }

  void check_final_one(int t, const std::map<int32_t, std::map<int64_t, std::string>>& history,
                       const std::set<std::string>& visible) {
    const auto& s = txns_[static_cast<size_t>(t)];
    if (s.ended == fate::open) return c_.fail("transaction " + std::to_string(t) + " never ended");
    if (s.ended == fate::aborted) {
      if (s.seen_visible) return c_.fail("transaction " + std::to_string(t) + " was read, then aborted");
      for (const auto& [p, o, v] : s.acked) {
        if (visible.contains(v)) {
          return c_.fail("aborted transaction " + std::to_string(t) + " visible: " + v + " read back");
        }
      }
      return;
    }
    for (const auto& [p, o, v] : s.acked) {
      auto part = history.find(p);
      const std::string* found = nullptr;
      if (part != history.end()) {
        if (auto it = part->second.find(o); it != part->second.end()) found = &it->second;
      }
      if (found == nullptr || *found != v) {
        return c_.fail("record of committed transaction " + std::to_string(t) + " lost: p" + std::to_string(p) +
                       " offset " + std::to_string(o) + " acknowledged as " + v + ", read back as " +
                       (found == nullptr ? std::string("nothing") : *found));
      }
    }
  }

  sim_cluster& c_;
  std::string topic_;
  int32_t partitions_;
  std::function<void(int32_t, int64_t, const std::string&)> acked_;
  std::vector<producer> producers_;
  std::vector<txn_state> txns_;
  std::map<std::pair<int32_t, int64_t>, int> by_offset_;   // acknowledged transactional records
};

}  // namespace ringlog::sim
