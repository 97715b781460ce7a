// Host side of "sm90-decode-ldg" and "sm90-decode-ldg-r64" (decode_ldg_kernel.cuh): the
// decode kernel that reads its weight through the load path. Same grid as sm90-decode
// (decode_plan.h), one CTA per SM, so its K split fills one wave (choose_single_wave_split);
// no tensor maps, so a plan is only the split and the parameter block.
#include <cuda_runtime.h>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm90/decode_launch.h"
#include "kernels/sm90/decode_ldg_kernel.cuh"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/tma_operands.h"
#include "plan/launch.h"

namespace anvil::detail {
namespace {

constexpr const char* kName = "sm90-decode-ldg";

// The two configurations, one per token tile; more tokens take several 16-wide tiles
// (correct, but each re-reads the weight: the planner sends those to sm90-decode).
// Stage shapes from a sweep of them (docs/decode.md): with 8 tokens, 128-wide K steps
// and two warpgroups per row half (three stages each) beat 64-wide steps (five stages) by
// 1-4% on the 8192- and 28672-row weights - longer runs of each weight row per request
// burst. With 16 tokens the wider steps leave only two stages; 64-wide ones are kept
// (16 x 10240 x 8192: 46.1 us against 48.3 with 128-wide steps and one warpgroup per half).
using Ldg8 = LdgDecodeConfig<8, 128, 2>;
using Ldg16 = LdgDecodeConfig<16, 64, 2>;

template <class Config, sm90::Input kInput>
constexpr auto ldg_kernel() {
  return sm90_decode_ldg_kernel<Config, kInput>;
}

// CTAs of one configuration that fit on the GPU at once in clusters of `splits`.
template <class Config>
int resident_ctas(const char* name, int splits) {
  return decode_resident_ctas(name, ldg_kernel<Config, sm90::Input::kBF16>(), Config::kThreads,
                              ldg_decode_smem_bytes<Config>(), splits);
}

// The same operand limits as sm90-decode (K-major operands, 16-byte aligned bases and
// pitches, so every 16-byte cp.async source is aligned), whose checks are TMA's.
Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_decode(kName, desc, args, true, 128, Ldg16::kTokenTile, diag);
}

struct LdgDecodeLaunch {
  LdgDecodeParams params;
  DecodeLaunchPlan plan;
};

template <class Config>
LdgDecodeLaunch build_launch(const GemmDesc& desc, const GemmArgs& args, const DecodeLaunchPlan& plan) {
  LdgDecodeLaunch out{};
  LdgDecodeParams& p = out.params;
  // GEMM B (column-major: row j of W is K-contiguous) is the weight; A (row-major) the tokens.
  p.w = static_cast<const uint16_t*>(args.b);
  p.x = static_cast<const uint16_t*>(args.a);
  p.ld_w = desc.b.ld, p.ld_x = desc.a.ld;
  p.batch_w = desc.batch > 1 ? desc.b.batch_stride : 0;
  p.batch_x = desc.batch > 1 ? desc.a.batch_stride : 0;
  p.features = desc.n, p.tokens = desc.m;
  p.k = static_cast<int>(desc.k);
  p.steps = static_cast<int>((desc.k + Config::kStepK - 1) / Config::kStepK);
  p.most_steps = most_k_steps(plan.split.splits * Config::kSubslices, p.steps);
  p.token_tiles = plan.token_tiles;
  p.epilogue = make_epilogue_params(desc, args);
  out.plan = plan;
  return out;
}

template <class Config>
auto kernel_for(DataType input) {
  return input == DataType::kBF16 ? ldg_kernel<Config, sm90::Input::kBF16>() : ldg_kernel<Config, sm90::Input::kF16>();
}

// One configuration's launch of a planned grid (no tensor maps: the cached plan is the
// parameter block and the grid).
template <class Config>
Status launch_config(const char* name, const char* config_key, const DecodePlan& plan, const GemmDesc& desc,
                     const GemmArgs& args, Diagnostic* diag) {
  return cached_decode_launch<LdgDecodeLaunch>(name, config_key, kernel_for<Config>(desc.a.dtype), Config::kThreads,
                                               ldg_decode_smem_bytes<Config>(), plan, desc, args, diag,
                                               [&](LdgDecodeLaunch* out) {
                                                 *out = build_launch<Config>(desc, args, decode_grid(plan));
                                                 return Status::kSuccess;
                                               });
}

// ---- sm90-decode-ldg-r64: 64 weight rows per CTA, three or four warpgroups along K ----
//
// Twice the load-path kernel's CTAs for the same weight, so 1-24 tokens on 8192 rows make
// 128 tiles and need no K split - and none of its cluster tail (docs/decode.md). Up to 8 tokens each warpgroup streams what it streams in Ldg8 (64 rows, a
// quarter of the tile's K in 128-wide steps, three stages); 16- and 32-token tiles take
// three warpgroups. The planner picks it where its tiles fill one wave
// (prefers_decode_ldg_r64). More than 32 tokens take several 32-wide tiles, each
// re-reading the weight (correct, but the planner never sends them here). No SwiGLU: a
// 64-row tile cannot hold a 64-row gate block and its up block.

constexpr const char* kRows64Name = "sm90-decode-ldg-r64";
using LdgRows64 = LdgDecodeConfig<8, 128, 4, 64>;
// 9-32 tokens: three warpgroups along K, so each keeps three 128-wide stages (four would
// leave two). Measured against four warpgroups in 64-wide steps, which fit five stages (16
// x 8192 x 8192, H200): 33.7 against 35.3 us - the wider steps matter more than the
// fourth ring, as in the 128-row kernel.
template <int kTokenTile>
using LdgRows64ThreeRings = LdgDecodeConfig<kTokenTile, 128, 3, 64>;

Status check_rows64(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_decode(kRows64Name, desc, args, false, 64, LdgRows64ThreeRings<32>::kTokenTile, diag);
}

}  // namespace

