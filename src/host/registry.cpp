#include "host/registry.h"

#include <array>
#include <cstring>

namespace anvil::detail {

extern const KernelInfo kLadder01Naive;
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
extern const KernelInfo kSm90Gemm;
extern const KernelInfo kSm90Decode;
extern const KernelInfo kSm90DecodeLdg;
extern const KernelInfo kSm90DecodeR64;
extern const KernelInfo kSm90DecodeLdgR64;
extern const KernelInfo kSm90GemmPingPong;
extern const KernelInfo kSm90GemmStreamK;
extern const KernelInfo kSm90GemmFit;
extern const KernelInfo kSm90GemmPow2;
extern const KernelInfo kSm90GemmPairN;
extern const KernelInfo kSm90GemmSplitK;
extern const KernelInfo kAblation05TwoStages;
extern const KernelInfo kAblation09NoMulticast;
extern const KernelInfo kAblation09FourStages;
extern const KernelInfo kAblation09CrossRelease;
extern const KernelInfo kAblation10WideFourStages;
extern const KernelInfo kAblation10TallFourStages;
extern const KernelInfo kAblation10TallThreeStages;
extern const KernelInfo kAblation10TallTwoRounds;

namespace {
// Ladder order first, then the production kernels the dispatcher prefers, then the
// ablations that explain the ladder's flat or negative steps (docs/ladder.md).
const std::array<const KernelInfo*, 30> kKernels = {
    &kLadder01Naive,          &kLadder02SmemTiling,   &kLadder03TmaWgmma, &kLadder04Swizzle,
    &kLadder05Pipeline,       &kLadder06WarpSpecialized, &kLadder07TwoConsumers, &kLadder08TmaStore,
    &kLadder09Cluster,        &kLadder10Persistent,   &kLadder11DeeperRing, &kSm90Gemm,            &kSm90Decode,     &kSm90DecodeLdg,
    &kSm90GemmPingPong,
    &kSm90GemmStreamK,
    &kSm90GemmFit,
    &kSm90GemmPow2,
    &kSm90GemmPairN,
    &kSm90GemmSplitK,
    &kSm90DecodeR64,
    &kSm90DecodeLdgR64,
    &kAblation05TwoStages,    &kAblation09NoMulticast, &kAblation09FourStages, &kAblation09CrossRelease,
    &kAblation10WideFourStages, &kAblation10TallFourStages, &kAblation10TallThreeStages,
    &kAblation10TallTwoRounds,
};
}  // namespace

std::span<const KernelInfo* const> all_kernels() { return kKernels; }

const KernelInfo* find_kernel(const char* name) {
  for (const KernelInfo* k : kKernels) {
    if (std::strcmp(k->name, name) == 0) return k;
  }
  return nullptr;
}

}  // namespace anvil::detail
