// sm90-fp8's configuration choice, as plain host arithmetic that the CPU tests exercise.
// The FP8 kernel is sm90-gemm's template with 8-bit inputs (kernel_config.h,
// element_bytes = 1): a stage holds 128 values of K per row, one 128-byte swizzle row, and
// each wgmma step reads 32 of them (m64nNk32).
#pragma once

#include <cstdint>

#include "anvil/gemm.h"
#include "kernels/sm90/plan.h"

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
};
inline constexpr int kFp8Variants = 6;

constexpr bool fp8_pairs_along_n(Fp8Variant v) {
  return v == Fp8Variant::kWidePairN || v == Fp8Variant::kNarrowPairN || v == Fp8Variant::kBlockPairN;
}
constexpr bool fp8_block_variant(Fp8Variant v) { return v == Fp8Variant::kBlockPair || v == Fp8Variant::kBlockPairN; }
constexpr bool fp8_wide_variant(Fp8Variant v) { return v == Fp8Variant::kWidePair || v == Fp8Variant::kWidePairN; }
constexpr TileShape fp8_tile_shape(Fp8Variant v) { return fp8_wide_variant(v) ? TileShape{128, 256} : TileShape{128, 128}; }
constexpr ClusterShape fp8_cluster_shape(Fp8Variant v) {
  return fp8_pairs_along_n(v) ? ClusterShape{1, 2} : ClusterShape{2, 1};
}
constexpr int fp8_stages(Fp8Variant v) { return fp8_wide_variant(v) ? 4 : 6; }
constexpr const char* fp8_variant_name(Fp8Variant v) {
  switch (v) {
    case Fp8Variant::kWidePair: return "fp8-wide-pair";
    case Fp8Variant::kNarrowPair: return "fp8-narrow-pair";
    case Fp8Variant::kBlockPair: return "fp8-block-pair";
    case Fp8Variant::kWidePairN: return "fp8-wide-pair-n";
    case Fp8Variant::kNarrowPairN: return "fp8-narrow-pair-n";
    case Fp8Variant::kBlockPairN: return "fp8-block-pair-n";
  }
  return "fp8-wide-pair";
}
// Which variants run which problems: block scales only on the block pairs, the e5m2 pairs
// only on kNarrowPair (the only configuration that instantiates them).
constexpr bool fp8_variant_runs(Fp8Variant v, DataType a, DataType b, ScaleMode scales) {
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

inline double fp8_relative_speed(Fp8Variant v) {
  const double width = fp8_wide_variant(v) || fp8_block_variant(v) ? 1.0 : kFp8NarrowRelativeSpeed;
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
// the earlier in the order wide pair, narrow pair, block pair, then their pairs along N.
inline Fp8Variant choose_fp8_variant(int64_t m, int64_t n, int64_t batch, int sm_count, DataType a, DataType b,
                                     ScaleMode scales) {
  Fp8Variant best = Fp8Variant::kNarrowPair;
  double best_cost = 0.0;
  bool found = false;
  for (int i = 0; i < kFp8Variants; ++i) {
    const Fp8Variant v = static_cast<Fp8Variant>(i);
    if (!fp8_variant_runs(v, a, b, scales)) continue;
    const double cost = fp8_variant_cost(v, m, n, batch, sm_count);
    if (!found || cost < best_cost) best = v, best_cost = cost, found = true;
  }
  return best;
}

}  // namespace anvil::detail
