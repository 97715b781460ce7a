// Host side of the decode kernel "sm90-decode" (decode_kernel.cuh): the token tile and
// the K split per problem (decode_plan.h), the tensor maps, the cluster launch.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm90/decode_kernel.cuh"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {
namespace {

constexpr const char* kName = "sm90-decode";

template <int kTokenTile, sm90::Input kInput>
constexpr auto decode_kernel() {
  return sm90_decode_kernel<DecodeConfig<kTokenTile>, kInput>;
}

// CTAs of one configuration that fit on the current GPU at once in clusters of `splits`,
// from the occupancy API (a cluster needs `splits` SMs of one GPC with room). Asked only
// while a launch plan is built (plan_cache.h), so not cached here.
template <int kTokenTile>
int resident_ctas(int splits) {
  using Config = DecodeConfig<kTokenTile>;
  auto kernel = decode_kernel<kTokenTile, sm90::Input::kBF16>();
  constexpr int kSmem = decode_smem_bytes<Config>();
  int found = 0;
  if (set_dynamic_smem(kernel, kSmem, kName, nullptr) == Status::kSuccess) {
    found = max_active_clusters(kernel, Config::kThreads, kSmem, splits);
  }
  cudaGetLastError();  // a failed query must not surface as the caller's launch error
  // Unknown: assume one CTA per SM of an H200.
  return found > 0 ? found * splits : 132 / splits * splits;
}

int resident_ctas_for(int token_tile, int splits) {
  switch (token_tile) {
    case 8: return resident_ctas<8>(splits);
    case 16: return resident_ctas<16>(splits);
    case 32: return resident_ctas<32>(splits);
    case 64: return resident_ctas<64>(splits);
    case 128: return resident_ctas<128>(splits);
    default: return resident_ctas<256>(splits);
  }
}

// A measurement override, not a setting: ANVIL_DECODE_SPLITS=s forces the K split (read
// once per process), so the split choice can be checked against every alternative
// (docs/decode.md). Ignored when out of range.
int forced_splits() {
  static const int forced = [] {
    const char* value = std::getenv("ANVIL_DECODE_SPLITS");
    return value != nullptr ? std::atoi(value) : 0;
  }();
  return forced;
}

struct DecodeLaunchPlan {
  int token_tile = 8;
  int batch = 1;
  int token_tiles = 1;
  int feature_tiles = 1;
  int k_tiles = 1;
  DecodeSplit split;
};

DecodeLaunchPlan plan_decode(const GemmDesc& desc) {
  DecodeLaunchPlan plan;
  plan.token_tile = decode_token_tile(desc.m);
  plan.batch = static_cast<int>(desc.batch);
  plan.token_tiles = static_cast<int>((desc.m + plan.token_tile - 1) / plan.token_tile);
  plan.feature_tiles = static_cast<int>((desc.n + 127) / 128);
  plan.k_tiles = static_cast<int>((desc.k + 63) / 64);
  const int64_t tiles = int64_t{plan.feature_tiles} * plan.token_tiles * desc.batch;
  if (desc.batch_invariant) {
    // The split may depend on the weight (features, K) and the batch count, never on the
    // number of tokens: a token's sums are then added in the same order whatever M is.
    const int64_t weight_tiles = int64_t{plan.feature_tiles} * desc.batch;
    const int splits = choose_decode_split(weight_tiles, plan.k_tiles, true, [](int s) {
                         return resident_ctas_for(kDecodeTokenTiles[0], s);
                       }).splits;
    plan.split = decode_split_cost(tiles, plan.k_tiles, splits, resident_ctas_for(plan.token_tile, splits),
                                   decode_bandwidth_bound(plan.token_tile));
  } else {
    const int token_tile = plan.token_tile;
    plan.split = choose_decode_split(tiles, plan.k_tiles, decode_bandwidth_bound(token_tile),
                                     [token_tile](int s) { return resident_ctas_for(token_tile, s); });
  }
  const int forced = forced_splits();
  if (forced >= 1 && forced <= kDecodeMaxSplit && forced <= plan.k_tiles) {
    plan.split = decode_split_cost(tiles, plan.k_tiles, forced, resident_ctas_for(plan.token_tile, forced),
                                   decode_bandwidth_bound(plan.token_tile));
  }
  return plan;
}

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  const Status s = check_warp_specialized(kName, desc, args, true, diag);
  if (s != Status::kSuccess) return s;
  if ((desc.n + 127) / 128 > 65535 || (desc.m + 255) / 256 * desc.batch > 65535) {
    return fail(diag, Status::kNotSupported, "%s: too many tiles for the grid (features / 128 and tokens / 256 x batch must stay below 65536)", kName);
  }
  return Status::kSuccess;
}

