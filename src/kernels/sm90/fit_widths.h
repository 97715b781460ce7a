// sm90-gemm's and sm90-fp8's fitted widths (plan.h: Sm90Variant::kFitPair160 ...
// kFitSingle224; fp8_plan.h: Fp8Variant::kFitPair224 ...), launched from their own
// translation units so that they compile beside gemm_sm90.cu and gemm_sm90_fp8.cu.
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

// The widths between those, in steps of 16 columns (kFitNarrow80 ... kFitSingle240), from
// their own translation unit: gemm_sm90_fit_step16.cu.
Status launch_fit_width_step16(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                               Diagnostic* diag);

// Launches sm90-fp8's fitted-width configuration `variant` (fp8_plan.h: kFitPair224 ...
// kFitSingle160) with e4m3 inputs; batch_is_k_slice: the batch is split-K's slices of K
// (launch.cuh, LaunchPolicy::batch_is_k_slice). gemm_sm90_fp8_fit.cu.
Status launch_fp8_fit_width(Fp8Variant variant, const char* name, bool batch_is_k_slice, const GemmDesc& desc,
                            const GemmArgs& args, Diagnostic* diag);

// Launches the folded-slice configuration `variant` (Sm90Variant::kSliced96,
// kSlicedPair128, kSlicedPair192), its CTAs cutting every tile's K into `k_slices` slices
// (gemm_sm90_sliced.cu).
Status launch_sliced(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args, int k_slices,
                     Diagnostic* diag);

}  // namespace anvil::detail
