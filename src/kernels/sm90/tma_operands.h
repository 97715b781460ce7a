// Host-side rules and tensor maps for the TMA + wgmma kernels' operands. These kernels
// read both inputs K-major (A row-major, B column-major: the nn.Linear layout) straight
// from the caller's buffers, which TMA allows only with 16-byte aligned bases and strides.
#pragma once

#include <cuda.h>

#include "anvil/gemm.h"
#include "common/dtype.h"
#include "host/registry.h"
#include "host/tensor_map.h"
#include "kernels/sm90/params.h"

namespace anvil::detail {

struct TmaLadderLimits {
  bool batch = false;    // strided batch supported
  bool swiglu = false;   // SwiGLU epilogue supported
};

inline Status check_kmajor_tma(const char* name, const GemmDesc& desc, const GemmArgs* args, TmaLadderLimits limits,
                               Diagnostic* diag) {
  if (desc.a.order != Order::kRowMajor || desc.b.order != Order::kColMajor) {
    return fail(diag, Status::kNotSupported, "%s: needs A row-major and B column-major (K-major operands)", name);
  }
  if (!limits.batch && desc.batch != 1) return fail(diag, Status::kNotSupported, "%s: no strided batch", name);
  if (!limits.swiglu && desc.epilogue.activation == Activation::kSwiGLU) {
    return fail(diag, Status::kNotSupported, "%s: no SwiGLU epilogue", name);
  }
  if (desc.k == 0) return fail(diag, Status::kNotSupported, "%s: K = 0 has no tensor-core work", name);
  if ((desc.m + 127) / 128 > 65535) return fail(diag, Status::kNotSupported, "%s: m too large for the grid", name);
  if (desc.a.ld % 8 != 0 || desc.b.ld % 8 != 0) {
    return fail(diag, Status::kMisalignedOperand, "%s: TMA needs leading dimensions that are multiples of 8 elements (lda=%lld ldb=%lld)",
                name, static_cast<long long>(desc.a.ld), static_cast<long long>(desc.b.ld));
  }
  if (desc.batch > 1 && (desc.a.batch_stride % 8 != 0 || desc.b.batch_stride % 8 != 0)) {
    return fail(diag, Status::kMisalignedOperand, "%s: batch strides must be multiples of 8 elements", name);
  }
  if (args != nullptr && (reinterpret_cast<uintptr_t>(args->a) % 16 != 0 || reinterpret_cast<uintptr_t>(args->b) % 16 != 0)) {
    return fail(diag, Status::kMisalignedOperand, "%s: TMA needs 16-byte aligned A and B", name);
  }
  return Status::kSuccess;
}

// What the warp-specialized kernels (sm90-gemm's configurations, sm90-decode) take in place:
// the TMA rules above with strided batches, per-matrix batch strides (a zero stride would
// broadcast one matrix; sm90-gemm repacks such operands first) and sizes whose tile
// coordinates fit the 32-bit TMA and scheduler arithmetic.
inline Status check_warp_specialized(const char* name, const GemmDesc& desc, const GemmArgs* args, bool swiglu,
                                     Diagnostic* diag) {
  const Status s = check_kmajor_tma(name, desc, args, TmaLadderLimits{true, swiglu}, diag);
  if (s != Status::kSuccess) return s;
  if (desc.batch > 1 && (desc.a.batch_stride == 0 || desc.b.batch_stride == 0)) {
    return fail(diag, Status::kNotSupported, "%s: broadcast (zero batch stride) operands are not supported", name);
  }
  if (desc.k > (int64_t{1} << 30) || desc.m > (int64_t{1} << 30) || desc.n > (int64_t{1} << 30)) {
    return fail(diag, Status::kNotSupported, "%s: sizes beyond 2^30", name);
  }
  return Status::kSuccess;
}

}  // namespace anvil::detail

