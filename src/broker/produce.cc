// Produce (produce_pipeline.h): records (with auto-creation of the topic, transactions and
// idempotence) and clients' record batches, appended on the partition's shard with group commit
// and answered per acks. Kafka's counterpart: KafkaApis.handleProduceRequest and
// ReplicaManager.appendRecords.

#include <algorithm>
#include <set>
#include <utility>

#include "metadata_publisher.h"
#include "partition_transactions.h"
#include "produce_pipeline.h"
#include "producer_ids.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/base/latency_stages.h"
#include "ringlog/broker/partitioner.h"
#include "ringlog/codec/record_batch.h"
#include "topic_config.h"
#include "txn_service.h"

namespace ringlog::broker::detail {

namespace {

/// A client's produce to an internal topic (every "__" name: __consumer_offsets,
/// __transaction_state, the delay topics; the broker writes them itself): Kafka's
/// INVALID_TOPIC_EXCEPTION "Cannot append to internal topic" (ReplicaManager.appendToLocalLog),
/// HTTP 400. Not an authorization failure: no ACL would allow it.
error internal_topic_refusal(const std::string& topic) {
  return error{errc::invalid_topic_exception, "Cannot append to internal topic '" + topic +
                                                  "': the broker writes it (group offsets are committed, "
                                                  "transactions ended, through their own calls)"};
}

}  // namespace

error shutting_down_refusal(const model::topic_partition& tp, int32_t node_id) {
  return error{errc::not_leader_or_follower,
               "broker " + std::to_string(node_id) + " is shutting down: the leadership of " + tp.topic + "-" +
                   std::to_string(tp.partition.value()) + " moves to another replica; nothing was stored: retry"};
}

void produce_pipeline::produce_known(produce_request request, std::function<void(result<produce_response>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  if (request.records.empty()) return done(error{errc::invalid_request, "records: at least one record is required"});
  if (request.records.size() > static_cast<size_t>(config_.produce_records_max)) {
    return done(error{errc::record_list_too_large, "the request has " + std::to_string(request.records.size()) +
                                                       " records; the limit produce.records.max is " +
                                                       std::to_string(config_.produce_records_max)});
  }
  if (auto valid = validate_topic_name(request.topic); !valid.ok()) return done(valid.error());
  // Behind a produce that is auto-creating this topic, if any.
  if (auto_creating_.join_or_open(request.topic, request, done, [] { return false; }) == produce_lines::placed::joined) {
    return;
  }
  auto t = metadata_.find_topic(request.topic);
  if (t) return produce_to(t, std::move(request), std::move(done));
  if (auto refused = security_.auto_create_refusal(request)) return done(std::move(*refused));
  // Validated before anything is created: when every record names a partition the auto-created
  // topic would not have, nothing would be stored, and no topic may be left behind (Kafka's
  // producer likewise learns the partition count from metadata before it sends). When some
  // would be stored, the topic is created and those others fail alone, as on an existing topic.
  const bool none_storable = std::all_of(request.records.begin(), request.records.end(), [this](const produce_record& r) {
    return r.partition && r.partition->value() >= config_.num_partitions;
  });
  if (none_storable) {
    return done(error{errc::unknown_topic_or_partition,
                      "topic '" + request.topic + "' does not exist, and auto-creating it would give it num.partitions=" +
                          std::to_string(config_.num_partitions) + " partitions, so partition " +
                          std::to_string(request.records.front().partition->value()) +
                          " would not exist either; create the topic with enough partitions first"});
  }
  // The first produce of the topic creates it; later ones wait behind it.
  if (auto_creating_.join_or_open(request.topic, request, done, [] { return true; }) == produce_lines::placed::joined) {
    return;
  }
  create_topic_request create{request.topic, std::nullopt, std::nullopt, {}, false};
  std::string name = request.topic;
  auto first = std::make_shared<held_produce>(held_produce{std::move(request), std::move(done)});
  admin_.create_topic(std::move(create), [this, name = std::move(name), first](result<topic_description> created) {
    auto run = [this, name, first, created] {
      produce_after_auto_create(created, std::move(first->request), std::move(first->done));
      // Then the produces that waited, oldest first, until none is left.
      auto_creating_.drain(name, [this, &created](held_produce&& h) {
        produce_after_auto_create(created, std::move(h.request), std::move(h.done));
      });
    };
    // Another node created it first: this node's image may not hold it yet, and the produces
    // answered 404 for a topic that exists (breaker, session 28: one in 20-40 three-node races).
    // They wait for the metadata barrier first, all of them, so none overtakes another.
    if (!created.ok() && created.error().code == errc::topic_already_exists && !metadata_.find_topic(name)) {
      return barrier_.post_caught_up(std::move(run));
    }
    run();
  });
}

void produce_pipeline::produce_after_auto_create(const result<topic_description>& created, produce_request request,
                                                 std::function<void(result<produce_response>)> done) {
  if (!created.ok() && created.error().code != errc::topic_already_exists) return done(created.error());
  auto topic = metadata_.find_topic(request.topic);
  if (!topic) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(request.topic)});
  produce_to(topic, std::move(request), std::move(done));
}

