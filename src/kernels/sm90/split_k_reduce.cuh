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
#include "arch/sm90/ld_st_shared.cuh"
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

// One term of a group's sum: the four features at `local` in the partial tile that CTA
// rank t / parts parked as part t % parts (a CTA whose warpgroups split its K range
// further parks `parts` tiles `part_floats` apart).
// Without a split (own_only) every term is this CTA's own, read from its shared memory
// directly: a DSMEM read of itself still costs an SM-to-SM round trip.
__device__ __forceinline__ float4 read_term(const float* local, int term, int parts, int part_floats, bool own_only) {
  const int rank = term / parts, part = term - rank * parts;
  if (own_only) return sm90::ld_shared_v4(sm90::smem_addr(local + part * part_floats));
  return sm90::ld_shared_cluster_v4(sm90::map_shared_rank(local + part * part_floats, static_cast<uint32_t>(rank)));
}

// Sums kGroups groups of four consecutive features over the cluster: term 0 + term 1 +
// ..., rank by rank and part by part within a rank, so the order never depends on which
// CTA finishes first. kTerms consecutive terms of every group are read before any is
// added (a term past the last is read again from the first of the step and not added). A
// read from a peer is a round trip over the SM-to-SM network, 0.2-0.4 us on the H200;
// issued one after another, as a loop over a run-time split count compiles, they cost
// every group a round trip per term (docs/notes/decode-reduction-tail.md).
template <int kGroups, int kTerms>
__device__ __forceinline__ void sum_over_cluster(const float* const (&local)[kGroups], int splits, int parts,
                                                 int part_floats, float4 (&sum)[kGroups]) {
  const int terms = splits * parts;
  const bool own_only = splits == 1;
  // Rolled: each step already has kGroups x kTerms reads in flight, and unrolled copies
  // would hold more in registers than the two-CTAs-per-SM kernels have (ptxas spilled).
#pragma unroll 1
  for (int t = 0; t < terms; t += kTerms) {
    float4 v[kGroups][kTerms];
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
#pragma unroll
      for (int j = 0; j < kTerms; ++j)
        v[g][j] = read_term(local[g], t + j < terms ? t + j : t, parts, part_floats, own_only);
    }
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      if (t == 0) {
        sum[g] = v[g][0];
      } else {
        sum[g].x += v[g][0].x, sum[g].y += v[g][0].y, sum[g].z += v[g][0].z, sum[g].w += v[g][0].w;
      }
#pragma unroll
      for (int j = 1; j < kTerms; ++j) {
        if (t + j < terms) {
          sum[g].x += v[g][j].x, sum[g].y += v[g][j].y, sum[g].z += v[g][j].z, sum[g].w += v[g][j].w;
        }
      }
    }
  }
}

// A kernel's reduction: how many reads it keeps in flight - kGroups groups of a thread at
// a time (its last ones re-reading the step's first when it has fewer), kTerms terms of
// each, sized to what its threads own and its registers hold - and how many weight rows
// (features) its tiles have: 128, or 64 for tiles that take no SwiGLU.
template <int kGroups_, int kTerms_, int kTileFeatures_ = 128>
struct ReduceShape {
  static constexpr int kGroups = kGroups_;
  static constexpr int kTerms = kTerms_;
  static constexpr int kTileFeatures = kTileFeatures_;
  // Groups of four outputs per token: a SwiGLU tile's 128 rows are 64 gate rows then
  // their 64 up rows, 64 outputs.
  static constexpr int groups_per_token(bool swiglu) { return swiglu ? kTileFeatures / 8 : kTileFeatures / 4; }
};

// A thread's share of finishing the tile: the groups of four features q = begin, begin +
// kThreads, ... < end (group q: token q / groups_per_token, features 4 (q % groups_per_token)
// ..). The thread stride is a multiple of a token's groups (32, 16 or 8), so a thread's
// features - and their bias - stay the same while its tokens advance by kThreads /
// groups_per_token.
struct ReduceShare {
  int begin, end;
  int feature;      // first of the thread's four weight rows in the tile
  int64_t col;      // first of its four output columns
  bool active;      // it has groups, inside D's columns
  ColumnBias bias;  // its columns' bias (zeros without one)
};

