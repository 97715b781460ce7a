// Whether sm90-gemm hands the last few rows of a problem to the decode kernel: host
// arithmetic, tested on the CPU.
//
// sm90-gemm's time follows its waves of whole tiles, not its work. A few rows past a
// multiple of 256 (M = 4097: one row) add a row of 2-CTA clusters, and with it a wave or
// a slower tile configuration: 4097^3 paid 9 turns of ping-pong tiles where 4096 rows fill
// 8 exactly. The decode kernel takes up to 64 rows at the cost of streaming the weight
// once (swap-AB, no padding of M), so the rows past the last multiple of 256 go there
// when that is cheaper than what they add to sm90-gemm.
#pragma once

#include <cstdint>

#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/plan.h"

namespace anvil::detail {

// Rows the decode kernel may take: its bandwidth-bound token tiles (decode_plan.h).
inline constexpr int64_t kRowSplitMaxTailRows = 64;
// sm90-gemm's rows come in 256-row cluster rows (two 128-row tiles per 2-CTA cluster).
inline constexpr int64_t kRowSplitGranule = 256;

// Time estimates in microseconds, H200 (bench/results, 2026-11-29/30):
//   - the 2-CTA multicast pairs take 0.85 us per 64-wide K step of a 128 x 256 tile
//     (the stream-K fit in plan.h), and estimated_cost's units are tile area / relative speed;
//   - the decode kernel streams a weight at ~3.3 TB/s (M = 64 x 8192 x 8192: 40 us for
//     134 MB), plus a few microseconds of launch and fixed cost.
inline constexpr double kPairKStepMicroseconds = 0.85;
inline constexpr double kDecodeBytesPerMicrosecond = 3.3e6;
inline constexpr double kDecodeFixedMicroseconds = 3.0;
// The estimates are a few percent off on measured shapes (docs/worklog.md, session 10), so
// a split must promise at least this fraction of the whole problem's time.
inline constexpr double kRowSplitMinSaving = 0.03;

// sm90-gemm's estimated time for a problem as it would choose its configuration.
inline double sm90_estimated_us(const Sm90Problem& p, int sm_count) {
  const Sm90Variant v = choose_sm90_variant(p, sm_count);
  const double units = v == Sm90Variant::kTallStreamK ? stream_k_cost(p.m, p.n, p.k, p.batch, sm_count)
                                                      : variant_cost(v, p.m, p.n, p.batch, sm_count);
  const double k_steps = static_cast<double>(ceil_div(p.k, 64));
  return units / (128.0 * 256.0) * k_steps * kPairKStepMicroseconds;
}

// The decode kernel's estimated time for `rows` rows: the weight (N x K halves per batch)
// read once, plus the rows' own inputs and outputs.
inline double decode_estimated_us(int64_t rows, int64_t n, int64_t k, int64_t batch) {
  const double bytes = 2.0 * static_cast<double>(batch) * (static_cast<double>(n) * k + static_cast<double>(rows) * (k + n));
  return bytes / kDecodeBytesPerMicrosecond + kDecodeFixedMicroseconds;
}

// The rows sm90-gemm keeps (a multiple of 256), or all of M when nothing is split off.
// Eligible: not batch-invariant (a row's kernel would then depend on M), a tail of 1-64
// rows past at least one cluster row, and, by the estimates, cheaper split than whole.
// override_mode (PlanOverrides::row_split, for measurement): 0 never splits, 1 splits
// every eligible problem whatever the estimates say.
inline int64_t row_split_main_rows(const Sm90Problem& p, bool allowed, int sm_count, int override_mode = -1) {
  const int64_t tail = p.m % kRowSplitGranule;
  if (!allowed || tail == 0 || tail > kRowSplitMaxTailRows || p.m < kRowSplitGranule + tail) return p.m;
  if (override_mode == 0) return p.m;
  if (override_mode == 1) return p.m - tail;
  Sm90Problem main = p;
  main.m = p.m - tail;
  const double whole = sm90_estimated_us(p, sm_count);
  const double split = sm90_estimated_us(main, sm_count) + decode_estimated_us(tail, p.n, p.k, p.batch);
  return split < (1.0 - kRowSplitMinSaving) * whole ? main.m : p.m;
}

}  // namespace anvil::detail
