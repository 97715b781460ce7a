// The planner's rules on the CPU (src/plan/planner.h): which family, tile, split and row
// split each problem gets, that every override is honoured and every choice has a reason.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/dispatch_pins.h"
#include "plan/planner.h"
#include "kernels/sm90/decode_plan.h"

namespace anvil::detail {
namespace {

using pins::kPinK;
using pins::kPinN;
using pins::kPins;
using pins::Pin;
using pins::pin_desc;

// nn.Linear's layout (linear_desc's, without linking the library): A row-major, B = W^T
// column-major, C and D row-major.
GemmDesc linear(int64_t m, int64_t n, int64_t k) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k;
  d.a = MatrixLayout{DataType::kBF16, Order::kRowMajor, k > 0 ? k : 1, 0};
  d.b = MatrixLayout{DataType::kBF16, Order::kColMajor, k > 0 ? k : 1, 0};
  d.c = MatrixLayout{DataType::kBF16, Order::kRowMajor, n > 0 ? n : 1, 0};
  d.d = MatrixLayout{DataType::kBF16, Order::kRowMajor, n > 0 ? n : 1, 0};
  return d;
}

// Batch-invariant mode's K split for d's weight (decode_plan.h).
int weight_split(const GemmDesc& d, const DeviceInfo& device) {
  return batch_invariant_split(d.n, d.k, d.batch, device.sm_count,
                               [&](int s) { return device.resident(DecodeConfigId::kTma128, s); });
}

// ---- The dispatcher's choices before the planner existed, pinned (dispatch_pins.h) ----

char family_letter(KernelFamily f) {
  switch (f) {
    case KernelFamily::kSm90Gemm: return 'g';
    case KernelFamily::kDecodeTma: return 'd';
    case KernelFamily::kDecodeLdg: return 'l';
    case KernelFamily::kDecodeR64: return 'r';
    case KernelFamily::kDecodeLdgR64: return 'L';
    default: return '-';
  }
}

TEST(PlannerPins, SameFamiliesAsRecorded) {
  const DeviceInfo device = DeviceInfo::fallback(132);
  int checked = 0;
  for (const Pin& pin : kPins) {
    int i = 0;
    for (int64_t n : kPinN) {
      for (int64_t k : kPinK) {
        const GemmDesc d = pin_desc(pin.m, n, k, pin.variant);
        const LaunchPlan p = plan(d, device);
        EXPECT_EQ(family_letter(p.family), pin.families[i])
            << pin.m << " x " << n << " x " << k << " variant " << pin.variant << ": " << p.family_reason;
        ++i, ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 175 * 44);
}

// Prints dispatch_pins.h's table as the planner chooses now: run after a rule change that
// moves a pin on purpose (anvil_planner_tests --gtest_also_run_disabled_tests
// --gtest_filter=PlannerPins.DISABLED_PrintTable), and paste its rows.
TEST(PlannerPins, DISABLED_PrintTable) {
  const DeviceInfo device = DeviceInfo::fallback(132);
  for (const Pin& pin : kPins) {
    std::string row;
    for (int64_t n : kPinN) {
      for (int64_t k : kPinK) row += family_letter(plan(pin_desc(pin.m, n, k, pin.variant), device).family);
    }
    std::printf("    {%lld, %d, \"%s\"},\n", static_cast<long long>(pin.m), pin.variant, row.c_str());
  }
}

// ---- Families ----

TEST(PlannerFamily, FewTokensDecodeManyTokensGemm) {
  const DeviceInfo h200 = DeviceInfo::h200();
  EXPECT_EQ(plan(linear(1, 8192, 8192), h200).family, KernelFamily::kDecodeLdgR64);  // 128 64-row tiles: one wave
  EXPECT_EQ(plan(linear(1, 28672, 8192), h200).family, KernelFamily::kDecodeLdg);    // too many 64-row tiles
  EXPECT_EQ(plan(linear(8, 28672, 8192), h200).family, KernelFamily::kDecodeLdg);
  EXPECT_EQ(plan(linear(16, 28672, 8192), h200).family, KernelFamily::kDecodeTma);   // past the load path
  EXPECT_EQ(plan(linear(64, 8192, 8192), h200).family, KernelFamily::kDecodeR64);    // 128 tiles, one per SM
  EXPECT_EQ(plan(linear(64, 10240, 8192), h200).family, KernelFamily::kDecodeTma);   // 160 64-row tiles: > 1 wave
  EXPECT_EQ(plan(linear(128, 8192, 8192), h200).family, KernelFamily::kDecodeTma);   // 64 tiles fit one wave
  EXPECT_EQ(plan(linear(128, 28672, 8192), h200).family, KernelFamily::kSm90Gemm);   // gemm fills 85% of its waves
  EXPECT_EQ(plan(linear(256, 8192, 8192), h200).family, KernelFamily::kSm90Gemm);
  EXPECT_EQ(plan(linear(4096, 4096, 4096), h200).family, KernelFamily::kSm90Gemm);
}

// Swap-AB (plan_swapped_decode): a narrow output on many rows is the transposed problem's
// few tokens on an M-row weight. The rule is the decode rule on the transposed problem.
TEST(PlannerSwapAb, NarrowOutputsOnManyRowsRunTransposedOnADecodeKernel) {
  const DeviceInfo h200 = DeviceInfo::h200();
  for (int64_t n : {8, 16, 32, 64, 128}) {
    const GemmDesc d = linear(4096, n, 4096);
    const LaunchPlan p = plan(d, h200);
    EXPECT_TRUE(p.swap_ab) << n << ": " << p.family_reason;
    // The same family and tiles as the transposed problem planned on its own.
    const LaunchPlan t = plan(transposed_problem(d), h200);
    EXPECT_FALSE(t.swap_ab);
    EXPECT_EQ(p.family, t.family) << n;
    EXPECT_EQ(p.decode.token_tile, t.decode.token_tile) << n;
    EXPECT_EQ(p.decode.splits, t.decode.splits) << n;
    EXPECT_NE(std::string(p.family_reason).find("swap-AB"), std::string::npos) << p.family_reason;
  }
  // Not where the transposed problem is no decode problem either, nor where N >= M.
  EXPECT_FALSE(plan(linear(4096, 4096, 4096), h200).swap_ab);
  EXPECT_FALSE(plan(linear(2048, 1024, 4096), h200).swap_ab);
  EXPECT_FALSE(plan(linear(64, 64, 4096), h200).swap_ab);  // a decode problem as it is
  EXPECT_EQ(plan(linear(64, 4096, 4096), h200).family, plan(linear(64, 4096, 4096), h200).family);
}

TEST(PlannerSwapAb, NeverInBatchInvariantModeForSwiGLUOrWhenForcedNever) {
  const DeviceInfo h200 = DeviceInfo::h200();
  GemmDesc invariant = linear(4096, 64, 4096);
  invariant.batch_invariant = true;
  EXPECT_FALSE(plan(invariant, h200).swap_ab);
  GemmDesc swiglu = linear(4096, 128, 4096);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  swiglu.c.ld = swiglu.d.ld = 64;
  EXPECT_FALSE(transposable(swiglu));
  EXPECT_FALSE(plan(swiglu, h200).swap_ab);
  PlanOverrides never;
  never.swap_ab = PlanOverrides::SwapAb::kNever;
  EXPECT_FALSE(plan(linear(4096, 64, 4096), h200, &never).swap_ab);
  // kAlways: wherever a decode kernel takes the transposed problem, even against the rule.
  PlanOverrides always;
  always.swap_ab = PlanOverrides::SwapAb::kAlways;
  EXPECT_TRUE(plan(linear(1024, 256, 1024), h200, &always).swap_ab);
  EXPECT_FALSE(plan(linear(1024, 256, 1024), h200).swap_ab);
}

// sm90-gemm transposed (plan_transposed_sm90): the tokens on the tiles' N side where the
// variant choice's cost falls by at least 5%; plain 16-bit GEMMs whose D^T TMA can store.
TEST(PlannerSwapAb, Sm90GemmRunsTransposedWhereTheTokensFitItsWidthsBetter) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // 404 tokens: 4 rows of 128 x 256 tiles (79% live) or 2 columns of 128 x 224 (90%), 512
  // tiles either way.
  const LaunchPlan wide = plan(linear(404, 32768, 6144), h200);
  EXPECT_EQ(wide.family, KernelFamily::kSm90Gemm);
  EXPECT_TRUE(wide.swap_ab) << wide.family_reason;
  EXPECT_EQ(wide.variant, Sm90Variant::kFitPair224);
  EXPECT_NE(std::string(wide.family_reason).find("transposed"), std::string::npos) << wide.family_reason;
  // 383 tokens: three rows of lone 128 x 128 CTAs, or 40 feature tiles in ping-pong pairs.
  const LaunchPlan pairs = plan(linear(383, 5120, 2048), h200);
  EXPECT_TRUE(pairs.swap_ab) << pairs.family_reason;
  EXPECT_EQ(pairs.variant, Sm90Variant::kPingPongPair);
  // Not where both orientations cost the same, nor for the other outputs, epilogues and modes.
  EXPECT_FALSE(plan(linear(4096, 4096, 4096), h200).swap_ab);
  // Nor at 128 tokens or fewer: one tile of them either way (an LM head on 96 tokens would
  // trade 128 x 192 CTAs for ping-pong pairs, the model's 8% that measured 3% slower).
  EXPECT_FALSE(plan(linear(96, 152064, 5120), h200).swap_ab);
  EXPECT_FALSE(plan(linear(128, 151936, 2048), h200).swap_ab);
  GemmDesc bias = linear(404, 32768, 6144);
  bias.epilogue.bias = BiasMode::kPerColumn;
  EXPECT_FALSE(plan(bias, h200).swap_ab);
  GemmDesc invariant = linear(404, 32768, 6144);
  invariant.batch_invariant = true;
  EXPECT_FALSE(plan(invariant, h200).swap_ab);
  GemmDesc fp32_out = linear(404, 32768, 6144);
  fp32_out.d.dtype = fp32_out.c.dtype = DataType::kF32;
  EXPECT_FALSE(plan(fp32_out, h200).swap_ab);  // D^T through the staged store: a store per output
  EXPECT_FALSE(plan(linear(404, 32765, 6144), h200).swap_ab);  // D^T's rows not whole 16-byte groups
  PlanOverrides never;
  never.swap_ab = PlanOverrides::SwapAb::kNever;
  EXPECT_FALSE(plan(linear(404, 32768, 6144), h200, &never).swap_ab);
}

// Forced (anvil-bench --kernels sm90-gemm --swap-ab always): sm90-gemm on the transposed
// problem, the tokens on its tiles' N side, whatever the costs; not where sm90-gemm does not
// take the transposed problem (FP8 scales, SwiGLU).
TEST(PlannerSwapAb, ForcedSm90GemmRunsTheTransposedProblem) {
  const DeviceInfo h200 = DeviceInfo::h200();
  PlanOverrides forced;
  forced.family = KernelFamily::kSm90Gemm;
  forced.swap_ab = PlanOverrides::SwapAb::kAlways;
  const LaunchPlan p = plan(linear(4096, 4096, 4096), h200, &forced);
  EXPECT_EQ(p.family, KernelFamily::kSm90Gemm);
  EXPECT_TRUE(p.swap_ab);
  EXPECT_FALSE(plan(linear(4096, 4096, 4096), h200).swap_ab);
  // The transposed problem's own sm90-gemm plan (its D column-major).
  EXPECT_EQ(p.variant, plan(transposed_problem(linear(4096, 4096, 4096)), h200).variant);
  EXPECT_TRUE(plan(transposed_problem(linear(4096, 4096, 4096)), h200, &forced).swap_ab);
  GemmDesc swiglu = linear(404, 4096, 6144);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  swiglu.c.ld = swiglu.d.ld = 2048;
  EXPECT_EQ(plan(swiglu, h200, &forced).family, KernelFamily::kNone);
}

TEST(PlannerSwapAb, TheTransposedProblemMirrorsEveryLayout) {
  GemmDesc d = linear(300, 40, 520);
  d.batch = 2;
  d.a.batch_stride = 300 * 520 + 8;
  d.b.batch_stride = 40 * 520 + 16;
  d.c = MatrixLayout{DataType::kF32, Order::kColMajor, 304, 304 * 40};
  d.d = MatrixLayout{DataType::kBF16, Order::kRowMajor, 48, 300 * 48};
  d.epilogue.bias = BiasMode::kPerColumn;
  d.alpha = 0.5f, d.beta = 2.0f;
  const GemmDesc t = transposed_problem(d);
  EXPECT_EQ(t.m, 40);
  EXPECT_EQ(t.n, 300);
  EXPECT_EQ(t.k, 520);
  EXPECT_EQ(t.a.order, Order::kRowMajor);  // B^T over B's column-major memory
  EXPECT_EQ(t.a.ld, d.b.ld);
  EXPECT_EQ(t.a.batch_stride, d.b.batch_stride);
  EXPECT_EQ(t.b.order, Order::kColMajor);  // A^T over A's row-major memory
  EXPECT_EQ(t.b.batch_stride, d.a.batch_stride);
  EXPECT_EQ(t.c.order, Order::kRowMajor);
  EXPECT_EQ(t.c.ld, 304);
  EXPECT_EQ(t.d.order, Order::kColMajor);
  EXPECT_EQ(t.d.dtype, DataType::kBF16);
  EXPECT_EQ(t.epilogue.bias, BiasMode::kPerRow);
  EXPECT_EQ(t.alpha, 0.5f);
  EXPECT_EQ(t.beta, 2.0f);
  // Twice is the identity.
  const GemmDesc back = transposed_problem(t);
  EXPECT_EQ(back.m, d.m);
  EXPECT_EQ(back.a.order, d.a.order);
  EXPECT_EQ(back.b.order, d.b.order);
  EXPECT_EQ(back.d.order, d.d.order);
  EXPECT_EQ(back.epilogue.bias, d.epilogue.bias);
  GemmArgs args;
  args.a = reinterpret_cast<const void*>(0x1000);
  args.b = reinterpret_cast<const void*>(0x2000);
  args.d = reinterpret_cast<void*>(0x3000);
  const GemmArgs targs = transposed_args(args);
  EXPECT_EQ(targs.a, args.b);
  EXPECT_EQ(targs.b, args.a);
  EXPECT_EQ(targs.d, args.d);
}

TEST(PlannerFamily, OperandsNoDecodeKernelReadsGoToTheRepackingGemm) {
  GemmDesc d = linear(16, 4096, 4096);
  d.b.order = Order::kRowMajor;
  d.b.ld = 4096;
  const LaunchPlan p = plan(d, DeviceInfo::h200());
  EXPECT_EQ(p.family, KernelFamily::kSm90Gemm);
  EXPECT_TRUE(p.repack.b);
  EXPECT_FALSE(p.repack.a);
  EXPECT_GE(p.workspace_bytes, size_t{4096} * 4096 * 2);
}

TEST(PlannerFamily, KZeroGoesToTheFallback) {
  EXPECT_EQ(plan(linear(64, 64, 0), DeviceInfo::h200()).family, KernelFamily::kFallback);
}

TEST(PlannerFamily, SwigluNeverGoesToSixtyFourRowTiles) {
  GemmDesc d = linear(1, 8192, 8192);
  d.epilogue.activation = Activation::kSwiGLU;
  EXPECT_EQ(plan(d, DeviceInfo::h200()).family, KernelFamily::kDecodeLdg);
  d.m = 64;
  EXPECT_EQ(plan(d, DeviceInfo::h200()).family, KernelFamily::kDecodeTma);
}

TEST(PlannerFamily, LoadPathOnlyWithALongKAndFullWaves) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // 224 tiles in two waves, 85% full, K = 8192: the load path.
  EXPECT_EQ(plan(linear(1, 28672, 8192), h200).family, KernelFamily::kDecodeLdg);
  // The same weight with K = 512: the load path's in-CTA reduction is not amortized.
  EXPECT_NE(plan(linear(4, 32768, 512), h200).family, KernelFamily::kDecodeLdg);
  EXPECT_NE(plan(linear(4, 32768, 512), h200).family, KernelFamily::kDecodeLdgR64);
  // 72 tiles (9216 features), one per SM unsplit, 55% of a wave: the TMA-fed kernels.
  const LaunchPlan p = plan(linear(5, 9216, 7168), h200);
  EXPECT_TRUE(p.family == KernelFamily::kDecodeTma || p.family == KernelFamily::kDecodeR64) << p.family_reason;
}

TEST(PlannerFamily, SixtyFourRowTilesWhereTheyMatchTheCtasWithHalfTheSplit) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // 4096 features: 64 tiles of 64 rows split twice make 128 CTAs, as many as 32 tiles of
  // 128 rows split four ways.
  LaunchPlan p = plan(linear(32, 4096, 14336), h200);
  EXPECT_EQ(p.family, KernelFamily::kDecodeR64) << p.family_reason;
  EXPECT_EQ(p.decode.splits, 2);
  // 5120 features: 80 tiles of 64 rows unsplit (a split of two would take two waves)
  // against 160 CTAs of the 128-row plan: the 128-row tiles.
  p = plan(linear(37, 5120, 3072), h200);
  EXPECT_EQ(p.family, KernelFamily::kDecodeTma) << p.family_reason;
}

