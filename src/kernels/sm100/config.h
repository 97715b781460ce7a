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

// kCtaGroup 2: a CTA pair computes a 256 x 256 tile with tcgen05.mma.cta_group::2, each
// CTA holding half of A's rows and half of B's columns; 1: one CTA, 128 x 256.
// kAccumulatorBuffers: 2 lets the epilogue drain one tile's accumulator while the MMA
// fills the next (persistent schedules); 1 leaves half of TMEM to a second resident CTA.
// kBand: tile rows per raster band of the tile scheduler (L2 reuse); 1 = row-major.
// kEpiloguePerActivation: one epilogue loop compiled per activation (the activation a
// compile-time constant in it), or one loop that reads it at run time - a sixth of the
// epilogue code and build time, for configurations measured without epilogue math.
template <int kCtaGroup_, int kStages_, Sm100Schedule kSchedule_, int kAccumulatorBuffers_ = 2, int kBand_ = 8,
          bool kEpiloguePerActivation_ = true>
struct Sm100Config {
  static constexpr int kCtaGroup = kCtaGroup_;
  static constexpr int kStages = kStages_;
  static constexpr Sm100Schedule kSchedule = kSchedule_;
  static constexpr bool kClc = kSchedule_ == Sm100Schedule::kClc;
  static constexpr int kBand = kBand_;
  static constexpr bool kEpiloguePerActivation = kEpiloguePerActivation_;

  static constexpr int kRowsPerCta = 128;  // TMEM lanes: one accumulator row each
  static constexpr int kTileM = kRowsPerCta * kCtaGroup;
  static constexpr int kTileN = sm100::budget::kPairTileN;
  static constexpr int kBlockK = sm100::budget::kTileK;
  static constexpr int kBRowsPerCta = kTileN / kCtaGroup;
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

  // Accumulators: two buffers of kTileN fp32 columns, so the epilogue drains one while
  // the MMA warp fills the other.
  static constexpr int kAccumulatorBuffers = kAccumulatorBuffers_;
  static constexpr int kAccumulatorColumns = kTileN;
  static constexpr int kTmemColumns = kAccumulatorBuffers * kAccumulatorColumns;
  static_assert(kTmemColumns <= sm100::budget::kTmemColumns);
  static_assert(kTmemColumns == 256 || kTmemColumns == 512, "TMEM is allocated in powers of two columns");

  // CLC responses in flight: the producer asks for tile t+1 while it loads tile t, and the
  // epilogue may still be reading tile t-1's.
  static constexpr int kClcStages = 2;
  // Consumers of one CLC response: each CTA's producer, the MMA thread, and each CTA's
  // four epilogue warps.
  static constexpr int kClcConsumers = kCtaGroup + 1 + kEpilogueWarps * kCtaGroup;
};

}  // namespace anvil::detail
