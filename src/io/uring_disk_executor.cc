// The io_uring executor (design.md section 2): one ring per executor (one per event loop), an
// eventfd registered on it so an Asio loop can wait for completions, and write -> fdatasync
// pairs linked with IOSQE_IO_LINK so the sync starts only after the write completed in full.
//
// Every submission's user_data points to a `completion` inside its `operation`; an operation is
// finished only when all of its submitted entries have completed, then advance() decides:
//   write failed                 -> report the write's error (the linked sync got -ECANCELED)
//   write short / -EINTR/-EAGAIN -> submit the rest of the write, linked to a new sync
//   sync -EINTR/-EAGAIN/-ECANCELED after a full write -> submit the sync again
//   sync failed                  -> report it; sync ok -> report ok.
// Callbacks run only from poll().

#include "uring_disk_executor.h"

#include <liburing.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ringlog/base/constants.h"

namespace ringlog::io {
namespace {

/// Ring size used only by probe_uring(); the probe submits nothing.
constexpr unsigned probe_ring_entries = 4;
/// Largest single write submission: the SQE length field is 32 bits; a longer write continues
/// like a short write (with one extra fdatasync).
constexpr size_t write_chunk_bytes_max = size_t{1} << 30;

std::string errno_text(int errno_value) { return std::strerror(errno_value); }

}  // namespace

uring_probe probe_uring() {
  io_uring ring{};
  const int rc = io_uring_queue_init(probe_ring_entries, &ring, 0);
  if (rc < 0) {
    return uring_probe{false, "io_uring_setup: " + errno_text(-rc)};
  }
  uring_probe out;
  io_uring_probe* probe = io_uring_get_probe_ring(&ring);
  if (probe == nullptr) {
    out.reason = "io_uring_get_probe: opcode probing not supported by this kernel";
  } else {
    std::string missing;
    const std::pair<int, const char*> needed[] = {
        {IORING_OP_FSYNC, "IORING_OP_FSYNC"}, {IORING_OP_WRITE, "IORING_OP_WRITE"}, {IORING_OP_READ, "IORING_OP_READ"}};
    for (const auto& [opcode, name] : needed) {
      if (io_uring_opcode_supported(probe, opcode) == 0) {
        missing += missing.empty() ? name : std::string(", ") + name;
      }
    }
    io_uring_free_probe(probe);
    out.available = missing.empty();
    if (!out.available) {
      out.reason = "io_uring lacks " + missing;
    }
  }
  io_uring_queue_exit(&ring);
  return out;
}

namespace detail {
namespace {

class uring_disk_executor final : public disk_executor {
 public:
  uring_disk_executor() = default;
  uring_disk_executor(const uring_disk_executor&) = delete;
  uring_disk_executor& operator=(const uring_disk_executor&) = delete;

  ~uring_disk_executor() override {
    if (ring_ready_) {
      drain_for_shutdown();
      io_uring_queue_exit(&ring_);
    }
    if (event_fd_ >= 0) {
      ::close(event_fd_);
    }
  }

  result<void> start() {
    const int rc = io_uring_queue_init(constants::io_uring_entries, &ring_, 0);
    if (rc < 0) {
      return error{errc::unsupported, "io_uring_setup: " + errno_text(-rc)};
    }
    ring_ready_ = true;
    event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (event_fd_ < 0) {
      return error{errc::unsupported, "eventfd: " + errno_text(errno)};
    }
    const int registered = io_uring_register_eventfd(&ring_, event_fd_);
    if (registered < 0) {
      return error{errc::unsupported, "io_uring_register_eventfd: " + errno_text(-registered)};
    }
    return base::ok_v;
  }

  void submit_datasync(file& f, callback done) override {
    add(f, false, model::file_position{0}, {}, std::move(done));
  }

  void submit_write_datasync(file& f, model::file_position position, std::span<const std::byte> data,
                             callback done) override {
    add(f, true, position, data, std::move(done));
  }

  size_t poll(std::chrono::milliseconds wait) override {
    flush_backlog();
    drain_event_fd();
    reap();
    if (finished_.empty() && wait.count() > 0 && submitted_entries_ > 0) {
      wait_for_completion(wait);
      reap();
    }
    // Callbacks may submit more work; they run after the completion queue was consumed.
    std::vector<finished_operation> ready;
    ready.swap(finished_);
    for (auto& item : ready) {
      running_submitted_at_ = item.submitted_at;
      item.done(std::move(item.outcome));
    }
    return ready.size();
  }

