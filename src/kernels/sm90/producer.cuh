// The producer: one thread that keeps the stage ring full. It waits for a stage to be
// freed, announces the bytes it will bring, and issues TMA copies that complete on the
// stage's FullBarrier. With a cluster, each CTA fetches 1/kClusterM of the shared B tile
// and multicasts it to all, so B is read from L2 once per cluster instead of once per CTA.
#pragma once

#include <cuda.h>

#include "arch/sm90/tma.cuh"
#include "kernels/sm90/params.h"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/stream_k.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

// Loads K tiles [k_begin, k_end) of one output tile into the ring.
template <class Config>
__device__ __forceinline__ void load_tile(const CUtensorMap& map_a, const CUtensorMap& map_b, bool batched,
                                          const TileCoord& tile, int k_begin, int k_end, uint32_t slice,
                                          StageRing<Config::kStages>& ring, uint8_t (*tiles_a)[Config::kStageBytesA],
                                          uint8_t (*tiles_b)[Config::kStageBytesB],
                                          StageBarriers<Config::kStages>& barriers) {
  constexpr int kSliceRows = Config::kBlockN / Config::kMulticastCtas;
  constexpr int kSliceBytes = kSliceRows * Config::kBlockK * 2;
  constexpr uint16_t kClusterMask = (1u << Config::kMulticastCtas) - 1;
  const int row_a = tile.m_tile * Config::kBlockM;
  const int row_b = tile.n_tile * Config::kBlockN + static_cast<int>(slice) * kSliceRows;
  for (int kt = k_begin; kt < k_end; ++kt) {
    // A fresh barrier counts as having completed the phase before phase 0, so the
    // first lap passes straight through.
    sm90::mbarrier_wait(&barriers.empty[ring.stage], ring.phase ^ 1);
    uint64_t* full = &barriers.full[ring.stage];
    sm90::mbarrier_arrive_expect_tx(full, Config::kStageBytesA + Config::kStageBytesB);
    const int k = kt * Config::kBlockK;
    uint8_t* slice_b = tiles_b[ring.stage] + slice * kSliceBytes;
    if (batched) {
      sm90::tma_load_3d(tiles_a[ring.stage], &map_a, full, k, row_a, tile.batch);
      if constexpr (Config::kMulticastCtas > 1) {
        sm90::tma_load_3d_multicast(slice_b, &map_b, full, k, row_b, tile.batch, kClusterMask);
      } else {
        sm90::tma_load_3d(slice_b, &map_b, full, k, row_b, tile.batch);
      }
    } else {
      sm90::tma_load_2d(tiles_a[ring.stage], &map_a, full, k, row_a);
      if constexpr (Config::kMulticastCtas > 1) {
        sm90::tma_load_2d_multicast(slice_b, &map_b, full, k, row_b, kClusterMask);
      } else {
        sm90::tma_load_2d(slice_b, &map_b, full, k, row_b);
      }
    }
    ring.advance();
  }
}

template <class Config>
__device__ void run_producer(const Sm90Params& params, uint32_t cta_rank, int cluster, int clusters,
                             uint8_t (*tiles_a)[Config::kStageBytesA], uint8_t (*tiles_b)[Config::kStageBytesB],
                             StageBarriers<Config::kStages>& barriers) {
  const uint32_t slice = Config::kMulticastCtas > 1 ? cta_rank : 0;
  StageRing<Config::kStages> ring;
  if constexpr (Config::kStreamK) {
    StreamKCursor cursor(params.stream_k, cluster);
    WorkUnit unit;
    while (cursor.next(&unit)) {
      load_tile<Config>(params.map_a, params.map_b, params.batched, params.scheduler.tile(unit.linear, 0),
                        unit.k_begin, unit.k_end, slice, ring, tiles_a, tiles_b, barriers);
    }
  } else {
    for (int linear = cluster; linear < params.scheduler.total_cluster_tiles(); linear += clusters) {
      load_tile<Config>(params.map_a, params.map_b, params.batched, params.scheduler.tile(linear, cta_rank), 0,
                        params.k_tiles, slice, ring, tiles_a, tiles_b, barriers);
    }
  }
}

}  // namespace anvil::detail