TEST(PlannerFamily, WideDecodeForNarrowWeightsWithALongK) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // 255 tokens x 3584 features x K = 14336: 28 tiles of 128 rows, a quarter of the SMs.
  EXPECT_EQ(plan(linear(255, 3584, 14336), h200).family, KernelFamily::kDecodeTma);
  EXPECT_EQ(plan(linear(256, 2048, 32768), h200).family, KernelFamily::kDecodeTma);
  // Where the 64-row x 128-token tiles save a fifth of the model's cycles and the wide
  // tiles' CTAs run fewer than 64 K steps each, they take it: 4096 features at K = 8192.
  EXPECT_EQ(plan(linear(255, 4096, 8192), h200).family, KernelFamily::kDecodeR64);
  EXPECT_EQ(plan(linear(255, 4096, 11008), h200).family, KernelFamily::kDecodeR64);
  EXPECT_EQ(plan(linear(181, 2880, 8192), h200).family, KernelFamily::kDecodeTma);
  // K = 4096: too short for the split to pay (the 64-row token tiles take it).
  EXPECT_NE(plan(linear(255, 3584, 4096), h200).family, KernelFamily::kDecodeTma);
  // 6 tiles: sm90-gemm's split-K takes more SMs than 8 splits could.
  EXPECT_EQ(plan(linear(192, 768, 98304), h200).family, KernelFamily::kSm90Gemm);
  // 64 tiles: sm90-gemm's tiles fill the GPU.
  EXPECT_EQ(plan(linear(256, 8192, 8192), h200).family, KernelFamily::kSm90Gemm);
  // Past 256 tokens each token tile would read the weight again.
  EXPECT_EQ(plan(linear(257, 3584, 14336), h200).family, KernelFamily::kSm90Gemm);
  // 4096 x 14336: 75 K steps per CTA amortize the wide tiles' reduction, so a full
  // 256-token tile keeps them; one with more than 7 rows past M (TMA's zeros: the decode
  // kernel cannot move a token tile bigger than M) is weighed against the 64-row tiles.
  EXPECT_EQ(plan(linear(249, 4096, 14336), h200).family, KernelFamily::kDecodeTma);
  EXPECT_EQ(plan(linear(248, 4096, 14336), h200).family, KernelFamily::kDecodeR64);
  EXPECT_EQ(plan(linear(149, 4096, 12800), h200).family, KernelFamily::kDecodeR64);
}

