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

// Every kernel that can be named: the library's own (library_kernels) and those added by
// register_kernels, ladder steps first. The by-name lookup, kernel_count() and
// kernel_name() read this list; the dispatcher only ever picks the library's own.
std::span<const KernelInfo* const> all_kernels();
const KernelInfo* find_kernel(const char* name);

// The kernels libanvil itself carries: those the dispatcher can pick and the fallback.
std::span<const KernelInfo* const> library_kernels();

// Adds kernels built outside the library (the lab: lab/lab_registry.cpp) to all_kernels(),
// so that they can be named in GemmDesc::kernel and listed. Call it before any other
// anvil call and from one thread: it rebuilds the table that gemm(), can_implement() and
// the listing functions read, without a lock. Entries already present (the same
// KernelInfo) are skipped, so registering twice is harmless. Returns false, and adds
// nothing, when an entry's name is taken by a different kernel.
bool register_kernels(std::span<const KernelInfo* const> kernels);

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

// A cudaLaunchKernelEx configuration whose clusters are cluster_x CTAs along x (1: no
// cluster to speak of). *attribute holds the cluster shape and must outlive the config.
inline cudaLaunchConfig_t cluster_launch_config(cudaLaunchAttribute* attribute, dim3 grid, int threads, int smem_bytes,
                                                int cluster_x, cudaStream_t stream) {
  attribute->id = cudaLaunchAttributeClusterDimension;
  attribute->val.clusterDim = {static_cast<unsigned>(cluster_x), 1, 1};
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
  config.stream = stream;
  config.attrs = attribute;
  config.numAttrs = 1;
  return config;
}

// Clusters of cluster_x CTAs of `kernel` that fit on the current GPU at once (its
// shared-memory limit must already be raised); 0 when the occupancy API cannot say, with
// its error cleared so that it cannot surface as the caller's launch error.
template <typename Kernel>
int max_active_clusters(Kernel kernel, int threads, int smem_bytes, int cluster_x) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = cluster_launch_config(&attribute, dim3(static_cast<unsigned>(cluster_x) * 1024),
                                                          threads, smem_bytes, cluster_x, nullptr);
  int found = 0;
  if (cudaOccupancyMaxActiveClusters(&found, kernel, &config) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return found;
}

}  // namespace anvil::detail
