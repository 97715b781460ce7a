// The production kernel's resource arithmetic and tile-shape choice (src/kernels/sm90/plan.h,
// kernel_config.h): host-only functions, tested without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "anvil/gemm.h"
#include "host/plan_cache.h"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/plan.h"

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
  // Not when D cannot leave through TMA stores (4097^3, odd ld: 411 us in ping-pong tiles
  // against 333 us for the pairs, whose wave count is worse).
  EXPECT_EQ(choose_sm90_variant(4097, 4097, 1, kH200Sms, false, true), Sm90Variant::kPingPongPair);
  EXPECT_EQ(choose_sm90_variant(4097, 4097, 1, kH200Sms, false, false), Sm90Variant::kWidePair);
  // Equal fill (4096^3: 4 waves of pairs, 8 of ping-pong tiles) keeps the pairs.
  EXPECT_DOUBLE_EQ(variant_cost(Sm90Variant::kPingPongPair, 4096, 4096, 1, kH200Sms),
                   variant_cost(Sm90Variant::kWidePair, 4096, 4096, 1, kH200Sms));
}

TEST(ChooseVariant, FusedEpiloguesTakeThePingPongSchedule) {
  EXPECT_EQ(choose_sm90_variant(8192, 8192, 1, kH200Sms, true), Sm90Variant::kPingPongPair);
  EXPECT_EQ(choose_sm90_variant(8192, 8192, 1, kH200Sms, false), Sm90Variant::kWidePair);
  // Where pairs lose to single tiles, a fused epilogue changes nothing.
  EXPECT_EQ(choose_sm90_variant(256, 8192, 1, kH200Sms, true), Sm90Variant::kNarrow);
  EXPECT_EQ(choose_sm90_variant(128, 28672, 1, kH200Sms, true), Sm90Variant::kWide);
}

TEST(ChooseVariant, OneRowOfTilesCannotPair) {
  // 128 x 28672: a pair would leave its second CTA idle; 112 single wide tiles fill one
  // wave, 224 narrow ones spill into a second.
  EXPECT_EQ(choose_sm90_variant(128, 28672, 1, kH200Sms), Sm90Variant::kWide);
}

TEST(WavePlan, PartialClustersOccupyWholeClusters) {
  // 3 rows of tiles in 2-CTA clusters: the last cluster's second CTA has no rows.
  EXPECT_EQ(wave_plan(384, 256, 1, TileShape{128, 256}, kH200Sms, 2).tiles, 4);
}

TEST(ChooseVariant, UnderfilledWideWaveTakesNarrowTiles) {
  // 256 x 8192: 64 wide tiles leave half the SMs idle; 128 narrow tiles fill one wave.
  EXPECT_EQ(choose_sm90_variant(256, 8192, 1, kH200Sms), Sm90Variant::kNarrow);
}

TEST(ChooseVariant, NarrowTilesThatSpillIntoASecondWaveLose) {
  // 256 x 10240: 80 wide tiles = one wave; 160 narrow tiles = two waves, the second
  // nearly empty (measured 2x slower on 2026-11-29 before this rule).
  EXPECT_EQ(choose_sm90_variant(256, 10240, 1, kH200Sms), Sm90Variant::kWidePair);
}

TEST(ChooseVariant, CostFollowsWholeWaves) {
  const TileShape wide{128, 256};
  const WavePlan one_wave = wave_plan(128 * 132, 256, 1, wide, kH200Sms);
  const WavePlan one_more = wave_plan(128 * 133, 256, 1, wide, kH200Sms);
  EXPECT_DOUBLE_EQ(estimated_cost(one_more, wide, 1.0, kH200Sms), 2 * estimated_cost(one_wave, wide, 1.0, kH200Sms));
}

TEST(KernelConfig, SharedMemoryAndRegistersFitTheSm) {
  using Wide = KernelConfig<256, 2, 1, 4, 1, false>;
  static_assert(Wide::kBlockM == 128 && Wide::kThreads == 384);
  EXPECT_EQ(Wide::kStageBytesA, 128 * 64 * 2);
  EXPECT_EQ(Wide::kStageBytesB, 256 * 64 * 2);
  // 4 stages of 48 KiB: 192 KiB of the 227 KiB a CTA may use.
  EXPECT_LE(Wide::kStages * (Wide::kStageBytesA + Wide::kStageBytesB) + Wide::kEpilogueBytes + 1024, 227 * 1024);

  using Store = KernelConfig<256, 2, 1, 3, 2, true>;
  EXPECT_EQ(Store::kEpilogueBytes, 128 * 256 * 2);
  EXPECT_EQ(Store::kMulticastCtas, 2);
  EXPECT_LE(Store::kStages * (Store::kStageBytesA + Store::kStageBytesB) + Store::kEpilogueBytes + 1024, 227 * 1024);

  EXPECT_EQ(Store::kReleaseCtas, 2);
  using NoMulticast = KernelConfig<256, 2, 1, 3, 2, true, ClusterB::kLocalLoads>;
  EXPECT_EQ(NoMulticast::kMulticastCtas, 1);
  EXPECT_EQ(NoMulticast::kReleaseCtas, 1);
  using CrossRelease = KernelConfig<256, 2, 1, 3, 2, true, ClusterB::kLocalLoadsCrossRelease>;
  EXPECT_EQ(CrossRelease::kMulticastCtas, 1);
  EXPECT_EQ(CrossRelease::kReleaseCtas, 2);
}

TEST(KernelConfig, PingPongWarpgroupsTakeWholeTiles) {
  using PingPong = KernelConfig<128, 2, 2, 5, 2, true, ClusterB::kMulticast, Schedule::kPingPong>;
  // Each warpgroup owns a whole 128x128 tile (two m64 slabs); one reader per stage.
  EXPECT_EQ(PingPong::kBlockM, 128);
  EXPECT_EQ(PingPong::kStageReaders, 1);
  EXPECT_EQ(consumer_row_offset<PingPong>(1), 0);
  // Both warpgroups may be storing at once: a TMA-store buffer each.
  EXPECT_EQ(PingPong::kEpilogueBytes, 2 * 128 * 128 * 2);
  EXPECT_LE(PingPong::kStages * (PingPong::kStageBytesA + PingPong::kStageBytesB) + PingPong::kEpilogueBytes + 1024,
            227 * 1024);

  using Cooperative = KernelConfig<256, 2, 1, 3, 2, true>;
  EXPECT_EQ(Cooperative::kBlockM, 128);
  EXPECT_EQ(Cooperative::kStageReaders, 2);
  EXPECT_EQ(consumer_row_offset<Cooperative>(1), 64);
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

}  // namespace
}  // namespace anvil::detail
