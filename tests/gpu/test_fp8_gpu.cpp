// sm90-fp8 and sm90-fp8-decode against the reference of the dequantized operands
// (verify::reference_gemm): every scale mode, every output dtype, the fused epilogues,
// shapes off the tile grid, decode-sized M, both whole-tile configurations, the promotion
// measurement, and the decode kernel forced at every token tile and K split.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/gpu_support.h"
#include "kernels/sm90/fp8_decode_plan.h"
#include "plan/launch.h"
#include "verify/fuzz_runner.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::GemmDesc;
using anvil::Order;
using anvil::ScaleMode;
using anvil::Status;
using anvil::detail::Fp8Variant;
using anvil::detail::KernelFamily;
using anvil::detail::LaunchPlan;
using anvil::detail::PlanOverrides;

GemmDesc fp8_desc(int64_t m, int64_t n, int64_t k, ScaleMode scales, DataType out = DataType::kBF16,
                  DataType a = DataType::kE4M3, DataType b = DataType::kE4M3) {
  GemmDesc d = anvil::linear_desc(m, n, k, DataType::kBF16, out);
  d.a.dtype = a;
  d.b.dtype = b;
  d.scales = scales;
  return d;
}

// The element the comparison found worst, as "D[batch][row][col] = got, reference want".
std::string worst_element(const anvil_test::Operands& op, const anvil::verify::Comparison& cmp) {
  if (cmp.worst_index < 0) return "no worst element";
  const int64_t n_out = op.out_cols(), per_batch = op.desc.m * n_out;
  const int64_t b = cmp.worst_index / per_batch, i = cmp.worst_index % per_batch / n_out, j = cmp.worst_index % n_out;
  float want = 0;
  std::vector<unsigned char> got(8, 0);
  const size_t width = anvil::verify::dtype_bytes(op.desc.d.dtype);
  const int64_t at = anvil_test::offset_of(op.desc.d, i, j, b);
  if (cudaMemcpy(&want, op.ref.as_float() + cmp.worst_index, 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(got.data(), static_cast<unsigned char*>(op.d.get()) + at * int64_t(width), width,
                 cudaMemcpyDeviceToHost) != cudaSuccess) {
    return "worst element unreadable";
  }
  return "D[" + std::to_string(b) + "][" + std::to_string(i) + "][" + std::to_string(j) +
         "] = " + std::to_string(anvil_test::load_element(got, op.desc.d.dtype, 0)) + ", reference " +
         std::to_string(want);
}

// Runs desc with the overrides' family (sm90-fp8 or sm90-fp8-decode), checks the family
// that ran, D against the reference and that nothing outside the logical output was
// written; the plan that ran comes back in *ran and the bytes of D in *d_bytes when asked.
void run_family_and_check(const GemmDesc& desc, uint64_t seed, const PlanOverrides& overrides, bool c_is_d = false,
                          LaunchPlan* ran_out = nullptr, std::vector<unsigned char>* d_bytes = nullptr) {
  anvil_test::Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, seed, c_is_d));
  // The reference first: when C is D, the GEMM overwrites the C the reference reads.
  CHECK_CUDA(anvil::verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  anvil::Diagnostic diag;
  LaunchPlan ran;
  const Status s = anvil::detail::gemm(desc, op.args, &overrides, &diag, &ran);
  ASSERT_EQ(s, Status::kSuccess) << diag.message;
  ASSERT_EQ(ran.family, overrides.family) << "planned " << anvil::detail::family_name(ran.family);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto tol = anvil::verify::tolerance_for(desc);
  const auto cmp = anvil::verify::compare(desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  const std::string config = ran.family == KernelFamily::kSm90Fp8Decode
                                 ? "sm90-fp8-decode, " + std::to_string(ran.decode.token_tile) + "-token tile, K split " +
                                       std::to_string(ran.decode.splits)
                                 : anvil::detail::fp8_variant_name(ran.fp8_variant);
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp) << "; " << worst_element(op, cmp) << " (" << config
                          << "; tolerance rel_frobenius " << tol.rel_frobenius << ", element " << tol.max_abs << " + "
                          << tol.max_rel << " |ref|)";
  anvil_test::expect_padding_untouched(op);
  if (ran_out != nullptr) *ran_out = ran;
  if (d_bytes != nullptr) {
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, *d_bytes));
  }
}

// sm90-fp8 (forced: decode-sized problems may otherwise go to sm90-fp8-decode), with the
// variant forced when >= 0.
void run_and_check(const GemmDesc& desc, uint64_t seed, int variant = -1, bool c_is_d = false) {
  SCOPED_TRACE(anvil_test::describe(desc) + (variant >= 0 ? ", variant " + std::to_string(variant) : "") +
               (c_is_d ? ", C = D" : ""));
  PlanOverrides overrides;
  overrides.family = KernelFamily::kSm90Fp8;
  overrides.fp8_variant = variant;
  LaunchPlan ran;
  ASSERT_NO_FATAL_FAILURE(run_family_and_check(desc, seed, overrides, c_is_d, &ran));
  if (variant >= 0) {
    ASSERT_EQ(static_cast<int>(ran.fp8_variant), variant) << "the forced variant did not run";
  }
}

struct Fp8Case {
  int64_t m, n, k;
  ScaleMode scales;
  DataType out;
};

std::string case_name(const testing::TestParamInfo<Fp8Case>& info) {
  const Fp8Case& c = info.param;
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + "_" +
         (c.scales == ScaleMode::kNone        ? "none"
          : c.scales == ScaleMode::kTensor    ? "tensor"
          : c.scales == ScaleMode::kRowColumn ? "rowcol"
                                              : "block") +
         "_" + anvil::to_string(c.out);
}

class Fp8Sweep : public testing::TestWithParam<Fp8Case> {};

TEST_P(Fp8Sweep, MatchesDequantizedReference) {
  REQUIRE_SM90();
  const Fp8Case& c = GetParam();
  run_and_check(fp8_desc(c.m, c.n, c.k, c.scales, c.out), 1000 + uint64_t(c.m * 7 + c.n * 3 + c.k));
}

std::vector<Fp8Case> sweep_cases() {
  // Exact tiles, M and N off the 128/256 grid, K off the 128 grid (a multiple of 16), and
  // one deep problem; each with every scale mode and output dtype.
  const int64_t shapes[][3] = {{256, 512, 256},  {128, 128, 128}, {200, 300, 272},  {129, 257, 144},
                               {333, 1000, 1040}, {64, 7168, 512}, {1024, 1536, 4096}};
  std::vector<Fp8Case> cases;
  for (const auto& s : shapes)
    for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128})
      for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32}) cases.push_back({s[0], s[1], s[2], scales, out});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Fp8, Fp8Sweep, testing::ValuesIn(sweep_cases()), case_name);

// Decode batches: 1-16 rows, every scale mode (the tile's other rows are TMA's zeros and
// are never stored).
TEST(Fp8Decode, OneToSixteenRows) {
  REQUIRE_SM90();
  for (int64_t m = 1; m <= 16; ++m) {
    for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128}) {
      ASSERT_NO_FATAL_FAILURE(run_and_check(fp8_desc(m, 1152, 768, scales), 2000 + uint64_t(m)));
    }
  }
}

