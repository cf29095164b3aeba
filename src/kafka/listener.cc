#include "ringlog/kafka/listener.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <deque>
#include <limits>
#include <future>
#include <set>

#include <unistd.h>

#include "ringlog/base/assert.h"
#include "ringlog/base/latency_stages.h"
#include "ringlog/io/file.h"
#include "ringlog/runtime/acceptor.h"
#include "ringlog/runtime/frame_read.h"
#include "ringlog/runtime/asio_context.h"
#include "ringlog/runtime/constants.h"
#include "ringlog/runtime/log_rate_limit.h"
#include "ringlog/runtime/tls_socket.h"
#include "ringlog/security/audit.h"
#include "ringlog/base/logfmt.h"
#include "sasl_gate.h"

namespace ringlog::kafka {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using shard_timer = asio::basic_waitable_timer<std::chrono::steady_clock, asio::wait_traits<std::chrono::steady_clock>,
                                               runtime::shard_executor>;

/// Largest frame a SASL listener reads before the connection has logged in, bytes: Kafka's
/// sasl.server.max.receive.size default (512 KiB); a SASL token is a few hundred bytes.
constexpr int32_t sasl_unauthenticated_frame_bytes_max = 512 * 1024;

namespace {

int32_t read_be32(const std::array<std::byte, 4>& b) {
  return static_cast<int32_t>((static_cast<uint32_t>(b[0]) << 24) | (static_cast<uint32_t>(b[1]) << 16) |
                              (static_cast<uint32_t>(b[2]) << 8) | static_cast<uint32_t>(b[3]));
}

/// A TLS ClientHello starts with record type 22 (handshake) and version 3.x: read as a Kafka
/// size it is about 369 MB, so it is named rather than reported as a mere oversized frame.
bool looks_like_tls(const std::array<std::byte, 4>& b) {
  return b[0] == std::byte{0x16} && b[1] == std::byte{0x03} && static_cast<uint8_t>(b[2]) <= 0x04;
}

}  // namespace

struct connection;

/// Connections of one shard; touched only on that shard's thread.
struct shard_connections {
  std::set<std::shared_ptr<connection>> open;
};

struct listener::impl : std::enable_shared_from_this<listener::impl> {
  impl(runtime::shard_threads& rt_, request_handler& h, listener_options o)
      : rt(rt_), handler(h), options(std::move(o)), shards(rt_.shard_count()) {}

  runtime::shard_threads& rt;
  request_handler& handler;
  listener_options options;
  std::shared_ptr<runtime::acceptor> acceptor;   // accepts on shard 0, round robin over shards
  std::vector<shard_connections> shards;
  std::atomic<uint16_t> bound_port{0};
  std::atomic<bool> stopped{false};
  /// Failed TLS handshakes are logged at most once per interval (a scanner would flood the log).
  runtime::log_rate_limit handshake_failures{runtime::constants::tls_handshake_warning_interval_ms};
  /// Connections closed by a read failing inside a frame, likewise, per reason (a client cutting
  /// its frames short in a loop wrote one line per connection).
  runtime::log_rate_limit frame_read_failures{runtime::constants::repeated_warning_interval_ms};

  void adopt(size_t shard, runtime::shard_socket socket, runtime::connection_slot slot);
};

/// One client connection on its shard: reads frames one after another, hands each to the
/// handler, and writes answers in request order.
struct connection : std::enable_shared_from_this<connection> {
  connection(std::shared_ptr<listener::impl> o, size_t shard_index, runtime::shard_socket s, runtime::connection_slot sl)
      : owner(o), listener_name(o->options.name), shard(shard_index), stream(std::move(s)), slot_in_limits(std::move(sl)),
        pool(o->options.request_pool) {
    boost::system::error_code ec;
    auto ep = stream.socket().remote_endpoint(ec);
    // As ACL hosts name it: an IPv4 client of a dual-stack socket is "127.0.0.1", not
    // "::ffff:127.0.0.1" (Kafka's InetAddress.getHostAddress prints it the same way).
    const auto address = ep.address().is_v6() && ep.address().to_v6().is_v4_mapped()
                             ? asio::ip::address(asio::ip::make_address_v4(asio::ip::v4_mapped, ep.address().to_v6()))
                             : ep.address();
    peer_host = ec ? std::string("unknown") : address.to_string();
    peer = ec ? peer_host : peer_host + ":" + std::to_string(ep.port());
  }

