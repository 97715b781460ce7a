// anvil public GEMM API. Host-only header: include it from .cpp or .cu files alike.
//
//   D = epilogue(alpha * op(A) * op(B), bias) + beta * C
//
// A is M x K, B is K x N, C and D are M x N (logical shapes), each stored row- or
// column-major with its own leading dimension. The nn.Linear layout used by LLMs
// (X[M,K] row-major, W[N,K] row-major, Y = X W^T) is A row-major and B column-major
// with ldb = K.
//
// No call allocates, synchronises or throws: gemm() only enqueues work on the given
// stream, so it can be captured in a CUDA graph.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace anvil {

enum class Status : int {
  kSuccess = 0,
  kInvalidArgument,    // null pointer, negative size, leading dimension too small, D overlapping an input, ...
  kMisalignedOperand,  // a pointer or stride breaks an alignment no kernel can work around
  kNotSupported,       // the combination (dtype, layout, epilogue, kernel) is not implemented
  kWorkspaceTooSmall,  // workspace_bytes < workspace_size(desc)
  kArchMismatch,       // the current GPU cannot run the chosen kernel (anvil needs sm_90)
  kCudaError,          // a CUDA runtime call failed; the message names it
  kInternalError,
  kDriverUnavailable,  // no CUDA driver, one too old for anvil's runtime, or no GPU it can use
};

enum class DataType : int { kBF16 = 0, kF16, kF32 };
enum class Order : int { kRowMajor = 0, kColMajor };

enum class Activation : int {
  kIdentity = 0,
  kReLU,
  kGeluErf,   // x * 0.5 * (1 + erf(x / sqrt(2)))
  kGeluTanh,  // x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
  kSiLU,      // x * sigmoid(x)
  kSwiGLU,    // silu(gate) * up over paired column blocks: see swiglu.h
};

enum class BiasMode : int { kNone = 0, kPerColumn /* length N, nn.Linear */, kPerRow /* length M */ };

// One operand in memory. ld is in elements; batch_stride is the element distance
// between consecutive matrices of a strided batch (ignored when batch == 1).
struct MatrixLayout {
  DataType dtype = DataType::kBF16;
  Order order = Order::kRowMajor;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

struct EpilogueDesc {
  Activation activation = Activation::kIdentity;
  BiasMode bias = BiasMode::kNone;
  DataType bias_dtype = DataType::kF32;
};

// What to compute. With activation kSwiGLU, n is the GEMM width (gate + up columns)
// and D / C are M x n/2.
struct GemmDesc {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  MatrixLayout a, b, c, d;
  float alpha = 1.0f;
  float beta = 0.0f;
  EpilogueDesc epilogue;
  // nullptr or "auto": the dispatcher picks. Otherwise the name of one kernel
  // (see kernel_name()), e.g. "sm90-gemm" or "sm90-decode".
  const char* kernel = nullptr;
  // Batch invariance: a row of D is bitwise the same whatever m is (whatever other rows
  // share the call). The dispatcher then makes no m-dependent choice: K-major problems
  // always go to the decode kernel with a K split fixed by (n, k, batch). Costs speed
  // where m is large; see docs/decode.md.
  bool batch_invariant = false;
};

// Where the data is. c may equal d (in-place residual add: same pointer and layout) but
// may not overlap it otherwise; d may not overlap a or b. c may be null when beta == 0,
// a and b when k == 0. Each pointer must be aligned to its element size.
struct GemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

// Why a call was refused, in words.
struct Diagnostic {
  Status status = Status::kSuccess;
  char message[256] = {};
};

const char* to_string(Status status);
const char* to_string(DataType dtype);

// Answers before launch whether gemm(desc, args) would run. args may be null to check
// the description alone (pointer alignment is then not checked).
Status can_implement(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag = nullptr);

// Workspace bytes gemm(desc, ...) runs fastest with, assuming 16-byte-aligned A and B base
// pointers. Two parts: operands with other layouts or odd strides are repacked into it
// before the tensor-core kernel (required: less is kWorkspaceTooSmall); and where the
// output tiles would leave SMs idle in the last wave (e.g. 256 x 10240), sm90-gemm's
// stream-K plan parks partial tiles there (optional: with less, or a workspace that is
// not 16-byte aligned, the call runs a whole-tile plan, and results may differ in the
// last bits). 0 for the nn.Linear layout with aligned strides and well-filled waves.
size_t workspace_size(const GemmDesc& desc);
// The same for these pointers (a misaligned A or B base is repacked too).
size_t workspace_size(const GemmDesc& desc, const GemmArgs& args);

// Enqueues D = ... on args.stream. Returns the same status can_implement would, or
// kCudaError if the launch itself failed.
Status gemm(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag = nullptr);

// The kernels anvil carries, by name, in ladder order then production ones.
int kernel_count();
const char* kernel_name(int index);
const char* kernel_summary(int index);

// Which kernel the dispatcher would pick for desc (nullptr if none can run it).
const char* dispatch_name(const GemmDesc& desc);

// Convenience: the nn.Linear problem Y[M,N] = X[M,K] W[N,K]^T with all row-major storage.
GemmDesc linear_desc(int64_t m, int64_t n, int64_t k, DataType in, DataType out);

}  // namespace anvil