void produce_pipeline::produce_to(const std::shared_ptr<const topic_state>& topic, produce_request request,
                                  std::function<void(result<produce_response>)> done, bool internal_write) {
  if (topic->is_internal && !internal_write) {
    return done(internal_topic_refusal(request.topic));
  }
  if (request.producer && request.producer->transactional_id) {
    return produce_in_transaction(topic, std::move(request), std::move(done));
  }
  produce_appending(topic, std::move(request), std::move(done));
}

namespace {

/// How long a transactional produce waits before it asks again to join a transaction whose
/// previous end is still writing its markers (a few fsyncs: milliseconds).
constexpr int64_t transaction_join_retry_interval_ms = 5;
/// The longest a transactional produce waits for that, ms (less when the request's timeout is):
/// markers slower than this mean a partition leader is away, and the client hears
/// concurrent_transactions (retriable) instead of a hung request.
constexpr int64_t transaction_join_wait_max_ms = 10'000;
/// A batch's options in the codec `stored` names (a topic's compression.type), or none for
/// "producer" and "uncompressed" (an HTTP producer sends records, not batches).
codec::batch_options stored_batch_options(const std::optional<stored_codec>& stored) {
  codec::batch_options options;
  if (stored) {
    options.compression = stored->compression;
    options.compression_level = stored->level;
  }
  return options;
}

/// Room for the headers a delayed record gains on its way to its target, bytes:
/// ringlog-produced-at and ringlog-delay-source ("__delay-long/3@9223372036854775807"), about 90.
constexpr size_t delivery_headers_bytes_max = 128;

/// When `request.records[i]` is delayed (delay_host::delivery_time_in): its due time, once the
/// record, as its move will produce it, fits the target's max.message.bytes (`limit`): the move
/// would drop it otherwise, after its producer heard "ok" (the new user of session 30; a Kafka
/// client's batch is refused whole, as Kafka does). Errors: delivery_time_in's; message_too_large.
result<std::optional<int64_t>> checked_delivery_time(const delay_host& host, produce_request& request, size_t i,
                                                     int64_t now, size_t limit, const std::optional<stored_codec>& stored) {
  auto due = host.delivery_time_in(request, i, now);
  if (!due.ok() || !*due) return due;
  const produce_record& in = request.records[i];
  model::record rec;
  rec.timestamp = in.timestamp.value_or(now);
  rec.key = in.key;
  rec.value = in.value;
  rec.headers = in.headers;
  auto encoded = codec::encode_batch(stored_batch_options(stored), std::span<const model::record>(&rec, 1));
  if (encoded.ok() && encoded->size() + delivery_headers_bytes_max <= limit) return due;
  return error{errc::message_too_large,
               "records[" + std::to_string(i) + "]: " +
                   (encoded.ok() ? "as delivered (a record batch of about " +
                                       std::to_string(encoded->size() + delivery_headers_bytes_max) +
                                       " bytes with the delivery headers) it is larger than the target's "
                                       "max.message.bytes (" + std::to_string(limit) + ")"
                                 : encoded.error().message)};
}

}  // namespace

