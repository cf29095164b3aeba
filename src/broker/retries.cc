// Retries and dead letters on plain topics (retries.h, docs/retries.md).

#include "retries.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "ringlog/base/assert.h"
#include "ringlog/group/limits.h"
#include "ringlog/security/forwarded_call.h"

namespace ringlog::broker::retries {
namespace {

/// Longest a copy's produce waits for its in-sync replicas (acks=all), as a delay move.
constexpr int64_t copy_timeout_ms = 30'000;
/// Dead letters a redrive copies per step (then marks them, then the next step): a tenth of the
/// default produce.records.max (10,000), so a step's produce is never refused for its size and a
/// marker's list of offsets stays about 10 KiB; a crash repeats at most this many copies.
constexpr size_t redrive_chunk_records = 1'000;
/// Bytes per fetch while reading a dead-letter partition.
constexpr int32_t scan_fetch_bytes = 1 << 20;

model::record_header text_header(std::string_view key, std::string_view value) {
  return model::record_header{std::string(key), model::to_bytes(value)};
}

std::optional<int64_t> decimal(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

/// Runs `done` once `n` parts reported; the first error wins. Parts report from any thread.
struct join_state {
  std::mutex mutex;
  size_t remaining = 0;
  std::optional<error> failure;
  std::function<void(result<void>)> done;
  void report(const result<void>& r) {
    std::function<void(result<void>)> finish;
    std::optional<error> why;
    {
      std::lock_guard lock(mutex);
      if (!r.ok() && !failure) failure = r.error();
      RINGLOG_ASSERT_OP(remaining, >, size_t{0});
      if (--remaining > 0) return;
      finish = std::move(done);
      why = failure;
    }
    if (why) return finish(*why);
    finish(base::ok_v);
  }
};

/// The partition count of `name`, creating it with `partitions` when it does not exist (a
/// concurrent creation by another nack is fine: that one is used).
void ensure_topic(broker& b, const std::string& name, int32_t partitions, std::function<void(result<int32_t>)> done) {
  auto describe = [&b, name, done] {
    b.admin().describe_topic(name, [done](result<topic_description> d) {
      if (!d.ok()) return done(d.error());
      done(static_cast<int32_t>(d->partitions.size()));
    });
  };
  if (b.admin().topic_exists(name)) return describe();
  create_topic_request req;
  req.name = name;
  req.partitions_count = std::max(1, partitions);
  // A queue of copies, keyless ones too: never compacted, whatever log.cleanup.policy says.
  req.configs["cleanup.policy"] = "delete";
  // Copies keep the compression their records were written with, whatever the broker's
  // compression.type says (as Kafka's own topics are created with compression.type=producer).
  req.configs["compression.type"] = "producer";
  b.admin().create_topic(std::move(req), [describe, done](result<topic_description> r) {
    if (r.ok()) return done(static_cast<int32_t>(r->partitions.size()));
    if (r.error().code == errc::topic_already_exists) return describe();
    done(r.error());
  });
}

/// The partition count of the original topic (1 when it is gone: the copy still has a home).
void original_partitions(broker& b, const std::string& topic, std::function<void(int32_t)> done) {
  b.admin().describe_topic(topic, [done](result<topic_description> d) {
    done(d.ok() ? std::max<int32_t>(1, static_cast<int32_t>(d->partitions.size())) : 1);
  });
}

/// Produces `records` to `topic` (each naming its partition by `original_partition % count`).
void produce_copies(broker& b, const std::string& topic, int32_t original_partitions_count,
                    std::vector<std::pair<int32_t, produce_record>> records, std::function<void(result<void>)> done) {
  ensure_topic(b, topic, original_partitions_count,
               [&b, topic, records = std::move(records), done](result<int32_t> count) mutable {
                 if (!count.ok()) return done(count.error());
                 produce_request req;
                 req.topic = topic;
                 req.acks = acks_mode::all;
                 req.timeout_ms = copy_timeout_ms;
                 for (auto& [p, rec] : records) {
                   rec.partition = model::partition_id{p % std::max(1, *count)};
                   req.records.push_back(std::move(rec));
                 }
                 b.produce(std::move(req), [done](result<produce_response> r) {
                   if (!r.ok()) return done(r.error());
                   for (const auto& res : r->results) {
                     if (res.failure) return done(*res.failure);
                   }
                   done(base::ok_v);
                 });
               });
}

/// Reads partition `tp` from `from` up to its high watermark, at most `records_max` records,
/// one fetch per step (each step is a new callback, never recursion on one stack).
struct scan_state {
  broker* b = nullptr;
  model::topic_partition tp;
  model::offset at{0};
  int64_t records_max = 0;
  std::vector<model::record> records;
  bool complete = true;   // false: stopped at records_max before the high watermark
  std::function<void(result<void>)> done;
  std::function<void()> next;
};
void scan_partition(broker& b, model::topic_partition tp, model::offset from, int64_t records_max,
                    std::function<void(result<std::shared_ptr<scan_state>>)> done) {
  auto sc = std::make_shared<scan_state>();
  sc->b = &b;
  sc->tp = std::move(tp);
  sc->at = from;
  sc->records_max = records_max;
  sc->done = [sc, done](result<void> r) {
    sc->next = nullptr;   // ends the self-reference
    if (!r.ok()) return done(r.error());
    done(sc);
  };
  sc->next = [sc] {
    fetch_request f;
    f.partition = sc->tp;
    f.fetch_offset = sc->at;
    f.max_bytes = scan_fetch_bytes;
    sc->b->fetch(std::move(f), [sc](result<fetch_response> r) {
      if (!r.ok()) return sc->done(r.error());
      for (auto& rec : r->records) {
        if (static_cast<int64_t>(sc->records.size()) >= sc->records_max) {
          sc->complete = false;
          return sc->done(base::ok_v);
        }
        sc->at = rec.record_offset + 1;
        sc->records.push_back(std::move(rec));
      }
      if (r->records.empty() || sc->at >= r->high_watermark) return sc->done(base::ok_v);
      auto next = sc->next;
      if (next) next();
    });
  };
  auto first = sc->next;
  first();
}

/// Every partition of a dead-letter topic, scanned from its log start.
struct dead_letter_scan {
  std::mutex mutex;
  std::string topic;
  int32_t partitions = 0;
  size_t remaining = 0;
  std::optional<error> failure;
  std::map<int32_t, std::vector<model::record>> letters;   // partition -> records that are letters
  std::map<int32_t, std::set<int64_t>> redriven;           // partition -> offsets marked redriven
  std::map<int32_t, bool> complete;
};

/// The letters a redrive marker of partition `p` says were redriven ("<p>@<offset>,..." in its
/// value) into scan.redriven, when the broker's proof on it holds (delay::redriven_proof_header);
/// a marker without one (written by a user with WRITE on the topic) says nothing.
void note_marker(dead_letter_scan& scan, int32_t p, const model::record& rec, const security::bytes& secret) {
  std::string_view list = rec.value ? std::string_view(reinterpret_cast<const char*>(rec.value->data()), rec.value->size()) : "";
  const auto proof = delay::last_header(rec.headers, delay::redriven_proof_header);
  const std::string partition = std::to_string(p);
  if (!proof || !security::verify_broker_record(secret, delay::redriven_proof_purpose, {scan.topic, partition, list}, *proof)) {
    return;
  }
  while (!list.empty()) {
    auto comma = list.find(',');
    auto item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    auto at = item.find('@');
    if (at == std::string_view::npos) continue;
    auto mp = decimal(item.substr(0, at));
    auto mo = decimal(item.substr(at + 1));
    if (mp && mo && *mp == p) scan.redriven[p].insert(*mo);
  }
}

void scan_dead_letters(broker& b, const std::string& topic, std::optional<int32_t> only,
                       std::function<void(result<std::shared_ptr<dead_letter_scan>>)> done) {
  b.admin().describe_topic(topic, [&b, topic, only, done](result<topic_description> d) {
    if (!d.ok()) return done(d.error());
    auto scan = std::make_shared<dead_letter_scan>();
    scan->topic = topic;
    scan->partitions = static_cast<int32_t>(d->partitions.size());
    std::vector<std::pair<int32_t, model::offset>> parts;
    for (const auto& p : d->partitions) {
      if (only && p.partition.value() != *only) continue;
      parts.push_back({p.partition.value(), p.log_start_offset});
    }
    if (parts.empty()) {
      if (only) return done(error{errc::unknown_topic_or_partition, "topic " + topic + " has no partition " + std::to_string(*only)});
      return done(scan);
    }
    scan->remaining = parts.size();
    const security::bytes secret = b.forwarding_secret();
    for (const auto& [p, start] : parts) {
      scan_partition(b, {topic, model::partition_id{p}}, start, dead_letters_scan_records_max,
                     [scan, p, done, secret](result<std::shared_ptr<scan_state>> r) {
                       bool last = false;
                       {
                         std::lock_guard lock(scan->mutex);
                         if (!r.ok()) {
                           if (!scan->failure) scan->failure = r.error();
                         } else {
                           scan->complete[p] = (*r)->complete;
                           for (auto& rec : (*r)->records) {
                             if (delay::last_header(rec.headers, delay::redriven_marker_header)) {
                               note_marker(*scan, p, rec, secret);
                               continue;
                             }
                             scan->letters[p].push_back(std::move(rec));
                           }
                         }
                         last = --scan->remaining == 0;
                       }
                       if (!last) return;
                       if (scan->failure) return done(*scan->failure);
                       done(scan);
                     });
    }
  });
}

dead_letter describe_letter(int32_t partition, const model::record& rec, bool redriven) {
  dead_letter out;
  out.partition = model::partition_id{partition};
  out.record = rec;
  out.original_topic = delay::last_header(rec.headers, delay::original_topic_header).value_or("");
  out.original_partition = static_cast<int32_t>(
      decimal(delay::last_header(rec.headers, delay::original_partition_header).value_or("")).value_or(-1));
  out.original_offset = decimal(delay::last_header(rec.headers, delay::original_offset_header).value_or("")).value_or(-1);
  out.attempts = static_cast<int32_t>(decimal(delay::last_header(rec.headers, delay::attempt_header).value_or("")).value_or(0));
  out.reasons = delay::all_headers(rec.headers, delay::reason_header);
  out.redriven = redriven;
  return out;
}

/// The naming of `namings` under which `topic` is a dead-letter topic of `group`, if any.
std::optional<delay::retry_policy> naming_of(const std::vector<delay::retry_policy>& namings, const std::string& group,
                                             const std::string& topic) {
  for (const auto& n : namings) {
    if (delay::original_topic_of(n, topic, group, true)) return n;
  }
  return std::nullopt;
}

/// The naming of the dead-letter topic `topic` of `group`, or why it is none.
result<delay::retry_policy> dead_letter_naming(broker& b, const std::vector<delay::retry_policy>& namings,
                                               const std::string& group, const std::string& topic) {
  auto naming = naming_of(namings, group, topic);
  if (!naming) {
    std::string templates;
    for (const auto& n : namings) {
      if (templates.find(n.dead_letter_topic_template) == std::string::npos) {
        templates += (templates.empty() ? "" : ", ") + n.dead_letter_topic_template;
      }
    }
    return error{errc::unknown_topic_or_partition, "topic '" + topic + "' is not a dead-letter topic of group '" + group +
                                                       "' (those are named " + templates + ", <group> = " + group + ")"};
  }
  if (!b.admin().topic_exists(topic)) {
    return error{errc::unknown_topic_or_partition, "dead-letter topic '" + topic + "' does not exist: group '" + group +
                                                       "' has no dead letters of that topic"};
  }
  return *naming;
}

bool contains_text(const std::optional<model::bytes>& b, const std::string& needle) {
  if (!b) return false;
  std::string_view s(reinterpret_cast<const char*>(b->data()), b->size());
  return s.find(needle) != std::string_view::npos;
}

/// Issue 30: what a copy (a nack's, a redrive's) to `topic` by `principal` from `host` needs: WRITE
/// on `topic`, and CREATE on the cluster or `topic` when the copy creates it. nullopt when allowed.
std::optional<error> copy_refusal(const broker& b, const security::kafka_principal& principal, const std::string& host,
                                  const std::string& topic, std::string_view what) {
  if (!b.security().authorizer_enabled()) return std::nullopt;
  auto allowed = [&](security::resource_type resource, std::string_view name, security::acl_operation operation) {
    return b.security().authorize(principal, host, security::acl_action{resource, name, operation}).allowed();
  };
  const std::string who = principal.to_string();
  if (!allowed(security::resource_type::topic, topic, security::acl_operation::write)) {
    return error{errc::topic_authorization_failed,
                 std::string(what) + " refused: its copy goes to topic '" + topic + "', and " + who + " lacks WRITE on it"};
  }
  if (!b.admin().topic_exists(topic) && !may_create_topic(b.security(), principal, host, topic)) {
    return error{errc::topic_authorization_failed, std::string(what) + " refused: its copy would create topic '" + topic +
                                                       "', and " + who + " lacks CREATE on the cluster or on that topic"};
  }
  return std::nullopt;
}

/// The copy of nacked record `rec` of `n`, or why there is none.
result<nack_write> route_one(const broker& b, const std::string& group_id, const nack_request& n, const model::record& rec,
                             const delay::retry_policy& policy, int64_t now_ms) {
  auto route = delay::route_nack(group_id, n.partition, rec, n.reason, policy, now_ms);
  if (!route.ok()) return error{errc::invalid_record, route.error().message};
  if (auto v = validate_topic_name(route->topic); !v.ok()) {
    return error{v.error().code, "group '" + group_id + "' cannot have the retry or dead-letter topic '" + route->topic +
                                     "': " + v.error().message};
  }
  if (auto refused = copy_refusal(b, n.principal, n.host, route->topic, "nack")) return *refused;
  return nack_write{std::move(route).value(), rec.key, rec.value};
}

}  // namespace

void add_retry_topics(group::subscription& sub, const std::string& group_id, const delay::retry_policy& policy) {
  // Non-blocking retries (issue 18): a member of the group reads the group's retry topic of each
  // topic it subscribes to, so a nacked record comes back to the group (docs/retries.md). The
  // retry topic may not exist yet: the assignment picks it up when a nack creates it.
  std::set<std::string> listed(sub.topics.begin(), sub.topics.end());
  const size_t n = sub.topics.size();
  for (size_t i = 0; i < n && sub.topics.size() < group::limits::subscription_topics_max; ++i) {
    const std::string& t = sub.topics[i];
    if (delay::original_topic_of(policy, t, group_id, false) || delay::original_topic_of(policy, t, group_id, true)) continue;
    std::string retry = delay::retry_topic_name(policy, t, group_id);
    if (listed.contains(retry) || !validate_topic_name(retry).ok()) continue;
    listed.insert(retry);
    sub.topics.push_back(std::move(retry));
  }
}

void route_nacks(broker& b, const std::string& group_id, const std::vector<nack_request>& nacks,
                 const delay::retry_policy& policy, int64_t now_ms,
                 std::function<void(result<std::vector<nack_write>>)> done) {
  struct gather {
    std::mutex mutex;
    size_t remaining = 0;
    std::optional<error> failure;
    std::vector<nack_write> writes;
    std::function<void(result<std::vector<nack_write>>)> done;
  };
  if (nacks.empty()) return done(std::vector<nack_write>{});
  auto g = std::make_shared<gather>();
  g->remaining = nacks.size();
  g->done = std::move(done);
  for (const auto& n : nacks) {
    read_record(b, n.partition, n.offset, [&b, g, n, group_id, policy, now_ms](result<model::record> rec) {
      {
        std::lock_guard lock(g->mutex);
        auto w = rec.ok() ? route_one(b, group_id, n, *rec, policy, now_ms) : result<nack_write>(rec.error());
        if (!w.ok() && !g->failure) g->failure = w.error();
        if (w.ok()) g->writes.push_back(std::move(w).value());
        if (--g->remaining > 0) return;
      }
      if (g->failure) return g->done(*g->failure);
      g->done(std::move(g->writes));
    });
  }
}

void write_nacks(broker& b, std::vector<nack_write> writes, std::function<void(result<void>)> done) {
  if (writes.empty()) return done(base::ok_v);
  // One produce per destination topic.
  std::map<std::string, std::vector<nack_write>> by_topic;
  for (auto& w : writes) by_topic[w.route.topic].push_back(std::move(w));
  auto join = std::make_shared<join_state>();
  join->remaining = by_topic.size();
  join->done = std::move(done);
  for (auto& [topic, list] : by_topic) {
    const std::string original = list.front().route.original.topic;
    std::vector<std::pair<int32_t, produce_record>> records;
    for (auto& w : list) {
      produce_record r;
      r.key = std::move(w.key);
      r.value = std::move(w.value);
      r.headers = std::move(w.route.headers);
      records.push_back({w.route.original.partition.value(), std::move(r)});
    }
    original_partitions(b, original, [&b, topic, records = std::move(records), join](int32_t count) mutable {
      produce_copies(b, topic, count, std::move(records), [join](result<void> r) { join->report(r); });
    });
  }
}

void read_record(broker& b, model::topic_partition tp, model::offset offset, std::function<void(result<model::record>)> done) {
  fetch_request f;
  f.partition = tp;
  f.fetch_offset = offset;
  f.max_bytes = 1;   // at least one record is returned
  b.fetch(std::move(f), [tp, offset, done](result<fetch_response> r) {
    if (!r.ok()) return done(r.error());
    for (auto& rec : r->records) {
      if (rec.record_offset == offset) return done(std::move(rec));
    }
    done(error{errc::offset_out_of_range, tp.directory_name() + " has no record at offset " + std::to_string(offset.value()) +
                                              " any more (compacted or deleted by retention)"});
  });
}

void dead_letter_topics(broker& b, std::string group_id, std::vector<delay::retry_policy> namings,
                        std::function<void(result<std::vector<dead_letter_topic_info>>)> done) {
  std::vector<std::pair<std::string, std::string>> topics;   // (dead-letter topic, original topic)
  for (auto& t : b.admin().list_topics(false)) {
    if (auto n = naming_of(namings, group_id, t)) topics.push_back({t, delay::original_topic_of(*n, t, group_id, true).value()});
  }
  if (topics.empty()) return done(std::vector<dead_letter_topic_info>{});
  struct gather {
    std::mutex mutex;
    size_t remaining = 0;
    std::vector<dead_letter_topic_info> out;
  };
  auto g = std::make_shared<gather>();
  g->remaining = topics.size();
  for (const auto& [t, original] : topics) {
    scan_dead_letters(b, t, std::nullopt, [g, t, original, done](result<std::shared_ptr<dead_letter_scan>> r) {
      std::vector<dead_letter_topic_info> out;
      {
        std::lock_guard lock(g->mutex);
        dead_letter_topic_info info;
        info.topic = t;
        info.original_topic = original;
        if (r.ok()) {
          info.partitions_count = (*r)->partitions;
          for (const auto& [p, letters] : (*r)->letters) {
            info.dead_letters += static_cast<int64_t>(letters.size());
            const auto& marks = (*r)->redriven[p];
            for (const auto& rec : letters) info.redriven += marks.contains(rec.record_offset.value()) ? 1 : 0;
          }
        }
        g->out.push_back(std::move(info));   // a topic deleted meanwhile shows with no letters
        if (--g->remaining > 0) return;
        out = std::move(g->out);
      }
      std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.topic < b.topic; });
      done(std::move(out));
    });
  }
}

