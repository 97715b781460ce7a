// The Blackwell GEMM (sm_100a), composed like the Hopper one (kernels/sm90/gemm_kernel.cuh)
// from the shared tile scheduler (tile order and L2 raster bands), the common epilogue
// functors and the same host layers; what is new is the MMA and the accumulator:
//   warp 0      - one thread walks the tile sequence issuing TMA loads into the stage
//                 ring; in a CTA pair each CTA loads its half of A's rows and its half of
//                 B's columns, and both halves count on the even CTA's full barrier;
//   warp 1      - owns TMEM (allocates 512 columns: two 256-column fp32 accumulators) and,
//                 in the even CTA, one thread issues tcgen05.mma for the whole pair,
//                 freeing each stage with tcgen05.commit (multicast to both CTAs) and
//                 announcing each finished accumulator the same way;
//   warps 2-5   - the epilogue: each warp reads its 32-lane quarter of the accumulator
//                 with tcgen05.ld (one output row per thread), applies the fused epilogue
//                 and stores; then hands the buffer back to the MMA thread, which by then
//                 is already filling the other one;
//   scheduling  - cluster launch control (clc.cuh) or the static persistent stride, the
//                 same tile sequence for every role (TileStream below).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <cstdio>

#include "arch/sm100/clc.cuh"
#include "arch/sm100/descriptors.h"
#include "arch/sm100/tcgen05_alloc.cuh"
#include "arch/sm100/tcgen05_commit.cuh"
#include "arch/sm100/tcgen05_fence.cuh"
#include "arch/sm100/tcgen05_ld_st.cuh"
#include "arch/sm100/tcgen05_mma.cuh"
#include "arch/sm100/tma_pair.cuh"
#include "arch/sm90/cluster.cuh"
#include "arch/sm90/mbarrier.cuh"
#include "arch/sm90/tma.cuh"
#include "kernels/common/epilogue.cuh"
#include "kernels/sm100/config.h"
#include "kernels/sm100/params.h"
#include "kernels/sm90/tile_scheduler.cuh"

namespace anvil::detail {

// Where a role waits; named in the hang check's report.
enum class WaitSite : int {
  kStageEmpty,            // producer: a stage's previous contents consumed by the MMA
  kStageEmptyTail,        // producer, at its end: every stage released
  kStageFull,             // MMA: a stage's TMA loads (both CTAs') landed
  kAccumulatorEmpty,      // MMA: the epilogue drained a TMEM buffer
  kAccumulatorEmptyTail,  // MMA, at its end: every TMEM buffer drained
  kAccumulatorFull,       // epilogue: a tile's MMAs finished
  kClcFull,               // any role: a CLC response arrived
  kClcEmpty,              // producer: every role read the previous response in the slot
};

// An mbarrier wait. Built with ANVIL_SM100_HANG_CHECK (cmake -DANVIL_SM100_HANG_CHECK=ON)
// a wait that lasts about 2^32 cycles (seconds) prints the site, CTA and thread and traps,
// so that a wrong phase or count on a first run fails with its place named instead of
// hanging.
__device__ __forceinline__ void wait_barrier(uint64_t* bar, uint32_t parity, WaitSite site) {
#if defined(ANVIL_SM100_HANG_CHECK)
  const long long start = clock64();
  while (!sm90::mbarrier_try_wait(bar, parity)) {
    if (clock64() - start > (1ll << 32)) {
      printf("sm100 hang check: wait site %d (parity %u) in CTA %d thread %d\n", static_cast<int>(site), parity,
             static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x));
      __trap();
    }
  }
#else
  (void)site;
  sm90::mbarrier_wait(bar, parity);
#endif
}

template <class Config>
struct Sm100Shared {
  alignas(1024) uint8_t a[Config::kStages][Config::kStageBytesA];
  alignas(1024) uint8_t b[Config::kStages][Config::kStageBytesB];
  uint64_t full[Config::kStages];   // TMA -> MMA (the even CTA's counts for the pair)
  uint64_t empty[Config::kStages];  // MMA -> TMA, in each CTA
  uint64_t accumulator_full[Config::kAccumulatorBuffers];   // MMA -> epilogue, in each CTA
  uint64_t accumulator_empty[Config::kAccumulatorBuffers];  // epilogue -> MMA (even CTA's)
  uint64_t clc_full[Config::kClcStages];   // response arrived, in each CTA
  uint64_t clc_empty[Config::kClcStages];  // every consumer read it (even CTA's)
  sm100::ClcResponse clc[Config::kClcStages];
  uint32_t tmem_base;
};

