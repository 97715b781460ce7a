// tcgen05.ld / tcgen05.st: move data between tensor memory and registers, one warp at a
// time. A warp may only reach the 32-lane quarter of TMEM that matches its rank within its
// warpgroup (warp id % 4), which is why the epilogue is four warps: together they cover
// all 128 lanes. Shapes:
//   32x32b  - thread t of the warp reads TMEM lane (base lane + t), and .xN reads N
//             consecutive 32-bit columns of it into N registers;
//   16x256b - 16 lanes from the base lane (either half of the warp's quarter), 8 columns
//             per repetition, four registers per thread: thread l holds rows l / 4 and
//             l / 4 + 8 at columns 2 (l % 4) and 2 (l % 4) + 1, in the order (row, col),
//             (row, col + 1), (row + 8, col), (row + 8, col + 1). That is the m64 wgmma
//             accumulator fragment's layout for one warp's 16 rows, so the Hopper
//             epilogue's fragment code reads it unchanged.
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

// Columns [col, col + 64) of 16 lanes (shape 16x256b, .x8) into registers
// acc[kFirst .. kFirst + 32) of a fragment-layout array.
template <int kFirst, int kN>
__device__ __forceinline__ void tmem_load_16x256b_x8(uint32_t taddr, float (&acc)[kN]) {
  static_assert(kFirst % 32 == 0 && kFirst + 32 <= kN);
  float* r = acc + kFirst;
  asm volatile(
      "tcgen05.ld.sync.aligned.16x256b.x8.b32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
      "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];\n"
      : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]), "=f"(r[4]), "=f"(r[5]), "=f"(r[6]), "=f"(r[7]), "=f"(r[8]),
        "=f"(r[9]), "=f"(r[10]), "=f"(r[11]), "=f"(r[12]), "=f"(r[13]), "=f"(r[14]), "=f"(r[15]), "=f"(r[16]),
        "=f"(r[17]), "=f"(r[18]), "=f"(r[19]), "=f"(r[20]), "=f"(r[21]), "=f"(r[22]), "=f"(r[23]), "=f"(r[24]),
        "=f"(r[25]), "=f"(r[26]), "=f"(r[27]), "=f"(r[28]), "=f"(r[29]), "=f"(r[30]), "=f"(r[31])
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
