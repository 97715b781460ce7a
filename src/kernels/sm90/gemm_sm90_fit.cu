// The fitted-width configurations of sm90-gemm: multicast pairs of 128 x 160 and 128 x 224
// tiles, for problems whose column count leaves the 128- and 256-wide tiles' last wave
// partly idle (plan.h chooses). Otherwise the pairs' design: 2-CTA clusters along M that
// multicast the shared B tile, persistent with a banded raster.
#include "kernels/sm90/fit_pairs.h"
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {

Status launch_fit_pair(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                       Diagnostic* diag) {
  return variant == Sm90Variant::kFitPair160 ? sm90_launch<FitPair160>(name, kSm90GemmPolicy, desc, args, diag)
                                             : sm90_launch<FitPair224>(name, kSm90GemmPolicy, desc, args, diag);
}

}  // namespace anvil::detail
