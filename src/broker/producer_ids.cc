// Producer ids for idempotent producers (KIP-98), the broker's side (producer_ids.h): the active
// controller hands out blocks of producer_id_block_size ids, each committed as a ProducerIdsRecord
// to the metadata log (KIP-730's AllocateProducerIds, answered in producer_id_blocks.cc), so no id
// is ever handed out twice, even across controller failovers. Each broker takes one block at a
// time and gives out its ids (InitProducerId without a transactional.id, the HTTP producer
// sessions).

#include "producer_ids.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "constants.h"
#include "rpc_messages.h"
#include "ringlog/base/assert.h"
#include "ringlog/broker/errc.h"

namespace ringlog::broker::detail {
namespace {

constexpr int16_t allocate_producer_ids_version = 0;
constexpr int16_t allocate_producer_ids_api_key = protocol::allocate_producer_ids_request_data::api_key;
/// How long a broker waits for the controller's block (commit plus apply), ms.
constexpr int64_t allocate_producer_ids_timeout_ms = 10000;
constexpr int16_t code_none = 0;

}  // namespace

producer_id_manager::producer_id_manager(int32_t node_id, active_controller& controller, runtime::shard_runtime& runtime,
                                         rpc::transport* cluster_transport, const std::atomic<bool>& stopping)
    : node_id_(node_id),
      controller_(controller),
      runtime_(runtime),
      cluster_transport_(cluster_transport),
      stopping_(stopping) {}

void producer_id_manager::init_producer_id(std::function<void(result<producer_identity>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  {
    std::lock_guard lock(mutex_);
    if (next_ < end_) {
      producer_identity id{model::producer_id{next_++}, model::producer_epoch{0}};
      return done(id);
    }
    // The block is used up: wait for the next one (one request at a time; the others queue).
    if (waiters_.size() >= producer_id_waiters_max) {
      return done(error{errc::throttling_quota_exceeded,
                        std::to_string(producer_id_waiters_max) +
                            " producer id requests already wait for a block from the controller: retry"});
    }
    waiters_.push_back(std::move(done));
    if (requesting_) return;
    requesting_ = true;
  }
  runtime_.post(controller_shard, [this] { request_block(); });
}

void producer_id_manager::on_block(result<std::pair<int64_t, int32_t>> block) {
  std::vector<std::function<void(result<producer_identity>)>> answered;
  std::vector<result<producer_identity>> answers;
  {
    std::lock_guard lock(mutex_);
    requesting_ = false;
    if (block.ok()) {
      next_ = block->first;
      end_ = block->first + block->second;
    }
    while (!waiters_.empty() && (!block.ok() || next_ < end_)) {
      answered.push_back(std::move(waiters_.front()));
      waiters_.pop_front();
      if (block.ok()) {
        answers.emplace_back(producer_identity{model::producer_id{next_++}, model::producer_epoch{0}});
      } else {
        answers.emplace_back(block.error());
      }
    }
  }
  for (size_t i = 0; i < answered.size(); ++i) answered[i](std::move(answers[i]));
  // Waiters left over (a block smaller than the queue) ask again.
  bool again = false;
  {
    std::lock_guard lock(mutex_);
    if (!waiters_.empty() && !requesting_) {
      requesting_ = true;
      again = true;
    }
  }
  if (again) runtime_.post(controller_shard, [this] { request_block(); });
}

void producer_id_manager::request_block() {
  RINGLOG_ASSERT_OP(runtime_.current_shard(), ==, controller_shard);
  protocol::allocate_producer_ids_request_data request;
  request.broker_id = node_id_;
  const int32_t controller = controller_.controller_id();
  if (controller == node_id_) {
    return controller_.allocate_producer_ids(request, [this](protocol::allocate_producer_ids_response_data r) {
      if (r.error_code != code_none) {
        return on_block(error{errc_of_kafka_code(r.error_code),
                              "the controller (this node) could not allocate producer ids: Kafka error " +
                                  std::to_string(r.error_code)});
      }
      on_block(std::make_pair(r.producer_id_start, r.producer_id_len));
    });
  }
  if (controller < 0 || cluster_transport_ == nullptr) {
    return on_block(error{errc::not_controller, "no active controller now to allocate producer ids: retry"});
  }
  cluster_transport_->send(
      controller, allocate_producer_ids_api_key, allocate_producer_ids_version,
      encode_body(request, allocate_producer_ids_version), allocate_producer_ids_timeout_ms,
      [this, controller](rpc::result<protocol::bytes> r) {
        if (!r.ok()) {
          return on_block(error{errc::not_controller, "AllocateProducerIds to controller " + std::to_string(controller) +
                                                          " failed: " + r.error().message + "; retry"});
        }
        protocol::reader rd(r.value());
        auto decoded = protocol::allocate_producer_ids_response_data::decode(rd, allocate_producer_ids_version);
        if (!decoded.ok()) return on_block(error{errc::unknown_server_error, decoded.error().message});
        if (decoded->error_code != code_none) {
          return on_block(error{errc_of_kafka_code(decoded->error_code),
                                "controller " + std::to_string(controller) +
                                    " refused AllocateProducerIds: Kafka error " + std::to_string(decoded->error_code)});
        }
        on_block(std::make_pair(decoded->producer_id_start, decoded->producer_id_len));
      });
}

result<void> producer_id_manager::check_producer_id(model::producer_id id, int64_t image_next_producer_id) const {
  // This node's image may not have applied the block another node handed the id from yet (the
  // controller answers once it applied it): such a produce hears "retry" in the message. Ids of
  // this node's own block are known at once.
  int64_t next = image_next_producer_id;
  {
    std::lock_guard lock(mutex_);
    next = std::max(next, end_);
  }
  if (id.value() < 0 || id.value() >= next) {
    return error{errc::unknown_producer_id,
                 "producer id " + std::to_string(id.value()) + " was not handed out by this cluster (ids so far are below " +
                     std::to_string(next) + " as this broker knows): create a producer session first, or retry if "
                     "it was created on another broker a moment ago"};
  }
  return base::ok_v;
}

}  // namespace ringlog::broker::detail
