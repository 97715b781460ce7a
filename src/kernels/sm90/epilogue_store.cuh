// The consumer warpgroups' epilogue: accumulators -> fused math -> global memory.
// Three paths, chosen per launch on the host:
//   TMA store  - plain GEMM (no bias, activation, alpha or C) with a half output: each
//                warpgroup writes its slabs as bf16/fp16 into a 128-byte-swizzled shared
//                buffer, then one thread issues 64x64 TMA stores, which clip the edges;
//   pair store - plain GEMM, row-major half output: two neighbouring columns per 32-bit
//                store, straight from the registers;
//   staged     - everything else (fused epilogues, SwiGLU, fp32 or column-major output,
//                odd leading dimensions): each warp parks 16 x 32 fp32 chunks of its own
//                accumulator rows in shared memory and finishes them in a rolled loop,
//                four neighbouring outputs per thread and step.
// Why the staged path: an epilogue unrolled over all 128 accumulators of a thread is
// tens of KiB of straight-line machine code per activation, executed once per tile - the
// instruction cache misses on nearly every line of it. The rolled loop is a few hundred
// bytes; only the register-to-shared copies stay unrolled (they must: registers cannot
// be indexed at run time).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "arch/sm90/fence.cuh"
#include "arch/sm90/tma.cuh"
#include "kernels/sm90/fragment_epilogue.cuh"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/params.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi, DataType dtype) {
  if (dtype == DataType::kBF16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Named barrier over one consumer warpgroup's 128 threads (id 0 is __syncthreads).
__device__ __forceinline__ void warpgroup_sync(int consumer) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(consumer + 1) : "memory");
}

// The plain GEMM (D = acc) with a half output, straight from the registers.
template <class Config>
__device__ __forceinline__ void store_plain(const Sm90Params& params, const TileCoord& tile, int consumer,
                                              float (&acc)[Config::kSlabs][Config::kBlockN / 2], uint8_t* epilogue_smem) {
  const EpilogueParams& p = params.epilogue;
  const int64_t row0 = int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer);
  const int64_t col0 = int64_t{tile.n_tile} * Config::kBlockN;
  const int t = threadIdx.x % 128;
  if (row0 >= p.m) return;  // a cluster peer's tile past the bottom edge

  if constexpr (Config::kTmaStore) {
    if (params.tma_store) {
      constexpr int kBoxBytes = 64 * 128;  // 64 rows x 64 half columns
      uint8_t* buffer = epilogue_smem + consumer * Config::kSlabs * (Config::kBlockN / 64) * kBoxBytes;
      // The previous tile's stores must have finished reading the buffer.
      if (t == 0) sm90::tma_store_wait_read<0>();
      warpgroup_sync(consumer);
#pragma unroll
      for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
        for (int i = 0; i < Config::kBlockN / 2; i += 2) {
          const FragmentCoord c = fragment_coord(i, t);
          const int64_t row = row0 + slab * 64 + c.row, col = col0 + c.col;
          // Elements past the edge are clipped by the TMA store; zeros keep them finite.
          const bool in_rows = row < p.m;
          const float y0 = in_rows && col < p.n_out ? acc[slab][i] : 0.0f;
          const float y1 = in_rows && col + 1 < p.n_out ? acc[slab][i + 1] : 0.0f;
          const uint32_t packed = pack_half2(y0, y1, p.d.dtype);
          const int box = slab * (Config::kBlockN / 64) + c.col / 64;
          const int chunk = ((c.col % 64) / 8) ^ (c.row % 8);
          uint8_t* dst = buffer + box * kBoxBytes + c.row * 128 + chunk * 16 + (c.col % 8) * 2;
          *reinterpret_cast<uint32_t*>(dst) = packed;
        }
      }
      // Generic-proxy writes must be visible to the TMA engine's async-proxy reads.
      sm90::fence_proxy_async_shared();
      warpgroup_sync(consumer);
      if (t == 0) {
#pragma unroll
        for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
          for (int j = 0; j < Config::kBlockN / 64; ++j) {
            const uint8_t* src = buffer + (slab * (Config::kBlockN / 64) + j) * kBoxBytes;
            const int x = static_cast<int>(col0) + j * 64, y = static_cast<int>(row0) + slab * 64;
            if (params.batched) {
              sm90::tma_store_3d(&params.map_d, src, x, y, tile.batch);
            } else {
              sm90::tma_store_2d(&params.map_d, src, x, y);
            }
          }
        }
        sm90::tma_store_commit_group();
      }
      return;
    }
  }

  if (params.pair_store) {
    void* d = const_cast<void*>(p.d.ptr);
#pragma unroll
    for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
      for (int i = 0; i < Config::kBlockN / 2; i += 2) {
        const FragmentCoord c = fragment_coord(i, t);
        const int64_t row = row0 + slab * 64 + c.row, col = col0 + c.col;
        if (row >= p.m || col >= p.n_out) continue;
        const float y0 = acc[slab][i];
        const int64_t offset = element_offset(p.d, tile.batch, row, col);
        if (col + 1 < p.n_out) {
          const float y1 = acc[slab][i + 1];
          // offset is even: the host checked ld, batch stride and base alignment.
          reinterpret_cast<uint32_t*>(d)[offset / 2] = pack_half2(y0, y1, p.d.dtype);
        } else {
          store_float(d, p.d.dtype, offset, y0);
        }
      }
    }
  }
}