  /// A request's place in the answer order: its frame once answered (nullopt: no answer).
  struct slot {
    bool ready = false;
    std::optional<response_frame> frame;
    size_t request_bytes = 0;
    int64_t produce_read_ns = 0;   // a Produce's base::monotonic_ns when read off the socket, else 0
    std::optional<base::cpu_activity> activity;   // whose CPU writing the answer counts to (issue 33)
    int64_t produce_ready_ns = 0;  // a Produce's base::monotonic_ns when its answer reached this connection
    size_t pool_bytes = 0;         // of queued.max.request.bytes, given back when answered
  };
  /// How far the frame at slots.front() has been sent (write_next / send_pieces): its memory
  /// bytes before `memory_sent`, its file pieces before `piece`, and `piece_sent` bytes of that one.
  struct send_cursor {
    size_t memory_sent = 0;
    size_t piece = 0;
    size_t piece_sent = 0;
  };

  std::weak_ptr<listener::impl> owner;
  std::string listener_name;   // for log lines
  size_t shard;
  /// TCP, or TLS over it on an SSL / SASL_SSL listener. Fetch answers have no file pieces under
  /// TLS (the listener's handler copies record sets into the answer: sendfile cannot encrypt).
  runtime::tls_socket stream;
  /// The connection's place in max.connections / max.connections.per.ip, given back on close.
  runtime::connection_slot slot_in_limits;
  /// connection.authentication.timeout.ms: armed at start on a TLS or SASL listener, cancelled
  /// once the handshake (and on SASL listeners the login) is done.
  std::unique_ptr<shard_timer> login_deadline;
  /// Set by close_with_notify (listener::stop): close() sends TLS's close_notify, then runs it.
  std::function<void()> goodbye;
  /// The client's principal as far as the transport knows it: User:ANONYMOUS, or the mapped
  /// subject of its certificate (ssl.principal.mapping.rules) on a TLS listener that got one.
  security::kafka_principal principal;
  std::string peer;       // host:port, for log lines
  std::string peer_host;  // the client's address: its client_host in group descriptions
  std::array<std::byte, 4> size_prefix{};
  bytes frame;
  /// queued.max.request.bytes, shared by every Kafka listener (nullptr: no bound); the frame
  /// being read holds `frame_pool_bytes` of it, a frame waiting for room its `pool_ticket` (0: none).
  std::shared_ptr<runtime::request_memory_pool> pool;
  size_t frame_pool_bytes = 0;
  uint64_t pool_ticket = 0;
  /// kafka.request.body.timeout.ms: armed when the pool reserves the frame being read; a frame
  /// read since (frames_read moved on) disarms it.
  std::unique_ptr<shard_timer> body_deadline;
  uint64_t frames_read = 0;
  std::deque<slot> slots;        // unanswered or unsent, oldest first
  uint64_t first_slot_seq = 0;   // sequence number of slots.front()
  uint64_t next_seq = 0;
  size_t held_bytes = 0;         // request frames being handled + answers not yet written
  send_cursor cursor;
  bool reading = false;
  bool writing = false;
  bool closed = false;
  bool stream_ready = false;   // plaintext, or the TLS handshake done
  /// SASL_PLAINTEXT:// only: the connection's SASL state, asked about every frame before dispatch.
  std::unique_ptr<detail::sasl_gate> gate;
  /// A failed login: no more reads; the connection closes once the delay has passed and the
  /// answer is written (close_reason says why).
  bool closing = false;
  bool delay_passed = false;
  std::string close_reason;
  std::unique_ptr<shard_timer> close_timer;
  /// KIP-219: an answer carried a throttle time; nothing is read until muted_until (Kafka mutes
  /// the channel), so a client over its quota cannot pile up more requests meanwhile.
  bool muted = false;
  std::chrono::steady_clock::time_point muted_until{};
  std::unique_ptr<shard_timer> mute_timer;
  /// connections.max.idle.ms: the last time a request was read or an answer written.
  std::chrono::steady_clock::time_point last_active = std::chrono::steady_clock::now();
  std::unique_ptr<shard_timer> idle_timer;
  /// base::monotonic_ns when reading stopped for the in-flight or held-bytes bound, else 0
  /// (issue 32: requests behind the pause wait in the socket; latency_stage::kafka_read_paused).
  int64_t read_paused_ns = 0;

  void read_next() {
    if (closed || reading || closing || muted) return;
    if (slots.size() >= constants::connection_in_flight_requests_max ||
        (!slots.empty() && held_bytes >= constants::connection_held_bytes_max)) {
      if (read_paused_ns == 0) read_paused_ns = base::monotonic_ns();
      return;
    }
    if (read_paused_ns != 0) {
      base::observe_latency_since(base::latency_stage::kafka_read_paused, read_paused_ns);
      read_paused_ns = 0;
    }
    reading = true;
    asio::async_read(stream, asio::buffer(size_prefix),
                     [self = shared_from_this()](boost::system::error_code ec, size_t) { self->on_size(ec); });
  }

