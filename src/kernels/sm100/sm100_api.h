// The Blackwell GEMM's entry points for the dispatcher and the planner. Host-only: no
// CUDA device code is needed to include this.
//
// MERGE NOTE (coordinator): these are the hooks to wire into the planner / registry.
//   - kSm100Gemm, kSm100GemmStatic, kSm100Gemm1Cta are KernelInfo entries for the
//     registry table (src/host/registry.cpp) once the library is built with ANVIL_SM100;
//     kSm100Ladder1-7 are lab entries (the ladder);
//   - sm100_supported / launch_sm100 are what dispatch calls on an sm_100 device
//     (device_is_sm100), in place of the Hopper choice.
#pragma once

#include "anvil/gemm.h"
#include "host/registry.h"

namespace anvil::detail {

extern const KernelInfo kSm100Gemm;        // CTA pair, 256 x 256 tiles, CLC scheduling
extern const KernelInfo kSm100GemmStatic;  // the same with the static persistent schedule
extern const KernelInfo kSm100Gemm1Cta;    // one CTA, 128 x 256 tiles, CLC scheduling
// The seeds' steps as configurations (ladder_sm100.cu); sm100-gemm is the last step.
extern const KernelInfo kSm100Ladder1, kSm100Ladder2, kSm100Ladder3, kSm100Ladder4, kSm100Ladder5, kSm100Ladder6,
    kSm100Ladder7;

// Compute capability of the current device, e.g. 90 or 100; 0 when it cannot be read.
int device_compute_capability();
inline bool device_is_sm100() { return device_compute_capability() == 100; }

// Whether the Blackwell GEMM takes this problem on this device (desc-only query; no
// diagnostic), and its launch (the pair kernel for M > 128, the single-CTA one for
// smaller M, where a 256-row tile would be more than half padding; the pair kernel for
// every M in batch-invariant mode).
bool sm100_supported(const GemmDesc& desc);
Status launch_sm100(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);

}  // namespace anvil::detail
