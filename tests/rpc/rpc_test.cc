// The cluster transport over real loopback sockets in one process: a server on shard 0 and a
// client on shard 1 of a shard_threads runtime. Raw POSIX sockets play a misbehaving peer
// (unknown api, garbage, oversized frames). Every wait polls with a deadline.

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "ringlog/protocol/frame.h"
#include "ringlog/rpc/client.h"
#include "ringlog/rpc/cluster_transport.h"
#include "ringlog/rpc/constants.h"
#include "ringlog/rpc/requests.h"
#include "ringlog/rpc/server.h"

namespace ringlog::rpc {
namespace {

using namespace std::chrono_literals;

constexpr auto wait_limit = 10s;

std::unique_ptr<runtime::shard_threads> make_runtime() {
  auto r = runtime::shard_threads::create(2, io::backend_kind::posix, nullptr);
  REQUIRE(r.ok());
  auto rt = std::move(r).value();
  rt->start();
  return rt;
}

template <typename F>
bool wait_for(F done) {
  const auto deadline = std::chrono::steady_clock::now() + wait_limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

bytes encode_vote(int32_t epoch) {
  protocol::vote_request_data req;
  req.cluster_id = "c";
  protocol::vote_request_data::topic_data topic;
  topic.topic_name = "__cluster_metadata";
  protocol::vote_request_data::partition_data p;
  p.candidate_epoch = epoch;
  p.candidate_id = 1;
  topic.partitions.push_back(p);
  req.topics.push_back(topic);
  protocol::writer w;
  REQUIRE(req.encode(w, 1).ok());
  return std::move(w).take();
}

/// An empty BeginQuorumEpoch v1 body (for handlers that park or drop their requests).
bytes encode_begin_quorum_epoch() {
  protocol::begin_quorum_epoch_request_data req;
  protocol::writer w;
  REQUIRE(req.encode(w, 1).ok());
  return std::move(w).take();
}

/// A Vote handler that answers with leader_epoch = the request's candidate_epoch.
/// Answers a Vote with the request's candidate epoch plus `added` (tells listeners apart).
request_handler echo_vote(int32_t added = 0) {
  return [added](const protocol::request_header_data& header, std::span<const std::byte> body, respond_fn respond) {
    protocol::reader rd(body);
    auto req = protocol::vote_request_data::decode(rd, header.request_api_version);
    REQUIRE(req.ok());
    protocol::vote_response_data resp;
    protocol::vote_response_data::topic_data topic;
    protocol::vote_response_data::partition_data p;
    p.leader_epoch = req->topics.at(0).partitions.at(0).candidate_epoch + added;
    topic.partitions.push_back(p);
    resp.topics.push_back(topic);
    protocol::writer w;
    REQUIRE(protocol::encode_response_frame(w, header.request_api_version, header.correlation_id, resp).ok());
    respond(std::move(w).take());
  };
}

int32_t epoch_of(const bytes& body) {
  protocol::reader rd(body);
  auto resp = protocol::vote_response_data::decode(rd, 1);
  REQUIRE(resp.ok());
  return resp->topics.at(0).partitions.at(0).leader_epoch;
}

/// Sends one request and waits (bounded) for its result.
result<bytes> call(client& c, int16_t api_key, bytes body, int64_t timeout_ms) {
  auto p = std::make_shared<std::promise<result<bytes>>>();
  auto f = p->get_future();
  c.send(api_key, 1, std::move(body), timeout_ms, [p](result<bytes> r) { p->set_value(std::move(r)); });
  REQUIRE(f.wait_for(wait_limit) == std::future_status::ready);
  return f.get();
}

/// Sends a Vote through `t` to node `to` and waits (bounded) for its result.
result<bytes> vote_through(cluster_transport& t, int32_t to, int32_t epoch, int64_t timeout_ms) {
  auto p = std::make_shared<std::promise<result<bytes>>>();
  auto f = p->get_future();
  t.send(to, protocol::vote_request_data::api_key, 1, encode_vote(epoch), timeout_ms,
         [p](result<bytes> r) { p->set_value(std::move(r)); });
  REQUIRE(f.wait_for(wait_limit) == std::future_status::ready);
  return f.get();
}

/// A blocking POSIX socket connected to 127.0.0.1:port, for misbehaving-peer tests.
struct raw_socket {
  int fd = -1;
  explicit raw_socket(uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~raw_socket() { ::close(fd); }
  void write_all(const std::vector<uint8_t>& data) const {
    REQUIRE(::send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size()));
  }
  /// Reads exactly n bytes; empty on EOF, error or timeout.
  [[nodiscard]] std::vector<uint8_t> read_exact(size_t n) const {
    std::vector<uint8_t> out(n);
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd, out.data() + got, n - got, 0);
      if (r <= 0) return {};
      got += static_cast<size_t>(r);
    }
    return out;
  }
  /// True once the peer closed the connection (recv returns 0 or a reset), within 5 s.
  [[nodiscard]] bool closed_by_peer() const {
    uint8_t b = 0;
    const ssize_t r = ::recv(fd, &b, 1, 0);
    return r == 0 || (r < 0 && errno == ECONNRESET);
  }
};

std::vector<uint8_t> be32(int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  return {static_cast<uint8_t>(u >> 24), static_cast<uint8_t>(u >> 16), static_cast<uint8_t>(u >> 8),
          static_cast<uint8_t>(u)};
}

/// A request frame with header v1 (api key, version, correlation id, client id "t") and then
/// `tail` (none: no body; a flexible version's header v2 starts it with its tagged fields).
std::vector<uint8_t> raw_request(int16_t api_key, int16_t version, int32_t correlation_id,
                                 const std::vector<uint8_t>& tail = {}) {
  std::vector<uint8_t> header = {static_cast<uint8_t>(api_key >> 8), static_cast<uint8_t>(api_key),
                                 static_cast<uint8_t>(version >> 8), static_cast<uint8_t>(version)};
  auto id = be32(correlation_id);
  header.insert(header.end(), id.begin(), id.end());
  header.insert(header.end(), {0, 1, 't'});
  header.insert(header.end(), tail.begin(), tail.end());
  auto frame = be32(static_cast<int32_t>(header.size()));
  frame.insert(frame.end(), header.begin(), header.end());
  return frame;
}

/// Reads one response frame: returns {correlation id, first int16 of the body}.
std::pair<int32_t, int16_t> read_error_answer(const raw_socket& s) {
  auto size = s.read_exact(4);
  REQUIRE(size.size() == 4);
  const int32_t n = (size[0] << 24) | (size[1] << 16) | (size[2] << 8) | size[3];
  REQUIRE(n >= 6);
  auto frame = s.read_exact(static_cast<size_t>(n));
  REQUIRE(frame.size() == static_cast<size_t>(n));
  const int32_t id = (frame[0] << 24) | (frame[1] << 16) | (frame[2] << 8) | frame[3];
  const auto code = static_cast<int16_t>((frame[4] << 8) | frame[5]);
  return {id, code};
}

struct fixture {
  std::unique_ptr<runtime::shard_threads> rt = make_runtime();
  std::unique_ptr<server> srv;
  fixture() {
    auto s = server::listen(*rt, 0, "127.0.0.1", 0);
    REQUIRE(s.ok());
    srv = std::move(s).value();
    srv->set_handler(protocol::vote_request_data::api_key, echo_vote());
  }
  ~fixture() {
    srv->stop();
    rt->stop();
  }
};

}  // namespace

