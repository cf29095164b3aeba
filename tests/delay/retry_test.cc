#include <doctest.h>

#include <cmath>
#include <functional>

#include "ringlog/delay/constants.h"
#include "ringlog/delay/retry.h"

using namespace ringlog;
using namespace ringlog::delay;

namespace {

using route_fn = std::function<result<nack_route>(std::string_view, const model::topic_partition&, const model::record&,
                                                  std::string_view, const retry_policy&, int64_t)>;

model::record original_record() {
  model::record r;
  r.record_offset = model::offset{41};
  r.timestamp = 1'000;
  r.key = model::to_bytes("k");
  r.value = model::to_bytes("v");
  r.headers.push_back({"trace", model::to_bytes("t-1")});
  return r;
}

/// Walks a poison record (every delivery nacked) through `route` as the broker would: each retry
/// copy is "moved" into the retry topic at its due time and delivered, and nacked again, until it
/// is a dead letter. Returns the first broken rule, or "" when the walk keeps every rule:
/// exactly max.delivery.attempts deliveries, every reason in order, backoffs as configured, the
/// origin kept, nothing delivered before its time.
std::string poison_walk(const route_fn& route, const retry_policy& policy) {
  const std::string group = "g";
  model::topic_partition from{"orders", model::partition_id{3}};
  model::record rec = original_record();
  int64_t now = 10'000;
  int32_t deliveries = 1;
  for (int guard = 0; guard < 1000; ++guard) {
    auto r = route(group, from, rec, "fail " + std::to_string(deliveries), policy, now);
    if (!r.ok()) return "route refused: " + r.error().message;
    if (r->original.topic != "orders" || r->original.partition.value() != 3 || r->original_offset.value() != 41) {
      return "origin lost at delivery " + std::to_string(deliveries);
    }
    auto reasons = all_headers(r->headers, reason_header);
    if (reasons.size() != static_cast<size_t>(deliveries)) return "reasons: " + std::to_string(reasons.size());
    for (size_t i = 0; i < reasons.size(); ++i) {
      if (reasons[i] != "fail " + std::to_string(i + 1)) return "reason " + std::to_string(i) + " is " + reasons[i];
    }
    if (last_header(r->headers, "trace") != "t-1") return "user header lost";
    if (r->destination == nack_route::kind::dead_letter) {
      if (deliveries != policy.max_delivery_attempts) {
        return "dead letter after " + std::to_string(deliveries) + " deliveries, max.delivery.attempts is " +
               std::to_string(policy.max_delivery_attempts);
      }
      if (r->topic != "orders.g.dlq") return "dead-letter topic " + r->topic;
      if (last_header(r->headers, attempt_header) != std::to_string(deliveries)) return "dead letter's attempt count";
      return "";
    }
    if (deliveries >= policy.max_delivery_attempts) return "retried past max.delivery.attempts";
    if (r->topic != "orders.g.retry") return "retry topic " + r->topic;
    const int64_t wait = r->deliver_at_ms - now;
    if (wait != backoff_ms(policy, deliveries) || wait > policy.retry_backoff_max_ms || wait < 0) {
      return "backoff " + std::to_string(wait) + " at delivery " + std::to_string(deliveries);
    }
    if (last_header(r->headers, deliver_at_header) != std::to_string(r->deliver_at_ms)) return "deliver-at header";
    // Moved into the retry topic at its due time (delayed delivery adds its source header).
    now = r->deliver_at_ms;
    rec.headers = r->headers;
    rec.headers.push_back({std::string(source_header), model::to_bytes("__delay-10s/0@" + std::to_string(guard))});
    rec.record_offset = model::offset{100 + guard};
    from = model::topic_partition{r->topic, model::partition_id{0}};
    ++deliveries;
  }
  return "never reached the dead-letter topic";
}

}  // namespace

