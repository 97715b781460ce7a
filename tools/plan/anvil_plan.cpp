// anvil-plan: the resource budget of one GEMM shape, candidate by candidate, and what the
// planner picks and why. Host arithmetic only: it needs no GPU.
//
//   anvil-plan M N K [--dtype bf16|fp16|e4m3] [--scales none|tensor|rowcol|block]
//              [--out-dtype bf16|fp16|fp32] [--batch B]
//              [--epilogue none|bias|relu|gelu|silu|bias-gelu|swiglu] [--batch-invariant] [--sm100]
//              [--tuning-cache FILE]
//
// For each sm90-gemm configuration: shared memory per stage and in total, the stages that
// would fit, registers (the setmaxnreg split), CTAs per SM, tiles, waves and wave
// efficiency, and the planner's cost estimate; for each decode kernel, its grid and K
// split; for e4m3, sm90-fp8's configurations and its split-K candidates. Then the
// problem's arithmetic intensity and its roofline floor at the clock the card sustains,
// and the plan. Where a tuning cache names the problem - the built-in table, or FILE
// (anvil-tune's output) - the plan the library runs instead on that cache's GPU
// (docs/tuning.md). --sm100 prints Blackwell's budget for the shape instead.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/sm100/budget.h"
#include "kernels/sm90/sm90_configs.h"
#include "kernels/sm90/decode_plan.h"
#include "kernels/sm90/fp8_decode_plan.h"
#include "kernels/sm90/plan.h"
#include "kernels/sm90/row_split.h"
#include "plan/planner.h"
#if ANVIL_PLAN_TUNED
#include <fstream>
#include <sstream>
#include <vector>

#include "plan/tuning.h"
#endif

namespace anvil::detail {
namespace {

struct Options {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  DataType in = DataType::kBF16, out = DataType::kBF16;
  std::string epilogue = "none";
  bool batch_invariant = false;
  bool sm100 = false;
  ScaleMode scales = ScaleMode::kTensor;  // e4m3 inputs only
  std::string tuning_cache;               // --tuning-cache FILE
};

[[noreturn]] void usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "anvil-plan: %s\n", why);
  std::fprintf(stderr,
               "usage: anvil-plan M N K [--dtype bf16|fp16|e4m3] [--scales none|tensor|rowcol|block]\n"
               "                  [--out-dtype bf16|fp16|fp32] [--batch B]\n"
               "                  [--epilogue none|bias|relu|gelu|silu|bias-gelu|swiglu] [--batch-invariant] [--sm100]\n"
               "                  [--tuning-cache FILE]\n");
  std::exit(2);
}

int64_t parse_size(const char* text, const char* what) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > (int64_t{1} << 31)) {
    std::fprintf(stderr, "anvil-plan: %s must be a whole number from 1 to 2^31, got '%s'\n", what, text);
    std::exit(2);
  }
  return v;
}

DataType parse_dtype(const char* text) {
  if (std::strcmp(text, "bf16") == 0) return DataType::kBF16;
  if (std::strcmp(text, "fp16") == 0 || std::strcmp(text, "f16") == 0) return DataType::kF16;
  if (std::strcmp(text, "fp32") == 0 || std::strcmp(text, "f32") == 0) return DataType::kF32;
  if (std::strcmp(text, "e4m3") == 0) return DataType::kE4M3;
  usage("unknown dtype");
}

