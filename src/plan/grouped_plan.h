// The grouped GEMM's plan: which tile, and how many persistent CTAs. Pure host arithmetic
// (no CUDA call), tested on the CPU. The row count of each expert lives on the device, so
// the plan rests on the description alone: the rows an expert is expected to have, and
// bounds on the number of tiles.
#pragma once

#include <cstdint>

#include "anvil/grouped.h"
#include "plan/planner.h"

namespace anvil::detail {

enum class GroupedVariant : int { kWide = 0, kNarrow, kShort };  // grouped_configs.h
inline constexpr int kGroupedVariants = 3;

struct GroupedTileShape {
  int block_m, block_n;
};
GroupedTileShape grouped_tile(GroupedVariant v);
// "sm90-grouped/128x256", ...; with fp8, the e4m3 configuration's "sm90-grouped-fp8/128x256";
// with block scales "sm90-grouped-fp8-block/128x128" (128-wide tiles only).
const char* grouped_variant_name(GroupedVariant v, bool fp8 = false, bool block_scales = false);

struct GroupedPlan {
  GroupedVariant variant = GroupedVariant::kWide;
  bool fp8 = false;  // e4m3 inputs: the 8-bit configuration of the variant (same tile)
  // DeepSeek-V3 block scales: the block-scaled 8-bit configuration, never the 128x256 tile
  // (a B scale covers 128 columns, and the partial sums double the accumulators).
  bool block_scales = false;
  int block_m = 128, block_n = 256;
  int tiles_n = 0;
  int64_t max_tiles = 0;   // most tiles any routing can make
  int grid_ctas = 0;       // persistent CTAs: min(SMs, max_tiles), at least 1
  int64_t expected_rows = 0;
  char reason[kReasonChars] = {};
};

// expected rows per expert: the hint, or rows / E (contiguous), or max_rows (masked).
int64_t grouped_expected_rows(const GroupedGemmDesc& desc);
// The most tiles a routing can make with block_m x block_n tiles: contiguous, every expert
// may end in a partial tile (at most rows / block_m + E row tiles, and no more than rows);
// masked, every expert full.
int64_t grouped_max_tiles(const GroupedGemmDesc& desc, int block_m, int block_n);

// forced: a GroupedVariant to take, or -1 for the rule's choice.
GroupedPlan plan_grouped(const GroupedGemmDesc& desc, const DeviceInfo& device, int forced = -1);

}  // namespace anvil::detail
