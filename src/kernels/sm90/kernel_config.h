// The compile-time shape of one warp-specialized kernel instance, and the resource
// arithmetic that follows from it.
#pragma once

namespace anvil::detail {

// How the CTAs of a cluster share B. kMulticast is the real design; the other two exist
// for the ladder's step-9 ablations.
enum class ClusterB { kMulticast, kLocalLoads, kLocalLoadsCrossRelease };

// How the consumer warpgroups share the work. Cooperative: every tile is split between
// them by rows, and they run mainloop and epilogue together. Ping-pong: each takes whole
// tiles in turn, so one stores a finished tile while the other multiplies the next.
enum class Schedule { kCooperative, kPingPong };

// Which neighbours the CTAs of a cluster are. Along M they cover vertically adjacent tiles
// and share (multicast) the B tile; along N, horizontally adjacent ones sharing the A tile,
// for problems with an odd number of 128-row tiles, where a pair along M would leave half
// of the last cluster row idle. Either way a CTA reads less from L2 than a lone CTA: the
// lone 128 x 256 CTAs run at ~0.89 of the pairs' speed, bounded by L2 bandwidth
// (docs/notes/lone-ctas-l2-bound.md).
enum class ClusterAxis { kM, kN };

// The choices that define one warp-specialized kernel instance, by name. A structural
// aggregate, so it is the template argument itself:
//   KernelConfig<KernelSpec{.block_n = 256, .consumers = 2, .slabs_per_consumer = 1,
//                           .stages = 4, .cluster_ctas = 2, .tma_store = true}>
// (designated initialisers in declaration order; the defaulted fields may be left out).
struct KernelSpec {
  int block_n;             // tile columns: the wgmma N of every consumer
  int consumers;           // consumer warpgroups (plus one producer warpgroup)
  int slabs_per_consumer;  // m64 row slabs each consumer warpgroup multiplies
  int stages;              // shared-memory ring stages of A and B tiles
  int cluster_ctas;        // CTAs per cluster (1: no cluster)
  bool tma_store;          // the plain epilogue leaves through swizzled shared memory and TMA stores
  ClusterB cluster_b = ClusterB::kMulticast;
  Schedule schedule = Schedule::kCooperative;
  bool stream_k = false;   // stream-K work units (stream_k.h) instead of whole tiles
  int store_rounds = 1;    // rounds the TMA-store epilogue writes a warpgroup's output in
  ClusterAxis cluster_axis = ClusterAxis::kM;
  int element_bytes = 2;   // of A and B: 2 (bf16/fp16) or 1 (e4m3/e5m2)
  // FP8 with DeepSeek-V3 block scales: each 128-wide K block is summed on its own and
  // added, scaled, to an fp32 total in registers (consumer.cuh, run_block_scaled_mainloop).
  bool block_scales = false;
  // 8-bit configurations: also instantiate the e5m2 x e4m3 and e4m3 x e5m2 kernels.
  bool mixed_fp8 = false;
  // The producer leaves out operand rows past M or N (producer.cuh, load_tile_at). Only
  // where it was measured to pay: the other configurations keep the unconditional loads,
  // whose code it would change.
  bool skip_dead_boxes = false;
  // Batch-invariant mode's K split inside each CTA: the consumers sum each of
  // Sm90Params::k_slices slices of K from zero and add the slices' sums in slice order, as
  // sm90-decode's cluster adds its ranks' (consumer.cuh, run_sliced_mainloop). The running
  // total doubles the accumulator registers: one slab of at most 192 columns per consumer.
  bool fold_k_slices = false;
};

// The same configuration with 8-bit inputs: a stage row is still 128 bytes, now 128
// values of K, so the stages, shared memory and tile order are the 16-bit ones'.
constexpr KernelSpec with_8bit_inputs(KernelSpec spec) {
  spec.element_bytes = 1;
  return spec;
}

template <KernelSpec kSpec>
struct KernelConfig {
  static constexpr KernelSpec kKernelSpec = kSpec;
  // K per stage: one 128-byte swizzle row, 64 bf16/fp16 or 128 fp8 values. Every K step of
  // wgmma reads 32 bytes of each row (k16 for 16-bit inputs, k32 for 8-bit ones).
  static constexpr int kElementBytes = kSpec.element_bytes;
  static constexpr int kBlockK = 128 / kElementBytes;
  static constexpr int kRowBytes = kBlockK * kElementBytes;
  static constexpr bool kBlockScales = kSpec.block_scales;
  static constexpr bool kMixedFp8 = kSpec.mixed_fp8;
  static constexpr bool kSkipDeadBoxes = kSpec.skip_dead_boxes;
  static constexpr bool kFoldKSlices = kSpec.fold_k_slices;
  static constexpr int kBlockN = kSpec.block_n;
  static constexpr int kConsumers = kSpec.consumers;
  static constexpr int kSlabs = kSpec.slabs_per_consumer;
  static constexpr bool kPingPong = kSpec.schedule == Schedule::kPingPong;
  static constexpr int kBlockM = 64 * kSlabs * (kPingPong ? 1 : kConsumers);
  // Consumer warpgroups that read each stage (and free it).
  static constexpr int kStageReaders = kPingPong ? 1 : kConsumers;
  static constexpr int kStages = kSpec.stages;
  static constexpr int kClusterCtas = kSpec.cluster_ctas;
  static constexpr bool kClusterAlongN = kSpec.cluster_axis == ClusterAxis::kN;
  static constexpr int kClusterM = kClusterAlongN ? 1 : kClusterCtas;  // CTAs along M, sharing B
  static constexpr int kClusterN = kClusterAlongN ? kClusterCtas : 1;  // CTAs along N, sharing A
  // CTAs that fill each other's stages with their slice of the shared tile (1: each CTA
  // loads its whole tiles) ...
  static constexpr int kMulticastCtas = kSpec.cluster_b == ClusterB::kMulticast ? kClusterCtas : 1;
  static constexpr int kSlicesA = kClusterAlongN ? kMulticastCtas : 1;
  static constexpr int kSlicesB = kClusterAlongN ? 1 : kMulticastCtas;
  // ... and CTAs whose consumers must free a stage before it is refilled.
  static constexpr int kReleaseCtas = kSpec.cluster_b == ClusterB::kLocalLoads ? 1 : kClusterCtas;
  static constexpr bool kTmaStore = kSpec.tma_store;
  // Stream-K work units (stream_k.h) instead of whole tiles; single CTAs, cooperative.
  static constexpr bool kStreamK = kSpec.stream_k;

  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kStageBytesA = kBlockM * kRowBytes;
  static constexpr int kStageBytesB = kBlockN * kRowBytes;
  // The TMA-store buffer (the whole tile in bf16/fp16), or the staged epilogue's chunk of
  // 16 x 40 floats per consumer warp (epilogue_store.cuh); the larger of the two.
  static constexpr int kStagedEpilogueBytes = kConsumers * 4 * 16 * 40 * 4;
  // The TMA-store epilogue writes a warpgroup's output in this many rounds through a buffer
  // of 1/kStoreRounds of it, waiting for each round's stores to leave shared memory: less
  // buffer, so room for another stage, for a wait per extra round.
  static constexpr int kStoreRounds = kSpec.store_rounds;
  // The TMA store writes the tile's whole 64-column boxes; a width that is not a multiple
  // of 64 (the fitted 80, 96, 112, 144, 160, ...) stores its last 16-48 columns from the
  // registers.
  static constexpr int kTmaStoreColumns = kBlockN / 64 * 64;
  // Ping-pong warpgroups each store a whole tile, possibly at the same time.
  static constexpr int kTmaStoreBytes = kBlockM * kTmaStoreColumns * 2 * (kPingPong ? kConsumers : 1) / kStoreRounds;
  static constexpr int kEpilogueBytes =
      kTmaStore && kTmaStoreBytes > kStagedEpilogueBytes ? kTmaStoreBytes : kStagedEpilogueBytes;
  // The producer only issues TMA; its registers go to the consumers' accumulators.
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = kConsumers == 1 ? 240 : 232;

