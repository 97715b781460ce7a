// The compile-time shape of one warp-specialized kernel instance, and the resource
// arithmetic that follows from it.
#pragma once

namespace anvil::detail {

template <int kBlockN_, int kConsumers_, int kSlabs_, int kStages_, int kClusterM_, bool kTmaStore_,
          bool kMulticast_ = true>
struct KernelConfig {
  static constexpr int kBlockK = 64;  // one 128-byte swizzle row of bf16/fp16
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kConsumers = kConsumers_;
  static constexpr int kSlabs = kSlabs_;  // m64 slabs per consumer warpgroup
  static constexpr int kBlockM = 64 * kSlabs * kConsumers;
  static constexpr int kStages = kStages_;
  static constexpr int kClusterM = kClusterM_;  // CTAs along M sharing (multicasting) the B tile
  // CTAs that fill each other's B stages; 1 means a cluster whose CTAs load alone (ablation).
  static constexpr int kMulticastCtas = kMulticast_ ? kClusterM : 1;
  static constexpr bool kTmaStore = kTmaStore_;

  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kStageBytesA = kBlockM * kBlockK * 2;
  static constexpr int kStageBytesB = kBlockN * kBlockK * 2;
  static constexpr int kEpilogueBytes = kTmaStore ? kBlockM * kBlockN * 2 : 1024;
  // The producer only issues TMA; its registers go to the consumers' accumulators.
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = kConsumers == 1 ? 240 : 232;

  static_assert(kBlockN % 64 == 0 && kBlockN <= 256, "wgmma N and the epilogue's 64-column boxes");
  static_assert((kBlockN / kMulticastCtas) % 8 == 0, "multicast slices of B are whole 8-row groups");
  static_assert(kProducerRegisters * 128 + kConsumerRegisters * 128 * kConsumers <= 65536, "register file");
};

}  // namespace anvil::detail
