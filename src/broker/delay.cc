// Delayed delivery on plain topics (issue 18, design.md section 7): the produce path puts a record
// with a future ringlog-deliver-at into an internal delay topic chosen by its delay range; on the
// leader of each delay partition a delay::scheduler (a pure core, src/delay) reads it in order
// and moves due records to their target topic-partition with the normal produce path. The
// scheduler's position is a checkpoint record in its own delay partition, written with acks=all
// before each step's moves (an intent), so a new leader or a restarted broker resumes where the
// last one stopped and looks up the moves it may have sent (their dedup header) before sending
// them again. docs/delayed-delivery.md has the guarantee in full. All of it is delay_host's
// (delay_host.h), which reaches the parts it is built with directly.

#include <algorithm>
#include <charconv>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "delay_host.h"
#include "coordinator_partitions.h"
#include "metadata_barrier.h"
#include "metadata_publisher.h"
#include "produce_pipeline.h"
#include "replica_manager.h"
#include "ringlog/base/assert.h"
#include "ringlog/broker/partitioner.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/delay/checkpoint.h"
#include "ringlog/delay/constants.h"
#include "ringlog/delay/retry.h"

namespace ringlog::broker::detail {

/// Partitions of each delay topic. A record goes to the one of its target topic-partition (a
/// stable hash), so the records for one target partition with the same due time keep their
/// produce order; four let a cluster of up to four brokers share the scheduling of a range.
inline constexpr int32_t delay_topic_partitions = 4;
/// Delay topics keep their records until the scheduler's position passes them (it advances the
/// log start offset): no time or size retention. Segments of 100 MiB, as __consumer_offsets.
inline constexpr const char* delay_topic_segment_bytes = "104857600";
/// Longest a move's produce waits for the target's in-sync replicas (acks=all).
inline constexpr int64_t delay_move_timeout_ms = 30000;
/// Bytes a scheduler reads from its partition per log read (one read may return more records
/// than the window takes; the rest are read again later).
inline constexpr size_t delay_read_bytes = 1 << 20;
/// Log reads per drive: reads are synchronous on the shard, so a drive is bounded (a window of
/// window_records_max entries fills in a few reads; the next tick continues).
inline constexpr int delay_drive_steps_max = 16;

struct delay_host::partition_state {
  std::weak_ptr<partition_runtime> rt;
  std::string key;           // partition_key(topic, partition)
  std::string topic;
  int32_t partition = 0;
  uint64_t generation = 0;   // a new leadership is a new state: answers for an older one are dropped
  std::optional<delay::scheduler> core;
  uint64_t verify_fallbacks = 0;   // moves sent again without a complete lookup (at-least-once)
};

namespace {

std::optional<std::string_view> header_text(const std::vector<model::record_header>& headers, std::string_view key) {
  for (const auto& h : headers) {
    if (h.key == key && h.value) return std::string_view(reinterpret_cast<const char*>(h.value->data()), h.value->size());
  }
  return std::nullopt;
}

/// Whether a header is named `key`: over records or over record views (codec::record_view).
template <typename Header>
bool has_header(const std::vector<Header>& headers, std::string_view key) {
  return std::any_of(headers.begin(), headers.end(), [&](const Header& h) { return h.key == key; });
}

/// Decimal int64 >= 0, digits only. Errors as nullopt.
std::optional<int64_t> parse_decimal(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

model::record_header text_header(std::string_view key, const std::string& value) {
  return model::record_header{std::string(key), model::to_bytes(value)};
}

std::string source_key(const std::string& topic, int32_t partition, model::offset offset) {
  return topic + "/" + std::to_string(partition) + "@" + std::to_string(offset.value());
}

/// The delay partition of a target topic-partition (FNV-1a, stable across versions).
int32_t delay_partition_for(const std::string& topic, int32_t partition) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;
  };
  for (char c : topic) mix(static_cast<unsigned char>(c));
  mix('/');
  for (char c : std::to_string(partition)) mix(static_cast<unsigned char>(c));
  return static_cast<int32_t>(h % static_cast<uint64_t>(delay_topic_partitions));
}

/// Every record of `batches` in [from, end), control batches skipped. Errors: corrupt_message.
result<std::vector<model::record>> records_of(std::span<const std::byte> batches, model::offset from, model::offset end) {
  std::vector<model::record> out;
  auto decoded = decode_fetched_records(batches, from, end, INT32_MAX, out);
  if (!decoded.ok()) return decoded.error();
  return out;
}

/// Whether `r` is a scheduler's own checkpoint (write_delay_checkpoint): the checkpoint header and
/// no target. A client's delayed record always has a target (produce_delayed adds it); one that
/// carried a checkpoint header, stored before such records were refused, is a delay record, never
/// the scheduler's position (the breaker of session 30: a forged checkpoint stopped or skipped a
/// scheduler after its restart).
bool is_scheduler_checkpoint(const model::record& r) {
  return has_header(r.headers, delay::checkpoint_header) && !has_header(r.headers, delay::target_topic_header);
}

/// The latest checkpoint of a delay partition, searched backwards from its log end in growing
/// spans (usually the last few records hold one), or a fresh start at the log start offset.
result<delay::checkpoint> latest_checkpoint(storage::partition_log& log) {
  const model::offset start = log.log_start_offset();
  model::offset hi = log.log_end_offset();
  int64_t span = 64;
  while (hi > start) {
    const model::offset lo = std::max(start, hi - span);
    std::optional<delay::checkpoint> found;
    model::offset at = lo;
    while (at < hi) {
      auto read = log.read(at, delay_read_bytes, hi);
      if (!read.ok()) return from_storage(read.error());
      if (read->batches.empty()) break;
      auto records = records_of(read->batches, at, hi);
      if (!records.ok()) return records.error();
      for (const auto& r : *records) {
        if (!is_scheduler_checkpoint(r) || !r.value) continue;
        auto c = delay::decode_checkpoint(*r.value);
        if (!c.ok()) {
          return error{errc::corrupt_message, "delay checkpoint at offset " + std::to_string(r.record_offset.value()) +
                                                  ": " + c.error().message};
        }
        found = std::move(c).value();
      }
      if (read->next_offset <= at) break;
      at = read->next_offset;
    }
    if (found) {
      found->position = std::max(found->position, start);
      return *found;
    }
    hi = lo;
    span = span > INT64_MAX / 4 ? INT64_MAX : span * 4;
  }
  delay::checkpoint fresh;
  fresh.position = start;
  return fresh;
}

/// A move's failure that no retry can cure: the record is dropped (and logged).
bool permanent(errc code) {
  return code == errc::message_too_large || code == errc::invalid_record || code == errc::corrupt_message ||
         code == errc::record_list_too_large || code == errc::invalid_timestamp ||
         code == errc::topic_authorization_failed || code == errc::invalid_topic_exception;
}

}  // namespace

