#pragma once
// The Kafka client listener's request side (design.md section 3, kafka_api: requests -> broker
// API calls), without sockets: the listener (listener.h) hands it each request frame and writes
// whatever it answers. Kept Asio-free so it is tested with encoded frames and a broker on a
// deterministic runtime, and so the Beast/Asio translation units stay few.
//
// Served APIs and versions: handled_apis() (what ApiVersions advertises). Every response is
// encoded at the request's version with Kafka's numeric error codes (broker::kafka_error_code).

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringlog/base/clock.h"
#include "ringlog/base/cpu_accounting.h"
#include "ringlog/broker/broker.h"
#include "ringlog/io/file.h"
#include "ringlog/protocol/frame.h"

namespace ringlog::kafka {

using bytes = protocol::bytes;

/// Bytes of Kafka Fetch answers' record sets, counted by the path they took (shown in /metrics as
/// ringlog_kafka_fetch_bytes_zero_copy_total and ringlog_kafka_fetch_bytes_copied_total).
/// Owned by whoever starts the listener; updated from any thread.
struct fetch_counters {
  /// Sent to a socket from segment files by reference (sendfile), never copied through user space.
  std::atomic<uint64_t> bytes_zero_copy{0};
  /// Read into memory and encoded into the answer (the copying path).
  std::atomic<uint64_t> bytes_copied{0};
};

/// What the listener tells clients about this node (Metadata, FindCoordinator, DescribeCluster).
struct handler_options {
  /// The listener this handler serves (listeners=NAME://HOST:PORT): Metadata, FindCoordinator and
  /// DescribeCluster answer other brokers' endpoints of this same listener name (Kafka's rule).
  std::string listener_name = "PLAINTEXT";
  /// Its security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
  std::string security_protocol = "PLAINTEXT";
  /// SASL_PLAINTEXT and SASL_SSL: a connection must authenticate before any request but
  /// ApiVersions, SaslHandshake and SaslAuthenticate is served.
  [[nodiscard]] bool sasl_required() const { return security_protocol.rfind("SASL_", 0) == 0; }
  int32_t node_id = 0;
  std::string cluster_id = "ringlog-cluster";
  std::string advertised_host = "127.0.0.1";   // advertised.listeners kafka://HOST:PORT, else listeners
  int32_t advertised_port = 9092;
  /// fetch.response.bytes.max: the most a Fetch response carries whatever the client asks.
  int64_t fetch_response_bytes_max = 64LL * 1024 * 1024;
  /// kafka.fetch.zero.copy: Fetch answers send record batches from the segment files by reference
  /// (sendfile) where they can (see response_frame); false = always copy them into the answer.
  bool fetch_zero_copy = true;
  /// fetch.wait.max.ms: the longest a Fetch is held, whatever max_wait_ms the client asks (the
  /// broker caps each long-poll by it too; this caps a Fetch waiting for min_bytes as a whole).
  int64_t fetch_wait_max_ms = 60000;
  /// Where Fetch counts its bytes; nullptr = not counted.
  fetch_counters* counters = nullptr;
  /// The time a Fetch waiting for min_bytes keeps its max_wait_ms by; nullptr = the system clock.
  const base::clock* clock = nullptr;
};

namespace constants {
/// Fetch requests waiting for min_bytes at once (Kafka's DelayedFetch in its fetch purgatory),
/// per listener. Each holds no record bytes while it waits, only one parked read per partition
/// (each counted in fetch.waiters.per.partition.max); past this a new one answers like
/// min_bytes=1 (as soon as any partition has data, or at max_wait_ms). 4096: the connections of a
/// large consumer fleet, each with one fetch in flight.
inline constexpr size_t delayed_fetches_max = 4096;
}  // namespace constants

/// One api the listener serves and the versions it advertises (a subrange of the codec's).
struct handled_api {
  int16_t api_key = 0;
  int16_t min_version = 0;
  int16_t max_version = 0;
};
/// Sorted by api key.
std::span<const handled_api> handled_apis();
/// The entry of `api_key`, or nullptr when the listener does not serve it.
const handled_api* find_handled_api(int16_t api_key);
/// The activity whose CPU a request of `api_key` counts to (base/cpu_accounting.h, issue 33):
/// produce for Produce, fetch for Fetch, none for the other apis.
std::optional<base::cpu_activity> data_activity(int16_t api_key);

/// Bytes of a file that a response frame sends by reference, spliced in at `memory_position`
/// (0..memory.size()) of the frame's in-memory bytes.
struct file_piece {
  size_t memory_position = 0;
  io::file_range range;
};

/// A whole response frame (size prefix, response header, body) as the listener sends it: the
/// bytes of `memory`, with the bytes of each file piece inserted at its memory_position (pieces
/// in ascending memory_position; several may share one). Only Fetch answers have file pieces (a
/// partition's records sent from the segment files, Kafka's zero-copy path); every other frame
/// is memory only. The size prefix counts the file pieces' bytes.
struct response_frame {
  bytes memory;
  std::vector<file_piece> file_pieces;
  /// KIP-219: the throttle time the answer carries (the most of the client quotas it exceeded),
  /// ms; 0 = none. The listener reads nothing more from the connection for this long (Kafka
  /// mutes the channel), and when `client_throttles` is false (a request version older than the
  /// one where the client waits by itself) it also holds the answer back that long first.
  int32_t throttle_time_ms = 0;
  bool client_throttles = true;

