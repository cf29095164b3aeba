// `ringlog bench --transport kafka`: producers and consumers speaking Kafka's wire protocol to the
// broker's kafka:// listener, through the same generated codec the broker uses (issue 15's
// benchmark). No JSON and no base64: record batches v2 built once per request, Produce v9 with
// up to --kafka-in-flight unanswered requests per connection (Kafka's
// max.in.flight.requests.per.connection, default 5), Fetch v11 read back by consumers.
// Blocking POSIX sockets, one per thread: a load generator, not a client library.

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <deque>
#include <thread>

#include "bench.h"
#include "ringlog/codec/record_batch.h"
#include "ringlog/protocol/frame.h"
#include "ringlog/protocol/messages.h"

namespace ringlog::cli {
namespace {

/// Produce and Fetch versions spoken (both non-flexible, supported by the listener: docs/kafka.md).
constexpr int16_t bench_produce_version = 9;
constexpr int16_t bench_fetch_version = 11;
/// A response frame larger than this ends the run with an error (the broker's answers to the
/// bench are at most fetch.max.bytes-sized; this bounds a corrupt size prefix).
constexpr int32_t bench_frame_bytes_max = 256 * 1024 * 1024;
/// Bytes a consumer asks for per Fetch and partition (Kafka's max.partition.fetch.bytes default).
constexpr int32_t bench_fetch_partition_bytes = 1024 * 1024;

/// One blocking connection to host:port: whole frames out, whole frames in.
class kafka_connection {
 public:
  ~kafka_connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// Whether an answer's first bytes are ready within `wait` (0: now), so a rate-limited producer
  /// reads its answers as they come instead of when its window is full.
  bool readable_within(std::chrono::microseconds wait) const {
    pollfd p{fd_, POLLIN, 0};
    const int64_t us = std::max<int64_t>(wait.count(), 0);
    const timespec timeout{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000 * 1000)};
    return ::ppoll(&p, 1, &timeout, nullptr) > 0;
  }

  /// Connects; the error names the address and why.
  std::optional<std::string> open(const std::string& host_port) {
    const auto colon = host_port.rfind(':');
    if (colon == std::string::npos) return "kafka bootstrap '" + host_port + "' is not HOST:PORT";
    const std::string host = host_port.substr(0, colon), port = host_port.substr(colon + 1);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      return "resolve " + host_port + ": " + ::gai_strerror(rc);
    }
    std::string why = "no address";
    for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;
      } else {
        why = std::strerror(errno);
        ::close(fd);
      }
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) return "connect " + host_port + ": " + why;
    return std::nullopt;
  }

  /// Sends a request frame for `body`; returns its correlation id.
  template <typename Body>
  std::optional<int32_t> send(int16_t version, const Body& body, std::string& why) {
    protocol::request_header_data header;
    header.request_api_key = Body::api_key;
    header.request_api_version = version;
    header.correlation_id = next_correlation_id_++;
    header.client_id = "ringlog-bench";
    protocol::writer w;
    auto encoded = protocol::encode_request_frame(w, header, body);
    if (!encoded.ok()) {
      why = "encode " + std::string(Body::schema_name) + ": " + encoded.error().message;
      return std::nullopt;
    }
    if (auto e = write_all(w.buffer())) {
      why = *e;
      return std::nullopt;
    }
    return header.correlation_id;
  }

  /// Reads the next response frame and decodes it as Body's response at `version`; its
  /// correlation id must be `expected` (Kafka answers a connection's requests in order).
  template <typename Body>
  std::optional<Body> receive(int16_t version, int32_t expected, std::string& why) {
    auto failed = [&why](std::string reason) -> std::optional<Body> {
      why = std::move(reason);
      return std::nullopt;
    };
    std::byte size_bytes[4];
    if (auto e = read_all(size_bytes, 4)) return failed(*e);
    const int32_t size = static_cast<int32_t>((std::to_integer<uint32_t>(size_bytes[0]) << 24) |
                                              (std::to_integer<uint32_t>(size_bytes[1]) << 16) |
                                              (std::to_integer<uint32_t>(size_bytes[2]) << 8) |
                                              std::to_integer<uint32_t>(size_bytes[3]));
    if (size < 4 || size > bench_frame_bytes_max) {
      return failed("a response frame of " + std::to_string(size) + " bytes (at most " +
                              std::to_string(bench_frame_bytes_max) + ")");
    }
    frame_.resize(static_cast<size_t>(size));
    if (auto e = read_all(frame_.data(), frame_.size())) return failed(*e);
    protocol::reader rd(frame_);
    auto header = protocol::decode_response_header(rd, Body::api_key, version);
    if (!header.ok()) return failed("response header: " + header.error().message);
    if (header->correlation_id != expected) {
      return failed("response to request " + std::to_string(header->correlation_id) + ", expected " +
                              std::to_string(expected));
    }
    auto decoded = Body::decode(rd, version);
    if (!decoded.ok()) return failed(std::string(Body::schema_name) + ": " + decoded.error().message);
    return std::move(decoded).value();
  }

 private:
  std::optional<std::string> write_all(const protocol::bytes& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::string("send: ") + std::strerror(errno);
      done += static_cast<size_t>(n);
    }
    return std::nullopt;
  }

  std::optional<std::string> read_all(std::byte* out, size_t count) {
    size_t done = 0;
    while (done < count) {
      const ssize_t n = ::recv(fd_, out + done, count - done, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) return std::string("the broker closed the connection");
      if (n < 0) return std::string("recv: ") + std::strerror(errno);
      done += static_cast<size_t>(n);
    }
    return std::nullopt;
  }

  int fd_ = -1;
  int32_t next_correlation_id_ = 1;
  protocol::bytes frame_;
};

