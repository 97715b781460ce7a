// tcgen05.mma, kind::f16: D (tensor memory, fp32) += A (shared memory) x B (shared
// memory), with bf16 or fp16 inputs described by 64-bit matrix descriptors and the shape
// and types by a 32-bit instruction descriptor (descriptors.h). One thread issues it for
// the whole CTA (or CTA pair); it runs asynchronously and tcgen05.commit reports its end.
// PTX ISA: "Tensor Core 5th Generation Family Instructions" > "TensorCore 5th Generation
// Matrix Multiply and accumulate Operations" > "tcgen05.mma".
#pragma once

#include <cstdint>

namespace anvil::sm100 {

// D[tmem_d] = A B + (accumulate ? D : 0), M = 64 or 128 rows in this CTA's TMEM.
__device__ __forceinline__ void mma_f16_cta1(uint32_t tmem_d, uint64_t desc_a, uint64_t desc_b, uint32_t idesc,
                                             bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %4, 0;\n"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n" ::"r"(tmem_d),
      "l"(desc_a), "l"(desc_b), "r"(idesc), "r"(static_cast<uint32_t>(accumulate))
      : "memory");
}

// The pair form: issued by one thread of the even CTA of a 2-CTA pair. M = 256 (or 128)
// rows split evenly: each CTA's shared memory holds its half of A's rows and half of
// B's columns at the same offsets the descriptors give, and each CTA's TMEM at tmem_d
// receives its rows of D over all N columns.
__device__ __forceinline__ void mma_f16_cta2(uint32_t tmem_d, uint64_t desc_a, uint64_t desc_b, uint32_t idesc,
                                             bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %4, 0;\n"
      "tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, p;\n}\n" ::"r"(tmem_d),
      "l"(desc_a), "l"(desc_b), "r"(idesc), "r"(static_cast<uint32_t>(accumulate))
      : "memory");
}

template <int kCtaGroup>
__device__ __forceinline__ void mma_f16(uint32_t tmem_d, uint64_t desc_a, uint64_t desc_b, uint32_t idesc,
                                        bool accumulate) {
  static_assert(kCtaGroup == 1 || kCtaGroup == 2);
  if constexpr (kCtaGroup == 1) {
    mma_f16_cta1(tmem_d, desc_a, desc_b, idesc, accumulate);
  } else {
    mma_f16_cta2(tmem_d, desc_a, desc_b, idesc, accumulate);
  }
}

}  // namespace anvil::sm100