TEST(PlannerFamily, CallFactsDecideWhatTakesTheProblem) {
  CallFacts facts;
  facts.accepts[static_cast<int>(KernelFamily::kDecodeLdgR64)] = false;
  facts.accepts[static_cast<int>(KernelFamily::kDecodeLdg)] = false;
  // The TMA-fed 64-row tiles: 128 of them make as many CTAs in one wave as the 128-row
  // plan with twice the split.
  EXPECT_EQ(plan(linear(1, 8192, 8192), DeviceInfo::h200(), nullptr, &facts).family, KernelFamily::kDecodeR64);
  facts.accepts[static_cast<int>(KernelFamily::kDecodeR64)] = false;
  EXPECT_EQ(plan(linear(1, 8192, 8192), DeviceInfo::h200(), nullptr, &facts).family, KernelFamily::kDecodeTma);
  for (bool& a : facts.accepts) a = false;
  EXPECT_EQ(plan(linear(1, 8192, 8192), DeviceInfo::h200(), nullptr, &facts).family, KernelFamily::kNone);
}

// ---- sm90-gemm tiles, stream-K, row split ----

TEST(PlannerGemm, TilesFollowTheWavePlan) {
  const DeviceInfo h200 = DeviceInfo::h200();
  LaunchPlan p = plan(linear(4096, 4096, 4096), h200);
  EXPECT_EQ(p.variant, Sm90Variant::kWidePair);
  EXPECT_EQ(p.tile.block_m, 128);
  EXPECT_EQ(p.tile.block_n, 256);
  EXPECT_EQ(p.cluster.m, 2);
  EXPECT_EQ(p.stages, 4);
  EXPECT_EQ(p.schedule, GemmSchedule::kCooperative);
  EXPECT_EQ(p.workspace_bytes, 0u);
  p = plan(linear(8192, 10240, 8192), h200);
  EXPECT_EQ(p.schedule, GemmSchedule::kPingPong);
  EXPECT_EQ(plan(linear(1024, 6144, 4096), h200).variant, Sm90Variant::kFitPair192);
  EXPECT_EQ(plan(linear(4224, 4096, 4096), h200).variant, Sm90Variant::kWidePairN);
}

TEST(PlannerGemm, FusedEpiloguesTakePingPong) {
  GemmDesc d = linear(8192, 8192, 8192);
  d.epilogue.bias = BiasMode::kPerColumn;
  EXPECT_EQ(plan(d, DeviceInfo::h200()).variant, Sm90Variant::kPingPongPair);
}

TEST(PlannerGemm, StreamKWhereWholeTilesLeaveTheLastWaveIdleAndKIsLong) {
  const DeviceInfo h200 = DeviceInfo::h200();
  const LaunchPlan p = plan(linear(256, 18432, 8192), h200);
  EXPECT_EQ(p.variant, Sm90Variant::kTallStreamK);
  EXPECT_EQ(p.schedule, GemmSchedule::kStreamK);
  EXPECT_EQ(p.workspace_bytes, stream_k_workspace_bytes(132));
  // Without the workspace (or with stream-K disallowed) the whole-tile plan runs instead.
  CallFacts facts;
  facts.workspace_bytes = 0;
  EXPECT_NE(plan(linear(256, 18432, 8192), h200, nullptr, &facts).variant, Sm90Variant::kTallStreamK);
  PlanOverrides ov;
  ov.allow_stream_k = false;
  EXPECT_NE(plan(linear(256, 18432, 8192), h200, &ov).variant, Sm90Variant::kTallStreamK);
  // Short K: never streamed (the fixup estimate is not trusted below 128 k-tiles).
  EXPECT_NE(plan(linear(256, 18432, 4096), h200).variant, Sm90Variant::kTallStreamK);
}

// Few tokens on rows no decode kernel reads in place (K = 4093: not 16-byte aligned):
// sm90-gemm's repack, then the decode kernel the aligned problem of the same shape takes,
// on the copies, for every row.
TEST(PlannerGemm, FewTokensOnUnalignedRowsRunADecodeKernelOnTheCopies) {
  const DeviceInfo h200 = DeviceInfo::h200();
  const LaunchPlan p = plan(linear(13, 1021, 4093), h200);
  EXPECT_EQ(p.family, KernelFamily::kSm90Gemm) << p.family_reason;
  EXPECT_TRUE(p.repack.a && p.repack.b);
  ASSERT_TRUE(p.row_split()) << p.row_split_reason;
  EXPECT_EQ(p.main_rows, 0);
  GemmDesc copies = linear(13, 1021, 4093);
  copies.a.ld = copies.b.ld = p.repack.packed_ld;
  const LaunchPlan aligned = plan(copies, h200);
  EXPECT_EQ(p.tail_family, aligned.family);
  EXPECT_EQ(p.tail.splits, aligned.decode.splits);
  EXPECT_EQ(p.tail.ctas, aligned.decode.ctas);
  EXPECT_EQ(p.workspace_bytes, p.repack.a_bytes + p.repack.b_bytes);
  // A transposed A at few tokens too.
  GemmDesc column_major_a = linear(13, 1024, 4096);
  column_major_a.a = MatrixLayout{DataType::kBF16, Order::kColMajor, 13, 0};
  EXPECT_EQ(plan(column_major_a, h200).main_rows, 0);
  // Batch-invariant mode too, unsplit and TMA-fed: a repacked problem runs sm90-gemm
  // unsplit at every M, and those kernels sum K in its order.
  GemmDesc invariant = linear(13, 1021, 4093);
  invariant.batch_invariant = true;
  const LaunchPlan bi = plan(invariant, h200);
  EXPECT_EQ(bi.main_rows, 0);
  EXPECT_EQ(bi.tail.splits, 1);
  EXPECT_TRUE(bi.tail_family == KernelFamily::kDecodeTma || bi.tail_family == KernelFamily::kDecodeR64)
      << family_name(bi.tail_family);
  invariant.m = 4096;
  EXPECT_EQ(plan(invariant, h200).k_splits, 1);  // the many-row plan: unsplit too
  // Many rows: sm90-gemm's tiles on the copies.
  EXPECT_EQ(plan(linear(2048, 1021, 4093), h200).main_rows, 2048);
}