TEST_CASE("a request and its response round-trip; pipelined requests match by correlation id") {
  fixture f;
  f.srv->start();
  client c(*f.rt, 1, "127.0.0.1", f.srv->port(), "test");
  auto one = call(c, protocol::vote_request_data::api_key, encode_vote(7), 2000);
  REQUIRE(one.ok());
  CHECK(epoch_of(*one) == 7);

  constexpr int requests = 200;
  std::mutex mutex;
  std::vector<std::pair<int32_t, int32_t>> answers;  // {sent epoch, answered epoch}
  for (int i = 0; i < requests; ++i) {
    c.send(protocol::vote_request_data::api_key, 1, encode_vote(i), 2000, [&, i](result<bytes> r) {
      std::lock_guard lock(mutex);
      answers.emplace_back(i, r.ok() ? epoch_of(*r) : -1);
    });
  }
  REQUIRE(wait_for([&] {
    std::lock_guard lock(mutex);
    return answers.size() == requests;
  }));
  for (const auto& [sent, answered] : answers) CHECK(sent == answered);
  c.stop();
}

TEST_CASE("an unknown api key, an unhandled api and an unsupported version get UNSUPPORTED_VERSION") {
  fixture f;
  f.srv->start();
  raw_socket s(f.srv->port());
  s.write_all(raw_request(9999, 0, 41));
  auto [id1, code1] = read_error_answer(s);
  CHECK(id1 == 41);
  CHECK(code1 == 35);
  s.write_all(raw_request(3, 1, 42));  // Metadata: known to the codec, no handler here
  auto [id2, code2] = read_error_answer(s);
  CHECK(id2 == 42);
  CHECK(code2 == 35);
  s.write_all(raw_request(protocol::api_versions_request_data::api_key, 99, 43));
  auto [id3, code3] = read_error_answer(s);
  CHECK(id3 == 43);
  CHECK(code3 == 35);
  // The connection stays usable: ApiVersions v0 is answered with the supported list.
  s.write_all(raw_request(protocol::api_versions_request_data::api_key, 0, 44));
  auto [id4, code4] = read_error_answer(s);
  CHECK(id4 == 44);
  CHECK(code4 == 0);
}

