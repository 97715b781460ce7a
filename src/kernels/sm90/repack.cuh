// Repacking an operand into the workspace as a K-major matrix with a 16-byte-aligned
// leading dimension: how the TMA kernels serve layouts and strides that TMA cannot read
// directly (MN-major operands, leading dimensions that are not multiples of 8 elements,
// misaligned base pointers, broadcast batches). One pass over the operand: read once,
// written once, then the GEMM reads the copy.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "host/registry.h"

namespace anvil::detail {

// Source element (batch, row, k) of a 16-bit operand: offset batch*bs + row*rs + k*ks.
struct RepackSource {
  const uint16_t* ptr;
  int64_t row_stride, k_stride, batch_stride;
};

constexpr int kRepackTile = 32;

// dst[batch][row][k] (leading dimension dst_ld, batch stride dst_batch) = source(batch, row, k)
// for a source that is not K-contiguous (an MN-major operand): the warp reads along rows
// (the contiguous direction) into shared memory and writes along K, so both global sides
// stay coalesced.
__global__ void __launch_bounds__(256) repack_transpose_kernel(RepackSource src, uint16_t* dst, int64_t dst_ld,
                                                               int64_t dst_batch, int64_t rows, int64_t k) {
  __shared__ uint16_t tile[kRepackTile][kRepackTile + 1];  // +1: column reads hit distinct banks
  const int64_t k0 = blockIdx.x * int64_t{kRepackTile};
  const int64_t r0 = blockIdx.y * int64_t{kRepackTile};
  const int tx = threadIdx.x % kRepackTile, ty = threadIdx.x / kRepackTile;  // 32 x 8
  const uint16_t* base = src.ptr + blockIdx.z * src.batch_stride;
  uint16_t* out = dst + blockIdx.z * dst_batch;
#pragma unroll
  for (int j = 0; j < kRepackTile; j += 8) {
    const int64_t r = r0 + tx, kk = k0 + ty + j;
    if (r < rows && kk < k) tile[tx][ty + j] = base[r * src.row_stride + kk * src.k_stride];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kRepackTile; j += 8) {
    const int64_t r = r0 + ty + j, kk = k0 + tx;
    if (r < rows && kk < k) out[r * dst_ld + kk] = tile[ty + j][tx];
  }
}

// ---- K-contiguous sources (a leading dimension or base that TMA cannot take) ----
//
// A copy that only moves rows should run at DRAM speed, which needs ~40 KiB of loads in
// flight per SM: 16-byte loads, several per thread. The source rows start at any 2-byte
// offset, so each warp loads the 16-byte-aligned blocks that cover 256 elements of a row
// and every lane shifts its 16 output bytes out of its block and the next lane's. On the
// H200 it takes 20-24 us per 4097 x 4097 operand: 67 MB read and written at 2.8-3.4 TB/s,
// within 10% of cudaMemcpyAsync moving the same bytes contiguously (21.2 us) and twice as
// fast as cudaMemcpy2DAsync with these pitches (46.5 us; docs/notes/unaligned-operands.md).

inline constexpr int kRowChunk = 256;      // elements of a row per warp: 32 lanes x 8
inline constexpr int kRowsPerWarp = 2;     // independent rows in flight per warp
inline constexpr int kRowWarps = 8;        // warps per block

// The aligned 16-byte block at `block`, of which only the bytes in [lo, hi) may be read:
// a vector load when the whole block is inside, else the inside halves one by one (the
// others read as zero). [lo, hi) is the whole operand, first element to last, not the
// row's chunk: blocks that reach into a neighbouring chunk, row or batch (or the padding
// between them) are still inside the caller's allocation, and only the blocks at the
// operand's two ends take the slow path. Bounding by the chunk sent two lanes of every
// warp through it, and the copy was issue-bound (ncu: 15.5 of 32 threads active, SM
// throughput 73%, DRAM 36%).
__device__ __forceinline__ uint4 load_block_within(const uint8_t* block, const uint8_t* lo, const uint8_t* hi) {
  if (block >= lo && block + 16 <= hi) return *reinterpret_cast<const uint4*>(block);
  uint16_t halves[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const uint8_t* h = block + 2 * i;
    halves[i] = h >= lo && h < hi ? *reinterpret_cast<const uint16_t*>(h) : uint16_t{0};
  }
  uint4 v;
  v.x = halves[0] | uint32_t{halves[1]} << 16;
  v.y = halves[2] | uint32_t{halves[3]} << 16;
  v.z = halves[4] | uint32_t{halves[5]} << 16;
  v.w = halves[6] | uint32_t{halves[7]} << 16;
  return v;
}

// Bytes [2 kHalves, 2 kHalves + 16) of the 32 bytes `here` then `next`.
template <int kHalves>
__device__ __forceinline__ uint4 shift_out(uint4 here, uint4 next) {
  const uint32_t w[8] = {here.x, here.y, here.z, here.w, next.x, next.y, next.z, next.w};
  constexpr int q = kHalves / 2;
  uint32_t o[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) o[i] = kHalves % 2 == 0 ? w[q + i] : __funnelshift_r(w[q + i], w[q + i + 1], 16);
  return make_uint4(o[0], o[1], o[2], o[3]);
}

// Grid: (row groups of kRowWarps * kRowsPerWarp times chunks of kRowChunk along K, 1,
// batch), row groups fastest (26.8 against 29.1 us for chunks fastest at 4097^3, H200,
// measured before the operand-wide load bounds above).
__global__ void __launch_bounds__(kRowWarps * 32) repack_rows_kernel(RepackSource src, uint16_t* dst, int64_t dst_ld,
                                                                   int64_t dst_batch, int64_t rows, int64_t k) {
  constexpr int kRowsPerBlock = kRowWarps * kRowsPerWarp;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t groups = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t k0 = blockIdx.x / groups * kRowChunk;
  const int64_t valid = k - k0 < kRowChunk ? k - k0 : kRowChunk;  // elements of this chunk in the row
  const int64_t first_row = blockIdx.x % groups * kRowsPerBlock + warp * kRowsPerWarp;
  const auto* operand_begin = reinterpret_cast<const uint8_t*>(src.ptr);
  const auto* operand_end = reinterpret_cast<const uint8_t*>(src.ptr + (gridDim.z - 1) * src.batch_stride +
                                                             (rows - 1) * src.row_stride + k);
  uint4 here[kRowsPerWarp], next[kRowsPerWarp];
  int shift[kRowsPerWarp];
  // Every load first, so that each warp has all its rows' blocks in flight at once.
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    const int64_t row = first_row + j;
    if (row >= rows) continue;
    const auto* begin = reinterpret_cast<const uint8_t*>(src.ptr + blockIdx.z * src.batch_stride +
                                                         row * src.row_stride + k0);
    const auto* aligned = reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(begin) & ~uintptr_t{15});
    shift[j] = static_cast<int>(begin - aligned) / 2;
    // Blocks wholly past the chunk's elements (a row's last chunk) are not needed.
    const uint8_t* chunk_end = begin + 2 * valid;
    const uint8_t* mine = aligned + 16 * lane;
    here[j] = mine < chunk_end ? load_block_within(mine, operand_begin, operand_end) : uint4{};
    // Lane 31's "next" block is the 33rd; the others take their neighbour's.
    const uint8_t* extra_block = aligned + 16 * 32;
    const uint4 extra = lane == 31 && extra_block < chunk_end
                            ? load_block_within(extra_block, operand_begin, operand_end)
                            : uint4{};
    next[j].x = __shfl_down_sync(0xffffffffu, here[j].x, 1);
    next[j].y = __shfl_down_sync(0xffffffffu, here[j].y, 1);
    next[j].z = __shfl_down_sync(0xffffffffu, here[j].z, 1);
    next[j].w = __shfl_down_sync(0xffffffffu, here[j].w, 1);
    if (lane == 31) next[j] = extra;
  }
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    const int64_t row = first_row + j;
    if (row >= rows) continue;
    const int first = 8 * lane;  // this lane's elements of the chunk
    if (first >= valid) continue;
    uint4 out;
    switch (shift[j]) {  // the same in the whole warp: no divergence
      case 0: out = here[j]; break;
      case 1: out = shift_out<1>(here[j], next[j]); break;
      case 2: out = shift_out<2>(here[j], next[j]); break;
      case 3: out = shift_out<3>(here[j], next[j]); break;
      case 4: out = shift_out<4>(here[j], next[j]); break;
      case 5: out = shift_out<5>(here[j], next[j]); break;
      case 6: out = shift_out<6>(here[j], next[j]); break;
      default: out = shift_out<7>(here[j], next[j]); break;
    }
    // dst_ld and the workspace are 16-byte aligned (plan_repack), and so is every chunk.
    uint16_t* d = dst + blockIdx.z * dst_batch + row * dst_ld + k0 + first;
    if (first + 8 <= valid) {
      *reinterpret_cast<uint4*>(d) = out;
    } else {
      const uint32_t words[4] = {out.x, out.y, out.z, out.w};
      for (int i = 0; i < valid - first; ++i) d[i] = static_cast<uint16_t>(words[i / 2] >> (16 * (i % 2)));
    }
  }
}

