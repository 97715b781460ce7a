// Ablation of sm90-gemm's skinny configurations (fit_widths.h): the same tiles and rings in
// 4-CTA clusters along N instead of 2, so that each CTA reads a quarter of the shared A
// tile from L2 instead of half. cuBLAS runs 4-CTA clusters of 128 x 80 tiles at 128 x 9216
// x 8192 (ncu, session 18). A cluster of 4 needs four free SMs of one GPC, so fewer CTAs
// are resident at once (120 of 132 on the H200, session 18's occupancy trace); the width
// is sm90-gemm-skinny's (ANVIL_SKINNY_WIDTH forces one).
#include "kernels/sm90/fit_widths.h"
#include "host/validate.h"
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {

constexpr char kName[] = "ablation-skinny-c4";
using Skinny64x4 = SkinnyConfig<64, 8, 4>;
using Skinny80x4 = SkinnyConfig<80, 7, 4>;
using Skinny96x4 = SkinnyConfig<96, 7, 4>;
using Skinny112x4 = SkinnyConfig<112, 6, 4>;

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return sm90_check<Skinny64x4>(kName, desc, args, diag);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  switch (forced_skinny_width(desc.m, desc.n, desc.batch, device_sm_count())) {
    case 64: return sm90_launch<Skinny64x4>(kName, kSm90GemmPolicy, desc, args, diag);
    case 80: return sm90_launch<Skinny80x4>(kName, kSm90GemmPolicy, desc, args, diag);
    case 96: return sm90_launch<Skinny96x4>(kName, kSm90GemmPolicy, desc, args, diag);
    default: return sm90_launch<Skinny112x4>(kName, kSm90GemmPolicy, desc, args, diag);
  }
}

}  // namespace

extern const KernelInfo kAblationSkinnyCluster4{
    kName, "ablation: sm90-gemm-skinny's tiles in 4-CTA clusters along N (a quarter of A per CTA from L2)", check,
    launch, nullptr};

}  // namespace anvil::detail
