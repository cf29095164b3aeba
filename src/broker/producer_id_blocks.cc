// Producer id blocks on the active controller (KIP-730's AllocateProducerIds; Kafka's
// ProducerIdControlManager decides, here controller::producer_id_control in
// controller/producer_ids.h): the next block of producer_id_block_size ids is committed as a
// ProducerIdsRecord to the metadata log before it is answered, so no id is ever handed out twice,
// even across controller failovers. Brokers ask over the cluster listener; this node's own broker
// calls allocate_producer_ids directly (producer_ids.cc has the broker's side).

#include "active_controller.h"
#include "cluster_requests.h"
#include "constants.h"
#include "metadata_publisher.h"
#include "rpc_messages.h"
#include "ringlog/base/assert.h"
#include "ringlog/protocol/error_codes.h"

namespace ringlog::broker::detail {
namespace {

/// Kafka's UNKNOWN_SERVER_ERROR: a commit that failed with no closer code.
constexpr int16_t code_unknown_server_error = -1;

}  // namespace

void active_controller::handle_allocate_producer_ids(const protocol::request_header_data& header,
                                                     std::vector<std::byte> body, rpc::respond_fn respond) {
  answer_request<protocol::allocate_producer_ids_request_data>(
      header, body, std::move(respond), [this](const auto& request, auto answer) {
        allocate_producer_ids(request, std::move(answer));
      });
}

void active_controller::allocate_producer_ids(const protocol::allocate_producer_ids_request_data& request,
                                              std::function<void(protocol::allocate_producer_ids_response_data)> done) {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  protocol::allocate_producer_ids_response_data response;
  if (!active()) {
    response.error_code = protocol::error_codes::code_not_controller;
    return done(std::move(response));
  }
  auto block = producer_id_control_.generate_next_block(*metadata_.controller_view()->image, request.broker_id,
                                                        request.broker_epoch);
  if (!block.ok()) {
    response.error_code = static_cast<int16_t>(kafka_error_code(from_controller(block.error()).code));
    return done(std::move(response));
  }
  parts_.writer.commit_records({block->record}, [done = std::move(done), response = std::move(response),
                                         start = block->producer_id_start,
                                         len = block->producer_id_len](result<void> r) mutable {
    if (!r.ok()) {
      response.error_code = static_cast<int16_t>(kafka_error_code(r.error().code));
      if (response.error_code == 0) response.error_code = code_unknown_server_error;
    } else {
      response.producer_id_start = start;
      response.producer_id_len = len;
    }
    done(std::move(response));
  });
}

}  // namespace ringlog::broker::detail
