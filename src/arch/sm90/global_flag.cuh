// Flags in global memory between CTAs of one grid: release by the writer after its data,
// acquire by the reader before it reads the data. GPU scope, since the CTAs may sit on
// any SM and communicate through L2. The writer's side also needs fence_acq_rel_gpu
// (fence.cuh) between its data and the flag.
#pragma once

namespace anvil::sm90 {

__device__ __forceinline__ void store_relaxed_gpu(int* flag, int value) {
  asm volatile("st.relaxed.gpu.global.s32 [%0], %1;\n" ::"l"(flag), "r"(value) : "memory");
}

__device__ __forceinline__ int load_acquire_gpu(const int* flag) {
  int value;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

}  // namespace anvil::sm90