void produce_pipeline::produce_in_transaction(const std::shared_ptr<const topic_state>& topic, produce_request request,
                                              std::function<void(result<produce_response>)> done) {
  const std::string& transactional_id = *request.producer->transactional_id;
  if (transactional_id.empty()) return done(error{errc::invalid_request, "transactional_id is empty"});
  // The partitions the records name; a record without one (or with one the topic lacks) is
  // refused alone by produce_appending, as in any idempotent produce.
  std::set<int32_t> named;
  for (const auto& r : request.records) {
    if (r.partition && r.partition->value() >= 0 && r.partition->value() < topic->partitions_count()) {
      named.insert(r.partition->value());
    }
  }
  if (named.empty()) return produce_appending(topic, std::move(request), std::move(done));
  std::vector<model::topic_partition> partitions;
  for (int32_t p : named) partitions.push_back({request.topic, model::partition_id{p}});
  // The transaction's previous end may still be writing its markers (the usual case for a
  // produce right after a commit answered): the coordinator answers concurrent_transactions
  // until they are written, and the add is tried again every
  // transaction_join_retry_interval_ms, up to the request's timeout (at most
  // transaction_join_wait_max_ms), as Kafka clients retry AddPartitionsToTxn themselves.
  struct join {
    produce_pipeline* self = nullptr;
    std::shared_ptr<const topic_state> topic;
    produce_request request;
    std::function<void(result<produce_response>)> done;
    std::vector<model::topic_partition> partitions;
    int64_t give_up_at_ms = 0;
    size_t shard = 0;

    static void attempt(const std::shared_ptr<join>& j) {
      const auto& producer = *j->request.producer;
      j->self->txns_->add_partitions(
          *producer.transactional_id, producer.producer_id, producer.producer_epoch, j->partitions,
          [j](result<void> added) {
            if (added.ok()) return j->self->produce_appending(j->topic, std::move(j->request), std::move(j->done));
            if (added.error().code != errc::concurrent_transactions ||
                j->self->clock_.now_ms() + transaction_join_retry_interval_ms > j->give_up_at_ms) {
              return j->done(added.error());
            }
            j->self->runtime_.post_after(j->shard, transaction_join_retry_interval_ms, [j] { attempt(j); });
          });
    }
  };
  auto j = std::make_shared<join>();
  j->self = this;
  j->topic = topic;
  j->partitions = std::move(partitions);
  j->give_up_at_ms = clock_.now_ms() + std::clamp<int64_t>(request.timeout_ms, 0, transaction_join_wait_max_ms);
  j->shard = owner(request.topic, *named.begin());
  j->request = std::move(request);
  j->done = std::move(done);
  join::attempt(j);
}

void produce_pipeline::produce_once_caught_up(const std::shared_ptr<const topic_state>& topic, produce_request request,
                                              std::function<void(result<produce_response>)> done) {
  barrier_.post_caught_up([this, topic, request = std::move(request), done = std::move(done)]() mutable {
    if (auto known = check_producer_id(request.producer->producer_id); !known.ok()) return done(known.error());
    produce_appending(topic, std::move(request), std::move(done));
  });
}