// Whether one operand's repack fits the launch grid: grid.z (batch) and the transposing
// copy's grid.y (rows) are limited to 65535; the row copy's grid.x holds rows x K / 4096
// blocks, below 2^31 for any operand that fits in memory.
inline bool repack_grid_fits(const RepackSource& src, int64_t rows, int64_t batch) {
  return batch <= 65535 && (src.k_stride == 1 || (rows + kRepackTile - 1) / kRepackTile <= 65535);
}

inline Status launch_repack(const RepackSource& src, uint16_t* dst, int64_t dst_ld, int64_t dst_batch, int64_t rows,
                            int64_t k, int64_t batch, cudaStream_t stream, Diagnostic* diag) {
  if (src.k_stride == 1) {
    constexpr int kRowsPerBlock = kRowWarps * kRowsPerWarp;
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock * ((k + kRowChunk - 1) / kRowChunk);
    const dim3 grid(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(batch));
    repack_rows_kernel<<<grid, kRowWarps * 32, 0, stream>>>(src, dst, dst_ld, dst_batch, rows, k);
  } else {
    const dim3 grid(static_cast<unsigned>((k + kRepackTile - 1) / kRepackTile),
                    static_cast<unsigned>((rows + kRepackTile - 1) / kRepackTile), static_cast<unsigned>(batch));
    repack_transpose_kernel<<<grid, 256, 0, stream>>>(src, dst, dst_ld, dst_batch, rows, k);
  }
  return check_launch(diag, "sm90-gemm repack");
}

}  // namespace anvil::detail
