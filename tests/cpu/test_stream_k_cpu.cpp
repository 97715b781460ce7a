// Stream-K's plan and unit walk (src/kernels/sm90/stream_k.h) and the dispatcher's choice
// of it (plan.h): host arithmetic the kernel repeats on the device, checked without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/sm90/plan.h"
#include "kernels/sm90/stream_k.h"

namespace anvil::detail {
namespace {

constexpr int kH200Sms = 132;

// Every CTA's units, in the order the kernel walks them.
std::vector<std::vector<WorkUnit>> walk(const StreamKPlan& plan) {
  std::vector<std::vector<WorkUnit>> units(plan.ctas);
  for (int cta = 0; cta < plan.ctas; ++cta) {
    StreamKCursor cursor(plan, cta);
    WorkUnit u;
    while (cursor.next(&u)) units[cta].push_back(u);
  }
  return units;
}

// The properties the kernel's correctness and freedom from deadlock rest on, for one plan.
void check_plan(int64_t tiles, int k_tiles, int ctas, int min_iterations) {
  SCOPED_TRACE(testing::Message() << tiles << " tiles x " << k_tiles << " k-tiles on " << ctas << " CTAs");
  const StreamKPlan plan = plan_stream_k(tiles, k_tiles, ctas, min_iterations);
  const auto units = walk(plan);
  // Each (tile, K tile) exactly once.
  std::vector<std::vector<int>> covered(tiles, std::vector<int>(k_tiles, 0));
  for (int cta = 0; cta < ctas; ++cta) {
    int parked = 0;
    for (size_t i = 0; i < units[cta].size(); ++i) {
      const WorkUnit& u = units[cta][i];
      ASSERT_GE(u.linear, 0);
      ASSERT_LT(u.linear, tiles);
      ASSERT_LT(u.k_begin, u.k_end);
      ASSERT_LE(u.k_end, k_tiles);
      for (int k = u.k_begin; k < u.k_end; ++k) ++covered[u.linear][k];
      if (u.k_end < k_tiles) {
        ++parked;
        // The parked piece comes first among the CTA's stream-K units, so it is ready early.
        EXPECT_TRUE(i == 0 || units[cta][i - 1].linear < plan.dp_tiles()) << "cta " << cta;
      }
    }
    EXPECT_LE(parked, 1) << "one partial slot per CTA (cta " << cta << ")";
  }
  for (int64_t t = 0; t < tiles; ++t) {
    for (int k = 0; k < k_tiles; ++k) ASSERT_EQ(covered[t][k], 1) << "tile " << t << " k " << k;
  }
  // A cut tile's pieces come from CTAs cta_of(first iteration) .. finisher, the finisher
  // the highest: it waits only on lower-numbered CTAs, each of which parked exactly this tile.
  for (int cta = 0; cta < ctas; ++cta) {
    for (const WorkUnit& u : units[cta]) {
      if (u.k_end != k_tiles || u.k_begin == 0) continue;
      const int first = plan.cta_of((u.linear - plan.dp_tiles()) * k_tiles);
      ASSERT_LT(first, cta);
      for (int c = first; c < cta; ++c) {
        ASSERT_GT(units[c].size(), static_cast<size_t>(plan.dp_turns)) << "cta " << c << " has no stream-K unit";
        const WorkUnit& piece = units[c].front().linear < plan.dp_tiles() ? units[c][plan.dp_turns] : units[c].front();
        EXPECT_EQ(piece.linear, u.linear) << "cta " << c << " parked another tile";
        EXPECT_LT(piece.k_end, k_tiles);
      }
    }
  }
}

TEST(StreamKPlan, EveryIterationOnceFinisherWaitsOnlyDownwards) {
  for (int ctas : {1, 7, 132}) {
    for (int64_t tiles : {1, 5, 80, 131, 132, 133, 224, 300, 512}) {
      for (int k_tiles : {1, 3, 4, 17, 128}) {
        for (int min_iterations : {1, 4}) check_plan(tiles, k_tiles, ctas, min_iterations);
      }
    }
  }
}

TEST(StreamKPlan, WholeWavesStayDataParallel) {
  // 264 tiles on 132 CTAs: two whole waves, nothing to stream.
  const StreamKPlan even = plan_stream_k(264, 64, kH200Sms);
  EXPECT_EQ(even.sk_ctas, 0);
  EXPECT_EQ(even.dp_turns, 2);
  // 512 tiles: 3 full waves + 116; the last full wave joins the partial one.
  const StreamKPlan p = plan_stream_k(512, 64, kH200Sms);
  EXPECT_EQ(p.dp_turns, 2);
  EXPECT_EQ(p.sk_ctas, kH200Sms);
  EXPECT_EQ(p.per_cta * kH200Sms + p.extra, (512 - 264) * 64);
}

TEST(StreamKPlan, RunsBeyond32BitIterationsFallBackToWholeTiles) {
  // 300 tiles on 132 CTAs: 168 would stream, but 168 x 2^24 iterations overflow 32 bits.
  // Every tile must still be computed, whole, exactly once.
  const int k_tiles = 1 << 24;
  const StreamKPlan p = plan_stream_k(300, k_tiles, kH200Sms);
  EXPECT_EQ(p.sk_ctas, 0);
  std::vector<int> seen(300, 0);
  for (const auto& units : walk(p)) {
    for (const WorkUnit& u : units) {
      ASSERT_GE(u.linear, 0);
      ASSERT_LT(u.linear, 300);
      EXPECT_EQ(u.k_begin, 0);
      EXPECT_EQ(u.k_end, k_tiles);
      ++seen[u.linear];
    }
  }
  for (int t = 0; t < 300; ++t) EXPECT_EQ(seen[t], 1) << "tile " << t;
}

TEST(StreamKPlan, ShortRunsUseFewerCtas) {
  // 4 tiles x 2 K tiles = 8 iterations: with at least 4 per range, only 2 CTAs take part.
  const StreamKPlan p = plan_stream_k(4, 2, kH200Sms, 4);
  EXPECT_EQ(p.sk_ctas, 2);
  EXPECT_EQ(p.per_cta, 4);
  EXPECT_EQ(p.range_begin(kH200Sms - 1), 8);  // the others' ranges are empty
}

TEST(StreamKChoice, BadlyQuantizedSkinnyShapesStream) {
  // M = 256 on Llama-70B's qkv and mlp_up weights: 80 and 224 tall tiles for 132 SMs, whose
  // 128- and 256-wide plans need 2 waves (measured: 98 -> 85 us and 220 -> 207
  // us). With the fitted widths (plan.h) those fill their waves instead: stream-K is then
  // the choice of the 128/256-wide tiles only.
  for (int64_t n : {10240, 28672}) {
    Sm90Problem p{256, n, 8192, 1, false, true};
    EXPECT_NE(choose_sm90_variant(p, kH200Sms), Sm90Variant::kTallStreamK) << n;
    p.fit_widths = false;
    EXPECT_EQ(choose_sm90_variant(p, kH200Sms), Sm90Variant::kTallStreamK) << n;
  }
  // 512 x 28672: 448 tiles = 3.4 waves of pairs (measured: pairs 420 us, stream-K 383 us),
  // but 6.8 waves of ping-pong tiles, which fill them at 97%: whole tiles again.
  const Sm90Problem m512{512, 28672, 8192, 1, false, true};
  EXPECT_EQ(choose_sm90_variant(m512, kH200Sms), Sm90Variant::kPingPongPair);
}

TEST(StreamKChoice, OneFullWaveOfNarrowTilesKeepsThem) {
  // 256 x 8192: 128 tiles of 128 x 128 nearly fill the SMs (as ping-pong pairs, two rows);
  // stream-K's fixup made it slower (measured: 54 -> 72 us at K = 8192, and 7% slower at
  // K = 28672).
  for (int64_t k : {8192, 28672}) {
    const Sm90Problem p{256, 8192, k, 1, false, true};
    EXPECT_EQ(choose_sm90_variant(p, kH200Sms), Sm90Variant::kPingPongPair) << k;
  }
}

TEST(StreamKChoice, FullWavesAndShortKKeepWholeTiles) {
  // Square and prefill shapes fill their waves well enough; gemma3's 128 tiles nearly fill
  // one, as do 512 x 8192's (measured: forced stream-K 0.82x and 0.86x of cuBLAS there).
  for (const Sm90Problem& p : {Sm90Problem{4096, 4096, 4096, 1, false, true}, Sm90Problem{8192, 8192, 8192, 1, false, true},
                               Sm90Problem{512, 8192, 8192, 1, false, true},
                               Sm90Problem{8192, 28672, 8192, 1, false, true}, Sm90Problem{512, 8192, 5376, 1, false, true}}) {
    EXPECT_NE(choose_sm90_variant(p, kH200Sms), Sm90Variant::kTallStreamK) << p.m << "x" << p.n << "x" << p.k;
  }
  // Few K iterations: the fixup would cost more than the idle SMs.
  const Sm90Problem short_k{256, 10240, 256, 1, false, true};
  EXPECT_NE(choose_sm90_variant(short_k, kH200Sms), Sm90Variant::kTallStreamK);
}

TEST(StreamKChoice, NotBelowTheMeasuredKRange) {
  // 4097^3: 561 tall tiles after 5 whole waves of pairs, so the cost model alone prefers
  // stream-K; measured 423 us against 340 us for the pairs. 65 K iterations is
  // below the range where stream-K was measured to win.
  const Sm90Problem odd{4097, 4097, 4097, 1, false, true};
  EXPECT_LT(stream_k_cost(odd.m, odd.n, odd.k, 1, kH200Sms),
            whole_tile_waves_cost(Sm90Variant::kWidePair, odd.m, odd.n, 1, kH200Sms));
  EXPECT_NE(choose_sm90_variant(odd, kH200Sms), Sm90Variant::kTallStreamK);
  // The guard is on K alone: 256 x 10240 streams at K = 8192 (128 iterations, above) and
  // keeps whole tiles at K = 4096, though the model alone would stream it.
  const Sm90Problem short_decode{256, 10240, 4096, 1, false, true};
  EXPECT_LT(stream_k_cost(256, 10240, 4096, 1, kH200Sms),
            whole_tile_waves_cost(choose_classic_sm90_variant(256, 10240, 1, kH200Sms, false, DStore::kTma), 256, 10240, 1,
                                  kH200Sms));
  EXPECT_NE(choose_sm90_variant(short_decode, kH200Sms), Sm90Variant::kTallStreamK);
}

TEST(StreamKChoice, AgainstFittedWidthsWithTheirAllowance) {
  // Why the allowance counts here too: 768 x 4096 x 11008 in 114 tiles of 128 x 224 (86%
  // of one wave) took 122 us, streamed 112 (it now takes 132 tiles of 128 x 192).
  // 256 x 18432 x 8192: 232 tiles of 128 x 160 in 2 waves (88% of them); stream-K's
  // estimate lies between the tiles' waves and the waves over the allowance.
  const Sm90Problem p{256, 18432, 8192, 1, false, true};
  EXPECT_EQ(choose_sm90_variant(256, 18432, 1, kH200Sms), Sm90Variant::kFitPair160);
  const double waves = whole_tile_waves_cost(Sm90Variant::kFitPair160, 256, 18432, 1, kH200Sms);
  EXPECT_GT(stream_k_cost(256, 18432, 8192, 1, kH200Sms), waves);
  EXPECT_LT(stream_k_cost(256, 18432, 8192, 1, kH200Sms), waves / kFitRelativeSpeed);
  EXPECT_EQ(choose_sm90_variant(p, kH200Sms), Sm90Variant::kTallStreamK);
  // 512 x 7168 x 16384: 128 tiles of 128 x 224 fill 97% of the wave; whole tiles stay (188
  // us against 191 streamed).
  const Sm90Problem full{512, 7168, 16384, 1, false, true};
  EXPECT_EQ(choose_sm90_variant(full, kH200Sms), Sm90Variant::kFitPair224);
}

TEST(StreamKChoice, NotWhenForbidden) {
  // The problem BadlyQuantizedSkinnyShapesStream streams (among 128/256-wide tiles),
  // without the workspace for it.
  Sm90Problem p{256, 10240, 8192, 1, false, false};
  p.fit_widths = false;
  EXPECT_NE(choose_sm90_variant(p, kH200Sms), Sm90Variant::kTallStreamK);
}

}  // namespace
}  // namespace anvil::detail