// Every configuration, forced, on a ragged problem and a one-row one; the pairs along N
// also on an odd number of tile columns (their cluster's second CTA then has no columns).
TEST(Fp8Variants, EveryConfiguration) {
  REQUIRE_SM90();
  for (int i = 0; i < anvil::detail::kFp8Variants; ++i) {
    const Fp8Variant v = static_cast<Fp8Variant>(i);
    const bool block = anvil::detail::fp8_block_variant(v);
    for (ScaleMode scales : block ? std::vector<ScaleMode>{ScaleMode::kBlock128}
                                  : std::vector<ScaleMode>{ScaleMode::kTensor, ScaleMode::kRowColumn}) {
      ASSERT_NO_FATAL_FAILURE(run_and_check(fp8_desc(300, 700, 640, scales), 3000 + uint64_t(i), i));
      ASSERT_NO_FATAL_FAILURE(run_and_check(fp8_desc(1, 512, 512, scales, DataType::kF32), 3100 + uint64_t(i), i));
      ASSERT_NO_FATAL_FAILURE(run_and_check(fp8_desc(64, 384, 1024, scales), 3200 + uint64_t(i), i));
    }
  }
}

// The fitted widths (160, 192, 224 columns; pairs and single CTAs), forced, at their edges:
// a last column tile of 60 or 200 columns (a partial 64-column store box, a partial
// register-stored tail), a last row tile of 9 rows (the singles leave the dead boxes out),
// the fused epilogues after the scales, beta * C with C == D, an fp32 D and a padded D.
TEST(Fp8FitWidths, EdgesEpiloguesAndSlices) {
  REQUIRE_SM90();
  for (int i = 0; i < anvil::detail::kFp8Variants; ++i) {
    const Fp8Variant v = static_cast<Fp8Variant>(i);
    if (!anvil::detail::fp8_fit_variant(v)) continue;
    const uint64_t seed = 7000 + 100 * uint64_t(i);
    for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn}) {
      ASSERT_NO_FATAL_FAILURE(run_and_check(fp8_desc(265, 700, 384, scales), seed, i));
      ASSERT_NO_FATAL_FAILURE(run_and_check(fp8_desc(137, 1096, 256, scales, DataType::kF16), seed + 1, i));
    }
    GemmDesc fused = fp8_desc(300, 520, 512, ScaleMode::kRowColumn);
    fused.alpha = 0.5f;
    fused.epilogue.bias = BiasMode::kPerColumn;
    fused.epilogue.activation = Activation::kGeluTanh;
    ASSERT_NO_FATAL_FAILURE(run_and_check(fused, seed + 2, i));
    GemmDesc residual = fp8_desc(200, 672, 256, ScaleMode::kTensor, DataType::kF16);
    residual.epilogue.bias = BiasMode::kPerRow;
    residual.epilogue.bias_dtype = DataType::kBF16;
    residual.epilogue.activation = Activation::kSiLU;
    residual.beta = 0.75f;
    residual.c = residual.d;
    ASSERT_NO_FATAL_FAILURE(run_and_check(residual, seed + 3, i, /*c_is_d=*/true));
    ASSERT_NO_FATAL_FAILURE(run_and_check(fp8_desc(129, 480, 640, ScaleMode::kTensor, DataType::kF32), seed + 4, i));
    GemmDesc padded = fp8_desc(77, 330, 256, ScaleMode::kTensor);
    padded.d.ld = 344;
    ASSERT_NO_FATAL_FAILURE(run_and_check(padded, seed + 5, i));
  }
}

// The mixed e5m2 pairs (gradients): e5m2 x e4m3 and e4m3 x e5m2.
TEST(Fp8Mixed, E5M2Pairs) {
  REQUIRE_SM90();
  for (ScaleMode scales : {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn}) {
    ASSERT_NO_FATAL_FAILURE(
        run_and_check(fp8_desc(200, 384, 512, scales, DataType::kBF16, DataType::kE5M2, DataType::kE4M3), 4000));
    ASSERT_NO_FATAL_FAILURE(
        run_and_check(fp8_desc(200, 384, 512, scales, DataType::kF32, DataType::kE4M3, DataType::kE5M2), 4001));
  }
}

// The fused epilogues after the scales: alpha, column and row bias, activations, SwiGLU,
// beta * C, a padded D.
TEST(Fp8Epilogues, FusedAfterScales) {
  REQUIRE_SM90();
  for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128}) {
    GemmDesc d = fp8_desc(260, 512, 384, scales);
    d.alpha = 0.75f;
    d.epilogue.bias = BiasMode::kPerColumn;
    d.epilogue.activation = Activation::kGeluTanh;
    ASSERT_NO_FATAL_FAILURE(run_and_check(d, 5000));
    d.epilogue.activation = Activation::kSwiGLU;
    d.d.ld = 256;
    ASSERT_NO_FATAL_FAILURE(run_and_check(d, 5001));
    GemmDesc r = fp8_desc(100, 384, 256, scales, DataType::kF16);
    r.epilogue.bias = BiasMode::kPerRow;
    r.epilogue.bias_dtype = DataType::kBF16;
    r.epilogue.activation = Activation::kReLU;
    r.beta = 0.5f;
    r.c = r.d;
    ASSERT_NO_FATAL_FAILURE(run_and_check(r, 5002));
    GemmDesc padded = fp8_desc(77, 200, 256, scales);
    padded.d.ld = 264;
    ASSERT_NO_FATAL_FAILURE(run_and_check(padded, 5003));
  }
}

// Batched FP8 with a per-tensor scale shared by every matrix of the batch.
TEST(Fp8Batched, TensorScales) {
  REQUIRE_SM90();
  GemmDesc d = fp8_desc(130, 256, 256, ScaleMode::kTensor);
  d.batch = 3;
  d.a.batch_stride = 130 * 256;
  d.b.batch_stride = 256 * 256;
  d.d.batch_stride = 130 * 256;
  run_and_check(d, 6000);
}

// Every launch reads the scales at run time: a second call with other scales at the same
// addresses (a CUDA graph's replay after re-quantization) gives the new result.
TEST(Fp8Scales, ReadAtRunTime) {
  REQUIRE_SM90();
  for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kRowColumn, ScaleMode::kBlock128}) {
    const GemmDesc desc = fp8_desc(128, 256, 256, scales);
    SCOPED_TRACE(anvil_test::describe(desc));
    anvil_test::Operands op;
    ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, 7000));
    anvil::Diagnostic diag;
    ASSERT_EQ(anvil::gemm(desc, op.args, &diag), Status::kSuccess) << diag.message;
    CHECK_CUDA(anvil::verify::fill_scales(op.scale_a.as_float(), anvil::verify::scale_elements_a(desc), 7001, nullptr));
    CHECK_CUDA(anvil::verify::poison(op.d.get(), desc.d.dtype, op.d_elements(), nullptr));
    ASSERT_EQ(anvil::gemm(desc, op.args, &diag), Status::kSuccess) << diag.message;
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(anvil::verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
    const auto cmp =
        anvil::verify::compare(desc, op.d.get(), op.ref.as_float(), anvil::verify::tolerance_for(desc), nullptr);
    EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp) << "; " << worst_element(op, cmp);
  }
}