// Shared-memory cycles per K step: the 128 x 256 tile is at the tensor cores' rate and
// shared memory's both; the narrow tiles are bound by shared memory.
TEST(PlannerGemm, TileKStepCyclesFollowSharedMemoryTraffic) {
  EXPECT_DOUBLE_EQ(tile_k_step_cycles(128, 256), 1024);
  EXPECT_DOUBLE_EQ(tile_k_step_cycles(128, 64), 448);
  EXPECT_DOUBLE_EQ(tile_k_step_cycles(128, 96), 544);
  EXPECT_DOUBLE_EQ(tile_k_step_cycles(64, 128), 384);
  EXPECT_LT(tile_k_step_cycles(64, 128), tile_k_step_cycles(128, 64));  // the same work
}

// 129-1000 tokens on a weight whose sm90-gemm tiles are narrow and few: sm90-decode-r64's
// 64-row x 128-token tiles, the last token tile moved back to end at M.
TEST(PlannerGemm, MidTokensOnANarrowWeightRunTokenTilesOf64Rows) {
  const DeviceInfo h200 = DeviceInfo::h200();
  for (const GemmDesc& d : {linear(255, 4096, 4096), linear(512, 1536, 4096), linear(129, 4096, 2048)}) {
    const LaunchPlan p = plan(d, h200);
    EXPECT_EQ(p.family, KernelFamily::kDecodeR64) << d.m << " x " << d.n << ": " << p.family_reason;
    EXPECT_EQ(p.decode.config, DecodeConfigId::kR64x128);
    EXPECT_EQ(p.decode.token_tiles, (d.m + 127) / 128);
    EXPECT_EQ(p.decode.feature_tiles, (d.n + 63) / 64);
    EXPECT_EQ(p.main_rows, d.m);
    EXPECT_EQ(p.workspace_bytes, 0u);
  }
  // Wide weights whose sm90-gemm tiles fill their waves keep them.
  EXPECT_EQ(plan(linear(1000, 10240, 4096), h200).family, KernelFamily::kSm90Gemm);
  EXPECT_EQ(plan(linear(512, 8192, 3584), h200).family, KernelFamily::kSm90Gemm);
  // Batch-invariant mode: unsplit where the weight is not split, never where it is.
  GemmDesc invariant = linear(255, 4096, 4096);
  invariant.batch_invariant = true;
  const LaunchPlan unsplit = plan(invariant, h200);
  EXPECT_EQ(unsplit.decode.config, DecodeConfigId::kR64x128) << unsplit.family_reason;
  EXPECT_EQ(unsplit.k_splits, 1);
  GemmDesc split_weight = linear(255, 1024, 65536);
  split_weight.batch_invariant = true;
  ASSERT_GT(batch_invariant_k_split(split_weight, h200, CallFacts{}), 1);
  EXPECT_NE(plan(split_weight, h200).family, KernelFamily::kDecodeR64);
  // Not with SwiGLU (a 64-row tile holds no gate and up block), not on operands sm90-gemm
  // would repack.
  GemmDesc swiglu = linear(255, 4096, 4096);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  swiglu.c.ld = swiglu.d.ld = 2048;
  EXPECT_EQ(plan(swiglu, h200).family, KernelFamily::kSm90Gemm);
  GemmDesc column_major_a = linear(255, 4096, 4096);
  column_major_a.a = MatrixLayout{DataType::kBF16, Order::kColMajor, 255, 0};
  EXPECT_EQ(plan(column_major_a, h200).family, KernelFamily::kSm90Gemm);
}

TEST(PlannerGemm, SplitKWhereWholeTilesLeaveNearlyEverySmIdle) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // 256 x 512 x 131072: four 128 x 256 tiles for 132 SMs.
  const LaunchPlan p = plan(linear(256, 512, 131072), h200);
  ASSERT_GT(p.k_splits, 1) << p.split_reason;
  EXPECT_EQ(p.k_splits * p.slice_k, 131072);
  EXPECT_NE(p.variant, Sm90Variant::kTallStreamK);  // split-K, not stream-K
  EXPECT_FALSE(p.row_split());
  EXPECT_EQ(p.workspace_bytes, size_t{4} * 256 * 512 * static_cast<size_t>(p.k_splits));
  // Without room for the partials, an unaligned workspace, operands that must be
  // repacked, a batch or batch invariance: no split-K. (Without the workspace, the
  // token tiles' cluster split, which needs none, takes the problem.)
  const auto no_split_k = [](const LaunchPlan& q) {
    return q.family == KernelFamily::kSm90Gemm ? q.k_splits == 1 : q.workspace_bytes == 0;
  };
  CallFacts small;
  small.workspace_bytes = p.workspace_bytes - 1;
  EXPECT_TRUE(no_split_k(plan(linear(256, 512, 131072), h200, nullptr, &small)));
  CallFacts unaligned;
  unaligned.workspace_aligned16 = false;
  EXPECT_TRUE(no_split_k(plan(linear(256, 512, 131072), h200, nullptr, &unaligned)));
  GemmDesc column_major_a = linear(256, 512, 131072);
  column_major_a.a = MatrixLayout{DataType::kBF16, Order::kColMajor, 256, 0};
  EXPECT_EQ(plan(column_major_a, h200).k_splits, 1);
  GemmDesc batched = linear(256, 512, 131072);
  batched.batch = 2;
  batched.a.batch_stride = 256 * 131072;
  batched.b.batch_stride = 512 * 131072;
  batched.d.batch_stride = batched.c.batch_stride = 256 * 512;
  EXPECT_EQ(plan(batched, h200).k_splits, 1);
  // Batch-invariant problems split by the weight's rule, not this one (PlannerBatchInvariant).
  GemmDesc invariant = linear(256, 512, 131072);
  invariant.batch_invariant = true;
  EXPECT_EQ(plan(invariant, h200).k_splits, weight_split(invariant, h200));
  // Well-filled GPUs keep whole tiles.
  EXPECT_EQ(plan(linear(4096, 4096, 4096), h200).k_splits, 1);
  EXPECT_EQ(plan(linear(255, 4096, 4096), h200).k_splits, 1);
}

TEST(PlannerOverrides, SplitKForcedOrRefused) {
  const DeviceInfo h200 = DeviceInfo::h200();
  PlanOverrides four;
  four.split_k_slices = 4;
  const LaunchPlan p = plan(linear(1024, 1024, 4096), h200, &four);
  EXPECT_EQ(p.k_splits, 4);
  EXPECT_EQ(p.slice_k, 1024);
  // K that does not divide into four slices of whole 16-byte groups: no split.
  EXPECT_EQ(plan(linear(1024, 1024, 4100), h200, &four).k_splits, 1);
  PlanOverrides never;
  never.split_k_slices = 1;
  EXPECT_EQ(plan(linear(256, 512, 131072), h200, &never).k_splits, 1);
}

TEST(PlannerGemm, RowSplitHandsAFewRowsToADecodeKernel) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // 1025 x 4096 x 4096: the one row past 1024 would add a wave of tiles.
  const LaunchPlan p = plan(linear(1025, 4096, 4096), h200);
  ASSERT_TRUE(p.row_split()) << p.row_split_reason;
  EXPECT_EQ(p.main_rows, 1024);
  EXPECT_EQ(p.tail.token_tiles, 1);
  EXPECT_NE(p.tail_family, KernelFamily::kSm90Gemm);
  // A multiple of 256, and more than 64 rows past one, are never split.
  EXPECT_FALSE(plan(linear(4096, 4096, 4096), h200).row_split());
  EXPECT_FALSE(plan(linear(4096 + 65, 4096, 4096), h200).row_split());
  // Overrides: never, always.
  PlanOverrides never;
  never.row_split = PlanOverrides::RowSplit::kNever;
  EXPECT_FALSE(plan(linear(1025, 4096, 4096), h200, &never).row_split());
  PlanOverrides always;
  always.row_split = PlanOverrides::RowSplit::kAlways;
  EXPECT_TRUE(plan(linear(4096 + 64, 8192, 8192), h200, &always).row_split());
}

