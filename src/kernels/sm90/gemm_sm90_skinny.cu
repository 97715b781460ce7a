// The skinny configurations of sm90-gemm: 128-row tiles 64, 80, 96 or 112 columns wide in
// 2-CTA clusters along N, for problems with a single row of tiles (plan.h chooses),
// launched from their own translation unit so that they compile beside gemm_sm90.cu.
#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {

// The largest opt-in shared memory of a Hopper CTA (227 KiB).
inline constexpr int kHopperMaxSmemBytes = 232448;
static_assert(sm90_smem_bytes<Skinny64>() <= kHopperMaxSmemBytes && sm90_smem_bytes<Skinny80>() <= kHopperMaxSmemBytes &&
                  sm90_smem_bytes<Skinny96>() <= kHopperMaxSmemBytes && sm90_smem_bytes<Skinny112>() <= kHopperMaxSmemBytes,
              "the skinny rings fit in a CTA's shared memory");

Status launch_skinny(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                     Diagnostic* diag) {
  switch (variant) {
    case Sm90Variant::kSkinny64: return sm90_launch<Skinny64>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kSkinny80: return sm90_launch<Skinny80>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kSkinny96: return sm90_launch<Skinny96>(name, kSm90GemmPolicy, desc, args, diag);
    case Sm90Variant::kSkinny112: return sm90_launch<Skinny112>(name, kSm90GemmPolicy, desc, args, diag);
    default: return fail(diag, Status::kInternalError, "%s: not a skinny configuration", name);
  }
}

}  // namespace anvil::detail