// Error of the promotion (block scales, every 128-wide K block summed from zero and added
// in fp32) against summing the whole K in the tensor cores' accumulator (tensor scales),
// on the same e4m3 operands with all scales 1, against an fp64 reference of the operands.
// Prints both; the promoted result must meet the block-scale tolerance. docs/fp8.md quotes
// the numbers this prints:
//   anvil_gpu_tests --gtest_filter='Fp8Promotion.*'
void promotion_error(bool positive, double* unpromoted_rel, double* promoted_rel, double* unpromoted_max,
                     double* promoted_max) {
  constexpr int64_t kM = 128, kN = 256, kK = 16384;
  anvil_test::Operands op;
  const GemmDesc tensor = fp8_desc(kM, kN, kK, ScaleMode::kTensor, DataType::kF32);
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, tensor, positive ? 8100 : 8000));
  std::vector<unsigned char> a_host, b_host;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.a, a_host));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.b, b_host));
  if (positive) {
    // All-positive operands: the running sum grows with K, so what the accumulator drops
    // in each step does not cancel.
    for (auto& x : a_host) x &= 0x7F;
    for (auto& x : b_host) x &= 0x7F;
    ASSERT_NO_FATAL_FAILURE(anvil_test::upload(op.a, a_host));
    ASSERT_NO_FATAL_FAILURE(anvil_test::upload(op.b, b_host));
  }
  GemmDesc block = tensor;
  block.scales = ScaleMode::kBlock128;
  const int64_t scales_a = anvil::verify::scale_elements_a(block), scales_b = anvil::verify::scale_elements_b(block);
  anvil_test::DeviceBuffer ones_a, ones_b;
  CHECK_CUDA(ones_a.allocate(size_t(scales_a) * 4));
  CHECK_CUDA(ones_b.allocate(size_t(scales_b) * 4));
  const std::vector<float> one_a(size_t(scales_a), 1.0f), one_b(size_t(scales_b), 1.0f);
  CHECK_CUDA(cudaMemcpy(ones_a.get(), one_a.data(), one_a.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(ones_b.get(), one_b.data(), one_b.size() * 4, cudaMemcpyHostToDevice));

  std::vector<double> ref;
  GemmDesc plain = tensor;
  plain.scales = ScaleMode::kNone;
  anvil::verify::cpu_reference(plain, a_host.data(), b_host.data(), nullptr, nullptr, ref);
  ASSERT_EQ(ref.size(), size_t(kM * kN));

  const auto run = [&](const GemmDesc& desc, const float* sa, const float* sb, double* rel, double* worst) {
    anvil::GemmArgs args = op.args;
    args.scale_a = sa;
    args.scale_b = sb;
    CHECK_CUDA(anvil::verify::poison(op.d.get(), DataType::kF32, kM * kN, nullptr));
    anvil::Diagnostic diag;
    // Whole tiles: split-K would cut the K this measures into slices.
    PlanOverrides whole;
    whole.split_k_slices = 1;
    ASSERT_EQ(anvil::detail::gemm(desc, args, &whole, &diag), Status::kSuccess) << diag.message;
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<unsigned char> d_host;
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, d_host));
    const std::vector<double> d = anvil_test::unpack(desc.d, kM, kN, 1, d_host);
    double diff2 = 0, ref2 = 0, max_rel = 0, scale = 0;
    for (double r : ref) scale = std::max(scale, std::fabs(r));
    for (size_t i = 0; i < d.size(); ++i) {
      ASSERT_TRUE(std::isfinite(d[i])) << "D[" << i << "] = " << d[i];
      diff2 += (d[i] - ref[i]) * (d[i] - ref[i]);
      ref2 += ref[i] * ref[i];
      max_rel = std::max(max_rel, std::fabs(d[i] - ref[i]) / scale);
    }
    *rel = std::sqrt(diff2 / ref2);
    *worst = max_rel;
  };
  float* one = ones_a.as_float();
  ASSERT_NO_FATAL_FAILURE(run(tensor, one, one, unpromoted_rel, unpromoted_max));
  ASSERT_NO_FATAL_FAILURE(run(block, ones_a.as_float(), ones_b.as_float(), promoted_rel, promoted_max));
}

TEST(Fp8Promotion, LongKErrorWithAndWithout) {
  REQUIRE_SM90();
  for (bool positive : {false, true}) {
    double un_rel = 0, pro_rel = 0, un_max = 0, pro_max = 0;
    ASSERT_NO_FATAL_FAILURE(promotion_error(positive, &un_rel, &pro_rel, &un_max, &pro_max));
    const char* data = positive ? "positive" : "zero-mean";
    std::printf("[fp8 promotion] 128 x 256 x 16384 e4m3, %s operands, fp32 D vs fp64 reference:\n"
                "[fp8 promotion]   whole K in the tensor-core accumulator: rel_frobenius %.3e, max |err|/max|ref| %.3e\n"
                "[fp8 promotion]   promoted to fp32 every 128 K:           rel_frobenius %.3e, max |err|/max|ref| %.3e\n",
                data, un_rel, un_max, pro_rel, pro_max);
    RecordProperty(std::string(data) + "_unpromoted_rel_frobenius", std::to_string(un_rel));
    RecordProperty(std::string(data) + "_promoted_rel_frobenius", std::to_string(pro_rel));
    GemmDesc block = fp8_desc(128, 256, 16384, ScaleMode::kBlock128, DataType::kF32);
    EXPECT_LT(pro_rel, anvil::verify::tolerance_for(block).rel_frobenius) << data;
  }
}

// The same problems as `anvil-fuzz --fp8 --small --seed 8 --problems 150`: random FP8
// problems (every scale mode and pair, random epilogues, padded and offset operands),
// through the dispatcher, D's padding checked for stray writes.
TEST(Fp8Fuzz, FixedSeedSmallProblemsMatchTheReference) {
  REQUIRE_SM90();
  anvil_test::Stream stream;
  CHECK_CUDA(stream.create());
  anvil::verify::FuzzRunner runner(stream.handle);
  const anvil::verify::FuzzLimits limits = anvil::verify::small_fuzz_limits();
  for (int64_t i = 0; i < 150; ++i) {
    const anvil::verify::FuzzProblem problem = anvil::verify::make_fp8_fuzz_problem(8, i, limits);
    const anvil::verify::FuzzOutcome outcome = runner.run(problem, nullptr);
    EXPECT_EQ(outcome.result, anvil::verify::FuzzResult::kPassed)
        << anvil::verify::describe(problem) << ": " << outcome.kernel << ": " << outcome.message << " "
        << anvil::verify::describe(outcome.comparison);
    ASSERT_FALSE(outcome.context_lost) << "the CUDA context is unusable after " << anvil::verify::describe(problem);
  }
}

// ---- split-K (fp8_plan.h, docs/fp8.md "Split-K") ----
//
// Few output tiles and a long K: K in slices of whole 128-wide blocks, one strided batch of
// sm90-fp8 into fp32 partials, summed in slice order through the epilogue. Each case runs
// through the planner, checks the plan it ran split (or not) as asked, compares D with the
// reference of the dequantized operands at sm90-fp8's tolerances (verify::tolerance_for:
// block scales 2^-10 of the typical magnitude; tensor, row/column and no scales
// 2^-12 x (K / 32 + 8)), and checks D's padding. The workspace is poisoned with NaN first,
// so a partial tile no slice wrote shows in D. Block scales are random per block ([0.5,
// 1.5], verify::fill_scales): a slice reading another slice's blocks is far off.

constexpr ScaleMode kEveryScaleMode[] = {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn,
                                         ScaleMode::kBlock128};

// What a split-K run should be: the planner's own choice (kAuto: it must split), forced
// slices, or forced whole tiles.
struct SplitRequest {
  enum Kind { kAuto, kForced, kNever } kind = kAuto;
  int slices = 0;
};

