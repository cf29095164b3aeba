#pragma once
// The partition module's bounds, each with why (style.md: every bound named in a constants.h).

#include <cstddef>
#include <cstdint>

#include "ringlog/model/record.h"

namespace ringlog::partition {

/// The shard that runs the metadata quorum's state machine and the active controller: the
/// metadata publisher applies entries and answers their writers there.
inline constexpr size_t controller_shard = 0;

/// Stray log directories of one name a restart moves aside ("<name>.<id>-stray", then ".1" to
/// ".16"): each sweep keeps every copy, and past this many the directory is left in place with a line.
inline constexpr int max_stray_copies = 16;
/// How long a group coordinator's write to __consumer_offsets waits for the in-sync replicas
/// (Kafka's offsets.commit.timeout.ms default).
inline constexpr int64_t internal_append_timeout_ms = 5000;
/// How long after start the first retention check runs (then every log.retention.check.interval.ms;
/// sooner when that interval is shorter). Kafka's LogManager schedules its first retention check
/// InitialTaskDelayMs (30 s) after start, not a whole interval (5 min) later: a node restarted more
/// often than the interval would otherwise never apply retention. 30 s lets the log recovery and
/// the first leader elections settle first, as in Kafka.
inline constexpr int64_t retention_first_check_delay_ms = 30'000;
/// Reads a shard keeps for fetches that ask for the same records (recent_read): live tails of a
/// partition sit at one or two positions, so a few suffice, and the linear search stays trivial.
inline constexpr size_t recent_reads_max = 8;
/// A read that takes more memory than this is not kept: bounds a shard's recent reads to
/// recent_reads_max x 1 MiB. Counted as payload (key + value + header bytes) plus
/// recent_read_record_bytes per record, so many empty records count too.
inline constexpr size_t recent_read_bytes_max = 1 << 20;
/// A decoded record's own size and its allocations' headers, beyond its payload.
inline constexpr size_t recent_read_record_bytes = sizeof(model::record) + 64;
/// A decoded header's own size and its allocations' headers, beyond its key and value bytes.
inline constexpr size_t decoded_header_bytes = sizeof(model::record_header) + 32;
/// Memory one fetch's decoded records may take (decode_fetched_records), counted as payload plus
/// recent_read_record_bytes per record and decoded_header_bytes per header, whatever max_bytes
/// says (max_bytes counts payload only, up to fetch.response.bytes.max): 10,000 empty headers a
/// record are ~20 KB on the wire and ~1 MB decoded, and a 64 MiB read of such records took
/// 2.7 GB (the breaker of session 24). At least one record is always returned.
inline constexpr size_t fetch_decoded_bytes_max = 64u << 20;
/// Apply failures of metadata entries kept for proposers that have not asked yet (a forwarded
/// entry's outcome is learnt from the local apply, which may come before the leader's answer).
/// Oldest dropped (metadata_apply_queue).
inline constexpr size_t entry_failures_max = 1024;
/// How long a writer waits for its committed metadata entry to be applied on this node
/// (metadata_apply_queue::await_applied): an admin call's own timeout.
inline constexpr int64_t metadata_write_timeout_ms = 30000;

}  // namespace ringlog::partition
