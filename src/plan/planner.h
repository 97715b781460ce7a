// The planner: every choice of kernel family, tile, cluster, schedule, K split and row
// split for one problem, made in one place as plain host arithmetic.
//
// plan() makes no CUDA call. What it needs to know about the GPU comes in a DeviceInfo,
// filled once per device by host code outside the planner (device_info.h) or built by hand
// (DeviceInfo::h200()) in the CPU tests and in anvil-plan. The kernel launchers take the
// LaunchPlan and launch exactly it: they make no choice of their own.
//
// The rules themselves live beside the kernels they describe and were fitted to H200
// measurements (kernels/sm90/plan.h, decode_plan.h, row_split.h; docs/planner.md lists
// them with their hardware reasons).
#pragma once

#include <cstddef>
#include <cstdint>

#include "anvil/gemm.h"
#include "kernels/sm90/fp8_plan.h"
#include "kernels/sm90/plan.h"

namespace anvil::detail {

// The kernel families the planner chooses between.
enum class KernelFamily : int {
  kNone = -1,       // no kernel takes the problem as described
  kSm90Gemm = 0,    // persistent warp-specialized GEMM (gemm_sm90.cu): tiles, clusters, stream-K
  kDecodeTma,       // swap-AB decode, TMA-fed, 128 weight rows per CTA (gemm_decode.cu)
  kDecodeLdg,       // swap-AB decode through the load path, 128 rows (gemm_decode_ldg.cu)
  kDecodeR64,       // TMA-fed decode, 64 weight rows per CTA
  kDecodeLdgR64,    // load-path decode, 64 weight rows per CTA
  kFallback,        // the CUDA-core kernel that takes every valid problem (K = 0, any layout)
  kSm90Fp8,         // sm90-gemm's kernel with 8-bit inputs and their scales (gemm_sm90_fp8.cu)
  kSm90Fp8Decode,   // the TMA-fed decode kernel with e4m3 inputs, 128 weight rows per CTA (gemm_fp8_decode.cu)
};
inline constexpr int kKernelFamilies = 8;
const char* family_name(KernelFamily family);  // the registry name ("sm90-gemm", ...)

// The sm90-gemm schedule a variant runs.
enum class GemmSchedule : int { kCooperative = 0, kPingPong, kStreamK };
GemmSchedule variant_schedule(Sm90Variant v);
const char* variant_name(Sm90Variant v);  // "wide-pair", "fit-pair-224", ...
int variant_stages(Sm90Variant v);

// The decode kernels' configurations, each with its own residency on the device.
enum class DecodeConfigId : int {
  kTma8 = 0, kTma16, kTma32, kTma64, kTma96, kTma128, kTma256,  // sm90-decode, by token tile
  kR64x16, kR64x32, kR64x64,                                      // sm90-decode-r64
  kLdg8, kLdg16,                                                  // sm90-decode-ldg
  kLdgR64x8, kLdgR64x16, kLdgR64x32,                              // sm90-decode-ldg-r64
  kFp8x8, kFp8x16, kFp8x32, kFp8x64, kFp8x128,                    // sm90-fp8-decode, by token tile
  kFp8Block64, kFp8Block128,  // sm90-fp8-decode with block scales, 33-128 tokens (one CTA per SM)
  kR64x128,                   // sm90-decode-r64 from 97 tokens: 64 weight rows x 128 tokens
  kR64x128Folded,             // the same tiles summing a batch-invariant weight's K slices in turn
  kR64x96,                    // sm90-decode-r64 at 65-96 tokens: 64 weight rows x 96 tokens
  kCount
};
inline constexpr int kDecodeConfigs = static_cast<int>(DecodeConfigId::kCount);
inline constexpr int kMaxClusterSplit = 8;  // portable cluster size: the most K splits

// What the planner knows of a GPU. Every number is a field so that CPU tests and
// anvil-plan can describe a device by hand.
struct DeviceInfo {
  int sm_count = 132;
  int cc_major = 9, cc_minor = 0;
  int smem_per_block_bytes = 227 * 1024;  // opt-in dynamic shared memory per CTA
  int smem_per_sm_bytes = 228 * 1024;
  int registers_per_sm = 65536;
  int64_t l2_bytes = 50LL * 1024 * 1024;
  // The clock the card holds under its power cap in long tensor-core runs, and what one SM
  // multiplies per clock (dense bf16/fp16 FLOPs): 132 x 4096 x 1.5 GHz = 811 TFLOP/s.
  double sustained_clock_ghz = 1.5;
  int dense_flops_per_sm_per_clock = 4096;
  // DRAM: the rate a weight can be streamed (4.3-4.5 TB/s measured by reading kernels on
  // the H200; 4.26 TB/s for a plain copy).
  double hbm_bytes_per_second = 4.4e12;
  // Blackwell budget (anvil-plan --sm100 only): tensor memory columns per SM, 0 on Hopper.
  int tmem_columns = 0;
  int max_cluster_portable = 8;
  // CTAs of each decode configuration resident at once in clusters of s CTAs
  // (resident[config][s], s = 1..8), from the occupancy API on the device.
  int decode_resident[kDecodeConfigs][kMaxClusterSplit + 1] = {};

