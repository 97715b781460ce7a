// FP8 scales that multiply a whole tile's sums (ScaleMode kTensor and kRowColumn): applied
// to the accumulators in registers between the mainloop and the epilogue, so the epilogue
// (alpha, bias, activation, C, the TMA store) runs unchanged. Block scales differ along K
// and are applied inside the mainloop instead (consumer.cuh, run_block_scaled_mainloop).
#pragma once

#include <cstdint>

#include "kernels/sm90/fragment_epilogue.cuh"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/params.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

// The scaling itself, for a tile whose consumer rows start at row0 (an index into sa) and
// whose columns start at col0 (into sb): kTensor multiplies by sa[0] * sb[0], kRowColumn by
// sa[row] * sb[col]; rows >= rows and columns >= cols read no scale (those outputs are
// never stored).
template <class Config>
__device__ __forceinline__ void scale_accumulators(ScaleMode mode, const float* sa, const float* sb, int64_t rows,
                                                   int64_t cols, int64_t row0, int64_t col0,
                                                   float (&acc)[Config::kSlabs][Config::kBlockN / 2]) {
  if (mode == ScaleMode::kTensor) {
    const float f = __ldg(sa) * __ldg(sb);
#pragma unroll
    for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
      for (int i = 0; i < Config::kBlockN / 2; ++i) acc[slab][i] *= f;
    }
  } else if (mode == ScaleMode::kRowColumn) {
    const int t = threadIdx.x % 128;
    // Each thread holds two rows per slab and two neighbouring columns per 8-column group.
#pragma unroll
    for (int slab = 0; slab < Config::kSlabs; ++slab) {
      const FragmentCoord top = fragment_coord(0, t), bottom = fragment_coord(2, t);
      const int64_t r0 = row0 + slab * 64 + top.row, r1 = row0 + slab * 64 + bottom.row;
      const float sa0 = r0 < rows ? __ldg(sa + r0) : 0.0f;
      const float sa1 = r1 < rows ? __ldg(sa + r1) : 0.0f;
#pragma unroll
      for (int i = 0; i < Config::kBlockN / 2; i += 4) {
        const FragmentCoord c = fragment_coord(i, t);
        const int64_t col = col0 + c.col;
        const float sb0 = col < cols ? __ldg(sb + col) : 0.0f;
        const float sb1 = col + 1 < cols ? __ldg(sb + col + 1) : 0.0f;
        acc[slab][i] *= sa0 * sb0;
        acc[slab][i + 1] *= sa0 * sb1;
        acc[slab][i + 2] *= sa1 * sb0;
        acc[slab][i + 3] *= sa1 * sb1;
      }
    }
  }
}

template <class Config>
__device__ __forceinline__ void apply_output_scales(const Sm90Params& params, const TileCoord& tile, int consumer,
                                                    float (&acc)[Config::kSlabs][Config::kBlockN / 2]) {
  const Fp8Scales& s = params.scales;
  scale_accumulators<Config>(s.mode, s.a, s.b, s.rows, s.cols,
                             int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer),
                             int64_t{tile.n_tile} * Config::kBlockN, acc);
}

}  // namespace anvil::detail
