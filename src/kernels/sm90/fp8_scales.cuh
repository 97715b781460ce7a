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

template <class Config>
__device__ __forceinline__ void apply_output_scales(const Sm90Params& params, const TileCoord& tile, int consumer,
                                                    float (&acc)[Config::kSlabs][Config::kBlockN / 2]) {
  const Fp8Scales& s = params.scales;
  if (s.mode == ScaleMode::kTensor) {
    const float f = __ldg(s.a) * __ldg(s.b);
#pragma unroll
    for (int slab = 0; slab < Config::kSlabs; ++slab) {
#pragma unroll
      for (int i = 0; i < Config::kBlockN / 2; ++i) acc[slab][i] *= f;
    }
  } else if (s.mode == ScaleMode::kRowColumn) {
    const int t = threadIdx.x % 128;
    const int64_t row0 = int64_t{tile.m_tile} * Config::kBlockM + consumer_row_offset<Config>(consumer);
    const int64_t col0 = int64_t{tile.n_tile} * Config::kBlockN;
    // Each thread holds two rows per slab and two neighbouring columns per 8-column group;
    // edges past M or N read no scale (those outputs are never stored).
#pragma unroll
    for (int slab = 0; slab < Config::kSlabs; ++slab) {
      const FragmentCoord top = fragment_coord(0, t), bottom = fragment_coord(2, t);
      const int64_t r0 = row0 + slab * 64 + top.row, r1 = row0 + slab * 64 + bottom.row;
      const float sa0 = r0 < s.rows ? __ldg(s.a + r0) : 0.0f;
      const float sa1 = r1 < s.rows ? __ldg(s.a + r1) : 0.0f;
#pragma unroll
      for (int i = 0; i < Config::kBlockN / 2; i += 4) {
        const FragmentCoord c = fragment_coord(i, t);
        const int64_t col = col0 + c.col;
        const float sb0 = col < s.cols ? __ldg(s.b + col) : 0.0f;
        const float sb1 = col + 1 < s.cols ? __ldg(s.b + col + 1) : 0.0f;
        acc[slab][i] *= sa0 * sb0;
        acc[slab][i + 1] *= sa0 * sb1;
        acc[slab][i + 2] *= sa1 * sb0;
        acc[slab][i + 3] *= sa1 * sb1;
      }
    }
  }
}

}  // namespace anvil::detail
