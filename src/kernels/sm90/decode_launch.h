// Host pieces both decode kernels share (gemm_decode.cu, gemm_decode_ldg.cu): how many CTAs
// fit at once, the operand and grid checks, and the launch of a plan's grid.
#pragma once

#include <cuda_runtime.h>

#include "host/registry.h"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {

// CTAs of one kernel configuration that fit on the current GPU at once in clusters of
// `splits`, from the occupancy API (a cluster needs `splits` SMs of one GPC with room).
// Asked only while a launch plan is built (plan_cache.h), so not cached here. When the
// query fails: one CTA per SM of an H200.
template <class Kernel>
int decode_resident_ctas(const char* name, Kernel kernel, int threads, int smem_bytes, int splits) {
  int found = 0;
  if (set_dynamic_smem(kernel, smem_bytes, name, nullptr) == Status::kSuccess) {
    found = max_active_clusters(kernel, threads, smem_bytes, splits);
  }
  cudaGetLastError();  // a failed query must not surface as the caller's launch error
  return found > 0 ? found * splits : 132 / splits * splits;
}

// The warp-specialized kernels' operand rules, and a grid that fits: features / rows and
// tokens / the widest token tile (x batch) below 65536.
inline Status check_decode(const char* name, const GemmDesc& desc, const GemmArgs* args, bool swiglu, int rows,
                           int widest_token_tile, Diagnostic* diag) {
  const Status s = check_warp_specialized(name, desc, args, swiglu, diag);
  if (s != Status::kSuccess) return s;
  if ((desc.n + rows - 1) / rows > 65535 || (desc.m + widest_token_tile - 1) / widest_token_tile * desc.batch > 65535) {
    return fail(diag, Status::kNotSupported,
                "%s: too many tiles for the grid (features / %d and tokens / %d x batch must stay below 65536)", name,
                rows, widest_token_tile);
  }
  return Status::kSuccess;
}

// Grid (splits, feature tiles, token tiles x batch) in clusters of (splits, 1, 1).
template <class Kernel, class Params>
Status launch_decode_grid(const char* name, Kernel kernel, const Params& params, const DecodeLaunchPlan& plan,
                          int threads, int smem_bytes, cudaStream_t stream, Diagnostic* diag) {
  cudaLaunchAttribute attribute;
  const dim3 grid(static_cast<unsigned>(plan.split.splits), static_cast<unsigned>(plan.feature_tiles),
                  static_cast<unsigned>(plan.token_tiles * plan.batch));
  const cudaLaunchConfig_t config =
      cluster_launch_config(&attribute, grid, threads, smem_bytes, plan.split.splits, stream);
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, params);
  if (e != cudaSuccess) return fail(diag, Status::kCudaError, "%s: launch failed: %s", name, cudaGetErrorName(e));
  return check_launch(diag, name);
}

}  // namespace anvil::detail
