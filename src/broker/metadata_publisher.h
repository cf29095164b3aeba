#pragma once
// The metadata publisher for the broker's view (issue 28 stage D): the class is the partition
// module's (ringlog/partition/metadata_publisher.h, a template over the view it publishes, so it
// never sees the broker's configs, ACLs and quotas); metadata.h names it `metadata_publisher` and
// this header gives its members and the host interface, which broker_parts implements
// (make_view, metadata_log_records and the topics' log configs over the broker's config, and the
// observers). The one instantiation is metadata_publisher.cc's. Private to the broker module.

#include "constants.h"
#include "metadata.h"
#include "partition.h"
#include "ringlog/partition/metadata_publisher.h"

namespace ringlog::broker::detail {

/// What the metadata publisher reaches in the broker (broker_parts implements it).
using metadata_publisher_host = ::ringlog::partition::metadata_publisher_host<metadata_view>;

}  // namespace ringlog::broker::detail

// Instantiated once, in metadata_publisher.cc.
extern template class ::ringlog::partition::metadata_publisher<::ringlog::broker::metadata_view>;
