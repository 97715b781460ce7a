// The decode kernel's ending: the K-split partial sums of one output tile are added
// across the CTAs of a cluster through distributed shared memory, then finished by the
// fused epilogue.
//
// Every CTA first parks its fp32 partial tile in its own shared memory (the stage ring
// is idle by then), laid out token-major - [token][weight row] - because the output D is
// [token][feature] row-major: consecutive threads then read consecutive features and
// write consecutive output bytes. After a cluster barrier, CTA r finishes the r-th slice
// of the tile, reading the same slice from every peer in rank order 0, 1, 2, ... - the
// summation order never depends on which CTA finishes first, so results are bitwise
// reproducible, and no workspace, atomics or second kernel are involved.
#pragma once

#include <cstdint>

#include "arch/sm90/cluster.cuh"
#include "kernels/common/epilogue.cuh"
#include "kernels/sm90/fragment_epilogue.cuh"

namespace anvil::detail {

// Row pitch of the parked tile, in floats: 128 weight rows + 4. The pad turns the
// fragment's store pattern (8 weight rows x 4 token pairs per warp) into 32 distinct
// banks, and keeps rows 16-byte aligned for the vector reads.
inline constexpr int kPartialPitch = 128 + 4;

template <int kTokenTile>
inline constexpr int kPartialBytes = kTokenTile * kPartialPitch * 4;

// Writes a consumer warpgroup's m64 x kTokenTile accumulator (weight rows x tokens)
// transposed into the parked tile.
template <int kTokenTile>
__device__ __forceinline__ void park_partial(float* partial, const float (&acc)[kTokenTile / 2], int consumer) {
  const int t = threadIdx.x % 128;
#pragma unroll
  for (int i = 0; i < kTokenTile / 2; ++i) {
    const FragmentCoord c = fragment_coord(i, t);
    partial[c.col * kPartialPitch + consumer * 64 + c.row] = acc[i];
  }
}

// Where one output tile sits: its first token and its first GEMM column (weight row).
struct DecodeTileOrigin {
  int64_t batch, token0, feature0;
};

// Four consecutive features of one token, summed over the cluster in rank order. A CTA
// whose warpgroups split its K range further parks `parts` partial tiles `part_floats`
// apart; they are added part by part within each rank, so the order stays fixed.
__device__ __forceinline__ float4 sum_over_cluster(const float* local, int splits, int parts = 1, int part_floats = 0) {
  float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int r = 0; r < splits; ++r) {
    for (int h = 0; h < parts; ++h) {
      const float4 v = sm90::ld_shared_cluster_v4(sm90::map_shared_rank(local + h * part_floats, static_cast<uint32_t>(r)));
      if (r == 0 && h == 0) {
        sum = v;
      } else {
        sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
      }
    }
  }
  return sum;
}

// Run by kThreads threads of CTA `rank` after the cluster barrier that follows
// park_partial: finishes the rank-th of `splits` slices of the tile's outputs. The thread
// stride (a multiple of 32) is a multiple of a token's 32 (or 16) groups of four features,
// so a thread's features - and their bias - stay the same while its tokens advance.
template <int kTokenTile, int kThreads = 256>
__device__ void reduce_and_finish(const EpilogueParams& p, const float* partial, DecodeTileOrigin origin,
                                  int rank, int splits, int thread, int parts = 1, int part_floats = 0) {
  static_assert(kThreads % 32 == 0, "a thread's features must not change between its tokens");
  const bool swiglu = p.activation == Activation::kSwiGLU;
  // A SwiGLU tile's 128 weight rows are 64 gate rows then their 64 up rows: 64 outputs.
  const int groups_per_token = swiglu ? 16 : 32;
  const int groups = kTokenTile * groups_per_token;
  const int begin = rank * groups / splits + thread, end = (rank + 1) * groups / splits;
  if (begin >= end) return;
  const int feature = (begin % groups_per_token) * 4;
  const int64_t col = (swiglu ? origin.feature0 / 2 : origin.feature0) + feature;
  if (col >= p.n_out) return;
  const int64_t gemm_cols = swiglu ? 2 * p.n_out : p.n_out;
  const ColumnBias bias = load_column_bias(p, swiglu, origin.feature0 + feature, gemm_cols);
  // Two groups per iteration: their DSMEM reads (one per peer) are in flight together.
#pragma unroll 2
  for (int q = begin; q < end; q += kThreads) {
    const int token = q / groups_per_token;
    const int64_t row = origin.token0 + token;
    if (row >= p.m) break;
    const float* at = partial + token * kPartialPitch + feature;
    const float4 gate = sum_over_cluster(at, splits, parts, part_floats);
    const float4 up = swiglu ? sum_over_cluster(at + kSwiGLUBlock, splits, parts, part_floats) : gate;
    finish_four(p, origin.batch, row, col, bias, gate, up);
  }
}

}  // namespace anvil::detail
