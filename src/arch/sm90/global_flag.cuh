// Flags in global memory between CTAs of one grid: release by the writer after its data,
// acquire by the reader before it reads the data. GPU scope, since the CTAs may sit on
// any SM and communicate through L2.
#pragma once

namespace anvil::sm90 {

// Orders this thread's earlier memory operations - and, after a barrier, those of the
// threads it synchronised with - before its later ones, for every observer on the GPU.
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); }

__device__ __forceinline__ void store_relaxed_gpu(int* flag, int value) {
  asm volatile("st.relaxed.gpu.global.s32 [%0], %1;\n" ::"l"(flag), "r"(value) : "memory");
}

__device__ __forceinline__ int load_acquire_gpu(const int* flag) {
  int value;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

}  // namespace anvil::sm90
