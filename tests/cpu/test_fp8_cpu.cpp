// FP8 on the CPU: what can_implement accepts and refuses (with the reason), the planner's
// sm90-fp8 and sm90-fp8-decode plans, the scale counts and the host decoders of the 8-bit
// floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "anvil/anvil.h"
#include "kernels/sm90/fp8_decode_plan.h"
#include "plan/planner.h"
#include "verify/verify.h"

namespace anvil::detail {
namespace {

GemmDesc fp8_linear(int64_t m, int64_t n, int64_t k, ScaleMode scales = ScaleMode::kTensor) {
  GemmDesc d = anvil::linear_desc(m, n, k, DataType::kBF16, DataType::kBF16);
  d.a.dtype = DataType::kE4M3;
  d.b.dtype = DataType::kE4M3;
  d.scales = scales;
  return d;
}

const float* fake_scale(uintptr_t at) { return reinterpret_cast<const float*>(at); }

GemmArgs fp8_args() {
  GemmArgs args;
  args.a = reinterpret_cast<const void*>(uintptr_t{1} << 32);
  args.b = reinterpret_cast<const void*>(uintptr_t{2} << 32);
  args.d = reinterpret_cast<void*>(uintptr_t{3} << 32);
  args.scale_a = fake_scale(uintptr_t{4} << 32);
  args.scale_b = fake_scale(uintptr_t{5} << 32);
  return args;
}

// What a valid problem gets without a GPU: success, or the device check's refusal.
bool accepted(Status s) {
  return s == Status::kSuccess || s == Status::kDriverUnavailable || s == Status::kArchMismatch;
}

Status check(const GemmDesc& desc, const GemmArgs* args, std::string* message) {
  Diagnostic diag;
  const Status s = anvil::can_implement(desc, args, &diag);
  *message = diag.message;
  if (s != Status::kSuccess) {
    EXPECT_EQ(diag.status, s);
    EXPECT_GT(std::strlen(diag.message), 0u) << "a refusal must say why";
  }
  return s;
}

// Every scale mode, output dtype and input pair the kernel builds is accepted.
TEST(Fp8Api, SupportedCombinationsAreAccepted) {
  const GemmArgs args = fp8_args();
  std::string message;
  for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128}) {
    for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
      GemmDesc d = fp8_linear(200, 300, 272, scales);
      d.d.dtype = out;
      EXPECT_TRUE(accepted(check(d, &args, &message))) << to_string(scales) << " -> " << to_string(out) << ": " << message;
      EXPECT_TRUE(accepted(check(d, nullptr, &message))) << "description only: " << message;
    }
  }
  for (auto [a, b] : {std::pair{DataType::kE5M2, DataType::kE4M3}, std::pair{DataType::kE4M3, DataType::kE5M2}}) {
    GemmDesc d = fp8_linear(64, 128, 128);
    d.a.dtype = a, d.b.dtype = b;
    EXPECT_TRUE(accepted(check(d, &args, &message))) << message;
    d.scales = ScaleMode::kBlock128;
    EXPECT_EQ(check(d, &args, &message), Status::kNotSupported) << "block scales are e4m3 x e4m3";
  }
  GemmDesc swiglu = fp8_linear(64, 256, 128, ScaleMode::kBlock128);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  swiglu.d.ld = 128;
  EXPECT_TRUE(accepted(check(swiglu, &args, &message))) << message;
  GemmDesc batched = fp8_linear(64, 256, 128);
  batched.batch = 2;
  batched.a.batch_stride = 64 * 128, batched.b.batch_stride = 256 * 128, batched.d.batch_stride = 64 * 256;
  EXPECT_TRUE(accepted(check(batched, &args, &message))) << message;
}

// Each refusal, with words that point at the cause.
TEST(Fp8Api, RefusalsSayWhy) {
  const GemmArgs args = fp8_args();
  std::string message;
  const auto refused = [&](GemmDesc d, Status status, const char* words, const GemmArgs* a = nullptr) {
    EXPECT_EQ(check(d, a != nullptr ? a : &args, &message), status) << words << ": " << message;
    EXPECT_NE(message.find(words), std::string::npos) << "message '" << message << "' lacks '" << words << "'";
  };
  GemmDesc d = fp8_linear(64, 128, 128);
  d.a.dtype = DataType::kE5M2, d.b.dtype = DataType::kE5M2;
  refused(d, Status::kNotSupported, "e5m2 x e5m2");

  d = fp8_linear(64, 128, 128);
  d.b.dtype = DataType::kBF16;
  refused(d, Status::kNotSupported, "8-bit floats");

  d = fp8_linear(64, 128, 128);
  d.b.order = Order::kRowMajor;
  d.b.ld = 128;
  refused(d, Status::kNotSupported, "K-major");

  d = fp8_linear(64, 128, 136);  // K a multiple of 8, not 16
  refused(d, Status::kNotSupported, "multiple of 16");

  d = fp8_linear(64, 128, 128);
  d.a.ld = 136;
  refused(d, Status::kMisalignedOperand, "multiples of 16 elements");

  d = fp8_linear(64, 128, 128);
  d.d.dtype = DataType::kE4M3;
  refused(d, Status::kNotSupported, "input types only");

  GemmDesc bf16 = anvil::linear_desc(64, 128, 128, DataType::kBF16, DataType::kBF16);
  bf16.scales = ScaleMode::kTensor;
  refused(bf16, Status::kNotSupported, "FP8 inputs only");

  d = fp8_linear(64, 128, 128, ScaleMode::kBlock128);
  d.batch = 2;
  d.a.batch_stride = 64 * 128, d.b.batch_stride = 128 * 128, d.d.batch_stride = 64 * 128;
  refused(d, Status::kNotSupported, "batch 1");

  d = fp8_linear(64, 128, 128);
  d.batch_invariant = true;
  refused(d, Status::kNotSupported, "batch-invariant");

  d = fp8_linear(64, 128, 128);
  d.scales = static_cast<ScaleMode>(9);
  refused(d, Status::kInvalidArgument, "scale mode");

  GemmArgs no_scale = fp8_args();
  no_scale.scale_b = nullptr;
  refused(fp8_linear(64, 128, 128), Status::kInvalidArgument, "scale_b is null", &no_scale);

  GemmArgs odd_scale = fp8_args();
  odd_scale.scale_a = fake_scale((uintptr_t{4} << 32) + 2);
  refused(fp8_linear(64, 128, 128), Status::kMisalignedOperand, "4-byte aligned", &odd_scale);

  GemmArgs odd_a = fp8_args();
  odd_a.a = reinterpret_cast<const void*>((uintptr_t{1} << 32) + 8);
  refused(fp8_linear(64, 128, 128), Status::kMisalignedOperand, "16-byte aligned", &odd_a);

  d = fp8_linear(64, 128, 128);
  d.kernel = "sm90-gemm";
  refused(d, Status::kNotSupported, "sm90-fp8");

  GemmDesc named = anvil::linear_desc(64, 128, 128, DataType::kBF16, DataType::kBF16);
  named.kernel = "sm90-fp8";
  refused(named, Status::kNotSupported, "e4m3/e5m2 inputs", nullptr);
}