// Ring position: stage index and the parity of its current phase.
struct RingCursor {
  int index = 0;
  uint32_t phase = 0;
  template <int kSize>
  __device__ __forceinline__ void advance() {
    if (++index == kSize) {
      index = 0;
      phase ^= 1u;
    }
  }
};

// The tile sequence one role walks. Turn 0 is the cluster's own tile (its launch index);
// later turns come from the CLC responses the even CTA's producer requests (every role
// reads each response once, then releases it), or, without CLC, from the static stride.
// Returns the linear tile index, or -1 when the sequence has ended.
template <class Config>
struct TileStream {
  int turn = 0;
  int cluster = 0, clusters = 1, total = 0;

  __device__ __forceinline__ int next(Sm100Shared<Config>& shared, bool release_elected) {
    const int t = turn++;
    if constexpr (!Config::kClc) {
      const int linear = cluster + t * clusters;
      return linear < total ? linear : -1;
    } else {
      if (t == 0) return cluster;
      const int slot = (t - 1) % Config::kClcStages;
      const uint32_t parity = static_cast<uint32_t>((t - 1) / Config::kClcStages) & 1u;
      wait_barrier(&shared.clc_full[slot], parity, WaitSite::kClcFull);
      uint32_t first_cta = 0;
      const bool canceled = sm100::clc_query(&shared.clc[slot], &first_cta);
      if (release_elected) sm100::mbarrier_arrive_remote(sm100::peer_smem_addr(&shared.clc_empty[slot], 0));
      return canceled ? static_cast<int>(first_cta) / Config::kCtaGroup : -1;
    }
  }
};

// The even CTA's producer asks for the tile of turn `t + 1` while it works on turn t:
// the response lands in every CTA of the pair. Never called after a failed response was
// seen (the stream has ended by then).
template <class Config>
__device__ __forceinline__ void request_next_tile(Sm100Shared<Config>& shared, int t) {
  const int slot = t % Config::kClcStages;
  const uint32_t parity = (static_cast<uint32_t>(t / Config::kClcStages) & 1u) ^ 1u;
  wait_barrier(&shared.clc_empty[slot], parity, WaitSite::kClcEmpty);
  // The consumers' reads of the previous response (generic proxy) come before the async
  // proxy overwrites it.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#pragma unroll
  for (int r = 0; r < Config::kCtaGroup; ++r) {
    sm100::mbarrier_arrive_expect_tx_cluster(sm100::peer_smem_addr(&shared.clc_full[slot], r),
                                             sizeof(sm100::ClcResponse));
  }
  if constexpr (Config::kCtaGroup == 2) {
    sm100::clc_try_cancel_multicast(&shared.clc[slot], &shared.clc_full[slot]);
  } else {
    sm100::clc_try_cancel(&shared.clc[slot], &shared.clc_full[slot]);
  }
}

template <class Config>
__device__ __forceinline__ void run_sm100_producer(const Sm100Params& params, Sm100Shared<Config>& shared,
                                                   TileStream<Config> stream, uint32_t cta_rank) {
  RingCursor ring;
  const bool leader = cta_rank == 0;
  for (;;) {
    const int t = stream.turn;
    const int linear = stream.next(shared, true);
    if (linear < 0) break;
    if constexpr (Config::kClc) {
      if (leader) request_next_tile<Config>(shared, t);
    }
    const TileCoord tile = params.scheduler.tile(linear, 0);
    const int a_row = tile.m_tile * Config::kTileM + static_cast<int>(cta_rank) * Config::kRowsPerCta;
    const int b_row = tile.n_tile * Config::kTileN + static_cast<int>(cta_rank) * Config::kBRowsPerCta;
    for (int kt = 0; kt < params.k_tiles; ++kt) {
      wait_barrier(&shared.empty[ring.index], ring.phase ^ 1u, WaitSite::kStageEmpty);
      if (leader) sm90::mbarrier_arrive_expect_tx(&shared.full[ring.index], Config::kStageTxBytes);
      const int k = kt * Config::kBlockK;
      if constexpr (Config::kCtaGroup == 2) {
        const uint32_t bar = sm100::peer_smem_addr(&shared.full[ring.index], 0);
        if (params.batched) {
          sm100::tma_load_3d_pair(shared.a[ring.index], &params.map_a, bar, k, a_row, tile.batch);
          sm100::tma_load_3d_pair(shared.b[ring.index], &params.map_b, bar, k, b_row, tile.batch);
        } else {
          sm100::tma_load_2d_pair(shared.a[ring.index], &params.map_a, bar, k, a_row);
          sm100::tma_load_2d_pair(shared.b[ring.index], &params.map_b, bar, k, b_row);
        }
      } else {
        uint64_t* bar = &shared.full[ring.index];
        if (params.batched) {
          sm90::tma_load_3d(shared.a[ring.index], &params.map_a, bar, k, a_row, tile.batch);
          sm90::tma_load_3d(shared.b[ring.index], &params.map_b, bar, k, b_row, tile.batch);
        } else {
          sm90::tma_load_2d(shared.a[ring.index], &params.map_a, bar, k, a_row);
          sm90::tma_load_2d(shared.b[ring.index], &params.map_b, bar, k, b_row);
        }
      }
      ring.template advance<Config::kStages>();
    }
  }
  // The tail: wait until the MMA thread has released every stage, so that no
  // tcgen05.commit arrival is still on its way to this CTA's barriers when it exits.
  for (int s = 0; s < Config::kStages; ++s) {
    wait_barrier(&shared.empty[ring.index], ring.phase ^ 1u, WaitSite::kStageEmptyTail);
    ring.template advance<Config::kStages>();
  }
}

