// The grouped GEMM's configurations (grouped_kernel.cuh), one per GroupedVariant
// (plan/grouped_plan.h). Single CTAs: a cluster's CTAs would have to work on tiles of the
// same expert to share a multicast operand, which the grouped tile order does not promise.
// The epilogue is the register one (store_tile_clipped), so no TMA-store buffer.
// Host-includable.
#pragma once

#include "kernels/sm90/kernel_config.h"

namespace anvil::detail {

// 128x256, 4 x 48 KiB stages: experts with many rows (prefill).
using GroupedWide = KernelConfig<KernelSpec{.block_n = 256,
                                            .consumers = 2,
                                            .slabs_per_consumer = 1,
                                            .stages = 4,
                                            .cluster_ctas = 1,
                                            .tma_store = false}>;
// 128x128, 6 x 32 KiB stages: twice the tiles of the wide one where those would not fill
// the SMs.
using GroupedNarrow = KernelConfig<KernelSpec{.block_n = 128,
                                              .consumers = 2,
                                              .slabs_per_consumer = 1,
                                              .stages = 6,
                                              .cluster_ctas = 1,
                                              .tma_store = false}>;
// 64x128, one consumer warpgroup, 8 x 24 KiB stages: experts with a few tokens (decode),
// where a 128-row tile would multiply mostly padding; the weight streams through 192 KiB of
// stages per SM.
using GroupedShort = KernelConfig<KernelSpec{.block_n = 128,
                                             .consumers = 1,
                                             .slabs_per_consumer = 1,
                                             .stages = 8,
                                             .cluster_ctas = 1,
                                             .tma_store = false}>;

// The same three with e4m3 operands (kernel_config.h, with_8bit_inputs).
using GroupedWideFp8 = KernelConfig<with_8bit_inputs(GroupedWide::kKernelSpec)>;
using GroupedNarrowFp8 = KernelConfig<with_8bit_inputs(GroupedNarrow::kKernelSpec)>;
using GroupedShortFp8 = KernelConfig<with_8bit_inputs(GroupedShort::kKernelSpec)>;

// DeepSeek-V3 block scales (a B scale covers 128 columns, and the K-block partial sums
// double the accumulators): the 128-wide tiles only, the 128x256 one's experts on 128x128.
constexpr KernelSpec grouped_fp8_block(KernelSpec spec) {
  spec = with_8bit_inputs(spec);
  spec.block_scales = true;
  return spec;
}
using GroupedNarrowFp8Block = KernelConfig<grouped_fp8_block(GroupedNarrow::kKernelSpec)>;
using GroupedShortFp8Block = KernelConfig<grouped_fp8_block(GroupedShort::kKernelSpec)>;

}  // namespace anvil::detail
