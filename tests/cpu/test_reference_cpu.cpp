// The host half of the verification toolkit, checked against hand-computed results: if
// the reference is wrong, every kernel test downstream of it means nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "anvil/swiglu.h"
#include "common/test_support.h"
#include "verify/verify.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::GemmDesc;
using anvil::Order;
using anvil_test::layout;
using anvil_test::pack;
using anvil_test::packed_ld;
namespace verify = anvil::verify;

// The 2x4 by 4x3 product used throughout; small integers are exact in every dtype.
constexpr int64_t kM = 2, kN = 3, kK = 4;
constexpr double kA[kM][kK] = {{1, 2, 3, 4}, {-1, 0, 2, -3}};
constexpr double kB[kK][kN] = {{1, 0, 2}, {0, 1, -1}, {2, 1, 0}, {-1, 3, 1}};
// Worked by hand: row 0 = (1+6-4, 2+3+12, 2-2+4), row 1 = (-1+4+3, 2-9, -2-3).
constexpr double kProduct[kM][kN] = {{3, 17, 4}, {6, -7, -5}};

struct SmallProblem {
  GemmDesc desc;
  std::vector<unsigned char> a, b, c, bias;
};

SmallProblem small_problem(DataType in, Order a_order, Order b_order, int64_t pad = 0) {
  SmallProblem p;
  p.desc.m = kM;
  p.desc.n = kN;
  p.desc.k = kK;
  p.desc.a = layout(in, a_order, packed_ld(a_order, kM, kK, pad));
  p.desc.b = layout(in, b_order, packed_ld(b_order, kK, kN, pad));
  p.desc.c = layout(DataType::kF32, Order::kRowMajor, kN);
  p.desc.d = layout(DataType::kF32, Order::kRowMajor, kN);
  p.a = pack(p.desc.a, kM, kK, 1, [](int64_t, int64_t i, int64_t k) { return kA[i][k]; });
  p.b = pack(p.desc.b, kK, kN, 1, [](int64_t, int64_t k, int64_t j) { return kB[k][j]; });
  return p;
}

std::vector<double> run_cpu(const SmallProblem& p) {
  std::vector<double> out;
  verify::cpu_reference(p.desc, p.a.data(), p.b.data(), p.c.empty() ? nullptr : p.c.data(),
                        p.bias.empty() ? nullptr : p.bias.data(), out);
  return out;
}

void expect_matrix(const std::vector<double>& got, const std::vector<double>& want, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t t = 0; t < want.size(); ++t) {
    EXPECT_NEAR(got[t], want[t], tol) << what << " at flat index " << t;
  }
}

std::vector<double> product_plus(const double (&bias_col)[kN]) {
  std::vector<double> out;
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) out.push_back(kProduct[i][j] + bias_col[j]);
  return out;
}

const char* name(Order o) { return o == Order::kRowMajor ? "row" : "col"; }

TEST(CpuReference, PlainProductInEveryLayoutAndInputType) {
  const std::vector<double> want = product_plus({0, 0, 0});
  for (DataType in : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    for (Order ao : {Order::kRowMajor, Order::kColMajor}) {
      for (Order bo : {Order::kRowMajor, Order::kColMajor}) {
        for (int64_t pad : {0, 3}) {
          const SmallProblem p = small_problem(in, ao, bo, pad);
          expect_matrix(run_cpu(p), want, 0.0,
                        std::string("A ") + name(ao) + ", B " + name(bo) + ", " +
                            anvil::to_string(in) + ", pad " + std::to_string(pad));
        }
      }
    }
  }
}