void fail(bench_thread_result& out, const std::string& why) {
  out.errors++;
  if (out.first_error.empty()) out.first_error = why;
}

/// A request sent and not answered yet.
struct in_flight_produce {
  int32_t correlation_id = 0;
  bench_clock::time_point scheduled;
};

}  // namespace

void bench_kafka_produce(const bench_settings& s, int64_t index, bench_clock::time_point epoch,
                         bench_thread_result& out) {
  kafka_connection conn;
  if (auto e = conn.open(s.kafka_bootstrap)) return fail(out, *e);
  const int32_t partition = static_cast<int32_t>(index % s.partitions);
  const int16_t acks = s.acks == "all" ? int16_t{-1} : s.acks == "1" ? int16_t{1} : int16_t{0};
  const double per_thread_rate = s.rate > 0 ? static_cast<double>(s.rate) / static_cast<double>(s.producers) : 0;
  const auto interval = per_thread_rate > 0
                            ? std::chrono::duration<double>(static_cast<double>(s.batch_records) / per_thread_rate)
                            : std::chrono::duration<double>(0);
  // acks=0 has no answers to wait for: nothing is in flight.
  const size_t in_flight_max = acks == 0 ? 0 : static_cast<size_t>(s.kafka_in_flight);
  std::deque<in_flight_produce> in_flight;
  std::vector<model::record> records(static_cast<size_t>(s.batch_records));
  const auto start = bench_clock::now();
  const auto stop = start + std::chrono::milliseconds(s.duration_ms);
  const double phase = static_cast<double>(index) / static_cast<double>(s.producers);
  auto take_answer = [&]() -> bool {
    const auto oldest = in_flight.front();
    in_flight.pop_front();
    std::string why;
    auto answer = conn.receive<protocol::produce_response_data>(bench_produce_version, oldest.correlation_id, why);
    const auto acked = bench_clock::now();
    if (!answer) {
      fail(out, why);
      return false;
    }
    const auto& responses = answer->responses;
    if (responses.size() != 1 || responses[0].partition_responses.size() != 1) {
      fail(out, "a Produce answer without this partition");
      return true;
    }
    const auto& p = responses[0].partition_responses[0];
    if (p.error_code != 0) {
      fail(out, "Produce error " + std::to_string(p.error_code) + ": " + p.error_message.value_or(""));
      return true;
    }
    out.records += static_cast<uint64_t>(s.batch_records);
    out.value_bytes += static_cast<uint64_t>(s.batch_records * s.record_bytes);
    if (out.latencies_us.size() < bench_samples_max) {
      out.latencies_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(acked - oldest.scheduled).count());
    }
    return true;
  };
  for (int64_t k = 0;; ++k) {
    auto scheduled = per_thread_rate > 0 ? start + std::chrono::duration_cast<bench_clock::duration>(
                                                       interval * (static_cast<double>(k) + phase))
                                         : bench_clock::now();
    if (scheduled >= stop) break;
    // Until the next batch is due, read the answers that come: an answer read only once the
    // window was full counted the wait for the next sends (produce p50 20 ms against an
    // end-to-end 0.5 ms at 5 in flight and 2,000/s; new user, session 28).
    while (per_thread_rate > 0 && !in_flight.empty() &&
           conn.readable_within(std::chrono::duration_cast<std::chrono::microseconds>(scheduled - bench_clock::now()))) {
      if (!take_answer()) return;
    }
    if (per_thread_rate > 0) std::this_thread::sleep_until(scheduled);  // a schedule, not a wait for a condition
    const int64_t scheduled_us = std::chrono::duration_cast<std::chrono::microseconds>(scheduled - epoch).count();
    const std::string value = bench_value(scheduled_us, static_cast<size_t>(s.record_bytes));
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    for (auto& r : records) {
      r.timestamp = now_ms;
      const auto* v = reinterpret_cast<const std::byte*>(value.data());
      r.value = model::bytes(v, v + value.size());
    }
    auto batch = codec::encode_batch(codec::batch_options{}, records);
    if (!batch.ok()) return fail(out, "encode batch: " + batch.error().message);
    protocol::produce_request_data request;
    request.acks = acks;
    request.timeout_ms = 30000;
    protocol::produce_request_data::topic_produce_data topic;
    topic.name = s.topic;
    protocol::produce_request_data::partition_produce_data part;
    part.index = partition;
    part.records = std::move(batch).value();
    topic.partition_data.push_back(std::move(part));
    request.topic_data.push_back(std::move(topic));
    std::string why;
    auto sent = conn.send(bench_produce_version, request, why);
    if (!sent) return fail(out, why);
    if (acks == 0) {
      out.records += static_cast<uint64_t>(s.batch_records);
      out.value_bytes += static_cast<uint64_t>(s.batch_records * s.record_bytes);
      continue;
    }
    in_flight.push_back({*sent, per_thread_rate > 0 ? scheduled : bench_clock::now()});
    while (in_flight.size() >= in_flight_max && !in_flight.empty()) {
      if (!take_answer()) return;
    }
  }
  while (!in_flight.empty()) {
    if (!take_answer()) return;
  }
}