void dead_letters(broker& b, dead_letters_request request, std::vector<delay::retry_policy> namings,
                  std::function<void(result<std::vector<dead_letter>>)> done) {
  if (auto naming = dead_letter_naming(b, namings, request.group_id, request.topic); !naming.ok()) {
    return done(naming.error());
  }
  scan_dead_letters(b, request.topic, request.partition,
                    [request, done](result<std::shared_ptr<dead_letter_scan>> r) {
                      if (!r.ok()) return done(r.error());
                      std::vector<dead_letter> out;
                      for (auto& [p, letters] : (*r)->letters) {
                        const auto& marks = (*r)->redriven[p];
                        for (const auto& rec : letters) {
                          if (static_cast<int32_t>(out.size()) >= request.limit) break;
                          if (rec.record_offset < request.from_offset) continue;
                          auto d = describe_letter(p, rec, marks.contains(rec.record_offset.value()));
                          if (!request.filter.empty()) {
                            bool hit = contains_text(rec.key, request.filter) || contains_text(rec.value, request.filter);
                            for (const auto& why : d.reasons) hit = hit || why.find(request.filter) != std::string::npos;
                            if (!hit) continue;
                          }
                          out.push_back(std::move(d));
                        }
                      }
                      done(std::move(out));
                    });
}