// What multiplies a finished sum before the epilogue (alpha, bias, activation, C) sees
// it. Sums of 16-bit inputs go as they are: UnscaledSums compiles to nothing. FP8 sums
// (sm90-fp8-decode) carry their per-tensor or row/column scales (anvil::ScaleMode), which
// multiply whole K sums: applied once, to the cluster's total, as sm90-fp8 applies them to
// its accumulators (fp8_scales.cuh: the sum times the product of the scales). A policy
// has columns(gemm_col, swiglu) -> Columns, the thread's four features' column factors,
// loaded once per thread while the cluster barrier is awaited (its features never change,
// ReduceShare), and apply(columns, row, gate, up), which scales one group of a token row.
struct UnscaledSums {
  struct Columns {};
  __device__ __forceinline__ Columns columns(int64_t, bool) const { return {}; }
  __device__ __forceinline__ void apply(const Columns&, int64_t, float4&, float4&) const {}
};

// Swap-AB: a decode tile's rows are GEMM columns (features: B's scale, scale_b[n]) and
// its columns are GEMM rows (tokens: A's scale, scale_a[m]).
struct Fp8SumScales {
  const float* a = nullptr;  // scale_a: [0] (kTensor) or one per token (kRowColumn)
  const float* b = nullptr;  // scale_b: [0] (kTensor) or one per feature (kRowColumn)
  ScaleMode mode = ScaleMode::kNone;
  int64_t cols = 0;          // GEMM columns (N): features past it read no scale

  // kTensor: sa * sb for every feature; kRowColumn: sb of each of the four features (and
  // of their SwiGLU up rows, kSwiGLUBlock further on); kNone: ones.
  struct Columns {
    float4 gate, up;
  };
  __device__ __forceinline__ Columns columns(int64_t gemm_col, bool swiglu) const {
    Columns c;
    if (mode == ScaleMode::kTensor) {
      const float f = __ldg(a) * __ldg(b);
      c.gate = make_float4(f, f, f, f);
      c.up = c.gate;
    } else if (mode == ScaleMode::kRowColumn) {
      const auto at = [&](int64_t col) { return col < cols ? __ldg(b + col) : 0.0f; };
      c.gate = make_float4(at(gemm_col), at(gemm_col + 1), at(gemm_col + 2), at(gemm_col + 3));
      c.up = c.gate;
      if (swiglu) {
        const int64_t up = gemm_col + kSwiGLUBlock;
        c.up = make_float4(at(up), at(up + 1), at(up + 2), at(up + 3));
      }
    } else {
      c.gate = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
      c.up = c.gate;
    }
    return c;
  }
  // `row` is a token inside the output (rows past M are never finished). The product of
  // the two scales first, then the sum times it: sm90-fp8's rounding.
  __device__ __forceinline__ void apply(const Columns& c, int64_t row, float4& gate, float4& up) const {
    if (mode == ScaleMode::kNone) return;
    const float sa = mode == ScaleMode::kRowColumn ? __ldg(a + row) : 1.0f;
    const auto scale = [&](float4& v, const float4& f) {
      if (mode == ScaleMode::kRowColumn) {
        v.x *= sa * f.x, v.y *= sa * f.y, v.z *= sa * f.z, v.w *= sa * f.w;
      } else {
        v.x *= f.x, v.y *= f.y, v.z *= f.z, v.w *= f.w;
      }
    };
    scale(gate, c.gate);
    scale(up, c.up);
  }
};

