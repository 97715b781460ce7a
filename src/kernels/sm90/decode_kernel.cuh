// The decode GEMM (few tokens, large weights), swap-AB with a cluster split of K, for
// bf16/fp16 inputs (sm90-decode, sm90-decode-r64) and e4m3 (sm90-fp8-decode):
//
//   D[tokens, features] = X[tokens, K] W[features, K]^T   is computed as   D^T = W X^T,
//
// so 128 weight rows fill wgmma's M side (two consumer warpgroups, m64 each; 64 rows and
// one warpgroup in sm90-decode-r64's configuration) and the tokens sit on its N side, as
// narrow as 8: no token padding to 64 or 128, no wasted tensor-core work. When the tiles
// cannot fill the GPU, the CTAs of a cluster each stream 1/splits of K for the same tile
// and add their partials through distributed shared memory (split_k_reduce.cuh). Parts:
//   producer  - one thread streams this CTA's K range of W and X into the stage ring;
//   consumers - the production kernel's wgmma mainloop (consumer.cuh), unchanged;
//   reduction - park the partial tile, cluster barrier, sum slices in rank order, epilogue.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <type_traits>

#include "arch/sm90/cluster.cuh"
#include "arch/sm90/ld_st_shared.cuh"
#include "arch/sm90/named_barrier.cuh"
#include "arch/sm90/setmaxnreg.cuh"
#include "arch/sm90/swizzle_alignment.cuh"
#include "arch/sm90/tma.cuh"
#include "kernels/common/epilogue_params.h"
#include "kernels/sm90/consumer.cuh"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/split_k_reduce.cuh"

namespace anvil::detail {

// Memory-bound tiles (up to 64 tokens) get ~108 KiB of stages so two CTAs share an SM:
// one streams while the other starts up or reduces. Wider tiles (96-256 tokens),
// and stages of several K boxes, take the whole SM, with setmaxnreg moving registers to
// the accumulators.
// kRows weight rows per CTA, 64 per consumer warpgroup: 128, or 64 for the unsplit
// configuration (sm90-decode-r64: twice the CTAs, so 17-64 tokens on an 8192-row weight
// fill the GPU without splitting K). kKBlocks K boxes per stage: four in sm90-decode-r64's
// 17-64-token configurations (one or two measured level there,
// docs/notes/decode-shared-tiles.md).
// kTwoPerSm_: two CTAs share an SM (a ring of ~108 KiB each); by default the memory-bound
// one-box configurations.
// kElementBytes_: 2 for bf16/fp16 (sm90-decode, sm90-decode-r64), 1 for e4m3
// (sm90-fp8-decode). A K box is one 128-byte swizzle row either way - 64 16-bit or 128
// 8-bit values - so a stage holds the same bytes, and twice the K, with 8-bit inputs; the
// consumer mainloop then takes k32 steps of 32 bytes (consumer.cuh, input_bytes).
// kBlockScales_: e4m3 with DeepSeek-V3 block scales (sm90-fp8-decode): each stage's K block
// is summed on its own and added, scaled, to the fp32 total (run_decode_block_scaled_mainloop).
// kFoldKSlices_: batch-invariant mode's split weights without a cluster split: the CTA sums
// DecodeParams::k_slices slices of K in turn and adds them in order (consumer.cuh,
// run_sliced_mainloop), the cluster's rank-order sum inside one CTA.
template <int kTokenTile_, int kRows = 128, int kKBlocks_ = 1,
          bool kTwoPerSm_ = decode_bandwidth_bound(kTokenTile_) && kKBlocks_ == 1, int kElementBytes_ = 2,
          bool kBlockScales_ = false, bool kFoldKSlices_ = false>
struct DecodeConfig {
  static constexpr int kTokenTile = kTokenTile_;
  static constexpr bool kBlockScales = kBlockScales_;
  static constexpr bool kFoldKSlices = kFoldKSlices_;
  static constexpr int kKBlocks = kKBlocks_;
  static constexpr int kElementBytes = kElementBytes_;
  static constexpr int kBoxK = 128 / kElementBytes;  // values of K in one box
  // Names the shared consumer mainloop reads (consumer.cuh): weights are its "A"
  // (M side), tokens its "B" (N side).
  static constexpr int kBlockK = kBoxK * kKBlocks;
  static constexpr int kBlockN = kTokenTile;
  static constexpr int kConsumers = kRows / 64;
  static constexpr int kSlabs = 1;
  static constexpr int kBlockM = kRows;
  static constexpr int kMulticastCtas = 1;
  static constexpr int kReleaseCtas = 1;
  static constexpr bool kPingPong = false;  // both consumer warpgroups split every tile
  static constexpr int kStageBytesA = kBlockM * kBlockK * kElementBytes;
  static constexpr int kStageBytesB = kTokenTile * kBlockK * kElementBytes;
  static constexpr bool kTwoPerSm = kTwoPerSm_;
  // 2 x (108 KiB + slack + the 1 KiB the system reserves per CTA) stays under 228 KiB.
  static constexpr int kRingBytes = kTwoPerSm ? 108 * 1024 : 192 * 1024;
  static constexpr int kStages = kRingBytes / (kStageBytesA + kStageBytesB);
  static constexpr int kConsumerThreads = 128 * kConsumers;
  static constexpr int kThreads = 128 + kConsumerThreads;
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;

