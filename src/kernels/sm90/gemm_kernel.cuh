// The warp-specialized Hopper GEMM, composed from its parts:
//   producer warpgroup  - one thread walks the tile sequence issuing TMA loads into the
//                         stage ring (producer.cuh);
//   consumer warpgroups - each owns 64-row slabs of the output tile, issues wgmma from
//                         the ring and frees stages (consumer.cuh), then runs the fused
//                         epilogue (epilogue_store.cuh) while the producer already
//                         prefetches the next tile;
//   tile scheduler      - the same tile order for both roles (tile_scheduler.cuh), or,
//                         for stream-K configurations, the same work units: whole tiles,
//                         then pieces of tiles cut along K (stream_k.h), whose partial
//                         sums meet in the workspace (stream_k_fixup.cuh).
// Ladder steps 6-10, the production kernel and the FP8 kernel (8-bit inputs, with their
// scales applied to the accumulators before the epilogue, or per K block in the mainloop
// for block scales) are configurations of this one template.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <type_traits>

#include "arch/sm90/cluster.cuh"
#include "arch/sm90/setmaxnreg.cuh"
#include "arch/sm90/swizzle_alignment.cuh"
#include "kernels/sm90/consumer.cuh"
#include "kernels/sm90/epilogue_store.cuh"
#include "kernels/sm90/fp8_scales.cuh"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/params.h"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/producer.cuh"
#include "kernels/sm90/stream_k_fixup.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

// A block-scaled configuration's A scales, kBlockM floats per stage (one TMA box each).
template <class Config>
struct BlockScaleRing {
  alignas(128) float a[Config::kStages][kScaleSlotFloats<Config::kBlockM>];
};
struct NoBlockScaleRing {};

template <class Config>
struct SharedStorage {
  alignas(1024) uint8_t a[Config::kStages][Config::kStageBytesA];
  alignas(1024) uint8_t b[Config::kStages][Config::kStageBytesB];
  alignas(1024) uint8_t epilogue[Config::kEpilogueBytes];
  StageBarriers<Config::kStages> barriers;
  // Ping-pong: consumer c arrives on mainloop_done[c] when it has issued a tile's last
  // wgmma. The other waits for that before its own tile, so their mainloops alternate
  // and a warpgroup never waits on a stage more than one phase ahead of its barrier.
  uint64_t mainloop_done[Config::kConsumers];
  // Block-scaled configurations: each stage's A scales (producer.cuh); nothing otherwise.
  [[no_unique_address]] std::conditional_t<Config::kBlockScales, BlockScaleRing<Config>, NoBlockScaleRing> scales;
};

// The consumers' walk over stream-K work units: a unit that ends before the tile's last K
// tile is parked for the CTA that finishes the tile; the finishing unit first adds what
// the lower-numbered CTAs parked; whole tiles go straight to the epilogue.
template <class Config, sm90::Input kInput>
__device__ __forceinline__ void run_stream_k_consumer(const Sm90Params& params, int consumer,
                                                      float (&acc)[Config::kSlabs][Config::kBlockN / 2],
                                                      StageRing<Config::kStages>& ring,
                                                      SharedStorage<Config>& shared) {
  const int cta = static_cast<int>(blockIdx.x);
  StreamKCursor cursor(params.stream_k, cta);
  WorkUnit unit;
  while (cursor.next(&unit)) {
    const int a_shift_rows =
        moves_last_box_to_m<Config>()
            ? a_box_shift<Config::kBlockM>(params.scheduler.tile(unit.linear, 0).m_tile * Config::kBlockM,
                                           stored_rows_a(params))
            : 0;
    run_consumer_mainloop<Config, kInput>(acc, consumer, unit.k_end - unit.k_begin, ring, shared.a, shared.b,
                                          shared.barriers, nullptr, false, a_shift_rows);
    if (unit.k_end < params.k_tiles) {
      park_partial_in_workspace<Config>(params.stream_k_workspace, cta, consumer, acc);
      continue;
    }
    if (unit.k_begin > 0) {
      const int tile_start = (unit.linear - params.stream_k.dp_tiles()) * params.k_tiles;
      add_parked_partials<Config>(params.stream_k_workspace, cta, params.stream_k.cta_of(tile_start), consumer, acc);
    }
    store_tile<Config>(params, params.scheduler.tile(unit.linear, 0), consumer, acc, shared.epilogue);
  }
}

