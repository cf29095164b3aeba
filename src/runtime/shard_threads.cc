// shard_threads: one io_context per shard thread, each also driving its disk executor.
// Disk completions: with an eventfd (io_uring) the loop waits on it with a stream_descriptor,
// drains it and calls poll(0); without one (posix backend) a poll(0) task is queued after every
// task while operations are in flight.

#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "ringlog/runtime/asio_context.h"
#include "ringlog/runtime/constants.h"
#include "ringlog/base/assert.h"
#include "ringlog/base/latency_stages.h"

namespace ringlog::runtime {

namespace asio = boost::asio;

namespace {
// The shard the calling thread runs, per runtime (tests may run several runtimes at once).
thread_local const void* tls_runtime = nullptr;
thread_local size_t tls_shard = 0;
}  // namespace

struct shard {
  asio::io_context context{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::unique_ptr<io::disk_executor> disk;
  std::optional<asio::posix::stream_descriptor> event_descriptor;
  bool poll_queued = false;   // posix backend: a poll task is already in the queue
  /// Fires every constants::shard_loop_lag_probe_interval_ms; how late it ran is the loop's lag.
  std::optional<asio::steady_timer> lag_probe;
  std::atomic<size_t> queued{0};   // tasks posted and not yet run (admits()' bound)
  std::thread thread;
};

struct shard_threads::impl {
  const shard_threads* owner = nullptr;
  std::vector<std::unique_ptr<shard>> shards;
  bool started = false;
  bool stopped = false;

  // Runs on shard `index`: after a task, make sure posix-backend completions get polled.
  void after_task(size_t index) {
    shard& s = *shards[index];
    if (s.event_descriptor || s.poll_queued || s.disk->in_flight() == 0) return;
    s.poll_queued = true;
    asio::post(s.context, [this, index] {
      shard& sh = *shards[index];
      sh.poll_queued = false;
      sh.disk->poll(std::chrono::milliseconds(0));
      after_task(index);
    });
  }

  /// Arms the shard's lag probe for one interval after `due`; when it runs, observes how late it
  /// is (base::latency_stage::shard_loop_lag) and arms the next. Cancelled at stop.
  void arm_lag_probe(size_t index, asio::steady_timer::time_point due) {
    shard& s = *shards[index];
    const auto next = due + std::chrono::milliseconds(constants::shard_loop_lag_probe_interval_ms);
    s.lag_probe->expires_at(next);
    s.lag_probe->async_wait([this, index, next](boost::system::error_code ec) {
      if (ec) return;  // cancelled at stop
      const auto now = asio::steady_timer::clock_type::now();
      base::observe_latency(base::latency_stage::shard_loop_lag,
                            std::chrono::duration_cast<std::chrono::nanoseconds>(now - next).count());
      // From now, not from `next`: a loop stalled for several intervals takes one late sample,
      // not a burst of back-to-back ones that would each count the same stall again.
      arm_lag_probe(index, now);
    });
  }

