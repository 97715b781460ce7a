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

// Where a thread's outputs start in the tile: the groups of four features it finishes are
// q = begin, begin + kThreads, ... < end (group q: token q / groups_per_token, features
// 4 (q % groups_per_token) ..). The thread stride (a multiple of 32) is a multiple of a
// token's 32 (or 16) groups, so a thread's features - and their bias - stay the same while
// its tokens advance by kThreads / groups_per_token.
struct ReduceShare {
  int begin, end;
  int feature;  // first of the thread's four weight rows in the tile
  int64_t col;  // first of its four output columns
};

// The common case, run when D is row-major and four-aligned and nothing but alpha, a
// column bias and the activation stands between the sum and D (no C, no per-row bias),
// with all four columns inside D: sum, activate, one vector store, a pointer bump. The
// activation and the output type are template arguments because this loop is the decode
// kernel's whole tail: with the activation chosen per output at run time (an indexed jump
// over every activation's code, four per group) it cost 1.7 of the 2.8 us that finishing
// took at 64 tokens (H200, 2026-11-30, docs/worklog.md session 13).
template <int kTokenTile, int kThreads, Activation kAct, class Out>
__device__ __forceinline__ void reduce_rows_as(const EpilogueParams& p, const float* partial, DecodeTileOrigin origin,
                                               ReduceShare share, const ColumnBias& bias, int splits, int parts,
                                               int part_floats) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  constexpr int kGroupsPerToken = kSwiGLU ? 16 : 32;
  constexpr int kTokenStep = kThreads / kGroupsPerToken;
  int token = share.begin / kGroupsPerToken;
  const int tokens = static_cast<int>(p.m - origin.token0 < kTokenTile ? p.m - origin.token0 : kTokenTile);
  Out* out = static_cast<Out*>(const_cast<void*>(p.d.ptr)) + origin.batch * p.d.batch_stride +
             (origin.token0 + token) * p.d.row_stride + share.col;
  const int64_t out_step = int64_t{kTokenStep} * p.d.row_stride;
  const float* at = partial + token * kPartialPitch + share.feature;
  // Two groups per iteration: their DSMEM reads (one per peer) are in flight together.
#pragma unroll 2
  for (int q = share.begin; q < share.end && token < tokens;
       q += kThreads, token += kTokenStep, out += out_step, at += kTokenStep * kPartialPitch) {
    const float4 gate = sum_over_cluster(at, splits, parts, part_floats);
    float4 up = gate;
    if constexpr (kSwiGLU) up = sum_over_cluster(at + kSwiGLUBlock, splits, parts, part_floats);
    float y[4];
    activate_four<kAct>(p, bias, gate, up, y);
    store_four_as<Out, true>(out, y);
  }
}

// reduce_and_finish for one activation: the short loop above for D's dtype when it
// applies, else finish_four per group (C, per-row bias, a strided or unaligned D, the
// last columns of D).
template <int kTokenTile, int kThreads, Activation kAct>
__device__ __forceinline__ void reduce_and_finish_as(const EpilogueParams& p, const float* partial,
                                                     DecodeTileOrigin origin, ReduceShare share, int splits, int parts,
                                                     int part_floats) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  constexpr int kGroupsPerToken = kSwiGLU ? 16 : 32;
  const int64_t gemm_cols = kSwiGLU ? 2 * p.n_out : p.n_out;
  const ColumnBias bias = load_column_bias(p, kSwiGLU, origin.feature0 + share.feature, gemm_cols);
  if (p.row_major_simple && p.four_wide && share.col + 4 <= p.n_out) {
    switch (p.d.dtype) {
      case DataType::kBF16:
        return reduce_rows_as<kTokenTile, kThreads, kAct, __nv_bfloat16>(p, partial, origin, share, bias, splits, parts,
                                                                         part_floats);
      case DataType::kF16:
        return reduce_rows_as<kTokenTile, kThreads, kAct, __half>(p, partial, origin, share, bias, splits, parts,
                                                                  part_floats);
      default:
        return reduce_rows_as<kTokenTile, kThreads, kAct, float>(p, partial, origin, share, bias, splits, parts,
                                                                 part_floats);
    }
  }
#pragma unroll 1
  for (int q = share.begin; q < share.end; q += kThreads) {
    const int token = q / kGroupsPerToken;
    const int64_t row = origin.token0 + token;
    if (row >= p.m) break;
    const float* at = partial + token * kPartialPitch + share.feature;
    const float4 gate = sum_over_cluster(at, splits, parts, part_floats);
    const float4 up = kSwiGLU ? sum_over_cluster(at + kSwiGLUBlock, splits, parts, part_floats) : gate;
    finish_four<kAct>(p, origin.batch, row, share.col, bias, gate, up);
  }
}

// Run by kThreads threads of CTA `rank` after the cluster barrier that follows
// park_partial: finishes the rank-th of `splits` slices of the tile's outputs. The
// activation is chosen here, once, not per output.
template <int kTokenTile, int kThreads = 256>
__device__ void reduce_and_finish(const EpilogueParams& p, const float* partial, DecodeTileOrigin origin,
                                  int rank, int splits, int thread, int parts = 1, int part_floats = 0) {
  static_assert(kThreads % 32 == 0, "a thread's features must not change between its tokens");
  const bool swiglu = p.activation == Activation::kSwiGLU;
  // A SwiGLU tile's 128 weight rows are 64 gate rows then their 64 up rows: 64 outputs.
  const int groups_per_token = swiglu ? 16 : 32;
  const int groups = kTokenTile * groups_per_token;
  ReduceShare share;
  share.begin = rank * groups / splits + thread;
  share.end = (rank + 1) * groups / splits;
  if (share.begin >= share.end) return;
  share.feature = (share.begin % groups_per_token) * 4;
  share.col = (swiglu ? origin.feature0 / 2 : origin.feature0) + share.feature;
  if (share.col >= p.n_out) return;
  visit_activation(p.activation, [&](auto act) {
    reduce_and_finish_as<kTokenTile, kThreads, decltype(act)::value>(p, partial, origin, share, splits, parts,
                                                                     part_floats);
  });
}

}  // namespace anvil::detail