TEST(Fp8Api, NamesOfTheNewEnums) {
  EXPECT_STREQ(anvil::to_string(DataType::kE4M3), "e4m3");
  EXPECT_STREQ(anvil::to_string(DataType::kE5M2), "e5m2");
  EXPECT_STREQ(anvil::to_string(ScaleMode::kBlock128), "block128");
  EXPECT_STREQ(anvil::to_string(ScaleMode::kRowColumn), "row-column");
}

// ---- the planner ----

// sm90-fp8 forced: what its own planning chooses, whatever sm90-fp8-decode would cost.
PlanOverrides sm90_fp8_forced() {
  PlanOverrides o;
  o.family = KernelFamily::kSm90Fp8;
  return o;
}

TEST(Fp8Planner, FP8GoesToTheFp8KernelsOnly) {
  const DeviceInfo device = DeviceInfo::h200();
  for (int64_t m : {1, 16, 64, 128, 4096}) {
    for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128}) {
      const LaunchPlan planned = plan(fp8_linear(m, 7168, 2048, scales), device);
      EXPECT_TRUE(planned.family == KernelFamily::kSm90Fp8 || planned.family == KernelFamily::kSm90Fp8Decode)
          << m << " " << planned.family_reason;
      if (m > 128) {
        EXPECT_EQ(planned.family, KernelFamily::kSm90Fp8) << m << " " << planned.family_reason;
      }
      const PlanOverrides forced = sm90_fp8_forced();
      const LaunchPlan p = plan(fp8_linear(m, 7168, 2048, scales), device, &forced);
      EXPECT_EQ(p.family, KernelFamily::kSm90Fp8) << m << " " << p.family_reason;
      EXPECT_STREQ(p.kernel_name, "sm90-fp8");
      EXPECT_GT(std::strlen(p.tile_reason), 0u);
      // Whole tiles, or split-K (fp8_plan.h) with its partials as the only workspace.
      EXPECT_EQ(p.workspace_bytes, p.k_splits > 1 ? size_t{4} * m * 7168 * static_cast<size_t>(p.k_splits) : 0u);
      if (m == 4096) {
        EXPECT_EQ(p.k_splits, 1) << "hundreds of tiles: " << p.split_reason;
      }
      EXPECT_EQ(fp8_block_variant(p.fp8_variant), scales == ScaleMode::kBlock128) << fp8_variant_name(p.fp8_variant);
    }
  }
  // No other family takes FP8, forced or not; the FP8 kernels take nothing else.
  PlanOverrides forced;
  forced.family = KernelFamily::kSm90Gemm;
  EXPECT_EQ(plan(fp8_linear(256, 256, 256), device, &forced).family, KernelFamily::kNone);
  forced.family = KernelFamily::kDecodeTma;
  const LaunchPlan decode16 = plan(fp8_linear(1, 256, 256), device, &forced);
  EXPECT_EQ(decode16.family, KernelFamily::kNone);
  EXPECT_NE(std::string(decode16.family_reason).find("sm90-fp8-decode"), std::string::npos) << decode16.family_reason;
  GemmDesc bf16 = anvil::linear_desc(256, 256, 256, DataType::kBF16, DataType::kBF16);
  for (KernelFamily f : {KernelFamily::kSm90Fp8, KernelFamily::kSm90Fp8Decode}) {
    forced.family = f;
    EXPECT_EQ(plan(bf16, device, &forced).family, KernelFamily::kNone) << family_name(f);
    EXPECT_FALSE(decode_family_accepts(f, bf16)) << family_name(f);
  }
  EXPECT_NE(plan(bf16, device).family, KernelFamily::kSm90Fp8);
  EXPECT_NE(plan(bf16, device).family, KernelFamily::kSm90Fp8Decode);
  GemmDesc bf16_decode = anvil::linear_desc(1, 8192, 8192, DataType::kBF16, DataType::kBF16);
  EXPECT_NE(plan(bf16_decode, device).family, KernelFamily::kSm90Fp8Decode);
  EXPECT_FALSE(decode_family_accepts(KernelFamily::kFallback, fp8_linear(1, 256, 256)));
  EXPECT_FALSE(decode_family_accepts(KernelFamily::kDecodeTma, fp8_linear(1, 256, 256)));
  EXPECT_TRUE(decode_family_accepts(KernelFamily::kSm90Fp8, fp8_linear(1, 256, 256)));
  EXPECT_TRUE(decode_family_accepts(KernelFamily::kSm90Fp8Decode, fp8_linear(1, 256, 256)));
}

TEST(Fp8Planner, MixedPairsTakeTheNarrowPairs) {
  GemmDesc d = fp8_linear(4096, 4096, 4096);
  d.a.dtype = DataType::kE5M2;
  EXPECT_EQ(plan(d, DeviceInfo::h200()).fp8_variant, Fp8Variant::kNarrowPair);
  // A forced variant that does not run the pair is not taken.
  PlanOverrides o;
  o.fp8_variant = static_cast<int>(Fp8Variant::kWidePair);
  EXPECT_EQ(plan(d, DeviceInfo::h200(), &o).fp8_variant, Fp8Variant::kNarrowPair);
}

TEST(Fp8Planner, TilesFollowTheWaves) {
  const DeviceInfo device = DeviceInfo::h200();
  // 4096 x 4096: 512 wide tiles (3.88 waves) against 1024 narrow ones (7.76 waves, slower
  // per unit of area): wide.
  EXPECT_EQ(plan(fp8_linear(4096, 4096, 4096), device).fp8_variant, Fp8Variant::kWidePair);
  // 256 x 7168: 28 wide tiles per row of tiles leave SMs idle; 56 narrow ones per row fill
  // 112 of 132.
  EXPECT_EQ(plan(fp8_linear(256, 7168, 4096), device).fp8_variant, Fp8Variant::kNarrowPair);
  // The cost model itself: the chosen variant is one that runs the problem, and none that
  // runs it is cheaper.
  for (int64_t m : {1, 64, 128, 200, 256, 1000, 4096}) {
    for (int64_t n : {576, 1536, 7168, 24576}) {
      for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kBlock128}) {
        const Fp8Variant v = choose_fp8_variant(m, n, 1, 132, DataType::kE4M3, DataType::kE4M3, scales);
        EXPECT_TRUE(fp8_variant_runs(v, DataType::kE4M3, DataType::kE4M3, scales));
        for (int i = 0; i < kFp8Variants; ++i) {
          const Fp8Variant other = static_cast<Fp8Variant>(i);
          if (!fp8_variant_runs(other, DataType::kE4M3, DataType::kE4M3, scales)) continue;
          EXPECT_LE(fp8_variant_cost(v, m, n, 1, 132), fp8_variant_cost(other, m, n, 1, 132))
              << m << " x " << n << ": " << fp8_variant_name(v) << " against " << fp8_variant_name(other);
        }
      }
    }
  }
}

