// The production kernel's configuration choice, as plain host arithmetic that the CPU
// tests exercise: how many output tiles each candidate tile shape makes, how many waves
// of the GPU's SMs that is, and how much of the last wave is wasted.
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/sm90/stream_k.h"

namespace anvil::detail {

enum class Sm90Variant : int {
  kWide = 0,      // 128x256 tiles, 4 stages of 48 KiB
  kNarrow = 1,    // 128x128 tiles, 6 stages of 32 KiB: twice the tiles for short/narrow problems
  kWidePair = 2,  // 128x256 tiles in 2-CTA clusters along M multicasting B; 4 stages + half TMA-store buffer
  kPingPongPair = 3,  // 128x128 tiles taken in turn by the two consumer warpgroups, multicast pairs
  kTallStreamK = 4,   // 256x128 tiles, the last waves' K iterations spread over every SM (stream_k.h)
  // Fitted widths: tiles 160, 192 or 224 columns wide, for column counts that 128 and 256
  // divide badly; in multicast pairs, or single CTAs where the pairs would leave a row of
  // tiles empty (an odd number of 128-row tiles). fit_widths.h has their configurations.
  kFitPair160 = 5,
  kFitPair224 = 6,
  kFitPair192 = 7,
  kFitSingle160 = 8,
  kFitSingle192 = 9,
  kFitSingle224 = 10,
  // 128x256 tiles in 2-CTA clusters along N multicasting A: for an odd number of 128-row
  // tiles, where pairs along M would leave half a cluster row idle and lone CTAs read
  // both operands whole (the L2 bound behind kWideRelativeSpeed).
  kWidePairN = 11,
  // Narrow fitted widths: 128x64 and 128x96 tiles in single CTAs, for problems of a few
  // hundred rows whose wider tiles would leave most SMs idle (choose_sm90_variant,
  // kNarrowFitMinRowTiles).
  kFitNarrow64 = 12,
  kFitNarrow96 = 13,
  // Batch-invariant mode's split weights beyond the decode kernels' range: the 128x96
  // single and the 128x128 and 128x192 pairs, each CTA summing the weight's K slices in
  // turn and adding them in slice order (KernelSpec::fold_k_slices; planner.cpp,
  // plan_invariant_slices). Never chosen outside the mode.
  kSliced96 = 14,
  kSlicedPair128 = 15,
  kSlicedPair192 = 16,
  // The fitted widths between those, in steps of 16 columns: narrow 80 and 112, single
  // CTAs 144 to 240. wgmma takes N in steps of 8; with a width every 16 columns some tile
  // makes whole waves where the 32-column steps leave a wave partly idle or spill into
  // another (step16_width_or).
  kFitNarrow80 = 17,
  kFitNarrow112 = 18,
  kFitSingle144 = 19,
  kFitSingle176 = 20,
  kFitSingle208 = 21,
  kFitSingle240 = 22,
};
inline constexpr int kSm90Variants = static_cast<int>(Sm90Variant::kFitSingle240) + 1;

// Variants whose CTAs cut each tile's K into the weight's slices (Sm90Params::k_slices).
constexpr bool folds_k_slices(Sm90Variant v) {
  return v == Sm90Variant::kSliced96 || v == Sm90Variant::kSlicedPair128 || v == Sm90Variant::kSlicedPair192;
}

constexpr bool is_fit_width(Sm90Variant v) {
  return (static_cast<int>(v) >= static_cast<int>(Sm90Variant::kFitPair160) &&
          static_cast<int>(v) <= static_cast<int>(Sm90Variant::kFitSingle224)) ||
         v == Sm90Variant::kFitNarrow64 || v == Sm90Variant::kFitNarrow96 ||
         (static_cast<int>(v) >= static_cast<int>(Sm90Variant::kFitNarrow80) &&
          static_cast<int>(v) <= static_cast<int>(Sm90Variant::kFitSingle240));
}

struct TileShape {
  int block_m, block_n;
};

constexpr TileShape tile_shape(Sm90Variant v) {
  switch (v) {
    case Sm90Variant::kTallStreamK: return TileShape{256, 128};
    case Sm90Variant::kNarrow:
    case Sm90Variant::kSlicedPair128:
    case Sm90Variant::kPingPongPair: return TileShape{128, 128};
    case Sm90Variant::kFitPair160:
    case Sm90Variant::kFitSingle160: return TileShape{128, 160};
    case Sm90Variant::kFitPair192:
    case Sm90Variant::kSlicedPair192:
    case Sm90Variant::kFitSingle192: return TileShape{128, 192};
    case Sm90Variant::kFitPair224:
    case Sm90Variant::kFitSingle224: return TileShape{128, 224};
    case Sm90Variant::kFitNarrow64: return TileShape{128, 64};
    case Sm90Variant::kFitNarrow80: return TileShape{128, 80};
    case Sm90Variant::kFitNarrow96:
    case Sm90Variant::kSliced96: return TileShape{128, 96};
    case Sm90Variant::kFitNarrow112: return TileShape{128, 112};
    case Sm90Variant::kFitSingle144: return TileShape{128, 144};
    case Sm90Variant::kFitSingle176: return TileShape{128, 176};
    case Sm90Variant::kFitSingle208: return TileShape{128, 208};
    case Sm90Variant::kFitSingle240: return TileShape{128, 240};
    default: return TileShape{128, 256};
  }
}

// Clock cycles of one SM per 64-wide K step of a bf16/fp16 tile of `rows` x `cols`
// outputs, computed by rows / 64 warpgroup slabs of m64 x cols. Small tiles are bound by
// the SM's shared memory, 128 bytes per clock, not by its tensor cores: in a K step TMA
// writes both operand boxes, (rows + cols) x 128 bytes, and every slab's wgmma reads its
// 64 rows of A and all of B, rows x 128 + rows / 64 x cols x 128 bytes; the tensor cores
// do rows x cols x 64 MACs at 2048 per clock (989 TFLOP/s dense at 1.83 GHz on 132 SMs).
// A 128 x 256 tile is at both limits (1024 cycles); a 128 x 64 one takes 448 cycles for
// a quarter of the work, 64 weight rows x 128 tokens (swap-AB) 384 for the same work:
// measured per K step (255 x 4096 x K sweeps, H200), anvil's lone 128 x 64 CTAs 0.286 us
// and cuBLAS's 64 x 128 tiles 0.233 (docs/notes/token-tiles-beyond-128.md).
constexpr double tile_k_step_cycles(int rows, int cols) {
  const double smem = 2.0 * rows + cols * (1.0 + rows / 64.0);
  const double tensor = rows * cols / 32.0;
  return smem > tensor ? smem : tensor;
}

// Variants whose CTAs run in 2-CTA clusters along M (a partial cluster still holds two SMs).
constexpr bool runs_in_pairs(Sm90Variant v) {
  return v == Sm90Variant::kWidePair || v == Sm90Variant::kPingPongPair || v == Sm90Variant::kFitPair160 ||
         v == Sm90Variant::kFitPair192 || v == Sm90Variant::kFitPair224 || v == Sm90Variant::kSlicedPair128 ||
         v == Sm90Variant::kSlicedPair192;
}

struct ClusterShape {
  int m, n;  // CTAs of a cluster along M and along N
};

constexpr ClusterShape cluster_shape(Sm90Variant v) {
  if (v == Sm90Variant::kWidePairN) return ClusterShape{1, 2};
  return runs_in_pairs(v) ? ClusterShape{2, 1} : ClusterShape{1, 1};
}

struct WavePlan {
  int64_t tiles = 0;
  double waves = 0;       // tiles / SMs
  double efficiency = 0;  // tiles / (ceil(waves) * SMs): the fraction of SM-tile slots doing work
};

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// cluster_m x cluster_n CTAs form one cluster; a partial cluster at the bottom or right
// edge still occupies all its SMs, so tiles are counted in whole clusters.
inline WavePlan wave_plan(int64_t m, int64_t n, int64_t batch, TileShape shape, int sm_count, int cluster_m = 1,
                          int cluster_n = 1) {
  WavePlan p;
  p.tiles = ceil_div(ceil_div(m, shape.block_m), cluster_m) * cluster_m *
            ceil_div(ceil_div(n, shape.block_n), cluster_n) * cluster_n * batch;
  p.waves = static_cast<double>(p.tiles) / sm_count;
  const int64_t slots = ceil_div(p.tiles, sm_count) * sm_count;
  p.efficiency = slots > 0 ? static_cast<double>(p.tiles) / static_cast<double>(slots) : 0.0;
  return p;
}

inline WavePlan variant_wave_plan(Sm90Variant v, int64_t m, int64_t n, int64_t batch, int sm_count) {
  const ClusterShape cluster = cluster_shape(v);
  return wave_plan(m, n, batch, tile_shape(v), sm_count, cluster.m, cluster.n);
}

// Relative cost of one SM's work on a problem: full waves of tiles times the time one
// tile takes, over the configuration's measured speed relative to the 2-CTA multicast
// configuration.
inline double estimated_cost(const WavePlan& plan, TileShape shape, double relative_speed, int sm_count) {
  const double waves = static_cast<double>(ceil_div(plan.tiles, sm_count));
  return waves * shape.block_m * shape.block_n / relative_speed;
}

// Lone 128x256 CTAs against the pairs, per unit of work: 0.89-0.90 on ~4100-row shapes
// (H200, docs/notes/lone-ctas-l2-bound.md). What bounds
// them is L2 bandwidth: each lone CTA reads 48 KiB per K step, a pair's CTA 32, and
// lone 128x256, lone 128x160 and ping-pong 128x128 CTAs all ran at ~7.1-7.3 TB/s of L2
// reads in full waves.
inline constexpr double kWideRelativeSpeed = 0.89;
// 128x128 lone CTAs: 0.79x of lone wide tiles when both were measured (ladder step 6
// against step 7, 4096^3); kept at that absolute value, not rescaled with the
// wide tiles' newer figure.
inline constexpr double kNarrowRelativeSpeed = 0.768;
// Pairs along N (multicast A): 40 KiB of L2 reads per CTA and K step, between the lone
// CTAs' 48 and the pairs' 32, which at the lone CTAs' L2 rate is still under the pairs'
// compute time. Measured: forced on 4096^3 they ran as fast as the pairs along M (208.8
// against 208.3 us in one process); on 4224 x 28672 and 53248 x 4096 in 28 and 52 waves
// against the pairs' 29 and 54 they were 0.7% faster, not 3.5%, so ~0.97 of the pairs'
// speed there.
inline constexpr double kWidePairNRelativeSpeed = 0.98;
// The fitted widths against the 256-wide pairs, per unit of tile area: a narrower MMA and
// a partly direct store. An allowance, not a measurement (docs/notes/fitted-widths.md): a
// fitted width must save more than 5% of the other tiles' waves x width to be chosen.
inline constexpr double kFitRelativeSpeed = 0.95;
// Lone fitted tiles are L2-bound like lone wide ones, more on long runs than on short
// ones (~0.86-0.90 of the pairs on
// 2049 x 28672 and 53248 x 4096, where pairs along N won by 5-9%; but on 640 x 10240,
// 1025 x 6144 and 1025 x 8192 x 4096 lone 224- and 192-wide tiles beat the pairs along M
// by 7-14%, which needs more than 0.90 here). 0.92 sits between the two sets of choices:
// it keeps every measured shape on the faster configuration.
inline constexpr double kFitSingleRelativeSpeed = 0.92;
// Stream-K's 256x128 tiles (fitted with stream-K's other constants, below).
inline constexpr double kTallRelativeSpeed = 0.92;
// The narrow fitted widths are bound by the rate at which a CTA takes in its stages, not
// by the tensor cores: a lone 128x64 CTA's K step (24 KiB) takes ~0.27-0.29 us where its
// tensor work is ~0.2, 128x96 ~0.31 us. The speeds below (0.73 and 0.88 of the 256-wide
// pairs' per unit of area) were fitted when these tiles ran as pairs along N, 15-20% slower
// per step; the rule that takes them (narrow_fit_or) sets them against at least a 128x128
// tile in one wave, where either value gives the same choice.
inline constexpr double kFitNarrow64RelativeSpeed = 0.73;
inline constexpr double kFitNarrow96RelativeSpeed = 0.88;
// The widths between: 80 between 64 and 96, 112 between 96 and the fitted singles. Not
// measured; step16_width_or sets them against the narrow tiles within one wave, where the
// tile counts decide.
inline constexpr double kFitNarrow80RelativeSpeed = 0.80;
inline constexpr double kFitNarrow112RelativeSpeed = 0.90;

constexpr double relative_speed(Sm90Variant v) {
  switch (v) {
    case Sm90Variant::kWidePair:
    case Sm90Variant::kPingPongPair: return 1.0;
    case Sm90Variant::kWidePairN: return kWidePairNRelativeSpeed;
    case Sm90Variant::kNarrow: return kNarrowRelativeSpeed;
    case Sm90Variant::kWide: return kWideRelativeSpeed;
    case Sm90Variant::kTallStreamK: return kTallRelativeSpeed;
    case Sm90Variant::kFitNarrow64: return kFitNarrow64RelativeSpeed;
    case Sm90Variant::kFitNarrow80: return kFitNarrow80RelativeSpeed;
    case Sm90Variant::kFitNarrow96:
    case Sm90Variant::kSliced96: return kFitNarrow96RelativeSpeed;
    case Sm90Variant::kFitNarrow112: return kFitNarrow112RelativeSpeed;
    case Sm90Variant::kFitSingle144:
    case Sm90Variant::kFitSingle160:
    case Sm90Variant::kFitSingle176:
    case Sm90Variant::kFitSingle192:
    case Sm90Variant::kFitSingle208:
    case Sm90Variant::kFitSingle224:
    case Sm90Variant::kFitSingle240: return kFitSingleRelativeSpeed;
    default: return kFitRelativeSpeed;
  }
}

// estimated_cost of a whole-tile variant on this problem.
inline double variant_cost(Sm90Variant v, int64_t m, int64_t n, int64_t batch, int sm_count) {
  return estimated_cost(variant_wave_plan(v, m, n, batch, sm_count), tile_shape(v), relative_speed(v), sm_count);
}

// The whole-tile variant with the lowest estimated cost; ties go to the multicast pairs
// along M, then to the pairs along N, then to single wide tiles. Where pairs along M win,
// the ping-pong schedule's 128x128 tiles (same clusters, same speed per FLOP for the
// plain GEMM since both store through stmatrix + TMA) take over when their finer tiles
// fill the last wave better. H200, one run, 11 repeats:
// qkv prefill 8192 x 10240, 20 waves of pairs against 39 of 128x128 tiles, ran 1.052x
// cuBLAS ping-pong against 1.006x pairs; where both fill their waves equally (4096^3,
// 8192^3, mlp_down) the two were within 1.3% of each other.
//
// How the plain GEMM's D leaves the kernel, as far as the variant choice needs to know.
enum class DStore {
  kTma,          // TMA stores (a half row-major D with 16-byte rows)
  kRowMajor,     // any other row-major D: pair stores or the staged epilogue
  kColumnMajor,  // the staged epilogue's general loop, one strided store per output
};

// Ping-pong tiles only into a row-major D. A column-major D's long epilogue loop in
// ping-pong competes with the other warpgroup's wgmma issue: 4097^3 ran 411 us in
// ping-pong tiles against 333 us for the pairs when its odd-ld D took that loop
// (docs/notes/unaligned-operands.md). Into row-major outputs that TMA cannot store, ping-pong
// wins wherever its waves do, and at equal waves too, its epilogue hidden behind the
// other warpgroup's mainloop (H200): 4096 x 4097 x
// 4096 198 us against 237 in 128 x 224 pairs (odd-ld bf16 D), 216 against 242 into fp32;
// 4096^3 into fp32 218 against 225 for the pairs at equal waves. With TMA stores, equal
// waves keep the pairs.
inline Sm90Variant choose_classic_sm90_variant(int64_t m, int64_t n, int64_t batch, int sm_count,
                                               bool fused_epilogue, DStore store) {
  const double pair_cost = variant_cost(Sm90Variant::kWidePair, m, n, batch, sm_count);
  const double wide_cost = variant_cost(Sm90Variant::kWide, m, n, batch, sm_count);
  const double narrow_cost = variant_cost(Sm90Variant::kNarrow, m, n, batch, sm_count);
  const double pair_n_cost = variant_cost(Sm90Variant::kWidePairN, m, n, batch, sm_count);
  if (pair_cost <= wide_cost && pair_cost <= narrow_cost && pair_cost <= pair_n_cost) {
    // With a fused epilogue (bias, activation, SwiGLU, alpha, C) the ping-pong schedule
    // always takes the pairs' place: its epilogue overlaps the other warpgroup's mainloop.
    // H200 (docs/notes/epilogue-code-size.md): fused bias+GELU 4-6% faster, SwiGLU 6-10%.
    if (fused_epilogue) return Sm90Variant::kPingPongPair;
    const double pingpong_cost = variant_cost(Sm90Variant::kPingPongPair, m, n, batch, sm_count);
    const bool pingpong = store == DStore::kTma ? pingpong_cost < pair_cost
                                                : store == DStore::kRowMajor && pingpong_cost <= pair_cost;
    return pingpong ? Sm90Variant::kPingPongPair : Sm90Variant::kWidePair;
  }
  // Without pairs along M: pairs along N, then lone wide tiles, then lone narrow ones,
  // each taken only where it is strictly cheaper than the ones before.
  Sm90Variant best = Sm90Variant::kWidePairN;
  double best_cost = pair_n_cost;
  if (wide_cost < best_cost) best = Sm90Variant::kWide, best_cost = wide_cost;
  if (narrow_cost < best_cost) best = Sm90Variant::kNarrow;
  return best;
}

// Where lone 128x128 tiles win, the same tiles run as ping-pong pairs if the pairs take no
// more waves (two or more rows of tiles; an odd row count leaves half a cluster idle): the
// pair multicasts B, halving the L2 reads that bound lone 128-wide CTAs, and each
// warpgroup's epilogue overlaps the other's mainloop, which counts most in the one or two
// short waves such problems make. Measured on the sweep's tuning half (H200,
// docs/notes/planner-tuning.md): faster than lone 128x128 tiles on every such shape, by
// up to 1.3x (1000 x 2048 x 4096: 26.1 against 34.4 us). Not into a column-major D, whose
// long epilogue loop competes with the other warpgroup's wgmma issue.
inline Sm90Variant narrow_or_ping_pong(int64_t m, int64_t n, int64_t batch, int sm_count, DStore store) {
  if (store == DStore::kColumnMajor || ceil_div(m, 128) < 2) return Sm90Variant::kNarrow;
  const auto waves = [&](Sm90Variant v) { return ceil_div(variant_wave_plan(v, m, n, batch, sm_count).tiles, sm_count); };
  return waves(Sm90Variant::kPingPongPair) <= waves(Sm90Variant::kNarrow) ? Sm90Variant::kPingPongPair : Sm90Variant::kNarrow;
}

// The chosen whole-tile plan's cost counted in waves alone, as if it ran at full speed.
// Stream-K only removes wave quantization, so it has to beat this: the measured speed
// ratios behind estimated_cost come from 4096^3-class shapes and undersell 128x128 tiles
// at M = 256 (0.93-1.08x cuBLAS there, 2026-11-29), where stream-K lost to them.
inline double whole_tile_waves_cost(Sm90Variant whole, int64_t m, int64_t n, int64_t batch, int sm_count) {
  return estimated_cost(variant_wave_plan(whole, m, n, batch, sm_count), tile_shape(whole), 1.0, sm_count);
}

// A pair along M over an odd number of 128-row tiles holds a CTA whose rows all lie past
// M: its A boxes are TMA's zero fill, which is slower than loading live rows, and its
// partner frees each stage at that pace, so the pair's tile takes longer than the others
// and ends its CTAs' last wave late. Counted as this fraction of one tile more where the
// pairs make at most kDeadPairRowMaxWaves waves. Measured on 777-row problems (7 row
// tiles in 4 pairs, one and two waves): the same fitted tiles in pairs along N, which
// have no such row, ran 1.11-1.19x faster (docs/notes/fit-widths-along-n.md); over more
// waves the row is a smaller share of the time, and not measured.
inline constexpr double kDeadPairRowTiles = 0.15;
inline constexpr int64_t kDeadPairRowMaxWaves = 2;

inline double fit_variant_cost(Sm90Variant v, int64_t m, int64_t n, int64_t batch, int sm_count) {
  const double cost = variant_cost(v, m, n, batch, sm_count);
  if (!runs_in_pairs(v) || ceil_div(m, 128) % 2 == 0 ||
      ceil_div(variant_wave_plan(v, m, n, batch, sm_count).tiles, sm_count) > kDeadPairRowMaxWaves) {
    return cost;
  }
  const TileShape tile = tile_shape(v);
  return cost + kDeadPairRowTiles * tile.block_m * tile.block_n / relative_speed(v);
}

// The cheapest fitted width, a pair's dead row counted (above). Ties go to pairs (B
// multicast: half its L2 reads), then to the wider tile (fewer tiles, less per-tile
// overhead).
inline Sm90Variant cheaper_fit_variant(int64_t m, int64_t n, int64_t batch, int sm_count) {
  constexpr Sm90Variant kByPreference[] = {Sm90Variant::kFitPair224,   Sm90Variant::kFitPair192,
                                           Sm90Variant::kFitPair160,   Sm90Variant::kFitSingle224,
                                           Sm90Variant::kFitSingle192, Sm90Variant::kFitSingle160};
  Sm90Variant best = kByPreference[0];
  double best_cost = fit_variant_cost(best, m, n, batch, sm_count);
  for (Sm90Variant v : kByPreference) {
    const double cost = fit_variant_cost(v, m, n, batch, sm_count);
    if (cost < best_cost) best = v, best_cost = cost;
  }
  return best;
}

// The whole-tile choice: the 128- and 256-wide variants above, unless a fitted width
// (160, 192 or 224 wide) costs less by estimated_cost, its allowance included. Measured
// (H200, docs/notes/fitted-widths.md): where 128 x 128 tiles take
// 3 waves and 128 x 224 ones 2 (1024 x 6144 x 4096, 4096 x 1536 x 7168), the fitted tiles
// won by 12% and 5% once their whole boxes left through TMA stores; storing everything
// from the registers, 224-wide tiles had lost by 10-14% and 192-wide ones tied. Plain
// GEMMs only:
// fused epilogues keep the ping-pong schedule, whose epilogue overlaps the next mainloop,
// and SwiGLU needs 128-column gate/up pairs. Examples on 132 SMs: 256 x 10240 -> 128 x 160
// pairs (128 tiles, one wave, where 256-wide pairs fill 61% of one); 4096 x 4097 into a
// column-major D -> 128 x 224 (608 tiles in 5 waves, against 544 256-wide ones also in
// 5; into a row-major D, 1056 ping-pong tiles fill 8 waves exactly). The narrow fitted
// widths depend on K too: choose_sm90_variant(const Sm90Problem&), below.
inline Sm90Variant choose_sm90_variant(int64_t m, int64_t n, int64_t batch, int sm_count, bool fused_epilogue,
                                       DStore store) {
  const Sm90Variant classic = choose_classic_sm90_variant(m, n, batch, sm_count, fused_epilogue, store);
  if (fused_epilogue) return classic;
  const Sm90Variant fit = cheaper_fit_variant(m, n, batch, sm_count);
  const Sm90Variant best =
      variant_cost(fit, m, n, batch, sm_count) < variant_cost(classic, m, n, batch, sm_count) ? fit : classic;
  return best == Sm90Variant::kNarrow ? narrow_or_ping_pong(m, n, batch, sm_count, store) : best;
}

// The plain GEMM into a TMA-storable output, the common case.
inline Sm90Variant choose_sm90_variant(int64_t m, int64_t n, int64_t batch, int sm_count) {
  return choose_sm90_variant(m, n, batch, sm_count, false, DStore::kTma);
}

inline Sm90Variant choose_sm90_variant(int64_t m, int64_t n, int64_t batch, int sm_count, bool fused_epilogue) {
  return choose_sm90_variant(m, n, batch, sm_count, fused_epilogue, DStore::kTma);
}

// Why 256 x 128 tiles: an M = 256 batch is then one row of tiles, so each weight tile is
// read once. With two rows of 128 x 256 tiles, the two CTAs sharing a weight tile work on
// different K ranges at different times and both fetch it from DRAM: measured on the H200
// (docs/notes/stream-k-tiles.md), 256 x 10240 x 8192 took 98 us that way, no faster than whole tiles.
//
// The constants are fitted to H200 measurements:
//   - the 256x128 configuration runs a K iteration in 0.89-0.96 us where the multicast
//     pairs take 0.85 (M = 256 and 4096^3 shapes): relative speed ~0.92;
//   - stream-K adds 12-14 us per call beyond its iterations, about 13 iterations' worth,
//     whether a tile has two pieces or three: parking a 128 KiB fp32 partial, clearing and
//     raising flags, the finisher's read-back. Modelled as a fixed part plus a small part
//     per parked piece read.
// (kTallRelativeSpeed, the first of these, sits with the other configurations' speeds.)
inline constexpr double kStreamKFixedIterations = 10.0;
inline constexpr double kStreamKReadIterations = 3.0;

// Estimated cost of the stream-K configuration, in estimated_cost's units: whole turns of
// data-parallel tiles, then the longest stream-K range plus its fixup, as a fraction of a
// tile's K iterations. Infinite where the plan has no stream-K part.
inline double stream_k_cost(int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count) {
  const TileShape tall = tile_shape(Sm90Variant::kTallStreamK);
  const int64_t k_tiles = ceil_div(k, 64);
  if (k_tiles <= 0 || k_tiles > (int64_t{1} << 30)) return std::numeric_limits<double>::infinity();
  const WavePlan tiles = wave_plan(m, n, batch, tall, sm_count);
  const StreamKPlan plan = plan_stream_k(tiles.tiles, static_cast<int>(k_tiles), sm_count, kStreamKMinIterations);
  if (plan.sk_ctas == 0) return std::numeric_limits<double>::infinity();
  const int longest = plan.per_cta + (plan.extra > 0 ? 1 : 0);
  // A tile is cut into at most this many pieces; its finisher reads all but its own.
  const int64_t pieces = ceil_div(k_tiles, plan.per_cta) + 1;
  const double fixup = kStreamKFixedIterations + kStreamKReadIterations * static_cast<double>(pieces - 1);
  const double turns = plan.dp_turns + (longest + fixup) / static_cast<double>(k_tiles);
  return turns * tall.block_m * tall.block_n / kTallRelativeSpeed;
}

struct Sm90Problem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool fused_epilogue = false;
  bool stream_k_allowed = true;  // workspace for the partials is there; not batch-invariant
  DStore store = DStore::kTma;   // how a plain GEMM's D leaves (choose_classic_sm90_variant)
  bool fit_widths = true;        // the fitted widths may be chosen (off: 128- and 256-wide tiles only)
  bool swiglu = false;           // SwiGLU pairs 128-column gate/up tiles: 128- and 256-wide tiles only
};

