// anvil public GEMM API. Host-only header: include it from .cpp or .cu files alike.
//
//   D = epilogue(alpha * op(A) * op(B), bias) + beta * C
//
// A is M x K, B is K x N, C and D are M x N (logical shapes), each stored row- or
// column-major with its own leading dimension. The nn.Linear layout used by LLMs
// (X[M,K] row-major, W[N,K] row-major, Y = X W^T) is A row-major and B column-major
// with ldb = K.
//
// FP8 (e4m3, e5m2) inputs: both K-major (the nn.Linear layout), with optional scales that
// multiply the fp32 sums before the epilogue (ScaleMode; docs/fp8.md).
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

// kE4M3 and kE5M2 are the OCP 8-bit floats (e4m3: finite, max 448; e5m2: max 57344),
// input types only: C, D and the bias are bf16, fp16 or fp32.
enum class DataType : int { kBF16 = 0, kF16, kF32, kE4M3, kE5M2 };
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

// How FP8 inputs are scaled. The sum over K is multiplied by the scales of the elements
// it reads, in fp32, before alpha, bias and activation:
//   z[i,j] = alpha * sum_k A[i,k] sa(i,k) B[k,j] sb(k,j)
// All scales are fp32 arrays in device memory (GemmArgs::scale_a, scale_b), read by the
// kernel, so a CUDA graph replays with whatever scales the quantization wrote.
enum class ScaleMode : int {
  kNone = 0,  // sa = sb = 1
  kTensor,    // one scale per tensor: sa = scale_a[0], sb = scale_b[0]
  kRowColumn, // per row of A (token) and per column of B (output channel): scale_a[M], scale_b[N]
  // DeepSeek-V3 blocks. A: one scale per row and 128 values of K, stored M-major,
  // sa(i,k) = scale_a[(k / 128) * M + i] (an fp32 [ceil(K/128), M] row-major array).
  // B: one scale per 128 x 128 block of the N x K weight,
  // sb(k,j) = scale_b[(j / 128) * ceil(K/128) + k / 128] (fp32 [ceil(N/128), ceil(K/128)]).
  // The kernel sums each 128-wide K block on the tensor cores and adds it, scaled, to an
  // fp32 total in registers.
  kBlock128,
};

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
  // share the call). Each output's K is then summed in one order fixed by (n, k, batch):
  // whole, or for weights of few tiles and a long K in a fixed number of slices, which
  // from 129 rows take a workspace (workspace_size counts it; without it a slower kernel
  // gives the same bits). See docs/planner.md#batch-invariance.
  bool batch_invariant = false;
  // FP8 inputs only (kNone otherwise): how the sums are scaled, and which scale arrays
  // GemmArgs::scale_a / scale_b point to.
  ScaleMode scales = ScaleMode::kNone;
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
  // fp32 scales in device memory, laid out as GemmDesc::scales says (null for kNone).
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
};

// Why a call was refused, in words.
struct Diagnostic {
  Status status = Status::kSuccess;
  char message[256] = {};
};

const char* to_string(Status status);
const char* to_string(DataType dtype);
const char* to_string(ScaleMode scales);

// Answers before launch whether gemm(desc, args) would run. args may be null to check
// the description alone (pointer alignment is then not checked).
Status can_implement(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag = nullptr);

// Workspace bytes gemm(desc, ...) runs fastest with, assuming 16-byte-aligned A and B base
// pointers. Two parts: operands with other layouts or odd strides are repacked into it
// before the tensor-core kernel (required: less is kWorkspaceTooSmall); and where the
// output tiles would leave SMs idle (e.g. 256 x 10240 in its last wave, or few tiles and
// a long K such as an FP8 64 x 576 x 7168), sm90-gemm's stream-K plan parks partial tiles
// there, or sm90-gemm's and sm90-fp8's split-K plans write one fp32 partial per slice
// (optional: with less, or a workspace that is not 16-byte aligned, the call runs a
// whole-tile plan, and results may differ in the last bits). 0 for the nn.Linear layout
// with aligned strides and well-filled waves.
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
