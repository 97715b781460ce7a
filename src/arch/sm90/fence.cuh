// Memory fences. Proxy fences: ordinary loads/stores (the generic proxy) and TMA / wgmma
// shared-memory accesses (the async proxy) are not ordered with each other without one.
#pragma once

namespace anvil::sm90 {

// After ordinary stores to shared memory that a TMA store (or wgmma) reads next: each
// writing thread fences, then the threads synchronise, then one thread issues the copy.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Orders this thread's earlier memory operations - and, after a barrier, those of the
// threads it synchronised with - before its later ones, for every observer on the GPU:
// the release half of a flag between CTAs (global_flag.cuh).
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }

}  // namespace anvil::sm90
