// Ladder step 4: the 128-byte swizzle. Same single-stage loop as step 3, but each operand
// slice is one 64-wide TMA box written with CU_TENSOR_MAP_SWIZZLE_128B: every 128-byte row
// (64 values of K) has its eight 16-byte chunks permuted by XOR with (row % 8). The wgmma
// descriptor names the same mode, so the tensor core undoes the permutation on read.
// Eight consecutive rows now start in eight different bank groups, for TMA's writes and
// wgmma's reads alike, and one TMA call per operand replaces eight.
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
constexpr int kTileBytesA = kBlockM * kBlockK * 2;
constexpr int kTileBytesB = kBlockN * kBlockK * 2;
constexpr int kSmemBytes = kTileBytesA + kTileBytesB + 1024 + 64;  // swizzle atoms need 1024-byte alignment

template <Input kInput>
__global__ void __launch_bounds__(128, 1)
    swizzled_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int64_t k,
                    EpilogueParams epilogue) {
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

  float acc[2][64];
  const int k_tiles = static_cast<int>((k + kBlockK - 1) / kBlockK);
  for (int kt = 0; kt < k_tiles; ++kt) {
    if (threadIdx.x == 0) {
      mbarrier_arrive_expect_tx(full, kTileBytesA + kTileBytesB);
      tma_load_2d(tile_a, &map_a, full, kt * kBlockK, m0);
      tma_load_2d(tile_b, &map_b, full, kt * kBlockK, n0);
    }
    mbarrier_wait(full, kt & 1);

    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      // k16 = 32 bytes into each swizzled row; an m64 slab is 64 rows = 8 KiB further.
#pragma unroll
      for (int slab = 0; slab < 2; ++slab) {
        WgmmaSS<kBlockN, kInput>::template mma<0, 0>(acc[slab],
                                                     make_kmajor_sw128_desc(tile_a + slab * 64 * 128 + kk * 32),
                                                     make_kmajor_sw128_desc(tile_b + kk * 32), kt > 0 || kk > 0);
      }
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    __syncthreads();
  }

#pragma unroll
  for (int slab = 0; slab < 2; ++slab) store_fragment_generic<kBlockN>(epilogue, 0, m0 + slab * 64, n0, acc[slab]);
}

constexpr const char* kName = "ladder-04-swizzle";

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  return check_kmajor_tma(kName, desc, args, TmaLadderLimits{}, diag);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  CUtensorMap map_a, map_b;
  Status s = encode_kmajor_sw128(&map_a, args.a, desc.a, desc.k, desc.m, kBlockM, diag);
  if (s == Status::kSuccess) s = encode_kmajor_sw128(&map_b, args.b, desc.b, desc.k, desc.n, kBlockN, diag);
  if (s != Status::kSuccess) return s;
  auto kernel = desc.a.dtype == DataType::kBF16 ? swizzled_kernel<Input::kBF16> : swizzled_kernel<Input::kF16>;
  s = set_dynamic_smem(kernel, kSmemBytes, kName, diag);
  if (s != Status::kSuccess) return s;
  const dim3 grid(static_cast<unsigned>((desc.n + kBlockN - 1) / kBlockN), static_cast<unsigned>((desc.m + kBlockM - 1) / kBlockM));
  kernel<<<grid, 128, kSmemBytes, args.stream>>>(map_a, map_b, desc.k, make_epilogue_params(desc, args));
  return check_launch(diag, kName);
}

}  // namespace

extern const KernelInfo kLadder04Swizzle{kName, "step 3 + 128-byte swizzled tiles (one TMA box per operand)", check,
                                         launch, nullptr};

}  // namespace anvil::detail
