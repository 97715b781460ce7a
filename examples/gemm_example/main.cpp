// A bf16 nn.Linear with bias and GELU through anvil: Y = gelu(X W^T + b).
//
//   X [tokens, in_features]        row-major bf16 (the activations)
//   W [out_features, in_features]  row-major bf16 (the weight, as torch stores it)
//   b [out_features]               bf16
//   Y [tokens, out_features]       row-major bf16
//
// Build against an installed anvil (see CMakeLists.txt next to this file), then run
// ./gemm_example. It needs an sm_90 GPU (H100/H200); without one it says so and exits
// with status 2. Status 0: the result matched the host reference; 1: anything failed.
#include <anvil/anvil.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

// Every CUDA call is checked: on failure, say which call and why, and stop.
#define CUDA_CHECK(call)                                                                              \
  do {                                                                                                \
    const cudaError_t err_ = (call);                                                                  \
    if (err_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                                   \
    }                                                                                                 \
  } while (0)

// bf16 is the upper half of an IEEE float; round to nearest even when narrowing.
uint16_t to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float from_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// torch.nn.GELU() (the erf form), anvil's Activation::kGeluErf.
float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f))); }

std::vector<uint16_t> random_bf16(size_t count, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = to_bf16(dist(rng));
  return v;
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::printf("gemm_example: no CUDA GPU here (%s); anvil needs an sm_90 GPU to run.\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "no device");
    return 2;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) {
    std::printf("gemm_example: GPU 0 is %s (sm_%d%d); anvil's kernels need sm_90 (H100/H200).\n", prop.name,
                prop.major, prop.minor);
    return 2;
  }

  const int64_t tokens = 256, in_features = 4096, out_features = 1024;

  // Random inputs (never zeros: a kernel that skipped the work would still match zeros).
  std::mt19937 rng(2024);
  const std::vector<uint16_t> x = random_bf16(size_t(tokens * in_features), 1.0f, rng);
  const std::vector<uint16_t> w = random_bf16(size_t(out_features * in_features), 1.0f / 32, rng);
  const std::vector<uint16_t> bias = random_bf16(size_t(out_features), 0.5f, rng);

  void *d_x = nullptr, *d_w = nullptr, *d_bias = nullptr, *d_y = nullptr;
  CUDA_CHECK(cudaMalloc(&d_x, x.size() * sizeof(uint16_t)));
  CUDA_CHECK(cudaMalloc(&d_w, w.size() * sizeof(uint16_t)));
  CUDA_CHECK(cudaMalloc(&d_bias, bias.size() * sizeof(uint16_t)));
  CUDA_CHECK(cudaMalloc(&d_y, size_t(tokens * out_features) * sizeof(uint16_t)));
  CUDA_CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_w, w.data(), w.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_bias, bias.data(), bias.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  // Poison the output, so that an element the GEMM never wrote cannot pass the check.
  CUDA_CHECK(cudaMemset(d_y, 0xFF, size_t(tokens * out_features) * sizeof(uint16_t)));

  // The problem: linear_desc sets the nn.Linear layouts (X row-major, W^T column-major).
  anvil::GemmDesc desc = anvil::linear_desc(tokens, out_features, in_features, anvil::DataType::kBF16,
                                            anvil::DataType::kBF16);
  desc.epilogue.activation = anvil::Activation::kGeluErf;
  desc.epilogue.bias = anvil::BiasMode::kPerColumn;  // one value per output feature
  desc.epilogue.bias_dtype = anvil::DataType::kBF16;

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  anvil::GemmArgs args;
  args.a = d_x;
  args.b = d_w;
  args.d = d_y;
  args.bias = d_bias;
  args.stream = stream;

  // Workspace: ask for these pointers, then allocate it once and reuse it for every call
  // with this problem. Its base must be 16-byte aligned; cudaMalloc's are (256 bytes).
  const size_t workspace_bytes = anvil::workspace_size(desc, args);
  void* d_workspace = nullptr;
  if (workspace_bytes > 0) CUDA_CHECK(cudaMalloc(&d_workspace, workspace_bytes));
  args.workspace = d_workspace;
  args.workspace_bytes = workspace_bytes;

  anvil::Diagnostic diag;
  if (anvil::can_implement(desc, &args, &diag) != anvil::Status::kSuccess) {
    std::fprintf(stderr, "gemm_example: anvil refused the problem: %s (%s)\n", diag.message,
                 anvil::to_string(diag.status));
    return 1;
  }
  const anvil::Status status = anvil::gemm(desc, args, &diag);
  if (status != anvil::Status::kSuccess) {
    std::fprintf(stderr, "anvil::gemm failed: %s (%s)\n", diag.message, anvil::to_string(status));
    return 1;
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::printf("gemm_example: %lld x %lld x %lld bf16 GEMM + bias + GELU ran on %s (%zu workspace bytes)\n",
              static_cast<long long>(tokens), static_cast<long long>(out_features),
              static_cast<long long>(in_features), anvil::dispatch_name(desc), workspace_bytes);

  std::vector<uint16_t> y(size_t(tokens * out_features));
  CUDA_CHECK(cudaMemcpy(y.data(), d_y, y.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));

  // Spot-check entries against a float reference on the host. Tolerance: bf16 output
  // rounding (2^-8 relative) plus fp32 accumulation-order differences, with an absolute
  // floor for outputs near zero.
  const float rel_tol = 1e-2f, abs_tol = 1e-2f;
  std::uniform_int_distribution<int64_t> pick_row(0, tokens - 1), pick_col(0, out_features - 1);
  int failures = 0;
  const int checks = 64;
  for (int t = 0; t < checks; ++t) {
    const int64_t i = t == 0 ? 0 : t == 1 ? tokens - 1 : pick_row(rng);
    const int64_t j = t == 0 ? 0 : t == 1 ? out_features - 1 : pick_col(rng);
    double acc = 0;
    for (int64_t k = 0; k < in_features; ++k) {
      acc += double(from_bf16(x[size_t(i * in_features + k)])) * double(from_bf16(w[size_t(j * in_features + k)]));
    }
    const float expected = gelu(float(acc) + from_bf16(bias[size_t(j)]));
    const float got = from_bf16(y[size_t(i * out_features + j)]);
    if (!(std::fabs(got - expected) <= rel_tol * std::fabs(expected) + abs_tol)) {
      if (++failures <= 5) std::fprintf(stderr, "Y[%lld, %lld] = %g, expected %g\n", (long long)i, (long long)j, got, expected);
    }
  }

  CUDA_CHECK(cudaFree(d_workspace));
  CUDA_CHECK(cudaFree(d_y));
  CUDA_CHECK(cudaFree(d_bias));
  CUDA_CHECK(cudaFree(d_w));
  CUDA_CHECK(cudaFree(d_x));
  CUDA_CHECK(cudaStreamDestroy(stream));

  if (failures > 0) {
    std::fprintf(stderr, "gemm_example: FAILED, %d of %d checked entries outside tolerance\n", failures, checks);
    return 1;
  }
  std::printf("gemm_example: OK, %d entries match the host reference (anvil %s)\n", checks, ANVIL_VERSION_STRING);
  return 0;
}
