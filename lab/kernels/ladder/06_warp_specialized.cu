// Ladder step 6: warp specialization. Warpgroup 0 becomes the producer - one thread that
// only waits for free stages and issues TMA - and gives most of its registers away with
// setmaxnreg; warpgroup 1 only waits for full stages and issues wgmma, keeping one wgmma
// group in flight while it waits for the next stage. Same 128x128 tile and 4 stages as
// step 5, so any change is the specialization itself. From here on the kernel is the
// composed one in src/kernels/sm90/ (producer.cuh, consumer.cuh, epilogue_store.cuh).
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {
constexpr char kName[] = "ladder-06-warp-specialized";
using Kernel = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 128, .consumers = 1, .slabs_per_consumer = 2, .stages = 4, .cluster_ctas = 1, .tma_store = false}>,
    false, 1, kName>;
}  // namespace

extern const KernelInfo kLadder06WarpSpecialized = Kernel::info("step 5 + producer warpgroup / consumer warpgroup, setmaxnreg");

}  // namespace anvil::detail
