#pragma once
// Producer ids for idempotent producers as the active controller hands them out (Kafka's
// ProducerIdControlManager, KIP-730's AllocateProducerIds): blocks of
// constants::producer_id_block_size ids, each committed as a ProducerIdsRecord to the metadata log,
// so no id is ever handed out twice, even across controller failovers (the image's
// next_producer_id is the end of every block committed so far). Pure: no I/O; the broker answers
// the request, commits the record and hands the block's ids out one at a time (producer_ids.cc).

#include <cstdint>

#include "ringlog/controller/errc.h"
#include "ringlog/controller/metadata_image.h"
#include "ringlog/protocol/wire.h"

namespace ringlog::controller {

/// One block for one broker: ids [producer_id_start, producer_id_start + producer_id_len), and the
/// record that commits it (next_producer_id = the block's end, exclusive).
struct producer_id_block {
  int64_t producer_id_start = 0;
  int32_t producer_id_len = 0;
  protocol::producer_ids_record record;
};

/// The active controller's producer-id state (controller shard only, in memory): the end of the
/// last block proposed, which may be ahead of the image while its record commits.
class producer_id_control {
 public:
  /// The next block for broker `broker_id` (in `broker_epoch`, carried into the record as the
  /// request said it; Kafka also refuses a stale epoch here, ringlog's brokers send -1), starting
  /// at the image's next_producer_id or past the last block proposed here, whichever is higher:
  /// a block proposed but not committed yet (or whose commit failed) is never handed out again.
  /// Reserves the block. Errors: unknown_server_error when the block's end would pass 2^63 - 1
  /// (the id space is exhausted, as Kafka says it; nothing is reserved).
  result<producer_id_block> generate_next_block(const controller::metadata_image& image, int32_t broker_id,
                                                int64_t broker_epoch);

 private:
  int64_t reserved_end_ = 0;   // the end (exclusive) of the last block proposed
};

}  // namespace ringlog::controller