// The even CTA's MMA thread: one tcgen05.mma per K = 16 slice; the pair's instruction
// reads A and B from both CTAs' shared memory at the same offsets and writes both TMEMs.
template <class Config, sm100::MmaInput kInput>
__device__ __forceinline__ void run_sm100_mma(const Sm100Params& params, Sm100Shared<Config>& shared,
                                              TileStream<Config> stream, uint32_t tmem_base) {
  constexpr uint32_t kIdesc = sm100::make_idesc_f16(kInput, kInput, sm100::MmaAccum::kF32, Config::kTileM,
                                                    Config::kTileN);
  static_assert(sm100::valid_f16_shape(Config::kCtaGroup, Config::kTileM, Config::kTileN));
  constexpr uint16_t kPairMask = 0x3;
  RingCursor ring;
  for (;;) {
    const int t = stream.turn;
    if (stream.next(shared, true) < 0) break;
    const int buffer = t % Config::kAccumulatorBuffers;
    const uint32_t use_parity = static_cast<uint32_t>(t / Config::kAccumulatorBuffers) & 1u;
    // The epilogue (of both CTAs) has drained this buffer's previous tile.
    wait_barrier(&shared.accumulator_empty[buffer], use_parity ^ 1u, WaitSite::kAccumulatorEmpty);
    sm100::tcgen05_fence_after_thread_sync();
    const uint32_t tmem_d = tmem_base + static_cast<uint32_t>(buffer * Config::kAccumulatorColumns);
    for (int kt = 0; kt < params.k_tiles; ++kt) {
      wait_barrier(&shared.full[ring.index], ring.phase, WaitSite::kStageFull);
      sm100::tcgen05_fence_after_thread_sync();
      const uint64_t desc_a = sm100::make_kmajor_sw128_desc(sm90::smem_addr(shared.a[ring.index]));
      const uint64_t desc_b = sm100::make_kmajor_sw128_desc(sm90::smem_addr(shared.b[ring.index]));
#pragma unroll
      for (int s = 0; s < Config::kBlockK / sm100::kMmaK; ++s) {
        sm100::mma_f16<Config::kCtaGroup>(tmem_d, sm100::advance_kmajor_sw128_desc(desc_a, s),
                                          sm100::advance_kmajor_sw128_desc(desc_b, s), kIdesc, kt > 0 || s > 0);
      }
      // The stage is free once these MMAs have read it.
      if constexpr (Config::kCtaGroup == 2) {
        sm100::tcgen05_commit_multicast_pair(&shared.empty[ring.index], kPairMask);
      } else {
        sm100::tcgen05_commit(&shared.empty[ring.index]);
      }
      ring.template advance<Config::kStages>();
    }
    // The accumulator is complete once every MMA of the tile has finished.
    if constexpr (Config::kCtaGroup == 2) {
      sm100::tcgen05_commit_multicast_pair(&shared.accumulator_full[buffer], kPairMask);
    } else {
      sm100::tcgen05_commit(&shared.accumulator_full[buffer]);
    }
  }
  // The tail: wait until both CTAs' epilogues have released every buffer, so that no
  // remote arrival is still on its way to this CTA's barriers when it exits.
  for (int t = stream.turn - 1; t < stream.turn - 1 + Config::kAccumulatorBuffers; ++t) {
    const uint32_t use_parity = static_cast<uint32_t>(t / Config::kAccumulatorBuffers) & 1u;
    wait_barrier(&shared.accumulator_empty[t % Config::kAccumulatorBuffers], use_parity ^ 1u,
                 WaitSite::kAccumulatorEmptyTail);
  }
}