// ---- Decode splits ----

TEST(PlannerDecode, SplitFillsTheGpu) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // 1 x 28672 x 8192 on the load path: 224 tiles, more than a wave: no split.
  LaunchPlan p = plan(linear(1, 28672, 8192), h200);
  EXPECT_EQ(p.decode.splits, 1);
  // 128 x 8192 x 8192: 64 tiles of 128 rows, the most splits that fill one wave (120 CTAs
  // resident in clusters of 8 hold 15 clusters; 2 splits make 128 CTAs of 132).
  p = plan(linear(128, 8192, 8192), h200);
  EXPECT_EQ(p.family, KernelFamily::kDecodeTma);
  EXPECT_EQ(p.decode.splits, 2);
  EXPECT_EQ(p.decode.waves, 1);
  EXPECT_EQ(p.k_splits, p.decode.splits);
}

TEST(PlannerDecode, ForcedSplitIsHonouredWithinItsRange) {
  PlanOverrides ov;
  ov.decode_splits = 4;
  const LaunchPlan p = plan(linear(16, 8192, 8192), DeviceInfo::h200(), &ov);
  EXPECT_EQ(p.decode.splits, 4);
  EXPECT_NE(std::string(p.split_reason).find("forced"), std::string::npos);
  ov.decode_splits = 9;  // out of range: ignored
  EXPECT_LE(plan(linear(16, 8192, 8192), DeviceInfo::h200(), &ov).decode.splits, 8);
}

// ---- Overrides ----

TEST(PlannerOverrides, ForcedFamilyAndVariant) {
  const DeviceInfo h200 = DeviceInfo::h200();
  PlanOverrides ov;
  ov.family = KernelFamily::kSm90Gemm;
  EXPECT_EQ(plan(linear(1, 8192, 8192), h200, &ov).family, KernelFamily::kSm90Gemm);
  ov.family = KernelFamily::kDecodeTma;
  EXPECT_EQ(plan(linear(4096, 8192, 8192), h200, &ov).family, KernelFamily::kDecodeTma);
  ov.family = KernelFamily::kSm90Gemm;
  ov.sm90_variant = static_cast<int>(Sm90Variant::kNarrow);
  LaunchPlan p = plan(linear(4096, 4096, 4096), h200, &ov);
  EXPECT_EQ(p.variant, Sm90Variant::kNarrow);
  EXPECT_EQ(p.tile.block_n, 128);
  EXPECT_FALSE(p.row_split());
  ov.sm90_variant = -1;
  ov.sm90_fit_only = true;
  EXPECT_TRUE(is_fit_width(plan(linear(4096, 4096, 4096), h200, &ov).variant));
  // A forced family that cannot take the problem gives no plan.
  GemmDesc swiglu = linear(1, 8192, 8192);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  PlanOverrides r64;
  r64.family = KernelFamily::kDecodeR64;
  EXPECT_EQ(plan(swiglu, h200, &r64).family, KernelFamily::kNone);
}

// A forced family outside what the problem allows gives no plan, with the reason; the
// fallback can always be forced.
TEST(PlannerOverrides, ForcedLoadPathFamiliesRefuseABatchInvariantSplit) {
  const DeviceInfo h200 = DeviceInfo::h200();
  GemmDesc d = linear(16, 1536, 40960);
  d.batch_invariant = true;
  ASSERT_GT(weight_split(d, h200), 1);
  for (KernelFamily forced : {KernelFamily::kDecodeLdg, KernelFamily::kDecodeLdgR64}) {
    PlanOverrides ov;
    ov.family = forced;
    const LaunchPlan p = plan(d, h200, &ov);
    EXPECT_EQ(p.family, KernelFamily::kNone) << family_name(forced);
    EXPECT_NE(std::strstr(p.family_reason, "batch-invariant"), nullptr) << p.family_reason;
  }
  // The same families take a weight the mode does not split.
  d.n = 8192;
  d.c.ld = d.d.ld = 8192;
  ASSERT_EQ(weight_split(d, h200), 1);
  PlanOverrides ldg;
  ldg.family = KernelFamily::kDecodeLdg;
  EXPECT_EQ(plan(d, h200, &ldg).family, KernelFamily::kDecodeLdg);
}

TEST(PlannerOverrides, ForcedFallback) {
  PlanOverrides ov;
  ov.family = KernelFamily::kFallback;
  const LaunchPlan p = plan(linear(4096, 4096, 4096), DeviceInfo::h200(), &ov);
  EXPECT_EQ(p.family, KernelFamily::kFallback);
  EXPECT_STREQ(p.kernel_name, family_name(KernelFamily::kFallback));
}

TEST(PlannerOverrides, PowersOfTwoOnlyWithoutFittedWidths) {
  PlanOverrides ov;
  ov.fit_widths = false;
  const LaunchPlan p = plan(linear(1024, 6144, 4096), DeviceInfo::h200(), &ov);
  EXPECT_FALSE(is_fit_width(p.variant));
  EXPECT_FALSE(plan(linear(4097, 4096, 4096), DeviceInfo::h200(), &ov).row_split());
}

// ---- Batch invariance ----
//
// Only the order in which each output element's K is summed must not depend on M. Where the
// weight's split (batch_invariant_split, fixed by N, K and the batch count) is 1: sm90-gemm's
// whole tiles (any variant, no stream-K) and the TMA-fed decode kernels unsplit (the
// load-path kernels split K across warpgroups). Where it is s > 1: sm90-decode's cluster of
// s, sm90-decode-r64's cluster of s where its wider K steps end at the same k-tiles,
// sm90-decode-r64's 128-token tiles or sm90-gemm's folded-slice configurations with s
// slices in each CTA, or sm90-gemm's split-K in s equal slices of K / s - all cut K at the
// same k-tiles and add the parts in the same order.

// Whether a decode cluster of `splits` whose ranks sum k_block-wide stages [r t / s,
// (r + 1) t / s) ends each rank where sm90-decode's 64-wide k-tiles do, with K a whole
// number of its stages (no zero-filled stage the 64-wide kernels do not sum).
bool cuts_at_the_slices(int64_t k, int splits, int k_block) {
  if (k_block == 64) return true;
  if (k % k_block != 0) return false;
  for (int r = 1; r < splits; ++r) {
    const int64_t slice_end = (r * ((k + 63) / 64) / splits) * 64;
    const int64_t rank_end = (r * (k / k_block) / splits) * k_block;
    if (slice_end != rank_end) return false;
  }
  return true;
}

bool keeps_one_k_order(const LaunchPlan& p, const GemmDesc& d, const DeviceInfo& device) {
  const int s = weight_split(d, device);
  const auto tma_decode = [&](KernelFamily f, const DecodePlan& dp, int splits) {
    const bool rows64 = f == KernelFamily::kDecodeR64 && (splits == 1 || cuts_at_the_slices(d.k, splits, dp.k_block));
    return (f == KernelFamily::kDecodeTma || rows64) && dp.splits == splits;
  };
  if (p.family == KernelFamily::kSm90Gemm) {
    if (p.schedule == GemmSchedule::kStreamK) return false;
    if (s > 1) return p.k_splits == s && (folds_k_slices(p.variant) || p.slice_k * s == d.k) && !p.row_split();
    if (folds_k_slices(p.variant)) return false;  // never chosen for a weight the mode does not split
    return p.k_splits == 1 && (!p.row_split() || tma_decode(p.tail_family, p.tail, 1));
  }
  // sm90-decode-r64's 128-token tiles fold a split weight's slices in each CTA.
  const bool folded = s > 1 && p.family == KernelFamily::kDecodeR64 && p.decode.config == DecodeConfigId::kR64x128Folded &&
                      p.decode.splits == 1 && p.decode.k_slices == s;
  return (folded || tma_decode(p.family, p.decode, s)) && p.k_splits == s;
}

