// Quantization of activations to FP8, producing the scales sm90-fp8 reads (gemm.h,
// ScaleMode). Each scale is amax / fmax, fmax the format's largest finite value (448 for
// e4m3, 57344 for e5m2), so the largest magnitude of its group maps to fmax:
//   q = cvt.rn.satfinite(x / scale)    round to nearest (ties to even), saturating to
//                                      +-fmax; NaN stays NaN
//   scale = amax / fmax, or 1 where the group is all zeros (amax = 0)
// x / scale is an IEEE fp32 division. Enqueued on `stream`; no allocation, no sync, so a
// CUDA graph can hold them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "anvil/gemm.h"

namespace anvil {

// Per token, DeepSeek-V3's activation blocks: X[M, K] bf16 or fp16 (row-major, ldx) into
// Q[M, K] e4m3 or e5m2 (row-major, ldq) with one scale per row and 128 columns, written
// M-major: scales[(k / 128) * M + i], ceil(K/128) x M floats - the A scales of
// ScaleMode::kBlock128. K must be a multiple of 16 (as the GEMM's); a last block
// narrower than 128 takes its scale from its own columns.
Status quantize_fp8_blocks(const void* x, DataType x_dtype, int64_t ldx, void* q, DataType q_dtype, int64_t ldq,
                           float* scales, int64_t m, int64_t k, cudaStream_t stream, Diagnostic* diag = nullptr);

// Per tensor: one scale for all of X, written to *scale (one float) - ScaleMode::kTensor's.
// Three launches: *scale is zeroed and receives amax(|X|), Q is written from it, then
// *scale becomes amax / fmax.
Status quantize_fp8_tensor(const void* x, DataType x_dtype, int64_t ldx, void* q, DataType q_dtype, int64_t ldq,
                           float* scale, int64_t m, int64_t k, cudaStream_t stream, Diagnostic* diag = nullptr);

}  // namespace anvil
