// Ladder step 11: a fourth stage. ncu's warp-stall sampling on step 10 (4096^3) put 26% of
// all samples on the consumers' wait for a full stage against 9% on their wait for the
// tensor core: with 3 stages of 48 KiB, a stage is refilled only ~2 K steps before it is
// needed, less than an L2 round trip under load. Shared memory has no room for a fourth
// stage next to step 8's 64 KiB store buffer, so the buffer shrinks to half and each
// warpgroup stores its tile in two rounds, waiting for the first round's TMA stores to
// read the buffer before refilling it. With the fourth stage the full-stage wait falls to
// 2% of samples and the tensor-core wait rises to 26%. This is sm90-gemm's configuration
// for the plain GEMM.
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {
constexpr char kName[] = "ladder-11-deeper-ring";
using Kernel = Sm90Kernel<KernelConfig<KernelSpec{.block_n = 256,
                                                  .consumers = 2,
                                                  .slabs_per_consumer = 1,
                                                  .stages = 4,
                                                  .cluster_ctas = 2,
                                                  .tma_store = true,
                                                  .store_rounds = 2}>,
                          true, 8, kName>;
}  // namespace

extern const KernelInfo kLadder11DeeperRing =
    Kernel::info("step 10 + a fourth stage, TMA store in two rounds through half the buffer");

}  // namespace anvil::detail
