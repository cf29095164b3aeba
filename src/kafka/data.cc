// Produce, Fetch, ListOffsets, OffsetForLeaderEpoch: Kafka's data path onto the broker API.
// Record batches travel as the client wrote them (Produce) and as the log stores them (Fetch).

#include <algorithm>
#include <mutex>
#include <set>
#include <tuple>

#include "fetch_frame.h"
#include "handlers.h"
#include "ringlog/base/latency_stages.h"
#include "ringlog/base/topic_traffic.h"
#include "ringlog/codec/record_batch.h"

namespace ringlog::kafka::detail {

namespace {

constexpr int16_t invalid_required_acks = 21;
constexpr int16_t corrupt_message = 2;
constexpr int16_t unsupported_for_message_format = 43;
constexpr int16_t invalid_record = 87;

/// Why a record set cannot be split into v2 batches, and the Kafka error that says so.
struct split_error {
  int16_t code = corrupt_message;
  std::string message;
};

/// Cuts a partition's record set into its batches (each batch_length + 12 bytes). Errors name
/// what is wrong: a size that runs past the record set, a message format other than v2.
base::result<std::vector<bytes>, split_error> split_batches(const bytes& records) {
  std::vector<bytes> out;
  size_t pos = 0;
  while (pos < records.size()) {
    const size_t left = records.size() - pos;
    if (left < codec::batch_log_overhead_bytes + 5) {
      return split_error{corrupt_message, "record set ends inside a batch header (" + std::to_string(left) +
                                              " bytes left at " + std::to_string(pos) + ")"};
    }
    const auto* p = records.data() + pos;
    const int32_t batch_length = static_cast<int32_t>((static_cast<uint32_t>(p[8]) << 24) | (static_cast<uint32_t>(p[9]) << 16) |
                                                      (static_cast<uint32_t>(p[10]) << 8) | static_cast<uint32_t>(p[11]));
    const auto magic = static_cast<int8_t>(p[16]);
    if (magic != codec::batch_magic_v2) {
      return split_error{unsupported_for_message_format,
                         "message format v" + std::to_string(magic) + " at byte " + std::to_string(pos) +
                             ": only record batch v2 (magic 2) is accepted"};
    }
    if (batch_length <= 0 || static_cast<size_t>(batch_length) > left - codec::batch_log_overhead_bytes) {
      return split_error{corrupt_message, "batch_length " + std::to_string(batch_length) + " at byte " +
                                              std::to_string(pos) + " runs past the record set (" +
                                              std::to_string(left) + " bytes left)"};
    }
    const size_t size = static_cast<size_t>(batch_length) + codec::batch_log_overhead_bytes;
    out.emplace_back(records.begin() + static_cast<std::ptrdiff_t>(pos),
                     records.begin() + static_cast<std::ptrdiff_t>(pos + size));
    pos += size;
  }
  if (out.empty()) return split_error{corrupt_message, "the record set is empty"};
  return out;
}

/// Whole batches at the front of `batches` that fit in `budget` bytes; at least the first when
/// `at_least_one` (KIP-74: a consumer is never stuck behind a batch larger than its limits).
size_t fitting_prefix(const bytes& batches, size_t budget, bool at_least_one) {
  size_t pos = 0;
  while (pos + codec::batch_log_overhead_bytes <= batches.size()) {
    auto header = codec::decode_header(std::span(batches).subspan(pos));
    RINGLOG_ASSERT(header.ok(), "batches read from the log were validated on append");
    const size_t next = pos + header->size_bytes();
    if (next > budget && !(at_least_one && pos == 0)) break;
    pos = next;
  }
  return pos;
}

}  // namespace

// ---------------------------------------------------------------- Produce

/// The first Produce version whose answer carries KIP-951's CurrentLeader and NodeEndpoints.
constexpr int16_t produce_leader_hints_version = 10;
/// ListOffsets answers carry LeaderEpoch from this version on (KIP-320).
constexpr int16_t list_offsets_leader_epoch_version = 4;

namespace {

using refusal = std::pair<int16_t, std::string>;

/// Records and bytes of a Produce's batches for one partition (base/topic_traffic.h).
struct batch_totals {
  uint64_t records = 0;
  uint64_t bytes = 0;
};
batch_totals totals_of(const std::vector<bytes>& batches) {
  batch_totals t;
  for (const auto& batch : batches) {
    t.bytes += batch.size();
    if (auto header = codec::decode_header(batch); header.ok()) t.records += static_cast<uint64_t>(header->last_offset_delta) + 1;
  }
  return t;
}

/// The batches of one partition of a Produce into `out`, or why the partition is refused (code,
/// message), before anything reaches the broker.
std::optional<refusal> checked_batches(const request_context& ctx, const std::string& topic,
                                       const std::optional<bytes>& records,
                                       const std::optional<std::string>& transactional_id, std::vector<bytes>& out) {
  // A transactional_id names the transactional producer; its batches carry the transactional
  // attribute, which the partition tracks (KIP-98). The leader asks the id's coordinator
  // whether the partition was added to the transaction before the first batch (KIP-890 part 1).
  // WRITE on the topic (KafkaApis.handleProduceRequest): a topic the principal may not write
  // answers TOPIC_AUTHORIZATION_FAILED whether or not it exists, so its existence stays hidden.
  if (!ctx.authorized(security::resource_type::topic, topic, security::acl_operation::write)) {
    return refusal{error_code::topic_authorization_failed, "WRITE on the topic is not allowed for " + ctx.principal.to_string()};
  }
  if (!records) return refusal{corrupt_message, "the partition's records are null"};
  auto split = split_batches(*records);
  if (!split.ok()) return refusal{split.error().code, split.error().message};
  auto* batches = &split.value();
  // A transactional batch needs the transactional_id its leader verifies with the coordinator
  // (KIP-890): without one (null, empty, or Produce v0-v2) it would open a transaction no
  // coordinator knows and ends, holding every read_committed reader back for good. Kafka
  // refuses it the same way (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
  const bool transactional = std::any_of(batches->begin(), batches->end(), [](const bytes& batch) {
    auto header = codec::decode_header(batch);
    return header.ok() && header->is_transactional();
  });
  if (transactional && transactional_id.value_or("").empty()) {
    return refusal{error_code::transactional_id_authorization_failed,
                   "a transactional batch needs the Produce request's transactional_id (v3+), which is " +
                       std::string(transactional_id ? "empty" : "null")};
  }
  if (transactional && !ctx.authorized(security::resource_type::transactional_id, *transactional_id,
                                       security::acl_operation::write)) {
    return refusal{error_code::transactional_id_authorization_failed,
                   "WRITE on the transactional id is not allowed for " + ctx.principal.to_string()};
  }
  // The leader verifies one producer per partition and request: a second batch (of another
  // producer) would be appended unverified and could open a transaction nobody ends. Kafka
  // takes exactly one batch per partition from Produce v3 on (INVALID_RECORD otherwise).
  if (transactional && batches->size() != 1) {
    return refusal{invalid_record, "a transactional Produce carries exactly one record batch per partition, got " +
                                       std::to_string(batches->size())};
  }
  out = std::move(*batches);
  return std::nullopt;
}

using partition_result = protocol::produce_response_data::partition_produce_response;

/// The Produce answer: each partition's result under its topic, the endpoints of the leaders
/// named (KIP-951), and the throttle time producer_byte_rate asked (KIP-219).
void answer_produce(const request_context& ctx, const std::vector<std::string>& topic_names,
                    const std::vector<size_t>& targets_topic, std::vector<partition_result>& results,
                    int64_t throttle_ms) {
  protocol::produce_response_data out;
  for (const auto& name : topic_names) {
    protocol::produce_response_data::topic_produce_response t;
    t.name = name;
    out.responses.push_back(std::move(t));
  }
  std::set<int32_t> hinted;   // KIP-951 (v10+ only): the leaders named in current_leader
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].current_leader.leader_id >= 0) hinted.insert(results[i].current_leader.leader_id);
    out.responses[targets_topic[i]].partition_responses.push_back(std::move(results[i]));
  }
  for (const auto& broker : ctx.broker_api().admin().list_brokers()) {
    const auto* endpoint = broker.kafka_endpoint(ctx.options().listener_name);   // the client's listener
    if (!hinted.contains(broker.node_id) || endpoint == nullptr) continue;
    protocol::produce_response_data::node_endpoint e;
    e.node_id = broker.node_id;
    std::tie(e.host, e.port) = std::pair(endpoint->host, endpoint->port);
    if (!broker.rack.empty()) e.rack = broker.rack;
    out.node_endpoints.push_back(std::move(e));
  }
  out.throttle_time_ms = static_cast<int32_t>(throttle_ms);
  ctx.answer(out);
}

}  // namespace

