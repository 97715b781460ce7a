// sm90-fp8-decode's rule and shapes, as host arithmetic the CPU tests exercise: the TMA
// decode kernel (decode_kernel.cuh: swap-AB, 128 weight rows per CTA on wgmma's M side,
// the tokens on its N side, K split across a cluster) with e4m3 inputs, against sm90-fp8's
// 128-row tiles (fp8_plan.h).
//
// Why: at a few tokens an FP8 GEMM is a stream of the weight. sm90-fp8 puts the tokens on
// the M side of 128-row tiles, so a wide weight makes only N / 128 or N / 256 CTAs
// (64 on 8192 features: half the SMs idle), and a CTA streams little more than its 1/132
// share of DRAM (docs/notes/decode-split-choice.md); its split-K slices pay an fp32 round
// trip and a second launch. The decode kernel makes as many CTAs as the weight has 128-row
// tiles times the K split, two per SM up to 64 tokens, and reduces the split in
// distributed shared memory.
// With 8-bit inputs a stage is the same 16 KiB of weight as with 16-bit ones (one
// 128-byte swizzle row per row) and holds twice the K: 128 values.
#pragma once

#include <algorithm>
#include <cstdint>

#include "anvil/gemm.h"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/fp8_plan.h"

namespace anvil::detail {

// Token tiles sm90-fp8-decode is instantiated for (wgmma N; the e4m3 wrappers exist for 8,
// 16, 32, 64, 128 and 256). Up to 64 tokens two CTAs share an SM and stream
// (decode_bandwidth_bound); 65-128 tokens take the 128-wide tile, one CTA per SM, and plan
// their split to fill one wave (decode_plans_single_wave). More tokens than 128 run as
// several 128-wide tiles when forced; the planner does not choose it there.
inline constexpr int kFp8DecodeTokenTiles[] = {8, 16, 32, 64, 128};
inline constexpr int kFp8DecodeWidestTokenTile = 128;
inline constexpr int64_t kFp8DecodeMaxTokens = 128;
inline constexpr int kFp8DecodeTileRows = 128;
// K per stage: one 128-byte box of 8-bit values. The planned split and the k-tiles are in
// these units.
inline constexpr int kFp8DecodeKBlock = 128;
// DeepSeek-V3 block scales: the block-scaled mainloop keeps each block's partial sums beside
// the total, which the streaming tiles' two CTAs per SM hold in their registers up to 32
// tokens; from 33 tokens the block-scaled tiles (64 and 128 tokens) run one CTA per SM
// with the consumers' larger register budget (gemm_fp8_decode.cu).
inline constexpr int kFp8DecodeBlockStreamingTokens = 32;

constexpr int fp8_decode_token_tile(int64_t m) {
  for (int t : kFp8DecodeTokenTiles) {
    if (m <= t) return t;
  }
  return kFp8DecodeWidestTokenTile;
}

// What sm90-fp8-decode cannot run, judged from the description (nullptr: it takes it).
// Validation (validate.cpp) has already refused what no FP8 kernel runs: e5m2 x e5m2,
// operands that are not K-major, K not a multiple of 16, leading dimensions and batch
// strides not multiples of 16, row/column or block scales with a batch, batch-invariant
// mode. Pointer alignment is the launch-time check's (gemm_fp8_decode.cu).
inline const char* fp8_decode_refusal(const GemmDesc& desc) {
  if (desc.a.dtype != DataType::kE4M3 || desc.b.dtype != DataType::kE4M3) {
    return "takes e4m3 x e4m3 only (the mixed e5m2 pairs run on sm90-fp8)";
  }
  if (desc.k == 0) return "K = 0 has no tensor-core work";
  if (desc.a.order != Order::kRowMajor || desc.b.order != Order::kColMajor) {
    return "needs K-major operands (A row-major, B column-major)";
  }
  if (desc.batch > 1 && (desc.a.batch_stride == 0 || desc.b.batch_stride == 0)) {
    return "broadcast (zero batch stride) operands are not supported";
  }
  if ((desc.n + kFp8DecodeTileRows - 1) / kFp8DecodeTileRows > 65535 ||
      (desc.m + kFp8DecodeWidestTokenTile - 1) / kFp8DecodeWidestTokenTile * desc.batch > 65535) {
    return "too many tiles for the grid (features / 128 and tokens / 128 x batch must stay below 65536)";
  }
  return nullptr;
}

// ---- The rule: the decode kernel where its estimate beats sm90-fp8's ----
//
// Both estimates are for a problem of m <= kFp8DecodeMaxTokens rows; neither has been
// fitted to sm90-fp8-decode measurements yet.
//
// sm90-fp8-decode: the 16-bit decode kernel's split model (decode_split_cost) in its own
// unit, one k-tile of one CTA streamed at its fair share of DRAM - the same bytes per
// k-tile with 8-bit inputs: 128 weight rows x 128 bytes (the tokens' slice of X is read
// by every feature tile, from L2). Its cost counts the whole stream over the resident
// CTAs (a partial wave costs only its share), a lone CTA's limit (a few times its fair
// share, decode_cta_headroom), and a fixed cost per CTA of about two k-tiles (the
// pipeline's first round trip, the cluster reduction, the epilogue). A fair share is the
// rate a TMA-fed kernel streams at (3.4-3.85 TB/s, docs/notes/tma-ring-rate.md) over the
// CTAs resident at once. Under that, the math: a CTA's k-tile of 128 rows x t tokens x
// 128 values of K is t / 128 of sm90-fp8's 128 x 128 K block (kFp8TileBlockMicroseconds),
// each wave of CTAs one after another.
inline constexpr double kFp8DecodeStreamBytesPerMicrosecond = 3.6e6;

// The decode kernel's time for a plan of `splits` over output_tiles tiles (feature tiles
// x token tiles x batch) of k_tiles 128-wide k-tiles, `resident` CTAs at once.
inline double fp8_decode_estimated_us(int64_t output_tiles, int64_t k_tiles, int splits, int64_t resident,
                                      int token_tile) {
  const int64_t slots = resident > 0 ? resident : 1;
  const DecodeSplit split =
      decode_split_cost(output_tiles, k_tiles, splits, slots, true, decode_cta_headroom(token_tile));
  const double tile_bytes = static_cast<double>(kFp8DecodeKBlock) * kFp8DecodeTileRows;
  const double fair_share_tile_us = tile_bytes * static_cast<double>(slots) / kFp8DecodeStreamBytesPerMicrosecond;
  const double math_tile_us = kFp8TileBlockMicroseconds * static_cast<double>(token_tile) / 128.0;
  const double math_us = static_cast<double>(split.waves) *
                         (static_cast<double>(split.k_tiles_per_cta) + kDecodeCtaOverheadTiles) * math_tile_us;
  return std::max(split.cost * fair_share_tile_us, math_us);
}

// sm90-fp8's time for the same problem, as its planner would run it: whole tiles of the
// variant it takes (fp8_tiles_us, never below reading the operands once), or the split-K
// plan where choose_fp8_split_k takes one (batch 1).
inline double fp8_gemm_estimated_us(int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count, DataType a,
                                    DataType b, ScaleMode scales) {
  const SplitKPlan split = choose_fp8_split_k(m, n, k, batch, sm_count, a, b, scales);
  if (split.slices > 1) return fp8_split_k_estimated_us(m, n, k, split.slices, sm_count, a, b, scales);
  const Fp8Variant v = choose_fp8_variant(m, n, batch, sm_count, a, b, scales);
  return std::max(fp8_tiles_us(v, m, n, batch, ceil_div(k, kFp8KBlock), sm_count),
                  static_cast<double>(batch) * fp8_operand_stream_us(m, n, k));
}

// ---- Beyond 128 tokens: a K split in the cluster rather than through memory ----
//
// Where sm90-fp8 would split K (few output tiles and a long K: choose_fp8_split_k), its
// slices write fp32 partials to memory and a second kernel sums them; sm90-fp8-decode's
// 128-token tiles split K across a cluster and sum in distributed shared memory. Measured
// (H100, per-tensor scales, one process, sm90-fp8's plan against the decode plan): the
// sweep's tuning-half shapes of 129-1024 tokens where sm90-fp8 splits, 1.36x geomean
// (0.98-1.69x: 255 x 4096 x 11008 46.9 -> 27.8 us); where sm90-fp8 takes whole tiles the
// decode tiles were no faster (0.90-1.16x), so only a split moves. Block-scaled decode
// tiles were mixed on the same split shapes (0.72-1.41x, slower from K = 32768), and keep
// sm90-fp8.
// Up to four 128-token tiles: the tokens those shapes were measured at (192-256).
inline constexpr int64_t kFp8DecodeSplitKMaxTokens = 512;

// The token counts and scale modes at which the planner can weigh sm90-fp8-decode at all
// (anvil-tune offers its candidates there): decode-sized, or up to kFp8DecodeSplitKMaxTokens
// rows without block scales.
inline bool fp8_decode_token_range(int64_t m, ScaleMode scales) {
  return m >= 1 && (m <= kFp8DecodeMaxTokens || (m <= kFp8DecodeSplitKMaxTokens && scales != ScaleMode::kBlock128));
}

// Whether the planner weighs sm90-fp8-decode for an FP8 problem: in that range, and beyond
// kFp8DecodeMaxTokens rows only where sm90-fp8 would split K.
inline bool fp8_decode_considered(int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count, DataType a,
                                  DataType b, ScaleMode scales) {
  if (!fp8_decode_token_range(m, scales)) return false;
  return m <= kFp8DecodeMaxTokens || choose_fp8_split_k(m, n, k, batch, sm_count, a, b, scales).slices > 1;
}

// Whether the planner sends an FP8 problem it weighs (fp8_decode_considered) to
// sm90-fp8-decode (which takes it: fp8_decode_refusal): its estimate is the lower, and from
// 65 tokens (the 128-token tile, one CTA per SM) only where its CTAs fit one wave: the
// 16-bit kernel's one-per-SM tiles measured a thin second wave costing nearly a whole one,
// and slower than sm90-gemm there (decode_plan.h, prefers_decode).
inline bool prefers_fp8_decode(int64_t m, int64_t decode_waves, double decode_us, double gemm_us) {
  if (m < 1) return false;
  if (m > kDecodeAlwaysTokens && decode_waves > 1) return false;
  return decode_us < gemm_us;
}

}  // namespace anvil::detail