void produce_pipeline::produce_appending(const std::shared_ptr<const topic_state>& topic, produce_request request,
                                         std::function<void(result<produce_response>)> done) {
  // The topic's state is immutable: read without a lock (the shard's metadata view holds it).
  const std::map<std::string, std::string>& configs = topic->image->configs;
  const int32_t partition_count = topic->partitions_count();
  const auto current_view = metadata_.view();
  const broker_config& live_config = live(*current_view);
  auto log_config = make_log_config(live_config, configs);
  if (!log_config.ok()) return done(log_config.error());
  if (auto keyed = check_keys_for_compaction(request.topic, *log_config, request.records); !keyed.ok()) {
    return done(keyed.error());
  }
  const int64_t now = clock_.now_ms();
  const std::optional<stored_codec> stored = stored_compression(live_config, configs, internal_topic_of(*topic));
  if (request.producer) {
    if (!check_producer_id(request.producer->producer_id).ok()) return produce_once_caught_up(topic, std::move(request), std::move(done));
    if (request.producer->producer_epoch.value() < 0) {
      return done(error{errc::invalid_request, "producer_epoch " + std::to_string(request.producer->producer_epoch.value()) +
                                                   " is negative"});
    }
  }
  auto op = std::make_shared<produce_operation>();
  op->results.resize(request.records.size());
  op->done = std::move(done);
  // Choose partitions: explicit, by murmur2 of the key, or round-robin for keyless records.
  std::map<int32_t, std::vector<size_t>> by_partition;
  std::vector<delay_host::delayed_record> delayed;   // records with a future ringlog-deliver-at (delay.cc)
  const size_t limit = static_cast<size_t>(log_config->max_message_bytes);
  for (size_t i = 0; i < request.records.size(); ++i) {
    auto& r = request.records[i];
    int32_t p = 0;
    if (request.producer && (!r.partition || !r.sequence || r.sequence->value() < 0)) {
      // The same request must make the same batches when resent: no partition is chosen here.
      op->results[i].failure = error{errc::invalid_request, "records[" + std::to_string(i) +
                                                                "]: an idempotent produce names every record's "
                                                                "partition and its sequence (>= 0) in that partition"};
      continue;
    }
    if (r.partition) {
      p = r.partition->value();
      if (p < 0 || p >= partition_count) {
        op->results[i].failure = partition_missing(request.topic, p, partition_count);
        continue;
      }
    } else if (r.key) {
      p = partition_for_key(*r.key, partition_count);
    } else {
      p = static_cast<int32_t>(topic->next_keyless_partition->fetch_add(1, std::memory_order_relaxed) %
                               static_cast<uint32_t>(partition_count));
    }
    op->results[i].partition = model::partition_id{p};
    if (!topic->is_internal) {
      auto due = checked_delivery_time(delay_host_, request, i, now, limit, stored);
      if (!due.ok()) {
        op->results[i].failure = due.error();
        continue;
      }
      if (*due) {
        delayed.push_back({i, p, **due});
        continue;
      }
    }
    if (auto led = leader_route(*topic, p); !led.ok()) {
      op->results[i].failure = led.error();
      continue;
    }
    by_partition[p].push_back(i);
  }
  // Cut each partition's records into batches no larger than max.message.bytes.
  struct pending_batch {
    int32_t partition;
    model::bytes bytes;
    std::vector<size_t> indices;
    std::vector<model::timestamp_ms> timestamps;
  };
  std::vector<pending_batch> batches;
  for (auto& [p, indices] : by_partition) {
    std::vector<model::record> chunk;
    std::vector<size_t> chunk_indices;
    size_t chunk_estimate = codec::batch_header_bytes;
    auto emit = [&]() {
      if (chunk.empty()) return;
      // compression.type (the topic's, else the broker's): its codec, or none for "producer"
      // (the HTTP producer sends records, not batches) and "uncompressed".
      codec::batch_options options = stored_batch_options(stored);
      if (request.producer) {
        options.producer = request.producer->producer_id;
        options.producer_epoch_value = request.producer->producer_epoch;
        options.base_sequence = *request.records[chunk_indices.front()].sequence;
        options.is_transactional = request.producer->transactional_id.has_value();
      }
      auto encoded = codec::encode_batch(options, chunk);
      // The records' own times; under message.timestamp.type=LogAppendTime the append's answer
      // carries the broker's time instead (append_batches_on_shard, KIP-32).
      std::vector<model::timestamp_ms> stamps;
      for (const auto& rec : chunk) stamps.push_back(rec.timestamp);
      if (!encoded.ok() || encoded->size() > limit) {
        const std::string why = !encoded.ok() ? encoded.error().message
                                              : "record batch of " + std::to_string(encoded->size()) +
                                                    " bytes is larger than max.message.bytes (" +
                                                    std::to_string(limit) + ")";
        for (size_t idx : chunk_indices) op->results[idx].failure = error{errc::message_too_large, why};
      } else {
        batches.push_back({p, std::move(encoded.value()), chunk_indices, std::move(stamps)});
      }
      chunk.clear();
      chunk_indices.clear();
      chunk_estimate = codec::batch_header_bytes;
    };
    for (size_t idx : indices) {
      auto& in = request.records[idx];
      model::record rec;
      rec.timestamp = in.timestamp.value_or(now);
      rec.key = std::move(in.key);
      rec.value = std::move(in.value);
      rec.headers = std::move(in.headers);
      size_t estimate = 32 + (rec.key ? rec.key->size() : 0) + (rec.value ? rec.value->size() : 0);
      for (const auto& h : rec.headers) estimate += 16 + h.key.size() + (h.value ? h.value->size() : 0);
      if (!chunk.empty() && chunk_estimate + estimate > limit) emit();
      // An idempotent batch holds consecutive sequences (KIP-98): a jump starts a new batch.
      if (request.producer && !chunk.empty() &&
          request.records[chunk_indices.back()].sequence->value() + 1 != in.sequence->value()) {
        emit();
      }
      chunk.push_back(std::move(rec));
      chunk_indices.push_back(idx);
      chunk_estimate += estimate;
    }
    emit();
  }
  const size_t delayed_count = delay_host::delayed_groups(delayed, now);
  if (batches.empty() && delayed_count == 0) {
    op->remaining = 1;
    return op->finish_one();
  }
  for (const auto& b : batches) {
    const size_t shard = owner(request.topic, b.partition);
    if (!runtime_.admits(shard)) return op->done(shard_busy(shard));
  }
  op->remaining = batches.size() + delayed_count;
  if (delayed_count > 0) {
    delay_host_.produce_delayed(request.topic, request.records, delayed, now, request.acks, request.timeout_ms, op);
  }
  // From here each batch is client data like a Kafka producer's: it takes produce_batches_from,
  // here or on its leader (forwarding.cc), and its answer gives each record its offset.
  std::map<int32_t, std::shared_ptr<std::vector<std::function<void()>>>> local_sends;   // partition -> in order
  for (auto& b : batches) {
    model::topic_partition tp{request.topic, model::partition_id{b.partition}};
    auto answer = [op, indices = std::move(b.indices), timestamps = std::move(b.timestamps),
                   acks = request.acks](result<produce_batches_response> r) {
      for (size_t k = 0; k < indices.size(); ++k) {
        auto& res = op->results[indices[k]];
        if (!r.ok()) {
          res.failure = r.error();
          continue;
        }
        res.record_offset = acks == acks_mode::none ? model::offset{-1} : r->base_offset + static_cast<int64_t>(k);
        res.timestamp = r->log_append_time >= 0 ? r->log_append_time : timestamps[k];
      }
      op->finish_one();
    };
    const int32_t leader = topic->image->partitions[static_cast<size_t>(b.partition)].leader;
    if (leader != config_.node_id || forwarder_.holds_produces_of(tp)) {   // behind those (leader_forwarder.h)
      forwarder_.forward_produce(leader, tp, std::move(b.bytes), request.acks, request.timeout_ms, std::move(answer));
      continue;
    }
    auto batch = std::make_shared<produce_batches_request>();
    batch->partition = std::move(tp);
    batch->batches.push_back(std::move(b.bytes));
    batch->acks = request.acks;
    batch->timeout_ms = request.timeout_ms;
    auto& sends = local_sends[b.partition];
    if (!sends) sends = std::make_shared<std::vector<std::function<void()>>>();
    sends->push_back([this, batch, answer = std::move(answer)]() mutable {
      append_here_or_forward(std::move(*batch), std::move(answer));
    });
  }
  forwarder_.when_replicas_open(request.topic, std::move(local_sends));
}

