// sm90-fp8's configuration choice, as plain host arithmetic that the CPU tests exercise.
// The FP8 kernel is sm90-gemm's template with 8-bit inputs (kernel_config.h,
// element_bytes = 1): a stage holds 128 values of K per row, one 128-byte swizzle row, and
// each wgmma step reads 32 of them (m64nNk32).
#pragma once

#include <algorithm>
#include <cstdint>

#include "anvil/gemm.h"
#include "kernels/sm90/plan.h"
#include "kernels/sm90/split_k.h"

namespace anvil::detail {

enum class Fp8Variant : int {
  // 128x256 tiles in 2-CTA clusters along M multicasting B, 4 stages of 48 KiB, TMA-store
  // epilogue in two rounds: sm90-gemm's wide pairs with 8-bit inputs. e4m3 x e4m3; tensor,
  // row/column or no scales.
  kWidePair = 0,
  // 128x128 tiles in the same clusters, 6 stages of 32 KiB: twice the tiles where 256-wide
  // ones leave the last wave emptier, and the mixed e5m2 pairs.
  kNarrowPair = 1,
  // 128x128 tiles with DeepSeek-V3 block scales: each stage's 128-wide K block is summed
  // from zero and added, scaled, to an fp32 total (consumer.cuh). One B scale block per
  // tile, and room for the second set of accumulators.
  kBlockPair = 2,
  // The same three in 2-CTA clusters along N multicasting A, for an odd number of 128-row
  // tiles: a pair along M there gives half a cluster rows past M only (TMA's zeros, never
  // stored), CTAs that count in the waves. At M <= 128 on a wide weight that doubles them.
  // e4m3 x e4m3.
  kWidePairN = 3,
  kNarrowPairN = 4,
  kBlockPairN = 5,
  // 128x192 tiles with block scales in the same clusters along M, 5 stages of 40 KiB: 1.5x
  // the block pair's MACs per stage for 1.25x its bytes (fp8_relative_speed). Each
  // warpgroup holds 96 fp32 totals and 96 partial sums; a 256-wide tile would need 256
  // registers a thread. A tile spans two weight scale blocks (consumer.cuh). Not with
  // SwiGLU, whose gate/up pairs are 128 columns wide.
  kBlockWidePair = 6,
  // sm90-gemm's fitted widths (plan.h) with 8-bit inputs: 128 x 160, 192 or 224 tiles in
  // the same pairs along M, or in single CTAs where a pair would hold an empty row of
  // tiles, for weights whose width leaves the 128- and 256-wide tiles' last wave partly
  // idle (576 columns: 3 tiles of 192 or 4 of 160 against 2.25 of 256). e4m3 x e4m3,
  // tensor, row/column or no scales; not with SwiGLU.
  kFitPair224 = 7,
  kFitPair192 = 8,
  kFitPair160 = 9,
  kFitSingle224 = 10,
  kFitSingle192 = 11,
  kFitSingle160 = 12,
};
inline constexpr int kFp8Variants = 13;

constexpr bool fp8_pairs_along_n(Fp8Variant v) {
  return v == Fp8Variant::kWidePairN || v == Fp8Variant::kNarrowPairN || v == Fp8Variant::kBlockPairN;
}
constexpr bool fp8_block_variant(Fp8Variant v) {
  return v == Fp8Variant::kBlockPair || v == Fp8Variant::kBlockPairN || v == Fp8Variant::kBlockWidePair;
}
constexpr bool fp8_wide_variant(Fp8Variant v) { return v == Fp8Variant::kWidePair || v == Fp8Variant::kWidePairN; }
constexpr bool fp8_fit_variant(Fp8Variant v) {
  return static_cast<int>(v) >= static_cast<int>(Fp8Variant::kFitPair224);
}
constexpr bool fp8_fit_single(Fp8Variant v) {
  return static_cast<int>(v) >= static_cast<int>(Fp8Variant::kFitSingle224);
}
constexpr int fp8_fit_width(Fp8Variant v) {
  switch (v) {
    case Fp8Variant::kFitPair160:
    case Fp8Variant::kFitSingle160: return 160;
    case Fp8Variant::kFitPair192:
    case Fp8Variant::kFitSingle192: return 192;
    default: return 224;
  }
}
constexpr TileShape fp8_tile_shape(Fp8Variant v) {
  return fp8_fit_variant(v)                   ? TileShape{128, fp8_fit_width(v)}
         : fp8_wide_variant(v)                ? TileShape{128, 256}
         : v == Fp8Variant::kBlockWidePair    ? TileShape{128, 192}
                                              : TileShape{128, 128};
}
constexpr ClusterShape fp8_cluster_shape(Fp8Variant v) {
  return fp8_pairs_along_n(v) ? ClusterShape{1, 2} : fp8_fit_single(v) ? ClusterShape{1, 1} : ClusterShape{2, 1};
}
// The fitted widths' rings are the 16-bit ones' (sm90_configs.h, FitConfig): a stage of
// 128 x 128 bytes of A and width x 128 of B is the same size.
constexpr int fp8_stages(Fp8Variant v) {
  if (fp8_fit_variant(v)) return fp8_fit_width(v) == 224 ? 4 : 5;
  return fp8_wide_variant(v) ? 4 : v == Fp8Variant::kBlockWidePair ? 5 : 6;
}
constexpr const char* fp8_variant_name(Fp8Variant v) {
  switch (v) {
    case Fp8Variant::kWidePair: return "fp8-wide-pair";
    case Fp8Variant::kNarrowPair: return "fp8-narrow-pair";
    case Fp8Variant::kBlockPair: return "fp8-block-pair";
    case Fp8Variant::kWidePairN: return "fp8-wide-pair-n";
    case Fp8Variant::kNarrowPairN: return "fp8-narrow-pair-n";
    case Fp8Variant::kBlockPairN: return "fp8-block-pair-n";
    case Fp8Variant::kBlockWidePair: return "fp8-block-wide-pair";
    case Fp8Variant::kFitPair224: return "fp8-fit-pair-224";
    case Fp8Variant::kFitPair192: return "fp8-fit-pair-192";
    case Fp8Variant::kFitPair160: return "fp8-fit-pair-160";
    case Fp8Variant::kFitSingle224: return "fp8-fit-single-224";
    case Fp8Variant::kFitSingle192: return "fp8-fit-single-192";
    case Fp8Variant::kFitSingle160: return "fp8-fit-single-160";
  }
  return "fp8-wide-pair";
}
// Which variants run which problems: block scales only on the block pairs, the e5m2 pairs
// only on kNarrowPair (the only configuration that instantiates them), SwiGLU only on
// tiles of whole 128-column gate/up pairs (so never on the fitted widths).
constexpr bool fp8_variant_runs(Fp8Variant v, DataType a, DataType b, ScaleMode scales, bool swiglu = false) {
  if (swiglu && fp8_tile_shape(v).block_n % 128 != 0) return false;
  const bool mixed = a != DataType::kE4M3 || b != DataType::kE4M3;
  if (scales == ScaleMode::kBlock128) return fp8_block_variant(v) && !mixed;
  if (fp8_block_variant(v)) return false;
  return !mixed || v == Fp8Variant::kNarrowPair;
}

// 128x128 pairs against 128x256 pairs, per unit of tile area: each CTA reads 32 KiB per K
// block for 128 x 128 x 128 MACs where the wide tile reads 48 KiB for twice the MACs. An
// allowance, not a measurement: the wide pairs' bf16 figure for narrow single CTAs is
// 0.77, multicast recovers part of it.
inline constexpr double kFp8NarrowRelativeSpeed = 0.85;

// Pairs along N against pairs along M, per unit of tile area: sm90-gemm's measured ratio
// for its 16-bit pairs (plan.h, kWidePairNRelativeSpeed): 40 KiB of L2 reads per CTA and
// K step instead of 32.
inline constexpr double kFp8PairNRelativeSpeed = 0.98;

// The block pair against the 128x192 block pair, per unit of tile area. A CTA's intake
// from L2 bounds both: 32 KiB a K block for 128 x 128 x 128 MACs, 40 KiB for 128 x 192 x
// 128, which would make the narrow tile 0.83 as fast. Measured on the H200 (suites/fp8.json,
// 8192-row shapes and DeepSeek-V3's 4096-row gate_up, many waves of each): 0.89-0.93 per
// wave and area - the wide tile's promotion has 1.5x the FMAs per byte.
inline constexpr double kFp8BlockNarrowRelativeSpeed = 0.90;

inline double fp8_relative_speed(Fp8Variant v) {
  // The fitted widths take the 16-bit allowances (plan.h): a stage of either holds the
  // same bytes for the same tensor time.
  if (fp8_fit_variant(v)) return fp8_fit_single(v) ? kFitSingleRelativeSpeed : kFitRelativeSpeed;
  const double width = fp8_wide_variant(v) || v == Fp8Variant::kBlockWidePair ? 1.0
                       : fp8_block_variant(v)                                  ? kFp8BlockNarrowRelativeSpeed
                                                                               : kFp8NarrowRelativeSpeed;
  return width * (fp8_pairs_along_n(v) ? kFp8PairNRelativeSpeed : 1.0);
}

// estimated_cost (waves x tile area / speed, as for sm90-gemm) of a variant: the waves count
// the cluster's padding, the rows or columns of tiles past the problem that a pair still
// runs.
inline double fp8_variant_cost(Fp8Variant v, int64_t m, int64_t n, int64_t batch, int sm_count) {
  const TileShape tile = fp8_tile_shape(v);
  const ClusterShape cluster = fp8_cluster_shape(v);
  return estimated_cost(wave_plan(m, n, batch, tile, sm_count, cluster.m, cluster.n), tile, fp8_relative_speed(v),
                        sm_count);
}

// The variant for a problem: the cheapest of those that run it (fp8_variant_runs), ties to
// the earlier in the order wide pair, narrow pair, block pair, their pairs along N, the
// block-scaled 192-wide pair, then the fitted widths (pairs before singles, wider first).
// As in sm90-gemm, a fitted width is taken only where it is strictly cheaper, its
// allowance included.
inline Fp8Variant choose_fp8_variant(int64_t m, int64_t n, int64_t batch, int sm_count, DataType a, DataType b,
                                     ScaleMode scales, bool swiglu = false) {
  Fp8Variant best = Fp8Variant::kNarrowPair;
  double best_cost = 0.0;
  bool found = false;
  for (int i = 0; i < kFp8Variants; ++i) {
    const Fp8Variant v = static_cast<Fp8Variant>(i);
    if (!fp8_variant_runs(v, a, b, scales, swiglu)) continue;
    const double cost = fp8_variant_cost(v, m, n, batch, sm_count);
    if (!found || cost < best_cost) best = v, best_cost = cost, found = true;
  }
  return best;
}

// ---- split-K (split_k.h's scheme on sm90-fp8's kernel) ----
//
// Few output tiles and a long K (DeepSeek-V3's kv_a and q_a projections at M = 64-128:
// 64 x 576 x 7168 is 6 CTAs of 128 x 128 for 132 SMs; single tokens on 8192-wide weights,
// 64) keep most SMs idle. As for the 16-bit GEMM, K is cut into equal slices that run as
// one strided batch of the planned configuration into fp32 partials, summed in slice order
// through the epilogue by sm90-gemm's sum kernel.
//
// A slice is whole 128-wide K blocks: a stage of every FP8 configuration holds one, and a
// block scale covers one, so slice s reads the block scales of its own blocks
// (Fp8Scales::k_blocks_per_batch). Per-tensor and row/column scales multiply whole sums
// and are linear: each slice's partial is scaled as an unsplit tile would be
// (apply_output_scales), and their sum is the scaled sum. alpha, bias, activation and
// beta * C are the sum kernel's, applied once.
inline constexpr int64_t kFp8KBlock = 128;
// The shortest slice: 4 K blocks (512 values). Below that the ring (6 stages) never fills
// and a slice's fixed cost (prologue, pipeline fill, the partial's store) is most of it.
inline constexpr int64_t kFp8SplitKMinSliceBlocks = 4;
// Only where whole tiles leave most SMs idle: the output tiles of the whole-tile plan
// (not counting a pair's CTA past the edge, which has no rows of its own) are at most half
// as many as the SMs, so that two slices at least fit one wave.
inline constexpr double kFp8SplitKMaxTileFill = 0.5;
// Per-CTA time of one 128-wide K block of a 128 x 128 tile, H200, suites/fp8.json on
// whole tiles (bench/results/h200-2026-12-02-2b52fbe-fp8-*.json: time / K blocks on the
// shapes that make one partial wave):
//   - the math: 0.30 us where the tile's rows end in its first warpgroup (M <= 64; the
//     second one multiplies nothing), 0.385 us with both (M = 128: kv_a and q_a), and
//     with block scales, whose promotion drains the wgmma pipe every block, 0.45 and
//     0.665 us;
//   - the weight's stream: 56-64 CTAs streaming a weight larger than the L2 (o, mlp_down,
//     llama70b's decode rows) took 0.50-0.76 us per block of 16 KiB, ~29 GB/s per CTA.
// A block takes the longer of the two; a 128 x 256 tile twice as long.
inline constexpr double kFp8HalfTileBlockMicroseconds = 0.30;
inline constexpr double kFp8TileBlockMicroseconds = 0.385;
inline constexpr double kFp8HalfTileScaledBlockMicroseconds = 0.45;
inline constexpr double kFp8TileScaledBlockMicroseconds = 0.665;
inline constexpr double kFp8StreamBlockMicroseconds = 0.57;
// What a wave of tiles costs beyond its K blocks: the prologue, the pipeline's fill and
// the epilogue's store.
inline constexpr double kFp8TileFixedMicroseconds = 2.0;
// The estimates rest on one run of one suite: a split must promise this much.
inline constexpr double kFp8SplitKMinSaving = 0.15;

// One CTA's time for one K block of variant v's tile on a problem of m rows.
inline double fp8_block_us(Fp8Variant v, int64_t m) {
  const bool half = m <= 64;
  const double math = fp8_block_variant(v) ? (half ? kFp8HalfTileScaledBlockMicroseconds : kFp8TileScaledBlockMicroseconds)
                                           : (half ? kFp8HalfTileBlockMicroseconds : kFp8TileBlockMicroseconds);
  return std::max(math, kFp8StreamBlockMicroseconds) * (fp8_tile_shape(v).block_n / 128.0);
}

// Variant v's whole tiles over `batch` matrices of m x n x (k_blocks 128-wide blocks):
// waves of CTAs (a pair's CTAs past the edge included), each the blocks plus a fixed cost.
inline double fp8_tiles_us(Fp8Variant v, int64_t m, int64_t n, int64_t batch, int64_t k_blocks, int sm_count) {
  const ClusterShape cluster = fp8_cluster_shape(v);
  const WavePlan w = wave_plan(m, n, batch, fp8_tile_shape(v), sm_count, cluster.m, cluster.n);
  const double waves = static_cast<double>(ceil_div(w.tiles, sm_count));
  return waves * (static_cast<double>(k_blocks) * fp8_block_us(v, m) + kFp8TileFixedMicroseconds);
}

// The operands read once, one byte an element: the floor under every plan.
inline double fp8_operand_stream_us(int64_t m, int64_t n, int64_t k) {
  return static_cast<double>(k) * static_cast<double>(m + n) / kSplitKBytesPerMicrosecond;
}

// Whole tiles of the variant the planner would take, over all of K.
inline double fp8_whole_tiles_us(int64_t m, int64_t n, int64_t k, int sm_count, DataType a, DataType b,
                                 ScaleMode scales) {
  const Fp8Variant v = choose_fp8_variant(m, n, 1, sm_count, a, b, scales);
  return std::max(fp8_tiles_us(v, m, n, 1, ceil_div(k, kFp8KBlock), sm_count), fp8_operand_stream_us(m, n, k));
}

// `slices` slices of K (whole blocks each) as one batch of the variant the planner takes
// for them, then the partials' round trip (written once, read once) and the sum's launch.
inline double fp8_split_k_estimated_us(int64_t m, int64_t n, int64_t k, int slices, int sm_count, DataType a,
                                       DataType b, ScaleMode scales) {
  const Fp8Variant v = choose_fp8_variant(m, n, slices, sm_count, a, b, scales);
  const double gemm = std::max(fp8_tiles_us(v, m, n, slices, k / kFp8KBlock / slices, sm_count),
                               fp8_operand_stream_us(m, n, k));
  const double partials = 2.0 * slices * static_cast<double>(m) * static_cast<double>(n) * sizeof(float);
  return gemm + partials / kSplitKBytesPerMicrosecond + kSplitKReduceFixedMicroseconds;
}

// The output tiles of the whole-tile plan's configuration, the edges' partial tiles
// included, a cluster's padding not.
inline int64_t fp8_whole_tiles(int64_t m, int64_t n, int sm_count, DataType a, DataType b, ScaleMode scales) {
  const Fp8Variant whole = choose_fp8_variant(m, n, 1, sm_count, a, b, scales);
  return wave_plan(m, n, 1, fp8_tile_shape(whole), sm_count).tiles;
}

// Whether `slices` slices are possible: K in equal whole blocks, none shorter than the
// minimum, at most kSplitKMaxSlices of them.
inline bool fp8_split_k_possible(int64_t k, int64_t slices) {
  return slices >= 2 && slices <= kSplitKMaxSlices && k % (slices * kFp8KBlock) == 0 &&
         k / (slices * kFp8KBlock) >= kFp8SplitKMinSliceBlocks;
}

// The split for one FP8 matrix (batch 1), or slices = 1: where the whole-tile plan's tiles
// are at most half as many as the SMs, the slice count whose estimate (fp8_split_k_estimated_us)
// beats the whole tiles' by kFp8SplitKMinSaving, the fastest such. It depends on M.
inline SplitKPlan choose_fp8_split_k(int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count, DataType a,
                                     DataType b, ScaleMode scales) {
  SplitKPlan none;
  if (batch != 1 || sm_count <= 0 || m <= 0 || n <= 0 || k % kFp8KBlock != 0 ||
      k / kFp8KBlock < 2 * kFp8SplitKMinSliceBlocks) {
    return none;
  }
  if (static_cast<double>(fp8_whole_tiles(m, n, sm_count, a, b, scales)) > kFp8SplitKMaxTileFill * sm_count) return none;
  SplitKPlan best = none;
  double best_us = fp8_whole_tiles_us(m, n, k, sm_count, a, b, scales) * (1.0 - kFp8SplitKMinSaving);
  for (int s = 2; s <= kSplitKMaxSlices; ++s) {
    if (!fp8_split_k_possible(k, s)) continue;
    const double us = fp8_split_k_estimated_us(m, n, k, s, sm_count, a, b, scales);
    if (us < best_us) best_us = us, best = SplitKPlan{s, k / s};
  }
  return best;
}

}  // namespace anvil::detail
