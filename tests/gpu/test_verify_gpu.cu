// The device half of the verification toolkit: random fill and poison, the GPU reference
// against the CPU fp64 reference, and the comparison's power to catch planted errors.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "gpu/gpu_support.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::GemmDesc;
using anvil::Order;
using anvil_test::DeviceBuffer;
using anvil_test::Operands;
namespace verify = anvil::verify;

// A problem in the given layouts; pad adds elements to every line, batch > 1 spaces the
// matrices apart by their size plus a gap, so strides and padding are both exercised.
// The reference reads any stride, so the gap need not keep TMA's 16-byte alignment.
constexpr int64_t kBatchGap = 40;

GemmDesc make_desc(int64_t m, int64_t n, int64_t k, DataType in, Order ao, Order bo, DataType out,
                   Order d_order = Order::kRowMajor, int64_t pad = 0, int64_t batch = 1) {
  GemmDesc d;
  d.m = m;
  d.n = n;
  d.k = k;
  d.batch = batch;
  // D is n wide; callers switching to SwiGLU fix it up with swiglu().
  d.a = anvil_test::padded_layout(in, ao, m, k, pad, batch, kBatchGap);
  d.b = anvil_test::padded_layout(in, bo, k, n, pad, batch, kBatchGap);
  d.d = anvil_test::padded_layout(out, d_order, m, n, pad, batch, kBatchGap);
  d.c = d.d;
  return d;
}

GemmDesc swiglu(GemmDesc d, int64_t pad = 0) {
  d.epilogue.activation = Activation::kSwiGLU;
  d.d = anvil_test::padded_layout(d.d.dtype, d.d.order, d.m, d.n / 2, pad, d.batch, kBatchGap);
  d.c = d.d;
  return d;
}

GemmDesc with_bias(GemmDesc d, BiasMode mode, DataType dtype, Activation act = Activation::kIdentity) {
  d.epilogue.bias = mode;
  d.epilogue.bias_dtype = dtype;
  d.epilogue.activation = act;
  return d;
}

std::vector<double> download_ref(const Operands& op) {
  std::vector<unsigned char> bytes;
  anvil_test::download(op.ref, bytes);
  std::vector<double> out(bytes.size() / sizeof(float));
  for (size_t t = 0; t < out.size(); ++t) {
    float f;
    std::memcpy(&f, bytes.data() + t * sizeof(float), sizeof(f));
    out[t] = f;
  }
  return out;
}

// ---- random fill and poison ----

// Fills a buffer with seed 42 twice and once with seed 43 through fill(ptr, seed) and
// checks that the seed decides the values; hx gets seed 42's values, hz seed 43's.
template <class Fill>
void fill_with_two_seeds(DataType t, int64_t count, std::vector<unsigned char>& hx, std::vector<unsigned char>& hz,
                         Fill fill) {
  const size_t bytes = size_t(count) * verify::dtype_bytes(t);
  DeviceBuffer x, y, z;
  CHECK_CUDA(x.allocate(bytes));
  CHECK_CUDA(y.allocate(bytes));
  CHECK_CUDA(z.allocate(bytes));
  CHECK_CUDA(fill(x.get(), 42));
  CHECK_CUDA(fill(y.get(), 42));
  CHECK_CUDA(fill(z.get(), 43));
  std::vector<unsigned char> hy;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(x, hx));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(y, hy));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(z, hz));
  EXPECT_EQ(hx, hy) << "same seed, same values";
  EXPECT_NE(hx, hz) << "another seed, other values";
}

