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

constexpr const char* kNoMulticast = "ablation-09-no-multicast";
constexpr const char* kFourStages = "ablation-09-four-stages";
using NoMulticast = KernelConfig<256, 2, 1, 3, 2, true, ClusterB::kLocalLoads>;
using CrossRelease = KernelConfig<256, 2, 1, 3, 2, true, ClusterB::kLocalLoadsCrossRelease>;
constexpr const char* kCrossRelease = "ablation-09-cross-release";
using FourStages = KernelConfig<256, 2, 1, 4, 2, false, ClusterB::kMulticast>;
constexpr LaunchPolicy kPolicy{false, 1};

Status check_no_multicast(const GemmDesc& d, const GemmArgs* a, Diagnostic* g) { return sm90_check<NoMulticast>(kNoMulticast, d, a, g); }
Status launch_no_multicast(const GemmDesc& d, const GemmArgs& a, Diagnostic* g) {
  return sm90_launch<NoMulticast>(kNoMulticast, kPolicy, d, a, g);
}
Status check_four_stages(const GemmDesc& d, const GemmArgs* a, Diagnostic* g) { return sm90_check<FourStages>(kFourStages, d, a, g); }
Status launch_four_stages(const GemmDesc& d, const GemmArgs& a, Diagnostic* g) {
  return sm90_launch<FourStages>(kFourStages, kPolicy, d, a, g);
}

Status check_cross_release(const GemmDesc& d, const GemmArgs* a, Diagnostic* g) { return sm90_check<CrossRelease>(kCrossRelease, d, a, g); }
Status launch_cross_release(const GemmDesc& d, const GemmArgs& a, Diagnostic* g) {
  return sm90_launch<CrossRelease>(kCrossRelease, kPolicy, d, a, g);
}

}  // namespace

extern const KernelInfo kAblation09CrossRelease{kCrossRelease, "ablation: step 9's cluster, local loads, cross-CTA stage release",
                                                check_cross_release, launch_cross_release, nullptr};
extern const KernelInfo kAblation09NoMulticast{kNoMulticast, "ablation: step 9's cluster launch without multicast",
                                               check_no_multicast, launch_no_multicast, nullptr};
extern const KernelInfo kAblation09FourStages{kFourStages, "ablation: step 7 (4 stages, direct epilogue) + 2-CTA multicast",
                                              check_four_stages, launch_four_stages, nullptr};

}  // namespace anvil::detail
