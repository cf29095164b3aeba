#pragma once
// What tests/sim/cluster_sim's workloads (txn_workload.h, reassignment_workload.h) see of the
// simulated cluster: the world, the serving brokers, client events and the verdict. The
// simulation in cluster_sim.cc implements it.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ringlog/broker/broker.h"
#include "sim_world.h"

namespace ringlog::sim {

class sim_cluster {
 public:
  virtual ~sim_cluster() = default;
  virtual world& sim_world() = 0;
  /// Runs `fn` as a client event (node 0) at `due_ms`.
  virtual void at(int64_t due_ms, std::function<void()> fn) = 0;
  /// Node `n`'s broker, or null while it is down or starting.
  virtual broker::broker* serving(int n) = 0;
  /// A random serving node, -1 when none serves.
  virtual int random_serving() = 0;
  /// Records the first rule broken (the run stops).
  virtual void fail(const std::string& rule) = 0;
  [[nodiscard]] virtual bool failed() const = 0;
  [[nodiscard]] virtual int node_count() const = 0;
};

/// A client's call with a deadline: the returned callback is the broker's `done`; `then` runs
/// once, as a client event, with the answer, or with nullopt when none came within `timeout_ms`
/// (lost with a crashed node or a cut link: a broker's callback never runs then).
template <class T>
std::function<void(T)> answer_within(sim_cluster& c, int64_t timeout_ms, std::function<void(std::optional<T>)> then) {
  struct state {
    bool answered = false;
    std::function<void(std::optional<T>)> then;
  };
  auto s = std::make_shared<state>();
  s->then = std::move(then);
  c.at(c.sim_world().clock.now_ms() + timeout_ms, [s] {
    if (s->answered) return;
    s->answered = true;
    s->then(std::nullopt);
  });
  return [&c, s](T answer) {
    auto shared = std::make_shared<T>(std::move(answer));
    c.at(c.sim_world().clock.now_ms(), [s, shared] {
      if (s->answered) return;
      s->answered = true;
      s->then(std::move(*shared));
    });
  };
}

}  // namespace ringlog::sim
