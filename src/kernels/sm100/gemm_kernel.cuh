// The Blackwell GEMM (sm_100a), composed like the Hopper one (kernels/sm90/gemm_kernel.cuh)
// from its parts; only the MMA, the accumulator and the scheduling query are its own:
//   warp 0      - one thread keeps the stage ring full: the Hopper producer's load_tile
//                 and ring (kernels/sm90/producer.cuh, pipeline.cuh), with the CTA pair's
//                 stage loads as its hook (CtaPairStageLoads): each CTA loads its half of
//                 A's rows and its half of B's columns, and both halves count on the even
//                 CTA's full barrier;
//   warp 1      - [MMA] owns TMEM (allocates 512 columns: two 256-column fp32
//                 accumulators) and, in the even CTA, one thread issues tcgen05.mma for the
//                 whole pair, freeing each stage with tcgen05.commit (multicast to both
//                 CTAs) and announcing each finished accumulator the same way;
//   warps 2-5   - the epilogue: [accumulator] each warp reads its 32-lane quarter of the
//                 accumulator with tcgen05.ld, 16 rows at a time in the wgmma fragment
//                 layout, and hands them to the Hopper kernel's staged epilogue
//                 (kernels/sm90/epilogue_store.cuh: the same chunks, the same fused
//                 functors, the same stores); then gives the buffer back to the MMA
//                 thread, which by then is already filling the other one;
//   scheduling  - the shared tile scheduler and its L2 raster bands (tile_scheduler.cuh);
//                 [scheduling query] the next tile comes from cluster launch control
//                 (clc.cuh) or the static persistent stride (TileStream below).
// scripts/diff_kernels.sh shows what this file shares with the Hopper kernel and what it
// does not.
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
#include "kernels/sm90/epilogue_store.cuh"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/producer.cuh"
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
  // Each epilogue warp's staging chunk (kernels/sm90/epilogue_store.cuh).
  alignas(16) uint8_t epilogue[Config::kEpilogueWarps][Config::kEpilogueChunkBytes];
  // full: TMA -> MMA (the even CTA's counts for the pair); empty: MMA -> TMA, in each CTA.
  StageBarriers<Config::kStages> barriers;
  uint64_t accumulator_full[Config::kAccumulatorBuffers];   // MMA -> epilogue, in each CTA
  uint64_t accumulator_empty[Config::kAccumulatorBuffers];  // epilogue -> MMA (even CTA's)
  uint64_t clc_full[Config::kClcStages];   // response arrived, in each CTA
  uint64_t clc_empty[Config::kClcStages];  // every consumer read it (even CTA's)
  sm100::ClcResponse clc[Config::kClcStages];
  uint32_t tmem_base;
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

// The producer's hook for the CTA pair (load_tile, kernels/sm90/producer.cuh): each CTA's
// stage holds only its own half of A's rows and of B's columns, loaded with the
// .cta_group::2 TMA form so that both halves count on the even CTA's full barrier, which
// the even CTA's producer alone arms with the pair's bytes. One CTA: plain loads.
// Unswizzled tiles (ladder configurations) arrive as kBlockK / 8 boxes of 8 elements (16
// bytes) per row, box j at j x rows x 16 bytes: the no-swizzle layout's core matrices.
template <class Config>
struct CtaPairStageLoads {
  static constexpr uint32_t kExpectedBytes = Config::kStageTxBytes;
  __device__ static constexpr bool announces(uint32_t cta_rank) { return cta_rank == 0; }
  static constexpr uint32_t kSliceBytesA = 0, kSliceBytesB = 0;
  __device__ static __forceinline__ void wait_empty(uint64_t* bar, uint32_t parity) {
    wait_barrier(bar, parity, WaitSite::kStageEmpty);
  }
  __device__ static __forceinline__ void load_box(uint8_t* dst, const CUtensorMap& map, uint64_t* full, int k,
                                                  int row, bool batched, int batch) {
    if constexpr (Config::kCtaGroup == 2) {
      const uint32_t bar = sm100::peer_smem_addr(full, 0);
      if (batched) {
        sm100::tma_load_3d_pair(dst, &map, bar, k, row, batch);
      } else {
        sm100::tma_load_2d_pair(dst, &map, bar, k, row);
      }
    } else {
      if (batched) {
        sm90::tma_load_3d(dst, &map, full, k, row, batch);
      } else {
        sm90::tma_load_2d(dst, &map, full, k, row);
      }
    }
  }
  // kSliceRows: this CTA's rows of the operand tile (its half for the pair).
  template <int kSlices, int kSliceRows>
  __device__ static __forceinline__ void load(uint8_t* dst, const CUtensorMap& map, uint64_t* full, int k, int row,
                                              bool batched, int batch) {
    if constexpr (Config::kSwizzle128B) {
      load_box(dst, map, full, k, row, batched, batch);
    } else {
#pragma unroll
      for (int j = 0; j < Config::kBlockK / 8; ++j) {
        load_box(dst + j * kSliceRows * 16, map, full, k + 8 * j, row, batched, batch);
      }
    }
  }
};

