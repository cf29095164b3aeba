// Group administration: list, describe and delete groups, reset a group's offsets, and a group's
// lag (to each partition's last stable offset, counting records only: lag_scan) with the lag
// history sampled on each shard.
// Kafka's counterpart: GroupCoordinator's handleListGroups, handleDescribeGroups and
// handleDeleteGroups; kafka-consumer-groups.sh's --describe (lag) and --reset-offsets.

#include "group_service_impl.h"

#include <mutex>
#include <set>

namespace ringlog::broker::group_service_internal {

void group_service_impl::list_groups(std::function<void(result<std::vector<group::group_listing>>)> done) {
  struct gather {
    std::mutex mutex;
    std::vector<group::group_listing> groups;
    std::atomic<size_t> remaining{0};
    std::function<void(result<std::vector<group::group_listing>>)> done;
  };
  auto g = std::make_shared<gather>();
  g->remaining = shards_.size();
  g->done = std::move(done);
  for (size_t s = 0; s < shards_.size(); ++s) {
    runtime_.post(s, [this, s, g] {
      auto listed = shards_[s]->coordinator.list_groups();
      {
        std::lock_guard lock(g->mutex);
        g->groups.insert(g->groups.end(), listed.begin(), listed.end());
      }
      if (g->remaining.fetch_sub(1) == 1) {
        std::sort(g->groups.begin(), g->groups.end(),
                  [](const auto& a, const auto& b) { return a.group_id < b.group_id; });
        g->done(std::move(g->groups));
      }
    });
  }
}

void group_service_impl::describe_group(std::string group_id, std::function<void(result<group_details>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, done = std::move(done)](size_t shard, shard_state& st) {
    group_details d;
    d.description = st.coordinator.describe_group(group_id);
    d.coordinator = {partition_of(group_id), shard};
    done(std::move(d));
  });
}

result<std::vector<group::partition_lag>> group_service_impl::lags_of(
    shard_state& st, const std::string& group_id, group::partition_map<model::offset>& high_watermarks) {
  auto committed = st.coordinator.committed_offsets(group_id);
  if (!committed.ok()) return from_group(committed.error());
  group::partition_set partitions;
  for (const auto& [tp, c] : committed.value()) partitions.insert(tp);
  for (const auto& m : st.coordinator.describe_group(group_id).members) partitions.insert(m.owned.begin(), m.owned.end());
  group::partition_map<model::offset> mine;   // lag() reports every partition it is given
  group::partition_set end_unknown;             // no leader told its end: this node's figure may lag
  for (const auto& tp : partitions) {
    auto known = high_watermarks.find(tp);
    if (known == high_watermarks.end()) {
      auto b = bounds_of(tp);
      if (!b) continue;   // a deleted topic: no lag to report
      if (!b->high_watermark_established) end_unknown.insert(tp);
      known = high_watermarks.emplace(tp, b->high_watermark).first;
    }
    mine.emplace(tp, known->second);
  }
  auto lag = st.coordinator.lag(group_id, mine);
  if (!lag.ok()) return from_group(lag.error());
  // KAFKA-2334: a lag measured to a figure below the partition's end would look smaller than it
  // is; it is not available instead (null in the lag routes) until the leader answers.
  for (auto& l : lag.value()) {
    if (end_unknown.contains(l.partition)) l.lag.reset();
  }
  return std::move(lag.value());
}

