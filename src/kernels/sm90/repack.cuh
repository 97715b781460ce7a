// Repacking an operand into the workspace as a K-major matrix with a 16-byte-aligned
// leading dimension: how the TMA kernels serve layouts and strides that TMA cannot read
// directly (MN-major operands, leading dimensions that are not multiples of 8 elements,
// misaligned base pointers, broadcast batches). One pass over the operand: read once,
// written once, then the GEMM reads the copy.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "host/registry.h"

namespace anvil::detail {

// Source element (batch, row, k) of a 16-bit operand: offset batch*bs + row*rs + k*ks.
struct RepackSource {
  const uint16_t* ptr;
  int64_t row_stride, k_stride, batch_stride;
};

constexpr int kRepackTile = 32;

// dst[batch][row][k] (leading dimension dst_ld, batch stride dst_batch) = source(batch, row, k).
// When the source is K-contiguous the tile is copied straight through; otherwise the warp
// reads along rows (the contiguous direction) into shared memory and writes along K, so
// both global sides stay coalesced.
__global__ void __launch_bounds__(256) repack_kmajor_kernel(RepackSource src, uint16_t* dst, int64_t dst_ld,
                                                            int64_t dst_batch, int64_t rows, int64_t k) {
  __shared__ uint16_t tile[kRepackTile][kRepackTile + 1];  // +1: column reads hit distinct banks
  const int64_t k0 = blockIdx.x * int64_t{kRepackTile};
  const int64_t r0 = blockIdx.y * int64_t{kRepackTile};
  const int64_t batch = blockIdx.z;
  const int tx = threadIdx.x % kRepackTile, ty = threadIdx.x / kRepackTile;  // 32 x 8
  const uint16_t* base = src.ptr + batch * src.batch_stride;
  uint16_t* out = dst + batch * dst_batch;
  const bool k_contiguous = src.k_stride == 1;
#pragma unroll
  for (int j = 0; j < kRepackTile; j += 8) {
    const int64_t r = k_contiguous ? r0 + ty + j : r0 + tx;
    const int64_t kk = k_contiguous ? k0 + tx : k0 + ty + j;
    if (r < rows && kk < k) {
      const uint16_t v = base[r * src.row_stride + kk * src.k_stride];
      if (k_contiguous) {
        tile[ty + j][tx] = v;
      } else {
        tile[tx][ty + j] = v;
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kRepackTile; j += 8) {
    const int64_t r = r0 + ty + j, kk = k0 + tx;
    if (r < rows && kk < k) out[r * dst_ld + kk] = tile[ty + j][tx];
  }
}

inline Status launch_repack(const RepackSource& src, uint16_t* dst, int64_t dst_ld, int64_t dst_batch, int64_t rows,
                            int64_t k, int64_t batch, cudaStream_t stream, Diagnostic* diag) {
  const dim3 grid(static_cast<unsigned>((k + kRepackTile - 1) / kRepackTile),
                  static_cast<unsigned>((rows + kRepackTile - 1) / kRepackTile), static_cast<unsigned>(batch));
  repack_kmajor_kernel<<<grid, 256, 0, stream>>>(src, dst, dst_ld, dst_batch, rows, k);
  return check_launch(diag, "sm90-gemm repack");
}

}  // namespace anvil::detail
