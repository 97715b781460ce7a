// A consumer warpgroup's mainloop for one tile: wait for a full stage, issue its wgmma
// instructions, and free the stage it finished with. One wgmma group stays in flight
// while the next stage is awaited, so the tensor core never drains between K steps;
// a stage is released only once the group that read it has retired.
#pragma once

#include "arch/sm90/fence.cuh"
#include "arch/sm90/ld_st_shared.cuh"
#include "arch/sm90/mbarrier.cuh"
#include "arch/sm90/wgmma.cuh"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/pipeline.cuh"

namespace anvil::detail {

template <class Config>
__device__ __forceinline__ void release_stage(StageBarriers<Config::kStages>& barriers, int stage) {
  const int t = threadIdx.x % 128;
  if constexpr (Config::kReleaseCtas == 1) {
    if (t == 0) sm90::mbarrier_arrive(&barriers.empty[stage]);
  } else {
    // Thread r signals CTA r: the remote arrivals go out in parallel, not one after another.
    if (t < Config::kReleaseCtas) sm90::mbarrier_arrive_cluster(&barriers.empty[stage], t);
  }
}

// mainloop_done (ping-pong only, else null) is arrived on once the last stage has been
// waited for and its wgmma issued: the other warpgroup may then start its tile.
template <class Config, sm90::Input kInput>
__device__ __forceinline__ void run_consumer_mainloop(float (&acc)[Config::kSlabs][Config::kBlockN / 2], int consumer,
                                                      int k_tiles, StageRing<Config::kStages>& ring,
                                                      uint8_t (*tiles_a)[Config::kStageBytesA],
                                                      uint8_t (*tiles_b)[Config::kStageBytesB],
                                                      StageBarriers<Config::kStages>& barriers,
                                                      uint64_t* mainloop_done = nullptr) {
  using Mma = sm90::WgmmaSS<Config::kBlockN, kInput>;
  int previous_stage = -1;
  for (int kt = 0; kt < k_tiles; ++kt) {
    sm90::mbarrier_wait(&barriers.full[ring.stage], ring.phase);
    sm90::wgmma_fence();
    const uint8_t* a = tiles_a[ring.stage] + consumer_row_offset<Config>(consumer) * 128;
    const uint8_t* b = tiles_b[ring.stage];
    // A stage wider than 64 along K holds one 128-byte-swizzled box per 64 K (a box is
    // 64 bf16 wide), box after box: kBlockM (A) or kBlockN (B) rows each.
    constexpr int kBoxBytesA = Config::kBlockM * 128, kBoxBytesB = Config::kBlockN * 128;
#pragma unroll
    for (int kk = 0; kk < Config::kBlockK / 16; ++kk) {
      const int box = kk / 4, step = kk % 4;
#pragma unroll
      for (int slab = 0; slab < Config::kSlabs; ++slab) {
        // 64 rows x 128 bytes per slab; a k16 step is 32 bytes along each swizzled row.
        Mma::template mma<0, 0>(
            acc[slab], sm90::make_kmajor_sw128_desc(a + box * kBoxBytesA + slab * 64 * 128 + step * 32),
            sm90::make_kmajor_sw128_desc(b + box * kBoxBytesB + step * 32), kt > 0 || kk > 0);
      }
    }
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<1>();
    if (previous_stage >= 0) release_stage<Config>(barriers, previous_stage);
    previous_stage = ring.stage;
    ring.advance();
  }
  if (mainloop_done != nullptr && threadIdx.x % 128 == 0) sm90::mbarrier_arrive(mainloop_done);
  sm90::wgmma_wait_group<0>();
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) sm90::wgmma_fence_operands(acc[slab]);
  release_stage<Config>(barriers, previous_stage);
}

// ---- the K split (Schedule::kKSplit) ----

// The K steps of a tile that warpgroup `consumer` takes: consumer, consumer + 2, ... The
// last of them is its stage to park a partial tile in.
__host__ __device__ constexpr int last_own_k_step(int k_tiles, int consumer) {
  return k_tiles - 1 - ((k_tiles - 1 - consumer) % 2);
}

