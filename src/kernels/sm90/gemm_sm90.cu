// The production Hopper GEMM: persistent, warp-specialized, banded raster. The planner
// (src/plan/) chooses the configuration per problem (choose_sm90_variant, plan.h); only the
// configurations it can return are instantiated, and launch_sm90_plan launches exactly the
// plan it is given. Operands TMA cannot read in place (MN-major, odd strides, misaligned
// bases, broadcast batches) are first repacked into the workspace as K-major copies
// (repack.cuh).
#include <cuda_runtime.h>

#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/launch.cuh"
#include "kernels/sm90/plan.h"
#include "kernels/sm90/repack.cuh"
#include "common/dtype.h"
#include "host/registry.h"
#include "host/validate.h"
#include "plan/launch.h"
#include "kernels/sm90/sm90_configs.h"
#include "kernels/sm90/split_k.h"

namespace anvil::detail {
namespace {

constexpr const char* kName = "sm90-gemm";
constexpr LaunchPolicy kPolicy = kSm90GemmPolicy;
constexpr size_t kWorkspaceAlign = 256;

// Which operands need a K-major copy (the planner's repack_needs), and the description of
// the problem on the copies.
struct RepackPlan {
  bool a = false, b = false;
  size_t a_bytes = 0, b_bytes = 0;
  GemmDesc packed;
};

RepackPlan packed_problem(const GemmDesc& desc, const RepackNeeds& needs) {
  RepackPlan plan;
  plan.a = needs.a, plan.b = needs.b;
  plan.a_bytes = needs.a_bytes, plan.b_bytes = needs.b_bytes;
  plan.packed = desc;
  if (plan.a) plan.packed.a = MatrixLayout{desc.a.dtype, Order::kRowMajor, needs.packed_ld, desc.m * needs.packed_ld};
  if (plan.b) plan.packed.b = MatrixLayout{desc.b.dtype, Order::kColMajor, needs.packed_ld, desc.n * needs.packed_ld};
  return plan;
}

RepackPlan plan_repack(const GemmDesc& desc, const GemmArgs* args) {
  CallFacts facts;
  if (args != nullptr) {
    facts.a_aligned16 = reinterpret_cast<uintptr_t>(args->a) % 16 == 0;
    facts.b_aligned16 = reinterpret_cast<uintptr_t>(args->b) % 16 == 0;
  }
  return packed_problem(desc, repack_needs(desc, facts));
}

// Source strides of A (rows = M) or B (rows = N) for the repack kernel.
RepackSource repack_source(const void* ptr, const MatrixLayout& layout, bool is_b) {
  // A(i, k) is row-major-K when A is row-major; B(k, j) read as row j is K-contiguous when
  // B is column-major.
  const bool k_contiguous = is_b ? layout.order == Order::kColMajor : layout.order == Order::kRowMajor;
  return RepackSource{static_cast<const uint16_t*>(ptr), k_contiguous ? layout.ld : 1, k_contiguous ? 1 : layout.ld,
                      layout.batch_stride};
}

Status check(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  if (desc.k == 0) return fail(diag, Status::kNotSupported, "%s: K = 0 has no tensor-core work", kName);
  const RepackPlan plan = plan_repack(desc, args);
  if ((plan.a && !repack_grid_fits(repack_source(nullptr, desc.a, false), desc.m, desc.batch)) ||
      (plan.b && !repack_grid_fits(repack_source(nullptr, desc.b, true), desc.n, desc.batch))) {
    return fail(diag, Status::kNotSupported, "%s: too large to repack (batch or rows beyond the grid)", kName);
  }
  if ((plan.a || plan.b) && args != nullptr && reinterpret_cast<uintptr_t>(args->workspace) % 16 != 0) {
    return fail(diag, Status::kMisalignedOperand, "%s: the workspace must be 16-byte aligned for repacked operands", kName);
  }
  // The kernel itself sees the packed description and a 16-byte-aligned workspace.
  GemmArgs packed_args;
  if (args != nullptr) {
    packed_args = *args;
    if (plan.a) packed_args.a = reinterpret_cast<const void*>(kWorkspaceAlign);
    if (plan.b) packed_args.b = reinterpret_cast<const void*>(kWorkspaceAlign);
  }
  // SwiGLU needs 128-column pairs, which both tile widths provide.
  return sm90_check<Narrow>(kName, plan.packed, args != nullptr ? &packed_args : nullptr, diag);
}

// One configuration, whatever the problem: what a plan's variant launches.
template <class Config>
Status run_config(const char* name, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return sm90_launch<Config>(name, kPolicy, desc, args, diag);
}

// k_slices: the folded-slice configurations' K slices per tile (folds_k_slices).
Status launch_variant(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                      Diagnostic* diag, int k_slices = 1) {
  if (folds_k_slices(variant)) return launch_sliced(variant, name, desc, args, k_slices, diag);
  switch (variant) {
    case Sm90Variant::kWidePair: return run_config<WidePair>(name, desc, args, diag);
    case Sm90Variant::kPingPongPair: return run_config<PingPongPair>(name, desc, args, diag);
    case Sm90Variant::kNarrow: return run_config<Narrow>(name, desc, args, diag);
    case Sm90Variant::kTallStreamK: return run_config<TallStreamK>(name, desc, args, diag);
    case Sm90Variant::kWide: return run_config<Wide>(name, desc, args, diag);
    case Sm90Variant::kWidePairN: return run_config<WidePairN>(name, desc, args, diag);
    default: return launch_fit_width(variant, name, desc, args, diag);
  }
}

// Rows [first_row, M) as a problem of their own: the same operands and epilogue, with A,
// C, D and a per-row bias advanced by first_row rows.
struct RowTail {
  GemmDesc desc;
  GemmArgs args;
};

RowTail tail_rows(const GemmDesc& desc, const GemmArgs& args, int64_t first_row) {
  const auto advance = [first_row](const void* p, const MatrixLayout& layout) -> const void* {
    if (p == nullptr) return p;
    const int64_t elements = first_row * (layout.order == Order::kRowMajor ? layout.ld : 1);
    return static_cast<const uint8_t*>(p) + elements * static_cast<int64_t>(dtype_size(layout.dtype));
  };
  RowTail tail{desc, args};
  tail.desc.m = desc.m - first_row;
  tail.args.a = advance(args.a, desc.a);
  tail.args.c = advance(args.c, desc.c);
  tail.args.d = const_cast<void*>(advance(args.d, desc.d));
  if (desc.epilogue.bias == BiasMode::kPerRow && args.bias != nullptr) {
    tail.args.bias = static_cast<const uint8_t*>(args.bias) + first_row * static_cast<int64_t>(dtype_size(desc.epilogue.bias_dtype));
  }
  tail.args.workspace = nullptr;  // the decode kernels need none
  tail.args.workspace_bytes = 0;
  return tail;
}

}  // namespace

// Repacks what TMA cannot read in place, launches the planned configuration on the
// copies, then the planned decode launch of the rows split off (row_split.h): two launches
// on the caller's stream, writing disjoint rows. A plan whose decode launch takes every
// row (main_rows = 0: few tokens on repacked operands) launches only that.
Status launch_sm90_plan(const LaunchPlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  const RepackPlan repack = packed_problem(desc, plan.repack);
  GemmArgs packed_args = args;
  auto* workspace_bytes = static_cast<uint8_t*>(args.workspace);
  // What follows the copies is the configuration's own (stream-K's partials).
  const size_t repack_bytes = repack.a_bytes + repack.b_bytes;
  packed_args.workspace = repack_bytes > 0 && workspace_bytes != nullptr ? workspace_bytes + repack_bytes : args.workspace;
  packed_args.workspace_bytes = args.workspace_bytes > repack_bytes ? args.workspace_bytes - repack_bytes : 0;
  if (repack.a) {
    auto* dst = reinterpret_cast<uint16_t*>(workspace_bytes);
    const Status s = launch_repack(repack_source(args.a, desc.a, false), dst, repack.packed.a.ld,
                                   repack.packed.a.batch_stride, desc.m, desc.k, desc.batch, args.stream, diag);
    if (s != Status::kSuccess) return s;
    packed_args.a = dst;
  }
  if (repack.b) {
    auto* dst = reinterpret_cast<uint16_t*>(workspace_bytes + repack.a_bytes);
    const Status s = launch_repack(repack_source(args.b, desc.b, true), dst, repack.packed.b.ld,
                                   repack.packed.b.batch_stride, desc.n, desc.k, desc.batch, args.stream, diag);
    if (s != Status::kSuccess) return s;
    packed_args.b = dst;
  }
  if (plan.k_splits > 1 && !folds_k_slices(plan.variant)) {
    // Split-K (the planner takes it only for operands read in place): the slices into the
    // workspace's fp32 partials, then their sum through the epilogue.
    return launch_split_k(desc, args, plan, [&](const GemmDesc& slices, const GemmArgs& slice_args) {
      return launch_variant(plan.variant, kName, slices, slice_args, diag);
    }, diag);
  }
  if (!plan.row_split()) return launch_variant(plan.variant, kName, repack.packed, packed_args, diag, plan.k_splits);
  if (plan.main_rows > 0) {
    GemmDesc head = repack.packed;
    head.m = plan.main_rows;
    const Status s = launch_variant(plan.variant, kName, head, packed_args, diag);
    if (s != Status::kSuccess) return s;
  }
  const RowTail tail = tail_rows(repack.packed, packed_args, plan.main_rows);
  return plan.tail_family == KernelFamily::kDecodeLdg || plan.tail_family == KernelFamily::kDecodeLdgR64
             ? launch_decode_ldg_plan(plan.tail, tail.desc, tail.args, diag)
             : launch_decode_tma_plan(plan.tail, tail.desc, tail.args, diag);
}

extern const KernelInfo kSm90Gemm{kName,
                                  "production: persistent, warp-specialized; 128x256 tiles in multicasting 2-CTA "
                                  "clusters (along M, or along N for an odd number of 128-row tiles), single "
                                  "128x256 or 128x128 by wave plan, tiles 64-240 wide in steps of 16 where those fill "
                                  "the waves better, stream-K on 256x128 tiles where whole tiles leave SMs "
                                  "idle; any layout/stride (repacked into the workspace)",
                                  check, launch_family<KernelFamily::kSm90Gemm>,
                                  family_workspace<KernelFamily::kSm90Gemm>};
}  // namespace anvil::detail