Options parse(int argc, char** argv) {
  Options o;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage("an option lacks its value");
      return argv[++i];
    };
    if (std::strcmp(a, "--dtype") == 0) {
      o.in = parse_dtype(value());
      if (o.in == DataType::kF32) usage("inputs are bf16, fp16 or e4m3");
      if (o.out != DataType::kF32) o.out = o.in == DataType::kE4M3 ? DataType::kBF16 : o.in;
    } else if (std::strcmp(a, "--scales") == 0) {
      const std::string v = value();
      o.scales = v == "tensor" ? ScaleMode::kTensor : v == "rowcol" ? ScaleMode::kRowColumn
                 : v == "block" ? ScaleMode::kBlock128 : v == "none" ? ScaleMode::kNone : ScaleMode(-1);
      if (o.scales == ScaleMode(-1)) usage("unknown scale mode");
    } else if (std::strcmp(a, "--out-dtype") == 0) {
      o.out = parse_dtype(value());
      if (o.out == DataType::kE4M3) usage("e4m3 is an input type only");
    } else if (std::strcmp(a, "--batch") == 0) {
      o.batch = parse_size(value(), "--batch");
    } else if (std::strcmp(a, "--epilogue") == 0) {
      o.epilogue = value();
    } else if (std::strcmp(a, "--batch-invariant") == 0) {
      o.batch_invariant = true;
    } else if (std::strcmp(a, "--sm100") == 0) {
      o.sm100 = true;
    } else if (std::strcmp(a, "--tuning-cache") == 0) {
      o.tuning_cache = value();
    } else if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
      usage(nullptr);
    } else if (a[0] == '-') {
      usage("unknown option");
    } else {
      const char* names[] = {"M", "N", "K"};
      if (positional >= 3) usage("more than three sizes");
      int64_t* dims[] = {&o.m, &o.n, &o.k};
      *dims[positional] = parse_size(a, names[positional]);
      ++positional;
    }
  }
  if (positional != 3) usage("M, N and K are required");
  return o;
}

GemmDesc describe(const Options& o) {
  GemmDesc d;
  d.m = o.m, d.n = o.n, d.k = o.k, d.batch = o.batch;
  d.a = MatrixLayout{o.in, Order::kRowMajor, o.k, o.m * o.k};
  d.b = MatrixLayout{o.in, Order::kColMajor, o.k, o.n * o.k};
  d.c = MatrixLayout{o.out, Order::kRowMajor, o.n, o.m * o.n};
  d.d = d.c;
  d.batch_invariant = o.batch_invariant;
  if (o.in == DataType::kE4M3) d.scales = o.scales;
  const std::string& e = o.epilogue;
  if (e == "bias" || e == "bias-gelu") d.epilogue.bias = BiasMode::kPerColumn;
  if (e == "relu") d.epilogue.activation = Activation::kReLU;
  if (e == "gelu" || e == "bias-gelu") d.epilogue.activation = Activation::kGeluTanh;
  if (e == "silu") d.epilogue.activation = Activation::kSiLU;
  if (e == "swiglu") d.epilogue.activation = Activation::kSwiGLU;
  if (e != "none" && e != "bias" && e != "bias-gelu" && e != "relu" && e != "gelu" && e != "silu" && e != "swiglu") {
    usage("unknown epilogue");
  }
  return d;
}

// One sm90-gemm configuration's resources, from its KernelConfig: the same template
// arguments gemm_sm90.cu and fit_widths.h instantiate for the variant.
struct Resources {
  int block_m, block_n, consumers, stages, cluster_ctas;
  int stage_bytes;     // A + B tiles of one 64-wide K step
  int epilogue_bytes;  // TMA-store buffer or the staged epilogue's chunks
  int smem_bytes;      // the kernel's dynamic shared memory (stages, epilogue, barriers, slack)
  int threads;
  int producer_registers, consumer_registers;
};

constexpr int align1024(int bytes) { return (bytes + 1023) / 1024 * 1024; }

template <class C>
Resources resources_of() {
  Resources r;
  r.block_m = C::kBlockM, r.block_n = C::kBlockN, r.consumers = C::kConsumers, r.stages = C::kStages;
  r.cluster_ctas = C::kClusterCtas;
  r.stage_bytes = C::kStageBytesA + C::kStageBytesB;
  r.epilogue_bytes = C::kEpilogueBytes;
  // SharedStorage (gemm_kernel.cuh): 1024-aligned stage arrays and epilogue buffer, two
  // barriers per stage, one per consumer, plus 1 KiB of alignment slack.
  r.smem_bytes = align1024(C::kStages * C::kStageBytesA) + align1024(C::kStages * C::kStageBytesB) +
                 align1024(C::kEpilogueBytes + 16 * C::kStages + 8 * C::kConsumers) + 1024;
  r.threads = C::kThreads;
  r.producer_registers = C::kProducerRegisters;
  r.consumer_registers = C::kConsumerRegisters;
  return r;
}

Resources variant_resources(Sm90Variant v) {
  return with_variant_config(v, [](auto config) { return resources_of<decltype(config)>(); });
}

