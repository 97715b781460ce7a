// sm90-fp8: the production Hopper GEMM's kernel (gemm_kernel.cuh) with 8-bit float inputs
// (e4m3, and the mixed e5m2 pairs) and their scales. The planner chooses the configuration
// (fp8_plan.h); only the configurations it can return are instantiated. Operands are read
// in place, K-major, through TMA: there is no repack for 8-bit inputs (validate.cpp says
// what is refused).
#include <cuda_runtime.h>

#include "common/dtype.h"
#include "host/registry.h"
#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/launch.cuh"
#include "kernels/sm90/sm90_configs.h"
#include "plan/launch.h"

namespace anvil::detail {
namespace {

constexpr const char* kName = "sm90-fp8";

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  if (!is_fp8(desc.a.dtype) || !is_fp8(desc.b.dtype)) {
    return fail(diag, Status::kNotSupported, "%s: takes e4m3/e5m2 inputs (got A %s, B %s); sm90-gemm takes bf16/fp16",
                kName, to_string(desc.a.dtype), to_string(desc.b.dtype));
  }
  if (desc.k == 0) return fail(diag, Status::kNotSupported, "%s: K = 0 has no tensor-core work", kName);
  if (args != nullptr && (reinterpret_cast<uintptr_t>(args->a) % 16 != 0 || reinterpret_cast<uintptr_t>(args->b) % 16 != 0)) {
    return fail(diag, Status::kMisalignedOperand, "%s: TMA reads FP8 operands from 16-byte aligned A and B (A %p, B %p)",
                kName, args->a, args->b);
  }
  // SwiGLU's 128-column gate/up pairs: the planner gives it 128- or 256-wide tiles only
  // (fp8_variant_runs; the fitted widths do not take it).
  return sm90_check<Fp8NarrowPair>(kName, desc, args, diag);
}

// One launch of `variant` (batch_is_k_slice: the batch is split-K's slices of K). The
// fitted widths compile in their own translation unit (gemm_sm90_fp8_fit.cu).
Status launch_fp8_variant(Fp8Variant variant, bool batch_is_k_slice, const GemmDesc& desc, const GemmArgs& args,
                          Diagnostic* diag) {
  if (fp8_fit_variant(variant)) return launch_fp8_fit_width(variant, kName, batch_is_k_slice, desc, args, diag);
  LaunchPolicy policy = kSm90GemmPolicy;
  policy.batch_is_k_slice = batch_is_k_slice;
  return with_fp8_tile_config(variant, [&](auto config) {
    return sm90_launch<decltype(config)>(kName, policy, desc, args, diag);
  });
}

}  // namespace

Status launch_fp8_plan(const LaunchPlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  if (!fp8_variant_runs(plan.fp8_variant, desc.a.dtype, desc.b.dtype, desc.scales,
                       desc.epilogue.activation == Activation::kSwiGLU && plan.k_splits <= 1)) {
    return fail(diag, Status::kInternalError, "%s: %s does not run %s x %s with %s scales", kName,
                fp8_variant_name(plan.fp8_variant), to_string(desc.a.dtype), to_string(desc.b.dtype),
                to_string(desc.scales));
  }
  if (plan.k_splits > 1) {
    // Split-K (fp8_plan.h): the slices as one strided batch of the planned configuration
    // into the workspace's fp32 partials (their scales applied as to whole tiles, block
    // scales from each slice's first K block on), then the sum through the epilogue.
    if (plan.slice_k % kFp8KBlock != 0 || plan.slice_k * plan.k_splits != desc.k) {
      return fail(diag, Status::kInternalError, "%s: split-K slices of K = %lld are not whole %lld-wide blocks of K = %lld",
                  kName, static_cast<long long>(plan.slice_k), static_cast<long long>(kFp8KBlock),
                  static_cast<long long>(desc.k));
    }
    return launch_split_k(desc, args, plan, [&](const GemmDesc& slices, const GemmArgs& slice_args) {
      return launch_fp8_variant(plan.fp8_variant, true, slices, slice_args, diag);
    }, diag);
  }
  return launch_fp8_variant(plan.fp8_variant, false, desc, args, diag);
}

extern const KernelInfo kSm90Fp8{kName,
                                 "FP8 (e4m3 x e4m3, e5m2 x e4m3, e4m3 x e5m2), fp32 accumulation: sm90-gemm's kernel "
                                 "with 128-wide K stages; per-tensor, per-row/column or DeepSeek-V3 block scales "
                                 "(1x128 activations, 128x128 weights, promoted to fp32 every K block); "
                                 "K-major operands read in place; split-K in whole K blocks for few tiles",
                                 check, launch_family<KernelFamily::kSm90Fp8>,
                                 family_workspace<KernelFamily::kSm90Fp8>};

}  // namespace anvil::detail
