#include "ringlog/txn/log_codec.h"

#include <map>
#include <vector>

#include "ringlog/base/assert.h"
#include "ringlog/txn/limits.h"

namespace ringlog::txn {
namespace {

class writer {
 public:
  void i8(int8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void i16(int16_t v) { be(static_cast<uint16_t>(v), 2); }
  void i32(int32_t v) { be(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { be(static_cast<uint64_t>(v), 8); }
  void str(std::string_view s) {
    RINGLOG_ASSERT_OP(s.size(), <=, size_t{32767});
    i16(static_cast<int16_t>(s.size()));
    for (char c : s) out_.push_back(static_cast<std::byte>(c));
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
  reader(std::span<const std::byte> in, const char* what) : in_(in), what_(what) {}
  // Each getter returns false (and names the field) when the input is too short.
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
  bool str(std::string& s, const char* field) {
    int16_t n = 0;
    if (!i16(n, field)) return false;
    if (n < 0) return fail(std::string(field) + " has length " + std::to_string(n));
    if (static_cast<size_t>(n) > in_.size() - pos_) return fail(std::string(field) + " is cut short");
    s.assign(reinterpret_cast<const char*>(in_.data() + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool fail(std::string why) {
    failure_ = std::string(what_) + ": " + std::move(why);
    return false;
  }
  [[nodiscard]] bool at_end() const { return pos_ == in_.size(); }
  [[nodiscard]] size_t remaining() const { return in_.size() - pos_; }
  [[nodiscard]] error corrupt() const { return error{errc::corrupt_message, failure_}; }

 private:
  bool be(uint64_t& v, int n, const char* field) {
    if (in_.size() - pos_ < static_cast<size_t>(n)) return fail(std::string(field) + " is cut short");
    v = 0;
    for (int k = 0; k < n; ++k) v = (v << 8) | static_cast<uint8_t>(in_[pos_++]);
    return true;
  }
  std::span<const std::byte> in_;
  const char* what_;
  size_t pos_ = 0;
  std::string failure_;
};

}  // namespace

model::bytes encode_txn_log_key(std::string_view transactional_id) {
  writer w;
  w.i16(txn_log_key_version);
  w.str(transactional_id);
  return w.take();
}

result<std::string> decode_txn_log_key(std::span<const std::byte> key) {
  reader r(key, "__transaction_state key");
  int16_t version = 0;
  if (!r.i16(version, "version")) return r.corrupt();
  if (version != txn_log_key_version) {
    return error{errc::unsupported_version, "__transaction_state key version " + std::to_string(version) +
                                                " (this broker reads version " + std::to_string(txn_log_key_version) + ")"};
  }
  std::string id;
  if (!r.str(id, "transactional_id")) return r.corrupt();
  if (!r.at_end()) {
    r.fail(std::to_string(r.remaining()) + " bytes after the transactional_id");
    return r.corrupt();
  }
  return id;
}

model::bytes encode_txn_log_value(const txn_metadata& md) {
  RINGLOG_ASSERT_OP(md.partitions.size(), <=, limits::partitions_per_transaction_max);
  writer w;
  w.i16(txn_log_value_version);
  w.i64(md.producer_id.value());
  w.i16(md.producer_epoch.value());
  w.i16(md.last_producer_epoch.value());
  w.i32(md.timeout_ms);
  w.i8(static_cast<int8_t>(md.state));
  w.i8(md.epoch_bump_per_transaction ? 1 : 0);
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& tp : md.partitions) by_topic[tp.topic].push_back(tp.partition.value());
  w.i32(static_cast<int32_t>(by_topic.size()));
  for (const auto& [topic, parts] : by_topic) {
    w.str(topic);
    w.i32(static_cast<int32_t>(parts.size()));
    for (int32_t p : parts) w.i32(p);
  }
  w.i64(md.txn_start_ms);
  w.i64(md.last_update_ms);
  return w.take();
}

result<txn_metadata> decode_txn_log_value(std::string_view transactional_id, std::span<const std::byte> value) {
  reader r(value, "__transaction_state value");
  int16_t version = 0;
  if (!r.i16(version, "version")) return r.corrupt();
  if (version != txn_log_value_version) {
    return error{errc::unsupported_version, "__transaction_state value version " + std::to_string(version) +
                                                " (this broker reads version " + std::to_string(txn_log_value_version) + ")"};
  }
  txn_metadata md;
  md.transactional_id = std::string(transactional_id);
  int64_t pid = 0;
  int16_t epoch = 0;
  int16_t last_epoch = 0;
  int8_t state = 0;
  int8_t flags = 0;
  int32_t topics = 0;
  if (!r.i64(pid, "producer_id") || !r.i16(epoch, "producer_epoch") || !r.i16(last_epoch, "last_producer_epoch") ||
      !r.i32(md.timeout_ms, "timeout_ms") || !r.i8(state, "state") || !r.i8(flags, "flags") ||
      !r.i32(topics, "topic_count")) {
    return r.corrupt();
  }
  if (state < 0 || state > static_cast<int8_t>(txn_state::dead)) {
    r.fail("state " + std::to_string(state) + " is not one of 0..6");
    return r.corrupt();
  }
  if ((flags & ~1) != 0) {
    r.fail("flags " + std::to_string(flags) + " has bits other than bit 0");
    return r.corrupt();
  }
  if (topics < 0 || static_cast<size_t>(topics) > limits::partitions_per_transaction_max) {
    r.fail("topic_count " + std::to_string(topics) + " is outside 0.." +
           std::to_string(limits::partitions_per_transaction_max));
    return r.corrupt();
  }
  md.producer_id = model::producer_id{pid};
  md.producer_epoch = model::producer_epoch{epoch};
  md.last_producer_epoch = model::producer_epoch{last_epoch};
  md.state = static_cast<txn_state>(state);
  md.epoch_bump_per_transaction = (flags & 1) != 0;
  for (int32_t t = 0; t < topics; ++t) {
    std::string topic;
    int32_t count = 0;
    if (!r.str(topic, "topic") || !r.i32(count, "partition_count")) return r.corrupt();
    if (count < 1 || md.partitions.size() + static_cast<size_t>(count) > limits::partitions_per_transaction_max) {
      r.fail("partition_count " + std::to_string(count) + " of topic '" + topic + "' is outside 1.." +
             std::to_string(limits::partitions_per_transaction_max - md.partitions.size()));
      return r.corrupt();
    }
    for (int32_t k = 0; k < count; ++k) {
      int32_t p = 0;
      if (!r.i32(p, "partition")) return r.corrupt();
      md.partitions.insert(model::topic_partition{topic, model::partition_id{p}});
    }
  }
  if (!r.i64(md.txn_start_ms, "txn_start_ms") || !r.i64(md.last_update_ms, "last_update_ms")) return r.corrupt();
  if (!r.at_end()) {
    r.fail(std::to_string(r.remaining()) + " bytes after last_update_ms");
    return r.corrupt();
  }
  return md;
}

txn_log_record record_of(const txn_metadata& md) {
  txn_log_record rec;
  rec.key = encode_txn_log_key(md.transactional_id);
  if (md.state != txn_state::dead) rec.value = encode_txn_log_value(md);
  return rec;
}

std::string_view kafka_name(txn_state s) {
  switch (s) {
    case txn_state::empty: return "Empty";
    case txn_state::ongoing: return "Ongoing";
    case txn_state::prepare_commit: return "PrepareCommit";
    case txn_state::prepare_abort: return "PrepareAbort";
    case txn_state::complete_commit: return "CompleteCommit";
    case txn_state::complete_abort: return "CompleteAbort";
    case txn_state::dead: return "Dead";
  }
  return "Unknown";
}

std::optional<txn_state> parse_kafka_name(std::string_view name) {
  for (int8_t s = 0; s <= static_cast<int8_t>(txn_state::dead); ++s) {
    if (kafka_name(static_cast<txn_state>(s)) == name) return static_cast<txn_state>(s);
  }
  return std::nullopt;
}

}  // namespace ringlog::txn