// Block scales: 128x192 tiles where their waves x area / speed is lower (8192 x 8192: 2752
// tiles in 21 waves against 4096 in 32), 128x128 where the 192-wide tiles' last wave is
// emptier (4096 x 4096: 704 tiles fill 5.3 waves, 1024 fill 7.8); never with SwiGLU, whose
// 128-column gate/up pairs a 192-wide tile would cut, not even when forced.
TEST(Fp8Planner, BlockScalesTakeWideTilesWhereTheyCostLess) {
  const DeviceInfo device = DeviceInfo::h200();
  const PlanOverrides forced_family = sm90_fp8_forced();
  const LaunchPlan wide = plan(fp8_linear(8192, 8192, 8192, ScaleMode::kBlock128), device, &forced_family);
  EXPECT_EQ(wide.fp8_variant, Fp8Variant::kBlockWidePair);
  EXPECT_EQ(wide.tile.block_n, 192);
  EXPECT_EQ(wide.stages, 5);
  EXPECT_EQ(plan(fp8_linear(4096, 4096, 4096, ScaleMode::kBlock128), device, &forced_family).fp8_variant,
            Fp8Variant::kBlockPair);
  // Not for the other scale modes.
  EXPECT_FALSE(fp8_variant_runs(Fp8Variant::kBlockWidePair, DataType::kE4M3, DataType::kE4M3, ScaleMode::kTensor));
  EXPECT_TRUE(fp8_variant_runs(Fp8Variant::kBlockWidePair, DataType::kE4M3, DataType::kE4M3, ScaleMode::kBlock128));
  EXPECT_FALSE(
      fp8_variant_runs(Fp8Variant::kBlockWidePair, DataType::kE4M3, DataType::kE4M3, ScaleMode::kBlock128, true));
  GemmDesc swiglu = fp8_linear(8192, 8192, 8192, ScaleMode::kBlock128);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  swiglu.d.ld = 4096;
  EXPECT_EQ(plan(swiglu, device, &forced_family).tile.block_n % 128, 0);
  PlanOverrides forced_wide = forced_family;
  forced_wide.fp8_variant = static_cast<int>(Fp8Variant::kBlockWidePair);
  EXPECT_EQ(plan(swiglu, device, &forced_wide).tile.block_n % 128, 0);
  EXPECT_EQ(plan(fp8_linear(8192, 8192, 8192, ScaleMode::kBlock128), device, &forced_wide).fp8_variant,
            Fp8Variant::kBlockWidePair);
}

// One row of 128-row tiles (M <= 128): a pair along M gives its second CTA rows past M
// only. On a wide weight those CTAs add waves (36864 columns: 576 narrow tiles in pairs
// along M, 5 waves; 288 along N, 3), so the pairs run along N, multicasting A; with an even
// row count they stay along M. Where both fit one wave (7168 columns) they cost the same
// and the pairs along M are kept. Where the fitted widths run (not with block scales),
// 231 single CTAs of 128 x 160 take two waves there and cost less still.
TEST(Fp8Planner, OddTileRowsPairAlongN) {
  const DeviceInfo device = DeviceInfo::h200();
  const PlanOverrides forced = sm90_fp8_forced();
  for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128}) {
    EXPECT_FALSE(fp8_pairs_along_n(plan(fp8_linear(64, 7168, 2048, scales), device, &forced).fp8_variant));
    for (int64_t m : {1, 16, 64, 128}) {
      const LaunchPlan p = plan(fp8_linear(m, 36864, 2048, scales), device, &forced);
      EXPECT_EQ(p.cluster.m, 1) << m << ": " << fp8_variant_name(p.fp8_variant);
      if (scales == ScaleMode::kBlock128) {
        EXPECT_TRUE(fp8_pairs_along_n(p.fp8_variant)) << m << ": " << fp8_variant_name(p.fp8_variant);
        EXPECT_EQ(p.cluster.n, 2);
      } else {
        EXPECT_EQ(p.fp8_variant, Fp8Variant::kFitSingle160) << m;
      }
    }
    const LaunchPlan even = plan(fp8_linear(256, 36864, 2048, scales), device);
    EXPECT_FALSE(fp8_pairs_along_n(even.fp8_variant)) << fp8_variant_name(even.fp8_variant);
    EXPECT_EQ(even.cluster.m, 2);
  }
  // The cost counts the padded tiles: 64 x 7168 in narrow pairs along M runs 2 x 56 tiles,
  // along N 56.
  EXPECT_EQ(wave_plan(64, 7168, 1, fp8_tile_shape(Fp8Variant::kNarrowPair), 132, 2, 1).tiles, 112);
  EXPECT_EQ(wave_plan(64, 7168, 1, fp8_tile_shape(Fp8Variant::kNarrowPairN), 132, 1, 2).tiles, 56);
  // The mixed e5m2 pairs have one configuration, along M, at any M.
  GemmDesc mixed = fp8_linear(64, 7168, 2048);
  mixed.b.dtype = DataType::kE5M2;
  EXPECT_EQ(plan(mixed, device).family, KernelFamily::kSm90Fp8);
  EXPECT_EQ(plan(mixed, device).fp8_variant, Fp8Variant::kNarrowPair);
}