  // wgmma takes N in steps of 8 up to 256; the staged epilogue parks 32-column chunks and
  // a last one of 16 (epilogue_store.cuh), and the TMA store writes whole 64-column boxes
  // (a partial box would overwrite the next tile).
  static_assert(kBlockN % 16 == 0 && kBlockN >= 64 && kBlockN <= 256,
                "wgmma N, the staged epilogue's 32- and 16-column chunks and at least one 64-column store box");
  static_assert((kSlabs * kBlockN / 64) % kStoreRounds == 0, "whole 64x64 store boxes per round");
  static_assert((kBlockN / kSlicesB) % 8 == 0 && (kBlockM / kSlicesA) % 8 == 0,
                "multicast slices are whole 8-row groups (1024-byte swizzle atoms)");
  static_assert(!kClusterAlongN || kSpec.cluster_b == ClusterB::kMulticast, "the ablations' local loads pair along M only");
  static_assert(!kStreamK || (kClusterCtas == 1 && !kPingPong), "stream-K units are per CTA, both warpgroups on one tile");
  static_assert(kElementBytes == 2 || kElementBytes == 1, "16-bit or 8-bit inputs");
  // The FP8 scales are applied where whole tiles are finished, not to stream-K's pieces.
  static_assert(kElementBytes == 2 || !kStreamK, "8-bit inputs run whole tiles");
  // Block scales: a B scale covers 128 columns, so a tile is one B block wide; the K-block
  // partial sums double the accumulator registers, which one 64 x 128 slab leaves room for.
  static_assert(!(kBlockScales && kSkipDeadBoxes), "one fourth tensor map (Sm90Params)");
  static_assert(!kBlockScales || (kElementBytes == 1 && (kBlockN == 128 || kBlockN == 192) && kSlabs == 1 &&
                                  !kPingPong && !kStreamK),
                "block scales: 8-bit inputs, 128- or 192-wide cooperative tiles of one slab per consumer (a tile "
                "spans at most two 128-wide weight scale blocks)");
  static_assert(!kFoldKSlices || (kElementBytes == 2 && kSlabs == 1 && kBlockN <= 192 && !kPingPong && !kStreamK),
                "folded K slices: 16-bit inputs, cooperative whole tiles, and room for a second accumulator");
  static_assert(kProducerRegisters * 128 + kConsumerRegisters * 128 * kConsumers <= 65536, "register file");
};

// The first output row of a consumer warpgroup within its tile.
template <class Config>
constexpr int consumer_row_offset(int consumer) {
  return Config::kPingPong ? 0 : consumer * Config::kSlabs * 64;
}

}  // namespace anvil::detail
