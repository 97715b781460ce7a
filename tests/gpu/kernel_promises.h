// What each named kernel promises to take, written from its check() rules, so that a test
// can tell a documented refusal from a kernel that stopped taking cases it should: the GPU
// sweeps run every kernel on every case, and a refused case is skipped only where the
// kernel never promised it.
//
// Families (the checks they come from):
//   every case        ladder-01-naive (grid limits far beyond test sizes)
//   no SwiGLU         ladder-02-smem-tiling
//   K-major TMA       ladder-03..05, ablation-05-two-stages (tma_operands.h check_kmajor_tma:
//                     A row-major, B column-major, K > 0, lda and ldb multiples of 8
//                     elements, 16-byte aligned A and B, one matrix, no SwiGLU)
//   warp-specialized  ladder-06..11, ablation-09-*, ablation-10-*, sm90-decode,
//                     sm90-decode-ldg (check_warp_specialized: the K-major TMA rules with
//                     strided batches whose strides are non-zero multiples of 8, and SwiGLU
//                     for 128- and 256-column tiles, which all of these have)
//   ... no SwiGLU     sm90-decode-r64, sm90-decode-ldg-r64 (64-row feature tiles)
//   production        sm90-gemm, -pingpong, -streamk, -pow2, -pair-n: any K > 0 (other
//                     layouts and strides are repacked into the workspace)
//   ... no SwiGLU     sm90-gemm-fit (160-, 192- and 224-column tiles)
//   split-K           sm90-gemm-splitk4 (K-major operands read in place, one matrix, K a
//                     multiple of 32, not batch-invariant)
//   FP8               sm90-fp8: e4m3/e5m2 inputs only (validate.cpp's FP8 rules: K-major,
//                     K and leading dimensions multiples of 16), none of the 16-bit cases
//   ... decode        sm90-fp8-decode: the same, e4m3 x e4m3 only
//                     (fp8_decode_plan.h, fp8_decode_refusal)
// Size limits (grids, 2^30 extents) are far from every test case and are not modelled.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "anvil/gemm.h"