template <class Config>
__device__ __forceinline__ void run_sm100_producer(const Sm100Params& params, Sm100Shared<Config>& shared,
                                                   TileStream<Config> stream, uint32_t cta_rank) {
  StageRing<Config::kStages> ring;
  for (;;) {
    const int t = stream.turn;
    const int linear = stream.next(shared, true);
    if (linear < 0) break;
    if constexpr (Config::kClc) {
      if (cta_rank == 0) request_next_tile<Config>(shared, t);
    }
    load_tile<Config, CtaPairStageLoads<Config>>(params.map_a, params.map_b, params.batched,
                                                 params.scheduler.tile(linear, 0), 0, params.k_tiles, cta_rank, ring,
                                                 shared.a, shared.b, shared.barriers);
  }
  // The tail: wait until the MMA thread has released every stage, so that no
  // tcgen05.commit arrival is still on its way to this CTA's barriers when it exits.
  for (int s = 0; s < Config::kStages; ++s) {
    wait_barrier(&shared.barriers.empty[ring.stage], ring.phase ^ 1u, WaitSite::kStageEmptyTail);
    ring.advance();
  }
}

// The shared-memory descriptor of K slice s (16 elements) of a stage's operand tile with
// kRows rows in this CTA.
template <class Config, int kRows>
__device__ __forceinline__ uint64_t operand_desc(const uint8_t* tile, int s) {
  if constexpr (Config::kSwizzle128B) {
    return sm100::advance_kmajor_sw128_desc(sm100::make_kmajor_sw128_desc(sm90::smem_addr(tile)), s);
  } else {
    return sm100::make_kmajor_interleaved_desc(sm90::smem_addr(tile), kRows, s);
  }
}

