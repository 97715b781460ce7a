// sm90-gemm's configurations, one per Sm90Variant (plan.h), in one place: the kernels
// instantiate them (gemm_sm90.cu, gemm_sm90_fit.cu) and anvil-plan reads their resource
// arithmetic, so the calculator and the kernels cannot disagree. Host-includable.
#pragma once

#include "kernels/sm90/fp8_plan.h"
#include "kernels/sm90/kernel_config.h"
#include "kernels/sm90/plan.h"

namespace anvil::detail {

// 128x256, 4 x 48 KiB stages, direct epilogue.
using Wide = KernelConfig<KernelSpec{.block_n = 256,
                                     .consumers = 2,
                                     .slabs_per_consumer = 1,
                                     .stages = 4,
                                     .cluster_ctas = 1,
                                     .tma_store = false}>;
// 128x128, 6 x 32 KiB stages.
using Narrow = KernelConfig<KernelSpec{.block_n = 128,
                                       .consumers = 2,
                                       .slabs_per_consumer = 1,
                                       .stages = 6,
                                       .cluster_ctas = 1,
                                       .tma_store = false}>;
// Wide tiles in 2-CTA clusters along M that multicast the shared B tile (half the L2
// reads of B), 4 stages, the plain GEMM's epilogue through TMA stores in two rounds of a
// half-size buffer: ladder step 11's configuration. The default for problems with two or
// more rows of tiles.
using WidePair = KernelConfig<KernelSpec{.block_n = 256,
                                         .consumers = 2,
                                         .slabs_per_consumer = 1,
                                         .stages = 4,
                                         .cluster_ctas = 2,
                                         .tma_store = true,
                                         .store_rounds = 2}>;
// The same tiles and ring in 2-CTA clusters along N that multicast the shared A tile,
// for an odd number of 128-row tiles (plan.h, kWidePairN).
using WidePairN = KernelConfig<KernelSpec{.block_n = 256,
                                          .consumers = 2,
                                          .slabs_per_consumer = 1,
                                          .stages = 4,
                                          .cluster_ctas = 2,
                                          .tma_store = true,
                                          .store_rounds = 2,
                                          .cluster_axis = ClusterAxis::kN}>;
// The ping-pong schedule: 128x128 tiles, each consumer warpgroup taking whole tiles in
// turn, so one warpgroup's epilogue overlaps the other's mainloop; 2-CTA multicast
// clusters, 5 stages. sm90-gemm's choice for fused epilogues; also selectable by name.
using PingPongPair = KernelConfig<KernelSpec{.block_n = 128,
                                             .consumers = 2,
                                             .slabs_per_consumer = 2,
                                             .stages = 5,
                                             .cluster_ctas = 2,
                                             .tma_store = true,
                                             .schedule = Schedule::kPingPong}>;
// 256x128 tiles (two 64-row slabs per consumer warpgroup) whose trailing waves are dealt
// out to all SMs by K iterations (stream_k.h): for problems whose tiles leave SMs idle in
// the last wave, e.g. M = 256 decode batches, which then make one row of tiles. 4 stages
// and the pairs' TMA store in two rounds.
using TallStreamK = KernelConfig<KernelSpec{.block_n = 128,
                                            .consumers = 2,
                                            .slabs_per_consumer = 2,
                                            .stages = 4,
                                            .cluster_ctas = 1,
                                            .tma_store = true,
                                            .stream_k = true,
                                            .store_rounds = 2}>;
static_assert(TallStreamK::kConsumers == 2 && TallStreamK::kBlockM * TallStreamK::kBlockN == 256 * 128,
              "stream_k_workspace_bytes (planner.cpp) sizes this configuration's partials");
// A plain GEMM's D leaves through TMA stores of whole 64-column boxes, one box per round
// through an 8 KiB buffer per warpgroup, with the last 32 columns of a 160- or 224-wide
// tile stored straight from the registers; other epilogues are staged. The staged buffer
// (20 KiB) and the stages share the 227 KiB: 5 stages of 16 + 20 or 16 + 24 KiB at 160 and
// 192 columns, 4 of 16 + 28 KiB at 224. Pairs: 2-CTA clusters along M multicasting B;
// singles: one CTA, its own B.
// Singles run where a pair would hold an empty row of tiles, so their last row of tiles is
// often a few rows deep (257, 777, 1537 rows): their producer leaves out A's rows past M, as
// the narrow widths' does. kFoldKSlices: the folded-slice configurations below.
template <int kBlockN, int kStages, int kClusterM, bool kFoldKSlices = false>
using FitConfig = KernelConfig<KernelSpec{.block_n = kBlockN,
                                          .consumers = 2,
                                          .slabs_per_consumer = 1,
                                          .stages = kStages,
                                          .cluster_ctas = kClusterM,
                                          .tma_store = true,
                                          .store_rounds = kBlockN / 64,
                                          .skip_dead_boxes = kClusterM == 1,
                                          .fold_k_slices = kFoldKSlices}>;
using FitPair160 = FitConfig<160, 5, 2>;
using FitPair192 = FitConfig<192, 5, 2>;
using FitPair224 = FitConfig<224, 4, 2>;
using FitSingle160 = FitConfig<160, 5, 1>;
using FitSingle192 = FitConfig<192, 5, 1>;
using FitSingle224 = FitConfig<224, 4, 1>;
// The singles between them, in steps of 16 columns: as many stages of 16 + 18 ... 30 KiB
// as fit beside the 20 KiB staged buffer.
using FitSingle144 = FitConfig<144, 6, 1>;
using FitSingle176 = FitConfig<176, 5, 1>;
using FitSingle208 = FitConfig<208, 4, 1>;
using FitSingle240 = FitConfig<240, 4, 1>;
// The narrow fitted widths: 128 x 64 and 128 x 96 tiles in single CTAs, 8 and 7 stages of
// 24 and 28 KiB beside the staged epilogue's 20 KiB. A 96-wide tile stores its last 32
// columns from the registers. Their producer leaves out A's rows past M (producer.cuh,
// load_tile_at), which TMA would otherwise fill with zeros at a cost. Not in clusters:
// such a tile's K step is short (~0.3 us), and a multicast pair's CTAs wait on each
// other's releases every step; lone CTAs ran each K step 15-20% faster and saved ~0.7 us
// per call, and pairs along N that read A from L2 once per four CTAs instead of two were
// no faster (H200, docs/notes/narrow-fitted-widths.md).
template <int kBlockN, int kStages>
using NarrowFitConfig = KernelConfig<KernelSpec{.block_n = kBlockN,
                                                .consumers = 2,
                                                .slabs_per_consumer = 1,
                                                .stages = kStages,
                                                .cluster_ctas = 1,
                                                .tma_store = true,
                                                .store_rounds = 1,
                                                .skip_dead_boxes = true}>;
using FitNarrow64 = NarrowFitConfig<64, 8>;
using FitNarrow96 = NarrowFitConfig<96, 7>;
// The widths between, 7 and 6 stages of 26 and 30 KiB.
using FitNarrow80 = NarrowFitConfig<80, 7>;
using FitNarrow112 = NarrowFitConfig<112, 6>;

// Batch-invariant mode's split weights beyond the decode kernels' range (planner.cpp): the
// narrow 128 x 96 single and the 128 x 128 and 128 x 192 pairs, their consumers summing the
// weight's K slices one after another and adding them in slice order in registers
// (KernelSpec::fold_k_slices). The total doubles the accumulators: 48, 64 or 96 floats per
// thread, which at most 128 x 192 per two warpgroups leaves room for.
// The fitted widths' layout (singles leave A's rows past M out of their loads).
using Sliced96 = FitConfig<96, 7, 1, true>;
using SlicedPair128 = FitConfig<128, 6, 2, true>;
using SlicedPair192 = FitConfig<192, 5, 2, true>;

// sm90-fp8's configurations, one per Fp8Variant (fp8_plan.h): sm90-gemm's tiles with 8-bit
// inputs, whose stages hold 128 values of K per row.
using Fp8WidePair = KernelConfig<KernelSpec{.block_n = 256,
                                            .consumers = 2,
                                            .slabs_per_consumer = 1,
                                            .stages = 4,
                                            .cluster_ctas = 2,
                                            .tma_store = true,
                                            .store_rounds = 2,
                                            .element_bytes = 1}>;
using Fp8NarrowPair = KernelConfig<KernelSpec{.block_n = 128,
                                              .consumers = 2,
                                              .slabs_per_consumer = 1,
                                              .stages = 6,
                                              .cluster_ctas = 2,
                                              .tma_store = true,
                                              .store_rounds = 2,
                                              .element_bytes = 1,
                                              .mixed_fp8 = true}>;
using Fp8BlockPair = KernelConfig<KernelSpec{.block_n = 128,
                                             .consumers = 2,
                                             .slabs_per_consumer = 1,
                                             .stages = 6,
                                             .cluster_ctas = 2,
                                             .tma_store = true,
                                             .store_rounds = 2,
                                             .element_bytes = 1,
                                             .block_scales = true}>;
// 128x192 tiles with block scales: three 64-column store boxes, one per round.
using Fp8BlockWidePair = KernelConfig<KernelSpec{.block_n = 192,
                                                 .consumers = 2,
                                                 .slabs_per_consumer = 1,
                                                 .stages = 5,
                                                 .cluster_ctas = 2,
                                                 .tma_store = true,
                                                 .store_rounds = 3,
                                                 .element_bytes = 1,
                                                 .block_scales = true}>;

// The same tiles and rings in 2-CTA clusters along N (multicasting A), for an odd number of
// 128-row tiles (fp8_plan.h); e4m3 x e4m3 only.
constexpr KernelSpec pairs_along_n(KernelSpec spec) {
  spec.cluster_axis = ClusterAxis::kN;
  spec.mixed_fp8 = false;
  return spec;
}
using Fp8WidePairN = KernelConfig<pairs_along_n(Fp8WidePair::kKernelSpec)>;
using Fp8NarrowPairN = KernelConfig<pairs_along_n(Fp8NarrowPair::kKernelSpec)>;
using Fp8BlockPairN = KernelConfig<pairs_along_n(Fp8BlockPair::kKernelSpec)>;

// The fitted widths with 8-bit inputs: the 16-bit configurations' tiles, rings, stores
// and, in single CTAs, their producer leaving out A's rows past M; e4m3 x e4m3 only.
using Fp8FitPair160 = KernelConfig<with_8bit_inputs(FitPair160::kKernelSpec)>;
using Fp8FitPair192 = KernelConfig<with_8bit_inputs(FitPair192::kKernelSpec)>;
using Fp8FitPair224 = KernelConfig<with_8bit_inputs(FitPair224::kKernelSpec)>;
using Fp8FitSingle160 = KernelConfig<with_8bit_inputs(FitSingle160::kKernelSpec)>;
using Fp8FitSingle192 = KernelConfig<with_8bit_inputs(FitSingle192::kKernelSpec)>;
using Fp8FitSingle224 = KernelConfig<with_8bit_inputs(FitSingle224::kKernelSpec)>;

// Calls f with a value of the configuration type that runs `variant`.
template <class F>
constexpr auto with_variant_config(Sm90Variant variant, F&& f) {
  switch (variant) {
    case Sm90Variant::kWide: return f(Wide{});
    case Sm90Variant::kNarrow: return f(Narrow{});
    case Sm90Variant::kWidePair: return f(WidePair{});
    case Sm90Variant::kWidePairN: return f(WidePairN{});
    case Sm90Variant::kPingPongPair: return f(PingPongPair{});
    case Sm90Variant::kTallStreamK: return f(TallStreamK{});
    case Sm90Variant::kFitPair160: return f(FitPair160{});
    case Sm90Variant::kFitPair192: return f(FitPair192{});
    case Sm90Variant::kFitPair224: return f(FitPair224{});
    case Sm90Variant::kFitSingle160: return f(FitSingle160{});
    case Sm90Variant::kFitSingle192: return f(FitSingle192{});
    case Sm90Variant::kFitSingle224: return f(FitSingle224{});
    case Sm90Variant::kFitNarrow64: return f(FitNarrow64{});
    case Sm90Variant::kFitNarrow96: return f(FitNarrow96{});
    case Sm90Variant::kSliced96: return f(Sliced96{});
    case Sm90Variant::kSlicedPair128: return f(SlicedPair128{});
    case Sm90Variant::kSlicedPair192: return f(SlicedPair192{});
    case Sm90Variant::kFitNarrow80: return f(FitNarrow80{});
    case Sm90Variant::kFitNarrow112: return f(FitNarrow112{});
    case Sm90Variant::kFitSingle144: return f(FitSingle144{});
    case Sm90Variant::kFitSingle176: return f(FitSingle176{});
    case Sm90Variant::kFitSingle208: return f(FitSingle208{});
    case Sm90Variant::kFitSingle240: return f(FitSingle240{});
  }
  return f(WidePair{});
}

// Calls f with a value of the configuration type that runs `variant`: for the 128-, 192-
// and 256-wide tiles (gemm_sm90_fp8.cu instantiates these) ...
template <class F>
constexpr auto with_fp8_tile_config(Fp8Variant variant, F&& f) {
  switch (variant) {
    case Fp8Variant::kNarrowPair: return f(Fp8NarrowPair{});
    case Fp8Variant::kBlockPair: return f(Fp8BlockPair{});
    case Fp8Variant::kWidePairN: return f(Fp8WidePairN{});
    case Fp8Variant::kNarrowPairN: return f(Fp8NarrowPairN{});
    case Fp8Variant::kBlockPairN: return f(Fp8BlockPairN{});
    case Fp8Variant::kBlockWidePair: return f(Fp8BlockWidePair{});
    default: return f(Fp8WidePair{});
  }
}
// ... for the fitted widths (gemm_sm90_fp8_fit.cu) ...
template <class F>
constexpr auto with_fp8_fit_config(Fp8Variant variant, F&& f) {
  switch (variant) {
    case Fp8Variant::kFitPair192: return f(Fp8FitPair192{});
    case Fp8Variant::kFitPair160: return f(Fp8FitPair160{});
    case Fp8Variant::kFitSingle224: return f(Fp8FitSingle224{});
    case Fp8Variant::kFitSingle192: return f(Fp8FitSingle192{});
    case Fp8Variant::kFitSingle160: return f(Fp8FitSingle160{});
    default: return f(Fp8FitPair224{});
  }
}
// ... and for any of them.
template <class F>
constexpr auto with_fp8_variant_config(Fp8Variant variant, F&& f) {
  return fp8_fit_variant(variant) ? with_fp8_fit_config(variant, f) : with_fp8_tile_config(variant, f);
}

// The planner's host-side description of each FP8 configuration (fp8_plan.h: tile,
// cluster, stages) is the configuration's own, checked here at compile time.
constexpr bool fp8_plan_matches_configs() {
  bool all = true;
  for (int i = 0; i < kFp8Variants; ++i) {
    const Fp8Variant v = static_cast<Fp8Variant>(i);
    all = all && with_fp8_variant_config(v, [v](auto config) {
            using C = decltype(config);
            return C::kBlockM == fp8_tile_shape(v).block_m && C::kBlockN == fp8_tile_shape(v).block_n &&
                   C::kClusterM == fp8_cluster_shape(v).m && C::kClusterN == fp8_cluster_shape(v).n &&
                   C::kStages == fp8_stages(v) && C::kBlockScales == fp8_block_variant(v) &&
                   C::kBlockK == kFp8KBlock;
          });
  }
  return all;
}
// kBlockK: split-K cuts K at multiples of kFp8KBlock, so each slice's K tiles are whole
// blocks of the problem's and its block scales line up with them.
static_assert(fp8_plan_matches_configs(),
              "fp8_plan.h's tiles, clusters, stages and K block must be the configurations'");

}  // namespace anvil::detail