  // The reduction's reads in flight (split_k_reduce.cuh): two groups of a thread, two
  // terms each (the common split is 2). Four groups at 64 tokens, one round trip less,
  // measured no faster (docs/notes/decode-reduction-tail.md).
  using ReduceShape = detail::ReduceShape<2, 2, kRows>;

  static_assert(kRows == 64 || kRows == 128, "one or two consumer warpgroups of m64");
  static_assert(kElementBytes == 1 || kElementBytes == 2, "8-bit or 16-bit inputs");
  static_assert(kTokenTile % 8 == 0 && kTokenTile <= 256, "wgmma N, and whole 8-row swizzle atoms of X");
  static_assert(kStages >= 2, "a ring needs two stages to overlap load and math");
  static_assert(!kBlockScales || (kElementBytes == 1 && kKBlocks == 1 && kRows == 128),
                "block scales: 8-bit inputs, one 128-wide K block per stage, 128 weight rows (one W scale block)");
  static_assert(!kFoldKSlices || (kElementBytes == 2 && kKBlocks == 1 && !kBlockScales && kTokenTile <= 128),
                "folded slices: 16-bit inputs cut in 64-wide k-tiles, and room for a second accumulator");
};

// Block-scaled configurations: each stage's box of X's scales for the token tile
// (params.h, kScaleSlotFloats); nothing otherwise.
template <class Config>
struct DecodeScaleSlots {
  alignas(128) float x[Config::kStages][kScaleSlotFloats<Config::kTokenTile>];
};
struct NoDecodeScaleSlots {};

template <class Config>
struct DecodeShared {
  alignas(1024) uint8_t a[Config::kStages][Config::kStageBytesA];
  alignas(1024) uint8_t b[Config::kStages][Config::kStageBytesB];
  StageBarriers<Config::kStages> barriers;
  [[no_unique_address]] std::conditional_t<Config::kBlockScales, DecodeScaleSlots<Config>, NoDecodeScaleSlots> scales;
};

template <class Config>
constexpr int decode_smem_bytes() {
  return static_cast<int>(sizeof(DecodeShared<Config>)) + sm90::kSwizzleAtomBytes;  // + alignment slack
}

struct DecodeParams {
  CUtensorMap map_w, map_x;  // W: (K, features[, batch]); X: (K, tokens[, batch])
  int k_tiles;
  int token_tiles;           // grid.z = token_tiles * batch
  bool batched;
  EpilogueParams epilogue;
  // 8-bit configurations only: the scales that multiply each finished sum.
  Fp8SumScales scales;
  // Block-scaled configurations only: X's block scales as a line behind map_x_scales
  // (tma_operands.h, encode_block_scales_a; rows = M), and W's, one per 128 weight rows
  // and K block: w_block_scales[(feature0 / 128) * k_tiles + kb].
  CUtensorMap map_x_scales;
  ScaleLine x_scale_line;
  const float* w_block_scales;
  // Folded configurations only (DecodeConfig::kFoldKSlices): the weight's K slices.
  int k_slices;
};

// This CTA's contiguous share of the k-tiles: split r of s gets [r k / s, (r + 1) k / s),
// never empty because the host keeps s <= k.
struct KRange {
  int begin, end;
};
__device__ __forceinline__ KRange split_k_range(int k_tiles, int split, int splits) {
  return {split * k_tiles / splits, (split + 1) * k_tiles / splits};
}

// Block-scaled configurations also bring each stage's X scales: one box of the token tile's
// scales for that K block, from the 16-byte boundary at or below the first (params.h).
template <class Config>
__device__ void run_split_producer(const DecodeParams& p, KRange range, int feature0, int token0, int batch,
                                   uint8_t (*tiles_w)[Config::kStageBytesA], uint8_t (*tiles_x)[Config::kStageBytesB],
                                   StageBarriers<Config::kStages>& barriers, float* x_scale_slots = nullptr) {
  constexpr uint32_t kScaleBytes = Config::kBlockScales ? (Config::kTokenTile + kScaleBoxLead) * 4 : 0;
  StageRing<Config::kStages> ring;
  for (int kt = range.begin; kt < range.end; ++kt) {
    sm90::mbarrier_wait(&barriers.empty[ring.stage], ring.phase ^ 1);
    uint64_t* full = &barriers.full[ring.stage];
    sm90::mbarrier_arrive_expect_tx(full, Config::kStageBytesA + Config::kStageBytesB + kScaleBytes);
    if constexpr (Config::kBlockScales) {
      const int64_t first = p.x_scale_line.element(kt, token0) & ~int64_t{3};
      sm90::tma_load_2d(x_scale_slots + ring.stage * kScaleSlotFloats<Config::kTokenTile>, &p.map_x_scales, full,
                        static_cast<int32_t>(first), 0);
    }
    // One box of W and of X per K block (64 16-bit or 128 8-bit values wide), box after box
    // (consumer.cuh's layout).
#pragma unroll
    for (int box = 0; box < Config::kKBlocks; ++box) {
      const int k = kt * Config::kBlockK + box * Config::kBoxK;
      uint8_t* w = tiles_w[ring.stage] + box * Config::kBlockM * 128;
      uint8_t* x = tiles_x[ring.stage] + box * Config::kTokenTile * 128;
      if (p.batched) {
        sm90::tma_load_3d(w, &p.map_w, full, k, feature0, batch);
        sm90::tma_load_3d(x, &p.map_x, full, k, token0, batch);
      } else {
        sm90::tma_load_2d(w, &p.map_w, full, k, feature0);
        sm90::tma_load_2d(x, &p.map_x, full, k, token0);
      }
    }
    ring.advance();
  }
}

// The mainloop with block scales: every stage is one 128-wide K block (kt of the problem's),
// summed by wgmma from zero into `part`; once it has retired the stage is freed and the
// block added to acc, times W's scale for the tile's 128 rows and each token column's X
// scale, which came with the stage. The wgmma groups of one warpgroup do not overlap the
// promotion: at decode sizes the weight's stream, not the tensor core, bounds the kernel.
template <class Config, sm90::Input kInput>
__device__ __forceinline__ void run_decode_block_scaled_mainloop(float (&acc)[1][Config::kBlockN / 2], int consumer,
                                                                 KRange range, const float* w_scales, int64_t token0,
                                                                 const ScaleLine& x_line,
                                                                 const float (*x_scales)[kScaleSlotFloats<Config::kTokenTile>],
                                                                 StageRing<Config::kStages>& ring,
                                                                 uint8_t (*tiles_a)[Config::kStageBytesA],
                                                                 uint8_t (*tiles_b)[Config::kStageBytesB],
                                                                 StageBarriers<Config::kStages>& barriers) {
  using Mma = sm90::WgmmaSS<Config::kBlockN, kInput>;
  constexpr int kAcc = Config::kBlockN / 2;
  float part[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[0][i] = 0.0f;
  const int t = threadIdx.x % 128;
  // This thread's token columns: (i / 4) x 8 + (lane % 4) x 2 + (i & 1) (fragment_epilogue.cuh).
  const uint32_t x0 = sm90::smem_addr(&x_scales[0][(t % 4) * 2]);
  int lead = static_cast<int>(x_line.element(range.begin, token0) & 3);
  const int lead_step = static_cast<int>(x_line.rows & 3);
  // Stage s's descriptors: stage 0's advanced by s stages (consumer.cuh, run_consumer_mainloop).
  const uint64_t desc_a0 = sm90::make_kmajor_sw128_desc(tiles_a[0] + consumer * 64 * 128);
  const uint64_t desc_b0 = sm90::make_kmajor_sw128_desc(tiles_b[0]);
  for (int kt = range.begin; kt < range.end; ++kt) {
    const float w = __ldg(w_scales + kt);
    sm90::mbarrier_wait(&barriers.full[ring.stage], ring.phase);
    sm90::wgmma_fence();
    const uint64_t desc_a = sm90::advance_desc(desc_a0, ring.stage * (Config::kStageBytesA / 16));
    const uint64_t desc_b = sm90::advance_desc(desc_b0, ring.stage * (Config::kStageBytesB / 16));
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      // A K step of 32 8-bit values is 32 bytes along each swizzled row: 2 in the field.
      Mma::template mma<0, 0>(part, sm90::advance_desc(desc_a, 2 * kk), sm90::advance_desc(desc_b, 2 * kk), kk > 0);
    }
    sm90::wgmma_commit_group();
    // X's scales of this thread's columns, read while the group runs.
    const uint32_t at = x0 + static_cast<uint32_t>((ring.stage * kScaleSlotFloats<Config::kTokenTile> + lead) * 4);
    float x[kAcc / 2];
#pragma unroll
    for (int c = 0; c < kAcc / 4; ++c) {
      x[2 * c] = sm90::ld_shared_f32(at + c * 8 * 4);
      x[2 * c + 1] = sm90::ld_shared_f32(at + (c * 8 + 1) * 4);
    }
    lead = (lead + lead_step) & 3;
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operands(part);
    release_stage<Config>(barriers, ring.stage);
    ring.advance();
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[0][i] = fmaf(part[i], w * x[(i / 4) * 2 + (i & 1)], acc[0][i]);
  }
}

// The output tile of this CTA's cluster. Recomputed where needed rather than kept: a value
// live across the mainloop costs the accumulators a register (ptxas spills it).
template <class Config>
__device__ __forceinline__ DecodeTileOrigin tile_origin(const DecodeParams& p) {
  return {blockIdx.z / p.token_tiles, int64_t{blockIdx.z % p.token_tiles} * Config::kTokenTile,
          int64_t{blockIdx.y} * Config::kBlockM};
}

// The first token row of this CTA's X boxes (moved_token_rows_begin, decode_plan.h): a
// last tile running past M moves back to end at M - TMA's zero-filled rows cost more than
// live ones; a 128-token tile with one live row ran ~2x as long as a full one. The moved
// tile recomputes rows of the tile before it, in the same K order, and finishes only its
// own (finish_decode_tile reads its partial from the shifted row). Block-scaled
// configurations keep the tile's rows: their X scale boxes follow token0.
template <class Config>
__device__ __forceinline__ int64_t x_rows_begin(const DecodeParams& p, int64_t token0) {
  if constexpr (Config::kBlockScales) {
    return token0;
  } else {
    return moved_token_rows_begin(p.epilogue.m, token0, Config::kTokenTile);
  }
}

// Named barrier over the consumer warpgroups (id 0 is __syncthreads).
template <class Config>
__device__ __forceinline__ void consumers_sync() {
  sm90::named_barrier_sync<Config::kConsumerThreads>(1);
}

// Grid: (splits, feature tiles, token tiles x batch), clusters of (splits, 1, 1).
template <class Config, sm90::Input kInput>
__global__ void __launch_bounds__(Config::kThreads, Config::kTwoPerSm ? 2 : 1)
    sm90_decode_kernel(const __grid_constant__ DecodeParams p) {
  extern __shared__ uint8_t smem_raw[];
  auto& shared = *sm90::align_to_swizzle_atom<DecodeShared<Config>>(smem_raw);
  // Once the mainloop is done the ring is idle: the partial tile is parked over it.
  static_assert(kPartialBytes<Config::kTokenTile> <= sizeof(shared.a) + sizeof(shared.b), "partial tile fits the ring");
  float* partial = reinterpret_cast<float*>(&shared.a[0][0]);

  // The cluster spans grid.x: its size is the split count, its rank this CTA's split.
  const KRange range = split_k_range(p.k_tiles, static_cast<int>(sm90::cluster_cta_rank()),
                                     static_cast<int>(sm90::cluster_size()));
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    sm90::tma_prefetch_descriptor(&p.map_w);
    sm90::tma_prefetch_descriptor(&p.map_x);
    shared.barriers.init(Config::kConsumers);
  }
  __syncthreads();

