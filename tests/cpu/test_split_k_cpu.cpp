// The split-K choices as host arithmetic: sm90-gemm's (kernels/sm90/split_k.h) and
// sm90-fp8's (fp8_plan.h, choose_fp8_split_k).
#include <gtest/gtest.h>

#include <string>

#include "kernels/sm90/fp8_plan.h"
#include "kernels/sm90/split_k.h"

namespace anvil::detail {
namespace {

constexpr int kH200Sms = 132;

TEST(SplitK, FewTilesAndLongKSplitIntoEqualSlices) {
  // 256 x 512: four 128 x 256 tiles for 132 SMs.
  const SplitKPlan plan = choose_split_k(256, 512, 131072, 1, kH200Sms);
  ASSERT_GT(plan.slices, 1);
  EXPECT_EQ(plan.slices * plan.slice_k, 131072);
  EXPECT_EQ(plan.slice_k % kSplitKGranule, 0);
  EXPECT_GE(plan.slice_k, kSplitKMinSliceK);
  // The slices' tiles stay within one wave of the GPU.
  EXPECT_LE(plan.slices * 4, kH200Sms);
}

TEST(SplitK, SlicesAreNeverShorterThanTheMinimum) {
  for (int64_t k : {2048, 4096, 7168, 14336, 32768, 65536}) {
    const SplitKPlan plan = choose_split_k(256, 576, k, 1, kH200Sms);
    if (plan.slices > 1) {
      EXPECT_GE(plan.slice_k, kSplitKMinSliceK) << k;
      EXPECT_EQ(plan.slices * plan.slice_k, k) << k;
    }
  }
}

TEST(SplitK, WellFilledOrShortProblemsStayWhole) {
  EXPECT_EQ(choose_split_k(4096, 4096, 4096, 1, kH200Sms).slices, 1);   // 512 tiles
  EXPECT_EQ(choose_split_k(255, 4096, 4096, 1, kH200Sms).slices, 1);    // 32 tiles: whole tiles measured faster
  EXPECT_EQ(choose_split_k(256, 512, 1024, 1, kH200Sms).slices, 1);     // K too short for two slices
}

TEST(SplitK, RefusesWhatTheSlicesCannotExpress) {
  EXPECT_EQ(choose_split_k(256, 512, 131072, 2, kH200Sms).slices, 1);   // strided batch
  EXPECT_EQ(choose_split_k(256, 512, 131071, 1, kH200Sms).slices, 1);   // K off the 16-byte grid
  EXPECT_EQ(choose_split_k(256, 512, 131072, 1, 0).slices, 1);          // no device
}

TEST(SplitK, WorkspaceHoldsEverySlicesPartial) {
  EXPECT_EQ(split_k_workspace_bytes(SplitKPlan{1, 0}, 256, 512), 0u);
  EXPECT_EQ(split_k_workspace_bytes(SplitKPlan{8, 4096}, 256, 512), size_t{8} * 256 * 512 * 4);
}

// ---- sm90-fp8 ----

constexpr ScaleMode kEveryScaleMode[] = {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn,
                                         ScaleMode::kBlock128};

SplitKPlan fp8_split(int64_t m, int64_t n, int64_t k, ScaleMode scales, int64_t batch = 1, int sms = kH200Sms) {
  return choose_fp8_split_k(m, n, k, batch, sms, DataType::kE4M3, DataType::kE4M3, scales);
}

// DeepSeek-V3's kv_a (576 x 7168) and q_a (1536 x 7168) at 1-128 tokens: 6-12 CTAs of
// whole tiles for 132 SMs. Every scale mode splits, in slices of whole 128-wide K blocks
// (at least 4), and the slices fit one wave.
TEST(Fp8SplitKRule, FewTilesAndLongKSplitInWholeKBlocks) {
  for (ScaleMode scales : kEveryScaleMode) {
    for (int64_t m : {1, 16, 64, 128}) {
      for (int64_t n : {576, 1536}) {
        const SplitKPlan plan = fp8_split(m, n, 7168, scales);
        SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + ", scales " + std::to_string(int(scales)));
        ASSERT_GT(plan.slices, 1);
        EXPECT_EQ(plan.slices * plan.slice_k, 7168);
        EXPECT_EQ(plan.slice_k % kFp8KBlock, 0);
        EXPECT_GE(plan.slice_k / kFp8KBlock, kFp8SplitKMinSliceBlocks);
        const Fp8Variant v = choose_fp8_variant(m, n, plan.slices, kH200Sms, DataType::kE4M3, DataType::kE4M3, scales);
        const ClusterShape c = fp8_cluster_shape(v);
        EXPECT_LE(wave_plan(m, n, plan.slices, fp8_tile_shape(v), kH200Sms, c.m, c.n).tiles, kH200Sms);
      }
    }
  }
  // The mixed e5m2 pairs split too (on their one configuration).
  EXPECT_GT(choose_fp8_split_k(64, 576, 7168, 1, kH200Sms, DataType::kE5M2, DataType::kE4M3, ScaleMode::kTensor).slices, 1);
}

// Single tokens and 64-row batches on weights of 56-64 tiles (llama70b's attn_out and
// mlp_down, DeepSeek-V3's o): the whole tiles fill less than half the SMs, and two slices
// fill them - or, where the fitted widths run (not with block scales), four slices of
// 32 single 128 x 224 tiles fill 128 of the 132 SMs as well (DeepSeek-V3's o at 64 rows).
TEST(Fp8SplitKRule, HalfEmptyWaveOfALargeWeightSplitsInTwo) {
  for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kBlock128}) {
    EXPECT_EQ(fp8_split(1, 8192, 8192, scales).slices, 2);
    EXPECT_EQ(fp8_split(1, 8192, 28672, scales).slices, 2);
  }
  EXPECT_EQ(fp8_split(64, 7168, 16384, ScaleMode::kBlock128).slices, 2);
  EXPECT_EQ(fp8_split(64, 7168, 16384, ScaleMode::kTensor).slices, 4);
}