namespace anvil_test {

enum class KernelFamily {
  kEveryCase,
  kNoSwiGLU,
  kKMajorTma,
  kWarpSpecialized,
  kWarpSpecializedNoSwiGLU,
  kProduction,
  kProductionNoSwiGLU,
  kSplitK,
  kFp8,
  kFp8Decode,
  kUnknown,
};

inline KernelFamily kernel_family(const char* name) {
  const std::string n = name;
  auto starts = [&](const char* prefix) { return n.rfind(prefix, 0) == 0; };
  if (n == "ladder-01-naive") return KernelFamily::kEveryCase;
  if (n == "ladder-02-smem-tiling") return KernelFamily::kNoSwiGLU;
  if (n == "ladder-03-tma-wgmma" || n == "ladder-04-swizzle" || n == "ladder-05-pipeline" ||
      n == "ablation-05-two-stages") {
    return KernelFamily::kKMajorTma;
  }
  if (n == "sm90-decode-r64" || n == "sm90-decode-ldg-r64") return KernelFamily::kWarpSpecializedNoSwiGLU;
  if (n == "sm90-decode" || n == "sm90-decode-ldg" || starts("ladder-") || starts("ablation-09-") ||
      starts("ablation-10-")) {
    return KernelFamily::kWarpSpecialized;
  }
  if (n == "sm90-gemm-fit" || n == "sm90-gemm-narrow64" || n == "sm90-gemm-narrow96") {
    return KernelFamily::kProductionNoSwiGLU;
  }
  if (n == "sm90-gemm-splitk4") return KernelFamily::kSplitK;
  if (n == "sm90-fp8") return KernelFamily::kFp8;
  if (n == "sm90-fp8-decode") return KernelFamily::kFp8Decode;
  if (n == "sm90-gemm" || n == "sm90-gemm-pingpong" || n == "sm90-gemm-streamk" || n == "sm90-gemm-pow2" ||
      n == "sm90-gemm-pair-n") {
    return KernelFamily::kProduction;
  }
  return KernelFamily::kUnknown;
}

// Whether `kernel` promises to take desc with 16-byte aligned base pointers (what
// cudaMalloc returns). *why says which rule leaves the case out when it does not.
inline bool kernel_promises(const char* kernel, const anvil::GemmDesc& d, std::string* why) {
  const bool swiglu = d.epilogue.activation == anvil::Activation::kSwiGLU;
  const bool k_major = d.a.order == anvil::Order::kRowMajor && d.b.order == anvil::Order::kColMajor;
  const bool tma_strides = d.a.ld % 8 == 0 && d.b.ld % 8 == 0;
  const bool batch_strides = d.batch == 1 || (d.a.batch_stride % 8 == 0 && d.b.batch_stride % 8 == 0 &&
                                              d.a.batch_stride != 0 && d.b.batch_stride != 0);
  auto no = [&](const char* reason) {
    *why = reason;
    return false;
  };
  const auto fp8 = [](anvil::DataType t) { return t == anvil::DataType::kE4M3 || t == anvil::DataType::kE5M2; };
  const bool fp8_kernel = kernel_family(kernel) == KernelFamily::kFp8 || kernel_family(kernel) == KernelFamily::kFp8Decode;
  if (!fp8_kernel && (fp8(d.a.dtype) || fp8(d.b.dtype))) {
    return no("bf16/fp16 inputs only");
  }
  switch (kernel_family(kernel)) {
    case KernelFamily::kEveryCase: return true;
    case KernelFamily::kNoSwiGLU: return swiglu ? no("no SwiGLU") : true;
    case KernelFamily::kKMajorTma:
      if (d.k == 0) return no("K = 0");
      if (!k_major) return no("operands not K-major");
      if (!tma_strides) return no("leading dimensions not multiples of 8");
      if (d.batch != 1) return no("batched");
      return swiglu ? no("no SwiGLU") : true;
    case KernelFamily::kWarpSpecialized:
    case KernelFamily::kWarpSpecializedNoSwiGLU:
      if (d.k == 0) return no("K = 0");
      if (!k_major) return no("operands not K-major");
      if (!tma_strides) return no("leading dimensions not multiples of 8");
      if (!batch_strides) return no("batch strides zero or not multiples of 8");
      if (swiglu && kernel_family(kernel) == KernelFamily::kWarpSpecializedNoSwiGLU) return no("no SwiGLU");
      return true;
    case KernelFamily::kProduction: return d.k == 0 ? no("K = 0") : true;
    case KernelFamily::kProductionNoSwiGLU:
      if (d.k == 0) return no("K = 0");
      return swiglu ? no("no SwiGLU") : true;
    case KernelFamily::kSplitK:
      if (!k_major) return no("operands not K-major");
      if (!tma_strides) return no("leading dimensions not multiples of 8");
      if (d.batch != 1) return no("batched");
      if (d.batch_invariant) return no("batch-invariant");
      return d.k % 32 == 0 && d.k > 0 ? true : no("K not a multiple of 32");
    case KernelFamily::kFp8:
    case KernelFamily::kFp8Decode: {
      if (!fp8(d.a.dtype) || !fp8(d.b.dtype)) return no("FP8 inputs only");
      if (kernel_family(kernel) == KernelFamily::kFp8Decode) {
        if (d.a.dtype != anvil::DataType::kE4M3 || d.b.dtype != anvil::DataType::kE4M3) return no("e4m3 x e4m3 only");
      }
      if (d.k == 0) return no("K = 0");
      if (!k_major) return no("operands not K-major");
      if (d.k % 16 != 0 || d.a.ld % 16 != 0 || d.b.ld % 16 != 0) return no("K or leading dimensions not multiples of 16");
      return true;
    }
    case KernelFamily::kUnknown: return no("not in tests/gpu/kernel_promises.h");
  }
  return no("unreachable");
}

}  // namespace anvil_test
