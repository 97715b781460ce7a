// Host side of the warp-specialized Hopper GEMM: what a configuration supports, the
// tensor maps, the grid (persistent or one CTA per tile) and the cluster launch.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "arch/sm90/swizzle_alignment.cuh"
#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm90/gemm_kernel.cuh"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {

struct LaunchPolicy {
  bool persistent = false;  // grid = co-resident clusters, each looping over tiles
  int band = 1;             // raster band height in cluster rows (TileScheduler)
  // The batch index is a split-K slice of one problem (split_k.h): block scales are then
  // read from the slice's first K block on (Fp8Scales::k_blocks_per_batch).
  bool batch_is_k_slice = false;
  // KernelSpec::fold_k_slices configurations: the slices each CTA cuts its tiles' K into
  // (batch-invariant mode's split of the weight; 1: whole K).
  int k_slices = 1;
};

// What every sm90-gemm configuration runs with: persistent, bands of 8 cluster rows.
inline constexpr LaunchPolicy kSm90GemmPolicy{true, 8};

template <class Config>
constexpr int sm90_smem_bytes() {
  return static_cast<int>(sizeof(SharedStorage<Config>)) + sm90::kSwizzleAtomBytes;  // + alignment slack
}

template <class Config>
Status sm90_check(const char* name, const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  const Status s = check_warp_specialized(name, desc, args, Config::kBlockN % 128 == 0, diag);
  if (s != Status::kSuccess) return s;
  const int64_t tiles = ((desc.m + Config::kBlockM - 1) / Config::kBlockM) * ((desc.n + Config::kBlockN - 1) / Config::kBlockN) * desc.batch;
  if (tiles > (int64_t{1} << 30)) return fail(diag, Status::kNotSupported, "%s: too many tiles", name);
  return Status::kSuccess;
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The parameter block of one launch: the fused epilogue's arguments, the tile scheduler
// and the tensor maps (driver calls, microseconds: the plan cache keeps the result).
template <class Config>
Status build_sm90_params(LaunchPolicy policy, const GemmDesc& desc, const GemmArgs& args, Sm90Params* out,
                         Diagnostic* diag) {
  Sm90Params params{};
  params.epilogue = make_epilogue_params(desc, args);
  params.k_tiles = static_cast<int>((desc.k + Config::kBlockK - 1) / Config::kBlockK);
  // A slice of no k-tiles would free a stage it never took: at most one slice per k-tile.
  params.k_slices = Config::kFoldKSlices ? std::clamp(policy.k_slices, 1, params.k_tiles) : 1;
  params.batched = desc.batch > 1;
  const int tiles_m = static_cast<int>((desc.m + Config::kBlockM - 1) / Config::kBlockM);
  const int tiles_n = static_cast<int>((desc.n + Config::kBlockN - 1) / Config::kBlockN);
  params.scheduler =
      TileScheduler{tiles_m, tiles_n, static_cast<int>(desc.batch), Config::kClusterM, Config::kClusterN, policy.band};

  static_assert(Config::kRowBytes == 128, "one 128-byte swizzle row of K per box");
  // With multicast each CTA of the cluster fetches its slice of the shared tile's rows.
  Status s = encode_kmajor_sw128(&params.map_a, args.a, desc.a, desc.k, desc.m, Config::kBlockM / Config::kSlicesA,
                                 diag, desc.batch);
  if (s != Status::kSuccess) return s;
  s = encode_kmajor_sw128(&params.map_b, args.b, desc.b, desc.k, desc.n, Config::kBlockN / Config::kSlicesB, diag,
                          desc.batch);
  if (s != Status::kSuccess) return s;
  if constexpr (Config::kSkipDeadBoxes) {
    constexpr int kSliceRowsA = Config::kBlockM / Config::kSlicesA;
    s = encode_kmajor_sw128(&params.map_a_short[0], args.a, desc.a, desc.k, desc.m, kRowGroup, diag, desc.batch);
    if (s == Status::kSuccess && kHasHalfBox<kSliceRowsA>) {
      s = encode_kmajor_sw128(&params.map_a_short[1], args.a, desc.a, desc.k, desc.m, kSliceRowsA / 2, diag,
                              desc.batch);
    }
    if (s != Status::kSuccess) return s;
  }

  // The direct store paths take the plain GEMM into a row-major half output; anything
  // with epilogue math, fp32 or another layout is staged (epilogue_store.cuh).
  const bool half_row_major = plain_epilogue(desc) && desc.d.dtype != DataType::kF32 && desc.d.order == Order::kRowMajor;
  params.pair_store = half_row_major && desc.d.ld % 2 == 0 && (desc.batch == 1 || desc.d.batch_stride % 2 == 0) &&
                      reinterpret_cast<uintptr_t>(args.d) % 4 == 0;
  params.scales.a = args.scale_a;
  params.scales.b = args.scale_b;
  params.scales.mode = desc.scales;
  params.scales.rows = desc.m;
  params.scales.cols = desc.n;
  // A slice covers k_tiles whole 128-wide K blocks (the planner cuts K only at block
  // boundaries), slice after slice.
  params.scales.k_blocks_per_batch = policy.batch_is_k_slice ? params.k_tiles : 0;
  params.scales.k_blocks = policy.batch_is_k_slice ? int64_t{params.k_tiles} * desc.batch : params.k_tiles;
  if constexpr (Config::kBlockScales) {
    s = encode_block_scales_a(&params.map_scales_a, args.scale_a, params.scales.k_blocks, desc.m, Config::kBlockM,
                              &params.scales.a_map_shift, diag);
    if (s != Status::kSuccess) return s;
  }
  const bool tma_storable_d = Config::kTmaStore && plain_epilogue(desc) && aligned16(args.d);
  // The column store moves whole 32-column boxes: the widths between the 32-column steps
  // (step16_width_or) store a column-major D through the staged path instead.
  params.tma_store_columns = Config::kElementBytes == 2 && Config::kBlockN % kColumnStoreBoxColumns == 0 &&
                             tma_storable_d && d_layout_tma_storable_by_columns(desc);
  params.tma_store = params.tma_store_columns || (tma_storable_d && d_layout_tma_storable(desc));
  if (params.tma_store) {
    TensorMapRequest store;
    store.base = args.d;
    store.dtype = desc.d.dtype;
    const uint64_t rows = static_cast<uint64_t>(desc.m), cols = static_cast<uint64_t>(params.epilogue.n_out);
    store.inner = params.tma_store_columns ? rows : cols;
    store.outer = params.tma_store_columns ? cols : rows;
    store.line_stride = static_cast<uint64_t>(desc.d.ld);
    store.box_inner = 64;
    store.box_outer = params.tma_store_columns ? kColumnStoreBoxColumns : 64;
    store.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    store.batches = static_cast<uint64_t>(desc.batch);
    store.batch_stride = static_cast<uint64_t>(desc.d.batch_stride);
    s = encode_tensor_map(&params.map_d, store, diag);
    if (s != Status::kSuccess) return s;
  }
  *out = params;
  return Status::kSuccess;
}

// Everything one launch needs besides the stream: cached per problem (plan_cache.h).
struct Sm90Launch {
  Sm90Params params;
  int grid_ctas = 0;
};

// The kernel for the inputs' types. 8-bit configurations carry e4m3 x e4m3, and the mixed
// e5m2 pairs only where Config::kMixedFp8 says so (each pair is a kernel of its own).
template <class Config>
auto sm90_kernel_for(const GemmDesc& desc) {
  if constexpr (Config::kElementBytes == 1) {
    if constexpr (Config::kMixedFp8) {
      if (desc.a.dtype == DataType::kE5M2) return sm90_gemm_kernel<Config, sm90::Input::kE5M2xE4M3>;
      if (desc.b.dtype == DataType::kE5M2) return sm90_gemm_kernel<Config, sm90::Input::kE4M3xE5M2>;
    }
    return sm90_gemm_kernel<Config, sm90::Input::kE4M3>;
  } else {
    return desc.a.dtype == DataType::kBF16 ? sm90_gemm_kernel<Config, sm90::Input::kBF16>
                                           : sm90_gemm_kernel<Config, sm90::Input::kF16>;
  }
}

// Stream-K configurations: the grid is every resident CTA (the point is to keep SMs busy
// that whole tiles would leave idle), capped by what the workspace holds; the flags come
// first in it, then one parked partial tile per CTA.
template <class Config>
Status plan_stream_k_launch(const char* name, const GemmArgs& args, int resident, Sm90Launch* out, Diagnostic* diag) {
  constexpr int kTileElements = Config::kBlockM * Config::kBlockN;
  int ctas = resident;
  while (ctas > 0 && stream_k_flag_bytes(ctas, Config::kConsumers) + stream_k_partial_bytes(ctas, kTileElements) >
                         args.workspace_bytes) {
    --ctas;
  }
  if (ctas == 0 || args.workspace == nullptr) {
    return fail(diag, Status::kWorkspaceTooSmall, "%s: stream-K needs workspace for at least one CTA", name);
  }
  if (!aligned16(args.workspace)) {
    return fail(diag, Status::kMisalignedOperand, "%s: stream-K's partials need a 16-byte aligned workspace", name);
  }
  Sm90Params& params = out->params;
  params.stream_k = plan_stream_k(params.scheduler.total_cluster_tiles(), params.k_tiles, ctas, kStreamKMinIterations);
  auto* base = static_cast<uint8_t*>(args.workspace);
  params.stream_k_workspace.flags = reinterpret_cast<int*>(base);
  params.stream_k_workspace.partials = reinterpret_cast<float*>(base + stream_k_flag_bytes(ctas, Config::kConsumers));
  out->grid_ctas = ctas;
  return Status::kSuccess;
}

// The per-problem host work: parameters and tensor maps, the kernel's shared-memory limit
// on this device, and the grid - for a persistent launch as many clusters as fit at once
// (an occupancy query, microseconds, hence cached with the rest).
template <class Config>
Status build_sm90_launch(const char* name, LaunchPolicy policy, const GemmDesc& desc, const GemmArgs& args,
                         Sm90Launch* out, Diagnostic* diag) {
  Status s = build_sm90_params<Config>(policy, desc, args, &out->params, diag);
  if (s != Status::kSuccess) return s;
  auto kernel = sm90_kernel_for<Config>(desc);
  s = set_dynamic_smem(kernel, sm90_smem_bytes<Config>(), name, diag);
  if (s != Status::kSuccess) return s;
  int clusters = out->params.scheduler.total_cluster_tiles();
  if (policy.persistent || Config::kStreamK) {
    const int resident = max_active_clusters(kernel, Config::kThreads, sm90_smem_bytes<Config>(), Config::kClusterCtas);
    if (resident <= 0) return fail(diag, Status::kCudaError, "%s: the cluster occupancy query failed", name);
    if constexpr (Config::kStreamK) return plan_stream_k_launch<Config>(name, args, resident, out, diag);
    clusters = std::min(clusters, resident);
  }
  out->grid_ctas = clusters * Config::kClusterCtas;
  return Status::kSuccess;
}

template <class Config>
Status sm90_launch(const char* name, LaunchPolicy policy, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  // Keyed by the configuration as well as the kernel name: one name launches several.
  // Formatted when this thread's name or policy for the configuration changes, not on
  // every call (registry names are string literals, so the pointer identifies the name).
  struct PlanName {
    const char* name = nullptr;
    LaunchPolicy policy{};
    char text[2 * PlanKey::kMaxKernelName] = {};
  };
  thread_local PlanName plan_name;
  if (plan_name.name != name || plan_name.policy.persistent != policy.persistent ||
      plan_name.policy.band != policy.band || plan_name.policy.batch_is_k_slice != policy.batch_is_k_slice ||
      plan_name.policy.k_slices != policy.k_slices) {
    // A folded-slice configuration's slice count: its parameters depend on it.
    char folded[24] = "";
    if constexpr (Config::kFoldKSlices) std::snprintf(folded, sizeof(folded), "/folded-k%d", policy.k_slices);
    std::snprintf(plan_name.text, sizeof(plan_name.text), "%s/%dx%dx%d/c%dx%d/s%d/p%d/%s%s%s%s", name, Config::kBlockM,
                  Config::kBlockN, Config::kStages, Config::kClusterM, Config::kClusterN,
                  int(Config::kTmaStore) * Config::kStoreRounds, int(policy.persistent) * policy.band,
                  Config::kStreamK ? "sk" : Config::kPingPong ? "pp" : "coop",
                  Config::kBlockScales ? "/fp8-block" : Config::kElementBytes == 1 ? "/fp8" : "",
                  policy.batch_is_k_slice ? "/k-slices" : "", folded);
    plan_name.name = name;
    plan_name.policy = policy;
  }
  Sm90Launch launch;
  const Status s = find_or_build_plan(plan_name.text, desc, args, &launch, diag, [&](Sm90Launch* plan) {
    return build_sm90_launch<Config>(name, policy, desc, args, plan, diag);
  });
  if (s != Status::kSuccess) return s;

  if constexpr (Config::kStreamK) {
    // The flags say "parked in this launch": they start at zero every time.
    const cudaError_t e = cudaMemsetAsync(launch.params.stream_k_workspace.flags, 0,
                                          stream_k_flag_bytes(launch.grid_ctas, Config::kConsumers), args.stream);
    if (e != cudaSuccess) return fail(diag, Status::kCudaError, "%s: clearing the stream-K flags failed: %s", name, cudaGetErrorName(e));
  }
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = cluster_launch_config(&attribute, dim3(static_cast<unsigned>(launch.grid_ctas)),
                                                          Config::kThreads, sm90_smem_bytes<Config>(),
                                                          Config::kClusterCtas, args.stream);
  const cudaError_t e = cudaLaunchKernelEx(&config, sm90_kernel_for<Config>(desc), launch.params);
  if (e != cudaSuccess) {
    return fail(diag, Status::kCudaError, "%s: launch failed: %s", name, cudaGetErrorName(e));
  }
  return check_launch(diag, name);
}

// One registry entry's check and launch for one configuration: what each ladder step and
// ablation file instantiates, next to the comment that says what the step changes.
template <class Config, bool kPersistent, int kBand, const char* kName>
struct Sm90Kernel {
  static Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
    return sm90_check<Config>(kName, desc, args, diag);
  }
  static Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
    return sm90_launch<Config>(kName, LaunchPolicy{kPersistent, kBand}, desc, args, diag);
  }
  // The registry entry (no workspace: these configurations read their operands in place).
  static constexpr KernelInfo info(const char* summary) { return {kName, summary, check, launch, nullptr}; }
};

}  // namespace anvil::detail