TEST(PlannerBatchInvariant, EveryPlanSumsKInOneOrder) {
  for (const DeviceInfo& device : {DeviceInfo::h200(), DeviceInfo::fallback(132), DeviceInfo::fallback(78)}) {
    for (int64_t m : {1, 7, 8, 9, 16, 17, 64, 65, 128, 129, 255, 256, 257, 1000, 1025, 4096, 4097}) {
      for (int64_t n : {8, 512, 576, 1024, 1600, 4096, 8192, 10240, 28672}) {
        for (int64_t k : {960, 1024, 4096, 6400, 7168, 8192, 16384, 65536, 65544}) {
          GemmDesc d = linear(m, n, k);
          d.batch_invariant = true;
          for (size_t workspace : {~size_t{0}, size_t{0}}) {
            CallFacts facts;
            facts.workspace_bytes = workspace;
            const LaunchPlan p = plan(d, device, nullptr, &facts);
            EXPECT_TRUE(keeps_one_k_order(p, d, device))
                << m << " x " << n << " x " << k << " (workspace " << workspace << "): " << family_name(p.family)
                << ", " << p.split_reason;
            // Only sm90-gemm's split-K takes a workspace in this mode.
            if (p.family != KernelFamily::kSm90Gemm || p.k_splits == 1 || folds_k_slices(p.variant)) {
              EXPECT_EQ(p.workspace_bytes, 0u);
            }
          }
        }
      }
    }
  }
}

TEST(PlannerBatchInvariant, TheFastestUnsplitPlanForEachM) {
  const DeviceInfo h200 = DeviceInfo::h200();
  GemmDesc d = linear(1, 8192, 8192);
  d.batch_invariant = true;
  EXPECT_EQ(plan(d, h200).family, KernelFamily::kDecodeR64);  // 128 64-row tiles, all resident
  d.n = 28672;
  EXPECT_EQ(plan(d, h200).family, KernelFamily::kDecodeTma);  // 448 64-row tiles would not be
  d.m = 4096, d.n = 4096, d.k = 4096;
  LaunchPlan p = plan(d, h200);
  EXPECT_EQ(p.family, KernelFamily::kSm90Gemm);  // not the decode kernel at every M
  EXPECT_EQ(p.variant, Sm90Variant::kWidePair);
  // Stream-K would be chosen here in normal mode; batch invariance keeps whole tiles.
  d.m = 256, d.n = 18432, d.k = 8192;
  EXPECT_NE(plan(d, h200).variant, Sm90Variant::kTallStreamK);
  // A row split keeps its tail unsplit.
  d.m = 1025, d.n = 4096, d.k = 4096;
  p = plan(d, h200);
  ASSERT_TRUE(p.row_split()) << p.row_split_reason;
  EXPECT_EQ(p.tail.splits, 1);
}

// A weight whose 128-row tiles leave most SMs idle splits K the same way at every M:
// sm90-decode's cluster up to 128 tokens; beyond, that cluster, sm90-decode-r64's or
// sm90-gemm's folded slices, or (with a workspace) sm90-gemm's split-K, whichever the
// shared-memory model costs least.
TEST(PlannerBatchInvariant, ANarrowLongWeightSplitsTheSameWayAtEveryM) {
  const DeviceInfo h200 = DeviceInfo::h200();
  GemmDesc d = linear(1, 1536, 40960);
  d.batch_invariant = true;
  ASSERT_EQ(weight_split(d, h200), 8);  // 12 tiles x 8 = 96 CTAs
  for (int64_t m : {1, 16, 64, 65, 128}) {
    d.m = m;
    const LaunchPlan p = plan(d, h200);
    // Up to 16 tokens the 64-row tiles' clusters (two CTAs per SM: 192 in one wave); beyond,
    // their 192 CTAs would not fit one wave.
    EXPECT_EQ(p.family, m <= 16 ? KernelFamily::kDecodeR64 : KernelFamily::kDecodeTma) << "m = " << m;
    EXPECT_EQ(p.k_splits, 8) << "m = " << m;
    EXPECT_EQ(p.decode.splits, 8) << "m = " << m;
  }
  for (int64_t m : {129, 300, 1000, 4096, 16384}) {
    d.m = m;
    for (size_t workspace : {~size_t{0}, size_t{0}}) {
      CallFacts facts;
      facts.workspace_bytes = workspace;
      const LaunchPlan p = plan(d, h200, nullptr, &facts);
      SCOPED_TRACE("m = " + std::to_string(m) + ": " + p.family_reason);
      EXPECT_EQ(p.k_splits, 8);
      if (p.family == KernelFamily::kSm90Gemm && !folds_k_slices(p.variant)) {
        EXPECT_GT(workspace, 0u);
        EXPECT_EQ(p.slice_k, 40960 / 8);
      } else {
        EXPECT_EQ(p.workspace_bytes, 0u);
        if (p.family == KernelFamily::kDecodeR64) {
          EXPECT_EQ(p.decode.config, DecodeConfigId::kR64x128Folded);
          EXPECT_EQ(p.decode.k_slices, 8);
        } else if (p.family != KernelFamily::kSm90Gemm) {
          EXPECT_EQ(p.family, KernelFamily::kDecodeTma);
        }
      }
    }
  }
  // Many tiles: the folded slices; the 192-wide pairs once the tiles fill several waves.
  d = linear(16384, 1536, 4096);
  d.batch_invariant = true;
  ASSERT_EQ(weight_split(d, h200), 8);
  LaunchPlan p = plan(d, h200);
  EXPECT_EQ(p.family, KernelFamily::kSm90Gemm) << p.family_reason;
  EXPECT_EQ(p.variant, Sm90Variant::kSlicedPair192);
  // A few hundred rows on a short K: the 96-wide singles' extra tiles fill the wave.
  GemmDesc expert = linear(777, 1536, 2048);
  expert.batch_invariant = true;
  ASSERT_EQ(weight_split(expert, h200), 4);  // 32 k-tiles
  p = plan(expert, h200);
  EXPECT_EQ(p.family, KernelFamily::kSm90Gemm) << p.family_reason;
  EXPECT_EQ(p.variant, Sm90Variant::kSliced96);
  // A forced sm90-gemm configuration that sums K whole is refused; a folded one runs.
  d = linear(300, 1536, 40960);
  d.batch_invariant = true;
  PlanOverrides gemm;
  gemm.family = KernelFamily::kSm90Gemm;
  EXPECT_EQ(plan(d, h200, &gemm).family, KernelFamily::kSm90Gemm);
  EXPECT_EQ(plan(d, h200, &gemm).k_splits, 8);
  CallFacts none;
  none.workspace_bytes = 0;
  EXPECT_TRUE(folds_k_slices(plan(d, h200, &gemm, &none).variant));  // no room for split-K's partials
  gemm.sm90_variant = static_cast<int>(Sm90Variant::kWidePair);
  EXPECT_EQ(plan(d, h200, &gemm).family, KernelFamily::kNone);
  gemm.sm90_variant = static_cast<int>(Sm90Variant::kSliced96);
  EXPECT_EQ(plan(d, h200, &gemm).variant, Sm90Variant::kSliced96);
  // A forced sm90-decode-r64 runs the split as a cluster up to 128 tokens where its K steps
  // cut K at the slices (40960 = 320 x 128), and beyond folds the slices in its 128-token
  // tiles.
  PlanOverrides rows64;
  rows64.family = KernelFamily::kDecodeR64;
  for (int64_t m : {1, 300}) {
    d.m = m;
    const LaunchPlan r = plan(d, h200, &rows64);
    EXPECT_EQ(r.family, KernelFamily::kDecodeR64) << r.family_reason;
    EXPECT_EQ(r.decode.config, m == 1 ? DecodeConfigId::kR64x16 : DecodeConfigId::kR64x128Folded);
    EXPECT_EQ(r.decode.splits, m == 1 ? 8 : 1);
    EXPECT_EQ(r.decode.k_slices, m == 1 ? 1 : 8);
    EXPECT_EQ(r.k_splits, 8);
  }
  d.m = 300;
  // Wider weights keep whole K at every M (their large-M tiles cannot fold slices).
  GemmDesc wide = linear(100, 5120, 25600);
  wide.batch_invariant = true;
  EXPECT_EQ(weight_split(wide, h200), 1);
  EXPECT_EQ(plan(wide, h200).k_splits, 1);
  // Normal mode never picks a folded configuration; forced, it sums K whole.
  for (int64_t m : {300, 4096}) {
    const LaunchPlan normal = plan(linear(m, 1536, 40960), h200);
    EXPECT_FALSE(normal.family == KernelFamily::kSm90Gemm && folds_k_slices(normal.variant));
  }
  PlanOverrides folded;
  folded.family = KernelFamily::kSm90Gemm;
  folded.sm90_variant = static_cast<int>(Sm90Variant::kSlicedPair128);
  p = plan(linear(300, 1536, 40960), h200, &folded);
  EXPECT_EQ(p.variant, Sm90Variant::kSlicedPair128);
  EXPECT_EQ(p.k_splits, 1);
}

