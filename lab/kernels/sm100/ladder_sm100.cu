// The seeds' optimization steps as configurations of the one Blackwell kernel
// (docs/blackwell.md, "Ladder"): seed 000's eight steps and seed 002's nine kernels, each a
// named Sm100Spec, so that on a B200 `anvil-bench --kernels all-ladder-sm100` measures
// them in order against cuBLAS. A step gets its own configuration only where it changes
// something the kernel parametrizes (CTA pair, ring depth, schedule, TMEM buffers, raster,
// swizzle); a step that changes only code the kernel always has (warp specialization, the
// overlapped TMEM loads) or a part it does not build (TMA multicast, the TMA-store
// epilogue) is measured by the configuration of the step before it, and the table in the
// doc says so. bf16 inputs and the identity epilogue only (the ladder is measured on the
// plain GEMM), one instantiation each, to keep the build short.
#include "kernels/sm100/launch.h"
#include "kernels/sm100/sm100_api.h"

namespace anvil::detail {
namespace {

using S = Sm100Schedule;

// Every rung: bf16 in, the identity epilogue only, one accumulator buffer and row-major
// tile order unless the step is about them.
constexpr bool kIdentityOnly = false;  // Sm100Spec::epilogue_per_activation

// 1. One CTA (128 x 256 tile), one stage, unswizzled operands, one tile per CTA: load,
//    wait, MMA, wait, K step after K step (seed 000 step 1; seed 002 kernel 2).
constexpr Sm100Spec kOneCtaOneStageUnswizzled{
    .cta_group = 1, .stages = 1, .schedule = S::kOneTilePerCluster, .accumulator_buffers = 1, .band = 1,
    .epilogue_per_activation = kIdentityOnly, .swizzle_128b = false};
// 2. The same with a four-stage ring: the loads run ahead of the MMAs (seed 000 steps 2-3).
constexpr Sm100Spec kOneCtaFourStagesUnswizzled{
    .cta_group = 1, .stages = 4, .schedule = S::kOneTilePerCluster, .accumulator_buffers = 1, .band = 1,
    .epilogue_per_activation = kIdentityOnly, .swizzle_128b = false};
// 3. One stage again, with the 128-byte swizzle (seed 002 kernels 3-4).
constexpr Sm100Spec kOneCtaOneStage{
    .cta_group = 1, .stages = 1, .schedule = S::kOneTilePerCluster, .accumulator_buffers = 1, .band = 1,
    .epilogue_per_activation = kIdentityOnly, .swizzle_128b = true};
// 4. Four stages and the swizzle (seed 000 steps 4-6).
constexpr Sm100Spec kOneCtaFourStages{
    .cta_group = 1, .stages = 4, .schedule = S::kOneTilePerCluster, .accumulator_buffers = 1, .band = 1,
    .epilogue_per_activation = kIdentityOnly, .swizzle_128b = true};
// 5. The CTA pair: tcgen05.mma.cta_group::2 on 256 x 256 tiles, one stage (seed 002
//    kernel 5).
constexpr Sm100Spec kPairOneStage{
    .cta_group = 2, .stages = 1, .schedule = S::kOneTilePerCluster, .accumulator_buffers = 1, .band = 1,
    .epilogue_per_activation = kIdentityOnly, .swizzle_128b = true};
// 6. The pair with a five-stage ring (seed 002 kernels 6-7; seed 000 step 7 as inferred,
//    docs/blackwell.md).
constexpr Sm100Spec kPairFiveStages{
    .cta_group = 2, .stages = 5, .schedule = S::kOneTilePerCluster, .accumulator_buffers = 1, .band = 1,
    .epilogue_per_activation = kIdentityOnly, .swizzle_128b = true};
// 7. Persistent by CLC with the TMEM accumulator ring, row-major tile order (seed 002
//    kernel 8). Kernel 9, raster bands of 8 tile rows, is sm100-gemm itself; seed 000's
//    step 8 (persistent, as inferred) is sm100-gemm-static.
constexpr Sm100Spec kPairClcRowMajor{
    .cta_group = 2, .stages = sm100::budget::kPairGemmStages, .schedule = S::kClc, .accumulator_buffers = 2,
    .band = 1, .epilogue_per_activation = kIdentityOnly, .swizzle_128b = true};

constexpr char kName1[] = "sm100-ladder-1-one-cta-one-stage-unswizzled";
constexpr char kName2[] = "sm100-ladder-2-one-cta-four-stages-unswizzled";
constexpr char kName3[] = "sm100-ladder-3-one-cta-one-stage";
constexpr char kName4[] = "sm100-ladder-4-one-cta-four-stages";
constexpr char kName5[] = "sm100-ladder-5-pair-one-stage";
constexpr char kName6[] = "sm100-ladder-6-pair-five-stages";
constexpr char kName7[] = "sm100-ladder-7-pair-clc-row-major";

template <Sm100Spec kSpec, const char* kName>
using Rung = Sm100Kernel<Sm100Config<kSpec>, kName, true>;

}  // namespace

const KernelInfo kSm100Ladder1 = Rung<kOneCtaOneStageUnswizzled, kName1>::info(
    "Blackwell ladder 1: one CTA, one stage, unswizzled, one tile per CTA (seed 000 step 1, seed 002 kernel 2)");
const KernelInfo kSm100Ladder2 = Rung<kOneCtaFourStagesUnswizzled, kName2>::info(
    "Blackwell ladder 2: one CTA, four-stage ring, unswizzled (seed 000 steps 2-3)");
const KernelInfo kSm100Ladder3 = Rung<kOneCtaOneStage, kName3>::info(
    "Blackwell ladder 3: one CTA, one stage, 128-byte swizzle (seed 002 kernels 3-4)");
const KernelInfo kSm100Ladder4 = Rung<kOneCtaFourStages, kName4>::info(
    "Blackwell ladder 4: one CTA, four-stage ring, 128-byte swizzle (seed 000 steps 4-6)");
const KernelInfo kSm100Ladder5 = Rung<kPairOneStage, kName5>::info(
    "Blackwell ladder 5: CTA-pair MMA, 256x256 tiles, one stage (seed 002 kernel 5)");
const KernelInfo kSm100Ladder6 = Rung<kPairFiveStages, kName6>::info(
    "Blackwell ladder 6: CTA pair, five-stage ring (seed 002 kernels 6-7)");
const KernelInfo kSm100Ladder7 = Rung<kPairClcRowMajor, kName7>::info(
    "Blackwell ladder 7: CLC persistent, TMEM double buffer, row-major raster (seed 002 kernel 8)");

}  // namespace anvil::detail
