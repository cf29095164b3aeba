#include "ringlog/delay/retry.h"

#include <charconv>
#include <cmath>

#include "ringlog/base/assert.h"
#include "ringlog/delay/constants.h"
#include "ringlog/model/types.h"

namespace ringlog::delay {
namespace {

/// Headers a copy never takes from the record it copies: ours (written fresh) and delayed
/// delivery's (a moved record keeps its source and past due time, which would stop the copy from
/// being delayed again). A scheduler checkpoint's or a redrive marker's header on a client's
/// record would make its copy one (the breaker of session 30: a forged checkpoint in a retry
/// topic's delay partition stopped its scheduler; a forged marker hid real dead letters).
bool is_routing_header(std::string_view key) {
  return key == original_topic_header || key == original_partition_header || key == original_offset_header ||
         key == original_timestamp_header || key == attempt_header || key == group_header ||
         key == nacked_source_header || key == deliver_at_header || key == delay_ms_header ||
         key == source_header || key == produced_at_header || key == target_topic_header ||
         key == target_partition_header || key == target_topic_id_header || key == redrive_source_header ||
         key == checkpoint_header || key == redriven_marker_header;
}

model::record_header text(std::string_view key, std::string_view value) {
  return model::record_header{std::string(key), model::to_bytes(value)};
}

std::optional<int64_t> decimal(const std::optional<std::string>& s) {
  if (!s || s->empty() || s->size() > 19) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc{} || end != s->data() + s->size() || v < 0) return std::nullopt;
  return v;
}

error bad_header(std::string_view key, std::string_view what) {
  return error{errc::invalid_record, std::string(what) + ": header " + std::string(key) + " is missing or not decimal"};
}

std::string cut_reason(std::string_view reason) {
  if (reason.size() <= reason_bytes_max) return std::string(reason);
  // Cut at a UTF-8 character boundary (never inside a multi-byte sequence).
  size_t n = reason_bytes_max;
  while (n > 0 && (static_cast<unsigned char>(reason[n]) & 0xC0) == 0x80) --n;
  return std::string(reason.substr(0, n));
}

}  // namespace

namespace {

/// `tmpl` with <topic> and <group> replaced (each once: validate_topic_template).
std::string expand(std::string_view tmpl, std::string_view topic, std::string_view group) {
  std::string out;
  size_t at = 0;
  while (at < tmpl.size()) {
    if (tmpl.substr(at, topic_placeholder.size()) == topic_placeholder) {
      out += topic;
      at += topic_placeholder.size();
    } else if (tmpl.substr(at, group_placeholder.size()) == group_placeholder) {
      out += group;
      at += group_placeholder.size();
    } else {
      out += tmpl[at++];
    }
  }
  return out;
}

}  // namespace

std::string retry_topic_name(const retry_policy& p, std::string_view topic, std::string_view group) {
  return expand(p.retry_topic_template, topic, group);
}

std::string dead_letter_topic_name(const retry_policy& p, std::string_view topic, std::string_view group) {
  return expand(p.dead_letter_topic_template, topic, group);
}

std::optional<std::string> original_topic_of(const retry_policy& p, std::string_view name, std::string_view group,
                                             bool dead_letter) {
  const std::string_view tmpl = dead_letter ? p.dead_letter_topic_template : p.retry_topic_template;
  const size_t at = tmpl.find(topic_placeholder);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string prefix = expand(tmpl.substr(0, at), "", group);
  const std::string suffix = expand(tmpl.substr(at + topic_placeholder.size()), "", group);
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) {
    return std::nullopt;
  }
  return std::string(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
}

result<void> validate_topic_template(std::string_view key, std::string_view value) {
  auto refuse = [&](const std::string& why) {
    return error{errc::invalid_config, std::string(key) + "=" + std::string(value.substr(0, 60)) +
                                           (value.size() > 60 ? "..." : "") + ": " + why};
  };
  if (value.size() > topic_template_chars_max) {
    return refuse("longer than " + std::to_string(topic_template_chars_max) + " characters");
  }
  size_t topics = 0;
  size_t groups = 0;
  size_t at = 0;
  while (at < value.size()) {
    if (value.substr(at, topic_placeholder.size()) == topic_placeholder) {
      ++topics;
      at += topic_placeholder.size();
    } else if (value.substr(at, group_placeholder.size()) == group_placeholder) {
      ++groups;
      at += group_placeholder.size();
    } else {
      const char c = value[at++];
      const bool legal = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                         c == '_' || c == '-';
      if (!legal) {
        return refuse("character '" + std::string(1, c) +
                      "' may not be in a topic name (ASCII letters, digits, '.', '_' and '-', besides <topic> and "
                      "<group>)");
      }
    }
  }
  if (topics != 1 || groups != 1) {
    return refuse("must hold <topic> and <group> once each (it holds <topic> " + std::to_string(topics) +
                  " times, <group> " + std::to_string(groups) + " times), so every topic and group has its own");
  }
  if (model::is_internal_topic(value)) return refuse("may not start with \"__\" (internal topics)");
  return base::ok_v;
}

