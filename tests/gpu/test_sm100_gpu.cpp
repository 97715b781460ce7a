// The Blackwell GEMM against the GPU reference, on an sm_100 device. Everywhere else each
// test skips with "no sm_100 GPU: <reason>": the path has not run on B200 hardware, and
// these are the tests for its first run (docs/blackwell.md).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "kernels/sm100/sm100_api.h"
#include "verify/verify.h"

namespace {

using anvil::Activation;
using anvil::BiasMode;
using anvil::DataType;
using anvil::GemmArgs;
using anvil::GemmDesc;
using anvil::Order;
using anvil::Status;
namespace verify = anvil::verify;

#define CHECK_CUDA(call)                                                          \
  do {                                                                            \
    const cudaError_t e_ = (call);                                                \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_);        \
  } while (0)

// Why this device cannot run the sm_100 tests, or empty when it can.
std::string no_sm100_reason() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return "no CUDA device";
  }
  const int cc = anvil::detail::device_compute_capability();
  if (cc != 100) return "compute capability " + std::to_string(cc / 10) + "." + std::to_string(cc % 10);
  return {};
}

#define SKIP_WITHOUT_SM100()                                                   \
  do {                                                                         \
    const std::string reason_ = no_sm100_reason();                             \
    if (!reason_.empty()) GTEST_SKIP() << "no sm_100 GPU: " << reason_;        \
  } while (0)

struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr); }
};

struct Case {
  const char* name;
  int64_t m, n, k, batch;
  DataType input, output;
  Activation activation;
  BiasMode bias;
  float alpha, beta;
  bool c_is_d;
};

GemmDesc make_desc(const Case& c) {
  GemmDesc d;
  d.m = c.m;
  d.n = c.n;
  d.k = c.k;
  d.batch = c.batch;
  const int64_t n_out = c.activation == Activation::kSwiGLU ? c.n / 2 : c.n;
  d.a = {c.input, Order::kRowMajor, c.k, c.m * c.k};
  d.b = {c.input, Order::kColMajor, c.k, c.n * c.k};
  d.c = {c.output, Order::kRowMajor, n_out, c.m * n_out};
  d.d = d.c;
  d.alpha = c.alpha;
  d.beta = c.beta;
  d.epilogue.activation = c.activation;
  d.epilogue.bias = c.bias;
  d.epilogue.bias_dtype = DataType::kF32;
  return d;
}

