// Tensor memory (TMEM) allocation: 128 lanes x 512 columns of 32-bit cells per SM, handed
// out in whole columns (a power of two, 32 to 512). The allocating warp receives the base
// address in shared memory; every later tcgen05 operation addresses TMEM as
// (lane << 16) | column relative to it.
// PTX ISA: "Tensor Core 5th Generation Family Instructions" > "Tensor Memory Allocation
// and Management Instructions" > "tcgen05.alloc, tcgen05.dealloc,
// tcgen05.relinquish_alloc_permit".
#pragma once

#include <cstdint>

#include "arch/sm90/mbarrier.cuh"

namespace anvil::sm100 {

// One whole warp executes these (.sync.aligned). kCtaGroup 2: one warp in each CTA of
// the pair issues the same allocation, and both CTAs get the same columns (the pair's
// MMA writes the same TMEM address in both).
template <int kCtaGroup>
__device__ __forceinline__ void tmem_alloc(uint32_t* dst_smem, uint32_t columns) {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2);
  if constexpr (kCtaGroup == 1) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n" ::"r"(
                     sm90::smem_addr(dst_smem)),
                 "r"(columns)
                 : "memory");
  } else {
    asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;\n" ::"r"(
                     sm90::smem_addr(dst_smem)),
                 "r"(columns)
                 : "memory");
  }
}

template <int kCtaGroup>
__device__ __forceinline__ void tmem_dealloc(uint32_t tmem_addr, uint32_t columns) {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2);
  if constexpr (kCtaGroup == 1) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n" ::"r"(tmem_addr), "r"(columns) : "memory");
  } else {
    asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;\n" ::"r"(tmem_addr), "r"(columns) : "memory");
  }
}

// Gives up this CTA's right to allocate again, so that a CTA of the next kernel waiting
// for TMEM on this SM is not blocked by one that will not allocate any more.
template <int kCtaGroup>
__device__ __forceinline__ void tmem_relinquish_alloc_permit() {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2);
  if constexpr (kCtaGroup == 1) {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
  } else {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;\n" ::: "memory");
  }
}

}  // namespace anvil::sm100