Resources fp8_variant_resources(Fp8Variant v) {
  return with_fp8_variant_config(v, [](auto config) { return resources_of<decltype(config)>(); });
}

double problem_flops(const GemmDesc& d) { return 2.0 * d.m * d.n * d.k * d.batch; }
// The least DRAM traffic: A and B read once (in_bytes per element), D written once.
double problem_bytes(const GemmDesc& d, int in_bytes, int out_bytes) {
  return (in_bytes * (static_cast<double>(d.m) * d.k + static_cast<double>(d.n) * d.k) +
          static_cast<double>(out_bytes) * d.m * d.n) * d.batch;
}

// FP8 wgmma runs twice the dense 16-bit rate per SM: the roofline's compute floor takes
// peak_rate_factor = 2 for 8-bit inputs.
void print_roofline(const GemmDesc& d, const DeviceInfo& dev, int in_bytes, int out_bytes, double peak_rate_factor) {
  const double flops = problem_flops(d), bytes = problem_bytes(d, in_bytes, out_bytes);
  const double peak = dev.peak_flops() * peak_rate_factor;
  const double intensity = flops / bytes;
  const double ridge = peak / dev.hbm_bytes_per_second;
  const double compute_us = flops / peak * 1e6, memory_us = bytes / dev.hbm_bytes_per_second * 1e6;
  std::printf("roofline: %.3g GFLOP, %.3g MB moved at least; intensity %.1f FLOP/B (ridge %.0f): %s-bound\n",
              flops * 1e-9, bytes * 1e-6, intensity, ridge, intensity >= ridge ? "compute" : "memory");
  std::printf("  floor %.1f us (compute %.1f us at %.0f TFLOP/s, memory %.1f us at %.2f TB/s)\n",
              compute_us > memory_us ? compute_us : memory_us, compute_us, peak * 1e-12, memory_us,
              dev.hbm_bytes_per_second * 1e-12);
}

// Shared memory, stages that fit, registers and CTAs per SM of one configuration.
struct Budget {
  int stages_fit = 0, per_sm = 0;
};
Budget budget_of(const Resources& r, const DeviceInfo& dev) {
  Budget b;
  const int fixed = r.smem_bytes - r.stages * r.stage_bytes;
  b.stages_fit = (dev.smem_per_block_bytes - fixed) / r.stage_bytes;
  const int regs = 128 * r.producer_registers + 128 * r.consumers * r.consumer_registers;
  const int by_smem = dev.smem_per_sm_bytes / (r.smem_bytes + 1024);  // 1 KiB reserved per CTA
  const int by_regs = dev.registers_per_sm / regs;
  b.per_sm = by_smem < by_regs ? by_smem : by_regs;
  return b;
}

// sm90-fp8's configurations (fp8_plan.h): the same budget, with the planner's relative
// cost (waves x tile area / speed, the waves counting a pair's tiles past the edge) and
// whether the configuration runs this problem's inputs and scales at all.
void print_fp8_candidates(const GemmDesc& d, const DeviceInfo& dev, const LaunchPlan& chosen) {
  std::printf("\nsm90-fp8 candidates (128-wide K stages of 8-bit values; cost: waves x tile area / speed, "
              "relative)\n");
  std::printf("  %-18s %7s %5s %9s %6s %9s %9s %11s %7s %7s %7s %6s %8s %s\n", "variant", "tile", "clus", "stage KiB",
              "stages", "fit", "smem KiB", "regs p/c", "CTA/SM", "tiles", "waves", "eff", "cost", "");
  for (int i = 0; i < kFp8Variants; ++i) {
    const Fp8Variant v = static_cast<Fp8Variant>(i);
    const Resources r = fp8_variant_resources(v);
    const Budget b = budget_of(r, dev);
    const ClusterShape c = fp8_cluster_shape(v);
    const WavePlan w = wave_plan(d.m, d.n, d.batch, fp8_tile_shape(v), dev.sm_count, c.m, c.n);
    const bool runs = fp8_variant_runs(v, d.a.dtype, d.b.dtype, d.scales, d.epilogue.activation == Activation::kSwiGLU);
    char tile[16], cluster[8], regtext[16], cost[16];
    std::snprintf(tile, sizeof(tile), "%dx%d", r.block_m, r.block_n);
    std::snprintf(cluster, sizeof(cluster), "%dx%d", c.m, c.n);
    std::snprintf(regtext, sizeof(regtext), "%d/%d", r.producer_registers, r.consumer_registers);
    std::snprintf(cost, sizeof(cost), "%.0f", fp8_variant_cost(v, d.m, d.n, d.batch, dev.sm_count) / 1024.0);
    const bool picked = chosen.family == KernelFamily::kSm90Fp8 && chosen.fp8_variant == v;
    std::printf("  %-18s %7s %5s %9.1f %6d %9d %9.1f %11s %7d %7lld %7.2f %5.0f%% %8s %s\n", fp8_variant_name(v), tile,
                cluster, r.stage_bytes / 1024.0, r.stages, b.stages_fit, r.smem_bytes / 1024.0, regtext, b.per_sm,
                static_cast<long long>(w.tiles), w.waves, 100 * w.efficiency, runs ? cost : "-",
                picked ? "<- planned" : runs ? "" : "(does not run these inputs or scales)");
  }
}

