// sm90-gemm's fitted widths (plan.h: Sm90Variant::kFitPair160 ... kFitSingle224), launched
// from their own translation unit so that they compile beside gemm_sm90.cu.
#pragma once

#include "anvil/gemm.h"
#include "host/registry.h"
#include "kernels/sm90/sm90_configs.h"
#include "kernels/sm90/plan.h"

namespace anvil::detail {

// Launches the fitted-width configuration `variant` (persistent, banded raster, as the
// other sm90-gemm configurations) on K-major operands TMA can read in place.
Status launch_fit_width(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                        Diagnostic* diag);

// Launches the folded-slice configuration `variant` (Sm90Variant::kSliced96,
// kSlicedPair128, kSlicedPair192), its CTAs cutting every tile's K into `k_slices` slices
// (gemm_sm90_sliced.cu).
Status launch_sliced(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args, int k_slices,
                     Diagnostic* diag);

}  // namespace anvil::detail
