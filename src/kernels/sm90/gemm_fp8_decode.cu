// sm90-fp8-decode: the TMA-fed decode kernel (decode_kernel.cuh) with e4m3 inputs.
// Swap-AB puts 128 rows of the e4m3 weight W[N, K] on wgmma's M side and the tokens of
// X[M, K] on its N side - wgmma reads 8-bit operands K-major only, and both are. A stage is
// one 128-byte box per row: 128 values of K, the 16 KiB of weight a 16-bit stage holds for
// 64. Per-tensor and row/column scales multiply the cluster's total before the epilogue
// (split_k_reduce.cuh, Fp8SumScales). The planner chose the configuration and the K split
// (fp8_decode_plan.h); only the configurations it can return are instantiated.
#include <cuda_runtime.h>

#include "common/dtype.h"
#include "host/registry.h"
#include "kernels/sm90/decode_kernel.cuh"
#include "kernels/sm90/decode_launch.h"
#include "kernels/sm90/decode_tma_launch.cuh"
#include "kernels/sm90/fp8_decode_plan.h"
#include "plan/launch.h"

namespace anvil::detail {
namespace {

constexpr const char* kName = "sm90-fp8-decode";

// 128 weight rows, one 128-value box per stage, 8-bit elements; two CTAs per SM up to 64
// tokens (the streaming tiles), one from 65.
template <int kTokenTile>
using Fp8Decode = DecodeConfig<kTokenTile, kFp8DecodeTileRows, 1, decode_bandwidth_bound(kTokenTile), 1>;
// The same with DeepSeek-V3 block scales: a 128-row tile is one W scale block, and each
// stage brings its token tile's X scales (decode_kernel.cuh). The streaming tiles share an
// SM up to kFp8DecodeBlockStreamingTokens; the 64- and 128-token ones run one per SM, whose
// consumers hold the blocks' partial sums beside the totals (fp8_decode_plan.h).
template <int kTokenTile>
using Fp8DecodeBlock = DecodeConfig<kTokenTile, kFp8DecodeTileRows, 1, kTokenTile <= kFp8DecodeBlockStreamingTokens, 1, true>;

static_assert(Fp8Decode<8>::kBlockK == kFp8DecodeKBlock, "the planner's k-tiles are the kernel's stages");
static_assert(Fp8Decode<64>::kStageBytesA == DecodeConfig<64>::kStageBytesA,
              "an 8-bit stage streams the bytes of a 16-bit one");

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  if (!is_fp8(desc.a.dtype) || !is_fp8(desc.b.dtype)) {
    return fail(diag, Status::kNotSupported, "%s: takes e4m3 inputs (got A %s, B %s); sm90-decode takes bf16/fp16",
                kName, to_string(desc.a.dtype), to_string(desc.b.dtype));
  }
  if (const char* why = fp8_decode_refusal(desc)) return fail(diag, Status::kNotSupported, "%s: %s", kName, why);
  if (args != nullptr && (reinterpret_cast<uintptr_t>(args->a) % 16 != 0 || reinterpret_cast<uintptr_t>(args->b) % 16 != 0)) {
    return fail(diag, Status::kMisalignedOperand, "%s: TMA reads FP8 operands from 16-byte aligned A and B (A %p, B %p)",
                kName, args->a, args->b);
  }
  // The TMA rules and grid limits of the 16-bit decode kernels; SwiGLU's 64-row gate and
  // up blocks fit a 128-row tile.
  return check_decode(kName, desc, args, true, kFp8DecodeTileRows, kFp8DecodeWidestTokenTile, diag);
}

}  // namespace