// Runs desc as requested with a workspace of workspace_bytes (SIZE_MAX: what the plan asks
// for), checks the slices it ran and D; the bytes of D come back in *d_bytes when asked.
void run_split_and_check(const GemmDesc& desc, uint64_t seed, SplitRequest request, bool c_is_d = false,
                         std::vector<unsigned char>* d_bytes = nullptr, size_t workspace_bytes = SIZE_MAX,
                         int expect_slices = -1, int variant = -1) {
  SCOPED_TRACE(anvil_test::describe(desc) + (c_is_d ? ", C = D" : "") + ", split request " +
               std::to_string(int(request.kind)) + "/" + std::to_string(request.slices));
  anvil_test::Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, seed, c_is_d));
  PlanOverrides overrides;
  overrides.family = KernelFamily::kSm90Fp8;  // its split-K, not sm90-fp8-decode's cluster split
  overrides.split_k_slices = request.kind == SplitRequest::kNever ? 1 : request.kind == SplitRequest::kForced ? request.slices : 0;
  overrides.fp8_variant = variant;
  const size_t planned = anvil::detail::workspace_size(desc, nullptr, &overrides);
  const size_t bytes = workspace_bytes == SIZE_MAX ? planned : workspace_bytes;
  anvil_test::DeviceBuffer workspace;
  op.args.workspace = nullptr;
  op.args.workspace_bytes = bytes;
  if (bytes > 0) {
    CHECK_CUDA(workspace.allocate(bytes));
    CHECK_CUDA(cudaMemset(workspace.get(), 0xFF, bytes));  // NaN in every fp32 partial
    op.args.workspace = workspace.get();
  }
  // The reference first: when C is D, the GEMM overwrites the C the reference reads.
  CHECK_CUDA(anvil::verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  anvil::Diagnostic diag;
  LaunchPlan ran;
  const Status s = anvil::detail::gemm(desc, op.args, &overrides, &diag, &ran);
  ASSERT_EQ(s, Status::kSuccess) << diag.message;
  ASSERT_EQ(ran.family, KernelFamily::kSm90Fp8);
  if (variant >= 0) {
    ASSERT_EQ(static_cast<int>(ran.fp8_variant), variant) << "the forced variant did not run";
  }
  if (expect_slices >= 0) {
    ASSERT_EQ(ran.k_splits, expect_slices) << ran.split_reason;
  } else if (request.kind == SplitRequest::kAuto) {
    ASSERT_GT(ran.k_splits, 1) << "the planner was expected to split: " << ran.split_reason;
  } else if (request.kind == SplitRequest::kForced) {
    ASSERT_EQ(ran.k_splits, request.slices) << ran.split_reason;
  } else {
    ASSERT_EQ(ran.k_splits, 1) << ran.split_reason;
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto tol = anvil::verify::tolerance_for(desc);
  const auto cmp = anvil::verify::compare(desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp) << "; " << worst_element(op, cmp) << " ("
                          << anvil::detail::fp8_variant_name(ran.fp8_variant) << ", " << ran.k_splits
                          << " slices; tolerance rel_frobenius " << tol.rel_frobenius << ", element " << tol.max_abs
                          << " + " << tol.max_rel << " |ref|)";
  anvil_test::expect_padding_untouched(op);
  if (d_bytes != nullptr) {
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, *d_bytes));
  }
}

// DeepSeek-V3's kv_a and q_a at 64 and 128 tokens and a single token: the planner splits,
// in every scale mode and output dtype.
TEST(Fp8SplitK, PlannedSplitMatchesTheReferenceInEveryScaleMode) {
  REQUIRE_SM90();
  const int64_t shapes[][3] = {{64, 576, 7168}, {128, 1536, 7168}, {1, 576, 7168}, {100, 200, 4096}};
  for (const auto& shape : shapes) {
    for (ScaleMode scales : kEveryScaleMode) {
      for (DataType out : {DataType::kBF16, DataType::kF32}) {
        ASSERT_NO_FATAL_FAILURE(run_split_and_check(fp8_desc(shape[0], shape[1], shape[2], scales, out),
                                                    9000 + uint64_t(shape[0] + shape[1]), SplitRequest{}));
      }
    }
  }
}

// alpha, bias, activations and beta * C are applied once, after the sum: column and row
// bias with GELU, SwiGLU, C in place with beta = -1, a separate C with ReLU into a padded
// fp16 D, a column-major D.
TEST(Fp8SplitK, FusedEpilogueAppliedOnceAfterTheSum) {
  REQUIRE_SM90();
  for (ScaleMode scales : kEveryScaleMode) {
    GemmDesc d = fp8_desc(64, 576, 7168, scales);
    d.alpha = 0.75f;
    d.epilogue.bias = BiasMode::kPerColumn;
    d.epilogue.activation = Activation::kGeluTanh;
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(d, 9100, SplitRequest{}));
    GemmDesc swiglu = fp8_desc(64, 1536, 7168, scales);
    swiglu.epilogue.activation = Activation::kSwiGLU;
    swiglu.d.ld = 768;
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(swiglu, 9101, SplitRequest{}));
    GemmDesc in_place = fp8_desc(64, 576, 7168, scales, DataType::kF32);
    in_place.beta = -1.0f;
    in_place.c = in_place.d;
    in_place.epilogue.bias = BiasMode::kPerRow;
    in_place.epilogue.bias_dtype = DataType::kBF16;
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(in_place, 9102, SplitRequest{}, true));
    GemmDesc residual = fp8_desc(77, 500, 7168, scales, DataType::kF16);
    residual.d.ld = 512;
    residual.c = residual.d;
    residual.beta = 0.5f;
    residual.alpha = -1.25f;
    residual.epilogue.activation = Activation::kReLU;
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(residual, 9103, SplitRequest{}));
    GemmDesc column = fp8_desc(64, 576, 7168, scales);
    column.d.order = Order::kColMajor;
    column.d.ld = 72;
    column.epilogue.activation = Activation::kSiLU;
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(column, 9104, SplitRequest{}));
  }
}

// Forced slice counts, from 2 to the most K allows, on shapes off the tile grid; and the
// same problems forced unsplit.
// The slices on each fitted width (forced: 4 slices of 4 K blocks), with row/column scales
// and a per-column bias applied once after the sum.
TEST(Fp8SplitK, FittedTilesForTheSlices) {
  REQUIRE_SM90();
  for (int i = 0; i < anvil::detail::kFp8Variants; ++i) {
    if (!anvil::detail::fp8_fit_variant(static_cast<Fp8Variant>(i))) continue;
    GemmDesc d = fp8_desc(130, 352, 2048, ScaleMode::kRowColumn);
    d.epilogue.bias = BiasMode::kPerColumn;
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(d, 9300 + uint64_t(i), SplitRequest{SplitRequest::kForced, 4}, false,
                                                nullptr, SIZE_MAX, 4, i));
  }
}

TEST(Fp8SplitK, ForcedSlicesAndForcedWholeTiles) {
  REQUIRE_SM90();
  for (ScaleMode scales : kEveryScaleMode) {
    for (int slices : {2, 4, 7, 14}) {
      ASSERT_NO_FATAL_FAILURE(
          run_split_and_check(fp8_desc(33, 300, 7168, scales), 9200 + uint64_t(slices), {SplitRequest::kForced, slices}));
    }
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(fp8_desc(300, 700, 2048, scales, DataType::kF32), 9210,
                                                {SplitRequest::kForced, 4}));
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(fp8_desc(64, 576, 7168, scales), 9211, {SplitRequest::kNever, 1}));
  }
  // The mixed e5m2 pairs on their one configuration.
  ASSERT_NO_FATAL_FAILURE(run_split_and_check(
      fp8_desc(64, 576, 7168, ScaleMode::kRowColumn, DataType::kBF16, DataType::kE5M2, DataType::kE4M3), 9220,
      {SplitRequest::kForced, 8}));
}

