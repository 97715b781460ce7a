// Host side of the Blackwell GEMM, shared by its production and ladder configurations:
// what a configuration supports, its tensor maps, the grid (one cluster per tile for CLC
// scheduling and the plain grid, co-resident clusters for the static persistent one) and
// the cluster launch. The operand rules, tensor-map encoding, plan cache and launch
// helpers are the Hopper kernels' (tma_operands.h, the launch helpers in registry.h).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm100/gemm_kernel.cuh"
#include "kernels/sm100/sm100_api.h"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {

template <class Config>
constexpr int sm100_smem_bytes() {
  return static_cast<int>(sizeof(Sm100Shared<Config>)) + 1024;  // + alignment slack
}

template <class Config>
Status sm100_check(const char* name, const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  const int cc = device_compute_capability();
  if (cc != 100) {
    return fail(diag, Status::kNotSupported,
                "%s: needs an sm_100 GPU (compute capability 10.0, B200/GB200); this device is %d.%d", name, cc / 10,
                cc % 10);
  }
  // SwiGLU needs the fused weight's 128-column blocks whole in a tile: 256 columns are two.
  const Status s = check_warp_specialized(name, desc, args, true, diag);
  if (s != Status::kSuccess) return s;
  const int64_t tiles = ((desc.m + Config::kBlockM - 1) / Config::kBlockM) *
                        ((desc.n + Config::kBlockN - 1) / Config::kBlockN) * desc.batch;
  // CLC launches one cluster per tile: the grid's x extent bounds the tile count.
  if (tiles * Config::kCtaGroup > (int64_t{1} << 31) - 1) {
    return fail(diag, Status::kNotSupported, "%s: too many tiles", name);
  }
  return Status::kSuccess;
}

// An operand's tensor map: 64-element boxes with the 128-byte swizzle, or (unswizzled
// ladder configurations) 8-element boxes without it, one per 8 K (gemm_kernel.cuh,
// CtaPairStageLoads).
template <class Config>
Status encode_sm100_operand(CUtensorMap* map, const void* base, const MatrixLayout& layout, int64_t k, int64_t rows,
                            int box_rows, Diagnostic* diag, int64_t batches) {
  if constexpr (Config::kSwizzle128B) {
    return encode_kmajor_sw128(map, base, layout, k, rows, box_rows, diag, batches);
  } else {
    TensorMapRequest req;
    req.base = base;
    req.dtype = layout.dtype;
    req.inner = static_cast<uint64_t>(k);
    req.outer = static_cast<uint64_t>(rows);
    req.line_stride = static_cast<uint64_t>(layout.ld);
    req.box_inner = 8;
    req.box_outer = static_cast<uint32_t>(box_rows);
    req.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    req.batches = static_cast<uint64_t>(batches);
    req.batch_stride = static_cast<uint64_t>(layout.batch_stride);
    return encode_tensor_map(map, req, diag);
  }
}

template <class Config>
Status build_sm100_params(const GemmDesc& desc, const GemmArgs& args, Sm100Params* out, Diagnostic* diag) {
  Sm100Params params{};
  params.epilogue = make_epilogue_params(desc, args);
  params.k_tiles = static_cast<int>((desc.k + Config::kBlockK - 1) / Config::kBlockK);
  params.batched = desc.batch > 1;
  params.gemm_columns = desc.n;
  const int tiles_m = static_cast<int>((desc.m + Config::kBlockM - 1) / Config::kBlockM);
  const int tiles_n = static_cast<int>((desc.n + Config::kBlockN - 1) / Config::kBlockN);
  params.scheduler = TileScheduler{tiles_m, tiles_n, static_cast<int>(desc.batch), 1, 1, Config::kBand};
  // Each CTA loads its own rows: 128 of A, and its share of the tile's N columns of B.
  Status s = encode_sm100_operand<Config>(&params.map_a, args.a, desc.a, desc.k, desc.m, Config::kRowsPerCta, diag,
                                          desc.batch);
  if (s != Status::kSuccess) return s;
  s = encode_sm100_operand<Config>(&params.map_b, args.b, desc.b, desc.k, desc.n, Config::kBRowsPerCta, diag,
                                   desc.batch);
  if (s != Status::kSuccess) return s;
  *out = params;
  return Status::kSuccess;
}

