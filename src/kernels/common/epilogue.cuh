// Device side of the fused epilogue shared by every kernel: bias, activation, residual
// (beta * C) and the conversion to the output dtype.
//   D = act(alpha * acc + bias) + beta * C
//   SwiGLU: D = silu(alpha * gate + bias_gate) * (alpha * up + bias_up) + beta * C
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

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

// 2^x in one MUFU.EX2 (relative error ~2^-22; subnormal results flush to zero). The
// library's exp2f/__expf wrap it in range fix-ups for subnormals that these activations
// never need: their results only feed a 1 + e sum.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// x / (1 + 2^e): x * sigmoid(-e ln 2). A reciprocal and a multiply (__fdividef) instead of
// an IEEE division's Newton steps and slow-path branch. 1 + 2^e = inf for large e gives
// x * 0 = 0, the correct limit.
__device__ __forceinline__ float divide_by_one_plus_exp2(float x, float e) { return __fdividef(x, 1.0f + exp2_approx(e)); }

inline constexpr float kLog2e = 1.4426950408889634f;

// silu(x) = x sigmoid(x).
__device__ __forceinline__ float silu(float x) { return divide_by_one_plus_exp2(x, -kLog2e * x); }

// The tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as
// x sigmoid(2u), the same function: one exp2 and a reciprocal instead of tanhf's ~20
// instructions, and accurate where 1 + tanh(u) cancels (x << 0), which tanh.approx is not.
__device__ __forceinline__ float gelu_tanh(float x) {
  constexpr float kC0 = -2.0f * 0.79788456080286536f * kLog2e;
  constexpr float kC1 = kC0 * 0.044715f;
  return divide_by_one_plus_exp2(x, x * fmaf(kC1, x * x, kC0));
}

__device__ __forceinline__ float activate(float x, Activation act) {
  switch (act) {
    case Activation::kReLU: return fmaxf(x, 0.0f);
    case Activation::kGeluErf: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case Activation::kGeluTanh: return gelu_tanh(x);
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

// Four finished outputs to four consecutive elements at `out`: one 8- or 16-byte store
// when `out` is aligned to it (kVector), else one store per element.
template <class Out, bool kVector = true>
__device__ __forceinline__ void store_four_as(Out* out, const float (&y)[4]) {
  if constexpr (!kVector) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if constexpr (std::is_same_v<Out, float>) {
        out[j] = y[j];
      } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
        out[j] = __float2bfloat16_rn(y[j]);
      } else {
        out[j] = __float2half_rn(y[j]);
      }
    }
  } else if constexpr (std::is_same_v<Out, float>) {
    *reinterpret_cast<float4*>(out) = make_float4(y[0], y[1], y[2], y[3]);
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    const __nv_bfloat162 lo = __floats2bfloat162_rn(y[0], y[1]), hi = __floats2bfloat162_rn(y[2], y[3]);
    *reinterpret_cast<uint2*>(out) = make_uint2(*reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi));
  } else {
    const __half2 lo = __floats2half2_rn(y[0], y[1]), hi = __floats2half2_rn(y[2], y[3]);
    *reinterpret_cast<uint2*>(out) = make_uint2(*reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi));
  }
}

// Four finished outputs in a row of a row-major D whose four columns are all inside and
// 8- or 16-byte aligned: one vector store instead of four. The output type is a run-time
// value here (the general epilogue paths); store_four_as is the same store for code that
// knows it at compile time.
__device__ __forceinline__ void store_four(const EpilogueParams& p, int64_t offset, const float (&y)[4]) {
  void* d = const_cast<void*>(p.d.ptr);
  if (p.d.dtype == DataType::kF32) {
    store_four_as(static_cast<float*>(d) + offset, y);
  } else if (p.d.dtype == DataType::kBF16) {
    store_four_as(static_cast<__nv_bfloat16*>(d) + offset, y);
  } else {
    store_four_as(static_cast<__half*>(d) + offset, y);
  }
}

// The per-column bias of four neighbouring GEMM columns (and of their SwiGLU up columns,
// 64 further right): loaded once per thread and reused for every row it finishes, since
// a thread's columns stay fixed while its rows advance. Zeros without a column bias.
struct ColumnBias {
  float gate[4] = {0, 0, 0, 0};
  float up[4] = {0, 0, 0, 0};
};

__device__ __forceinline__ ColumnBias load_column_bias(const EpilogueParams& p, bool swiglu, int64_t gemm_col,
                                                       int64_t gemm_cols) {
  ColumnBias b;
  if (p.bias_mode != BiasMode::kPerColumn) return b;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (gemm_col + j < gemm_cols) b.gate[j] = load_float(p.bias, p.bias_dtype, gemm_col + j);
    if (swiglu && gemm_col + kSwiGLUBlock + j < gemm_cols) {
      b.up[j] = load_float(p.bias, p.bias_dtype, gemm_col + kSwiGLUBlock + j);
    }
  }
  return b;
}