// Bitwise reproducible: the slice count depends on the shape alone and the sum adds the
// slices in slice order, so two runs on the same inputs give the same bits.
TEST(Fp8SplitK, TwoRunsAreBitwiseEqual) {
  REQUIRE_SM90();
  for (ScaleMode scales : kEveryScaleMode) {
    GemmDesc d = fp8_desc(64, 1536, 7168, scales, DataType::kF32);
    d.epilogue.bias = BiasMode::kPerColumn;
    std::vector<unsigned char> first, second;
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(d, 9300, SplitRequest{}, false, &first));
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(d, 9300, SplitRequest{}, false, &second));
    ASSERT_EQ(first.size(), second.size());
    EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size()), 0) << "scales " << anvil::to_string(scales);
  }
}

// With less workspace than the partials need (or none) the call still runs, on whole
// tiles, as sm90-gemm's split-K does.
TEST(Fp8SplitK, TooSmallWorkspaceRunsWholeTiles) {
  REQUIRE_SM90();
  for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kBlock128}) {
    const GemmDesc d = fp8_desc(64, 576, 7168, scales);
    PlanOverrides sm90_fp8;
    sm90_fp8.family = KernelFamily::kSm90Fp8;
    const size_t need = anvil::detail::workspace_size(d, nullptr, &sm90_fp8);
    ASSERT_GT(need, 0u);
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(d, 9400, SplitRequest{}, false, nullptr, need - 16, 1));
    ASSERT_NO_FATAL_FAILURE(run_split_and_check(d, 9401, SplitRequest{}, false, nullptr, 0, 1));
  }
}

// ---- a warpgroup with no rows under a slow epilogue (notes/no-rows-phase-lap.md) ----
//
// A consumer warpgroup whose rows all lie past M frees each stage without multiplying; if
// its warps are not held level, a warp that a slow epilogue (C read per element, a
// column-major D) left a ring lap behind waits forever. `anvil-fuzz --fp8 --seed 5
// --only 67` (3604 x 3978 x 4112, block scales, column-major fp16 D, C = D, beta = -1,
// GELU) hung that way. The tests below hold that problem and variants that change one
// thing each (D's layout, C, the activation, the scale mode, the tile count, the cluster
// axis) at a size that gives every CTA several tiles (1060 rows: the last row of tiles has
// 36, and a pair along M pads a whole CTA). Their own suite, so that a run can take them
// one at a time under a timeout (--gtest_filter='Fp8ColumnMajorInPlace.*').

GemmDesc column_major_in_place(int64_t m, int64_t n, int64_t k, Order d_order, bool with_c, Activation act) {
  GemmDesc d = fp8_desc(m, n, k, ScaleMode::kBlock128, DataType::kF16);
  d.d.order = d_order;
  d.d.ld = d_order == Order::kRowMajor ? n : m;
  d.epilogue.activation = act;
  if (with_c) {
    d.beta = -1.0f;
    d.c = d.d;
  }
  return d;
}

TEST(Fp8ColumnMajorInPlace, TheFuzzProblem) {
  REQUIRE_SM90();
  anvil_test::Stream stream;
  CHECK_CUDA(stream.create());
  anvil::verify::FuzzRunner runner(stream.handle);
  const anvil::verify::FuzzProblem problem =
      anvil::verify::make_fp8_fuzz_problem(5, 67, anvil::verify::default_fuzz_limits());
  const anvil::verify::FuzzOutcome outcome = runner.run(problem, nullptr);
  EXPECT_EQ(outcome.result, anvil::verify::FuzzResult::kPassed)
      << anvil::verify::describe(problem) << ": " << outcome.kernel << ": " << outcome.message;
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithCAndGelu) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1060, 4000, 1024, Order::kColMajor, true, Activation::kGeluErf), 7000, -1,
                true);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorPlain) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1060, 4000, 1024, Order::kColMajor, false, Activation::kIdentity), 7001);
}

TEST(Fp8ColumnMajorInPlace, RowMajorWithCAndGelu) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1060, 4000, 1024, Order::kRowMajor, true, Activation::kGeluErf), 7002, -1, true);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithCOnly) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1060, 4000, 1024, Order::kColMajor, true, Activation::kIdentity), 7004, -1,
                true);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithGeluOnly) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1060, 4000, 1024, Order::kColMajor, false, Activation::kGeluErf), 7005);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithCAndGeluTensorScales) {
  REQUIRE_SM90();
  GemmDesc d = column_major_in_place(1060, 4000, 1024, Order::kColMajor, true, Activation::kGeluErf);
  d.scales = ScaleMode::kTensor;
  run_and_check(d, 7006, -1, true);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithCAndGeluOneTile) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(128, 128, 128, Order::kColMajor, true, Activation::kGeluErf), 7007, -1, true);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithCAndGeluOneWave) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(256, 2048, 512, Order::kColMajor, true, Activation::kGeluErf), 7008, -1, true);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithSeparateCAndGelu) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1060, 4000, 1024, Order::kColMajor, true, Activation::kGeluErf), 7009);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithCAndGeluPairsAlongM) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1060, 4000, 1024, Order::kColMajor, true, Activation::kGeluErf), 7010,
                static_cast<int>(anvil::detail::Fp8Variant::kBlockPair), true);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithCAndGeluPairsAlongN) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1060, 4000, 1024, Order::kColMajor, true, Activation::kGeluErf), 7011,
                static_cast<int>(anvil::detail::Fp8Variant::kBlockPairN), true);
}

TEST(Fp8ColumnMajorInPlace, ColumnMajorWithCAndGeluEveryWarpgroupHasRows) {
  REQUIRE_SM90();
  run_and_check(column_major_in_place(1100, 4000, 1024, Order::kColMajor, true, Activation::kGeluErf), 7003, -1,
                true);
}

// ---- quantization (anvil/fp8.h) ----

// The e4m3 code nearest to v, ties to the even code (the mantissa's last bit), saturating
// to +-448: cvt.rn.satfinite by exhaustive search over the finite codes.
uint8_t host_e4m3(float v) {
  if (std::isnan(v)) return 0x7F;
  uint8_t best = 0;
  double best_err = 1e300;
  for (int code = 0; code < 256; ++code) {
    const double x = anvil::verify::decode_e4m3(uint8_t(code));
    if (std::isnan(x)) continue;
    const double err = std::fabs(x - double(std::clamp(v, -448.0f, 448.0f)));
    if (err < best_err || (err == best_err && (code & 1) == 0 && (best & 1) == 1)) best = uint8_t(code), best_err = err;
  }
  // A value that rounds to zero keeps its sign, as cvt.rn does: -0 is 0x80.
  if (anvil::verify::decode_e4m3(best) == 0.0 && std::signbit(v)) best = 0x80;
  return best;
}

// X: rows of different magnitudes (2^-6 .. 2^6), bf16, row-major with padding.
void make_activations(anvil_test::DeviceBuffer& x, std::vector<unsigned char>& host, int64_t m, int64_t k, int64_t ldx) {
  CHECK_CUDA(x.allocate(size_t(m * ldx) * 2));
  CHECK_CUDA(anvil::verify::fill_random(x.get(), DataType::kBF16, m * ldx, 9000, 1.0f, nullptr));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(x, host));
  for (int64_t i = 0; i < m; ++i) {
    const double row_scale = std::ldexp(1.0, int(i % 13) - 6);
    for (int64_t j = 0; j < k; ++j) {
      const size_t at = size_t(i * ldx + j) * 2;
      uint16_t bits;
      std::memcpy(&bits, &host[at], 2);
      // Zero one whole block of one row: its scale must be 1 and its values 0.
      const double v = (i == 1 && j < 128) ? 0.0 : anvil_test::from_bf16_bits(bits) * row_scale;
      bits = anvil_test::to_bf16_bits(float(v));
      std::memcpy(&host[at], &bits, 2);
    }
  }
  ASSERT_NO_FATAL_FAILURE(anvil_test::upload(x, host));
}

