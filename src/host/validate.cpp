#include "host/validate.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "common/dtype.h"
#include "host/registry.h"

namespace anvil::detail {
namespace {

// Sizes beyond this would let element offsets (rows * ld * batch) approach int64 range;
// real GEMMs are many orders of magnitude smaller.
constexpr int64_t kMaxExtent = int64_t{1} << 31;
constexpr int64_t kMaxElements = int64_t{1} << 46;

const char* order_name(Order o) { return o == Order::kRowMajor ? "row-major" : "column-major"; }

// Checks one operand's storage for a rows x cols logical matrix.
Status check_operand(const char* name, const MatrixLayout& layout, int64_t rows, int64_t cols, int64_t batch,
                     bool is_output, Diagnostic* diag) {
  if (layout.order != Order::kRowMajor && layout.order != Order::kColMajor) {
    return fail(diag, Status::kInvalidArgument, "%s: unknown storage order %d", name, static_cast<int>(layout.order));
  }
  const int64_t line = layout.order == Order::kRowMajor ? cols : rows;
  const int64_t lines = layout.order == Order::kRowMajor ? rows : cols;
  if (layout.ld < (line > 1 ? line : 1)) {
    return fail(diag, Status::kInvalidArgument, "%s: leading dimension %lld is smaller than a %s line of %lld", name,
                static_cast<long long>(layout.ld), order_name(layout.order), static_cast<long long>(line));
  }
  if (layout.ld > kMaxElements || (lines > 0 && layout.ld > kMaxElements / lines)) {
    return fail(diag, Status::kInvalidArgument, "%s: %lld lines of leading dimension %lld overflow the index range",
                name, static_cast<long long>(lines), static_cast<long long>(layout.ld));
  }
  if (batch > 1) {
    const int64_t one = lines == 0 ? 0 : (lines - 1) * layout.ld + line;
    if (layout.batch_stride < 0 || (is_output && layout.batch_stride < one)) {
      return fail(diag, Status::kInvalidArgument,
                  "%s: batch stride %lld must be >= one matrix (%lld elements)%s", name,
                  static_cast<long long>(layout.batch_stride), static_cast<long long>(one),
                  is_output ? " for the output" : "");
    }
    if (layout.batch_stride > 0 && layout.batch_stride > kMaxElements / batch) {
      return fail(diag, Status::kInvalidArgument, "%s: batch stride x batch overflows the index range", name);
    }
  }
  return Status::kSuccess;
}

bool is_half(DataType t) { return t == DataType::kBF16 || t == DataType::kF16; }
bool is_known(DataType t) { return t == DataType::kBF16 || t == DataType::kF16 || t == DataType::kF32; }

}  // namespace

Status validate_desc(const GemmDesc& d, Diagnostic* diag) {
  if (d.m < 0 || d.n < 0 || d.k < 0) {
    return fail(diag, Status::kInvalidArgument, "negative size: m=%lld n=%lld k=%lld", static_cast<long long>(d.m),
                static_cast<long long>(d.n), static_cast<long long>(d.k));
  }
  if (d.batch < 0) return fail(diag, Status::kInvalidArgument, "negative batch count %lld", static_cast<long long>(d.batch));
  if (d.m > kMaxExtent || d.n > kMaxExtent || d.k > kMaxExtent || d.batch > kMaxExtent) {
    return fail(diag, Status::kInvalidArgument, "a size exceeds 2^31 (m=%lld n=%lld k=%lld batch=%lld)",
                static_cast<long long>(d.m), static_cast<long long>(d.n), static_cast<long long>(d.k),
                static_cast<long long>(d.batch));
  }
  if (!is_known(d.a.dtype) || !is_known(d.b.dtype) || !is_known(d.c.dtype) || !is_known(d.d.dtype) ||
      !is_known(d.epilogue.bias_dtype)) {
    return fail(diag, Status::kInvalidArgument, "unknown dtype value");
  }
  if (!is_half(d.a.dtype) || d.a.dtype != d.b.dtype) {
    return fail(diag, Status::kNotSupported, "inputs must both be bf16 or both fp16 (got A %s, B %s)",
                to_string(d.a.dtype), to_string(d.b.dtype));
  }
  const auto act = d.epilogue.activation;
  if (static_cast<int>(act) < 0 || static_cast<int>(act) > static_cast<int>(Activation::kSwiGLU)) {
    return fail(diag, Status::kInvalidArgument, "unknown activation %d", static_cast<int>(act));
  }
  const auto bias = d.epilogue.bias;
  if (static_cast<int>(bias) < 0 || static_cast<int>(bias) > static_cast<int>(BiasMode::kPerRow)) {
    return fail(diag, Status::kInvalidArgument, "unknown bias mode %d", static_cast<int>(bias));
  }
  if (act == Activation::kSwiGLU && d.n % 128 != 0) {
    return fail(diag, Status::kNotSupported,
                "SwiGLU needs the GEMM width n to be a multiple of 128 (gate/up blocks of 64), got %lld",
                static_cast<long long>(d.n));
  }
  if (d.beta != 0.0f && d.c.dtype != d.d.dtype) {
    return fail(diag, Status::kNotSupported, "C (%s) must have D's dtype (%s)", to_string(d.c.dtype),
                to_string(d.d.dtype));
  }
  const int64_t n_out = output_cols(d);
  Status s = check_operand("A", d.a, d.m, d.k, d.batch, false, diag);
  if (s != Status::kSuccess) return s;
  s = check_operand("B", d.b, d.k, d.n, d.batch, false, diag);
  if (s != Status::kSuccess) return s;
  s = check_operand("D", d.d, d.m, n_out, d.batch, true, diag);
  if (s != Status::kSuccess) return s;
  if (d.beta != 0.0f) {
    s = check_operand("C", d.c, d.m, n_out, d.batch, false, diag);
    if (s != Status::kSuccess) return s;
    if (d.c.order != d.d.order || d.c.ld != d.d.ld) {
      return fail(diag, Status::kNotSupported, "C must have D's storage order and leading dimension");
    }
  }
  return Status::kSuccess;
}

Status validate_args(const GemmDesc& d, const GemmArgs& args, Diagnostic* diag) {
  if (is_noop(d)) return Status::kSuccess;
  if (args.d == nullptr) return fail(diag, Status::kInvalidArgument, "D is null");
  if (d.k > 0 && (args.a == nullptr || args.b == nullptr)) {
    return fail(diag, Status::kInvalidArgument, "%s is null", args.a == nullptr ? "A" : "B");
  }
  if (d.beta != 0.0f && args.c == nullptr) return fail(diag, Status::kInvalidArgument, "C is null but beta != 0");
  if (d.epilogue.bias != BiasMode::kNone && args.bias == nullptr) {
    return fail(diag, Status::kInvalidArgument, "bias is null but a bias mode is set");
  }
  // Every kernel reads whole elements; TMA-specific 16-byte rules are the kernels' own checks.
  auto misaligned = [](const void* p, DataType t) { return reinterpret_cast<uintptr_t>(p) % dtype_size(t) != 0; };
  if (misaligned(args.a, d.a.dtype) || misaligned(args.b, d.b.dtype) || misaligned(args.d, d.d.dtype) ||
      misaligned(args.c, d.c.dtype) || misaligned(args.bias, d.epilogue.bias_dtype)) {
    return fail(diag, Status::kMisalignedOperand, "an operand pointer is not aligned to its element size");
  }
  if (args.workspace_bytes > 0 && args.workspace == nullptr) {
    return fail(diag, Status::kInvalidArgument, "workspace_bytes is %zu but workspace is null", args.workspace_bytes);
  }
  return Status::kSuccess;
}

Status validate_device(Diagnostic* diag) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  int major = 0, minor = 0;
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (e != cudaSuccess) {
    cudaGetLastError();  // do not leave a sticky-looking error for the caller's next check
    return fail(diag, Status::kArchMismatch, "no usable CUDA device: %s", cudaGetErrorString(e));
  }
  if (major != 9 || minor != 0) {
    return fail(diag, Status::kArchMismatch, "anvil's kernels are built for sm_90a; device %d is sm_%d%d", device,
                major, minor);
  }
  return Status::kSuccess;
}

int device_sm_count() {
  // Per device, so that a process driving GPUs of different sizes plans each for its own.
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) {
    cudaGetLastError();
    return 132;
  }
  std::atomic<int>* slot = device < kMaxDevices ? &cached[device] : nullptr;
  if (slot != nullptr && slot->load() > 0) return slot->load();
  int count = 0;
  if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || count <= 0) {
    cudaGetLastError();
    return 132;
  }
  if (slot != nullptr) slot->store(count);
  return count;
}

}  // namespace anvil::detail