// ---------------------------------------------------------------- produce side

result<std::optional<int64_t>> delay_host::delivery_time_in(produce_request& request, size_t i, int64_t now_ms) const {
  auto due = delivery_time_of(request.records[i], now_ms, request.origin);
  if (!due.ok() || !*due || !request.producer) return due;
  if (request.producer->transactional_id) {
    return error{errc::invalid_record, "records[" + std::to_string(i) +
                                           "] names a delivery time inside a transaction; delayed delivery moves "
                                           "records after the append, which a transaction cannot span"};
  }
  // The delay topic's copy carries no producer sequence: a resent request would be delayed (and
  // delivered) again, breaking the session's "resent unchanged, stored once" promise.
  return error{errc::invalid_record, "records[" + std::to_string(i) +
                                         "] names a delivery time inside an idempotent producer session, whose "
                                         "resends could not be recognised once delayed; produce delayed records "
                                         "without producer_id"};
}

namespace {

/// Replaces `record`'s ringlog-delay-ms header, if any, by ringlog-deliver-at (`now_ms` + the
/// delay). Errors: invalid_record (not decimal ms; more than `delay_max_ms`; both headers set).
result<void> delay_to_delivery_time(produce_record& record, int64_t now_ms, int64_t delay_max_ms) {
  auto relative = std::find_if(record.headers.begin(), record.headers.end(),
                               [](const model::record_header& h) { return h.key == delay::delay_ms_header; });
  if (relative == record.headers.end()) return base::ok_v;
  const std::string text = relative->value ? model::to_string(*relative->value) : "";
  auto delay_ms = parse_decimal(text);
  if (!delay_ms) {
    return error{errc::invalid_record, "header " + std::string(delay::delay_ms_header) +
                                           " (delay_ms) must be milliseconds as decimal digits, got '" +
                                           text.substr(0, 40) + "'"};
  }
  if (*delay_ms > delay_max_ms) {
    return error{errc::invalid_record, "delay_ms " + std::to_string(*delay_ms) + " is more than delay.max.ms=" +
                                           std::to_string(delay_max_ms)};
  }
  if (has_header(record.headers, delay::deliver_at_header)) {
    return error{errc::invalid_record, "a record takes a delivery time (deliver_at, header " +
                                           std::string(delay::deliver_at_header) + ") or a delay (delay_ms, header " +
                                           std::string(delay::delay_ms_header) + "), not both"};
  }
  relative->key = std::string(delay::deliver_at_header);
  relative->value = model::to_bytes(std::to_string(now_ms + *delay_ms));
  return base::ok_v;
}

/// The text of a header value: over records or over record views (codec::record_view).
template <typename Header>
std::string_view value_text(const Header& h) {
  if (!h.value) return {};
  return std::string_view(reinterpret_cast<const char*>(h.value->data()), h.value->size());
}

}  // namespace

error delay_host::broker_header_refusal(std::string_view header) {
  return error{errc::invalid_record, "header " + std::string(header) +
                                         " is set by the broker on delayed records (where one is delivered) and "
                                         "delivered ones (where one came from); a delayed record may not carry it "
                                         "from a producer: remove it"};
}