TEST_CASE("ApiVersions through the client lists the supported apis") {
  fixture f;
  f.srv->start();
  client c(*f.rt, 1, "127.0.0.1", f.srv->port(), "test");
  protocol::api_versions_request_data req;
  protocol::writer w;
  REQUIRE(req.encode(w, 3).ok());
  auto p = std::make_shared<std::promise<result<bytes>>>();
  auto fut = p->get_future();
  c.send(protocol::api_versions_request_data::api_key, 3, std::move(w).take(), 2000,
         [p](result<bytes> r) { p->set_value(std::move(r)); });
  REQUIRE(fut.wait_for(wait_limit) == std::future_status::ready);
  auto r = fut.get();
  REQUIRE(r.ok());
  protocol::reader rd(*r);
  auto resp = protocol::api_versions_response_data::decode(rd, 3);
  REQUIRE(resp.ok());
  CHECK(resp->error_code == 0);
  CHECK(resp->api_keys.size() == protocol::supported_apis().size());
  c.stop();
}

TEST_CASE("a garbage frame, an oversized frame and a negative size close the connection") {
  fixture f;
  f.srv->start();
  {
    raw_socket s(f.srv->port());
    s.write_all({0, 0, 0, 2, 0x00, 0x12});  // 2 bytes: a header cut inside the api version
    CHECK(s.closed_by_peer());
  }
  {
    raw_socket s(f.srv->port());
    s.write_all(be32(protocol::limits::frame_bytes_max + 1));
    CHECK(s.closed_by_peer());
  }
  {
    raw_socket s(f.srv->port());
    s.write_all(be32(-5));
    CHECK(s.closed_by_peer());
  }
  CHECK(wait_for([&] { return f.srv->open_connections() == 0; }));
}

TEST_CASE("a close_connection_frame is no response frame and carries its request and reason") {
  protocol::request_header_data header;
  header.request_api_key = 53;
  header.request_api_version = 1;
  const bytes frame = close_connection_frame(header, "BeginQuorumEpochRequest v1: does not decode");
  auto refused = as_close_connection(frame);
  REQUIRE(refused.has_value());
  CHECK(refused->api_key == 53);
  CHECK(refused->api_version == 1);
  CHECK(refused->why == "BeginQuorumEpochRequest v1: does not decode");
  CHECK_FALSE(as_close_connection(bytes{}).has_value());
  CHECK_FALSE(as_close_connection(encode_vote(1)).has_value());
}

TEST_CASE("a request whose body does not decode closes its connection (Kafka closes on a request it cannot parse)") {
  fixture f;
  // The broker's handlers decode through answer_request / decode_or_close.
  f.srv->set_handler(protocol::vote_request_data::api_key,
                     [](const protocol::request_header_data& header, std::span<const std::byte> body, respond_fn respond) {
                       answer_request<protocol::vote_request_data>(
                           header, body, std::move(respond),
                           [](const auto&, auto answer) { answer(protocol::vote_response_data{}); });
                     });
  f.srv->start();
  raw_socket s(f.srv->port());
  // Vote v1 is flexible: header v2's empty tagged fields, then a body that is no VoteRequest.
  s.write_all(raw_request(protocol::vote_request_data::api_key, 1, 7, {0, 0x01, 0x02, 0x03}));
  CHECK(s.closed_by_peer());   // before: no answer, no close (the read timed out)
  CHECK(wait_for([&] { return f.srv->open_connections() == 0; }));
}

