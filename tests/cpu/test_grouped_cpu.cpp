// The grouped GEMM's host side without a GPU: description checks, the host bounds check,
// the error word's message, and the plan (tile rule, tile bounds, persistent grid).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "anvil/grouped.h"
#include "host/grouped_launch.h"
#include "plan/grouped_plan.h"
#include "verify/grouped_fuzz.h"
#include "verify/grouped_reference.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::GroupedGemmDesc;
using anvil::GroupedLayout;
using anvil::Status;
using anvil::detail::DeviceInfo;
using anvil::detail::GroupedVariant;
using anvil::detail::plan_grouped;

GroupedGemmDesc contiguous(int64_t experts, int64_t n, int64_t k, int64_t rows) {
  GroupedGemmDesc d;
  d.experts = experts;
  d.n = n;
  d.k = k;
  d.rows = rows;
  return d;
}

Status check(const GroupedGemmDesc& d, std::string* message = nullptr) {
  anvil::Diagnostic diag;
  const Status s = anvil::detail::validate_grouped_desc(d, &diag);
  if (message != nullptr) *message = diag.message;
  return s;
}

TEST(GroupedDesc, AcceptsTheMoEShapes) {
  EXPECT_EQ(check(contiguous(256, 4096, 7168, 4096 * 8)), Status::kSuccess);  // DeepSeek-V3 gate_up
  EXPECT_EQ(check(contiguous(256, 7168, 2048, 4096 * 8)), Status::kSuccess);  // and down
  GroupedGemmDesc masked = contiguous(128, 1536, 2048, 64);
  masked.layout = GroupedLayout::kMasked;
  EXPECT_EQ(check(masked), Status::kSuccess);
  EXPECT_EQ(check(contiguous(4, 256, 128, 0)), Status::kSuccess) << "no tokens at all is a valid call";
}

TEST(GroupedDesc, RefusesWithAReason) {
  std::string why;
  EXPECT_EQ(check(contiguous(0, 256, 128, 10), &why), Status::kInvalidArgument);
  EXPECT_NE(why.find("experts"), std::string::npos) << why;
  EXPECT_EQ(check(contiguous(4, 256, 100, 10), &why), Status::kMisalignedOperand);
  EXPECT_NE(why.find("multiple of 8"), std::string::npos) << why;
  EXPECT_EQ(check(contiguous(4, 0, 128, 10), &why), Status::kInvalidArgument);
  EXPECT_EQ(check(contiguous(4, 256, 128, -1), &why), Status::kInvalidArgument);
  GroupedGemmDesc d = contiguous(4, 192, 128, 10);
  d.epilogue.activation = Activation::kSwiGLU;
  EXPECT_EQ(check(d, &why), Status::kNotSupported);
  EXPECT_NE(why.find("SwiGLU"), std::string::npos) << why;
  d = contiguous(4, 256, 128, 10);
  d.epilogue.bias = BiasMode::kPerRow;
  EXPECT_EQ(check(d, &why), Status::kNotSupported);
  d = contiguous(4, 256, 128, 10);
  d.input = DataType::kF32;
  EXPECT_EQ(check(d, &why), Status::kNotSupported);
  d = contiguous(4, 256, 128, 10);
  d.layout = static_cast<GroupedLayout>(7);
  EXPECT_EQ(check(d, &why), Status::kInvalidArgument);
}

