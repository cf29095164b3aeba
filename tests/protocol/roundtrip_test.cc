// Generic tests over every generated message at every valid version: round trip with every
// field set, every truncation fails, every length/count prefix forged to a bad value fails.
// Built twice: plainly and with -fsanitize=address,undefined (see meson.build), so a read past
// the buffer is caught even where the decoder would happen to return an error anyway.
#include <doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ringlog/protocol/messages.h"
#include "ringlog/protocol/samples.h"

using namespace ringlog;
using namespace ringlog::protocol;

namespace {

template <typename T>
bytes encode_sample(int16_t version, int seed, writer& w) {
  T sample;
  testing::fill_sample(sample, version, seed);
  auto ok = sample.encode(w, version);
  INFO(T::schema_name, " v", version, ": ", (ok.ok() ? std::string() : ok.error().message));
  REQUIRE(ok.ok());
  return w.buffer();
}

/// Bytes of an unsigned varint.
bytes uvarint_bytes(uint32_t v) {
  writer w;
  w.write_unsigned_varint(v);
  return w.buffer();
}

/// Length of the unsigned varint at buf[pos].
size_t uvarint_width(const bytes& buf, size_t pos) {
  size_t n = 1;
  while ((static_cast<uint8_t>(buf[pos + n - 1]) & 0x80) != 0) {
    ++n;
  }
  return n;
}

/// Copies of buf with the length prefix at m replaced by each bad value: -2, the type's
/// maximum, and one more than the bytes that follow the prefix.
std::vector<bytes> forged_lengths(const bytes& buf, const length_mark& m) {
  std::vector<bytes> out;
  const auto put_fixed = [&](int64_t v, size_t width) {
    bytes b = buf;
    for (size_t i = 0; i < width; ++i) {
      b[m.position + i] = static_cast<std::byte>((static_cast<uint64_t>(v) >> (8 * (width - 1 - i))) & 0xff);
    }
    out.push_back(std::move(b));
  };
  if (m.kind == length_kind::int16) {
    const int64_t after = static_cast<int64_t>(buf.size() - m.position - 2);
    put_fixed(-2, 2);
    put_fixed(0x7fff, 2);
    if (after + 1 <= 0x7fff) {
      put_fixed(after + 1, 2);
    }
  } else if (m.kind == length_kind::int32) {
    const int64_t after = static_cast<int64_t>(buf.size() - m.position - 4);
    put_fixed(-2, 4);
    put_fixed(0x7fffffff, 4);
    put_fixed(after + 1, 4);
  } else {
    const size_t width = uvarint_width(buf, m.position);
    const auto after = static_cast<uint32_t>(buf.size() - m.position - width);
    // Compact lengths store length + 1; counts of tagged fields and tagged sizes store the value
    // itself. after + 2 is too long under either reading; so is the largest 32-bit value.
    for (uint32_t v : {after + 2, uint32_t{0xffffffff}, uint32_t{0x7fffffff}}) {
      bytes b(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(m.position));
      const bytes mid = uvarint_bytes(v);
      b.insert(b.end(), mid.begin(), mid.end());
      b.insert(b.end(), buf.begin() + static_cast<std::ptrdiff_t>(m.position + width), buf.end());
      out.push_back(std::move(b));
    }
  }
  return out;
}

struct counters {
  int messages = 0;
  int versions = 0;
  long truncations = 0;
  long forgeries = 0;
};

struct roundtrip_visitor {
  counters* c;
  template <typename T>
  void operator()() {
    ++c->messages;
    for (int16_t v = T::lowest_supported_version; v <= T::highest_supported_version; ++v) {
      ++c->versions;
      for (int seed : {1, 7}) {
        writer w(true);
        const bytes buf = encode_sample<T>(v, seed, w);
        reader rd(buf);
        auto decoded = T::decode(rd, v);
        INFO(T::schema_name, " v", v, " seed ", seed, ": ", (decoded.ok() ? std::string() : decoded.error().message));
        REQUIRE(decoded.ok());
        CHECK(rd.remaining() == 0);
        T expected;
        testing::fill_sample(expected, v, seed);
        CHECK(*decoded == expected);
        writer again;
        REQUIRE(decoded->encode(again, v).ok());
        CHECK(again.buffer() == buf);
      }
      // A sample is not the default message: a decoder that ignored its input would fail here.
      writer w0;
      REQUIRE(T{}.encode(w0, v).ok());
      reader rd0(w0.buffer());
      auto d0 = T::decode(rd0, v);
      REQUIRE(d0.ok());
      CHECK(*d0 == T{});
    }
    writer bad;
    CHECK(T{}.encode(bad, static_cast<int16_t>(T::highest_supported_version + 1)).error().code ==
          errc::unsupported_version);
    reader empty(bytes{});
    CHECK(T::decode(empty, static_cast<int16_t>(T::lowest_supported_version - 1)).error().code ==
          errc::unsupported_version);
  }
};

struct truncation_visitor {
  counters* c;
  template <typename T>
  void operator()() {
    for (int16_t v = T::lowest_supported_version; v <= T::highest_supported_version; ++v) {
      writer w(true);
      const bytes buf = encode_sample<T>(v, 3, w);
      for (size_t n = 0; n < buf.size(); ++n) {
        ++c->truncations;
        // A copy of exactly n bytes, so ASan sees any read past it.
        const bytes cut(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        reader rd(cut);
        auto d = T::decode(rd, v);
        if (d.ok()) {
          FAIL_CHECK(T::schema_name, " v", v, ": a ", n, "-byte prefix of ", buf.size(), " bytes decoded");
        }
      }
    }
  }
};

struct forgery_visitor {
  counters* c;
  template <typename T>
  void operator()() {
    for (int16_t v = T::lowest_supported_version; v <= T::highest_supported_version; ++v) {
      writer w(true);
      const bytes buf = encode_sample<T>(v, 5, w);
      for (const length_mark& m : w.marks()) {
        for (const bytes& forged : forged_lengths(buf, m)) {
          ++c->forgeries;
          reader rd(forged);
          auto d = T::decode(rd, v);
          if (d.ok()) {
            FAIL_CHECK(T::schema_name, " v", v, ": forged length at byte ", m.position, " decoded");
          } else if (d.error().code != errc::invalid_length && d.error().code != errc::truncated &&
                     d.error().code != errc::invalid_varint) {
            FAIL_CHECK(T::schema_name, " v", v, ": forged length at byte ", m.position, ": ", d.error().message);
          }
        }
      }
    }
  }
};

}  // namespace

TEST_CASE("every message round-trips at every version with every field set") {
  counters c;
  testing::for_each_message(roundtrip_visitor{&c});
  MESSAGE(c.messages, " messages, ", c.versions, " versions");
  CHECK(c.messages >= 80);
}

TEST_CASE("every truncation of every message fails to decode") {
  counters c;
  testing::for_each_message(truncation_visitor{&c});
  MESSAGE(c.truncations, " truncations");
  CHECK(c.truncations > 10000);
}

TEST_CASE("every length or count prefix forged to a bad value fails to decode") {
  counters c;
  testing::for_each_message(forgery_visitor{&c});
  MESSAGE(c.forgeries, " forgeries");
  CHECK(c.forgeries > 10000);
}

TEST_CASE("every metadata record round-trips through Kafka's record framing") {
  int n = 0;
  const auto visit = [&]<typename T>() {
    if constexpr (requires { T::api_key; } && std::is_constructible_v<metadata_record, T>) {
      for (int16_t v = T::lowest_supported_version; v <= T::highest_supported_version; ++v) {
        T rec;
        testing::fill_sample(rec, v, 2);
        writer w;
        REQUIRE(encode_metadata_record(w, metadata_record{rec}, v).ok());
        auto d = decode_metadata_record(w.buffer());
        INFO(T::schema_name, " v", v, ": ", (d.ok() ? std::string() : d.error().message));
        REQUIRE(d.ok());
        CHECK(d->version == v);
        CHECK(d->record == metadata_record{rec});
        bytes longer = w.buffer();
        longer.push_back(std::byte{0});
        CHECK(decode_metadata_record(longer).error().code == errc::trailing_bytes);
        ++n;
      }
    }
  };
  testing::for_each_message(visit);
  CHECK(n >= 11);
}
