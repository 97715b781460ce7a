// tcgen05.commit: makes an mbarrier track the completion of every asynchronous tcgen05
// operation (MMA, cp) this thread issued before it; the barrier gets one arrival when they
// are done. This is how the MMA warp frees an input stage (its shared memory has been
// read) and announces a finished accumulator to the epilogue.
// PTX ISA: "Tensor Core 5th Generation Family Instructions" > "tcgen05.commit".
#pragma once

#include <cstdint>

#include "arch/sm90/mbarrier.cuh"

namespace anvil::sm100 {

// One arrival on `bar` in this CTA when the operations complete.
__device__ __forceinline__ void tcgen05_commit(uint64_t* bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n" ::"r"(
                   sm90::smem_addr(bar))
               : "memory");
}

// The 2-CTA form: one arrival on the barrier at `bar`'s offset in each CTA of `cta_mask`
// (bit i = cluster rank i). The pair's MMA read both CTAs' shared memory and wrote both
// CTAs' TMEM, so both must hear of its completion.
__device__ __forceinline__ void tcgen05_commit_multicast_pair(uint64_t* bar, uint16_t cta_mask) {
  asm volatile(
      "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;\n" ::"r"(
          sm90::smem_addr(bar)),
      "h"(cta_mask)
      : "memory");
}

// The 1-CTA multicast form (several CTAs sharing operands through TMA multicast).
__device__ __forceinline__ void tcgen05_commit_multicast(uint64_t* bar, uint16_t cta_mask) {
  asm volatile(
      "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;\n" ::"r"(
          sm90::smem_addr(bar)),
      "h"(cta_mask)
      : "memory");
}

}  // namespace anvil::sm100
