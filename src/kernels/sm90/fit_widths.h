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
using FitConfig = KernelConfig<kBlockN, 2, 1, kStages, kClusterM, true, ClusterB::kMulticast, Schedule::kCooperative,
                               false, kBlockN / 64>;
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

// The skinny widths (plan.h, choose_skinny_width): 128 rows of A - the tokens - against 64
// to 112 columns of B, for problems with a single row of tiles. A 2-CTA cluster along N
// multicasts the A tile, each CTA loading its 64 rows in 16-row boxes, so that no box
// starts past M (kBoxRowsA): an 80-token batch loads 80 rows, not 128. As many stages as
// fit beside the staged epilogue's 20 KiB (stage = 16 KiB of A + width x 128 bytes of B):
// 8 at 64 columns, 7 at 80 and 96, 6 at 112.
template <int kBlockN, int kStages, int kClusterN>
using SkinnyConfig = KernelConfig<kBlockN, 2, 1, kStages, kClusterN, true, ClusterB::kMulticast, Schedule::kCooperative,
                                  false, 1, ClusterAxis::kN, 16>;
using Skinny64 = SkinnyConfig<64, 8, 2>;
using Skinny80 = SkinnyConfig<80, 7, 2>;
using Skinny96 = SkinnyConfig<96, 7, 2>;
using Skinny112 = SkinnyConfig<112, 6, 2>;

// Launches the skinny configuration `variant` (persistent, banded raster).
Status launch_skinny(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                     Diagnostic* diag);

}  // namespace anvil::detail