TEST_CASE("a request without an answer times out; a peer that goes away fails its requests") {
  fixture f;
  std::mutex mutex;
  std::vector<respond_fn> parked;
  f.srv->set_handler(protocol::begin_quorum_epoch_request_data::api_key,
                     [&](const protocol::request_header_data&, std::span<const std::byte>, respond_fn respond) {
                       std::lock_guard lock(mutex);
                       parked.push_back(std::move(respond));
                     });
  f.srv->start();
  client c(*f.rt, 1, "127.0.0.1", f.srv->port(), "test");
  const auto body = encode_begin_quorum_epoch();

  const auto started = std::chrono::steady_clock::now();
  auto timed_out = call(c, protocol::begin_quorum_epoch_request_data::api_key, body, 150);
  REQUIRE(!timed_out.ok());
  CHECK(timed_out.error().code == errc::timeout);
  CHECK(std::chrono::steady_clock::now() - started >= 150ms);

  // Peer killed mid-request: the request is with the handler when the server closes everything.
  auto p = std::make_shared<std::promise<result<bytes>>>();
  auto fut = p->get_future();
  c.send(protocol::begin_quorum_epoch_request_data::api_key, 1, body, 5000,
         [p](result<bytes> r) { p->set_value(std::move(r)); });
  REQUIRE(wait_for([&] {
    std::lock_guard lock(mutex);
    return parked.size() == 2;
  }));
  f.srv->stop();
  REQUIRE(fut.wait_for(wait_limit) == std::future_status::ready);
  auto killed = fut.get();
  REQUIRE(!killed.ok());
  CHECK(killed.error().code == errc::disconnected);
  // A late answer to the closed connection is dropped, not a crash.
  parked[1](bytes{std::byte{0}});
  c.stop();
}

/// A listener whose connections are accepted but never read, with a tiny receive window: what a
/// client writes stays in its own kernel's send queue, unacknowledged, as over a cut network path.
struct stalled_peer {
  int listen_fd = -1;
  uint16_t port = 0;
  stalled_peer() {
    listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listen_fd >= 0);
    const int small = 4096;   // inherited by accepted sockets: the window closes after a few KiB
    ::setsockopt(listen_fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    timeval tv{5, 0};
    ::setsockopt(listen_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);   // bounds accept()
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listen_fd, 4) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~stalled_peer() { ::close(listen_fd); }
  /// The next connection (-1 when none comes within 5 s); the caller closes it.
  [[nodiscard]] int accept_one() const {
    const int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return -1;
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
  }
};

/// Reads `fd` to its end: true when it ends in a reset (ECONNRESET), false on a clean EOF or a
/// timeout. A plain close() by the writer delivers its whole send queue, then FIN (false here).
bool ends_in_reset(int fd, size_t& received) {
  std::vector<std::byte> buffer(65536);
  for (;;) {
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
    if (n > 0) {
      received += static_cast<size_t>(n);
      continue;
    }
    return n < 0 && errno == ECONNRESET;
  }
}

TEST_CASE("requests a handler drops unanswered give their in-flight slots back: the connection serves on") {
  fixture f;
  std::atomic<int> dropped{0};
  // A handler that discards what it cannot take (raft's inbound queue full, a deadline passed).
  f.srv->set_handler(protocol::begin_quorum_epoch_request_data::api_key,
                     [&](const protocol::request_header_data&, std::span<const std::byte>, respond_fn) { ++dropped; });
  f.srv->start();
  client c(*f.rt, 1, "127.0.0.1", f.srv->port(), "test");
  const auto body = encode_begin_quorum_epoch();
  // Twice the connection's bound: before, the first 64 held every slot for good and the
  // server stopped reading the connection.
  constexpr int requests = 2 * static_cast<int>(constants::connection_in_flight_requests_max);
  std::atomic<int> answered{0};
  for (int i = 0; i < requests; ++i) {
    c.send(protocol::begin_quorum_epoch_request_data::api_key, 1, body, 300, [&](result<bytes> r) {
      CHECK(!r.ok());
      ++answered;
    });
  }
  REQUIRE(wait_for([&] { return answered.load() == requests; }));
  CHECK(wait_for([&] { return dropped.load() == requests; }));
  auto vote = call(c, protocol::vote_request_data::api_key, encode_vote(9), 2000);
  REQUIRE(vote.ok());
  CHECK(epoch_of(*vote) == 9);
  c.stop();
}