TEST(CpuReference, AlphaAndBiasPerColumnAndPerRow) {
  SmallProblem p = small_problem(DataType::kBF16, Order::kRowMajor, Order::kColMajor);
  p.desc.alpha = 0.5f;
  p.desc.epilogue.bias = BiasMode::kPerColumn;
  p.desc.epilogue.bias_dtype = DataType::kBF16;
  const double col_bias[kN] = {1, -2, 0.5};
  p.bias.assign(kN * 2, 0);
  for (int64_t j = 0; j < kN; ++j) anvil_test::store_element(p.bias, DataType::kBF16, j, col_bias[j]);
  expect_matrix(run_cpu(p), {2.5, 6.5, 2.5, 4, -5.5, -2}, 0.0, "per-column bias");

  p.desc.epilogue.bias = BiasMode::kPerRow;
  p.desc.epilogue.bias_dtype = DataType::kF32;
  p.bias.assign(kM * 4, 0);
  anvil_test::store_element(p.bias, DataType::kF32, 0, 10);
  anvil_test::store_element(p.bias, DataType::kF32, 1, -10);
  expect_matrix(run_cpu(p), {11.5, 18.5, 12, -7, -13.5, -12.5}, 0.0, "per-row bias");
}

TEST(CpuReference, EachActivation) {
  // Per-column bias steers row 0 onto 3, -1.5, 0.5, where the expected values below were
  // worked out independently; row 1 lands on 6, -25.5, -8.5.
  SmallProblem p = small_problem(DataType::kF32, Order::kRowMajor, Order::kColMajor);
  p.desc.epilogue.bias = BiasMode::kPerColumn;
  p.desc.epilogue.bias_dtype = DataType::kF32;
  p.bias.assign(kN * 4, 0);
  const double col_bias[kN] = {0, -18.5, -3.5};
  for (int64_t j = 0; j < kN; ++j) anvil_test::store_element(p.bias, DataType::kF32, j, col_bias[j]);

  struct Expected {
    Activation act;
    std::vector<double> values;
  };
  const std::vector<Expected> cases = {
      {Activation::kIdentity, {3, -1.5, 0.5, 6, -25.5, -8.5}},
      {Activation::kReLU, {3, 0, 0.5, 6, 0, 0}},
      {Activation::kGeluErf,
       {2.99595030590511, -0.10021080190328713, 0.34573123063700656, 5.999999994080474, 0, 0}},
      {Activation::kGeluTanh,
       {2.996362607918227, -0.10042842301976707, 0.34571400982514394, 5.9999999999156035, 0, 0}},
      {Activation::kSiLU,
       {2.8577223804672998, -0.2736382857095345, 0.3112296656009273, 5.985164261060192,
        -2.1479832573714118e-10, -0.0017291293134692554}},
  };
  for (const Expected& e : cases) {
    p.desc.epilogue.activation = e.act;
    expect_matrix(run_cpu(p), e.values, 1e-12, "activation " + std::to_string(int(e.act)));
  }
}

TEST(CpuReference, BetaTimesCInBothOrdersAndNoCWhenBetaIsZero) {
  for (Order co : {Order::kRowMajor, Order::kColMajor}) {
    SmallProblem p = small_problem(DataType::kBF16, Order::kColMajor, Order::kRowMajor);
    p.desc.c = layout(DataType::kBF16, co, packed_ld(co, kM, kN, 1));
    p.c = pack(p.desc.c, kM, kN, 1, [](int64_t, int64_t i, int64_t j) { return double(i * kN + j + 1); });
    p.desc.beta = 0.5f;
    expect_matrix(run_cpu(p), {3.5, 18, 5.5, 8, -4.5, -2}, 0.0, std::string("C ") + name(co));

    // beta == 0: C is not read, so NaNs in it must not leak into the result (cuBLAS rule).
    p.desc.beta = 0.0f;
    p.c.assign(p.c.size(), 0xFF);
    expect_matrix(run_cpu(p), product_plus({0, 0, 0}), 0.0, "beta 0 with NaN C");
    p.c.clear();
    expect_matrix(run_cpu(p), product_plus({0, 0, 0}), 0.0, "beta 0 without C");
  }
}

