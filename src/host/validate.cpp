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
    // Inputs may repeat one matrix for every batch (stride 0, e.g. a shared weight); an
    // output may not, or two batches would write the same elements.
    const int64_t one = lines == 0 ? 0 : (lines - 1) * layout.ld + line;
    if (layout.batch_stride < 0) {
      return fail(diag, Status::kInvalidArgument, "%s: batch stride %lld is negative (%s)", name,
                  static_cast<long long>(layout.batch_stride),
                  is_output ? "an output's must be >= one matrix" : "0 repeats one matrix for every batch");
    }
    if (is_output && layout.batch_stride < one) {
      return fail(diag, Status::kInvalidArgument,
                  "%s: batch stride %lld is smaller than one matrix (%lld elements): output batches would overlap",
                  name, static_cast<long long>(layout.batch_stride), static_cast<long long>(one));
    }
    if (layout.batch_stride > 0 && layout.batch_stride > kMaxElements / batch) {
      return fail(diag, Status::kInvalidArgument, "%s: batch stride x batch overflows the index range", name);
    }
  }
  return Status::kSuccess;
}

// The memory one operand's kernels address: `lines` lines of `line` elements, `ld`
// elements apart, repeated `batch` times `batch_stride` apart (once when the stride is 0).
struct Extent {
  const void* base;
  const MatrixLayout& layout;
  int64_t rows, cols, batch;

  int64_t element_bytes() const { return static_cast<int64_t>(dtype_size(layout.dtype)); }
  int64_t line() const { return layout.order == Order::kRowMajor ? cols : rows; }
  int64_t lines() const { return layout.order == Order::kRowMajor ? rows : cols; }
  int64_t copies() const { return batch > 1 && layout.batch_stride > 0 ? batch : 1; }
  bool empty() const { return base == nullptr || line() == 0 || lines() == 0 || batch == 0; }
  // Bytes from the base to one past the last element addressed.
  int64_t span_bytes() const {
    return ((copies() - 1) * layout.batch_stride + (lines() - 1) * layout.ld + line()) * element_bytes();
  }
};

// Whether two operands address a common byte. Disjoint spans never do. Overlapping spans
// still do not when both are lines of the same pitch that interleave without touching,
// e.g. two column slices of one wider row-major matrix; batches repeat that pattern when
// both batch strides are the same whole number of lines. Anything else that overlaps in
// span is treated as sharing memory.
bool overlaps(const Extent& x, const Extent& y) {
  if (x.empty() || y.empty()) return false;
  const int64_t x0 = static_cast<int64_t>(reinterpret_cast<uintptr_t>(x.base));
  const int64_t y0 = static_cast<int64_t>(reinterpret_cast<uintptr_t>(y.base));
  if (x0 + x.span_bytes() <= y0 || y0 + y.span_bytes() <= x0) return false;
  const int64_t pitch = x.layout.ld * x.element_bytes();
  if (pitch != y.layout.ld * y.element_bytes()) return true;
  if (x.copies() > 1 || y.copies() > 1) {
    const int64_t x_stride = x.copies() > 1 ? x.layout.batch_stride * x.element_bytes() : 0;
    const int64_t y_stride = y.copies() > 1 ? y.layout.batch_stride * y.element_bytes() : 0;
    if ((x_stride != 0 && y_stride != 0 && x_stride != y_stride) || x_stride % pitch != 0 || y_stride % pitch != 0) {
      return true;
    }
  }
  // Lines start at x0 + i * pitch and y0 + j * pitch; on a circle of one pitch, y's lines
  // begin `shift` bytes after x's and must fit in the gap x's leave.
  const int64_t x_line = x.line() * x.element_bytes();
  const int64_t y_line = y.line() * y.element_bytes();
  const int64_t shift = ((y0 - x0) % pitch + pitch) % pitch;
  return !(shift >= x_line && shift + y_line <= pitch);
}

bool is_half(DataType t) { return t == DataType::kBF16 || t == DataType::kF16; }
bool is_known(DataType t) { return t == DataType::kBF16 || t == DataType::kF16 || t == DataType::kF32; }
bool is_known_input(DataType t) { return is_known(t) || is_fp8(t); }

