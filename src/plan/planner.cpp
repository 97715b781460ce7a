// The planner (planner.h): composes the measured rules of kernels/sm90/{plan,decode_plan,
// row_split}.h into one LaunchPlan. No CUDA calls here.
#include "plan/planner.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/fp8_decode_plan.h"
#include "kernels/sm90/row_split.h"
#include "kernels/sm90/sm90_configs.h"
#include "kernels/sm90/split_k.h"
#include "kernels/sm90/stream_k.h"

namespace anvil::detail {

double sm90_plan_cycles(const LaunchPlan& p, const GemmDesc& desc, int sms);
bool prefers_rows64_one_token_tile(const GemmDesc& desc, const DeviceInfo& device, const CallFacts& facts,
                                   char* reason);

namespace {

void say(char* out, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void say(char* out, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(out, kReasonChars, fmt, ap);
  va_end(ap);
}

int index(KernelFamily f) { return static_cast<int>(f); }

// The decode configurations' shapes (decode_kernel.cuh, decode_ldg_kernel.cuh and the
// configurations the launchers instantiate in gemm_decode.cu and gemm_decode_ldg.cu).
struct DecodeShape {
  int token_tile, tile_rows, k_block;
};
constexpr DecodeShape kDecodeShapes[kDecodeConfigs] = {
    {8, 128, 64},  {16, 128, 64}, {32, 128, 64}, {64, 128, 64}, {96, 128, 64}, {128, 128, 64}, {256, 128, 64},
    {16, 64, 128}, {32, 64, 256}, {64, 64, 256},                      // sm90-decode-r64
    {8, 128, 64},  {16, 128, 64},                                     // sm90-decode-ldg (split in 64-wide k-tiles)
    {8, 64, 64},   {16, 64, 64},  {32, 64, 64},                       // sm90-decode-ldg-r64
    {8, 128, 128}, {16, 128, 128}, {32, 128, 128}, {64, 128, 128}, {128, 128, 128},  // sm90-fp8-decode
    {64, 128, 128}, {128, 128, 128},  // sm90-fp8-decode, block scales from 33 tokens
    {128, 64, 64},                    // sm90-decode-r64 from 97 tokens
    {128, 64, 64},                    // the same, folding a batch-invariant weight's K slices
    {96, 64, 64},                     // sm90-decode-r64 at 65-96 tokens
};

// The configuration each family launches for m tokens, and the one whose residency a
// token tile's split is planned with (the launchers' resident_ctas_for). FP8 block scales
// take their own one-per-SM configurations from 33 tokens (gemm_fp8_decode.cu).
DecodeConfigId decode_config(KernelFamily family, int64_t m, bool fp8_block = false) {
  switch (family) {
    case KernelFamily::kDecodeLdg: return m <= 8 ? DecodeConfigId::kLdg8 : DecodeConfigId::kLdg16;
    case KernelFamily::kDecodeR64:
      return m <= 16 ? DecodeConfigId::kR64x16 : m <= 32 ? DecodeConfigId::kR64x32 : m <= 128 ? DecodeConfigId::kR64x64 : DecodeConfigId::kR64x128;
    case KernelFamily::kDecodeLdgR64:
      return m <= 8 ? DecodeConfigId::kLdgR64x8 : m <= 16 ? DecodeConfigId::kLdgR64x16 : DecodeConfigId::kLdgR64x32;
    case KernelFamily::kSm90Fp8Decode:
      if (fp8_block && m > kFp8DecodeBlockStreamingTokens) {
        return fp8_decode_token_tile(m) <= 64 ? DecodeConfigId::kFp8Block64 : DecodeConfigId::kFp8Block128;
      }
      switch (fp8_decode_token_tile(m)) {
        case 8: return DecodeConfigId::kFp8x8;
        case 16: return DecodeConfigId::kFp8x16;
        case 32: return DecodeConfigId::kFp8x32;
        case 64: return DecodeConfigId::kFp8x64;
        default: return DecodeConfigId::kFp8x128;
      }
    default:
      switch (decode_token_tile(m)) {
        case 8: return DecodeConfigId::kTma8;
        case 16: return DecodeConfigId::kTma16;
        case 32: return DecodeConfigId::kTma32;
        case 64: return DecodeConfigId::kTma64;
        case 96: return DecodeConfigId::kTma96;
        case 128: return DecodeConfigId::kTma128;
        default: return DecodeConfigId::kTma256;
      }
  }
}

// Batch-invariant mode's 64-row tiles for two token tiles: from 96 tokens, where the second
// tile holds at least 32. A token tile streams the whole weight whatever its live tokens,
// and TMA zero-fills the rest of its box; measured (H200, bf16, against sm90-gemm's whole
// tiles, one call): 96-128 tokens on 32-4096 x 2880-18944 weights 11-67% faster (4096 x
// 4096 at 112 tokens 24.3 -> 17.6 us), 80 tokens -5% to +60%, 65 tokens -16% to +56%
// (4096 x 11008: 55.5 -> 66.4 us).
constexpr int64_t kInvariantRows64MinTokens = 96;

// Whether sm90-decode-r64's CTAs for this problem - its 64-row weight tiles once per 64
// tokens - are all resident at once unsplit.
bool invariant_rows64_resident(const GemmDesc& desc, const DeviceInfo& device) {
  const int64_t ctas = decode_rows64_tiles(desc.n, desc.batch) * ceil_div(desc.m, 64);
  return ctas <= device.resident(decode_config(KernelFamily::kDecodeR64, desc.m), 1);
}

// Where sm90-decode-r64 at 65-128 tokens takes one token tile of 96 or 128 tokens
// (kR64x96, kR64x128: 64 weight rows, the narrower that holds M) rather than two 64-token
// ones: sm90-decode's token tile on half its weight rows, so twice the CTAs for the same K
// split (and, unsplit, twice those of sm90-gemm's 128 x 128 tiles on the same rows). In
// batch-invariant mode wherever the rule above does not take the two for an unsplit weight
// (a split weight streams once per token tile in a cluster of its split: one tile); in
// normal mode always (the planner picks it only where prefers_rows64_one_token_tile says).
// Returns the token tile, or 0.
int rows64_one_token_tile(const GemmDesc& desc, const DeviceInfo& device, bool split_weight = false) {
  if (desc.m <= kDecodeAlwaysTokens || desc.m > kDecodeMaxTokens) return 0;
  if (desc.batch_invariant && !split_weight && desc.m >= kInvariantRows64MinTokens &&
      invariant_rows64_resident(desc, device)) {
    return 0;
  }
  return desc.m <= 96 ? 96 : 128;
}

// The configuration sm90-decode-r64 launches for desc, not folding slices.
DecodeConfigId rows64_config(const GemmDesc& desc, const DeviceInfo& device, bool split_weight) {
  const int one_token_tile = rows64_one_token_tile(desc, device, split_weight);
  return one_token_tile == 96    ? DecodeConfigId::kR64x96
         : one_token_tile == 128 ? DecodeConfigId::kR64x128
                                 : decode_config(KernelFamily::kDecodeR64, desc.m);
}

// Batch-invariant mode, a weight split in `splits` (batch_invariant_k_split), up to
// kDecodeMaxTokens tokens: whether sm90-decode-r64 can run the split as a cluster, as
// sm90-decode does - its stages (64, 128 or 256 of K) cutting K where the weight's slices
// do (split_cuts_match_slices). Elsewhere it folds the slices in its 128-token tiles.
bool rows64_cluster_takes_split(const GemmDesc& desc, const DeviceInfo& device, int splits) {
  if (splits <= 1 || desc.m > kDecodeMaxTokens) return false;
  const int k_block = kDecodeShapes[static_cast<int>(rows64_config(desc, device, true))].k_block;
  return ceil_div(desc.k, k_block) >= splits && split_cuts_match_slices(desc.k, splits, k_block);
}

// folded_slices > 1: sm90-decode-r64's 128-token tiles folding a batch-invariant weight's
// slices (kR64x128Folded) at any M, unsplit across CTAs.
DecodePlan plan_decode_launch(KernelFamily family, const GemmDesc& desc, const DeviceInfo& device, int forced_splits,
                              int folded_slices = 1) {
  // Batch invariance without the weight's split passed in (a row split's tail, which only
  // unsplit weights have): no K split, so every output sums its K in one order whatever M is.
  if (desc.batch_invariant && forced_splits == 0) forced_splits = 1;
  const bool fp8_block = desc.scales == ScaleMode::kBlock128;
  const bool split_weight = desc.batch_invariant && forced_splits > 1;
  const DecodeConfigId config = folded_slices > 1                     ? DecodeConfigId::kR64x128Folded
                                : family == KernelFamily::kDecodeR64 ? rows64_config(desc, device, split_weight)
                                                                      : decode_config(family, desc.m, fp8_block);
  if (folded_slices > 1) forced_splits = 1;
  const DecodeShape shape = kDecodeShapes[static_cast<int>(config)];
  const auto resident = [&](int token_tile, int splits) {
    // A token tile maps to the family's configuration for that many tokens.
    return folded_slices > 1 ? device.resident(config, splits)
                             : device.resident(decode_config(family, token_tile, fp8_block), splits);
  };
  // Kernels that run one CTA per SM plan their split to fill one wave: the load-path ones,
  // and sm90-decode-r64's 32-, 64-, 96- and 128-token tiles (decode_plan.h, choose_single_wave_split).
  const bool single_wave = family == KernelFamily::kDecodeLdg || family == KernelFamily::kDecodeLdgR64 ||
                           config == DecodeConfigId::kR64x32 || config == DecodeConfigId::kR64x64 ||
                           config == DecodeConfigId::kR64x128 || config == DecodeConfigId::kR64x128Folded ||
                           config == DecodeConfigId::kR64x96;
  const DecodeLaunchPlan p = plan_decode(desc, shape.token_tile, resident, single_wave,
                                         shape.tile_rows, shape.k_block, forced_splits);
  DecodePlan out;
  out.config = config;
  out.token_tile = shape.token_tile;
  out.tile_rows = shape.tile_rows;
  out.k_block = shape.k_block;
  out.batch = p.batch;
  out.token_tiles = p.token_tiles;
  out.feature_tiles = p.feature_tiles;
  out.k_tiles = p.k_tiles;
  out.splits = p.split.splits;
  out.ctas = p.split.ctas;
  out.waves = p.split.waves;
  out.k_slices = folded_slices > 1 ? folded_slices : 1;
  return out;
}

// The fraction of the SM slots of a decode plan's waves its CTAs fill.
double decode_wave_fill(const DecodePlan& p, const DeviceInfo& device) {
  const int resident = device.resident(p.config, p.splits);
  return resident > 0 && p.waves > 0 ? static_cast<double>(p.ctas) / static_cast<double>(p.waves * resident) : 0.0;
}

// Which decode kernel takes a problem sent to decoding (the order of preference, each
// family only where its rule holds and its checks pass). whole_k: the problem's K is summed
// whole whatever the weight (repacked copies, a row split's tail).
KernelFamily pick_decode_family(const GemmDesc& desc, const DeviceInfo& device, const CallFacts& facts, char* reason,
                                bool whole_k = false) {
  const int sms = device.sm_count;
  const bool invariant = desc.batch_invariant;
  const auto ok = [&](KernelFamily f) { return facts.accepts[index(f)]; };
  if (invariant) {
    // Batch invariance: only the TMA-fed kernels, which sum each output's K in the same
    // order as sm90-gemm (the load-path kernels split K across their warpgroups). A
    // narrow weight's split (batch_invariant_k_split) runs on the 128-row tiles, whose k-tiles
    // sm90-gemm's slices match.
    const int splits = whole_k ? 1 : batch_invariant_k_split(desc, device, facts);
    if (splits > 1) {
      // The 64-row tiles where their stages cut K at the weight's slices and all their
      // clusters fit one wave: twice the CTAs of the 128-row tiles, the same sums.
      if (ok(KernelFamily::kDecodeR64) && rows64_cluster_takes_split(desc, device, splits)) {
        const DecodeConfigId config = rows64_config(desc, device, true);
        const int64_t ctas = decode_rows64_tiles(desc.n, desc.batch) *
                             ceil_div(desc.m, kDecodeShapes[static_cast<int>(config)].token_tile) * splits;
        if (ctas <= device.resident(config, splits)) {
          say(reason, "batch-invariant: 64-row tiles in clusters of the weight's K split of %d, whose K steps cut K "
              "where its slices do (%lld CTAs in one wave)", splits, static_cast<long long>(ctas));
          return KernelFamily::kDecodeR64;
        }
      }
      say(reason, "batch-invariant: 128-row tiles, the weight's K split of %d (fixed by N and K)", splits);
      return KernelFamily::kDecodeTma;
    }
    // Unsplit: the 64-row tiles where all of them are resident at once (for every 64
    // tokens), else the 128-row ones.
    if (ok(KernelFamily::kDecodeR64) && invariant_rows64_resident(desc, device)) {
      say(reason, "batch-invariant, unsplit: the weight's %lld 64-row tiles x %lld token tiles are all resident at once",
          static_cast<long long>(decode_rows64_tiles(desc.n, desc.batch)), static_cast<long long>(ceil_div(desc.m, 64)));
      return KernelFamily::kDecodeR64;
    }
    if (ok(KernelFamily::kDecodeTma)) {
      say(reason, "batch-invariant, unsplit: 128-row tiles (the 64-row ones would not all be resident)");
      return KernelFamily::kDecodeTma;
    }
    return KernelFamily::kNone;
  }
  const bool ldg_k = desc.k >= kDecodeLdgMinK;
  const bool load_path = ldg_k && prefers_decode_ldg(desc.m);
  const auto ldg_resident = [&](int s) { return device.resident(DecodeConfigId::kLdg8, s); };
  const bool ldg_r64_full = ldg_k && prefers_decode_ldg_r64(desc.m, desc.n, desc.k, desc.batch, sms);
  const bool ldg_r64_split =
      !ldg_r64_full && load_path &&
      prefers_decode_ldg_r64_split(desc.m, desc.n, desc.k, desc.batch, sms, ldg_resident);
  const bool rows64 = !invariant && prefers_decode_r64(desc.m, desc.n, desc.batch, sms);
  if ((ldg_r64_full || ldg_r64_split) && ok(KernelFamily::kDecodeLdgR64)) {
    say(reason, ldg_r64_full ? "<= %d tokens, K <= %d: the 64-row tiles fill one wave unsplit (load path)"
                             : "<= %d tokens, K <= %d: the 64-row tiles in a split of <= 2 make more CTAs than 128-row ones",
        static_cast<int>(ldg_r64_full ? kDecodeLdgRows64MaxTokens : kDecodeLdgMaxTokens),
        static_cast<int>(kDecodeLdgRows64MaxK));
    return KernelFamily::kDecodeLdgR64;
  }
  if (load_path && ok(KernelFamily::kDecodeLdg)) {
    const DecodePlan ldg = plan_decode_launch(KernelFamily::kDecodeLdg, desc, device, 0);
    const double fill = decode_wave_fill(ldg, device);
    if (fill >= kDecodeLdgMinWaveFill) {
      say(reason, "<= %d tokens: the load path streams the weight faster than TMA (its waves %.0f%% full)",
          static_cast<int>(kDecodeLdgMaxTokens), 100 * fill);
      return KernelFamily::kDecodeLdg;
    }
  }
  if (ok(KernelFamily::kDecodeR64) && desc.m <= kDecodeAlwaysTokens) {
    if (rows64) {
      say(reason, "%d-%d tokens: the weight's 64-row tiles are all resident at once unsplit",
          static_cast<int>(kDecodeRows64MinTokens), static_cast<int>(kDecodeAlwaysTokens));
      return KernelFamily::kDecodeR64;
    }
    // The same weight in 64-row tiles needs half the K split for as many CTAs: where their
    // plan fits one wave with at least the CTAs of the 128-row plan, the cluster reduction
    // is shorter for the same parallelism.
    const DecodePlan rows64_plan = plan_decode_launch(KernelFamily::kDecodeR64, desc, device, 0);
    const DecodePlan rows128_plan = plan_decode_launch(KernelFamily::kDecodeTma, desc, device, 0);
    if (rows64_plan.waves == 1 && rows64_plan.ctas >= rows128_plan.ctas) {
      say(reason, "64-row tiles: %lld CTAs in one wave with a K split of %d, against %lld with a split of %d",
          static_cast<long long>(rows64_plan.ctas), rows64_plan.splits, static_cast<long long>(rows128_plan.ctas),
          rows128_plan.splits);
      return KernelFamily::kDecodeR64;
    }
  }
  if (!whole_k && prefers_rows64_one_token_tile(desc, device, facts, reason)) return KernelFamily::kDecodeR64;
  if (ok(KernelFamily::kDecodeTma)) {
    say(reason, "few tokens: swap-AB decode streams the weight (128-row tiles, K split across a cluster)");
    return KernelFamily::kDecodeTma;
  }
  return KernelFamily::kNone;
}

bool readable_in_place(const MatrixLayout& layout, Order k_major, int64_t batch, bool base_aligned) {
  if (layout.order != k_major || layout.ld % 8 != 0) return false;
  if (batch > 1 && (layout.batch_stride == 0 || layout.batch_stride % 8 != 0)) return false;
  return base_aligned;
}

constexpr size_t kWorkspaceAlign = 256;
size_t align_up(size_t bytes) { return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

// As the launch decides it (tma_operands.h: d_layout_tma_storable, and by columns for a
// column-major D of 16-bit inputs).
bool tma_storable(const GemmDesc& desc) {
  if (desc.d.dtype == DataType::kF32 || desc.d.ld % 8 != 0 || (desc.batch > 1 && desc.d.batch_stride % 8 != 0)) {
    return false;
  }
  if (desc.d.order == Order::kRowMajor) return desc.n % 8 == 0;
  return desc.m % 8 == 0 && desc.a.dtype != DataType::kE4M3 && desc.a.dtype != DataType::kE5M2;
}

bool plain(const GemmDesc& desc) {
  return desc.alpha == 1.0f && desc.beta == 0.0f && desc.epilogue.bias == BiasMode::kNone &&
         desc.epilogue.activation == Activation::kIdentity;
}

Sm90Problem sm90_problem(const GemmDesc& desc) {
  Sm90Problem p;
  p.m = desc.m, p.n = desc.n, p.k = desc.k, p.batch = desc.batch;
  p.fused_epilogue = !plain(desc);
  p.swiglu = desc.epilogue.activation == Activation::kSwiGLU;
  p.stream_k_allowed = !desc.batch_invariant;
  p.store = tma_storable(desc) ? DStore::kTma : desc.d.order == Order::kRowMajor ? DStore::kRowMajor : DStore::kColumnMajor;
  return p;
}

void describe_variant(LaunchPlan& p, Sm90Variant v) {
  p.variant = v;
  p.tile = tile_shape(v);
  p.cluster = cluster_shape(v);
  p.schedule = variant_schedule(v);
  p.stages = variant_stages(v);
}

void describe_tile_choice(LaunchPlan& p, const Sm90Problem& problem, int sms, bool forced) {
  const WavePlan w = variant_wave_plan(p.variant, problem.m, problem.n, problem.batch, sms);
  if (forced) {
    say(p.tile_reason, "%s forced: %lld tiles, %.2f waves", variant_name(p.variant), static_cast<long long>(w.tiles),
        w.waves);
  } else if (p.variant == Sm90Variant::kTallStreamK) {
    say(p.tile_reason, "stream-K 256x128: whole tiles leave the last wave idle (%lld tiles on %d SMs), K >= %d tiles",
        static_cast<long long>(w.tiles), sms, static_cast<int>(kStreamKMinKTiles));
  } else if (p.variant != choose_sm90_variant(problem, sms)) {
    say(p.tile_reason, "%s: a width between the 32-column steps, %lld tiles (%.2f waves) at least %.0f%% cheaper",
        variant_name(p.variant), static_cast<long long>(w.tiles), w.waves, 100 * kStep16MinSaving);
  } else {
    const bool hides_epilogue = problem.fused_epilogue && p.variant == Sm90Variant::kPingPongPair;
    say(p.tile_reason, "%s: fewest waves x area / speed (%lld tiles, %.2f waves)%s", variant_name(p.variant),
        static_cast<long long>(w.tiles), w.waves, hides_epilogue ? "; fused epilogue: ping-pong hides it" : "");
  }
}

// sm90-gemm's split-K (split_k.h): K in equal slices, one strided-batched launch of the
// slices into fp32 partials, then their sum in slice order with the epilogue. Only for
// operands read in place (the slices are batch-stride views of them), batch 1, a 16-byte
// aligned workspace with room for the partials. In batch-invariant mode the slices are the
// weight's split (batch_invariant_k_split, `invariant`) where K divides into equal whole
// k-tiles, which are then sm90-decode's ranks' cuts too; normal mode's rule depends on M.
// Never for a forced folded-slice configuration, which cuts K inside its CTAs. The variant
// fields then describe the slices' launch.
bool plan_split_k(LaunchPlan& p, const GemmDesc& desc, const Sm90Problem& whole, const PlanOverrides& ov,
                  const CallFacts& facts, int sms, bool forced_variant, int invariant) {
  if (ov.split_k_slices == 1 || desc.batch != 1 || p.repack.a || p.repack.b) return false;
  if (forced_variant && folds_k_slices(p.variant)) return false;
  if (desc.batch_invariant && (invariant <= 1 || desc.k % (int64_t{kBatchInvariantKTile} * invariant) != 0)) {
    return false;
  }
  // Where both apply, split-K beats stream-K: every slice's tiles start together on the same
  // K range, and the partials are summed across the GPU, not by each tile's last CTA
  // (docs/notes/split-k.md).
  SplitKPlan split;
  if (desc.batch_invariant) {
    split = SplitKPlan{invariant, desc.k / invariant};
  } else if (ov.split_k_slices > 1) {
    const int64_t s = ov.split_k_slices;
    if (desc.k % (s * kSplitKGranule) == 0) split = SplitKPlan{static_cast<int>(s), desc.k / s};
  } else if (!forced_variant) {
    split = choose_split_k(desc.m, desc.n, desc.k, desc.batch, sms);
  }
  if (split.slices <= 1) return false;
  const size_t bytes = split_k_workspace_bytes(split, desc.m, desc.n);
  if (!facts.workspace_aligned16 || facts.workspace_bytes < bytes) {
    say(p.split_reason, "none: split-K would need %zu workspace bytes, 16-byte aligned", bytes);
    return false;
  }
  Sm90Problem slices = whole;
  slices.m = desc.m;
  slices.k = split.slice_k;
  slices.batch = split.slices;
  slices.fused_epilogue = false;  // the slices store plain fp32 partials
  slices.store = DStore::kRowMajor;
  slices.stream_k_allowed = false;
  if (!forced_variant) describe_variant(p, choose_sm90_variant(slices, sms));
  describe_tile_choice(p, slices, sms, forced_variant);
  p.main_rows = desc.m;
  p.tail_family = KernelFamily::kNone;
  say(p.row_split_reason, "none: split-K");
  p.k_splits = split.slices;
  p.slice_k = split.slice_k;
  p.workspace_bytes = bytes;
  say(p.split_reason, "split-K: %d slices of K = %lld, summed in slice order (whole tiles fill %lld of %d SMs)",
      split.slices, static_cast<long long>(split.slice_k),
      static_cast<long long>(ceil_div(desc.m, 128) * ceil_div(desc.n, 256)), sms);
  return true;
}

// The problem as the kernels after a repack see it: the K-major copies (or the caller's
// operands, aligned: anything else was repacked), so only the decode kernels' descriptive
// limits apply to it.
GemmDesc on_copies(const GemmDesc& desc, const RepackNeeds& repack) {
  GemmDesc d = desc;
  if (repack.a) d.a = MatrixLayout{desc.a.dtype, Order::kRowMajor, repack.packed_ld, desc.m * repack.packed_ld};
  if (repack.b) d.b = MatrixLayout{desc.b.dtype, Order::kColMajor, repack.packed_ld, desc.n * repack.packed_ld};
  return d;
}

// The decode family for a problem on the copies (every operand read in place), or kNone. Its
// K is summed whole: the copies' plan and a row split's tail are unsplit.
KernelFamily decode_family_on_copies(const GemmDesc& copies, const DeviceInfo& device) {
  CallFacts facts;
  for (int f = 0; f < kKernelFamilies; ++f) facts.accepts[f] = decode_family_accepts(static_cast<KernelFamily>(f), copies);
  char reason[kReasonChars];
  return pick_decode_family(copies, device, facts, reason, true);
}

// Few tokens on operands no decode kernel reads in place (odd K, a transposed operand):
// sm90-gemm's repack, then a decode kernel on the copies for every row (main_rows = 0).
// The copies are an aligned problem of the same shape, for which the decode rules already
// chose a decode kernel over sm90-gemm's tiles. In batch-invariant mode too: a repacked
// problem runs sm90-gemm unsplit at every M (plan_split_k takes no repacked operands), and
// the mode's decode kernels (TMA-fed, pick_decode_family) then run unsplit, summing K in
// sm90-gemm's order. False where no decode kernel takes the copies either.
bool plan_decode_on_copies(LaunchPlan& p, const GemmDesc& desc, const DeviceInfo& device, const PlanOverrides& ov) {
  if (p.family != KernelFamily::kSm90Gemm || !(p.repack.a || p.repack.b) || p.k_splits > 1) return false;
  const GemmDesc copies = on_copies(desc, p.repack);
  const KernelFamily family = decode_family_on_copies(copies, device);
  if (family == KernelFamily::kNone) return false;
  p.main_rows = 0;
  p.tail_family = family;
  p.tail = plan_decode_launch(family, copies, device, desc.batch_invariant ? 1 : ov.decode_splits);
  p.workspace_bytes = p.repack.a_bytes + p.repack.b_bytes;
  say(p.family_reason, "sm90-gemm's repack, then %s on the K-major copies: no decode kernel reads these operands "
      "in place", family_name(family));
  say(p.row_split_reason, "every row (%lld) to %s on the copies", static_cast<long long>(desc.m), family_name(family));
  return true;
}

// The shared-memory model's SM cycles (tile_k_step_cycles) of a plan, in K steps: each
// wave of decode CTAs fills its ring and finishes its tile before the next wave starts
// (~2 us, ~6 K steps); sm90-gemm's persistent CTAs pay that once.
constexpr double kWaveFixedSteps = 6;
// A folded slice ends with the consumers' wgmma pipeline drained and the slice's sum added
// to the total before the next slice's first wgmma: about half a K step.
constexpr double kFoldedSliceDrainSteps = 0.5;

// Split-K's partials (4 bytes per output and slice) written and read back, at 850 bytes per
// SM clock cycle for the whole GPU - half of DRAM's ~3 TB/s per 1.75 GHz cycle, since the slices'
// scattered fp32 stores weighed as much as the round trip itself (4099 x 5120 x 17920 in 2
// slices: ~24% slower than whole tiles, docs/notes/batch-invariant-split.md) - and the sum
// kernel's launch (~2 us).
constexpr double kPartialBytesPerCycle = 850;
constexpr double kSplitKSumLaunchCycles = 3500;
double split_k_partials_cycles(const GemmDesc& desc, int slices) {
  const double bytes = 2.0 * 4.0 * static_cast<double>(slices) * static_cast<double>(desc.m * desc.n * desc.batch);
  return bytes / kPartialBytesPerCycle + kSplitKSumLaunchCycles;
}

// Batch-invariant mode's sm90-gemm plans for a split weight in that model: the folded
// slices, or split-K with its partials' round trip.
double invariant_gemm_cycles(const LaunchPlan& p, const GemmDesc& desc, int sms) {
  const double cycles = sm90_plan_cycles(p, desc, sms);
  return folds_k_slices(p.variant) || p.k_splits <= 1 ? cycles : cycles + split_k_partials_cycles(desc, p.k_splits);
}

// A folded-slice configuration (folds_k_slices) on the whole problem, in that model.
double folded_slices_cycles(Sm90Variant v, const GemmDesc& desc, int slices, int sms) {
  const double waves = static_cast<double>(ceil_div(variant_wave_plan(v, desc.m, desc.n, desc.batch, sms).tiles, sms));
  const TileShape t = tile_shape(v);
  return (waves * (static_cast<double>(ceil_div(desc.k, 64)) + slices * kFoldedSliceDrainSteps) + kWaveFixedSteps) *
         tile_k_step_cycles(t.block_m, t.block_n);
}

// The cheapest of the three: 128 x 96 singles make the most tiles for a few hundred rows,
// the 128 x 192 pairs do the most work per shared-memory cycle once the tiles fill several
// waves, the 128 x 128 pairs sit between; how full each one's last wave is decides the rest.
// SwiGLU's gate/up column pairs need 128-column tiles: the 128 x 128 pairs alone.
Sm90Variant cheaper_folded_variant(const GemmDesc& desc, int slices, int sms) {
  if (desc.epilogue.activation == Activation::kSwiGLU) return Sm90Variant::kSlicedPair128;
  Sm90Variant best = Sm90Variant::kSlicedPair192;
  for (Sm90Variant v : {Sm90Variant::kSlicedPair128, Sm90Variant::kSliced96}) {
    if (folded_slices_cycles(v, desc, slices, sms) < folded_slices_cycles(best, desc, slices, sms)) best = v;
  }
  return best;
}

// Batch-invariant mode, a weight the mode splits in `slices` (batch_invariant_k_split), on
// sm90-gemm: a folded-slice configuration, whose CTAs sum each tile's k-tiles [r k / s,
// (r + 1) k / s) in turn, as sm90-decode's rank r does, and add the slices in order (the
// cluster's rank order). No partials in memory, no second launch, so the split costs large
// M nothing but a drain per slice. No row split: its tail would need the split too. A
// forced configuration that sums K whole is refused.
void plan_invariant_slices(LaunchPlan& p, const GemmDesc& desc, int sms, const PlanOverrides& ov, int slices) {
  const bool forced = ov.sm90_variant >= 0 || ov.sm90_fit_only;
  const Sm90Variant v = ov.sm90_variant >= 0 ? static_cast<Sm90Variant>(ov.sm90_variant)
                                             : cheaper_folded_variant(desc, slices, sms);
  const bool swiglu_misfit = desc.epilogue.activation == Activation::kSwiGLU && tile_shape(v).block_n % 128 != 0;
  if (p.repack.a || p.repack.b || ov.sm90_fit_only || !folds_k_slices(v) || swiglu_misfit) {
    p.family = KernelFamily::kNone;
    say(p.family_reason, "batch-invariant: this weight's K split of %d runs on sm90-decode's cluster or sm90-gemm's "
        "folded slices%s", slices, forced ? ", not the forced configuration" : "");
    return;
  }
  describe_variant(p, v);
  const WavePlan w = variant_wave_plan(v, desc.m, desc.n, desc.batch, sms);
  say(p.tile_reason, "%s%s: %lld tiles, %.2f waves, %.0fk SM cycles (shared-memory model)", variant_name(v),
      forced ? " forced" : ", the cheapest folded tile", static_cast<long long>(w.tiles), w.waves,
      folded_slices_cycles(v, desc, slices, sms) / 1000);
  p.main_rows = desc.m;
  p.k_splits = slices;
  p.slice_k = 0;
  p.workspace_bytes = 0;
  say(p.split_reason, "batch-invariant: the weight's %d K slices, summed in turn in each CTA and added in slice order",
      slices);
  say(p.row_split_reason, "none: a decode tail would need the weight's split too");
}

// sm90-gemm's plan: repack, variant, row split, workspace.
void plan_sm90(LaunchPlan& p, const GemmDesc& desc, const DeviceInfo& device, const PlanOverrides& ov,
               const CallFacts& facts) {
  const int sms = device.sm_count;
  p.family = KernelFamily::kSm90Gemm;
  p.repack = repack_needs(desc, facts);
  const int invariant = batch_invariant_k_split(desc, device, facts);
  if (invariant > 1) {
    // The folded slices, or split-K's slices in memory where the model costs them less
    // (few tiles over a long K: the slices multiply the CTAs) - the same cuts, added in the
    // same order.
    plan_invariant_slices(p, desc, sms, ov, invariant);
    if (p.family == KernelFamily::kNone || ov.sm90_variant >= 0) return;
    LaunchPlan in_memory = p;
    if (plan_split_k(in_memory, desc, sm90_problem(desc), ov, facts, sms, false, invariant) &&
        invariant_gemm_cycles(in_memory, desc, sms) < invariant_gemm_cycles(p, desc, sms)) {
      p = in_memory;
    }
    return;
  }
  const size_t repack_bytes = p.repack.a_bytes + p.repack.b_bytes;
  const size_t sk_bytes = stream_k_workspace_bytes(sms);
  Sm90Problem problem = sm90_problem(desc);
  // Stream-K parks its partials after the copies; without the room (or alignment) the
  // whole-tile plan runs instead of failing.
  const bool sk_room = facts.workspace_bytes >= repack_bytes &&
                       facts.workspace_bytes - repack_bytes >= sk_bytes && facts.workspace_aligned16;
  problem.stream_k_allowed = problem.stream_k_allowed && ov.allow_stream_k && sk_room;
  problem.fit_widths = ov.fit_widths;
  p.main_rows = desc.m;
  const bool forced_variant = ov.sm90_variant >= 0 || ov.sm90_fit_only;
  if (forced_variant) {
    const Sm90Variant v = ov.sm90_fit_only ? cheaper_fit_variant(desc.m, desc.n, desc.batch, sms)
                                           : static_cast<Sm90Variant>(ov.sm90_variant);
    describe_variant(p, v);
    describe_tile_choice(p, problem, sms, true);
    say(p.row_split_reason, "none: the variant is forced");
  } else {
    // The rows past the last multiple of 256 may go to a decode kernel (row_split.h).
    const int mode = ov.row_split == PlanOverrides::RowSplit::kNever    ? 0
                     : ov.row_split == PlanOverrides::RowSplit::kAlways ? 1
                                                                        : -1;
    // Batch-invariant problems may split too: the tail's decode plan is unsplit as well.
    const int64_t main_rows = ov.fit_widths ? row_split_main_rows(problem, true, sms, mode) : desc.m;
    if (main_rows < desc.m) {
      GemmDesc tail = on_copies(desc, p.repack);
      tail.m = desc.m - main_rows;
      const KernelFamily tail_family = decode_family_on_copies(tail, device);
      if (tail_family != KernelFamily::kNone) {
        p.main_rows = main_rows;
        p.tail_family = tail_family;
        p.tail = plan_decode_launch(tail_family, tail, device, ov.decode_splits);
        problem.m = main_rows;
        say(p.row_split_reason, "rows %lld-%lld (%lld) to %s: %s", static_cast<long long>(main_rows),
            static_cast<long long>(desc.m - 1), static_cast<long long>(desc.m - main_rows), family_name(tail_family),
            mode == 1 ? "forced" : "cheaper than the wave of tiles they add");
      }
    }
    if (!p.row_split()) {
      const int64_t tail = desc.m % kRowSplitGranule;
      if (mode == 0) say(p.row_split_reason, "none: forced off");
      else if (tail == 0) say(p.row_split_reason, "none: M is a multiple of %d", static_cast<int>(kRowSplitGranule));
      else if (tail > kRowSplitMaxTailRows || desc.m < kRowSplitGranule + tail)
        say(p.row_split_reason, "none: %lld rows past a multiple of %d (a decode kernel takes 1-%d past at least one)",
            static_cast<long long>(tail), static_cast<int>(kRowSplitGranule), static_cast<int>(kRowSplitMaxTailRows));
      else say(p.row_split_reason, "none: the estimates save less than %.0f%%", 100 * kRowSplitMinSaving);
    }
    const Sm90Variant whole = choose_sm90_variant(problem, sms);
    describe_variant(p, facts.d_by_column_boxes ? whole : step16_width_or(whole, problem, sms));
    describe_tile_choice(p, problem, sms, false);
  }
  p.workspace_bytes = repack_bytes + (p.variant == Sm90Variant::kTallStreamK ? sk_bytes : 0);
  p.k_splits = 1;
  if (plan_split_k(p, desc, problem, ov, facts, sms, forced_variant, 1)) return;
  if (p.variant == Sm90Variant::kTallStreamK) {
    say(p.split_reason, "stream-K: the last waves' K iterations spread over %d SMs, fixed up in a fixed order", sms);
  } else {
    say(p.split_reason, "none: whole tiles%s", desc.batch_invariant ? " (batch-invariant: no split, no stream-K)" : "");
  }
}

// The planner links without the library (anvil-plan): its own names for the scale modes.
const char* scale_mode_name(ScaleMode s) {
  switch (s) {
    case ScaleMode::kTensor: return "tensor";
    case ScaleMode::kRowColumn: return "row-column";
    case ScaleMode::kBlock128: return "block128";
    default: return "none";
  }
}

bool fp8_inputs(const GemmDesc& desc) {
  const auto f8 = [](DataType t) { return t == DataType::kE4M3 || t == DataType::kE5M2; };
  return f8(desc.a.dtype) && f8(desc.b.dtype);
}

// sm90-fp8's split-K (fp8_plan.h): as sm90-gemm's (plan_split_k), in whole 128-wide K
// blocks. Batch 1 only (the slices are the batch), a 16-byte aligned workspace with room for
// the partials; with less the whole-tile plan runs. FP8 is never batch-invariant
// (validate.cpp). The variant fields then describe the slices' launch.
bool plan_fp8_split_k(LaunchPlan& p, const GemmDesc& desc, const PlanOverrides& ov, const CallFacts& facts, int sms,
                      bool forced_variant) {
  if (ov.split_k_slices == 1 || desc.batch != 1) return false;
  SplitKPlan split;
  if (ov.split_k_slices > 1) {
    if (fp8_split_k_possible(desc.k, ov.split_k_slices)) split = SplitKPlan{ov.split_k_slices, desc.k / ov.split_k_slices};
  } else if (!forced_variant) {
    split = choose_fp8_split_k(desc.m, desc.n, desc.k, desc.batch, sms, desc.a.dtype, desc.b.dtype, desc.scales);
  }
  if (split.slices <= 1) return false;
  const size_t bytes = split_k_workspace_bytes(split, desc.m, desc.n);
  if (!facts.workspace_aligned16 || facts.workspace_bytes < bytes) {
    say(p.split_reason, "none: split-K would need %zu workspace bytes, 16-byte aligned", bytes);
    return false;
  }
  const Fp8Variant whole = p.fp8_variant;
  const int64_t whole_ctas = wave_plan(desc.m, desc.n, 1, p.tile, sms, p.cluster.m, p.cluster.n).tiles;
  if (!forced_variant) {
    p.fp8_variant = choose_fp8_variant(desc.m, desc.n, split.slices, sms, desc.a.dtype, desc.b.dtype, desc.scales);
    p.tile = fp8_tile_shape(p.fp8_variant);
    p.cluster = fp8_cluster_shape(p.fp8_variant);
    p.stages = fp8_stages(p.fp8_variant);
  }
  const WavePlan w = wave_plan(desc.m, desc.n, split.slices, p.tile, sms, p.cluster.m, p.cluster.n);
  say(p.tile_reason, "%s for the slices: %lld CTAs, %.2f waves (whole tiles: %s, %lld CTAs)",
      fp8_variant_name(p.fp8_variant), static_cast<long long>(w.tiles), w.waves, fp8_variant_name(whole),
      static_cast<long long>(whole_ctas));
  p.k_splits = split.slices;
  p.slice_k = split.slice_k;
  p.workspace_bytes = bytes;
  say(p.split_reason, "split-K%s: %d slices of K = %lld (%lld blocks), summed in slice order", ov.split_k_slices > 1 ? " forced" : "",
      split.slices, static_cast<long long>(split.slice_k), static_cast<long long>(split.slice_k / kFp8KBlock));
  return true;
}

// sm90-fp8's plan: the configuration (fp8_plan.h), whole tiles or split-K.
void plan_fp8(LaunchPlan& p, const GemmDesc& desc, const DeviceInfo& device, const PlanOverrides& ov,
              const CallFacts& facts) {
  const int sms = device.sm_count;
  p.family = KernelFamily::kSm90Fp8;
  const bool swiglu = desc.epilogue.activation == Activation::kSwiGLU;
  const bool forced = ov.fp8_variant >= 0 && ov.fp8_variant < kFp8Variants &&
                      fp8_variant_runs(static_cast<Fp8Variant>(ov.fp8_variant), desc.a.dtype, desc.b.dtype, desc.scales,
                                       swiglu);
  const Fp8Variant v = forced ? static_cast<Fp8Variant>(ov.fp8_variant)
                              : choose_fp8_variant(desc.m, desc.n, desc.batch, sms, desc.a.dtype, desc.b.dtype,
                                                   desc.scales, swiglu);
  p.fp8_variant = v;
  p.tile = fp8_tile_shape(v);
  p.cluster = fp8_cluster_shape(v);
  p.stages = fp8_stages(v);
  p.schedule = GemmSchedule::kCooperative;
  p.main_rows = desc.m;
  p.k_splits = 1;
  p.workspace_bytes = 0;
  say(p.row_split_reason, "none: one kernel takes every row");
  const WavePlan w = wave_plan(desc.m, desc.n, desc.batch, p.tile, sms, p.cluster.m, p.cluster.n);
  if (forced) {
    say(p.tile_reason, "%s forced: %lld tiles, %.2f waves", fp8_variant_name(v), static_cast<long long>(w.tiles), w.waves);
  } else if (desc.scales == ScaleMode::kBlock128) {
    say(p.tile_reason, "%s: block scales promote every 128-wide K block; fewest waves x area / speed (%lld tiles, "
        "%.2f waves)", fp8_variant_name(v), static_cast<long long>(w.tiles), w.waves);
  } else {
    say(p.tile_reason, "%s: fewest waves x area / speed (%lld tiles, %.2f waves)", fp8_variant_name(v),
        static_cast<long long>(w.tiles), w.waves);
  }
  say(p.split_reason, "none: whole tiles");
  plan_fp8_split_k(p, desc, ov, facts, sms, forced);
}

void plan_decode_family(LaunchPlan& p, KernelFamily family, const GemmDesc& desc, const DeviceInfo& device,
                        const PlanOverrides& ov, const CallFacts& facts) {
  p.family = family;
  // Batch-invariant problems take the weight's split, which sm90-decode's 128-row tiles cut
  // K for (a load-path kernel would sum it whole). sm90-decode-r64 takes it in a cluster
  // where its K steps cut K at the slices (rows64_cluster_takes_split), else in its
  // 128-token tiles, each CTA folding the slices.
  const int invariant = batch_invariant_k_split(desc, device, facts);
  const bool folded = invariant > 1 && family == KernelFamily::kDecodeR64 &&
                      !rows64_cluster_takes_split(desc, device, invariant);
  if (invariant > 1 && family != KernelFamily::kDecodeTma && family != KernelFamily::kDecodeR64) {
    p.family = KernelFamily::kNone;
    say(p.family_reason, "batch-invariant: this weight's K split of %d runs on sm90-decode, sm90-decode-r64 or "
        "sm90-gemm, not %s", invariant, family_name(family));
    return;
  }
  p.decode = plan_decode_launch(family, desc, device,
                                ov.decode_splits > 0 ? ov.decode_splits : desc.batch_invariant ? invariant : 0,
                                folded ? invariant : 1);
  p.k_splits = folded ? invariant : p.decode.splits;
  p.main_rows = desc.m;
  p.tile = TileShape{p.decode.tile_rows, p.decode.token_tile};  // weight rows x tokens (swap-AB)
  p.cluster = ClusterShape{1, 1};
  p.workspace_bytes = 0;
  say(p.tile_reason, "%d weight rows x %d tokens per CTA, %d-wide K steps (%d feature x %d token tiles)",
      p.decode.tile_rows, p.decode.token_tile, p.decode.k_block, p.decode.feature_tiles, p.decode.token_tiles * p.decode.batch);
  if (folded) {
    say(p.split_reason, "batch-invariant: the weight's %d K slices, summed in turn in each CTA (%lld CTAs, no "
        "cluster)", invariant, static_cast<long long>(p.decode.ctas));
  } else if (ov.decode_splits >= 1 && p.decode.splits == ov.decode_splits) {
    say(p.split_reason, "K split %d forced (%lld CTAs, %lld waves)", p.decode.splits, static_cast<long long>(p.decode.ctas),
        static_cast<long long>(p.decode.waves));
  } else if (desc.batch_invariant) {
    say(p.split_reason, "K split %d, fixed by (N, K, batch) whatever M is (%lld CTAs)", p.decode.splits,
        static_cast<long long>(p.decode.ctas));
  } else {
    say(p.split_reason, "K split %d across a cluster: %lld CTAs in %lld wave(s), the cheapest stream", p.decode.splits,
        static_cast<long long>(p.decode.ctas), static_cast<long long>(p.decode.waves));
  }
  say(p.row_split_reason, "none: a decode kernel takes every row");
}

// FP8 inputs: sm90-fp8-decode where the problem is decode-sized, or a few hundred tokens
// that sm90-fp8 would split K for, and its estimate beats sm90-fp8's (fp8_decode_plan.h),
// else sm90-fp8; no other kernel reads 8-bit inputs. A forced sm90-fp8 variant or split-K
// keeps the problem on sm90-fp8.
void plan_fp8_family(LaunchPlan& p, const GemmDesc& desc, const DeviceInfo& device, const PlanOverrides& ov,
                     const CallFacts& facts) {
  // The call's facts (the family's own checks, run by the dispatcher) and the description's
  // rules, both: a caller's CallFacts may leave accepts at its default.
  const auto ok = [&](KernelFamily f) { return facts.accepts[index(f)] && decode_family_accepts(f, desc); };
  const auto finish = [&] { p.kernel_name = family_name(p.family); };
  if (ov.family != KernelFamily::kNone && ov.family != KernelFamily::kSm90Fp8 &&
      ov.family != KernelFamily::kSm90Fp8Decode) {
    say(p.family_reason, "%s forced, but FP8 inputs run on sm90-fp8 and sm90-fp8-decode only", family_name(ov.family));
    return;
  }
  if (ov.family == KernelFamily::kSm90Fp8Decode) {
    if (!ok(KernelFamily::kSm90Fp8Decode)) {
      const char* why = fp8_decode_refusal(desc);
      say(p.family_reason, "sm90-fp8-decode forced, but it does not take this problem%s%s", why != nullptr ? ": " : "",
          why != nullptr ? why : "");
      return;
    }
    say(p.family_reason, "sm90-fp8-decode forced");
    plan_decode_family(p, KernelFamily::kSm90Fp8Decode, desc, device, ov, facts);
    finish();
    return;
  }
  if (!ok(KernelFamily::kSm90Fp8)) {
    say(p.family_reason, "sm90-fp8 does not take this problem (K = 0 has no tensor-core work)");
    return;
  }
  const bool sm90_fp8_forced = ov.family == KernelFamily::kSm90Fp8 || ov.fp8_variant >= 0 || ov.split_k_slices > 1;
  if (!sm90_fp8_forced &&
      fp8_decode_considered(desc.m, desc.n, desc.k, desc.batch, device.sm_count, desc.a.dtype, desc.b.dtype,
                            desc.scales) &&
      ok(KernelFamily::kSm90Fp8Decode)) {
    const DecodePlan decode = plan_decode_launch(KernelFamily::kSm90Fp8Decode, desc, device, ov.decode_splits);
    const double decode_us = fp8_decode_estimated_us(
        int64_t{decode.feature_tiles} * decode.token_tiles * decode.batch, decode.k_tiles, decode.splits,
        device.resident(decode.config, decode.splits), decode.token_tile);
    const double gemm_us = fp8_gemm_estimated_us(desc.m, desc.n, desc.k, desc.batch, device.sm_count, desc.a.dtype,
                                                 desc.b.dtype, desc.scales);
    if (prefers_fp8_decode(desc.m, decode.waves, decode_us, gemm_us)) {
      if (desc.m > kFp8DecodeMaxTokens) {
        say(p.family_reason,
            "sm90-fp8-decode: %lld tokens where sm90-fp8 would split K through memory; its cluster split, est. %.1f "
            "us against %.1f",
            static_cast<long long>(desc.m), decode_us, gemm_us);
      } else {
        say(p.family_reason,
            "sm90-fp8-decode: %lld tokens, est. %.1f us against sm90-fp8's %.1f (%lld CTAs stream the weight)",
            static_cast<long long>(desc.m), decode_us, gemm_us, static_cast<long long>(decode.ctas));
      }
      plan_decode_family(p, KernelFamily::kSm90Fp8Decode, desc, device, ov, facts);
      finish();
      return;
    }
    if (desc.m > kDecodeAlwaysTokens && decode.waves > 1) {
      say(p.family_reason, "sm90-fp8: %lld tokens, and sm90-fp8-decode's one-per-SM CTAs would make %lld waves",
          static_cast<long long>(desc.m), static_cast<long long>(decode.waves));
    } else {
      say(p.family_reason, "sm90-fp8: 8-bit inputs, est. %.1f us against sm90-fp8-decode's %.1f", gemm_us, decode_us);
    }
  } else if (ov.family == KernelFamily::kSm90Fp8) {
    say(p.family_reason, "sm90-fp8 forced");
  } else if (desc.m > kFp8DecodeMaxTokens) {
    say(p.family_reason, "sm90-fp8: 8-bit inputs, more than %d tokens", static_cast<int>(kFp8DecodeMaxTokens));
  } else {
    say(p.family_reason, "sm90-fp8: 8-bit inputs");
  }
  plan_fp8(p, desc, device, ov, facts);
  finish();
}

// The call's facts as the transposed problem sees them: A and B exchanged.
CallFacts swapped_facts(const CallFacts& facts) {
  CallFacts swapped = facts;
  swapped.a_aligned16 = facts.b_aligned16;
  swapped.b_aligned16 = facts.a_aligned16;
  for (int f = 0; f < kKernelFamilies; ++f) swapped.accepts[f] = facts.transposed_accepts[f];
  return swapped;
}

// A narrow output on many rows (LoRA's down projection, a router or a classifier head over
// a long batch): N columns of D on M >> N rows. sm90-gemm cuts it into ceil(M / 128)
// tiles of 128 x N, each streaming its rows of A over the whole K: a few dozen CTAs on a
// memory-bound problem (2048 x 128 x 14336: 16 tiles; split-K's slices did not reach
// cuBLAS either, docs/notes/swap-ab.md). Transposed, D^T = B^T A^T is N tokens on an
// M-row weight, which the decode kernels stream once over the whole GPU. The swap is taken
// where the decode rule takes the transposed problem and not the problem itself; never in
// batch-invariant mode (a decode plan's K split follows its weight's rows, here M).
bool plan_swapped_decode(LaunchPlan& p, const GemmDesc& desc, const DeviceInfo& device, const PlanOverrides& ov,
                         const CallFacts& facts) {
  if (ov.swap_ab == PlanOverrides::SwapAb::kNever || desc.batch_invariant || !transposable(desc)) return false;
  const GemmDesc t = transposed_problem(desc);
  const bool narrow = desc.n < desc.m && (prefers_decode(t.m, t.n, t.batch, device.sm_count) ||
                                          prefers_wide_decode(t.m, t.n, t.k, t.batch, device.sm_count));
  if (!narrow && ov.swap_ab != PlanOverrides::SwapAb::kAlways) return false;
  const CallFacts swapped = swapped_facts(facts);
  char why[kReasonChars];
  const KernelFamily f = pick_decode_family(t, device, swapped, why);
  if (f == KernelFamily::kNone) return false;
  LaunchPlan swapped_plan = p;  // p stays as it was unless the swap is taken
  plan_decode_family(swapped_plan, f, t, device, ov, swapped);
  if (swapped_plan.family == KernelFamily::kNone) return false;
  swapped_plan.swap_ab = true;
  swapped_plan.kernel_name = family_name(f);
  say(swapped_plan.family_reason, "swap-AB: N = %lld columns as tokens on A's %lld rows; %s",
      static_cast<long long>(desc.n), static_cast<long long>(desc.m), why);
  p = swapped_plan;
  return true;
}

// sm90-gemm's plan in the variant choice's units (plan.h, estimated_cost: waves x tile
// area / speed, a pair's dead row counted; stream-K's dealt-out waves and fixup).
double sm90_plan_cost(const LaunchPlan& p, const GemmDesc& desc, int sms) {
  if (p.variant == Sm90Variant::kTallStreamK) return stream_k_cost(desc.m, desc.n, desc.k, desc.batch, sms);
  return fit_variant_cost(p.variant, desc.m, desc.n, desc.batch, sms);
}

// sm90-gemm on D^T = B^T A^T: the weight's features on the tiles' 128 rows, the tokens on
// their N side. The tile widths (64-256 in steps of 32) then cut the tokens, so a token
// count that 128-row tiles round up badly may fit the widths better, and the features,
// usually a multiple of 256, make whole cluster pairs: 404 x 32768 x 6144 is 512 tiles of
// 128 x 256 either way, but transposed each covers 224 tokens instead of 256 of them, so the
// tiles hold 404 / 448 live tokens against 404 / 512 live rows. D^T is a column-major D,
// stored through TMA boxes of 64 rows x 32 columns (epilogue_store.cuh); so plain GEMMs
// with 16-bit inputs only (the fused epilogues' staged store into a column-major D is a
// strided store per output). Whole tiles both ways, no repacked operand and no row split;
// never in batch-invariant mode. Taken where the variant choice's cost falls by
// kTransposedMinSaving, and only past one row of 128-row tiles: up to 128 tokens both
// orientations hold all of them in one tile, so the swap only trades one variant for
// another, and the model's pair speeds misjudge that on long LM heads (96 x 152064 x 5120
// and 128 x 151936 x 2048: 8% promised, 1-3% slower; H200,
// docs/notes/transposed-sm90-gemm.md).
constexpr double kTransposedMinSaving = 0.05;
constexpr int64_t kTransposedMinTokens = 129;
bool plan_transposed_sm90(LaunchPlan& p, const GemmDesc& desc, const DeviceInfo& device, const PlanOverrides& ov,
                          const CallFacts& facts) {
  if (ov.swap_ab == PlanOverrides::SwapAb::kNever || desc.m < kTransposedMinTokens || desc.batch_invariant ||
      !transposable(desc) || !plain(desc) ||
      !facts.transposed_accepts[index(KernelFamily::kSm90Gemm)] || ov.sm90_variant >= 0 || ov.sm90_fit_only) {
    return false;
  }
  const auto whole_in_place = [](const LaunchPlan& q) {
    return q.family == KernelFamily::kSm90Gemm && !q.repack.a && !q.repack.b && !q.row_split() && q.k_splits == 1;
  };
  const GemmDesc t = transposed_problem(desc);
  if (!whole_in_place(p) || !tma_storable(t)) return false;
  LaunchPlan q;
  q.batch_invariant = desc.batch_invariant;
  q.main_rows = t.m;
  CallFacts facts_t = swapped_facts(facts);
  facts_t.d_by_column_boxes = true;
  plan_sm90(q, t, device, ov, facts_t);
  if (!whole_in_place(q)) return false;
  const double cost = sm90_plan_cost(p, desc, device.sm_count), cost_t = sm90_plan_cost(q, t, device.sm_count);
  if (cost_t >= (1.0 - kTransposedMinSaving) * cost) return false;
  say(q.family_reason, "sm90-gemm transposed: %lld tokens on %s's N side cost %.0f%% less than on %s's rows",
      static_cast<long long>(desc.m), variant_name(q.variant), 100.0 * (1.0 - cost_t / cost), variant_name(p.variant));
  q.swap_ab = true;
  p = q;
  return true;
}

}  // namespace

const char* family_name(KernelFamily family) {
  switch (family) {
    case KernelFamily::kSm90Gemm: return "sm90-gemm";
    case KernelFamily::kDecodeTma: return "sm90-decode";
    case KernelFamily::kDecodeLdg: return "sm90-decode-ldg";
    case KernelFamily::kDecodeR64: return "sm90-decode-r64";
    case KernelFamily::kDecodeLdgR64: return "sm90-decode-ldg-r64";
    case KernelFamily::kFallback: return "ladder-01-naive";
    case KernelFamily::kSm90Fp8: return "sm90-fp8";
    case KernelFamily::kSm90Fp8Decode: return "sm90-fp8-decode";
    default: return "none";
  }
}

GemmSchedule variant_schedule(Sm90Variant v) {
  return v == Sm90Variant::kPingPongPair ? GemmSchedule::kPingPong
         : v == Sm90Variant::kTallStreamK ? GemmSchedule::kStreamK
                                          : GemmSchedule::kCooperative;
}

const char* variant_name(Sm90Variant v) {
  switch (v) {
    case Sm90Variant::kWide: return "wide";
    case Sm90Variant::kNarrow: return "narrow";
    case Sm90Variant::kWidePair: return "wide-pair";
    case Sm90Variant::kPingPongPair: return "pingpong-pair";
    case Sm90Variant::kTallStreamK: return "tall-streamk";
    case Sm90Variant::kFitPair160: return "fit-pair-160";
    case Sm90Variant::kFitPair224: return "fit-pair-224";
    case Sm90Variant::kFitPair192: return "fit-pair-192";
    case Sm90Variant::kFitSingle160: return "fit-single-160";
    case Sm90Variant::kFitSingle192: return "fit-single-192";
    case Sm90Variant::kFitSingle224: return "fit-single-224";
    case Sm90Variant::kWidePairN: return "wide-pair-n";
    case Sm90Variant::kFitNarrow64: return "fit-narrow-64";
    case Sm90Variant::kFitNarrow96: return "fit-narrow-96";
    case Sm90Variant::kSliced96: return "sliced-96";
    case Sm90Variant::kSlicedPair128: return "sliced-pair-128";
    case Sm90Variant::kSlicedPair192: return "sliced-pair-192";
    case Sm90Variant::kFitNarrow80: return "fit-narrow-80";
    case Sm90Variant::kFitNarrow112: return "fit-narrow-112";
    case Sm90Variant::kFitSingle144: return "fit-single-144";
    case Sm90Variant::kFitSingle176: return "fit-single-176";
    case Sm90Variant::kFitSingle208: return "fit-single-208";
    case Sm90Variant::kFitSingle240: return "fit-single-240";
  }
  return "?";
}

// The stages each configuration is instantiated with: the configuration's own
// (sm90_configs.h, which the kernels instantiate).
int variant_stages(Sm90Variant v) {
  return with_variant_config(v, [](auto config) { return decltype(config)::kStages; });
}

DeviceInfo DeviceInfo::fallback(int sm_count) {
  DeviceInfo d;
  d.sm_count = sm_count;
  for (int c = 0; c < kDecodeConfigs; ++c) {
    for (int s = 1; s <= kMaxClusterSplit; ++s) d.decode_resident[c][s] = sm_count / s * s;
  }
  return d;
}

DeviceInfo DeviceInfo::h200() {
  DeviceInfo d;
  constexpr int kOnePerSm[kMaxClusterSplit + 1] = {0, 132, 132, 117, 120, 110, 102, 105, 120};
  for (int c = 0; c < kDecodeConfigs; ++c) {
    const auto id = static_cast<DecodeConfigId>(c);
    // Two CTAs per SM: sm90-decode's and sm90-fp8-decode's streaming tiles (8-64 tokens) and
    // sm90-decode-r64's 16-token one.
    const bool two_per_sm = (id >= DecodeConfigId::kTma8 && id <= DecodeConfigId::kTma64) ||
                            id == DecodeConfigId::kR64x16 || (id >= DecodeConfigId::kFp8x8 && id <= DecodeConfigId::kFp8x64);
    // (kFp8Block64 and kFp8Block128 run one per SM.)
    for (int s = 1; s <= kMaxClusterSplit; ++s) d.decode_resident[c][s] = kOnePerSm[s] * (two_per_sm ? 2 : 1);
  }
  return d;
}

DeviceInfo DeviceInfo::b200() {
  DeviceInfo d = fallback(148);
  d.cc_major = 10;
  d.smem_per_block_bytes = 227 * 1024;
  d.smem_per_sm_bytes = 228 * 1024;
  d.l2_bytes = 126LL * 1024 * 1024;
  d.sustained_clock_ghz = 1.85;
  d.dense_flops_per_sm_per_clock = 8192;
  d.hbm_bytes_per_second = 7.7e12;
  d.tmem_columns = 512;
  d.max_cluster_portable = 8;
  return d;
}

RepackNeeds repack_needs(const GemmDesc& desc, const CallFacts& facts) {
  RepackNeeds r;
  // Whole 128-byte lines per row (K = 4097's 16-byte-aligned rows touch five sectors per
  // 128-byte TMA read instead of four).
  r.packed_ld = (desc.k + 63) / 64 * 64;
  r.a = !readable_in_place(desc.a, Order::kRowMajor, desc.batch, facts.a_aligned16);
  r.b = !readable_in_place(desc.b, Order::kColMajor, desc.batch, facts.b_aligned16);
  if (r.a) r.a_bytes = align_up(static_cast<size_t>(desc.m * r.packed_ld * desc.batch) * 2);
  if (r.b) r.b_bytes = align_up(static_cast<size_t>(desc.n * r.packed_ld * desc.batch) * 2);
  return r;
}

size_t stream_k_workspace_bytes(int sm_count) {
  // The stream-K configuration: 256x128 tiles, two consumer warpgroups, one CTA per SM.
  return stream_k_flag_bytes(sm_count, 2) + stream_k_partial_bytes(sm_count, 256 * 128);
}

bool decode_family_accepts(KernelFamily family, const GemmDesc& desc) {
  // 8-bit inputs run on sm90-fp8, which takes every FP8 problem validation lets through,
  // and on sm90-fp8-decode where fp8_decode_refusal finds nothing.
  if (fp8_inputs(desc)) {
    if (family == KernelFamily::kSm90Fp8Decode) return fp8_decode_refusal(desc) == nullptr;
    return family == KernelFamily::kSm90Fp8 && desc.k > 0;
  }
  if (family == KernelFamily::kSm90Fp8 || family == KernelFamily::kSm90Fp8Decode) return false;
  if (family == KernelFamily::kFallback) return true;
  if (family == KernelFamily::kSm90Gemm) return desc.k > 0;
  if (family == KernelFamily::kNone) return false;
  if (desc.a.order != Order::kRowMajor || desc.b.order != Order::kColMajor) return false;
  if (desc.k == 0 || desc.a.ld % 8 != 0 || desc.b.ld % 8 != 0) return false;
  if (desc.batch > 1 && (desc.a.batch_stride % 8 != 0 || desc.b.batch_stride % 8 != 0 || desc.a.batch_stride == 0 ||
                         desc.b.batch_stride == 0)) {
    return false;
  }
  if (desc.k > (int64_t{1} << 30) || desc.m > (int64_t{1} << 30) || desc.n > (int64_t{1} << 30)) return false;
  if ((desc.m + 127) / 128 > 65535) return false;
  const bool rows64 = family == KernelFamily::kDecodeR64 || family == KernelFamily::kDecodeLdgR64;
  if (rows64 && desc.epilogue.activation == Activation::kSwiGLU) return false;
  const int rows = rows64 ? 64 : 128;
  const int widest = family == KernelFamily::kDecodeTma ? 256 : family == KernelFamily::kDecodeLdg ? 16
                     : family == KernelFamily::kDecodeR64 ? 64 : 32;
  return (desc.n + rows - 1) / rows <= 65535 && (desc.m + widest - 1) / widest * desc.batch <= 65535;
}

bool transposable(const GemmDesc& desc) {
  return !fp8_inputs(desc) && desc.scales == ScaleMode::kNone && desc.epilogue.activation != Activation::kSwiGLU;
}

namespace {
Order flipped(Order order) { return order == Order::kRowMajor ? Order::kColMajor : Order::kRowMajor; }
}  // namespace

GemmDesc transposed_problem(const GemmDesc& desc) {
  GemmDesc t = desc;
  t.m = desc.n;
  t.n = desc.m;
  t.a = desc.b;
  t.a.order = flipped(desc.b.order);
  t.b = desc.a;
  t.b.order = flipped(desc.a.order);
  t.c.order = flipped(desc.c.order);
  t.d.order = flipped(desc.d.order);
  t.epilogue.bias = desc.epilogue.bias == BiasMode::kPerColumn ? BiasMode::kPerRow
                    : desc.epilogue.bias == BiasMode::kPerRow  ? BiasMode::kPerColumn
                                                               : BiasMode::kNone;
  return t;
}

GemmArgs transposed_args(const GemmArgs& args) {
  GemmArgs t = args;
  t.a = args.b;
  t.b = args.a;
  t.scale_a = args.scale_b;
  t.scale_b = args.scale_a;
  return t;
}

// Where sm90-decode does not read the operands in place, no other kernel the mode runs can
// split K at every M: 1.
int batch_invariant_k_split(const GemmDesc& desc, const DeviceInfo& device, const CallFacts& facts) {
  if (!desc.batch_invariant || !facts.accepts[static_cast<int>(KernelFamily::kDecodeTma)]) return 1;
  return batch_invariant_split(desc.n, desc.k, desc.batch, device.sm_count,
                               [&](int s) { return device.resident(DecodeConfigId::kTma128, s); });
}

// Beyond 128 tokens, where sm90-gemm's tiles would be narrow and few: sm90-decode-r64's
// 64 weight rows x 128 tokens per CTA (swap-AB) do as much work per CTA as a 128 x 64
// tile in fewer shared-memory cycles per K step (tile_k_step_cycles), and need no M
// rounding beyond the last token tile, which is moved back to end at M. Both plans are
// costed in the same model, their waves times K steps times cycles per step, so its
// error in absolute time cancels; the token tiles are taken where they undercut
// sm90-gemm's plan (split-K and stream-K included) by kTokenTilesMinSaving.
constexpr double kTokenTilesMinSaving = 0.08;
// A split's cluster reduction and its longer epilogue, in K steps of the 64 x 128 tile.
constexpr double kTokenTilesSplitSteps = 6;

// sm90-gemm's planned main launch in that model: SM cycles of its waves.
double sm90_plan_cycles(const LaunchPlan& p, const GemmDesc& desc, int sms) {
  if (folds_k_slices(p.variant)) return folded_slices_cycles(p.variant, desc, p.k_splits, sms);
  const int64_t k = p.k_splits > 1 ? p.slice_k : desc.k;
  const int64_t tiles = variant_wave_plan(p.variant, desc.m, desc.n, desc.batch, sms).tiles * p.k_splits;
  // Stream-K deals its tiles' K steps out evenly: its waves are fractional.
  const double waves = p.variant == Sm90Variant::kTallStreamK ? static_cast<double>(tiles) / sms
                                                               : static_cast<double>(ceil_div(tiles, sms));
  const TileShape t = tile_shape(p.variant);
  return (waves * static_cast<double>(ceil_div(k, 64)) + kWaveFixedSteps) * tile_k_step_cycles(t.block_m, t.block_n);
}

// sm90-decode's 256-token tiles (the wide decode rule, prefers_wide_decode) in that model.
// Its 128 x 256 tiles run a K step ~1.4x slower than sm90-gemm's tiles of that size
// (decode_plan.h: 256 x 10240 x 8192 122 against 105-109 us), which the model, at both of
// its limits there, does not see: the factor is that measurement's.
constexpr double kWideDecodeStepFactor = 1.4;
// That factor is one shape's, so the 64-row tiles must save more against these tiles than
// against sm90-gemm's. Measured (H200, 129-256 tokens at K = 8192-11008, docs/notes/
// token-tiles-beyond-128.md): where the model promised 31-34% they ran 7-42% faster, where
// it promised 12% (2880 and 3584 features, whose 256-token tiles fill the GPU by their
// split) 5-7% slower.
constexpr double kWideDecodeMinSaving = 0.2;
// Nor where each of the wide tiles' CTAs runs 64 K steps or more: their cluster reduction
// (a 128 KiB fp32 partial per CTA) is then amortized, and the factor above, measured at
// 32-57 steps per CTA, overstates them. 256 x 2048 x 32768 (eight splits of 64 steps):
// the 256-token tiles 70.9 us, the 64-row ones 80.4.
constexpr int64_t kWideDecodeAmortizedSteps = 64;
// ... and only where the one 256-token tile is full to within a swizzle atom: the decode
// kernel moves a last token tile back to end at M only where M holds a whole tile, so below
// that its rows past M are TMA's zeros, which cost more than live rows (149 x 4096 x 12800:
// 64.8 us on the 256-token tiles, 46.6 on the 64-row ones; docs/notes/moved-last-box.md).
constexpr int64_t kWideDecodeFullTokens = kDecodeWideTokens - 7;

// A decode plan in that model: its waves of K steps (each step_factor times the model's
// cycles), plus each wave's fill and finish and a split's reduction.
double decode_plan_cycles(const DecodePlan& d, double step_factor = 1.0) {
  const double steps = static_cast<double>(ceil_div(d.k_tiles, d.splits)) * step_factor + kWaveFixedSteps +
                       (d.splits > 1 ? kTokenTilesSplitSteps : 0.0);
  return static_cast<double>(d.waves) * steps * tile_k_step_cycles(d.tile_rows, d.token_tile);
}

// Whether sm90-decode-r64's token tiles replace a plan that costs `other` SM cycles in the
// model (sm90-gemm's plan, or the wide decode rule's): beyond 128 tokens, on operands it
// reads in place (the caller rules out repacks and row splits), not with SwiGLU. In
// batch-invariant mode its plan is unsplit (plan_decode_launch), and so is the estimate;
// there it also replaces sm90-gemm's whole tiles at 65-128 tokens, where the mode has no
// K split to spread a narrow weight's few 128 x 128 tiles with (one 96- or 128-token tile,
// rows64_one_token_tile: twice their CTAs, each K step 384 cycles against 640 at 128
// tokens). In normal mode it also replaces sm90-decode's 96- and 128-token tiles at 65-128
// tokens where their K split costs more than twice the CTAs (the caller's rule).
bool prefers_rows64_token_tiles(double other, double min_saving, const char* other_name, const GemmDesc& desc,
                                const DeviceInfo& device, const CallFacts& facts, char* reason) {
  if (desc.m <= kDecodeAlwaysTokens || !facts.accepts[index(KernelFamily::kDecodeR64)]) return false;
  if (desc.epilogue.activation == Activation::kSwiGLU) return false;
  // Batch-invariant problems take it unsplit, where the weight is not split: its 64-wide
  // k-tiles sum each output's K in sm90-gemm's order.
  if (desc.batch_invariant && batch_invariant_k_split(desc, device, facts) > 1) return false;
  const DecodePlan plan = plan_decode_launch(KernelFamily::kDecodeR64, desc, device, 0);
  const double rows64 = decode_plan_cycles(plan);
  if (rows64 > (1.0 - min_saving) * other) return false;
  say(reason, "%lld tokens: 64 x %d swap-AB tiles, %.0fk SM cycles against %.0fk for %s",
      static_cast<long long>(desc.m), plan.token_tile, rows64 / 1000, other / 1000, other_name);
  return true;
}

// 65-128 tokens (normal mode): sm90-decode's 128 weight rows x 96 or 128 tokens split K
// across a cluster to fill the GPU; sm90-decode-r64's 64 rows x the same tokens make twice
// the CTAs for the same split. Both costed in the shared-memory model (a split's reduction
// included), the 64-row tiles taken where they save kTokenTilesMinSaving. Measured (H200,
// bf16, old and new alternated twice in one call; docs/planner.md): 1.085x geomean on the
// 10 sweep shapes it moved at 97-128 tokens (127 x 4096 x 4096 16.7 -> 13.6 us), 1.195x
// on 54 shapes of 512-3072 features at 65-96; slower on a 32-feature router (one tile
// either way, 5.2 -> 5.5 us) and on 65 x 2048 x 4096 (10.2 -> 11.1 us).
bool prefers_rows64_one_token_tile(const GemmDesc& desc, const DeviceInfo& device, const CallFacts& facts,
                                   char* reason) {
  if (desc.batch_invariant || desc.m <= kDecodeAlwaysTokens || desc.m > kDecodeMaxTokens) return false;
  const DecodePlan tma = plan_decode_launch(KernelFamily::kDecodeTma, desc, device, 0);
  return prefers_rows64_token_tiles(decode_plan_cycles(tma), kTokenTilesMinSaving, "sm90-decode's 128-row tiles", desc,
                                    device, facts, reason);
}

// Batch-invariant mode beyond 128 tokens, a split weight in `slices`: the cheapest in the
// shared-memory model of sm90-decode's cluster of `slices` (256-token tiles, at
// kWideDecodeStepFactor), sm90-decode-r64's 128-token tiles folding the slices in each CTA
// (narrow weights on many tokens: the tokens make the CTAs), and sm90-gemm's plan (its
// folded slices, or split-K's in memory).
enum class InvariantSplitPlan { kCluster, kRows64Folded, kGemm };
InvariantSplitPlan cheapest_invariant_split_plan(const GemmDesc& desc, const DeviceInfo& device,
                                                 const CallFacts& facts, int slices, double* cycles) {
  InvariantSplitPlan best = InvariantSplitPlan::kCluster;
  *cycles =
      decode_plan_cycles(plan_decode_launch(KernelFamily::kDecodeTma, desc, device, slices), kWideDecodeStepFactor);
  if (facts.accepts[index(KernelFamily::kDecodeR64)] && desc.epilogue.activation != Activation::kSwiGLU) {
    const DecodePlan d = plan_decode_launch(KernelFamily::kDecodeR64, desc, device, 1, slices);
    const double rows64 = decode_plan_cycles(d) + static_cast<double>(d.waves) * slices * kFoldedSliceDrainSteps *
                                                      tile_k_step_cycles(d.tile_rows, d.token_tile);
    if (rows64 < *cycles) best = InvariantSplitPlan::kRows64Folded, *cycles = rows64;
  }
  LaunchPlan gemm;
  plan_sm90(gemm, desc, device, PlanOverrides{}, facts);
  if (gemm.family != KernelFamily::kNone) {
    const double cost = invariant_gemm_cycles(gemm, desc, device.sm_count);
    if (cost < *cycles) best = InvariantSplitPlan::kGemm, *cycles = cost;
  }
  return best;
}

LaunchPlan plan(const GemmDesc& desc, const DeviceInfo& device, const PlanOverrides* overrides, const CallFacts* facts) {
  const PlanOverrides ov = overrides != nullptr ? *overrides : PlanOverrides{};
  CallFacts judged;
  if (facts == nullptr) {
    const bool swappable = transposable(desc);
    const GemmDesc t = swappable ? transposed_problem(desc) : desc;
    for (int f = 0; f < kKernelFamilies; ++f) {
      judged.accepts[f] = decode_family_accepts(static_cast<KernelFamily>(f), desc);
      judged.transposed_accepts[f] = swappable && decode_family_accepts(static_cast<KernelFamily>(f), t);
    }
    facts = &judged;
  }
  LaunchPlan p;
  p.batch_invariant = desc.batch_invariant;
  p.main_rows = desc.m;
  const auto ok = [&](KernelFamily f) { return f != KernelFamily::kNone && facts->accepts[index(f)]; };

  if (fp8_inputs(desc)) {
    plan_fp8_family(p, desc, device, ov, *facts);
    return p;
  }

  if (ov.family != KernelFamily::kNone) {
    if (!ok(ov.family)) {
      say(p.family_reason, "%s forced, but it does not take this problem", family_name(ov.family));
      return p;  // family kNone
    }
    say(p.family_reason, "%s forced", family_name(ov.family));
    if (ov.family == KernelFamily::kSm90Gemm && ov.swap_ab == PlanOverrides::SwapAb::kAlways) {
      // sm90-gemm on D^T = B^T A^T: the tokens on the tiles' N side.
      if (!transposable(desc) || !facts->transposed_accepts[index(KernelFamily::kSm90Gemm)]) {
        say(p.family_reason, "sm90-gemm forced with swap-AB, but it does not take the transposed problem");
        return p;  // family kNone
      }
      CallFacts facts_t = swapped_facts(*facts);
      facts_t.d_by_column_boxes = true;
      plan_sm90(p, transposed_problem(desc), device, ov, facts_t);
      p.swap_ab = true;
    } else if (ov.family == KernelFamily::kSm90Gemm) {
      plan_sm90(p, desc, device, ov, *facts);
    } else if (ov.family == KernelFamily::kFallback) {
      p.family = KernelFamily::kFallback;
    } else {
      plan_decode_family(p, ov.family, desc, device, ov, *facts);
    }
    p.kernel_name = family_name(p.family);
    return p;
  }

  // A decode kernel for few tokens (always in batch-invariant mode), sm90-gemm, then the
  // CUDA-core kernel, which takes every valid problem.
  // Batch-invariant problems take the fastest plan that cuts K where the weight's split
  // says (batch_invariant_k_split). Unsplit: decode up to 64 tokens, where it streams the weight
  // once, and sm90-gemm's whole tiles (no stream-K) beyond. Split: sm90-decode's cluster
  // up to 128 tokens; beyond, the cheaper in the shared-memory model of that cluster (its
  // 256-token tiles, kWideDecodeStepFactor) and sm90-gemm's folded slices
  // (plan_invariant_slices).
  const int invariant = batch_invariant_k_split(desc, device, *facts);
  bool decode = prefers_decode(desc.m, desc.n, desc.batch, device.sm_count) ||
                prefers_wide_decode(desc.m, desc.n, desc.k, desc.batch, device.sm_count);
  if (desc.batch_invariant) {
    // Unsplit at 96-128 tokens, where sm90-gemm's whole tiles would keep less than
    // kSm90MinWaveEfficiency of their wave busy (prefers_decode's rule): sm90-decode-r64's
    // 64-row tiles for each 64 tokens where they are all resident at once, four times the
    // CTAs of sm90-gemm's 128 x 128 tiles (kInvariantRows64MinTokens).
    const bool rows64 = desc.m >= kInvariantRows64MinTokens && desc.m <= kDecodeMaxTokens &&
                        facts->accepts[index(KernelFamily::kDecodeR64)] && invariant_rows64_resident(desc, device) &&
                        !sm90_fills_its_waves(desc.m, desc.n, desc.batch, device.sm_count);
    InvariantSplitPlan split_plan = InvariantSplitPlan::kCluster;
    double cycles = 0;
    if (invariant > 1 && desc.m > kDecodeMaxTokens) {
      split_plan = cheapest_invariant_split_plan(desc, device, *facts, invariant, &cycles);
    }
    if (split_plan == InvariantSplitPlan::kRows64Folded) {
      say(p.family_reason, "batch-invariant, the weight's %d K slices: 64 x 128 swap-AB tiles folding them, %.0fk SM "
          "cycles (the cheapest)", invariant, cycles / 1000);
      plan_decode_family(p, KernelFamily::kDecodeR64, desc, device, ov, *facts);
      p.kernel_name = family_name(p.family);
      return p;
    }
    decode = invariant > 1 ? split_plan == InvariantSplitPlan::kCluster : desc.m <= kDecodeAlwaysTokens || rows64;
  }
  if (!decode && plan_swapped_decode(p, desc, device, ov, *facts)) return p;
  // The wide decode rule's 256-token tiles against the 64-row ones, where the wide tiles'
  // CTAs run too few K steps each to amortize their reduction or their tile is partly dead.
  if (decode && desc.m > kDecodeMaxTokens) {
    const DecodePlan wide = plan_decode_launch(KernelFamily::kDecodeTma, desc, device, 0);
    if ((ceil_div(wide.k_tiles, wide.splits) < kWideDecodeAmortizedSteps || desc.m < kWideDecodeFullTokens) &&
        prefers_rows64_token_tiles(decode_plan_cycles(wide, kWideDecodeStepFactor), kWideDecodeMinSaving,
                                   "sm90-decode's 256-token tiles", desc, device, *facts, p.family_reason)) {
      plan_decode_family(p, KernelFamily::kDecodeR64, desc, device, ov, *facts);
      p.kernel_name = family_name(p.family);
      return p;
    }
  }
  if (decode) {
    const KernelFamily f = pick_decode_family(desc, device, *facts, p.family_reason);
    if (f != KernelFamily::kNone) {
      plan_decode_family(p, f, desc, device, ov, *facts);
      p.kernel_name = family_name(f);
      return p;
    }
  }
  if (ok(KernelFamily::kSm90Gemm)) {
    if (decode) say(p.family_reason, "sm90-gemm: no decode kernel reads these operands in place (it repacks them)");
    else if (desc.batch_invariant && invariant > 1) say(p.family_reason, "sm90-gemm: batch-invariant beyond %d tokens, in the weight's %d K slices", static_cast<int>(kDecodeMaxTokens), invariant);
    else if (desc.batch_invariant) say(p.family_reason, "sm90-gemm: batch-invariant beyond %d tokens, whole tiles (no stream-K)", static_cast<int>(kDecodeAlwaysTokens));
    else if (desc.m > kDecodeMaxTokens) say(p.family_reason, "sm90-gemm: more than %d tokens", static_cast<int>(kDecodeMaxTokens));
    else say(p.family_reason, "sm90-gemm: %lld tokens, its tiles fill >= %.0f%% of their waves and decode's make > 1 wave",
             static_cast<long long>(desc.m), 100 * kSm90MinWaveEfficiency);
    plan_sm90(p, desc, device, ov, *facts);
    if (decode) plan_decode_on_copies(p, desc, device, ov);
    LaunchPlan transposed = p;
    const bool swap = !decode && plan_transposed_sm90(transposed, desc, device, ov, *facts);
    const double gemm_cycles = swap ? sm90_plan_cycles(transposed, transposed_problem(desc), device.sm_count)
                                    : sm90_plan_cycles(p, desc, device.sm_count);
    char reason[kReasonChars];
    const bool in_place = !p.repack.a && !p.repack.b && !p.row_split();
    if (!decode && in_place &&
        prefers_rows64_token_tiles(gemm_cycles, kTokenTilesMinSaving, "sm90-gemm's plan", desc, device, *facts,
                                   reason)) {
      p = LaunchPlan{};
      p.batch_invariant = desc.batch_invariant;
      std::memcpy(p.family_reason, reason, kReasonChars);
      plan_decode_family(p, KernelFamily::kDecodeR64, desc, device, ov, *facts);
    } else if (swap) {
      p = transposed;
    }
    p.kernel_name = family_name(p.family);
    return p;
  }
  if (ok(KernelFamily::kFallback)) {
    say(p.family_reason, "CUDA-core fallback: no tensor-core kernel takes the problem (K = 0 or beyond the repack grid)");
    p.family = KernelFamily::kFallback;
    p.kernel_name = family_name(p.family);
    return p;
  }
  say(p.family_reason, "no kernel takes this problem");
  return p;
}

void print_plan(const LaunchPlan& p, const GemmDesc& desc, void* file) {
  auto* f = static_cast<FILE*>(file);
  std::fprintf(f, "plan %lld x %lld x %lld (batch %lld%s): %s\n", static_cast<long long>(desc.m),
               static_cast<long long>(desc.n), static_cast<long long>(desc.k), static_cast<long long>(desc.batch),
               desc.batch_invariant ? ", batch-invariant" : "", family_name(p.family));
  std::fprintf(f, "  kernel:    %s\n", p.family_reason);
  if (p.swap_ab) {
    std::fprintf(f, "  swap-AB:   runs D^T = B^T A^T (%lld x %lld x %lld): B's columns are the tokens\n",
                 static_cast<long long>(desc.n), static_cast<long long>(desc.m), static_cast<long long>(desc.k));
  }
  if (p.family == KernelFamily::kSm90Gemm) {
    if (p.main_rows == 0) {
      std::fprintf(f, "  tile:      none: the decode kernel below takes every row\n");
    } else {
      std::fprintf(f, "  tile:      %dx%d, cluster %dx%d, %d stages, %s schedule - %s\n", p.tile.block_m, p.tile.block_n,
                   p.cluster.m, p.cluster.n, p.stages,
                   p.schedule == GemmSchedule::kPingPong ? "ping-pong"
                   : p.schedule == GemmSchedule::kStreamK ? "stream-K"
                                                          : "cooperative",
                   p.tile_reason);
    }
    std::fprintf(f, "  repack:    A %s, B %s (%zu workspace bytes in all)\n", p.repack.a ? "copied" : "in place",
                 p.repack.b ? "copied" : "in place", p.workspace_bytes);
  } else if (p.family == KernelFamily::kSm90Fp8) {
    std::fprintf(f, "  tile:      %dx%d, cluster %dx%d, %d stages, scales %s - %s\n", p.tile.block_m, p.tile.block_n,
                 p.cluster.m, p.cluster.n, p.stages, scale_mode_name(desc.scales), p.tile_reason);
    if (p.k_splits > 1) std::fprintf(f, "  workspace: %zu bytes (the slices' fp32 partials)\n", p.workspace_bytes);
  } else if (p.family == KernelFamily::kSm90Fp8Decode) {
    std::fprintf(f, "  tile:      %s, scales %s\n", p.tile_reason, scale_mode_name(desc.scales));
  } else if (p.family != KernelFamily::kNone && p.family != KernelFamily::kFallback) {
    std::fprintf(f, "  tile:      %s\n", p.tile_reason);
  }
  if (p.family != KernelFamily::kNone && p.family != KernelFamily::kFallback) {
    std::fprintf(f, "  K split:   %s\n", p.split_reason);
    std::fprintf(f, "  row split: %s\n", p.row_split_reason);
    if (p.row_split()) {
      std::fprintf(f, "  tail:      %s, %d-token tile, K split %d (%lld CTAs)\n", family_name(p.tail_family),
                   p.tail.token_tile, p.tail.splits, static_cast<long long>(p.tail.ctas));
    }
  }
}

}  // namespace anvil::detail