TEST(CpuReference, StridedBatch) {
  constexpr int64_t kBatch = 3;
  GemmDesc desc;
  desc.m = kM;
  desc.n = kN;
  desc.k = kK;
  desc.batch = kBatch;
  desc.a = layout(DataType::kF16, Order::kRowMajor, kK + 1, 20);
  desc.b = layout(DataType::kF16, Order::kColMajor, kK, 0);  // one B shared by every batch
  desc.d = layout(DataType::kF32, Order::kRowMajor, kN);
  // Batch b scales A by (b + 1).
  const auto a = pack(desc.a, kM, kK, kBatch, [](int64_t b, int64_t i, int64_t k) { return (b + 1) * kA[i][k]; });
  const auto bm = pack(desc.b, kK, kN, 1, [](int64_t, int64_t k, int64_t j) { return kB[k][j]; });
  std::vector<double> out;
  verify::cpu_reference(desc, a.data(), bm.data(), nullptr, nullptr, out);
  ASSERT_EQ(out.size(), size_t(kBatch * kM * kN));
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t j = 0; j < kN; ++j)
        EXPECT_EQ(out[size_t((b * kM + i) * kN + j)], (b + 1) * kProduct[i][j]) << b << "," << i << "," << j;
}

TEST(CpuReference, SwiGLUPairsGateAndUpColumnsAndIndexesBiasByGemmColumn) {
  // z at GEMM column c is c / 16 + bias[c] with bias[c] = -c / 32, so z(c) = c / 32. Output
  // column j must read gate column (j / 64) * 128 + j % 64 and the up column 64 beyond it.
  constexpr int64_t kWidth = 256;
  GemmDesc desc;
  desc.m = 1;
  desc.n = kWidth;
  desc.k = 2;
  desc.a = layout(DataType::kF32, Order::kRowMajor, 2);
  desc.b = layout(DataType::kF32, Order::kRowMajor, kWidth);
  desc.d = layout(DataType::kF32, Order::kRowMajor, kWidth / 2);
  desc.epilogue.activation = Activation::kSwiGLU;
  desc.epilogue.bias = BiasMode::kPerColumn;
  desc.epilogue.bias_dtype = DataType::kF32;
  const auto a = pack(desc.a, 1, 2, 1, [](int64_t, int64_t, int64_t k) { return k == 0 ? 1.0 : 0.0; });
  const auto b = pack(desc.b, 2, kWidth, 1, [](int64_t, int64_t k, int64_t c) { return k == 0 ? c / 16.0 : 7.0; });
  std::vector<unsigned char> bias(kWidth * 4);
  for (int64_t c = 0; c < kWidth; ++c) anvil_test::store_element(bias, DataType::kF32, c, -c / 32.0);

  std::vector<double> out;
  verify::cpu_reference(desc, a.data(), b.data(), nullptr, bias.data(), out);
  ASSERT_EQ(out.size(), size_t(kWidth / 2));
  for (int64_t j = 0; j < kWidth / 2; ++j) {
    const double gate = double((j / 64) * 128 + j % 64) / 32.0;
    const double up = gate + 2.0;  // up column = gate column + 64
    EXPECT_NEAR(out[size_t(j)], gate / (1.0 + std::exp(-gate)) * up, 1e-12) << "output column " << j;
  }

  desc.n = 192;  // not a whole number of 128-wide gate/up pairs
  verify::cpu_reference(desc, a.data(), b.data(), nullptr, bias.data(), out);
  EXPECT_TRUE(out.empty());
}

TEST(CpuReference, RefusesMissingOperandsAndNegativeSizes) {
  SmallProblem p = small_problem(DataType::kBF16, Order::kRowMajor, Order::kColMajor);
  std::vector<double> out;
  verify::cpu_reference(p.desc, nullptr, p.b.data(), nullptr, nullptr, out);
  EXPECT_TRUE(out.empty());
  p.desc.beta = 1.0f;
  verify::cpu_reference(p.desc, p.a.data(), p.b.data(), nullptr, nullptr, out);
  EXPECT_TRUE(out.empty()) << "beta != 0 needs C";
  p.desc.beta = 0.0f;
  p.desc.k = -1;
  verify::cpu_reference(p.desc, p.a.data(), p.b.data(), nullptr, nullptr, out);
  EXPECT_TRUE(out.empty());
  // K = 0 is a valid product of nothing: alpha * 0 + bias.
  p.desc.k = 0;
  verify::cpu_reference(p.desc, nullptr, nullptr, nullptr, nullptr, out);
  EXPECT_EQ(out, std::vector<double>(kM * kN, 0.0));
}

