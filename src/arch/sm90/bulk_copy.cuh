// cp.async.bulk (no tensor map): the TMA unit copies a contiguous run of bytes from global
// to shared memory and counts them on an mbarrier. The plain-streaming counterpart of
// tma.cuh's box copies: no swizzle, no bounds, one address and one length.
#pragma once

#include <cstdint>

#include "arch/sm90/mbarrier.cuh"

namespace anvil::sm90 {

// `bytes` and both addresses must be multiples of 16.
__device__ __forceinline__ void bulk_copy_g2s(void* smem_dst, const void* global_src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          smem_addr(smem_dst)),
      "l"(global_src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

}  // namespace anvil::sm90
