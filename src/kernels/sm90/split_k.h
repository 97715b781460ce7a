// Split-K for problems with few output tiles and a long K (e.g. 256 x 512 x 131072: four
// 128 x 256 tiles for 132 SMs). Whole tiles would keep 4 SMs busy; the cluster split of
// the decode kernels reaches at most 16. Here K is cut into `slices` equal pieces that run
// as one strided-batched launch of the production kernel - batch index = slice, the
// operands' batch stride = the slice's K offset - writing fp32 partial tiles into the
// caller's workspace; a second kernel adds the slices in slice order and applies the
// fused epilogue. The order is fixed by (N, K) alone, so results are bitwise reproducible.
//
// The choice is host arithmetic (tested on the CPU): a split is taken where the whole-tile
// plan's estimated time exceeds the split plan's (the slices' waves plus the partials'
// round trip through memory) by a margin.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "anvil/gemm.h"
#include "kernels/sm90/plan.h"
#include "kernels/sm90/row_split.h"

namespace anvil::detail {

struct SplitKPlan {
  int slices = 1;          // 1: no split
  int64_t slice_k = 0;     // K of each slice; slices * slice_k == K
};

// A slice's K offset is a batch stride, which TMA needs in 16-byte multiples: 8 halves.
inline constexpr int64_t kSplitKGranule = 8;
// The shortest slice: below 16 K steps of 64 a tile's fixed cost (prologue, pipeline
// fill, the fp32 partial's store) outweighs its math.
inline constexpr int64_t kSplitKMinSliceK = 1024;
inline constexpr int kSplitKMaxSlices = 64;
// Only where whole tiles leave nearly every SM idle: at most one tile per 16 SMs (8 on an
// H200). Measured on the H200 (docs/notes/split-k.md): with 6 tiles (256 x 576 x 7168,
// 192 x 768 x 98304) the split ran 1.5-2.4x faster than whole tiles; with 16-32 tiles
// and K of 4-14k (255 x 4096 x 4096, 255 x 3584 x 14336) it ran up to 35% slower, the
// slices' fp32 partials and the second launch costing more than the idle SMs did.
inline constexpr double kSplitKMaxTileFill = 1.0 / 16.0;
// The partials' round trip (written once, read once) at the rate a streaming kernel
// reaches, plus the second launch.
inline constexpr double kSplitKBytesPerMicrosecond = 3.3e6;
inline constexpr double kSplitKReduceFixedMicroseconds = 2.5;
// The estimate must promise at least this much to be taken.
inline constexpr double kSplitKMinSaving = 0.10;

inline size_t split_k_workspace_bytes(const SplitKPlan& plan, int64_t m, int64_t n) {
  return plan.slices <= 1 ? 0 : static_cast<size_t>(plan.slices) * static_cast<size_t>(m) * static_cast<size_t>(n) * sizeof(float);
}

// The weight and activations must be read once whatever the plan: the floor under both.
inline double operand_stream_us(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(k) * static_cast<double>(m + n) / kSplitKBytesPerMicrosecond;
}

inline double split_k_estimated_us(int64_t m, int64_t n, int64_t k, int slices, int sm_count) {
  Sm90Problem slice;
  slice.m = m;
  slice.n = n;
  slice.k = k / slices;
  slice.batch = slices;
  slice.store = DStore::kRowMajor;  // fp32 partials
  slice.stream_k_allowed = false;
  const double gemm = std::max(sm90_estimated_us(slice, sm_count), operand_stream_us(m, n, k));
  const double partials = 2.0 * slices * static_cast<double>(m) * static_cast<double>(n) * sizeof(float);
  return gemm + partials / kSplitKBytesPerMicrosecond + kSplitKReduceFixedMicroseconds;
}

// The split for a plain-batch (batch == 1) problem, or slices = 1. It depends on M: the
// batch-invariant mode must not use it.
inline SplitKPlan choose_split_k(int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count) {
  SplitKPlan none;
  if (batch != 1 || sm_count <= 0 || k < 2 * kSplitKMinSliceK || k % kSplitKGranule != 0) return none;
  // Counted in the widest tiles (128 x 256), whichever the whole-tile plan would take.
  const int64_t wide_tiles = ceil_div(m, 128) * ceil_div(n, 256);
  if (static_cast<double>(wide_tiles) > kSplitKMaxTileFill * sm_count) return none;
  Sm90Problem unsplit;
  unsplit.m = m;
  unsplit.n = n;
  unsplit.k = k;
  unsplit.stream_k_allowed = false;
  const double whole_us = std::max(sm90_estimated_us(unsplit, sm_count), operand_stream_us(m, n, k));
  SplitKPlan best = none;
  double best_us = whole_us * (1.0 - kSplitKMinSaving);
  for (int s = 2; s <= kSplitKMaxSlices; ++s) {
    if (k % (s * kSplitKGranule) != 0 || k / s < kSplitKMinSliceK) continue;
    const double us = split_k_estimated_us(m, n, k, s, sm_count);
    if (us < best_us) best_us = us, best = SplitKPlan{s, k / s};
  }
  return best;
}

// The slices as one strided batch of the production kernel: slice s reads A's and B's
// columns [s Kc, (s + 1) Kc) through a batch stride of Kc elements (TMA allows batches that
// overlap in memory) and writes its fp32 partial, M x N row-major, slice after slice.
inline GemmDesc split_k_slices_desc(const GemmDesc& desc, int slices, int64_t slice_k) {
  GemmDesc s = desc;
  s.k = slice_k;
  s.batch = slices;
  s.a.batch_stride = slice_k;
  s.b.batch_stride = slice_k;
  s.d = MatrixLayout{DataType::kF32, Order::kRowMajor, desc.n, desc.m * desc.n};
  s.c = s.d;
  s.alpha = 1.0f;
  s.beta = 0.0f;
  s.epilogue = EpilogueDesc{};
  s.kernel = nullptr;
  return s;
}

// The slices' arguments: the same operands (and FP8 scales), D the workspace's partials;
// no C, bias or workspace of their own (the sum applies the epilogue).
inline GemmArgs split_k_slices_args(const GemmArgs& args) {
  GemmArgs s = args;
  s.d = args.workspace;
  s.c = nullptr;
  s.bias = nullptr;
  s.workspace = nullptr;
  s.workspace_bytes = 0;
  return s;
}

}  // namespace anvil::detail