TEST(SwiGLUColumns, PairWithinBlocksOf64) {
  static_assert(anvil::kSwiGLUBlock == 64);
  EXPECT_EQ(anvil::swiglu_gate_column(0), 0);
  EXPECT_EQ(anvil::swiglu_up_column(0), 64);
  EXPECT_EQ(anvil::swiglu_gate_column(63), 63);
  EXPECT_EQ(anvil::swiglu_up_column(63), 127);
  EXPECT_EQ(anvil::swiglu_gate_column(64), 128);
  EXPECT_EQ(anvil::swiglu_up_column(64), 192);
  EXPECT_EQ(anvil::swiglu_gate_column(130), 258);
  EXPECT_EQ(anvil::swiglu_up_column(130), 322);
  // Every GEMM column of a 2F-wide problem is used exactly once.
  constexpr int64_t kF = 256;
  std::vector<int> used(2 * kF, 0);
  for (int64_t j = 0; j < kF; ++j) {
    ++used[size_t(anvil::swiglu_gate_column(j))];
    ++used[size_t(anvil::swiglu_up_column(j))];
  }
  EXPECT_TRUE(std::all_of(used.begin(), used.end(), [](int u) { return u == 1; }));
}

TEST(StorageElements, CoversLeadingDimensionAndBatchStride) {
  using verify::storage_elements;
  EXPECT_EQ(storage_elements(layout(DataType::kBF16, Order::kRowMajor, 10), 4, 8, 1), 40);
  EXPECT_EQ(storage_elements(layout(DataType::kBF16, Order::kColMajor, 6), 4, 8, 1), 48);
  EXPECT_EQ(storage_elements(layout(DataType::kBF16, Order::kRowMajor, 8, 100), 4, 8, 3), 232);
  // A batch stride of 0 broadcasts one matrix to every batch.
  EXPECT_EQ(storage_elements(layout(DataType::kBF16, Order::kRowMajor, 8, 0), 4, 8, 3), 32);
  EXPECT_EQ(storage_elements(layout(DataType::kBF16, Order::kRowMajor, 8), 0, 8, 1), 0);
  EXPECT_EQ(verify::dtype_bytes(DataType::kBF16), 2u);
  EXPECT_EQ(verify::dtype_bytes(DataType::kF16), 2u);
  EXPECT_EQ(verify::dtype_bytes(DataType::kF32), 4u);
}

TEST(OutputCols, HalvesForSwiGLUOnly) {
  GemmDesc desc = anvil::linear_desc(4, 256, 8, DataType::kBF16, DataType::kBF16);
  EXPECT_EQ(verify::output_cols(desc), 256);
  desc.epilogue.activation = Activation::kSwiGLU;
  EXPECT_EQ(verify::output_cols(desc), 128);
}

// ---- tolerance and comparison ----

GemmDesc desc_with(DataType out, int64_t k, Activation act = Activation::kIdentity) {
  GemmDesc desc;
  desc.m = 64;
  desc.n = 256;
  desc.k = k;
  desc.d.dtype = out;
  desc.epilogue.activation = act;
  return desc;
}

