// Grouped GEMM for mixture-of-experts layers. Host-only header.
//
// For every expert e:   D_e = act(alpha * A_e W_e^T + bias_e)     (bf16/fp16 in, fp32 accumulate)
//
// FP8 (e4m3 A and W): the fp32 sums are scaled before alpha, bias and activation,
//   z[i,j] = alpha * sa(i) * sb_e(j) * sum_k A[i,k] W_e[j,k]
// with the scales of GroupedGemmDesc::scales (torch._scaled_grouped_mm's row-wise recipe
// is kRowColumn: scale_a one per row of A, scale_b [E, N]; docs/grouped.md).
//
// W is [E, N, K] row-major (each expert's weight in the nn.Linear layout, K contiguous), all
// experts the same N and K. A_e holds the expert's tokens, in one of two layouts:
//   kContiguous (prefill): A [rows, K] with the tokens sorted by expert; expert e owns
//     rows offsets[e] .. offsets[e+1] of A and of D [rows, N_out]. offsets has E + 1
//     non-decreasing entries in [0, rows]. Rows outside [offsets[0], offsets[E]) are not
//     written. Segments need not be aligned to anything. With offsets_are_ends, offsets
//     holds E entries, the cumulative row ends (torch._grouped_mm's and
//     torch._scaled_grouped_mm's offs): expert e owns rows ends[e-1] .. ends[e], from row 0
//     for e = 0.
//   kMasked (decode): A [E, max_rows, K] and D [E, max_rows, N_out]; expert e uses its
//     first counts[e] rows (0 <= counts[e] <= max_rows). Rows counts[e] .. max_rows of
//     D_e are not written.
// offsets / counts live in device memory and are never read by the host: a call enqueues
// work without synchronising, so a CUDA graph captured once replays correctly whatever
// the routing the device writes there before each replay. Experts with no rows cost no
// tile. N_out is N, or N / 2 with the SwiGLU epilogue (swiglu.h's weight layout per expert).
//
// Invalid bounds cannot be refused before the launch (the host cannot see them). The kernel
// treats an expert whose bounds are invalid as empty, writes nothing for it, and ORs a
// GroupedError bit into *args.error_flags when that pointer is set; grouped_error_status()
// turns the word into a Status and a message. The word is never cleared by anvil: zero it
// once, and it reports every invalid routing since.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "anvil/gemm.h"

namespace anvil {

enum class GroupedLayout : int { kContiguous = 0, kMasked };
enum class IndexType : int { kInt32 = 0, kInt64 };

// Bits of the device error word (GroupedGemmArgs::error_flags).
enum GroupedError : int {
  kGroupedOffsetsDecrease = 1,     // contiguous: offsets[e + 1] < offsets[e]
  kGroupedOffsetsOutOfRange = 2,   // contiguous: an offset outside [0, rows]
  kGroupedCountOutOfRange = 4,     // masked: counts[e] < 0 or > max_rows
};

struct GroupedGemmDesc {
  GroupedLayout layout = GroupedLayout::kContiguous;
  int64_t experts = 0;  // E
  int64_t n = 0, k = 0;
  // kContiguous: rows of A and D (all experts' tokens). kMasked: max_rows, the rows of
  // each expert's slice of A and D.
  int64_t rows = 0;
  DataType input = DataType::kBF16;   // A and W: bf16, fp16 or e4m3
  DataType output = DataType::kBF16;  // D: bf16, fp16 or fp32
  IndexType index_type = IndexType::kInt32;  // of offsets / counts
  // kContiguous only: bounds holds the E cumulative row ends instead of E + 1 offsets.
  bool offsets_are_ends = false;
  float alpha = 1.0f;
  // Activation (any, SwiGLU included) and bias: kNone or kPerColumn, one vector of N per
  // expert (bias [E, N]). No C operand, no per-row bias.
  EpilogueDesc epilogue;
  // FP8 inputs only (input kE4M3; kNone otherwise): how the sums are scaled. Row indices
  // are rows of A's storage (contiguous: the row of A; masked: e * max_rows + row).
  //   kNone:      no scales.
  //   kTensor:    sa = scale_a[0]; sb_e = scale_b[e] (scale_b_per_expert) or scale_b[0].
  //   kRowColumn: sa(i) = scale_a[i], one per storage row (rows, or E x max_rows, floats);
  //               sb_e(j) = scale_b[e * N + j] ([E, N], scale_b_per_expert) or scale_b[j].
  //   kBlock128:  DeepSeek-V3 blocks, as the dense GEMM's (gemm.h) over A's storage rows:
  //               sa(i, k) = scale_a[(k / 128) * R + i] with R = rows (contiguous) or
  //               E * max_rows (masked), an fp32 [ceil(K/128), R] array; W's per 128 x 128
  //               block, sb_e(k, j) = scale_b[e * nb * kb + (j / 128) * kb + k / 128] with
  //               nb = ceil(N/128), kb = ceil(K/128) ([E, nb, kb], scale_b_per_expert, or
  //               one [nb, kb] for all). Each 128-wide K block is summed on the tensor
  //               cores and added, scaled, to an fp32 total (docs/fp8.md).
  ScaleMode scales = ScaleMode::kNone;
  bool scale_b_per_expert = true;
  // Planning hint: the rows an expert typically has (0: rows / E for kContiguous, rows for
  // kMasked). Only the choice of tile depends on it; results never do.
  int64_t expected_rows_per_expert = 0;
};

struct GroupedGemmArgs {
  const void* a = nullptr;
  const void* w = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;
  // kContiguous: E + 1 row offsets (E row ends with offsets_are_ends); kMasked: E row
  // counts. Device memory, index_type.
  const void* bounds = nullptr;
  int* error_flags = nullptr;  // optional device int: GroupedError bits are OR-ed in
  void* workspace = nullptr;   // grouped_workspace_size() bytes (0 today)
  size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
  // fp32 scales in device memory, laid out as GroupedGemmDesc::scales says (null for kNone).
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
};

// Whether grouped_gemm(desc, args) would run; args may be null to check the description alone.
Status can_implement(const GroupedGemmDesc& desc, const GroupedGemmArgs* args, Diagnostic* diag = nullptr);
size_t grouped_workspace_size(const GroupedGemmDesc& desc);
// Enqueues every expert's GEMM on args.stream in one launch. No allocation, no synchronisation.
Status grouped_gemm(const GroupedGemmDesc& desc, const GroupedGemmArgs& args, Diagnostic* diag = nullptr);
// The name of the kernel configuration grouped_gemm runs for desc ("sm90-grouped/128x256", ...),
// or nullptr when it cannot run it.
const char* grouped_dispatch_name(const GroupedGemmDesc& desc);

// kSuccess for 0; otherwise kInvalidArgument with the invalid bounds named in diag.
Status grouped_error_status(int error_flags, Diagnostic* diag = nullptr);
// Host check of offsets (E + 1 entries, or E ends) or counts (E) the caller holds on the
// host: the same rules as the kernel's, naming the first offending expert.
Status check_grouped_bounds(const GroupedGemmDesc& desc, const int64_t* host_bounds, Diagnostic* diag = nullptr);

}  // namespace anvil