result<std::optional<int64_t>> delay_host::delivery_time_of(produce_record& record, int64_t now_ms,
                                                             record_origin origin) const {
  // A record a scheduler moves keeps its header (it is due by then); never delay it again.
  if (origin == record_origin::delay_scheduler) return std::optional<int64_t>{};
  const auto view = metadata_.view();
  const int64_t delay_max_ms = live_config(*view, config_).delay_max_ms;
  if (auto converted = delay_to_delivery_time(record, now_ms, delay_max_ms); !converted.ok()) return converted.error();
  auto text = header_text(record.headers, delay::deliver_at_header);
  if (!text) return std::optional<int64_t>{};
  auto due = parse_decimal(*text);
  if (!due) {
    const std::string shown(text->substr(0, 40));
    return error{errc::invalid_record, "header " + std::string(delay::deliver_at_header) +
                                           " must be milliseconds since the Unix epoch as decimal digits, got '" +
                                           shown + "'"};
  }
  if (*due <= now_ms) return std::optional<int64_t>{};   // due already: delivered at once
  if (*due - now_ms > delay_max_ms) {
    return error{errc::invalid_record, "the record's delivery time " + std::to_string(*due) + " is " +
                                           std::to_string(*due - now_ms) + " ms from now, more than delay.max.ms=" +
                                           std::to_string(delay_max_ms)};
  }
  // The target headers are the broker's: the scheduler moves the record to the topic they name,
  // so a producer's copy would deliver it to a topic it was never authorized to write (the breaker
  // of session 29: WRITE on one topic, records delivered into another). A checkpoint header would
  // make the record read as the scheduler's own checkpoint (the breaker of session 30). A source
  // header marks a moved record, which is never delayed again: it was stored at once, its delay
  // silently cancelled (tester's finding, session 30).
  for (auto name : {delay::target_topic_header, delay::target_partition_header, delay::target_topic_id_header,
                    delay::checkpoint_header, delay::source_header}) {
    if (has_header(record.headers, name)) return broker_header_refusal(name);
  }
  return std::optional<int64_t>{*due};
}

template <typename Header>
bool delay_host::has_delay_header(const std::vector<Header>& headers) {
  // A moved record keeps its (past) delivery time beside its source: it is never delayed again.
  return (has_header(headers, delay::deliver_at_header) || has_header(headers, delay::delay_ms_header)) &&
         !has_header(headers, delay::source_header);
}
template bool delay_host::has_delay_header(const std::vector<model::record_header>&);
template bool delay_host::has_delay_header(const std::vector<codec::record_view::header>&);

template <typename Header>
bool delay_host::delayed_with_source(const std::vector<Header>& headers, int64_t now_ms) {
  if (!has_header(headers, delay::source_header)) return false;
  return std::any_of(headers.begin(), headers.end(), [now_ms](const Header& h) {
    if (h.key == delay::delay_ms_header) return value_text(h) != "0";
    if (h.key != delay::deliver_at_header) return false;
    auto due = parse_decimal(value_text(h));
    return !due || *due > now_ms;
  });
}
template bool delay_host::delayed_with_source(const std::vector<model::record_header>&, int64_t);
template bool delay_host::delayed_with_source(const std::vector<codec::record_view::header>&, int64_t);

void delay_host::produce_batches_delayed(produce_batches_request request, const std::shared_ptr<const topic_state>& topic,
                                          std::function<void(result<produce_batches_response>)> done) {
  const int64_t now = clock_.now_ms();
  produce_request out;
  out.topic = request.partition.topic;
  out.acks = request.acks;
  out.timeout_ms = request.timeout_ms;
  bool delayed = false;
  for (const auto& batch : request.batches) {
    auto records = codec::decode_records(batch);
    RINGLOG_ASSERT(records.ok(), "batches were validated before");
    for (auto& r : *records) {
      produce_record p;
      p.partition = request.partition.partition;
      p.key = std::move(r.key);
      p.value = std::move(r.value);
      p.headers = std::move(r.headers);
      p.timestamp = r.timestamp;
      // Checked here for the whole request first, so that nothing is stored when one is invalid.
      auto due = delivery_time_of(p, now, record_origin::client);
      if (!due.ok()) return done(due.error());
      delayed = delayed || due->has_value();
      out.records.push_back(std::move(p));
    }
  }
  produce_.produce_to(topic, std::move(out), [delayed, done = std::move(done)](result<produce_response> r) {
    if (!r.ok()) return done(r.error());
    produce_batches_response answer;
    for (const auto& res : r->results) {
      if (res.failure) return done(*res.failure);
    }
    if (!delayed && !r->results.empty()) answer.base_offset = r->results.front().record_offset;
    done(answer);
  }, false);
}

size_t delay_host::delayed_groups(const std::vector<delayed_record>& delayed, int64_t now_ms) {
  std::set<size_t> tiers;
  for (const auto& d : delayed) tiers.insert(delay::tier_for_delay(d.due_ms - now_ms));
  return tiers.size();
}