TEST(Tolerance, OrderedByOutputPrecisionAndGrowingWithK) {
  for (int64_t k : {1, 64, 1000, 8192, 30000}) {
    const auto bf = verify::tolerance_for(desc_with(DataType::kBF16, k));
    const auto hf = verify::tolerance_for(desc_with(DataType::kF16, k));
    const auto sf = verify::tolerance_for(desc_with(DataType::kF32, k));
    EXPECT_GT(bf.max_rel, hf.max_rel) << k;
    EXPECT_GT(hf.max_rel, sf.max_rel) << k;
    EXPECT_GT(bf.rel_frobenius, hf.rel_frobenius) << k;
    EXPECT_GT(hf.rel_frobenius, sf.rel_frobenius) << k;
    EXPECT_GT(bf.max_abs, sf.max_abs) << k;
    // Loose enough for output rounding, tight enough to mean something.
    EXPECT_GE(bf.max_rel, 0x1p-8);
    EXPECT_LE(bf.rel_frobenius, 0.02);
    EXPECT_LE(sf.rel_frobenius, 2e-3);
  }
  for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    double previous_abs = 0.0, previous_frob = 0.0;
    for (int64_t k : {1, 64, 1000, 8192, 30000}) {
      const auto t = verify::tolerance_for(desc_with(out, k));
      EXPECT_GT(t.max_abs, previous_abs) << k;
      EXPECT_GE(t.rel_frobenius, previous_frob) << k;
      previous_abs = t.max_abs;
      previous_frob = t.rel_frobenius;
    }
    const auto plain = verify::tolerance_for(desc_with(out, 4096));
    const auto gated = verify::tolerance_for(desc_with(out, 4096, Activation::kSwiGLU));
    EXPECT_GE(gated.max_rel, plain.max_rel);
    EXPECT_GT(gated.max_abs, plain.max_abs);
  }
}

// The bounds exactly as docs/verification.md states them. A loosened (or tightened)
// tolerance fails here, whatever the planted-error tests happen to probe.
TEST(Tolerance, DocumentedValuesArePinned) {
  struct Row {
    DataType out;
    double u_out;
  };
  for (const Row row : {Row{DataType::kBF16, 0x1p-8}, Row{DataType::kF16, 0x1p-11}, Row{DataType::kF32, 0x1p-24}}) {
    for (int64_t k : {0, 1, 512, 8192, 30000}) {
      const double eps_acc = 0x1p-24 * (double(k) + 64.0);
      const double typical = std::sqrt(double(k)) / 3.0;
      auto t = verify::tolerance_for(desc_with(row.out, k));
      EXPECT_DOUBLE_EQ(t.max_rel, 2.0 * row.u_out + eps_acc) << anvil::to_string(row.out) << " K " << k;
      EXPECT_DOUBLE_EQ(t.rel_frobenius, 2.0 * row.u_out + eps_acc) << anvil::to_string(row.out) << " K " << k;
      EXPECT_DOUBLE_EQ(t.max_abs, typical * (row.u_out + eps_acc)) << anvil::to_string(row.out) << " K " << k;
      EXPECT_DOUBLE_EQ(t.frobenius_floor, typical / 16.0) << anvil::to_string(row.out) << " K " << k;

      // A transcendental epilogue adds 2^-20; a bias adds 1 to the typical magnitude,
      // |beta| adds itself, |alpha| scales the product part.
      GemmDesc gelu = desc_with(row.out, k, Activation::kGeluErf);
      gelu.epilogue.bias = BiasMode::kPerColumn;
      gelu.alpha = -2.0f;
      gelu.beta = -0.5f;
      t = verify::tolerance_for(gelu);
      const double eps_fn = 0x1p-20;
      EXPECT_DOUBLE_EQ(t.max_rel, 2.0 * row.u_out + eps_acc + eps_fn);
      EXPECT_DOUBLE_EQ(t.max_abs, (2.0 * typical + 1.0 + 0.5) * (row.u_out + eps_acc + eps_fn));

      // SwiGLU: accumulation and function errors times 4, the typical magnitude squared.
      t = verify::tolerance_for(desc_with(row.out, k, Activation::kSwiGLU));
      EXPECT_DOUBLE_EQ(t.max_rel, 2.0 * row.u_out + 4.0 * (eps_acc + eps_fn));
      EXPECT_DOUBLE_EQ(t.max_abs, typical * typical * (row.u_out + 4.0 * (eps_acc + eps_fn)));
    }
  }
  // The table in docs/verification.md, to its three digits.
  struct Documented {
    DataType out;
    int64_t k;
    double max_rel, max_abs_over_t;
  };
  for (const Documented d : {Documented{DataType::kBF16, 512, 7.85e-3, 3.94e-3},
                             Documented{DataType::kBF16, 30000, 9.60e-3, 5.70e-3},
                             Documented{DataType::kF16, 512, 1.01e-3, 5.23e-4},
                             Documented{DataType::kF32, 512, 3.45e-5, 3.44e-5},
                             Documented{DataType::kF32, 8192, 4.92e-4, 4.92e-4},
                             Documented{DataType::kF32, 30000, 1.79e-3, 1.79e-3}}) {
    const auto t = verify::tolerance_for(desc_with(d.out, d.k));
    const double typical = std::sqrt(double(d.k)) / 3.0;
    EXPECT_NEAR(t.max_rel, d.max_rel, 0.005 * d.max_rel) << anvil::to_string(d.out) << " K " << d.k;
    EXPECT_NEAR(t.rel_frobenius, d.max_rel, 0.005 * d.max_rel) << anvil::to_string(d.out) << " K " << d.k;
    EXPECT_NEAR(t.max_abs / typical, d.max_abs_over_t, 0.005 * d.max_abs_over_t)
        << anvil::to_string(d.out) << " K " << d.k;
  }
}

