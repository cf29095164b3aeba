// `ringlog bench --transport ws`: WebSocket producers and subscribers (see bench.h). The
// producers are asynchronous (one io_context per producer thread: a schedule timer sends, a read
// loop takes the in-order acks); subscribers read asynchronously, up to
// ws_bench_subscribers_per_thread on a thread, granting credit as they go, as browser tabs would.

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <charconv>
#include <deque>
#include <memory>
#include <optional>
#include <thread>

#include "ringlog/codec/base64.h"
#include "bench.h"

namespace ringlog::cli {

using codec::base64_decode;
using codec::base64_encode;
using codec::base64_encode_append;

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using ws_stream = websocket::stream<beast::tcp_stream>;

/// Unanswered produce messages per producer connection when --rate is 0 (the server's own
/// limit, ws_produce_in_flight_max, is 10,000).
constexpr int64_t ws_bench_in_flight_max = 2000;
/// Credit a subscriber grants at a time (records); it tops up when half is used.
constexpr int64_t ws_bench_credit_records = 20000;
/// Subscribers read on one thread per this many (asynchronously; the rest of the cores stay with
/// the server and the producers).
constexpr int64_t ws_bench_subscribers_per_thread = 50;
/// Once producers are done, subscribers are stopped when every one has every acknowledged
/// record, or when no subscriber received anything for this long (records lost or refused).
constexpr auto ws_bench_idle_stop = std::chrono::seconds(3);

/// What the main thread sees of a subscriber: its progress, and its socket to shut down (the
/// subscriber blocks in a synchronous read; shutdown(2) ends that read from another thread).
struct subscriber_slot {
  std::atomic<int64_t> received{0};
  std::atomic<int> socket_fd{-1};
};

std::optional<std::string> open_ws(ws_stream& ws, const std::string& host, const std::string& port) {
  beast::error_code ec;
  tcp::resolver resolver(ws.get_executor());
  auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return "resolve " + host + ":" + port + ": " + ec.message();
  beast::get_lowest_layer(ws).connect(endpoints, ec);
  if (ec) return "connect " + host + ":" + port + ": " + ec.message();
  beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true), ec);
  ws.handshake(host + ":" + port, "/v1/ws", ec);
  if (ec) return "websocket handshake: " + ec.message();
  ws.text(true);
  return std::nullopt;
}

/// The integer after `"name":` in a flat JSON text, or nullopt.
std::optional<int64_t> int_field(std::string_view text, std::string_view quoted_name) {
  size_t at = text.find(quoted_name);
  if (at == std::string_view::npos) return std::nullopt;
  at += quoted_name.size();
  while (at < text.size() && (text[at] == ':' || text[at] == ' ')) ++at;
  int64_t v = 0;
  auto [end, err] = std::from_chars(text.data() + at, text.data() + text.size(), v);
  if (err != std::errc()) return std::nullopt;
  return v;
}

/// The scheduled send time a record object's value starts with (see bench_value).
std::optional<int64_t> scheduled_us_of(std::string_view record_text) {
  const size_t v = record_text.find("\"value\":\"");
  if (v == std::string_view::npos) return std::nullopt;
  return bench_scheduled_us(record_text.substr(v + 9));
}

class ws_producer : public std::enable_shared_from_this<ws_producer> {
 public:
  ws_producer(asio::io_context& ioc, const bench_settings& s, const http_endpoint& endpoint, int64_t index,
              bench_clock::time_point epoch, bench_thread_result& out)
      : ioc_(ioc), ws_(ioc), timer_(ioc), s_(s), endpoint_(endpoint), epoch_(epoch), out_(out) {
    per_connection_rate_ = s.rate > 0 ? static_cast<double>(s.rate) / static_cast<double>(s.producers) : 0;
    id_prefix_ = "p" + std::to_string(index) + "-";
    phase_ = static_cast<double>(index) / static_cast<double>(s.producers);   // spread, not bursts
    tail_base64_ = base64_encode(bench_value(0, static_cast<size_t>(s.record_bytes)).substr(12));
    acks_json_ = s.acks == "all" ? "\"all\"" : s.acks;   // the protocol takes 0 and 1 as numbers
  }

  void run() {
    if (auto err = open_ws(ws_, endpoint_.host, endpoint_.port)) {
      out_.errors++;
      out_.first_error = *err;
      return;
    }
    start_ = bench_clock::now();
    stop_ = start_ + std::chrono::milliseconds(s_.duration_ms);
    read();
    send_due();
    ioc_.run();   // returns when the last ack is in and the socket closed
  }