// Works out a thread of CTA `rank`'s share of the rank-th of `splits` slices of the tile's
// outputs, and loads its column bias. Nothing here reads the partials, so the kernels run
// it between arriving at the cluster barrier that publishes them and waiting there: its
// integer divisions, dependent parameter loads and the bias's trip to memory (~0.45 us of
// one warp's serial latency at 64 tokens) overlap the wait for the peers.
template <int kTokenTile, int kThreads, class Shape>
__device__ __forceinline__ ReduceShare plan_reduce_share(const EpilogueParams& p, DecodeTileOrigin origin, int rank,
                                                         int splits, int thread) {
  static_assert(kThreads % Shape::groups_per_token(false) == 0,
                "a thread's features must not change between its tokens");
  const bool swiglu = p.activation == Activation::kSwiGLU;
  const int groups_per_token = Shape::groups_per_token(swiglu);
  const int groups = kTokenTile * groups_per_token;
  ReduceShare share;
  share.begin = rank * groups / splits + thread;
  share.end = (rank + 1) * groups / splits;
  share.feature = (share.begin & (groups_per_token - 1)) * 4;
  share.col = (swiglu ? origin.feature0 / 2 : origin.feature0) + share.feature;
  share.active = share.begin < share.end && share.col < p.n_out;
  if (share.active) {
    share.bias = load_column_bias(p, swiglu, origin.feature0 + share.feature, swiglu ? 2 * p.n_out : p.n_out);
  }
  return share;
}

// The common case, run when D is row-major and four-aligned and nothing but alpha, a
// column bias and the activation stands between the sum and D (no C, no per-row bias),
// with all four columns inside D: sum, activate, one vector store, a pointer bump. The
// activation and the output type are template arguments because this loop is the decode
// kernel's whole tail: with the activation chosen per output at run time (an indexed jump
// over every activation's code, four per group) it cost 1.7 of the 2.8 us that finishing
// took at 64 tokens (H200). Shape::kGroups groups
// per step, summed together (sum_over_cluster); a thread's last groups past its count
// re-read the step's first and skip their stores.
template <int kTokenTile, int kThreads, class Shape, Activation kAct, class Out, class Scales>
__device__ __forceinline__ void reduce_rows_as(const EpilogueParams& p, const float* partial, DecodeTileOrigin origin,
                                               const ReduceShare& share, int splits, int parts, int part_floats,
                                               const Scales& scales, const typename Scales::Columns& columns) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  constexpr int kGroupsPerToken = Shape::groups_per_token(kSwiGLU);
  constexpr int kTokenStep = kThreads / kGroupsPerToken;
  constexpr int kPartialStep = kTokenStep * kPartialPitch;
  // SwiGLU reads a gate and an up sum per group, twice the registers: at most two groups
  // per step (four spilled at two CTAs per SM).
  constexpr int kStep = kSwiGLU && Shape::kGroups > 2 ? 2 : Shape::kGroups;
  const int first_token = share.begin / kGroupsPerToken;
  const int tokens = static_cast<int>(p.m - origin.token0 < kTokenTile ? p.m - origin.token0 : kTokenTile);
  const int by_groups = (share.end - share.begin + kThreads - 1) / kThreads;
  const int by_tokens = tokens > first_token ? (tokens - first_token + kTokenStep - 1) / kTokenStep : 0;
  const int count = by_groups < by_tokens ? by_groups : by_tokens;
  Out* out = static_cast<Out*>(const_cast<void*>(p.d.ptr)) + origin.batch * p.d.batch_stride +
             (origin.token0 + first_token) * p.d.row_stride + share.col;
  const int64_t out_step = int64_t{kTokenStep} * p.d.row_stride;
  const float* at = partial + first_token * kPartialPitch + share.feature;
