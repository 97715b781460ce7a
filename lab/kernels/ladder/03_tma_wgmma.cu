// Ladder step 3: the tensor cores, fed by TMA. One warpgroup computes a 128x128 output
// tile. Each K step (64 wide), thread 0 asks the TMA unit for a 128x64 slice of A and of
// B, an mbarrier counts the bytes as they land, and the warpgroup issues 4 x 2 wgmma
// m64n128k16 instructions reading the slices straight from shared memory.
//
// One stage: load, wait, multiply, wait, repeat - nothing overlaps yet. And no swizzle:
// wgmma's unswizzled layout wants 8x8 "core matrices" stored as 128 contiguous bytes
// (8 rows of 16 bytes), so each 64-wide K slice is fetched as eight 8-wide boxes, landing
// as [k chunk][row][8 values]. Consecutive rows then sit 16 bytes apart and the writes
// and reads of a k chunk pile onto the same few banks.
#include "arch/sm90/mbarrier.cuh"
#include "arch/sm90/swizzle_alignment.cuh"
#include "arch/sm90/tma.cuh"
#include "arch/sm90/wgmma.cuh"
#include "host/registry.h"
#include "host/validate.h"
#include "kernels/sm90/fragment_epilogue.cuh"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {
namespace {

using namespace anvil::sm90;

constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 64;
constexpr int kChunk = 8;                                  // K values per 16-byte core-matrix row
constexpr int kTileBytesA = kBlockM * kBlockK * 2;         // 16 KiB
constexpr int kTileBytesB = kBlockN * kBlockK * 2;         // 16 KiB
constexpr int kSmemBytes = kTileBytesA + kTileBytesB + 1024;  // + barrier, alignment slack

template <Input kInput>
__global__ void __launch_bounds__(128, 1)
    tma_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                     int64_t k, EpilogueParams epilogue) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = sm90::align_to_swizzle_atom(smem_raw);
  uint8_t* tile_a = smem;
  uint8_t* tile_b = smem + kTileBytesA;
  uint64_t* full = reinterpret_cast<uint64_t*>(tile_b + kTileBytesB);

  const int m0 = blockIdx.y * kBlockM, n0 = blockIdx.x * kBlockN;
  if (threadIdx.x == 0) {
    mbarrier_init(full, 1);
    fence_barrier_init();
  }
  __syncthreads();

  float acc[2][64];  // two m64 slabs of the 128-row tile, n128 each
  const int k_tiles = static_cast<int>((k + kBlockK - 1) / kBlockK);
  for (int kt = 0; kt < k_tiles; ++kt) {
    if (threadIdx.x == 0) {
      mbarrier_arrive_expect_tx(full, kTileBytesA + kTileBytesB);
      for (int chunk = 0; chunk < kBlockK / kChunk; ++chunk) {
        const int k_coord = kt * kBlockK + chunk * kChunk;
        tma_load_2d(tile_a + chunk * kBlockM * 16, &map_a, full, k_coord, m0);
        tma_load_2d(tile_b + chunk * kBlockN * 16, &map_b, full, k_coord, n0);
      }
    }
    mbarrier_wait(full, kt & 1);

    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      // A k16 step spans two chunks: the leading offset jumps between them (one chunk
      // holds all 128 rows: 2 KiB); the stride offset steps 8 rows (128 bytes).
#pragma unroll
      for (int slab = 0; slab < 2; ++slab) {
        const uint64_t desc_a = make_smem_desc(tile_a + kk * 2 * (kBlockM * 16) + slab * 64 * 16, kBlockM * 16, 128,
                                               SmemSwizzle::kNone);
        const uint64_t desc_b = make_smem_desc(tile_b + kk * 2 * (kBlockN * 16), kBlockN * 16, 128, SmemSwizzle::kNone);
        WgmmaSS<kBlockN, kInput>::template mma<0, 0>(acc[slab], desc_a, desc_b, kt > 0 || kk > 0);
      }
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    // Every thread's wgmma reads are done; only then may thread 0 overwrite the tiles.
    __syncthreads();
  }

#pragma unroll
  for (int slab = 0; slab < 2; ++slab) store_fragment_generic<kBlockN>(epilogue, 0, m0 + slab * 64, n0, acc[slab]);
}

constexpr const char* kName = "ladder-03-tma-wgmma";

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_kmajor_tma(kName, desc, args, TmaLadderLimits{}, diag);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  CUtensorMap map_a, map_b;
  TensorMapRequest req;
  req.dtype = desc.a.dtype;
  req.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  req.box_inner = kChunk;
  req.inner = desc.k;
  req.base = args.a, req.outer = desc.m, req.line_stride = desc.a.ld, req.box_outer = kBlockM;
  Status s = encode_tensor_map(&map_a, req, diag);
  if (s != Status::kSuccess) return s;
  req.base = args.b, req.outer = desc.n, req.line_stride = desc.b.ld, req.box_outer = kBlockN;
  s = encode_tensor_map(&map_b, req, diag);
  if (s != Status::kSuccess) return s;

  auto kernel = desc.a.dtype == DataType::kBF16 ? tma_wgmma_kernel<Input::kBF16> : tma_wgmma_kernel<Input::kF16>;
  s = set_dynamic_smem(kernel, kSmemBytes, kName, diag);
  if (s != Status::kSuccess) return s;
  const dim3 grid(static_cast<unsigned>((desc.n + kBlockN - 1) / kBlockN), static_cast<unsigned>((desc.m + kBlockM - 1) / kBlockM));
  kernel<<<grid, 128, kSmemBytes, args.stream>>>(map_a, map_b, desc.k, make_epilogue_params(desc, args));
  return check_launch(diag, kName);
}

}  // namespace

extern const KernelInfo kLadder03TmaWgmma{kName, "TMA + mbarrier + wgmma, one stage, no swizzle, 128x128 tile",
                                          check, launch, nullptr};

}  // namespace anvil::detail
