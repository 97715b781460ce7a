// stmatrix: a warp writes 8x8 tiles of 16-bit elements from the mma fragment layout to
// shared memory, one 16-byte row per lane address. An m64nN accumulator fragment, once
// packed to bf16/fp16 pairs, is exactly that layout, so four tiles (16 rows x 16 columns)
// leave in one instruction instead of eight 32-bit stores with their address arithmetic.
#pragma once

#include <cstdint>

namespace anvil::sm90 {

// Lane l gives the address of row l % 8 of tile l / 8; register i of lane l holds tile i's
// elements (row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1).
__device__ __forceinline__ void stmatrix_x4(uint32_t smem_row_addr, uint32_t tile0, uint32_t tile1, uint32_t tile2,
                                            uint32_t tile3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_row_addr), "r"(tile0),
               "r"(tile1), "r"(tile2), "r"(tile3)
               : "memory");
}

// The transposing form: tile i is written transposed, so lane l's address receives column
// l % 8 of tile l / 8 (its eight rows' elements of that column, in row order).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t smem_row_addr, uint32_t tile0, uint32_t tile1,
                                                  uint32_t tile2, uint32_t tile3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_row_addr),
               "r"(tile0), "r"(tile1), "r"(tile2), "r"(tile3)
               : "memory");
}

}  // namespace anvil::sm90
