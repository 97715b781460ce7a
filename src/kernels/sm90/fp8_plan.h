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
};
inline constexpr int kFp8Variants = 3;

constexpr TileShape fp8_tile_shape(Fp8Variant v) {
  return v == Fp8Variant::kWidePair ? TileShape{128, 256} : TileShape{128, 128};
}
constexpr int fp8_stages(Fp8Variant v) { return v == Fp8Variant::kWidePair ? 4 : 6; }
constexpr const char* fp8_variant_name(Fp8Variant v) {
  return v == Fp8Variant::kWidePair ? "fp8-wide-pair" : v == Fp8Variant::kNarrowPair ? "fp8-narrow-pair" : "fp8-block-pair";
}
// Which variants run which problems: block scales only on kBlockPair, the e5m2 pairs only
// on kNarrowPair (the only configuration that instantiates them).
constexpr bool fp8_variant_runs(Fp8Variant v, DataType a, DataType b, ScaleMode scales) {
  const bool mixed = a != DataType::kE4M3 || b != DataType::kE4M3;
  if (scales == ScaleMode::kBlock128) return v == Fp8Variant::kBlockPair && !mixed;
  if (v == Fp8Variant::kBlockPair) return false;
  return !mixed || v == Fp8Variant::kNarrowPair;
}

// 128x128 pairs against 128x256 pairs, per unit of tile area: each CTA reads 32 KiB per K
// block for 128 x 128 x 128 MACs where the wide tile reads 48 KiB for twice the MACs. An
// allowance, not a measurement: the wide pairs' bf16 figure for narrow single CTAs is
// 0.77, multicast recovers part of it.
inline constexpr double kFp8NarrowRelativeSpeed = 0.85;

// The variant for a problem: fixed by the scale mode and the input pair where only one
// configuration runs it, else the one with the lower estimated cost (waves x tile area /
// speed, as for sm90-gemm), ties to the wide pairs.
inline Fp8Variant choose_fp8_variant(int64_t m, int64_t n, int64_t batch, int sm_count, DataType a, DataType b,
                                     ScaleMode scales) {
  if (scales == ScaleMode::kBlock128) return Fp8Variant::kBlockPair;
  if (!fp8_variant_runs(Fp8Variant::kWidePair, a, b, scales)) return Fp8Variant::kNarrowPair;
  const TileShape wide = fp8_tile_shape(Fp8Variant::kWidePair), narrow = fp8_tile_shape(Fp8Variant::kNarrowPair);
  const double wide_cost = estimated_cost(wave_plan(m, n, batch, wide, sm_count, 2, 1), wide, 1.0, sm_count);
  const double narrow_cost =
      estimated_cost(wave_plan(m, n, batch, narrow, sm_count, 2, 1), narrow, kFp8NarrowRelativeSpeed, sm_count);
  return narrow_cost < wide_cost ? Fp8Variant::kNarrowPair : Fp8Variant::kWidePair;
}

}  // namespace anvil::detail
