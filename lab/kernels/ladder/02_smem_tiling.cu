// Ladder step 2: shared-memory tiling on the CUDA cores. A 64x64 output tile per block;
// K advances 16 at a time, each step staging a 64x16 slice of A and a 16x64 slice of B in
// shared memory, so every loaded element is reused 64 times from on-chip memory instead of
// being fetched once per output. Each thread accumulates a 4x4 register tile.
//
// Loads go through the generic element accessors, so any layout and stride works; the
// SwiGLU epilogue is refused (its gate/up columns are 64 apart, outside one thread's 4x4).
#include "host/registry.h"
#include "host/validate.h"
#include "kernels/common/epilogue.cuh"

namespace anvil::detail {
namespace {

constexpr int kTile = 64;
constexpr int kTileK = 16;
constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each

struct TiledArgs {
  MatrixRef a, b;
  int64_t k, n;
  EpilogueParams epilogue;
};

__global__ void __launch_bounds__(kThreads) smem_tiled_gemm_kernel(TiledArgs args) {
  // +1 column of padding: threads of a warp read a column of a_tile, which without it
  // would hit the same bank 16 times.
  __shared__ float a_tile[kTile][kTileK + 1];
  __shared__ float b_tile[kTileK][kTile];

  const EpilogueParams& p = args.epilogue;
  const int64_t row0 = blockIdx.y * int64_t{kTile};
  const int64_t col0 = blockIdx.x * int64_t{kTile};
  const int64_t batch = blockIdx.z;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;

  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < args.k; k0 += kTileK) {
    for (int i = threadIdx.x; i < kTile * kTileK; i += kThreads) {
      const int r = i / kTileK, kk = i % kTileK;
      const int64_t gr = row0 + r, gk = k0 + kk;
      a_tile[r][kk] = (gr < p.m && gk < args.k) ? load_float(args.a.ptr, args.a.dtype, element_offset(args.a, batch, gr, gk)) : 0.0f;
    }
    for (int i = threadIdx.x; i < kTile * kTileK; i += kThreads) {
      const int kk = i / kTile, c = i % kTile;
      const int64_t gk = k0 + kk, gc = col0 + c;
      b_tile[kk][c] = (gk < args.k && gc < args.n) ? load_float(args.b.ptr, args.b.dtype, element_offset(args.b, batch, gk, gc)) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float a_frag[4], b_frag[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a_frag[i] = a_tile[ty * 4 + i][kk];
#pragma unroll
      for (int j = 0; j < 4; ++j) b_frag[j] = b_tile[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // Columns tx + 16 j: a warp's 16 tx values write 16 consecutive elements of a row.
      const int64_t row = row0 + ty * 4 + i, col = col0 + tx + 16 * j;
      if (row < p.m && col < p.n_out) finish_element(p, batch, row, col, acc[i][j]);
    }
  }
}

Status check(const GemmDesc& desc, const GemmArgs*, Diagnostic* diag) {
  if (desc.epilogue.activation == Activation::kSwiGLU) {
    return fail(diag, Status::kNotSupported, "ladder-02-smem-tiling: no SwiGLU epilogue");
  }
  if (desc.batch > 65535 || (desc.m + kTile - 1) / kTile > 65535) {
    return fail(diag, Status::kNotSupported, "ladder-02-smem-tiling: grid too large");
  }
  return Status::kSuccess;
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  TiledArgs kernel_args{matrix_ref(args.a, desc.a), matrix_ref(args.b, desc.b), desc.k, desc.n,
                        make_epilogue_params(desc, args)};
  const dim3 grid(static_cast<unsigned>((desc.n + kTile - 1) / kTile), static_cast<unsigned>((desc.m + kTile - 1) / kTile),
                  static_cast<unsigned>(desc.batch));
  smem_tiled_gemm_kernel<<<grid, kThreads, 0, args.stream>>>(kernel_args);
  return check_launch(diag, "ladder-02-smem-tiling");
}

}  // namespace

extern const KernelInfo kLadder02SmemTiling{"ladder-02-smem-tiling",
                                            "CUDA cores, 64x64 shared-memory tiles, 4x4 outputs per thread",
                                            check, launch, nullptr};

}  // namespace anvil::detail
