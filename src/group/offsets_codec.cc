#include "ringlog/group/offsets_codec.h"

#include <cstdint>
#include <map>
#include <string>

#include "ringlog/base/assert.h"
#include "ringlog/group/classic_group.h"
#include "ringlog/group/limits.h"

namespace ringlog::group {
namespace {

class writer {
 public:
  void i8(int8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void i16(int16_t v) { be(static_cast<uint64_t>(static_cast<uint16_t>(v)), 2); }
  void i32(int32_t v) { be(static_cast<uint64_t>(static_cast<uint32_t>(v)), 4); }
  void i64(int64_t v) { be(static_cast<uint64_t>(v), 8); }
  void str(std::string_view s) {
    RINGLOG_ASSERT_OP(s.size(), <=, size_t{32767});
    i16(static_cast<int16_t>(s.size()));
    for (char c : s) out_.push_back(static_cast<std::byte>(c));
  }
  void nullable_str(const std::optional<std::string>& s) {
    if (!s) {
      i16(-1);
      return;
    }
    str(*s);
  }
  void blob(const model::bytes& b) {
    RINGLOG_ASSERT_OP(b.size(), <=, size_t{INT32_MAX});
    i32(static_cast<int32_t>(b.size()));
    out_.insert(out_.end(), b.begin(), b.end());
  }
  void partitions(const partition_set& ps) {
    i32(static_cast<int32_t>(ps.size()));
    for (const auto& tp : ps) {
      str(tp.topic);
      i32(tp.partition.value());
    }
  }
  model::bytes take() { return std::move(out_); }

 private:
  void be(uint64_t v, int n) {
    for (int k = n - 1; k >= 0; --k) out_.push_back(static_cast<std::byte>((v >> (8 * k)) & 0xFF));
  }
  model::bytes out_;
};

class reader {
 public:
  explicit reader(std::span<const std::byte> in) : in_(in) {}
  // Each getter returns false (and records the field) when the input is too short.
  bool i8(int8_t& v, const char* field) {
    uint64_t u = 0;
    if (!be(u, 1, field)) return false;
    v = static_cast<int8_t>(static_cast<uint8_t>(u));
    return true;
  }
  bool i16(int16_t& v, const char* field) {
    uint64_t u = 0;
    if (!be(u, 2, field)) return false;
    v = static_cast<int16_t>(static_cast<uint16_t>(u));
    return true;
  }
  bool i32(int32_t& v, const char* field) {
    uint64_t u = 0;
    if (!be(u, 4, field)) return false;
    v = static_cast<int32_t>(static_cast<uint32_t>(u));
    return true;
  }
  bool i64(int64_t& v, const char* field) {
    uint64_t u = 0;
    if (!be(u, 8, field)) return false;
    v = static_cast<int64_t>(u);
    return true;
  }
  bool nullable_str(std::optional<std::string>& s, const char* field) {
    int16_t len = 0;
    if (!i16(len, field)) return false;
    if (len == -1) {
      s.reset();
      return true;
    }
    if (len < 0) return fail(field, "negative length");
    if (static_cast<size_t>(len) > in_.size() - pos_) return fail(field, "truncated");
    s.emplace(reinterpret_cast<const char*>(in_.data() + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return true;
  }
  bool str(std::string& s, const char* field) {
    std::optional<std::string> o;
    if (!nullable_str(o, field)) return false;
    if (!o) return fail(field, "null where a string is required");
    s = std::move(*o);
    return true;
  }
  /// Kafka's `bytes`: int32 length then bytes; null (-1) reads as empty.
  bool blob(model::bytes& b, const char* field) {
    int32_t len = 0;
    if (!i32(len, field)) return false;
    if (len == -1) {
      b.clear();
      return true;
    }
    if (len < 0) return fail(field, "negative length");
    if (static_cast<size_t>(len) > in_.size() - pos_) return fail(field, "truncated");
    b.assign(in_.begin() + static_cast<ptrdiff_t>(pos_), in_.begin() + static_cast<ptrdiff_t>(pos_ + static_cast<size_t>(len)));
    pos_ += static_cast<size_t>(len);
    return true;
  }
  bool count(int32_t& n, size_t max, const char* field) {
    if (!i32(n, field)) return false;
    if (n < 0 || static_cast<size_t>(n) > max) return fail(field, "count out of range");
    return true;
  }
  bool partitions(partition_set& ps, const char* field) {
    int32_t n = 0;
    if (!count(n, limits::commit_partitions_max, field)) return false;
    for (int32_t k = 0; k < n; ++k) {
      topic_partition tp;
      int32_t p = 0;
      if (!str(tp.topic, field) || !i32(p, field)) return false;
      tp.partition = partition_id(p);
      ps.insert(std::move(tp));
    }
    return true;
  }
  bool at_end() {
    if (pos_ != in_.size()) return fail("end", "trailing bytes");
    return true;
  }
  bool fail(const char* field, const char* why) {
    if (error_.empty()) error_ = std::string(field) + ": " + why + " at byte " + std::to_string(pos_);
    return false;
  }
  [[nodiscard]] error corrupt(const char* what) const {
    return error{errc::corrupt_message, std::string(what) + ": " + error_};
  }

 private:
  bool be(uint64_t& v, size_t n, const char* field) {
    if (in_.size() - pos_ < n) return fail(field, "truncated");
    v = 0;
    for (size_t k = 0; k < n; ++k) v = (v << 8) | static_cast<uint8_t>(in_[pos_ + k]);
    pos_ += n;
    return true;
  }
  std::span<const std::byte> in_;
  size_t pos_ = 0;
  std::string error_;
};

error unsupported(const char* what, int16_t version) {
  return error{errc::unsupported_version,
               std::string(what) + ": version " + std::to_string(version) + " is not supported"};
}

void write_subscription(writer& w, const subscription& sub) {
  w.i8(static_cast<int8_t>(sub.kind));
  w.i32(static_cast<int32_t>(sub.topics.size()));
  for (const auto& t : sub.topics) w.str(t);
  w.str(sub.pattern);
  w.partitions(sub.partitions);
}

/// Reads what write_subscription wrote; the kind is checked by the caller.
bool read_subscription(reader& r, subscription& sub, int8_t& kind) {
  int32_t topics = 0;
  bool ok = r.i8(kind, "subscription_kind") && r.count(topics, limits::subscription_topics_max, "topics");
  for (int32_t t = 0; ok && t < topics; ++t) {
    std::string topic;
    ok = r.str(topic, "topic");
    sub.topics.push_back(std::move(topic));
  }
  return ok && r.str(sub.pattern, "pattern") && r.partitions(sub.partitions, "manual_partitions");
}

}  // namespace

model::bytes encode_offset_commit_key(std::string_view group_id, const topic_partition& tp) {
  writer w;
  w.i16(offset_key_version);
  w.str(group_id);
  w.str(tp.topic);
  w.i32(tp.partition.value());
  return w.take();
}

model::bytes encode_txn_offset_key(std::string_view group_id, const topic_partition& tp, int64_t producer_id) {
  writer w;
  w.i16(txn_offset_key_version);
  w.str(group_id);
  w.str(tp.topic);
  w.i32(tp.partition.value());
  w.i64(producer_id);
  return w.take();
}

model::bytes encode_offset_commit_value(const committed_offset& value) {
  writer w;
  w.i16(offset_value_version);
  w.i64(value.committed.value());
  w.i32(-1);  // leader_epoch
  w.str(value.metadata);
  w.i64(value.commit_timestamp_ms);
  return w.take();
}

model::bytes encode_group_metadata_key(std::string_view group_id) {
  writer w;
  w.i16(group_key_version);
  w.str(group_id);
  return w.take();
}

model::bytes encode_group_metadata_value(const group_metadata& value) {
  writer w;
  w.i16(group_value_version);
  w.i8(static_cast<int8_t>(value.assignor));
  w.i32(value.generation.value());
  w.i32(static_cast<int32_t>(value.members.size()));
  for (const auto& m : value.members) {
    w.str(m.member_id);
    w.nullable_str(m.group_instance_id);
    w.str(m.client_name);
    w.i32(m.session_timeout_ms);
    w.i32(m.rebalance_timeout_ms);
    w.i8(static_cast<int8_t>(m.auto_offset_reset));
    w.i32(m.generation.value());
    w.i8(static_cast<int8_t>(m.sub.kind));
    w.i32(static_cast<int32_t>(m.sub.topics.size()));
    for (const auto& t : m.sub.topics) w.str(t);
    w.str(m.sub.pattern);
    w.partitions(m.sub.partitions);
    w.partitions(m.target);
    w.partitions(m.owned);
  }
  return w.take();
}

model::bytes encode_classic_group_metadata_value(const classic_group_metadata& value) {
  writer w;
  w.i16(classic_group_value_version);
  w.str(value.protocol_type);
  w.i32(value.generation.value());
  w.nullable_str(value.protocol_name);
  w.nullable_str(value.leader);
  w.i64(value.current_state_timestamp_ms);
  w.i32(static_cast<int32_t>(value.members.size()));
  for (const auto& m : value.members) {
    w.str(m.member_id);
    w.nullable_str(m.group_instance_id);
    w.str(m.client_id);
    w.str(m.client_host);
    w.i32(m.rebalance_timeout_ms);
    w.i32(m.session_timeout_ms);
    w.blob(m.subscription);
    w.blob(m.assignment);
  }
  return w.take();
}

result<int16_t> group_metadata_value_version(std::span<const std::byte> value) {
  reader r(value);
  int16_t version = 0;
  if (!r.i16(version, "version")) return r.corrupt("group metadata value");
  return version;
}

result<classic_group_metadata> decode_classic_group_metadata_value(std::span<const std::byte> value) {
  reader r(value);
  int16_t version = 0;
  if (!r.i16(version, "version")) return r.corrupt("classic group metadata value");
  if (version != classic_group_value_version) return unsupported("classic group metadata value", version);
  classic_group_metadata g;
  int32_t generation = 0;
  int32_t n = 0;
  if (!r.str(g.protocol_type, "protocol_type") || !r.i32(generation, "generation") ||
      !r.nullable_str(g.protocol_name, "protocol") || !r.nullable_str(g.leader, "leader") ||
      !r.i64(g.current_state_timestamp_ms, "current_state_timestamp") ||
      !r.count(n, limits::group_members_max, "member_count")) {
    return r.corrupt("classic group metadata value");
  }
  g.generation = generation_id(generation);
  for (int32_t k = 0; k < n; ++k) {
    classic_member_metadata m;
    if (!r.str(m.member_id, "member_id") || !r.nullable_str(m.group_instance_id, "group_instance_id") ||
        !r.str(m.client_id, "client_id") || !r.str(m.client_host, "client_host") ||
        !r.i32(m.rebalance_timeout_ms, "rebalance_timeout") || !r.i32(m.session_timeout_ms, "session_timeout") ||
        !r.blob(m.subscription, "subscription") || !r.blob(m.assignment, "assignment")) {
      return r.corrupt("classic group metadata value");
    }
    g.members.push_back(std::move(m));
  }
  if (!r.at_end()) return r.corrupt("classic group metadata value");
  return g;
}

// ---- Kafka's ConsumerProtocol (classic_group.h)

result<std::vector<std::string>> decode_consumer_subscription_topics(std::span<const std::byte> metadata) {
  reader r(metadata);
  int16_t version = 0;
  int32_t n = 0;
  if (!r.i16(version, "version") || !r.count(n, limits::subscription_topics_max, "topics")) {
    return r.corrupt("consumer protocol subscription");
  }
  std::vector<std::string> topics;
  for (int32_t k = 0; k < n; ++k) {
    std::string t;
    if (!r.str(t, "topic")) return r.corrupt("consumer protocol subscription");
    topics.push_back(std::move(t));
  }
  return topics;  // user data and later fields are the assignor's
}

result<partition_set> decode_consumer_assignment(std::span<const std::byte> assignment) {
  partition_set out;
  if (assignment.empty()) return out;
  reader r(assignment);
  int16_t version = 0;
  int32_t topics = 0;
  if (!r.i16(version, "version") || !r.count(topics, limits::commit_partitions_max, "topics")) {
    return r.corrupt("consumer protocol assignment");
  }
  for (int32_t t = 0; t < topics; ++t) {
    std::string topic;
    int32_t n = 0;
    if (!r.str(topic, "topic") || !r.count(n, limits::commit_partitions_max, "partitions")) {
      return r.corrupt("consumer protocol assignment");
    }
    for (int32_t k = 0; k < n; ++k) {
      int32_t p = 0;
      if (!r.i32(p, "partition")) return r.corrupt("consumer protocol assignment");
      out.insert(topic_partition{topic, partition_id(p)});
    }
  }
  return out;
}

model::bytes encode_consumer_assignment(const partition_set& partitions) {
  writer w;
  w.i16(0);
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& tp : partitions) by_topic[tp.topic].push_back(tp.partition.value());
  w.i32(static_cast<int32_t>(by_topic.size()));
  for (const auto& [topic, ps] : by_topic) {
    w.str(topic);
    w.i32(static_cast<int32_t>(ps.size()));
    for (int32_t p : ps) w.i32(p);
  }
  w.i32(-1);  // user_data = null
  return w.take();
}

model::bytes encode_consumer_subscription(const std::vector<std::string>& topics) {
  writer w;
  w.i16(0);
  w.i32(static_cast<int32_t>(topics.size()));
  for (const auto& t : topics) w.str(t);
  w.i32(-1);  // user_data = null
  return w.take();
}

model::bytes encode_consumer_instance_key(std::string_view group_id, std::string_view instance_id) {
  writer w;
  w.i16(consumer_instance_key_version);
  w.str(group_id);
  w.str(instance_id);
  return w.take();
}

model::bytes encode_consumer_instance_value(const consumer_instance_value& value) {
  writer w;
  w.i16(consumer_instance_value_version);
  w.str(value.client_name);
  w.nullable_str(value.group_instance_id);
  w.i8(value.format);
  w.i8(value.auto_commit_enable ? 1 : 0);
  w.i64(value.request_timeout_ms);
  w.i32(value.session_timeout_ms);
  w.i32(value.fetch_min_bytes);
  w.i8(static_cast<int8_t>(value.auto_offset_reset));
  w.i8(value.assignor ? static_cast<int8_t>(*value.assignor) : int8_t{-1});
  write_subscription(w, value.sub);
  w.i8(value.read_committed ? 1 : 0);
  w.i8(value.retry ? 1 : 0);
  if (value.retry) {
    w.i32(value.retry->max_delivery_attempts);
    w.i64(value.retry->retry_backoff_ms);
    w.i32(value.retry->retry_backoff_multiplier_milli);
    w.i64(value.retry->retry_backoff_max_ms);
    w.str(value.retry->retry_topic_template);
    w.str(value.retry->dead_letter_topic_template);
  }
  w.str(value.owner);
  return w.take();
}

result<consumer_instance_value> decode_consumer_instance_value(std::span<const std::byte> value) {
  reader r(value);
  int16_t version = 0;
  if (!r.i16(version, "version")) return r.corrupt("consumer instance value");
  if (version != consumer_instance_value_version && version != consumer_instance_value_version_v102 &&
      version != consumer_instance_value_version_v101 &&
      version != consumer_instance_value_version_v100) {
    return unsupported("consumer instance value", version);
  }
  consumer_instance_value v;
  int8_t auto_commit = 0;
  int8_t reset = 0;
  int8_t assignor = 0;
  int8_t kind = 0;
  int8_t isolation = 0;
  const bool ok = r.str(v.client_name, "client_name") && r.nullable_str(v.group_instance_id, "group_instance_id") &&
                  r.i8(v.format, "format") && r.i8(auto_commit, "auto_commit_enable") &&
                  r.i64(v.request_timeout_ms, "request_timeout_ms") && r.i32(v.session_timeout_ms, "session_timeout_ms") &&
                  r.i32(v.fetch_min_bytes, "fetch_min_bytes") && r.i8(reset, "auto_offset_reset") &&
                  r.i8(assignor, "assignor") && read_subscription(r, v.sub, kind) &&
                  (version == consumer_instance_value_version_v100 || r.i8(isolation, "isolation_level"));
  if (!ok) return r.corrupt("consumer instance value");
  if (version >= 101) {
    int8_t has_retry = 0;
    if (!r.i8(has_retry, "has_retry") || has_retry < 0 || has_retry > 1) return r.corrupt("consumer instance value");
    if (has_retry == 1) {
      consumer_instance_value::retry_settings rs;
      if (!r.i32(rs.max_delivery_attempts, "max_delivery_attempts") || !r.i64(rs.retry_backoff_ms, "retry_backoff_ms") ||
          !r.i32(rs.retry_backoff_multiplier_milli, "retry_backoff_multiplier") ||
          !r.i64(rs.retry_backoff_max_ms, "retry_backoff_max_ms")) {
        return r.corrupt("consumer instance value");
      }
      if (version >= 102 && (!r.str(rs.retry_topic_template, "retry_topic_template") ||
                             !r.str(rs.dead_letter_topic_template, "dead_letter_topic_template"))) {
        return r.corrupt("consumer instance value");
      }
      v.retry = rs;
    }
  }
  if (version >= 103 && !r.str(v.owner, "owner")) return r.corrupt("consumer instance value");
  if (!r.at_end()) return r.corrupt("consumer instance value");
  if (v.format < 0 || v.format > 1 || auto_commit < 0 || auto_commit > 1 || reset < 0 || reset > 2 || assignor < -1 ||
      assignor > 2 || kind < 0 || kind > 3 || isolation < 0 || isolation > 1) {
    return error{errc::corrupt_message,
                 "consumer instance value: format, auto_commit_enable, auto_offset_reset, assignor or subscription_kind "
                 "out of range"};
  }
  v.auto_commit_enable = auto_commit == 1;
  v.read_committed = isolation == 1;
  v.auto_offset_reset = static_cast<offset_reset>(reset);
  if (assignor >= 0) v.assignor = static_cast<assignor_kind>(assignor);
  v.sub.kind = static_cast<subscription_kind>(kind);
  return v;
}

result<offsets_topic_key> decode_offsets_topic_key(std::span<const std::byte> key) {
  reader r(key);
  int16_t version = 0;
  if (!r.i16(version, "version")) return r.corrupt("__consumer_offsets key");
  if (version == 0 || version == 1) {
    offset_commit_key k;
    int32_t p = 0;
    if (!r.str(k.group_id, "group_id") || !r.str(k.partition.topic, "topic") || !r.i32(p, "partition") ||
        !r.at_end()) {
      return r.corrupt("offset commit key");
    }
    k.partition.partition = partition_id(p);
    return offsets_topic_key{std::move(k)};
  }
  if (version == group_key_version) {
    group_metadata_key k;
    if (!r.str(k.group_id, "group_id") || !r.at_end()) return r.corrupt("group metadata key");
    return offsets_topic_key{std::move(k)};
  }
  if (version == consumer_instance_key_version) {
    consumer_instance_key k;
    if (!r.str(k.group_id, "group_id") || !r.str(k.instance_id, "instance_id") || !r.at_end()) {
      return r.corrupt("consumer instance key");
    }
    return offsets_topic_key{std::move(k)};
  }
  if (version == txn_offset_key_version) {
    txn_offset_key k;
    int32_t p = 0;
    if (!r.str(k.group_id, "group_id") || !r.str(k.partition.topic, "topic") || !r.i32(p, "partition") ||
        !r.i64(k.producer_id, "producer_id") || !r.at_end()) {
      return r.corrupt("transactional offset key");
    }
    k.partition.partition = partition_id(p);
    return offsets_topic_key{std::move(k)};
  }
  return unsupported("__consumer_offsets key", version);
}

result<committed_offset> decode_offset_commit_value(std::span<const std::byte> value) {
  reader r(value);
  int16_t version = 0;
  if (!r.i16(version, "version")) return r.corrupt("offset commit value");
  if (version != offset_value_version) return unsupported("offset commit value", version);
  committed_offset v;
  int64_t off = 0;
  int32_t leader_epoch = 0;
  if (!r.i64(off, "offset") || !r.i32(leader_epoch, "leader_epoch") || !r.str(v.metadata, "metadata") ||
      !r.i64(v.commit_timestamp_ms, "commit_timestamp") || !r.at_end()) {
    return r.corrupt("offset commit value");
  }
  // Any int64: Kafka stores a committed offset as given, negative ones too (-1, -2 from clients).
  v.committed = offset(off);
  return v;
}

result<group_metadata> decode_group_metadata_value(std::span<const std::byte> value) {
  reader r(value);
  int16_t version = 0;
  if (!r.i16(version, "version")) return r.corrupt("group metadata value");
  if (version != group_value_version) return unsupported("group metadata value", version);
  group_metadata g;
  int8_t assignor = 0;
  int32_t generation = 0;
  int32_t n = 0;
  if (!r.i8(assignor, "assignor") || !r.i32(generation, "generation") ||
      !r.count(n, limits::group_members_max, "member_count")) {
    return r.corrupt("group metadata value");
  }
  if (assignor < 0 || assignor > 2) return error{errc::corrupt_message, "group metadata value: assignor out of range"};
  g.assignor = static_cast<assignor_kind>(assignor);
  g.generation = generation_id(generation);
  for (int32_t k = 0; k < n; ++k) {
    member_metadata m;
    int8_t reset = 0;
    int8_t kind = 0;
    int32_t member_generation = 0;
    int32_t topics = 0;
    bool ok = r.str(m.member_id, "member_id") && r.nullable_str(m.group_instance_id, "group_instance_id") &&
              r.str(m.client_name, "client_name") && r.i32(m.session_timeout_ms, "session_timeout_ms") &&
              r.i32(m.rebalance_timeout_ms, "rebalance_timeout_ms") && r.i8(reset, "auto_offset_reset") &&
              r.i32(member_generation, "member_generation") && r.i8(kind, "subscription_kind") &&
              r.count(topics, limits::subscription_topics_max, "topics");
    for (int32_t t = 0; ok && t < topics; ++t) {
      std::string topic;
      ok = r.str(topic, "topic");
      m.sub.topics.push_back(std::move(topic));
    }
    ok = ok && r.str(m.sub.pattern, "pattern") && r.partitions(m.sub.partitions, "manual_partitions") &&
         r.partitions(m.target, "target") && r.partitions(m.owned, "owned");
    if (!ok) return r.corrupt("group metadata value");
    if (reset < 0 || reset > 2 || kind < 0 || kind > 3) {
      return error{errc::corrupt_message, "group metadata value: auto_offset_reset or subscription_kind out of range"};
    }
    m.auto_offset_reset = static_cast<offset_reset>(reset);
    m.sub.kind = static_cast<subscription_kind>(kind);
    m.generation = generation_id(member_generation);
    g.members.push_back(std::move(m));
  }
  if (!r.at_end()) return r.corrupt("group metadata value");
  return g;
}

}  // namespace ringlog::group