  response_frame() = default;
  response_frame(bytes m) : memory(std::move(m)) {}   // NOLINT: a memory-only frame
  /// Bytes on the wire: memory plus every file piece.
  [[nodiscard]] size_t size_bytes() const {
    size_t n = memory.size();
    for (const auto& p : file_pieces) n += p.range.length;
    return n;
  }
};

/// Answers one request: the whole response frame, or nullopt when the request takes no response
/// (Produce with acks=0). Called exactly once, from any thread.
using respond_fn = std::function<void(std::optional<response_frame> frame)>;

class request_handler {
 public:
  request_handler(broker::broker& b, handler_options options) : broker_(b), options_(std::move(options)) {}

  /// Handles one request frame (the bytes after the size prefix). Unknown apis and versions
  /// outside handled_apis() are answered with UNSUPPORTED_VERSION (35), as Kafka does: an
  /// ApiVersions v0 response under the request's correlation id (the only body every client can
  /// read whatever api it sent). Errors (nothing is answered; the listener closes the connection
  /// and logs the message): a header that does not decode, a body that does not decode at its
  /// version or leaves bytes behind. `client_host`: the client's address as ACL hosts name it
  /// ("127.0.0.1", "::1"; group members show it); `principal`: the connection's (the SASL
  /// login's, the mTLS-mapped subject's, else User:ANONYMOUS), which every request is
  /// authorized for (issue 30). `throttle_ms`, when given, gets the throttle time the request's
  /// quota asked as it was handed over (a Produce past producer_byte_rate, KIP-219), 0 = none:
  /// the listener stops reading at once, so a client cannot pipeline past its quota (Kafka reads
  /// one request of a connection at a time; this listener reads ahead).
  protocol::result<void> handle(std::span<const std::byte> frame, respond_fn respond, std::string_view client_host = {},
                                const security::kafka_principal& principal = {}, int64_t* throttle_ms = nullptr);

  [[nodiscard]] broker::broker& broker_api() { return broker_; }
  [[nodiscard]] const handler_options& options() const { return options_; }
  /// Fetch requests now waiting for min_bytes (at most constants::delayed_fetches_max).
  [[nodiscard]] std::atomic<size_t>& delayed_fetches() { return delayed_fetches_; }
  /// Replaces the options (e.g. the advertised port once an ephemeral one is bound). Only before
  /// the listener starts: requests read the options without a lock.
  void set_options(handler_options options) { options_ = std::move(options); }

 private:
  broker::broker& broker_;
  handler_options options_;
  std::atomic<size_t> delayed_fetches_{0};
};

/// Kafka's Uuid text form (22 characters of URL-safe base64 without padding) -> 16 bytes; the
/// zero uuid when the text is not one.
protocol::uuid parse_uuid(std::string_view text);

}  // namespace ringlog::kafka