// Finishes 16 accumulators of one row (columns col..col+15 of the output, or, for
// SwiGLU, 16 gate sums with their 16 up sums) through the common epilogue.
template <Activation kAct>
__device__ __forceinline__ void finish_sixteen(const EpilogueParams& p, int64_t gemm_columns, int64_t batch,
                                               int64_t row, int64_t gemm_col, int64_t out_col,
                                               const uint32_t (&first)[16], const uint32_t (&second)[16],
                                               bool swiglu) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 a = make_float4(__uint_as_float(first[4 * q]), __uint_as_float(first[4 * q + 1]),
                                 __uint_as_float(first[4 * q + 2]), __uint_as_float(first[4 * q + 3]));
    const float4 b = make_float4(__uint_as_float(second[4 * q]), __uint_as_float(second[4 * q + 1]),
                                 __uint_as_float(second[4 * q + 2]), __uint_as_float(second[4 * q + 3]));
    if (out_col + 4 * q >= p.n_out) break;
    const ColumnBias bias = load_column_bias(p, swiglu, gemm_col + 4 * q, gemm_columns);
    finish_four<kAct>(p, batch, row, out_col + 4 * q, bias, a, b);
  }
}

// The epilogue warps: one output row per thread (its TMEM lane), the tile's columns in
// blocks of 128 - for SwiGLU exactly the fused weight's [64 gate | 64 up] blocks, whose
// halves are read side by side; otherwise simply two runs of 64 columns.
template <class Config, Activation kAct>
__device__ __forceinline__ void run_sm100_epilogue(const Sm100Params& params, Sm100Shared<Config>& shared,
                                                   TileStream<Config> stream, uint32_t tmem_base,
                                                   uint32_t cta_rank, int warp, int lane) {
  const EpilogueParams& p = params.epilogue;
  const bool swiglu = kAct == kRuntimeActivation ? p.activation == Activation::kSwiGLU : kAct == Activation::kSwiGLU;
  const int quarter = warp % 4;  // the TMEM lanes this warp may access
  for (;;) {
    const int t = stream.turn;
    const int linear = stream.next(shared, lane == 0);
    if (linear < 0) break;
    const TileCoord tile = params.scheduler.tile(linear, 0);
    const int buffer = t % Config::kAccumulatorBuffers;
    wait_barrier(&shared.accumulator_full[buffer], static_cast<uint32_t>(t / Config::kAccumulatorBuffers) & 1u,
                 WaitSite::kAccumulatorFull);
    sm100::tcgen05_fence_after_thread_sync();

    const int64_t row = static_cast<int64_t>(tile.m_tile) * Config::kTileM +
                        static_cast<int64_t>(cta_rank) * Config::kRowsPerCta + quarter * 32 + lane;
    const bool row_valid = row < p.m;
    const uint32_t taddr = sm100::tmem_address(tmem_base, static_cast<uint32_t>(quarter * 32),
                                               static_cast<uint32_t>(buffer * Config::kAccumulatorColumns));
    const int64_t n0 = static_cast<int64_t>(tile.n_tile) * Config::kTileN;
#pragma unroll 1
    for (int block = 0; block < Config::kTileN / 128; ++block) {
#pragma unroll 1
      for (int j = 0; j < 64; j += 16) {
        uint32_t first[16], second[16];
        // tcgen05.ld is warp-wide (.sync.aligned): every lane loads, valid row or not.
        sm100::tmem_load_32x32b_x16(taddr + static_cast<uint32_t>(block * 128 + j), first);
        sm100::tmem_load_32x32b_x16(taddr + static_cast<uint32_t>(block * 128 + 64 + j), second);
        sm100::tmem_wait_load();
        if (!row_valid) continue;
        const int64_t gemm_col = n0 + block * 128 + j;
        if (swiglu) {
          // Block b of the fused weight is output columns [64 b, 64 b + 64).
          const int64_t out_col = (n0 + block * 128) / 2 + j;
          finish_sixteen<kAct>(p, params.gemm_columns, tile.batch, row, gemm_col, out_col, first, second, true);
        } else {
          finish_sixteen<kAct>(p, params.gemm_columns, tile.batch, row, gemm_col, gemm_col, first, first, false);
          finish_sixteen<kAct>(p, params.gemm_columns, tile.batch, row, gemm_col + 64, gemm_col + 64, second, second,
                               false);
        }
      }
    }
    // Hand the buffer back: this warp's TMEM reads are complete before the MMA thread,
    // on the other side of the barrier, overwrites it.
    sm100::tcgen05_fence_before_thread_sync();
    __syncwarp();
    if (lane == 0) sm100::mbarrier_arrive_remote(sm100::peer_smem_addr(&shared.accumulator_empty[buffer], 0));
  }
}