float host_bf16(const std::vector<unsigned char>& host, int64_t index) {
  uint16_t bits;
  std::memcpy(&bits, &host[size_t(index) * 2], 2);
  return float(anvil_test::from_bf16_bits(bits));
}

TEST(Fp8Quantize, BlocksFollowTheRule) {
  REQUIRE_SM90();
  constexpr int64_t kM = 37, kK = 400, kLdx = 416, kLdq = 432;  // K: three whole blocks and a 16-wide one
  anvil_test::DeviceBuffer x, q, scales;
  std::vector<unsigned char> x_host;
  ASSERT_NO_FATAL_FAILURE(make_activations(x, x_host, kM, kK, kLdx));
  const int64_t blocks = (kK + 127) / 128;
  CHECK_CUDA(q.allocate(size_t(kM * kLdq)));
  CHECK_CUDA(scales.allocate(size_t(blocks * kM) * 4));
  CHECK_CUDA(cudaMemset(q.get(), 0xFF, q.bytes()));
  anvil::Diagnostic diag;
  ASSERT_EQ(anvil::quantize_fp8_blocks(x.get(), DataType::kBF16, kLdx, q.get(), DataType::kE4M3, kLdq, scales.as_float(),
                                       kM, kK, nullptr, &diag),
            Status::kSuccess)
      << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> q_host, s_host;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(q, q_host));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(scales, s_host));
  int64_t wrong = 0;
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t b = 0; b < blocks; ++b) {
      float amax = 0;
      for (int64_t j = b * 128; j < std::min(kK, b * 128 + 128); ++j) amax = std::max(amax, std::fabs(host_bf16(x_host, i * kLdx + j)));
      const float want_scale = amax > 0 ? amax / 448.0f : 1.0f;
      float got_scale;
      std::memcpy(&got_scale, &s_host[size_t(b * kM + i) * 4], 4);
      ASSERT_EQ(got_scale, want_scale) << "scale of row " << i << " block " << b << " (M-major index " << b * kM + i << ")";
      for (int64_t j = b * 128; j < std::min(kK, b * 128 + 128); ++j) {
        const uint8_t want = host_e4m3(host_bf16(x_host, i * kLdx + j) / want_scale);
        const uint8_t got = q_host[size_t(i * kLdq + j)];
        if (got != want && ++wrong <= 5) {
          ADD_FAILURE() << "Q[" << i << "][" << j << "] = 0x" << std::hex << int(got) << ", want 0x" << int(want)
                        << std::dec << " (x = " << host_bf16(x_host, i * kLdx + j) << ", scale " << want_scale << ")";
        }
      }
      for (int64_t j = kK; j < kLdq && b == 0; ++j) {
        EXPECT_EQ(q_host[size_t(i * kLdq + j)], 0xFF) << "padding of Q row " << i << " column " << j << " written";
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "elements off the rule";
}

TEST(Fp8Quantize, TensorFollowsTheRule) {
  REQUIRE_SM90();
  constexpr int64_t kM = 50, kK = 256, kLdx = 272;
  anvil_test::DeviceBuffer x, q, scale;
  std::vector<unsigned char> x_host;
  ASSERT_NO_FATAL_FAILURE(make_activations(x, x_host, kM, kK, kLdx));
  CHECK_CUDA(q.allocate(size_t(kM * kK)));
  CHECK_CUDA(scale.allocate(4));
  anvil::Diagnostic diag;
  ASSERT_EQ(anvil::quantize_fp8_tensor(x.get(), DataType::kBF16, kLdx, q.get(), DataType::kE4M3, kK, scale.as_float(), kM,
                                       kK, nullptr, &diag),
            Status::kSuccess)
      << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> q_host, s_host;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(q, q_host));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(scale, s_host));
  float amax = 0;
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kK; ++j) amax = std::max(amax, std::fabs(host_bf16(x_host, i * kLdx + j)));
  float got_scale;
  std::memcpy(&got_scale, s_host.data(), 4);
  ASSERT_EQ(got_scale, amax / 448.0f);
  int64_t wrong = 0;
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kK; ++j) {
      const uint8_t want = host_e4m3(host_bf16(x_host, i * kLdx + j) / got_scale);
      if (q_host[size_t(i * kK + j)] != want && ++wrong <= 5) {
        ADD_FAILURE() << "Q[" << i << "][" << j << "] = " << int(q_host[size_t(i * kK + j)]) << ", want " << int(want);
      }
    }
  }
  EXPECT_EQ(wrong, 0);
  // A second call starts over (the scale is cleared, not max-ed with the last amax).
  std::vector<unsigned char> small(x_host);
  for (size_t e = 0; e + 1 < small.size(); e += 2) {
    uint16_t bits;
    std::memcpy(&bits, &small[e], 2);
    bits = anvil_test::to_bf16_bits(float(anvil_test::from_bf16_bits(bits) / 1024.0));
    std::memcpy(&small[e], &bits, 2);
  }
  ASSERT_NO_FATAL_FAILURE(anvil_test::upload(x, small));
  ASSERT_EQ(anvil::quantize_fp8_tensor(x.get(), DataType::kBF16, kLdx, q.get(), DataType::kE4M3, kK, scale.as_float(), kM,
                                       kK, nullptr, &diag),
            Status::kSuccess);
  float second;
  CHECK_CUDA(cudaMemcpy(&second, scale.get(), 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(second, got_scale / 1024.0f);
}

// Quantized activations straight into the block-scaled GEMM (their scales are its A
// scales as written): the kernel against the reference of the dequantized operands.
TEST(Fp8Quantize, FeedsTheBlockScaledGemm) {
  REQUIRE_SM90();
  constexpr int64_t kM = 96, kN = 384, kK = 1024;
  GemmDesc desc = fp8_desc(kM, kN, kK, ScaleMode::kBlock128, DataType::kF32);
  anvil_test::Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, 9100));
  anvil_test::DeviceBuffer x;
  std::vector<unsigned char> x_host;
  ASSERT_NO_FATAL_FAILURE(make_activations(x, x_host, kM, kK, kK));
  anvil::Diagnostic diag;
  ASSERT_EQ(anvil::quantize_fp8_blocks(x.get(), DataType::kBF16, kK, op.a.get(), DataType::kE4M3, kK,
                                       op.scale_a.as_float(), kM, kK, nullptr, &diag),
            Status::kSuccess)
      << diag.message;
  ASSERT_EQ(anvil::gemm(desc, op.args, &diag), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(anvil::verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
  // The scales of X span 2^-6..2^6 (make_activations): the typical-magnitude term of the
  // tolerance is set for |x| <= 1, so compare with the relative bound only.
  auto tol = anvil::verify::tolerance_for(desc);
  const auto cmp = anvil::verify::compare(desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_LT(cmp.rel_frobenius, tol.rel_frobenius) << anvil_test::describe(cmp) << "; " << worst_element(op, cmp);
  EXPECT_EQ(cmp.nonfinite, 0);
}

// ---- sm90-fp8-decode (fp8_decode_plan.h, docs/fp8.md "Decode") ----
//
// The decode kernel forced: swap-AB with 128 weight rows per CTA, tokens on wgmma's N side
// (8-, 16-, 32-, 64- and 128-token tiles), 128-wide K stages, K split across a cluster and
// summed in rank order, the per-tensor or row/column scales applied once to the total.
// Each case compares D with the reference of the dequantized operands at sm90-fp8's
// tolerances and checks D's padding (poisoned outputs: a token row or feature the kernel
// missed shows as NaN). Shapes are off the grid: N not a multiple of 128, K a multiple of
// 16 but not of 128 (the last stage partly TMA's zeros).

constexpr ScaleMode kDecodeScaleModes[] = {ScaleMode::kNone, ScaleMode::kTensor, ScaleMode::kRowColumn};

// Runs desc on sm90-fp8-decode (forced, with the K split forced when splits > 0) and checks
// it; the plan and D's bytes come back when asked.
void run_decode_and_check(const GemmDesc& desc, uint64_t seed, int splits = 0, bool c_is_d = false,
                          LaunchPlan* ran = nullptr, std::vector<unsigned char>* d_bytes = nullptr) {
  SCOPED_TRACE(anvil_test::describe(desc) + ", sm90-fp8-decode" +
               (splits > 0 ? ", K split " + std::to_string(splits) : "") + (c_is_d ? ", C = D" : ""));
  PlanOverrides overrides;
  overrides.family = KernelFamily::kSm90Fp8Decode;
  overrides.decode_splits = splits;
  LaunchPlan plan;
  ASSERT_NO_FATAL_FAILURE(run_family_and_check(desc, seed, overrides, c_is_d, &plan, d_bytes));
  EXPECT_EQ(plan.decode.token_tile, anvil::detail::fp8_decode_token_tile(desc.m));
  EXPECT_EQ(plan.decode.k_block, 128);
  if (splits > 0) {
    EXPECT_EQ(plan.decode.splits, splits) << plan.split_reason;
  }
  if (ran != nullptr) *ran = plan;
}

// Every token tile (1-128 tokens, and 300: three 128-token tiles), every scale mode, on a
// ragged weight (1000 features, K = 1040), with the planner's split.
TEST(Fp8DecodeKernel, TokenCountsAndScaleModes) {
  REQUIRE_SM90();
  for (int64_t m : {1, 7, 16, 33, 64, 100, 128, 300}) {
    for (ScaleMode scales : kDecodeScaleModes) {
      ASSERT_NO_FATAL_FAILURE(run_decode_and_check(fp8_desc(m, 1000, 1040, scales), 10000 + uint64_t(m)));
    }
  }
}

// Every output dtype, on each token tile's kernel.
TEST(Fp8DecodeKernel, OutputDtypes) {
  REQUIRE_SM90();
  for (int64_t m : {3, 16, 32, 64, 128}) {
    for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
      for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kRowColumn}) {
        ASSERT_NO_FATAL_FAILURE(run_decode_and_check(fp8_desc(m, 520, 784, scales, out), 10100 + uint64_t(m)));
      }
    }
  }
}

