// sm90-gemm's fitted widths (plan.h: Sm90Variant::kFitPair160, kFitPair224), launched
// from their own translation unit so that they compile beside gemm_sm90.cu.
#pragma once

#include "anvil/gemm.h"
#include "host/registry.h"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/plan.h"

namespace anvil::detail {

// Neither width is a whole number of 64-column TMA-store boxes, so D leaves from the
// registers (pair stores, or the staged epilogue); the staged buffer (20 KiB) and the
// stages share the 227 KiB: 5 stages of 16 + 20 KiB at 160 columns, 4 of 16 + 28 KiB at 224.
using FitPair160 = KernelConfig<160, 2, 1, 5, 2, false>;
using FitPair224 = KernelConfig<224, 2, 1, 4, 2, false>;

// Launches the fitted-width configuration `variant` (persistent, banded raster, as the
// other sm90-gemm configurations) on K-major operands TMA can read in place.
Status launch_fit_pair(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                       Diagnostic* diag);

}  // namespace anvil::detail
