// The production kernel's configuration choice, as plain host arithmetic that the CPU
// tests exercise: how many output tiles each candidate tile shape makes, how many waves
// of the GPU's SMs that is, and how much of the last wave is wasted.
#pragma once

#include <cstdint>

namespace anvil::detail {

enum class Sm90Variant : int {
  kWide = 0,      // 128x256 tiles, 4 stages of 48 KiB
  kNarrow = 1,    // 128x128 tiles, 6 stages of 32 KiB: twice the tiles for short/narrow problems
  kWidePair = 2,  // 128x256 tiles in 2-CTA clusters along M multicasting B; 3 stages + TMA-store buffer
  kPingPongPair = 3,  // 128x128 tiles taken in turn by the two consumer warpgroups, multicast pairs
};

struct TileShape {
  int block_m, block_n;
};

constexpr TileShape tile_shape(Sm90Variant v) {
  return v == Sm90Variant::kNarrow || v == Sm90Variant::kPingPongPair ? TileShape{128, 128} : TileShape{128, 256};
}

struct WavePlan {
  int64_t tiles = 0;
  double waves = 0;       // tiles / SMs
  double efficiency = 0;  // tiles / (ceil(waves) * SMs): the fraction of SM-tile slots doing work
};

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// cluster_m CTAs along M form one cluster; a partial cluster at the bottom edge still
// occupies all its SMs, so tiles are counted in whole clusters.
inline WavePlan wave_plan(int64_t m, int64_t n, int64_t batch, TileShape shape, int sm_count, int cluster_m = 1) {
  WavePlan p;
  p.tiles = ceil_div(ceil_div(m, shape.block_m), cluster_m) * cluster_m * ceil_div(n, shape.block_n) * batch;
  p.waves = static_cast<double>(p.tiles) / sm_count;
  const int64_t slots = ceil_div(p.tiles, sm_count) * sm_count;
  p.efficiency = slots > 0 ? static_cast<double>(p.tiles) / static_cast<double>(slots) : 0.0;
  return p;
}

// Relative cost of one SM's work on a problem: full waves of tiles times the time one
// tile takes, over the configuration's measured speed relative to the 2-CTA multicast
// configuration. H200, 2026-11-29 (bench/results/h200-2026-11-29-wip3-prefill-variants-bf16.json):
// single-CTA wide tiles ran at 0.95-0.97x of the multicast pairs on 4096^3 ... mlp_down;
// 128x128 tiles at 0.79x of single wide tiles (ladder step 6 against step 7, 4096^3).
inline double estimated_cost(const WavePlan& plan, TileShape shape, double relative_speed, int sm_count) {
  const double waves = static_cast<double>(ceil_div(plan.tiles, sm_count));
  return waves * shape.block_m * shape.block_n / relative_speed;
}

inline constexpr double kWideRelativeSpeed = 0.96;
inline constexpr double kNarrowRelativeSpeed = 0.8 * kWideRelativeSpeed;

// The variant with the lowest estimated cost; ties go to the multicast pairs, then to
// single wide tiles.
inline Sm90Variant choose_sm90_variant(int64_t m, int64_t n, int64_t batch, int sm_count) {
  const TileShape wide = tile_shape(Sm90Variant::kWide), narrow = tile_shape(Sm90Variant::kNarrow);
  const double pair_cost = estimated_cost(wave_plan(m, n, batch, wide, sm_count, 2), wide, 1.0, sm_count);
  const double wide_cost = estimated_cost(wave_plan(m, n, batch, wide, sm_count), wide, kWideRelativeSpeed, sm_count);
  const double narrow_cost =
      estimated_cost(wave_plan(m, n, batch, narrow, sm_count), narrow, kNarrowRelativeSpeed, sm_count);
  if (pair_cost <= wide_cost && pair_cost <= narrow_cost) return Sm90Variant::kWidePair;
  return narrow_cost < wide_cost ? Sm90Variant::kNarrow : Sm90Variant::kWide;
}

// With a fused epilogue (bias, activation, SwiGLU, alpha, C) the ping-pong schedule takes
// the multicast pairs' place: its epilogue overlaps the other warpgroup's mainloop. H200,
// 2026-11-29 (1b513f3, bench/results): plain GEMMs within +-2% of the pairs; fused bias+GELU
// 4-6% faster, SwiGLU 6-10% faster.
inline Sm90Variant choose_sm90_variant(int64_t m, int64_t n, int64_t batch, int sm_count, bool fused_epilogue) {
  const Sm90Variant v = choose_sm90_variant(m, n, batch, sm_count);
  return fused_epilogue && v == Sm90Variant::kWidePair ? Sm90Variant::kPingPongPair : v;
}

}  // namespace anvil::detail
