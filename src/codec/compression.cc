#include "ringlog/codec/compression.h"

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>

#include "big_endian.h"
#include "ringlog/base/constants.h"

namespace ringlog::codec {
namespace {

using detail::get_be;
using detail::put_be;

/// Largest decompressed section, bytes (see batch_decompressed_bytes_max's why).
constexpr auto decompressed_limit = static_cast<size_t>(constants::batch_decompressed_bytes_max);
/// LZ4 block size Kafka's own writer uses (KafkaLZ4BlockOutputStream's default, 64 KiB).
constexpr LZ4F_blockSizeID_t lz4_block_size = LZ4F_max64KB;
/// First guess of the decompressed size, as a multiple of the compressed size (all streaming
/// decoders grow the output by doubling from there, up to the limit).
constexpr size_t lz4_initial_expansion = 4;
constexpr size_t lz4_initial_bytes_min = 64 * 1024;
/// The xerial snappy framing (snappy-java's SnappyOutputStream, which Java clients use): an
/// 8-byte magic, int32 version 1 and int32 compatible version 1, then blocks.
constexpr std::array<uint8_t, 8> xerial_magic = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t xerial_header_bytes = 16;
/// Uncompressed bytes per xerial block: snappy-java's default block size (32 KiB).
constexpr size_t xerial_block_bytes = 32 * 1024;
/// gzip through zlib: window bits 15 plus 16 selects the gzip wrapper (RFC 1952).
constexpr int gzip_window_bits = 15 + 16;
constexpr int gzip_memory_level = 8;

error failed(std::string message) { return error{errc::decompression_failed, std::move(message)}; }

/// Doubles `out` up to one byte past the limit ("exactly at the limit" finishes, "above" is
/// detected). False when it is already past the limit.
bool grow(model::bytes& out) {
  if (out.size() > decompressed_limit) return false;
  out.resize(std::min(decompressed_limit + 1, std::max<size_t>(out.size() * 2, lz4_initial_bytes_min)));
  return true;
}

size_t initial_size(size_t compressed) {
  return std::min(decompressed_limit + 1, std::max(lz4_initial_bytes_min, compressed * lz4_initial_expansion));
}

std::string past_limit(std::string_view codec) {
  return std::string(codec) + " section decompresses past batch_decompressed_bytes_max " +
         std::to_string(decompressed_limit);
}

// ---- lz4 (liblz4)

struct lz4_dctx_deleter {
  void operator()(LZ4F_dctx* ctx) const noexcept { LZ4F_freeDecompressionContext(ctx); }
};

/// Decompresses one LZ4 frame that must span all of `in`, to at most
/// batch_decompressed_bytes_max bytes (a compression bomb fails instead of exhausting memory).
result<model::bytes> lz4_decompress(std::span<const std::byte> in) {
  constexpr auto limit = decompressed_limit;
  LZ4F_dctx* raw = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) {
    return error{errc::decompression_failed, "cannot create an lz4 decompression context"};
  }
  std::unique_ptr<LZ4F_dctx, lz4_dctx_deleter> ctx(raw);
  // One byte past the limit lets "exactly at the limit" finish while "above" is detected.
  model::bytes out(std::min(limit + 1, std::max(lz4_initial_bytes_min, in.size() * lz4_initial_expansion)));
  size_t in_position = 0;
  size_t out_position = 0;
  for (;;) {
    if (out_position == out.size()) {
      if (out.size() > limit) break;
      out.resize(std::min(limit + 1, out.size() * 2));
    }
    size_t out_bytes = out.size() - out_position;
    size_t in_bytes = in.size() - in_position;
    const size_t hint = LZ4F_decompress(ctx.get(), out.data() + out_position, &out_bytes, in.data() + in_position,
                                        &in_bytes, nullptr);
    if (LZ4F_isError(hint)) {
      return error{errc::decompression_failed, std::string("lz4 frame: ") + LZ4F_getErrorName(hint)};
    }
    in_position += in_bytes;
    out_position += out_bytes;
    if (hint == 0) break;  // frame complete
    if (in_position == in.size() && out_bytes == 0) {
      return error{errc::decompression_failed, "lz4 frame ends early (needs " + std::to_string(hint) + " more bytes)"};
    }
  }
  if (out_position > limit) {
    return error{errc::decompression_failed,
                 "lz4 frame decompresses past batch_decompressed_bytes_max " + std::to_string(limit)};
  }
  if (in_position != in.size()) {
    return error{errc::decompression_failed,
                 std::to_string(in.size() - in_position) + " bytes after the end of the lz4 frame"};
  }
  out.resize(out_position);
  return out;
}

result<model::bytes> lz4_compress(std::span<const std::byte> in, int32_t level) {
  // Kafka's writer shape: independent 64 KiB blocks, no checksums beyond the batch CRC.
  LZ4F_preferences_t preferences{};
  // Kafka's default level is its fast compressor (LZ4F's 0); the others are LZ4 HC's levels.
  preferences.compressionLevel = level == lz4_level_default ? 0 : level;
  preferences.frameInfo.blockSizeID = lz4_block_size;
  preferences.frameInfo.blockMode = LZ4F_blockIndependent;
  preferences.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
  model::bytes out(LZ4F_compressFrameBound(in.size(), &preferences));
  const size_t written = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &preferences);
  // Cannot fail: the destination has the bound LZ4 documents for this input size.
  RINGLOG_ASSERT(!LZ4F_isError(written), "LZ4F_compressFrame failed with a bound-sized destination");
  out.resize(written);
  return out;
}


