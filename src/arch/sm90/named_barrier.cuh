// Named barriers: bar.sync / bar.arrive on one of the 16 hardware barriers of a CTA, for a
// subset of its threads (a warpgroup, the consumer warpgroups). Id 0 is __syncthreads';
// the thread count is a multiple of 32 and every participating warp uses the same one.
// The count is a template argument so that it reaches the instruction as an immediate.
#pragma once

#include <cstdint>

namespace anvil::sm90 {

// Waits until kThreads threads (this one included) have arrived at barrier `id`.
template <int kThreads>
__device__ __forceinline__ void named_barrier_sync(uint32_t id) {
  static_assert(kThreads % 32 == 0 && kThreads > 0 && kThreads <= 1024, "whole warps of one CTA");
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(kThreads) : "memory");
}

// Counts this thread towards barrier `id` without waiting: for threads that only signal.
template <int kThreads>
__device__ __forceinline__ void named_barrier_arrive(uint32_t id) {
  static_assert(kThreads % 32 == 0 && kThreads > 0 && kThreads <= 1024, "whole warps of one CTA");
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(kThreads) : "memory");
}

// The 128 threads of one warpgroup. Warpgroup w uses barrier w + 1, so that the warpgroups
// of a CTA never share one and none takes __syncthreads' id 0.
__device__ __forceinline__ void warpgroup_sync(int warpgroup) {
  named_barrier_sync<128>(static_cast<uint32_t>(warpgroup) + 1);
}

}  // namespace anvil::sm90