void produce_pipeline::append_here_or_forward(produce_batches_request batch,
                                              std::function<void(result<produce_batches_response>)> done) {
  // Run later on the controller shard when the replica was not open yet, whose view may name
  // another leader by now: HTTP clients are promised forwarding (design.md section 6), so the
  // batch goes there instead of answering "led by broker N".
  auto now = metadata_.find_topic(batch.partition.topic);
  const int32_t p = batch.partition.partition.value();
  if (now && p < now->partitions_count() && now->image->partitions[static_cast<size_t>(p)].leader != config_.node_id) {
    return forwarder_.forward_produce(now->image->partitions[static_cast<size_t>(p)].leader, batch.partition,
                                      std::move(batch.batches.front()), batch.acks, batch.timeout_ms, std::move(done));
  }
  produce_batches_from(std::move(batch), std::move(done), batch_origin::local_records);
}

void produce_pipeline::produce_batches_from(produce_batches_request request,
                                            std::function<void(result<produce_batches_response>)> done,
                                            batch_origin origin) {
  if (stopping_) return done(shutting_down_refusal(request.partition, config_.node_id));
  const auto& tp = request.partition;
  auto topic = metadata_.find_topic(tp.topic);
  if (!topic) return done(error{errc::unknown_topic_or_partition, unknown_topic_message(tp.topic)});
  // This node's records went through produce_to, which refused internal topics but for its own
  // writes; a peer's, for a delay topic, are such writes too (its produce_to diverted them there).
  const bool internal_allowed = origin == batch_origin::local_records ||
                                (origin == batch_origin::peer_broker && delay::is_delay_topic(tp.topic));
  if (topic->is_internal && !internal_allowed) {
    return done(internal_topic_refusal(tp.topic));
  }
  if (tp.partition.value() < 0 || tp.partition.value() >= topic->partitions_count()) {
    return done(partition_missing(tp.topic, tp.partition.value(), topic->partitions_count()));
  }
  if (auto led = check_leader(*topic, tp.partition.value(), config_.node_id); !led.ok()) return done(led.error());
  if (request.batches.empty()) return done(error{errc::corrupt_message, "the partition's record set holds no batch"});
  const std::map<std::string, std::string>& configs = topic->image->configs;
  // The live config: dynamic broker configs (KIP-226) apply to Kafka produce as to HTTP produce.
  const auto current_view = metadata_.view();
  const broker_config& live_config = live(*current_view);
  auto log_config = make_log_config(live_config, configs);
  if (!log_config.ok()) return done(log_config.error());
  // Every batch is checked before any is appended (Kafka's LogValidator): a request is stored
  // whole or not at all, short of a disk failure.
  auto any_delay_header = validate_batches(request, *log_config, origin, clock_.now_ms());
  if (!any_delay_header.ok()) return done(any_delay_header.error());
  // Kafka clients may delay records with the ringlog-deliver-at / ringlog-delay-ms header: such
  // a request goes record by record through produce_to, which diverts the delayed ones.
  if (*any_delay_header && !topic->is_internal) {
    return delay_host_.produce_batches_delayed(std::move(request), topic, std::move(done));
  }
  // compression.type (the topic's, else the broker's) other than "producer": batches in another
  // codec are stored recompressed with it (Kafka's LogValidator does the same), keeping their
  // producer fields.
  if (auto wanted = stored_compression(live_config, configs, internal_topic_of(*topic))) {
    for (auto& batch : request.batches) {
      auto header = codec::decode_header(batch);
      if (header->compression() == wanted->compression) continue;   // levels do not recompress (KIP-390)
      auto records = codec::decode_records(batch);
      codec::batch_options options;
      options.base_offset = header->base_offset;
      options.compression = wanted->compression;
      options.compression_level = wanted->level;
      options.timestamp_type = header->timestamp_type();
      options.producer = header->producer;
      options.producer_epoch_value = header->producer_epoch_value;
      options.base_sequence = header->base_sequence;
      options.is_transactional = header->is_transactional();
      auto encoded = codec::encode_batch(options, *records);
      if (!encoded.ok()) return done(error{errc::corrupt_message, "recompressing for compression.type: " + encoded.error().message});
      batch = std::move(encoded).value();
    }
  }
  auto type = configs.find("message.timestamp.type");
  const bool log_append_time = type != configs.end() && type->second == "LogAppendTime";
  const size_t shard = owner(tp.topic, tp.partition.value());
  if (!runtime_.admits(shard)) return done(shard_busy(shard));
  runtime_.post(shard, [this, shard, request = std::move(request), log_append_time, done = std::move(done)]() mutable {
    append_batches_on_shard(shard, std::move(request), log_append_time, std::move(done));
  });
}

