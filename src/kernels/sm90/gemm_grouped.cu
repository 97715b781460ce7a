// The grouped GEMM's host side: tensor maps, parameters and the persistent launch of the
// configuration the plan names (grouped_plan.h). One translation unit for the family.
#include <cuda_runtime.h>


#include "host/grouped_launch.h"
#include "host/registry.h"
#include "host/tensor_map.h"
#include "kernels/common/epilogue_params.h"
#include "kernels/sm90/grouped_configs.h"
#include "kernels/sm90/grouped_kernel.cuh"
#include "kernels/sm90/tma_operands.h"

namespace anvil::detail {
namespace {

template <class Config>
constexpr int grouped_smem_bytes() {
  return static_cast<int>(sizeof(SharedStorage<Config>)) + sm90::kSwizzleAtomBytes;  // + alignment slack
}

// One CTA per SM: each configuration's ring and epilogue fill the 227 KiB a CTA may opt into.
static_assert(grouped_smem_bytes<GroupedWide>() <= 227 * 1024 && grouped_smem_bytes<GroupedNarrow>() <= 227 * 1024 &&
                  grouped_smem_bytes<GroupedShort>() <= 227 * 1024 &&
                  grouped_smem_bytes<GroupedWideFp8>() <= 227 * 1024 &&
                  grouped_smem_bytes<GroupedNarrowFp8>() <= 227 * 1024 &&
                  grouped_smem_bytes<GroupedShortFp8>() <= 227 * 1024 &&
                  grouped_smem_bytes<GroupedNarrowFp8Block>() <= 227 * 1024 &&
                  grouped_smem_bytes<GroupedShortFp8Block>() <= 227 * 1024,
              "shared memory per CTA");

// 8-bit configurations carry e4m3 x e4m3 only (validate_grouped_desc refuses the rest);
// 16-bit ones bf16 and fp16.
template <class Config>
auto grouped_kernel_for(DataType input) {
  if constexpr (Config::kElementBytes == 1) {
    return sm90_grouped_kernel<Config, sm90::Input::kE4M3>;
  } else {
    return input == DataType::kBF16 ? sm90_grouped_kernel<Config, sm90::Input::kBF16>
                                    : sm90_grouped_kernel<Config, sm90::Input::kF16>;
  }
}

// The epilogue of the whole output as one row-major matrix: expert e's slice is then found
// by moving the pointer (expert_epilogue).
EpilogueParams grouped_epilogue(const GroupedGemmDesc& desc, const GroupedGemmArgs& args) {
  GemmDesc g;
  g.m = grouped_storage_rows(desc);
  g.n = desc.n;
  g.k = desc.k;
  g.alpha = desc.alpha;
  g.epilogue = desc.epilogue;
  const int64_t n_out = grouped_output_cols(desc);
  g.d = MatrixLayout{desc.output, Order::kRowMajor, n_out, 0};
  GemmArgs a;
  a.d = args.d;
  a.bias = args.bias;
  return make_epilogue_params(g, a);
}

template <class Config>
Status build_params(const GroupedPlan& plan, const GroupedGemmDesc& desc, const GroupedGemmArgs& args,
                    Sm90GroupedParams* out, Diagnostic* diag) {
  static_assert(Config::kRowBytes == 128, "one 128-byte swizzle row of K per box");
  Sm90GroupedParams params{};
  const bool masked = desc.layout == GroupedLayout::kMasked;
  params.k_tiles = static_cast<int>((desc.k + Config::kBlockK - 1) / Config::kBlockK);
  params.a_batched = masked && desc.experts > 1;
  params.b_batched = desc.experts > 1;
  const MatrixLayout a_layout{desc.input, Order::kRowMajor, desc.k, desc.rows * desc.k};
  // Contiguous: one [rows, K] matrix; masked: E matrices of [max_rows, K] (rows is max_rows).
  Status s = encode_kmajor_sw128(&params.map_a, args.a, a_layout, desc.k, desc.rows, Config::kBlockM, diag,
                                 masked ? desc.experts : 1);
  if (s != Status::kSuccess) return s;
  const MatrixLayout w_layout{desc.input, Order::kColMajor, desc.k, desc.n * desc.k};
  s = encode_kmajor_sw128(&params.map_b, args.w, w_layout, desc.k, desc.n, Config::kBlockN, diag, desc.experts);
  if (s != Status::kSuccess) return s;

  params.schedule.bounds = args.bounds;
  params.schedule.error_flags = args.error_flags;
  params.schedule.rows = desc.rows;
  params.schedule.experts = static_cast<int>(desc.experts);
  params.schedule.tiles_n = plan.tiles_n;
  params.schedule.block_m = Config::kBlockM;
  params.schedule.masked = masked;
  params.schedule.bounds_int64 = desc.index_type == IndexType::kInt64;
  params.schedule.ends_only = !masked && desc.offsets_are_ends;

  params.epilogue = grouped_epilogue(desc, args);
  const int64_t n_out = grouped_output_cols(desc);
  params.d_expert_elements = masked ? desc.rows * n_out : 0;
  params.bias_expert_elements = desc.n;
  params.scales.a = args.scale_a;
  params.scales.b = args.scale_b;
  params.scales.mode = desc.scales;
  params.scales.rows = grouped_storage_rows(desc);
  params.scales.cols = desc.n;
  params.scale_b_expert_stride = desc.scale_b_per_expert ? grouped_scale_b_floats_per_expert(desc) : 0;
  if constexpr (Config::kBlockScales) {
    // A stage is one 128-wide K block: B's scales of an N block are k_tiles apart.
    params.scales.k_blocks = params.k_tiles;
    s = encode_block_scales_a(&params.map_scales_a, args.scale_a, params.k_tiles, params.scales.rows, Config::kBlockM,
                              &params.scales.a_map_shift, diag);
    if (s != Status::kSuccess) return s;
  }
  // Pair stores need even element offsets for every row of every expert: an even width.
  params.pair_store = desc.alpha == 1.0f && desc.epilogue.bias == BiasMode::kNone &&
                      desc.epilogue.activation == Activation::kIdentity && desc.output != DataType::kF32 &&
                      n_out % 2 == 0 && reinterpret_cast<uintptr_t>(args.d) % 4 == 0;
  *out = params;
  return Status::kSuccess;
}

bool same_problem(const GroupedGemmDesc& x, const GroupedGemmDesc& y) {
  return x.layout == y.layout && x.experts == y.experts && x.n == y.n && x.k == y.k && x.rows == y.rows &&
         x.input == y.input && x.output == y.output && x.index_type == y.index_type && x.alpha == y.alpha &&
         x.epilogue.activation == y.epilogue.activation && x.epilogue.bias == y.epilogue.bias &&
         x.epilogue.bias_dtype == y.epilogue.bias_dtype && x.expected_rows_per_expert == y.expected_rows_per_expert &&
         x.scales == y.scales && x.scale_b_per_expert == y.scale_b_per_expert &&
         x.offsets_are_ends == y.offsets_are_ends;
}

// Everything the parameters hold (the stream is not among them).
bool same_pointers(const GroupedGemmArgs& x, const GroupedGemmArgs& y) {
  return x.a == y.a && x.w == y.w && x.d == y.d && x.bias == y.bias && x.bounds == y.bounds &&
         x.error_flags == y.error_flags && x.scale_a == y.scale_a && x.scale_b == y.scale_b;
}

template <class Config>
Status launch_config(const char* name, const GroupedPlan& plan, const GroupedGemmDesc& desc,
                     const GroupedGemmArgs& args, Diagnostic* diag) {
  static_assert(Config::kBlockN % 128 == 0, "SwiGLU's 128-column gate/up pairs in every grouped tile");
  // The last call's parameters are reused for the same problem and pointers on the same
  // device: the tensor maps and the shared-memory attribute cost microseconds of driver
  // calls, the call itself should not.
  struct Cached {
    bool valid = false;
    GroupedGemmDesc desc;
    GroupedGemmArgs args;
    int device = -1;
    Sm90GroupedParams params;
  };
  thread_local Cached cached;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return fail(diag, Status::kCudaError, "%s: cannot query the current device", name);
  }
  if (!cached.valid || cached.device != device || !same_problem(cached.desc, desc) ||
      !same_pointers(cached.args, args)) {
    cached.valid = false;
    Status s = build_params<Config>(plan, desc, args, &cached.params, diag);
    if (s != Status::kSuccess) return s;
    s = set_dynamic_smem(grouped_kernel_for<Config>(desc.input), grouped_smem_bytes<Config>(), name, diag);
    if (s != Status::kSuccess) return s;
    cached.desc = desc;
    cached.args = args;
    cached.device = device;
    cached.valid = true;
  }
  auto kernel = grouped_kernel_for<Config>(desc.input);
  kernel<<<plan.grid_ctas, Config::kThreads, grouped_smem_bytes<Config>(), args.stream>>>(cached.params);
  return check_launch(diag, name);
}

}  // namespace