// sm90-fp8's split-K (fp8_plan.h): the whole tiles' estimate, then every slice count K
// divides into whole 128-wide blocks, with the slices' configuration, CTAs and estimate.
void print_fp8_split_k(const GemmDesc& d, const DeviceInfo& dev, const LaunchPlan& chosen) {
  const int sms = dev.sm_count;
  std::printf("\nsm90-fp8 split-K (slices of whole 128-wide K blocks, at least %lld; est: fp8_plan.h's model, us)\n",
              static_cast<long long>(kFp8SplitKMinSliceBlocks));
  if (d.batch != 1 || d.k % kFp8KBlock != 0) {
    std::printf("  none possible: %s\n", d.batch != 1 ? "a strided batch (the slices are the batch)"
                                                     : "K is not a multiple of 128");
    return;
  }
  const Fp8Variant whole = choose_fp8_variant(d.m, d.n, 1, sms, d.a.dtype, d.b.dtype, d.scales);
  const int64_t whole_tiles = fp8_whole_tiles(d.m, d.n, sms, d.a.dtype, d.b.dtype, d.scales);
  const double whole_us = fp8_whole_tiles_us(d.m, d.n, d.k, sms, d.a.dtype, d.b.dtype, d.scales);
  std::printf("  whole tiles: %s, %lld tiles (%.0f%% of the SMs; split-K only at <= %.0f%%), est %.1f us; a split "
              "must save %.0f%%\n",
              fp8_variant_name(whole), static_cast<long long>(whole_tiles), 100.0 * whole_tiles / sms,
              100 * kFp8SplitKMaxTileFill, whole_us, 100 * kFp8SplitKMinSaving);
  std::printf("  %7s %9s %7s %-18s %7s %9s %8s\n", "slices", "slice K", "blocks", "variant", "CTAs", "partials", "est us");
  for (int s = 2; s <= kSplitKMaxSlices; ++s) {
    if (!fp8_split_k_possible(d.k, s)) continue;
    const Fp8Variant v = choose_fp8_variant(d.m, d.n, s, sms, d.a.dtype, d.b.dtype, d.scales);
    const ClusterShape c = fp8_cluster_shape(v);
    const int64_t ctas = wave_plan(d.m, d.n, s, fp8_tile_shape(v), sms, c.m, c.n).tiles;
    const double bytes = static_cast<double>(split_k_workspace_bytes(SplitKPlan{s, d.k / s}, d.m, d.n));
    const bool picked = chosen.family == KernelFamily::kSm90Fp8 && chosen.k_splits == s;
    std::printf("  %7d %9lld %7lld %-18s %7lld %7.1fMB %8.1f %s\n", s, static_cast<long long>(d.k / s),
                static_cast<long long>(d.k / s / kFp8KBlock), fp8_variant_name(v), static_cast<long long>(ctas),
                bytes * 1e-6, fp8_split_k_estimated_us(d.m, d.n, d.k, s, sms, d.a.dtype, d.b.dtype, d.scales),
                picked ? "<- planned" : "");
  }
}