TEST(FillRandom, DeterministicBoundedAndNotZero) {
  REQUIRE_SM90();
  constexpr int64_t kCount = 100003;
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    std::vector<unsigned char> hx, hz;
    ASSERT_NO_FATAL_FAILURE(fill_with_two_seeds(t, kCount, hx, hz, [&](void* p, uint64_t seed) {
      return verify::fill_random(p, t, kCount, seed, 0.5f, nullptr);
    }));
    double sum = 0.0, sum_sq = 0.0;
    int64_t zeros = 0, same_as_other_seed = 0;
    for (int64_t i = 0; i < kCount; ++i) {
      const double v = anvil_test::load_element(hx, t, i);
      ASSERT_TRUE(std::isfinite(v)) << i;
      ASSERT_LE(std::fabs(v), 0.5) << i;
      sum += v;
      sum_sq += v * v;
      zeros += v == 0.0;
      same_as_other_seed += v == anvil_test::load_element(hz, t, i);
    }
    EXPECT_LT(zeros, kCount / 1000) << anvil::to_string(t);
    EXPECT_LT(same_as_other_seed, kCount / 50) << anvil::to_string(t);
    EXPECT_NEAR(sum / kCount, 0.0, 0.01) << anvil::to_string(t);
    EXPECT_NEAR(sum_sq / kCount, 0.25 / 3.0, 0.005) << anvil::to_string(t) << ": uniform variance";
  }
  EXPECT_EQ(verify::fill_random(nullptr, DataType::kBF16, 10, 1, 1.0f, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(verify::fill_random(nullptr, DataType::kBF16, 10, 1, 0.0f, nullptr), cudaErrorInvalidValue);
}

// The normal fill: deterministic per seed, mean 0, the requested variance, and normal in
// shape - 68.3% of the values within one standard deviation, where a uniform fill of the
// same variance puts 57.7%.
TEST(FillRandomNormal, DeterministicNormalShapedAndNotZero) {
  REQUIRE_SM90();
  constexpr int64_t kCount = 200003;
  constexpr float kStddev = 0.5f;
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    std::vector<unsigned char> hx, hz;
    ASSERT_NO_FATAL_FAILURE(fill_with_two_seeds(t, kCount, hx, hz, [&](void* p, uint64_t seed) {
      return verify::fill_random_normal(p, t, kCount, seed, kStddev, nullptr);
    }));
    double sum = 0.0, sum_sq = 0.0;
    int64_t zeros = 0, within_one_sigma = 0;
    for (int64_t i = 0; i < kCount; ++i) {
      const double v = anvil_test::load_element(hx, t, i);
      ASSERT_TRUE(std::isfinite(v)) << i;
      sum += v;
      sum_sq += v * v;
      zeros += v == 0.0;
      within_one_sigma += std::fabs(v) <= kStddev;
    }
    const std::string dtype = anvil::to_string(t);
    EXPECT_LT(zeros, kCount / 1000) << dtype;
    EXPECT_NEAR(sum / kCount, 0.0, 0.01) << dtype;
    EXPECT_NEAR(sum_sq / kCount, kStddev * kStddev, 0.01) << dtype << ": variance";
    EXPECT_NEAR(double(within_one_sigma) / kCount, 0.6827, 0.01) << dtype << ": normal, not uniform";
  }
  EXPECT_EQ(verify::fill_random_normal(nullptr, DataType::kBF16, 10, 1, 1.0f, nullptr), cudaErrorInvalidValue);
  DeviceBuffer small;
  CHECK_CUDA(small.allocate(10 * sizeof(float)));
  EXPECT_EQ(verify::fill_random_normal(small.get(), DataType::kF32, 10, 1, 0.0f, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(verify::fill_random_normal(small.get(), DataType::kF32, 10, 1, -1.0f, nullptr), cudaErrorInvalidValue);
}

TEST(Poison, EveryElementIsNaN) {
  REQUIRE_SM90();
  constexpr int64_t kCount = 4099;
  for (DataType t : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
    DeviceBuffer x;
    CHECK_CUDA(x.allocate(size_t(kCount) * verify::dtype_bytes(t)));
    CHECK_CUDA(verify::fill_random(x.get(), t, kCount, 1, 1.0f, nullptr));
    CHECK_CUDA(verify::poison(x.get(), t, kCount, nullptr));
    std::vector<unsigned char> h;
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(x, h));
    for (int64_t i = 0; i < kCount; ++i) ASSERT_TRUE(std::isnan(anvil_test::load_element(h, t, i))) << i;
  }
}

// ---- GPU reference against the CPU reference ----

struct RefCase {
  std::string name;
  GemmDesc desc;
  bool c_is_d = false;
  bool nan_c_with_beta_zero = false;  // args.c points at poisoned memory, beta == 0
};
void PrintTo(const RefCase& c, std::ostream* os) { *os << c.name; }

std::vector<RefCase> reference_cases() {
  constexpr int64_t m = 37, n = 128, k = 71;  // not multiples of the reference's 16x16 tiles
  const Order R = Order::kRowMajor, C = Order::kColMajor;
  const DataType bf = DataType::kBF16, hf = DataType::kF16, f32 = DataType::kF32;
  std::vector<RefCase> cases;
  for (DataType in : {bf, hf})
    for (Order ao : {R, C})
      for (Order bo : {R, C})
        cases.push_back({std::string(anvil::to_string(in)) + (ao == R ? "_A_row" : "_A_col") +
                             (bo == R ? "_B_row" : "_B_col"),
                         make_desc(m, n, k, in, ao, bo, f32)});
  cases.push_back({"padded_ld", make_desc(m, n, k, bf, C, R, f32, C, 5)});
  cases.push_back({"fp32_inputs", make_desc(m, n, k, f32, R, C, f32)});
  cases.push_back({"k_1", make_desc(m, n, 1, bf, R, C, f32)});

  const Activation acts[] = {Activation::kIdentity, Activation::kReLU, Activation::kGeluErf,
                             Activation::kGeluTanh, Activation::kSiLU};
  for (Activation act : acts) {
    cases.push_back({"bias_col_act_" + std::to_string(int(act)),
                     with_bias(make_desc(m, n, k, bf, R, C, bf), BiasMode::kPerColumn, bf, act)});
  }
  cases.push_back({"swiglu_bias_col", with_bias(swiglu(make_desc(m, 256, k, bf, R, C, bf)), BiasMode::kPerColumn, f32)});
  cases.push_back({"swiglu_no_bias", swiglu(make_desc(m, 256, k, hf, C, R, hf))});
  cases.push_back({"bias_row_gelu_tanh",
                   with_bias(make_desc(m, n, k, bf, R, C, f32), BiasMode::kPerRow, f32, Activation::kGeluTanh)});
  cases.push_back({"bias_row_fp16_relu",
                   with_bias(make_desc(m, n, k, hf, R, R, hf), BiasMode::kPerRow, hf, Activation::kReLU)});

  GemmDesc scaled = make_desc(m, n, k, bf, R, C, f32, C);
  scaled.alpha = -1.5f;
  scaled.beta = 0.5f;
  cases.push_back({"alpha_beta_separate_C", scaled});
  for (DataType out : {bf, hf, f32}) {
    GemmDesc residual = make_desc(m, n, k, bf, R, C, out);
    residual.beta = 1.0f;
    cases.push_back({std::string("residual_c_is_d_") + anvil::to_string(out), residual, true});
  }
  GemmDesc half_residual = make_desc(m, n, k, hf, R, C, hf, C);
  half_residual.beta = 0.5f;
  cases.push_back({"beta_half_c_is_d_col", half_residual, true});
  cases.push_back({"beta_zero_ignores_nan_c", make_desc(m, n, k, bf, R, C, bf), false, true});

  GemmDesc batched = make_desc(m, n, k, bf, C, R, f32, C, 3, 3);
  batched.beta = 1.0f;
  cases.push_back({"batch3_strided_beta", batched});
  GemmDesc shared_b = make_desc(m, n, k, bf, R, C, bf, R, 0, 3);
  shared_b.b.batch_stride = 0;
  cases.push_back({"batch3_shared_B", shared_b});
  GemmDesc batched_swiglu = with_bias(swiglu(make_desc(m, 256, k, bf, R, C, bf, R, 2, 2), 2), BiasMode::kPerColumn, bf);
  batched_swiglu.beta = 1.0f;
  cases.push_back({"batch2_swiglu_residual", batched_swiglu, true});
  return cases;
}

class ReferenceVsCpu : public ::testing::TestWithParam<RefCase> {};

TEST_P(ReferenceVsCpu, Matches) {
  REQUIRE_SM90();
  const RefCase& rc = GetParam();
  Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, rc.desc, 11, rc.c_is_d));
  if (rc.nan_c_with_beta_zero) op.args.c = op.d.get();  // D is poisoned: all NaN

  CHECK_CUDA(verify::reference_gemm(op.desc, op.args, op.ref.as_float(), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<unsigned char> a, b, c, bias;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.a, a));
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.b, b));
  if (op.args.c == op.d.get()) {
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, c));
  } else if (op.args.c != nullptr) {
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.c, c));
  }
  if (op.args.bias != nullptr) {
    ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.bias, bias));
  }
  std::vector<double> cpu;
  verify::cpu_reference(op.desc, a.data(), b.data(), c.empty() ? nullptr : c.data(),
                        bias.empty() ? nullptr : bias.data(), cpu);
  ASSERT_FALSE(cpu.empty()) << "the CPU reference refused " << anvil_test::describe(op.desc);
  const std::vector<double> gpu = download_ref(op);

  GemmDesc as_fp32 = op.desc;  // the reference's output is fp32 whatever D's dtype is
  as_fp32.d.dtype = DataType::kF32;
  const auto cmp = verify::compare_host(gpu, cpu, verify::tolerance_for(as_fp32));
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(op.desc) << ": " << anvil_test::describe(cmp);
  EXPECT_GT(anvil_test::rms(cpu), 0.1) << "a degenerate problem proves nothing";
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceVsCpu, ::testing::ValuesIn(reference_cases()),
                         [](const ::testing::TestParamInfo<RefCase>& info) { return info.param.name; });

