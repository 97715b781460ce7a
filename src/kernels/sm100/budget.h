// The resources of one sm_100 (B200) SM that the Blackwell GEMM is planned against, and
// the arithmetic that sizes the pair GEMM from them. Plain constexpr C++: the planner and
// the CPU tests read it without CUDA.
#pragma once

namespace anvil::sm100::budget {

// Shared memory: 228 KiB per SM, of which one CTA may take 227 KiB (the driver reserves
// 1 KiB per CTA). CUDA C++ Programming Guide, compute capability 10.0 table.
inline constexpr int kSmemPerSmBytes = 228 * 1024;
inline constexpr int kSmemPerBlockBytes = 227 * 1024;
// Tensor memory: 128 lanes x 512 columns of 32-bit cells per SM (256 KiB); allocated in
// columns, a power of two from 32 to 512 (PTX ISA, tcgen05 "Tensor Memory").
inline constexpr int kTmemLanes = 128;
inline constexpr int kTmemColumns = 512;
// Clusters: up to 8 CTAs portable (16 with the non-portable attribute, as on sm_90); the
// 2-CTA MMA pairs ranks 2i and 2i+1.
inline constexpr int kMaxPortableClusterCtas = 8;
inline constexpr int kMmaPairCtas = 2;
inline constexpr int kSmCountB200 = 148;

// The pair GEMM (kernels/sm100/gemm_kernel.cuh): a 256 x 256 tile per CTA pair, each CTA
// holding 128 rows of A and 128 rows (N) of B per 64-wide K stage, and an fp32
// accumulator of 128 lanes x 256 columns per CTA, double-buffered: 2 x 256 = 512 columns,
// all of TMEM (seed 003, "TMEM and the epilogue").
inline constexpr int kPairTileM = 256;
inline constexpr int kPairTileN = 256;
inline constexpr int kTileK = 64;  // one 128-byte swizzle row of bf16/fp16
inline constexpr int kAccumulatorColumns = kPairTileN;
inline constexpr int kAccumulatorBuffers = 2;

// Input bytes one CTA of a pair holds per K stage: half of A's rows and half of B's
// columns (seed 003's smem_per_cta / stages).
constexpr int pair_stage_bytes_per_cta(int tile_m, int tile_n, int tile_k, int input_bytes) {
  return ((tile_m / 2) * tile_k + tile_k * (tile_n / 2)) * input_bytes;
}

// The epilogue's staging in shared memory: four warps, each parking 16 x 32 fp32 chunks
// at a pitch of 40 floats (the Hopper kernel's staged epilogue, which this one shares).
inline constexpr int kEpilogueStagingBytes = 4 * 16 * 40 * 4;

// What the kernel asks for: the stage ring, the epilogue's staging, 1 KiB of alignment
// slack (swizzled tiles start on 1024-byte boundaries) and 1 KiB for barriers, the CLC
// responses and the TMEM address.
constexpr int pair_gemm_smem_bytes(int stages) {
  return stages * pair_stage_bytes_per_cta(kPairTileM, kPairTileN, kTileK, 2) + kEpilogueStagingBytes + 2048;
}

// The deepest ring that fits one CTA's shared memory: 6 x 32 KiB + 10 KiB + 2 KiB = 204 KiB
// (a seventh stage would need 236 KiB).
inline constexpr int kPairGemmStages = 6;
static_assert(pair_gemm_smem_bytes(kPairGemmStages) <= kSmemPerBlockBytes);
static_assert(kAccumulatorBuffers * kAccumulatorColumns <= kTmemColumns);

}  // namespace anvil::sm100::budget