TEST_CASE("a poison record reaches the dead-letter topic after exactly max.delivery.attempts, every reason kept") {
  for (int32_t max : {1, 2, 5, 17, max_delivery_attempts_max}) {
    retry_policy p;
    p.max_delivery_attempts = max;
    p.retry_backoff_ms = 100;
    p.retry_backoff_multiplier = 3.0;
    p.retry_backoff_max_ms = 5'000;
    CAPTURE(max);
    CHECK(poison_walk(route_nack, p) == "");
  }
}

TEST_CASE("negative control: the walk catches a rule that retries once too often") {
  // The deliberately broken rule: it decides dead letters one attempt late.
  route_fn off_by_one = [](std::string_view g, const model::topic_partition& from, const model::record& r,
                           std::string_view reason, const retry_policy& p, int64_t now) {
    retry_policy late = p;
    late.max_delivery_attempts = p.max_delivery_attempts + 1;
    return route_nack(g, from, r, reason, late, now);
  };
  retry_policy p;
  p.max_delivery_attempts = 4;
  const std::string broken = poison_walk(off_by_one, p);
  CHECK(broken.find("past max.delivery.attempts") != std::string::npos);
  // And one that forgets the earlier reasons.
  route_fn forgetful = [](std::string_view g, const model::topic_partition& from, const model::record& r,
                          std::string_view reason, const retry_policy& pol, int64_t now) {
    model::record copy = r;
    std::erase_if(copy.headers, [](const model::record_header& h) { return h.key == reason_header; });
    return route_nack(g, from, copy, reason, pol, now);
  };
  CHECK(poison_walk(forgetful, p).find("reasons") == 0);
}

