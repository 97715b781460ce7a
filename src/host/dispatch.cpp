// The public entry points: validation, the planner's choice (src/plan/), launch.
#include <cstdio>
#include <cstring>

#include "anvil/gemm.h"
#include "common/dtype.h"
#include "host/plan_cache.h"
#include "host/registry.h"
#include "host/validate.h"
#include "plan/launch.h"
#include "plan/tuning.h"
#if defined(ANVIL_HAVE_SM100)
#include "kernels/sm100/sm100_api.h"
#endif

namespace anvil::detail {

extern const KernelInfo kSm90Gemm;
extern const KernelInfo kSm90Decode;
extern const KernelInfo kSm90DecodeLdg;
extern const KernelInfo kSm90DecodeR64;
extern const KernelInfo kSm90DecodeLdgR64;
extern const KernelInfo kLadder01Naive;
extern const KernelInfo kSm90Fp8;
extern const KernelInfo kSm90Fp8Decode;

namespace {

// Each family's registry entry, by KernelFamily: its checks (and the fallback's launch).
const KernelInfo* const kFamilyKernels[kKernelFamilies] = {&kSm90Gemm,      &kSm90Decode,       &kSm90DecodeLdg,
                                                            &kSm90DecodeR64, &kSm90DecodeLdgR64, &kLadder01Naive,
                                                            &kSm90Fp8,       &kSm90Fp8Decode};

bool fp8_inputs(const GemmDesc& desc) { return is_fp8(desc.a.dtype) && is_fp8(desc.b.dtype); }

bool wants_auto(const GemmDesc& desc) { return desc.kernel == nullptr || std::strcmp(desc.kernel, "auto") == 0; }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The plan for an automatic choice. With arguments on a usable device it comes from the
// plan cache (the planner and the families' checks run once per problem); otherwise it is
// made here.
Status plan_problem(const GemmDesc& desc, const GemmArgs* args, const PlanOverrides* overrides, LaunchPlan* out,
                    Diagnostic* diag) {
  const auto build = [&](LaunchPlan* p) {
    const CallFacts facts = call_facts(desc, args);
    // The library's own calls take a tuned plan where one names the problem and the call
    // can run it; measurements that pass overrides get exactly those.
    *p = overrides != nullptr ? plan(desc, current_device_info(), overrides, &facts)
                              : plan_with_tuning(desc, current_device_info(), current_device_identity(), facts);
    if (p->family != KernelFamily::kNone && (overrides != nullptr && overrides->trace)) print_plan(*p, desc, stderr);
    return Status::kSuccess;
  };
  // Overridden plans are cached apart, under a name that spells the overrides.
  char name[PlanKey::kMaxKernelName] = "anvil-plan";
  if (overrides != nullptr) {
    const PlanOverrides& o = *overrides;
    std::snprintf(name, sizeof(name), "anvil-plan/f%d/v%d/o%d%d%d/s%d/r%d/t%d/k%d/8v%d/x%d", static_cast<int>(o.family),
                  o.sm90_variant, int(o.sm90_fit_only), int(o.fit_widths), int(o.allow_stream_k), o.decode_splits,
                  static_cast<int>(o.row_split), int(o.trace), o.split_k_slices, o.fp8_variant,
                  static_cast<int>(o.swap_ab));
  }
  int device = 0;
  if (args == nullptr || cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    build(out);
  } else if (find_or_build_plan(name, desc, *args, out, nullptr, build) != Status::kSuccess) {
    build(out);
  }
  if (out->family == KernelFamily::kNone) {
    // FP8: the check of the kernel asked for (sm90-fp8 unless sm90-fp8-decode is forced)
    // says why it refused.
    if (fp8_inputs(desc)) {
      const bool decode_forced = overrides != nullptr && overrides->family == KernelFamily::kSm90Fp8Decode;
      const Status why = (decode_forced ? kSm90Fp8Decode : kSm90Fp8).check(desc, args, diag);
      if (why != Status::kSuccess) return why;
    }
    return fail(diag, Status::kNotSupported, "no kernel supports this problem (%s)", out->family_reason);
  }
  return Status::kSuccess;
}

// What a call runs: a plan (automatic choice, possibly overridden) or a kernel named in
// the description. Runs every description- and pointer-level check, and the workspace's.
struct Resolved {
  LaunchPlan plan;
  const KernelInfo* named = nullptr;
};

Status resolve(const GemmDesc& desc, const GemmArgs* args, const PlanOverrides* overrides, Resolved* out,
               Diagnostic* diag) {
  Status s = validate_desc(desc, diag);
  if (s != Status::kSuccess) return s;
  if (args != nullptr) {
    s = validate_args(desc, *args, diag);
    if (s != Status::kSuccess) return s;
  }
  size_t need = 0;
  const char* name = nullptr;
  if (wants_auto(desc)) {
    s = plan_problem(desc, args, overrides, &out->plan, diag);
    if (s != Status::kSuccess) return s;
    need = out->plan.workspace_bytes;
    name = out->plan.kernel_name;
  } else {
    if (overrides != nullptr) {
      return fail(diag, Status::kInvalidArgument, "a named kernel ('%s') and plan overrides together", desc.kernel);
    }
    out->named = find_kernel(desc.kernel);
    if (out->named == nullptr) return fail(diag, Status::kNotSupported, "unknown kernel '%s'", desc.kernel);
    if (fp8_inputs(desc) && out->named != &kSm90Fp8 && out->named != &kSm90Fp8Decode) {
      return fail(diag, Status::kNotSupported,
                  "%s reads bf16/fp16 inputs; FP8 inputs run on sm90-fp8 and sm90-fp8-decode", desc.kernel);
    }
    s = out->named->check(desc, args, diag);
    if (s != Status::kSuccess) return s;
    if (args != nullptr && out->named->workspace != nullptr) need = out->named->workspace(desc, args);
    name = out->named->name;
  }
  if (args != nullptr && args->workspace_bytes < need) {
    return fail(diag, Status::kWorkspaceTooSmall, "%s needs %zu workspace bytes, got %zu", name, need,
                args->workspace_bytes);
  }
  return Status::kSuccess;
}

Status run(const GemmDesc& desc, const GemmArgs& args, const PlanOverrides* overrides, Diagnostic* diag,
           LaunchPlan* ran) {
  Resolved r;
  Status s = resolve(desc, &args, overrides, &r, diag);
  if (s != Status::kSuccess) return s;
  if (ran != nullptr) *ran = r.plan;
  if (is_noop(desc)) return Status::kSuccess;
  s = validate_device(diag);
  if (s != Status::kSuccess) return s;
  if (r.named != nullptr) return r.named->launch(desc, args, diag);
#if defined(ANVIL_HAVE_SM100)
  // On Blackwell the tcgen05 GEMM takes what it supports; the Hopper plans cannot run there.
  if (device_is_sm100()) {
    if (fp8_inputs(desc)) {
      return fail(diag, Status::kNotSupported, "FP8 inputs run on sm_90 only (sm90-fp8); anvil has no sm_100 FP8 kernel");
    }
    if (!sm100_supported(desc)) {
      return fail(diag, Status::kNotSupported, "on sm_100 anvil runs sm100-gemm only, which does not take this problem "
                                               "(K-major bf16/fp16 operands read in place; see docs/blackwell.md)");
    }
    return launch_sm100(desc, args, diag);
  }
#endif
  return launch_plan(r.plan, desc, args, diag);
}

Status launch_fallback(const LaunchPlan&, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return kLadder01Naive.launch(desc, args, diag);
}
Status launch_sm90(const LaunchPlan& p, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_sm90_plan(p, desc, args, diag);
}
Status launch_tma(const LaunchPlan& p, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_decode_tma_plan(p.decode, desc, args, diag);
}
Status launch_ldg(const LaunchPlan& p, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_decode_ldg_plan(p.decode, desc, args, diag);
}
Status launch_fp8(const LaunchPlan& p, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_fp8_plan(p, desc, args, diag);
}
Status launch_fp8_decode(const LaunchPlan& p, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_fp8_decode_plan(p.decode, desc, args, diag);
}

// The launchers by KernelFamily.
using PlanLauncher = Status (*)(const LaunchPlan&, const GemmDesc&, const GemmArgs&, Diagnostic*);
const PlanLauncher kLaunchers[kKernelFamilies] = {launch_sm90, launch_tma,      launch_ldg, launch_tma,
                                                  launch_ldg,  launch_fallback, launch_fp8, launch_fp8_decode};

}  // namespace

Status launch_with_family(KernelFamily family, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  PlanOverrides overrides;
  overrides.family = family;
  LaunchPlan plan;
  const Status s = plan_for(desc, &args, &overrides, &plan, diag);
  return s != Status::kSuccess ? s : launch_plan(plan, desc, args, diag);
}

CallFacts call_facts(const GemmDesc& desc, const GemmArgs* args) {
  CallFacts facts;
  if (args != nullptr) {
    facts.a_aligned16 = aligned16(args->a);
    facts.b_aligned16 = aligned16(args->b);
    facts.workspace_aligned16 = aligned16(args->workspace);
    facts.workspace_bytes = args->workspace_bytes;
  }
  const bool swappable = transposable(desc);
  const GemmDesc t = swappable ? transposed_problem(desc) : desc;
  GemmArgs t_args;
  if (swappable && args != nullptr) t_args = transposed_args(*args);
  for (int f = 0; f < kKernelFamilies; ++f) {
    facts.accepts[f] = kFamilyKernels[f]->check(desc, args, nullptr) == Status::kSuccess;
    facts.transposed_accepts[f] =
        swappable && kFamilyKernels[f]->check(t, args != nullptr ? &t_args : nullptr, nullptr) == Status::kSuccess;
  }
  return facts;
}

Status launch_plan(const LaunchPlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  if (plan.family == KernelFamily::kNone) return fail(diag, Status::kNotSupported, "no kernel supports this problem");
  const PlanLauncher launcher = kLaunchers[static_cast<int>(plan.family)];
  if (plan.swap_ab) return launcher(plan, transposed_problem(desc), transposed_args(args), diag);
  return launcher(plan, desc, args, diag);
}

Status plan_for(const GemmDesc& desc, const GemmArgs* args, const PlanOverrides* overrides, LaunchPlan* out,
                Diagnostic* diag) {
  return plan_problem(desc, args, overrides, out, diag);
}

Status gemm(const GemmDesc& desc, const GemmArgs& args, const PlanOverrides* overrides, Diagnostic* diag,
            LaunchPlan* ran) {
  return run(desc, args, overrides, diag, ran);
}

size_t workspace_size(const GemmDesc& desc, const GemmArgs* args, const PlanOverrides* overrides) {
  if (validate_desc(desc, nullptr) != Status::kSuccess) return 0;
  LaunchPlan p;
  if (args == nullptr) return plan_problem(desc, nullptr, overrides, &p, nullptr) == Status::kSuccess ? p.workspace_bytes : 0;
  // What a launch with these arguments uses: stream-K's part only where it has room.
  const CallFacts facts = call_facts(desc, args);
  p = plan(desc, current_device_info(), overrides, &facts);
  return p.family != KernelFamily::kNone ? p.workspace_bytes : 0;
}

}  // namespace anvil::detail

