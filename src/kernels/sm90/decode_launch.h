// Host pieces both decode kernels share (gemm_decode.cu, gemm_decode_ldg.cu): how many CTAs
// fit at once, the operand and grid checks, and the cached launch of a plan's grid.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "host/validate.h"
#include "kernels/sm90/decode_plan.h"
#include "plan/planner.h"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {

// CTAs of one kernel configuration that fit on the current GPU at once in clusters of
// `splits`, from the occupancy API (a cluster needs `splits` SMs of one GPC with room).
// Asked once per device when its DeviceInfo is filled (plan/launch.h). When the query
// fails: one CTA per SM, in whole clusters.
template <class Kernel>
int decode_resident_ctas(const char* name, Kernel kernel, int threads, int smem_bytes, int splits) {
  int found = 0;
  if (set_dynamic_smem(kernel, smem_bytes, name, nullptr) == Status::kSuccess) {
    found = max_active_clusters(kernel, threads, smem_bytes, splits);
  }
  cudaGetLastError();  // a failed query must not surface as the caller's launch error
  return found > 0 ? found * splits : device_sm_count() / splits * splits;
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

// The grid of a planned decode launch, in launch_decode_grid's terms.
inline DecodeLaunchPlan decode_grid(const DecodePlan& plan) {
  DecodeLaunchPlan grid;
  grid.token_tile = plan.token_tile;
  grid.batch = plan.batch;
  grid.token_tiles = plan.token_tiles;
  grid.feature_tiles = plan.feature_tiles;
  grid.k_tiles = plan.k_tiles;
  grid.split.splits = plan.splits;
  grid.split.ctas = plan.ctas;
  grid.split.waves = plan.waves;
  grid.k_slices = plan.k_slices;
  return grid;
}

// One decode configuration's launch of a planned grid: the parameter block (tensor maps
// included: driver calls) and the kernel's shared-memory limit are per-problem work, built
// once by build(Launch*) -> Status and cached under the configuration and its split; then
// the grid is launched. Launch holds `params` (the kernel's argument) and `plan` (the grid).
template <class Launch, class Kernel, class Build>
Status cached_decode_launch(const char* name, const char* config_key, Kernel kernel, int threads, int smem_bytes,
                            const DecodePlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag,
                            Build build) {
  // The split (and a folded configuration's slices) is part of the key: a forced split must
  // not read another split's parameters.
  char plan_name[PlanKey::kMaxKernelName];
  std::snprintf(plan_name, sizeof(plan_name), "%s/s%d/f%d", config_key, plan.splits, plan.k_slices);
  Launch launch;
  const Status s = find_or_build_plan(plan_name, desc, args, &launch, diag, [&](Launch* out) {
    const Status built = build(out);
    return built != Status::kSuccess ? built : set_dynamic_smem(kernel, smem_bytes, name, diag);
  });
  if (s != Status::kSuccess) return s;
  return launch_decode_grid(name, kernel, launch.params, launch.plan, threads, smem_bytes, args.stream, diag);
}

}  // namespace anvil::detail
