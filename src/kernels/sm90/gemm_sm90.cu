// The production Hopper GEMM the dispatcher picks for problems it can route through TMA:
// persistent, warp-specialized, banded raster.
// Configuration choice is in sm90_heuristic.h; only the configurations it can return
// are instantiated here.
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {

using Wide = KernelConfig<256, 2, 1, 4, 1, false>;  // 128x256 tiles, 4 stages, direct epilogue
constexpr const char* kName = "sm90-gemm";
constexpr LaunchPolicy kPolicy{true, 8};

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) { return sm90_check<Wide>(kName, desc, args, diag); }
Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return sm90_launch<Wide>(kName, kPolicy, desc, args, diag);
}

}  // namespace

extern const KernelInfo kSm90Gemm{kName, "production: persistent, warp-specialized, 128x256, 4 stages, banded raster", check,
                                  launch, nullptr};

}  // namespace anvil::detail