void delay_host::produce_delayed(const std::string& target_topic, std::vector<produce_record>& records,
                                  const std::vector<delayed_record>& delayed, int64_t now_ms, acks_mode acks,
                                  int64_t timeout_ms, const std::shared_ptr<produce_operation>& op) {
  struct tier_request {
    produce_request request;
    std::vector<size_t> indices;   // into op->results, per record of request
  };
  std::map<size_t, tier_request> by_tier;
  const auto view = metadata_.view();
  const auto target = view->topics.find(target_topic);
  const std::string target_id =
      target == view->topics.end() ? std::string() : controller::uuid_to_string(target->second->image->topic_id);
  for (const auto& d : delayed) {
    const size_t tier = delay::tier_for_delay(d.due_ms - now_ms);
    auto& t = by_tier[tier];
    auto& in = records[d.index];
    produce_record out;
    out.partition = model::partition_id{delay_partition_for(target_topic, d.target_partition)};
    out.key = std::move(in.key);
    out.value = std::move(in.value);
    out.headers = std::move(in.headers);
    std::erase_if(out.headers, [](const model::record_header& h) { return h.key == delay::produced_at_header; });
    out.headers.push_back(text_header(delay::target_topic_header, target_topic));
    out.headers.push_back(text_header(delay::target_partition_header, std::to_string(d.target_partition)));
    if (!target_id.empty()) out.headers.push_back(text_header(delay::target_topic_id_header, target_id));
    out.headers.push_back(text_header(delay::produced_at_header, std::to_string(in.timestamp.value_or(now_ms))));
    out.timestamp = now_ms;
    t.request.records.push_back(std::move(out));
    t.indices.push_back(d.index);
    op->results[d.index].timestamp = in.timestamp.value_or(now_ms);
  }
  for (auto& [tier, t] : by_tier) {
    t.request.topic = std::string(delay::tiers[tier].topic);
    t.request.acks = acks;
    t.request.timeout_ms = timeout_ms;
    with_delay_topic(tier, [this, op, t = std::move(t)](result<std::shared_ptr<const topic_state>> topic) mutable {
      if (!topic.ok()) {
        for (size_t idx : t.indices) op->results[idx].failure = topic.error();
        return op->finish_one();
      }
      auto indices = std::move(t.indices);
      produce_.produce_to(*topic, std::move(t.request), [op, indices](result<produce_response> r) {
        for (size_t k = 0; k < indices.size(); ++k) {
          auto& res = op->results[indices[k]];
          // The record's offset in its target is known only once it is delivered.
          res.record_offset = model::offset{-1};
          if (!r.ok()) {
            res.failure = r.error();
          } else if (r->results[k].failure) {
            res.failure = r->results[k].failure;
          }
        }
        op->finish_one();
      }, true);
    });
  }
}

void delay_host::with_delay_topic(size_t tier, std::function<void(result<std::shared_ptr<const topic_state>>)> done) {
  std::string name(delay::tiers[tier].topic);
  if (auto t = metadata_.find_topic(name)) return done(t);
  internal_topics_.create_internal_topic(std::move(name), delay_topic_partitions,
                              {{"cleanup.policy", "delete"}, {"retention.ms", "-1"}, {"retention.bytes", "-1"},
                               {"segment.bytes", delay_topic_segment_bytes}},
                              std::move(done));
}

// ---------------------------------------------------------------- the schedulers

delay_host::delay_host(const metadata_publisher& metadata, broker_log log, metadata_barrier& barrier,
                       produce_pipeline& produce, coordinator_partitions& internal_topics, replica_manager& replicas,
                       const broker_config& config, runtime::shard_runtime& runtime, const base::clock& clock,
                       int32_t node_id, const std::atomic<bool>& stopping)
    : metadata_(metadata),
      log_(std::move(log)),
      barrier_(barrier),
      produce_(produce),
      internal_topics_(internal_topics),
      replicas_(replicas),
      config_(config),
      runtime_(runtime),
      clock_(clock),
      node_id_(node_id),
      stopping_(stopping),
      delay_states_(runtime.shard_count()),
      delay_ticking_(runtime.shard_count(), 0) {}

void delay_host::start() {
  delay_started_.store(true, std::memory_order_release);
  for (size_t s = 0; s < delay_states_.size(); ++s) {
    runtime_.post(s, [this, s] {
      replicas_.for_each_replica(s, [this, s](const std::shared_ptr<partition_runtime>& rt) {
        if (!rt->deleted && rt->leader && delay::is_delay_topic(rt->topic)) delay_partition_led(s, rt, true);
      });
    });
  }
}

void delay_host::on_leadership_change(size_t shard, const std::shared_ptr<partition_runtime>& rt, bool leads) {
  if (delay::is_delay_topic(rt->topic)) delay_partition_led(shard, rt, leads);
}

void delay_host::describe(std::function<void(std::vector<delay_scheduler_description>)> done) {
  struct gathered {
    std::mutex mutex;
    std::vector<delay_scheduler_description> out;
    std::atomic<size_t> remaining{0};
    std::function<void(std::vector<delay_scheduler_description>)> done;
  };
  auto g = std::make_shared<gathered>();
  g->remaining = delay_states_.size();
  g->done = std::move(done);
  std::weak_ptr<int> alive = lifetime_;
  for (size_t s = 0; s < delay_states_.size(); ++s) {
    runtime_.post(s, [this, s, g, alive] {
      std::vector<delay_scheduler_description> local;
      if (!alive.expired()) {
        const int64_t now = clock_.now_ms();
        for (const auto& [key, st] : delay_states_[s]) {
          auto rt = st->rt.lock();
          if (!rt || !st->core) continue;
          const delay::scheduler& core = *st->core;
          delay_scheduler_description d;
          d.topic = st->topic;
          d.partition = st->partition;
          d.broker_id = node_id_;
          d.position = core.position().value();
          d.read_offset = core.read_offset().value();
          d.high_watermark = rt->log->high_watermark().value();
          d.window_records = static_cast<int64_t>(core.window_size());
          d.unread_records = std::max<int64_t>(0, d.high_watermark - d.read_offset);
          d.next_due_ms = core.next_due_ms();
          d.moved_total = core.moved_total();
          d.dropped_total = core.dropped_total();
          d.now_ms = now;
          const std::vector<int64_t> due = core.due_times();   // ascending
          if (!due.empty() && due.front() <= now) d.lag_ms = now - due.front();
          for (int64_t at : due) {
            const auto bound = std::lower_bound(delay_due_bucket_bounds_ms.begin(), delay_due_bucket_bounds_ms.end(), at - now);
            ++d.due_counts[static_cast<size_t>(bound - delay_due_bucket_bounds_ms.begin())];
          }
          local.push_back(std::move(d));
        }
      }
      {
        std::lock_guard lock(g->mutex);
        for (auto& d : local) g->out.push_back(std::move(d));
      }
      if (g->remaining.fetch_sub(1) == 1) {
        std::sort(g->out.begin(), g->out.end(), [](const auto& a, const auto& b) {
          return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
        });
        g->done(std::move(g->out));
      }
    });
  }
}