// The fitted widths (160, 192, 224) where the 128- and 256-wide tiles leave the last wave
// partly idle: DeepSeek-V3's kv_a at 4096 rows (576 columns: 96 tiles of 128 x 256 fill
// 73% of one wave, 128 of 128 x 160 fill 97%), 256 x 10240 (80 wide tiles; 128 of 160),
// 256 x 28672 (224 wide tiles in 1.7 waves; 256 of 224 in 1.94); as single CTAs where a
// pair holds an empty row of tiles (128 x 24576: 128 tiles of 192). Never with block
// scales, the e5m2 pairs or SwiGLU, not even forced; where they run a forced one is kept.
TEST(Fp8Planner, FittedWidthsFillTheLastWave) {
  const DeviceInfo device = DeviceInfo::h200();
  const PlanOverrides forced_family = sm90_fp8_forced();
  for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn}) {
    const LaunchPlan kv_a = plan(fp8_linear(4096, 576, 7168, scales), device);
    EXPECT_EQ(kv_a.fp8_variant, Fp8Variant::kFitPair160);
    EXPECT_EQ(kv_a.tile.block_n, 160);
    EXPECT_EQ(kv_a.stages, 5);
    EXPECT_EQ(kv_a.cluster.m, 2);
    EXPECT_EQ(plan(fp8_linear(256, 10240, 8192, scales), device).fp8_variant, Fp8Variant::kFitPair160);
    const LaunchPlan up = plan(fp8_linear(256, 28672, 8192, scales), device);
    EXPECT_EQ(up.fp8_variant, Fp8Variant::kFitPair224);
    EXPECT_EQ(up.stages, 4);
    const LaunchPlan q_b = plan(fp8_linear(128, 24576, 1536, scales), device, &forced_family);
    EXPECT_EQ(q_b.fp8_variant, Fp8Variant::kFitSingle192);
    EXPECT_EQ(q_b.cluster.m, 1);
    EXPECT_EQ(q_b.cluster.n, 1);
    // Where 256-wide tiles fill their waves the fitted widths cost more.
    EXPECT_EQ(plan(fp8_linear(4096, 4096, 4096, scales), device).fp8_variant, Fp8Variant::kWidePair);
  }
  for (int i = 0; i < kFp8Variants; ++i) {
    const Fp8Variant v = static_cast<Fp8Variant>(i);
    if (!fp8_fit_variant(v)) continue;
    SCOPED_TRACE(fp8_variant_name(v));
    EXPECT_TRUE(fp8_variant_runs(v, DataType::kE4M3, DataType::kE4M3, ScaleMode::kTensor));
    EXPECT_FALSE(fp8_variant_runs(v, DataType::kE4M3, DataType::kE4M3, ScaleMode::kBlock128));
    EXPECT_FALSE(fp8_variant_runs(v, DataType::kE5M2, DataType::kE4M3, ScaleMode::kTensor));
    EXPECT_FALSE(fp8_variant_runs(v, DataType::kE4M3, DataType::kE4M3, ScaleMode::kTensor, true));
    EXPECT_EQ(fp8_cluster_shape(v).m, fp8_fit_single(v) ? 1 : 2);
    PlanOverrides o = forced_family;
    o.fp8_variant = i;
    EXPECT_EQ(plan(fp8_linear(300, 700, 640), device, &o).fp8_variant, v);
    GemmDesc swiglu = fp8_linear(4096, 576, 7168);
    swiglu.epilogue.activation = Activation::kSwiGLU;
    swiglu.d.ld = 288;
    EXPECT_EQ(plan(swiglu, device, &o).tile.block_n % 128, 0);
    EXPECT_EQ(plan(fp8_linear(4096, 576, 7168, ScaleMode::kBlock128), device, &o).tile.block_n % 64, 0);
  }
}

TEST(Fp8Planner, ForcedVariantIsHonoured) {
  PlanOverrides o;
  o.fp8_variant = static_cast<int>(Fp8Variant::kNarrowPair);
  const LaunchPlan p = plan(fp8_linear(4096, 4096, 4096), DeviceInfo::h200(), &o);
  EXPECT_EQ(p.fp8_variant, Fp8Variant::kNarrowPair);
  EXPECT_NE(std::string(p.tile_reason).find("forced"), std::string::npos) << p.tile_reason;
  EXPECT_EQ(p.tile.block_n, 128);
  // Block scales run on the block pairs only.
  o.fp8_variant = static_cast<int>(Fp8Variant::kWidePair);
  EXPECT_EQ(plan(fp8_linear(256, 256, 256, ScaleMode::kBlock128), DeviceInfo::h200(), &o).fp8_variant,
            Fp8Variant::kBlockPair);
}

// Split-K (fp8_plan.h): kv_a at 64 tokens makes 6 CTAs of whole tiles; sm90-fp8's plan
// cuts K into slices of whole 128-wide blocks, asks for the partials' workspace, and says
// so (with its own scales sm90-fp8-decode may take the shape instead: sm90-fp8 is forced).
TEST(Fp8Planner, SplitKForFewTilesAndLongK) {
  const DeviceInfo device = DeviceInfo::h200();
  const PlanOverrides forced = sm90_fp8_forced();
  for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128}) {
    const GemmDesc d = fp8_linear(64, 576, 7168, scales);
    const LaunchPlan p = plan(d, device, &forced);
    ASSERT_EQ(p.family, KernelFamily::kSm90Fp8);
    ASSERT_GT(p.k_splits, 1) << p.split_reason;
    EXPECT_EQ(p.k_splits * p.slice_k, 7168);
    EXPECT_EQ(p.slice_k % 128, 0);
    EXPECT_EQ(p.workspace_bytes, size_t{4} * 64 * 576 * static_cast<size_t>(p.k_splits));
    EXPECT_NE(std::string(p.split_reason).find("split-K"), std::string::npos) << p.split_reason;
    EXPECT_EQ(fp8_block_variant(p.fp8_variant), scales == ScaleMode::kBlock128) << fp8_variant_name(p.fp8_variant);
    EXPECT_TRUE(fp8_variant_runs(p.fp8_variant, d.a.dtype, d.b.dtype, scales));
    // The slices' configuration is the planner's choice for that batch of slices.
    EXPECT_EQ(p.fp8_variant, choose_fp8_variant(64, 576, p.k_splits, device.sm_count, d.a.dtype, d.b.dtype, scales));
  }
}

// Without room for the partials, or with a workspace that is not 16-byte aligned (the sum
// reads the partials as float4), the whole-tile plan runs, as for sm90-gemm's split-K: the
// workspace is optional. (200 rows: past the decode kernel's, which splits K without one.)
TEST(Fp8Planner, SplitKWorkspaceIsOptional) {
  const DeviceInfo device = DeviceInfo::h200();
  const GemmDesc d = fp8_linear(200, 576, 7168, ScaleMode::kBlock128);
  const LaunchPlan split = plan(d, device);
  ASSERT_GT(split.k_splits, 1);
  CallFacts small;
  small.workspace_bytes = split.workspace_bytes - 1;
  const LaunchPlan whole = plan(d, device, nullptr, &small);
  EXPECT_EQ(whole.family, KernelFamily::kSm90Fp8);
  EXPECT_EQ(whole.k_splits, 1);
  EXPECT_EQ(whole.workspace_bytes, 0u);
  EXPECT_NE(std::string(whole.split_reason).find("workspace"), std::string::npos) << whole.split_reason;
  CallFacts unaligned;
  unaligned.workspace_aligned16 = false;
  EXPECT_EQ(plan(d, device, nullptr, &unaligned).k_splits, 1);
  // The public entry point asks for the partials' room; a call with less is still taken.
  EXPECT_EQ(anvil::workspace_size(d), split.workspace_bytes);
  GemmArgs args = fp8_args();
  std::string message;
  EXPECT_TRUE(accepted(check(d, &args, &message))) << message;
}

