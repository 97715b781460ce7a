// wgmma.mma_async: the Hopper warpgroup matrix multiply, operands from shared memory
// through 64-bit matrix descriptors, accumulators in registers.
#pragma once

#include <cstdint>

namespace anvil::sm90 {

// The operand types of one wgmma: bf16 or fp16 on both sides, or 8-bit floats (A's type,
// then B's where they differ: e5m2 gradients against e4m3 weights or activations).
enum class Input { kBF16, kF16, kE4M3, kE5M2xE4M3, kE4M3xE5M2 };

constexpr bool is_fp8_input(Input input) { return input != Input::kBF16 && input != Input::kF16; }

// How the operand tile is laid out in shared memory (the descriptor's layout field).
enum class SmemSwizzle : uint64_t { kNone = 0, k128B = 1, k64B = 2, k32B = 3 };

// The shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format" for wgmma):
// bits 0-13 start address >> 4, 16-29 leading-dimension byte offset >> 4,
// 32-45 stride-dimension byte offset >> 4, 62-63 swizzle mode. Addresses are 16-byte
// granular because a core matrix row is 16 bytes.
__device__ __forceinline__ uint64_t make_smem_desc(const void* smem_ptr, uint32_t leading_byte_offset,
                                                   uint32_t stride_byte_offset, SmemSwizzle swizzle) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
  uint64_t desc = 0;
  desc |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  desc |= static_cast<uint64_t>((leading_byte_offset & 0x3FFFF) >> 4) << 16;
  desc |= static_cast<uint64_t>((stride_byte_offset & 0x3FFFF) >> 4) << 32;
  desc |= static_cast<uint64_t>(swizzle) << 62;
  return desc;
}

// A K-major tile written by TMA with 128-byte swizzle: each row (one M or N index) holds
// 64 bf16/fp16 values of K in 128 bytes, and the swizzle pattern repeats every 8 rows,
// so the stride between 8-row core-matrix groups is 1024 bytes. The leading offset is
// unused when the whole K extent of one instruction (16 values = 32 bytes) sits inside
// one swizzled row.
__device__ __forceinline__ uint64_t make_kmajor_sw128_desc(const void* smem_ptr) {
  return make_smem_desc(smem_ptr, 16, 1024, SmemSwizzle::k128B);
}

// `desc` moved on by `units` 16-byte units: the start address field (bits 0-13) of a
// shared-memory address (under 256 KiB) never carries into the next field, so only the
// low word changes - one 32-bit add, where a 64-bit add would carry into the high word.
__device__ __forceinline__ uint64_t advance_desc(uint64_t desc, uint32_t units) {
  const uint32_t lo = static_cast<uint32_t>(desc) + units;
  return (desc & 0xFFFFFFFF00000000ull) | lo;
}

// Specialised in wgmma_ops.inc for bf16/fp16 and N in {8,16,32} and 64-256 in steps of 16
// (k16), and in wgmma_fp8_ops.inc for the 8-bit pairs and N in {64,128,256} (k32), e4m3 x e4m3
// also N in {8,16,32} (sm90-fp8-decode's token tiles) and the fitted widths 160, 192 and 224
// (sm90-fp8's fitted tiles; 192 also its block-scaled tiles).
template <int N, Input kInput>
struct WgmmaSS;

#include "wgmma_ops.inc"
#include "wgmma_fp8_ops.inc"

// Orders this thread's register and shared-memory accesses before the warpgroup's
// following wgmma instructions read them.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Closes the batch of wgmma instructions issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most kPending committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// The accumulator registers are written asynchronously by wgmma; this tells the compiler
// they may change behind its back so it does not cache or reorder them across a wait.
template <int kCount>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[kCount]) {
#pragma unroll
  for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

}  // namespace anvil::sm90
