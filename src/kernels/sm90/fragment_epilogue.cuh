// Writing a wgmma accumulator fragment through the generic epilogue, element by element.
// Simple and correct for any output layout, dtype and epilogue; the fast row-major paths
// live with the production kernel.
#pragma once

#include "kernels/common/epilogue.cuh"

namespace anvil::detail {

// The m64nN fp32 accumulator layout: warp w of the warpgroup owns rows 16w..16w+15; lane l
// holds rows l/4 and l/4 + 8 at columns 8g + 2(l%4) + {0, 1} for each 8-column group g,
// in register order (row, col), (row, col+1), (row+8, col), (row+8, col+1).
struct FragmentCoord {
  int row, col;
};
__device__ __forceinline__ FragmentCoord fragment_coord(int index, int thread_in_warpgroup) {
  const int warp = thread_in_warpgroup / 32, lane = thread_in_warpgroup % 32;
  return {warp * 16 + lane / 4 + ((index & 2) ? 8 : 0), (index / 4) * 8 + (lane % 4) * 2 + (index & 1)};
}

// Stores a 64 x kN fragment whose top-left output element is (row0, col0).
template <int kN>
__device__ __forceinline__ void store_fragment_generic(const EpilogueParams& p, int64_t batch, int64_t row0,
                                                       int64_t col0, const float (&acc)[kN / 2]) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int i = 0; i < kN / 2; ++i) {
    const FragmentCoord c = fragment_coord(i, t);
    const int64_t row = row0 + c.row, col = col0 + c.col;
    if (row < p.m && col < p.n_out) finish_element(p, batch, row, col, acc[i]);
  }
}

}  // namespace anvil::detail
