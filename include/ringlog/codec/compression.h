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

#include <span>

#include "ringlog/codec/errc.h"
#include "ringlog/model/record.h"

namespace ringlog::codec {

/// Compresses `in` with `codec` (not none). Errors: unsupported_compression (a value outside 1-4).
result<model::bytes> compress(model::compression codec, std::span<const std::byte> in);

/// Decompresses `in` with `codec` (not none): all of `in` must be one compressed section, and the
/// output is at most constants::batch_decompressed_bytes_max bytes (a compression bomb fails
/// instead of exhausting memory). Errors: decompression_failed naming the codec and why,
/// unsupported_compression.
result<model::bytes> decompress(model::compression codec, std::span<const std::byte> in);

/// Kafka's name of a codec: none, gzip, snappy, lz4, zstd.
std::string_view compression_name(model::compression codec);

}  // namespace ringlog::codec