// The even CTA's MMA thread: one tcgen05.mma per K = 16 slice; the pair's instruction
// reads A and B from both CTAs' shared memory at the same offsets and writes both TMEMs.
template <class Config, sm100::MmaInput kInput>
__device__ __forceinline__ void run_sm100_mma(const Sm100Params& params, Sm100Shared<Config>& shared,
                                              TileStream<Config> stream, uint32_t tmem_base) {
  constexpr uint32_t kIdesc = sm100::make_idesc_f16(kInput, kInput, sm100::MmaAccum::kF32, Config::kBlockM,
                                                    Config::kBlockN);
  static_assert(sm100::valid_f16_shape(Config::kCtaGroup, Config::kBlockM, Config::kBlockN));
  constexpr uint16_t kPairMask = 0x3;
  StageRing<Config::kStages> ring;
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
      wait_barrier(&shared.barriers.full[ring.stage], ring.phase, WaitSite::kStageFull);
      sm100::tcgen05_fence_after_thread_sync();
#pragma unroll
      for (int s = 0; s < Config::kBlockK / sm100::kMmaK; ++s) {
        sm100::mma_f16<Config::kCtaGroup>(tmem_d, operand_desc<Config, Config::kRowsPerCta>(shared.a[ring.stage], s),
                                          operand_desc<Config, Config::kBRowsPerCta>(shared.b[ring.stage], s), kIdesc,
                                          kt > 0 || s > 0);
      }
      // The stage is free once these MMAs have read it.
      if constexpr (Config::kCtaGroup == 2) {
        sm100::tcgen05_commit_multicast_pair(&shared.barriers.empty[ring.stage], kPairMask);
      } else {
        sm100::tcgen05_commit(&shared.barriers.empty[ring.stage]);
      }
      ring.advance();
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

// The epilogue warps. Warp w reads TMEM lanes 32 (w % 4) .. + 32, its quarter of the CTA's
// 128 accumulator rows, 16 rows at a time: a 16x256b load hands them out in the m64 wgmma
// fragment's layout, so the Hopper kernel's staged epilogue finishes them unchanged
// (store_rows_staged: parked in 16 x 32 chunks in this warp's shared memory, then fused
// and stored four neighbouring columns per thread, a warp step covering whole row
// segments). The buffer goes back to the MMA thread as soon as the last TMEM read has
// completed, before the last rows are stored.
template <class Config, Activation kAct>
__device__ __forceinline__ void run_sm100_epilogue(const Sm100Params& params, Sm100Shared<Config>& shared,
                                                   TileStream<Config> stream, uint32_t tmem_base,
                                                   uint32_t cta_rank, int warp, int lane) {
  static_assert(Config::kEpilogueChunkBytes == kStageChunkBytes, "the staged epilogue's chunk");
  const EpilogueParams& p = params.epilogue;
  const int quarter = warp % 4;  // the TMEM lanes this warp may access
  const uint32_t stage = sm90::smem_addr(shared.epilogue[warp - Config::kFirstEpilogueWarp]);
  for (;;) {
    const int t = stream.turn;
    const int linear = stream.next(shared, lane == 0);
    if (linear < 0) break;
    const TileCoord tile = params.scheduler.tile(linear, 0);
    const int buffer = t % Config::kAccumulatorBuffers;
    wait_barrier(&shared.accumulator_full[buffer], static_cast<uint32_t>(t / Config::kAccumulatorBuffers) & 1u,
                 WaitSite::kAccumulatorFull);
    sm100::tcgen05_fence_after_thread_sync();

    const int64_t gemm_tile_col = int64_t{tile.n_tile} * Config::kBlockN;
    const int64_t quarter_row0 =
        int64_t{tile.m_tile} * Config::kBlockM + int64_t{cta_rank} * Config::kRowsPerCta + quarter * 32;
#pragma unroll 1
    for (int half = 0; half < 2; ++half) {
      float acc[Config::kBlockN / 2];
      const uint32_t taddr = sm100::tmem_address(tmem_base, static_cast<uint32_t>(quarter * 32 + half * 16),
                                                 static_cast<uint32_t>(buffer * Config::kAccumulatorColumns));
      // tcgen05.ld is warp-wide (.sync.aligned): every lane loads, valid row or not.
      sm100::tmem_load_16x256b_x8<0>(taddr, acc);
      sm100::tmem_load_16x256b_x8<32>(taddr + 64, acc);
      sm100::tmem_load_16x256b_x8<64>(taddr + 128, acc);
      sm100::tmem_load_16x256b_x8<96>(taddr + 192, acc);
      sm100::tmem_wait_load();
      if (half == 1) {
        // Hand the buffer back: this warp's TMEM reads are complete before the MMA
        // thread, on the other side of the barrier, overwrites it.
        sm100::tcgen05_fence_before_thread_sync();
        __syncwarp();
        if (lane == 0) sm100::mbarrier_arrive_remote(sm100::peer_smem_addr(&shared.accumulator_empty[buffer], 0));
      }
      const int64_t row0 = quarter_row0 + half * 16;
      if (row0 < p.m && gemm_tile_col < params.gemm_columns) {
        store_rows_staged<Config::kBlockN, kAct>(p, stage, acc, tile.batch, row0, gemm_tile_col,
                                                 params.gemm_columns, lane);
      }
    }
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
    // full: the even CTA's producer's expect_tx; empty: one tcgen05.commit.
    shared.barriers.init(1);
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
      run_sm100_epilogue<Config, Activation::kIdentity>(params, shared, stream, tmem_base, cta_rank, warp, lane);
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
