#include "ringlog/controller/producer_ids.h"

#include <algorithm>
#include <limits>
#include <string>

#include "ringlog/controller/constants.h"

namespace ringlog::controller {

result<producer_id_block> producer_id_control::generate_next_block(const controller::metadata_image& image,
                                                                   int32_t broker_id, int64_t broker_epoch) {
  // Blocks proposed but not yet applied count too: two requests in flight never get one block.
  const int64_t start = std::max(image.next_producer_id(), reserved_end_);
  if (start > std::numeric_limits<int64_t>::max() - constants::producer_id_block_size) {
    return error{errc::unknown_server_error, "producer ids exhausted: the next block from " + std::to_string(start) +
                                                 " would pass 2^63 - 1"};   // never in practice
  }
  reserved_end_ = start + constants::producer_id_block_size;
  producer_id_block block;
  block.producer_id_start = start;
  block.producer_id_len = static_cast<int32_t>(constants::producer_id_block_size);
  block.record.broker_id = broker_id;
  block.record.broker_epoch = broker_epoch;
  block.record.next_producer_id = reserved_end_;
  return block;
}

}  // namespace ringlog::controller
