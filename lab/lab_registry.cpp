// The lab's kernel table, handed to the library's registry (host/registry.h).
#include <array>
#include <cstdio>
#include <cstdlib>

#include "anvil/lab.h"
#include "host/registry.h"
#if defined(ANVIL_HAVE_SM100)
#include "kernels/sm100/sm100_api.h"
#endif

namespace anvil::detail {

extern const KernelInfo kLadder02SmemTiling;
extern const KernelInfo kLadder03TmaWgmma;
extern const KernelInfo kLadder04Swizzle;
extern const KernelInfo kLadder05Pipeline;
extern const KernelInfo kLadder06WarpSpecialized;
extern const KernelInfo kLadder07TwoConsumers;
extern const KernelInfo kLadder08TmaStore;
extern const KernelInfo kLadder09Cluster;
extern const KernelInfo kLadder10Persistent;
extern const KernelInfo kLadder11DeeperRing;
extern const KernelInfo kSm90GemmPingPong;
extern const KernelInfo kSm90GemmStreamK;
extern const KernelInfo kSm90GemmFit;
extern const KernelInfo kSm90GemmPow2;
extern const KernelInfo kSm90GemmPairN;
extern const KernelInfo kSm90GemmNarrow64;
extern const KernelInfo kSm90GemmNarrow96;
extern const KernelInfo kSm90GemmSplitK4;
extern const KernelInfo kAblation05TwoStages;
extern const KernelInfo kAblation09NoMulticast;
extern const KernelInfo kAblation09FourStages;
extern const KernelInfo kAblation09CrossRelease;
extern const KernelInfo kAblation10WideFourStages;
extern const KernelInfo kAblation10TallFourStages;
extern const KernelInfo kAblation10TallThreeStages;
extern const KernelInfo kAblation10TallTwoRounds;

}  // namespace anvil::detail

namespace anvil::lab {
namespace {

using detail::KernelInfo;

// In listing order. The registry puts every ladder step first (the library's step 1,
// the naive fallback, ahead of these), then the library's kernels, then the rest of this
// table.
const std::array kLabKernels = {
    // The ladder, steps 2-11 (docs/ladder.md).
    &detail::kLadder02SmemTiling,
    &detail::kLadder03TmaWgmma,
    &detail::kLadder04Swizzle,
    &detail::kLadder05Pipeline,
    &detail::kLadder06WarpSpecialized,
    &detail::kLadder07TwoConsumers,
    &detail::kLadder08TmaStore,
    &detail::kLadder09Cluster,
    &detail::kLadder10Persistent,
    &detail::kLadder11DeeperRing,
    // Measurement-only configurations of the production kernel: one planner choice forced
    // (forced_plan_entries.cpp), measured against the dispatcher's choice.
    &detail::kSm90GemmPingPong,
    &detail::kSm90GemmStreamK,
    &detail::kSm90GemmFit,
    &detail::kSm90GemmPow2,
    &detail::kSm90GemmPairN,
    &detail::kSm90GemmNarrow64,
    &detail::kSm90GemmNarrow96,
    &detail::kSm90GemmSplitK4,
    //
    // The ablations: one change against a ladder step or the production configuration.
    &detail::kAblation05TwoStages,
    &detail::kAblation09NoMulticast,
    &detail::kAblation09FourStages,
    &detail::kAblation09CrossRelease,
    &detail::kAblation10WideFourStages,
    &detail::kAblation10TallFourStages,
    &detail::kAblation10TallThreeStages,
    &detail::kAblation10TallTwoRounds,
#if defined(ANVIL_HAVE_SM100)
    // The seeds' Blackwell steps (docs/blackwell.md); they run on an sm_100 device only.
    &detail::kSm100Ladder1,
    &detail::kSm100Ladder2,
    &detail::kSm100Ladder3,
    &detail::kSm100Ladder4,
    &detail::kSm100Ladder5,
    &detail::kSm100Ladder6,
    &detail::kSm100Ladder7,
#endif
};

}  // namespace

void register_lab_kernels() {
  if (!detail::register_kernels(kLabKernels)) {
    std::fprintf(stderr, "anvil lab: a lab kernel's name is already taken by another kernel\n");
    std::abort();
  }
}

}  // namespace anvil::lab