  void on_size(boost::system::error_code ec) {
    if (closed) return;
    if (ec) {
      reading = false;
      // Between two requests a client's close is normal, and a TLS client that closes without a
      // close_notify (librdkafka, kafka-python) reads as stream_truncated: no warning for those
      // (the new user of session 31 saw one per ordinary SASL_SSL disconnect).
      const bool clean = ec == asio::error::eof || ec == asio::error::connection_reset ||
                         ec == asio::ssl::error::stream_truncated;
      close(clean ? "" : "read failed: " + ec.message());
      return;
    }
    auto o = owner.lock();
    // Before a SASL login a frame is at most sasl_unauthenticated_frame_bytes_max (Kafka's
    // sasl.server.max.receive.size, 512 KiB): a breaker made the broker allocate 100 MB per
    // connection (socket.request.max.bytes) before anyone logged in.
    const bool before_login = o && gate && !gate->authenticated() &&
                              o->options.request_bytes_max > sasl_unauthenticated_frame_bytes_max;
    const int32_t max = !o ? 0 : before_login ? sasl_unauthenticated_frame_bytes_max : o->options.request_bytes_max;
    const int32_t size = read_be32(size_prefix);
    if (looks_like_tls(size_prefix)) {
      close("a TLS handshake arrived on a plaintext listener (" + listener_name +
            "): TLS clients belong on an SSL:// or SASL_SSL:// listener");
      return;
    }
    if (size <= 0 || size > max) {
      // The bound named is the one that applied (the breaker of session 34: a pre-login frame
      // over 512 KiB was said to break socket.request.max.bytes).
      close("frame size " + std::to_string(size) + " outside 1.." + std::to_string(max) +
            (before_login ? " (sasl.server.max.receive.size before a SASL login; Kafka's default, fixed here)"
                          : " (socket.request.max.bytes)"));
      return;
    }
    frame.clear();
    reserve_then_read(*o, static_cast<size_t>(size));
  }

  /// queued.max.request.bytes (runtime/request_memory_pool.h): the body of a `size`-byte frame
  /// is read once the pool of every Kafka listener has room for it; until then nothing more is
  /// read from this connection. A frame larger than the whole pool closes the connection.
  void reserve_then_read(const listener::impl& o, size_t size) {
    if (!pool) return read_body(size);
    asio::io_context* context = &runtime::io_context_of(o.rt, shard);
    auto r = pool->reserve(size, [weak = weak_from_this(), p = pool, context, size] {
      // On the thread that gave the room back: continue on this connection's shard.
      asio::post(*context, [weak, p, size] {
        if (auto self = weak.lock()) return self->on_pool_room(size);
        p->release(size);
      });
    });
    switch (r.outcome) {
      case runtime::request_memory_pool::reserve_outcome::reserved:
        frame_pool_bytes = size;
        arm_body_deadline(o.options.request_body_timeout_ms);
        return read_body(size);
      case runtime::request_memory_pool::reserve_outcome::too_large:
        return close("frame size " + std::to_string(size) + " above queued.max.request.bytes=" +
                     std::to_string(pool->capacity_bytes()) +
                     " (the memory of the requests of every Kafka listener together): it can never fit");
      case runtime::request_memory_pool::reserve_outcome::queued:
        pool_ticket = r.ticket;
        if (read_paused_ns == 0) read_paused_ns = base::monotonic_ns();
        spdlog::debug("msg=\"kafka frame waits for queued.max.request.bytes\" listener={} peer={} frame_bytes={} "
                      "pool_reserved_bytes={}",
                      listener_name, peer, size, pool->reserved_bytes());
        return;
    }
  }

  /// The pool reserved `size` bytes for the frame this connection waits to read.
  void on_pool_room(size_t size) {
    pool_ticket = 0;
    if (closed) return pool->release(size);
    frame_pool_bytes = size;
    if (read_paused_ns != 0) {
      base::observe_latency_since(base::latency_stage::kafka_read_paused, read_paused_ns);
      read_paused_ns = 0;
    }
    if (auto o = owner.lock()) arm_body_deadline(o->options.request_body_timeout_ms);
    read_body(size);
  }

  /// A frame whose declared size the pool reserved must be read within `timeout_ms` (0: no
  /// limit): else the connection is closed and the room goes back to every other connection's
  /// frames. Before it, a client that declared a large frame and sent nothing held its room until
  /// connections.max.idle.ms (10 min), and a few such clients stopped every Kafka connection's reads.
  void arm_body_deadline(int64_t timeout_ms) {
    if (timeout_ms <= 0) return;
    if (!body_deadline) body_deadline = std::make_unique<shard_timer>(stream.get_executor());
    body_deadline->expires_after(std::chrono::milliseconds(timeout_ms));
    body_deadline->async_wait([self = shared_from_this(), timeout_ms, reads = frames_read,
                               size = frame_pool_bytes](boost::system::error_code ec) {
      if (ec || self->closed || self->frames_read != reads) return;
      self->close("the body of a " + std::to_string(size) + "-byte request frame was not read within " +
                  "kafka.request.body.timeout.ms=" + std::to_string(timeout_ms) +
                  ": its room in queued.max.request.bytes is given back");
    });
  }