TEST(GroupedArgs, RefusesMissingAndMisalignedPointers) {
  const GroupedGemmDesc d = contiguous(4, 256, 128, 100);
  anvil::GroupedGemmArgs a;
  anvil::Diagnostic diag;
  EXPECT_EQ(anvil::detail::validate_grouped_args(d, a, &diag), Status::kInvalidArgument);
  alignas(16) static unsigned char buffer[1 << 20];
  a.a = buffer;
  a.w = buffer + 100 * 128 * 2;
  a.d = buffer + 100 * 128 * 2 + 4 * 256 * 128 * 2;
  a.bounds = buffer;  // (the host never reads it)
  EXPECT_EQ(anvil::detail::validate_grouped_args(d, a, &diag), Status::kSuccess) << diag.message;
  a.a = buffer + 8;
  EXPECT_EQ(anvil::detail::validate_grouped_args(d, a, &diag), Status::kMisalignedOperand);
  a.a = buffer;
  a.d = buffer + 64;  // D over A
  EXPECT_EQ(anvil::detail::validate_grouped_args(d, a, &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("overlaps"), std::string::npos) << diag.message;
}

GroupedGemmDesc fp8(int64_t experts, int64_t n, int64_t k, int64_t rows, anvil::ScaleMode scales) {
  GroupedGemmDesc d = contiguous(experts, n, k, rows);
  d.input = DataType::kE4M3;
  d.scales = scales;
  return d;
}

TEST(GroupedFp8Desc, AcceptsTorchsRowWiseRecipeAndPerTensorScales) {
  using anvil::ScaleMode;
  EXPECT_EQ(check(fp8(256, 4096, 7168, 4096 * 8, ScaleMode::kRowColumn)), Status::kSuccess);  // DeepSeek-V3
  EXPECT_EQ(check(fp8(128, 1536, 2048, 512, ScaleMode::kTensor)), Status::kSuccess);
  EXPECT_EQ(check(fp8(128, 1536, 2048, 512, ScaleMode::kNone)), Status::kSuccess);
  GroupedGemmDesc shared_b = fp8(8, 256, 128, 100, ScaleMode::kRowColumn);
  shared_b.scale_b_per_expert = false;
  EXPECT_EQ(check(shared_b), Status::kSuccess);
  GroupedGemmDesc masked = fp8(32, 2880, 2880, 64, ScaleMode::kRowColumn);
  masked.layout = GroupedLayout::kMasked;
  EXPECT_EQ(check(masked), Status::kSuccess);
  GroupedGemmDesc swiglu = fp8(8, 512, 256, 100, ScaleMode::kRowColumn);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  EXPECT_EQ(check(swiglu), Status::kSuccess);
}

TEST(GroupedFp8Desc, RefusesWithAReason) {
  using anvil::ScaleMode;
  std::string why;
  // 1-byte rows: K must be a multiple of 16 for 16-byte aligned TMA rows.
  EXPECT_EQ(check(fp8(4, 256, 136, 10, ScaleMode::kRowColumn), &why), Status::kMisalignedOperand);
  EXPECT_NE(why.find("multiple of 16"), std::string::npos) << why;
  // Block scales on 16-bit inputs are refused like any scale.
  GroupedGemmDesc half_block = contiguous(4, 256, 128, 10);
  half_block.scales = ScaleMode::kBlock128;
  EXPECT_EQ(check(half_block, &why), Status::kNotSupported);
  EXPECT_NE(why.find("e4m3"), std::string::npos) << why;
  GroupedGemmDesc d = fp8(4, 256, 128, 10, ScaleMode::kRowColumn);
  d.input = DataType::kE5M2;
  EXPECT_EQ(check(d, &why), Status::kNotSupported);
  EXPECT_NE(why.find("e4m3"), std::string::npos) << why;
  d = contiguous(4, 256, 128, 10);
  d.scales = ScaleMode::kTensor;  // bf16 with scales
  EXPECT_EQ(check(d, &why), Status::kNotSupported);
  EXPECT_NE(why.find("e4m3 inputs only"), std::string::npos) << why;
  d = fp8(4, 256, 128, 10, ScaleMode::kRowColumn);
  d.output = DataType::kE4M3;  // 8-bit floats are inputs only
  EXPECT_EQ(check(d, &why), Status::kNotSupported);
  EXPECT_NE(why.find("D and the bias are bf16, fp16 or fp32"), std::string::npos) << why;
  d = fp8(4, 256, 128, 10, static_cast<ScaleMode>(9));
  EXPECT_EQ(check(d, &why), Status::kInvalidArgument);
  EXPECT_NE(why.find("scale mode"), std::string::npos) << why;
}

TEST(GroupedFp8Args, RefusesMissingMisalignedAndOverlappedScales) {
  const GroupedGemmDesc d = fp8(4, 256, 128, 100, anvil::ScaleMode::kRowColumn);
  alignas(16) static unsigned char buffer[1 << 20];
  anvil::GroupedGemmArgs a;
  a.a = buffer;                                  // 100 x 128 bytes
  a.w = buffer + 16384;                          // 4 x 256 x 128 bytes
  a.d = buffer + 16384 + 131072;                 // 100 x 256 bf16
  unsigned char* scales = buffer + 16384 + 131072 + 51200;
  a.bounds = buffer;
  anvil::Diagnostic diag;
  EXPECT_EQ(anvil::detail::validate_grouped_args(d, a, &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("scale_a is null"), std::string::npos) << diag.message;
  a.scale_a = reinterpret_cast<const float*>(scales);
  a.scale_b = reinterpret_cast<const float*>(scales + 400);
  EXPECT_EQ(anvil::detail::validate_grouped_args(d, a, &diag), Status::kSuccess) << diag.message;
  a.scale_b = reinterpret_cast<const float*>(scales + 402);
  EXPECT_EQ(anvil::detail::validate_grouped_args(d, a, &diag), Status::kMisalignedOperand);
  a.scale_b = reinterpret_cast<const float*>(scales + 400);
  a.scale_a = reinterpret_cast<const float*>(buffer + 16384 + 131072 + 51200 - 8);  // last row of D
  EXPECT_EQ(anvil::detail::validate_grouped_args(d, a, &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("scale_a or scale_b"), std::string::npos) << diag.message;
  // No scales: no pointers needed.
  const GroupedGemmDesc none = fp8(4, 256, 128, 100, anvil::ScaleMode::kNone);
  a.scale_a = nullptr;
  a.scale_b = nullptr;
  EXPECT_EQ(anvil::detail::validate_grouped_args(none, a, &diag), Status::kSuccess) << diag.message;
}

// DeepSeek-V3 block scales run the block-scaled 128-wide configurations: where the rule
// would take 128x256 tiles they take 128x128, and the short tiles stay.
TEST(GroupedFp8Plan, BlockScalesTake128WideTiles) {
  using anvil::ScaleMode;
  const DeviceInfo h200 = DeviceInfo::h200();
  EXPECT_EQ(check(fp8(256, 2048, 7168, 4096 * 8, ScaleMode::kBlock128)), Status::kSuccess);
  const auto wide = plan_grouped(fp8(256, 2048, 7168, 4096 * 8, ScaleMode::kBlock128), h200);
  EXPECT_EQ(plan_grouped(fp8(256, 2048, 7168, 4096 * 8, ScaleMode::kRowColumn), h200).variant, GroupedVariant::kWide);
  EXPECT_TRUE(wide.block_scales);
  EXPECT_EQ(wide.variant, GroupedVariant::kNarrow);
  EXPECT_EQ(wide.block_n, 128);
  EXPECT_NE(std::string(wide.reason).find("block scales"), std::string::npos) << wide.reason;
  const auto few = plan_grouped(fp8(256, 2048, 7168, 256 * 8, ScaleMode::kBlock128), h200);
  EXPECT_EQ(few.variant, GroupedVariant::kShort);
  EXPECT_FALSE(plan_grouped(fp8(256, 2048, 7168, 256 * 8, ScaleMode::kRowColumn), h200).block_scales);
  EXPECT_STREQ(anvil::detail::grouped_variant_name(GroupedVariant::kNarrow, true, true), "sm90-grouped-fp8-block/128x128");
  EXPECT_STREQ(anvil::detail::grouped_variant_name(GroupedVariant::kShort, true, true), "sm90-grouped-fp8-block/64x128");
  // The scale arrays each mode reads: block scales per 128 values of K per storage row of
  // A, and per 128 x 128 block of W.
  GroupedGemmDesc d = fp8(4, 200, 400, 37, ScaleMode::kBlock128);
  EXPECT_EQ(anvil::detail::grouped_scale_a_floats(d), 4 * 37);
  EXPECT_EQ(anvil::detail::grouped_scale_b_floats_per_expert(d), 2 * 4);
  d.layout = GroupedLayout::kMasked;
  EXPECT_EQ(anvil::detail::grouped_scale_a_floats(d), 4 * 4 * 37);
  d.scales = ScaleMode::kRowColumn;
  EXPECT_EQ(anvil::detail::grouped_scale_a_floats(d), 4 * 37);
  EXPECT_EQ(anvil::detail::grouped_scale_b_floats_per_expert(d), 200);
}

TEST(GroupedFp8Plan, SameTileRuleWithTheEightBitConfigurations) {
  using anvil::ScaleMode;
  const DeviceInfo h200 = DeviceInfo::h200();
  for (const auto& [bf16, e4m3] : {std::pair{contiguous(128, 1536, 2048, 128), fp8(128, 1536, 2048, 128, ScaleMode::kRowColumn)},
                                   std::pair{contiguous(256, 4096, 7168, 4096 * 8), fp8(256, 4096, 7168, 4096 * 8, ScaleMode::kRowColumn)},
                                   std::pair{contiguous(8, 512, 1024, 1600), fp8(8, 512, 1024, 1600, ScaleMode::kTensor)}}) {
    const auto p16 = plan_grouped(bf16, h200), p8 = plan_grouped(e4m3, h200);
    EXPECT_EQ(p16.variant, p8.variant);
    EXPECT_FALSE(p16.fp8);
    EXPECT_TRUE(p8.fp8);
    EXPECT_EQ(p8.grid_ctas, p16.grid_ctas);
  }
  EXPECT_STREQ(anvil::detail::grouped_variant_name(GroupedVariant::kShort, true), "sm90-grouped-fp8/64x128");
  EXPECT_STREQ(anvil::detail::grouped_variant_name(GroupedVariant::kWide, false), "sm90-grouped/128x256");
}

// The reference runs expert e as a dense FP8 GEMM: its scales must point at the expert's
// first storage row of A's and at the expert's block of B's (or the shared block).
TEST(GroupedFp8Reference, ExpertScalesPointIntoTheGroupedArrays) {
  using anvil::ScaleMode;
  namespace verify = anvil::verify;
  static float sa[1000], sb[1000];
  anvil::GroupedGemmArgs args;
  args.scale_a = sa;
  args.scale_b = sb;
  GroupedGemmDesc d = fp8(4, 16, 32, 100, ScaleMode::kRowColumn);
  const verify::ExpertRows r{37, 5};
  anvil::GemmArgs g = verify::expert_args(d, args, 2, r, nullptr);
  EXPECT_EQ(g.scale_a, sa + 37);
  EXPECT_EQ(g.scale_b, sb + 2 * 16);
  EXPECT_EQ(verify::expert_desc(d, 5).scales, ScaleMode::kRowColumn);
  d.scale_b_per_expert = false;
  g = verify::expert_args(d, args, 2, r, nullptr);
  EXPECT_EQ(g.scale_b, sb);
  d = fp8(4, 16, 32, 100, ScaleMode::kTensor);
  g = verify::expert_args(d, args, 3, r, nullptr);
  EXPECT_EQ(g.scale_a, sa);
  EXPECT_EQ(g.scale_b, sb + 3);
  d.scale_b_per_expert = false;
  g = verify::expert_args(d, args, 3, r, nullptr);
  EXPECT_EQ(g.scale_b, sb);
  // Masked: expert e's first storage row is e x max_rows.
  d = fp8(4, 16, 32, 20, ScaleMode::kRowColumn);
  d.layout = GroupedLayout::kMasked;
  const std::vector<verify::ExpertRows> rows = verify::expert_rows(d, {3, 0, 20, 1});
  g = verify::expert_args(d, args, 2, rows[2], nullptr);
  EXPECT_EQ(g.scale_a, sa + 40);
  // The operands: e4m3 A rows and W blocks at one byte per element.
  EXPECT_EQ(verify::expert_desc(d, 5).a.dtype, DataType::kE4M3);
  // Block scales: A's from the expert's first storage row (reference_grouped gathers its
  // [k_blocks, rows] block), B's from its [ceil(N/128), ceil(K/128)] block.
  d = fp8(4, 200, 400, 100, ScaleMode::kBlock128);
  g = verify::expert_args(d, args, 2, r, nullptr);
  EXPECT_EQ(g.scale_a, sa + 37);
  EXPECT_EQ(g.scale_b, sb + 2 * (2 * 4));
}

TEST(GroupedBoundsHost, NamesTheFirstOffendingExpert) {
  const GroupedGemmDesc d = contiguous(4, 256, 128, 200);
  anvil::Diagnostic diag;
  const std::vector<int64_t> sorted{0, 10, 10, 150, 200};
  EXPECT_EQ(anvil::check_grouped_bounds(d, sorted.data(), &diag), Status::kSuccess);
  const std::vector<int64_t> unsorted{0, 100, 60, 150, 200};
  EXPECT_EQ(anvil::check_grouped_bounds(d, unsorted.data(), &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("decrease at expert 1"), std::string::npos) << diag.message;
  const std::vector<int64_t> beyond{0, 10, 20, 30, 201};
  EXPECT_EQ(anvil::check_grouped_bounds(d, beyond.data(), &diag), Status::kInvalidArgument);
  GroupedGemmDesc m = d;
  m.layout = GroupedLayout::kMasked;
  m.rows = 64;
  const std::vector<int64_t> counts{0, 64, 65, 1};
  EXPECT_EQ(anvil::check_grouped_bounds(m, counts.data(), &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("counts[2]"), std::string::npos) << diag.message;
}

TEST(GroupedBoundsHost, RowEndsFollowTheSameRules) {
  GroupedGemmDesc d = contiguous(4, 256, 128, 200);
  d.offsets_are_ends = true;
  anvil::Diagnostic diag;
  const std::vector<int64_t> ends{10, 10, 150, 190};
  EXPECT_EQ(anvil::check_grouped_bounds(d, ends.data(), &diag), Status::kSuccess) << diag.message;
  const std::vector<int64_t> unsorted{10, 5, 150, 190};
  EXPECT_EQ(anvil::check_grouped_bounds(d, unsorted.data(), &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("decrease at expert 1"), std::string::npos) << diag.message;
  const std::vector<int64_t> beyond{10, 20, 30, 201};
  EXPECT_EQ(anvil::check_grouped_bounds(d, beyond.data(), &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("expert 3"), std::string::npos) << diag.message;
  // The same routing as E + 1 offsets: the same experts' rows.
  const std::vector<anvil::verify::ExpertRows> rows = anvil::verify::expert_rows(d, ends);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].first, 0);
  EXPECT_EQ(rows[0].rows, 10);
  EXPECT_EQ(rows[1].rows, 0);
  EXPECT_EQ(rows[2].first, 10);
  EXPECT_EQ(rows[3].rows, 40);
  // Masked layouts take counts: the flag is refused there.
  d.layout = GroupedLayout::kMasked;
  EXPECT_EQ(check(d), Status::kInvalidArgument);
}

TEST(GroupedErrorWord, SaysWhatWasWrong) {
  anvil::Diagnostic diag;
  EXPECT_EQ(anvil::grouped_error_status(0, &diag), Status::kSuccess);
  EXPECT_EQ(anvil::grouped_error_status(anvil::kGroupedOffsetsDecrease, &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("unsorted"), std::string::npos) << diag.message;
  EXPECT_EQ(anvil::grouped_error_status(anvil::kGroupedCountOutOfRange, &diag), Status::kInvalidArgument);
  EXPECT_NE(std::string(diag.message).find("count"), std::string::npos) << diag.message;
}

TEST(GroupedPlan, TileFollowsTheExpectedRowsPerExpert) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // Decode: ~1 token per expert (16 tokens x top-8 over 128 experts): 64-row tiles.
  EXPECT_EQ(plan_grouped(contiguous(128, 1536, 2048, 128), h200).variant, GroupedVariant::kShort);
  // Prefill: 4096 tokens x top-8 over 256 experts, 128 rows each, 4096 wide: wide tiles fill the SMs.
  EXPECT_EQ(plan_grouped(contiguous(256, 4096, 7168, 4096 * 8), h200).variant, GroupedVariant::kWide);
  // 8 experts of 200 rows, 512 wide: 32 wide tiles would leave 100 SMs idle.
  EXPECT_EQ(plan_grouped(contiguous(8, 512, 1024, 1600), h200).variant, GroupedVariant::kNarrow);
  // The masked layout plans on max_rows unless told otherwise.
  GroupedGemmDesc m = contiguous(32, 5760, 2880, 32);
  m.layout = GroupedLayout::kMasked;
  EXPECT_EQ(plan_grouped(m, h200).variant, GroupedVariant::kShort);
  m.expected_rows_per_expert = 512;
  EXPECT_EQ(plan_grouped(m, h200).variant, GroupedVariant::kWide);
  EXPECT_EQ(plan_grouped(m, h200, static_cast<int>(GroupedVariant::kNarrow)).variant, GroupedVariant::kNarrow);
}

TEST(GroupedPlan, GridIsPersistentAndNeverExceedsTheTiles) {
  const DeviceInfo h200 = DeviceInfo::h200();
  const auto big = plan_grouped(contiguous(256, 4096, 7168, 4096 * 8), h200);
  EXPECT_EQ(big.grid_ctas, h200.sm_count);
  EXPECT_EQ(big.tiles_n, 16);
  // One expert with 10 rows and one 128-wide column: a single tile, a single CTA.
  const auto tiny = plan_grouped(contiguous(1, 128, 64, 10), h200);
  EXPECT_EQ(tiny.max_tiles, 1);
  EXPECT_EQ(tiny.grid_ctas, 1);
  // No rows: still a valid grid of one CTA (grouped_gemm does not launch it).
  EXPECT_EQ(plan_grouped(contiguous(4, 128, 64, 0), h200).grid_ctas, 1);
}

TEST(GroupedPlan, MaxTilesBoundsEveryRouting) {
  // Contiguous: E experts whose segments each end in a partial tile.
  const GroupedGemmDesc d = contiguous(8, 256, 64, 1000);
  const int64_t bound = anvil::detail::grouped_max_tiles(d, 128, 256);
  // Worst routing: 7 experts of 1 row and one of 993 rows: 7 + 8 row tiles.
  EXPECT_GE(bound, 7 + (993 + 127) / 128);
  // And never more than one tile per row.
  EXPECT_LE(anvil::detail::grouped_max_tiles(contiguous(64, 256, 64, 10), 128, 256), 10);
  GroupedGemmDesc m = d;
  m.layout = GroupedLayout::kMasked;
  m.rows = 130;
  EXPECT_EQ(anvil::detail::grouped_max_tiles(m, 128, 128), 8 * 2 * 2);
}

// The grouped fuzzer draws valid problems only, the same ones for the same (seed, index),
// and reaches every layout, tile configuration and the edge cases it promises.
TEST(GroupedFuzzProblems, ValidDeterministicAndCovering) {
  namespace verify = anvil::verify;
  const DeviceInfo h200 = DeviceInfo::h200();
  int layouts[2] = {}, variants[anvil::detail::kGroupedVariants] = {}, swiglu = 0;
  int64_t empty = 0, one_row = 0, many_experts = 0, single_expert = 0;
  int fp8_scales[4] = {}, fp8_shared_b = 0, fp8_shifted = 0, fp8_variants[anvil::detail::kGroupedVariants] = {}, ends = 0;
  for (bool small : {false, true}) {
    for (int64_t i = 0; i < 1500; ++i) {
      const verify::GroupedFuzzProblem p = verify::make_grouped_fuzz_problem(7, i, small);
      std::string why;
      ASSERT_EQ(check(p.desc, &why), Status::kSuccess) << verify::describe(p) << ": " << why;
      const verify::GroupedFuzzProblem again = verify::make_grouped_fuzz_problem(7, i, small);
      ASSERT_EQ(verify::describe(p), verify::describe(again));
      ASSERT_EQ(p.rows, again.rows);
      const std::vector<int64_t> bounds = verify::grouped_bounds(p);
      anvil::Diagnostic diag;
      ASSERT_EQ(anvil::check_grouped_bounds(p.desc, bounds.data(), &diag), Status::kSuccess)
          << verify::describe(p) << ": " << diag.message;
      ++layouts[static_cast<int>(p.desc.layout)];
      ++variants[static_cast<int>(plan_grouped(p.desc, h200).variant)];
      swiglu += p.desc.epilogue.activation == Activation::kSwiGLU;
      for (int64_t r : p.rows) empty += r == 0, one_row += r == 1;
      many_experts += p.desc.experts > 128;
      single_expert += p.desc.experts == 1;
      if (p.desc.offsets_are_ends) {
        ++ends;
        ASSERT_EQ(bounds.size(), size_t(p.desc.experts)) << verify::describe(p);
      }
      if (p.desc.input == DataType::kE4M3) {
        ASSERT_EQ(p.desc.k % 16, 0) << verify::describe(p);
        ++fp8_scales[static_cast<int>(p.desc.scales)];
        fp8_shared_b += !p.desc.scale_b_per_expert;
        fp8_shifted += p.scale_a_offset > 0;
        if (p.desc.scales == anvil::ScaleMode::kBlock128) {
          ASSERT_NE(plan_grouped(p.desc, h200).variant, GroupedVariant::kWide) << verify::describe(p);
        } else {
          ASSERT_EQ(p.scale_a_offset, 0) << verify::describe(p);
        }
        ++fp8_variants[static_cast<int>(plan_grouped(p.desc, h200).variant)];
      }
    }
  }
  EXPECT_GT(layouts[0], 500);
  EXPECT_GT(layouts[1], 500);
  for (int v = 0; v < anvil::detail::kGroupedVariants; ++v) EXPECT_GT(variants[v], 50) << "variant " << v;
  EXPECT_GT(swiglu, 50);
  EXPECT_GT(empty, 1000);
  EXPECT_GT(one_row, 1000);
  EXPECT_GT(many_experts, 50);
  EXPECT_GT(single_expert, 10);
  EXPECT_GT(fp8_scales[0], 30);
  EXPECT_GT(fp8_scales[1], 100);
  EXPECT_GT(fp8_scales[2], 200);
  EXPECT_GT(fp8_scales[3], 200);
  EXPECT_GT(fp8_shifted, 100);
  EXPECT_GT(fp8_shared_b, 50);
  EXPECT_GT(ends, 200);
  for (int v = 0; v < anvil::detail::kGroupedVariants; ++v) EXPECT_GT(fp8_variants[v], 20) << "fp8 variant " << v;
}

}  // namespace