void delay_host::delay_partition_led(size_t shard, const std::shared_ptr<partition_runtime>& rt, bool leads) {
  if (!delay_started_.load(std::memory_order_acquire)) return;   // start_delay_schedulers picks it up
  auto& states = delay_states_[shard];
  const std::string key = partition_key(rt->topic, rt->partition);
  auto it = states.find(key);
  if (!leads) {
    if (it != states.end()) states.erase(it);
    return;
  }
  if (it != states.end() && it->second->rt.lock() == rt) return;   // already scheduling this leadership
  auto cp = latest_checkpoint(*rt->log);
  if (!cp.ok()) {
    // Not served until the partition is led again: a broken checkpoint must not be guessed past.
    log_.error("delay partition " + key + ": the scheduler cannot start: " + cp.error().message);
    if (it != states.end()) states.erase(it);
    return;
  }
  auto st = std::make_shared<partition_state>();
  st->rt = rt;
  st->key = key;
  st->topic = rt->topic;
  st->partition = rt->partition;
  st->generation = next_delay_generation_.fetch_add(1);
  st->core.emplace(*cp);
  if (!cp->in_flight.empty()) {
    log_.info("delay partition " + key + ": resuming at offset " + std::to_string(cp->position.value()) + " with " +
              std::to_string(cp->in_flight.size()) + " moves to look up in their targets first");
  }
  states[key] = st;
  if (!delay_ticking_[shard]) {
    delay_ticking_[shard] = 1;
    schedule_delay_tick(shard);
  }
  drive_delay(shard, st);
}

void delay_host::schedule_delay_tick(size_t shard) {
  std::weak_ptr<int> alive = lifetime_;
  runtime_.post_after(shard, delay::tick_ms, [this, shard, alive] {
    if (alive.expired() || stopping_) return;
    auto& states = delay_states_[shard];
    if (states.empty()) {
      delay_ticking_[shard] = 0;
      return;
    }
    std::vector<std::shared_ptr<partition_state>> all;
    for (auto& [key, st] : states) all.push_back(st);
    for (auto& st : all) drive_delay(shard, st);
    schedule_delay_tick(shard);
  });
}

void delay_host::on_delay_state(size_t shard, std::string key, uint64_t generation,
                                 std::function<void(const std::shared_ptr<partition_state>&)> f) {
  std::weak_ptr<int> alive = lifetime_;
  runtime_.post(shard, [this, shard, alive, key = std::move(key), generation, f = std::move(f)] {
    if (alive.expired()) return;
    auto& states = delay_states_[shard];
    auto it = states.find(key);
    if (it == states.end() || it->second->generation != generation) return;   // another leadership
    f(it->second);
  });
}

void delay_host::drive_delay(size_t shard, const std::shared_ptr<partition_state>& st) {
  auto rt = st->rt.lock();
  if (!rt || rt->deleted || !rt->leader || stopping_) {
    delay_states_[shard].erase(st->key);
    return;
  }
  for (int step = 0; step < delay_drive_steps_max; ++step) {
    const model::offset high_watermark = rt->log->high_watermark();
    delay::effects e = st->core->poll(clock_.now_ms(), high_watermark);
    if (e.read_from) {
      // One log read: the delay records it holds, up to what the window takes.
      std::vector<delay::pending_entry> entries;
      model::offset next = *e.read_from;
      auto read = rt->log->read(*e.read_from, delay_read_bytes, high_watermark);
      if (!read.ok()) {
        log_.error("delay partition " + st->key + ": read at " + std::to_string(e.read_from->value()) + ": " +
                   read.error().message);
        return;
      }
      auto records = records_of(read->batches, *e.read_from, high_watermark);
      if (!records.ok()) {
        log_.error("delay partition " + st->key + ": " + records.error().message);
        return;
      }
      bool full = false;
      for (const auto& r : *records) {
        if (entries.size() >= e.read_records_max) {
          full = true;
          break;
        }
        next = r.record_offset + 1;
        if (is_scheduler_checkpoint(r)) continue;
        auto due = header_text(r.headers, delay::deliver_at_header);
        auto due_ms = due ? parse_decimal(*due) : std::nullopt;
        if (!due_ms || !header_text(r.headers, delay::target_topic_header)) {
          log_.error("delay partition " + st->key + ": offset " + std::to_string(r.record_offset.value()) +
                     " is not a delay record; skipped");
          continue;
        }
        entries.push_back({r.record_offset, *due_ms});
      }
      if (!full) next = std::max(next, std::min(read->next_offset, high_watermark));
      st->core->on_read(entries, next);
      continue;
    }
    // A checkpoint and a step's moves may be outstanding together (scheduler.h): after starting
    // one, poll again for the other.
    if (e.write_checkpoint) {
      if (!write_delay_checkpoint(shard, st, rt, *e.write_checkpoint)) return;   // failed: the next tick tries again
      continue;
    }
    if (!e.moves.empty()) {
      send_delay_moves(shard, st, rt, std::move(e.moves));
      continue;
    }
    return;
  }
}

