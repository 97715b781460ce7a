// The split-K choice (kernels/sm90/split_k.h) as host arithmetic.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace anvil::detail