namespace {

/// A lag of at most this many offsets is counted record by record (lag_scan); a larger one is
/// the offset distance, an upper bound (it still counts markers and aborted records in it).
/// 10,000 offsets fit a few reads of lag_scan_bytes_max for records of up to ~400 bytes.
constexpr int64_t lag_scan_offsets_max = 10'000;
/// Bytes of one read of a lag count (fetch_request::max_bytes).
constexpr int32_t lag_scan_bytes_max = 1 << 20;
/// Reads of one lag count at most: past them the rest is counted as offsets.
constexpr int lag_scan_fetches_max = 4;

/// Counts the records a read_committed reader reads in [from, end) of one partition: transaction
/// markers (control batches) and records of aborted transactions are not records to consume
/// (issue 16: "markers are not records"). Reads with read_committed decoded fetches, which drop
/// both and step past them (fetch_response::next_fetch_offset). `done` once, with the count;
/// after lag_scan_fetches_max reads or a failed read the unread rest counts as its offsets.
/// The steps chain through the fetch callbacks (at most lag_scan_fetches_max deep when a fetch
/// answers at once), never by recursion of their own.
struct lag_scan : std::enable_shared_from_this<lag_scan> {
  broker* b = nullptr;
  model::topic_partition partition;
  model::offset at{0};
  model::offset end{0};
  int64_t counted = 0;
  int fetches = 0;
  std::function<void(int64_t)> done;

  [[nodiscard]] int64_t rest() const { return std::max<int64_t>(0, end.value() - at.value()); }

  void step() {
    if (at >= end || fetches == lag_scan_fetches_max) return done(counted + rest());
    ++fetches;
    fetch_request request;
    request.partition = partition;
    request.fetch_offset = at;
    request.max_bytes = lag_scan_bytes_max;
    request.isolation = isolation_level::read_committed;
    b->fetch(std::move(request), [self = shared_from_this()](result<fetch_response> r) {
      if (!r.ok()) return self->done(self->counted + self->rest());
      for (const auto& rec : r->records) {
        if (rec.record_offset >= self->at && rec.record_offset < self->end) ++self->counted;
      }
      model::offset next = r->next_fetch_offset;
      if (!r->records.empty()) next = std::max(next, model::offset{r->records.back().record_offset.value() + 1});
      if (next <= self->at) return self->done(self->counted + self->rest());   // no progress: count offsets
      self->at = next;
      self->step();
    });
  }
};

}  // namespace