// SwiGLU's gate/up pairs need 128-column tiles: a split weight with SwiGLU takes the
// 128 x 128 folded pairs (or sm90-decode's cluster, 128-row tiles), never the 96- or
// 192-wide folded tiles or sm90-decode-r64.
TEST(PlannerBatchInvariant, SwiGLUFoldsOnlyInWholeGatePairs) {
  const DeviceInfo h200 = DeviceInfo::h200();
  int gemm_plans = 0;
  for (int64_t m : {1, 300, 1000, 4096, 16384}) {
    for (int64_t k : {2048, 4096, 16384}) {
      GemmDesc d = linear(m, 2048, k);
      d.batch_invariant = true;
      d.epilogue.activation = Activation::kSwiGLU;
      d.d.ld = d.c.ld = 1024;
      ASSERT_GT(weight_split(d, h200), 1);
      const LaunchPlan p = plan(d, h200);
      SCOPED_TRACE(std::to_string(m) + " x 2048 x " + std::to_string(k) + ": " + p.family_reason);
      EXPECT_TRUE(p.family == KernelFamily::kSm90Gemm || p.family == KernelFamily::kDecodeTma);
      if (p.family == KernelFamily::kSm90Gemm) {
        EXPECT_EQ(tile_shape(p.variant).block_n % 128, 0);
        ++gemm_plans;
      }
      EXPECT_TRUE(keeps_one_k_order(p, d, h200));
    }
  }
  EXPECT_GT(gemm_plans, 0);  // the rule above was exercised
  GemmDesc d = linear(4096, 2048, 4096);
  d.batch_invariant = true;
  d.epilogue.activation = Activation::kSwiGLU;
  d.d.ld = d.c.ld = 1024;
  PlanOverrides forced;
  forced.family = KernelFamily::kSm90Gemm;
  forced.sm90_variant = static_cast<int>(Sm90Variant::kSlicedPair192);
  EXPECT_EQ(plan(d, h200, &forced).family, KernelFamily::kNone);
}

// Few tokens on the weights the mode now splits with short slices: a router, an MLA
// down-projection, a weight whose K does not divide into the slices evenly. Each runs
// sm90-decode's cluster as normal mode's split would, not one CTA per 128 weight rows.
TEST(PlannerBatchInvariant, ShortSlicesSplitFewTokenWeights) {
  const DeviceInfo h200 = DeviceInfo::h200();
  // The 64-row tiles' cluster where their 256-wide K steps end at the slices (4096 = 8 x
  // 512), the 128-row tiles' where they do not (7168 = 8 x 896; 6400 in 128-wide steps: 50
  // of them in 8 ranks).
  const std::tuple<int64_t, int64_t, int64_t, KernelFamily> shapes[] = {
      {32, 8, 4096, KernelFamily::kDecodeR64},
      {48, 576, 7168, KernelFamily::kDecodeTma},
      {1, 1600, 6400, KernelFamily::kDecodeTma}};
  for (auto [m, n, k, family] : shapes) {
    GemmDesc d = linear(m, n, k);
    d.batch_invariant = true;
    const LaunchPlan p = plan(d, h200);
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
    EXPECT_EQ(p.family, family) << p.family_reason;
    EXPECT_EQ(p.k_splits, 8);
    EXPECT_EQ(p.k_splits, weight_split(d, h200));
  }
}

// sm90-decode-r64 runs a split weight's slices as a cluster, as sm90-decode does, where its
// 128- or 256-wide K steps end at the slices' 64-wide k-tile cuts and K is a whole number of
// them, and where its clusters fit one wave: twice sm90-decode's CTAs, the same sums.
TEST(PlannerBatchInvariant, SixtyFourRowClustersWhereTheirStepsCutAtTheSlices) {
  EXPECT_TRUE(split_cuts_match_slices(4096, 8, 256));
  EXPECT_FALSE(split_cuts_match_slices(7168, 8, 256));  // slices of 896
  EXPECT_TRUE(split_cuts_match_slices(7168, 8, 128));
  EXPECT_FALSE(split_cuts_match_slices(2880, 5, 128));  // K not a whole number of steps
  EXPECT_TRUE(split_cuts_match_slices(4104, 8, 64));    // the 64-wide tiles are the slices' own
  EXPECT_FALSE(split_cuts_match_slices(3072, 8, 256));  // 12 steps in 8: 1, 3, 4, ... against 1.5, 3, ...
  for (int64_t k : {1024, 4096, 6400, 7168, 16384, 131072}) {
    for (int s = 2; s <= 8; ++s) {
      for (int k_block : {64, 128, 256}) {
        EXPECT_EQ(split_cuts_match_slices(k, s, k_block), cuts_at_the_slices(k, s, k_block))
            << k << " in " << s << ", " << k_block << "-wide steps";
      }
    }
  }
  const DeviceInfo h200 = DeviceInfo::h200();
  GemmDesc d = linear(64, 512, 131072);
  d.batch_invariant = true;
  ASSERT_EQ(weight_split(d, h200), 8);
  LaunchPlan p = plan(d, h200);
  EXPECT_EQ(p.family, KernelFamily::kDecodeR64) << p.family_reason;
  EXPECT_EQ(p.decode.splits, 8);
  EXPECT_EQ(p.decode.ctas, 64);  // against the 128-row tiles' 32
  EXPECT_TRUE(keeps_one_k_order(p, d, h200));
  d.m = 100;  // one 128-token tile in 64-wide steps: always at the cuts
  p = plan(d, h200);
  EXPECT_EQ(p.family, KernelFamily::kDecodeR64) << p.family_reason;
  EXPECT_EQ(p.decode.config, DecodeConfigId::kR64x128);
  EXPECT_EQ(p.decode.splits, 8);
  d = linear(100, 1536, 40960);  // 24 tiles x 8: not one wave of one CTA per SM
  d.batch_invariant = true;
  EXPECT_EQ(plan(d, h200).family, KernelFamily::kDecodeTma);
}

// 96-128 tokens, unsplit: where sm90-gemm's whole tiles would leave most of their wave
// idle, sm90-decode-r64's 64-row tiles for each 64 tokens, if all are resident at once.
TEST(PlannerBatchInvariant, SixtyFourRowTilesForEverySixtyFourTokens) {
  const DeviceInfo h200 = DeviceInfo::h200();
  GemmDesc d = linear(100, 4096, 11008);  // 64 tiles x 2 token tiles = 128 CTAs
  d.batch_invariant = true;
  LaunchPlan p = plan(d, h200);
  EXPECT_EQ(p.family, KernelFamily::kDecodeR64) << p.family_reason;
  EXPECT_EQ(p.k_splits, 1);
  EXPECT_EQ(p.decode.token_tiles, 2);
  d.n = 5120;  // 160 CTAs: not all resident, so one 128-token tile (80 CTAs)
  p = plan(d, h200);
  EXPECT_EQ(p.family, KernelFamily::kDecodeR64) << p.family_reason;
  EXPECT_EQ(p.decode.config, DecodeConfigId::kR64x128);
  EXPECT_EQ(p.decode.token_tiles, 1);
  d = linear(128, 28672, 8192);  // sm90-gemm's tiles fill their waves
  d.batch_invariant = true;
  EXPECT_EQ(plan(d, h200).family, KernelFamily::kSm90Gemm);
  d = linear(129, 3072, 4096);  // beyond 128 tokens: 128-token tiles, unsplit (24 tiles: no split)
  d.batch_invariant = true;
  EXPECT_EQ(plan(d, h200).decode.config, DecodeConfigId::kR64x128);
  EXPECT_EQ(plan(d, h200).k_splits, 1);
  d.m = 95;  // the second 64-token tile would hold too few tokens: one 96-token tile
  EXPECT_EQ(plan(d, h200).decode.config, DecodeConfigId::kR64x96);
  d.m = 96;
  EXPECT_EQ(plan(d, h200).decode.config, DecodeConfigId::kR64x64);
  EXPECT_EQ(plan(d, h200).decode.token_tiles, 2);
}

