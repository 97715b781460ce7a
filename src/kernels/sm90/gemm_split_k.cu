// The second half of sm90-gemm's split-K (split_k.h): the slices' fp32 partials, added in
// slice order, through the fused epilogue into D.
#include <cuda_runtime.h>

#include "common/dtype.h"
#include "host/registry.h"
#include "host/validate.h"
#include "kernels/common/epilogue.cuh"
#include "kernels/sm90/split_k.h"
#include "plan/launch.h"

namespace anvil::detail {

namespace {

constexpr const char* kName = "sm90-gemm (split-K sum)";
constexpr int kSumThreads = 256;

// One thread per four neighbouring outputs of a row: float4 reads of every slice's partial
// (the partials are M x N fp32, row-major, slice after slice), summed in slice order.
// SwiGLU outputs read their gate and up columns' partials instead.
__global__ void __launch_bounds__(kSumThreads) sum_slices_kernel(const float* __restrict__ partials, int slices,
                                                                 int64_t m, int64_t n, EpilogueParams p) {
  const int64_t quads_per_row = (p.n_out + 3) / 4;
  const int64_t quad = static_cast<int64_t>(blockIdx.x) * kSumThreads + threadIdx.x;
  if (quad >= quads_per_row * m) return;
  const int64_t row = quad / quads_per_row;
  const int64_t col0 = (quad % quads_per_row) * 4;
  const int64_t slice_elems = m * n;
  const bool swiglu = p.activation == Activation::kSwiGLU;
  if (!swiglu && col0 + 4 <= n && n % 4 == 0) {
    const float* src = partials + row * n + col0;
    float4 acc = *reinterpret_cast<const float4*>(src);
    for (int s = 1; s < slices; ++s) {
      const float4 v = *reinterpret_cast<const float4*>(src + s * slice_elems);
      acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    }
    finish_element(p, 0, row, col0 + 0, acc.x);
    finish_element(p, 0, row, col0 + 1, acc.y);
    finish_element(p, 0, row, col0 + 2, acc.z);
    finish_element(p, 0, row, col0 + 3, acc.w);
    return;
  }
  for (int64_t col = col0; col < col0 + 4 && col < p.n_out; ++col) {
    const int64_t first = swiglu ? swiglu_gate_column(col) : col;
    const float* src = partials + row * n + first;
    float acc = src[0];
    float up = swiglu ? src[kSwiGLUBlock] : 0.0f;
    for (int s = 1; s < slices; ++s) {
      acc += src[s * slice_elems];
      if (swiglu) up += src[s * slice_elems + kSwiGLUBlock];
    }
    if (swiglu) {
      finish_swiglu_element(p, 0, row, col, first, acc, up);
    } else {
      finish_element(p, 0, row, col, acc);
    }
  }
}

}  // namespace

Status launch_split_k_sum(const GemmDesc& desc, const GemmArgs& args, int slices, Diagnostic* diag) {
  const EpilogueParams p = make_epilogue_params(desc, args);
  const int64_t quads = (p.n_out + 3) / 4 * desc.m;
  const int64_t blocks = (quads + kSumThreads - 1) / kSumThreads;
  if (blocks > 0x7fffffff) return fail(diag, Status::kNotSupported, "%s: output too large", kName);
  sum_slices_kernel<<<static_cast<unsigned>(blocks), kSumThreads, 0, args.stream>>>(
      static_cast<const float*>(args.workspace), slices, desc.m, desc.n, p);
  return check_launch(diag, kName);
}

}  // namespace anvil::detail
