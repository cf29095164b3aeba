// InitProducerId (KIP-98) for idempotent producers: `enable.idempotence=true` clients ask for a
// producer id and epoch before their first Produce, then number each partition's batches; the
// partition's producer state (storage/producer_state.h) answers retries as duplicates.

#include "handlers.h"

namespace ringlog::kafka::detail {


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
    } else {
      out.producer_id = r->producer_id.value();
      out.producer_epoch = r->producer_epoch.value();
    }
    ctx.answer(out);
  });
}

}  // namespace ringlog::kafka::detail
