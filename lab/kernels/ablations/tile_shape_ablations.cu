// Ablations of ladder step 10's configuration (128x256 tiles in multicast pairs, 3
// stages, TMA-store epilogue), each persistent with the same banded raster, changing one
// thing at a time (measured in docs/ladder.md, step 11):
//   ablation-10-wide-4stage   4 stages instead of 3, paid for by giving up the 64 KiB
//                             TMA-store buffer (the epilogue stores pairs straight from
//                             registers): is 3 stages too shallow to hide L2 latency?
//   ablation-10-tall-4stage   256x128 tiles (two 64-row slabs per consumer warpgroup), 4
//                             stages, direct epilogue: cuBLAS's shape on this GPU
//                             (nvjet_sm90_tst_256x128_64x4_1x2, ncu, 2026-11-29);
//   ablation-10-tall-3stage   256x128 tiles with the pairs' 3 stages and TMA store;
//   ablation-10-tall-4stage-tma2  256x128 tiles with ladder step 11's ring: 4 stages, the
//                             TMA store in two rounds through half the buffer.
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {

constexpr char kWideFourStages[] = "ablation-10-wide-4stage";
constexpr char kTallFourStages[] = "ablation-10-tall-4stage";
constexpr char kTallThreeStages[] = "ablation-10-tall-3stage";
using WideFourStages = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 256, .consumers = 2, .slabs_per_consumer = 1, .stages = 4, .cluster_ctas = 2, .tma_store = false}>,
    true, 8, kWideFourStages>;
using TallFourStages = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 128, .consumers = 2, .slabs_per_consumer = 2, .stages = 4, .cluster_ctas = 2, .tma_store = false}>,
    true, 8, kTallFourStages>;
using TallThreeStages = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 128, .consumers = 2, .slabs_per_consumer = 2, .stages = 3, .cluster_ctas = 2, .tma_store = true}>,
    true, 8, kTallThreeStages>;
constexpr char kTallTwoRounds[] = "ablation-10-tall-4stage-tma2";
using TallTwoRounds = Sm90Kernel<KernelConfig<KernelSpec{.block_n = 128,
                                                         .consumers = 2,
                                                         .slabs_per_consumer = 2,
                                                         .stages = 4,
                                                         .cluster_ctas = 2,
                                                         .tma_store = true,
                                                         .store_rounds = 2}>,
                                 true, 8, kTallTwoRounds>;

}  // namespace

extern const KernelInfo kAblation10WideFourStages =
    WideFourStages::info("ablation: step 10 with 4 stages and the direct register epilogue");
extern const KernelInfo kAblation10TallFourStages =
    TallFourStages::info("ablation: 256x128 tiles in multicast pairs, 4 stages, direct epilogue");
extern const KernelInfo kAblation10TallThreeStages =
    TallThreeStages::info("ablation: 256x128 tiles in multicast pairs, 3 stages, TMA store");
extern const KernelInfo kAblation10TallTwoRounds =
    TallTwoRounds::info("ablation: 256x128 tiles in pairs, 4 stages, TMA store in two rounds");

}  // namespace anvil::detail
