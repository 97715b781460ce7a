// The decode GEMM with its weight read through the load path ("sm90-decode-ldg"):
//
//   D^T[features, tokens] = W[features, K] X[tokens, K]^T,   weights on wgmma's M side,
//
// like sm90-decode (decode_kernel.cuh), but with no TMA and no producer warp: every thread
// copies 16-byte pieces of W and X with cp.async into the swizzled shared-memory layout
// wgmma reads. Why: TMA-fed CTAs streaming a weight reach ~3.75 TB/s on the H200 (every
// cut anvil-stream-probe and anvil-tma-issue-probe tried), while 16-byte loads from 1024
// threads per SM read 4.04-4.11 TB/s (docs/notes/tma-ring-rate.md, docs/decode.md).
//
// A CTA covers 128 weight rows - two row blocks of 64, one m64 wgmma each - or 64 in the
// unsplit configuration (sm90-decode-ldg-r64), and its cluster's share of K, which
// kSubslices warpgroups per row block split further. Each warpgroup runs its own ring of
// stages: its threads keep kStages - 1 stages of copies in flight, so the slowest of a
// stage's requests (a warpgroup waits for all of them) is hidden behind the stages after
// it. The partial tiles are parked in shared memory and summed in a fixed order (rank,
// then warpgroup) through distributed shared memory (split_k_reduce.cuh), so results are
// bitwise reproducible.
#pragma once

#include <cstdint>
#include <type_traits>

#include "arch/sm90/cluster.cuh"
#include "arch/sm90/cp_async.cuh"
#include "arch/sm90/fence.cuh"
#include "arch/sm90/named_barrier.cuh"
#include "arch/sm90/swizzle_alignment.cuh"
#include "arch/sm90/wgmma.cuh"
#include "kernels/common/epilogue_params.h"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/split_k_reduce.cuh"

namespace anvil::detail {

// kRows weight rows per CTA: 128, or 64 for sm90-decode-ldg-r64, whose twice as many tiles
// fill the GPU without a K split where the 128-row ones need one (8192 features).
template <int kTokenTile_, int kStepK_, int kSubslices_, int kRows = 128>
struct LdgDecodeConfig {
  static constexpr int kTokenTile = kTokenTile_;
  static constexpr int kBlockM = kRows;
  static constexpr int kRowBlocks = kRows / 64;   // one m64 wgmma each
  static constexpr int kSubslices = kSubslices_;  // warpgroups per row block, each a share of K
  static constexpr int kWarpgroups = kRowBlocks * kSubslices;
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr int kCtasPerSm = 1;
  static constexpr int kStepK = kStepK_;  // K per stage: kKBlocks 128-byte swizzled blocks
  static constexpr int kKBlocks = kStepK / 64;
  static constexpr int kWeightBlockBytes = 64 * 128;
  static constexpr int kTokenBlockBytes = kTokenTile * 128;
  static constexpr int kWeightStageBytes = kKBlocks * kWeightBlockBytes;
  static constexpr int kTokenStageBytes = kKBlocks * kTokenBlockBytes;
  static constexpr int kStageBytes = kWeightStageBytes + kTokenStageBytes;
  // Where the partial tiles park. A subslice's two row blocks share one tile, so with 128
  // rows a warpgroup may finish while the other still multiplies: the tiles sit beside the
  // rings. A 64-row tile has one owner, which parks over its own ring once its last wgmma
  // has retired - room beside the rings would leave the four warpgroups two stages each.
  static constexpr bool kParksOverRing = kRowBlocks == 1;
  static constexpr int kPartialsBytes = kParksOverRing ? 0 : kSubslices * kPartialBytes<kTokenTile>;
  // As many stages as fit: the whole ring but the stage being multiplied is in flight.
  static constexpr int kSmemBudget = 225 * 1024;
  static constexpr int kStages = (kSmemBudget - kPartialsBytes) / (kWarpgroups * kStageBytes);
  static constexpr int kChunksPerRow = kStepK / 8;  // 16-byte pieces
  static constexpr int kWeightPieces = 64 * kChunksPerRow / 128;  // per thread per stage
  static constexpr int kTokenPieces = kTokenTile * kChunksPerRow;  // per warpgroup per stage
  // The reduction's reads in flight per group: as many as the CTA has warpgroups - every
  // part of two ranks with 128 rows (the common split is 2), all four parts of the unsplit
  // 64-row tile.
  using ReduceShape = detail::ReduceShape<1, kWarpgroups, kRows>;