 private:
  bench_clock::time_point scheduled(int64_t k) const {
    if (per_connection_rate_ <= 0) return bench_clock::now();
    return start_ + std::chrono::duration_cast<bench_clock::duration>(
                        std::chrono::duration<double>((static_cast<double>(k) + phase_) / per_connection_rate_));
  }

  /// Queues every message whose time has come (or, without a rate, up to the in-flight window),
  /// then arms the timer for the next one.
  void send_due() {
    const auto now = bench_clock::now();
    const size_t per_message = s_.ws_produce_batch ? static_cast<size_t>(s_.batch_records) : 1;
    std::string batch;   // a `records` message under construction
    size_t in_batch = 0;
    auto finish_batch = [&] {
      if (in_batch == 0) return;
      queue_.push_back(std::move(batch) + "]}");
      sent_counts_.push_back(in_batch);
      batch.clear();
      in_batch = 0;
    };
    while (!done_sending_) {
      if (per_connection_rate_ <= 0 && static_cast<int64_t>(pending_.size()) >= ws_bench_in_flight_max) break;
      // Without a rate every message is due now (a fresh clock read would always be "later").
      const auto at = per_connection_rate_ > 0 ? scheduled(next_) : now;
      if (at >= stop_) {
        done_sending_ = true;
        break;
      }
      if (at > now) {
        // With a linger, wake once the first record not yet sent has waited that long, so the
        // records scheduled meanwhile leave together (Kafka's linger.ms); latency counts it.
        timer_.expires_at(at + std::chrono::microseconds(s_.ws_linger_us));
        timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
          if (!ec) self->send_due();
        });
        break;
      }
      const int64_t scheduled_us = std::chrono::duration_cast<std::chrono::microseconds>(at - epoch_).count();
      std::string value = base64_encode(bench_value(scheduled_us, 12)) + tail_base64_;
      pending_.push_back(at);
      ++next_;
      if (!s_.ws_produce_batch) {
        queue_.push_back("{\"type\":\"produce\",\"id\":\"" + id_prefix_ + std::to_string(next_ - 1) + "\",\"topic\":\"" +
                         s_.topic + "\",\"partition\":0,\"acks\":" + acks_json_ + ",\"value\":\"" + value + "\"}");
        sent_counts_.push_back(1);
        continue;
      }
      batch += in_batch == 0 ? "{\"type\":\"produce\",\"id\":\"" + id_prefix_ + std::to_string(next_ - 1) + "\",\"topic\":\"" +
                                   s_.topic + "\",\"acks\":" + acks_json_ + ",\"records\":["
                             : ",";
      batch += "{\"partition\":0,\"value\":\"" + value + "\"}";
      if (++in_batch == per_message) finish_batch();
    }
    finish_batch();
    write_next();
    maybe_close();
  }

  void write_next() {
    if (writing_ || queue_.empty()) return;
    writing_ = true;
    ws_.async_write(asio::buffer(queue_.front()), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->queue_.pop_front();
      if (ec) return self->fail("write: " + ec.message());
      self->write_next();
      self->maybe_close();
    });
  }

  void read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec) {
      if (!closed_) fail("read: " + ec.message());
      return;
    }
    const std::string text = beast::buffers_to_string(in_.data());
    in_.consume(in_.size());
    if (sent_counts_.empty()) return fail("an answer nobody asked for: " + text.substr(0, 200));
    const auto acked = bench_clock::now();
    const size_t count = sent_counts_.front();
    sent_counts_.pop_front();
    // A `results` answer may hold failed records: count the offsets it gives.
    const bool ack = text.find("\"produce_ack\"") != std::string::npos;
    size_t stored = ack ? count : 0;
    if (ack && text.find("\"error_code\"") != std::string::npos) {
      stored = 0;
      for (size_t at = text.find("\"offset\""); at != std::string::npos; at = text.find("\"offset\"", at + 1)) ++stored;
    }
    if (stored < count) {
      out_.errors += count - stored;
      if (out_.first_error.empty()) out_.first_error = text.substr(0, 300);
    }
    out_.records += stored;
    out_.value_bytes += static_cast<uint64_t>(s_.record_bytes) * stored;
    for (size_t i = 0; i < count; ++i) {
      if (i < stored && out_.latencies_us.size() < bench_samples_max) {
        out_.latencies_us.push_back(
            std::chrono::duration_cast<std::chrono::microseconds>(acked - pending_.front()).count());
      }
      pending_.pop_front();
    }
    if (per_connection_rate_ <= 0 && !done_sending_) send_due();
    if (maybe_close()) return;
    read();
  }

  /// Closes once everything was sent and answered; true when closing.
  bool maybe_close() {
    if (!done_sending_ || !pending_.empty() || writing_ || closed_) return closed_;
    closed_ = true;
    timer_.cancel();
    ws_.async_close(websocket::close_code::normal, [self = shared_from_this()](beast::error_code) {});
    return true;
  }

  void fail(const std::string& why) {
    out_.errors++;
    if (out_.first_error.empty()) out_.first_error = why;
    closed_ = true;
    timer_.cancel();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

  asio::io_context& ioc_;
  ws_stream ws_;
  asio::steady_timer timer_;
  const bench_settings& s_;
  const http_endpoint& endpoint_;
  bench_clock::time_point epoch_;
  bench_thread_result& out_;
  double per_connection_rate_ = 0;
  double phase_ = 0;   // this producer's schedule is offset by phase_ of one interval
  std::string id_prefix_;
  std::string tail_base64_;
  std::string acks_json_;
  bench_clock::time_point start_, stop_;
  int64_t next_ = 0;
  bool done_sending_ = false;
  bool writing_ = false;
  bool closed_ = false;
  std::deque<std::string> queue_;                   // messages not yet written
  std::deque<bench_clock::time_point> pending_;     // scheduled times of unanswered records
  std::deque<size_t> sent_counts_;                  // records of each unanswered message
  beast::flat_buffer in_;
};

