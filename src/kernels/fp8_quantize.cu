// FP8 quantization of activations (include/anvil/fp8.h): per token in 1 x 128 blocks, and
// per tensor. Memory-bound elementwise kernels: one warp per 128-column block, four
// neighbouring elements per lane.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "anvil/fp8.h"
#include "host/registry.h"

namespace anvil::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kBlockCols = 128;  // one scale per row and 128 columns (ScaleMode::kBlock128)

template <class In>
__device__ __forceinline__ float to_float(In v) {
  if constexpr (std::is_same_v<In, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return __half2float(v);
  }
}

// Round to nearest (ties to even) with saturation to the format's largest finite value.
template <__nv_fp8_interpretation_t kFormat>
__device__ __forceinline__ uint8_t to_fp8(float v) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, kFormat));
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}

__device__ __forceinline__ float scale_of(float amax, float fmax) { return amax > 0.0f ? amax / fmax : 1.0f; }

// Lane l holds columns col0 + 4 l .. + 3 of row `row` (zeros past K).
template <class In>
__device__ __forceinline__ void load_four(const In* x, int64_t ldx, int64_t row, int64_t col0, int64_t k, float (&v)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t col = col0 + j;
    v[j] = col < k ? to_float(x[row * ldx + col]) : 0.0f;
  }
}

template <class In, __nv_fp8_interpretation_t kFormat>
__global__ void __launch_bounds__(kThreads) quantize_blocks_kernel(const In* x, int64_t ldx, uint8_t* q, int64_t ldq,
                                                                   float* scales, int64_t m, int64_t k, float fmax) {
  const int lane = threadIdx.x % 32;
  const int64_t blocks_per_row = (k + kBlockCols - 1) / kBlockCols;
  const int64_t warps = m * blocks_per_row;
  const int64_t stride = int64_t{gridDim.x} * (kThreads / 32);
  for (int64_t w = int64_t{blockIdx.x} * (kThreads / 32) + threadIdx.x / 32; w < warps; w += stride) {
    const int64_t row = w / blocks_per_row, block = w % blocks_per_row;
    const int64_t col0 = block * kBlockCols + lane * 4;
    float v[4];
    load_four(x, ldx, row, col0, k, v);
    const float amax = warp_max(fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3]))));
    const float scale = scale_of(amax, fmax);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (col0 + j < k) q[row * ldq + col0 + j] = to_fp8<kFormat>(v[j] / scale);
    }
    if (lane == 0) scales[block * m + row] = scale;
  }
}

// amax(|X|) into *amax_bits: non-negative floats order as their bit patterns do.
template <class In>
__global__ void __launch_bounds__(kThreads) amax_kernel(const In* x, int64_t ldx, int64_t m, int64_t k,
                                                        unsigned* amax_bits) {
  const int64_t total = m * k;
  float amax = 0.0f;
  for (int64_t t = int64_t{blockIdx.x} * kThreads + threadIdx.x; t < total; t += int64_t{gridDim.x} * kThreads) {
    amax = fmaxf(amax, fabsf(to_float(x[(t / k) * ldx + t % k])));
  }
  amax = warp_max(amax);
  if (threadIdx.x % 32 == 0 && amax > 0.0f) atomicMax(amax_bits, __float_as_uint(amax));
}

template <class In, __nv_fp8_interpretation_t kFormat>
__global__ void __launch_bounds__(kThreads) quantize_tensor_kernel(const In* x, int64_t ldx, uint8_t* q, int64_t ldq,
                                                                   const float* amax, int64_t m, int64_t k, float fmax) {
  const float scale = scale_of(*amax, fmax);
  const int64_t total = m * k;
  for (int64_t t = int64_t{blockIdx.x} * kThreads + threadIdx.x; t < total; t += int64_t{gridDim.x} * kThreads) {
    const int64_t row = t / k, col = t % k;
    q[row * ldq + col] = to_fp8<kFormat>(to_float(x[row * ldx + col]) / scale);
  }
}

__global__ void finish_tensor_scale_kernel(float* scale, float fmax) { *scale = scale_of(*scale, fmax); }

unsigned grid_for(int64_t work_items, int per_block) {
  return static_cast<unsigned>(std::clamp<int64_t>((work_items + per_block - 1) / per_block, 1, 8192));
}

