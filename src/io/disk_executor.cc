// Backend choice and the portable executor: queued operations run synchronously in poll()
// (pwrite + fdatasync through the file interface), so it also drives sim_file_system files.

#include "ringlog/io/disk_executor.h"

#include <deque>

#include "uring_disk_executor.h"

namespace ringlog::io {

void latency_histogram::observe(std::chrono::nanoseconds elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  size_t bucket = 0;
  while (bucket < bounds_s.size() && seconds > bounds_s[bucket]) ++bucket;
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(elapsed.count()), std::memory_order_relaxed);
}

latency_histogram::snapshot latency_histogram::read() const {
  snapshot out;
  for (size_t i = 0; i < counts_.size(); ++i) out.counts[i] = counts_[i].load(std::memory_order_relaxed);
  out.count = count_.load(std::memory_order_relaxed);
  out.sum_s = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return out;
}

latency_histogram::snapshot& latency_histogram::snapshot::operator+=(const snapshot& o) {
  for (size_t i = 0; i < counts.size(); ++i) counts[i] += o.counts[i];
  count += o.count;
  sum_s += o.sum_s;
  return *this;
}

result<backend_kind> parse_backend_kind(std::string_view text) {
  if (text == "uring") {
    return backend_kind::uring;
  }
  if (text == "posix") {
    return backend_kind::posix;
  }
  if (text == "auto") {
    return backend_kind::automatic;
  }
  return error{errc::unsupported,
               "unknown io backend \"" + std::string(text) + "\": expected one of uring, posix, auto"};
}

namespace {

class posix_disk_executor final : public disk_executor {
 public:
  void submit_datasync(file& f, callback done) override {
    queue_.push_back(operation{&f, false, model::file_position{0}, {}, std::move(done)});
  }

  void submit_write_datasync(file& f, model::file_position position, std::span<const std::byte> data,
                             callback done) override {
    queue_.push_back(operation{&f, true, position, data, std::move(done)});
  }

  size_t poll(std::chrono::milliseconds /*wait*/) override {
    // Nothing completes on its own here: everything queued is ready now, and with nothing
    // queued there is nothing to wait for. Operations submitted by callbacks wait for the next
    // poll(), so one poll() is bounded by what was queued when it started.
    std::deque<operation> ready;
    ready.swap(queue_);
    running_ = ready.size();
    size_t ran = 0;
    while (!ready.empty()) {
      operation op = std::move(ready.front());
      ready.pop_front();
      const auto started = std::chrono::steady_clock::now();
      result<void> outcome = run(op);
      if (outcome.ok()) datasync_latency_.observe(std::chrono::steady_clock::now() - started);
      --running_;
      ++ran;
      running_submitted_at_ = started;
      op.done(std::move(outcome));
    }
    return ran;
  }

  [[nodiscard]] size_t in_flight() const override { return queue_.size() + running_; }
  [[nodiscard]] int event_fd() const override { return -1; }
  [[nodiscard]] std::string_view name() const override { return "posix"; }

 private:
  struct operation {
    file* target;
    bool write_first;
    model::file_position position;
    std::span<const std::byte> data;
    callback done;
  };

  static result<void> run(const operation& op) {
    if (op.write_first) {
      RINGLOG_TRY(op.target->write_at(op.position, op.data));
    }
    return op.target->datasync();
  }

  std::deque<operation> queue_;
  size_t running_ = 0;  // taken by the current poll(), callback not yet run
};

}  // namespace

std::unique_ptr<disk_executor> make_posix_disk_executor() { return std::make_unique<posix_disk_executor>(); }

result<std::unique_ptr<disk_executor>> make_disk_executor(backend_kind kind, std::string* note) {
  if (kind == backend_kind::posix) {
    return make_posix_disk_executor();
  }
  const uring_probe probe = probe_uring();
  if (probe.available) {
    auto executor = detail::make_uring_disk_executor();
    if (executor.ok() || kind == backend_kind::uring) {
      return executor;
    }
    if (note != nullptr) {
      *note = "io_uring unusable (" + executor.error().message + "); using the posix disk executor";
    }
    return make_posix_disk_executor();
  }
  if (kind == backend_kind::uring) {
    return error{errc::unsupported, "io backend uring requested but io_uring is unavailable: " + probe.reason};
  }
  if (note != nullptr) {
    *note = "io_uring unavailable (" + probe.reason + "); using the posix disk executor";
  }
  return make_posix_disk_executor();
}

}  // namespace ringlog::io
