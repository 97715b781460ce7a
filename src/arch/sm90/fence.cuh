// Proxy fences: ordinary loads/stores (the generic proxy) and TMA / wgmma shared-memory
// accesses (the async proxy) are not ordered with each other without one.
#pragma once

namespace anvil::sm90 {

// After ordinary stores to shared memory that a TMA store (or wgmma) reads next: each
// writing thread fences, then the threads synchronise, then one thread issues the copy.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace anvil::sm90