// ---- the staged path ----

// A warp's chunk: 16 rows (the warp's share of a 64-row slab) x 32 fp32 columns. The
// pitch of 40 floats (8 mod 32 banks) makes the fragment's 64-bit stores conflict-free:
// a half-warp writes rows r..r+3 at 8-bank offsets, columns 0..7 within each.
inline constexpr int kStagePitch = 40;
inline constexpr int kStageChunkBytes = 16 * kStagePitch * 4;

// The chunks of one slab: plain, 32 consecutive GEMM columns; SwiGLU, 16 gate columns
// in stage columns 0-15 and their up columns (64 further right) in 16-31.
template <int kBlockN>
inline constexpr int kPlainChunks = kBlockN / 32;
template <int kBlockN>
inline constexpr int kSwiGLUChunks = kBlockN / 128 * 4;

// Copies fragment registers [first, first + count) to the stage at stage column
// `col - col_shift` (fragment layout: fragment_epilogue.cuh); rows are the warp's 16.
template <int kFirst, int kCount, int kN>
__device__ __forceinline__ void park_registers(float* stage, const float (&acc)[kN], int col_shift, int lane) {
#pragma unroll
  for (int i = kFirst; i < kFirst + kCount; i += 2) {
    const int row = lane / 4 + ((i & 2) ? 8 : 0);
    const int col = (i / 4) * 8 + (lane % 4) * 2 - col_shift;
    *reinterpret_cast<float2*>(stage + row * kStagePitch + col) = make_float2(acc[i], acc[i + 1]);
  }
}

// Parks chunk `chunk` of a slab. The chunk index is a run-time value (the finishing loop
// around it is rolled); each branch indexes the registers with constants.
template <int kBlockN, bool kSwiGLU, int kChunk = 0>
__device__ __forceinline__ void park_chunk(float* stage, const float (&acc)[kBlockN / 2], int chunk, int lane) {
  constexpr int kChunks = kSwiGLU ? kSwiGLUChunks<kBlockN> : kPlainChunks<kBlockN>;
  if constexpr (kChunk < kChunks) {
    if (chunk == kChunk) {
      if constexpr (kSwiGLU) {
        // Gate columns 128b + 16h .. +16 are registers 64b + 8h .. +8; up is 32 later.
        constexpr int kFirst = (kChunk / 4) * 64 + (kChunk % 4) * 8;
        constexpr int kShift = (kChunk / 4) * 128 + (kChunk % 4) * 16;
        park_registers<kFirst, 8>(stage, acc, kShift, lane);
        park_registers<kFirst + 32, 8>(stage, acc, kShift + 64 - 16, lane);
      } else {
        park_registers<kChunk * 16, 16>(stage, acc, kChunk * 32, lane);
      }
      return;
    }
    park_chunk<kBlockN, kSwiGLU, kChunk + 1>(stage, acc, chunk, lane);
  }
}

// Finishes a parked chunk: 16 rows from `row0`; output columns from `out_col0`, GEMM
// (bias) columns from `gemm_col0`. Lane l takes four neighbouring columns, eight (plain)
// or four (SwiGLU) groups per row, so a warp step covers whole 64- or 32-byte row
// segments; the lane's columns are the same on every step, so their bias is loaded once.
// The step loop stays rolled: unrolled, ptxas interleaves the steps' activation math and
// runs out of registers next to the live accumulators.
template <Activation kAct>
__device__ __forceinline__ void finish_chunk(const EpilogueParams& p, const float* stage, int64_t batch, int64_t row0,
                                             int64_t out_col0, int64_t gemm_col0, int64_t gemm_cols, int lane) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  constexpr int kGroupsPerRow = kSwiGLU ? 4 : 8;
  constexpr int kRowsPerStep = 32 / kGroupsPerRow;
  const int c = (lane % kGroupsPerRow) * 4;
  if (out_col0 + c >= p.n_out) return;
  const ColumnBias bias = load_column_bias(p, kSwiGLU, gemm_col0 + c, gemm_cols);