TEST(ReferenceGemm, RefusesWhatItCannotCompute) {
  REQUIRE_SM90();
  DeviceBuffer out;
  CHECK_CUDA(out.allocate(1024));
  GemmDesc desc = anvil::linear_desc(4, 4, 4, DataType::kBF16, DataType::kBF16);
  anvil::GemmArgs args;
  EXPECT_EQ(verify::reference_gemm(desc, args, out.as_float(), nullptr), cudaErrorInvalidValue) << "null A, B";
  desc.m = 0;
  EXPECT_EQ(verify::reference_gemm(desc, args, out.as_float(), nullptr), cudaSuccess) << "empty problem";
}

// ---- the comparison catches what it must ----

// D holds the reference rounded to D's dtype, optionally with one element changed.
void write_rounded(Operands& op, const std::vector<double>& ref, int64_t changed = -1, double new_value = 0.0,
                   bool poisoned = false) {
  const int64_t n_out = op.out_cols();
  std::vector<unsigned char> bytes = anvil_test::pack(
      op.desc.d, op.desc.m, n_out, op.desc.batch, [&](int64_t b, int64_t i, int64_t j) {
        const int64_t t = (b * op.desc.m + i) * n_out + j;
        return t == changed ? new_value : ref[size_t(t)];
      });
  if (poisoned) {
    const int64_t i = changed / n_out, j = changed % n_out;
    const size_t width = verify::dtype_bytes(op.desc.d.dtype);
    std::memset(bytes.data() + size_t(anvil_test::offset_of(op.desc.d, i, j, 0)) * width, 0xFF, width);
  }
  ASSERT_EQ(bytes.size(), op.d.bytes());
  ASSERT_NO_FATAL_FAILURE(anvil_test::upload(op.d, bytes));
}

