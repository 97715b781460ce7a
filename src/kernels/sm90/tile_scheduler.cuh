// Which output tile a CTA works on next. Tiles are numbered per cluster (a cluster of
// cluster_m x cluster_n CTAs covers that many adjacent tiles: vertical neighbours share one
// B tile, horizontal ones one A tile; one of the two counts is 1), then
// ordered for L2 reuse: the numbering walks down a band of `band` cluster rows before
// moving right, so the clusters running at the same time touch `band` row panels of A
// and a few column panels of B rather than one row of A against all of B.
#pragma once

#include <cuda_runtime.h>  // __host__ __device__ when a host compiler reads this (the CPU tests)

#include <cstdint>

namespace anvil::detail {

struct TileCoord {
  int m_tile, n_tile, batch;
};

struct TileScheduler {
  int tiles_m, tiles_n, batches;
  int cluster_m, cluster_n;
  int band;  // cluster rows per raster band; 1 = plain row-major order

  __host__ __device__ int cluster_rows() const { return (tiles_m + cluster_m - 1) / cluster_m; }
  __host__ __device__ int cluster_columns() const { return (tiles_n + cluster_n - 1) / cluster_n; }
  __host__ __device__ int total_cluster_tiles() const { return cluster_rows() * cluster_columns() * batches; }

  // A partial cluster at the bottom or right edge gets coordinates past the last tile: its
  // CTA still loads its slice for the peer (TMA fills the out-of-range box with zeros) and
  // stores nothing.
  __host__ __device__ TileCoord tile(int linear, int cta_rank) const {
    const int per_batch = cluster_rows() * cluster_columns();
    const int batch = linear / per_batch;
    int rest = linear % per_batch;
    const int band_tiles = band * cluster_columns();
    const int band_index = rest / band_tiles;
    rest %= band_tiles;
    const int first_row = band_index * band;
    const int rows_here = band < cluster_rows() - first_row ? band : cluster_rows() - first_row;
    const int cluster_row = first_row + rest % rows_here;
    const int cluster_column = rest / rows_here;
    return {cluster_row * cluster_m + cta_rank % cluster_m, cluster_column * cluster_n + cta_rank / cluster_m, batch};
  }
};

}  // namespace anvil::detail
