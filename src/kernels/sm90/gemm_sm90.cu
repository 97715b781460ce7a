// The production Hopper GEMM the dispatcher picks for problems it can route through TMA:
// persistent, warp-specialized, banded raster. The tile shape is chosen per problem by
// choose_sm90_variant (plan.h); only the configurations it can return are instantiated.
#include <cuda_runtime.h>

#include <atomic>

#include "kernels/sm90/launch.cuh"
#include "kernels/sm90/plan.h"

namespace anvil::detail {
namespace {

using Wide = KernelConfig<256, 2, 1, 4, 1, false>;    // 128x256, 4 x 48 KiB stages, direct epilogue
using Narrow = KernelConfig<128, 2, 1, 6, 1, false>;  // 128x128, 6 x 32 KiB stages
constexpr const char* kName = "sm90-gemm";
constexpr LaunchPolicy kPolicy{true, 8};

int sm_count() {
  static std::atomic<int> cached{0};
  if (cached.load() == 0) {
    int device = 0, count = 132;
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) == cudaSuccess) {
      cached.store(count);
    } else {
      cudaGetLastError();
      return 132;
    }
  }
  return cached.load();
}

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  // SwiGLU needs 128-column pairs, which both tile widths provide.
  return sm90_check<Narrow>(kName, desc, args, diag);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  if (choose_sm90_variant(desc.m, desc.n, desc.batch, sm_count()) == Sm90Variant::kNarrow) {
    return sm90_launch<Narrow>(kName, kPolicy, desc, args, diag);
  }
  return sm90_launch<Wide>(kName, kPolicy, desc, args, diag);
}

}  // namespace

extern const KernelInfo kSm90Gemm{kName, "production: persistent, warp-specialized, 128x256 or 128x128 by wave plan",
                                  check, launch, nullptr};

}  // namespace anvil::detail
