// Host side of the decode kernels "sm90-decode" and "sm90-decode-r64" (decode_kernel.cuh):
// the tensor maps and the cluster launch of a planned grid (the planner, src/plan/, chose
// the configuration and the K split).
#include <cuda_runtime.h>

#include <string>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm90/decode_kernel.cuh"
#include "kernels/sm90/decode_launch.h"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/tma_operands.h"
#include "plan/launch.h"

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

// One configuration's launch of a planned grid.
template <class Config>
Status launch_config(const char* name, const char* config_key, const DecodePlan& plan, const GemmDesc& desc,
                     const GemmArgs& args, Diagnostic* diag) {
  return cached_decode_launch<DecodeLaunch>(
      name, config_key, decode_kernel_for<Config>(desc.a.dtype), Config::kThreads, decode_smem_bytes<Config>(), plan,
      desc, args, diag,
      [&](DecodeLaunch* out) { return build_decode_launch<Config>(desc, args, decode_grid(plan), out, diag); });
}

// ---- sm90-decode-r64: 64 weight rows per CTA ----
//
// Twice the CTAs of sm90-decode for the same weight, so 17-64 tokens on 8192 rows make
// 128 tiles and need no K split - and none of its tail (docs/decode.md, session 14). Up
// to 16 tokens two CTAs share an SM, so 10240 rows' 160 tiles all run at once, unsplit
// (session 15). The planner picks it where its tiles are all resident unsplit
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

Status check_rows64(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_decode(kRows64Name, desc, args, false, 64, 64, diag);
}

}  // namespace

void fill_decode_tma_residency(DeviceInfo* device) {
  for (int s = 1; s <= kMaxClusterSplit; ++s) {
    const auto set = [&](DecodeConfigId id, int ctas) { device->decode_resident[static_cast<int>(id)][s] = ctas; };
    set(DecodeConfigId::kTma8, resident_ctas<DecodeConfig<8>>(kName, s));
    set(DecodeConfigId::kTma16, resident_ctas<DecodeConfig<16>>(kName, s));
    set(DecodeConfigId::kTma32, resident_ctas<DecodeConfig<32>>(kName, s));
    set(DecodeConfigId::kTma64, resident_ctas<DecodeConfig<64>>(kName, s));
    set(DecodeConfigId::kTma96, resident_ctas<DecodeConfig<96>>(kName, s));
    set(DecodeConfigId::kTma128, resident_ctas<DecodeConfig<128>>(kName, s));
    set(DecodeConfigId::kTma256, resident_ctas<DecodeConfig<256>>(kName, s));
    set(DecodeConfigId::kR64x16, resident_ctas<Rows64TwoPerSm>(kRows64Name, s));
    set(DecodeConfigId::kR64x32, resident_ctas<Rows64<32>>(kRows64Name, s));
    set(DecodeConfigId::kR64x64, resident_ctas<Rows64<64>>(kRows64Name, s));
  }
}

// The configuration the plan names; the cache key names the configuration.
Status launch_decode_tma_plan(const DecodePlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  switch (plan.config) {
    case DecodeConfigId::kTma8: return launch_config<DecodeConfig<8>>(kName, "sm90-decode/t8", plan, desc, args, diag);
    case DecodeConfigId::kTma16: return launch_config<DecodeConfig<16>>(kName, "sm90-decode/t16", plan, desc, args, diag);
    case DecodeConfigId::kTma32: return launch_config<DecodeConfig<32>>(kName, "sm90-decode/t32", plan, desc, args, diag);
    case DecodeConfigId::kTma64: return launch_config<DecodeConfig<64>>(kName, "sm90-decode/t64", plan, desc, args, diag);
    case DecodeConfigId::kTma96: return launch_config<DecodeConfig<96>>(kName, "sm90-decode/t96", plan, desc, args, diag);
    case DecodeConfigId::kTma128:
      return launch_config<DecodeConfig<128>>(kName, "sm90-decode/t128", plan, desc, args, diag);
    case DecodeConfigId::kTma256:
      return launch_config<DecodeConfig<256>>(kName, "sm90-decode/t256", plan, desc, args, diag);
    case DecodeConfigId::kR64x16:
      return launch_config<Rows64TwoPerSm>(kRows64Name, "sm90-decode-r64/t16", plan, desc, args, diag);
    case DecodeConfigId::kR64x32:
      return launch_config<Rows64<32>>(kRows64Name, "sm90-decode-r64/t32", plan, desc, args, diag);
    case DecodeConfigId::kR64x64:
      return launch_config<Rows64<64>>(kRows64Name, "sm90-decode-r64/t64", plan, desc, args, diag);
    default: return fail(diag, Status::kInternalError, "%s: not a TMA decode configuration", kName);
  }
}

namespace {
// The registry entries run the planner with the family forced.
Status launch_family(KernelFamily family, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  PlanOverrides overrides;
  overrides.family = family;
  LaunchPlan plan;
  const Status s = plan_for(desc, &args, &overrides, &plan, diag);
  return s != Status::kSuccess ? s : launch_decode_tma_plan(plan.decode, desc, args, diag);
}
Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_family(KernelFamily::kDecodeTma, desc, args, diag);
}
Status launch_rows64(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_family(KernelFamily::kDecodeR64, desc, args, diag);
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
