#pragma once
// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), as Kafka's record batch v2 uses.
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at start), else a
// slicing-by-8 table.

#include <cstddef>
#include <cstdint>
#include <span>

namespace ringlog::codec {

/// Continues a CRC-32C over `data`. Start with crc = 0; crc32c(b, crc32c(a)) == crc32c(a ++ b).
uint32_t crc32c(std::span<const std::byte> data, uint32_t crc = 0) noexcept;

/// The portable table implementation, exposed so tests can compare it with the hardware one.
uint32_t crc32c_portable(std::span<const std::byte> data, uint32_t crc = 0) noexcept;

/// True when crc32c() uses the CPU instruction.
bool crc32c_hardware() noexcept;

}  // namespace ringlog::codec
