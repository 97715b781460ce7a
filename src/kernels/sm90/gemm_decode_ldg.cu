// Host side of "sm90-decode-ldg" (decode_ldg_kernel.cuh): the decode kernel that reads its
// weight through the load path. Same grid as sm90-decode (decode_plan.h), one CTA per SM,
// so its K split fills one wave (choose_single_wave_split); no tensor maps, so a plan is
// only the split and the parameter block.
#include <cuda_runtime.h>

#include <string>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm90/decode_launch.h"
#include "kernels/sm90/decode_ldg_kernel.cuh"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {
namespace {

constexpr const char* kName = "sm90-decode-ldg";

// The two configurations, one per token tile; more tokens take several 16-wide tiles
// (correct, but each re-reads the weight: the dispatcher sends those to sm90-decode).
// Stage shapes from the session-7 sweep (docs/decode.md): with 8 tokens, 128-wide K steps
// and two warpgroups per row half (three stages each) beat 64-wide steps (five stages) by
// 1-4% on the 8192- and 28672-row weights - longer runs of each weight row per request
// burst. With 16 tokens the wider steps leave only two stages; 64-wide ones are kept
// (16 x 10240 x 8192: 46.1 us against 48.3 with 128-wide steps and one warpgroup per half).
using Ldg8 = LdgDecodeConfig<8, 128, 2>;
using Ldg16 = LdgDecodeConfig<16, 64, 2>;
constexpr int kSmallestTokenTile = Ldg8::kTokenTile;
constexpr int ldg_token_tile(int64_t m) { return m <= Ldg8::kTokenTile ? Ldg8::kTokenTile : Ldg16::kTokenTile; }

template <class Config, sm90::Input kInput>
constexpr auto ldg_kernel() {
  return sm90_decode_ldg_kernel<Config, kInput>;
}

template <class Config>
int resident_ctas(int splits) {
  return decode_resident_ctas(kName, ldg_kernel<Config, sm90::Input::kBF16>(), Config::kThreads,
                              ldg_decode_smem_bytes<Config>(), splits);
}

int resident_ctas_for(int token_tile, int splits) {
  return token_tile <= Ldg8::kTokenTile ? resident_ctas<Ldg8>(splits) : resident_ctas<Ldg16>(splits);
}

// The same operand limits as sm90-decode (K-major operands, 16-byte aligned bases and
// pitches, so every 16-byte cp.async source is aligned), whose checks are TMA's.
Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  const Status s = check_warp_specialized(kName, desc, args, true, diag);
  if (s != Status::kSuccess) return s;
  if ((desc.n + 127) / 128 > 65535 || (desc.m + 15) / 16 * desc.batch > 65535) {
    return fail(diag, Status::kNotSupported,
                "%s: too many tiles for the grid (features / 128 and tokens / 16 x batch must stay below 65536)", kName);
  }
  return Status::kSuccess;
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
  p.token_tiles = plan.token_tiles;
  p.epilogue = make_epilogue_params(desc, args);
  out.plan = plan;
  return out;
}

template <class Config>
auto kernel_for(DataType input) {
  return input == DataType::kBF16 ? ldg_kernel<Config, sm90::Input::kBF16>() : ldg_kernel<Config, sm90::Input::kF16>();
}

template <class Config>
Status plan_and_launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  constexpr int kTokenTile = Config::kTokenTile;
  constexpr int kSmem = ldg_decode_smem_bytes<Config>();
  auto kernel = kernel_for<Config>(desc.a.dtype);
  // The plan cache keys on the configuration too; formatted once, not on every call.
  static const std::string plan_name = std::string(kName) + "/t" + std::to_string(kTokenTile) + "/k" +
                                       std::to_string(Config::kStepK) + "/s" + std::to_string(Config::kSubslices);
  LdgDecodeLaunch launch;
  const Status s = find_or_build_plan(plan_name.c_str(), desc, args, &launch, diag, [&](LdgDecodeLaunch* out) {
    *out = build_launch<Config>(desc, args, plan_decode(desc, kTokenTile, kSmallestTokenTile, resident_ctas_for, true));
    return set_dynamic_smem(kernel, kSmem, kName, diag);
  });
  if (s != Status::kSuccess) return s;
  return launch_decode_grid(kName, kernel, launch.params, launch.plan, Config::kThreads, kSmem, args.stream, diag);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return ldg_token_tile(desc.m) == 8 ? plan_and_launch<Ldg8>(desc, args, diag) : plan_and_launch<Ldg16>(desc, args, diag);
}

}  // namespace

extern const KernelInfo kSm90DecodeLdg{kName,
                                       "decode through the load path: every thread cp.asyncs weight and token pieces "
                                       "into per-warpgroup stage rings (no TMA), tokens N = 8 or 16, K split across "
                                       "warpgroups and a cluster, reduced in a fixed order",
                                       check, launch, nullptr};

}  // namespace anvil::detail
