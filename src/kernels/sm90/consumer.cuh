// A consumer warpgroup's mainloop for one tile: wait for a full stage, issue its wgmma
// instructions, and free the stage it finished with. One wgmma group stays in flight
// while the next stage is awaited, so the tensor core never drains between K steps;
// a stage is released only once the group that read it has retired.
#pragma once

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

}  // namespace anvil::detail
