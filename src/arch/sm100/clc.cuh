// Cluster launch control (CLC): a running cluster asks the hardware to cancel the launch
// of a cluster that has not started yet and takes over its work. The grid is launched with
// one cluster per tile; clusters that finish early steal tiles from clusters that never
// got an SM, so the kernel is persistent where SMs are free and plain where they are not
// (another kernel holding some of them, or fewer SMs than the static plan assumed).
// The response is a 16-byte opaque value written asynchronously to shared memory;
// completion is reported through an mbarrier (complete_tx of 16 bytes).
// PTX ISA: "Parallel Synchronization and Communication Instructions" >
// "clusterlaunchcontrol.try_cancel" and "clusterlaunchcontrol.query_cancel".
#pragma once

#include <cstdint>

#include "arch/sm90/mbarrier.cuh"

namespace anvil::sm100 {

// The response is 16 bytes, 16-byte aligned.
struct alignas(16) ClcResponse {
  uint32_t word[4];
};

// Requests the cancellation of one not-yet-launched cluster; the response goes to
// `response` in every CTA of this cluster (same offset), each completing 16 transaction
// bytes on its barrier at `bar`'s offset. Issue from one thread of one CTA only: each
// request that succeeds cancels one more cluster. After a failed response has been
// observed, no further request may be made (undefined behaviour).
__device__ __forceinline__ void clc_try_cancel_multicast(ClcResponse* response, uint64_t* bar) {
  asm volatile(
      "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.multicast::cluster::all.b128 "
      "[%0], [%1];\n" ::"r"(sm90::smem_addr(response)),
      "r"(sm90::smem_addr(bar))
      : "memory");
}

// The single-CTA form: the response and barrier in this CTA only.
__device__ __forceinline__ void clc_try_cancel(ClcResponse* response, uint64_t* bar) {
  asm volatile(
      "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%0], [%1];\n" ::"r"(
          sm90::smem_addr(response)),
      "r"(sm90::smem_addr(bar))
      : "memory");
}

// Decodes a response (after its barrier phase completed): true and the x index of the
// canceled cluster's first CTA when a cluster was canceled, false when none was left.
// Reading the index of a failed response is undefined, hence one predicated read.
__device__ __forceinline__ bool clc_query(const ClcResponse* response, uint32_t* first_cta_x) {
  uint32_t canceled, x;
  asm volatile(
      "{\n.reg .b128 r;\n.reg .pred p;\n"
      "ld.shared.b128 r, [%2];\n"
      "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, r;\n"
      "selp.b32 %0, 1, 0, p;\n"
      "mov.b32 %1, 0;\n"
      "@p clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 %1, r;\n}\n"
      : "=r"(canceled), "=r"(x)
      : "r"(sm90::smem_addr(response))
      : "memory");
  *first_cta_x = x;
  return canceled != 0;
}

}  // namespace anvil::sm100