TEST(Fp8Planner, SplitKForcedOrRefused) {
  const DeviceInfo device = DeviceInfo::h200();
  PlanOverrides never = sm90_fp8_forced();
  never.split_k_slices = 1;
  EXPECT_EQ(plan(fp8_linear(64, 576, 7168), device, &never).k_splits, 1);
  PlanOverrides four;
  four.split_k_slices = 4;
  // Forced on a problem the rule leaves whole (hundreds of tiles) ...
  const LaunchPlan forced = plan(fp8_linear(1024, 4096, 4096), device, &four);
  EXPECT_EQ(forced.k_splits, 4);
  EXPECT_EQ(forced.slice_k, 1024);
  EXPECT_EQ(forced.workspace_bytes, size_t{4} * 1024 * 4096 * 4);
  // ... but only in whole blocks, at least 4 of them, and on one matrix.
  PlanOverrides five;
  five.split_k_slices = 5;
  EXPECT_EQ(plan(fp8_linear(64, 576, 7168), device, &five).k_splits, 1);  // 56 blocks
  EXPECT_EQ(plan(fp8_linear(64, 576, 4096 + 16), device, &four).k_splits, 1);
  EXPECT_EQ(plan(fp8_linear(64, 576, 1024), device, &four).k_splits, 1);  // 2 blocks a slice
  GemmDesc batched = fp8_linear(64, 576, 7168);
  batched.batch = 2;
  batched.a.batch_stride = 64 * 7168;
  batched.b.batch_stride = 576 * 7168;
  batched.d.batch_stride = 64 * 576;
  EXPECT_EQ(plan(batched, device, &four).k_splits, 1);
  // A forced configuration runs whole tiles unless the split is forced too.
  PlanOverrides variant;
  variant.fp8_variant = static_cast<int>(Fp8Variant::kNarrowPair);
  EXPECT_EQ(plan(fp8_linear(64, 576, 7168), device, &variant).k_splits, 1);
  variant.split_k_slices = 8;
  const LaunchPlan both = plan(fp8_linear(64, 576, 7168), device, &variant);
  EXPECT_EQ(both.k_splits, 8);
  EXPECT_EQ(both.fp8_variant, Fp8Variant::kNarrowPair);
}

// ---- sm90-fp8-decode (fp8_decode_plan.h) ----

// The planner's choice between the two FP8 kernels, recomputed from the rule's own pieces:
// the decode plan the planner would launch, both estimates, and prefers_fp8_decode.
bool rule_prefers_decode(const GemmDesc& d, const DeviceInfo& device) {
  if (fp8_decode_refusal(d) != nullptr) return false;
  PlanOverrides forced;
  forced.family = KernelFamily::kSm90Fp8Decode;
  const LaunchPlan decode = plan(d, device, &forced);
  EXPECT_EQ(decode.family, KernelFamily::kSm90Fp8Decode) << decode.family_reason;
  const DecodePlan& dp = decode.decode;
  const double decode_us = fp8_decode_estimated_us(int64_t{dp.feature_tiles} * dp.token_tiles * dp.batch, dp.k_tiles,
                                                   dp.splits, device.resident(dp.config, dp.splits), dp.token_tile);
  const double gemm_us = fp8_gemm_estimated_us(d.m, d.n, d.k, d.batch, device.sm_count, d.a.dtype, d.b.dtype, d.scales);
  return prefers_fp8_decode(d.m, dp.waves, decode_us, gemm_us);
}

TEST(Fp8DecodePlanner, TokenTiles) {
  EXPECT_EQ(fp8_decode_token_tile(1), 8);
  EXPECT_EQ(fp8_decode_token_tile(8), 8);
  EXPECT_EQ(fp8_decode_token_tile(9), 16);
  EXPECT_EQ(fp8_decode_token_tile(33), 64);
  EXPECT_EQ(fp8_decode_token_tile(64), 64);
  EXPECT_EQ(fp8_decode_token_tile(65), 128);
  EXPECT_EQ(fp8_decode_token_tile(128), 128);
  EXPECT_EQ(fp8_decode_token_tile(300), 128);  // several 128-wide tiles when forced
  // Two CTAs per SM for the streaming tiles (up to 64 tokens), one for the 128-token tile.
  const DeviceInfo device = DeviceInfo::h200();
  EXPECT_EQ(device.resident(DecodeConfigId::kFp8x8, 1), 264);
  EXPECT_EQ(device.resident(DecodeConfigId::kFp8x64, 2), 264);
  EXPECT_EQ(device.resident(DecodeConfigId::kFp8x128, 1), 132);
}

// Decode-sized problems on wide weights - the shapes where sm90-fp8's 128-row tiles leave
// SMs idle - take the decode kernel, with a plan in its units: 128 weight rows, 128-wide K
// stages, the narrowest token tile that holds M, a split of 1-8.
TEST(Fp8DecodePlanner, DecodeShapesTakeIt) {
  const DeviceInfo device = DeviceInfo::h200();
  const int64_t shapes[][3] = {{1, 8192, 8192},  {7, 8192, 8192},   {16, 10240, 8192}, {64, 8192, 8192},
                               {1, 28672, 8192}, {64, 7168, 16384}, {64, 36864, 7168}, {100, 8192, 8192},
                               {128, 4096, 4096}};
  for (const auto& s : shapes) {
    for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn}) {
      const GemmDesc d = fp8_linear(s[0], s[1], s[2], scales);
      const LaunchPlan p = plan(d, device);
      SCOPED_TRACE(std::to_string(s[0]) + " x " + std::to_string(s[1]) + " x " + std::to_string(s[2]) + " " +
                   to_string(scales) + ": " + p.family_reason);
      ASSERT_EQ(p.family, KernelFamily::kSm90Fp8Decode);
      EXPECT_STREQ(p.kernel_name, "sm90-fp8-decode");
      EXPECT_NE(std::string(p.family_reason).find("est."), std::string::npos);
      EXPECT_EQ(p.decode.tile_rows, 128);
      EXPECT_EQ(p.decode.k_block, 128);
      EXPECT_EQ(p.decode.token_tile, fp8_decode_token_tile(s[0]));
      EXPECT_EQ(p.decode.k_tiles, (s[2] + 127) / 128);
      EXPECT_EQ(p.decode.feature_tiles, (s[1] + 127) / 128);
      EXPECT_GE(p.decode.splits, 1);
      EXPECT_LE(p.decode.splits, 8);
      EXPECT_EQ(p.k_splits, p.decode.splits);
      EXPECT_EQ(p.workspace_bytes, 0u) << "the split is reduced in distributed shared memory";
      EXPECT_TRUE(rule_prefers_decode(d, device));
    }
  }
}