// Calls f(std::integral_constant<Activation, a>{}): from the run-time activation to an
// epilogue instantiated for it, taken once per tile or thread so that the loop over
// outputs holds only that activation's code (why it matters: reduce_rows_as).
template <class F>
__device__ __forceinline__ void visit_activation(Activation a, F&& f) {
  switch (a) {
    case Activation::kReLU: return f(std::integral_constant<Activation, Activation::kReLU>{});
    case Activation::kGeluErf: return f(std::integral_constant<Activation, Activation::kGeluErf>{});
    case Activation::kGeluTanh: return f(std::integral_constant<Activation, Activation::kGeluTanh>{});
    case Activation::kSiLU: return f(std::integral_constant<Activation, Activation::kSiLU>{});
    case Activation::kSwiGLU: return f(std::integral_constant<Activation, Activation::kSwiGLU>{});
    default: return f(std::integral_constant<Activation, Activation::kIdentity>{});
  }
}

// Four outputs from their sums when nothing but alpha, a column bias and the activation
// stands between them and D (the short paths of the staged and the decode epilogues);
// `up` holds the SwiGLU up sums and is unused otherwise.
template <Activation kAct>
__device__ __forceinline__ void activate_four(const EpilogueParams& p, const ColumnBias& bias, const float4& gate,
                                              const float4& up, float (&y)[4]) {
  const float g[4] = {gate.x, gate.y, gate.z, gate.w};
  if constexpr (kAct == Activation::kSwiGLU) {
    const float u[4] = {up.x, up.y, up.z, up.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) y[j] = silu(fmaf(p.alpha, g[j], bias.gate[j])) * fmaf(p.alpha, u[j], bias.up[j]);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) y[j] = activate(fmaf(p.alpha, g[j], bias.gate[j]), kAct);
  }
}

// Four finished outputs of one row, `valid` of them inside D, element by element: for
// layouts the vector store cannot take. One dtype switch for the four, not one each.
__device__ __forceinline__ void store_four_scalar(const EpilogueParams& p, int64_t batch, int64_t row, int64_t col,
                                                  const float (&y)[4], int valid) {
  void* d = const_cast<void*>(p.d.ptr);
  const int64_t first = element_offset(p.d, batch, row, col);
  switch (p.d.dtype) {
    case DataType::kBF16:
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (j < valid) static_cast<__nv_bfloat16*>(d)[first + j * p.d.col_stride] = __float2bfloat16_rn(y[j]);
      }
      break;
    case DataType::kF16:
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (j < valid) static_cast<__half*>(d)[first + j * p.d.col_stride] = __float2half_rn(y[j]);
      }
      break;
    default:
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (j < valid) static_cast<float*>(d)[first + j * p.d.col_stride] = y[j];
      }
      break;
  }
}

// The activation of a finish_four instantiation: a compile-time constant in the hot
// epilogues (one loop body per activation, so the instruction cache holds only the one
// that runs), or read from the parameters at run time where the epilogue is cold.
inline constexpr Activation kRuntimeActivation = static_cast<Activation>(-1);

template <Activation kAct>
__device__ __forceinline__ float activate_as(float x, const EpilogueParams& p) {
  if constexpr (kAct == kRuntimeActivation) {
    return activate(x, p.activation);
  } else {
    return activate(x, kAct);
  }
}

// Finishes four outputs (row `row`, output columns col..col+3) from their pre-epilogue
// sums; gate/up hold the SwiGLU halves (up unused otherwise). When p.four_wide, four
// in-bounds columns go out as one store. Everything is inline: an out-of-line call here
// would make ptxas save the caller's live registers (accumulators) around it.
template <Activation kAct = kRuntimeActivation>
__device__ __forceinline__ void finish_four(const EpilogueParams& p, int64_t batch, int64_t row, int64_t col,
                                            const ColumnBias& bias, const float4& gate, const float4& up) {
  const bool swiglu = kAct == kRuntimeActivation ? p.activation == Activation::kSwiGLU : kAct == Activation::kSwiGLU;
  const float g[4] = {gate.x, gate.y, gate.z, gate.w};
  const float u[4] = {up.x, up.y, up.z, up.w};
  const float row_bias = p.bias_mode == BiasMode::kPerRow ? load_float(p.bias, p.bias_dtype, row) : 0.0f;
  float y[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float z = p.alpha * g[j] + bias.gate[j] + row_bias;
    y[j] = swiglu ? silu(z) * (p.alpha * u[j] + bias.up[j] + row_bias) : activate_as<kAct>(z, p);
  }
  const int valid = static_cast<int>(p.n_out - col < 4 ? p.n_out - col : 4);
  // Unrolled with a guard rather than looping to `valid`: a dynamic index would put y in
  // local memory.
  if (p.beta != 0.0f) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (j < valid) y[j] += p.beta * load_float(p.c.ptr, p.c.dtype, element_offset(p.c, batch, row, col + j));
    }
  }
  if (p.four_wide && valid == 4) {
    store_four(p, element_offset(p.d, batch, row, col), y);
  } else {
    store_four_scalar(p, batch, row, col, y, valid);
  }
}

}  // namespace anvil::detail