// Random operands (never zeros), D poisoned, the GPU reference, the kernel, comparison.
void run_case(const anvil::detail::KernelInfo& kernel, const Case& c) {
  const GemmDesc desc = make_desc(c);
  const int64_t n_out = verify::output_cols(desc);
  const int64_t a_count = verify::storage_elements(desc.a, c.m, c.k, c.batch);
  const int64_t b_count = verify::storage_elements(desc.b, c.k, c.n, c.batch);
  const int64_t d_count = verify::storage_elements(desc.d, c.m, n_out, c.batch);
  DeviceBuffer a, b, d, cbuf, bias, ref;
  CHECK_CUDA(cudaMalloc(&a.ptr, a_count * verify::dtype_bytes(c.input)));
  CHECK_CUDA(cudaMalloc(&b.ptr, b_count * verify::dtype_bytes(c.input)));
  CHECK_CUDA(cudaMalloc(&d.ptr, d_count * verify::dtype_bytes(c.output)));
  CHECK_CUDA(cudaMalloc(&cbuf.ptr, d_count * verify::dtype_bytes(c.output)));
  CHECK_CUDA(cudaMalloc(&bias.ptr, std::max(c.m, c.n) * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&ref.ptr, c.batch * c.m * n_out * sizeof(float)));
  CHECK_CUDA(verify::fill_random(a.ptr, c.input, a_count, 11 + c.m, 1.0f, nullptr));
  CHECK_CUDA(verify::fill_random(b.ptr, c.input, b_count, 23 + c.n, 1.0f, nullptr));
  CHECK_CUDA(verify::fill_random(bias.ptr, DataType::kF32, std::max(c.m, c.n), 37, 1.0f, nullptr));
  GemmArgs args;
  args.a = a.ptr;
  args.b = b.ptr;
  args.d = d.ptr;
  args.bias = c.bias == BiasMode::kNone ? nullptr : bias.ptr;
  if (c.beta != 0.0f) {
    // Residual: C random; in place (C is D) or a separate buffer.
    void* target = c.c_is_d ? d.ptr : cbuf.ptr;
    CHECK_CUDA(verify::fill_random(target, c.output, d_count, 41, 1.0f, nullptr));
    args.c = target;
  } else {
    CHECK_CUDA(verify::poison(d.ptr, c.output, d_count, nullptr));
  }
  CHECK_CUDA(verify::reference_gemm(desc, args, static_cast<float*>(ref.ptr), nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());

  anvil::Diagnostic diag;
  ASSERT_EQ(kernel.check(desc, &args, &diag), Status::kSuccess) << kernel.name << " " << c.name << ": " << diag.message;
  ASSERT_EQ(kernel.launch(desc, args, &diag), Status::kSuccess) << kernel.name << " " << c.name << ": " << diag.message;
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto cmp = verify::compare(desc, d.ptr, static_cast<const float*>(ref.ptr), verify::tolerance_for(desc), nullptr);
  ASSERT_GE(cmp.count, 0) << "the comparison itself failed";
  EXPECT_TRUE(cmp.passed) << kernel.name << " " << c.name << ": " << verify::describe(cmp);
}

const Case kCases[] = {
    {"plain_bf16_512x1024x512", 512, 1024, 512, 1, DataType::kBF16, DataType::kBF16, Activation::kIdentity,
     BiasMode::kNone, 1.0f, 0.0f, false},
    {"tails_fp16_300x520x1000", 300, 520, 1000, 1, DataType::kF16, DataType::kF16, Activation::kIdentity,
     BiasMode::kNone, 1.0f, 0.0f, false},
    {"tails_bf16_300x520x1000", 300, 520, 1000, 1, DataType::kBF16, DataType::kBF16, Activation::kIdentity,
     BiasMode::kNone, 1.0f, 0.0f, false},
    {"long_k_fp32_out_256x256x8192", 256, 256, 8192, 1, DataType::kBF16, DataType::kF32, Activation::kIdentity,
     BiasMode::kNone, 1.0f, 0.0f, false},
    {"many_tiles_4096x4096x512", 4096, 4096, 512, 1, DataType::kBF16, DataType::kBF16, Activation::kIdentity,
     BiasMode::kNone, 1.0f, 0.0f, false},
    {"batch3_256x512x256", 256, 512, 256, 3, DataType::kBF16, DataType::kBF16, Activation::kIdentity,
     BiasMode::kNone, 1.0f, 0.0f, false},
    {"bias_col_gelu_tanh_512x1024x512", 512, 1024, 512, 1, DataType::kBF16, DataType::kBF16, Activation::kGeluTanh,
     BiasMode::kPerColumn, 1.0f, 0.0f, false},
    {"bias_row_relu_512x1024x512", 512, 1024, 512, 1, DataType::kBF16, DataType::kBF16, Activation::kReLU,
     BiasMode::kPerRow, 1.0f, 0.0f, false},
    {"swiglu_bias_512x1024x512", 512, 1024, 512, 1, DataType::kBF16, DataType::kBF16, Activation::kSwiGLU,
     BiasMode::kPerColumn, 1.0f, 0.0f, false},
    {"residual_c_is_d_512x1024x512", 512, 1024, 512, 1, DataType::kBF16, DataType::kBF16, Activation::kIdentity,
     BiasMode::kNone, 1.0f, 1.0f, true},
    {"alpha_beta_300x520x1000", 300, 520, 1000, 1, DataType::kBF16, DataType::kF32, Activation::kSiLU,
     BiasMode::kNone, 0.5f, -0.75f, false},
};

class Sm100Kernels : public ::testing::TestWithParam<int> {};

// The production kernels, then the ladder configurations (bf16 inputs and no activation
// only: the cases they refuse are skipped for them).
constexpr int kProductionKernels = 3;
constexpr int kAllKernels = 10;

const anvil::detail::KernelInfo& kernel_of(int i) {
  using namespace anvil::detail;
  static const KernelInfo* const kAll[kAllKernels] = {
      &kSm100Gemm,    &kSm100GemmStatic, &kSm100Gemm1Cta, &kSm100Ladder1, &kSm100Ladder2,
      &kSm100Ladder3, &kSm100Ladder4,    &kSm100Ladder5,  &kSm100Ladder6, &kSm100Ladder7};
  return *kAll[i];
}

TEST_P(Sm100Kernels, MatchReference) {
  SKIP_WITHOUT_SM100();
  for (const Case& c : kCases) {
    const bool ladder = GetParam() >= kProductionKernels;
    if (ladder && (c.input != DataType::kBF16 || c.activation != Activation::kIdentity)) continue;
    SCOPED_TRACE(c.name);
    run_case(kernel_of(GetParam()), c);
  }
}

INSTANTIATE_TEST_SUITE_P(Sm100, Sm100Kernels, ::testing::Range(0, kAllKernels),
                         [](const auto& info) {
                           std::string name = kernel_of(info.param).name;
                           for (char& ch : name) ch = ch == '-' ? '_' : ch;
                           return name;
                         });

// On any other GPU (or none) the Blackwell kernels refuse cleanly, naming the reason,
// instead of failing to launch. Needs a device to ask, not an sm_100 one.
TEST(Sm100Refusal, OtherDevicesGetNotSupported) {
  const std::string reason = no_sm100_reason();
  if (reason.empty()) GTEST_SKIP() << "this is an sm_100 GPU: nothing to refuse";
  GemmDesc desc = make_desc(kCases[0]);
  for (int i = 0; i < kAllKernels; ++i) {
    anvil::Diagnostic diag;
    EXPECT_EQ(kernel_of(i).check(desc, nullptr, &diag), Status::kNotSupported);
    EXPECT_NE(std::string(diag.message).find("needs an sm_100 GPU"), std::string::npos) << diag.message;
  }
  EXPECT_FALSE(anvil::detail::sm100_supported(desc));
}

}  // namespace