TEST(CompareHost, ExactMatchPasses) {
  const std::vector<double> ref = {1.0, -2.0, 3.5, 0.0};
  const auto c = verify::compare_host(ref, ref, verify::tolerance_for(desc_with(DataType::kF32, 16)));
  EXPECT_TRUE(c.passed);
  EXPECT_EQ(c.count, 4);
  EXPECT_EQ(c.nonfinite, 0);
  EXPECT_EQ(c.out_of_tolerance, 0);
  EXPECT_EQ(c.rel_frobenius, 0.0);
}

TEST(CompareHost, PlantedErrorAndNaNAreCaught) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 10.0);
  std::vector<double> ref(4096);
  for (double& v : ref) v = normal(rng);
  const double scale = anvil_test::rms(ref);
  verify::Tolerance tol = verify::tolerance_for(desc_with(DataType::kF32, 900));  // typical |z| = 10

  std::vector<double> d = ref;
  const size_t planted = 1234;
  d[planted] += 0.01 * scale;
  auto c = verify::compare_host(d, ref, tol);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.out_of_tolerance, 1);
  EXPECT_EQ(c.worst_index, int64_t(planted));
  EXPECT_NEAR(c.max_abs_err, 0.01 * scale, 1e-9 * scale);

  d = ref;
  d[17] = std::numeric_limits<double>::quiet_NaN();
  c = verify::compare_host(d, ref, tol);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.nonfinite, 1);
  EXPECT_EQ(c.worst_index, 17);

  d = ref;
  d[18] = std::numeric_limits<double>::infinity();
  c = verify::compare_host(d, ref, tol);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.nonfinite, 1);

  // Where the reference itself is non-finite the same way, the kernel is not to blame...
  std::vector<double> ref_nan = ref;
  ref_nan[5] = std::numeric_limits<double>::quiet_NaN();
  d = ref_nan;
  c = verify::compare_host(d, ref_nan, tol);
  EXPECT_TRUE(c.passed);
  EXPECT_EQ(c.nonfinite, 0);
  // ...but a finite answer where the reference overflowed is still a mismatch.
  d[5] = 1.0;
  c = verify::compare_host(d, ref_nan, tol);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.out_of_tolerance, 1);

  c = verify::compare_host(std::vector<double>(3), std::vector<double>(4), tol);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.count, -1);
}