  // Each role runs both cluster barriers in its own branch: code after a merge point would
  // be compiled for the producer's reduced register budget (setmaxnreg.dec) and spill.
  if (warpgroup == 0) {
    if constexpr (!Config::kTwoPerSm) sm90::setmaxnreg_dec<Config::kProducerRegisters>();
    if (threadIdx.x == 0) {
      const DecodeTileOrigin origin = tile_origin<Config>(p);
      if constexpr (Config::kBlockScales) {
        run_split_producer<Config>(p, range, static_cast<int>(origin.feature0), static_cast<int>(origin.token0),
                                   static_cast<int>(origin.batch), shared.a, shared.b, shared.barriers,
                                   &shared.scales.x[0][0]);
      } else {
        run_split_producer<Config>(p, range, static_cast<int>(origin.feature0),
                                   static_cast<int>(x_rows_begin<Config>(p, origin.token0)),
                                   static_cast<int>(origin.batch), shared.a, shared.b, shared.barriers);
      }
    }
    __syncwarp();  // the cluster barrier is .aligned: lane 0 rejoins its warp first
    if (sm90::cluster_size() > 1) {  // without a split no peer reads the partials
      sm90::cluster_sync();  // the consumers' partials are published ...
      sm90::cluster_sync_relaxed();  // ... and read
    }
  } else {
    if constexpr (!Config::kTwoPerSm) sm90::setmaxnreg_inc<Config::kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    StageRing<Config::kStages> ring;
    float acc[Config::kSlabs][Config::kBlockN / 2];
    if constexpr (Config::kBlockScales) {
      const DecodeTileOrigin origin = tile_origin<Config>(p);
      run_decode_block_scaled_mainloop<Config, kInput>(
          acc, consumer, range, p.w_block_scales + origin.feature0 / Config::kBlockM * p.k_tiles, origin.token0,
          p.x_scale_line, shared.scales.x, ring, shared.a, shared.b, shared.barriers);
    } else if constexpr (Config::kFoldKSlices) {
      run_sliced_mainloop<Config, kInput>(acc, consumer, range.end - range.begin, p.k_slices, ring, shared.a,
                                          shared.b, shared.barriers);
    } else {
      run_consumer_mainloop<Config, kInput>(acc, consumer, range.end - range.begin, ring, shared.a, shared.b,
                                            shared.barriers);
    }
    consumers_sync<Config>();  // the other warpgroup's last wgmma may still read the ring
    park_partial<Config::kTokenTile>(partial, acc[0], consumer);
    const DecodeTileOrigin origin = tile_origin<Config>(p);
    // Token t of the tile sits at row t + (token0 - x_rows_begin) of the parked partial.
    const float* tile_rows = partial + (origin.token0 - x_rows_begin<Config>(p, origin.token0)) * kPartialPitch;
    const int rank = static_cast<int>(sm90::cluster_cta_rank()), splits = static_cast<int>(sm90::cluster_size());
    if constexpr (Config::kElementBytes == 1) {
      // FP8: the per-tensor or row/column scales multiply the cluster's total.
      finish_decode_tile<Config::kTokenTile, Config::kConsumerThreads, typename Config::ReduceShape>(
          p.epilogue, tile_rows, origin, rank, splits, threadIdx.x - 128, [] { consumers_sync<Config>(); }, 1, 0,
          p.scales);
    } else {
      finish_decode_tile<Config::kTokenTile, Config::kConsumerThreads, typename Config::ReduceShape>(
          p.epilogue, tile_rows, origin, rank, splits, threadIdx.x - 128, [] { consumers_sync<Config>(); });
    }
  }
}

}  // namespace anvil::detail
