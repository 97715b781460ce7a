// The decode kernel's shape choices (src/kernels/sm90/decode_plan.h) and the dispatcher's
// routing between decode and prefill kernels: host-only, tested without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "anvil/gemm.h"
#include "kernels/sm90/decode_plan.h"

namespace anvil::detail {
namespace {

// What the occupancy API reports on an H200 for the memory-bound configurations: two CTAs
// per SM, with clusters packed into GPCs of 16-18 SMs (modelled: 132 SMs, 2 per SM, whole
// clusters only).
int two_per_sm(int splits) { return (264 / splits) * splits; }
int one_per_sm(int splits) { return (132 / splits) * splits; }

TEST(DecodeTokenTile, NarrowestWgmmaWidthThatHoldsTheTokens) {
  EXPECT_EQ(decode_token_tile(1), 8);
  EXPECT_EQ(decode_token_tile(8), 8);
  EXPECT_EQ(decode_token_tile(9), 16);
  EXPECT_EQ(decode_token_tile(64), 64);
  EXPECT_EQ(decode_token_tile(65), 96);
  EXPECT_EQ(decode_token_tile(96), 96);
  EXPECT_EQ(decode_token_tile(97), 128);
  EXPECT_EQ(decode_token_tile(256), 256);
  EXPECT_EQ(decode_token_tile(257), 256);  // several 256-wide tiles
}

// A last token tile that runs past M is moved back to end at M, where M holds a whole
// tile; the others, and a lone tile wider than M, keep their rows.
TEST(DecodeTokenTile, ALastTilePastMMovesBackToEndAtM) {
  EXPECT_EQ(moved_token_rows_begin(255, 128, 128), 127);  // rows 127-254: one row recomputed
  EXPECT_EQ(moved_token_rows_begin(129, 128, 128), 1);
  EXPECT_EQ(moved_token_rows_begin(255, 0, 128), 0);      // the first tile keeps its rows
  EXPECT_EQ(moved_token_rows_begin(256, 128, 128), 128);  // M a multiple of the tile: none moves
  EXPECT_EQ(moved_token_rows_begin(100, 0, 128), 0);      // one tile wider than M: zero-filled rows
  EXPECT_EQ(moved_token_rows_begin(300, 256, 256), 44);
  EXPECT_EQ(moved_token_rows_begin(1000, 896, 128), 872);
  // Every moved tile still starts at or after 0 and ends exactly at M.
  for (int64_t m = 1; m <= 1024; ++m) {
    for (int tile : {8, 16, 32, 64, 96, 128, 256}) {
      for (int64_t token0 = 0; token0 < m; token0 += tile) {
        const int64_t begin = moved_token_rows_begin(m, token0, tile);
        EXPECT_GE(begin, 0);
        EXPECT_LE(begin, token0);
        if (m >= tile) {
          EXPECT_LE(begin + tile, m);
        }
      }
    }
  }
}

TEST(DecodeSplit, BandwidthBoundCostIsTheStreamSharedByResidentCtas) {
  // 256 CTAs x (32 + overhead) k-tiles over 264 slots.
  const DecodeSplit s = decode_split_cost(64, 128, 4, 264, true);
  EXPECT_EQ(s.ctas, 256);
  EXPECT_EQ(s.waves, 1);
  EXPECT_EQ(s.k_tiles_per_cta, 32);
  EXPECT_NEAR(s.cost, 256.0 * (32 + kDecodeCtaOverheadTiles) / 264.0, 1e-9);
  // A lone CTA cannot take the whole GPU's bandwidth.
  const DecodeSplit alone = decode_split_cost(1, 120, 1, 264, true);
  EXPECT_NEAR(alone.cost, 120 / kDecodeCtaBandwidthHeadroom + kDecodeCtaOverheadTiles, 1e-9);
}

TEST(DecodeSplit, ComputeBoundCostCountsWholeWaves) {
  const DecodeSplit s = decode_split_cost(133, 10, 1, 132, false);
  EXPECT_EQ(s.waves, 2);
  EXPECT_NEAR(s.cost, 2 * (10 + kDecodeCtaOverheadTiles), 1e-9);
}

TEST(DecodeSplit, SplitsKWhenTooFewCtasStream) {
  // 8192 features = 64 tiles of 128: unsplit, each CTA would have to stream 4x its share.
  EXPECT_GE(choose_decode_split(64, 128, true, two_per_sm).splits, 2);
  // 1024 features, long K: 8 tiles, the widest split.
  EXPECT_EQ(choose_decode_split(8, 128, true, two_per_sm).splits, 8);
}

TEST(DecodeSplit, NoSplitWhenTilesAlreadyKeepDramBusy) {
  // 28672 features = 224 tiles: enough streams without splitting; splitting only adds
  // CTA overheads.
  EXPECT_EQ(choose_decode_split(224, 128, true, two_per_sm).splits, 1);
  EXPECT_EQ(choose_decode_split(1024, 128, true, two_per_sm).splits, 1);
}

TEST(DecodeSplit, NarrowTokenTilesLetEightyTilesStreamUnsplit) {
  // 10240 features = 80 tiles (H200: 16 tokens 45.5 us unsplit against 47.6 in
  // two splits; 32 and 64 tokens 48.3 and 53.8 unsplit against 46.0 and 47.0).
  EXPECT_EQ(choose_decode_split(80, 128, true, two_per_sm, decode_cta_headroom(16)).splits, 1);
  EXPECT_EQ(choose_decode_split(80, 128, true, two_per_sm, decode_cta_headroom(32)).splits, 2);
  EXPECT_EQ(choose_decode_split(80, 128, true, two_per_sm, decode_cta_headroom(64)).splits, 2);
  // 64 tiles still split at 16 tokens (35.4 us in two splits, 39.3 unsplit).
  EXPECT_EQ(choose_decode_split(64, 128, true, two_per_sm, decode_cta_headroom(16)).splits, 2);
}

// Batch invariance: the split is a function of the weight (N, K) and the batch count
// alone (batch_invariant_split), in slices of at least 8 64-wide k-tiles (uneven where K
// does not divide: sm90-decode's ranks and the folded slices cut at r k / s), and the most
// whose 128-token tiles fit one wave of one CTA per SM.
TEST(DecodeSplit, BatchInvariantSplitIsTheWeightsOwn) {
  const auto resident = [](int splits) { return one_per_sm(splits); };
  EXPECT_EQ(batch_invariant_split(512, 131072, 1, 132, resident), 8);   // 4 tiles: the widest cluster
  EXPECT_EQ(batch_invariant_split(1536, 40960, 1, 132, resident), 8);   // 12 tiles x 8 = 96 CTAs
  EXPECT_EQ(batch_invariant_split(2048, 16384, 1, 132, resident), 8);   // 16 tiles, the most that split
  EXPECT_EQ(batch_invariant_split(2176, 65536, 1, 132, resident), 1);   // 17 tiles
  EXPECT_EQ(batch_invariant_split(5120, 25600, 1, 132, resident), 1);   // 40 tiles
  EXPECT_EQ(batch_invariant_split(576, 7168, 1, 132, resident), 8);     // 112 k-tiles: 14 per slice
  EXPECT_EQ(batch_invariant_split(8, 4096, 1, 132, resident), 8);       // a router: 8 k-tiles per slice
  EXPECT_EQ(batch_invariant_split(1600, 6400, 1, 132, resident), 8);    // 100 k-tiles: slices of 12 and 13
  EXPECT_EQ(batch_invariant_split(1024, 1024, 1, 132, resident), 2);    // 16 k-tiles: two slices of 8
  EXPECT_EQ(batch_invariant_split(1024, 960, 1, 132, resident), 1);     // 15 k-tiles: too short to cut
  EXPECT_EQ(batch_invariant_split(1024, 65544, 1, 132, resident), 8);   // a partial last k-tile
  EXPECT_EQ(batch_invariant_split(512, 131072, 5, 132, resident), 1);   // 20 tiles over the batches
  EXPECT_EQ(batch_invariant_split(512, 131072, 1, 78, resident), 8);    // a smaller GPU: 4 x 8 CTAs still fit
  for (int64_t n : {8, 128, 576, 1024, 3072, 4096, 7168, 8192, 28672}) {
    for (int64_t k : {512, 1000, 2048, 2880, 8192, 14336, 16384, 18432, 40960, 65536, 131072}) {
      const int s = batch_invariant_split(n, k, 1, 132, resident);
      SCOPED_TRACE(std::to_string(n) + " x " + std::to_string(k));
      ASSERT_GE(s, 1);
      ASSERT_LE(s, kDecodeMaxSplit);
      if (s == 1) continue;
      EXPECT_GE((k + 63) / 64 / s, kBatchInvariantMinSliceKTiles);
      EXPECT_LE((n + 127) / 128 * s, one_per_sm(s));
      EXPECT_LE((n + 127) / 128 * kDecodeMaxSplit, 132);
    }
  }
}

// 96- and 128-token tiles take the most splits that fill one wave. The residents are the
// occupancy API's answers for those configurations on the H200 (a plan trace: one
// CTA per SM, fewer where clusters of 3 and more leave a GPC's last SMs idle), the
// expected splits the fastest of all eight measured at 80-128 tokens x K = 8192 (docs/
// decode.md); the whole-waves score had picked 3 for 9216, 4 for 10240 and 8 for 12288.
TEST(DecodeSplit, WideTokenTilesFillOneWave) {
  const auto h200_one_per_sm = [](int, int splits) {
    constexpr int kResident[] = {132, 132, 117, 120, 110, 102, 105, 120};
    return kResident[splits - 1];
  };
  const std::pair<int64_t, int> fastest[] = {{6144, 2}, {8192, 2}, {9216, 1}, {10240, 1}, {12288, 1}, {14336, 1}};
  for (int64_t m : {80, 96, 112, 128}) {
    for (const auto& [n, splits] : fastest) {
      const GemmDesc d = linear_desc(m, n, 8192, DataType::kBF16, DataType::kBF16);
      const DecodeLaunchPlan plan = plan_decode(d, decode_token_tile(m), h200_one_per_sm);
      EXPECT_EQ(plan.split.splits, splits) << "m = " << m << ", n = " << n;
      EXPECT_EQ(plan.split.waves, 1) << "m = " << m << ", n = " << n;
    }
  }
  // 256 tokens keep the whole-waves score, which splits 80 tiles over two waves (256 x
  // 10240: 3 splits, 122 us in the 2026-11-29 sweep, docs/decode.md; unsplit not measured).
  const GemmDesc wide = linear_desc(256, 10240, 8192, DataType::kBF16, DataType::kBF16);
  EXPECT_GT(plan_decode(wide, 256, h200_one_per_sm).split.splits, 1);
}

TEST(DecodeSplit, ComputeBoundTilesBalanceWaves) {
  // 256 tokens x 8192 features: 64 tiles on 132 SMs, one per SM: two splits fill 128.
  EXPECT_EQ(choose_decode_split(64, 128, false, one_per_sm).splits, 2);
}

TEST(DecodeSplit, NeverMoreSplitsThanKTiles) {
  EXPECT_EQ(choose_decode_split(1, 1, true, two_per_sm).splits, 1);
  EXPECT_LE(choose_decode_split(1, 3, true, two_per_sm).splits, 3);
}

TEST(DecodeSplit, SingleWaveSplitFillsOneWaveAndNoMore) {
  const auto one_per_sm = [](int) { return 132; };
  // 8192 features: 64 tiles, two splits fill 128 of 132 SMs; three would need 192.
  EXPECT_EQ(choose_single_wave_split(64, 128, one_per_sm).splits, 2);
  // 10240 features: 80 tiles, already past half the SMs: unsplit.
  EXPECT_EQ(choose_single_wave_split(80, 128, one_per_sm).splits, 1);
  // More tiles than SMs: waves are unavoidable, splitting adds none.
  EXPECT_EQ(choose_single_wave_split(224, 128, one_per_sm).splits, 1);
  // Few tiles: the widest split, but never more than there are k-tiles.
  EXPECT_EQ(choose_single_wave_split(8, 128, one_per_sm).splits, 8);
  EXPECT_EQ(choose_single_wave_split(8, 3, one_per_sm).splits, 3);
  // Clusters that fit fewer CTAs (GPC boundaries) are counted as the occupancy query says.
  const auto wide_clusters_fit_less = [](int s) { return s >= 3 ? 120 : 132; };
  EXPECT_EQ(choose_single_wave_split(40, 128, wide_clusters_fit_less).splits, 3);
  EXPECT_EQ(choose_single_wave_split(44, 128, wide_clusters_fit_less).splits, 2);
}

// The load-path kernels split K over parts (a cluster's warpgroups) with k_step_range, and a
// warpgroup with fewer steps than most_k_steps passes the missing warpgroup barriers (for
// racecheck, decode_ldg_kernel.cuh): the parts must cover K's steps once, in order, differ
// by at most one step, and the largest must be most_k_steps exactly.
TEST(DecodeLdgSteps, PartsCoverKAndTheLargestIsMostSteps) {
  for (int parts : {1, 2, 3, 4, 6, 8, 16}) {
    for (int steps = 1; steps <= 300; ++steps) {
      int next = 0, fewest = steps, most = 0;
      for (int part = 0; part < parts; ++part) {
        const KStepRange range = k_step_range(part, parts, steps);
        EXPECT_EQ(range.begin, next) << parts << " parts, " << steps << " steps, part " << part;
        next = range.end;
        fewest = std::min(fewest, range.end - range.begin);
        most = std::max(most, range.end - range.begin);
      }
      EXPECT_EQ(next, steps) << parts << " parts, " << steps << " steps";
      EXPECT_LE(most - fewest, 1) << parts << " parts, " << steps << " steps";
      EXPECT_EQ(most, most_k_steps(parts, steps)) << parts << " parts, " << steps << " steps";
    }
  }
  // K = 256 in 128-wide steps over four warpgroups, the shape racecheck first flagged: two
  // warpgroups run a step, two none.
  EXPECT_EQ(k_step_range(0, 4, 2).end - k_step_range(0, 4, 2).begin, 0);
  EXPECT_EQ(k_step_range(1, 4, 2).end - k_step_range(1, 4, 2).begin, 1);
  EXPECT_EQ(most_k_steps(4, 2), 1);
}

TEST(DecodeDispatch, CrossoverFollowsTheMeasuredSweep) {
  EXPECT_TRUE(prefers_decode(1, 8192, 1, 132));
  EXPECT_TRUE(prefers_decode(64, 28672, 1, 132));
  // 65-128 tokens: decode only while sm90-gemm's tiles would leave SMs idle.
  EXPECT_TRUE(prefers_decode(128, 8192, 1, 132));     // 64 narrow tiles
  EXPECT_FALSE(prefers_decode(128, 28672, 1, 132));   // 112 wide tiles
  EXPECT_FALSE(prefers_decode(128, 8192, 4, 132));    // 256 narrow tiles
  // ... or wherever decode's own tiles fit in one wave.
  EXPECT_TRUE(decode_tiles_fit_one_wave(16896, 1, 132));   // 132 tiles
  EXPECT_FALSE(decode_tiles_fit_one_wave(17024, 1, 132));  // 133
  EXPECT_FALSE(decode_tiles_fit_one_wave(8192, 3, 132));   // 192 over three batches
  for (int64_t m : {65, 80, 96, 112, 128}) {
    EXPECT_TRUE(prefers_decode(m, 14336, 1, 132)) << m;  // 112 tiles, where sm90-gemm's wave plan counts as full
    EXPECT_TRUE(prefers_decode(m, 13312, 1, 132)) << m;  // 104 tiles: 79% of the SMs
    EXPECT_TRUE(prefers_decode(m, 10240, 1, 132)) << m;
    EXPECT_FALSE(prefers_decode(m, 17408, 1, 132)) << m;  // 136 tiles
  }
  EXPECT_FALSE(prefers_decode(256, 8192, 1, 132));    // 128 narrow tiles
  // Past 128 tokens sm90-gemm even when it under-fills (256 x 10240: 80 CTAs).
  EXPECT_FALSE(prefers_decode(256, 10240, 1, 132));
  EXPECT_FALSE(prefers_decode(129, 1024, 1, 132));
}

TEST(DecodeDispatch, LoadPathKernelUpToEightTokens) {
  EXPECT_TRUE(prefers_decode_ldg(1));
  EXPECT_TRUE(prefers_decode_ldg(8));
  EXPECT_FALSE(prefers_decode_ldg(9));   // the TMA kernel from here (16 x 10240: 45.6 against 49.3 us)
  EXPECT_FALSE(prefers_decode_ldg(16));
}

// The dispatcher's routing needs no GPU: dispatch_name runs the description checks only
// (and assumes an H200's 132 SMs when no device can be asked).
TEST(DecodeDispatch, FewTokensGoToTheDecodeKernel) {
  // 80 tiles of 128 rows fill 61% of a wave of the load path's one-CTA-per-SM kernel: the
  // TMA-fed kernel, whose CTAs share DRAM across whatever runs.
  EXPECT_STREQ(dispatch_name(linear_desc(1, 10240, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode");
  EXPECT_STREQ(dispatch_name(linear_desc(8, 10240, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode");
  // A short K does not amortize the load path's in-CTA reduction.
  EXPECT_STREQ(dispatch_name(linear_desc(1, 32768, 512, DataType::kBF16, DataType::kBF16)), "sm90-decode");
  EXPECT_STREQ(dispatch_name(linear_desc(1, 28672, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode-ldg");
  EXPECT_STREQ(dispatch_name(linear_desc(16, 10240, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(16, 28672, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode");
  EXPECT_STREQ(dispatch_name(linear_desc(17, 10240, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode");
  EXPECT_STREQ(dispatch_name(linear_desc(64, 28672, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode");
  EXPECT_STREQ(dispatch_name(linear_desc(256, 8192, 8192, DataType::kBF16, DataType::kBF16)), "sm90-gemm");
}

// At m tokens on the 8192-feature weight, the 64-row kernels' refusals: SwiGLU (a 64-row
// tile cannot hold a gate block and its up block) goes to swiglu_kernel. Batch-invariant
// mode takes the TMA-fed 64-row tiles unsplit (128 of them, all resident at once), never
// the load path's.
void expect_rows64_fallbacks(int64_t m, const char* swiglu_kernel) {
  SCOPED_TRACE("m = " + std::to_string(m));
  GemmDesc swiglu = linear_desc(m, 8192, 8192, DataType::kBF16, DataType::kBF16);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  EXPECT_STREQ(dispatch_name(swiglu), swiglu_kernel);
  GemmDesc invariant = linear_desc(m, 8192, 8192, DataType::kBF16, DataType::kBF16);
  invariant.batch_invariant = true;
  EXPECT_STREQ(dispatch_name(invariant), "sm90-decode-r64");
}

// 64-row tiles without a split where they are all resident at once: at 17-64 tokens (one
// CTA per SM) where they fill one wave of 132 SMs (119-132 tiles), the 8192-feature weight;
// at 9-16 tokens (two per SM) from 84% of the SMs to two per SM (111-264 tiles), the 7168-,
// 8192- and 10240-feature weights. Not 8 tokens (the load path's), not 28672 features,
// not 4096 (64 tiles), not SwiGLU. Up to 24 tokens the load path's
// 64-row tiles take the weights that fill one wave first (the next test).
TEST(DecodeDispatch, SixtyFourRowTilesWhereTheyAllRunAtOnce) {
  EXPECT_TRUE(prefers_decode_r64(17, 8192, 1, 132));
  EXPECT_TRUE(prefers_decode_r64(64, 8192, 1, 132));
  EXPECT_TRUE(prefers_decode_r64(64, 7616, 1, 132));   // 119 tiles
  EXPECT_FALSE(prefers_decode_r64(64, 7552, 1, 132));  // 118 tiles: 89%
  EXPECT_FALSE(prefers_decode_r64(64, 8512, 1, 132));  // 133 tiles: a second wave
  EXPECT_FALSE(prefers_decode_r64(17, 10240, 1, 132));
  EXPECT_FALSE(prefers_decode_r64(65, 8192, 1, 132));
  EXPECT_FALSE(prefers_decode_r64(64, 4096, 1, 132));
  EXPECT_FALSE(prefers_decode_r64(64, 4096, 4, 132));  // 256 tiles
  EXPECT_TRUE(prefers_decode_r64(32, 4096, 2, 132));   // 128 tiles over two batches

  EXPECT_TRUE(prefers_decode_r64(9, 8192, 1, 132));
  EXPECT_TRUE(prefers_decode_r64(16, 10240, 1, 132));   // 160 tiles, two per SM
  EXPECT_TRUE(prefers_decode_r64(16, 7168, 1, 132));    // 112 tiles (measured)
  EXPECT_TRUE(prefers_decode_r64(16, 7104, 1, 132));    // 111 tiles: 84.1%
  EXPECT_FALSE(prefers_decode_r64(16, 7040, 1, 132));   // 110 tiles: 83.3%
  EXPECT_TRUE(prefers_decode_r64(16, 16896, 1, 132));   // 264 tiles
  EXPECT_FALSE(prefers_decode_r64(16, 16960, 1, 132));  // 265 tiles: more than two per SM
  EXPECT_FALSE(prefers_decode_r64(16, 28672, 1, 132));
  EXPECT_FALSE(prefers_decode_r64(8, 8192, 1, 132));

  EXPECT_STREQ(dispatch_name(linear_desc(16, 7168, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(16, 10240, 8192, DataType::kF16, DataType::kF16)), "sm90-decode-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(9, 8192, 28672, DataType::kBF16, DataType::kBF16)), "sm90-decode-r64");

  EXPECT_STREQ(dispatch_name(linear_desc(25, 8192, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(64, 8192, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(64, 8192, 8192, DataType::kF16, DataType::kF16)), "sm90-decode-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(16, 28672, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode");
  EXPECT_STREQ(dispatch_name(linear_desc(64, 10240, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode");
  expect_rows64_fallbacks(16, "sm90-decode");
  expect_rows64_fallbacks(64, "sm90-decode");
}

// The load path's 64-row tiles where they fill one wave and K is at most 16384: 1-24 tokens
// on the 8192-feature weight; not 25 tokens, not 10240 or 28672 features, not K = 28672 or
// 16385, not SwiGLU (the 128-row load-path kernel takes it up to 8 tokens, sm90-decode
// from 9), not batch invariance.
TEST(DecodeDispatch, LoadPathSixtyFourRowTilesWhereTheyFillOneWave) {
  EXPECT_TRUE(prefers_decode_ldg_r64(1, 8192, 8192, 1, 132));
  EXPECT_TRUE(prefers_decode_ldg_r64(8, 8192, 8192, 1, 132));
  EXPECT_TRUE(prefers_decode_ldg_r64(1, 8192, 16384, 1, 132));
  EXPECT_FALSE(prefers_decode_ldg_r64(1, 8192, 16385, 1, 132));
  EXPECT_TRUE(prefers_decode_ldg_r64(1, 7616, 8192, 1, 132));   // 119 tiles
  EXPECT_FALSE(prefers_decode_ldg_r64(1, 7552, 8192, 1, 132));  // 118 tiles: 89%
  EXPECT_FALSE(prefers_decode_ldg_r64(1, 8512, 8192, 1, 132));  // 133 tiles: a second wave
  EXPECT_TRUE(prefers_decode_ldg_r64(9, 8192, 8192, 1, 132));
  EXPECT_TRUE(prefers_decode_ldg_r64(24, 8192, 8192, 1, 132));
  EXPECT_FALSE(prefers_decode_ldg_r64(25, 8192, 8192, 1, 132));
  EXPECT_FALSE(prefers_decode_ldg_r64(16, 8192, 16385, 1, 132));
  EXPECT_FALSE(prefers_decode_ldg_r64(1, 10240, 8192, 1, 132));
  EXPECT_TRUE(prefers_decode_ldg_r64(4, 4096, 4096, 2, 132));  // 128 tiles over two batches

  EXPECT_STREQ(dispatch_name(linear_desc(1, 8192, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode-ldg-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(8, 8192, 8192, DataType::kF16, DataType::kF16)), "sm90-decode-ldg-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(1, 8192, 28672, DataType::kBF16, DataType::kBF16)), "sm90-decode-ldg");
  EXPECT_STREQ(dispatch_name(linear_desc(9, 8192, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode-ldg-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(24, 8192, 8192, DataType::kF16, DataType::kF16)), "sm90-decode-ldg-r64");
  EXPECT_STREQ(dispatch_name(linear_desc(25, 8192, 8192, DataType::kBF16, DataType::kBF16)), "sm90-decode-r64");
  expect_rows64_fallbacks(1, "sm90-decode-ldg");
  expect_rows64_fallbacks(16, "sm90-decode");
}

// Below a wave of 64-row tiles, 1-8 tokens still go to the load path's 64-row tiles where
// their single-wave plan (at most two splits) makes as many CTAs as the 128-row tiles' and
// at least 72% of the SMs: the H200's residency by cluster size, and the widths of
// a sweep of them with the side each measured faster on.
TEST(DecodeDispatch, LoadPathSixtyFourRowTilesWithASplitWhereTheyMakeMoreCtas) {
  const int h200[kDecodeMaxSplit + 1] = {0, 132, 132, 117, 120, 110, 102, 105, 120};
  const auto resident = [&](int s) { return h200[s]; };
  const auto rows64 = [&](int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
    return prefers_decode_ldg_r64_split(m, n, k, batch, 132, resident);
  };
  for (int64_t m : {1, 4, 8}) {
    for (int64_t k : {4096, 8192}) {
      SCOPED_TRACE("m = " + std::to_string(m) + ", k = " + std::to_string(k));
      EXPECT_FALSE(rows64(m, 2048, k));  // 96 CTAs in three splits, against 96 in six
      EXPECT_FALSE(rows64(m, 2560, k));  // 80 against 100
      EXPECT_TRUE(rows64(m, 3072, k));   // 96 against 96
      EXPECT_TRUE(rows64(m, 3584, k));   // 112 against 112
      EXPECT_TRUE(rows64(m, 4096, k));   // 128 against 96
      EXPECT_TRUE(rows64(m, 4097, k));   // 130 against 99
      EXPECT_FALSE(rows64(m, 4608, k));  // 72 against 108
      EXPECT_FALSE(rows64(m, 5120, k));  // 80 against 80: under 72% of the SMs
      EXPECT_FALSE(rows64(m, 5632, k));  // 88 against 88
      EXPECT_TRUE(rows64(m, 6144, k));   // 96 against 96, unsplit
      EXPECT_TRUE(rows64(m, 7168, k));   // 112 against 112
    }
  }
  EXPECT_FALSE(rows64(9, 4096, 4096));      // past the load path's tokens
  EXPECT_FALSE(rows64(1, 4096, 16385));     // past the 64-row tiles' K
  EXPECT_FALSE(rows64(1, 8512, 8192));      // 133 tiles: a second wave
  EXPECT_TRUE(rows64(1, 2048, 4096, 2));    // 64 tiles over two batches: 128 CTAs in two splits
  EXPECT_FALSE(rows64(1, 28672, 8192));     // 448 tiles
}

TEST(DecodeDispatch, LayoutsTheDecodeKernelCannotReadGoToTheRepackingKernel) {
  GemmDesc d = linear_desc(16, 4096, 4096, DataType::kBF16, DataType::kBF16);
  d.b.order = Order::kRowMajor;  // W stored K x N
  d.b.ld = 4096;
  EXPECT_STREQ(dispatch_name(d), "sm90-gemm");
  GemmDesc odd = linear_desc(16, 4096, 4095, DataType::kBF16, DataType::kBF16);
  EXPECT_STREQ(dispatch_name(odd), "sm90-gemm");
}

// Batch-invariant problems take unsplit plans only (src/plan/planner.h): the TMA-fed
// decode kernels up to 64 tokens, and up to 128 sm90-decode-r64's tiles where sm90-gemm's
// whole tiles are few (8192 features: 64 tiles of 128 x 128); sm90-gemm's whole tiles
// beyond; never the load-path kernels, whose warpgroups split K.
TEST(DecodeDispatch, BatchInvariantModeTakesUnsplitPlans) {
  for (int64_t m : {1, 64, 65, 128, 256, 257, 8192}) {
    GemmDesc d = linear_desc(m, 8192, 8192, DataType::kBF16, DataType::kBF16);
    d.batch_invariant = true;
    const char* name = dispatch_name(d);
    ASSERT_NE(name, nullptr);
    if (m <= 64) {
      EXPECT_TRUE(std::string(name) == "sm90-decode" || std::string(name) == "sm90-decode-r64") << "m = " << m << ": " << name;
    } else if (m <= 128) {
      EXPECT_STREQ(name, "sm90-decode-r64") << "m = " << m;
    } else {
      EXPECT_STREQ(name, "sm90-gemm") << "m = " << m;
    }
  }
}

}  // namespace
}  // namespace anvil::detail