template <class Config, sm100::MmaInput kInput>
__global__ void __launch_bounds__(Config::kThreads, 1) sm100_gemm_kernel(const __grid_constant__ Sm100Params params) {
  extern __shared__ uint8_t smem_raw[];
  auto& shared = *reinterpret_cast<Sm100Shared<Config>*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});

  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const uint32_t cta_rank = Config::kCtaGroup > 1 ? sm90::cluster_cta_rank() : 0;

  if (threadIdx.x == 0) {
    sm90::tma_prefetch_descriptor(&params.map_a);
    sm90::tma_prefetch_descriptor(&params.map_b);
    for (int s = 0; s < Config::kStages; ++s) {
      sm90::mbarrier_init(&shared.full[s], 1);  // the even CTA's producer's expect_tx
      sm90::mbarrier_init(&shared.empty[s], 1);  // one tcgen05.commit
    }
    for (int b = 0; b < Config::kAccumulatorBuffers; ++b) {
      sm90::mbarrier_init(&shared.accumulator_full[b], 1);
      sm90::mbarrier_init(&shared.accumulator_empty[b], Config::kEpilogueWarps * Config::kCtaGroup);
    }
    for (int s = 0; s < Config::kClcStages; ++s) {
      sm90::mbarrier_init(&shared.clc_full[s], 1);
      sm90::mbarrier_init(&shared.clc_empty[s], Config::kClcConsumers);
    }
    sm90::fence_barrier_init();
  }
  if (warp == Config::kMmaWarp) {
    // Both CTAs of a pair allocate the same columns together (cta_group::2).
    sm100::tmem_alloc<Config::kCtaGroup>(&shared.tmem_base, Config::kTmemColumns);
    sm100::tmem_relinquish_alloc_permit<Config::kCtaGroup>();
  }
  // Barriers and the TMEM address are visible to the peer (and to the tensor core)
  // before anyone uses them.
  sm100::tcgen05_fence_before_thread_sync();
  if constexpr (Config::kCtaGroup > 1) {
    sm90::cluster_sync();
  } else {
    __syncthreads();
  }
  sm100::tcgen05_fence_after_thread_sync();
  const uint32_t tmem_base = shared.tmem_base;

  TileStream<Config> stream;
  stream.cluster = static_cast<int>(blockIdx.x) / Config::kCtaGroup;
  stream.clusters = static_cast<int>(gridDim.x) / Config::kCtaGroup;
  stream.total = params.scheduler.total_cluster_tiles();

  if (warp == Config::kProducerWarp) {
    if (lane == 0) run_sm100_producer<Config>(params, shared, stream, cta_rank);
  } else if (warp == Config::kMmaWarp) {
    if (lane == 0 && cta_rank == 0) run_sm100_mma<Config, kInput>(params, shared, stream, tmem_base);
  } else {
    if constexpr (Config::kEpiloguePerActivation) {
      visit_activation(params.epilogue.activation, [&](auto act) {
        run_sm100_epilogue<Config, decltype(act)::value>(params, shared, stream, tmem_base, cta_rank, warp, lane);
      });
    } else {
      run_sm100_epilogue<Config, kRuntimeActivation>(params, shared, stream, tmem_base, cta_rank, warp, lane);
    }
  }

  // Nobody leaves, and TMEM is not freed, while a peer may still arrive on this CTA's
  // barriers or the epilogue may still read TMEM. .aligned barriers need whole warps.
  __syncwarp();
  sm100::tcgen05_fence_before_thread_sync();
  if constexpr (Config::kCtaGroup > 1) {
    sm90::cluster_sync();
  } else {
    __syncthreads();
  }
  if (warp == Config::kMmaWarp) {
    sm100::tcgen05_fence_after_thread_sync();
    sm100::tmem_dealloc<Config::kCtaGroup>(tmem_base, Config::kTmemColumns);
  }
}

}  // namespace anvil::detail