// Stream-K is only considered with at least this many K iterations per tile. Every shape
// where it was measured to win has 128 (K = 8192; H200, 2026-11-29); on 4097^3 (65) the
// model predicted a 3% gain and it ran 25% slower (423 against 340 us), so below that the model's
// fixup estimate is not trusted.
inline constexpr int64_t kStreamKMinKTiles = 128;

// The narrow fitted widths (128 x 64 and 128 x 96 tiles) trade bytes per FLOP for SMs.
// One of them replaces the whole-tile choice `best` only where all its tiles run in one
// wave, which the wider tiles leave partly idle, and its lower speed per FLOP
// (kFitNarrow64RelativeSpeed) still costs at least kNarrowFitMinSaving less: past one wave
// the wider tiles' waves are at least half full and the extra operand bytes no longer pay.
// Only from two rows of 128-row tiles (up to 128 rows the decode kernels' token tiles
// already fit M), and only below stream-K's K (kStreamKMinKTiles): over a long K a
// narrow tile pays its lower rate on every step, while stream-K, split-K and the decode
// kernels' cluster split keep full-width tiles busy on every SM (measured on the sweep's
// tuning half: 255 x 3584 x 14336 ran 64 us in 128 x 64 tiles, 44 us in the decode
// kernel's cluster split). Example: 255 x 4096 x 4096 makes 32 tiles of 128 x 256 or 64
// ping-pong tiles for 132 SMs, and 128 tiles of 128 x 64 - one wave, as cuBLAS's own
// 64 x 128 tiles (features x tokens) make there.
inline constexpr int64_t kNarrowFitMinRowTiles = 2;
inline constexpr double kNarrowFitMinSaving = 0.10;

