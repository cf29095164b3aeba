#pragma once
// The broker API's error codes: Kafka's error names in snake_case (Kafka protocol "Error Codes"),
// translated once at each boundary (storage -> broker -> HTTP). They are the partition module's
// (ringlog/partition/errc.h), whose appends and reads answer with them; the broker API names
// them here as broker::errc, broker::error and broker::result.

#include "ringlog/partition/errc.h"

namespace ringlog::broker {

using ::ringlog::partition::errc;
using ::ringlog::partition::errc_of_kafka_code;
using ::ringlog::partition::error;
using ::ringlog::partition::kafka_error_code;
using ::ringlog::partition::result;
using ::ringlog::partition::to_string;

}  // namespace ringlog::broker