// Every K split 1-8 (K = 2064: 17 k-tiles, the last 16 values wide), unsplit and split
// reductions, at a streaming tile and at the 128-token tile.
TEST(Fp8DecodeKernel, EveryForcedSplit) {
  REQUIRE_SM90();
  for (int splits = 1; splits <= 8; ++splits) {
    for (int64_t m : {5, 100}) {
      for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kRowColumn}) {
        ASSERT_NO_FATAL_FAILURE(
            run_decode_and_check(fp8_desc(m, 700, 2064, scales, DataType::kF32), 10200 + uint64_t(splits), splits));
      }
    }
  }
}

// DeepSeek-V3 block scales on the decode kernel: each token tile (the streaming ones up to
// 32 tokens, the one-per-SM 64- and 128-token ones, and 300 tokens in three 128-token
// tiles), token counts not multiples of 4 (the scale line's boxes start on 16-byte boundaries), K off
// the 128 grid, every forced K split (the ranks' K ranges start at any block), every
// output dtype, SwiGLU with a bias, and a scale_a 1-3 floats past a 16-byte boundary.
TEST(Fp8DecodeKernel, BlockScales) {
  REQUIRE_SM90();
  for (int64_t m : {1, 3, 8, 13, 16, 31, 32, 33, 64, 100, 128, 300}) {
    for (int splits : {0, 1, 3, 8}) {
      ASSERT_NO_FATAL_FAILURE(
          run_decode_and_check(fp8_desc(m, 1000, 1040, ScaleMode::kBlock128), 10500 + uint64_t(m), splits));
    }
  }
  for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    ASSERT_NO_FATAL_FAILURE(run_decode_and_check(fp8_desc(7, 520, 2064, ScaleMode::kBlock128, out), 10510));
    ASSERT_NO_FATAL_FAILURE(run_decode_and_check(fp8_desc(77, 520, 2064, ScaleMode::kBlock128, out), 10512));
  }
  GemmDesc swiglu = fp8_desc(5, 1536, 1040, ScaleMode::kBlock128);
  swiglu.epilogue.activation = Activation::kSwiGLU;
  swiglu.epilogue.bias = BiasMode::kPerColumn;
  swiglu.d.ld = 768;
  ASSERT_NO_FATAL_FAILURE(run_decode_and_check(swiglu, 10511, 2));
  // scale_a shifted off its 16-byte boundary: the scale map starts below it.
  const GemmDesc desc = fp8_desc(9, 384, 640, ScaleMode::kBlock128);
  for (int shift = 1; shift <= 3; ++shift) {
    SCOPED_TRACE(shift);
    anvil_test::Operands op;
    ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, 10520 + uint64_t(shift)));
    anvil_test::DeviceBuffer shifted;
    const size_t floats = size_t(anvil::verify::scale_elements_a(desc));
    CHECK_CUDA(shifted.allocate((floats + 4) * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(shifted.as_float() + shift, op.args.scale_a, floats * sizeof(float), cudaMemcpyDeviceToDevice));
    op.args.scale_a = shifted.as_float() + shift;
    CHECK_CUDA(anvil::verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
    PlanOverrides forced;
    forced.family = KernelFamily::kSm90Fp8Decode;
    anvil::Diagnostic diag;
    ASSERT_EQ(anvil::detail::gemm(desc, op.args, &forced, &diag), Status::kSuccess) << diag.message;
    CHECK_CUDA(cudaDeviceSynchronize());
    const auto cmp =
        anvil::verify::compare(desc, op.d.get(), op.ref.as_float(), anvil::verify::tolerance_for(desc), nullptr);
    EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp);
  }
}

// Decode-sized problems of model widths, and a few hundred tokens that sm90-fp8 would split
// K for (two 128-token tiles; 129 tokens: the last tile moved back to end at M), through
// the planner: the rule takes the decode kernel there (fp8_decode_plan.h), and the result
// matches.
TEST(Fp8DecodeKernel, PlannedOnModelShapes) {
  REQUIRE_SM90();
  const int64_t shapes[][3] = {{1, 8192, 8192}, {16, 10240, 8192}, {64, 7168, 2048}, {255, 4096, 11008}, {129, 4096, 4096}};
  for (const auto& shape : shapes) {
    for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kRowColumn}) {
      const GemmDesc desc = fp8_desc(shape[0], shape[1], shape[2], scales);
      SCOPED_TRACE(anvil_test::describe(desc));
      anvil_test::Operands op;
      ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, 10300 + uint64_t(shape[0])));
      CHECK_CUDA(anvil::verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
      anvil::Diagnostic diag;
      LaunchPlan ran;
      ASSERT_EQ(anvil::detail::gemm(desc, op.args, nullptr, &diag, &ran), Status::kSuccess) << diag.message;
      EXPECT_EQ(ran.family, KernelFamily::kSm90Fp8Decode) << ran.family_reason;
      EXPECT_STREQ(anvil::dispatch_name(desc), "sm90-fp8-decode");
      CHECK_CUDA(cudaDeviceSynchronize());
      const auto cmp =
          anvil::verify::compare(desc, op.d.get(), op.ref.as_float(), anvil::verify::tolerance_for(desc), nullptr);
      EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp) << "; " << worst_element(op, cmp);
      anvil_test::expect_padding_untouched(op);
    }
  }
}