TEST_CASE("a request given up on (timed out or abandoned) while unacknowledged aborts its connection: never delivered later") {
  auto rt = make_runtime();
  stalled_peer peer;
  client c(*rt, 1, "127.0.0.1", peer.port, "test");
  // 1 MiB: far more than the peer's window and the loopback path hold, so most of it waits in
  // the client's send queue.
  const bytes body(1 << 20, std::byte{7});

  SUBCASE("its timeout") {
    auto p = std::make_shared<std::promise<result<bytes>>>();
    auto f = p->get_future();
    c.send(protocol::begin_quorum_epoch_request_data::api_key, 1, body, 300,
           [p](result<bytes> r) { p->set_value(std::move(r)); });
    const int fd = peer.accept_one();
    REQUIRE(fd >= 0);
    REQUIRE(f.wait_for(wait_limit) == std::future_status::ready);
    auto r = f.get();
    REQUIRE(!r.ok());
    CHECK(r.error().code == errc::timeout);   // the given-up call hears timeout, not disconnected
    size_t received = 0;
    CHECK(ends_in_reset(fd, received));       // RST: the queued rest was discarded, not delivered
    CHECK(received < body.size());
    ::close(fd);
  }
  SUBCASE("abandoned by its sender (the forwarder answered \"outcome unknown\")") {
    auto p = std::make_shared<std::promise<result<bytes>>>();
    auto f = p->get_future();
    c.send(protocol::begin_quorum_epoch_request_data::api_key, 1, body, 60000,
           [p](result<bytes> r) { p->set_value(std::move(r)); });
    const int fd = peer.accept_one();
    REQUIRE(fd >= 0);
    c.abort_if_undelivered("the leadership moved");
    REQUIRE(f.wait_for(wait_limit) == std::future_status::ready);
    auto r = f.get();
    REQUIRE(!r.ok());
    CHECK(r.error().code == errc::disconnected);
    size_t received = 0;
    CHECK(ends_in_reset(fd, received));
    CHECK(received < body.size());
    ::close(fd);
  }
  // The next request reconnects.
  auto p = std::make_shared<std::promise<result<bytes>>>();
  auto f = p->get_future();
  c.send(protocol::begin_quorum_epoch_request_data::api_key, 1, bytes{}, 200,
         [p](result<bytes> r) { p->set_value(std::move(r)); });
  const int fd = peer.accept_one();
  CHECK(fd >= 0);
  REQUIRE(f.wait_for(wait_limit) == std::future_status::ready);
  if (fd >= 0) ::close(fd);
  c.stop();
}

TEST_CASE("nothing listening fails with connection_refused; the client reconnects once the peer is back") {
  auto rt = make_runtime();
  uint16_t port = 0;
  {
    auto s = server::listen(*rt, 0, "127.0.0.1", 0);
    REQUIRE(s.ok());
    port = (*s)->port();
    (*s)->stop();
  }
  client c(*rt, 1, "127.0.0.1", port, "test");
  auto refused = call(c, protocol::vote_request_data::api_key, encode_vote(1), 2000);
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == errc::connection_refused);

  auto s = server::listen(*rt, 0, "127.0.0.1", port);
  REQUIRE(s.ok());
  (*s)->set_handler(protocol::vote_request_data::api_key, echo_vote());
  (*s)->start();
  bool answered = false;
  REQUIRE(wait_for([&] {
    auto r = call(c, protocol::vote_request_data::api_key, encode_vote(5), 2000);
    answered = r.ok() && epoch_of(*r) == 5;
    return answered;
  }));
  c.stop();
  auto after_stop = call(c, protocol::vote_request_data::api_key, encode_vote(1), 2000);
  REQUIRE(!after_stop.ok());
  CHECK(after_stop.error().code == errc::shutting_down);
  (*s)->stop();
  rt->stop();
}