  double peak_flops() const { return static_cast<double>(sm_count) * dense_flops_per_sm_per_clock * sustained_clock_ghz * 1e9; }
  int resident(DecodeConfigId config, int splits) const { return decode_resident[static_cast<int>(config)][splits]; }

  // An H200 SXM (141 GB) under its 700 W cap, with the occupancy API's answers for the
  // decode configurations (one-per-SM kernels: 132 132 117 120 110 102 105 120 CTAs for
  // clusters of 1-8, limited by how clusters pack into the GPCs; two-per-SM ones twice).
  static DeviceInfo h200();
  // The residency a query that cannot reach a GPU falls back to: one CTA per SM, whole clusters.
  static DeviceInfo fallback(int sm_count = 132);
  // A B200 (sm_100): the budget anvil-plan --sm100 prints for the Blackwell kernel.
  static DeviceInfo b200();
};

// Everything a measurement, test or tuner may force. The library's own calls pass none.
// Each field's default leaves the choice to the planner.
struct PlanOverrides {
  KernelFamily family = KernelFamily::kNone;  // kNone: the planner's choice
  int sm90_variant = -1;                      // an Sm90Variant to run, or -1
  bool sm90_fit_only = false;                 // the cheapest fitted width, whatever the other tiles cost
  bool fit_widths = true;                     // false: only the 128/256-wide tiles and stream-K
  bool allow_stream_k = true;
  int decode_splits = 0;                      // 1..8 forces the decode kernels' K split
  // Split-K (sm90-gemm: kernels/sm90/split_k.h; sm90-fp8: fp8_plan.h): 0 the planner's
  // rule, 1 never, s > 1 forces s slices (taken where K divides into s equal slices of
  // whole 16-byte groups, or for FP8 of whole 128-wide K blocks, at least 4 of them).
  int split_k_slices = 0;
  enum class RowSplit : int { kAuto = 0, kNever, kAlways } row_split = RowSplit::kAuto;
  int fp8_variant = -1;                       // an Fp8Variant to run (where it runs the problem), or -1;
                                              // with split_k_slices > 1 it keeps FP8 on sm90-fp8
  // Swap A and B for a narrow output (LaunchPlan::swap_ab): the planner's rule, never, or
  // wherever a decode kernel takes the transposed problem; with family = kSm90Gemm,
  // always runs sm90-gemm on the transposed problem (the tokens on its tiles' N side).
  enum class SwapAb : int { kAuto = 0, kNever, kAlways } swap_ab = SwapAb::kAuto;
  bool trace = false;                         // print each plan as it is built (stderr)
};

// Facts about the call's pointers and workspace that the choice depends on. Without them
// (a description-only query, the CPU tests, anvil-plan) pointers are taken as 16-byte
// aligned and the workspace as large as the plan asks.
struct CallFacts {
  bool a_aligned16 = true, b_aligned16 = true;
  bool workspace_aligned16 = true;
  size_t workspace_bytes = ~size_t{0};
  // Whether each family accepts the problem as described (its own checks, run by the
  // dispatcher); default: judged from the description alone.
  bool accepts[kKernelFamilies] = {true, true, true, true, true, true, true, true};
  // The same for the transposed problem (transposed_problem: A and B swapped).
  bool transposed_accepts[kKernelFamilies] = {true, true, true, true, true, true, true, true};
  // sm90-gemm's D leaves as D^T through the column TMA store (plan_transposed_sm90), whose
  // boxes are 32 columns wide: only widths in steps of 32.
  bool d_by_column_boxes = false;
};

// One decode launch: the configuration, its grid and its K split.
struct DecodePlan {
  DecodeConfigId config = DecodeConfigId::kTma8;
  int token_tile = 8;
  int tile_rows = 128;   // weight rows per CTA
  int k_block = 64;      // K per stage, the unit the split is planned in
  int batch = 1;
  int token_tiles = 1;
  int feature_tiles = 1;
  int k_tiles = 1;
  int splits = 1;        // CTAs per cluster along K
  int64_t ctas = 0;
  int64_t waves = 0;
  int k_slices = 1;      // kR64x128Folded: the weight's K slices, summed in turn in each CTA
};

// Which operands sm90-gemm first copies into K-major form in the workspace.
struct RepackNeeds {
  bool a = false, b = false;
  size_t a_bytes = 0, b_bytes = 0;
  int64_t packed_ld = 0;
};

inline constexpr size_t kReasonChars = 112;

struct LaunchPlan {
  KernelFamily family = KernelFamily::kNone;
  const char* kernel_name = nullptr;  // the registry name, for messages
  // sm90-gemm
  Sm90Variant variant = Sm90Variant::kWidePair;
  GemmSchedule schedule = GemmSchedule::kCooperative;
  TileShape tile{128, 256};
  Fp8Variant fp8_variant = Fp8Variant::kWidePair;  // sm90-fp8
  ClusterShape cluster{1, 1};
  int stages = 0;
  RepackNeeds repack;
  // Row split: sm90-gemm runs rows [0, main_rows); rows [main_rows, M) go to tail_family
  // with tail (main_rows == M: no split; 0: the tail takes every row, on the repacked
  // copies of operands no decode kernel reads in place).
  int64_t main_rows = 0;
  KernelFamily tail_family = KernelFamily::kNone;
  DecodePlan tail;
  // Decode families: the launch itself.
  DecodePlan decode;
  int k_splits = 1;           // the K split of the main launch (decode splits; sm90-gemm's and sm90-fp8's split-K slices)
  int64_t slice_k = 0;        // split-K: K of each slice (k_splits x slice_k = K); the
                              // variant fields then describe the slices' strided-batched launch
  size_t workspace_bytes = 0;
  bool batch_invariant = false;
  // The plan is for the transposed problem D^T = B^T A^T (transposed_problem and
  // transposed_args say how it is launched): a narrow output's N columns are the decode
  // kernels' tokens and A is the weight they stream.
  bool swap_ab = false;
  // One line per choice, for anvil-plan and traces.
  char family_reason[kReasonChars] = {};
  char tile_reason[kReasonChars] = {};
  char split_reason[kReasonChars] = {};
  char row_split_reason[kReasonChars] = {};