// An fp16 output whose exact value lies at fp16's overflow threshold (65520: 65504 plus half
// an ulp) or within the element bound below it may round to infinity; one further below,
// or of the other sign, may not.
TEST(CompareHost, Fp16OverflowAtTheThresholdIsCorrectRounding) {
  const verify::Tolerance tol = verify::tolerance_for(desc_with(DataType::kF16, 100000));
  ASSERT_EQ(tol.overflow, 65520.0);
  const double inf = std::numeric_limits<double>::infinity();
  const double slack = tol.max_abs + tol.max_rel * 65520.0;
  std::vector<double> ref = {1.0, 70000.0, -80000.0, 65520.0 - 0.5 * slack};
  std::vector<double> d = {1.0, inf, -inf, inf};
  auto c = verify::compare_host(d, ref, tol);
  EXPECT_TRUE(c.passed);
  EXPECT_EQ(c.nonfinite, 0);

  ref[3] = 65520.0 - 2.0 * slack - 1000.0;  // too far below the threshold to round up
  c = verify::compare_host(d, ref, tol);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.nonfinite, 1);
  EXPECT_EQ(c.worst_index, 3);

  ref[3] = 70000.0;
  d[3] = -inf;  // the wrong sign
  EXPECT_EQ(verify::compare_host(d, ref, tol).nonfinite, 1);
  // fp32 outputs: the reference overflows alike, so no finite value excuses an infinity.
  EXPECT_EQ(verify::tolerance_for(desc_with(DataType::kF32, 100000)).overflow, inf);
}

TEST(CompareHost, WholeMatrixDriftFailsTheFrobeniusBound) {
  std::vector<double> ref(1024), d(1024);
  for (size_t t = 0; t < ref.size(); ++t) {
    ref[t] = std::sin(double(t)) * 30.0;
    d[t] = ref[t] * (1.0 + 4e-3);  // inside bf16's per-element bound, a drift in aggregate
  }
  verify::Tolerance tol = verify::tolerance_for(desc_with(DataType::kBF16, 8100));
  tol.max_rel = 1.0;  // isolate the Frobenius bound
  EXPECT_TRUE(verify::compare_host(d, ref, tol).passed);
  for (size_t t = 0; t < ref.size(); ++t) d[t] = ref[t] * (1.0 + 3e-2);
  const auto c = verify::compare_host(d, ref, tol);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.out_of_tolerance, 0);
  EXPECT_NEAR(c.rel_frobenius, 3e-2, 1e-9);
}

// An output whose terms cancel carries the terms' errors: anvil-fuzz's FP8 problem #1202 of
// seed 20261205 (1 x 1 x 144, e5m2 x e4m3 with per-tensor scales, D = -A B + 2 C in bf16)
// came out 2.3e-4 from a reference of 5.3e-3 - within the element bound, and the FP8 tensor
// cores' accumulator error on terms of a few units, but 4.4% of the result. The Frobenius
// bound takes the norm as at least frobenius_floor per element, so such an output passes;
// an error several times the accumulator's still fails, and on outputs of typical magnitude
// the floor changes nothing.
TEST(CompareHost, CancellingTermsAreJudgedAgainstTheTerms) {
  GemmDesc desc = desc_with(DataType::kBF16, 144);
  desc.a.dtype = DataType::kE5M2;
  desc.b.dtype = DataType::kE4M3;
  desc.scales = anvil::ScaleMode::kTensor;
  desc.alpha = -1.0f;
  desc.beta = 2.0f;
  const verify::Tolerance tol = verify::tolerance_for(desc);
  ASSERT_GT(tol.frobenius_floor, 0.0);

  std::vector<double> ref = {5.3e-3}, d = {5.3e-3 + 2.34e-4};
  auto c = verify::compare_host(d, ref, tol);
  EXPECT_GT(c.rel_frobenius, tol.rel_frobenius);  // the plain relative bound would fail it
  EXPECT_TRUE(c.passed) << verify::describe(c);

  d[0] = ref[0] + 4.0 * tol.rel_frobenius * tol.frobenius_floor;  // inside the element bound
  c = verify::compare_host(d, ref, tol);
  EXPECT_EQ(c.out_of_tolerance, 0);
  EXPECT_FALSE(c.passed);

  // 1024 outputs of a quarter of the typical magnitude drifting by twice the bound.
  const double typical = 16.0 * tol.frobenius_floor;
  ref.assign(1024, 0.0);
  d.assign(1024, 0.0);
  for (size_t t = 0; t < ref.size(); ++t) {
    ref[t] = 0.25 * typical * std::sin(double(t) + 0.5);
    d[t] = ref[t] * (1.0 + 2.0 * tol.rel_frobenius);
  }
  c = verify::compare_host(d, ref, tol);
  EXPECT_EQ(c.out_of_tolerance, 0);
  EXPECT_FALSE(c.passed);
}

