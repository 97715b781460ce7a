// ld.shared / st.shared with 32-bit shared-window addresses. A pointer into dynamic shared
// memory that went through integer arithmetic (the 1024-byte alignment of the stage ring)
// no longer tells the compiler its state space, so plain C++ accesses through it become
// generic loads and stores; these keep the shared-memory instructions.
#pragma once

#include <cstdint>

namespace anvil::sm90 {

__device__ __forceinline__ void st_shared_v2(uint32_t addr, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(x), "f"(y) : "memory");
}

__device__ __forceinline__ float ld_shared_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

__device__ __forceinline__ float4 ld_shared_v4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

}  // namespace anvil::sm90