  void arm_event_fd(size_t index) {
    shard& s = *shards[index];
    s.event_descriptor->async_wait(asio::posix::stream_descriptor::wait_read, [this, index](boost::system::error_code ec) {
      if (ec) return;  // cancelled at stop
      shard& sh = *shards[index];
      uint64_t count = 0;
      // Non-blocking: a spurious wake-up just finds nothing to read.
      [[maybe_unused]] ssize_t n = ::read(sh.event_descriptor->native_handle(), &count, sizeof count);
      sh.disk->poll(std::chrono::milliseconds(0));
      arm_event_fd(index);
    });
  }
};

io::result<std::unique_ptr<shard_threads>> shard_threads::create(size_t shard_count, io::backend_kind kind,
                                                                 std::string* note) {
  RINGLOG_ASSERT(shard_count >= 1, "at least one shard");
  auto p = std::make_unique<impl>();
  for (size_t i = 0; i < shard_count; ++i) {
    auto s = std::make_unique<shard>();
    std::string shard_note;
    auto disk = io::make_disk_executor(kind, i == 0 ? note : &shard_note);
    if (!disk.ok()) return disk.error();
    s->disk = std::move(disk).value();
    if (int fd = s->disk->event_fd(); fd >= 0) {
      s->event_descriptor.emplace(s->context, fd);
      s->event_descriptor->non_blocking(true);
    }
    p->shards.push_back(std::move(s));
  }
  auto runtime = std::unique_ptr<shard_threads>(new shard_threads(std::move(p)));
  runtime->impl_->owner = runtime.get();
  for (size_t i = 0; i < shard_count; ++i) {
    if (runtime->impl_->shards[i]->event_descriptor) runtime->impl_->arm_event_fd(i);
  }
  return runtime;
}

shard_threads::shard_threads(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

shard_threads::~shard_threads() {
  stop();
  for (auto& s : impl_->shards) {
    // The executor owns its eventfd: hand it back instead of closing it twice.
    if (s->event_descriptor) s->event_descriptor->release();
  }
}

void shard_threads::start() {
  if (impl_->started) return;
  impl_->started = true;
  for (size_t i = 0; i < impl_->shards.size(); ++i) {
    shard& s = *impl_->shards[i];
    s.work.emplace(s.context.get_executor());
    s.lag_probe.emplace(s.context);
    impl_->arm_lag_probe(i, asio::steady_timer::clock_type::now());
    s.thread = std::thread([this, i, &s] {
      tls_runtime = this;
      tls_shard = i;
      s.context.run();
      tls_runtime = nullptr;
    });
  }
}

void shard_threads::stop() {
  if (!impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  for (auto& s : impl_->shards) {
    asio::post(s->context, [sh = s.get()] {
      if (sh->event_descriptor) sh->event_descriptor->cancel();
      if (sh->lag_probe) sh->lag_probe->cancel();
    });
    s->work.reset();
  }
  // Pending timers (post_after) would keep run() going: stop the loops once queues drain.
  for (auto& s : impl_->shards) {
    asio::post(s->context, [sh = s.get()] {
      // Finish in-flight disk work before the loop ends so no callback is lost.
      while (sh->disk->in_flight() > 0) sh->disk->poll(std::chrono::milliseconds(10));
      sh->context.stop();
    });
  }
  for (auto& s : impl_->shards) {
    if (s->thread.joinable()) s->thread.join();
  }
}

size_t shard_threads::shard_count() const { return impl_->shards.size(); }

size_t shard_threads::current_shard() const {
  return tls_runtime == this ? tls_shard : impl_->shards.size();
}

void shard_threads::post(size_t index, task t) {
  RINGLOG_ASSERT_OP(index, <, impl_->shards.size());
  shard& s = *impl_->shards[index];
  s.queued.fetch_add(1, std::memory_order_relaxed);
  asio::post(s.context, [this, index, t = std::move(t)] {
    impl_->shards[index]->queued.fetch_sub(1, std::memory_order_relaxed);
    t();
    impl_->after_task(index);
  });
}

bool shard_threads::admits(size_t index) const {
  return queued_tasks(index) < constants::cross_shard_queue_tasks_max;
}

size_t shard_threads::queued_tasks(size_t index) const {
  RINGLOG_ASSERT_OP(index, <, impl_->shards.size());
  return impl_->shards[index]->queued.load(std::memory_order_relaxed);
}

void shard_threads::post_after(size_t index, int64_t delay_ms, task t) {
  RINGLOG_ASSERT_OP(index, <, impl_->shards.size());
  auto timer = std::make_shared<asio::steady_timer>(impl_->shards[index]->context,
                                                    std::chrono::milliseconds(std::max<int64_t>(0, delay_ms)));
  timer->async_wait([this, index, timer, t = std::move(t)](boost::system::error_code) {
    t();
    impl_->after_task(index);
  });
}

io::disk_executor& shard_threads::disk(size_t index) {
  RINGLOG_ASSERT_OP(index, <, impl_->shards.size());
  return *impl_->shards[index]->disk;
}

std::string_view shard_threads::disk_backend_name() const { return impl_->shards[0]->disk->name(); }

boost::asio::io_context& io_context_of(shard_threads& runtime, size_t index) {
  return runtime.internals().shards[index]->context;
}

}  // namespace ringlog::runtime
