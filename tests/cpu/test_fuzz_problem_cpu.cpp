// The fuzzer's problem generator (src/verify/fuzz_problem.h), without a GPU: problems are
// reproducible from (seed, index), stay within their limits, are all valid, are all
// accepted by the dispatcher, and together reach every corner the generator promises.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "anvil/anvil.h"
#include "plan/planner.h"
#include "verify/fuzz_problem.h"
#include "verify/verify.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::GemmArgs;
using anvil::GemmDesc;
using anvil::Order;
using anvil::ScaleMode;
using anvil::Status;
namespace verify = anvil::verify;

constexpr uint64_t kSeed = 20261129;
constexpr int kProblems = 2000;

// Stand-ins for device pointers at the problem's offsets: validation checks them for
// null, alignment and overlap with D, never dereferences them. Each operand has its own
// 2^40-byte region, as separate allocations would.
const void* fake_pointer(int operand, int64_t offset, DataType dtype) {
  const uintptr_t base = (uintptr_t{1} << 40) * uintptr_t(operand + 1);
  return reinterpret_cast<const void*>(base + uintptr_t(offset) * verify::dtype_bytes(dtype));
}

GemmArgs fake_args(const verify::FuzzProblem& p) {
  const GemmDesc& d = p.desc;
  GemmArgs args;
  args.a = fake_pointer(0, p.a_offset, d.a.dtype);
  args.b = fake_pointer(1, p.b_offset, d.b.dtype);
  args.d = const_cast<void*>(fake_pointer(3, p.d_offset, d.d.dtype));
  if (p.c_is_d) {
    args.c = args.d;
  } else if (d.beta != 0.0f || p.unread_c) {
    args.c = fake_pointer(2, p.c_offset, d.c.dtype);
  }
  if (d.epilogue.bias != BiasMode::kNone) args.bias = fake_pointer(4, p.bias_offset, d.epilogue.bias_dtype);
  args.workspace_bytes = anvil::workspace_size(d, args);
  if (args.workspace_bytes > 0) args.workspace = const_cast<void*>(fake_pointer(5, 0, DataType::kF32));
  return args;
}

TEST(FuzzProblem, IsAFunctionOfSeedAndIndex) {
  const verify::FuzzLimits limits = verify::default_fuzz_limits();
  for (int64_t i = 0; i < 50; ++i) {
    EXPECT_EQ(verify::describe(verify::make_fuzz_problem(kSeed, i, limits)),
              verify::describe(verify::make_fuzz_problem(kSeed, i, limits)));
    EXPECT_NE(verify::describe(verify::make_fuzz_problem(kSeed, i, limits)),
              verify::describe(verify::make_fuzz_problem(kSeed + 1, i, limits)));
  }
  EXPECT_NE(verify::describe(verify::make_fuzz_problem(kSeed, 0, limits)),
            verify::describe(verify::make_fuzz_problem(kSeed, 1, limits)));
}

TEST(FuzzProblem, StaysWithinItsLimits) {
  for (const verify::FuzzLimits& limits : {verify::default_fuzz_limits(), verify::small_fuzz_limits()}) {
    for (int64_t i = 0; i < kProblems; ++i) {
      const verify::FuzzProblem p = verify::make_fuzz_problem(kSeed, i, limits);
      const GemmDesc& d = p.desc;
      SCOPED_TRACE(verify::describe(p));
      EXPECT_GE(d.m, 1);
      EXPECT_GE(d.n, 1);
      EXPECT_GE(d.k, 1);
      EXPECT_LE(std::max({d.m, d.n, d.k}), limits.max_extent);
      EXPECT_GE(d.batch, 1);
      EXPECT_LE(d.batch, limits.max_batch);
      // SwiGLU rounds n up to one 128-column block at most.
      const int64_t slack = d.epilogue.activation == Activation::kSwiGLU ? 128 * d.m * d.k * d.batch : 0;
      EXPECT_LE(verify::fuzz_macs(d), limits.max_large_macs + slack);
      EXPECT_EQ(d.kernel, nullptr);
    }
  }
}