class PlantedError : public ::testing::TestWithParam<DataType> {};

TEST_P(PlantedError, IsCaught) {
  REQUIRE_SM90();
  const DataType out = GetParam();
  Operands op;
  ASSERT_NO_FATAL_FAILURE(
      anvil_test::make_operands(op, anvil::linear_desc(256, 256, 512, DataType::kBF16, out), 5));
  CHECK_CUDA(verify::reference_gemm(op.desc, op.args, op.ref.as_float(), nullptr));
  const std::vector<double> ref = download_ref(op);
  const verify::Tolerance tol = verify::tolerance_for(op.desc);

  // An honest D passes, and the device and host comparisons agree on it.
  ASSERT_NO_FATAL_FAILURE(write_rounded(op, ref));
  auto cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp);
  EXPECT_EQ(cmp.count, int64_t(ref.size()));
  std::vector<unsigned char> d_bytes;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(op.d, d_bytes));
  const auto host_cmp = verify::compare_host(
      anvil_test::unpack(op.desc.d, op.desc.m, op.out_cols(), op.desc.batch, d_bytes), ref, tol);
  EXPECT_TRUE(host_cmp.passed);
  EXPECT_NEAR(cmp.rel_frobenius, host_cmp.rel_frobenius, 1e-12);
  EXPECT_EQ(cmp.worst_index, host_cmp.worst_index);

  // One element off by 1% of the matrix RMS. fp32 keeps it visible on the largest element;
  // a 16-bit output rounds the largest elements by more than that, so plant where |ref| is
  // smallest, where no rounding can explain it.
  const double rms = anvil_test::rms(ref);
  auto by_magnitude = [](double x, double y) { return std::fabs(x) < std::fabs(y); };
  const int64_t spot = out == DataType::kF32
                           ? int64_t(std::max_element(ref.begin(), ref.end(), by_magnitude) - ref.begin())
                           : int64_t(std::min_element(ref.begin(), ref.end(), by_magnitude) - ref.begin());
  ASSERT_NO_FATAL_FAILURE(write_rounded(op, ref, spot, ref[size_t(spot)] + 0.01 * rms));
  cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_FALSE(cmp.passed) << anvil_test::describe(cmp);
  EXPECT_EQ(cmp.out_of_tolerance, 1) << anvil_test::describe(cmp);
  if (out == DataType::kF32) {
    EXPECT_EQ(cmp.worst_index, spot);
  }

  // 4% of its own value on the largest element, ten times bf16's rounding there: max_rel
  // alone decides, so a loosened max_rel (or a device comparison that ignored it) shows.
  const int64_t largest = int64_t(std::max_element(ref.begin(), ref.end(), by_magnitude) - ref.begin());
  ASSERT_NO_FATAL_FAILURE(write_rounded(op, ref, largest, ref[size_t(largest)] * 1.04));
  cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_FALSE(cmp.passed) << "4% on the largest element: " << anvil_test::describe(cmp);
  EXPECT_EQ(cmp.out_of_tolerance, 1) << anvil_test::describe(cmp);
  EXPECT_EQ(cmp.worst_index, largest) << anvil_test::describe(cmp);

  // One element the "kernel" never wrote.
  const int64_t unwritten = 12345;
  ASSERT_NO_FATAL_FAILURE(write_rounded(op, ref, unwritten, 0.0, true));
  cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_FALSE(cmp.passed);
  EXPECT_EQ(cmp.nonfinite, 1);
  EXPECT_EQ(cmp.worst_index, unwritten);

  // Nothing written at all.
  CHECK_CUDA(verify::poison(op.d.get(), out, op.d_elements(), nullptr));
  cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_FALSE(cmp.passed);
  EXPECT_EQ(cmp.nonfinite, cmp.count);

  // Missing buffers are reported as a failed comparison, not a crash.
  cmp = verify::compare(op.desc, nullptr, op.ref.as_float(), tol, nullptr);
  EXPECT_FALSE(cmp.passed);
  EXPECT_EQ(cmp.count, -1);
}