  bool row_split() const { return tail_family != KernelFamily::kNone; }
};

// D^T = B^T A^T as a problem of its own: N x M x K, A and B exchanged with their orders
// flipped (a row-major A is a column-major A^T over the same memory), C and D likewise, a
// per-column bias per row. SwiGLU's column pairs and FP8 scales do not transpose: callers
// check transposable() first.
bool transposable(const GemmDesc& desc);
GemmDesc transposed_problem(const GemmDesc& desc);
GemmArgs transposed_args(const GemmArgs& args);

// Batch-invariant mode's K split for desc's weight: the number of slices every plan of the
// mode cuts K into, whatever M is (1: none; kernels/sm90/decode_plan.h,
// batch_invariant_split). 1 outside the mode, and where sm90-decode does not take the
// operands (facts.accepts).
int batch_invariant_k_split(const GemmDesc& desc, const DeviceInfo& device, const CallFacts& facts);

LaunchPlan plan(const GemmDesc& desc, const DeviceInfo& device, const PlanOverrides* overrides = nullptr,
                const CallFacts* facts = nullptr);

// The decode families' own descriptive checks (K-major operands, TMA strides, grid
// limits, SwiGLU for the 128-row kernels only), as the planner judges them without
// pointers.
bool decode_family_accepts(KernelFamily family, const GemmDesc& desc);

// Which operands sm90-gemm copies into K-major form: those TMA cannot read in place
// (MN-major, leading dimension or batch stride not a multiple of 8 elements, a zero batch
// stride, a base not 16-byte aligned).
RepackNeeds repack_needs(const GemmDesc& desc, const CallFacts& facts);

// Stream-K's workspace: flags and parked partials for every SM.
size_t stream_k_workspace_bytes(int sm_count);

// The plan as text (one line per choice), for traces and anvil-plan.
void print_plan(const LaunchPlan& p, const GemmDesc& desc, void* file /* FILE* */);

}  // namespace anvil::detail