// A warpgroup's mainloop for one tile in the K split: every other stage, both slabs of
// the whole tile from each, its own previous stage freed once the group that read it has
// retired. `ring` points at the tile's first stage and is left past its last one. Its last
// stage is not freed: sum_k_split_halves parks a partial tile in it, then frees it.
// The host keeps k_tiles >= 2, so each warpgroup has at least one step.
template <class Config, sm90::Input kInput>
__device__ __forceinline__ void run_k_split_mainloop(float (&acc)[Config::kSlabs][Config::kBlockN / 2], int consumer,
                                                     int k_tiles, StageRing<Config::kStages>& ring,
                                                     uint8_t (*tiles_a)[Config::kStageBytesA],
                                                     uint8_t (*tiles_b)[Config::kStageBytesB],
                                                     StageBarriers<Config::kStages>& barriers) {
  using Mma = sm90::WgmmaSS<Config::kBlockN, kInput>;
  StageRing<Config::kStages> own = ring;
  own.skip(consumer);
  int previous_stage = -1;
  for (int kt = consumer; kt < k_tiles; kt += 2) {
    sm90::mbarrier_wait(&barriers.full[own.stage], own.phase);
    sm90::wgmma_fence();
    const uint8_t* a = tiles_a[own.stage];
    const uint8_t* b = tiles_b[own.stage];
    constexpr int kBoxBytesA = Config::kBlockM * 128, kBoxBytesB = Config::kBlockN * 128;
#pragma unroll
    for (int kk = 0; kk < Config::kBlockK / 16; ++kk) {
      const int box = kk / 4, step = kk % 4;
#pragma unroll
      for (int slab = 0; slab < Config::kSlabs; ++slab) {
        Mma::template mma<0, 0>(
            acc[slab], sm90::make_kmajor_sw128_desc(a + box * kBoxBytesA + slab * 64 * 128 + step * 32),
            sm90::make_kmajor_sw128_desc(b + box * kBoxBytesB + step * 32), kt > consumer || kk > 0);
      }
    }
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<1>();
    if (previous_stage >= 0) release_stage<Config>(barriers, previous_stage);
    previous_stage = own.stage;
    own.skip(2);
  }
  sm90::wgmma_wait_group<0>();
#pragma unroll
  for (int slab = 0; slab < Config::kSlabs; ++slab) sm90::wgmma_fence_operands(acc[slab]);
  ring.skip(k_tiles);
}

// Named barrier over both consumer warpgroups (ids 1 and 2 are each warpgroup's own).
__device__ __forceinline__ void consumers_sync_256() { asm volatile("bar.sync 3, 256;\n" ::: "memory"); }

// Adds the two warpgroups' partial tiles: each parks the partial sums of the slab the
// other one finishes (warpgroup 0 finishes rows 0-63, 1 rows 64-127) in its own last stage,
// then adds the other's; on return acc[0] holds this warpgroup's finished slab. Thread t
// of both warpgroups holds the same fragment positions, so a partial is parked and read
// in register order: float4 j / 4 of thread t at 16-byte chunk (j / 4) 128 + t of the
// stage (A's bytes, then B's), conflict-free. Both stages are freed after the reads.
// kConsumer is a template argument: registers are only indexed with constants.
template <class Config, int kConsumer>
__device__ __forceinline__ void sum_k_split_halves_as(float (&acc)[Config::kSlabs][Config::kBlockN / 2], int k_tiles,
                                                      const StageRing<Config::kStages>& tile_start,
                                                      uint8_t (*tiles_a)[Config::kStageBytesA],
                                                      uint8_t (*tiles_b)[Config::kStageBytesB],
                                                      StageBarriers<Config::kStages>& barriers) {
  constexpr int kFloats = Config::kBlockN / 2;
  constexpr int kChunksInA = Config::kStageBytesA / (16 * 128);
  const int t = threadIdx.x % 128;
  StageRing<Config::kStages> mine = tile_start, theirs = tile_start;
  mine.skip(last_own_k_step(k_tiles, kConsumer));
  theirs.skip(last_own_k_step(k_tiles, 1 - kConsumer));
  const auto chunk_addr = [&](int stage, int chunk) {
    const uint8_t* base = chunk < kChunksInA ? tiles_a[stage] + chunk * 16 * 128
                                             : tiles_b[stage] + (chunk - kChunksInA) * 16 * 128;
    return sm90::smem_addr(base) + static_cast<uint32_t>(t) * 16;
  };
  // The stage's MMAs have retired (run_k_split_mainloop waited for all groups) and its TMA
  // writes were waited for: the generic stores may overwrite it.
#pragma unroll
  for (int j = 0; j < kFloats; j += 4) {
    const float* parked = &acc[1 - kConsumer][j];
    sm90::st_shared_v4(chunk_addr(mine.stage, j / 4), parked[0], parked[1], parked[2], parked[3]);
  }
  consumers_sync_256();
#pragma unroll
  for (int j = 0; j < kFloats; j += 4) {
    const float4 other = sm90::ld_shared_v4(chunk_addr(theirs.stage, j / 4));
    acc[0][j] = acc[kConsumer][j] + other.x;
    acc[0][j + 1] = acc[kConsumer][j + 1] + other.y;
    acc[0][j + 2] = acc[kConsumer][j + 2] + other.z;
    acc[0][j + 3] = acc[kConsumer][j + 3] + other.w;
  }
  // The producer's next TMA writes into these stages (async proxy) must come after the
  // generic reads and writes above.
  sm90::fence_proxy_async_shared();
  consumers_sync_256();
  release_stage<Config>(barriers, mine.stage);
}

template <class Config>
__device__ __forceinline__ void sum_k_split_halves(float (&acc)[Config::kSlabs][Config::kBlockN / 2], int consumer,
                                                   int k_tiles, const StageRing<Config::kStages>& tile_start,
                                                   uint8_t (*tiles_a)[Config::kStageBytesA],
                                                   uint8_t (*tiles_b)[Config::kStageBytesB],
                                                   StageBarriers<Config::kStages>& barriers) {
  if (consumer == 0) {
    sum_k_split_halves_as<Config, 0>(acc, k_tiles, tile_start, tiles_a, tiles_b, barriers);
  } else {
    sum_k_split_halves_as<Config, 1>(acc, k_tiles, tile_start, tiles_a, tiles_b, barriers);
  }
}

}  // namespace anvil::detail
