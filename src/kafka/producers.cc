// InitProducerId (KIP-98) for idempotent producers: `enable.idempotence=true` clients ask for a
// producer id and epoch before their first Produce, then number each partition's batches; the
// partition's producer state (storage/producer_state.h) answers retries as duplicates.

#include <spdlog/spdlog.h>

#include <chrono>

#include "handlers.h"
#include "ringlog/base/logfmt.h"

namespace ringlog::kafka::detail {

namespace {
/// The least time between two refusal warnings, ms: one line every 10 s tells the operator
/// without a line per client retry (the Java producer retries every 100 ms).
constexpr int64_t init_producer_id_refusal_log_interval_ms = 10'000;
std::atomic<int64_t> last_refusal_log_ms{-init_producer_id_refusal_log_interval_ms};
std::atomic<uint64_t> refusals_not_logged{0};
}  // namespace

void log_init_producer_id_refusal(const request_context& ctx, const std::string* transactional_id, const broker::error& e) {
  if (e.code != broker::errc::throttling_quota_exceeded) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t last = last_refusal_log_ms.load();
  if (now - last < init_producer_id_refusal_log_interval_ms || !last_refusal_log_ms.compare_exchange_strong(last, now)) {
    refusals_not_logged.fetch_add(1);
    return;
  }
  spdlog::warn("msg=\"InitProducerId refused\" error=THROTTLING_QUOTA_EXCEEDED reason=\"{}\" transactional_id=\"{}\" "
               "principal=\"{}\" client_id=\"{}\" peer={} refusals_not_logged={}",
               base::logfmt_escaped(e.message),
               base::logfmt_escaped(transactional_id ? *transactional_id : std::string("(none: idempotent)")),
               base::logfmt_escaped(ctx.principal.to_string()), base::logfmt_escaped(ctx.client_id), ctx.client_host,
               refusals_not_logged.exchange(0));
}


void handle_init_producer_id(const request_context& ctx, protocol::init_producer_id_request_data request) {
  protocol::init_producer_id_response_data out;
  out.producer_id = -1;
  out.producer_epoch = -1;
  if (request.transactional_id) return handle_init_producer_id_transactional(ctx, std::move(request));
  // IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679: Kafka's
  // authorizeByResourceType); else CLUSTER_AUTHORIZATION_FAILED, with the denial's audit line
  // (Kafka checks IDEMPOTENT_WRITE with logIfDenied=false: a producer let in by its topic WRITE
  // logged a denial before).
  if (!broker::may_init_idempotent_producer(ctx.broker_api().security(), ctx.principal, ctx.client_host)) {
    (void)ctx.authorized_cluster(security::acl_operation::idempotent_write);   // logs the refusal
    out.error_code = error_code::cluster_authorization_failed;
    return ctx.answer(out);
  }
  // Without a transactional.id Kafka hands out a fresh producer id with epoch 0 every time, also
  // to a producer that names its old id and epoch (v3+, KIP-360): the new id fences nothing, its
  // sequences simply start over.
  ctx.broker_api().init_producer_id([ctx, out](broker::result<broker::producer_identity> r) mutable {
    if (!r.ok()) {
      // NOT_CONTROLLER is not a code InitProducerId clients retry on; COORDINATOR_NOT_AVAILABLE is.
      out.error_code = r.error().code == broker::errc::not_controller ? error_code::coordinator_not_available
                                                                      : code_of(r.error());
      log_init_producer_id_refusal(ctx, nullptr, r.error());
    } else {
      out.producer_id = r->producer_id.value();
      out.producer_epoch = r->producer_epoch.value();
    }
    ctx.answer(out);
  });
}

}  // namespace ringlog::kafka::detail