TEST_CASE("cluster_transport routes by node id and refuses unknown nodes") {
  auto rt = make_runtime();
  auto a = cluster_transport::create(*rt, 0, 1, peer_address{"127.0.0.1", 0}, {});
  REQUIRE(a.ok());
  (*a)->set_handler(protocol::vote_request_data::api_key, echo_vote());
  (*a)->start();
  auto b = cluster_transport::create(*rt, 1, 2, std::nullopt, {{1, peer_address{"127.0.0.1", (*a)->port()}}});
  REQUIRE(b.ok());
  auto r = vote_through(**b, 1, 3, 2000);
  REQUIRE(r.ok());
  CHECK(epoch_of(*r) == 3);
  auto r2 = vote_through(**b, 9, 3, 2000);
  REQUIRE(!r2.ok());
  CHECK(r2.error().code == errc::unknown_peer);
  (*b)->stop();
  (*a)->stop();
  rt->stop();
}

TEST_CASE("cluster_transport learns a peer's address at run time and follows a changed one") {
  // A broker-only node is in no config: the others learn its cluster:// address from its
  // broker registration (set_peer_address), and a restart on another port moves it.
  auto rt = make_runtime();
  auto first = cluster_transport::create(*rt, 0, 4, peer_address{"127.0.0.1", 0}, {});
  auto second = cluster_transport::create(*rt, 0, 4, peer_address{"127.0.0.1", 0}, {});
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  (*first)->set_handler(protocol::vote_request_data::api_key, echo_vote());
  (*second)->set_handler(protocol::vote_request_data::api_key, echo_vote(100));
  (*first)->start();
  (*second)->start();
  auto b = cluster_transport::create(*rt, 1, 2, std::nullopt, {});
  REQUIRE(b.ok());
  auto send = [&](int32_t to, int32_t epoch) {
    auto p = std::make_shared<std::promise<result<bytes>>>();
    auto fut = p->get_future();
    (*b)->send(to, protocol::vote_request_data::api_key, 1, encode_vote(epoch), 2000,
               [p](result<bytes> r) { p->set_value(std::move(r)); });
    REQUIRE(fut.wait_for(wait_limit) == std::future_status::ready);
    return fut.get();
  };
  auto unknown = send(4, 1);
  REQUIRE(!unknown.ok());
  CHECK(unknown.error().code == errc::unknown_peer);
  CHECK((*b)->set_peer_address(4, "127.0.0.1", (*first)->port()));
  CHECK_FALSE((*b)->set_peer_address(4, "127.0.0.1", (*first)->port()));  // unchanged
  CHECK_FALSE((*b)->set_peer_address(2, "127.0.0.1", (*first)->port()));  // itself
  auto via_first = send(4, 7);
  REQUIRE(via_first.ok());
  CHECK(epoch_of(*via_first) == 7);
  CHECK((*b)->set_peer_address(4, "127.0.0.1", (*second)->port()));
  CHECK((*b)->peers().at(4).port == (*second)->port());
  auto via_second = send(4, 7);
  REQUIRE(via_second.ok());
  CHECK(epoch_of(*via_second) == 107);
  (*b)->stop();
  (*first)->stop();
  (*second)->stop();
  rt->stop();
}

TEST_CASE("a closed connection from a node names it; probe_listening tells a gone listener from a live one") {
  auto rt = make_runtime();
  auto a = cluster_transport::create(*rt, 0, 1, peer_address{"127.0.0.1", 0}, {});
  REQUIRE(a.ok());
  std::mutex mutex;
  std::vector<int32_t> closed_from;
  (*a)->set_handler(protocol::vote_request_data::api_key, echo_vote());
  (*a)->set_peer_closed_handler([&](int32_t node) {
    std::lock_guard lock(mutex);
    closed_from.push_back(node);
  });
  (*a)->start();
  const uint16_t a_port = (*a)->port();
  auto b = cluster_transport::create(*rt, 1, 2, std::nullopt, {{1, peer_address{"127.0.0.1", a_port}}});
  REQUIRE(b.ok());
  auto probe = [&](cluster_transport& t) {
    auto p = std::make_shared<std::promise<result<void>>>();
    auto fut = p->get_future();
    probe_listening(t, 1, 2000, [p](result<void> r) { p->set_value(std::move(r)); });
    REQUIRE(fut.wait_for(wait_limit) == std::future_status::ready);
    return fut.get();
  };
  CHECK(probe(**b).ok());   // node 2 -> node 1: a live listener answers ApiVersions
  {
    std::lock_guard lock(mutex);
    CHECK(closed_from.empty());
  }
  (*b)->stop();   // node 2's connection closes: node 1 hears which node it was
  REQUIRE(wait_for([&] {
    std::lock_guard lock(mutex);
    return closed_from == std::vector<int32_t>{2};
  }));
  (*a)->stop();   // node 1 is gone: a probe is refused, not timed out
  auto c = cluster_transport::create(*rt, 1, 3, std::nullopt, {{1, peer_address{"127.0.0.1", a_port}}});
  REQUIRE(c.ok());
  auto gone = probe(**c);
  REQUIRE(!gone.ok());
  CHECK(gone.error().code == errc::connection_refused);
  (*c)->stop();
  rt->stop();
}

