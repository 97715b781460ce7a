// Tuned plans on the CPU (src/plan/tuning.h, include/anvil/tuning.h): the cache format
// round-trips, entries match only their own problem and device, a foreign cache is
// ignored with one warning, every kind of bad file is refused with a message, a tuned
// entry replaces the planner's choice, and a tuned plan the call cannot run falls back.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "anvil/gemm.h"
#include "anvil/tuning.h"
#include "plan/tuning.h"

namespace anvil::detail {
namespace {

const DeviceIdentity kH200{"NVIDIA H200", 132, 13000};

TunedEntry entry(const GemmDesc& desc, const PlanOverrides& plan, double us = 10.0) {
  TunedEntry e;
  e.problem = tuning_problem(desc);
  e.plan = plan;
  e.us = us;
  return e;
}

PlanOverrides sm90(Sm90Variant v) {
  PlanOverrides o;
  o.family = KernelFamily::kSm90Gemm;
  o.sm90_variant = static_cast<int>(v);
  return o;
}

PlanOverrides decode(KernelFamily f, int splits) {
  PlanOverrides o;
  o.family = f;
  o.decode_splits = splits;
  return o;
}

TuningCache cache_of(std::vector<TunedEntry> entries, DeviceIdentity id = kH200) {
  TuningCache c;
  c.device = id;
  c.date = "2026-12-01T00:00:00Z";
  c.entries = std::move(entries);
  return c;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "anvil_tuning_" + name + ".json";
  std::ofstream(path) << text;
  return path;
}

// Parses the cache's own JSON (so every installed cache went through the load checks).
void install(const TuningCache& c) {
  TuningCache parsed;
  Diagnostic diag;
  ASSERT_EQ(parse_tuning_cache(tuning_cache_json(c), &parsed, &diag), Status::kSuccess) << diag.message;
  ASSERT_EQ(install_tuning_cache(parsed, "test", &diag), Status::kSuccess);
}

class Tuning : public ::testing::Test {
 protected:
  void TearDown() override { clear_loaded_tuning_cache(); }
};

TEST_F(Tuning, RoundTripKeepsEveryField) {
  GemmDesc a = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  GemmDesc b = linear_desc(8, 8192, 8192, DataType::kF16, DataType::kF32);
  b.epilogue.bias = BiasMode::kPerColumn;
  b.batch_invariant = true;
  TunedEntry ea = entry(a, sm90(Sm90Variant::kNarrow), 123.5);
  ea.has_runner_up = true;
  ea.runner_up = sm90(Sm90Variant::kWidePair);
  ea.runner_up_us = 130.25;
  ea.untuned_us = 131.0;
  PlanOverrides rs;
  rs.family = KernelFamily::kSm90Gemm;
  rs.row_split = PlanOverrides::RowSplit::kNever;
  rs.fit_widths = false;
  rs.allow_stream_k = false;
  TunedEntry eb = entry(b, decode(KernelFamily::kDecodeR64, 1), 20.0);
  TunedEntry ec = entry(linear_desc(1000, 4096, 4096, DataType::kBF16, DataType::kBF16), rs, 50.0);
  const TuningCache c = cache_of({ea, eb, ec});

  TuningCache back;
  Diagnostic diag;
  ASSERT_EQ(parse_tuning_cache(tuning_cache_json(c), &back, &diag), Status::kSuccess) << diag.message;
  EXPECT_EQ(back.schema_version, kTuningSchemaVersion);
  EXPECT_EQ(back.device, kH200);
  EXPECT_EQ(back.date, c.date);
  EXPECT_EQ(back.anvil_version, kTuningAnvilVersion);
  ASSERT_EQ(back.entries.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const TunedEntry& x = c.entries[i];
    const TunedEntry& y = back.entries[i];
    EXPECT_EQ(x.problem, y.problem) << i;
    EXPECT_EQ(describe_overrides(x.plan), describe_overrides(y.plan)) << i;
    EXPECT_EQ(x.plan.family, y.plan.family);
    EXPECT_EQ(x.plan.sm90_variant, y.plan.sm90_variant);
    EXPECT_EQ(x.plan.decode_splits, y.plan.decode_splits);
    EXPECT_EQ(x.plan.row_split, y.plan.row_split);
    EXPECT_EQ(x.plan.fit_widths, y.plan.fit_widths);
    EXPECT_EQ(x.plan.allow_stream_k, y.plan.allow_stream_k);
    EXPECT_DOUBLE_EQ(x.us, y.us);
    EXPECT_EQ(x.has_runner_up, y.has_runner_up);
    EXPECT_DOUBLE_EQ(x.untuned_us, y.untuned_us);
  }
  EXPECT_EQ(back.entries[0].runner_up.sm90_variant, static_cast<int>(Sm90Variant::kWidePair));
  EXPECT_DOUBLE_EQ(back.entries[0].runner_up_us, 130.25);
  // Serialising again gives the same text.
  EXPECT_EQ(tuning_cache_json(back), tuning_cache_json(c));
}

// A swapped plan (swap-AB) survives the cache's text and runs where the entry names its
// problem: planned transposed, judged by the transposed problem's checks.
TEST_F(Tuning, SwappedPlansRoundTripAndRun) {
  const GemmDesc lora = linear_desc(16384, 32, 5120, DataType::kBF16, DataType::kBF16);
  PlanOverrides swapped;
  swapped.swap_ab = PlanOverrides::SwapAb::kAlways;
  swapped.decode_splits = 2;
  install(cache_of({entry(lora, swapped, 50.6)}));
  PlanOverrides o;
  ASSERT_TRUE(find_tuned_overrides(lora, kH200, &o));
  EXPECT_EQ(o.swap_ab, PlanOverrides::SwapAb::kAlways);
  EXPECT_EQ(o.decode_splits, 2);
  const LaunchPlan p = plan_with_tuning(lora, DeviceInfo::h200(), &kH200, CallFacts{});
  EXPECT_TRUE(p.swap_ab) << p.family_reason;
  EXPECT_EQ(p.decode.splits, 2);
  EXPECT_NE(std::string(p.family_reason).find("tuned"), std::string::npos) << p.family_reason;
  // Where the transposed problem's checks refuse the family, the tuned plan is not used.
  CallFacts refused;
  for (bool& ok : refused.transposed_accepts) ok = false;
  EXPECT_FALSE(plan_with_tuning(lora, DeviceInfo::h200(), &kH200, refused).swap_ab);
}

TEST_F(Tuning, EntriesMatchOnlyTheirProblemAndDevice) {
  const GemmDesc base = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  install(cache_of({entry(base, sm90(Sm90Variant::kNarrow))}));
  PlanOverrides o;
  ASSERT_TRUE(find_tuned_overrides(base, kH200, &o));
  EXPECT_EQ(o.sm90_variant, static_cast<int>(Sm90Variant::kNarrow));

  GemmDesc other = base;
  other.a.dtype = other.b.dtype = DataType::kF16;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "another input dtype";
  other = base;
  other.d.dtype = other.c.dtype = DataType::kF32;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "another output dtype";
  other = base;
  other.epilogue.bias = BiasMode::kPerColumn;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "another epilogue";
  other = base;
  other.epilogue.activation = Activation::kGeluTanh;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "another activation";
  other = base;
  other.m = 4095;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "another M";
  other = base;
  other.k = 4104;
  other.a.ld = other.b.ld = 4104;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "another K";
  other = base;
  other.batch_invariant = true;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "batch-invariant";
  other = base;
  other.a.ld = 4097;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "unaligned strides";
  other = base;
  other.a.order = Order::kColMajor;
  other.a.ld = 4096;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "another layout";
  // A larger leading dimension that stays aligned is the same problem.
  other = base;
  other.a.ld = 8192;
  EXPECT_TRUE(find_tuned_overrides(other, kH200, &o));
}

TEST_F(Tuning, ForeignDeviceIsIgnoredWithOneWarning) {
  const GemmDesc base = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  install(cache_of({entry(base, sm90(Sm90Variant::kNarrow))}));
  PlanOverrides o;
  for (const DeviceIdentity& foreign : {DeviceIdentity{"NVIDIA H100 80GB HBM3", 132, 13000},
                                        DeviceIdentity{"NVIDIA H200", 114, 13000},
                                        DeviceIdentity{"NVIDIA H200", 132, 12080}}) {
    install(cache_of({entry(base, sm90(Sm90Variant::kNarrow))}));
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(find_tuned_overrides(base, foreign, &o));
    EXPECT_FALSE(find_tuned_overrides(base, foreign, &o));
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ignored"), std::string::npos) << err;
    EXPECT_NE(err.find("NVIDIA H200 (132 SMs, CUDA runtime 13000)"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line, once: " << err;
  }
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(find_tuned_overrides(base, kH200, &o));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// A valid cache's text with one entry, for the corruption cases to edit.
std::string valid_text() {
  const GemmDesc base = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  return tuning_cache_json(cache_of({entry(base, sm90(Sm90Variant::kNarrow))}));
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST_F(Tuning, CorruptFilesAreRefusedWithTheReason) {
  const std::string good = valid_text();
  Diagnostic diag;
  ASSERT_EQ(load_tuning_cache(write_temp("good", good).c_str(), &diag), Status::kSuccess) << diag.message;

  struct Case {
    const char* name;
    std::string text;
    const char* says;
  };
  const Case cases[] = {
      {"truncated", good.substr(0, good.size() / 2), "not valid JSON"},
      {"not_json", "gemm plans: fast ones", "not valid JSON"},
      {"empty", "", "not valid JSON"},
      {"array", "[1, 2, 3]", "expected an object"},
      {"format", replaced(good, "\"anvil-tuning-cache\"", "\"something-else\""), "not an anvil tuning cache"},
      {"schema", replaced(good, "\"schema_version\": 1", "\"schema_version\": 2"), "schema version 2"},
      {"family", replaced(good, "\"sm90-gemm\"", "\"sm90-gemm-turbo\""), "unknown kernel family 'sm90-gemm-turbo'"},
      {"variant", replaced(good, "\"narrow\"", "\"extra-wide\""), "unknown sm90-gemm variant 'extra-wide'"},
      {"splits", replaced(good, "\"decode_splits\": 0", "\"decode_splits\": 9"), "decode_splits: 9 is out of range"},
      {"negative_m", replaced(good, "\"m\": 4096", "\"m\": -5"), ".m: -5 is out of range"},
      {"m_type", replaced(good, "\"m\": 4096", "\"m\": \"many\""), "expected an integer"},
      {"dtype", replaced(good, "\"a\": \"bf16\"", "\"a\": \"fp8\""), "unknown name 'fp8'"},
      {"typo", replaced(good, "\"row_split\"", "\"rowsplit\""), "unknown field 'rowsplit'"},
      {"missing", replaced(good, "\"k\": 4096,", ""), "missing field 'k'"},
      {"time", replaced(good, "\"us\": 10.0", "\"us\": -1.0"), "finite and >= 0"},
      {"sm_count", replaced(good, "\"sm_count\": 132", "\"sm_count\": 0"), "sm_count: 0 is out of range"},
  };
  for (const Case& c : cases) {
    Diagnostic d;
    const std::string path = write_temp(c.name, c.text);
    EXPECT_EQ(load_tuning_cache(path.c_str(), &d), Status::kInvalidArgument) << c.name;
    EXPECT_NE(std::string(d.message).find(c.says), std::string::npos) << c.name << ": " << d.message;
    EXPECT_NE(std::string(d.message).find(path), std::string::npos) << c.name << ": names the file: " << d.message;
  }
  Diagnostic d;
  EXPECT_EQ(load_tuning_cache("/nonexistent/anvil/cache.json", &d), Status::kInvalidArgument);
  EXPECT_NE(std::string(d.message).find("cannot be opened"), std::string::npos) << d.message;
  EXPECT_EQ(load_tuning_cache(nullptr, &d), Status::kInvalidArgument);
  // A failed load leaves no cache behind.
  PlanOverrides o;
  EXPECT_FALSE(find_tuned_overrides(linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16), kH200, &o));
}

TEST_F(Tuning, PlansTheKernelsWouldRefuseAreRefusedAtLoad) {
  GemmDesc swiglu = linear_desc(8, 8192, 4096, DataType::kBF16, DataType::kBF16);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  swiglu.d.ld = swiglu.c.ld = 4096;
  GemmDesc swiglu_big = swiglu;
  swiglu_big.m = 4096;
  GemmDesc invariant = linear_desc(8, 8192, 8192, DataType::kBF16, DataType::kBF16);
  invariant.batch_invariant = true;
  GemmDesc invariant_big = invariant;
  invariant_big.m = 256;
  invariant_big.n = 18432;  // an unsplit weight, where normal mode would run stream-K
  invariant_big.c.ld = invariant_big.d.ld = 18432;
  GemmDesc col_a = linear_desc(8, 4096, 4096, DataType::kBF16, DataType::kBF16);
  col_a.a.order = Order::kColMajor;
  col_a.a.ld = 8;
  struct Case {
    const char* name;
    TunedEntry e;
    const char* says;
  };
  const Case cases[] = {
      {"r64_swiglu", entry(swiglu, decode(KernelFamily::kDecodeR64, 0)), "does not take this problem"},
      {"fit_swiglu", entry(swiglu_big, sm90(Sm90Variant::kFitPair192)), "SwiGLU"},
      {"invariant_split", entry(invariant, decode(KernelFamily::kDecodeTma, 4)), "batch-invariant"},
      {"invariant_ldg", entry(invariant, decode(KernelFamily::kDecodeLdg, 1)), "batch-invariant"},
      {"invariant_streamk", entry(invariant_big, sm90(Sm90Variant::kTallStreamK)), "stream-K"},
      {"decode_col_a", entry(col_a, decode(KernelFamily::kDecodeTma, 0)), "does not take this problem"},
  };
  for (const Case& c : cases) {
    TuningCache parsed;
    Diagnostic d;
    EXPECT_EQ(parse_tuning_cache(tuning_cache_json(cache_of({c.e})), &parsed, &d), Status::kInvalidArgument) << c.name;
    EXPECT_NE(std::string(d.message).find("entries[0]"), std::string::npos) << c.name << ": " << d.message;
    EXPECT_NE(std::string(d.message).find(c.says), std::string::npos) << c.name << ": " << d.message;
  }
  // The same problem twice is a hand edit gone wrong.
  const GemmDesc base = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  TuningCache parsed;
  Diagnostic d;
  EXPECT_EQ(parse_tuning_cache(tuning_cache_json(cache_of({entry(base, sm90(Sm90Variant::kNarrow)),
                                                           entry(base, sm90(Sm90Variant::kWide))})),
                               &parsed, &d),
            Status::kInvalidArgument);
  EXPECT_NE(std::string(d.message).find("already tuned by entry 0"), std::string::npos) << d.message;
}

// FP8 problems are keyed by their scale mode too, and their plans name sm90-fp8's
// configuration and split-K or sm90-fp8-decode's K split.
TEST_F(Tuning, Fp8EntriesKeyOnTheScaleModeAndRun) {
  const DeviceInfo h200 = DeviceInfo::h200();
  GemmDesc gate_up = linear_desc(64, 36864, 7168, DataType::kE4M3, DataType::kBF16);
  gate_up.scales = ScaleMode::kTensor;
  GemmDesc prefill = linear_desc(4096, 7168, 2048, DataType::kE4M3, DataType::kBF16);
  prefill.scales = ScaleMode::kBlock128;
  PlanOverrides pair;
  pair.family = KernelFamily::kSm90Fp8;
  pair.fp8_variant = static_cast<int>(Fp8Variant::kBlockPair);
  pair.split_k_slices = 2;
  const TuningCache c = cache_of({entry(gate_up, decode(KernelFamily::kSm90Fp8Decode, 4)), entry(prefill, pair)});
  TuningCache back;
  Diagnostic diag;
  ASSERT_EQ(parse_tuning_cache(tuning_cache_json(c), &back, &diag), Status::kSuccess) << diag.message;
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].problem.scales, ScaleMode::kTensor);
  EXPECT_EQ(back.entries[1].problem.a, DataType::kE4M3);
  EXPECT_EQ(back.entries[1].plan.fp8_variant, static_cast<int>(Fp8Variant::kBlockPair));
  EXPECT_EQ(back.entries[1].plan.split_k_slices, 2);
  EXPECT_EQ(describe_overrides(back.entries[1].plan), "sm90-fp8/fp8-block-pair/split-k=2");
  EXPECT_EQ(tuning_cache_json(back), tuning_cache_json(c));

  install(c);
  PlanOverrides o;
  ASSERT_TRUE(find_tuned_overrides(gate_up, kH200, &o));
  GemmDesc other = gate_up;
  other.scales = ScaleMode::kBlock128;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "another scale mode";
  other = gate_up;
  other.a.dtype = other.b.dtype = DataType::kBF16;
  other.scales = ScaleMode::kNone;
  EXPECT_FALSE(find_tuned_overrides(other, kH200, &o)) << "16-bit inputs";

  const LaunchPlan decoded = plan_with_tuning(gate_up, h200, &kH200, CallFacts{});
  EXPECT_EQ(decoded.family, KernelFamily::kSm90Fp8Decode) << decoded.family_reason;
  EXPECT_EQ(decoded.k_splits, 4);
  EXPECT_EQ(std::strncmp(decoded.family_reason, "tuned: ", 7), 0) << decoded.family_reason;
  const LaunchPlan split = plan_with_tuning(prefill, h200, &kH200, CallFacts{});
  EXPECT_EQ(split.family, KernelFamily::kSm90Fp8);
  EXPECT_EQ(split.fp8_variant, Fp8Variant::kBlockPair);
  EXPECT_EQ(split.k_splits, 2);

  // Refused at load: a configuration the scale mode does not run, scales on 16-bit inputs,
  // an FP8 configuration on another family.
  PlanOverrides wrong = pair;
  wrong.fp8_variant = static_cast<int>(Fp8Variant::kWidePair);  // no block scales
  wrong.split_k_slices = 0;
  TuningCache parsed;
  Diagnostic d;
  EXPECT_EQ(parse_tuning_cache(tuning_cache_json(cache_of({entry(prefill, wrong)})), &parsed, &d), Status::kInvalidArgument);
  EXPECT_NE(std::string(d.message).find("fp8-wide-pair does not take this problem"), std::string::npos) << d.message;
  const GemmDesc bf16 = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  const std::string text = tuning_cache_json(cache_of({entry(bf16, sm90(Sm90Variant::kNarrow))}));
  EXPECT_EQ(parse_tuning_cache(replaced(text, "\"batch_invariant\": false", "\"batch_invariant\": false, \"scales\": \"tensor\""),
                               &parsed, &d),
            Status::kInvalidArgument);
  EXPECT_NE(std::string(d.message).find("scales apply to 8-bit inputs only"), std::string::npos) << d.message;
  EXPECT_EQ(parse_tuning_cache(replaced(text, "\"split_k_slices\": 0", "\"split_k_slices\": 0, \"fp8_variant\": \"fp8-narrow-pair\""),
                               &parsed, &d),
            Status::kInvalidArgument);
  EXPECT_NE(std::string(d.message).find("needs family sm90-fp8"), std::string::npos) << d.message;
}

TEST_F(Tuning, TunedEntryReplacesThePlannersChoice) {
  const DeviceInfo h200 = DeviceInfo::h200();
  const CallFacts facts;
  // sm90-gemm: a variant other than the planner's own.
  const GemmDesc big = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  const LaunchPlan own = plan_with_tuning(big, h200, &kH200, facts);
  ASSERT_EQ(own.family, KernelFamily::kSm90Gemm);
  const Sm90Variant other = own.variant == Sm90Variant::kNarrow ? Sm90Variant::kWide : Sm90Variant::kNarrow;
  // Decode: a split other than the planner's own.
  const GemmDesc small = linear_desc(4, 8192, 8192, DataType::kBF16, DataType::kBF16);
  const LaunchPlan own_small = plan_with_tuning(small, h200, &kH200, facts);
  ASSERT_NE(own_small.family, KernelFamily::kSm90Gemm);
  const int splits = own_small.k_splits == 2 ? 4 : 2;
  install(cache_of({entry(big, sm90(other)), entry(small, decode(KernelFamily::kDecodeTma, splits))}));

  const LaunchPlan tuned = plan_with_tuning(big, h200, &kH200, facts);
  EXPECT_EQ(tuned.family, KernelFamily::kSm90Gemm);
  EXPECT_EQ(tuned.variant, other);
  EXPECT_EQ(std::strncmp(tuned.family_reason, "tuned: ", 7), 0) << tuned.family_reason;
  const LaunchPlan tuned_small = plan_with_tuning(small, h200, &kH200, facts);
  EXPECT_EQ(tuned_small.family, KernelFamily::kDecodeTma);
  EXPECT_EQ(tuned_small.k_splits, splits);
  // Without a device identity (no GPU) nothing is tuned.
  EXPECT_EQ(plan_with_tuning(big, h200, nullptr, facts).variant, own.variant);
  // After clearing, the planner's own choice again.
  clear_tuning_cache();
  EXPECT_EQ(plan_with_tuning(big, h200, &kH200, facts).variant, own.variant);
}

TEST_F(Tuning, TunedPlanTheCallCannotRunFallsBack) {
  const DeviceInfo h200 = DeviceInfo::h200();
  const GemmDesc big = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  const GemmDesc small = linear_desc(8, 4096, 4096, DataType::kBF16, DataType::kBF16);
  install(cache_of({entry(big, sm90(Sm90Variant::kTallStreamK)), entry(small, decode(KernelFamily::kDecodeR64, 1))}));

  CallFacts roomy;
  const LaunchPlan sk = plan_with_tuning(big, h200, &kH200, roomy);
  ASSERT_EQ(sk.variant, Sm90Variant::kTallStreamK) << "the tuned plan runs where the call has the workspace";
  // No workspace for stream-K's partials: the planner's own (whole-tile) plan.
  CallFacts no_workspace;
  no_workspace.workspace_bytes = 0;
  const LaunchPlan fallback = plan_with_tuning(big, h200, &kH200, no_workspace);
  EXPECT_EQ(fallback.family, KernelFamily::kSm90Gemm);
  EXPECT_NE(fallback.variant, Sm90Variant::kTallStreamK);
  EXPECT_EQ(fallback.workspace_bytes, 0u);
  EXPECT_NE(std::strncmp(fallback.family_reason, "tuned", 5), 0) << fallback.family_reason;
  // A misaligned workspace: stream-K cannot park its partials either.
  CallFacts misaligned;
  misaligned.workspace_aligned16 = false;
  EXPECT_NE(plan_with_tuning(big, h200, &kH200, misaligned).variant, Sm90Variant::kTallStreamK);

  // The decode family's own checks refuse the call (e.g. a misaligned pointer): the
  // planner picks among the families that accept it.
  CallFacts refused;
  refused.accepts[static_cast<int>(KernelFamily::kDecodeR64)] = false;
  const LaunchPlan p = plan_with_tuning(small, h200, &kH200, refused);
  EXPECT_NE(p.family, KernelFamily::kDecodeR64);
  EXPECT_NE(p.family, KernelFamily::kNone);
  EXPECT_EQ(plan_with_tuning(small, h200, &kH200, CallFacts{}).family, KernelFamily::kDecodeR64);
}

TEST_F(Tuning, BuiltInTableParses) {
  // The committed table is checked like any cache; a broken one would print why and be empty.
  ::testing::internal::CaptureStderr();
  const auto& caches = builtin_tuning_caches();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  for (const auto& c : caches) EXPECT_EQ(c.schema_version, kTuningSchemaVersion);
}

// The environment variable is read once per process: each case runs in a fresh child
// process (the "threadsafe" death-test style re-executes the binary for the one test).
TEST(TuningEnvironment, CorruptCacheNamedByTheVariableIsReportedOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string path = write_temp("env_corrupt", "{ not json");
  EXPECT_EXIT(
      {
        setenv(kTuningCacheVariable, path.c_str(), 1);
        PlanOverrides o;
        const GemmDesc d = linear_desc(64, 64, 64, DataType::kBF16, DataType::kBF16);
        const bool found = find_tuned_overrides(d, kH200, &o) || find_tuned_overrides(d, kH200, &o);
        std::exit(found ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "ANVIL_TUNING_CACHE not loaded, the built-in plans are used: tuning cache .*not valid JSON");
}

TEST(TuningEnvironment, CacheNamedByTheVariableIsUsed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const GemmDesc base = linear_desc(4096, 4096, 4096, DataType::kBF16, DataType::kBF16);
  const std::string path = write_temp("env_good", tuning_cache_json(cache_of({entry(base, sm90(Sm90Variant::kNarrow))})));
  EXPECT_EXIT(
      {
        setenv(kTuningCacheVariable, path.c_str(), 1);
        PlanOverrides o;
        const bool found = find_tuned_overrides(base, kH200, &o) && o.sm90_variant == int(Sm90Variant::kNarrow);
        std::fprintf(stderr, "found=%d\n", int(found));
        std::exit(found ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "found=1");
}

}  // namespace
}  // namespace anvil::detail