// ---- gzip (zlib)

struct inflate_end {
  void operator()(z_stream* z) const noexcept { inflateEnd(z); }
};

result<model::bytes> gzip_decompress(std::span<const std::byte> in) {
  z_stream zs{};
  if (inflateInit2(&zs, gzip_window_bits) != Z_OK) return failed("cannot start a gzip decoder");
  std::unique_ptr<z_stream, inflate_end> guard(&zs);
  model::bytes out(initial_size(in.size()));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  size_t produced = 0;
  for (;;) {
    if (produced == out.size() && !grow(out)) return failed(past_limit("gzip"));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(out.size() - produced);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    produced = out.size() - zs.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) return failed("gzip stream ends early");
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return failed(std::string("gzip: ") + (zs.msg != nullptr ? zs.msg : "corrupt stream"));
    }
  }
  if (produced > decompressed_limit) return failed(past_limit("gzip"));
  if (zs.avail_in != 0) return failed(std::to_string(zs.avail_in) + " bytes after the end of the gzip stream");
  out.resize(produced);
  return out;
}

result<model::bytes> gzip_compress(std::span<const std::byte> in, int32_t level) {
  z_stream zs{};
  // gzip_level_default (-1) is zlib's Z_DEFAULT_COMPRESSION.
  const int rc = deflateInit2(&zs, level, Z_DEFLATED, gzip_window_bits, gzip_memory_level, Z_DEFAULT_STRATEGY);
  RINGLOG_ASSERT(rc == Z_OK, "deflateInit2 with a level compress() checked");
  model::bytes out(deflateBound(&zs, static_cast<uLong>(in.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int done = deflate(&zs, Z_FINISH);
  RINGLOG_ASSERT(done == Z_STREAM_END, "deflate into a deflateBound-sized buffer finishes in one call");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// ---- snappy (libsnappy): raw blocks and the xerial framing

result<void> snappy_block_into(std::span<const std::byte> block, model::bytes& out) {
  size_t length = 0;
  const auto* data = reinterpret_cast<const char*>(block.data());
  if (snappy_uncompressed_length(data, block.size(), &length) != SNAPPY_OK) {
    return failed("snappy block of " + std::to_string(block.size()) + " bytes has no valid length");
  }
  if (out.size() + length > decompressed_limit) return failed(past_limit("snappy"));
  const size_t at = out.size();
  out.resize(at + length);
  size_t written = length;
  if (snappy_uncompress(data, block.size(), reinterpret_cast<char*>(out.data() + at), &written) != SNAPPY_OK ||
      written != length) {
    return failed("snappy block of " + std::to_string(block.size()) + " bytes is corrupt");
  }
  return base::ok_v;
}

result<model::bytes> snappy_decompress(std::span<const std::byte> in) {
  model::bytes out;
  const bool xerial = in.size() >= xerial_header_bytes &&
                      std::memcmp(in.data(), xerial_magic.data(), xerial_magic.size()) == 0;
  if (!xerial) {
    auto raw = snappy_block_into(in, out);
    if (!raw.ok()) return raw.error();
    return out;
  }
  size_t pos = xerial_header_bytes;
  while (pos < in.size()) {
    if (in.size() - pos < 4) return failed("xerial snappy: block length cut at byte " + std::to_string(pos));
    const int32_t length = get_be<int32_t>(in.data() + pos);
    pos += 4;
    if (length < 0 || static_cast<size_t>(length) > in.size() - pos) {
      return failed("xerial snappy: block length " + std::to_string(length) + " runs past the section");
    }
    auto block = snappy_block_into(in.subspan(pos, static_cast<size_t>(length)), out);
    if (!block.ok()) return block.error();
    pos += static_cast<size_t>(length);
  }
  return out;
}

result<model::bytes> snappy_compress_xerial(std::span<const std::byte> in) {
  model::bytes out(xerial_header_bytes);
  std::memcpy(out.data(), xerial_magic.data(), xerial_magic.size());
  put_be(out.data() + 8, int32_t{1});    // version
  put_be(out.data() + 12, int32_t{1});   // compatible version
  for (size_t pos = 0; pos < in.size(); pos += xerial_block_bytes) {
    const size_t n = std::min(xerial_block_bytes, in.size() - pos);
    size_t length = snappy_max_compressed_length(n);
    const size_t at = out.size();
    out.resize(at + 4 + length);
    const auto rc = snappy_compress(reinterpret_cast<const char*>(in.data() + pos), n,
                                    reinterpret_cast<char*>(out.data() + at + 4), &length);
    RINGLOG_ASSERT(rc == SNAPPY_OK, "snappy_compress into a bound-sized buffer");
    put_be(out.data() + at, static_cast<int32_t>(length));
    out.resize(at + 4 + length);
  }
  return out;
}

// ---- zstd (libzstd)

struct dstream_free {
  void operator()(ZSTD_DStream* d) const noexcept { ZSTD_freeDStream(d); }
};

result<model::bytes> zstd_decompress(std::span<const std::byte> in) {
  std::unique_ptr<ZSTD_DStream, dstream_free> ds(ZSTD_createDStream());
  if (!ds) return failed("cannot create a zstd decoder");
  ZSTD_initDStream(ds.get());
  model::bytes out(initial_size(in.size()));
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  size_t produced = 0;
  size_t last = 1;
  while (input.pos < input.size || last != 0) {
    if (produced == out.size() && !grow(out)) return failed(past_limit("zstd"));
    ZSTD_outBuffer output{out.data(), out.size(), produced};
    const size_t before_in = input.pos;
    last = ZSTD_decompressStream(ds.get(), &output, &input);
    if (ZSTD_isError(last)) return failed(std::string("zstd: ") + ZSTD_getErrorName(last));
    const bool progress = output.pos != produced || input.pos != before_in;
    produced = output.pos;
    if (last != 0 && input.pos == input.size && !progress) return failed("zstd frame ends early");
  }
  if (produced > decompressed_limit) return failed(past_limit("zstd"));
  out.resize(produced);
  return out;
}

result<model::bytes> zstd_compress(std::span<const std::byte> in, int32_t level) {
  model::bytes out(ZSTD_compressBound(in.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), level);
  RINGLOG_ASSERT(!ZSTD_isError(n), "ZSTD_compress into a bound-sized buffer");
  out.resize(n);
  return out;
}

/// `level`, or `fallback` for nullopt, when it is `fallback` or in [min, max]; else an error naming it.
result<int32_t> level_in(std::string_view codec, std::optional<int32_t> level, int32_t fallback, int32_t min,
                         int32_t max) {
  const int32_t v = level.value_or(fallback);
  if (v == fallback || (v >= min && v <= max)) return v;
  return error{errc::unsupported_compression, std::string(codec) + " level " + std::to_string(v) + " is outside [" +
                                                  std::to_string(min) + ", " + std::to_string(max) + "]"};
}

}  // namespace

result<model::bytes> compress(model::compression codec, std::span<const std::byte> in, std::optional<int32_t> level) {
  switch (codec) {
    case model::compression::gzip: {
      auto v = level_in("gzip", level, gzip_level_default, gzip_level_min, gzip_level_max);
      if (!v.ok()) return v.error();
      return gzip_compress(in, *v);
    }
    case model::compression::snappy: return snappy_compress_xerial(in);
    case model::compression::lz4: {
      auto v = level_in("lz4", level, lz4_level_default, lz4_level_min, lz4_level_max);
      if (!v.ok()) return v.error();
      return lz4_compress(in, *v);
    }
    case model::compression::zstd: {
      auto v = level_in("zstd", level, zstd_level_default, zstd_level_min, zstd_level_max);
      if (!v.ok()) return v.error();
      return zstd_compress(in, *v);
    }
    case model::compression::none: break;
  }
  return error{errc::unsupported_compression, "compress() takes gzip, snappy, lz4 or zstd"};
}

result<model::bytes> decompress(model::compression codec, std::span<const std::byte> in) {
  switch (codec) {
    case model::compression::gzip: return gzip_decompress(in);
    case model::compression::snappy: return snappy_decompress(in);
    case model::compression::lz4: return lz4_decompress(in);
    case model::compression::zstd: return zstd_decompress(in);
    case model::compression::none: break;
  }
  return error{errc::unsupported_compression, "decompress() takes gzip, snappy, lz4 or zstd"};
}

std::string_view compression_name(model::compression codec) {
  switch (codec) {
    case model::compression::none: return "none";
    case model::compression::gzip: return "gzip";
    case model::compression::snappy: return "snappy";
    case model::compression::lz4: return "lz4";
    case model::compression::zstd: return "zstd";
  }
  return "undefined";
}

}  // namespace ringlog::codec