// Where it does not: more than 128 tokens where sm90-fp8 takes whole tiles (or beyond
// kFp8DecodeSplitKMaxTokens, or with block scales), 65-128 tokens whose one-per-SM CTAs would make
// more than one wave, block scales, the mixed e5m2 pairs, and whatever forces sm90-fp8 (the
// family, a variant, split-K slices).
TEST(Fp8DecodePlanner, OtherShapesKeepSm90Fp8) {
  const DeviceInfo device = DeviceInfo::h200();
  const auto family = [&](const GemmDesc& d, const PlanOverrides* o = nullptr) {
    const LaunchPlan p = plan(d, device, o);
    EXPECT_GT(std::strlen(p.family_reason), 0u);
    return p.family;
  };
  EXPECT_EQ(family(fp8_linear(200, 8192, 8192)), KernelFamily::kSm90Fp8);
  EXPECT_EQ(family(fp8_linear(129, 8192, 8192)), KernelFamily::kSm90Fp8);
  const LaunchPlan two_waves = plan(fp8_linear(128, 28672, 8192), device);
  EXPECT_EQ(two_waves.family, KernelFamily::kSm90Fp8);
  EXPECT_NE(std::string(two_waves.family_reason).find("waves"), std::string::npos) << two_waves.family_reason;
  EXPECT_EQ(family(fp8_linear(100, 36864, 7168)), KernelFamily::kSm90Fp8);
  EXPECT_EQ(family(fp8_linear(200, 8192, 8192, ScaleMode::kBlock128)), KernelFamily::kSm90Fp8);
  GemmDesc mixed = fp8_linear(1, 8192, 8192);
  mixed.a.dtype = DataType::kE5M2;
  EXPECT_EQ(family(mixed), KernelFamily::kSm90Fp8);
  mixed.a.dtype = DataType::kE4M3;
  mixed.b.dtype = DataType::kE5M2;
  EXPECT_EQ(family(mixed), KernelFamily::kSm90Fp8);
  const GemmDesc decode_shape = fp8_linear(1, 8192, 8192);
  ASSERT_EQ(family(decode_shape), KernelFamily::kSm90Fp8Decode);
  const PlanOverrides forced = sm90_fp8_forced();
  EXPECT_EQ(family(decode_shape, &forced), KernelFamily::kSm90Fp8);
  PlanOverrides variant;
  variant.fp8_variant = static_cast<int>(Fp8Variant::kNarrowPair);
  EXPECT_EQ(family(decode_shape, &variant), KernelFamily::kSm90Fp8);
  PlanOverrides slices;
  slices.split_k_slices = 4;
  EXPECT_EQ(family(decode_shape, &slices), KernelFamily::kSm90Fp8);
  // A forced decode split stays with the rule's family choice.
  PlanOverrides splits;
  splits.decode_splits = 3;
  const LaunchPlan split3 = plan(decode_shape, device, &splits);
  EXPECT_EQ(split3.family, KernelFamily::kSm90Fp8Decode);
  EXPECT_EQ(split3.decode.splits, 3);
}

// Across a grid of shapes the planner's choice is the rule's: the decode kernel exactly
// where prefers_fp8_decode holds for the plan it would launch.
TEST(Fp8DecodePlanner, PlannerFollowsTheRule) {
  const DeviceInfo device = DeviceInfo::h200();
  int decode = 0, gemm = 0;
  for (int64_t m : {1, 5, 16, 33, 64, 65, 100, 128}) {
    for (int64_t n : {256, 576, 1536, 4096, 7168, 10240, 28672}) {
      for (int64_t k : {512, 2048, 7168, 8192}) {
        const GemmDesc d = fp8_linear(m, n, k, ScaleMode::kTensor);
        const LaunchPlan p = plan(d, device);
        const bool want = rule_prefers_decode(d, device);
        EXPECT_EQ(p.family, want ? KernelFamily::kSm90Fp8Decode : KernelFamily::kSm90Fp8)
            << m << " x " << n << " x " << k << ": " << p.family_reason;
        (want ? decode : gemm) += 1;
      }
    }
  }
  EXPECT_GT(decode, 0);
  EXPECT_GT(gemm, 0);
}

// Beyond 128 tokens the decode kernel is weighed only where sm90-fp8 would split K through
// memory, without block scales, up to kFp8DecodeSplitKMaxTokens: its cluster split instead.
TEST(Fp8DecodePlanner, SplitShapesBeyond128TokensTakeTheClusterSplit) {
  const DeviceInfo device = DeviceInfo::h200();
  const auto sm90_fp8_splits = [&](const GemmDesc& d) {
    return choose_fp8_split_k(d.m, d.n, d.k, d.batch, device.sm_count, d.a.dtype, d.b.dtype, d.scales).slices > 1;
  };
  // A weight of a few output tiles and a long K (Llama 2 7B's down projection, 255 tokens).
  const GemmDesc split = fp8_linear(255, 4096, 11008, ScaleMode::kTensor);
  ASSERT_TRUE(sm90_fp8_splits(split));
  const LaunchPlan p = plan(split, device);
  EXPECT_EQ(p.family, KernelFamily::kSm90Fp8Decode) << p.family_reason;
  EXPECT_NE(std::string(p.family_reason).find("split K"), std::string::npos) << p.family_reason;
  EXPECT_EQ(p.decode.token_tile, 128);
  EXPECT_EQ(p.decode.token_tiles, 2);
  EXPECT_EQ(p.workspace_bytes, 0u) << "the cluster sums the split in distributed shared memory";
  // Row/column scales and no scales read the same decode tiles.
  EXPECT_EQ(plan(fp8_linear(255, 4096, 11008, ScaleMode::kRowColumn), device).family, KernelFamily::kSm90Fp8Decode);
  // Block scales keep sm90-fp8's split.
  const LaunchPlan block = plan(fp8_linear(255, 4096, 11008, ScaleMode::kBlock128), device);
  EXPECT_EQ(block.family, KernelFamily::kSm90Fp8) << block.family_reason;
  EXPECT_GT(block.k_splits, 1);
  // Whole tiles in sm90-fp8: it keeps them.
  const GemmDesc whole = fp8_linear(256, 8192, 8192, ScaleMode::kTensor);
  ASSERT_FALSE(sm90_fp8_splits(whole));
  EXPECT_EQ(plan(whole, device).family, KernelFamily::kSm90Fp8);
  // Past four 128-token tiles, sm90-fp8's split stays.
  const GemmDesc many = fp8_linear(kFp8DecodeSplitKMaxTokens + 1, 1024, 16384, ScaleMode::kTensor);
  ASSERT_TRUE(sm90_fp8_splits(many));
  EXPECT_EQ(plan(many, device).family, KernelFamily::kSm90Fp8);
  // Across a grid, the planner takes the decode kernel exactly where the rule does.
  int moved = 0;
  for (int64_t m : {129, 192, 255, 256, 383, 509, 512, 513}) {
    for (int64_t n : {576, 1024, 2048, 2880, 4096, 7168}) {
      for (int64_t k : {2048, 4096, 14336, 32768}) {
        const GemmDesc d = fp8_linear(m, n, k, ScaleMode::kTensor);
        const bool want = fp8_decode_considered(d.m, d.n, d.k, d.batch, device.sm_count, d.a.dtype, d.b.dtype,
                                                d.scales) &&
                          rule_prefers_decode(d, device);
        EXPECT_EQ(plan(d, device).family, want ? KernelFamily::kSm90Fp8Decode : KernelFamily::kSm90Fp8)
            << m << " x " << n << " x " << k;
        moved += want;
      }
    }
  }
  EXPECT_GT(moved, 0);
}

