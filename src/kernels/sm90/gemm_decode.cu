// Host side of the decode kernels "sm90-decode" and "sm90-decode-r64" (decode_kernel.cuh):
// their configurations and registry entries; the tensor maps and the cluster launch of a
// planned grid are decode_tma_launch.cuh's (the planner, src/plan/, chose the
// configuration and the K split).
#include <cuda_runtime.h>

#include <string>

#include "host/plan_cache.h"
#include "host/registry.h"
#include "kernels/sm90/decode_kernel.cuh"
#include "kernels/sm90/decode_launch.h"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/decode_tma_launch.cuh"
#include "kernels/sm90/tma_operands.h"
#include "plan/launch.h"

namespace anvil::detail {
namespace {

constexpr const char* kName = "sm90-decode";

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_decode(kName, desc, args, true, 128, 256, diag);
}

// ---- sm90-decode-r64: 64 weight rows per CTA ----
//
// Twice the CTAs of sm90-decode for the same weight, so 17-64 tokens on 8192 rows make
// 128 tiles and need no K split - and none of its tail (docs/decode.md). Up to 16
// tokens two CTAs share an SM, so 10240 rows' 160 tiles all run at once, unsplit. The
// planner picks it where its tiles are all resident unsplit (prefers_decode_r64), and
// from 65 tokens in one 96- or 128-token tile, or beyond 128 in 128-token tiles, where they
// cost the SMs' shared memory less than sm90-gemm's or sm90-decode's tiles
// (prefers_rows64_token_tiles, planner.cpp). No SwiGLU:
// a 64-row tile cannot hold a 64-row gate block and its up block.

constexpr const char* kRows64Name = "sm90-decode-r64";
// 32-64 tokens: one CTA per SM, four 64-wide K boxes per stage (three 64 KiB stages). One
// or two boxes per stage (12-16 or 6-8 stages) measured level with it on the H200 and an
// H100 (docs/notes/decode-shared-tiles.md).
template <int kTokenTile>
using Rows64 = DecodeConfig<kTokenTile, 64, 4>;
// Up to 16 tokens: two CTAs per SM, two boxes per stage (five stages of 20 KiB each).
using Rows64TwoPerSm = DecodeConfig<16, 64, 2, true>;
// 65-128 tokens (one token tile) and beyond: 64 weight rows x 96 or 128 tokens, one
// 64-wide K box per stage (9 or 8 stages).
using Rows64Mid = DecodeConfig<96, 64, 1>;
using Rows64Tall = DecodeConfig<128, 64, 1>;
// The same for batch-invariant mode's split weights: each CTA sums the weight's K slices in
// turn (run_sliced_mainloop), as sm90-decode's cluster would across CTAs.
using Rows64TallFolded = DecodeConfig<128, 64, 1, false, 2, false, true>;

Status check_rows64(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_decode(kRows64Name, desc, args, false, 64, 64, diag);
}

}  // namespace

void fill_decode_tma_residency(DeviceInfo* device) {
  for (int s = 1; s <= kMaxClusterSplit; ++s) {
    const auto set = [&](DecodeConfigId id, int ctas) { device->decode_resident[static_cast<int>(id)][s] = ctas; };
    set(DecodeConfigId::kTma8, decode_tma_resident_ctas<DecodeConfig<8>>(kName, s));
    set(DecodeConfigId::kTma16, decode_tma_resident_ctas<DecodeConfig<16>>(kName, s));
    set(DecodeConfigId::kTma32, decode_tma_resident_ctas<DecodeConfig<32>>(kName, s));
    set(DecodeConfigId::kTma64, decode_tma_resident_ctas<DecodeConfig<64>>(kName, s));
    set(DecodeConfigId::kTma96, decode_tma_resident_ctas<DecodeConfig<96>>(kName, s));
    set(DecodeConfigId::kTma128, decode_tma_resident_ctas<DecodeConfig<128>>(kName, s));
    set(DecodeConfigId::kTma256, decode_tma_resident_ctas<DecodeConfig<256>>(kName, s));
    set(DecodeConfigId::kR64x16, decode_tma_resident_ctas<Rows64TwoPerSm>(kRows64Name, s));
    set(DecodeConfigId::kR64x32, decode_tma_resident_ctas<Rows64<32>>(kRows64Name, s));
    set(DecodeConfigId::kR64x64, decode_tma_resident_ctas<Rows64<64>>(kRows64Name, s));
    set(DecodeConfigId::kR64x128, decode_tma_resident_ctas<Rows64Tall>(kRows64Name, s));
    set(DecodeConfigId::kR64x128Folded, decode_tma_resident_ctas<Rows64TallFolded>(kRows64Name, s));
    set(DecodeConfigId::kR64x96, decode_tma_resident_ctas<Rows64Mid>(kRows64Name, s));
  }
}