namespace {

/// A redrive in progress: its copies in letter order, sent chunk by chunk (redrive()).
struct redrive_run {
  struct copy {
    std::string target;        // topic the copy goes to
    int32_t target_partition;  // partition number in the target (as the original's)
    int32_t partition;         // of the letter in the dead-letter topic
    int64_t offset;            // of the letter
    produce_record record;
  };
  broker* b = nullptr;
  redrive_request request;
  delay::retry_policy naming;    // the one that names the dead-letter topic (and its retry topic)
  std::shared_ptr<redrive_result> outcome;
  std::function<void(result<redrive_result>)> done;
  std::vector<copy> copies;
  size_t at = 0;                 // first copy of the next chunk
  std::function<void()> next;    // cleared when the run ends (ends the self-reference)

  void finish() {
    next = nullptr;
    done(*outcome);
  }
  /// Copies [at, at + chunk): one produce per target topic; then markers; then the next chunk.
  void step();
  /// Marks the letters of `copied` (indices into copies, ascending) as redriven: one marker
  /// record per dead-letter partition, in that partition; then the next chunk.
  void mark(std::vector<size_t> copied);
};

void redrive_run::step() {
  if (at >= copies.size()) return finish();
  const size_t from = at;
  const size_t to = std::min(copies.size(), at + redrive_chunk_records);
  at = to;
  std::map<std::string, std::vector<size_t>> by_target;
  for (size_t i = from; i < to; ++i) by_target[copies[i].target].push_back(i);
  struct gather {
    std::mutex mutex;
    size_t remaining = 0;
    std::vector<size_t> copied;   // indices of copies now durable
  };
  auto g = std::make_shared<gather>();
  g->remaining = by_target.size();
  auto self = next;   // keeps the run alive until this chunk reports
  auto report = [this, g, self](const std::vector<size_t>& indices, const std::string& target, result<void> pr) {
    std::vector<size_t> copied;
    {
      std::lock_guard lock(g->mutex);
      if (pr.ok()) {
        outcome->redriven += static_cast<int64_t>(indices.size());
        g->copied.insert(g->copied.end(), indices.begin(), indices.end());
      } else {
        outcome->failures.push_back(std::to_string(indices.size()) + " dead letters to " + target + ": " + pr.error().message);
      }
      if (--g->remaining > 0) return;
      copied = std::move(g->copied);
    }
    std::sort(copied.begin(), copied.end());
    mark(std::move(copied));
  };
  for (auto& [target, indices] : by_target) {
    if (request.target == delay::redrive_target::original) {
      // Back to the original topic as it is now: a partition that is gone fails the copy.
      if (!b->admin().topic_exists(target)) {
        report(indices, target, error{errc::unknown_topic_or_partition, "the original topic " + target + " does not exist any more"});
        continue;
      }
      produce_request req;
      req.topic = target;
      req.acks = acks_mode::all;
      req.timeout_ms = copy_timeout_ms;
      for (size_t i : indices) {
        produce_record rec = copies[i].record;
        rec.partition = model::partition_id{copies[i].target_partition};
        req.records.push_back(std::move(rec));
      }
      b->produce(std::move(req), [report, indices, target](result<produce_response> pr) {
        if (!pr.ok()) return report(indices, target, pr.error());
        for (const auto& res : pr->results) {
          if (res.failure) return report(indices, target, *res.failure);
        }
        report(indices, target, base::ok_v);
      });
    } else {
      const std::string original = delay::original_topic_of(naming, target, request.group_id, false).value_or(target);
      std::vector<std::pair<int32_t, produce_record>> records;
      for (size_t i : indices) records.push_back({copies[i].target_partition, copies[i].record});
      original_partitions(*b, original, [b = b, target, indices, records = std::move(records), report](int32_t count) mutable {
        produce_copies(*b, target, count, std::move(records), [report, indices, target](result<void> r) { report(indices, target, r); });
      });
    }
  }
}

void redrive_run::mark(std::vector<size_t> copied) {
  if (copied.empty()) {
    auto n = next;
    if (n) n();
    return;
  }
  std::map<int32_t, std::string> lists;   // dead-letter partition -> "<p>@<o>,..."
  std::map<int32_t, size_t> counts;
  for (size_t i : copied) {
    auto& list = lists[copies[i].partition];
    list += (list.empty() ? "" : ",") + std::to_string(copies[i].partition) + "@" + std::to_string(copies[i].offset);
    ++counts[copies[i].partition];
  }
  produce_request req;
  req.topic = request.topic;
  req.acks = acks_mode::all;
  req.timeout_ms = copy_timeout_ms;
  for (auto& [p, list] : lists) {
    produce_record m;
    m.partition = model::partition_id{p};
    m.value = model::to_bytes(list);
    m.headers.push_back(text_header(delay::redriven_marker_header, std::to_string(counts[p])));
    m.headers.push_back(text_header(delay::redriven_proof_header,
                                    security::sign_broker_record(b->forwarding_secret(), delay::redriven_proof_purpose,
                                                                 {request.topic, std::to_string(p), list})));
    req.records.push_back(std::move(m));
  }
  auto self = next;
  b->produce(std::move(req), [this, self](result<produce_response> pr) {
    std::optional<error> why;
    if (!pr.ok()) why = pr.error();
    else {
      for (const auto& res : pr->results) {
        if (res.failure && !why) why = *res.failure;
      }
    }
    if (why) {
      outcome->failures.push_back("redriven, but not marked as redriven (a later redrive repeats them): " + why->message);
    }
    if (self) self();
  });
}

}  // namespace