TEST_CASE("cluster_transport closes a connection whose first request is not a node's (a Kafka client's ApiVersions)") {
  auto rt = make_runtime();
  auto a = cluster_transport::create(*rt, 0, 1, peer_address{"127.0.0.1", 0}, {});
  REQUIRE(a.ok());
  (*a)->set_handler(protocol::vote_request_data::api_key, echo_vote());
  (*a)->set_kafka_listener_hint("kafka://127.0.0.1:9092");
  (*a)->start();
  {
    // ApiVersions v0 from client id "t" (raw_request): answered on a bare server, refused here.
    raw_socket s((*a)->port());
    s.write_all(raw_request(protocol::api_versions_request_data::api_key, 0, 7));
    CHECK(s.closed_by_peer());
  }
  {
    // A version the codec does not know (librdkafka starts with ApiVersions v3 or above) too.
    raw_socket s((*a)->port());
    s.write_all(raw_request(protocol::api_versions_request_data::api_key, 99, 8));
    CHECK(s.closed_by_peer());
  }
  // A node's requests are served (its client id is ringlog-node-2).
  auto b = cluster_transport::create(*rt, 1, 2, std::nullopt, {{1, peer_address{"127.0.0.1", (*a)->port()}}});
  REQUIRE(b.ok());
  auto r = vote_through(**b, 1, 5, 5000);
  REQUIRE(r.ok());
  CHECK(epoch_of(*r) == 5);
  (*b)->stop();
  (*a)->stop();
  rt->stop();
}

TEST_CASE("a peer that sends but never reads its answers stops being read; nothing is queued past the bound") {
  // Each answer is 256 KiB, so a few fill both sockets' buffers; the peer keeps sending. Before
  // the fix, requests kept being read while their answers queued, past connection_write_queue_max.
  fixture f;
  constexpr size_t answer_bytes = 256 * 1024;
  constexpr int requests = 3 * static_cast<int>(constants::connection_in_flight_requests_max);
  f.srv->set_handler(protocol::fetch_request_data::api_key,
                     [](const protocol::request_header_data& header, std::span<const std::byte>, respond_fn respond) {
                       bytes frame(4 + answer_bytes, std::byte{0});
                       const auto n = static_cast<uint32_t>(answer_bytes);
                       frame[0] = std::byte(n >> 24);
                       frame[1] = std::byte(n >> 16);
                       frame[2] = std::byte(n >> 8);
                       frame[3] = std::byte(n);
                       const auto id = static_cast<uint32_t>(header.correlation_id);
                       frame[4] = std::byte(id >> 24);
                       frame[5] = std::byte(id >> 16);
                       frame[6] = std::byte(id >> 8);
                       frame[7] = std::byte(id);
                       respond(std::move(frame));
                     });
  f.srv->start();
  raw_socket s(f.srv->port());
  std::thread sender([&] {
    for (int i = 1; i <= requests; ++i) s.write_all(raw_request(protocol::fetch_request_data::api_key, 4, i));
  });
  // Every answer still arrives, in order, once the peer reads.
  for (int i = 1; i <= requests; ++i) {
    auto size = s.read_exact(4);
    REQUIRE(size.size() == 4);
    auto frame = s.read_exact(answer_bytes);
    REQUIRE(frame.size() == answer_bytes);
    CHECK(((frame[0] << 24) | (frame[1] << 16) | (frame[2] << 8) | frame[3]) == i);
  }
  sender.join();
}

}  // namespace ringlog::rpc