inline Sm90Variant narrow_fit_or(Sm90Variant best, int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count) {
  if (ceil_div(m, 128) < kNarrowFitMinRowTiles || ceil_div(k, 64) >= kStreamKMinKTiles) return best;
  double bar = (1.0 - kNarrowFitMinSaving) * variant_cost(best, m, n, batch, sm_count);
  for (Sm90Variant narrow : {Sm90Variant::kFitNarrow96, Sm90Variant::kFitNarrow64}) {
    const double cost = variant_cost(narrow, m, n, batch, sm_count);
    if (variant_wave_plan(narrow, m, n, batch, sm_count).tiles <= sm_count && cost < bar) best = narrow, bar = cost;
  }
  return best;
}

// A fused epilogue (bias, activation, alpha, C; not SwiGLU) keeps the ping-pong pairs where
// they cost what the plain GEMM's best tiles cost: one warpgroup's epilogue then hides behind
// the other's mainloop, 4-6% for bias + GELU (docs/notes/epilogue-code-size.md). Where the
// plain GEMM's fitted width saves more than that - fewer waves, or one full wave of narrow
// tiles where ping-pong leaves SMs idle - the fitted tiles run the epilogue themselves: it
// costs one warpgroup's store per tile, not a wave. 383 x 6144 x 6144 with bias + GELU:
// 117 single CTAs of 128 x 160 in one wave against 192 CTAs of ping-pong pairs in two,
// 88.8 -> 55.4 us on the H200 (docs/notes/fused-epilogue-widths.md).
inline constexpr double kPingPongEpilogueAllowance = 0.06;

