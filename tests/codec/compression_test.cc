// The record-batch codecs (codec/compression.h): round trips, both snappy framings, truncation
// and corruption, and the decompressed-size limit for each codec.
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <doctest/doctest.h>

#include "ringlog/base/constants.h"
#include "ringlog/codec/compression.h"

using namespace ringlog;
using codec::errc;

namespace {

model::bytes text_bytes(size_t n) {
  model::bytes out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>("ringlog kafka compression "[i % 26]);
  return out;
}

constexpr model::compression all_codecs[] = {model::compression::gzip, model::compression::snappy,
                                             model::compression::lz4, model::compression::zstd};

}  // namespace

TEST_CASE("each codec round-trips empty, small and multi-block inputs") {
  for (auto c : all_codecs) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{200 * 1024 + 7}}) {
      CAPTURE(codec::compression_name(c));
      CAPTURE(n);
      const auto in = text_bytes(n);
      auto packed = codec::compress(c, in);
      REQUIRE(packed.ok());
      auto unpacked = codec::decompress(c, *packed);
      REQUIRE(unpacked.ok());
      CHECK(*unpacked == in);
    }
  }
}

TEST_CASE("levels (KIP-390): each round-trips, a higher one packs tighter, out-of-bounds ones are refused") {
  // Words drawn by a fixed LCG: compressible, but not so regular that every level finds the same.
  model::bytes in;
  static constexpr const char* words[] = {"offset ", "leader ", "epoch ", "batch ", "segment ", "replica ",
                                          "fetch ", "produce ", "isr ", "watermark "};
  uint32_t x = 12345;
  while (in.size() < 256 * 1024) {
    x = x * 1664525 + 1013904223;
    for (const char* ch = words[(x >> 16) % 10]; *ch != 0; ++ch) in.push_back(static_cast<std::byte>(*ch));
  }
  struct case_t {
    model::compression codec;
    int32_t low, high;
  };
  for (auto [c, low, high] : {case_t{model::compression::gzip, 1, 9}, case_t{model::compression::lz4, 1, 12},
                              case_t{model::compression::zstd, -5, 19}}) {
    CAPTURE(codec::compression_name(c));
    auto fast = codec::compress(c, in, low);
    auto tight = codec::compress(c, in, high);
    REQUIRE(fast.ok());
    REQUIRE(tight.ok());
    CHECK(tight->size() < fast->size());
    for (const auto* packed : {&*fast, &*tight}) {
      auto unpacked = codec::decompress(c, *packed);
      REQUIRE(unpacked.ok());
      CHECK(*unpacked == in);
    }
  }
  // nullopt is Kafka's default level: lz4's 9 is the fast compressor, as level 1 is in liblz4.
  CHECK(*codec::compress(model::compression::lz4, in) == *codec::compress(model::compression::lz4, in, 9));
  CHECK(*codec::compress(model::compression::gzip, in) == *codec::compress(model::compression::gzip, in, -1));
  CHECK(*codec::compress(model::compression::zstd, in) == *codec::compress(model::compression::zstd, in, 3));
  for (auto [c, level] : {std::pair{model::compression::gzip, 0}, std::pair{model::compression::gzip, 10},
                          std::pair{model::compression::lz4, 18}, std::pair{model::compression::zstd, 23}}) {
    auto refused = codec::compress(c, in, level);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == errc::unsupported_compression);
    CHECK(refused.error().message.find(" level " + std::to_string(level) + " is outside [") != std::string::npos);
  }
}

TEST_CASE("snappy: the xerial framing is written, and a raw block (librdkafka's) is read too") {
  const auto in = text_bytes(100 * 1024);   // four 32 KiB xerial blocks
  auto framed = codec::compress(model::compression::snappy, in);
  REQUIRE(framed.ok());
  CHECK(std::memcmp(framed->data(), "\x82SNAPPY\0", 8) == 0);
  size_t length = snappy_max_compressed_length(in.size());
  model::bytes raw(length);
  REQUIRE(snappy_compress(reinterpret_cast<const char*>(in.data()), in.size(), reinterpret_cast<char*>(raw.data()),
                          &length) == SNAPPY_OK);
  raw.resize(length);
  auto from_raw = codec::decompress(model::compression::snappy, raw);
  REQUIRE(from_raw.ok());
  CHECK(*from_raw == in);
}

TEST_CASE("every truncation of a compressed section fails or yields less, never more") {
  const auto in = text_bytes(5000);
  for (auto c : all_codecs) {
    CAPTURE(codec::compression_name(c));
    auto packed = codec::compress(c, in);
    REQUIRE(packed.ok());
    for (size_t cut = 0; cut < packed->size(); ++cut) {
      CAPTURE(cut);
      auto r = codec::decompress(c, std::span(*packed).first(cut));
      if (r.ok()) {
        // Only an xerial snappy section cut at a block boundary still decodes: to a prefix.
        CHECK(c == model::compression::snappy);
        CHECK(r->size() < in.size());
      } else {
        CHECK(r.error().code == errc::decompression_failed);
      }
    }
  }
}

TEST_CASE("garbage and bytes after the end are refused") {
  const model::bytes garbage = text_bytes(64);
  for (auto c : all_codecs) {
    CAPTURE(codec::compression_name(c));
    auto r = codec::decompress(c, garbage);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == errc::decompression_failed);
  }
  for (auto c : {model::compression::gzip, model::compression::lz4}) {
    auto packed = codec::compress(c, text_bytes(100));
    REQUIRE(packed.ok());
    packed->push_back(std::byte{0x42});
    auto r = codec::decompress(c, *packed);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("after the end") != std::string::npos);
  }
}

TEST_CASE("a gzip or zstd bomb stops at batch_decompressed_bytes_max") {
  constexpr size_t chunk = 1 << 20;
  const size_t total = static_cast<size_t>(constants::batch_decompressed_bytes_max) + chunk;
  const std::vector<char> zeros(chunk, 0);
  SUBCASE("gzip") {
    z_stream zs{};
    REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    model::bytes out(1 << 20);
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    for (size_t fed = 0; fed < total; fed += chunk) {
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
      zs.avail_in = static_cast<uInt>(chunk);
      REQUIRE(deflate(&zs, fed + chunk >= total ? Z_FINISH : Z_NO_FLUSH) != Z_STREAM_ERROR);
    }
    out.resize(zs.total_out);
    deflateEnd(&zs);
    auto r = codec::decompress(model::compression::gzip, out);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("batch_decompressed_bytes_max") != std::string::npos);
  }
  SUBCASE("zstd") {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    model::bytes out(1 << 20);
    ZSTD_outBuffer output{out.data(), out.size(), 0};
    for (size_t fed = 0; fed < total; fed += chunk) {
      ZSTD_inBuffer input{zeros.data(), chunk, 0};
      const auto mode = fed + chunk >= total ? ZSTD_e_end : ZSTD_e_continue;
      size_t left = 0;
      do {
        left = ZSTD_compressStream2(cctx, &output, &input, mode);
        REQUIRE_FALSE(ZSTD_isError(left));
      } while (input.pos < input.size || (mode == ZSTD_e_end && left != 0));
    }
    ZSTD_freeCCtx(cctx);
    out.resize(output.pos);
    auto r = codec::decompress(model::compression::zstd, out);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("batch_decompressed_bytes_max") != std::string::npos);
  }
}