void produce_pipeline::append_batches_on_shard(size_t shard, produce_batches_request request, bool log_append_time,
                                               std::function<void(result<produce_batches_response>)> done,
                                               uint64_t verified_guard) {
  const base::cpu_scope cpu(base::cpu_activity::produce);
  const int64_t started_ns = base::monotonic_ns();
  if (verified_guard == 0 && request.received_ns != 0) {
    base::observe_latency(base::latency_stage::produce_queue, started_ns - request.received_ns);
  }
  const auto& tp = request.partition;
  auto rt = partition_managers_[shard]->find(tp.topic, tp.partition.value());
  if (!rt) return done(no_replica_here(metadata_.find_topic(tp.topic).get(), tp));
  if (auto ok = rt->check_append(request.acks); !ok.ok()) return done(ok.error());
  // KIP-890 part 1 (partition_runtime::guard_txn_verification): a first transactional batch here
  // waits for its coordinator's verification, asked from here (the coordinator may be elsewhere).
  auto guard = rt->guard_txn_verification(request, verified_guard);
  if (!guard.ok()) return done(guard.error());
  if (!guard->has_value()) return rt->append_batches(std::move(request), log_append_time, std::move(done));
  const txn_verification_needed needed = **guard;
  // Copies: the callback below takes `request` (and with it what `tp` refers to).
  const std::string transactional_id = request.transactional_id;
  const model::topic_partition partition = tp;
  txn_partitions_.verify_txn_partition(
      transactional_id, model::producer_id{needed.producer_id}, model::producer_epoch{needed.producer_epoch}, partition,
      [this, shard, needed, request = std::move(request), log_append_time, done = std::move(done)](result<void> r) mutable {
        runtime_.post(shard, [this, shard, needed, r = std::move(r), request = std::move(request), log_append_time,
                                   done = std::move(done)]() mutable {
          if (r.ok()) {
            return append_batches_on_shard(shard, std::move(request), log_append_time, std::move(done), needed.guard);
          }
          auto rt2 = partition_managers_[shard]->find(request.partition.topic, request.partition.partition.value());
          if (rt2) rt2->drop_txn_verification(needed.producer_id, needed.guard);
          done(r.error());
        });
      });
}

result<void> produce_pipeline::check_producer_id(model::producer_id id) const {
  return producer_ids_.check_producer_id(id, metadata_.view()->image->next_producer_id());
}

}  // namespace ringlog::broker::detail