INSTANTIATE_TEST_SUITE_P(OutputTypes, PlantedError,
                         ::testing::Values(DataType::kF32, DataType::kBF16, DataType::kF16),
                         [](const ::testing::TestParamInfo<DataType>& info) {
                           return std::string(anvil::to_string(info.param));
                         });

// A stand-in for a correct tensor-core kernel with the most pessimistic accumulation
// seen in hardware: exact products summed in blocks of 4, each block added to the fp32
// accumulator with round-toward-zero. nn.Linear layout (A and B both K-contiguous).
__global__ void truncating_linear_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, float* d, int m, int n,
                                         int k) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += 4) {
    double block = 0.0;
    for (int kk = k0; kk < k0 + 4 && kk < k; ++kk) {
      block += double(__bfloat162float(a[int64_t(i) * k + kk])) * double(__bfloat162float(b[int64_t(j) * k + kk]));
    }
    acc = __double2float_rz(double(acc) + block);
  }
  d[int64_t(i) * n + j] = acc;
}

class LargeK : public ::testing::TestWithParam<DataType> {};

TEST_P(LargeK, TruncatingAccumulationPassesAndOnePercentFails) {
  REQUIRE_SM90();
  const DataType out = GetParam();
  constexpr int kM = 128, kN = 128, kK = 30000;
  Operands op;
  ASSERT_NO_FATAL_FAILURE(anvil_test::make_operands(op, anvil::linear_desc(kM, kN, kK, DataType::kBF16, out), 9));
  CHECK_CUDA(verify::reference_gemm(op.desc, op.args, op.ref.as_float(), nullptr));

  DeviceBuffer result;
  CHECK_CUDA(result.allocate(size_t(kM) * kN * sizeof(float)));
  truncating_linear_kernel<<<dim3(kN / 16, kM / 16), dim3(16, 16)>>>(
      static_cast<const __nv_bfloat16*>(op.a.get()), static_cast<const __nv_bfloat16*>(op.b.get()),
      result.as_float(), kM, kN, kK);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> raw;
  ASSERT_NO_FATAL_FAILURE(anvil_test::download(result, raw));
  std::vector<double> emulated(size_t(kM) * kN);
  for (size_t t = 0; t < emulated.size(); ++t) emulated[t] = anvil_test::load_element(raw, DataType::kF32, int64_t(t));

  const verify::Tolerance tol = verify::tolerance_for(op.desc);
  ASSERT_NO_FATAL_FAILURE(write_rounded(op, emulated));
  auto cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_TRUE(cmp.passed) << anvil_test::describe(cmp);

  const std::vector<double> ref = download_ref(op);
  const int64_t spot = int64_t(std::min_element(ref.begin(), ref.end(), [](double x, double y) {
                                 return std::fabs(x) < std::fabs(y);
                               }) - ref.begin());
  ASSERT_NO_FATAL_FAILURE(write_rounded(op, emulated, spot, ref[size_t(spot)] + 0.01 * anvil_test::rms(ref)));
  cmp = verify::compare(op.desc, op.d.get(), op.ref.as_float(), tol, nullptr);
  EXPECT_FALSE(cmp.passed) << anvil_test::describe(cmp);
  EXPECT_EQ(cmp.out_of_tolerance, 1) << anvil_test::describe(cmp);
}

INSTANTIATE_TEST_SUITE_P(OutputTypes, LargeK, ::testing::Values(DataType::kF32, DataType::kBF16),
                         [](const ::testing::TestParamInfo<DataType>& info) {
                           return std::string(anvil::to_string(info.param));
                         });

}  // namespace