void fill_fp8_decode_residency(DeviceInfo* device) {
  for (int s = 1; s <= kMaxClusterSplit; ++s) {
    const auto set = [&](DecodeConfigId id, int ctas) { device->decode_resident[static_cast<int>(id)][s] = ctas; };
    set(DecodeConfigId::kFp8x8, decode_tma_resident_ctas<Fp8Decode<8>>(kName, s));
    set(DecodeConfigId::kFp8x16, decode_tma_resident_ctas<Fp8Decode<16>>(kName, s));
    set(DecodeConfigId::kFp8x32, decode_tma_resident_ctas<Fp8Decode<32>>(kName, s));
    set(DecodeConfigId::kFp8x64, decode_tma_resident_ctas<Fp8Decode<64>>(kName, s));
    set(DecodeConfigId::kFp8x128, decode_tma_resident_ctas<Fp8Decode<128>>(kName, s));
    set(DecodeConfigId::kFp8Block64, decode_tma_resident_ctas<Fp8DecodeBlock<64>>(kName, s));
    set(DecodeConfigId::kFp8Block128, decode_tma_resident_ctas<Fp8DecodeBlock<128>>(kName, s));
  }
}

// The configuration the plan names; the cache key names the configuration.
Status launch_fp8_decode_plan(const DecodePlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  if (desc.a.dtype != DataType::kE4M3 || desc.b.dtype != DataType::kE4M3) {
    return fail(diag, Status::kInternalError, "%s: planned for %s x %s, which it does not run", kName,
                to_string(desc.a.dtype), to_string(desc.b.dtype));
  }
  if (desc.scales == ScaleMode::kBlock128) {
    switch (plan.config) {
      case DecodeConfigId::kFp8x8:
        return launch_decode_config<Fp8DecodeBlock<8>>(kName, "sm90-fp8-decode/block-t8", plan, desc, args, diag);
      case DecodeConfigId::kFp8x16:
        return launch_decode_config<Fp8DecodeBlock<16>>(kName, "sm90-fp8-decode/block-t16", plan, desc, args, diag);
      case DecodeConfigId::kFp8x32:
        return launch_decode_config<Fp8DecodeBlock<32>>(kName, "sm90-fp8-decode/block-t32", plan, desc, args, diag);
      case DecodeConfigId::kFp8Block64:
        return launch_decode_config<Fp8DecodeBlock<64>>(kName, "sm90-fp8-decode/block-t64", plan, desc, args, diag);
      case DecodeConfigId::kFp8Block128:
        return launch_decode_config<Fp8DecodeBlock<128>>(kName, "sm90-fp8-decode/block-t128", plan, desc, args, diag);
      default: return fail(diag, Status::kInternalError, "%s: not a block-scaled FP8 decode configuration", kName);
    }
  }
  switch (plan.config) {
    case DecodeConfigId::kFp8x8:
      return launch_decode_config<Fp8Decode<8>>(kName, "sm90-fp8-decode/t8", plan, desc, args, diag);
    case DecodeConfigId::kFp8x16:
      return launch_decode_config<Fp8Decode<16>>(kName, "sm90-fp8-decode/t16", plan, desc, args, diag);
    case DecodeConfigId::kFp8x32:
      return launch_decode_config<Fp8Decode<32>>(kName, "sm90-fp8-decode/t32", plan, desc, args, diag);
    case DecodeConfigId::kFp8x64:
      return launch_decode_config<Fp8Decode<64>>(kName, "sm90-fp8-decode/t64", plan, desc, args, diag);
    case DecodeConfigId::kFp8x128:
      return launch_decode_config<Fp8Decode<128>>(kName, "sm90-fp8-decode/t128", plan, desc, args, diag);
    default: return fail(diag, Status::kInternalError, "%s: not an FP8 decode configuration", kName);
  }
}

extern const KernelInfo kSm90Fp8Decode{kName,
                                       "FP8 decode (e4m3 x e4m3): swap-AB (128 weight rows on wgmma M, tokens on N = "
                                       "8..128), 128-wide K stages, K split across a cluster and reduced in rank order "
                                       "through distributed shared memory; per-tensor or row/column scales applied "
                                       "once to the total, DeepSeek-V3 block scales per K block",
                                       check, launch_family<KernelFamily::kSm90Fp8Decode>, nullptr};

}  // namespace anvil::detail
