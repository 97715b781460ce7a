// TMA loads for the 2-CTA pair: the .cta_group::2 form of cp.async.bulk.tensor lets the
// completion barrier live in either CTA of the pair, so both CTAs' loads of one stage can
// count toward the single barrier the pair's MMA thread (in the even CTA) waits on. The
// plain loads, multicast, stores and the mbarrier itself are the Hopper wrappers
// (arch/sm90/tma.cuh, mbarrier.cuh), valid unchanged on sm_100a.
// PTX ISA: "Data Movement and Conversion Instructions" > "Tensor Copy Instructions" >
// "cp.async.bulk.tensor" (the .cta_group qualifier).
#pragma once

#include <cstdint>

#include "arch/sm90/mbarrier.cuh"

namespace anvil::sm100 {

// Shared::cluster address of `local`'s counterpart in CTA `cta_rank` of the cluster.
__device__ __forceinline__ uint32_t peer_smem_addr(const void* local, uint32_t cta_rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(sm90::smem_addr(local)), "r"(cta_rank));
  return remote;
}

// Loads a box into this CTA's shared memory; completion is counted on the barrier at
// shared::cluster address `bar_cluster_addr` (this CTA's or its peer's).
__device__ __forceinline__ void tma_load_2d_pair(void* smem_dst, const void* tensor_map, uint32_t bar_cluster_addr,
                                                 int32_t c0, int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(sm90::smem_addr(smem_dst)),
      "l"(tensor_map), "r"(bar_cluster_addr), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_load_3d_pair(void* smem_dst, const void* tensor_map, uint32_t bar_cluster_addr,
                                                 int32_t c0, int32_t c1, int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(sm90::smem_addr(smem_dst)),
      "l"(tensor_map), "r"(bar_cluster_addr), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// One arrival on a barrier given by its shared::cluster address (this CTA's or a peer's),
// announcing `bytes` more transaction bytes.
__device__ __forceinline__ void mbarrier_arrive_expect_tx_cluster(uint32_t bar_cluster_addr, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;\n" ::"r"(bar_cluster_addr),
               "r"(bytes)
               : "memory");
}

// One plain arrival on a barrier given by its shared::cluster address.
__device__ __forceinline__ void mbarrier_arrive_remote(uint32_t bar_cluster_addr) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar_cluster_addr) : "memory");
}

}  // namespace anvil::sm100