// sm90-fp8-decode (fp8_decode_plan.h): the plan it would launch, forced, and both
// estimates the planner compares.
void print_fp8_decode(const GemmDesc& d, const DeviceInfo& dev, const LaunchPlan& chosen) {
  std::printf("\nsm90-fp8-decode (swap-AB, 128 weight rows x token tile, 128-wide K stages; est: fp8_decode_plan.h, us)\n");
  if (const char* why = fp8_decode_refusal(d)) {
    std::printf("  does not run this problem: %s\n", why);
    return;
  }
  PlanOverrides forced;
  forced.family = KernelFamily::kSm90Fp8Decode;
  const LaunchPlan p = plan(d, dev, &forced);
  const DecodePlan& dp = p.decode;
  const double decode_us = fp8_decode_estimated_us(int64_t{dp.feature_tiles} * dp.token_tiles * dp.batch, dp.k_tiles,
                                                   dp.splits, dev.resident(dp.config, dp.splits), dp.token_tile);
  const double gemm_us = fp8_gemm_estimated_us(d.m, d.n, d.k, d.batch, dev.sm_count, d.a.dtype, d.b.dtype, d.scales);
  std::printf("  %d-token tile, %d x %d tiles, K split %d: %lld CTAs in %lld wave(s), est %.1f us against sm90-fp8's "
              "%.1f%s\n",
              dp.token_tile, dp.feature_tiles, dp.token_tiles * dp.batch, dp.splits, static_cast<long long>(dp.ctas),
              static_cast<long long>(dp.waves), decode_us, gemm_us,
              chosen.family == KernelFamily::kSm90Fp8Decode ? "  <- planned" : "");
  if (!fp8_decode_considered(d.m, d.n, d.k, d.batch, dev.sm_count, d.a.dtype, d.b.dtype, d.scales)) {
    const char* why = d.m > kFp8DecodeSplitKMaxTokens   ? "more tokens than the decode kernel is weighed at"
                      : d.scales == ScaleMode::kBlock128 ? "block scales beyond 128 tokens keep sm90-fp8"
                                                         : "beyond 128 tokens only where sm90-fp8 would split K";
    std::printf("  not weighed: %s (fp8_decode_considered)\n", why);
  }
}

// transposed: d is the transposed problem D^T = B^T A^T (planner.cpp, plan_transposed_sm90),
// the weight's rows on the tiles' 128 rows and the tokens on their N side.
void print_gemm_candidates(const GemmDesc& d, const DeviceInfo& dev, const LaunchPlan& chosen, bool transposed) {
  const int sms = dev.sm_count;
  const double k_steps = static_cast<double>(ceil_div(d.k, 64));
  if (transposed) {
    std::printf("\nsm90-gemm candidates on D^T = B^T A^T (%lld weight rows x %lld tokens: the tokens on the tiles' N side)\n",
                static_cast<long long>(d.m), static_cast<long long>(d.n));
  } else {
    std::printf("\nsm90-gemm candidates (setmaxnreg: producer / consumer registers per thread; est: the planner's cost model)\n");
  }
  std::printf("  (step cyc: SM cycles per 64-wide K step in the shared-memory model, tile_k_step_cycles)\n");
  std::printf("  %-15s %7s %5s %9s %6s %9s %9s %11s %7s %7s %7s %6s %8s %6s %9s\n", "variant", "tile", "clus",
              "stage KiB", "stages", "fit", "smem KiB", "regs p/c", "CTA/SM", "tiles", "waves", "eff", "step cyc",
              "est us", "");
  constexpr Sm90Variant kAll[] = {
      Sm90Variant::kWidePair,      Sm90Variant::kPingPongPair,  Sm90Variant::kWidePairN,     Sm90Variant::kWide,
      Sm90Variant::kNarrow,        Sm90Variant::kFitPair160,    Sm90Variant::kFitPair192,    Sm90Variant::kFitPair224,
      Sm90Variant::kFitSingle144,  Sm90Variant::kFitSingle160,  Sm90Variant::kFitSingle176,  Sm90Variant::kFitSingle192,
      Sm90Variant::kFitSingle208,  Sm90Variant::kFitSingle224,  Sm90Variant::kFitSingle240,  Sm90Variant::kFitNarrow112,
      Sm90Variant::kFitNarrow96,   Sm90Variant::kFitNarrow80,   Sm90Variant::kFitNarrow64,   Sm90Variant::kTallStreamK,
      Sm90Variant::kSliced96,      Sm90Variant::kSlicedPair128, Sm90Variant::kSlicedPair192};
  for (Sm90Variant v : kAll) {
    // The folded-slice configurations only for a weight batch-invariant mode splits.
    if (folds_k_slices(v) && !(d.batch_invariant && chosen.k_splits > 1)) continue;
    const Resources r = variant_resources(v);
    const Budget b = budget_of(r, dev);
    const int stages_fit = b.stages_fit, per_sm = b.per_sm;
    const WavePlan w = v == Sm90Variant::kTallStreamK ? wave_plan(d.m, d.n, d.batch, tile_shape(v), sms)
                                                      : variant_wave_plan(v, d.m, d.n, d.batch, sms);
    const double units = v == Sm90Variant::kTallStreamK ? stream_k_cost(d.m, d.n, d.k, d.batch, sms)
                                                        : variant_cost(v, d.m, d.n, d.batch, sms);
    const double est_us = units / (128.0 * 256.0) * k_steps * kPairKStepMicroseconds;
    char tile[16], cluster[8], regtext[16], est[16];
    std::snprintf(tile, sizeof(tile), "%dx%d", r.block_m, r.block_n);
    const ClusterShape c = cluster_shape(v);
    std::snprintf(cluster, sizeof(cluster), "%dx%d", c.m, c.n);
    std::snprintf(regtext, sizeof(regtext), "%d/%d", r.producer_registers, r.consumer_registers);
    if (std::isfinite(est_us)) std::snprintf(est, sizeof(est), "%.1f", est_us);
    else std::snprintf(est, sizeof(est), "-");
    const bool picked = chosen.family == KernelFamily::kSm90Gemm && chosen.variant == v && chosen.swap_ab == transposed;
    std::printf("  %-15s %7s %5s %9.1f %6d %9d %9.1f %11s %7d %7lld %7.2f %5.0f%% %8.0f %6s %s\n", variant_name(v), tile,
                cluster, r.stage_bytes / 1024.0, r.stages, stages_fit, r.smem_bytes / 1024.0, regtext, per_sm,
                static_cast<long long>(w.tiles), w.waves, 100 * w.efficiency, tile_k_step_cycles(r.block_m, r.block_n),
                est, picked ? "<- planned" : "");
  }
}