  static_assert(kRows == 64 || kRows == 128, "one or two row blocks of m64");
  static_assert(kStepK % 64 == 0 && kTokenTile % 8 == 0, "whole swizzle blocks and 8-row atoms");
  static_assert(kStages >= 3, "two stages in flight while one is multiplied");
  static_assert(!kParksOverRing || kPartialBytes<kTokenTile> <= kStages * kStageBytes,
                "a partial tile fits over its warpgroup's ring");
};

template <int kTiles, int kTileFloats>
struct PartialTiles {
  alignas(16) float tile[kTiles][kTileFloats];
};
struct NoPartialTiles {};

template <class Config>
struct LdgDecodeShared {
  struct Stage {  // one warpgroup's operands of one K step
    alignas(1024) uint8_t weight[Config::kWeightStageBytes];
    alignas(1024) uint8_t tokens[Config::kTokenStageBytes];
  };
  Stage stages[Config::kWarpgroups][Config::kStages];
  std::conditional_t<Config::kParksOverRing, NoPartialTiles,
                     PartialTiles<Config::kSubslices, kPartialBytes<Config::kTokenTile> / 4>>
      partials;
};

// Subslice s's partial tile: beside the rings, or over the ring of its one warpgroup. The
// tiles are kLdgPartFloats apart (the reduction's part stride).
template <class Config>
inline constexpr int kLdgPartFloats =
    Config::kParksOverRing ? Config::kStages * static_cast<int>(sizeof(typename LdgDecodeShared<Config>::Stage)) / 4
                           : kPartialBytes<Config::kTokenTile> / 4;
template <class Config>
__device__ __forceinline__ float* ldg_partial_tile(LdgDecodeShared<Config>& shared, int subslice) {
  if constexpr (Config::kParksOverRing) {
    return reinterpret_cast<float*>(shared.stages[subslice][0].weight);
  } else {
    return shared.partials.tile[subslice];
  }
}

template <class Config>
constexpr int ldg_decode_smem_bytes() {
  return static_cast<int>(sizeof(LdgDecodeShared<Config>)) + sm90::kSwizzleAtomBytes;  // + alignment slack
}

struct LdgDecodeParams {
  const uint16_t* w;  // [features, K] rows ld_w apart (GEMM B, column-major), batch_w apart
  const uint16_t* x;  // [tokens, K] rows ld_x apart (GEMM A, row-major), batch_x apart
  int64_t ld_w, ld_x, batch_w, batch_x;
  int64_t features, tokens;
  int k;            // < 2^30 (check_warp_specialized)
  int steps;        // K / kStepK, rounded up
  int most_steps;   // most_k_steps(splits x kSubslices, steps) (decode_plan.h)
  int token_tiles;  // grid.z = token_tiles * batch
  EpilogueParams epilogue;
};

// Where this warpgroup's operands come from: its first weight row and the tile's first
// token, with how many rows of each exist from there.
struct StepSource {
  const uint16_t* w;
  const uint16_t* x;
  int64_t ld_w, ld_x;
  int64_t rows_left, tokens_left;
  int k_end;
};

// Piece `piece` of a rows x kStepK tile: row piece / kChunksPerRow, 16-byte chunk
// piece % kChunksPerRow - consecutive threads on consecutive chunks of a row, so a warp
// reads whole 128-byte lines and each 8-lane phase of the copy fills one swizzled 128-byte
// row. Chunk c lands in K block c / 8 (block_bytes apart), where TMA's 128-byte swizzle
// puts chunk c % 8 of row r at c % 8 ^ r % 8.
template <class Config>
__device__ __forceinline__ void copy_piece(uint32_t tile, int block_bytes, int piece, const uint16_t* rows, int64_t ld,
                                           int64_t rows_left, int k, int k_end) {
  const int row = piece / Config::kChunksPerRow, chunk = piece % Config::kChunksPerRow;
  const int k_piece = k + chunk * 8;
  // Bytes that exist: none past the last row or K (a K tail that is not a multiple of 8
  // ends mid-piece); cp.async zero-fills the rest without reading it.
  const int values = row < rows_left ? (k_end - k_piece < 8 ? k_end - k_piece : 8) : 0;
  const uint32_t bytes = values > 0 ? static_cast<uint32_t>(values) * 2 : 0u;
  const uint16_t* src = bytes > 0 ? rows + row * ld + k_piece : rows;
  const int offset = (chunk / 8) * block_bytes + row * 128 + (((chunk % 8) ^ (row % 8)) * 16);
  sm90::cp_async_16(tile + static_cast<uint32_t>(offset), src, bytes);
}

template <class Config>
__device__ __forceinline__ void copy_stage(typename LdgDecodeShared<Config>::Stage& stage, const StepSource& src,
                                           int step, int thread) {
  const int k = step * Config::kStepK;
  const uint32_t weight = static_cast<uint32_t>(__cvta_generic_to_shared(stage.weight));
  const uint32_t tokens = static_cast<uint32_t>(__cvta_generic_to_shared(stage.tokens));
#pragma unroll
  for (int i = 0; i < Config::kWeightPieces; ++i) {
    copy_piece<Config>(weight, Config::kWeightBlockBytes, thread + 128 * i, src.w, src.ld_w, src.rows_left, k,
                       src.k_end);
  }
#pragma unroll
  for (int piece = thread; piece < Config::kTokenPieces; piece += 128) {
    copy_piece<Config>(tokens, Config::kTokenBlockBytes, piece, src.x, src.ld_x, src.tokens_left, k, src.k_end);
  }
}

// One warpgroup's share of K for its 64 weight rows. Every thread commits one copy group
// per stage - empty ones past the range too - so "all but the newest kStages - 2 groups
// done" always means "this step's stage has landed".
template <class Config, sm90::Input kInput>
__device__ __forceinline__ void run_ldg_mainloop(float (&acc)[Config::kTokenTile / 2], const StepSource& src,
                                                 int step_begin, int step_end,
                                                 typename LdgDecodeShared<Config>::Stage (&ring)[Config::kStages],
                                                 int warpgroup) {
  using Mma = sm90::WgmmaSS<Config::kTokenTile, kInput>;
  const int thread = threadIdx.x % 128;
#pragma unroll
  for (int i = 0; i < Config::kTokenTile / 2; ++i) acc[i] = 0.f;
  if (step_begin >= step_end) return;

  for (int s = 0; s < Config::kStages - 1; ++s) {
    if (step_begin + s < step_end) copy_stage<Config>(ring[s], src, step_begin + s, thread);
    sm90::cp_async_commit_group();
  }
  // Slot s's descriptors: slot 0's advanced by s stages (consumer.cuh, run_consumer_mainloop).
  constexpr uint32_t kStageUnits = sizeof(typename LdgDecodeShared<Config>::Stage) / 16;
  const uint64_t weight_desc0 = sm90::make_kmajor_sw128_desc(ring[0].weight);
  const uint64_t tokens_desc0 = sm90::make_kmajor_sw128_desc(ring[0].tokens);
  int slot = 0;
  for (int step = step_begin; step < step_end; ++step) {
    sm90::cp_async_wait_group<Config::kStages - 2>();
    sm90::fence_proxy_async_shared();  // the copies are generic-proxy writes; wgmma reads async
    // Every thread's copies of this stage have landed, and every warp has retired the
    // previous step's wgmma: the slot it read may be refilled.
    sm90::warpgroup_sync(warpgroup);
    const int refill = slot == 0 ? Config::kStages - 1 : slot - 1;
    if (step + Config::kStages - 1 < step_end) copy_stage<Config>(ring[refill], src, step + Config::kStages - 1, thread);
    sm90::cp_async_commit_group();

    sm90::wgmma_fence();
    const uint64_t weight_desc = sm90::advance_desc(weight_desc0, slot * kStageUnits);
    const uint64_t tokens_desc = sm90::advance_desc(tokens_desc0, slot * kStageUnits);
#pragma unroll
    for (int block = 0; block < Config::kKBlocks; ++block) {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {  // a k16 step is 32 bytes along each swizzled row
        const uint32_t weight_units = (block * Config::kWeightBlockBytes + kk * 32) / 16;
        const uint32_t tokens_units = (block * Config::kTokenBlockBytes + kk * 32) / 16;
        Mma::template mma<0, 0>(acc, sm90::advance_desc(weight_desc, weight_units),
                                sm90::advance_desc(tokens_desc, tokens_units), true);
      }
    }
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operands(acc);
    slot = slot + 1 == Config::kStages ? 0 : slot + 1;
  }
  sm90::cp_async_wait_group<0>();  // no copy may still target the ring when it is reused
}

// Grid: (splits, feature tiles, token tiles x batch), clusters of (splits, 1, 1).
template <class Config, sm90::Input kInput>
__global__ void __launch_bounds__(Config::kThreads, Config::kCtasPerSm)
    sm90_decode_ldg_kernel(const __grid_constant__ LdgDecodeParams p) {
  extern __shared__ uint8_t smem_raw[];
  auto& shared = *sm90::align_to_swizzle_atom<LdgDecodeShared<Config>>(smem_raw);

  const int warpgroup = threadIdx.x / 128;
  const int row_block = warpgroup % Config::kRowBlocks, subslice = warpgroup / Config::kRowBlocks;
  const int rank = static_cast<int>(sm90::cluster_cta_rank()), splits = static_cast<int>(sm90::cluster_size());
  const DecodeTileOrigin origin{blockIdx.z / p.token_tiles, int64_t{blockIdx.z % p.token_tiles} * Config::kTokenTile,
                                int64_t{blockIdx.y} * Config::kBlockM};
  // K in rank-major parts: CTA rank r's warpgroups take parts r * kSubslices + h
  // (k_step_range, decode_plan.h).
  const int part = rank * Config::kSubslices + subslice, parts = splits * Config::kSubslices;
  const KStepRange step_range = k_step_range(part, parts, p.steps);
  const int step_begin = step_range.begin, step_end = step_range.end;
  const int missing_steps = p.most_steps - (step_end - step_begin);  // see the park

  const int64_t row0 = origin.feature0 + row_block * 64;
  const StepSource src{p.w + origin.batch * p.batch_w + row0 * p.ld_w,
                       p.x + origin.batch * p.batch_x + origin.token0 * p.ld_x,
                       p.ld_w,
                       p.ld_x,
                       p.features - row0,
                       p.tokens - origin.token0,
                       p.k};
  float acc[Config::kTokenTile / 2];
  run_ldg_mainloop<Config, kInput>(acc, src, step_begin, step_end, shared.stages[warpgroup], warpgroup);
  // A warpgroup that parks over its own ring waits until all its warps have retired their
  // last wgmma and copies.
  if constexpr (Config::kParksOverRing) sm90::warpgroup_sync(warpgroup);
  park_partial<Config::kTokenTile>(ldg_partial_tile(shared, subslice), acc, row_block);
  // When the steps do not divide evenly, a warpgroup with a step fewer passes the barrier of
  // the step it lacks. Not for the hardware, which needs no such thing, but for racecheck: it
  // pairs a CTA barrier by how many barriers each warp has passed before it, named ones
  // included, so with unequal counts it reports the park above as racing with the reads
  // after the CTA barrier (anvil-racecheck-probe, docs/notes/racecheck-barrier-counts.md). The count
  // is worked out before the mainloop, from a bound the host computed: a division here, on
  // the CTA's last microsecond, cost 0.1 us on 1 x 8192 x 8192.
  for (int i = 0; i < missing_steps; ++i) sm90::warpgroup_sync(warpgroup);
  const float* const partials = ldg_partial_tile(shared, 0);
  constexpr int kPartFloats = kLdgPartFloats<Config>;
  // One group per thread at most (up to 16 tokens x 32 groups over 512 threads), two with
  // sm90-decode-ldg-r64's 32-token tile (32 x 16 groups over 384 threads).
  finish_decode_tile<Config::kTokenTile, Config::kThreads, typename Config::ReduceShape>(
      p.epilogue, partials, origin, rank, splits, threadIdx.x, [] { __syncthreads(); }, Config::kSubslices,
      kPartFloats);
}

}  // namespace anvil::detail