#pragma unroll 1
  for (int i = 0; i < count; i += kStep, out += kStep * out_step, at += kStep * kPartialStep) {
    const float* gate_at[kStep];
#pragma unroll
    for (int j = 0; j < kStep; ++j) gate_at[j] = i + j < count ? at + j * kPartialStep : at;
    float4 gate[kStep], up[kStep];
    sum_over_cluster<kStep, Shape::kTerms>(gate_at, splits, parts, part_floats, gate);
    if constexpr (kSwiGLU) {
      const float* up_at[kStep];
#pragma unroll
      for (int j = 0; j < kStep; ++j) up_at[j] = gate_at[j] + kSwiGLUBlock;
      sum_over_cluster<kStep, Shape::kTerms>(up_at, splits, parts, part_floats, up);
    } else {
#pragma unroll
      for (int j = 0; j < kStep; ++j) up[j] = gate[j];
    }
#pragma unroll
    for (int j = 0; j < kStep; ++j) {
      if (j == 0 || i + j < count) {  // the step's first group exists: i < count
        scales.apply(columns, origin.token0 + first_token + int64_t{i + j} * kTokenStep, gate[j], up[j]);
        float y[4];
        activate_four<kAct>(p, share.bias, gate[j], up[j], y);
        store_four_as<Out, true>(out + j * out_step, y);
      }
    }
  }
}

// reduce_and_finish for one activation: the short loop above for D's dtype when it
// applies, else finish_four per group (C, per-row bias, a strided or unaligned D, the
// last columns of D).
template <int kTokenTile, int kThreads, class Shape, Activation kAct, class Scales>
__device__ __forceinline__ void reduce_and_finish_as(const EpilogueParams& p, const float* partial,
                                                     DecodeTileOrigin origin, const ReduceShare& share, int splits,
                                                     int parts, int part_floats, const Scales& scales,
                                                     const typename Scales::Columns& columns) {
  constexpr bool kSwiGLU = kAct == Activation::kSwiGLU;
  constexpr int kGroupsPerToken = Shape::groups_per_token(kSwiGLU);
  if (p.row_major_simple && p.four_wide && share.col + 4 <= p.n_out) {
    switch (p.d.dtype) {
      case DataType::kBF16:
        return reduce_rows_as<kTokenTile, kThreads, Shape, kAct, __nv_bfloat16>(p, partial, origin, share, splits,
                                                                                parts, part_floats, scales, columns);
      case DataType::kF16:
        return reduce_rows_as<kTokenTile, kThreads, Shape, kAct, __half>(p, partial, origin, share, splits, parts,
                                                                         part_floats, scales, columns);
      default:
        return reduce_rows_as<kTokenTile, kThreads, Shape, kAct, float>(p, partial, origin, share, splits, parts,
                                                                        part_floats, scales, columns);
    }
  }
#pragma unroll 1
  for (int q = share.begin; q < share.end; q += kThreads) {
    const int token = q / kGroupsPerToken;
    const int64_t row = origin.token0 + token;
    if (row >= p.m) break;
    const float* at = partial + token * kPartialPitch + share.feature;
    float4 gate[1];
    const float* const gate_at[1] = {at};
    sum_over_cluster<1, Shape::kTerms>(gate_at, splits, parts, part_floats, gate);
    float4 up[1] = {gate[0]};
    if constexpr (kSwiGLU) {
      const float* const up_at[1] = {at + kSwiGLUBlock};
      sum_over_cluster<1, Shape::kTerms>(up_at, splits, parts, part_floats, up);
    }
    scales.apply(columns, row, gate[0], up[0]);
    finish_four<kAct>(p, origin.batch, row, share.col, share.bias, gate[0], up[0]);
  }
}