// Beyond 256 tokens only sm90-decode-r64's 128-token tiles are a candidate (the others'
// token tiles would each stream the weight again).
void print_decode_candidates(const GemmDesc& d, const DeviceInfo& dev, const LaunchPlan& chosen) {
  std::printf("\ndecode candidates (swap-AB: weight rows x tokens per CTA; the weight streamed once per token tile)\n");
  std::printf("  %-20s %9s %7s %7s %7s %7s %8s %10s\n", "kernel", "tile", "splits", "CTAs", "waves", "k-tiles", "step cyc",
              "stream us");
  constexpr KernelFamily kDecode[] = {KernelFamily::kDecodeLdgR64, KernelFamily::kDecodeLdg, KernelFamily::kDecodeR64,
                                      KernelFamily::kDecodeTma};
  for (KernelFamily f : kDecode) {
    if (d.m > 256 && f != KernelFamily::kDecodeR64) continue;
    PlanOverrides o;
    o.family = f;
    const LaunchPlan p = plan(d, dev, &o);
    if (p.family == KernelFamily::kNone) {
      std::printf("  %-20s does not take this problem\n", family_name(f));
      continue;
    }
    const double stream_us =
        2.0 * d.n * d.k * d.batch * p.decode.token_tiles / dev.hbm_bytes_per_second * 1e6;
    char tile[16];
    std::snprintf(tile, sizeof(tile), "%dx%d", p.decode.tile_rows, p.decode.token_tile);
    std::printf("  %-20s %9s %7d %7lld %7lld %7d %8.0f %10.1f %s\n", family_name(f), tile, p.decode.splits,
                static_cast<long long>(p.decode.ctas), static_cast<long long>(p.decode.waves), p.decode.k_tiles,
                tile_k_step_cycles(p.decode.tile_rows, p.decode.token_tile), stream_us,
                chosen.family == f ? "<- planned" : "");
  }
}

