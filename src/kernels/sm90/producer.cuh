// The producer: one thread that keeps the stage ring full. It waits for a stage to be
// freed, announces the bytes it will bring, and issues TMA copies that complete on the
// stage's FullBarrier. With a cluster, each CTA fetches 1/kClusterM of the shared B tile
// and multicasts it to all, so B is read from L2 once per cluster instead of once per CTA.
#pragma once

#include <cuda.h>

#include "arch/sm90/tma.cuh"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

template <class Config>
__device__ void run_producer(const CUtensorMap& map_a, const CUtensorMap& map_b, bool batched, int k_tiles,
                             const TileScheduler& scheduler, uint32_t cta_rank, int cluster, int clusters,
                             uint8_t (*tiles_a)[Config::kStageBytesA], uint8_t (*tiles_b)[Config::kStageBytesB],
                             StageBarriers<Config::kStages>& barriers) {
  constexpr int kSliceRows = Config::kBlockN / Config::kMulticastCtas;
  constexpr int kSliceBytes = kSliceRows * Config::kBlockK * 2;
  constexpr uint16_t kClusterMask = (1u << Config::kMulticastCtas) - 1;
  const uint32_t slice = Config::kMulticastCtas > 1 ? cta_rank : 0;
  StageRing<Config::kStages> ring;
  for (int linear = cluster; linear < scheduler.total_cluster_tiles(); linear += clusters) {
    const TileCoord tile = scheduler.tile(linear, cta_rank);
    const int row_a = tile.m_tile * Config::kBlockM;
    const int row_b = tile.n_tile * Config::kBlockN + static_cast<int>(slice) * kSliceRows;
    for (int kt = 0; kt < k_tiles; ++kt) {
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
}

}  // namespace anvil::detail
