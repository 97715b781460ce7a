// The grouped GEMM for mixture-of-experts layers: D_e = A_e W_e^T for every expert e in one
// persistent launch, built from sm90-gemm's parts - the stage ring (pipeline.cuh), the TMA
// producer (producer.cuh, load_tile_at), the wgmma consumers (consumer.cuh) and the
// epilogue (epilogue_store.cuh, store_tile_clipped) - with the grouped tile order
// (grouped_scheduler.cuh) in place of the dense one.
//
// Operands (row-major, K contiguous; docs/grouped.md):
//   W: [E, N, K], one 3-D tensor map, the expert is the batch coordinate;
//   contiguous layout: A [rows, K], D [rows, N_out], expert e on rows
//     offsets[e] .. offsets[e+1]; A's map is 2-D, a tile's box starts at the expert's row;
//   masked layout: A [E, max_rows, K], D [E, max_rows, N_out], counts[e] rows used; A's
//     map is 3-D, the expert is the batch coordinate.
// FP8 (8-bit configurations, grouped_configs.h): the same machine with e4m3 operands, 128
// values of K per stage; the scales multiply the accumulators before the epilogue
// (fp8_scales.cuh, scale_accumulators), A's from the expert's first storage row and B's
// from the expert's own block of column scales. Both consumer warpgroups multiply every
// tile, also where one's rows all lie past the expert's: run_consumer_mainloop's no_rows
// path holds its warps level with a warpgroup barrier, which costs the 256-wide FP8
// configuration spilled registers. With DeepSeek-V3 block scales each K block is summed
// and promoted in the mainloop (consumer.cuh, run_block_scaled_mainloop, whose warpgroups
// with no rows pass the stages), A's scales riding with the stages as in sm90-gemm, B's
// from the expert's block.
// A box may run past the expert's rows: into the next expert's rows (contiguous; they are
// multiplied and dropped) or off the tensor (zero-filled by TMA). The stores are clipped
// to the expert's rows in registers (store_tile_clipped): a TMA store of the box would
// write the next expert's output rows, and a tensor map per expert would have to be
// written on the device for every tile, which costs more than the masked stores.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "arch/sm90/setmaxnreg.cuh"
#include "arch/sm90/swizzle_alignment.cuh"
#include "kernels/sm90/consumer.cuh"
#include "kernels/sm90/epilogue_store.cuh"
#include "kernels/sm90/fp8_scales.cuh"
#include "kernels/sm90/gemm_kernel.cuh"
#include "kernels/sm90/grouped_scheduler.cuh"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/producer.cuh"

namespace anvil::detail {

struct Sm90GroupedParams {
  CUtensorMap map_a, map_b;
  int k_tiles;
  bool a_batched;   // masked layout: A's map is 3-D (k, row, expert)
  bool b_batched;   // more than one expert: W's map is 3-D (k, n, expert)
  bool pair_store;  // plain GEMM with an even-width half output: pair stores, else staged
  GroupedSchedule schedule;
  // D, bias and the epilogue for expert 0 at row 0; a tile's copy is moved to its expert.
  EpilogueParams epilogue;
  int64_t d_expert_elements;     // masked: elements between experts' outputs (max_rows x N_out)
  int64_t bias_expert_elements;  // elements between experts' column biases (N)
  // 8-bit configurations only. scales.a / scales.b as the caller gave them (grouped.h);
  // scales.cols = N.
  Fp8Scales scales;
  // floats between experts' B scales: N (row/column), 1 (tensor), ceil(N/128) x ceil(K/128)
  // (block), or 0 (one set for all experts)
  int64_t scale_b_expert_stride;
  // Block-scaled configurations only: A's scales, [k_blocks, storage rows], as one line
  // (tma_operands.h, encode_block_scales_a).
  CUtensorMap map_scales_a;
};

// DeepSeek-V3 block scales of one tile, for the block-scaled mainloop (consumer.cuh): B's
// from its expert's [ceil(N/128), k_blocks] block, the row bound the expert's rows. A's
// come with the stages (grouped_scale_line).
__device__ __forceinline__ Fp8Scales grouped_block_scales(const Sm90GroupedParams& params, const GroupedTile& tile) {
  Fp8Scales s = params.scales;
  s.b += int64_t{tile.expert} * params.scale_b_expert_stride;
  s.rows = tile.rows;
  return s;
}

// A tile's line of A scales: contiguous, the tile's rows are storage rows already (its A
// box starts at the expert's first row, grouped_tile_row); masked, past the experts before.
__device__ __forceinline__ ScaleLine grouped_scale_line(const Sm90GroupedParams& params, const GroupedTile& tile) {
  const int64_t expert_row = params.schedule.masked ? int64_t{tile.expert} * params.schedule.rows : 0;
  return ScaleLine{params.scales.rows, 0, params.scales.a_map_shift + expert_row};
}

// The storage row of a tile's first row, less a masked expert's first (in its scale line).
template <class Config>
__device__ __forceinline__ int64_t grouped_tile_row(const GroupedTile& tile) {
  return tile.row_begin + int64_t{tile.m_tile} * Config::kBlockM;
}

// FP8: the tile's sums times its expert's scales. kRowColumn rows index A's storage rows
// from the expert's first (contiguous: its first row of A; masked: expert x max_rows).
template <class Config>
__device__ __forceinline__ void apply_grouped_scales(const Sm90GroupedParams& params, const GroupedTile& tile,
                                                     int consumer, float (&acc)[Config::kSlabs][Config::kBlockN / 2]) {
  const Fp8Scales& s = params.scales;
  const float* sa = s.a;
  if (s.mode == ScaleMode::kRowColumn) {
    sa += params.schedule.masked ? int64_t{tile.expert} * params.schedule.rows : tile.row_begin;
  }
  const float* sb = s.b + int64_t{tile.expert} * params.scale_b_expert_stride;
  scale_accumulators<Config>(s.mode, sa, sb, tile.rows, s.cols,
                             int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer),
                             int64_t{tile.n_tile} * Config::kBlockN, acc);
}