// FP8 inputs (docs/fp8.md): what the sm90-fp8 kernel reads, refused here with the reason
// so that every entry point says the same.
Status validate_fp8(const GemmDesc& d, Diagnostic* diag) {
  if (d.a.dtype == DataType::kE5M2 && d.b.dtype == DataType::kE5M2) {
    return fail(diag, Status::kNotSupported,
                "FP8 pairs are e4m3 x e4m3, e5m2 x e4m3 and e4m3 x e5m2; e5m2 x e5m2 is not built (no training "
                "recipe multiplies two gradients)");
  }
  if (d.a.order != Order::kRowMajor || d.b.order != Order::kColMajor) {
    return fail(diag, Status::kNotSupported,
                "FP8 operands must both be K-major (A row-major, B column-major: nn.Linear's X and W); wgmma reads "
                "8-bit operands K-major only and anvil does not transpose them");
  }
  if (d.k % 16 != 0) {
    return fail(diag, Status::kNotSupported,
                "FP8 needs K to be a multiple of 16 (got %lld): TMA reads rows in 16-byte units", static_cast<long long>(d.k));
  }
  if (d.a.ld % 16 != 0 || d.b.ld % 16 != 0) {
    return fail(diag, Status::kMisalignedOperand,
                "FP8 leading dimensions must be multiples of 16 elements (16 bytes, TMA's stride unit); lda=%lld ldb=%lld",
                static_cast<long long>(d.a.ld), static_cast<long long>(d.b.ld));
  }
  if (d.batch > 1 && (d.a.batch_stride % 16 != 0 || d.b.batch_stride % 16 != 0 || d.a.batch_stride == 0 ||
                      d.b.batch_stride == 0)) {
    return fail(diag, Status::kNotSupported, "FP8 batch strides must be non-zero multiples of 16 elements");
  }
  const int mode = static_cast<int>(d.scales);
  if (mode < 0 || mode > static_cast<int>(ScaleMode::kBlock128)) {
    return fail(diag, Status::kInvalidArgument, "unknown scale mode %d", mode);
  }
  if (d.scales == ScaleMode::kBlock128 && (d.a.dtype != DataType::kE4M3 || d.b.dtype != DataType::kE4M3)) {
    return fail(diag, Status::kNotSupported, "block128 scales are built for e4m3 x e4m3 (DeepSeek-V3's recipe), not %s x %s",
                to_string(d.a.dtype), to_string(d.b.dtype));
  }
  if (d.batch > 1 && d.scales != ScaleMode::kNone && d.scales != ScaleMode::kTensor) {
    return fail(diag, Status::kNotSupported, "%s scales take one matrix (batch 1); batched FP8 takes per-tensor scales",
                to_string(d.scales));
  }
  if (d.batch_invariant) {
    return fail(diag, Status::kNotSupported, "batch-invariant mode is built for bf16/fp16 inputs, not FP8");
  }
  if (d.m > (int64_t{1} << 30) || d.n > (int64_t{1} << 30) || d.k > (int64_t{1} << 30)) {
    return fail(diag, Status::kNotSupported, "FP8: sizes beyond 2^30");
  }
  return Status::kSuccess;
}

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
  if (!is_known_input(d.a.dtype) || !is_known_input(d.b.dtype) || !is_known_input(d.c.dtype) ||
      !is_known_input(d.d.dtype) || !is_known_input(d.epilogue.bias_dtype)) {
    return fail(diag, Status::kInvalidArgument, "unknown dtype value");
  }
  if (is_fp8(d.c.dtype) || is_fp8(d.d.dtype) || is_fp8(d.epilogue.bias_dtype)) {
    return fail(diag, Status::kNotSupported, "C, D and the bias are bf16, fp16 or fp32 (got C %s, D %s, bias %s); "
                "8-bit floats are input types only", to_string(d.c.dtype), to_string(d.d.dtype),
                to_string(d.epilogue.bias_dtype));
  }
  const bool fp8 = is_fp8(d.a.dtype) && is_fp8(d.b.dtype);
  if (!fp8 && (!is_half(d.a.dtype) || d.a.dtype != d.b.dtype)) {
    return fail(diag, Status::kNotSupported,
                "inputs must both be bf16, both fp16, or both 8-bit floats (e4m3/e5m2) (got A %s, B %s)",
                to_string(d.a.dtype), to_string(d.b.dtype));
  }
  if (!fp8 && d.scales != ScaleMode::kNone) {
    return fail(diag, Status::kNotSupported, "scales (%s) apply to FP8 inputs only; A is %s",
                to_string(d.scales), to_string(d.a.dtype));
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
  if (fp8) {
    const Status f = validate_fp8(d, diag);
    if (f != Status::kSuccess) return f;
  }
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
  // With k == 0 no element of A or B is read (D = act(bias) + beta C): they may be null.
  const bool reads_inputs = d.k > 0;
  if (reads_inputs && (args.a == nullptr || args.b == nullptr)) {
    return fail(diag, Status::kInvalidArgument, "%s is null", args.a == nullptr ? "A" : "B");
  }
  const bool reads_c = d.beta != 0.0f;
  if (reads_c && args.c == nullptr) return fail(diag, Status::kInvalidArgument, "C is null but beta != 0");
  if (d.epilogue.bias != BiasMode::kNone && args.bias == nullptr) {
    return fail(diag, Status::kInvalidArgument, "bias is null but a bias mode is set");
  }
  if (d.scales != ScaleMode::kNone && reads_inputs) {
    if (args.scale_a == nullptr || args.scale_b == nullptr) {
      return fail(diag, Status::kInvalidArgument, "%s scales: scale_%s is null", to_string(d.scales),
                  args.scale_a == nullptr ? "a" : "b");
    }
    if (reinterpret_cast<uintptr_t>(args.scale_a) % 4 != 0 || reinterpret_cast<uintptr_t>(args.scale_b) % 4 != 0) {
      return fail(diag, Status::kMisalignedOperand, "scale_a and scale_b are fp32 arrays: 4-byte aligned");
    }
  }
  // Every kernel reads and writes whole elements; TMA-specific 16-byte rules are the
  // kernels' own checks.
  const struct {
    const char* name;
    const void* pointer;
    DataType dtype;
  } pointers[] = {{"A", args.a, d.a.dtype},
                  {"B", args.b, d.b.dtype},
                  {"C", args.c, d.c.dtype},
                  {"D", args.d, d.d.dtype},
                  {"bias", args.bias, d.epilogue.bias_dtype}};
  for (const auto& p : pointers) {
    const size_t align = dtype_size(p.dtype);
    if (reinterpret_cast<uintptr_t>(p.pointer) % align != 0) {
      return fail(diag, Status::kMisalignedOperand, "%s (%p) must be aligned to %zu bytes, the size of a %s element",
                  p.name, p.pointer, align, to_string(p.dtype));
    }
  }
  if (args.workspace_bytes > 0 && args.workspace == nullptr) {
    return fail(diag, Status::kInvalidArgument, "workspace_bytes is %zu but workspace is null", args.workspace_bytes);
  }
  // D is written while A, B and C are read, by many CTAs in no fixed order: a D that shares
  // memory with an input would make the result depend on that order.
  const int64_t n_out = output_cols(d);
  const Extent out{args.d, d.d, d.m, n_out, d.batch};
  if (reads_inputs) {
    if (overlaps(out, Extent{args.a, d.a, d.m, d.k, d.batch})) {
      return fail(diag, Status::kInvalidArgument, "D overlaps A: the output must not share memory with an input");
    }
    if (overlaps(out, Extent{args.b, d.b, d.k, d.n, d.batch})) {
      return fail(diag, Status::kInvalidArgument, "D overlaps B: the output must not share memory with an input");
    }
  }
  if (reads_c) {
    // In place (C == D, same layout) each element is read once, by the thread that then
    // writes it: legal. Any other sharing is not.
    const bool in_place = args.c == args.d && d.c.order == d.d.order && d.c.ld == d.d.ld &&
                          (d.batch == 1 || d.c.batch_stride == d.d.batch_stride);
    if (!in_place && overlaps(out, Extent{args.c, d.c, d.m, n_out, d.batch})) {
      return fail(diag, Status::kInvalidArgument,
                  "D overlaps C without being C: C may be D itself (same pointer and layout), not part of it");
    }
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
    switch (e) {
      // The runtime found no driver library, or one older than the runtime anvil was
      // built with, or a driver without a GPU it may use.
      case cudaErrorInsufficientDriver:
      case cudaErrorStubLibrary:
      case cudaErrorCallRequiresNewerDriver:
      case cudaErrorSystemDriverMismatch:
      case cudaErrorCompatNotSupportedOnDevice:
        return fail(diag, Status::kDriverUnavailable, "no usable CUDA driver: %s (%s)", cudaGetErrorName(e),
                    cudaGetErrorString(e));
      case cudaErrorNoDevice:
      case cudaErrorDevicesUnavailable:
        return fail(diag, Status::kDriverUnavailable, "the CUDA driver sees no usable GPU: %s (%s)",
                    cudaGetErrorName(e), cudaGetErrorString(e));
      default:
        return fail(diag, Status::kCudaError, "cannot query the current device: %s (%s)", cudaGetErrorName(e),
                    cudaGetErrorString(e));
    }
  }
#if defined(ANVIL_HAVE_SM100)
  // sm_100 runs the Blackwell GEMM (dispatch.cpp); nothing else of anvil's runs there.
  if (major == 10 && minor == 0) return Status::kSuccess;
  constexpr const char* kBuiltFor = "sm_90a and sm_100a";
#else
  constexpr const char* kBuiltFor = "sm_90a";
#endif
  if (major != 9 || minor != 0) {
    return fail(diag, Status::kArchMismatch, "anvil's kernels are built for %s; device %d is sm_%d%d", kBuiltFor,
                device, major, minor);
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