// The two caps apart: with no large problems every problem keeps to the small limits, and
// with only large ones to the large limits (the defaults above are too loose for a small
// problem to reach the large cap by chance, so a generator that applied the wrong one would
// pass there).
TEST(FuzzProblem, SmallAndLargeProblemsKeepTheirOwnCaps) {
  const verify::FuzzLimits small_only{4000, 300, 0, 20000, int64_t{1} << 40, 3};
  const verify::FuzzLimits large_only{4000, 300, 100, int64_t{1} << 40, int64_t{1} << 24, 3};
  int64_t beyond_small_extent = 0;
  for (int64_t i = 0; i < kProblems; ++i) {
    for (const verify::FuzzLimits* limits : {&small_only, &large_only}) {
      const verify::FuzzProblem p = verify::make_fuzz_problem(kSeed, i, *limits);
      const GemmDesc& d = p.desc;
      SCOPED_TRACE(verify::describe(p));
      const int64_t slack = d.epilogue.activation == Activation::kSwiGLU ? 128 * d.m * d.k * d.batch : 0;
      if (limits == &small_only) {
        EXPECT_LE(std::max({d.m, d.n, d.k}), limits->max_small_extent + (slack > 0 ? 128 : 0));
        EXPECT_LE(verify::fuzz_macs(d), limits->max_macs + slack);
      } else {
        EXPECT_LE(std::max({d.m, d.n, d.k}), limits->max_extent);
        EXPECT_LE(verify::fuzz_macs(d), limits->max_large_macs + slack);
        beyond_small_extent += std::max({d.m, d.n, d.k}) > limits->max_small_extent ? 1 : 0;
      }
    }
  }
  EXPECT_GT(beyond_small_extent, kProblems / 4) << "large problems should mostly exceed the small extent";
}

// The dispatcher must take every valid problem; without a GPU that shows as the device
// check's refusal (kDriverUnavailable, or kArchMismatch on another GPU), which comes only
// after a kernel was found.
TEST(FuzzProblem, EveryProblemIsValidAndTheDispatcherTakesIt) {
  for (const verify::FuzzLimits& limits : {verify::default_fuzz_limits(), verify::small_fuzz_limits()}) {
    for (int64_t i = 0; i < kProblems; ++i) {
      const verify::FuzzProblem p = verify::make_fuzz_problem(kSeed, i, limits);
      const GemmArgs args = fake_args(p);
      anvil::Diagnostic diag;
      const Status s = anvil::can_implement(p.desc, &args, &diag);
      EXPECT_TRUE(s == Status::kSuccess || s == Status::kDriverUnavailable || s == Status::kArchMismatch)
          << verify::describe(p) << ": " << anvil::to_string(s) << ": " << diag.message;
      EXPECT_NE(anvil::dispatch_name(p.desc), nullptr) << verify::describe(p);
    }
  }
}