  void read_body(size_t size) {
    runtime::async_read_frame(stream, frame, size,
                              [self = shared_from_this()](boost::system::error_code ec2) { self->on_frame(ec2); });
  }

  /// Gives `bytes` of queued.max.request.bytes back (0: nothing was reserved).
  void give_back(size_t bytes) {
    if (bytes > 0 && pool) pool->release(bytes);
  }

  void on_frame(boost::system::error_code ec) {
    reading = false;
    ++frames_read;
    if (body_deadline) body_deadline->cancel();
    if (closed) return;
    if (ec) {
      const std::string why = "read failed inside a frame: " + ec.message();
      uint64_t suppressed = 0;
      auto o = owner.lock();
      if (o && !o->frame_read_failures.admit(why, suppressed)) return close("");
      close(why + runtime::not_logged(suppressed, "connections closed so on this listener",
                                      runtime::constants::repeated_warning_interval_ms));
      return;
    }
    auto o = owner.lock();
    if (!o) {
      close("listener stopped");
      return;
    }
    last_active = std::chrono::steady_clock::now();
    const size_t pooled = std::exchange(frame_pool_bytes, 0);
    if (gate && !pass_gate(*o)) return give_back(pooled);
    const uint64_t seq = next_seq++;
    // Issue 32's "sent" stage: a Produce (api key 0, the frame's first two bytes) is timed to its write.
    const int16_t api_key = frame.size() >= 2 ? static_cast<int16_t>((std::to_integer<uint16_t>(frame[0]) << 8) |
                                                                     std::to_integer<uint16_t>(frame[1]))
                                              : int16_t{-1};
    const bool produce = api_key == 0;
    slots.push_back(slot{false, std::nullopt, frame.size(), produce ? base::monotonic_ns() : 0, data_activity(api_key)});
    slots.back().pool_bytes = pooled;
    held_bytes += frame.size();
    int64_t throttle_ms = 0;
    auto handled =
        o->handler.handle(frame, make_respond(seq), peer_host, gate ? gate->principal() : principal, &throttle_ms);
    frame = bytes{};
    if (!handled.ok()) {
      close("malformed request: " + handled.error().message);
      return;
    }
    // KIP-219: a client past its quota is read from again once the throttle time has passed.
    if (throttle_ms > 0) mute_for(static_cast<int32_t>(std::min<int64_t>(throttle_ms, std::numeric_limits<int32_t>::max())));
    read_next();
  }

  /// Shows the frame to the SASL gate; true when the handler is to take it (false: the gate
  /// answered it or the connection is closing).
  bool pass_gate(const listener::impl& o) {
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch()).count();
    auto d = gate->on_frame(frame, now_ms);
    if (d.what != detail::sasl_gate::action::dispatch) frame = bytes{};
    if (d.failed_login) audit_failed_login(o, d.reason);
    if (gate->authenticated()) login_done();
    switch (d.what) {
      case detail::sasl_gate::action::dispatch:
        return true;
      case detail::sasl_gate::action::close:
        if (d.failed_login) {
          close_after_delay(o, d.reason);
        } else {
          close(d.reason);
        }
        return false;
      case detail::sasl_gate::action::answer:
      case detail::sasl_gate::action::answer_and_close:
        break;
    }
    ++next_seq;
    held_bytes += d.frame.size();
    slots.push_back(slot{true, response_frame(std::move(d.frame)), 0, 0, std::nullopt});
    if (d.what == detail::sasl_gate::action::answer_and_close) {
      close_after_delay(o, d.reason);
      write_next();
      return false;
    }
    write_next();
    read_next();
    return false;
  }

  static uint16_t port_of(const listener::impl& o) { return o.bound_port.load(); }

  /// The audit line of issue 29 for a failed login: principal tried, door, peer, listener with
  /// its real security protocol, mechanism and why. Everything the client chose (the user name,
  /// the reason quoting its bytes) is escaped: a name with quotes or a newline cannot forge a line.
  void audit_failed_login(const listener::impl& o, std::string_view reason) {
    const std::string user = gate->attempted_user();
    const std::string protocol = o.options.tls ? "SASL_SSL" : "SASL_PLAINTEXT";
    spdlog::warn("{} listener={}://{}:{} security.protocol={} mechanism=\"{}\"",
                 security::audit_failed_authentication_line("kafka", user.empty() ? "(none)" : "User:" + user, peer,
                                                            reason),
                 o.options.name, o.options.host, port_of(o), protocol,
                 base::logfmt_escaped(gate->mechanism().empty() ? std::string("(none)") : gate->mechanism()));
  }