/// A subscriber: connects, subscribes and grants credit synchronously (so every subscription
/// exists before producers start), then reads asynchronously on a shared io_context, topping up
/// credit as it goes. Many subscribers share one thread, as a server's clients would share
/// machines: a thread each made 100 subscribers cost 100 wake-ups per delivery on the same two
/// cores as the server.
class ws_subscriber : public std::enable_shared_from_this<ws_subscriber> {
 public:
  ws_subscriber(asio::io_context& ioc, const bench_settings& s, bench_clock::time_point epoch,
                const std::atomic<bool>& producers_done, subscriber_slot& slot, bench_thread_result& out,
                uint64_t& out_of_order)
      : ws_(ioc), s_(s), epoch_(epoch), producers_done_(producers_done), slot_(slot), out_(out), out_of_order_(out_of_order) {}

  /// Connects and subscribes from `start_offset`; false (with the error counted) when that failed.
  bool subscribe(const http_endpoint& endpoint, int64_t start_offset) {
    if (auto err = open_ws(ws_, endpoint.host, endpoint.port)) return fail(*err);
    beast::error_code ec;
    const std::string subscribe = "{\"type\":\"subscribe\",\"id\":\"s\",\"topic\":\"" + s_.topic +
                                  "\",\"partition\":0,\"offset\":" + std::to_string(start_offset) +
                                  (s_.ws_batch ? ",\"batch\":true}" : "}");
    ws_.write(asio::buffer(subscribe), ec);
    if (!ec) ws_.write(asio::buffer(credit_text(ws_bench_credit_records)), ec);
    if (!ec) ws_.read(in_, ec);   // "subscribed"
    if (ec) return fail("subscribe: " + ec.message());
    in_.consume(in_.size());
    last_offset_ = start_offset - 1;
    slot_.socket_fd = beast::get_lowest_layer(ws_).socket().native_handle();
    return true;
  }

  void start_reading() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

 private:
  static std::string credit_text(int64_t records) {
    return "{\"type\":\"credit\",\"records\":" + std::to_string(records) + "}";
  }