TEST(FuzzProblem, ReachesEveryCornerItPromises) {
  std::map<std::string, int> seen;
  const verify::FuzzLimits limits = verify::default_fuzz_limits();
  auto is_edge = [](int64_t x) {
    for (int64_t edge : {64, 128, 256, 512}) {
      if (x == edge - 1 || x == edge + 1) return true;
    }
    return false;
  };
  for (int64_t i = 0; i < kProblems; ++i) {
    const verify::FuzzProblem p = verify::make_fuzz_problem(kSeed, i, limits);
    const GemmDesc& d = p.desc;
    auto mark = [&](const std::string& what, bool condition) { seen[what] += condition ? 1 : 0; };
    for (int64_t x : {d.m, d.n, d.k}) {
      mark("extent 1", x == 1);
      mark("tile edge +-1", is_edge(x));
      mark("prime above 1000", x == 1021 || x == 1031 || x == 2039 || x == 2053 || x == 4093 || x == 4099);
      mark("extent above 4096", x > 4096);
    }
    mark("fp16 inputs", d.a.dtype == DataType::kF16);
    mark("bf16 inputs", d.a.dtype == DataType::kBF16);
    for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
      const std::string name = anvil::to_string(t);
      mark("D " + name, d.d.dtype == t);
      mark("bias " + name, d.epilogue.bias != BiasMode::kNone && d.epilogue.bias_dtype == t);
    }
    for (Order a : {Order::kRowMajor, Order::kColMajor}) {
      for (Order b : {Order::kRowMajor, Order::kColMajor}) {
        mark("layout " + std::to_string(int(a)) + std::to_string(int(b)), d.a.order == a && d.b.order == b);
      }
    }
    mark("D column-major", d.d.order == Order::kColMajor);
    // The column TMA store (epilogue_store.cuh): a plain GEMM into a half column-major D
    // with rows a multiple of 8 and 16-byte lines; and the dispatcher's transposed plans.
    const bool plain = d.alpha == 1.0f && d.beta == 0.0f && d.epilogue.bias == BiasMode::kNone &&
                       d.epilogue.activation == Activation::kIdentity;
    mark("D column-major through TMA", plain && d.d.order == Order::kColMajor && d.d.dtype != DataType::kF32 &&
                                           d.m % 8 == 0 && d.d.ld % 8 == 0 &&
                                           (p.d_offset * int64_t(verify::dtype_bytes(d.d.dtype))) % 16 == 0);
    mark("sm90-gemm transposed", anvil::detail::plan(d, anvil::detail::DeviceInfo::h200()).swap_ab &&
                                     anvil::detail::plan(d, anvil::detail::DeviceInfo::h200()).family ==
                                         anvil::detail::KernelFamily::kSm90Gemm);
    for (int act = 0; act <= int(Activation::kSwiGLU); ++act) {
      mark("activation " + std::to_string(act), int(d.epilogue.activation) == act);
    }
    mark("bias per row", d.epilogue.bias == BiasMode::kPerRow);
    mark("bias per column", d.epilogue.bias == BiasMode::kPerColumn);
    mark("alpha 0", d.alpha == 0.0f);
    mark("alpha other", d.alpha != 0.0f && d.alpha != 1.0f);
    mark("beta 1", d.beta == 1.0f);
    mark("beta other", d.beta != 0.0f && d.beta != 1.0f);
    mark("C is D", p.c_is_d);
    mark("unread NaN C", p.unread_c);
    mark("batch 4", d.batch == 4);
    mark("broadcast input", d.batch > 1 && (d.a.batch_stride == 0 || d.b.batch_stride == 0));
    mark("C batch stride apart from D's", d.batch > 1 && d.beta != 0.0f && !p.c_is_d && d.c.batch_stride != d.d.batch_stride);
    mark("odd padding", d.a.ld % 2 == 1 && d.a.ld > (d.a.order == Order::kRowMajor ? d.k : d.m));
    mark("base not 16-byte aligned", (p.a_offset * int64_t(verify::dtype_bytes(d.a.dtype))) % 16 != 0);
    mark("D offset", p.d_offset > 0);
    mark("batch invariant", d.batch_invariant);
    // The sm90-gemm widths between the 32-column steps (step16_width_or), whose last 16
    // columns leave through pair stores or the staged epilogue's 16-column chunk.
    const anvil::detail::LaunchPlan plan = anvil::detail::plan(d, anvil::detail::DeviceInfo::h200());
    mark("sm90-gemm tile an odd multiple of 16 wide", plan.family == anvil::detail::KernelFamily::kSm90Gemm &&
                                                        anvil::detail::tile_shape(plan.variant).block_n % 32 == 16);
  }
  for (const auto& [what, count] : seen) EXPECT_GT(count, 0) << "no problem with " << what;
}

}  // namespace

