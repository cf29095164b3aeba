// Producer ids for idempotent producers (KIP-98): the active controller hands out blocks of
// producer_id_block_size ids, each committed as a ProducerIdsRecord to the metadata log (KIP-730's
// AllocateProducerIds; the decision, Kafka's ProducerIdControlManager, is
// controller::producer_id_control in controller/producer_ids.h), so no id is ever handed out twice,
// even across controller failovers. Each broker takes one block at a time and gives out its ids
// (InitProducerId without a transactional.id, the HTTP producer sessions). A broker that is not
// the controller asks it over the cluster listener, as it does AlterPartition; on a single node
// the one-voter quorum serves the same request on the same code path.

#include "broker_impl.h"

namespace ringlog::broker {
namespace detail {
namespace {

constexpr int16_t allocate_producer_ids_version = 0;
constexpr int16_t allocate_producer_ids_api_key = protocol::allocate_producer_ids_request_data::api_key;
/// How long a broker waits for the controller's block (commit plus apply), ms.
constexpr int64_t allocate_producer_ids_timeout_ms = 10000;
constexpr int16_t code_none = 0;
constexpr int16_t code_unknown_server_error = -1;

}  // namespace

// ---------------------------------------------------------------- the broker's side

void broker_impl::init_producer_id(std::function<void(result<producer_identity>)> done) {
  if (stopping_) return done(error{errc::broker_not_available, "the broker is shutting down"});
  {
    std::lock_guard lock(producer_ids_mutex_);
    if (producer_ids_next_ < producer_ids_end_) {
      producer_identity id{model::producer_id{producer_ids_next_++}, model::producer_epoch{0}};
      return done(id);
    }
    // The block is used up: wait for the next one (one request at a time; the others queue).
    if (producer_id_waiters_.size() >= producer_id_waiters_max) {
      return done(error{errc::throttling_quota_exceeded,
                        std::to_string(producer_id_waiters_max) +
                            " producer id requests already wait for a block from the controller: retry"});
    }
    producer_id_waiters_.push_back(std::move(done));
    if (producer_ids_requesting_) return;
    producer_ids_requesting_ = true;
  }
  deps_.runtime.post(controller_shard, [this] { request_producer_id_block(); });
}

void broker_impl::request_producer_id_block() {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  auto on_block = [this](result<std::pair<int64_t, int32_t>> block) {
    std::vector<std::function<void(result<producer_identity>)>> answered;
    std::vector<result<producer_identity>> answers;
    {
      std::lock_guard lock(producer_ids_mutex_);
      producer_ids_requesting_ = false;
      if (block.ok()) {
        producer_ids_next_ = block->first;
        producer_ids_end_ = block->first + block->second;
      }
      while (!producer_id_waiters_.empty() && (!block.ok() || producer_ids_next_ < producer_ids_end_)) {
        answered.push_back(std::move(producer_id_waiters_.front()));
        producer_id_waiters_.pop_front();
        if (block.ok()) {
          answers.emplace_back(producer_identity{model::producer_id{producer_ids_next_++}, model::producer_epoch{0}});
        } else {
          answers.emplace_back(block.error());
        }
      }
    }
    for (size_t i = 0; i < answered.size(); ++i) answered[i](std::move(answers[i]));
    // Waiters left over (a block smaller than the queue) ask again.
    bool again = false;
    {
      std::lock_guard lock(producer_ids_mutex_);
      if (!producer_id_waiters_.empty() && !producer_ids_requesting_) {
        producer_ids_requesting_ = true;
        again = true;
      }
    }
    if (again) deps_.runtime.post(controller_shard, [this] { request_producer_id_block(); });
  };
  protocol::allocate_producer_ids_request_data request;
  request.broker_id = config_.node_id;
  const int32_t controller = quorum_ ? quorum_->leader_id() : -1;
  if (controller == config_.node_id) {
    return allocate_producer_ids(request, [on_block](protocol::allocate_producer_ids_response_data r) {
      if (r.error_code != code_none) {
        return on_block(error{errc_of_kafka_code(r.error_code),
                              "the controller (this node) could not allocate producer ids: Kafka error " +
                                  std::to_string(r.error_code)});
      }
      on_block(std::make_pair(r.producer_id_start, r.producer_id_len));
    });
  }
  if (controller < 0 || deps_.cluster_transport == nullptr) {
    return on_block(error{errc::not_controller, "no active controller now to allocate producer ids: retry"});
  }
  deps_.cluster_transport->send(
      controller, allocate_producer_ids_api_key, allocate_producer_ids_version,
      encode_body(request, allocate_producer_ids_version), allocate_producer_ids_timeout_ms,
      [on_block, controller](rpc::result<protocol::bytes> r) {
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

result<void> broker_impl::check_producer_id(model::producer_id id) const {
  // This node's image may not have applied the block another node handed the id from yet (the
  // controller answers once it applied it): such a produce hears "retry" in the message. Ids of
  // this node's own block are known at once.
  int64_t next = view()->image->next_producer_id();
  {
    std::lock_guard lock(producer_ids_mutex_);
    next = std::max(next, producer_ids_end_);
  }
  if (id.value() < 0 || id.value() >= next) {
    return error{errc::unknown_producer_id,
                 "producer id " + std::to_string(id.value()) + " was not handed out by this cluster (ids so far are below " +
                     std::to_string(next) + " as this broker knows): create a producer session first, or retry if "
                     "it was created on another broker a moment ago"};
  }
  return base::ok_v;
}

// ---------------------------------------------------------------- the controller's side

void broker_impl::handle_allocate_producer_ids(const protocol::request_header_data& header, std::vector<std::byte> body,
                                               rpc::respond_fn respond) {
  protocol::reader rd(body);
  auto request = protocol::allocate_producer_ids_request_data::decode(rd, header.request_api_version);
  if (!request.ok()) return;   // unanswered: the broker's request times out and it asks again
  allocate_producer_ids(request.value(), [header, respond](protocol::allocate_producer_ids_response_data r) mutable {
    respond_with(header, r, respond);
  });
}

void broker_impl::allocate_producer_ids(const protocol::allocate_producer_ids_request_data& request,
                                        std::function<void(protocol::allocate_producer_ids_response_data)> done) {
  RINGLOG_ASSERT_OP(deps_.runtime.current_shard(), ==, controller_shard);
  protocol::allocate_producer_ids_response_data response;
  if (!quorum_ || quorum_->leader_id() != config_.node_id) {
    response.error_code = kafka_code_not_controller;
    return done(std::move(response));
  }
  auto block = producer_id_control_.generate_next_block(*controller_view_->image, request.broker_id, request.broker_epoch);
  if (!block.ok()) {
    response.error_code = static_cast<int16_t>(kafka_error_code(from_controller(block.error()).code));
    return done(std::move(response));
  }
  commit_records({block->record}, [done = std::move(done), response = std::move(response),
                                   start = block->producer_id_start, len = block->producer_id_len](result<void> r) mutable {
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

}  // namespace detail
}  // namespace ringlog::broker