void bench_kafka_consume(const bench_settings& s, int64_t index, bench_clock::time_point epoch,
                         const std::map<int64_t, int64_t>& start_offsets, const std::atomic<bool>& producers_done,
                         bench_thread_result& out) {
  kafka_connection conn;
  if (auto e = conn.open(s.kafka_bootstrap)) return fail(out, *e);
  std::map<int64_t, int64_t> next;  // partition -> next offset
  for (int64_t p = index; p < s.partitions; p += s.consumers) next[p] = start_offsets.at(p);
  auto idle_since = bench_clock::now();
  while (true) {
    protocol::fetch_request_data request;
    request.max_wait_ms = 500;   // long-poll: the broker answers as soon as records arrive
    request.min_bytes = 1;
    protocol::fetch_request_data::fetch_topic topic;
    topic.topic = s.topic;
    for (const auto& [p, offset] : next) {
      protocol::fetch_request_data::fetch_partition fp;
      fp.partition = static_cast<int32_t>(p);
      fp.fetch_offset = offset;
      fp.partition_max_bytes = bench_fetch_partition_bytes;
      topic.partitions.push_back(fp);
    }
    request.topics.push_back(std::move(topic));
    std::string why;
    auto sent = conn.send(bench_fetch_version, request, why);
    if (!sent) return fail(out, why);
    auto answer = conn.receive<protocol::fetch_response_data>(bench_fetch_version, *sent, why);
    if (!answer) return fail(out, why);
    const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(bench_clock::now() - epoch).count();
    bool got_any = false;
    for (const auto& t : answer->responses) {
      for (const auto& p : t.partitions) {
        if (p.error_code != 0) {
          fail(out, "Fetch error " + std::to_string(p.error_code) + " on partition " + std::to_string(p.partition_index));
          continue;
        }
        if (!p.records) continue;
        std::span<const std::byte> rest(*p.records);
        // Whole batches one after another; a batch cut at the end of the answer is fetched again.
        while (rest.size() >= codec::batch_log_overhead_bytes) {
          auto header = codec::decode_header(rest);
          if (!header.ok() || header->size_bytes() > rest.size()) break;
          auto decoded = codec::decode_records(rest.first(header->size_bytes()));
          rest = rest.subspan(header->size_bytes());
          if (!decoded.ok()) {
            fail(out, "a fetched batch: " + decoded.error().message);
            continue;
          }
          for (const auto& r : *decoded) {
            auto& offset = next[p.partition_index];
            if (r.record_offset.value() < offset) continue;   // a batch fetched from its middle
            offset = r.record_offset.value() + 1;
            int64_t scheduled_us = 0;
            if (!r.value || r.value->size() < 12) continue;
            const auto* digits = reinterpret_cast<const char*>(r.value->data());
            if (std::from_chars(digits, digits + 12, scheduled_us).ec != std::errc()) continue;
            if (out.latencies_us.size() < bench_samples_max) out.latencies_us.push_back(now_us - scheduled_us);
            out.records++;
            out.value_bytes += static_cast<uint64_t>(s.record_bytes);
            got_any = true;
          }
        }
      }
    }
    if (got_any) {
      idle_since = bench_clock::now();
    } else if (producers_done && bench_clock::now() - idle_since > std::chrono::seconds(2)) {
      return;  // producers stopped and nothing new for 2 s: everything was read
    }
  }
}

}  // namespace ringlog::cli
