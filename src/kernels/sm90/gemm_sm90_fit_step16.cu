// sm90-gemm's fitted widths in steps of 16 columns between the 32-column ones: 128 x 80
// and 128 x 112 narrow tiles, 128 x 144 to 128 x 240 single CTAs (sm90_configs.h). Their
// own translation unit so that they compile beside gemm_sm90_fit.cu.
#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {

Status launch_fit_width_step16(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                               Diagnostic* diag) {
  switch (variant) {
    case Sm90Variant::kFitNarrow80: return sm90_launch<FitNarrow80>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitNarrow112: return sm90_launch<FitNarrow112>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitSingle144: return sm90_launch<FitSingle144>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitSingle176: return sm90_launch<FitSingle176>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitSingle208: return sm90_launch<FitSingle208>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitSingle240: return sm90_launch<FitSingle240>(name, kSm90GemmPolicy, desc, args, diag);
    default: return fail(diag, Status::kInternalError, "%s: not a fitted-width configuration", name);
  }
}

}  // namespace anvil::detail
