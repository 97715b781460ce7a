// Thread-block clusters: CTAs co-scheduled on one GPC that can reach each other's shared
// memory and barriers.
#pragma once

#include <cstdint>

namespace anvil::sm90 {

__device__ __forceinline__ uint32_t cluster_cta_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// Full cluster barrier: every thread of every CTA in the cluster arrives and waits.
// Release/acquire so that barrier initialisation and smem writes are visible to peers.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

}  // namespace anvil::sm90