void handle_produce(const request_context& ctx, protocol::produce_request_data request) {
  const int64_t received_ns = base::monotonic_ns();
  broker::broker& b = ctx.broker_api();
  broker::acks_mode acks = broker::acks_mode::all;
  const bool acks_valid = request.acks == 0 || request.acks == 1 || request.acks == -1;
  if (request.acks == 0) acks = broker::acks_mode::none;
  if (request.acks == 1) acks = broker::acks_mode::leader;
  // Flatten (topic, partition) pairs, keeping request order for the answer.
  struct target {
    size_t topic_index;
    int32_t partition;
    std::optional<bytes> records;
  };
  std::vector<target> targets;
  std::vector<size_t> targets_topic;
  size_t request_bytes = 0;   // producer_byte_rate counts the record sets (Kafka: the request)
  for (size_t t = 0; t < request.topic_data.size(); ++t) {
    for (auto& p : request.topic_data[t].partition_data) {
      request_bytes += p.records ? p.records->size() : 0;
      targets_topic.push_back(t);
      targets.push_back({t, p.index, std::move(p.records)});
    }
  }
  const bool no_response = request.acks == 0;
  std::vector<std::string> topic_names;
  for (const auto& t : request.topic_data) topic_names.push_back(t.name);
  // producer_byte_rate counts the request as it arrives (Kafka counts it as it answers, but reads
  // one request of a connection at a time): the listener stops reading at once (acks=0 too) and
  // the answer carries the time (KIP-219).
  const int64_t throttle_ms = b.security().record_client_quota(security::quota_key::producer_byte_rate, quota_user(ctx),
                                                    ctx.client_id, static_cast<double>(request_bytes));
  if (ctx.timing) ctx.timing->dispatch_throttle_ms = throttle_ms;
  auto g = std::make_shared<gather<partition_result>>(
      targets.size(), [ctx, no_response, topic_names, targets_topic, throttle_ms](std::vector<partition_result>& results) {
        if (!no_response) answer_produce(ctx, topic_names, targets_topic, results, throttle_ms);
      });
  // acks=0: the client reads no answer (Kafka sends none), whatever happens to the records.
  if (no_response) ctx.answer_nothing();
  for (size_t i = 0; i < targets.size(); ++i) {
    auto& t = targets[i];
    partition_result& slot = g->slot(i);
    slot.index = t.partition;
    slot.base_offset = -1;
    slot.log_append_time_ms = -1;
    slot.log_start_offset = -1;
    auto fail = [&](int16_t code, std::string message) {
      slot.error_code = code;
      slot.error_message = std::move(message);
      g->complete_one();
    };
    if (!acks_valid) {
      fail(invalid_required_acks, "acks must be 0, 1 or -1, got " + std::to_string(request.acks));
      continue;
    }
    std::vector<bytes> batches;
    if (auto refused = checked_batches(ctx, topic_names[t.topic_index], t.records, request.transactional_id, batches)) {
      fail(refused->first, std::move(refused->second));
      continue;
    }
    broker::produce_batches_request produce;
    produce.partition = model::topic_partition{topic_names[t.topic_index], model::partition_id{t.partition}};
    produce.batches = std::move(batches);
    produce.acks = acks;
    produce.timeout_ms = request.timeout_ms;
    produce.transactional_id = request.transactional_id.value_or("");
    produce.received_ns = received_ns;
    // KIP-951's CurrentLeader and NodeEndpoints exist from Produce v10: an older answer carrying
    // them would not encode.
    const bool leader_hints = ctx.api_version >= produce_leader_hints_version;
    const batch_totals sent = totals_of(produce.batches);
    b.produce_batches(std::move(produce), [&b, g, i, tp = produce.partition, leader_hints, sent](
                                              broker::result<broker::produce_batches_response> r) {
      partition_result& res = g->slot(i);
      if (r.ok()) base::count_topic_in(tp.topic, sent.records, sent.bytes);
      if (!r.ok()) {
        res.error_code = code_of(r.error());
        res.error_message = r.error().message;
        if (res.error_code == error_code::not_leader_or_follower && leader_hints) {
          // KIP-951: name the leader this broker knows now, so the client need not refresh its
          // metadata first (Produce v10+; older versions do not carry the field).
          return b.admin().describe_topic(tp.topic, [g, i, p = tp.partition.value()](broker::result<broker::topic_description> d) {
            partition_result& res2 = g->slot(i);
            if (d.ok() && p < static_cast<int32_t>(d->partitions.size()) && d->partitions[static_cast<size_t>(p)].leader >= 0) {
              res2.current_leader.leader_id = d->partitions[static_cast<size_t>(p)].leader;
              res2.current_leader.leader_epoch = d->partitions[static_cast<size_t>(p)].leader_epoch.value();
            }
            g->complete_one();
          });
        }
      } else {
        res.base_offset = r->base_offset.value();
        res.log_append_time_ms = r->log_append_time;
        res.log_start_offset = r->log_start_offset.value();
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

// ---------------------------------------------------------------- Fetch

namespace {

struct fetch_part {
  size_t topic_index = 0;
  int32_t partition = 0;
  int64_t fetch_offset = 0;
  int32_t partition_max_bytes = 0;
  int16_t error = error_code::none;
  bool refused = false;   // no READ on the topic: TOPIC_AUTHORIZATION_FAILED, never read
  int64_t high_watermark = -1;
  int64_t log_start_offset = -1;
  int64_t last_stable_offset = -1;
  std::vector<broker::aborted_transaction> aborted;   // read_committed: for the client to drop
  bytes batches;
  /// The zero-copy path: the batches as ranges of segment files (one per batch) instead of bytes.
  std::vector<io::file_range> ranges;
  size_t ranges_bytes = 0;
  int64_t next_fetch_offset = 0;   // the read's: one past the last offset of its last batch
  int32_t current_leader_epoch = -1;   // Fetch v9+ (KIP-320): the broker refuses another epoch
};

/// Whole batches at the front of `ranges` (one batch each) that fit in `budget` bytes; at least
/// the first when `at_least_one` (fitting_prefix's rule for batches sent from files).
size_t fitting_ranges(const std::vector<io::file_range>& ranges, size_t budget, bool at_least_one, size_t& bytes_kept) {
  size_t kept = 0;
  bytes_kept = 0;
  for (const auto& r : ranges) {
    if (bytes_kept + r.length > budget && !(at_least_one && kept == 0)) break;
    bytes_kept += r.length;
    ++kept;
  }
  return kept;
}

/// One Fetch request in flight: a first read of every partition without waiting, then, when that
/// found fewer than min_bytes, a wait. With min_bytes <= 1, a long-poll of every partition
/// answered by the first that has data (or by the last to time out). With more, Kafka's
/// DelayedFetch: every partition is watched from the end of what it has, each append wakes its
/// watch, and once the bytes across the request's partitions reach min_bytes (or one errors, or
/// max_wait_ms passes) every partition is read again and that is the answer.
struct fetch_operation {
  request_context ctx;
  std::vector<std::string> topics;
  std::vector<fetch_part> parts;
  int32_t min_bytes = 1;
  int32_t max_wait_ms = 0;
  /// Kafka's IsolationLevel (KIP-98): read_committed reads below the last stable offset and gets
  /// the aborted transactions of what it reads.
  broker::isolation_level isolation = broker::isolation_level::read_uncommitted;
  size_t response_bytes_max = 0;
  std::mutex mutex;          // the long-poll's completions come from several shard threads
  bool answered = false;
  size_t outstanding = 0;
  // The wait for min_bytes (DelayedFetch); it holds no record bytes, only what it has seen.
  int64_t deadline_ms = 0;                  // on the handler's clock
  size_t bytes_needed = 0;                  // min(min_bytes, response_bytes_max)
  size_t bytes_seen = 0;                    // across the partitions, since the request came
  std::vector<size_t> partition_bytes_seen; // per part
  std::vector<int64_t> watch_offset;        // per part: one past what it has seen
  int64_t woken_ns = 0;   // a parked read woken by new data: when (base::monotonic_ns; metrics)

  /// Records `bytes` fetched under consumer_byte_rate; the throttle time it asks, ms (KIP-219).
  [[nodiscard]] int64_t record_consumer_bytes(size_t bytes) const {
    return ctx.broker_api().security().record_client_quota(security::quota_key::consumer_byte_rate, quota_user(ctx),
                                                ctx.client_id, static_cast<double>(bytes));
  }

  void answer() {
    // KIP-219 (Kafka's KafkaApis.handleFetchRequest): a consumer already over consumer_byte_rate
    // gets no records, only the throttle time, so it cannot read on past its quota.
    if (const int64_t over_ms = record_consumer_bytes(0); over_ms > 0) {
      protocol::fetch_response_data throttled;
      throttled.throttle_time_ms = static_cast<int32_t>(over_ms);
      return ctx.answer(throttled);
    }
    protocol::fetch_response_data out;
    fetch_frame_ranges ranges(topics.size());
    for (const auto& name : topics) {
      protocol::fetch_response_data::fetchable_topic_response t;
      t.topic = name;
      out.responses.push_back(std::move(t));
    }
    size_t used = 0;
    size_t copied = 0;
    bool any_ranges = false;
    for (auto& p : parts) {
      protocol::fetch_response_data::partition_data d;
      d.partition_index = p.partition;
      d.error_code = p.error;
      d.high_watermark = p.high_watermark;
      d.last_stable_offset = p.last_stable_offset;
      d.log_start_offset = p.log_start_offset;
      d.aborted_transactions = std::nullopt;
      if (isolation == broker::isolation_level::read_committed) {
        // Kafka answers read_committed with a list (empty when none overlaps), else null.
        d.aborted_transactions.emplace();
        for (const auto& a : p.aborted) {
          protocol::fetch_response_data::aborted_transaction x;
          x.producer_id = a.producer_id.value();
          x.first_offset = a.first_offset.value();
          d.aborted_transactions->push_back(x);
        }
      }
      const size_t left = response_bytes_max > used ? response_bytes_max - used : 0;
      const size_t used_before = used;
      const bool whole = (p.ranges.empty() ? p.batches.size() : p.ranges_bytes) <= left;
      std::vector<io::file_range> kept_ranges;
      if (!p.ranges.empty()) {
        size_t kept_bytes = 0;
        p.ranges.resize(fitting_ranges(p.ranges, left, used == 0, kept_bytes));
        used += kept_bytes;
        kept_ranges = std::move(p.ranges);
        any_ranges = any_ranges || !kept_ranges.empty();
        d.records = bytes{};
      } else {
        const size_t keep = fitting_prefix(p.batches, left, used == 0);
        p.batches.resize(keep);
        used += keep;
        copied += keep;
        d.records = std::move(p.batches);
      }
      ranges[p.topic_index].push_back(std::move(kept_ranges));
      out.responses[p.topic_index].partitions.push_back(std::move(d));
      // An answer cut by the response's byte bound counts its bytes; its records only when whole.
      if (used > used_before) {
        const int64_t covered = whole ? std::max<int64_t>(0, p.next_fetch_offset - p.fetch_offset) : 0;
        base::count_topic_out(topics[p.topic_index], static_cast<uint64_t>(covered), used - used_before);
      }
    }
    if (fetch_counters* c = ctx.options().counters; c != nullptr && copied > 0) c->bytes_copied += copied;
    out.throttle_time_ms = static_cast<int32_t>(record_consumer_bytes(used));
    if (!any_ranges) {
      ctx.answer(out);
    } else {
      out.throttle_time_ms = std::max(out.throttle_time_ms, static_cast<int32_t>(ctx.request_throttle_time_ms()));
      auto frame = encode_fetch_frame(ctx.api_version, ctx.correlation_id, out, ranges);
      RINGLOG_ASSERT(frame.ok(), "a Fetch answer built by the kafka module must encode at the request's version");
      ctx.respond_throttled(std::move(frame).value(), out.throttle_time_ms);
    }
    base::observe_latency_since(base::latency_stage::fetch_wakeup, woken_ns);
  }
};

void store(fetch_part& part, broker::result<broker::fetch_response>& r) {
  if (!r.ok()) {
    part.error = code_of(r.error());
    part.batches.clear();
    part.ranges.clear();
    part.ranges_bytes = 0;
    return;
  }
  part.error = error_code::none;
  part.high_watermark = r->high_watermark.value();
  part.log_start_offset = r->log_start_offset.value();
  part.last_stable_offset = r->last_stable_offset.value();
  part.aborted = std::move(r->aborted_transactions);
  part.batches = std::move(r->batches);
  part.ranges = std::move(r->file_ranges);
  part.ranges_bytes = r->file_ranges_bytes;
  part.next_fetch_offset = r->next_fetch_offset.value();
}

broker::fetch_request make_request(const std::string& topic, const fetch_part& p, int64_t max_wait_ms,
                                   broker::isolation_level isolation, bool zero_copy) {
  broker::fetch_request f;
  f.partition = model::topic_partition{topic, model::partition_id{p.partition}};
  f.fetch_offset = model::offset{p.fetch_offset};
  f.max_bytes = std::max<int32_t>(1, p.partition_max_bytes);
  f.max_wait_ms = max_wait_ms;
  f.raw_batches = true;
  f.wait_while_end_unknown = false;   // Kafka answers OFFSET_NOT_AVAILABLE (78) at once (KIP-207)
  // The zero-copy path (kafka.fetch.zero.copy): batches as file ranges where the log has OS files
  // on this broker. Every batch is sent as stored: ringlog never rewrites one for a Fetch (no
  // down-conversion: Fetch < 4 is refused; read_committed clients drop aborted records themselves
  // from the aborted_transactions list, as with Kafka), so every fetch may take it.
  f.file_ranges = zero_copy;
  f.isolation = isolation;
  f.current_leader_epoch = p.current_leader_epoch;
  return f;
}

using fetch_answer = std::optional<broker::result<broker::fetch_response>>;

/// Reads every partition of `op` at its fetch offset without waiting; `then` gets the answers in
/// part order, on the thread of the last one.
void read_all(const std::shared_ptr<fetch_operation>& op, std::function<void(std::vector<fetch_answer>&)> then) {
  broker::broker& b = op->ctx.broker_api();
  auto g = std::make_shared<gather<fetch_answer>>(op->parts.size(), std::move(then));
  for (size_t i = 0; i < op->parts.size(); ++i) {
    const auto& p = op->parts[i];
    if (p.refused) {
      g->slot(i) = broker::result<broker::fetch_response>(
          broker::error{broker::errc::topic_authorization_failed, "READ on the topic is not allowed"});
      g->complete_one();
      continue;
    }
    b.fetch(make_request(op->topics[p.topic_index], p, 0, op->isolation, op->ctx.options().fetch_zero_copy),
            [g, i](broker::result<broker::fetch_response> r) {
              g->slot(i) = std::move(r);
              g->complete_one();
            });
  }
  g->finish_if_empty();
}

size_t read_bytes(const broker::fetch_response& r) { return r.batches.size() + r.file_ranges_bytes; }

int64_t now_ms(const fetch_operation& op) {
  static const base::system_clock system;
  const base::clock* c = op.ctx.options().clock;
  return c != nullptr ? c->now_ms() : system.now_ms();
}

/// The end of a DelayedFetch: the request's partitions read again, now, and answered.
void complete_delayed(const std::shared_ptr<fetch_operation>& op) {
  op->ctx.handler->delayed_fetches().fetch_sub(1, std::memory_order_relaxed);
  read_all(op, [op](std::vector<fetch_answer>& results) {
    for (size_t i = 0; i < results.size(); ++i) store(op->parts[i], *results[i]);
    op->answer();
  });
}

void on_watched(const std::shared_ptr<fetch_operation>& op, size_t i, broker::result<broker::fetch_response> r);
void long_poll(const std::shared_ptr<fetch_operation>& op);

/// Parks part `i` in the broker from its watch offset for up to `wait_ms`: the partition's next
/// append (or its deadline, or an error) answers it.
void watch(const std::shared_ptr<fetch_operation>& op, size_t i, int64_t wait_ms) {
  const auto& p = op->parts[i];
  auto f = make_request(op->topics[p.topic_index], p, wait_ms, op->isolation, op->ctx.options().fetch_zero_copy);
  f.fetch_offset = model::offset{op->watch_offset[i]};
  f.max_bytes = static_cast<int32_t>(std::max<int64_t>(1, int64_t{p.partition_max_bytes} - static_cast<int64_t>(op->partition_bytes_seen[i])));
  op->ctx.broker_api().fetch(std::move(f), [op, i](broker::result<broker::fetch_response> r) { on_watched(op, i, std::move(r)); });
}

/// A watched partition answered: count its new bytes (then drop them) and decide whether the
/// request is complete (Kafka's DelayedFetch.tryComplete), the partition watched again from
/// past them, or left (timed out, or it already holds partition_max_bytes).
void on_watched(const std::shared_ptr<fetch_operation>& op, size_t i, broker::result<broker::fetch_response> r) {
  bool complete = false;
  int64_t wait_ms = 0;
  {
    std::lock_guard lock(op->mutex);
    --op->outstanding;
    if (op->answered) return;
    const size_t got = r.ok() ? read_bytes(*r) : 0;
    if (r.ok()) {
      if (r->woken_ns != 0) op->woken_ns = r->woken_ns;
      op->partition_bytes_seen[i] += got;
      op->bytes_seen += got;
      op->watch_offset[i] = std::max(op->watch_offset[i], r->next_fetch_offset.value());
      wait_ms = op->deadline_ms - now_ms(*op);
    }
    const bool again = r.ok() && got > 0 && wait_ms > 0 &&
                       op->partition_bytes_seen[i] < static_cast<size_t>(op->parts[i].partition_max_bytes);
    complete = !r.ok() || op->bytes_seen >= op->bytes_needed || (!again && op->outstanding == 0);
    if (complete) op->answered = true;
    else if (again) ++op->outstanding;
    else return;
  }
  if (complete) return complete_delayed(op);
  watch(op, i, wait_ms);
}

/// After a first read that found `bytes_seen` < min_bytes (answers dropped): waits as
/// DelayedFetch, or, past constants::delayed_fetches_max waiting at once, as min_bytes=1 would.
void wait_for_min_bytes(const std::shared_ptr<fetch_operation>& op, std::vector<fetch_answer>& first, size_t bytes_seen) {
  auto& waiting = op->ctx.handler->delayed_fetches();
  if (waiting.fetch_add(1, std::memory_order_relaxed) >= constants::delayed_fetches_max) {
    waiting.fetch_sub(1, std::memory_order_relaxed);
    for (size_t i = 0; i < first.size(); ++i) store(op->parts[i], *first[i]);
    if (bytes_seen > 0) {
      op->answered = true;
      return op->answer();
    }
    return long_poll(op);
  }
  op->deadline_ms = now_ms(*op) + op->max_wait_ms;
  op->bytes_needed = std::min(static_cast<size_t>(op->min_bytes), op->response_bytes_max);
  op->bytes_seen = bytes_seen;
  std::vector<size_t> watched;
  for (size_t i = 0; i < first.size(); ++i) {
    const auto& r = *first[i];
    op->partition_bytes_seen.push_back(read_bytes(*r));
    op->watch_offset.push_back(std::max(op->parts[i].fetch_offset, r->next_fetch_offset.value()));
    if (op->partition_bytes_seen[i] < static_cast<size_t>(op->parts[i].partition_max_bytes)) watched.push_back(i);
  }
  {
    std::lock_guard lock(op->mutex);
    op->outstanding = watched.size();
    // Every partition already holds its partition_max_bytes: nothing more can come.
    op->answered = watched.empty();
  }
  if (watched.empty()) return complete_delayed(op);
  for (size_t i : watched) watch(op, i, op->max_wait_ms);
}

/// The long-poll: every partition parks in the broker; the first answer with data (or an error)
/// answers the client, the rest are dropped when they come.
void long_poll(const std::shared_ptr<fetch_operation>& op) {
  broker::broker& b = op->ctx.broker_api();
  {
    std::lock_guard lock(op->mutex);
    op->outstanding = op->parts.size();
  }
  for (size_t i = 0; i < op->parts.size(); ++i) {
    const auto& p = op->parts[i];
    b.fetch(make_request(op->topics[p.topic_index], p, op->max_wait_ms, op->isolation, op->ctx.options().fetch_zero_copy),
            [op, i](broker::result<broker::fetch_response> r) {
              std::lock_guard lock(op->mutex);
              --op->outstanding;
              if (op->answered) return;
              const bool has_data = !r.ok() || !r->batches.empty() || !r->file_ranges.empty();
              if (r.ok() && r->woken_ns != 0) op->woken_ns = r->woken_ns;
              store(op->parts[i], r);
              if (has_data || op->outstanding == 0) {
                op->answered = true;
                op->answer();
              }
            });
  }
}

}  // namespace

void handle_fetch(const request_context& ctx, protocol::fetch_request_data request) {
  // No fetch sessions (KIP-227) are kept: session_id 0 in every answer tells the client to send
  // full requests; an incremental one names a session we never gave.
  if (request.session_id != 0 || request.session_epoch > 0) {
    protocol::fetch_response_data out;
    out.error_code = error_code::fetch_session_id_not_found;
    ctx.answer(out);
    return;
  }
  if (ctx.api_version < 4) {
    // Fetch v2/v3 expect message format v0/v1, which is not kept (no down-conversion).
    protocol::fetch_response_data out;
    for (const auto& t : request.topics) {
      protocol::fetch_response_data::fetchable_topic_response rt;
      rt.topic = t.topic;
      for (const auto& p : t.partitions) {
        protocol::fetch_response_data::partition_data d;
        d.partition_index = p.partition;
        d.error_code = error_code::unsupported_version;
        d.high_watermark = -1;
        rt.partitions.push_back(std::move(d));
      }
      out.responses.push_back(std::move(rt));
    }
    ctx.answer(out);
    return;
  }
  auto op = std::make_shared<fetch_operation>();
  op->ctx = ctx;
  op->min_bytes = request.min_bytes;
  // fetch.wait.max.ms caps the whole wait (a min_bytes wait re-parks after each append it sees).
  op->max_wait_ms = static_cast<int32_t>(
      std::clamp<int64_t>(request.max_wait_ms, 0, std::max<int64_t>(0, ctx.options().fetch_wait_max_ms)));
  op->isolation = request.isolation_level == 1 ? broker::isolation_level::read_committed
                                               : broker::isolation_level::read_uncommitted;
  int64_t max_bytes = ctx.api_version >= 3 ? request.max_bytes : ctx.options().fetch_response_bytes_max;
  max_bytes = std::clamp<int64_t>(max_bytes, 1, ctx.options().fetch_response_bytes_max);
  // Under consumer_byte_rate one fetch takes at most a quota window's worth (Kafka's cap,
  // KafkaApis.handleFetchRequest): a large max_bytes cannot take many windows at once.
  if (auto cap = ctx.broker_api().security().client_quota_window_value_max(security::quota_key::consumer_byte_rate, quota_user(ctx),
                                                                ctx.client_id)) {
    max_bytes = std::clamp<int64_t>(*cap, 1, max_bytes);
  }
  op->response_bytes_max = static_cast<size_t>(max_bytes);
  for (size_t t = 0; t < request.topics.size(); ++t) {
    op->topics.push_back(request.topics[t].topic);
    for (const auto& p : request.topics[t].partitions) {
      fetch_part part;
      part.topic_index = t;
      part.partition = p.partition;
      part.fetch_offset = p.fetch_offset;
      part.current_leader_epoch = p.current_leader_epoch;   // -1 below v9 (the schema's default)
      part.partition_max_bytes = static_cast<int32_t>(std::min<int64_t>(p.partition_max_bytes, max_bytes));
      // READ on the topic (a consumer's fetch): refused partitions are answered, never read.
      part.refused = !ctx.authorized(security::resource_type::topic, request.topics[t].topic, security::acl_operation::read);
      op->parts.push_back(std::move(part));
    }
  }
  read_all(op, [op](std::vector<fetch_answer>& results) {
    size_t total = 0;
    bool any_error = false;
    for (const auto& r : results) {
      RINGLOG_ASSERT(r.has_value(), "every partition's first read answered");
      if (!r->ok()) any_error = true;
      else total += read_bytes(r->value());
    }
    if (total >= static_cast<size_t>(std::max(op->min_bytes, 1)) || total >= op->response_bytes_max || any_error ||
        op->max_wait_ms == 0 || op->parts.empty()) {
      for (size_t i = 0; i < results.size(); ++i) store(op->parts[i], *results[i]);
      op->answered = true;
      return op->answer();
    }
    if (op->min_bytes > 1) return wait_for_min_bytes(op, results, total);
    for (size_t i = 0; i < results.size(); ++i) store(op->parts[i], *results[i]);
    long_poll(op);
  });
}

// ---------------------------------------------------------------- ListOffsets

void handle_list_offsets(const request_context& ctx, protocol::list_offsets_request_data request) {
  using response = protocol::list_offsets_response_data;
  using partition_result = response::list_offsets_partition_response;
  broker::broker& b = ctx.broker_api();
  const broker::isolation_level isolation = request.isolation_level == 1 ? broker::isolation_level::read_committed
                                                                         : broker::isolation_level::read_uncommitted;
  const auto targets = targets_of(request.topics, &protocol::list_offsets_request_data::list_offsets_topic::name);
  auto g = gather_by_topic<response, partition_result>(ctx, targets, &response::list_offsets_topic_response::name);
  for (size_t i = 0; i < targets.partitions.size(); ++i) {
    const auto& t = targets.partitions[i];
    const std::string& topic = targets.names[targets.topic_of[i]];
    partition_result& slot = g->slot(i);
    slot.partition_index = t.partition_index;
    slot.timestamp = -1;
    slot.offset = -1;
    slot.leader_epoch = -1;
    if (!ctx.authorized(security::resource_type::topic, topic, security::acl_operation::describe)) {
      slot.error_code = error_code::topic_authorization_failed;
      g->complete_one();
      continue;
    }
    broker::list_offsets_request lo;
    lo.partition = model::topic_partition{topic, model::partition_id{t.partition_index}};
    lo.isolation = isolation;
    lo.current_leader_epoch = t.current_leader_epoch;
    // Kafka's special timestamps: -1 latest (the high watermark; the last stable offset with
    // read_committed, KIP-98), -2 earliest.
    if (t.timestamp == -1) {
      lo.spec = broker::offset_spec::latest;
    } else if (t.timestamp == -2) {
      lo.spec = broker::offset_spec::earliest;
    } else if (t.timestamp < 0) {
      slot.error_code = error_code::invalid_request;
      g->complete_one();
      continue;
    } else {
      lo.spec = broker::offset_spec::timestamp;
      lo.timestamp = t.timestamp;
    }
    // LeaderEpoch exists from v4 (KIP-320): an older answer carrying one would not encode.
    const bool with_epoch = ctx.api_version >= list_offsets_leader_epoch_version;
    b.list_offsets(std::move(lo), [g, i, with_epoch](broker::result<broker::list_offsets_response> r) {
      partition_result& res = g->slot(i);
      if (!r.ok()) {
        res.error_code = code_of(r.error());
      } else if (r->found_offset) {
        res.offset = r->found_offset->value();
        res.timestamp = r->timestamp;
        if (with_epoch) res.leader_epoch = r->leader_epoch.value();
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

// ---------------------------------------------------------------- OffsetForLeaderEpoch

void handle_offset_for_leader_epoch(const request_context& ctx, protocol::offset_for_leader_epoch_request_data request) {
  // KIP-101/279/320: the end offset of the largest leader epoch <= the one asked, from the
  // leader's epoch cache (broker::end_offset_for_leader_epoch). KIP-320 consumers ask it after
  // every leader change: an undefined answer for an epoch the log holds reads as truncation and
  // resets their position by auto.offset.reset.
  using response = protocol::offset_for_leader_epoch_response_data;
  using epoch_end_offset = response::epoch_end_offset;
  broker::broker& b = ctx.broker_api();
  const auto targets = targets_of(request.topics, &protocol::offset_for_leader_epoch_request_data::offset_for_leader_topic::topic);
  auto g = gather_by_topic<response, epoch_end_offset>(ctx, targets, &response::offset_for_leader_topic_result::topic);
  // CLUSTER_ACTION on the cluster (the right followers have: the api was theirs alone before
  // KIP-320) serves every topic; else DESCRIBE on each, a consumer's. Kafka asks it so whatever
  // the ReplicaId (KafkaApis.handleOffsetForLeaderEpochRequest), and a denial of the first is
  // not logged (logIfDenied = false): a consumer is not expected to hold it.
  const bool cluster_action = ctx.authorized_unlogged(security::resource_type::cluster, security::cluster_resource_name,
                                                      security::acl_operation::cluster_action);
  for (size_t i = 0; i < targets.partitions.size(); ++i) {
    const auto& t = targets.partitions[i];
    const std::string& topic = targets.names[targets.topic_of[i]];
    epoch_end_offset& slot = g->slot(i);
    slot.partition = t.partition;
    slot.leader_epoch = -1;
    slot.end_offset = -1;
    if (!cluster_action && !ctx.authorized(security::resource_type::topic, topic, security::acl_operation::describe)) {
      slot.error_code = error_code::topic_authorization_failed;
      g->complete_one();
      continue;
    }
    broker::epoch_end_offset_request asked;
    asked.partition = model::topic_partition{topic, model::partition_id{t.partition}};
    asked.leader_epoch = model::leader_epoch{t.leader_epoch};
    asked.current_leader_epoch = t.current_leader_epoch;
    b.end_offset_for_leader_epoch(std::move(asked), [g, i](broker::result<broker::epoch_end_offset> r) {
      epoch_end_offset& res = g->slot(i);
      if (!r.ok()) {
        res.error_code = code_of(r.error());
      } else {
        res.leader_epoch = r->leader_epoch.value();
        res.end_offset = r->end_offset.value();
      }
      g->complete_one();
    });
  }
  g->finish_if_empty();
}

}  // namespace ringlog::kafka::detail
