// The production kernel's resource arithmetic and tile-shape choice (src/kernels/sm90/plan.h,
// kernel_config.h): host-only functions, tested without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "cpu/dispatch_pins.h"
#include "host/plan_cache.h"
#include "kernels/sm90/dead_rows.h"
#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/plan.h"
#include "kernels/sm90/sm90_configs.h"
#include "kernels/sm90/row_split.h"
#include "kernels/sm90/tile_scheduler.cuh"
#include "kernels/sm90/tma_operands.h"
#include "plan/planner.h"

namespace anvil::detail {
namespace {

constexpr int kH200Sms = 132;

TEST(WavePlan, CountsTilesWithPartialEdges) {
  const WavePlan p = wave_plan(4096, 4096, 1, TileShape{128, 256}, kH200Sms);
  EXPECT_EQ(p.tiles, 32 * 16);
  EXPECT_NEAR(p.waves, 512.0 / 132.0, 1e-12);
  EXPECT_NEAR(p.efficiency, 512.0 / (4 * 132.0), 1e-12);

  // One row or column past a tile boundary costs a whole extra row or column of tiles.
  EXPECT_EQ(wave_plan(4097, 4096, 1, TileShape{128, 256}, kH200Sms).tiles, 33 * 16);
  EXPECT_EQ(wave_plan(4096, 4097, 1, TileShape{128, 256}, kH200Sms).tiles, 32 * 17);
  EXPECT_EQ(wave_plan(1, 1, 3, TileShape{128, 256}, kH200Sms).tiles, 3);
}

TEST(WavePlan, EmptyProblemHasNoTiles) {
  const WavePlan p = wave_plan(0, 4096, 1, TileShape{128, 256}, kH200Sms);
  EXPECT_EQ(p.tiles, 0);
  EXPECT_EQ(p.efficiency, 0.0);
}

TEST(ChooseVariant, LargeProblemsTakeMulticastPairs) {
  EXPECT_EQ(choose_sm90_variant(4096, 4096, 1, kH200Sms), Sm90Variant::kWidePair);
  EXPECT_EQ(choose_sm90_variant(8192, 8192, 1, kH200Sms), Sm90Variant::kWidePair);
  EXPECT_EQ(choose_sm90_variant(512, 8192, 1, kH200Sms), Sm90Variant::kWidePair);  // gemma3
}

TEST(ChooseVariant, PingPongTilesWhereTheyFillTheLastWaveBetter) {
  // qkv prefill: 1280 pair clusters = 19.4 waves of 66 (20 paid), 2560 ping-pong clusters
  // = 38.8 (39 paid): 2.5% less idle time in 128x128 tiles.
  EXPECT_EQ(choose_sm90_variant(8192, 10240, 1, kH200Sms), Sm90Variant::kPingPongPair);
  // mlp_up prefill: 55 against 109 half-size waves.
  EXPECT_EQ(choose_sm90_variant(8192, 28672, 1, kH200Sms), Sm90Variant::kPingPongPair);
  // Not into a column-major D (the staged general loop's strided stores; 4097^3 ran 411 us
  // in ping-pong tiles against 333 us for the pairs while its odd-ld D took that loop) ...
  EXPECT_EQ(choose_classic_sm90_variant(4097, 4097, 1, kH200Sms, false, DStore::kColumnMajor),
            Sm90Variant::kWidePair);
  // ... but into any row-major D: 4096 x 4097 fills 8 waves exactly in 128 x 128 tiles
  // (198 us against 237 in 128 x 224 pairs), and 4097^3 pays 9 waves against
  // the pairs' 5 x 256 columns.
  EXPECT_EQ(choose_sm90_variant(4096, 4097, 1, kH200Sms, false, DStore::kRowMajor), Sm90Variant::kPingPongPair);
  EXPECT_EQ(choose_sm90_variant(4097, 4097, 1, kH200Sms, false, DStore::kRowMajor), Sm90Variant::kPingPongPair);
  // At equal waves (4096^3) the staged output goes to ping-pong too (fp32 D: 218 against
  // 225 us), a TMA-stored one stays with the pairs.
  EXPECT_EQ(choose_sm90_variant(4096, 4096, 1, kH200Sms, false, DStore::kRowMajor), Sm90Variant::kPingPongPair);
  EXPECT_EQ(choose_sm90_variant(4096, 4096, 1, kH200Sms, false, DStore::kColumnMajor), Sm90Variant::kWidePair);
  // Equal fill (4096^3: 4 waves of pairs, 8 of ping-pong tiles) keeps the pairs.
  EXPECT_DOUBLE_EQ(variant_cost(Sm90Variant::kPingPongPair, 4096, 4096, 1, kH200Sms),
                   variant_cost(Sm90Variant::kWidePair, 4096, 4096, 1, kH200Sms));
}

TEST(ChooseVariant, FusedEpiloguesTakeThePingPongSchedule) {
  EXPECT_EQ(choose_sm90_variant(8192, 8192, 1, kH200Sms, true), Sm90Variant::kPingPongPair);
  EXPECT_EQ(choose_sm90_variant(8192, 8192, 1, kH200Sms, false), Sm90Variant::kWidePair);
  // Where pairs along M lose, a fused epilogue changes nothing.
  EXPECT_EQ(choose_sm90_variant(256, 8192, 1, kH200Sms, true), Sm90Variant::kNarrow);
  EXPECT_EQ(choose_sm90_variant(128, 28672, 1, kH200Sms, true), Sm90Variant::kWidePairN);
}

TEST(ChooseVariant, OneRowOfTilesPairsAlongN) {
  // 128 x 28672: a pair along M would leave its second CTA idle; 112 wide tiles in 56
  // pairs along N fill one wave, 224 narrow ones spill into a second ...
  EXPECT_EQ(choose_classic_sm90_variant(128, 28672, 1, kH200Sms, false, DStore::kTma), Sm90Variant::kWidePairN);
  // ... and 128 single tiles of 224 columns fill it better.
  EXPECT_EQ(choose_sm90_variant(128, 28672, 1, kH200Sms), Sm90Variant::kFitSingle224);
}

TEST(WavePlan, PartialClustersOccupyWholeClusters) {
  // 3 rows of tiles in 2-CTA clusters: the last cluster's second CTA has no rows.
  EXPECT_EQ(wave_plan(384, 256, 1, TileShape{128, 256}, kH200Sms, 2).tiles, 4);
  // 3 columns of tiles in clusters along N: the last cluster's second CTA has no columns.
  EXPECT_EQ(wave_plan(128, 768, 1, TileShape{128, 256}, kH200Sms, 1, 2).tiles, 4);
  EXPECT_EQ(variant_wave_plan(Sm90Variant::kWidePairN, 384, 768, 2, kH200Sms).tiles, 3 * 4 * 2);
}

TEST(ChooseVariant, OddTileRowsPairAlongN) {
  // 4224 x 4096 (33 rows of tiles): pairs along M hold 34 rows, 544 tiles in 5 waves;
  // 528 tiles in pairs along N fill 4, as lone wide tiles would, at the lone tiles'
  // lower speed (L2-bound: 48 KiB read per K step against 40).
  EXPECT_EQ(choose_sm90_variant(4224, 4096, 1, kH200Sms), Sm90Variant::kWidePairN);
  EXPECT_LT(variant_cost(Sm90Variant::kWidePairN, 4224, 4096, 1, kH200Sms),
            variant_cost(Sm90Variant::kWide, 4224, 4096, 1, kH200Sms));
  // An even number of rows keeps the pairs along M (they read less from L2 still).
  EXPECT_EQ(choose_sm90_variant(4096, 4096, 1, kH200Sms), Sm90Variant::kWidePair);
}

TEST(TileScheduler, ClustersAlongNCoverEveryTileOnce) {
  // 5 x 7 tiles in pairs along N, bands of 2 cluster rows, 2 batches: every tile exactly
  // once, the right edge's partial pairs giving their second CTA a column past the end.
  const TileScheduler s{5, 7, 2, 1, 2, 2};
  EXPECT_EQ(s.total_cluster_tiles(), 5 * 4 * 2);
  std::vector<int> seen(5 * 7 * 2, 0);
  int past_edge = 0;
  for (int linear = 0; linear < s.total_cluster_tiles(); ++linear) {
    const TileCoord left = s.tile(linear, 0), right = s.tile(linear, 1);
    EXPECT_EQ(left.m_tile, right.m_tile);
    EXPECT_EQ(left.batch, right.batch);
    EXPECT_EQ(right.n_tile, left.n_tile + 1);
    EXPECT_EQ(left.n_tile % 2, 0);
    for (const TileCoord& t : {left, right}) {
      if (t.n_tile >= 7) {
        ++past_edge;
        continue;
      }
      ++seen[(t.batch * 5 + t.m_tile) * 7 + t.n_tile];
    }
  }
  EXPECT_EQ(past_edge, 5 * 2);
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(TileScheduler, ClustersAlongMCoverEveryTileOnce) {
  const TileScheduler s{5, 3, 1, 2, 1, 8};
  EXPECT_EQ(s.total_cluster_tiles(), 3 * 3);
  std::vector<int> seen(5 * 3, 0);
  for (int linear = 0; linear < s.total_cluster_tiles(); ++linear) {
    const TileCoord top = s.tile(linear, 0), bottom = s.tile(linear, 1);
    EXPECT_EQ(bottom.m_tile, top.m_tile + 1);
    EXPECT_EQ(bottom.n_tile, top.n_tile);
    if (top.m_tile < 5) ++seen[top.m_tile * 3 + top.n_tile];
    if (bottom.m_tile < 5) ++seen[bottom.m_tile * 3 + bottom.n_tile];
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(ChooseVariant, UnderfilledWideWaveTakesNarrowTiles) {
  // 256 x 8192: 64 wide tiles leave half the SMs idle; 128 tiles of 128 x 128 fill one
  // wave, as ping-pong pairs (two rows of tiles).
  EXPECT_EQ(choose_sm90_variant(256, 8192, 1, kH200Sms), Sm90Variant::kPingPongPair);
  // One row of tiles: no pair to form, lone 128 x 128 tiles.
  EXPECT_EQ(choose_sm90_variant(128, 8192, 1, kH200Sms), Sm90Variant::kNarrow);
  // Three rows: pairs would take four, 256 tiles in two waves against 192 in 1.45 - still
  // two waves, so the pairs rather than lone 128 x 128 tiles.
  EXPECT_EQ(narrow_or_ping_pong(383, 8192, 1, kH200Sms, DStore::kTma), Sm90Variant::kPingPongPair);
  // A column-major D keeps lone tiles: its epilogue loop competes with the other
  // warpgroup's wgmma issue.
  EXPECT_EQ(choose_sm90_variant(256, 8192, 1, kH200Sms, false, DStore::kColumnMajor), Sm90Variant::kNarrow);
}

TEST(ChooseVariant, PingPongPairsOnlyWhereTheyTakeNoMoreWaves) {
  // 383 x 5120: three rows of 40 tiles (120, one wave) lone; pairs make four rows, 160
  // tiles, two waves: the lone tiles stay (or a fitted width).
  EXPECT_NE(choose_sm90_variant(383, 5120, 1, kH200Sms), Sm90Variant::kPingPongPair);
  EXPECT_EQ(narrow_or_ping_pong(383, 5120, 1, kH200Sms, DStore::kTma), Sm90Variant::kNarrow);
  EXPECT_EQ(narrow_or_ping_pong(1000, 2048, 1, kH200Sms, DStore::kTma), Sm90Variant::kPingPongPair);
}

TEST(ChooseVariant, NarrowTilesThatSpillIntoASecondWaveLose) {
  // 256 x 10240: 80 wide tiles = one wave; 160 narrow tiles = two waves, the second
  // nearly empty (measured 2x slower).
  EXPECT_EQ(choose_classic_sm90_variant(256, 10240, 1, kH200Sms, false, DStore::kTma), Sm90Variant::kWidePair);
}

TEST(ChooseVariant, FittedWidthsWhereTheyPayFewerWavesTimesWidth) {
  // 256 x 10240: 2 x 64 tiles of 128 x 160 fill one wave at 97% (256-wide pairs: 61%).
  EXPECT_EQ(choose_sm90_variant(256, 10240, 1, kH200Sms), Sm90Variant::kFitPair160);
  // 256 x 28672: 2 x 128 tiles of 128 x 224 in 2 waves, against 2 waves of 256-wide pairs.
  EXPECT_EQ(choose_sm90_variant(256, 28672, 1, kH200Sms), Sm90Variant::kFitPair224);
  // Into a column-major D: 4096 x 4097 makes 608 tiles of 128 x 224 in 5 waves, as many
  // as 544 of 128 x 256; 4097^3 the same with 34 rows of tiles.
  EXPECT_EQ(choose_sm90_variant(4096, 4097, 1, kH200Sms, false, DStore::kColumnMajor), Sm90Variant::kFitPair224);
  EXPECT_EQ(choose_sm90_variant(4097, 4097, 1, kH200Sms, false, DStore::kColumnMajor), Sm90Variant::kFitPair224);
  // 256 x 11008: 116 tiles of 128 x 192 in one wave, against 100 of 224 or 86 of 256.
  EXPECT_EQ(choose_sm90_variant(256, 11008, 1, kH200Sms), Sm90Variant::kFitPair192);
  // 768 x 4096: 6 x 22 = 132 tiles of 128 x 192, exactly one wave.
  EXPECT_EQ(choose_sm90_variant(768, 4096, 1, kH200Sms), Sm90Variant::kFitPair192);
  // 1024 x 6144 and 4096 x 1536: 2 waves of 128 x 192 pairs against 3 of 128 x 128 tiles
  // (measured 83 against 94 us and 142 against 149), and 1024 x 5120: 2 waves of
  // 160-wide pairs against 3 (85 against 110 us).
  EXPECT_EQ(choose_sm90_variant(1024, 6144, 1, kH200Sms), Sm90Variant::kFitPair192);
  EXPECT_EQ(choose_sm90_variant(4096, 1536, 1, kH200Sms), Sm90Variant::kFitPair192);
  EXPECT_EQ(choose_sm90_variant(1024, 5120, 1, kH200Sms), Sm90Variant::kFitPair160);
}

// A pair along M over an odd number of row tiles holds a CTA whose rows all lie past M;
// in one or two waves that pair finishes last, counted as 0.15 of a tile more
// (kDeadPairRowTiles): 777 rows (7 row tiles) take single CTAs where the pairs would
// otherwise win by their allowance - 777 x 3072 (one wave of 112 single 128 x 192 tiles
// against 128 paired ones), 777 x 7168 (two waves either way) - while over more waves
// (4097 rows, 5 waves) and with an even row count the pairs stay.
TEST(ChooseVariant, FittedPairsWithADeadRowInFewWavesRunSingle) {
  EXPECT_EQ(cheaper_fit_variant(777, 3072, 1, kH200Sms), Sm90Variant::kFitSingle192);
  EXPECT_EQ(cheaper_fit_variant(777, 7168, 1, kH200Sms), Sm90Variant::kFitSingle224);
  EXPECT_GT(fit_variant_cost(Sm90Variant::kFitPair192, 777, 3072, 1, kH200Sms),
            variant_cost(Sm90Variant::kFitPair192, 777, 3072, 1, kH200Sms));
  EXPECT_EQ(fit_variant_cost(Sm90Variant::kFitPair192, 768, 3072, 1, kH200Sms),
            variant_cost(Sm90Variant::kFitPair192, 768, 3072, 1, kH200Sms));
  EXPECT_EQ(fit_variant_cost(Sm90Variant::kFitPair224, 4097, 4097, 1, kH200Sms),
            variant_cost(Sm90Variant::kFitPair224, 4097, 4097, 1, kH200Sms));
  EXPECT_EQ(fit_variant_cost(Sm90Variant::kFitSingle192, 777, 3072, 1, kH200Sms),
            variant_cost(Sm90Variant::kFitSingle192, 777, 3072, 1, kH200Sms));
  EXPECT_EQ(choose_sm90_variant(768, 4096, 1, kH200Sms), Sm90Variant::kFitPair192);
}

TEST(ChooseVariant, FittedWidthsRunSingleWhereAPairWouldIdle) {
  // 384 x 6144: 3 rows of tiles. Pairs hold 4 rows (a quarter of their CTAs idle); single
  // CTAs make 3 x 39 = 117 tiles of 128 x 160, one wave.
  EXPECT_EQ(choose_sm90_variant(384, 6144, 1, kH200Sms), Sm90Variant::kFitSingle160);
  EXPECT_LT(variant_cost(Sm90Variant::kFitSingle160, 384, 6144, 1, kH200Sms),
            variant_cost(Sm90Variant::kFitPair160, 384, 6144, 1, kH200Sms));
  // With an even number of rows and the same waves, the pairs cost less: lone CTAs read
  // both operands whole from L2 (kFitSingleRelativeSpeed).
  EXPECT_LT(variant_cost(Sm90Variant::kFitPair224, 256, 28672, 1, kH200Sms),
            variant_cost(Sm90Variant::kFitSingle224, 256, 28672, 1, kH200Sms));
  EXPECT_EQ(cheaper_fit_variant(256, 28672, 1, kH200Sms), Sm90Variant::kFitPair224);
}

TEST(ChooseVariant, FittedWidthsTieGoesToTheWiderTile) {
  // 4097^3: 884 tiles of 160 columns in 7 waves cost what 646 of 224 in 5 waves cost.
  EXPECT_DOUBLE_EQ(variant_cost(Sm90Variant::kFitPair160, 4097, 4097, 1, kH200Sms),
                   variant_cost(Sm90Variant::kFitPair224, 4097, 4097, 1, kH200Sms));
  EXPECT_EQ(cheaper_fit_variant(4097, 4097, 1, kH200Sms), Sm90Variant::kFitPair224);
}

TEST(ChooseVariant, FittedWidthsNotOnFullWavesOrSmallSavings) {
  // The suite's square and prefill shapes, and gemma3: the 128- and 256-wide tiles stay.
  const int64_t shapes[][2] = {{4096, 4096}, {8192, 8192}, {8192, 10240}, {8192, 28672}, {512, 8192}, {16384, 16384}};
  for (const auto& s : shapes) {
    const Sm90Variant v = choose_sm90_variant(s[0], s[1], 1, kH200Sms);
    EXPECT_FALSE(is_fit_width(v)) << s[0] << "x" << s[1];
  }
  // 8192 x 8192: 18 waves of 224-wide pairs are 1.6% less waves x width than 16 of
  // 256-wide ones, inside the fitted widths' 5% allowance.
  EXPECT_LT(whole_tile_waves_cost(Sm90Variant::kFitPair224, 8192, 8192, 1, kH200Sms),
            whole_tile_waves_cost(Sm90Variant::kWidePair, 8192, 8192, 1, kH200Sms));
  EXPECT_EQ(choose_sm90_variant(8192, 8192, 1, kH200Sms), Sm90Variant::kWidePair);
}

TEST(ChooseVariant, FittedWidthsOnlyForPlainGemms) {
  // Fused epilogues keep the ping-pong schedule or the single tiles (SwiGLU needs
  // 128-column gate/up pairs; the others overlap their epilogue with the next mainloop).
  EXPECT_EQ(choose_sm90_variant(256, 10240, 1, kH200Sms, true),
            choose_classic_sm90_variant(256, 10240, 1, kH200Sms, true, DStore::kTma));
  Sm90Problem before_fit{256, 10240, 8192, 1, false, true};
  before_fit.fit_widths = false;
  EXPECT_EQ(choose_sm90_variant(before_fit, kH200Sms), Sm90Variant::kTallStreamK);
}

TEST(TmaStore, OnlyRowsOfWholeSixteenByteGranules) {
  // A TMA store clips at the inner extent only to 16-byte granules: N = 10 halves in rows
  // of 16 had columns 10-15 written. Such outputs take the register stores.
  GemmDesc d = linear_desc(512, 1024, 512, DataType::kBF16, DataType::kBF16);
  EXPECT_TRUE(d_layout_tma_storable(d));
  d.n = 1002;
  d.d.ld = 1008;
  EXPECT_FALSE(d_layout_tma_storable(d));
  d.n = 1000;
  EXPECT_TRUE(d_layout_tma_storable(d));
  d.d.ld = 1002;  // rows not 16-byte aligned
  EXPECT_FALSE(d_layout_tma_storable(d));
}

TEST(ChooseVariant, CostFollowsWholeWaves) {
  const TileShape wide{128, 256};
  const WavePlan one_wave = wave_plan(128 * 132, 256, 1, wide, kH200Sms);
  const WavePlan one_more = wave_plan(128 * 133, 256, 1, wide, kH200Sms);
  EXPECT_DOUBLE_EQ(estimated_cost(one_more, wide, 1.0, kH200Sms), 2 * estimated_cost(one_wave, wide, 1.0, kH200Sms));
}

TEST(KernelConfig, SharedMemoryAndRegistersFitTheSm) {
  // The production configurations themselves (sm90_configs.h).
  static_assert(Wide::kBlockM == 128 && Wide::kThreads == 384);
  EXPECT_EQ(Wide::kStageBytesA, 128 * 64 * 2);
  EXPECT_EQ(Wide::kStageBytesB, 256 * 64 * 2);
  // 4 stages of 48 KiB: 192 KiB of the 227 KiB a CTA may use.
  EXPECT_LE(Wide::kStages * (Wide::kStageBytesA + Wide::kStageBytesB) + Wide::kEpilogueBytes + 1024, 227 * 1024);

  using Store = KernelConfig<KernelSpec{
      .block_n = 256, .consumers = 2, .slabs_per_consumer = 1, .stages = 3, .cluster_ctas = 2, .tma_store = true}>;
  EXPECT_EQ(Store::kEpilogueBytes, 128 * 256 * 2);
  EXPECT_EQ(Store::kMulticastCtas, 2);
  EXPECT_LE(Store::kStages * (Store::kStageBytesA + Store::kStageBytesB) + Store::kEpilogueBytes + 1024, 227 * 1024);

  EXPECT_EQ(Store::kReleaseCtas, 2);
  EXPECT_EQ(Store::kSlicesB, 2);
  EXPECT_EQ(Store::kSlicesA, 1);
  EXPECT_EQ(Store::kClusterM, 2);
  EXPECT_EQ(Store::kClusterN, 1);

  // Pairs along N slice A instead: 64-row halves of the 128-row tile, each a whole number
  // of 1024-byte swizzle atoms; both CTAs free every stage (the peer writes into it).
  using PairN = WidePairN;
  EXPECT_EQ(PairN::kClusterM, 1);
  EXPECT_EQ(PairN::kClusterN, 2);
  EXPECT_EQ(PairN::kSlicesA, 2);
  EXPECT_EQ(PairN::kSlicesB, 1);
  EXPECT_EQ(PairN::kReleaseCtas, 2);
  EXPECT_EQ(PairN::kBlockM / PairN::kSlicesA * 128 % 1024, 0);
  using NoMulticast = KernelConfig<KernelSpec{.block_n = 256,
                                              .consumers = 2,
                                              .slabs_per_consumer = 1,
                                              .stages = 3,
                                              .cluster_ctas = 2,
                                              .tma_store = true,
                                              .cluster_b = ClusterB::kLocalLoads}>;
  EXPECT_EQ(NoMulticast::kMulticastCtas, 1);
  EXPECT_EQ(NoMulticast::kReleaseCtas, 1);
  using CrossRelease = KernelConfig<KernelSpec{.block_n = 256,
                                               .consumers = 2,
                                               .slabs_per_consumer = 1,
                                               .stages = 3,
                                               .cluster_ctas = 2,
                                               .tma_store = true,
                                               .cluster_b = ClusterB::kLocalLoadsCrossRelease}>;
  EXPECT_EQ(CrossRelease::kMulticastCtas, 1);
  EXPECT_EQ(CrossRelease::kReleaseCtas, 2);
}

template <class Config>
void expect_fitted_width_fits(Sm90Variant variant) {
  SCOPED_TRACE(static_cast<int>(variant));
  EXPECT_EQ(Config::kBlockN, tile_shape(variant).block_n);
  EXPECT_EQ(Config::kClusterM, cluster_shape(variant).m);
  EXPECT_EQ(Config::kClusterN, cluster_shape(variant).n);
  // Whole 64-column boxes through TMA stores, one 8 KiB box per warpgroup and round, no
  // larger than the staged epilogue's buffer (the shared-memory plan stays the same).
  EXPECT_TRUE(Config::kTmaStore);
  EXPECT_EQ(Config::kTmaStoreColumns, Config::kBlockN / 64 * 64);
  EXPECT_EQ(Config::kTmaStoreBytes, Config::kConsumers * 64 * 128);  // a 64 x 64 box of halves each
  EXPECT_LE(Config::kTmaStoreBytes, Config::kEpilogueBytes);
  // Multicast slices (of B in pairs along M, of A along N) are whole 8-row groups at whole
  // 1024-byte swizzle atoms.
  EXPECT_EQ(Config::kBlockN / Config::kSlicesB * 128 % 1024, 0);
  EXPECT_EQ(Config::kBlockM / Config::kSlicesA * 128 % 1024, 0);
  const int stage = Config::kStageBytesA + Config::kStageBytesB;
  EXPECT_LE(Config::kStages * stage + Config::kEpilogueBytes + 2048, 227 * 1024);  // + barriers and alignment slack
  // One stage more would not fit: the stage count is the most the SM holds.
  EXPECT_GT((Config::kStages + 1) * stage + Config::kEpilogueBytes, 227 * 1024);
}

// The producer of the narrow fitted widths loads the shortest box that holds a slice's
// live rows: 8 rows, half of a lone CTA's 128-row tile, or the whole slice.
TEST(DeadRows, ShortestBoxThatHoldsTheLiveRows) {
  static_assert(FitNarrow64::kBlockM / FitNarrow64::kSlicesA == 128 && kHasHalfBox<128>);
  // The second row of 128-row tiles (rows 128-255) as M grows.
  EXPECT_EQ(loaded_rows<128>(128, 128), 0);    // wholly past M: not loaded
  EXPECT_EQ(loaded_rows<128>(128, 129), 8);    // 1 live row
  EXPECT_EQ(loaded_rows<128>(128, 136), 8);
  EXPECT_EQ(loaded_rows<128>(128, 137), 64);   // 9 live rows
  EXPECT_EQ(loaded_rows<128>(128, 192), 64);
  EXPECT_EQ(loaded_rows<128>(128, 193), 128);  // 65 live rows
  EXPECT_EQ(loaded_rows<128>(0, 4096), 128);
  // A pair's 64-row half-tile has no half box.
  static_assert(!kHasHalfBox<64>);
  EXPECT_EQ(loaded_rows<64>(64, 72), 8);
  EXPECT_EQ(loaded_rows<64>(64, 73), 64);
  EXPECT_EQ(loaded_rows<64>(64, 40), 0);
  EXPECT_EQ(live_rows<128>(128, 181), 53);
}

// A last row of tiles with fewer live rows than the tile loads its A box moved up to end
// at M, by whole 8-row swizzle atoms; whole tiles, dead tiles and the first row of tiles
// (no rows above) stay where they are.
TEST(DeadRows, LastBoxMovedUpToEndAtM) {
  EXPECT_EQ(a_box_shift<128>(256, 268), 112);  // 12 live rows: moved 112, rows 144-271 (4 past M)
  EXPECT_EQ(a_box_shift<128>(256, 264), 120);  // 8 live: moved 120, the box ends at M exactly
  EXPECT_EQ(a_box_shift<128>(768, 777), 112);  // 9 live: 7 rows past M remain
  EXPECT_EQ(a_box_shift<128>(128, 129), 120);
  EXPECT_EQ(a_box_shift<128>(128, 249), 0);    // 121 live: fewer than 8 dead rows
  EXPECT_EQ(a_box_shift<128>(128, 248), 8);
  EXPECT_EQ(a_box_shift<128>(128, 256), 0);    // a whole tile
  EXPECT_EQ(a_box_shift<128>(128, 4096), 0);
  EXPECT_EQ(a_box_shift<128>(256, 200), 0);    // wholly past M (a pair's padding CTA)
  EXPECT_EQ(a_box_shift<128>(0, 20), 0);       // no rows above
  EXPECT_EQ(a_box_shift<256>(256, 300), 208);  // 256-row tiles: 44 live
  EXPECT_EQ(a_box_shift<256>(256, 260), 248);
  for (int tile_row = 128; tile_row <= 1024; tile_row += 128) {
    for (int64_t m = tile_row + 1; m < tile_row + 128; ++m) {
      const int shift = a_box_shift<128>(tile_row, m);
      EXPECT_EQ(shift % 8, 0);
      EXPECT_LE(tile_row - shift + 128, m + 7);  // at most 7 rows past M
      EXPECT_GE(tile_row - shift + 128, m);      // every live row in the box
    }
  }
}

TEST(KernelConfig, FittedWidthsFitTheSm) {
  expect_fitted_width_fits<FitPair160>(Sm90Variant::kFitPair160);
  expect_fitted_width_fits<FitPair192>(Sm90Variant::kFitPair192);
  expect_fitted_width_fits<FitPair224>(Sm90Variant::kFitPair224);
  expect_fitted_width_fits<FitSingle160>(Sm90Variant::kFitSingle160);
  expect_fitted_width_fits<FitSingle192>(Sm90Variant::kFitSingle192);
  expect_fitted_width_fits<FitSingle224>(Sm90Variant::kFitSingle224);
  expect_fitted_width_fits<FitNarrow64>(Sm90Variant::kFitNarrow64);
  expect_fitted_width_fits<FitNarrow96>(Sm90Variant::kFitNarrow96);
  expect_fitted_width_fits<FitNarrow80>(Sm90Variant::kFitNarrow80);
  expect_fitted_width_fits<FitNarrow112>(Sm90Variant::kFitNarrow112);
  expect_fitted_width_fits<FitSingle144>(Sm90Variant::kFitSingle144);
  expect_fitted_width_fits<FitSingle176>(Sm90Variant::kFitSingle176);
  expect_fitted_width_fits<FitSingle208>(Sm90Variant::kFitSingle208);
  expect_fitted_width_fits<FitSingle240>(Sm90Variant::kFitSingle240);
}

// The planner's description of each configuration (tile, cluster, stages) is the
// configuration's own.
TEST(KernelConfig, ThePlannerDescribesEachConfigurationAsBuilt) {
  for (int i = 0; i < kSm90Variants; ++i) {
    const Sm90Variant v = static_cast<Sm90Variant>(i);
    SCOPED_TRACE(variant_name(v));
    with_variant_config(v, [v](auto config) {
      using C = decltype(config);
      EXPECT_EQ(C::kBlockN, tile_shape(v).block_n);
      EXPECT_EQ(C::kBlockM, tile_shape(v).block_m);
      EXPECT_EQ(C::kClusterM, cluster_shape(v).m);
      EXPECT_EQ(C::kClusterN, cluster_shape(v).n);
      EXPECT_EQ(C::kStages, variant_stages(v));
      return 0;
    });
  }
}


TEST(KernelConfig, PingPongWarpgroupsTakeWholeTiles) {
  using PingPong = PingPongPair;
  // Each warpgroup owns a whole 128x128 tile (two m64 slabs); one reader per stage.
  EXPECT_EQ(PingPong::kBlockM, 128);
  EXPECT_EQ(PingPong::kStageReaders, 1);
  EXPECT_EQ(consumer_row_offset<PingPong>(1), 0);
  // Both warpgroups may be storing at once: a TMA-store buffer each.
  EXPECT_EQ(PingPong::kEpilogueBytes, 2 * 128 * 128 * 2);
  EXPECT_LE(PingPong::kStages * (PingPong::kStageBytesA + PingPong::kStageBytesB) + PingPong::kEpilogueBytes + 1024,
            227 * 1024);

  using Cooperative = KernelConfig<KernelSpec{
      .block_n = 256, .consumers = 2, .slabs_per_consumer = 1, .stages = 3, .cluster_ctas = 2, .tma_store = true}>;
  EXPECT_EQ(Cooperative::kBlockM, 128);
  EXPECT_EQ(Cooperative::kStageReaders, 2);
  EXPECT_EQ(consumer_row_offset<Cooperative>(1), 64);
}

Sm90Problem problem(int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  Sm90Problem p;
  p.m = m, p.n = n, p.k = k, p.batch = batch;
  return p;
}

TEST(RowSplit, TheLastRowOfA4097CubeGoesToTheDecodeKernel) {
  // 9 turns of ping-pong tiles for 4097 rows, 8 for 4096, + one weight read by the decode kernel.
  EXPECT_EQ(row_split_main_rows(problem(4097, 4097, 4097), true, kH200Sms), 4096);
  EXPECT_EQ(row_split_main_rows(problem(4097, 4097, 4096), true, kH200Sms), 4096);
  EXPECT_EQ(row_split_main_rows(problem(1025, 4096, 4096), true, kH200Sms), 1024);
}

TEST(RowSplit, OnlyAFewRowsPastAClusterRowAndNeverBatchInvariant) {
  EXPECT_EQ(row_split_main_rows(problem(8192, 8192, 8192), true, kH200Sms), 8192);  // no tail
  EXPECT_EQ(row_split_main_rows(problem(4096 + 65, 4097, 4097), true, kH200Sms), 4096 + 65);  // beyond 64 rows
  EXPECT_EQ(row_split_main_rows(problem(200, 8192, 8192), true, kH200Sms), 200);  // no cluster row to keep
  EXPECT_EQ(row_split_main_rows(problem(4097, 4097, 4097), false, kH200Sms), 4097);  // batch-invariant
  // Where the decode kernel's weight read costs more than the rows add: gemma3 + 1 row.
  EXPECT_EQ(row_split_main_rows(problem(513, 8192, 5376), true, kH200Sms), 513);
  // The measurement override: 0 never splits, 1 splits whatever is eligible.
  EXPECT_EQ(row_split_main_rows(problem(4097, 4097, 4097), true, kH200Sms, 0), 4097);
  EXPECT_EQ(row_split_main_rows(problem(513, 8192, 5376), true, kH200Sms, 1), 512);
  EXPECT_EQ(row_split_main_rows(problem(8192, 8192, 8192), true, kH200Sms, 1), 8192);
}

TEST(RowSplit, SweepShapesSplit) {
  // The GPU sweep's row_split_* cases (tests/gpu/test_kernels_gpu.cpp) exercise the split
  // only while the estimate splits them.
  EXPECT_EQ(row_split_main_rows(problem(2049, 1024, 2048, 2), true, kH200Sms), 2048);
  // KernelRepeat's row_split case (determinism and graph capture across two launches).
  EXPECT_EQ(row_split_main_rows(problem(2049, 2048, 2048), true, kH200Sms), 2048);
}

TEST(RowSplit, EstimatesFollowTheChosenConfiguration) {
  // 4096^3 in pairs: 4 waves of 64 K steps at 0.85 us.
  EXPECT_NEAR(sm90_estimated_us(problem(4096, 4096, 4096), kH200Sms), 4 * 64 * 0.85, 1e-9);
  // Against the split's measured parts (ncu, H200): 4097^3's one-row
  // decode took 13.5-13.8 us, its GEMM on 4096 rows 197.6-201.9 us. The sm90-gemm side
  // runs ~10% high; both stay within 15%.
  EXPECT_NEAR(decode_estimated_us(1, 4097, 4097, 1), 13.6, 0.15 * 13.6);
  EXPECT_NEAR(sm90_estimated_us(problem(4096, 4097, 4097), kH200Sms), 200.0, 0.15 * 200.0);
}

TEST(PlanNames, TooLongForTheKeyIsRefusedNotTruncated) {
  // Two configurations whose names differ only past the key's length would share plans.
  const std::string name(PlanKey::kMaxKernelName, 'x');
  const GemmDesc desc = linear_desc(128, 256, 64, DataType::kBF16, DataType::kBF16);
  const GemmArgs args;
  int plan = 0;
  bool built = false;
  Diagnostic diag;
  const Status s = find_or_build_plan(name.c_str(), desc, args, &plan, &diag, [&](int*) {
    built = true;
    return Status::kSuccess;
  });
  EXPECT_EQ(s, Status::kInternalError);
  EXPECT_FALSE(built);
}

// The public dispatcher, now the planner's, keeps the recorded kernel families
// (dispatch_pins.h). No GPU here: 132 SMs, one CTA per SM in whole clusters.
TEST(DispatchPins, SameFamiliesThroughThePublicApi) {
  const auto letter = [](const char* name) {
    const std::string n = name != nullptr ? name : "";
    return n == "sm90-gemm" ? 'g' : n == "sm90-decode" ? 'd' : n == "sm90-decode-ldg" ? 'l'
           : n == "sm90-decode-r64" ? 'r' : n == "sm90-decode-ldg-r64" ? 'L' : '-';
  };
  int checked = 0;
  for (const pins::Pin& pin : pins::kPins) {
    int i = 0;
    for (int64_t n : pins::kPinN) {
      for (int64_t k : pins::kPinK) {
        const GemmDesc d = pins::pin_desc(pin.m, n, k, pin.variant);
        EXPECT_EQ(letter(dispatch_name(d)), pin.families[i]) << pin.m << " x " << n << " x " << k << " variant " << pin.variant;
        ++i, ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 175 * 44);
}

}  // namespace
// The narrow fitted widths fill one wave where wider tiles leave most SMs idle, and only
// there: from two rows of 128-row tiles, below stream-K's K, never with SwiGLU, and
// not on problems that the wider tiles already fill.
TEST(Plan, NarrowFittedWidthsFillFewTileProblems) {
  const auto pick = [](int64_t m, int64_t n, int64_t k, bool fused = false) {
    Sm90Problem p = problem(m, n, k);
    p.fused_epilogue = fused;
    return choose_sm90_variant(p, kH200Sms);
  };
  // 255 x 4096: 32 wide tiles, 64 ping-pong ones, 128 tiles of 128 x 64 (one wave).
  EXPECT_EQ(pick(255, 4096, 4096), Sm90Variant::kFitNarrow64);
  EXPECT_EQ(variant_wave_plan(Sm90Variant::kFitNarrow64, 255, 4096, 1, kH200Sms).tiles, 128);
  // 512 x 3072: 128 tiles of 128 x 96.
  EXPECT_EQ(pick(512, 3072, 3072), Sm90Variant::kFitNarrow96);
  // A long K keeps full-width tiles (stream-K, split-K or the decode kernels spread it).
  EXPECT_GE(tile_shape(pick(255, 4096, 14336)).block_n, 128);
  // One row of tiles: the decode kernels' token tiles fit M there.
  EXPECT_GE(tile_shape(pick(128, 4096, 4096)).block_n, 128);
  // A fused epilogue takes them too where they save more than ping-pong's overlap of the
  // epilogue (kPingPongEpilogueAllowance) ...
  EXPECT_EQ(pick(255, 4096, 4096, true), Sm90Variant::kFitNarrow64);
  // ... but not with SwiGLU, whose gate/up pairs need 128-column tiles.
  Sm90Problem swiglu = problem(255, 4096, 4096);
  swiglu.fused_epilogue = swiglu.swiglu = true;
  EXPECT_FALSE(is_fit_width(choose_sm90_variant(swiglu, kH200Sms)));
  // More than one wave of narrow tiles: the wider tiles' waves are full enough.
  EXPECT_NE(pick(256, 18432, 4096), Sm90Variant::kFitNarrow96);
  EXPECT_NE(pick(1025, 4096, 4096), Sm90Variant::kFitNarrow64);
  // Large problems keep the wide tiles: their waves are full either way.
  EXPECT_EQ(pick(4096, 4096, 4096), Sm90Variant::kWidePair);
  // The (M, N) chooser, which the decode rules ask, never takes them.
  EXPECT_GE(tile_shape(choose_sm90_variant(255, 4096, 1, kH200Sms)).block_n, 128);
}

// The widths between the 32-column steps refine the finished whole-tile choice where their
// tiles fill the waves better by more than kStep16MinSaving, and nowhere else.
TEST(Plan, Step16WidthsFillWavesTheOthersLeavePartlyIdle) {
  const auto pick = [](Sm90Problem p) { return step16_width_or(choose_sm90_variant(p, kH200Sms), p, kH200Sms); };
  // 255 x 4608: 96 tiles of 128 x 96 (73% of the SMs), 116 of 128 x 80 (88%).
  EXPECT_EQ(choose_sm90_variant(problem(255, 4608, 4096), kH200Sms), Sm90Variant::kFitNarrow96);
  EXPECT_EQ(pick(problem(255, 4608, 4096)), Sm90Variant::kFitNarrow80);
  // 384 x 6144: 117 single CTAs of 128 x 160, 129 of 128 x 144 - one wave either way,
  // a tenth less work per CTA.
  EXPECT_EQ(choose_sm90_variant(problem(384, 6144, 4096), kH200Sms), Sm90Variant::kFitSingle160);
  EXPECT_EQ(pick(problem(384, 6144, 4096)), Sm90Variant::kFitSingle144);
  EXPECT_LT(single_cta_cycles(Sm90Variant::kFitSingle144, 384, 6144, 1, kH200Sms),
            (1.0 - kStep16MinSaving) * single_cta_cycles(Sm90Variant::kFitSingle160, 384, 6144, 1, kH200Sms));
  // 256 x 9216: 116 tiles of 128 x 160 pairs against 128 single CTAs of 128 x 144, by the
  // area model (the pairs' multicast counted in their speed).
  EXPECT_EQ(pick(problem(256, 9216, 4096)), Sm90Variant::kFitSingle144);
  // Not against lone 128 x 128 tiles in one partial wave (64 of them against 57 wider
  // ones end later), nor against ping-pong pairs at the same waves.
  EXPECT_EQ(pick(problem(128, 8192, 8192)), Sm90Variant::kNarrow);
  EXPECT_EQ(pick(problem(256, 8192, 8192)), Sm90Variant::kPingPongPair);
  // Large problems keep their tiles.
  EXPECT_EQ(pick(problem(4096, 4096, 4096)), Sm90Variant::kWidePair);
  // Never for fused epilogues, SwiGLU, stream-K, folded slices, or with the fitted widths
  // turned off.
  Sm90Problem fused = problem(384, 6144, 4096);
  fused.fused_epilogue = true;
  EXPECT_FALSE(pick(fused) == Sm90Variant::kFitSingle144);
  Sm90Problem no_fit = problem(384, 6144, 4096);
  no_fit.fit_widths = false;
  EXPECT_EQ(pick(no_fit), choose_sm90_variant(no_fit, kH200Sms));
  for (Sm90Variant kept : {Sm90Variant::kTallStreamK, Sm90Variant::kSliced96, Sm90Variant::kSlicedPair192}) {
    EXPECT_EQ(step16_width_or(kept, problem(384, 6144, 4096), kH200Sms), kept);
  }
  // The narrow two only where the narrow rule could take a narrow tile: not over a long K
  // nor on one row of tiles.
  EXPECT_GE(tile_shape(pick(problem(255, 4608, 14336))).block_n, 128);
  EXPECT_GE(tile_shape(pick(problem(128, 4608, 4096))).block_n, 128);
  // 300 x 4352: 3 x 39 = 117 tiles of 128 x 112 in one wave, where 128 x 96 takes 138.
  EXPECT_EQ(pick(problem(300, 4352, 4096)), Sm90Variant::kFitNarrow112);
}

// A fused epilogue keeps ping-pong pairs where their waves are as full as the plain GEMM's
// best tiles' (the overlap hides the epilogue), and takes the fitted width where it saves
// more than that overlap.
TEST(Plan, FusedEpiloguesTakeFittedWidthsThatSaveWaves) {
  const auto fused = [](int64_t m, int64_t n, int64_t k) {
    Sm90Problem p = problem(m, n, k);
    p.fused_epilogue = true;
    return choose_sm90_variant(p, kH200Sms);
  };
  // 257 x 8192: 129 tiles of 128 x 192 in one wave, against three rows of ping-pong pairs.
  EXPECT_EQ(fused(257, 8192, 16384), Sm90Variant::kFitSingle192);
  EXPECT_LT(variant_cost(Sm90Variant::kFitSingle192, 257, 8192, 1, kH200Sms),
            (1.0 - kPingPongEpilogueAllowance) * variant_cost(Sm90Variant::kPingPongPair, 257, 8192, 1, kH200Sms));
  // Full waves either way: the pairs' ping-pong schedule stays.
  EXPECT_EQ(fused(8192, 8192, 8192), Sm90Variant::kPingPongPair);
  EXPECT_EQ(fused(4096, 4096, 4096), Sm90Variant::kPingPongPair);
}

}  // namespace anvil::detail
