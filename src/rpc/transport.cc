#include "ringlog/rpc/transport.h"

namespace ringlog::rpc {

namespace {
constexpr int16_t api_versions_api_key = 18;   // protocol guide: ApiVersions; v0's body is empty
}

void probe_listening(transport& t, int32_t to, int64_t timeout_ms, std::function<void(result<void>)> done) {
  t.send(to, api_versions_api_key, 0, bytes{}, timeout_ms, [done = std::move(done)](result<bytes> r) {
    if (!r.ok()) return done(r.error());
    done(base::ok_v);
  });
}

}  // namespace ringlog::rpc
