// Host side of the decode kernel "sm90-decode" (decode_kernel.cuh): the token tile and
// the K split per problem (decode_plan.h), the tensor maps, the cluster launch.
#include <cuda_runtime.h>

#include <string>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm90/decode_kernel.cuh"
#include "kernels/sm90/decode_launch.h"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {
namespace {

constexpr const char* kName = "sm90-decode";

template <int kTokenTile, sm90::Input kInput>
constexpr auto decode_kernel() {
  return sm90_decode_kernel<DecodeConfig<kTokenTile>, kInput>;
}

template <int kTokenTile>
int resident_ctas(int splits) {
  using Config = DecodeConfig<kTokenTile>;
  return decode_resident_ctas(kName, decode_kernel<kTokenTile, sm90::Input::kBF16>(), Config::kThreads,
                              decode_smem_bytes<Config>(), splits);
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

template <class Config>
Status build_decode_launch(const GemmDesc& desc, const GemmArgs& args, const DecodeLaunchPlan& plan, DecodeLaunch* out,
                           Diagnostic* diag) {
  constexpr int kTokenTile = Config::kTokenTile;
  DecodeParams params{};
  params.epilogue = make_epilogue_params(desc, args);
  params.k_tiles = plan.k_tiles;
  params.token_tiles = plan.token_tiles;
  params.batched = desc.batch > 1;

  static_assert(Config::kBlockK % 64 == 0, "whole 64-wide boxes: one 128-byte swizzle row of K each");
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
  // The plan cache keys on the configuration too; formatted once, not on every call.
  static const std::string plan_name = std::string(kName) + "/t" + std::to_string(kTokenTile);
  DecodeLaunch launch;
  // The split planning, tensor maps and the kernel's shared-memory limit are per-problem
  // work: done once, then cached.
  const Status s = find_or_build_plan(plan_name.c_str(), desc, args, &launch, diag, [&](DecodeLaunch* out) {
    const DecodeLaunchPlan plan = plan_decode(desc, kTokenTile, kDecodeTokenTiles[0], resident_ctas_for);
    const Status built = build_decode_launch<Config>(desc, args, plan, out, diag);
    return built != Status::kSuccess ? built : set_dynamic_smem(kernel, kSmem, kName, diag);
  });
  if (s != Status::kSuccess) return s;

  return launch_decode_grid(kName, kernel, launch.params, launch.plan, Config::kThreads, kSmem, args.stream, diag);
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

// ---- sm90-decode-r64: 64 weight rows per CTA, four K boxes per stage ----
//
// Twice the CTAs of sm90-decode for the same weight, so 17-64 tokens on 8192 rows make
// 128 tiles and need no K split - and none of its tail (docs/decode.md, session 14). The
// dispatcher picks it where its tiles fill one wave unsplit (prefers_decode_r64). No
// SwiGLU: a 64-row tile cannot hold a 64-row gate block and its up block.

constexpr const char* kRows64Name = "sm90-decode-r64";
template <int kTokenTile>
using Rows64 = DecodeConfig<kTokenTile, 64, 4>;
constexpr int kRows64TokenTiles[] = {32, 64};

template <int kTokenTile, sm90::Input kInput>
constexpr auto rows64_kernel() {
  return sm90_decode_kernel<Rows64<kTokenTile>, kInput>;
}

int rows64_resident_ctas_for(int token_tile, int splits) {
  const auto resident = [&](auto kernel, int smem) {
    return decode_resident_ctas(kRows64Name, kernel, Rows64<64>::kThreads, smem, splits);
  };
  return token_tile <= 32 ? resident(rows64_kernel<32, sm90::Input::kBF16>(), decode_smem_bytes<Rows64<32>>())
                          : resident(rows64_kernel<64, sm90::Input::kBF16>(), decode_smem_bytes<Rows64<64>>());
}

Status check_rows64(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  const Status s = check_warp_specialized(kRows64Name, desc, args, false, diag);
  if (s != Status::kSuccess) return s;
  if ((desc.n + 63) / 64 > 65535 || (desc.m + 63) / 64 * desc.batch > 65535) {
    return fail(diag, Status::kNotSupported, "%s: too many tiles for the grid (features / 64 and tokens / 64 x batch must stay below 65536)", kRows64Name);
  }
  return Status::kSuccess;
}

template <int kTokenTile>
Status plan_and_launch_rows64(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  using Config = Rows64<kTokenTile>;
  constexpr int kSmem = decode_smem_bytes<Config>();
  auto kernel = desc.a.dtype == DataType::kBF16 ? rows64_kernel<kTokenTile, sm90::Input::kBF16>()
                                                : rows64_kernel<kTokenTile, sm90::Input::kF16>();
  static const std::string plan_name = std::string(kRows64Name) + "/t" + std::to_string(kTokenTile);
  DecodeLaunch launch;
  const Status s = find_or_build_plan(plan_name.c_str(), desc, args, &launch, diag, [&](DecodeLaunch* out) {
    const DecodeLaunchPlan plan = plan_decode(desc, kTokenTile, kRows64TokenTiles[0], rows64_resident_ctas_for,
                                              false, Config::kBlockM, Config::kBlockK);
    const Status built = build_decode_launch<Config>(desc, args, plan, out, diag);
    return built != Status::kSuccess ? built : set_dynamic_smem(kernel, kSmem, kRows64Name, diag);
  });
  if (s != Status::kSuccess) return s;
  return launch_decode_grid(kRows64Name, kernel, launch.params, launch.plan, Config::kThreads, kSmem, args.stream,
                            diag);
}

Status launch_rows64(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return desc.m <= 32 ? plan_and_launch_rows64<32>(desc, args, diag) : plan_and_launch_rows64<64>(desc, args, diag);
}

}  // namespace

extern const KernelInfo kSm90DecodeR64{kRows64Name,
                                       "decode with 64 weight rows per CTA and four 64-wide K boxes per stage: "
                                       "twice sm90-decode's CTAs, so 17-64 tokens need no K split where the weight's "
                                       "64-row tiles fill one wave (no SwiGLU)",
                                       check_rows64, launch_rows64, nullptr};

extern const KernelInfo kSm90Decode{kName,
                                    "decode: swap-AB (weights on wgmma M, tokens on N = 8..256), K split across a "
                                    "cluster and reduced in rank order through distributed shared memory",
                                    check, launch, nullptr};

}  // namespace anvil::detail
