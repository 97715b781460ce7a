// The shared-memory stage ring between the TMA producer and the wgmma consumers.
//
// Each stage has a FullBarrier (the producer's expect_tx arrival plus the TMA bytes) and
// an EmptyBarrier (one arrival per consumer warpgroup of every CTA that reads the stage -
// with multicast, the peer CTA's consumers too, because the peer's producer writes here).
// Both sides walk the ring in the same order; a side's phase bit flips each time its
// stage index wraps, which is what mbarrier waits compare against.
#pragma once

#include <cstdint>

#include "arch/sm90/mbarrier.cuh"

namespace anvil::detail {

template <int kStages>
struct StageRing {
  int stage = 0;
  uint32_t phase = 0;

  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }

  // Steps over `count` stages another warpgroup reads (ping-pong schedule).
  __device__ __forceinline__ void skip(int count) {
    const int position = stage + count;
    phase ^= static_cast<uint32_t>(position / kStages) & 1u;
    stage = position % kStages;
  }
};

template <int kStages>
struct StageBarriers {
  uint64_t full[kStages];
  uint64_t empty[kStages];

  __device__ __forceinline__ void init(uint32_t empty_arrivals) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbarrier_init(&full[s], 1);
      sm90::mbarrier_init(&empty[s], empty_arrivals);
    }
    sm90::fence_barrier_init();
  }
};

}  // namespace anvil::detail
