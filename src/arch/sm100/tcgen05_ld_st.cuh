// tcgen05.ld / tcgen05.st: move data between tensor memory and registers, one warp at a
// time. Shape 32x32b: thread t of the warp reads TMEM lane (base lane + t), and .xN reads
// N consecutive 32-bit columns of it into N registers. A warp may only reach the 32-lane
// quarter of TMEM that matches its rank within its warpgroup (warp id % 4), which is why
// the epilogue is four warps: together they cover all 128 lanes.
// Both are asynchronous: tcgen05.wait::ld (::st) must come before the registers are read
// (the source registers are reused).
// PTX ISA: "Tensor Core 5th Generation Family Instructions" > "Tensor Memory Data
// Movement Instructions" > "tcgen05.ld", "tcgen05.st", "tcgen05.wait".
#pragma once

#include <cstdint>

namespace anvil::sm100 {

// Lane and column of a TMEM address: (lane << 16) | column.
__host__ __device__ constexpr uint32_t tmem_address(uint32_t base, uint32_t lane, uint32_t column) {
  return base + (lane << 16) + column;
}

__device__ __forceinline__ void tmem_load_32x32b_x16(uint32_t taddr, uint32_t (&r)[16]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
      "%15}, [%16];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]), "=r"(r[8]),
        "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
      : "r"(taddr)
      : "memory");
}

__device__ __forceinline__ void tmem_store_32x32b_x16(uint32_t taddr, const uint32_t (&r)[16]) {
  asm volatile(
      "tcgen05.st.sync.aligned.32x32b.x16.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
      "%15, %16};\n" ::"r"(taddr),
      "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(r[4]), "r"(r[5]), "r"(r[6]), "r"(r[7]), "r"(r[8]), "r"(r[9]),
      "r"(r[10]), "r"(r[11]), "r"(r[12]), "r"(r[13]), "r"(r[14]), "r"(r[15])
      : "memory");
}

// Until every tcgen05.ld of this thread has written its registers.
__device__ __forceinline__ void tmem_wait_load() { asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory"); }

// Until every tcgen05.st of this thread has read its registers.
__device__ __forceinline__ void tmem_wait_store() { asm volatile("tcgen05.wait::st.sync.aligned;\n" ::: "memory"); }

}  // namespace anvil::sm100
