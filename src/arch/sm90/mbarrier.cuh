// mbarrier: the shared-memory barrier that counts both arriving threads and bytes of
// asynchronous (TMA) transactions. Waiters wait for the phase to flip, not for a value.
#pragma once

#include <cstdint>
#if defined(ANVIL_SM90_HANG_CHECK)
#include <cstdio>
#endif

namespace anvil::sm90 {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t expected_arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(expected_arrivals)
               : "memory");
}

// Makes initialised barriers visible to the async proxy (TMA) and to the other CTAs of
// the cluster before anyone uses them.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` more transaction bytes to wait for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// Arrives on the barrier at the same shared-memory offset in CTA `cta_rank` of this
// cluster: how a consumer frees a stage that a peer CTA's producer multicasts into.
// The default semantics (release at CTA scope) on purpose: `.release.cluster` compiles to
// MEMBAR.ALL.GPU + ERRBAR before the arrive - a wait for every outstanding memory
// operation of the thread, once per stage per consumer - and the stage's readers (the
// wgmma instructions) have already retired when this runs, so there is nothing to order.
__device__ __forceinline__ void mbarrier_arrive_cluster(uint64_t* bar, uint32_t cta_rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)),
      "r"(cta_rank)
      : "memory");
}

// One probe of the barrier: true once phase `phase` has completed. Default (CTA-scope
// acquire) semantics also for barriers that peers arrive on or multicast into: the
// `.acquire.cluster` form adds an L1 invalidation (CCTL.IVALL) after every successful
// probe, and what the waiter reads next - shared memory filled by TMA, or nothing at all
// for a producer - does not go through L1.
__device__ __forceinline__ bool mbarrier_try_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.b32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(phase)
      : "memory");
  return done != 0;
}

// The non-blocking probe: never suspends the thread, so a loop over it spins.
__device__ __forceinline__ bool mbarrier_test_wait(uint64_t* bar, uint32_t phase) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.b32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(phase)
      : "memory");
  return done != 0;
}

// Blocks until phase `phase` of the barrier has completed. try_wait suspends the thread
// for a hardware-chosen time, so the loop is cheap.
// Built with ANVIL_SM90_HANG_CHECK (cmake -DANVIL_SM90_HANG_CHECK=ON), a wait that lasts
// about 2^31 cycles (over a second) prints the barrier's shared-memory address, the
// phase, the CTA and the thread, and the thread exits: the kernel then ends (with a wrong
// result) and the printout, flushed at the next synchronisation, names every stuck wait.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t phase) {
#if defined(ANVIL_SM90_HANG_CHECK)
  const long long start = clock64();
  while (!mbarrier_try_wait(bar, phase)) {
    if (clock64() - start > (1ll << 31)) {
      printf("sm90 hang check: barrier 0x%x phase %u, CTA %d thread %d\n",
             static_cast<unsigned>(__cvta_generic_to_shared(bar)), phase, static_cast<int>(blockIdx.x),
             static_cast<int>(threadIdx.x));
      asm volatile("exit;");
    }
  }
#else
  while (!mbarrier_try_wait(bar, phase)) {
  }
#endif
}

}  // namespace anvil::sm90
