// The seeds' optimization steps as configurations of the one Blackwell kernel
// (docs/blackwell.md, "Ladder"): each step is a knob of Sm100Config - CTA pair or single
// CTA, ring depth, schedule, accumulator buffers, raster band - so that on a B200
// `anvil-bench --kernels all-ladder-sm100` measures each step against cuBLAS. Steps the
// composed kernel cannot undo (the 128-byte swizzle, warp specialization) are present in
// every configuration; the table in the doc says which seed step each configuration
// stands for. bf16 inputs only and one epilogue loop for every activation (the ladder is
// measured on the plain GEMM), to keep the build short.
#include "kernels/sm100/launch.h"
#include "kernels/sm100/sm100_api.h"

namespace anvil::detail {
namespace {

using S = Sm100Schedule;
// One CTA, 128 x 256 tiles, one stage, one tile per CTA, row-major raster: a K loop of
// TMA load -> wait -> tcgen05.mma (seed 000 step 1, seed 002 kernels 2-3).
using OneCtaOneStage = Sm100Config<1, 1, S::kOneTilePerCluster, 1, 1, false>;
// The same with a four-stage ring: loads run ahead of the MMAs (seed 000 steps 2-5).
using OneCtaFourStages = Sm100Config<1, 4, S::kOneTilePerCluster, 1, 1, false>;
// The CTA pair's 2-CTA MMA on 256 x 256 tiles, unpipelined (seed 002 kernel 5).
using PairOneStage = Sm100Config<2, 1, S::kOneTilePerCluster, 1, 1, false>;
// The pair with a five-stage ring (seed 002 kernels 6-7).
using PairFiveStages = Sm100Config<2, 5, S::kOneTilePerCluster, 1, 1, false>;
// Persistent by CLC with the TMEM accumulator ring, row-major raster (seed 002 kernel 8).
// The next step, raster bands of 8 tile rows (seed 002 kernel 9), is sm100-gemm itself.
using PairClcRowMajor = Sm100Config<2, sm100::budget::kPairGemmStages, S::kClc, 2, 1, false>;

constexpr char kName1[] = "sm100-ladder-1-one-cta-one-stage";
constexpr char kName2[] = "sm100-ladder-2-one-cta-four-stages";
constexpr char kName3[] = "sm100-ladder-3-pair-one-stage";
constexpr char kName4[] = "sm100-ladder-4-pair-five-stages";
constexpr char kName5[] = "sm100-ladder-5-pair-clc-row-major";

}  // namespace

// MERGE NOTE (coordinator): lab entries; they belong with the other ladder kernels in the
// lab target and registry table once the library is built with ANVIL_SM100.
const KernelInfo kSm100Ladder1 = Sm100Kernel<OneCtaOneStage, kName1, true>::info(
    "Blackwell ladder 1: one CTA, one stage, one tile per CTA (seed 000 step 1)");
const KernelInfo kSm100Ladder2 = Sm100Kernel<OneCtaFourStages, kName2, true>::info(
    "Blackwell ladder 2: one CTA, four-stage ring (seed 000 steps 2-5)");
const KernelInfo kSm100Ladder3 = Sm100Kernel<PairOneStage, kName3, true>::info(
    "Blackwell ladder 3: CTA-pair MMA, 256x256 tiles, one stage (seed 002 kernel 5)");
const KernelInfo kSm100Ladder4 = Sm100Kernel<PairFiveStages, kName4, true>::info(
    "Blackwell ladder 4: CTA pair, five-stage ring (seed 002 kernels 6-7)");
const KernelInfo kSm100Ladder5 = Sm100Kernel<PairClcRowMajor, kName5, true>::info(
    "Blackwell ladder 5: CLC persistent, TMEM double buffer, row-major raster (seed 002 kernel 8)");

}  // namespace anvil::detail