// The estimates move the way their parts say: the decode kernel's time grows with K and
// with the weight's rows, and never falls below streaming the weight once.
TEST(Fp8DecodePlanner, EstimatesAreMonotone) {
  const auto decode_us = [](int64_t n, int64_t k, int splits) {
    return fp8_decode_estimated_us((n + 127) / 128, (k + 127) / 128, splits, 264, 8);
  };
  EXPECT_LT(decode_us(8192, 4096, 2), decode_us(8192, 8192, 2));
  EXPECT_LT(decode_us(8192, 8192, 2), decode_us(16384, 8192, 2));
  EXPECT_GE(decode_us(8192, 8192, 2), 8192.0 * 8192.0 / kFp8DecodeStreamBytesPerMicrosecond);
  EXPECT_GT(fp8_gemm_estimated_us(64, 8192, 8192, 1, 132, DataType::kE4M3, DataType::kE4M3, ScaleMode::kTensor), 0.0);
}

// Forced: the decode kernel runs any M (several 128-token tiles past 128) and any forced
// split, and says why when it cannot run the problem.
TEST(Fp8DecodePlanner, ForcedAndRefused) {
  const DeviceInfo device = DeviceInfo::h200();
  PlanOverrides forced;
  forced.family = KernelFamily::kSm90Fp8Decode;
  const LaunchPlan wide = plan(fp8_linear(300, 1000, 1040), device, &forced);
  ASSERT_EQ(wide.family, KernelFamily::kSm90Fp8Decode) << wide.family_reason;
  EXPECT_EQ(wide.decode.token_tile, 128);
  EXPECT_EQ(wide.decode.token_tiles, 3);
  EXPECT_EQ(wide.decode.feature_tiles, 8);
  EXPECT_EQ(wide.decode.k_tiles, 9);  // 1040 = 8 x 128 + 16: the last stage is TMA's zeros past K
  forced.decode_splits = 5;
  EXPECT_EQ(plan(fp8_linear(33, 1000, 1040), device, &forced).decode.splits, 5);
  forced.decode_splits = 0;
  const auto refusal = [&](const GemmDesc& d, const char* words) {
    const LaunchPlan p = plan(d, device, &forced);
    EXPECT_EQ(p.family, KernelFamily::kNone) << p.family_reason;
    EXPECT_NE(std::string(p.family_reason).find(words), std::string::npos) << p.family_reason;
    EXPECT_FALSE(decode_family_accepts(KernelFamily::kSm90Fp8Decode, d));
    ASSERT_NE(fp8_decode_refusal(d), nullptr);
    EXPECT_NE(std::string(fp8_decode_refusal(d)).find(words), std::string::npos) << fp8_decode_refusal(d);
  };
  // Block scales run on the decode kernel too: its streaming block-scaled configurations up
  // to 32 tokens, its own one-per-SM ones for the 64- and 128-token tiles.
  for (const auto& [m, tile, config] : {std::tuple{32, 32, DecodeConfigId::kFp8x32},
                                        std::tuple{33, 64, DecodeConfigId::kFp8Block64},
                                        std::tuple{128, 128, DecodeConfigId::kFp8Block128}}) {
    const LaunchPlan block = plan(fp8_linear(m, 1024, 1024, ScaleMode::kBlock128), device, &forced);
    ASSERT_EQ(block.family, KernelFamily::kSm90Fp8Decode) << block.family_reason;
    EXPECT_EQ(block.decode.token_tile, tile);
    EXPECT_EQ(block.decode.config, config);
    EXPECT_EQ(fp8_decode_refusal(fp8_linear(m, 1024, 1024, ScaleMode::kBlock128)), nullptr);
  }
  // The one-per-SM block-scaled tiles plan with their own residency (H200: 132 CTAs unsplit).
  EXPECT_EQ(device.resident(DecodeConfigId::kFp8Block64, 1), 132);
  EXPECT_EQ(device.resident(DecodeConfigId::kFp8x64, 1), 264);
  GemmDesc mixed = fp8_linear(16, 1024, 1024);
  mixed.a.dtype = DataType::kE5M2;
  refusal(mixed, "e4m3 x e4m3");
  GemmDesc no_k = fp8_linear(16, 1024, 0);
  no_k.a.ld = no_k.b.ld = 16;
  refusal(no_k, "K = 0");
}