// Run by kThreads threads of CTA `rank` after the barrier that follows park_partial (the
// cluster's, or the CTA's own without a split), with their shares from plan_reduce_share:
// finishes the rank-th of `splits` slices of the tile's outputs. The activation is chosen
// here, once, not per output.
template <int kTokenTile, int kThreads, class Shape, class Scales>
__device__ void reduce_and_finish(const EpilogueParams& p, const float* partial, DecodeTileOrigin origin,
                                  const ReduceShare& share, int splits, int parts, int part_floats,
                                  const Scales& scales, const typename Scales::Columns& columns) {
  if (!share.active) return;
  visit_activation(p.activation, [&](auto act) {
    constexpr Activation kAct = decltype(act)::value;
    // SwiGLU pairs 64 gate rows with 64 up rows: 128-row tiles only (the host refuses it
    // for the others).
    if constexpr (kAct != Activation::kSwiGLU || Shape::kTileFeatures == 128) {
      reduce_and_finish_as<kTokenTile, kThreads, Shape, kAct>(p, partial, origin, share, splits, parts, part_floats,
                                                              scales, columns);
    }
  });
}

// The column factors of a thread's four features (its share's, which its tokens keep);
// none for a thread without groups, which reads no scale.
template <class Scales>
__device__ __forceinline__ typename Scales::Columns thread_scale_columns(const EpilogueParams& p,
                                                                         DecodeTileOrigin origin,
                                                                         const ReduceShare& share, const Scales& scales) {
  typename Scales::Columns columns{};
  if (share.active) columns = scales.columns(origin.feature0 + share.feature, p.activation == Activation::kSwiGLU);
  return columns;
}

// The end of every decode CTA, every decode kernel: with its partial tile parked at `partials`,
// the CTAs of a split add theirs in rank order and each finishes its share of the tile.
// Two branches, not one path with its barriers under `if (splits > 1)`: the unsplit one
// compiles for one split, its reads local and its loop bounds known. Merged, sm90-decode
// and sm90-decode-r64 ran 0.15-0.3 us slower.
// local_barrier() publishes the parked partials to the CTA's own finishing threads (the
// consumer warpgroups' named barrier, or __syncthreads when every thread finishes).
// `thread` counts the finishing threads from 0; parts and part_floats as reduce_and_finish.
// `scales` multiply the total before the epilogue (UnscaledSums, Fp8SumScales).
template <int kTokenTile, int kThreads, class Shape, class LocalBarrier, class Scales = UnscaledSums>
__device__ __forceinline__ void finish_decode_tile(const EpilogueParams& p, const float* partials,
                                                   DecodeTileOrigin origin, int rank, int splits, int thread,
                                                   LocalBarrier local_barrier, int parts = 1, int part_floats = 0,
                                                   const Scales& scales = Scales{}) {
  if (splits == 1) {
    // No peer reads this CTA's partial (sm90-decode-r64 in its one wave, or tiles that
    // fill the GPU): the local barrier publishes it. The cluster barriers' MEMBAR.ALL.GPU
    // and the DSMEM reads of its own partial made up 1.5 of the 2.0 us from the
    // mainloop's end to the exit on sm90-decode-r64 at 64 x 8192 x 8192.
    const ReduceShare share = plan_reduce_share<kTokenTile, kThreads, Shape>(p, origin, rank, 1, thread);
    const auto columns = thread_scale_columns(p, origin, share, scales);
    local_barrier();
    reduce_and_finish<kTokenTile, kThreads, Shape>(p, partials, origin, share, 1, parts, part_floats, scales, columns);
    return;
  }
  // Partials are visible cluster-wide once every CTA has arrived (release) and this one
  // has waited (acquire); the thread's share of the finishing is worked out in between ...
  sm90::cluster_arrive();
  const ReduceShare share = plan_reduce_share<kTokenTile, kThreads, Shape>(p, origin, rank, splits, thread);
  const auto columns = thread_scale_columns(p, origin, share, scales);
  sm90::cluster_wait();
  reduce_and_finish<kTokenTile, kThreads, Shape>(p, partials, origin, share, splits, parts, part_floats, scales,
                                                 columns);
  // ... and must stay alive until every peer has read them. Relaxed: each thread has used
  // every value it read (its stores are issued), and waiting for those stores to be
  // performed, which is what the release would add, protects nothing.
  sm90::cluster_sync_relaxed();
}

}  // namespace anvil::detail
