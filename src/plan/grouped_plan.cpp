// The grouped GEMM's tile rule (grouped_plan.h; docs/grouped.md).
#include "plan/grouped_plan.h"

#include <algorithm>
#include <cstdio>

namespace anvil::detail {

GroupedTileShape grouped_tile(GroupedVariant v) {
  switch (v) {
    case GroupedVariant::kWide: return {128, 256};
    case GroupedVariant::kNarrow: return {128, 128};
    case GroupedVariant::kShort: return {64, 128};
  }
  return {128, 256};
}

const char* grouped_variant_name(GroupedVariant v, bool fp8, bool block_scales) {
  if (fp8 && block_scales) {
    switch (v) {
      case GroupedVariant::kNarrow: return "sm90-grouped-fp8-block/128x128";
      case GroupedVariant::kShort: return "sm90-grouped-fp8-block/64x128";
      default: return "sm90-grouped-fp8-block/?";
    }
  }
  if (fp8) {
    switch (v) {
      case GroupedVariant::kWide: return "sm90-grouped-fp8/128x256";
      case GroupedVariant::kNarrow: return "sm90-grouped-fp8/128x128";
      case GroupedVariant::kShort: return "sm90-grouped-fp8/64x128";
    }
    return "sm90-grouped-fp8/?";
  }
  switch (v) {
    case GroupedVariant::kWide: return "sm90-grouped/128x256";
    case GroupedVariant::kNarrow: return "sm90-grouped/128x128";
    case GroupedVariant::kShort: return "sm90-grouped/64x128";
  }
  return "sm90-grouped/?";
}

int64_t grouped_expected_rows(const GroupedGemmDesc& desc) {
  if (desc.expected_rows_per_expert > 0) return desc.expected_rows_per_expert;
  if (desc.layout == GroupedLayout::kMasked) return desc.rows;
  return desc.experts > 0 ? (desc.rows + desc.experts - 1) / desc.experts : 0;
}

int64_t grouped_max_tiles(const GroupedGemmDesc& desc, int block_m, int block_n) {
  const int64_t tiles_n = (desc.n + block_n - 1) / block_n;
  const int64_t row_tiles = desc.layout == GroupedLayout::kMasked
                                ? desc.experts * ((desc.rows + block_m - 1) / block_m)
                                : std::min(desc.rows / block_m + desc.experts, desc.rows);
  return row_tiles * tiles_n;
}

GroupedPlan plan_grouped(const GroupedGemmDesc& desc, const DeviceInfo& device, int forced) {
  GroupedPlan plan;
  // e4m3 runs the same tiles (a stage row is 128 bytes either way) and the same rule: at
  // few rows per expert the weight read bounds both, at many the tile count per SM does.
  plan.fp8 = desc.input == DataType::kE4M3;
  plan.block_scales = plan.fp8 && desc.scales == ScaleMode::kBlock128;
  plan.expected_rows = grouped_expected_rows(desc);
  const int64_t wide_tiles = desc.experts * ((plan.expected_rows + 127) / 128) * ((desc.n + 255) / 256);
  if (forced >= 0 && forced < kGroupedVariants) {
    plan.variant = static_cast<GroupedVariant>(forced);
    std::snprintf(plan.reason, sizeof(plan.reason), "forced");
  } else if (plan.expected_rows <= 64) {
    // Most of a 128-row tile would be padding: half the rows per tile, the same weight
    // stream (the GEMM is bound by reading W at these sizes).
    plan.variant = GroupedVariant::kShort;
    std::snprintf(plan.reason, sizeof(plan.reason), "%lld rows per expert expected: 64-row tiles",
                  static_cast<long long>(plan.expected_rows));
  } else if (wide_tiles >= device.sm_count) {
    plan.variant = GroupedVariant::kWide;
    std::snprintf(plan.reason, sizeof(plan.reason), "~%lld 128x256 tiles fill the %d SMs",
                  static_cast<long long>(wide_tiles), device.sm_count);
  } else {
    // Fewer wide tiles than SMs: half-width tiles put twice as many SMs to work.
    plan.variant = GroupedVariant::kNarrow;
    std::snprintf(plan.reason, sizeof(plan.reason), "~%lld 128x256 tiles leave SMs idle: 128x128",
                  static_cast<long long>(wide_tiles));
  }
  if (plan.block_scales && plan.variant == GroupedVariant::kWide) {
    plan.variant = GroupedVariant::kNarrow;
    std::snprintf(plan.reason, sizeof(plan.reason), "block scales: 128-wide tiles (~%lld 128x256 tiles' worth)",
                  static_cast<long long>(wide_tiles));
  }
  const GroupedTileShape tile = grouped_tile(plan.variant);
  plan.block_m = tile.block_m;
  plan.block_n = tile.block_n;
  plan.tiles_n = static_cast<int>((desc.n + tile.block_n - 1) / tile.block_n);
  plan.max_tiles = grouped_max_tiles(desc, tile.block_m, tile.block_n);
  // One CTA per SM (every configuration takes an SM's shared memory); never more CTAs
  // than tiles any routing can make.
  plan.grid_ctas = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(device.sm_count, plan.max_tiles)));
  return plan;
}

}  // namespace anvil::detail