inline Sm90Variant fit_for_fused_epilogue(Sm90Variant fused, int64_t m, int64_t n, int64_t k, int64_t batch,
                                          int sm_count, DStore store) {
  const Sm90Variant fit =
      narrow_fit_or(choose_sm90_variant(m, n, batch, sm_count, false, store), m, n, k, batch, sm_count);
  if (!is_fit_width(fit)) return fused;
  const double allowance = fused == Sm90Variant::kPingPongPair ? 1.0 - kPingPongEpilogueAllowance : 1.0;
  return variant_cost(fit, m, n, batch, sm_count) < allowance * variant_cost(fused, m, n, batch, sm_count) ? fit
                                                                                                           : fused;
}

// The whole choice: the whole-tile variant (a narrow fitted width where one fits, above),
// or stream-K where it is cheaper than the whole-tile plans' waves.
inline Sm90Variant choose_sm90_variant(const Sm90Problem& p, int sm_count) {
  Sm90Variant whole =
      p.fit_widths ? choose_sm90_variant(p.m, p.n, p.batch, sm_count, p.fused_epilogue, p.store)
                   : choose_classic_sm90_variant(p.m, p.n, p.batch, sm_count, p.fused_epilogue, p.store);
  if (p.fit_widths && !p.fused_epilogue) whole = narrow_fit_or(whole, p.m, p.n, p.k, p.batch, sm_count);
  if (p.fit_widths && p.fused_epilogue && !p.swiglu) {
    whole = fit_for_fused_epilogue(whole, p.m, p.n, p.k, p.batch, sm_count, p.store);
  }
  if (!p.stream_k_allowed || ceil_div(p.k, 64) < kStreamKMinKTiles) return whole;
  // A fitted width carries its allowance here too: 768 x 4096 x 11008 in 114 tiles of
  // 128 x 224 (one wave at 86%) took 122 us against 112 streamed; 256 x 18432 x 8192
  // streams for the same reason, 134 us against 139 in 128 x 160 pairs.
  const double whole_cost =
      whole_tile_waves_cost(whole, p.m, p.n, p.batch, sm_count) /
      (is_fit_width(whole) ? kFitRelativeSpeed : 1.0);
  return stream_k_cost(p.m, p.n, p.k, p.batch, sm_count) < whole_cost ? Sm90Variant::kTallStreamK : whole;
}