namespace anvil {

Status can_implement(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  detail::Resolved r;
  Status s = detail::resolve(desc, args, nullptr, &r, diag);
  if (s != Status::kSuccess) return s;
  if (detail::is_noop(desc)) return Status::kSuccess;
  s = detail::validate_device(diag);
#if defined(ANVIL_HAVE_SM100)
  if (s == Status::kSuccess && r.named == nullptr && detail::device_is_sm100() &&
      (detail::fp8_inputs(desc) || !detail::sm100_supported(desc))) {
    return detail::fail(diag, Status::kNotSupported, "on sm_100 anvil runs sm100-gemm only, which does not take this "
                                                     "problem (see docs/blackwell.md)");
  }
#endif
  return s;
}

size_t workspace_size(const GemmDesc& desc) {
  detail::Resolved r;
  if (detail::resolve(desc, nullptr, nullptr, &r, nullptr) != Status::kSuccess) return 0;
  if (r.named != nullptr) return r.named->workspace != nullptr ? r.named->workspace(desc, nullptr) : 0;
  return r.plan.workspace_bytes;
}

size_t workspace_size(const GemmDesc& desc, const GemmArgs& args) {
  GemmArgs probe = args;
  probe.workspace_bytes = ~size_t{0};  // ask what is needed, not whether it is there
  probe.workspace = probe.workspace != nullptr ? probe.workspace : reinterpret_cast<void*>(256);
  detail::Resolved r;
  if (detail::resolve(desc, &probe, nullptr, &r, nullptr) != Status::kSuccess) return 0;
  if (r.named != nullptr) return r.named->workspace != nullptr ? r.named->workspace(desc, &args) : 0;
  return r.plan.workspace_bytes;
}

Status gemm(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return detail::run(desc, args, nullptr, diag, nullptr);
}

int kernel_count() { return static_cast<int>(detail::all_kernels().size()); }

const char* kernel_name(int index) {
  const auto kernels = detail::all_kernels();
  return index >= 0 && index < kernel_count() ? kernels[index]->name : nullptr;
}

const char* kernel_summary(int index) {
  const auto kernels = detail::all_kernels();
  return index >= 0 && index < kernel_count() ? kernels[index]->summary : nullptr;
}

const char* dispatch_name(const GemmDesc& desc) {
  detail::Resolved r;
  if (detail::resolve(desc, nullptr, nullptr, &r, nullptr) != Status::kSuccess) return nullptr;
  return r.named != nullptr ? r.named->name : r.plan.kernel_name;
}

GemmDesc linear_desc(int64_t m, int64_t n, int64_t k, DataType in, DataType out) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k;
  d.a = MatrixLayout{in, Order::kRowMajor, k > 0 ? k : 1, 0};
  d.b = MatrixLayout{in, Order::kColMajor, k > 0 ? k : 1, 0};  // W[N,K] row-major is B = W^T column-major
  d.c = MatrixLayout{out, Order::kRowMajor, n > 0 ? n : 1, 0};
  d.d = MatrixLayout{out, Order::kRowMajor, n > 0 ? n : 1, 0};
  return d;
}

}  // namespace anvil