void fill_decode_ldg_residency(DeviceInfo* device) {
  for (int s = 1; s <= kMaxClusterSplit; ++s) {
    const auto set = [&](DecodeConfigId id, int ctas) { device->decode_resident[static_cast<int>(id)][s] = ctas; };
    set(DecodeConfigId::kLdg8, resident_ctas<Ldg8>(kName, s));
    set(DecodeConfigId::kLdg16, resident_ctas<Ldg16>(kName, s));
    set(DecodeConfigId::kLdgR64x8, resident_ctas<LdgRows64>(kRows64Name, s));
    set(DecodeConfigId::kLdgR64x16, resident_ctas<LdgRows64ThreeRings<16>>(kRows64Name, s));
    set(DecodeConfigId::kLdgR64x32, resident_ctas<LdgRows64ThreeRings<32>>(kRows64Name, s));
  }
}

// The configuration the plan names; the cache key names the configuration.
Status launch_decode_ldg_plan(const DecodePlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  switch (plan.config) {
    case DecodeConfigId::kLdg8: return launch_config<Ldg8>(kName, "sm90-decode-ldg/t8/k128/s2", plan, desc, args, diag);
    case DecodeConfigId::kLdg16: return launch_config<Ldg16>(kName, "sm90-decode-ldg/t16/k64/s2", plan, desc, args, diag);
    case DecodeConfigId::kLdgR64x8:
      return launch_config<LdgRows64>(kRows64Name, "sm90-decode-ldg-r64/t8", plan, desc, args, diag);
    case DecodeConfigId::kLdgR64x16:
      return launch_config<LdgRows64ThreeRings<16>>(kRows64Name, "sm90-decode-ldg-r64/t16", plan, desc, args, diag);
    case DecodeConfigId::kLdgR64x32:
      return launch_config<LdgRows64ThreeRings<32>>(kRows64Name, "sm90-decode-ldg-r64/t32", plan, desc, args, diag);
    default: return fail(diag, Status::kInternalError, "%s: not a load-path decode configuration", kName);
  }
}

extern const KernelInfo kSm90DecodeLdgR64{kRows64Name,
                                          "decode through the load path with 64 weight rows per CTA and three or "
                                          "four warpgroups along K: twice sm90-decode-ldg's CTAs, so up to 24 tokens "
                                          "need no K split where the weight's 64-row tiles fill one wave (no SwiGLU)",
                                          check_rows64, launch_family<KernelFamily::kDecodeLdgR64>, nullptr};

extern const KernelInfo kSm90DecodeLdg{kName,
                                       "decode through the load path: every thread cp.asyncs weight and token pieces "
                                       "into per-warpgroup stage rings (no TMA), tokens N = 8 or 16, K split across "
                                       "warpgroups and a cluster, reduced in a fixed order",
                                       check, launch_family<KernelFamily::kDecodeLdg>, nullptr};

}  // namespace anvil::detail
