// The production Hopper GEMM the dispatcher picks: persistent, warp-specialized, banded
// raster. The tile shape is chosen per problem by choose_sm90_variant (plan.h); only the
// configurations it can return are instantiated. Operands TMA cannot read in place
// (MN-major, odd strides, misaligned bases, broadcast batches) are first repacked into
// the workspace as K-major copies (repack.cuh).
#include <cuda_runtime.h>

#include <atomic>

#include "kernels/sm90/fit_widths.h"
#include "kernels/sm90/launch.cuh"
#include "kernels/sm90/plan.h"
#include "kernels/sm90/repack.cuh"
#include "kernels/sm90/row_split.h"
#include "common/dtype.h"
#include "host/registry.h"
#include "host/validate.h"

namespace anvil::detail {
namespace {

using Wide = KernelConfig<256, 2, 1, 4, 1, false>;    // 128x256, 4 x 48 KiB stages, direct epilogue
using Narrow = KernelConfig<128, 2, 1, 6, 1, false>;  // 128x128, 6 x 32 KiB stages
// Wide tiles in 2-CTA clusters along M that multicast the shared B tile (half the L2
// reads of B), 4 stages, the plain GEMM's epilogue through TMA stores in two rounds of a
// half-size buffer: ladder step 11's configuration. The default for problems with two or
// more rows of tiles.
using WidePair = KernelConfig<256, 2, 1, 4, 2, true, ClusterB::kMulticast, Schedule::kCooperative, false, 2>;
// The same tiles and ring in 2-CTA clusters along N that multicast the shared A tile,
// for an odd number of 128-row tiles (plan.h, kWidePairN).
using WidePairN = KernelConfig<256, 2, 1, 4, 2, true, ClusterB::kMulticast, Schedule::kCooperative, false, 2,
                               ClusterAxis::kN>;
// The ping-pong schedule: 128x128 tiles, each consumer warpgroup taking whole tiles in
// turn, so one warpgroup's epilogue overlaps the other's mainloop; 2-CTA multicast
// clusters, 5 stages. sm90-gemm's choice for fused epilogues; also selectable by name.
using PingPongPair = KernelConfig<128, 2, 2, 5, 2, true, ClusterB::kMulticast, Schedule::kPingPong>;
// 256x128 tiles (two 64-row slabs per consumer warpgroup) whose trailing waves are dealt
// out to all SMs by K iterations (stream_k.h): for problems whose tiles leave SMs idle in
// the last wave, e.g. M = 256 decode batches, which then make one row of tiles. 4 stages
// and the pairs' TMA store in two rounds.
using TallStreamK = KernelConfig<128, 2, 2, 4, 1, true, ClusterB::kMulticast, Schedule::kCooperative, true, 2>;
constexpr const char* kName = "sm90-gemm";
constexpr const char* kPingPongName = "sm90-gemm-pingpong";
constexpr const char* kStreamKName = "sm90-gemm-streamk";
constexpr const char* kFitName = "sm90-gemm-fit";
constexpr const char* kPow2Name = "sm90-gemm-pow2";
constexpr const char* kPairNName = "sm90-gemm-pair-n";
constexpr LaunchPolicy kPolicy = kSm90GemmPolicy;
constexpr size_t kWorkspaceAlign = 256;

size_t align_up(size_t bytes) { return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

// Which operands need a K-major copy, and the description of the problem on the copies.
struct RepackPlan {
  bool a = false, b = false;
  size_t a_bytes = 0, b_bytes = 0;
  GemmDesc packed;
};

// An operand is read in place when it is K-major with TMA-legal strides and base.
bool readable_in_place(const MatrixLayout& layout, Order k_major, int64_t batch, const void* base, bool know_base) {
  if (layout.order != k_major || layout.ld % 8 != 0) return false;
  if (batch > 1 && (layout.batch_stride == 0 || layout.batch_stride % 8 != 0)) return false;
  return !know_base || reinterpret_cast<uintptr_t>(base) % 16 == 0;
}

RepackPlan plan_repack(const GemmDesc& desc, const GemmArgs* args) {
  RepackPlan plan;
  plan.packed = desc;
  // Whole 128-byte lines per row. Rows only 16-byte aligned (K = 4097: 8208 bytes apart)
  // make every 128-byte TMA row read touch five 32-byte sectors instead of four: 4097^3's
  // GEMM moved 25% more L2 bytes than 4096 x 4097 x 4095's (ncu, H200, session 9).
  const int64_t packed_ld = (desc.k + 63) / 64 * 64;
  const bool know_base = args != nullptr;
  plan.a = !readable_in_place(desc.a, Order::kRowMajor, desc.batch, know_base ? args->a : nullptr, know_base);
  plan.b = !readable_in_place(desc.b, Order::kColMajor, desc.batch, know_base ? args->b : nullptr, know_base);
  if (plan.a) {
    plan.packed.a = MatrixLayout{desc.a.dtype, Order::kRowMajor, packed_ld, desc.m * packed_ld};
    plan.a_bytes = align_up(static_cast<size_t>(desc.m * packed_ld * desc.batch) * 2);
  }
  if (plan.b) {
    plan.packed.b = MatrixLayout{desc.b.dtype, Order::kColMajor, packed_ld, desc.n * packed_ld};
    plan.b_bytes = align_up(static_cast<size_t>(desc.n * packed_ld * desc.batch) * 2);
  }
  return plan;
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

// The fitted widths are not whole 128-column gate/up pairs.
Status check_fit(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  if (desc.epilogue.activation == Activation::kSwiGLU) {
    return fail(diag, Status::kNotSupported, "%s: SwiGLU needs 128-column gate/up pairs (the fitted widths are 160, 192 and 224 wide)", kFitName);
  }
  return check(desc, args, diag);
}

// Stream-K's flags and parked partials, for every SM (the configuration runs one CTA per SM).
size_t stream_k_bytes() {
  const int ctas = device_sm_count();
  return stream_k_flag_bytes(ctas, TallStreamK::kConsumers) +
         stream_k_partial_bytes(ctas, TallStreamK::kBlockM * TallStreamK::kBlockN);
}

// What the variant choice (plan.h) reads of a problem.
Sm90Problem sm90_problem(const GemmDesc& desc) {
  Sm90Problem p;
  p.m = desc.m;
  p.n = desc.n;
  p.k = desc.k;
  p.batch = desc.batch;
  p.fused_epilogue = !plain_epilogue(desc);
  p.stream_k_allowed = !desc.batch_invariant;
  // Less D's base address, not known when only the size of the workspace is asked for (a
  // misaligned base only costs the faster store path).
  p.store = d_layout_tma_storable(desc)             ? DStore::kTma
            : desc.d.order == Order::kRowMajor ? DStore::kRowMajor
                                               : DStore::kColumnMajor;
  return p;
}

// What a launch with these arguments uses: the repack copies, plus stream-K's part when
// the plan streams and the caller's workspace has room for it (args null: the size to
// ask for). Without the room, the launch takes the whole-tile variant instead of failing.
size_t workspace_choosing(const GemmDesc& desc, const GemmArgs* args, bool fit_widths) {
  const RepackPlan plan = plan_repack(desc, args);
  const size_t repack = plan.a_bytes + plan.b_bytes;
  Sm90Problem problem = sm90_problem(plan.packed);
  problem.fit_widths = fit_widths;
  // With a row split (launch_by_wave_plan), the configuration is the one for its main rows.
  if (fit_widths) problem.m = row_split_main_rows(problem, !desc.batch_invariant, device_sm_count(), row_split_override());
  if (choose_sm90_variant(problem, device_sm_count()) != Sm90Variant::kTallStreamK) return repack;
  const size_t with_stream_k = repack + stream_k_bytes();
  return args == nullptr || args->workspace_bytes >= with_stream_k ? with_stream_k : repack;
}

size_t workspace(const GemmDesc& desc, const GemmArgs* args) { return workspace_choosing(desc, args, true); }
size_t workspace_pow2(const GemmDesc& desc, const GemmArgs* args) { return workspace_choosing(desc, args, false); }

size_t workspace_repack(const GemmDesc& desc, const GemmArgs* args) {
  const RepackPlan plan = plan_repack(desc, args);
  return plan.a_bytes + plan.b_bytes;
}

size_t workspace_stream_k(const GemmDesc& desc, const GemmArgs* args) {
  const RepackPlan plan = plan_repack(desc, args);
  return plan.a_bytes + plan.b_bytes + stream_k_bytes();
}

// Repacks what TMA cannot read in place, then launches one configuration on the copies.
Status launch_packed(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag, const char* name,
                     Status (*launch_config)(const char*, const GemmDesc&, const GemmArgs&, Diagnostic*)) {
  const RepackPlan plan = plan_repack(desc, &args);
  GemmArgs packed_args = args;
  auto* workspace_bytes = static_cast<uint8_t*>(args.workspace);
  // What follows the copies is the configuration's own (stream-K's partials).
  const size_t repack_bytes = plan.a_bytes + plan.b_bytes;
  packed_args.workspace = repack_bytes > 0 && workspace_bytes != nullptr ? workspace_bytes + repack_bytes : args.workspace;
  packed_args.workspace_bytes = args.workspace_bytes > repack_bytes ? args.workspace_bytes - repack_bytes : 0;
  if (plan.a) {
    auto* dst = reinterpret_cast<uint16_t*>(workspace_bytes);
    const Status s = launch_repack(repack_source(args.a, desc.a, false), dst, plan.packed.a.ld,
                                   plan.packed.a.batch_stride, desc.m, desc.k, desc.batch, args.stream, diag);
    if (s != Status::kSuccess) return s;
    packed_args.a = dst;
  }
  if (plan.b) {
    auto* dst = reinterpret_cast<uint16_t*>(workspace_bytes + plan.a_bytes);
    const Status s = launch_repack(repack_source(args.b, desc.b, true), dst, plan.packed.b.ld,
                                   plan.packed.b.batch_stride, desc.n, desc.k, desc.batch, args.stream, diag);
    if (s != Status::kSuccess) return s;
    packed_args.b = dst;
  }
  return launch_config(name, plan.packed, packed_args, diag);
}

// One configuration, whatever the problem: what the choice below launches, and the forced
// registry entries at the end.
template <class Config>
Status run_config(const char* name, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return sm90_launch<Config>(name, kPolicy, desc, args, diag);
}

Status launch_variant(Sm90Variant variant, const char* name, const GemmDesc& desc, const GemmArgs& args,
                      Diagnostic* diag) {
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

template <bool kFitWidths>
Status launch_by_wave_plan(const char* name, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  Sm90Problem problem = sm90_problem(desc);
  problem.stream_k_allowed = problem.stream_k_allowed && args.workspace_bytes >= stream_k_bytes() &&
                             reinterpret_cast<uintptr_t>(args.workspace) % 16 == 0;
  problem.fit_widths = kFitWidths;
  const int sm_count = device_sm_count();
  // The production choice may give the rows past the last multiple of 256 to the decode
  // kernel (row_split.h): two launches on the caller's stream, writing disjoint rows.
  const int64_t main_rows =
      kFitWidths ? row_split_main_rows(problem, !desc.batch_invariant, sm_count, row_split_override()) : desc.m;
  if (main_rows < desc.m) {
    const RowTail tail = tail_rows(desc, args, main_rows);
    // The decode kernel the dispatcher would give these rows, if one takes them as they
    // are (K-major operands, the pointers' alignment); otherwise nothing is split off.
    if (const KernelInfo* decode = pick_decode_kernel(tail.desc, &tail.args)) {
      GemmDesc head = desc;
      head.m = main_rows;
      problem.m = main_rows;
      const Status s = launch_variant(choose_sm90_variant(problem, sm_count), name, head, args, diag);
      return s != Status::kSuccess ? s : decode->launch(tail.desc, tail.args, diag);
    }
  }
  return launch_variant(choose_sm90_variant(problem, sm_count), name, desc, args, diag);
}

Status launch(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_packed(desc, args, diag, kName, launch_by_wave_plan<true>);
}

Status launch_pow2(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_packed(desc, args, diag, kPow2Name, launch_by_wave_plan<false>);
}

Status launch_fit_config(const char* name, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_fit_width(cheaper_fit_variant(desc.m, desc.n, desc.batch, device_sm_count()), name, desc, args, diag);
}

Status launch_fit(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_packed(desc, args, diag, kFitName, launch_fit_config);
}

Status launch_pingpong(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_packed(desc, args, diag, kPingPongName, run_config<PingPongPair>);
}

Status launch_pair_n(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_packed(desc, args, diag, kPairNName, run_config<WidePairN>);
}

Status launch_stream_k(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_packed(desc, args, diag, kStreamKName, run_config<TallStreamK>);
}

}  // namespace

extern const KernelInfo kSm90Gemm{kName,
                                  "production: persistent, warp-specialized; 128x256 tiles in multicasting 2-CTA "
                                  "clusters (along M, or along N for an odd number of 128-row tiles), single "
                                  "128x256 or 128x128 by wave plan, 160/192/224-wide tiles where those fill the "
                                  "waves better, stream-K on 256x128 tiles where whole tiles leave SMs "
                                  "idle; any layout/stride (repacked into the workspace)",
                                  check, launch, workspace};
extern const KernelInfo kSm90GemmPingPong{kPingPongName,
                                          "sm90-gemm's ping-pong schedule: 128x128 tiles taken in turn by the two "
                                          "consumer warpgroups (epilogue overlaps the other's mainloop), 2-CTA multicast; "
                                          "what sm90-gemm runs for fused epilogues",
                                          check, launch_pingpong, workspace};
extern const KernelInfo kSm90GemmFit{kFitName,
                                     "sm90-gemm's fitted widths on every problem: 128x160, 128x192 or 128x224 tiles "
                                     "(whichever pays fewer waves x width) in multicasting 2-CTA clusters or single "
                                     "CTAs, TMA stores for whole 64-column boxes (for tests and measurement)",
                                     check_fit, launch_fit, workspace_repack};
extern const KernelInfo kSm90GemmPow2{kPow2Name,
                                      "sm90-gemm choosing among its 128- and 256-wide tiles and stream-K only, as "
                                      "before the fitted widths (for measurement against them)",
                                      check, launch_pow2, workspace_pow2};
extern const KernelInfo kSm90GemmPairN{kPairNName,
                                       "sm90-gemm's 128x256 tiles in 2-CTA clusters along N multicasting A, on every "
                                       "problem (what sm90-gemm runs for an odd number of 128-row tiles; for tests "
                                       "and measurement)",
                                       check, launch_pair_n, workspace_repack};
extern const KernelInfo kSm90GemmStreamK{kStreamKName,
                                         "sm90-gemm's stream-K configuration on every problem, whatever the wave plan "
                                         "says: 256x128 tiles, the last waves' K iterations spread over all SMs, "
                                         "partials fixed up in a fixed order (for tests and measurement)",
                                         check, launch_stream_k, workspace_stream_k};
}  // namespace anvil::detail
