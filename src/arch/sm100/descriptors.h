// The two descriptors tcgen05.mma reads, as constexpr encoders that the host (CPU tests,
// the planner) and the device share.
//
// Instruction descriptor, kind::f16 (32 bits). PTX ISA: "Tensor Core 5th Generation
// Family Instructions" > "Instruction descriptor" (the table for .kind::f16 / .kind::tf32):
//   bits  0-1  sparsity selector          0 (dense)
//   bit   2    sparsity                   0 = dense
//   bit   3    saturate                   0 (integer kinds only)
//   bits  4-5  D format                   0 = F16, 1 = F32
//   bit   6    reserved
//   bits  7-9  A format                   0 = F16, 1 = BF16 (2 = TF32 for kind::tf32)
//   bits 10-12 B format                   as A
//   bit  13    negate A                   0
//   bit  14    negate B                   0
//   bit  15    transpose A                0 = A K-major, 1 = A M-major
//   bit  16    transpose B                0 = B K-major, 1 = B N-major
//   bits 17-22 N >> 3
//   bit  23    reserved
//   bits 24-28 M >> 4
//   bit  29    reserved
//   bits 30-31 max shift                  0 (.ws forms only)
//
// Shared-memory matrix descriptor (64 bits). PTX ISA: "Tensor Core 5th Generation Family
// Instructions" > "Matrix Descriptors" > "Shared memory descriptor":
//   bits  0-13 start address >> 4
//   bits 16-29 leading-dimension byte offset >> 4 (LBO)
//   bits 32-45 stride-dimension byte offset >> 4 (SBO)
//   bits 46-48 fixed constant 0b001       (the descriptor version; wgmma's has 0 here)
//   bits 49-51 matrix base offset          0 when the swizzle pattern starts on its own
//                                          repeat boundary (1024-byte aligned for 128B)
//   bit  52    LBO mode                    0 = relative byte offset
//   bits 53-60 fixed constant 0
//   bits 61-63 swizzle mode                0 none, 1 128B with 32B atom, 2 128B, 4 64B, 6 32B
// Differences from the sm_90 (wgmma) descriptor: the version bits 46-48, and the swizzle
// field, three bits at 61-63 with its own numbering (wgmma: two bits at 62-63, 1 = 128B,
// 2 = 64B, 3 = 32B). A Hopper descriptor reused here would read as "no swizzle".
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ANVIL_SM100_HD __host__ __device__
#else
#define ANVIL_SM100_HD
#endif

namespace anvil::sm100 {

enum class MmaInput : uint32_t { kF16 = 0, kBF16 = 1 };
enum class MmaAccum : uint32_t { kF16 = 0, kF32 = 1 };
enum class MajorOrder : uint32_t { kK = 0, kMN = 1 };

// The shapes kind::f16 accepts (PTX ISA, "Matrix shape" table of tcgen05.mma):
// one CTA: M = 64 with N a multiple of 8 in 8..256, M = 128 with N a multiple of 16 in
// 16..256; a CTA pair: M = 128 with N a multiple of 32 in 32..256, M = 256 with N a
// multiple of 16 in 16..256. K is 16 per instruction.
ANVIL_SM100_HD constexpr bool valid_f16_shape(int cta_group, int m, int n) {
  if (cta_group == 1) {
    if (m == 64) return n % 8 == 0 && n >= 8 && n <= 256;
    if (m == 128) return n % 16 == 0 && n >= 16 && n <= 256;
    return false;
  }
  if (cta_group == 2) {
    if (m == 128) return n % 32 == 0 && n >= 32 && n <= 256;
    if (m == 256) return n % 16 == 0 && n >= 16 && n <= 256;
  }
  return false;
}

inline constexpr int kMmaK = 16;  // K of one kind::f16 instruction

// m is the instruction's M: for a CTA pair the pair's (256), not one CTA's half.
ANVIL_SM100_HD constexpr uint32_t make_idesc_f16(MmaInput a, MmaInput b, MmaAccum d, int m, int n,
                                                  MajorOrder a_major = MajorOrder::kK,
                                                  MajorOrder b_major = MajorOrder::kK) {
  return (static_cast<uint32_t>(d) << 4) | (static_cast<uint32_t>(a) << 7) | (static_cast<uint32_t>(b) << 10) |
         (static_cast<uint32_t>(a_major) << 15) | (static_cast<uint32_t>(b_major) << 16) |
         ((static_cast<uint32_t>(n) >> 3) << 17) | ((static_cast<uint32_t>(m) >> 4) << 24);
}

enum class SmemSwizzle : uint32_t { kNone = 0, k128BAtom32B = 1, k128B = 2, k64B = 4, k32B = 6 };

ANVIL_SM100_HD constexpr uint64_t make_smem_desc(uint32_t smem_address, uint32_t leading_byte_offset,
                                                 uint32_t stride_byte_offset, SmemSwizzle swizzle,
                                                 uint32_t base_offset = 0) {
  return (static_cast<uint64_t>((smem_address >> 4) & 0x3FFFu)) |
         (static_cast<uint64_t>((leading_byte_offset >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((stride_byte_offset >> 4) & 0x3FFFu) << 32) | (uint64_t{1} << 46) |
         (static_cast<uint64_t>(base_offset & 0x7u) << 49) | (static_cast<uint64_t>(swizzle) << 61);
}

// A K-major bf16/fp16 tile stored as TMA writes it with the 128-byte swizzle: rows of 64
// elements (128 bytes), the 8-row swizzle atom 1024 bytes, atoms stacked along M (or N).
// SBO is the atom pitch; LBO is unused for a swizzled K-major operand whose K extent is
// one swizzle row (the PTX ISA's canonical layouts), and set to 16 bytes (encoded 1) as
// the tables' "assumed 1".
inline constexpr uint32_t kSw128AtomBytes = 1024;

ANVIL_SM100_HD constexpr uint64_t make_kmajor_sw128_desc(uint32_t smem_address) {
  return make_smem_desc(smem_address, 16, kSw128AtomBytes, SmemSwizzle::k128B);
}

// The descriptor of the k-th K=16 slice of such a tile: 16 elements are 32 bytes along
// the swizzle row, and the hardware applies the swizzle to the advanced address itself
// (the tile is 1024-byte aligned, so the base offset stays 0).
ANVIL_SM100_HD constexpr uint64_t advance_kmajor_sw128_desc(uint64_t desc, int k_slice) {
  return desc + static_cast<uint64_t>(k_slice * kMmaK * 2 / 16);
}

// A K-major bf16/fp16 tile without swizzle, in the canonical layout of 8-row x 16-byte
// core matrices (PTX ISA, "Shared memory matrix layout", K-major, no swizzle): TMA writes
// it as one box 8 elements wide per 8 K, each box `rows` x 16 bytes. Core matrices next
// to each other along M (N) are 128 bytes apart (SBO); along K, one box apart (LBO =
// rows x 16 bytes). K slice s (16 elements) starts two boxes further per slice.
ANVIL_SM100_HD constexpr uint64_t make_kmajor_interleaved_desc(uint32_t smem_address, int rows, int k_slice) {
  const uint32_t box_bytes = static_cast<uint32_t>(rows) * 16;
  return make_smem_desc(smem_address + static_cast<uint32_t>(k_slice) * 2 * box_bytes, box_bytes, 128,
                        SmemSwizzle::kNone);
}

}  // namespace anvil::sm100
