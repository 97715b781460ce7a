// Ablations of ladder step 9 (2-CTA cluster with B multicast), which ran slower than
// step 8 without a cluster. Each variant changes one thing:
//   ablation-09-no-multicast  the same cluster launch, each CTA loading its whole B tile
//                             itself: separates "being in a cluster" from multicast and
//                             from the cross-CTA empty-barrier arrivals;
//   ablation-09-four-stages   multicast with step 7's 4 stages and direct epilogue: is the
//                             cluster's longer stage round trip starved by 3 stages?
//   ablation-09-cross-release local loads, but every stage still waits for both CTAs'
//                             consumers (remote empty-barrier arrivals): the protocol's
//                             cost without the multicast delivery.
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {
constexpr char kNoMulticast[] = "ablation-09-no-multicast";
constexpr char kCrossRelease[] = "ablation-09-cross-release";
constexpr char kFourStages[] = "ablation-09-four-stages";
using NoMulticast = Sm90Kernel<KernelConfig<KernelSpec{.block_n = 256,
                                                       .consumers = 2,
                                                       .slabs_per_consumer = 1,
                                                       .stages = 3,
                                                       .cluster_ctas = 2,
                                                       .tma_store = true,
                                                       .cluster_b = ClusterB::kLocalLoads}>,
                               false, 1, kNoMulticast>;
using CrossRelease = Sm90Kernel<KernelConfig<KernelSpec{.block_n = 256,
                                                        .consumers = 2,
                                                        .slabs_per_consumer = 1,
                                                        .stages = 3,
                                                        .cluster_ctas = 2,
                                                        .tma_store = true,
                                                        .cluster_b = ClusterB::kLocalLoadsCrossRelease}>,
                                false, 1, kCrossRelease>;
using FourStages = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 256, .consumers = 2, .slabs_per_consumer = 1, .stages = 4, .cluster_ctas = 2, .tma_store = false}>,
    false, 1, kFourStages>;
}  // namespace

extern const KernelInfo kAblation09NoMulticast = NoMulticast::info("ablation: step 9's cluster launch without multicast");
extern const KernelInfo kAblation09CrossRelease =
    CrossRelease::info("ablation: step 9's cluster, local loads, cross-CTA stage release");
extern const KernelInfo kAblation09FourStages =
    FourStages::info("ablation: step 7 (4 stages, direct epilogue) + 2-CTA multicast");
}  // namespace anvil::detail