  /// Kafka's connection.failed.authentication.delay.ms: reading stops now; the connection closes
  /// when the delay has passed and every answer before it is written.
  void close_after_delay(const listener::impl& o, std::string reason) {
    closing = true;
    close_reason = "SASL authentication failed: " + std::move(reason);
    close_timer = std::make_unique<std::remove_reference_t<decltype(*close_timer)>>(stream.get_executor());
    close_timer->expires_after(std::chrono::milliseconds(o.options.connection_failed_authentication_delay_ms));
    close_timer->async_wait([self = shared_from_this()](boost::system::error_code) {
      self->delay_passed = true;
      self->close_if_drained();
    });
  }

  void close_if_drained() {
    if (closing && delay_passed && slots.empty() && !writing) close(close_reason);
  }

  respond_fn make_respond(uint64_t seq) {
    auto used = std::make_shared<std::atomic<bool>>(false);
    asio::io_context* context = &runtime::io_context_of(owner.lock()->rt, shard);
    std::weak_ptr<connection> weak = shared_from_this();
    return [weak, used, context, seq](std::optional<response_frame> response) {
      if (used->exchange(true)) return;
      asio::post(*context, [weak, seq, response = std::move(response)]() mutable {
        if (auto self = weak.lock()) self->on_response(seq, std::move(response));
      });
    };
  }

  void on_response(uint64_t seq, std::optional<response_frame> response) {
    if (closed) return;
    RINGLOG_ASSERT_OP(seq, >=, first_slot_seq);
    RINGLOG_ASSERT_OP(seq - first_slot_seq, <, slots.size());
    if (response && response->throttle_time_ms > 0) {
      mute_for(response->throttle_time_ms);
      // A client on an old version does not wait by itself: the answer waits instead (KIP-219).
      if (!response->client_throttles) return hold_answer(seq, std::move(response));
    }
    answer_ready(seq, std::move(response));
  }

