// Split-K on the production kernel (split_k.h): K cut into equal slices that run as one
// strided-batched launch of sm90-gemm into fp32 partials in the workspace, then one pass
// that adds the slices in slice order and applies the fused epilogue.
#include <cuda_runtime.h>

#include "common/dtype.h"
#include "host/registry.h"
#include "host/validate.h"
#include "kernels/common/epilogue.cuh"
#include "kernels/sm90/split_k.h"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {

extern const KernelInfo kSm90Gemm;

namespace {

constexpr const char* kName = "sm90-gemm-splitk";
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

SplitKPlan plan_for(const GemmDesc& desc) { return choose_split_k(desc.m, desc.n, desc.k, desc.batch, device_sm_count()); }

// The slices as one strided batch: slice s reads A's and B's columns [s Kc, (s + 1) Kc)
// through a batch stride of Kc elements and writes its fp32 partial M x N matrix.
GemmDesc slice_desc(const GemmDesc& desc, const SplitKPlan& plan) {
  GemmDesc s = desc;
  s.k = plan.slice_k;
  s.batch = plan.slices;
  s.a.batch_stride = plan.slice_k;
  s.b.batch_stride = plan.slice_k;
  s.d = MatrixLayout{DataType::kF32, Order::kRowMajor, desc.n, desc.m * desc.n};
  s.c = s.d;
  s.alpha = 1.0f;
  s.beta = 0.0f;
  s.epilogue = EpilogueDesc{};
  s.kernel = nullptr;
  // Whole tiles only: no stream-K, no row split (the slices are the split).
  s.batch_invariant = true;
  return s;
}

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  if (desc.batch != 1) return fail(diag, Status::kNotSupported, "%s: no strided batch", kName);
  if (desc.a.order != Order::kRowMajor || desc.b.order != Order::kColMajor) {
    return fail(diag, Status::kNotSupported, "%s: needs K-major A and B read in place", kName);
  }
  const SplitKPlan plan = plan_for(desc);
  if (plan.slices <= 1) return fail(diag, Status::kNotSupported, "%s: no split pays off for this shape", kName);
  const Status s = check_warp_specialized(kName, slice_desc(desc, plan), args, true, diag);
  if (s != Status::kSuccess) return s;
  if (args != nullptr && reinterpret_cast<uintptr_t>(args->workspace) % 16 != 0) {
    return fail(diag, Status::kMisalignedOperand, "%s: the workspace must be 16-byte aligned", kName);
  }
  return Status::kSuccess;
}

size_t workspace(const GemmDesc& desc, const GemmArgs*) {
  return split_k_workspace_bytes(plan_for(desc), desc.m, desc.n);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  const SplitKPlan plan = plan_for(desc);
  GemmArgs slice_args = args;
  slice_args.d = args.workspace;
  slice_args.c = nullptr;
  slice_args.bias = nullptr;
  slice_args.workspace = nullptr;
  slice_args.workspace_bytes = 0;
  Status s = kSm90Gemm.launch(slice_desc(desc, plan), slice_args, diag);
  if (s != Status::kSuccess) return s;
  const EpilogueParams p = make_epilogue_params(desc, args);
  const int64_t quads = (p.n_out + 3) / 4 * desc.m;
  const int64_t blocks = (quads + kSumThreads - 1) / kSumThreads;
  if (blocks > 0x7fffffff) return fail(diag, Status::kNotSupported, "%s: output too large", kName);
  sum_slices_kernel<<<static_cast<unsigned>(blocks), kSumThreads, 0, args.stream>>>(
      static_cast<const float*>(args.workspace), plan.slices, desc.m, desc.n, p);
  return check_launch(diag, kName);
}

}  // namespace

extern const KernelInfo kSm90GemmSplitK{kName,
                                        "split-K on sm90-gemm for few output tiles and a long K: equal K slices as "
                                        "one strided-batched launch into fp32 partials, added in slice order with "
                                        "the fused epilogue (workspace: slices x M x N fp32)",
                                        check, launch, workspace};

}  // namespace anvil::detail