bool delay_host::write_delay_checkpoint(size_t shard, const std::shared_ptr<partition_state>& st,
                                         const std::shared_ptr<partition_runtime>& rt, const delay::checkpoint& cp) {
  auto fail = [&](const std::string& why) {
    log_.error("delay partition " + st->key + ": checkpoint not written: " + why);
    st->core->checkpoint_written(false);
    return false;
  };
  model::record r;
  r.value = delay::encode_checkpoint(cp);
  r.headers.push_back(text_header(delay::checkpoint_header, std::to_string(delay::checkpoint_version)));
  std::vector<model::record> records;
  records.push_back(std::move(r));
  const model::offset position = cp.position;
  auto appended = rt->append_own_records(
      std::move(records), [this, shard, key = st->key, generation = st->generation, position](result<void> r) {
        on_delay_state(shard, key, generation, [this, shard, r, position](const auto& s) {
          if (!r.ok()) log_.error("delay partition " + s->key + ": checkpoint not replicated: " + r.error().message);
          s->core->checkpoint_written(r.ok());
          // Records below the committed position are moved: their segments may go
          // (Kafka's DeleteRecords; retention deletes whole segments below the start).
          auto rt = s->rt.lock();
          if (r.ok() && rt && position > rt->log->log_start_offset() && position <= rt->log->high_watermark()) {
            if (auto a = rt->log->advance_log_start_offset(position); !a.ok()) {
              log_.error("delay partition " + s->key + ": log start not advanced: " + a.error().message);
            }
          }
          drive_delay(shard, s);
        });
      });
  if (!appended.ok()) return fail(appended.error().message);
  return true;
}

