// Which output tile a CTA works on next. Tiles are numbered per cluster (a cluster of
// kClusterM CTAs covers kClusterM vertically adjacent tiles that share one B tile), then
// ordered for L2 reuse: the numbering walks down a band of `band` cluster rows before
// moving right, so the clusters running at the same time touch `band` row panels of A
// and a few column panels of B rather than one row of A against all of B.
//
// A ragged bottom row of clusters (rows past M: M = 4097 leaves one row in its last
// 128-row tile, and a 2-CTA cluster's lower tile may be empty) is numbered after all the
// others of its batch. Its tiles skip the MMA of the slabs past M (consumer.cuh), so they
// are cheap, and placed last they fill the last wave instead of lengthening a full one.
#pragma once

#include <cstdint>

#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/stream_k.h"  // ANVIL_HOST_DEVICE

namespace anvil::detail {

struct TileCoord {
  int m_tile, n_tile, batch;
};

struct TileScheduler {
  int tiles_m, tiles_n, batches;
  int cluster_m;
  int band;                    // cluster rows per raster band; 1 = plain row-major order
  bool ragged_bottom = false;  // the last cluster row holds rows past M: numbered last

  ANVIL_HOST_DEVICE int cluster_rows() const { return (tiles_m + cluster_m - 1) / cluster_m; }
  ANVIL_HOST_DEVICE int total_cluster_tiles() const { return cluster_rows() * tiles_n * batches; }

  ANVIL_HOST_DEVICE TileCoord tile(int linear, int cta_rank) const {
    const int per_batch = cluster_rows() * tiles_n;
    const int batch = linear / per_batch;
    int rest = linear % per_batch;
    const int banded_rows = cluster_rows() - (ragged_bottom ? 1 : 0);
    if (rest >= banded_rows * tiles_n) return {banded_rows * cluster_m + cta_rank, rest - banded_rows * tiles_n, batch};
    const int band_tiles = band * tiles_n;
    const int band_index = rest / band_tiles;
    rest %= band_tiles;
    const int first_row = band_index * band;
    const int rows_here = band < banded_rows - first_row ? band : banded_rows - first_row;
    const int cluster_row = first_row + rest % rows_here;
    const int n_tile = rest / rows_here;
    return {cluster_row * cluster_m + cta_rank, n_tile, batch};
  }
};

// The m64 slabs of a consumer's part of `tile` that hold rows of D (0 for a cluster
// peer's tile wholly past M). The consumer multiplies only those (consumer.cuh).
template <class Config>
ANVIL_HOST_DEVICE int live_slabs(int64_t m, const TileCoord& tile, int consumer) {
  const int64_t rows = m - (int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer));
  if (rows <= 0) return 0;
  return rows >= Config::kSlabs * 64 ? Config::kSlabs : static_cast<int>((rows + 63) / 64);
}

}  // namespace anvil::detail