Status launch_grouped_plan(const GroupedPlan& plan, const GroupedGemmDesc& desc, const GroupedGemmArgs& args,
                           Diagnostic* diag) {
  const char* name = grouped_variant_name(plan.variant, plan.fp8, plan.block_scales);
  if (plan.fp8 != (desc.input == DataType::kE4M3) || plan.block_scales != (desc.scales == ScaleMode::kBlock128)) {
    return fail(diag, Status::kInternalError, "%s: the plan's inputs are not the description's (%s, %s scales)", name,
                to_string(desc.input), to_string(desc.scales));
  }
  if (plan.block_scales) {
    switch (plan.variant) {
      case GroupedVariant::kNarrow: return launch_config<GroupedNarrowFp8Block>(name, plan, desc, args, diag);
      case GroupedVariant::kShort: return launch_config<GroupedShortFp8Block>(name, plan, desc, args, diag);
      default: break;
    }
    return fail(diag, Status::kInternalError, "%s: block scales run 128-wide tiles only", name);
  }
  if (plan.fp8) {
    switch (plan.variant) {
      case GroupedVariant::kWide: return launch_config<GroupedWideFp8>(name, plan, desc, args, diag);
      case GroupedVariant::kNarrow: return launch_config<GroupedNarrowFp8>(name, plan, desc, args, diag);
      case GroupedVariant::kShort: return launch_config<GroupedShortFp8>(name, plan, desc, args, diag);
    }
    return fail(diag, Status::kInternalError, "grouped: unknown variant %d", static_cast<int>(plan.variant));
  }
  switch (plan.variant) {
    case GroupedVariant::kWide: return launch_config<GroupedWide>(name, plan, desc, args, diag);
    case GroupedVariant::kNarrow: return launch_config<GroupedNarrow>(name, plan, desc, args, diag);
    case GroupedVariant::kShort: return launch_config<GroupedShort>(name, plan, desc, args, diag);
  }
  return fail(diag, Status::kInternalError, "grouped: unknown variant %d", static_cast<int>(plan.variant));
}

}  // namespace anvil::detail
