// Host side of "sm90-decode-ldg" and "sm90-decode-ldg-r64" (decode_ldg_kernel.cuh): the
// decode kernel that reads its weight through the load path. Same grid as sm90-decode
// (decode_plan.h), one CTA per SM, so its K split fills one wave (choose_single_wave_split);
// no tensor maps, so a plan is only the split and the parameter block.
#include <cuda_runtime.h>

#include <mutex>
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

// CTAs of one configuration that fit on the GPU at once in clusters of `splits`.
template <class Config>
int resident_ctas(const char* name, int splits) {
  return decode_resident_ctas(name, ldg_kernel<Config, sm90::Input::kBF16>(), Config::kThreads,
                              ldg_decode_smem_bytes<Config>(), splits);
}

int resident_ctas_for(int token_tile, int splits) {
  return token_tile <= Ldg8::kTokenTile ? resident_ctas<Ldg8>(kName, splits) : resident_ctas<Ldg16>(kName, splits);
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

// One configuration's launch under kernel `name`: smallest_tile and resident_ctas feed the
// split planning (decode_plan.h), in tiles of the configuration's rows.
template <class Config, class ResidentCtas>
Status plan_and_launch(const char* name, int smallest_tile, ResidentCtas resident_ctas, const GemmDesc& desc,
                       const GemmArgs& args, Diagnostic* diag) {
  constexpr int kTokenTile = Config::kTokenTile;
  constexpr int kSmem = ldg_decode_smem_bytes<Config>();
  auto kernel = kernel_for<Config>(desc.a.dtype);
  // The plan cache keys on the configuration too; formatted once, not on every call (a
  // configuration serves one kernel name).
  static const std::string plan_name = std::string(name) + "/t" + std::to_string(kTokenTile) + "/k" +
                                       std::to_string(Config::kStepK) + "/s" + std::to_string(Config::kSubslices);
  LdgDecodeLaunch launch;
  const Status s = find_or_build_plan(plan_name.c_str(), desc, args, &launch, diag, [&](LdgDecodeLaunch* out) {
    *out = build_launch<Config>(desc, args,
                                plan_decode(desc, kTokenTile, smallest_tile, resident_ctas, true, Config::kBlockM));
    return set_dynamic_smem(kernel, kSmem, name, diag);
  });
  if (s != Status::kSuccess) return s;
  return launch_decode_grid(name, kernel, launch.params, launch.plan, Config::kThreads, kSmem, args.stream, diag);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return ldg_token_tile(desc.m) == 8
             ? plan_and_launch<Ldg8>(kName, kSmallestTokenTile, resident_ctas_for, desc, args, diag)
             : plan_and_launch<Ldg16>(kName, kSmallestTokenTile, resident_ctas_for, desc, args, diag);
}

// ---- sm90-decode-ldg-r64: 64 weight rows per CTA, three or four warpgroups along K ----
//
// Twice the load-path kernel's CTAs for the same weight, so 1-24 tokens on 8192 rows make
// 128 tiles and need no K split - and none of its cluster tail (docs/decode.md, sessions
// 15 and 17). Up to 8 tokens each warpgroup streams what it streams in Ldg8 (64 rows, a
// quarter of the tile's K in 128-wide steps, three stages); 16- and 32-token tiles take
// three warpgroups. The dispatcher picks it where its tiles fill one wave
// (prefers_decode_ldg_r64). More than 32 tokens take several 32-wide tiles, each
// re-reading the weight (correct, but the dispatcher never sends them here). No SwiGLU: a
// 64-row tile cannot hold a 64-row gate block and its up block.

constexpr const char* kRows64Name = "sm90-decode-ldg-r64";
using LdgRows64 = LdgDecodeConfig<8, 128, 4, 64>;
// 9-32 tokens: three warpgroups along K, so each keeps three 128-wide stages (four would
// leave two). Measured against four warpgroups in 64-wide steps, which fit five stages (16
// x 8192 x 8192, H200, docs/worklog.md session 17): 33.7 against 35.3 us - the wider steps
// matter more than the fourth ring, as in the 128-row kernel (session 7).
template <int kTokenTile>
using LdgRows64ThreeRings = LdgDecodeConfig<kTokenTile, 128, 3, 64>;
constexpr int rows64_token_tile(int64_t m) { return m <= 8 ? 8 : m <= 16 ? 16 : 32; }

int rows64_resident_ctas_for(int token_tile, int splits) {
  switch (token_tile) {
    case 8: return resident_ctas<LdgRows64>(kRows64Name, splits);
    case 16: return resident_ctas<LdgRows64ThreeRings<16>>(kRows64Name, splits);
    default: return resident_ctas<LdgRows64ThreeRings<32>>(kRows64Name, splits);
  }
}

Status check_rows64(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_decode(kRows64Name, desc, args, false, 64, LdgRows64ThreeRings<32>::kTokenTile, diag);
}

template <class Config>
Status launch_rows64_config(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return plan_and_launch<Config>(kRows64Name, LdgRows64::kTokenTile, rows64_resident_ctas_for, desc, args, diag);
}

Status launch_rows64(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  switch (rows64_token_tile(desc.m)) {
    case 8: return launch_rows64_config<LdgRows64>(desc, args, diag);
    case 16: return launch_rows64_config<LdgRows64ThreeRings<16>>(desc, args, diag);
    default: return launch_rows64_config<LdgRows64ThreeRings<32>>(desc, args, diag);
  }
}

}  // namespace

DecodeResidency decode_ldg_residency() {
  const auto query = [] {
    DecodeResidency table{};
    for (int s = 1; s <= kDecodeMaxSplit; ++s) table.ctas[s] = resident_ctas<Ldg8>(kName, s);
    return table;
  };
  constexpr int kMaxDevices = 64;
  static DecodeResidency tables[kMaxDevices];
  static std::once_flag once[kMaxDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    cudaGetLastError();
    return query();  // no device to key on: the fallback counts (decode_resident_ctas)
  }
  std::call_once(once[device], [&] { tables[device] = query(); });
  return tables[device];
}

extern const KernelInfo kSm90DecodeLdgR64{kRows64Name,
                                          "decode through the load path with 64 weight rows per CTA and three or "
                                          "four warpgroups along K: twice sm90-decode-ldg's CTAs, so up to 24 tokens "
                                          "need no K split where the weight's 64-row tiles fill one wave (no SwiGLU)",
                                          check_rows64, launch_rows64, nullptr};

extern const KernelInfo kSm90DecodeLdg{kName,
                                       "decode through the load path: every thread cp.asyncs weight and token pieces "
                                       "into per-warpgroup stage rings (no TMA), tokens N = 8 or 16, K split across "
                                       "warpgroups and a cluster, reduced in a fixed order",
                                       check, launch, nullptr};

}  // namespace anvil::detail