namespace {

/// One move as sent: the record for the target and where it goes.
struct move_job {
  delay::move move;
  std::string topic;
  int32_t partition = 0;
  std::string source;   // the dedup key
  produce_record record;
};

/// The records at `offsets` (ascending) of a delay partition, by offset; missing ones are absent.
std::map<model::offset, model::record> read_at(storage::partition_log& log, const std::vector<model::offset>& offsets,
                                               model::offset end, std::string& failure) {
  std::map<model::offset, model::record> out;
  size_t i = 0;
  while (i < offsets.size()) {
    auto read = log.read(offsets[i], delay_read_bytes, end);
    if (!read.ok()) {
      failure = read.error().message;
      return out;
    }
    auto records = records_of(read->batches, offsets[i], end);
    if (!records.ok()) {
      failure = records.error().message;
      return out;
    }
    std::set<model::offset> wanted(offsets.begin() + static_cast<std::ptrdiff_t>(i), offsets.end());
    for (auto& r : *records) {
      if (wanted.contains(r.record_offset)) out.emplace(r.record_offset, std::move(r));
    }
    const model::offset next = read->next_offset;
    const size_t before = i;
    while (i < offsets.size() && offsets[i] < next) ++i;
    if (i == before) break;   // nothing more readable
  }
  return out;
}

/// The dedup key (ringlog-delay-source) of `rec` when it is the record a pending move sent: the
/// header and the key, value and headers sent (`wanted`: source -> record). The header alone
/// could be a client's, produced with a forged or mirrored ringlog-delay-source: it made a crash
/// drop the genuine move (the breaker's HIGH of session 23).
std::optional<std::string> sent_by_move(const model::record& rec,
                                        const std::map<std::string, const produce_record*>& wanted) {
  auto s = header_text(rec.headers, delay::source_header);
  auto sent = s ? wanted.find(std::string(*s)) : wanted.end();
  if (sent == wanted.end() || rec.key != sent->second->key || rec.value != sent->second->value ||
      rec.headers != sent->second->headers) {
    return std::nullopt;
  }
  return sent->first;
}

/// The moves of one step of `st` as jobs: each record read from the delay partition `log` and
/// given its target and dedup key. A move whose record cannot be read now (retry after the
/// backoff) or whose target does not exist (dropped) is reported to the scheduler instead.
std::vector<move_job> move_jobs_of(const metadata_publisher& metadata, const broker_log& logs,
                                   delay_host::partition_state& st, storage::partition_log& log,
                                   const std::vector<delay::move>& moves, int64_t now) {
  std::vector<model::offset> offsets;
  for (const auto& m : moves) offsets.push_back(m.offset);
  std::sort(offsets.begin(), offsets.end());
  std::string failure;
  // Read up to the last record to move, not the high watermark: a read decodes whole batches up
  // to its end, and the records behind the step's are the window's later ones (profile in
  // docs/benchmarks.md: decoding them again per step was a third of the scheduler's time).
  const model::offset read_end = std::min(log.high_watermark(), offsets.back() + 1);
  auto records = read_at(log, offsets, read_end, failure);
  if (!failure.empty()) logs.error("delay partition " + st.key + ": reading records to move: " + failure);
  std::vector<move_job> jobs;
  for (const auto& m : moves) {
    auto r = records.find(m.offset);
    if (r == records.end()) {
      // Unreadable now (an I/O error was logged): tried again after the backoff.
      st.core->move_done(m.offset, delay::move_outcome::retry, now);
      continue;
    }
    // The last copy of each target header: the broker appends its own after the producer's, so a
    // copy a producer put in front (refused since session 30) never wins.
    auto topic = delay::last_header(r->second.headers, delay::target_topic_header);
    auto partition = delay::last_header(r->second.headers, delay::target_partition_header);
    const int64_t p = partition ? parse_decimal(*partition).value_or(-1) : -1;
    auto target = topic ? metadata.find_topic(std::string(*topic)) : nullptr;
    auto target_id = delay::last_header(r->second.headers, delay::target_topic_id_header);
    if (target && target_id && controller::uuid_to_string(target->image->topic_id) != *target_id) {
      target = nullptr;   // deleted and created again under the same name: not the record's topic
    }
    if (!target || p < 0 || p >= target->partitions_count()) {
      logs.error("delay partition " + st.key + ": offset " + std::to_string(m.offset.value()) + " names target " +
                 std::string(topic.value_or("?")) + "-" + std::string(partition.value_or("?")) +
                 ", which does not exist (deleted, or deleted and created again with another topic id?): dropped");
      st.core->move_done(m.offset, delay::move_outcome::dropped, now);
      continue;
    }
    move_job job;
    job.move = m;
    job.topic = std::string(*topic);
    job.partition = static_cast<int32_t>(p);
    job.source = source_key(st.topic, st.partition, m.offset);
    job.record.partition = model::partition_id{job.partition};
    job.record.key = std::move(r->second.key);
    job.record.value = std::move(r->second.value);
    for (auto& h : r->second.headers) {
      if (h.key == delay::target_topic_header || h.key == delay::target_partition_header ||
          h.key == delay::target_topic_id_header) {
        continue;
      }
      job.record.headers.push_back(std::move(h));
    }
    job.record.headers.push_back(text_header(delay::source_header, job.source));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

using move_outcomes = std::vector<std::pair<model::offset, delay::move_outcome>>;
/// Reports outcomes to the scheduler that sent the moves, on its shard, in one task.
using report_moves_fn = std::function<void(move_outcomes)>;
using move_jobs = std::shared_ptr<std::vector<move_job>>;

/// Produces the jobs whose index is in `which`, one acks=all request per target topic, and
/// reports each one's outcome: moved; dropped when no retry can cure it (permanent, or the target
/// topic is gone); else retry.
void produce_move_jobs(metadata_barrier& barrier, const metadata_publisher& metadata, const broker_log& logs,
                       const move_jobs& jobs, const std::vector<size_t>& which, const report_moves_fn& report_all) {
  std::map<std::string, std::vector<size_t>> by_topic;
  for (size_t j : which) by_topic[(*jobs)[j].topic].push_back(j);
  for (auto& [topic, indices] : by_topic) {
    produce_request request;
    request.topic = topic;
    request.acks = acks_mode::all;
    request.timeout_ms = delay_move_timeout_ms;
    request.origin = record_origin::delay_scheduler;
    for (size_t j : indices) request.records.push_back((*jobs)[j].record);
    barrier.produce(std::move(request), [&metadata, &logs, jobs, indices, report_all, topic](result<produce_response> r) {
      move_outcomes list;
      list.reserve(indices.size());
      auto report = [&list](model::offset o, delay::move_outcome outcome) { list.push_back({o, outcome}); };
      for (size_t k = 0; k < indices.size(); ++k) {
        const auto& job = (*jobs)[indices[k]];
        std::optional<error> why;
        if (!r.ok())
          why = r.error();
        else if (r->results[k].failure)
          why = r->results[k].failure;
        if (!why) {
          report(job.move.offset, delay::move_outcome::moved);
        } else if (permanent(why->code) ||
                   (why->code == errc::unknown_topic_or_partition && !metadata.find_topic(topic))) {
          logs.error("delayed record " + job.source + " cannot be delivered to " + topic + "-" +
                     std::to_string(job.partition) + ": " + why->message + ": dropped");
          report(job.move.offset, delay::move_outcome::dropped);
        } else {
          report(job.move.offset, delay::move_outcome::retry);
        }
      }
      report_all(std::move(list));
    });
  }
}

/// Moves that may be in their target `tp` already (an intent of an earlier life or a timed-out
/// produce; `indices` into `jobs`): reads the target from the first record at or after the
/// intent's time (the moved record's timestamp is the broker's time when it was sent, never
/// earlier), reports those whose dedup key is there as moved and calls `done` with the others,
/// to send. The scan is bounded (verify_scan_records_max): past it the move is sent anyway,
/// at-least-once, and logged (`key`: the delay partition). A failed lookup reports retry.
void look_up_moves(metadata_barrier& barrier, const broker_log& logs, model::topic_partition tp,
                   std::vector<size_t> indices, const move_jobs& jobs, const report_moves_fn& report_all,
                   const std::string& key, std::function<void(std::vector<size_t>)> done) {
  struct scan {
    model::topic_partition tp;
    std::vector<size_t> indices;
    std::map<std::string, const produce_record*> wanted;   // source header -> the record sent
    std::set<std::string> found;
    model::offset at{0};
    int64_t scanned = 0;
    std::function<void()> next;   // cleared when the scan ends
  };
  auto report = [report_all](model::offset o, delay::move_outcome outcome) { report_all(move_outcomes{{o, outcome}}); };
  auto sc = std::make_shared<scan>();
  sc->tp = std::move(tp);
  sc->indices = std::move(indices);
  int64_t since = INT64_MAX;
  for (size_t j : sc->indices) {
    sc->wanted.emplace((*jobs)[j].source, &(*jobs)[j].record);
    since = std::min(since, (*jobs)[j].move.verify_since_ms);
  }
  auto finish = [&logs, sc, jobs, report, done, key](bool complete) {
    std::vector<size_t> send;
    for (size_t j : sc->indices) {
      if (sc->found.contains((*jobs)[j].source))
        report((*jobs)[j].move.offset, delay::move_outcome::moved);
      else
        send.push_back(j);
    }
    if (!complete && !send.empty()) {
      logs.error("delay partition " + key + ": " + std::to_string(send.size()) + " moves to " + sc->tp.topic + "-" +
                 std::to_string(sc->tp.partition.value()) + " could not be looked up in full (" +
                 std::to_string(sc->scanned) + " records scanned); sent again, at-least-once");
    }
    sc->next = nullptr;   // ends the scan's self-reference
    done(std::move(send));
  };
  auto fail_all = [sc, jobs, report, done](const error&) {
    for (size_t j : sc->indices) report((*jobs)[j].move.offset, delay::move_outcome::retry);
    sc->next = nullptr;
    done({});
  };
  // One fetch of the target per step; each step is a new call, never recursion on the stack.
  sc->next = [&barrier, sc, finish, fail_all] {
    fetch_request f;
    f.partition = sc->tp;
    f.fetch_offset = sc->at;
    f.max_bytes = 1 << 20;
    barrier.fetch(std::move(f), [sc, finish, fail_all](result<fetch_response> r) {
      if (!r.ok()) return fail_all(r.error());
      for (const auto& rec : r->records) {
        ++sc->scanned;
        if (auto sent = sent_by_move(rec, sc->wanted)) sc->found.insert(*sent);
        sc->at = rec.record_offset + 1;
      }
      if (sc->found.size() == sc->wanted.size()) return finish(true);
      if (r->records.empty() || sc->at >= r->high_watermark) return finish(true);
      if (sc->scanned >= delay::verify_scan_records_max) return finish(false);
      auto next = sc->next;
      if (next) next();
    });
  };
  list_offsets_request lookup;
  lookup.partition = sc->tp;
  lookup.spec = offset_spec::timestamp;
  lookup.timestamp = std::max<int64_t>(since, 0);
  barrier.list_offsets(std::move(lookup), [sc, finish, fail_all](result<list_offsets_response> r) {
    if (!r.ok()) return fail_all(r.error());
    if (!r->found_offset) return finish(true);   // nothing at or after the intent: not there
    sc->at = *r->found_offset;
    auto next = sc->next;
    if (next) next();
  });
}

}  // namespace

void delay_host::send_delay_moves(size_t shard, const std::shared_ptr<partition_state>& st,
                                  const std::shared_ptr<partition_runtime>& rt, std::vector<delay::move> moves) {
  auto jobs =
      std::make_shared<std::vector<move_job>>(move_jobs_of(metadata_, log_, *st, *rt->log, moves, clock_.now_ms()));
  if (jobs->empty()) return;   // every move reported already: drive_delay polls again

  // Report the outcomes of a produce's jobs on the scheduler's shard, in one task (one poll after
  // them, not one per record).
  report_moves_fn report_all = [this, shard, key = st->key, generation = st->generation](move_outcomes list) {
    if (list.empty()) return;
    on_delay_state(shard, key, generation, [this, shard, list = std::move(list)](const auto& s) {
      const int64_t now = clock_.now_ms();
      for (const auto& [o, outcome] : list) s->core->move_done(o, outcome, now);
      drive_delay(shard, s);
    });
  };
  std::vector<size_t> direct;
  std::map<std::pair<std::string, int32_t>, std::vector<size_t>> to_verify;
  for (size_t j = 0; j < jobs->size(); ++j) {
    const auto& job = (*jobs)[j];
    if (job.move.verify_first) to_verify[{job.topic, job.partition}].push_back(j);
    else direct.push_back(j);
  }
  if (to_verify.empty()) return produce_move_jobs(barrier_, metadata_, log_, jobs, direct, report_all);
  // The step's records go out together, in due order, once every lookup is done (a record sent
  // before a looked-up one due earlier would leave due order).
  struct gather {
    size_t scans_left = 0;
    std::vector<size_t> send;
  };
  auto gathered = std::make_shared<gather>();
  gathered->scans_left = to_verify.size();
  gathered->send = std::move(direct);
  auto scan_done = [this, gathered, jobs, report_all](std::vector<size_t> send) {
    gathered->send.insert(gathered->send.end(), send.begin(), send.end());
    if (--gathered->scans_left > 0) return;
    std::sort(gathered->send.begin(), gathered->send.end());   // job order is the batch's due order
    if (!gathered->send.empty()) produce_move_jobs(barrier_, metadata_, log_, jobs, gathered->send, report_all);
  };
  for (auto& [tp, indices] : to_verify) {
    look_up_moves(barrier_, log_, model::topic_partition{tp.first, model::partition_id{tp.second}}, std::move(indices),
                  jobs, report_all, st->key, scan_done);
  }
}

}  // namespace ringlog::broker::detail
