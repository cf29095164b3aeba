#pragma once
// A partition's reads and appends as the broker API names them too (the broker re-exports these
// types in ringlog/broker/broker.h): what a fetch asks and is answered, Kafka Produce of one
// partition's batches and its answer, acks and the isolation level. Here, below the broker,
// because the partition module (issue 28 stage B) serves them and never includes ringlog/broker.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringlog/io/file.h"
#include "ringlog/model/record.h"
#include "ringlog/model/types.h"

namespace ringlog::partition {

enum class acks_mode : int8_t { none = 0, leader = 1, all = -1 };

/// Which records a reader sees (Kafka's isolation.level, KIP-98). read_uncommitted (the
/// default, as in Kafka) reads up to the high watermark: records of open and aborted
/// transactions included. read_committed reads up to the last stable offset (below the first
/// offset of every open transaction, never past the high watermark) and never sees a record of
/// an aborted transaction: decoded reads drop them in the broker; Kafka Fetch (raw_batches)
/// returns them with fetch_response::aborted_transactions so the client drops them, as Kafka does.
enum class isolation_level : int8_t { read_uncommitted = 0, read_committed = 1 };

/// "read_uncommitted" / "read_committed" (Kafka's isolation.level values).
std::string_view to_string(isolation_level level);

/// A transaction of one producer that was aborted on a partition (Kafka's FetchResponse
/// AbortedTransaction): its records start at `first_offset` and end at its abort marker.
struct aborted_transaction {
  model::producer_id producer_id{model::no_producer_id};
  model::offset first_offset{0};
  bool operator==(const aborted_transaction&) const = default;
};

/// What a fetch of one partition asks (Kafka's FetchParams with its PartitionData): everything
/// of the broker API's fetch_request but the caller's principal, which the broker checks before
/// the partition sees the fetch. A parked fetch (fetch_waiter) keeps these.
struct fetch_params {
  model::topic_partition partition;
  model::offset fetch_offset{0};
  int32_t max_bytes = 1024 * 1024;   // about; at least one record is always returned if any
  int64_t max_wait_ms = 0;           // long-poll up to this when nothing is there (capped by config)
  int32_t min_bytes = 1;
  /// Kafka Fetch (the kafka module): answer with the stored batches (fetch_response::batches)
  /// instead of decoded records; `max_bytes` then bounds whole batches (at least one is returned
  /// when any exists below the high watermark, as Kafka's KIP-74 does).
  bool raw_batches = false;
  /// With raw_batches: the batches may come back as file ranges (fetch_response::file_ranges)
  /// instead of bytes, for a front end that sends them to a socket by reference (Kafka Fetch's
  /// zero-copy path). Only where the partition's log lives on OS files on this broker; otherwise
  /// (a simulated file system, a partition read on another broker) the answer carries bytes.
  bool file_ranges = false;
  /// read_committed: nothing at or above the last stable offset, and (decoded records) no
  /// record of an aborted transaction.
  isolation_level isolation = isolation_level::read_uncommitted;
  /// A fetch at or past the high watermark of a new leader still establishing it (KIP-207):
  /// true (the HTTP and WebSocket long-polls, also when forwarded) parks it until the high
  /// watermark is known or max_wait_ms passed (then it is answered empty); false (the Kafka door)
  /// answers offset_not_available at once, as Kafka does.
  bool wait_while_end_unknown = true;
  /// The partition's leader epoch as a Kafka client believes it (Fetch v9+'s
  /// CurrentLeaderEpoch, KIP-320): another epoch than the broker's is refused
  /// (check_current_leader_epoch). -1: not checked (older clients, HTTP, WebSocket).
  int32_t current_leader_epoch = -1;
};

struct fetch_response {
  std::vector<model::record> records;   // records >= fetch_offset, < high_watermark
  model::offset high_watermark{0};
  model::offset log_start_offset{0};
  model::offset log_end_offset{0};
  /// Names the log read the records came from (0 when there are none): responses with the same
  /// read_id hold the same records, because fetches of a partition at the same offset with the
  /// same max_bytes share a read while its high watermark and log start offset stay put (100
  /// subscribers of one partition after each append). A front end may encode such records once.
  uint64_t read_id = 0;
  /// With fetch_request::raw_batches: whole v2 batches as stored, concatenated (the first may
  /// start below fetch_offset; none starts at or above high_watermark). `records` is empty then.
  model::bytes batches;
  /// With fetch_request::file_ranges, instead of `batches` (which is then empty): the same whole
  /// batches as ranges of segment files, one range per batch, in offset order. Each range holds
  /// its file open, so it stays readable when retention deletes the segment meanwhile.
  std::vector<io::file_range> file_ranges;
  size_t file_ranges_bytes = 0;   // sum of the file ranges' lengths
  /// Decoded reads: where this reader's next fetch starts. One past the last record returned;
  /// with no record returned, past the batches that held none for this reader (transaction
  /// markers, records of aborted transactions), so a reader never stalls at a marker; else
  /// fetch_offset. Readers take max(their own next offset, this). Raw reads (raw_batches): one
  /// past the last offset of the last batch returned, else fetch_offset (Kafka Fetch's wait for
  /// min_bytes watches the partition from there).
  model::offset next_fetch_offset{0};
  /// The partition's last stable offset (KIP-98): below the first offset of every open
  /// transaction, never above high_watermark (== high_watermark with no open transaction).
  model::offset last_stable_offset{0};
  /// A parked fetch answered because new data arrived: when its wake-up started
  /// (base::monotonic_ns), for /metrics' fetch wake-up latency; 0 otherwise.
  int64_t woken_ns = 0;
  /// read_committed with raw_batches: the aborted transactions whose records overlap the
  /// returned batches (first_offset ascending; Kafka's FetchResponse aborted_transactions), for
  /// the client to drop. Empty otherwise (decoded read_committed records are dropped here).
  std::vector<aborted_transaction> aborted_transactions;
};

/// Kafka Produce of one partition (the kafka module): the client's record batches appended as
/// sent, after validation (codec::validate_batch and every record decoded), with offsets assigned
/// by the log and, for topics with message.timestamp.type=LogAppendTime, the broker's time.
struct produce_batches_request {
  model::topic_partition partition;
  std::vector<model::bytes> batches;   // each exactly one whole v2 batch, in append order
  acks_mode acks = acks_mode::all;
  int64_t timeout_ms = 30000;
  /// Produce v3+'s transactional_id (empty: none). A producer's first transactional batch of a
  /// transaction on this partition is appended only once the id's coordinator confirms the
  /// partition is in that ongoing transaction (KIP-890 part 1; invalid_txn_state otherwise).
  std::string transactional_id;
  /// When the front end decoded the request (base::monotonic_ns), for /metrics' produce latency
  /// breakdown; 0 = not stamped (nothing is observed from it).
  int64_t received_ns = 0;
};

struct produce_batches_response {
  model::offset base_offset{-1};        // of the first batch; -1 with acks=none
  model::timestamp_ms log_append_time = model::no_timestamp;  // -1 unless LogAppendTime or a duplicate (its time)
  model::offset log_start_offset{-1};
};

/// What OffsetForLeaderEpoch answers for one partition (Kafka API 23; KIP-101, KIP-279,
/// KIP-320): the largest leader epoch <= the one asked that the leader's log knows, and the
/// offset where it ends (exclusive: the start of the next larger epoch, or the log end offset for
/// the current one). Both -1 (Kafka's UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) when the log
/// knows no such epoch.
struct epoch_end_offset {
  model::leader_epoch leader_epoch{-1};
  model::offset end_offset{-1};
  bool operator==(const epoch_end_offset&) const = default;
};

}  // namespace ringlog::partition
