// Ladder step 9: a 2-CTA cluster. Two vertically adjacent 128x256 tiles need the same
// 256x64 slice of B each K step; each CTA now fetches half of it and multicasts to both,
// so B's L2 traffic halves. A stage is free only when the consumers of both CTAs have
// released it, since the peer's producer writes into our shared memory.
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {
constexpr char kName[] = "ladder-09-cluster-multicast";
using Kernel = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 256, .consumers = 2, .slabs_per_consumer = 1, .stages = 3, .cluster_ctas = 2, .tma_store = true}>,
    false, 1, kName>;
}  // namespace

extern const KernelInfo kLadder09Cluster = Kernel::info("step 8 + 2-CTA cluster along M, B tile multicast");

}  // namespace anvil::detail
