// The row-stream decode kernel (sm90-decode-ldg's configuration for one or two tokens):
//
//   D^T[features, tokens] = W[features, K] X[tokens, K]^T,   CUDA-core FMAs, no wgmma.
//
// At one or two tokens a linear layer is a matrix-vector product bound by how fast the
// weight leaves DRAM. The tile kernels read a weight tile as many short runs - 64 or 128
// rows, 128-256 bytes of each per stage - and DRAM serves such scattered runs below its
// peak (78-89% of it, ncu, 1 x 8192 x 8192 and 1 x 28672 x 8192). Here each warp streams
// one contiguous stretch of a weight row, kUnroll 16-byte loads per lane in flight, so the
// requests arrive as long runs of DRAM pages: 86-95% for the same shapes in a kernel of this
// shape (Triton's reduction kernel, which torch.compile generates for them).
//
// A CTA of kWarps warps takes kRows weight rows, kWarpsPerRow warps per row, each warp a
// contiguous 1/kWarpsPerRow of K (whole 8-element pieces; the last warp of a row also takes
// the K % 8 tail). The tokens (at most kMaxTokens) are read through the read-only cache:
// every warp of the GPU reads the same few rows of X. Each warp sums its pieces in fp32,
// reduces across its lanes, and the row's warps' sums are added in warp order, so results
// are bitwise reproducible. The epilogue runs per output element (epilogue.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "arch/sm90/wgmma.cuh"
#include "kernels/common/epilogue.cuh"
#include "kernels/common/epilogue_params.h"

namespace anvil::detail {

struct RowStreamConfig {
  static constexpr int kWarps = 8;
  static constexpr int kWarpsPerRow = 2;
  static constexpr int kRows = kWarps / kWarpsPerRow;  // weight rows per CTA
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kMaxTokens = 2;
  static constexpr int kUnroll = 4;  // 16-byte weight loads per lane in flight
};

struct RowStreamParams {
  const uint16_t* w;  // [features, K] rows ld_w apart (GEMM B, column-major), batch_w apart
  const uint16_t* x;  // [tokens, K] rows ld_x apart (GEMM A, row-major), batch_x apart
  int64_t ld_w, ld_x, batch_w, batch_x;
  int64_t features;
  int tokens;  // 1 .. RowStreamConfig::kMaxTokens
  int k;       // < 2^30 (check_warp_specialized)
  EpilogueParams epilogue;
};

// 16 bytes of 8 bf16 or fp16 values as floats.
template <sm90::Input kInput>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (kInput == sm90::Input::kBF16) {
      f[2 * i] = __uint_as_float(words[i] << 16);
      f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
    } else {
      const float2 h = __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
      f[2 * i] = h.x;
      f[2 * i + 1] = h.y;
    }
  }
}

template <sm90::Input kInput>
__device__ __forceinline__ float to_float(uint16_t v) {
  if constexpr (kInput == sm90::Input::kBF16) {
    return __uint_as_float(static_cast<uint32_t>(v) << 16);
  } else {
    return __half2float(__ushort_as_half(v));
  }
}

// The weight is read once: no L1 allocation, so the tokens' rows stay there.
__device__ __forceinline__ uint4 load_streaming(const uint16_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

template <class Config, sm90::Input kInput>
__global__ void __launch_bounds__(Config::kThreads) row_stream_kernel(const __grid_constant__ RowStreamParams p) {
  static_assert(!sm90::is_fp8_input(kInput), "16-bit inputs");
  __shared__ float warp_sums[Config::kWarps][Config::kMaxTokens];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int batch = static_cast<int>(blockIdx.z);
  const int64_t row = int64_t{blockIdx.y} * Config::kRows + warp / Config::kWarpsPerRow;
  const int part = warp % Config::kWarpsPerRow;

  float acc[Config::kMaxTokens] = {};
  if (row < p.features) {
    const uint16_t* w = p.w + batch * p.batch_w + row * p.ld_w;
    const uint16_t* x = p.x + batch * p.batch_x;
    // This warp's K range in whole 8-element pieces; the last part also takes the tail.
    const int pieces = p.k / 8;
    const int per_part = (pieces + Config::kWarpsPerRow - 1) / Config::kWarpsPerRow;
    const int first = min(part * per_part, pieces), last = min(first + per_part, pieces);
    constexpr int kStride = 32 * Config::kUnroll;  // pieces per warp iteration
    for (int base = first; base < last; base += kStride) {
      uint4 wv[Config::kUnroll];
#pragma unroll
      for (int u = 0; u < Config::kUnroll; ++u) {
        const int piece = base + u * 32 + lane;
        wv[u] = piece < last ? load_streaming(w + int64_t{piece} * 8) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < Config::kUnroll; ++u) {
        const int piece = base + u * 32 + lane;
        if (piece >= last) continue;
        float wf[8];
        unpack8<kInput>(wv[u], wf);
#pragma unroll
        for (int t = 0; t < Config::kMaxTokens; ++t) {
          if (t >= p.tokens) break;
          float xf[8];
          unpack8<kInput>(__ldg(reinterpret_cast<const uint4*>(x + t * p.ld_x + int64_t{piece} * 8)), xf);
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[t] = fmaf(wf[j], xf[j], acc[t]);
        }
      }
    }
    if (part == Config::kWarpsPerRow - 1) {
      for (int kk = pieces * 8 + lane; kk < p.k; kk += 32) {
        const float wf = to_float<kInput>(w[kk]);
        for (int t = 0; t < p.tokens; ++t) acc[t] = fmaf(wf, to_float<kInput>(x[t * p.ld_x + kk]), acc[t]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < Config::kMaxTokens; ++t) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], offset);
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < Config::kMaxTokens; ++t) warp_sums[warp][t] = acc[t];
  }
  __syncthreads();
  // The row's first warp adds its warps' sums in warp order; lane t finishes token t.
  if (part == 0 && row < p.features && lane < p.tokens) {
    float sum = warp_sums[warp][lane];
#pragma unroll
    for (int w = 1; w < Config::kWarpsPerRow; ++w) sum += warp_sums[warp + w][lane];
    finish_element(p.epilogue, batch, lane, row, sum);
  }
}

}  // namespace anvil::detail