// The configuration the plan names; the cache key names the configuration.
Status launch_decode_tma_plan(const DecodePlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  switch (plan.config) {
    case DecodeConfigId::kTma8: return launch_decode_config<DecodeConfig<8>>(kName, "sm90-decode/t8", plan, desc, args, diag);
    case DecodeConfigId::kTma16: return launch_decode_config<DecodeConfig<16>>(kName, "sm90-decode/t16", plan, desc, args, diag);
    case DecodeConfigId::kTma32: return launch_decode_config<DecodeConfig<32>>(kName, "sm90-decode/t32", plan, desc, args, diag);
    case DecodeConfigId::kTma64: return launch_decode_config<DecodeConfig<64>>(kName, "sm90-decode/t64", plan, desc, args, diag);
    case DecodeConfigId::kTma96: return launch_decode_config<DecodeConfig<96>>(kName, "sm90-decode/t96", plan, desc, args, diag);
    case DecodeConfigId::kTma128:
      return launch_decode_config<DecodeConfig<128>>(kName, "sm90-decode/t128", plan, desc, args, diag);
    case DecodeConfigId::kTma256:
      return launch_decode_config<DecodeConfig<256>>(kName, "sm90-decode/t256", plan, desc, args, diag);
    case DecodeConfigId::kR64x16:
      return launch_decode_config<Rows64TwoPerSm>(kRows64Name, "sm90-decode-r64/t16", plan, desc, args, diag);
    case DecodeConfigId::kR64x32:
      return launch_decode_config<Rows64<32>>(kRows64Name, "sm90-decode-r64/t32", plan, desc, args, diag);
    case DecodeConfigId::kR64x64:
      return launch_decode_config<Rows64<64>>(kRows64Name, "sm90-decode-r64/t64", plan, desc, args, diag);
    case DecodeConfigId::kR64x128:
      return launch_decode_config<Rows64Tall>(kRows64Name, "sm90-decode-r64/t128", plan, desc, args, diag);
    case DecodeConfigId::kR64x96:
      return launch_decode_config<Rows64Mid>(kRows64Name, "sm90-decode-r64/t96", plan, desc, args, diag);
    case DecodeConfigId::kR64x128Folded:
      return launch_decode_config<Rows64TallFolded>(kRows64Name, "sm90-decode-r64/t128-folded", plan, desc, args,
                                                    diag);
    default: return fail(diag, Status::kInternalError, "%s: not a TMA decode configuration", kName);
  }
}

extern const KernelInfo kSm90DecodeR64{kRows64Name,
                                       "decode with 64 weight rows per CTA (two CTAs per SM up to 16 tokens, four "
                                       "64-wide K boxes per stage from 17, one 96- or 128-token tile from 65, "
                                       "128-token tiles beyond 128): twice "
                                       "sm90-decode's CTAs, so no K split where the weight's 64-row tiles are all "
                                       "resident at once (no SwiGLU)",
                                       check_rows64, launch_family<KernelFamily::kDecodeR64>, nullptr};

extern const KernelInfo kSm90Decode{kName,
                                    "decode: swap-AB (weights on wgmma M, tokens on N = 8..256), K split across a "
                                    "cluster and reduced in rank order through distributed shared memory",
                                    check, launch_family<KernelFamily::kDecodeTma>, nullptr};

}  // namespace anvil::detail