// FP8 problems: what sm90-fp8 takes, every scale mode and pair drawn, planned on one of
// the two FP8 kernels, the 16-bit draw of the same index untouched.
TEST(FuzzProblem, Fp8ProblemsAreWhatTheFp8KernelTakes) {
  const verify::FuzzLimits limits = verify::default_fuzz_limits();
  int modes[4] = {0, 0, 0, 0}, split[4] = {0, 0, 0, 0}, decode[4] = {0, 0, 0, 0}, mixed = 0, shifted = 0;
  int fitted_pairs = 0, fitted_singles = 0;
  for (int64_t i = 0; i < kProblems; ++i) {
    const verify::FuzzProblem p = verify::make_fp8_fuzz_problem(kSeed, i, limits);
    const GemmDesc& d = p.desc;
    SCOPED_TRACE(verify::describe(p));
    EXPECT_TRUE(d.a.dtype == DataType::kE4M3 || d.a.dtype == DataType::kE5M2);
    EXPECT_FALSE(d.a.dtype == DataType::kE5M2 && d.b.dtype == DataType::kE5M2);
    EXPECT_EQ(d.a.order, Order::kRowMajor);
    EXPECT_EQ(d.b.order, Order::kColMajor);
    EXPECT_EQ(d.k % 16, 0);
    EXPECT_EQ(d.a.ld % 16, 0);
    EXPECT_EQ(d.b.ld % 16, 0);
    EXPECT_EQ(p.a_offset % 16, 0);
    EXPECT_FALSE(d.batch_invariant);
    if (d.batch > 1) {
      EXPECT_TRUE(d.scales == ScaleMode::kNone || d.scales == ScaleMode::kTensor);
    }
    if (d.scales == ScaleMode::kBlock128) {
      EXPECT_TRUE(d.a.dtype == DataType::kE4M3 && d.b.dtype == DataType::kE4M3);
      // scale_a 0-3 floats past a 16-byte boundary: the scale map's shift.
      EXPECT_LT(p.scale_a_offset, 4);
      shifted += p.scale_a_offset > 0 ? 1 : 0;
    } else {
      EXPECT_EQ(p.scale_a_offset, 0);
    }
    ++modes[static_cast<int>(d.scales)];
    mixed += d.a.dtype != d.b.dtype ? 1 : 0;
    const anvil::detail::LaunchPlan plan = anvil::detail::plan(d, anvil::detail::DeviceInfo::h200());
    EXPECT_TRUE(plan.family == anvil::detail::KernelFamily::kSm90Fp8 ||
                plan.family == anvil::detail::KernelFamily::kSm90Fp8Decode)
        << plan.family_reason;
    if (plan.family == anvil::detail::KernelFamily::kSm90Fp8Decode) ++decode[static_cast<int>(d.scales)];
    if (plan.family == anvil::detail::KernelFamily::kSm90Fp8 && anvil::detail::fp8_fit_variant(plan.fp8_variant)) {
      ++(anvil::detail::fp8_fit_single(plan.fp8_variant) ? fitted_singles : fitted_pairs);
    }
    if (plan.family == anvil::detail::KernelFamily::kSm90Fp8 && plan.k_splits > 1) {
      ++split[static_cast<int>(d.scales)];
      EXPECT_EQ(plan.k_splits * plan.slice_k, d.k);
      EXPECT_GT(anvil::workspace_size(d), 0u) << "split-K's partials";
    }
    anvil::Diagnostic diag;
    const anvil::Status s = anvil::can_implement(d, nullptr, &diag);
    EXPECT_TRUE(s == anvil::Status::kSuccess || s == anvil::Status::kDriverUnavailable ||
                s == anvil::Status::kArchMismatch)
        << diag.message;
    EXPECT_NE(verify::make_fuzz_problem(kSeed, i, limits).desc.a.dtype, DataType::kE4M3)
        << "the 16-bit draw of the same index stays 16-bit";
  }
  for (int m = 0; m < 4; ++m) EXPECT_GT(modes[m], 0) << "scale mode " << m << " never drawn";
  EXPECT_GT(shifted, 0) << "no block-scaled problem with a shifted scale_a";
  // Split-K's shapes in every scale mode, split by the planner (H200's 132 SMs); the
  // decode-sized ones the rule gives sm90-fp8-decode in every mode, so the dispatcher's
  // stream reaches both FP8 kernels.
  for (int m = 0; m < 4; ++m) {
    // (Block scales' decode-sized problems also run on sm90-fp8-decode.)
    EXPECT_GE(split[m], m == static_cast<int>(ScaleMode::kBlock128) ? 10 : 15)
        << "scale mode " << m << ": too few problems split K";
    EXPECT_GE(decode[m], m == static_cast<int>(ScaleMode::kBlock128) ? 5 : 20)
        << "scale mode " << m << ": too few problems on sm90-fp8-decode";
  }
  EXPECT_GT(mixed, 0);
  // The fitted widths, in pairs and single CTAs, where the planner takes them.
  EXPECT_GE(fitted_pairs, 10);
  EXPECT_GT(fitted_singles, 0);
}

