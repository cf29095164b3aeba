#pragma once
// The Kafka client listener's request side (design.md section 3, kafka_api: requests -> broker
// API calls), without sockets: the listener (listener.h) hands it each request frame and writes
// whatever it answers. Kept Asio-free so it is tested with encoded frames and a broker on a
// deterministic runtime, and so the Beast/Asio translation units stay few.
//
// Served APIs and versions: handled_apis() (what ApiVersions advertises). Every response is
// encoded at the request's version with Kafka's numeric error codes (broker::kafka_error_code).

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ringlog/broker/broker.h"
#include "ringlog/protocol/frame.h"

namespace ringlog::kafka {

using bytes = protocol::bytes;

/// What the listener tells clients about this node (Metadata, FindCoordinator, DescribeCluster).
struct handler_options {
  int32_t node_id = 0;
  std::string cluster_id = "ringlog-cluster";
  std::string advertised_host = "127.0.0.1";   // advertised.listeners kafka://HOST:PORT, else listeners
  int32_t advertised_port = 9092;
  /// fetch.response.bytes.max: the most a Fetch response carries whatever the client asks.
  int64_t fetch_response_bytes_max = 64LL * 1024 * 1024;
};

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

/// Answers one request: the whole response frame (size prefix, response header, body), or
/// nullopt when the request takes no response (Produce with acks=0). Called exactly once, from
/// any thread.
using respond_fn = std::function<void(std::optional<bytes> frame)>;

class request_handler {
 public:
  request_handler(broker::broker& b, handler_options options) : broker_(b), options_(std::move(options)) {}

  /// Handles one request frame (the bytes after the size prefix). Unknown apis and versions
  /// outside handled_apis() are answered with UNSUPPORTED_VERSION (35), as Kafka does: an
  /// ApiVersions v0 response under the request's correlation id (the only body every client can
  /// read whatever api it sent). Errors (nothing is answered; the listener closes the connection
  /// and logs the message): a header that does not decode, a body that does not decode at its
  /// version or leaves bytes behind. `client_host`: the client's address (group members show it).
  protocol::result<void> handle(std::span<const std::byte> frame, respond_fn respond, std::string_view client_host = {});

  [[nodiscard]] broker::broker& broker_api() { return broker_; }
  [[nodiscard]] const handler_options& options() const { return options_; }
  /// Replaces the options (e.g. the advertised port once an ephemeral one is bound). Only before
  /// the listener starts: requests read the options without a lock.
  void set_options(handler_options options) { options_ = std::move(options); }

 private:
  broker::broker& broker_;
  handler_options options_;
};

/// Kafka's Uuid text form (22 characters of URL-safe base64 without padding) -> 16 bytes; the
/// zero uuid when the text is not one.
protocol::uuid parse_uuid(std::string_view text);

}  // namespace ringlog::kafka