// Normal mode at 65-128 tokens: sm90-decode-r64's 64 x 96 or 64 x 128 tiles (twice the
// CTAs of sm90-decode's 128-row tiles of the same token tile for the same K split) where
// the shared-memory model costs them 8% less; not where sm90-gemm's tiles fill their waves.
TEST(PlannerTokenTiles, SixtyFourRowTilesOfOneTokenTile) {
  const DeviceInfo h200 = DeviceInfo::h200();
  for (int64_t m : {97, 127, 128}) {
    const LaunchPlan p = plan(linear(m, 4096, 4096), h200);  // 96 CTAs in a split of 3 -> 128 in 2
    EXPECT_EQ(p.family, KernelFamily::kDecodeR64) << m << ": " << p.family_reason;
    EXPECT_EQ(p.decode.config, DecodeConfigId::kR64x128) << m;
    EXPECT_EQ(p.decode.token_tiles, 1) << m;
    EXPECT_EQ(p.decode.splits, 2) << m;
    EXPECT_EQ(p.k_splits, 2) << m;
  }
  EXPECT_EQ(plan(linear(128, 28672, 8192), h200).family, KernelFamily::kSm90Gemm);
  // A forced sm90-decode-r64 takes the narrowest of the two tiles that holds M from 65
  // tokens, 64-token tiles below.
  PlanOverrides forced;
  forced.family = KernelFamily::kDecodeR64;
  EXPECT_EQ(plan(linear(100, 384, 1000), h200, &forced).decode.config, DecodeConfigId::kR64x128);
  EXPECT_EQ(plan(linear(96, 384, 1000), h200, &forced).decode.config, DecodeConfigId::kR64x96);
  EXPECT_EQ(plan(linear(65, 384, 1000), h200, &forced).decode.config, DecodeConfigId::kR64x96);
  EXPECT_EQ(plan(linear(64, 384, 1000), h200, &forced).decode.config, DecodeConfigId::kR64x64);
}

// 65-128 tokens on an unsplit weight whose 128 x 128 tiles leave most SMs idle, and whose
// 64-token tiles would not all be resident: sm90-decode-r64's one 96- or 128-token tile,
// twice sm90-gemm's CTAs, where the shared-memory model says it saves kTokenTilesMinSaving.
TEST(PlannerBatchInvariant, OneTokenTileWhereWholeTilesAreFew) {
  const DeviceInfo h200 = DeviceInfo::h200();
  for (int64_t m : {65, 96, 127, 128}) {
    GemmDesc d = linear(m, 5120, 25600);  // 40 tiles of 128 x 128; 80 x 2 64-token tiles
    d.batch_invariant = true;
    const LaunchPlan p = plan(d, h200);
    EXPECT_EQ(p.family, KernelFamily::kDecodeR64) << m << ": " << p.family_reason;
    EXPECT_EQ(p.decode.config, m <= 96 ? DecodeConfigId::kR64x96 : DecodeConfigId::kR64x128) << m;
    EXPECT_EQ(p.decode.token_tiles, 1) << m;
    EXPECT_EQ(p.decode.ctas, 80) << m;
    EXPECT_EQ(p.k_splits, 1) << m;
  }
  GemmDesc d = linear(64, 5120, 25600);  // up to 64 tokens the decode rules are the normal mode's
  d.batch_invariant = true;
  EXPECT_NE(plan(d, h200).decode.config, DecodeConfigId::kR64x128);
  d = linear(128, 16384, 8192);  // 128 tiles of 128 x 128 fill the GPU: sm90-gemm
  d.batch_invariant = true;
  EXPECT_EQ(plan(d, h200).family, KernelFamily::kSm90Gemm);
}

TEST(PlannerBatchInvariant, TheSameFamilyAndOrderForEveryDtypeAndEpilogue) {
  for (DataType dt : {DataType::kBF16, DataType::kF16}) {
    GemmDesc d = linear(64, 8192, 4096);
    d.a.dtype = d.b.dtype = d.c.dtype = d.d.dtype = dt;
    d.batch_invariant = true;
    d.epilogue.bias = BiasMode::kPerColumn;
    EXPECT_TRUE(keeps_one_k_order(plan(d, DeviceInfo::h200()), d, DeviceInfo::h200()));
  }
}

// ---- Reasons ----

TEST(PlannerReasons, EveryChoiceSaysWhy) {
  const DeviceInfo h200 = DeviceInfo::h200();
  for (int64_t m : {1, 8, 16, 64, 128, 256, 1000, 4096, 4097}) {
    for (int64_t n : {4096, 8192, 28672}) {
      for (bool invariant : {false, true}) {
        GemmDesc d = linear(m, n, 8192);
        d.batch_invariant = invariant;
        const LaunchPlan p = plan(d, h200);
        SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n));
        ASSERT_NE(p.family, KernelFamily::kNone);
        EXPECT_GT(std::strlen(p.family_reason), 0u);
        EXPECT_GT(std::strlen(p.tile_reason), 0u);
        EXPECT_GT(std::strlen(p.split_reason), 0u);
        EXPECT_GT(std::strlen(p.row_split_reason), 0u);
        EXPECT_STREQ(p.kernel_name, family_name(p.family));
      }
    }
  }
}

// What anvil-plan and the trace print: one line per decision, the lines each family has.
std::string printed(const LaunchPlan& p, const GemmDesc& d) {
  std::FILE* f = std::tmpfile();
  if (f == nullptr) return "";
  print_plan(p, d, f);
  std::string text(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  const size_t read = std::fread(text.data(), 1, text.size(), f);
  std::fclose(f);
  text.resize(read);
  return text;
}

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

TEST(PlannerReasons, PrintedPlansShowEveryDecision) {
  const DeviceInfo h200 = DeviceInfo::h200();
  struct Case {
    GemmDesc desc;
    KernelFamily family;  // kNone: any decode family
    std::vector<const char*> lines;
  };
  GemmDesc fp8 = linear(4096, 4096, 4096);
  fp8.a.dtype = fp8.b.dtype = DataType::kE4M3;
  fp8.scales = ScaleMode::kBlock128;
  GemmDesc fp8_decode = fp8;
  fp8_decode.m = 1;
  GemmDesc narrow_output = linear(8192, 64, 4096);  // swap-AB: the weight's 64 rows are few
  const Case cases[] = {
      {linear(4096, 4096, 4096), KernelFamily::kSm90Gemm,
       {"plan 4096 x 4096 x 4096", "kernel:", "tile:", "schedule", "repack:", "K split:", "row split:"}},
      {linear(1, 8192, 8192), KernelFamily::kNone, {"plan 1 x 8192 x 8192", "kernel:", "tile:", "K split:", "row split:"}},
      {linear(1025, 4096, 4096), KernelFamily::kSm90Gemm, {"row split:", "tail:"}},
      {fp8, KernelFamily::kSm90Fp8, {"scales block128", "K split:"}},
      {fp8_decode, KernelFamily::kSm90Fp8Decode, {"tile:", "scales block128"}},
      {narrow_output, KernelFamily::kNone, {"swap-AB:"}},
      {linear(64, 64, 0), KernelFamily::kFallback, {"plan 64 x 64 x 0", "kernel:"}},
  };
  for (const Case& c : cases) {
    const LaunchPlan p = plan(c.desc, h200);
    if (c.family != KernelFamily::kNone) {
      EXPECT_EQ(p.family, c.family) << p.family_reason;
    } else {
      EXPECT_TRUE(p.family == KernelFamily::kDecodeTma || p.family == KernelFamily::kDecodeLdg ||
                  p.family == KernelFamily::kDecodeR64 || p.family == KernelFamily::kDecodeLdgR64)
          << p.family_reason;
    }
    const std::string text = printed(p, c.desc);
    for (const char* line : c.lines) EXPECT_TRUE(has(text, line)) << "missing '" << line << "' in:\n" << text;
    if (p.family == KernelFamily::kFallback) {
      EXPECT_FALSE(has(text, "K split:")) << text;
    }
  }
  // The batch-invariant mode says so in the heading.
  GemmDesc invariant = linear(64, 4096, 4096);
  invariant.batch_invariant = true;
  EXPECT_TRUE(has(printed(plan(invariant, h200), invariant), ", batch-invariant)"));
}

}  // namespace
}  // namespace anvil::detail