  /// Stops reading for `ms` from now (a longer mute already running stays).
  void mute_for(int32_t ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    if (muted && until <= muted_until) return;
    muted = true;
    muted_until = until;
    if (!mute_timer) mute_timer = std::make_unique<shard_timer>(stream.get_executor());
    mute_timer->expires_at(until);   // a wait already armed ends with operation_aborted
    mute_timer->async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->closed) return;
      self->muted = false;
      self->read_next();
    });
  }

  /// Sends the answer of `seq` once its throttle time has passed (answers behind it wait, in order).
  void hold_answer(uint64_t seq, std::optional<response_frame> response) {
    auto timer = std::make_shared<shard_timer>(stream.get_executor());
    timer->expires_after(std::chrono::milliseconds(response->throttle_time_ms));
    timer->async_wait([self = shared_from_this(), timer, seq, response = std::move(response)](
                          boost::system::error_code) mutable {
      if (!self->closed) self->answer_ready(seq, std::move(response));
    });
  }

  void answer_ready(uint64_t seq, std::optional<response_frame> response) {
    slot& s = slots[seq - first_slot_seq];
    RINGLOG_ASSERT(!s.ready, "a request is answered once");
    s.ready = true;
    if (s.produce_read_ns != 0) s.produce_ready_ns = base::monotonic_ns();
    held_bytes -= s.request_bytes;
    s.request_bytes = 0;
    give_back(std::exchange(s.pool_bytes, 0));
    if (response) held_bytes += response->size_bytes();
    s.frame = std::move(response);
    write_next();
    read_next();
  }

  /// Writes the oldest answer when it is ready; answers behind an unready one wait (order).
  void write_next() {
    while (!writing && !closed && !slots.empty() && slots.front().ready && !slots.front().frame) {
      slots.pop_front();   // acks=0: its place in the order passes with nothing sent
      ++first_slot_seq;
    }
    if (writing || closed || slots.empty() || !slots.front().ready) return;
    writing = true;
    base::observe_latency_since(base::latency_stage::produce_order_wait, slots.front().produce_ready_ns);
    const base::cpu_scope cpu(slots.front().activity);   // Asio tries the write at once: it counts here
    if (!slots.front().frame->file_pieces.empty()) {
      cursor = send_cursor{};
      send_pieces();
      return;
    }
    asio::async_write(stream, asio::buffer(slots.front().frame->memory),
                      [self = shared_from_this()](boost::system::error_code ec, size_t) {
                        if (self->closed) return;
                        if (ec) {
                          self->writing = false;
                          self->close("write failed: " + ec.message());
                          return;
                        }
                        self->frame_sent();
                      });
  }

  /// The frame at slots.front() is on the wire: the next one may go.
  void frame_sent() {
    writing = false;
    last_active = std::chrono::steady_clock::now();
    held_bytes -= slots.front().frame->size_bytes();
    if (slots.front().activity == base::cpu_activity::fetch) {
      base::count_activity_bytes(base::cpu_activity::fetch, slots.front().frame->size_bytes());
    }
    if (slots.front().produce_read_ns != 0) {
      base::observe_latency_since(base::latency_stage::produce_sent, slots.front().produce_read_ns);
    }
    slots.pop_front();
    ++first_slot_seq;
    write_next();
    read_next();
    close_if_drained();
  }

  /// Sends the frame at slots.front() that has file pieces, from `cursor` on: each stretch of
  /// memory with async_write, each file piece with sendfile (io::send_file_to_socket) straight
  /// from the segment file's page cache to the socket, waiting for writability when the socket's
  /// buffer is full. One frame at a time (`writing`), so answers never interleave.
  void send_pieces() {
    if (closed) return;
    const base::cpu_scope cpu(slots.front().activity);
    response_frame& f = *slots.front().frame;
    size_t sent_this_turn = 0;
    while (true) {
      const size_t memory_to = cursor.piece < f.file_pieces.size() ? f.file_pieces[cursor.piece].memory_position
                                                                    : f.memory.size();
      if (cursor.memory_sent < memory_to) {
        const size_t from = cursor.memory_sent;
        asio::async_write(stream, asio::buffer(f.memory.data() + from, memory_to - from),
                          [self = shared_from_this(), memory_to](boost::system::error_code ec, size_t) {
                            if (self->closed) return;
                            if (ec) return self->close("write failed: " + ec.message());
                            self->cursor.memory_sent = memory_to;
                            self->send_pieces();
                          });
        return;
      }
      if (cursor.piece == f.file_pieces.size()) return frame_sent();
      const file_piece& piece = f.file_pieces[cursor.piece];
      if (cursor.piece_sent == piece.range.length) {
        ++cursor.piece;
        cursor.piece_sent = 0;
        continue;
      }
      if (sent_this_turn >= constants::zero_copy_bytes_per_turn) {
        // Other connections of this shard get a turn between stretches of a long answer.
        asio::post(stream.get_executor(), [self = shared_from_this()] { self->send_pieces(); });
        return;
      }
      RINGLOG_ASSERT(!stream.is_tls(), "no zero-copy file pieces under TLS");
      auto sent = io::send_file_to_socket(
          stream.socket().native_handle(), *piece.range.source,
          model::file_position{piece.range.file_position.value() + cursor.piece_sent}, piece.range.length - cursor.piece_sent);
      if (!sent.ok()) return close("zero-copy fetch send failed: " + sent.error().message);
      if (sent->would_block) {
        stream.socket().async_wait(tcp::socket::wait_write, [self = shared_from_this()](boost::system::error_code ec) {
          if (self->closed) return;
          if (ec) return self->close("wait for writability failed: " + ec.message());
          self->send_pieces();
        });
        return;
      }
      cursor.piece_sent += sent->sent;
      sent_this_turn += sent->sent;
      if (auto o = owner.lock(); o && o->handler.options().counters != nullptr) {
        o->handler.options().counters->bytes_zero_copy += sent->sent;
      }
    }
  }

  /// Starts the connection: on a TLS listener the handshake first (with the listener's current
  /// certificate), then the first read. A client whose handshake fails (plaintext bytes, a
  /// certificate the truststore does not sign, none when ssl.client.auth=required, random bytes)
  /// is closed with a log line naming the listener.
  void start(const std::shared_ptr<listener::impl>& o) {
    if (o->options.tls || gate) arm_login_deadline(*o);
    if (o->options.connections_max_idle_ms > 0) {
      idle_timer = std::make_unique<shard_timer>(stream.get_executor());
      arm_idle(o->options.connections_max_idle_ms);
    }
    if (!o->options.tls) {
      stream_ready = true;
      return read_next();
    }
    stream.use_tls(o->options.tls->current());
    stream.async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](boost::system::error_code ec) {
      if (self->closed) return;
      if (ec) return self->close_failed_handshake(runtime::tls_failure_reason(ec));
      if (auto subject = runtime::peer_subject(self->stream.native_tls())) {
        auto o2 = self->owner.lock();
        auto mapped = o2 && o2->options.principal_mapper ? o2->options.principal_mapper->map(*subject)
                                                         : std::optional(security::kafka_principal::user(*subject));
        if (!mapped) return self->close("no ssl.principal.mapping.rules rule matches the certificate subject " + *subject);
        self->principal = std::move(*mapped);
      }
      spdlog::debug("msg=\"kafka TLS connection\" listener={} peer={} principal={}", self->listener_name, self->peer,
                    self->principal.to_string());
      self->stream_ready = true;
      if (!self->gate) self->login_done();
      self->read_next();
    });
  }

  /// connection.authentication.timeout.ms: a TLS handshake, or a SASL login, not done by then
  /// closes the connection (a SASL one as a failed login: audit line, then Kafka's delay), so
  /// idle connects cannot hold descriptors and max.connections places forever.
  void arm_login_deadline(const listener::impl& o) {
    if (o.options.authentication_timeout_ms <= 0) return;
    login_deadline = std::make_unique<shard_timer>(stream.get_executor());
    login_deadline->expires_after(std::chrono::milliseconds(o.options.authentication_timeout_ms));
    login_deadline->async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->closed || self->closing) return;
      auto o2 = self->owner.lock();
      if (!o2) return;
      if (o2->options.limits) {
        o2->options.limits->count_refusal(o2->options.name, runtime::connection_refusal::authentication_timeout);
      }
      const std::string why = (self->gate && self->stream_ready ? "SASL login" : "TLS handshake") +
                              std::string(" not finished within connection.authentication.timeout.ms=") +
                              std::to_string(o2->options.authentication_timeout_ms);
      if (self->gate && self->stream_ready) {
        self->audit_failed_login(*o2, why);
        self->close_after_delay(*o2, why);
        self->close_if_drained();
        return;
      }
      self->close(why);
    });
  }

  /// connections.max.idle.ms (Kafka's Selector closes idle channels): wakes when the connection
  /// would have been idle `idle_ms`; closes it when nothing was read and no answer finished
  /// writing since, unless a request waits on its handler (a long-polling fetch is not idle). An
  /// answer that is ready but not taken by the client counts as idle: a client that sends and
  /// never reads held its max.connections place and its queued answers for good (the breaker of
  /// session 36: 50 such connections outlived connections.max.idle.ms by minutes).
  void arm_idle(int64_t idle_ms) {
    const auto idle = std::chrono::milliseconds(idle_ms);
    const auto now = std::chrono::steady_clock::now();
    idle_timer->expires_at(waits_on_handler() ? now + idle : std::max(last_active + idle, now + std::chrono::milliseconds(1)));
    idle_timer->async_wait([self = shared_from_this(), idle_ms](boost::system::error_code ec) {
      if (ec || self->closed || self->closing) return;
      const bool quiet = std::chrono::steady_clock::now() - self->last_active >= std::chrono::milliseconds(idle_ms);
      if (!quiet || self->waits_on_handler()) return self->arm_idle(idle_ms);
      self->close("idle for connections.max.idle.ms=" + std::to_string(idle_ms) +
                  (self->slots.empty() ? " (no request or answer)" : " (answers not read by the client)"));
    });
  }

  /// The oldest request in flight has no answer yet (its handler works on it: a long poll, an
  /// acks=all wait): the client is not what holds the connection up.
  /// A frame waiting for room in queued.max.request.bytes waits on the broker as well.
  [[nodiscard]] bool waits_on_handler() const {
    return (!slots.empty() && !slots.front().ready) || pool_ticket != 0;
  }

  /// The handshake (and the login on SASL listeners) is done: the deadline no longer applies.
  void login_done() {
    if (login_deadline) login_deadline->cancel();
    login_deadline.reset();
  }

  /// Closes the socket; `reason` empty = the client hung up (not worth a warning).
  /// A failed TLS handshake: closed, with a warning at most once per interval per listener.
  void close_failed_handshake(const std::string& why) {
    uint64_t suppressed = 0;
    auto o = owner.lock();
    if (o && !o->handshake_failures.admit(why, suppressed)) return close("");
    close("TLS handshake failed: " + why + runtime::handshakes_not_logged(suppressed));
  }

  /// Whether a controlled shutdown can say goodbye in TLS (close_with_notify): a TLS session is
  /// up and no write is in flight (close_notify must not cut into an answer's records).
  [[nodiscard]] bool tls_goodbye_possible() const { return !closed && stream_ready && stream.is_tls() && !writing; }

  /// listener::stop's close of a TLS connection: as close(""), but TLS's close_notify goes out
  /// first (bounded by runtime::constants::tls_close_notify_timeout_ms); `after` runs once the socket is
  /// closed.
  void close_with_notify(std::function<void()> after) {
    goodbye = std::move(after);
    close("");
  }

  void close(const std::string& reason) {
    if (closed) return;
    closed = true;
    if (close_timer) close_timer->cancel();
    if (mute_timer) mute_timer->cancel();
    if (idle_timer) idle_timer->cancel();
    if (body_deadline) body_deadline->cancel();
    login_done();
    slot_in_limits.release();
    // A waiter already granted finds the connection closed and gives its bytes back (on_pool_room).
    if (pool_ticket != 0 && pool->cancel(pool_ticket)) pool_ticket = 0;
    give_back(std::exchange(frame_pool_bytes, 0));
    for (slot& s : slots) give_back(std::exchange(s.pool_bytes, 0));
    if (!reason.empty()) {
      spdlog::warn("msg=\"kafka connection closed\" listener={} peer={} principal=\"{}\" reason=\"{}\"", listener_name,
                   peer, base::logfmt_escaped(gate ? gate->principal().to_string() : std::string("User:ANONYMOUS")),
                   base::logfmt_escaped(reason));
    }
    if (goodbye) {
      send_close_notify();
    } else {
      stream.close();
    }
    if (auto o = owner.lock()) o->shards[shard].open.erase(shared_from_this());
  }

  /// close_notify, bounded in time (runtime::close_with_notify_bounded), then `goodbye`.
  void send_close_notify() {
    runtime::close_with_notify_bounded(shared_from_this(), stream, [self = shared_from_this()] {
      if (auto after = std::exchange(self->goodbye, nullptr)) after();
    });
  }

};

