#pragma once
// CPU per byte by activity (issue 33): how many CPU seconds the broker's threads spend producing,
// replicating (leader and follower side) and serving client fetches, next to the bytes each moved,
// so that CPU seconds per GB is a ratio of two counters of /metrics:
//   ringlog_cpu_seconds_total{activity=...} / ringlog_activity_bytes_total{activity=...}.
// A cpu_scope brackets one piece of work on the thread doing it and reads the thread's CPU clock
// (clock_gettime(CLOCK_THREAD_CPUTIME_ID): user + system time of this thread only, so a sendfile
// or write(2) inside the scope counts, another thread's work does not) at both ends. Scopes nest:
// an inner scope's time goes to its activity and is taken out of the enclosing one, so no
// nanosecond counts twice. Like latency_stages.h, counting takes no lock: each thread adds to its
// own slot (relaxed atomics), a scrape sums the slots.
//
// Not counted: work outside a scope (the event loop's own polling, timers, metadata, heartbeats),
// kernel threads (io_uring workers, the block layer's fdatasync work, softirq network
// processing), and threads that never open a scope. The bench compares the sum with the process's
// whole CPU (bench/run-capacity-bench.py) so the unattributed share is a figure, not a guess.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ringlog::base {

enum class cpu_activity : uint8_t {
  /// Client appends: the Kafka Produce request decoded and dispatched, the append on the
  /// partition's shard (validation, offsets, the copy into the log), the answer written.
  /// Bytes: record batch bytes appended to a leader's log (any door: Kafka, HTTP, WebSocket).
  produce,
  /// The leader's side of replication: a follower's Fetch decoded, the log read for it.
  /// Bytes: record batch bytes handed to followers.
  replicate_leader,
  /// The follower's side: the leader's answer decoded, appended (append_replicated), synced,
  /// the next fetch sent. Bytes: record batch bytes appended from the leader.
  replicate_follower,
  /// Client fetches (consumers): the Kafka Fetch decoded, the read on the partition's shard, the
  /// answer written (sendfile of the segment bytes). Bytes: Kafka Fetch answer frames written.
  fetch,
};
inline constexpr size_t cpu_activity_count = 4;

/// The `activity` label: "produce", "replicate_leader", "replicate_follower", "fetch".
std::string_view cpu_activity_label(cpu_activity activity);

struct cpu_activity_snapshot {
  uint64_t cpu_ns = 0;    ///< thread CPU time inside scopes of the activity (nested scopes excluded)
  uint64_t bytes = 0;     ///< bytes counted for the activity (count_activity_bytes)
  uint64_t scopes = 0;    ///< scopes closed
};

/// This thread's CPU time, ns (clock_gettime(CLOCK_THREAD_CPUTIME_ID)). A system call on Linux
/// (the vDSO serves only the wall clocks): docs/metrics.md gives its measured cost.
int64_t thread_cpu_ns();

/// Adds `bytes` to the activity's byte counter. Lock-free.
void count_activity_bytes(cpu_activity activity, uint64_t bytes);

/// Every thread's counts of `activity` added together (a scrape may see a scope half-counted).
cpu_activity_snapshot read_cpu_activity(cpu_activity activity);

/// Counts the thread CPU time from construction to destruction to `activity`, less the time of
/// scopes opened inside it on the same thread; no activity (nullopt) counts nothing and reads no
/// clock. Not copyable or movable: it lives on the stack of the work it measures.
class cpu_scope {
 public:
  explicit cpu_scope(std::optional<cpu_activity> activity);
  ~cpu_scope();
  cpu_scope(const cpu_scope&) = delete;
  cpu_scope& operator=(const cpu_scope&) = delete;

 private:
  std::optional<cpu_activity> activity_;
  int64_t started_ns_ = 0;
  int64_t nested_ns_ = 0;   ///< CPU time of scopes inside this one (counted to theirs)
  cpu_scope* enclosing_ = nullptr;
};

}  // namespace ringlog::base
