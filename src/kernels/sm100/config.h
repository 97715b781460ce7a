// The compile-time shape of one Blackwell GEMM instance. Plain C++ (no CUDA): the host
// side and the planner read it too.
#pragma once

#include "kernels/sm100/budget.h"

namespace anvil::detail {

// How clusters get their tiles.
enum class Sm100Schedule {
  // Cluster launch control: one cluster launched per tile; clusters that finish early
  // cancel clusters not yet started and take over their tiles.
  kClc,
  // Static persistent: as many clusters as fit at once, each striding over the tiles.
  kStaticPersistent,
  // One tile per cluster, one cluster per tile (the plain grid; ladder configurations).
  kOneTilePerCluster,
};

// The choices that define one Blackwell GEMM instance, by name. A structural aggregate,
// so it is the template argument itself, as KernelSpec is for the Hopper kernel:
//   Sm100Config<Sm100Spec{.cta_group = 2, .stages = 6, .schedule = Sm100Schedule::kClc}>
struct Sm100Spec {
  // 2: a CTA pair computes a 256 x 256 tile with tcgen05.mma.cta_group::2, each CTA
  // holding half of A's rows and half of B's columns; 1: one CTA, 128 x 256.
  int cta_group;
  int stages;  // shared-memory ring stages of A and B tiles
  Sm100Schedule schedule;
  // TMEM accumulators: 2 lets the epilogue drain one tile's accumulator while the MMA
  // fills the next (persistent schedules); 1 leaves half of TMEM to a second resident CTA.
  int accumulator_buffers = 2;
  int band = 8;  // tile rows per raster band of the tile scheduler (L2 reuse); 1 = row-major
  // One epilogue loop compiled per activation (the activation a compile-time constant in
  // it), or only the identity one - a sixth of the epilogue code and build time, for the
  // ladder, which is measured on the plain GEMM (other activations are refused).
  bool epilogue_per_activation = true;
  // Operand tiles in shared memory as TMA writes them with the 128-byte swizzle (rows of 64
  // elements, XOR-permuted 16-byte chunks), or unswizzled: the canonical no-swizzle K-major
  // layout of 8-row x 16-byte core matrices, loaded as kBlockK / 8 boxes 8 elements wide.
  // The seeds' steps before their swizzle step (ladder configurations only).
  bool swizzle_128b = true;
};

template <Sm100Spec kSpec>
struct Sm100Config {
  static constexpr int kCtaGroup = kSpec.cta_group;
  static constexpr int kStages = kSpec.stages;
  static constexpr Sm100Schedule kSchedule = kSpec.schedule;
  static constexpr bool kClc = kSpec.schedule == Sm100Schedule::kClc;
  static constexpr int kBand = kSpec.band;
  static constexpr bool kEpiloguePerActivation = kSpec.epilogue_per_activation;
  static constexpr bool kSwizzle128B = kSpec.swizzle_128b;

  // The tile, as the Hopper kernel's producer (kernels/sm90/producer.cuh) names it: kBlockM
  // x kBlockN per cluster (the pair), K in steps of kBlockK. The pair splits both operand
  // tiles in two (kSlicesA, kSlicesB): CTA r holds A's tile rows from r kBlockM / 2 and
  // B's from r kBlockN / 2.
  static constexpr int kRowsPerCta = 128;  // TMEM lanes: one accumulator row each
  static constexpr int kBlockM = kRowsPerCta * kCtaGroup;
  static constexpr int kBlockN = sm100::budget::kPairTileN;
  static constexpr int kBlockK = sm100::budget::kTileK;
  static constexpr int kSlicesA = kCtaGroup;
  static constexpr int kSlicesB = kCtaGroup;
  static constexpr int kBRowsPerCta = kBlockN / kCtaGroup;
  static constexpr int kStageBytesA = kRowsPerCta * kBlockK * 2;
  static constexpr int kStageBytesB = kBRowsPerCta * kBlockK * 2;
  // Bytes that land on one stage's full barrier: both CTAs' loads for a pair.
  static constexpr int kStageTxBytes = kCtaGroup * (kStageBytesA + kStageBytesB);

  // Warp roles: 0 loads (TMA), 1 issues the MMAs and owns TMEM, 2-5 drain the
  // accumulator (the epilogue; four warps, one per 32-lane quarter of TMEM).
  static constexpr int kProducerWarp = 0;
  static constexpr int kMmaWarp = 1;
  static constexpr int kFirstEpilogueWarp = 2;
  static constexpr int kEpilogueWarps = 4;
  static constexpr int kThreads = 32 * (kFirstEpilogueWarp + kEpilogueWarps);
  // Each epilogue warp parks 16 x 32 fp32 chunks of its rows in shared memory (pitch 40
  // floats) and stores them from there (the staged path of kernels/sm90/epilogue_store.cuh).
  static constexpr int kEpilogueChunkBytes = 16 * 40 * 4;

  // Accumulators: two buffers of kBlockN fp32 columns, so the epilogue drains one while
  // the MMA warp fills the other.
  static constexpr int kAccumulatorBuffers = kSpec.accumulator_buffers;
  static constexpr int kAccumulatorColumns = kBlockN;
  static constexpr int kTmemColumns = kAccumulatorBuffers * kAccumulatorColumns;
  static_assert(kTmemColumns <= sm100::budget::kTmemColumns);
  static_assert(kTmemColumns == 256 || kTmemColumns == 512, "TMEM is allocated in powers of two columns");
  static_assert(kCtaGroup == 1 || kCtaGroup == 2, "one CTA or a CTA pair");

  // CLC responses in flight: the producer asks for tile t+1 while it loads tile t, and the
  // epilogue may still be reading tile t-1's.
  static constexpr int kClcStages = 2;
  // Consumers of one CLC response: each CTA's producer, the MMA thread, and each CTA's
  // four epilogue warps.
  static constexpr int kClcConsumers = kCtaGroup + 1 + kEpilogueWarps * kCtaGroup;
};

}  // namespace anvil::detail
