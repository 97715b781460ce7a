// The table of kernels anvil carries. Each kernel family's translation unit defines one
// KernelInfo; registry.cpp lists them in order. The dispatcher and the by-name lookup
// both read this table, so a kernel the dispatcher can pick is always reachable by name.
#pragma once

#include <cstddef>
#include <cstdio>

#include <cuda_runtime.h>
#include <span>

#include "anvil/gemm.h"

namespace anvil::detail {

struct KernelInfo {
  const char* name;
  const char* summary;
  // What the kernel supports beyond the common validation (validate.h), given a desc
  // that already passed it. args is null for a description-only query.
  Status (*check)(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag);
  Status (*launch)(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag);
  // Workspace bytes; args null means 16-byte-aligned base pointers. May be null: needs none.
  size_t (*workspace)(const GemmDesc& desc, const GemmArgs* args);
};

std::span<const KernelInfo* const> all_kernels();
const KernelInfo* find_kernel(const char* name);

// Records status and a printf-style message in diag (if non-null); returns status.
Status fail(Diagnostic* diag, Status status, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

// Turns the last launch error into kCudaError with the CUDA error's name.
Status check_launch(Diagnostic* diag, const char* kernel_name);

}  // namespace anvil::detail

namespace anvil::detail {

// Raises a kernel's dynamic shared-memory limit (needed above 48 KiB).
template <typename Kernel>
Status set_dynamic_smem(Kernel kernel, int bytes, const char* name, Diagnostic* diag) {
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) {
    return fail(diag, Status::kCudaError, "%s: cannot set %d bytes of shared memory: %s", name, bytes, cudaGetErrorName(e));
  }
  return Status::kSuccess;
}

}  // namespace anvil::detail