Status check_quantize(const char* name, const void* x, DataType x_dtype, int64_t ldx, const void* q, DataType q_dtype,
                      int64_t ldq, const float* scales, int64_t m, int64_t k, Diagnostic* diag) {
  if (x_dtype != DataType::kBF16 && x_dtype != DataType::kF16) {
    return fail(diag, Status::kNotSupported, "%s: X must be bf16 or fp16, got %s", name, to_string(x_dtype));
  }
  if (q_dtype != DataType::kE4M3 && q_dtype != DataType::kE5M2) {
    return fail(diag, Status::kNotSupported, "%s: Q must be e4m3 or e5m2, got %s", name, to_string(q_dtype));
  }
  if (m < 0 || k < 0) return fail(diag, Status::kInvalidArgument, "%s: negative size m=%lld k=%lld", name, (long long)m, (long long)k);
  if (m > (int64_t{1} << 31) || k > (int64_t{1} << 31)) return fail(diag, Status::kInvalidArgument, "%s: a size exceeds 2^31", name);
  if (k % 16 != 0) {
    return fail(diag, Status::kNotSupported, "%s: K must be a multiple of 16, as the FP8 GEMM's (got %lld)", name, (long long)k);
  }
  if (ldx < k || ldq < k) {
    return fail(diag, Status::kInvalidArgument, "%s: leading dimensions (ldx %lld, ldq %lld) below K = %lld", name,
                (long long)ldx, (long long)ldq, (long long)k);
  }
  if (m > 0 && k > 0 && (x == nullptr || q == nullptr || scales == nullptr)) {
    return fail(diag, Status::kInvalidArgument, "%s: %s is null", name, x == nullptr ? "X" : q == nullptr ? "Q" : "the scale pointer");
  }
  if (reinterpret_cast<uintptr_t>(x) % 2 != 0 || reinterpret_cast<uintptr_t>(scales) % 4 != 0) {
    return fail(diag, Status::kMisalignedOperand, "%s: X must be 2-byte and the scales 4-byte aligned", name);
  }
  return Status::kSuccess;
}

float fmax_of(DataType q_dtype) { return q_dtype == DataType::kE4M3 ? 448.0f : 57344.0f; }

// Calls f(In{}, format) for the run-time pair of types.
template <class F>
void with_types(DataType x_dtype, DataType q_dtype, F&& f) {
  const auto with_format = [&](auto in) {
    if (q_dtype == DataType::kE4M3) {
      f(in, std::integral_constant<__nv_fp8_interpretation_t, __NV_E4M3>{});
    } else {
      f(in, std::integral_constant<__nv_fp8_interpretation_t, __NV_E5M2>{});
    }
  };
  if (x_dtype == DataType::kBF16) {
    with_format(__nv_bfloat16{});
  } else {
    with_format(__half{});
  }
}

Status launched(const char* name, Diagnostic* diag) { return check_launch(diag, name); }

}  // namespace
}  // namespace anvil::detail

namespace anvil {

Status quantize_fp8_blocks(const void* x, DataType x_dtype, int64_t ldx, void* q, DataType q_dtype, int64_t ldq,
                           float* scales, int64_t m, int64_t k, cudaStream_t stream, Diagnostic* diag) {
  constexpr const char* kName = "quantize_fp8_blocks";
  const Status s = detail::check_quantize(kName, x, x_dtype, ldx, q, q_dtype, ldq, scales, m, k, diag);
  if (s != Status::kSuccess || m == 0 || k == 0) return s;
  const int64_t warps = m * ((k + detail::kBlockCols - 1) / detail::kBlockCols);
  detail::with_types(x_dtype, q_dtype, [&](auto in, auto format) {
    using In = decltype(in);
    detail::quantize_blocks_kernel<In, decltype(format)::value>
        <<<detail::grid_for(warps, detail::kThreads / 32), detail::kThreads, 0, stream>>>(
            static_cast<const In*>(x), ldx, static_cast<uint8_t*>(q), ldq, scales, m, k, detail::fmax_of(q_dtype));
  });
  return detail::launched(kName, diag);
}

Status quantize_fp8_tensor(const void* x, DataType x_dtype, int64_t ldx, void* q, DataType q_dtype, int64_t ldq,
                           float* scale, int64_t m, int64_t k, cudaStream_t stream, Diagnostic* diag) {
  constexpr const char* kName = "quantize_fp8_tensor";
  const Status s = detail::check_quantize(kName, x, x_dtype, ldx, q, q_dtype, ldq, scale, m, k, diag);
  if (s != Status::kSuccess) return s;
  if (scale == nullptr) return detail::fail(diag, Status::kInvalidArgument, "%s: the scale pointer is null", kName);
  const cudaError_t e = cudaMemsetAsync(scale, 0, sizeof(float), stream);
  if (e != cudaSuccess) {
    return detail::fail(diag, Status::kCudaError, "%s: clearing the scale failed: %s", kName, cudaGetErrorName(e));
  }
  const float fmax = detail::fmax_of(q_dtype);
  if (m > 0 && k > 0) {
    const unsigned grid = detail::grid_for(m * k, detail::kThreads * 8);
    detail::with_types(x_dtype, q_dtype, [&](auto in, auto format) {
      using In = decltype(in);
      detail::amax_kernel<In><<<grid, detail::kThreads, 0, stream>>>(static_cast<const In*>(x), ldx, m, k,
                                                                      reinterpret_cast<unsigned*>(scale));
      detail::quantize_tensor_kernel<In, decltype(format)::value><<<grid, detail::kThreads, 0, stream>>>(
          static_cast<const In*>(x), ldx, static_cast<uint8_t*>(q), ldq, scale, m, k, fmax);
    });
  }
  detail::finish_tensor_scale_kernel<<<1, 1, 0, stream>>>(scale, fmax);
  return detail::launched(kName, diag);
}

}  // namespace anvil