// Batch-invariant problems on weights the mode splits: valid, taken by the dispatcher,
// and planned with a K split on the H200 (sm90-decode's cluster, or sm90-gemm's folded
// slices or split-K; the long K makes the cluster's CTAs the cheaper plan for most).
TEST(FuzzProblem, InvariantSplitProblemsSplitK) {
  const verify::FuzzLimits limits = verify::default_fuzz_limits();
  int split = 0, decode = 0, gemm = 0, folded = 0;
  for (int64_t i = 0; i < kProblems; ++i) {
    const verify::FuzzProblem p = verify::make_invariant_split_fuzz_problem(kSeed, i, limits);
    const GemmDesc& d = p.desc;
    SCOPED_TRACE(verify::describe(p));
    EXPECT_TRUE(d.batch_invariant);
    EXPECT_EQ(d.batch, 1);
    EXPECT_LE(d.n, 2048);
    EXPECT_GE(d.k, 1024);
    EXPECT_EQ(d.k % 8, 0);
    const int64_t slack = d.epilogue.activation == Activation::kSwiGLU ? 128 * d.m * d.k : 0;
    EXPECT_LE(verify::fuzz_macs(d), limits.max_large_macs + slack);
    const GemmArgs args = fake_args(p);
    anvil::Diagnostic diag;
    const Status s = anvil::can_implement(d, &args, &diag);
    EXPECT_TRUE(s == Status::kSuccess || s == Status::kDriverUnavailable || s == Status::kArchMismatch)
        << anvil::to_string(s) << ": " << diag.message;
    const anvil::detail::LaunchPlan plan = anvil::detail::plan(d, anvil::detail::DeviceInfo::h200());
    split += plan.k_splits > 1 ? 1 : 0;
    decode += plan.family == anvil::detail::KernelFamily::kDecodeTma && plan.k_splits > 1 ? 1 : 0;
    gemm += plan.family == anvil::detail::KernelFamily::kSm90Gemm && plan.k_splits > 1 ? 1 : 0;
    folded += (plan.family == anvil::detail::KernelFamily::kSm90Gemm && anvil::detail::folds_k_slices(plan.variant)) ||
                      plan.decode.k_slices > 1
                  ? 1
                  : 0;
  }
  EXPECT_GT(folded, kProblems / 20);  // the folded slices (sm90-gemm's and sm90-decode-r64's)
  EXPECT_GT(split, kProblems * 9 / 10);
  EXPECT_GT(decode, kProblems / 5);
  EXPECT_GT(gemm, kProblems / 40);  // (about 5% of the draws: most long-K ones take the cluster)
}
