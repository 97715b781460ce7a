// Tuned plans on the GPU: a cache loaded through the public API changes the plan the
// library runs, and the result still matches the reference; a tuned plan the call cannot
// run, and a cache from another device, leave the planner's own plan, also correct.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "anvil/gemm.h"
#include "anvil/tuning.h"
#include "gpu/gpu_support.h"
#include "plan/launch.h"
#include "plan/tuning.h"
#include "verify/verify.h"

namespace {

using namespace anvil;
using anvil_test::Operands;

std::string write_cache(const detail::TuningCache& cache, const char* name) {
  const std::string path = ::testing::TempDir() + "anvil_tuning_gpu_" + name + ".json";
  std::ofstream(path) << detail::tuning_cache_json(cache);
  return path;
}

detail::TunedEntry entry(const GemmDesc& desc, const detail::PlanOverrides& o) {
  detail::TunedEntry e;
  e.problem = detail::tuning_problem(desc);
  e.plan = o;
  e.us = 1.0;
  return e;
}

// Runs desc through the public entry point and checks D against the reference.
void run_and_check(Operands& op) {
  Diagnostic diag;
  ASSERT_EQ(gemm(op.desc, op.args, &diag), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(verify::reference_gemm(op.desc, op.args, static_cast<float*>(op.ref.get()), nullptr));
  const verify::Comparison cmp = verify::compare(op.desc, op.args.d, static_cast<const float*>(op.ref.get()),
                                                 verify::tolerance_for(op.desc), nullptr);
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(op.desc) << ": " << verify::describe(cmp);
}

bool tuned(const Operands& op, detail::LaunchPlan* p) {
  Diagnostic diag;
  EXPECT_EQ(detail::plan_for(op.desc, &op.args, nullptr, p, &diag), Status::kSuccess) << diag.message;
  return std::strncmp(p->family_reason, "tuned: ", 7) == 0;
}

TEST(TunedPlans, LoadedCacheIsRunAndCorrect) {
  REQUIRE_SM90();
  clear_tuning_cache();
  const detail::DeviceIdentity* id = detail::current_device_identity();
  ASSERT_NE(id, nullptr);
  const GemmDesc small = linear_desc(8, 4096, 4096, DataType::kBF16, DataType::kBF16);
  const GemmDesc ragged = linear_desc(1000, 4096, 4096, DataType::kF16, DataType::kF16);
  // Plans other than the planner's own for each.
  detail::LaunchPlan own_small, own_ragged;
  ASSERT_EQ(detail::plan_for(small, nullptr, nullptr, &own_small, nullptr), Status::kSuccess);
  ASSERT_EQ(detail::plan_for(ragged, nullptr, nullptr, &own_ragged, nullptr), Status::kSuccess);
  detail::PlanOverrides small_plan, ragged_plan;
  small_plan.family = own_small.family == detail::KernelFamily::kDecodeR64 ? detail::KernelFamily::kDecodeTma
                                                                          : detail::KernelFamily::kDecodeR64;
  small_plan.decode_splits = 2;
  ragged_plan.family = detail::KernelFamily::kSm90Gemm;
  ragged_plan.sm90_variant = static_cast<int>(own_ragged.variant == detail::Sm90Variant::kNarrow
                                                  ? detail::Sm90Variant::kWidePairN
                                                  : detail::Sm90Variant::kNarrow);
  detail::TuningCache cache;
  cache.device = *id;
  cache.entries = {entry(small, small_plan), entry(ragged, ragged_plan)};
  Diagnostic diag;
  ASSERT_EQ(load_tuning_cache(write_cache(cache, "mine").c_str(), &diag), Status::kSuccess) << diag.message;

  Operands a, b;
  anvil_test::make_operands(a, small, 11);
  anvil_test::make_operands(b, ragged, 12);
  detail::LaunchPlan p;
  EXPECT_TRUE(tuned(a, &p)) << p.family_reason;
  EXPECT_EQ(p.family, small_plan.family);
  EXPECT_EQ(p.k_splits, 2);
  run_and_check(a);
  EXPECT_TRUE(tuned(b, &p)) << p.family_reason;
  EXPECT_EQ(static_cast<int>(p.variant), ragged_plan.sm90_variant);
  run_and_check(b);
  clear_tuning_cache();
  EXPECT_FALSE(tuned(a, &p)) << "cleared, yet " << p.family_reason;
}

// FP8 entries: sm90-fp8-decode at a K split of the cache's choosing, sm90-fp8 with a
// forced configuration and split-K; each keyed by its scale mode.
TEST(TunedPlans, Fp8EntriesRunTheirPlans) {
  REQUIRE_SM90();
  clear_tuning_cache();
  const detail::DeviceIdentity* id = detail::current_device_identity();
  ASSERT_NE(id, nullptr);
  GemmDesc decode = linear_desc(64, 4096, 7168, DataType::kE4M3, DataType::kBF16);
  decode.scales = ScaleMode::kTensor;
  GemmDesc block = linear_desc(512, 4096, 2048, DataType::kE4M3, DataType::kBF16);
  block.scales = ScaleMode::kBlock128;
  detail::LaunchPlan own;
  ASSERT_EQ(detail::plan_for(decode, nullptr, nullptr, &own, nullptr), Status::kSuccess);
  detail::PlanOverrides decode_plan, block_plan;
  decode_plan.family = detail::KernelFamily::kSm90Fp8Decode;
  decode_plan.decode_splits = own.family == detail::KernelFamily::kSm90Fp8Decode && own.k_splits == 2 ? 4 : 2;
  block_plan.family = detail::KernelFamily::kSm90Fp8;
  block_plan.fp8_variant = static_cast<int>(detail::Fp8Variant::kBlockPair);
  block_plan.split_k_slices = 2;
  detail::TuningCache cache;
  cache.device = *id;
  cache.entries = {entry(decode, decode_plan), entry(block, block_plan)};
  Diagnostic diag;
  ASSERT_EQ(load_tuning_cache(write_cache(cache, "fp8").c_str(), &diag), Status::kSuccess) << diag.message;

  Operands a, b, c;
  anvil_test::make_operands(a, decode, 21);
  anvil_test::make_operands(b, block, 22);
  detail::LaunchPlan p;
  EXPECT_TRUE(tuned(a, &p)) << p.family_reason;
  EXPECT_EQ(p.family, detail::KernelFamily::kSm90Fp8Decode);
  EXPECT_EQ(p.k_splits, decode_plan.decode_splits);
  run_and_check(a);
  EXPECT_TRUE(tuned(b, &p)) << p.family_reason;
  EXPECT_EQ(p.family, detail::KernelFamily::kSm90Fp8);
  EXPECT_EQ(p.fp8_variant, detail::Fp8Variant::kBlockPair);
  EXPECT_EQ(p.k_splits, 2);
  run_and_check(b);
  // The same sizes with per-tensor scales are another problem.
  GemmDesc tensor = block;
  tensor.scales = ScaleMode::kTensor;
  anvil_test::make_operands(c, tensor, 23);
  EXPECT_FALSE(tuned(c, &p)) << p.family_reason;
  run_and_check(c);
  clear_tuning_cache();
}

TEST(TunedPlans, PlanTheCallCannotRunFallsBack) {
  REQUIRE_SM90();
  clear_tuning_cache();
  const detail::DeviceIdentity* id = detail::current_device_identity();
  ASSERT_NE(id, nullptr);
  const GemmDesc big = linear_desc(2048, 4096, 4096, DataType::kBF16, DataType::kBF16);
  detail::PlanOverrides sk;
  sk.family = detail::KernelFamily::kSm90Gemm;
  sk.sm90_variant = static_cast<int>(detail::Sm90Variant::kTallStreamK);
  detail::TuningCache cache;
  cache.device = *id;
  cache.entries = {entry(big, sk)};
  Diagnostic diag;
  ASSERT_EQ(load_tuning_cache(write_cache(cache, "streamk").c_str(), &diag), Status::kSuccess) << diag.message;
  Operands op;
  anvil_test::make_operands(op, big, 13);
  op.args.workspace = nullptr;  // no room for stream-K's partials
  op.args.workspace_bytes = 0;
  detail::LaunchPlan p;
  EXPECT_FALSE(tuned(op, &p)) << p.family_reason;
  EXPECT_NE(p.variant, detail::Sm90Variant::kTallStreamK);
  run_and_check(op);
  clear_tuning_cache();
}

TEST(TunedPlans, CacheFromAnotherDeviceIsIgnored) {
  REQUIRE_SM90();
  clear_tuning_cache();
  const detail::DeviceIdentity* id = detail::current_device_identity();
  ASSERT_NE(id, nullptr);
  const GemmDesc small = linear_desc(8, 4096, 4096, DataType::kBF16, DataType::kBF16);
  detail::PlanOverrides o;
  o.family = detail::KernelFamily::kDecodeTma;
  o.decode_splits = 3;
  detail::TuningCache cache;
  cache.device = *id;
  cache.device.cuda_runtime += 10;  // the next minor release
  cache.entries = {entry(small, o)};
  Diagnostic diag;
  ASSERT_EQ(load_tuning_cache(write_cache(cache, "foreign").c_str(), &diag), Status::kSuccess) << diag.message;
  Operands op;
  ::testing::internal::CaptureStderr();
  anvil_test::make_operands(op, small, 14);
  detail::LaunchPlan p;
  const bool was_tuned = tuned(op, &p);
  run_and_check(op);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(was_tuned) << p.family_reason;
  EXPECT_NE(err.find("ignored"), std::string::npos) << err;
  clear_tuning_cache();
}

}  // namespace
