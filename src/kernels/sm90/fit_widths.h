// sm90-gemm's fitted widths (plan.h: Sm90Variant::kFitPair160 ... kFitSingle224), launched
// from their own translation unit so that they compile beside gemm_sm90.cu.
#pragma once

#include "anvil/gemm.h"
#include "host/registry.h"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/plan.h"

namespace anvil::detail {

// A plain GEMM's D leaves through TMA stores of whole 64-column boxes, one box per round
// through an 8 KiB buffer per warpgroup, with the last 32 columns of a 160- or 224-wide
// tile stored straight from the registers; other epilogues are staged. The staged buffer
// (20 KiB) and the stages share the 227 KiB: 5 stages of 16 + 20 or 16 + 24 KiB at 160 and
// 192 columns, 4 of 16 + 28 KiB at 224. Pairs: 2-CTA clusters along M multicasting B;
// singles: one CTA, its own B.
template <int kBlockN, int kStages, int kClusterM>
using FitConfig = KernelConfig<KernelSpec{.block_n = kBlockN,
                                          .consumers = 2,
                                          .slabs_per_consumer = 1,
                                          .stages = kStages,
                                          .cluster_ctas = kClusterM,
                                          .tma_store = true,
                                          .store_rounds = kBlockN / 64}>;
using FitPair160 = FitConfig<160, 5, 2>;
using FitPair192 = FitConfig<192, 5, 2>;
using FitPair224 = FitConfig<224, 4, 2>;
using FitSingle160 = FitConfig<160, 5, 1>;
using FitSingle192 = FitConfig<192, 5, 1>;
using FitSingle224 = FitConfig<224, 4, 1>;

// Launches the fitted-width configuration `variant` (persistent, banded raster, as the
// other sm90-gemm configurations) on K-major operands TMA can read in place.
Status launch_fit_width(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                        Diagnostic* diag);

}  // namespace anvil::detail