void listener::impl::adopt(size_t shard, runtime::shard_socket socket, runtime::connection_slot slot) {
  if (stopped.load()) return;   // the socket closes as it goes out of scope
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  // sendfile (zero-copy Fetch answers) must see EAGAIN, not block the shard, when the socket's
  // send buffer is full.
  socket.native_non_blocking(true, ec);
  if (ec) {
    spdlog::warn("msg=\"kafka connection not adopted\" error=\"{}\"", ec.message());
    return;
  }
  auto c = std::make_shared<connection>(shared_from_this(), shard, std::move(socket), std::move(slot));
  if (options.sasl) {
    c->gate = std::make_unique<detail::sasl_gate>(
        detail::sasl_gate_options{options.sasl_enabled_mechanisms, options.connections_max_reauth_ms,
                                  options.oauthbearer_validator},
        handler.broker_api().security().scram_lookup());
  }
  shards[shard].open.insert(c);
  c->start(shared_from_this());
}

base::result<std::unique_ptr<listener>, std::string> listener::listen(runtime::shard_threads& rt,
                                                                      request_handler& handler,
                                                                      listener_options options) {
  auto p = std::make_shared<impl>(rt, handler, options);
  runtime::acceptor_options accept;
  accept.name = options.name;
  accept.host = options.host;
  accept.port = options.port;
  accept.listen_fd = options.listen_fd;
  accept.limits = options.limits;
  accept.buffers = options.socket_buffers;
  auto bound = runtime::acceptor::listen(rt, std::move(accept));
  if (!bound.ok()) return bound.error();
  p->acceptor = std::move(bound).value();
  p->bound_port.store(p->acceptor->port());
  return std::unique_ptr<listener>(new listener(std::move(p)));
}

