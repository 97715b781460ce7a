// Device side of the fused epilogue shared by every kernel: bias, activation, residual
// (beta * C) and the conversion to the output dtype.
//   D = act(alpha * acc + bias) + beta * C
//   SwiGLU: D = silu(alpha * gate + bias_gate) * (alpha * up + bias_up) + beta * C
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "anvil/swiglu.h"
#include "kernels/common/epilogue_params.h"

namespace anvil::detail {

__device__ __forceinline__ float load_float(const void* base, DataType dtype, int64_t index) {
  switch (dtype) {
    case DataType::kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[index]);
    case DataType::kF16: return __half2float(static_cast<const __half*>(base)[index]);
    default: return static_cast<const float*>(base)[index];
  }
}

__device__ __forceinline__ void store_float(void* base, DataType dtype, int64_t index, float value) {
  switch (dtype) {
    case DataType::kBF16: static_cast<__nv_bfloat16*>(base)[index] = __float2bfloat16_rn(value); break;
    case DataType::kF16: static_cast<__half*>(base)[index] = __float2half_rn(value); break;
    default: static_cast<float*>(base)[index] = value; break;
  }
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }

__device__ __forceinline__ float activate(float x, Activation act) {
  switch (act) {
    case Activation::kReLU: return fmaxf(x, 0.0f);
    case Activation::kGeluErf: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case Activation::kGeluTanh: {
      const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + tanhf(inner));
    }
    case Activation::kSiLU: return silu(x);
    default: return x;
  }
}

// alpha * acc plus the bias of GEMM row `row` / GEMM column `gemm_col`.
__device__ __forceinline__ float scale_and_bias(const EpilogueParams& p, float acc, int64_t row, int64_t gemm_col) {
  float z = p.alpha * acc;
  if (p.bias_mode == BiasMode::kPerColumn) z += load_float(p.bias, p.bias_dtype, gemm_col);
  if (p.bias_mode == BiasMode::kPerRow) z += load_float(p.bias, p.bias_dtype, row);
  return z;
}

__device__ __forceinline__ int64_t element_offset(const MatrixRef& r, int64_t batch, int64_t row, int64_t col) {
  return batch * r.batch_stride + row * r.row_stride + col * r.col_stride;
}

// The general per-element paths are out-of-line calls: kernels unroll their fragment
// loops over 64-128 accumulators, and inlining every dtype/activation switch into each
// copy multiplies code size (and compile time) for paths the fast kernels avoid.

// The fused math for one accumulator at output (row, col), C included.
inline __device__ __noinline__ float epilogue_value(const EpilogueParams& p, int64_t batch, int64_t row, int64_t col,
                                                    float acc) {
  float y = activate(scale_and_bias(p, acc, row, col), p.activation);
  if (p.beta != 0.0f) y += p.beta * load_float(p.c.ptr, p.c.dtype, element_offset(p.c, batch, row, col));
  return y;
}

// Output element (batch, row, col) from an ordinary GEMM column's accumulator.
inline __device__ __noinline__ void finish_element(const EpilogueParams& p, int64_t batch, int64_t row, int64_t col,
                                               float acc) {
  store_float(const_cast<void*>(p.d.ptr), p.d.dtype, element_offset(p.d, batch, row, col),
              epilogue_value(p, batch, row, col, acc));
}

// Output element from the gate and up accumulators of SwiGLU output column `col`.
inline __device__ __noinline__ void finish_swiglu_element(const EpilogueParams& p, int64_t batch, int64_t row, int64_t col,
                                                      int64_t gate_col, float gate_acc, float up_acc) {
  const float gate = scale_and_bias(p, gate_acc, row, gate_col);
  const float up = scale_and_bias(p, up_acc, row, gate_col + kSwiGLUBlock);
  float y = silu(gate) * up;
  if (p.beta != 0.0f) y += p.beta * load_float(p.c.ptr, p.c.dtype, element_offset(p.c, batch, row, col));
  store_float(const_cast<void*>(p.d.ptr), p.d.dtype, element_offset(p.d, batch, row, col), y);
}

}  // namespace anvil::detail
