// The decode kernel's shape choices, as host arithmetic the CPU tests exercise.
//
// Swap-AB puts the weight rows on wgmma's M side (128 per CTA) and the tokens on its N
// side, so the token tile is the smallest wgmma width that covers M. With few tokens the
// output has few tiles (N / 128 of them), so K is split across the CTAs of a cluster and
// the partial sums are added through distributed shared memory in a fixed order.
#pragma once

#include <cstdint>

#include "anvil/gemm.h"
#include "kernels/sm90/plan.h"

namespace anvil::detail {

// Token-tile widths the decode kernel is instantiated for (wgmma N values), and how each
// is planned. Up to 64 tokens the kernel streams weights, two CTAs per SM, and shares DRAM:
// a split is scored by its total stream (decode_split_cost). 96 and 128 tokens run one CTA
// per SM and are still memory-bound over the GPU (a k-tile does as many FLOPs per weight
// byte as it has tokens, under the H200's ridge of ~232), but not per SM: one such CTA
// streams little faster than its share - ~40 GB/s against 32 - with its tensor pipe 81%
// busy (ncu, 9216 x 8192 unsplit at 128 tokens: 72 CTAs, 3.2 TB/s) - so a thin second
// wave costs nearly a whole one and the split is the most that fills one wave
// (choose_single_wave_split). Measured on 80-128 tokens x twelve widths x K = 8192 against
// every split (H200, docs/notes/decode-split-choice.md; fitted on six widths, checked on six): that
// rule picks the fastest on all 44 shapes whose tiles fit one wave, where the whole-waves
// score below picked 3-8 splits over 2-7 waves, up to 1.8x slower. 256 tokens are
// compute-bound per CTA, and a partial wave costs a whole one.
inline constexpr int kDecodeTokenTiles[] = {8, 16, 32, 64, 96, 128, 256};
constexpr bool decode_bandwidth_bound(int token_tile) { return token_tile <= 64; }
constexpr bool decode_plans_single_wave(int token_tile) { return token_tile > 64 && token_tile <= 128; }
inline constexpr int kDecodeMaxSplit = 8;  // portable cluster size

// Which kernel takes a K-major problem with m tokens (rows of A), from the M sweeps of
// 2026-11-29 (docs/decode.md). Up to 64 tokens the decode kernel streams the weight faster
// than sm90-gemm's 128-row tiles can (M = 64: 40 us against 65 us on 8192 x 8192). At
// 65-128 tokens it wins where its own tiles fit in one wave (decode_tiles_fit_one_wave) or
// where sm90-gemm's tiles would leave SMs idle (M = 128 x 8192, 64 tiles: 46-48 against 53
// us), and loses where sm90-gemm's fill the GPU and its own do not (M = 128 x 28672: 159
// against 129 us). From 129 tokens sm90-gemm is faster even when it under-fills:
// the decode kernel's compute-bound configurations run a k-tile ~1.4x slower than
// sm90-gemm's (M = 256 x 10240: 122 against 105-109 us; M = 256 x 8192: 67 against 59).
inline constexpr int64_t kDecodeAlwaysTokens = 64;
inline constexpr int64_t kDecodeMaxTokens = 128;
// sm90-gemm's chosen configuration must keep at least this fraction of the SM slots of
// its waves busy to be preferred (128 x 8192: 64 narrow tiles on 132 SMs, 0.48, goes to
// decode; 128 x 28672: 112 wide tiles, 0.85, stays).
inline constexpr double kSm90MinWaveEfficiency = 0.75;

// Which decode kernel: the load-path one (sm90-decode-ldg) streams the weight faster than
// the TMA one (sm90-decode) up to 8 tokens everywhere measured (H200, docs/notes/
// decode-reduction-tail.md: 1-8 x 8192 x 8192 33.4-34.6 us against 34.2-35.0; 1-8 x 28672 x
// 8192 110.2-112.8 against 112.2-115.9). From 9 tokens the TMA kernel is as fast or faster
// with its pull-based reduction tail: 12-16 x 8192 x 8192 within 0.5 us
// either way across runs, 16 x 10240 x 8192 45.6 against 49.3, 12-16 x 28672 x 8192
// 116.5-117.3 against 120.1-120.9.
// Batch-invariant mode keeps sm90-decode, as one kernel must serve every M.
inline constexpr int64_t kDecodeLdgMaxTokens = 8;

inline bool prefers_decode_ldg(int64_t m) { return m <= kDecodeLdgMaxTokens; }

// The load-path kernels split each CTA's K over four warpgroups and add their partials in
// shared memory: a fixed cost per CTA that a short K does not amortize. Measured on the
// sweep's tuning half (H200, docs/notes/planner-tuning.md): at K = 512-1600 the
// TMA-fed kernels streamed the same weights 6-20% faster.
inline constexpr int64_t kDecodeLdgMinK = 2048;
// sm90-decode-ldg runs one CTA per SM with a fixed number of bytes in flight, so a partly
// filled wave costs nearly a whole one; the TMA-fed kernels, two CTAs per SM at up to 64
// tokens, share DRAM across whatever runs. Below this fill of its waves' SM slots the
// load path lost (same measurements: 55-75% full, 5-12% slower; 82-85%, level to 2% faster).
inline constexpr double kDecodeLdgMinWaveFill = 0.8;

// Whether a weight of n features (x batch) in 64-row tiles fills one wave of the GPU by
// itself, 90-100% of the SMs: where the one-CTA-per-SM 64-row kernels, sm90-decode-r64 at
// 17-64 tokens and sm90-decode-ldg-r64, run unsplit and leave few SMs idle.
inline constexpr double kDecodeRows64MinFill = 0.9;

inline int64_t decode_rows64_tiles(int64_t n, int64_t batch) { return (n + 63) / 64 * batch; }

inline bool decode_rows64_fill_one_wave(int64_t n, int64_t batch, int sm_count) {
  const int64_t tiles = decode_rows64_tiles(n, batch);
  return tiles <= sm_count && static_cast<double>(tiles) >= kDecodeRows64MinFill * sm_count;
}

// Where sm90-decode-r64 (64 weight rows per CTA, no K split) replaces sm90-decode.
// 17-64 tokens (its 32- and 64-token tiles, one CTA per SM) on weights whose 64-row tiles
// fill one wave. Measured there (8192 x 8192, H200, docs/decode.md):
// 32 tokens 35.6 against 36.2 us, 64 tokens 37.75 against 38.4. Where its tiles make
// more than one wave it is slower (10240 features: 51.2 against 46.1 us at 32 tokens, 61.4
// against 46.5 at 64; 28672: 2-13% slower), and with fewer tiles it would need the split
// it was built to avoid, which has not been measured.
// 9-16 tokens (its 16-token tile, two CTAs per SM) where all its tiles are resident at
// once - up to two per SM - and fill at least 84% of the SMs. Measured there (in one
// process against sm90-decode): 16 x 7168 / 8192 / 10240 x 8192 (112, 128, 160
// tiles) 0.6-1.0 us faster (decode16-qkv 44.6 -> 43.7 us); 16 x 28672 (448 tiles, more
// than a wave) 115.7 -> 120.5, slower. Past one tile per SM its time moves between
// processes (decode16-qkv 43.8-45.1 us in bf16 against sm90-decode's 44.5-44.9): the block
// scheduler doubles up the first and last GPCs, whose CTAs finish 1.5-1.9 us later.
inline constexpr int64_t kDecodeRows64MinTokens = 9;
inline constexpr int64_t kDecodeRows64OnePerSmMinTokens = 17;
inline constexpr double kDecodeRows64TwoPerSmMinFill = 0.84;

inline bool prefers_decode_r64(int64_t m, int64_t n, int64_t batch, int sm_count) {
  if (m < kDecodeRows64MinTokens || m > kDecodeAlwaysTokens) return false;
  if (m >= kDecodeRows64OnePerSmMinTokens) return decode_rows64_fill_one_wave(n, batch, sm_count);
  const int64_t tiles = decode_rows64_tiles(n, batch);
  return tiles <= 2 * int64_t{sm_count} && static_cast<double>(tiles) >= kDecodeRows64TwoPerSmMinFill * sm_count;
}

// Where sm90-decode-ldg-r64 (the load-path kernel with 64-row tiles, no K split) replaces
// sm90-decode-ldg (1-8 tokens) and sm90-decode-r64 (9-24): on weights whose 64-row tiles
// fill one wave, up to K = 16384. The 128-row tiles of such a weight fill half the GPU and
// take a K split across a cluster, whose tail the 64-row tiles do without; but they stream
// a little slower. Measured in one process (8192 features, H200, docs/decode.md):
// K = 8192 0.24-0.46 us faster at 1-8 tokens (1 token: 33.15 against 33.45
// us), K = 28672 0.1-0.3 us slower. As a fixed saving less a cost growing with K, the two
// cross near K = 16K. At 9-24 tokens against sm90-decode-r64's TMA-fed tiles (in
// alternating processes): 9-20 x 8192 x 8192 0.6-0.9 us faster, 24 tokens 0.2-0.4; at 32
// tokens (forced, one process) level or slower.
inline constexpr int64_t kDecodeLdgRows64MaxK = 16384;
inline constexpr int64_t kDecodeLdgRows64MaxTokens = 24;

inline bool prefers_decode_ldg_r64(int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count) {
  return m <= kDecodeLdgRows64MaxTokens && k <= kDecodeLdgRows64MaxK && decode_rows64_fill_one_wave(n, batch, sm_count);
}

// Whether the decode kernel's 128-row tiles fit in one wave, one CTA per SM. At 65-128
// tokens it then runs them in one wave with the most splits that fill it
// (decode_plans_single_wave), which measured faster than sm90-gemm or level with it
// whatever sm90-gemm's tiles would do: on 4096-14336 x 8192 at 65-128 tokens
// (docs/notes/decode-split-choice.md) up to 26% faster
// (13312: 57.3 against 72.2 us at 80 tokens; 14336: 63.5 against 82.7 at 65), level at
// 112-128 tokens on 9216-14336 (12288: sm90-gemm 3-8% faster than forced splits run in
// another process, 2.5% slower in the same one). A rule asking for a fill of 80% would
// send 13312 (79%) to sm90-gemm. With more tiles than SMs (17408 features:
// 136) sm90-gemm was 15-25% faster.
inline bool decode_tiles_fit_one_wave(int64_t n, int64_t batch, int sm_count) {
  return (n + 127) / 128 * batch <= sm_count;
}

// 129-256 tokens on a narrow weight with a long K: the weight's 128-row tiles cover at
// most a quarter of the SMs, so sm90-gemm either leaves SMs idle or spreads K by stream-K,
// paying its fixup (a parked fp32 tile read back, ~13 K steps per call). The decode
// kernel's 256-token tiles split K across a cluster instead, reducing through distributed
// shared memory, and fill the GPU from 9 tiles up (8 splits each). Measured on the sweep's
// tuning half (H200, docs/notes/planner-tuning.md): 255 x 3584 x 14336 45.5 against 55.6
// us, 256 x 2048 x 32768 63.4 against 80.9, 255 x 4096 x 11008 47.6 against 50.2; at
// K = 4096 the two were level. Fewer tiles than 9 take sm90-gemm's split-K.
inline constexpr int64_t kDecodeWideTokens = 256;
inline constexpr int64_t kDecodeWideMinK = 8192;
inline constexpr int64_t kDecodeWideMinTiles = 9;
inline bool prefers_wide_decode(int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count) {
  const int64_t tiles = (n + 127) / 128 * batch;
  return m > kDecodeMaxTokens && m <= kDecodeWideTokens && k >= kDecodeWideMinK && tiles >= kDecodeWideMinTiles &&
         4 * tiles <= sm_count;
}

// Whether sm90-gemm's chosen configuration keeps at least kSm90MinWaveEfficiency of its
// waves' SM slots busy.
inline bool sm90_fills_its_waves(int64_t m, int64_t n, int64_t batch, int sm_count) {
  const Sm90Variant variant = choose_sm90_variant(m, n, batch, sm_count);
  return variant_wave_plan(variant, m, n, batch, sm_count).efficiency >= kSm90MinWaveEfficiency;
}

inline bool prefers_decode(int64_t m, int64_t n, int64_t batch, int sm_count) {
  if (m <= kDecodeAlwaysTokens) return true;
  if (m > kDecodeMaxTokens) return false;
  if (decode_tiles_fit_one_wave(n, batch, sm_count)) return true;
  return !sm90_fills_its_waves(m, n, batch, sm_count);
}

// The narrowest instantiated token tile that holds m tokens (m > 256 uses several 256-wide
// tiles).
constexpr int decode_token_tile(int64_t m) {
  for (int t : kDecodeTokenTiles) {
    if (m <= t) return t;
  }
  return 256;
}

// Fixed cost of one CTA, in k-tiles of streaming: barrier setup, the pipeline's first
// round trip to DRAM, the cluster reduction and the epilogue. About two k-tiles on the
// H200 (a 16 KiB weight tile per CTA takes ~1 us when every SM streams at its share of
// 4.26 TB/s; the first TMA round trip is ~1-2 us).
inline constexpr double kDecodeCtaOverheadTiles = 2;

// How much faster than its fair share of DRAM bandwidth one CTA can stream when few CTAs
// run: its ~100 KiB ring in flight over ~1 us of latency is ~100 GB/s, against a fair
// share of 4.26 TB/s / 264 slots = 16 GB/s. Capped lower than that ratio (6x) because the
// first and last stages do not overlap, and lower still for wider token tiles, whose CTAs
// also read more of X and multiply more per k-tile. Measured on 80 tiles of one split
// (16-64 x 10240 x 8192, H200, docs/notes/decode-split-choice.md): 45.5 us at 16 tokens
// (one CTA streaming ~2.9x its fair share, faster than two splits' 47.6), 48.3 at 32 and
// 53.8 at 64 (two splits faster: 46.0, 47.0). 4 and 3 put the model's crossover between.
inline constexpr double kDecodeCtaBandwidthHeadroom = 3;
inline constexpr double kDecodeNarrowCtaBandwidthHeadroom = 4;  // up to 16 tokens
constexpr double decode_cta_headroom(int token_tile) {
  return token_tile <= 16 ? kDecodeNarrowCtaBandwidthHeadroom : kDecodeCtaBandwidthHeadroom;
}

struct DecodeSplit {
  int splits = 1;          // CTAs per cluster, each summing 1/splits of K
  int64_t ctas = 0;        // grid size
  int64_t waves = 0;       // grid / CTAs that fit on the GPU at once, rounded up
  int64_t k_tiles_per_cta = 0;
  double cost = 0;         // in k-tile times of one CTA at its fair share: lower is faster
};

// Two regimes. Bandwidth-bound (few tokens): DRAM is the shared limit, so time is the
// total streamed over all resident CTAs - partial waves cost only their share - unless
// so few CTAs run that each would have to stream faster than it can. Compute-bound (256
// tokens, one CTA per SM): each CTA is limited by its SM's tensor cores, so a partial
// wave costs a whole one.
inline DecodeSplit decode_split_cost(int64_t output_tiles, int64_t k_tiles, int splits, int64_t resident_ctas,
                                     bool bandwidth_bound, double headroom = kDecodeCtaBandwidthHeadroom) {
  DecodeSplit s;
  s.splits = splits;
  s.ctas = output_tiles * splits;
  const int64_t slots = resident_ctas > 0 ? resident_ctas : 1;
  s.waves = (s.ctas + slots - 1) / slots;
  s.k_tiles_per_cta = (k_tiles + splits - 1) / splits;
  const double per_cta = static_cast<double>(s.k_tiles_per_cta) + kDecodeCtaOverheadTiles;
  if (bandwidth_bound) {
    const double shared = static_cast<double>(s.ctas) * per_cta / static_cast<double>(slots);
    const double alone = static_cast<double>(s.k_tiles_per_cta) / headroom + kDecodeCtaOverheadTiles;
    s.cost = shared > alone ? shared : alone;
  } else {
    s.cost = static_cast<double>(s.waves) * per_cta;
  }
  return s;
}

// The split of K (1..8, never more than there are k-tiles) with the lowest cost.
// resident_ctas(s) is how many CTAs of the kernel fit on the GPU at once when clusters are
// s CTAs wide (from the occupancy API on the device; a function in the tests). Ties go
// to fewer splits: less reduction traffic.
template <class ResidentCtas>
DecodeSplit choose_decode_split(int64_t output_tiles, int64_t k_tiles, bool bandwidth_bound,
                                ResidentCtas resident_ctas, double headroom = kDecodeCtaBandwidthHeadroom) {
  DecodeSplit best = decode_split_cost(output_tiles, k_tiles, 1, resident_ctas(1), bandwidth_bound, headroom);
  for (int s = 2; s <= kDecodeMaxSplit && s <= k_tiles; ++s) {
    const DecodeSplit candidate =
        decode_split_cost(output_tiles, k_tiles, s, resident_ctas(s), bandwidth_bound, headroom);
    if (candidate.cost < best.cost - 1e-9) best = candidate;
  }
  return best;
}

// The split for a kernel that runs one CTA per SM with a fixed number of bytes in flight
// (sm90-decode-ldg): such a CTA cannot stream much faster than its fair share when others
// are idle, so a second, partial wave costs nearly a whole one. Measured (docs/decode.md):
// 1 x 8192 x 8192, 64 tiles: 2 splits 34.0 us, 1 split 40.1, 3 splits 40.1;
// 16 x 10240 x 8192, 80 tiles: 1 split 46.3 us, 2 splits 60.8. So: the most splits that
// still fit in one wave, at least 1 (more tiles than SMs: waves are unavoidable).
template <class ResidentCtas>
DecodeSplit choose_single_wave_split(int64_t output_tiles, int64_t k_tiles, ResidentCtas resident_ctas) {
  int splits = 1;
  for (int s = 2; s <= kDecodeMaxSplit && s <= k_tiles; ++s) {
    if (output_tiles * s <= resident_ctas(s)) splits = s;
  }
  return decode_split_cost(output_tiles, k_tiles, splits, resident_ctas(splits), true);
}

// Where the 64-row tiles do not fill a wave unsplit (1-8 tokens): sm90-decode-ldg-r64
// with a split of at most two still beats sm90-decode-ldg where its single-wave plan makes
// at least as many CTAs as the 128-row tiles' plan, and at least 72% of the SMs. Both are
// the load path streaming the same bytes, one CTA per SM; the 64-row tiles need half the
// split for the same CTAs, so less of the split's tail, but a lone CTA streams a little
// slower (four warpgroups on a quarter of K each). Measured (1, 4 and 8 tokens x 2048-7168
// features x K = 4096 and 8192, H200, docs/decode.md): 1-5% faster where this
// holds - 3072-4097 features (96-130 CTAs at two splits against 96-99 at three to four)
// and 6144-7168 (96-112 CTAs each, unsplit against two) - and 0-17% slower where it does
// not: 2048 (three splits), 2560 (80 CTAs against 100), 4608 (72 against 108), 5120-5632
// (80-88 CTAs each). resident_ctas(s): CTAs of the load-path kernels that fit at once in
// clusters of s (the occupancy API's, from the device: 132 132 117 120 110 102 105 120 on
// the H200 for s = 1..8).
inline constexpr double kDecodeLdgRows64SplitMinFill = 0.72;
inline constexpr int kDecodeLdgRows64MaxSplit = 2;

template <class ResidentCtas>
bool prefers_decode_ldg_r64_split(int64_t m, int64_t n, int64_t k, int64_t batch, int sm_count,
                                  ResidentCtas resident_ctas) {
  if (m > kDecodeLdgMaxTokens || k > kDecodeLdgRows64MaxK) return false;
  const int64_t k_tiles = (k + 63) / 64;  // the plans' split bound (plan_decode's k_block)
  const DecodeSplit rows64 = choose_single_wave_split(decode_rows64_tiles(n, batch), k_tiles, resident_ctas);
  const DecodeSplit rows128 = choose_single_wave_split((n + 127) / 128 * batch, k_tiles, resident_ctas);
  return rows64.waves == 1 && rows64.splits <= kDecodeLdgRows64MaxSplit && rows64.ctas >= rows128.ctas &&
         static_cast<double>(rows64.ctas) >= kDecodeLdgRows64SplitMinFill * sm_count;
}

// The first token row of a token tile's X boxes (decode_kernel.cuh, x_rows_begin): the
// tile's own, except that a last tile running past M is moved back to end at M where M
// holds a whole tile - TMA's zero-filled rows past the tensor cost more than live ones
// (docs/notes/token-tiles-beyond-128.md). The moved tile finishes only its own rows.
ANVIL_HOST_DEVICE constexpr int64_t moved_token_rows_begin(int64_t m, int64_t token0, int token_tile) {
  const int64_t last = m - token_tile;
  return token0 > last && last >= 0 ? last : token0;
}

// The load-path kernels' K partition (decode_ldg_kernel.cuh): part `part` of `parts` - the
// warpgroups of subslice h in CTA rank r are part r x subslices + h - runs K steps
// [begin, end) of `steps`. Parts differ by at most one step, and the most any runs is the
// host's `most_steps`, from which a warpgroup with fewer works out how many warpgroup
// barriers it still passes.
struct KStepRange {
  int begin, end;
};
ANVIL_HOST_DEVICE constexpr KStepRange k_step_range(int part, int parts, int steps) {
  return {part * steps / parts, (part + 1) * steps / parts};  // < 2^28: steps < 2^24, parts <= 16
}
ANVIL_HOST_DEVICE constexpr int most_k_steps(int parts, int steps) { return (steps + parts - 1) / parts; }

// Batch-invariant mode's K split (GemmDesc::batch_invariant; planner.cpp): fixed by the
// weight (N, K) and the batch count, never by M, so that a row's K is cut at the same
// places and its slices added in the same order whatever M is. Every kernel the mode runs
// with a split cuts K there, in 64-wide k-tiles: sm90-decode's cluster (rank r sums the
// k-tiles [r k / s, (r + 1) k / s), the partials added in rank order) and, beyond 128
// tokens, sm90-gemm's folded-slice configurations (each CTA sums the same slices in turn
// and adds them in slice order, in registers: KernelSpec::fold_k_slices).
//
// Only weights of so few 128-row tiles that even the widest cluster split fits one wave
// (tiles x 8 <= SMs: at most 2048 features on 132 SMs) split: unsplit, they keep at most an
// eighth of the SMs busy at 1-128 tokens (64 x 512 x 131072 ran 0.12x cuBLAS, 256 x 1024 x
// 131072 0.15x). Wider weights keep 17 or more SMs busy unsplit, and their large-M tiles
// (128 x 256, whose accumulators leave no room for a second set) cannot fold slices. The
// split is the most whose 128-token tiles fit one wave (one CTA per SM), as normal mode
// plans 96-128 tokens (choose_single_wave_split), in slices of at least
// kBatchInvariantMinSliceKTiles k-tiles: the folded configurations drain their wgmma
// pipeline once per slice (docs/notes/batch-invariant-split.md).
inline constexpr int64_t kBatchInvariantMinSliceKTiles = 8;
inline constexpr int kBatchInvariantKTile = 64;

// Whether a kernel whose stages hold k_block of K (a multiple of the 64-wide k-tile) cuts
// K in `splits` at the weight's slices when it splits its own k_block-wide tiles as the
// decode kernels do (rank r: [r t / s, (r + 1) t / s)): every cut at the same element,
// and K a whole number of its stages, so that no stage sums zero-filled K the 64-wide
// kernels do not (an extra +0 could turn a -0 sum into +0). Then its cluster adds the same
// slices in the same order as sm90-decode's, and a row's bits do not depend on which runs.
constexpr bool split_cuts_match_slices(int64_t k, int splits, int k_block) {
  if (k_block == kBatchInvariantKTile) return true;
  if (k_block % kBatchInvariantKTile != 0 || k % k_block != 0) return false;
  const int64_t tiles = k / kBatchInvariantKTile, blocks = k / k_block;
  for (int r = 1; r < splits; ++r) {
    if (r * tiles / splits * kBatchInvariantKTile != r * blocks / splits * k_block) return false;
  }
  return true;
}

// resident_128_token_ctas(s): sm90-decode's 128-token CTAs that fit at once in clusters
// of s.
template <class ResidentCtas>
int batch_invariant_split(int64_t n, int64_t k, int64_t batch, int sm_count, ResidentCtas resident_128_token_ctas) {
  const int64_t feature_tiles = (n + 127) / 128 * batch;
  if (feature_tiles * kDecodeMaxSplit > sm_count) return 1;
  const int64_t k_tiles = (k + kBatchInvariantKTile - 1) / kBatchInvariantKTile;
  int splits = 1;
  for (int s = 2; s <= kDecodeMaxSplit; ++s) {
    if (k_tiles < s * kBatchInvariantMinSliceKTiles) continue;
    if (feature_tiles * s <= resident_128_token_ctas(s)) splits = s;
  }
  return splits;
}

// The grid of one decode launch, in the units both decode kernels share: 128 weight rows
// per feature tile, 64-wide k-tiles.
struct DecodeLaunchPlan {
  int k_slices = 1;  // folded configurations: the weight's K slices, summed in turn in each CTA
  int token_tile = 8;
  int batch = 1;
  int token_tiles = 1;
  int feature_tiles = 1;
  int k_tiles = 1;
  DecodeSplit split;
};

// resident_ctas(token_tile, splits): CTAs of the kernel that fit on the GPU at once in
// clusters of `splits`. single_wave: the kernel runs one CTA per SM and
// picks its split with choose_single_wave_split for every token tile; else the tile
// decides (decode_plans_single_wave, decode_bandwidth_bound).
// tile_rows and k_block: weight rows per CTA and K per stage of the kernel (128 and 64
// for both decode kernels; 64 and 256 for sm90-decode-r64); the split is chosen in those
// k-tiles, and never exceeds their count.
// forced_splits (1..8, at most the k-tiles; PlanOverrides::decode_splits) replaces the
// choice, for measurement against every alternative.
template <class ResidentCtas>
DecodeLaunchPlan plan_decode(const GemmDesc& desc, int token_tile, ResidentCtas resident_ctas,
                             bool single_wave = false, int tile_rows = 128, int k_block = 64, int forced_splits = 0) {
  DecodeLaunchPlan plan;
  plan.token_tile = token_tile;
  plan.batch = static_cast<int>(desc.batch);
  plan.token_tiles = static_cast<int>((desc.m + token_tile - 1) / token_tile);
  plan.feature_tiles = static_cast<int>((desc.n + tile_rows - 1) / tile_rows);
  plan.k_tiles = static_cast<int>((desc.k + k_block - 1) / k_block);
  const int64_t tiles = int64_t{plan.feature_tiles} * plan.token_tiles * desc.batch;
  const bool bandwidth_bound = decode_bandwidth_bound(token_tile);
  // The split for `tile`, by the rule for that tile.
  const auto choose = [&](int64_t output_tiles, int tile, double headroom) {
    const auto resident = [&](int s) { return resident_ctas(tile, s); };
    return single_wave || decode_plans_single_wave(tile)
               ? choose_single_wave_split(output_tiles, plan.k_tiles, resident)
               : choose_decode_split(output_tiles, plan.k_tiles, decode_bandwidth_bound(tile), resident, headroom);
  };
  // Batch-invariant problems arrive with their split forced (batch_invariant_split).
  plan.split = choose(tiles, token_tile, decode_cta_headroom(token_tile));
  if (forced_splits >= 1 && forced_splits <= kDecodeMaxSplit && forced_splits <= plan.k_tiles) {
    plan.split = decode_split_cost(tiles, plan.k_tiles, forced_splits, resident_ctas(token_tile, forced_splits),
                                   bandwidth_bound);
  }
  return plan;
}

}  // namespace anvil::detail
