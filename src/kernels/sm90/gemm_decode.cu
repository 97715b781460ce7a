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

// One configuration's kernel for the input dtype.
template <class Config>
auto decode_kernel_for(DataType input) {
  return input == DataType::kBF16 ? sm90_decode_kernel<Config, sm90::Input::kBF16>
                                  : sm90_decode_kernel<Config, sm90::Input::kF16>;
}

// CTAs of one configuration that fit on the GPU at once in clusters of `splits`.
template <class Config>
int resident_ctas(const char* name, int splits) {
  return decode_resident_ctas(name, decode_kernel_for<Config>(DataType::kBF16), Config::kThreads,
                              decode_smem_bytes<Config>(), splits);
}

int resident_ctas_for(int token_tile, int splits) {
  switch (token_tile) {
    case 8: return resident_ctas<DecodeConfig<8>>(kName, splits);
    case 16: return resident_ctas<DecodeConfig<16>>(kName, splits);
    case 32: return resident_ctas<DecodeConfig<32>>(kName, splits);
    case 64: return resident_ctas<DecodeConfig<64>>(kName, splits);
    case 96: return resident_ctas<DecodeConfig<96>>(kName, splits);
    case 128: return resident_ctas<DecodeConfig<128>>(kName, splits);
    default: return resident_ctas<DecodeConfig<256>>(kName, splits);
  }
}

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_decode(kName, desc, args, true, 128, 256, diag);
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

// One configuration's launch under kernel `name`: smallest_tile and resident_ctas feed the
// split planning (decode_plan.h).
template <class Config, class ResidentCtas>
Status plan_and_launch(const char* name, int smallest_tile, ResidentCtas resident_ctas, const GemmDesc& desc,
                       const GemmArgs& args, Diagnostic* diag) {
  constexpr int kSmem = decode_smem_bytes<Config>();
  auto kernel = decode_kernel_for<Config>(desc.a.dtype);
  // The plan cache keys on the configuration too; formatted once, not on every call (a
  // configuration serves one kernel name).
  static const std::string plan_name = std::string(name) + "/t" + std::to_string(Config::kTokenTile);
  DecodeLaunch launch;
  // The split planning, tensor maps and the kernel's shared-memory limit are per-problem
  // work: done once, then cached.
  const Status s = find_or_build_plan(plan_name.c_str(), desc, args, &launch, diag, [&](DecodeLaunch* out) {
    const DecodeLaunchPlan plan = plan_decode(desc, Config::kTokenTile, smallest_tile, resident_ctas, false,
                                              Config::kBlockM, Config::kBlockK);
    const Status built = build_decode_launch<Config>(desc, args, plan, out, diag);
    return built != Status::kSuccess ? built : set_dynamic_smem(kernel, kSmem, name, diag);
  });
  if (s != Status::kSuccess) return s;

  return launch_decode_grid(name, kernel, launch.params, launch.plan, Config::kThreads, kSmem, args.stream, diag);
}

template <int kTokenTile>
Status launch_tile(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return plan_and_launch<DecodeConfig<kTokenTile>>(kName, kDecodeTokenTiles[0], resident_ctas_for, desc, args, diag);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  switch (decode_token_tile(desc.m)) {
    case 8: return launch_tile<8>(desc, args, diag);
    case 16: return launch_tile<16>(desc, args, diag);
    case 32: return launch_tile<32>(desc, args, diag);
    case 64: return launch_tile<64>(desc, args, diag);
    case 96: return launch_tile<96>(desc, args, diag);
    case 128: return launch_tile<128>(desc, args, diag);
    default: return launch_tile<256>(desc, args, diag);
  }
}

// ---- sm90-decode-r64: 64 weight rows per CTA ----
//
// Twice the CTAs of sm90-decode for the same weight, so 17-64 tokens on 8192 rows make
// 128 tiles and need no K split - and none of its tail (docs/decode.md, session 14). Up
// to 16 tokens two CTAs share an SM, so 10240 rows' 160 tiles all run at once, unsplit
// (session 15). The dispatcher picks it where its tiles are all resident unsplit
// (prefers_decode_r64). No SwiGLU: a 64-row tile cannot hold a 64-row gate block and its
// up block.

constexpr const char* kRows64Name = "sm90-decode-r64";
// 32-64 tokens: one CTA per SM, four 64-wide K boxes per stage (a TMA-fed CTA completes
// about one stage per ~0.55 us, so 64 rows need four boxes to stream what 128 rows do
// with one).
template <int kTokenTile>
using Rows64 = DecodeConfig<kTokenTile, 64, 4>;
// Up to 16 tokens: two CTAs per SM, two boxes per stage (five stages of 20 KiB each).
using Rows64TwoPerSm = DecodeConfig<16, 64, 2, true>;
constexpr int kRows64TokenTiles[] = {16, 32, 64};

int rows64_resident_ctas_for(int token_tile, int splits) {
  if (token_tile <= 16) return resident_ctas<Rows64TwoPerSm>(kRows64Name, splits);
  return token_tile <= 32 ? resident_ctas<Rows64<32>>(kRows64Name, splits)
                          : resident_ctas<Rows64<64>>(kRows64Name, splits);
}

Status check_rows64(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_decode(kRows64Name, desc, args, false, 64, 64, diag);
}

Status launch_rows64(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  if (desc.m <= 16) {
    return plan_and_launch<Rows64TwoPerSm>(kRows64Name, kRows64TokenTiles[0], rows64_resident_ctas_for, desc, args,
                                           diag);
  }
  return desc.m <= 32 ? plan_and_launch<Rows64<32>>(kRows64Name, kRows64TokenTiles[0], rows64_resident_ctas_for, desc,
                                                    args, diag)
                      : plan_and_launch<Rows64<64>>(kRows64Name, kRows64TokenTiles[0], rows64_resident_ctas_for, desc,
                                                    args, diag);
}

}  // namespace

extern const KernelInfo kSm90DecodeR64{kRows64Name,
                                       "decode with 64 weight rows per CTA (two CTAs per SM up to 16 tokens, four "
                                       "64-wide K boxes per stage from 17): twice sm90-decode's CTAs, so no K split "
                                       "where the weight's 64-row tiles are all resident at once (no SwiGLU)",
                                       check_rows64, launch_rows64, nullptr};

extern const KernelInfo kSm90Decode{kName,
                                    "decode: swap-AB (weights on wgmma M, tokens on N = 8..256), K split across a "
                                    "cluster and reduced in rank order through distributed shared memory",
                                    check, launch, nullptr};

}  // namespace anvil::detail