void group_service_impl::group_lag(std::string group_id,
                                   std::function<void(result<std::vector<group::partition_lag>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  // Lag is what a read_committed reader still has to read (issue 16): measured to each
  // partition's last stable offset (== the high watermark with no open transaction), and a lag
  // of at most lag_scan_offsets_max offsets counts records only (lag_scan): a group that read
  // everything has lag 0 even when a commit marker follows its last record.
  std::function<void(result<std::vector<group::partition_lag>>)> counted =
      [this, done = std::move(done)](result<std::vector<group::partition_lag>> lags) mutable {
    if (!lags.ok()) return done(std::move(lags));
    struct gather {
      std::mutex mutex;
      std::vector<group::partition_lag> lags;
      std::atomic<size_t> remaining{1};
      std::function<void(result<std::vector<group::partition_lag>>)> done;
      void finish_one() {
        if (remaining.fetch_sub(1) == 1) done(std::move(lags));
      }
    };
    auto g = std::make_shared<gather>();
    g->lags = std::move(lags).value();
    g->done = std::move(done);
    for (size_t i = 0; i < g->lags.size(); ++i) {
      const auto& l = g->lags[i];
      if (!l.committed || !l.lag || *l.lag <= 0 || *l.lag > lag_scan_offsets_max) continue;
      auto scan = std::make_shared<lag_scan>();
      scan->b = &broker_;
      scan->partition = l.partition;
      scan->at = *l.committed;
      scan->end = l.high_watermark;
      scan->done = [g, i](int64_t records) {
        {
          std::lock_guard lock(g->mutex);
          g->lags[i].lag = records;
        }
        g->finish_one();
      };
      g->remaining.fetch_add(1);
      scan->step();
    }
    g->finish_one();
  };
  on_coordinator(group_id, [this, group_id, done = std::move(counted)](size_t shard, shard_state& st) mutable {
    // Each partition's last stable offset from its leader (list_offsets is forwarded there): a
    // follower's own lags by up to a fetch round, and a lag must not look smaller than it is.
    auto committed = st.coordinator.committed_offsets(group_id);
    if (!committed.ok()) return done(from_group(committed.error()));
    group::partition_set partitions;
    for (const auto& [tp, c] : committed.value()) partitions.insert(tp);
    for (const auto& m : st.coordinator.describe_group(group_id).members) partitions.insert(m.owned.begin(), m.owned.end());
    struct gather {
      group::partition_map<model::offset> high_watermarks;
      size_t remaining = 0;
    };
    auto g = std::make_shared<gather>();
    g->remaining = partitions.size();
    auto finish = [this, shard, group_id, g, done = std::move(done)]() {
      done(lags_of(*shards_[shard], group_id, g->high_watermarks));
    };
    if (partitions.empty()) return finish();
    for (const auto& tp : partitions) {
      // A partition whose leader does not answer falls back to this node's figure (lags_of).
      broker_.list_offsets({tp, offset_spec::latest, 0, isolation_level::read_committed},
                           [this, shard, tp, g, finish](result<list_offsets_response> r) {
        runtime_.post(shard, [tp, g, finish, r = std::move(r)] {
          if (r.ok() && r->found_offset) g->high_watermarks.emplace(tp, *r->found_offset);
          if (--g->remaining == 0) finish();
        });
      });
    }
  });
}

void group_service_impl::lag_history(std::string group_id, std::function<void(result<std::vector<lag_sample>>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [group_id, done = std::move(done)](size_t, shard_state& st) {
    if (st.coordinator.describe_group(group_id).state == group::group_state::dead) {
      return done(error{errc::group_id_not_found, "consumer group '" + group_id + "' not found"});
    }
    auto it = st.lag_history.find(group_id);
    if (it == st.lag_history.end()) return done(std::vector<lag_sample>{});
    done(std::vector<lag_sample>(it->second.begin(), it->second.end()));
  });
}

void group_service_impl::schedule_lag_sampling(size_t shard) {
  runtime_.post_after(shard, lag_history_interval_ms, [this, shard] {
    if (stopping_) return;
    auto& st = *shards_[shard];
    // Groups deleted meanwhile drop out; the round then samples the kept ones one at a time.
    std::map<std::string, std::deque<lag_sample>> kept;
    auto round = std::make_shared<std::vector<std::string>>();
    for (const auto& g : st.coordinator.list_groups()) {
      if (kept.size() == lag_history_groups_per_shard_max) break;
      auto& samples = kept[g.group_id];
      if (auto it = st.lag_history.find(g.group_id); it != st.lag_history.end()) samples = std::move(it->second);
      round->push_back(g.group_id);
    }
    st.lag_history = std::move(kept);
    sample_lag_next(shard, std::move(round), 0);
  });
}

void group_service_impl::sample_lag_next(size_t shard, std::shared_ptr<std::vector<std::string>> round, size_t next) {
  if (stopping_) return;
  if (next == round->size()) return schedule_lag_sampling(shard);
  // The same figure as GET .../lags (group_lag): to each last stable offset from the leader,
  // counting records only, so markers and aborted records never show as lag (issue 16). One
  // group at a time keeps a round's reads to one group's partitions in flight.
  const std::string& group_id = (*round)[next];
  group_lag(group_id, [this, shard, round, next](result<std::vector<group::partition_lag>> lags) {
    runtime_.post(shard, [this, shard, round, next, lags = std::move(lags)] {
      auto& st = *shards_[shard];
      auto it = st.lag_history.find((*round)[next]);
      if (lags.ok() && it != st.lag_history.end()) {
        int64_t total = 0;
        for (const auto& l : lags.value()) total += l.lag.value_or(0);
        it->second.push_back({clock_.now_ms(), total});
        while (it->second.size() > lag_history_samples_max) it->second.pop_front();
      }
      sample_lag_next(shard, round, next + 1);
    });
  });
}

void group_service_impl::delete_group(std::string group_id, std::function<void(result<void>)> done) {
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, group_id, done = std::move(done)](size_t shard, shard_state& st) {
    auto deleted = st.coordinator.delete_group(group_id);
    if (!deleted.ok()) return done(from_group(deleted.error()));
    // Its lag samples go with it: a group re-created under the same id before the next sampling
    // round must start with an empty history (a sample of this round still in flight finds no
    // entry and is dropped).
    st.lag_history.erase(group_id);
    persist(shard, std::move(deleted.value()), std::move(done));
  });
}

