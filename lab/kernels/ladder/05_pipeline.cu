// Ladder step 5: a multi-stage ring. Step 4 waited for every load before multiplying and
// for every multiply before loading. Now kStages slots rotate: each has a FullBarrier
// (TMA bytes landed) and an EmptyBarrier (all four warps finished reading it), and each
// side tracks a phase bit that flips when its slot index wraps. Thread 0 still does both
// jobs - it refills a slot as soon as the warps have released it - so loads for later K
// steps are in flight while the tensor core works on the current one.
#include "arch/sm90/mbarrier.cuh"
#include "arch/sm90/swizzle_alignment.cuh"
#include "arch/sm90/tma.cuh"
#include "arch/sm90/wgmma.cuh"
#include "host/registry.h"
#include "host/validate.h"
#include "kernels/sm90/fragment_epilogue.cuh"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {
namespace {

using namespace anvil::sm90;

constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 64;
constexpr int kTileBytesA = kBlockM * kBlockK * 2;
constexpr int kTileBytesB = kBlockN * kBlockK * 2;
template <int kStages>
constexpr int kSmemBytes = kStages * (kTileBytesA + kTileBytesB) + 1024 + 256;

template <Input kInput, int kStages>
__global__ void __launch_bounds__(128, 1)
    pipelined_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int64_t k,
                     EpilogueParams epilogue) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = sm90::align_to_swizzle_atom(smem_raw);
  uint8_t* tiles_a = smem;
  uint8_t* tiles_b = smem + kStages * kTileBytesA;
  auto* barriers = reinterpret_cast<StageBarriers<kStages>*>(tiles_b + kStages * kTileBytesB);

  const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
  const int k_tiles = static_cast<int>((k + kBlockK - 1) / kBlockK);
  if (threadIdx.x == 0) barriers->init(4);  // one arrival per warp frees a slot
  __syncthreads();

  auto issue_load = [&](int kt, int slot) {
    mbarrier_arrive_expect_tx(&barriers->full[slot], kTileBytesA + kTileBytesB);
    tma_load_2d(tiles_a + slot * kTileBytesA, &map_a, &barriers->full[slot], kt * kBlockK, m0);
    tma_load_2d(tiles_b + slot * kTileBytesB, &map_b, &barriers->full[slot], kt * kBlockK, n0);
  };

  // Prologue: fill every slot before the first multiply.
  if (threadIdx.x == 0) {
    for (int kt = 0; kt < kStages && kt < k_tiles; ++kt) issue_load(kt, kt);
  }

  float acc[2][64];
  StageRing<kStages> ring;
  for (int kt = 0; kt < k_tiles; ++kt) {
    mbarrier_wait(&barriers->full[ring.stage], ring.phase);
    wgmma_fence();
    const uint8_t* a = tiles_a + ring.stage * kTileBytesA;
    const uint8_t* b = tiles_b + ring.stage * kTileBytesB;
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
#pragma unroll
      for (int slab = 0; slab < 2; ++slab) {
        WgmmaSS<kBlockN, kInput>::template mma<0, 0>(acc[slab], make_kmajor_sw128_desc(a + slab * 64 * 128 + kk * 32),
                                                     make_kmajor_sw128_desc(b + kk * 32), kt > 0 || kk > 0);
      }
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    if (threadIdx.x % 32 == 0) mbarrier_arrive(&barriers->empty[ring.stage]);
    // Thread 0 refills the slot for K step kt + kStages once all warps have let go of it.
    if (threadIdx.x == 0 && kt + kStages < k_tiles) {
      mbarrier_wait(&barriers->empty[ring.stage], ring.phase);
      issue_load(kt + kStages, ring.stage);
    }
    ring.advance();
  }

#pragma unroll
  for (int slab = 0; slab < 2; ++slab) store_fragment_generic<kBlockN>(epilogue, 0, m0 + slab * 64, n0, acc[slab]);
}

constexpr const char* kName = "ladder-05-pipeline";
constexpr const char* kTwoStagesName = "ablation-05-two-stages";

template <int kStages>
Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_kmajor_tma(kStages == 4 ? kName : kTwoStagesName, desc, args, TmaLadderLimits{}, diag);
}

template <int kStages>
Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  const char* name = kStages == 4 ? kName : kTwoStagesName;
  CUtensorMap map_a, map_b;
  Status s = encode_kmajor_sw128(&map_a, args.a, desc.a, desc.k, desc.m, kBlockM, diag);
  if (s == Status::kSuccess) s = encode_kmajor_sw128(&map_b, args.b, desc.b, desc.k, desc.n, kBlockN, diag);
  if (s != Status::kSuccess) return s;
  auto kernel = desc.a.dtype == DataType::kBF16 ? pipelined_kernel<Input::kBF16, kStages> : pipelined_kernel<Input::kF16, kStages>;
  s = set_dynamic_smem(kernel, kSmemBytes<kStages>, name, diag);
  if (s != Status::kSuccess) return s;
  const dim3 grid(static_cast<unsigned>((desc.n + kBlockN - 1) / kBlockN), static_cast<unsigned>((desc.m + kBlockM - 1) / kBlockM));
  kernel<<<grid, 128, kSmemBytes<kStages>, args.stream>>>(map_a, map_b, desc.k, make_epilogue_params(desc, args));
  return check_launch(diag, name);
}

}  // namespace

extern const KernelInfo kLadder05Pipeline{kName, "step 4 + 4-stage ring with full/empty barriers and phase bits",
                                          check<4>, launch<4>, nullptr};
// Two 32 KiB stages leave room for a second CTA on each SM (occupancy against depth).
extern const KernelInfo kAblation05TwoStages{kTwoStagesName, "ablation: step 5 with 2 stages (2 CTAs per SM)",
                                             check<2>, launch<2>, nullptr};

}  // namespace anvil::detail