// The widths between the 32-column ones, in steps of 16: single CTAs 144, 176, 208 and
// 240 wide and narrow tiles 80 and 112 wide. They refine the finished choice of a plain
// GEMM's whole tiles (choose_sm90_variant above: its family, row split and stream-K
// decisions are made without them) where they cost kStep16MinSaving less, the margin the
// 32-column fitted widths were first given (on the shapes it changes: 1.034x, H200,
// docs/notes/step16-widths.md). Against another single-CTA plan the cost is its waves
// times the shared-memory model's cycles per K step (tile_k_step_cycles): both read their
// operands whole, so in one partial wave the tile with less work per CTA ends first,
// which waves x area / speed, whose speeds were fitted on full waves of each kind, does
// not see (128 x 8192: 64 lone 128 x 128 tiles against 57 of 128 x 144 - the narrower
// ends first). Against pairs, whose multicast halves one operand's L2 reads, the area
// model with its measured speeds. The narrow two only where the narrow rule could take a
// narrow tile (narrow_fit_or: two rows of 128-row tiles, K below stream-K's, one wave).
inline constexpr double kStep16MinSaving = 0.05;

inline double single_cta_cycles(Sm90Variant v, int64_t m, int64_t n, int64_t batch, int sm_count) {
  const TileShape t = tile_shape(v);
  return static_cast<double>(ceil_div(variant_wave_plan(v, m, n, batch, sm_count).tiles, sm_count)) *
         tile_k_step_cycles(t.block_m, t.block_n);
}

