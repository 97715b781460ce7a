// The fused SwiGLU epilogue: one GEMM computes the gate and up projections from one
// weight whose rows interleave the two in blocks of kSwiGLUBlock, and the epilogue
// writes silu(gate) * up, n/2 columns wide.
//
// Fused weight W[2F, K] (row-major, nn.Linear convention), F = intermediate size:
//   rows [128 i, 128 i + 64)       = W_gate rows [64 i, 64 i + 64)
//   rows [128 i + 64, 128 i + 128) = W_up   rows [64 i, 64 i + 64)
// so output column j pairs GEMM columns gate_column(j) and up_column(j). 64-wide blocks
// keep each gate/up pair inside one output tile of every kernel, and inside one thread's
// accumulator fragment on Hopper, so the epilogue needs no data exchange. F must be a
// multiple of 64.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "anvil/gemm.h"

namespace anvil {

inline constexpr int64_t kSwiGLUBlock = 64;

constexpr int64_t swiglu_gate_column(int64_t j) { return (j / kSwiGLUBlock) * 2 * kSwiGLUBlock + j % kSwiGLUBlock; }
constexpr int64_t swiglu_up_column(int64_t j) { return swiglu_gate_column(j) + kSwiGLUBlock; }

// Builds the fused weight from W_gate[F, K] and W_up[F, K] (row-major, leading dimension K)
// into w_fused[2F, K]. Enqueued on stream; no allocation.
Status build_swiglu_weight(const void* w_gate, const void* w_up, void* w_fused, int64_t f,
                           int64_t k, DataType dtype, cudaStream_t stream,
                           Diagnostic* diag = nullptr);

}  // namespace anvil