namespace anvil::detail {

// Whether D's description lets it leave through TMA stores: a 16-bit row-major output
// whose row (and batch) pitches are 16-byte multiples, and whose rows are too. A TMA store
// clips a box at the tensor's inner extent only to 16-byte granules of the global
// address: with N = 10 halves and ld = 16 it also wrote columns 10-15 of every row (H200,
// anvil-fuzz seed 20261132 #237; the same is reported for Triton's descriptor stores on
// the H100, triton-lang/triton#11583) - the padding, or another tensor's columns when D is
// a slice. A launch also needs a 16-byte aligned base, a configuration with the TMA-store
// epilogue and no epilogue math.
inline bool d_layout_tma_storable(const GemmDesc& desc) {
  return desc.d.dtype != DataType::kF32 && desc.d.order == Order::kRowMajor && desc.d.ld % 8 == 0 && desc.n % 8 == 0 &&
         (desc.batch == 1 || desc.d.batch_stride % 8 == 0);
}

// The same for a column-major D (a transposed launch's D^T): its columns are the lines.
inline bool d_layout_tma_storable_by_columns(const GemmDesc& desc) {
  return desc.d.dtype != DataType::kF32 && desc.d.order == Order::kColMajor && desc.d.ld % 8 == 0 &&
         desc.m % 8 == 0 && (desc.batch == 1 || desc.d.batch_stride % 8 == 0);
}

// A K-major operand (rows x k, `layout.ld` elements between rows; `batches` matrices
// `layout.batch_stride` apart) as boxes of box_rows rows, one 128-byte swizzle row wide:
// 64 bf16/fp16 or 128 fp8 values.
inline Status encode_kmajor_sw128(CUtensorMap* map, const void* base, const MatrixLayout& layout, int64_t k,
                                  int64_t rows, int box_rows, Diagnostic* diag, int64_t batches = 1) {
  TensorMapRequest req;
  req.base = base;
  req.dtype = layout.dtype;
  req.inner = static_cast<uint64_t>(k);
  req.outer = static_cast<uint64_t>(rows);
  req.line_stride = static_cast<uint64_t>(layout.ld);
  req.box_inner = static_cast<uint32_t>(128 / dtype_size(layout.dtype));
  req.box_outer = static_cast<uint32_t>(box_rows);
  req.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  req.batches = static_cast<uint64_t>(batches);
  req.batch_stride = static_cast<uint64_t>(layout.batch_stride);
  return encode_tensor_map(map, req, diag);
}

// DeepSeek-V3 block scales of A (ScaleMode::kBlock128): the fp32 [k_blocks, rows] array as
// one line of floats, so that one TMA box - a tile's box_rows rows of one K block, from the
// 16-byte boundary at or below the first (params.h, kScaleBoxLead) - lands in shared memory
// with each stage (producer.cuh, StageScalesA). The map starts at the 16-byte boundary at
// or below scale_a (TMA's base alignment); *shift is the floats from there to scale_a,
// which every coordinate adds. The up to 3 floats before scale_a that a first box reads
// lie in the same allocation (device allocations start on 256-byte boundaries, so a
// pointer off a 16-byte one is inside one) and are skipped as the box's lead. Boxes that
// run past the end read zeros; their rows are never stored.
inline Status encode_block_scales_a(CUtensorMap* map, const float* scale_a, int64_t k_blocks, int64_t rows,
                                    int box_rows, int* shift, Diagnostic* diag) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(scale_a);
  *shift = static_cast<int>(address % 16 / sizeof(float));
  TensorMapRequest req;
  req.base = reinterpret_cast<const void*>(address - address % 16);
  req.dtype = DataType::kF32;
  req.inner = static_cast<uint64_t>(*shift) + static_cast<uint64_t>(k_blocks) * static_cast<uint64_t>(rows);
  req.outer = 1;
  req.line_stride = (req.inner + 3) / 4 * 4;
  req.box_inner = static_cast<uint32_t>(box_rows + kScaleBoxLead);
  req.box_outer = 1;
  req.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  if (req.inner >= (uint64_t{1} << 31)) {
    return fail(diag, Status::kNotSupported, "block scales of A: %llu floats, more than 2^31 (TMA coordinates)",
                static_cast<unsigned long long>(req.inner));
  }
  return encode_tensor_map(map, req, diag);
}

}  // namespace anvil::detail
