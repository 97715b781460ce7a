// The production kernel's configuration choice, as plain host arithmetic that the CPU
// tests exercise: how many output tiles each candidate tile shape makes, how many waves
// of the GPU's SMs that is, and how much of the last wave is wasted.
#pragma once

#include <cstdint>

namespace anvil::detail {

enum class Sm90Variant : int {
  kWide = 0,    // 128x256 tiles, 4 stages of 48 KiB
  kNarrow = 1,  // 128x128 tiles, 6 stages of 32 KiB: twice the tiles for short/narrow problems
};

struct TileShape {
  int block_m, block_n;
};

constexpr TileShape tile_shape(Sm90Variant v) { return v == Sm90Variant::kWide ? TileShape{128, 256} : TileShape{128, 128}; }

struct WavePlan {
  int64_t tiles = 0;
  double waves = 0;       // tiles / SMs
  double efficiency = 0;  // tiles / (ceil(waves) * SMs): the fraction of SM-tile slots doing work
};

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline WavePlan wave_plan(int64_t m, int64_t n, int64_t batch, TileShape shape, int sm_count) {
  WavePlan p;
  p.tiles = ceil_div(m, shape.block_m) * ceil_div(n, shape.block_n) * batch;
  p.waves = static_cast<double>(p.tiles) / sm_count;
  const int64_t slots = ceil_div(p.tiles, sm_count) * sm_count;
  p.efficiency = slots > 0 ? static_cast<double>(p.tiles) / static_cast<double>(slots) : 0.0;
  return p;
}

// Relative cost of one SM's work on a problem: full waves of tiles times the time one
// tile takes. A narrow tile is half a wide one's math, but wide tiles do 1.33x more math
// per shared-memory byte. The 0.8 is an estimate: on the H200 (2026-11-29 ladder run)
// step 6's 128x128 tiles ran at 0.79x of step 7's 128x256 at 4096^3; the Narrow
// configuration itself has not been measured on full waves yet.
inline double estimated_cost(const WavePlan& plan, TileShape shape, double relative_speed, int sm_count) {
  const double waves = static_cast<double>(ceil_div(plan.tiles, sm_count));
  return waves * shape.block_m * shape.block_n / relative_speed;
}

inline constexpr double kNarrowRelativeSpeed = 0.8;

// The variant with the lower estimated cost; ties go to wide tiles.
inline Sm90Variant choose_sm90_variant(int64_t m, int64_t n, int64_t batch, int sm_count) {
  const TileShape wide_shape = tile_shape(Sm90Variant::kWide), narrow_shape = tile_shape(Sm90Variant::kNarrow);
  const double wide = estimated_cost(wave_plan(m, n, batch, wide_shape, sm_count), wide_shape, 1.0, sm_count);
  const double narrow =
      estimated_cost(wave_plan(m, n, batch, narrow_shape, sm_count), narrow_shape, kNarrowRelativeSpeed, sm_count);
  return narrow < wide ? Sm90Variant::kNarrow : Sm90Variant::kWide;
}

}  // namespace anvil::detail