// The fused epilogue after the scaled sum, split and unsplit: alpha with a column bias and
// GELU, SwiGLU (its up rows' column scales 64 features on), a row bias with ReLU and
// beta * C, C = D in place, a padded fp16 D, a column-major D.
TEST(Fp8DecodeKernel, FusedEpilogues) {
  REQUIRE_SM90();
  for (ScaleMode scales : kDecodeScaleModes) {
    for (int splits : {1, 3}) {
      GemmDesc gelu = fp8_desc(33, 1000, 1040, scales);
      gelu.alpha = 0.75f;
      gelu.epilogue.bias = BiasMode::kPerColumn;
      gelu.epilogue.activation = Activation::kGeluTanh;
      ASSERT_NO_FATAL_FAILURE(run_decode_and_check(gelu, 10400, splits));
      GemmDesc swiglu = fp8_desc(16, 1536, 1040, scales);
      swiglu.epilogue.activation = Activation::kSwiGLU;
      swiglu.epilogue.bias = BiasMode::kPerColumn;
      swiglu.d.ld = 768;
      ASSERT_NO_FATAL_FAILURE(run_decode_and_check(swiglu, 10401, splits));
      GemmDesc residual = fp8_desc(77, 500, 784, scales, DataType::kF16);
      residual.d.ld = 512;
      residual.c = residual.d;
      residual.beta = 0.5f;
      residual.alpha = -1.25f;
      residual.epilogue.bias = BiasMode::kPerRow;
      residual.epilogue.bias_dtype = DataType::kBF16;
      residual.epilogue.activation = Activation::kReLU;
      ASSERT_NO_FATAL_FAILURE(run_decode_and_check(residual, 10402, splits));
      GemmDesc in_place = fp8_desc(8, 700, 1040, scales, DataType::kF32);
      in_place.beta = -1.0f;
      in_place.c = in_place.d;
      ASSERT_NO_FATAL_FAILURE(run_decode_and_check(in_place, 10403, splits, true));
      GemmDesc column = fp8_desc(64, 576, 1040, scales);
      column.d.order = Order::kColMajor;
      column.d.ld = 72;
      column.epilogue.activation = Activation::kSiLU;
      ASSERT_NO_FATAL_FAILURE(run_decode_and_check(column, 10404, splits));
    }
  }
}

// Batched, with the per-tensor scale every matrix shares.
TEST(Fp8DecodeKernel, BatchedTensorScales) {
  REQUIRE_SM90();
  for (int64_t m : {4, 100}) {
    GemmDesc d = fp8_desc(m, 384, 1040, ScaleMode::kTensor);
    d.batch = 3;
    d.a.batch_stride = m * 1040;
    d.b.batch_stride = 384 * 1040;
    d.d.batch_stride = m * 384;
    ASSERT_NO_FATAL_FAILURE(run_decode_and_check(d, 10500 + uint64_t(m)));
  }
}

// Bitwise reproducible: the cluster adds the split's partials in rank order whichever CTA
// finishes first, so two runs of a split plan give the same bits.
TEST(Fp8DecodeKernel, SplitRunsAreBitwiseEqual) {
  REQUIRE_SM90();
  for (ScaleMode scales : kDecodeScaleModes) {
    for (int64_t m : {16, 100}) {
      GemmDesc d = fp8_desc(m, 1000, 4096, scales, DataType::kF32);
      d.epilogue.bias = BiasMode::kPerColumn;
      std::vector<unsigned char> first, second;
      ASSERT_NO_FATAL_FAILURE(run_decode_and_check(d, 10600, 4, false, nullptr, &first));
      ASSERT_NO_FATAL_FAILURE(run_decode_and_check(d, 10600, 4, false, nullptr, &second));
      ASSERT_EQ(first.size(), second.size());
      EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size()), 0)
          << m << " tokens, scales " << anvil::to_string(scales);
    }
  }
}

// The scales are read at run time: a second call with other scales at the same addresses
// gives the new result.
TEST(Fp8DecodeKernel, ScalesReadAtRunTime) {
  REQUIRE_SM90();
  for (ScaleMode scales : {ScaleMode::kTensor, ScaleMode::kRowColumn}) {
    const GemmDesc desc = fp8_desc(16, 1000, 1040, scales);
    SCOPED_TRACE(anvil_test::describe(desc));
    anvil_test::Operands op;
    ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, 10700));
    PlanOverrides overrides;
    overrides.family = KernelFamily::kSm90Fp8Decode;
    anvil::Diagnostic diag;
    ASSERT_EQ(anvil::detail::gemm(desc, op.args, &overrides, &diag), Status::kSuccess) << diag.message;
    CHECK_CUDA(anvil::verify::fill_scales(op.scale_a.as_float(), anvil::verify::scale_elements_a(desc), 10701, nullptr));
    CHECK_CUDA(anvil::verify::fill_scales(op.scale_b.as_float(), anvil::verify::scale_elements_b(desc), 10702, nullptr));
    CHECK_CUDA(anvil::verify::poison(op.d.get(), desc.d.dtype, op.d_elements(), nullptr));
    ASSERT_EQ(anvil::detail::gemm(desc, op.args, &overrides, &diag), Status::kSuccess) << diag.message;
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(anvil::verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
    const auto cmp =
        anvil::verify::compare(desc, op.d.get(), op.ref.as_float(), anvil::verify::tolerance_for(desc), nullptr);
    EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp) << "; " << worst_element(op, cmp);
  }
}

// The kernel by name, as `anvil-fuzz --fp8 --kernel sm90-fp8-decode` runs it: random FP8
// problems (every scale mode and pair, random epilogues, padded and offset operands); each
// passes or is refused (block scales, the e5m2 pairs, an unaligned operand), and some pass.
TEST(Fp8DecodeKernel, NamedKernelOnFuzzProblems) {
  REQUIRE_SM90();
  anvil_test::Stream stream;
  CHECK_CUDA(stream.create());
  anvil::verify::FuzzRunner runner(stream.handle);
  const anvil::verify::FuzzLimits limits = anvil::verify::small_fuzz_limits();
  int passed = 0;
  for (int64_t i = 0; i < 150; ++i) {
    const anvil::verify::FuzzProblem problem = anvil::verify::make_fp8_fuzz_problem(11, i, limits);
    const anvil::verify::FuzzOutcome outcome = runner.run(problem, "sm90-fp8-decode");
    EXPECT_TRUE(outcome.result == anvil::verify::FuzzResult::kPassed ||
                outcome.result == anvil::verify::FuzzResult::kRefused)
        << anvil::verify::describe(problem) << ": " << outcome.kernel << ": " << outcome.message << " "
        << anvil::verify::describe(outcome.comparison);
    ASSERT_FALSE(outcome.context_lost) << "the CUDA context is unusable after " << anvil::verify::describe(problem);
    passed += outcome.result == anvil::verify::FuzzResult::kPassed ? 1 : 0;
  }
  EXPECT_GT(passed, 0);
}

}  // namespace
