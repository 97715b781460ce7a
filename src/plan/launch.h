// Launching a LaunchPlan, and the internal entry point that plans with overrides. Not
// installed: only the library, anvil-bench, the tests and the tuner include it.
#pragma once

#include "anvil/gemm.h"
#include "kernels/sm90/split_k.h"
#include "plan/planner.h"

namespace anvil::detail {

// The current device's DeviceInfo: asked of the CUDA runtime (attributes, and the decode
// configurations' residency from the occupancy API) once per device and kept. Without a
// usable device: DeviceInfo::fallback with the SM count device_sm_count() reports.
const DeviceInfo& current_device_info();

// The decode translation units fill their configurations' residency (decode_resident).
void fill_decode_tma_residency(DeviceInfo* device);  // gemm_decode.cu: sm90-decode, sm90-decode-r64
void fill_decode_ldg_residency(DeviceInfo* device);  // gemm_decode_ldg.cu: the load-path kernels
void fill_fp8_decode_residency(DeviceInfo* device);  // gemm_fp8_decode.cu: sm90-fp8-decode

// What the planner needs to know of a call's pointers and workspace, and which families'
// own checks accept it (args null: a description-only query).
CallFacts call_facts(const GemmDesc& desc, const GemmArgs* args);

// The launchers: each launches exactly the plan it is given.
Status launch_sm90_plan(const LaunchPlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);
// kDecodeTma and kDecodeR64 (gemm_decode.cu), kDecodeLdg and kDecodeLdgR64 (gemm_decode_ldg.cu).
Status launch_decode_tma_plan(const DecodePlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);
Status launch_decode_ldg_plan(const DecodePlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);
// sm90-gemm's split-K, second launch: D from the k_splits fp32 partials at args.workspace
// (gemm_split_k.cu).
Status launch_split_k_sum(const GemmDesc& desc, const GemmArgs& args, int slices, Diagnostic* diag);
// Both launches of a split-K plan (kernels/sm90/split_k.h), sm90-gemm's and sm90-fp8's:
// launch_slices(slices_desc, slices_args) runs the slices as one strided batch of the
// family's kernel into the workspace's fp32 partials (split_k_slices_desc and
// split_k_slices_args say how), then their sum through the epilogue into D.
template <class LaunchSlices>
Status launch_split_k(const GemmDesc& desc, const GemmArgs& args, const LaunchPlan& plan, LaunchSlices&& launch_slices,
                      Diagnostic* diag) {
  const Status s = launch_slices(split_k_slices_desc(desc, plan.k_splits, plan.slice_k), split_k_slices_args(args));
  return s != Status::kSuccess ? s : launch_split_k_sum(desc, args, plan.k_splits, diag);
}
// sm90-fp8 (gemm_sm90_fp8.cu): the planned configuration.
Status launch_fp8_plan(const LaunchPlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);
// sm90-fp8-decode (gemm_fp8_decode.cu): the planned decode configuration and split.
Status launch_fp8_decode_plan(const DecodePlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);
// Any plan, by its family (a table of launchers, no lookup by name).
Status launch_plan(const LaunchPlan& plan, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);

// A registry entry's launch: the planner with `family` forced, then that plan.
Status launch_with_family(KernelFamily family, const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);
// The same as a registry entry's (KernelInfo's) function pointers: its launch, and the
// workspace its forced plan may use.
template <KernelFamily kFamily>
Status launch_family(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  return launch_with_family(kFamily, desc, args, diag);
}

// The internal entry point: anvil::gemm with the planner's choices overridden (null: none)
// and, optionally, the plan it ran. For anvil-bench, the tests and the tuner; a desc that
// names a kernel is refused here (the overrides say what to run).
Status gemm(const GemmDesc& desc, const GemmArgs& args, const PlanOverrides* overrides, Diagnostic* diag,
            LaunchPlan* ran = nullptr);
// Workspace bytes the overridden plan uses with these arguments - stream-K's part only where
// args' workspace holds it (args null: the most it may use, the size to ask for).
size_t workspace_size(const GemmDesc& desc, const GemmArgs* args, const PlanOverrides* overrides);
template <KernelFamily kFamily>
size_t family_workspace(const GemmDesc& desc, const GemmArgs* args) {
  PlanOverrides overrides;
  overrides.family = kFamily;
  return workspace_size(desc, args, &overrides);
}
// The plan the overridden planner makes for desc (args null: a description-only query).
Status plan_for(const GemmDesc& desc, const GemmArgs* args, const PlanOverrides* overrides, LaunchPlan* out,
                Diagnostic* diag);

}  // namespace anvil::detail
