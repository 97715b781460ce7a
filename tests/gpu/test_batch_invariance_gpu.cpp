// Batch invariance: with GemmDesc::batch_invariant, a row's output bits do not depend on M
// or on which plan runs it. Every plan the mode may pick sums each output's K in one order
// (docs/planner.md): where the weight's split (batch_invariant_k_split) is 1, sm90-gemm's
// whole tiles in any configuration and the TMA-fed decode kernels unsplit; where it is
// s > 1, sm90-decode's cluster of s, sm90-decode-r64's and sm90-gemm's folded-slice
// configurations (each CTA summing the s slices in turn) and sm90-gemm's split-K in s
// slices. These tests run
// the first rows of one set of operands at many M, and each such plan forced through the
// planner's overrides, and compare the rows bitwise with those of the largest call.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "gpu/gpu_support.h"
#include "plan/launch.h"

namespace {

using anvil::DataType;
using anvil::Diagnostic;
using anvil::GemmDesc;
using anvil::Status;
using anvil::detail::KernelFamily;
using anvil::detail::LaunchPlan;
using anvil::detail::PlanOverrides;
using anvil::detail::Sm90Variant;
namespace verify = anvil::verify;

constexpr int64_t kMaxRows = 4096;
constexpr int64_t kRowCounts[] = {1, 7, 64, 65, 128, 255, 256, 300, 1000, 1025, kMaxRows};

struct InvarianceCase {
  int64_t n, k;
  DataType dtype;
  bool epilogue;  // per-column bias + GELU
  std::string name;
};

std::vector<InvarianceCase> cases() {
  std::vector<InvarianceCase> out;
  // Square, a wide weight, and ragged N and K (N not a multiple of any tile width; K not a
  // multiple of the 64-wide K step): unsplit. An odd K, whose operands are repacked (a decode
  // kernel on the copies at few tokens, sm90-gemm on them beyond). Narrow weights the mode
  // splits in 8: a long K (and a ragged N), an MLA down-projection (14 k-tiles per slice), a
  // router (8 per slice), a K whose slices are uneven (100 k-tiles: 12 and 13) and one whose
  // last k-tile is partial (65 k-tiles: 4104 = 64 x 64 + 8). Each runs
  // sm90-decode's cluster at few tokens and sm90-gemm's folded slices or split-K beyond.
  const std::pair<int64_t, int64_t> shapes[] = {{4096, 4096}, {10240, 2048}, {3000, 4104}, {1000, 520},
                                                {1021, 4093}, {1024, 65536}, {600, 16384}, {576, 7168},
                                                {128, 4096},  {1600, 6400}, {1000, 4104}};
  for (auto [n, k] : shapes) {
    for (DataType dt : {DataType::kBF16, DataType::kF16}) {
      for (bool epilogue : {false, true}) {
        std::string name = "n";
        name += std::to_string(n);
        name += "_k";
        name += std::to_string(k);
        name += dt == DataType::kBF16 ? "_bf16" : "_fp16";
        if (epilogue) name += "_bias_gelu";
        out.push_back({n, k, dt, epilogue, name});
      }
    }
  }
  return out;
}

GemmDesc desc_for(const InvarianceCase& c, int64_t m) {
  GemmDesc d = anvil::linear_desc(m, c.n, c.k, c.dtype, c.dtype);
  d.batch_invariant = true;
  if (c.epilogue) {
    d.epilogue.bias = anvil::BiasMode::kPerColumn;
    d.epilogue.bias_dtype = c.dtype;
    d.epilogue.activation = anvil::Activation::kGeluTanh;
  }
  return d;
}

// Runs the first m rows of op's operands (through overrides, or the automatic choice when
// null) into a fresh, poisoned D; returns D's bytes and the plan that ran.
void run_rows(const anvil_test::Operands& op, const GemmDesc& desc, const PlanOverrides* overrides,
              std::vector<unsigned char>& out, LaunchPlan* ran) {
  anvil_test::DeviceBuffer d, workspace;
  const int64_t elements = desc.m * desc.n;
  CHECK_CUDA(d.allocate(size_t(elements) * verify::dtype_bytes(desc.d.dtype)));
  CHECK_CUDA(verify::poison(d.get(), desc.d.dtype, elements, nullptr));
  anvil::GemmArgs args;
  args.a = op.a.get(), args.b = op.b.get(), args.d = d.get(), args.bias = op.bias.get();
  const size_t ws = anvil::detail::workspace_size(desc, nullptr, overrides);
  if (ws > 0) {
    CHECK_CUDA(workspace.allocate(ws));
    args.workspace = workspace.get();
    args.workspace_bytes = ws;
  }
  Diagnostic diag;
  ASSERT_EQ(anvil::detail::gemm(desc, args, overrides, &diag, ran), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(d, out));
}

// The rows every other call must reproduce: the largest call, checked against the reference.
struct Reference {
  anvil_test::Operands op;
  std::vector<unsigned char> rows;
};

void make_reference(const InvarianceCase& c, Reference& ref) {
  const GemmDesc full = desc_for(c, kMaxRows);
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(ref.op, full, 5150 + c.n + c.k));
  CHECK_CUDA(verify::reference_gemm(full, ref.op.args, ref.op.ref.as_float(), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  Diagnostic diag;
  ASSERT_EQ(anvil::gemm(full, ref.op.args, &diag), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto cmp = verify::compare(full, ref.op.d.get(), ref.op.ref.as_float(), verify::tolerance_for(full), nullptr);
  ASSERT_GE(cmp.count, 0) << "the comparison itself failed (CUDA error)";
  ASSERT_TRUE(cmp.passed) << anvil_test::describe(full) << ": " << anvil_test::describe(cmp);
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(ref.op.d, ref.rows));
}

void expect_same_rows(const std::vector<unsigned char>& rows, const Reference& ref, const std::string& what) {
  ASSERT_LE(rows.size(), ref.rows.size());
  if (std::memcmp(rows.data(), ref.rows.data(), rows.size()) == 0) return;
  size_t first = 0;
  while (first < rows.size() && rows[first] == ref.rows[first]) ++first;
  ADD_FAILURE() << what << ": rows differ from the " << kMaxRows << "-row call's, first at byte " << first;
}

// The K split every plan of the mode must use for this problem's weight, with the kernels'
// own judgement of the operands (an odd K is not sm90-decode's, so its weight is unsplit).
int weight_split(const GemmDesc& desc) {
  anvil::detail::CallFacts facts;
  for (int f = 0; f < anvil::detail::kKernelFamilies; ++f) {
    facts.accepts[f] = anvil::detail::decode_family_accepts(static_cast<KernelFamily>(f), desc);
  }
  return anvil::detail::batch_invariant_k_split(desc, anvil::detail::current_device_info(), facts);
}

std::string plan_text(const LaunchPlan& p) {
  std::string s = anvil::detail::family_name(p.family);
  if (p.family == KernelFamily::kSm90Gemm) s += std::string("/") + anvil::detail::variant_name(p.variant);
  if (p.row_split()) s += std::string(" + ") + anvil::detail::family_name(p.tail_family) + " tail";
  return s + ", K split " + std::to_string(p.k_splits);
}

class BatchInvariance : public ::testing::TestWithParam<InvarianceCase> {};

// The automatic choice at every M: the first rows equal the largest call's.
TEST_P(BatchInvariance, RowsDoNotDependOnM) {
  REQUIRE_SM90();
  const InvarianceCase& c = GetParam();
  Reference ref;
  ASSERT_NO_FATAL_FAILURE(make_reference(c, ref));
  for (int64_t m : kRowCounts) {
    std::vector<unsigned char> rows;
    LaunchPlan ran;
    ASSERT_NO_FATAL_FAILURE(run_rows(ref.op, desc_for(c, m), nullptr, rows, &ran));
    EXPECT_EQ(ran.k_splits, weight_split(desc_for(c, m))) << "m = " << m;
    expect_same_rows(rows, ref, "m = " + std::to_string(m) + " (" + plan_text(ran) + ")");
  }
}

// Every plan the mode may pick, forced: each sm90-gemm configuration but stream-K (whole
// tiles, the folded slices, or split-K's slices of the weight's split; the planner refuses
// the others for a split weight), with and without a row split, and the TMA-fed decode
// kernels (the 64-row one folding a split weight's slices in its 128-token tiles).
TEST_P(BatchInvariance, EveryPlanTheModeMayPickAgrees) {
  REQUIRE_SM90();
  const InvarianceCase& c = GetParam();
  Reference ref;
  ASSERT_NO_FATAL_FAILURE(make_reference(c, ref));
  std::vector<PlanOverrides> plans;
  for (int v = 0; v < anvil::detail::kSm90Variants; ++v) {
    if (static_cast<Sm90Variant>(v) == Sm90Variant::kTallStreamK) continue;
    PlanOverrides o;
    o.family = KernelFamily::kSm90Gemm;
    o.sm90_variant = v;
    plans.push_back(o);
  }
  PlanOverrides split;
  split.family = KernelFamily::kSm90Gemm;
  split.row_split = PlanOverrides::RowSplit::kAlways;
  plans.push_back(split);
  for (KernelFamily f : {KernelFamily::kDecodeTma, KernelFamily::kDecodeR64}) {
    PlanOverrides o;
    o.family = f;
    plans.push_back(o);
  }
  // 300 and 1025 rows: 44 and 1 past a multiple of 256, where a row split is possible. 100:
  // sm90-decode-r64's two 64-token tiles or its one 128-token tile (rows64_one_token_tile).
  for (int64_t m :
       {int64_t{1}, int64_t{64}, int64_t{100}, int64_t{255}, int64_t{300}, int64_t{1000}, int64_t{1025}}) {
    for (const PlanOverrides& o : plans) {
      // sm90-decode beyond 256 rows: each token tile would re-read the weight (correct, but
      // slow). sm90-decode-r64's 128-token tiles are a plan of the mode at any M.
      if (o.family == KernelFamily::kDecodeTma && m > 256) continue;
      const GemmDesc desc = desc_for(c, m);
      LaunchPlan planned;
      if (anvil::detail::plan_for(desc, nullptr, &o, &planned, nullptr) != Status::kSuccess) continue;  // refused
      std::vector<unsigned char> rows;
      LaunchPlan ran;
      ASSERT_NO_FATAL_FAILURE(run_rows(ref.op, desc, &o, rows, &ran));
      const int splits = weight_split(desc);
      ASSERT_EQ(ran.k_splits, splits) << plan_text(ran);
      ASSERT_FALSE(ran.row_split() && ran.tail.splits != 1) << plan_text(ran);
      if (o.row_split == PlanOverrides::RowSplit::kAlways && splits == 1 && (m == 300 || m == 1025)) {
        EXPECT_TRUE(ran.row_split()) << "m = " << m << ": the forced row split did not happen";
      }
      expect_same_rows(rows, ref, "m = " + std::to_string(m) + ", forced " + plan_text(ran));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchInvariance, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<InvarianceCase>& info) { return info.param.name; });

// The folded-slice configurations forced on a small split weight (uneven slices, a partial
// last k-tile: 300 x 576 x 1480, 24 k-tiles in 3 slices), at sizes compute-sanitizer's
// tools can run (scripts/gpu_run.sh's sanitize phase): each bitwise against sm90-decode's
// cluster of the same split, whose rows match the reference.
TEST(FoldedSlices, SmallSplitWeightMatchesTheCluster) {
  REQUIRE_SM90();
  GemmDesc desc = anvil::linear_desc(300, 576, 1480, DataType::kBF16, DataType::kBF16);
  desc.batch_invariant = true;
  desc.epilogue.bias = anvil::BiasMode::kPerColumn;
  desc.epilogue.bias_dtype = DataType::kBF16;
  desc.epilogue.activation = anvil::Activation::kGeluTanh;
  ASSERT_EQ(weight_split(desc), 3);
  anvil_test::Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, 4242));
  CHECK_CUDA(verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  // The cluster's rows, checked against the reference.
  PlanOverrides cluster;
  cluster.family = KernelFamily::kDecodeTma;
  LaunchPlan ran;
  Diagnostic diag;
  CHECK_CUDA(verify::poison(op.d.get(), desc.d.dtype, desc.m * desc.n, nullptr));
  ASSERT_EQ(anvil::detail::gemm(desc, op.args, &cluster, &diag, &ran), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  ASSERT_EQ(ran.decode.splits, 3) << plan_text(ran);
  const auto cmp = verify::compare(desc, op.d.get(), op.ref.as_float(), verify::tolerance_for(desc), nullptr);
  ASSERT_GE(cmp.count, 0) << "the comparison itself failed (CUDA error)";
  ASSERT_TRUE(cmp.passed) << plan_text(ran) << ": " << anvil_test::describe(cmp);
  std::vector<unsigned char> expected;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, expected));
  std::vector<PlanOverrides> folded;
  for (Sm90Variant v : {Sm90Variant::kSliced96, Sm90Variant::kSlicedPair128, Sm90Variant::kSlicedPair192}) {
    PlanOverrides o;
    o.family = KernelFamily::kSm90Gemm;
    o.sm90_variant = static_cast<int>(v);
    folded.push_back(o);
  }
  PlanOverrides rows64;
  rows64.family = KernelFamily::kDecodeR64;
  folded.push_back(rows64);
  for (const PlanOverrides& o : folded) {
    std::vector<unsigned char> rows;
    ASSERT_NO_FATAL_FAILURE(run_rows(op, desc, &o, rows, &ran));
    const std::string what = plan_text(ran);
    ASSERT_EQ(ran.k_splits, 3) << what;
    ASSERT_EQ(rows.size(), expected.size());
    EXPECT_EQ(std::memcmp(rows.data(), expected.data(), rows.size()), 0) << what << " differs from the cluster's rows";
  }
}

// The row split forced on small problems (PlanOverrides::row_split), in normal mode and
// against the reference: sm90-gemm on the first 256 rows, a decode kernel on the rest. Small
// enough for compute-sanitizer's tools (scripts/gpu_run.sh's sanitize phase).
struct RowSplitCase {
  int64_t m, n, k;
  bool swiglu;
  const char* name;
};

class ForcedRowSplit : public ::testing::TestWithParam<RowSplitCase> {};

TEST_P(ForcedRowSplit, MatchesReference) {
  REQUIRE_SM90();
  const RowSplitCase& c = GetParam();
  GemmDesc desc = anvil::linear_desc(c.m, c.n, c.k, DataType::kBF16, DataType::kBF16);
  if (c.swiglu) desc.epilogue.activation = anvil::Activation::kSwiGLU;
  anvil_test::Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, desc, 777 + c.m));
  CHECK_CUDA(verify::reference_gemm(desc, op.args, op.ref.as_float(), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  PlanOverrides overrides;
  overrides.row_split = PlanOverrides::RowSplit::kAlways;
  LaunchPlan ran;
  Diagnostic diag;
  ASSERT_EQ(anvil::detail::gemm(desc, op.args, &overrides, &diag, &ran), Status::kSuccess) << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(ran.row_split()) << plan_text(ran) << ": " << ran.row_split_reason;
  const auto cmp = verify::compare(desc, op.d.get(), op.ref.as_float(), verify::tolerance_for(desc), nullptr);
  ASSERT_GE(cmp.count, 0) << "the comparison itself failed (CUDA error)";
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(desc) << " (" << plan_text(ran) << "): " << anvil_test::describe(cmp);
}

INSTANTIATE_TEST_SUITE_P(Small, ForcedRowSplit,
                         ::testing::Values(RowSplitCase{300, 520, 1000, false, "m300_n520_k1000"},
                                           RowSplitCase{300, 768, 1000, true, "swiglu_m300_n768_k1000"},
                                           RowSplitCase{257, 1024, 4096, false, "m257_n1024_k4096"}),
                         [](const ::testing::TestParamInfo<RowSplitCase>& info) { return std::string(info.param.name); });

}  // namespace
