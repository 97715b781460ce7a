// The calling thread's CUDA context as the plan cache keys it (plan_cache.h). Its own
// file: the plan cache's thread-sanitized test binary builds plan_cache.cpp without the
// CUDA runtime.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "host/plan_cache.h"

namespace anvil::detail {

uint64_t current_context_id(int device) {
  // Reached through the runtime's entry-point query: the library never links libcuda.
  static const PFN_cuCtxGetId_v12000 get_id = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuCtxGetId", &fn, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess) cudaGetLastError();
    return e == cudaSuccess && found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuCtxGetId_v12000>(fn)
                                                                    : nullptr;
  }();
  if (get_id == nullptr) return 0;
  unsigned long long id = 0;
  if (get_id(nullptr, &id) == CUDA_SUCCESS) return id;
  // No context current on this thread yet (the runtime creates and binds it lazily, and
  // anew after cudaDeviceReset): make the device's primary context current and ask again.
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return get_id(nullptr, &id) == CUDA_SUCCESS ? id : 0;
}

}  // namespace anvil::detail