std::string source_text(std::string_view topic, int32_t partition, model::offset offset) {
  return std::string(topic) + "/" + std::to_string(partition) + "@" + std::to_string(offset.value());
}

std::optional<std::string> last_header(const std::vector<model::record_header>& headers, std::string_view key) {
  std::optional<std::string> out;
  for (const auto& h : headers) {
    if (h.key == key && h.value) out = model::to_string(*h.value);
  }
  return out;
}

std::vector<std::string> all_headers(const std::vector<model::record_header>& headers, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& h : headers) {
    if (h.key == key && h.value) out.push_back(model::to_string(*h.value));
  }
  return out;
}

result<void> validate(const retry_policy& p) {
  auto refuse = [](std::string key, std::string value, std::string bounds) {
    return error{errc::invalid_config, key + "=" + value + ": must be " + bounds};
  };
  if (p.max_delivery_attempts < max_delivery_attempts_min || p.max_delivery_attempts > max_delivery_attempts_max) {
    return refuse("max.delivery.attempts", std::to_string(p.max_delivery_attempts),
                  "an integer in [" + std::to_string(max_delivery_attempts_min) + ", " +
                      std::to_string(max_delivery_attempts_max) + "]");
  }
  if (p.retry_backoff_ms < 0 || p.retry_backoff_ms > retry_backoff_ms_limit) {
    return refuse("retry.backoff.ms", std::to_string(p.retry_backoff_ms),
                  "an integer in [0, " + std::to_string(retry_backoff_ms_limit) + "]");
  }
  if (!(p.retry_backoff_multiplier >= retry_backoff_multiplier_min &&
        p.retry_backoff_multiplier <= retry_backoff_multiplier_max)) {
    return refuse("retry.backoff.multiplier", std::to_string(p.retry_backoff_multiplier), "a number in [1, 10]");
  }
  if (p.retry_backoff_max_ms < p.retry_backoff_ms || p.retry_backoff_max_ms > retry_backoff_ms_limit) {
    return refuse("retry.backoff.max.ms", std::to_string(p.retry_backoff_max_ms),
                  "an integer in [retry.backoff.ms (" + std::to_string(p.retry_backoff_ms) + "), " +
                      std::to_string(retry_backoff_ms_limit) + "]");
  }
  RINGLOG_TRY(validate_topic_template("retry.topic.template", p.retry_topic_template));
  RINGLOG_TRY(validate_topic_template("dead.letter.topic.template", p.dead_letter_topic_template));
  if (p.retry_topic_template == p.dead_letter_topic_template) {
    return refuse("dead.letter.topic.template", p.dead_letter_topic_template, "different from retry.topic.template");
  }
  return base::ok_v;
}

int64_t backoff_ms(const retry_policy& p, int32_t failed_attempt) {
  RINGLOG_ASSERT_OP(failed_attempt, >=, 1);
  // In doubles: the product overflows no int64 before the cap (multiplier <= 10, cap <= 7 days);
  // the loop is bounded by max_delivery_attempts_max and stops at the cap.
  double wait = static_cast<double>(p.retry_backoff_ms);
  for (int32_t i = 1; i < failed_attempt && i < max_delivery_attempts_max; ++i) {
    wait *= p.retry_backoff_multiplier;
    if (wait >= static_cast<double>(p.retry_backoff_max_ms)) break;
  }
  return std::min<int64_t>(p.retry_backoff_max_ms, static_cast<int64_t>(std::llround(wait)));
}