// A stand-in for a tensor-core kernel: products summed exactly in blocks of 4, each block
// added to an fp32 accumulator with truncation (round toward zero), the behaviour measured
// on recent tensor cores and the pessimistic end of what a correct kernel may do.
float truncating_dot(const std::vector<float>& a, const std::vector<float>& b) {
  float acc = 0.0f;
  for (size_t k0 = 0; k0 < a.size(); k0 += 4) {
    double block = 0.0;
    for (size_t k = k0; k < std::min(a.size(), k0 + 4); ++k) block += double(a[k]) * double(b[k]);
    const double exact = double(acc) + block;
    float rounded = float(exact);
    if (std::fabs(double(rounded)) > std::fabs(exact)) rounded = std::nextafter(rounded, 0.0f);
    acc = rounded;
  }
  return acc;
}

TEST(Tolerance, AcceptsTruncatingAccumulationAtLargeKAndCatchesOnePercent) {
  constexpr int64_t kRows = 12, kCols = 12, kDepth = 30000;
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::vector<float>> a(kRows, std::vector<float>(kDepth));
  std::vector<std::vector<float>> b(kCols, std::vector<float>(kDepth));
  for (auto* m : {&a, &b})
    for (auto& row : *m)
      for (float& v : row) v = float(anvil_test::round_to(DataType::kBF16, uniform(rng)));

  std::vector<double> ref(kRows * kCols), got(kRows * kCols);
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) {
      double exact = 0.0;
      for (int64_t k = 0; k < kDepth; ++k) exact += double(a[i][k]) * double(b[j][k]);
      ref[size_t(i * kCols + j)] = exact;
      got[size_t(i * kCols + j)] = truncating_dot(a[size_t(i)], b[size_t(j)]);
    }

  for (DataType out : {DataType::kF32, DataType::kBF16, DataType::kF16}) {
    GemmDesc desc = desc_with(out, kDepth);
    std::vector<double> stored(got.size());
    for (size_t t = 0; t < got.size(); ++t) stored[t] = anvil_test::round_to(out, got[t]);
    const auto tol = verify::tolerance_for(desc);
    const auto c = verify::compare_host(stored, ref, tol);
    EXPECT_TRUE(c.passed) << anvil::to_string(out) << ": rel_frobenius " << c.rel_frobenius
                          << ", worst " << c.max_abs_err << ", out of tolerance " << c.out_of_tolerance;

    // 1% of the RMS on the element nearest zero, where output rounding cannot hide it.
    const size_t smallest = size_t(std::min_element(ref.begin(), ref.end(), [](double x, double y) {
                                     return std::fabs(x) < std::fabs(y);
                                   }) - ref.begin());
    const double kept = stored[smallest];
    stored[smallest] = anvil_test::round_to(out, ref[smallest] + 0.01 * anvil_test::rms(ref));
    auto planted = verify::compare_host(stored, ref, tol);
    EXPECT_FALSE(planted.passed) << anvil::to_string(out);
    EXPECT_EQ(planted.out_of_tolerance, 1) << anvil::to_string(out);
    stored[smallest] = kept;

    // 4% of its own value on the largest element, ten times bf16's rounding there: only
    // max_rel decides, so a loosened max_rel lets it through.
    const size_t largest = size_t(std::max_element(ref.begin(), ref.end(), [](double x, double y) {
                                    return std::fabs(x) < std::fabs(y);
                                  }) - ref.begin());
    stored[largest] = anvil_test::round_to(out, ref[largest] * 1.04);
    planted = verify::compare_host(stored, ref, tol);
    EXPECT_FALSE(planted.passed) << anvil::to_string(out) << ": 4% on the largest element";
    EXPECT_EQ(planted.out_of_tolerance, 1) << anvil::to_string(out);
    EXPECT_EQ(planted.worst_index, int64_t(largest)) << anvil::to_string(out);
  }
}

}  // namespace