struct Sm100Launch {
  Sm100Params params;
  int grid_ctas = 0;
};

// kBf16Only: only the bf16 instance exists (ladder configurations, to keep build time).
template <class Config, bool kBf16Only = false>
auto sm100_kernel_for(DataType input) {
  if constexpr (kBf16Only) {
    (void)input;
    return sm100_gemm_kernel<Config, sm100::MmaInput::kBF16>;
  } else {
    return input == DataType::kBF16 ? sm100_gemm_kernel<Config, sm100::MmaInput::kBF16>
                                    : sm100_gemm_kernel<Config, sm100::MmaInput::kF16>;
  }
}

template <class Config, bool kBf16Only>
Status build_sm100_launch(const char* name, const GemmDesc& desc, const GemmArgs& args, Sm100Launch* out,
                          Diagnostic* diag) {
  Status s = build_sm100_params<Config>(desc, args, &out->params, diag);
  if (s != Status::kSuccess) return s;
  auto kernel = sm100_kernel_for<Config, kBf16Only>(desc.a.dtype);
  s = set_dynamic_smem(kernel, sm100_smem_bytes<Config>(), name, diag);
  if (s != Status::kSuccess) return s;
  int clusters = out->params.scheduler.total_cluster_tiles();
  if constexpr (Config::kSchedule == Sm100Schedule::kStaticPersistent) {
    const int resident = max_active_clusters(kernel, Config::kThreads, sm100_smem_bytes<Config>(), Config::kCtaGroup);
    if (resident <= 0) return fail(diag, Status::kCudaError, "%s: the cluster occupancy query failed", name);
    clusters = std::min(clusters, resident);
  }
  out->grid_ctas = clusters * Config::kCtaGroup;
  return Status::kSuccess;
}

template <class Config, bool kBf16Only>
Status sm100_launch(const char* name, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  Sm100Launch launch;
  const Status s = find_or_build_plan(name, desc, args, &launch, diag, [&](Sm100Launch* plan) {
    return build_sm100_launch<Config, kBf16Only>(name, desc, args, plan, diag);
  });
  if (s != Status::kSuccess) return s;
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config =
      cluster_launch_config(&attribute, dim3(static_cast<unsigned>(launch.grid_ctas)), Config::kThreads,
                            sm100_smem_bytes<Config>(), Config::kCtaGroup, args.stream);
  const cudaError_t e = cudaLaunchKernelEx(&config, sm100_kernel_for<Config, kBf16Only>(desc.a.dtype), launch.params);
  if (e != cudaSuccess) return fail(diag, Status::kCudaError, "%s: launch failed: %s", name, cudaGetErrorName(e));
  return check_launch(diag, name);
}

template <class Config, const char* kName, bool kBf16Only = false>
struct Sm100Kernel {
  static_assert(sizeof(Sm100Shared<Config>) + 1024 <= sm100::budget::kSmemPerBlockBytes,
                "the stage ring must fit one CTA's shared memory");
  static Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
    if (kBf16Only && desc.a.dtype != DataType::kBF16) {
      return fail(diag, Status::kNotSupported, "%s: bf16 inputs only (a ladder configuration)", kName);
    }
    if (!Config::kEpiloguePerActivation && desc.epilogue.activation != Activation::kIdentity) {
      return fail(diag, Status::kNotSupported, "%s: no activation (a ladder configuration, built for the plain GEMM)",
                  kName);
    }
    return sm100_check<Config>(kName, desc, args, diag);
  }
  static Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
    return sm100_launch<Config, kBf16Only>(kName, desc, args, diag);
  }
  static constexpr KernelInfo info(const char* summary) { return {kName, summary, check, launch, nullptr}; }
};

}  // namespace anvil::detail