inline Sm90Variant step16_width_or(Sm90Variant best, const Sm90Problem& p, int sm_count) {
  if (!p.fit_widths || p.fused_epilogue || p.swiglu || best == Sm90Variant::kTallStreamK || folds_k_slices(best)) {
    return best;
  }
  const Sm90Variant chosen = best;
  const ClusterShape cluster = cluster_shape(chosen);
  const auto cost = [&](Sm90Variant v) {
    return cluster.m * cluster.n == 1 ? single_cta_cycles(v, p.m, p.n, p.batch, sm_count)
                                      : variant_cost(v, p.m, p.n, p.batch, sm_count);
  };
  double bar = (1.0 - kStep16MinSaving) * cost(chosen);
  for (Sm90Variant v : {Sm90Variant::kFitSingle240, Sm90Variant::kFitSingle208, Sm90Variant::kFitSingle176,
                        Sm90Variant::kFitSingle144}) {
    const double c = cost(v);
    if (c < bar) best = v, bar = c;
  }
  if (best != chosen || ceil_div(p.m, 128) < kNarrowFitMinRowTiles || ceil_div(p.k, 64) >= kStreamKMinKTiles) {
    return best;
  }
  // Against a wider choice a narrow tile owes the narrow rule's margin as well.
  const bool narrow = chosen == Sm90Variant::kFitNarrow64 || chosen == Sm90Variant::kFitNarrow96;
  bar = (1.0 - kStep16MinSaving) * (narrow ? 1.0 : 1.0 - kNarrowFitMinSaving) *
        variant_cost(chosen, p.m, p.n, p.batch, sm_count);
  for (Sm90Variant v : {Sm90Variant::kFitNarrow112, Sm90Variant::kFitNarrow80}) {
    const double c = variant_cost(v, p.m, p.n, p.batch, sm_count);
    if (variant_wave_plan(v, p.m, p.n, p.batch, sm_count).tiles <= sm_count && c < bar) best = v, bar = c;
  }
  return best;
}

}  // namespace anvil::detail
