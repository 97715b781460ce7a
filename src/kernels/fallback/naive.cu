// The naive GEMM: the dispatcher's fallback of last resort and the ladder's step 1 (the
// other steps are lab kernels, lab/kernels/ladder). One thread per output element on the
// CUDA cores, a dot product over K in fp32. Every operand read goes to global memory
// (served mostly by L1/L2), and nothing uses the tensor cores: this is the floor the later
// steps climb from.
//
// It handles every problem the API accepts (any layout, stride, alignment, K = 0, batch,
// every epilogue), which is why the library keeps it: no valid problem goes unserved.
#include "host/registry.h"
#include "host/validate.h"
#include "kernels/common/epilogue.cuh"

namespace anvil::detail {
namespace {

struct NaiveArgs {
  MatrixRef a, b;
  int64_t k;
  EpilogueParams epilogue;
};

__device__ float dot(const NaiveArgs& args, int64_t batch, int64_t row, int64_t col) {
  float acc = 0.0f;
  for (int64_t kk = 0; kk < args.k; ++kk) {
    acc += load_float(args.a.ptr, args.a.dtype, element_offset(args.a, batch, row, kk)) *
           load_float(args.b.ptr, args.b.dtype, element_offset(args.b, batch, kk, col));
  }
  return acc;
}

// threadIdx.x walks the output columns so that neighbouring threads write neighbouring
// elements of a row-major D.
__global__ void naive_gemm_kernel(NaiveArgs args) {
  const int64_t col = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const int64_t row = blockIdx.y * int64_t{blockDim.y} + threadIdx.y;
  const int64_t batch = blockIdx.z;
  const EpilogueParams& p = args.epilogue;
  if (row >= p.m || col >= p.n_out) return;
  if (p.activation == Activation::kSwiGLU) {
    const int64_t gate_col = swiglu_gate_column(col);
    finish_swiglu_element(p, batch, row, col, gate_col, dot(args, batch, row, gate_col),
                          dot(args, batch, row, gate_col + kSwiGLUBlock));
  } else {
    finish_element(p, batch, row, col, dot(args, batch, row, col));
  }
}

Status check(const GemmDesc& desc, const GemmArgs*, Diagnostic* diag) {
  if (desc.batch > 65535) return fail(diag, Status::kNotSupported, "ladder-01-naive: batch > 65535");
  if ((desc.m + 15) / 16 > 65535) return fail(diag, Status::kNotSupported, "ladder-01-naive: m too large");
  return Status::kSuccess;
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  NaiveArgs kernel_args{matrix_ref(args.a, desc.a), matrix_ref(args.b, desc.b), desc.k,
                        make_epilogue_params(desc, args)};
  const dim3 block(32, 16);
  const dim3 grid(static_cast<unsigned>((kernel_args.epilogue.n_out + 31) / 32),
                  static_cast<unsigned>((desc.m + 15) / 16), static_cast<unsigned>(desc.batch));
  naive_gemm_kernel<<<grid, block, 0, args.stream>>>(kernel_args);
  return check_launch(diag, "ladder-01-naive");
}

}  // namespace

extern const KernelInfo kLadder01Naive{"ladder-01-naive",
                                       "CUDA cores, one thread per output, fp32 accumulation; any problem",
                                       check, launch, nullptr};

}  // namespace anvil::detail