template <class Config, sm90::Input kInput>
__global__ void __launch_bounds__(Config::kThreads, 1) sm90_gemm_kernel(const __grid_constant__ Sm90Params params) {
  extern __shared__ uint8_t smem_raw[];
  // Swizzled tiles start on a swizzle atom, inside the slack the launch reserved. Rounded
  // here rather than through sm90::align_to_swizzle_atom: handing the shared array to a
  // function gives the ping-pong configuration different (128 bytes shorter) code, and
  // this kernel's code is kept as measured.
  constexpr uintptr_t kAtomMask = sm90::kSwizzleAtomBytes - 1;
  auto& shared =
      *reinterpret_cast<SharedStorage<Config>*>((reinterpret_cast<uintptr_t>(smem_raw) + kAtomMask) & ~kAtomMask);

  const int warpgroup = threadIdx.x / 128;
  const uint32_t cta_rank = Config::kClusterCtas > 1 ? sm90::cluster_cta_rank() : 0;
  const int cluster = blockIdx.x / Config::kClusterCtas;
  const int clusters = gridDim.x / Config::kClusterCtas;

  if (threadIdx.x == 0) {
    sm90::tma_prefetch_descriptor(&params.map_a);
    sm90::tma_prefetch_descriptor(&params.map_b);
    // Every consumer warpgroup that reads a stage, in every CTA that receives it by
    // multicast, frees it.
    shared.barriers.init(Config::kStageReaders * Config::kReleaseCtas);
    if constexpr (Config::kPingPong) {
      for (int c = 0; c < Config::kConsumers; ++c) sm90::mbarrier_init(&shared.mainloop_done[c], 1);
      sm90::fence_barrier_init();
    }
  }
  // Peers must see initialised barriers before the first multicast lands in them.
  if constexpr (Config::kClusterCtas > 1) {
    sm90::cluster_sync();
  } else {
    __syncthreads();
  }

  if (warpgroup == 0) {
    sm90::setmaxnreg_dec<Config::kProducerRegisters>();
    if (threadIdx.x == 0) {
      if constexpr (Config::kBlockScales) {
        run_producer<Config>(params, cta_rank, cluster, clusters, shared.a, shared.b, shared.barriers,
                             &shared.scales.a[0][0]);
      } else {
        run_producer<Config>(params, cta_rank, cluster, clusters, shared.a, shared.b, shared.barriers);
      }
    }
  } else {
    sm90::setmaxnreg_inc<Config::kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    StageRing<Config::kStages> ring;
    float acc[Config::kSlabs][Config::kBlockN / 2];
    if constexpr (Config::kStreamK) {
      run_stream_k_consumer<Config, kInput>(params, consumer, acc, ring, shared);
    } else {
      // turn counts this CTA's tiles, both warpgroups' (ping-pong); the tile index is
      // recomputed from it each time so that only one loop counter stays live.
      for (int turn = 0;; ++turn) {
        const int linear =
            sm90::cta_id_x() / Config::kClusterCtas + turn * (sm90::grid_dim_x() / Config::kClusterCtas);
        if (linear >= params.scheduler.total_cluster_tiles()) break;
        uint64_t* done = nullptr;
        if constexpr (Config::kPingPong) {
          if (turn % Config::kConsumers != consumer) {
            ring.skip(params.k_tiles);  // the other warpgroup's tile
            continue;
          }
          // Tile `turn` starts after tile turn-1's mainloop, the other warpgroup's
          // ((turn - 1) / 2)-th: that completion's phase parity.
          if (turn > 0) {
            sm90::mbarrier_wait(&shared.mainloop_done[(turn - 1) % Config::kConsumers],
                                static_cast<uint32_t>((turn - 1) / Config::kConsumers) & 1u);
          }
          done = &shared.mainloop_done[consumer];
        }
        const TileCoord tile = params.scheduler.tile(linear, cta_rank);
        // The producer moved a last row of tiles' A box up to end at M (a_box_shift).
        const int a_shift_rows = moves_last_box_to_m<Config>()
                                     ? a_box_shift<Config::kBlockM>(tile.m_tile * Config::kBlockM, stored_rows_a(params))
                                     : 0;
        if constexpr (Config::kBlockScales) {
          run_block_scaled_mainloop<Config, kInput>(acc, consumer, params.k_tiles, params.scales, tile,
                                                    block_scale_line(params, tile), int64_t{tile.m_tile} * Config::kBlockM,
                                                    ring, shared.a, shared.b, shared.scales.a, shared.barriers,
                                                    a_shift_rows);
        } else if constexpr (Config::kFoldKSlices) {
          run_sliced_mainloop<Config, kInput>(acc, consumer, params.k_tiles, params.k_slices, ring, shared.a, shared.b,
                                              shared.barriers, a_shift_rows);
        } else if constexpr (Config::kElementBytes == 1) {
          const bool no_rows =
              int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer) >= params.scales.rows;
          run_consumer_mainloop<Config, kInput>(acc, consumer, params.k_tiles, ring, shared.a, shared.b,
                                                shared.barriers, done, no_rows, a_shift_rows);
        } else {
          run_consumer_mainloop<Config, kInput>(acc, consumer, params.k_tiles, ring, shared.a, shared.b,
                                                shared.barriers, done, false, a_shift_rows);
        }
        if constexpr (Config::kElementBytes == 1 && !Config::kBlockScales) {
          apply_output_scales<Config>(params, tile, consumer, acc);
        }
        store_tile<Config>(params, tile, consumer, acc, shared.epilogue);
      }
    }
    finish_epilogue<Config>(params);
  }

  // No CTA may leave while a peer can still multicast into it or arrive on its barriers.
  // The cluster barrier is a .aligned instruction: the producer warp must reconverge
  // (lane 0 ran the producer loop alone) before it arrives.
  if constexpr (Config::kClusterCtas > 1) {
    __syncwarp();
    sm90::cluster_sync();
  }
}

}  // namespace anvil::detail
