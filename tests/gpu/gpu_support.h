// Scaffolding for the GPU tier: the sm_90 gate, checked CUDA calls, owned device buffers
// and one GEMM problem's operands with random inputs and a poisoned output.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/anvil.h"
#include "common/test_support.h"
#include "verify/device_probe.h"
#include "verify/verify.h"

// Fails the current test (and returns from the current function) on any CUDA error.
#define CHECK_CUDA(expr)                                                                   \
  do {                                                                                     \
    const cudaError_t check_cuda_error_ = (expr);                                          \
    ASSERT_EQ(check_cuda_error_, cudaSuccess)                                              \
        << #expr << ": " << cudaGetErrorName(check_cuda_error_) << " ("                    \
        << cudaGetErrorString(check_cuda_error_) << ")";                                   \
  } while (0)

// Skips the test, with the reason in the output, unless an sm_90 GPU is present.
#define REQUIRE_SM90()                                                                     \
  do {                                                                                     \
    const std::string& require_sm90_reason_ = anvil_test::sm90_unavailable_reason();       \
    if (!require_sm90_reason_.empty()) GTEST_SKIP() << "no sm_90 GPU: " << require_sm90_reason_; \
  } while (0)

namespace anvil_test {

// Empty when device 0 is compute capability 9.0; otherwise why not. Asked once.
inline const std::string& sm90_unavailable_reason() {
  static const std::string reason = anvil::verify::sm90_unavailable_reason();
  return reason;
}

// Owns a stream so that an early test exit releases it.
struct Stream {
  cudaStream_t handle = nullptr;
  cudaError_t create(unsigned flags = cudaStreamNonBlocking) { return cudaStreamCreateWithFlags(&handle, flags); }
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (handle != nullptr) cudaStreamDestroy(handle);
  }
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  // Never a zero-byte allocation: a null pointer would read as "operand missing".
  cudaError_t allocate(size_t bytes) {
    release();
    bytes_ = bytes;
    return cudaMalloc(&ptr_, bytes < 256 ? 256 : bytes);
  }
  void release() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return ptr_; }
  float* as_float() const { return static_cast<float*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

inline void download(const DeviceBuffer& buffer, std::vector<unsigned char>& host) {
  host.resize(buffer.bytes());
  CHECK_CUDA(cudaMemcpy(host.data(), buffer.get(), buffer.bytes(), cudaMemcpyDeviceToHost));
}

inline void upload(DeviceBuffer& buffer, const std::vector<unsigned char>& host) {
  ASSERT_EQ(host.size(), buffer.bytes());
  CHECK_CUDA(cudaMemcpy(buffer.get(), host.data(), host.size(), cudaMemcpyHostToDevice));
}

// One problem's device memory. With c_is_d, C is D's buffer (the in-place residual add),
// filled with random values instead of poison.
struct Operands {
  anvil::GemmDesc desc;
  bool c_is_d = false;
  DeviceBuffer a, b, c, d, bias, ref, workspace;
  DeviceBuffer scale_a, scale_b;  // FP8 scales (desc.scales), random in [0.5, 1.5]
  anvil::GemmArgs args;

  int64_t out_cols() const { return anvil::verify::output_cols(desc); }
  int64_t d_elements() const { return anvil::verify::storage_elements(desc.d, desc.m, out_cols(), desc.batch); }
};

// FP8 scales of na and nb floats, random in [0.5, 1.5] (verify::fill_scales), into
// op.scale_a / op.scale_b and op.args: the dense and the grouped operands alike.
template <class Op>
void fill_operand_scales(Op& op, int64_t na, int64_t nb, uint64_t seed) {
  CHECK_CUDA(op.scale_a.allocate(size_t(na) * sizeof(float)));
  CHECK_CUDA(op.scale_b.allocate(size_t(nb) * sizeof(float)));
  CHECK_CUDA(anvil::verify::fill_scales(op.scale_a.as_float(), na, seed * 8 + 4, nullptr));
  CHECK_CUDA(anvil::verify::fill_scales(op.scale_b.as_float(), nb, seed * 8 + 5, nullptr));
  op.args.scale_a = op.scale_a.as_float();
  op.args.scale_b = op.scale_b.as_float();
}

// Allocates every operand, fills the inputs from `seed` (distinct streams per operand)
// and poisons D. Uses the default stream and waits for it.
inline void make_operands(Operands& op, const anvil::GemmDesc& desc, uint64_t seed, bool c_is_d = false) {
  namespace verify = anvil::verify;
  op.desc = desc;
  op.c_is_d = c_is_d;
  const int64_t n_out = op.out_cols();
  const int64_t a_count = verify::storage_elements(desc.a, desc.m, desc.k, desc.batch);
  const int64_t b_count = verify::storage_elements(desc.b, desc.k, desc.n, desc.batch);
  const int64_t d_count = op.d_elements();
  CHECK_CUDA(op.a.allocate(size_t(a_count) * verify::dtype_bytes(desc.a.dtype)));
  CHECK_CUDA(op.b.allocate(size_t(b_count) * verify::dtype_bytes(desc.b.dtype)));
  CHECK_CUDA(op.d.allocate(size_t(d_count) * verify::dtype_bytes(desc.d.dtype)));
  CHECK_CUDA(op.ref.allocate(size_t(desc.m * n_out * desc.batch) * sizeof(float)));
  CHECK_CUDA(verify::fill_random(op.a.get(), desc.a.dtype, a_count, seed * 8 + 0, 1.0f, nullptr));
  CHECK_CUDA(verify::fill_random(op.b.get(), desc.b.dtype, b_count, seed * 8 + 1, 1.0f, nullptr));
  op.args = anvil::GemmArgs{};
  op.args.a = op.a.get();
  op.args.b = op.b.get();
  op.args.d = op.d.get();
  if (c_is_d) {
    CHECK_CUDA(verify::fill_random(op.d.get(), desc.d.dtype, d_count, seed * 8 + 2, 1.0f, nullptr));
    op.args.c = op.d.get();
  } else {
    CHECK_CUDA(verify::poison(op.d.get(), desc.d.dtype, d_count, nullptr));
    if (desc.beta != 0.0f) {
      const int64_t c_count = verify::storage_elements(desc.c, desc.m, n_out, desc.batch);
      CHECK_CUDA(op.c.allocate(size_t(c_count) * verify::dtype_bytes(desc.c.dtype)));
      CHECK_CUDA(verify::fill_random(op.c.get(), desc.c.dtype, c_count, seed * 8 + 2, 1.0f, nullptr));
      op.args.c = op.c.get();
    }
  }
  if (desc.epilogue.bias != anvil::BiasMode::kNone) {
    const int64_t len = desc.epilogue.bias == anvil::BiasMode::kPerColumn ? desc.n : desc.m;
    CHECK_CUDA(op.bias.allocate(size_t(len) * verify::dtype_bytes(desc.epilogue.bias_dtype)));
    CHECK_CUDA(verify::fill_random(op.bias.get(), desc.epilogue.bias_dtype, len, seed * 8 + 3, 1.0f, nullptr));
    op.args.bias = op.bias.get();
  }
  if (desc.scales != anvil::ScaleMode::kNone) {
    fill_operand_scales(op, verify::scale_elements_a(desc), verify::scale_elements_b(desc), seed);
  }
  const size_t ws = anvil::workspace_size(desc);
  if (ws > 0) {
    CHECK_CUDA(op.workspace.allocate(ws));
    op.args.workspace = op.workspace.get();
    op.args.workspace_bytes = ws;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
}

inline std::string describe(const anvil::GemmDesc& d) {
  auto order = [](anvil::Order o) { return o == anvil::Order::kRowMajor ? "row" : "col"; };
  return std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) + " batch " +
         std::to_string(d.batch) + ", A " + anvil::to_string(d.a.dtype) + " " + order(d.a.order) + " ld " +
         std::to_string(d.a.ld) + ", B " + order(d.b.order) + " ld " + std::to_string(d.b.ld) + ", D " +
         anvil::to_string(d.d.dtype) + " " + order(d.d.order) + " ld " + std::to_string(d.d.ld) + ", act " +
         std::to_string(int(d.epilogue.activation)) + ", bias " + std::to_string(int(d.epilogue.bias)) +
         ", alpha " + std::to_string(d.alpha) + ", beta " + std::to_string(d.beta) +
         (d.scales != anvil::ScaleMode::kNone ? std::string(", B ") + anvil::to_string(d.b.dtype) + ", scales " +
                                                    anvil::to_string(d.scales)
                                              : std::string());
}

inline std::string describe(const anvil::verify::Comparison& c) { return anvil::verify::describe(c); }

// Bytes of D outside the logical output must still hold the poison.
inline void expect_padding_untouched(const Operands& op) {
  std::vector<unsigned char> bytes;
  ASSERT_NO_FATAL_FAILURE(download(op.d, bytes));
  const size_t width = anvil::verify::dtype_bytes(op.desc.d.dtype);
  std::vector<bool> logical(bytes.size() / width, false);
  const int64_t n_out = op.out_cols();
  for (int64_t b = 0; b < op.desc.batch; ++b)
    for (int64_t i = 0; i < op.desc.m; ++i)
      for (int64_t j = 0; j < n_out; ++j) logical[size_t(offset_of(op.desc.d, i, j, b))] = true;
  int64_t touched = 0, first = -1;
  for (size_t e = 0; e < logical.size(); ++e) {
    if (logical[e]) continue;
    for (size_t byte = 0; byte < width; ++byte) {
      if (bytes[e * width + byte] != 0xFF) {
        if (first < 0) first = int64_t(e);
        ++touched;
        break;
      }
    }
  }
  EXPECT_EQ(touched, 0) << "elements written outside the logical output, first at storage index " << first;
}

}  // namespace anvil_test
