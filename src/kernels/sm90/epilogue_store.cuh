// The consumer warpgroups' epilogue: accumulators -> fused math -> global memory.
// Three paths, chosen per launch on the host:
//   TMA store  - each warpgroup writes its slabs as bf16/fp16 into a 128-byte-swizzled
//                shared buffer (conflict-free: 8 rows of a warp hit 8 bank groups), then
//                one thread issues 64x64 TMA stores, which clip the tile edges themselves;
//   pair store - row-major half output: two neighbouring columns per 32-bit store;
//   generic    - any layout and dtype, one element at a time (also SwiGLU).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "arch/sm90/fence.cuh"
#include "arch/sm90/tma.cuh"
#include "kernels/sm90/fragment_epilogue.cuh"
#include "kernels/sm90/params.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

// The fused math, applied to the accumulators in place before any store path runs:
// acc = act(alpha * acc + bias) + beta * C. The activation is a template constant
// (store_tile switches on it once per tile), so the unrolled loop has no per-element
// branch and no out-of-line call - a call would spill the live accumulators around it -
// and the store paths below exist once per kernel instead of once per activation.
template <class Config, Activation kAct>
__device__ __forceinline__ void apply_epilogue_math(const EpilogueParams& p, int64_t batch, int64_t row0, int64_t col0,
                                                    float (&acc)[Config::kSlabs][Config::kBlockN / 2]) {
  const int t = threadIdx.x % 128;
  const bool column_bias = p.bias_mode == BiasMode::kPerColumn, row_bias = p.bias_mode == BiasMode::kPerRow;
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
    for (int i = 0; i < Config::kBlockN / 2; ++i) {
      const FragmentCoord c = fragment_coord(i, t);
      const int64_t row = row0 + slab * 64 + c.row, col = col0 + c.col;
      const bool inside = row < p.m && col < p.n_out;  // edges: nothing to read past the matrix
      float z = p.alpha * acc[slab][i];
      if (column_bias && col < p.n_out) z += load_float(p.bias, p.bias_dtype, col);
      if (row_bias && row < p.m) z += load_float(p.bias, p.bias_dtype, row);
      float y = activate(z, kAct);
      if (p.beta != 0.0f && inside) y += p.beta * load_float(p.c.ptr, p.c.dtype, element_offset(p.c, batch, row, col));
      acc[slab][i] = y;
    }
  }
}

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

template <class Config>
__device__ __forceinline__ void store_accumulators(const Sm90Params& params, const TileCoord& tile, int consumer,
                                              float (&acc)[Config::kSlabs][Config::kBlockN / 2], uint8_t* epilogue_smem) {
  const EpilogueParams& p = params.epilogue;
  const int64_t row0 = int64_t{tile.m_tile} * Config::kBlockM + consumer * Config::kSlabs * 64;
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
          // Elements past the edge are clipped by the TMA store, but their bias and C
          // must not be read.
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
    return;
  }

  // Any other output (fp32, column-major, odd leading dimension): one element at a time.
  void* d = const_cast<void*>(p.d.ptr);
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
    for (int i = 0; i < Config::kBlockN / 2; ++i) {
      const FragmentCoord c = fragment_coord(i, t);
      const int64_t row = row0 + slab * 64 + c.row, col = col0 + c.col;
      if (row < p.m && col < p.n_out) {
        store_float(d, p.d.dtype, element_offset(p.d, tile.batch, row, col), acc[slab][i]);
      }
    }
  }
}

// SwiGLU: GEMM columns c and c + 64 of a 128-column block are the gate and up halves of
// output column (c / 128) * 64 + c % 64; both sit in this thread's registers, 32 apart.
template <class Config>
__device__ __forceinline__ void store_tile_swiglu(const Sm90Params& params, const TileCoord& tile, int consumer,
                                                  float (&acc)[Config::kSlabs][Config::kBlockN / 2]) {
  static_assert(Config::kBlockN % 128 == 0, "SwiGLU pairs need 128-column tiles");
  const EpilogueParams& p = params.epilogue;
  const int64_t row0 = int64_t{tile.m_tile} * Config::kBlockM + consumer * Config::kSlabs * 64;
  const int64_t gemm_col0 = int64_t{tile.n_tile} * Config::kBlockN;
  const int t = threadIdx.x % 128;
  void* d = const_cast<void*>(p.d.ptr);
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
    for (int i = 0; i < Config::kBlockN / 2; ++i) {
      const FragmentCoord c = fragment_coord(i, t);
      if ((c.col % 128) >= 64) continue;
      const int64_t row = row0 + slab * 64 + c.row;
      const int64_t gate_col = gemm_col0 + c.col;
      const int64_t col = (gate_col / 128) * 64 + gate_col % 64;
      if (row >= p.m || col >= p.n_out) continue;
      float gate = p.alpha * acc[slab][i], up = p.alpha * acc[slab][i + 32];
      if (p.bias_mode == BiasMode::kPerColumn) {
        gate += load_float(p.bias, p.bias_dtype, gate_col);
        up += load_float(p.bias, p.bias_dtype, gate_col + 64);
      } else if (p.bias_mode == BiasMode::kPerRow) {
        const float b = load_float(p.bias, p.bias_dtype, row);
        gate += b;
        up += b;
      }
      float y = silu(gate) * up;
      if (p.beta != 0.0f) y += p.beta * load_float(p.c.ptr, p.c.dtype, element_offset(p.c, tile.batch, row, col));
      store_float(d, p.d.dtype, element_offset(p.d, tile.batch, row, col), y);
    }
  }
}

// One switch per tile picks the math's instantiation; the stores are shared.
template <class Config>
__device__ __forceinline__ void store_tile(const Sm90Params& params, const TileCoord& tile, int consumer,
                                           float (&acc)[Config::kSlabs][Config::kBlockN / 2], uint8_t* epilogue_smem) {
  const EpilogueParams& p = params.epilogue;
  if constexpr (Config::kBlockN % 128 == 0) {
    if (p.activation == Activation::kSwiGLU) return store_tile_swiglu<Config>(params, tile, consumer, acc);
  }
  const int64_t row0 = int64_t{tile.m_tile} * Config::kBlockM + consumer * Config::kSlabs * 64;
  const int64_t col0 = int64_t{tile.n_tile} * Config::kBlockN;
  const bool trivial = p.alpha == 1.0f && p.bias_mode == BiasMode::kNone && p.beta == 0.0f;
  switch (p.activation) {
    case Activation::kReLU: apply_epilogue_math<Config, Activation::kReLU>(p, tile.batch, row0, col0, acc); break;
    case Activation::kGeluErf: apply_epilogue_math<Config, Activation::kGeluErf>(p, tile.batch, row0, col0, acc); break;
    case Activation::kGeluTanh: apply_epilogue_math<Config, Activation::kGeluTanh>(p, tile.batch, row0, col0, acc); break;
    case Activation::kSiLU: apply_epilogue_math<Config, Activation::kSiLU>(p, tile.batch, row0, col0, acc); break;
    default:
      if (!trivial) apply_epilogue_math<Config, Activation::kIdentity>(p, tile.batch, row0, col0, acc);
      break;
  }
  store_accumulators<Config>(params, tile, consumer, acc, epilogue_smem);
}

// Outstanding TMA stores must complete before the CTA's shared memory goes away.
template <class Config>
__device__ __forceinline__ void finish_epilogue(const Sm90Params& params) {
  if constexpr (Config::kTmaStore) {
    if (params.tma_store && threadIdx.x % 128 == 0) sm90::tma_store_wait_all<0>();
  }
}

}  // namespace anvil::detail
