// tcgen05 fences: order tcgen05 operations (MMA, ld/st, alloc) against thread
// synchronization. tcgen05 instructions are asynchronous and are not ordered by a plain
// barrier or mbarrier wait on their own; a fence on each side of the synchronization is
// what makes "the MMA warp saw the epilogue's release of a TMEM buffer" (or the reverse)
// hold for the tensor-core operations too.
// PTX ISA: "Tensor Core 5th Generation Family Instructions" > "tcgen05 Memory Consistency
// Model" > "tcgen05.fence".
#pragma once

namespace anvil::sm100 {

// Issued before the thread's arrive / barrier: its earlier tcgen05 operations are ordered
// before what follows the synchronization in the other thread.
__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
}

// Issued after the thread's wait / barrier: its later tcgen05 operations are ordered after
// what preceded the synchronization in the other thread.
__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
}

}  // namespace anvil::sm100