  void on_read(beast::error_code ec) {
    const auto now = bench_clock::now();
    if (ec) {
      if (!producers_done_) fail("read: " + ec.message());   // else the main thread ended the run
      return;
    }
    const std::string_view text(static_cast<const char*>(in_.data().data()), in_.size());
    // A `record` message, or a `records` message holding several: each record object starts
    // with "type":"record" and has one offset and one value.
    constexpr std::string_view record_start = "\"type\":\"record\"";
    size_t at = text.find(record_start);
    if (at == std::string_view::npos) fail(std::string(text.substr(0, 300)));
    const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(now - epoch_).count();
    int64_t in_message = 0;
    while (at != std::string_view::npos) {
      const size_t next = text.find(record_start, at + record_start.size());
      const std::string_view rec = text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at);
      auto offset = int_field(rec, "\"offset\"");
      if (offset && *offset <= last_offset_) ++out_of_order_;
      if (offset) last_offset_ = *offset;
      if (auto scheduled_us = scheduled_us_of(rec); scheduled_us && out_.latencies_us.size() < bench_samples_max) {
        out_.latencies_us.push_back(now_us - *scheduled_us);
      }
      ++in_message;
      at = next;
    }
    in_.consume(in_.size());
    out_.records += static_cast<uint64_t>(in_message);
    out_.value_bytes += static_cast<uint64_t>(s_.record_bytes * in_message);
    slot_.received += in_message;
    credit_used_ += in_message;
    if (credit_used_ >= ws_bench_credit_records / 2 && !writing_) {
      writing_ = true;
      credit_ = credit_text(credit_used_);
      credit_used_ = 0;
      ws_.async_write(asio::buffer(credit_), [self = shared_from_this()](beast::error_code wec, size_t) {
        self->writing_ = false;
        if (wec && !self->producers_done_) self->fail("credit: " + wec.message());
      });
    }
    start_reading();
  }

  bool fail(const std::string& why) {
    out_.errors++;
    if (out_.first_error.empty()) out_.first_error = why;
    return false;
  }

  ws_stream ws_;
  const bench_settings& s_;
  bench_clock::time_point epoch_;
  const std::atomic<bool>& producers_done_;
  subscriber_slot& slot_;
  bench_thread_result& out_;
  uint64_t& out_of_order_;
  beast::flat_buffer in_;
  std::string credit_;   // the credit message being written
  bool writing_ = false;
  int64_t credit_used_ = 0;
  int64_t last_offset_ = -1;
};

}  // namespace

ws_bench_outcome run_ws_bench(const bench_settings& s, const http_endpoint& endpoint, int64_t start_offset) {
  ws_bench_outcome outcome;
  const auto epoch = bench_clock::now();
  std::atomic<bool> producers_done{false};
  std::vector<subscriber_slot> slots(static_cast<size_t>(s.subscribers));
  std::vector<bench_thread_result> delivered(static_cast<size_t>(s.subscribers));
  std::vector<uint64_t> out_of_order(static_cast<size_t>(s.subscribers), 0);
  const int64_t threads = (s.subscribers + ws_bench_subscribers_per_thread - 1) / ws_bench_subscribers_per_thread;
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  for (int64_t t = 0; t < threads; ++t) contexts.push_back(std::make_unique<asio::io_context>(1));
  // Subscriptions first (each answers "subscribed"), so every record is live-tailed.
  std::vector<std::shared_ptr<ws_subscriber>> subscribers;
  for (int64_t i = 0; i < s.subscribers; ++i) {
    const auto k = static_cast<size_t>(i);
    auto sub = std::make_shared<ws_subscriber>(*contexts[k % contexts.size()], s, epoch, producers_done, slots[k],
                                               delivered[k], out_of_order[k]);
    if (sub->subscribe(endpoint, start_offset)) subscribers.push_back(std::move(sub));
  }
  for (auto& sub : subscribers) sub->start_reading();
  subscribers.clear();   // each is kept alive by its pending read
  std::vector<std::thread> subscriber_threads;
  for (auto& ioc : contexts) subscriber_threads.emplace_back([&ioc] { ioc->run(); });
  std::vector<bench_thread_result> produced(static_cast<size_t>(s.producers));
  std::vector<std::thread> producers;
  const auto start = bench_clock::now();
  for (int64_t i = 0; i < s.producers; ++i) {
    producers.emplace_back([&s, &endpoint, i, epoch, &produced] {
      asio::io_context ioc;
      auto p = std::make_shared<ws_producer>(ioc, s, endpoint, i, epoch, produced[static_cast<size_t>(i)]);
      p->run();
    });
  }
  for (auto& t : producers) t.join();
  outcome.seconds = std::chrono::duration<double>(bench_clock::now() - start).count();
  outcome.produced = merge_bench_results(produced);
  producers_done = true;
  const auto total = static_cast<int64_t>(outcome.produced.records);
  int64_t last_seen = -1;
  auto last_progress = bench_clock::now();
  while (true) {   // a deadline, not a guess: stops at once when everything is in
    int64_t seen = 0;
    bool all_in = true;
    for (auto& slot : slots) {
      seen += slot.received;
      all_in = all_in && slot.received >= total;
    }
    if (seen != last_seen) last_progress = bench_clock::now();
    last_seen = seen;
    if (all_in || bench_clock::now() - last_progress > ws_bench_idle_stop) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  outcome.deliver_seconds = std::chrono::duration<double>(last_progress - start).count();
  for (auto& slot : slots) {
    if (slot.socket_fd >= 0) ::shutdown(slot.socket_fd, SHUT_RDWR);
  }
  for (auto& t : subscriber_threads) t.join();
  outcome.delivered = merge_bench_results(delivered);
  for (uint64_t n : out_of_order) outcome.out_of_order += n;
  return outcome;
}

}  // namespace ringlog::cli