// The epilogue of one expert: D from its first row, its row count, its bias.
__device__ __forceinline__ EpilogueParams expert_epilogue(const Sm90GroupedParams& params, const GroupedTile& tile) {
  EpilogueParams p = params.epilogue;
  const int64_t first = params.schedule.masked ? tile.expert * params.d_expert_elements
                                               : tile.row_begin * p.d.row_stride;
  const int64_t d_bytes = p.d.dtype == DataType::kF32 ? 4 : 2;
  p.d.ptr = static_cast<const uint8_t*>(p.d.ptr) + first * d_bytes;
  p.m = tile.rows;
  if (p.bias != nullptr) {
    const int64_t bias_bytes = p.bias_dtype == DataType::kF32 ? 4 : 2;
    p.bias = static_cast<const uint8_t*>(p.bias) + tile.expert * params.bias_expert_elements * bias_bytes;
  }
  return p;
}

template <class Config, sm90::Input kInput>
__global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_grouped_kernel(const __grid_constant__ Sm90GroupedParams params) {
  static_assert(Config::kClusterCtas == 1 && !Config::kStreamK && !Config::kPingPong,
                "grouped tiles are whole tiles of single cooperative CTAs");
  extern __shared__ uint8_t smem_raw[];
  auto& shared = *reinterpret_cast<SharedStorage<Config>*>(sm90::align_to_swizzle_atom(smem_raw));

  const int warpgroup = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    sm90::tma_prefetch_descriptor(&params.map_a);
    sm90::tma_prefetch_descriptor(&params.map_b);
    shared.barriers.init(Config::kStageReaders);
  }
  __syncthreads();

  if (warpgroup == 0) {
    sm90::setmaxnreg_dec<Config::kProducerRegisters>();
    // The producer's warp walks the tile order together (the cursor is a warp's work);
    // its first lane issues the copies.
    if (threadIdx.x < 32) {
      GroupedTileCursor cursor(params.schedule);
      StageRing<Config::kStages> ring;
      GroupedTile tile;
      for (int linear = blockIdx.x; cursor.find(linear, &tile); linear += gridDim.x) {
        if (threadIdx.x == 0) {
          // The expert is the batch coordinate of W's map (and of A's, masked); contiguous, A's
          // box starts at the expert's first row.
          const TileCoord coord{tile.m_tile, tile.n_tile, tile.expert};
          if constexpr (Config::kBlockScales) {
            load_tile_at<Config>(params.map_a, params.map_b, params.a_batched, params.b_batched, coord,
                                 static_cast<int>(tile.row_begin), 0, params.k_tiles, 0, ring, shared.a, shared.b,
                                 shared.barriers, INT64_MAX, INT64_MAX, nullptr,
                                 StageScalesA{&params.map_scales_a, &shared.scales.a[0][0],
                                              grouped_scale_line(params, tile)});
          } else {
            load_tile_at<Config>(params.map_a, params.map_b, params.a_batched, params.b_batched, coord,
                                 static_cast<int>(tile.row_begin), 0, params.k_tiles, 0, ring, shared.a, shared.b,
                                 shared.barriers);
          }
        }
        __syncwarp();
      }
    }
  } else {
    sm90::setmaxnreg_inc<Config::kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    StageRing<Config::kStages> ring;
    float acc[Config::kSlabs][Config::kBlockN / 2];
    GroupedTileCursor cursor(params.schedule);
    GroupedTile tile;
    for (int linear = blockIdx.x; cursor.find(linear, &tile); linear += gridDim.x) {
      if constexpr (Config::kBlockScales) {
        run_block_scaled_mainloop<Config, kInput>(acc, consumer, params.k_tiles, grouped_block_scales(params, tile),
                                                  TileCoord{tile.m_tile, tile.n_tile, 0}, grouped_scale_line(params, tile),
                                                  grouped_tile_row<Config>(tile), ring, shared.a, shared.b,
                                                  shared.scales.a, shared.barriers);
      } else if constexpr (Config::kElementBytes == 1) {
        run_consumer_mainloop<Config, kInput>(acc, consumer, params.k_tiles, ring, shared.a, shared.b,
                                              shared.barriers);
        apply_grouped_scales<Config>(params, tile, consumer, acc);
      } else {
        run_consumer_mainloop<Config, kInput>(acc, consumer, params.k_tiles, ring, shared.a, shared.b,
                                              shared.barriers);
      }
      const EpilogueParams p = expert_epilogue(params, tile);
      store_tile_clipped<Config>(p, params.pair_store, TileCoord{tile.m_tile, tile.n_tile, 0}, consumer, acc,
                                 shared.epilogue);
    }
  }
}

}  // namespace anvil::detail