std::optional<error> group_service_impl::add_named_partitions(const std::vector<model::topic_partition>& named,
                                                              const std::set<std::string>& whole_topics,
                                                              std::vector<model::topic_partition>& out) {
  std::set<std::pair<std::string, int32_t>> added;
  for (const auto& tp : named) {
    if (whole_topics.contains(tp.topic) || !added.insert({tp.topic, tp.partition.value()}).second) continue;
    std::optional<error> missing;
    broker_.admin().describe_topic(tp.topic, [&](result<topic_description> d) {
      if (!d.ok()) return missing.emplace(d.error()), void();
      if (tp.partition.value() >= static_cast<int32_t>(d->partitions.size())) {
        missing.emplace(error{errc::unknown_topic_or_partition,
                              "topic " + tp.topic + " has no partition " + std::to_string(tp.partition.value()) + " (it has " +
                                  std::to_string(d->partitions.size()) + ")"});
      }
    });
    if (missing) return missing;
    out.push_back(tp);
  }
  return std::nullopt;
}

void group_service_impl::reset_offsets(reset_offsets_request request,
                                       std::function<void(result<group::partition_map<model::offset>>)> done) {
  std::string group_id = request.group_id;
  if (auto refused = not_coordinator(group_id)) return done(*refused);
  on_coordinator(group_id, [this, request = std::move(request), done = std::move(done)](size_t shard, shard_state& st) mutable {
    // The partitions: every partition of the named topics, the named partitions, or every
    // partition of the topics the group committed.
    std::set<std::string> topics(request.topics.begin(), request.topics.end());
    if (topics.empty() && request.partitions.empty()) {
      auto committed = st.coordinator.committed_offsets(request.group_id);
      if (!committed.ok()) return done(from_group(committed.error()));
      for (const auto& [tp, c] : committed.value()) topics.insert(tp.topic);
    }
    std::vector<model::topic_partition> partitions;
    for (const auto& topic : topics) {
      std::optional<error> missing;
      broker_.admin().describe_topic(topic, [&](result<topic_description> d) {
        if (!d.ok()) return missing.emplace(d.error()), void();
        for (const auto& p : d->partitions) partitions.push_back({topic, p.partition});
      });
      if (missing) return done(*missing);
    }
    if (auto missing = add_named_partitions(request.partitions, topics, partitions)) return done(*missing);
    // Every partition's edges (and first offset at the timestamp) from its leader; a partition
    // whose leader does not answer refuses the whole reset, as kafka-consumer-groups fails then.
    const std::optional<int64_t> timestamp_ms =
        request.spec.kind == group::reset_kind::to_timestamp ? std::optional<int64_t>(request.timestamp_ms) : std::nullopt;
    leader_bounds_of(shard, partitions, timestamp_ms, [this, request, done](leader_bounds found) mutable {
      if (found.failure) return done(*found.failure);
      on_coordinator(request.group_id, [this, request, bounds = std::move(found.bounds), done](size_t shard2, shard_state& st2) {
        auto reset = st2.coordinator.reset_offsets(request.group_id, request.spec, bounds, request.mode, clock_.now_ms());
        if (!reset.ok()) return done(from_group(reset.error()));
        persist(shard2, std::move(reset->records), [done, offsets = reset->offsets](result<void> r) {
          if (!r.ok()) return done(r.error());
          done(offsets);
        });
      });
    });
  });
}

}  // namespace ringlog::broker::group_service_internal