result<nack_route> route_nack(std::string_view group, const model::topic_partition& from, const model::record& record,
                              std::string_view reason, const retry_policy& policy, int64_t now_ms) {
  if (original_topic_of(policy, from.topic, group, true)) {
    return error{errc::invalid_record, "topic " + from.topic + " is the dead-letter topic of group '" +
                                           std::string(group) + "': its records are redriven, not nacked"};
  }
  nack_route out;
  int64_t original_timestamp = record.timestamp;
  if (auto origin = original_topic_of(policy, from.topic, group, false)) {
    // A retry record: it names its origin and which delivery it was.
    auto topic = last_header(record.headers, original_topic_header);
    auto partition = decimal(last_header(record.headers, original_partition_header));
    auto offset = decimal(last_header(record.headers, original_offset_header));
    auto attempt = decimal(last_header(record.headers, attempt_header));
    auto ts = decimal(last_header(record.headers, original_timestamp_header));
    const std::string what = "retry record " + source_text(from.topic, from.partition.value(), record.record_offset);
    if (!topic) return bad_header(original_topic_header, what);
    if (!partition || *partition > INT32_MAX) return bad_header(original_partition_header, what);
    if (!offset) return bad_header(original_offset_header, what);
    if (!attempt || *attempt < 1 || *attempt > max_delivery_attempts_max) return bad_header(attempt_header, what);
    out.original = model::topic_partition{*topic, model::partition_id{static_cast<int32_t>(*partition)}};
    out.original_offset = model::offset{*offset};
    out.failed_attempt = static_cast<int32_t>(*attempt);
    if (ts) original_timestamp = *ts;
  } else {
    out.original = from;
    out.original_offset = record.record_offset;
    out.failed_attempt = 1;
  }
  // Every earlier reason, then this one.
  std::vector<std::string> reasons = all_headers(record.headers, reason_header);
  reasons.push_back(cut_reason(reason));

  const bool dead = out.failed_attempt >= policy.max_delivery_attempts;
  out.destination = dead ? nack_route::kind::dead_letter : nack_route::kind::retry;
  out.topic = dead ? dead_letter_topic_name(policy, out.original.topic, group)
                   : retry_topic_name(policy, out.original.topic, group);
  for (const auto& h : record.headers) {
    if (!is_routing_header(h.key) && h.key != reason_header) out.headers.push_back(h);
  }
  out.headers.push_back(text(original_topic_header, out.original.topic));
  out.headers.push_back(text(original_partition_header, std::to_string(out.original.partition.value())));
  out.headers.push_back(text(original_offset_header, std::to_string(out.original_offset.value())));
  out.headers.push_back(text(original_timestamp_header, std::to_string(std::max<int64_t>(original_timestamp, 0))));
  out.headers.push_back(text(group_header, group));
  out.headers.push_back(text(nacked_source_header, source_text(from.topic, from.partition.value(), record.record_offset)));
  for (const auto& r : reasons) out.headers.push_back(text(reason_header, r));
  if (dead) {
    out.headers.push_back(text(attempt_header, std::to_string(out.failed_attempt)));
  } else {
    out.headers.push_back(text(attempt_header, std::to_string(out.failed_attempt + 1)));
    out.deliver_at_ms = now_ms + backoff_ms(policy, out.failed_attempt);
    out.headers.push_back(text(deliver_at_header, std::to_string(out.deliver_at_ms)));
  }
  return out;
}

result<redrive_route> route_redrive(const retry_policy& policy, std::string_view group, std::string_view dead_letter_topic,
                                    model::partition_id partition, const model::record& dead_letter,
                                    redrive_target target) {
  const std::string what = "dead letter " + source_text(dead_letter_topic, partition.value(), dead_letter.record_offset);
  auto topic = last_header(dead_letter.headers, original_topic_header);
  auto p = decimal(last_header(dead_letter.headers, original_partition_header));
  if (!topic) return bad_header(original_topic_header, what);
  if (!p || *p > INT32_MAX) return bad_header(original_partition_header, what);
  // A letter the broker wrote names an original topic whose dead letters go to this topic; one
  // naming another was produced here by a client, and redriving it would write into a topic that
  // client may not (the breaker of session 30: an admin's "redrive all" did).
  if (const std::string home = dead_letter_topic_name(policy, *topic, group); home != dead_letter_topic) {
    return error{errc::invalid_record, what + ": its header " + std::string(original_topic_header) + " names topic '" +
                                           *topic + "', whose dead letters of group '" + std::string(group) +
                                           "' go to '" + home + "', not here: not redriven"};
  }
  redrive_route out;
  const bool to_retry = target == redrive_target::retry;
  out.topic = to_retry ? retry_topic_name(policy, *topic, group) : *topic;
  out.partition = static_cast<int32_t>(*p);
  for (const auto& h : dead_letter.headers) {
    if (is_routing_header(h.key) || h.key == reason_header) {
      // Back on the retry path it keeps its origin, with a fresh count.
      const bool keep = to_retry && (h.key == original_topic_header || h.key == original_partition_header ||
                                     h.key == original_offset_header || h.key == original_timestamp_header);
      if (!keep) continue;
    }
    out.headers.push_back(h);
  }
  if (to_retry) out.headers.push_back(text(attempt_header, "1"));
  out.headers.push_back(text(redrive_source_header, source_text(dead_letter_topic, partition.value(), dead_letter.record_offset)));
  return out;
}

}  // namespace ringlog::delay
