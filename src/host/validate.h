// The checks every kernel shares: argument sanity, dtype combinations, leading
// dimensions, pointer presence, workspace size and the GPU's architecture. Kernel
// families add their own constraints in KernelInfo::check.
#pragma once

#include "anvil/gemm.h"

namespace anvil::detail {

// Description-only checks (no device query, no pointers).
Status validate_desc(const GemmDesc& desc, Diagnostic* diag);
// Pointer checks for a description that passed validate_desc.
Status validate_args(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);
// The current device must be sm_90 (Hopper with wgmma).
Status validate_device(Diagnostic* diag);

// Streaming multiprocessors of the current device, asked once per device (132 if it cannot
// be asked: an H200's count, so host-only planning still gets a sensible answer).
int device_sm_count();

// Shape helpers.
inline int64_t output_cols(const GemmDesc& d) {
  return d.epilogue.activation == Activation::kSwiGLU ? d.n / 2 : d.n;
}
// Nothing to compute: an empty output.
inline bool is_noop(const GemmDesc& d) { return d.m == 0 || d.n == 0 || d.batch == 0; }

}  // namespace anvil::detail