// Blackwell (sm_100): the budget of 2-CTA 256xN tiles for the shape (the arithmetic a
// design starts from), then what the built pair kernel takes of it (budget.h).
void print_sm100_budget(const GemmDesc& d, int out_bytes) {
  const DeviceInfo b = DeviceInfo::b200();
  std::printf("B200 budget (sm_100): %d SMs, %d KiB shared memory per SM (%d per CTA), %d TMEM columns x 128 lanes per SM,\n"
              "  clusters of 2, 4 or %d CTAs (portable; 16 opt-in), %.0f TFLOP/s dense at %.2f GHz, %.1f TB/s\n",
              b.sm_count, b.smem_per_sm_bytes / 1024, b.smem_per_block_bytes / 1024, b.tmem_columns,
              b.max_cluster_portable, b.peak_flops() * 1e-12, b.sustained_clock_ghz, b.hbm_bytes_per_second * 1e-12);
  print_roofline(d, b, 2, out_bytes, 1.0);
  std::printf("\n2-CTA tiles (tcgen05.mma.cta_group::2: each CTA holds 128 rows of A and half of B per 64-wide K step)\n");
  std::printf("  %-9s %9s %9s %9s %7s %11s %7s %7s %6s\n", "tile", "A KiB/CTA", "B KiB/CTA", "stage KiB", "stages",
              "TMEM cols", "accums", "waves", "eff");
  const int pairs = b.sm_count / 2;
  for (int tile_n : {64, 128, 192, 256}) {
    const int a_bytes = 128 * 64 * 2, b_bytes = tile_n / 2 * 64 * 2;
    const int stage = a_bytes + b_bytes;
    // The output leaves through a TMA-store buffer of 128 x 64 halves, two rounds in flight.
    const int epilogue = 2 * 128 * 64 * 2;
    const int stages = (b.smem_per_block_bytes - epilogue - 1024) / stage;
    const int accumulators = b.tmem_columns / tile_n;  // fp32 accumulator: one column per output column
    const int64_t tiles = ceil_div(d.m, 256) * ceil_div(d.n, tile_n) * d.batch;
    const int64_t turns = ceil_div(tiles, pairs);
    const double eff = turns > 0 ? static_cast<double>(tiles) / static_cast<double>(turns * pairs) : 0;
    char tile[16];
    std::snprintf(tile, sizeof(tile), "256x%d", tile_n);
    std::printf("  %-9s %9.1f %9.1f %9.1f %7d %11d %7d %7.2f %5.0f%%\n", tile, a_bytes / 1024.0, b_bytes / 1024.0,
                stage / 1024.0, stages, tile_n, accumulators, static_cast<double>(tiles) / pairs, 100 * eff);
  }
  namespace budget = anvil::sm100::budget;
  const int stage_bytes = budget::pair_stage_bytes_per_cta(budget::kPairTileM, budget::kPairTileN, budget::kTileK, 2);
  std::printf("\nsm100-gemm (built; never run): 256x256 per pair, %d stages x %d KiB + %d KiB epilogue staging + 2 KiB "
              "= %d KiB per CTA; %d accumulators x %d TMEM columns\n",
              budget::kPairGemmStages, stage_bytes / 1024, budget::kEpilogueStagingBytes / 1024,
              budget::pair_gemm_smem_bytes(budget::kPairGemmStages) / 1024, budget::kAccumulatorBuffers,
              budget::kAccumulatorColumns);
}

#if ANVIL_PLAN_TUNED
// The plans tuning caches make the library run instead of the planner's (plan_with_tuning,
// as gemm() applies them), on each cache's GPU with this model's SM count: the built-in
// table's, then those of --tuning-cache FILE, which is read and checked before anything is
// printed (a loaded cache comes first where both name the problem on one GPU).
class TunedPlans {
 public:
  bool read(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    Diagnostic diag;
    if (!file || parse_tuning_cache(text.str(), &user_, &diag) != Status::kSuccess) {
      std::fprintf(stderr, "anvil-plan: %s: %s\n", path.c_str(), file ? diag.message : "cannot be opened");
      return false;
    }
    path_ = path;
    return true;
  }

