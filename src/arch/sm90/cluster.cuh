// Thread-block clusters: CTAs co-scheduled on one GPC that can reach each other's shared
// memory (distributed shared memory) and barriers.
#pragma once

#include <cstdint>

#include "arch/sm90/mbarrier.cuh"

namespace anvil::sm90 {

__device__ __forceinline__ uint32_t cluster_cta_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// CTAs in this cluster. Volatile, so each use reads the special register again instead of
// keeping the value live in a register across long loops.
__device__ __forceinline__ uint32_t cluster_size() {
  uint32_t count;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(count));
  return count;
}

// This CTA's index and the grid's size along x, read from the special registers at each
// use (volatile) rather than kept live in registers across a tile loop whose mainloop
// and epilogue need them all.
__device__ __forceinline__ int cta_id_x() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(id));
  return static_cast<int>(id);
}
__device__ __forceinline__ int grid_dim_x() {
  uint32_t count;
  asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(count));
  return static_cast<int>(count);
}

// cluster_sync's two halves, for work that touches nothing the barrier publishes and so
// can run while the peers are still arriving.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }

// Full cluster barrier: every thread of every CTA in the cluster arrives and waits.
// Release/acquire so that barrier initialisation and smem writes are visible to peers.
__device__ __forceinline__ void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

// Cluster barrier without the release: arriving does not wait for this thread's earlier
// memory operations to be performed (the release arrive compiles to MEMBAR.ALL.GPU, which
// waits for every outstanding global store). For a last barrier that only keeps shared
// memory alive while peers read it, when each thread has consumed every value it read
// before arriving.
__device__ __forceinline__ void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
  cluster_wait();
}

// The shared::cluster address of `local`'s counterpart in CTA `cta_rank`: every CTA of a
// kernel has the same shared-memory layout, so a peer's copy of a variable sits at the
// same offset in the peer's window.
__device__ __forceinline__ uint32_t map_shared_rank(const void* local, uint32_t cta_rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr(local)), "r"(cta_rank));
  return remote;
}

// 16 bytes from a (possibly remote) CTA's shared memory, at an address from map_shared_rank.
__device__ __forceinline__ float4 ld_shared_cluster_v4(uint32_t cluster_addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(cluster_addr)
               : "memory");
  return v;
}

}  // namespace anvil::sm90