TEST_CASE("backoff grows by the multiplier and stops at the cap") {
  retry_policy p;
  p.retry_backoff_ms = 100;
  p.retry_backoff_multiplier = 2.0;
  p.retry_backoff_max_ms = 1'000;
  CHECK(backoff_ms(p, 1) == 100);
  CHECK(backoff_ms(p, 2) == 200);
  CHECK(backoff_ms(p, 4) == 800);
  CHECK(backoff_ms(p, 5) == 1'000);
  CHECK(backoff_ms(p, 100) == 1'000);
  p.retry_backoff_ms = 0;
  CHECK(backoff_ms(p, 7) == 0);
  p.retry_backoff_ms = retry_backoff_ms_limit;
  p.retry_backoff_max_ms = retry_backoff_ms_limit;
  p.retry_backoff_multiplier = 10.0;
  CHECK(backoff_ms(p, 100) == retry_backoff_ms_limit);
}

TEST_CASE("settings out of bounds are refused naming the key") {
  auto refused = [](retry_policy p) {
    auto r = validate(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::invalid_config);
    return r.error().message;
  };
  CHECK(validate(retry_policy{}).ok());
  retry_policy p;
  p.max_delivery_attempts = 0;
  CHECK(refused(p).find("max.delivery.attempts=0") == 0);
  p = {};
  p.max_delivery_attempts = 101;
  CHECK(refused(p).find("max.delivery.attempts") == 0);
  p = {};
  p.retry_backoff_ms = -1;
  CHECK(refused(p).find("retry.backoff.ms=-1") == 0);
  p = {};
  p.retry_backoff_multiplier = 0.5;
  CHECK(refused(p).find("retry.backoff.multiplier") == 0);
  p = {};
  p.retry_backoff_multiplier = std::nan("");
  CHECK(refused(p).find("retry.backoff.multiplier") == 0);
  p = {};
  p.retry_backoff_ms = 5'000;
  p.retry_backoff_max_ms = 4'000;
  CHECK(refused(p).find("retry.backoff.max.ms=4000") == 0);
}

TEST_CASE("names: retry and dead-letter topics per topic and group") {
  const retry_policy d;
  CHECK(retry_topic_name(d, "orders", "billing") == "orders.billing.retry");
  CHECK(dead_letter_topic_name(d, "orders", "billing") == "orders.billing.dlq");
  CHECK(original_topic_of(d, "orders.billing.retry", "billing", false) == "orders");
  CHECK(original_topic_of(d, "orders.billing.dlq", "billing", true) == "orders");
  CHECK_FALSE(original_topic_of(d, "orders.billing.retry", "other", false));
  CHECK_FALSE(original_topic_of(d, "orders.billing.retry", "billing", true));
  CHECK_FALSE(original_topic_of(d, ".billing.retry", "billing", false));
}

TEST_CASE("names: templates of the retry and dead-letter topics") {
  retry_policy p;
  p.retry_topic_template = "retry-<group>-<topic>";
  p.dead_letter_topic_template = "<group>_dlt_<topic>_x";
  REQUIRE(validate(p).ok());
  CHECK(retry_topic_name(p, "orders", "billing") == "retry-billing-orders");
  CHECK(dead_letter_topic_name(p, "orders", "billing") == "billing_dlt_orders_x");
  CHECK(original_topic_of(p, "retry-billing-orders", "billing", false) == "orders");
  CHECK(original_topic_of(p, "billing_dlt_orders_x", "billing", true) == "orders");
  CHECK_FALSE(original_topic_of(p, "retry-billing-", "billing", false));
  CHECK_FALSE(original_topic_of(p, "retry-other-orders", "billing", false));
  CHECK_FALSE(original_topic_of(p, "orders.billing.dlq", "billing", true));   // the default's name is not this one's
  // A group name that looks like a placeholder is a name, not a placeholder.
  CHECK(retry_topic_name(p, "t", "<topic>") == "retry-<topic>-t");
  // Nacks and redrives use the policy's names.
  auto nacked = route_nack("billing", {"orders", model::partition_id{1}}, original_record(), "x", p, 0);
  REQUIRE(nacked.ok());
  CHECK(nacked->topic == "retry-billing-orders");
  model::record copy = original_record();
  copy.headers = nacked->headers;
  auto again = route_nack("billing", {"retry-billing-orders", model::partition_id{1}}, copy, "y", p, 0);
  REQUIRE_MESSAGE(again.ok(), again.error().message);
  CHECK(again->failed_attempt == 2);
  p.max_delivery_attempts = 1;
  auto dead = route_nack("billing", {"orders", model::partition_id{1}}, original_record(), "x", p, 0);
  REQUIRE(dead.ok());
  CHECK(dead->topic == "billing_dlt_orders_x");
  model::record letter = original_record();
  letter.headers = dead->headers;
  auto redriven = route_redrive(p, "billing", "billing_dlt_orders_x", model::partition_id{1}, letter, redrive_target::retry);
  REQUIRE(redriven.ok());
  CHECK(redriven->topic == "retry-billing-orders");
}

TEST_CASE("names: bad templates are refused naming the key and the rule") {
  auto refused = [](std::string retry, std::string dead) {
    retry_policy p;
    p.retry_topic_template = std::move(retry);
    p.dead_letter_topic_template = std::move(dead);
    auto r = validate(p);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  const std::string dlq(dead_letter_topic_template_default);
  const std::string retry(retry_topic_template_default);
  CHECK(refused(retry, dlq) == "ok");
  CHECK(refused("<topic>.retry", dlq).find("retry.topic.template=<topic>.retry: must hold <topic> and <group> once each") == 0);
  CHECK(refused("<topic>.<group>.<topic>", dlq).find("retry.topic.template") == 0);
  CHECK(refused(retry, "<topic>/<group>").find("dead.letter.topic.template=<topic>/<group>: character '/'") == 0);
  CHECK(refused(retry, "<topic>.<group> dlq").find("character ' '") != std::string::npos);
  CHECK(refused(retry, "__<topic>.<group>").find("may not start with \"__\"") != std::string::npos);
  CHECK(refused(retry, retry).find("dead.letter.topic.template") == 0);
  CHECK(refused(retry, retry).find("different from retry.topic.template") != std::string::npos);
  const std::string longest = "<topic><group>" + std::string(topic_template_chars_max - 14, 'x');
  CHECK(refused(longest, dlq) == "ok");
  CHECK(refused(longest + "x", dlq).find("longer than 200 characters") != std::string::npos);
}

TEST_CASE("nacks of dead letters and of retry records without their headers are refused") {
  model::record r = original_record();
  auto dlq = route_nack("g", {"orders.g.dlq", model::partition_id{0}}, r, "x", retry_policy{}, 0);
  REQUIRE_FALSE(dlq.ok());
  CHECK(dlq.error().message.find("redriven, not nacked") != std::string::npos);
  auto bare = route_nack("g", {"orders.g.retry", model::partition_id{0}}, r, "x", retry_policy{}, 0);
  REQUIRE_FALSE(bare.ok());
  CHECK(bare.error().message.find(std::string(original_topic_header)) != std::string::npos);
  // Another group's retry topic is a plain topic for this group.
  auto other = route_nack("h", {"orders.g.retry", model::partition_id{0}}, r, "x", retry_policy{}, 0);
  REQUIRE(other.ok());
  CHECK(other->topic == "orders.g.retry.h.retry");
}

TEST_CASE("a long reason is cut at a character boundary") {
  std::string reason(reason_bytes_max - 1, 'a');
  reason += "\xc3\xa9\xc3\xa9";   // two 2-byte characters across the bound
  auto r = route_nack("g", {"t", model::partition_id{0}}, original_record(), reason, retry_policy{}, 0);
  REQUIRE(r.ok());
  auto kept = last_header(r->headers, reason_header);
  REQUIRE(kept);
  CHECK(kept->size() == reason_bytes_max - 1);
}

TEST_CASE("redrive: to the original with a fresh count, or to the retry path at attempt 1") {
  retry_policy p;
  p.max_delivery_attempts = 1;
  auto dead = route_nack("g", {"orders", model::partition_id{2}}, original_record(), "boom", p, 0);
  REQUIRE(dead.ok());
  REQUIRE(dead->destination == nack_route::kind::dead_letter);
  model::record letter = original_record();
  letter.record_offset = model::offset{7};
  letter.headers = dead->headers;
  auto back = route_redrive(retry_policy{}, "g", "orders.g.dlq", model::partition_id{0}, letter, redrive_target::original);
  REQUIRE(back.ok());
  CHECK(back->topic == "orders");
  CHECK(back->partition == 2);
  CHECK_FALSE(last_header(back->headers, attempt_header));
  CHECK_FALSE(last_header(back->headers, reason_header));
  CHECK(last_header(back->headers, "trace") == "t-1");
  CHECK(last_header(back->headers, redrive_source_header) == "orders.g.dlq/0@7");
  auto retry = route_redrive(retry_policy{}, "g", "orders.g.dlq", model::partition_id{0}, letter, redrive_target::retry);
  REQUIRE(retry.ok());
  CHECK(retry->topic == "orders.g.retry");
  CHECK(last_header(retry->headers, attempt_header) == "1");
  CHECK(last_header(retry->headers, original_offset_header) == "41");
  model::record bare = original_record();
  CHECK_FALSE(route_redrive(retry_policy{}, "g", "orders.g.dlq", model::partition_id{0}, bare, redrive_target::original).ok());
  // A letter naming a topic whose dead letters go elsewhere was produced here by a client (the
  // breaker of session 30): never redriven, to either target.
  auto foreign = route_redrive(retry_policy{}, "g", "payments.g.dlq", model::partition_id{0}, letter,
                               redrive_target::original);
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.error().message.find("go to 'orders.g.dlq', not here") != std::string::npos);
  CHECK_FALSE(route_redrive(retry_policy{}, "g", "payments.g.dlq", model::partition_id{0}, letter, redrive_target::retry).ok());
}
