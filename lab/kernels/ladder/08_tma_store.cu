// Ladder step 8: the epilogue through shared memory and TMA stores. Each consumer writes
// its 64x256 slab as bf16 into a 128-byte-swizzled buffer with stmatrix (16 columns of a
// warp's 16 rows per instruction, conflict-free), fences the async proxy, and one thread
// stores it with four 64x64 TMA boxes that clip the matrix edges on their own. The 64 KiB
// buffer costs one pipeline stage (4 -> 3); step 11 wins it back.
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {
constexpr char kName[] = "ladder-08-tma-store";
using Kernel = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 256, .consumers = 2, .slabs_per_consumer = 1, .stages = 3, .cluster_ctas = 1, .tma_store = true}>,
    false, 1, kName>;
}  // namespace

extern const KernelInfo kLadder08TmaStore = Kernel::info("step 7 + epilogue through swizzled shared memory and TMA stores (3 stages)");

}  // namespace anvil::detail