  [[nodiscard]] size_t in_flight() const override { return operations_.size() + finished_.size(); }
  [[nodiscard]] int event_fd() const override { return event_fd_; }
  [[nodiscard]] std::string_view name() const override { return "uring"; }

 private:
  struct operation;
  /// What user_data points to: one per kind of entry an operation may have in flight.
  struct completion {
    operation* owner;
    bool is_write;
  };
  struct operation {
    file* target = nullptr;
    bool has_write = false;
    model::file_position position{0};
    std::span<const std::byte> data;
    size_t written = 0;  // bytes of `data` known written, [0, data.size()]
    callback done;
    completion write_completion{this, true};
    completion sync_completion{this, false};
    int entries_in_flight = 0;
    bool sync_succeeded = false;
    std::optional<error> write_error;
    std::optional<error> sync_error;
    std::chrono::steady_clock::time_point submitted_at = std::chrono::steady_clock::now();
  };
  struct finished_operation {
    callback done;
    result<void> outcome;
    std::chrono::steady_clock::time_point submitted_at;
  };

  void add(file& f, bool has_write, model::file_position position, std::span<const std::byte> data,
           callback done) {
    auto owned = std::make_unique<operation>();
    operation* op = owned.get();
    op->target = &f;
    op->has_write = has_write;
    op->position = position;
    op->data = data;
    op->done = std::move(done);
    operations_.emplace(op, std::move(owned));
    if (f.native_handle() < 0) {
      finish(op, error{errc::unsupported, "io_uring " + f.path() + ": file has no descriptor (simulated?)"});
      return;
    }
    submit_next(op);
  }

  [[nodiscard]] bool write_pending(const operation& op) const { return op.has_write && op.written < op.data.size(); }

  /// Submits what the operation still needs: the rest of the write linked to a sync, or a sync.
  void submit_next(operation* op) {
    const unsigned needed = write_pending(*op) ? 2 : 1;
    if (!reserve(needed)) {
      backlog_.push_back(op);  // retried at the next poll()
      return;
    }
    op->sync_succeeded = false;
    op->sync_error.reset();
    const int fd = op->target->native_handle();
    if (needed == 2) {
      io_uring_sqe* write_entry = io_uring_get_sqe(&ring_);
      const size_t length = std::min(op->data.size() - op->written, write_chunk_bytes_max);
      io_uring_prep_write(write_entry, fd, op->data.data() + op->written, static_cast<unsigned>(length),
                          op->position.value() + op->written);
      io_uring_sqe_set_flags(write_entry, IOSQE_IO_LINK);
      io_uring_sqe_set_data(write_entry, &op->write_completion);
      ++op->entries_in_flight;
    }
    io_uring_sqe* sync_entry = io_uring_get_sqe(&ring_);
    // A directory needs a full fsync: its entries are metadata, which fdatasync may skip.
    io_uring_prep_fsync(sync_entry, fd, op->target->is_directory() ? 0U : IORING_FSYNC_DATASYNC);
    io_uring_sqe_set_data(sync_entry, &op->sync_completion);
    ++op->entries_in_flight;
    submitted_entries_ += needed;
    io_uring_submit(&ring_);  // on failure the entries stay queued; poll() submits again
  }

  /// Whether `count` submission entries are free, submitting queued ones to make room.
  bool reserve(unsigned count) {
    if (io_uring_sq_space_left(&ring_) >= count) {
      return true;
    }
    io_uring_submit(&ring_);
    return io_uring_sq_space_left(&ring_) >= count;
  }

  void flush_backlog() {
    if (io_uring_sq_ready(&ring_) > 0) {
      io_uring_submit(&ring_);
    }
    // Bounded by the backlog's size when we start: entries re-queued now wait for the next poll.
    for (size_t pending = backlog_.size(); pending > 0; --pending) {
      operation* op = backlog_.front();
      backlog_.pop_front();
      submit_next(op);
    }
  }

  void drain_event_fd() {
    uint64_t count = 0;
    // Non-blocking: EAGAIN just means nothing was signalled since the last read.
    [[maybe_unused]] const ssize_t n = ::read(event_fd_, &count, sizeof count);
  }