listener::listener(std::shared_ptr<impl> p) : impl_(std::move(p)) {}

listener::~listener() {
  if (!impl_->stopped.exchange(true)) impl_->acceptor->close();
}

void listener::start() {
  impl_->acceptor->start([weak = std::weak_ptr<impl>(impl_)](size_t shard, runtime::shard_socket socket,
                                                             runtime::connection_slot slot) {
    if (auto p = weak.lock()) p->adopt(shard, std::move(socket), std::move(slot));
  });
}

void listener::stop() {
  impl_->stopped.store(true);
  const size_t n = impl_->rt.shard_count();
  std::vector<std::promise<void>> done(n);
  for (size_t shard = 0; shard < n; ++shard) {
    asio::post(runtime::io_context_of(impl_->rt, shard), [p = impl_, shard, &done] {
      if (shard == 0) p->acceptor->close();
      auto open = p->shards[shard].open;   // close() erases from the set
      // TLS connections say goodbye with close_notify (bounded in time); the shard is done when
      // the last of them has closed. `left` starts at 1 for this loop itself.
      auto left = std::make_shared<size_t>(1);
      auto one_closed = [left, finished = &done[shard]] {
        if (--*left == 0) finished->set_value();
      };
      for (const auto& c : open) {
        if (c->tls_goodbye_possible()) {
          ++*left;
          c->close_with_notify(one_closed);
        } else {
          c->close("");
        }
      }
      one_closed();
    });
  }
  for (auto& d : done) d.get_future().wait();
}

uint16_t listener::port() const { return impl_->bound_port.load(); }

}  // namespace ringlog::kafka