// The registry entry's checks, through can_implement with the kernel named: each refusal
// with its reason (validation's FP8 rules first, then the kernel's own).
TEST(Fp8DecodeApi, NamedKernelAcceptsAndRefuses) {
  const GemmArgs args = fp8_args();
  std::string message;
  const auto named = [](GemmDesc d) {
    d.kernel = "sm90-fp8-decode";
    return d;
  };
  for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn}) {
    for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
      for (int64_t m : {1, 7, 16, 33, 64, 100, 128, 300}) {
        GemmDesc d = named(fp8_linear(m, 1000, 1040, scales));
        d.d.dtype = out;
        EXPECT_TRUE(accepted(check(d, &args, &message))) << m << " " << to_string(scales) << ": " << message;
      }
    }
  }
  GemmDesc swiglu = named(fp8_linear(16, 1024, 512));
  swiglu.epilogue.activation = Activation::kSwiGLU;
  swiglu.d.ld = 512;
  EXPECT_TRUE(accepted(check(swiglu, &args, &message))) << message;
  GemmDesc batched = named(fp8_linear(16, 1024, 512, ScaleMode::kTensor));
  batched.batch = 3;
  batched.a.batch_stride = 16 * 512;
  batched.b.batch_stride = 1024 * 512;
  batched.d.batch_stride = 16 * 1024;
  EXPECT_TRUE(accepted(check(batched, &args, &message))) << message;

  const auto refused = [&](const GemmDesc& d, const GemmArgs& a, Status want, const char* words) {
    const Status s = check(d, &a, &message);
    EXPECT_EQ(s, want) << message;
    EXPECT_NE(message.find(words), std::string::npos) << message;
  };
  EXPECT_TRUE(accepted(check(named(fp8_linear(16, 1024, 1024, ScaleMode::kBlock128)), &args, &message))) << message;
  EXPECT_TRUE(accepted(check(named(fp8_linear(100, 1024, 1024, ScaleMode::kBlock128)), &args, &message))) << message;
  GemmDesc mixed = named(fp8_linear(16, 1024, 1024));
  mixed.b.dtype = DataType::kE5M2;
  refused(mixed, args, Status::kNotSupported, "e4m3 x e4m3");
  GemmDesc bf16 = named(anvil::linear_desc(16, 1024, 1024, DataType::kBF16, DataType::kBF16));
  GemmArgs bf16_args = args;
  bf16_args.scale_a = bf16_args.scale_b = nullptr;
  refused(bf16, bf16_args, Status::kNotSupported, "takes e4m3 inputs");
  GemmArgs misaligned = args;
  misaligned.a = static_cast<const unsigned char*>(args.a) + 8;
  refused(named(fp8_linear(16, 1024, 1024)), misaligned, Status::kMisalignedOperand, "16-byte aligned");
  // Validation's rules, the same for both FP8 kernels.
  refused(named(fp8_linear(16, 1024, 1000)), args, Status::kNotSupported, "multiple of 16");
  GemmDesc both_e5m2 = named(fp8_linear(16, 1024, 1024));
  both_e5m2.a.dtype = both_e5m2.b.dtype = DataType::kE5M2;
  refused(both_e5m2, args, Status::kNotSupported, "e5m2 x e5m2");
  GemmDesc rowcol_batch = named(fp8_linear(16, 1024, 512, ScaleMode::kRowColumn));
  rowcol_batch.batch = 2;
  rowcol_batch.a.batch_stride = 16 * 512;
  rowcol_batch.b.batch_stride = 1024 * 512;
  rowcol_batch.d.batch_stride = 16 * 1024;
  refused(rowcol_batch, args, Status::kNotSupported, "batch");
  GemmDesc padded_ld = named(fp8_linear(16, 1024, 1024));
  padded_ld.a.ld = 1032;
  refused(padded_ld, args, Status::kMisalignedOperand, "multiples of 16");
}

// ---- verification helpers ----

TEST(Fp8Verify, ScaleCounts) {
  GemmDesc d = fp8_linear(100, 300, 272, ScaleMode::kBlock128);
  EXPECT_EQ(verify::scale_elements_a(d), 3 * 100);  // ceil(272/128) x M, M-major
  EXPECT_EQ(verify::scale_elements_b(d), 3 * 3);    // ceil(300/128) x ceil(272/128)
  d.scales = ScaleMode::kRowColumn;
  EXPECT_EQ(verify::scale_elements_a(d), 100);
  EXPECT_EQ(verify::scale_elements_b(d), 300);
  d.scales = ScaleMode::kTensor;
  EXPECT_EQ(verify::scale_elements_a(d), 1);
  d.scales = ScaleMode::kNone;
  EXPECT_EQ(verify::scale_elements_b(d), 0);
  EXPECT_EQ(verify::dtype_bytes(DataType::kE4M3), 1u);
}

TEST(Fp8Verify, Decoders) {
  EXPECT_EQ(verify::decode_e4m3(0x00), 0.0);
  EXPECT_EQ(verify::decode_e4m3(0x38), 1.0);     // exponent 7 (bias 7), mantissa 0
  EXPECT_EQ(verify::decode_e4m3(0x7E), 448.0);   // the largest finite value
  EXPECT_EQ(verify::decode_e4m3(0xFE), -448.0);
  EXPECT_EQ(verify::decode_e4m3(0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_TRUE(std::isnan(verify::decode_e4m3(0x7F)));
  EXPECT_EQ(verify::decode_e4m3(0x3C), 1.5);
  EXPECT_EQ(verify::decode_e5m2(0x3C), 1.0);     // bias 15
  EXPECT_EQ(verify::decode_e5m2(0x7B), 57344.0);
  EXPECT_TRUE(std::isinf(verify::decode_e5m2(0x7C)));
  EXPECT_EQ(verify::decode_e5m2(0x01), std::ldexp(1.0, -16));
}

// The CPU reference dequantizes with each scale layout.
TEST(Fp8Verify, CpuReferenceAppliesEveryScaleLayout) {
  // A: 2 x 256 of e4m3 1.0, B: 256 x 130 of 1.0 (N-major storage, ldb = K).
  const int64_t m = 2, n = 130, k = 256;
  std::vector<unsigned char> a(size_t(m * k), 0x38), b(size_t(n * k), 0x38);
  GemmDesc d = fp8_linear(m, n, k, ScaleMode::kBlock128);
  d.d.dtype = DataType::kF32;
  // A scales: kb * M + i; B scales: (j / 128) * 2 + kb.
  const float sa[4] = {1.0f, 2.0f, 3.0f, 4.0f};  // (kb0,i0) (kb0,i1) (kb1,i0) (kb1,i1)
  const float sb[4] = {1.0f, 10.0f, 100.0f, 1000.0f};
  std::vector<double> out;
  verify::cpu_reference(d, a.data(), b.data(), nullptr, nullptr, out, sa, sb);
  ASSERT_EQ(out.size(), size_t(m * n));
  EXPECT_EQ(out[0], 128.0 * (1 * 1 + 3 * 10));           // row 0, column 0
  EXPECT_EQ(out[1 * n + 129], 128.0 * (2 * 100 + 4 * 1000));  // row 1, column 129
  d.scales = ScaleMode::kRowColumn;
  const float row[2] = {2.0f, 3.0f};
  std::vector<float> col(size_t(n), 0.5f);
  verify::cpu_reference(d, a.data(), b.data(), nullptr, nullptr, out, row, col.data());
  EXPECT_EQ(out[1 * n + 7], 256.0 * 3 * 0.5);
  d.scales = ScaleMode::kTensor;
  verify::cpu_reference(d, a.data(), b.data(), nullptr, nullptr, out, row, row);
  EXPECT_EQ(out[5], 256.0 * 2 * 2);
  verify::cpu_reference(d, a.data(), b.data(), nullptr, nullptr, out);
  EXPECT_TRUE(out.empty()) << "scales missing: the reference refuses";
}

TEST(Fp8Verify, TolerancesPerMode) {
  GemmDesc block = fp8_linear(128, 128, 16384, ScaleMode::kBlock128);
  GemmDesc tensor = fp8_linear(128, 128, 16384, ScaleMode::kTensor);
  // Promotion keeps the accumulation bound independent of K; without it, it grows with K.
  EXPECT_LT(verify::tolerance_for(block).rel_frobenius, verify::tolerance_for(tensor).rel_frobenius);
  GemmDesc short_block = fp8_linear(128, 128, 1024, ScaleMode::kBlock128);
  EXPECT_NEAR(verify::tolerance_for(short_block).rel_frobenius, verify::tolerance_for(block).rel_frobenius, 2e-3);
}

}  // namespace
}  // namespace anvil::detail
