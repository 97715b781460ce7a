// cp.async: 16-byte copies from global to shared memory through the load path (LDGSTS),
// tracked per thread in commit groups. Unlike TMA they need no tensor map and cost one
// instruction per 16 bytes per thread; unlike ld.global + st.shared they hold no registers
// while in flight, so a thread can keep several stages of copies outstanding.
#pragma once

#include <cstdint>

namespace anvil::sm90 {

// Copies src_bytes (0..16) from src and zero-fills the rest of the 16 bytes at dst. Bytes
// past src_bytes are not read, so a piece may end at a matrix edge. .cg: cached in L2
// only - streamed data has no reuse in L1.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

// Closes this thread's copies issued since the last commit into one group.
__device__ __forceinline__ void cp_async_commit_group() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace anvil::sm90
