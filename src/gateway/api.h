#pragma once

#include <functional>
// The REST routes (issue 3 "REST API"): Confluent REST Proxy v2/v3 where they overlap, Redpanda's
// direct partition reads, /v1/health and /metrics. A thin adapter: parse and check the request,
// call the broker API once or a few times, shape the answer. No Beast here (see http_types.h).

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http_auth.h"
#include "http_quotas.h"
#include "http_types.h"
#include "metrics.h"
#include "request_parsing.h"
#include "response_budget.h"
#include "ringlog/broker/broker.h"

namespace ringlog::gateway {

class http_forwarder;

struct api_options {
  /// Bounds of produce requests (produce.records.max, message.max.bytes).
  produce_limits limits;
  /// Longest long-poll a fetch may ask for, ms (the broker's fetch_wait_max_ms).
  int64_t fetch_wait_max_ms = 60000;
  /// Largest max_bytes a fetch may ask for: bounds the response held in memory.
  int64_t fetch_response_bytes_max = 64 * 1024 * 1024;
  /// Records per broker produce call when a v3 stream is split into batches.
  size_t stream_batch_records_max = 1000;
  /// http.cors.allowed.origins ("*": any origin; empty, the default: none but this server's own pages).
  std::vector<std::string> cors_allowed_origins;
  /// The fdatasync latency of all shards together, for /metrics (empty when unset).
  std::function<io::latency_histogram::snapshot()> fsync_latency;
  /// More /metrics text (server_options::extra_metrics), appended as it is.
  std::function<std::string()> extra_metrics;
  /// Passes group calls on to their coordinator (group_proxy.h); nullptr: served here only (a
  /// group call this node does not coordinate answers 503 NOT_COORDINATOR).
  http_forwarder* forwarder = nullptr;
  /// HTTP authentication (issue 29, http_auth.h); nullptr: off (every caller User:ANONYMOUS).
  std::shared_ptr<http_authenticator> auth;
};

class api {
 public:
  api(broker::broker& broker, metrics& metrics, api_options options);

  /// Answers `request` through `sink`, now or later (broker callbacks hop back with sink->post).
  /// Must be called on the connection's thread. Adds CORS headers and records metrics.
  void handle(http_request request, std::shared_ptr<response_sink> sink);

  /// /v1/health answers 503 from now on (graceful stop).
  void set_stopping() { stopping_ = true; }

  /// Every served route as "METHOD /template", e.g. "GET /topics/{topic}" (OPTIONS preflight on
  /// every path is implied). The OpenAPI test checks each is documented.
  static std::vector<std::string> routes();

  [[nodiscard]] const api_options& options() const { return options_; }
  [[nodiscard]] metrics& metrics_registry() { return metrics_; }
  [[nodiscard]] bool stopping_flag() const { return stopping_; }
  /// Bytes of record answers built and not yet sent (http_response_bytes_held_max).
  [[nodiscard]] held_bytes_budget& response_budget() { return response_budget_; }

  struct call;   // one request in flight (api.cc)

 private:
  /// The route_table()[route_index] call `c` matched, from authentication on (handle's second half).
  void serve_route(const std::shared_ptr<call>& c, size_t route_index);
  /// No route served `c`'s method at `path`: OPTIONS preflight, 405 naming `allowed`, 426 or 404.
  void answer_unmatched(const std::shared_ptr<call>& c, std::string_view path, std::vector<std::string> allowed);

  broker::broker& broker_;
  metrics& metrics_;
  api_options options_;
  std::atomic<bool> stopping_ = false;
  held_bytes_budget response_budget_{http_response_bytes_held_max};
};

}  // namespace ringlog::gateway