TEST(Fp8SplitKRule, WellFilledShortOrUnalignedProblemsStayWhole) {
  for (ScaleMode scales : kEveryScaleMode) {
    EXPECT_EQ(fp8_split(4096, 4096, 4096, scales).slices, 1);    // hundreds of tiles
    EXPECT_EQ(fp8_split(64, 36864, 7168, scales).slices, 1);     // 288 CTAs: more than two waves
    EXPECT_EQ(fp8_split(64, 24576, 1536, scales).slices, 1);     // q_b: 192 CTAs
    EXPECT_EQ(fp8_split(64, 32768, 512, scales).slices, 1);      // kv_b: K of 4 blocks
    EXPECT_EQ(fp8_split(64, 576, 896, scales).slices, 1);        // 7 blocks: no two slices of 4
    EXPECT_EQ(fp8_split(64, 576, 7168 + 16, scales).slices, 1);  // K off the 128 grid
    EXPECT_EQ(fp8_split(64, 576, 7168, scales, 2).slices, 1);    // a strided batch
    EXPECT_EQ(fp8_split(64, 576, 7168, scales, 1, 0).slices, 1); // no device
  }
}

// The rule against its own model: a split is taken only where it promises the saving, and
// the slice count taken is the cheapest that K allows.
TEST(Fp8SplitKRule, TakesTheCheapestSplitThatSavesEnough) {
  for (ScaleMode scales : kEveryScaleMode) {
    for (int64_t m : {1, 64, 128, 256, 1024}) {
      for (int64_t n : {128, 576, 1536, 4096, 7168}) {
        for (int64_t k : {1024, 4096, 7168, 16384, 65536}) {
          SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
          const SplitKPlan plan = fp8_split(m, n, k, scales);
          const double whole = fp8_whole_tiles_us(m, n, k, kH200Sms, DataType::kE4M3, DataType::kE4M3, scales);
          if (plan.slices == 1) continue;
          ASSERT_TRUE(fp8_split_k_possible(k, plan.slices));
          const double chosen =
              fp8_split_k_estimated_us(m, n, k, plan.slices, kH200Sms, DataType::kE4M3, DataType::kE4M3, scales);
          EXPECT_LT(chosen, whole * (1.0 - kFp8SplitKMinSaving));
          for (int s = 2; s <= kSplitKMaxSlices; ++s) {
            if (!fp8_split_k_possible(k, s)) continue;
            EXPECT_GE(fp8_split_k_estimated_us(m, n, k, s, kH200Sms, DataType::kE4M3, DataType::kE4M3, scales), chosen)
                << s << " slices";
          }
        }
      }
    }
  }
}

TEST(Fp8SplitKRule, SlicesArePossibleInWholeBlocksOnly) {
  EXPECT_TRUE(fp8_split_k_possible(7168, 14));   // 4 blocks each
  EXPECT_FALSE(fp8_split_k_possible(7168, 28));  // 2 blocks: below the minimum
  EXPECT_FALSE(fp8_split_k_possible(7168, 5));   // 56 blocks do not divide by 5
  EXPECT_FALSE(fp8_split_k_possible(7168, 1));
  EXPECT_FALSE(fp8_split_k_possible(7168 + 64, 2));  // half a block over
  EXPECT_TRUE(fp8_split_k_possible(int64_t{128} * 4 * kSplitKMaxSlices, kSplitKMaxSlices));
  EXPECT_FALSE(fp8_split_k_possible(int64_t{128} * 4 * (kSplitKMaxSlices + 1), kSplitKMaxSlices + 1));
}

}  // namespace
}  // namespace anvil::detail
