// sm90-gemm's folded-slice configurations (sm90_configs.h: Sliced96, SlicedPair128,
// SlicedPair192):
// batch-invariant mode's split weights beyond the decode kernels' range, each tile's K
// summed slice by slice in one CTA (consumer.cuh, run_sliced_mainloop). Their own
// translation unit, compiled beside gemm_sm90.cu and gemm_sm90_fit.cu.
#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {

Status launch_sliced(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args, int k_slices,
                     Diagnostic* diag) {
  LaunchPolicy policy = kSm90GemmPolicy;
  policy.k_slices = k_slices;
  switch (variant) {
    case Sm90Variant::kSliced96: return sm90_launch<Sliced96>(name, policy, desc, args, diag);
    case Sm90Variant::kSlicedPair128: return sm90_launch<SlicedPair128>(name, policy, desc, args, diag);
    case Sm90Variant::kSlicedPair192: return sm90_launch<SlicedPair192>(name, policy, desc, args, diag);
    default: return fail(diag, Status::kInternalError, "%s: not a folded-slice configuration", name);
  }
}

}  // namespace anvil::detail