  void wait_for_completion(std::chrono::milliseconds wait) {
    __kernel_timespec timeout{};
    timeout.tv_sec = wait.count() / 1000;
    timeout.tv_nsec = (wait.count() % 1000) * 1'000'000;
    io_uring_cqe* cqe = nullptr;
    // -ETIME (nothing came) and -EINTR are fine: poll() then returns what it has.
    [[maybe_unused]] const int rc = io_uring_wait_cqe_timeout(&ring_, &cqe, &timeout);
  }

  /// Consumes every ready completion queue entry.
  void reap() {
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      void* data = io_uring_cqe_get_data(cqe);
      if (cqe->user_data == LIBURING_UDATA_TIMEOUT || data == nullptr) {
        continue;  // liburing's own timeout entry on kernels without IORING_FEAT_EXT_ARG
      }
      on_completion(*static_cast<completion*>(data), cqe->res);
    }
    io_uring_cq_advance(&ring_, seen);
  }

  void on_completion(const completion& c, int res) {
    operation* op = c.owner;
    RINGLOG_ASSERT_OP(op->entries_in_flight, >, 0);
    --op->entries_in_flight;
    --submitted_entries_;
    if (c.is_write) {
      on_write(*op, res);
    } else {
      on_sync(*op, res);
    }
    if (op->entries_in_flight == 0) {
      advance(op);
    }
  }

  static bool retryable(int res) { return res == -EINTR || res == -EAGAIN; }

  void on_write(operation& op, int res) {
    if (retryable(res)) {
      return;  // `written` unchanged: the same range is submitted again
    }
    if (res < 0) {
      op.write_error = from_errno(-res, "write", op.target->path());
      return;
    }
    if (res == 0) {
      op.write_error = error{errc::io_error, "write " + op.target->path() + ": io_uring wrote 0 bytes"};
      return;
    }
    op.written += static_cast<size_t>(res);
    RINGLOG_ASSERT_OP(op.written, <=, op.data.size());
  }

  void on_sync(operation& op, int res) {
    if (res == 0) {
      op.sync_succeeded = true;
    } else if (!retryable(res) && res != -ECANCELED) {
      op.sync_error = from_errno(-res, op.target->is_directory() ? "fsync directory" : "fdatasync", op.target->path());
    }
  }

  void advance(operation* op) {
    if (op->write_error) {
      finish(op, *op->write_error);
    } else if (write_pending(*op)) {
      submit_next(op);  // short write or a retryable error: continue where it stopped
    } else if (op->sync_error) {
      finish(op, *op->sync_error);
    } else if (op->sync_succeeded) {
      finish(op, base::ok_v);
    } else {
      submit_next(op);  // sync cancelled or interrupted after a full write
    }
  }

  void finish(operation* op, result<void> outcome) {
    if (outcome.ok()) datasync_latency_.observe(std::chrono::steady_clock::now() - op->submitted_at);
    finished_.push_back(finished_operation{std::move(op->done), std::move(outcome), op->submitted_at});
    operations_.erase(op);
  }

  /// The kernel may still write into operations (and read their buffers): wait for every entry
  /// before the memory goes away. Callbacks are dropped; they must not run outside poll().
  void drain_for_shutdown() {
    while (submitted_entries_ > 0) {
      io_uring_cqe* cqe = nullptr;
      if (io_uring_sq_ready(&ring_) > 0) {
        io_uring_submit(&ring_);
      }
      const int rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc < 0) {
        if (rc == -EINTR) {
          continue;
        }
        break;  // the ring is unusable; queue_exit below tears it down
      }
      if (cqe->user_data != LIBURING_UDATA_TIMEOUT && io_uring_cqe_get_data(cqe) != nullptr) {
        --submitted_entries_;
      }
      io_uring_cqe_seen(&ring_, cqe);
    }
  }

  io_uring ring_{};
  bool ring_ready_ = false;
  int event_fd_ = -1;
  /// Entries submitted to the ring and not yet completed (at most 2 per operation).
  size_t submitted_entries_ = 0;
  std::unordered_map<operation*, std::unique_ptr<operation>> operations_;
  /// Operations that found the submission queue full; bounded by operations_.size().
  std::deque<operation*> backlog_;
  std::vector<finished_operation> finished_;
};

}  // namespace

result<std::unique_ptr<disk_executor>> make_uring_disk_executor() {
  auto executor = std::make_unique<uring_disk_executor>();
  RINGLOG_TRY(executor->start());
  return std::unique_ptr<disk_executor>(std::move(executor));
}

}  // namespace detail
}  // namespace ringlog::io
