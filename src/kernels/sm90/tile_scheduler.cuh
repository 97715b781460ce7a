// Which output tile a CTA works on next. Tiles are numbered per cluster (a cluster of
// kClusterM CTAs covers kClusterM vertically adjacent tiles that share one B tile), then
// ordered for L2 reuse: the numbering walks down a band of `band` cluster rows before
// moving right, so the clusters running at the same time touch `band` row panels of A
// and a few column panels of B rather than one row of A against all of B.
#pragma once

#include <cstdint>

namespace anvil::detail {

struct TileCoord {
  int m_tile, n_tile, batch;
};

struct TileScheduler {
  int tiles_m, tiles_n, batches;
  int cluster_m;
  int band;  // cluster rows per raster band; 1 = plain row-major order

  __host__ __device__ int cluster_rows() const { return (tiles_m + cluster_m - 1) / cluster_m; }
  __host__ __device__ int total_cluster_tiles() const { return cluster_rows() * tiles_n * batches; }

  __device__ TileCoord tile(int linear, int cta_rank) const {
    const int per_batch = cluster_rows() * tiles_n;
    const int batch = linear / per_batch;
    int rest = linear % per_batch;
    const int band_tiles = band * tiles_n;
    const int band_index = rest / band_tiles;
    rest %= band_tiles;
    const int first_row = band_index * band;
    const int rows_here = min(band, cluster_rows() - first_row);
    const int cluster_row = first_row + rest % rows_here;
    const int n_tile = rest / rows_here;
    return {cluster_row * cluster_m + cta_rank, n_tile, batch};
  }
};

}  // namespace anvil::detail
