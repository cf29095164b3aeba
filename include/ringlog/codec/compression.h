#pragma once
// The record-batch compression codecs Kafka defines (attributes bits 0-2; KIP-110 for zstd),
// byte-compatible with what Kafka's clients write and read:
//   gzip    a gzip member (RFC 1952), as Java's GZIPOutputStream writes (zlib)
//   snappy  Java clients write the xerial framing (magic "\x82SNAPPY\0", version 1, compatible
//           version 1, then blocks of int32 compressed length + raw snappy block); librdkafka
//           writes one raw snappy block. Both are read; the xerial framing is written, which
//           every client reads (libsnappy)
//   lz4     the LZ4 frame format (KIP-57: Kafka's broken pre-0.10 header checksum is not
//           produced), independent 64 KiB blocks (liblz4)
//   zstd    one zstd frame (libzstd)
// These libraries live in the codec module only (style.md "Third-party libraries stay in one
// module each").

#include <cstdint>
#include <optional>
#include <span>

#include "ringlog/codec/errc.h"
#include "ringlog/model/record.h"

namespace ringlog::codec {

/// Compression levels (KIP-390, Kafka's compression.{gzip,lz4,zstd}.level), bounds inclusive,
/// and Kafka's defaults. gzip: zlib's levels, -1 being zlib's default (6); 0 is refused, as Kafka
/// refuses it. lz4: Kafka's default 9 is the fast compressor (Kafka's Lz4BlockOutputStream picks
/// fastCompressor for it), any other level LZ4 HC's (liblz4's LZ4F compressionLevel). zstd:
/// libzstd's levels, negative ones the fast modes.
constexpr int32_t gzip_level_default = -1;
constexpr int32_t gzip_level_min = 1;
constexpr int32_t gzip_level_max = 9;
constexpr int32_t lz4_level_default = 9;
constexpr int32_t lz4_level_min = 1;
constexpr int32_t lz4_level_max = 17;
constexpr int32_t zstd_level_default = 3;
constexpr int32_t zstd_level_min = -131072;
constexpr int32_t zstd_level_max = 22;

/// Compresses `in` with `codec` (not none) at `level` (gzip, lz4 and zstd; nullopt: Kafka's
/// default, above; snappy has none). Errors: unsupported_compression (a value outside 1-4, or a
/// level outside the codec's bounds).
result<model::bytes> compress(model::compression codec, std::span<const std::byte> in,
                              std::optional<int32_t> level = std::nullopt);

/// Decompresses `in` with `codec` (not none): all of `in` must be one compressed section, and the
/// output is at most constants::batch_decompressed_bytes_max bytes (a compression bomb fails
/// instead of exhausting memory). Errors: decompression_failed naming the codec and why,
/// unsupported_compression.
result<model::bytes> decompress(model::compression codec, std::span<const std::byte> in);

/// Kafka's name of a codec: none, gzip, snappy, lz4, zstd.
std::string_view compression_name(model::compression codec);

}  // namespace ringlog::codec