#pragma unroll 1
  for (int step = 0; step < 16 / kRowsPerStep; ++step) {
    const int r = lane / kGroupsPerRow + step * kRowsPerStep;
    const int64_t row = row0 + r;
    if (row >= p.m) break;
    const float4 gate = *reinterpret_cast<const float4*>(stage + r * kStagePitch + c);
    const float4 up = kSwiGLU ? *reinterpret_cast<const float4*>(stage + r * kStagePitch + 16 + c) : gate;
    finish_four<kAct>(p, batch, row, out_col0 + c, bias, gate, up);
  }
}

template <class Config, Activation kAct>
__device__ __forceinline__ void store_staged(const EpilogueParams& p, const TileCoord& tile, int consumer,
                                             float (&acc)[Config::kSlabs][Config::kBlockN / 2], uint8_t* epilogue_smem) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  constexpr int kChunks = kSwiGLU ? kSwiGLUChunks<Config::kBlockN> : kPlainChunks<Config::kBlockN>;
  static_assert(Config::kEpilogueBytes >= Config::kConsumers * 4 * kStageChunkBytes, "a chunk per consumer warp");
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  float* stage = reinterpret_cast<float*>(epilogue_smem + (consumer * 4 + warp) * kStageChunkBytes);
  const int64_t gemm_tile_col = int64_t{tile.n_tile} * Config::kBlockN;
  const int64_t gemm_cols = kSwiGLU ? 2 * p.n_out : p.n_out;
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) {
    const int64_t row0 =
        int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer) + slab * 64 + warp * 16;
    if (row0 >= p.m) continue;
#pragma unroll 1
    for (int chunk = 0; chunk < kChunks; ++chunk) {
      __syncwarp();  // the previous chunk's reads are done before it is overwritten
      park_chunk<Config::kBlockN, kSwiGLU>(stage, acc[slab], chunk, lane);
      __syncwarp();
      // Plain: columns 32 c ..; SwiGLU: gate columns 128 (c / 4) + 16 (c % 4) .., whose
      // outputs are 64 (c / 4) + 16 (c % 4) ...
      const int64_t gemm_col0 = gemm_tile_col + (kSwiGLU ? (chunk / 4) * 128 + (chunk % 4) * 16 : chunk * 32);
      const int64_t out_col0 = kSwiGLU ? gemm_tile_col / 2 + (chunk / 4) * 64 + (chunk % 4) * 16 : gemm_col0;
      finish_chunk<kAct>(p, stage, tile.batch, row0, out_col0, gemm_col0, gemm_cols, lane);
    }
  }
}

// The plain GEMM with a half output takes the direct paths; everything else is staged,
// with one instantiation per activation chosen once per tile.
template <class Config>
__device__ __forceinline__ void store_tile(const Sm90Params& params, const TileCoord& tile, int consumer,
                                           float (&acc)[Config::kSlabs][Config::kBlockN / 2], uint8_t* epilogue_smem) {
  const EpilogueParams& p = params.epilogue;
  if (params.tma_store || params.pair_store) return store_plain<Config>(params, tile, consumer, acc, epilogue_smem);
  switch (p.activation) {
    case Activation::kReLU: return store_staged<Config, Activation::kReLU>(p, tile, consumer, acc, epilogue_smem);
    case Activation::kGeluErf: return store_staged<Config, Activation::kGeluErf>(p, tile, consumer, acc, epilogue_smem);
    case Activation::kGeluTanh: return store_staged<Config, Activation::kGeluTanh>(p, tile, consumer, acc, epilogue_smem);
    case Activation::kSiLU: return store_staged<Config, Activation::kSiLU>(p, tile, consumer, acc, epilogue_smem);
    case Activation::kSwiGLU:
      if constexpr (Config::kBlockN % 128 == 0) {
        return store_staged<Config, Activation::kSwiGLU>(p, tile, consumer, acc, epilogue_smem);
      }
      return;  // refused on the host: SwiGLU needs 128-column tiles
    default: return store_staged<Config, Activation::kIdentity>(p, tile, consumer, acc, epilogue_smem);
  }
}

// Outstanding TMA stores must complete before the CTA's shared memory goes away.
template <class Config>
__device__ __forceinline__ void finish_epilogue(const Sm90Params& params) {
  if constexpr (Config::kTmaStore) {
    if (params.tma_store && threadIdx.x % 128 == 0) sm90::tma_store_wait_all<0>();
  }
}

}  // namespace anvil::detail
