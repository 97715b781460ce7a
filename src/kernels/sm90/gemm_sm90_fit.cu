// The fitted-width configurations of sm90-gemm: tiles 160, 192 or 224 columns wide, in
// multicast pairs or single CTAs, for problems whose column count leaves the 128- and
// 256-wide tiles' last wave partly idle, and 64 or 96 wide in single CTAs for problems
// of a few hundred rows that wider tiles leave mostly idle (plan.h chooses). Otherwise the design of the
// other configurations: persistent, warp-specialized, banded raster.
#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {

Status launch_fit_width(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                        Diagnostic* diag) {
  switch (variant) {
    case Sm90Variant::kFitPair160: return sm90_launch<FitPair160>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitPair192: return sm90_launch<FitPair192>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitPair224: return sm90_launch<FitPair224>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitSingle160: return sm90_launch<FitSingle160>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitSingle192: return sm90_launch<FitSingle192>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitSingle224: return sm90_launch<FitSingle224>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitNarrow64: return sm90_launch<FitNarrow64>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kFitNarrow96: return sm90_launch<FitNarrow96>(name, kSm90GemmPolicy, desc, args, diag);
    default: return launch_fit_width_step16(variant, name, desc, args, diag);
  }
}

}  // namespace anvil::detail
