// sm90-fp8's fitted-width configurations (sm90_configs.h: Fp8FitPair160 ... Fp8FitSingle224):
// tiles 160, 192 or 224 columns wide with e4m3 inputs, in multicast pairs or single CTAs,
// for weights whose width leaves the 128- and 256-wide tiles' last wave partly idle
// (fp8_plan.h chooses). Their own translation unit, compiled beside gemm_sm90_fp8.cu.
#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {

Status launch_fp8_fit_width(Fp8Variant variant, const char* name, bool batch_is_k_slice, const GemmDesc& desc,
                            const GemmArgs& args, Diagnostic* diag) {
  if (!fp8_fit_variant(variant)) {
    return fail(diag, Status::kInternalError, "%s: not a fitted-width configuration", name);
  }
  LaunchPolicy policy = kSm90GemmPolicy;
  policy.batch_is_k_slice = batch_is_k_slice;
  return with_fp8_fit_config(variant, [&](auto config) {
    return sm90_launch<decltype(config)>(name, policy, desc, args, diag);
  });
}

}  // namespace anvil::detail