// What one decode launch needs besides the kernel: the parameter block (tensor maps
// included: driver calls, so the plan cache keeps it) and the grid.
struct DecodeLaunch {
  DecodeParams params;
  DecodeLaunchPlan plan;
};

template <int kTokenTile>
Status build_decode_launch(const GemmDesc& desc, const GemmArgs& args, const DecodeLaunchPlan& plan, DecodeLaunch* out,
                           Diagnostic* diag) {
  using Config = DecodeConfig<kTokenTile>;
  DecodeParams params{};
  params.epilogue = make_epilogue_params(desc, args);
  params.k_tiles = plan.k_tiles;
  params.token_tiles = plan.token_tiles;
  params.batched = desc.batch > 1;

  static_assert(Config::kBlockK == 64, "one 128-byte swizzle row of K per box");
  // GEMM B (column-major: row j of W is K-contiguous) is wgmma's A side.
  Status s = encode_kmajor_sw128(&params.map_w, args.b, desc.b, desc.k, desc.n, Config::kBlockM, diag, desc.batch);
  if (s != Status::kSuccess) return s;
  s = encode_kmajor_sw128(&params.map_x, args.a, desc.a, desc.k, desc.m, kTokenTile, diag, desc.batch);
  if (s != Status::kSuccess) return s;
  out->params = params;
  out->plan = plan;
  return Status::kSuccess;
}

template <int kTokenTile>
auto decode_kernel_for(DataType input) {
  return input == DataType::kBF16 ? decode_kernel<kTokenTile, sm90::Input::kBF16>()
                                  : decode_kernel<kTokenTile, sm90::Input::kF16>();
}

template <int kTokenTile>
Status plan_and_launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  using Config = DecodeConfig<kTokenTile>;
  constexpr int kSmem = decode_smem_bytes<Config>();
  auto kernel = decode_kernel_for<kTokenTile>(desc.a.dtype);
  char plan_name[2 * PlanKey::kMaxKernelName];
  std::snprintf(plan_name, sizeof(plan_name), "%s/t%d", kName, kTokenTile);
  DecodeLaunch launch;
  // The split planning, tensor maps and the kernel's shared-memory limit are per-problem
  // work: done once, then cached.
  const Status s = find_or_build_plan(plan_name, desc, args, &launch, diag, [&](DecodeLaunch* out) {
    const Status built = build_decode_launch<kTokenTile>(desc, args, plan_decode(desc), out, diag);
    return built != Status::kSuccess ? built : set_dynamic_smem(kernel, kSmem, kName, diag);
  });
  if (s != Status::kSuccess) return s;

  const DecodeLaunchPlan& plan = launch.plan;
  cudaLaunchAttribute attribute;
  const dim3 grid(static_cast<unsigned>(plan.split.splits), static_cast<unsigned>(plan.feature_tiles),
                  static_cast<unsigned>(plan.token_tiles * plan.batch));
  const cudaLaunchConfig_t config =
      cluster_launch_config(&attribute, grid, Config::kThreads, kSmem, plan.split.splits, args.stream);
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, launch.params);
  if (e != cudaSuccess) return fail(diag, Status::kCudaError, "%s: launch failed: %s", kName, cudaGetErrorName(e));
  return check_launch(diag, kName);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  switch (decode_token_tile(desc.m)) {
    case 8: return plan_and_launch<8>(desc, args, diag);
    case 16: return plan_and_launch<16>(desc, args, diag);
    case 32: return plan_and_launch<32>(desc, args, diag);
    case 64: return plan_and_launch<64>(desc, args, diag);
    case 128: return plan_and_launch<128>(desc, args, diag);
    default: return plan_and_launch<256>(desc, args, diag);
  }
}

}  // namespace

extern const KernelInfo kSm90Decode{kName,
                                    "decode: swap-AB (weights on wgmma M, tokens on N = 8..256), K split across a "
                                    "cluster and reduced in rank order through distributed shared memory",
                                    check, launch, nullptr};

}  // namespace anvil::detail