void redrive(broker& b, redrive_request request, std::vector<delay::retry_policy> namings,
             std::function<void(result<redrive_result>)> done) {
  auto found = dead_letter_naming(b, namings, request.group_id, request.topic);
  if (!found.ok()) return done(found.error());
  scan_dead_letters(b, request.topic, std::nullopt, [&b, request, naming = *found, done](result<std::shared_ptr<dead_letter_scan>> r) {
    if (!r.ok()) return done(r.error());
    auto scan = *r;
    const bool all = request.offsets.empty() && request.ranges.empty();
    std::set<std::pair<int32_t, int64_t>> chosen;
    for (const auto& [p, o] : request.offsets) chosen.insert({p, o.value()});
    auto selected = [&](int32_t p, model::offset o) {
      if (all || chosen.contains({p, o.value()})) return true;
      return std::any_of(request.ranges.begin(), request.ranges.end(), [&](const redrive_range& range) {
        return range.partition == p && o >= range.from_offset && o < range.to_offset;
      });
    };
    auto result_so_far = std::make_shared<redrive_result>();
    // Chosen offsets that are no dead letter (a marker, past the end) are failures naming them.
    std::set<std::pair<int32_t, int64_t>> seen;
    struct copy {
      int32_t partition;   // in the dead-letter topic
      model::offset offset;
      delay::redrive_route route;
      std::optional<model::bytes> key;
      std::optional<model::bytes> value;
    };
    std::map<std::string, std::vector<copy>> by_target;
    for (auto& [p, letters] : scan->letters) {
      const auto& marks = scan->redriven[p];
      for (auto& rec : letters) {
        if (!selected(p, rec.record_offset)) continue;
        seen.insert({p, rec.record_offset.value()});
        ++result_so_far->selected;
        if (marks.contains(rec.record_offset.value())) {
          ++result_so_far->already_redriven;
          continue;
        }
        auto route = delay::route_redrive(naming, request.group_id, request.topic, model::partition_id{p}, rec, request.target);
        if (!route.ok()) {
          result_so_far->failures.push_back(route.error().message);
          continue;
        }
        if (auto refused = copy_refusal(b, request.principal, request.host, route->topic, "redrive")) {
          result_so_far->failures.push_back(delay::source_text(request.topic, p, rec.record_offset) + ": " +
                                            refused->message);
          continue;
        }
        by_target[route->topic].push_back({p, rec.record_offset, std::move(route).value(), rec.key, rec.value});
      }
    }
    for (const auto& [p, o] : chosen) {
      if (!seen.contains({p, o})) {
        result_so_far->failures.push_back(delay::source_text(request.topic, p, model::offset{o}) + " is not a dead letter");
      }
    }
    if (by_target.empty()) return done(*result_so_far);
    // Chunks of redrive_chunk_records letters, one after the other: each chunk's copies (one
    // produce per target topic), then its markers, then the next chunk. A produce stays below
    // produce.records.max (the breaker's redrive of more than 10,000 letters failed whole), a
    // marker's offset list stays small, and a crash between a copy and its marker repeats at
    // most one chunk on the next redrive (docs/retries.md).
    auto run = std::make_shared<redrive_run>();
    run->b = &b;
    run->request = request;
    run->naming = naming;
    run->outcome = result_so_far;
    run->done = done;
    for (auto& [target, copies] : by_target) {
      for (auto& c : copies) {
        produce_record rec;
        rec.key = std::move(c.key);
        rec.value = std::move(c.value);
        rec.headers = std::move(c.route.headers);
        run->copies.push_back({target, c.route.partition, c.partition, c.offset.value(), std::move(rec)});
      }
    }
    run->next = [run] { run->step(); };
    run->step();
  });
}

}  // namespace ringlog::broker::retries
