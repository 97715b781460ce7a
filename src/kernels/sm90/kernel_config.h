// The compile-time shape of one warp-specialized kernel instance, and the resource
// arithmetic that follows from it.
#pragma once

namespace anvil::detail {

// How the CTAs of a cluster share B. kMulticast is the real design; the other two exist
// for the ladder's step-9 ablations.
enum class ClusterB { kMulticast, kLocalLoads, kLocalLoadsCrossRelease };

template <int kBlockN_, int kConsumers_, int kSlabs_, int kStages_, int kClusterM_, bool kTmaStore_,
          ClusterB kClusterB_ = ClusterB::kMulticast>
struct KernelConfig {
  static constexpr int kBlockK = 64;  // one 128-byte swizzle row of bf16/fp16
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kConsumers = kConsumers_;
  static constexpr int kSlabs = kSlabs_;  // m64 slabs per consumer warpgroup
  static constexpr int kBlockM = 64 * kSlabs * kConsumers;
  static constexpr int kStages = kStages_;
  static constexpr int kClusterM = kClusterM_;  // CTAs along M sharing (multicasting) the B tile
  // CTAs that fill each other's B stages (1: each CTA loads its whole B tile) ...
  static constexpr int kMulticastCtas = kClusterB_ == ClusterB::kMulticast ? kClusterM : 1;
  // ... and CTAs whose consumers must free a stage before it is refilled.
  static constexpr int kReleaseCtas = kClusterB_ == ClusterB::kLocalLoads ? 1 : kClusterM;
  static constexpr bool kTmaStore = kTmaStore_;

  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kStageBytesA = kBlockM * kBlockK * 2;
  static constexpr int kStageBytesB = kBlockN * kBlockK * 2;
  // The TMA-store buffer (the whole tile in bf16/fp16), or the staged epilogue's chunk of
  // 16 x 40 floats per consumer warp (epilogue_store.cuh); the larger of the two.
  static constexpr int kStagedEpilogueBytes = kConsumers * 4 * 16 * 40 * 4;
  static constexpr int kEpilogueBytes =
      kTmaStore && kBlockM * kBlockN * 2 > kStagedEpilogueBytes ? kBlockM * kBlockN * 2 : kStagedEpilogueBytes;
  // The producer only issues TMA; its registers go to the consumers' accumulators.
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = kConsumers == 1 ? 240 : 232;

  static_assert(kBlockN % 64 == 0 && kBlockN <= 256, "wgmma N and the epilogue's 64-column boxes");
  static_assert((kBlockN / kMulticastCtas) % 8 == 0, "multicast slices of B are whole 8-row groups");
  static_assert(kProducerRegisters * 128 + kConsumerRegisters * 128 * kConsumers <= 65536, "register file");
};

}  // namespace anvil::detail