  void print(const GemmDesc& d, const DeviceInfo& dev) {
    for (const TuningCache& c : builtin_tuning_caches()) print_for(d, dev, c.device, "the built-in table");
    if (path_.empty()) return;
    const DeviceIdentity gpu = user_.device;
    Diagnostic diag;
    if (install_tuning_cache(std::move(user_), path_.c_str(), &diag) != Status::kSuccess) {
      std::fprintf(stderr, "anvil-plan: %s: %s\n", path_.c_str(), diag.message);
      return;
    }
    print_for(d, dev, gpu, path_.c_str());
  }

 private:
  static void print_for(const GemmDesc& d, const DeviceInfo& dev, const DeviceIdentity& gpu, const char* source) {
    if (gpu.sm_count != dev.sm_count) return;
    PlanOverrides tuned;
    if (!find_tuned_overrides(d, gpu, &tuned)) {
      std::printf("\ntuned: %s has no entry for this problem on %s (%d SMs, CUDA runtime %d)\n", source,
                  gpu.gpu.c_str(), gpu.sm_count, gpu.cuda_runtime);
      return;
    }
    std::printf("\ntuned: %s names this problem on %s (%d SMs, CUDA runtime %d): %s; the library runs there\n",
                source, gpu.gpu.c_str(), gpu.sm_count, gpu.cuda_runtime, describe_overrides(tuned).c_str());
    print_plan(plan_with_tuning(d, dev, &gpu, CallFacts{}), d, stdout);
  }

  std::string path_;
  TuningCache user_;
};
#else
class TunedPlans {
 public:
  bool read(const std::string&) {
    std::fprintf(stderr, "anvil-plan: built without the JSON reader: --tuning-cache is not available\n");
    return false;
  }
  void print(const GemmDesc&, const DeviceInfo&) {}
};
#endif

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const GemmDesc d = describe(o);
  TunedPlans tuned;
  if (!o.tuning_cache.empty() && !tuned.read(o.tuning_cache)) return 2;
  const int out_bytes = o.out == DataType::kF32 ? 4 : 2;
  std::printf("anvil-plan %lld x %lld x %lld, batch %lld, %s in, %s out, epilogue %s%s\n", static_cast<long long>(o.m),
              static_cast<long long>(o.n), static_cast<long long>(o.k), static_cast<long long>(o.batch),
              o.in == DataType::kBF16 ? "bf16" : o.in == DataType::kE4M3 ? "e4m3" : "fp16",
              out_bytes == 4 ? "fp32" : o.out == DataType::kBF16 ? "bf16" : "fp16",
              o.epilogue.c_str(), o.batch_invariant ? ", batch-invariant" : "");
  if (o.sm100) {
    print_sm100_budget(d, out_bytes);
    return 0;
  }
  const DeviceInfo dev = DeviceInfo::h200();
  std::printf("H200 (sm_90a): %d SMs, %d KiB shared memory per CTA, %d registers per SM, %.0f MiB L2\n", dev.sm_count,
              dev.smem_per_block_bytes / 1024, dev.registers_per_sm, static_cast<double>(dev.l2_bytes) / (1 << 20));
  const LaunchPlan chosen = plan(d, dev);
  if (o.in == DataType::kE4M3) {
    // sm90-fp8 (docs/fp8.md): its own configurations; the decode kernels read 16-bit inputs only.
    print_roofline(d, dev, 1, out_bytes, 2.0);
    print_fp8_candidates(d, dev, chosen);
    print_fp8_split_k(d, dev, chosen);
    print_fp8_decode(d, dev, chosen);
    std::printf("\n");
    print_plan(chosen, d, stdout);
    tuned.print(d, dev);
    return chosen.family == KernelFamily::kNone ? 1 : 0;
  }
  print_roofline(d, dev, 2, out_bytes, 1.0);
  print_gemm_candidates(d, dev, chosen, false);
  // The planner weighs sm90-gemm's plan of the transposed problem too (plain 16-bit GEMMs).
  if (chosen.family == KernelFamily::kSm90Gemm && transposable(d) && !d.batch_invariant) {
    print_gemm_candidates(transposed_problem(d), dev, chosen, true);
  }
  print_decode_candidates(d, dev, chosen);
  std::printf("\n");
  print_plan(chosen, d, stdout);
  tuned.print(d, dev);
  return chosen.family == KernelFamily::kNone ? 1 : 0;
}

}  // namespace
}  // namespace anvil::detail

int main(int argc, char** argv) { return anvil::detail::run(argc, argv); }
