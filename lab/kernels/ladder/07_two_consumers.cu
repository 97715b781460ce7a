// Ladder step 7: 128x256 tiles with two consumer warpgroups. Each consumer owns 64 rows
// and issues m64n256k16, the widest wgmma: every byte of A in shared memory now feeds 256
// columns instead of 128 (arithmetic per shared-memory byte up by 1.33x), and while one
// warpgroup waits on a barrier the other keeps the tensor core busy. 128 fp32
// accumulators per thread fit because setmaxnreg gives the consumers 232 registers.
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {
constexpr char kName[] = "ladder-07-two-consumers";
using Kernel = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 256, .consumers = 2, .slabs_per_consumer = 1, .stages = 4, .cluster_ctas = 1, .tma_store = false}>,
    false, 1, kName>;
}  // namespace

extern const KernelInfo kLadder07TwoConsumers = Kernel::info("step 6 with 128x256 tiles: two consumer warpgroups, m64n256k16");

}  // namespace anvil::detail
