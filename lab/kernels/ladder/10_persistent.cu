// Ladder step 10: a persistent grid. One cluster per co-resident slot walks the tile
// sequence with a static stride, so barrier setup and launch cost are paid once, and the
// producer prefetches the next tile's first stages while the consumers run the previous
// tile's epilogue. Tiles are numbered in bands of 8 cluster rows (2048 rows of A), so the
// ~66 clusters in flight share A panels and B panels in L2 instead of sweeping all of B.
#include "kernels/sm90/launch.cuh"

namespace anvil::detail {
namespace {
constexpr char kName[] = "ladder-10-persistent";
using Kernel = Sm90Kernel<
    KernelConfig<KernelSpec{
        .block_n = 256, .consumers = 2, .slabs_per_consumer = 1, .stages = 3, .cluster_ctas = 2, .tma_store = true}>,
    true, 8, kName>;
}  // namespace

extern const KernelInfo kLadder10Persistent = Kernel::info("step 9 + persistent grid, tile scheduler, banded L2-aware raster");

}  // namespace anvil::detail
