#pragma once
// The partition module's replica class (ringlog/partition/partition.h, issue 28 stage B) under
// the names the broker's files use: partition_runtime and its waiters, partition_context, the
// kept reads, a shard's partition_manager (its replica_services, log_directory, the
// leadership_observer and replica_host it reports to, run_on_shards, remove_stray_replicas), the
// metadata publisher's parts (metadata_apply_queue, shard_views), the log cleaner (compaction),
// the replica fetcher and the leader's side of replica fetches (replica_fetcher,
// replica_fetch_server, their replica_fetcher_host and replica_fetch_settings), partition_key,
// decode_fetched_records and from_storage.

#include "ringlog/partition/compaction.h"
#include "ringlog/partition/metadata_apply_queue.h"
#include "ringlog/partition/partition.h"
#include "ringlog/partition/partition_manager.h"
#include "ringlog/partition/replica_fetcher.h"
#include "ringlog/partition/shard_views.h"

namespace ringlog::broker::detail {

using ::ringlog::partition::ack_waiter;
using ::ringlog::partition::after_failure;
using ::ringlog::partition::check_current_leader_epoch;
using ::ringlog::partition::compaction;
using ::ringlog::partition::decode_fetched_records;
using ::ringlog::partition::epoch_of_offset;
using ::ringlog::partition::fetch_waiter;
using ::ringlog::partition::leadership_observer;
using ::ringlog::partition::log_directory;
using ::ringlog::partition::metadata_apply_queue;
using ::ringlog::partition::from_storage;
using ::ringlog::partition::partition_context;
using ::ringlog::partition::partition_key;
using ::ringlog::partition::partition_manager;
using ::ringlog::partition::ordered_step;
using ::ringlog::partition::partition_runtime;
using ::ringlog::partition::recent_read;
using ::ringlog::partition::remove_stray_replicas;
using ::ringlog::partition::replica_host;
using ::ringlog::partition::replica_services;
using ::ringlog::partition::run_in_order;
using ::ringlog::partition::run_on_shards;
using ::ringlog::partition::shard_of;
using ::ringlog::partition::shard_views;
using ::ringlog::partition::replica_fetch_server;
using ::ringlog::partition::replica_fetch_settings;
using ::ringlog::partition::replica_fetch_waiter;
using ::ringlog::partition::replica_fetcher;
using ::ringlog::partition::replica_fetcher_host;
using ::ringlog::partition::txn_verification_guard;
using ::ringlog::partition::txn_verification_needed;
using ::ringlog::partition::txn_verifications_per_partition_max;

}  // namespace ringlog::broker::detail
